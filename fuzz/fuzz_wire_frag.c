/* fuzz_wire_frag.c - libFuzzer target for the UDP fragmented profile
 * (core/wire.c): fragment header, chunk rules, ACK entries and ACK frames,
 * and the ACK builder fed with entries taken from the input.
 *
 * Properties:
 *  1. a fragment that decodes re-encodes to the same datagram;
 *  2. an ACK entry's bitmaps and fg_ack_entry_covers agree on all 64
 *     sequence numbers of its window and nothing outside it;
 *  3. an unfragmented datagram holding an ACK frame decodes to entries that
 *     fg_ack_build turns back into datagrams within the MTU that decode to
 *     the same entries, in order. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fg/wire.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_entry(const struct fg_ack_entry *e)
{
	for (uint32_t d = 0; d < 64; d++) {
		uint32_t bit = d < 32 ? (e->bitmap_lo >> d) & 1u : (e->bitmap_hi >> (d - 32)) & 1u;
		FUZZ_CHECK(fg_ack_entry_covers(e, e->base_seq + d) == (bit != 0));
	}
	FUZZ_CHECK(!fg_ack_entry_covers(e, e->base_seq + 64));
	FUZZ_CHECK(!fg_ack_entry_covers(e, e->base_seq - 1));
}

static void rebuild_acks(const struct fg_ack_entry *e, size_t n, uint32_t mtu)
{
	static uint8_t buf[1 << 16];
	static uint32_t lens[4096];
	static struct fg_ack_entry back[4096];
	int nd = fg_ack_build(e, n, mtu, 0xFFF0, buf, sizeof(buf), lens, FG_ARRAY_LEN(lens));
	if (mtu < 28) {
		FUZZ_CHECK(nd == -FG_R_UNENCODABLE);
		return;
	}
	if (nd == -FG_R_NOSPACE)
		return;
	FUZZ_CHECK(nd >= 0);
	size_t off = 0, got = 0;
	for (int d = 0; d < nd; d++) {
		struct fg_frag fr;
		struct fg_frame f;
		FUZZ_CHECK(lens[d] <= mtu);
		FUZZ_CHECK(fg_frag_decode(buf + off, lens[d], &fr) == (ssize_t)lens[d]);
		FUZZ_CHECK(fr.total == 1 && fr.index == 0 && fr.frame_id == (uint16_t)(0xFFF0 + d));
		FUZZ_CHECK(fg_frame_decode(fr.chunk, fr.chunk_len, FG_TRANSPORT_MESSAGE, &f) == (ssize_t)fr.chunk_len);
		int k = fg_ack_frame_decode(&f, back + got, FG_ARRAY_LEN(back) - got);
		FUZZ_CHECK(k > 0);
		got += (size_t)k;
		off += lens[d];
	}
	FUZZ_CHECK(got == n);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(back[i].stream_id == e[i].stream_id && back[i].base_seq == e[i].base_seq &&
			   back[i].bitmap_hi == e[i].bitmap_hi && back[i].bitmap_lo == e[i].bitmap_lo);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[1 << 17];
	struct fg_frag fr;
	struct fg_ack_entry e;

	if (fg_ack_entry_decode(data, size, &e) > 0)
		check_entry(&e);

	ssize_t r = fg_frag_decode(data, size, &fr);
	if (r < 0) {
		FUZZ_CHECK(r == -FG_R_FRAG_SHORT || r == -FG_R_FRAG_TOTAL_ZERO || r == -FG_R_FRAG_INDEX_RANGE ||
			   r == -FG_R_FRAG_CHUNK_SIZE);
		return 0;
	}
	FUZZ_CHECK((size_t)r == size && fr.chunk == data + 4 && fr.chunk_len == size - 4);
	FUZZ_CHECK(fr.index < fr.total && fr.chunk_len > 0);
	if (size <= sizeof(out)) {
		FUZZ_CHECK(fg_frag_encode(&fr, out, sizeof(out)) == r);
		FUZZ_CHECK(!memcmp(out, data, size));
	}
	/* chunk rules at a chunk size taken from the input */
	uint32_t C = fg_frag_chunk_size(576 + (uint32_t)fr.frame_id % 9000);
	int ck = fg_frag_check(&fr, C);
	FUZZ_CHECK(ck == 0 || ck == -FG_R_FRAG_CHUNK_SIZE);
	if (ck == 0)
		FUZZ_CHECK(fr.chunk_len <= C && (fr.index + 1 == fr.total || fr.chunk_len == C));

	if (fr.total != 1)
		return 0;
	struct fg_frame f;
	if (fg_frame_decode(fr.chunk, fr.chunk_len, FG_TRANSPORT_MESSAGE, &f) != (ssize_t)fr.chunk_len)
		return 0;
	static struct fg_ack_entry es[4096];
	int n = fg_ack_frame_decode(&f, es, FG_ARRAY_LEN(es));
	if (n < 0) {
		FUZZ_CHECK(n == -FG_R_ACK_HEADER || n == -FG_R_ACK_LENGTH);
		return 0;
	}
	FUZZ_CHECK((uint32_t)n * FG_ACK_ENTRY_LEN == f.hdr.length);
	size_t m = (size_t)n < FG_ARRAY_LEN(es) ? (size_t)n : FG_ARRAY_LEN(es);
	for (size_t i = 0; i < m; i++)
		check_entry(&es[i]);
	rebuild_acks(es, m, 14 + (uint32_t)fr.frame_id % 1500);
	return 0;
}

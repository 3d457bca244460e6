/* test_relay_ack.c - fanorelay's ACK checker (tools/relay/relay_ack.c):
 * an ACK is proven only for frames whose every fragment went up for the
 * same session; missing fragments, duplicate fragments, other sessions,
 * bitmap holes, a changed fragment total and a reused frame_id are not
 * proof; a full table degrades to "unchecked", never to a false alarm. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fg/wire.h"
#include "relay.h"

#define CHUNK 100u
#define MTU (CHUNK + FG_FRAG_HDR_LEN)
#define SEC 1000000000ull

struct frags {
	uint8_t dg[8][MTU];
	size_t len[8];
	unsigned n;
};

/* A frame of (stream, seq) with payload_len bytes, split at CHUNK. */
static void make_frame(struct frags *out, uint16_t stream, uint32_t seq, uint32_t payload_len, uint16_t frame_id)
{
	static uint8_t payload[700], frame[800];
	for (uint32_t i = 0; i < payload_len; i++)
		payload[i] = (uint8_t)(i * 7 + seq);
	struct fg_hdr h = { .stream_id = stream, .sequence = seq, .flags = 0, .length = payload_len };
	ssize_t n = fg_frame_encode(&h, payload, frame, sizeof frame);
	assert_true(n > 0);
	uint32_t total = fg_frag_count((uint32_t)n, CHUNK);
	assert_true(total >= 1 && total <= 8);
	out->n = total;
	for (uint32_t i = 0; i < total; i++) {
		uint32_t off = i * CHUNK;
		struct fg_frag f = { .frame_id = frame_id, .index = (uint8_t)i, .total = (uint8_t)total,
				     .chunk = frame + off,
				     .chunk_len = (uint32_t)n - off < CHUNK ? (uint32_t)n - off : CHUNK };
		ssize_t w = fg_frag_encode(&f, out->dg[i], MTU);
		assert_true(w > 0);
		out->len[i] = (size_t)w;
	}
}

static void send_all(struct rl_ack *a, uint32_t sess, const struct frags *f, uint64_t now)
{
	for (unsigned i = 0; i < f->n; i++)
		rl_ack_up(a, sess, f->dg[i], f->len[i], now);
}

static void ack(struct rl_ack *a, uint32_t sess, uint16_t stream, uint32_t base, uint32_t lo, uint32_t hi)
{
	struct fg_ack_entry e = { .stream_id = stream, .base_seq = base, .bitmap_lo = lo, .bitmap_hi = hi };
	uint8_t buf[256];
	uint32_t lens[2];
	assert_int_equal(fg_ack_build(&e, 1, 1472, 9, buf, sizeof buf, lens, 2), 1);
	rl_ack_down(a, sess, buf, lens[0]);
}

static void test_whole_frame_proven(void **state)
{
	(void)state;
	struct rl_ack *a = rl_ack_new(64, 64);
	assert_non_null(a);
	struct frags f;
	make_frame(&f, 0xAF61, 1000, 250, 7); /* 260 bytes: 3 fragments */
	assert_int_equal(f.n, 3);
	send_all(a, 0, &f, 0);
	ack(a, 0, 0xAF61, 1000, 1, 0);
	const struct rl_ack_stats *s = rl_ack_stats(a);
	assert_int_equal(s->frames_through, 1);
	assert_int_equal(s->acks, 1);
	assert_int_equal(s->acked_seqs, 1);
	assert_int_equal(s->ack_proven, 1);
	assert_int_equal(s->ack_unproven, 0);
	rl_ack_free(a);
}

static void test_missing_fragment_unproven(void **state)
{
	(void)state;
	struct rl_ack *a = rl_ack_new(64, 64);
	struct frags f;
	make_frame(&f, 0xAF61, 5, 250, 8);
	rl_ack_up(a, 0, f.dg[0], f.len[0], 0);
	rl_ack_up(a, 0, f.dg[2], f.len[2], 0);
	rl_ack_up(a, 0, f.dg[2], f.len[2], 0); /* a duplicate is not the missing one */
	ack(a, 0, 0xAF61, 5, 1, 0);
	assert_int_equal(rl_ack_stats(a)->frames_through, 0);
	assert_int_equal(rl_ack_stats(a)->ack_unproven, 1);
	/* the missing fragment arrives out of order: now it is through */
	rl_ack_up(a, 0, f.dg[1], f.len[1], 0);
	ack(a, 0, 0xAF61, 5, 1, 0);
	assert_int_equal(rl_ack_stats(a)->ack_proven, 1);
	rl_ack_free(a);
}

static void test_other_session_unproven(void **state)
{
	(void)state;
	struct rl_ack *a = rl_ack_new(64, 64);
	struct frags f;
	make_frame(&f, 0xAF62, 77, 50, 1);
	send_all(a, 1, &f, 0);
	ack(a, 2, 0xAF62, 77, 1, 0);          /* stream 2 never sent it */
	ack(a, 1, 0xAF63, 77, 1, 0);          /* another stream */
	ack(a, 1, 0xAF62, 77, 1, 0);          /* the real one */
	const struct rl_ack_stats *s = rl_ack_stats(a);
	assert_int_equal(s->ack_unproven, 2);
	assert_int_equal(s->ack_proven, 1);
	/* the unproven ones are kept for a post-mortem, in order */
	assert_int_equal(s->unproven[0].sess, 2);
	assert_int_equal(s->unproven[0].stream, 0xAF62);
	assert_int_equal(s->unproven[0].seq, 77);
	assert_int_equal(s->unproven[1].sess, 1);
	assert_int_equal(s->unproven[1].stream, 0xAF63);
	assert_int_equal(s->unproven[1].seq, 77);
	rl_ack_free(a);
}

static void test_bitmap(void **state)
{
	(void)state;
	struct rl_ack *a = rl_ack_new(64, 64);
	struct frags f;
	uint32_t seqs[] = { 10, 11, 13, 10 + 40 };
	for (unsigned i = 0; i < 4; i++) {
		make_frame(&f, 0xAF61, seqs[i], 20, (uint16_t)(100 + i));
		send_all(a, 0, &f, 0);
	}
	ack(a, 0, 0xAF61, 10, 0xB, 1u << 8);  /* 10, 11, 13, 50 */
	assert_int_equal(rl_ack_stats(a)->acked_seqs, 4);
	assert_int_equal(rl_ack_stats(a)->ack_proven, 4);
	ack(a, 0, 0xAF61, 10, 0xF, 0);        /* 12 never went up */
	assert_int_equal(rl_ack_stats(a)->ack_unproven, 1);
	assert_int_equal(rl_ack_stats(a)->ack_proven, 7);
	rl_ack_free(a);
}

static void test_total_changed_and_reuse(void **state)
{
	(void)state;
	struct rl_ack *a = rl_ack_new(64, 64);
	struct frags big, small;
	make_frame(&big, 0xAF61, 1, 250, 42);   /* 3 fragments under id 42 */
	make_frame(&small, 0xAF61, 2, 20, 42);  /* 1 fragment under the same id */
	rl_ack_up(a, 0, big.dg[0], big.len[0], 0);
	rl_ack_up(a, 0, small.dg[0], small.len[0], 0); /* total changed: group dropped */
	assert_int_equal(rl_ack_stats(a)->up_bad, 1);
	rl_ack_up(a, 0, big.dg[1], big.len[1], 0);
	rl_ack_up(a, 0, big.dg[2], big.len[2], 0);
	ack(a, 0, 0xAF61, 1, 1, 0); /* fragment 0 went into the dropped group */
	assert_int_equal(rl_ack_stats(a)->ack_unproven, 1);
	/* id 42 reused much later: a new frame, the stale record is forgotten */
	rl_ack_up(a, 0, small.dg[0], small.len[0], 10 * SEC);
	ack(a, 0, 0xAF61, 2, 1, 0);
	assert_int_equal(rl_ack_stats(a)->ack_proven, 1);
	rl_ack_free(a);
}

static void test_seen_overflow_unchecked(void **state)
{
	(void)state;
	struct rl_ack *a = rl_ack_new(64, 2);
	struct frags f;
	for (uint32_t i = 0; i < 3; i++) {
		make_frame(&f, 0xAF61, i, 20, (uint16_t)i);
		send_all(a, 0, &f, 0);
	}
	assert_true(rl_ack_stats(a)->seen_overflow);
	ack(a, 0, 0xAF61, 0, 0x7, 0);
	assert_int_equal(rl_ack_stats(a)->ack_proven, 2);
	assert_int_equal(rl_ack_stats(a)->ack_unchecked, 1);
	assert_int_equal(rl_ack_stats(a)->ack_unproven, 0);
	rl_ack_free(a);
}

static void test_down_kinds(void **state)
{
	(void)state;
	struct rl_ack *a = rl_ack_new(64, 64);
	struct fg_status st = { .token_seq = 3, .dst_layer = 2, .line = 1 };
	uint8_t buf[64];
	ssize_t n = fg_status_encode(&st, buf + 4, sizeof buf - 4);
	assert_true(n > 0);
	buf[0] = 0;
	buf[1] = 1;
	buf[2] = 0;
	buf[3] = 1;
	rl_ack_down(a, 0, buf, (size_t)n + 4);
	assert_int_equal(rl_ack_stats(a)->down_status, 1);
	rl_ack_down(a, 0, buf, 3);                   /* shorter than a fragment header */
	rl_ack_down(a, 0, buf, 10);                  /* a truncated frame */
	assert_int_equal(rl_ack_stats(a)->down_bad, 2);
	rl_ack_up(a, 0, buf, 2, 0);
	assert_int_equal(rl_ack_stats(a)->up_bad, 1);
	assert_int_equal(rl_ack_stats(a)->acks, 0);
	rl_ack_free(a);
}

static void test_bad_sizes(void **state)
{
	(void)state;
	assert_null(rl_ack_new(4, 64));
	assert_int_equal(errno, EINVAL);
	assert_null(rl_ack_new(64, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_frame_proven),
		cmocka_unit_test(test_missing_fragment_unproven),
		cmocka_unit_test(test_other_session_unproven),
		cmocka_unit_test(test_bitmap),
		cmocka_unit_test(test_total_changed_and_reuse),
		cmocka_unit_test(test_seen_overflow_unchecked),
		cmocka_unit_test(test_down_kinds),
		cmocka_unit_test(test_bad_sizes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

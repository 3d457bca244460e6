/* test_ack.c - unit tests for dataplane/dp_ack.c: packing received frames
 * into 14-byte ACK entries (the A01 vector byte for byte), coverage exactly
 * equal to what was noted, several streams and windows, duplicates, the
 * per-peer bound, set-associative eviction, and MTU-bounded datagrams. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dp_ack.h"
#include "dp_test_util.h"

static struct dp_ack *ack_new(uint32_t peers, void **mem)
{
	static struct dp_ack a;
	size_t sz = dp_ack_mem_size(peers);
	*mem = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	assert_int_equal(dp_ack_init(&a, *mem, sz, peers), 0);
	return &a;
}

static struct dp_peer peer(uint16_t port)
{
	struct dp_peer p = {.family = 4, .port = port};
	p.addr[0] = 10, p.addr[3] = 9;
	return p;
}

/* A peer at port first seen at time 0: new, with its pending list. */
static struct dp_ack_peer *new_peer(struct dp_ack *a, uint16_t port)
{
	struct dp_peer p = peer(port);
	struct dp_route rt = {0};
	bool nw;
	struct dp_ack_peer *pp = dp_ack_peer_get(a, &p, &rt, 0, &nw);
	assert_non_null(pp);
	assert_true(nw);
	return pp;
}

static void test_a01(void **st)
{
	(void)st;
	void *mem;
	struct dp_ack *a = ack_new(64, &mem);
	struct dp_ack_peer *pp = new_peer(a, 1);
	const uint32_t seqs[] = {163, 100, 107, 101, 103, 101};
	for (unsigned i = 0; i < FG_ARRAY_LEN(seqs); i++)
		assert_false(dp_ack_note(a, pp, 42, seqs[i]));
	assert_int_equal(a->n_dirty, 1);
	struct fg_ack_entry e[DP_ACK_PEND];
	assert_int_equal(dp_ack_take(pp, e, DP_ACK_PEND), 1);
	uint8_t got[14], want[14];
	assert_int_equal(fg_ack_entry_encode(&e[0], got, sizeof(got)), 14);
	assert_int_equal(tu_vector("A01", want, sizeof(want)), 14);
	assert_memory_equal(got, want, 14);
	dp_ack_dirty_reset(a);
	assert_int_equal(a->n_dirty, 0);
	assert_int_equal(dp_ack_take(pp, e, DP_ACK_PEND), 0);
	free(mem);
}

static void test_streams_and_windows(void **st)
{
	(void)st;
	void *mem;
	struct dp_ack *a = ack_new(64, &mem);
	struct dp_ack_peer *pp = new_peer(a, 2);
	/* two streams, sequences spread over several 64-wide windows, one wrap */
	struct {
		uint16_t s;
		uint32_t q;
	} in[] = {{0xAF61, 5}, {0xAF62, 1000}, {0xAF61, 68}, {0xAF61, 69}, {0xAF62, 1063}, {0xAF62, 1064},
		  {0xAF61, 4}, {0xAF63, 0xFFFFFFFFu}, {0xAF61, 200}};
	for (unsigned i = 0; i < FG_ARRAY_LEN(in); i++)
		(void)dp_ack_note(a, pp, in[i].s, in[i].q);
	struct fg_ack_entry e[DP_ACK_PEND];
	unsigned n = dp_ack_take(pp, e, DP_ACK_PEND);
	assert_true(n >= 5 && n <= FG_ARRAY_LEN(in));
	/* every noted pair is covered by some entry ... */
	for (unsigned i = 0; i < FG_ARRAY_LEN(in); i++) {
		bool cov = false;
		for (unsigned k = 0; k < n; k++)
			cov |= e[k].stream_id == in[i].s && fg_ack_entry_covers(&e[k], in[i].q);
		assert_true(cov);
	}
	/* ... and nothing else is */
	unsigned bits = 0;
	for (unsigned k = 0; k < n; k++)
		bits += (unsigned)__builtin_popcount(e[k].bitmap_lo) + (unsigned)__builtin_popcount(e[k].bitmap_hi);
	assert_int_equal(bits, FG_ARRAY_LEN(in));
	/* entries are sorted by stream then base */
	for (unsigned k = 1; k < n; k++)
		assert_true(e[k - 1].stream_id < e[k].stream_id ||
			    (e[k - 1].stream_id == e[k].stream_id && e[k - 1].base_seq < e[k].base_seq));
	free(mem);
}

static void test_bound_and_eviction(void **st)
{
	(void)st;
	void *mem;
	struct dp_ack *a = ack_new(8, &mem); /* one set of DP_ACK_WAYS */
	assert_int_equal(a->n_sets, 1);
	struct dp_route rt = {0};
	bool nw;
	struct dp_ack_peer *pp[DP_ACK_WAYS];
	for (unsigned i = 0; i < DP_ACK_WAYS; i++) {
		struct dp_peer p = peer((uint16_t)(100 + i));
		pp[i] = dp_ack_peer_get(a, &p, &rt, i, &nw);
		assert_non_null(pp[i]);
		assert_true(nw);
		(void)dp_ack_note(a, pp[i], 1, i);
	}
	/* every way has pending pairs: a new peer must wait for a flush */
	struct dp_peer q = peer(999);
	assert_null(dp_ack_peer_get(a, &q, &rt, 100, &nw));
	/* a known peer is still found */
	struct dp_peer p3 = peer(103);
	assert_ptr_equal(dp_ack_peer_get(a, &p3, &rt, 101, &nw), pp[3]);
	assert_false(nw);
	struct fg_ack_entry e[DP_ACK_PEND];
	for (unsigned i = 0; i < DP_ACK_WAYS; i++)
		(void)dp_ack_take(pp[i], e, DP_ACK_PEND);
	dp_ack_dirty_reset(a);
	/* now the least recently seen way is evicted: peer 100 (seen at 0) */
	struct dp_ack_peer *nq = dp_ack_peer_get(a, &q, &rt, 102, &nw);
	assert_ptr_equal(nq, pp[0]);
	assert_true(nw);
	assert_int_equal(a->evicted, 1);
	/* the per-peer list is bounded: full is reported, and never overrun */
	for (unsigned i = 0; i < DP_ACK_PEND - 1; i++)
		assert_false(dp_ack_note(a, nq, 7, i));
	assert_true(dp_ack_note(a, nq, 7, 5000));
	assert_true(dp_ack_note(a, nq, 7, 5001));
	assert_int_equal(nq->n, DP_ACK_PEND);
	free(mem);
}

static void test_build_within_mtu(void **st)
{
	(void)st;
	void *mem;
	struct dp_ack *a = ack_new(64, &mem);
	struct dp_ack_peer *pp = new_peer(a, 3);
	for (unsigned i = 0; i < DP_ACK_PEND; i++)
		(void)dp_ack_note(a, pp, (uint16_t)(0xAF60 + i % 28), i * 100);
	struct fg_ack_entry e[DP_ACK_PEND];
	unsigned n = dp_ack_take(pp, e, DP_ACK_PEND);
	assert_int_equal(n, DP_ACK_PEND);
	uint8_t buf[8192];
	uint32_t lens[64];
	int k = fg_ack_build(e, n, 100, 7, buf, sizeof(buf), lens, 64);
	assert_true(k > 1);
	unsigned total = 0;
	for (int i = 0; i < k; i++) {
		assert_true(lens[i] <= 100);
		total += (lens[i] - 14) / 14;
	}
	assert_int_equal(total, n);
	free(mem);
}

static void test_init_refuses(void **st)
{
	(void)st;
	static _Alignas(64) uint8_t mem[1 << 16];
	struct dp_ack a;
	assert_int_equal(dp_ack_init(&a, mem, sizeof(mem), 0), -EINVAL);
	assert_int_equal(dp_ack_init(&a, mem + 1, sizeof(mem), 8), -EINVAL);
	assert_int_equal(dp_ack_init(&a, mem, 10, 8), -ENOSPC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a01),
		cmocka_unit_test(test_streams_and_windows),
		cmocka_unit_test(test_bound_and_eviction),
		cmocka_unit_test(test_build_within_mtu),
		cmocka_unit_test(test_init_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_ack.c - unit tests for dataplane/dp_ack.c: packing received frames
 * into 14-byte ACK entries (the A01 vector byte for byte), coverage exactly
 * equal to what was noted, several streams and windows, duplicates, the
 * per-peer bound, set-associative eviction, the inline peer lookup, a
 * route change forgetting the sender's template,
 * MTU-bounded datagrams, the sort of two sorted runs (a merge) against
 * the test's own, and the direct encoder (dp_ack_encode) against
 * dp_ack_take + fg_ack_build. */
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
	struct dp_ack_peer *pp = dp_ack_peer_get(a, &p, dp_peer_hash(&p, 0), &rt, 0, &nw);
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
		pp[i] = dp_ack_peer_get(a, &p, dp_peer_hash(&p, 0), &rt, i, &nw);
		assert_non_null(pp[i]);
		assert_true(nw);
		(void)dp_ack_note(a, pp[i], 1, i);
	}
	/* every way has pending pairs: a new peer must wait for a flush */
	struct dp_peer q = peer(999);
	assert_null(dp_ack_peer_get(a, &q, dp_peer_hash(&q, 0), &rt, 100, &nw));
	/* a known peer is still found */
	struct dp_peer p3 = peer(103);
	assert_ptr_equal(dp_ack_peer_get(a, &p3, dp_peer_hash(&p3, 0), &rt, 101, &nw), pp[3]);
	assert_false(nw);
	struct fg_ack_entry e[DP_ACK_PEND];
	for (unsigned i = 0; i < DP_ACK_WAYS; i++)
		(void)dp_ack_take(pp[i], e, DP_ACK_PEND);
	dp_ack_dirty_reset(a);
	/* now the least recently seen way is evicted: peer 100 (seen at 0) */
	struct dp_ack_peer *nq = dp_ack_peer_get(a, &q, dp_peer_hash(&q, 0), &rt, 102, &nw);
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

/* dp_ack_peer_find (the ACK note's inline lookup) finds exactly the
 * entries dp_ack_peer_get made: the same peer in any way of its set, no
 * peer that differs in family, any address byte or port, even under
 * the same hash, and not a peer whose entry was given to another. */
static void test_peer_find(void **st)
{
	(void)st;
	void *mem;
	struct dp_ack *a = ack_new(8, &mem); /* one set: every peer collides */
	struct dp_route rt = {0};
	bool nw;
	struct dp_peer p[DP_ACK_WAYS];
	for (unsigned i = 0; i < DP_ACK_WAYS; i++) {
		p[i] = peer((uint16_t)(200 + i));
		p[i].addr[15] = (uint8_t)i;
		assert_null(dp_ack_peer_find(a, &p[i], dp_peer_hash(&p[i], 0)));
		struct dp_ack_peer *pp = dp_ack_peer_get(a, &p[i], dp_peer_hash(&p[i], 0), &rt, i, &nw);
		assert_non_null(pp);
		assert_ptr_equal(dp_ack_peer_find(a, &p[i], dp_peer_hash(&p[i], 0)), pp);
	}
	for (unsigned i = 0; i < DP_ACK_WAYS; i++)
		assert_ptr_equal(dp_ack_peer_find(a, &p[i], dp_peer_hash(&p[i], 0)), &a->p[i]);
	/* one field off, under the entry's own hash: never that entry */
	const uint32_t h = dp_peer_hash(&p[2], 0);
	for (unsigned b = 0; b < 16; b++) {
		struct dp_peer q = p[2];
		q.addr[b] ^= 0x40;
		assert_null(dp_ack_peer_find(a, &q, h));
	}
	struct dp_peer q = p[2];
	q.family = 6;
	assert_null(dp_ack_peer_find(a, &q, h));
	q = p[2];
	q.port++;
	assert_null(dp_ack_peer_find(a, &q, h));
	/* the right peer under another hash is another key */
	assert_null(dp_ack_peer_find(a, &p[2], h ^ 1u));
	/* p[0]'s way goes to a new peer: p[0] is no longer found */
	struct dp_peer n = peer(999);
	assert_ptr_equal(dp_ack_peer_get(a, &n, dp_peer_hash(&n, 0), &rt, 100, &nw), &a->p[0]);
	assert_true(nw);
	assert_null(dp_ack_peer_find(a, &p[0], dp_peer_hash(&p[0], 0)));
	assert_ptr_equal(dp_ack_peer_find(a, &n, dp_peer_hash(&n, 0)), &a->p[0]);
	free(mem);
}

/* A peer's route: every byte of it counts (dp_ack_route_is), and a note
 * under another route takes it and forgets the template the sender kept
 * for the old one (pp->tx), through dp_ack_peer_route and dp_ack_peer_get
 * alike; the same route keeps it. An evicted way's successor starts with
 * none. */
static void test_route_forgets_template(void **st)
{
	(void)st;
	void *mem;
	struct dp_ack *a = ack_new(8, &mem);
	struct dp_route rt = {.mac = {2, 0, 0, 0, 0, 1}, .our_mac = {2, 0, 0, 0, 0, 2}, .local = {10, 0, 0, 1}};
	struct dp_peer p = peer(300);
	bool nw;
	struct dp_ack_peer *pp = dp_ack_peer_get(a, &p, dp_peer_hash(&p, 0), &rt, 0, &nw);
	assert_non_null(pp);
	assert_null(pp->tx);
	const struct dp_tx_tmpl *held = (const struct dp_tx_tmpl *)(uintptr_t)0x1000;
	for (unsigned b = 0; b < offsetof(struct dp_route, local) + 16; b++) {
		struct dp_route r2 = rt;
		((uint8_t *)&r2)[b] ^= 0x10;
		assert_false(dp_ack_route_is(&rt, &r2));
		pp->tx = held;
		dp_ack_peer_route(pp, &rt); /* the same route: kept */
		assert_ptr_equal(pp->tx, held);
		dp_ack_peer_route(pp, &r2); /* another: taken, the template forgotten */
		assert_null(pp->tx);
		assert_true(dp_ack_route_is(&pp->route, &r2));
		pp->tx = held;
		assert_ptr_equal(dp_ack_peer_get(a, &p, dp_peer_hash(&p, 0), &rt, 1, &nw), pp);
		assert_false(nw);
		assert_null(pp->tx);
		assert_true(dp_ack_route_is(&pp->route, &rt));
	}
	pp->tx = held;
	assert_ptr_equal(dp_ack_peer_get(a, &p, dp_peer_hash(&p, 0), &rt, 2, &nw), pp);
	assert_ptr_equal(pp->tx, held);
	/* fill the set; p's way (nothing pending, seen first) goes to a new peer */
	for (unsigned i = 1; i < DP_ACK_WAYS; i++) {
		struct dp_peer q = peer((uint16_t)(400 + i));
		struct dp_ack_peer *e = dp_ack_peer_get(a, &q, dp_peer_hash(&q, 0), &rt, 10 + i, &nw);
		assert_non_null(e);
		(void)dp_ack_note(a, e, 1, 1);
	}
	struct dp_peer n = peer(999);
	assert_ptr_equal(dp_ack_peer_get(a, &n, dp_peer_hash(&n, 0), &rt, 100, &nw), pp);
	assert_true(nw);
	assert_null(pp->tx);
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

static uint64_t rnd_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return (uint32_t)(rnd_state >> 16);
}

/* A random pending list of 1..DP_ACK_PEND pairs: up to 4 streams, sequences
 * packed into a few 64-wide windows or spread, near the u32 wrap or not,
 * duplicates, in order, reversed or shuffled. */
static void random_pending(struct dp_ack_peer *pp)
{
	static const uint16_t streams[] = {0xAF60, 0xAF61, 0xAF7B, 0x0000, 0xFFFF};
	struct dp_ack_pend d[DP_ACK_PEND];
	unsigned n = 1 + rnd() % DP_ACK_PEND;
	unsigned ns = 1 + rnd() % 4, s0 = rnd() % 5;
	uint32_t origin = rnd() % 3 == 0 ? 0xFFFFFFFFu - rnd() % 200 : rnd();
	uint32_t spread = (uint32_t[]){8, 64, 70, 200, 100000}[rnd() % 5];
	for (unsigned i = 0; i < n; i++) {
		d[i].stream = streams[(s0 + rnd() % ns) % 5];
		d[i].seq = rnd() % 4 == 0 && i ? d[rnd() % i].seq : origin + rnd() % spread;
	}
	switch (rnd() % 3) {
	case 0: /* in order: what a peer's frames usually are */
		for (unsigned i = 1; i < n; i++)
			for (unsigned j = i;
			     j > 0 && ((uint64_t)d[j].stream << 32 | d[j].seq) < ((uint64_t)d[j - 1].stream << 32 | d[j - 1].seq);
			     j--) {
				struct dp_ack_pend t = d[j];
				d[j] = d[j - 1];
				d[j - 1] = t;
			}
		break;
	case 1: /* reversed */
		for (unsigned i = 0; i < n / 2; i++) {
			struct dp_ack_pend t = d[i];
			d[i] = d[n - 1 - i];
			d[n - 1 - i] = t;
		}
		break;
	default: /* as drawn */
		break;
	}
	/* noted as the dataplane notes them (dp_ack_note keeps the order fact) */
	struct dp_ack_peer *dirty[1];
	struct dp_ack a = {.p = pp, .dirty = dirty, .n_sets = 1};
	pp->n = 0;
	pp->dirty = false;
	pp->unsorted = false;
	for (unsigned i = 0; i < n; i++)
		(void)dp_ack_note(&a, pp, d[i].stream, d[i].seq);
	assert_int_equal(pp->n, n);
}

/* dp_ack_encode writes what dp_ack_take + fg_ack_build write, byte for
 * byte, datagram for datagram, for random pending lists at MTUs where
 * everything fits one datagram (its own encoder), where it just fits, and
 * where it must split (fg_ack_build's path), and with buffers too small. */
static void test_encode_matches_build(void **st)
{
	(void)st;
	static const uint32_t mtus[] = {1472, 9000, 64, 100, 28, 27, 14 + 14 * 10, 14 + 14 * 64, 14 + 14 * 64 - 1};
	static struct dp_ack_peer want_pp, got_pp;
	unsigned one_dgram = 0, split = 0;
	for (unsigned round = 0; round < 20000; round++) {
		random_pending(&want_pp);
		got_pp = want_pp;
		uint32_t mtu = mtus[round % FG_ARRAY_LEN(mtus)];
		uint16_t fid = (uint16_t)rnd();
		size_t cap = round % 97 == 0 ? rnd() % 200 : DP_ACK_BUF_MAX;
		size_t max_d = round % 89 == 0 ? rnd() % 3 : DP_ACK_DGRAMS_MAX;
		uint8_t want[DP_ACK_BUF_MAX], got[DP_ACK_BUF_MAX];
		uint32_t wlens[DP_ACK_DGRAMS_MAX], glens[DP_ACK_DGRAMS_MAX];
		memset(want, 0xA5, sizeof(want));
		memset(got, 0xA5, sizeof(got));
		struct fg_ack_entry e[DP_ACK_PEND];
		unsigned ne = dp_ack_take(&want_pp, e, DP_ACK_PEND);
		/* the entries come sorted by stream, then base, whatever the
		 * order the pairs were noted in */
		for (unsigned i = 1; i < ne; i++)
			assert_true(((uint64_t)e[i - 1].stream_id << 32 | e[i - 1].base_seq) <
				    ((uint64_t)e[i].stream_id << 32 | e[i].base_seq));
		int wk = fg_ack_build(e, ne, mtu, fid, want, cap, wlens, max_d);
		int gk = dp_ack_encode(&got_pp, mtu, fid, got, cap, glens, max_d);
		assert_int_equal(gk, wk);
		assert_int_equal(got_pp.n, 0);
		if (wk <= 0)
			continue;
		size_t total = 0;
		for (int i = 0; i < wk; i++) {
			assert_int_equal(glens[i], wlens[i]);
			total += wlens[i];
		}
		assert_memory_equal(got, want, total);
		if (wk == 1)
			one_dgram++;
		else
			split++;
	}
	/* both paths were compared many times */
	assert_true(one_dgram > 5000 && split > 1000);
}

/* Pending lists that are two sorted runs (dp_ack_sort's merge): a
 * sender's 28 streams in rotation, each frame's sequence one more, the
 * list starting anywhere in the rotation (turned around), or split into
 * two subsequences one after the other (the frames of one peer through two
 * lcores), duplicates now and then; and such lists with two pairs
 * swapped (more than one pair out of order, the insertion sort). Sorted
 * they are the test's own sort of the pairs, pair for pair, and the
 * datagram dp_ack_encode writes is what dp_ack_take + fg_ack_build write. */
static void test_sort_runs(void **st)
{
	(void)st;
	static struct dp_ack_peer want_pp, got_pp;
	struct dp_ack_peer *dirty[1];
	struct dp_ack a = {.p = &want_pp, .dirty = dirty, .n_sets = 1};
	unsigned merged = 0;
	for (unsigned round = 0; round < 20000; round++) {
		const unsigned n = 2 + rnd() % (DP_ACK_PEND - 1), kind = round % 3;
		const uint32_t seq0 = round % 5 == 0 ? 0xFFFFFFFFu - rnd() % 40 : rnd();
		const unsigned step = 1 + rnd() % 3, s0 = rnd() % 28;
		struct dp_ack_pend d[DP_ACK_PEND];
		for (unsigned i = 0; i < n; i++) {
			const unsigned k = rnd() % 8 == 0 && i ? i - 1 : i; /* a duplicate now and then */
			d[i] = (struct dp_ack_pend){.stream = (uint16_t)(0xAF60 + (s0 + k * step) % 28),
						    .seq = seq0 + k * step};
		}
		for (unsigned i = 1; i < n; i++) /* the reference: sorted by (stream, seq) */
			for (unsigned j = i; j > 0 && ((uint64_t)d[j].stream << 32 | d[j].seq) <
							  ((uint64_t)d[j - 1].stream << 32 | d[j - 1].seq);
			     j--) {
				struct dp_ack_pend t = d[j];
				d[j] = d[j - 1];
				d[j - 1] = t;
			}
		struct dp_ack_pend l[DP_ACK_PEND];
		if (kind == 0) { /* turned around at r */
			const unsigned r = rnd() % n;
			for (unsigned i = 0; i < n; i++)
				l[i] = d[(i + r) % n];
		} else { /* two subsequences, each in order, one after the other */
			unsigned m = 0;
			uint64_t first = 0;
			for (unsigned i = 0; i < n; i++)
				if (rnd() % 2) {
					l[m++] = d[i];
					first |= 1ull << i;
				}
			for (unsigned i = 0; i < n; i++)
				if (!(first >> i & 1))
					l[m++] = d[i];
			if (kind == 2) { /* two pairs swapped */
				unsigned i = rnd() % n, j = rnd() % n;
				struct dp_ack_pend t = l[i];
				l[i] = l[j];
				l[j] = t;
			}
		}
		want_pp.n = 0;
		want_pp.dirty = false;
		want_pp.unsorted = want_pp.tangled = false;
		a.n_dirty = 0;
		for (unsigned i = 0; i < n; i++)
			(void)dp_ack_note(&a, &want_pp, l[i].stream, l[i].seq);
		got_pp = want_pp;
		merged += want_pp.unsorted && !want_pp.tangled;
		struct dp_ack_peer sorted = want_pp;
		dp_ack_sort(&sorted);
		assert_false(sorted.unsorted);
		assert_false(sorted.tangled);
		for (unsigned i = 0; i < n; i++) {
			assert_int_equal(sorted.pend[i].stream, d[i].stream);
			assert_int_equal(sorted.pend[i].seq, d[i].seq);
		}
		struct fg_ack_entry e[DP_ACK_PEND];
		unsigned ne = dp_ack_take(&want_pp, e, DP_ACK_PEND);
		uint8_t want[DP_ACK_BUF_MAX], got[DP_ACK_BUF_MAX];
		uint32_t wlens[DP_ACK_DGRAMS_MAX], glens[DP_ACK_DGRAMS_MAX];
		memset(want, 0xA5, sizeof(want));
		memset(got, 0xA5, sizeof(got));
		const uint16_t fid = (uint16_t)rnd();
		int wk = fg_ack_build(e, ne, 1472, fid, want, sizeof(want), wlens, DP_ACK_DGRAMS_MAX);
		int gk = dp_ack_encode(&got_pp, 1472, fid, got, sizeof(got), glens, DP_ACK_DGRAMS_MAX);
		assert_int_equal(wk, 1);
		assert_int_equal(gk, 1);
		assert_int_equal(glens[0], wlens[0]);
		assert_memory_equal(got, want, wlens[0]);
		assert_int_equal(got_pp.n, 0);
		assert_false(got_pp.unsorted);
	}
	assert_true(merged > 8000);
}

/* Nothing pending: no datagram, nothing written. */
static void test_encode_empty(void **st)
{
	(void)st;
	struct dp_ack_peer pp = {0};
	uint8_t buf[DP_ACK_BUF_MAX] = {0};
	uint32_t lens[DP_ACK_DGRAMS_MAX] = {0};
	assert_int_equal(dp_ack_encode(&pp, 1472, 1, buf, sizeof(buf), lens, DP_ACK_DGRAMS_MAX), 0);
	assert_int_equal(buf[0] | buf[3], 0);
}

/* The buffer sizes dp_reply.c uses always suffice: the worst case, 64
 * pairs that make 64 entries at the smallest MTU the config admits (64)
 * and at one entry per datagram. */
static void test_encode_worst_case_fits(void **st)
{
	(void)st;
	static const uint32_t mtus[] = {64, FG_ACK_DGRAM_HEAD_LEN + FG_ACK_ENTRY_LEN};
	for (unsigned m = 0; m < FG_ARRAY_LEN(mtus); m++) {
		struct dp_ack_peer pp = {0};
		for (unsigned i = 0; i < DP_ACK_PEND; i++)
			pp.pend[pp.n++] = (struct dp_ack_pend){.stream = (uint16_t)i, .seq = i * 1000};
		uint8_t buf[DP_ACK_BUF_MAX];
		uint32_t lens[DP_ACK_DGRAMS_MAX];
		int k = dp_ack_encode(&pp, mtus[m], 1, buf, sizeof(buf), lens, DP_ACK_DGRAMS_MAX);
		assert_true(k > 16);
		unsigned entries = 0;
		for (int i = 0; i < k; i++) {
			assert_true(lens[i] <= mtus[m]);
			entries += (lens[i] - FG_ACK_DGRAM_HEAD_LEN) / FG_ACK_ENTRY_LEN;
		}
		assert_int_equal(entries, DP_ACK_PEND);
	}
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
		cmocka_unit_test(test_peer_find),
		cmocka_unit_test(test_route_forgets_template),
		cmocka_unit_test(test_build_within_mtu),
		cmocka_unit_test(test_encode_matches_build),
		cmocka_unit_test(test_sort_runs),
		cmocka_unit_test(test_encode_empty),
		cmocka_unit_test(test_encode_worst_case_fits),
		cmocka_unit_test(test_init_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_dlv.c - unit tests for dataplane/dp_dlv.c (pending resolved-seed
 * deliveries): track/ACK, idempotent duplicate ACKs, the resend schedule
 * (retry_ns, retries, then give-up), due order, eviction when full, a key
 * delivered again (superseded), bad configurations, and a randomised run
 * against a naive model that checks the ledger
 *   tracked == acked + dropped + evicted + superseded + pending
 * and that every pending key stays findable after many deletions (the
 * backward-shift index). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dp_dlv.h"

#include "../lib/fg_test_rng.h" /* fg_test_xorshift64 */

#define MS 1000000ull

static struct dp_dlv *dlv_new(uint32_t cap, uint32_t retries, void **mem)
{
	static struct dp_dlv d;
	struct dp_dlv_cfg c = {.capacity = cap, .retry_ns = 200 * MS, .retries = retries};
	size_t sz = dp_dlv_mem_size(cap);
	*mem = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	assert_non_null(*mem);
	assert_int_equal(dp_dlv_init(&d, *mem, sz, &c), 0);
	return &d;
}

static void test_bad_cfg(void **st)
{
	(void)st;
	struct dp_dlv d;
	size_t sz = dp_dlv_mem_size(8);
	void *mem = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	struct dp_dlv_cfg c = {.capacity = 8, .retry_ns = 200 * MS, .retries = 5};
	assert_int_equal(dp_dlv_init(&d, mem, sz - 1, &c), -ENOSPC);
	assert_int_equal(dp_dlv_init(&d, (uint8_t *)mem + 8, sz, &c), -EINVAL);
	c.capacity = 0;
	assert_int_equal(dp_dlv_init(&d, mem, sz, &c), -EINVAL);
	c.capacity = 8;
	c.retry_ns = 0;
	assert_int_equal(dp_dlv_init(&d, mem, sz, &c), -EINVAL);
	c.retry_ns = 1;
	c.retries = 256;
	assert_int_equal(dp_dlv_init(&d, mem, sz, &c), -EINVAL);
	c.retries = 0;
	assert_int_equal(dp_dlv_init(&d, mem, sz, &c), 0);
	free(mem);
}

static void test_ack_idempotent(void **st)
{
	(void)st;
	void *mem;
	struct dp_dlv *d = dlv_new(16, 5, &mem);
	assert_int_equal(dp_dlv_track(d, 0xAFA3, 1000, 3, 7, 0x1234, 0, NULL), DP_DLV_NEW);
	assert_int_equal(dp_dlv_track(d, 0xAFA4, 1000, 4, 8, 0x5678, 0, NULL), DP_DLV_NEW);
	assert_int_equal(d->n, 2);
	/* same sequence, other stream: not covered */
	assert_false(dp_dlv_ack(d, 0xAFA5, 1000));
	assert_true(dp_dlv_ack(d, 0xAFA3, 1000));
	assert_int_equal(d->n, 1);
	/* the ACK of a duplicate delivery, or a repeated ACK: nothing happens */
	assert_false(dp_dlv_ack(d, 0xAFA3, 1000));
	assert_false(dp_dlv_ack(d, 0xAFA3, 1000));
	assert_int_equal(d->n, 1);
	assert_true(dp_dlv_ack(d, 0xAFA4, 1000));
	assert_int_equal(d->n, 0);
	assert_int_equal(dp_dlv_due(d, UINT64_MAX), DP_DLV_NONE);
	free(mem);
}

static void test_schedule(void **st)
{
	(void)st;
	void *mem;
	struct dp_dlv *d = dlv_new(16, 5, &mem);
	assert_int_equal(dp_dlv_track(d, 0xAFA1, 5, 1, 2, 9, 1000 * MS, NULL), DP_DLV_NEW);
	uint64_t now = 1000 * MS;
	assert_int_equal(dp_dlv_due(d, now + 199 * MS), DP_DLV_NONE);
	unsigned resends = 0;
	for (;;) {
		now += 200 * MS;
		uint32_t i = dp_dlv_due(d, now);
		assert_int_not_equal(i, DP_DLV_NONE);
		assert_int_equal(d->e[i].token_seq, 5);
		if (dp_dlv_exhausted(d, i)) {
			dp_dlv_drop(d, i);
			break;
		}
		dp_dlv_rearm(d, i, now);
		resends++;
		assert_int_equal(dp_dlv_due(d, now + 199 * MS), DP_DLV_NONE);
	}
	assert_int_equal(resends, 5); /* 6 transmissions in all, as the fleet's sender */
	assert_int_equal(d->n, 0);
	/* after the give-up, a late ACK is harmless */
	assert_false(dp_dlv_ack(d, 0xAFA1, 5));
	free(mem);
}

static void test_due_order_and_evict(void **st)
{
	(void)st;
	void *mem;
	struct dp_dlv *d = dlv_new(4, 5, &mem);
	for (uint32_t s = 0; s < 4; s++)
		assert_int_equal(dp_dlv_track(d, 0xAFA0, s, 0, s, s, s * MS, NULL), DP_DLV_NEW);
	/* rearm seq 0: it goes behind the others */
	uint32_t i = dp_dlv_due(d, 200 * MS);
	assert_int_equal(d->e[i].token_seq, 0);
	dp_dlv_rearm(d, i, 200 * MS);
	assert_int_equal(d->e[dp_dlv_due(d, 201 * MS)].token_seq, 1);
	/* full: the entry due first (seq 1) is evicted and reported */
	struct dp_dlv_entry ev;
	assert_int_equal(dp_dlv_track(d, 0xAFA0, 99, 0, 99, 99, 300 * MS, &ev), DP_DLV_EVICTED);
	assert_int_equal(ev.token_seq, 1);
	assert_int_equal(d->n, 4);
	assert_false(dp_dlv_ack(d, 0xAFA0, 1));
	assert_true(dp_dlv_ack(d, 0xAFA0, 99));
	assert_true(dp_dlv_ack(d, 0xAFA0, 0));
	assert_true(dp_dlv_ack(d, 0xAFA0, 2));
	assert_true(dp_dlv_ack(d, 0xAFA0, 3));
	assert_int_equal(d->n, 0);
	free(mem);
}

static void test_superseded(void **st)
{
	(void)st;
	void *mem;
	struct dp_dlv *d = dlv_new(4, 5, &mem);
	assert_int_equal(dp_dlv_track(d, 0xAFA2, 7, 2, 1, 111, 0, NULL), DP_DLV_NEW);
	uint32_t i = dp_dlv_due(d, 200 * MS);
	dp_dlv_rearm(d, i, 200 * MS);
	assert_int_equal(d->e[i].tries, 1);
	assert_int_equal(dp_dlv_track(d, 0xAFA2, 7, 2, 3, 222, 300 * MS, NULL), DP_DLV_SUPERSEDED);
	assert_int_equal(d->n, 1);
	assert_int_equal(d->e[i].tries, 0);
	assert_int_equal(d->e[i].slot, 3);
	assert_int_equal(d->e[i].fingerprint, 222);
	assert_int_equal(dp_dlv_due(d, 499 * MS), DP_DLV_NONE);
	assert_int_equal(dp_dlv_due(d, 500 * MS), i);
	free(mem);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t xs(void) { return fg_test_xorshift64(&rng); }

/* Random operations against a model (array of pending flags per key). */
static void test_random_ledger(void **st)
{
	(void)st;
	enum { CAP = 64, KEYS = 512 };
	void *mem;
	struct dp_dlv *d = dlv_new(CAP, 3, &mem);
	static bool pend[KEYS];
	memset(pend, 0, sizeof(pend));
	uint64_t tracked = 0, acked = 0, dropped = 0, evicted = 0, superseded = 0, now = 0;
	for (int step = 0; step < 200000; step++) {
		now += (xs() % 6) * MS;
		uint32_t k = (uint32_t)(xs() % KEYS);
		uint16_t stream = (uint16_t)(0xAFA0 + k % 8);
		uint32_t seq = k / 8 * 7919u;
		switch (xs() % 3) {
		case 0: {
			struct dp_dlv_entry ev;
			tracked++;
			enum dp_dlv_track_result r = dp_dlv_track(d, stream, seq, 0, k, k, now, &ev);
			if (r == DP_DLV_SUPERSEDED) {
				assert_true(pend[k]);
				superseded++;
			} else {
				assert_false(pend[k]);
			}
			if (r == DP_DLV_EVICTED) {
				uint32_t ek = (uint32_t)ev.slot;
				assert_true(pend[ek]);
				pend[ek] = false;
				evicted++;
			}
			pend[k] = true;
			break;
		}
		case 1: {
			bool was = dp_dlv_ack(d, stream, seq);
			assert_int_equal(was, pend[k]);
			if (was)
				acked++;
			pend[k] = false;
			break;
		}
		default: {
			uint32_t i;
			while ((i = dp_dlv_due(d, now)) != DP_DLV_NONE) {
				assert_true(d->e[i].due_ns <= now);
				if (dp_dlv_exhausted(d, i)) {
					pend[d->e[i].slot] = false;
					dp_dlv_drop(d, i);
					dropped++;
				} else {
					dp_dlv_rearm(d, i, now);
				}
			}
			break;
		}
		}
		uint32_t n = 0;
		for (int j = 0; j < KEYS; j++)
			n += pend[j];
		assert_int_equal(n, d->n);
		assert_true(d->n <= CAP);
		assert_int_equal(tracked, acked + dropped + evicted + superseded + d->n);
	}
	/* every key the model says is pending is found, and nothing else */
	for (uint32_t k = 0; k < KEYS; k++)
		assert_int_equal(dp_dlv_ack(d, (uint16_t)(0xAFA0 + k % 8), k / 8 * 7919u), pend[k]);
	assert_int_equal(d->n, 0);
	print_message("tracked %llu acked %llu dropped %llu evicted %llu superseded %llu\n", (unsigned long long)tracked,
		      (unsigned long long)acked, (unsigned long long)dropped, (unsigned long long)evicted,
		      (unsigned long long)superseded);
	assert_true(evicted > 0 && dropped > 0 && superseded > 0 && acked > 0);
	free(mem);
}

/* The fleet's consumer ACKs base..base+63 only (base = its lowest held
 * sequence) and trims only once 128 are held (wire.md 2.1). With 100 seeds
 * in flight none of 64..99 is ever ACKed: they wait for the window instead
 * of burning resends, nothing is given up, and once the consumer trims
 * (base moves) they are ACKed; a sequence below the base is resent like
 * any (the base alone never retires one). The consumer model here is the same as fanofleet's
 * --consumer-acks fleet. */
struct fleet_consumer {
	bool held[512];
	unsigned n_held;
};

static void fc_receive(struct fleet_consumer *c, uint32_t seq)
{
	if (!c->held[seq]) {
		c->held[seq] = true;
		c->n_held++;
	}
	if (c->n_held >= 128) { /* trim: keep the newest 64 */
		for (uint32_t s = 0; s < 512 && c->n_held > 64; s++)
			if (c->held[s]) {
				c->held[s] = false;
				c->n_held--;
			}
	}
}

/* One ACK entry as the fleet builds it; applied as dp_deliver_on_ack does. */
static unsigned fc_ack(const struct fleet_consumer *c, struct dp_dlv *d, uint16_t stream)
{
	uint32_t base = 0;
	while (base < 512 && !c->held[base])
		base++;
	if (base == 512)
		return 0;
	unsigned acked = 0;
	(void)dp_dlv_window(d, stream, base);
	for (uint32_t k = 0; k < 64 && base + k < 512; k++)
		if (c->held[base + k] && dp_dlv_ack(d, stream, base + k))
			acked++;
	return acked;
}

static void test_fleet_consumer_window(void **st)
{
	(void)st;
	void *mem;
	struct dp_dlv *d = dlv_new(512, 5, &mem);
	struct fleet_consumer c;
	memset(&c, 0, sizeof(c));
	const uint16_t S = 0xAFA3;
	uint64_t now = 0;
	for (uint32_t seq = 0; seq < 100; seq++) {
		assert_int_equal(dp_dlv_track(d, S, seq, 3, seq, 1000 + seq, now, NULL), DP_DLV_NEW);
		fc_receive(&c, seq);
	}
	unsigned acked = fc_ack(&c, d, S);
	assert_int_equal(acked, 64);
	assert_int_equal(d->n, 36);
	assert_int_equal(dp_dlv_window_place(d, S, 63), DP_DLV_IN_WINDOW);
	assert_int_equal(dp_dlv_window_place(d, S, 64), DP_DLV_BEYOND);
	assert_int_equal(dp_dlv_window_place(d, 0xAFA4, 64), DP_DLV_IN_WINDOW); /* no window known */
	/* 10 s of timer ticks, the consumer re-ACKing every 50 ms: nothing is
	 * resent or given up, all 36 wait */
	unsigned waited = 0, resends = 0, exhausted = 0;
	for (now = MS; now <= 10000 * MS; now += MS) {
		uint32_t i;
		enum dp_dlv_step step;
		while ((step = dp_dlv_step(d, now, &i)) != DP_DLV_STEP_NONE) {
			if (step == DP_DLV_STEP_WAITED)
				waited++;
			else if (step == DP_DLV_STEP_RESEND) {
				resends++;
				dp_dlv_rearm(d, i, now);
			} else if (step == DP_DLV_STEP_EXHAUSTED) {
				exhausted++;
				dp_dlv_drop(d, i);
			} else {
				fail_msg("unexpected step %d", (int)step);
			}
		}
		if (now % (50 * MS) == 0)
			assert_int_equal(fc_ack(&c, d, S), 0);
	}
	assert_int_equal(resends, 0);
	assert_int_equal(exhausted, 0);
	assert_true(waited >= 36 * 49);
	assert_int_equal(d->n, 36);
	assert_int_equal(d->e[d->head].tries, 0);
	/* 28 more seeds: the consumer holds 128 and trims, its base moves to 64 */
	for (uint32_t seq = 100; seq < 128; seq++) {
		assert_int_equal(dp_dlv_track(d, S, seq, 3, seq, 1000 + seq, now, NULL), DP_DLV_NEW);
		fc_receive(&c, seq);
	}
	assert_int_equal(fc_ack(&c, d, S), 64);
	assert_int_equal(d->n, 0);
	/* a late delivery below the base is resent, not taken as delivered:
	 * the consumer may have lost it before it took a later one */
	assert_int_equal(dp_dlv_track(d, S, 7, 3, 7, 1007, now, NULL), DP_DLV_NEW);
	uint32_t i;
	assert_int_equal(dp_dlv_step(d, now + 200 * MS, &i), DP_DLV_STEP_RESEND);
	assert_int_equal(d->n, 1);
	assert_true(dp_dlv_ack(d, S, 7));
	/* sequence arithmetic across the u32 wrap */
	(void)dp_dlv_window(d, S, 0xFFFFFFF0u);
	assert_int_equal(dp_dlv_window_place(d, S, 0xFFFFFFEFu), DP_DLV_BELOW_BASE);
	assert_int_equal(dp_dlv_window_place(d, S, 0x2Fu), DP_DLV_IN_WINDOW);
	assert_int_equal(dp_dlv_window_place(d, S, 0x30u), DP_DLV_BEYOND);
	assert_false(dp_dlv_window(d, S, 0xFFFFFFF0u)); /* unchanged */
	assert_true(dp_dlv_window(d, S, 0xFFFFFFF1u));
	free(mem);
}

/* An ACK entry's bitmap at once (dp_dlv_ack_bits): each named sequence
 * ACKed as dp_dlv_ack would, lowest first, across the u32 wrap; misses
 * counted on from the caller's count, and once it reaches the bound the
 * rest are not looked up (they stay pending). */
static void test_ack_bits(void **st)
{
	(void)st;
	void *mem;
	struct dp_dlv *d = dlv_new(64, 5, &mem);
	const uint16_t S = 0xAFA3;
	for (uint32_t q = 100; q < 106; q += 2)
		assert_int_equal(dp_dlv_track(d, S, q, 3, q, q, 0, NULL), DP_DLV_NEW);
	assert_int_equal(dp_dlv_track(d, 0xAFA4, 101, 4, 1, 1, 0, NULL), DP_DLV_NEW); /* another stream */
	unsigned misses = 5;
	/* 100..105 and 163: 100, 102, 104 pending */
	assert_int_equal(dp_dlv_ack_bits(d, S, 100, 0x3Full | 1ull << 63, &misses, 128), 3);
	assert_int_equal(misses, 5 + 4);
	assert_int_equal(d->n, 1);
	/* again: nothing pending, every bit a miss */
	assert_int_equal(dp_dlv_ack_bits(d, S, 100, 0x3Full, &misses, 128), 0);
	assert_int_equal(misses, 9 + 6);
	/* the bound: 196 and 197 miss, reaching it; 200 is not looked up */
	assert_int_equal(dp_dlv_track(d, S, 200, 3, 200, 200, 0, NULL), DP_DLV_NEW);
	misses = 126;
	assert_int_equal(dp_dlv_ack_bits(d, S, 196, 0x13ull, &misses, 128), 0);
	assert_int_equal(misses, 128);
	assert_int_equal(dp_dlv_ack_bits(d, S, 200, 0x1ull, &misses, 128), 0); /* spent: none looked up */
	assert_int_equal(d->n, 2);
	misses = 0;
	assert_int_equal(dp_dlv_ack_bits(d, S, 196, 0x13ull, &misses, 128), 1);
	assert_int_equal(misses, 2);
	/* across the wrap: 0xFFFFFFFF and 0 in one entry */
	assert_int_equal(dp_dlv_track(d, S, 0xFFFFFFFFu, 3, 1, 1, 0, NULL), DP_DLV_NEW);
	assert_int_equal(dp_dlv_track(d, S, 0, 3, 2, 2, 0, NULL), DP_DLV_NEW);
	misses = 0;
	assert_int_equal(dp_dlv_ack_bits(d, S, 0xFFFFFFFEu, 0x6ull, &misses, 128), 2);
	assert_int_equal(misses, 0);
	assert_int_equal(d->n, 1);
	assert_true(dp_dlv_ack(d, 0xAFA4, 101));
	free(mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_cfg),
		cmocka_unit_test(test_ack_idempotent),
		cmocka_unit_test(test_ack_bits),
		cmocka_unit_test(test_schedule),
		cmocka_unit_test(test_due_order_and_evict),
		cmocka_unit_test(test_superseded),
		cmocka_unit_test(test_random_ledger),
		cmocka_unit_test(test_fleet_consumer_window),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

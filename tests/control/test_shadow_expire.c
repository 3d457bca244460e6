/* test_shadow_expire.c - the cost and the correctness of shadow expiry
 * (core/shadow.c, fg_shadow_expire).
 *
 * Cost is measured as work, not time: struct fg_shadow counts every entry
 * fg_shadow_expire looks at (expire_visits). Expiring N entries in batches
 * of 16 must look at each entry a bounded number of times: at most
 * N + (number of calls), where the extra one per call is the first entry
 * not due yet. The old sweep restarted at index 0 for every batch and
 * looked at about N * N / 32 entries.
 *
 * Correctness: against a reference model (key -> deadline) with a mix of
 * seeds, canonical reports, matches, evictions, duplicates, a non-monotonic
 * clock and a flush, the set that expires at each step is exactly the set
 * whose deadline has passed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fg/shadow.h"
#include "fg/wire.h"
#include "../lib/fg_test_shadow.h" /* fg_test_shadow_new, fg_test_lines_all */

#define HIDDEN 4u
#define NL 8u
#define BATCH 16

struct fix {
	struct fg_shadow sh;
	void *mem;
	struct fg_lines shadow_lines;
	uint8_t body[HIDDEN * 4];
};

static struct fix *fix_new(uint32_t capacity, uint64_t expiry_ns)
{
	struct fix *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	struct fg_shadow_cfg cfg = { .capacity = capacity, .body_max = HIDDEN * 4, .n_layers = NL,
				     .expiry_ns = expiry_ns, .sample = 0.0 };
	f->mem = fg_test_shadow_new(&f->sh, &cfg);
	struct fg_line_policy pol = { .auto_promote = false };
	fg_test_lines_all(&f->shadow_lines, FG_LINE_SHADOW, &pol);
	for (unsigned i = 0; i < HIDDEN; i++)
		fg_put_le32(f->body + 4 * i, 0x3F800000u + i);
	return f;
}

static void fix_free(struct fix *f)
{
	free(f->mem);
	free(f);
}

static int add_seed(struct fix *f, uint32_t token, uint16_t layer, uint64_t now)
{
	struct fg_seed_view v = { .token_seq = token, .dst_layer = layer, .start_pos = 0, .seq_len = 1,
				  .body = f->body, .body_len = HIDDEN * 4,
				  .fingerprint = fg_fingerprint(f->body, HIDDEN * 4), .lines = 0x01 };
	struct fg_shadow_verdict out;
	return fg_shadow_seed(&f->sh, &v, &f->shadow_lines, now, &out);
}

static int add_canon(struct fix *f, uint32_t token, uint16_t layer, uint64_t now)
{
	struct fg_canon c = { .token_seq = token, .dst_layer = layer, .kind = FG_CANON_DIGEST, .start_pos = 0,
			      .seq_len = 1, .digest = fg_fingerprint(f->body, HIDDEN * 4) };
	struct fg_shadow_verdict out;
	return fg_shadow_canon(&f->sh, &c, now, &out);
}

/* Expire everything due at now in batches; returns verdicts, counts calls. */
static uint32_t expire_all(struct fix *f, uint64_t now, uint32_t *calls, uint8_t *seen, uint32_t seen_len)
{
	struct fg_shadow_verdict out[BATCH];
	uint32_t total = 0;
	int n;
	do {
		n = fg_shadow_expire(&f->sh, now, out, BATCH);
		assert_true(n >= 0 && n <= BATCH);
		(*calls)++;
		for (int i = 0; i < n; i++) {
			assert_int_equal(out[i].v.kind, FG_VERDICT_UNMATCHED);
			assert_true(out[i].seed_side);
			if (seen) {
				uint32_t k = out[i].v.token_seq * NL + out[i].v.dst_layer;
				assert_true(k < seen_len);
				seen[k]++;
			}
		}
		total += (uint32_t)n;
	} while (n == BATCH);
	return total;
}

static void test_expire_work_bounded(void **state)
{
	(void)state;
	const uint32_t N = 8192;
	struct fix *f = fix_new(2 * N * NL, 1000);
	/* token t layer 0..NL-1 -> index t*NL+l, all distinct: no eviction */
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(add_seed(f, i / NL, (uint16_t)(i % NL), i), 0);
	assert_int_equal(f->sh.live, N);

	/* nothing is due yet: one call, one look */
	uint32_t calls = 0;
	assert_int_equal(expire_all(f, 999, &calls, NULL, 0), 0);
	assert_int_equal(calls, 1);
	assert_int_equal(f->sh.expire_visits, 1);

	/* half due: exactly the first N/2 expire */
	uint8_t *seen = calloc(N, 1);
	assert_non_null(seen);
	f->sh.expire_visits = 0;
	calls = 0;
	uint32_t got = expire_all(f, 1000 + N / 2 - 1, &calls, seen, N);
	assert_int_equal(got, N / 2);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(seen[i], i < N / 2 ? 1 : 0);
	assert_true(f->sh.expire_visits <= (uint64_t)got + calls);

	/* the rest */
	uint64_t v0 = f->sh.expire_visits;
	uint32_t c0 = calls;
	got = expire_all(f, 1000 + N, &calls, seen, N);
	assert_int_equal(got, N / 2);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(seen[i], 1);
	assert_true(f->sh.expire_visits - v0 <= (uint64_t)got + (calls - c0));
	assert_int_equal(f->sh.live, 0);
	assert_int_equal(f->sh.unmatched, N);
	/* each entry looked at a bounded number of times (<= 2 with batches of 16) */
	assert_true(f->sh.expire_visits <= 2ull * N);
	print_message("expired %u entries in %u calls, %llu looks (a sweep per batch: ~%llu)\n", N, calls,
		      (unsigned long long)f->sh.expire_visits, (unsigned long long)N * N / (2 * BATCH));
	free(seen);
	fix_free(f);
}

/* Reference model: deadline per key, 0 = absent. */
struct model {
	uint64_t *dl;
	uint32_t nkeys;
};

static void test_expire_matches_model(void **state)
{
	(void)state;
	const uint32_t cap = 509; /* prime: keys collide and evict */
	const uint32_t tokens = 80;
	struct fix *f = fix_new(cap, 30);
	struct model m = { calloc(tokens * NL, sizeof(uint64_t)), tokens * NL };
	assert_non_null(m.dl);
	uint32_t *owner = malloc(cap * sizeof(uint32_t)); /* index -> key in the model, UINT32_MAX = none */
	assert_non_null(owner);
	for (uint32_t i = 0; i < cap; i++)
		owner[i] = UINT32_MAX;
	uint8_t *is_seed = calloc(m.nkeys, 1);
	assert_non_null(is_seed);

	uint64_t now = 1000;
	uint32_t rng = 12345;
	uint32_t calls = 0;
	uint64_t expired_total = 0;
	for (uint32_t step = 0; step < 20000; step++) {
		rng = rng * 1103515245u + 12345u;
		uint32_t r = rng >> 8;
		uint32_t key = r % m.nkeys;
		uint32_t token = key / NL;
		uint16_t layer = (uint16_t)(key % NL);
		uint32_t idx = (uint32_t)(((uint64_t)token * NL + layer) % cap);
		/* a clock that mostly moves forward and sometimes steps back */
		rng = rng * 1103515245u + 12345u;
		uint32_t r2 = rng >> 8;
		uint64_t t = now + (r2 % 4 == 0 ? 0 : (r2 >> 2) % 3) - ((r2 >> 4) % 16 == 0 ? 7 : 0);
		now = t > now ? t : now;
		bool seed = (r >> 12) & 1;
		int rc = seed ? add_seed(f, token, layer, t) : add_canon(f, token, layer, t);
		assert_true(rc >= 0);
		/* a canonical report never takes a waiting seed's entry (core/shadow.c
		 * invariant 4; every report here comes from one source, so a report
		 * may replace another key's report): refused, nothing changes */
		bool refused = !seed && owner[idx] != UINT32_MAX && owner[idx] != key && is_seed[owner[idx]];
		bool match = !refused && owner[idx] == key && is_seed[key] != seed;
		assert_int_equal(rc, match ? 1 : 0);
		if (refused) {
			/* nothing changes */
		} else {
			if (owner[idx] != UINT32_MAX)
				m.dl[owner[idx]] = 0; /* matched, evicted or replaced */
			if (match) {
				owner[idx] = UINT32_MAX;
			} else {
				owner[idx] = key;
				m.dl[key] = t + 30;
				is_seed[key] = seed;
			}
		}
		if (step % 37 == 0) {
			/* expire now: exactly the keys with deadline <= now */
			uint32_t due_seeds = 0, due = 0;
			for (uint32_t k = 0; k < m.nkeys; k++)
				if (m.dl[k] && m.dl[k] <= now) {
					due++;
					due_seeds += is_seed[k];
				}
			uint64_t v0 = f->sh.expire_visits, u0 = f->sh.unmatched;
			uint32_t c0 = calls;
			uint8_t *seen = calloc(m.nkeys, 1);
			assert_non_null(seen);
			uint32_t got = expire_all(f, now, &calls, seen, m.nkeys);
			assert_int_equal(got, due_seeds);
			assert_int_equal(f->sh.unmatched - u0, due);
			for (uint32_t k = 0; k < m.nkeys; k++) {
				bool was_due = m.dl[k] && m.dl[k] <= now;
				assert_int_equal(seen[k], was_due && is_seed[k] ? 1 : 0);
				if (was_due) {
					m.dl[k] = 0;
					owner[(uint32_t)(((uint64_t)(k / NL) * NL + k % NL) % cap)] = UINT32_MAX;
				}
			}
			assert_true(f->sh.expire_visits - v0 <= (uint64_t)due + (calls - c0));
			expired_total += due;
			free(seen);
		}
		if (step == 15000) {
			uint32_t live = 0;
			for (uint32_t k = 0; k < m.nkeys; k++)
				live += m.dl[k] != 0;
			assert_int_equal(fg_shadow_flush(&f->sh), live);
			for (uint32_t k = 0; k < m.nkeys; k++)
				m.dl[k] = 0;
			for (uint32_t i = 0; i < cap; i++)
				owner[i] = UINT32_MAX;
		}
		uint32_t live = 0;
		for (uint32_t k = 0; k < m.nkeys; k++)
			live += m.dl[k] != 0;
		assert_int_equal(f->sh.live, live);
	}
	print_message("model: %llu expired, %llu evicted, %llu matched\n", (unsigned long long)expired_total,
		      (unsigned long long)f->sh.evicted, (unsigned long long)(f->sh.clean + f->sh.divergent));
	assert_true(expired_total > 1000);
	assert_true(f->sh.evicted > 100);
	free(is_seed);
	free(owner);
	free(m.dl);
	fix_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_expire_work_bounded),
		cmocka_unit_test(test_expire_matches_model),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

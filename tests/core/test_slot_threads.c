/* test_slot_threads.c - the single-writer shard contract under real threads.
 *
 * Two threads each own one slot table (shard fg_shard_of(key) == thread).
 * Both receive an interleaved stream of contributions for many keys; a
 * contribution for the other thread's shard is handed off through an SPSC
 * fg_ring (one per direction), exactly as lcores hand frames to a slot's
 * owner. Every resolved seed is checked bit for bit against a reference
 * computed single-threaded (one unsharded table fed the same contributions)
 * and against the scalar reduction.
 *
 * Meant to run under TSan too (docs/slots.md: meson setup build-tsan
 * -Db_sanitize=thread): the tables are touched by their owner only, the
 * rings carry the only cross-thread traffic, and the shared input is
 * written before the threads start. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <xxhash.h>

#include "fg/ring.h"
#include "fg/slot.h"

#include "../lib/fg_test_rng.h" /* fg_test_rng */

enum {
	HIDDEN = 64,
	LAYERS = 4,
	TOKENS = 400,
	KEYS = TOKENS * LAYERS,
	NLINES = 3,
	CONTRIBS = KEYS * NLINES,
	SHARDS = 2,
	RING = 64, /* small on purpose: the full-ring path is exercised */
};
static const uint8_t pair_x[NLINES] = { 1, 3, 5 };

struct contrib {
	struct fg_seed seed;
	uint32_t key;
};

/* Shared, written before the threads start, read-only afterwards. */
static float *bodies;           /* [KEYS][NLINES][HIDDEN] */
static uint8_t signs[KEYS][NLINES];
static struct contrib *stream;  /* CONTRIBS, shuffled */
/* Written by the owner thread of each key only; read after join. */
static float *results;          /* [KEYS][HIDDEN] */
static uint64_t result_fp[KEYS];
static uint8_t result_seen[KEYS];

static uint64_t rng_state = 0xD1B54A32D192ED03ull;
static uint64_t rng(void) { return fg_test_rng(&rng_state); }

static float *body_of(uint32_t key, unsigned k) { return bodies + ((size_t)key * NLINES + k) * HIDDEN; }

static void cfg_make(struct fg_slots_cfg *cfg, uint32_t capacity, uint32_t n_shards)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->capacity = capacity;
	cfg->hidden = HIDDEN;
	cfg->max_seq_len = 1;
	cfg->n_layers = LAYERS;
	cfg->n_shards = n_shards;
	cfg->deadline_ns = 1000000000ull;
	for (unsigned l = 0; l < LAYERS; l++)
		if (fg_rule_make(&cfg->rules[l], pair_x, NLINES) != 0)
			abort();
}

static void build_input(void)
{
	bodies = malloc(sizeof(float) * KEYS * NLINES * HIDDEN);
	results = malloc(sizeof(float) * KEYS * HIDDEN);
	stream = malloc(sizeof(*stream) * CONTRIBS);
	assert_non_null(bodies);
	assert_non_null(results);
	assert_non_null(stream);
	for (uint32_t key = 0; key < KEYS; key++) {
		for (unsigned k = 0; k < NLINES; k++) {
			float *b = body_of(key, k);
			signs[key][k] = (uint8_t)(rng() & 1);
			for (unsigned i = 0; i < HIDDEN; i++)
				b[i] = (float)((double)(int64_t)(rng() >> 11) / (double)(1ull << 50));
			struct contrib *c = &stream[key * NLINES + k];
			c->key = key;
			c->seed = (struct fg_seed){
				.token_seq = 5000 + key / LAYERS, .dst_layer = (uint16_t)(key % LAYERS),
				.line = pair_x[k], .orientation = signs[key][k], .start_pos = 0, .seq_len = 1,
				.body = (const uint8_t *)b, .body_len = HIDDEN * sizeof(float),
			};
		}
	}
	for (uint32_t i = CONTRIBS - 1; i > 0; i--) { /* Fisher-Yates */
		uint32_t j = (uint32_t)(rng() % (i + 1));
		struct contrib t = stream[i];
		stream[i] = stream[j];
		stream[j] = t;
	}
	memset(result_seen, 0, sizeof(result_seen));
}

struct worker {
	unsigned id;
	struct fg_slots s;
	void *mem;
	struct fg_ring *in, *out;  /* in: from the other thread; out: to it */
	uint32_t expect;           /* contributions of this shard */
	uint32_t placed, handed, resolved, errors, ring_full;
};

static void place(struct worker *w, const struct contrib *c)
{
	struct fg_slot_result r;
	struct fg_seed_view v;

	w->placed++; /* counted first so a failure can never hang the loop */
	if (fg_slot_put(&w->s, &c->seed, 1, &r) != 0) {
		w->errors++;
		return;
	}
	if (r.outcome == FG_O_RESOLVED) {
		if (fg_slot_seed(&w->s, r.slot, &v) != 0 || v.body_len != HIDDEN * sizeof(float)) {
			w->errors++;
			return;
		}
		memcpy(results + (size_t)c->key * HIDDEN, v.body, v.body_len);
		result_fp[c->key] = v.fingerprint;
		result_seen[c->key]++;
		w->resolved++;
	} else if (r.outcome != FG_O_ACCEPTED) {
		w->errors++;
	}
}

static void drain(struct worker *w)
{
	struct contrib c;

	while (fg_ring_pop(w->in, &c))
		place(w, &c);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	/* Thread w->id receives every SHARDS-th contribution of the stream. */
	for (uint32_t i = w->id; i < CONTRIBS; i += SHARDS) {
		const struct contrib *c = &stream[i];
		uint32_t owner = fg_shard_of(c->seed.token_seq, c->seed.dst_layer, LAYERS, SHARDS);

		if (owner == w->id) {
			place(w, c);
		} else {
			while (!fg_ring_push(w->out, c)) {
				/* The peer is slow: keep serving our own queue so two
				 * full rings can never deadlock. */
				w->ring_full++;
				drain(w);
			}
			w->handed++;
		}
		drain(w);
	}
	while (w->placed < w->expect)
		drain(w);
	return NULL;
}

static void test_two_shards_with_handoff(void **state)
{
	struct fg_slots_cfg cfg;
	struct worker w[SHARDS];
	struct fg_ring *rings[SHARDS];
	pthread_t th[SHARDS];
	(void)state;

	build_input();

	/* Reference: one unsharded table, single thread, same stream. */
	cfg_make(&cfg, KEYS, 1);
	size_t len = fg_slots_mem_size(&cfg);
	void *mem = aligned_alloc(64, len);
	struct fg_slots ref;
	float *ref_out = malloc(sizeof(float) * KEYS * HIDDEN);
	uint64_t ref_fp[KEYS];
	assert_non_null(mem);
	assert_int_equal(fg_slots_init(&ref, mem, len, &cfg), 0);
	for (uint32_t i = 0; i < CONTRIBS; i++) {
		struct fg_slot_result r;
		struct fg_seed_view v;
		assert_int_equal(fg_slot_put(&ref, &stream[i].seed, 1, &r), 0);
		if (r.outcome == FG_O_RESOLVED) {
			assert_int_equal(fg_slot_seed(&ref, r.slot, &v), 0);
			memcpy(ref_out + (size_t)stream[i].key * HIDDEN, v.body, v.body_len);
			ref_fp[stream[i].key] = v.fingerprint;
		} else {
			assert_int_equal(r.outcome, FG_O_ACCEPTED);
		}
	}
	assert_int_equal(ref.resolved, KEYS);
	free(mem);

	/* Two shards. Each holds half the keys; with n_shards set the half
	 * maps densely onto KEYS / SHARDS indices, so nothing collides. */
	cfg_make(&cfg, KEYS / SHARDS, SHARDS);
	len = fg_slots_mem_size(&cfg);
	for (unsigned t = 0; t < SHARDS; t++) {
		memset(&w[t], 0, sizeof(w[t]));
		w[t].id = t;
		w[t].mem = aligned_alloc(64, len);
		assert_non_null(w[t].mem);
		assert_int_equal(fg_slots_init(&w[t].s, w[t].mem, len, &cfg), 0);
		rings[t] = aligned_alloc(64, (fg_ring_mem_size(RING, sizeof(struct contrib)) + 63) & ~(size_t)63);
		assert_non_null(rings[t]);
		assert_int_equal(fg_ring_init(rings[t], RING, sizeof(struct contrib)), 0);
	}
	for (uint32_t i = 0; i < CONTRIBS; i++)
		w[fg_shard_of(stream[i].seed.token_seq, stream[i].seed.dst_layer, LAYERS, SHARDS)].expect++;
	for (unsigned t = 0; t < SHARDS; t++) {
		w[t].in = rings[t];                 /* ring t feeds thread t */
		w[t].out = rings[(t + 1) % SHARDS]; /* and thread t feeds the other */
	}
	for (unsigned t = 0; t < SHARDS; t++)
		assert_int_equal(pthread_create(&th[t], NULL, worker_main, &w[t]), 0);
	for (unsigned t = 0; t < SHARDS; t++)
		assert_int_equal(pthread_join(th[t], NULL), 0);

	uint32_t resolved = 0;
	for (unsigned t = 0; t < SHARDS; t++) {
		assert_int_equal(w[t].errors, 0);
		assert_int_equal(w[t].placed, w[t].expect);
		assert_true(w[t].handed > 0); /* the hand-off really happened */
		assert_int_equal(w[t].s.resolved, w[t].resolved);
		assert_int_equal(w[t].s.in_use, 0);
		assert_int_equal(fg_ring_count(rings[t]), 0);
		resolved += w[t].resolved;
		print_message("shard %u: placed %u handed %u resolved %u ring-full waits %u\n", t, w[t].placed,
			      w[t].handed, w[t].resolved, w[t].ring_full);
	}
	assert_int_equal(resolved, KEYS);
	for (uint32_t key = 0; key < KEYS; key++) {
		float scalar[HIDDEN];
		assert_int_equal(result_seen[key], 1);
		assert_memory_equal(results + (size_t)key * HIDDEN, ref_out + (size_t)key * HIDDEN,
				    HIDDEN * sizeof(float));
		assert_int_equal(result_fp[key], ref_fp[key]);
		assert_int_equal(result_fp[key], XXH3_64bits(results + (size_t)key * HIDDEN, HIDDEN * sizeof(float)));
		for (unsigned i = 0; i < HIDDEN; i++) {
			volatile float r = signs[key][0] ? -body_of(key, 0)[i] : body_of(key, 0)[i];
			for (unsigned k = 1; k < NLINES; k++)
				r = signs[key][k] ? r - body_of(key, k)[i] : r + body_of(key, k)[i];
			scalar[i] = r;
		}
		assert_memory_equal(results + (size_t)key * HIDDEN, scalar, sizeof(scalar));
	}
	for (unsigned t = 0; t < SHARDS; t++) {
		free(w[t].mem);
		free(rings[t]);
	}
	free(ref_out);
	free(bodies);
	free(results);
	free(stream);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_shards_with_handoff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

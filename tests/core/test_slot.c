/* test_slot.c - the slot engine (core/slot.c) and the bit-exact reduction
 * (core/reduce.c): conformance vectors R01/R02 in every arrival order,
 * every reduction kernel, line count and sign combination bit for bit
 * against a scalar reference (NaN payloads and signs, infinities,
 * denormals, signed zeros, odd lengths and misalignments), the Pair X
 * default at hidden 1536 against a scalar reference, fragments, superseded
 * attempts, duplicates, conflicts, expiry on a fake clock, late
 * answers, epoch flushes (the key reopens), slot reuse, capacity
 * exhaustion, shape and line refusals, and a fragment attempt begun for
 * a decoded seed (fg_slot_begin_decoded) answered as fg_slot_begin, and
 * fg_slot_whole's result record as fg_slot_place's, the inline fast paths
 * (fg_slot_begin_fast, fg_slot_whole_fast) against the functions they stand
 * for on one random history, and each layer's rule positions.
 *
 * Reads tests/data/vectors.txt through FG_TEST_DATA. Single-threaded. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <xxhash.h>

#include "fg/slot.h"
#include "fg/slot_inline.h"
#include "fg/wire.h"

#include "../lib/fg_test_rng.h" /* fg_test_rng */
#include "../lib/fg_test_vectors.h" /* fg_test_vector_bytes */

/* ---- helpers ------------------------------------------------------------ */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rng(void) { return fg_test_rng(&rng_state); }

static float bits_f(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}
static uint32_t f_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

/* Random f32 with a fair share of specials: NaN (both signs, random
 * payloads), +-Inf, denormals, +-0, and ordinary values of wide range. */
static float rand_special(void)
{
	uint64_t r = rng();
	switch (r % 16) {
	case 0: return bits_f(0x7FC00000u | (uint32_t)(r >> 40 & 0x3FFFFF) | (uint32_t)(r >> 8 & 1) << 31);
	case 1: return bits_f((r >> 8 & 1) ? 0xFF800000u : 0x7F800000u);
	case 2: return bits_f((uint32_t)(r >> 20 & 0x7FFFFF) | (uint32_t)(r >> 8 & 1) << 31); /* denormal */
	case 3: return bits_f((r >> 8 & 1) ? 0x80000000u : 0u);
	case 4: return bits_f((uint32_t)(r >> 32)); /* any bit pattern */
	default: return (float)((double)(int64_t)(r >> 11) / (double)(1ull << 40)) * ((r & 0xF0) ? 1.0f : 1e-30f);
	}
}

static float rand_normal(void)
{
	return (float)((double)(int64_t)(rng() >> 11) / (double)(1ull << 52)) - 1.0f;
}

/* One addition and one subtraction, each its own call: written inline as
 * neg ? r - c : r + c, clang -O3 makes it r + (neg ? -c : c), the same
 * number but not the same NaN (x86 returns a NaN operand of a subtraction
 * unchanged), and the reference would no longer be the scalar loop. */
static __attribute__((noinline)) float ref_add(float a, float b) { return a + b; }
static __attribute__((noinline)) float ref_sub(float a, float b) { return a - b; }

/* Scalar reference of wire.md section 4, written the obvious way. */
static void ref_reduce(float *out, const float *const *c, const uint8_t *neg, unsigned n, size_t nf)
{
	for (size_t i = 0; i < nf; i++) {
		volatile float r = neg[0] ? -c[0][i] : c[0][i];
		for (unsigned k = 1; k < n; k++)
			r = neg[k] ? ref_sub(r, c[k][i]) : ref_add(r, c[k][i]);
		out[i] = r;
	}
}

/* The signs of a rule as bits (line k in bit k), for failure messages. */
static unsigned neg_bits(const uint8_t *neg, unsigned n)
{
	unsigned b = 0;

	for (unsigned k = 0; k < n; k++)
		b |= (neg[k] & 1u) << k;
	return b;
}

struct table {
	struct fg_slots s;
	void *mem;
	size_t len;
};

static void cfg_default(struct fg_slots_cfg *cfg, uint32_t capacity, uint32_t hidden, uint32_t max_seq,
			uint16_t layers, const uint8_t *lines, unsigned n)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->capacity = capacity;
	cfg->hidden = hidden;
	cfg->max_seq_len = max_seq;
	cfg->n_layers = layers;
	cfg->deadline_ns = 1000;
	for (unsigned l = 0; l < layers; l++)
		assert_int_equal(fg_rule_make(&cfg->rules[l], lines, n), 0);
}

static void table_new(struct table *t, const struct fg_slots_cfg *cfg, int garbage)
{
	t->len = fg_slots_mem_size(cfg);
	assert_true(t->len > 0);
	t->mem = aligned_alloc(64, (t->len + 63) & ~(size_t)63);
	assert_non_null(t->mem);
	memset(t->mem, garbage, t->len);
	assert_int_equal(fg_slots_init(&t->s, t->mem, t->len, cfg), 0);
}

static void table_free(struct table *t) { free(t->mem); }

static struct fg_seed mkseed(uint32_t tok, uint16_t layer, uint8_t line, uint8_t neg, uint32_t start,
			     uint32_t seq_len, const void *body, uint32_t body_len)
{
	struct fg_seed sd = {
		.token_seq = tok, .dst_layer = layer, .line = line, .orientation = neg,
		.start_pos = start, .seq_len = seq_len, .body = body, .body_len = body_len,
	};
	return sd;
}

static enum fg_outcome put(struct fg_slots *s, const struct fg_seed *sd, uint64_t now, struct fg_slot_result *r)
{
	struct fg_slot_result tmp;
	if (!r)
		r = &tmp;
	assert_int_equal(fg_slot_put(s, sd, now, r), 0);
	return r->outcome;
}

/* sd as a fragment attempt (fg_slot_begin, its body not there yet) is
 * answered want at once. */
static void begin_answered(struct fg_slots *s, struct fg_seed sd, uint64_t now, enum fg_outcome want)
{
	struct fg_slot_ref rf;
	struct fg_slot_result r;
	sd.body = NULL;
	assert_int_equal(fg_slot_begin(s, &sd, now, &rf, &r), 0);
	assert_int_equal(r.outcome, want);
}

/* Two slot results the same in every field a caller reads. */
static void assert_result_eq(const struct fg_slot_result *b, const struct fg_slot_result *a)
{
	assert_int_equal(b->outcome, a->outcome);
	assert_int_equal(b->slot, a->slot);
	assert_int_equal(b->landed, a->landed);
	assert_int_equal(b->expected, a->expected);
	assert_int_equal(b->state, a->state);
	assert_int_equal(b->epoch, a->epoch);
	assert_int_equal(b->fingerprint, a->fingerprint);
	assert_int_equal(b->bytes, a->bytes);
}

/* A refusal (the table unchanged) answers a fragment attempt
 * (fg_slot_begin) as it answers the whole contribution (fg_slot_put):
 * every field of the result, whatever the result held before. */
static void begin_refused_as_put(struct fg_slots *s, struct fg_seed sd, uint64_t now, enum fg_outcome want)
{
	struct fg_slot_result p, b;
	struct fg_slot_ref rf;
	assert_int_equal(fg_slot_put(s, &sd, now, &p), 0);
	assert_int_equal(p.outcome, want);
	sd.body = NULL;
	memset(&b, 0xA5, sizeof(b));
	assert_int_equal(fg_slot_begin(s, &sd, now, &rf, &b), 0);
	assert_int_equal(b.outcome, want);
	assert_result_eq(&b, &p);
}

/* sd begun on t1 by fg_slot_begin and on t2 (the same history) by
 * fg_slot_begin_decoded: the same outcome want, the same result for a
 * refusal, the same reference for an attempt. */
static void begin_both(struct fg_slots *t1, struct fg_slots *t2, struct fg_seed sd, uint64_t now,
		       enum fg_outcome want)
{
	struct fg_slot_result a, b;
	struct fg_slot_ref ra, rb;
	sd.body = NULL;
	memset(&b, 0xA5, sizeof(b));
	assert_int_equal(fg_slot_begin(t1, &sd, now, &ra, &a), 0);
	assert_int_equal(a.outcome, want);
	assert_int_equal(fg_slot_begin_decoded(t2, &sd, now, &rb, &b), want);
	if (want == FG_O_PARTIAL) {
		assert_int_equal(ra.slot, rb.slot);
		assert_int_equal(ra.gen, rb.gen);
		assert_int_equal(ra.attempt, rb.attempt);
		assert_int_equal(ra.pos, rb.pos);
		assert_int_equal(ra.body_len, rb.body_len);
		assert_true(fg_slot_ref_live(&ra) && fg_slot_ref_live(&rb));
		return;
	}
	assert_int_equal(b.outcome, want);
	assert_result_eq(&b, &a);
}

/* The same whole contribution into both tables. */
static void put_both(struct fg_slots *t1, struct fg_slots *t2, const struct fg_seed *sd, uint64_t now,
		     enum fg_outcome want)
{
	assert_int_equal(put(t1, sd, now, NULL), want);
	assert_int_equal(put(t2, sd, now, NULL), want);
}

/* Decode the back-to-back seed frames of a "reduce" vector. */
static unsigned vector_seeds(const char *id, uint8_t *buf, size_t cap, struct fg_seed *seeds, unsigned max)
{
	size_t len = fg_test_vector_bytes(id, buf, cap);
	struct fg_frame fr[8];
	struct fg_bands b;
	struct fg_seed_limits lim = { .hidden = 1, .max_seq_len = 1 };
	int n = fg_batch_decode(buf, len, fr, 8);

	fg_bands_default(&b);
	b.n_layers = 32;
	assert_true(n > 0 && (unsigned)n <= max);
	for (int i = 0; i < n; i++) {
		enum fg_band band;
		uint16_t layer;
		assert_int_equal(fg_stream_classify(&b, fr[i].hdr.stream_id, &band, &layer), 0);
		assert_int_equal(band, FG_BAND_SEED);
		assert_true(fg_seed_decode(&fr[i], layer, &lim, &seeds[i]) > 0);
	}
	return (unsigned)n;
}

/* Next permutation of p[0..n) in lexicographic order; false after the last. */
static bool next_perm(unsigned *p, unsigned n)
{
	int i = (int)n - 2;
	while (i >= 0 && p[i] >= p[i + 1])
		i--;
	if (i < 0)
		return false;
	int j = (int)n - 1;
	while (p[j] <= p[i])
		j--;
	unsigned t = p[i];
	p[i] = p[j];
	p[j] = t;
	for (int a = i + 1, b = (int)n - 1; a < b; a++, b--) {
		t = p[a];
		p[a] = p[b];
		p[b] = t;
	}
	return true;
}

/* Put seeds in every arrival order; the last one resolves; every order
 * gives the same bits. Returns the number of permutations. */
static unsigned all_orders(const struct fg_slots_cfg *cfg, const struct fg_seed *seeds, unsigned n,
			   uint8_t *first, uint32_t body_len)
{
	unsigned perm[FG_LINES], count = 0;
	for (unsigned i = 0; i < n; i++)
		perm[i] = i;
	do {
		struct table t;
		struct fg_slot_result r;
		struct fg_seed_view v;

		table_new(&t, cfg, 0x5A);
		for (unsigned k = 0; k < n; k++) {
			enum fg_outcome o = put(&t.s, &seeds[perm[k]], 10, &r);
			assert_int_equal(o, k + 1 == n ? FG_O_RESOLVED : FG_O_ACCEPTED);
		}
		assert_int_equal(fg_slot_seed(&t.s, r.slot, &v), 0);
		assert_int_equal(v.body_len, body_len);
		assert_int_equal(v.fingerprint, XXH3_64bits(v.body, v.body_len));
		assert_int_equal(r.fingerprint, v.fingerprint);
		if (count == 0)
			memcpy(first, v.body, body_len);
		else
			assert_memory_equal(first, v.body, body_len);
		count++;
		table_free(&t);
	} while (next_perm(perm, n));
	return count;
}

/* ---- conformance vectors -------------------------------------------------- */

static void test_vector_r01(void **state)
{
	uint8_t buf[256], res[4];
	struct fg_seed seeds[3];
	struct fg_slots_cfg cfg;
	const uint8_t lines[3] = { 0, 1, 2 };
	uint32_t bits;
	(void)state;

	assert_int_equal(vector_seeds("R01", buf, sizeof(buf), seeds, 3), 3);
	cfg_default(&cfg, 8, 1, 1, 32, lines, 3);
	assert_int_equal(all_orders(&cfg, seeds, 3, res, 4), 6);
	memcpy(&bits, res, 4);
	assert_int_equal(bits, 0x00000000u);
}

static void test_vector_r02(void **state)
{
	uint8_t buf[256], res[4];
	struct fg_seed seeds[2];
	struct fg_slots_cfg cfg;
	const uint8_t lines[2] = { 0, 1 };
	uint32_t bits;
	(void)state;

	assert_int_equal(vector_seeds("R02", buf, sizeof(buf), seeds, 2), 2);
	assert_int_equal(seeds[1].orientation, 1);
	cfg_default(&cfg, 8, 1, 1, 32, lines, 2);
	assert_int_equal(all_orders(&cfg, seeds, 2, res, 4), 2);
	memcpy(&bits, res, 4);
	assert_int_equal(bits, 0x40200000u);
}

/* ---- the reduction alone ------------------------------------------------ */

/* Did an addition of element i meet two NaN operands (an input NaN, or the
 * default NaN of inf - inf, meeting another)? IEEE 754 leaves the payload
 * of that result to the implementation and gcc may commute an addition, so
 * there only NaN-ness is a contract. */
static bool two_nans_met(const float *const *c, const uint8_t *neg, unsigned n, size_t i)
{
	volatile float r = neg[0] ? -c[0][i] : c[0][i];
	bool met = false;

	for (unsigned k = 1; k < n; k++) {
		met = met || (isnan(r) && isnan(c[k][i]));
		r = neg[k] ? r - c[k][i] : r + c[k][i];
	}
	return met;
}

/* fg_reduce against the reference for one input: every element bit for bit
 * (NaN-ness only where two NaNs met), nothing written before out or past
 * n_floats (out must have FG_GUARD floats of slack on each side, filled
 * with 0xEE bytes). Adds to the counts; fails with where it went wrong. */
enum { FG_GUARD = 16 };
struct reduce_counts {
	size_t exact, nan_exact, multi_nan;
};
static void reduce_check(float *out, float *ref, const float *const *c, const uint8_t *neg, unsigned n, size_t nf,
			 struct reduce_counts *cnt)
{
	fg_reduce(out, c, neg, n, nf);
	ref_reduce(ref, c, neg, n, nf);
	for (size_t i = 0; i < nf; i++) {
		if (two_nans_met(c, neg, n, i)) {
			if (!isnan(out[i]) || !isnan(ref[i]))
				fail_msg("n %u signs %x len %zu i %zu: %08x, reference %08x (two NaNs met)", n,
					 neg_bits(neg, n), nf, i, f_bits(out[i]), f_bits(ref[i]));
			cnt->multi_nan++;
			continue;
		}
		if (f_bits(out[i]) != f_bits(ref[i]))
			fail_msg("n %u signs %x len %zu i %zu: %08x != reference %08x", n, neg_bits(neg, n), nf, i,
				 f_bits(out[i]), f_bits(ref[i]));
		cnt->exact++;
		cnt->nan_exact += isnan(out[i]) ? 1u : 0u;
	}
	for (size_t g = 1; g <= FG_GUARD; g++) {
		if (f_bits(out[-(ptrdiff_t)g]) != 0xEEEEEEEEu || f_bits(out[nf + g - 1]) != 0xEEEEEEEEu)
			fail_msg("n %u signs %x len %zu: written outside out[0..len)", n, neg_bits(neg, n), nf);
	}
}

static void test_reduce_matches_scalar(void **state)
{
	enum { MAXF = 5000 };
	float *c[FG_LINES], *buf = malloc((MAXF + 2 * FG_GUARD) * 4), *ref = malloc(MAXF * 4);
	float *out = buf + FG_GUARD;
	uint8_t neg[FG_LINES];
	struct reduce_counts cnt = { 0 };
	(void)state;

	for (unsigned k = 0; k < FG_LINES; k++) {
		c[k] = malloc(MAXF * 4);
		assert_non_null(c[k]);
	}
	for (unsigned round = 0; round < 1000; round++) {
		unsigned n = 1 + (unsigned)(rng() % FG_LINES);
		size_t nf = 1 + (size_t)(rng() % MAXF);
		for (unsigned k = 0; k < n; k++) {
			neg[k] = (uint8_t)(rng() & 1);
			for (size_t i = 0; i < nf; i++)
				c[k][i] = rand_special();
		}
		memset(buf, 0xEE, (MAXF + 2 * FG_GUARD) * 4);
		reduce_check(out, ref, (const float *const *)c, neg, n, nf, &cnt);
	}
	/* the specials really were exercised */
	assert_true(cnt.exact > 100000 && cnt.nan_exact > 1000 && cnt.multi_nan > 100);
	for (unsigned k = 0; k < FG_LINES; k++)
		free(c[k]);
	free(buf);
	free(ref);
}

/* Random lines: specials everywhere, or (lone) one special per element on
 * a random line (where[i]) and ordinary values on the others. */
static void fill_lines(float *const *c, unsigned *where, unsigned n, size_t nf, bool lone)
{
	for (size_t i = 0; i < nf; i++) {
		where[i] = (unsigned)(rng() % n);
		for (unsigned k = 0; k < n; k++)
			c[k][i] = !lone || k == where[i] ? rand_special() : rand_normal();
	}
}

/* Input with one special per element, on line where[i]: a lone NaN comes
 * out as itself, quieted by the first addition (n > 1), with its sign
 * flipped when it is the first line's and that line is negated (x86
 * returns the NaN operand; a subtraction does not flip it). Counts the lone
 * NaNs of the first line in lone[0], of the others in lone[1]. */
static void lone_nans(const float *out, const float *const *c, const unsigned *where, const uint8_t *neg,
		      unsigned n, size_t nf, size_t lone[2])
{
	for (size_t i = 0; i < nf; i++) {
		uint32_t in = f_bits(c[where[i]][i]);

		if (!isnan(c[where[i]][i]))
			continue;
#if defined(__x86_64__) || defined(__i386__)
		uint32_t want = (n > 1 ? in | 0x00400000u : in) ^ (where[i] == 0 && neg[0] ? 0x80000000u : 0u);
		if (f_bits(out[i]) != want)
			fail_msg("n %u signs %x len %zu i %zu: lone NaN %08x on line %u gave %08x, not %08x", n,
				 neg_bits(neg, n), nf, i, in, where[i], f_bits(out[i]), want);
#endif
		lone[where[i] == 0 ? 0 : 1]++;
	}
}

/* Every kernel fg_reduce has (one per line count and add/subtract choice,
 * each with both signs of the first line, the blocked loop for longer
 * rules), every n from 1 to FG_LINES with every sign combination, at
 * lengths around the vector width, the unrolled step and the block (1, 7,
 * 8, 9, ... 1535, 1536, 2049, 4100), with out and the lines at different
 * misalignments. Two inputs each:
 *   - specials everywhere (NaNs of both signs with payloads, infinities,
 *     denormals, signed zeros, any bit pattern);
 *   - one special per element on one line, ordinary values on the others,
 *     so that every element is compared bit for bit: a lone NaN on the first
 *     line must come out as that NaN, quieted, with its sign flipped when the
 *     first line is negated (x86 returns the NaN operand; folding -a + b into
 *     b - a would keep the sign), and a lone NaN elsewhere as itself. */
static void test_reduce_every_kernel(void **state)
{
	static const size_t lens[] = { 1, 2, 7, 8, 9, 15, 16, 17, 31, 63, 64, 65, 127, 128, 129,
				       1535, 1536, 2047, 2048, 2049, 4100 };
	enum { MAXF = 4100, PAD = 4 };
	float *c[FG_LINES], *buf = malloc((MAXF + PAD + 2 * FG_GUARD) * 4), *ref = malloc(MAXF * 4);
	float *mem[FG_LINES];
	unsigned *where = malloc(MAXF * sizeof(unsigned));
	uint8_t neg[FG_LINES];
	struct reduce_counts all = { 0 };
	size_t lone[2] = { 0, 0 }, runs = 0;
	(void)state;

	assert_non_null(buf);
	assert_non_null(ref);
	assert_non_null(where);
	for (unsigned k = 0; k < FG_LINES; k++) {
		mem[k] = malloc((MAXF + PAD) * 4);
		assert_non_null(mem[k]);
	}
	for (unsigned n = 1; n <= FG_LINES; n++) {
		for (unsigned signs = 0; signs < 1u << n; signs++) {
			for (unsigned k = 0; k < n; k++)
				neg[k] = (uint8_t)(signs >> k & 1u);
			for (size_t li = 0; li < FG_ARRAY_LEN(lens); li++) {
				size_t nf = lens[li];
				unsigned shift = (unsigned)(li + signs) % PAD;
				float *out = buf + FG_GUARD + shift;

				for (unsigned k = 0; k < n; k++)
					c[k] = mem[k] + (shift + k) % PAD;
				for (unsigned input = 0; input < 2; input++) {
					struct reduce_counts cnt = { 0 };

					fill_lines(c, where, n, nf, input == 1);
					memset(buf, 0xEE, (MAXF + PAD + 2 * FG_GUARD) * 4);
					reduce_check(out, ref, (const float *const *)c, neg, n, nf, &cnt);
					runs++;
					all.exact += cnt.exact;
					all.nan_exact += cnt.nan_exact;
					all.multi_nan += cnt.multi_nan;
					if (input == 0)
						continue;
					assert_int_equal(cnt.exact, nf);
					lone_nans(out, (const float *const *)c, where, neg, n, nf, lone);
				}
			}
		}
	}
	/* 254 sign combinations x 21 lengths x 2 inputs, and the specials were hit */
	assert_int_equal(runs, 254u * FG_ARRAY_LEN(lens) * 2u);
	assert_true(all.exact > 1000000 && all.nan_exact > 100000 && all.multi_nan > 10000);
	assert_true(lone[0] > 10000 && lone[1] > 10000);
	for (unsigned k = 0; k < FG_LINES; k++)
		free(mem[k]);
	free(where);
	free(buf);
	free(ref);
}

/* The canonical grouping is observable: (1 + 1e8) - 1e8 != 1 + (1e8 - 1e8). */
static void test_reduce_order_is_canonical(void **state)
{
	float a = 1.0f, b = 1e8f, cc = 1e8f, out;
	const float *c[3] = { &a, &b, &cc };
	const uint8_t neg[3] = { 0, 0, 1 };
	(void)state;

	fg_reduce(&out, c, neg, 3, 1);
	assert_int_equal(f_bits(out), 0u);
	/* and the sign of the first term is applied by negation */
	const uint8_t neg1[1] = { 1 };
	fg_reduce(&out, c, neg1, 1, 1);
	assert_int_equal(f_bits(out), 0xBF800000u);
	/* denormal + denormal stays exact (no flush to zero) */
	float d = bits_f(1u);
	const float *cd[2] = { &d, &d };
	const uint8_t n2[2] = { 0, 0 };
	fg_reduce(&out, cd, n2, 2, 1);
	assert_int_equal(f_bits(out), 2u);
}

/* ---- Pair X at hidden 1536 ---------------------------------------------- */

static void test_pair_x_every_order(void **state)
{
	enum { H = 1536, SEQ = 2 };
	const uint8_t lines[3] = { 1, 3, 5 };
	struct fg_slots_cfg cfg;
	uint32_t body_len = H * SEQ * 4;
	float *bodies[3], *ref = malloc(body_len);
	uint8_t *first = malloc(body_len);
	struct fg_seed seeds[3];
	(void)state;

	cfg_default(&cfg, 16, H, SEQ, 28, lines, 3);
	for (unsigned signs = 0; signs < 8; signs++) {
		uint8_t neg[3];
		for (unsigned k = 0; k < 3; k++) {
			bodies[k] = malloc(body_len);
			for (unsigned i = 0; i < H * SEQ; i++)
				bodies[k][i] = rand_normal();
			neg[k] = (uint8_t)(signs >> k & 1);
			seeds[k] = mkseed(1000 + signs, 7, lines[k], neg[k], 3, SEQ, bodies[k], body_len);
		}
		ref_reduce(ref, (const float *const *)bodies, neg, 3, H * SEQ);
		assert_int_equal(all_orders(&cfg, seeds, 3, first, body_len), 6);
		assert_memory_equal(first, ref, body_len);
		for (unsigned k = 0; k < 3; k++)
			free(bodies[k]);
	}
	free(ref);
	free(first);
}

/* ---- fragments --------------------------------------------------------- */

static void test_fragments_random_order_with_dupes(void **state)
{
	enum { H = 1536 };
	const uint8_t lines[3] = { 1, 3, 5 };
	const uint8_t neg[3] = { 0, 0, 1 };
	struct fg_slots_cfg cfg;
	struct table t;
	uint32_t body_len = H * 4, chunk = 1000; /* deliberately not a multiple of 4 */
	uint32_t nfrag = (body_len + chunk - 1) / chunk;
	float *bodies[3], *ref = malloc(body_len);
	struct fg_slot_ref refs[3];
	struct fg_slot_result r;
	struct fg_seed_view v;
	uint8_t seen[3][16] = { { 0 } };
	(void)state;

	cfg_default(&cfg, 4, H, 1, 28, lines, 3);
	table_new(&t, &cfg, 0xC3);
	for (unsigned k = 0; k < 3; k++) {
		struct fg_seed hdr;
		bodies[k] = malloc(body_len);
		for (unsigned i = 0; i < H; i++)
			bodies[k][i] = rand_normal();
		hdr = mkseed(77, 2, lines[k], neg[k], 0, 1, NULL, body_len);
		assert_int_equal(fg_slot_begin(&t.s, &hdr, 5, &refs[k], &r), 0);
		assert_int_equal(r.outcome, FG_O_PARTIAL);
		assert_int_equal(refs[k].body_len, body_len);
	}
	ref_reduce(ref, (const float *const *)bodies, neg, 3, H);

	/* A random stream of (line, fragment) with every fragment at least once
	 * and about a third sent twice; the caller-side dedupe (seen[][]) is
	 * what the reassembler does. */
	unsigned placed = 0, total = 3 * nfrag, sends = 0;
	while (placed < total) {
		unsigned k = (unsigned)(rng() % 3), f = (unsigned)(rng() % nfrag);
		uint32_t off = f * chunk, len = off + chunk > body_len ? body_len - off : chunk;
		sends++;
		if (seen[k][f])
			continue; /* duplicated fragment: dropped by the caller */
		seen[k][f] = 1;
		placed++;
		assert_int_equal(fg_slot_place(&t.s, &refs[k], off, (uint8_t *)bodies[k] + off, len, 6, &r), 0);
		if (placed == total)
			assert_int_equal(r.outcome, FG_O_RESOLVED);
		else
			assert_true(r.outcome == FG_O_PARTIAL || r.outcome == FG_O_ACCEPTED);
	}
	assert_true(sends > total);
	assert_int_equal(fg_slot_seed(&t.s, r.slot, &v), 0);
	assert_memory_equal(v.body, ref, body_len);
	assert_int_equal(v.fingerprint, XXH3_64bits(ref, body_len));
	assert_int_equal(v.lines, (1u << 1) | (1u << 3) | (1u << 5));

	/* after resolution a fragment of that attempt is stale, and a begin
	 * for a whole line asks for the whole body */
	assert_int_equal(fg_slot_place(&t.s, &refs[0], 0, bodies[0], 4, 7, &r), 0);
	assert_int_equal(r.outcome, FG_O_STALE);
	struct fg_seed again = mkseed(77, 2, 1, 0, 0, 1, NULL, body_len);
	struct fg_slot_ref ref2;
	assert_int_equal(fg_slot_begin(&t.s, &again, 8, &ref2, &r), 0);
	assert_int_equal(r.outcome, FG_O_DUP_PENDING);
	again.body = (const uint8_t *)bodies[0];
	assert_int_equal(put(&t.s, &again, 8, &r), FG_O_LATE);
	assert_int_equal(r.fingerprint, XXH3_64bits(ref, body_len));
	assert_int_equal(r.state, FG_SLOT_RESOLVED);

	for (unsigned k = 0; k < 3; k++)
		free(bodies[k]);
	free(ref);
	table_free(&t);
}

static void test_fragments_superseded_and_abort(void **state)
{
	enum { H = 64 };
	const uint8_t lines[2] = { 1, 3 };
	struct fg_slots_cfg cfg;
	struct table t;
	float a[H], b[H], ref[H];
	uint32_t body_len = sizeof(a);
	struct fg_slot_ref r1, r2, r3;
	struct fg_slot_result r;
	struct fg_seed_view v;
	(void)state;

	for (unsigned i = 0; i < H; i++) {
		a[i] = rand_normal();
		b[i] = rand_normal();
	}
	cfg_default(&cfg, 4, H, 1, 4, lines, 2);
	table_new(&t, &cfg, 0x11);
	struct fg_seed hdr = mkseed(5, 1, 1, 0, 0, 1, NULL, body_len);
	assert_int_equal(fg_slot_begin(&t.s, &hdr, 0, &r1, &r), 0);
	/* first attempt delivers half of the wrong bytes, then the sender
	 * resends under a new frame id: a new attempt supersedes it */
	assert_int_equal(fg_slot_place(&t.s, &r1, 0, b, body_len / 2, 1, &r), 0);
	assert_int_equal(r.outcome, FG_O_PARTIAL);
	assert_int_equal(fg_slot_begin(&t.s, &hdr, 2, &r2, &r), 0);
	assert_int_equal(r.outcome, FG_O_PARTIAL);
	assert_int_not_equal(r1.attempt, r2.attempt);
	assert_int_equal(fg_slot_place(&t.s, &r1, body_len / 2, (uint8_t *)b + body_len / 2, body_len / 2, 3, &r), 0);
	assert_int_equal(r.outcome, FG_O_STALE);
	assert_int_equal(fg_slot_place(&t.s, &r2, 0, a, body_len / 2, 3, &r), 0);
	assert_int_equal(r.outcome, FG_O_PARTIAL);
	assert_int_equal(r.landed, 0);
	/* out of range and overfill are refused without counting */
	assert_int_equal(fg_slot_place(&t.s, &r2, body_len - 4, a, 8, 3, &r), 0);
	assert_int_equal(r.outcome, FG_O_BAD_RANGE);
	assert_int_equal(fg_slot_place(&t.s, &r2, body_len + 4, a, 0, 3, &r), 0);
	assert_int_equal(r.outcome, FG_O_BAD_RANGE);
	/* abort: the reassembler gave up; the bytes no longer count */
	fg_slot_abort(&t.s, &r2);
	assert_int_equal(fg_slot_place(&t.s, &r2, body_len / 2, (uint8_t *)a + body_len / 2, body_len / 2, 4, &r), 0);
	assert_int_equal(r.outcome, FG_O_STALE);
	assert_int_equal(fg_slot_begin(&t.s, &hdr, 5, &r3, &r), 0);
	assert_int_equal(fg_slot_place(&t.s, &r3, body_len / 2, (uint8_t *)a + body_len / 2, body_len / 2, 6, &r), 0);
	assert_int_equal(r.outcome, FG_O_PARTIAL);
	assert_int_equal(fg_slot_place(&t.s, &r3, 0, a, body_len / 2, 6, &r), 0);
	assert_int_equal(r.outcome, FG_O_ACCEPTED);
	assert_int_equal(r.landed, 1u << 1);
	/* a whole put of the other line resolves; the result uses a, not b */
	struct fg_seed other = mkseed(5, 1, 3, 1, 0, 1, b, body_len);
	assert_int_equal(put(&t.s, &other, 7, &r), FG_O_RESOLVED);
	const float *c[2] = { a, b };
	const uint8_t neg[2] = { 0, 1 };
	ref_reduce(ref, c, neg, 2, H);
	assert_int_equal(fg_slot_seed(&t.s, r.slot, &v), 0);
	assert_memory_equal(v.body, ref, body_len);
	table_free(&t);
}

/* A whole put while a fragment attempt is in flight supersedes it. */
static void test_put_supersedes_fragments(void **state)
{
	enum { H = 16 };
	const uint8_t lines[2] = { 0, 2 };
	struct fg_slots_cfg cfg;
	struct table t;
	float a[H], b[H];
	struct fg_slot_ref rf;
	struct fg_slot_result r;
	(void)state;

	for (unsigned i = 0; i < H; i++) {
		a[i] = (float)i;
		b[i] = (float)(2 * i);
	}
	cfg_default(&cfg, 2, H, 1, 2, lines, 2);
	table_new(&t, &cfg, 0);
	struct fg_seed hdr = mkseed(9, 0, 0, 0, 0, 1, NULL, sizeof(a));
	assert_int_equal(fg_slot_begin(&t.s, &hdr, 0, &rf, &r), 0);
	assert_int_equal(fg_slot_place(&t.s, &rf, 0, b, 8, 0, &r), 0);
	hdr.body = (const uint8_t *)a;
	assert_int_equal(put(&t.s, &hdr, 1, &r), FG_O_ACCEPTED);
	assert_int_equal(fg_slot_place(&t.s, &rf, 8, (uint8_t *)b + 8, sizeof(b) - 8, 2, &r), 0);
	assert_int_equal(r.outcome, FG_O_STALE);
	/* the stored body is a: a duplicate of a is a no-op */
	assert_int_equal(put(&t.s, &hdr, 3, &r), FG_O_DUPLICATE);
	table_free(&t);
}

/* ---- duplicates, conflicts, late, expiry ---------------------------------- */

static void test_duplicate_and_conflict(void **state)
{
	enum { H = 32 };
	const uint8_t lines[3] = { 1, 3, 5 };
	struct fg_slots_cfg cfg;
	struct table t;
	float a[H], a2[H], b[H];
	struct fg_slot_result r;
	struct fg_slot_info info;
	(void)state;

	for (unsigned i = 0; i < H; i++)
		a[i] = a2[i] = b[i] = rand_normal();
	a2[H - 1] = bits_f(f_bits(a2[H - 1]) ^ 1u); /* one bit differs */
	cfg_default(&cfg, 8, H, 1, 4, lines, 3);
	table_new(&t, &cfg, 0);
	struct fg_seed s1 = mkseed(40, 3, 1, 0, 0, 1, a, sizeof(a));
	assert_int_equal(put(&t.s, &s1, 0, &r), FG_O_ACCEPTED);
	uint32_t epoch0 = t.s.epoch;
	assert_int_equal(put(&t.s, &s1, 1, &r), FG_O_DUPLICATE);
	assert_int_equal(r.landed, 1u << 1);
	assert_int_equal(r.state, FG_SLOT_OPEN);
	assert_int_equal(t.s.epoch, epoch0);
	/* same bytes, opposite orientation: a different contribution */
	struct fg_seed s1neg = s1;
	s1neg.orientation = 1;
	struct fg_seed s1x = mkseed(40, 3, 1, 0, 0, 1, a2, sizeof(a2));
	assert_int_equal(put(&t.s, &s1x, 2, &r), FG_O_CONFLICT);
	assert_int_equal(r.state, FG_SLOT_POISONED);
	/* the table does not move the model epoch: its owner decides
	 * (control/cp_epoch_guard.h), so a spoofed conflict answers the
	 * fleet no new epoch */
	assert_int_equal(r.epoch, epoch0);
	assert_int_equal(t.s.epoch, epoch0);
	assert_int_equal(t.s.poisoned, 1);
	assert_int_equal(t.s.in_use, 0);
	struct fg_seed s3 = mkseed(40, 3, 3, 0, 0, 1, b, sizeof(b));
	assert_int_equal(put(&t.s, &s3, 3, &r), FG_O_POISONED);
	assert_int_equal(fg_slot_lookup(&t.s, 40, 3, &info), 0);
	assert_int_equal(info.state, FG_SLOT_POISONED);
	assert_string_equal(fg_slot_state_name(info.state), "poisoned");
	/* a poisoned slot is never on the expiry FIFO */
	struct fg_slot_expired ex[4];
	assert_int_equal(fg_slots_expire(&t.s, 1u << 30, ex, 4), 0);

	/* orientation conflict on another slot */
	struct fg_seed o1 = mkseed(41, 3, 1, 0, 0, 1, a, sizeof(a));
	assert_int_equal(put(&t.s, &o1, 4, &r), FG_O_ACCEPTED);
	s1neg.token_seq = 41;
	assert_int_equal(put(&t.s, &s1neg, 4, &r), FG_O_CONFLICT);
	assert_int_equal(t.s.epoch, epoch0);
	assert_int_equal(t.s.poisoned, 2);

	/* conflict after resolution withdraws the seed */
	struct fg_seed r1 = mkseed(42, 3, 1, 0, 0, 1, a, sizeof(a));
	struct fg_seed r3 = mkseed(42, 3, 3, 0, 0, 1, b, sizeof(b));
	struct fg_seed r5 = mkseed(42, 3, 5, 1, 0, 1, b, sizeof(b));
	struct fg_seed_view v;
	assert_int_equal(put(&t.s, &r1, 5, &r), FG_O_ACCEPTED);
	assert_int_equal(put(&t.s, &r3, 5, &r), FG_O_ACCEPTED);
	assert_int_equal(put(&t.s, &r5, 5, &r), FG_O_RESOLVED);
	uint32_t slot = r.slot;
	uint64_t fp = r.fingerprint;
	assert_int_equal(put(&t.s, &r3, 6, &r), FG_O_LATE);
	assert_int_equal(r.fingerprint, fp);
	assert_int_equal(fg_slot_seed(&t.s, slot, &v), 0);
	r3.body = (const uint8_t *)a2;
	assert_int_equal(put(&t.s, &r3, 7, &r), FG_O_CONFLICT);
	assert_int_equal(r.fingerprint, 0);
	assert_int_equal(fg_slot_seed(&t.s, slot, &v), -ENOENT);
	assert_int_equal(t.s.epoch, epoch0);
	assert_int_equal(t.s.poisoned, 3);
	table_free(&t);
}

static void test_expiry_fake_clock(void **state)
{
	enum { H = 8 };
	const uint8_t lines[2] = { 1, 3 };
	struct fg_slots_cfg cfg;
	struct table t;
	float a[H] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct fg_slot_result r;
	struct fg_slot_expired ex[8];
	struct fg_slot_info info;
	(void)state;

	cfg_default(&cfg, 64, H, 1, 4, lines, 2);
	cfg.deadline_ns = 1000;
	table_new(&t, &cfg, 0);
	/* open five slots at t = 0, 100, 200, 300, 400; resolve the one at 200 */
	for (unsigned k = 0; k < 5; k++) {
		struct fg_seed sd = mkseed(100 + k, 2, 1, 0, 0, 1, a, sizeof(a));
		assert_int_equal(put(&t.s, &sd, 100 * k, &r), FG_O_ACCEPTED);
	}
	struct fg_seed done = mkseed(102, 2, 3, 0, 0, 1, a, sizeof(a));
	assert_int_equal(put(&t.s, &done, 450, &r), FG_O_RESOLVED);
	assert_int_equal(t.s.in_use, 4);
	assert_int_equal(fg_slots_expire(&t.s, 999, ex, 8), 0);
	assert_int_equal(fg_slots_expire(&t.s, 1000, ex, 8), 1);
	assert_int_equal(ex[0].token_seq, 100);
	assert_int_equal(ex[0].dst_layer, 2);
	assert_int_equal(ex[0].landed, 1u << 1);
	assert_int_equal(ex[0].expected, (1u << 1) | (1u << 3));
	/* max bounds each call; oldest first; the resolved 102 is skipped */
	assert_int_equal(fg_slots_expire(&t.s, 1350, ex, 1), 1);
	assert_int_equal(ex[0].token_seq, 101);
	assert_int_equal(fg_slots_expire(&t.s, 1350, ex, 8), 1);
	assert_int_equal(ex[0].token_seq, 103);
	assert_int_equal(t.s.expired, 3);
	assert_int_equal(t.s.in_use, 1);
	/* answers to an expired slot, whole or fragmented */
	struct fg_seed late = mkseed(100, 2, 3, 0, 0, 1, a, sizeof(a));
	assert_int_equal(put(&t.s, &late, 1400, &r), FG_O_EXPIRED);
	assert_int_equal(r.state, FG_SLOT_EXPIRED);
	begin_answered(&t.s, late, 1400, FG_O_EXPIRED);
	assert_int_equal(fg_slot_lookup(&t.s, 100, 2, &info), 0);
	assert_int_equal(info.state, FG_SLOT_EXPIRED);
	assert_int_equal(info.opened_ns, 0);
	assert_int_equal(info.deadline_ns, 1000);
	/* fragment ref of a slot that expires in the middle */
	struct fg_slot_ref rf;
	struct fg_seed h5 = mkseed(105, 2, 1, 0, 0, 1, NULL, sizeof(a));
	assert_int_equal(fg_slot_begin(&t.s, &h5, 1500, &rf, &r), 0);
	assert_int_equal(fg_slots_expire(&t.s, 2500, ex, 8), 2); /* 104 and 105 */
	assert_int_equal(fg_slot_place(&t.s, &rf, 0, a, 4, 2500, &r), 0);
	assert_int_equal(r.outcome, FG_O_EXPIRED);
	/* flush drops every open slot, counted apart from expiry; the key's
	 * next contribution opens a fresh slot (test_flush_reopens below) */
	for (unsigned k = 0; k < 3; k++) {
		struct fg_seed sd = mkseed(200 + k, 1, 3, 0, 0, 1, a, sizeof(a));
		assert_int_equal(put(&t.s, &sd, 3000, &r), FG_O_ACCEPTED);
	}
	uint64_t expired = t.s.expired;
	assert_int_equal(fg_slots_flush(&t.s), 3);
	assert_int_equal(t.s.in_use, 0);
	assert_int_equal(t.s.flushed, 3);
	assert_int_equal(t.s.expired, expired);
	assert_int_equal(fg_slots_expire(&t.s, UINT64_MAX, ex, 8), 0);
	assert_int_equal(fg_slot_lookup(&t.s, 201, 1, &info), -ENOENT);
	struct fg_seed sd = mkseed(201, 1, 1, 0, 0, 1, a, sizeof(a));
	assert_int_equal(put(&t.s, &sd, 3001, &r), FG_O_ACCEPTED);
	assert_int_equal(r.landed, 1u << 1); /* line 3 of before the flush is gone */
	assert_int_equal(fg_slots_flush(&t.s), 1);
	assert_int_equal(fg_slots_flush(&t.s), 0);
	assert_int_equal(t.s.flushed, 4);
	table_free(&t);
}

/* A model epoch change: a conflict poisons one slot, the caller flushes
 * every open slot. The flushed keys reopen in the new epoch with none of
 * their old lines; a fragment attempt begun before the flush is STALE and
 * never lands (in the free slot, nor in the slot reopened for its key);
 * the slot ledger closes with the new flushed counter. */
static void test_flush_reopens_in_new_epoch(void **state)
{
	enum { H = 16 };
	const uint8_t lines[3] = { 1, 3, 5 };
	struct fg_slots_cfg cfg;
	struct table t;
	float a[H], b[H], c[H], x[H], y[H];
	struct fg_slot_result r;
	struct fg_slot_info info;
	struct fg_seed_view v;
	(void)state;

	for (unsigned i = 0; i < H; i++) {
		a[i] = rand_normal();
		b[i] = rand_normal();
		c[i] = rand_normal();
		x[i] = rand_normal();
		y[i] = rand_normal();
	}
	cfg_default(&cfg, 32, H, 1, 4, lines, 3);
	table_new(&t, &cfg, 0xA5);
	/* epoch e0: slot 7/2 holds lines 1 and 3; slot 8/2 has a fragment
	 * attempt of line 5 half placed; slot 9/2 resolves */
	struct fg_seed s71 = mkseed(7, 2, 1, 0, 0, 1, x, sizeof(x));
	struct fg_seed s73 = mkseed(7, 2, 3, 1, 0, 1, y, sizeof(y));
	assert_int_equal(put(&t.s, &s71, 10, &r), FG_O_ACCEPTED);
	assert_int_equal(put(&t.s, &s73, 11, &r), FG_O_ACCEPTED);
	uint32_t e0 = r.epoch;
	struct fg_seed h85 = mkseed(8, 2, 5, 0, 0, 1, NULL, sizeof(x));
	struct fg_slot_ref old_ref;
	assert_int_equal(fg_slot_begin(&t.s, &h85, 12, &old_ref, &r), 0);
	assert_int_equal(r.outcome, FG_O_PARTIAL);
	assert_int_equal(fg_slot_place(&t.s, &old_ref, 0, x, 8, 12, &r), 0);
	assert_int_equal(r.outcome, FG_O_PARTIAL);
	for (unsigned p = 0; p < 3; p++) {
		struct fg_seed sd = mkseed(9, 2, lines[p], 0, 0, 1, a, sizeof(a));
		assert_int_equal(put(&t.s, &sd, 13, &r), p == 2 ? FG_O_RESOLVED : FG_O_ACCEPTED);
	}
	uint64_t fp9 = r.fingerprint;
	/* a conflict on slot 10/2: the caller moves the epoch and flushes */
	struct fg_seed s101 = mkseed(10, 2, 1, 0, 0, 1, a, sizeof(a));
	struct fg_seed s101x = mkseed(10, 2, 1, 0, 0, 1, b, sizeof(b));
	assert_int_equal(put(&t.s, &s101, 14, &r), FG_O_ACCEPTED);
	assert_int_equal(t.s.in_use, 3);
	assert_int_equal(put(&t.s, &s101x, 15, &r), FG_O_CONFLICT);
	assert_int_equal(r.epoch, e0);
	t.s.epoch = e0 + 1; /* what cp_engine's epoch_advance and a lane FLUSH do */
	assert_int_equal(fg_slots_flush(&t.s), 2); /* 7/2 and 8/2 */
	assert_int_equal(t.s.flushed, 2);
	assert_int_equal(t.s.expired, 0);
	assert_int_equal(t.s.in_use, 0);
	assert_int_equal(fg_slot_lookup(&t.s, 7, 2, &info), -ENOENT);
	assert_int_equal(fg_slot_lookup(&t.s, 8, 2, &info), -ENOENT);
	/* what the flush did not touch: the resolved and the poisoned slot */
	assert_int_equal(fg_slot_lookup(&t.s, 9, 2, &info), 0);
	assert_int_equal(info.state, FG_SLOT_RESOLVED);
	assert_int_equal(info.fingerprint, fp9);
	assert_int_equal(fg_slot_lookup(&t.s, 10, 2, &info), 0);
	assert_int_equal(info.state, FG_SLOT_POISONED);

	/* the old attempt's next fragment: stale, nothing placed */
	assert_int_equal(fg_slot_place(&t.s, &old_ref, 8, x + 2, 8, 16, &r), 0);
	assert_int_equal(r.outcome, FG_O_STALE);
	assert_int_equal(t.s.in_use, 0);
	fg_slot_abort(&t.s, &old_ref); /* harmless on a free slot */

	/* epoch e0+1: 7/2 reopens with line 3 only (line 1 of e0 is gone), and
	 * a line 1 body other than e0's is no conflict */
	uint64_t opened = t.s.opened, reclaimed = t.s.reclaimed;
	struct fg_seed n73 = mkseed(7, 2, 3, 0, 0, 1, b, sizeof(b));
	assert_int_equal(put(&t.s, &n73, 20, &r), FG_O_ACCEPTED);
	assert_int_equal(r.landed, 1u << 3);
	assert_int_equal(r.state, FG_SLOT_OPEN);
	assert_int_equal(r.epoch, e0 + 1);
	assert_int_equal(t.s.opened, opened + 1);
	assert_int_equal(t.s.reclaimed, reclaimed); /* a flushed slot is free, not reclaimed */
	struct fg_seed n71 = mkseed(7, 2, 1, 0, 0, 1, a, sizeof(a));
	struct fg_seed n75 = mkseed(7, 2, 5, 1, 0, 1, c, sizeof(c));
	assert_int_equal(put(&t.s, &n71, 21, &r), FG_O_ACCEPTED);
	assert_int_equal(put(&t.s, &n75, 22, &r), FG_O_RESOLVED);
	assert_int_equal(r.epoch, e0 + 1);
	assert_int_equal(fg_slot_seed(&t.s, r.slot, &v), 0);
	{
		const float *cc[3] = { a, b, c };
		const uint8_t neg[3] = { 0, 0, 1 };
		float ref[H];
		ref_reduce(ref, cc, neg, 3, H);
		assert_memory_equal(v.body, ref, sizeof(ref));
		assert_int_equal(v.fingerprint, XXH3_64bits(ref, sizeof(ref)));
	}
	assert_int_equal(put(&t.s, &n73, 23, &r), FG_O_LATE);

	/* 8/2 reopens by a new attempt of line 5; the e0 reference stays
	 * stale (the generation moved), the new one completes the line */
	struct fg_slot_ref new_ref;
	assert_int_equal(fg_slot_begin(&t.s, &h85, 24, &new_ref, &r), 0);
	assert_int_equal(r.outcome, FG_O_PARTIAL);
	assert_int_equal(r.landed, 0);
	assert_int_equal(fg_slot_place(&t.s, &old_ref, 0, y, sizeof(y), 24, &r), 0);
	assert_int_equal(r.outcome, FG_O_STALE);
	assert_int_equal(fg_slot_place(&t.s, &new_ref, 0, c, sizeof(c), 25, &r), 0);
	assert_int_equal(r.outcome, FG_O_ACCEPTED);
	assert_int_equal(r.landed, 1u << 5);

	/* ledger: every slot opened is open, resolved, expired, flushed or
	 * was poisoned while open (10/2 here) */
	assert_int_equal(t.s.opened, t.s.in_use + t.s.resolved + t.s.expired + t.s.flushed + 1);
	assert_int_equal(t.s.opened, 6);
	assert_int_equal(t.s.in_use, 1);
	assert_int_equal(t.s.resolved, 2);
	assert_int_equal(t.s.poisoned, 1);
	table_free(&t);
}

/* ---- pins --------------------------------------------------------------- */

/* The pin tests' table: PIN_CAP slots of PIN_H floats, lines 1 and 3 for
 * the layer, and three random bodies a, b, x. */
enum { PIN_H = 16, PIN_CAP = 4 };
static void pin_table(struct table *t, struct fg_slots_cfg *cfg, uint8_t tag, float *a, float *b, float *x)
{
	static const uint8_t lines[2] = { 1, 3 };
	for (unsigned i = 0; i < PIN_H; i++) {
		a[i] = rand_normal();
		b[i] = rand_normal();
		x[i] = rand_normal();
	}
	cfg_default(cfg, PIN_CAP, PIN_H, 1, 1, lines, 2);
	table_new(t, cfg, tag);
}

/* A pinned resolved slot (its body read in place, by reference) is neither
 * reclaimed by another key nor written while any pin stays; the key's own
 * late contribution is answered as usual; the last unpin lets the next key
 * reclaim it. Pins are taken on RESOLVED slots only. */
static void test_pin_holds_resolved_slot(void **state)
{
	enum { H = PIN_H, CAP = PIN_CAP };
	struct fg_slots_cfg cfg;
	struct table t;
	float a[H], b[H], x[H], body[H];
	struct fg_slot_result r;
	struct fg_seed_view v;
	(void)state;

	pin_table(&t, &cfg, 0x5A, a, b, x);
	struct fg_seed k0a = mkseed(0, 0, 1, 0, 0, 1, a, sizeof(a));
	struct fg_seed k0b = mkseed(0, 0, 3, 0, 0, 1, b, sizeof(b));
	/* not resolved yet: FREE and OPEN slots take no pin */
	assert_int_equal(fg_slot_pin(&t.s, 0), -ENOENT);
	assert_int_equal(put(&t.s, &k0a, 1, &r), FG_O_ACCEPTED);
	assert_int_equal(fg_slot_pin(&t.s, r.slot), -ENOENT);
	assert_int_equal(put(&t.s, &k0b, 2, &r), FG_O_RESOLVED);
	uint32_t slot = r.slot;
	assert_int_equal(fg_slot_pin(&t.s, CAP), -ENOENT);
	assert_false(fg_slot_is_pinned(&t.s, slot));
	assert_int_equal(fg_slot_pin(&t.s, slot), 0);
	assert_int_equal(fg_slot_pin(&t.s, slot), 0); /* a count: two holders */
	assert_true(fg_slot_is_pinned(&t.s, slot));
	assert_int_equal(fg_slot_seed(&t.s, slot, &v), 0);
	memcpy(body, v.body, sizeof(body));
	const uint8_t *at = v.body;
	uint64_t reclaimed = t.s.reclaimed, opened = t.s.opened;

	/* key CAP maps to the same index: refused while pinned, by put and by
	 * begin alike, and nothing of the slot changes */
	struct fg_seed k4 = mkseed(CAP, 0, 1, 0, 0, 1, x, sizeof(x));
	assert_int_equal(put(&t.s, &k4, 3, &r), FG_O_NO_SLOT);
	assert_int_equal(r.slot, UINT32_MAX);
	begin_refused_as_put(&t.s, k4, 3, FG_O_NO_SLOT);
	/* the key's own duplicate is late, as without a pin */
	assert_int_equal(put(&t.s, &k0b, 4, &r), FG_O_LATE);
	fg_slot_unpin(&t.s, slot); /* one holder left */
	assert_int_equal(put(&t.s, &k4, 5, &r), FG_O_NO_SLOT);
	assert_int_equal(t.s.reclaimed, reclaimed);
	assert_int_equal(t.s.opened, opened);
	assert_int_equal(fg_slot_seed(&t.s, slot, &v), 0);
	assert_ptr_equal(v.body, at);
	assert_memory_equal(v.body, body, sizeof(body));

	/* the last unpin: the next key reclaims the index */
	fg_slot_unpin(&t.s, slot);
	assert_false(fg_slot_is_pinned(&t.s, slot));
	fg_slot_unpin(&t.s, slot); /* none held: no-op */
	assert_int_equal(put(&t.s, &k4, 6, &r), FG_O_ACCEPTED);
	assert_int_equal(r.slot, slot);
	assert_int_equal(t.s.reclaimed, reclaimed + 1);
	assert_int_equal(fg_slot_seed(&t.s, slot, &v), -ENOENT);
	table_free(&t);
}

/* A pin outlasts a flush (model epoch change) and a conflict that poisons
 * the pinned slot: the body stays as it was and no other key takes the
 * index until the unpin; a slot the flush freed is open to any key and
 * takes no pin. */
static void test_pin_through_flush_and_poison(void **state)
{
	enum { H = PIN_H, CAP = PIN_CAP };
	struct fg_slots_cfg cfg;
	struct table t;
	float a[H], b[H], x[H], body[H];
	struct fg_slot_result r;
	struct fg_seed_view v;
	(void)state;

	pin_table(&t, &cfg, 0x33, a, b, x);
	struct fg_seed k0a = mkseed(0, 0, 1, 0, 0, 1, a, sizeof(a));
	struct fg_seed k0b = mkseed(0, 0, 3, 0, 0, 1, b, sizeof(b));
	struct fg_seed k1a = mkseed(1, 0, 1, 0, 0, 1, a, sizeof(a));
	assert_int_equal(put(&t.s, &k0a, 1, &r), FG_O_ACCEPTED);
	assert_int_equal(put(&t.s, &k0b, 2, &r), FG_O_RESOLVED);
	uint32_t slot = r.slot;
	assert_int_equal(put(&t.s, &k1a, 3, &r), FG_O_ACCEPTED);
	uint32_t open_slot = r.slot;
	assert_int_equal(fg_slot_pin(&t.s, slot), 0);
	assert_int_equal(fg_slot_seed(&t.s, slot, &v), 0);
	memcpy(body, v.body, sizeof(body));
	const uint8_t *at = v.body;

	t.s.epoch++;
	assert_int_equal(fg_slots_flush(&t.s), 1); /* key 1's open slot only */
	/* the flushed slot: free, no pin, open to another key */
	assert_int_equal(fg_slot_pin(&t.s, open_slot), -ENOENT);
	struct fg_seed k5 = mkseed(1 + CAP, 0, 1, 0, 0, 1, x, sizeof(x));
	assert_int_equal(put(&t.s, &k5, 4, &r), FG_O_ACCEPTED);
	assert_int_equal(r.slot, open_slot);
	/* the pinned one: still resolved, still refusing another key */
	struct fg_seed k4 = mkseed(CAP, 0, 1, 0, 0, 1, x, sizeof(x));
	assert_int_equal(put(&t.s, &k4, 5, &r), FG_O_NO_SLOT);
	/* a conflict poisons it; the pin holds, the body is unchanged */
	struct fg_seed k0x = mkseed(0, 0, 3, 0, 0, 1, x, sizeof(x));
	assert_int_equal(put(&t.s, &k0x, 6, &r), FG_O_CONFLICT);
	assert_int_equal(r.state, FG_SLOT_POISONED);
	assert_true(fg_slot_is_pinned(&t.s, slot));
	assert_int_equal(fg_slot_pin(&t.s, slot), -ENOENT); /* poisoned: no new pin */
	assert_int_equal(put(&t.s, &k4, 7, &r), FG_O_NO_SLOT);
	assert_memory_equal(at, body, sizeof(body));
	uint64_t reclaimed = t.s.reclaimed;
	fg_slot_unpin(&t.s, slot);
	assert_int_equal(put(&t.s, &k4, 8, &r), FG_O_ACCEPTED);
	assert_int_equal(r.slot, slot);
	assert_int_equal(t.s.reclaimed, reclaimed + 1);
	table_free(&t);
}

/* ---- reuse, capacity, shape, lines ------------------------------------- */

static void test_reuse_no_stale_data(void **state)
{
	enum { H = 256, CAP = 4, LAYERS = 2 };
	const uint8_t lines[3] = { 1, 3, 5 };
	struct fg_slots_cfg cfg;
	struct table t;
	float *x[3], *y[3], ref[H];
	struct fg_slot_result r;
	struct fg_seed_view v;
	const uint8_t neg[3] = { 0, 1, 0 };
	(void)state;

	cfg_default(&cfg, CAP, H, 1, LAYERS, lines, 3);
	table_new(&t, &cfg, 0xA5); /* garbage everywhere before init */
	for (unsigned k = 0; k < 3; k++) {
		x[k] = malloc(H * 4);
		y[k] = malloc(H * 4);
		for (unsigned i = 0; i < H; i++) {
			x[k][i] = rand_normal();
			y[k][i] = rand_normal();
		}
	}
	/* key A resolves, then key B maps onto the same index
	 * ((tok * LAYERS + layer) % CAP equal): A's slot is reclaimed */
	uint32_t ta = 10, tb = 10 + CAP / LAYERS;
	for (unsigned k = 0; k < 3; k++) {
		struct fg_seed sd = mkseed(ta, 1, lines[k], neg[k], 0, 1, x[k], H * 4);
		(void)put(&t.s, &sd, 0, &r);
	}
	assert_int_equal(r.outcome, FG_O_RESOLVED);
	uint32_t slot_a = r.slot;
	/* B: line 5 lands first by fragments, partially, then a different
	 * attempt completes; lines 1 and 3 whole. No byte of A may leak. */
	struct fg_seed h = mkseed(tb, 1, 5, neg[2], 0, 1, NULL, H * 4);
	struct fg_slot_ref rf;
	assert_int_equal(fg_slot_begin(&t.s, &h, 1, &rf, &r), 0);
	assert_int_equal(r.slot, slot_a);
	assert_int_equal(t.s.reclaimed, 1);
	assert_int_equal(fg_slot_lookup(&t.s, ta, 1, &(struct fg_slot_info){ 0 }), -ENOENT);
	assert_int_equal(fg_slot_place(&t.s, &rf, 0, y[2], H * 2, 1, &r), 0);
	assert_int_equal(fg_slot_place(&t.s, &rf, H * 2, (uint8_t *)y[2] + H * 2, H * 2, 1, &r), 0);
	assert_int_equal(r.outcome, FG_O_ACCEPTED);
	for (unsigned k = 0; k < 2; k++) {
		struct fg_seed sd = mkseed(tb, 1, lines[k], neg[k], 0, 1, y[k], H * 4);
		(void)put(&t.s, &sd, 2, &r);
	}
	assert_int_equal(r.outcome, FG_O_RESOLVED);
	ref_reduce(ref, (const float *const *)y, neg, 3, H);
	assert_int_equal(fg_slot_seed(&t.s, r.slot, &v), 0);
	assert_int_equal(v.token_seq, tb);
	assert_memory_equal(v.body, ref, sizeof(ref));
	/* an old fragment ref of A's generation is stale in B's slot */
	struct fg_slot_ref old = rf;
	old.gen--;
	assert_int_equal(fg_slot_place(&t.s, &old, 0, y[0], 4, 3, &r), 0);
	assert_int_equal(r.outcome, FG_O_STALE);
	for (unsigned k = 0; k < 3; k++) {
		free(x[k]);
		free(y[k]);
	}
	table_free(&t);
}

static void test_capacity_exhaustion(void **state)
{
	enum { H = 16, CAP = 4, LAYERS = 1 };
	const uint8_t lines[2] = { 1, 3 };
	struct fg_slots_cfg cfg;
	struct table t;
	float a[CAP][H], b[CAP][H], ref[H], intruder[H];
	struct fg_slot_result r;
	struct fg_seed_view v;
	const uint8_t neg[2] = { 0, 0 };
	(void)state;

	for (unsigned k = 0; k < CAP; k++)
		for (unsigned i = 0; i < H; i++) {
			a[k][i] = rand_normal();
			b[k][i] = rand_normal();
		}
	for (unsigned i = 0; i < H; i++)
		intruder[i] = 1e30f;
	cfg_default(&cfg, CAP, H, 1, LAYERS, lines, 2);
	table_new(&t, &cfg, 0x77);
	for (unsigned k = 0; k < CAP; k++) {
		struct fg_seed sd = mkseed(k, 0, 1, 0, 0, 1, a[k], sizeof(a[k]));
		assert_int_equal(put(&t.s, &sd, 0, &r), FG_O_ACCEPTED);
	}
	assert_int_equal(t.s.in_use, CAP);
	/* every further key collides with a live open slot */
	for (unsigned k = CAP; k < 3 * CAP; k++) {
		struct fg_seed sd = mkseed(k, 0, 3, 0, 0, 1, intruder, sizeof(intruder));
		assert_int_equal(put(&t.s, &sd, 1, &r), FG_O_NO_SLOT);
		assert_int_equal(r.slot, UINT32_MAX);
		begin_refused_as_put(&t.s, sd, 1, FG_O_NO_SLOT);
	}
	assert_int_equal(t.s.in_use, CAP);
	assert_int_equal(t.s.opened, CAP);
	/* nothing corrupted: every slot still resolves to its own reference */
	for (unsigned k = 0; k < CAP; k++) {
		struct fg_seed sd = mkseed(k, 0, 3, 0, 0, 1, b[k], sizeof(b[k]));
		assert_int_equal(put(&t.s, &sd, 2, &r), FG_O_RESOLVED);
		const float *c[2] = { a[k], b[k] };
		ref_reduce(ref, c, neg, 2, H);
		assert_int_equal(fg_slot_seed(&t.s, r.slot, &v), 0);
		assert_memory_equal(v.body, ref, sizeof(ref));
	}
	/* and now the colliding keys find room */
	struct fg_seed sd = mkseed(CAP, 0, 3, 0, 0, 1, intruder, sizeof(intruder));
	assert_int_equal(put(&t.s, &sd, 3, &r), FG_O_ACCEPTED);
	table_free(&t);
}

/* fg_slot_begin_decoded (a caller that decoded the seed under limits
 * that fit the table) answers every refusal the slot engine makes as
 * fg_slot_begin does; what it does not check again, the codec refuses
 * under those limits (each of fg_slot_begin's malformed cases), and
 * limits that do not fit the table are told apart. */
static void test_begin_decoded_as_begin(void **state)
{
	enum { H = 4 };
	const uint8_t lines[3] = { 1, 3, 5 };
	struct fg_slots_cfg cfg;
	struct table t1, t2;
	float a[2 * H] = { 1, 2, 3, 4, 5, 6, 7, 8 }, b[H] = { 9, 9, 9, 9 };
	struct fg_slot_expired ex[4];
	(void)state;

	cfg_default(&cfg, 8, H, 2, 4, lines, 3);
	table_new(&t1, &cfg, 0);
	table_new(&t2, &cfg, 0x5A);
	struct fg_seed_limits lim = { .hidden = H, .max_seq_len = 2 };
	assert_true(fg_slots_fit_limits(&t1.s, &lim));
	lim.max_seq_len = 1; /* a stricter codec: fits */
	assert_true(fg_slots_fit_limits(&t1.s, &lim));
	lim.max_seq_len = 3;
	assert_false(fg_slots_fit_limits(&t1.s, &lim));
	lim = (struct fg_seed_limits){ .hidden = 2 * H, .max_seq_len = 1 };
	assert_false(fg_slots_fit_limits(&t1.s, &lim));
	lim = (struct fg_seed_limits){ .hidden = H, .max_seq_len = 2 };

	/* the engine's refusals, state by state; index (tok * 4 + layer) % 8 */
	begin_both(&t1.s, &t2.s, mkseed(1, 4, 1, 0, 7, 1, a, H * 4), 0, FG_O_MALFORMED); /* layer */
	begin_both(&t1.s, &t2.s, mkseed(1, 0, 0, 0, 7, 1, a, H * 4), 0, FG_O_UNEXPECTED_LINE);
	struct fg_seed s1 = mkseed(1, 0, 1, 0, 7, 1, a, H * 4);
	put_both(&t1.s, &t2.s, &s1, 0, FG_O_ACCEPTED);
	begin_both(&t1.s, &t2.s, s1, 1, FG_O_DUP_PENDING);
	begin_both(&t1.s, &t2.s, mkseed(1, 0, 3, 0, 7, 2, a, 2 * H * 4), 1, FG_O_SHAPE_MISMATCH);
	begin_both(&t1.s, &t2.s, mkseed(1, 0, 3, 0, 8, 1, a, H * 4), 1, FG_O_SHAPE_MISMATCH);
	begin_both(&t1.s, &t2.s, mkseed(3, 0, 1, 0, 7, 1, a, H * 4), 1, FG_O_NO_SLOT); /* 12 % 8 == 4 */
	struct fg_seed p1 = mkseed(1, 1, 1, 0, 0, 1, a, H * 4), p2 = mkseed(1, 1, 1, 0, 0, 1, b, H * 4);
	put_both(&t1.s, &t2.s, &p1, 1, FG_O_ACCEPTED);
	put_both(&t1.s, &t2.s, &p2, 1, FG_O_CONFLICT);
	begin_both(&t1.s, &t2.s, mkseed(1, 1, 3, 0, 0, 1, a, H * 4), 1, FG_O_POISONED);
	struct fg_seed t2s = mkseed(2, 0, 1, 0, 0, 1, a, H * 4); /* 8 % 8 == 0 */
	put_both(&t1.s, &t2.s, &t2s, 2, FG_O_ACCEPTED);
	/* an attempt: the same reference; then a second one supersedes it */
	begin_both(&t1.s, &t2.s, mkseed(1, 0, 3, 1, 7, 1, a, H * 4), 3, FG_O_PARTIAL);
	begin_both(&t1.s, &t2.s, mkseed(1, 0, 3, 0, 7, 1, a, H * 4), 3, FG_O_PARTIAL);
	assert_int_equal(fg_slots_expire(&t1.s, 5000, ex, 4), 2); /* the poisoned one is closed */
	assert_int_equal(fg_slots_expire(&t2.s, 5000, ex, 4), 2);
	begin_both(&t1.s, &t2.s, mkseed(2, 0, 3, 0, 0, 1, a, H * 4), 5000, FG_O_EXPIRED);
	assert_int_equal(t1.s.opened, t2.s.opened);
	assert_int_equal(t1.s.in_use, t2.s.in_use);

	/* what fg_slot_begin refuses as malformed and fg_slot_begin_decoded
	 * does not look at, the codec refuses under limits that fit */
	struct {
		uint8_t flags;
		uint32_t seq_len, body_len;
		int reason;
	} bad[] = {
		{ 7u << 4, 1, H * 4, FG_R_SEED_LINE },
		{ 1u << 4 | 2u, 1, H * 4, FG_R_SEED_ORIENTATION },
		{ 1u << 4, 0, 0, FG_R_SEED_EMPTY },
		{ 1u << 4, 3, 3 * H * 4, FG_R_SEED_TOO_LARGE },
		{ 1u << 4, 1, H * 4 - 4, FG_R_SEED_BODY_ROWS },
		{ 1u << 4, 2, H * 4, FG_R_SEED_BODY_LENGTH },
	};
	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct fg_hdr h = { .stream_id = 0, .sequence = 9, .flags = bad[k].flags,
				    .length = FG_SEED_PREFIX_LEN + bad[k].body_len };
		uint8_t prefix[FG_SEED_PREFIX_LEN] = { 0 };
		memcpy(prefix + 4, &bad[k].seq_len, 4); /* little-endian hosts */
		struct fg_seed sd;
		assert_int_equal(fg_seed_decode_prefix(&h, prefix, sizeof(prefix), 0, &lim, &sd), -bad[k].reason);
		struct fg_seed raw = mkseed(9, 0, bad[k].flags >> 4, bad[k].flags & 15u, 0, bad[k].seq_len, NULL,
					    bad[k].body_len);
		begin_answered(&t1.s, raw, 5000, FG_O_MALFORMED);
	}
	table_free(&t1);
	table_free(&t2);
}

static void test_shape_and_line_refusals(void **state)
{
	enum { H = 4 };
	const uint8_t lines[3] = { 1, 3, 5 };
	struct fg_slots_cfg cfg;
	struct table t;
	float a[2 * H] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct fg_slot_result r;
	struct fg_slot_info info;
	(void)state;

	cfg_default(&cfg, 8, H, 2, 4, lines, 3);
	table_new(&t, &cfg, 0);
	/* unexpected line: no slot is opened */
	struct fg_seed u = mkseed(1, 0, 0, 0, 0, 1, a, H * 4);
	assert_int_equal(put(&t.s, &u, 0, &r), FG_O_UNEXPECTED_LINE);
	assert_int_equal(r.slot, UINT32_MAX);
	assert_int_equal(r.expected, (1u << 1) | (1u << 3) | (1u << 5));
	begin_refused_as_put(&t.s, u, 0, FG_O_UNEXPECTED_LINE);
	assert_int_equal(fg_slot_lookup(&t.s, 1, 0, &info), -ENOENT);
	assert_int_equal(t.s.opened, 0);
	/* shape mismatch: seq_len and start_pos must agree */
	struct fg_seed s1 = mkseed(1, 0, 1, 0, 7, 1, a, H * 4);
	assert_int_equal(put(&t.s, &s1, 0, &r), FG_O_ACCEPTED);
	struct fg_seed s3 = mkseed(1, 0, 3, 0, 7, 2, a, 2 * H * 4);
	assert_int_equal(put(&t.s, &s3, 0, &r), FG_O_SHAPE_MISMATCH);
	assert_int_equal(r.landed, 1u << 1);
	s3 = mkseed(1, 0, 3, 0, 8, 1, a, H * 4);
	assert_int_equal(put(&t.s, &s3, 0, &r), FG_O_SHAPE_MISMATCH);
	begin_answered(&t.s, s3, 0, FG_O_SHAPE_MISMATCH);
	begin_refused_as_put(&t.s, s3, 0, FG_O_SHAPE_MISMATCH);
	/* malformed: what the codec should have refused never touches a slot */
	struct fg_seed m = mkseed(1, 0, 3, 0, 7, 1, a, H * 4 - 4);
	assert_int_equal(put(&t.s, &m, 0, &r), FG_O_MALFORMED);
	begin_refused_as_put(&t.s, m, 0, FG_O_MALFORMED);
	m = mkseed(1, 4, 3, 0, 7, 1, a, H * 4); /* layer out of range */
	assert_int_equal(put(&t.s, &m, 0, &r), FG_O_MALFORMED);
	begin_refused_as_put(&t.s, m, 0, FG_O_MALFORMED);
	m = mkseed(1, 0, 7, 0, 7, 1, a, H * 4);
	assert_int_equal(put(&t.s, &m, 0, &r), FG_O_MALFORMED);
	m = mkseed(1, 0, 3, 2, 7, 1, a, H * 4);
	assert_int_equal(put(&t.s, &m, 0, &r), FG_O_MALFORMED);
	m = mkseed(1, 0, 3, 0, 7, 3, a, 3 * H * 4); /* above max_seq_len */
	assert_int_equal(put(&t.s, &m, 0, &r), FG_O_MALFORMED);
	m = mkseed(1, 0, 3, 0, 7, 1, NULL, H * 4);
	assert_int_equal(put(&t.s, &m, 0, &r), FG_O_MALFORMED);
	/* the slot is intact and completes with matching shapes */
	s3 = mkseed(1, 0, 3, 0, 7, 1, a + H, H * 4);
	struct fg_seed s5 = mkseed(1, 0, 5, 1, 7, 1, a, H * 4);
	assert_int_equal(put(&t.s, &s3, 0, &r), FG_O_ACCEPTED);
	assert_int_equal(put(&t.s, &s5, 0, &r), FG_O_RESOLVED);
	struct fg_seed_view v;
	assert_int_equal(fg_slot_seed(&t.s, r.slot, &v), 0);
	assert_int_equal(v.start_pos, 7);
	assert_int_equal(v.seq_len, 1);
	const float want[H] = { 1 + 5 - 1, 2 + 6 - 2, 3 + 7 - 3, 4 + 8 - 4 };
	assert_memory_equal(v.body, want, sizeof(want));
	/* per-line fingerprints in lookup */
	assert_int_equal(fg_slot_lookup(&t.s, 1, 0, &info), 0);
	assert_int_equal(info.state, FG_SLOT_RESOLVED);
	assert_int_equal(info.line_fp[1], XXH3_64bits(a, H * 4));
	assert_int_equal(info.line_fp[3], XXH3_64bits(a + H, H * 4));
	assert_int_equal(info.line_fp[5], XXH3_64bits(a, H * 4));
	assert_int_equal(info.line_fp[0], 0);
	assert_int_equal(info.fingerprint, v.fingerprint);
	table_free(&t);
}

/* ---- random operations against a model ------------------------------------ */

/* A long random mix of puts, fragment attempts (begin/place/abort), expiry
 * sweeps and flushes over few keys (so indices collide) and few bodies (so
 * duplicates and conflicts happen), with unexpected lines and wrong shapes
 * thrown in. The model records which body and sign each line holds since
 * the key's slot was last opened; every resolution is checked against the
 * scalar reference of exactly those bodies, and the table's accounting
 * against lookups of every key. */
enum { RM_H = 16, RM_KEYS = 24, RM_BODIES = 3, RM_REFS = 6, RM_CAP = 8, RM_LAYERS = 2 };

struct rm_key {
	int body[FG_LINES]; /* body id per line, -1 = not whole */
	uint8_t sign[FG_LINES];
};

struct rm_ref {
	bool live;
	struct fg_slot_ref ref;
	unsigned key, line, body;
	uint8_t sign;
	uint32_t next; /* next byte to place, in order */
};

static void rm_reset(struct rm_key *k)
{
	for (unsigned l = 0; l < FG_LINES; l++)
		k->body[l] = -1;
}

static void test_random_ops_against_model(void **state)
{
	const uint8_t lines[3] = { 1, 3, 5 };
	struct fg_slots_cfg cfg;
	struct table t;
	float pool[RM_BODIES][2 * RM_H];
	struct rm_key model[RM_KEYS];
	struct rm_ref refs[RM_REFS] = { 0 };
	uint64_t now = 0;
	unsigned resolutions = 0, conflicts = 0, duplicates = 0, no_slot = 0, stale = 0, frag_done = 0;
	(void)state;

	for (unsigned b = 0; b < RM_BODIES; b++)
		for (unsigned i = 0; i < 2 * RM_H; i++)
			pool[b][i] = rand_normal();
	for (unsigned k = 0; k < RM_KEYS; k++)
		rm_reset(&model[k]);
	cfg_default(&cfg, RM_CAP, RM_H, 2, RM_LAYERS, lines, 3);
	cfg.deadline_ns = 500;
	table_new(&t, &cfg, 0xA5);

	for (unsigned step = 0; step < 40000; step++) {
		unsigned op = (unsigned)(rng() % 16), key = (unsigned)(rng() % RM_KEYS);
		uint32_t tok = key / RM_LAYERS;
		uint16_t layer = (uint16_t)(key % RM_LAYERS);
		unsigned line = (rng() % 10) ? lines[rng() % 3] : (unsigned)(rng() % FG_LINES);
		unsigned body = (unsigned)(rng() % RM_BODIES);
		uint8_t sign = (uint8_t)(rng() % 4 == 0);
		uint32_t seq = (rng() % 20) ? 1 : 2;
		struct fg_seed sd = mkseed(tok, layer, (uint8_t)line, sign, 0, seq, pool[body], seq * RM_H * 4);
		struct fg_slot_result r;
		uint64_t opened = t.s.opened;

		now += rng() % 8;
		if (op < 7) {
			assert_int_equal(fg_slot_put(&t.s, &sd, now, &r), 0);
		} else if (op < 9) {
			/* start a fragment attempt in a free ref */
			unsigned i = (unsigned)(rng() % RM_REFS);
			struct fg_slot_ref ref;
			sd.body = NULL;
			assert_int_equal(fg_slot_begin(&t.s, &sd, now, &ref, &r), 0);
			if (r.outcome == FG_O_PARTIAL) {
				refs[i] = (struct rm_ref){ .live = true, .ref = ref, .key = key, .line = line,
							   .body = body, .sign = sign, .next = 0 };
				/* a new attempt: the line is no longer whole in the model */
				if (t.s.opened != opened)
					rm_reset(&model[key]);
				model[key].body[line] = -1;
			}
		} else if (op < 14) {
			/* place the next chunk of a live attempt */
			unsigned i = (unsigned)(rng() % RM_REFS);
			struct rm_ref *f = &refs[i];
			if (!f->live)
				continue;
			uint32_t len = 1 + (uint32_t)(rng() % 40);
			if (len > f->ref.body_len - f->next)
				len = f->ref.body_len - f->next;
			assert_int_equal(fg_slot_place(&t.s, &f->ref, f->next, (const uint8_t *)pool[f->body] + f->next,
						       len, now, &r), 0);
			if (r.outcome != FG_O_PARTIAL)
				f->live = false;
			f->next += len;
			if (r.outcome == FG_O_STALE)
				stale++;
			if (r.outcome == FG_O_ACCEPTED || r.outcome == FG_O_RESOLVED) {
				model[f->key].body[f->line] = (int)f->body;
				model[f->key].sign[f->line] = f->sign;
				frag_done++;
				key = f->key; /* for the resolution check below */
			}
		} else if (op == 14) {
			unsigned i = (unsigned)(rng() % RM_REFS);
			if (refs[i].live && rng() % 2) {
				fg_slot_abort(&t.s, &refs[i].ref);
				refs[i].live = false;
			}
			struct fg_slot_expired ex[4];
			int n = fg_slots_expire(&t.s, now, ex, 4);
			assert_true(n >= 0 && n <= 4);
			if (rng() % 200 == 0)
				(void)fg_slots_flush(&t.s);
			continue;
		} else {
			/* garbage references never write anything */
			struct fg_slot_ref bad = { .slot = RM_CAP + (uint32_t)(rng() % 5), .body_len = 4 };
			assert_int_equal(fg_slot_place(&t.s, &bad, 0, pool[0], 4, now, &r), -EINVAL);
			bad.slot = (uint32_t)(rng() % RM_CAP);
			bad.gen = 0xFFFFFFF0u;
			assert_int_equal(fg_slot_place(&t.s, &bad, 0, pool[0], 4, now, &r), 0);
			assert_int_equal(r.outcome, FG_O_STALE);
			continue;
		}
		assert_true((unsigned)r.outcome < FG_O__COUNT);
		if (op < 7) {
			if (t.s.opened != opened)
				rm_reset(&model[key]);
			if (r.outcome == FG_O_ACCEPTED || r.outcome == FG_O_RESOLVED) {
				model[key].body[line] = (int)body;
				model[key].sign[line] = sign;
			}
			conflicts += r.outcome == FG_O_CONFLICT;
			duplicates += r.outcome == FG_O_DUPLICATE || r.outcome == FG_O_LATE;
			no_slot += r.outcome == FG_O_NO_SLOT;
			if (r.outcome == FG_O_DUPLICATE || r.outcome == FG_O_LATE) {
				assert_int_equal(model[key].body[line], (int)body);
				assert_int_equal(model[key].sign[line], sign);
			}
			if (r.outcome == FG_O_CONFLICT)
				assert_true(model[key].body[line] != (int)body || model[key].sign[line] != sign);
		}
		if (r.outcome == FG_O_RESOLVED) {
			struct fg_seed_view v;
			const float *c[3];
			uint8_t neg[3];
			float ref[RM_H * 2];
			uint32_t tk = key / RM_LAYERS;
			assert_int_equal(fg_slot_seed(&t.s, r.slot, &v), 0);
			assert_int_equal(v.token_seq, tk);
			for (unsigned p = 0; p < 3; p++) {
				assert_true(model[key].body[lines[p]] >= 0);
				c[p] = pool[model[key].body[lines[p]]];
				neg[p] = model[key].sign[lines[p]];
			}
			ref_reduce(ref, c, neg, 3, v.body_len / 4);
			assert_memory_equal(v.body, ref, v.body_len);
			assert_int_equal(v.fingerprint, XXH3_64bits(ref, v.body_len));
			resolutions++;
		}
		/* accounting: in_use equals the keys whose slot is OPEN */
		if (step % 64 == 0) {
			uint32_t open = 0;
			for (unsigned k = 0; k < RM_KEYS; k++) {
				struct fg_slot_info info;
				if (fg_slot_lookup(&t.s, k / RM_LAYERS, (uint16_t)(k % RM_LAYERS), &info) == 0 &&
				    info.state == FG_SLOT_OPEN)
					open++;
			}
			assert_int_equal(open, t.s.in_use);
			assert_true(t.s.in_use <= RM_CAP);
		}
	}
	print_message("random ops: %u resolutions, %u conflicts, %u duplicates/late, %u no_slot, %u stale, "
		      "%u fragment lines\n", resolutions, conflicts, duplicates, no_slot, stale, frag_done);
	assert_true(resolutions > 100 && conflicts > 100 && duplicates > 100 && no_slot > 10 && stale > 10 &&
		    frag_done > 100);
	table_free(&t);
}

/* ---- configuration, names ---------------------------------------------- */

static void test_init_and_rules(void **state)
{
	struct fg_slots_cfg cfg;
	struct fg_slots s;
	struct fg_rule rule;
	const uint8_t ok[3] = { 5, 1, 3 }, dup[2] = { 1, 1 }, bad[1] = { 7 };
	void *mem;
	(void)state;

	assert_int_equal(fg_rule_make(&rule, ok, 3), 0);
	assert_int_equal(rule.n, 3);
	assert_int_equal(rule.order[0], 5);
	assert_int_equal(rule.mask, (1u << 1) | (1u << 3) | (1u << 5));
	assert_memory_equal(rule.pos, ((const uint8_t[FG_LINES]){ FG_LINES, 1, FG_LINES, 2, FG_LINES, 0, FG_LINES }),
			    FG_LINES);
	assert_int_equal(fg_rule_make(&rule, dup, 2), -EINVAL);
	assert_int_equal(fg_rule_make(&rule, bad, 1), -EINVAL);
	assert_int_equal(fg_rule_make(&rule, ok, 0), -EINVAL);
	assert_int_equal(fg_rule_make(&rule, ok, 8), -EINVAL);

	cfg_default(&cfg, 4, 8, 1, 2, ok, 3);
	size_t len = fg_slots_mem_size(&cfg);
	assert_true(len >= 4 * (64 + 4 * 32));
	assert_int_equal(len % 64, 0);
	mem = aligned_alloc(64, len + 64);
	assert_int_equal(fg_slots_init(&s, mem, len - 1, &cfg), -ENOSPC);
	assert_int_equal(fg_slots_init(&s, (uint8_t *)mem + 8, len, &cfg), -EINVAL);
	struct fg_slots_cfg b = cfg;
	b.capacity = 0;
	assert_int_equal(fg_slots_mem_size(&b), 0);
	assert_int_equal(fg_slots_init(&s, mem, len, &b), -EINVAL);
	b = cfg;
	b.hidden = 0;
	assert_int_equal(fg_slots_init(&s, mem, len, &b), -EINVAL);
	b = cfg;
	b.n_layers = FG_MAX_LAYERS + 1;
	assert_int_equal(fg_slots_init(&s, mem, len, &b), -EINVAL);
	b = cfg;
	b.rules[1].mask = 0; /* inconsistent rule */
	assert_int_equal(fg_slots_init(&s, mem, len, &b), -EINVAL);
	b = cfg;
	b.rules[1].pos[3] = 0; /* a position that is not the line's */
	assert_int_equal(fg_slots_init(&s, mem, len, &b), -EINVAL);
	b = cfg;
	b.rules[1].pos[0] = 1; /* a position for a line not expected */
	assert_int_equal(fg_slots_init(&s, mem, len, &b), -EINVAL);
	b = cfg;
	b.hidden = 1u << 22; /* body larger than a frame can carry */
	assert_int_equal(fg_slots_mem_size(&b), 0);
	assert_int_equal(fg_slots_init(&s, mem, len, &cfg), 0);
	assert_int_equal(s.max_lines, 3);
	free(mem);
}

/* Each layer's own rule places a line at its position in that rule's
 * order (the table filled at init, never a search): fragment attempts and
 * whole bodies land at the position, resolution reads them in the rule's
 * order, and the layers keep apart. */
static void test_rule_positions_per_layer(void **state)
{
	const uint8_t r0[3] = { 5, 1, 3 }, r1[2] = { 3, 0 }, r2[7] = { 6, 5, 4, 3, 2, 1, 0 };
	const uint8_t *rules[3] = { r0, r1, r2 };
	const unsigned nr[3] = { 3, 2, 7 };
	struct fg_slots_cfg cfg;
	struct table t;
	(void)state;

	cfg_default(&cfg, 16, 4, 1, 3, r0, 3);
	assert_int_equal(fg_rule_make(&cfg.rules[1], r1, 2), 0);
	assert_int_equal(fg_rule_make(&cfg.rules[2], r2, 7), 0);
	table_new(&t, &cfg, 0xA5);
	for (uint16_t l = 0; l < 3; l++) {
		for (unsigned line = 0; line < FG_LINES; line++) {
			unsigned want = FG_LINES;
			for (unsigned p = 0; p < nr[l]; p++)
				if (rules[l][p] == line)
					want = p;
			assert_int_equal(t.s.cfg.rules[l].pos[line], want);
		}
	}
	/* the body of line order[p] is the p-th term of the reduction:
	 * distinct magnitudes make any other order round differently */
	const float term[FG_LINES] = { 1e8f, 3.0f, -1e8f, 0.5f, 7.25f, 1.0f, -2.0f };
	for (uint16_t l = 0; l < 3; l++) {
		float bodies[FG_LINES][4];
		const float *c[FG_LINES];
		uint8_t neg[FG_LINES] = { 0 };
		for (unsigned p = 0; p < nr[l]; p++) {
			unsigned line = rules[l][p];
			for (unsigned k = 0; k < 4; k++)
				bodies[p][k] = term[(p + k) % FG_LINES] * (float)(line + 1);
			neg[p] = (uint8_t)(line & 1);
			c[p] = bodies[p];
			struct fg_seed sd = mkseed(40, l, (uint8_t)line, neg[p], 0, 1, bodies[p], sizeof(bodies[p]));
			if (p % 2 == 0) { /* a fragment attempt, then the bytes */
				struct fg_slot_ref rf;
				struct fg_slot_result r;
				struct fg_seed h = sd;
				h.body = NULL;
				assert_int_equal(fg_slot_begin(&t.s, &h, 1, &rf, &r), 0);
				assert_int_equal(r.outcome, FG_O_PARTIAL);
				assert_int_equal(rf.pos, p);
				assert_int_equal(fg_slot_place(&t.s, &rf, 0, bodies[p], sizeof(bodies[p]), 1, &r), 0);
				assert_int_equal(r.outcome, p + 1 == nr[l] ? FG_O_RESOLVED : FG_O_ACCEPTED);
			} else {
				assert_int_equal(put(&t.s, &sd, 1, NULL), p + 1 == nr[l] ? FG_O_RESOLVED : FG_O_ACCEPTED);
			}
		}
		float want[4];
		ref_reduce(want, c, neg, nr[l], 4);
		struct fg_slot_info info;
		assert_int_equal(fg_slot_lookup(&t.s, 40, l, &info), 0);
		assert_int_equal(info.state, FG_SLOT_RESOLVED);
		uint32_t slot = UINT32_MAX;
		for (uint32_t i = 0; i < cfg.capacity; i++) {
			struct fg_seed_view v;
			if (fg_slot_seed(&t.s, i, &v) == 0 && v.token_seq == 40 && v.dst_layer == l)
				slot = i;
		}
		assert_true(slot != UINT32_MAX);
		struct fg_seed_view v;
		assert_int_equal(fg_slot_seed(&t.s, slot, &v), 0);
		assert_memory_equal(v.body, want, sizeof(want));
		/* a line its rule does not expect is refused, by this layer's rule */
		for (unsigned line = 0; line < FG_LINES; line++) {
			if (t.s.cfg.rules[l].pos[line] != FG_LINES)
				continue;
			struct fg_seed sd = mkseed(41, l, (uint8_t)line, 0, 0, 1, bodies[0], sizeof(bodies[0]));
			assert_int_equal(put(&t.s, &sd, 1, NULL), FG_O_UNEXPECTED_LINE);
			begin_answered(&t.s, sd, 1, FG_O_UNEXPECTED_LINE);
		}
	}
	table_free(&t);
}

static void test_names(void **state)
{
	(void)state;
	for (int o = 0; o < FG_O__COUNT; o++) {
		const char *n = fg_outcome_name((enum fg_outcome)o);
		assert_non_null(n);
		assert_string_not_equal(n, "unknown");
		for (int p = 0; p < o; p++)
			assert_string_not_equal(n, fg_outcome_name((enum fg_outcome)p));
	}
	assert_string_equal(fg_outcome_name(FG_O_DUP_PENDING), "duplicate_pending");
	assert_string_equal(fg_outcome_name(FG_O_NO_SLOT), "no_slot");
	assert_string_equal(fg_outcome_name(FG_O__COUNT), "unknown");
	assert_string_equal(fg_slot_state_name(FG_SLOT_FREE), "free");
	assert_string_equal(fg_slot_state_name(FG_SLOT_OPEN), "open");
	assert_string_equal(fg_slot_state_name(FG_SLOT_RESOLVED), "resolved");
	assert_string_equal(fg_slot_state_name(FG_SLOT_EXPIRED), "expired");
	assert_string_equal(fg_slot_state_name((enum fg_slot_state)9), "unknown");
}

/* fg_slot_whole writes the result fg_slot_place writes for the chunk
 * that makes a line whole, every field, whatever the record held before
 * (ACCEPTED, then RESOLVED with the fingerprint); the two tables end with
 * the same seed and the same counts. */
static void test_whole_result_as_place(void **state)
{
	enum { H = 8 };
	const uint8_t lines[3] = { 4, 1, 6 };
	struct fg_slots_cfg cfg;
	struct table t1, t2;
	float body[3][H];
	const uint32_t bl = sizeof(body[0]);
	struct fg_seed_view v1, v2;
	uint32_t slot = 0;
	(void)state;

	for (unsigned l = 0; l < 3; l++)
		for (unsigned i = 0; i < H; i++)
			body[l][i] = rand_special();
	cfg_default(&cfg, 4, H, 1, 2, lines, 3);
	table_new(&t1, &cfg, 0);
	table_new(&t2, &cfg, 0x33);
	t1.s.epoch = t2.s.epoch = 5;
	for (unsigned l = 0; l < 3; l++) {
		struct fg_seed sd = mkseed(21, 1, lines[l], l & 1, 4, 1, NULL, bl);
		struct fg_slot_ref a, b;
		struct fg_slot_result ra, rb;
		assert_int_equal(fg_slot_begin(&t1.s, &sd, l, &a, &ra), 0);
		assert_int_equal(fg_slot_begin(&t2.s, &sd, l, &b, &rb), 0);
		assert_int_equal(fg_slot_place(&t1.s, &a, 0, body[l], bl, l, &ra), 0);
		memcpy(b.buf, body[l], bl);
		memset(&rb, 0xA5, sizeof(rb));
		enum fg_outcome want = l == 2 ? FG_O_RESOLVED : FG_O_ACCEPTED;
		assert_int_equal(ra.outcome, want);
		assert_int_equal(fg_slot_whole(&t2.s, &b, &rb), want);
		assert_result_eq(&rb, &ra);
		assert_int_equal(fg_slot_whole(&t2.s, &b, &rb), FG_O_STALE); /* the attempt is over */
		slot = ra.slot;
	}
	assert_int_equal(fg_slot_seed(&t1.s, slot, &v1), 0);
	assert_int_equal(fg_slot_seed(&t2.s, slot, &v2), 0);
	assert_int_equal(v1.fingerprint, v2.fingerprint);
	assert_memory_equal(v1.body, v2.body, bl);
	struct fg_slot_info i1, i2;
	assert_int_equal(fg_slot_lookup(&t1.s, 21, 1, &i1), 0);
	assert_int_equal(fg_slot_lookup(&t2.s, 21, 1, &i2), 0);
	assert_int_equal(i1.state, FG_SLOT_RESOLVED);
	assert_int_equal(i2.state, FG_SLOT_RESOLVED);
	assert_int_equal(i1.fingerprint, i2.fingerprint);
	assert_memory_equal(i1.line_fp, i2.line_fp, sizeof(i1.line_fp));
	assert_int_equal(t1.s.resolved, 1);
	assert_int_equal(t2.s.resolved, 1);
	assert_int_equal(t1.s.in_use, 0);
	assert_int_equal(t2.s.in_use, 0);
	table_free(&t1);
	table_free(&t2);
}

/* The caller's own placement (fg_slot_ref_live, ref->buf, fg_slot_whole):
 * a reference is live from its begin until anything ends its attempt (a
 * newer begin, a whole put, an abort, expiry, a conflict, a flush, the
 * slot resolving), and never again, not even when the index is reopened
 * for another key; fg_slot_whole of a live attempt completes the line
 * bit for bit, of a dead one names the outcome and changes nothing. */
static void test_caller_placement_liveness(void **state)
{
	enum { H = 32 };
	const uint8_t lines[2] = { 2, 0 };
	struct fg_slots_cfg cfg;
	struct table t;
	float a[H], b[H], ref[H];
	uint32_t body_len = sizeof(a);
	struct fg_slot_ref r1, r2, r3;
	struct fg_slot_result r;
	struct fg_slot_expired ex[4];
	struct fg_seed_view v;
	(void)state;

	for (unsigned i = 0; i < H; i++) {
		a[i] = rand_special();
		b[i] = rand_special();
	}
	cfg_default(&cfg, 1, H, 1, 1, lines, 2);
	cfg.deadline_ns = 1000;
	table_new(&t, &cfg, 0x5A);
	struct fg_seed h2 = mkseed(7, 0, 2, 1, 0, 1, NULL, body_len);
	struct fg_seed h0 = mkseed(7, 0, 0, 0, 0, 1, NULL, body_len);
	/* superseded by a newer begin: dead; the new one lands in two halves */
	assert_int_equal(fg_slot_begin(&t.s, &h2, 0, &r1, &r), 0);
	assert_true(fg_slot_ref_live(&r1));
	memcpy(r1.buf, b, body_len / 2);
	assert_int_equal(fg_slot_begin(&t.s, &h2, 1, &r2, &r), 0);
	assert_false(fg_slot_ref_live(&r1));
	assert_true(fg_slot_ref_live(&r2));
	assert_int_equal(fg_slot_whole(&t.s, &r1, &r), FG_O_STALE);
	assert_int_equal(t.s.resolved, 0);
	memcpy(r2.buf + body_len / 2, (uint8_t *)a + body_len / 2, body_len / 2);
	memcpy(r2.buf, a, body_len / 2);
	assert_int_equal(fg_slot_whole(&t.s, &r2, &r), FG_O_ACCEPTED);
	assert_int_equal(r.landed, 1u << 2);
	assert_int_equal(r.bytes, body_len);
	assert_false(fg_slot_ref_live(&r2)); /* the line is whole: no attempt left */
	/* the other line, placed by the caller, resolves bit for bit */
	assert_int_equal(fg_slot_begin(&t.s, &h0, 2, &r3, &r), 0);
	memcpy(r3.buf, b, body_len);
	assert_int_equal(fg_slot_whole(&t.s, &r3, &r), FG_O_RESOLVED);
	assert_false(fg_slot_ref_live(&r3));
	assert_int_equal(fg_slot_whole(&t.s, &r3, &r), FG_O_STALE);
	assert_int_equal(t.s.resolved, 1);
	const float *c[2] = { a, b };
	const uint8_t neg[2] = { 1, 0 };
	ref_reduce(ref, c, neg, 2, H);
	assert_int_equal(fg_slot_seed(&t.s, 0, &v), 0);
	assert_memory_equal(v.body, ref, body_len);
	/* another key reclaims the index: no earlier reference lives again */
	struct fg_seed k8 = mkseed(8, 0, 2, 0, 0, 1, NULL, body_len);
	assert_int_equal(fg_slot_begin(&t.s, &k8, 3, &r1, &r), 0);
	assert_true(fg_slot_ref_live(&r1));
	assert_false(fg_slot_ref_live(&r2));
	assert_false(fg_slot_ref_live(&r3));
	/* expiry ends the attempt; fg_slot_whole names it */
	assert_int_equal(fg_slots_expire(&t.s, 1003, ex, 4), 1);
	assert_false(fg_slot_ref_live(&r1));
	assert_int_equal(fg_slot_whole(&t.s, &r1, &r), FG_O_EXPIRED);
	assert_int_equal(t.s.resolved, 1);
	/* a whole put of the line ends the attempt */
	struct fg_seed k9 = mkseed(9, 0, 2, 0, 0, 1, NULL, body_len);
	assert_int_equal(fg_slot_begin(&t.s, &k9, 2000, &r1, &r), 0);
	struct fg_seed w9 = mkseed(9, 0, 2, 0, 0, 1, a, body_len);
	assert_int_equal(put(&t.s, &w9, 2001, &r), FG_O_ACCEPTED);
	assert_false(fg_slot_ref_live(&r1));
	assert_int_equal(fg_slot_whole(&t.s, &r1, &r), FG_O_STALE);
	/* a conflict poisons the slot: the other line's attempt is dead */
	assert_int_equal(fg_slot_begin(&t.s, &(struct fg_seed){ .token_seq = 9, .line = 0, .seq_len = 1,
					 .body_len = body_len }, 2002, &r2, &r), 0);
	assert_true(fg_slot_ref_live(&r2));
	struct fg_seed c9 = mkseed(9, 0, 2, 0, 0, 1, b, body_len);
	assert_int_equal(put(&t.s, &c9, 2003, &r), FG_O_CONFLICT);
	assert_false(fg_slot_ref_live(&r2));
	assert_int_equal(fg_slot_whole(&t.s, &r2, &r), FG_O_POISONED);
	/* abort and flush end attempts too */
	struct fg_seed k10 = mkseed(10, 0, 0, 0, 0, 1, NULL, body_len);
	assert_int_equal(fg_slot_begin(&t.s, &k10, 3000, &r1, &r), 0);
	fg_slot_abort(&t.s, &r1);
	assert_false(fg_slot_ref_live(&r1));
	assert_int_equal(fg_slot_begin(&t.s, &k10, 3001, &r1, &r), 0);
	assert_true(fg_slot_ref_live(&r1));
	assert_int_equal(fg_slots_flush(&t.s), 1);
	assert_false(fg_slot_ref_live(&r1));
	assert_int_equal(fg_slot_whole(&t.s, &r1, &r), FG_O_STALE);
	assert_int_equal(t.s.resolved, 1);
	table_free(&t);
}

/* fg_reduce_to: the result buffer bit for bit fg_reduce's, and the second
 * destination the result's bytes exactly, nothing written around it:
 * every rule length, random lengths (short ones and several blocks),
 * ordinary and special values, the destination at random 4-byte aligned
 * places. */
static void test_reduce_to(void **state)
{
	enum { MAXF = 5000, GUARD = 64 };
	float *c[FG_LINES], *out1 = malloc(MAXF * 4), *out2 = malloc(MAXF * 4);
	uint8_t neg[FG_LINES];
	uint8_t *dst = malloc((size_t)MAXF * 4 + 3 * GUARD);
	(void)state;

	assert_non_null(out1);
	assert_non_null(out2);
	assert_non_null(dst);
	for (unsigned k = 0; k < FG_LINES; k++) {
		c[k] = malloc(MAXF * 4);
		assert_non_null(c[k]);
	}
	static const unsigned ns[] = { 1, 2, 3, 7, 4, 5, 6 };
	for (unsigned round = 0; round < 700; round++) {
		unsigned n = ns[round % 7];
		size_t nf = 1 + (size_t)(rng() % (round % 3 ? MAXF : 200));
		size_t at = GUARD + 4 * (rng() % (GUARD / 4));
		for (unsigned k = 0; k < n; k++) {
			neg[k] = (uint8_t)(rng() & 1);
			for (size_t i = 0; i < nf; i++)
				c[k][i] = round % 2 ? rand_normal() : rand_special();
		}
		memset(dst, 0xEE, (size_t)MAXF * 4 + 3 * GUARD);
		fg_reduce(out1, (const float *const *)c, neg, n, nf);
		fg_reduce_to(out2, (float *)(void *)(dst + at), (const float *const *)c, neg, n, nf);
		for (size_t i = 0; i < nf; i++)
			if (f_bits(out1[i]) != f_bits(out2[i]) && !two_nans_met((const float *const *)c, neg, n, i))
				fail_msg("round %u n %u len %zu i %zu: %08x != fg_reduce's %08x", round, n, nf, i,
					 f_bits(out2[i]), f_bits(out1[i]));
		if (memcmp(dst + at, out2, nf * 4) != 0)
			fail_msg("round %u n %u len %zu: the destination differs from the result", round, n, nf);
		for (size_t g = 0; g < at; g++)
			if (dst[g] != 0xEE)
				fail_msg("round %u: byte %zu before the destination written", round, g);
		for (size_t g = at + nf * 4; g < (size_t)MAXF * 4 + 3 * GUARD; g++)
			if (dst[g] != 0xEE)
				fail_msg("round %u: byte %zu after the destination written", round, g);
	}
	for (unsigned k = 0; k < FG_LINES; k++)
		free(c[k]);
	free(out1);
	free(out2);
	free(dst);
}

/* A sink of test_whole_to_lane: the buffer it gives, and how often it was
 * asked. */
struct lane_sink {
	uint8_t *dst;
	unsigned asked;
};
static void *lane_sink(void *arg, uint32_t slot, uint32_t body_len)
{
	struct lane_sink *k = arg;
	(void)slot;
	(void)body_len;
	k->asked++;
	return k->dst;
}

/* fg_slot_whole_sink with a buffer: the sink is asked once, by the last
 * line only; the buffer is written when the slot resolves, with exactly
 * the body fg_slot_seed serves (and that fg_slot_whole makes in a twin
 * table), and not touched by a line that does not resolve it. Rules of 1,
 * 2, 3 and 7 lines, the buffer float-aligned (stored by the reduction) and
 * not (copied after it). Ordinary values: where two NaNs meet only
 * NaN-ness is promised (fg_reduce), and the twin table's fingerprint would
 * then say nothing. */
static void test_whole_to_lane(void **state)
{
	enum { H = 100, SEQ = 3 };
	static const uint8_t rules[4][8] = { { 1, 5 }, { 2, 3, 1 }, { 3, 1, 3, 5 }, { 7, 0, 1, 2, 3, 4, 5, 6 } };
	(void)state;

	for (unsigned v = 0; v < 8; v++) {
		unsigned ri = v % 4, skew = v < 4 ? 4 : 1;
		unsigned n = rules[ri][0];
		const uint8_t *lines = &rules[ri][1];
		struct fg_slots_cfg cfg;
		struct table t1, t2;
		uint32_t bl = H * SEQ * 4;
		float body[FG_LINES][H * SEQ];
		_Alignas(16) uint8_t lane[H * SEQ * 4 + 8];
		cfg_default(&cfg, 4, H, SEQ, 2, lines, n);
		table_new(&t1, &cfg, 0);
		table_new(&t2, &cfg, 0x11);
		for (unsigned l = 0; l < n; l++)
			for (unsigned i = 0; i < H * SEQ; i++)
				body[l][i] = rand_normal();
		memset(lane, 0xEE, sizeof(lane));
		struct lane_sink k = {.dst = lane + skew};
		uint32_t slot = UINT32_MAX;
		for (unsigned l = 0; l < n; l++) {
			struct fg_seed sd = mkseed(40 + v, 1, lines[l], (uint8_t)(l & 1), 0, SEQ, NULL, bl);
			struct fg_slot_ref a, b;
			struct fg_slot_result ra, rb;
			assert_int_equal(fg_slot_begin(&t1.s, &sd, l, &a, &ra), 0);
			assert_int_equal(fg_slot_begin(&t2.s, &sd, l, &b, &rb), 0);
			memcpy(a.buf, body[l], bl);
			memcpy(b.buf, body[l], bl);
			bool last = l + 1 == n;
			enum fg_outcome o1 = fg_slot_whole_sink(&t1.s, &a, &ra, lane_sink, &k);
			enum fg_outcome o2 = fg_slot_whole(&t2.s, &b, &rb);
			assert_int_equal(o1, last ? FG_O_RESOLVED : FG_O_ACCEPTED);
			assert_int_equal(k.asked, last ? 1u : 0u);
			assert_int_equal(o1, o2);
			assert_result_eq(&ra, &rb);
			if (!last)
				for (size_t i = 0; i < sizeof(lane); i++)
					assert_int_equal(lane[i], 0xEE);
			slot = ra.slot;
		}
		struct fg_seed_view v1, v2;
		assert_int_equal(fg_slot_seed(&t1.s, slot, &v1), 0);
		assert_int_equal(fg_slot_seed(&t2.s, slot, &v2), 0);
		assert_int_equal(v1.fingerprint, v2.fingerprint);
		assert_memory_equal(v1.body, v2.body, bl);
		assert_memory_equal(lane + skew, v1.body, bl);
		for (size_t i = 0; i < skew; i++)
			assert_int_equal(lane[i], 0xEE);
		for (size_t i = skew + bl; i < sizeof(lane); i++)
			assert_int_equal(lane[i], 0xEE);
		table_free(&t1);
		table_free(&t2);
	}
}

/* fg_slot_whole_sink asks its sink for a buffer only when the line
 * resolves the slot: never for a line that leaves it open (ACCEPTED), for
 * a reference no longer live (STALE) or for an expired slot; once, with
 * the slot's index and body length, for the last line, whose resolved body
 * (as fg_slot_whole makes it in a twin table) then lands in the buffer. */
struct sink_probe {
	unsigned calls;
	uint32_t slot, body_len;
	uint8_t *dst;
};

static void *probe_sink(void *arg, uint32_t slot, uint32_t body_len)
{
	struct sink_probe *p = arg;
	p->calls++;
	p->slot = slot;
	p->body_len = body_len;
	return p->dst;
}

static void test_whole_sink(void **state)
{
	enum { H = 64, SEQ = 2 };
	static const uint8_t lines[3] = { 3, 1, 5 };
	uint32_t bl = H * SEQ * 4;
	struct fg_slots_cfg cfg;
	struct table t1, t2;
	float body[3][H * SEQ];
	_Alignas(16) uint8_t dst[H * SEQ * 4 + 32];
	struct sink_probe p = { .dst = dst };
	(void)state;

	cfg_default(&cfg, 4, H, SEQ, 1, lines, 3);
	table_new(&t1, &cfg, 0);
	table_new(&t2, &cfg, 0x22);
	memset(dst, 0xEE, sizeof(dst));
	for (unsigned l = 0; l < 3; l++)
		for (unsigned i = 0; i < H * SEQ; i++)
			body[l][i] = rand_normal();
	struct fg_slot_ref a, b;
	struct fg_slot_result ra, rb;
	uint32_t slot = UINT32_MAX;
	for (unsigned l = 0; l < 3; l++) {
		struct fg_seed sd = mkseed(7, 0, lines[l], (uint8_t)(l == 1), 0, SEQ, NULL, bl);
		assert_int_equal(fg_slot_begin(&t1.s, &sd, l, &a, &ra), 0);
		assert_int_equal(fg_slot_begin(&t2.s, &sd, l, &b, &rb), 0);
		memcpy(a.buf, body[l], bl);
		memcpy(b.buf, body[l], bl);
		enum fg_outcome o1 = fg_slot_whole_sink(&t1.s, &a, &ra, probe_sink, &p);
		assert_int_equal(o1, fg_slot_whole(&t2.s, &b, &rb));
		assert_result_eq(&ra, &rb);
		assert_int_equal(o1, l == 2 ? FG_O_RESOLVED : FG_O_ACCEPTED);
		assert_int_equal(p.calls, l == 2 ? 1u : 0u);
		/* the attempt is over: STALE, and no sink asked */
		assert_int_equal(fg_slot_whole_sink(&t1.s, &a, &ra, probe_sink, &p), FG_O_STALE);
		assert_int_equal(p.calls, l == 2 ? 1u : 0u);
		slot = rb.slot;
	}
	assert_int_equal(p.slot, slot);
	assert_int_equal(p.body_len, bl);
	struct fg_seed_view v1, v2;
	assert_int_equal(fg_slot_seed(&t1.s, slot, &v1), 0);
	assert_int_equal(fg_slot_seed(&t2.s, slot, &v2), 0);
	assert_int_equal(v1.fingerprint, v2.fingerprint);
	assert_memory_equal(v1.body, v2.body, bl);
	assert_memory_equal(dst, v2.body, bl);
	for (size_t i = bl; i < sizeof(dst); i++)
		assert_int_equal(dst[i], 0xEE);

	/* an expired slot: EXPIRED, and no sink asked */
	struct fg_slot_expired ex[2];
	struct fg_seed sd = mkseed(8, 0, lines[0], 0, 0, SEQ, NULL, bl);
	assert_int_equal(fg_slot_begin(&t1.s, &sd, 10, &a, &ra), 0);
	memcpy(a.buf, body[0], bl);
	assert_int_equal(fg_slots_expire(&t1.s, 10 + cfg.deadline_ns, ex, 2), 1);
	assert_int_equal(fg_slot_whole_sink(&t1.s, &a, &ra, probe_sink, &p), FG_O_EXPIRED);
	assert_int_equal(p.calls, 1u);
	table_free(&t1);
	table_free(&t2);
}

/* Two references the same in every field. */
static void assert_ref_eq(const struct fg_slot_ref *b, const struct fg_slot_ref *a)
{
	assert_int_equal(b->slot, a->slot);
	assert_int_equal(b->gen, a->gen);
	assert_int_equal(b->attempt, a->attempt);
	assert_int_equal(b->pos, a->pos);
	assert_int_equal(b->line, a->line);
	assert_int_equal(b->body_len, a->body_len);
}

/* The inline fast paths (slot_inline.h, what the dataplane's placement
 * runs) do what the functions they stand for do: one random history on
 * two tables, t1 driven by fg_slot_begin_decoded and fg_slot_whole_sink,
 * t2 by fg_slot_begin_fast and fg_slot_whole_fast, with fresh and joined
 * keys, reclaimed indices (capacity 4 for 12 keys of 2 layers), held
 * ones (NO_SLOT), pins, unexpected lines, shape mismatches, duplicates
 * (DUP_PENDING), superseded and aborted attempts, whole puts, conflicts,
 * expiry and flushes. Every outcome, result, reference, counter, sink
 * call and resolved body agrees; each fast case is seen. */
struct fast_att {
	bool live;
	struct fg_slot_ref r1, r2;
	uint8_t body[2 * 4 * 4];
	uint32_t len;
};

static void test_fast_paths_as_functions(void **state)
{
	enum { H = 4, SEQ = 2, CAP = 4, N_ATT = 8 };
	static const uint8_t lines[3] = { 5, 1, 3 };
	struct fg_slots_cfg cfg;
	struct table t1, t2;
	struct fast_att at[N_ATT];
	_Alignas(16) uint8_t d1[SEQ * H * 4], d2[SEQ * H * 4];
	struct sink_probe p1 = { .dst = d1 }, p2 = { .dst = d2 };
	unsigned joins = 0, opens = 0, reclaims = 0, accepted = 0, resolved = 0, slow = 0;
	(void)state;

	cfg_default(&cfg, CAP, H, SEQ, 2, lines, 3);
	table_new(&t1, &cfg, 0);
	table_new(&t2, &cfg, 0x3C);
	memset(at, 0, sizeof(at));
	uint64_t now = 1;
	for (unsigned step = 0; step < 60000; step++) {
		uint64_t r = rng();
		unsigned op = (unsigned)(r % 16);
		r >>= 4;
		if (op < 6) {
			/* begin: any line (unexpected ones too), a shape now and then off */
			uint8_t line = (r & 7) == 7 ? (uint8_t)((r >> 3) % FG_LINES) : lines[(r >> 3) % 3];
			uint32_t seq = (r >> 6) % 8 == 0 ? 1 : SEQ, start = (r >> 9) % 8 == 0 ? 1 : 0;
			/* mostly two keys, so that slots resolve; now and then others */
			uint32_t tok = (uint32_t)((r >> 12) % 4 ? (r >> 20) % 2 : (r >> 20) % 6);
			struct fg_seed sd = mkseed(tok, (uint16_t)((r >> 15) & 1), line,
						   (uint8_t)((r >> 16) & 1), start, seq, NULL, seq * H * 4);
			struct fast_att *a = &at[(r >> 17) % N_ATT];
			struct fg_slot_info info;
			bool held = fg_slot_lookup(&t2.s, sd.token_seq, sd.dst_layer, &info) == 0;
			uint64_t reclaimed = t2.s.reclaimed;
			struct fg_slot_result ra, rb;
			struct fg_slot_ref x1, x2;
			memset(&rb, 0xA5, sizeof(rb));
			enum fg_outcome o1 = fg_slot_begin_decoded(&t1.s, &sd, now, &x1, &ra);
			enum fg_outcome o2 = fg_slot_begin_fast(&t2.s, &sd, now, &x2, &rb);
			assert_int_equal(o1, o2);
			if (o1 != FG_O_PARTIAL) {
				assert_result_eq(&rb, &ra);
				slow++;
				continue;
			}
			assert_ref_eq(&x2, &x1);
			assert_true(fg_slot_ref_live(&x1) && fg_slot_ref_live(&x2));
			assert_int_equal(x2.line, line);
			if (held)
				joins++;
			else if (t2.s.reclaimed != reclaimed)
				reclaims++;
			else
				opens++;
			*a = (struct fast_att){ .live = true, .r1 = x1, .r2 = x2, .len = sd.body_len };
			for (uint32_t i = 0; i < a->len; i++)
				a->body[i] = (uint8_t)rng();
		} else if (op < 10) {
			/* the line whole: its bytes copied while live */
			struct fast_att *a = &at[r % N_ATT];
			if (!a->live)
				continue;
			a->live = false;
			bool live = fg_slot_ref_live(&a->r2);
			assert_int_equal(live, fg_slot_ref_live(&a->r1));
			if (live) {
				memcpy(a->r1.buf, a->body, a->len);
				memcpy(a->r2.buf, a->body, a->len);
			}
			struct fg_slot_result ra, rb;
			unsigned c1 = p1.calls;
			enum fg_outcome o1 = fg_slot_whole_sink(&t1.s, &a->r1, &ra, probe_sink, &p1);
			enum fg_outcome o2 = fg_slot_whole_fast(&t2.s, &a->r2, &rb, probe_sink, &p2);
			assert_int_equal(o1, o2);
			assert_result_eq(&rb, &ra);
			assert_int_equal(p1.calls, p2.calls);
			assert_false(fg_slot_ref_live(&a->r2));
			accepted += o1 == FG_O_ACCEPTED;
			if (o1 == FG_O_RESOLVED) {
				resolved++;
				assert_int_equal(p1.calls, c1 + 1);
				struct fg_seed_view v1, v2;
				assert_int_equal(fg_slot_seed(&t1.s, ra.slot, &v1), 0);
				assert_int_equal(fg_slot_seed(&t2.s, rb.slot, &v2), 0);
				assert_int_equal(v1.fingerprint, v2.fingerprint);
				assert_memory_equal(v1.body, v2.body, v1.body_len);
				assert_memory_equal(d1, d2, v1.body_len);
				/* a resolved seed is now and then held by a reader */
				if (r & 0x100) {
					assert_int_equal(fg_slot_pin(&t1.s, ra.slot), 0);
					assert_int_equal(fg_slot_pin(&t2.s, rb.slot), 0);
				}
			}
		} else if (op == 10) {
			struct fast_att *a = &at[r % N_ATT];
			if (a->live) {
				fg_slot_abort(&t1.s, &a->r1);
				fg_slot_abort(&t2.s, &a->r2);
				a->live = false;
			}
		} else if (op == 11) {
			/* a whole put: a line, a duplicate or a conflict */
			float b[SEQ * H];
			for (unsigned i = 0; i < SEQ * H; i++)
				b[i] = (float)((r >> 8) % 3);
			struct fg_seed sd = mkseed((uint32_t)(r % 6), (uint16_t)((r >> 3) & 1), lines[(r >> 4) % 3], 0, 0,
						   SEQ, b, sizeof(b));
			struct fg_slot_result ra, rb;
			assert_int_equal(fg_slot_put(&t1.s, &sd, now, &ra), 0);
			assert_int_equal(fg_slot_put(&t2.s, &sd, now, &rb), 0);
			assert_result_eq(&rb, &ra);
		} else if (op == 12) {
			uint32_t slot = (uint32_t)(r % CAP);
			fg_slot_unpin(&t1.s, slot);
			fg_slot_unpin(&t2.s, slot);
		} else if (op == 13 && (r & 0xF) == 0) {
			assert_int_equal(fg_slots_flush(&t1.s), fg_slots_flush(&t2.s));
		} else {
			struct fg_slot_expired e1[CAP], e2[CAP];
			now += r % 32;
			int n1 = fg_slots_expire(&t1.s, now, e1, CAP), n2 = fg_slots_expire(&t2.s, now, e2, CAP);
			assert_int_equal(n1, n2);
			assert_memory_equal(e1, e2, (size_t)n1 * sizeof(e1[0]));
		}
		assert_int_equal(t1.s.opened, t2.s.opened);
		assert_int_equal(t1.s.in_use, t2.s.in_use);
		assert_int_equal(t1.s.resolved, t2.s.resolved);
		assert_int_equal(t1.s.reclaimed, t2.s.reclaimed);
		assert_int_equal(t1.s.abandoned, t2.s.abandoned);
		assert_int_equal(t1.s.expired, t2.s.expired);
		assert_int_equal(t1.s.poisoned, t2.s.poisoned);
		assert_int_equal(t1.s.fifo_head, t2.s.fifo_head);
		assert_int_equal(t1.s.fifo_tail, t2.s.fifo_tail);
	}
	/* each fast case taken, and the slow ones too */
	assert_true(joins > 100 && opens > 100 && reclaims > 100 && accepted > 100 && resolved > 100 && slow > 100);
	table_free(&t1);
	table_free(&t2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vector_r01),
		cmocka_unit_test(test_vector_r02),
		cmocka_unit_test(test_reduce_matches_scalar),
		cmocka_unit_test(test_reduce_every_kernel),
		cmocka_unit_test(test_reduce_order_is_canonical),
		cmocka_unit_test(test_pair_x_every_order),
		cmocka_unit_test(test_fragments_random_order_with_dupes),
		cmocka_unit_test(test_fragments_superseded_and_abort),
		cmocka_unit_test(test_put_supersedes_fragments),
		cmocka_unit_test(test_pin_holds_resolved_slot),
		cmocka_unit_test(test_pin_through_flush_and_poison),
		cmocka_unit_test(test_caller_placement_liveness),
		cmocka_unit_test(test_duplicate_and_conflict),
		cmocka_unit_test(test_expiry_fake_clock),
		cmocka_unit_test(test_flush_reopens_in_new_epoch),
		cmocka_unit_test(test_reuse_no_stale_data),
		cmocka_unit_test(test_capacity_exhaustion),
		cmocka_unit_test(test_shape_and_line_refusals),
		cmocka_unit_test(test_begin_decoded_as_begin),
		cmocka_unit_test(test_whole_result_as_place),
		cmocka_unit_test(test_reduce_to),
		cmocka_unit_test(test_whole_to_lane),
		cmocka_unit_test(test_whole_sink),
		cmocka_unit_test(test_fast_paths_as_functions),
		cmocka_unit_test(test_random_ops_against_model),
		cmocka_unit_test(test_init_and_rules),
		cmocka_unit_test(test_rule_positions_per_layer),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

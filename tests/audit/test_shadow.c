/* test_shadow.c - shadow comparisons (core/shadow.c) and their glue
 * (control/audit/cp_shadow.c): residual figures (ULP across zero, NaN,
 * signed zero, infinities), verdicts in both arrival orders, digest and full
 * reports, shape mismatch, expiry, sampling, promotion after the window and
 * demotion on divergence through fg_lines with a fake clock, alerts with
 * their environment, and fail-closed on an injected fdatasync error. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cp_shadow.h"
#include "fg/shadow.h"
#include "fg/wire.h"
#include "../lib/fg_test_file.h" /* fg_test_tmpdir, fg_test_rmtree */
#include "../lib/fg_test_shadow.h" /* fg_test_shadow_new, fg_test_lines_all */

#define HIDDEN 64u
#define SEC 1000000000ull

static uint32_t fbits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static void put_f(uint8_t *b, size_t i, uint32_t bits) { fg_put_le32(b + 4 * i, bits); }

static void test_ulp_and_diff(void **state)
{
	(void)state;
	assert_int_equal(fg_f32_ulp_distance(fbits(1.0f), fbits(1.0f)), 0);
	assert_int_equal(fg_f32_ulp_distance(fbits(1.0f), fbits(1.0f) + 1), 1);
	/* across zero: smallest subnormals of both signs are 2 apart */
	assert_int_equal(fg_f32_ulp_distance(0x00000001u, 0x80000001u), 2);
	assert_int_equal(fg_f32_ulp_distance(0x00000000u, 0x80000000u), 0);
	/* -1 to +1 = twice the distance from 0 to 1 */
	assert_int_equal(fg_f32_ulp_distance(fbits(-1.0f), fbits(1.0f)), 2ull * fbits(1.0f));
	/* the largest finite is one step below infinity */
	assert_int_equal(fg_f32_ulp_distance(0x7F7FFFFFu, 0x7F800000u), 1);

	uint8_t a[4 * 8], b[4 * 8];
	for (size_t i = 0; i < 8; i++) {
		put_f(a, i, fbits((float)i + 0.5f));
		put_f(b, i, fbits((float)i + 0.5f));
	}
	struct fg_diff d;
	fg_residual_diff(a, b, sizeof(a), &d);
	assert_int_equal(d.n_elems, 8);
	assert_int_equal(d.count, 0);
	assert_int_equal(d.first_index, UINT32_MAX);
	assert_true(d.max_abs == 0.0);
	assert_int_equal(d.max_ulp, 0);

	put_f(b, 2, fbits(2.5f) + 3);   /* 3 ulp */
	put_f(b, 4, 0x7FC00000u);       /* NaN vs 4.5: counted, excluded from max */
	put_f(a, 5, 0x00000000u);       /* +0 vs -0 */
	put_f(b, 5, 0x80000000u);
	put_f(b, 7, fbits(-7.5f));      /* sign change: |7.5 - -7.5| = 15 */
	fg_residual_diff(a, b, sizeof(a), &d);
	assert_int_equal(d.count, 4);
	assert_int_equal(d.nan_count, 1);
	assert_int_equal(d.first_index, 2);
	assert_true(d.max_abs == 15.0);
	assert_int_equal(d.max_ulp, 2ull * fbits(7.5f));

	/* equal NaN bits are equal; infinity vs finite is an infinite difference */
	memcpy(b, a, sizeof(a));
	put_f(a, 0, 0x7FC00001u);
	put_f(b, 0, 0x7FC00001u);
	put_f(b, 1, 0x7F800000u);
	fg_residual_diff(a, b, sizeof(a), &d);
	assert_int_equal(d.count, 1);
	assert_int_equal(d.nan_count, 0);
	assert_true(d.max_abs > 1e300);
}

/* ---- the pure table ------------------------------------------------------------ */

struct fix {
	struct fg_shadow sh;
	void *mem;
	struct fg_lines lines;
	uint8_t body[HIDDEN * 4];
	uint8_t other[HIDDEN * 4];
};

static struct fix *fix_new(double sample, enum fg_line_state st)
{
	struct fix *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	struct fg_shadow_cfg cfg = { .capacity = 64, .body_max = HIDDEN * 4, .n_layers = 28,
				     .expiry_ns = 5 * SEC, .sample = sample };
	f->mem = fg_test_shadow_new(&f->sh, &cfg);
	struct fg_line_policy pol = { .auto_promote = true, .promote_count = 3, .promote_ns = 10 * SEC };
	fg_test_lines_all(&f->lines, st, &pol);
	for (size_t i = 0; i < HIDDEN; i++)
		put_f(f->body, i, fbits((float)i * 0.25f - 3.0f));
	memcpy(f->other, f->body, sizeof(f->body));
	return f;
}

static void fix_free(struct fix *f)
{
	free(f->mem);
	free(f);
}

static struct fg_seed_view view(const uint8_t *body, uint32_t token, uint16_t layer)
{
	struct fg_seed_view v = { .token_seq = token, .dst_layer = layer, .start_pos = 0, .seq_len = 1,
				  .body = body, .body_len = HIDDEN * 4,
				  .fingerprint = fg_fingerprint(body, HIDDEN * 4), .lines = 0x2A };
	return v;
}

static struct fg_canon canon_full(const uint8_t *body, uint32_t token, uint16_t layer)
{
	struct fg_canon c = { .token_seq = token, .dst_layer = layer, .kind = FG_CANON_FULL, .start_pos = 0,
			      .seq_len = 1, .body = body, .body_len = HIDDEN * 4 };
	return c;
}

/* The canonical report c arrives first (held, at now), then the seed sv
 * (judged against it, at now + 1): *v is a verdict of kind want. */
static void report_then_seed(struct fix *f, const struct fg_canon *c, const struct fg_seed_view *sv, uint64_t now,
			     enum fg_verdict_kind want, struct fg_shadow_verdict *v)
{
	assert_int_equal(fg_shadow_canon(&f->sh, c, now, v), 0);
	assert_int_equal(fg_shadow_seed(&f->sh, sv, &f->lines, now + 1, v), 1);
	assert_int_equal(v->v.kind, want);
}

static void test_verdict_both_orders(void **state)
{
	(void)state;
	struct fix *f = fix_new(0.0, FG_LINE_SHADOW);
	struct fg_shadow_verdict v;
	/* seed first, identical full report */
	struct fg_seed_view sv = view(f->body, 10, 3);
	assert_int_equal(fg_shadow_seed(&f->sh, &sv, &f->lines, 0, &v), 0);
	assert_int_equal(f->sh.live, 1);
	struct fg_canon c = canon_full(f->body, 10, 3);
	assert_int_equal(fg_shadow_canon(&f->sh, &c, 1, &v), 1);
	assert_int_equal(v.v.kind, FG_VERDICT_CLEAN);
	assert_int_equal(v.v.token_seq, 10);
	assert_int_equal(v.v.dst_layer, 3);
	assert_int_equal(v.v.lines, 0x2A);
	assert_int_equal(v.shadow_lines, 0x2A);
	assert_true(v.v.has_diff);
	assert_int_equal(v.v.diff.count, 0);
	assert_int_equal(v.v.fp_jump, v.v.fp_canon);
	assert_int_equal(f->sh.live, 0);

	/* report first, differing body: divergent with figures */
	put_f(f->other, 7, fbits((float)7 * 0.25f - 3.0f) + 2);
	put_f(f->other, 9, fbits(-((float)9 * 0.25f - 3.0f)));
	c = canon_full(f->other, 11, 3);
	sv = view(f->body, 11, 3);
	report_then_seed(f, &c, &sv, 2, FG_VERDICT_DIVERGENT, &v);
	assert_int_not_equal(v.v.fp_jump, v.v.fp_canon);
	assert_int_equal(v.v.diff.count, 2);
	assert_int_equal(v.v.diff.first_index, 7);
	assert_int_equal(v.v.diff.max_ulp, 2ull * fbits(0.75f)); /* 9*0.25-3 = -0.75 vs +0.75 */
	assert_true(v.v.diff.max_abs == 1.5);

	/* digest report: fingerprints only */
	struct fg_canon d = { .token_seq = 12, .dst_layer = 4, .kind = FG_CANON_DIGEST, .seq_len = 1,
			      .digest = fg_fingerprint(f->body, sizeof(f->body)) };
	sv = view(f->body, 12, 4);
	report_then_seed(f, &d, &sv, 4, FG_VERDICT_CLEAN, &v);
	assert_false(v.v.has_diff);
	d.token_seq = 13;
	d.digest ^= 1;
	sv = view(f->body, 13, 4);
	report_then_seed(f, &d, &sv, 4, FG_VERDICT_DIVERGENT, &v);

	/* shape mismatch: same bytes, other start_pos */
	sv = view(f->body, 14, 4);
	assert_int_equal(fg_shadow_seed(&f->sh, &sv, &f->lines, 6, &v), 0);
	c = canon_full(f->body, 14, 4);
	c.start_pos = 1;
	assert_int_equal(fg_shadow_canon(&f->sh, &c, 7, &v), 1);
	assert_int_equal(v.v.kind, FG_VERDICT_DIVERGENT);
	assert_true(v.v.shape_mismatch);

	/* bad input is refused, not a crash */
	sv = view(f->body, 15, 4);
	sv.body_len = 3;
	assert_int_equal(fg_shadow_seed(&f->sh, &sv, &f->lines, 8, &v), -EINVAL);
	c.kind = 7;
	assert_int_equal(fg_shadow_canon(&f->sh, &c, 8, &v), -EINVAL);
	assert_int_equal(f->sh.clean, 2);
	assert_int_equal(f->sh.divergent, 3);
	fix_free(f);
}

/* A seed or FULL report whose body did not reach the control plane (the
 * lcore's dp2cp pool was empty, boundary.h): body NULL, body_len set. The
 * verdict rests on the fingerprint and the shape; no element diff. */
/* The lead (fg/lead.h): whichever half comes first, the verdict carries the
 * report's arrival minus the seed's resolution and delivery, and the
 * resolving contribution's ingress; an unmatched seed has none; without a
 * delivery only the resolution lead; a delivery stamped before the
 * resolution is read as the resolution (never a record the reader refuses). */
static void test_lead_both_orders(void **state)
{
	(void)state;
	struct fix *f = fix_new(0.0, FG_LINE_SHADOW);
	struct fg_shadow_verdict v;
	struct fg_seed_view sv = view(f->body, 1, 2);
	struct fg_canon c = canon_full(f->body, 1, 2);
	/* seed first: resolved at 1 ms, delivered at 1.5 ms; the report at 3 ms */
	struct fg_seed_times t = { .resolved_ns = 1000000, .delivered_ns = 1500000, .ingress = FG_AUDIT_INGRESS_UDP };
	assert_int_equal(fg_shadow_seed_at(&f->sh, &sv, &t, &f->lines, 1600000, &v), 0);
	assert_int_equal(fg_shadow_canon_at(&f->sh, &c, 0, 3000000, 3100000, &v), 1);
	assert_int_equal(v.v.kind, FG_VERDICT_CLEAN);
	assert_true(v.v.lead_ns == 2000000);
	assert_true(v.v.lead_deliver_ns == 1500000);
	assert_int_equal(v.v.ingress, FG_AUDIT_INGRESS_UDP);
	/* the report first (at 1 ms): the chain was first by 3 ms */
	sv = view(f->body, 2, 2);
	c = canon_full(f->body, 2, 2);
	assert_int_equal(fg_shadow_canon_at(&f->sh, &c, 0, 1000000, 1000000, &v), 0);
	t = (struct fg_seed_times){ .resolved_ns = 4000000, .delivered_ns = 4500000, .ingress = FG_AUDIT_INGRESS_TLS };
	assert_int_equal(fg_shadow_seed_at(&f->sh, &sv, &t, &f->lines, 4600000, &v), 1);
	assert_true(v.v.lead_ns == -3000000);
	assert_true(v.v.lead_deliver_ns == -3500000);
	assert_int_equal(v.v.ingress, FG_AUDIT_INGRESS_TLS);
	/* not delivered (no consumer): the resolution lead only */
	sv = view(f->body, 3, 2);
	c = canon_full(f->body, 3, 2);
	t = (struct fg_seed_times){ .resolved_ns = 5000000, .ingress = FG_AUDIT_INGRESS_UDP };
	assert_int_equal(fg_shadow_seed_at(&f->sh, &sv, &t, &f->lines, 5000000, &v), 0);
	assert_int_equal(fg_shadow_canon_at(&f->sh, &c, 0, 5000100, 5000100, &v), 1);
	assert_true(v.v.lead_ns == 100 && v.v.lead_deliver_ns == FG_LEAD_NONE);
	/* a delivery read before the resolution (two threads' clocks) */
	sv = view(f->body, 4, 2);
	c = canon_full(f->body, 4, 2);
	t = (struct fg_seed_times){ .resolved_ns = 6000000, .delivered_ns = 5999000, .ingress = FG_AUDIT_INGRESS_UDP };
	assert_int_equal(fg_shadow_seed_at(&f->sh, &sv, &t, &f->lines, 6000000, &v), 0);
	assert_int_equal(fg_shadow_canon_at(&f->sh, &c, 0, 7000000, 7000000, &v), 1);
	assert_true(v.v.lead_ns == 1000000 && v.v.lead_deliver_ns == 1000000);
	/* the old entry points: resolved / arrived when called */
	sv = view(f->body, 5, 2);
	c = canon_full(f->body, 5, 2);
	assert_int_equal(fg_shadow_seed(&f->sh, &sv, &f->lines, 8000000, &v), 0);
	assert_int_equal(fg_shadow_canon(&f->sh, &c, 8250000, &v), 1);
	assert_true(v.v.lead_ns == 250000 && v.v.lead_deliver_ns == FG_LEAD_NONE);
	assert_int_equal(v.v.ingress, FG_AUDIT_UNKNOWN);
	/* a seed that never meets its report: no lead */
	sv = view(f->body, 6, 2);
	assert_int_equal(fg_shadow_seed_at(&f->sh, &sv, &t, &f->lines, 9000000, &v), 0);
	struct fg_shadow_verdict out[4];
	assert_int_equal(fg_shadow_expire(&f->sh, 9000000 + 6 * SEC, out, 4), 1);
	assert_int_equal(out[0].v.kind, FG_VERDICT_UNMATCHED);
	assert_true(out[0].v.lead_ns == FG_LEAD_NONE && out[0].v.lead_deliver_ns == FG_LEAD_NONE);
	/* a clean verdict's lead lands in each of its lines' windows */
	struct fg_line_change chg[FG_LINES];
	struct fg_shadow_verdict cv = v;
	cv.v.kind = FG_VERDICT_CLEAN;
	cv.v.lead_ns = 2000000;
	assert_int_equal(fg_shadow_apply(&f->lines, &cv, 10 * SEC, chg), 0);
	for (unsigned l = 0; l < FG_LINES; l++)
		assert_int_equal(f->lines.line[l].lead.n, (0x2Au >> l) & 1u);
	fix_free(f);
}

static void test_halves_without_body(void **state)
{
	(void)state;
	struct fix *f = fix_new(0.0, FG_LINE_SHADOW);
	struct fg_shadow_verdict v;
	/* seed without body, then the full report: clean by fingerprint */
	struct fg_seed_view sv = view(f->body, 30, 3);
	sv.body = NULL;
	assert_int_equal(fg_shadow_seed(&f->sh, &sv, &f->lines, 0, &v), 0);
	struct fg_canon c = canon_full(f->body, 30, 3);
	assert_int_equal(fg_shadow_canon(&f->sh, &c, 1, &v), 1);
	assert_int_equal(v.v.kind, FG_VERDICT_CLEAN);
	assert_false(v.v.has_diff);
	/* the report first, the seed without body and another fingerprint */
	c = canon_full(f->body, 31, 3);
	sv = view(f->body, 31, 3);
	sv.body = NULL;
	sv.fingerprint ^= 1;
	report_then_seed(f, &c, &sv, 2, FG_VERDICT_DIVERGENT, &v);
	assert_false(v.v.has_diff);
	assert_false(v.v.shape_mismatch);
	/* the demotion's reason says what was compared: no element count */
	struct fg_line_change chg[FG_LINES];
	struct fg_lines act;
	struct fg_line_policy pol = { .auto_promote = true, .promote_count = 3, .promote_ns = 10 * SEC };
	fg_test_lines_all(&act, FG_LINE_ACTIVE, &pol);
	assert_true(fg_shadow_apply(&act, &v, 4, chg) > 0);
	assert_int_equal(chg[0].to, FG_LINE_SHADOW);
	assert_non_null(strstr(chg[0].why, "token 31 layer 3: fingerprints differ (no body to compare)"));
	/* a FULL report without body: its digest (the lcore's hash) stands */
	c = canon_full(f->body, 32, 3);
	c.body = NULL;
	c.digest = fg_fingerprint(f->body, sizeof(f->body));
	sv = view(f->body, 32, 3);
	report_then_seed(f, &c, &sv, 4, FG_VERDICT_CLEAN, &v);
	assert_false(v.v.has_diff);
	/* ... and with another body behind the seed: divergent */
	c.token_seq = 33;
	put_f(f->other, 3, fbits(1.0f));
	sv = view(f->other, 33, 3);
	report_then_seed(f, &c, &sv, 6, FG_VERDICT_DIVERGENT, &v);
	/* without body and without digest there is nothing to judge: refused */
	c.token_seq = 34;
	c.digest = 0;
	assert_int_equal(fg_shadow_canon(&f->sh, &c, 8, &v), -EINVAL);
	assert_int_equal(f->sh.clean, 2);
	assert_int_equal(f->sh.divergent, 2);
	fix_free(f);
}

static void test_expiry_and_eviction(void **state)
{
	(void)state;
	struct fix *f = fix_new(0.0, FG_LINE_SHADOW);
	struct fg_shadow_verdict v[4];
	struct fg_seed_view sv = view(f->body, 20, 1);
	assert_int_equal(fg_shadow_seed(&f->sh, &sv, &f->lines, 1 * SEC, v), 0);
	struct fg_canon c = canon_full(f->body, 21, 1);
	assert_int_equal(fg_shadow_canon(&f->sh, &c, 1 * SEC, v), 0);
	assert_int_equal(fg_shadow_expire(&f->sh, 5 * SEC, v, 4), 0);
	assert_int_equal(f->sh.live, 2);
	/* the lone seed gives an UNMATCHED verdict; the lone report is only counted */
	assert_int_equal(fg_shadow_expire(&f->sh, 6 * SEC + 1, v, 4), 1);
	assert_int_equal(v[0].v.kind, FG_VERDICT_UNMATCHED);
	assert_int_equal(v[0].v.token_seq, 20);
	assert_true(v[0].seed_side);
	assert_int_equal(f->sh.live, 0);
	assert_int_equal(f->sh.unmatched, 2);
	/* an UNMATCHED verdict changes no line */
	struct fg_line_change chg[FG_LINES];
	assert_int_equal(fg_shadow_apply(&f->lines, &v[0], 7 * SEC, chg), 0);

	/* two keys on the same index: the newer evicts the older */
	sv = view(f->body, 30, 0);
	assert_int_equal(fg_shadow_seed(&f->sh, &sv, &f->lines, 0, v), 0);
	uint32_t tok2 = 30 + 64; /* (tok * 28) mod 64 repeats every 16 tokens */
	sv = view(f->body, tok2, 0);
	assert_int_equal(fg_shadow_seed(&f->sh, &sv, &f->lines, 0, v), 0);
	assert_int_equal(f->sh.evicted, 1);
	assert_int_equal(f->sh.live, 1);
	c = canon_full(f->body, 30, 0);
	assert_int_equal(fg_shadow_canon(&f->sh, &c, 0, v), 0); /* waits: its seed was evicted */
	assert_int_equal(fg_shadow_flush(&f->sh), 1);
	assert_int_equal(f->sh.live, 0);
	fix_free(f);
}

static void test_sampling(void **state)
{
	(void)state;
	struct fix *none = fix_new(0.0, FG_LINE_ACTIVE);
	struct fix *all = fix_new(1.0, FG_LINE_ACTIVE);
	struct fix *quarter = fix_new(0.25, FG_LINE_ACTIVE);
	struct fg_shadow_verdict v;
	unsigned picked = 0;
	for (uint32_t t = 0; t < 20000; t++) {
		bool s;
		assert_false(fg_shadow_wants(&none->sh, &none->lines, t, 5, 0x2A, &s));
		assert_true(fg_shadow_wants(&all->sh, &all->lines, t, 5, 0x2A, &s));
		assert_true(s);
		bool q1 = fg_shadow_wants(&quarter->sh, &quarter->lines, t, 5, 0x2A, &s);
		bool q2 = fg_shadow_wants(&quarter->sh, &quarter->lines, t, 5, 0x2A, &s);
		assert_int_equal(q1, q2); /* deterministic */
		picked += q1;
	}
	assert_in_range(picked, 4000, 6000);
	/* not sampled: nothing stored */
	struct fg_seed_view sv = view(none->body, 1, 1);
	assert_int_equal(fg_shadow_seed(&none->sh, &sv, &none->lines, 0, &v), 0);
	assert_int_equal(none->sh.live, 0);
	assert_int_equal(none->sh.sampled_out, 1);
	/* ...unless its canonical report is already waiting */
	struct fg_canon c = canon_full(none->body, 2, 1);
	assert_int_equal(fg_shadow_canon(&none->sh, &c, 0, &v), 0);
	sv = view(none->body, 2, 1);
	assert_int_equal(fg_shadow_seed(&none->sh, &sv, &none->lines, 0, &v), 1);
	/* one line of the slot in shadow: always compared */
	struct fg_line_change chg;
	assert_int_equal(fg_line_apply(&none->lines, 3, FG_LEV_OP_SHADOW, 0, 0, 0, "t", &chg), 1);
	bool s;
	assert_true(fg_shadow_wants(&none->sh, &none->lines, 99, 1, 0x2A, &s));
	assert_false(s);
	fix_free(none);
	fix_free(all);
	fix_free(quarter);
}

static int apply_one(struct fix *f, uint32_t token, bool diverge, uint64_t now, struct fg_line_change chg[FG_LINES])
{
	struct fg_shadow_verdict v;
	struct fg_seed_view sv = view(f->body, token, 2);
	assert_int_equal(fg_shadow_seed(&f->sh, &sv, &f->lines, now, &v), 0);
	memcpy(f->other, f->body, sizeof(f->body));
	if (diverge)
		put_f(f->other, 0, fbits(-3.0f) + 1);
	struct fg_canon c = canon_full(f->other, token, 2);
	assert_int_equal(fg_shadow_canon(&f->sh, &c, now, &v), 1);
	return fg_shadow_apply(&f->lines, &v, now, chg);
}

static void test_promotion_and_demotion(void **state)
{
	(void)state;
	/* sample 1.0: seeds on active lines are compared too */
	struct fix *f = fix_new(1.0, FG_LINE_SHADOW);
	struct fg_line_change chg[FG_LINES];
	/* three clean verdicts in 3 s: count reached, window (10 s) not */
	for (uint32_t t = 0; t < 3; t++)
		assert_int_equal(apply_one(f, t, false, (t + 1) * SEC, chg), 0);
	for (unsigned l = 0; l < FG_LINES; l++)
		assert_int_equal(fg_line_effective(&f->lines, l), FG_LINE_SHADOW);
	/* after the window: lines 1, 3, 5 of the slot promote, the others do not */
	assert_int_equal(apply_one(f, 3, false, 11 * SEC, chg), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(chg[i].from, FG_LINE_SHADOW);
		assert_int_equal(chg[i].to, FG_LINE_ACTIVE);
		assert_int_equal(chg[i].event, FG_LEV_CLEAN);
		assert_int_equal(chg[i].uid, FG_UID_AUDIT);
		assert_true(strlen(chg[i].why) > 0);
	}
	assert_int_equal(chg[0].line, 1);
	assert_int_equal(chg[1].line, 3);
	assert_int_equal(chg[2].line, 5);
	assert_true(fg_line_is_usable(&f->lines, 3));
	assert_false(fg_line_is_usable(&f->lines, 0));
	/* a clean verdict on active lines changes nothing */
	assert_int_equal(apply_one(f, 4, false, 12 * SEC, chg), 0);
	/* a divergence demotes all three at once and names the verdict */
	assert_int_equal(apply_one(f, 5, true, 13 * SEC, chg), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(chg[i].to, FG_LINE_SHADOW);
		assert_int_equal(chg[i].event, FG_LEV_DIVERGENCE);
		assert_non_null(strstr(chg[i].why, "token 5"));
	}
	/* the window restarted: clean verdicts soon after do not promote */
	for (uint32_t t = 6; t < 10; t++)
		assert_int_equal(apply_one(f, t, false, 14 * SEC, chg), 0);
	assert_int_equal(apply_one(f, 10, false, 23 * SEC + 1, chg), 3);
	fix_free(f);
}

/* ---- the glue: cp_shadow ---------------------------------------------------- */

struct hooks_seen {
	uint64_t durable;
	bool durable_any;
	int failed_err;
	unsigned changes, no_seq_changes;
};

static void h_durable(void *arg, uint64_t seq)
{
	struct hooks_seen *h = arg;
	h->durable = seq;
	h->durable_any = true;
}
static void h_failed(void *arg, int err) { ((struct hooks_seen *)arg)->failed_err = err; }
static void h_changed(void *arg, const struct fg_line_change *chg, uint64_t seq)
{
	struct hooks_seen *h = arg;
	h->changes++;
	if (seq == CP_SHADOW_NO_SEQ)
		h->no_seq_changes++;
}
static void h_log(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "# log: %s\n", msg);
}

static char tmpdir[40];

static void mk_tmpdir(void)
{
	fg_test_tmpdir(tmpdir, sizeof(tmpdir), "/tmp/fg-test-shadow-XXXXXX");
}

static void rm_tmpdir(void)
{
	assert_int_equal(fg_test_rmtree(tmpdir), 0);
}

static bool file_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	char buf[8192];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

/* Wait (bounded) for a file an alert child writes. */
static bool wait_file(struct cp_shadow *sh, const char *path, const char *needle)
{
	for (int i = 0; i < 500; i++) {
		(void)cp_shadow_process(sh, 0);
		if (file_has(path, needle))
			return true;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return false;
}

static struct cp_shadow *glue_new_s(struct fg_config *cfg, struct fg_lines *lines, struct hooks_seen *hs,
				    double sample)
{
	fg_config_default(cfg);
	cfg->hidden = HIDDEN;
	cfg->max_seq_len = 1;
	cfg->layers = 28;
	cfg->slot_capacity = 64;
	cfg->shadow_sample = sample;
	cfg->group_commit_us = 0;
	cfg->alert_min_interval_ms = 0;
	snprintf(cfg->audit_path, sizeof(cfg->audit_path), "%s/fanogate.audit", tmpdir);
	snprintf(cfg->alert_command, sizeof(cfg->alert_command),
		 "cd %s && env | grep ^FG_ | sort > a.$FG_EVENT.$$ && mv a.$FG_EVENT.$$ alert.$FG_EVENT", tmpdir);
	struct fg_line_policy pol = { .auto_promote = true, .promote_count = 2, .promote_ns = 1 * SEC };
	cfg->policy = pol; /* a log without line history starts from the config's [lines] */
	fg_test_lines_all(lines, FG_LINE_SHADOW, &pol);
	struct cp_shadow_hooks hooks = { .on_durable = h_durable, .on_failed = h_failed,
					 .on_lines_changed = h_changed, .log = h_log, .arg = hs };
	struct cp_shadow *sh;
	char err[256];
	int rc = cp_shadow_new(&sh, cfg, lines, &hooks, NULL, err, sizeof(err));
	if (rc < 0)
		fail_msg("cp_shadow_new: %s", err);
	return sh;
}

static struct cp_shadow *glue_new(struct fg_config *cfg, struct fg_lines *lines, struct hooks_seen *hs)
{
	return glue_new_s(cfg, lines, hs, 1.0);
}

/* One glue test's world: a fresh directory, the config, the lines, what the
 * hooks saw and the glue itself. */
struct glue {
	struct fg_config cfg;
	struct fg_lines lines;
	struct hooks_seen hs;
	struct cp_shadow *sh;
};

static struct cp_shadow *glue_start(struct glue *g, double sample)
{
	mk_tmpdir();
	memset(g, 0, sizeof(*g));
	g->sh = glue_new_s(&g->cfg, &g->lines, &g->hs, sample);
	return g->sh;
}

/* The glue's audit log, all of it (the caller frees it); its length in *n. */
static uint8_t *audit_bytes(size_t *n)
{
	char audit[400];
	snprintf(audit, sizeof(audit), "%s/fanogate.audit", tmpdir);
	return fg_test_slurp(audit, n);
}

/* The record at *off of buf[0..n) into r, *off moved past it; false at the end. */
static bool next_rec(const uint8_t *buf, size_t n, size_t *off, struct fg_audit_rec *r)
{
	if (*off >= n)
		return false;
	ssize_t k = fg_audit_decode(buf + *off, n - *off, r);
	assert_true(k > 0);
	*off += (size_t)k;
	return true;
}

/* The file at path holds every string of want (n of them). */
static void expect_file_has_all(const char *path, const char *const *want, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!file_has(path, want[i]))
			fail_msg("%s lacks \"%s\"", path, want[i]);
}

static void drain(struct cp_shadow *sh)
{
	assert_int_equal(cp_audit_log_drain(cp_shadow_log(sh), 10000), 0);
}

static void test_glue_verdicts_alerts(void **state)
{
	(void)state;
	struct glue g;
	struct cp_shadow *sh = glue_start(&g, 1.0);
	uint8_t body[HIDDEN * 4], other[HIDDEN * 4];
	for (size_t i = 0; i < HIDDEN; i++)
		put_f(body, i, fbits((float)i));
	memcpy(other, body, sizeof(body));
	put_f(other, 5, fbits(5.0f) + 7);

	uint64_t seq = 0;
	struct fg_seed_view sv = view(body, 1, 2);
	assert_int_equal(cp_shadow_on_resolved(sh, &sv, 9, 0, &seq), 0);
	struct fg_canon c = canon_full(body, 1, 2);
	assert_int_equal(cp_shadow_on_canonical(sh, &c, 9, 0, &seq), 1);
	uint64_t clean_seq = seq;
	sv = view(body, 2, 2);
	assert_int_equal(cp_shadow_on_resolved(sh, &sv, 9, 2 * SEC, &seq), 0);
	c = canon_full(body, 2, 2);
	/* second clean verdict after the window: verdict + 3 promotions */
	assert_int_equal(cp_shadow_on_canonical(sh, &c, 9, 2 * SEC, &seq), 1);
	assert_int_equal(seq, clean_seq + 4);
	assert_int_equal(g.hs.changes, 3);
	assert_true(fg_line_is_usable(&g.lines, 1));
	drain(sh);
	assert_true(cp_shadow_is_durable(sh, seq));
	assert_int_equal(g.hs.durable, seq);

	/* a divergence: verdict, 3 demotions, an alert with the figures */
	sv = view(body, 3, 2);
	assert_int_equal(cp_shadow_on_resolved(sh, &sv, 9, 3 * SEC, &seq), 1 - 1);
	c = canon_full(other, 3, 2);
	assert_int_equal(cp_shadow_on_canonical(sh, &c, 9, 3 * SEC, &seq), 1);
	assert_false(fg_line_is_usable(&g.lines, 1));
	assert_int_equal(g.hs.changes, 6);
	char path[400];
	snprintf(path, sizeof(path), "%s/alert.divergence", tmpdir);
	assert_true(wait_file(sh, path, "FG_DIFF_MAX_ULP=7"));
	char fp_jump[64], fp_canon[64], audit_path[400];
	snprintf(audit_path, sizeof(audit_path), "FG_AUDIT_PATH=%s\n", g.cfg.audit_path);
	snprintf(fp_jump, sizeof(fp_jump), "FG_FP_JUMP=%016llx", (unsigned long long)fg_fingerprint(body, sizeof(body)));
	snprintf(fp_canon, sizeof(fp_canon), "FG_FP_CANON=%016llx",
		 (unsigned long long)fg_fingerprint(other, sizeof(other)));
	const char *const env[] = { "FG_EVENT=divergence", "FG_TOKEN=3\n", "FG_LAYER=2\n", "FG_LINE=1\n",
				    "FG_LINES=1,3,5\n", "FG_DIFF_COUNT=1\n", "FG_EPOCH=9\n", fp_jump, fp_canon,
				    "FG_HOST=", "FG_LINE_TRIPLE=(1,4,5)\n", "FG_DIFF_SUMMARY=1 of ",
				    "FG_REASON=line 1 active -> shadow, line 3 active -> shadow, line 5 active -> shadow\n",
				    audit_path, "FG_SUMMARY=fanogate " };
	expect_file_has_all(path, env, FG_ARRAY_LEN(env));

	/* conflict: record, demotion already happened (shadow), alert */
	assert_int_equal(cp_shadow_on_conflict(sh, 4, 2, 3, 9, 4 * SEC, &seq), 1);
	snprintf(path, sizeof(path), "%s/alert.conflict", tmpdir);
	assert_true(wait_file(sh, path, "FG_EVENT=conflict"));
	/* operator op: applies and records; refused op records nothing */
	assert_int_equal(cp_shadow_line_op(sh, 6, FG_LEV_OP_ACTIVE, 1000, 77, "test", "forced", 5 * SEC, &seq), 1);
	assert_int_equal(fg_line_effective(&g.lines, 6), FG_LINE_ACTIVE);
	uint64_t before = seq;
	assert_int_equal(cp_shadow_line_op(sh, 6, FG_LEV_OP_ENABLE, 1000, 77, "test", "again", 5 * SEC, &seq),
			 -EALREADY);
	assert_int_equal(seq, before);
	assert_int_equal(cp_shadow_on_epoch_change(sh, 9, 10, 0, 1, "new weights", &seq), 1);
	assert_int_equal(cp_shadow_on_peer_auth_failure(sh, "127.0.0.1:9", "bad_token", 6 * SEC, &seq), 1);
	drain(sh);
	struct cp_shadow_stats st;
	cp_shadow_stats(sh, &st);
	assert_int_equal(st.verdicts_clean, 2);
	assert_int_equal(st.verdicts_divergent, 1);
	assert_int_equal(st.promotions, 3 + 1);
	assert_int_equal(st.demotions, 3);
	assert_true(st.alert.spawned >= 2);
	cp_shadow_free(sh);

	/* the log verifies and holds what happened, in order */
	size_t n;
	uint8_t *buf = audit_bytes(&n);
	struct fg_audit_scan s;
	assert_int_equal(fg_audit_verify(buf, n, NULL, &s), 0);
	unsigned counts[FG_AREC__END] = { 0 };
	size_t off = 0;
	struct fg_audit_rec r;
	while (next_rec(buf, n, &off, &r))
		counts[r.type]++;
	free(buf);
	assert_int_equal(counts[FG_AREC_GENESIS], 1);
	assert_int_equal(counts[FG_AREC_VERDICT], 3);
	assert_int_equal(counts[FG_AREC_LINE], 3 + 3 + 1);
	assert_int_equal(counts[FG_AREC_CONFLICT], 1);
	assert_int_equal(counts[FG_AREC_EPOCH], 1);
	assert_int_equal(counts[FG_AREC_PEER_AUTH], 1);
	rm_tmpdir();
}

static void test_glue_fail_closed(void **state)
{
	(void)state;
	struct glue g;
	struct cp_shadow *sh = glue_start(&g, 1.0);
	uint64_t seq;
	assert_int_equal(cp_shadow_line_op(sh, 0, FG_LEV_OP_ACTIVE, 0, 1, "test", "go", 0, &seq), 1);
	assert_int_equal(cp_shadow_line_op(sh, 4, FG_LEV_OP_ACTIVE, 0, 1, "test", "go", 0, &seq), 1);
	drain(sh);
	uint64_t durable_before = cp_audit_log_durable_next(cp_shadow_log(sh));
	assert_true(cp_shadow_is_durable(sh, seq));

	cp_audit_log_inject_fsync_error(cp_shadow_log(sh), EIO);
	assert_int_equal(cp_shadow_on_peer_auth_failure(sh, "x", "y", 0, &seq), 1);
	assert_int_equal(cp_audit_log_drain(cp_shadow_log(sh), 10000), -EIO);
	/* fail closed: hook, nothing more durable, demotions, alert, -EIO after */
	assert_int_equal(g.hs.failed_err, EIO);
	assert_true(cp_shadow_failed(sh));
	assert_false(cp_shadow_is_durable(sh, seq));
	assert_int_equal(cp_audit_log_durable_next(cp_shadow_log(sh)), durable_before);
	assert_int_equal(fg_line_effective(&g.lines, 0), FG_LINE_SHADOW);
	assert_int_equal(fg_line_effective(&g.lines, 4), FG_LINE_SHADOW);
	assert_int_equal(g.hs.no_seq_changes, 2);
	uint8_t body[HIDDEN * 4] = { 0 };
	struct fg_seed_view sv = view(body, 1, 1);
	assert_int_equal(cp_shadow_on_resolved(sh, &sv, 0, 0, &seq), -EIO);
	assert_int_equal(cp_shadow_line_op(sh, 2, FG_LEV_OP_ACTIVE, 0, 1, "t", "t", 0, &seq), -EIO);
	assert_int_equal(fg_line_effective(&g.lines, 2), FG_LINE_SHADOW);
	uint64_t s2;
	assert_int_equal(cp_audit_log_append(cp_shadow_log(sh), FG_AREC_EPOCH,
					     &(union fg_audit_payload){ .epoch = { .from = 1 } }, &s2), -EIO);
	char path[400];
	snprintf(path, sizeof(path), "%s/alert.audit_failed", tmpdir);
	if (!wait_file(sh, path, "FG_REASON=audit log fdatasync failed: Input/output error")) {
		char cmd[200];
		snprintf(cmd, sizeof(cmd), "ls -l %s; cat %s/alert.*", tmpdir, tmpdir);
		assert_int_equal(system(cmd), 0);
		fail();
	}
	struct cp_shadow_stats st;
	cp_shadow_stats(sh, &st);
	assert_int_equal(st.log.durable_records, durable_before - 1); /* minus genesis (written at open) */
	cp_shadow_free(sh);

	/* a restart recovers: the log verifies (the un-acknowledged record may or
	 * may not be there; it was never reported durable) */
	g.hs = (struct hooks_seen){ 0 };
	sh = glue_new(&g.cfg, &g.lines, &g.hs);
	assert_false(cp_shadow_failed(sh));
	cp_shadow_free(sh);
	rm_tmpdir();
}

static void test_glue_unsampled_reports(void **state)
{
	(void)state;
	struct glue g;
	struct cp_shadow *sh = glue_start(&g, 0.0);
	uint64_t seq;
	for (unsigned l = 0; l < FG_LINES; l++)
		assert_int_equal(cp_shadow_line_op(sh, l, FG_LEV_OP_ACTIVE, 0, 1, "test", "go", 0, &seq), 1);
	uint8_t body[HIDDEN * 4] = { 0 };
	/* Pair X (lines 1, 3, 5) all active, sample 0: the report is dropped at
	 * once instead of waiting for a seed that will not be compared. */
	struct fg_canon c = canon_full(body, 7, 2);
	assert_int_equal(cp_shadow_on_canonical(sh, &c, 0, 0, &seq), 0);
	struct fg_seed_view sv = view(body, 7, 2);
	assert_int_equal(cp_shadow_on_resolved(sh, &sv, 0, 0, &seq), 0);
	struct cp_shadow_stats st;
	cp_shadow_stats(sh, &st);
	assert_int_equal(st.canon_not_sampled, 1);
	assert_int_equal(st.sampled_out, 1);
	/* line 3 back in shadow: the same kind of report now waits and matches */
	assert_int_equal(cp_shadow_line_op(sh, 3, FG_LEV_OP_SHADOW, 0, 1, "test", "watch", 0, &seq), 1);
	c = canon_full(body, 8, 2);
	assert_int_equal(cp_shadow_on_canonical(sh, &c, 0, 0, &seq), 0);
	sv = view(body, 8, 2);
	assert_int_equal(cp_shadow_on_resolved(sh, &sv, 0, 0, &seq), 1);
	cp_shadow_stats(sh, &st);
	assert_int_equal(st.canon_not_sampled, 1);
	assert_int_equal(st.verdicts_clean, 1);
	cp_shadow_free(sh);
	rm_tmpdir();
}

/* The glue: the verdict record carries the lead (version 2), /metrics'
 * histograms count it per line and ingress, and [lines] promote_min_ahead
 * holds a clean window that is behind the chain in shadow with one LINE
 * record (states unchanged, the reason), not one per verdict; without it
 * the same window promotes. */
static void test_glue_lead_and_hold(void **state)
{
	(void)state;
	struct glue g;
	struct cp_shadow *sh = glue_start(&g, 0.0);
	g.lines.policy.min_ahead = 0.5;
	uint8_t body[HIDDEN * 4] = { 0 };
	uint64_t seq = 0, t0 = 10 * SEC;
	/* three slots: the report 1 ms before the seed each time (behind) */
	for (uint32_t k = 0; k < 3; k++) {
		uint64_t now = t0 + k * SEC;
		struct fg_canon c = canon_full(body, 10 + k, 2);
		assert_int_equal(cp_shadow_on_canonical_at(sh, &c, 1 + k, now, 0, now, &seq), 0);
		struct fg_seed_view sv = view(body, 10 + k, 2);
		struct fg_seed_times t = { .resolved_ns = now + 1000000, .delivered_ns = now + 1100000,
					   .ingress = FG_AUDIT_INGRESS_UDP };
		assert_int_equal(cp_shadow_on_resolved_at(sh, &sv, &t, 0, now + 1200000, &seq), 1);
	}
	for (unsigned l = 1; l < FG_LINES; l += 2) {
		assert_int_equal(g.lines.line[l].base, FG_LINE_SHADOW);
		assert_int_equal(g.lines.line[l].holds, 1);
		const struct cp_shadow_lead *L = cp_shadow_lead(sh, l, FG_AUDIT_INGRESS_UDP);
		assert_int_equal(L->behind.count, 3);
		assert_int_equal(L->ahead.count, 0);
		assert_int_equal(L->deliver_behind.count, 3);
		assert_int_equal(L->behind.sum_ns, 3000000);
		assert_int_equal(cp_shadow_lead(sh, l, FG_AUDIT_INGRESS_TLS)->behind.count, 0);
	}
	assert_int_equal(cp_shadow_lead(sh, 0, FG_AUDIT_INGRESS_UDP)->behind.count, 0);
	assert_int_equal(g.hs.changes, 0); /* a hold publishes nothing */
	struct cp_shadow_stats st;
	cp_shadow_stats(sh, &st);
	assert_int_equal(st.promotions_held, 3); /* one per line, once */
	assert_int_equal(st.promotions, 0);
	drain(sh);
	size_t n;
	uint8_t *buf = audit_bytes(&n);
	size_t off = 0;
	struct fg_audit_rec r;
	unsigned verdicts = 0, holds = 0;
	while (next_rec(buf, n, &off, &r)) {
		if (r.type == FG_AREC_VERDICT) {
			verdicts++;
			assert_int_equal(r.version, 2);
			assert_true(r.p.verdict.lead_ns == -1000000);
			assert_true(r.p.verdict.lead_deliver_ns == -1100000);
			assert_int_equal(r.p.verdict.ingress, FG_AUDIT_INGRESS_UDP);
		} else if (r.type == FG_AREC_LINE) {
			holds++;
			assert_int_equal(r.p.line.event, FG_LEV_CLEAN);
			assert_int_equal(r.p.line.from, FG_LINE_SHADOW);
			assert_int_equal(r.p.line.to, FG_LINE_SHADOW);
			assert_string_equal(r.p.line.why, "clean, not ahead: 0% of 2 seeds ahead, needs 50%");
		}
	}
	free(buf);
	assert_int_equal(verdicts, 3);
	assert_int_equal(holds, 3);
	/* the policy off (a reload): the next clean verdict promotes */
	g.lines.policy.min_ahead = 0;
	struct fg_canon c = canon_full(body, 20, 2);
	assert_int_equal(cp_shadow_on_canonical_at(sh, &c, 0, t0 + 5 * SEC, 0, t0 + 5 * SEC, &seq), 0);
	struct fg_seed_view sv = view(body, 20, 2);
	assert_int_equal(cp_shadow_on_resolved(sh, &sv, 0, t0 + 5 * SEC, &seq), 1);
	assert_int_equal(g.lines.line[1].base, FG_LINE_ACTIVE);
	assert_int_equal(g.hs.changes, 3);
	cp_shadow_free(sh);
	rm_tmpdir();
}

static void test_glue_peer_auth_storm(void **state)
{
	(void)state;
	struct glue g;
	struct cp_shadow *sh = glue_start(&g, 1.0);
	uint64_t seq = 0, first = 0;
	assert_int_equal(cp_shadow_on_peer_auth_failure(sh, "10.1.1.1:1", "bad_token", 5 * SEC, &first), 1);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(cp_shadow_on_peer_auth_failure(sh, "10.1.1.1:1", "bad_token", 5 * SEC + (uint64_t)i,
								&seq), 0);
	assert_int_equal(cp_shadow_on_peer_auth_failure(sh, "10.1.1.1:1", "bad_token", 5 * SEC + SEC / 5, &seq), 1);
	assert_int_equal(seq, first + 1);
	drain(sh);
	struct cp_shadow_stats st;
	cp_shadow_stats(sh, &st);
	assert_int_equal(st.peer_auth_failures, 1002);
	assert_int_equal(st.peer_auth_suppressed, 1000);
	cp_shadow_free(sh);
	size_t n;
	uint8_t *buf = audit_bytes(&n);
	size_t off = 0;
	unsigned recs = 0;
	bool summed = false;
	struct fg_audit_rec r;
	while (next_rec(buf, n, &off, &r)) {
		if (r.type == FG_AREC_PEER_AUTH) {
			recs++;
			summed |= strstr(r.p.peer_auth.reason, "bad_token (+1000 more failures not recorded)") != NULL;
		}
	}
	free(buf);
	assert_int_equal(recs, 2);
	assert_true(summed);
	rm_tmpdir();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ulp_and_diff),
		cmocka_unit_test(test_verdict_both_orders),
		cmocka_unit_test(test_halves_without_body),
		cmocka_unit_test(test_expiry_and_eviction),
		cmocka_unit_test(test_sampling),
		cmocka_unit_test(test_promotion_and_demotion),
		cmocka_unit_test(test_glue_verdicts_alerts),
		cmocka_unit_test(test_glue_fail_closed),
		cmocka_unit_test(test_glue_unsampled_reports),
		cmocka_unit_test(test_glue_peer_auth_storm),
		cmocka_unit_test(test_lead_both_orders),
		cmocka_unit_test(test_glue_lead_and_hold),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

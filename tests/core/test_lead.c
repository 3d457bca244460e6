/* test_lead.c - core/lead.c: the lead of a slot, the /metrics histograms
 * (ahead and behind apart, every bound), the per-line window (buckets,
 * percentiles with their stated precision, share ahead, saturation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fg/lead.h"

#define US 1000ll
#define MS 1000000ll

static void test_lead_of(void **state)
{
	(void)state;
	assert_true(fg_lead_of(5000, 3000) == 2000);
	assert_true(fg_lead_of(3000, 5000) == -2000); /* the chain was first */
	assert_true(fg_lead_of(0, 5000) == FG_LEAD_NONE);
	assert_true(fg_lead_of(5000, 0) == FG_LEAD_NONE);
	assert_true(fg_lead_of(7, 7) == 0);
}

static void test_hist(void **state)
{
	(void)state;
	struct fg_lead_hist a, b;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	/* on a bound lands in that bound's bucket; one ns over, the next */
	for (unsigned i = 0; i < FG_LEAD_BUCKETS - 1; i++) {
		struct fg_lead_hist h;
		memset(&h, 0, sizeof(h));
		fg_lead_hist_add(&h, (uint64_t)fg_lead_hist_le_us[i] * 1000u);
		assert_int_equal(h.bucket[i], 1);
		fg_lead_hist_add(&h, (uint64_t)fg_lead_hist_le_us[i] * 1000u + 1);
		assert_int_equal(h.bucket[i + 1], 1);
	}
	fg_lead_hist_record(&a, &b, 2 * MS);
	fg_lead_hist_record(&a, &b, -3 * MS);
	fg_lead_hist_record(&a, &b, 0); /* not ahead */
	fg_lead_hist_record(&a, &b, FG_LEAD_NONE);
	assert_int_equal(a.count, 1);
	assert_int_equal(a.sum_ns, 2 * MS);
	assert_int_equal(b.count, 2);
	assert_int_equal(b.sum_ns, 3 * MS);
	assert_int_equal(a.bucket[7], 1);  /* (1 ms, 2 ms] */
	assert_int_equal(b.bucket[8], 1);  /* (2 ms, 5 ms] */
	assert_int_equal(b.bucket[0], 1);  /* 0 */
	/* the most negative lead has a magnitude */
	fg_lead_hist_record(&a, &b, INT64_MIN + 1);
	assert_int_equal(b.bucket[FG_LEAD_BUCKETS - 1], 1);
}

static void test_window_buckets(void **state)
{
	(void)state;
	assert_int_equal(fg_lead_window_bucket(0), 0);
	assert_int_equal(fg_lead_window_bucket(999), 0);
	assert_int_equal(fg_lead_window_bucket(1000), 1);
	/* monotonic in the magnitude, the last bucket for anything huge */
	unsigned prev = 0;
	for (uint64_t ns = 1; ns < (1ull << 40); ns = ns * 9 / 8 + 1) {
		unsigned b = fg_lead_window_bucket(ns);
		assert_true(b >= prev && b < FG_LEAD_WIN_N);
		prev = b;
	}
	assert_int_equal(fg_lead_window_bucket(UINT64_MAX), FG_LEAD_WIN_N - 1);
}

/* Every single value reads back within its stated precision: exact to the
 * microsecond below 4 us, within 1/8 (plus the microsecond the buckets
 * count in) above, sign kept. */
static void test_window_precision(void **state)
{
	(void)state;
	struct fg_lead_window w;
	for (int64_t v = 1000; v < 100000ll * MS; v = v * 5 / 4 + 777) {
		for (int sgn = -1; sgn <= 1; sgn += 2) {
			fg_lead_window_reset(&w);
			fg_lead_window_add(&w, sgn * v);
			int64_t got = fg_lead_window_pct(&w, 50);
			assert_true((got > 0) == (sgn > 0));
			double err = llabs(got - sgn * v);
			assert_true(err <= (double)v / 8 + 1000);
		}
	}
	fg_lead_window_reset(&w);
	fg_lead_window_add(&w, 3 * US);
	assert_true(fg_lead_window_pct(&w, 50) == 3 * US);
	fg_lead_window_reset(&w);
	assert_true(fg_lead_window_pct(&w, 50) == FG_LEAD_NONE);
	fg_lead_window_add(&w, FG_LEAD_NONE);
	assert_int_equal(w.n, 0);
	assert_true(fg_lead_window_pct(&w, 99) == FG_LEAD_NONE);
}

/* Percentiles order negative before positive; the share counts > 0 only. */
static void test_window_percentiles(void **state)
{
	(void)state;
	struct fg_lead_window w;
	fg_lead_window_reset(&w);
	/* 60 leads of 2 ms, 30 of -1 ms, 10 of 0 */
	for (int i = 0; i < 60; i++)
		fg_lead_window_add(&w, 2 * MS);
	for (int i = 0; i < 30; i++)
		fg_lead_window_add(&w, -1 * MS);
	for (int i = 0; i < 10; i++)
		fg_lead_window_add(&w, 0);
	assert_int_equal(w.n, 100);
	assert_int_equal(w.ahead, 60);
	assert_true(fg_lead_window_share_ahead(&w) > 0.599 && fg_lead_window_share_ahead(&w) < 0.601);
	int64_t p10 = fg_lead_window_pct(&w, 10), p35 = fg_lead_window_pct(&w, 35), p50 = fg_lead_window_pct(&w, 50),
		p99 = fg_lead_window_pct(&w, 99);
	assert_true(p10 < -800 * US && p10 > -1200 * US);
	assert_true(p35 == 0);
	assert_true(p50 > 1800 * US && p50 < 2200 * US);
	assert_true(p99 == p50);
	assert_true(fg_lead_window_pct(&w, 0) == FG_LEAD_NONE);
	assert_true(fg_lead_window_pct(&w, 1000) == p99); /* clamped to 100 */
	fg_lead_window_reset(&w);
	assert_int_equal(w.n, 0);
	assert_true(fg_lead_window_share_ahead(&w) == 0.0);
	/* counts saturate instead of wrapping */
	w.n = w.ahead = w.pos[5] = UINT32_MAX - 1;
	fg_lead_window_add(&w, 2 * US);
	fg_lead_window_add(&w, 2 * US);
	assert_int_equal(w.n, UINT32_MAX);
	assert_int_equal(w.ahead, UINT32_MAX);
	assert_int_equal(w.pos[5], UINT32_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lead_of),
		cmocka_unit_test(test_hist),
		cmocka_unit_test(test_window_buckets),
		cmocka_unit_test(test_window_precision),
		cmocka_unit_test(test_window_percentiles),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

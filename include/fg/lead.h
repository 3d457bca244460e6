/* lead.h - how far ahead of the canonical chain a jumped seed was (pure
 * core: no I/O, no clock of its own, no logging).
 *
 * Owns: the lead of one compared slot, the Prometheus histograms of leads
 * (ahead) and lags (behind), and the per-line window of leads that
 * `fanoctl lines` summarises and the promotion policy reads (fg/line.h).
 *
 * The lead of a slot is the canonical report's arrival minus the jumped
 * seed's resolution (or minus its delivery to the next worker), both read
 * on this host's CLOCK_MONOTONIC: positive when the jump was first,
 * negative when the canonical chain was. A seed is "ahead" when its lead is
 * > 0; a lead of exactly 0 is not ahead.
 *
 * Who may call: any thread; a histogram or window has one writer (the
 * control-plane thread that owns the line table). */
#ifndef FG_LEAD_H
#define FG_LEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/common.h"

/* No lead: a time was not known (no canonical report, no delivery). */
#define FG_LEAD_NONE INT64_MIN

/* The lead from a canonical arrival and a seed time (ns, one clock); either
 * 0 means unknown: FG_LEAD_NONE. */
static inline int64_t fg_lead_of(uint64_t canon_ns, uint64_t seed_ns)
{
	if (!canon_ns || !seed_ns)
		return FG_LEAD_NONE;
	return (int64_t)(canon_ns - seed_ns);
}

/* ---- histograms for /metrics (magnitude, ahead and behind apart) -------- */

#define FG_LEAD_BUCKETS 20 /* 19 bounds + the +Inf bucket */

/* 10 us .. 10 s: a jump over the appliance's hot path against one
 * coordinator hop (tens of us) up to a canonical chain that lags by whole
 * layers of compute (seconds). */
static const uint32_t fg_lead_hist_le_us[FG_LEAD_BUCKETS - 1] = {
	10,    20,    50,     100,    200,    500,     1000,    2000,    5000,   10000,
	20000, 50000, 100000, 200000, 500000, 1000000, 2000000, 5000000, 10000000};

struct fg_lead_hist {
	uint64_t bucket[FG_LEAD_BUCKETS]; /* not cumulative: bucket i counts (le[i-1], le[i]] */
	uint64_t count;
	uint64_t sum_ns;
};

/* Record a magnitude of ns nanoseconds. */
void fg_lead_hist_add(struct fg_lead_hist *h, uint64_t ns);

/* A lead into the pair: lead_ns > 0 into ahead (its value), otherwise into
 * behind (its magnitude). FG_LEAD_NONE records nothing. */
void fg_lead_hist_record(struct fg_lead_hist *ahead, struct fg_lead_hist *behind, int64_t lead_ns);

/* ---- the per-line window ------------------------------------------------ */

/* Magnitudes in log-linear buckets: bucket 0 holds |lead| < 1 us; then four
 * buckets per power of two of microseconds, from 1 us up to 2^28 us (268 s;
 * larger ones land in the last bucket). A percentile is read as its
 * bucket's middle: within 1/8 of the value (12.5 %), exact below 4 us. */
#define FG_LEAD_WIN_SUB 4u
#define FG_LEAD_WIN_OCTAVES 28u
#define FG_LEAD_WIN_N (1u + FG_LEAD_WIN_OCTAVES * FG_LEAD_WIN_SUB)

struct fg_lead_window {
	uint32_t n;                   /* leads recorded since the window opened */
	uint32_t ahead;               /* of them, > 0 */
	uint32_t pos[FG_LEAD_WIN_N];  /* leads >= 0 by magnitude */
	uint32_t neg[FG_LEAD_WIN_N];  /* leads < 0 by magnitude */
};

/* Empty the window. */
void fg_lead_window_reset(struct fg_lead_window *w);
/* Record one lead (FG_LEAD_NONE: nothing). Counts saturate at UINT32_MAX. */
void fg_lead_window_add(struct fg_lead_window *w, int64_t lead_ns);
/* The q-th percentile (0 < q <= 100) of the window's leads in ns (the
 * middle of its bucket, sign kept); FG_LEAD_NONE when the window is empty. */
int64_t fg_lead_window_pct(const struct fg_lead_window *w, double q);
/* Share of the window's leads that were ahead, 0..1 (0 when empty). */
double fg_lead_window_share_ahead(const struct fg_lead_window *w);

/* The bucket of a magnitude in ns (exposed for tests). */
unsigned fg_lead_window_bucket(uint64_t ns);

#endif

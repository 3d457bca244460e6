/* lat_hist.h - fixed-bucket latency histograms (Prometheus `histogram`).
 *
 * Owns: nothing but their own counts. Buckets are cumulative upper bounds in
 * microseconds, plus +Inf. struct fg_lat_hist (fg_lat_hist_le_us[]) spans
 * 1 us to 10 ms: the range a boundary crossing, a spin, a wake-up of a
 * sleeping thread or a seed's delivery falls in. struct fg_span_hist
 * (fg_span_hist_le_us[]) spans 100 us to 10 s: the time a slot waits for
 * its lines, which the fleet's own schedule decides. A record is one
 * comparison loop and three adds, no clock read of its own (the caller has
 * both times).
 *
 * Who may call: one writer thread per histogram; a reader on another
 * thread sees counts that may be a record apart (the /metrics renderer runs
 * on the writer's own thread here). Pure: no DPDK, no sockets. */
#ifndef FG_LAT_HIST_H
#define FG_LAT_HIST_H

#include <stdint.h>

#define FG_LAT_BUCKETS 14 /* 13 bounds + the +Inf bucket */

static const uint32_t fg_lat_hist_le_us[FG_LAT_BUCKETS - 1] = {1,   2,   5,    10,   20,   50,   100,
								200, 500, 1000, 2000, 5000, 10000};

struct fg_lat_hist {
	uint64_t bucket[FG_LAT_BUCKETS]; /* not cumulative: bucket i counts (le[i-1], le[i]] */
	uint64_t count;
	uint64_t sum_ns;
};

/* Record one interval from t0 to t1 (ns, one clock); t1 < t0 (two clocks'
 * reads racing) records 0. */
static inline void fg_lat_hist_add(struct fg_lat_hist *h, uint64_t t0_ns, uint64_t t1_ns)
{
	uint64_t ns = t1_ns > t0_ns ? t1_ns - t0_ns : 0;
	unsigned i = 0;
	while (i < FG_LAT_BUCKETS - 1 && ns > (uint64_t)fg_lat_hist_le_us[i] * 1000u)
		i++;
	h->bucket[i]++;
	h->count++;
	h->sum_ns += ns;
}

#define FG_SPAN_BUCKETS 17 /* 16 bounds + the +Inf bucket */

static const uint32_t fg_span_hist_le_us[FG_SPAN_BUCKETS - 1] = {
	100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000, 2000000, 5000000,
	10000000};

struct fg_span_hist {
	uint64_t bucket[FG_SPAN_BUCKETS]; /* not cumulative, as fg_lat_hist */
	uint64_t count;
	uint64_t sum_ns;
};

/* Record one interval from t0 to t1 (ns, one clock); t1 < t0 records 0. */
static inline void fg_span_hist_add(struct fg_span_hist *h, uint64_t t0_ns, uint64_t t1_ns)
{
	uint64_t ns = t1_ns > t0_ns ? t1_ns - t0_ns : 0;
	unsigned i = 0;
	while (i < FG_SPAN_BUCKETS - 1 && ns > (uint64_t)fg_span_hist_le_us[i] * 1000u)
		i++;
	h->bucket[i]++;
	h->count++;
	h->sum_ns += ns;
}

#endif

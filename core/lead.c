/* lead.c - leads of jumped seeds over the canonical chain: histograms and
 * the per-line window (pure core). Contract: fg/lead.h. */
#include <string.h>

#include "fg/lead.h"

void fg_lead_hist_add(struct fg_lead_hist *h, uint64_t ns)
{
	unsigned i = 0;
	while (i < FG_LEAD_BUCKETS - 1 && ns > (uint64_t)fg_lead_hist_le_us[i] * 1000u)
		i++;
	h->bucket[i]++;
	h->count++;
	h->sum_ns += ns;
}

void fg_lead_hist_record(struct fg_lead_hist *ahead, struct fg_lead_hist *behind, int64_t lead_ns)
{
	if (lead_ns == FG_LEAD_NONE)
		return;
	if (lead_ns > 0)
		fg_lead_hist_add(ahead, (uint64_t)lead_ns);
	else
		fg_lead_hist_add(behind, (uint64_t)0 - (uint64_t)lead_ns);
}

void fg_lead_window_reset(struct fg_lead_window *w)
{
	memset(w, 0, sizeof(*w));
}

unsigned fg_lead_window_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000u;
	if (us == 0)
		return 0;
	unsigned o = 63u - (unsigned)__builtin_clzll(us); /* us in [2^o, 2^(o+1)) */
	if (o >= FG_LEAD_WIN_OCTAVES)
		return FG_LEAD_WIN_N - 1;
	/* the two bits after the leading one: which quarter of the octave */
	unsigned s = o >= 2 ? (unsigned)(us >> (o - 2)) & 3u : (unsigned)(us << (2 - o)) & 3u;
	return 1u + o * FG_LEAD_WIN_SUB + s;
}

/* The middle of bucket b in ns (bucket 0: 0). */
static uint64_t bucket_mid_ns(unsigned b)
{
	if (b == 0)
		return 0;
	unsigned o = (b - 1) / FG_LEAD_WIN_SUB, s = (b - 1) % FG_LEAD_WIN_SUB;
	if (o < 2) /* 1, 2, 3 us: one value per bucket */
		return ((uint64_t)(4u + s) << o >> 2) * 1000u;
	uint64_t lo = (uint64_t)(4u + s) << (o - 2), width = (uint64_t)1 << (o - 2);
	return (lo * 1000u) + width * 500u;
}

static void bump(uint32_t *c)
{
	if (*c != UINT32_MAX)
		(*c)++;
}

void fg_lead_window_add(struct fg_lead_window *w, int64_t lead_ns)
{
	if (lead_ns == FG_LEAD_NONE)
		return;
	bump(&w->n);
	if (lead_ns > 0)
		bump(&w->ahead);
	if (lead_ns >= 0)
		bump(&w->pos[fg_lead_window_bucket((uint64_t)lead_ns)]);
	else
		bump(&w->neg[fg_lead_window_bucket((uint64_t)0 - (uint64_t)lead_ns)]);
}

int64_t fg_lead_window_pct(const struct fg_lead_window *w, double q)
{
	uint64_t total = 0;
	for (unsigned i = 0; i < FG_LEAD_WIN_N; i++)
		total += (uint64_t)w->pos[i] + w->neg[i];
	if (total == 0 || !(q > 0))
		return FG_LEAD_NONE;
	if (q > 100)
		q = 100;
	/* the rank of the sample, 1-based, nearest-rank definition */
	double r = q / 100.0 * (double)total;
	uint64_t rank = (uint64_t)r;
	if ((double)rank < r)
		rank++;
	if (rank == 0)
		rank = 1;
	uint64_t seen = 0;
	/* most negative first: negative buckets from the largest magnitude down */
	for (unsigned i = FG_LEAD_WIN_N; i-- > 0;) {
		seen += w->neg[i];
		if (seen >= rank)
			return -(int64_t)bucket_mid_ns(i);
	}
	for (unsigned i = 0; i < FG_LEAD_WIN_N; i++) {
		seen += w->pos[i];
		if (seen >= rank)
			return (int64_t)bucket_mid_ns(i);
	}
	return (int64_t)bucket_mid_ns(FG_LEAD_WIN_N - 1);
}

double fg_lead_window_share_ahead(const struct fg_lead_window *w)
{
	return w->n ? (double)w->ahead / (double)w->n : 0.0;
}

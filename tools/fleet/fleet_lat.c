/* fleet_lat.c - latency samples: an append-only array of nanoseconds and
 * exact percentiles (nearest rank) over it.
 *
 * Who may call: the fanofleet event loop thread (and the relay's main
 * thread on its own recorder). Not thread-safe. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"

int fl_lat_add(struct fl_lat *l, uint64_t ns)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		uint64_t *p = realloc(l->ns, cap * sizeof *p);
		if (!p)
			return -ENOMEM;
		l->ns = p;
		l->cap = cap;
	}
	l->ns[l->n++] = ns;
	l->sum += ns;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest sample with at least q% of samples <= it. */
static uint64_t rank(const uint64_t *v, size_t n, double q)
{
	if (n == 0)
		return 0;
	double r = q / 100.0 * (double)n;
	size_t k = (size_t)r;
	if ((double)k < r)
		k++;
	if (k == 0)
		k = 1;
	if (k > n)
		k = n;
	return v[k - 1];
}

uint64_t fl_lat_pct(struct fl_lat *l, double q)
{
	if (l->n == 0)
		return 0;
	qsort(l->ns, l->n, sizeof *l->ns, cmp_u64);
	return rank(l->ns, l->n, q);
}

uint64_t fl_lat_pct_copy(const struct fl_lat *l, double q)
{
	if (l->n == 0)
		return 0;
	uint64_t *c = malloc(l->n * sizeof *c);
	if (!c)
		return 0;
	memcpy(c, l->ns, l->n * sizeof *c);
	qsort(c, l->n, sizeof *c, cmp_u64);
	uint64_t v = rank(c, l->n, q);
	free(c);
	return v;
}

void fl_lat_free(struct fl_lat *l)
{
	free(l->ns);
	memset(l, 0, sizeof *l);
}

/* cp_admit.c - per-source admission table of the TLS listener (see
 * cp_admit.h). Loop thread only; pure memory, no I/O but one getrandom at
 * init. */
#include "cp_admit.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>

#include "cp_key.h"
#include "fg/config.h"

static const char *const reason_names[CP_ADMIT_R__COUNT] = {
	[CP_ADMIT_R_PER_SOURCE] = "per_source",
	[CP_ADMIT_R_FULL] = "full",
	[CP_ADMIT_R_EVICT_UNAUTH] = "evicted_unauth_share",
	[CP_ADMIT_R_EVICT_FULL] = "evicted_full",
};

const char *cp_admit_reason_name(enum cp_admit_reason r)
{
	return (unsigned)r < CP_ADMIT_R__COUNT ? reason_names[r] : "unknown";
}

/* Capacity for max_conns: a power of two >= 2 * max_conns (invariant 2). */
static uint32_t cap_for(uint32_t max_conns)
{
	uint64_t want = 2ull * (max_conns ? max_conns : 1), cap = 16;
	while (cap < want)
		cap <<= 1;
	return (uint32_t)cap;
}

/* A keyed multiply-xorshift over the 17 bytes of the source: not a MAC, but
 * with the secret unknown a client cannot compute which addresses share a
 * home slot. */
static uint32_t src_hash(const struct cp_admit *a, const struct cp_admit_src *s)
{
	uint64_t w0, w1;
	memcpy(&w0, s->addr, 8);
	memcpy(&w1, s->addr + 8, 8);
	uint64_t h = a->key ^ ((uint64_t)s->family * 0x9E3779B97F4A7C15ull);
	h = (h ^ w0) * 0xBF58476D1CE4E5B9ull;
	h ^= h >> 31;
	h = (h ^ w1) * 0x94D049BB133111EBull;
	h ^= h >> 29;
	h *= 0xBF58476D1CE4E5B9ull;
	h ^= h >> 32;
	return (uint32_t)h;
}

static bool src_eq(const struct cp_admit_src *x, const struct cp_admit_src *y)
{
	return x->family == y->family && memcmp(x->addr, y->addr, sizeof(x->addr)) == 0;
}

/* The slot holding src, or the free slot that ends its probe run. */
static uint32_t find_slot(const struct cp_admit *a, const struct cp_admit_src *src)
{
	uint32_t i = src_hash(a, src) & a->mask;
	while (a->tab[i].open && !src_eq(&a->tab[i].src, src))
		i = (i + 1) & a->mask;
	return i;
}

static int table_alloc(struct cp_admit *a, uint32_t cap)
{
	struct cp_admit_entry *t = calloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	struct cp_admit_entry *old = a->tab;
	uint32_t old_cap = old ? a->mask + 1 : 0;
	a->tab = t;
	a->mask = cap - 1;
	for (uint32_t i = 0; i < old_cap; i++)
		if (old[i].open)
			a->tab[find_slot(a, &old[i].src)] = old[i];
	free(old);
	return 0;
}

void cp_admit_source_of(const struct sockaddr_storage *ss, unsigned v6_bits, struct cp_admit_src *src)
{
	memset(src, 0, sizeof(*src));
	if (ss->ss_family == AF_INET) {
		src->family = 4;
		memcpy(src->addr, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			src->family = 4;
			memcpy(src->addr, &a->s6_addr[12], 4);
		} else {
			src->family = 6;
			memcpy(src->addr, a, 16);
			fg_addr_cut(src->addr, v6_bits);
		}
	}
}

int cp_admit_init(struct cp_admit *a, uint32_t max_conns)
{
	memset(a, 0, sizeof(*a));
	a->key = cp_key_draw(a);
	return table_alloc(a, cap_for(max_conns));
}

void cp_admit_fini(struct cp_admit *a)
{
	free(a->tab);
	a->tab = NULL;
}

int cp_admit_grow(struct cp_admit *a, uint32_t max_conns)
{
	uint32_t cap = cap_for(max_conns);
	if (cap <= a->mask + 1)
		return 0;
	return table_alloc(a, cap);
}

uint32_t cp_admit_unauth_of(const struct cp_admit *a, const struct cp_admit_src *src)
{
	const struct cp_admit_entry *e = &a->tab[find_slot(a, src)];
	return e->open ? e->unauth : 0;
}

bool cp_admit_evict_first(const struct cp_admit *a, const struct cp_admit_src *src)
{
	return cp_admit_unauth_of(a, src) >= 2;
}

enum cp_admit_verdict cp_admit_decide(struct cp_admit *a, const struct cp_admit_src *src,
				      const struct cp_admit_limits *lim, enum cp_admit_reason *why)
{
	enum cp_admit_reason r;
	enum cp_admit_verdict v;
	uint32_t max = lim->max_conns ? lim->max_conns : 1;
	uint32_t unauth_cap = lim->reserve < max ? max - lim->reserve : 1;
	if (src->family && lim->unauth_per_source && cp_admit_unauth_of(a, src) >= lim->unauth_per_source) {
		r = CP_ADMIT_R_PER_SOURCE;
		v = CP_ADMIT_REFUSE;
	} else if (a->n_unauth >= unauth_cap) {
		r = CP_ADMIT_R_EVICT_UNAUTH; /* n_unauth >= 1: there is one to evict */
		v = CP_ADMIT_TAKE_EVICT;
	} else if (a->n_open >= max) {
		r = a->n_unauth ? CP_ADMIT_R_EVICT_FULL : CP_ADMIT_R_FULL;
		v = a->n_unauth ? CP_ADMIT_TAKE_EVICT : CP_ADMIT_REFUSE;
	} else {
		return CP_ADMIT_TAKE;
	}
	a->st[r]++;
	*why = r;
	return v;
}

int cp_admit_enter(struct cp_admit *a, const struct cp_admit_src *src)
{
	uint32_t i = find_slot(a, src);
	struct cp_admit_entry *e = &a->tab[i];
	if (!e->open) {
		if (a->used + 1 > (a->mask + 1) / 2)
			return -ENOSPC; /* keep probe runs short (invariant 2) */
		e->src = *src;
		a->used++;
	}
	e->open++;
	e->unauth++;
	a->n_open++;
	a->n_unauth++;
	return 0;
}

void cp_admit_authenticate(struct cp_admit *a, const struct cp_admit_src *src)
{
	struct cp_admit_entry *e = &a->tab[find_slot(a, src)];
	if (!e->open || !e->unauth)
		return; /* not counted: nothing to move */
	e->unauth--;
	a->n_unauth--;
}

/* Free slot i and shift back the entries of its probe run that would
 * become unreachable (invariant 3). */
static void slot_free(struct cp_admit *a, uint32_t i)
{
	uint32_t j = i;
	for (;;) {
		j = (j + 1) & a->mask;
		if (!a->tab[j].open)
			break;
		uint32_t home = src_hash(a, &a->tab[j].src) & a->mask;
		/* j may move to i when its home is not cyclically in (i, j]. */
		bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (in_range)
			continue;
		a->tab[i] = a->tab[j];
		i = j;
	}
	memset(&a->tab[i], 0, sizeof(a->tab[i]));
	a->used--;
}

void cp_admit_leave(struct cp_admit *a, const struct cp_admit_src *src, bool authed)
{
	uint32_t i = find_slot(a, src);
	struct cp_admit_entry *e = &a->tab[i];
	if (!e->open)
		return; /* never entered (refused before cp_admit_enter) */
	if (!authed && e->unauth) {
		e->unauth--;
		a->n_unauth--;
	}
	e->open--;
	a->n_open--;
	if (!e->open)
		slot_free(a, i);
}

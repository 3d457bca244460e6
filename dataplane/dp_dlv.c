/* dp_dlv.c - pending resolved-seed deliveries of one lcore (see dp_dlv.h).
 * Owning lcore only. */
#include "dp_dlv.h"
#include "dp_index.h"

#include <errno.h>
#include <string.h>

static uint32_t buckets_for(uint32_t capacity)
{
	uint32_t b = dp_pow2_at_least(2u * capacity);
	return b < 2 ? 2 : b;
}

size_t dp_dlv_mem_size(uint32_t capacity)
{
	return dp_align64((size_t)capacity * sizeof(struct dp_dlv_entry)) +
	       dp_align64((size_t)buckets_for(capacity) * sizeof(uint32_t));
}

int dp_dlv_init(struct dp_dlv *d, void *mem, size_t len, const struct dp_dlv_cfg *cfg)
{
	if (!d || !mem || !cfg || !cfg->capacity || cfg->capacity > DP_DLV_MAX || !cfg->retry_ns ||
	    cfg->retries > 255 || ((uintptr_t)mem & 63))
		return -EINVAL;
	if (len < dp_dlv_mem_size(cfg->capacity))
		return -ENOSPC;
	memset(d, 0, sizeof(*d));
	d->cfg = *cfg;
	d->e = mem;
	d->idx = (uint32_t *)((uint8_t *)mem + dp_align64((size_t)cfg->capacity * sizeof(struct dp_dlv_entry)));
	d->mask = buckets_for(cfg->capacity) - 1;
	memset(d->e, 0, (size_t)cfg->capacity * sizeof(struct dp_dlv_entry));
	memset(d->idx, 0xFF, ((size_t)d->mask + 1) * sizeof(uint32_t));
	for (uint32_t i = 0; i < cfg->capacity; i++)
		d->e[i].next = i + 1 < cfg->capacity ? i + 1 : DP_DLV_NONE;
	d->free_head = 0;
	d->head = d->tail = DP_DLV_NONE;
	return 0;
}

/* A key's hash: one multiply by 2^64 / phi (Fibonacci hashing), its high
 * half. The keys of a stream are consecutive sequences, which it spreads
 * evenly; the index takes its low bits (the product's bits 32 and up). */
static inline uint32_t key_hash(uint16_t stream, uint32_t seq)
{
	return (uint32_t)((((uint64_t)stream << 32 | seq) * 0x9E3779B97F4A7C15ull) >> 32);
}

/* Bucket holding key, or the empty bucket where it would go. */
static uint32_t find_bucket(const struct dp_dlv *d, uint16_t stream, uint32_t seq)
{
	uint32_t b = key_hash(stream, seq) & d->mask;
	for (;;) {
		uint32_t i = d->idx[b];
		if (i == DP_DLV_NONE || (d->e[i].stream == stream && d->e[i].token_seq == seq))
			return b;
		b = (b + 1) & d->mask;
	}
}

/* Remove bucket b's entry from the index (backward-shift deletion keeps
 * every probe chain unbroken without tombstones). */
static inline __attribute__((always_inline)) void index_remove(struct dp_dlv *d, uint32_t b)
{
	uint32_t hole = b;
	for (uint32_t j = (b + 1) & d->mask;; j = (j + 1) & d->mask) {
		uint32_t i = d->idx[j];
		if (i == DP_DLV_NONE)
			break;
		uint32_t home = key_hash(d->e[i].stream, d->e[i].token_seq) & d->mask;
		/* move i back into the hole unless its home lies in (hole, j] cyclically */
		bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
		if (!stays) {
			d->idx[hole] = i;
			hole = j;
		}
	}
	d->idx[hole] = DP_DLV_NONE;
}

static void list_unlink(struct dp_dlv *d, uint32_t i)
{
	struct dp_dlv_entry *x = &d->e[i];
	if (x->prev != DP_DLV_NONE)
		d->e[x->prev].next = x->next;
	else
		d->head = x->next;
	if (x->next != DP_DLV_NONE)
		d->e[x->next].prev = x->prev;
	else
		d->tail = x->prev;
	x->prev = x->next = DP_DLV_NONE;
}

static void list_append(struct dp_dlv *d, uint32_t i)
{
	struct dp_dlv_entry *x = &d->e[i];
	x->prev = d->tail;
	x->next = DP_DLV_NONE;
	if (d->tail != DP_DLV_NONE)
		d->e[d->tail].next = i;
	else
		d->head = i;
	d->tail = i;
}

/* Take entry i, which index bucket b holds, out entirely (index, due
 * list) and free it. */
static inline __attribute__((always_inline)) void entry_release_at(struct dp_dlv *d, uint32_t i, uint32_t b)
{
	struct dp_dlv_entry *x = &d->e[i];
	index_remove(d, b);
	list_unlink(d, i);
	x->used = false;
	x->next = d->free_head;
	d->free_head = i;
	d->n--;
}

/* The same, its bucket looked up. */
static void entry_release(struct dp_dlv *d, uint32_t i)
{
	entry_release_at(d, i, find_bucket(d, d->e[i].stream, d->e[i].token_seq));
}

enum dp_dlv_track_result dp_dlv_track(struct dp_dlv *d, uint16_t stream, uint32_t token_seq, uint16_t layer,
				      uint32_t slot, uint64_t fingerprint, uint64_t now_ns,
				      struct dp_dlv_entry *evicted)
{
	enum dp_dlv_track_result r = DP_DLV_NEW;
	uint32_t b = find_bucket(d, stream, token_seq);
	uint32_t i = d->idx[b];
	if (i != DP_DLV_NONE) {
		r = DP_DLV_SUPERSEDED;
		list_unlink(d, i);
	} else {
		if (d->free_head == DP_DLV_NONE) {
			uint32_t old = d->head; /* full: n == capacity, so the list is not empty */
			if (evicted)
				*evicted = d->e[old];
			entry_release(d, old);
			r = DP_DLV_EVICTED;
			b = find_bucket(d, stream, token_seq); /* the removal may have shifted buckets */
		}
		i = d->free_head;
		d->free_head = d->e[i].next;
		d->idx[b] = i;
		d->n++;
	}
	struct dp_dlv_entry *x = &d->e[i];
	x->stream = stream;
	x->token_seq = token_seq;
	x->layer = layer;
	x->slot = slot;
	x->fingerprint = fingerprint;
	x->tries = 0;
	x->due_ns = now_ns + d->cfg.retry_ns;
	x->used = true;
	list_append(d, i);
	return r;
}

bool dp_dlv_ack(struct dp_dlv *d, uint16_t stream, uint32_t token_seq)
{
	uint32_t b = find_bucket(d, stream, token_seq), i = d->idx[b];
	if (i == DP_DLV_NONE)
		return false;
	entry_release_at(d, i, b);
	return true;
}

unsigned dp_dlv_ack_bits(struct dp_dlv *d, uint16_t stream, uint32_t base, uint64_t bits, unsigned *misses,
			 unsigned max_misses)
{
	unsigned acked = 0, m = *misses;
	/* the named sequences, lowest first, one step per set bit */
	for (uint64_t left = bits; left && m < max_misses; left &= left - 1) {
		const uint32_t seq = base + (uint32_t)__builtin_ctzll(left);
		const uint32_t b = find_bucket(d, stream, seq), i = d->idx[b];
		if (i == DP_DLV_NONE) {
			m++;
			continue;
		}
		entry_release_at(d, i, b);
		acked++;
	}
	*misses = m;
	return acked;
}

uint32_t dp_dlv_due(const struct dp_dlv *d, uint64_t now_ns)
{
	return d->head != DP_DLV_NONE && d->e[d->head].due_ns <= now_ns ? d->head : DP_DLV_NONE;
}

void dp_dlv_rearm(struct dp_dlv *d, uint32_t i, uint64_t now_ns)
{
	struct dp_dlv_entry *x = &d->e[i];
	if (x->tries < 255)
		x->tries++;
	x->due_ns = now_ns + d->cfg.retry_ns;
	list_unlink(d, i);
	list_append(d, i);
}

bool dp_dlv_window(struct dp_dlv *d, uint16_t stream, uint32_t base)
{
	struct dp_dlv_win *w = &d->win[stream & (DP_DLV_WINDOWS - 1)];
	if (w->known && w->stream == stream && w->base == base)
		return false;
	w->stream = stream;
	w->base = base;
	w->known = true;
	return true;
}

void dp_dlv_window_forget(struct dp_dlv *d, uint16_t stream)
{
	struct dp_dlv_win *w = &d->win[stream & (DP_DLV_WINDOWS - 1)];
	if (w->stream == stream)
		w->known = false;
}

enum dp_dlv_place dp_dlv_window_place(const struct dp_dlv *d, uint16_t stream, uint32_t seq)
{
	const struct dp_dlv_win *w = &d->win[stream & (DP_DLV_WINDOWS - 1)];
	if (!w->known || w->stream != stream)
		return DP_DLV_IN_WINDOW;
	int32_t dist = (int32_t)(seq - w->base);
	if (dist < 0)
		return DP_DLV_BELOW_BASE;
	return (uint32_t)dist < DP_DLV_WINDOW_SPAN ? DP_DLV_IN_WINDOW : DP_DLV_BEYOND;
}

void dp_dlv_wait(struct dp_dlv *d, uint32_t i, uint64_t now_ns)
{
	struct dp_dlv_entry *x = &d->e[i];
	x->due_ns = now_ns + d->cfg.retry_ns;
	list_unlink(d, i);
	list_append(d, i);
}

enum dp_dlv_step dp_dlv_step(struct dp_dlv *d, uint64_t now_ns, uint32_t *i)
{
	uint32_t k = dp_dlv_due(d, now_ns);
	*i = k;
	if (k == DP_DLV_NONE)
		return DP_DLV_STEP_NONE;
	switch (dp_dlv_window_place(d, d->e[k].stream, d->e[k].token_seq)) {
	case DP_DLV_BEYOND:
		/* No ACK can come before the consumer's window moves: a resend
		 * now would only use one up (wire.md 2.1). */
		dp_dlv_wait(d, k, now_ns);
		return DP_DLV_STEP_WAITED;
	case DP_DLV_IN_WINDOW:
	case DP_DLV_BELOW_BASE: /* not held: a base never retires a delivery (dp_dlv.h) */
		break;
	}
	return dp_dlv_exhausted(d, k) ? DP_DLV_STEP_EXHAUSTED : DP_DLV_STEP_RESEND;
}

void dp_dlv_drop(struct dp_dlv *d, uint32_t i)
{
	if (i < d->cfg.capacity && d->e[i].used)
		entry_release(d, i);
}

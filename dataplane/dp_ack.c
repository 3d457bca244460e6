/* dp_ack.c - per-sender ACK bookkeeping (see dp_ack.h). Owning lcore only. */
#include "dp_ack.h"

#include <errno.h>
#include <string.h>

static uint32_t sets_for(uint32_t peers)
{
	uint32_t s = dp_pow2_at_least((peers + DP_ACK_WAYS - 1) / DP_ACK_WAYS);
	return s ? s : 1;
}

size_t dp_ack_mem_size(uint32_t peers)
{
	size_t n = (size_t)sets_for(peers) * DP_ACK_WAYS;
	return dp_align64(n * sizeof(struct dp_ack_peer)) + dp_align64(n * sizeof(uint32_t));
}

int dp_ack_init(struct dp_ack *a, void *mem, size_t len, uint32_t peers)
{
	if (!peers || peers > (1u << 20) || ((uintptr_t)mem & 63))
		return -EINVAL;
	if (len < dp_ack_mem_size(peers))
		return -ENOSPC;
	memset(a, 0, sizeof(*a));
	a->n_sets = sets_for(peers);
	size_t n = (size_t)a->n_sets * DP_ACK_WAYS;
	a->p = mem;
	a->dirty = (uint32_t *)((uint8_t *)mem + dp_align64(n * sizeof(struct dp_ack_peer)));
	memset(a->p, 0, n * sizeof(struct dp_ack_peer));
	return 0;
}

struct dp_ack_peer *dp_ack_peer_get(struct dp_ack *a, const struct dp_peer *p, const struct dp_route *rt,
				    uint64_t now, bool *is_new)
{
	struct dp_ack_peer *set = &a->p[(size_t)(dp_peer_hash(p, 0) & (a->n_sets - 1)) * DP_ACK_WAYS];
	struct dp_ack_peer *victim = NULL;
	*is_new = false;
	for (unsigned w = 0; w < DP_ACK_WAYS; w++) {
		struct dp_ack_peer *e = &set[w];
		if (e->used && dp_peer_eq(&e->peer, p)) {
			e->route = *rt;
			e->last_ns = now;
			return e;
		}
		if (!e->used) {
			if (!victim || victim->used)
				victim = e;
		} else if (e->n == 0 && (!victim || (victim->used && e->last_ns < victim->last_ns))) {
			victim = e;
		}
	}
	if (!victim)
		return NULL;
	if (victim->used)
		a->evicted++;
	memset(victim, 0, offsetof(struct dp_ack_peer, pend));
	victim->used = true;
	victim->peer = *p;
	victim->route = *rt;
	victim->last_ns = now;
	*is_new = true;
	return victim;
}

bool dp_ack_note(struct dp_ack *a, struct dp_ack_peer *pp, uint16_t stream, uint32_t seq)
{
	if (pp->n >= DP_ACK_PEND)
		return true; /* the caller ignored the previous "full": refuse, keep the bound */
	pp->pend[pp->n].stream = stream;
	pp->pend[pp->n].seq = seq;
	pp->n++;
	if (!pp->dirty) {
		pp->dirty = true;
		a->dirty[a->n_dirty++] = (uint32_t)(pp - a->p);
	}
	return pp->n >= DP_ACK_PEND;
}

static bool pend_less(const struct dp_ack_pend *x, const struct dp_ack_pend *y)
{
	return x->stream != y->stream ? x->stream < y->stream : x->seq < y->seq;
}

unsigned dp_ack_take(struct dp_ack_peer *pp, struct fg_ack_entry *out, unsigned max)
{
	/* Insertion sort: at most DP_ACK_PEND elements, usually already in order. */
	for (unsigned i = 1; i < pp->n; i++) {
		struct dp_ack_pend v = pp->pend[i];
		unsigned j = i;
		while (j > 0 && pend_less(&v, &pp->pend[j - 1])) {
			pp->pend[j] = pp->pend[j - 1];
			j--;
		}
		pp->pend[j] = v;
	}
	unsigned k = 0;
	for (unsigned i = 0; i < pp->n;) {
		if (k == max)
			break;
		struct fg_ack_entry *e = &out[k++];
		e->stream_id = pp->pend[i].stream;
		e->base_seq = pp->pend[i].seq;
		e->bitmap_hi = e->bitmap_lo = 0;
		while (i < pp->n && pp->pend[i].stream == e->stream_id && pp->pend[i].seq - e->base_seq < 64u) {
			uint32_t d = pp->pend[i].seq - e->base_seq;
			if (d < 32)
				e->bitmap_lo |= 1u << d;
			else
				e->bitmap_hi |= 1u << (d - 32);
			i++;
		}
	}
	pp->n = 0;
	return k;
}

void dp_ack_dirty_reset(struct dp_ack *a)
{
	for (uint32_t i = 0; i < a->n_dirty; i++)
		a->p[a->dirty[i]].dirty = false;
	a->n_dirty = 0;
}

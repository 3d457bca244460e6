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
	return dp_align64(n * sizeof(struct dp_ack_peer)) + dp_align64(n * sizeof(struct dp_ack_peer *));
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
	a->dirty = (struct dp_ack_peer **)((uint8_t *)mem + dp_align64(n * sizeof(struct dp_ack_peer)));
	memset(a->p, 0, n * sizeof(struct dp_ack_peer));
	return 0;
}

struct dp_ack_peer *dp_ack_peer_get(struct dp_ack *a, const struct dp_peer *p, uint32_t hash,
				    const struct dp_route *rt, uint64_t now, bool *is_new)
{
	struct dp_ack_peer *set = &a->p[(size_t)(hash & (a->n_sets - 1)) * DP_ACK_WAYS];
	struct dp_ack_peer *victim = NULL;
	*is_new = false;
	for (unsigned w = 0; w < DP_ACK_WAYS; w++) {
		struct dp_ack_peer *e = &set[w];
		if (e->used && dp_ack_peer_is(e, p, hash)) {
			dp_ack_peer_route(e, rt);
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
	victim->hash = hash;
	victim->peer = *p;
	victim->route = *rt;
	victim->last_ns = now;
	*is_new = true;
	return victim;
}

/* The order of entries: by stream, then sequence. */
static inline uint64_t pend_key(const struct dp_ack_pend *p) { return (uint64_t)p->stream << 32 | p->seq; }

/* Two sorted runs (one pair below the one before it: pp->turn, not
 * pp->tangled) merged, the first run from a copy; else an insertion sort
 * (at most DP_ACK_PEND elements). */
void dp_ack_sort(struct dp_ack_peer *pp)
{
	const bool runs = !pp->tangled;
	pp->unsorted = false;
	pp->tangled = false;
	const unsigned n = pp->n, t = pp->turn;
	struct dp_ack_pend *e = pp->pend;
	if (runs && t && t < n) {
		/* e[0..t) and e[t..n) each sorted (a sender's streams in
		 * rotation wrapping around, or frames of one peer that came
		 * through two lcores): the merge writes at k <= j, behind what
		 * it has yet to read of the second run */
		struct dp_ack_pend a[DP_ACK_PEND];
		for (unsigned i = 0; i < t; i++)
			a[i] = e[i];
		unsigned i = 0, j = t, k = 0;
		while (i < t && j < n)
			e[k++] = pend_key(&e[j]) < pend_key(&a[i]) ? e[j++] : a[i++];
		while (i < t)
			e[k++] = a[i++];
		return;
	}
	for (unsigned i = 1; i < n; i++) {
		struct dp_ack_pend v = e[i];
		uint64_t kv = pend_key(&v);
		unsigned j = i;
		while (j > 0 && kv < pend_key(&e[j - 1])) {
			e[j] = e[j - 1];
			j--;
		}
		e[j] = v;
	}
}

unsigned dp_ack_take(struct dp_ack_peer *pp, struct fg_ack_entry *out, unsigned max)
{
	if (pp->unsorted)
		dp_ack_sort(pp);
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

/* dp_ack_encode when the entries may need several datagrams: through an
 * entry array and fg_ack_build's splitting. Not inlined: keeps the array
 * off the common path's stack frame. */
static __attribute__((noinline)) int encode_split(struct dp_ack_peer *pp, uint32_t mtu, uint16_t frame_id,
						  uint8_t *buf, size_t cap, uint32_t *lens, size_t max_dgrams)
{
	struct fg_ack_entry e[DP_ACK_PEND];
	unsigned k = dp_ack_take(pp, e, DP_ACK_PEND);
	return fg_ack_build(e, k, mtu, frame_id, buf, cap, lens, max_dgrams);
}

int dp_ack_encode(struct dp_ack_peer *pp, uint32_t mtu, uint16_t frame_id, uint8_t *buf, size_t cap,
		  uint32_t *lens, size_t max_dgrams)
{
	unsigned n = pp->n;
	if (!n)
		return 0;
	/* n pairs make at most n entries: if n fit one datagram, the entries do */
	uint32_t most = FG_ACK_DGRAM_HEAD_LEN + n * FG_ACK_ENTRY_LEN;
	if (mtu < most || cap < most || !max_dgrams)
		return encode_split(pp, mtu, frame_id, buf, cap, lens, max_dgrams);
	lens[0] = dp_ack_encode_one(pp, frame_id, buf);
	return 1;
}

void dp_ack_dirty_reset(struct dp_ack *a)
{
	for (uint32_t i = 0; i < a->n_dirty; i++)
		a->dirty[i]->dirty = false;
	a->n_dirty = 0;
}

/* dp_ack.h - per-sender ACK bookkeeping of one lcore (wire.md 2.1), pure C.
 *
 * Owns: the table of UDP peers seen by one lcore (set-associative, bounded),
 * each with the (stream_id, sequence) pairs of frames fully received since
 * its last ACK, and the packing of those pairs into 14-byte ACK entries
 * (base_seq + 64-bit bitmap) written straight into ACK datagrams
 * (dp_ack_encode), which the caller sends every ack_interval_ms and on
 * resolution.
 *
 * Who may call: the owning lcore only. No allocation after init. */
#ifndef DP_ACK_H
#define DP_ACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "fg/common.h"
#include "fg/wire.h"
#include "dp_pkt.h"
#include "dp_reasm.h"

#define DP_ACK_WAYS 8u
#define DP_ACK_PEND 64u /* pending pairs per peer; a full list is flushed at once */

struct dp_ack_pend {
	uint16_t stream;
	uint32_t seq;
};

struct dp_tx_tmpl; /* dp_io.h */

struct dp_ack_peer {
	struct dp_peer peer;
	struct dp_route route; /* the latest frame's (dp_ack_peer_route) */
	bool used;
	bool dirty;        /* on the dirty list */
	bool unsorted;     /* a pending pair below the one before it: sort before packing */
	bool tangled;      /* ... and more than one such pair */
	uint16_t turn;     /* while unsorted and not tangled: that pair's index */
	uint16_t n;        /* pending pairs */
	uint32_t hash;     /* dp_peer_hash(&peer, 0) */
	uint64_t last_ns;  /* last frame seen from this peer */
	uint64_t peer_msg_ns; /* last FG_BM_PEER about it (caller's field) */
	/* the sender's (dp_tx.c): the header template of ACKs to peer over
	 * route while that entry stays the build stamped tx_stamp; NULL
	 * (a new entry, another route): none */
	const struct dp_tx_tmpl *tx;
	uint64_t tx_stamp;
	struct dp_ack_pend pend[DP_ACK_PEND];
};

struct dp_ack {
	struct dp_ack_peer *p;  /* [n_sets * DP_ACK_WAYS] */
	struct dp_ack_peer **dirty; /* the peers noted since the last flush (their `dirty` set) */
	uint32_t n_sets, n_dirty;
	uint64_t evicted;
};

/* Memory for a table of at least `peers` entries (rounded up to a power of
 * two number of sets). */
size_t dp_ack_mem_size(uint32_t peers);
/* 0, -EINVAL or -ENOSPC. mem 64-byte aligned. */
FG_MUST_CHECK int dp_ack_init(struct dp_ack *a, void *mem, size_t len, uint32_t peers);

/* Find or insert a peer (refreshing its route and last_ns); hash is
 * dp_peer_hash(p, 0), which the caller usually has already. A new peer takes
 * a free way, else the least recently seen way with nothing pending. NULL
 * when every way of the set has pending pairs: flush, then retry. *is_new is
 * set when the entry was (re)created. */
struct dp_ack_peer *dp_ack_peer_get(struct dp_ack *a, const struct dp_peer *p, uint32_t hash,
				    const struct dp_route *rt, uint64_t now_ns, bool *is_new);

/* Whether routes a and b are the same: their 31 bytes, as two 16-byte
 * vectors where the target has them, else a word at a time. */
static inline bool dp_ack_route_is(const struct dp_route *a, const struct dp_route *b)
{
	_Static_assert(offsetof(struct dp_route, local) + 16 == 31, "dp_route's bytes are [0, 31) without padding");
	const uint8_t *x = (const uint8_t *)a, *y = (const uint8_t *)b;
#ifdef __SSE2__
	__m128i e = _mm_and_si128(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)x), _mm_loadu_si128((const __m128i *)y)),
				  _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(x + 15)),
						 _mm_loadu_si128((const __m128i *)(y + 15))));
	return _mm_movemask_epi8(e) == 0xFFFF;
#else
	uint64_t d = (dp_pkt_ld64(x) ^ dp_pkt_ld64(y)) | (dp_pkt_ld64(x + 8) ^ dp_pkt_ld64(y + 8)) |
		     (dp_pkt_ld64(x + 16) ^ dp_pkt_ld64(y + 16)) | (dp_pkt_ld64(x + 23) ^ dp_pkt_ld64(y + 23));
	return !d;
#endif
}

/* The route back to e's peer is now rt: taken when it differs, which
 * forgets the template built for the old one. */
static inline void dp_ack_peer_route(struct dp_ack_peer *e, const struct dp_route *rt)
{
	if (__builtin_expect(!dp_ack_route_is(&e->route, rt), 0)) {
		e->route = *rt;
		e->tx = NULL;
	}
}

/* Whether entry e is peer p (hash dp_peer_hash(p, 0)): the hash, then
 * the address (two words), family and port. */
static inline bool dp_ack_peer_is(const struct dp_ack_peer *e, const struct dp_peer *p, uint32_t hash)
{
	uint64_t a0, b0, a1, b1;
	memcpy(&a0, e->peer.addr, 8);
	memcpy(&b0, p->addr, 8);
	memcpy(&a1, e->peer.addr + 8, 8);
	memcpy(&b1, p->addr + 8, 8);
	return e->hash == hash && !((a0 ^ b0) | (a1 ^ b1)) && e->peer.family == p->family && e->peer.port == p->port;
}

/* The entry of peer p (hash dp_peer_hash(p, 0)) if it has one, else
 * NULL: dp_ack_peer_get's hit, inline, without its route and time
 * refresh. */
static inline struct dp_ack_peer *dp_ack_peer_find(struct dp_ack *a, const struct dp_peer *p, uint32_t hash)
{
	struct dp_ack_peer *e = &a->p[(size_t)(hash & (a->n_sets - 1)) * DP_ACK_WAYS];
	for (unsigned w = 0; w < DP_ACK_WAYS; w++, e++)
		if (e->used && dp_ack_peer_is(e, p, hash))
			return e;
	return NULL;
}

/* Record that frame (stream, seq) from pp was fully received. Returns true
 * when pp's list is now full: take its entries before noting more. Inline:
 * it runs for every frame received. */
static inline bool dp_ack_note(struct dp_ack *a, struct dp_ack_peer *pp, uint16_t stream, uint32_t seq)
{
	const unsigned n = pp->n;
	if (n >= DP_ACK_PEND)
		return true; /* the caller ignored the previous "full": refuse, keep the bound */
	/* pairs usually come in order (a sender's sequences rise): packing
	 * sorts only when one did not */
	if (n) {
		const struct dp_ack_pend *last = &pp->pend[n - 1];
		if (stream < last->stream || (stream == last->stream && seq < last->seq)) {
			if (pp->unsorted)
				pp->tangled = true;
			pp->unsorted = true;
			pp->turn = (uint16_t)n;
		}
	}
	pp->pend[n] = (struct dp_ack_pend){.stream = stream, .seq = seq};
	pp->n = (uint16_t)(n + 1);
	if (!pp->dirty) {
		pp->dirty = true;
		a->dirty[a->n_dirty++] = pp;
	}
	return n + 1 >= DP_ACK_PEND;
}

/* Pack pp's pending pairs into entries (sorted by stream then sequence;
 * each entry covers base_seq .. base_seq + 63), clear them, and return the
 * entry count (<= max; max >= DP_ACK_PEND always suffices). Does not touch
 * the dirty list (see dp_ack_dirty_reset). */
unsigned dp_ack_take(struct dp_ack_peer *pp, struct fg_ack_entry *out, unsigned max);

/* Datagrams and bytes that dp_ack_encode may write for one peer at any mtu
 * fg_ack_build accepts: each datagram carries at least one entry, and
 * there are never more entries than pending pairs. */
#define DP_ACK_DGRAMS_MAX DP_ACK_PEND
#define DP_ACK_BUF_MAX (DP_ACK_PEND * (FG_ACK_DGRAM_HEAD_LEN + FG_ACK_ENTRY_LEN))

/* Sort pp's pending pairs by stream, then sequence (dp_ack_note saw a pair
 * out of order: pp->unsorted): a merge when they are two sorted runs (one
 * pair out of order, pp->turn), else an insertion sort. */
void dp_ack_sort(struct dp_ack_peer *pp);

/* dp_ack_encode when every entry fits one datagram (pp->n > 0 and
 * FG_ACK_DGRAM_HEAD_LEN + pp->n * FG_ACK_ENTRY_LEN <= the mtu and the room
 * at buf: n pairs make at most n entries): that datagram, frame id
 * frame_id, into buf, the entries encoded from the sorted pairs in place;
 * the pairs cleared. Returns its length. Inline: the sender writes it
 * straight into the packet. */
static inline uint32_t dp_ack_encode_one(struct dp_ack_peer *pp, uint16_t frame_id, uint8_t *buf)
{
	if (pp->unsorted)
		dp_ack_sort(pp);
	/* dp_ack_take's packing: an entry starts at the lowest pair left and
	 * takes the pairs of its stream within base .. base + 63 */
	uint8_t *q = buf + FG_ACK_DGRAM_HEAD_LEN;
	const struct dp_ack_pend *p = pp->pend, *end = p + pp->n;
	do {
		const uint16_t stream = p->stream;
		const uint32_t base = p->seq;
		uint64_t bits = 1; /* base itself */
		while (++p < end && p->stream == stream && p->seq - base < 64u)
			bits |= 1ull << (p->seq - base);
		fg_ack_entry_put(q, stream, base, (uint32_t)(bits >> 32), (uint32_t)bits);
		q += FG_ACK_ENTRY_LEN;
	} while (p < end);
	uint32_t len = (uint32_t)(q - buf);
	fg_ack_dgram_head_put(buf, frame_id, (len - FG_ACK_DGRAM_HEAD_LEN) / FG_ACK_ENTRY_LEN);
	pp->n = 0;
	return len;
}

/* Write pp's pending pairs as ACK datagrams (fragment header + ACK frame)
 * back to back into buf[0..cap), their lengths into lens[0..max_dgrams),
 * and clear them: byte for byte what fg_ack_build writes for dp_ack_take's
 * entries, the datagrams taking frame ids frame_id, frame_id + 1, ...
 * When every entry fits one datagram (always at the default MTU: 64
 * entries need 910 bytes) the entries are encoded from the sorted pairs
 * in place, with no entry array and no splitting. Returns the datagram
 * count (0: nothing pending) or fg_ack_build's error (-FG_R_NOSPACE,
 * -FG_R_UNENCODABLE), the pairs then dropped as dp_ack_take drops them.
 * buf and lens are the caller's; DP_ACK_BUF_MAX and DP_ACK_DGRAMS_MAX
 * always suffice. Does not touch the dirty list. */
FG_MUST_CHECK int dp_ack_encode(struct dp_ack_peer *pp, uint32_t mtu, uint16_t frame_id, uint8_t *buf, size_t cap,
				uint32_t *lens, size_t max_dgrams);

/* After taking every dirty peer: empty the dirty list. */
void dp_ack_dirty_reset(struct dp_ack *a);

#endif

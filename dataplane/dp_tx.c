/* dp_tx.c - an lcore's transmit side: the TX buffer of struct dp_lcore
 * (lc->tx, flushed once per loop iteration and when full), and building
 * UDP datagrams (one, a frame split into fragments at C, or a status
 * frame encoded in place) into mbufs; a resolved seed's fragments by
 * reference to its slot where the port takes multi-segment TX (struct
 * dp_tx_ref, frags_ref).
 *
 * A datagram's Ethernet/IP/UDP header is written from a template built
 * once per (route, destination) and kept in a small per-lcore cache
 * (dp_pkt.h, struct dp_pkt_tmpl): a copy and a few patched fields per
 * datagram, the same bytes as building it field by field.
 *
 * TX back-pressure lives here too (dp_tx_held, dp_tx_send): the poll loop
 * asks whether RX pauses and hands the buffer over once per iteration.
 *
 * Who may call: the lcore that owns `lc`, from its poll loop (dp_lcore.c)
 * and the per-packet code (dp_rx.c, dp_neigh.c, dp_reply.c, dp_deliver.c).
 * Every mbuf queued here belongs to the TX buffer until dp_tx_flush sends
 * it, or dp_tx_drop (a hold that lasted [port] tx_hold_ms, shutdown) or a full
 * buffer frees and counts it (drop_tx_full). No heap, no locks, no logs. */
#include <string.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "dp_burst_guard.h"
#include "dp_neigh.h"
#include "dp_tx.h"

unsigned dp_tx_flush(struct dp_lcore *lc)
{
	if (!lc->n_tx)
		return 0;
	unsigned sent = 0;
	bool guarded = dp_burst_guarded(); /* net_memif: see dp_burst_guard.h */
	if (guarded)
		dp_burst_enter(lc->idx);
	for (int tries = 0; sent < lc->n_tx && tries < 4; tries++)
		sent += rte_eth_tx_burst(dp_g.port, lc->txq, lc->tx + sent, (uint16_t)(lc->n_tx - sent));
	if (guarded)
		dp_burst_leave(lc->idx);
	if (!sent)
		return lc->n_tx;
	/* the bytes summed as the packets were queued; the sent ones' own
	 * only when the queue took part of the buffer */
	uint64_t bytes = lc->tx_bytes;
	if (unlikely(sent < lc->n_tx)) {
		bytes = 0;
		for (unsigned i = 0; i < sent; i++)
			bytes += lc->tx[i]->pkt_len;
	}
	lc->tx_bytes -= bytes;
	dp_lc_count(lc, FG_C_TX_PKTS, sent);
	dp_lc_count(lc, FG_C_TX_BYTES, bytes);
	/* what the queue did not take waits, in order, for the next flush */
	if (sent < lc->n_tx)
		memmove(lc->tx, lc->tx + sent, (lc->n_tx - sent) * sizeof(lc->tx[0]));
	lc->n_tx -= sent;
	return lc->n_tx;
}

/* TX back-pressure: while packets the TX queue refused wait in the TX
 * buffer, the lcore receives nothing. What arrives waits in the device's
 * RX ring, or is dropped there, before any work was spent on it, and its
 * sender resends what was never ACKed; dropping at TX instead threw away
 * resolved seeds, whose only copy (the slot) a fast table reclaims before
 * the 200 ms resend. A hold lasts at most [port] tx_hold_ms (a peer that
 * stopped reading must not stop the lcore): then the waiting packets are
 * dropped, and for DP_TX_NOHOLD_TIMES as long every refused packet is (no
 * new hold while the queue stays stuck). tx_hold_ms = 0: no hold, refused
 * packets are dropped at once. */
static uint64_t hold_ns(void) { return (uint64_t)dp_g.prof.tx_hold_ms * 1000000u; }

bool dp_tx_held(struct dp_lcore *lc, uint64_t now)
{
	if (!lc->n_tx)
		return false;
	if (now - lc->tx_held_ns < hold_ns())
		return true;
	dp_tx_drop(lc);
	dp_lc_xcount(lc, DP_X_TX_HOLD_EXPIRED);
	lc->tx_nohold_until = now + DP_TX_NOHOLD_TIMES * hold_ns();
	return false;
}

void dp_tx_send(struct dp_lcore *lc, bool held, uint64_t now)
{
	if (!dp_tx_flush(lc) || held)
		return;
	if (!hold_ns() || now < lc->tx_nohold_until) {
		dp_tx_drop(lc);
	} else {
		lc->tx_held_ns = now;
		dp_lc_xcount(lc, DP_X_TX_HELD);
	}
}

void dp_tx_drop(struct dp_lcore *lc)
{
	if (!lc->n_tx)
		return;
	rte_pktmbuf_free_bulk(lc->tx, lc->n_tx);
	dp_lc_count(lc, FG_C_DROP_TX_FULL, lc->n_tx);
	lc->n_tx = 0;
	lc->tx_bytes = 0;
}

void dp_tx_queue(struct dp_lcore *lc, struct rte_mbuf *m)
{
	if (lc->n_tx == DP_TX_MAX && dp_tx_flush(lc) == DP_TX_MAX) {
		/* the device took nothing and the buffer is full */
		rte_pktmbuf_free(m);
		dp_lc_count(lc, FG_C_DROP_TX_FULL, 1);
		return;
	}
	lc->tx[lc->n_tx++] = m;
	lc->tx_bytes += m->pkt_len;
}

/* A datagram's mbuf taken and not sent: back to the pool. */
static __attribute__((noinline, cold)) void tx_unused(struct rte_mbuf *m) { rte_pktmbuf_free(m); }

/* The next TX mbuf, raw (tx_mbuf_init sets what rte_pktmbuf_alloc's
 * reset would; NULL when the pool is empty). The lcore keeps up to
 * DP_TX_STASH raw mbufs taken from the pool ahead of use, their header
 * lines and first data line prefetched for writing when taken: a freed
 * mbuf was last touched by whoever sent it (on a zero-copy memif port, the
 * peer's core), and building a datagram into it stalled on those lines
 * (bench/cap's zero-copy profile shows where). The stash is a ring used
 * oldest first (lc->stash_head) and refilled by half a ring at a time
 * behind its newest (one refill per DP_TX_STASH / 2 datagrams), so the
 * ones used next were asked for at least DP_TX_STASH / 2 datagrams
 * earlier. A refill takes the mbufs straight from the top of the lcore's
 * pool cache when it holds enough, as rte_mempool_generic_get would, the
 * newest first (a stats or debug build of the mempool library neither
 * counts these gets nor checks their cookies), in the one loop that
 * prefetches them; else from the pool (tx_stash_fill). tx_stash_put: obj as the stash's entry i (mod
 * DP_TX_STASH), its lines prefetched (off: its first data byte). */
static inline __attribute__((always_inline)) void tx_stash_put(struct dp_lcore *lc, unsigned i, void *obj,
								 uint32_t off)
{
	uint8_t *m = obj;
	rte_prefetch0_write(m);
	rte_prefetch0_write(m + RTE_CACHE_LINE_SIZE);
	rte_prefetch0_write(m + off);
	lc->tx_stash[i & (DP_TX_STASH - 1)] = obj;
}

/* tx_mbuf_stash's refill when the lcore's pool cache holds too few: from
 * the pool itself (rte_mempool_get_bulk). Returns the count then held (n
 * when the pool had too few). */
static __attribute__((noinline)) unsigned tx_stash_fill(struct dp_lcore *lc, unsigned n, uint32_t off)
{
	void *fresh[DP_TX_STASH];
	const unsigned k = DP_TX_STASH - n;
	if (rte_mempool_get_bulk(dp_g.mbufs, fresh, k) != 0)
		return n;
	for (unsigned i = 0; i < k; i++)
		tx_stash_put(lc, lc->stash_head + n + i, fresh[i], off);
	return DP_TX_STASH;
}

static inline __attribute__((always_inline)) struct rte_mbuf *tx_mbuf_stash(struct dp_lcore *lc)
{
	_Static_assert((DP_TX_STASH & (DP_TX_STASH - 1)) == 0, "the stash ring's index is masked");
	unsigned n = lc->n_stash;
	if (unlikely(n <= DP_TX_STASH / 2)) {
		struct rte_mempool *mp = dp_g.mbufs;
		struct rte_mempool_cache *c = rte_mempool_default_cache(mp, rte_lcore_id());
		const unsigned k = DP_TX_STASH - n;
		const uint32_t off = (uint32_t)sizeof(struct rte_mbuf) + rte_pktmbuf_priv_size(mp) +
				     RTE_PKTMBUF_HEADROOM;
		if (likely(c && c->len >= k)) {
			/* rte_mempool_generic_get's hit: the cache's newest first */
			void **top = &c->objs[c->len];
			c->len -= k;
			const unsigned at = lc->stash_head + n;
			for (unsigned i = 0; i < k; i++)
				tx_stash_put(lc, at + i, top[-1 - (int)i], off);
			n = DP_TX_STASH;
		} else {
			n = tx_stash_fill(lc, n, off);
			if (unlikely(!n)) /* fewer than a refill's worth left in the pool */
				return rte_pktmbuf_alloc(mp);
		}
	}
	struct rte_mbuf *m = lc->tx_stash[lc->stash_head];
	lc->stash_head = (lc->stash_head + 1) & (DP_TX_STASH - 1);
	__atomic_store_n(&lc->n_stash, n - 1, __ATOMIC_RELAXED); /* telemetry reads it */
	if (!m) /* never: the stash holds mbufs (the caller tests the fallback's NULL only) */
		__builtin_unreachable();
	return m;
}

/* The next TX mbuf as the pool holds it (rte_mbuf_raw_alloc's: refcnt 1,
 * one segment, no next, direct; nothing else set), or NULL. */
static inline __attribute__((always_inline)) struct rte_mbuf *tx_mbuf_raw(struct dp_lcore *lc)
{
	return tx_mbuf_stash(lc);
}

/* A raw mbuf made what rte_pktmbuf_reset then rte_pktmbuf_append(m,
 * total) make it, a word at a time: the rearm_data word (data_off the
 * headroom, refcnt 1, one segment, port invalid) from a constant, the
 * flags 0 (a raw mbuf is direct: reset keeps only RTE_MBUF_F_EXTERNAL),
 * packet type 0 and pkt_len in one store, data_len and vlan_tci 0 in
 * another; next is NULL already (a raw mbuf's, as its one segment). The
 * caller checked that total fits behind the headroom. */
_Static_assert(offsetof(struct rte_mbuf, data_off) == offsetof(struct rte_mbuf, rearm_data) &&
		       offsetof(struct rte_mbuf, refcnt) == offsetof(struct rte_mbuf, rearm_data) + 2 &&
		       offsetof(struct rte_mbuf, nb_segs) == offsetof(struct rte_mbuf, rearm_data) + 4 &&
		       offsetof(struct rte_mbuf, port) == offsetof(struct rte_mbuf, rearm_data) + 6 &&
		       offsetof(struct rte_mbuf, pkt_len) == offsetof(struct rte_mbuf, packet_type) + 4 &&
		       offsetof(struct rte_mbuf, vlan_tci) == offsetof(struct rte_mbuf, data_len) + 2 &&
		       __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "rte_mbuf's rearm_data and RX descriptor layout");
#define TX_REARM                                                                                         \
	((uint64_t)RTE_MBUF_PORT_INVALID << 48 | 1ull << 32 | 1ull << 16 | (uint64_t)RTE_PKTMBUF_HEADROOM)
static inline __attribute__((always_inline)) void tx_mbuf_init(struct rte_mbuf *m, uint32_t total)
{
	const uint64_t rearm = TX_REARM, type_len = (uint64_t)total << 32;
	const uint32_t dlen = (uint16_t)total;
	memcpy(&m->rearm_data, &rearm, 8);
	m->ol_flags = 0;
	memcpy(&m->packet_type, &type_len, 8);
	memcpy(&m->data_len, &dlen, 4);
	m->vlan_tci_outer = 0;
	m->tx_offload = 0;
}

void dp_tx_stash_release(struct dp_lcore *lc)
{
	for (unsigned i = 0; i < lc->n_stash; i++)
		rte_mempool_put(dp_g.mbufs, lc->tx_stash[(lc->stash_head + i) & (DP_TX_STASH - 1)]);
	lc->stash_head = 0;
	__atomic_store_n(&lc->n_stash, 0, __ATOMIC_RELAXED);
}

/* Whether e was built for route rt and destination to: the route's
 * bytes up to its local address's end (no padding among them) and the
 * destination's family, address and port, compared a word at a time. */
static inline bool tmpl_is(const struct dp_tx_tmpl *e, const struct dp_route *rt, const struct dp_peer *to)
{
	_Static_assert(offsetof(struct dp_route, local) + 16 == 31 && offsetof(struct dp_route, local) == 15,
		       "dp_route's key bytes are [0, 31) without padding");
	_Static_assert(offsetof(struct dp_peer, addr) == 1, "dp_peer's family and address are [0, 17)");
	const uint8_t *a = (const uint8_t *)&e->rt, *b = (const uint8_t *)rt;
	const uint8_t *x = (const uint8_t *)&e->to, *y = (const uint8_t *)to;
	uint64_t d = (dp_pkt_ld64(a) ^ dp_pkt_ld64(b)) | (dp_pkt_ld64(a + 8) ^ dp_pkt_ld64(b + 8)) |
		     (dp_pkt_ld64(a + 16) ^ dp_pkt_ld64(b + 16)) | (dp_pkt_ld64(a + 23) ^ dp_pkt_ld64(b + 23)) |
		     (dp_pkt_ld64(x) ^ dp_pkt_ld64(y)) | (dp_pkt_ld64(x + 8) ^ dp_pkt_ld64(y + 8)) |
		     (dp_pkt_ld64(x + 9) ^ dp_pkt_ld64(y + 9));
	return e->used && !d && e->to.port == to->port;
}

/* The header template for datagrams over rt to `to` from our data port
 * (rt->local): a small direct-mapped cache per lcore, so that the
 * Ethernet/IP/UDP header is built once per (route, destination) and not
 * once per datagram. A changed route (a neighbour's new MAC, another
 * local address) is another key: the entry is rebuilt. Forced inline:
 * GCC otherwise makes a call of it or of tx_mbuf_for once both senders
 * use them, and every datagram pays for that call. */
static inline __attribute__((always_inline)) struct dp_tx_tmpl *
tx_tmpl_entry(struct dp_lcore *lc, const struct dp_route *rt, const struct dp_peer *to)
{
	uint32_t a;
	memcpy(&a, to->addr, 4);
	struct dp_tx_tmpl *e = &lc->tx_tmpl[((a ^ to->port) * 0x9E3779B1u) >> (32 - 3)];
	_Static_assert(DP_TX_TMPLS == 1u << 3, "the index takes 3 bits");
	if (!tmpl_is(e, rt, to)) {
		dp_pkt_tmpl_init(&e->t, rt, to->family, rt->local, dp_g.cfg.udp_port, to->addr, to->port);
		e->rt = *rt;
		e->to = *to;
		e->used = true;
		e->st = DP_TX_ST_UNKNOWN;
		e->stamp = ++lc->tx_stamp; /* a holder of the old build sees the change (dp_tx_consumer_frags) */
	}
	return e;
}

static inline __attribute__((always_inline)) const struct dp_pkt_tmpl *
tx_tmpl(struct dp_lcore *lc, const struct dp_route *rt, const struct dp_peer *to)
{
	return &tx_tmpl_entry(lc, rt, to)->t;
}

/* The bytes a TX mbuf holds behind its headroom: every mbuf of the pool
 * has its data room (rte_pktmbuf_init; a detached external buffer gives
 * it back), so a datagram within it needs no check of its own mbuf. */
static uint32_t tx_room(void)
{
	const uint32_t room = rte_pktmbuf_data_room_size(dp_g.mbufs);
	return room > RTE_PKTMBUF_HEADROOM ? room - RTE_PKTMBUF_HEADROOM : 0;
}

/* An mbuf for a datagram of total <= tx_room() frame bytes (header
 * included), its lengths set, or NULL (counted tx_nombuf). Forced
 * inline, as tx_tmpl. */
static inline __attribute__((always_inline)) struct rte_mbuf *tx_mbuf_fit(struct dp_lcore *lc, uint32_t total)
{
	struct rte_mbuf *m = tx_mbuf_raw(lc);
	if (unlikely(!m)) {
		dp_lc_xcount(lc, DP_X_TX_NOMBUF);
		return NULL;
	}
	tx_mbuf_init(m, total);
	return m;
}

/* The same for any total: NULL (counted tx_nombuf) also when it does not
 * fit the mbuf. */
static inline __attribute__((always_inline)) struct rte_mbuf *tx_mbuf_for(struct dp_lcore *lc, uint32_t total)
{
	struct rte_mbuf *m = tx_mbuf_raw(lc);
	if (unlikely(!m)) {
		dp_lc_xcount(lc, DP_X_TX_NOMBUF);
		return NULL;
	}
	/* rte_pktmbuf_append's room check on an empty mbuf */
	if (unlikely((uint64_t)total + RTE_PKTMBUF_HEADROOM > m->buf_len)) {
		tx_unused(m);
		dp_lc_xcount(lc, DP_X_TX_NOMBUF);
		return NULL;
	}
	tx_mbuf_init(m, total);
	return m;
}

/* Queue m, its pkt_len len (known to the builder: not read back). */
static inline void tx_put(struct dp_lcore *lc, struct rte_mbuf *m, uint32_t len)
{
	if (unlikely(lc->n_tx == DP_TX_MAX)) {
		dp_tx_queue(lc, m);
		return;
	}
	lc->tx[lc->n_tx++] = m;
	lc->tx_bytes += len;
}

/* One UDP datagram whose payload is head + data, its header from t. */
static inline bool tx_dgram(struct dp_lcore *lc, const struct dp_pkt_tmpl *t, const uint8_t *head, uint32_t head_len,
			    const uint8_t *data, uint32_t len)
{
	uint32_t plen = head_len + len;
	struct rte_mbuf *m = tx_mbuf_for(lc, t->hl + plen);
	if (!m)
		return false;
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	uint8_t *u = p + t->hl;
	if (head_len == FG_FRAG_HDR_LEN) /* the common head: a fragment header alone */
		memcpy(u, head, FG_FRAG_HDR_LEN);
	else if (head_len)
		memcpy(u, head, head_len);
	memcpy(u + head_len, data, len);
	(void)dp_pkt_tmpl_put(p, t, plen, lc->ip_id++);
	tx_put(lc, m, t->hl + plen);
	return true;
}

bool dp_tx_dgram(struct dp_lcore *lc, const struct dp_route *rt, const struct dp_peer *to, const uint8_t *head,
		 uint32_t head_len, const uint8_t *data, uint32_t len)
{
	return tx_dgram(lc, tx_tmpl(lc, rt, to), head, head_len, data, len);
}

/* A ones' complement sum folded once: the sum of x's two 16-bit halves.
 * A nonzero sum within 16 bits after its folds is the one value in
 * 1..0xFFFF congruent to it modulo 0xFFFF, whatever order it was summed
 * and folded in. */
static inline uint32_t tx_fold(uint32_t x) { return (x & 0xFFFFu) + (x >> 16); }

enum { STATUS_PLEN = FG_FRAG_HDR_LEN + FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN };
_Static_assert(DP_TX_ST_HEAD == DP_UDP4_PAYLOAD + FG_FRAG_HDR_LEN + FG_HDR_LEN, "a status head ends at its payload");

/* e's status head (struct dp_tx_tmpl): the header dp_pkt_tmpl_put writes
 * for a status (IPv4 id 0), fragment header 0/1 (frame id 0), the frame
 * header (sequence 0). Made only over untagged IPv4 and when the datagram
 * fits every TX mbuf (tx_room: a status with a prepared head takes its
 * mbuf unchecked). Apart: once per template build. */
static __attribute__((noinline, cold)) void st_head_make(struct dp_tx_tmpl *e)
{
	if (e->t.hl != DP_UDP4_PAYLOAD || DP_UDP4_PAYLOAD + STATUS_PLEN > tx_room()) {
		e->st = DP_TX_ST_NONE;
		return;
	}
	uint8_t *h = e->st_head;
	(void)dp_pkt_tmpl_put(h, &e->t, STATUS_PLEN, 0);
	fg_ack_store32(h + DP_UDP4_PAYLOAD, 1u);
	uint8_t *f = h + DP_UDP4_PAYLOAD + FG_FRAG_HDR_LEN;
	fg_put_be16(f, FG_STREAM_STATUS);
	fg_put_be32(f + 2, 0);
	fg_put_be32(f + 6, FG_STATUS_PAYLOAD_LEN); /* flags 0, u24 length */
	/* folded: one more fold after adding an id keeps it within 16 bits */
	const uint32_t s = e->t.sum + 20u + 8u + STATUS_PLEN;
	e->st_sum = tx_fold(tx_fold(s));
	e->st = DP_TX_ST_READY;
}

/* The line facts' part of lc's statuses (lc->st_prep), made once per
 * published lf, not per status. */
static inline void status_prep(struct dp_lcore *lc)
{
	if (unlikely(!fg_status_prep_is(&lc->st_prep, lc->ictx.lines)))
		fg_status_prep_make(&lc->st_prep, lc->ictx.lines);
}

/* dp_tx_status_of over a template without a prepared head (st NONE):
 * the frame encoded in place behind dp_pkt_tmpl_put's header. Apart: the
 * straight path keeps neither its code nor its registers. */
static __attribute__((noinline)) int status_plain(struct dp_lcore *lc, const struct dp_tx_tmpl *e,
						  const struct fg_seed *seed, const struct fg_slot_result *res,
						  uint16_t fid)
{
	struct rte_mbuf *m = tx_mbuf_for(lc, e->t.hl + STATUS_PLEN);
	if (!m)
		return 0;
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *), *u = p + e->t.hl;
	status_prep(lc);
	fg_status_frame_prep(&lc->st_prep, seed, res, u + FG_FRAG_HDR_LEN);
	/* fragment header: frame id, index 0, total 1 */
	fg_ack_store32(u, (uint32_t)fid << 16 | 1u);
	(void)dp_pkt_tmpl_put(p, &e->t, STATUS_PLEN, lc->ip_id++);
	tx_put(lc, m, e->t.hl + STATUS_PLEN);
	dp_lc_count(lc, FG_C_STATUS_SENT, 1);
	return 1;
}

int dp_tx_status_of(struct dp_lcore *lc, const struct dp_route *rt, const struct dp_peer *to,
		    const struct fg_seed *seed, const struct fg_slot_result *res, uint16_t fid)
{
	struct dp_tx_tmpl *e = tx_tmpl_entry(lc, rt, to);
	if (unlikely(e->st != DP_TX_ST_READY)) {
		if (e->st == DP_TX_ST_UNKNOWN)
			st_head_make(e);
		if (e->st != DP_TX_ST_READY)
			return status_plain(lc, e, seed, res, fid);
	}
	struct rte_mbuf *m = tx_mbuf_fit(lc, DP_UDP4_PAYLOAD + STATUS_PLEN);
	if (!m)
		return 0;
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	status_prep(lc);
	/* the prepared head, then what differs: the IPv4 id and checksum (the
	 * head's sum and the id, as dp_pkt_tmpl_put sums them), the frame id,
	 * the sequence */
	const uint16_t ip_id = lc->ip_id++;
	const uint32_t s = tx_fold(e->st_sum + ip_id);
	memcpy(p, e->st_head, 32);
	memcpy(p + DP_TX_ST_HEAD - 32, e->st_head + DP_TX_ST_HEAD - 32, 32);
	fg_put_be16(p + DP_UDP4_IP + 4, ip_id);
	fg_put_be16(p + DP_UDP4_IP + 10, (uint16_t)~s);
	fg_put_be16(p + DP_UDP4_PAYLOAD, fid);
	fg_put_be32(p + DP_UDP4_PAYLOAD + FG_FRAG_HDR_LEN + 2, seed->token_seq);
	fg_status_payload_prep(&lc->st_prep, seed, res, p + DP_TX_ST_HEAD);
	tx_put(lc, m, DP_UDP4_PAYLOAD + STATUS_PLEN);
	dp_lc_count(lc, FG_C_STATUS_SENT, 1);
	return 1;
}

/* ACK pairs that found no mbuf: taken all the same (dp_ack_encode clears
 * them), as when the datagram could not be queued. */
static __attribute__((noinline, cold)) void ack_unsent(struct dp_ack_peer *pp, uint32_t mtu, uint16_t fid)
{
	uint8_t buf[DP_ACK_BUF_MAX];
	uint32_t len;
	if (dp_ack_encode(pp, mtu, fid, buf, sizeof(buf), &len, 1) != 1)
		return; /* not when they fit one datagram (the caller's condition) */
}

int dp_tx_ack_one(struct dp_lcore *lc, struct dp_ack_peer *pp, uint32_t mtu, uint16_t fid)
{
	const uint32_t most = FG_ACK_DGRAM_HEAD_LEN + pp->n * FG_ACK_ENTRY_LEN;
	/* the template pp holds while its route and the entry's build stand
	 * (dp_ack_peer_route forgets it on another route): not looked up */
	const struct dp_tx_tmpl *e = pp->tx;
	if (unlikely(!e || e->stamp != pp->tx_stamp)) {
		e = tx_tmpl_entry(lc, &pp->route, &pp->peer);
		pp->tx = e;
		pp->tx_stamp = e->stamp;
	}
	const struct dp_pkt_tmpl *t = &e->t;
	struct rte_mbuf *m = tx_mbuf_for(lc, t->hl + most);
	if (unlikely(!m)) {
		ack_unsent(pp, mtu, fid);
		return 0;
	}
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	/* most bytes of room at an mtu they fit (the caller's promise): one
	 * datagram, encoded in place */
	const uint32_t len = dp_ack_encode_one(pp, fid, p + t->hl);
	m->data_len = (uint16_t)(t->hl + len);
	m->pkt_len = t->hl + len;
	(void)dp_pkt_tmpl_put(p, t, len, lc->ip_id++);
	tx_put(lc, m, t->hl + len);
	return 1;
}

/* One fragment's datagram: its header from t, its fragment header word
 * w, then src[0..n) (and src2[0..n2), the body after the head's last
 * bytes). Forced inline, as tx_tmpl: dp_tx_frags and
 * dp_tx_consumer_frags each have the loop. */
static inline __attribute__((always_inline)) bool tx_frag(struct dp_lcore *lc, const struct dp_pkt_tmpl *t,
							  uint32_t w, const uint8_t *src, uint32_t n,
							  const uint8_t *src2, uint32_t n2)
{
	const uint32_t plen = FG_FRAG_HDR_LEN + n + n2;
	struct rte_mbuf *m = tx_mbuf_for(lc, t->hl + plen);
	if (!m)
		return false;
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *), *u = p + t->hl + FG_FRAG_HDR_LEN;
	memcpy(u - FG_FRAG_HDR_LEN, &w, 4);
	memcpy(u, src, n);
	if (n2)
		memcpy(u + n, src2, n2);
	(void)dp_pkt_tmpl_put(p, t, plen, lc->ip_id++);
	tx_put(lc, m, t->hl + plen);
	return true;
}

/* The fragments of a frame over untagged IPv4 share every header byte
 * but the IPv4 id and checksum, and the last one's lengths:
 * the header is written once for a full chunk's datagram (hdr[0..
 * DP_UDP4_PAYLOAD), t's header with its lengths; n the fragment's data
 * bytes, tot the IPv4 total length, sum the IPv4 header's sum without the
 * id, folded to 16 bits), and each fragment copies it and patches the id
 * and the checksum (the last one, shorter, its lengths too). */
struct tx_frag4 {
	uint8_t hdr[DP_UDP4_PAYLOAD];
	uint32_t n, tot, sum;
};

static inline __attribute__((always_inline)) void tx_frag4_make(struct tx_frag4 *h, const struct dp_pkt_tmpl *t,
								 uint32_t n)
{
	const uint32_t tot = (uint16_t)(20u + 8u + FG_FRAG_HDR_LEN + n);
	__builtin_memcpy(h->hdr, t->hdr, 32); /* its id and checksum zero */
	__builtin_memcpy(h->hdr + DP_UDP4_PAYLOAD - 16, t->hdr + DP_UDP4_PAYLOAD - 16, 16);
	fg_put_be16(h->hdr + DP_UDP4_IP + 2, (uint16_t)tot);
	fg_put_be16(h->hdr + DP_UDP4_UDP + 4, (uint16_t)(tot - 20u));
	h->n = n;
	h->tot = tot;
	h->sum = tx_fold(tx_fold(t->sum + tot));
}

/* tx_frag for a fragment of n + n2 <= h->n bytes over untagged IPv4,
 * IPv4 id ip_id: the same datagram. The checksum is the ones' complement
 * sum dp_pkt_tmpl_put folds, summed in another order (a fragment shorter
 * than h's: h's total length taken out, its own put in); every order
 * folds to the same 16 bits (a nonzero sum's fold is the one value in
 * 1..0xFFFF congruent to it modulo 0xFFFF). */
static inline __attribute__((always_inline)) bool tx_frag4(struct dp_lcore *lc, const struct tx_frag4 *h,
							   uint32_t w, const uint8_t *src, uint32_t n,
							   const uint8_t *src2, uint32_t n2, uint16_t ip_id)
{
	_Static_assert(DP_UDP4_PAYLOAD >= 32 && DP_UDP4_PAYLOAD <= 48, "the header in two fixed-size copies");
	struct rte_mbuf *m = tx_mbuf_for(lc, DP_UDP4_PAYLOAD + FG_FRAG_HDR_LEN + n + n2);
	if (!m)
		return false;
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	__builtin_memcpy(p, h->hdr, 32);
	__builtin_memcpy(p + DP_UDP4_PAYLOAD - 16, h->hdr + DP_UDP4_PAYLOAD - 16, 16);
	uint32_t s = h->sum + ip_id;
	if (unlikely(n + n2 != h->n)) {
		const uint32_t tot = 20u + 8u + FG_FRAG_HDR_LEN + n + n2;
		fg_put_be16(p + DP_UDP4_IP + 2, (uint16_t)tot);
		fg_put_be16(p + DP_UDP4_UDP + 4, (uint16_t)(tot - 20u));
		s = tx_fold(s + (0xFFFFu - h->tot) + tot);
	}
	s = tx_fold(s);
	fg_put_be16(p + DP_UDP4_IP + 4, ip_id);
	fg_put_be16(p + DP_UDP4_IP + 10, (uint16_t)~s);
	memcpy(p + DP_UDP4_PAYLOAD, &w, 4);
	memcpy(p + DP_UDP4_PAYLOAD + FG_FRAG_HDR_LEN, src, n);
	if (n2)
		memcpy(p + DP_UDP4_PAYLOAD + FG_FRAG_HDR_LEN + n, src2, n2);
	tx_put(lc, m, DP_UDP4_PAYLOAD + FG_FRAG_HDR_LEN + n + n2);
	return true;
}

/* A slot's body as an external mbuf buffer (rte_pktmbuf_attach_extbuf):
 * its shared info counts the mbufs attached to it (frags_ref counts a
 * delivery's before it attaches the first, and takes back those that
 * found no mbuf). The count leaves 0 only with a pin of the slot
 * (fg_slot_pin) and returns to 0 with its unpin, in tx_ref_free (DPDK's
 * free callback) or in frags_ref. Every mbuf attached here is freed on
 * the owning lcore: the PMD frees what it sent in rte_eth_tx_burst
 * (dp_tx_flush), dp_tx_drop what waited; at shutdown the port's stop and
 * close free what the device still held, on the main thread after the
 * lcores returned and before the slots' memory is freed (dp_stop). So the
 * callback writes the slot table single-threaded, as every other call. */
struct dp_tx_ref {
	struct rte_mbuf_ext_shared_info sh;
	struct dp_lcore *lc;
	uint32_t slot;
};

static void tx_ref_free(void *addr, void *opaque)
{
	struct dp_tx_ref *r = opaque;
	(void)addr;
	fg_slot_unpin(&r->lc->slots, r->slot);
}

size_t dp_tx_ref_mem_size(uint32_t capacity) { return ((size_t)capacity * sizeof(struct dp_tx_ref) + 63) & ~(size_t)63; }

void dp_tx_ref_init(struct dp_lcore *lc, void *mem, uint64_t iova_delta)
{
	struct dp_tx_ref *r = mem;
	for (uint32_t i = 0; i < lc->slots.cfg.capacity; i++)
		r[i] = (struct dp_tx_ref){.sh = {.free_cb = tx_ref_free, .fcb_opaque = &r[i], .refcnt = 0},
					  .lc = lc,
					  .slot = i};
	lc->tx_ref = r;
	lc->tx_ref_iova = iova_delta;
}

/* One fragment's datagram by reference: the header mbuf (its header from
 * t, its fragment header word w, then src[0..n), the frame head's part)
 * chained to an mbuf attached to body[0..body_n) of r's slot, for which
 * the caller counted a reference in r->sh. Both mbufs or none (counted
 * tx_nombuf). The body's mbuf is raw from the pool and only what a
 * further segment is read by is written (a PMD reads the offload fields
 * of the first). */
static inline __attribute__((always_inline)) bool tx_frag_ref(struct dp_lcore *lc, const struct dp_pkt_tmpl *t,
							      uint32_t w, const uint8_t *src, uint32_t n,
							      const uint8_t *body, uint32_t body_n,
							      struct dp_tx_ref *r)
{
	const uint32_t hlen = FG_FRAG_HDR_LEN + n;
	struct rte_mbuf *m = tx_mbuf_for(lc, t->hl + hlen);
	if (!m)
		return false;
	struct rte_mbuf *seg = tx_mbuf_raw(lc);
	if (unlikely(!seg)) {
		tx_unused(m);
		dp_lc_xcount(lc, DP_X_TX_NOMBUF);
		return false;
	}
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *), *u = p + t->hl + FG_FRAG_HDR_LEN;
	memcpy(u - FG_FRAG_HDR_LEN, &w, 4);
	if (n)
		memcpy(u, src, n);
	rte_pktmbuf_attach_extbuf(seg, (void *)(uintptr_t)body, (rte_iova_t)((uintptr_t)body + lc->tx_ref_iova),
				  (uint16_t)body_n, &r->sh);
	seg->ol_flags = RTE_MBUF_F_EXTERNAL; /* a raw mbuf's flags are the last user's */
	seg->data_len = (uint16_t)body_n;
	seg->pkt_len = body_n;
	m->next = seg;
	m->nb_segs = 2;
	m->pkt_len = t->hl + hlen + body_n;
	(void)dp_pkt_tmpl_put(p, t, hlen + body_n, lc->ip_id++);
	tx_put(lc, m, t->hl + hlen + body_n);
	return true;
}

/* The fragment header (wire.md 1.2: frame id, index, count) as one word
 * in memory order, index 0; fragment i's word is frag_word | i << FRAG_IX
 * (the index is the word's byte 2). */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define FRAG_IX 16
#else
#define FRAG_IX 8
#endif
static inline uint32_t frag_word(uint16_t fid, uint32_t total)
{
	uint8_t fh[FG_FRAG_HDR_LEN];
	fg_put_be16(fh, fid);
	fh[2] = 0;
	fh[3] = (uint8_t)total;
	return dp_pkt_ld32(fh);
}

/* One fragment of frags_loop: over untagged IPv4 (v4, a constant there)
 * from h with the IPv4 id *ip_id (advanced when it was queued), else
 * through tx_frag with t. */
static inline __attribute__((always_inline)) bool frag_one(struct dp_lcore *lc, const struct dp_pkt_tmpl *t,
							   const struct tx_frag4 *h, bool v4, uint16_t *ip_id,
							   uint32_t w, const uint8_t *src, uint32_t n,
							   const uint8_t *src2, uint32_t n2)
{
	if (!v4)
		return tx_frag(lc, t, w, src, n, src2, n2);
	const bool sent = tx_frag4(lc, h, w, src, n, src2, n2, *ip_id);
	*ip_id = (uint16_t)(*ip_id + sent); /* an id per datagram queued, as tx_frag */
	return sent;
}

/* frags_t's loops, v4 a constant: over untagged IPv4 every fragment from
 * one header made per frame (tx_frag4_make), the IPv4 id in a register. */
static inline __attribute__((always_inline)) bool frags_loop(struct dp_lcore *lc, const struct dp_pkt_tmpl *t,
							     bool v4, uint32_t fw, uint32_t total,
							     const uint8_t *head, uint32_t head_len,
							     const uint8_t *body, uint32_t body_len, uint32_t chunk)
{
	const uint32_t len = head_len + body_len;
	struct tx_frag4 h;
	if (v4)
		tx_frag4_make(&h, t, chunk);
	uint16_t ip_id = lc->ip_id;
	bool ok = true;
	uint32_t i = 0, off = 0;
	/* the fragments that carry part of the head */
	for (; i < total && off < head_len; i++, off += chunk) {
		const struct dp_frag_part fp = dp_frag_part(off, head_len, body_len, chunk);
		ok &= frag_one(lc, t, &h, v4, &ip_id, fw | i << FRAG_IX, head + fp.head_off, fp.head_n,
			       body + fp.body_off, fp.body_n);
	}
	/* then the body's, chunk bytes each but the last */
	const uint8_t *src = body + (off - head_len);
	for (; i < total; i++, off += chunk, src += chunk) {
		const uint32_t n = len - off < chunk ? len - off : chunk;
		ok &= frag_one(lc, t, &h, v4, &ip_id, fw | i << FRAG_IX, src, n, NULL, 0);
	}
	if (v4)
		lc->ip_id = ip_id;
	return ok;
}

/* dp_tx_frags with the header template tp. */
static inline __attribute__((always_inline)) bool frags_t(struct dp_lcore *lc, const struct dp_pkt_tmpl *tp,
							  uint16_t fid, uint32_t total, const uint8_t *head,
							  uint32_t head_len, const uint8_t *body, uint32_t body_len,
							  uint32_t chunk)
{
	if (!total)
		return false;
	/* a copy the body copies cannot alias: its fields stay in registers */
	const struct dp_pkt_tmpl t = *tp;
	const uint32_t fw = frag_word(fid, total);
	if (t.hl == DP_UDP4_PAYLOAD)
		return frags_loop(lc, &t, true, fw, total, head, head_len, body, body_len, chunk);
	return frags_loop(lc, &t, false, fw, total, head, head_len, body, body_len, chunk);
}

/* frags_t by reference to slot's body (dp_tx_consumer_frags). Every
 * fragment that carries body bytes (all but those within the head) is
 * counted in r->sh before the first is queued: a flush inside the loop (a
 * full TX buffer) may free every fragment attached so far, and the slot
 * must stay pinned for the next ones; what could not be attached (no
 * mbuf) is taken back at the end. A slot that cannot be pinned (not
 * RESOLVED) is copied. */
static bool frags_ref(struct dp_lcore *lc, const struct dp_pkt_tmpl *tp, uint16_t fid, uint32_t total,
		      const uint8_t *head, uint32_t head_len, const uint8_t *body, uint32_t body_len, uint32_t chunk,
		      uint32_t slot)
{
	struct dp_tx_ref *r = &lc->tx_ref[slot];
	const uint32_t nseg = total - head_len / chunk; /* fragment i has body bytes iff (i + 1) * chunk > head_len */
	if (!rte_mbuf_ext_refcnt_read(&r->sh)) {
		if (fg_slot_pin(&lc->slots, slot) < 0)
			return frags_t(lc, tp, fid, total, head, head_len, body, body_len, chunk);
		rte_mbuf_ext_refcnt_set(&r->sh, (uint16_t)nseg);
	} else {
		(void)rte_mbuf_ext_refcnt_update(&r->sh, (int16_t)nseg);
	}
	const struct dp_pkt_tmpl t = *tp;
	const uint32_t fw = frag_word(fid, total);
	uint32_t attached = 0;
	bool ok = true;
	for (uint32_t i = 0, off = 0; i < total; i++, off += chunk) {
		const struct dp_frag_part fp = dp_frag_part(off, head_len, body_len, chunk);
		if (fp.body_n)
			attached += tx_frag_ref(lc, &t, fw | i << FRAG_IX, head + fp.head_off, fp.head_n,
						body + fp.body_off, fp.body_n, r);
		else
			ok &= tx_frag(lc, &t, fw | i << FRAG_IX, head + fp.head_off, fp.head_n, NULL, 0);
	}
	if (likely(attached == nseg))
		return ok;
	if (rte_mbuf_ext_refcnt_update(&r->sh, (int16_t)-(int32_t)(nseg - attached)) == 0)
		fg_slot_unpin(&lc->slots, slot); /* every fragment attached already sent and freed, or none */
	return false;
}

bool dp_tx_frags(struct dp_lcore *lc, const struct dp_route *rt, const struct dp_peer *to, uint16_t fid,
		 uint32_t total, const uint8_t *head, uint32_t head_len, const uint8_t *body, uint32_t body_len,
		 uint32_t chunk)
{
	return frags_t(lc, tx_tmpl(lc, rt, to), fid, total, head, head_len, body, body_len, chunk);
}

/* The route memo (dp_neigh.h) holds the consumer's template while both
 * stand: the memo still the route to `to` at now (no table change, the
 * entry fresh) for the same port, and the template entry not rebuilt
 * since. Then neither the route nor the template is looked up. */
int dp_tx_consumer_frags(struct dp_lcore *lc, const struct dp_peer *to, uint64_t now, uint16_t fid, uint32_t total,
			 const uint8_t *head, uint32_t head_len, const uint8_t *body, uint32_t body_len,
			 uint32_t chunk, uint32_t slot)
{
	struct dp_route_memo *mm = dp_neigh_memo(lc, to->family, to->addr, now);
	const struct dp_pkt_tmpl *t;
	if (likely(mm && mm->tx && mm->port == to->port && mm->tx->stamp == mm->tx_stamp)) {
		t = &mm->tx->t;
	} else {
		struct dp_route rt;
		if (!dp_neigh_route(lc, to->family, to->addr, &rt, now))
			return -1;
		const struct dp_tx_tmpl *e = tx_tmpl_entry(lc, &rt, to);
		t = &e->t;
		mm = dp_neigh_memo(lc, to->family, to->addr, now); /* rt is its route */
		if (mm) {
			mm->tx = e;
			mm->tx_stamp = e->stamp;
			mm->port = to->port;
		}
	}
	/* by reference over IPv4 only: an IPv6 UDP checksum sums the payload,
	 * which the header mbuf would have to read anyway */
	if (lc->tx_ref && slot != DP_DLV_NONE && t->family == 4 && total && body_len)
		return frags_ref(lc, t, fid, total, head, head_len, body, body_len, chunk, slot);
	return frags_t(lc, t, fid, total, head, head_len, body, body_len, chunk);
}

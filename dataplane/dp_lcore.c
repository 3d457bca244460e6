/* dp_lcore.c - the poll loop of one lcore and everything it does per packet:
 * RX burst, L2-L4 parse, port demux, allowlist, reassembly, hand-off of
 * frames whose slot shard belongs to another lcore, slot placement through
 * the core (fg_ingest_frame / dp_reasm), ACKs, status frames, resolved-seed
 * delivery (UDP to the consumer + FG_BM_RESOLVED), boundary lanes, timers.
 *
 * Who may call: dp_lcore_main runs on its own EAL lcore, launched by
 * dp_start; every function here touches only that lcore's struct dp_lcore,
 * the shared read-only dp_g, MP-safe mempools and the owner lcores' MP/SC
 * inbox rings. Nothing here allocates from the heap, locks or logs; the only
 * syscalls are clock_gettime (vDSO) and, when [poll] idle_sleep_us is set,
 * a sleep after 64 empty polls.
 *
 * Cross-lcore design (a slot's contributions may arrive on different
 * queues): fragments of one frame share a 5-tuple, so RSS keeps them on one
 * queue; the receiving lcore reassembles. When fragment 0 names a seed whose
 * shard (fg_shard_of) is its own, chunks go straight into the slot buffer;
 * otherwise the whole frame is assembled in an xfer buffer and that buffer
 * (not a copy) is enqueued on the owner's MP/SC rte_ring. The receiver ACKs
 * (it saw the frame complete); the owner answers with the status frame.
 *
 * Reliable delivery (dp_dlv.h): the owner of a slot sends its resolved seed
 * to the layer's consumer and tracks it until the consumer ACKs (stream =
 * resolved band + layer, sequence = token_seq); the timer resends unACKed
 * seeds from their slot and gives up after [consumers] resends, counted.
 * A consumer's ACK frame reaches whichever lcore RSS picks: that lcore
 * retires the seqs of its own shard and copies the frame to the owners of
 * the others (their inbox, like a handed-off frame).
 *
 * Point liveness ([points]): every datagram that passed the allowlist
 * stores `now` into b->point_seen_ns[p] for each point p whose prefixes hold
 * its source, at most once a millisecond per lcore and point. */
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_prefetch.h>

#include "dp_internal.h"

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void count(struct dp_lcore *lc, enum fg_dp_counter c, uint64_t n) { fg_count(lc->k, c, n); }
static inline void xcount(struct dp_lcore *lc, enum dp_xcounter c) { dp_xcount(lc->xk, c, 1); }

static void count_malformed(struct dp_lcore *lc, int reason)
{
	count(lc, FG_C_DROP_MALFORMED, 1);
	if (reason < 0)
		reason = -reason;
	if ((unsigned)reason < FG_R__COUNT)
		atomic_store_explicit(&lc->k->malformed[reason],
				      atomic_load_explicit(&lc->k->malformed[reason], memory_order_relaxed) + 1,
				      memory_order_relaxed);
}

static void count_outcome(struct dp_lcore *lc, enum fg_outcome o)
{
	if ((unsigned)o < FG_O__COUNT)
		atomic_store_explicit(&lc->xk->outcome[o],
				      atomic_load_explicit(&lc->xk->outcome[o], memory_order_relaxed) + 1,
				      memory_order_relaxed);
}

/* ---- TX -------------------------------------------------------------------- */

static void tx_flush(struct dp_lcore *lc)
{
	if (!lc->n_tx)
		return;
	uint64_t bytes = 0;
	for (unsigned i = 0; i < lc->n_tx; i++)
		bytes += lc->tx[i]->pkt_len;
	unsigned sent = 0;
	for (int tries = 0; sent < lc->n_tx && tries < 4; tries++)
		sent += rte_eth_tx_burst(dp_g.port, lc->txq, lc->tx + sent, (uint16_t)(lc->n_tx - sent));
	for (unsigned i = sent; i < lc->n_tx; i++) {
		bytes -= lc->tx[i]->pkt_len;
		rte_pktmbuf_free(lc->tx[i]);
	}
	if (sent < lc->n_tx)
		count(lc, FG_C_DROP_TX_FULL, lc->n_tx - sent);
	count(lc, FG_C_TX_PKTS, sent);
	count(lc, FG_C_TX_BYTES, bytes);
	lc->n_tx = 0;
}

static void tx_queue(struct dp_lcore *lc, struct rte_mbuf *m)
{
	if (lc->n_tx == DP_TX_MAX)
		tx_flush(lc);
	lc->tx[lc->n_tx++] = m;
}

/* One UDP datagram whose payload is hdr4 (4 bytes, optional) + data. */
static bool tx_dgram(struct dp_lcore *lc, const struct dp_route *rt, int family, const uint8_t *src_ip,
		     const uint8_t *dst_ip, uint16_t dst_port, const uint8_t *hdr4, const uint8_t *data, uint32_t len)
{
	uint32_t hl = dp_pkt_hdr_len(rt, family);
	uint32_t plen = (hdr4 ? 4u : 0u) + len;
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp_g.mbufs);
	if (!m) {
		xcount(lc, DP_X_TX_NOMBUF);
		return false;
	}
	uint8_t *p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(hl + plen));
	if (!p) {
		rte_pktmbuf_free(m);
		xcount(lc, DP_X_TX_NOMBUF);
		return false;
	}
	uint8_t *u = p + hl;
	if (hdr4) {
		memcpy(u, hdr4, 4);
		u += 4;
	}
	memcpy(u, data, len);
	dp_pkt_build_udp(p, rt, family, src_ip, dp_g.cfg.udp_port, dst_ip, dst_port, plen, lc->ip_id++);
	tx_queue(lc, m);
	return true;
}

/* A frame in the fragmented profile (split at C) to one destination. */
static bool tx_frame(struct dp_lcore *lc, const struct dp_route *rt, int family, const uint8_t *src_ip,
		     const uint8_t *dst_ip, uint16_t dst_port, const uint8_t *frame, uint32_t len)
{
	uint32_t C = dp_g.chunk;
	uint32_t total = fg_frag_count(len, C);
	if (!total)
		return false;
	uint16_t fid = lc->frame_id++;
	bool ok = true;
	for (uint32_t i = 0; i < total; i++) {
		uint8_t h[4];
		fg_put_be16(h, fid);
		h[2] = (uint8_t)i;
		h[3] = (uint8_t)total;
		uint32_t off = i * C, n = RTE_MIN(C, len - off);
		ok &= tx_dgram(lc, rt, family, src_ip, dst_ip, dst_port, h, frame + off, n);
	}
	return ok;
}

static unsigned neigh_slot(int family, const uint8_t *addr)
{
	struct dp_peer p = {.family = (uint8_t)family};
	memcpy(p.addr, addr, family == 6 ? 16 : 4);
	return dp_peer_hash(&p, 0) & (DP_NEIGH - 1);
}

static void neigh_learn(struct dp_lcore *lc, int family, const uint8_t *addr, const uint8_t *mac)
{
	struct dp_neigh *n = &lc->neigh[neigh_slot(family, addr)];
	size_t al = family == 6 ? 16 : 4;
	if (n->family == family && !memcmp(n->addr, addr, al) && !memcmp(n->mac, mac, 6))
		return;
	n->family = (uint8_t)family;
	memset(n->addr, 0, 16);
	memcpy(n->addr, addr, al);
	memcpy(n->mac, mac, 6);
}

/* Route to an address we did not just hear from (the consumer). */
static bool route_to(struct dp_lcore *lc, int family, const uint8_t *addr, struct dp_route *rt)
{
	memset(rt, 0, sizeof(*rt));
	memcpy(rt->our_mac, dp_g.mac.addr_bytes, 6);
	if (family == 4 ? !lc->has_local4 : !lc->has_local6)
		return false;
	memcpy(rt->local, family == 4 ? lc->local4 : lc->local6, 16);
	const struct dp_neigh *n = &lc->neigh[neigh_slot(family, addr)];
	if (n->family == family && !memcmp(n->addr, addr, family == 6 ? 16 : 4)) {
		memcpy(rt->mac, n->mac, 6);
	} else {
		xcount(lc, DP_X_NEIGH_MISS);
		if (dp_g.prof.has_gateway)
			memcpy(rt->mac, dp_g.prof.gateway_mac, 6);
		else
			memset(rt->mac, 0xFF, 6);
	}
	return true;
}

/* ---- lanes (dp -> cp) -------------------------------------------------------- */

static void lane_send(struct dp_lcore *lc, struct fg_bmsg *m)
{
	if (!fg_ring_push(lc->lane->to_cp, m)) {
		if (m->buf != FG_BUF_NONE)
			fg_pool_put(&lc->lane->dp2cp, m->buf);
		count(lc, FG_C_DROP_LANE_FULL, 1);
	}
}

/* A copy of a frame to the control plane (CANONICAL). */
static void lane_send_frame(struct dp_lcore *lc, uint8_t type, const uint8_t *frame, uint32_t len,
			    const struct fg_status *st, uint64_t now)
{
	uint32_t bi = fg_pool_get(&lc->lane->dp2cp);
	if (bi == FG_BUF_NONE || len > lc->lane->dp2cp.size) {
		if (bi != FG_BUF_NONE)
			fg_pool_put(&lc->lane->dp2cp, bi);
		count(lc, FG_C_DROP_LANE_FULL, 1);
		return;
	}
	memcpy(fg_pool_buf(&lc->lane->dp2cp, bi), frame, len);
	struct fg_bmsg m = {.type = type, .buf = bi, .len = len, .t_ns = now, .line = FG_LINE_NONE};
	if (st) {
		m.status = *st;
		m.token_seq = st->token_seq;
		m.layer = st->dst_layer;
		m.epoch = st->model_epoch;
	}
	lane_send(lc, &m);
}

/* ---- status, ACKs, delivery ----------------------------------------------------- */

static void send_status(struct dp_lcore *lc, const struct dp_xfer *from, const struct fg_status *st)
{
	uint8_t buf[FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN];
	ssize_t n = fg_status_encode(st, buf, sizeof(buf));
	if (n < 0)
		return;
	uint8_t h[4];
	fg_put_be16(h, lc->frame_id++);
	h[2] = 0;
	h[3] = 1;
	if (tx_dgram(lc, &from->route, from->peer.family, from->route.local, from->peer.addr, from->peer.port, h, buf,
		     (uint32_t)n))
		count(lc, FG_C_STATUS_SENT, 1);
}

static void ack_send_peer(struct dp_lcore *lc, struct dp_ack_peer *pp)
{
	struct fg_ack_entry e[DP_ACK_PEND];
	unsigned n = dp_ack_take(pp, e, DP_ACK_PEND);
	if (!n)
		return;
	uint8_t buf[8192];
	uint32_t lens[16];
	int k = fg_ack_build(e, n, dp_g.cfg.mtu, lc->frame_id, buf, sizeof(buf), lens, 16);
	if (k <= 0)
		return;
	lc->frame_id = (uint16_t)(lc->frame_id + k);
	uint32_t off = 0;
	for (int i = 0; i < k; i++) {
		/* fg_ack_build wrote fragment header + ACK frame: the whole UDP payload */
		if (tx_dgram(lc, &pp->route, pp->peer.family, pp->route.local, pp->peer.addr, pp->peer.port, NULL,
			     buf + off, lens[i]))
			count(lc, FG_C_ACKS_SENT, 1);
		off += lens[i];
	}
}

static void ack_flush(struct dp_lcore *lc)
{
	for (uint32_t i = 0; i < lc->ack.n_dirty; i++) {
		struct dp_ack_peer *pp = &lc->ack.p[lc->ack.dirty[i]];
		if (pp->n)
			ack_send_peer(lc, pp);
	}
	dp_ack_dirty_reset(&lc->ack);
}

static void ack_note(struct dp_lcore *lc, const struct dp_xfer *from, uint16_t stream, uint32_t seq, uint64_t now)
{
	bool is_new;
	struct dp_ack_peer *pp = dp_ack_peer_get(&lc->ack, &from->peer, &from->route, now, &is_new);
	if (!pp) {
		xcount(lc, DP_X_ACK_FULL);
		ack_flush(lc);
		pp = dp_ack_peer_get(&lc->ack, &from->peer, &from->route, now, &is_new);
		if (!pp)
			return;
	}
	if (is_new || now - pp->peer_msg_ns > 1000000000ull) {
		/* Tell the control plane a source is alive (peers, degraded lines), at most once a second. */
		struct fg_bmsg m = {.type = FG_BM_PEER, .buf = FG_BUF_NONE, .t_ns = now, .line = from->peer.family,
				    .token_seq = from->peer.port};
		memcpy(m.peer, from->peer.addr, 16);
		pp->peer_msg_ns = now;
		lane_send(lc, &m);
		xcount(lc, DP_X_PEERS_NEW);
	}
	if (dp_ack_note(&lc->ack, pp, stream, seq))
		ack_send_peer(lc, pp);
}

/* ---- reliable delivery -------------------------------------------------------- */

static const struct fg_addr *consumer_of(uint16_t layer)
{
	if (layer < FG_CONSUMERS_MAX && dp_g.cfg.consumer[layer].set)
		return &dp_g.cfg.consumer[layer];
	if (dp_g.cfg.consumer_default.set)
		return &dp_g.cfg.consumer_default;
	return NULL;
}

/* Send an encoded resolved-seed frame to its layer's consumer. */
static bool dlv_send(struct dp_lcore *lc, const struct fg_addr *c, const uint8_t *frame, uint32_t len)
{
	int fam = c->family == AF_INET6 ? 6 : 4;
	struct dp_route rt;
	uint8_t dst[16] = {0};
	memcpy(dst, c->addr, fam == 6 ? 16 : 4);
	if (!route_to(lc, fam, dst, &rt)) {
		xcount(lc, DP_X_NO_SRC_ADDR);
		return false;
	}
	return tx_frame(lc, &rt, fam, rt.local, dst, c->port, frame, len);
}

static void dlv_give_up(struct dp_lcore *lc, enum dp_xcounter why)
{
	count(lc, FG_C_DELIVERY_GIVEN_UP, 1);
	xcount(lc, why);
}

/* Start tracking a delivery just sent (or attempted: a failed first send is
 * resent by the timer like a lost one). */
static void dlv_track(struct dp_lcore *lc, const struct fg_seed_view *v, uint32_t slot, uint64_t now)
{
	uint16_t stream = (uint16_t)(dp_g.cfg.bands.resolved_base + v->dst_layer);
	switch (dp_dlv_track(&lc->dlv, stream, v->token_seq, v->dst_layer, slot, v->fingerprint, now, NULL)) {
	case DP_DLV_NEW:
		break;
	case DP_DLV_SUPERSEDED:
		dlv_give_up(lc, DP_X_DLV_SUPERSEDED);
		break;
	case DP_DLV_EVICTED:
		dlv_give_up(lc, DP_X_DLV_GIVEUP_FULL);
		break;
	}
}

/* Resend what is due, give up what is exhausted or no longer in its slot.
 * At most 256 per call (the timer runs every millisecond). */
static void dlv_timer(struct dp_lcore *lc, uint64_t now)
{
	uint32_t i;
	for (unsigned n = 0; n < 256 && (i = dp_dlv_due(&lc->dlv, now)) != DP_DLV_NONE; n++) {
		const struct dp_dlv_entry *e = &lc->dlv.e[i];
		if (dp_dlv_exhausted(&lc->dlv, i)) {
			dp_dlv_drop(&lc->dlv, i);
			dlv_give_up(lc, DP_X_DLV_GIVEUP_RESENDS);
			continue;
		}
		/* The slot is the only copy of the seed: it must still be the
		 * same resolved key (the table reclaims slots for newer tokens). */
		struct fg_seed_view v;
		const struct fg_addr *c = consumer_of(e->layer);
		if (!c || fg_slot_seed(&lc->slots, e->slot, &v) < 0 || v.token_seq != e->token_seq ||
		    v.dst_layer != e->layer || v.fingerprint != e->fingerprint) {
			dp_dlv_drop(&lc->dlv, i);
			dlv_give_up(lc, DP_X_DLV_GIVEUP_RECLAIMED);
			continue;
		}
		struct fg_resolved r = {.token_seq = v.token_seq, .dst_layer = v.dst_layer, .start_pos = v.start_pos,
					.seq_len = v.seq_len, .body = v.body, .body_len = v.body_len};
		ssize_t len = fg_resolved_encode(&dp_g.cfg.bands, &r, lc->scratch, dp_g.frame_max);
		if (len < 0) {
			dp_dlv_drop(&lc->dlv, i);
			dlv_give_up(lc, DP_X_DLV_GIVEUP_RECLAIMED);
			continue;
		}
		(void)dlv_send(lc, c, lc->scratch, (uint32_t)len);
		dp_dlv_rearm(&lc->dlv, i, now);
		count(lc, FG_C_DELIVERY_RESENT, 1);
	}
}

/* Which lcore owns resolved-band stream `stream`, sequence seq; -1 when the
 * stream is not a resolved-seed stream of a configured layer. */
static int dlv_owner(uint16_t stream, uint32_t seq)
{
	enum fg_band band;
	uint16_t layer;
	if (fg_stream_classify(&dp_g.cfg.bands, stream, &band, &layer) < 0 || band != FG_BAND_RESOLVED)
		return -1;
	return dp_g.n > 1 ? (int)fg_shard_of(seq, layer, dp_g.cfg.layers, dp_g.n) : 0;
}

/* A consumer's ACK frame (whole, frame[0..len)): retire this lcore's seqs;
 * when forward, copy the frame to every other lcore owning a covered seq. */
static void dlv_on_ack(struct dp_lcore *lc, const uint8_t *frame, uint32_t len, bool forward)
{
	struct fg_frame f;
	struct fg_ack_entry e[128];
	if (fg_frame_decode(frame, len, FG_TRANSPORT_MESSAGE, &f) < 0)
		return;
	int n = fg_ack_frame_decode(&f, e, FG_ARRAY_LEN(e));
	if (n <= 0)
		return;
	uint64_t others = 0; /* bit i: lcore i owns a covered seq */
	for (int k = 0; k < n; k++) {
		for (unsigned bit = 0; bit < 64; bit++) {
			uint32_t word = bit < 32 ? e[k].bitmap_lo : e[k].bitmap_hi;
			if (!(word & (1u << (bit & 31))))
				continue;
			uint32_t seq = e[k].base_seq + bit;
			int owner = dlv_owner(e[k].stream_id, seq);
			if (owner < 0)
				break; /* not a resolved-seed stream: the fleet ACKing something else */
			if ((unsigned)owner != lc->idx) {
				others |= 1ull << owner;
				continue;
			}
			if (dp_dlv_ack(&lc->dlv, e[k].stream_id, seq))
				count(lc, FG_C_DELIVERY_ACKED, 1);
			else
				count(lc, FG_C_DELIVERY_ACK_UNMATCHED, 1);
		}
	}
	if (!forward || !others)
		return;
	for (unsigned o = 0; o < dp_g.n; o++) {
		if (!(others & (1ull << o)))
			continue;
		void *p;
		if (len > dp_g.frame_max || rte_mempool_get(dp_g.xfer, &p) < 0) {
			xcount(lc, DP_X_DLV_ACK_FWD_FAIL);
			continue;
		}
		struct dp_xfer *x = p;
		memset(x, 0, sizeof(*x));
		x->len = len;
		memcpy(dp_xfer_data(x), frame, len);
		if (rte_ring_mp_enqueue(dp_g.lc[o]->inbox, x) < 0) {
			rte_mempool_put(dp_g.xfer, x);
			xcount(lc, DP_X_DLV_ACK_FWD_FAIL);
			continue;
		}
		xcount(lc, DP_X_DLV_ACK_FWD);
	}
}

/* ---- point liveness ---------------------------------------------------------- */

static void points_seen(struct dp_lcore *lc, int family, const uint8_t *addr, uint64_t now)
{
	int fam = family == 6 ? AF_INET6 : AF_INET;
	for (unsigned p = 1; p <= FG_POINTS; p++) {
		unsigned np = dp_g.cfg.n_point_prefix[p - 1];
		if (!np || now - lc->point_store_ns[p] < 1000000ull)
			continue;
		for (unsigned j = 0; j < np; j++) {
			if (fg_prefix_match(&dp_g.cfg.point_prefix[p - 1][j], fam, addr)) {
				atomic_store_explicit(&dp_g.b->point_seen_ns[p], now, memory_order_relaxed);
				lc->point_store_ns[p] = now;
				xcount(lc, DP_X_POINT_SEEN);
				break;
			}
		}
	}
}

static void deliver(struct dp_lcore *lc, uint32_t slot, uint64_t now)
{
	struct fg_seed_view v;
	if (fg_slot_seed(&lc->slots, slot, &v) < 0)
		return;
	struct fg_resolved r = {.token_seq = v.token_seq,
				.dst_layer = v.dst_layer,
				.start_pos = v.start_pos,
				.seq_len = v.seq_len,
				.body = v.body,
				.body_len = v.body_len};
	uint32_t bi = fg_pool_get(&lc->lane->dp2cp);
	uint8_t *buf = bi != FG_BUF_NONE ? fg_pool_buf(&lc->lane->dp2cp, bi) : lc->scratch;
	ssize_t n = fg_resolved_encode(&dp_g.cfg.bands, &r, buf, dp_g.frame_max);
	if (n < 0) {
		if (bi != FG_BUF_NONE)
			fg_pool_put(&lc->lane->dp2cp, bi);
		return;
	}
	const struct fg_addr *c = consumer_of(v.dst_layer);
	if (c) {
		/* counted as sent once tracked: it ends ACKed or given up */
		(void)dlv_send(lc, c, buf, (uint32_t)n);
		count(lc, FG_C_SEEDS_SENT, 1);
		dlv_track(lc, &v, slot, now);
	} else {
		xcount(lc, DP_X_NO_CONSUMER);
	}
	if (bi != FG_BUF_NONE) {
		struct fg_bmsg m = {.type = FG_BM_RESOLVED,
				    .line = FG_LINE_NONE,
				    .layer = v.dst_layer,
				    .token_seq = v.token_seq,
				    .buf = bi,
				    .len = (uint32_t)n,
				    .epoch = lc->slots.epoch,
				    .fingerprint = v.fingerprint,
				    .t_ns = now};
		m.status.token_seq = v.token_seq;
		m.status.dst_layer = v.dst_layer;
		m.status.bitset = v.lines;
		m.status.fingerprint = v.fingerprint;
		lane_send(lc, &m);
	} else {
		count(lc, FG_C_DROP_LANE_FULL, 1);
	}
	lc->ack_now = true; /* ACK on resolution */
}

/* Counters, side effects and status for one seed's slot outcome. from is
 * NULL for frames from the control plane (answered through the lane). */
static void on_outcome(struct dp_lcore *lc, const struct fg_seed *seed, const struct fg_slot_result *res,
		       const struct fg_status *st, const struct dp_xfer *from, uint64_t now)
{
	enum fg_outcome o = res->outcome;
	count_outcome(lc, o);
	switch (o) {
	case FG_O_ACCEPTED:
	case FG_O_RESOLVED:
		count(lc, FG_C_CONTRIB_ACCEPTED, 1);
		if (seed && seed->line < FG_LINES)
			atomic_store_explicit(&lc->k->per_line[seed->line],
					      atomic_load_explicit(&lc->k->per_line[seed->line], memory_order_relaxed) + 1,
					      memory_order_relaxed);
		break;
	case FG_O_DUPLICATE:
		count(lc, FG_C_DROP_DUPLICATE, 1);
		break;
	case FG_O_CONFLICT: {
		count(lc, FG_C_DROP_CONFLICT, 1);
		struct fg_bmsg m = {.type = FG_BM_CONFLICT,
				    .line = seed ? seed->line : FG_LINE_NONE,
				    .layer = seed ? seed->dst_layer : 0,
				    .token_seq = seed ? seed->token_seq : 0,
				    .buf = FG_BUF_NONE,
				    .epoch = res->epoch,
				    .t_ns = now,
				    .status = *st};
		lane_send(lc, &m);
		break;
	}
	case FG_O_LATE:
		count(lc, FG_C_DROP_LATE, 1);
		break;
	case FG_O_EXPIRED:
		count(lc, FG_C_DROP_EXPIRED, 1);
		break;
	case FG_O_NO_SLOT:
		count(lc, FG_C_DROP_NO_SLOT, 1);
		break;
	case FG_O_STALE:
		count(lc, FG_C_DROP_STALE, 1);
		break;
	default:
		break; /* poisoned, shape_mismatch, unexpected_line, line_disabled, bad_range: outcome[] only */
	}
	if (from && dp_g.cfg.send_status)
		send_status(lc, from, st);
	if (o == FG_O_RESOLVED) {
		count(lc, FG_C_SEEDS_RESOLVED, 1);
		deliver(lc, res->slot, now);
	}
}

/* A whole frame this lcore owns (its shard, or not a seed). Returns the
 * ingest return code; *r is filled. */
static int process_frame(struct dp_lcore *lc, const uint8_t *frame, uint32_t len, const struct dp_xfer *from,
			 struct fg_ingest_result *r, uint64_t now)
{
	struct fg_frame f;
	ssize_t n = fg_frame_decode(frame, len, FG_TRANSPORT_MESSAGE, &f);
	if (n < 0 || (uint32_t)n != len) {
		count_malformed(lc, n < 0 ? (int)n : -FG_R_TRUNCATED_FRAME);
		memset(r, 0, sizeof(*r));
		r->reason = n < 0 ? (int)-n : FG_R_TRUNCATED_FRAME;
		fg_status_from_result(&lc->ictx, NULL, NULL, r->reason, &r->status);
		return -r->reason;
	}
	int rc = fg_ingest_frame(&lc->slots, &lc->ictx, &f, now, r);
	if (rc < 0) {
		if (rc == -FG_R_UNKNOWN_STREAM || rc == -FG_R_UNKNOWN_LAYER) {
			count(lc, FG_C_DROP_UNKNOWN_STREAM, 1);
		} else {
			count_malformed(lc, rc);
			if (r->band == FG_BAND_SEED) {
				count_outcome(lc, FG_O_MALFORMED);
				if (from && dp_g.cfg.send_status)
					send_status(lc, from, &r->status);
			}
		}
		return rc;
	}
	if (r->band == FG_BAND_CANONICAL) {
		count(lc, FG_C_CANONICAL, 1);
		if (from) {
			lane_send_frame(lc, FG_BM_CANONICAL, frame, len, &r->status, now);
			if (dp_g.cfg.send_status)
				send_status(lc, from, &r->status);
		}
		return 0;
	}
	on_outcome(lc, &r->seed, &r->slot, &r->status, from, now);
	return 0;
}

/* Owner of a whole frame: the seed's shard, else this lcore. */
static unsigned frame_owner(const struct dp_lcore *lc, const struct fg_hdr *h)
{
	enum fg_band band;
	uint16_t layer;
	if (dp_g.n > 1 && fg_stream_classify(&dp_g.cfg.bands, h->stream_id, &band, &layer) == 0 &&
	    band == FG_BAND_SEED)
		return fg_shard_of(h->sequence, layer, dp_g.cfg.layers, dp_g.n);
	return lc->idx;
}

/* A whole frame in an xfer buffer x (owned by the caller of this function,
 * which gives it up here: processed and returned, or handed to the owner). */
static void on_xfer(struct dp_lcore *lc, struct dp_xfer *x, bool ackable, uint64_t now)
{
	uint8_t *frame = dp_xfer_data(x);
	struct fg_hdr h;
	count(lc, FG_C_FRAMES, 1);
	if (fg_hdr_decode(frame, x->len, FG_TRANSPORT_MESSAGE, &h) < 0) {
		count_malformed(lc, FG_R_SHORT_HEADER);
		rte_mempool_put(dp_g.xfer, x);
		return;
	}
	if (h.stream_id == FG_STREAM_ACK && (h.flags & FG_FLAG_ACK)) {
		xcount(lc, DP_X_ACK_RX); /* a consumer ACKing resolved seeds */
		dlv_on_ack(lc, frame, x->len, true);
		rte_mempool_put(dp_g.xfer, x);
		return;
	}
	unsigned owner = frame_owner(lc, &h);
	if (owner != lc->idx) {
		struct dp_xfer from = *x; /* x belongs to the owner once enqueued */
		if (rte_ring_mp_enqueue(dp_g.lc[owner]->inbox, x) < 0) {
			count(lc, FG_C_DROP_LANE_FULL, 1);
			rte_mempool_put(dp_g.xfer, x);
			return; /* not ACKed: the sender resends */
		}
		xcount(lc, DP_X_HANDOFF_OUT);
		if (ackable)
			ack_note(lc, &from, h.stream_id, h.sequence, now);
		return;
	}
	struct fg_ingest_result r;
	(void)process_frame(lc, frame, x->len, x, &r, now);
	if (ackable)
		ack_note(lc, x, h.stream_id, h.sequence, now);
	rte_mempool_put(dp_g.xfer, x);
}

/* A whole frame still inside an mbuf (frag_total 1, or the raw profile). */
static void on_whole(struct dp_lcore *lc, const uint8_t *frame, uint32_t len, const struct dp_pkt *pk,
		     bool ackable, uint64_t now)
{
	struct fg_hdr h;
	if (fg_hdr_decode(frame, len, FG_TRANSPORT_MESSAGE, &h) < 0 || FG_HDR_LEN + h.length != len) {
		count_malformed(lc, len < FG_HDR_LEN ? FG_R_SHORT_HEADER : FG_R_TRUNCATED_FRAME);
		return;
	}
	unsigned owner = frame_owner(lc, &h);
	struct dp_xfer from = {.peer = pk->src, .route = pk->route, .len = len, .ack = ackable};
	if (owner != lc->idx) {
		void *e;
		if (len > dp_g.frame_max || rte_mempool_get(dp_g.xfer, &e) < 0) {
			count(lc, FG_C_DROP_LANE_FULL, 1);
			return;
		}
		struct dp_xfer *x = e;
		*x = from;
		memcpy(dp_xfer_data(x), frame, len);
		count(lc, FG_C_FRAMES, 1);
		if (rte_ring_mp_enqueue(dp_g.lc[owner]->inbox, x) < 0) {
			count(lc, FG_C_DROP_LANE_FULL, 1);
			rte_mempool_put(dp_g.xfer, x);
			return;
		}
		xcount(lc, DP_X_HANDOFF_OUT);
		if (ackable)
			ack_note(lc, &from, h.stream_id, h.sequence, now);
		return;
	}
	count(lc, FG_C_FRAMES, 1);
	if (h.stream_id == FG_STREAM_ACK && (h.flags & FG_FLAG_ACK)) {
		xcount(lc, DP_X_ACK_RX);
		dlv_on_ack(lc, frame, len, true);
		return;
	}
	struct fg_ingest_result r;
	(void)process_frame(lc, frame, len, &from, &r, now);
	if (ackable)
		ack_note(lc, &from, h.stream_id, h.sequence, now);
}

static void on_fragment(struct dp_lcore *lc, const struct fg_frag *f, const struct dp_pkt *pk, uint64_t now)
{
	struct dp_reasm_out out;
	if (dp_reasm_push(&lc->reasm, &pk->src, f, &lc->ictx, now, &out) < 0)
		return; /* never: push reports through out->disp */
	struct dp_xfer from = {.peer = pk->src, .route = pk->route, .ack = true};
	switch (out.disp) {
	case DP_RA_TAKEN:
		xcount(lc, DP_X_FRAG_TAKEN);
		break;
	case DP_RA_DUP:
		xcount(lc, DP_X_FRAG_DUP);
		break;
	case DP_RA_OVERFLOW:
		count(lc, FG_C_DROP_REASM_OVERFLOW, 1);
		break;
	case DP_RA_NOBUF:
		xcount(lc, DP_X_FRAG_NOBUF);
		break;
	case DP_RA_MALFORMED:
		xcount(lc, DP_X_FRAG_MALFORMED);
		count_malformed(lc, out.reason);
		break;
	case DP_RA_DISCARDED:
		xcount(lc, DP_X_FRAG_DISCARDED);
		break;
	}
	if (out.events & DP_RA_EV_OUTCOME) {
		struct fg_status st;
		if (out.res.outcome == FG_O_MALFORMED) {
			count_malformed(lc, out.reason);
			count_outcome(lc, FG_O_MALFORMED);
			fg_status_from_result(&lc->ictx, NULL, NULL, out.reason, &st);
			st.token_seq = out.seed.token_seq;
			st.dst_layer = out.seed.dst_layer;
			if (dp_g.cfg.send_status)
				send_status(lc, &from, &st);
		} else {
			fg_status_from_result(&lc->ictx, &out.seed, &out.res, 0, &st);
			on_outcome(lc, &out.seed, &out.res, &st, &from, now);
		}
	}
	if (out.events & DP_RA_EV_FRAME) {
		struct dp_xfer *x = dp_xfer_of(out.buf);
		*x = from;
		x->len = out.len;
		on_xfer(lc, x, true, now); /* counts the frame and ACKs it */
	} else if (out.events & DP_RA_EV_COMPLETE) {
		count(lc, FG_C_FRAMES, 1);
		ack_note(lc, &from, out.stream_id, out.sequence, now);
	}
}

static void on_packet(struct dp_lcore *lc, struct rte_mbuf *m, uint64_t now)
{
	count(lc, FG_C_RX_PKTS, 1);
	count(lc, FG_C_RX_BYTES, m->pkt_len);
	if (m->nb_segs > 1) {
		xcount(lc, DP_X_MULTISEG);
		return;
	}
	struct dp_pkt pk;
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	switch (dp_pkt_parse(p, rte_pktmbuf_data_len(m), &pk)) {
	case DP_PKT_ARP:
		xcount(lc, DP_X_ARP);
		if (pk.arp_op == 1 && dp_g.prof.arp_reply && dp_g.prof.has_ip4 && !memcmp(pk.arp_tpa, dp_g.prof.ip4, 4)) {
			struct rte_mbuf *r = rte_pktmbuf_alloc(dp_g.mbufs);
			uint8_t *q = r ? (uint8_t *)rte_pktmbuf_append(r, 64) : NULL;
			if (q) {
				uint32_t n = dp_pkt_build_arp_reply(q, &pk, dp_g.mac.addr_bytes, dp_g.prof.ip4);
				rte_pktmbuf_trim(r, (uint16_t)(64 - n));
				tx_queue(lc, r);
			} else if (r) {
				rte_pktmbuf_free(r);
			}
		}
		if (pk.arp_op == 1 || pk.arp_op == 2) {
			uint8_t a[16] = {0};
			memcpy(a, pk.arp_spa, 4);
			neigh_learn(lc, 4, a, pk.arp_sha);
		}
		return;
	case DP_PKT_NDP_NS:
		xcount(lc, DP_X_NDP);
		if (dp_g.prof.has_ip6 && !memcmp(pk.nd_target, dp_g.prof.ip6, 16)) {
			struct rte_mbuf *r = rte_pktmbuf_alloc(dp_g.mbufs);
			uint8_t *q = r ? (uint8_t *)rte_pktmbuf_append(r, 96) : NULL;
			if (q) {
				uint32_t n = dp_pkt_build_ndp_na(q, &pk, dp_g.mac.addr_bytes, dp_g.prof.ip6);
				rte_pktmbuf_trim(r, (uint16_t)(96 - n));
				tx_queue(lc, r);
			} else if (r) {
				rte_pktmbuf_free(r);
			}
		}
		return;
	case DP_PKT_NOT_UDP:
		count(lc, FG_C_DROP_NOT_UDP, 1);
		return;
	case DP_PKT_IP_FRAG:
		xcount(lc, DP_X_IP_FRAG);
		return;
	case DP_PKT_MALFORMED:
		xcount(lc, DP_X_PKT_MALFORMED);
		count(lc, FG_C_DROP_MALFORMED, 1);
		return;
	case DP_PKT_UDP:
		break;
	}
	bool frag = pk.dst_port == dp_g.cfg.udp_port;
	if (!frag && !(dp_g.cfg.udp_raw_port && pk.dst_port == dp_g.cfg.udp_raw_port)) {
		count(lc, FG_C_DROP_BAD_PORT, 1);
		return;
	}
	if (dp_g.cfg.n_allow) {
		bool ok = false;
		int fam = pk.src.family == 6 ? AF_INET6 : AF_INET;
		for (unsigned i = 0; i < dp_g.cfg.n_allow && !ok; i++)
			ok = fg_prefix_match(&dp_g.cfg.allow[i], fam, pk.src.addr);
		if (!ok) {
			count(lc, FG_C_DROP_NOT_ALLOWED, 1);
			return;
		}
	}
	memcpy(pk.route.our_mac, dp_g.mac.addr_bytes, 6);
	neigh_learn(lc, pk.src.family, pk.src.addr, pk.route.mac);
	if (dp_g.have_points)
		points_seen(lc, pk.src.family, pk.src.addr, now);
	if (pk.src.family == 4 && !lc->has_local4) {
		lc->has_local4 = true;
		memcpy(lc->local4, pk.dst, 16);
	} else if (pk.src.family == 6 && !lc->has_local6) {
		lc->has_local6 = true;
		memcpy(lc->local6, pk.dst, 16);
	}
	if (!frag) {
		xcount(lc, DP_X_RAW_DGRAMS);
		on_whole(lc, pk.payload, pk.payload_len, &pk, false, now);
		return;
	}
	struct fg_frag f;
	ssize_t rc = fg_frag_decode(pk.payload, pk.payload_len, &f);
	if (rc < 0) {
		xcount(lc, DP_X_PKT_MALFORMED);
		count_malformed(lc, (int)rc);
		return;
	}
	count(lc, FG_C_FRAGS, 1);
	if (f.total == 1) {
		xcount(lc, DP_X_FRAG_SINGLE);
		on_whole(lc, f.chunk, f.chunk_len, &pk, true, now);
		return;
	}
	on_fragment(lc, &f, &pk, now);
}

/* ---- control plane lane (cp -> dp) ---------------------------------------------- */

static unsigned lane_poll(struct dp_lcore *lc, uint64_t now)
{
	struct fg_bmsg m;
	unsigned n = 0;
	while (n < DP_BURST && fg_ring_pop(lc->lane->to_dp, &m)) {
		n++;
		if (m.type == FG_BM_FLUSH) {
			uint32_t k = fg_slots_flush(&lc->slots);
			count(lc, FG_C_SLOTS_FLUSHED, k);
			if ((int32_t)(m.epoch - lc->slots.epoch) > 0)
				lc->slots.epoch = m.epoch;
			xcount(lc, DP_X_LANE_FLUSH);
			continue;
		}
		if (m.type != FG_BM_FRAME)
			continue;
		xcount(lc, DP_X_LANE_FRAMES);
		struct fg_ingest_result r;
		int rc = -FG_R_TRUNCATED_FRAME;
		if (m.buf < lc->lane->cp2dp.n && m.len <= lc->lane->cp2dp.size)
			rc = process_frame(lc, fg_pool_buf(&lc->lane->cp2dp, m.buf), m.len, NULL, &r, now);
		else
			memset(&r, 0, sizeof(r));
		if (m.buf != FG_BUF_NONE && m.buf < lc->lane->cp2dp.n)
			fg_pool_put(&lc->lane->cp2dp, m.buf);
		if (m.req_id) {
			struct fg_bmsg o = {.type = FG_BM_OUTCOME,
					    .line = r.seed.line,
					    .layer = r.status.dst_layer,
					    .token_seq = r.status.token_seq,
					    .req_id = m.req_id,
					    .buf = FG_BUF_NONE,
					    .len = (uint32_t)(rc < 0 ? -rc : 0),
					    .epoch = r.status.model_epoch,
					    .fingerprint = r.status.fingerprint,
					    .t_ns = now,
					    .status = r.status};
			lane_send(lc, &o);
		}
	}
	return n;
}

/* ---- timers ---------------------------------------------------------------------- */

static void timers(struct dp_lcore *lc, uint64_t now)
{
	dlv_timer(lc, now);
	uint32_t t = dp_reasm_expire(&lc->reasm, now, 1024);
	if (t)
		count(lc, FG_C_REASM_TIMEOUT, t);
	struct fg_slot_expired ex[32];
	int k;
	do {
		k = fg_slots_expire(&lc->slots, now, ex, 32);
		for (int i = 0; i < k; i++) {
			struct fg_bmsg m = {.type = FG_BM_EXPIRED,
					    .line = FG_LINE_NONE,
					    .layer = ex[i].dst_layer,
					    .token_seq = ex[i].token_seq,
					    .buf = FG_BUF_NONE,
					    .epoch = lc->slots.epoch,
					    .t_ns = now};
			m.status.token_seq = ex[i].token_seq;
			m.status.dst_layer = ex[i].dst_layer;
			m.status.outcome = FG_O_EXPIRED;
			m.status.line = FG_LINE_NONE;
			m.status.bitset = ex[i].landed;
			m.status.expected = ex[i].expected;
			lane_send(lc, &m);
		}
		if (k > 0)
			count(lc, FG_C_SLOTS_EXPIRED, (uint64_t)k);
	} while (k == 32);
}

int dp_lcore_main(void *arg)
{
	struct dp_lcore *lc = arg;
	struct rte_mbuf *pkts[DP_BURST];
	void *in[DP_BURST];
	unsigned idle = 0;
	uint64_t now = now_ns();
	lc->next_ack_ns = now + dp_g.ack_interval_ns;
	lc->next_timer_ns = now + 1000000ull;

	while (!atomic_load_explicit(&dp_g.b->stop, memory_order_relaxed)) {
		/* two TSC reads per iteration (~10 ns) buy the busy-time figure bench/dp reports */
		uint64_t tsc0 = rte_rdtsc();
		now = now_ns();
		/* line facts: one acquire load per burst; the table's epoch never runs behind */
		lc->ictx.lines = atomic_load_explicit(&dp_g.b->linefacts, memory_order_acquire);
		uint32_t ep = fg_linefacts_epoch(lc->ictx.lines);
		if ((int32_t)(ep - lc->slots.epoch) > 0)
			lc->slots.epoch = ep;

		unsigned work = 0;
		if (lc->rxq >= 0) {
			uint16_t n = rte_eth_rx_burst(dp_g.port, (uint16_t)lc->rxq, pkts, DP_BURST);
			for (uint16_t i = 0; i < n; i++) {
				if (i + 3 < n)
					rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 3], void *));
				on_packet(lc, pkts[i], now);
			}
			/* every mbuf was only read: this burst's owner frees them all */
			if (n)
				rte_pktmbuf_free_bulk(pkts, n);
			work += n;
		}
		unsigned k = rte_ring_sc_dequeue_burst(lc->inbox, in, DP_BURST, NULL);
		for (unsigned i = 0; i < k; i++) {
			struct dp_xfer *x = in[i];
			struct fg_ingest_result r;
			xcount(lc, DP_X_HANDOFF_IN);
			const uint8_t *fr = dp_xfer_data(x);
			struct fg_hdr h;
			if (fg_hdr_decode(fr, x->len, FG_TRANSPORT_MESSAGE, &h) >= 0 && h.stream_id == FG_STREAM_ACK &&
			    (h.flags & FG_FLAG_ACK))
				dlv_on_ack(lc, fr, x->len, false); /* a copy from the lcore that received it */
			else
				(void)process_frame(lc, fr, x->len, x, &r, now);
			rte_mempool_put(dp_g.xfer, x);
		}
		work += k;
		work += lane_poll(lc, now);
		if (now >= lc->next_timer_ns) {
			timers(lc, now);
			lc->next_timer_ns = now + 1000000ull;
		}
		if (lc->ack_now || now >= lc->next_ack_ns) {
			ack_flush(lc);
			lc->ack_now = false;
			lc->next_ack_ns = now + dp_g.ack_interval_ns;
		}
		tx_flush(lc);
		if (work) {
			dp_xcount(lc->xk, DP_X_BUSY_CYCLES, rte_rdtsc() - tsc0);
			idle = 0;
		} else if (dp_g.prof.idle_sleep_us && ++idle >= 64) {
			rte_delay_us_sleep(dp_g.prof.idle_sleep_us);
		}
	}
	ack_flush(lc);
	tx_flush(lc);
	return 0;
}

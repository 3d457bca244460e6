/* dp_reply.c - what a UDP sender hears back from an lcore: status frames
 * (one per contribution, when [udp] send_status is on) and ACKs aggregated
 * per peer (dp_ack.h) and flushed on resolution, when a peer's entry fills,
 * or every ack_interval. Also tells the control plane a source is alive
 * (FG_BM_PEER, at most once a second per peer).
 *
 * Who may call: the thread that owns `lc` (dp_shard.c, its tick for the
 * periodic flush, the DPDK loop's last flush). No DPDK here: datagrams and
 * reports go through lc->env->io (dp_io.h). */
#include <string.h>

#include "dp_reply.h"

void dp_reply_status(struct dp_lcore *lc, const struct dp_peer *peer, const struct dp_route *route,
		     const struct fg_status *st)
{
	uint8_t buf[FG_FRAG_HDR_LEN + FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN];
	ssize_t n = fg_status_encode(st, buf + FG_FRAG_HDR_LEN, sizeof(buf) - FG_FRAG_HDR_LEN);
	if (n < 0)
		return;
	/* fragment header: frame id, index 0, total 1 */
	fg_ack_store32(buf, (uint32_t)lc->frame_id++ << 16 | 1u);
	if (lc->env->io->dgram(lc, route, peer, NULL, 0, buf, FG_FRAG_HDR_LEN + (uint32_t)n))
		dp_lc_count(lc, FG_C_STATUS_SENT, 1);
}

/* dp_reply_status_of without io->status_of: encoded into a buffer, sent
 * through io->dgram. Not inlined: keeps the buffer and the saved
 * registers off the straight path's (a tail call). */
static __attribute__((noinline)) void status_of_buf(struct dp_lcore *lc, const struct dp_peer *peer,
						    const struct dp_route *route, const struct fg_seed *seed,
						    const struct fg_slot_result *res, uint16_t fid)
{
	uint8_t buf[FG_FRAG_HDR_LEN + FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN];
	fg_status_frame_of(&lc->ictx, seed, res, buf + FG_FRAG_HDR_LEN);
	/* fragment header: frame id, index 0, total 1 */
	fg_ack_store32(buf, (uint32_t)fid << 16 | 1u);
	if (lc->env->io->dgram(lc, route, peer, NULL, 0, buf, sizeof(buf)))
		dp_lc_count(lc, FG_C_STATUS_SENT, 1);
}

void dp_reply_status_of(struct dp_lcore *lc, const struct dp_peer *peer, const struct dp_route *route,
			const struct fg_seed *seed, const struct fg_slot_result *res)
{
	/* never refused (fg_status_frame_of): the frame id is used either way */
	uint16_t fid = lc->frame_id++;
	__typeof__(lc->env->io->status_of) status_of = lc->env->io->status_of;
	if (status_of) { /* straight into the packet, counted there */
		(void)status_of(lc, route, peer, seed, res, fid);
		return;
	}
	status_of_buf(lc, peer, route, seed, res, fid);
}

/* Not inlined: keeps the buffer off ack_send_peer's stack frame. */
static __attribute__((noinline)) void ack_send_buf(struct dp_lcore *lc, struct dp_ack_peer *pp)
{
	uint8_t buf[DP_ACK_BUF_MAX];
	uint32_t lens[DP_ACK_DGRAMS_MAX];
	/* sized for any mtu the config admits: only an mtu below one entry
	 * (which the config refuses) could fail here */
	int k = dp_ack_encode(pp, lc->env->cfg->mtu, lc->frame_id, buf, sizeof(buf), lens, DP_ACK_DGRAMS_MAX);
	if (k <= 0)
		return;
	lc->frame_id = (uint16_t)(lc->frame_id + k);
	uint32_t off = 0;
	for (int i = 0; i < k; i++) {
		/* dp_ack_encode wrote fragment header + ACK frame: the whole UDP payload */
		if (lc->env->io->dgram(lc, &pp->route, &pp->peer, NULL, 0, buf + off, lens[i]))
			dp_lc_count(lc, FG_C_ACKS_SENT, 1);
		off += lens[i];
	}
}

/* The pairs whose entries surely fit one ACK datagram at mtu (n pairs
 * make at most n entries): those go straight into the packet. */
static inline uint32_t ack_one_max(uint32_t mtu)
{
	return mtu >= FG_ACK_DGRAM_HEAD_LEN ? (mtu - FG_ACK_DGRAM_HEAD_LEN) / FG_ACK_ENTRY_LEN : 0;
}

/* pp's pending pairs sent (pp->n > 0): straight into the packet through
 * ack_one when they fit one datagram (always at the default MTU), else
 * encoded into a buffer (ack_send_buf, which counts what it sends).
 * Returns 1 when ack_one queued the datagram (the caller counts it). */
static inline __attribute__((always_inline)) unsigned ack_send(struct dp_lcore *lc, struct dp_ack_peer *pp,
							       __typeof__(lc->env->io->ack_one) ack_one,
							       uint32_t mtu, uint32_t one_max)
{
	if (ack_one && pp->n <= one_max)
		return ack_one(lc, pp, mtu, lc->frame_id++) != 0;
	ack_send_buf(lc, pp);
	return 0;
}

static void ack_send_peer(struct dp_lcore *lc, struct dp_ack_peer *pp)
{
	const uint32_t mtu = lc->env->cfg->mtu;
	if (pp->n && ack_send(lc, pp, lc->env->io->ack_one, mtu, ack_one_max(mtu)))
		dp_lc_count(lc, FG_C_ACKS_SENT, 1);
}

void dp_reply_ack_flush(struct dp_lcore *lc)
{
	struct dp_ack *a = &lc->ack;
	struct dp_ack_peer *const *dirty = a->dirty;
	const uint32_t n_dirty = a->n_dirty;
	__typeof__(lc->env->io->ack_one) ack_one = lc->env->io->ack_one;
	const uint32_t mtu = lc->env->cfg->mtu, one_max = ack_one_max(mtu); /* once per flush */
	uint64_t sent = 0;
	/* the dirty list emptied as it is walked (dp_ack_dirty_reset's work) */
	for (uint32_t i = 0; i < n_dirty; i++) {
		struct dp_ack_peer *pp = dirty[i];
		pp->dirty = false;
		if (pp->n)
			sent += ack_send(lc, pp, ack_one, mtu, one_max);
	}
	a->n_dirty = 0;
	if (sent)
		dp_lc_count(lc, FG_C_ACKS_SENT, sent);
}

/* Tell the control plane a source is alive (peers, degraded lines), at
 * most once a second. Apart: its message stays off the note's frame. */
static __attribute__((noinline, cold)) void peer_alive(struct dp_lcore *lc, struct dp_ack_peer *pp,
							 const struct dp_peer *peer, uint64_t now)
{
	union fg_bmsg m = {.peer = {.kind = FG_BM_PEER, .family = peer->family, .port = peer->port, .t_ns = now}};
	memcpy(m.peer.addr, peer->addr, 16);
	pp->peer_msg_ns = now;
	lc->env->io->report(lc, &m);
	dp_lc_xcount(lc, DP_X_PEERS_NEW);
}

/* dp_reply_ack_note_peer for a peer new to the table, or due a word to
 * the control plane. */
static __attribute__((noinline)) void ack_note_lookup(struct dp_lcore *lc, const struct dp_peer *peer, uint32_t hash,
						      const struct dp_route *route, uint16_t stream, uint32_t seq,
						      uint64_t now)
{
	bool is_new;
	struct dp_ack_peer *pp = dp_ack_peer_get(&lc->ack, peer, hash, route, now, &is_new);
	if (__builtin_expect(!pp, 0)) {
		dp_lc_xcount(lc, DP_X_ACK_FULL);
		dp_reply_ack_flush(lc);
		pp = dp_ack_peer_get(&lc->ack, peer, hash, route, now, &is_new);
		if (!pp)
			return;
	}
	if (is_new || now - pp->peer_msg_ns > 1000000000ull)
		peer_alive(lc, pp, peer, now);
	if (dp_ack_note(&lc->ack, pp, stream, seq))
		ack_send_peer(lc, pp);
}

void dp_reply_ack_note_peer(struct dp_lcore *lc, const struct dp_peer *peer, uint32_t hash,
			    const struct dp_route *route, uint16_t stream, uint32_t seq, uint64_t now)
{
	/* a known sender: its entry found inline, the call a leaf */
	struct dp_ack_peer *pp = dp_ack_peer_find(&lc->ack, peer, hash);
	if (__builtin_expect(!pp || now - pp->peer_msg_ns > 1000000000ull, 0)) {
		ack_note_lookup(lc, peer, hash, route, stream, seq, now);
		return;
	}
	dp_ack_peer_route(pp, route);
	pp->last_ns = now;
	if (dp_ack_note(&lc->ack, pp, stream, seq))
		ack_send_peer(lc, pp);
}

void dp_reply_ack_note(struct dp_lcore *lc, const struct dp_xfer *from, uint16_t stream, uint32_t seq, uint64_t now)
{
	/* the hash the receiving lcore's flow computed: a handed frame's peer
	 * is not hashed again on its owner */
	dp_reply_ack_note_peer(lc, &from->peer, from->hash, &from->route, stream, seq, now);
}

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

void dp_reply_status(struct dp_lcore *lc, const struct dp_xfer *from, const struct fg_status *st)
{
	uint8_t buf[FG_FRAG_HDR_LEN + FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN];
	ssize_t n = fg_status_encode(st, buf + FG_FRAG_HDR_LEN, sizeof(buf) - FG_FRAG_HDR_LEN);
	if (n < 0)
		return;
	fg_put_be16(buf, lc->frame_id++);
	buf[2] = 0;
	buf[3] = 1;
	if (lc->env->io->dgram(lc, &from->route, &from->peer, NULL, 0, buf, FG_FRAG_HDR_LEN + (uint32_t)n))
		dp_lc_count(lc, FG_C_STATUS_SENT, 1);
}

static void ack_send_peer(struct dp_lcore *lc, struct dp_ack_peer *pp)
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

void dp_reply_ack_flush(struct dp_lcore *lc)
{
	for (uint32_t i = 0; i < lc->ack.n_dirty; i++) {
		struct dp_ack_peer *pp = &lc->ack.p[lc->ack.dirty[i]];
		if (pp->n)
			ack_send_peer(lc, pp);
	}
	dp_ack_dirty_reset(&lc->ack);
}

void dp_reply_ack_note(struct dp_lcore *lc, const struct dp_xfer *from, uint16_t stream, uint32_t seq, uint64_t now)
{
	bool is_new;
	struct dp_ack_peer *pp = dp_ack_peer_get(&lc->ack, &from->peer, &from->route, now, &is_new);
	if (!pp) {
		dp_lc_xcount(lc, DP_X_ACK_FULL);
		dp_reply_ack_flush(lc);
		pp = dp_ack_peer_get(&lc->ack, &from->peer, &from->route, now, &is_new);
		if (!pp)
			return;
	}
	if (is_new || now - pp->peer_msg_ns > 1000000000ull) {
		/* Tell the control plane a source is alive (peers, degraded lines), at most once a second. */
		union fg_bmsg m = {.peer = {.kind = FG_BM_PEER, .family = from->peer.family,
					    .port = from->peer.port, .t_ns = now}};
		memcpy(m.peer.addr, from->peer.addr, 16);
		pp->peer_msg_ns = now;
		lc->env->io->report(lc, &m);
		dp_lc_xcount(lc, DP_X_PEERS_NEW);
	}
	if (dp_ack_note(&lc->ack, pp, stream, seq))
		ack_send_peer(lc, pp);
}

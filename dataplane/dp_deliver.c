/* dp_deliver.c - reliable delivery of resolved seeds (dp_dlv.h): the owner
 * of a slot encodes its resolved seed, sends it to the layer's consumer,
 * copies it to the control plane (FG_BM_RESOLVED), and tracks it until the
 * consumer ACKs (stream = resolved band + layer, sequence = token_seq); the
 * timer resends unACKed seeds from their slot and gives up after
 * [consumers] resends, counted. A consumer's ACK frame reaches whichever
 * lcore RSS picks: that lcore retires the seqs of its own shard and copies
 * the frame to the owners of the others (their inbox, like a handed-off
 * frame).
 *
 * Who may call: the thread that owns `lc` (dp_shard.c on resolution, on an
 * ACK frame and from its timers). No DPDK here: sends, routes, buffers,
 * hand-off and reports go through lc->env->io (dp_io.h). */
#include <sys/socket.h>

#include <string.h>

#include "dp_deliver.h"

static const struct fg_addr *consumer_of(const struct dp_lcore *lc, uint16_t layer)
{
	const struct fg_config *cfg = lc->env->cfg;
	if (layer < FG_CONSUMERS_MAX && cfg->consumer[layer].set)
		return &cfg->consumer[layer];
	if (cfg->consumer_default.set)
		return &cfg->consumer_default;
	return NULL;
}

/* The frame head (wire.md 3.3: header and prefix) of the seed v into
 * head[FG_RESOLVED_HEAD_LEN]. false: not encodable (never for a slot's
 * seed of a configured layer). */
static bool seed_head(const struct dp_lcore *lc, const struct fg_seed_view *v, uint8_t *head)
{
	const struct fg_resolved r = {.token_seq = v->token_seq, .dst_layer = v->dst_layer, .start_pos = v->start_pos,
				      .seq_len = v->seq_len, .body = v->body, .body_len = v->body_len};
	return fg_resolved_head_encode(&lc->env->cfg->bands, &r, head, FG_RESOLVED_HEAD_LEN) == FG_RESOLVED_HEAD_LEN;
}

/* Send the resolved-seed frame head[0..FG_RESOLVED_HEAD_LEN) + body to its
 * layer's consumer, in the fragmented profile (fragments of env->chunk
 * bytes, one frame id). The frame is never assembled: each datagram
 * gathers its fragment header, the part of the head it covers (fragment 0)
 * and its part of the body straight from the slot into the packet, or,
 * where io->consumer_frags can (a port with multi-segment TX), refers to
 * the body in slot `slot` without copying it. now: the caller's loop
 * clock, for the route's neighbour entry (io->route). */
static bool dlv_send(struct dp_lcore *lc, const struct fg_addr *c, const uint8_t *head, const uint8_t *body,
		     uint32_t body_len, uint32_t slot, uint64_t now)
{
	struct dp_peer to = {.family = c->family == AF_INET6 ? 6 : 4, .port = c->port};
	struct dp_route rt;
	memcpy(to.addr, c->addr, sizeof(to.addr)); /* IPv4: c->addr's first 4 bytes, then zeros (fg_addr_parse) */
	const uint32_t hl = FG_RESOLVED_HEAD_LEN, len = hl + body_len, C = lc->env->chunk;
	const uint32_t total = fg_frag_count(len, C);
	if (lc->env->io->consumer_frags && total) { /* the route and its template at once */
		int r = lc->env->io->consumer_frags(lc, &to, now, lc->frame_id, total, head, hl, body, body_len, C,
						    slot);
		if (r < 0) {
			dp_lc_xcount(lc, DP_X_NO_SRC_ADDR);
			return false;
		}
		lc->frame_id++;
		return r > 0;
	}
	if (!lc->env->io->route(lc, to.family, to.addr, &rt, now)) {
		dp_lc_xcount(lc, DP_X_NO_SRC_ADDR);
		return false;
	}
	if (!total)
		return false;
	uint16_t fid = lc->frame_id++;
	if (lc->env->io->frags)
		return lc->env->io->frags(lc, &rt, &to, fid, total, head, hl, body, body_len, C);
	bool ok = true;
	uint8_t h[FG_FRAG_HDR_LEN + FG_RESOLVED_HEAD_LEN];
	_Static_assert(sizeof(h) <= DP_DGRAM_HEAD_MAX, "a fragment header and the frame head fit io->dgram's head");
	fg_put_be16(h, fid);
	h[3] = (uint8_t)total;
	for (uint32_t i = 0, off = 0; i < total; i++, off += C) {
		const struct dp_frag_part fp = dp_frag_part(off, hl, body_len, C);
		h[2] = (uint8_t)i;
		memcpy(h + FG_FRAG_HDR_LEN, head + fp.head_off, fp.head_n);
		ok &= lc->env->io->dgram(lc, &rt, &to, h, FG_FRAG_HDR_LEN + fp.head_n, body + fp.body_off, fp.body_n);
	}
	return ok;
}

/* Tell the neighbour table what layer's deliveries say about its consumer
 * (dp_neigh.c asks for it again when they go unanswered). */
static void neigh_hint(struct dp_lcore *lc, uint16_t layer, enum dp_neigh_hint hint, uint64_t now)
{
	const struct fg_addr *c = lc->env->io->neigh_hint ? consumer_of(lc, layer) : NULL;
	if (c)
		lc->env->io->neigh_hint(lc, c->family == AF_INET6 ? 6 : 4, c->addr, hint, now);
}

static void dlv_give_up(struct dp_lcore *lc, enum dp_xcounter why)
{
	dp_lc_count(lc, FG_C_DELIVERY_GIVEN_UP, 1);
	dp_lc_xcount(lc, why);
}

/* Start tracking a delivery just sent (or attempted: a failed first send is
 * resent by the timer like a lost one). */
static void dlv_track(struct dp_lcore *lc, const struct fg_seed_view *v, uint32_t slot, uint64_t now)
{
	uint16_t stream = (uint16_t)(lc->env->cfg->bands.resolved_base + v->dst_layer);
	/* the consumer's base is judged against what was sent (dp_cwin.h) */
	if (dp_cwin_sent(&lc->cwin, lc->env->cfg->consumer_ack_window, stream, v->token_seq)) {
		dp_dlv_window_forget(&lc->dlv, stream);
		dp_lc_xcount(lc, DP_X_DLV_RESTART);
	}
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
void dp_deliver_timer(struct dp_lcore *lc, uint64_t now)
{
	uint32_t i;
	enum dp_dlv_step step;
	for (unsigned n = 0; n < 256 && (step = dp_dlv_step(&lc->dlv, now, &i)) != DP_DLV_STEP_NONE; n++) {
		const struct dp_dlv_entry *e = &lc->dlv.e[i];
		if (step == DP_DLV_STEP_WAITED) {
			/* beyond the consumer's base + 63 (wire.md 2.1): it cannot
			 * ACK this one yet. Unanswered too: a consumer that moved
			 * receives nothing, so its window never moves either. */
			dp_lc_xcount(lc, DP_X_DLV_WINDOW_WAIT);
			neigh_hint(lc, e->layer, DP_NEIGH_UNANSWERED, now);
			continue;
		}
		if (step == DP_DLV_STEP_EXHAUSTED) {
			dp_dlv_drop(&lc->dlv, i);
			dlv_give_up(lc, DP_X_DLV_GIVEUP_RESENDS);
			continue;
		}
		/* The slot is the only copy of the seed: it must still be the
		 * same resolved key (the table reclaims slots for newer tokens). */
		struct fg_seed_view v;
		const struct fg_addr *c = consumer_of(lc, e->layer);
		if (!c || fg_slot_seed(&lc->slots, e->slot, &v) < 0 || v.token_seq != e->token_seq ||
		    v.dst_layer != e->layer || v.fingerprint != e->fingerprint) {
			dp_dlv_drop(&lc->dlv, i);
			dlv_give_up(lc, DP_X_DLV_GIVEUP_RECLAIMED);
			continue;
		}
		uint8_t head[FG_RESOLVED_HEAD_LEN];
		if (!seed_head(lc, &v, head)) {
			dp_dlv_drop(&lc->dlv, i);
			dlv_give_up(lc, DP_X_DLV_GIVEUP_RECLAIMED);
			continue;
		}
		neigh_hint(lc, e->layer, DP_NEIGH_UNANSWERED, now); /* before the route the resend takes */
		(void)dlv_send(lc, c, head, v.body, v.body_len, e->slot, now);
		dp_dlv_rearm(&lc->dlv, i, now);
		dp_lc_count(lc, FG_C_DELIVERY_RESENT, 1);
	}
}

/* Which lcore owns sequence seq of layer's resolved-seed stream. */
static unsigned dlv_owner(const struct dp_lcore *lc, uint16_t layer, uint32_t seq)
{
	unsigned n = lc->env->n;
	return n > 1 ? fg_shard_of(seq, layer, lc->env->cfg->layers, n) : 0;
}

/* Whether src is the configured consumer c of a layer (address and port):
 * only it may retire that layer's deliveries (a spoofed ACK from any
 * allowed source cancelled them). The caller has taken the layer from a
 * stream of the resolved band (the bands do not overlap: config.c refuses
 * it) and src's fields into port, family and w (its first address word)
 * once per frame. */
static inline bool ack_from_consumer(const struct fg_addr *c, const struct dp_peer *src, uint16_t port,
				     uint8_t family, uint32_t w)
{
	if (!c || c->port != port || (c->family == AF_INET6 ? 6 : 4) != family)
		return false;
	if (family == 4) /* a word, not a memcmp call */
		return dp_pkt_ld32(c->addr) == w;
	return memcmp(c->addr, src->addr, 16) == 0;
}

/* Tell the neighbour table the consumer c answers (our deliveries reach
 * it), unless *confirmed, the consumer this frame already confirmed, has
 * its address: every layer without its own consumer holds a copy of the
 * default (config.c). For a frame copied from another lcore, whose
 * entries were not checked against a source here. */
static void confirm_consumer(struct dp_lcore *lc, const struct fg_addr *c, const struct fg_addr **confirmed,
			     uint64_t now)
{
	if (c && !(*confirmed && c->family == (*confirmed)->family &&
		   !memcmp(c->addr, (*confirmed)->addr, sizeof(c->addr)))) {
		lc->env->io->neigh_hint(lc, c->family == AF_INET6 ? 6 : 4, c->addr, DP_NEIGH_CONFIRMED, now);
		*confirmed = c;
	}
}

/* A consumer's ACK frame (whole, frame[0..len)) from src: see dp_deliver.h. */
void dp_deliver_on_ack(struct dp_lcore *lc, const struct dp_frame *d, const uint8_t *frame, uint32_t len,
		       const struct dp_peer *src, uint64_t now)
{
	if (FG_HDR_LEN + (uint64_t)d->hdr.length > len)
		return; /* truncated (fg_frame_decode's check; the header is decoded once, by the caller) */
	const struct fg_frame f = {.hdr = d->hdr, .payload = frame + FG_HDR_LEN};
	/* the codec's checks of the header and the length; the entries are
	 * read in place below, one at a time, not copied out first */
	int n = fg_ack_frame_decode(&f, NULL, 0);
	if (n < 0) { /* not an ACK frame's header, or a length not a multiple of 14 */
		dp_lc_malformed(lc, n);
		return;
	}
	/* An ACK datagram within the MTU holds at most 104 entries (wire.md
	 * 2.1); a reassembled frame claiming more than 128 is not one. */
	if ((unsigned)n > DP_DLV_ACK_ENTRIES_MAX) {
		dp_lc_malformed(lc, FG_R_ACK_LENGTH);
		return;
	}
	if (n == 0)
		return; /* valid, and means nothing */
	const struct fg_config *cfg = lc->env->cfg;
	const unsigned n_sh = lc->env->n, layers = cfg->layers < (1u << cfg->bands.layer_bits)
							   ? cfg->layers
							   : (1u << cfg->bands.layer_bits);
	const uint16_t rbase = cfg->bands.resolved_base;
	const uint8_t mode = cfg->consumer_ack_window;
	unsigned misses = 0, acked = 0;
	uint64_t others = 0; /* bit i: lcore i owns a covered seq */
	/* with src: the first consumer that passed the check and ACKed a
	 * delivery (each has src's address: confirmed once, after the loop);
	 * without: the consumer (address) this frame last confirmed */
	const struct fg_addr *confirmed = NULL;
	const uint16_t src_port = src ? src->port : 0;
	const uint8_t src_family = src ? src->family : 0;
	const uint32_t src_w = src ? dp_pkt_ld32(src->addr) : 0;
	const uint8_t *p = f.payload;
	for (int k = 0; k < n; k++, p += FG_ACK_ENTRY_LEN) {
		/* the entry (wire.md 2.1): stream, base, bitmap_hi, bitmap_lo */
		const uint16_t stream = fg_be16(p);
		const uint32_t base = fg_be32(p + 2);
		const uint64_t bits = (uint64_t)fg_be32(p + 6) << 32 | fg_be32(p + 10);
		/* The fleet ACKs everything it receives, our status frames
		 * included, and re-ACKs all it holds every 50 ms: an entry of any
		 * stream but a configured layer's resolved-seed stream costs one
		 * compare (wire.md 2.1). */
		const uint16_t layer = (uint16_t)(stream - rbase);
		if (layer >= layers) {
			dp_lc_xcount(lc, DP_X_DLV_ACK_FOREIGN);
			continue;
		}
		const struct fg_addr *c = consumer_of(lc, layer);
		if (src && !ack_from_consumer(c, src, src_port, src_family, src_w)) {
			dp_lc_xcount(lc, DP_X_ACK_FOREIGN);
			continue;
		}
		/* The consumer's window (dp_cwin.h): read the fleet's way
		 * ([consumers] ack_window = fleet, or auto once the consumer
		 * ACKs like the fleet), the entry's base may move it; a base
		 * below it or beyond anything sent is ignored and counted, so
		 * one reordered or forged ACK never holds pending deliveries.
		 * When a fleet-read base changed, every lcore needs it (their
		 * entries beyond it may now be ACKed): the frame goes to all of
		 * them. Exact entries say nothing beyond their bits. One
		 * judgement per entry, also once the miss budget is spent. */
		struct dp_cwin_note note;
		switch (dp_cwin_ack(&lc->cwin, mode, stream, base, bits, &note)) {
		case DP_CWIN_MOVED:
			(void)dp_dlv_window(&lc->dlv, stream, base);
			break;
		case DP_CWIN_STALE:
			dp_lc_xcount(lc, DP_X_DLV_BASE_STALE);
			break;
		case DP_CWIN_AHEAD:
			dp_lc_xcount(lc, DP_X_DLV_BASE_AHEAD);
			break;
		case DP_CWIN_NONE:
		case DP_CWIN_SAME:
			break;
		}
		if (note.seen_fleet)
			dp_lc_xcount(lc, DP_X_DLV_FLEET_SEEN);
		if (note.new_base && n_sh > 1)
			others |= (n_sh >= 64 ? ~0ull : (1ull << n_sh) - 1) & ~(1ull << lc->idx);
		if (misses >= DP_DLV_ACK_MISS_MAX)
			continue;
		unsigned got = 0;
		if (n_sh == 1 && !(bits & (bits - 1))) { /* one sequence (or none), this lcore's */
			if (bits && dp_dlv_ack(&lc->dlv, stream, base + (uint32_t)__builtin_ctzll(bits)))
				got = 1;
			else
				misses += bits != 0;
		} else if (n_sh == 1) { /* every sequence is this lcore's */
			got = dp_dlv_ack_bits(&lc->dlv, stream, base, bits, &misses, DP_DLV_ACK_MISS_MAX);
		} else {
			/* the named sequences, lowest first, one step per set bit */
			for (uint64_t left = bits; left; left &= left - 1) {
				uint32_t seq = base + (uint32_t)__builtin_ctzll(left);
				unsigned owner = dlv_owner(lc, layer, seq);
				if (owner != lc->idx) {
					others |= 1ull << owner;
					continue;
				}
				if (dp_dlv_ack(&lc->dlv, stream, seq)) {
					got++;
				} else if (++misses >= DP_DLV_ACK_MISS_MAX) {
					/* A frame of mostly nothing: stop looking up
					 * here (a real consumer's next ACK or our
					 * resend settles the rest); later entries only
					 * update windows. */
					break;
				}
			}
		}
		/* our deliveries reach the consumer: its neighbour entry holds */
		if (got) {
			acked += got;
			if (src) { /* every consumer that passed the check has src's address */
				if (!confirmed)
					confirmed = c;
			} else if (lc->env->io->neigh_hint) {
				confirm_consumer(lc, c, &confirmed, now);
			}
		}
	}
	if (acked)
		dp_lc_count(lc, FG_C_DELIVERY_ACKED, acked);
	if (misses) {
		dp_lc_count(lc, FG_C_DELIVERY_ACK_UNMATCHED, misses);
		if (misses >= DP_DLV_ACK_MISS_MAX)
			dp_xcount(lc->xk, DP_X_ACK_BUDGET, 1);
	}
	if (src && confirmed && lc->env->io->neigh_hint)
		lc->env->io->neigh_hint(lc, confirmed->family == AF_INET6 ? 6 : 4, confirmed->addr, DP_NEIGH_CONFIRMED,
					now);
	if (!src || !others)
		return;
	for (unsigned o = 0; o < lc->env->n; o++) {
		if (!(others & (1ull << o)))
			continue;
		struct dp_xfer *x = len <= lc->env->frame_max ? lc->env->io->xfer_get(lc) : NULL;
		if (!x) {
			dp_lc_xcount(lc, DP_X_DLV_ACK_FWD_FAIL);
			continue;
		}
		memset(x, 0, sizeof(*x));
		x->len = len;
		x->decoded = true; /* the owner reads this decode (dp_frame_is_ack), not the frame again */
		x->fr = *d;
		memcpy(dp_xfer_data(x), frame, len);
		if (!lc->env->io->handoff(lc, o, x)) {
			lc->env->io->xfer_put(lc, x);
			dp_lc_xcount(lc, DP_X_DLV_ACK_FWD_FAIL);
			continue;
		}
		dp_lc_xcount(lc, DP_X_DLV_ACK_FWD);
	}
}

/* The FG_BM_RESOLVED message of seed v into *m, every byte of it (the
 * padding zero: the lane carries the same bytes wherever m lies). The
 * body is report_body's or report_commit's to fill. */
static inline void resolved_msg(struct dp_lcore *lc, const struct fg_seed_view *v, bool sent, uint64_t now,
				union fg_bmsg *m)
{
	memset(m, 0, sizeof(*m));
	m->resolved.kind = FG_BM_RESOLVED;
	m->resolved.lines = v->lines;
	m->resolved.layer = v->dst_layer;
	m->resolved.token_seq = v->token_seq;
	m->resolved.start_pos = v->start_pos;
	m->resolved.seq_len = v->seq_len;
	m->resolved.epoch = lc->slots.epoch;
	m->resolved.udp_sent = sent;
	m->resolved.ingress = lc->from_lane ? FG_INGRESS_TLS : FG_INGRESS_UDP;
	m->resolved.fingerprint = v->fingerprint;
	m->resolved.t_ns = dp_clock_ns(); /* resolved now, not at the loop's start */
	m->resolved.t_last_ns = now;
	m->resolved.t_open_ns = v->opened_ns;
}

void dp_deliver_seed(struct dp_lcore *lc, uint32_t slot, uint64_t now)
{
	struct fg_seed_view v;
	if (fg_slot_seed(&lc->slots, slot, &v) < 0)
		return;
	const struct fg_addr *c = consumer_of(lc, v.dst_layer);
	bool sent = false;
	if (c) {
		/* The UDP consumer needs the frame (wire.md 3.3): its head
		 * encoded here, the body copied from the slot straight into the
		 * packets or sent by reference (dlv_send). Counted as sent once
		 * tracked: it ends ACKed or given up. */
		uint8_t head[FG_RESOLVED_HEAD_LEN];
		if (seed_head(lc, &v, head)) {
			(void)dlv_send(lc, c, head, v.body, v.body_len, slot, now);
			dp_lc_count(lc, FG_C_SEEDS_SENT, 1);
			dlv_track(lc, &v, slot, now);
			sent = true;
		}
	} else {
		dp_lc_xcount(lc, DP_X_NO_CONSUMER);
	}
	/* The control plane gets facts and the body, not a frame (boundary.h):
	 * written in place in the lane when the I/O reserves (report_reserve) */
	const struct dp_io *io = lc->env->io;
	/* the body already in the lane's buffer when the resolution wrote it
	 * there (io->sink, prepared for this slot with no resolution since) */
	const bool sunk = lc->sink_slot == slot + 1 && lc->sink_resolved == lc->slots.resolved && lc->sink_has_buf;
	lc->sink_slot = 0;
	if (io->report_reserve) {
		union fg_bmsg *m = io->report_reserve(lc);
		if (m) {
			resolved_msg(lc, &v, sent, now, m);
			if (sunk)
				io->report_commit_sunk(lc, m, &m->resolved.body, v.body_len);
			else
				io->report_commit(lc, m, &m->resolved.body, v.body, v.body_len);
		}
	} else {
		union fg_bmsg m;
		resolved_msg(lc, &v, sent, now, &m);
		(void)io->report_body(lc, &m, &m.resolved.body, v.body, v.body_len);
	}
	lc->ack_now = true; /* ACK on resolution */
}

/* dp_shard.c - the shard work of one lcore: whole frames and fragments
 * into the slot engine (fg_ingest_classified, dp_reasm placing chunks
 * straight into the slot's contribution buffer), hand-off of frames whose slot shard
 * belongs to another lcore, outcomes and their counters, and the shard's
 * housekeeping timers (reassembly and slot expiry, delivery resends).
 *
 * Cross-lcore design (a slot's contributions may arrive on different
 * queues): fragments of one frame share a 5-tuple, so RSS keeps them on one
 * queue; the receiving lcore reassembles. When fragment 0 names a seed whose
 * shard (fg_shard_of) is its own, chunks go straight into the slot buffer;
 * otherwise the whole frame is assembled in an xfer buffer and that buffer
 * (not a copy) is handed to the owner (io->handoff: on DPDK, the owner's
 * MP/SC rte_ring). A seed's frame of at most DP_RA_KEEP_FRAGS fragments
 * goes as a chunk list instead (dp_reasm.h: the xfer buffer lists the
 * received mbufs its chunks lie in, kept, not copied; x->nchunk): the
 * owner copies the body from the chunks into its slot (handed_seed) and
 * gives the mbufs back; any path that reads such a frame whole makes it
 * whole first (xfer_flatten), and every path that ends it gives the mbufs
 * back (xfer_release).
 *
 * Decode once: a frame's header is decoded and its stream classified once
 * on the lcore, into a struct dp_frame that ownership, the consumer-ACK
 * check, ingest (fg_ingest_classified) and the ACK bookkeeping read; a
 * hand-off carries it in the xfer buffer. Where: a single-datagram frame in
 * dp_shard_whole, a control-plane frame in dp_shard_frame, a fragmented one
 * at its fragment 0 (dp_reasm: placed straight into the slot, or buffered
 * and handed out with that decode, dp_reasm_out.hdr/.cls; decoded again
 * only when its last fragment came under another [udp] layer_ports binding).
 * The owner places a handed seed as its fragment path places its own
 * (handed_seed: slot begin, the body copied in, slot whole), not through
 * the whole-frame ingest.
 *
 * No DPDK here: the I/O goes through lc->env->io (dp_io.h), so the kernel
 * receiver bench/dp/kudp_rx.c runs this same code.
 *
 * Who may call: the thread that owns `lc` (on DPDK: dp_rx.c per datagram,
 * dp_lanes.c for frames from the control plane, the loop for its inbox and
 * timers; kudp_rx's one thread). Other shards reach it only through
 * io->handoff. */
#include <string.h>

#include "fg/slot_inline.h"

#include "dp_deliver.h"
#include "dp_reply.h"
#include "dp_shard.h"

/* The source a control-plane message names (attribution: cp_epoch_guard.h):
 * the datagram's peer, or (NULL) the lane frame being ingested, with the
 * lines its TLS sender speaks for. */
static struct fg_bm_src bm_src(const struct dp_lcore *lc, const struct dp_peer *peer)
{
	struct fg_bm_src s = {.family = 0, .lines = peer ? 0 : lc->lane_lines};
	if (peer) {
		memcpy(s.addr, peer->addr, sizeof(s.addr));
		s.port = peer->port;
		s.family = peer->family;
	}
	return s;
}

/* A burst's counts of the common outcomes and frames, added to the
 * counters once at its end (dp_shard_run) rather than one by one. */
struct shard_tally {
	uint32_t ok[2]; /* outcomes FG_O_ACCEPTED, FG_O_RESOLVED */
	uint32_t frames;
};

/* peer and route: the sender to answer (NULL: a frame from the control
 * plane, not answered). st: its status, or NULL to build it only when
 * it is sent (straight into the datagram: dp_reply_status_of). t: the
 * burst's tally (accepted and resolved counted there), or NULL (counted
 * here). Forced inline: every contribution's outcome comes this way,
 * and inlined into the fragment path the outcome record is read where
 * the reassembler wrote it, with no call and no spill of the burst's
 * state around it. */
static inline __attribute__((always_inline)) void on_outcome_t(struct dp_lcore *lc, const struct fg_seed *seed,
								 const struct fg_slot_result *res,
								 const struct fg_status *st, const struct dp_peer *peer,
								 const struct dp_route *route, uint64_t now,
								 struct shard_tally *t)
{
	enum fg_outcome o = res->outcome;
	if (__builtin_expect(o == FG_O_ACCEPTED || o == FG_O_RESOLVED, 1)) {
		if (t) {
			t->ok[o]++;
		} else {
			dp_lc_outcome(lc, o);
			dp_lc_count(lc, FG_C_CONTRIB_ACCEPTED, 1);
			if (o == FG_O_RESOLVED)
				dp_lc_count(lc, FG_C_SEEDS_RESOLVED, 1);
		}
		if (seed && seed->line < FG_LINES)
			atomic_store_explicit(&lc->k->per_line[seed->line],
					      atomic_load_explicit(&lc->k->per_line[seed->line], memory_order_relaxed) + 1,
					      memory_order_relaxed);
	} else {
		dp_lc_outcome(lc, o);
		switch (o) {
		case FG_O_DUPLICATE:
			dp_lc_count(lc, FG_C_DROP_DUPLICATE, 1);
			break;
		case FG_O_CONFLICT: {
			dp_lc_count(lc, FG_C_DROP_CONFLICT, 1);
			union fg_bmsg m = {.conflict = {.kind = FG_BM_CONFLICT,
							.line = seed ? seed->line : FG_LINE_NONE,
							.layer = seed ? seed->dst_layer : 0,
							.token_seq = seed ? seed->token_seq : 0,
							.epoch = res->epoch,
							.t_ns = now,
							.src = bm_src(lc, peer)}};
			lc->env->io->report(lc, &m);
			break;
		}
		case FG_O_LATE:
			dp_lc_count(lc, FG_C_DROP_LATE, 1);
			break;
		case FG_O_EXPIRED:
			dp_lc_count(lc, FG_C_DROP_EXPIRED, 1);
			break;
		case FG_O_NO_SLOT:
			dp_lc_count(lc, FG_C_DROP_NO_SLOT, 1);
			break;
		case FG_O_STALE:
			dp_lc_count(lc, FG_C_DROP_STALE, 1);
			break;
		default:
			break; /* poisoned, shape_mismatch, unexpected_line, line_disabled, bad_range: outcome[] only */
		}
	}
	/* An "accepted" status (the slot awaits other lines) is not actionable:
	 * the dispatcher skips the canonical hop only on fully_resolved, and
	 * arrival is already proven by the transport ACK; status_accepted =
	 * false leaves it out (wire.md 5: over UDP a status is optional). */
	const struct fg_config *cfg = lc->env->cfg;
	if (peer && cfg->send_status && (o != FG_O_ACCEPTED || cfg->status_accepted)) {
		if (st)
			dp_reply_status(lc, peer, route, st);
		else
			dp_reply_status_of(lc, peer, route, seed, res);
	}
	if (o == FG_O_RESOLVED)
		dp_deliver_seed(lc, res->slot, now);
}

static inline __attribute__((always_inline)) void on_outcome(struct dp_lcore *lc, const struct fg_seed *seed,
							       const struct fg_slot_result *res, const struct fg_status *st,
							       const struct dp_peer *peer, const struct dp_route *route,
							       uint64_t now)
{
	on_outcome_t(lc, seed, res, st, peer, route, now, NULL);
}

/* The tally t of a burst added to the counters. */
static void shard_tally_add(struct dp_lcore *lc, const struct shard_tally *t)
{
	for (unsigned o = FG_O_ACCEPTED; o <= FG_O_RESOLVED; o++)
		atomic_store_explicit(&lc->xk->outcome[o],
				      atomic_load_explicit(&lc->xk->outcome[o], memory_order_relaxed) + t->ok[o],
				      memory_order_relaxed);
	dp_lc_count(lc, FG_C_CONTRIB_ACCEPTED, (uint64_t)t->ok[FG_O_ACCEPTED] + t->ok[FG_O_RESOLVED]);
	dp_lc_count(lc, FG_C_SEEDS_RESOLVED, t->ok[FG_O_RESOLVED]);
	dp_lc_count(lc, FG_C_FRAMES, t->frames);
}

/* A canonical report received over UDP, to the shadow audit: its facts and
 * its fingerprint, computed here once (the control plane does not hash
 * it again), and for a FULL report its body (the audit keeps it to locate
 * a divergence). */
static void canonical_report(struct dp_lcore *lc, const struct fg_canon *c, const struct dp_xfer *from, uint64_t now)
{
	union fg_bmsg m = {.canonical = {.kind = FG_BM_CANONICAL,
					 .canon_kind = (uint8_t)c->kind,
					 .layer = c->dst_layer,
					 .token_seq = c->token_seq,
					 .start_pos = c->start_pos,
					 .seq_len = c->seq_len,
					 .fingerprint = c->digest,
					 .body = {.buf = FG_BUF_NONE},
					 .t_ns = now,
					 .src = bm_src(lc, from ? &from->peer : NULL)}};
	if (c->kind != FG_CANON_FULL) {
		lc->env->io->report(lc, &m);
		return;
	}
	m.canonical.fingerprint = fg_fingerprint(c->body, c->body_len);
	(void)lc->env->io->report_body(lc, &m, &m.canonical.body, c->body, c->body_len);
}

/* A whole frame this lcore owns (its shard, or not a seed), decoded once
 * into d. Returns the ingest return code; *r is filled. */
static int shard_decoded(struct dp_lcore *lc, const uint8_t *frame, uint32_t len, const struct dp_frame *d,
			 const struct dp_xfer *from, struct fg_ingest_result *r, uint64_t now)
{
	if (FG_HDR_LEN + (uint64_t)d->hdr.length != len) {
		dp_lc_malformed(lc, FG_R_TRUNCATED_FRAME);
		memset(r, 0, sizeof(*r));
		r->reason = FG_R_TRUNCATED_FRAME;
		fg_status_from_result(&lc->ictx, NULL, NULL, r->reason, &r->status);
		return -r->reason;
	}
	const struct fg_frame f = {.hdr = d->hdr, .payload = frame + FG_HDR_LEN};
	/* a UDP sender's status for a decoded seed is written straight into
	 * its datagram from the seed and slot result (on_outcome, st NULL);
	 * the control plane's frames take the ingest's (dp_lane_poll) */
	lc->ictx.status_later = from != NULL;
	int rc = fg_ingest_classified(&lc->slots, &lc->ictx, &f, &d->cls, now, r);
	lc->ictx.status_later = false;
	if (rc < 0) {
		if (rc == -FG_R_UNKNOWN_STREAM || rc == -FG_R_UNKNOWN_LAYER) {
			dp_lc_count(lc, FG_C_DROP_UNKNOWN_STREAM, 1);
		} else {
			dp_lc_malformed(lc, rc);
			if (r->band == FG_BAND_SEED) {
				dp_lc_outcome(lc, FG_O_MALFORMED);
				if (from && lc->env->cfg->send_status)
					dp_reply_status(lc, &from->peer, &from->route, &r->status);
			}
		}
		return rc;
	}
	if (r->band == FG_BAND_CANONICAL) {
		dp_lc_count(lc, FG_C_CANONICAL, 1);
		if (from) {
			canonical_report(lc, &r->canon, from, now);
			if (lc->env->cfg->send_status)
				dp_reply_status(lc, &from->peer, &from->route, &r->status);
		}
		return 0;
	}
	on_outcome(lc, &r->seed, &r->slot, from ? NULL : &r->status, from ? &from->peer : NULL,
		   from ? &from->route : NULL, now);
	return 0;
}

int dp_shard_frame(struct dp_lcore *lc, const uint8_t *frame, uint32_t len, const struct dp_xfer *from,
		   struct fg_ingest_result *r, uint64_t now)
{
	struct dp_frame d;
	if (dp_frame_decode(&lc->ictx, frame, len, &d) < 0) {
		dp_lc_malformed(lc, FG_R_SHORT_HEADER);
		memset(r, 0, sizeof(*r));
		r->reason = FG_R_SHORT_HEADER;
		fg_status_from_result(&lc->ictx, NULL, NULL, r->reason, &r->status);
		return -r->reason;
	}
	return shard_decoded(lc, frame, len, &d, from, r, now);
}

/* Owner of a whole frame: the seed's shard, else this lcore. */
static unsigned frame_owner(const struct dp_lcore *lc, const struct dp_frame *d)
{
	if (lc->env->n > 1 && d->cls.rc == 0 && d->cls.band == FG_BAND_SEED)
		return fg_shard_of(d->hdr.sequence, d->cls.layer, lc->env->cfg->layers, lc->env->n);
	return lc->idx;
}

/* Whether a frame the ingest saw may be ACKed as received: not when its
 * seed found no slot (no_slot: it was not placed; the status says so and a
 * sender that resends only unACKed frames must resend it). */
static bool ack_placed(int rc, const struct fg_ingest_result *r)
{
	return !(rc >= 0 && r->band == FG_BAND_SEED && r->slot.outcome == FG_O_NO_SLOT);
}

/* An xfer buffer given back, with the received buffers its chunk list
 * kept (x->nchunk): read by now. */
static void xfer_release(struct dp_lcore *lc, struct dp_xfer *x)
{
	if (x->nchunk) {
		const struct dp_ra_list *l = dp_ra_list(dp_xfer_data(x), lc->env->frame_max);
		if (l->nkept)
			lc->env->io->kept_put(lc, x->src, l->m, l->nkept);
		x->nchunk = 0;
	}
	lc->env->io->xfer_put(lc, x);
}

/* The frame of a chunk list made whole in x's data (every path but the
 * placement of a handed seed reads a frame whole), its kept buffers given
 * back. */
static void xfer_flatten(struct dp_lcore *lc, struct dp_xfer *x)
{
	dp_ra_list_flatten(dp_xfer_data(x), lc->env->frame_max, x->nchunk, x->len, lc->env->chunk, lc->reasm.copy);
	struct dp_ra_list *l = dp_ra_list(dp_xfer_data(x), lc->env->frame_max);
	if (l->nkept)
		lc->env->io->kept_put(lc, x->src, l->m, l->nkept);
	x->nchunk = 0;
}

/* x, a whole frame, handed to its owner (!= lc->idx), which ACKs it
 * once placed (x->ack); refused (the owner's inbox is full), dropped
 * lane_full and given back, not ACKed: the sender resends. */
static inline void handoff_one(struct dp_lcore *lc, unsigned owner, struct dp_xfer *x)
{
	if (!lc->env->io->handoff(lc, owner, x)) {
		dp_lc_count(lc, FG_C_DROP_LANE_FULL, 1);
		xfer_release(lc, x);
		return;
	}
	dp_lc_xcount(lc, DP_X_HANDOFF_OUT);
}

/* A whole frame in an xfer buffer x (owned by the caller of this function,
 * which gives it up here: processed and returned, or handed to the owner
 * with its decode). x->decoded: x->fr already holds the decode (fragment
 * 0's); else it is decoded here. */
static void on_xfer(struct dp_lcore *lc, struct dp_xfer *x, bool ackable, uint64_t now)
{
	uint8_t *frame = dp_xfer_data(x);
	dp_lc_count(lc, FG_C_FRAMES, 1);
	/* a chunk list goes to its owner as it is; read here, it is made whole */
	if (__builtin_expect(x->nchunk && !x->decoded, 0))
		xfer_flatten(lc, x);
	if (!x->decoded && dp_frame_decode(&lc->ictx, frame, x->len, &x->fr) < 0) {
		dp_lc_malformed(lc, FG_R_SHORT_HEADER);
		lc->env->io->xfer_put(lc, x);
		return;
	}
	x->decoded = true;
	if (dp_frame_is_ack(&x->fr)) {
		if (x->nchunk)
			xfer_flatten(lc, x);
		dp_lc_xcount(lc, DP_X_ACK_RX); /* a consumer ACKing resolved seeds */
		dp_deliver_on_ack(lc, &x->fr, frame, x->len, &x->peer, now);
		lc->env->io->xfer_put(lc, x);
		return;
	}
	unsigned owner = frame_owner(lc, &x->fr);
	if (owner != lc->idx) {
		x->ack = ackable; /* the owner ACKs once it knows the frame was placed */
		handoff_one(lc, owner, x);
		return;
	}
	if (x->nchunk)
		xfer_flatten(lc, x);
	struct fg_ingest_result r;
	int rc = shard_decoded(lc, frame, x->len, &x->fr, x, &r, now);
	if (ackable && ack_placed(rc, &r))
		dp_reply_ack_note(lc, x, x->fr.hdr.stream_id, x->fr.hdr.sequence, now);
	lc->env->io->xfer_put(lc, x);
}

/* A whole frame still inside the received datagram (frag_total 1, or the
 * raw profile). */
static void whole(struct dp_lcore *lc, const uint8_t *frame, uint32_t len, const struct dp_dgram *dg, bool ackable,
		  uint64_t now)
{
	struct dp_frame fr;
	if (dp_frame_decode(&lc->ictx, frame, len, &fr) < 0 || FG_HDR_LEN + (uint64_t)fr.hdr.length != len) {
		dp_lc_malformed(lc, len < FG_HDR_LEN ? FG_R_SHORT_HEADER : FG_R_TRUNCATED_FRAME);
		return;
	}
	unsigned owner = frame_owner(lc, &fr);
	if (owner == lc->idx && dp_frame_is_ack(&fr)) { /* a consumer's ACK: the facts below are not needed */
		dp_lc_count(lc, FG_C_FRAMES, 1);
		dp_lc_xcount(lc, DP_X_ACK_RX);
		dp_deliver_on_ack(lc, &fr, frame, len, &dg->fl->src, now);
		return;
	}
	struct dp_xfer from = {.peer = dg->fl->src, .route = dg->fl->route, .len = len, .ack = ackable,
			       .layer_bound = lc->ictx.layer_bound, .bound_layer = lc->ictx.bound_layer,
			       .decoded = true, .fr = fr, .hash = dg->fl->hash};
	const struct dp_frame *d = &from.fr;
	if (owner != lc->idx) {
		struct dp_xfer *x = len <= lc->env->frame_max ? lc->env->io->xfer_get(lc) : NULL;
		if (!x) {
			dp_lc_count(lc, FG_C_DROP_LANE_FULL, 1);
			return;
		}
		*x = from; /* with its decode: the owner does not decode again */
		memcpy(dp_xfer_data(x), frame, len);
		dp_lc_count(lc, FG_C_FRAMES, 1);
		if (!lc->env->io->handoff(lc, owner, x)) {
			dp_lc_count(lc, FG_C_DROP_LANE_FULL, 1);
			lc->env->io->xfer_put(lc, x);
			return;
		}
		dp_lc_xcount(lc, DP_X_HANDOFF_OUT); /* x->ack: the owner ACKs once placed */
		return;
	}
	dp_lc_count(lc, FG_C_FRAMES, 1);
	struct fg_ingest_result r;
	int rc = shard_decoded(lc, frame, len, d, &from, &r, now);
	if (ackable && ack_placed(rc, &r))
		dp_reply_ack_note(lc, &from, d->hdr.stream_id, d->hdr.sequence, now);
}

/* One fragment of a multi-fragment frame of flow fl: reassembly or
 * direct placement. hint: its reassembly lookup (dp_reasm_find), or NULL. */
static inline __attribute__((always_inline)) void fragment_out(struct dp_lcore *lc, const struct dp_reasm_out *o,
								 const struct dp_flow *fl, uint64_t now,
								 struct shard_tally *t);

static bool fragment(struct dp_lcore *lc, const struct fg_frag *f, const struct dp_flow *fl, struct dp_ra_hint *hint,
		     uint64_t now)
{
	struct dp_reasm_out out;
	if (dp_reasm_push_hinted(&lc->reasm, &fl->src, fl->hash, hint, f, &lc->ictx, now, &out) < 0)
		return false; /* never: push reports through out->disp */
	if (out.disp != DP_RA_TAKEN || out.events)
		fragment_out(lc, &out, fl, now, NULL);
	return out.disp == DP_RA_TAKEN;
}

/* What reassembly said about one fragment, acted on (counters, outcome,
 * status, the whole frame, the ACK note). The sender is the flow's: its
 * peer, route and hash are read from it where they are needed; an xfer
 * header is built only for a whole frame handed on. Forced inline:
 * dp_shard_run acts on every contribution's last chunk here, and a call
 * would give it a second prologue and epilogue. */
static inline __attribute__((always_inline)) void fragment_out(struct dp_lcore *lc, const struct dp_reasm_out *o,
								 const struct dp_flow *fl, uint64_t now,
								 struct shard_tally *t)
{
	if (o->disp != DP_RA_TAKEN) {
		switch (o->disp) {
		case DP_RA_TAKEN:
			break;
		case DP_RA_DUP:
			dp_lc_xcount(lc, DP_X_FRAG_DUP);
			break;
		case DP_RA_OVERFLOW:
			dp_lc_count(lc, FG_C_DROP_REASM_OVERFLOW, 1);
			break;
		case DP_RA_NOBUF:
			dp_lc_xcount(lc, DP_X_FRAG_NOBUF);
			break;
		case DP_RA_MALFORMED:
			dp_lc_xcount(lc, DP_X_FRAG_MALFORMED);
			dp_lc_malformed(lc, o->reason);
			break;
		case DP_RA_DISCARDED:
			dp_lc_xcount(lc, DP_X_FRAG_DISCARDED);
			break;
		}
	}
	/* Most fragments (4 of a hidden-1536 contribution's 5) only land:
	 * nothing to answer. */
	if (!(o->events & (DP_RA_EV_OUTCOME | DP_RA_EV_FRAME | DP_RA_EV_COMPLETE)))
		return;
	if (o->events & DP_RA_EV_OUTCOME) {
		if (o->res.outcome == FG_O_MALFORMED) {
			struct fg_status st;
			dp_lc_malformed(lc, o->reason);
			dp_lc_outcome(lc, FG_O_MALFORMED);
			fg_status_from_result(&lc->ictx, NULL, NULL, o->reason, &st);
			st.token_seq = o->seed.token_seq;
			st.dst_layer = o->seed.dst_layer;
			if (lc->env->cfg->send_status)
				dp_reply_status(lc, &fl->src, &fl->route, &st);
		} else {
			on_outcome_t(lc, &o->seed, &o->res, NULL, &fl->src, &fl->route, now, t);
		}
	}
	if (o->events & DP_RA_EV_FRAME) {
		/* its header written field by field (fr and seed only with the
		 * decoded and seeded that name them), not cleared first */
		struct dp_xfer *x = dp_xfer_of(o->buf);
		x->peer = fl->src;
		x->route = fl->route;
		x->len = o->len;
		x->ack = true;
		x->layer_bound = lc->ictx.layer_bound;
		x->bound_layer = lc->ictx.bound_layer;
		x->decoded = false;
		x->seeded = false;
		x->nchunk = o->nchunk;
		x->src = (uint8_t)lc->idx;
		x->hash = fl->hash;
		/* fragment 0's decode, unless this fragment came under another
		 * address binding ([udp] layer_ports): then judged again under it */
		uint32_t binding = lc->ictx.layer_bound ? (uint32_t)lc->ictx.bound_layer + 1u : 0u;
		if (o->binding == binding) {
			x->fr.hdr = o->hdr;
			x->fr.cls = o->cls;
			x->decoded = true;
			/* and a seed's prefix (its owner does not decode it again) */
			if (o->cls.rc == 0 && o->cls.band == FG_BAND_SEED) {
				x->seed = o->seed;
				x->seeded = true;
				/* another shard's (a chunk list always is): on_xfer's
				 * hand-off, its tests known to pass (decoded, not an
				 * ACK), the frame counted with the burst's */
				const unsigned owner = frame_owner(lc, &x->fr);
				if (owner != lc->idx) {
					if (t)
						t->frames++;
					else
						dp_lc_count(lc, FG_C_FRAMES, 1);
					handoff_one(lc, owner, x);
					return;
				}
			}
		}
		on_xfer(lc, x, true, now); /* counts the frame and ACKs it */
	} else if (o->events & DP_RA_EV_COMPLETE) {
		if (t)
			t->frames++;
		else
			dp_lc_count(lc, FG_C_FRAMES, 1);
		dp_reply_ack_note_peer(lc, &fl->src, fl->hash, &fl->route, o->stream_id, o->sequence, now);
	}
}

/* A datagram of flow fl the burst path does not place itself (raw
 * profile: its payload in f->chunk, f->chunk_len; one fragment: f; a
 * fragment header the codec refuses: its reason rc < 0): one at a time. */
static void dgram_one(struct dp_lcore *lc, const struct dp_flow *fl, const struct fg_frag *f, ssize_t rc,
		      uint64_t now)
{
	if (!fl->fragmented) {
		const struct dp_dgram dg = {.fl = fl, .payload = f->chunk, .len = f->chunk_len};
		dp_lc_xcount(lc, DP_X_RAW_DGRAMS);
		whole(lc, dg.payload, dg.len, &dg, false, now);
		return;
	}
	if (rc < 0) {
		dp_lc_xcount(lc, DP_X_PKT_MALFORMED);
		dp_lc_malformed(lc, (int)rc);
		return;
	}
	dp_lc_count(lc, FG_C_FRAGS, 1);
	dp_lc_xcount(lc, DP_X_FRAG_SINGLE);
	const struct dp_dgram dg = {.fl = fl, .payload = f->chunk, .len = f->chunk_len};
	whole(lc, f->chunk, f->chunk_len, &dg, true, now);
}

/* The ingest context's address binding for a datagram of flow fl ([udp]
 * layer_ports: it carries the address's layer, and a hand-off copies it).
 * Set before every path that reads it (dp_shard_run: once per item). */
static inline void bind_layer(struct dp_lcore *lc, const struct dp_flow *fl)
{
	lc->ictx.layer_bound = fl->layer_bound;
	lc->ictx.bound_layer = fl->layer_bound ? fl->bound_layer : 0;
}

void dp_shard_run(struct dp_lcore *lc, struct dp_shard_burst *b, uint64_t now)
{
	const struct fg_frag *f = b->f;
	uint32_t taken = 0;
	struct shard_tally t = {{0, 0}, 0};
	struct dp_ra_hint h = {.ctx = DP_RA_HINT_NONE};
	for (const struct dp_shard_item *it = b->it, *end = b->it + b->n; it < end; it++) {
		const struct dp_flow *fl = it->fl;
		unsigned i = it->at, e = it[1].at;
		/* nothing the placement of an item calls binds another flow */
		bind_layer(lc, fl);
		if (it->rc != 1) {
			dgram_one(lc, fl, &f[i], it->rc, now);
			continue;
		}
		/* the run [i, e): fragments of one frame, one after another; it
		 * starts from its lookup, or where the run of its frame before
		 * it ended */
		if (!it->cont)
			h = it->hint;
		while (i < e) {
			struct dp_reasm_out out;
			/* the common case: chunks into their slot; a fragment it
			 * does not take (a frame's first fragment to come) is
			 * pushed, and the run goes on from its record in the same
			 * call */
			unsigned k = h.ctx == DP_RA_HINT_NONE ? 0
							      : dp_reasm_land_run(&lc->reasm, &h, &f[i], e - i, now, &out);
			if (k) {
				taken += k;
			} else {
				k = dp_reasm_push_run(&lc->reasm, &fl->src, fl->hash, &h, &f[i], it->fid, e - i,
						      &lc->ictx, now, &out);
				taken += k - (out.disp != DP_RA_TAKEN);
			}
			i += k;
			if (out.disp != DP_RA_TAKEN || out.events)
				fragment_out(lc, &out, fl, now, &t);
		}
	}
	if (t.frames | t.ok[FG_O_ACCEPTED] | t.ok[FG_O_RESOLVED])
		shard_tally_add(lc, &t);
	if (b->nfrag) {
		dp_lc_count(lc, FG_C_FRAGS, b->nfrag);
		dp_xcount(lc->xk, DP_X_FRAG_TAKEN, taken);
	}
}

void dp_shard_dgram(struct dp_lcore *lc, const struct dp_dgram *dg, uint64_t now)
{
	bind_layer(lc, dg->fl);
	if (!dg->fl->fragmented) {
		dp_lc_xcount(lc, DP_X_RAW_DGRAMS);
		whole(lc, dg->payload, dg->len, dg, false, now);
		return;
	}
	struct fg_frag f;
	ssize_t rc = fg_frag_decode(dg->payload, dg->len, &f);
	if (rc < 0) {
		dp_lc_xcount(lc, DP_X_PKT_MALFORMED);
		dp_lc_malformed(lc, (int)rc);
		return;
	}
	dp_lc_count(lc, FG_C_FRAGS, 1);
	if (f.total == 1) {
		dp_lc_xcount(lc, DP_X_FRAG_SINGLE);
		whole(lc, f.chunk, f.chunk_len, dg, true, now);
		return;
	}
	if (fragment(lc, &f, dg->fl, NULL, now))
		dp_lc_xcount(lc, DP_X_FRAG_TAKEN);
}

/* Housekeeping, about once a millisecond: delivery resends, reassembly
 * and slot expiry (expiries are reported to the control plane). */
static void timers(struct dp_lcore *lc, uint64_t now)
{
	dp_deliver_timer(lc, now);
	uint32_t t = dp_reasm_expire(&lc->reasm, now, 1024);
	if (t)
		dp_lc_count(lc, FG_C_REASM_TIMEOUT, t);
	/* slots freed because their only attempt was aborted (fg_slot_abort):
	 * the slot engine counts them, the registry gets the difference */
	if (lc->slots.abandoned != lc->abandoned_seen) {
		dp_xcount(lc->xk, DP_X_SLOTS_ABANDONED, lc->slots.abandoned - lc->abandoned_seen);
		lc->abandoned_seen = lc->slots.abandoned;
	}
	struct fg_slot_expired ex[32];
	int k;
	do {
		k = fg_slots_expire(&lc->slots, now, ex, 32);
		for (int i = 0; i < k; i++) {
			union fg_bmsg m = {.expired = {.kind = FG_BM_EXPIRED,
						       .landed = ex[i].landed,
						       .expected = ex[i].expected,
						       .layer = ex[i].dst_layer,
						       .token_seq = ex[i].token_seq,
						       .epoch = lc->slots.epoch,
						       .t_ns = now}};
			lc->env->io->report(lc, &m);
		}
		if (k > 0)
			dp_lc_count(lc, FG_C_SLOTS_EXPIRED, (uint64_t)k);
	} while (k == 32);
}

/* The ACKs noted since the last flush, sent. Not inlined, and called only
 * when some are noted: bench/cap/callgrind.sh counts this call's cost as
 * the lcore's ACK work. */
static __attribute__((noinline)) void dp_shard_ack_flush(struct dp_lcore *lc)
{
	dp_reply_ack_flush(lc);
}

void dp_shard_tick(struct dp_lcore *lc, uint64_t now)
{
	if (now >= lc->next_timer_ns) {
		timers(lc, now);
		lc->next_timer_ns = now + 1000000ull;
	}
	if (lc->ack_now || now >= lc->next_ack_ns) {
		if (lc->ack.n_dirty)
			dp_shard_ack_flush(lc);
		lc->ack_now = false;
		lc->next_ack_ns = now + lc->env->ack_interval_ns;
	}
}

void *dp_shard_sink(void *arg, uint32_t slot, uint32_t body_len)
{
	struct dp_lcore *lc = arg;
	return lc->env->io->sink ? lc->env->io->sink(lc, slot, body_len) : NULL;
}

/* The body of handed seed x (a chunk list, x->nchunk >= 2) copied from
 * its chunks to dst (its slot's buffer, the seed's body length): fragment
 * 0's past the frame header and seed prefix, each other whole, as the
 * fragment path places them. */
static void handed_chunks(struct dp_lcore *lc, struct dp_xfer *x, uint8_t *dst)
{
	const struct dp_ra_list *l = dp_ra_list(dp_xfer_data(x), lc->env->frame_max);
	const uint32_t C = lc->env->chunk;
	lc->reasm.gather(dst, l->p, x->nchunk, C, DP_RA_SEED_HDR, x->len - (x->nchunk - 1u) * C);
}

/* A handed frame that is a seed of this shard, placed as the fragment
 * path places a contribution of its own (dp_reasm: fg_slot_begin_fast,
 * the body copied into the slot buffer, fg_slot_whole_fast; a line already
 * whole to fg_slot_put, which tells duplicate from conflict), not through
 * the whole-frame ingest: the frame's decode came with it. Its outcome,
 * status (written straight into the datagram) and ACK note as
 * shard_decoded and dp_shard_handed give them. Returns false, with nothing
 * done, for any frame that is not this case (not a seed, truncated, a
 * layer not served, a seed the codec refuses, a disabled line, limits the
 * table does not fit): the whole-frame ingest names it. */
static bool handed_seed(struct dp_lcore *lc, struct dp_xfer *x, const uint8_t *frame, uint64_t now)
{
	const struct dp_frame *d = &x->fr;
	struct fg_ingest_ctx *ictx = &lc->ictx;
	struct fg_slots *slots = &lc->slots;
	if (d->cls.rc != 0 || d->cls.band != FG_BAND_SEED || FG_HDR_LEN + (uint64_t)d->hdr.length != x->len ||
	    !fg_ingest_serves(ictx, d->cls.layer) || !fg_slots_fit_limits(slots, ictx->limits))
		return false;
	struct fg_seed seed;
	if (x->seeded) { /* the receiving lcore decoded its prefix */
		seed = x->seed;
		seed.body = frame + FG_HDR_LEN + FG_SEED_PREFIX_LEN;
	} else {
		const struct fg_frame f = {.hdr = d->hdr, .payload = frame + FG_HDR_LEN};
		if (fg_seed_decode(&f, d->cls.layer, ictx->limits, &seed) < 0)
			return false;
	}
	if (fg_linefacts_state(ictx->lines, seed.line) == FG_LINE_DISABLED)
		return false;
	/* the table's epoch never runs behind the published one (as ingest) */
	if ((int32_t)(fg_linefacts_epoch(ictx->lines) - slots->epoch) > 0)
		slots->epoch = fg_linefacts_epoch(ictx->lines);
	struct fg_slot_ref ref;
	struct fg_slot_result res;
	enum fg_outcome o = fg_slot_begin_fast(slots, &seed, now, &ref, &res);
	if (__builtin_expect(o == FG_O_PARTIAL, 1)) {
		/* the slot's body length is the seed's: its shape (slot_admit)
		 * under the table's hidden (fg_slots_fit_limits); fg_slot_land
		 * checks the range should it not be */
		if (__builtin_expect(ref.body_len == seed.body_len, 1)) {
			if (x->nchunk)
				handed_chunks(lc, x, ref.buf); /* from the received buffers */
			else
				lc->reasm.copy(ref.buf, seed.body, seed.body_len); /* as reassembly places chunks */
			/* the last line: the resolution writes the body where it
			 * goes as well (as the fragment path's, dp_shard_sink) */
			o = fg_slot_whole_fast(slots, &ref, &res, dp_shard_sink, lc);
		} else {
			if (x->nchunk)
				xfer_flatten(lc, x); /* seed.body is whole now */
			o = fg_slot_land(slots, &ref, 0, seed.body, seed.body_len, now, &res);
		}
		(void)o; /* res names it */
	} else if (o == FG_O_DUP_PENDING) {
		/* the line is already whole: the whole body tells duplicate
		 * (late) from conflict */
		if (x->nchunk)
			xfer_flatten(lc, x);
		if (fg_slot_put(slots, &seed, now, &res) < 0)
			return false; /* never: every argument is set */
	}
	on_outcome(lc, &seed, &res, NULL, &x->peer, &x->route, now);
	/* handed off unACKed: ACKed here once placed (ack_placed) */
	if (x->ack && res.outcome != FG_O_NO_SLOT)
		dp_reply_ack_note(lc, x, d->hdr.stream_id, d->hdr.sequence, now);
	return true;
}

void dp_shard_handed(struct dp_lcore *lc, struct dp_xfer *x, uint64_t now)
{
	struct fg_ingest_result r;
	dp_lc_xcount(lc, DP_X_HANDOFF_IN);
	lc->ictx.layer_bound = x->layer_bound; /* the receiving lcore's address binding */
	lc->ictx.bound_layer = x->bound_layer;
	const uint8_t *fr = dp_xfer_data(x);
	/* a chunk list is placed from its chunks only as a decoded seed
	 * (handed_seed); any other reading takes the frame whole */
	if (x->nchunk && !x->seeded)
		xfer_flatten(lc, x);
	/* a handed-off frame comes with its decode; an ACK copy normally too
	 * (dp_deliver.c) */
	if (!x->decoded && dp_frame_decode(&lc->ictx, fr, x->len, &x->fr) < 0) {
		dp_lc_malformed(lc, FG_R_SHORT_HEADER);
	} else if (dp_frame_is_ack(&x->fr)) {
		dp_deliver_on_ack(lc, &x->fr, fr, x->len, NULL, now); /* a copy from the lcore that received (and checked) it */
	} else if (!handed_seed(lc, x, fr, now)) {
		if (x->nchunk)
			xfer_flatten(lc, x);
		int rc = shard_decoded(lc, fr, x->len, &x->fr, x, &r, now);
		/* handed off unACKed: ACK here once placed */
		if (x->ack && ack_placed(rc, &r))
			dp_reply_ack_note(lc, x, x->fr.hdr.stream_id, x->fr.hdr.sequence, now);
	}
	xfer_release(lc, x);
}

/* dp_lanes.c - the lcore's end of its boundary lane (include/fg/boundary.h):
 * messages to the control plane (dp -> cp ring, buffers from pool dp2cp) and
 * the cp -> dp ring drained once per loop iteration (frames from TLS peers,
 * epoch flushes).
 *
 * Who may call: the lcore that owns `lc` only (it is the single producer of
 * to_cp and of dp2cp's allocations, the single consumer of to_dp). A full
 * ring is counted (drop_lane_full); with the pool empty a message goes
 * without its body (lane_no_body); nothing blocks. The
 * control plane sleeps until woken: dp_lane_wake, once per loop iteration,
 * writes the boundary's eventfd on the empty -> non-empty edge only (the
 * only syscall an lcore makes besides the clock; bounded by the control
 * plane's sleeps, see struct fg_wake), and only for an urgent message or a
 * lane filling up (boundary.h, "urgent and deferred messages"). */
#include <string.h>
#include <unistd.h>

#include "dp_lanes.h"
#include "dp_shard.h"

/* Whether the control plane must be woken for m (boundary.h, "urgent and
 * deferred messages"). */
static bool msg_urgent(const union fg_bmsg *m)
{
	switch (m->kind) {
	case FG_BM_RESOLVED:
		return !m->resolved.udp_sent || fg_watch_has(&dp_g.b->watch, m->resolved.layer);
	case FG_BM_PEER:
	case FG_BM_CANONICAL:
		return false;
	default:
		return true;
	}
}

static void note_sent(struct dp_lcore *lc, const union fg_bmsg *m)
{
	/* the wake-up, if one is due, goes once per burst (dp_lane_wake) */
	lc->lane_sent = true;
	lc->lane_urgent |= msg_urgent(m);
}

void dp_lane_send(struct dp_lcore *lc, const union fg_bmsg *m)
{
	if (!fg_ring_push(lc->lane->to_cp, m)) {
		dp_lc_count(lc, FG_C_DROP_LANE_FULL, 1);
		return;
	}
	note_sent(lc, m);
}

/* A message's body into a dp2cp buffer, named in *body. No buffer: the
 * facts still cross, the body does not (the ring holds lane_ring
 * messages, the pool lane_bufs bodies; boundary.h, "a message without its
 * body"). */
static inline void lane_body(struct dp_lcore *lc, struct fg_bm_body *body, const uint8_t *src, uint32_t len)
{
	struct fg_lane *ln = lc->lane;
	uint32_t bi = len <= ln->dp2cp.size ? fg_pool_get(&ln->dp2cp) : FG_BUF_NONE;
	body->buf = bi;
	body->len = len;
	if (bi != FG_BUF_NONE)
		memcpy(fg_pool_buf(&ln->dp2cp, bi), src, len);
	else
		dp_lc_count(lc, FG_C_LANE_NO_BODY, 1);
}

bool dp_lane_send_body(struct dp_lcore *lc, union fg_bmsg *m, struct fg_bm_body *body, const uint8_t *src,
		       uint32_t len)
{
	struct fg_lane *ln = lc->lane;
	/* Room first: we are to_cp's only producer, so the push below cannot
	 * fail and the buffer is never ours to put back (the control plane is
	 * the free list's only producer; boundary.h, ownership). */
	if (fg_ring_count(ln->to_cp) > ln->to_cp->mask) {
		dp_lc_count(lc, FG_C_DROP_LANE_FULL, 1);
		return false;
	}
	lane_body(lc, body, src, len);
	(void)fg_ring_push(ln->to_cp, m); /* room checked above */
	note_sent(lc, m);
	return true;
}

union fg_bmsg *dp_lane_reserve(struct dp_lcore *lc)
{
	union fg_bmsg *m = fg_ring_reserve(lc->lane->to_cp);
	if (!m)
		dp_lc_count(lc, FG_C_DROP_LANE_FULL, 1);
	return m;
}

void dp_lane_commit_body(struct dp_lcore *lc, union fg_bmsg *m, struct fg_bm_body *body, const uint8_t *src,
			 uint32_t len)
{
	struct fg_lane *ln = lc->lane;
	/* m is to_cp's reserved element and we are the ring's only producer:
	 * the commit publishes it, so the buffer is never ours to put back
	 * (dp_lane_send_body's order: room first, then the buffer). */
	lane_body(lc, body, src, len);
	note_sent(lc, m);
	fg_ring_commit(ln->to_cp);
}

void *dp_lane_sink(struct dp_lcore *lc, uint32_t len)
{
	struct fg_lane *ln = lc->lane;
	if (len > ln->dp2cp.size)
		return NULL;
	if (!lc->sink_has_buf) {
		/* room first, then the buffer (dp_lane_send_body): should the
		 * ring fill before the commit all the same, the buffer stays
		 * held for the next resolution, never put back by this thread */
		if (fg_ring_count(ln->to_cp) > ln->to_cp->mask)
			return NULL;
		uint32_t bi = fg_pool_get(&ln->dp2cp);
		if (bi == FG_BUF_NONE)
			return NULL;
		lc->sink_buf = bi;
		lc->sink_has_buf = true;
	}
	return fg_pool_buf(&ln->dp2cp, lc->sink_buf);
}

void dp_lane_commit_sunk(struct dp_lcore *lc, union fg_bmsg *m, struct fg_bm_body *body, uint32_t len)
{
	body->buf = lc->sink_buf;
	body->len = len;
	lc->sink_has_buf = false;
	note_sent(lc, m);
	fg_ring_commit(lc->lane->to_cp);
}

/* Deferred messages fill a quarter of the ring or of the pool: wake the
 * control plane anyway rather than wait for its tick. */
static bool lane_filling(const struct fg_lane *ln)
{
	return fg_ring_count(ln->to_cp) >= (ln->to_cp->mask + 1) / 4 ||
	       fg_ring_count(ln->dp2cp.free) <= ln->dp2cp.n - ln->dp2cp.n / 4;
}

void dp_lane_wake(struct dp_lcore *lc)
{
	if (!lc->lane_sent)
		return;
	bool urgent = lc->lane_urgent;
	lc->lane_sent = false;
	lc->lane_urgent = false;
	if (!urgent && !lane_filling(lc->lane)) {
		/* the control plane's tick drains it (boundary.h, deferred) */
		dp_lc_xcount(lc, DP_X_LANE_DEFERRED);
		return;
	}
	/* One fence and one load per burst that pushed; a syscall only on the
	 * edge where the control plane sleeps (boundary.h, struct fg_wake). */
	int k = fg_wake_kick(&dp_g.b->wake);
	if (k > 0)
		dp_lc_xcount(lc, DP_X_LANE_WAKES);
	else if (k < 0)
		dp_lc_xcount(lc, DP_X_LANE_WAKE_FAIL); /* cannot happen short of a closed fd: counted */
}

unsigned dp_lane_poll(struct dp_lcore *lc, uint64_t now)
{
	union fg_bmsg m;
	unsigned n = 0;
	while (n < DP_BURST && fg_ring_pop(lc->lane->to_dp, &m)) {
		n++;
		if (m.kind == FG_BM_FLUSH) {
			uint32_t k = fg_slots_flush(&lc->slots);
			dp_lc_count(lc, FG_C_SLOTS_FLUSHED, k);
			if ((int32_t)(m.flush.epoch - lc->slots.epoch) > 0)
				lc->slots.epoch = m.flush.epoch;
			dp_lc_xcount(lc, DP_X_LANE_FLUSH);
			continue;
		}
		if (m.kind != FG_BM_CONTRIB)
			continue;
		const struct fg_bm_contrib *c = &m.contrib;
		/* the OUTCOME's t_ns: its own clock read, the loop's `now` was taken
		 * before the RX burst (one vDSO read per request) */
		uint64_t taken = c->req_id ? dp_clock_ns() : 0;
		dp_lc_xcount(lc, DP_X_LANE_FRAMES);
		/* A frame the control plane received on an address naming its
		 * layer (/layers/<L>/, /flow?layer=<L>): fg_bm_contrib.layer_bound. */
		lc->ictx.layer_bound = c->layer_bound != 0;
		lc->ictx.bound_layer = c->layer_bound ? c->layer : 0;
		struct fg_ingest_result r;
		bool valid = c->frame.buf < lc->lane->cp2dp.n && c->frame.len <= lc->lane->cp2dp.size;
		if (valid) {
			lc->from_lane = true; /* a seed it resolves says so (fg_bm_resolved.ingress) */
			lc->lane_lines = c->sender_lines;
			(void)dp_shard_frame(lc, fg_pool_buf(&lc->lane->cp2dp, c->frame.buf), c->frame.len, NULL, &r,
					     now);
			lc->from_lane = false;
			lc->lane_lines = 0;
			fg_pool_put(&lc->lane->cp2dp, c->frame.buf);
		} else {
			memset(&r, 0, sizeof(r));
			dp_lc_malformed(lc, FG_R_TRUNCATED_FRAME);
			fg_status_from_result(&lc->ictx, NULL, NULL, FG_R_TRUNCATED_FRAME, &r.status);
		}
		if (c->req_id) {
			union fg_bmsg o = {
				.outcome = {.kind = FG_BM_OUTCOME, .req_id = c->req_id, .status = r.status, .t_ns = taken}};
			dp_lane_send(lc, &o);
		}
	}
	return n;
}

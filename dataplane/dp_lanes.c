/* dp_lanes.c - the lcore's end of its boundary lane (include/fg/boundary.h):
 * messages to the control plane (dp -> cp ring, buffers from pool dp2cp) and
 * the cp -> dp ring drained once per loop iteration (frames from TLS peers,
 * epoch flushes).
 *
 * Who may call: the lcore that owns `lc` only (it is the single producer of
 * to_cp and of dp2cp's allocations, the single consumer of to_dp). A full
 * ring or an empty pool is counted (drop_lane_full); nothing blocks. The
 * control plane sleeps until woken: dp_lane_wake, once per loop iteration,
 * writes the boundary's eventfd on the empty -> non-empty edge only (the
 * only syscall an lcore makes besides the clock; bounded by the control
 * plane's sleeps, see struct fg_wake). */
#include <string.h>
#include <unistd.h>

#include "dp_lanes.h"
#include "dp_shard.h"

void dp_lane_send(struct dp_lcore *lc, struct fg_bmsg *m)
{
	if (!fg_ring_push(lc->lane->to_cp, m)) {
		if (m->buf != FG_BUF_NONE)
			fg_pool_put(&lc->lane->dp2cp, m->buf);
		dp_lc_count(lc, FG_C_DROP_LANE_FULL, 1);
		return;
	}
	lc->lane_sent = true; /* the wake-up, if one is due, goes once per burst (dp_lane_wake) */
}

void dp_lane_wake(struct dp_lcore *lc)
{
	if (!lc->lane_sent)
		return;
	lc->lane_sent = false;
	struct fg_wake *w = &dp_g.b->wake;
	/* One fence and one load per burst that pushed; a syscall only on the
	 * edge where the control plane sleeps (boundary.h, struct fg_wake). */
	if (!w->has_fd || !fg_wake_after_push(w))
		return;
	uint64_t one = 1;
	if (write(w->fd, &one, sizeof(one)) == (ssize_t)sizeof(one))
		dp_lc_xcount(lc, DP_X_LANE_WAKES);
	else
		dp_lc_xcount(lc, DP_X_LANE_WAKE_FAIL); /* cannot happen short of a closed fd: counted */
}

/* A copy of a frame to the control plane (CANONICAL). */
void dp_lane_send_frame(struct dp_lcore *lc, uint8_t type, const uint8_t *frame, uint32_t len,
			    const struct fg_status *st, uint64_t now)
{
	uint32_t bi = fg_pool_get(&lc->lane->dp2cp);
	if (bi == FG_BUF_NONE || len > lc->lane->dp2cp.size) {
		if (bi != FG_BUF_NONE)
			fg_pool_put(&lc->lane->dp2cp, bi);
		dp_lc_count(lc, FG_C_DROP_LANE_FULL, 1);
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
	dp_lane_send(lc, &m);
}

unsigned dp_lane_poll(struct dp_lcore *lc, uint64_t now)
{
	struct fg_bmsg m;
	unsigned n = 0;
	while (n < DP_BURST && fg_ring_pop(lc->lane->to_dp, &m)) {
		n++;
		if (m.type == FG_BM_FLUSH) {
			uint32_t k = fg_slots_flush(&lc->slots);
			dp_lc_count(lc, FG_C_SLOTS_FLUSHED, k);
			if ((int32_t)(m.epoch - lc->slots.epoch) > 0)
				lc->slots.epoch = m.epoch;
			dp_lc_xcount(lc, DP_X_LANE_FLUSH);
			continue;
		}
		if (m.type != FG_BM_FRAME)
			continue;
		dp_lc_xcount(lc, DP_X_LANE_FRAMES);
		struct fg_ingest_result r;
		int rc = -FG_R_TRUNCATED_FRAME;
		if (m.buf < lc->lane->cp2dp.n && m.len <= lc->lane->cp2dp.size)
			rc = dp_shard_frame(lc, fg_pool_buf(&lc->lane->cp2dp, m.buf), m.len, NULL, &r, now);
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
			dp_lane_send(lc, &o);
		}
	}
	return n;
}

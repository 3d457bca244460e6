/* dp_lanes.h - the lcore's end of its boundary lane (dp_lanes.c). Every
 * function runs on the lcore that owns `lc` only. */
#ifndef DP_LANES_H
#define DP_LANES_H

#include "dp_internal.h"

/* Push m to the control plane. On a full ring the buffer m names (if any)
 * goes back to pool dp2cp and the drop is counted. m is copied. */
void dp_lane_send(struct dp_lcore *lc, struct fg_bmsg *m);
/* Copy frame[0..len) into a dp2cp buffer and send it as message `type`
 * with the facts of st (may be NULL). Counted drop when no buffer is free. */
void dp_lane_send_frame(struct dp_lcore *lc, uint8_t type, const uint8_t *frame, uint32_t len,
			const struct fg_status *st, uint64_t now);
/* Once per loop iteration: when this iteration pushed to to_cp and the
 * control plane sleeps, write the boundary's eventfd (struct fg_wake). */
void dp_lane_wake(struct dp_lcore *lc);
/* Handle up to DP_BURST messages from the control plane: FRAME (ingested
 * as this lcore's shard, answered with OUTCOME when req_id != 0) and FLUSH.
 * Returns how many were taken. */
unsigned dp_lane_poll(struct dp_lcore *lc, uint64_t now);

#endif

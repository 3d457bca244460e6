/* dp_lanes.h - the lcore's end of its boundary lane (dp_lanes.c). Every
 * function runs on the lcore that owns `lc` only. */
#ifndef DP_LANES_H
#define DP_LANES_H

#include "dp_internal.h"

/* Push m (no body) to the control plane; a full ring is counted
 * (drop_lane_full). m is copied. */
void dp_lane_send(struct dp_lcore *lc, const union fg_bmsg *m);
/* Copy src[0..len) into a dp2cp buffer, point *body (a field of m) at it
 * and push m. Takes the buffer only when the ring has room, so ownership
 * passes to the control plane with the message. When the pool is empty
 * (or len is larger than a buffer) m goes without its body: body->buf is
 * FG_BUF_NONE, body->len still len (counted lane_no_body). Returns false
 * (counted drop_lane_full) only when the ring is full. */
bool dp_lane_send_body(struct dp_lcore *lc, union fg_bmsg *m, struct fg_bm_body *body, const uint8_t *src,
		       uint32_t len);
/* dp_lane_send_body in two steps, the message written in place in the
 * ring (no copy of it): dp_lane_reserve returns to_cp's next element to
 * fill, or NULL when the ring is full (counted drop_lane_full);
 * dp_lane_commit_body then copies src[0..len) into a dp2cp buffer (or
 * none, as dp_lane_send_body), points *body (a field of m) at it and
 * publishes m. Every byte of m is the caller's to write (the element
 * holds an older message) before the commit, which must follow the
 * reserve with no other message pushed in between. */
union fg_bmsg *dp_lane_reserve(struct dp_lcore *lc);
void dp_lane_commit_body(struct dp_lcore *lc, union fg_bmsg *m, struct fg_bm_body *body, const uint8_t *src,
			 uint32_t len);
/* The lane's destination for a resolution (io->sink): a dp2cp buffer for
 * a body of len bytes, held by lc (sink_buf, sink_has_buf), taken only
 * when to_cp has room now (as dp_lane_send_body's order), or the one
 * already held. Returns it, or NULL (no room, no buffer free, len larger
 * than a buffer: the message goes as without, counted then). */
void *dp_lane_sink(struct dp_lcore *lc, uint32_t len);
/* dp_lane_commit_body for m whose body is in the held buffer (after
 * dp_lane_sink): the buffer goes with m, nothing is copied. */
void dp_lane_commit_sunk(struct dp_lcore *lc, union fg_bmsg *m, struct fg_bm_body *body, uint32_t len);
/* Once per loop iteration: when this iteration pushed to to_cp and the
 * control plane sleeps, write the boundary's eventfd (struct fg_wake). */
void dp_lane_wake(struct dp_lcore *lc);
/* Handle up to DP_BURST messages from the control plane: CONTRIB (ingested
 * as this lcore's shard, answered with OUTCOME when req_id != 0) and FLUSH.
 * Returns how many were taken. */
unsigned dp_lane_poll(struct dp_lcore *lc, uint64_t now);

#endif

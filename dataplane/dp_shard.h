/* dp_shard.h - the shard work of one lcore (dp_shard.c). Every function
 * runs on the lcore that owns `lc` only. */
#ifndef DP_SHARD_H
#define DP_SHARD_H

#include "dp_internal.h"

/* A whole frame from the control plane, which this lcore owns: decode its
 * header and classify its stream once (dp_frame_decode), ingest, count,
 * answer. from is the UDP sender, or NULL for a frame from the control
 * plane (answered through the lane). Returns the ingest return code (0 or
 * -FG_R_*); *r is filled either way. frame is borrowed. (Frames from the
 * wire take dp_shard_whole / dp_shard_fragment, which decode once and
 * carry the decode through a hand-off.) */
int dp_shard_frame(struct dp_lcore *lc, const uint8_t *frame, uint32_t len, const struct dp_xfer *from,
		   struct fg_ingest_result *r, uint64_t now);
/* A whole frame still inside an mbuf (frag_total 1, or the raw profile):
 * ingest here or copy it into an xfer buffer for its owner. ackable: the
 * fragmented profile (the sender expects an ACK). */
void dp_shard_whole(struct dp_lcore *lc, const uint8_t *frame, uint32_t len, const struct dp_pkt *pk,
		    bool ackable, uint64_t now);
/* One fragment of a multi-fragment frame: reassembly or direct placement. */
void dp_shard_fragment(struct dp_lcore *lc, const struct fg_frag *f, const struct dp_pkt *pk, uint64_t now);
/* Take up to DP_BURST frames other lcores handed to this one. Returns how many. */
unsigned dp_shard_inbox_poll(struct dp_lcore *lc, uint64_t now);
/* Housekeeping, about once a millisecond: delivery resends, reassembly and
 * slot expiry (expiries are told to the control plane). */
void dp_shard_timers(struct dp_lcore *lc, uint64_t now);

#endif

/* dp_shard.h - the shard work of one lcore (dp_shard.c), behind the I/O
 * interface of dp_io.h: the DPDK lcore and the kernel receiver
 * (bench/dp/kudp_rx.c) both drive it. Every function runs on the thread
 * that owns `lc` only. */
#ifndef DP_SHARD_H
#define DP_SHARD_H

#include "dp_io.h"

/* One UDP datagram for us, as the driver received it (after its own L2-L4
 * parse, port demux and source allowlist): its flow by reference (the
 * datagrams of one flow share it), its payload borrowed for the call. */
struct dp_dgram {
	const struct dp_flow *fl;
	const uint8_t *payload;
	uint32_t len;
};

/* A flow's facts for a source and route (unbound: no [udp] layer_ports). */
static inline struct dp_flow dp_flow_of(const struct dp_peer *src, const struct dp_route *route, bool fragmented)
{
	return (struct dp_flow){.src = *src, .route = *route, .hash = dp_peer_hash(src, 0), .fragmented = fragmented};
}

/* Receive: one datagram into the shard (fragment decode, reassembly or
 * direct placement, ingest or hand-off, status, ACK bookkeeping). */
void dp_shard_dgram(struct dp_lcore *lc, const struct dp_dgram *dg, uint64_t now);
/* Receive: a burst of n (<= DP_BURST) datagrams, as dp_shard_dgram would
 * take them one by one, in two passes: fragment headers decoded (each
 * distinct peer hashed once), reassembly records found and the slot lines
 * they land in prefetched; then placed in arrival order. */
void dp_shard_burst(struct dp_lcore *lc, const struct dp_dgram *dg, unsigned n, uint64_t now);
/* Receive: a frame another shard handed to this one (io->handoff); x is
 * ours now and goes back through io->xfer_put. */
void dp_shard_handed(struct dp_lcore *lc, struct dp_xfer *x, uint64_t now);
/* Time: once per loop iteration. About once a millisecond the
 * housekeeping (delivery resends, reassembly and slot expiry, expiries
 * reported); ACKs flushed on resolution or every ack_interval. */
void dp_shard_tick(struct dp_lcore *lc, uint64_t now);
/* A whole frame from the control plane, which this lcore owns: decode its
 * header and classify its stream once (dp_frame_decode), ingest, count,
 * answer. from is the UDP sender, or NULL for a frame from the control
 * plane (answered through the lane). Returns the ingest return code (0 or
 * -FG_R_*); *r is filled either way. frame is borrowed. (Frames from the
 * wire take dp_shard_dgram, which decodes once and carries the decode
 * through a hand-off.) */
int dp_shard_frame(struct dp_lcore *lc, const uint8_t *frame, uint32_t len, const struct dp_xfer *from,
		   struct fg_ingest_result *r, uint64_t now);

#endif

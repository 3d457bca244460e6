/* dp_shard.h - the shard work of one lcore (dp_shard.c), behind the I/O
 * interface of dp_io.h: the DPDK lcore and the kernel receiver
 * (bench/dp/kudp_rx.c) both drive it. Every function runs on the thread
 * that owns `lc` only. */
#ifndef DP_SHARD_H
#define DP_SHARD_H

#include "dp_io.h"

/* One UDP datagram for us, as the driver received it (after its own L2-L4
 * parse, port demux and source allowlist). */
struct dp_dgram {
	/* by reference (borrowed for the call), not copied: the copy was ~12
	 * instructions per datagram (callgrind, bench/cap/callgrind.sh) */
	const struct dp_peer *src;
	const struct dp_route *route; /* the L2 route back (all zero behind a kernel socket) */
	const uint8_t *payload; /* the UDP payload, borrowed for the call */
	uint32_t len;
	bool fragmented;        /* the fragmented profile ([udp] port, a layer port); false: the raw profile */
	bool layer_bound;       /* it arrived on [udp] layer_ports + bound_layer (ingest.h) */
	uint16_t bound_layer;
};

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

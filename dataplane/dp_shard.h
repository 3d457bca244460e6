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
/* Receive: a burst of datagrams, as dp_shard_dgram would take them one by
 * one, in two passes. The driver adds each datagram as it decodes it
 * (dp_shard_add: its fragment header decoded, its frame's reassembly
 * record found by the hash its flow keeps, the slot line it lands in
 * prefetched, so the misses of the whole burst overlap); dp_shard_run
 * then places them in arrival order. A fragment of the frame of the
 * fragment just before it (same flow, same frame id) follows it: no lookup
 * of its own. The flows and payloads stay the driver's until the run. */
struct dp_shard_burst {
	struct dp_dgram dg[DP_BURST]; /* a fragment of a multi-fragment frame: its flow only */
	struct fg_frag f[DP_BURST];
	struct dp_ra_hint hint[DP_BURST]; /* a frame's first fragment here: its lookup; a run's last: where it ended */
	int8_t rc[DP_BURST];       /* 1: a fragment of a multi-fragment frame; else dgram_one (0, or the codec's reason) */
	uint8_t follows[DP_BURST]; /* the fragment of the same frame just before it, or 0xFF */
	const struct dp_flow *prev; /* the flow of fragment `last` */
	unsigned n, last, head;    /* datagrams; the fragment before; the first of its frame's run */
	uint32_t nfrag;
	uint16_t prev_fid;         /* the frame id of fragment `last` */
};

static inline void dp_shard_burst_init(struct dp_shard_burst *b)
{
	b->n = 0;
	b->prev = NULL;
	b->last = b->head = DP_BURST;
	b->nfrag = 0;
}

/* One datagram into burst b (at most DP_BURST). A fragment of a
 * multi-fragment frame keeps its decoded header and its flow (the
 * placement reads nothing else of it); any other datagram all of it. */
static inline void dp_shard_add(struct dp_lcore *lc, struct dp_shard_burst *b, const struct dp_flow *fl,
				const uint8_t *payload, uint32_t len)
{
	unsigned i = b->n++;
	b->dg[i].fl = fl;
	int8_t rc = 0;
	if (fl->fragmented) {
		struct fg_frag *f = &b->f[i];
		ssize_t k = fg_frag_decode_fast(payload, len, f);
		if (k >= 0 && f->total != 1) {
			b->rc[i] = 1;
			b->nfrag++;
			if (fl == b->prev && b->prev_fid == f->frame_id) {
				b->follows[i] = (uint8_t)b->last;
			} else {
				b->follows[i] = 0xFF;
				b->head = i;
				dp_reasm_find(&lc->reasm, &fl->src, fl->hash, f->frame_id, &b->hint[i]);
				b->prev = fl;
				b->prev_fid = f->frame_id;
			}
			dp_reasm_prefetch(&lc->reasm, &b->hint[b->head], f->index);
			b->last = i;
			return;
		}
		if (k < 0)
			rc = (int8_t)(k < -127 ? -127 : k);
	}
	b->rc[i] = rc;
	b->dg[i].payload = payload;
	b->dg[i].len = len;
}

void dp_shard_run(struct dp_lcore *lc, struct dp_shard_burst *b, uint64_t now);
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

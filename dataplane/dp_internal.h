/* dp_internal.h - state shared by the dataplane's own files (dp.c, the
 * lcore's files dp_lcore.c, dp_rx.c, dp_shard.c, dp_deliver.c, dp_reply.c,
 * dp_lanes.c, dp_neigh.c, dp_tx.c, and dp_telemetry.c), and the per-lcore
 * counting helpers they share. Not for the control plane: it sees dp.h and
 * boundary.h only.
 *
 * Ownership: `struct dp_state` is written by the init thread before the
 * lcores launch and read-only afterwards, except each `struct dp_lcore`,
 * which belongs to its lcore while it runs. */
#ifndef DP_INTERNAL_H
#define DP_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "fg/boundary.h"
#include "fg/config.h"
#include "fg/ingest.h"
#include "fg/slot.h"
#include "dp.h"
#include "dp_ack.h"
#include "dp_dlv.h"
#include "dp_neigh_rule.h"
#include "dp_pkt.h"
#include "dp_profile.h"
#include "dp_reasm.h"

#define DP_BURST 32u
#define DP_TX_MAX 128u
#define DP_NEIGH 64u
#define DP_XFER_HDR 128u /* bytes in front of a frame in an xfer buffer */
#define DP_MAX_LCORES 64u

/* A whole frame's header, decoded once on the lcore that first sees the
 * frame whole, and its stream classified once under the address binding it
 * arrived with (fg_ingest_classify): carried through ownership (hand-off,
 * inside the xfer buffer), ingest (fg_ingest_classified), the consumer-ACK
 * path (dp_deliver_on_ack) and the ACK bookkeeping (dp_reply_ack_note). */
struct dp_frame {
	struct fg_hdr hdr;
	struct fg_ingest_class cls;
};

/* Decode the header of buf[0..len) and classify its stream under ictx's
 * binding. Returns 0, or -FG_R_SHORT_HEADER (the only way a header decode
 * fails; the payload length is the caller's check). */
static inline int dp_frame_decode(const struct fg_ingest_ctx *ictx, const uint8_t *buf, uint32_t len,
				  struct dp_frame *d)
{
	if (fg_hdr_decode(buf, len, FG_TRANSPORT_MESSAGE, &d->hdr) < 0)
		return -FG_R_SHORT_HEADER;
	fg_ingest_classify(ictx, d->hdr.stream_id, &d->cls);
	return 0;
}

/* A consumer's ACK frame (resolved seeds ACKed back to us). */
static inline bool dp_frame_is_ack(const struct dp_frame *d)
{
	return d->hdr.stream_id == FG_STREAM_ACK && (d->hdr.flags & FG_FLAG_ACK);
}

/* An xfer buffer: a whole frame plus where it came from. Lives in the
 * shared xfer mempool; used as reassembly buffer and for hand-off. */
struct dp_xfer {
	struct dp_peer peer;
	struct dp_route route;
	uint32_t len;
	bool ack; /* fragmented profile: ACK it once placed (the owner does, after a hand-off) */
	bool layer_bound;     /* it arrived on [udp] layer_ports + bound_layer (ingest.h) */
	uint16_t bound_layer;
	bool decoded;         /* fr holds the frame's decode (a hand-off); false: the owner decodes (an ACK copy) */
	struct dp_frame fr;
};
_Static_assert(sizeof(struct dp_xfer) <= DP_XFER_HDR, "the xfer header fits in front of the frame");
static inline uint8_t *dp_xfer_data(struct dp_xfer *x) { return (uint8_t *)x + DP_XFER_HDR; }
static inline struct dp_xfer *dp_xfer_of(void *data) { return (struct dp_xfer *)((uint8_t *)data - DP_XFER_HDR); }


struct dp_lcore {
	unsigned idx;       /* shard index */
	unsigned lcore_id;
	int rxq;            /* -1: this lcore has no RX queue (device has fewer) */
	uint16_t txq;
	struct fg_slots slots;
	void *slots_mem;
	struct dp_reasm reasm;
	void *reasm_mem;
	struct dp_ack ack;
	void *ack_mem;
	struct dp_dlv dlv;       /* resolved seeds sent and not ACKed yet */
	void *dlv_mem;
	uint64_t point_store_ns[FG_POINTS + 1]; /* last point_seen_ns store per point */
	struct rte_ring *inbox;  /* MP/SC: dp_xfer pointers from other lcores */
	struct fg_lane *lane;
	struct fg_dp_counters *k;
	struct dp_xcounters *xk;
	struct fg_ingest_ctx ictx;
	struct rte_mbuf *tx[DP_TX_MAX];
	unsigned n_tx;
	uint16_t frame_id, ip_id;
	uint64_t next_ack_ns, next_timer_ns;
	bool ack_now;
	bool lane_sent;         /* pushed to lane->to_cp since the last dp_lane_wake */
	bool lane_urgent;       /* ... and one of them is urgent (boundary.h) */
	uint8_t *scratch;       /* frame_max bytes */
	struct dp_neigh neigh[DP_NEIGH];
	bool has_local4, has_local6;
	uint8_t local4[16], local6[16]; /* last local address seen per family */
} __rte_cache_aligned;

struct dp_state {
	bool inited, started;
	struct fg_config cfg;
	struct dp_profile prof;
	struct fg_boundary *b;
	struct fg_seed_limits limits;
	struct fg_slots_cfg scfg;
	uint16_t port;
	struct rte_ether_addr mac;
	uint16_t n_rxq, n_txq;
	unsigned n;                  /* poll lcores = shards = lanes */
	uint32_t chunk, frame_max;
	uint64_t ack_interval_ns;
	bool have_points;            /* [points] maps some UDP prefix to a point */
	struct rte_mempool *mbufs, *xfer;
	struct dp_lcore *lc[DP_MAX_LCORES];
	struct dp_xcounters *xk;     /* [n] */
	void *lane_mem[DP_MAX_LCORES];
	bool hugepages;
	bool own_prefix;             /* --file-prefix fgdp<pid>: runtime dir removed at stop */
	uint32_t mbufs_out_started;
	bool have_report;
	struct dp_report report;
};

extern struct dp_state dp_g;

/* Per-lcore counting (single writer: the lcore that owns lc). */
static inline void dp_lc_count(struct dp_lcore *lc, enum fg_dp_counter c, uint64_t n) { fg_count(lc->k, c, n); }
static inline void dp_lc_xcount(struct dp_lcore *lc, enum dp_xcounter c) { dp_xcount(lc->xk, c, 1); }

/* A malformed input with codec reason `reason` (either sign). */
static inline void dp_lc_malformed(struct dp_lcore *lc, int reason)
{
	dp_lc_count(lc, FG_C_DROP_MALFORMED, 1);
	if (reason < 0)
		reason = -reason;
	if ((unsigned)reason < FG_R__COUNT)
		atomic_store_explicit(&lc->k->malformed[reason],
				      atomic_load_explicit(&lc->k->malformed[reason], memory_order_relaxed) + 1,
				      memory_order_relaxed);
}

static inline void dp_lc_outcome(struct dp_lcore *lc, enum fg_outcome o)
{
	if ((unsigned)o < FG_O__COUNT)
		atomic_store_explicit(&lc->xk->outcome[o],
				      atomic_load_explicit(&lc->xk->outcome[o], memory_order_relaxed) + 1,
				      memory_order_relaxed);
}

/* The poll loop (rte_eal_remote_launch entry); arg is the struct dp_lcore. */
int dp_lcore_main(void *arg);
/* Sum the live counters into out (fg counters, x counters, outcomes). */
void dp_counters_sum(struct dp_report *out);
/* Register /fanogate/... telemetry commands. 0 or -errno. */
int dp_telemetry_register(void);

#endif

/* dp_io.h - the shard work's state and its I/O interface, without DPDK
 * types, so the same shard code (dp_shard.c, dp_deliver.c, dp_reply.c:
 * ingest, reassembly, hand-off, ACK aggregation, status frames, reliable
 * delivery with resends) runs on a DPDK lcore (dp_io_dpdk.c: mbufs, rings,
 * the boundary lanes) and behind a kernel UDP socket (bench/dp/kudp_rx.c).
 *
 * The interface, seen from the shard:
 *   receive   the driver hands each UDP datagram for us to dp_shard_dgram
 *             (and, with several shards, each handed-off frame to
 *             dp_shard_handed);
 *   send      the shard sends UDP datagrams through io->dgram (status
 *             frames, ACKs) and the fragments of a resolved seed through
 *             io->frags (or io->dgram each, where it is NULL) to a peer,
 *             via a route (io->route for a configured consumer); where
 *             the I/O has them, a placed contribution's status and an
 *             ACK datagram are encoded straight into the packet
 *             (io->status_of, io->ack_one) and a consumer is routed and
 *             sent to in one call (io->consumer_frags);
 *   time      the driver passes its clock (CLOCK_MONOTONIC ns) to every
 *             call and calls dp_shard_tick once per loop iteration: the
 *             shard runs its timers (resends, reassembly and slot expiry)
 *             and ACK flushes from it.
 * Besides: xfer buffers (a frame with its dp_xfer header) and hand-off to
 * another shard's owner; reports to a control plane (the kernel receiver
 * has none and counts them).
 *
 * Ownership: `struct dp_lcore` belongs to the thread that runs it (one DPDK
 * lcore, or kudp_rx's one thread); env is written before it runs and read
 * only afterwards. The `rte_*` pointers in it are opaque here (incomplete
 * types) and used by the DPDK side only. */
#ifndef DP_IO_H
#define DP_IO_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "fg/boundary.h"
#include "fg/config.h"
#include "fg/ingest.h"
#include "fg/slot.h"
#include "dp.h"
#include "dp_ack.h"
#include "dp_cwin.h"
#include "dp_dlv.h"
#include "dp_neigh_rule.h"
#include "dp_pkt.h"
#include "dp_reasm.h"

struct rte_ring;
struct rte_mbuf;
struct rte_mempool_cache;
struct dp_lcore;
struct dp_tx_ref;

#define DP_BURST 32u
#define DP_TX_MAX 128u
#define DP_TX_STASH 16u /* TX mbufs taken from the pool ahead of use (dp_tx.c) */
/* TX back-pressure (dp_lcore.c): packets the TX queue refused wait in the
 * lcore's TX buffer and RX pauses, for at most [port] tx_hold_ms (50);
 * then they are dropped (drop_tx_full) and RX resumes, and for
 * DP_TX_NOHOLD_TIMES times as long refused packets are dropped at once (no
 * new hold): a TX queue that stays stuck (a peer gone) pauses RX for at
 * most 50 ms in every 550, not for 50 ms of every 50. */
#define DP_TX_NOHOLD_TIMES 10u
#define DP_NEIGH 64u
#define DP_XFER_HDR 128u /* bytes in front of a frame in an xfer buffer */
#define DP_MAX_LCORES 64u
#define DP_DGRAM_HEAD_MAX 64u /* io->dgram's head: a fragment header and a frame's head */

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
	bool seeded;          /* decoded, a seed (fr.cls.rc 0, band SEED) and seed holds its header and prefix
			       * as fg_seed_decode under the lcores' limits gives them, body NULL */
	uint8_t nchunk;       /* 0: the frame is in the data; else a chunk list of nchunk fragments
			       * (dp_reasm_out.nchunk, dp_ra_chunks at data + env->frame_max) */
	uint8_t src;          /* the lcore that received it, whose table kept the list's buffers */
	struct dp_frame fr;
	uint32_t hash;        /* dp_peer_hash(&peer, 0), as the receiving lcore's flow has it: the ACK note's */
	struct fg_seed seed;
};
_Static_assert(sizeof(struct dp_xfer) <= DP_XFER_HDR, "the xfer header fits in front of the frame");
/* CLOCK_MONOTONIC in ns (vDSO, no syscall): the loop's `now`, and the
 * timestamps boundary messages carry (the control plane reads the same
 * clock: lane latency, /metrics fanogate_engine_hop_seconds). */
static inline uint64_t dp_clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint8_t *dp_xfer_data(struct dp_xfer *x) { return (uint8_t *)x + DP_XFER_HDR; }
static inline struct dp_xfer *dp_xfer_of(void *data) { return (struct dp_xfer *)((uint8_t *)data - DP_XFER_HDR); }


/* The shard's I/O (see the top of this file). Every op runs on the thread
 * that owns lc; pointers are borrowed for the call. */
struct dp_io {
	/* Send one UDP datagram from our fragmented-profile port to `to`,
	 * its payload head[0..head_len) then data[0..len), gathered into the
	 * packet (a fragment header and a frame's head in front of a body
	 * read where it lies, the slot: no copy before the packet's);
	 * head_len at most DP_DGRAM_HEAD_MAX (0: head unread). rt is the L2
	 * route back (a kernel socket ignores it). Returns false when it
	 * could not be queued (the implementation counts why). */
	bool (*dgram)(struct dp_lcore *lc, const struct dp_route *rt, const struct dp_peer *to, const uint8_t *head,
		      uint32_t head_len, const uint8_t *data, uint32_t len);
	/* Fill *rt to reach addr (family 4 or 6; a configured consumer).
	 * false when no route is known yet. now: the caller's clock (the
	 * loop's, see "time" above), which the neighbour table ages its entry
	 * by. */
	bool (*route)(struct dp_lcore *lc, int family, const uint8_t *addr, struct dp_route *rt, uint64_t now);
	/* An xfer buffer (DP_XFER_HDR + env->frame_max bytes), or NULL. */
	struct dp_xfer *(*xfer_get)(struct dp_lcore *lc);
	void (*xfer_put)(struct dp_lcore *lc, struct dp_xfer *x);
	/* Give x to shard `owner` (!= lc->idx); it arrives there through
	 * dp_shard_handed. false: x is still the caller's (the inbox is full).
	 * NULL when there is one shard. */
	bool (*handoff)(struct dp_lcore *lc, unsigned owner, struct dp_xfer *x);
	/* To the control plane: m (copied); with a body, src[0..len) copied
	 * into a buffer *body (a field of m) names, or no buffer when none is
	 * free (body->buf FG_BUF_NONE: the facts go alone). false: not sent
	 * (counted by the implementation). */
	void (*report)(struct dp_lcore *lc, const union fg_bmsg *m);
	bool (*report_body)(struct dp_lcore *lc, union fg_bmsg *m, struct fg_bm_body *body, const uint8_t *src,
			    uint32_t len);
	/* What the deliveries to consumer addr (family 4 or 6) say about its
	 * neighbour entry (enum dp_neigh_hint): ACKed, or due again without an
	 * ACK, at the caller's clock now (as for route). NULL when the
	 * implementation has no neighbour table (a kernel socket). */
	void (*neigh_hint)(struct dp_lcore *lc, int family, const uint8_t *addr, enum dp_neigh_hint hint,
			   uint64_t now);
	/* Send the frame head[0..head_len) + body[0..body_len) to `to` in
	 * the fragmented profile, its total fragments (fg_frag_count(head_len
	 * + body_len, chunk), which the caller has counted: not 0) of chunk
	 * bytes under frame id fid: the datagrams dgram would send for each
	 * fragment in turn (its fragment header, its part of the head, its
	 * part of the body), the route and destination looked at once. false
	 * when one could not be queued. NULL: the caller sends each fragment
	 * through dgram. */
	bool (*frags)(struct dp_lcore *lc, const struct dp_route *rt, const struct dp_peer *to, uint16_t fid,
		      uint32_t total, const uint8_t *head, uint32_t head_len, const uint8_t *body, uint32_t body_len,
		      uint32_t chunk);
	/* Send the status frame of a placed contribution (fg_status_frame_of
	 * (&lc->ictx, seed, res): never refused) to `to` as a single-fragment
	 * datagram of frame id fid, as dgram would send it, written straight
	 * into the packet. Returns 1 (queued, counted status_sent) or 0 (not
	 * queued: the implementation counts why); fid is used either way.
	 * NULL: the caller encodes it and sends it through dgram. */
	int (*status_of)(struct dp_lcore *lc, const struct dp_route *rt, const struct dp_peer *to,
			 const struct fg_seed *seed, const struct fg_slot_result *res, uint16_t fid);
	/* Send pp's pending pairs, which fit one ACK datagram at mtu
	 * (FG_ACK_DGRAM_HEAD_LEN + pp->n * FG_ACK_ENTRY_LEN <= mtu, pp->n >
	 * 0), as that datagram (dp_ack_encode's, frame id fid) to pp's peer
	 * over pp's route, as dgram would send it, encoded straight into the
	 * packet; the pairs are taken either way. Returns 1 (queued) or 0
	 * (not queued: the implementation counts why). NULL: the caller
	 * encodes into a buffer and sends through dgram. */
	int (*ack_one)(struct dp_lcore *lc, struct dp_ack_peer *pp, uint32_t mtu, uint16_t fid);
	/* route then frags in one call, for a configured consumer `to`: its
	 * route as route finds it at now, then the frame's total (not 0)
	 * fragments under frame id fid as frags sends them, the header
	 * template kept with the route while neither changes. body is the
	 * resolved seed of lc->slots' slot `slot` (fg_slot_seed's view): an
	 * implementation may send it by reference (the packets read the slot
	 * after the call, which pins it until they are freed: fg_slot_pin);
	 * DP_DLV_NONE: body is not a slot's, copied. -1: no route (nothing
	 * sent, fid not used); else as frags (1 queued, 0 not all). NULL: the
	 * caller calls route, then frags or dgram. */
	int (*consumer_frags)(struct dp_lcore *lc, const struct dp_peer *to, uint64_t now, uint16_t fid,
			      uint32_t total, const uint8_t *head, uint32_t head_len, const uint8_t *body,
			      uint32_t body_len, uint32_t chunk, uint32_t slot);
	/* report_body in two steps, the message written in place (no copy
	 * of it): report_reserve returns the element the message is written
	 * into (every byte of it), or NULL (not sent, counted as report_body
	 * counts a full lane); report_commit then does report_body's work on
	 * it (body, sending). NULL: the caller builds the message and calls
	 * report_body. */
	union fg_bmsg *(*report_reserve)(struct dp_lcore *lc);
	void (*report_commit)(struct dp_lcore *lc, union fg_bmsg *m, struct fg_bm_body *body, const uint8_t *src,
			      uint32_t len);
	/* Prepare where the resolved body of lc->slots' slot `slot`, about to
	 * resolve (body_len bytes), goes besides the slot: returns the buffer
	 * (the lane message's dp2cp buffer, held by lc: sink_buf), or NULL
	 * (nothing prepared, dp_deliver_seed copies as without). Asked only
	 * for a slot known to resolve (fg_slot_whole_sink). NULL: nothing is
	 * prepared. */
	void *(*sink)(struct dp_lcore *lc, uint32_t slot, uint32_t body_len);
	/* report_commit for a message whose body is already in the buffer
	 * sink prepared (lc->sink_has_buf): no copy; the buffer goes with m. */
	void (*report_commit_sunk)(struct dp_lcore *lc, union fg_bmsg *m, struct fg_bm_body *body, uint32_t len);
	/* Received buffers m[0..n) that lcore src's reassembly kept for a
	 * chunk list (dp_xfer.nchunk), given back once read (freed, and
	 * counted back to src's table: dp_reasm_kept_back). Needed where
	 * tables keep buffers (dp_reasm_cfg.keep_max). */
	void (*kept_put)(struct dp_lcore *lc, unsigned src, void *const *m, unsigned n);
};

/* What every shard reads, written before the shards run. */
struct dp_shard_env {
	const struct fg_config *cfg;
	const struct dp_io *io;
	unsigned n;               /* shards */
	uint32_t chunk, frame_max;
	uint64_t ack_interval_ns;
};

/* What the receive side decided about a datagram's flow (its source, the
 * route back, the port demux): the same for every datagram of the flow,
 * so a datagram carries it by reference (struct dp_dgram, dp_shard.h). */
struct dp_flow {
	struct dp_peer src;
	struct dp_route route;  /* the L2 route back (all zero behind a kernel socket) */
	uint32_t hash;          /* dp_peer_hash(&src, 0) */
	bool fragmented;        /* the fragmented profile ([udp] port, a layer port); false: the raw profile */
	bool layer_bound;       /* it arrived on [udp] layer_ports + bound_layer (ingest.h) */
	uint16_t bound_layer;
};

/* A flow the receive side has checked (dp_rx.c): an untagged IPv4/UDP
 * source whose every verdict (addresses, port demux, allowlist) passed,
 * remembered so that its next datagrams are recognised by their header
 * fields (its pattern, dp_pkt.h) instead of parsed and checked again
 * (until another flow takes the entry). Two places per flow: the entries
 * at two indexes of a hash of the addresses and ports. */
#define DP_RX_FLOWS 16u
struct dp_rx_flow {
	struct dp_flow_pat pat;
	bool used;          /* false: empty */
	uint8_t points;     /* the points whose prefixes hold the source, bit p-1 for point p */
	struct dp_flow fl;
};


/* A datagram header template of the lcore's TX side (dp_tx.c): the key
 * (the route and the destination) and the template built for it; stamp
 * tells one build from another (dp_lcore.tx_stamp when built). */
#define DP_TX_TMPLS 8u
#define DP_TX_ST_HEAD 56u /* Ethernet/IPv4/UDP, fragment header, frame header */
enum dp_tx_st { DP_TX_ST_UNKNOWN = 0, DP_TX_ST_NONE, DP_TX_ST_READY };
struct dp_tx_tmpl {
	struct dp_route rt;
	struct dp_peer to;
	bool used;
	uint64_t stamp;
	struct dp_pkt_tmpl t;
	/* A status datagram's first DP_TX_ST_HEAD bytes from t (dp_tx.c),
	 * over untagged IPv4 (st READY; NONE: another header, UNKNOWN: not
	 * made since the build): its lengths set, the IPv4 id and checksum,
	 * the frame id and the sequence still to write; st_sum the IPv4
	 * header's sum with the length and without the id. */
	uint8_t st;
	uint32_t st_sum;
	uint8_t st_head[DP_TX_ST_HEAD];
};

/* The route dp_neigh_route last found to a neighbour it knew and did not
 * need to ask for (dp_neigh.c): the next route to the same address is
 * this copy while the lcore's neighbour table is unchanged (gen is
 * dp_lcore.neigh_gen) and the entry still fresh (the caller's clock before
 * fresh_until); and while the table is unchanged, n is the address's
 * entry (NULL: a static neighbour) for dp_neigh_hint. tx: the header
 * template (dp_tx.c) of datagrams over rt to the address at port, while
 * that entry is not rebuilt (tx->stamp is tx_stamp); NULL: none yet. */
struct dp_route_memo {
	uint8_t family;       /* 0: none */
	uint8_t addr[16];
	uint16_t port;
	uint32_t gen;
	uint64_t fresh_until;
	struct dp_neigh *n;
	const struct dp_tx_tmpl *tx;
	uint64_t tx_stamp;
	struct dp_route rt;
};

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
	struct dp_cwin cwin;     /* how the consumers' ACK bases read (dp_cwin.h) */
	uint64_t point_store_ns[FG_POINTS + 1]; /* last point_seen_ns store per point */
	const struct dp_shard_env *env; /* shared, read-only while running */
	void *io_arg;            /* the I/O implementation's own per-shard state (kudp_rx: its socket) */
	struct rte_ring *inbox;  /* DPDK only: MP/SC dp_xfer pointers from other lcores */
	struct fg_lane *lane;
	bool from_lane;          /* the frame being ingested is a lane CONTRIB (TLS), not a datagram */
	uint8_t lane_lines;      /* then: its fg_bm_contrib.sender_lines (a conflict names them) */
	struct fg_dp_counters *k;
	struct dp_xcounters *xk;
	struct fg_ingest_ctx ictx;
	struct fg_status_prep st_prep; /* DPDK only: the status facts of ictx.lines (dp_tx_status_of) */
	struct rte_mbuf *tx[DP_TX_MAX]; /* DPDK only (dp_tx.c) */
	unsigned n_tx;
	uint64_t tx_bytes;       /* DPDK only: the bytes of the packets in tx[] (their pkt_len, summed as queued) */
	uint64_t tx_held_ns;     /* DPDK only: when the packets waiting in tx[] began to wait */
	uint64_t tx_nohold_until;/* DPDK only: a hold ran out; until then refused packets are dropped */
	struct rte_mbuf *tx_stash[DP_TX_STASH]; /* DPDK only: a ring of raw mbufs, prefetched, for the next datagrams */
	unsigned n_stash;        /* written by the lcore only, read by telemetry (relaxed atomics) */
	unsigned stash_head;     /* DPDK only: tx_stash's oldest (used next) */
	struct dp_tx_tmpl tx_tmpl[DP_TX_TMPLS]; /* DPDK only: header templates (dp_tx.c) */
	struct dp_tx_ref *tx_ref; /* DPDK only: [slots capacity] a slot's body as an external mbuf buffer
				   * (dp_tx.c); NULL: deliveries are copied into the packets */
	void *tx_ref_mem;
	uint64_t tx_ref_iova;     /* DPDK only: IOVA of slots_mem minus its address (IOVA-contiguous) */
	uint64_t tx_stamp;       /* DPDK only: templates built so far */
	uint16_t frame_id, ip_id;
	uint64_t next_ack_ns, next_timer_ns;
	bool ack_now;
	/* A resolution's destinations prepared before it (io->sink): sink_slot
	 * is the slot + 1 they were prepared for (0: none) and sink_resolved
	 * slots.resolved once it resolved (dp_deliver_seed uses them only
	 * then: no other resolution came between); sink_buf the dp2cp buffer
	 * held for the lane message's body while sink_has_buf (kept for the
	 * next resolution when not sent). */
	uint32_t sink_slot, sink_buf;
	uint64_t sink_resolved;
	bool sink_has_buf;
	bool lane_sent;         /* pushed to lane->to_cp since the last dp_lane_wake */
	bool lane_urgent;       /* ... and one of them is urgent (boundary.h) */
	int wait_fd;            /* [poll] idle_wake: its RX queue's socket to wait on (dp_idle.h); -1 none */
	uint64_t inbox_kick;    /* DPDK only: bit per owner lcore handed a frame since the last dp_inbox_kick */
	uint64_t abandoned_seen;/* slots.abandoned already added to DP_X_SLOTS_ABANDONED */
	struct dp_neigh neigh[DP_NEIGH];
	uint32_t neigh_gen;      /* DPDK only: counts changes of neigh[]'s addresses and MACs (dp_neigh.c) */
	struct dp_route_memo route_memo; /* DPDK only (dp_neigh.c) */
	bool has_local4, has_local6;
	uint8_t local4[16], local6[16]; /* last local address seen per family */
	struct dp_rx_flow rx_flow[DP_RX_FLOWS]; /* DPDK only (dp_rx.c) */
	uint8_t rx_flow_turn; /* which of two taken places a new flow takes next */
	bool rx_keep;         /* DPDK only: reasm may keep this lcore's received mbufs (dp_rx.c) */
	struct rte_mempool_cache *mbuf_cache; /* DPDK only: this lcore's cache of the mbuf pool (kept_put) */
} __attribute__((aligned(64))); /* a cache line: per-lcore state never shares one */

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

#endif

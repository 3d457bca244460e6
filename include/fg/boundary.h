/* boundary.h - THE one boundary between the control plane and the dataplane.
 *
 * The control plane (io_uring thread) and the dataplane (DPDK lcores) touch
 * each other only through what this header declares:
 *   1. lanes: per lcore, two SPSC rings of fixed-size messages (fg_bmsg),
 *      cp -> dp and dp -> cp, and two buffer pools whose free lists are SPSC
 *      rings too; a message that names a buffer moves its ownership;
 *   2. published line facts: one atomic 64-bit word (fg_linefacts) written by
 *      the control plane, read by the dataplane once per burst;
 *   3. counter snapshots: per-lcore arrays written only by their lcore with
 *      relaxed atomic stores, read by the control plane at any time;
 *   4. UDP point liveness: one atomic last-seen time per Fano point, written
 *      by the lcores, read by the control plane;
 *   5. the arrival wake-up (struct fg_wake): the control plane sleeps in its
 *      io_uring loop on an eventfd read; an lcore writes the eventfd only on
 *      the empty -> non-empty edge of the dp -> cp rings (the consumer had
 *      declared them empty and gone to sleep), at most once per burst, and
 *      only for a message somebody waits on (urgent; deferred messages are
 *      drained by the 1 ms tick). No timer stands on the path of an
 *      outcome or a resolved seed somebody waits for. The same protocol
 *      wakes an lcore that waits when idle ([poll] idle_wake): struct
 *      fg_lane.wake, written after a push to its to_dp ring.
 *
 * Slot ownership: lcore i owns slot shard i (fg_shard_of). A frame from a TLS
 * peer goes to the owner's lane as FG_BM_CONTRIB; the owner answers with
 * FG_BM_OUTCOME carrying the same req_id. Resolved seeds, canonical reports,
 * conflicts and expiries flow back as typed messages (facts, bodies by
 * reference). When the daemon runs with no
 * dataplane (--no-dataplane, tests), the control plane owns one shard itself
 * and no lane exists.
 *
 * Pure C11; no DPDK types. Memory for lanes may come from hugepages. */
#ifndef FG_BOUNDARY_H
#define FG_BOUNDARY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "fg/common.h"
#include "fg/fano.h"
#include "fg/ingest.h"
#include "fg/ring.h"
#include "fg/wire.h"

#define FG_BUF_NONE 0xFFFFFFFFu

/* A pool of n fixed-size buffers. The allocating side pops indices from
 * `free`; the releasing side pushes them back. Exactly one thread each. */
struct fg_pool {
	struct fg_ring *free;
	uint8_t *bufs;
	uint32_t n, size;
};
/* Memory needed for a pool (ring + buffers, 64-byte aligned). */
size_t fg_pool_mem_size(uint32_t n, uint32_t size);
/* Lay a pool out in mem and fill the free list with every index. Call before
 * the threads start. Returns 0 or -EINVAL. */
FG_MUST_CHECK int fg_pool_init(struct fg_pool *p, void *mem, uint32_t n, uint32_t size);
/* fg_ring_pop of the free list, its elements read as the uint32_t
 * indices they are (fg_pool_init lays them out so), not copied by size. */
static inline uint32_t fg_pool_get(struct fg_pool *p)
{
	struct fg_ring *r = p->free;
	uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);
	if (h == t)
		return FG_BUF_NONE;
	uint32_t i;
	memcpy(&i, r->data + (size_t)(t & r->mask) * sizeof(uint32_t), sizeof(i));
	atomic_store_explicit(&r->tail, t + 1, memory_order_release);
	return i;
}
static inline void fg_pool_put(struct fg_pool *p, uint32_t i) { (void)fg_ring_push(p->free, &i); }
static inline uint8_t *fg_pool_buf(const struct fg_pool *p, uint32_t i) { return p->bufs + (size_t)i * p->size; }

/* ---- typed boundary messages ----------------------------------------------
 *
 * One struct per kind, each field with one meaning, every struct at most one
 * 64-byte ring element (union fg_bmsg, checked below). Facts cross, never
 * wire frames re-encoded to be decoded again. A body crosses by reference:
 * struct fg_bm_body names a buffer of one of the lane's pools; the message
 * moves its ownership:
 *   - cp2dp (contribution in): the control plane takes the buffer, fills it
 *     and pushes the message; the lcore owns it from the pop and releases it
 *     (fg_pool_put(&lane->cp2dp)) once the frame is ingested or refused;
 *   - dp2cp (resolved seed, canonical report): the lcore takes the buffer
 *     only after checking that to_cp has room (it is the ring's only
 *     producer, so the push then succeeds and the buffer is never released
 *     by two threads), fills it and pushes; the control plane owns it from
 *     the pop and releases it (fg_pool_put(&lane->dp2cp)) before its drain
 *     of that message returns (bodies are copied where they must live on).
 *     A message without its body: when the pool is empty the lcore still
 *     pushes the facts (fingerprint included) with body.buf FG_BUF_NONE and
 *     body.len the body's length (counted lane_no_body); the control plane
 *     judges such a seed or report by fingerprint (core/shadow.h) and has
 *     no frame to hand a TLS consumer (cp_engine: resolved_no_body).
 *
 * Line states cross as facts too, but not on the rings: the control plane
 * publishes one fg_linefacts word (2 bits per line + the model epoch,
 * fg_linefacts_pack) with a release store; each lcore loads it once per
 * burst (struct fg_boundary.linefacts). */
enum fg_bm_kind {
	FG_BM_CONTRIB = 1, /* cp->dp: a frame received over TLS, for the lane's shard */
	FG_BM_FLUSH,       /* cp->dp: the model epoch moved: flush open slots */
	FG_BM_OUTCOME,     /* dp->cp: the answer to a CONTRIB that asked for one */
	FG_BM_RESOLVED,    /* dp->cp: a slot resolved (facts + the seed body) */
	FG_BM_CANONICAL,   /* dp->cp: a canonical report received over UDP (facts + fingerprint [+ body]) */
	FG_BM_CONFLICT,    /* dp->cp: a conflicting duplicate poisoned a slot */
	FG_BM_EXPIRED,     /* dp->cp: a slot expired */
	FG_BM_PEER,        /* dp->cp: a UDP source was seen (peers, degraded lines) */
	FG_BM__COUNT
};

/* How the contribution that resolved a slot arrived (fg_bm_resolved.ingress;
 * /metrics fanogate_slot_resolution_seconds{ingress}). */
enum fg_ingress {
	FG_INGRESS_UDP = 0, /* a datagram on the dataplane's port */
	FG_INGRESS_TLS = 1, /* a frame the control plane received over TLS (a lane CONTRIB) */
	FG_INGRESS__COUNT
};

/* A body in a lane pool buffer (ownership: see above). */
struct fg_bm_body {
	uint32_t buf; /* pool index, or FG_BUF_NONE: no body */
	uint32_t len; /* bytes used, from the buffer's start */
};

/* Where a datagram came from (attribution of canonical reports and
 * conflicts). family 0: not a UDP datagram (a frame from the control plane). */
struct fg_bm_src {
	uint8_t addr[16];       /* IPv4 in the first 4 bytes */
	uint16_t port;          /* UDP source port */
	uint8_t family;         /* 4, 6, or 0 */
	uint8_t lines;          /* family 0: the lines (bit l: line l) its TLS sender's role speaks for
				 * (fg_bm_contrib.sender_lines, echoed); unused for a datagram */
	uint8_t pad[4];
};

struct fg_bm_contrib {      /* FG_BM_CONTRIB */
	uint8_t kind;
	uint8_t band;           /* enum fg_band the control plane classified (SEED, CANONICAL, or STATUS when it did not) */
	uint16_t layer;         /* destination layer the stream names (0 when it did not classify) */
	uint32_t token_seq;     /* the frame header's sequence */
	uint32_t req_id;        /* != 0: answer with FG_BM_OUTCOME carrying it */
	struct fg_bm_body frame;/* the whole frame (10-byte header + payload), pool cp2dp */
	uint8_t layer_bound;    /* 1: it came on an address naming `layer` (/layers/<L>/, /flow?layer=<L>):
				 * ingested with that layer bound (ingest.h, wire.md 3); 0: `layer` is the stream's */
	uint8_t sender_lines;   /* the lines its sender's role speaks for (cp_epoch_guard.h rule 2): a
				 * conflict it causes says so in fg_bm_conflict.src.lines */
	uint8_t pad[2];
	uint64_t t_ns;          /* CLOCK_MONOTONIC ns, sent */
};

struct fg_bm_flush {        /* FG_BM_FLUSH */
	uint8_t kind;
	uint8_t pad[3];
	uint32_t epoch;         /* the new model epoch; the shard's table rises to it */
	uint64_t t_ns;
};

struct fg_bm_outcome {      /* FG_BM_OUTCOME */
	uint8_t kind;
	uint8_t pad[3];
	uint32_t req_id;        /* the CONTRIB's */
	struct fg_status status;/* the answer: outcome, reason (malformed), facts, fingerprint when resolved */
	uint64_t t_ns;          /* CLOCK_MONOTONIC ns, when the lcore took the CONTRIB (lane latency, /metrics) */
};

struct fg_bm_resolved {     /* FG_BM_RESOLVED */
	uint8_t kind;
	uint8_t lines;          /* mask of the lines reduced into the seed */
	uint16_t layer;         /* destination layer */
	uint32_t token_seq;
	uint32_t start_pos, seq_len;
	uint32_t epoch;         /* the shard table's model epoch at resolution */
	uint8_t udp_sent;       /* 1: the lcore sent the seed to the layer's UDP consumer itself */
	uint8_t ingress;        /* enum fg_ingress of the contribution that resolved the slot */
	uint8_t pad[2];
	uint64_t fingerprint;   /* XXH3-64 of the body, computed once by the slot engine */
	struct fg_bm_body body; /* the seed body (f32 little-endian, seq_len * hidden), pool dp2cp */
	uint64_t t_ns;          /* resolution time, after the UDP consumer's copy was handed to TX */
	uint64_t t_last_ns;     /* the loop's `now` of the burst that took the resolving contribution */
	uint64_t t_open_ns;     /* when the slot opened (its first contribution) */
};

struct fg_bm_canonical {    /* FG_BM_CANONICAL */
	uint8_t kind;
	uint8_t canon_kind;     /* enum fg_canon_kind: FULL or DIGEST */
	uint16_t layer;
	uint32_t token_seq;
	uint32_t start_pos, seq_len;
	uint64_t fingerprint;   /* DIGEST: as sent; FULL: XXH3-64 of the body, computed on the lcore */
	struct fg_bm_body body; /* FULL: the canonical body, pool dp2cp; DIGEST: none */
	uint64_t t_ns;
	struct fg_bm_src src;   /* the UDP source it came from (the control plane decides whether it may report) */
};

struct fg_bm_conflict {     /* FG_BM_CONFLICT */
	uint8_t kind;
	uint8_t line;           /* the line whose duplicate conflicted (FG_LINE_NONE if unknown) */
	uint16_t layer;
	uint32_t token_seq;
	uint32_t epoch;         /* the shard table's epoch at the conflict (a conflict never moves it; the control
				 * plane decides: cp_epoch_guard.h) */
	uint32_t pad;
	uint64_t t_ns;
	struct fg_bm_src src;   /* who sent the conflicting duplicate: a UDP source, or family 0 (a frame the
				 * control plane handed over: TLS; src.lines: its sender_lines) */
};

struct fg_bm_expired {      /* FG_BM_EXPIRED */
	uint8_t kind;
	uint8_t landed;         /* mask of the lines that had landed */
	uint8_t expected;       /* mask of the lines the rule expects */
	uint8_t pad;
	uint16_t layer;
	uint16_t pad2;
	uint32_t token_seq;
	uint32_t epoch;
	uint64_t t_ns;
};

struct fg_bm_peer {         /* FG_BM_PEER */
	uint8_t kind;
	uint8_t family;         /* 4 or 6 */
	uint16_t port;          /* UDP source port */
	uint8_t addr[16];       /* source address (IPv4 in the first 4 bytes) */
	uint32_t pad;
	uint64_t t_ns;          /* when it was seen */
};

/* The ring element: `kind` is the first byte of every member. */
union fg_bmsg {
	uint8_t kind;
	struct fg_bm_contrib contrib;
	struct fg_bm_flush flush;
	struct fg_bm_outcome outcome;
	struct fg_bm_resolved resolved;
	struct fg_bm_canonical canonical;
	struct fg_bm_conflict conflict;
	struct fg_bm_expired expired;
	struct fg_bm_peer peer;
	uint8_t bytes[64];
};
_Static_assert(sizeof(struct fg_bm_body) == 8, "fg_bm_body");
_Static_assert(sizeof(struct fg_bm_contrib) == 32, "fg_bm_contrib");
_Static_assert(sizeof(struct fg_bm_flush) == 16, "fg_bm_flush");
_Static_assert(sizeof(struct fg_bm_outcome) == 48, "fg_bm_outcome");
_Static_assert(sizeof(struct fg_bm_resolved) == 64, "fg_bm_resolved");
_Static_assert(sizeof(struct fg_bm_src) == 24, "fg_bm_src");
_Static_assert(sizeof(struct fg_bm_canonical) == 64, "fg_bm_canonical");
_Static_assert(sizeof(struct fg_bm_conflict) == 48, "fg_bm_conflict");
_Static_assert(sizeof(struct fg_bm_expired) == 24, "fg_bm_expired");
_Static_assert(sizeof(struct fg_bm_peer) == 32, "fg_bm_peer");
_Static_assert(sizeof(union fg_bmsg) == 64, "one ring element is one cache line");
_Static_assert(sizeof(fg_linefacts) == 8, "line states: one atomic word");

/* A stable name per kind ("contrib", "resolved", ...; "unknown"). */
const char *fg_bm_kind_name(unsigned kind);

/* ---- arrival wake-up (dp -> cp) ------------------------------------------
 *
 * Protocol (consumer = the control plane's loop thread, producers = the
 * lcores, each the single producer of its lane's to_cp ring):
 *
 *   consumer                               producer (once per burst that pushed)
 *   --------                               --------------------------------
 *   drain every to_cp ring                 fg_ring_push ... (release of head)
 *   fg_wake_prepare: waiting = 1, fence    fg_wake_after_push: fence, then
 *   re-check every ring (fg_ring_count):     if waiting: exchange it to 0; the
 *     non-empty -> drain again                 one that saw 1 writes the eventfd
 *     empty     -> sleep (eventfd read)
 *
 * Why no wake-up is lost (the classic race: the producer pushes while the
 * consumer, having seen the ring empty, is on its way to sleep): both sides
 * store then load, the other side's variable, with a seq_cst fence in
 * between (the "store buffering" shape):
 *   consumer: store waiting = 1; fence(seq_cst); load head   (fg_ring_count)
 *   producer: store head;        fence(seq_cst); load waiting
 * C11 (29.3p4-p7 / [atomics.fences]) forbids both loads from missing the
 * other side's store when both fences are seq_cst: either the consumer sees
 * the new head (and drains instead of sleeping) or the producer sees
 * waiting = 1 (and writes the eventfd, which completes the pending read).
 * Both may happen: one spurious wake-up, whose drain finds the ring empty.
 *
 * Bounded: `waiting` goes 0 -> 1 only when the consumer is about to sleep,
 * and 1 -> 0 by exactly one atomic exchange (one producer, or the consumer
 * itself with fg_wake_cancel). So there is at most one eventfd write per
 * consumer sleep, whatever the number of lcores and messages; a busy
 * consumer never sets the flag and the producers make no syscall at all.
 * The producers' check is one fence and one load per burst that pushed. */
struct fg_wake {
	_Alignas(FG_CACHE_LINE) _Atomic uint32_t waiting; /* 1: the consumer sleeps or is about to */
	int fd;      /* eventfd (blocking: io_uring waits on it) written by producers, read by the consumer */
	bool has_fd; /* fd is set (dp_init creates it; zeroed memory has none) */
};

/* Set the eventfd (before any producer runs). The caller owns fd. */
static inline void fg_wake_init(struct fg_wake *w, int fd)
{
	atomic_init(&w->waiting, 0);
	w->fd = fd;
	w->has_fd = fd >= 0;
}

/* Consumer, after draining: announce the sleep. The caller must then
 * re-check every ring and either sleep (all empty) or drain again. */
static inline void fg_wake_prepare(struct fg_wake *w)
{
	atomic_store_explicit(&w->waiting, 1, memory_order_seq_cst);
	atomic_thread_fence(memory_order_seq_cst);
}

/* Consumer: it found work after fg_wake_prepare and will not sleep; take
 * the flag back so no producer writes a needless wake-up. */
static inline void fg_wake_cancel(struct fg_wake *w)
{
	atomic_store_explicit(&w->waiting, 0, memory_order_relaxed);
}

/* Producer, after a burst that pushed at least one message: true when this
 * caller must write the eventfd (the consumer was asleep; exactly one
 * producer gets true per sleep). */
static inline bool fg_wake_after_push(struct fg_wake *w)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (!atomic_load_explicit(&w->waiting, memory_order_relaxed))
		return false; /* the consumer is awake: it will see the push */
	return atomic_exchange_explicit(&w->waiting, 0, memory_order_relaxed) == 1;
}

/* Producer: fg_wake_after_push and, when it says so, the eventfd write.
 * 1: written (the consumer was asleep), 0: not needed (awake, or no fd),
 * -1: the write failed (cannot happen short of a closed fd; count it). */
static inline int fg_wake_kick(struct fg_wake *w)
{
	if (!w->has_fd || !fg_wake_after_push(w))
		return 0;
	uint64_t one = 1;
	return write(w->fd, &one, sizeof(one)) == (ssize_t)sizeof(one) ? 1 : -1;
}

struct fg_lane {
	struct fg_ring *to_dp;  /* producer: control plane; consumer: lcore */
	struct fg_ring *to_cp;  /* producer: lcore; consumer: control plane */
	struct fg_pool cp2dp;   /* buffers the control plane fills, the lcore releases */
	struct fg_pool dp2cp;   /* buffers the lcore fills, the control plane releases */
	/* The lcore's own wake-up ([poll] idle_wake, dataplane/dp_idle.h): the
	 * same protocol as the control plane's (struct fg_wake), the other way:
	 * consumer = the lcore, which sleeps in ppoll() on its RX queue's socket
	 * and this eventfd (non-blocking); producers = the control plane after
	 * pushing to to_dp, and the other lcores after handing a frame to this
	 * lcore's inbox. has_fd false (idle_wake off): producers skip it. */
	struct fg_wake wake;
};

/* Every figure the dataplane counts, per lcore. Written only by the owning
 * lcore (relaxed stores), read by anyone (relaxed loads). */
enum fg_dp_counter {
	FG_C_RX_PKTS, FG_C_RX_BYTES, FG_C_TX_PKTS, FG_C_TX_BYTES,
	FG_C_DROP_MALFORMED, FG_C_DROP_NOT_ALLOWED, FG_C_DROP_UNKNOWN_STREAM, FG_C_DROP_LATE,
	FG_C_DROP_DUPLICATE, FG_C_DROP_CONFLICT, FG_C_DROP_NO_SLOT, FG_C_DROP_REASM_OVERFLOW,
	FG_C_DROP_TX_FULL, FG_C_DROP_NOT_UDP, FG_C_DROP_BAD_PORT, FG_C_DROP_EXPIRED, FG_C_DROP_STALE,
	FG_C_DROP_LANE_FULL,
	FG_C_FRAGS, FG_C_FRAMES, FG_C_CONTRIB_ACCEPTED, FG_C_SEEDS_RESOLVED, FG_C_SLOTS_EXPIRED,
	FG_C_ACKS_SENT, FG_C_STATUS_SENT, FG_C_SEEDS_SENT, FG_C_CANONICAL,
	FG_C_REASM_TIMEOUT,
	FG_C_SLOTS_FLUSHED, /* open slots freed by FG_BM_FLUSH (model epoch change) */
	/* reliable resolved-seed delivery (dataplane/dp_dlv.h). Ledger per lcore:
	 * seeds_sent = delivery_acked + delivery_given_up + pending */
	FG_C_DELIVERY_ACKED,     /* deliveries the consumer ACKed */
	FG_C_DELIVERY_RESENT,    /* resends of unACKed deliveries */
	FG_C_DELIVERY_GIVEN_UP,  /* deliveries that ended unACKed (resends exhausted, slot reclaimed, table full, superseded) */
	FG_C_DELIVERY_ACK_UNMATCHED, /* ACKed seqs with nothing pending (duplicate or late ACKs): no effect */
	FG_C_LANE_NO_BODY,       /* RESOLVED/CANONICAL sent without the body: the dp2cp pool was empty */
	FG_C__COUNT
};
const char *fg_dp_counter_name(enum fg_dp_counter c);

struct fg_dp_counters {
	_Alignas(FG_CACHE_LINE) _Atomic uint64_t c[FG_C__COUNT];
	_Atomic uint64_t per_line[FG_LINES];  /* contributions accepted per line */
	_Atomic uint64_t malformed[FG_R__COUNT]; /* per codec reason */
};
static inline void fg_count(struct fg_dp_counters *k, enum fg_dp_counter c, uint64_t n)
{
	/* single writer: a relaxed load + store is enough and avoids a locked add */
	atomic_store_explicit(&k->c[c], atomic_load_explicit(&k->c[c], memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* ---- urgent and deferred messages (dp -> cp) -------------------------------
 *
 * Not every message needs the control plane at once. A message is urgent
 * when something in the control plane waits for it:
 *   OUTCOME    a TLS peer waits for its answer (HTTP response, status frame);
 *   RESOLVED   the seed was not sent by the lcore itself (no UDP consumer for
 *              its layer), or its layer is watched (struct fg_watch: a
 *              WebSocket subscriber or an HTTP long poll hands it on);
 *   CONFLICT   the model epoch may move (cp_epoch_guard.h) and every shard flushes;
 *   EXPIRED    an HTTP long poll may be waiting for the slot's end.
 * The others (RESOLVED already delivered over UDP with nobody watching its
 * layer: the audit's verdict only; PEER; CANONICAL: a comparison) are
 * deferred: the lcore pushes them but writes the eventfd only when an urgent
 * message follows or the ring or pool passes a quarter of its size; the
 * control plane's 1 ms housekeeping tick drains them otherwise. So a DPDK
 * path whose seeds go out over UDP wakes the control plane about once a
 * millisecond instead of once per seed, and a deferred message waits at
 * most about one tick. */
#define FG_WATCH_WORDS 4 /* layers 0..255 ([model] layers <= 256) */
struct fg_watch {
	/* Bit L of word L / 64: the control plane hands layer L's resolved
	 * seeds on itself. Written by the control plane (relaxed stores, when
	 * subscriptions or long polls change), read by the lcores per resolved
	 * seed (relaxed loads). A stale bit costs at most one tick of latency
	 * (deferred) or one needless wake-up (urgent); never a message. */
	_Atomic uint64_t w[FG_WATCH_WORDS];
};

static inline bool fg_watch_has(struct fg_watch *w, uint16_t layer)
{
	if (layer >= FG_WATCH_WORDS * 64)
		return true;
	return (atomic_load_explicit(&w->w[layer / 64], memory_order_relaxed) >> (layer % 64)) & 1;
}

static inline void fg_watch_set(struct fg_watch *w, const uint64_t mask[FG_WATCH_WORDS])
{
	for (unsigned i = 0; i < FG_WATCH_WORDS; i++)
		atomic_store_explicit(&w->w[i], mask[i], memory_order_relaxed);
}

struct dp_xcounters;

/* The published state shared by both sides (one instance, lives as long as the process). */
/* The dataplane's port as dp_init set it up. The link is as it was when the
 * port started; a kernel interface (ifname) can be asked for its live state
 * (/sys/class/net/<ifname>/operstate). */
struct fg_port_facts {
	char profile[256];     /* the drivers-config profile's path or name */
	char driver[32];       /* the PMD ("net_af_xdp", ...) */
	char device[64];       /* the DPDK device name */
	char ifname[16];       /* the kernel interface behind it, "" when none (PCI with vfio, ring, pcap) */
	uint16_t port_id, rx_queues, tx_queues, lcores;
	uint32_t link_speed_mbps; /* at start; 0 unknown */
	bool link_up;          /* at start */
	bool hugepages;        /* false: the EAL runs with --no-huge */
};

struct fg_boundary {
	_Alignas(FG_CACHE_LINE) _Atomic fg_linefacts linefacts;
	unsigned n_lanes;
	struct fg_lane *lanes;                /* [n_lanes] */
	struct fg_dp_counters *counters;      /* [n_lanes] */
	struct dp_xcounters *xcounters;       /* [n_lanes] the lcores' own figures (fg/counters.h), NULL in tests */
	_Atomic bool stop;                    /* set by the control plane to stop the lcores */
	/* UDP point liveness ([points] in the configuration): CLOCK_MONOTONIC ns
	 * of the last datagram from a source mapped to point p (index 1..7;
	 * 0 unused). Written by any lcore (relaxed stores, at most about once a
	 * millisecond per lcore and point; a lagging lcore may store a slightly
	 * older time, which only delays a point-down by that much), seeded with
	 * the start time by dp_init, read by the control plane (cp_points.c). */
	_Atomic uint64_t point_seen_ns[FG_POINTS + 1];
	/* The arrival wake-up of the dp -> cp rings (see struct fg_wake):
	 * created by dp_init, closed by dp_stop after the lcores stopped. */
	struct fg_wake wake;
	/* Layers the control plane hands seeds on for (urgent RESOLVED). */
	struct fg_watch watch;
	/* What the dataplane runs on (fanoctl status): written by dp_init before
	 * it returns, read-only after. */
	struct fg_port_facts port;
};

#endif

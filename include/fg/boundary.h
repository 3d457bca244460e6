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
 *      declared them empty and gone to sleep), at most once per burst. No
 *      timer stands on the path of an outcome or a resolved seed.
 *
 * Slot ownership: lcore i owns slot shard i (fg_shard_of). A frame from a TLS
 * peer goes to the owner's lane as FG_BM_FRAME; the owner answers with
 * FG_BM_OUTCOME carrying the same req_id. Resolved seeds, canonical reports,
 * conflicts and expiries flow back as messages. When the daemon runs with no
 * dataplane (--no-dataplane, tests), the control plane owns one shard itself
 * and no lane exists.
 *
 * Pure C11; no DPDK types. Memory for lanes may come from hugepages. */
#ifndef FG_BOUNDARY_H
#define FG_BOUNDARY_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

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
static inline uint32_t fg_pool_get(struct fg_pool *p)
{
	uint32_t i;
	return fg_ring_pop(p->free, &i) ? i : FG_BUF_NONE;
}
static inline void fg_pool_put(struct fg_pool *p, uint32_t i) { (void)fg_ring_push(p->free, &i); }
static inline uint8_t *fg_pool_buf(const struct fg_pool *p, uint32_t i) { return p->bufs + (size_t)i * p->size; }

enum fg_bmsg_type {
	FG_BM_FRAME = 1,  /* cp->dp: one whole frame (buf from pool cp2dp, len bytes); req_id != 0 wants an OUTCOME */
	FG_BM_FLUSH,      /* cp->dp: model epoch changed to `epoch`: flush open slots */
	FG_BM_OUTCOME,    /* dp->cp: the result of a FRAME: status (+ fingerprint) */
	FG_BM_RESOLVED,   /* dp->cp: a resolved-seed frame (fg_resolved_encode) in buf from pool dp2cp */
	FG_BM_CANONICAL,  /* dp->cp: a canonical report frame as received, in buf from pool dp2cp */
	FG_BM_CONFLICT,   /* dp->cp: conflicting duplicate on `line`; slot poisoned */
	FG_BM_EXPIRED,    /* dp->cp: slot expired; status.bitset = landed, expected */
	FG_BM_PEER,       /* dp->cp: a UDP source was seen (for peers / degraded lines) */
};

struct fg_bmsg {
	uint8_t type;
	uint8_t line;
	uint16_t layer;
	uint32_t token_seq;
	uint32_t req_id;
	uint32_t buf;      /* pool index or FG_BUF_NONE */
	uint32_t len;
	uint32_t epoch;
	uint64_t fingerprint;
	uint64_t t_ns;     /* CLOCK_MONOTONIC ns of the event */
	uint8_t peer[16];  /* PEER: source address; family in `line` (4 or 6) */
	struct fg_status status;
};

struct fg_lane {
	struct fg_ring *to_dp;  /* producer: control plane; consumer: lcore */
	struct fg_ring *to_cp;  /* producer: lcore; consumer: control plane */
	struct fg_pool cp2dp;   /* buffers the control plane fills, the lcore releases */
	struct fg_pool dp2cp;   /* buffers the lcore fills, the control plane releases */
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

/* The published state shared by both sides (one instance, lives as long as the process). */
struct fg_boundary {
	_Alignas(FG_CACHE_LINE) _Atomic fg_linefacts linefacts;
	unsigned n_lanes;
	struct fg_lane *lanes;                /* [n_lanes] */
	struct fg_dp_counters *counters;      /* [n_lanes] */
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
};

#endif

/* relay.h - fanorelay, a userspace UDP relay that injects network faults
 * (loss, duplication, reordering, fixed and jittered delay) independently
 * in each direction, for the fault tests (tests/faults). Shared types of
 * the fault engine (relay_fault.c), the ACK checker (relay_ack.c) and the
 * program (relay_main.c).
 *
 * Who may call: the fanorelay program and the unit tests in tests/faults.
 * Everything runs on one thread (the relay's event loop); nothing here
 * locks. The fault engine and the ACK checker are pure: no sockets, no
 * clock, no logging; time is passed in.
 *
 * Directions. "up" is client -> server (the side that sent first: the
 * fleet's stations in front of fanogate, or fanogate in front of the
 * fleet's consumer), "down" is server -> client (ACKs, status frames).
 *
 * One datagram through one direction (struct rl_dir):
 *
 *   in --loss? (or still in a loss burst)--> lost
 *      \--dup?--> 2 copies, else 1
 *          each copy: reorder? --> held until `gap` later datagrams of this
 *                      |           direction went out, or reorder_us passed
 *                      \---------> due = now + delay_us + U[0, jitter_us]
 *                                  (due == now and nothing to wait for:
 *                                  emitted at once)
 *
 * Decisions come from a splitmix64 stream seeded per direction, in arrival
 * order, so the same --seed and the same arrival order give the same faults.
 * Queued datagrams are bounded (cap): an admission beyond it is dropped and
 * counted (queue_full), never blocking the loop. */
#ifndef FG_RELAY_H
#define FG_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/common.h"

enum rl_dir_id { RL_UP = 0, RL_DOWN = 1, RL_DIRS = 2 };
const char *rl_dir_name(unsigned d);

/* Fault parameters of one direction. Probabilities in [0, 1]. */
struct rl_fault {
	double loss;          /* drop the datagram (with burst > 1: start a loss burst) */
	double burst;         /* mean loss-burst length in datagrams; <= 1: independent losses */
	double dup;           /* send it twice */
	double reorder;       /* hold it back */
	uint32_t reorder_gap; /* ... until this many later datagrams went out (>= 1) */
	uint64_t reorder_ns;  /* ... or this long passed, whichever comes first */
	uint64_t delay_ns;    /* fixed delay of every datagram */
	uint64_t jitter_ns;   /* plus a uniform [0, jitter] per datagram */
};

/* Counters of one direction. Invariants (queued = rl_dir_queued()):
 *  1. in + dup = lost + out + send_failed + queue_full + dropped_at_exit + queued
 *     (each duplication adds one datagram; every copy ends in exactly one
 *     of out, send_failed, queue_full, dropped_at_exit, or is still queued);
 *  2. released_by_gap + released_by_time <= reordered. */
struct rl_dir_stats {
	uint64_t in, in_bytes, lost, dup, reordered, delayed, out, out_bytes;
	uint64_t queue_full, send_failed, dropped_at_exit, released_by_gap, released_by_time;
	uint32_t queue_max;
};

/* Emission callback: send buf[0..len) for session sess now. Returns 0 or a
 * negative errno (counted as send_failed). buf is valid during the call. */
typedef int (*rl_emit_fn)(void *ctx, uint32_t sess, const uint8_t *buf, uint32_t len);

struct rl_item;

/* One direction's state. Caller-owned storage: rl_dir_init / rl_dir_fini. */
struct rl_dir {
	struct rl_fault f;
	uint64_t rng;
	uint64_t seq;           /* admission order: FIFO among equal due times */
	bool in_burst;          /* the previous datagram was lost and burst > 1 */
	uint32_t cap;           /* datagrams queued (delayed + held) at most */
	struct rl_item **heap;  /* min-heap by (due, seq): delayed datagrams */
	uint32_t n_heap;
	struct rl_item **held;  /* reordered datagrams, in admission order */
	uint32_t n_held;
	rl_emit_fn emit;
	void *ctx;
	struct rl_dir_stats st;
};

/* Set up a direction with fault parameters f, PRNG seed and queue bound cap
 * (>= 1). emit/ctx are called for every datagram that goes out. Returns 0,
 * -EINVAL (a probability outside [0,1], burst < 0, reorder_gap 0 with
 * reorder > 0, cap 0) or -ENOMEM.
 *
 * Loss bursts (a two-state Gilbert model): after a lost datagram the next
 * one is lost with probability 1 - 1/burst, so burst lengths are geometric
 * with mean `burst`; `loss` is then the probability that a burst starts,
 * and the long-run loss rate is loss * burst / (1 + loss * (burst - 1)). */
FG_MUST_CHECK int rl_dir_init(struct rl_dir *d, const struct rl_fault *f, uint64_t seed, uint32_t cap,
			      rl_emit_fn emit, void *ctx);
/* Free queued datagrams (counted as dropped_at_exit) and the arrays. */
void rl_dir_fini(struct rl_dir *d);
/* Admit one datagram received at now for session sess. Datagrams due now go
 * out through emit before it returns. Returns 0, or -ENOMEM (counted as
 * queue_full: the datagram is dropped). */
int rl_dir_input(struct rl_dir *d, uint32_t sess, const uint8_t *buf, uint32_t len, uint64_t now);
/* Emit what is due at now. Returns ns until the next due datagram, or
 * UINT64_MAX when nothing is queued. */
uint64_t rl_dir_tick(struct rl_dir *d, uint64_t now);
/* Datagrams queued (delayed + held). */
uint32_t rl_dir_queued(const struct rl_dir *d);

/* ---- relay_ack.c: are ACKed frames frames that really went through? ----
 *
 * Protocol-aware check of the fragmented profile (wire.md 2.1). The relay
 * feeds it every datagram it actually sent up (after faults) and every
 * datagram the server sent down (before faults). It reassembles the
 * up-going fragments' bookkeeping (not their bytes) per (session,
 * frame_id); a frame is "through" when all its fragments went out. Each ACK
 * frame coming down must only cover (stream, sequence) pairs of frames that
 * went through for that session: anything else is an unproven ACK (the
 * server claims a frame the relay never delivered whole). Bounded tables:
 * when a table is full the check degrades to "unchecked" counts, never to a
 * false alarm. */
struct rl_ack_stats {
	uint64_t up_datagrams, up_bad, frames_through, frames_evicted;
	uint64_t down_datagrams, down_bad, down_status, down_other;
	uint64_t acks, ack_entries, acked_seqs, ack_proven, ack_unproven, ack_unchecked;
	bool seen_overflow;
	/* the first RL_UNPROVEN_KEEP unproven (session, stream, seq), for a post-mortem */
#define RL_UNPROVEN_KEEP 16
	struct { uint32_t sess, seq; uint16_t stream; } unproven[RL_UNPROVEN_KEEP];
};
struct rl_ack;
/* New checker with frame_cap reassembly records (power of two is not
 * required) and seen_cap remembered (session, stream, seq) keys. NULL and
 * errno on failure. */
struct rl_ack *rl_ack_new(uint32_t frame_cap, uint32_t seen_cap);
void rl_ack_free(struct rl_ack *a);
/* A datagram that went out upward for session sess (after faults). */
void rl_ack_up(struct rl_ack *a, uint32_t sess, const uint8_t *dg, size_t len, uint64_t now);
/* A datagram the server sent down to session sess (before faults). */
void rl_ack_down(struct rl_ack *a, uint32_t sess, const uint8_t *dg, size_t len);
const struct rl_ack_stats *rl_ack_stats(const struct rl_ack *a);

#endif

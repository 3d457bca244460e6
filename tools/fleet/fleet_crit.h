/* fleet_crit.h - the critical path's rule for one (token, layer): when the
 * next layer's input is at the next worker, and whether it is the jumped
 * seed or the coordinator's relay, from what the fleet has seen so far.
 *
 * Pure: no clock, no I/O, no state; every time is ns on the caller's one
 * monotonic clock. Who may call: fanofleet's run engine (fleet_run.c) and
 * its unit test, from any thread.
 *
 * The model (the fleet's dispatcher and coordinator, wire.md 5):
 *  - t_canon, the canonical input as the chain alone has it: the layer's
 *    last contribution (ffn_l) reaches the coordinator at t_ffn, the relay
 *    takes relay_ns, the next worker has x_{l+1} one hop later:
 *    t_canon = t_ffn + relay_ns + net_ns.
 *  - The gate decision is taken when the status fanogate sent for the
 *    layer's last contribution reaches the dispatcher (t_decision). It
 *    passes on bitset 0x7f, fully resolved, not shadow, nothing awaited.
 *  - Gate passed: the coordinator skips the hop, so there is no canonical
 *    input to fall back on; the next layer starts when the jumped seed is
 *    at the next worker: t_seed + net_ns, however late. An emulation cannot
 *    start it before it knows the gate passed, so the start is
 *    max(t_seed + net_ns, t_decision) (late_decision says when the second
 *    term won). No seed ever (the slot timed out): the layer stalls until
 *    that is known (stalled).
 *  - Gate not passed (shadow, a lost or late contribution, not resolved,
 *    no status at all by the dispatcher's deadline): the coordinator
 *    relays, but only once it knows it must: max(t_canon, t_decision +
 *    relay_ns + net_ns).
 *  - FL_CRIT_CANONICAL (the fleet without fanogate's gate): t_canon,
 *    always. */
#ifndef FLEET_CRIT_H
#define FLEET_CRIT_H

#include <stdbool.h>
#include <stdint.h>

#include "fg/common.h"

enum fl_crit { FL_CRIT_OFF = 0, FL_CRIT_JUMP, FL_CRIT_CANONICAL };

/* What is known of one (token, layer). */
struct fl_crit_layer {
	uint64_t t_ffn;      /* the last contribution reaches the appliance and the coordinator */
	uint64_t relay_ns;   /* the coordinator's relay of this layer */
	uint64_t net_ns;     /* one hop's one-way delay */
	bool decided;        /* the dispatcher took its gate decision ... */
	bool gate;           /* ... and it passed (the hop is skipped) */
	uint64_t t_decision; /* ... at this time */
	uint64_t t_seed;     /* the jumped seed reached the consumer; 0: not (yet) */
	bool seed_gone;      /* no seed will come: the slot timed out ... */
	uint64_t t_gone;     /* ... at this time */
};

/* When the next layer starts. */
struct fl_crit_start {
	uint64_t at;        /* the next layer's input is at the next worker */
	bool jump;          /* the hop was skipped: the input is the jumped seed */
	bool late_decision; /* gate passed after the seed was at the worker: `at` is the decision */
	bool stalled;       /* gate passed and no seed came: `at` is when that was known */
};

/* The canonical input's time with the chain alone: t_ffn + relay + net. */
uint64_t fl_crit_canon_ns(const struct fl_crit_layer *l);

/* The start of the next layer under `mode` (FL_CRIT_JUMP or
 * FL_CRIT_CANONICAL). Returns 0 and fills *out, -EAGAIN while it depends
 * on what has not been seen yet (the decision; with the gate passed, the
 * seed), -EINVAL for FL_CRIT_OFF. *out is written only on success. */
FG_MUST_CHECK int fl_crit_start(enum fl_crit mode, const struct fl_crit_layer *l, struct fl_crit_start *out);

#endif

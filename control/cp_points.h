/* cp_points.h - Fano point liveness from the TLS peers' roles and the UDP
 * sources mapped to points ([points] in the configuration).
 *
 * Owns: which Fano point an authenticated TLS peer serves (its role: tokens
 * file role or the mTLS CN's role, see cp_point_of_role), how many live
 * connections each point has; which mapped points have heard a UDP datagram
 * within [points] peer_timeout_ms (the lcores store last-seen times in the
 * boundary, b->point_seen_ns); and deciding when a point goes down (it has
 * neither) or up (either comes back).
 *
 *   live(p) = TLS connections of p's role > 0
 *             OR (p has [points] prefixes AND a datagram from them came
 *                 within peer_timeout_ms)
 *
 * Only points that have prefixes or ever had a TLS peer are judged: with
 * nothing configured and no role-bearing TLS peer nothing ever degrades.
 * Mapped points start live (the dataplane seeds last-seen with its start
 * time). Roles that name no point (fleet, consumer, ...) count for nothing.
 * The [points] mapping is read once, by cp_points_init (the dataplane keeps
 * its own copy): changing it takes a restart.
 *
 * This file only decides; the engine (cp_engine.h), which owns a struct
 * cp_points and the line table, applies each decision to the lines
 * (fg_lines_point), audits and publishes it. Nothing here calls out.
 *
 * Who may call: the loop thread only. */
#ifndef CP_POINTS_H
#define CP_POINTS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fg/config.h"
#include "fg/fano.h"

/* One engine's point liveness. Invariants:
 *  1. mapped and udp_live have bits only for points 1..7 (bit p-1);
 *     udp_live is a subset of mapped.
 *  2. tls[p] is the number of open authenticated connections whose role
 *     serves point p (cp_points_tls_attach minus cp_points_tls_detach). */
struct cp_points {
	uint32_t tls[FG_POINTS + 1]; /* [0] unused */
	uint8_t mapped;              /* bit p-1: point p has [points] prefixes (UDP judged) */
	uint8_t udp_live;            /* bit p-1: heard within peer_timeout_ms at the last tick */
	uint64_t timeout_ns;
	uint64_t next_ns; /* the next UDP look, at most every 50 ms */
};

/* A point's state to change, decided by cp_points_udp_tick. */
struct cp_point_change {
	uint8_t point; /* 1..7 */
	bool down;
	char who[96]; /* "udp: ..." */
};

/* Set up pt from cfg's [points]. udp: UDP arrives (lanes mode, a
 * dataplane with its boundary); without it mapped points are judged by TLS
 * only. */
void cp_points_init(struct cp_points *pt, const struct fg_config *cfg, bool udp);

/* The Fano point (1..7) a role serves, 0 for none. Case-insensitive:
 * "embed" e1, "attn" e2, "gate-up" (or gate_up, gateup) e3, "down" e4,
 * "lm_head" (or lm-head) e5, "layer-warden" e6, "cobordism-warden" e7, and
 * "e1".."e7". */
unsigned cp_point_of_role(const char *role);

/* An authenticated connection of point p (1..7) opened: count it. Returns
 * true when it is p's first one (the caller brings p up if it was down). */
bool cp_points_tls_attach(struct cp_points *pt, unsigned p);
/* A connection counted for p closed: uncount it. Returns true when it was
 * p's last one and no UDP source keeps p live (p goes down). */
bool cp_points_tls_detach(struct cp_points *pt, unsigned p);

/* UDP liveness, from the engine's tick: at most every 50 ms, compares each
 * mapped point's last-seen time (seen_ns[p], written by the lcores) with
 * now_ns. points_down: the line table's (bit p-1: p is down now). Writes to
 * out the points to change (a mapped point that heard again while down
 * comes up; one that fell silent with no TLS peer while up goes down) and
 * returns how many (at most FG_POINTS). */
unsigned cp_points_udp_tick(struct cp_points *pt, const _Atomic uint64_t seen_ns[FG_POINTS + 1], uint64_t now_ns,
			    uint8_t points_down, struct cp_point_change out[FG_POINTS]);

/* Points (bit p-1) with [points] prefixes and a datagram within the
 * timeout, as of the last tick; and the points with prefixes. */
uint8_t cp_points_udp_live(const struct cp_points *pt);
uint8_t cp_points_udp_mapped(const struct cp_points *pt);
/* Points (bit p-1) this node sees alive: a TLS peer of the point's role,
 * or (mapped points) a UDP source within the timeout. */
uint8_t cp_points_live(const struct cp_points *pt);

#endif

/* cp_points.h - Fano point liveness from the TLS peers' roles and the UDP
 * sources mapped to points ([points] in the configuration).
 *
 * Owns: which Fano point an authenticated TLS peer serves (its role: tokens
 * file role or the mTLS CN's role, see cp_point_of_role), how many live
 * connections each point has; which mapped points have heard a UDP datagram
 * within [points] peer_timeout_ms (the lcores store last-seen times in the
 * boundary, b->point_seen_ns); and marking a point down (fg_lines_point, the
 * lines through it degrade; emitted to the audit as line changes through
 * cp_engine_line_changed) when it has neither, and up again when either comes back.
 *
 *   live(p) = TLS connections of p's role > 0
 *             OR (p has [points] prefixes AND a datagram from them came
 *                 within peer_timeout_ms)
 *
 * Only points that have prefixes or ever had a TLS peer are judged: with
 * nothing configured and no role-bearing TLS peer nothing ever degrades.
 * Mapped points start live (the dataplane seeds last-seen with its start
 * time). Roles that name no point (fleet, consumer, ...) count for nothing.
 * The [points] mapping is read once, at the first tick (the dataplane keeps
 * its own copy): changing it takes a restart.
 *
 * Who may call: the loop thread only. */
#ifndef CP_POINTS_H
#define CP_POINTS_H

#include <stdbool.h>
#include <stdint.h>

struct cp_conn;

/* The Fano point (1..7) a role serves, 0 for none. Case-insensitive:
 * "embed" e1, "attn" e2, "gate-up" (or gate_up, gateup) e3, "down" e4,
 * "lm_head" (or lm-head) e5, "layer-warden" e6, "cobordism-warden" e7, and
 * "e1".."e7". */
unsigned cp_point_of_role(const char *role);

/* c just authenticated (c->role set): count it for its point, once per
 * connection; a point that was down comes back up. */
void cp_points_attach(struct cp_conn *c);
/* c is closing: uncount it; the point goes down when it was the last one
 * (not while the server is stopping). */
void cp_points_detach(struct cp_conn *c);

struct cp_engine;
/* UDP liveness, from the engine's tick (lanes mode only: without the
 * dataplane no UDP arrives). Compares each mapped point's last-seen time in
 * e->b with now_ns at most every 50 ms and marks points down/up as above.
 * Returns how many points changed state. */
unsigned cp_points_udp_tick(struct cp_engine *e, uint64_t now_ns);
/* Points (bit p-1) with [points] prefixes and a datagram within the
 * timeout, as of the last tick; and the points with prefixes. */
uint8_t cp_points_udp_live(void);
uint8_t cp_points_udp_mapped(void);
/* Points (bit p-1) this node sees alive: a TLS peer of the point's role,
 * or (mapped points) a UDP source within the timeout. */
uint8_t cp_points_live(void);
/* Mark point p (1..7) down or up for a cause outside this file ([cluster]:
 * the only node that saw it alive is gone): as a local change (lines
 * degrade or come back, audited with origin "peers", facts republished). */
void cp_points_set(struct cp_engine *e, unsigned p, bool down, const char *who);

#endif

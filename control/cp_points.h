/* cp_points.h - Fano point liveness from the TLS peers' roles (peer churn).
 *
 * Owns: which Fano point an authenticated TLS peer serves (its role: tokens
 * file role or the mTLS CN's role, see cp_point_of_role), how many live
 * connections each point has, and marking a point down (fg_lines_point, the
 * lines through it degrade; audited as line changes) when the last
 * connection of a point that had some closes, and up again when one comes
 * back. Roles that name no point (fleet, consumer, ...) count for nothing.
 *
 * Who may call: the loop thread only. */
#ifndef CP_POINTS_H
#define CP_POINTS_H

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

#endif

/* cp_epoch_guard.h - who the control plane believes about fleet-wide
 * events: canonical reports and model epoch advances.
 *
 * Owns three rules, each a pure decision (no I/O, no logging: the caller,
 * control/cp_engine.c, logs and audits with the source this file names):
 *  1. a canonical report received over UDP counts only when its source lies
 *     in [shadow] canonical_sources (default: none, so a spoofed datagram
 *     never reaches the shadow audit); one received over TLS only when the
 *     peer authenticated with the coordinator role (tokens file or mTLS CN
 *     map: CP_ROLE_COORDINATOR), checked by the listener (cp_http.c, cp_ws.c)
 *     before the frame reaches the engine;
 *  2. a conflicting duplicate advances the model epoch only when its
 *     sender is attributed to the conflicting line: a UDP source inside the
 *     [points] prefixes of one of the line's three points, or a TLS peer
 *     (family 0) whose role speaks for the line (cp_epoch_guard_role_lines:
 *     a role naming a Fano point speaks for the three lines through it,
 *     any other role, the fleet's default one and the coordinator's
 *     included, for every line: they relay every line). Anything else is
 *     "unmapped": counted and logged, no epoch advance, no line change, no
 *     page;
 *  3. attributed advances are rate-limited to one per
 *     [shadow] epoch_min_interval_ms. A conflict inside the interval is a
 *     storm: the first one of a storm says so (storm_began: the caller
 *     alerts once and holds the lines in shadow), the rest are only
 *     counted. The storm ends after CP_EPOCH_STORM_QUIET intervals without
 *     a held conflict.
 *
 * Who may call: the loop thread only (single writer). */
#ifndef CP_EPOCH_GUARD_H
#define CP_EPOCH_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fg/boundary.h"
#include "fg/config.h"

/* The TLS role whose canonical reports are believed (rule 1). */
#define CP_ROLE_COORDINATOR "coordinator"

/* A storm ends after this many quiet intervals. */
#define CP_EPOCH_STORM_QUIET 10u

enum cp_epoch_verdict {
	CP_EPOCH_ADVANCE = 0,  /* move the epoch, flush every shard */
	CP_EPOCH_HELD_UNMAPPED,/* the sender is not attributed to the line: nothing moves */
	CP_EPOCH_HELD_RATE,    /* attributed, but inside the interval: a storm, nothing is flushed */
};

struct cp_epoch_guard {
	uint64_t min_ns;       /* [shadow] epoch_min_interval_ms */
	uint64_t last_ns;      /* last advance (valid when any) */
	uint64_t storm_last_ns;/* last held conflict of the current storm */
	bool any, storm;
	/* accounting, monotonic */
	uint64_t advanced, held_rate, held_unmapped, storms;
};

/* min_interval_ms from cfg (0 = 1000). g is caller-owned storage. */
void cp_epoch_guard_init(struct cp_epoch_guard *g, const struct fg_config *cfg);

/* Rule 1: may this UDP source (family 4/6) report canonical frames?
 * A message with family 0 (not from UDP) is never refused here. */
bool cp_epoch_guard_canon_source_ok(const struct fg_config *cfg, const struct fg_bm_src *src);

/* Rule 1 over TLS: may a peer authenticated with role (NULL: none) send
 * canonical reports? Only CP_ROLE_COORDINATOR may. (Inline: the listeners
 * and their fuzz harness need it without the rest of the guard.) */
static inline bool cp_epoch_guard_role_may_report(const char *role)
{
	return role && !strcmp(role, CP_ROLE_COORDINATOR);
}

/* Rule 2 over TLS: the lines (bit l: line l) a peer authenticated with
 * role speaks for: a role naming a Fano point (cp_point_of_role) the
 * three lines through it; any other role (the coordinator, the default
 * `fleet`, NULL: no authentication configured) every line. */
uint8_t cp_epoch_guard_role_lines(const char *role);

/* Rule 2: is src attributed to line (0..6)? family 0 (TLS): when line is
 * in src->lines. */
bool cp_epoch_guard_is_mapped(const struct fg_config *cfg, const struct fg_bm_src *src, unsigned line);

/* Rules 2 and 3 for one conflict at now_ns. *storm_began is set true only
 * for the first held conflict of a storm. */
enum cp_epoch_verdict cp_epoch_guard_judge(struct cp_epoch_guard *g, bool mapped, uint64_t now_ns,
					   bool *storm_began);

/* "udp 10.1.2.3:4000", "udp [fd00::1]:4000" or "tls" into buf (always
 * terminated). */
void cp_epoch_src_name(const struct fg_bm_src *src, char *buf, size_t len);

#endif

/* line.h - the line state machine (pure core, no I/O).
 *
 *   operator: disable            operator: shadow / demotion
 *   +----------+   enable    +---------+   promote (window clean,   +--------+
 *   | DISABLED | ----------> | SHADOW  | --- auto-promote allowed) -> | ACTIVE |
 *   +----------+ <---------- +---------+ <--- divergence/conflict --- +--------+
 *
 * DEGRADED is an overlay, not a base state: a line is degraded while any of
 * its three points has no live peer; its base state is kept and comes back
 * when every point is live again. The effective state is DEGRADED when the
 * base state is SHADOW or ACTIVE and a point is down.
 *
 * Transition table (event -> from -> to):
 *   op_enable       DISABLED -> SHADOW ; others unchanged (refused -EALREADY)
 *   op_disable      any -> DISABLED
 *   op_shadow       any -> SHADOW
 *   op_active       any -> ACTIVE (operator force)
 *   clean verdict   SHADOW: counts toward the window; promotes to ACTIVE when
 *                   auto_promote && clean >= promote_count && elapsed >= promote_ns
 *   divergence      ACTIVE/SHADOW -> SHADOW, window reset
 *   conflict        ACTIVE/SHADOW -> SHADOW, window reset
 *   point down/up   sets/clears the degraded overlay
 *
 * Single writer: the control plane owns the table; the dataplane reads a
 * published copy (boundary.h). Every transition yields a fg_line_change with
 * who and why that the caller audits. */
#ifndef FG_LINE_H
#define FG_LINE_H

#include <stdbool.h>
#include <stdint.h>

#include "fg/common.h"
#include "fg/fano.h"

enum fg_line_state { FG_LINE_DISABLED = 0, FG_LINE_SHADOW, FG_LINE_ACTIVE, FG_LINE_DEGRADED };
const char *fg_line_state_name(enum fg_line_state s);
/* Parse "disabled"/"shadow"/"active"; -1 otherwise. */
int fg_line_state_parse(const char *s);

enum fg_line_event {
	FG_LEV_OP_ENABLE,
	FG_LEV_OP_DISABLE,
	FG_LEV_OP_SHADOW,
	FG_LEV_OP_ACTIVE,
	FG_LEV_CLEAN,
	FG_LEV_DIVERGENCE,
	FG_LEV_CONFLICT,
};

struct fg_line_policy {
	bool auto_promote;      /* operator allowed shadow -> active by window */
	uint32_t promote_count; /* clean verdicts in the window */
	uint64_t promote_ns;    /* and at least this long since the window opened */
};

struct fg_line {
	enum fg_line_state base;  /* DISABLED, SHADOW or ACTIVE */
	bool auto_promote;
	uint32_t clean;           /* clean verdicts since window start */
	uint64_t window_start_ns;
	uint64_t verdicts, divergences, conflicts;
};

struct fg_lines {
	struct fg_line line[FG_LINES];
	uint8_t points_down; /* bit p-1 set while point p has no live peer */
	struct fg_line_policy policy;
};

/* Who and why, carried by every transition; the caller audits it. */
struct fg_line_change {
	unsigned line;
	enum fg_line_state from, to; /* effective states */
	enum fg_line_event event;
	uint32_t uid;   /* operator uid from SO_PEERCRED, or FG_UID_AUDIT */
	int32_t pid;
	char why[128];
};
#define FG_UID_AUDIT 0xFFFFFFFFu

void fg_lines_init(struct fg_lines *ls, const enum fg_line_state initial[FG_LINES],
		   const struct fg_line_policy *pol, uint64_t now_ns);
enum fg_line_state fg_line_effective(const struct fg_lines *ls, unsigned line);
/* Usable for jump delivery: effective state ACTIVE. */
bool fg_line_is_usable(const struct fg_lines *ls, unsigned line);
/* True while the line's effective state is SHADOW or DEGRADED-over-SHADOW... i.e. its
 * seeds must still be checked against the canonical chain (shadow_mode). */
bool fg_line_is_shadow(const struct fg_lines *ls, unsigned line);

/* Apply an event. Returns 1 and fills *chg when the effective state changed,
 * 0 when nothing changed, -EINVAL for a bad line/event. */
FG_MUST_CHECK int fg_line_apply(struct fg_lines *ls, unsigned line, enum fg_line_event ev, uint64_t now_ns,
				uint32_t uid, int32_t pid, const char *why, struct fg_line_change *chg);
/* Set auto-promotion for one line. */
void fg_line_set_auto_promote(struct fg_lines *ls, unsigned line, bool on);
/* Mark point p (1..7) down or up; fills chg[] (up to 3) with the lines whose
 * effective state changed and returns how many. */
int fg_lines_point(struct fg_lines *ls, unsigned point, bool down, uint64_t now_ns,
		   struct fg_line_change chg[3]);

#endif

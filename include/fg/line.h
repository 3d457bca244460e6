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
 * Transition table (event: from -> to; "window reset" = clean := 0,
 * window_start := now). fg_line_apply returns 1 when the base or the
 * effective state changed (the caller audits fg_line_change), 0 when
 * nothing changed, a negative errno when refused:
 *
 *   event            from                 to          notes
 *   op_enable        DISABLED             SHADOW      window reset
 *   op_enable        SHADOW, ACTIVE       (same)      refused -EALREADY
 *   op_disable       SHADOW, ACTIVE       DISABLED
 *   op_disable       DISABLED             DISABLED    0, no change
 *   op_shadow        DISABLED, ACTIVE     SHADOW      window reset
 *   op_shadow        SHADOW               SHADOW      0, no change (window kept)
 *   op_active        DISABLED, SHADOW     ACTIVE      operator force
 *   op_active        ACTIVE               ACTIVE      0, no change
 *   clean verdict    SHADOW               ACTIVE      when auto_promote (per line)
 *                                                     && ++clean >= promote_count
 *                                                     && now - window_start >= promote_ns
 *                                                     && not degraded
 *                                                     && the window is ahead (below);
 *                                                     else counts only
 *   clean verdict    SHADOW               SHADOW      held: every condition but the
 *                                                     last holds; returns 2 (once per
 *                                                     window, the caller audits it)
 *   clean verdict    DISABLED, ACTIVE     (same)      counts only
 *   divergence       ACTIVE               SHADOW      window reset
 *   divergence       SHADOW               SHADOW      window reset, returns 0
 *   divergence       DISABLED             DISABLED    counts only
 *   conflict         (as divergence)
 *   point down/up    (base kept)          overlay     fg_lines_point; DEGRADED shows
 *                                                     only over SHADOW/ACTIVE
 *   op_auto_promote  (any, kept)          (same)      fg_line_auto_promote: the flag only
 *
 * "The window is ahead" (the value of a jump, fg/lead.h): the share of the
 * window's leads that were > 0 is at least policy.min_ahead, and the
 * window's median lead is at least policy.min_lead_us; each test is off at
 * 0 (the default). Leads enter the window through fg_line_note_lead; a
 * window reset empties it.
 *
 * Operator events (op_*) carry the operator's uid/pid from SO_PEERCRED and
 * the reason typed at the CLI; audit events carry FG_UID_AUDIT. When why is
 * NULL a default text ("operator enable", "promoted: 64 clean verdicts in
 * 10000 ms", ...) is written.
 *
 * Single writer: the control plane owns the table; the dataplane reads a
 * published copy (boundary.h). Every transition yields a fg_line_change with
 * who and why that the caller audits. */
#ifndef FG_LINE_H
#define FG_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/common.h"
#include "fg/fano.h"
#include "fg/lead.h"

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
	FG_LEV_POINT_DOWN, /* only from fg_lines_point */
	FG_LEV_POINT_UP,   /* only from fg_lines_point */
	FG_LEV_OP_AUTO_PROMOTE, /* only from fg_line_auto_promote: the flag changed, the states did not */
	FG_LEV__COUNT
};
/* "op_enable", "clean", "divergence", ... ("unknown" out of range). */
const char *fg_line_event_name(enum fg_line_event ev);

struct fg_line_policy {
	bool auto_promote;      /* operator allowed shadow -> active by window */
	uint32_t promote_count; /* clean verdicts in the window */
	uint64_t promote_ns;    /* and at least this long since the window opened */
	double min_ahead;       /* and this share of the window's leads > 0 (0..1; 0 = off) */
	uint32_t min_lead_us;   /* and the window's median lead at least this (0 = off) */
};

struct fg_line {
	enum fg_line_state base;  /* DISABLED, SHADOW or ACTIVE */
	bool auto_promote;
	uint32_t clean;           /* clean verdicts since window start */
	uint64_t window_start_ns;
	uint64_t verdicts, divergences, conflicts;
	struct fg_lead_window lead; /* leads of the window's compared seeds */
	bool held;                /* the window was held back for its lead (recorded once) */
	uint64_t holds;           /* windows held back for their lead */
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
	enum fg_line_state base_from, base_to; /* base states (DISABLED/SHADOW/ACTIVE) */
	enum fg_line_event event;
	uint32_t uid;   /* operator uid from SO_PEERCRED, or FG_UID_AUDIT */
	int32_t pid;
	bool auto_promote; /* the line's auto-promotion after the change */
	char why[128];
};
#define FG_UID_AUDIT 0xFFFFFFFFu

/* Every line gets initial[i] (DEGRADED is not a base state: taken as
 * SHADOW), the policy's auto_promote, an empty window opened at now_ns; no
 * point down. */
void fg_lines_init(struct fg_lines *ls, const enum fg_line_state initial[FG_LINES],
		   const struct fg_line_policy *pol, uint64_t now_ns);
/* Effective state: DEGRADED over SHADOW/ACTIVE while a point is down,
 * else the base state. DISABLED for a bad line. */
enum fg_line_state fg_line_effective(const struct fg_lines *ls, unsigned line);
/* Usable for jump delivery: effective state ACTIVE. */
bool fg_line_is_usable(const struct fg_lines *ls, unsigned line);
/* True while the line's seeds must still be checked against the canonical
 * chain (shadow_mode in the status): effective state SHADOW or DEGRADED
 * (a degraded line is never trusted, whatever its base state). */
bool fg_line_is_shadow(const struct fg_lines *ls, unsigned line);

/* Apply an event (table above). Returns 1 and fills *chg when the base or
 * the effective state changed, 0 when nothing changed (counters and the
 * window may still move), FG_LINE_HELD and fills *chg (states unchanged,
 * event clean, why the hold: "clean, not ahead: 12% of 64 seeds ahead,
 * needs 50%") the first time in a window that a clean verdict would have
 * promoted the line but for its lead, -EALREADY for op_enable on an
 * enabled line, -EINVAL for a bad line/event (point events go through
 * fg_lines_point). why may be NULL; it is copied (truncated to 127 bytes).
 * chg may be NULL. */
#define FG_LINE_HELD 2
FG_MUST_CHECK int fg_line_apply(struct fg_lines *ls, unsigned line, enum fg_line_event ev, uint64_t now_ns,
				uint32_t uid, int32_t pid, const char *why, struct fg_line_change *chg);
/* Record the lead of a compared seed on the line into its window (before
 * the verdict's fg_line_apply). FG_LEAD_NONE and a bad line: nothing. */
void fg_line_note_lead(struct fg_lines *ls, unsigned line, int64_t lead_ns);

/* What stands between a line and its promotion, for operators (`fanoctl
 * lines`), into out[0..len): "" for a line that is not in shadow, else
 * e.g. "auto-promote off", "window: 12 of 64 clean verdicts",
 * "window: 3000 of 10000 ms", "degraded", "clean, not ahead: 12% of 64
 * seeds ahead, needs 50%", "clean, lead too small: median 120 us, needs
 * 500 us", or "promotes at the next clean verdict". */
void fg_line_promotion(const struct fg_lines *ls, unsigned line, uint64_t now_ns, char *out, size_t len);

/* Set auto-promotion for one line, unrecorded (a hold that is undone, not
 * a decision: [cluster] while etcd is away). */
void fg_line_set_auto_promote(struct fg_lines *ls, unsigned line, bool on);
/* Set auto-promotion for one line as a decision the caller audits: returns
 * 1 and fills *chg (event FG_LEV_OP_AUTO_PROMOTE, states unchanged,
 * auto_promote = on) when the flag changed, 0 when it already was on/off,
 * -EINVAL for a bad line. why may be NULL ("auto-promote on"/"... off");
 * chg may be NULL. */
FG_MUST_CHECK int fg_line_auto_promote(struct fg_lines *ls, unsigned line, bool on, uint32_t uid, int32_t pid,
				       const char *why, struct fg_line_change *chg);
/* Mark point p (1..7) down or up; fills chg[] (up to 3) with the lines whose
 * effective state changed (uid FG_UID_AUDIT, event FG_LEV_POINT_DOWN/UP) and
 * returns how many; -EINVAL for a bad point. */
FG_MUST_CHECK int fg_lines_point(struct fg_lines *ls, unsigned point, bool down, uint64_t now_ns,
		   struct fg_line_change chg[3]);

#endif

/* audit_lines.h - each line's state as the audit log records it, and what
 * a starting daemon runs with (pure core: no I/O, no logging).
 *
 * Owns: folding decoded audit records (fg/audit.h) into each line's last
 * recorded state (base state, auto-promote flag, the record it came from
 * and its reason), merging the fold of one log file with the fold of the
 * file before it, and the start-up decision (fg_audit_start_decide). The
 * daemon's log writer feeds it the records of its start-up scan
 * (control/audit/cp_audit_log.c); the shadow glue decides and writes the
 * START record (control/audit/cp_shadow.c).
 *
 * What a record says about the lines:
 *   GENESIS        a new log: no line has history (complete)
 *   START, LINES   every line's state in full (complete); a later record
 *                  overrides it
 *   LINE v2        the line's base state and auto-promote flag after it
 *   LINE v1        (logs written before v2) the effective state after it:
 *                  a base state is taken as the base; DEGRADED keeps the
 *                  base it came from; DEGRADED -> DEGRADED cannot say, so
 *                  an ACTIVE base is taken as SHADOW (uncertain = shadow);
 *                  auto-promote is not known
 *   RECOVERY       records were cut after the last START/LINES/GENESIS: a
 *                  change may be missing (cut)
 * A file that holds no START, LINES or GENESIS is not complete: the lines
 * it does not mention take their state from the file before it
 * (fg_audit_fold_merge_older).
 *
 * Who may call: any thread; all state is the caller's. */
#ifndef FG_AUDIT_LINES_H
#define FG_AUDIT_LINES_H

#include <stdbool.h>
#include <stdint.h>

#include "fg/audit.h"

struct fg_audit_fold_line {
	bool base_known, auto_known;
	uint8_t base;         /* enum fg_line_state (never DEGRADED) when base_known */
	uint8_t auto_promote; /* when auto_known */
	uint8_t event;        /* line event of the record that last touched the line, or FG_AUDIT_UNKNOWN */
	uint64_t seq;         /* that record's seq (FG_AUDIT_NO_SEQ: none) */
	char why[FG_AUDIT_ENTRY_WHY_MAX];
};

struct fg_audit_fold {
	struct fg_audit_fold_line line[FG_AUDIT_LINES];
	bool complete;        /* a GENESIS, START or LINES record was folded: nothing before it matters */
	bool cut;             /* a RECOVERY record came after the last of those */
	uint64_t records;     /* records folded */
	uint64_t line_records;/* LINE records among them */
	uint64_t summary_seq; /* seq of the last START or LINES record, FG_AUDIT_NO_SEQ */
};

/* Nothing known, not complete. */
void fg_audit_fold_init(struct fg_audit_fold *f);
/* Fold one record (in log order) into f. */
void fg_audit_fold_rec(struct fg_audit_fold *f, const struct fg_audit_rec *r);
/* f is the fold of a file; older the fold of the file before it. Fills in
 * what f does not know from older (nothing when f is complete). */
void fg_audit_fold_merge_older(struct fg_audit_fold *f, const struct fg_audit_fold *older);
/* Whether f knows the base state of any line. */
bool fg_audit_fold_has_history(const struct fg_audit_fold *f);

/* What the start-up decision is given. */
struct fg_audit_start_in {
	const struct fg_audit_fold *fold; /* the log's history (the intact part); NULL: none */
	uint8_t cfg_base[FG_AUDIT_LINES]; /* [lines] line.N (enum fg_line_state) */
	bool cfg_auto;                    /* [lines] auto_promote */
	bool reset;       /* fanogate --reset-lines */
	bool damaged;     /* the log is damaged or a file of it cannot be read */
	bool cut;         /* recovery cut records at this start */
	const char *damage; /* a short reason for damaged (the entries' why); NULL: "log damaged" */
};

/* Each line's start-up state into out[] (every field set):
 *  1. damaged: the line's recorded state if the intact part has one, else
 *     the config; ACTIVE starts SHADOW; source DAMAGED for every line.
 *     reset is not applied: it could not be recorded.
 *  2. reset: the config for every line (base and auto-promote), source
 *     RESET.
 *  3. otherwise a line with a recorded base state gets it (and its
 *     auto-promote flag, else the config's), source LOG, with the seq,
 *     event and reason of the record; a line without: the config, source
 *     CONFIG. When records were cut (in->cut, or the fold's RECOVERY after
 *     its last summary) a line that would start ACTIVE starts SHADOW,
 *     source CUT: a demotion may have been among them.
 * DEGRADED never appears: it is an overlay of the running daemon. */
void fg_audit_start_decide(const struct fg_audit_start_in *in, struct fg_audit_line_entry out[FG_AUDIT_LINES]);

#endif

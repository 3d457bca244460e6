/* cp_alert.h - the alert runner: pages the on-call by running the configured
 * alert command for divergences, conflicts, audit failures and peer
 * authentication failures.
 *
 * Owns: spawning (posix_spawn of /bin/sh -c "$alert_command" with the event
 * in FG_* environment variables, stdin from /dev/null, stdout/stderr
 * inherited), the rate limit (at most one alert per alert_min_interval_ms
 * PER EVENT KIND, so a storm of one kind cannot hide another; suppressed
 * alerts are counted and the kind's next alert carries FG_SUPPRESSED),
 * a cap on children running at once, a kill after timeout_ms, and reaping.
 *
 * Never blocks: each child gets a pidfd in a private epoll set; the caller
 * polls cp_alert_fd() and calls cp_alert_process() when it is readable (and
 * on a timer, for the timeout kill). No signal handler and no SIGCHLD
 * disposition are touched; the daemon must not set SIGCHLD to SIG_IGN
 * (that would auto-reap and the pidfds would report nothing useful).
 *
 * Who may call: one control-plane thread.
 *
 * Environment of the command (unset values are absent; docs/audit.md, Alerts):
 *   FG_EVENT        divergence | conflict | epoch_storm | audit_failed | audit_damaged |
 *                   peer_auth_failure | test
 *   FG_SUMMARY      one line for a pager: every field below that is set, in words
 *   FG_HOST         this machine's host name (cfg.host, else gethostname)
 *   FG_NODE         the [cluster] node name (absent without [cluster])
 *   FG_LINE         line index 0..6 (lowest line of the slot for verdicts)
 *   FG_LINE_TRIPLE  its oriented Fano triple, "(1,4,5)"
 *   FG_LINES        comma list of the slot's line indices
 *   FG_TOKEN, FG_LAYER, FG_EPOCH
 *   FG_VERDICT      clean | divergent | unmatched
 *   FG_FP_JUMP, FG_FP_CANON   16 hex digits
 *   FG_DIFF_SUMMARY "N of M elements differ, ..." when the canonical report was
 *                   a full body; "digest only: element difference unknown"
 *                   when it was a digest (the FG_DIFF_* figures are then absent:
 *                   nothing says the elements agree)
 *   FG_DIFF_COUNT, FG_DIFF_NAN, FG_DIFF_MAX_ABS (%.9g), FG_DIFF_MAX_ULP,
 *   FG_DIFF_FIRST   elementwise figures, full reports only
 *   FG_SHAPE_MISMATCH 0|1
 *   FG_AUDIT_SEQ    the audit record that holds the event
 *   FG_AUDIT_PATH   the audit log holding it (cfg.audit_path)
 *   FG_REASON       free text (peer auth reason, audit error, the line change made, ...)
 *   FG_PEER         peer address or subject
 *   FG_SUPPRESSED   alerts of this kind dropped by the rate limit since its last one
 *   PATH            /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
 * Every value is at most CP_ALERT_VALUE_MAX - 1 bytes, control characters
 * replaced by '?'.
 */
#ifndef CP_ALERT_H
#define CP_ALERT_H

#include <stdbool.h>
#include <stdint.h>

#include "fg/audit.h"
#include "fg/common.h"

struct cp_alert;

/* Bytes of one environment entry ("NAME=value" and its NUL). */
#define CP_ALERT_VALUE_MAX 512u

struct cp_alert_cfg {
	const char *command;      /* empty or NULL: alerts are only counted */
	uint32_t min_interval_ms; /* rate limit */
	uint32_t max_running;     /* children at once, 0 = 4 */
	uint32_t timeout_ms;      /* SIGKILL after this, 0 = 30000 */
	const char *host;         /* FG_HOST; NULL or empty = gethostname() at cp_alert_new */
	const char *node;         /* FG_NODE: [cluster] node; NULL or empty = absent */
	const char *audit_path;   /* FG_AUDIT_PATH; NULL or empty = absent */
	/* Called once per failure with a human line; NULL = stderr. */
	void (*log)(void *arg, const char *msg);
	void *arg;
};

struct cp_alert_event {
	const char *event;                      /* FG_EVENT, required */
	int line;                               /* -1 = none */
	uint8_t lines;                          /* mask, 0 = none */
	int64_t token_seq, dst_layer;           /* -1 = none */
	int64_t epoch;                          /* -1 = none */
	const struct fg_audit_verdict *verdict; /* NULL = none */
	int64_t audit_seq;                      /* -1 = none */
	const char *reason, *peer;              /* NULL = none */
};
/* An event with every optional field unset. */
void cp_alert_event_init(struct cp_alert_event *ev, const char *event);

struct cp_alert_stats {
	uint64_t raised;     /* cp_alert_raise calls */
	uint64_t spawned;    /* children started */
	uint64_t suppressed; /* dropped by the rate limit or the running cap */
	uint64_t spawn_failed, exit_failed, killed, reaped;
	uint32_t running;
};

/* New runner; *out is heap-owned (cp_alert_free). Returns 0 or -errno. */
FG_MUST_CHECK int cp_alert_new(struct cp_alert **out, const struct cp_alert_cfg *cfg);
/* Waits up to 1 s for running children, kills the rest, reaps them, frees. */
void cp_alert_free(struct cp_alert *a);

/* Raise an alert at now_ns (CLOCK_MONOTONIC). Returns 1 when a child was
 * spawned, 0 when suppressed (rate limit, cap, or no command), -errno when
 * the spawn failed (logged and counted). Never blocks. */
int cp_alert_raise(struct cp_alert *a, const struct cp_alert_event *ev, uint64_t now_ns);

/* Pollable fd: readable when a child has exited. */
int cp_alert_fd(const struct cp_alert *a);
/* Reap exited children (a non-zero exit is logged and counted) and kill
 * those past timeout_ms. Returns how many were reaped. */
int cp_alert_process(struct cp_alert *a, uint64_t now_ns);

void cp_alert_stats(const struct cp_alert *a, struct cp_alert_stats *out);

#endif

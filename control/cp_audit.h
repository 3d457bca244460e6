/* cp_audit.h - the daemon's shadow audit runner.
 *
 * Owns: the running shadow audit (control/audit/cp_shadow.h) of one daemon:
 * opening its log, polling the log's and alert runner's fds from the loop,
 * its 100 ms housekeeping tick, and the engine events it judges. It is
 * given the loop and the engine at start and registers itself as the
 * engine's audit sink (cp_engine_set_audit): every resolved seed, canonical
 * report, conflict, model epoch change and point-driven line change reaches
 * it through those ops.
 * Line changes the audit makes are logged and republished to the dataplane
 * through the engine it was given. The daemon refuses to run without it.
 *
 * Other parts get the handle passed to them (main.c hands it to the TLS
 * server, whose struct carries it to the HTTP authentication path, the
 * operator socket, the metrics endpoint and config reload); nothing reaches
 * it through a global.
 *
 * Who may call: the loop thread only. Pointers are valid during the call. */
#ifndef CP_AUDIT_H
#define CP_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cp_loop.h"
#include "fg/audit.h"
#include "fg/common.h"
#include "fg/config.h"
#include "fg/line.h"

struct cp_engine;
struct cp_shadow;

/* Hand-offs to the audit, counted at the runner (fanogate_audit_*_in_total). */
struct cp_audit_stats {
	uint64_t resolved, canonical, conflict, auth_failures, refused, epoch_changes;
	uint64_t storms; /* epoch storms handed over (began) */
};

struct cp_audit {
	struct cp_shadow *sh; /* NULL before start and after stop */
	struct cp_engine *engine;
	struct cp_loop *loop;
	struct cp_poll fdpoll[2];
	struct cp_timer tick;
	bool stopping;
	void (*durable_fn)(void *arg, uint64_t seq);
	void *durable_arg;
	void (*lines_fn)(void *arg, const struct fg_line_change *chg);
	void *lines_arg;
	struct cp_audit_stats st;
};

/* No audit record to wait for. */
#define CP_AUDIT_NO_SEQ UINT64_MAX

/* How this daemon was started, for the START record. */
struct cp_audit_boot {
	const char *version;     /* "0.1.0" */
	const char *config_path; /* --config, NULL for the embedded default */
	bool reset_lines;        /* --reset-lines: the config's [lines] over the log's line states */
};

/* Open the shadow audit (its log under [audit] path), set every line's
 * state from the log (cp_shadow_new: the config's [lines] only for a log
 * without line history, or with boot->reset_lines) and publish it, start
 * polling its fds and its tick on l, and register as e's audit sink. a is
 * caller-owned storage; l, cfg and e must outlive it; boot may be NULL.
 * Returns 0 or -errno with a one-line reason in why. */
FG_MUST_CHECK int cp_audit_start(struct cp_audit *a, struct cp_loop *l, const struct fg_config *cfg,
				 struct cp_engine *e, const struct cp_audit_boot *boot, char *why, size_t why_len);
/* Drain and close the audit (bounded) and unregister from the engine. */
void cp_audit_stop(struct cp_audit *a);
/* Whether the audit runs (started and not stopped). */
bool cp_audit_is_running(const struct cp_audit *a);
/* Whether the audit log has failed closed (write/fdatasync error, disk full,
 * or damage found at start): no verdict will be recorded any more. */
bool cp_audit_is_failed(const struct cp_audit *a);

/* An operator line command (FG_LEV_OP_*): applied and audited (then *seq is
 * the record to wait for before answering, CP_AUDIT_NO_SEQ when nothing
 * needs waiting), and published. Returns what fg_line_apply returns (1
 * changed, 0 unchanged, -EALREADY/-EINVAL), or -EIO/-ENOBUFS when the audit
 * refuses (not applied). */
FG_MUST_CHECK int cp_audit_line_op(struct cp_audit *a, unsigned line, enum fg_line_event ev, uint32_t uid,
				   int32_t pid, const char *why, uint64_t *seq);
/* Whether the audit record seq is durable (CP_AUDIT_NO_SEQ always is). */
bool cp_audit_is_durable(const struct cp_audit *a, uint64_t seq);
/* fn(arg, seq) is called with the highest durable sequence number as
 * records become durable; fn NULL unregisters. One listener (the operator
 * socket). */
void cp_audit_on_durable(struct cp_audit *a, void (*fn)(void *arg, uint64_t seq), void *arg);

/* fn(arg, chg) is called after every line change the audit applied and
 * recorded (operator commands, promotions, demotions); fn NULL
 * unregisters. One listener ([cluster], control/cluster/cp_cluster.h). */
void cp_audit_on_lines_changed(struct cp_audit *a, void (*fn)(void *arg, const struct fg_line_change *chg),
			       void *arg);

/* Record a line change (or, from == to, a policy change on the line: config
 * reload) that was applied outside the audit, origin naming the cause.
 * Returns 1 with *seq the record to wait for, 0 when nothing was recorded,
 * -EIO (failed closed or not running) or -ENOBUFS (backlog full). */
FG_MUST_CHECK int cp_audit_line_change(struct cp_audit *a, const struct fg_line_change *chg, const char *origin,
				       uint64_t *seq);
/* An operator's (or a reload's) auto-promote setting for one line, applied
 * and audited (a LINE record, event op_auto_promote; origin names the
 * channel). Returns 1 with *seq the record to wait for, 0 when the line
 * already had it (nothing recorded), -EINVAL, or -EIO/-ENOBUFS when the
 * audit refuses (not applied). */
FG_MUST_CHECK int cp_audit_auto_promote(struct cp_audit *a, unsigned line, bool on, uint32_t uid, int32_t pid,
					const char *origin, const char *why, uint64_t *seq);
/* Record a configuration reload once (result, who, origin, stable error
 * name or "", the changes or the reason). Returns 1 with *seq, 0 when the
 * audit does not run, -EIO/-ENOBUFS. */
FG_MUST_CHECK int cp_audit_reload(struct cp_audit *a, enum fg_audit_reload_result result, uint32_t uid, int32_t pid,
				  const char *origin, const char *error, const char *what, uint64_t *seq);
/* A TLS peer failed authentication: recorded (peer and reason are copied). */
void cp_audit_auth_failure(struct cp_audit *a, const char *peer, const char *reason);

#endif

/* cp_shadow.h - shadow audit glue for the daemon: shadow comparisons
 * (core/shadow.c) + the line table + the audit log (cp_audit_log) + the
 * alert runner (cp_alert).
 *
 * Who may call: the ONE control-plane thread that owns the line table
 * (struct fg_lines, owned by the daemon); every call is non-blocking.
 *
 * How the daemon (D1) drives it:
 *
 *   cp_shadow_new(&sh, cfg, &lines, &hooks, err, sizeof err)   at start-up
 *   cp_shadow_fds(sh, fds)        poll fds[0] (audit io_uring eventfd) and
 *                                 fds[1] (alert children epoll) for POLLIN
 *   cp_shadow_process(sh, now)    when either is readable
 *   cp_shadow_tick(sh, now)       every ~100 ms (expiry, alert timeouts)
 *   cp_shadow_on_resolved(...)    a slot resolved (seed view incl. body)
 *   cp_shadow_on_canonical(...)   a canonical report arrived
 *   cp_shadow_on_conflict(...)    the slot engine reported FG_O_CONFLICT
 *                                 (_from: with its sender named)
 *   cp_shadow_on_epoch_storm(...) conflicts came faster than the epoch may
 *                                 move (control/cp_epoch_guard.h): alert once,
 *                                 hold every line in shadow for hold_ns
 *   cp_shadow_line_op(...)        an operator command (applies + audits), or
 *   cp_shadow_on_line_change(...) audit a change the daemon applied itself
 *   cp_shadow_on_epoch_change(...), cp_shadow_on_peer_auth_failure(...)
 *   cp_shadow_free(sh)            at shutdown (drains the log, bounded)
 *
 * Every on_* call returns 1 and writes *seq (the sequence number of the
 * LAST audit record it appended) when it recorded something, 0 when there
 * was nothing to record, or -errno: -EIO once the log has failed closed,
 * -ENOBUFS when the log's backlog is full (stop taking work), -EINVAL.
 * An acknowledgement that depends on the record (operator command reply,
 * canonical report ack) is sent only once hooks.on_durable(s) reports
 * s >= seq, or cp_shadow_is_durable(sh, seq) says so.
 *
 * Line changes this glue makes itself (promotion after a clean window,
 * demotion on divergence or conflict, demotion of every active line when
 * the log fails closed) are written into the daemon's fg_lines and reported
 * through hooks.on_lines_changed(chg, seq): publish demotions to the
 * dataplane at once (always safe), promotions once seq is durable.
 * seq is CP_SHADOW_NO_SEQ when the change could not be recorded (log
 * failed): it is a demotion, publish it at once.
 *
 * Fail closed: when the log fails, hooks.on_failed(err) runs once, an
 * "audit_failed" alert is raised, every ACTIVE line is demoted to SHADOW,
 * clean verdicts stop promoting, and every later on_* call returns -EIO.
 * Records appended but not yet durable when it failed are counted in
 * stats.append_failed (and lost_at_failure); resolved seeds and canonical
 * reports are still compared, each verdict counted and its failed record
 * counted in append_failed (a divergence still demotes and alerts).
 * The daemon must stop acknowledging anything that waits for durability. */
#ifndef CP_SHADOW_H
#define CP_SHADOW_H

#include <stdbool.h>
#include <stdint.h>

#include "cp_alert.h"
#include "cp_audit_log.h"
#include "fg/config.h"
#include "fg/line.h"
#include "fg/shadow.h"
#include "fg/slot.h"
#include "fg/wire.h"

#define CP_SHADOW_NO_SEQ UINT64_MAX

struct cp_shadow;

struct cp_shadow_hooks {
	void (*on_durable)(void *arg, uint64_t seq);  /* every record <= seq is durable */
	void (*on_failed)(void *arg, int err);        /* the log failed closed */
	void (*on_lines_changed)(void *arg, const struct fg_line_change *chg, uint64_t seq);
	void (*log)(void *arg, const char *msg);      /* NULL = stderr */
	void (*log_warn)(void *arg, const char *msg); /* divergences, alerts' failures; NULL = log */
	void (*log_err)(void *arg, const char *msg);  /* errors (damage, fail closed); NULL = log */
	void *arg;
};

/* Knobs not in struct fg_config (tests, bench); NULL = defaults. */
struct cp_shadow_opts {
	uint64_t expiry_ns;        /* pending half lifetime; 0 = max(10 * slot deadline, 2 s) */
	uint32_t batch_max_records;/* passed to the log (1 = fdatasync per record) */
	const char *who;           /* GENESIS and START writer name ("fanogate 0.1.0") */
	const char *config_path;   /* START: the config file; NULL = "embedded default" */
	bool reset_lines;          /* fanogate --reset-lines: [lines] of cfg over the log's line states */
};

/* Build from cfg ([audit] path/rotation/group commit/alerts, [lines]
 * shadow_sample, [model] sizes, [slots] capacity/deadline). lines is the
 * daemon's table; it must outlive sh. Opens (recovers) the log, then sets
 * every line's base state and auto-promote flag from the log's records
 * (fg/audit_lines.h, fg_audit_start_decide: the config's [lines] only for
 * a log without line history or with opts->reset_lines; a damaged log or
 * cut records start every would-be ACTIVE line in SHADOW) and appends a
 * START record saying so, durable before it returns (bounded). Returns 0,
 * or -errno with a one-line reason in err. A log with damage recovery will
 * not cut (cp_audit_log.h) still returns 0, FAILED CLOSED from the start:
 * the damage (file, offset, seq, reason) goes to hooks.log_err, an
 * "audit_damaged" alert is raised, active lines are demoted to shadow,
 * hooks.on_failed(EBADMSG) runs, and stats.damaged is set. */
FG_MUST_CHECK int cp_shadow_new(struct cp_shadow **out, const struct fg_config *cfg, struct fg_lines *lines,
				const struct cp_shadow_hooks *hooks, const struct cp_shadow_opts *opts,
				char *err, size_t errlen);
void cp_shadow_free(struct cp_shadow *sh);

/* fds[0]: the audit log's eventfd; fds[1]: the alert runner's epoll fd. */
void cp_shadow_fds(const struct cp_shadow *sh, int fds[2]);
/* Handle whatever is ready on both fds. Returns 0, or -EIO once failed. */
int cp_shadow_process(struct cp_shadow *sh, uint64_t now_ns);
/* Expire pending halves (UNMATCHED verdicts for shadow seeds) and alert
 * timeouts. Returns 0 or -errno as the on_* calls. */
int cp_shadow_tick(struct cp_shadow *sh, uint64_t now_ns);

/* now_ns is CLOCK_MONOTONIC (the slot engine's clock). epoch: model epoch.
 * The seed counts as resolved (and undelivered) and the report as arrived
 * at now_ns; the _at forms take those times from the engine, for the lead
 * (fg/lead.h): t NULL as cp_shadow_on_resolved. src: the report's source
 * class (fg_shadow_source_class; 0 unnamed, as cp_shadow_on_canonical),
 * whose quota of the pending table it counts against. */
FG_MUST_CHECK int cp_shadow_on_resolved(struct cp_shadow *sh, const struct fg_seed_view *v, uint32_t epoch,
					uint64_t now_ns, uint64_t *seq);
FG_MUST_CHECK int cp_shadow_on_resolved_at(struct cp_shadow *sh, const struct fg_seed_view *v,
					   const struct fg_seed_times *t, uint32_t epoch, uint64_t now_ns,
					   uint64_t *seq);
FG_MUST_CHECK int cp_shadow_on_canonical(struct cp_shadow *sh, const struct fg_canon *c, uint32_t epoch,
					 uint64_t now_ns, uint64_t *seq);
FG_MUST_CHECK int cp_shadow_on_canonical_at(struct cp_shadow *sh, const struct fg_canon *c, unsigned src,
					    uint64_t arrived_ns, uint32_t epoch, uint64_t now_ns, uint64_t *seq);
FG_MUST_CHECK int cp_shadow_on_conflict(struct cp_shadow *sh, uint32_t token_seq, uint16_t dst_layer,
					uint8_t line, uint32_t epoch, uint64_t now_ns, uint64_t *seq);
/* The same, src naming the sender ("udp 10.0.0.2:4000", "tls"; NULL: not
 * known): it goes into the demotion's why (the LINE record) and the alert. */
FG_MUST_CHECK int cp_shadow_on_conflict_from(struct cp_shadow *sh, uint32_t token_seq, uint16_t dst_layer,
					     uint8_t line, uint32_t epoch, const char *src, uint64_t now_ns,
					     uint64_t *seq);
/* An epoch storm (control/cp_epoch_guard.h rule 3). began, or no hold in
 * force: every ACTIVE line is demoted to SHADOW (each change recorded with
 * why) and one "epoch_storm" alert is raised with why as its reason. Every
 * call holds the lines until now_ns + hold_ns: while held, clean verdicts
 * are recorded but promote nothing. Returns 1 with *seq (last record) when
 * something was recorded, 0 when the hold was only extended, or -errno as
 * the other on_* calls. */
FG_MUST_CHECK int cp_shadow_on_epoch_storm(struct cp_shadow *sh, bool began, const char *why, uint64_t hold_ns,
					   uint64_t now_ns, uint64_t *seq);
/* Whether an epoch storm holds the lines in shadow at now_ns. */
bool cp_shadow_is_held(const struct cp_shadow *sh, uint64_t now_ns);
/* Apply an operator event (FG_LEV_OP_*) to a line and audit it. Returns 1
 * with *seq when the state changed and was recorded, 0 when nothing changed,
 * -EALREADY/-EINVAL from fg_line_apply, -EIO/-ENOBUFS from the log (the
 * change is then NOT applied). */
FG_MUST_CHECK int cp_shadow_line_op(struct cp_shadow *sh, unsigned line, enum fg_line_event ev, uint32_t uid,
				    int32_t pid, const char *origin, const char *why, uint64_t now_ns,
				    uint64_t *seq);
/* Set a line's auto-promotion (operator or config reload) and audit it: a
 * LINE record, event op_auto_promote, states unchanged. Returns 1 with
 * *seq when recorded, 0 when the flag already was `on` (nothing recorded),
 * -EINVAL for a bad line, -EIO/-ENOBUFS from the log (NOT applied). */
FG_MUST_CHECK int cp_shadow_auto_promote(struct cp_shadow *sh, unsigned line, bool on, uint32_t uid, int32_t pid,
					 const char *origin, const char *why, uint64_t *seq);
/* Record a configuration reload (one RELOAD record: applied, unchanged or
 * refused, with the changes or the reason). Returns 1 with *seq, or
 * -EIO/-ENOBUFS. */
FG_MUST_CHECK int cp_shadow_on_reload(struct cp_shadow *sh, enum fg_audit_reload_result result, uint32_t uid,
				      int32_t pid, const char *origin, const char *error, const char *what,
				      uint64_t *seq);
/* What each line started with (the START decision) and the START record's
 * seq (CP_SHADOW_NO_SEQ when none could be written). */
void cp_shadow_start_lines(const struct cp_shadow *sh, struct fg_audit_line_entry out[FG_LINES], uint64_t *seq);
/* Audit a change the daemon applied itself (e.g. degraded overlay). */
FG_MUST_CHECK int cp_shadow_on_line_change(struct cp_shadow *sh, const struct fg_line_change *chg,
					   const char *origin, uint64_t *seq);
FG_MUST_CHECK int cp_shadow_on_epoch_change(struct cp_shadow *sh, uint32_t from, uint32_t to, uint32_t uid,
					    int32_t pid, const char *why, uint64_t *seq);
/* At most one PEER_AUTH record per 100 ms; failures in between return 0,
 * are counted, and the next record's reason says how many were skipped. */
FG_MUST_CHECK int cp_shadow_on_peer_auth_failure(struct cp_shadow *sh, const char *peer, const char *reason,
						 uint64_t now_ns, uint64_t *seq);

bool cp_shadow_is_durable(const struct cp_shadow *sh, uint64_t seq);
bool cp_shadow_failed(const struct cp_shadow *sh);
/* Hash of the last durable record (hex for metrics: fg_audit_hex) and the
 * next not-yet-durable sequence number. */
void cp_shadow_head(const struct cp_shadow *sh, uint8_t hash[FG_AUDIT_HASH_LEN], uint64_t *durable_next);

struct cp_shadow_stats {
	uint64_t verdicts_clean, verdicts_divergent, verdicts_unmatched;
	uint64_t sampled_in, sampled_out, evicted;
	uint64_t canon_refused_seed, canon_refused_share; /* the pending table's fair share (fg/shadow.h invariant 4) */
	uint64_t canon_not_sampled; /* canonical reports dropped: their seed is not audited */
	uint64_t conflicts, line_changes, peer_auth_failures, promotions, demotions;
	uint64_t peer_auth_suppressed; /* not recorded: more than one per 100 ms */
	uint64_t storms;            /* epoch storms that demoted and alerted (holds begun) */
	uint64_t clean_held;        /* clean verdicts that promoted nothing: a storm held the lines */
	uint64_t promotions_held;   /* windows held back for their lead ([lines] promote_min_ahead / _lead_us) */
	uint64_t append_failed;     /* records not taken, plus those lost_at_failure */
	uint64_t lost_at_failure;   /* appended but never durable: the log failed under them */
	bool damaged;               /* started failed closed on a damaged log */
	uint64_t last_divergence_unix_ns; /* CLOCK_REALTIME of the last divergent verdict, 0: none since start */
	struct cp_audit_log_stats log;
	struct cp_alert_stats alert;
};
void cp_shadow_stats(const struct cp_shadow *sh, struct cp_shadow_stats *out);

/* The leads of clean and divergent verdicts (fg/lead.h), per line of the
 * verdict's mask and ingress of the resolving contribution (verdicts whose
 * ingress is unknown are left out): from the seed's resolution and from
 * its delivery, ahead (lead > 0) and behind apart. For /metrics. */
#define CP_SHADOW_INGRESSES 2u /* FG_AUDIT_INGRESS_UDP, _TLS */
struct cp_shadow_lead {
	struct fg_lead_hist ahead, behind;                 /* from the resolution */
	struct fg_lead_hist deliver_ahead, deliver_behind; /* from the delivery */
};
const struct cp_shadow_lead *cp_shadow_lead(const struct cp_shadow *sh, unsigned line, unsigned ingress);

/* For tests and tools. */
struct cp_audit_log *cp_shadow_log(struct cp_shadow *sh);
struct cp_alert *cp_shadow_alert(struct cp_shadow *sh);

#endif

/* cp_shadow.c - shadow audit glue: comparisons -> verdict records -> line
 * state -> alerts. Contract: cp_shadow.h. One control-plane thread.
 *
 * Order of effects for one verdict (why this order):
 *  1. append the VERDICT record (if that fails, a clean verdict changes
 *     nothing: no promotion without its evidence on record; a divergence
 *     still demotes, because demotion is the safe direction);
 *  2. apply it to the line table and append one LINE record per transition;
 *  3. alert on divergence, after the record exists, so FG_AUDIT_SEQ names it.
 *
 * Line state across restarts (fg/audit_lines.h): cp_shadow_new folds the
 * log's records while the log opens, decides each line's state
 * (fg_audit_start_decide), writes it into the daemon's table and appends a
 * START record, made durable before the daemon serves. From then on prov[]
 * is the recorded view of each line: every LINE record carries the line's
 * base states and its recorded auto-promote flag, and a rotation writes
 * prov[] as a LINES record right after the new file's ROTATION record. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cp_mem.h"
#include "cp_shadow.h"
#include "fg/text.h"

struct cp_shadow {
	struct fg_lines *lines;
	struct cp_shadow_hooks hooks;
	struct fg_shadow core;
	void *core_mem;
	size_t core_len; /* mapped length (cp_mem_unmap) */
	struct cp_audit_log *log;
	struct cp_alert *alert;
	bool failed;
	uint8_t rule_mask[FG_MAX_LAYERS]; /* lines each layer's rule expects */
	uint16_t n_layers;
	bool peer_auth_any;
	uint64_t peer_auth_last_ns, peer_auth_pending;
	uint64_t held_until_ns;  /* epoch storm: lines held in shadow until then (0: never held) */
	/* Each line as recorded: base and auto-promote of its last LINE record
	 * (or the START decision), where it came from and why. The live table
	 * may differ for a moment (a change whose record failed; [cluster]'s
	 * unrecorded auto-promote hold). */
	struct fg_audit_line_entry prov[FG_LINES];
	struct fg_audit_line_entry start[FG_LINES]; /* what this daemon started with */
	uint64_t start_seq;      /* its START record, CP_SHADOW_NO_SEQ when none was written */
	struct cp_shadow_stats st;
	struct cp_shadow_lead lead[FG_LINES][CP_SHADOW_INGRESSES];
};

/* Peer authentication failures come from outside (a scanner can make
 * thousands a second): at most one record per this interval, the rest
 * counted and summed into the next record's reason, so they cannot fill
 * the disk or drown the verdicts. */
#define PEER_AUTH_MIN_NS (100ull * 1000 * 1000)

/* Per-entry body budget: the whole table stays under this. Bodies larger
 * than the budget are compared by fingerprint only (no elementwise figures). */
#define SHADOW_TABLE_BUDGET (64u << 20)

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void slog(struct cp_shadow *sh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void slog(struct cp_shadow *sh, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (sh->hooks.log)
		sh->hooks.log(sh->hooks.arg, msg);
	else
		fprintf(stderr, "fanogate audit: %s\n", msg);
}

static void slog_warn(struct cp_shadow *sh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void slog_warn(struct cp_shadow *sh, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (sh->hooks.log_warn)
		sh->hooks.log_warn(sh->hooks.arg, msg);
	else
		slog(sh, "%s", msg);
}

/* The alert runner reports only what went wrong with a page (the command
 * failed, timed out, could not start): a warning. */
static void alert_log(void *arg, const char *msg)
{
	struct cp_shadow *sh = arg;
	slog_warn(sh, "%s", msg);
}

static void lines_changed(struct cp_shadow *sh, const struct fg_line_change *chg, uint64_t seq)
{
	if (chg->to == FG_LINE_ACTIVE && chg->from != FG_LINE_ACTIVE)
		sh->st.promotions++;
	if (chg->from == FG_LINE_ACTIVE && chg->to != FG_LINE_ACTIVE)
		sh->st.demotions++;
	sh->st.line_changes++;
	if (sh->hooks.on_lines_changed)
		sh->hooks.on_lines_changed(sh->hooks.arg, chg, seq);
}

static void slog_err(struct cp_shadow *sh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void slog_err(struct cp_shadow *sh, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (sh->hooks.log_err)
		sh->hooks.log_err(sh->hooks.arg, msg);
	else if (sh->hooks.log)
		sh->hooks.log(sh->hooks.arg, msg);
	else
		fprintf(stderr, "fanogate audit: error: %s\n", msg);
}

/* Fail closed: demote every active line to shadow (recorded nowhere: the
 * log cannot take it), raise `event` with reason, tell the daemon. */
static void fail_closed(struct cp_shadow *sh, int err, const char *event, const char *reason)
{
	if (sh->failed)
		return;
	sh->failed = true;
	uint64_t now = mono_ns();
	for (unsigned i = 0; i < FG_LINES; i++) {
		if (sh->lines->line[i].base != FG_LINE_ACTIVE)
			continue;
		struct fg_line_change chg;
		if (fg_line_apply(sh->lines, i, FG_LEV_OP_SHADOW, now, FG_UID_AUDIT, 0, reason, &chg) == 1)
			lines_changed(sh, &chg, CP_SHADOW_NO_SEQ);
	}
	struct cp_alert_event ev;
	cp_alert_event_init(&ev, event);
	ev.reason = reason;
	(void)cp_alert_raise(sh->alert, &ev, now);
	if (sh->hooks.on_failed)
		sh->hooks.on_failed(sh->hooks.arg, err);
}

/* The log failed closed (called from inside the log, possibly in the middle
 * of an append): demote, alert, tell the daemon. Appends nothing. */
static void log_failed(void *arg, int err, const char *what)
{
	struct cp_shadow *sh = arg;
	if (sh->failed)
		return;
	char reason[128];
	snprintf(reason, sizeof(reason), "audit log %s failed: %s", what, strerror(err));
	/* Records already appended (counted, maybe acknowledged as taken) that
	 * will now never be durable: they are append failures too. */
	uint8_t h[FG_AUDIT_HASH_LEN];
	uint64_t next = 0;
	cp_audit_log_head(sh->log, h, &next);
	uint64_t durable = cp_audit_log_durable_next(sh->log);
	uint64_t lost = next > durable ? next - durable : 0;
	sh->st.append_failed += lost;
	sh->st.lost_at_failure += lost;
	slog_err(sh, "%s; %" PRIu64 " appended records will never be durable; failing closed: no further "
		 "acknowledgements, active lines demoted to shadow", reason, lost);
	fail_closed(sh, err, "audit_failed", reason);
}

static void log_durable(void *arg, uint64_t seq)
{
	struct cp_shadow *sh = arg;
	if (sh->hooks.on_durable)
		sh->hooks.on_durable(sh->hooks.arg, seq);
}

static int record_change(struct cp_shadow *sh, const struct fg_line_change *chg, const char *origin,
			 uint64_t *seq);
static int append(struct cp_shadow *sh, unsigned type, const union fg_audit_payload *p, uint64_t *seq);

/* The LINES record after a rotation's ROTATION record: the line table as
 * recorded, with the live base where it is less trusted (a demotion whose
 * record could not be appended still counts). */
static bool rotation_summary(void *arg, unsigned *type, union fg_audit_payload *p)
{
	struct cp_shadow *sh = arg;
	memset(p, 0, sizeof(*p));
	for (unsigned i = 0; i < FG_LINES; i++) {
		p->lines.line[i] = sh->prov[i];
		if (sh->lines->line[i].base < p->lines.line[i].base)
			p->lines.line[i].base = (uint8_t)sh->lines->line[i].base;
	}
	*type = FG_AREC_LINES;
	return true;
}

/* Each line's start-up state: decided from the log (fold), the config and
 * what recovery found, written into the daemon's table and logged. */
static void lines_start(struct cp_shadow *sh, const struct fg_config *cfg, const struct cp_shadow_opts *o,
			const struct fg_audit_fold *fold, const struct cp_audit_open_report *rep)
{
	char damage[FG_AUDIT_ENTRY_WHY_MAX];
	struct fg_audit_start_in in = {
		.fold = fold,
		.cfg_auto = cfg->policy.auto_promote,
		.reset = o->reset_lines,
		.damaged = rep->damaged || rep->lines_unreadable,
		.cut = rep->cut,
		.damage = damage,
	};
	if (rep->damaged)
		snprintf(damage, sizeof(damage), "log damaged (%s)", fg_audit_reason_name(rep->damage_reason));
	else
		snprintf(damage, sizeof(damage), "an older log file cannot be read");
	for (unsigned i = 0; i < FG_LINES; i++)
		in.cfg_base[i] = (uint8_t)cfg->line_initial[i];
	fg_audit_start_decide(&in, sh->prov);
	memcpy(sh->start, sh->prov, sizeof(sh->start));
	if (in.damaged && o->reset_lines)
		slog_err(sh, "--reset-lines not applied: the audit log cannot record it (%s)",
			 rep->damaged ? "damaged" : rep->lines_why);
	if (rep->lines_unreadable)
		slog_err(sh, "the line states cannot be read from the log (%s): every line that would be active "
			 "starts in shadow", rep->lines_why);
	char all[256];
	int k = 0;
	for (unsigned i = 0; i < FG_LINES; i++) {
		struct fg_line *l = &sh->lines->line[i];
		const struct fg_audit_line_entry *e = &sh->prov[i];
		/* The window the table was initialised with (just now, on the
		 * caller's clock) stays: nothing was counted in it yet. */
		l->base = (enum fg_line_state)e->base;
		l->auto_promote = e->auto_promote;
		char seq[40] = "";
		if (e->seq != FG_AUDIT_NO_SEQ)
			snprintf(seq, sizeof(seq), " seq %" PRIu64 ",", e->seq);
		k += snprintf(all + k, sizeof(all) - k, "%s%u %s%s", i ? ", " : "", i, fg_line_state_name(l->base),
			      e->auto_promote ? " auto" : "");
		if (e->source != FG_LSRC_CONFIG)
			slog(sh, "line %u %s starts %s, auto-promote %s (%s:%s %s)", i, fg_fano_line_name(i),
			     fg_line_state_name(l->base), e->auto_promote ? "on" : "off",
			     fg_audit_line_source_name(e->source), seq, e->why);
		if (e->source != FG_LSRC_CONFIG && e->source != FG_LSRC_RESET && l->base != cfg->line_initial[i])
			slog(sh, "line %u: [lines] line.%u = %s applies only to a log without line history: "
			     "`fanogate --reset-lines` applies it (audited)", i, i,
			     fg_line_state_name(cfg->line_initial[i]));
	}
	slog(sh, "lines at start: %s (%s)", all,
	     fold->complete && !fg_audit_fold_has_history(fold) && !in.damaged && !in.reset
		     ? "a log without line history: the config's [lines]"
		     : "from the audit log unless said above");
}

/* The START record: what this daemon runs with. Made durable before the
 * daemon serves (bounded wait), so a crash right after start-up cannot
 * forget a reset or the states the daemon started with. */
static void start_record(struct cp_shadow *sh, const struct fg_config *cfg, const struct cp_shadow_opts *o)
{
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	p.start.uid = (uint32_t)getuid();
	p.start.pid = (int32_t)getpid();
	p.start.flags = (uint8_t)((o->reset_lines ? FG_ASTART_RESET : 0) | (cfg->cluster.node[0] ? FG_ASTART_CLUSTER : 0));
	(void)fg_text_copy(p.start.who, sizeof(p.start.who), o->who ? o->who : "fanogate");
	char abs[PATH_MAX];
	const char *cfgname = !o->config_path ? "embedded default"
			      : realpath(o->config_path, abs) ? abs /* a relative --config says little in a log */
							      : o->config_path;
	(void)fg_text_copy(p.start.config, sizeof(p.start.config), cfgname);
	memcpy(p.start.line, sh->prov, sizeof(p.start.line));
	uint64_t seq;
	int rc = append(sh, FG_AREC_START, &p, &seq);
	if (rc < 0) {
		slog_err(sh, "cannot append the start-up record: %s", strerror(-rc));
		return;
	}
	sh->start_seq = seq;
	rc = cp_audit_log_drain(sh->log, 5000);
	if (rc == -ETIMEDOUT)
		slog_err(sh, "the start-up record (seq %" PRIu64 ") is not durable after 5 s", seq);
}

int cp_shadow_new(struct cp_shadow **out, const struct fg_config *cfg, struct fg_lines *lines,
		  const struct cp_shadow_hooks *hooks, const struct cp_shadow_opts *opts, char *err, size_t errlen)
{
	struct cp_shadow *sh = calloc(1, sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	sh->lines = lines;
	sh->start_seq = CP_SHADOW_NO_SEQ;
	if (hooks)
		sh->hooks = *hooks;
	struct cp_shadow_opts o = { 0 };
	if (opts)
		o = *opts;

	sh->n_layers = cfg->layers;
	for (unsigned i = 0; i < FG_MAX_LAYERS; i++)
		sh->rule_mask[i] = cfg->rules[i].mask;
	uint32_t capacity = cfg->slot_capacity ? cfg->slot_capacity : 1;
	uint64_t body_full = (uint64_t)cfg->hidden * cfg->max_seq_len * 4u;
	uint64_t body_budget = (SHADOW_TABLE_BUDGET / capacity) & ~(uint64_t)3;
	struct fg_shadow_cfg scfg = {
		.capacity = capacity,
		.body_max = (uint32_t)(body_full < body_budget ? body_full : body_budget),
		.n_layers = cfg->layers ? cfg->layers : 1,
		.expiry_ns = o.expiry_ns,
		.sample = cfg->shadow_sample,
	};
	if (!scfg.expiry_ns) {
		/* Canonical reports come from the fleet's own chain, which runs
		 * behind the jump: give them ten slot deadlines, at least 2 s. */
		scfg.expiry_ns = cfg->slot_deadline_ns * 10u;
		if (scfg.expiry_ns < 2000000000ull)
			scfg.expiry_ns = 2000000000ull;
	}
	size_t need = fg_shadow_mem_size(&scfg);
	int rc = -EINVAL;
	if (!need) {
		snprintf(err, errlen, "shadow table: bad sizes");
		goto fail;
	}
	/* populated up front (cp_mem.h): every resolved seed the audit keeps
	 * lands in an entry of its own, and a first touch of each would cost
	 * a page fault on the seed path until the whole table was used once */
	sh->core_mem = cp_mem_map_populated(need, &sh->core_len);
	if (!sh->core_mem) {
		rc = -ENOMEM;
		snprintf(err, errlen, "shadow table: cannot allocate %zu bytes", need);
		goto fail;
	}
	rc = fg_shadow_init(&sh->core, sh->core_mem, need, &scfg);
	if (rc < 0) {
		snprintf(err, errlen, "shadow table: invalid configuration (shadow_sample %g)", cfg->shadow_sample);
		goto fail;
	}

	struct cp_alert_cfg acfg = {
		.command = cfg->alert_command,
		.min_interval_ms = cfg->alert_min_interval_ms,
		.node = cfg->cluster.node,
		.audit_path = cfg->audit_path,
		.log = alert_log,
		.arg = sh,
	};
	rc = cp_alert_new(&sh->alert, &acfg);
	if (rc < 0) {
		snprintf(err, errlen, "alert runner: %s", strerror(-rc));
		goto fail;
	}

	struct cp_audit_log_cfg lcfg = {
		.path = cfg->audit_path,
		.rotate_bytes = cfg->audit_rotate_bytes,
		.group_commit_us = cfg->group_commit_us,
		.batch_max_records = o.batch_max_records,
		.who = o.who ? o.who : "fanogate",
		.on_durable = log_durable,
		.on_failed = log_failed,
		.fold = NULL,
		.rotation_summary = rotation_summary,
		.arg = sh,
	};
	struct fg_audit_fold fold;
	lcfg.fold = &fold;
	struct cp_audit_open_report rep;
	rc = cp_audit_log_open(&sh->log, &lcfg, &rep, err, errlen);
	if (rc < 0)
		goto fail;
	lines_start(sh, cfg, &o, &fold, &rep);
	if (rep.damaged) {
		/* Start, but failed closed: the file stays as it is for a person
		 * to look at (fanoctl audit verify / repair). */
		sh->st.damaged = true;
		slog_err(sh, "recovery: %s", err);
		fail_closed(sh, EBADMSG, "audit_damaged", rep.damage);
		err[0] = '\0';
	}
	if (rep.cut)
		slog(sh, "recovery: cut %" PRIu64 " bytes of torn tail at offset %" PRIu64 " of %s (%s); "
		     "last intact record seq %" PRIu64, rep.recovery.cut_bytes, rep.recovery.cut_offset,
		     cfg->audit_path, fg_audit_reason_name(rep.recovery.reason), rep.recovery.last_seq);
	if (!sh->failed)
		start_record(sh, cfg, &o);
	*out = sh;
	return 0;
fail:
	cp_alert_free(sh->alert);
	cp_mem_unmap(sh->core_mem, sh->core_len);
	free(sh);
	return rc;
}

void cp_shadow_free(struct cp_shadow *sh)
{
	if (!sh)
		return;
	cp_audit_log_free(sh->log);
	cp_alert_free(sh->alert);
	cp_mem_unmap(sh->core_mem, sh->core_len);
	free(sh);
}

void cp_shadow_fds(const struct cp_shadow *sh, int fds[2])
{
	fds[0] = cp_audit_log_fd(sh->log);
	fds[1] = cp_alert_fd(sh->alert);
}

int cp_shadow_process(struct cp_shadow *sh, uint64_t now_ns)
{
	int rc = cp_audit_log_process(sh->log);
	(void)cp_alert_process(sh->alert, now_ns);
	return rc;
}

static int append(struct cp_shadow *sh, unsigned type, const union fg_audit_payload *p, uint64_t *seq)
{
	int rc = cp_audit_log_append(sh->log, type, p, seq);
	if (rc < 0)
		sh->st.append_failed++;
	return rc;
}

static int record_change(struct cp_shadow *sh, const struct fg_line_change *chg, const char *origin,
			 uint64_t *seq)
{
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	p.line.line = (uint8_t)chg->line;
	p.line.from = (uint8_t)chg->from;
	p.line.to = (uint8_t)chg->to;
	p.line.event = (uint8_t)chg->event;
	p.line.uid = chg->uid;
	p.line.pid = chg->pid;
	p.line.base_from = (uint8_t)chg->base_from;
	p.line.base_to = (uint8_t)chg->base_to;
	struct fg_audit_line_entry *pv = chg->line < FG_LINES ? &sh->prov[chg->line] : NULL;
	/* The recorded flag, not the live one: [cluster] holds auto-promotion
	 * off while etcd is away without deciding anything. */
	p.line.auto_promote = chg->event == FG_LEV_OP_AUTO_PROMOTE ? chg->auto_promote : pv ? pv->auto_promote : 0;
	(void)fg_text_copy(p.line.origin, sizeof(p.line.origin), origin ? origin : "");
	(void)fg_text_copy(p.line.why, sizeof(p.line.why), chg->why); /* UTF-8 boundary */
	int rc = append(sh, FG_AREC_LINE, &p, seq);
	if (rc == 0 && pv) {
		pv->base = p.line.base_to;
		pv->auto_promote = p.line.auto_promote;
		pv->source = FG_LSRC_LOG;
		pv->event = p.line.event;
		pv->seq = *seq;
		(void)fg_text_copy(pv->why, sizeof(pv->why), chg->why);
	}
	return rc;
}

/* Record a verdict, apply it, alert. */
static int handle_verdict(struct cp_shadow *sh, struct fg_shadow_verdict *v, uint32_t epoch, uint64_t now_ns,
			  uint64_t *seq)
{
	v->v.epoch = epoch;
	switch (v->v.kind) {
	case FG_VERDICT_CLEAN: sh->st.verdicts_clean++; break;
	case FG_VERDICT_DIVERGENT: {
		sh->st.verdicts_divergent++;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		sh->st.last_divergence_unix_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		break;
	}
	default: sh->st.verdicts_unmatched++; break;
	}
	if (v->v.kind != FG_VERDICT_UNMATCHED && v->v.ingress < CP_SHADOW_INGRESSES)
		for (unsigned i = 0; i < FG_LINES; i++) {
			if (!(v->v.lines & (1u << i)))
				continue;
			struct cp_shadow_lead *L = &sh->lead[i][v->v.ingress];
			fg_lead_hist_record(&L->ahead, &L->behind, v->v.lead_ns);
			fg_lead_hist_record(&L->deliver_ahead, &L->deliver_behind, v->v.lead_deliver_ns);
		}
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	p.verdict = v->v;
	uint64_t last = CP_SHADOW_NO_SEQ;
	int rc = append(sh, FG_AREC_VERDICT, &p, &last);
	bool recorded = rc == 0;
	uint64_t verdict_seq = last;
	if (!recorded && v->v.kind != FG_VERDICT_DIVERGENT)
		return rc;
	struct fg_line_change chg[FG_LINES];
	int n = 0;
	if (v->v.kind == FG_VERDICT_CLEAN && cp_shadow_is_held(sh, now_ns))
		sh->st.clean_held++; /* an epoch storm holds the lines: no window counts toward promotion */
	else
		n = fg_shadow_apply(sh->lines, v, now_ns, chg);
	for (int i = 0; i < n; i++) {
		uint64_t s = CP_SHADOW_NO_SEQ;
		/* A hold (fg/line.h FG_LINE_HELD): the window would have promoted
		 * the line but for its lead. On record once per window; nothing
		 * changed, so nothing to publish. */
		bool held = chg[i].event == FG_LEV_CLEAN && chg[i].from == chg[i].to &&
			    chg[i].base_from == chg[i].base_to;
		if (record_change(sh, &chg[i], "audit", &s) == 0)
			last = s;
		if (held) {
			sh->st.promotions_held++;
			slog(sh, "line %u %s: promotion held: %s", chg[i].line, fg_fano_line_name(chg[i].line),
			     chg[i].why);
			continue;
		}
		lines_changed(sh, &chg[i], s);
	}
	if (v->v.kind == FG_VERDICT_DIVERGENT) {
		char rec[48] = "NOT recorded: the audit log failed";
		if (recorded)
			snprintf(rec, sizeof(rec), "audit record seq %" PRIu64, verdict_seq);
		slog_warn(sh, "divergence: token %u layer %u lines 0x%02x epoch %u: jumped fingerprint %016" PRIx64
			  " != canonical %016" PRIx64 "%s; %s",
			  v->v.token_seq, v->v.dst_layer, v->v.lines, epoch, v->v.fp_jump, v->v.fp_canon,
			  v->v.shape_mismatch ? ", shapes differ" : "", rec);
	}
	if (v->v.kind == FG_VERDICT_DIVERGENT) {
		struct cp_alert_event ev;
		cp_alert_event_init(&ev, "divergence");
		for (unsigned i = 0; i < FG_LINES; i++)
			if (v->v.lines & (1u << i)) {
				ev.line = (int)i;
				break;
			}
		ev.lines = v->v.lines;
		ev.token_seq = v->v.token_seq;
		ev.dst_layer = v->v.dst_layer;
		ev.epoch = epoch;
		ev.verdict = &v->v;
		ev.audit_seq = recorded ? (int64_t)last : -1;
		/* what the verdict did to the lines, for the page */
		char did[160] = "";
		size_t k = 0;
		for (int i = 0; i < n && k < sizeof(did); i++)
			k += (size_t)snprintf(did + k, sizeof(did) - k, "%sline %u %s -> %s", k ? ", " : "", chg[i].line,
					      fg_line_state_name(chg[i].from), fg_line_state_name(chg[i].to));
		ev.reason = did[0] ? did : "no line changed state";
		(void)cp_alert_raise(sh->alert, &ev, now_ns);
	}
	if (!recorded)
		return rc;
	*seq = last;
	return 1;
}

int cp_shadow_on_resolved(struct cp_shadow *sh, const struct fg_seed_view *v, uint32_t epoch, uint64_t now_ns,
			  uint64_t *seq)
{
	return cp_shadow_on_resolved_at(sh, v, NULL, epoch, now_ns, seq);
}

int cp_shadow_on_resolved_at(struct cp_shadow *sh, const struct fg_seed_view *v, const struct fg_seed_times *t,
			     uint32_t epoch, uint64_t now_ns, uint64_t *seq)
{
	/* Once failed, comparisons still run: every verdict is counted, its
	 * record fails (append_failed counts it), a divergence still demotes
	 * and alerts, a clean verdict promotes nothing (handle_verdict). */
	struct fg_shadow_verdict out;
	int rc = fg_shadow_seed_at(&sh->core, v, t, sh->lines, now_ns, &out);
	if (rc <= 0)
		return rc == 0 && sh->failed ? -EIO : rc;
	return handle_verdict(sh, &out, epoch, now_ns, seq);
}

int cp_shadow_on_canonical(struct cp_shadow *sh, const struct fg_canon *c, uint32_t epoch, uint64_t now_ns,
			   uint64_t *seq)
{
	return cp_shadow_on_canonical_at(sh, c, 0, now_ns, epoch, now_ns, seq);
}

int cp_shadow_on_canonical_at(struct cp_shadow *sh, const struct fg_canon *c, unsigned src, uint64_t arrived_ns,
			      uint32_t epoch, uint64_t now_ns, uint64_t *seq)
{
	/* Failed: compared all the same (cp_shadow_on_resolved). */
	/* A report whose seed will not be compared (all its lines active and the
	 * deterministic sample says no) would only occupy the table until it
	 * expires, evicting halves that matter: drop it now, counted. */
	bool sampled;
	if (c && c->dst_layer < FG_MAX_LAYERS && !fg_shadow_has_seed(&sh->core, c->token_seq, c->dst_layer) &&
	    sh->rule_mask[c->dst_layer] &&
	    !fg_shadow_wants(&sh->core, sh->lines, c->token_seq, c->dst_layer, sh->rule_mask[c->dst_layer], &sampled)) {
		sh->st.canon_not_sampled++;
		return sh->failed ? -EIO : 0;
	}
	struct fg_shadow_verdict out;
	int rc = fg_shadow_canon_at(&sh->core, c, src, arrived_ns, now_ns, &out);
	if (rc <= 0)
		return rc == 0 && sh->failed ? -EIO : rc;
	return handle_verdict(sh, &out, epoch, now_ns, seq);
}

int cp_shadow_on_conflict(struct cp_shadow *sh, uint32_t token_seq, uint16_t dst_layer, uint8_t line,
			  uint32_t epoch, uint64_t now_ns, uint64_t *seq)
{
	return cp_shadow_on_conflict_from(sh, token_seq, dst_layer, line, epoch, NULL, now_ns, seq);
}

int cp_shadow_on_conflict_from(struct cp_shadow *sh, uint32_t token_seq, uint16_t dst_layer, uint8_t line,
			       uint32_t epoch, const char *src, uint64_t now_ns, uint64_t *seq)
{
	if (sh->failed)
		return -EIO;
	if (line >= FG_LINES)
		return -EINVAL;
	sh->st.conflicts++;
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	p.conflict.token_seq = token_seq;
	p.conflict.dst_layer = dst_layer;
	p.conflict.line = line;
	p.conflict.epoch = epoch;
	uint64_t last = CP_SHADOW_NO_SEQ;
	int arc = append(sh, FG_AREC_CONFLICT, &p, &last);
	char why[FG_AUDIT_WHY_MAX];
	snprintf(why, sizeof(why), "conflicting duplicate token %u layer %u epoch %u%s%s", token_seq, dst_layer, epoch,
		 src ? " from " : "", src ? src : "");
	struct fg_line_change chg;
	/* Demote even when the record could not be written: the safe direction. */
	if (fg_line_apply(sh->lines, line, FG_LEV_CONFLICT, now_ns, FG_UID_AUDIT, 0, why, &chg) == 1) {
		uint64_t s = CP_SHADOW_NO_SEQ;
		if (arc == 0 && record_change(sh, &chg, "audit", &s) == 0)
			last = s;
		lines_changed(sh, &chg, s);
	}
	struct cp_alert_event ev;
	cp_alert_event_init(&ev, "conflict");
	ev.line = line;
	ev.lines = (uint8_t)(1u << line);
	ev.token_seq = token_seq;
	ev.dst_layer = dst_layer;
	ev.epoch = epoch;
	ev.peer = src;
	ev.audit_seq = arc == 0 ? (int64_t)last : -1;
	(void)cp_alert_raise(sh->alert, &ev, now_ns);
	if (arc < 0)
		return arc;
	*seq = last;
	return 1;
}

bool cp_shadow_is_held(const struct cp_shadow *sh, uint64_t now_ns)
{
	return sh->held_until_ns && now_ns < sh->held_until_ns;
}

int cp_shadow_on_epoch_storm(struct cp_shadow *sh, bool began, const char *why, uint64_t hold_ns, uint64_t now_ns,
			     uint64_t *seq)
{
	bool was_held = cp_shadow_is_held(sh, now_ns);
	sh->held_until_ns = now_ns + hold_ns;
	if (!sh->held_until_ns)
		sh->held_until_ns = 1;
	if (was_held && !began)
		return sh->failed ? -EIO : 0;
	/* A new hold: every active line to shadow (recorded, the safe
	 * direction even when the record fails), one page. */
	sh->st.storms++;
	uint64_t last = CP_SHADOW_NO_SEQ;
	int rc = 0;
	for (unsigned i = 0; i < FG_LINES; i++) {
		if (sh->lines->line[i].base != FG_LINE_ACTIVE)
			continue;
		struct fg_line_change chg;
		if (fg_line_apply(sh->lines, i, FG_LEV_OP_SHADOW, now_ns, FG_UID_AUDIT, 0, why ? why : "epoch storm",
				  &chg) != 1)
			continue;
		uint64_t s = CP_SHADOW_NO_SEQ;
		int r = sh->failed ? -EIO : record_change(sh, &chg, "audit", &s);
		if (r == 0)
			last = s;
		else
			rc = r;
		lines_changed(sh, &chg, s);
	}
	struct cp_alert_event ev;
	cp_alert_event_init(&ev, "epoch_storm");
	ev.reason = why;
	ev.audit_seq = last != CP_SHADOW_NO_SEQ ? (int64_t)last : -1;
	(void)cp_alert_raise(sh->alert, &ev, now_ns);
	if (sh->failed)
		return -EIO;
	if (rc < 0)
		return rc;
	if (last == CP_SHADOW_NO_SEQ)
		return 0;
	*seq = last;
	return 1;
}

int cp_shadow_line_op(struct cp_shadow *sh, unsigned line, enum fg_line_event ev, uint32_t uid, int32_t pid,
		      const char *origin, const char *why, uint64_t now_ns, uint64_t *seq)
{
	if (sh->failed)
		return -EIO;
	/* Apply to a copy first: the change stands only if its record was appended. */
	struct fg_lines next = *sh->lines;
	struct fg_line_change chg;
	int rc = fg_line_apply(&next, line, ev, now_ns, uid, pid, why ? why : "", &chg);
	if (rc <= 0)
		return rc;
	uint64_t s;
	rc = record_change(sh, &chg, origin ? origin : "operator", &s);
	if (rc < 0)
		return rc;
	*sh->lines = next;
	lines_changed(sh, &chg, s);
	*seq = s;
	return 1;
}

int cp_shadow_auto_promote(struct cp_shadow *sh, unsigned line, bool on, uint32_t uid, int32_t pid,
			   const char *origin, const char *why, uint64_t *seq)
{
	if (sh->failed)
		return -EIO;
	if (line >= FG_LINES)
		return -EINVAL;
	if (sh->lines->line[line].auto_promote == on && sh->prov[line].auto_promote == on)
		return 0;
	/* Apply to a copy first, as an operator line command. The recorded flag
	 * may differ from the live one ([cluster]'s hold): the record is
	 * written whenever either differs from what is asked. */
	struct fg_lines next = *sh->lines;
	next.line[line].auto_promote = !on;
	struct fg_line_change chg;
	int rc = fg_line_auto_promote(&next, line, on, uid, pid, why, &chg);
	if (rc <= 0)
		return rc;
	uint64_t s;
	rc = record_change(sh, &chg, origin ? origin : "operator", &s);
	if (rc < 0)
		return rc;
	*sh->lines = next;
	lines_changed(sh, &chg, s);
	*seq = s;
	return 1;
}

int cp_shadow_on_reload(struct cp_shadow *sh, enum fg_audit_reload_result result, uint32_t uid, int32_t pid,
			const char *origin, const char *error, const char *what, uint64_t *seq)
{
	if (sh->failed)
		return -EIO;
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	p.reload.result = (uint8_t)result;
	p.reload.uid = uid;
	p.reload.pid = pid;
	(void)fg_text_copy(p.reload.origin, sizeof(p.reload.origin), origin ? origin : "");
	(void)fg_text_copy(p.reload.error, sizeof(p.reload.error), error ? error : "");
	(void)fg_text_copy(p.reload.what, sizeof(p.reload.what), what ? what : "");
	int rc = append(sh, FG_AREC_RELOAD, &p, seq);
	return rc < 0 ? rc : 1;
}

void cp_shadow_start_lines(const struct cp_shadow *sh, struct fg_audit_line_entry out[FG_LINES], uint64_t *seq)
{
	memcpy(out, sh->start, sizeof(sh->start));
	if (seq)
		*seq = sh->start_seq;
}

int cp_shadow_on_line_change(struct cp_shadow *sh, const struct fg_line_change *chg, const char *origin,
			     uint64_t *seq)
{
	if (sh->failed)
		return -EIO;
	int rc = record_change(sh, chg, origin, seq);
	if (rc < 0)
		return rc;
	sh->st.line_changes++;
	return 1;
}

int cp_shadow_on_epoch_change(struct cp_shadow *sh, uint32_t from, uint32_t to, uint32_t uid, int32_t pid,
			      const char *why, uint64_t *seq)
{
	if (sh->failed)
		return -EIO;
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	p.epoch.from = from;
	p.epoch.to = to;
	p.epoch.uid = uid;
	p.epoch.pid = pid;
	(void)fg_text_copy(p.epoch.why, sizeof(p.epoch.why), why ? why : ""); /* UTF-8 boundary */
	int rc = append(sh, FG_AREC_EPOCH, &p, seq);
	if (rc < 0)
		return rc;
	/* Pending comparisons belong to the old model: they cannot be judged. */
	(void)fg_shadow_flush(&sh->core);
	return 1;
}

int cp_shadow_on_peer_auth_failure(struct cp_shadow *sh, const char *peer, const char *reason, uint64_t now_ns,
				   uint64_t *seq)
{
	if (sh->failed)
		return -EIO;
	sh->st.peer_auth_failures++;
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	snprintf(p.peer_auth.peer, sizeof(p.peer_auth.peer), "%s", peer ? peer : "");
	if (sh->peer_auth_any && now_ns >= sh->peer_auth_last_ns && now_ns - sh->peer_auth_last_ns < PEER_AUTH_MIN_NS) {
		sh->peer_auth_pending++;
		sh->st.peer_auth_suppressed++;
		return 0;
	}
	if (sh->peer_auth_pending)
		snprintf(p.peer_auth.reason, sizeof(p.peer_auth.reason), "%s (+%llu more failures not recorded)",
			 reason ? reason : "", (unsigned long long)sh->peer_auth_pending);
	else
		snprintf(p.peer_auth.reason, sizeof(p.peer_auth.reason), "%s", reason ? reason : "");
	int rc = append(sh, FG_AREC_PEER_AUTH, &p, seq);
	if (rc == 0) {
		sh->peer_auth_any = true;
		sh->peer_auth_last_ns = now_ns;
		sh->peer_auth_pending = 0;
	}
	struct cp_alert_event ev;
	cp_alert_event_init(&ev, "peer_auth_failure");
	ev.peer = p.peer_auth.peer;
	ev.reason = p.peer_auth.reason;
	ev.audit_seq = rc == 0 ? (int64_t)*seq : -1;
	(void)cp_alert_raise(sh->alert, &ev, now_ns);
	return rc < 0 ? rc : 1;
}

int cp_shadow_tick(struct cp_shadow *sh, uint64_t now_ns)
{
	(void)cp_alert_process(sh->alert, now_ns);
	if (sh->failed)
		return -EIO;
	struct fg_shadow_verdict out[16];
	int n;
	do {
		n = fg_shadow_expire(&sh->core, now_ns, out, (int)FG_ARRAY_LEN(out));
		for (int i = 0; i < n; i++) {
			uint64_t s;
			int rc = handle_verdict(sh, &out[i], 0, now_ns, &s);
			if (rc < 0)
				return rc;
		}
	} while (n == (int)FG_ARRAY_LEN(out));
	return 0;
}

bool cp_shadow_is_durable(const struct cp_shadow *sh, uint64_t seq)
{
	return seq != CP_SHADOW_NO_SEQ && cp_audit_log_is_durable(sh->log, seq);
}

bool cp_shadow_failed(const struct cp_shadow *sh) { return sh->failed; }

void cp_shadow_head(const struct cp_shadow *sh, uint8_t hash[FG_AUDIT_HASH_LEN], uint64_t *durable_next)
{
	cp_audit_log_durable_head(sh->log, hash, durable_next);
}

void cp_shadow_stats(const struct cp_shadow *sh, struct cp_shadow_stats *out)
{
	*out = sh->st;
	out->sampled_in = sh->core.sampled_in;
	out->sampled_out = sh->core.sampled_out;
	out->evicted = sh->core.evicted;
	out->canon_refused_seed = sh->core.canon_refused_seed;
	out->canon_refused_share = sh->core.canon_refused_share;
	cp_audit_log_stats(sh->log, &out->log);
	cp_alert_stats(sh->alert, &out->alert);
}

const struct cp_shadow_lead *cp_shadow_lead(const struct cp_shadow *sh, unsigned line, unsigned ingress)
{
	static const struct cp_shadow_lead none;
	return line < FG_LINES && ingress < CP_SHADOW_INGRESSES ? &sh->lead[line][ingress] : &none;
}

struct cp_audit_log *cp_shadow_log(struct cp_shadow *sh) { return sh->log; }
struct cp_alert *cp_shadow_alert(struct cp_shadow *sh) { return sh->alert; }

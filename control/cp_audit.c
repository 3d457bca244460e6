/* cp_audit.c - the daemon's shadow audit runner (see cp_audit.h): the
 * engine's audit sink, the loop's polling and tick of cp_shadow.
 * Loop thread only. */
#include "cp_audit.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "cp_engine.h"
#include "cp_log.h"
#include "cp_shadow.h"

#define CP_SHADOW_TICK_NS (100ull * 1000 * 1000)

/* ---- cp_shadow's hooks (arg = the runner) -------------------------------- */

static void sh_log(void *arg, const char *msg)
{
	(void)arg;
	cp_info("audit: %s", msg);
}

static void sh_log_warn(void *arg, const char *msg)
{
	(void)arg;
	cp_warn("audit: %s", msg);
}

static void sh_log_err(void *arg, const char *msg)
{
	(void)arg;
	cp_err("audit: %s", msg);
}

static void sh_failed(void *arg, int err)
{
	struct cp_audit *a = arg;
	cp_err("audit: the log failed closed (%s): active lines demoted, nothing waits for durability any more",
	       strerror(err < 0 ? -err : err));
	if (a->engine)
		cp_engine_audit_fact(a->engine, FG_AUDIT_FAILED);
}

static void sh_lines_changed(void *arg, const struct fg_line_change *chg, uint64_t seq)
{
	struct cp_audit *a = arg;
	(void)seq;
	char who[32];
	if (chg->event == FG_LEV_OP_AUTO_PROMOTE)
		cp_notice("line %u %s: auto-promote %s by %s: %s", chg->line, fg_fano_line_name(chg->line),
			  chg->auto_promote ? "on" : "off", cp_log_actor(chg->uid, who, sizeof(who)), chg->why);
	else
		cp_log(cp_log_change_level(chg->from, chg->to), "line %u %s: %s -> %s by %s: %s", chg->line,
		       fg_fano_line_name(chg->line), fg_line_state_name(chg->from), fg_line_state_name(chg->to),
		       cp_log_actor(chg->uid, who, sizeof(who)), chg->why);
	/* Demotions are always safe to publish at once; promotions the audit
	 * only reports once recorded, so publishing here is right for both. */
	cp_engine_publish(a->engine);
	if (a->lines_fn)
		a->lines_fn(a->lines_arg, chg);
}

static void sh_durable(void *arg, uint64_t seq)
{
	struct cp_audit *a = arg;
	if (a->durable_fn)
		a->durable_fn(a->durable_arg, seq);
}

/* ---- the engine's audit sink (arg = the runner) --------------------------- */

static void ev_resolved(void *arg, const struct fg_seed_view *v, uint32_t epoch, const struct fg_seed_times *t)
{
	struct cp_audit *a = arg;
	a->st.resolved++;
	uint64_t seq;
	if (a->sh && cp_shadow_on_resolved_at(a->sh, v, t, epoch, cp_now_ns(), &seq) < 0)
		a->st.refused++;
}

static void ev_canonical(void *arg, const struct fg_canon *c, uint32_t epoch, uint64_t arrived_ns, unsigned src)
{
	struct cp_audit *a = arg;
	a->st.canonical++;
	uint64_t seq;
	if (a->sh && cp_shadow_on_canonical_at(a->sh, c, src, arrived_ns, epoch, cp_now_ns(), &seq) < 0)
		a->st.refused++;
}

static void ev_conflict(void *arg, uint16_t layer, uint32_t token_seq, unsigned line, uint32_t epoch)
{
	struct cp_audit *a = arg;
	a->st.conflict++;
	cp_warn("conflict: layer=%u token_seq=%u line=%u model_epoch=%u: slot poisoned", layer, token_seq, line, epoch);
	uint64_t seq;
	if (a->sh && cp_shadow_on_conflict(a->sh, token_seq, layer, (uint8_t)line, epoch, cp_now_ns(), &seq) < 0)
		a->st.refused++;
}

static void ev_conflict_from(void *arg, uint16_t layer, uint32_t token_seq, unsigned line, uint32_t epoch,
			     const char *src)
{
	struct cp_audit *a = arg;
	a->st.conflict++;
	cp_warn("conflict: layer=%u token_seq=%u line=%u model_epoch=%u from %s: slot poisoned", layer, token_seq, line,
		epoch, src);
	uint64_t seq;
	if (a->sh && cp_shadow_on_conflict_from(a->sh, token_seq, layer, (uint8_t)line, epoch, src, cp_now_ns(), &seq) < 0)
		a->st.refused++;
}

static void ev_epoch_storm(void *arg, bool began, const char *why, uint64_t hold_ns)
{
	struct cp_audit *a = arg;
	if (began)
		a->st.storms++;
	uint64_t seq;
	if (a->sh && cp_shadow_on_epoch_storm(a->sh, began, why, hold_ns, cp_now_ns(), &seq) < 0)
		a->st.refused++;
}

static void ev_epoch_changed(void *arg, uint32_t from, uint32_t to, const char *why)
{
	struct cp_audit *a = arg;
	a->st.epoch_changes++;
	uint64_t seq;
	if (a->sh && cp_shadow_on_epoch_change(a->sh, from, to, FG_UID_AUDIT, 0, why, &seq) < 0)
		a->st.refused++;
}

static void ev_line_changed(void *arg, const struct fg_line_change *chg, const char *origin)
{
	struct cp_audit *a = arg;
	uint64_t seq;
	if (a->sh && cp_shadow_on_line_change(a->sh, chg, origin, &seq) < 0)
		a->st.refused++;
}

static const struct cp_engine_audit_ops engine_sink = {
	.resolved = ev_resolved,
	.canonical = ev_canonical,
	.conflict = ev_conflict,
	.conflict_from = ev_conflict_from,
	.epoch_storm = ev_epoch_storm,
	.epoch_changed = ev_epoch_changed,
	.line_changed = ev_line_changed,
};

/* ---- the loop: fds and tick ----------------------------------------------- */

static void sh_ready(struct cp_audit *a, int revents)
{
	if (revents < 0) {
		cp_err("audit: polling its fd failed: %s", strerror(-revents));
		return;
	}
	if (a->sh && cp_shadow_process(a->sh, cp_now_ns()) < 0)
		a->st.refused++;
}

/* fds[0]: the audit log's io_uring eventfd; fds[1]: the alert children. */
static void sh_ready0(struct cp_loop *l, struct cp_poll *p, int revents)
{
	(void)l;
	sh_ready(cp_container_of(p, struct cp_audit, fdpoll[0]), revents);
}

static void sh_ready1(struct cp_loop *l, struct cp_poll *p, int revents)
{
	(void)l;
	sh_ready(cp_container_of(p, struct cp_audit, fdpoll[1]), revents);
}

static void sh_tick(struct cp_loop *l, struct cp_timer *t)
{
	struct cp_audit *a = cp_container_of(t, struct cp_audit, tick);
	if (a->stopping || !a->sh)
		return;
	if (cp_shadow_tick(a->sh, cp_now_ns()) < 0)
		a->st.refused++;
	if (cp_timer_start(l, t, CP_SHADOW_TICK_NS, sh_tick) < 0)
		cp_err("audit: cannot re-arm its tick");
}

int cp_audit_start(struct cp_audit *a, struct cp_loop *l, const struct fg_config *cfg, struct cp_engine *e,
		   const struct cp_audit_boot *boot, char *why, size_t why_len)
{
	memset(a, 0, sizeof(*a));
	a->engine = e;
	a->loop = l;
	const struct cp_shadow_hooks hooks = {
		.on_durable = sh_durable,
		.on_failed = sh_failed,
		.on_lines_changed = sh_lines_changed,
		.log = sh_log,
		.log_warn = sh_log_warn,
		.log_err = sh_log_err,
		.arg = a,
	};
	char who[64];
	snprintf(who, sizeof(who), "fanogate %s", boot && boot->version ? boot->version : "");
	const struct cp_shadow_opts opts = {
		.who = who,
		.config_path = boot ? boot->config_path : NULL,
		.reset_lines = boot && boot->reset_lines,
	};
	int r = cp_shadow_new(&a->sh, cfg, &e->lines, &hooks, &opts, why, why_len);
	if (r < 0) {
		a->sh = NULL;
		return r;
	}
	/* The lines now hold what the log says (or the config, or shadow): the
	 * dataplane reads them, and whether the log records, from here on. */
	cp_engine_audit_fact(e, cp_shadow_failed(a->sh) ? FG_AUDIT_FAILED : FG_AUDIT_RECORDING);
	int fds[2];
	cp_shadow_fds(a->sh, fds);
	for (int i = 0; i < 2; i++) {
		if (fds[i] < 0)
			continue;
		r = cp_poll_start(l, &a->fdpoll[i], fds[i], POLLIN, i == 0 ? sh_ready0 : sh_ready1);
		if (r < 0) {
			snprintf(why, why_len, "cannot poll the audit's fd %d: %s", fds[i], strerror(-r));
			cp_shadow_free(a->sh);
			a->sh = NULL;
			return r;
		}
	}
	r = cp_timer_start(l, &a->tick, CP_SHADOW_TICK_NS, sh_tick);
	if (r < 0) {
		snprintf(why, why_len, "cannot start the audit tick: %s", strerror(-r));
		return r;
	}
	cp_engine_set_audit(e, &engine_sink, a);
	cp_info("audit: shadow audit running, log %s", cfg->audit_path);
	return 0;
}

void cp_audit_stop(struct cp_audit *a)
{
	a->stopping = true;
	if (a->engine) {
		cp_engine_set_audit(a->engine, NULL, NULL);
		cp_engine_audit_fact(a->engine, FG_AUDIT_OFF);
	}
	if (a->sh)
		cp_shadow_free(a->sh);
	a->sh = NULL;
}

bool cp_audit_is_running(const struct cp_audit *a) { return a && a->sh != NULL; }

bool cp_audit_is_failed(const struct cp_audit *a) { return a && a->sh && cp_shadow_failed(a->sh); }

void cp_audit_on_durable(struct cp_audit *a, void (*fn)(void *arg, uint64_t seq), void *arg)
{
	a->durable_fn = fn;
	a->durable_arg = arg;
}

void cp_audit_on_lines_changed(struct cp_audit *a, void (*fn)(void *arg, const struct fg_line_change *chg),
			       void *arg)
{
	a->lines_fn = fn;
	a->lines_arg = arg;
}

bool cp_audit_is_durable(const struct cp_audit *a, uint64_t seq)
{
	return !a->sh || seq == CP_AUDIT_NO_SEQ || cp_shadow_is_durable(a->sh, seq);
}

int cp_audit_line_op(struct cp_audit *a, unsigned line, enum fg_line_event ev, uint32_t uid, int32_t pid,
		     const char *why, uint64_t *seq)
{
	*seq = CP_AUDIT_NO_SEQ;
	if (!a->sh)
		return -EIO; /* stopped: nothing is applied unrecorded */
	int r = cp_shadow_line_op(a->sh, line, ev, uid, pid, "fanoctl", why, cp_now_ns(), seq);
	if (r == 1) {
		/* Logged by sh_lines_changed; an operator command is the
		 * operator's decision, recorded before the reply: publish now. */
		cp_engine_publish(a->engine);
	} else {
		*seq = CP_AUDIT_NO_SEQ;
	}
	return r;
}

int cp_audit_auto_promote(struct cp_audit *a, unsigned line, bool on, uint32_t uid, int32_t pid, const char *origin,
			  const char *why, uint64_t *seq)
{
	*seq = CP_AUDIT_NO_SEQ;
	if (!a->sh)
		return -EIO;
	uint64_t s = CP_AUDIT_NO_SEQ;
	int r = cp_shadow_auto_promote(a->sh, line, on, uid, pid, origin, why, &s);
	if (r == 1)
		*seq = s;
	return r;
}

int cp_audit_reload(struct cp_audit *a, enum fg_audit_reload_result result, uint32_t uid, int32_t pid,
		    const char *origin, const char *error, const char *what, uint64_t *seq)
{
	*seq = CP_AUDIT_NO_SEQ;
	if (!a || !a->sh)
		return 0;
	uint64_t s = CP_AUDIT_NO_SEQ;
	int r = cp_shadow_on_reload(a->sh, result, uid, pid, origin, error, what, &s);
	if (r == 1)
		*seq = s;
	return r;
}

void cp_audit_auth_failure(struct cp_audit *a, const char *peer, const char *reason)
{
	a->st.auth_failures++;
	uint64_t seq;
	if (a->sh && cp_shadow_on_peer_auth_failure(a->sh, peer, reason, cp_now_ns(), &seq) < 0)
		a->st.refused++;
}

int cp_audit_line_change(struct cp_audit *a, const struct fg_line_change *chg, const char *origin, uint64_t *seq)
{
	*seq = CP_AUDIT_NO_SEQ;
	if (!a->sh)
		return -EIO;
	uint64_t s = CP_AUDIT_NO_SEQ;
	int r = cp_shadow_on_line_change(a->sh, chg, origin, &s);
	if (r == 1)
		*seq = s;
	return r;
}

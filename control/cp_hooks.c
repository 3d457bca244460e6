/* cp_hooks.c - forwards engine events to the shadow audit (see cp_hooks.h).
 * Loop thread only. */
#include "cp_hooks.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "cp_engine.h"
#include "cp_log.h"

#ifdef FG_HAVE_AUDIT
#include "cp_shadow.h"
#endif

struct cp_hook_stats cp_hook_stats;

#ifdef FG_HAVE_AUDIT
#define CP_SHADOW_TICK_NS (100ull * 1000 * 1000)

static void (*durable_fn)(void *arg, uint64_t seq);
static void *durable_arg;

void cp_hooks_on_durable(void (*fn)(void *arg, uint64_t seq), void *arg)
{
	durable_fn = fn;
	durable_arg = arg;
}

static struct {
	struct cp_shadow *sh;
	struct cp_engine *e;
	struct cp_poll fdpoll[2];
	struct cp_timer tick;
	bool stopping;
} g;

static void sh_log(void *arg, const char *msg)
{
	(void)arg;
	cp_info("audit: %s", msg);
}

static void sh_failed(void *arg, int err)
{
	(void)arg;
	cp_err("audit: the log failed closed (%s): active lines demoted, nothing waits for durability any more",
	       strerror(err < 0 ? -err : err));
}

static void sh_lines_changed(void *arg, const struct fg_line_change *chg, uint64_t seq)
{
	(void)arg;
	(void)seq;
	cp_info("line %u %s: %s -> %s (uid %u: %s)", chg->line, fg_fano_line_name(chg->line),
		fg_line_state_name(chg->from), fg_line_state_name(chg->to), (unsigned)chg->uid, chg->why);
	/* Demotions are always safe to publish at once; promotions the audit
	 * only reports once recorded, so publishing here is right for both. */
	cp_engine_publish(g.e);
}

static void sh_durable(void *arg, uint64_t seq)
{
	(void)arg;
	if (durable_fn)
		durable_fn(durable_arg, seq);
}

int cp_hooks_line_op(struct cp_engine *e, unsigned line, enum fg_line_event ev, uint32_t uid, int32_t pid,
		     const char *why, uint64_t *seq)
{
	*seq = CP_HOOK_NO_SEQ;
	if (!g.sh)
		return cp_engine_line_event(e, line, ev, uid, pid, why);
	int r = cp_shadow_line_op(g.sh, line, ev, uid, pid, "fanoctl", why, cp_now_ns(), seq);
	if (r == 1) {
		/* Logged by sh_lines_changed; an operator command is the
		 * operator's decision, recorded before the reply: publish now. */
		cp_engine_publish(e);
	} else {
		*seq = CP_HOOK_NO_SEQ;
	}
	return r;
}

struct cp_shadow *cp_hooks_shadow(void) { return g.sh; }

bool cp_hooks_is_durable(uint64_t seq) { return !g.sh || seq == CP_HOOK_NO_SEQ || cp_shadow_is_durable(g.sh, seq); }

static void sh_ready(struct cp_loop *l, struct cp_poll *p, int revents)
{
	(void)l;
	(void)p;
	if (revents < 0) {
		cp_err("audit: polling its fd failed: %s", strerror(-revents));
		return;
	}
	if (g.sh && cp_shadow_process(g.sh, cp_now_ns()) < 0)
		cp_hook_stats.refused++;
}

static void sh_tick(struct cp_loop *l, struct cp_timer *t)
{
	if (g.stopping || !g.sh)
		return;
	if (cp_shadow_tick(g.sh, cp_now_ns()) < 0)
		cp_hook_stats.refused++;
	if (cp_timer_start(l, t, CP_SHADOW_TICK_NS, sh_tick) < 0)
		cp_err("audit: cannot re-arm its tick");
}

int cp_hooks_start(struct cp_loop *l, const struct fg_config *cfg, struct cp_engine *e, char *why, size_t why_len)
{
	static const struct cp_shadow_hooks hooks = {
		.on_durable = sh_durable,
		.on_failed = sh_failed,
		.on_lines_changed = sh_lines_changed,
		.log = sh_log,
	};
	g.e = e;
	int r = cp_shadow_new(&g.sh, cfg, &e->lines, &hooks, NULL, why, why_len);
	if (r < 0) {
		g.sh = NULL;
		return r;
	}
	int fds[2];
	cp_shadow_fds(g.sh, fds);
	for (int i = 0; i < 2; i++) {
		if (fds[i] < 0)
			continue;
		r = cp_poll_start(l, &g.fdpoll[i], fds[i], POLLIN, sh_ready);
		if (r < 0) {
			snprintf(why, why_len, "cannot poll the audit's fd %d: %s", fds[i], strerror(-r));
			cp_shadow_free(g.sh);
			g.sh = NULL;
			return r;
		}
	}
	r = cp_timer_start(l, &g.tick, CP_SHADOW_TICK_NS, sh_tick);
	if (r < 0) {
		snprintf(why, why_len, "cannot start the audit tick: %s", strerror(-r));
		return r;
	}
	cp_info("audit: shadow audit running, log %s", cfg->audit_path);
	return 0;
}

void cp_hooks_stop(void)
{
	g.stopping = true;
	if (g.sh)
		cp_shadow_free(g.sh);
	g.sh = NULL;
}

bool cp_hooks_have_audit(void) { return g.sh != NULL; }

void cp_hook_shadow_resolved(struct cp_engine *e, const struct fg_seed_view *v)
{
	cp_hook_stats.resolved++;
	uint64_t seq;
	if (g.sh && cp_shadow_on_resolved(g.sh, v, e->epoch, cp_now_ns(), &seq) < 0)
		cp_hook_stats.refused++;
}

void cp_hook_shadow_canonical(struct cp_engine *e, const struct fg_canon *c)
{
	cp_hook_stats.canonical++;
	uint64_t seq;
	if (g.sh && cp_shadow_on_canonical(g.sh, c, e->epoch, cp_now_ns(), &seq) < 0)
		cp_hook_stats.refused++;
}

void cp_hook_shadow_conflict(struct cp_engine *e, uint16_t layer, uint32_t token_seq, unsigned line)
{
	cp_hook_stats.conflict++;
	cp_info("conflict: layer=%u token_seq=%u line=%u model_epoch=%u: slot poisoned", layer, token_seq, line,
		e->epoch);
	uint64_t seq;
	if (g.sh && cp_shadow_on_conflict(g.sh, token_seq, layer, (uint8_t)line, e->epoch, cp_now_ns(), &seq) < 0)
		cp_hook_stats.refused++;
}

void cp_hook_auth_failure(const char *peer, const char *reason)
{
	cp_hook_stats.auth_failures++;
	uint64_t seq;
	if (g.sh && cp_shadow_on_peer_auth_failure(g.sh, peer, reason, cp_now_ns(), &seq) < 0)
		cp_hook_stats.refused++;
}

void cp_hook_epoch_change(struct cp_engine *e, uint32_t from, uint32_t to, const char *why)
{
	(void)e;
	cp_hook_stats.epoch_changes++;
	uint64_t seq;
	if (g.sh && cp_shadow_on_epoch_change(g.sh, from, to, FG_UID_AUDIT, 0, why, &seq) < 0)
		cp_hook_stats.refused++;
}

void cp_hooks_point(struct cp_engine *e, unsigned p, bool down, const char *who)
{
	struct fg_line_change chg[3];
	int n = fg_lines_point(&e->lines, p, down, cp_now_ns(), chg);
	/* cp_points names UDP-driven changes "udp: ..."; the rest are TLS peers. */
	bool udp = who && !strncmp(who, "udp:", 4);
	const char *src = udp ? "UDP sources" : "TLS peers";
	cp_info("point e%u %s: %s (%s)", p, down ? "down" : "up",
		down ? (udp ? "no live TLS peer or UDP source" : "its last TLS peer disconnected")
		     : (udp ? "a UDP source sent again" : "a TLS peer is back"),
		who ? who : "-");
	for (int i = 0; i < n; i++) {
		snprintf(chg[i].why, sizeof(chg[i].why), "point e%u %s (%s)", p, down ? "down" : "up", src);
		cp_info("line %u %s: %s -> %s (point e%u %s)", chg[i].line, fg_fano_line_name(chg[i].line),
			fg_line_state_name(chg[i].from), fg_line_state_name(chg[i].to), p, down ? "down" : "up");
		uint64_t seq;
		if (g.sh && cp_shadow_on_line_change(g.sh, &chg[i], "peers", &seq) < 0)
			cp_hook_stats.refused++;
	}
	if (n > 0)
		cp_engine_publish(e);
}

#else /* !FG_HAVE_AUDIT: count only */

void cp_hooks_on_durable(void (*fn)(void *arg, uint64_t seq), void *arg)
{
	(void)fn;
	(void)arg;
}
int cp_hooks_line_op(struct cp_engine *e, unsigned line, enum fg_line_event ev, uint32_t uid, int32_t pid,
		     const char *why, uint64_t *seq)
{
	*seq = CP_HOOK_NO_SEQ;
	return cp_engine_line_event(e, line, ev, uid, pid, why);
}
bool cp_hooks_is_durable(uint64_t seq)
{
	(void)seq;
	return true;
}

int cp_hooks_start(struct cp_loop *l, const struct fg_config *cfg, struct cp_engine *e, char *why, size_t why_len)
{
	(void)l; (void)cfg; (void)e; (void)why; (void)why_len;
	cp_warn("built without the shadow audit: verdicts are not recorded");
	return 0;
}
void cp_hooks_stop(void) {}
bool cp_hooks_have_audit(void) { return false; }
struct cp_shadow *cp_hooks_shadow(void) { return NULL; }
void cp_hook_shadow_resolved(struct cp_engine *e, const struct fg_seed_view *v)
{
	(void)e; (void)v;
	cp_hook_stats.resolved++;
}
void cp_hook_shadow_canonical(struct cp_engine *e, const struct fg_canon *c)
{
	(void)e; (void)c;
	cp_hook_stats.canonical++;
}
void cp_hook_shadow_conflict(struct cp_engine *e, uint16_t layer, uint32_t token_seq, unsigned line)
{
	cp_hook_stats.conflict++;
	cp_info("conflict: layer=%u token_seq=%u line=%u model_epoch=%u: slot poisoned", layer, token_seq, line,
		e->epoch);
}
void cp_hook_auth_failure(const char *peer, const char *reason)
{
	(void)peer; (void)reason;
	cp_hook_stats.auth_failures++;
}
void cp_hooks_point(struct cp_engine *e, unsigned p, bool down, const char *who)
{
	struct fg_line_change chg[3];
	int n = fg_lines_point(&e->lines, p, down, cp_now_ns(), chg);
	cp_info("point e%u %s (peer %s)", p, down ? "down" : "up", who ? who : "-");
	for (int i = 0; i < n; i++)
		cp_info("line %u %s: %s -> %s (point e%u %s)", chg[i].line, fg_fano_line_name(chg[i].line),
			fg_line_state_name(chg[i].from), fg_line_state_name(chg[i].to), p, down ? "down" : "up");
	if (n > 0)
		cp_engine_publish(e);
}
void cp_hook_epoch_change(struct cp_engine *e, uint32_t from, uint32_t to, const char *why)
{
	(void)e; (void)from; (void)to; (void)why;
	cp_hook_stats.epoch_changes++;
}
#endif

/* cp_reload.c - configuration reload: validate, compare, apply the live
 * keys at once or refuse as a whole, audit (see cp_reload.h). Loop thread
 * only. */
#include "cp_reload.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cp_audit.h"
#include "cp_check.h"
#include "cp_log.h"
#include "fg/audit.h"
#include "fg/fano.h"
#include "fg/text.h"


/* How a key may change while the daemon runs. */
enum kclass {
	K_RESTART, /* a copy lives elsewhere (dataplane, audit, TLS context, sockets) */
	K_LIVE,    /* read from the live configuration or re-applied by apply() */
	K_GROW,    /* live when it grows, restart when it shrinks */
};

struct kfield {
	const char *name; /* "[section] key" */
	size_t off, len;
	enum kclass cls;
};

#define KF(name, field, cls) {name, offsetof(struct fg_config, field), sizeof(((struct fg_config *)0)->field), cls}

/* Every field of struct fg_config, in the key table's order. A field missing
 * here is still caught: diff() compares the rest of the struct too. */
static const struct kfield fields[] = {
	KF("[model] hidden", hidden, K_RESTART),
	KF("[model] layers", layers, K_RESTART),
	KF("[model] max_seq_len", max_seq_len, K_RESTART),
	KF("[bands]", bands, K_RESTART),
	KF("[rules]", rules, K_RESTART),
	KF("[slots] capacity", slot_capacity, K_RESTART),
	KF("[slots] deadline_ms", slot_deadline_ns, K_RESTART),
	KF("[lines] line.N", line_initial, K_RESTART),
	KF("[lines] auto_promote", policy.auto_promote, K_LIVE),
	KF("[lines] promote_count", policy.promote_count, K_LIVE),
	KF("[lines] promote_ms", policy.promote_ns, K_LIVE),
	KF("[lines] shadow_sample", shadow_sample, K_RESTART),
	KF("[lines] promote_min_ahead", policy.min_ahead, K_LIVE),
	KF("[lines] promote_min_lead_us", policy.min_lead_us, K_LIVE),
	KF("[udp] port", udp_port, K_RESTART),
	KF("[udp] raw_port", udp_raw_port, K_RESTART),
	KF("[udp] mtu", mtu, K_RESTART),
	KF("[udp] ack_interval_ms", ack_interval_ms, K_RESTART),
	KF("[udp] send_status", send_status, K_RESTART),
	KF("[udp] status_accepted", status_accepted, K_RESTART),
	KF("[udp] allow", allow, K_RESTART),
	KF("[udp] allow", n_allow, K_RESTART),
	KF("[udp] reasm_contexts", reasm_contexts, K_RESTART),
	KF("[udp] reasm_timeout_ms", reasm_timeout_ms, K_RESTART),
	KF("[consumers]", consumer, K_RESTART),
	KF("[consumers] default", consumer_default, K_RESTART),
	KF("[consumers] resend_ms", delivery_resend_ms, K_RESTART),
	KF("[consumers] resends", delivery_resends, K_RESTART),
	KF("[consumers] pending_max", delivery_pending_max, K_RESTART),
	KF("[consumers] ack_window", consumer_ack_window, K_RESTART),
	KF("[points] eN", point_prefix, K_RESTART),
	KF("[points] eN", n_point_prefix, K_RESTART),
	KF("[points] peer_timeout_ms", peer_timeout_ms, K_RESTART),
	KF("[dataplane] profile", dp_profile, K_RESTART),
	KF("[dataplane] port", dp_port, K_RESTART),
	KF("[dataplane] lcores", lcores, K_RESTART),
	KF("[dataplane] neighbours", static_neigh, K_RESTART),
	KF("[dataplane] neighbour_reachable_ms", neigh_reachable_ms, K_RESTART),
	KF("[dataplane] neighbour_answer_ms", neigh_answer_ms, K_RESTART),
	KF("[tls] listen", tls_listen, K_RESTART),
	KF("[tls] cert", tls_cert, K_RESTART),
	KF("[tls] key", tls_key, K_RESTART),
	KF("[tls] ca", tls_ca, K_RESTART),
	KF("[tls] require_client_cert", tls_require_client_cert, K_RESTART),
	KF("[tls] tokens_file", tokens_file, K_RESTART),
	KF("[tls] max_connections", max_connections, K_GROW),
	KF("[tls] ws_max_message", ws_max_message, K_LIVE),
	KF("[tls] handshake_timeout_ms", handshake_timeout_ms, K_LIVE),
	KF("[tls] idle_timeout_ms", idle_timeout_ms, K_LIVE),
	KF("[tls] send_queue_max", send_queue_max, K_LIVE),
	KF("[tls] unauth_per_source", unauth_per_source, K_LIVE),
	KF("[tls] unauth_per_source", unauth_per_source_auto, K_LIVE),
	KF("[tls] ipv6_source_prefix", ipv6_source_prefix, K_LIVE),
	KF("[tls] auth_reserve", auth_reserve, K_LIVE),
	KF("[tls] body_min_rate", body_min_rate, K_LIVE),
	KF("[audit] path", audit_path, K_RESTART),
	KF("[audit] rotate_bytes", audit_rotate_bytes, K_RESTART),
	KF("[audit] group_commit_us", group_commit_us, K_RESTART),
	KF("[audit] alert_command", alert_command, K_RESTART),
	KF("[audit] alert_min_interval_ms", alert_min_interval_ms, K_RESTART),
	KF("[operator] socket", op_socket, K_RESTART),
	KF("[operator] group", op_group, K_RESTART),
	KF("[metrics] listen", metrics_listen, K_RESTART),
	KF("[daemon] user", run_user, K_RESTART),
	KF("[daemon] group", run_group, K_RESTART),
	KF("[daemon] seccomp", seccomp, K_RESTART),
	KF("[cluster]", cluster, K_RESTART),
};

static bool field_differs(const struct kfield *f, const struct fg_config *a, const struct fg_config *b)
{
	return memcmp((const char *)a + f->off, (const char *)b + f->off, f->len) != 0;
}

static void append(char *out, size_t out_len, const char *s)
{
	size_t n = strlen(out);
	if (n + 1 >= out_len)
		return;
	snprintf(out + n, out_len - n, "%s%s", n ? ", " : "", s);
}

/* Whether field f may go from a to b live. */
static bool field_live(const struct kfield *f, const struct fg_config *a, const struct fg_config *b)
{
	if (f->cls == K_LIVE)
		return true;
	if (f->cls == K_GROW) /* max_connections: the only K_GROW field */
		return b->max_connections >= a->max_connections;
	return false;
}

unsigned cp_reload_diff(const struct fg_config *a, const struct fg_config *b, char *out, size_t out_len,
			bool *live_only)
{
	unsigned n = 0;
	const char *last = "";
	char live[256] = "", restart[256] = "";
	struct fg_config *rest = malloc(sizeof(*rest));
	if (rest)
		memcpy(rest, b, sizeof(*rest));
	for (size_t i = 0; i < FG_ARRAY_LEN(fields); i++) {
		const struct kfield *f = &fields[i];
		if (rest)
			memcpy((char *)rest + f->off, (const char *)a + f->off, f->len);
		if (!field_differs(f, a, b) || !strcmp(f->name, last))
			continue;
		last = f->name;
		n++;
		if (field_live(f, a, b))
			append(live, sizeof(live), f->name);
		else
			append(restart, sizeof(restart), f->cls == K_GROW ? "[tls] max_connections (lowered)" : f->name);
	}
	/* Belt and braces: a field the table does not know about. */
	if (!rest || memcmp(rest, a, sizeof(*rest)) != 0) {
		n++;
		append(restart, sizeof(restart), rest ? "(a key this daemon cannot compare)" : "(out of memory)");
	}
	free(rest);
	*live_only = restart[0] == '\0';
	if (out_len)
		snprintf(out, out_len, "%s", *live_only ? live : restart);
	return n;
}

/* ---- run ------------------------------------------------------------------- */

static void change(struct cp_reload_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void change(struct cp_reload_result *res, const char *fmt, ...)
{
	if (res->n_changes >= CP_RELOAD_CHANGES_MAX)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res->changes[res->n_changes++], CP_RELOAD_CHANGE_LEN, fmt, ap);
	va_end(ap);
}

/* The live keys that differ, as "[section] key: old -> new". */
static void describe(const struct fg_config *a, const struct fg_config *b, struct cp_reload_result *res)
{
	if (a->policy.auto_promote != b->policy.auto_promote)
		change(res, "[lines] auto_promote: %s -> %s", a->policy.auto_promote ? "true" : "false",
		       b->policy.auto_promote ? "true" : "false");
	if (a->policy.promote_count != b->policy.promote_count)
		change(res, "[lines] promote_count: %u -> %u", a->policy.promote_count, b->policy.promote_count);
	if (a->policy.promote_ns != b->policy.promote_ns)
		change(res, "[lines] promote_ms: %llu -> %llu", (unsigned long long)(a->policy.promote_ns / 1000000u),
		       (unsigned long long)(b->policy.promote_ns / 1000000u));
	if (a->policy.min_ahead != b->policy.min_ahead)
		change(res, "[lines] promote_min_ahead: %g -> %g", a->policy.min_ahead, b->policy.min_ahead);
	if (a->policy.min_lead_us != b->policy.min_lead_us)
		change(res, "[lines] promote_min_lead_us: %u -> %u", a->policy.min_lead_us, b->policy.min_lead_us);
	if (a->max_connections != b->max_connections)
		change(res, "[tls] max_connections: %u -> %u", a->max_connections, b->max_connections);
	if (a->ws_max_message != b->ws_max_message)
		change(res, "[tls] ws_max_message: %u -> %u", a->ws_max_message, b->ws_max_message);
	if (a->handshake_timeout_ms != b->handshake_timeout_ms)
		change(res, "[tls] handshake_timeout_ms: %u -> %u", a->handshake_timeout_ms, b->handshake_timeout_ms);
	if (a->idle_timeout_ms != b->idle_timeout_ms)
		change(res, "[tls] idle_timeout_ms: %u -> %u", a->idle_timeout_ms, b->idle_timeout_ms);
	if (a->send_queue_max != b->send_queue_max)
		change(res, "[tls] send_queue_max: %u -> %u", a->send_queue_max, b->send_queue_max);
	if (a->unauth_per_source != b->unauth_per_source || a->unauth_per_source_auto != b->unauth_per_source_auto)
		change(res, "[tls] unauth_per_source: %u%s -> %u%s", a->unauth_per_source,
		       a->unauth_per_source_auto ? " (auto)" : "", b->unauth_per_source,
		       b->unauth_per_source_auto ? " (auto)" : "");
	if (a->ipv6_source_prefix != b->ipv6_source_prefix)
		change(res, "[tls] ipv6_source_prefix: %u -> %u", a->ipv6_source_prefix, b->ipv6_source_prefix);
	if (a->auth_reserve != b->auth_reserve)
		change(res, "[tls] auth_reserve: %g -> %g", a->auth_reserve, b->auth_reserve);
	if (a->body_min_rate != b->body_min_rate)
		change(res, "[tls] body_min_rate: %u -> %u", a->body_min_rate, b->body_min_rate);
}

/* The reload, recorded once (a RELOAD record): applied, unchanged or
 * refused, by whom, through what, with the changes or the reason. Returns 1
 * (recorded, *seq), 0 (no audit running), or -EIO/-ENOBUFS. */
static int audit(const struct cp_reload *g, enum fg_audit_reload_result result, uint32_t uid, int32_t pid,
		 const char *origin, const char *error, const char *what, uint64_t *seq)
{
	*seq = CP_AUDIT_NO_SEQ;
	if (!g->srv || !cp_audit_is_running(g->srv->audit))
		return 0;
	return cp_audit_reload(g->srv->audit, result, uid, pid, origin, error, what, seq);
}

/* A changed [lines] auto_promote, line by line: each line whose flag moves
 * gets its LINE record (op_auto_promote) and its new flag; lines that
 * already have it get nothing. *seq: the last record. */
static void auto_promote_all(const struct cp_reload *g, bool on, uint32_t uid, int32_t pid, const char *origin,
			     uint64_t *seq)
{
	char org[48], why[96];
	snprintf(org, sizeof(org), "config reload (%s)", origin);
	snprintf(why, sizeof(why), "[lines] auto_promote = %s (uid %u pid %d)", on ? "true" : "false", (unsigned)uid,
		 (int)pid);
	for (unsigned i = 0; i < FG_LINES; i++) {
		uint64_t s;
		int r = cp_audit_is_running(g->srv->audit)
				? cp_audit_auto_promote(g->srv->audit, i, on, uid, pid, org, why, &s)
				: (fg_line_set_auto_promote(&g->e->lines, i, on), 0);
		if (r == 1)
			*seq = s;
		else if (r < 0)
			cp_err("config reload: line %u: auto-promote %s not applied: the audit refused its record (%s)", i,
			       on ? "on" : "off", strerror(-r));
	}
}

static int grow_table(struct cp_server *s, uint32_t n)
{
	if (n <= s->max_conns)
		return 0;
	if (cp_admit_grow(&s->admit, n) < 0) /* per-source counts for n connections */
		return -ENOMEM;
	struct cp_conn **t = realloc(s->table, (size_t)n * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t + s->max_conns, 0, (size_t)(n - s->max_conns) * sizeof(*t));
	s->table = t;
	s->max_conns = n;
	return 0;
}

/* Apply the live keys of b over the live configuration. Nothing yields in
 * between: every reader (all on this thread) sees the old or the new set. */
static void apply(const struct cp_reload *g, const struct fg_config *b)
{
	struct fg_config *a = g->live;
	struct fg_lines *ls = &g->e->lines;
	/* each line's auto-promote flag: auto_promote_all, audited */
	a->policy = b->policy;
	ls->policy = b->policy;
	a->max_connections = b->max_connections;
	a->ws_max_message = b->ws_max_message;
	g->srv->hlim.max_body = b->ws_max_message;
	/* HTTP connections already open may now take the larger body too. */
	size_t in_max = (size_t)g->srv->hlim.max_header_bytes + g->srv->hlim.max_request_line + g->srv->hlim.max_body;
	for (struct cp_conn *c = g->srv->all; c; c = c->next)
		if (c->state != CP_CONN_WS && c->in_max < in_max)
			c->in_max = in_max;
	a->handshake_timeout_ms = b->handshake_timeout_ms;
	a->idle_timeout_ms = b->idle_timeout_ms;
	a->send_queue_max = b->send_queue_max;
	a->unauth_per_source = b->unauth_per_source; /* the next accept's admission */
	a->unauth_per_source_auto = b->unauth_per_source_auto;
	a->ipv6_source_prefix = b->ipv6_source_prefix; /* connections accepted later */
	a->auth_reserve = b->auth_reserve;
	a->body_min_rate = b->body_min_rate; /* bodies started later */
	cp_engine_publish(g->e);
}

/* snprintf whose truncation is intended (reasons and records are bounded). */
static void textf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void textf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static int refuse(struct cp_reload *g, struct cp_reload_result *res, int status, const char *error)
{
	res->status = status;
	res->error = error;
	g->st.refused++;
	g->st.last_refused = true;
	return status;
}

int cp_reload_run(struct cp_reload *g, uint32_t uid, int32_t pid, const char *origin, struct cp_reload_result *res)
{
	memset(res, 0, sizeof(*res));
	res->seq = CP_AUDIT_NO_SEQ;
	if (!g->started || !g->path) {
		textf(res->detail, sizeof(res->detail),
			 "the daemon runs on the embedded default configuration (no --config): nothing to reload");
		cp_warn("config reload by uid %u pid %d (%s) refused: %s", (unsigned)uid, (int)pid, origin, res->detail);
		if (audit(g, FG_RELOAD_REFUSED, uid, pid, origin, "no_config_file", res->detail, &res->seq) < 0)
			res->seq = CP_AUDIT_NO_SEQ;
		return refuse(g, res, -ENOENT, "no_config_file");
	}
	struct fg_config *nc = malloc(sizeof(*nc));
	if (!nc)
		return refuse(g, res, -ENOMEM, "no_memory");
	struct fg_config_error err;
	memset(&err, 0, sizeof(err));
	int r = fg_config_load(nc, g->path, &err);
	if (r == 0 && g->dp_profile) /* --dp-profile overrides the file, as at start-up */
		snprintf(nc->dp_profile, sizeof(nc->dp_profile), "%s", g->dp_profile);
	const char *error = NULL;
	char what[FG_AUDIT_TEXT_MAX]; /* the RELOAD record's text */
	if (r < 0) {
		const char *file = err.file[0] ? err.file : g->path;
		if (err.line > 0)
			textf(res->detail, sizeof(res->detail), "%s:%d: %s", file, err.line, err.reason);
		else
			textf(res->detail, sizeof(res->detail), "%s: %s", file,
				 err.reason[0] ? err.reason : strerror(-r));
		error = "config_invalid";
	} else if (cp_check_files(nc, CP_CHECK_KINDS, res->detail, sizeof(res->detail)) < 0) {
		/* A file the new configuration names is missing, a FIFO, a
		 * directory or a device: refused by name, never opened. */
		error = "config_invalid";
	} else {
		char keys[400];
		bool live_only;
		unsigned n = cp_reload_diff(g->live, nc, keys, sizeof(keys), &live_only);
		if (!live_only) {
			textf(res->detail, sizeof(res->detail), "changed keys need a restart: %s", keys);
			error = "needs_restart";
		} else if (n == 0) {
			free(nc);
			g->st.unchanged++;
			g->st.last_refused = false;
			cp_info("config reload by uid %u pid %d (%s): %s unchanged", (unsigned)uid, (int)pid, origin, g->path);
			textf(what, sizeof(what), "%s unchanged", g->path);
			if (audit(g, FG_RELOAD_UNCHANGED, uid, pid, origin, "", what, &res->seq) < 0)
				res->seq = CP_AUDIT_NO_SEQ; /* nothing changed: nothing to refuse */
			return res->status = 0;
		} else {
			describe(g->live, nc, res);
		}
	}
	if (error) {
		free(nc);
		if (audit(g, FG_RELOAD_REFUSED, uid, pid, origin, error, res->detail, &res->seq) < 0)
			res->seq = CP_AUDIT_NO_SEQ; /* the refusal stands; it is logged below */
		cp_warn("config reload by uid %u pid %d (%s) refused: %s", (unsigned)uid, (int)pid, origin, res->detail);
		return refuse(g, res, -EINVAL, error);
	}
	/* Audit first: an applied change is always on record. */
	size_t n = 0;
	what[0] = '\0';
	for (unsigned i = 0; i < res->n_changes && n + 1 < sizeof(what); i++) {
		int w = snprintf(what + n, sizeof(what) - n, "%s%s", i ? "; " : "", res->changes[i]);
		n += w > 0 ? (size_t)w : 0;
	}
	r = audit(g, FG_RELOAD_APPLIED, uid, pid, origin, "", what, &res->seq);
	if (r < 0) {
		free(nc);
		res->n_changes = 0;
		textf(res->detail, sizeof(res->detail), "the audit log refused the record (%s): nothing applied",
			 strerror(-r));
		cp_warn("config reload by uid %u pid %d (%s) refused: %s", (unsigned)uid, (int)pid, origin, res->detail);
		return refuse(g, res, r, r == -ENOBUFS ? "audit_busy" : "audit_failed");
	}
	if (grow_table(g->srv, nc->max_connections) < 0) {
		free(nc);
		res->n_changes = 0;
		textf(res->detail, sizeof(res->detail), "out of memory growing the connection table: nothing applied");
		return refuse(g, res, -ENOMEM, "no_memory");
	}
	bool auto_moved = g->live->policy.auto_promote != nc->policy.auto_promote;
	apply(g, nc);
	if (auto_moved)
		auto_promote_all(g, nc->policy.auto_promote, uid, pid, origin, &res->seq);
	free(nc);
	g->st.applied++;
	g->st.last_refused = false;
	for (unsigned i = 0; i < res->n_changes; i++)
		cp_info("config reload by uid %u pid %d (%s): %s", (unsigned)uid, (int)pid, origin, res->changes[i]);
	return res->status = 1;
}

/* ---- SIGHUP ---------------------------------------------------------------- */
static void on_sighup(struct cp_loop *l, struct cp_poll *p, int revents)
{
	(void)l;
	struct cp_reload *g = cp_container_of(p, struct cp_reload, sigpoll);
	if (revents < 0) {
		cp_err("SIGHUP signalfd poll failed: %s", strerror(-revents));
		return;
	}
	struct signalfd_siginfo si;
	while (read(g->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		struct cp_reload_result *res = malloc(sizeof(*res));
		if (!res) {
			cp_err("SIGHUP: out of memory: configuration not reloaded");
			continue;
		}
		(void)cp_reload_run(g, si.ssi_uid, (int32_t)si.ssi_pid, "SIGHUP", res);
		free(res);
	}
}

int cp_reload_start(struct cp_reload *g, struct cp_loop *l, const char *path, const char *dp_profile,
		    struct fg_config *live, struct cp_engine *e, struct cp_server *srv, char *why, size_t why_len)
{
	memset(g, 0, sizeof(*g));
	g->sigfd = -1;
	g->loop = l;
	g->path = path;
	g->dp_profile = dp_profile;
	g->live = live;
	g->e = e;
	g->srv = srv;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGHUP);
	/* main blocks it before any thread starts; this covers this thread when
	 * it did not. */
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	g->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (g->sigfd < 0) {
		int r = -errno;
		snprintf(why, why_len, "SIGHUP signalfd: %s", strerror(-r));
		return r;
	}
	int r = cp_poll_start(l, &g->sigpoll, g->sigfd, POLLIN, on_sighup);
	if (r < 0) {
		snprintf(why, why_len, "SIGHUP poll: %s", strerror(-r));
		close(g->sigfd);
		g->sigfd = -1;
		return r;
	}
	g->started = true;
	return 0;
}

void cp_reload_stop(struct cp_reload *g)
{
	if (g->sigfd >= 0 && g->started) {
		cp_poll_stop(g->loop, &g->sigpoll);
		g->started = false;
	}
}

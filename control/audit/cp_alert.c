/* cp_alert.c - the alert runner: posix_spawn, rate limit, pidfd reaping.
 * Contract: cp_alert.h. One control-plane thread. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cp_alert.h"
#include "fg/fano.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define MAX_CHILDREN 16u
#define MAX_KINDS 8u
#define ENV_MAX 32u
#define ENV_LEN CP_ALERT_VALUE_MAX

/* One alert's environment, built before each spawn. */
struct envb {
	char buf[ENV_MAX][ENV_LEN];
	char *ptr[ENV_MAX + 1];
	unsigned n;
};

struct child {
	pid_t pid; /* 0 = free */
	int pidfd;
	uint64_t start_ns;
	bool killed;
};

struct cp_alert {
	struct cp_alert_cfg cfg;
	char command[1024];
	char host[256], node[64], audit_path[256];
	int ep;
	struct child child[MAX_CHILDREN];
	/* The rate limit is per event kind, so a storm of one kind (say peer
	 * authentication failures from a scanner) cannot hide another (a
	 * divergence). Kinds beyond MAX_KINDS share the last slot. */
	struct kind {
		char name[24];
		bool have_last;
		uint64_t last_ns;
		uint64_t pending_suppressed;
	} kind[MAX_KINDS];
	unsigned n_kinds;
	struct cp_alert_stats st;
	struct envb env; /* the next child's environment (16 KiB: kept off the stack) */
};

static struct kind *kind_of(struct cp_alert *a, const char *event)
{
	for (unsigned i = 0; i < a->n_kinds; i++)
		if (!strncmp(a->kind[i].name, event, sizeof(a->kind[i].name) - 1))
			return &a->kind[i];
	if (a->n_kinds == MAX_KINDS)
		return &a->kind[MAX_KINDS - 1];
	struct kind *k = &a->kind[a->n_kinds++];
	snprintf(k->name, sizeof(k->name), "%s", event);
	return k;
}

static void alog(struct cp_alert *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void alog(struct cp_alert *a, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (a->cfg.log)
		a->cfg.log(a->cfg.arg, msg);
	else
		fprintf(stderr, "fanogate alert: %s\n", msg);
}

void cp_alert_event_init(struct cp_alert_event *ev, const char *event)
{
	memset(ev, 0, sizeof(*ev));
	ev->event = event;
	ev->line = -1;
	ev->token_seq = ev->dst_layer = ev->epoch = ev->audit_seq = -1;
}

int cp_alert_new(struct cp_alert **out, const struct cp_alert_cfg *cfg)
{
	struct cp_alert *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->cfg = *cfg;
	snprintf(a->command, sizeof(a->command), "%s", cfg->command ? cfg->command : "");
	a->cfg.command = a->command;
	if (cfg->host && cfg->host[0])
		snprintf(a->host, sizeof(a->host), "%s", cfg->host);
	else if (gethostname(a->host, sizeof(a->host) - 1) < 0)
		snprintf(a->host, sizeof(a->host), "unknown");
	snprintf(a->node, sizeof(a->node), "%s", cfg->node ? cfg->node : "");
	snprintf(a->audit_path, sizeof(a->audit_path), "%s", cfg->audit_path ? cfg->audit_path : "");
	a->cfg.host = a->host;
	a->cfg.node = a->node;
	a->cfg.audit_path = a->audit_path;
	if (!a->cfg.max_running || a->cfg.max_running > MAX_CHILDREN)
		a->cfg.max_running = a->cfg.max_running ? MAX_CHILDREN : 4;
	if (!a->cfg.timeout_ms)
		a->cfg.timeout_ms = 30000;
	a->ep = epoll_create1(EPOLL_CLOEXEC);
	if (a->ep < 0) {
		int e = -errno;
		free(a);
		return e;
	}
	*out = a;
	return 0;
}

int cp_alert_fd(const struct cp_alert *a) { return a->ep; }

void cp_alert_stats(const struct cp_alert *a, struct cp_alert_stats *out) { *out = a->st; }

static void env_add(struct envb *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void env_add(struct envb *e, const char *fmt, ...)
{
	if (e->n >= ENV_MAX)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->buf[e->n], ENV_LEN, fmt, ap);
	va_end(ap);
	e->ptr[e->n] = e->buf[e->n];
	e->n++;
	e->ptr[e->n] = NULL;
}

/* Values come from our own records and peers' strings; they go into the
 * environment only (never into the shell command line), so no quoting is
 * needed. Control characters are replaced so a hostile peer string cannot
 * forge extra lines in the pager's message. */
static void env_add_str(struct envb *e, const char *name, const char *v)
{
	char clean[ENV_LEN];
	size_t i = 0;
	for (; v[i] && i < sizeof(clean) - 1; i++)
		clean[i] = (unsigned char)v[i] < 0x20 || v[i] == 0x7f ? '?' : v[i];
	clean[i] = '\0';
	env_add(e, "%s=%s", name, clean);
}

/* Appends to a fixed buffer; what does not fit is cut (the pager line is
 * a summary, every figure is also in its own variable). */
struct line {
	char buf[ENV_LEN];
	size_t n;
};

static void line_add(struct line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line_add(struct line *l, const char *fmt, ...)
{
	if (l->n >= sizeof(l->buf) - 1)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(l->buf + l->n, sizeof(l->buf) - l->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		l->n += (size_t)k < sizeof(l->buf) - l->n ? (size_t)k : sizeof(l->buf) - 1 - l->n;
}

/* What the canonical comparison says about the elements: figures only
 * when both bodies were compared; a digest report proves the bits differ
 * and nothing about how many. */
static void diff_summary(struct line *l, const struct fg_audit_verdict *v)
{
	if (v->shape_mismatch)
		line_add(l, "shapes differ (start_pos, seq_len or length); ");
	if (!v->has_diff) {
		line_add(l, "digest only: element difference unknown");
		return;
	}
	line_add(l, "%" PRIu32 " of %" PRIu32 " elements differ", v->diff.count, v->diff.n_elems);
	if (v->diff.count && v->diff.first_index != UINT32_MAX)
		line_add(l, ", first at %" PRIu32, v->diff.first_index);
	if (v->diff.count > v->diff.nan_count)
		line_add(l, ", max %" PRIu64 " ulp (abs %.9g)", v->diff.max_ulp, v->diff.max_abs);
	if (v->diff.nan_count)
		line_add(l, ", %" PRIu32 " with NaN", v->diff.nan_count);
}

static void summary(struct line *l, const struct cp_alert *a, const struct cp_alert_event *ev)
{
	line_add(l, "fanogate %s%s%s: %s", a->host, a->node[0] ? " node " : "", a->node, ev->event);
	if (ev->line >= 0 && (unsigned)ev->line < FG_LINES)
		line_add(l, " line %d %s", ev->line, fg_fano_line_name((unsigned)ev->line));
	if (ev->token_seq >= 0)
		line_add(l, " token %" PRId64, ev->token_seq);
	if (ev->dst_layer >= 0)
		line_add(l, " layer %" PRId64, ev->dst_layer);
	if (ev->epoch >= 0)
		line_add(l, " epoch %" PRId64, ev->epoch);
	if (ev->verdict) {
		const struct fg_audit_verdict *v = ev->verdict;
		line_add(l, ": jump %016" PRIx64 " %s canonical %016" PRIx64 ", ", v->fp_jump,
			 v->fp_jump == v->fp_canon ? "==" : "!=", v->fp_canon);
		diff_summary(l, v);
	}
	if (ev->peer)
		line_add(l, "; peer %s", ev->peer);
	if (ev->reason)
		line_add(l, "; %s", ev->reason);
	if (ev->audit_seq >= 0)
		line_add(l, "; audit record %" PRId64 "%s%s", ev->audit_seq, a->audit_path[0] ? " in " : "",
			 a->audit_path);
	else
		line_add(l, "; not recorded in the audit log");
}

static void build_env(struct envb *e, const struct cp_alert *a, const struct cp_alert_event *ev, uint64_t suppressed)
{
	e->n = 0;
	e->ptr[0] = NULL;
	env_add(e, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	env_add_str(e, "FG_EVENT", ev->event);
	struct line sum = {.n = 0};
	summary(&sum, a, ev);
	env_add_str(e, "FG_SUMMARY", sum.buf);
	env_add_str(e, "FG_HOST", a->host);
	if (a->node[0])
		env_add_str(e, "FG_NODE", a->node);
	if (ev->line >= 0) {
		env_add(e, "FG_LINE=%d", ev->line);
		if ((unsigned)ev->line < FG_LINES)
			env_add(e, "FG_LINE_TRIPLE=%s", fg_fano_line_name((unsigned)ev->line));
	}
	if (ev->lines) {
		char l[32];
		size_t k = 0;
		for (unsigned i = 0; i < 7; i++)
			if (ev->lines & (1u << i))
				k += (size_t)snprintf(l + k, sizeof(l) - k, "%s%u", k ? "," : "", i);
		env_add(e, "FG_LINES=%s", l);
	}
	if (ev->token_seq >= 0)
		env_add(e, "FG_TOKEN=%" PRId64, ev->token_seq);
	if (ev->dst_layer >= 0)
		env_add(e, "FG_LAYER=%" PRId64, ev->dst_layer);
	if (ev->epoch >= 0)
		env_add(e, "FG_EPOCH=%" PRId64, ev->epoch);
	if (ev->audit_seq >= 0)
		env_add(e, "FG_AUDIT_SEQ=%" PRId64, ev->audit_seq);
	if (a->audit_path[0])
		env_add_str(e, "FG_AUDIT_PATH", a->audit_path);
	if (ev->verdict) {
		const struct fg_audit_verdict *v = ev->verdict;
		env_add(e, "FG_VERDICT=%s", fg_verdict_kind_name(v->kind));
		env_add(e, "FG_FP_JUMP=%016" PRIx64, v->fp_jump);
		env_add(e, "FG_FP_CANON=%016" PRIx64, v->fp_canon);
		struct line d = {.n = 0};
		diff_summary(&d, v);
		env_add_str(e, "FG_DIFF_SUMMARY", d.buf);
		if (v->has_diff) {
			env_add(e, "FG_DIFF_COUNT=%" PRIu32, v->diff.count);
			env_add(e, "FG_DIFF_NAN=%" PRIu32, v->diff.nan_count);
			env_add(e, "FG_DIFF_MAX_ABS=%.9g", v->diff.max_abs);
			env_add(e, "FG_DIFF_MAX_ULP=%" PRIu64, v->diff.max_ulp);
			if (v->diff.count && v->diff.first_index != UINT32_MAX)
				env_add(e, "FG_DIFF_FIRST=%" PRIu32, v->diff.first_index);
		}
		env_add(e, "FG_SHAPE_MISMATCH=%u", v->shape_mismatch);
	}
	if (ev->reason)
		env_add_str(e, "FG_REASON", ev->reason);
	if (ev->peer)
		env_add_str(e, "FG_PEER", ev->peer);
	env_add(e, "FG_SUPPRESSED=%" PRIu64, suppressed);
}

static struct child *free_child(struct cp_alert *a)
{
	for (unsigned i = 0; i < MAX_CHILDREN; i++)
		if (!a->child[i].pid)
			return &a->child[i];
	return NULL;
}

int cp_alert_raise(struct cp_alert *a, const struct cp_alert_event *ev, uint64_t now_ns)
{
	a->st.raised++;
	if (!a->command[0]) {
		a->st.suppressed++;
		return 0;
	}
	uint64_t min_ns = (uint64_t)a->cfg.min_interval_ms * 1000000u;
	struct kind *k = kind_of(a, ev->event ? ev->event : "");
	struct child *c = free_child(a);
	if ((k->have_last && now_ns >= k->last_ns && now_ns - k->last_ns < min_ns) ||
	    a->st.running >= a->cfg.max_running || !c) {
		a->st.suppressed++;
		k->pending_suppressed++;
		return 0;
	}
	build_env(&a->env, a, ev, k->pending_suppressed);

	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawnattr_init(&at);
	sigset_t none, dfl;
	sigemptyset(&none);
	sigemptyset(&dfl);
	sigaddset(&dfl, SIGPIPE);
	sigaddset(&dfl, SIGCHLD);
	sigaddset(&dfl, SIGINT);
	sigaddset(&dfl, SIGTERM);
	/* The daemon may block or ignore signals; the hook must start clean, and
	 * in its own process group so a timeout kill reaches its children too. */
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &dfl);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
	char *argv[] = { "sh", "-c", a->command, NULL };
	pid_t pid;
	int rc = posix_spawn(&pid, "/bin/sh", &fa, &at, argv, a->env.ptr);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc != 0) {
		a->st.spawn_failed++;
		alog(a, "cannot run alert command for %s: %s", ev->event, strerror(rc));
		return -rc;
	}
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd < 0) {
		/* Cannot watch it without blocking: wait for it in the background is
		 * not possible either, so reap it synchronously (rare: ENOMEM/EMFILE). */
		int e = errno;
		alog(a, "pidfd_open for alert child %d: %s; waiting for it", (int)pid, strerror(e));
		int status;
		(void)waitpid(pid, &status, 0);
		a->st.spawned++;
		a->st.reaped++;
		k->have_last = true;
		k->last_ns = now_ns;
		k->pending_suppressed = 0;
		return 1;
	}
	struct epoll_event eev = { .events = EPOLLIN, .data.u32 = (uint32_t)(c - a->child) };
	if (epoll_ctl(a->ep, EPOLL_CTL_ADD, pfd, &eev) < 0)
		alog(a, "epoll_ctl for alert child %d: %s", (int)pid, strerror(errno));
	c->pid = pid;
	c->pidfd = pfd;
	c->start_ns = now_ns;
	c->killed = false;
	a->st.spawned++;
	a->st.running++;
	k->have_last = true;
	k->last_ns = now_ns;
	k->pending_suppressed = 0;
	return 1;
}

/* Reap one child if it has exited; true when it was reaped. */
static bool reap(struct cp_alert *a, struct child *c)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	if (waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
		return false;
	if (si.si_code == CLD_EXITED && si.si_status != 0) {
		a->st.exit_failed++;
		alog(a, "alert command exited with status %d", si.si_status);
	} else if (si.si_code != CLD_EXITED) {
		a->st.exit_failed++;
		alog(a, "alert command killed by signal %d%s", si.si_status, c->killed ? " (timeout)" : "");
	}
	(void)epoll_ctl(a->ep, EPOLL_CTL_DEL, c->pidfd, NULL);
	close(c->pidfd);
	c->pid = 0;
	c->pidfd = -1;
	a->st.running--;
	a->st.reaped++;
	return true;
}

int cp_alert_process(struct cp_alert *a, uint64_t now_ns)
{
	struct epoll_event ev[MAX_CHILDREN];
	(void)epoll_wait(a->ep, ev, (int)MAX_CHILDREN, 0);
	int n = 0;
	uint64_t tmo = (uint64_t)a->cfg.timeout_ms * 1000000u;
	for (unsigned i = 0; i < MAX_CHILDREN; i++) {
		struct child *c = &a->child[i];
		if (!c->pid)
			continue;
		if (reap(a, c)) {
			n++;
			continue;
		}
		if (!c->killed && now_ns > c->start_ns && now_ns - c->start_ns > tmo) {
			/* The whole process group: sh and whatever it started. */
			(void)kill(-c->pid, SIGKILL);
			(void)syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
			c->killed = true;
			a->st.killed++;
			alog(a, "alert command (pid %d) still running after %u ms: killed", (int)c->pid,
			     a->cfg.timeout_ms);
		}
	}
	return n;
}

void cp_alert_free(struct cp_alert *a)
{
	if (!a)
		return;
	for (int tries = 0; tries < 100 && a->st.running; tries++) {
		struct epoll_event ev;
		(void)epoll_wait(a->ep, &ev, 1, 10);
		for (unsigned i = 0; i < MAX_CHILDREN; i++)
			if (a->child[i].pid)
				(void)reap(a, &a->child[i]);
	}
	for (unsigned i = 0; i < MAX_CHILDREN; i++) {
		struct child *c = &a->child[i];
		if (!c->pid)
			continue;
		(void)kill(-c->pid, SIGKILL);
		(void)syscall(SYS_pidfd_send_signal, c->pidfd, SIGKILL, NULL, 0);
		siginfo_t si;
		(void)waitid((idtype_t)P_PIDFD, (id_t)c->pidfd, &si, WEXITED);
		close(c->pidfd);
	}
	close(a->ep);
	free(a);
}

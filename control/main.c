/* main.c - the fanogate daemon.
 *
 * Owns: option parsing, configuration loading (the embedded default when no
 * --config), the start-up order (first what has no side effects: the checks
 * of the files the configuration names, cp_check.h, and the claim of what
 * only one daemon may hold, cp_claim.h; then the dataplane EAL and lanes
 * before any thread, then the control plane's loop, engine, shadow audit
 * and TLS listener),
 * signals (SIGINT/SIGTERM through a signalfd polled by the loop -> clean
 * stop), and the shutdown order. It generates nothing but the self-signed
 * TLS pair of the embedded default (cp_selfsigned.c, when [tls] cert/key are
 * unset); tokens and configuration files come from the operator or scripts/.
 *
 * Threads: this main thread runs the control plane's io_uring loop (cp_loop)
 * and owns the line table (in cp_engine) and the shadow audit; DPDK lcores
 * (when built with FG_HAVE_DPDK and run without --no-dataplane) own the slot
 * shards and talk to it only through include/fg/boundary.h.
 *
 * Logs: stderr, one line per event at a syslog priority, DPDK's lines
 * included (cp_log.h: the journal's "<P>" prefix under systemd, else
 * timestamped). fanogate never forks: --foreground is accepted for
 * compatibility and is the only mode (systemd runs it as Type=notify:
 * readiness through cp_ready.h). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cluster/cp_cluster.h"
#include "cp_engine.h"
#include "cp_harden.h"
#include "cp_ready.h"
#include "cp_audit.h"
#include "cp_audit_log.h"
#include "cp_check.h"
#include "cp_claim.h"
#include "cp_log.h"
#include "cp_loop.h"
#include "cp_metrics.h"
#include "cp_op.h"
#include "cp_reload.h"
#include "cp_server.h"
#include "cp_tls.h"
#include "fg/boundary.h"
#include "fg/config.h"

#ifdef FG_HAVE_DPDK
#include "dp.h"
#endif

#define FANOGATE_VERSION "0.1.0"
#define STOP_GRACE_NS (3ull * 1000 * 1000 * 1000)

struct daemon {
	struct fg_config cfg;
	struct cp_loop loop;
	struct cp_engine engine;
	struct cp_audit audit;
	struct cp_server server;
	struct cp_opsrv op;
	struct cp_metrics metrics;
	struct fg_boundary boundary;
	struct cp_claim claim; /* the operator socket's lock, the listeners (cp_claim.h) */
	struct cp_ready ready; /* sd_notify and --ready-fd (cp_ready.h) */
	struct cp_reload reload; /* fanoctl config reload, SIGHUP (cp_reload.h) */
	struct cp_harden harden; /* privileges, seccomp, the refused-call watch (cp_harden.h) */
	struct cp_cluster *cluster; /* [cluster] (control/cluster/cp_cluster.h); NULL when off */
	bool dataplane;
	int sigfd; /* -1 until opened */
	struct cp_poll sigpoll;
	struct cp_timer stop_timer;
	uint64_t stop_deadline;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fanogate [options]\n"
		"  --config FILE        configuration (INI); default: the embedded default\n"
		"  --check-config FILE  validate FILE and what a start checks of the files it names (TLS\n"
		"                       material, tokens, writable directories); exit 0 (valid) or 1\n"
		"  --audit-repair FILE  move damage in the audit log FILE aside (daemon stopped;\n"
		"                       what `fanoctl audit repair` runs), exit 0, or 2 on error\n"
		"  --reset-lines        start every line from the config's [lines] instead of its\n"
		"                       last state in the audit log (recorded in the start-up record)\n"
		"  --no-dataplane       no DPDK: the control plane owns one slot shard itself\n"
		"  --dp-profile FILE    drivers-config profile (overrides [dataplane] profile)\n"
		"  --foreground         stay in the foreground (the only mode; never forks)\n"
		"  --ready-fd N         once ready, write \"READY=1 pid=P tls=PORT metrics=PORT\" to fd N and close it\n"
		"  --help               this text\n"
		"  --version            print the version\n"
		"Logs go to stderr, one line per event. FANOGATE_DEBUG=1 adds debug lines.\n");
}

static void stop_poll(struct cp_loop *l, struct cp_timer *t)
{
	struct daemon *d = cp_container_of(t, struct daemon, stop_timer);
	if (cp_server_drained(&d->server) || cp_now_ns() >= d->stop_deadline) {
		if (!cp_server_drained(&d->server))
			cp_warn("stop: %u connections still open after the grace period", d->server.n_conns);
		cp_loop_stop(l);
		return;
	}
	if (cp_timer_start(l, &d->stop_timer, 20ull * 1000 * 1000, stop_poll) < 0)
		cp_loop_stop(l);
}

static void on_signal(struct cp_loop *l, struct cp_poll *p, int revents)
{
	struct daemon *d = cp_container_of(p, struct daemon, sigpoll);
	struct signalfd_siginfo si;
	if (revents < 0) {
		cp_err("signalfd poll failed: %s", strerror(-revents));
		cp_loop_stop(l);
		return;
	}
	while (read(d->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (d->server.stopping) {
			cp_info("signal %u again: stopping now", si.ssi_signo);
			cp_loop_stop(l);
			return;
		}
		cp_info("signal %u (%s): stopping", si.ssi_signo, strsignal((int)si.ssi_signo));
		cp_server_stop(&d->server);
		cp_op_stop(&d->op);
		cp_metrics_stop(&d->metrics);
		d->stop_deadline = cp_now_ns() + STOP_GRACE_NS;
		if (cp_timer_start(l, &d->stop_timer, 1000000ull, stop_poll) < 0)
			cp_loop_stop(l);
	}
}

/* Block SIGINT/SIGTERM before any thread exists (the EAL starts some in
 * dp_init): every thread inherits the mask, so the signals stay pending for
 * the signalfd instead of killing the process from a DPDK thread. */
static int signals_block(void)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP); /* config reload: cp_reload's signalfd */
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		return -EINVAL;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static int signals_open(struct daemon *d)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	d->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (d->sigfd < 0)
		return -errno;
	return cp_poll_start(&d->loop, &d->sigpoll, d->sigfd, POLLIN, on_signal);
}

/* --audit-repair FILE (`fanoctl audit repair`): the log's writer moves
 * damage aside (cp_audit_log_repair). Exit 0 repaired or nothing to repair,
 * 2 on an error (the daemon holds the log: EBUSY). */
static int audit_repair(const char *path)
{
	struct cp_audit_open_report rep;
	char err[1024] = "";
	int rc = cp_audit_log_repair(path, &rep, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "fanoctl audit repair: %s\n", err[0] ? err : strerror(-rc));
		return 2;
	}
	if (rc == 0) {
		if (rep.cut)
			printf("ok  %s: cut a torn tail of %" PRIu64 " bytes at offset %" PRIu64 "; nothing else to repair\n",
			       path, rep.recovery.cut_bytes, rep.recovery.cut_offset);
		else
			printf("ok  %s: intact, nothing to repair\n", path);
		return 0;
	}
	printf("repaired %s\n  found: %s\n", path, rep.damage);
	if (rep.aside[0])
		printf("  moved aside: %" PRIu64 " bytes from offset %" PRIu64 " to %s (kept, not deleted)\n",
		       rep.recovery.cut_bytes, rep.recovery.cut_offset, rep.aside);
	else
		printf("  nothing to move aside; a recovery record (head_mismatch) now says so\n");
	printf("  the log continues at seq %" PRIu64 "\n", rep.next_seq);
	return 0;
}

#ifdef FG_HAVE_DPDK
/* DPDK's lines (the EAL, the drivers, the dataplane) in the daemon's log,
 * at their own priority. */
static void dpdk_log_line(int prio, const char *line)
{
	cp_log(cp_log_level_of_prio(prio), "%s", line);
}
#endif

static int load_config(struct fg_config *cfg, const char *path)
{
	struct fg_config_error err;
	memset(&err, 0, sizeof(err));
	if (!path) {
		fg_config_default(cfg);
		return 0;
	}
	int r = fg_config_load(cfg, path, &err);
	if (r < 0) {
		if (err.line > 0)
			cp_err("config %s:%d: %s", err.file[0] ? err.file : path, err.line, err.reason);
		else
			cp_err("config %s: %s", err.file[0] ? err.file : path, err.reason[0] ? err.reason : strerror(-r));
	}
	return r;
}

int main(int argc, char **argv)
{
	static struct daemon d; /* large: keep it off the stack */
	d.sigfd = -1;
	d.claim.op_lock_fd = d.claim.tls_fd = d.claim.metrics_fd = -1;
	const char *config_path = NULL, *check_path = NULL, *profile = NULL;
	bool no_dp = false, reset_lines = false;
	const char *repair_path = NULL;
	int ready_fd = -1;
	enum { OPT_CONFIG = 1, OPT_CHECK, OPT_REPAIR, OPT_NODP, OPT_PROFILE, OPT_FG, OPT_HELP, OPT_VERSION, OPT_READY_FD,
	       OPT_RESET_LINES };
	static const struct option opts[] = {
		{"config", required_argument, NULL, OPT_CONFIG},
		{"check-config", required_argument, NULL, OPT_CHECK},
		{"audit-repair", required_argument, NULL, OPT_REPAIR},
		{"no-dataplane", no_argument, NULL, OPT_NODP},
		{"dp-profile", required_argument, NULL, OPT_PROFILE},
		{"foreground", no_argument, NULL, OPT_FG},
		{"ready-fd", required_argument, NULL, OPT_READY_FD},
		{"reset-lines", no_argument, NULL, OPT_RESET_LINES},
		{"help", no_argument, NULL, OPT_HELP},
		{"version", no_argument, NULL, OPT_VERSION},
		{NULL, 0, NULL, 0},
	};
	int o;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case OPT_CONFIG: config_path = optarg; break;
		case OPT_CHECK: check_path = optarg; break;
		case OPT_REPAIR: repair_path = optarg; break;
		case OPT_NODP: no_dp = true; break;
		case OPT_PROFILE: profile = optarg; break;
		case OPT_FG: break;
		case OPT_READY_FD: ready_fd = atoi(optarg); break;
		case OPT_RESET_LINES: reset_lines = true; break;
		case OPT_HELP: usage(stdout); return 0;
		case OPT_VERSION: printf("fanogate %s\n", FANOGATE_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fanogate: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	cp_log_init();
	const char *dbg = getenv("FANOGATE_DEBUG");
	if (dbg && *dbg && strcmp(dbg, "0") != 0)
		cp_log_set_level(CP_LOG_DEBUG);

	if (repair_path)
		return audit_repair(repair_path);
	if (check_path) {
		struct fg_config *c = calloc(1, sizeof(*c));
		if (!c)
			return 1;
		int r = load_config(c, check_path);
		char cwhy[1024];
		struct cp_harden h;
		if (r == 0 && (r = cp_harden_prepare(&h, c, cwhy, sizeof(cwhy))) < 0)
			cp_err("config %s: %s", check_path, cwhy); /* [daemon] user/group must exist here */
		/* What a start checks of the files and directories it names. */
		if (r == 0 && (r = cp_check_files(c, CP_CHECK_ALL, cwhy, sizeof(cwhy))) < 0)
			cp_err("config %s: %s", check_path, cwhy);
		if (r == 0)
			printf("%s: ok\n", check_path);
		free(c);
		return r == 0 ? 0 : 1;
	}

	if (load_config(&d.cfg, config_path) < 0)
		return 1;
	if (profile)
		snprintf(d.cfg.dp_profile, sizeof(d.cfg.dp_profile), "%s", profile);
	cp_info("fanogate %s starting (config %s)", FANOGATE_VERSION, config_path ? config_path : "embedded default");

	char why[512] = "";
	/* Readiness channels (control/cp_ready.h): opened before the filter. */
	int rr = cp_ready_open(&d.ready, ready_fd);
	if (rr < 0) {
		cp_err("readiness: --ready-fd %d / NOTIFY_SOCKET: %s", ready_fd, strerror(-rr));
		return 1;
	}
	/* The run-as user of [daemon]: an unknown name stops here. */
	if (cp_harden_prepare(&d.harden, &d.cfg, why, sizeof(why)) < 0) {
		cp_err("%s", why);
		return 1;
	}
	/* One daemon per resource, then the TLS material, before anything with
	 * side effects (the EAL, hugepages, the audit log created on first
	 * start, the self-signed pair): a second daemon, or one that cannot
	 * serve TLS, refuses before touching anything. */
	if (cp_check_files(&d.cfg, CP_CHECK_KINDS | CP_CHECK_DIRS, why, sizeof(why)) < 0) {
		cp_err("config %s: %s", config_path ? config_path : "(embedded default)", why);
		return 1;
	}
	if (cp_claim_take(&d.claim, &d.cfg, why, sizeof(why)) < 0) {
		cp_err("refusing to start: %s", why);
		return 1;
	}
	{
		struct cp_tls probe;
		if (cp_tls_init(&probe, &d.cfg, why, sizeof(why)) < 0) {
			cp_err("tls: %s", why);
			return 1;
		}
		cp_tls_fini(&probe);
	}
	int r = signals_block();
	if (r < 0) {
		cp_err("cannot block SIGINT/SIGTERM");
		return 1;
	}
	struct fg_boundary *b = NULL;
#ifdef FG_HAVE_DPDK
	if (!no_dp) {
		if ((r = dp_log_to(dpdk_log_line)) < 0)
			cp_warn("dataplane: DPDK's log stays on stdout: %s", strerror(-r));
		/* EAL, ports, slots and lanes before any thread exists. */
		r = dp_init(&d.cfg, profile, &d.boundary);
		if (r < 0) {
			cp_err("dataplane: init failed: %s ([dataplane] profile %s, port %s; the lines above say what to "
			       "check; --no-dataplane runs without it)",
			       strerror(-r), d.cfg.dp_profile, d.cfg.dp_port[0] ? d.cfg.dp_port : "(the profile's default)");
			return 1;
		}
		d.dataplane = true;
		b = &d.boundary;
	}
#else
	if (!no_dp)
		cp_info("built without DPDK: running as with --no-dataplane");
#endif
	r = cp_loop_init(&d.loop, 1024, cp_harden_ring);
	if (r < 0) {
		cp_err("io_uring setup failed: %s", strerror(-r));
		goto out_dp;
	}
	static const struct cp_engine_ops ops = {
		.done = cp_server_on_done,
		.resolved = cp_server_on_resolved,
		.ended = cp_server_on_ended,
	};
	r = cp_engine_init(&d.engine, &d.loop, &d.cfg, b, &ops, &d.server);
	if (r < 0) {
		cp_err("slot engine: %s", strerror(-r));
		goto out_loop;
	}
	const struct cp_audit_boot boot = {
		.version = FANOGATE_VERSION, .config_path = config_path, .reset_lines = reset_lines};
	r = cp_audit_start(&d.audit, &d.loop, &d.cfg, &d.engine, &boot, why, sizeof(why));
	if (r < 0) {
		cp_err("shadow audit: %s", why);
		goto out_engine;
	}
	r = cp_server_start(&d.server, &d.loop, &d.cfg, &d.engine, &d.audit, d.claim.tls_fd, d.claim.tls_port, why,
			    sizeof(why));
	d.claim.tls_fd = -1; /* the server's now */
	if (r < 0) {
		cp_err("tls: %s", why);
		goto out_audit;
	}
	r = cp_op_start(&d.op, &d.loop, &d.cfg, &d.engine, &d.server, b, why, sizeof(why));
	if (r < 0) {
		cp_err("operator: %s", why);
		goto out_server;
	}
	r = cp_metrics_start(&d.metrics, &d.loop, &d.cfg, &d.engine, &d.server, b, d.claim.metrics_fd,
			     d.claim.metrics_port, why, sizeof(why));
	d.claim.metrics_fd = -1;
	if (r < 0) {
		cp_err("metrics: %s", why);
		goto out_op;
	}
	d.op.config_path = config_path; /* fanoctl status */
	d.op.metrics_port = d.metrics.port;
	d.op.reload = &d.reload;
	d.metrics.reload = &d.reload;
	d.metrics.op_fds = &d.op.fd_st;
	r = cp_reload_start(&d.reload, &d.loop, config_path, profile, &d.cfg, &d.engine, &d.server, why, sizeof(why));
	if (r < 0) {
		cp_err("config reload: %s", why);
		goto out_metrics;
	}
	r = cp_cluster_new(&d.cluster, &d.loop, &d.cfg, &d.engine, &d.audit, why, sizeof(why));
	if (r < 0) {
		cp_err("cluster: %s", why);
		goto out_metrics;
	}
	d.op.cluster = d.cluster; /* fanoctl cluster, fanoctl status */
	d.metrics.cluster = d.cluster;
	r = signals_open(&d);
	if (r < 0) {
		cp_err("signals: %s", strerror(-r));
		goto out_metrics;
	}
#ifdef FG_HAVE_DPDK
	if (d.dataplane && (r = dp_start()) < 0) {
		cp_err("dataplane: start failed: %s", strerror(-r));
		goto out_metrics;
	}
#endif
	/* Every thread (the lcores too) drops its privileges; then the
	 * seccomp filter. Nothing privileged may happen after this line. */
	if ((r = cp_harden_apply(&d.harden, &d.cfg, why, sizeof(why))) < 0) {
		cp_err("hardening: %s", why);
		goto out_metrics;
	}
	if (d.cfg.seccomp == FG_SECCOMP_ON && (r = cp_harden_watch(&d.harden, &d.loop)) < 0) {
		cp_err("hardening: seccomp watch: %s", strerror(-r));
		goto out_metrics;
	}
	char status[200];
	snprintf(status, sizeof(status), "ready: tls listening on port %u, mode %s, %u layers, hidden %u, slot deadline %llu ms",
		 d.server.port, d.dataplane ? "dataplane" : "local", d.cfg.layers, d.cfg.hidden,
		 (unsigned long long)(d.cfg.slot_deadline_ns / 1000000ull));
	cp_info("%s", status);
	if ((r = cp_ready_done(&d.ready, status, d.server.port, d.metrics.port)) < 0)
		cp_warn("readiness: %s (--ready-fd / NOTIFY_SOCKET)", strerror(-r));
	r = cp_loop_run(&d.loop);
	if (r < 0)
		cp_err("event loop failed: %s", strerror(-r));
	cp_ready_stopping(&d.ready);
	cp_info("stopped: %llu connections served, %llu frames, %llu seeds resolved, %llu expired",
		(unsigned long long)d.server.st.accepted, (unsigned long long)d.engine.st.frames,
		(unsigned long long)d.engine.st.resolved, (unsigned long long)d.engine.st.expired);
out_metrics:
	d.op.cluster = NULL;
	d.metrics.cluster = NULL;
	cp_cluster_free(d.cluster); /* before the audit: it gives the engine its sink back */
	d.cluster = NULL;
	if (!d.metrics.stopping)
		cp_metrics_stop(&d.metrics);
out_op:
	if (!d.op.stopping)
		cp_op_stop(&d.op);
out_server:
	cp_server_fini(&d.server);
out_audit:
	cp_audit_stop(&d.audit);
out_engine:
	cp_engine_fini(&d.engine);
out_loop:
	cp_loop_fini(&d.loop);
out_dp:
#ifdef FG_HAVE_DPDK
	if (d.dataplane)
		dp_stop();
#endif
	if (d.sigfd >= 0)
		close(d.sigfd);
	cp_claim_release(&d.claim); /* the operator socket's lock goes with the process */
	cp_harden_report(&d.harden);
	return r < 0 ? 1 : 0;
}

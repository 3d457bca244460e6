/* cp_harden.c - confining the running daemon: privileges of every thread,
 * the run-as user, the seccomp allow-list, io_uring restrictions, refusing
 * fds on the operator socket (see cp_harden.h). Loop thread, except the two
 * signal handlers (any thread). libcap is not used (capget/capset are raw
 * system calls); the filter is built by libseccomp from system call names,
 * resolved for the architecture it runs on. */
#include "cp_harden.h"

#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <pwd.h>
#include <seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "cp_log.h"

/* ---- privileges: one thread ------------------------------------------------ */

/* What one thread does to itself (drop_self). Async-signal-safe: system
 * calls only, no locks, no allocation. */
struct drop_plan {
	uint64_t keep;  /* permitted = effective afterwards; inheritable and ambient empty */
	bool lock;      /* also lock the securebits and empty the bounding set (needs CAP_SETPCAP) */
};

enum drop_stage { DS_CAPGET = 1, DS_SECUREBITS, DS_BOUNDING, DS_AMBIENT, DS_NNP, DS_CAPSET, DS_VERIFY, DS_TIMEOUT };

static const char *const drop_stage_name[] = {
	[DS_CAPGET] = "capget", [DS_SECUREBITS] = "PR_SET_SECUREBITS", [DS_BOUNDING] = "PR_CAPBSET_DROP",
	[DS_AMBIENT] = "PR_CAP_AMBIENT_CLEAR_ALL", [DS_NNP] = "PR_SET_NO_NEW_PRIVS", [DS_CAPSET] = "capset",
	[DS_VERIFY] = "capabilities still set after capset", [DS_TIMEOUT] = "no answer within 2 s",
};

static int caps_get(uint64_t *eff, uint64_t *prm)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	*eff = (uint64_t)d[0].effective | (uint64_t)d[1].effective << 32;
	*prm = (uint64_t)d[0].permitted | (uint64_t)d[1].permitted << 32;
	return 0;
}

static int caps_set(uint64_t keep)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	d[0].effective = d[0].permitted = (uint32_t)keep;
	d[1].effective = d[1].permitted = (uint32_t)(keep >> 32);
	/* inheritable stays empty */
	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

/* Drop from the bounding set every capability the kernel knows but keep.
 * 0 or -errno. */
static int bounding_reduce(uint64_t keep)
{
	for (unsigned c = 0; c < 64; c++) {
		int in = prctl(PR_CAPBSET_READ, (unsigned long)c, 0, 0, 0);
		if (in < 0)
			break; /* EINVAL: past the kernel's last capability */
		if (in == 0 || (keep & (1ull << c)))
			continue;
		if (prctl(PR_CAPBSET_DROP, (unsigned long)c, 0, 0, 0) < 0)
			return -errno;
	}
	return 0;
}

/* The calling thread drops to p. Returns 0 or -errno with *stage set. */
static int drop_self(const struct drop_plan *p, int *stage)
{
	uint64_t eff = 0, prm = 0; /* caps_get writes them on success only; gcc -O3 cannot see it */
	int r;
	*stage = DS_CAPGET;
	if ((r = caps_get(&eff, &prm)) < 0)
		return r;
	uint64_t keep = p->keep & prm;
	if (p->lock && (eff & (1ull << CAP_SETPCAP))) {
		/* Root gets no capabilities from exec or setuid any more, and
		 * nobody can undo it. Bits already set (by systemd's SecureBits=,
		 * or a newer kernel's) are kept: a locked bit cannot change. */
		*stage = DS_SECUREBITS;
		int old = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
		unsigned long bits = (old > 0 ? (unsigned long)old : 0) | SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
				     SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
				     SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
		if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0)
			return -errno;
		*stage = DS_BOUNDING;
		if ((r = bounding_reduce(0)) < 0)
			return r;
	}
	*stage = DS_AMBIENT;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	*stage = DS_NNP;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	*stage = DS_CAPSET;
	if ((r = caps_set(keep)) < 0)
		return r;
	*stage = DS_VERIFY;
	if ((r = caps_get(&eff, &prm)) < 0)
		return r;
	if (eff != keep || prm != keep)
		return -EPERM;
	*stage = 0;
	return 0;
}

/* ---- privileges: every thread ------------------------------------------------ */

/* The broadcast: the loop thread signals one thread at a time with
 * harden_signo() and waits for its answer; the handler runs drop_self on
 * that thread. Threads are listed from /proc/self/task until a listing shows
 * none not yet done (a thread created meanwhile by a thread not yet done
 * shows up in the next listing; one created by a thread already done
 * inherits its credentials).
 *
 * Process-wide on purpose: the signal handler has no argument to find it
 * by. Only all_threads writes it, from the loop thread, before each signal
 * it sends (plan) and the handler answers through the atomics. */
static struct {
	struct drop_plan plan;
	_Atomic int done; /* 0 while the signalled thread works, then 1 */
	_Atomic int res;
	_Atomic int stage;
} bc;

static int harden_signo(void)
{
	return SIGRTMAX - 3; /* glibc keeps 32/33 for itself; DPDK uses none */
}

static void on_harden_signal(int sig)
{
	(void)sig;
	int saved = errno, stage = 0;
	int r = drop_self(&bc.plan, &stage);
	atomic_store(&bc.res, r);
	atomic_store(&bc.stage, stage);
	atomic_store(&bc.done, 1);
	errno = saved;
}

/* io_uring's worker threads (PF_IO_WORKER, /proc/PID/stat flags) belong to
 * the process but never run user code and take no signals: they run each
 * request with the credentials of the thread that submitted it. */
#define PF_IO_WORKER_FLAG 0x10u
static bool task_is_io_worker(const char *tid)
{
	char path[300], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%s/stat", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	char *p = strrchr(buf, ')'); /* the name may hold anything but ends here */
	if (!p)
		return false;
	/* ") S ppid pgrp session tty_nr tpgid flags" */
	unsigned long flags = 0;
	if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return false;
	return (flags & PF_IO_WORKER_FLAG) != 0;
}

static void task_name(const char *tid, char *out, size_t cap)
{
	char path[300];
	snprintf(path, sizeof(path), "/proc/self/task/%s/comm", tid);
	out[0] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, out, cap - 1);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
	char *nl = strchr(out, '\n');
	if (nl)
		*nl = '\0';
}

#define MAX_TASKS 1024

/* Run plan on every thread: this one directly, the others by signal.
 * Returns the number of threads done, or -errno with the reason in why. */
static int all_threads(const struct drop_plan *plan, char *why, size_t why_len)
{
	unsigned n_done = 0;
	int stage = 0, r = drop_self(plan, &stage);
	if (r < 0) {
		snprintf(why, why_len, "%s: %s", drop_stage_name[stage], strerror(-r));
		return r;
	}
	pid_t *done = calloc(MAX_TASKS, sizeof(*done));
	if (!done) {
		snprintf(why, why_len, "out of memory listing threads");
		return -ENOMEM;
	}
	bc.plan = *plan;
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_harden_signal;
	sa.sa_flags = SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(harden_signo(), &sa, &old) < 0) {
		r = -errno;
		snprintf(why, why_len, "sigaction: %s", strerror(-r));
		free(done);
		return r;
	}
	pid_t self = gettid(), pid = getpid();
	bool fresh = true;
	for (unsigned round = 0; fresh && r == 0; round++) {
		fresh = false;
		DIR *d = opendir("/proc/self/task");
		if (!d || round > 64) {
			r = d ? -EAGAIN : -errno;
			snprintf(why, why_len, "%s", d ? "threads keep appearing" : "cannot list /proc/self/task");
			if (d)
				closedir(d);
			break;
		}
		struct dirent *e;
		while (r == 0 && (e = readdir(d)) != NULL) {
			pid_t tid = (pid_t)strtol(e->d_name, NULL, 10);
			if (tid <= 0 || tid == self || task_is_io_worker(e->d_name))
				continue;
			bool seen = false;
			for (unsigned i = 0; i < n_done && !seen; i++)
				seen = done[i] == tid;
			if (seen)
				continue;
			if (n_done == MAX_TASKS) {
				r = -E2BIG;
				snprintf(why, why_len, "more than %u threads", MAX_TASKS);
				break;
			}
			fresh = true;
			done[n_done++] = tid;
			atomic_store(&bc.done, 0);
			if (syscall(SYS_tgkill, pid, tid, harden_signo()) < 0) {
				if (errno == ESRCH)
					continue; /* it ended meanwhile */
				r = -errno;
				snprintf(why, why_len, "tgkill thread %d: %s", (int)tid, strerror(-r));
				break;
			}
			/* 2 s: a lcore polls in user space and takes the signal at
			 * once; a thread blocked in a system call is interrupted. */
			for (unsigned w = 0; !atomic_load(&bc.done) && w < 20000; w++) {
				struct timespec ts = { 0, 100000 };
				nanosleep(&ts, NULL);
				if (w % 100 == 99 && syscall(SYS_tgkill, pid, tid, 0) < 0 && errno == ESRCH)
					break; /* ended before it answered */
			}
			char name[32];
			if (!atomic_load(&bc.done)) {
				if (syscall(SYS_tgkill, pid, tid, 0) < 0 && errno == ESRCH)
					continue;
				task_name(e->d_name, name, sizeof(name));
				r = -ETIMEDOUT;
				snprintf(why, why_len, "thread %d (%s): %s", (int)tid, name, drop_stage_name[DS_TIMEOUT]);
			} else if ((r = atomic_load(&bc.res)) < 0) {
				task_name(e->d_name, name, sizeof(name));
				snprintf(why, why_len, "thread %d (%s): %s: %s", (int)tid, name,
					 drop_stage_name[atomic_load(&bc.stage)], strerror(-r));
			}
		}
		closedir(d);
	}
	/* A late duplicate signal must not kill the process (the default action
	 * of a real-time signal): leave it ignored. */
	(void)old;
	signal(harden_signo(), SIG_IGN);
	free(done);
	return r < 0 ? r : (int)n_done + 1;
}

/* ---- the run-as user ------------------------------------------------------------ */

int cp_harden_prepare(struct cp_harden *h, const struct fg_config *cfg, char *why, size_t why_len)
{
	memset(h, 0, sizeof(*h));
	if (!cfg->run_user[0])
		return 0;
	char buf[4096];
	struct passwd pw, *pwp = NULL;
	int r = getpwnam_r(cfg->run_user, &pw, buf, sizeof(buf), &pwp);
	if (r != 0 || !pwp) {
		snprintf(why, why_len, "[daemon] user %s: %s", cfg->run_user, r ? strerror(r) : "no such user");
		return r ? -r : -ENOENT;
	}
	h->uid = pw.pw_uid;
	h->gid = pw.pw_gid;
	if (cfg->run_group[0]) {
		struct group gr, *grp = NULL;
		r = getgrnam_r(cfg->run_group, &gr, buf, sizeof(buf), &grp);
		if (r != 0 || !grp) {
			snprintf(why, why_len, "[daemon] group %s: %s", cfg->run_group, r ? strerror(r) : "no such group");
			return r ? -r : -ENOENT;
		}
		h->gid = gr.gr_gid;
	}
	h->ids_set = true;
	return 0;
}

/* The directory of [audit] path is the daemon's state directory (the audit
 * log, its rotated files, the self-signed TLS pair): give it and those
 * files to the run-as user, so rotation can create and rename files. A
 * directory anybody may write to (say /tmp) is left alone (and so are files
 * that are not regular). Returns how many were changed or -errno. */
static int chown_state(const struct cp_harden *h, const char *audit_path, char *why, size_t why_len)
{
	char dir[FG_PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", audit_path);
	char *slash = strrchr(dir, '/');
	const char *base = audit_path;
	if (!slash) {
		snprintf(dir, sizeof(dir), ".");
	} else {
		base = audit_path + (slash - dir) + 1;
		if (slash == dir)
			dir[1] = '\0';
		else
			*slash = '\0';
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		int e = errno;
		snprintf(why, why_len, "state directory %s: %s", dir, strerror(e));
		return -e;
	}
	struct stat st;
	int n = 0, r = 0;
	if (fstat(dfd, &st) == 0 && !(st.st_mode & S_IWOTH)) {
		if (fchown(dfd, h->uid, h->gid) < 0) {
			r = -errno;
			snprintf(why, why_len, "chown %s: %s", dir, strerror(-r));
		}
		n++;
	}
	int dfd2 = r == 0 ? dup(dfd) : -1;
	DIR *d = dfd2 >= 0 ? fdopendir(dfd2) : NULL;
	if (!d && r == 0) {
		r = -errno;
		snprintf(why, why_len, "list %s: %s", dir, strerror(-r));
		if (dfd2 >= 0)
			close(dfd2);
	}
	size_t bl = strlen(base);
	struct dirent *e;
	while (d && r == 0 && (e = readdir(d)) != NULL) {
		bool ours = (!strncmp(e->d_name, base, bl) && (e->d_name[bl] == '\0' || e->d_name[bl] == '.')) ||
			    !strcmp(e->d_name, "tls-selfsigned.pem") || !strcmp(e->d_name, "tls-selfsigned.key");
		if (!ours || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (fchownat(dfd, e->d_name, h->uid, h->gid, AT_SYMLINK_NOFOLLOW) < 0) {
			r = -errno;
			snprintf(why, why_len, "chown %s/%s: %s", dir, e->d_name, strerror(-r));
		}
		n++;
	}
	if (d)
		closedir(d);
	close(dfd);
	return r < 0 ? r : n;
}

/* ---- the whole process --------------------------------------------------------- */

/* Expected state of every thread after cp_harden_apply, checked in
 * /proc/self/task/<tid>/status. Returns how many threads were checked or
 * -EPERM with the first difference in why. */
static int verify_threads(const struct cp_harden *h, bool bounding, bool seccomp, char *why, size_t why_len)
{
	DIR *d = opendir("/proc/self/task");
	if (!d) {
		int e = errno;
		snprintf(why, why_len, "cannot list /proc/self/task: %s", strerror(e));
		return -e;
	}
	int n = 0, r = 0;
	struct dirent *e;
	while (r == 0 && (e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || task_is_io_worker(e->d_name))
			continue;
		char path[300], line[256], name[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue; /* ended */
		unsigned long long v;
		unsigned u[4];
		int got = 0;
		while (r == 0 && fgets(line, sizeof(line), f)) {
			const char *bad = NULL;
			if (sscanf(line, "Name: %31s", name) == 1)
				continue;
			if (sscanf(line, "CapInh: %llx", &v) == 1 || sscanf(line, "CapPrm: %llx", &v) == 1 ||
			    sscanf(line, "CapEff: %llx", &v) == 1 || sscanf(line, "CapAmb: %llx", &v) == 1) {
				got++;
				bad = v ? "a capability" : NULL;
			} else if (sscanf(line, "CapBnd: %llx", &v) == 1) {
				bad = bounding && v ? "a bounding set" : NULL;
			} else if (sscanf(line, "NoNewPrivs: %llu", &v) == 1) {
				got++;
				bad = v != 1 ? "no no_new_privs" : NULL;
			} else if (sscanf(line, "Seccomp: %llu", &v) == 1) {
				bad = seccomp && v != 2 ? "no seccomp filter" : NULL;
			} else if (sscanf(line, "Uid: %u %u %u %u", &u[0], &u[1], &u[2], &u[3]) == 4) {
				bad = h->ids_set && (u[0] != h->uid || u[1] != h->uid || u[2] != h->uid || u[3] != h->uid)
					      ? "another uid"
					      : NULL;
			} else if (sscanf(line, "Gid: %u %u %u %u", &u[0], &u[1], &u[2], &u[3]) == 4) {
				bad = h->ids_set && (u[0] != h->gid || u[1] != h->gid || u[2] != h->gid || u[3] != h->gid)
					      ? "another gid"
					      : NULL;
			}
			if (bad) {
				char *nl = strchr(line, '\n');
				if (nl)
					*nl = '\0';
				r = -EPERM;
				snprintf(why, why_len, "thread %s (%s) still has %s (%s)", e->d_name, name, bad, line);
			}
		}
		fclose(f);
		if (r == 0 && got < 5) {
			r = -EPERM;
			snprintf(why, why_len, "thread %s (%s): capability lines missing in %s", e->d_name, name, path);
		}
		n++;
	}
	closedir(d);
	return r < 0 ? r : n;
}

int cp_harden_apply(struct cp_harden *h, const struct fg_config *cfg, char *why, size_t why_len)
{
	uint64_t eff = 0, prm = 0; /* written on success only (gcc -O3 warns otherwise) */
	int r = caps_get(&eff, &prm);
	if (r < 0) {
		snprintf(why, why_len, "capget: %s", strerror(-r));
		return r;
	}
	bool setpcap = (eff >> CAP_SETPCAP) & 1;
	unsigned extra = cfg->alert_command[0] ? CP_HARDEN_SPAWN : 0u;
	bool spawn = extra & CP_HARDEN_SPAWN;
	/* [cluster]: the cluster thread opens its own etcd connections */
	if (cfg->cluster.node[0])
		extra |= CP_HARDEN_NET_OUT;
	int n_chown = 0;
	if (h->ids_set && (n_chown = chown_state(h, cfg->audit_path, why, why_len)) < 0)
		return n_chown;
	/* 1. every thread: securebits, bounding set, ambient, no_new_privs;
	 *    keep only what the uid change below needs. */
	struct drop_plan p = { .keep = h->ids_set ? (1ull << CAP_SETUID) | (1ull << CAP_SETGID) : 0, .lock = true };
	int n = all_threads(&p, why, why_len);
	if (n < 0)
		return n;
	if (h->ids_set) {
		/* 2. glibc runs these in every thread (its setxid broadcast). */
		if (setgroups(1, &h->gid) < 0 || setresgid(h->gid, h->gid, h->gid) < 0 ||
		    setresuid(h->uid, h->uid, h->uid) < 0) {
			r = -errno;
			snprintf(why, why_len, "cannot become %s (uid %u gid %u): %s", cfg->run_user, (unsigned)h->uid,
				 (unsigned)h->gid, strerror(-r));
			return r;
		}
		/* 3. and now nothing at all (NO_SETUID_FIXUP kept them). */
		p.keep = 0;
		p.lock = false;
		if ((n = all_threads(&p, why, why_len)) < 0)
			return n;
	}
	bool filter = cfg->seccomp != FG_SECCOMP_OFF;
	enum fg_seccomp_mode mode = (enum fg_seccomp_mode)cfg->seccomp;
#ifdef CP_HARDEN_DISCOVER
	/* A build for finding the list (docs/hardening.md): every daemon any
	 * test starts logs the calls outside it to the kernel log instead. */
	if (mode == FG_SECCOMP_ON)
		mode = FG_SECCOMP_LOG;
#endif
	if (filter && (r = cp_harden_seccomp(mode, extra, why, why_len)) < 0)
		return r;
	int checked = verify_threads(h, setpcap, filter, why, why_len);
	if (checked < 0)
		return checked;
	static const char *const mode_name[] = {[FG_SECCOMP_OFF] = "off", [FG_SECCOMP_ON] = "on (EPERM)",
					   [FG_SECCOMP_KILL] = "kill", [FG_SECCOMP_LOG] = "log"};
	char user[160];
	if (h->ids_set)
		snprintf(user, sizeof(user), "user %s uid %u gid %u (%d state files given)", cfg->run_user,
			 (unsigned)h->uid, (unsigned)h->gid, n_chown);
	else
		snprintf(user, sizeof(user), "uid %u", (unsigned)getuid());
	snprintf(why, why_len,
		 "capabilities kept 0 (none) in %d threads, no_new_privs, %s, seccomp %s%s%s", checked, user,
		 mode_name[mode < FG_ARRAY_LEN(mode_name) ? mode : 0], filter && spawn ? " with exec for the alert command" : "",
		 setpcap ? "" : " (no CAP_SETPCAP: securebits and bounding set left as they were)");
	cp_info("hardening: %s", why);
	return 0;
}

/* ---- seccomp ------------------------------------------------------------------ */

/* The system calls the running daemon makes (found by running every test
 * suite that starts it with seccomp = log and reading the kernel's log, see
 * docs/hardening.md), hottest first. SPAWN: only with [audit] alert_command
 * (posix_spawn's child before exec, and the command itself, which inherits
 * the filter). Names, not numbers: libseccomp resolves each for the
 * architecture the filter is built for, and a name that architecture does
 * not have (open, poll, epoll_wait, access, rename, unlink, ... on arm64,
 * which only has the *at and p* forms glibc calls there) is skipped. */
enum { DAEMON = 0, SPAWN = 1 };
struct sc {
	const char *name; /* libseccomp resolves it per architecture */
	int when;
};
#define SC(n, w) { #n, w }
static const struct sc allow_list[] = {
	/* the loop, the lcores, the lanes */
	SC(io_uring_enter, DAEMON), SC(futex, DAEMON), SC(sendto, DAEMON), SC(recvfrom, DAEMON),
	SC(sendmsg, DAEMON), SC(recvmsg, DAEMON), SC(sendmmsg, DAEMON), SC(recvmmsg, DAEMON),
	SC(read, DAEMON), SC(write, DAEMON), SC(readv, DAEMON), SC(writev, DAEMON), SC(pread64, DAEMON),
	SC(pwrite64, DAEMON), SC(clock_gettime, DAEMON), SC(clock_nanosleep, DAEMON), SC(nanosleep, DAEMON),
	SC(gettimeofday, DAEMON), SC(sched_yield, DAEMON), SC(getpid, DAEMON), SC(gettid, DAEMON),
	SC(poll, DAEMON), SC(ppoll, DAEMON), SC(epoll_wait, DAEMON), SC(epoll_pwait, DAEMON), SC(epoll_ctl, DAEMON),
	SC(epoll_create1, DAEMON), SC(epoll_create, DAEMON), /* EAL interrupt thread (net_memif control channel) */
	/* memory (malloc, OpenSSL, DPDK) */
	SC(brk, DAEMON), SC(mmap, DAEMON), SC(munmap, DAEMON), SC(mremap, DAEMON), SC(madvise, DAEMON),
	SC(mprotect, DAEMON),
	/* files: audit log rotation, config reload, /proc reads for metrics */
	SC(openat, DAEMON), SC(close, DAEMON), SC(fstat, DAEMON), SC(newfstatat, DAEMON), SC(statx, DAEMON),
	SC(lseek, DAEMON), SC(fsync, DAEMON), SC(fdatasync, DAEMON), SC(rename, DAEMON), SC(renameat, DAEMON),
	SC(renameat2, DAEMON), SC(unlink, DAEMON), SC(unlinkat, DAEMON), SC(rmdir, DAEMON), SC(getdents64, DAEMON),
	SC(fcntl, DAEMON), SC(dup, DAEMON), SC(ftruncate, DAEMON), SC(fallocate, DAEMON), SC(access, DAEMON),
	SC(faccessat, DAEMON), SC(faccessat2, DAEMON), SC(readlink, DAEMON), SC(readlinkat, DAEMON),
	SC(getcwd, DAEMON),
	/* sockets already bound; accepting and closing connections */
	SC(accept, DAEMON), SC(accept4, DAEMON), SC(shutdown, DAEMON), SC(getsockopt, DAEMON),
	SC(setsockopt, DAEMON), SC(getsockname, DAEMON), SC(getpeername, DAEMON), SC(ioctl, SPAWN),
	/* signals, threads, exit */
	SC(rt_sigaction, DAEMON), SC(rt_sigprocmask, DAEMON), SC(rt_sigreturn, DAEMON), SC(sigaltstack, DAEMON),
	/* a sleep, poll or timed futex wait interrupted without a handler
	 * running (SIGSTOP and SIGCONT, a debugger attaching, io_uring task
	 * work signalled to the thread) resumes through restart_syscall */
	SC(restart_syscall, DAEMON),
	SC(tgkill, DAEMON), SC(set_robust_list, DAEMON), SC(rseq, DAEMON),
	SC(exit, DAEMON), SC(exit_group, DAEMON), SC(sched_getaffinity, DAEMON), SC(sched_setaffinity, DAEMON),
	SC(prctl, DAEMON), SC(getrandom, DAEMON), SC(uname, DAEMON), SC(sysinfo, DAEMON), SC(getuid, DAEMON),
	SC(geteuid, DAEMON), SC(getgid, DAEMON), SC(getegid, DAEMON), SC(getrlimit, DAEMON), SC(prlimit64, DAEMON),
	SC(eventfd2, DAEMON), SC(timerfd_create, DAEMON), SC(timerfd_settime, DAEMON), SC(pipe2, DAEMON),
	/* the alert runner: posix_spawn, reaping through a pidfd, timeouts */
	SC(pidfd_open, DAEMON), SC(waitid, DAEMON), SC(wait4, DAEMON), SC(kill, DAEMON),
	SC(vfork, SPAWN), SC(execve, SPAWN), SC(setpgid, SPAWN), SC(dup2, SPAWN), SC(dup3, SPAWN),
	SC(getppid, SPAWN), SC(getpgrp, SPAWN), SC(chdir, SPAWN), SC(fchdir, SPAWN), SC(stat, SPAWN),
	SC(lstat, SPAWN), SC(open, SPAWN), SC(pipe, SPAWN), SC(arch_prctl, SPAWN), SC(set_tid_address, SPAWN),
	SC(fadvise64, SPAWN), SC(umask, SPAWN), SC(fchmod, SPAWN), SC(mkdir, SPAWN), SC(mkdirat, SPAWN),
	SC(socket, SPAWN), SC(connect, SPAWN), SC(select, SPAWN), SC(pselect6, SPAWN), SC(getpgid, SPAWN),
	SC(sendfile, SPAWN), SC(copy_file_range, SPAWN), SC(utimensat, SPAWN), SC(getresuid, SPAWN),
	SC(getresgid, SPAWN), SC(getgroups, SPAWN), SC(statfs, SPAWN), SC(fstatfs, SPAWN), SC(times, SPAWN),
	SC(getrusage, SPAWN), SC(alarm, SPAWN), SC(setitimer, SPAWN), SC(getitimer, SPAWN), SC(chmod, SPAWN),
	SC(fchmodat, SPAWN), SC(truncate, SPAWN), SC(link, SPAWN), SC(linkat, SPAWN), SC(symlink, SPAWN),
	SC(symlinkat, SPAWN), SC(flock, SPAWN),
#ifdef __SANITIZE_ADDRESS__
	/* ASan/UBSan test builds only: LeakSanitizer's exit-time check stops
	 * every thread with ptrace from a clone of the process, which lists
	 * /proc/self/task with the sanitizer runtime's own (legacy) calls. */
	SC(ptrace, DAEMON), SC(getppid, DAEMON), SC(open, DAEMON), SC(getdents, DAEMON), SC(stat, DAEMON),
	SC(lstat, DAEMON), SC(readlink, DAEMON), SC(dup2, DAEMON), SC(pipe, DAEMON), SC(unlink, DAEMON),
#endif
};
#undef SC

/* The number of name on arch (SCMP_ARCH_NATIVE: this one), or -1 when that
 * architecture has no such call (libseccomp's pseudo numbers are < 0). */
static int sc_number(uint32_t arch, const char *name)
{
	int nr = seccomp_syscall_resolve_name_arch(arch, name);
	return nr < 0 ? -1 : nr;
}

bool cp_harden_syscall_allowed(long nr, unsigned extra)
{
	bool spawn = extra & CP_HARDEN_SPAWN;
	if ((extra & CP_HARDEN_NET_OUT) && (nr == __NR_socket || nr == __NR_connect))
		return true;
	if (nr == __NR_clone) /* threads always; processes only with spawn (cp_harden_filter_new) */
		return true;
	for (size_t i = 0; i < FG_ARRAY_LEN(allow_list); i++)
		if (sc_number(SCMP_ARCH_NATIVE, allow_list[i].name) == nr && (spawn || allow_list[i].when == DAEMON))
			return true;
	return false;
}

int cp_harden_filter_new(enum fg_seccomp_mode mode, unsigned extra, uint32_t arch, scmp_filter_ctx *out,
			 unsigned *n_rules)
{
	bool spawn = extra & CP_HARDEN_SPAWN, net_out = extra & CP_HARDEN_NET_OUT;
	uint32_t deny;
	switch (mode) {
	case FG_SECCOMP_ON: deny = SCMP_ACT_TRAP; break; /* on_sigsys: EPERM + count */
	case FG_SECCOMP_KILL: deny = SCMP_ACT_KILL_PROCESS; break;
	case FG_SECCOMP_LOG: deny = SCMP_ACT_LOG; break;
	default: return -EINVAL;
	}
	scmp_filter_ctx ctx = seccomp_init(deny);
	if (!ctx)
		return -ENOMEM;
	int r = 0;
	unsigned n = 0;
	/* Another architecture's numbers mean other calls: never allowed
	 * (killed; logged only in log mode). On x86_64 libseccomp also refuses
	 * the x32 ABI's numbers, which share the architecture value. */
	if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
				  mode == FG_SECCOMP_LOG ? SCMP_ACT_LOG : SCMP_ACT_KILL_PROCESS)) < 0)
		goto fail;
	/* every thread of the process, now (no_new_privs is already set) */
	if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) < 0)
		goto fail;
	if (arch != SCMP_ARCH_NATIVE && seccomp_arch_native() != arch) {
		/* a filter for another architecture (tests: arm64 on x86_64) */
		if ((r = seccomp_arch_add(ctx, arch)) < 0 || (r = seccomp_arch_remove(ctx, SCMP_ARCH_NATIVE)) < 0)
			goto fail;
	}
	/* clone3's flags are behind a pointer the filter cannot read: ENOSYS
	 * makes glibc fall back to clone, whose flags it can. */
	int nr = sc_number(arch, "clone3");
	if (nr >= 0 && (r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0)) < 0)
		goto fail;
	/* clone: a thread (CLONE_THREAD) always; a new process (posix_spawn's
	 * CLONE_VM | CLONE_VFORK, fork) only for the alert command. clone's
	 * flags are its first argument on every architecture we build for. */
	bool processes = spawn;
#ifdef __SANITIZE_ADDRESS__
	processes = true; /* LeakSanitizer's tracer is a clone without CLONE_THREAD */
#endif
	nr = sc_number(arch, "clone");
	if (nr >= 0) {
		r = processes ? seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0)
			      : seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 1,
						 SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
		if (r < 0)
			goto fail;
		n++;
	}
	for (size_t i = 0; i < FG_ARRAY_LEN(allow_list); i++) {
		bool net = net_out && (!strcmp(allow_list[i].name, "socket") || !strcmp(allow_list[i].name, "connect"));
		if (allow_list[i].when == SPAWN && !spawn && !net)
			continue;
		if ((nr = sc_number(arch, allow_list[i].name)) < 0)
			continue; /* not on this architecture */
		/* -EEXIST: listed twice (an ASan extra also on the SPAWN list) */
		if ((r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0)) < 0 && r != -EEXIST)
			goto fail;
		n++;
	}
	*out = ctx;
	if (n_rules)
		*n_rules = n;
	return 0;
fail:
	seccomp_release(ctx);
	return r < 0 ? r : -EINVAL;
}

/* Written by the SIGSYS handler, which runs in whichever thread made the
 * refused call and has no argument to find an object by: process-wide and
 * atomic (cp_harden.h). */
_Atomic uint64_t cp_harden_sys_refused;
_Atomic long cp_harden_sys_last = -1;
/* Which numbers were refused (bit n = system call n), for the log. */
static _Atomic uint64_t refused_nr[8];

/* SECCOMP_RET_TRAP: the refused call returns -EPERM in the thread that made
 * it, and is counted. Async-signal-safe: atomics only. */
static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	ucontext_t *uc = ctx;
	atomic_fetch_add(&cp_harden_sys_refused, 1);
	atomic_store(&cp_harden_sys_last, (long)si->si_syscall);
	unsigned nr = (unsigned)si->si_syscall;
	if (nr < 64 * FG_ARRAY_LEN(refused_nr))
		atomic_fetch_or(&refused_nr[nr / 64], 1ull << (nr % 64));
#if defined(__x86_64__)
	uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
	uc->uc_mcontext.regs[0] = (uint64_t)(int64_t)-EPERM;
#else
	(void)uc;
#endif
}

int cp_harden_seccomp(enum fg_seccomp_mode mode, unsigned extra, char *why, size_t why_len)
{
	scmp_filter_ctx ctx;
	int r = cp_harden_filter_new(mode, extra, SCMP_ARCH_NATIVE, &ctx, NULL);
	if (r < 0) {
		snprintf(why, why_len, "seccomp filter: %s", r == -EOPNOTSUPP || r == -EINVAL
								 ? "none for this architecture (set [daemon] seccomp = off)"
								 : strerror(-r));
		return r;
	}
	if (mode == FG_SECCOMP_ON) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigsys;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGSYS, &sa, NULL) < 0) {
			r = -errno;
			seccomp_release(ctx);
			snprintf(why, why_len, "sigaction SIGSYS: %s", strerror(-r));
			return r;
		}
	}
	/* No SCMP_FLTATR_CTL_LOG (SECCOMP_FILTER_FLAG_LOG): the kernel would log
	 * every clone3 (ENOSYS) too; cp_harden_watch names the refused numbers.
	 * TSYNC failing (a thread with another filter) comes back as -ESRCH. */
	r = seccomp_load(ctx);
	seccomp_release(ctx);
	if (r < 0) {
		snprintf(why, why_len, "seccomp: %s%s", strerror(-r), r == -ESRCH ? " (a thread has another filter)" : "");
		return r;
	}
	return 0;
}

/* "41 49 321": the refused system call numbers seen so far. */
static void refused_numbers(char *out, size_t cap)
{
	size_t o = 0;
	out[0] = '\0';
	for (unsigned w = 0; w < FG_ARRAY_LEN(refused_nr); w++) {
		uint64_t bits = atomic_load(&refused_nr[w]);
		for (unsigned b = 0; b < 64 && o + 8 < cap; b++)
			if (bits & (1ull << b))
				o += (size_t)snprintf(out + o, cap - o, "%s%u", o ? " " : "", w * 64 + b);
	}
}

static void watch_tick(struct cp_loop *l, struct cp_timer *t)
{
	struct cp_harden *h = cp_container_of(t, struct cp_harden, watch);
	uint64_t n = atomic_load(&cp_harden_sys_refused);
	if (n != h->seen) {
		char nrs[256];
		refused_numbers(nrs, sizeof(nrs));
		cp_warn("seccomp: %llu system calls refused with EPERM (%llu in all; numbers %s): a call the daemon needs "
			"is missing from the list in control/cp_harden.c (docs/hardening.md)",
			(unsigned long long)(n - h->seen), (unsigned long long)n, nrs);
		h->seen = n;
	}
	if (cp_timer_start(l, t, 1000ull * 1000 * 1000, watch_tick) < 0)
		cp_warn("seccomp: cannot re-arm the refused-call watch");
}

void cp_harden_report(const struct cp_harden *h)
{
	uint64_t n = atomic_load(&cp_harden_sys_refused);
	if (n) {
		char nrs[256];
		refused_numbers(nrs, sizeof(nrs));
		cp_warn("seccomp: %llu system calls refused with EPERM in this run (numbers %s), %llu after the last look",
			(unsigned long long)n, nrs, (unsigned long long)(n - h->seen));
	}
}

int cp_harden_watch(struct cp_harden *h, struct cp_loop *l)
{
	h->seen = atomic_load(&cp_harden_sys_refused);
	return cp_timer_start(l, &h->watch, 1000ull * 1000 * 1000, watch_tick);
}

/* ---- io_uring restrictions ----------------------------------------------------- */

int cp_harden_ring(struct io_uring *ring, const uint8_t *ops, unsigned n, uint8_t sqe_flags)
{
	struct io_uring_restriction res[IORING_OP_LAST + 1];
	if (n > IORING_OP_LAST)
		return -EINVAL;
	memset(res, 0, sizeof(res));
	for (unsigned i = 0; i < n; i++) {
		res[i].opcode = IORING_RESTRICTION_SQE_OP;
		res[i].sqe_op = ops[i];
	}
	res[n].opcode = IORING_RESTRICTION_SQE_FLAGS_ALLOWED;
	res[n].sqe_flags = sqe_flags;
	/* No IORING_RESTRICTION_REGISTER_OP: once enabled, the ring refuses
	 * every io_uring_register opcode. */
	/* Raw io_uring_register: Debian's liburing 2.3 does not export
	 * io_uring_register_restrictions / io_uring_enable_rings. */
	if (syscall(__NR_io_uring_register, ring->ring_fd, IORING_REGISTER_RESTRICTIONS, res, n + 1) < 0)
		return -errno;
	if (syscall(__NR_io_uring_register, ring->ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0)
		return -errno;
	return 0;
}

/* ---- the operator socket: no fd passing ---------------------------------------- */

int cp_harden_recv(struct cp_loop *l, struct cp_op *op, struct cp_harden_rx *rx, int fd, void *buf, size_t len)
{
	struct io_uring_sqe *sqe = cp_loop_sqe(l, op);
	if (!sqe)
		return -EBUSY;
	memset(rx, 0, sizeof(*rx));
	rx->iov.iov_base = buf;
	rx->iov.iov_len = len;
	rx->msg.msg_iov = &rx->iov;
	rx->msg.msg_iovlen = 1;
	rx->msg.msg_control = rx->ctl.buf;
	rx->msg.msg_controllen = sizeof(rx->ctl.buf);
	/* CLOEXEC so a received fd never reaches a spawned alert command in
	 * the moment before it is closed. */
	io_uring_prep_recvmsg(sqe, fd, &rx->msg, MSG_CMSG_CLOEXEC);
	return 0;
}

int cp_harden_recv_check(struct cp_harden_rx *rx, int res, struct cp_harden_stats *st)
{
	bool refuse = (rx->msg.msg_flags & MSG_CTRUNC) != 0;
	uint64_t closed0 = st->fds_closed;
	size_t clen = rx->msg.msg_controllen;
	if (clen > sizeof(rx->ctl.buf))
		clen = sizeof(rx->ctl.buf);
	/* Walk the control data by hand: the buffer was zeroed, so a kernel
	 * that did not write msg_controllen back still ends at a zero header. */
	size_t off = 0;
	while (off + sizeof(struct cmsghdr) <= clen) {
		struct cmsghdr *cm = (struct cmsghdr *)(void *)(rx->ctl.buf + off);
		if (cm->cmsg_len < sizeof(struct cmsghdr) || off + cm->cmsg_len > clen)
			break;
		refuse = true;
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			size_t nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < nfd; i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
				if (fd >= 0 && close(fd) == 0)
					st->fds_closed++;
			}
		}
		off += CMSG_ALIGN(cm->cmsg_len);
	}
	memset(rx->ctl.buf, 0, sizeof(rx->ctl.buf));
	if (!refuse)
		return res;
	st->fd_requests_refused++;
	cp_warn("operator: request carrying control data refused (%s), %llu fds closed",
		(rx->msg.msg_flags & MSG_CTRUNC) ? "truncated" : "SCM_RIGHTS",
		(unsigned long long)(st->fds_closed - closed0));
	return -EBADMSG;
}

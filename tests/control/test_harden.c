/* test_harden.c - control/cp_harden.c without the daemon.
 *
 * - a ring restricted to {NOP} completes NOP and refuses TIMEOUT and READ
 *   with -EACCES, refuses an SQE flag outside the allowed set, and refuses
 *   io_uring_register opcodes; a ring not created disabled cannot be
 *   restricted (-EBADFD);
 * - the loop's own ring (cp_loop_init) refuses an opcode it does not use
 *   (OPENAT, READ) with -EACCES and still runs the ones it does;
 * - cp_harden_recv + cp_harden_recv_check on a socketpair through the loop:
 *   plain data passes, SCM_RIGHTS is refused (-EBADMSG) with every fd closed
 *   (a pipe end we passed reads EOF once our copy is closed);
 * - the [daemon] keys parse and refuse as documented; an unknown user or
 *   group is refused by cp_harden_prepare;
 * - the seccomp list has what the daemon needs and none of ptrace, mount,
 *   bpf, module loading, namespaces, setuid...; exec only with an alert
 *   command; a call off the list gets EPERM (on) or kills the process (kill);
 *   a shell command still runs under the filter when exec is allowed, and
 *   cannot be started when it is not;
 * - cp_harden_apply in a forked child with two more threads (one polling in
 *   user space like a lcore, one blocked in read like EAL's interrupt
 *   thread): every thread in /proc/self/task ends with CapEff = CapPrm =
 *   CapInh = CapAmb = 0, CapBnd = 0 (root), NoNewPrivs 1, Seccomp 2; a call
 *   off the list from the polling thread gets EPERM and is counted; the
 *   blocked read still completes; with user = nobody (root only) every
 *   thread has uid/gid 65534, the state directory is nobody's and a rotation
 *   (rename + create) works, and uid 0 cannot come back. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>

#include "cp_harden.h"
#include "cp_loop.h"

/* Submit one prepared SQE and return its completion's res. */
static int run_one(struct io_uring *ring)
{
	int r = io_uring_submit(ring);
	if (r < 0)
		return r;
	struct io_uring_cqe *cqe;
	r = io_uring_wait_cqe(ring, &cqe);
	if (r < 0)
		return r;
	int res = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return res;
}

static void test_ring_restricted(void **state)
{
	(void)state;
	struct io_uring ring;
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_R_DISABLED;
	assert_int_equal(io_uring_queue_init_params(8, &ring, &p), 0);
	/* disabled: nothing can be submitted yet */
	io_uring_prep_nop(io_uring_get_sqe(&ring));
	assert_int_equal(io_uring_submit(&ring), -EBADFD);
	const uint8_t ops[] = { IORING_OP_NOP };
	assert_int_equal(cp_harden_ring(&ring, ops, 1, 0), 0);
	/* the NOP queued while disabled goes out now */
	assert_int_equal(run_one(&ring), 0);

	struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 1000 };
	io_uring_prep_timeout(io_uring_get_sqe(&ring), &ts, 0, 0);
	assert_int_equal(run_one(&ring), -EACCES);

	char buf[8];
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	io_uring_prep_read(io_uring_get_sqe(&ring), fd, buf, sizeof(buf), 0);
	assert_int_equal(run_one(&ring), -EACCES);

	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	io_uring_prep_nop(sqe);
	sqe->flags |= IOSQE_IO_LINK;
	assert_int_equal(run_one(&ring), -EACCES);

	io_uring_prep_nop(io_uring_get_sqe(&ring));
	assert_int_equal(run_one(&ring), 0);

	int efd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(efd >= 0);
	assert_int_equal(io_uring_register_files(&ring, &efd, 1), -EACCES);
	close(efd);
	close(fd);
	io_uring_queue_exit(&ring);

	/* a ring that was not created disabled cannot be restricted */
	assert_int_equal(io_uring_queue_init(8, &ring, 0), 0);
	assert_int_equal(cp_harden_ring(&ring, ops, 1, 0), -EBADFD);
	io_uring_queue_exit(&ring);
}

static void test_loop_ring(void **state)
{
	(void)state;
	struct cp_loop l;
	assert_int_equal(cp_loop_init(&l, 8, cp_harden_ring), 0);
	/* the loop's opcodes are all allowed, and nothing else is */
	bool allowed[IORING_OP_LAST] = { false };
	unsigned n_ops;
	const uint8_t *ops = cp_loop_opcodes(&n_ops);
	for (unsigned i = 0; i < n_ops; i++)
		allowed[ops[i]] = true;
	assert_true(allowed[IORING_OP_RECV] && allowed[IORING_OP_RECVMSG] && allowed[IORING_OP_TIMEOUT]);
	/* READ is allowed: the lanes' wake-up eventfd (cp_engine.c) */
	assert_true(allowed[IORING_OP_READ]);
	assert_false(allowed[IORING_OP_OPENAT] || allowed[IORING_OP_WRITE] || allowed[IORING_OP_READV]);

	io_uring_prep_nop(io_uring_get_sqe(&l.ring));
	assert_int_equal(run_one(&l.ring), 0);
	io_uring_prep_openat(io_uring_get_sqe(&l.ring), AT_FDCWD, "/etc/hostname", O_RDONLY, 0);
	assert_int_equal(run_one(&l.ring), -EACCES);
	char buf[8] = {0};
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	io_uring_prep_write(io_uring_get_sqe(&l.ring), fd, buf, sizeof(buf), 0);
	assert_int_equal(run_one(&l.ring), -EACCES);
	close(fd);
	cp_loop_fini(&l);
}

struct rx_case {
	struct cp_op op;
	int res;
	char buf[64];
	struct cp_harden_stats st;
	struct cp_harden_rx rx; /* last: holds a struct cmsghdr (flexible array; clang) */
};

static void rx_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	(void)flags;
	struct rx_case *c = cp_container_of(op, struct rx_case, op);
	c->res = cp_harden_recv_check(&c->rx, res, &c->st);
	cp_loop_stop(l);
}

static int recv_through_loop(struct cp_loop *l, int fd, struct rx_case *c)
{
	memset(c, 0, sizeof(*c));
	c->op.fn = rx_done;
	c->res = 12345;
	assert_int_equal(cp_harden_recv(l, &c->op, &c->rx, fd, c->buf, sizeof(c->buf)), 0);
	l->stop = false;
	assert_int_equal(cp_loop_run(l), 0);
	return c->res;
}

static void test_recv_refuses_fds(void **state)
{
	(void)state;
	struct cp_loop l;
	assert_int_equal(cp_loop_init(&l, 8, cp_harden_ring), 0);
	int sp[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	struct rx_case c;

	assert_int_equal(write(sp[0], "hello\n", 6), 6);
	assert_int_equal(recv_through_loop(&l, sp[1], &c), 6);
	assert_memory_equal(c.buf, "hello\n", 6);

	int pfd[2];
	assert_int_equal(pipe2(pfd, O_CLOEXEC | O_NONBLOCK), 0);
	uint64_t closed0 = c.st.fds_closed, refused0 = c.st.fd_requests_refused;
	union {
		struct cmsghdr a;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	memset(&ctl, 0, sizeof(ctl));
	struct iovec iov = { .iov_base = "x\n", .iov_len = 2 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &pfd[1], sizeof(int));
	assert_int_equal(sendmsg(sp[0], &m, 0), 2);
	close(pfd[1]);
	assert_int_equal(recv_through_loop(&l, sp[1], &c), -EBADMSG);
	assert_int_equal(c.st.fds_closed - closed0, 1);
	assert_int_equal(c.st.fd_requests_refused - refused0, 1);
	char b;
	assert_int_equal(read(pfd[0], &b, 1), 0); /* every write end is closed: EOF */
	close(pfd[0]);

	/* plain data still passes afterwards */
	assert_int_equal(write(sp[0], "again\n", 6), 6);
	assert_int_equal(recv_through_loop(&l, sp[1], &c), 6);
	close(sp[0]);
	close(sp[1]);
	cp_loop_fini(&l);
}

/* The value of key in /proc/self/task/<tid>/status (hex for Cap*, decimal
 * otherwise; Uid/Gid: the first of the four), or UINT64_MAX. */
static uint64_t task_status(const char *tid, const char *key)
{
	char path[300];
	snprintf(path, sizeof(path), "/proc/self/task/%s/status", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return UINT64_MAX;
	char line[256];
	uint64_t v = UINT64_MAX;
	size_t kl = strlen(key);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':')
			v = strtoull(line + kl + 1, NULL, strncmp(key, "Cap", 3) ? 10 : 16);
	fclose(f);
	return v;
}

static uint64_t status_hex(const char *key)
{
	return task_status("self", key) == UINT64_MAX ? UINT64_MAX : task_status("self", key);
}

/* Threads like DPDK's: one polls in user space (an lcore), one sits in a
 * blocking read (EAL's interrupt thread). Each, once told, makes a call the
 * filter refuses and records what it got. */
static struct {
	atomic_int go;
	atomic_int stop;
	int pipe[2];
	long spin_res, spin_errno;
	char got;
} th;

static void *spinner(void *arg)
{
	(void)arg;
	while (!atomic_load(&th.go))
		; /* poll, no system call */
	errno = 0;
	th.spin_res = syscall(SYS_personality, 0xffffffffUL); /* a query; not on the list */
	th.spin_errno = errno;
	while (!atomic_load(&th.stop))
		;
	return NULL;
}

static void *reader(void *arg)
{
	(void)arg;
	char c = 0;
	/* interrupted by the hardening signal and restarted (SA_RESTART) */
	if (read(th.pipe[0], &c, 1) == 1)
		th.got = c;
	return NULL;
}

/* Every thread (not io_uring workers) shows the state the daemon wants:
 * returns how many threads, or -(line) of the first failed check. */
static int all_tasks_confined(bool bounding, bool seccomp, uint64_t uid)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	struct dirent *e;
	int n = 0, bad = 0;
	while (!bad && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (task_status(e->d_name, "CapEff") != 0 || task_status(e->d_name, "CapPrm") != 0 ||
		    task_status(e->d_name, "CapInh") != 0 || task_status(e->d_name, "CapAmb") != 0)
			bad = -__LINE__;
		else if (bounding && task_status(e->d_name, "CapBnd") != 0)
			bad = -__LINE__;
		else if (task_status(e->d_name, "NoNewPrivs") != 1)
			bad = -__LINE__;
		else if (seccomp && task_status(e->d_name, "Seccomp") != 2)
			bad = -__LINE__;
		else if (task_status(e->d_name, "Uid") != uid || task_status(e->d_name, "Gid") != (uid ? 65534 : 0))
			bad = -__LINE__;
		n++;
	}
	closedir(d);
	return bad ? bad : n;
}

/* In a child: three threads, apply, check every thread; the exit code says
 * which check failed. user: run as nobody with a state directory. */
static int child_apply(enum fg_seccomp_mode mode, bool user)
{
	bool root = geteuid() == 0;
	bool setpcap = (status_hex("CapEff") >> CAP_SETPCAP) & 1;
	struct fg_config *cfg = calloc(1, sizeof(*cfg));
	if (!cfg)
		return 2;
	fg_config_default(cfg);
	cfg->seccomp = (uint8_t)mode;
	char dir[] = "/tmp/l-harden-state-XXXXXX";
	if (user) {
		if (!mkdtemp(dir))
			return 3;
		snprintf(cfg->audit_path, sizeof(cfg->audit_path), "%s/audit.log", dir);
		int fd = open(cfg->audit_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0640);
		if (fd < 0)
			return 4;
		close(fd);
		snprintf(cfg->run_user, sizeof(cfg->run_user), "nobody");
		snprintf(cfg->run_group, sizeof(cfg->run_group), "nogroup");
	}
	char why[512];
	struct cp_harden hd;
	if (cp_harden_prepare(&hd, cfg, why, sizeof(why)) != 0)
		return 5;
	memset(&th, 0, sizeof(th));
	if (pipe2(th.pipe, O_CLOEXEC) < 0)
		return 6;
	pthread_t a, b;
	if (pthread_create(&a, NULL, spinner, NULL) || pthread_create(&b, NULL, reader, NULL))
		return 7;
	uint64_t refused0 = atomic_load(&cp_harden_sys_refused);
	if (cp_harden_apply(&hd, cfg, why, sizeof(why)) != 0) {
		fprintf(stderr, "cp_harden_apply: %s\n", why);
		return 10;
	}
	if (!strstr(why, "in 3 threads"))
		return 11;
	int r = all_tasks_confined(setpcap, mode != FG_SECCOMP_OFF, user ? 65534 : getuid());
	if (r < 0) {
		fprintf(stderr, "thread check failed at test_harden.c:%d\n", -r);
		return 12;
	}
	/* the blocked reader was interrupted and restarted: it still reads */
	if (write(th.pipe[1], "x", 1) != 1 || pthread_join(b, NULL) != 0 || th.got != 'x')
		return 13;
	atomic_store(&th.go, 1);
	/* nothing can be regained, in any mode */
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct cd[2];
	memset(cd, 0, sizeof(cd));
	cd[0].effective = cd[0].permitted = 1u << CAP_SYS_ADMIN;
	if (syscall(SYS_capset, &h, cd) == 0)
		return 14;
	errno = 0;
	long pers = syscall(SYS_personality, 0xffffffffUL);
	int pers_errno = errno;
	atomic_store(&th.stop, 1);
	if (pthread_join(a, NULL) != 0)
		return 15;
	uint64_t refused = atomic_load(&cp_harden_sys_refused) - refused0;
	if (mode == FG_SECCOMP_ON) {
		/* refused with EPERM in the main thread and in the polling one,
		 * counted; capset is not on the list either */
		if (pers != -1 || pers_errno != EPERM || th.spin_res != -1 || th.spin_errno != EPERM)
			return 16;
		if (refused != 3 || atomic_load(&cp_harden_sys_last) != SYS_personality)
			return 17;
		/* what the daemon uses still works */
		if (getpid() <= 0 || write(th.pipe[1], "y", 1) != 1)
			return 18;
	} else {
		if (pers < 0 || th.spin_res < 0 || refused != 0)
			return 19;
	}
	if (user) {
		struct stat st;
		if (stat(dir, &st) != 0 || st.st_uid != 65534 || stat(cfg->audit_path, &st) != 0 || st.st_uid != 65534)
			return 20;
		/* rotation: a new file in the state directory, as nobody */
		char rot[300];
		snprintf(rot, sizeof(rot), "%s.1", cfg->audit_path);
		if (rename(cfg->audit_path, rot) != 0)
			return 21;
		int fd = open(cfg->audit_path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0640);
		if (fd < 0)
			return 22;
		close(fd);
		if (setresuid(0, 0, 0) == 0)
			return 23;
	}
	(void)root;
	return 0;
}

static int run_child(enum fg_seccomp_mode mode, bool user, int *sig)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_apply(mode, user));
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	*sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_apply_every_thread(void **state)
{
	(void)state;
	int sig;
	assert_int_equal(run_child(FG_SECCOMP_OFF, false, &sig), 0);
	assert_int_equal(run_child(FG_SECCOMP_ON, false, &sig), 0);
	assert_int_equal(run_child(FG_SECCOMP_LOG, false, &sig), 0);
	if (geteuid() != 0) {
		print_message("not root: running as [daemon] user not checked; bounding set checked unchanged only\n");
		return;
	}
	assert_int_equal(run_child(FG_SECCOMP_ON, true, &sig), 0);
	/* and the tree it made is gone with the test: nobody owns it now */
	assert_int_equal(system("rm -rf /tmp/l-harden-state-*"), 0);
}

static void *noop_thread(void *arg)
{
	return arg;
}

/* In a child: only the filter, then a call off the list, a thread, and a
 * fork (refused: no alert command). */
static int child_filter(enum fg_seccomp_mode mode, bool spawn)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return 2;
	/* the log goes to a file we read back at the end */
	char logf[] = "/tmp/l-harden-log-XXXXXX";
	int lfd = mkstemp(logf);
	if (lfd < 0 || dup2(lfd, 2) < 0)
		return 8;
	unlink(logf);
	char why[256];
	if (cp_harden_seccomp(mode, spawn ? CP_HARDEN_SPAWN : 0u, why, sizeof(why)) != 0)
		return 3;
	errno = 0;
	long r = syscall(SYS_mount, "none", "/nonexistent", "tmpfs", 0, NULL);
	if (r != -1 || errno != EPERM || atomic_load(&cp_harden_sys_refused) != 1)
		return 4;
	/* threads can still be made (clone3 -> ENOSYS -> glibc uses clone) */
	pthread_t t;
	if (pthread_create(&t, NULL, noop_thread, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 5;
	/* but no process without an alert command (ASan builds allow it:
	 * LeakSanitizer's tracer) */
#ifdef __SANITIZE_ADDRESS__
	return 0;
#endif
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	if (p > 0) {
		waitpid(p, NULL, 0);
		return 6;
	}
	if (errno != EPERM || atomic_load(&cp_harden_sys_refused) != 2)
		return 7;
	/* the exit report names both numbers */
	struct cp_harden h = {.seen = 0};
	cp_harden_report(&h);
	char buf[1024], want[64];
	ssize_t n = pread(lfd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	snprintf(want, sizeof(want), "numbers %d %d)", SYS_clone < SYS_mount ? SYS_clone : SYS_mount,
		 SYS_clone < SYS_mount ? SYS_mount : SYS_clone);
	if (!strstr(buf, "seccomp: 2 system calls refused with EPERM in this run") || !strstr(buf, want))
		return 9;
	return 0;
}

static void test_filter_actions(void **state)
{
	(void)state;
	for (int m = 0; m < 2; m++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(child_filter(m ? FG_SECCOMP_KILL : FG_SECCOMP_ON, false));
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		if (m == 0) { /* on: EPERM, the process goes on */
			assert_true(WIFEXITED(st));
			assert_int_equal(WEXITSTATUS(st), 0);
		} else { /* kill: the process dies of SIGSYS at that call */
			assert_true(WIFSIGNALED(st));
			assert_int_equal(WTERMSIG(st), SIGSYS);
		}
	}
}

/* In a child with the filter: can the alert runner's posix_spawn run a
 * shell command? Returns the command's exit status, 100 + signal, or 99. */
static int child_spawn(bool spawn, const char *flag)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return 2;
	char why[256];
	if (cp_harden_seccomp(FG_SECCOMP_ON, spawn ? CP_HARDEN_SPAWN : 0u, why, sizeof(why)) != 0)
		return 3;
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "env | grep ^FG_ | sort > %s.tmp && mv %s.tmp %s; exit 7", flag, flag, flag);
	char *argv[] = { "sh", "-c", cmd, NULL };
	char *envp[] = { "FG_EVENT=divergence", "PATH=/usr/bin:/bin", NULL };
	pid_t pid;
	int rc = posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, envp);
	if (rc != 0)
		return 99;
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return 98;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

static void test_filter_spawn(void **state)
{
	(void)state;
	char flag[] = "/tmp/l-harden-spawn-XXXXXX";
	int fd = mkstemp(flag);
	assert_true(fd >= 0);
	close(fd);
	for (int spawn = 1; spawn >= 0; spawn--) {
		unlink(flag);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(child_spawn(spawn, flag));
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		struct stat sb;
		if (spawn) { /* alert_command set: the command runs, under the filter */
			assert_true(WIFEXITED(st));
			assert_int_equal(WEXITSTATUS(st), 7);
			assert_int_equal(stat(flag, &sb), 0);
		} else {
#ifdef __SANITIZE_ADDRESS__
			break; /* processes can be made in ASan builds (LeakSanitizer) */
#endif
			/* no alert command: no process can be made, so nothing runs.
			 * posix_spawn blocks every signal around its clone, so the
			 * refusal cannot be turned into EPERM there: SIGSYS ends the
			 * caller (the daemon never calls it without an alert command) */
			assert_true(WIFSIGNALED(st) ? WTERMSIG(st) == SIGSYS : WEXITSTATUS(st) != 7);
			assert_int_not_equal(stat(flag, &sb), 0);
		}
	}
	unlink(flag);
}

static void test_filter_list(void **state)
{
	(void)state;
	scmp_filter_ctx ctx;
	unsigned n = 0, ns = 0, na = 0;
	assert_int_equal(cp_harden_filter_new(FG_SECCOMP_OFF, 0u, SCMP_ARCH_NATIVE, &ctx, &n), -EINVAL);
	assert_int_equal(cp_harden_filter_new(FG_SECCOMP_ON, 0u, SCMP_ARCH_NATIVE, &ctx, &n), 0);
	seccomp_release(ctx);
	assert_int_equal(cp_harden_filter_new(FG_SECCOMP_ON, CP_HARDEN_SPAWN, SCMP_ARCH_NATIVE, &ctx, &ns), 0);
	seccomp_release(ctx);
	assert_true(n > 20 && ns > n);
	/* arm64: the same list resolves there too (libseccomp's own table);
	 * the legacy calls arm64 lacks (open, poll, epoll_wait, access,
	 * rename, unlink, ...) are left out, the *at and p* forms glibc calls
	 * there are in */
	assert_int_equal(cp_harden_filter_new(FG_SECCOMP_ON, 0u, SCMP_ARCH_AARCH64, &ctx, &na), 0);
	seccomp_release(ctx);
	assert_true(na > 20 && na < n);
	static const char *const arm64_need[] = { "openat", "ppoll", "epoll_pwait", "faccessat", "renameat",
						   "unlinkat", "io_uring_enter", "futex", "newfstatat" };
	for (size_t i = 0; i < sizeof(arm64_need) / sizeof(arm64_need[0]); i++)
		assert_true(seccomp_syscall_resolve_name_arch(SCMP_ARCH_AARCH64, arm64_need[i]) >= 0);
	assert_true(seccomp_syscall_resolve_name_arch(SCMP_ARCH_AARCH64, "open") < 0);
	/* what the running daemon needs */
	static const long need[] = { SYS_io_uring_enter, SYS_futex, SYS_sendto, SYS_recvfrom, SYS_openat, SYS_rename,
				     SYS_fdatasync, SYS_mmap, SYS_munmap, SYS_madvise, SYS_clock_gettime, SYS_exit_group,
				     SYS_rt_sigreturn };
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		assert_true(cp_harden_syscall_allowed(need[i], 0u));
	/* what nobody inside the daemon may do, alert command or not */
	static const long never[] = {
#ifndef __SANITIZE_ADDRESS__ /* LeakSanitizer needs ptrace at exit: allowed in ASan builds */
		SYS_ptrace,
#endif
		SYS_mount, SYS_umount2, SYS_pivot_root, SYS_chroot, SYS_bpf,
				      SYS_perf_event_open, SYS_kexec_load, SYS_init_module, SYS_finit_module,
				      SYS_delete_module, SYS_setns, SYS_unshare, SYS_keyctl, SYS_add_key,
				      SYS_process_vm_readv, SYS_process_vm_writev, SYS_userfaultfd, SYS_io_uring_setup,
				      SYS_io_uring_register, SYS_capset, SYS_setuid, SYS_setresuid, SYS_setgid,
				      SYS_open_by_handle_at, SYS_reboot, SYS_swapon, SYS_personality, SYS_seccomp,
				      SYS_memfd_create, SYS_execveat };
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
		assert_false(cp_harden_syscall_allowed(never[i], 0u));
		assert_false(cp_harden_syscall_allowed(never[i], CP_HARDEN_SPAWN));
	}
	/* clone3 is not (ENOSYS: glibc falls back to clone, whose flags the
	 * filter checks) */
	assert_false(cp_harden_syscall_allowed(SYS_clone3, CP_HARDEN_SPAWN));
	/* exec only for the alert command */
	assert_false(cp_harden_syscall_allowed(SYS_execve, 0u));
	assert_true(cp_harden_syscall_allowed(SYS_execve, CP_HARDEN_SPAWN));
	/* socket and connect only for the alert command or [cluster] */
	assert_false(cp_harden_syscall_allowed(SYS_connect, 0u));
	assert_true(cp_harden_syscall_allowed(SYS_connect, CP_HARDEN_NET_OUT));
	assert_true(cp_harden_syscall_allowed(SYS_socket, CP_HARDEN_NET_OUT));
	assert_false(cp_harden_syscall_allowed(SYS_execve, CP_HARDEN_NET_OUT));
}

static void test_config_keys(void **state)
{
	(void)state;
	struct fg_config c;
	struct fg_config_error err;
	assert_int_equal(fg_config_parse(&c, "", "t", &err), 0);
	assert_int_equal(c.seccomp, FG_SECCOMP_ON);
	assert_string_equal(c.run_user, "");
	assert_int_equal(fg_config_parse(&c, "[daemon]\nseccomp = kill\nuser = fanogate\ngroup = fanogate\n", "t", &err), 0);
	assert_int_equal(c.seccomp, FG_SECCOMP_KILL);
	assert_string_equal(c.run_user, "fanogate");
	assert_int_equal(fg_config_parse(&c, "[daemon]\nseccomp = off\n", "t", &err), 0);
	assert_int_equal(c.seccomp, FG_SECCOMP_OFF);
	assert_int_equal(fg_config_parse(&c, "[daemon]\nseccomp = log\n", "t", &err), 0);
	assert_int_equal(c.seccomp, FG_SECCOMP_LOG);
	assert_int_equal(fg_config_parse(&c, "[daemon]\nseccomp = maybe\n", "t", &err), -EINVAL);
	assert_int_equal(err.line, 2);
	assert_non_null(strstr(err.reason, "not a mode"));
	assert_int_equal(fg_config_parse(&c, "[daemon]\ngroup = adm\n", "t", &err), -EINVAL);
	assert_non_null(strstr(err.reason, "group needs user"));
	assert_int_equal(fg_config_parse(&c, "[daemon]\nuser = ro ot\n", "t", &err), -EINVAL);
	assert_non_null(strstr(err.reason, "not a user name"));
	assert_int_equal(fg_config_parse(&c, "[daemon]\nuser = -x\n", "t", &err), -EINVAL);
	/* names are looked up by the daemon */
	char why[256];
	struct cp_harden h;
	assert_int_equal(fg_config_parse(&c, "[daemon]\nuser = fanogate-no-such-user\n", "t", &err), 0);
	assert_int_equal(cp_harden_prepare(&h, &c, why, sizeof(why)), -ENOENT);
	assert_non_null(strstr(why, "no such user"));
	assert_int_equal(fg_config_parse(&c, "[daemon]\nuser = root\ngroup = fanogate-no-such-group\n", "t", &err), 0);
	assert_int_equal(cp_harden_prepare(&h, &c, why, sizeof(why)), -ENOENT);
	assert_int_equal(fg_config_parse(&c, "", "t", &err), 0);
	assert_int_equal(cp_harden_prepare(&h, &c, why, sizeof(why)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_restricted),
		cmocka_unit_test(test_loop_ring),
		cmocka_unit_test(test_recv_refuses_fds),
		cmocka_unit_test(test_config_keys),
		cmocka_unit_test(test_filter_list),
		cmocka_unit_test(test_filter_actions),
		cmocka_unit_test(test_filter_spawn),
		cmocka_unit_test(test_apply_every_thread),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

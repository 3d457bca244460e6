/* l_test_harden.c - control/cp_harden.c without the daemon. Owner: helper L.
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
 * - cp_harden_apply in a forked child: CapEff/CapPrm/CapBnd and NoNewPrivs
 *   in /proc/self/status match cp_harden_keep (root only for the bounding
 *   set; otherwise that part is skipped). */
#include <errno.h>
#include <fcntl.h>
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
	assert_int_equal(cp_loop_init(&l, 8), 0);
	/* the loop's opcodes are all allowed, and nothing else is */
	bool allowed[IORING_OP_LAST] = { false };
	for (unsigned i = 0; i < cp_harden_loop_ops_n; i++)
		allowed[cp_harden_loop_ops[i]] = true;
	assert_true(allowed[IORING_OP_RECV] && allowed[IORING_OP_RECVMSG] && allowed[IORING_OP_TIMEOUT]);
	assert_false(allowed[IORING_OP_OPENAT] || allowed[IORING_OP_READ] || allowed[IORING_OP_WRITE]);

	io_uring_prep_nop(io_uring_get_sqe(&l.ring));
	assert_int_equal(run_one(&l.ring), 0);
	io_uring_prep_openat(io_uring_get_sqe(&l.ring), AT_FDCWD, "/etc/hostname", O_RDONLY, 0);
	assert_int_equal(run_one(&l.ring), -EACCES);
	char buf[8];
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	io_uring_prep_read(io_uring_get_sqe(&l.ring), fd, buf, sizeof(buf), 0);
	assert_int_equal(run_one(&l.ring), -EACCES);
	close(fd);
	cp_loop_fini(&l);
}

struct rx_case {
	struct cp_op op;
	struct cp_harden_rx rx;
	int res;
	char buf[64];
};

static void rx_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	(void)flags;
	struct rx_case *c = cp_container_of(op, struct rx_case, op);
	c->res = cp_harden_recv_check(&c->rx, res);
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
	assert_int_equal(cp_loop_init(&l, 8), 0);
	int sp[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	struct rx_case c;

	assert_int_equal(write(sp[0], "hello\n", 6), 6);
	assert_int_equal(recv_through_loop(&l, sp[1], &c), 6);
	assert_memory_equal(c.buf, "hello\n", 6);

	int pfd[2];
	assert_int_equal(pipe2(pfd, O_CLOEXEC | O_NONBLOCK), 0);
	uint64_t closed0 = cp_harden_st.fds_closed, refused0 = cp_harden_st.fd_requests_refused;
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
	assert_int_equal(cp_harden_st.fds_closed - closed0, 1);
	assert_int_equal(cp_harden_st.fd_requests_refused - refused0, 1);
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

static uint64_t status_hex(const char *key)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return UINT64_MAX;
	char line[256];
	uint64_t v = UINT64_MAX;
	size_t kl = strlen(key);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':')
			v = strtoull(line + kl + 1, NULL, 16);
	fclose(f);
	return v;
}

/* In a child: apply, then check; the exit code says which check failed. */
static int child_apply(bool dataplane, bool preset)
{
	uint64_t prm0 = status_hex("CapPrm");
	bool setpcap = (status_hex("CapEff") >> CAP_SETPCAP) & 1;
	/* as systemd's SecureBits=keep-caps-locked would leave them */
	if (preset && setpcap && prctl(PR_SET_SECUREBITS, SECBIT_KEEP_CAPS | SECBIT_KEEP_CAPS_LOCKED, 0, 0, 0) < 0)
		return 9;
	uint64_t bnd0 = status_hex("CapBnd");
	char why[256];
	if (cp_harden_apply(dataplane, why, sizeof(why)) != 0)
		return 10;
	uint64_t keep = cp_harden_keep(dataplane) & prm0;
	if (status_hex("CapEff") != keep || status_hex("CapPrm") != keep || status_hex("CapInh") != 0 ||
	    status_hex("CapAmb") != 0)
		return 11;
	if (status_hex("NoNewPrivs") != 1)
		return 12;
	if (setpcap ? status_hex("CapBnd") != (cp_harden_keep(dataplane) & bnd0) : status_hex("CapBnd") != bnd0)
		return 13;
	int sb = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (setpcap && (sb < 0 || !(sb & SECBIT_NOROOT_LOCKED) || !(sb & SECBIT_NO_SETUID_FIXUP_LOCKED) ||
			(preset && !(sb & SECBIT_KEEP_CAPS))))
		return 15;
	/* nothing can be regained */
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof(d));
	d[0].effective = d[0].permitted = 1u << CAP_SYS_ADMIN;
	if (syscall(SYS_capset, &h, d) == 0)
		return 14;
	return 0;
}

static void test_apply_in_child(void **state)
{
	(void)state;
	assert_int_equal(cp_harden_keep(false), 0);
	assert_int_equal(cp_harden_keep(true),
			 (1ull << CAP_NET_ADMIN) | (1ull << CAP_NET_RAW) | (1ull << CAP_IPC_LOCK));
	for (int dp = 0; dp < 3; dp++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			_exit(child_apply(dp == 1, dp == 2));
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	if (geteuid() != 0)
		print_message("not root: the bounding set part was checked unchanged only\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_restricted),
		cmocka_unit_test(test_loop_ring),
		cmocka_unit_test(test_recv_refuses_fds),
		cmocka_unit_test(test_apply_in_child),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

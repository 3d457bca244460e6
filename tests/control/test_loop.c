/* test_loop.c - unit tests of control/cp_loop.c on a real io_uring:
 * timers (one-shot, periodic re-arm, double start), the "poll this fd and
 * call me" facility (fires on readiness, stops), recv/send on a socketpair,
 * multishot accept on a loopback listener, cancellation, and the multishot
 * receive from the shared buffer ring (data in ring buffers, buffers given
 * back and reused, more completions than buffers, cancel ends it). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "cp_harden.h"
#include "cp_loop.h"

static struct cp_loop L;
static int fired;

static int setup(void **state)
{
	(void)state;
	int r = cp_loop_init(&L, 64, cp_harden_ring);
	if (r == -ENOSYS || r == -EPERM) {
		print_message("io_uring unavailable (%d): skipping\n", r);
		return -1;
	}
	return r;
}

static int teardown(void **state)
{
	(void)state;
	cp_loop_fini(&L);
	return 0;
}

static void stop_cb(struct cp_loop *l, struct cp_timer *t)
{
	(void)t;
	fired++;
	cp_loop_stop(l);
}

static void periodic_cb(struct cp_loop *l, struct cp_timer *t)
{
	if (++fired == 3) {
		cp_loop_stop(l);
		return;
	}
	assert_int_equal(cp_timer_start(l, t, 1000000, periodic_cb), 0);
}

static void test_timers(void **state)
{
	(void)state;
	struct cp_timer t = {0};
	fired = 0;
	L.stop = false;
	assert_int_equal(cp_timer_start(&L, &t, 1000000, stop_cb), 0);
	assert_int_equal(cp_timer_start(&L, &t, 1000000, stop_cb), -EBUSY);
	uint64_t t0 = cp_now_ns();
	assert_int_equal(cp_loop_run(&L), 0);
	assert_int_equal(fired, 1);
	assert_false(t.armed);
	assert_true(cp_now_ns() - t0 >= 1000000);
	fired = 0;
	L.stop = false;
	assert_int_equal(cp_timer_start(&L, &t, 1000000, periodic_cb), 0);
	assert_int_equal(cp_loop_run(&L), 0);
	assert_int_equal(fired, 3);
}

static int pipefd[2];
static int polled;

static void poll_cb(struct cp_loop *l, struct cp_poll *p, int revents)
{
	assert_true(revents > 0 && (revents & POLLIN));
	char c;
	assert_int_equal(read(p->fd, &c, 1), 1);
	if (++polled == 2) {
		cp_poll_stop(l, p);
		cp_loop_stop(l);
	}
}

static void writer_cb(struct cp_loop *l, struct cp_timer *t)
{
	assert_int_equal(write(pipefd[1], "x", 1), 1);
	if (++fired < 2)
		assert_int_equal(cp_timer_start(l, t, 1000000, writer_cb), 0);
}

static void test_poll(void **state)
{
	(void)state;
	assert_int_equal(pipe(pipefd), 0);
	struct cp_poll p = {0};
	struct cp_timer t = {0};
	fired = polled = 0;
	L.stop = false;
	assert_int_equal(cp_poll_start(&L, &p, pipefd[0], POLLIN, poll_cb), 0);
	assert_int_equal(cp_poll_start(&L, &p, pipefd[0], POLLIN, poll_cb), -EBUSY);
	assert_int_equal(cp_poll_start(&L, &p, -1, POLLIN, poll_cb), -EINVAL);
	assert_int_equal(cp_timer_start(&L, &t, 1000000, writer_cb), 0);
	assert_int_equal(cp_loop_run(&L), 0);
	assert_int_equal(polled, 2);
	/* stopped: a further write does not call back */
	assert_int_equal(write(pipefd[1], "y", 1), 1);
	L.stop = false;
	fired = 0;
	assert_int_equal(cp_timer_start(&L, &t, 5000000, stop_cb), 0);
	assert_int_equal(cp_loop_run(&L), 0);
	assert_int_equal(polled, 2);
	close(pipefd[0]);
	close(pipefd[1]);
}

struct io {
	struct cp_op op;
	int res;
	uint32_t flags;
	int calls;
};

static void io_cb(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	struct io *io = cp_container_of(op, struct io, op);
	io->res = res;
	io->flags = flags;
	io->calls++;
	cp_loop_stop(l);
}

static void run_until(struct io *io)
{
	while (!io->calls) {
		L.stop = false;
		assert_int_equal(cp_loop_run(&L), 0);
	}
}

static void test_send_recv_cancel(void **state)
{
	(void)state;
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct io tx = {.op.fn = io_cb}, rx = {.op.fn = io_cb};
	char buf[32] = {0};
	assert_int_equal(cp_loop_recv(&L, &rx.op, sv[1], buf, sizeof(buf)), 0);
	assert_int_equal(cp_loop_send(&L, &tx.op, sv[0], "hello", 5), 0);
	run_until(&tx);
	run_until(&rx);
	assert_int_equal(tx.res, 5);
	assert_int_equal(rx.res, 5);
	assert_memory_equal(buf, "hello", 5);
	/* a recv with nothing to read, cancelled */
	struct io rx2 = {.op.fn = io_cb};
	assert_int_equal(cp_loop_recv(&L, &rx2.op, sv[1], buf, sizeof(buf)), 0);
	assert_int_equal(cp_loop_cancel(&L, &cp_op_ignore, &rx2.op), 0);
	run_until(&rx2);
	assert_int_equal(rx2.res, -ECANCELED);
	/* peer closed: recv completes with 0 */
	struct io rx3 = {.op.fn = io_cb};
	close(sv[0]);
	assert_int_equal(cp_loop_recv(&L, &rx3.op, sv[1], buf, sizeof(buf)), 0);
	run_until(&rx3);
	assert_int_equal(rx3.res, 0);
	close(sv[1]);
}

/* Multishot receive: every completion carries a ring buffer; the callback
 * copies and returns it at once, as cp_conn.c does. */
struct ms {
	struct cp_op op;
	uint8_t got[8192];
	size_t len;
	int calls, last_res, enobufs;
	bool more;
	uint16_t max_bid;
};

static void ms_cb(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	struct ms *m = cp_container_of(op, struct ms, op);
	uint16_t bid = 0;
	uint8_t *p = cp_loop_rbuf_of(l, flags, &bid);
	m->calls++;
	m->last_res = res;
	m->more = (flags & IORING_CQE_F_MORE) != 0;
	if (res == -ENOBUFS)
		m->enobufs++;
	if (res > 0) {
		assert_non_null(p);
		assert_true(m->len + (size_t)res <= sizeof(m->got));
		memcpy(m->got + m->len, p, (size_t)res);
		m->len += (size_t)res;
		if (bid > m->max_bid)
			m->max_bid = bid;
	}
	if (p)
		cp_loop_rbuf_put(l, bid);
	cp_loop_stop(l);
}

static void test_recv_multishot(void **state)
{
	(void)state;
	if (!L.rbuf_ok) {
		print_message("no buffer ring (%s): multishot receive not tested\n", L.rbuf_why);
		skip();
	}
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct ms m = {.op.fn = ms_cb};
	assert_int_equal(cp_loop_recv_multishot(&L, &m.op, sv[1]), 0);
	/* More writes than the ring has buffers, each read before the next:
	 * the buffers come back and are reused, the receive stays armed. */
	uint8_t want[sizeof(m.got)];
	size_t sent = 0;
	for (unsigned i = 0; i < CP_LOOP_RBUFS * 2 && sent + 40 <= sizeof(want); i++) {
		for (int k = 0; k < 40; k++)
			want[sent + (size_t)k] = (uint8_t)(i * 7 + (unsigned)k);
		assert_int_equal(write(sv[0], want + sent, 40), 40);
		sent += 40;
		int before = m.calls;
		while (m.calls == before) {
			L.stop = false;
			assert_int_equal(cp_loop_run(&L), 0);
		}
		assert_true(m.more);
	}
	while (m.len < sent) {
		L.stop = false;
		assert_int_equal(cp_loop_run(&L), 0);
	}
	assert_int_equal(m.len, sent);
	assert_memory_equal(m.got, want, sent);
	assert_int_equal(m.enobufs, 0);
	assert_int_equal(m.max_bid, CP_LOOP_RBUFS - 1); /* every buffer was used */
	/* cancel: a last completion without F_MORE */
	assert_int_equal(cp_loop_cancel(&L, &cp_op_ignore, &m.op), 0);
	while (m.more) {
		L.stop = false;
		assert_int_equal(cp_loop_run(&L), 0);
	}
	assert_int_equal(m.last_res, -ECANCELED);
	/* refused once disabled (the fallback), enabled again for the rest */
	cp_loop_rbuf_disable(&L, "test");
	assert_int_equal(cp_loop_recv_multishot(&L, &m.op, sv[1]), -EOPNOTSUPP);
	L.rbuf_ok = true;
	close(sv[0]);
	close(sv[1]);
}

static void test_accept(void **state)
{
	(void)state;
	int ls = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	assert_int_equal(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(ls, 8), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&a, &al), 0);
	struct io acc = {.op.fn = io_cb};
	assert_int_equal(cp_loop_accept(&L, &acc.op, ls), 0);
	for (int i = 0; i < 2; i++) {
		int c = socket(AF_INET, SOCK_STREAM, 0);
		assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
		acc.calls = 0;
		run_until(&acc);
		assert_true(acc.res >= 0);
		close(acc.res);
		close(c);
		if (!(acc.flags & IORING_CQE_F_MORE)) /* single-shot kernel: re-arm */
			assert_int_equal(cp_loop_accept(&L, &acc.op, ls), 0);
	}
	acc.calls = 0;
	assert_int_equal(cp_loop_cancel(&L, &cp_op_ignore, &acc.op), 0);
	run_until(&acc);
	assert_int_equal(acc.res, -ECANCELED);
	close(ls);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timers),
		cmocka_unit_test(test_poll),
		cmocka_unit_test(test_send_recv_cancel),
		cmocka_unit_test(test_accept),
		cmocka_unit_test(test_recv_multishot),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

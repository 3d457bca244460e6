/* cp_loop.c - the io_uring event loop of the control plane (see cp_loop.h).
 * Loop thread only. */
#include "cp_loop.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>

static void op_ignore_fn(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	(void)l; (void)op; (void)res; (void)flags;
}
struct cp_op cp_op_ignore = {.fn = op_ignore_fn};

static const uint8_t loop_opcodes[] = {
	IORING_OP_ACCEPT,       /* cp_loop_accept */
	IORING_OP_ASYNC_CANCEL, /* cp_loop_cancel */
	IORING_OP_NOP,          /* cp_conn.c */
	IORING_OP_POLL_ADD,     /* cp_loop_poll */
	IORING_OP_POLL_REMOVE,  /* cp_loop_poll */
	IORING_OP_READ,         /* cp_loop_read (the lanes' wake-up eventfd, cp_engine.c) */
	IORING_OP_RECV,         /* cp_loop_recv */
	IORING_OP_RECVMSG,      /* cp_harden_recv (operator socket) */
	IORING_OP_SEND,         /* cp_loop_send */
	IORING_OP_SENDMSG,      /* cp_conn.c */
	IORING_OP_TIMEOUT,      /* cp_timer_start */
};

const uint8_t *cp_loop_opcodes(unsigned *n)
{
	*n = (unsigned)(sizeof(loop_opcodes) / sizeof(loop_opcodes[0]));
	return loop_opcodes;
}

uint64_t cp_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the receive buffer ring -------------------------------------------- */
static size_t rbuf_ring_bytes(void) { return CP_LOOP_RBUFS * sizeof(struct io_uring_buf); }

static void rbuf_ring_free(struct cp_loop *l)
{
	if (l->rbuf_ring)
		munmap(l->rbuf_ring, rbuf_ring_bytes());
	if (l->rbufs)
		munmap(l->rbufs, (size_t)CP_LOOP_RBUFS * CP_LOOP_RBUF_LEN);
	l->rbuf_ring = NULL;
	l->rbufs = NULL;
}

/* liburing 2.3 (Debian 12) has no io_uring_setup_buf_ring: map the ring
 * (page aligned, as the kernel requires) and register it ourselves. The
 * buffers are anonymous memory too: a page is resident only once the
 * kernel wrote into it. */
static void rbuf_ring_setup(struct cp_loop *l)
{
	void *ring = mmap(NULL, rbuf_ring_bytes(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *bufs = mmap(NULL, (size_t)CP_LOOP_RBUFS * CP_LOOP_RBUF_LEN, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	l->rbuf_ring = ring == MAP_FAILED ? NULL : ring;
	l->rbufs = bufs == MAP_FAILED ? NULL : bufs;
	if (!l->rbuf_ring || !l->rbufs) {
		rbuf_ring_free(l);
		l->rbuf_why = "cannot map the buffer ring";
		return;
	}
	struct io_uring_buf_reg reg;
	memset(&reg, 0, sizeof(reg));
	reg.ring_addr = (uint64_t)(uintptr_t)l->rbuf_ring;
	reg.ring_entries = CP_LOOP_RBUFS;
	reg.bgid = CP_LOOP_RBUF_GROUP;
	int r = io_uring_register_buf_ring(&l->ring, &reg, 0);
	if (r < 0) {
		rbuf_ring_free(l);
		l->rbuf_why = r == -EINVAL ? "the kernel has no provided-buffer rings (5.19+)"
					   : "the kernel refused the buffer ring";
		return;
	}
	io_uring_buf_ring_init(l->rbuf_ring);
	int mask = io_uring_buf_ring_mask(CP_LOOP_RBUFS);
	for (unsigned i = 0; i < CP_LOOP_RBUFS; i++)
		io_uring_buf_ring_add(l->rbuf_ring, l->rbufs + (size_t)i * CP_LOOP_RBUF_LEN, CP_LOOP_RBUF_LEN,
				      (unsigned short)i, mask, (int)i);
	io_uring_buf_ring_advance(l->rbuf_ring, CP_LOOP_RBUFS);
	l->rbuf_ok = true;
	l->rbuf_why = NULL;
}

uint8_t *cp_loop_rbuf_of(const struct cp_loop *l, uint32_t flags, uint16_t *bid)
{
	if (!(flags & IORING_CQE_F_BUFFER) || !l->rbufs)
		return NULL;
	uint16_t id = (uint16_t)(flags >> IORING_CQE_BUFFER_SHIFT);
	if (id >= CP_LOOP_RBUFS)
		return NULL;
	*bid = id;
	return l->rbufs + (size_t)id * CP_LOOP_RBUF_LEN;
}

void cp_loop_rbuf_put(struct cp_loop *l, uint16_t bid)
{
	/* The ring stays mapped after cp_loop_rbuf_disable (receives in flight
	 * may still draw from it), so a buffer always goes back. */
	if (!l->rbuf_ring || bid >= CP_LOOP_RBUFS)
		return;
	io_uring_buf_ring_add(l->rbuf_ring, l->rbufs + (size_t)bid * CP_LOOP_RBUF_LEN, CP_LOOP_RBUF_LEN, bid,
			      io_uring_buf_ring_mask(CP_LOOP_RBUFS), 0);
	io_uring_buf_ring_advance(l->rbuf_ring, 1);
}

void cp_loop_rbuf_disable(struct cp_loop *l, const char *why)
{
	l->rbuf_ok = false;
	l->rbuf_why = why;
}

int cp_loop_init(struct cp_loop *l, unsigned entries, cp_loop_restrict_fn restrict_ring)
{
	memset(l, 0, sizeof(*l));
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	/* restricted to loop_opcodes, then enabled */
	unsigned disabled = restrict_ring ? IORING_SETUP_R_DISABLED : 0u;
	/* A single thread submits and reaps: let the kernel skip the IPIs
	 * (6.x kernels); fall back to plain setup on older ones. */
	p.flags = IORING_SETUP_SUBMIT_ALL | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER;
	p.flags |= disabled;
	p.cq_entries = entries * 4;
	p.flags |= IORING_SETUP_CQSIZE;
	int r = io_uring_queue_init_params(entries, &l->ring, &p);
	if (r == -EINVAL) {
		memset(&p, 0, sizeof(p));
		p.flags = disabled;
		r = io_uring_queue_init_params(entries, &l->ring, &p);
	}
	if (r < 0)
		return r;
	/* FANOGATE_RECV=single: the fallback mode on a kernel that has the
	 * ring (tests run the daemon suites in both modes; an operator can
	 * sidestep a kernel bug). */
	const char *mode = getenv("FANOGATE_RECV");
	if (mode && !strcmp(mode, "single"))
		l->rbuf_why = "FANOGATE_RECV=single";
	else
		rbuf_ring_setup(l);
	/* IOSQE_BUFFER_SELECT: the multishot receive draws from the ring. */
	unsigned n_ops;
	const uint8_t *ops = cp_loop_opcodes(&n_ops);
	r = restrict_ring ? restrict_ring(&l->ring, ops, n_ops, IOSQE_BUFFER_SELECT) : 0;
	if (r < 0) {
		rbuf_ring_free(l);
		io_uring_queue_exit(&l->ring);
		return r;
	}
	l->multishot_accept_ok = true;
	return 0;
}

void cp_loop_fini(struct cp_loop *l)
{
	/* Closing the ring drops its registration of the buffer ring. */
	io_uring_queue_exit(&l->ring);
	rbuf_ring_free(l);
}

struct io_uring_sqe *cp_loop_sqe(struct cp_loop *l, struct cp_op *op)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);
	if (!sqe) {
		/* SQ full: push the batch to the kernel and try once more. */
		l->st.sqe_full++;
		if (io_uring_submit(&l->ring) < 0)
			return NULL;
		l->pending = 0;
		sqe = io_uring_get_sqe(&l->ring);
		if (!sqe)
			return NULL;
	}
	io_uring_sqe_set_data(sqe, op);
	l->pending++;
	return sqe;
}

void cp_loop_stop(struct cp_loop *l) { l->stop = true; }

int cp_loop_submit(struct cp_loop *l)
{
	if (!l->pending)
		return 0;
	int r = io_uring_submit(&l->ring);
	if (r < 0)
		return r;
	l->pending = 0;
	l->st.submits++;
	return 0;
}

int cp_loop_run(struct cp_loop *l)
{
	while (!l->stop) {
		int r = io_uring_submit_and_wait(&l->ring, 1);
		l->pending = 0;
		l->st.submits++;
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY && r != -ETIME)
			return r;
		struct io_uring_cqe *cqe;
		unsigned head, n = 0;
		/* Batch reaping: walk every ready CQE, then advance once. The
		 * callbacks may queue SQEs; they go out with the next submit. */
		io_uring_for_each_cqe(&l->ring, head, cqe) {
			struct cp_op *op = io_uring_cqe_get_data(cqe);
			int res = cqe->res;
			uint32_t flags = cqe->flags;
			n++;
			if (op && op->fn)
				op->fn(l, op, res, flags);
		}
		io_uring_cq_advance(&l->ring, n);
		l->st.cqes += n;
		l->st.batches++;
		if (l->batch_end)
			l->batch_end(l, l->batch_arg);
	}
	return 0;
}

/* ---- timers ---------------------------------------------------------- */
static void timer_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	(void)flags;
	struct cp_timer *t = cp_container_of(op, struct cp_timer, op);
	t->armed = false;
	/* -ETIME is the normal expiry of IORING_OP_TIMEOUT. */
	if (res == -ETIME || res == 0)
		t->fn(l, t);
}

int cp_timer_start(struct cp_loop *l, struct cp_timer *t, uint64_t ns, cp_timer_fn fn)
{
	if (t->armed)
		return -EBUSY;
	t->op.fn = timer_done;
	t->fn = fn;
	t->ts.tv_sec = (long long)(ns / 1000000000ull);
	t->ts.tv_nsec = (long long)(ns % 1000000000ull);
	struct io_uring_sqe *sqe = cp_loop_sqe(l, &t->op);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_timeout(sqe, &t->ts, 0, 0);
	t->armed = true;
	return 0;
}

/* ---- poll -------------------------------------------------------------- */
static int poll_arm(struct cp_loop *l, struct cp_poll *p);

static void poll_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	(void)flags;
	struct cp_poll *p = cp_container_of(op, struct cp_poll, op);
	p->armed = false;
	if (!p->active)
		return;
	if (res == -ECANCELED)
		return;
	p->fn(l, p, res);
	if (p->active && !p->armed && poll_arm(l, p) < 0)
		p->fn(l, p, -EBUSY);
}

static int poll_arm(struct cp_loop *l, struct cp_poll *p)
{
	struct io_uring_sqe *sqe = cp_loop_sqe(l, &p->op);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_add(sqe, p->fd, p->events);
	p->armed = true;
	return 0;
}

int cp_poll_start(struct cp_loop *l, struct cp_poll *p, int fd, unsigned events, cp_poll_fn fn)
{
	if (fd < 0 || !fn)
		return -EINVAL;
	if (p->armed)
		return -EBUSY;
	p->op.fn = poll_done;
	p->fd = fd;
	p->events = events;
	p->fn = fn;
	p->active = true;
	return poll_arm(l, p);
}

void cp_poll_stop(struct cp_loop *l, struct cp_poll *p)
{
	p->active = false;
	if (p->armed) {
		struct io_uring_sqe *sqe = cp_loop_sqe(l, &cp_op_ignore);
		if (sqe)
			io_uring_prep_poll_remove(sqe, (__u64)(uintptr_t)&p->op);
	}
}

/* ---- sockets ----------------------------------------------------------- */
int cp_loop_accept(struct cp_loop *l, struct cp_op *op, int listen_fd)
{
	struct io_uring_sqe *sqe = cp_loop_sqe(l, op);
	if (!sqe)
		return -EBUSY;
	if (l->multishot_accept_ok)
		io_uring_prep_multishot_accept(sqe, listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	else
		io_uring_prep_accept(sqe, listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	return 0;
}

int cp_loop_recv(struct cp_loop *l, struct cp_op *op, int fd, void *buf, size_t len)
{
	struct io_uring_sqe *sqe = cp_loop_sqe(l, op);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_recv(sqe, fd, buf, len, 0);
	return 0;
}

int cp_loop_recv_multishot(struct cp_loop *l, struct cp_op *op, int fd)
{
	if (!l->rbuf_ok)
		return -EOPNOTSUPP;
	struct io_uring_sqe *sqe = cp_loop_sqe(l, op);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_recv_multishot(sqe, fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = CP_LOOP_RBUF_GROUP;
	return 0;
}

int cp_loop_read(struct cp_loop *l, struct cp_op *op, int fd, void *buf, size_t len)
{
	struct io_uring_sqe *sqe = cp_loop_sqe(l, op);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_read(sqe, fd, buf, (unsigned)len, 0);
	return 0;
}

int cp_loop_send(struct cp_loop *l, struct cp_op *op, int fd, const void *buf, size_t len)
{
	struct io_uring_sqe *sqe = cp_loop_sqe(l, op);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_send(sqe, fd, buf, len, MSG_NOSIGNAL);
	return 0;
}

int cp_loop_cancel(struct cp_loop *l, struct cp_op *op, struct cp_op *target)
{
	struct io_uring_sqe *sqe = cp_loop_sqe(l, op);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_cancel(sqe, target, IORING_ASYNC_CANCEL_ALL);
	return 0;
}

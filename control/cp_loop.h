/* cp_loop.h - the control plane's one io_uring event loop.
 *
 * Owns: the ring, submission and batch reaping of completions, and the small
 * facilities everything else in control/ is built on:
 *   - cp_op: a completion callback embedded in its owner; every SQE's
 *     user_data is a struct cp_op *;
 *   - cp_timer: a one-shot IORING_OP_TIMEOUT (re-arm it from its callback for
 *     a periodic tick);
 *   - cp_poll: "poll this fd and call me" (audit log, alert runner, signalfd),
 *     re-armed after each callback until stopped;
 *   - accept (multishot when the kernel takes it, else single-shot re-arm),
 *     recv and send helpers, cancellation;
 *   - the receive buffer ring: CP_LOOP_RBUFS buffers of CP_LOOP_RBUF_LEN
 *     bytes shared by every socket of the loop (an io_uring provided-buffer
 *     ring, kernel 5.19+), drawn by multishot receives (kernel 6.0+,
 *     cp_loop_recv_multishot). A connection holds a ring buffer only while
 *     its completion callback runs: the callback returns it with
 *     cp_loop_rbuf_put before it returns. When the kernel refuses the ring
 *     (or, later, the multishot receive itself), l->rbuf_ok is false and
 *     callers use cp_loop_recv with a buffer of their own.
 * There is no thread per connection: every socket of the control plane is
 * driven by this loop.
 *
 * Who may call: only the thread that runs cp_loop_run (the loop thread),
 * except cp_loop_stop, which is async-signal-safe-ish (one relaxed store) but
 * the daemon stops through signalfd anyway.
 *
 * Errors: functions return 0 or -errno. A callback receives the raw CQE
 * result (>= 0 or -errno) and flags (IORING_CQE_F_MORE for multishot). */
#ifndef CP_LOOP_H
#define CP_LOOP_H

#include <liburing.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/common.h"

struct cp_loop;
struct cp_op;

typedef void (*cp_op_fn)(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags);

/* Embedded in its owner; the owner recovers itself with container_of. */
struct cp_op {
	cp_op_fn fn;
};

#define cp_container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

struct cp_loop_stats {
	uint64_t cqes, submits, batches, sqe_full;
};

/* The shared receive buffers: 64 x 16 KiB = 1 MiB for the whole loop,
 * whatever the number of connections. 16 KiB holds a whole TLS record (up
 * to 16 KiB + 256 of ciphertext arrives in two completions at worst). 64
 * completions in one batch use every buffer; the next multishot receive
 * then ends with -ENOBUFS and is re-armed once the batch returned them. */
#define CP_LOOP_RBUFS 64u
#define CP_LOOP_RBUF_LEN 16384u
#define CP_LOOP_RBUF_GROUP 1u /* buffer group id of the ring */

struct cp_loop {
	struct io_uring ring;
	bool stop;
	bool multishot_accept_ok; /* cleared when the kernel refuses multishot accept */
	/* The provided-buffer ring (NULL when the kernel refused it); buffer i
	 * is rbufs + i * CP_LOOP_RBUF_LEN. rbuf_ok: new receives use it
	 * (multishot); when false, callers use per-connection buffers and
	 * rbuf_why says why. */
	struct io_uring_buf_ring *rbuf_ring;
	uint8_t *rbufs;
	bool rbuf_ok;
	const char *rbuf_why;
	unsigned pending;          /* SQEs prepared but not yet submitted */
	struct cp_loop_stats st;
	uint64_t rbuf_empty;       /* multishot receives ended by an empty ring (-ENOBUFS) */
	/* Called once after each batch of completions, before the next submit
	 * (the server flushes output that several callbacks queued). */
	void (*batch_end)(struct cp_loop *l, void *arg);
	void *batch_arg;
};

/* Restrict a ring created with IORING_SETUP_R_DISABLED to the opcodes
 * ops[0..n) and the SQE flags sqe_flags, then enable it. 0 or -errno. The
 * daemon passes cp_harden_ring (cp_harden.h). */
typedef int (*cp_loop_restrict_fn)(struct io_uring *ring, const uint8_t *ops, unsigned n, uint8_t sqe_flags);

/* The opcodes the loop and its users issue (cp_loop.c, cp_conn.c, the
 * operator's recvmsg, the engine's eventfd read): what cp_loop_init
 * restricts its ring to. A new opcode in the loop must be added here, or
 * it completes with -EACCES. Static storage; *n gets the count. */
const uint8_t *cp_loop_opcodes(unsigned *n);

/* Set up a ring of `entries` SQEs and, when the kernel takes it, the
 * receive buffer ring (registered before the ring is restricted: a
 * restricted ring refuses every register opcode), then, with restrict_ring,
 * restrict the ring to cp_loop_opcodes before anything is submitted (NULL:
 * an unrestricted ring). Returns 0 or -errno (a refused buffer ring is not
 * an error: see l->rbuf_ring). The environment variable
 * FANOGATE_RECV=single skips the buffer ring (per-connection receives). */
FG_MUST_CHECK int cp_loop_init(struct cp_loop *l, unsigned entries, cp_loop_restrict_fn restrict_ring);
void cp_loop_fini(struct cp_loop *l);

/* A fresh SQE with user_data = op; submits the pending batch when the SQ is
 * full and retries. NULL only when the ring is broken (then -EBUSY is the
 * caller's answer). */
struct io_uring_sqe *cp_loop_sqe(struct cp_loop *l, struct cp_op *op);

/* Run until cp_loop_stop: submit, wait for at least one CQE, reap the whole
 * batch with io_uring_for_each_cqe and call each op's callback. Returns 0 on
 * a clean stop, -errno when the ring fails. */
FG_MUST_CHECK int cp_loop_run(struct cp_loop *l);
void cp_loop_stop(struct cp_loop *l);

/* Submit the prepared SQEs now, without waiting (a caller about to poll
 * something else for a while). Returns 0 or -errno. */
FG_MUST_CHECK int cp_loop_submit(struct cp_loop *l);
/* Whether completions are ready to reap (no system call). */
static inline bool cp_loop_has_cqe(struct cp_loop *l) { return io_uring_cq_ready(&l->ring) > 0; }

/* CLOCK_MONOTONIC in nanoseconds (same clock as the core's now_ns). */
uint64_t cp_now_ns(void);

/* ---- timers ---------------------------------------------------------- */
struct cp_timer;
typedef void (*cp_timer_fn)(struct cp_loop *l, struct cp_timer *t);
struct cp_timer {
	struct cp_op op;
	struct __kernel_timespec ts;
	cp_timer_fn fn;
	bool armed;
};
/* Arm a one-shot timeout `ns` from now; fn runs on the loop thread when it
 * fires (not when it is cancelled). Returns 0 or -EBUSY (already armed). */
FG_MUST_CHECK int cp_timer_start(struct cp_loop *l, struct cp_timer *t, uint64_t ns, cp_timer_fn fn);

/* ---- poll this fd and call me ---------------------------------------- */
struct cp_poll;
typedef void (*cp_poll_fn)(struct cp_loop *l, struct cp_poll *p, int revents);
struct cp_poll {
	struct cp_op op;
	int fd;
	unsigned events; /* POLLIN / POLLOUT ... */
	cp_poll_fn fn;
	bool active;     /* re-arm after the callback */
	bool armed;      /* an SQE is in flight */
};
/* Watch fd for events; fn(revents) runs on the loop thread each time the fd
 * is ready, until cp_poll_stop. Negative revents is -errno from the ring.
 * Returns 0 or -errno. */
FG_MUST_CHECK int cp_poll_start(struct cp_loop *l, struct cp_poll *p, int fd, unsigned events, cp_poll_fn fn);
/* Stop re-arming; a poll in flight is cancelled. The struct must stay valid
 * until p->armed is false (the cancel completion clears it). */
void cp_poll_stop(struct cp_loop *l, struct cp_poll *p);

/* ---- sockets --------------------------------------------------------- */
/* Queue an accept on listen_fd. Multishot when l->multishot_accept_ok (the
 * callback sees IORING_CQE_F_MORE while it stays armed; when it does not,
 * re-queue). Returns 0 or -errno. */
FG_MUST_CHECK int cp_loop_accept(struct cp_loop *l, struct cp_op *op, int listen_fd);
FG_MUST_CHECK int cp_loop_recv(struct cp_loop *l, struct cp_op *op, int fd, void *buf, size_t len);
/* Queue a multishot receive on fd drawing from the loop's buffer ring
 * (l->rbuf_ok must be true). Each completion with data carries
 * IORING_CQE_F_BUFFER and a buffer id (cp_loop_rbuf_of); the callback must
 * cp_loop_rbuf_put it before returning. Completions go on while
 * IORING_CQE_F_MORE is set; a last one without it ends the receive
 * (-ENOBUFS: the ring was empty, re-arm; -EINVAL: the kernel has no
 * multishot receive, see cp_loop_rbuf_disable). Returns 0 or -errno. */
FG_MUST_CHECK int cp_loop_recv_multishot(struct cp_loop *l, struct cp_op *op, int fd);
/* The ring buffer a completion carries: its address (NULL when flags has
 * no IORING_CQE_F_BUFFER) and id. */
uint8_t *cp_loop_rbuf_of(const struct cp_loop *l, uint32_t flags, uint16_t *bid);
/* Give buffer bid back to the kernel (at once: no completion needed). */
void cp_loop_rbuf_put(struct cp_loop *l, uint16_t bid);
/* Stop using the buffer ring for new receives (why: a static string for
 * the log); receives already armed finish normally. */
void cp_loop_rbuf_disable(struct cp_loop *l, const char *why);
/* Queue a read of len bytes from fd (an eventfd, a pipe) into buf, which
 * must stay valid until the completion. Returns 0 or -errno. */
FG_MUST_CHECK int cp_loop_read(struct cp_loop *l, struct cp_op *op, int fd, void *buf, size_t len);
FG_MUST_CHECK int cp_loop_send(struct cp_loop *l, struct cp_op *op, int fd, const void *buf, size_t len);
/* Cancel every request whose user_data is target (its callback then sees
 * -ECANCELED); the cancel's own completion goes to op (may be a shared
 * no-op op). */
FG_MUST_CHECK int cp_loop_cancel(struct cp_loop *l, struct cp_op *op, struct cp_op *target);

/* A shared callback that ignores its completion (cancel requests). */
extern struct cp_op cp_op_ignore; /* never written: one sentinel for every loop */

#endif

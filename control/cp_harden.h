/* cp_harden.h - confining the running daemon (issue 8 item 6).
 *
 * Owns: three confinements and what they keep.
 *  1. Capabilities, once everything privileged is done (DPDK up, listeners
 *     bound): securebits locked (no root magic on exec or setuid), the
 *     bounding set reduced, ambient cleared, PR_SET_NO_NEW_PRIVS, and the
 *     permitted/effective/inheritable sets reduced to cp_harden_keep():
 *     nothing with --no-dataplane; CAP_NET_ADMIN, CAP_NET_RAW, CAP_IPC_LOCK
 *     while the dataplane runs (af_packet/af_xdp sockets and link state,
 *     locked hugepage memory). Capabilities are per thread in Linux: this
 *     confines the calling (loop) thread and every thread or child it creates
 *     afterwards; DPDK's threads, created in dp_init, keep theirs (the
 *     systemd unit's CapabilityBoundingSet is the process-wide limit).
 *  2. The io_uring rings: a ring created with IORING_SETUP_R_DISABLED is
 *     limited to a list of opcodes (and no SQE flags beyond sqe_flags, no
 *     register opcodes) and then enabled; anything else completes with
 *     -EACCES. cp_loop_init does it for the loop's ring with
 *     cp_harden_loop_ops (a new opcode in the loop must be added there).
 *  3. File descriptors passed over the operator socket (SCM_RIGHTS): the
 *     operator's recv is a recvmsg with room for control messages; every fd
 *     received is closed, the request is refused (CP_HARDEN_FD_REASON) and
 *     counted.
 *
 * Who may call: the loop thread (cp_harden_apply once, from main.c, after
 * the "ready" preconditions; the rest from the loop's setup and the
 * operator socket). Docs: docs/hardening.md. */
#ifndef CP_HARDEN_H
#define CP_HARDEN_H

#include <liburing.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "cp_loop.h"
#include "fg/common.h"

/* The stable reason an operator request carrying fds is refused with. */
#define CP_HARDEN_FD_REASON "fd_passing_refused"
/* Room for this many fds per recvmsg; more arrive with MSG_CTRUNC (the
 * kernel closes the ones that did not fit; the request is refused too). */
#define CP_HARDEN_RX_FDS 16

/* Capability mask (bit n = capability n) kept after cp_harden_apply. */
uint64_t cp_harden_keep(bool dataplane);

/* Drop everything but cp_harden_keep(dataplane) and set no_new_privs, for
 * the calling thread and what it creates later. Without CAP_SETPCAP (a
 * daemon started unprivileged) the securebits and the bounding set cannot be
 * changed: that step is skipped and said in why (returns 0); the rest always
 * works. Returns 0 or -errno with the reason in why. */
FG_MUST_CHECK int cp_harden_apply(bool dataplane, char *why, size_t why_len);

/* Restrict a ring created with IORING_SETUP_R_DISABLED to ops[0..n) and the
 * SQE flags in sqe_flags, then enable it. 0 or -errno (-EBADFD: the ring was
 * not created disabled). */
FG_MUST_CHECK int cp_harden_ring(struct io_uring *ring, const uint8_t *ops, unsigned n, uint8_t sqe_flags);

/* The opcodes the control-plane loop uses (cp_loop.c, cp_conn.c, and the
 * operator's recvmsg). */
extern const uint8_t cp_harden_loop_ops[];
extern const unsigned cp_harden_loop_ops_n;

/* Per-connection storage of the operator's recvmsg. */
struct cp_harden_rx {
	struct msghdr msg;
	struct iovec iov;
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * CP_HARDEN_RX_FDS)];
	} ctl;
};

/* Queue a recvmsg of up to len bytes into buf on fd (like cp_loop_recv),
 * with room for control messages. 0 or -EBUSY. */
FG_MUST_CHECK int cp_harden_recv(struct cp_loop *l, struct cp_op *op, struct cp_harden_rx *rx, int fd, void *buf,
				 size_t len);

/* Call first in the completion of cp_harden_recv with its res: closes every
 * fd received, counts, and returns -EBADMSG when the message carried any
 * control data (the caller refuses with CP_HARDEN_FD_REASON), res otherwise. */
int cp_harden_recv_check(struct cp_harden_rx *rx, int res);

struct cp_harden_stats {
	uint64_t fd_requests_refused; /* operator requests that carried control data */
	uint64_t fds_closed;          /* fds received and closed */
};
/* Loop thread only. */
extern struct cp_harden_stats cp_harden_st;

#endif

/* cp_harden.h - confining the running daemon.
 *
 * Owns: four confinements and what they keep.
 *  1. Privileges, once everything privileged is done (DPDK up, listeners
 *     bound): in EVERY thread of the process (the loop, DPDK's lcores, EAL's
 *     interrupt/telemetry threads; capabilities, securebits, the bounding
 *     set and no_new_privs are per thread in Linux, so each thread is made
 *     to drop its own through a real-time signal, the way glibc's setxid
 *     broadcast works): securebits locked, bounding set and ambient set
 *     emptied, PR_SET_NO_NEW_PRIVS, permitted/effective/inheritable = 0.
 *     With [daemon] user set: the state directory is given to that user and
 *     setgroups/setresgid/setresuid (glibc applies them to every thread).
 *     Every thread is then checked in /proc/self/task (fail closed).
 *  2. A seccomp allow-list (built with libseccomp from names, so each
 *     architecture gets its own numbers) of the system calls the running
 *     daemon makes, for every thread (SECCOMP_FILTER_FLAG_TSYNC), [daemon] seccomp: on =
 *     anything else fails with EPERM, counted (cp_harden_sys_refused) and
 *     logged by cp_harden_watch; kill = the process dies; log = allowed and
 *     logged by the kernel; off = no filter. Process creation and execve are
 *     on the list only when [audit] alert_command is set.
 *  3. The io_uring rings: a ring created with IORING_SETUP_R_DISABLED is
 *     limited to a list of opcodes (and no SQE flags beyond sqe_flags, no
 *     register opcodes) and then enabled; anything else completes with
 *     -EACCES. cp_loop_init does it for the loop's ring through
 *     cp_harden_ring, with the loop's own list (cp_loop_opcodes).
 *  4. File descriptors passed over the operator socket (SCM_RIGHTS): the
 *     operator's recv is a recvmsg with room for control messages; every fd
 *     received is closed, the request is refused (CP_HARDEN_FD_REASON) and
 *     counted.
 *
 * Who may call: the loop thread (cp_harden_prepare at start-up,
 * cp_harden_apply once from main.c after the "ready" preconditions, the rest
 * from the loop's setup and the operator socket); the SIGSYS handler runs in
 * whichever thread made a refused call. Docs: docs/hardening.md. */
#ifndef CP_HARDEN_H
#define CP_HARDEN_H

#include <liburing.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <seccomp.h>
#include <stdatomic.h>

#include "cp_loop.h"
#include "fg/common.h"
#include "fg/config.h"

/* The stable reason an operator request carrying fds is refused with. */
#define CP_HARDEN_FD_REASON "fd_passing_refused"
/* Room for this many fds per recvmsg; more arrive with MSG_CTRUNC (the
 * kernel closes the ones that did not fit; the request is refused too). */
#define CP_HARDEN_RX_FDS 16

/* One daemon's confinement: the run-as ids cp_harden_prepare looked up
 * and the refused-call watch. Caller-owned storage (struct daemon). */
struct cp_harden {
	bool ids_set; /* [daemon] user is set: uid/gid are its */
	uid_t uid;
	gid_t gid;
	struct cp_timer watch; /* cp_harden_watch */
	uint64_t seen;         /* cp_harden_sys_refused at the watch's last look */
};

/* What the seccomp list allows beyond the daemon's own calls (flags). */
enum {
	CP_HARDEN_SPAWN = 1u,   /* [audit] alert_command: process creation and execve */
	CP_HARDEN_NET_OUT = 2u, /* [cluster]: socket and connect (the cluster thread's etcd connections) */
};

/* Fill *h: look up [daemon] user and group (getpwnam/getgrnam). Call
 * before anything with side effects: an unknown name stops the daemon at
 * once. 0, or -ENOENT / -errno with the reason in why. */
FG_MUST_CHECK int cp_harden_prepare(struct cp_harden *h, const struct fg_config *cfg, char *why, size_t why_len);

/* Confine the whole process for good (section 1 and 2 above), from the
 * loop thread once start-up is done: uses h (cp_harden_prepare), cfg's
 * [daemon] seccomp, [audit] path (the state directory) and alert_command
 * (whether exec stays allowed), and [cluster] node (whether the cluster
 * thread may open connections).
 * Without CAP_SETPCAP (a daemon started unprivileged) the securebits and the
 * bounding set are left as they were (said in why); the rest always works.
 * Returns 0 with a summary in why, or -errno with the reason (the daemon
 * must then stop: some thread may be half confined). */
FG_MUST_CHECK int cp_harden_apply(struct cp_harden *h, const struct fg_config *cfg, char *why, size_t why_len);

/* Loop thread: a 1 s timer (h->watch) that logs a warning when system
 * calls were refused by the filter since the last look. 0 or -EBUSY. */
FG_MUST_CHECK int cp_harden_watch(struct cp_harden *h, struct cp_loop *l);

/* At exit (after the loop and the dataplane stopped): log how many system
 * calls the filter refused in this run, if any (the watch no longer runs
 * then; the dataplane's teardown is the usual source). Main thread. */
void cp_harden_report(const struct cp_harden *h);

/* The seccomp filter (libseccomp), exposed for tests: for arch (an
 * SCMP_ARCH_* value; SCMP_ARCH_NATIVE in the daemon), the allow-list's
 * names that architecture has; extra (CP_HARDEN_* flags) adds process
 * creation and execve (SPAWN) or socket and connect (NET_OUT). On success
 * *out is the caller's (seccomp_release) and *n_rules (may be NULL) the
 * number of calls allowed. 0, or -EINVAL (mode off) / -ENOMEM / another
 * -errno from libseccomp. Any thread. */
FG_MUST_CHECK int cp_harden_filter_new(enum fg_seccomp_mode mode, unsigned extra, uint32_t arch,
				       scmp_filter_ctx *out, unsigned *n_rules);
/* Whether system call nr (this architecture's number) is on the list with
 * extra (CP_HARDEN_* flags). */
bool cp_harden_syscall_allowed(long nr, unsigned extra);
/* Install the SIGSYS handler (mode on) and the filter for every thread of
 * the process (TSYNC). Needs no_new_privs or CAP_SYS_ADMIN. 0 or -errno. */
FG_MUST_CHECK int cp_harden_seccomp(enum fg_seccomp_mode mode, unsigned extra, char *why, size_t why_len);
/* Written by the SIGSYS handler (any thread): refused calls, and the last
 * refused system call number. Read with atomic_load. Process-wide: the
 * handler runs in whichever thread made the call, with no object to
 * reach. */
extern _Atomic uint64_t cp_harden_sys_refused;
extern _Atomic long cp_harden_sys_last;

/* Restrict a ring created with IORING_SETUP_R_DISABLED to ops[0..n) and the
 * SQE flags in sqe_flags, then enable it. 0 or -errno (-EBADFD: the ring was
 * not created disabled). A cp_loop_restrict_fn (cp_loop_init). */
FG_MUST_CHECK int cp_harden_ring(struct io_uring *ring, const uint8_t *ops, unsigned n, uint8_t sqe_flags);


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

/* What cp_harden_recv_check counts; the caller's (the operator socket's). */
struct cp_harden_stats {
	uint64_t fd_requests_refused; /* operator requests that carried control data */
	uint64_t fds_closed;          /* fds received and closed */
};

/* Call first in the completion of cp_harden_recv with its res: closes every
 * fd received, counts in *st, and returns -EBADMSG when the message carried
 * any control data (the caller refuses with CP_HARDEN_FD_REASON), res
 * otherwise. */
int cp_harden_recv_check(struct cp_harden_rx *rx, int res, struct cp_harden_stats *st);

#endif

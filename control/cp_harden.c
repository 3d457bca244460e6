/* cp_harden.c - confining the running daemon: capabilities, io_uring
 * restrictions, refusing fds on the operator socket (see cp_harden.h).
 * Loop thread only. libcap is not used: capget/capset are raw syscalls. */
#include "cp_harden.h"

#include <errno.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cp_log.h"

struct cp_harden_stats cp_harden_st;

/* ---- capabilities ------------------------------------------------------------ */

uint64_t cp_harden_keep(bool dataplane)
{
	if (!dataplane)
		return 0;
	/* af_packet/af_xdp sockets and their link state (rte_eth_dev_set_link_*,
	 * promiscuous mode), and locked hugepage memory. */
	return (1ull << CAP_NET_ADMIN) | (1ull << CAP_NET_RAW) | (1ull << CAP_IPC_LOCK);
}

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
 * Returns how many were dropped or -errno. */
static int bounding_reduce(uint64_t keep)
{
	int n = 0;
	for (unsigned c = 0; c < 64; c++) {
		int in = prctl(PR_CAPBSET_READ, (unsigned long)c, 0, 0, 0);
		if (in < 0)
			break; /* EINVAL: past the kernel's last capability */
		if (in == 0 || (keep & (1ull << c)))
			continue;
		if (prctl(PR_CAPBSET_DROP, (unsigned long)c, 0, 0, 0) < 0)
			return -errno;
		n++;
	}
	return n;
}

int cp_harden_apply(bool dataplane, char *why, size_t why_len)
{
	uint64_t eff, prm;
	int r = caps_get(&eff, &prm);
	if (r < 0) {
		snprintf(why, why_len, "capget: %s", strerror(-r));
		return r;
	}
	uint64_t keep = cp_harden_keep(dataplane) & prm;
	const char *note = "";
	if (eff & (1ull << CAP_SETPCAP)) {
		/* Root gets no capabilities from exec or setuid any more, and
		 * nobody can undo it. Bits already set (by systemd's SecureBits=,
		 * or a newer kernel's) are kept: a locked bit cannot change. */
		int old = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
		unsigned long bits = (old > 0 ? (unsigned long)old : 0) | SECBIT_NOROOT | SECBIT_NOROOT_LOCKED |
				     SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
				     SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
		if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0) {
			r = -errno;
			snprintf(why, why_len, "PR_SET_SECUREBITS: %s", strerror(-r));
			return r;
		}
		if ((r = bounding_reduce(keep)) < 0) {
			snprintf(why, why_len, "PR_CAPBSET_DROP: %s", strerror(-r));
			return r;
		}
	} else {
		note = " (no CAP_SETPCAP: securebits and bounding set left as they were)";
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) {
		r = -errno;
		snprintf(why, why_len, "PR_CAP_AMBIENT_CLEAR_ALL: %s", strerror(-r));
		return r;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		r = -errno;
		snprintf(why, why_len, "PR_SET_NO_NEW_PRIVS: %s", strerror(-r));
		return r;
	}
	if ((r = caps_set(keep)) < 0) {
		snprintf(why, why_len, "capset: %s", strerror(-r));
		return r;
	}
	if ((r = caps_get(&eff, &prm)) < 0 || eff != keep || prm != keep) {
		snprintf(why, why_len, "capabilities still %llx/%llx after capset, wanted %llx",
			 (unsigned long long)eff, (unsigned long long)prm, (unsigned long long)keep);
		return r < 0 ? r : -EPERM;
	}
	snprintf(why, why_len, "capabilities kept %#llx (%s), no_new_privs%s", (unsigned long long)keep,
		 keep ? "net_admin net_raw ipc_lock" : "none", note);
	cp_info("hardening: %s", why);
	return 0;
}

/* ---- io_uring restrictions ----------------------------------------------------- */

const uint8_t cp_harden_loop_ops[] = {
	IORING_OP_ACCEPT,       /* cp_loop_accept */
	IORING_OP_ASYNC_CANCEL, /* cp_loop_cancel */
	IORING_OP_NOP,          /* cp_conn.c */
	IORING_OP_POLL_ADD,     /* cp_loop_poll */
	IORING_OP_POLL_REMOVE,  /* cp_loop_poll */
	IORING_OP_RECV,         /* cp_loop_recv */
	IORING_OP_RECVMSG,      /* cp_harden_recv (operator socket) */
	IORING_OP_SEND,         /* cp_loop_send */
	IORING_OP_SENDMSG,      /* cp_conn.c */
	IORING_OP_TIMEOUT,      /* cp_timer_start */
};
const unsigned cp_harden_loop_ops_n = FG_ARRAY_LEN(cp_harden_loop_ops);

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

int cp_harden_recv_check(struct cp_harden_rx *rx, int res)
{
	bool refuse = (rx->msg.msg_flags & MSG_CTRUNC) != 0;
	uint64_t closed0 = cp_harden_st.fds_closed;
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
					cp_harden_st.fds_closed++;
			}
		}
		off += CMSG_ALIGN(cm->cmsg_len);
	}
	memset(rx->ctl.buf, 0, sizeof(rx->ctl.buf));
	if (!refuse)
		return res;
	cp_harden_st.fd_requests_refused++;
	cp_warn("operator: request carrying control data refused (%s), %llu fds closed",
		(rx->msg.msg_flags & MSG_CTRUNC) ? "truncated" : "SCM_RIGHTS",
		(unsigned long long)(cp_harden_st.fds_closed - closed0));
	return -EBADMSG;
}

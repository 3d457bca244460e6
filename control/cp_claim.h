/* cp_claim.h - one daemon per resource: what only one process may hold
 * (the operator socket, the audit log, the TLS and metrics addresses) is
 * claimed by main.c before anything with side effects (the EAL, hugepages,
 * the audit log created on first start, the self-signed pair), and a
 * resource another process holds is refused in one line that names it and
 * the holder's pid where this process can see it.
 *
 *   operator socket   flock on "<socket>.lock" (created 0600 beside the
 *                     socket, holding the pid), kept for the process's life:
 *                     the stale socket is unlinked and re-bound only under it
 *   audit log         the log's own lock (flock on "<path>.head", taken by
 *                     control/audit/cp_audit_log.c) probed: taken and let go
 *   [tls] listen,     bound and listening here, handed to cp_server_start /
 *   [metrics] listen  cp_metrics_start. SO_REUSEADDR only (a restart binds
 *                     over TIME_WAIT); never SO_REUSEPORT, so a second
 *                     listener on the address fails with EADDRINUSE
 *
 * Holders: a lock's pid comes from /proc/locks (matched by device and
 * inode), else from the pid the holder wrote into its lock file; a
 * listener's from the LISTEN socket in /proc/net/tcp{,6} and the process
 * whose /proc/<pid>/fd links to that socket (visible to root, or to the
 * same uid). Neither lookup is trusted for anything but the message.
 *
 * Who may call: main.c's thread at start-up (blocking calls). */
#ifndef CP_CLAIM_H
#define CP_CLAIM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fg/common.h"
#include "fg/config.h"

struct cp_claim {
	int op_lock_fd;         /* flock'ed "<socket>.lock", or -1 */
	int tls_fd;             /* the TLS listener, or -1 once handed over */
	uint16_t tls_port;      /* the port it bound (the kernel's pick for port 0) */
	int metrics_fd;         /* the metrics listener, -1 when off or handed over */
	uint16_t metrics_port;
};

/* Claim every resource of cfg in the order above. 0, or -errno with one line
 * in why naming the resource (and its holder when another process has it);
 * on failure nothing stays claimed. c is caller-owned. */
FG_MUST_CHECK int cp_claim_take(struct cp_claim *c, const struct fg_config *cfg, char *why, size_t why_len);
/* Create the directory of the operator socket path (0750) unless it
 * exists. 0, or -errno with why naming it. */
FG_MUST_CHECK int cp_claim_op_dir(const char *path, char *why, size_t why_len);
/* Close what was not handed over; the operator socket's lock goes only with
 * the process (call it at exit, or after a failed start). */
void cp_claim_release(struct cp_claim *c);

/* Take an exclusive flock on path without waiting. create: create the file
 * (0600) when missing, and write this process's pid into it once locked;
 * otherwise a missing file counts as free (0, *fd_out = -1). what names the
 * resource in why ("operator socket /run/fanogate/fanoctl.sock"). Returns
 * 0 with the locked fd in *fd_out, -EBUSY when another process holds it, or
 * -errno (a path that is not a regular file: -EINVAL, "is a FIFO"). */
FG_MUST_CHECK int cp_claim_lock(const char *path, const char *what, int create, int *fd_out, char *why,
				size_t why_len);

/* The pid of a process holding a flock on fd's file, other than this one;
 * 0 when none is visible. */
pid_t cp_claim_lock_holder(int fd);

/* Bind and listen on a (port 0: the kernel picks) with backlog; what names
 * the key ("[tls] listen"). Returns the non-blocking, close-on-exec fd with
 * the bound port in *port, or -errno with why naming the address (and the
 * pid holding it on EADDRINUSE). */
FG_MUST_CHECK int cp_claim_listen(const struct fg_addr *a, const char *what, int backlog, uint16_t *port,
				  char *why, size_t why_len);

/* The pid (other than this process) owning a TCP socket that listens on a
 * conflicting address (same port; same address or either side a wildcard);
 * 0 when none is visible. */
pid_t cp_claim_tcp_holder(const struct fg_addr *a);

#endif

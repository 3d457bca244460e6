/* cp_ready.h - telling whoever started the daemon that it is ready.
 *
 * Owns: the two readiness channels, so nobody has to grep a log or poll a
 * port.
 *  1. systemd's notify protocol (sd_notify, Type=notify): when
 *     NOTIFY_SOCKET names a Unix datagram socket (a path, or "@name" for the
 *     abstract namespace), "READY=1\nSTATUS=...\nMAINPID=..." is sent to it
 *     once the daemon serves, and "STOPPING=1" when it stops. Written here
 *     (a socket and one sendto): no libsystemd.
 *  2. --ready-fd N (tests, scripts): one line
 *     "READY=1 pid=PID tls=PORT metrics=PORT\n" is written to fd N, which is
 *     then closed (a reader sees the line, then EOF). The ports are the bound
 *     ones, so a listener configured on port 0 reports the port it got;
 *     metrics=0 means the metrics endpoint is off. If the daemon exits
 *     before it is ready, the fd closes with nothing written.
 *
 * The socket is opened by cp_ready_open before the seccomp filter (which
 * has no socket/connect) and only sendto is used after it.
 *
 * Who may call: the main/loop thread of control/main.c, in this order:
 * cp_ready_open at start-up, cp_ready_done once ready, cp_ready_stopping
 * when the loop ends. */
#ifndef CP_READY_H
#define CP_READY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "fg/common.h"

/* The two channels; caller-owned (struct daemon), filled by cp_ready_open. */
struct cp_ready {
	int sock; /* the notify socket's datagram socket, -1 when none */
	struct sockaddr_un addr;
	socklen_t addr_len;
	int ready_fd; /* -1 when none, or once written */
};

/* Take NOTIFY_SOCKET (and unset it, so the alert command does not inherit
 * it) and open the datagram socket for it into *rd; remember ready_fd (-1:
 * none). 0, or -errno (a bad NOTIFY_SOCKET: -EINVAL; the daemon stops). */
FG_MUST_CHECK int cp_ready_open(struct cp_ready *rd, int ready_fd);

/* Ready: READY=1 with status (one line, the same as the log's) to the
 * notify socket, and the ports to the ready fd (closed after). 0 or -errno
 * (the first failure; both are tried). */
FG_MUST_CHECK int cp_ready_done(struct cp_ready *rd, const char *status, uint16_t tls_port, uint16_t metrics_port);

/* STOPPING=1 to the notify socket, if any; closes it. Errors are ignored
 * (the daemon is stopping either way). */
void cp_ready_stopping(struct cp_ready *rd);

/* The text cp_ready_done writes to the ready fd, for tests: returns the
 * length written to out (NUL-terminated), or -ENOSPC. */
FG_MUST_CHECK int cp_ready_line(char *out, size_t cap, long pid, uint16_t tls_port, uint16_t metrics_port);

#endif

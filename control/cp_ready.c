/* cp_ready.c - the daemon's readiness: sd_notify over NOTIFY_SOCKET and
 * the --ready-fd line (see cp_ready.h). Main/loop thread only. */
#include "cp_ready.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int cp_ready_open(struct cp_ready *rd, int ready_fd)
{
	rd->sock = -1;
	rd->ready_fd = -1;
	/* the fd must be open; and an alert command must not inherit it */
	if (ready_fd >= 0 && fcntl(ready_fd, F_SETFD, FD_CLOEXEC) < 0)
		return -errno;
	rd->ready_fd = ready_fd;
	const char *ns = getenv("NOTIFY_SOCKET");
	if (!ns || !*ns)
		return 0;
	size_t n = strlen(ns);
	/* sd_notify(3): an absolute path, or '@' for the abstract namespace */
	if ((ns[0] != '/' && ns[0] != '@') || n >= sizeof(rd->addr.sun_path))
		return -EINVAL;
	memset(&rd->addr, 0, sizeof(rd->addr));
	rd->addr.sun_family = AF_UNIX;
	memcpy(rd->addr.sun_path, ns, n);
	if (ns[0] == '@')
		rd->addr.sun_path[0] = '\0';
	rd->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (ns[0] == '/' ? 1 : 0));
	rd->sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (rd->sock < 0)
		return -errno;
	unsetenv("NOTIFY_SOCKET");
	return 0;
}

static int notify(const struct cp_ready *rd, const char *msg)
{
	if (rd->sock < 0)
		return 0;
	ssize_t w = sendto(rd->sock, msg, strlen(msg), MSG_NOSIGNAL, (const struct sockaddr *)&rd->addr, rd->addr_len);
	return w < 0 ? -errno : 0;
}

int cp_ready_line(char *out, size_t cap, long pid, uint16_t tls_port, uint16_t metrics_port)
{
	int n = snprintf(out, cap, "READY=1 pid=%ld tls=%u metrics=%u\n", pid, (unsigned)tls_port,
			 (unsigned)metrics_port);
	return n < 0 || (size_t)n >= cap ? -ENOSPC : n;
}

int cp_ready_done(struct cp_ready *rd, const char *status, uint16_t tls_port, uint16_t metrics_port)
{
	int r = 0;
	char msg[512];
	/* STATUS is one line: the log's ready line has no newline */
	snprintf(msg, sizeof(msg), "READY=1\nSTATUS=%s\nMAINPID=%ld\n", status, (long)getpid());
	int e = notify(rd, msg);
	if (e < 0)
		r = e;
	if (rd->ready_fd >= 0) {
		char line[96];
		int n = cp_ready_line(line, sizeof(line), (long)getpid(), tls_port, metrics_port);
		if (n > 0) {
			ssize_t w = write(rd->ready_fd, line, (size_t)n);
			if (w != n && r == 0)
				r = w < 0 ? -errno : -EIO;
		} else if (r == 0) {
			r = n;
		}
		close(rd->ready_fd);
		rd->ready_fd = -1;
	}
	return r;
}

void cp_ready_stopping(struct cp_ready *rd)
{
	(void)notify(rd, "STOPPING=1\n");
	if (rd->sock >= 0)
		close(rd->sock);
	rd->sock = -1;
}

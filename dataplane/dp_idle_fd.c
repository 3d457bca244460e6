/* dp_idle_fd.c - the RX queue's socket for the idle wait (dp_idle_fd.h). */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "dp_idle_fd.h"

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

int dp_idle_socks(int family, int *fds, int max)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -errno;
	int n = 0, self = dirfd(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL && n < max) {
		char *end;
		long fd = strtol(e->d_name, &end, 10);
		if (end == e->d_name || *end || fd < 0 || fd == self)
			continue;
		int dom = -1;
		socklen_t len = sizeof(dom);
		/* not a socket: ENOTSOCK */
		if (getsockopt((int)fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) == 0 && dom == family)
			fds[n++] = (int)fd;
	}
	closedir(d);
	qsort(fds, (size_t)n, sizeof(*fds), cmp_int);
	return n;
}

int dp_idle_new_fd(const int *before, int n_before, const int *after, int n_after)
{
	int found = -1;
	for (int i = 0; i < n_after; i++) {
		bool old = false;
		for (int j = 0; j < n_before && !old; j++)
			old = before[j] == after[i];
		if (old)
			continue;
		if (found >= 0)
			return -1; /* two new sockets: not ours to guess */
		found = after[i];
	}
	return found;
}

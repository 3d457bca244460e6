/* cl_secret.c - reading a secret file (see cl_secret.h for the contract).
 * Any thread; start-up only. */
#include "cl_secret.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cl_secret_read(const char *path, uint8_t *buf, size_t cap, char *why, size_t why_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		int e = errno;
		snprintf(why, why_len, "%s: %s", path, strerror(e));
		return -e;
	}
	struct stat st;
	int r = 0;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(why, why_len, "%s: %s", path, strerror(-r));
	} else if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		snprintf(why, why_len, "%s: not a regular file", path);
	} else if (st.st_mode & 077) {
		r = -EACCES;
		snprintf(why, why_len, "%s: group- or world-accessible (mode %04o): chmod 600 it", path,
			 (unsigned)(st.st_mode & 07777));
	} else if ((size_t)st.st_size > cap + 2) {
		r = -EFBIG;
		snprintf(why, why_len, "%s: longer than %zu bytes", path, cap);
	}
	size_t got = 0;
	while (r == 0) {
		ssize_t n = read(fd, buf + got, cap - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			snprintf(why, why_len, "%s: %s", path, strerror(-r));
		}
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == cap) {
			char extra[3];
			ssize_t m = read(fd, extra, sizeof(extra));
			if (m > 1 || (m == 1 && extra[0] != '\n')) {
				r = -EFBIG;
				snprintf(why, why_len, "%s: longer than %zu bytes", path, cap);
			}
			break;
		}
	}
	close(fd);
	if (r < 0) {
		OPENSSL_cleanse(buf, cap);
		return r;
	}
	if (got && buf[got - 1] == '\n')
		got--;
	if (got && buf[got - 1] == '\r')
		got--;
	return (int)got;
}

/* audit_file.c - audit log files on disk, read-only (see fg/audit_file.h).
 * Any thread; blocking file reads, no logging. */
#include "fg/audit_file.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCAN_CHUNK (4u << 20)

int fg_audit_file_rotated_name(const char *path, uint32_t n, char *out, size_t cap)
{
	int k = snprintf(out, cap, "%s.%" PRIu32, path, n);
	return k < 0 || (size_t)k >= cap ? -ENAMETOOLONG : 0;
}

uint32_t fg_audit_file_highest_rotated(const char *path)
{
	/* Names are dense from 1 (only the writer creates them), so probing
	 * upward is enough; a gap ends the search. */
	uint32_t n = 0;
	char name[PATH_MAX];
	for (;;) {
		if (fg_audit_file_rotated_name(path, n + 1, name, sizeof(name)) < 0)
			break;
		struct stat sb;
		if (stat(name, &sb) != 0)
			break;
		n++;
	}
	return n;
}

int fg_audit_file_pread(int fd, uint8_t *buf, size_t n, uint64_t off)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, buf + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO; /* the file shrank under us */
		got += (size_t)r;
	}
	return 0;
}

int fg_audit_file_scan(int fd, const struct fg_audit_chain *from, struct fg_audit_scan *out, uint64_t *file_len,
		       uint64_t limit)
{
	return fg_audit_file_scan_visit(fd, from, out, file_len, limit, NULL, NULL);
}

int fg_audit_file_scan_visit(int fd, const struct fg_audit_chain *from, struct fg_audit_scan *out,
			     uint64_t *file_len, uint64_t limit, fg_audit_visit_fn visit, void *arg)
{
	struct stat sb;
	if (fstat(fd, &sb) < 0)
		return -errno;
	uint64_t size = (uint64_t)sb.st_size;
	if (size > limit)
		size = limit;
	uint8_t *buf = malloc(SCAN_CHUNK);
	if (!buf)
		return -ENOMEM;
	struct fg_audit_scan s;
	bool first = true;
	int rc = 0, io = 0;
	for (;;) {
		uint64_t pos = first ? 0 : s.good_bytes;
		size_t want = size - pos < SCAN_CHUNK ? (size_t)(size - pos) : SCAN_CHUNK;
		io = fg_audit_file_pread(fd, buf, want, pos);
		if (io < 0)
			break;
		rc = first ? fg_audit_verify_visit(buf, want, from, &s, visit, arg)
			   : fg_audit_verify_more_visit(buf, want, &s, visit, arg);
		first = false;
		uint64_t end = pos + want;
		if (end >= size)
			break;
		/* A record cut by the end of this chunk (records are at most
		 * FG_AUDIT_REC_MAX bytes): read on from the last good record. */
		if (rc < 0 && end - s.bad_offset >= FG_AUDIT_REC_MAX)
			break;
	}
	free(buf);
	if (io < 0)
		return io;
	*out = s;
	*file_len = size;
	return rc < 0 ? 1 : 0;
}

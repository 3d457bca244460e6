/* cl_secret.h - reading a secret file: the fleet key ([cluster] key_file,
 * read by cp_cluster_etcd.c) and the etcd password ([cluster]
 * password_file, read by the transport, cl_http.c).
 *
 * Owns: the checks a secret file must pass (a regular file, no group or
 * other permission bits, not longer than the caller's buffer) and the
 * read. Any thread; start-up only. */
#ifndef CL_SECRET_H
#define CL_SECRET_H

#include <stddef.h>
#include <stdint.h>

#include "fg/common.h"

/* Read a secret file: a regular file with no group or other permission
 * bits, at most cap bytes, one trailing newline dropped. Returns its
 * length, or -errno with why (the path and what is wrong: "group- or
 * world-accessible (mode 0644): chmod 600 it"); buf is wiped on failure. */
FG_MUST_CHECK int cl_secret_read(const char *path, uint8_t *buf, size_t cap, char *why, size_t why_len);

#endif

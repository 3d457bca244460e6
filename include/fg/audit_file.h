/* audit_file.h - audit log files on disk, read-only (core).
 *
 * Owns: naming the rotated files of a log ("<path>.<n>", dense from 1) and
 * scanning one file in bounded memory with the record format of
 * fg/audit.h. No writing, no locking, no logging: the daemon's writer
 * (control/audit/cp_audit_log.c: start-up recovery, rotation) and the
 * offline reader (`fanoctl audit verify|tail`, tools/fanoctl_audit.c) both
 * build on it.
 *
 * Who may call: any thread; calls block on the file system. */
#ifndef FG_AUDIT_FILE_H
#define FG_AUDIT_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "fg/audit.h"
#include "fg/common.h"

/* Verify the first min(file size, limit) bytes of the open file fd in
 * bounded memory (4 MiB at a time), from as in fg_audit_verify (UINT64_MAX:
 * the whole file). Returns 0 when every record is good, 1 when the scan
 * stopped at a bad record (out->reason, bad_offset, bad_seq), or -errno on
 * an I/O error (-ENOMEM without a buffer). *out and *file_len (the bytes
 * considered) are written unless an error is returned. fd stays open. */
FG_MUST_CHECK int fg_audit_file_scan(int fd, const struct fg_audit_chain *from, struct fg_audit_scan *out,
				     uint64_t *file_len, uint64_t limit);
/* The same, handing every intact record to visit once, in order (the
 * start-up scan folds the line states from it: fg/audit_lines.h). */
FG_MUST_CHECK int fg_audit_file_scan_visit(int fd, const struct fg_audit_chain *from, struct fg_audit_scan *out,
					   uint64_t *file_len, uint64_t limit, fg_audit_visit_fn visit, void *arg);

/* Read exactly n bytes of fd at off into buf (pread, again after EINTR
 * and after a short read). Returns 0, -errno, or -EIO when the file ends
 * first (it shrank under the reader). */
FG_MUST_CHECK int fg_audit_file_pread(int fd, uint8_t *buf, size_t n, uint64_t off);

/* Path of rotated file n: "<path>.<n>" into out. Returns 0 or -ENAMETOOLONG. */
FG_MUST_CHECK int fg_audit_file_rotated_name(const char *path, uint32_t n, char *out, size_t cap);
/* Highest N such that path.N exists (0 when none). */
uint32_t fg_audit_file_highest_rotated(const char *path);

#endif

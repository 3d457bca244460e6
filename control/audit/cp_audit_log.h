/* cp_audit_log.h - the append-only, hash-chained, crash-safe audit log file.
 *
 * Owns: the log files (the current one and its rotated predecessors), a
 * private io_uring for the writes, group commit, durability tracking,
 * start-up recovery and rotation. Record format: include/fg/audit.h.
 *
 * Who may call: ONE control-plane thread (the daemon's event loop); nothing
 * here is thread-safe. Every call is non-blocking except cp_audit_log_open
 * (start-up recovery reads the current file and fsyncs), the rare rotation
 * inside cp_audit_log_process (rename + create + fsync of the directory:
 * a few ms every rotate_bytes), and cp_audit_log_drain.
 *
 * Durability contract: a record counts as recorded only once the
 * IORING_OP_FSYNC (IORING_FSYNC_DATASYNC) linked after the write that holds
 * it has completed successfully; then on_durable(seq) reports the highest
 * durable sequence number (every record <= seq is durable). A write or
 * fdatasync error makes the log FAIL CLOSED: on_failed is called once,
 * nothing after the last durable record is ever reported durable, every
 * later append returns -EIO, and nothing is retried (after a failed
 * fdatasync the page cache may already have dropped the dirty pages, so a
 * retry that "succeeds" would prove nothing). The daemon must stop
 * acknowledging; a restart runs recovery.
 *
 * Group commit: appended records gather in memory. When no batch is in
 * flight, a batch is submitted group_commit_us after its first record (0 =
 * at once) or as soon as batch_max bytes are waiting; while a batch's
 * write+fdatasync is in flight, new records gather and go out together the
 * moment it completes. One batch is in flight at a time, so at most one
 * batch (<= FG_AUDIT_TAIL_MAX bytes) is ever on disk without being durable:
 * that is the bound recovery relies on.
 *
 * File naming: the current file is cfg.path (e.g. fanogate.audit). When it
 * reaches rotate_bytes it is renamed cfg.path + ".N" with N one above the
 * highest existing N (N starts at 1, so .1 is the OLDEST file and names
 * never change once given), and a new cfg.path starts with a ROTATION record
 * chained to the old file's last record. Verify a whole log oldest first:
 * fanogate.audit.1 fanogate.audit.2 ... fanogate.audit.
 *
 * Start-up recovery (cp_audit_log_open), idempotent:
 *  1. cfg.path missing or empty: if a rotated file exists, verify the highest
 *     one and start cfg.path with a ROTATION record continuing its chain
 *     (a crash between rename and the first write lands here); otherwise
 *     start a new log with GENESIS.
 *  2. cfg.path present: verify it against the chain head pinned in
 *     cfg.path + ".head" (cp_audit_head.h; every batch rewrites it after
 *     its fdatasync, and a record is reported durable only once its head
 *     is). Intact and reaching the head: reopen for append. A TORN TAIL is
 *     cut: the first bad record has a torn reason (truncated, zeroed, bad
 *     length or checksum), lies after the durable head, within
 *     FG_AUDIT_TAIL_MAX of the end, and no record that decodes follows it
 *     anywhere; it is truncated there and a RECOVERY record says what was
 *     cut. (With a head pinned, a valid record after the hole is still a
 *     torn tail: the bytes after the head are the batch in flight at the
 *     crash, never acknowledged, whose sectors a power loss may persist in
 *     any order; they are then copied aside first, rep->aside.) ANYTHING ELSE is damage recovery cannot prove torn (a bad
 *     record with a valid one after it, a broken chain, damage before the
 *     head, a file that ends before the head or disagrees with its hash, a
 *     missing rotated file, an unreadable head file): the open SUCCEEDS
 *     FAILED CLOSED (rep->damaged, rep->damage names file, offset, seq and
 *     reason; every append returns -EIO; on_failed is not called: the
 *     caller reads the report) and the file is left exactly as it was.
 *     cp_audit_log_repair (`fanoctl audit repair`) then moves the damaged
 *     part aside and cuts it like a torn tail.
 *  Reopening an intact log appends nothing, so a second open after a
 *  recovery changes nothing. A log without a head file (written before
 *  head files existed) gets one; only the torn-tail rule applies to it.
 *  The head file is flock'ed while the log is open: a second writer gets
 *  -EBUSY.
 */
#ifndef CP_AUDIT_LOG_H
#define CP_AUDIT_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/audit.h"
#include "fg/audit_file.h"
#include "fg/audit_lines.h"
#include "fg/common.h"

struct cp_audit_log;

struct cp_audit_log_cfg {
	const char *path;          /* current file; rotated files are path.N */
	uint64_t rotate_bytes;     /* rotate when the current file reaches this; 0 = never */
	uint32_t group_commit_us;  /* how long a lone record waits for company; 0 = none */
	uint32_t batch_max;        /* bytes per write+fdatasync; 0 = FG_AUDIT_TAIL_MAX */
	uint32_t batch_max_records;/* records per batch; 0 = no limit, 1 = fdatasync per record */
	uint32_t backlog_max;      /* bytes waiting for a batch before append says -ENOBUFS; 0 = 8 MiB */
	const char *who;           /* written in a GENESIS record, e.g. "fanogate 0.1.0" */
	/* Optional (NULL: none). At open, every intact record of the current
	 * file is folded into *fold (fg/audit_lines.h); when that file holds no
	 * GENESIS, START or LINES record, the rotated files before it are
	 * folded too, newest first, until one does. A rotated file that cannot
	 * be read or does not verify stops that walk: rep->lines_unreadable. */
	struct fg_audit_fold *fold;
	/* Optional. At a rotation, called inside cp_audit_log_append: fills a
	 * record that is written right after the new file's ROTATION record
	 * (the shadow glue's LINES summary, so each file alone carries the line
	 * table) and returns true; false: nothing. */
	bool (*rotation_summary)(void *arg, unsigned *type, union fg_audit_payload *p);
	/* Callbacks run inside cp_audit_log_process (or _drain), on the caller's thread. */
	void (*on_durable)(void *arg, uint64_t seq);
	void (*on_failed)(void *arg, int err, const char *what);
	void *arg;
};

/* What start-up recovery found and did. */
struct cp_audit_open_report {
	bool created;          /* a new file was started (GENESIS or ROTATION) */
	bool cut;              /* a torn tail was truncated; recovery says what */
	struct fg_audit_recovery recovery;
	uint64_t records;      /* intact records found in the current file */
	uint64_t next_seq;     /* sequence number the next append gets */
	bool damaged;          /* opened failed closed: damage recovery would not cut */
	bool repaired;         /* cp_audit_log_repair moved damage aside (aside) */
	int damage_reason;     /* enum fg_audit_reason (FG_AR_HEAD: head mismatch) */
	uint64_t damage_offset, damage_seq;
	char damage[512];      /* "<file>: damage at offset O, record seq S: reason; why" */
	char aside[4096];      /* where repair moved the damaged bytes ("" when nothing moved) */
	bool lines_unreadable; /* cfg.fold: an older file needed for the line states could not be read */
	char lines_why[300];   /* which and why */
};

/* Open (create, recover) the log and its io_uring. Returns 0 (check
 * rep->damaged: then the log is failed closed from the start, err holds the
 * one-line explanation and the file is untouched), or -errno (-EBUSY:
 * another process has the log open) with a one-line explanation in
 * err[0..errlen). *out is heap-owned by the caller (cp_audit_log_free).
 * rep may be NULL. Blocking; call before the loop. */
FG_MUST_CHECK int cp_audit_log_open(struct cp_audit_log **out, const struct cp_audit_log_cfg *cfg,
				    struct cp_audit_open_report *rep, char *err, size_t errlen);

/* Repair the log at path offline (`fanoctl audit repair`): the same
 * recovery as open, except that damage is not refused but moved aside:
 * the bytes from the first damaged record to the end are copied to
 * "<path>.damaged-<unix time>-<offset>" (fsync'ed) and only then cut, and
 * a RECOVERY record (reason = the damage's) is appended; a head mismatch
 * with nothing damaged in the file appends a RECOVERY record with reason
 * head_mismatch and re-pins the head. Nothing is ever deleted. Returns 1
 * when it repaired (rep->damage says what, rep->aside where it went), 0
 * when there was nothing to repair (a torn tail is cut as open would), or
 * -errno (-EBUSY: the daemon has the log open). Blocking. */
FG_MUST_CHECK int cp_audit_log_repair(const char *path, struct cp_audit_open_report *rep, char *err, size_t errlen);

/* Finish: submits what waits and waits for it (bounded), then closes the
 * ring and the file. NULL is fine. */
void cp_audit_log_free(struct cp_audit_log *l);

/* Append one record (encoded now, chained, in memory). Writes its sequence
 * number to *seq. Returns 0, -EIO when the log has failed closed, -ENOBUFS
 * when the backlog is full (the disk cannot keep up: the caller should stop
 * taking work), or -EINVAL on a payload the codec refuses. Non-blocking. */
FG_MUST_CHECK int cp_audit_log_append(struct cp_audit_log *l, unsigned type, const union fg_audit_payload *p,
				      uint64_t *seq);

/* The fd the caller polls for readability (an eventfd registered with the
 * log's io_uring); call cp_audit_log_process when it is readable. */
int cp_audit_log_fd(const struct cp_audit_log *l);

/* Reap completions, report durability, rotate, submit the next batch.
 * Non-blocking apart from a rotation. Returns 0, or -EIO once failed. */
int cp_audit_log_process(struct cp_audit_log *l);

/* Submit what waits now, ignoring group_commit_us. Returns 0 or -errno. */
FG_MUST_CHECK int cp_audit_log_flush(struct cp_audit_log *l);

/* Block until every appended record is durable or the log failed, at most
 * timeout_ms. Returns 0, -EIO (failed) or -ETIMEDOUT. For shutdown, tests
 * and tools; the daemon's loop never calls it. */
FG_MUST_CHECK int cp_audit_log_drain(struct cp_audit_log *l, int timeout_ms);

/* True when record seq is durable. */
bool cp_audit_log_is_durable(const struct cp_audit_log *l, uint64_t seq);
/* Records [0, n) are durable: returns n (0 before the first). */
uint64_t cp_audit_log_durable_next(const struct cp_audit_log *l);
/* True once the log has failed closed; *err gets the errno (may be NULL). */
bool cp_audit_log_failed(const struct cp_audit_log *l, int *err);

/* The chain head: hash of the last APPENDED record and the next seq. */
void cp_audit_log_head(const struct cp_audit_log *l, uint8_t hash[FG_AUDIT_HASH_LEN], uint64_t *next_seq);
/* The hash of the last DURABLE record (what metrics and the CLI publish). */
void cp_audit_log_durable_head(const struct cp_audit_log *l, uint8_t hash[FG_AUDIT_HASH_LEN],
			       uint64_t *durable_next);

struct cp_audit_log_stats {
	uint64_t appended, durable_records, batches, bytes_written, fsyncs;
	uint64_t short_writes, rotations, enobufs;
	uint32_t backlog_bytes, inflight_bytes;
	uint64_t file_bytes;   /* durable bytes in the current file */
	uint32_t file_index;   /* highest rotated N so far (0 = none) */
};
void cp_audit_log_stats(const struct cp_audit_log *l, struct cp_audit_log_stats *out);

/* TEST HOOK: the next fdatasync completion is treated as failing with -err
 * (the real fdatasync still ran). io_uring's fsync does not go through the
 * fdatasync syscall, so strace/seccomp injection cannot reach it. */
void cp_audit_log_inject_fsync_error(struct cp_audit_log *l, int err);

/* TEST HOOK: the next write is submitted for at most short_bytes (> 0) so
 * its completion is short and the rest must be resubmitted; or, with err
 * > 0, the next write completion is treated as failing with -err. */
void cp_audit_log_inject_write(struct cp_audit_log *l, int err, uint32_t short_bytes);

/* Reading the files (scan, rotated names): fg/audit_file.h. */

#endif

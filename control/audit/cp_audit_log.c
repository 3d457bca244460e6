/* cp_audit_log.c - the audit log file: group commit over a private io_uring,
 * durability tracking, fail-closed on I/O errors, start-up recovery and
 * rotation. Contract: cp_audit_log.h. One thread (the daemon's loop).
 *
 * Batch state machine (one batch in flight at most):
 *
 *   IDLE --append, group_commit_us == 0 or batch_max waiting--> IN_FLIGHT
 *   IDLE --append, otherwise: arm timer--> IDLE(timer) --timer--> IN_FLIGHT
 *   IN_FLIGHT --write short, fsync cancelled--> IN_FLIGHT (rest resubmitted)
 *   IN_FLIGHT --write+fdatasync ok: on_durable(last seq)--> IDLE, or
 *             IN_FLIGHT again at once when records gathered meanwhile
 *   IN_FLIGHT --write error / fdatasync error--> FAILED (terminal)
 *
 * Invariants:
 *  1. Records [0, durable_next) are on disk and fdatasync'ed; the current
 *     file's first file_off bytes hold the durable records of this file.
 *  2. The in-flight buffer holds whole records [durable_next, ilast_seq]
 *     destined for file offset file_off; fill holds the whole records after
 *     them, in sequence order, chained (their prev fields are final).
 *  3. fill[0, boundary[0]) belongs to the current file; each
 *     fill[boundary[i], ...) starts with the ROTATION record of a later
 *     file; no batch crosses a boundary, and a file switch happens only
 *     with nothing in flight.
 *  4. Once failed, nothing is submitted and durable_next never moves. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>

#include "cp_audit_head.h"
#include "cp_audit_log.h"
#include "fg/wire.h"

#define TAG_WRITE 1u
#define TAG_FSYNC 2u
#define TAG_TIMER 3u
#define TAG_HWRITE 4u
#define TAG_HFSYNC 5u
#define BACKLOG_DEFAULT (8u << 20)
/* Rotations that may wait in the backlog at once; beyond that a file grows
 * past rotate_bytes until the earlier switches are done. */
#define MAX_BOUNDARIES 16u

struct cp_audit_log {
	struct cp_audit_log_cfg cfg;
	char path[PATH_MAX];
	int fd, dirfd, efd;
	int hfd;                  /* <path>.head, flock'ed while open */
	char hname[PATH_MAX];
	unsigned hslot;           /* head slot the next batch writes */
	uint32_t hgen;            /* generation the next head write gets */
	uint8_t hbuf[CP_AUDIT_HEAD_LEN]; /* head of the in-flight batch (the kernel reads it) */
	uint8_t ihash[FG_AUDIT_HASH_LEN];/* hash of the in-flight batch's last record */
	struct io_uring ring;
	bool ring_up;

	struct fg_audit_chain chain; /* after the last appended record */
	uint8_t durable_head[FG_AUDIT_HASH_LEN];
	uint64_t durable_next;

	uint8_t *fill;
	uint32_t fill_len, buf_cap;
	uint32_t boundary[MAX_BOUNDARIES]; /* fill offsets where a new file starts, ascending */
	uint32_t nb;

	uint8_t *ibuf;
	bool inflight;
	uint32_t ilen, idone, ilast_off, irecords;
	uint64_t ilast_seq;
	int pending_cqes, wres, fres, hwres, hfres;

	uint64_t file_off;        /* durable bytes of the current file */
	uint64_t assigned_bytes;  /* bytes given to the newest file (durable, in flight, waiting) */
	uint64_t assigned_records;
	uint32_t file_index;      /* highest rotated N */

	bool timer_armed;
	struct __kernel_timespec ts;

	bool failed;
	int err;
	int inject_err;
	int inject_werr;
	uint32_t inject_short;
	struct cp_audit_log_stats st;
};

static uint64_t now_realtime_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* ---- blocking helpers used at start-up and rotation only ----------------- */

#define SCAN_CHUNK (4u << 20)

static int write_sync(int fd, const uint8_t *buf, size_t n, uint64_t off)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = pwrite(fd, buf + done, n - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		done += (size_t)r;
	}
	return fdatasync(fd) < 0 ? -errno : 0;
}

static void set_err(char *err, size_t errlen, const char *fmt, const char *a, int e)
{
	if (err && errlen)
		snprintf(err, errlen, fmt, a, strerror(e));
}

/* ---- failure ---------------------------------------------------------------- */

static void fail(struct cp_audit_log *l, int err, const char *what)
{
	if (l->failed)
		return;
	l->failed = true;
	l->err = err;
	if (l->cfg.on_failed)
		l->cfg.on_failed(l->cfg.arg, err, what);
}

/* ---- io_uring submission ------------------------------------------------------ */

static int queue_io(struct cp_audit_log *l)
{
	struct io_uring_sqe *w = io_uring_get_sqe(&l->ring);
	struct io_uring_sqe *f = io_uring_get_sqe(&l->ring);
	struct io_uring_sqe *hw = io_uring_get_sqe(&l->ring);
	struct io_uring_sqe *hf = io_uring_get_sqe(&l->ring);
	if (!w || !f || !hw || !hf)
		return -EBUSY; /* cannot happen: the ring holds 8 and we use 5 */
	uint32_t len = l->ilen - l->idone;
	if (l->inject_short && l->inject_short < len) {
		len = l->inject_short; /* test hook: a short write */
		l->inject_short = 0;
	}
	io_uring_prep_write(w, l->fd, l->ibuf + l->idone, len, l->file_off + l->idone);
	/* The fdatasync runs only after the write completed in full; a short
	 * write cancels it (-ECANCELED) and the rest is resubmitted. */
	w->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data64(w, TAG_WRITE);
	io_uring_prep_fsync(f, l->fd, IORING_FSYNC_DATASYNC);
	io_uring_sqe_set_data64(f, TAG_FSYNC);
	/* Then pin the new chain head in the head file (alternate slots, so a
	 * torn head write leaves the previous head readable): a record is
	 * reported durable only once the head that covers it is, so recovery
	 * can tell a clean cut of acknowledged records from a torn tail. */
	f->flags |= IOSQE_IO_LINK;
	io_uring_prep_write(hw, l->hfd, l->hbuf, CP_AUDIT_HEAD_LEN, l->hslot ? CP_AUDIT_HEAD_SLOT_OFF : 0);
	hw->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data64(hw, TAG_HWRITE);
	io_uring_prep_fsync(hf, l->hfd, IORING_FSYNC_DATASYNC);
	io_uring_sqe_set_data64(hf, TAG_HFSYNC);
	l->pending_cqes = 4;
	l->wres = l->fres = l->hwres = l->hfres = 0;
	int rc = io_uring_submit(&l->ring);
	return rc < 0 ? rc : 0;
}

static int switch_file(struct cp_audit_log *l)
{
	char name[PATH_MAX];
	uint32_t n = l->file_index + 1;
	int rc = fg_audit_file_rotated_name(l->path, n, name, sizeof(name));
	if (rc < 0)
		return rc;
	if (rename(l->path, name) < 0)
		return -errno;
	if (fsync(l->dirfd) < 0)
		return -errno;
	int fd = open(l->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd < 0)
		return -errno;
	if (fsync(l->dirfd) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	close(l->fd);
	l->fd = fd;
	l->file_off = 0;
	l->file_index = n;
	l->st.rotations++;
	return 0;
}

/* Move the next batch from fill to the in-flight buffer and submit it. */
static int submit_batch(struct cp_audit_log *l)
{
	if (l->failed || l->inflight || l->fill_len == 0)
		return 0;
	if (l->nb && l->boundary[0] == 0) {
		int rc = switch_file(l);
		if (rc < 0) {
			fail(l, -rc, "rotate");
			return -EIO;
		}
		memmove(l->boundary, l->boundary + 1, (l->nb - 1) * sizeof(l->boundary[0]));
		l->nb--;
	}
	uint32_t limit = l->nb ? l->boundary[0] : l->fill_len;
	uint32_t batch_max = l->cfg.batch_max;
	uint32_t off = 0, last = 0, n = 0;
	while (off < limit) {
		uint32_t rl = fg_le32(l->fill + off);
		if (n > 0 && (off + rl > batch_max || (l->cfg.batch_max_records && n >= l->cfg.batch_max_records)))
			break;
		last = off;
		off += rl;
		n++;
	}
	if (off == l->fill_len) {
		uint8_t *t = l->ibuf; /* both buffers are buf_cap bytes: swap, no copy */
		l->ibuf = l->fill;
		l->fill = t;
	} else {
		memcpy(l->ibuf, l->fill, off);
		memmove(l->fill, l->fill + off, l->fill_len - off);
	}
	l->fill_len -= off;
	for (uint32_t i = 0; i < l->nb; i++)
		l->boundary[i] -= off;
	l->ilen = off;
	l->idone = 0;
	l->ilast_off = last;
	l->irecords = n;
	l->ilast_seq = fg_le64(l->ibuf + last + 8);
	fg_audit_record_hash(l->ibuf + last, l->ihash);
	struct cp_audit_head h = {
		.seq = l->ilast_seq,
		.end_off = l->file_off + off,
		.file_index = l->file_index,
		.gen = l->hgen,
	};
	memcpy(h.hash, l->ihash, FG_AUDIT_HASH_LEN);
	cp_audit_head_encode(&h, l->hbuf);
	l->inflight = true;
	l->st.batches++;
	int rc = queue_io(l);
	if (rc < 0) {
		fail(l, -rc, "io_uring submit");
		return -EIO;
	}
	return 0;
}

static void arm_timer(struct cp_audit_log *l)
{
	if (l->timer_armed)
		return;
	struct io_uring_sqe *t = io_uring_get_sqe(&l->ring);
	if (!t) {
		(void)submit_batch(l);
		return;
	}
	uint64_t ns = (uint64_t)l->cfg.group_commit_us * 1000u;
	l->ts.tv_sec = (long long)(ns / 1000000000u);
	l->ts.tv_nsec = (long long)(ns % 1000000000u);
	io_uring_prep_timeout(t, &l->ts, 0, 0);
	io_uring_sqe_set_data64(t, TAG_TIMER);
	l->timer_armed = true;
	if (io_uring_submit(&l->ring) < 0) {
		/* No timer: submit now rather than let the record wait forever. */
		l->timer_armed = false;
		(void)submit_batch(l);
	}
}

/* Both completions of the in-flight write+fdatasync are in. */
static void finish_io(struct cp_audit_log *l)
{
	if (l->inject_werr) {
		l->wres = -l->inject_werr;
		l->inject_werr = 0;
	}
	if (l->wres < 0) {
		fail(l, -l->wres, "write");
		return;
	}
	l->idone += (uint32_t)l->wres;
	l->st.bytes_written += (uint64_t)l->wres;
	if (l->idone < l->ilen) {
		if (l->wres == 0) {
			fail(l, EIO, "write (no progress)");
			return;
		}
		l->st.short_writes++;
		int rc = queue_io(l);
		if (rc < 0)
			fail(l, -rc, "io_uring submit");
		return;
	}
	l->st.fsyncs++;
	if (l->inject_err) {
		l->fres = -l->inject_err;
		l->inject_err = 0;
	}
	if (l->fres < 0) {
		/* Fail closed, no retry: see the header. */
		fail(l, -l->fres, "fdatasync");
		return;
	}
	if (l->hwres != (int)CP_AUDIT_HEAD_LEN || l->hfres < 0) {
		/* The records are on disk but their head is not pinned: a
		 * restart would still find them (the head only lags), but this
		 * run can no longer promise what it pins, so fail closed too. */
		fail(l, l->hwres < 0 ? -l->hwres : l->hfres < 0 ? -l->hfres : EIO, "head write");
		return;
	}
	l->hslot ^= 1u;
	l->hgen++;
	l->file_off += l->ilen;
	l->durable_next = l->ilast_seq + 1;
	memcpy(l->durable_head, l->ihash, FG_AUDIT_HASH_LEN);
	l->st.durable_records += l->irecords;
	l->inflight = false;
	if (l->cfg.on_durable)
		l->cfg.on_durable(l->cfg.arg, l->ilast_seq);
	/* Records that gathered while this batch was in flight have waited
	 * long enough: out at once. */
	(void)submit_batch(l);
}

int cp_audit_log_process(struct cp_audit_log *l)
{
	uint64_t v;
	while (read(l->efd, &v, sizeof(v)) == (ssize_t)sizeof(v))
		;
	struct io_uring_cqe *cqe;
	while (io_uring_peek_cqe(&l->ring, &cqe) == 0) {
		uint64_t tag = io_uring_cqe_get_data64(cqe);
		int res = cqe->res;
		io_uring_cqe_seen(&l->ring, cqe);
		switch (tag) {
		case TAG_TIMER:
			l->timer_armed = false;
			(void)submit_batch(l);
			break;
		case TAG_WRITE:
			l->wres = res;
			if (--l->pending_cqes == 0)
				finish_io(l);
			break;
		case TAG_FSYNC:
			l->fres = res;
			if (--l->pending_cqes == 0)
				finish_io(l);
			break;
		case TAG_HWRITE:
			l->hwres = res;
			if (--l->pending_cqes == 0)
				finish_io(l);
			break;
		case TAG_HFSYNC:
			l->hfres = res;
			if (--l->pending_cqes == 0)
				finish_io(l);
			break;
		default:
			break;
		}
	}
	return l->failed ? -EIO : 0;
}

int cp_audit_log_flush(struct cp_audit_log *l)
{
	if (l->failed)
		return -EIO;
	return submit_batch(l);
}

int cp_audit_log_drain(struct cp_audit_log *l, int timeout_ms)
{
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	if (cp_audit_log_flush(l) < 0)
		return -EIO;
	while (!l->failed && (l->inflight || l->fill_len)) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		long long el = (t.tv_sec - start.tv_sec) * 1000LL + (t.tv_nsec - start.tv_nsec) / 1000000;
		if (el >= timeout_ms)
			return -ETIMEDOUT;
		struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 10 * 1000 * 1000 };
		struct io_uring_cqe *cqe;
		(void)io_uring_wait_cqe_timeout(&l->ring, &cqe, &ts);
		(void)cp_audit_log_process(l);
		if (!l->inflight && l->fill_len)
			(void)submit_batch(l);
	}
	return l->failed ? -EIO : 0;
}

/* ---- append ------------------------------------------------------------------ */

static int encode_into_fill(struct cp_audit_log *l, unsigned type, const union fg_audit_payload *p)
{
	ssize_t n = fg_audit_encode(&l->chain, type, now_realtime_ns(), p, l->fill + l->fill_len,
				    l->buf_cap - l->fill_len);
	if (n < 0)
		return n == -FG_AR_NOSPACE ? -ENOBUFS : -EINVAL;
	l->fill_len += (uint32_t)n;
	l->assigned_bytes += (uint64_t)n;
	l->assigned_records++;
	l->st.appended++;
	return 0;
}

int cp_audit_log_append(struct cp_audit_log *l, unsigned type, const union fg_audit_payload *p, uint64_t *seq)
{
	if (l->failed)
		return -EIO;
	if (type == FG_AREC_GENESIS || type == FG_AREC_ROTATION)
		return -EINVAL; /* only this file writes those */
	/* room for a ROTATION record, its summary and the record itself */
	if (l->buf_cap - l->fill_len < 3 * FG_AUDIT_REC_MAX || l->fill_len >= l->cfg.backlog_max) {
		l->st.enobufs++;
		return -ENOBUFS;
	}
	if (l->cfg.rotate_bytes && l->nb < MAX_BOUNDARIES && l->assigned_bytes >= l->cfg.rotate_bytes) {
		union fg_audit_payload rp;
		memset(&rp, 0, sizeof(rp));
		rp.rotation.prev_file_records = l->assigned_records;
		rp.rotation.prev_file_bytes = l->assigned_bytes;
		rp.rotation.prev_file_index = l->file_index + 1 + l->nb; /* after the switches still pending */
		uint32_t at = l->fill_len;
		uint64_t rb = l->assigned_bytes, rr = l->assigned_records;
		l->assigned_bytes = 0;
		l->assigned_records = 0;
		int rc = encode_into_fill(l, FG_AREC_ROTATION, &rp);
		if (rc < 0) {
			l->assigned_bytes = rb;
			l->assigned_records = rr;
			return rc;
		}
		l->boundary[l->nb++] = at;
		union fg_audit_payload sp;
		unsigned st;
		/* Best effort: without it a restart reads the file before too. */
		if (l->cfg.rotation_summary && l->cfg.rotation_summary(l->cfg.arg, &st, &sp) &&
		    st != FG_AREC_GENESIS && st != FG_AREC_ROTATION)
			(void)encode_into_fill(l, st, &sp);
	}
	uint64_t s = l->chain.next_seq;
	int rc = encode_into_fill(l, type, p);
	if (rc < 0)
		return rc;
	*seq = s;
	if (!l->inflight) {
		if (l->cfg.group_commit_us == 0 || l->fill_len >= l->cfg.batch_max)
			(void)submit_batch(l);
		else
			arm_timer(l);
	}
	return 0;
}

/* ---- queries -------------------------------------------------------------------- */

int cp_audit_log_fd(const struct cp_audit_log *l) { return l->efd; }
bool cp_audit_log_is_durable(const struct cp_audit_log *l, uint64_t seq) { return seq < l->durable_next; }
uint64_t cp_audit_log_durable_next(const struct cp_audit_log *l) { return l->durable_next; }

bool cp_audit_log_failed(const struct cp_audit_log *l, int *err)
{
	if (err)
		*err = l->err;
	return l->failed;
}

void cp_audit_log_head(const struct cp_audit_log *l, uint8_t hash[FG_AUDIT_HASH_LEN], uint64_t *next_seq)
{
	memcpy(hash, l->chain.head, FG_AUDIT_HASH_LEN);
	*next_seq = l->chain.next_seq;
}

void cp_audit_log_durable_head(const struct cp_audit_log *l, uint8_t hash[FG_AUDIT_HASH_LEN],
			       uint64_t *durable_next)
{
	memcpy(hash, l->durable_head, FG_AUDIT_HASH_LEN);
	*durable_next = l->durable_next;
}

void cp_audit_log_stats(const struct cp_audit_log *l, struct cp_audit_log_stats *out)
{
	*out = l->st;
	out->backlog_bytes = l->fill_len;
	out->inflight_bytes = l->inflight ? l->ilen : 0;
	out->file_bytes = l->file_off;
	out->file_index = l->file_index;
}

void cp_audit_log_inject_fsync_error(struct cp_audit_log *l, int err) { l->inject_err = err; }

void cp_audit_log_inject_write(struct cp_audit_log *l, int err, uint32_t short_bytes)
{
	l->inject_werr = err;
	l->inject_short = short_bytes;
}

/* ---- open / recovery ---------------------------------------------------------- */

/* Write one record synchronously at the end of the current file (start-up only). */
static int append_sync(struct cp_audit_log *l, unsigned type, const union fg_audit_payload *p)
{
	uint8_t rec[FG_AUDIT_REC_MAX];
	ssize_t n = fg_audit_encode(&l->chain, type, now_realtime_ns(), p, rec, sizeof(rec));
	if (n < 0)
		return -EINVAL;
	int rc = write_sync(l->fd, rec, (size_t)n, l->file_off);
	if (rc < 0)
		return rc;
	l->file_off += (uint64_t)n;
	l->assigned_bytes += (uint64_t)n;
	l->assigned_records++;
	return 0;
}

/* Start an empty current file: ROTATION from the highest rotated file, or GENESIS. */
static int start_file(struct cp_audit_log *l, char *err, size_t errlen)
{
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	if (l->file_index > 0) {
		char name[PATH_MAX];
		int rc = fg_audit_file_rotated_name(l->path, l->file_index, name, sizeof(name));
		if (rc < 0)
			return rc;
		int fd = open(name, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
			set_err(err, errlen, "open %s: %s", name, -rc);
			return rc;
		}
		struct fg_audit_scan s;
		uint64_t len;
		rc = fg_audit_file_scan(fd, NULL, &s, &len, UINT64_MAX);
		close(fd);
		if (rc < 0) {
			set_err(err, errlen, "read %s: %s", name, -rc);
			return rc;
		}
		if (rc > 0) {
			if (err && errlen)
				snprintf(err, errlen, "%s: record seq %" PRIu64 " at offset %" PRIu64 ": %s; "
					 "a rotated file must verify, refusing to continue its chain",
					 name, s.bad_seq, s.bad_offset, fg_audit_reason_name(s.reason));
			return -EBADMSG;
		}
		l->chain = s.chain;
		p.rotation.prev_file_records = s.records;
		p.rotation.prev_file_bytes = len;
		p.rotation.prev_file_index = l->file_index;
		return append_sync(l, FG_AREC_ROTATION, &p);
	}
	fg_audit_chain_init(&l->chain);
	p.genesis.format = FG_AUDIT_VERSION;
	snprintf(p.genesis.who, sizeof(p.genesis.who), "%s", l->cfg.who ? l->cfg.who : "fanogate");
	return append_sync(l, FG_AREC_GENESIS, &p);
}

/* Confine the log's ring (created IORING_SETUP_R_DISABLED) to what it
 * submits: WRITE linked (IOSQE_IO_LINK) to FSYNC, and the TIMEOUT of the
 * write-back; no io_uring_register opcode once enabled. Then enable it.
 * (The same scheme as control/cp_harden.c, which this library cannot call;
 * raw syscalls: Debian's liburing 2.3 does not export the helpers.) */
static int ring_restrict(struct io_uring *ring)
{
	static const uint8_t ops[] = { IORING_OP_FSYNC, IORING_OP_TIMEOUT, IORING_OP_WRITE };
	struct io_uring_restriction res[FG_ARRAY_LEN(ops) + 1];
	memset(res, 0, sizeof(res));
	for (size_t i = 0; i < FG_ARRAY_LEN(ops); i++) {
		res[i].opcode = IORING_RESTRICTION_SQE_OP;
		res[i].sqe_op = ops[i];
	}
	res[FG_ARRAY_LEN(ops)].opcode = IORING_RESTRICTION_SQE_FLAGS_ALLOWED;
	res[FG_ARRAY_LEN(ops)].sqe_flags = IOSQE_IO_LINK;
	if (syscall(__NR_io_uring_register, ring->ring_fd, IORING_REGISTER_RESTRICTIONS, res, FG_ARRAY_LEN(res)) < 0 ||
	    syscall(__NR_io_uring_register, ring->ring_fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0) < 0)
		return -errno;
	return 0;
}

/* Is there a record that decodes (self-check: length, checksum, version,
 * type, payload) anywhere in [from, len)? A torn tail is the bytes of a
 * write that never completed: nothing valid can follow its first bad
 * record. A valid record after it means the bad bytes sit inside history
 * (a flipped bit, an edit), and recovery must not cut. Writes the first
 * such record's offset and seq. Reads at most FG_AUDIT_TAIL_MAX bytes
 * (the caller checked the distance). Returns 1, 0 or -errno. */
static int valid_record_after(int fd, uint64_t from, uint64_t len, uint64_t *at, uint64_t *seq)
{
	if (from >= len)
		return 0;
	size_t n = (size_t)(len - from);
	uint8_t *buf = malloc(n);
	if (!buf)
		return -ENOMEM;
	int rc = fg_audit_file_pread(fd, buf, n, from);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	rc = 0;
	for (size_t o = 1; o + FG_AUDIT_HDR_LEN + FG_AUDIT_TRAILER_LEN <= n; o++) {
		struct fg_audit_rec r;
		if (fg_audit_decode(buf + o, n - o, &r) > 0) {
			*at = from + o;
			*seq = r.seq;
			rc = 1;
			break;
		}
	}
	free(buf);
	return rc;
}

/* Copy [off, len) of the current file to "<path>.damaged-<time>-<off>"
 * (new file, fsync'ed, directory fsync'ed) so repair never deletes it. */
static int move_aside(struct cp_audit_log *l, uint64_t off, uint64_t len, char *name, size_t cap)
{
	int k = snprintf(name, cap, "%s.damaged-%" PRIu64 "-%" PRIu64, l->path, now_realtime_ns() / 1000000000u, off);
	if (k < 0 || (size_t)k >= cap)
		return -ENAMETOOLONG;
	int out = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (out < 0)
		return -errno;
	uint8_t *buf = malloc(SCAN_CHUNK);
	int rc = buf ? 0 : -ENOMEM;
	for (uint64_t pos = off; rc == 0 && pos < len;) {
		size_t want = len - pos < SCAN_CHUNK ? (size_t)(len - pos) : SCAN_CHUNK;
		rc = fg_audit_file_pread(l->fd, buf, want, pos);
		if (rc == 0) {
			size_t done = 0;
			while (rc == 0 && done < want) {
				ssize_t w = write(out, buf + done, want - done);
				if (w < 0 && errno == EINTR)
					continue;
				if (w <= 0)
					rc = w < 0 ? -errno : -EIO;
				else
					done += (size_t)w;
			}
		}
		pos += want;
	}
	free(buf);
	if (rc == 0 && fsync(out) < 0)
		rc = -errno;
	close(out);
	if (rc == 0 && fsync(l->dirfd) < 0)
		rc = -errno;
	return rc;
}

struct damage {
	bool found;
	int reason;          /* enum fg_audit_reason */
	uint64_t offset, seq;
	bool move;           /* bytes [offset, file end) are damaged (repair moves them aside) */
	char note[200];
};

/* Compare the current file with the pinned chain head h (the head names
 * this file): the intact prefix must reach h.end_off, and the record that
 * ends there must be seq h.seq with hash h.hash. */
static int check_head(struct cp_audit_log *l, const struct cp_audit_head *h, const struct fg_audit_scan *s,
		      int scan_rc, uint64_t len, struct damage *d)
{
	uint64_t intact = scan_rc == 0 ? len : s->good_bytes;
	if (intact < h->end_off) {
		d->found = true;
		if (scan_rc == 1) {
			d->reason = s->reason;
			d->offset = s->bad_offset;
			d->seq = s->bad_seq;
			d->move = true;
			snprintf(d->note, sizeof(d->note), "; it lies before the durable head (seq %" PRIu64
				 " ends at offset %" PRIu64 "): acknowledged history", h->seq, h->end_off);
		} else {
			d->reason = FG_AR_HEAD;
			d->offset = len;
			d->seq = s->records ? s->last_seq + 1 : 0;
			snprintf(d->note, sizeof(d->note), "; the file ends at offset %" PRIu64 " but the durable "
				 "head is seq %" PRIu64 " ending at offset %" PRIu64 ": records were cut", len, h->seq,
				 h->end_off);
		}
		return 0;
	}
	struct fg_audit_chain ch = s->chain;
	if (s->good_bytes != h->end_off) {
		struct fg_audit_scan p;
		uint64_t plen;
		int rc = fg_audit_file_scan(l->fd, NULL, &p, &plen, h->end_off);
		if (rc < 0)
			return rc;
		ch = p.chain;
	}
	if (ch.next_seq != h->seq + 1 || memcmp(ch.head, h->hash, FG_AUDIT_HASH_LEN) != 0) {
		d->found = true;
		d->reason = FG_AR_HEAD;
		d->offset = h->end_off;
		d->seq = h->seq;
		snprintf(d->note, sizeof(d->note), "; the record ending at offset %" PRIu64 " is not the durable "
			 "head seq %" PRIu64 " (next seq %" PRIu64 "): history was replaced", h->end_off, h->seq,
			 ch.next_seq);
	}
	return 0;
}

/* Recovery writes the RECOVERY record over the start of the torn tail and
 * only then truncates after it, so that a crash in the middle of recovery
 * still leaves the cut on record: the next start-up sees the recovery
 * record followed by junk, cuts again, and records that too.
 *
 * Returns 0 (opened; rep says whether a torn tail was cut), 1 (damage
 * found and not repaired: rep->damaged, rep->damage names it, the file is
 * untouched) or -errno. With repair, damage is moved aside and cut like a
 * torn tail (rep->repaired, rep->aside). */
static void fold_visit(void *arg, const struct fg_audit_rec *r)
{
	fg_audit_fold_rec(arg, r);
}

static int recover(struct cp_audit_log *l, struct cp_audit_open_report *rep, bool repair, char *err,
		   size_t errlen)
{
	struct fg_audit_scan s;
	uint64_t len;
	int rc = fg_audit_file_scan_visit(l->fd, NULL, &s, &len, UINT64_MAX, l->cfg.fold ? fold_visit : NULL,
					  l->cfg.fold);
	if (rc < 0) {
		set_err(err, errlen, "read %s: %s", l->path, -rc);
		return rc;
	}
	int scan_rc = rc;
	struct cp_audit_head h;
	const char *hname = l->hname;
	int hrc = cp_audit_head_read(l->hfd, &h, NULL);
	struct damage d = { 0 };
	if (hrc == -EBADMSG) {
		d.found = true;
		d.reason = FG_AR_HEAD;
		snprintf(d.note, sizeof(d.note), "; the head file has no valid slot");
	} else if (hrc < 0) {
		set_err(err, errlen, "read %s: %s", hname, -hrc);
		return hrc;
	} else if (hrc == 1 && h.file_index > l->file_index) {
		d.found = true;
		d.reason = FG_AR_HEAD;
		snprintf(d.note, sizeof(d.note), "; the durable head seq %" PRIu64 " was written after rotation %"
			 PRIu32 " but the highest rotated file is %" PRIu32 ": rotated files are missing", h.seq,
			 h.file_index, l->file_index);
	} else if (hrc == 1 && h.file_index == l->file_index) {
		rc = check_head(l, &h, &s, scan_rc, len, &d);
		if (rc < 0) {
			set_err(err, errlen, "read %s: %s", l->path, -rc);
			return rc;
		}
	}
	/* hrc == 0 (no head yet: a log written before head files existed) or a
	 * head in an older file (crash between a rotation's rename and the new
	 * file's first batch): only the torn-tail rule below applies. */
	bool cut = false;
	if (!d.found && scan_rc == 1) {
		uint64_t at = 0, vseq = 0;
		int v = 0;
		if (fg_audit_tail_is_torn(&s, len))
			v = valid_record_after(l->fd, s.bad_offset, len, &at, &vseq);
		if (v < 0) {
			set_err(err, errlen, "read %s: %s", l->path, -v);
			return v;
		}
		if (fg_audit_tail_is_torn(&s, len) && v == 1 && hrc == 1) {
			/* With a head pinned, check_head already proved the bad
			 * record lies after it: these bytes are the batch that was
			 * in flight at the crash, never acknowledged, and a power
			 * loss may persist its sectors in any order (a hole with
			 * whole records after it). Cut, but keep the bytes aside:
			 * they are not provably garbage. */
			rc = move_aside(l, s.bad_offset, len, rep->aside, sizeof(rep->aside));
			if (rc < 0) {
				set_err(err, errlen, "move the torn tail of %s aside: %s", l->path, -rc);
				return rc;
			}
			cut = true;
		} else if (!fg_audit_tail_is_torn(&s, len) || v == 1) {
			d.found = true;
			d.reason = s.reason;
			d.offset = s.bad_offset;
			d.seq = s.bad_seq;
			d.move = true;
			if (v == 1)
				snprintf(d.note, sizeof(d.note), "; a valid record (seq %" PRIu64 ") follows at offset %"
					 PRIu64 ", so this is not a torn tail", vseq, at);
			else if (!fg_audit_reason_is_torn(s.reason))
				snprintf(d.note, sizeof(d.note), "; a crash cannot produce this reason");
			else
				snprintf(d.note, sizeof(d.note), "; it starts %" PRIu64 " bytes before the end, more "
					 "than one group-commit batch", len - s.bad_offset);
		} else {
			cut = true;
		}
	}
	const char *dfile = hrc == -EBADMSG ? hname : l->path;
	if (d.found) {
		rep->damage_offset = d.offset;
		rep->damage_seq = d.seq;
		rep->damage_reason = d.reason;
		if (snprintf(rep->damage, sizeof(rep->damage), "%s: damage at offset %" PRIu64 ", record seq %"
			     PRIu64 ": %s%s", dfile, d.offset, d.seq, fg_audit_reason_name(d.reason), d.note) < 0)
			rep->damage[0] = '\0';
		if (!repair) {
			rep->damaged = true;
			l->chain = s.chain;
			if (err && errlen)
				snprintf(err, errlen, "%s; file left intact, log failed closed; after a look, "
					 "`fanoctl audit repair %s` moves the damaged part aside", rep->damage, l->path);
			return 1;
		}
		rep->repaired = true;
		if (d.move) {
			rc = move_aside(l, d.offset, len, rep->aside, sizeof(rep->aside));
			if (rc < 0) {
				set_err(err, errlen, "move the damaged part of %s aside: %s", l->path, -rc);
				return rc;
			}
			cut = true;
		}
	}
	struct fg_audit_recovery cutrec = { 0 };
	if (cut) {
		cutrec.cut_offset = s.bad_offset;
		cutrec.cut_bytes = len - s.bad_offset;
		cutrec.last_seq = s.records ? s.last_seq : 0;
		cutrec.reason = (uint16_t)(d.found ? d.reason : s.reason);
		rep->cut = true;
		rep->recovery = cutrec;
	} else if (d.found) {
		/* Repair of a head mismatch: nothing to move, but say so on record. */
		cutrec.cut_offset = len;
		cutrec.last_seq = s.records ? s.last_seq : 0;
		cutrec.reason = FG_AR_HEAD;
		rep->recovery = cutrec;
	}
	if (s.records == 0) {
		/* Nothing intact (new file, or a torn first record): start over. */
		if (len && (ftruncate(l->fd, 0) < 0 || fsync(l->fd) < 0)) {
			rc = -errno;
			set_err(err, errlen, "truncate %s: %s", l->path, -rc);
			return rc;
		}
		rc = start_file(l, err, errlen);
		if (rc < 0) {
			if (rc != -EBADMSG)
				set_err(err, errlen, "start %s: %s", l->path, -rc);
			return rc;
		}
		if (fsync(l->dirfd) < 0) {
			rc = -errno;
			set_err(err, errlen, "fsync directory of %s: %s", l->path, -rc);
			return rc;
		}
		rep->created = true;
		if (l->cfg.fold && l->file_index == 0) {
			/* a new log: GENESIS, no line has history */
			struct fg_audit_rec g = { .type = FG_AREC_GENESIS, .version = 1 };
			fg_audit_fold_rec(l->cfg.fold, &g);
		}
	} else {
		l->chain = s.chain;
		l->file_off = s.good_bytes;
		l->assigned_bytes = s.good_bytes;
		l->assigned_records = s.records;
		rep->records = s.records;
	}
	if (!cut && !d.found)
		return 0;
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	p.recovery = cutrec;
	uint8_t rec[FG_AUDIT_REC_MAX];
	ssize_t n = fg_audit_encode(&l->chain, FG_AREC_RECOVERY, now_realtime_ns(), &p, rec, sizeof(rec));
	if (n < 0)
		return -EINVAL;
	size_t done = 0;
	while (done < (size_t)n) {
		ssize_t w = pwrite(l->fd, rec + done, (size_t)n - done, (off_t)(l->file_off + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = w < 0 ? -errno : -EIO;
			set_err(err, errlen, "write recovery record to %s: %s", l->path, -rc);
			return rc;
		}
		done += (size_t)w;
	}
	l->file_off += (uint64_t)n;
	l->assigned_bytes += (uint64_t)n;
	l->assigned_records++;
	if (ftruncate(l->fd, (off_t)l->file_off) < 0 || fsync(l->fd) < 0) {
		rc = -errno;
		set_err(err, errlen, "truncate %s after recovery: %s", l->path, -rc);
		return rc;
	}
	return 0;
}

/* cfg.fold: the current file holds no GENESIS, START or LINES record (a
 * crash between a rotation's rename and its first batch, or a log written
 * before START records existed): fold the rotated files, newest first,
 * until one does. Each is read once, 4 MiB at a time. */
static void fold_older(struct cp_audit_log *l, struct cp_audit_open_report *rep)
{
	for (uint32_t n = l->file_index; n >= 1 && !l->cfg.fold->complete; n--) {
		char name[PATH_MAX];
		if (fg_audit_file_rotated_name(l->path, n, name, sizeof(name)) < 0)
			return;
		struct fg_audit_fold older;
		fg_audit_fold_init(&older);
		int fd = open(name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		struct fg_audit_scan s;
		uint64_t len;
		int rc = fd < 0 ? -errno : fg_audit_file_scan_visit(fd, NULL, &s, &len, UINT64_MAX, fold_visit, &older);
		if (fd >= 0)
			close(fd);
		if (rc != 0) {
			rep->lines_unreadable = true;
			int k = rc < 0 ? snprintf(rep->lines_why, sizeof(rep->lines_why), "%s: %s", name, strerror(-rc))
				       : snprintf(rep->lines_why, sizeof(rep->lines_why), "%s: record seq %" PRIu64
						  " at offset %" PRIu64 ": %s", name, s.bad_seq, s.bad_offset,
						  fg_audit_reason_name(s.reason));
			if (k < 0)
				rep->lines_why[0] = '\0';
			return;
		}
		fg_audit_fold_merge_older(l->cfg.fold, &older);
	}
}

/* Pin the chain head of what open left on disk (the batches keep it
 * current from here on). Slot: the one recovery did not read last. */
static int head_sync(struct cp_audit_log *l)
{
	struct cp_audit_head old;
	unsigned slot = 0;
	int rc = cp_audit_head_read(l->hfd, &old, &slot);
	l->hslot = rc == 1 ? slot ^ 1u : 0;
	l->hgen = rc == 1 ? old.gen + 1 : 1;
	struct cp_audit_head h = { .seq = l->chain.next_seq - 1, .end_off = l->file_off,
				   .file_index = l->file_index, .gen = l->hgen };
	memcpy(h.hash, l->chain.head, FG_AUDIT_HASH_LEN);
	rc = cp_audit_head_write_sync(l->hfd, l->hslot, &h);
	if (rc == 0) {
		l->hslot ^= 1u;
		l->hgen++;
	}
	return rc;
}

static int log_open(struct cp_audit_log **out, const struct cp_audit_log_cfg *cfg, struct cp_audit_open_report *rep,
		    bool repair, char *err, size_t errlen)
{
	struct cp_audit_open_report dummy;
	if (!rep)
		rep = &dummy;
	memset(rep, 0, sizeof(*rep));
	if (err && errlen)
		err[0] = '\0';
	if (!cfg || !cfg->path || !cfg->path[0] || strlen(cfg->path) >= PATH_MAX - 12 ||
	    cfg->batch_max > FG_AUDIT_TAIL_MAX) {
		set_err(err, errlen, "bad audit log configuration (%s): %s", cfg && cfg->path ? cfg->path : "",
			EINVAL);
		return -EINVAL;
	}
	struct cp_audit_log *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->cfg = *cfg;
	snprintf(l->path, sizeof(l->path), "%s", cfg->path);
	l->cfg.path = l->path;
	if (!l->cfg.batch_max)
		l->cfg.batch_max = FG_AUDIT_TAIL_MAX;
	if (!l->cfg.backlog_max)
		l->cfg.backlog_max = BACKLOG_DEFAULT;
	if (l->cfg.backlog_max < l->cfg.batch_max)
		l->cfg.backlog_max = l->cfg.batch_max;
	l->fd = l->dirfd = l->efd = l->hfd = -1;
	l->buf_cap = l->cfg.backlog_max + 3 * FG_AUDIT_REC_MAX;
	l->fill = malloc(l->buf_cap);
	l->ibuf = malloc(l->buf_cap);
	int rc = -ENOMEM;
	if (!l->fill || !l->ibuf)
		goto fail;

	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", l->path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	/* The embedded default points into /var/lib/fanogate, which a fresh box
	 * may not have yet: create the parents (0750) rather than refuse. */
	for (char *q = dir + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		(void)mkdir(dir, 0750);
		*q = '/';
	}
	(void)mkdir(dir, 0750);
	l->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l->dirfd < 0) {
		rc = -errno;
		set_err(err, errlen, "open directory %s: %s", dir, -rc);
		goto fail;
	}
	char *hname = l->hname;
	rc = cp_audit_head_name(l->path, hname, sizeof(l->hname));
	if (rc < 0) {
		set_err(err, errlen, "head file of %s: %s", l->path, -rc);
		goto fail;
	}
	l->hfd = open(hname, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (l->hfd < 0) {
		rc = -errno;
		set_err(err, errlen, "open %s: %s", hname, -rc);
		goto fail;
	}
	/* One writer per log: a second daemon, or `fanoctl audit repair`
	 * while the daemon runs, would interleave records. */
	if (flock(l->hfd, LOCK_EX | LOCK_NB) < 0) {
		rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
		set_err(err, errlen, "lock %s: %s (is another fanogate using this log?)", hname, -rc);
		goto fail;
	}
	l->file_index = fg_audit_file_highest_rotated(l->path);
	l->fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (l->fd < 0) {
		rc = -errno;
		set_err(err, errlen, "open %s: %s", l->path, -rc);
		goto fail;
	}
	if (l->cfg.fold)
		fg_audit_fold_init(l->cfg.fold);
	rc = recover(l, rep, repair, err, errlen);
	if (rc < 0)
		goto fail;
	if (rc == 0 && l->cfg.fold && !l->cfg.fold->complete)
		fold_older(l, rep);
	if (rc == 1) {
		/* Damage recovery cannot prove torn: open FAILED CLOSED, file
		 * untouched; nothing is ever appended (see the header). */
		l->failed = true;
		l->err = EBADMSG;
	} else {
		rc = head_sync(l);
		if (rc < 0) {
			set_err(err, errlen, "write %s: %s", hname, -rc);
			goto fail;
		}
	}
	l->durable_next = l->chain.next_seq;
	memcpy(l->durable_head, l->chain.head, FG_AUDIT_HASH_LEN);
	rep->next_seq = l->chain.next_seq;

	l->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->efd < 0) {
		rc = -errno;
		set_err(err, errlen, "eventfd for %s: %s", l->path, -rc);
		goto fail;
	}
	rc = io_uring_queue_init(8, &l->ring, IORING_SETUP_R_DISABLED);
	if (rc < 0) {
		set_err(err, errlen, "io_uring for %s: %s", l->path, -rc);
		goto fail;
	}
	l->ring_up = true;
	rc = io_uring_register_eventfd(&l->ring, l->efd);
	if (rc < 0) {
		set_err(err, errlen, "io_uring eventfd for %s: %s", l->path, -rc);
		goto fail;
	}
	rc = ring_restrict(&l->ring);
	if (rc < 0) {
		set_err(err, errlen, "io_uring restrictions for %s: %s", l->path, -rc);
		goto fail;
	}
	*out = l;
	return 0;
fail:
	if (l->ring_up)
		io_uring_queue_exit(&l->ring);
	if (l->efd >= 0)
		close(l->efd);
	if (l->fd >= 0)
		close(l->fd);
	if (l->hfd >= 0)
		close(l->hfd);
	if (l->dirfd >= 0)
		close(l->dirfd);
	free(l->fill);
	free(l->ibuf);
	free(l);
	return rc;
}

int cp_audit_log_open(struct cp_audit_log **out, const struct cp_audit_log_cfg *cfg,
		      struct cp_audit_open_report *rep, char *err, size_t errlen)
{
	return log_open(out, cfg, rep, false, err, errlen);
}

int cp_audit_log_repair(const char *path, struct cp_audit_open_report *rep, char *err, size_t errlen)
{
	struct cp_audit_open_report dummy;
	if (!rep)
		rep = &dummy;
	struct cp_audit_log_cfg cfg = { .path = path, .who = "fanoctl audit repair" };
	struct cp_audit_log *l;
	int rc = log_open(&l, &cfg, rep, true, err, errlen);
	if (rc < 0)
		return rc;
	cp_audit_log_free(l);
	return rep->repaired ? 1 : 0;
}

void cp_audit_log_free(struct cp_audit_log *l)
{
	if (!l)
		return;
	if (!l->failed) {
		int rc = cp_audit_log_drain(l, 5000);
		(void)rc; /* nothing left to tell: the durable callbacks already ran */
	}
	/* A batch may still be in flight after a drain timeout: its buffer must
	 * outlive the kernel's use of it, so wait (bounded) for its completions. */
	for (int i = 0; i < 500 && l->inflight && l->pending_cqes > 0; i++) {
		struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 10 * 1000 * 1000 };
		struct io_uring_cqe *cqe;
		(void)io_uring_wait_cqe_timeout(&l->ring, &cqe, &ts);
		(void)cp_audit_log_process(l);
	}
	io_uring_queue_exit(&l->ring);
	close(l->efd);
	close(l->fd);
	close(l->hfd);
	close(l->dirfd);
	free(l->fill);
	free(l->ibuf);
	free(l);
}

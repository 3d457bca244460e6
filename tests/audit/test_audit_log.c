/* test_audit_log.c - cp_audit_log: genesis, durable callbacks, reopen,
 * group commit versus one fdatasync per record, recovery of a torn tail
 * (and its idempotence), refusal of damage that is not a torn tail,
 * rotation with the chain carried across files (also after a crash between
 * rename and create), backlog limit, and fail-closed on an injected
 * fdatasync error. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <xxhash.h>

#include "cp_audit_log.h"
#include "../lib/fg_test_file.h" /* whole-file reads and writes, rotated file names */
#include "fg/audit.h"
#include "fg/wire.h"

static char dir[256], path[300];

struct seen {
	uint64_t last;
	unsigned calls;
	int failed;
	char what[32];
};

static void on_durable(void *arg, uint64_t seq)
{
	struct seen *s = arg;
	assert_true(s->calls == 0 || seq > s->last); /* monotonic */
	s->last = seq;
	s->calls++;
}

static void on_failed(void *arg, int err, const char *what)
{
	struct seen *s = arg;
	s->failed = err;
	snprintf(s->what, sizeof(s->what), "%s", what);
}

static int setup(void **state)
{
	(void)state;
	fg_test_tmpdir(dir, sizeof(dir), "/tmp/fg-test-log-XXXXXX");
	snprintf(path, sizeof(path), "%s/fanogate.audit", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return fg_test_rmtree(dir);
}

static struct cp_audit_log *open_log(struct seen *s, uint64_t rotate, uint32_t gc_us, uint32_t per_batch,
				     struct cp_audit_open_report *rep)
{
	struct cp_audit_log_cfg cfg = { .path = path, .rotate_bytes = rotate, .group_commit_us = gc_us,
					.batch_max_records = per_batch, .who = "test", .on_durable = on_durable,
					.on_failed = on_failed, .arg = s };
	struct cp_audit_log *l;
	char err[512];
	int rc = cp_audit_log_open(&l, &cfg, rep, err, sizeof(err));
	if (rc < 0)
		fail_msg("open: %d %s", rc, err);
	return l;
}

static uint64_t append_verdicts(struct cp_audit_log *l, unsigned n)
{
	uint64_t seq = 0;
	for (unsigned i = 0; i < n; i++) {
		union fg_audit_payload p;
		memset(&p, 0, sizeof(p));
		p.verdict.token_seq = i;
		p.verdict.lines = 0x2A;
		p.verdict.diff.first_index = UINT32_MAX;
		assert_int_equal(cp_audit_log_append(l, FG_AREC_VERDICT, &p, &seq), 0);
	}
	return seq;
}

static size_t file_size(const char *p)
{
	struct stat sb;
	assert_int_equal(stat(p, &sb), 0);
	return (size_t)sb.st_size;
}

static void verify_file(const char *p, uint64_t records)
{
	size_t len;
	uint8_t *b = fg_test_slurp(p, &len);
	struct fg_audit_scan s;
	int rc = fg_audit_verify(b, len, NULL, &s);
	if (rc < 0)
		fail_msg("%s: offset %" PRIu64 ": %s", p, s.bad_offset, fg_audit_reason_name(s.reason));
	if (records)
		assert_int_equal(s.records, records);
	free(b);
}

static void test_append_durable_reopen(void **state)
{
	(void)state;
	struct seen s = { 0 };
	struct cp_audit_open_report rep;
	struct cp_audit_log *l = open_log(&s, 0, 0, 0, &rep);
	assert_true(rep.created);
	assert_false(rep.cut);
	assert_int_equal(rep.next_seq, 1); /* genesis is seq 0, already durable */
	assert_true(cp_audit_log_is_durable(l, 0));
	uint64_t last = append_verdicts(l, 100);
	assert_int_equal(last, 100);
	assert_false(cp_audit_log_is_durable(l, last));
	assert_int_equal(cp_audit_log_drain(l, 10000), 0);
	assert_true(cp_audit_log_is_durable(l, last));
	assert_int_equal(s.last, last);
	assert_true(s.calls >= 1);
	uint8_t h1[FG_AUDIT_HASH_LEN], h2[FG_AUDIT_HASH_LEN];
	uint64_t n1, n2;
	cp_audit_log_head(l, h1, &n1);
	cp_audit_log_durable_head(l, h2, &n2);
	assert_int_equal(n1, 101);
	assert_int_equal(n2, 101);
	assert_memory_equal(h1, h2, sizeof(h1));
	/* GENESIS and ROTATION are the log's own */
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	uint64_t seq;
	assert_int_equal(cp_audit_log_append(l, FG_AREC_GENESIS, &p, &seq), -EINVAL);
	cp_audit_log_free(l);
	verify_file(path, 101);

	/* reopen: nothing created, nothing cut, the chain continues */
	l = open_log(&s, 0, 0, 0, &rep);
	assert_false(rep.created);
	assert_false(rep.cut);
	assert_int_equal(rep.records, 101);
	assert_int_equal(rep.next_seq, 101);
	cp_audit_log_head(l, h2, &n2);
	assert_memory_equal(h1, h2, sizeof(h1));
	append_verdicts(l, 5);
	cp_audit_log_free(l); /* free drains */
	verify_file(path, 106);
}

static void test_group_commit_vs_per_record(void **state)
{
	(void)state;
	struct seen s = { 0 };
	struct cp_audit_log *l = open_log(&s, 0, 50 * 1000, 0, NULL);
	append_verdicts(l, 500);
	assert_int_equal(cp_audit_log_drain(l, 10000), 0);
	struct cp_audit_log_stats st;
	cp_audit_log_stats(l, &st);
	/* 500 records appended before the loop ran: one batch (the 50 ms timer
	 * or the drain's flush, whichever is first), not 500. */
	assert_int_equal(st.durable_records, 500);
	assert_true(st.batches <= 2);
	assert_int_equal(st.fsyncs, st.batches);
	cp_audit_log_free(l);

	s = (struct seen){ 0 };
	l = open_log(&s, 0, 0, 1, NULL);
	append_verdicts(l, 50);
	assert_int_equal(cp_audit_log_drain(l, 10000), 0);
	cp_audit_log_stats(l, &st);
	assert_int_equal(st.batches, 50);
	assert_int_equal(st.fsyncs, 50);
	assert_int_equal(s.calls, 50);
	cp_audit_log_free(l);
	verify_file(path, 551);
}

static void test_recovery_torn_tail(void **state)
{
	(void)state;
	struct seen s = { 0 };
	struct cp_audit_log *l = open_log(&s, 0, 0, 0, NULL);
	append_verdicts(l, 20);
	cp_audit_log_free(l);
	size_t good = file_size(path);
	size_t len;
	uint8_t *b = fg_test_slurp(path, &len);
	uint32_t last_len = 0;
	for (size_t off = 0; off < len; off += last_len)
		last_len = fg_le32(b + off);
	/* A torn tail: half of a copy of the last record. */
	int fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b + len - last_len, last_len / 2), (ssize_t)(last_len / 2));
	close(fd);
	free(b);

	struct cp_audit_open_report rep;
	l = open_log(&s, 0, 0, 0, &rep);
	assert_true(rep.cut);
	assert_int_equal(rep.recovery.cut_offset, good);
	assert_int_equal(rep.recovery.cut_bytes, last_len / 2);
	assert_int_equal(rep.recovery.last_seq, 20);
	assert_int_equal(rep.recovery.reason, FG_AR_TRUNCATED);
	assert_int_equal(rep.next_seq, 22); /* the recovery record is seq 21 */
	cp_audit_log_free(l);
	verify_file(path, 22);
	size_t after = file_size(path);

	/* idempotent: a second open cuts nothing and appends nothing */
	l = open_log(&s, 0, 0, 0, &rep);
	assert_false(rep.cut);
	assert_int_equal(rep.next_seq, 22);
	cp_audit_log_free(l);
	assert_int_equal(file_size(path), after);

	/* zeroes after the end (size extended, data never written) */
	fd = open(path, O_WRONLY);
	assert_int_equal(ftruncate(fd, (off_t)after + 4096), 0);
	close(fd);
	l = open_log(&s, 0, 0, 0, &rep);
	assert_true(rep.cut);
	assert_int_equal(rep.recovery.reason, FG_AR_ZERO);
	assert_int_equal(rep.recovery.cut_bytes, 4096);
	cp_audit_log_free(l);
	verify_file(path, 23);
}

static void test_refuses_tampering(void **state)
{
	(void)state;
	struct seen s = { 0 };
	struct cp_audit_log *l = open_log(&s, 0, 0, 0, NULL);
	append_verdicts(l, 10);
	cp_audit_log_free(l);
	size_t len;
	uint8_t *b = fg_test_slurp(path, &len);
	/* edit record 5 and forge its checksum: not a torn tail, refuse */
	size_t off = 0;
	for (int i = 0; i < 5; i++)
		off += fg_le32(b + off);
	uint32_t n = fg_le32(b + off);
	b[off + FG_AUDIT_HDR_LEN] ^= 1;
	fg_put_le64(b + off + n - 8, XXH3_64bits(b + off, n - 8));
	FILE *f = fopen(path, "wb");
	fwrite(b, 1, len, f);
	fclose(f);
	struct cp_audit_log_cfg cfg = { .path = path };
	char err[1024];
	struct cp_audit_open_report rep;
	/* opens failed closed (docs/audit.md): damage named, nothing appended */
	assert_int_equal(cp_audit_log_open(&l, &cfg, &rep, err, sizeof(err)), 0);
	assert_true(rep.damaged);
	assert_non_null(strstr(err, "broken_chain"));
	assert_non_null(strstr(err, "seq 6"));
	int e = 0;
	assert_true(cp_audit_log_failed(l, &e));
	assert_int_equal(e, EBADMSG);
	cp_audit_log_free(l);
	/* and the file was not touched */
	assert_int_equal(file_size(path), len);
	free(b);
}

static void test_rotation(void **state)
{
	(void)state;
	struct seen s = { 0 };
	struct cp_audit_log *l = open_log(&s, 4096, 0, 0, NULL);
	uint64_t last = append_verdicts(l, 300);
	assert_int_equal(cp_audit_log_drain(l, 20000), 0);
	assert_true(cp_audit_log_is_durable(l, last));
	struct cp_audit_log_stats st;
	cp_audit_log_stats(l, &st);
	assert_true(st.rotations >= 5);
	assert_int_equal(st.file_index, st.rotations);
	cp_audit_log_free(l);
	uint32_t hi = fg_audit_file_highest_rotated(path);
	assert_int_equal(hi, st.rotations);

	/* the chain runs from genesis in .1 through every file to the current one */
	struct fg_audit_chain ch;
	uint64_t total = 0;
	for (uint32_t i = 1; i <= hi + 1; i++) {
		char name[400];
		fg_test_audit_file_name(path, i, hi, name, sizeof(name));
		size_t len;
		uint8_t *b = fg_test_slurp(name, &len);
		struct fg_audit_scan sc;
		assert_int_equal(fg_audit_verify(b, len, i == 1 ? NULL : &ch, &sc), 0);
		assert_true(sc.anchored);
		if (i < hi + 1)
			assert_true(len >= 4096 && len < 4096 + 2 * FG_AUDIT_REC_MAX);
		struct fg_audit_rec r;
		assert_true(fg_audit_decode(b, len, &r) > 0);
		assert_int_equal(r.type, i == 1 ? FG_AREC_GENESIS : FG_AREC_ROTATION);
		if (i > 1) {
			assert_int_equal(r.p.rotation.prev_file_index, i - 1);
			assert_int_equal(r.p.rotation.prev_file_records, total);
		}
		ch = sc.chain;
		total = sc.records;
		free(b);
	}
	uint64_t next = ch.next_seq;

	/* A crash between the rename and the new file: the current file is
	 * missing; open continues the chain from the highest rotated file. */
	char name[400];
	assert_int_equal(fg_audit_file_rotated_name(path, hi + 1, name, sizeof(name)), 0);
	assert_int_equal(rename(path, name), 0);
	struct cp_audit_open_report rep;
	l = open_log(&s, 4096, 0, 0, &rep);
	assert_true(rep.created);
	assert_int_equal(rep.next_seq, next + 1);
	cp_audit_log_free(l);
	size_t len;
	uint8_t *b = fg_test_slurp(path, &len);
	struct fg_audit_scan sc;
	assert_int_equal(fg_audit_verify(b, len, &ch, &sc), 0);
	assert_int_equal(sc.records, 1);
	free(b);
}

/* The glue's LINES summary stand-in: line 3 in the state the test last
 * recorded, every other line disabled. */
struct summary {
	unsigned calls;
	uint8_t line3;
};

static bool summary_cb(void *arg, unsigned *type, union fg_audit_payload *p)
{
	struct summary *sm = arg;
	sm->calls++;
	memset(p, 0, sizeof(*p));
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++) {
		p->lines.line[i].base = i == 3 ? sm->line3 : 0;
		p->lines.line[i].event = FG_AUDIT_UNKNOWN;
		p->lines.line[i].seq = FG_AUDIT_NO_SEQ;
		snprintf(p->lines.line[i].why, sizeof(p->lines.line[i].why), "summary %u", sm->calls);
	}
	*type = FG_AREC_LINES;
	return true;
}

static struct cp_audit_log *open_fold(struct summary *sm, struct fg_audit_fold *f, struct cp_audit_open_report *rep)
{
	struct cp_audit_log_cfg cfg = { .path = path, .rotate_bytes = 4096, .who = "test", .fold = f,
					.rotation_summary = summary_cb, .arg = sm };
	struct cp_audit_log *l;
	char err[512];
	int rc = cp_audit_log_open(&l, &cfg, rep, err, sizeof(err));
	if (rc < 0)
		fail_msg("open: %d %s", rc, err);
	return l;
}

static void append_line3(struct cp_audit_log *l, struct summary *sm, uint8_t base)
{
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	p.line.line = 3;
	p.line.from = p.line.base_from = sm->line3;
	p.line.to = p.line.base_to = base;
	p.line.event = 2;
	snprintf(p.line.why, sizeof(p.line.why), "to %u", base);
	uint64_t seq;
	assert_int_equal(cp_audit_log_append(l, FG_AREC_LINE, &p, &seq), 0);
	sm->line3 = base;
}

/* Every rotated-to file starts ROTATION, LINES; open folds the current file
 * alone when it holds a summary, and walks back to the file before it when
 * it does not (a crash between a rotation's rename and its first batch). */
static void test_rotation_line_summary(void **state)
{
	(void)state;
	struct summary sm = { .line3 = 1 };
	struct fg_audit_fold f;
	struct cp_audit_open_report rep;
	struct cp_audit_log *l = open_fold(&sm, &f, &rep);
	assert_true(f.complete); /* GENESIS */
	assert_false(fg_audit_fold_has_history(&f));
	for (unsigned k = 0; k < 12; k++) {
		append_line3(l, &sm, (uint8_t)(k % 3));
		append_verdicts(l, 20);
	}
	assert_int_equal(cp_audit_log_drain(l, 20000), 0);
	struct cp_audit_log_stats st;
	cp_audit_log_stats(l, &st);
	assert_true(st.rotations >= 3);
	assert_int_equal(sm.calls, st.rotations);
	cp_audit_log_free(l);
	uint32_t hi = fg_audit_file_highest_rotated(path);
	for (uint32_t i = 2; i <= hi + 1; i++) {
		char name[400];
		fg_test_audit_file_name(path, i, hi, name, sizeof(name));
		size_t len;
		uint8_t *b = fg_test_slurp(name, &len);
		struct fg_audit_rec r;
		ssize_t k = fg_audit_decode(b, len, &r);
		assert_true(k > 0);
		assert_int_equal(r.type, FG_AREC_ROTATION);
		assert_true(fg_audit_decode(b + k, len - (size_t)k, &r) > 0);
		assert_int_equal(r.type, FG_AREC_LINES);
		free(b);
	}
	uint8_t want = sm.line3;

	/* the current file alone: a damaged .1 is never read */
	char one[400];
	assert_int_equal(fg_audit_file_rotated_name(path, 1, one, sizeof(one)), 0);
	assert_int_equal(truncate(one, 10), 0);
	l = open_fold(&sm, &f, &rep);
	assert_true(f.complete);
	assert_false(rep.lines_unreadable);
	assert_true(f.line[3].base_known);
	assert_int_equal(f.line[3].base, want);
	assert_int_equal(f.line[0].base, 0);
	cp_audit_log_free(l);

	/* a crash between rename and the first batch: the file before is read */
	char next[400];
	assert_int_equal(fg_audit_file_rotated_name(path, hi + 1, next, sizeof(next)), 0);
	assert_int_equal(rename(path, next), 0);
	l = open_fold(&sm, &f, &rep);
	assert_true(rep.created);
	assert_true(f.complete);
	assert_false(rep.lines_unreadable);
	assert_int_equal(f.line[3].base, want);
	cp_audit_log_free(l);

	/* that file unreadable: the states cannot be read, and open says which */
	char name2[400];
	assert_int_equal(fg_audit_file_rotated_name(path, hi + 2, name2, sizeof(name2)), 0);
	assert_int_equal(rename(path, name2), 0);
	assert_int_equal(truncate(next, 10), 0);
	l = open_fold(&sm, &f, &rep);
	assert_true(rep.lines_unreadable);
	assert_non_null(strstr(rep.lines_why, next));
	assert_false(f.complete);
	cp_audit_log_free(l);
}

static void test_fail_closed(void **state)
{
	(void)state;
	struct seen s = { 0 };
	struct cp_audit_log *l = open_log(&s, 0, 0, 0, NULL);
	uint64_t ok = append_verdicts(l, 10);
	assert_int_equal(cp_audit_log_drain(l, 10000), 0);
	assert_int_equal(s.last, ok);
	cp_audit_log_inject_fsync_error(l, EIO);
	uint64_t bad = append_verdicts(l, 10);
	assert_int_equal(cp_audit_log_drain(l, 10000), -EIO);
	assert_int_equal(s.failed, EIO);
	assert_string_equal(s.what, "fdatasync");
	int err;
	assert_true(cp_audit_log_failed(l, &err));
	assert_int_equal(err, EIO);
	/* nothing after the last durable record is acknowledged, ever */
	assert_int_equal(s.last, ok);
	assert_false(cp_audit_log_is_durable(l, ok + 1));
	assert_false(cp_audit_log_is_durable(l, bad));
	assert_int_equal(cp_audit_log_durable_next(l), ok + 1);
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	uint64_t seq;
	assert_int_equal(cp_audit_log_append(l, FG_AREC_EPOCH, &p, &seq), -EIO);
	assert_int_equal(cp_audit_log_process(l), -EIO);
	assert_int_equal(cp_audit_log_flush(l), -EIO);
	struct cp_audit_log_stats st;
	cp_audit_log_stats(l, &st);
	assert_int_equal(st.fsyncs, st.batches); /* no retry */
	cp_audit_log_free(l);
	/* restart: the log verifies */
	l = open_log(&s, 0, 0, 0, NULL);
	cp_audit_log_free(l);
	verify_file(path, 0);
}

static void test_backlog_limit(void **state)
{
	(void)state;
	struct seen s = { 0 };
	struct cp_audit_log_cfg cfg = { .path = path, .group_commit_us = 1000000, .backlog_max = 4096,
					.batch_max = 8192, .on_durable = on_durable, .arg = &s };
	struct cp_audit_log *l;
	char err[256];
	assert_int_equal(cp_audit_log_open(&l, &cfg, NULL, err, sizeof(err)), 0);
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	p.verdict.diff.first_index = UINT32_MAX;
	uint64_t seq;
	int rc = 0;
	unsigned n = 0;
	while ((rc = cp_audit_log_append(l, FG_AREC_VERDICT, &p, &seq)) == 0 && n < 10000)
		n++;
	assert_int_equal(rc, -ENOBUFS);
	assert_true(n > 10 && n < 300);
	assert_int_equal(cp_audit_log_drain(l, 10000), 0);
	assert_int_equal(cp_audit_log_append(l, FG_AREC_VERDICT, &p, &seq), 0);
	cp_audit_log_free(l);
}

static void test_short_write_and_write_error(void **state)
{
	(void)state;
	struct seen s = { 0 };
	struct cp_audit_log *l = open_log(&s, 0, 0, 0, NULL);
	cp_audit_log_inject_write(l, 0, 100); /* the first batch's write stops after 100 bytes */
	uint64_t last = append_verdicts(l, 20);
	assert_int_equal(cp_audit_log_drain(l, 10000), 0);
	assert_true(cp_audit_log_is_durable(l, last));
	struct cp_audit_log_stats st;
	cp_audit_log_stats(l, &st);
	assert_int_equal(st.short_writes, 1);
	assert_int_equal(st.durable_records, 20);
	cp_audit_log_free(l);
	verify_file(path, 21);

	/* a write error fails closed like an fdatasync error */
	l = open_log(&s, 0, 0, 0, NULL);
	cp_audit_log_inject_write(l, ENOSPC, 0);
	uint64_t bad = append_verdicts(l, 3);
	assert_int_equal(cp_audit_log_drain(l, 10000), -EIO);
	assert_int_equal(s.failed, ENOSPC);
	assert_string_equal(s.what, "write");
	assert_false(cp_audit_log_is_durable(l, bad));
	assert_int_equal(cp_audit_log_durable_next(l), 21);
	cp_audit_log_free(l);
}

/* fg_audit_file_scan reads 4 MiB at a time: a 5 MB file, records across
 * the chunk boundary, damage there, and a torn tail give the same answers
 * as fg_audit_verify over the whole buffer. */
static void test_scan_fd_chunks(void **state)
{
	(void)state;
	size_t cap = 6u << 20, len = 0;
	uint8_t *b = malloc(cap);
	struct fg_audit_chain ch;
	fg_audit_chain_init(&ch);
	size_t cross = 0; /* offset of the record that straddles 4 MiB */
	for (unsigned i = 0; len < (5u << 20); i++) {
		union fg_audit_payload p;
		memset(&p, 0, sizeof(p));
		unsigned t = i == 0 ? FG_AREC_GENESIS : FG_AREC_PEER_AUTH;
		/* varying lengths so boundaries fall everywhere */
		memset(p.peer_auth.peer, 'a' + i % 26, i % 60);
		ssize_t k = fg_audit_encode(&ch, t, i, &p, b + len, cap - len);
		assert_true(k > 0);
		if (len < (4u << 20) && len + (size_t)k > (4u << 20))
			cross = len;
		len += (size_t)k;
	}
	assert_true(cross > 0);
	struct fg_audit_scan whole, chunked;
	uint64_t flen;
	for (int variant = 0; variant < 3; variant++) {
		size_t n = len;
		uint8_t saved = b[cross + 30];
		if (variant == 1)
			b[cross + 30] ^= 0x10; /* damage the straddling record */
		if (variant == 2)
			n = len - 50; /* torn tail */
		FILE *f = fopen(path, "wb");
		assert_int_equal(fwrite(b, 1, n, f), n);
		fclose(f);
		int wr = fg_audit_verify(b, n, NULL, &whole);
		int fd = open(path, O_RDONLY);
		int rc = fg_audit_file_scan(fd, NULL, &chunked, &flen, UINT64_MAX);
		close(fd);
		assert_int_equal(flen, n);
		assert_int_equal(rc, wr == 0 ? 0 : 1);
		assert_int_equal(chunked.reason, whole.reason);
		assert_int_equal(chunked.good_bytes, whole.good_bytes);
		assert_int_equal(chunked.records, whole.records);
		assert_int_equal(chunked.bad_seq, whole.bad_seq);
		assert_memory_equal(chunked.chain.head, whole.chain.head, FG_AUDIT_HASH_LEN);
		if (variant == 1) {
			assert_int_equal(chunked.reason, FG_AR_CHECKSUM);
			assert_int_equal(chunked.bad_offset, cross);
		}
		if (variant == 2)
			assert_int_equal(chunked.reason, FG_AR_TRUNCATED);
		b[cross + 30] = saved;
	}
	free(b);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_durable_reopen),
		cmocka_unit_test(test_group_commit_vs_per_record),
		cmocka_unit_test(test_recovery_torn_tail),
		cmocka_unit_test(test_refuses_tampering),
		cmocka_unit_test(test_rotation),
		cmocka_unit_test(test_rotation_line_summary),
		cmocka_unit_test(test_fail_closed),
		cmocka_unit_test(test_backlog_limit),
		cmocka_unit_test(test_short_write_and_write_error),
		cmocka_unit_test(test_scan_fd_chunks),
	};
	return fg_test_run_each(tests, setup, teardown); /* a fresh directory per test */
}

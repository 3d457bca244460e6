/* test_hostile_audit.c - audit recovery never deletes what
 * it cannot prove torn (control/audit/cp_audit_log.c, cp_audit_head.c,
 * cp_shadow.c).
 *
 * A flipped bit inside history (a valid record follows it), a flipped
 * GENESIS, a clean cut of acknowledged records (detected through the head
 * file) and an unreadable head file each open FAILED CLOSED with the damage
 * named (file, offset, seq), leave the file byte-identical, and refuse
 * appends; cp_audit_log_repair moves the damaged bytes aside (never deletes)
 * and the log continues; a real torn tail is still cut; the shadow glue
 * starts failed closed (lines held in shadow, audit_damaged alert, an
 * error-level message). On the main branch before this change recovery cut
 * the flipped record and everything after it, and opened a cut log as
 * intact. */
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

#include "cp_audit_log.h"
#include "cp_shadow.h"
#include "../lib/fg_test_file.h" /* whole-file reads and writes, rotated file names */
#include "fg/audit.h"
#include "fg/wire.h"
#include "../lib/fg_test_shadow.h" /* fg_test_shadow_new, fg_test_lines_all */

static char dir[64], path[96];

static int setup(void **state)
{
	(void)state;
	fg_test_tmpdir(dir, sizeof(dir), "/tmp/fg-hostile-audit-XXXXXX");
	snprintf(path, sizeof(path), "%s/fanogate.audit", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return fg_test_rmtree(dir);
}

static struct cp_audit_log *open_log(struct cp_audit_open_report *rep, char *err, size_t errlen)
{
	struct cp_audit_log_cfg cfg = { .path = path, .who = "hostile" };
	struct cp_audit_log *l;
	int rc = cp_audit_log_open(&l, &cfg, rep, err, errlen);
	if (rc < 0)
		fail_msg("open: %d %s", rc, err);
	return l;
}

/* A log of GENESIS + n verdicts, all durable; returns its bytes. */
static uint8_t *make_log(unsigned n, size_t *len)
{
	struct cp_audit_open_report rep;
	char err[1024];
	struct cp_audit_log *l = open_log(&rep, err, sizeof(err));
	for (unsigned i = 0; i < n; i++) {
		union fg_audit_payload p;
		memset(&p, 0, sizeof(p));
		p.verdict.token_seq = i;
		p.verdict.dst_layer = 3;
		p.verdict.lines = 0x2a;
		p.verdict.canon_kind = 0xFF;
		p.verdict.fp_jump = p.verdict.fp_canon = 0x1234u + i;
		uint64_t seq;
		assert_int_equal(cp_audit_log_append(l, FG_AREC_VERDICT, &p, &seq), 0);
	}
	assert_int_equal(cp_audit_log_drain(l, 30000), 0);
	cp_audit_log_free(l);
	return fg_test_slurp(path, len);
}

/* Offset of record k (0 = GENESIS). */
static size_t rec_off(const uint8_t *b, unsigned k)
{
	size_t off = 0;
	for (unsigned i = 0; i < k; i++)
		off += fg_le32(b + off);
	return off;
}

/* fg_audit_file_scan of the whole current file into *s: 0 when intact. */
static int scan_file(struct fg_audit_scan *s)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	uint64_t len;
	int rc = fg_audit_file_scan(fd, NULL, s, &len, UINT64_MAX);
	close(fd);
	assert_true(rc >= 0);
	return rc;
}

/* Scan the whole current file: number of intact records, 0 when intact. */
static int scan(uint64_t *records, int *reason)
{
	struct fg_audit_scan s;
	int rc = scan_file(&s);
	*records = s.records;
	*reason = s.reason;
	return rc;
}

/* Flip bits `bit` of byte `byte` of record k's payload and write b (len
 * bytes) back as the log; the record's offset. */
static size_t flip_and_write(uint8_t *b, size_t len, unsigned k, unsigned byte, uint8_t bit)
{
	size_t off = rec_off(b, k);
	b[off + FG_AUDIT_HDR_LEN + byte] ^= bit;
	fg_test_spit(path, b, len);
	return off;
}

/* The name of the log's head file, into name. */
static void head_name(char *name, size_t cap)
{
	snprintf(name, cap, "%s.head", path);
}

/* Append n bytes of b to the log file, as a crash mid-batch leaves them. */
static void append_raw(const uint8_t *b, size_t n)
{
	int fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, n), (ssize_t)n);
	close(fd);
}

/* The file a repair or a cut set aside holds exactly the n bytes want. */
static void expect_aside(const char *aside, const uint8_t *want, size_t n)
{
	assert_true(aside[0] != '\0');
	fg_test_expect_file(aside, want, n);
}

/* fanoctl audit repair on a damaged log: done (1), the file now holds
 * `records` intact records (the last one the RECOVERY record) and opens
 * clean. rep gets the repair's report. */
static void expect_repaired(struct cp_audit_open_report *rep, uint64_t records)
{
	char err[1024];
	uint64_t n;
	int reason;
	assert_int_equal(cp_audit_log_repair(path, rep, err, sizeof(err)), 1);
	assert_int_equal(scan(&n, &reason), 0);
	assert_int_equal(n, records);
	struct cp_audit_open_report rep2;
	struct cp_audit_log *l = open_log(&rep2, err, sizeof(err));
	if (rep2.damaged)
		fail_msg("after repair: %s", err);
	assert_false(cp_audit_log_failed(l, NULL));
	assert_int_equal(rep2.next_seq, records);
	cp_audit_log_free(l);
}

/* Open must come up failed closed, name the damage, refuse appends and
 * leave the file exactly as it was. */
static void expect_damaged(const uint8_t *orig, size_t len, uint64_t seq, uint64_t off, int reason)
{
	struct cp_audit_open_report rep;
	char err[1024], want[128];
	struct cp_audit_log *l = open_log(&rep, err, sizeof(err));
	int e = 0;
	assert_true(cp_audit_log_failed(l, &e));
	assert_int_equal(e, EBADMSG);
	assert_false(rep.cut);
	assert_true(rep.damaged);
	assert_int_equal(rep.damage_seq, seq);
	assert_int_equal(rep.damage_offset, off);
	assert_int_equal(rep.damage_reason, reason);
	snprintf(want, sizeof(want), "offset %" PRIu64 ", record seq %" PRIu64, off, seq);
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, path));
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	p.conflict.line = 1;
	uint64_t s;
	assert_int_equal(cp_audit_log_append(l, FG_AREC_CONFLICT, &p, &s), -EIO);
	cp_audit_log_free(l);
	fg_test_expect_file(path, orig, len);
	/* a second start changes nothing either */
	l = open_log(&rep, err, sizeof(err));
	assert_true(rep.damaged);
	cp_audit_log_free(l);
	fg_test_expect_file(path, orig, len);
}

/* Open cuts a torn tail at offset `at` (nothing damaged) and the log works. */
static struct cp_audit_log *open_expect_cut(struct cp_audit_open_report *rep, size_t at)
{
	char err[1024];
	struct cp_audit_log *l = open_log(rep, err, sizeof(err));
	assert_false(rep->damaged);
	assert_true(rep->cut);
	assert_int_equal(rep->recovery.cut_offset, at);
	assert_false(cp_audit_log_failed(l, NULL));
	return l;
}

/* The case: a bit flipped in record 721 of 921, well inside the
 * last MiB, with 200 intact records after it. */
static void test_flip_inside_history_is_not_cut(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = make_log(920, &len);
	size_t off = flip_and_write(b, len, 721, 3, 0x10);
	assert_true(len - off < FG_AUDIT_TAIL_MAX);
	expect_damaged(b, len, 721, off, FG_AR_CHECKSUM);

	/* repair moves [off, end) aside, byte for byte, and the log goes on */
	struct cp_audit_open_report rep;
	expect_repaired(&rep, 722); /* 0..720 and the RECOVERY record */
	assert_true(rep.repaired);
	expect_aside(rep.aside, b + off, len - off);
	free(b);
}

static void test_flip_in_genesis_is_not_cut(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = make_log(4, &len);
	assert_int_equal(flip_and_write(b, len, 0, 1, 1), 0);
	expect_damaged(b, len, 0, 0, FG_AR_CHECKSUM);
	free(b);
}

/* Same, with no head file (a log from before head files): the valid record
 * after the flip is what proves it is not a torn tail. */
static void test_flip_without_head_file(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = make_log(30, &len);
	char hname[400];
	head_name(hname, sizeof(hname));
	assert_int_equal(unlink(hname), 0);
	size_t off = flip_and_write(b, len, 20, 2, 4);
	expect_damaged(b, len, 20, off, FG_AR_CHECKSUM);
	free(b);
}

/* Records cut cleanly at a record boundary verify on their own: only the
 * pinned head shows they were acknowledged. */
static void test_clean_cut_is_detected(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = make_log(50, &len);
	size_t cut = rec_off(b, 48);
	assert_int_equal(truncate(path, (off_t)cut), 0);
	expect_damaged(b, cut, 48, cut, FG_AR_HEAD);
	struct cp_audit_open_report rep;
	expect_repaired(&rep, 49); /* 0..47 and the RECOVERY record */
	assert_int_equal(rep.aside[0], '\0'); /* nothing left to move */
	free(b);
}

static void test_bad_head_file_fails_closed(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = make_log(5, &len);
	char hname[400];
	head_name(hname, sizeof(hname));
	uint8_t junk[600];
	memset(junk, 0x5a, sizeof(junk));
	fg_test_spit(hname, junk, sizeof(junk));
	struct cp_audit_open_report rep;
	char err[1024];
	struct cp_audit_log *l = open_log(&rep, err, sizeof(err));
	assert_true(rep.damaged);
	assert_true(cp_audit_log_failed(l, NULL));
	assert_non_null(strstr(err, hname));
	cp_audit_log_free(l);
	free(b);
}

/* A real torn tail (half a record after the head, nothing valid after it)
 * is still cut, and recorded. */
static void test_torn_tail_still_cut(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = make_log(10, &len);
	size_t last = rec_off(b, 10);
	append_raw(b + last, (len - last) / 2);
	struct cp_audit_open_report rep;
	cp_audit_log_free(open_expect_cut(&rep, len));
	free(b);
}

/* A power loss during the last batch: its sectors persisted out of order
 * (a zeroed hole, then a whole record). It lies after the pinned head, so
 * it was never acknowledged: cut like a torn tail, but kept aside. */
static void test_unacked_hole_after_head_is_cut_and_kept(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = make_log(10, &len);
	struct fg_audit_scan sc;
	assert_int_equal(scan_file(&sc), 0);
	struct fg_audit_chain ch = sc.chain;
	uint8_t extra[2 * FG_AUDIT_REC_MAX];
	size_t n = 0;
	for (int i = 0; i < 2; i++) {
		union fg_audit_payload p;
		memset(&p, 0, sizeof(p));
		p.conflict.line = 3;
		p.conflict.token_seq = (uint32_t)i;
		ssize_t k = fg_audit_encode(&ch, FG_AREC_CONFLICT, 1, &p, extra + n, sizeof(extra) - n);
		assert_true(k > 0);
		if (i == 0)
			memset(extra, 0, (size_t)k); /* the hole */
		n += (size_t)k;
	}
	append_raw(extra, n);
	struct cp_audit_open_report rep;
	struct cp_audit_log *l = open_expect_cut(&rep, len);
	assert_int_equal(rep.recovery.cut_bytes, n);
	expect_aside(rep.aside, extra, n);
	cp_audit_log_free(l);
	free(b);
}

static void test_repair_refused_while_open(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = make_log(3, &len);
	struct cp_audit_open_report rep;
	char err[1024];
	struct cp_audit_log *l = open_log(&rep, err, sizeof(err));
	assert_int_equal(cp_audit_log_repair(path, &rep, err, sizeof(err)), -EBUSY);
	cp_audit_log_free(l);
	assert_int_equal(cp_audit_log_repair(path, &rep, err, sizeof(err)), 0);
	free(b);
}

/* ---- the daemon's glue: start failed closed ------------------------------- */

struct seen {
	int failed;
	unsigned errors, demoted;
	char last_err[1024];
};
static void h_failed(void *arg, int err) { ((struct seen *)arg)->failed = err; }
static void h_log(void *arg, const char *msg) { (void)arg; (void)msg; }
static void h_log_err(void *arg, const char *msg)
{
	struct seen *s = arg;
	s->errors++;
	snprintf(s->last_err, sizeof(s->last_err), "%s", msg);
}
static void h_changed(void *arg, const struct fg_line_change *chg, uint64_t seq)
{
	struct seen *s = arg;
	if (chg->from == FG_LINE_ACTIVE && chg->to == FG_LINE_SHADOW && seq == CP_SHADOW_NO_SEQ)
		s->demoted++;
}

static void test_shadow_starts_failed_closed(void **state)
{
	(void)state;
	size_t len;
	uint8_t *b = make_log(40, &len);
	size_t off = flip_and_write(b, len, 30, 0, 0x80);

	struct fg_config cfg;
	fg_config_default(&cfg);
	cfg.hidden = 64;
	cfg.max_seq_len = 1;
	cfg.layers = 28;
	cfg.slot_capacity = 64;
	cfg.alert_min_interval_ms = 0;
	snprintf(cfg.audit_path, sizeof(cfg.audit_path), "%s", path);
	snprintf(cfg.alert_command, sizeof(cfg.alert_command), "echo \"$FG_EVENT $FG_REASON\" > %s/alert", dir);
	struct fg_line_policy pol = { .auto_promote = true, .promote_count = 1, .promote_ns = 1 };
	cfg.policy = pol;
	for (unsigned i = 0; i < FG_LINES; i++)
		cfg.line_initial[i] = FG_LINE_ACTIVE; /* what a healthy log without line history would start */
	struct fg_lines lines;
	fg_test_lines_all(&lines, FG_LINE_ACTIVE, &pol);
	struct seen s = { 0 };
	struct cp_shadow_hooks hooks = { .on_failed = h_failed, .on_lines_changed = h_changed, .log = h_log,
					 .log_err = h_log_err, .arg = &s };
	struct cp_shadow *sh;
	char err[256];
	int rc = cp_shadow_new(&sh, &cfg, &lines, &hooks, NULL, err, sizeof(err));
	if (rc < 0)
		fail_msg("cp_shadow_new: %d %s", rc, err);
	assert_true(cp_shadow_failed(sh));
	assert_int_equal(s.failed, EBADMSG);
	assert_true(s.errors >= 1);
	char want[128];
	snprintf(want, sizeof(want), "offset %zu, record seq 30", off);
	assert_non_null(strstr(s.last_err, want));
	assert_non_null(strstr(s.last_err, path));
	/* held in shadow from the first moment: never active, so no demotion */
	assert_int_equal(s.demoted, 0);
	struct fg_audit_line_entry start[FG_LINES];
	uint64_t start_seq;
	cp_shadow_start_lines(sh, start, &start_seq);
	assert_int_equal(start_seq, CP_SHADOW_NO_SEQ); /* nothing can be appended */
	for (unsigned i = 0; i < FG_LINES; i++) {
		assert_int_equal(lines.line[i].base, FG_LINE_SHADOW);
		assert_int_equal(start[i].source, FG_LSRC_DAMAGED);
	}
	struct cp_shadow_stats st;
	cp_shadow_stats(sh, &st);
	assert_true(st.damaged);
	assert_int_equal(st.alert.raised, 1);
	/* an operator cannot promote a line while the log cannot record it */
	uint64_t seq;
	assert_int_equal(cp_shadow_line_op(sh, 1, FG_LEV_OP_ACTIVE, 0, 0, "test", "try", 1, &seq), -EIO);
	cp_shadow_free(sh);
	fg_test_expect_file(path, b, len);
	free(b);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flip_inside_history_is_not_cut),
		cmocka_unit_test(test_flip_in_genesis_is_not_cut),
		cmocka_unit_test(test_flip_without_head_file),
		cmocka_unit_test(test_clean_cut_is_detected),
		cmocka_unit_test(test_bad_head_file_fails_closed),
		cmocka_unit_test(test_torn_tail_still_cut),
		cmocka_unit_test(test_unacked_hole_after_head_is_cut_and_kept),
		cmocka_unit_test(test_repair_refused_while_open),
		cmocka_unit_test(test_shadow_starts_failed_closed),
	};
	return fg_test_run_each(tests, setup, teardown); /* a fresh directory per test */
}

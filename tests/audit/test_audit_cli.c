/* test_audit_cli.c - `fanoctl audit verify|tail` (fanoctl_audit_cli, in process
 * with stdout captured): a good log across rotated files, each kind of
 * tampering (flip a byte, drop a record, reorder two, truncate) named by its
 * first bad record's file, offset, seq and reason, wrong file order, usage
 * errors, and tail's human and JSON output (operator text: cut on UTF-8
 * boundaries, valid JSON, escaped for a terminal). */
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
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "cp_audit_log.h"
#include "fanoctl_audit.h"
#include "../lib/fg_test_file.h" /* whole-file reads and writes, rotated file names */
#include "fg/audit.h"
#include "fg/text.h"
#include "fg/wire.h"

static char dir[256], path[300], out_path[300];
static char out[1 << 16];

static int setup(void **state)
{
	(void)state;
	fg_test_tmpdir(dir, sizeof(dir), "/tmp/fg-test-cli-XXXXXX");
	snprintf(path, sizeof(path), "%s/fanogate.audit", dir);
	snprintf(out_path, sizeof(out_path), "%s/out.txt", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return fg_test_rmtree(dir);
}

/* Run fanoctl_audit_cli with stdout into a file; returns its exit code, text in out. */
static int cli(int argc, ...)
{
	char *argv[16];
	va_list ap;
	va_start(ap, argc);
	for (int i = 0; i < argc; i++)
		argv[i] = va_arg(ap, char *);
	va_end(ap);
	argv[argc] = NULL;
	fflush(stdout);
	int saved = dup(1);
	int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0 && saved >= 0);
	dup2(fd, 1);
	close(fd);
	int rc = fanoctl_audit_cli(argc, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	FILE *f = fopen(out_path, "r");
	size_t n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	fclose(f);
	return rc;
}

/* A log with rotation: genesis, verdicts, one line change, rotated at 2 KiB. */
static unsigned make_log(unsigned n)
{
	struct cp_audit_log_cfg cfg = { .path = path, .rotate_bytes = 2048 };
	struct cp_audit_log *l;
	char err[256];
	assert_int_equal(cp_audit_log_open(&l, &cfg, NULL, err, sizeof(err)), 0);
	uint64_t seq;
	for (unsigned i = 0; i < n; i++) {
		union fg_audit_payload p;
		memset(&p, 0, sizeof(p));
		if (i == 3) {
			p.line.line = 1;
			p.line.from = 1;
			p.line.to = 2;
			p.line.event = 3;
			p.line.uid = 1000;
			p.line.pid = 99;
			strcpy(p.line.origin, "operator socket");
			strcpy(p.line.why, "say \"hi\"\n");
			assert_int_equal(cp_audit_log_append(l, FG_AREC_LINE, &p, &seq), 0);
			continue;
		}
		p.verdict.token_seq = 100 + i;
		p.verdict.dst_layer = 2;
		p.verdict.lines = 0x2A;
		p.verdict.kind = i == 5 ? FG_VERDICT_DIVERGENT : FG_VERDICT_CLEAN;
		p.verdict.has_diff = 1;
		p.verdict.diff.n_elems = 1536;
		p.verdict.diff.count = i == 5 ? 2 : 0;
		p.verdict.diff.max_ulp = i == 5 ? 9 : 0;
		p.verdict.diff.first_index = i == 5 ? 4 : UINT32_MAX;
		assert_int_equal(cp_audit_log_append(l, FG_AREC_VERDICT, &p, &seq), 0);
	}
	assert_int_equal(cp_audit_log_drain(l, 10000), 0);
	cp_audit_log_free(l);
	return fg_audit_file_highest_rotated(path);
}

static size_t rec_off(const uint8_t *b, unsigned k)
{
	size_t off = 0;
	for (unsigned i = 0; i < k; i++)
		off += fg_le32(b + off);
	return off;
}

static void test_verify_good_across_files(void **state)
{
	(void)state;
	unsigned hi = make_log(40);
	assert_true(hi >= 1);
	char f1[320], f2[320];
	snprintf(f1, sizeof(f1), "%s.1", path);
	snprintf(f2, sizeof(f2), "%s.2", path);
	char *files[8];
	int nf = 0;
	files[nf++] = "verify";
	files[nf++] = f1;
	if (hi >= 2)
		files[nf++] = f2;
	assert_true(hi <= 2);
	files[nf++] = path;
	int rc = nf == 3 ? cli(3, files[0], files[1], files[2]) : cli(4, files[0], files[1], files[2], files[3]);
	assert_int_equal(rc, 0);
	char want[64];
	snprintf(want, sizeof(want), "OK: %u records in %d file(s)", 41 + hi, nf - 1);
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "verified from genesis"));
	/* the current file alone: good, but not anchored */
	assert_int_equal(cli(2, "verify", path), 0);
	assert_non_null(strstr(out, "taken on trust"));
	assert_non_null(strstr(out, "hint: to verify from genesis pass the rotated files first"));
	/* files in the wrong order: the second does not continue the first */
	assert_int_equal(cli(3, "verify", path, f1), 1);
	assert_non_null(strstr(out, "BAD"));
	assert_non_null(strstr(out, "bad_start"));
	/* usage and I/O errors */
	assert_int_equal(cli(1, "verify"), 2);
	assert_int_equal(cli(2, "verify", "/nonexistent/x"), 2);
	assert_int_equal(cli(1, "frobnicate"), 2);
}

static void expect_bad_at(const char *file, size_t off, uint64_t seq, const char *reason)
{
	assert_int_equal(cli(2, "verify", file), 1);
	char want[512];
	snprintf(want, sizeof(want), "BAD %s: first bad record at offset %zu, seq %" PRIu64 ": %s", file, off, seq,
		 reason);
	if (!strstr(out, want))
		fail_msg("wanted \"%s\" in \"%s\"", want, out);
}

static void test_verify_names_tampering(void **state)
{
	(void)state;
	assert_int_equal(make_log(12), 0); /* one file */
	const char *f1 = path;
	size_t len;
	uint8_t *orig = fg_test_slurp(f1, &len);
	uint8_t *b = malloc(len);
	size_t o4 = rec_off(orig, 4), o5 = rec_off(orig, 5), o6 = rec_off(orig, 6);

	memcpy(b, orig, len); /* flip a byte in record 4 */
	b[o4 + FG_AUDIT_HDR_LEN + 1] ^= 0x40;
	fg_test_spit(f1, b, len);
	expect_bad_at(f1, o4, 4, "bad_checksum");

	memcpy(b, orig, o4); /* drop record 4 */
	memcpy(b + o4, orig + o5, len - o5);
	fg_test_spit(f1, b, len - (o5 - o4));
	expect_bad_at(f1, o4, 5, "bad_sequence");

	memcpy(b, orig, len); /* reorder records 4 and 5 */
	memcpy(b + o4, orig + o5, o6 - o5);
	memcpy(b + o4 + (o6 - o5), orig + o4, o5 - o4);
	fg_test_spit(f1, b, len);
	expect_bad_at(f1, o4, 5, "bad_sequence");

	fg_test_spit(f1, orig, o5 + 7); /* truncate inside record 5 */
	expect_bad_at(f1, o5, 5, "truncated");
	assert_non_null(strstr(out, "torn tail"));

	fg_test_spit(f1, orig, len);
	assert_int_equal(cli(2, "verify", f1), 0);
	free(b);
	free(orig);
}

static void test_tail(void **state)
{
	(void)state;
	make_log(40);
	char f1[320];
	snprintf(f1, sizeof(f1), "%s.1", path);
	/* human: the last 3 records of .1 */
	assert_int_equal(cli(4, "tail", "-n", "3", f1), 0);
	unsigned lines = 0;
	for (char *p = out; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 3);
	/* everything of .1, JSON, one object per line */
	assert_int_equal(cli(5, "tail", "--json", "-n", "1000", f1), 0);
	assert_non_null(strstr(out, "{\"seq\":0,"));
	assert_non_null(strstr(out, "\"type\":\"genesis\""));
	assert_non_null(strstr(out, "\"type\":\"line\""));
	assert_non_null(strstr(out, "\"why\":\"say \\\"hi\\\"\\n\""));
	assert_non_null(strstr(out, "\"verdict\":\"divergent\""));
	assert_non_null(strstr(out, "\"max_ulp\":9"));
	assert_non_null(strstr(out, "\"first_index\":4"));
	for (char *p = out; *p;) {
		char *nl = strchr(p, '\n');
		assert_non_null(nl);
		assert_true(p[0] == '{' && nl[-1] == '}');
		p = nl + 1;
	}
	assert_int_equal(cli(4, "tail", "-n", "1000", path), 0);
	assert_non_null(strstr(out, "rotation"));
	assert_int_equal(cli(3, "tail", "-n", "x"), 2);
	assert_int_equal(cli(1, "tail"), 2);
}

/* Operator text in records: a reason of 201 "é" cut to the field on a
 * character boundary; a record holding a byte cut inside a sequence (an
 * older writer's) and terminal escape sequences. JSON is valid (jansson
 * parses every line back) and the human output carries no control byte. */
static void test_tail_operator_text(void **state)
{
	(void)state;
	struct cp_audit_log_cfg cfg = { .path = path, .rotate_bytes = 0 };
	struct cp_audit_log *l;
	char err[256], reason[2 * 201 + 1] = "";
	for (int i = 0; i < 201; i++)
		strcat(reason, "\xC3\xA9");
	assert_int_equal(cp_audit_log_open(&l, &cfg, NULL, err, sizeof(err)), 0);
	uint64_t seq;
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	p.line.line = 2;
	strcpy(p.line.origin, "operator socket");
	size_t n = fg_text_copy(p.line.why, sizeof(p.line.why), reason);
	assert_int_equal(n, sizeof(p.line.why) - 2); /* 126: 63 whole "é", never half of one */
	assert_int_equal(cp_audit_log_append(l, FG_AREC_LINE, &p, &seq), 0);
	memset(&p, 0, sizeof(p));
	strcpy(p.epoch.why, "cut \xC3"); /* half a character, as an old writer left it */
	assert_int_equal(cp_audit_log_append(l, FG_AREC_EPOCH, &p, &seq), 0);
	memset(&p, 0, sizeof(p));
	strcpy(p.peer_auth.peer, "10.0.0.1:5\x1b]0;owned\x07");
	strcpy(p.peer_auth.reason, "\x1b[31mred\x1b[0m \\ \xC2\x9B");
	assert_int_equal(cp_audit_log_append(l, FG_AREC_PEER_AUTH, &p, &seq), 0);
	assert_int_equal(cp_audit_log_drain(l, 10000), 0);
	cp_audit_log_free(l);

	assert_int_equal(cli(5, "tail", "--json", "-n", "10", path), 0);
	unsigned objs = 0, seen = 0;
	for (char *q = out; *q;) {
		char *nl = strchr(q, '\n');
		assert_non_null(nl);
		*nl = '\0';
		json_error_t je;
		json_t *j = json_loads(q, 0, &je);
		if (!j)
			fail_msg("not JSON (%s): %s", je.text, q);
		const char *type = json_string_value(json_object_get(j, "type"));
		if (!strcmp(type, "line")) {
			const char *why = json_string_value(json_object_get(j, "why"));
			assert_int_equal(strlen(why), 126);
			assert_memory_equal(why, reason, 126);
			seen |= 1;
		} else if (!strcmp(type, "epoch")) {
			assert_string_equal(json_string_value(json_object_get(j, "why")), "cut \xEF\xBF\xBD");
			seen |= 2;
		} else if (!strcmp(type, "peer_auth")) {
			assert_string_equal(json_string_value(json_object_get(j, "reason")), "\x1b[31mred\x1b[0m \\ \xC2\x9B");
			seen |= 4;
		}
		json_decref(j);
		objs++;
		q = nl + 1;
	}
	assert_true(objs >= 4); /* genesis + the three */
	assert_int_equal(seen, 7);

	assert_int_equal(cli(4, "tail", "-n", "10", path), 0);
	for (const char *q = out; *q; q++)
		assert_true((unsigned char)*q >= 0x20 || *q == '\n');
	assert_non_null(strstr(out, "peer 10.0.0.1:5\\x1b]0;owned\\x07: \\x1b[31mred\\x1b[0m \\\\ \\xc2\\x9b"));
	assert_non_null(strstr(out, "cut \\xc3"));
	assert_null(strstr(out, "\xC2\x9B"));
}

/* Read from fd until `lines` newlines arrived or 10 s passed. */
static size_t read_lines(int fd, char *buf, size_t cap, size_t have, unsigned lines)
{
	for (int waited = 0; waited < 10000;) {
		unsigned nl = 0;
		for (size_t i = 0; i < have; i++)
			nl += buf[i] == '\n';
		if (nl >= lines)
			break;
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 100) == 0) {
			waited += 100;
			continue;
		}
		ssize_t n = read(fd, buf + have, cap - 1 - have);
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	buf[have] = '\0';
	return have;
}

static void test_tail_follow(void **state)
{
	(void)state;
	struct cp_audit_log_cfg cfg = { .path = path, .rotate_bytes = 1024 };
	struct cp_audit_log *l;
	char err[256];
	assert_int_equal(cp_audit_log_open(&l, &cfg, NULL, err, sizeof(err)), 0);
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	fflush(stdout);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		char *argv[] = { "tail", "--json", "-n", "1", "-f", path, NULL };
		_exit(fanoctl_audit_cli(6, argv));
	}
	close(pfd[1]);
	static char buf[1 << 16];
	size_t have = read_lines(pfd[0], buf, sizeof(buf), 0, 1);
	assert_non_null(strstr(buf, "\"type\":\"genesis\""));
	/* 12 verdicts of 128 bytes: the file rotates at 1 KiB; tail follows the
	 * new file (new inode) and shows its rotation record and the rest. */
	uint64_t seq = 0;
	for (unsigned i = 0; i < 12; i++) {
		union fg_audit_payload p;
		memset(&p, 0, sizeof(p));
		p.verdict.token_seq = 500 + i;
		p.verdict.diff.first_index = UINT32_MAX;
		assert_int_equal(cp_audit_log_append(l, FG_AREC_VERDICT, &p, &seq), 0);
		assert_int_equal(cp_audit_log_drain(l, 10000), 0);
		struct timespec ts = { 0, 30 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	/* genesis + 12 verdicts + at least one rotation record */
	have = read_lines(pfd[0], buf, sizeof(buf), have, 14);
	assert_non_null(strstr(buf, "\"type\":\"rotation\""));
	for (unsigned i = 0; i < 12; i++) {
		char tok[64];
		snprintf(tok, sizeof(tok), "\"token_seq\":%u,", 500 + i);
		if (!strstr(buf, tok))
			fail_msg("tail -f missed %s in:\n%s", tok, buf);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pfd[0]);
	cp_audit_log_free(l);
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verify_good_across_files),
		cmocka_unit_test(test_verify_names_tampering),
		cmocka_unit_test(test_tail),
		cmocka_unit_test(test_tail_operator_text),
		cmocka_unit_test(test_tail_follow),
	};
	return fg_test_run_each(tests, setup, teardown); /* a fresh directory per test */
}

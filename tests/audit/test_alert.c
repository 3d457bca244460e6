/* test_alert.c - the alert runner (control/audit/cp_alert.c) with real
 * children: environment of the command, per-kind rate limit with a fake
 * clock and FG_SUPPRESSED, control characters in peer strings, the page's
 * own fields (host, node, audit path, one-line summary, a digest-only
 * divergence that claims no element count), a failing command counted, a
 * hung command killed after its timeout and reaped through the pollable
 * fd, and no command at all. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "cp_alert.h"
#include "../lib/fg_test_file.h" /* fg_test_tmpdir, fg_test_rmtree, fg_test_run_each */

#define MS 1000000ull

static char dir[40];

static int setup(void **state)
{
	(void)state;
	fg_test_tmpdir(dir, sizeof(dir), "/tmp/fg-test-alert-XXXXXX");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	return fg_test_rmtree(dir);
}

static void quiet(void *arg, const char *msg)
{
	(void)arg;
	fprintf(stderr, "# alert log: %s\n", msg);
}

static uint64_t mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Reap until nothing runs (at most 10 s), polling the runner's fd. */
static void reap_all(struct cp_alert *a, uint64_t now)
{
	struct cp_alert_stats st;
	for (int i = 0; i < 1000; i++) {
		cp_alert_stats(a, &st);
		if (!st.running)
			return;
		struct pollfd p = { .fd = cp_alert_fd(a), .events = POLLIN };
		(void)poll(&p, 1, 10);
		(void)cp_alert_process(a, now);
	}
	fail_msg("alert children still running after 10 s");
}

static char *slurp(const char *name)
{
	char path[200];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	static char buf[4096];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return buf;
}

static void test_env_and_rate_limit_per_kind(void **state)
{
	(void)state;
	char cmd[256];
	snprintf(cmd, sizeof(cmd),
		 "cd %s && env | grep ^FG_ | sort > t.$$ && mv t.$$ \"alert.$FG_EVENT.${FG_TOKEN:-none}\"", dir);
	struct cp_alert_cfg cfg = { .command = cmd, .min_interval_ms = 1000, .log = quiet };
	struct cp_alert *a;
	assert_int_equal(cp_alert_new(&a, &cfg), 0);

	struct fg_audit_verdict v = { .token_seq = 1, .dst_layer = 4, .lines = 0x2A, .kind = FG_VERDICT_DIVERGENT,
				      .has_diff = 1, .fp_jump = 0x0123456789abcdefull, .fp_canon = 0xfedcba9876543210ull,
				      .diff = { .n_elems = 16, .count = 2, .nan_count = 1, .max_abs = 0.5,
						.max_ulp = 12345, .first_index = 3 } };
	struct cp_alert_event ev;
	cp_alert_event_init(&ev, "divergence");
	ev.line = 1;
	ev.lines = 0x2A;
	ev.token_seq = 1;
	ev.dst_layer = 4;
	ev.epoch = 9;
	ev.audit_seq = 77;
	ev.verdict = &v;
	uint64_t t0 = 1000 * MS;
	assert_int_equal(cp_alert_raise(a, &ev, t0), 1);
	ev.token_seq = 2;
	assert_int_equal(cp_alert_raise(a, &ev, t0 + 500 * MS), 0);  /* same kind, too soon */
	ev.token_seq = 3;
	assert_int_equal(cp_alert_raise(a, &ev, t0 + 900 * MS), 0);

	struct cp_alert_event pe;
	cp_alert_event_init(&pe, "peer_auth_failure");
	pe.peer = "10.0.0.9:4444\nFG_FAKE=1";
	pe.reason = "bad_token";
	assert_int_equal(cp_alert_raise(a, &pe, t0 + 600 * MS), 1);   /* another kind: not hidden */
	ev.token_seq = 4;
	assert_int_equal(cp_alert_raise(a, &ev, t0 + 1001 * MS), 1);  /* interval over */
	reap_all(a, t0 + 1002 * MS);

	char *e = slurp("alert.divergence.1");
	assert_non_null(e);
	const char *want[] = { "FG_EVENT=divergence\n", "FG_LINE=1\n", "FG_LINES=1,3,5\n", "FG_TOKEN=1\n",
			       "FG_LAYER=4\n", "FG_EPOCH=9\n", "FG_AUDIT_SEQ=77\n", "FG_VERDICT=divergent\n",
			       "FG_FP_JUMP=0123456789abcdef\n", "FG_FP_CANON=fedcba9876543210\n",
			       "FG_DIFF_COUNT=2\n", "FG_DIFF_NAN=1\n", "FG_DIFF_MAX_ABS=0.5\n",
			       "FG_DIFF_MAX_ULP=12345\n", "FG_DIFF_FIRST=3\n", "FG_SHAPE_MISMATCH=0\n",
			       "FG_SUPPRESSED=0\n", "FG_LINE_TRIPLE=(1,4,5)\n",
			       "FG_DIFF_SUMMARY=2 of 16 elements differ, first at 3, max 12345 ulp (abs 0.5), 1 with NaN\n" };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(e, want[i]))
			fail_msg("missing %s in\n%s", want[i], e);
	e = slurp("alert.divergence.4");
	assert_non_null(e);
	assert_non_null(strstr(e, "FG_SUPPRESSED=2\n"));
	assert_null(slurp("alert.divergence.2"));
	assert_null(slurp("alert.divergence.3"));
	e = slurp("alert.peer_auth_failure.none");
	assert_non_null(e);
	assert_non_null(strstr(e, "FG_PEER=10.0.0.9:4444?FG_FAKE=1\n"));
	assert_null(strstr(e, "\nFG_FAKE=1"));
	assert_non_null(strstr(e, "FG_REASON=bad_token\n"));

	struct cp_alert_stats st;
	cp_alert_stats(a, &st);
	assert_int_equal(st.raised, 5);
	assert_int_equal(st.spawned, 3);
	assert_int_equal(st.suppressed, 2);
	assert_int_equal(st.reaped, 3);
	assert_int_equal(st.exit_failed, 0);
	cp_alert_free(a);
}

/* What an on-call reads: who (host, node), where (line and its triple,
 * token, layer), what (fingerprints, the diff or "digest only"), the record
 * (audit path and seq) and one summary line holding all of it. */
static void test_page_fields(void **state)
{
	(void)state;
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "cd %s && env | grep ^FG_ | sort > t.$$ && mv t.$$ \"page.${FG_TOKEN:-none}\"", dir);
	struct cp_alert_cfg cfg = { .command = cmd, .host = "gate-7", .node = "node-a",
				    .audit_path = "/var/lib/fanogate/audit.log", .log = quiet };
	struct cp_alert *a;
	assert_int_equal(cp_alert_new(&a, &cfg), 0);

	/* a divergence judged on a digest report: no element figures at all */
	struct fg_audit_verdict dig = { .token_seq = 42, .dst_layer = 3, .lines = 0x2A, .kind = FG_VERDICT_DIVERGENT,
					.canon_kind = 1 /* digest */, .has_diff = 0, .fp_jump = 0x1111222233334444ull,
					.fp_canon = 0x5555666677778888ull, .diff = { .first_index = UINT32_MAX } };
	struct cp_alert_event ev;
	cp_alert_event_init(&ev, "divergence");
	ev.line = 1;
	ev.lines = 0x2A;
	ev.token_seq = 42;
	ev.dst_layer = 3;
	ev.epoch = 2;
	ev.audit_seq = 1234;
	ev.verdict = &dig;
	ev.reason = "line 1 active -> shadow";
	assert_int_equal(cp_alert_raise(a, &ev, 1000 * MS), 1);

	/* an audit failure: no line, no verdict, no record */
	struct cp_alert_event fe;
	cp_alert_event_init(&fe, "audit_failed");
	fe.reason = "audit log write failed: No space left on device";
	assert_int_equal(cp_alert_raise(a, &fe, 1000 * MS), 1);
	reap_all(a, 1001 * MS);

	char *e = slurp("page.42");
	assert_non_null(e);
	const char *want[] = {
		"FG_HOST=gate-7\n", "FG_NODE=node-a\n", "FG_LINE=1\n", "FG_LINE_TRIPLE=(1,4,5)\n", "FG_TOKEN=42\n",
		"FG_LAYER=3\n", "FG_FP_JUMP=1111222233334444\n", "FG_FP_CANON=5555666677778888\n",
		"FG_DIFF_SUMMARY=digest only: element difference unknown\n",
		"FG_AUDIT_PATH=/var/lib/fanogate/audit.log\n", "FG_AUDIT_SEQ=1234\n",
		"FG_SUMMARY=fanogate gate-7 node node-a: divergence line 1 (1,4,5) token 42 layer 3 epoch 2: jump "
		"1111222233334444 != canonical 5555666677778888, digest only: element difference unknown; line 1 "
		"active -> shadow; audit record 1234 in /var/lib/fanogate/audit.log\n",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(e, want[i]))
			fail_msg("missing %s in\n%s", want[i], e);
	/* nothing may read as "no elements differ" */
	const char *never[] = { "FG_DIFF_COUNT=", "FG_DIFF_MAX_ULP=", "FG_DIFF_MAX_ABS=", "FG_DIFF_NAN=",
				"FG_DIFF_FIRST=" };
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++)
		if (strstr(e, never[i]))
			fail_msg("digest-only page carries %s:\n%s", never[i], e);
	/* one line: the summary has no newline of its own */
	const char *s = strstr(e, "FG_SUMMARY=");
	assert_non_null(s);
	assert_ptr_equal(strchr(s, '\n'), strstr(s, "\nFG_"));

	e = slurp("page.none");
	assert_non_null(e);
	assert_non_null(strstr(e, "FG_SUMMARY=fanogate gate-7 node node-a: audit_failed; audit log write failed: No "
				  "space left on device; not recorded in the audit log\n"));
	assert_null(strstr(e, "FG_LINE="));
	assert_null(strstr(e, "FG_AUDIT_SEQ="));
	cp_alert_free(a);

	/* without [cluster] there is no FG_NODE; the host defaults to gethostname() */
	struct cp_alert_cfg solo = { .command = cmd, .log = quiet };
	assert_int_equal(cp_alert_new(&a, &solo), 0);
	ev.token_seq = 43;
	assert_int_equal(cp_alert_raise(a, &ev, 1000 * MS), 1);
	reap_all(a, 1001 * MS);
	e = slurp("page.43");
	assert_non_null(e);
	assert_null(strstr(e, "FG_NODE="));
	assert_null(strstr(e, "FG_AUDIT_PATH="));
	char host[256] = "", want_host[300];
	assert_int_equal(gethostname(host, sizeof(host) - 1), 0);
	snprintf(want_host, sizeof(want_host), "FG_HOST=%s\n", host);
	assert_non_null(strstr(e, want_host));
	cp_alert_free(a);
}

static void test_failure_and_timeout(void **state)
{
	(void)state;
	struct cp_alert_cfg cfg = { .command = "exit 3", .log = quiet };
	struct cp_alert *a;
	assert_int_equal(cp_alert_new(&a, &cfg), 0);
	struct cp_alert_event ev;
	cp_alert_event_init(&ev, "test");
	assert_int_equal(cp_alert_raise(a, &ev, mono()), 1);
	reap_all(a, mono());
	struct cp_alert_stats st;
	cp_alert_stats(a, &st);
	assert_int_equal(st.exit_failed, 1);
	assert_int_equal(st.killed, 0);
	cp_alert_free(a);

	/* a hung command is killed after timeout_ms (the clock is ours) */
	struct cp_alert_cfg hung = { .command = "sleep 30", .timeout_ms = 100, .log = quiet };
	assert_int_equal(cp_alert_new(&a, &hung), 0);
	uint64_t t = mono();
	assert_int_equal(cp_alert_raise(a, &ev, t), 1);
	assert_int_equal(cp_alert_process(a, t + 50 * MS), 0);
	cp_alert_stats(a, &st);
	assert_int_equal(st.running, 1);
	assert_int_equal(st.killed, 0);
	(void)cp_alert_process(a, t + 200 * MS);
	cp_alert_stats(a, &st);
	assert_int_equal(st.killed, 1);
	reap_all(a, t + 300 * MS);
	cp_alert_stats(a, &st);
	assert_int_equal(st.reaped, 1);
	assert_int_equal(st.exit_failed, 1);
	cp_alert_free(a);
}

static void test_no_command_and_cap(void **state)
{
	(void)state;
	struct cp_alert_cfg none = { .command = "", .log = quiet };
	struct cp_alert *a;
	assert_int_equal(cp_alert_new(&a, &none), 0);
	struct cp_alert_event ev;
	cp_alert_event_init(&ev, "divergence");
	assert_int_equal(cp_alert_raise(a, &ev, 1), 0);
	struct cp_alert_stats st;
	cp_alert_stats(a, &st);
	assert_int_equal(st.suppressed, 1);
	assert_int_equal(st.spawned, 0);
	cp_alert_free(a);

	/* at most max_running at once, whatever the kinds */
	struct cp_alert_cfg cap = { .command = "sleep 5", .max_running = 2, .log = quiet };
	assert_int_equal(cp_alert_new(&a, &cap), 0);
	const char *kinds[] = { "a", "b", "c" };
	int spawned = 0;
	for (int i = 0; i < 3; i++) {
		cp_alert_event_init(&ev, kinds[i]);
		spawned += cp_alert_raise(a, &ev, mono());
	}
	assert_int_equal(spawned, 2);
	cp_alert_stats(a, &st);
	assert_int_equal(st.running, 2);
	cp_alert_free(a); /* kills and reaps what still runs, bounded */
}

int main(void)
{
	struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env_and_rate_limit_per_kind),
		cmocka_unit_test(test_page_fields),
		cmocka_unit_test(test_failure_and_timeout),
		cmocka_unit_test(test_no_command_and_cap),
	};
	return fg_test_run_each(tests, setup, teardown); /* a fresh directory per test */
}

/* test_alert.c - the alert runner (control/audit/cp_alert.c) with real
 * children: environment of the command, per-kind rate limit with a fake
 * clock and FG_SUPPRESSED, control characters in peer strings, a failing
 * command counted, a hung command killed after its timeout and reaped
 * through the pollable fd, and no command at all. */
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
				      .fp_jump = 0x0123456789abcdefull, .fp_canon = 0xfedcba9876543210ull,
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
			       "FG_DIFF_MAX_ULP=12345\n", "FG_SHAPE_MISMATCH=0\n", "FG_SUPPRESSED=0\n" };
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
		cmocka_unit_test(test_failure_and_timeout),
		cmocka_unit_test(test_no_command_and_cap),
	};
	return fg_test_run_each(tests, setup, teardown); /* a fresh directory per test */
}

/* test_relay_fault.c - fanorelay's fault engine (tools/relay/relay_fault.c):
 * pass-through, loss, duplication, reordering bounds, time release, delay
 * and jitter windows, the queue bound, determinism per seed, send failures,
 * parameter checks, and the counter invariant of relay.h after every run. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "relay.h"

#define MAXLOG 20000u

/* What went out: datagram numbers (first 4 bytes) and emission times. */
struct sink {
	uint32_t id[MAXLOG];
	uint32_t sess[MAXLOG];
	uint64_t t[MAXLOG];
	uint32_t n;
	uint64_t now;  /* set by the test before each call */
	int fail;      /* returned by emit when non-zero */
};

static int emit(void *ctx, uint32_t sess, const uint8_t *buf, uint32_t len)
{
	struct sink *s = ctx;
	assert_true(len >= 4);
	if (s->fail)
		return s->fail;
	assert_true(s->n < MAXLOG);
	memcpy(&s->id[s->n], buf, 4);
	s->sess[s->n] = sess;
	s->t[s->n] = s->now;
	s->n++;
	return 0;
}

static void feed(struct rl_dir *d, struct sink *s, uint32_t id, uint64_t now)
{
	uint8_t buf[16] = { 0 };
	memcpy(buf, &id, 4);
	s->now = now;
	(void)rl_dir_input(d, id % 3, buf, sizeof buf, now);
}

/* relay.h invariant 1 and 2. */
static void check_invariants(const struct rl_dir *d)
{
	const struct rl_dir_stats *st = &d->st;
	assert_int_equal(st->in + st->dup, st->lost + st->out + st->send_failed + st->queue_full + st->dropped_at_exit +
						    rl_dir_queued(d));
	assert_true(st->released_by_gap + st->released_by_time <= st->reordered);
}

static struct sink *sink_new(void)
{
	struct sink *s = calloc(1, sizeof *s);
	assert_non_null(s);
	return s;
}

/* d started with fault f, seed and capacity cap, emitting into a fresh
 * sink (returned). */
static struct sink *dir_start(struct rl_dir *d, struct rl_fault f, uint64_t seed, uint32_t cap)
{
	struct sink *s = sink_new();
	assert_int_equal(rl_dir_init(d, &f, seed, cap, emit, s), 0);
	return s;
}

/* The invariants hold at the end; d finished, s freed. */
static void dir_end(struct rl_dir *d, struct sink *s)
{
	check_invariants(d);
	rl_dir_fini(d);
	free(s);
}

static void test_pass_through(void **state)
{
	(void)state;
	struct rl_dir d;
	struct sink *s = dir_start(&d, (struct rl_fault){ 0 }, 1, 16);
	for (uint32_t i = 0; i < 100; i++)
		feed(&d, s, i, 0);
	assert_int_equal(s->n, 100);
	for (uint32_t i = 0; i < 100; i++) {
		assert_int_equal(s->id[i], i);
		assert_int_equal(s->sess[i], i % 3);
	}
	assert_int_equal(rl_dir_tick(&d, 0), UINT64_MAX);
	assert_int_equal(d.st.out, 100);
	assert_int_equal(d.st.out_bytes, 1600);
	dir_end(&d, s);
}

static void test_loss_rate_and_determinism(void **state)
{
	(void)state;
	struct sink *a = sink_new(), *b = sink_new(), *c = sink_new();
	struct rl_dir da, db, dc;
	struct rl_fault f = { .loss = 0.2 };
	assert_int_equal(rl_dir_init(&da, &f, 7, 16, emit, a), 0);
	assert_int_equal(rl_dir_init(&db, &f, 7, 16, emit, b), 0);
	assert_int_equal(rl_dir_init(&dc, &f, 8, 16, emit, c), 0);
	for (uint32_t i = 0; i < 10000; i++) {
		feed(&da, a, i, 0);
		feed(&db, b, i, 0);
		feed(&dc, c, i, 0);
	}
	/* 20% of 10000: a binomial's 6-sigma window is +-240 */
	assert_in_range(da.st.lost, 1760, 2240);
	assert_int_equal(da.st.lost + da.st.out, 10000);
	/* same seed: the same datagrams are lost; another seed: others */
	assert_int_equal(a->n, b->n);
	assert_memory_equal(a->id, b->id, a->n * sizeof a->id[0]);
	assert_true(a->n != c->n || memcmp(a->id, c->id, a->n * sizeof a->id[0]) != 0);
	check_invariants(&da);
	rl_dir_fini(&da);
	rl_dir_fini(&db);
	rl_dir_fini(&dc);
	free(a);
	free(b);
	free(c);
}

/* Loss bursts: runs of consecutive lost datagrams have the configured mean
 * length, and the long-run rate is loss * burst / (1 + loss * (burst - 1)). */
enum { BN = 100000 };
static uint8_t g_got[BN];

static int emit_mark(void *ctx, uint32_t sess, const uint8_t *buf, uint32_t len)
{
	(void)ctx;
	(void)sess;
	uint32_t id;
	assert_true(len >= 4);
	memcpy(&id, buf, 4);
	assert_true(id < BN);
	g_got[id] = 1;
	return 0;
}

static void burst_run(double loss, double burst, double *rate, double *mean_run)
{
	struct rl_dir d;
	struct rl_fault f = { .loss = loss, .burst = burst };
	memset(g_got, 0, sizeof g_got);
	assert_int_equal(rl_dir_init(&d, &f, 21, 16, emit_mark, NULL), 0);
	for (uint32_t i = 0; i < BN; i++) {
		uint8_t buf[8] = { 0 };
		memcpy(buf, &i, 4);
		assert_int_equal(rl_dir_input(&d, 0, buf, sizeof buf, 0), 0);
	}
	uint32_t lost = 0, runs = 0;
	for (uint32_t i = 0; i < BN; i++) {
		if (!g_got[i]) {
			lost++;
			runs += i == 0 || g_got[i - 1];
		}
	}
	assert_int_equal(lost, d.st.lost);
	check_invariants(&d);
	rl_dir_fini(&d);
	*rate = (double)lost / BN;
	*mean_run = runs ? (double)lost / runs : 0;
}

static void test_loss_bursts(void **state)
{
	(void)state;
	double rate, run;
	burst_run(0.02, 4.0, &rate, &run);
	assert_true(run > 3.5 && run < 4.5);
	assert_true(rate > 0.065 && rate < 0.086); /* 0.0755 expected */
	burst_run(0.05, 0.0, &rate, &run);          /* independent losses */
	assert_true(run > 1.0 && run < 1.1);        /* 1 / (1 - 0.05) = 1.053 */
	assert_true(rate > 0.045 && rate < 0.055);
	struct rl_dir d;
	struct rl_fault bad = { .burst = -1 };
	assert_int_equal(rl_dir_init(&d, &bad, 1, 4, emit_mark, NULL), -EINVAL);
}

static void test_loss_all(void **state)
{
	(void)state;
	struct rl_dir d;
	struct sink *s = dir_start(&d, (struct rl_fault){ .loss = 1.0, .dup = 1.0 }, 3, 16);
	for (uint32_t i = 0; i < 50; i++)
		feed(&d, s, i, 0);
	assert_int_equal(s->n, 0);
	assert_int_equal(d.st.lost, 50);
	assert_int_equal(d.st.dup, 0); /* a lost datagram is not duplicated */
	dir_end(&d, s);
}

static void test_dup(void **state)
{
	(void)state;
	struct rl_dir d;
	struct sink *s = dir_start(&d, (struct rl_fault){ .dup = 1.0 }, 3, 16);
	for (uint32_t i = 0; i < 50; i++)
		feed(&d, s, i, 0);
	assert_int_equal(s->n, 100);
	for (uint32_t i = 0; i < 50; i++) {
		assert_int_equal(s->id[2 * i], i);
		assert_int_equal(s->id[2 * i + 1], i);
	}
	assert_int_equal(d.st.dup, 50);
	dir_end(&d, s);
}

/* Reordering: every datagram goes out exactly once, some out of order, and
 * none is overtaken by more than `gap` later datagrams (a held one leaves
 * after `gap` emissions that followed its admission). */
static void test_reorder_gap_bound(void **state)
{
	(void)state;
	enum { N = 5000, GAP = 3 };
	struct rl_dir d;
	struct sink *s = dir_start(&d, (struct rl_fault){ .reorder = 0.3, .reorder_gap = GAP, .reorder_ns = UINT64_MAX / 4 }, 11, N);
	for (uint32_t i = 0; i < N; i++)
		feed(&d, s, i, 0);
	/* the tail still held leaves on its timer */
	s->now = UINT64_MAX / 2;
	assert_int_equal(rl_dir_tick(&d, UINT64_MAX / 2), UINT64_MAX);
	assert_int_equal(s->n, N);
	static uint8_t seen[N];
	memset(seen, 0, sizeof seen);
	uint32_t inversions = 0;
	for (uint32_t p = 0; p < N; p++) {
		uint32_t id = s->id[p];
		assert_true(id < N);
		assert_int_equal(seen[id], 0);
		seen[id] = 1;
		uint32_t later_before = 0;
		for (uint32_t q = 0; q < p; q++)
			if (s->id[q] > id)
				later_before++;
		assert_true(later_before <= GAP);
		inversions += later_before > 0;
	}
	assert_true(inversions > N / 10);
	assert_in_range(d.st.reordered, N * 25 / 100, N * 35 / 100);
	assert_int_equal(d.st.released_by_gap + d.st.released_by_time, d.st.reordered);
	assert_true(d.st.released_by_time < 20); /* only the tail waited for the timer */
	dir_end(&d, s);
}

static void test_reorder_time_release(void **state)
{
	(void)state;
	struct rl_dir d;
	struct sink *s = dir_start(&d, (struct rl_fault){ .reorder = 1.0, .reorder_gap = 100, .reorder_ns = 1000 }, 5, 16);
	for (uint32_t i = 0; i < 5; i++)
		feed(&d, s, i, 10 + i);
	assert_int_equal(s->n, 0);
	assert_int_equal(rl_dir_queued(&d), 5);
	s->now = 1009;
	assert_int_equal(rl_dir_tick(&d, 1009), 1);
	assert_int_equal(s->n, 0);
	s->now = 1011;
	assert_int_equal(rl_dir_tick(&d, 1011), 1); /* 0 and 1 due, 2 due at 1012 */
	assert_int_equal(s->n, 2);
	s->now = 5000;
	assert_int_equal(rl_dir_tick(&d, 5000), UINT64_MAX);
	assert_int_equal(s->n, 5);
	for (uint32_t i = 0; i < 5; i++)
		assert_int_equal(s->id[i], i);
	assert_int_equal(d.st.released_by_time, 5);
	dir_end(&d, s);
}

static void test_fixed_delay_fifo(void **state)
{
	(void)state;
	struct rl_dir d;
	struct sink *s = dir_start(&d, (struct rl_fault){ .delay_ns = 100 }, 5, 16);
	feed(&d, s, 0, 0);
	feed(&d, s, 1, 0);
	feed(&d, s, 2, 2);
	assert_int_equal(s->n, 0);
	assert_int_equal(rl_dir_tick(&d, 99), 1);
	s->now = 100;
	assert_int_equal(rl_dir_tick(&d, 100), 2);
	assert_int_equal(s->n, 2);
	assert_int_equal(s->id[0], 0); /* equal due times keep admission order */
	assert_int_equal(s->id[1], 1);
	s->now = 102;
	assert_int_equal(rl_dir_tick(&d, 102), UINT64_MAX);
	assert_int_equal(s->id[2], 2);
	assert_int_equal(d.st.delayed, 3);
	dir_end(&d, s);
}

/* Jitter: each datagram leaves within [delay, delay + jitter] of its
 * admission, when ticked at every nanosecond step. */
static void test_jitter_window(void **state)
{
	(void)state;
	enum { N = 400, DELAY = 50, JIT = 30 };
	struct rl_dir d;
	struct sink *s = dir_start(&d, (struct rl_fault){ .delay_ns = DELAY, .jitter_ns = JIT }, 9, N);
	for (uint32_t i = 0; i < N; i++)
		feed(&d, s, i, i); /* datagram i admitted at t = i */
	for (uint64_t t = 0; t <= N + DELAY + JIT; t++) {
		s->now = t;
		(void)rl_dir_tick(&d, t);
	}
	assert_int_equal(s->n, N);
	bool any_late = false, inversion = false;
	for (uint32_t p = 0; p < N; p++) {
		uint64_t admitted = s->id[p];
		assert_true(s->t[p] >= admitted + DELAY);
		assert_true(s->t[p] <= admitted + DELAY + JIT);
		any_late |= s->t[p] > admitted + DELAY;
		inversion |= p > 0 && s->id[p] < s->id[p - 1];
	}
	assert_true(any_late);
	assert_true(inversion); /* jitter larger than the spacing reorders */
	dir_end(&d, s);
}

static void test_queue_bound(void **state)
{
	(void)state;
	struct rl_dir d;
	struct sink *s = dir_start(&d, (struct rl_fault){ .delay_ns = 10 }, 5, 4);
	for (uint32_t i = 0; i < 10; i++)
		feed(&d, s, i, 0);
	assert_int_equal(rl_dir_queued(&d), 4);
	assert_int_equal(d.st.queue_full, 6);
	assert_int_equal(d.st.queue_max, 4);
	check_invariants(&d);
	rl_dir_fini(&d); /* the 4 queued count as dropped at exit */
	assert_int_equal(d.st.dropped_at_exit, 4);
	check_invariants(&d);
	free(s);
}

static void test_send_failure_counted(void **state)
{
	(void)state;
	struct rl_dir d;
	struct sink *s = dir_start(&d, (struct rl_fault){ 0 }, 5, 4);
	s->fail = -EAGAIN;
	for (uint32_t i = 0; i < 3; i++)
		feed(&d, s, i, 0);
	assert_int_equal(d.st.send_failed, 3);
	assert_int_equal(d.st.out, 0);
	dir_end(&d, s);
}

static void test_bad_parameters(void **state)
{
	(void)state;
	struct sink *s = sink_new();
	struct rl_dir d;
	struct rl_fault bad[] = {
		{ .loss = -0.1 }, { .loss = 1.5 }, { .dup = 2 }, { .reorder = 0.5, .reorder_gap = 0 },
		{ .loss = 0.0 / 0.0 },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(rl_dir_init(&d, &bad[i], 1, 4, emit, s), -EINVAL);
	struct rl_fault ok = { 0 };
	assert_int_equal(rl_dir_init(&d, &ok, 1, 0, emit, s), -EINVAL);
	assert_int_equal(rl_dir_init(&d, &ok, 1, 4, NULL, s), -EINVAL);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pass_through),
		cmocka_unit_test(test_loss_rate_and_determinism),
		cmocka_unit_test(test_loss_bursts),
		cmocka_unit_test(test_loss_all),
		cmocka_unit_test(test_dup),
		cmocka_unit_test(test_reorder_gap_bound),
		cmocka_unit_test(test_reorder_time_release),
		cmocka_unit_test(test_fixed_delay_fifo),
		cmocka_unit_test(test_jitter_window),
		cmocka_unit_test(test_queue_bound),
		cmocka_unit_test(test_send_failure_counted),
		cmocka_unit_test(test_bad_parameters),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

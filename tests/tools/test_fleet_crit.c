/* test_fleet_crit.c - tests of tools/fleet/fleet_crit.c: the critical
 * path's rule for one (token, layer), the fleet's gate as the fleet acts on
 * it (fleet_crit.h).
 *
 * 1. The chain alone (canonical): the relay's time, whatever the gate and
 *    the seed say.
 * 2. Gate passed: the next layer starts on the jumped seed one hop after it
 *    reached the consumer, also when that is after the canonical input
 *    would have been (a negative saving: nothing to fall back on); never
 *    before the decision; a seed that never comes stalls the layer.
 * 3. Gate not passed (shadow, not resolved, no status): the relay, never a
 *    jump, and never before decision + relay + hop, even with an early seed.
 * 4. Not decided yet, or the gate passed and no seed yet: -EAGAIN and the
 *    output untouched; FL_CRIT_OFF: -EINVAL. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fleet_crit.h"

#define US 1000ull

/* ffn_l reaches the coordinator at 10 ms, the relay takes 150 us, a hop
 * 100 us: the chain's input is at 10.25 ms. */
static struct fl_crit_layer layer(void)
{
	return (struct fl_crit_layer){ .t_ffn = 10000 * US, .relay_ns = 150 * US, .net_ns = 100 * US };
}

static const uint64_t CANON = 10250 * US;

static void test_canon_time(void **state)
{
	(void)state;
	struct fl_crit_layer l = layer();
	assert_int_equal(fl_crit_canon_ns(&l), CANON);
}

static void test_canonical_ignores_gate_and_seed(void **state)
{
	(void)state;
	struct fl_crit_layer l = layer();
	struct fl_crit_start s;
	assert_int_equal(fl_crit_start(FL_CRIT_CANONICAL, &l, &s), 0); /* nothing seen yet: the chain needs nothing */
	assert_int_equal(s.at, CANON);
	assert_false(s.jump);
	l.decided = l.gate = true;
	l.t_decision = l.t_seed = 10010 * US;
	assert_int_equal(fl_crit_start(FL_CRIT_CANONICAL, &l, &s), 0);
	assert_int_equal(s.at, CANON);
	assert_false(s.jump);
}

static void test_gate_passed_early_seed_saves(void **state)
{
	(void)state;
	struct fl_crit_layer l = layer();
	l.decided = l.gate = true;
	l.t_seed = 10030 * US;
	l.t_decision = 10031 * US;
	struct fl_crit_start s;
	assert_int_equal(fl_crit_start(FL_CRIT_JUMP, &l, &s), 0);
	assert_true(s.jump);
	assert_int_equal(s.at, 10130 * US); /* the seed one hop on */
	assert_true(s.at < CANON);
	assert_false(s.late_decision);
	assert_false(s.stalled);
}

static void test_gate_passed_late_seed_costs(void **state)
{
	(void)state;
	/* the seed comes 400 ms late (a resend): the hop was skipped, the next
	 * layer waits for it, long after the chain's input */
	struct fl_crit_layer l = layer();
	l.decided = l.gate = true;
	l.t_decision = 10040 * US;
	l.t_seed = 410000 * US;
	struct fl_crit_start s;
	assert_int_equal(fl_crit_start(FL_CRIT_JUMP, &l, &s), 0);
	assert_true(s.jump);
	assert_int_equal(s.at, 410100 * US);
	assert_true((int64_t)CANON - (int64_t)s.at < 0);
	/* a zero relay: even a prompt seed is later than the chain */
	l = layer();
	l.relay_ns = 0;
	l.decided = l.gate = true;
	l.t_seed = l.t_decision = l.t_ffn + 20 * US;
	assert_int_equal(fl_crit_start(FL_CRIT_JUMP, &l, &s), 0);
	assert_true(s.at > fl_crit_canon_ns(&l));
}

static void test_gate_passed_never_before_decision(void **state)
{
	(void)state;
	struct fl_crit_layer l = layer();
	l.decided = l.gate = true;
	l.t_seed = 10030 * US;
	l.t_decision = 10500 * US; /* after the seed was at the worker (10130) */
	struct fl_crit_start s;
	assert_int_equal(fl_crit_start(FL_CRIT_JUMP, &l, &s), 0);
	assert_true(s.jump);
	assert_int_equal(s.at, 10500 * US);
	assert_true(s.late_decision);
}

static void test_gate_passed_seed_never_comes(void **state)
{
	(void)state;
	struct fl_crit_layer l = layer();
	l.decided = l.gate = true;
	l.t_decision = 10040 * US;
	struct fl_crit_start s = { .at = 7 };
	assert_int_equal(fl_crit_start(FL_CRIT_JUMP, &l, &s), -EAGAIN);
	assert_int_equal(s.at, 7); /* untouched */
	l.seed_gone = true;
	l.t_gone = 3510000 * US;
	assert_int_equal(fl_crit_start(FL_CRIT_JUMP, &l, &s), 0);
	assert_true(s.jump);
	assert_true(s.stalled);
	assert_int_equal(s.at, 3510000 * US);
}

static void test_gate_not_passed_relays_after_decision(void **state)
{
	(void)state;
	struct fl_crit_layer l = layer();
	struct fl_crit_start s;
	/* shadow: the status came 40 us after ffn_l; the relay starts then */
	l.decided = true;
	l.gate = false;
	l.t_decision = 10040 * US;
	l.t_seed = 10030 * US; /* early, and unused */
	assert_int_equal(fl_crit_start(FL_CRIT_JUMP, &l, &s), 0);
	assert_false(s.jump);
	assert_int_equal(s.at, 10290 * US); /* 10040 + 150 + 100 */
	assert_true(s.at >= CANON);
	/* a decision so early it cannot matter: the chain's own time */
	l.t_decision = 9000 * US;
	assert_int_equal(fl_crit_start(FL_CRIT_JUMP, &l, &s), 0);
	assert_int_equal(s.at, CANON);
	/* decided at the dispatcher's deadline (no status): relay from there */
	l.t_seed = 0;
	l.t_decision = 3510000 * US;
	assert_int_equal(fl_crit_start(FL_CRIT_JUMP, &l, &s), 0);
	assert_false(s.jump);
	assert_int_equal(s.at, 3510250 * US);
}

static void test_shadow_never_jumps(void **state)
{
	(void)state;
	/* over a range of seed and decision times, a failed gate never
	 * starts the next layer on the seed, nor before the chain's input */
	for (uint64_t seed = 0; seed <= 20000; seed += 250)
		for (uint64_t dec = 9000; dec <= 20000; dec += 250) {
			struct fl_crit_layer l = layer();
			l.decided = true;
			l.t_decision = dec * US;
			l.t_seed = seed * US;
			struct fl_crit_start s;
			assert_int_equal(fl_crit_start(FL_CRIT_JUMP, &l, &s), 0);
			assert_false(s.jump);
			assert_true(s.at >= CANON);
			assert_true(s.at >= l.t_decision + l.relay_ns + l.net_ns);
		}
}

static void test_undecided_and_off(void **state)
{
	(void)state;
	struct fl_crit_layer l = layer();
	l.t_seed = 10030 * US;
	struct fl_crit_start s = { .at = 7 };
	assert_int_equal(fl_crit_start(FL_CRIT_JUMP, &l, &s), -EAGAIN);
	assert_int_equal(s.at, 7);
	assert_int_equal(fl_crit_start(FL_CRIT_OFF, &l, &s), -EINVAL);
	assert_int_equal(s.at, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_canon_time),
		cmocka_unit_test(test_canonical_ignores_gate_and_seed),
		cmocka_unit_test(test_gate_passed_early_seed_saves),
		cmocka_unit_test(test_gate_passed_late_seed_costs),
		cmocka_unit_test(test_gate_passed_never_before_decision),
		cmocka_unit_test(test_gate_passed_seed_never_comes),
		cmocka_unit_test(test_gate_not_passed_relays_after_decision),
		cmocka_unit_test(test_shadow_never_jumps),
		cmocka_unit_test(test_undecided_and_off),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

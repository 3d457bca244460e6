/* test_points.c - cp_points.c: which Fano point a role serves, and when a
 * point goes down or up from its TLS peers and its mapped UDP sources
 * (the decisions the engine applies to the line table). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cp_points.h"

#define MS 1000000ull

static void test_roles(void **state)
{
	(void)state;
	assert_int_equal(cp_point_of_role("embed"), 1);
	assert_int_equal(cp_point_of_role("ATTN"), 2);
	assert_int_equal(cp_point_of_role("gate_up"), 3);
	assert_int_equal(cp_point_of_role("lm-head"), 5);
	assert_int_equal(cp_point_of_role("cobordism-warden"), 7);
	assert_int_equal(cp_point_of_role("e4"), 4);
	assert_int_equal(cp_point_of_role("e8"), 0);
	assert_int_equal(cp_point_of_role("e44"), 0);
	assert_int_equal(cp_point_of_role("fleet"), 0);
	assert_int_equal(cp_point_of_role(""), 0);
	assert_int_equal(cp_point_of_role(NULL), 0);
}

static void test_tls_only(void **state)
{
	(void)state;
	struct fg_config cfg;
	fg_config_default(&cfg);
	cfg.n_point_prefix[1] = 1; /* e2 has prefixes, but no UDP reaches this engine */
	struct cp_points pt;
	cp_points_init(&pt, &cfg, false);
	assert_int_equal(cp_points_udp_mapped(&pt), 0);
	assert_int_equal(cp_points_live(&pt), 0);
	assert_true(cp_points_tls_attach(&pt, 2));  /* first peer */
	assert_false(cp_points_tls_attach(&pt, 2)); /* second */
	assert_int_equal(cp_points_live(&pt), 0x02);
	assert_false(cp_points_tls_detach(&pt, 2)); /* one left */
	assert_true(cp_points_tls_detach(&pt, 2));  /* the last: down */
	assert_false(cp_points_tls_detach(&pt, 2)); /* never below zero */
	assert_int_equal(cp_points_live(&pt), 0);
	assert_false(cp_points_tls_attach(&pt, 0));
	assert_false(cp_points_tls_attach(&pt, 8));
	assert_false(cp_points_tls_detach(&pt, 8));
	/* no mapped point: the UDP tick decides nothing */
	_Atomic uint64_t seen[FG_POINTS + 1] = {0};
	struct cp_point_change out[FG_POINTS];
	assert_int_equal(cp_points_udp_tick(&pt, seen, 10000 * MS, 0, out), 0);
}

static void test_udp(void **state)
{
	(void)state;
	struct fg_config cfg;
	fg_config_default(&cfg);
	cfg.peer_timeout_ms = 100;
	cfg.n_point_prefix[0] = 1; /* e1 */
	cfg.n_point_prefix[3] = 2; /* e4 */
	struct cp_points pt;
	cp_points_init(&pt, &cfg, true);
	assert_int_equal(cp_points_udp_mapped(&pt), 0x09);
	assert_int_equal(cp_points_udp_live(&pt), 0x09); /* mapped points start live */
	_Atomic uint64_t seen[FG_POINTS + 1] = {0};
	struct cp_point_change out[FG_POINTS];
	uint64_t t = 1000 * MS;
	atomic_store(&seen[1], t);
	atomic_store(&seen[4], t - 150 * MS); /* e4 silent past the timeout */
	unsigned n = cp_points_udp_tick(&pt, seen, t, 0, out);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].point, 4);
	assert_true(out[0].down);
	assert_non_null(strstr(out[0].who, "no datagram from [points] e4 for 150 ms"));
	assert_int_equal(cp_points_udp_live(&pt), 0x01);
	/* within 50 ms of the last look: nothing is looked at */
	atomic_store(&seen[4], t + 10 * MS);
	assert_int_equal(cp_points_udp_tick(&pt, seen, t + 20 * MS, 0x08, out), 0);
	/* e4 heard again while down: up */
	n = cp_points_udp_tick(&pt, seen, t + 60 * MS, 0x08, out);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].point, 4);
	assert_false(out[0].down);
	assert_int_equal(cp_points_udp_live(&pt), 0x09);
	/* e1 falls silent but a TLS peer serves it: live, nothing to change */
	assert_true(cp_points_tls_attach(&pt, 1));
	atomic_store(&seen[4], t + 200 * MS);
	assert_int_equal(cp_points_udp_tick(&pt, seen, t + 200 * MS, 0, out), 0);
	assert_int_equal(cp_points_udp_live(&pt), 0x08);
	assert_int_equal(cp_points_live(&pt), 0x09);
	/* ... until the last TLS peer goes: down */
	assert_true(cp_points_tls_detach(&pt, 1));
	/* a mapped point whose UDP source is live stays up when its TLS peer goes */
	assert_true(cp_points_tls_attach(&pt, 4));
	assert_false(cp_points_tls_detach(&pt, 4));
	/* a clock read a hair behind the lcore's: live */
	atomic_store(&seen[1], t + 300 * MS);
	n = cp_points_udp_tick(&pt, seen, t + 299 * MS, 0x01, out);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].point, 1);
	assert_false(out[0].down);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roles),
		cmocka_unit_test(test_tls_only),
		cmocka_unit_test(test_udp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

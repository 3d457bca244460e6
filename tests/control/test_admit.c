/* test_admit.c - the TLS listener's admission table (control/cp_admit.c):
 * each rule of the policy and its counted reason, the per-source counts
 * through enter/authenticate/leave, the table under many sources (probe
 * runs and back-shift deletion against a reference count), growth, and the
 * table-full refusal. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cp_admit.h"

static struct cp_admit_src v4(uint8_t a, uint8_t b, uint8_t c, uint8_t d)
{
	struct cp_admit_src s;
	memset(&s, 0, sizeof(s));
	s.family = 4;
	s.addr[0] = a;
	s.addr[1] = b;
	s.addr[2] = c;
	s.addr[3] = d;
	return s;
}

static void test_per_source(void **state)
{
	(void)state;
	struct cp_admit a;
	assert_int_equal(cp_admit_init(&a, 64), 0);
	struct cp_admit_limits lim = {.max_conns = 64, .reserve = 16, .unauth_per_source = 3};
	struct cp_admit_src x = v4(10, 0, 0, 1), y = v4(10, 0, 0, 2);
	enum cp_admit_reason why;
	for (int i = 0; i < 3; i++) {
		assert_int_equal(cp_admit_decide(&a, &x, &lim, &why), CP_ADMIT_TAKE);
		assert_int_equal(cp_admit_enter(&a, &x), 0);
	}
	assert_int_equal(cp_admit_decide(&a, &x, &lim, &why), CP_ADMIT_REFUSE);
	assert_int_equal(why, CP_ADMIT_R_PER_SOURCE);
	assert_int_equal(a.st[CP_ADMIT_R_PER_SOURCE], 1);
	/* another source is not affected */
	assert_int_equal(cp_admit_decide(&a, &y, &lim, &why), CP_ADMIT_TAKE);
	/* one of x's authenticates: room for one more unauthenticated */
	cp_admit_authenticate(&a, &x);
	assert_int_equal(cp_admit_unauth_of(&a, &x), 2);
	assert_int_equal(cp_admit_decide(&a, &x, &lim, &why), CP_ADMIT_TAKE);
	/* no IP source: no per-source rule */
	struct cp_admit_src none;
	memset(&none, 0, sizeof(none));
	lim.unauth_per_source = 1;
	assert_int_equal(cp_admit_enter(&a, &none), 0);
	assert_int_equal(cp_admit_decide(&a, &none, &lim, &why), CP_ADMIT_TAKE);
	/* 0 = no limit */
	lim.unauth_per_source = 0;
	assert_int_equal(cp_admit_decide(&a, &x, &lim, &why), CP_ADMIT_TAKE);
	cp_admit_leave(&a, &x, true);
	cp_admit_leave(&a, &x, false);
	cp_admit_leave(&a, &x, false);
	cp_admit_leave(&a, &none, false);
	assert_int_equal(a.n_open, 0);
	assert_int_equal(a.n_unauth, 0);
	assert_int_equal(a.used, 0);
	assert_string_equal(cp_admit_reason_name(CP_ADMIT_R_PER_SOURCE), "per_source");
	assert_string_equal(cp_admit_reason_name(CP_ADMIT_R_EVICT_UNAUTH), "evicted_unauth_share");
	cp_admit_fini(&a);
}

/* Which connection an eviction may take first: one of a source holding two
 * or more unauthenticated connections; a source's lone one (or an
 * authenticated source's, or an unknown source's) is passed over. */
static void test_evict_first(void **state)
{
	(void)state;
	struct cp_admit a;
	assert_int_equal(cp_admit_init(&a, 64), 0);
	struct cp_admit_src lone = v4(10, 0, 0, 1), many = v4(10, 0, 0, 2), gone = v4(10, 0, 0, 3);
	assert_int_equal(cp_admit_enter(&a, &lone), 0);
	assert_false(cp_admit_evict_first(&a, &lone));
	assert_int_equal(cp_admit_enter(&a, &many), 0);
	assert_false(cp_admit_evict_first(&a, &many));
	assert_int_equal(cp_admit_enter(&a, &many), 0);
	assert_true(cp_admit_evict_first(&a, &many));
	assert_false(cp_admit_evict_first(&a, &lone));
	assert_false(cp_admit_evict_first(&a, &gone));
	/* authenticated connections do not count: two open, one unauthenticated */
	cp_admit_authenticate(&a, &many);
	assert_false(cp_admit_evict_first(&a, &many));
	assert_int_equal(cp_admit_enter(&a, &many), 0);
	assert_true(cp_admit_evict_first(&a, &many));
	cp_admit_leave(&a, &many, false);
	assert_false(cp_admit_evict_first(&a, &many));
	cp_admit_fini(&a);
}

static void test_reserve_and_full(void **state)
{
	(void)state;
	struct cp_admit a;
	assert_int_equal(cp_admit_init(&a, 8), 0);
	struct cp_admit_limits lim = {.max_conns = 8, .reserve = 2, .unauth_per_source = 0};
	enum cp_admit_reason why;
	struct cp_admit_src s[8];
	for (int i = 0; i < 8; i++)
		s[i] = v4(192, 0, 2, (uint8_t)(i + 1));
	/* 6 unauthenticated fill the unauthenticated share (8 - 2) */
	for (int i = 0; i < 6; i++) {
		assert_int_equal(cp_admit_decide(&a, &s[i], &lim, &why), CP_ADMIT_TAKE);
		assert_int_equal(cp_admit_enter(&a, &s[i]), 0);
	}
	assert_int_equal(cp_admit_decide(&a, &s[6], &lim, &why), CP_ADMIT_TAKE_EVICT);
	assert_int_equal(why, CP_ADMIT_R_EVICT_UNAUTH);
	/* two authenticate: the share has room again */
	cp_admit_authenticate(&a, &s[0]);
	cp_admit_authenticate(&a, &s[1]);
	for (int i = 6; i < 8; i++) {
		assert_int_equal(cp_admit_decide(&a, &s[i], &lim, &why), CP_ADMIT_TAKE);
		assert_int_equal(cp_admit_enter(&a, &s[i]), 0);
	}
	/* 8 open, 6 unauthenticated: full -> evict the oldest unauthenticated */
	assert_int_equal(cp_admit_decide(&a, &s[0], &lim, &why), CP_ADMIT_TAKE_EVICT);
	assert_int_equal(why, CP_ADMIT_R_EVICT_UNAUTH);
	/* every one authenticated: a newcomer is refused, nobody evicted */
	for (int i = 2; i < 8; i++)
		cp_admit_authenticate(&a, &s[i]);
	assert_int_equal(a.n_unauth, 0);
	assert_int_equal(cp_admit_decide(&a, &s[0], &lim, &why), CP_ADMIT_REFUSE);
	assert_int_equal(why, CP_ADMIT_R_FULL);
	/* full with a few unauthenticated, below their share: evicted_full */
	cp_admit_leave(&a, &s[7], true);
	assert_int_equal(cp_admit_enter(&a, &s[7]), 0);
	assert_int_equal(cp_admit_decide(&a, &s[0], &lim, &why), CP_ADMIT_TAKE_EVICT);
	assert_int_equal(why, CP_ADMIT_R_EVICT_FULL);
	assert_int_equal(a.st[CP_ADMIT_R_FULL], 1);
	assert_int_equal(a.st[CP_ADMIT_R_EVICT_FULL], 1);
	assert_int_equal(a.st[CP_ADMIT_R_EVICT_UNAUTH], 2);
	/* a reserve of everything still lets one unauthenticated in */
	lim.reserve = 8;
	cp_admit_leave(&a, &s[7], false);
	cp_admit_leave(&a, &s[6], true);
	assert_int_equal(cp_admit_decide(&a, &s[6], &lim, &why), CP_ADMIT_TAKE);
	cp_admit_fini(&a);
}

/* Many sources in and out in a scrambled order against a reference: every
 * count stays right through probe runs and back-shift deletions. */
static void test_many_sources(void **state)
{
	(void)state;
	enum { N = 1000 };
	struct cp_admit a;
	assert_int_equal(cp_admit_init(&a, N), 0);
	static uint32_t open_ref[N];
	memset(open_ref, 0, sizeof(open_ref));
	uint32_t rng = 12345;
	for (int step = 0; step < 200000; step++) {
		rng = rng * 1103515245u + 12345u;
		uint32_t i = (rng >> 8) % 300; /* 300 sources share N connections */
		struct cp_admit_src s = v4(10, (uint8_t)(i >> 8), (uint8_t)i, 7);
		if ((rng >> 4) & 1 && a.n_open < N) {
			assert_int_equal(cp_admit_enter(&a, &s), 0);
			open_ref[i]++;
		} else if (open_ref[i]) {
			cp_admit_leave(&a, &s, false);
			open_ref[i]--;
		}
		if (step % 9973 == 0) {
			uint32_t used = 0, total = 0;
			for (uint32_t k = 0; k < 300; k++) {
				struct cp_admit_src t = v4(10, (uint8_t)(k >> 8), (uint8_t)k, 7);
				assert_int_equal(cp_admit_unauth_of(&a, &t), open_ref[k]);
				used += open_ref[k] != 0;
				total += open_ref[k];
			}
			assert_int_equal(a.used, used);
			assert_int_equal(a.n_open, total);
		}
	}
	/* grow keeps every count */
	assert_int_equal(cp_admit_grow(&a, 4 * N), 0);
	for (uint32_t k = 0; k < 300; k++) {
		struct cp_admit_src t = v4(10, (uint8_t)(k >> 8), (uint8_t)k, 7);
		assert_int_equal(cp_admit_unauth_of(&a, &t), open_ref[k]);
	}
	cp_admit_fini(&a);
}

/* The table refuses a source past half its capacity rather than let probe
 * runs grow (cannot happen within max_conns: one entry per connection). */
static void test_table_full(void **state)
{
	(void)state;
	struct cp_admit a;
	assert_int_equal(cp_admit_init(&a, 4), 0); /* capacity 16: 8 sources */
	int ok = 0;
	for (int i = 0; i < 20; i++) {
		struct cp_admit_src s = v4(172, 16, 0, (uint8_t)i);
		if (cp_admit_enter(&a, &s) == 0)
			ok++;
		else
			assert_int_equal(cp_admit_enter(&a, &s), -ENOSPC);
	}
	assert_int_equal(ok, 8);
	/* a known source still counts */
	struct cp_admit_src s0 = v4(172, 16, 0, 0);
	assert_int_equal(cp_admit_enter(&a, &s0), 0);
	assert_int_equal(cp_admit_unauth_of(&a, &s0), 2);
	cp_admit_fini(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_per_source),
		cmocka_unit_test(test_evict_first),
		cmocka_unit_test(test_reserve_and_full),
		cmocka_unit_test(test_many_sources),
		cmocka_unit_test(test_table_full),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

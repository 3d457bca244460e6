/* fg_test_shadow.h - the fixtures the C unit tests of the shadow store and
 * the line table share: a store in fresh aligned memory, a line table with
 * every line in one state. Callers: tests/audit/test_shadow.c,
 * tests/control/test_shadow_expire.c, tests/hostile/test_hostile_shadow.c,
 * tests/hostile/test_hostile_audit.c; the test's own thread. Header only
 * (static functions): include it after <cmocka.h> and fg/shadow.h; a store
 * that cannot be made fails the test. */
#ifndef FG_TEST_SHADOW_H
#define FG_TEST_SHADOW_H

#include <stdlib.h>

#include "fg/line.h"
#include "fg/shadow.h"

/* fg_shadow_init(sh) for cfg in 64-byte aligned memory it allocates;
 * returns that memory (the caller frees it after the store). */
static inline void *fg_test_shadow_new(struct fg_shadow *sh, const struct fg_shadow_cfg *cfg)
{
	size_t n = fg_shadow_mem_size(cfg);
	void *mem;

	assert_true(n > 0);
	mem = aligned_alloc(64, (n + 63) & ~(size_t)63);
	assert_non_null(mem);
	assert_int_equal(fg_shadow_init(sh, mem, n, cfg), 0);
	return mem;
}

/* fg_lines_init(ls) at time 0 with every line in state st. */
static inline void fg_test_lines_all(struct fg_lines *ls, enum fg_line_state st, const struct fg_line_policy *pol)
{
	enum fg_line_state init[FG_LINES];

	for (unsigned i = 0; i < FG_LINES; i++)
		init[i] = st;
	fg_lines_init(ls, init, pol, 0);
}

#endif

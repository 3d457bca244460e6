/* test_fano.c - core/fano.c against every check of spec/fano.md.
 *
 * The product table below is typed in from fano.md; fano.c derives its
 * products from the oriented triples, so agreement is a real check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fg/fano.h"

/* fano.md "Signed products e_row * e_col": +k / -k for +-e_k, -1 for -e0
 * (written as 0 with negative sign: the diagonal). */
#define N(k) (-(k))
static const int fano_md_table[7][7] = {
	/*          e1     e2     e3     e4     e5     e6     e7 */
	/* e1 */ {N(0), 3, N(2), 5, N(4), N(7), 6},
	/* e2 */ {N(3), N(0), 1, 6, 7, N(4), N(5)},
	/* e3 */ {2, N(1), N(0), 7, N(6), 5, N(4)},
	/* e4 */ {N(5), N(6), N(7), N(0), 1, 2, 3},
	/* e5 */ {4, N(7), 6, N(1), N(0), N(3), 2},
	/* e6 */ {7, 4, N(5), N(2), 3, N(0), N(1)},
	/* e7 */ {N(6), 5, 4, N(3), N(2), 1, N(0)},
};

static void test_line_list_order(void **state)
{
	(void)state;
	static const uint8_t want[7][3] = {
		{1, 2, 3}, {1, 4, 5}, {1, 7, 6}, {2, 4, 6}, {2, 5, 7}, {3, 4, 7}, {3, 6, 5},
	};
	for (unsigned l = 0; l < FG_LINES; l++) {
		const uint8_t *t = fg_fano_line(l);
		assert_non_null(t);
		assert_memory_equal(t, want[l], 3);
	}
	assert_null(fg_fano_line(7));
	assert_string_equal(fg_fano_line_name(1), "(1,4,5)");
	assert_string_equal(fg_fano_line_name(6), "(3,6,5)");
	assert_string_equal(fg_fano_line_name(7), "(none)");
}

static void test_full_table(void **state)
{
	(void)state;
	for (unsigned a = 1; a <= 7; a++) {
		for (unsigned b = 1; b <= 7; b++) {
			unsigned unit = 99, neg = 99;
			int want = fano_md_table[a - 1][b - 1];

			fg_fano_mul(a, b, &unit, &neg);
			if (a == b) {
				assert_int_equal(unit, 0);
				assert_int_equal(neg, 1);
				continue;
			}
			assert_int_equal(unit, (unsigned)(want < 0 ? -want : want));
			assert_int_equal(neg, want < 0 ? 1u : 0u);
		}
	}
}

/* (e1 e2) e4 = e3 e4 = +e7 while e1 (e2 e4) = e1 e6 = -e7. */
static void test_non_associativity(void **state)
{
	(void)state;
	unsigned u1, s1, u2, s2;

	fg_fano_mul(1, 2, &u1, &s1); /* e3, + */
	assert_int_equal(u1, 3);
	assert_int_equal(s1, 0);
	fg_fano_mul(u1, 4, &u2, &s2); /* e7, + */
	unsigned left_unit = u2, left_sign = fg_sign_compose(s1, s2);
	assert_int_equal(left_unit, 7);
	assert_int_equal(left_sign, 0);

	fg_fano_mul(2, 4, &u1, &s1); /* e6, + */
	assert_int_equal(u1, 6);
	assert_int_equal(s1, 0);
	fg_fano_mul(1, u1, &u2, &s2); /* -e7 */
	unsigned right_unit = u2, right_sign = fg_sign_compose(s1, s2);
	assert_int_equal(right_unit, 7);
	assert_int_equal(right_sign, 1);

	assert_int_equal(left_unit, right_unit);
	assert_int_not_equal(left_sign, right_sign);
}

static void test_anticommutation(void **state)
{
	(void)state;
	for (unsigned i = 1; i <= 7; i++) {
		for (unsigned j = 1; j <= 7; j++) {
			if (i == j)
				continue;
			unsigned u1, s1, u2, s2;
			fg_fano_mul(i, j, &u1, &s1);
			fg_fano_mul(j, i, &u2, &s2);
			assert_int_equal(u1, u2);
			assert_int_not_equal(u1, 0);
			assert_int_equal(s1 ^ s2, 1);
		}
	}
}

static void test_pairs_on_one_line(void **state)
{
	(void)state;
	for (unsigned a = 1; a <= 7; a++) {
		for (unsigned b = 1; b <= 7; b++) {
			unsigned n = 0, found = FG_LINE_NONE;

			for (unsigned l = 0; l < FG_LINES; l++)
				if (fg_fano_on_line(l, a) && fg_fano_on_line(l, b)) {
					n++;
					found = l;
				}
			if (a == b) {
				assert_int_equal(n, 3); /* a point lies on its three lines */
				assert_int_equal(fg_fano_line_of(a, b), FG_LINE_NONE);
				continue;
			}
			assert_int_equal(n, 1);
			assert_int_equal(fg_fano_line_of(a, b), found);
			/* and the product of the two is the line's third point */
			unsigned unit, neg;
			fg_fano_mul(a, b, &unit, &neg);
			assert_true(fg_fano_on_line(found, unit));
			assert_int_not_equal(unit, a);
			assert_int_not_equal(unit, b);
		}
	}
	assert_int_equal(fg_fano_line_of(0, 1), FG_LINE_NONE);
	assert_int_equal(fg_fano_line_of(1, 8), FG_LINE_NONE);
}

static void test_three_lines_per_point(void **state)
{
	(void)state;
	for (unsigned p = 1; p <= 7; p++) {
		uint8_t m = fg_fano_lines_through(p);
		assert_int_equal(__builtin_popcount(m), 3);
		assert_int_equal(m & 0x80, 0);
		for (unsigned l = 0; l < FG_LINES; l++)
			assert_int_equal(!!(m & (1u << l)), fg_fano_on_line(l, p));
	}
	/* e4 lies on (1,4,5), (2,4,6), (3,4,7): lines 1, 3, 5 */
	assert_int_equal(fg_fano_lines_through(4), (1u << 1) | (1u << 3) | (1u << 5));
	assert_int_equal(fg_fano_lines_through(0), 0);
	assert_int_equal(fg_fano_lines_through(8), 0);
	assert_false(fg_fano_on_line(7, 1));
}

static void test_sign_compose(void **state)
{
	(void)state;
	/* + * + = +, + * - = -, - * + = -, - * - = + */
	assert_int_equal(fg_sign_compose(0, 0), 0);
	assert_int_equal(fg_sign_compose(0, 1), 1);
	assert_int_equal(fg_sign_compose(1, 0), 1);
	assert_int_equal(fg_sign_compose(1, 1), 0);
	/* XOR agrees with multiplying +-1 over every triple of signs */
	for (unsigned s = 0; s < 8; s++) {
		int prod = 1;
		unsigned x = 0;
		for (unsigned k = 0; k < 3; k++) {
			unsigned bit = (s >> k) & 1u;
			prod *= bit ? -1 : 1;
			x = fg_sign_compose(x, bit);
		}
		assert_int_equal(x, prod < 0 ? 1u : 0u);
	}
}

static void test_parse(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int want;
	} cases[] = {
		{"0", 0}, {"6", 6}, {"7", -1}, {"", -1}, {"-1", -1}, {"01", -1}, {"a", -1},
		{"1,2,3", 0}, {"2,3,1", 0}, {"3,1,2", 0}, {"3,2,1", -1}, {"1,3,2", -1},
		{"1,4,5", 1}, {"4,5,1", 1}, {"5,1,4", 1}, {"1,5,4", -1}, {"5,4,1", -1},
		{"1,7,6", 2}, {"1,6,7", -1}, {"2,4,6", 3}, {"2,5,7", 4}, {"3,4,7", 5},
		{"3,6,5", 6}, {"6,5,3", 6}, {"3,5,6", -1},
		{"(1,4,5)", 1}, {" 1, 4 ,5 ", 1}, {"(4,5,1", -1}, {"1,4,5)", -1},
		{"1,2,4", -1}, {"1,1,1", -1}, {"1,4", -1}, {"1,4,5,1", -1}, {"0,1,2", -1},
		{"(1)", -1}, {"1,4,5x", -1}, {"8,1,2", -1},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = fg_fano_line_parse(cases[i].s);
		if (got != cases[i].want)
			fail_msg("parse \"%s\": got %d want %d", cases[i].s, got, cases[i].want);
	}
	assert_int_equal(fg_fano_line_parse(NULL), -1);
	/* every name parses back to its index */
	for (unsigned l = 0; l < FG_LINES; l++)
		assert_int_equal(fg_fano_line_parse(fg_fano_line_name(l)), (int)l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_list_order),
		cmocka_unit_test(test_full_table),
		cmocka_unit_test(test_non_associativity),
		cmocka_unit_test(test_anticommutation),
		cmocka_unit_test(test_pairs_on_one_line),
		cmocka_unit_test(test_three_lines_per_point),
		cmocka_unit_test(test_sign_compose),
		cmocka_unit_test(test_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_text.c - core/text.c: UTF-8 sequence lengths (every malformed kind),
 * copies cut on character boundaries at every capacity, U+FFFD for bytes
 * that are not UTF-8, terminal escaping of controls, C1, invalid bytes and
 * the backslash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fg/text.h"

static void test_seq_len(void **state)
{
	(void)state;
	assert_int_equal(fg_utf8_seq_len("a", 1), 1);
	assert_int_equal(fg_utf8_seq_len("\xC3\xA9", 2), 2);
	assert_int_equal(fg_utf8_seq_len("\xE2\x82\xAC", 3), 3);
	assert_int_equal(fg_utf8_seq_len("\xF0\x9F\x98\x80", 4), 4);
	assert_int_equal(fg_utf8_seq_len("\xC3\xA9", 1), 0);          /* cut short */
	assert_int_equal(fg_utf8_seq_len("\xA9", 1), 0);              /* continuation */
	assert_int_equal(fg_utf8_seq_len("\xC0\xAF", 2), 0);          /* overlong */
	assert_int_equal(fg_utf8_seq_len("\xE0\x80\xAF", 3), 0);      /* overlong */
	assert_int_equal(fg_utf8_seq_len("\xED\xA0\x80", 3), 0);      /* surrogate */
	assert_int_equal(fg_utf8_seq_len("\xF4\x90\x80\x80", 4), 0);  /* > U+10FFFF */
	assert_int_equal(fg_utf8_seq_len("\xFF", 1), 0);
	assert_int_equal(fg_utf8_seq_len("\xC3" "a", 2), 0);          /* bad continuation */
	assert_int_equal(fg_utf8_seq_len("", 0), 0);
}

static void test_copy_boundaries(void **state)
{
	(void)state;
	char src[2 * 201 + 1] = "";
	for (int i = 0; i < 201; i++)
		strcat(src, "\xC3\xA9");
	char dst[512];
	for (size_t cap = 1; cap <= sizeof(dst); cap++) {
		size_t n = fg_text_copy(dst, cap, src);
		size_t want = cap - 1 >= 402 ? 402 : (cap - 1) / 2 * 2; /* whole characters only */
		assert_int_equal(n, want);
		assert_int_equal(strlen(dst), n);
		assert_memory_equal(dst, src, n);
	}
	/* a byte that is not UTF-8 counts as one character; mixed widths */
	assert_int_equal(fg_text_copy(dst, 5, "a\xFF\xE2\x82\xAC"), 2);
	assert_string_equal(dst, "a\xFF");
	assert_int_equal(fg_text_copy(dst, 6, "a\xFF\xE2\x82\xAC"), 5);
	/* in place (same buffer) is fine */
	strcpy(dst, "\xC3\xA9\xC3\xA9");
	assert_int_equal(fg_text_copy(dst, 4, dst), 2);
	assert_string_equal(dst, "\xC3\xA9");
}

static void test_utf8_fix(void **state)
{
	(void)state;
	char dst[64];
	assert_int_equal(fg_text_utf8_fix(dst, sizeof(dst), "ok \xC3\xA9"), 5);
	assert_string_equal(dst, "ok \xC3\xA9");
	assert_int_equal(fg_text_utf8_fix(dst, sizeof(dst), "cut \xC3"), 7);
	assert_string_equal(dst, "cut \xEF\xBF\xBD");
	assert_int_equal(fg_text_utf8_fix(dst, sizeof(dst), "\xED\xA0\x80"), 9); /* each byte replaced */
	/* never a partial replacement at the end */
	assert_int_equal(fg_text_utf8_fix(dst, 5, "a\xFF\xFF"), 1 + 3);
	assert_int_equal(fg_text_utf8_fix(dst, 4, "a\xFF"), 1);
}

static void test_escape(void **state)
{
	(void)state;
	char dst[128];
	fg_text_escape(dst, sizeof(dst), "plain \xC3\xA9 text");
	assert_string_equal(dst, "plain \xC3\xA9 text");
	fg_text_escape(dst, sizeof(dst), "\x1b[31mred\x07\x7f");
	assert_string_equal(dst, "\\x1b[31mred\\x07\\x7f");
	fg_text_escape(dst, sizeof(dst), "c1 \xC2\x9B end");
	assert_string_equal(dst, "c1 \\xc2\\x9b end");
	fg_text_escape(dst, sizeof(dst), "bad \xC3 and \\");
	assert_string_equal(dst, "bad \\xc3 and \\\\");
	fg_text_escape(dst, sizeof(dst), "nl\n");
	assert_string_equal(dst, "nl\\x0a");
	/* cut on an escape boundary, never inside \xNN */
	assert_int_equal(fg_text_escape(dst, 6, "ab\x1b"), 2);
	assert_int_equal(fg_text_escape(dst, 7, "ab\x1b"), 6);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seq_len),
		cmocka_unit_test(test_copy_boundaries),
		cmocka_unit_test(test_utf8_fix),
		cmocka_unit_test(test_escape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* fg_test_file.h - whole-file reads and writes for the C unit tests that
 * work on files they or the code under test wrote (the audit log and its
 * rotated files), the name of each file of a rotated log, the fresh
 * temporary directory such a test works in, and the group run that gives
 * every test of the program its own.
 * Callers: tests/audit/test_audit_log.c, test_audit_crash.c,
 * test_audit_cli.c, test_alert.c, test_shadow.c, tests/control/test_tls.c,
 * tests/hostile/test_hostile_audit.c; the test's own thread. Header only
 * (static functions): include it after <cmocka.h>. */
#ifndef FG_TEST_FILE_H
#define FG_TEST_FILE_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fg/audit_file.h"

/* A fresh directory made from tmpl ("/tmp/NAME-XXXXXX") into dir (cap
 * bytes); a directory that cannot be made fails the test. */
static inline void fg_test_tmpdir(char *dir, size_t cap, const char *tmpl)
{
	snprintf(dir, cap, "%s", tmpl);
	assert_non_null(mkdtemp(dir));
}

/* rm -rf dir: system()'s status, 0 when it is gone. */
static inline int fg_test_rmtree(const char *dir)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

/* Run the n tests as cmocka's group name, each one between setup and
 * teardown: the programs whose every test works in a fresh directory (setup
 * makes it with fg_test_tmpdir, teardown removes it with fg_test_rmtree) say
 * so once instead of on every entry. cmocka's exit status. Use it through
 * fg_test_run_each(tests, setup, teardown) on an array of
 * cmocka_unit_test(f) entries. */
static inline int fg_test_run_each_n(const char *name, struct CMUnitTest *tests, size_t n, CMFixtureFunction setup,
				     CMFixtureFunction teardown)
{
	for (size_t i = 0; i < n; i++) {
		tests[i].setup_func = setup;
		tests[i].teardown_func = teardown;
	}
	return _cmocka_run_group_tests(name, tests, n, NULL, NULL);
}
#define fg_test_run_each(tests, setup, teardown) \
	fg_test_run_each_n(#tests, tests, sizeof(tests) / sizeof((tests)[0]), setup, teardown)

/* Read all of path into a malloc'd buffer (one spare byte past *len, the
 * caller frees it); 0, or -errno when path cannot be opened (nothing
 * written). A short read fails the test. */
static inline int fg_test_read(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat sb;
	uint8_t *b;

	if (!f)
		return -errno;
	assert_int_equal(fstat(fileno(f), &sb), 0);
	b = malloc((size_t)sb.st_size + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)sb.st_size, f), (size_t)sb.st_size);
	fclose(f);
	*buf = b;
	*len = (size_t)sb.st_size;
	return 0;
}

/* As fg_test_read for a file that must exist: the buffer, its length in *len. */
static inline uint8_t *fg_test_slurp(const char *path, size_t *len)
{
	uint8_t *b = NULL;

	*len = 0;
	assert_int_equal(fg_test_read(path, &b, len), 0);
	return b;
}

/* The whole of path is exactly the n bytes want. */
static inline void fg_test_expect_file(const char *path, const uint8_t *want, size_t n)
{
	size_t len;
	uint8_t *got = fg_test_slurp(path, &len);

	assert_int_equal(len, n);
	assert_memory_equal(got, want, n);
	free(got);
}

/* Write len bytes of b as the whole of path (created or truncated). */
static inline void fg_test_spit(const char *path, const uint8_t *b, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(b, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* The name of file i of the log at path whose highest rotated file is hi:
 * path.i for i <= hi, path itself for hi + 1. */
static inline void fg_test_audit_file_name(const char *path, uint32_t i, uint32_t hi, char *name, size_t cap)
{
	if (i <= hi)
		assert_int_equal(fg_audit_file_rotated_name(path, i, name, cap), 0);
	else
		snprintf(name, cap, "%s", path);
}

#endif

/* fg_test_vectors.h - the conformance-vector reader the C unit tests share:
 * one vector of tests/data/vectors.txt (the directory in FG_TEST_DATA, set
 * by meson) by its id, as its hex text or as bytes. A line reads
 * "ID kind | description | HEX [| ...]"; the hex is the third field.
 * Callers: tests/core/test_ingest.c, tests/core/test_slot.c,
 * tests/dataplane/test_reasm.c; the test's own thread. Header only (static
 * functions): include it after <cmocka.h>; a missing file or vector, or a
 * vector larger than the caller's buffer, fails the test. */
#ifndef FG_TEST_VECTORS_H
#define FG_TEST_VECTORS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The hex of vector id, malloc'd (the caller frees it). */
static inline char *fg_test_vector_hex(const char *id)
{
	const char *dir = getenv("FG_TEST_DATA");
	char path[512], *line = NULL, *out = NULL;
	size_t cap = 0, idlen = strlen(id);
	FILE *fp;

	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/vectors.txt", dir);
	fp = fopen(path, "r");
	assert_non_null(fp);
	while (getline(&line, &cap, fp) > 0) {
		char *f1, *f2;
		if (strncmp(line, id, idlen) != 0 || line[idlen] != ' ')
			continue;
		f1 = strchr(line, '|');
		f2 = f1 ? strchr(f1 + 1, '|') : NULL;
		assert_non_null(f2);
		f2++;
		while (*f2 == ' ')
			f2++;
		out = strndup(f2, strcspn(f2, " |\n"));
		break;
	}
	free(line);
	fclose(fp);
	assert_non_null(out);
	return out;
}

/* Hex text to bytes in buf (cap bytes at most); returns the byte count. */
static inline size_t fg_test_hex_decode(const char *hex, uint8_t *buf, size_t cap)
{
	size_t n = strlen(hex) / 2;
	assert_true(n <= cap);
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		buf[i] = (uint8_t)v;
	}
	return n;
}

/* The bytes of vector id in buf (cap bytes at most); returns their count. */
static inline size_t fg_test_vector_bytes(const char *id, uint8_t *buf, size_t cap)
{
	char *hex = fg_test_vector_hex(id);
	size_t n = fg_test_hex_decode(hex, buf, cap);
	free(hex);
	return n;
}

#endif

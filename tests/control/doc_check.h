/* doc_check.h - test helper: docs/websocket.md must list every stable reason
 * with the status or close code the code answers it with. The table rows
 * look like "| `name` | 400 | ..." (several names may share a row). Test
 * code only; single-threaded. */
#ifndef TESTS_CONTROL_DOC_CHECK_H
#define TESTS_CONTROL_DOC_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole of docs/websocket.md (found from FG_TEST_DATA = tests/data), or
 * NULL when the variable is not set. Caller frees. */
static inline char *doc_load(void)
{
	const char *d = getenv("FG_TEST_DATA");
	if (!d)
		return NULL;
	char path[4096];
	snprintf(path, sizeof(path), "%s/../../docs/websocket.md", d);
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = calloc(1, 1 << 20);
	size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	if (!buf || n == 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The code written in the second cell of the table row naming `name`, or
 * -1 if no row names it. */
static inline int doc_code(const char *doc, const char *name)
{
	char needle[128];
	snprintf(needle, sizeof(needle), "`%s`", name);
	for (const char *p = doc; (p = strstr(p, needle)) != NULL; p++) {
		const char *bol = p;
		while (bol > doc && bol[-1] != '\n')
			bol--;
		if (*bol != '|')
			continue;
		const char *cell = strchr(bol + 1, '|');
		const char *eol = strchr(p, '\n');
		if (!cell || (eol && cell > eol) || cell < p)
			continue;
		return atoi(cell + 1);
	}
	return -1;
}

#endif

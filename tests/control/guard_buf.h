/* guard_buf.h - test helper: place input so that it ends exactly at a page
 * that may not be read (PROT_NONE), so any read past the end of a parser's
 * input faults instead of passing by luck. Used by the control-plane parser
 * tests; single-threaded test code only. */
#ifndef TESTS_CONTROL_GUARD_BUF_H
#define TESTS_CONTROL_GUARD_BUF_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define GUARD_AREA (256u * 1024u)

static uint8_t *guard_area_base; /* GUARD_AREA readable bytes, then a PROT_NONE page */

static inline void guard_setup(void)
{
	if (guard_area_base)
		return;
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *m = mmap(NULL, GUARD_AREA + pg, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m + GUARD_AREA, pg, PROT_NONE) != 0)
		abort();
	guard_area_base = m;
}

/* Copy n bytes so that they end right before the guard page; returns the
 * copy (writable, valid until the next guard_place). */
static inline uint8_t *guard_place(const void *data, size_t n)
{
	guard_setup();
	if (n > GUARD_AREA)
		abort();
	uint8_t *p = guard_area_base + GUARD_AREA - n;
	if (n)
		memcpy(p, data, n);
	return p;
}

#endif

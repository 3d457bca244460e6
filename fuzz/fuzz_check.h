/* fuzz_check.h - the one helper every fanogate libFuzzer target shares: a
 * property check that aborts (libFuzzer records the input as a crasher).
 * Fuzz targets only; never linked into the daemon. */
#ifndef FG_FUZZ_CHECK_H
#define FG_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond)                                                                    \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                            \
		}                                                                           \
	} while (0)

#endif

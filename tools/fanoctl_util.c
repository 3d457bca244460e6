/* fanoctl_util.c - the small helpers every fanoctl command file uses:
 * help detection, JSON output, the shortest f32 text (declared in
 * fanoctl.h).
 *
 * Who may call: any fanoctl command file; the fanoctl process is
 * single-threaded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fanoctl.h"

bool fanoctl_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return false;
		if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
			return true;
	}
	return false;
}

void fanoctl_json_print(json_t *v)
{
	char *s = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9));

	if (s) {
		puts(s);
		free(s);
	}
	json_decref(v);
}

void fanoctl_float_text(float f, char *buf, size_t cap)
{
	if (isnan(f)) {
		snprintf(buf, cap, "nan");
		return;
	}
	/* The shortest %g that reads back as the same float: 0.1f prints
	 * "0.1", not "0.100000001". 9 digits always round-trips. */
	for (int prec = 1; prec <= 9; prec++) {
		snprintf(buf, cap, "%.*g", prec, (double)f);
		if (strtof(buf, NULL) == f)
			return;
	}
}

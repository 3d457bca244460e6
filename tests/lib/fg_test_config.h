/* fg_test_config.h - a configuration text that fg_config_parse must
 * refuse, checked the same way by the C unit tests of the parser.
 * Callers: tests/core/test_config.c, tests/cluster/test_cluster_config.c;
 * the test's own thread. Header only (static functions): include it after
 * <cmocka.h>. */
#ifndef FG_TEST_CONFIG_H
#define FG_TEST_CONFIG_H

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "fg/config.h"

/* fg_config_parse refuses text (case i of a table, file "t.ini") with
 * -EINVAL at line `line`, with a reason that contains `reason`, and leaves
 * its output untouched. The error comes back in *err. */
static inline void fg_test_config_refused(size_t i, const char *text, int line, const char *reason,
					  struct fg_config_error *err)
{
	struct fg_config c;

	memset(&c, 0x77, sizeof(c));
	int rc = fg_config_parse(&c, text, "t.ini", err);
	if (rc != -EINVAL)
		fail_msg("case %zu (%s): rc %d, want -EINVAL", i, reason, rc);
	assert_string_equal(err->file, "t.ini");
	if (err->line != line || !strstr(err->reason, reason))
		fail_msg("case %zu: got line %d \"%s\", want line %d containing \"%s\"", i, err->line, err->reason,
			 line, reason);
	/* the output is untouched on failure */
	assert_int_equal(c.hidden, 0x77777777u);
}

#endif

/* fg_test_status.h - the status record (include/fg/wire.h struct
 * fg_status) compared field by field, for the C unit tests that decode one
 * and check it against the one encoded. Callers: tests/core/test_wire.c,
 * tests/core/test_ingest.c; the test's own thread. Header only (static
 * functions): include it after <cmocka.h>. */
#ifndef FG_TEST_STATUS_H
#define FG_TEST_STATUS_H

#include "fg/wire.h"

/* Every field of got equals the same field of want. */
static inline void fg_test_status_equal(const struct fg_status *got, const struct fg_status *want)
{
	assert_int_equal(got->token_seq, want->token_seq);
	assert_int_equal(got->dst_layer, want->dst_layer);
	assert_int_equal(got->outcome, want->outcome);
	assert_int_equal(got->line, want->line);
	assert_int_equal(got->sign, want->sign);
	assert_int_equal(got->bitset, want->bitset);
	assert_int_equal(got->expected, want->expected);
	assert_int_equal(got->landed, want->landed);
	assert_int_equal(got->facts, want->facts);
	assert_int_equal(got->line_state, want->line_state);
	assert_int_equal(got->reason, want->reason);
	assert_int_equal(got->bytes, want->bytes);
	assert_int_equal(got->model_epoch, want->model_epoch);
	assert_int_equal(got->fingerprint, want->fingerprint);
}

#endif

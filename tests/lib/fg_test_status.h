/* fg_test_status.h - the status record (include/fg/wire.h struct
 * fg_status) compared field by field, for the C unit tests that decode one
 * and check it against the one encoded; and a random seed and engine
 * result to build a status from. Callers: tests/core/test_wire.c,
 * tests/core/test_ingest.c, tests/dataplane/test_tx_reply.c; the test's
 * own thread. Header only (static functions): include it after
 * <cmocka.h>. */
#ifndef FG_TEST_STATUS_H
#define FG_TEST_STATUS_H

#include "fg/fano.h"
#include "fg/slot.h"
#include "fg/wire.h"

#include "fg_test_rng.h"

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

/* A decoded seed and an engine result from the draws a, b, c (and one more
 * from *x, the fingerprint): every line and none, either sign, every
 * outcome and slot state, any 7-line masks, epochs and fingerprints. */
static inline void fg_test_status_draw(uint64_t *x, uint64_t a, uint64_t b, uint64_t c, struct fg_seed *seed,
				       struct fg_slot_result *r)
{
	unsigned line = (unsigned)(a % (FG_LINES + 1));
	*seed = (struct fg_seed){.token_seq = (uint32_t)(a >> 8),
				 .dst_layer = (uint16_t)(b >> 48),
				 .line = line == FG_LINES ? FG_LINE_NONE : (uint8_t)line,
				 .orientation = (uint8_t)(a >> 40 & 1),
				 .body_len = (uint32_t)(c >> 32)};
	*r = (struct fg_slot_result){.outcome = (enum fg_outcome)((a >> 41) % FG_O__COUNT),
				     .slot = (uint32_t)c,
				     .landed = (uint8_t)(a >> 50 & FG_FANO_FULL_MASK),
				     .expected = (uint8_t)(a >> 57 & FG_FANO_FULL_MASK),
				     .state = (uint8_t)((b >> 14) % (FG_SLOT_POISONED + 1)),
				     .epoch = (uint32_t)(c >> 16) >> (a & 31),
				     .fingerprint = fg_test_xorshift64(x),
				     .bytes = (uint32_t)(c >> 32)};
}

#endif

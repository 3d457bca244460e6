/* fg_test_rng.h - the deterministic generator of the C unit tests that
 * draw random inputs (xorshift64*: a failure reproduces from the seed).
 * Callers: tests/core/test_slot.c, tests/core/test_slot_threads.c,
 * tests/audit/test_audit_rec.c, tests/dataplane/test_dlv.c; the thread that
 * owns *state. Header only. */
#ifndef FG_TEST_RNG_H
#define FG_TEST_RNG_H

#include <stdint.h>

/* The next value of the xorshift64* sequence in *state (never 0). */
static inline uint64_t fg_test_rng(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return *state * 0x2545F4914F6CDD1Dull;
}

/* The next value of Marsaglia's xorshift64 (13, 7, 17) in *state (never 0). */
static inline uint64_t fg_test_xorshift64(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif

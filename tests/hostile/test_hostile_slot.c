/* test_hostile_slot.c - a slot whose only
 * attempt was aborted is freed (core/slot.c fg_slot_abort).
 *
 * A fragment-0-only group begins a fragment attempt (fg_slot_begin opens
 * the slot), then the reassembler gives up on it (fg_slot_abort, at the
 * reassembly timeout). Before this change the slot stayed OPEN until its
 * deadline, so a flood of fragment 0s held every slot of a 4-slot table
 * and real keys got no_slot. Checks: the aborted slot is FREE at once
 * (counted in abandoned, the ledger holds), real keys get slots, the key
 * itself reopens; a slot that still has a whole line or another attempt
 * in progress is NOT freed. Pure core, single thread. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fg/slot.h"
#include "fg/wire.h"

#define HIDDEN 8
#define CAP 4
#define SEC 1000000000ull

/* A 4-slot table and the body every seed of the test carries. */
struct tab {
	struct fg_slots s;
	void *mem;
	uint8_t body[HIDDEN * 4];
};

static void tab_init(struct tab *t, uint8_t fill)
{
	memset(t->body, fill, sizeof(t->body));
	struct fg_slots_cfg cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.capacity = CAP;
	cfg.hidden = HIDDEN;
	cfg.max_seq_len = 1;
	cfg.n_layers = 1;
	cfg.n_shards = 1;
	cfg.deadline_ns = 60 * SEC;
	const uint8_t lines[3] = {1, 3, 5};
	assert_int_equal(fg_rule_make(&cfg.rules[0], lines, 3), 0);
	size_t len = fg_slots_mem_size(&cfg);
	t->mem = aligned_alloc(64, (len + 63) & ~(size_t)63);
	assert_non_null(t->mem);
	memset(t->mem, 0, len);
	assert_int_equal(fg_slots_init(&t->s, t->mem, len, &cfg), 0);
}

static struct fg_seed seed_of(uint32_t token, uint8_t line, const uint8_t *body)
{
	struct fg_seed sd = {.token_seq = token, .dst_layer = 0, .line = line, .orientation = 0,
			     .start_pos = 0, .seq_len = 1, .body = body, .body_len = HIDDEN * 4};
	return sd;
}

static enum fg_slot_state state_of(const struct tab *t, uint32_t token)
{
	struct fg_slot_info info;
	if (fg_slot_lookup(&t->s, token, 0, &info) != 0)
		return FG_SLOT_FREE;
	return info.state;
}

static void test_fragment0_flood_frees_slots(void **state)
{
	(void)state;
	struct tab t;
	tab_init(&t, 0x3F);
	struct fg_slot_result res;
	struct fg_slot_ref ref[CAP];
	/* The flood: fragment 0 of a seed for CAP different keys, then the
	 * reassembly timeout aborts each attempt. */
	for (uint32_t k = 0; k < CAP; k++) {
		struct fg_seed sd = seed_of(1000 + k, 1, t.body);
		assert_int_equal(fg_slot_begin(&t.s, &sd, SEC, &ref[k], &res), 0);
		assert_int_equal(res.outcome, FG_O_PARTIAL);
	}
	assert_int_equal(t.s.in_use, CAP);
	for (uint32_t k = 0; k < CAP; k++)
		fg_slot_abort(&t.s, &ref[k]);
	for (uint32_t k = 0; k < CAP; k++)
		if (state_of(&t, 1000 + k) != FG_SLOT_FREE)
			fail_msg("slot of key %u still %s after its only attempt was aborted", 1000 + k,
				 fg_slot_state_name(state_of(&t, 1000 + k)));
	assert_int_equal(t.s.in_use, 0);
	/* Real keys get slots and resolve. */
	for (uint32_t k = 0; k < CAP; k++) {
		for (uint8_t ln = 1; ln <= 5; ln += 2) {
			struct fg_seed sd = seed_of(k, ln, t.body);
			assert_int_equal(fg_slot_put(&t.s, &sd, 2 * SEC, &res), 0);
		}
		assert_int_equal(res.outcome, FG_O_RESOLVED);
	}
	/* Ledger: opened = in_use + resolved + expired + flushed + abandoned. */
	assert_int_equal(t.s.opened, t.s.in_use + t.s.resolved + t.s.expired + t.s.flushed + t.s.abandoned);
	assert_int_equal(t.s.abandoned, CAP);
	free(t.mem);
}

static void test_abort_keeps_slots_with_other_work(void **state)
{
	(void)state;
	struct tab t;
	tab_init(&t, 0x40);
	struct fg_slot_result res;
	struct fg_slot_ref a, b;
	/* A whole line 3, then a fragment attempt of line 1 aborted: kept. */
	struct fg_seed whole = seed_of(7, 3, t.body);
	assert_int_equal(fg_slot_put(&t.s, &whole, SEC, &res), 0);
	struct fg_seed frag = seed_of(7, 1, t.body);
	assert_int_equal(fg_slot_begin(&t.s, &frag, SEC, &a, &res), 0);
	fg_slot_abort(&t.s, &a);
	assert_int_equal(state_of(&t, 7), FG_SLOT_OPEN);
	/* Two fragment attempts (lines 1 and 5) of key 8; one aborted: kept;
	 * the other aborted too: freed. */
	struct fg_seed f1 = seed_of(8, 1, t.body), f5 = seed_of(8, 5, t.body);
	assert_int_equal(fg_slot_begin(&t.s, &f1, SEC, &a, &res), 0);
	assert_int_equal(fg_slot_begin(&t.s, &f5, SEC, &b, &res), 0);
	fg_slot_abort(&t.s, &a);
	assert_int_equal(state_of(&t, 8), FG_SLOT_OPEN);
	fg_slot_abort(&t.s, &b);
	assert_int_equal(state_of(&t, 8), FG_SLOT_FREE);
	/* A stale abort (the attempt was superseded by a newer begin) changes
	 * nothing: the newer attempt still holds the slot. */
	assert_int_equal(fg_slot_begin(&t.s, &f1, SEC, &a, &res), 0);
	assert_int_equal(fg_slot_begin(&t.s, &f1, SEC, &b, &res), 0);
	fg_slot_abort(&t.s, &a);
	assert_int_equal(state_of(&t, 8), FG_SLOT_OPEN);
	/* The completed attempt is no longer pending: aborting the stale ref
	 * of a whole line changes nothing either. */
	assert_int_equal(fg_slot_place(&t.s, &b, 0, t.body, sizeof(t.body), SEC, &res), 0);
	assert_int_equal(res.outcome, FG_O_ACCEPTED);
	fg_slot_abort(&t.s, &b);
	assert_int_equal(state_of(&t, 8), FG_SLOT_OPEN);
	free(t.mem);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fragment0_flood_frees_slots),
		cmocka_unit_test(test_abort_keeps_slots_with_other_work),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

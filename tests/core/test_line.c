/* test_line.c - core/line.c: every row of the transition table in line.h,
 * the refusals, the promotion window and the degraded overlay. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "fg/line.h"

#define MS 1000000ull
#define UID 1000u
#define PID 4242

static const struct fg_line_policy pol_auto = {.auto_promote = true, .promote_count = 3, .promote_ns = 100 * MS};

static void init_all(struct fg_lines *ls, enum fg_line_state st, const struct fg_line_policy *pol)
{
	enum fg_line_state init[FG_LINES];

	for (unsigned i = 0; i < FG_LINES; i++)
		init[i] = st;
	fg_lines_init(ls, init, pol, 1000 * MS);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(fg_line_state_name(FG_LINE_DISABLED), "disabled");
	assert_string_equal(fg_line_state_name(FG_LINE_SHADOW), "shadow");
	assert_string_equal(fg_line_state_name(FG_LINE_ACTIVE), "active");
	assert_string_equal(fg_line_state_name(FG_LINE_DEGRADED), "degraded");
	assert_string_equal(fg_line_state_name((enum fg_line_state)9), "unknown");
	assert_int_equal(fg_line_state_parse("disabled"), FG_LINE_DISABLED);
	assert_int_equal(fg_line_state_parse("shadow"), FG_LINE_SHADOW);
	assert_int_equal(fg_line_state_parse("active"), FG_LINE_ACTIVE);
	assert_int_equal(fg_line_state_parse("degraded"), -1);
	assert_int_equal(fg_line_state_parse("Active"), -1);
	assert_int_equal(fg_line_state_parse(""), -1);
	assert_int_equal(fg_line_state_parse(NULL), -1);
	assert_string_equal(fg_line_event_name(FG_LEV_DIVERGENCE), "divergence");
	assert_string_equal(fg_line_event_name((enum fg_line_event)99), "unknown");
}

static void test_init(void **state)
{
	(void)state;
	struct fg_lines ls;
	enum fg_line_state init[FG_LINES] = {FG_LINE_DISABLED, FG_LINE_SHADOW, FG_LINE_ACTIVE, FG_LINE_DEGRADED,
					     FG_LINE_SHADOW,   FG_LINE_SHADOW, FG_LINE_SHADOW};

	fg_lines_init(&ls, init, &pol_auto, 5 * MS);
	assert_int_equal(fg_line_effective(&ls, 0), FG_LINE_DISABLED);
	assert_int_equal(fg_line_effective(&ls, 1), FG_LINE_SHADOW);
	assert_int_equal(fg_line_effective(&ls, 2), FG_LINE_ACTIVE);
	assert_int_equal(fg_line_effective(&ls, 3), FG_LINE_SHADOW); /* not a base state */
	assert_true(ls.line[4].auto_promote);
	assert_int_equal(ls.line[4].window_start_ns, 5 * MS);
	assert_int_equal(ls.points_down, 0);
	assert_false(fg_line_is_usable(&ls, 0));
	assert_false(fg_line_is_usable(&ls, 1));
	assert_true(fg_line_is_usable(&ls, 2));
	assert_false(fg_line_is_shadow(&ls, 0));
	assert_true(fg_line_is_shadow(&ls, 1));
	assert_false(fg_line_is_shadow(&ls, 2));
	assert_int_equal(fg_line_effective(&ls, 7), FG_LINE_DISABLED);
	assert_false(fg_line_is_usable(&ls, 7));
}

/* One row of the operator part of the table. */
struct op_row {
	enum fg_line_state from;
	enum fg_line_event ev;
	int rc;
	enum fg_line_state to;
};

static void test_operator_rows(void **state)
{
	(void)state;
	static const struct op_row rows[] = {
		{FG_LINE_DISABLED, FG_LEV_OP_ENABLE, 1, FG_LINE_SHADOW},
		{FG_LINE_SHADOW, FG_LEV_OP_ENABLE, -EALREADY, FG_LINE_SHADOW},
		{FG_LINE_ACTIVE, FG_LEV_OP_ENABLE, -EALREADY, FG_LINE_ACTIVE},
		{FG_LINE_DISABLED, FG_LEV_OP_DISABLE, 0, FG_LINE_DISABLED},
		{FG_LINE_SHADOW, FG_LEV_OP_DISABLE, 1, FG_LINE_DISABLED},
		{FG_LINE_ACTIVE, FG_LEV_OP_DISABLE, 1, FG_LINE_DISABLED},
		{FG_LINE_DISABLED, FG_LEV_OP_SHADOW, 1, FG_LINE_SHADOW},
		{FG_LINE_SHADOW, FG_LEV_OP_SHADOW, 0, FG_LINE_SHADOW},
		{FG_LINE_ACTIVE, FG_LEV_OP_SHADOW, 1, FG_LINE_SHADOW},
		{FG_LINE_DISABLED, FG_LEV_OP_ACTIVE, 1, FG_LINE_ACTIVE},
		{FG_LINE_SHADOW, FG_LEV_OP_ACTIVE, 1, FG_LINE_ACTIVE},
		{FG_LINE_ACTIVE, FG_LEV_OP_ACTIVE, 0, FG_LINE_ACTIVE},
	};
	for (size_t i = 0; i < FG_ARRAY_LEN(rows); i++) {
		struct fg_lines ls;
		struct fg_line_change chg;

		init_all(&ls, rows[i].from, &pol_auto);
		memset(&chg, 0xA5, sizeof(chg));
		int rc = fg_line_apply(&ls, 3, rows[i].ev, 2000 * MS, UID, PID, "ticket OPS-1", &chg);
		if (rc != rows[i].rc)
			fail_msg("row %zu: rc %d want %d", i, rc, rows[i].rc);
		assert_int_equal(fg_line_effective(&ls, 3), rows[i].to);
		assert_int_equal(ls.line[3].base, rows[i].to);
		/* other lines untouched */
		for (unsigned o = 0; o < FG_LINES; o++)
			if (o != 3)
				assert_int_equal(ls.line[o].base, rows[i].from);
		if (rc == 1) {
			assert_int_equal(chg.line, 3);
			assert_int_equal(chg.from, rows[i].from);
			assert_int_equal(chg.to, rows[i].to);
			assert_int_equal(chg.base_from, rows[i].from);
			assert_int_equal(chg.base_to, rows[i].to);
			assert_int_equal(chg.event, rows[i].ev);
			assert_int_equal(chg.uid, UID);
			assert_int_equal(chg.pid, PID);
			assert_string_equal(chg.why, "ticket OPS-1");
		} else {
			/* chg untouched when nothing changed or refused */
			assert_int_equal(chg.line, 0xA5A5A5A5u);
		}
	}
}

static void test_default_why_and_null_chg(void **state)
{
	(void)state;
	struct fg_lines ls;
	struct fg_line_change chg;

	init_all(&ls, FG_LINE_DISABLED, &pol_auto);
	assert_int_equal(fg_line_apply(&ls, 0, FG_LEV_OP_ENABLE, 0, UID, PID, NULL, &chg), 1);
	assert_string_equal(chg.why, "operator enable");
	assert_int_equal(fg_line_apply(&ls, 0, FG_LEV_OP_ACTIVE, 0, UID, PID, NULL, NULL), 1);
	assert_int_equal(fg_line_effective(&ls, 0), FG_LINE_ACTIVE);
	/* why longer than the field is truncated, not overflowed */
	char longwhy[300];
	memset(longwhy, 'x', sizeof(longwhy) - 1);
	longwhy[sizeof(longwhy) - 1] = '\0';
	assert_int_equal(fg_line_apply(&ls, 0, FG_LEV_OP_DISABLE, 0, UID, PID, longwhy, &chg), 1);
	assert_int_equal(strlen(chg.why), sizeof(chg.why) - 1);
}

static void test_bad_arguments(void **state)
{
	(void)state;
	struct fg_lines ls;
	struct fg_line_change chg;

	init_all(&ls, FG_LINE_SHADOW, &pol_auto);
	assert_int_equal(fg_line_apply(&ls, 7, FG_LEV_OP_DISABLE, 0, UID, PID, NULL, &chg), -EINVAL);
	assert_int_equal(fg_line_apply(&ls, 1, (enum fg_line_event)77, 0, UID, PID, NULL, &chg), -EINVAL);
	assert_int_equal(fg_line_apply(&ls, 1, FG_LEV_POINT_DOWN, 0, UID, PID, NULL, &chg), -EINVAL);
	struct fg_line_change c3[3];
	assert_int_equal(fg_lines_point(&ls, 0, true, 0, c3), -EINVAL);
	assert_int_equal(fg_lines_point(&ls, 8, true, 0, c3), -EINVAL);
	assert_int_equal(ls.points_down, 0);
}

/* Promotion needs auto_promote, promote_count clean verdicts AND promote_ns
 * since the window opened; each condition alone is not enough. */
static void test_promotion_needs_count_and_time(void **state)
{
	(void)state;
	struct fg_lines ls;
	struct fg_line_change chg;
	uint64_t t0 = 1000 * MS;

	init_all(&ls, FG_LINE_SHADOW, &pol_auto);
	/* count reached early: no promotion before 100 ms */
	for (int i = 0; i < 10; i++)
		assert_int_equal(fg_line_apply(&ls, 1, FG_LEV_CLEAN, t0 + 10 * MS, FG_UID_AUDIT, 0, NULL, &chg), 0);
	assert_int_equal(ls.line[1].clean, 10);
	assert_int_equal(fg_line_effective(&ls, 1), FG_LINE_SHADOW);
	/* time reached: the next clean verdict promotes */
	assert_int_equal(fg_line_apply(&ls, 1, FG_LEV_CLEAN, t0 + 100 * MS, FG_UID_AUDIT, 0, NULL, &chg), 1);
	assert_int_equal(fg_line_effective(&ls, 1), FG_LINE_ACTIVE);
	assert_int_equal(chg.from, FG_LINE_SHADOW);
	assert_int_equal(chg.to, FG_LINE_ACTIVE);
	assert_int_equal(chg.event, FG_LEV_CLEAN);
	assert_int_equal(chg.uid, FG_UID_AUDIT);
	assert_string_equal(chg.why, "promoted: 11 clean verdicts in 100 ms");
	assert_int_equal(ls.line[1].verdicts, 11);
	/* active: clean verdicts only count */
	assert_int_equal(fg_line_apply(&ls, 1, FG_LEV_CLEAN, t0 + 200 * MS, FG_UID_AUDIT, 0, NULL, &chg), 0);
	assert_int_equal(ls.line[1].verdicts, 12);

	/* time passed but too few verdicts */
	init_all(&ls, FG_LINE_SHADOW, &pol_auto);
	assert_int_equal(fg_line_apply(&ls, 2, FG_LEV_CLEAN, t0 + 500 * MS, FG_UID_AUDIT, 0, NULL, &chg), 0);
	assert_int_equal(fg_line_apply(&ls, 2, FG_LEV_CLEAN, t0 + 500 * MS, FG_UID_AUDIT, 0, NULL, &chg), 0);
	assert_int_equal(fg_line_effective(&ls, 2), FG_LINE_SHADOW);
	assert_int_equal(fg_line_apply(&ls, 2, FG_LEV_CLEAN, t0 + 500 * MS, FG_UID_AUDIT, 0, NULL, &chg), 1);
	assert_int_equal(fg_line_effective(&ls, 2), FG_LINE_ACTIVE);
}

static void test_promotion_refused_without_auto(void **state)
{
	(void)state;
	struct fg_lines ls;
	struct fg_line_change chg;
	struct fg_line_policy off = pol_auto;

	off.auto_promote = false;
	init_all(&ls, FG_LINE_SHADOW, &off);
	for (int i = 0; i < 50; i++)
		assert_int_equal(fg_line_apply(&ls, 4, FG_LEV_CLEAN, 9000 * MS, FG_UID_AUDIT, 0, NULL, &chg), 0);
	assert_int_equal(fg_line_effective(&ls, 4), FG_LINE_SHADOW);
	/* operator allows it for this line only: the window already holds enough */
	fg_line_set_auto_promote(&ls, 4, true);
	assert_int_equal(fg_line_apply(&ls, 4, FG_LEV_CLEAN, 9000 * MS, FG_UID_AUDIT, 0, NULL, &chg), 1);
	assert_int_equal(fg_line_effective(&ls, 4), FG_LINE_ACTIVE);
	assert_false(ls.line[5].auto_promote);
	fg_line_set_auto_promote(&ls, 9, true); /* ignored */
}

static void test_clean_on_disabled_counts_only(void **state)
{
	(void)state;
	struct fg_lines ls;

	init_all(&ls, FG_LINE_DISABLED, &pol_auto);
	for (int i = 0; i < 10; i++)
		assert_int_equal(fg_line_apply(&ls, 0, FG_LEV_CLEAN, 9000 * MS, FG_UID_AUDIT, 0, NULL, NULL), 0);
	assert_int_equal(fg_line_effective(&ls, 0), FG_LINE_DISABLED);
	assert_int_equal(ls.line[0].clean, 0);
	assert_int_equal(ls.line[0].verdicts, 10);
}

static void test_divergence_and_conflict_demote(void **state)
{
	(void)state;
	static const enum fg_line_event evs[] = {FG_LEV_DIVERGENCE, FG_LEV_CONFLICT};

	for (size_t e = 0; e < FG_ARRAY_LEN(evs); e++) {
		struct fg_lines ls;
		struct fg_line_change chg;
		uint64_t t0 = 1000 * MS;

		/* ACTIVE -> SHADOW, window reset at now */
		init_all(&ls, FG_LINE_ACTIVE, &pol_auto);
		ls.line[5].clean = 40;
		assert_int_equal(fg_line_apply(&ls, 5, evs[e], t0 + 7 * MS, FG_UID_AUDIT, 0, NULL, &chg), 1);
		assert_int_equal(fg_line_effective(&ls, 5), FG_LINE_SHADOW);
		assert_int_equal(chg.from, FG_LINE_ACTIVE);
		assert_int_equal(chg.to, FG_LINE_SHADOW);
		assert_int_equal(chg.event, evs[e]);
		assert_string_equal(chg.why, evs[e] == FG_LEV_DIVERGENCE ? "demoted: fingerprint divergence"
									   : "demoted: conflicting duplicate");
		assert_int_equal(ls.line[5].clean, 0);
		assert_int_equal(ls.line[5].window_start_ns, t0 + 7 * MS);
		assert_int_equal(evs[e] == FG_LEV_DIVERGENCE ? ls.line[5].divergences : ls.line[5].conflicts, 1);

		/* SHADOW stays SHADOW but its window restarts: the clean verdicts
		 * gathered before the divergence no longer count */
		init_all(&ls, FG_LINE_SHADOW, &pol_auto);
		assert_int_equal(fg_line_apply(&ls, 5, FG_LEV_CLEAN, t0 + 150 * MS, FG_UID_AUDIT, 0, NULL, NULL), 0);
		assert_int_equal(fg_line_apply(&ls, 5, FG_LEV_CLEAN, t0 + 150 * MS, FG_UID_AUDIT, 0, NULL, NULL), 0);
		assert_int_equal(fg_line_apply(&ls, 5, evs[e], t0 + 150 * MS, FG_UID_AUDIT, 0, NULL, &chg), 0);
		assert_int_equal(ls.line[5].clean, 0);
		assert_int_equal(ls.line[5].window_start_ns, t0 + 150 * MS);
		/* three clean verdicts right after: count reached, time not */
		for (int i = 0; i < 3; i++)
			assert_int_equal(fg_line_apply(&ls, 5, FG_LEV_CLEAN, t0 + 160 * MS, FG_UID_AUDIT, 0, NULL, NULL), 0);
		assert_int_equal(fg_line_effective(&ls, 5), FG_LINE_SHADOW);
		assert_int_equal(fg_line_apply(&ls, 5, FG_LEV_CLEAN, t0 + 250 * MS, FG_UID_AUDIT, 0, NULL, NULL), 1);
		assert_int_equal(fg_line_effective(&ls, 5), FG_LINE_ACTIVE);

		/* DISABLED stays DISABLED */
		init_all(&ls, FG_LINE_DISABLED, &pol_auto);
		assert_int_equal(fg_line_apply(&ls, 5, evs[e], t0, FG_UID_AUDIT, 0, NULL, &chg), 0);
		assert_int_equal(fg_line_effective(&ls, 5), FG_LINE_DISABLED);
	}
}

static void test_operator_shadow_resets_window(void **state)
{
	(void)state;
	struct fg_lines ls;
	uint64_t t0 = 1000 * MS;

	init_all(&ls, FG_LINE_DISABLED, &pol_auto);
	assert_int_equal(fg_line_apply(&ls, 6, FG_LEV_OP_ENABLE, t0 + 500 * MS, UID, PID, NULL, NULL), 1);
	assert_int_equal(ls.line[6].window_start_ns, t0 + 500 * MS);
	/* the window opened at enable, not at init */
	for (int i = 0; i < 3; i++)
		assert_int_equal(fg_line_apply(&ls, 6, FG_LEV_CLEAN, t0 + 550 * MS, FG_UID_AUDIT, 0, NULL, NULL), 0);
	assert_int_equal(fg_line_effective(&ls, 6), FG_LINE_SHADOW);
	/* op_shadow on an already-shadow line keeps the window */
	assert_int_equal(fg_line_apply(&ls, 6, FG_LEV_OP_SHADOW, t0 + 560 * MS, UID, PID, NULL, NULL), 0);
	assert_int_equal(ls.line[6].clean, 3);
	assert_int_equal(ls.line[6].window_start_ns, t0 + 500 * MS);
	assert_int_equal(fg_line_apply(&ls, 6, FG_LEV_CLEAN, t0 + 600 * MS, FG_UID_AUDIT, 0, NULL, NULL), 1);
	/* active -> op_shadow: fresh window */
	assert_int_equal(fg_line_apply(&ls, 6, FG_LEV_OP_SHADOW, t0 + 700 * MS, UID, PID, NULL, NULL), 1);
	assert_int_equal(ls.line[6].clean, 0);
	assert_int_equal(ls.line[6].window_start_ns, t0 + 700 * MS);
}

static void test_degraded_overlay(void **state)
{
	(void)state;
	struct fg_lines ls;
	struct fg_line_change chg[3];
	enum fg_line_state init[FG_LINES] = {FG_LINE_DISABLED, FG_LINE_ACTIVE, FG_LINE_SHADOW, FG_LINE_ACTIVE,
					     FG_LINE_SHADOW,   FG_LINE_SHADOW, FG_LINE_ACTIVE};

	fg_lines_init(&ls, init, &pol_auto, 0);
	/* e4 lies on lines 1 (1,4,5), 3 (2,4,6), 5 (3,4,7) */
	int n = fg_lines_point(&ls, 4, true, 10 * MS, chg);
	assert_int_equal(n, 3);
	assert_int_equal(chg[0].line, 1);
	assert_int_equal(chg[0].from, FG_LINE_ACTIVE);
	assert_int_equal(chg[0].to, FG_LINE_DEGRADED);
	assert_int_equal(chg[0].base_from, FG_LINE_ACTIVE);
	assert_int_equal(chg[0].base_to, FG_LINE_ACTIVE);
	assert_int_equal(chg[0].event, FG_LEV_POINT_DOWN);
	assert_int_equal(chg[0].uid, FG_UID_AUDIT);
	assert_string_equal(chg[0].why, "point e4 has no live peer");
	assert_int_equal(chg[1].line, 3);
	assert_int_equal(chg[2].line, 5);
	assert_int_equal(chg[2].from, FG_LINE_SHADOW);
	assert_int_equal(fg_line_effective(&ls, 1), FG_LINE_DEGRADED);
	assert_false(fg_line_is_usable(&ls, 1));
	assert_true(fg_line_is_shadow(&ls, 1)); /* degraded over active is not trusted */
	assert_int_equal(fg_line_effective(&ls, 6), FG_LINE_ACTIVE); /* (3,6,5) does not hold e4 */
	assert_true(fg_line_is_usable(&ls, 6));
	/* marking it down again changes nothing */
	assert_int_equal(fg_lines_point(&ls, 4, true, 11 * MS, chg), 0);

	/* e1 down too: lines 0 (disabled: no overlay), 1 (already degraded), 2 */
	n = fg_lines_point(&ls, 1, true, 12 * MS, chg);
	assert_int_equal(n, 1);
	assert_int_equal(chg[0].line, 2);
	assert_int_equal(fg_line_effective(&ls, 0), FG_LINE_DISABLED);

	/* e4 back: line 1 still degraded by e1; lines 3 and 5 restored */
	n = fg_lines_point(&ls, 4, false, 13 * MS, chg);
	assert_int_equal(n, 2);
	assert_int_equal(chg[0].line, 3);
	assert_int_equal(chg[0].from, FG_LINE_DEGRADED);
	assert_int_equal(chg[0].to, FG_LINE_ACTIVE);
	assert_int_equal(chg[0].event, FG_LEV_POINT_UP);
	assert_int_equal(chg[1].line, 5);
	assert_int_equal(chg[1].to, FG_LINE_SHADOW);
	assert_int_equal(fg_line_effective(&ls, 1), FG_LINE_DEGRADED);

	/* operator transitions while degraded keep the overlay and are reported
	 * (base changed even though the effective state did not) */
	struct fg_line_change c;
	assert_int_equal(fg_line_apply(&ls, 1, FG_LEV_OP_SHADOW, 14 * MS, UID, PID, NULL, &c), 1);
	assert_int_equal(c.from, FG_LINE_DEGRADED);
	assert_int_equal(c.to, FG_LINE_DEGRADED);
	assert_int_equal(c.base_from, FG_LINE_ACTIVE);
	assert_int_equal(c.base_to, FG_LINE_SHADOW);
	/* no promotion while degraded, however clean the window */
	for (int i = 0; i < 10; i++)
		assert_int_equal(fg_line_apply(&ls, 1, FG_LEV_CLEAN, 5000 * MS, FG_UID_AUDIT, 0, NULL, &c), 0);
	assert_int_equal(ls.line[1].base, FG_LINE_SHADOW);
	/* disable while degraded: effective DISABLED */
	assert_int_equal(fg_line_apply(&ls, 2, FG_LEV_OP_DISABLE, 15 * MS, UID, PID, NULL, &c), 1);
	assert_int_equal(c.from, FG_LINE_DEGRADED);
	assert_int_equal(c.to, FG_LINE_DISABLED);

	/* e1 back: line 1 shows its (new) base state, line 2 stays disabled */
	n = fg_lines_point(&ls, 1, false, 16 * MS, chg);
	assert_int_equal(n, 1);
	assert_int_equal(chg[0].line, 1);
	assert_int_equal(chg[0].to, FG_LINE_SHADOW);
	assert_int_equal(ls.points_down, 0);
	/* and the window it kept promotes on the next clean verdict */
	assert_int_equal(fg_line_apply(&ls, 1, FG_LEV_CLEAN, 5000 * MS, FG_UID_AUDIT, 0, NULL, &c), 1);
	assert_int_equal(fg_line_effective(&ls, 1), FG_LINE_ACTIVE);
}

/* Promotion on value: a clean window that is not ahead of the canonical
 * chain stays in shadow; the hold is reported once per window (2 =
 * FG_LINE_HELD, states unchanged, the reason), the window keeps counting
 * and promotes once it is ahead; a reset empties it. */
static void test_promotion_held_by_lead(void **state)
{
	(void)state;
	struct fg_lines ls;
	struct fg_line_change chg;
	struct fg_line_policy pol = pol_auto;
	pol.min_ahead = 0.5;
	init_all(&ls, FG_LINE_SHADOW, &pol);
	uint64_t t = 2000 * MS; /* the window (100 ms) is old enough */
	const int64_t ahead = 2 * (int64_t)MS, behind = -(int64_t)MS;
	char why[128];
	fg_line_promotion(&ls, 1, t, why, sizeof(why));
	assert_string_equal(why, "window: 0 of 3 clean verdicts");
	fg_line_note_lead(&ls, 1, ahead);
	assert_int_equal(fg_line_apply(&ls, 1, FG_LEV_CLEAN, t, FG_UID_AUDIT, 0, NULL, &chg), 0);
	fg_line_note_lead(&ls, 1, behind);
	assert_int_equal(fg_line_apply(&ls, 1, FG_LEV_CLEAN, t, FG_UID_AUDIT, 0, NULL, &chg), 0);
	fg_line_note_lead(&ls, 1, behind);
	memset(&chg, 0xAA, sizeof(chg));
	assert_int_equal(fg_line_apply(&ls, 1, FG_LEV_CLEAN, t, FG_UID_AUDIT, 0, NULL, &chg), FG_LINE_HELD);
	assert_int_equal(chg.line, 1);
	assert_int_equal(chg.from, FG_LINE_SHADOW);
	assert_int_equal(chg.to, FG_LINE_SHADOW);
	assert_int_equal(chg.base_from, FG_LINE_SHADOW);
	assert_int_equal(chg.base_to, FG_LINE_SHADOW);
	assert_int_equal(chg.event, FG_LEV_CLEAN);
	assert_int_equal(chg.uid, FG_UID_AUDIT);
	assert_string_equal(chg.why, "clean, not ahead: 33% of 3 seeds ahead, needs 50%");
	assert_int_equal(ls.line[1].base, FG_LINE_SHADOW);
	assert_int_equal(ls.line[1].holds, 1);
	fg_line_promotion(&ls, 1, t, why, sizeof(why));
	assert_string_equal(why, "clean, not ahead: 33% of 3 seeds ahead, needs 50%");
	/* once per window: a fourth clean verdict behind the chain says nothing */
	fg_line_note_lead(&ls, 1, behind);
	assert_int_equal(fg_line_apply(&ls, 1, FG_LEV_CLEAN, t, FG_UID_AUDIT, 0, NULL, &chg), 0);
	assert_int_equal(ls.line[1].holds, 1);
	/* 2 of 5, then 3 of 6 ahead: promoted, and the reason says by how much */
	fg_line_note_lead(&ls, 1, ahead);
	assert_int_equal(fg_line_apply(&ls, 1, FG_LEV_CLEAN, t, FG_UID_AUDIT, 0, NULL, &chg), 0);
	fg_line_note_lead(&ls, 1, ahead);
	assert_int_equal(fg_line_apply(&ls, 1, FG_LEV_CLEAN, t, FG_UID_AUDIT, 0, NULL, &chg), 1);
	assert_int_equal(chg.to, FG_LINE_ACTIVE);
	assert_non_null(strstr(chg.why, "promoted: 6 clean verdicts in 1000 ms, 50% of 6 seeds ahead, median lead "));
	fg_line_promotion(&ls, 1, t, why, sizeof(why));
	assert_string_equal(why, ""); /* not in shadow */

	/* a divergence resets the window: its leads and its hold go */
	assert_int_equal(fg_line_apply(&ls, 1, FG_LEV_DIVERGENCE, t, FG_UID_AUDIT, 0, NULL, &chg), 1);
	assert_int_equal(ls.line[1].lead.n, 0);
	assert_false(ls.line[1].held);
	/* a window without any lead on record is not ahead */
	for (int i = 0; i < 3; i++)
		assert_int_equal(fg_line_apply(&ls, 1, FG_LEV_CLEAN, t + 200 * MS, FG_UID_AUDIT, 0, NULL, &chg),
				 i < 2 ? 0 : FG_LINE_HELD);
	assert_string_equal(chg.why, "clean, not ahead: 0% of 0 seeds ahead, needs 50%");
	assert_int_equal(ls.line[1].holds, 2);

	/* without the policy the same window promotes (the default: off) */
	init_all(&ls, FG_LINE_SHADOW, &pol_auto);
	for (int i = 0; i < 3; i++) {
		fg_line_note_lead(&ls, 3, behind);
		assert_int_equal(fg_line_apply(&ls, 3, FG_LEV_CLEAN, t, FG_UID_AUDIT, 0, NULL, &chg), i < 2 ? 0 : 1);
	}
	assert_int_equal(ls.line[3].base, FG_LINE_ACTIVE);
	/* a policy change takes effect at the next verdict (reload) */
	init_all(&ls, FG_LINE_SHADOW, &pol);
	for (int i = 0; i < 3; i++) {
		fg_line_note_lead(&ls, 5, behind);
		assert_true(fg_line_apply(&ls, 5, FG_LEV_CLEAN, t, FG_UID_AUDIT, 0, NULL, &chg) >= 0);
	}
	assert_int_equal(ls.line[5].base, FG_LINE_SHADOW);
	ls.policy.min_ahead = 0;
	assert_int_equal(fg_line_apply(&ls, 5, FG_LEV_CLEAN, t, FG_UID_AUDIT, 0, NULL, &chg), 1);
	/* a hold without chg still counts */
	init_all(&ls, FG_LINE_SHADOW, &pol);
	for (int i = 0; i < 3; i++)
		assert_true(fg_line_apply(&ls, 0, FG_LEV_CLEAN, t, FG_UID_AUDIT, 0, NULL, NULL) >= 0);
	assert_int_equal(ls.line[0].holds, 1);
}

/* promote_min_lead_us: the window's median lead must reach it. */
static void test_promotion_held_by_median(void **state)
{
	(void)state;
	struct fg_lines ls;
	struct fg_line_change chg;
	struct fg_line_policy pol = pol_auto;
	pol.min_lead_us = 500;
	init_all(&ls, FG_LINE_SHADOW, &pol);
	uint64_t t = 2000 * MS;
	char why[128];
	for (int i = 0; i < 3; i++) {
		fg_line_note_lead(&ls, 2, 120 * 1000); /* 120 us ahead: ahead, but by too little */
		int rc = fg_line_apply(&ls, 2, FG_LEV_CLEAN, t, FG_UID_AUDIT, 0, NULL, &chg);
		assert_int_equal(rc, i < 2 ? 0 : FG_LINE_HELD);
	}
	assert_non_null(strstr(chg.why, "clean, lead too small: median 1"));
	assert_non_null(strstr(chg.why, " us, needs 500 us"));
	fg_line_promotion(&ls, 2, t, why, sizeof(why));
	assert_string_equal(why, chg.why);
	/* more leads of 2 ms move the median past 500 us */
	for (int i = 0; i < 4; i++) {
		fg_line_note_lead(&ls, 2, 2000 * 1000);
		assert_true(fg_line_apply(&ls, 2, FG_LEV_CLEAN, t, FG_UID_AUDIT, 0, NULL, &chg) >= 0);
	}
	assert_int_equal(ls.line[2].base, FG_LINE_ACTIVE);
	/* no lead measured at all */
	init_all(&ls, FG_LINE_SHADOW, &pol);
	for (int i = 0; i < 3; i++)
		assert_true(fg_line_apply(&ls, 4, FG_LEV_CLEAN, t, FG_UID_AUDIT, 0, NULL, &chg) >= 0);
	assert_string_equal(chg.why, "clean, lead too small: no lead measured, needs 500 us");
	/* what operators read before the window is due */
	init_all(&ls, FG_LINE_SHADOW, &pol);
	for (int i = 0; i < 3; i++)
		assert_true(fg_line_apply(&ls, 6, FG_LEV_CLEAN, 1010 * MS, FG_UID_AUDIT, 0, NULL, &chg) >= 0);
	fg_line_promotion(&ls, 6, 1010 * MS, why, sizeof(why));
	assert_string_equal(why, "window: 10 of 100 ms");
	ls.line[6].auto_promote = false;
	fg_line_promotion(&ls, 6, 1010 * MS, why, sizeof(why));
	assert_string_equal(why, "auto-promote off");
	pol.min_lead_us = 0;
	init_all(&ls, FG_LINE_SHADOW, &pol);
	for (int i = 0; i < 3; i++)
		assert_true(fg_line_apply(&ls, 6, FG_LEV_CLEAN, 1000 * MS, FG_UID_AUDIT, 0, NULL, &chg) >= 0);
	fg_line_promotion(&ls, 6, 1200 * MS, why, sizeof(why));
	assert_string_equal(why, "promotes at the next clean verdict");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_operator_rows),
		cmocka_unit_test(test_default_why_and_null_chg),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_promotion_needs_count_and_time),
		cmocka_unit_test(test_promotion_refused_without_auto),
		cmocka_unit_test(test_clean_on_disabled_counts_only),
		cmocka_unit_test(test_divergence_and_conflict_demote),
		cmocka_unit_test(test_operator_shadow_resets_window),
		cmocka_unit_test(test_degraded_overlay),
		cmocka_unit_test(test_promotion_held_by_lead),
		cmocka_unit_test(test_promotion_held_by_median),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

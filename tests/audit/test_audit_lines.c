/* test_audit_lines.c - each line's state as the audit log records it and
 * the start-up decision (core/audit_lines.c): folding GENESIS, START,
 * LINES, LINE v1 and v2 and RECOVERY records, merging a file's fold with
 * the file before it, and every rule of fg_audit_start_decide (fresh log,
 * history, reset, damaged, cut, auto-promote unknown). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "fg/audit_lines.h"
#include "fg/line.h"

static uint64_t next_seq;

static struct fg_audit_rec rec(unsigned type)
{
	struct fg_audit_rec r;
	memset(&r, 0, sizeof(r));
	r.type = (uint16_t)type;
	r.version = (uint16_t)fg_audit_type_version(type);
	r.seq = next_seq++;
	return r;
}

static struct fg_audit_rec line_v2(unsigned line, unsigned base_to, bool auto_on, unsigned ev, const char *why)
{
	struct fg_audit_rec r = rec(FG_AREC_LINE);
	r.p.line.line = (uint8_t)line;
	r.p.line.from = r.p.line.to = (uint8_t)base_to;
	r.p.line.base_to = (uint8_t)base_to;
	r.p.line.auto_promote = auto_on;
	r.p.line.event = (uint8_t)ev;
	snprintf(r.p.line.why, sizeof(r.p.line.why), "%s", why);
	return r;
}

static struct fg_audit_rec line_v1(unsigned line, unsigned from, unsigned to)
{
	struct fg_audit_rec r = rec(FG_AREC_LINE);
	r.version = 1;
	r.p.line.line = (uint8_t)line;
	r.p.line.from = (uint8_t)from;
	r.p.line.to = (uint8_t)to;
	r.p.line.base_from = r.p.line.base_to = r.p.line.auto_promote = FG_AUDIT_UNKNOWN;
	r.p.line.event = FG_LEV_DIVERGENCE;
	return r;
}

static struct fg_audit_rec start_all(unsigned base, bool auto_on)
{
	struct fg_audit_rec r = rec(FG_AREC_START);
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++) {
		r.p.start.line[i].base = (uint8_t)base;
		r.p.start.line[i].auto_promote = auto_on;
		r.p.start.line[i].event = FG_AUDIT_UNKNOWN;
		r.p.start.line[i].seq = FG_AUDIT_NO_SEQ;
		snprintf(r.p.start.line[i].why, sizeof(r.p.start.line[i].why), "start %u", i);
	}
	return r;
}

static void fold(struct fg_audit_fold *f, struct fg_audit_rec r)
{
	fg_audit_fold_rec(f, &r);
}

static struct fg_audit_start_in cfg_in(const struct fg_audit_fold *f, unsigned base, bool auto_on)
{
	struct fg_audit_start_in in = {.fold = f, .cfg_auto = auto_on};
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++)
		in.cfg_base[i] = (uint8_t)base;
	return in;
}

static void test_fresh_log_takes_the_config(void **state)
{
	(void)state;
	struct fg_audit_fold f;
	fg_audit_fold_init(&f);
	assert_false(f.complete);
	fold(&f, rec(FG_AREC_GENESIS));
	fold(&f, rec(FG_AREC_VERDICT));
	assert_true(f.complete);
	assert_false(fg_audit_fold_has_history(&f));
	struct fg_audit_start_in in = cfg_in(&f, FG_LINE_ACTIVE, true);
	in.cfg_base[0] = FG_LINE_DISABLED;
	struct fg_audit_line_entry e[FG_AUDIT_LINES];
	fg_audit_start_decide(&in, e);
	assert_int_equal(e[0].base, FG_LINE_DISABLED);
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++) {
		assert_int_equal(e[i].source, FG_LSRC_CONFIG);
		assert_true(e[i].auto_promote);
		assert_int_equal(e[i].seq, FG_AUDIT_NO_SEQ);
		if (i)
			assert_int_equal(e[i].base, FG_LINE_ACTIVE);
	}
	assert_string_equal(e[1].why, "[lines] line.1 = active");
}

static void test_history_wins_over_the_config(void **state)
{
	(void)state;
	next_seq = 0;
	struct fg_audit_fold f;
	fg_audit_fold_init(&f);
	fold(&f, rec(FG_AREC_GENESIS));
	fold(&f, start_all(FG_LINE_ACTIVE, false)); /* seq 1 */
	fold(&f, line_v2(1, FG_LINE_SHADOW, false, FG_LEV_DIVERGENCE, "demoted: fingerprint divergence")); /* 2 */
	fold(&f, line_v2(2, FG_LINE_DISABLED, false, FG_LEV_OP_DISABLE, "fanoctl")); /* 3 */
	fold(&f, line_v2(4, FG_LINE_ACTIVE, true, FG_LEV_OP_AUTO_PROMOTE, "auto on")); /* 4 */
	assert_int_equal(f.summary_seq, 1);
	assert_int_equal(f.line_records, 3);
	struct fg_audit_start_in in = cfg_in(&f, FG_LINE_ACTIVE, false);
	struct fg_audit_line_entry e[FG_AUDIT_LINES];
	fg_audit_start_decide(&in, e);
	assert_int_equal(e[1].base, FG_LINE_SHADOW);
	assert_int_equal(e[1].source, FG_LSRC_LOG);
	assert_int_equal(e[1].event, FG_LEV_DIVERGENCE);
	assert_int_equal(e[1].seq, 2);
	assert_string_equal(e[1].why, "demoted: fingerprint divergence");
	assert_int_equal(e[2].base, FG_LINE_DISABLED);
	assert_true(e[4].auto_promote);
	assert_false(e[3].auto_promote);
	assert_int_equal(e[0].base, FG_LINE_ACTIVE); /* from the START entry */
	assert_int_equal(e[0].seq, 1);
	assert_string_equal(e[0].why, "start 0");
	/* a later START overrides everything before it */
	fold(&f, start_all(FG_LINE_SHADOW, true));
	fg_audit_start_decide(&in, e);
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++) {
		assert_int_equal(e[i].base, FG_LINE_SHADOW);
		assert_true(e[i].auto_promote);
	}
}

static void test_reset_damaged_cut(void **state)
{
	(void)state;
	struct fg_audit_fold f;
	fg_audit_fold_init(&f);
	fold(&f, rec(FG_AREC_GENESIS));
	fold(&f, line_v2(1, FG_LINE_ACTIVE, true, FG_LEV_OP_ACTIVE, "forced"));
	fold(&f, line_v2(2, FG_LINE_DISABLED, false, FG_LEV_OP_DISABLE, "off"));
	struct fg_audit_start_in in = cfg_in(&f, FG_LINE_ACTIVE, false);
	in.cfg_base[6] = FG_LINE_DISABLED;
	struct fg_audit_line_entry e[FG_AUDIT_LINES];

	in.reset = true;
	fg_audit_start_decide(&in, e);
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++) {
		assert_int_equal(e[i].source, FG_LSRC_RESET);
		assert_int_equal(e[i].base, i == 6 ? FG_LINE_DISABLED : FG_LINE_ACTIVE);
		assert_false(e[i].auto_promote);
	}
	assert_string_equal(e[2].why, "--reset-lines: [lines] line.2 = active");

	/* damaged: never active, even with --reset-lines (it could not be recorded) */
	in.damaged = true;
	in.damage = "log damaged (bad_checksum)";
	fg_audit_start_decide(&in, e);
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++) {
		assert_int_equal(e[i].source, FG_LSRC_DAMAGED);
		assert_int_not_equal(e[i].base, FG_LINE_ACTIVE);
		assert_string_equal(e[i].why, "log damaged (bad_checksum)");
	}
	assert_int_equal(e[1].base, FG_LINE_SHADOW);   /* recorded active: held */
	assert_int_equal(e[2].base, FG_LINE_DISABLED); /* recorded disabled */
	assert_int_equal(e[6].base, FG_LINE_DISABLED); /* no history: the config */
	assert_int_equal(e[3].base, FG_LINE_SHADOW);   /* config active: held */
	in.fold = NULL; /* nothing readable at all */
	fg_audit_start_decide(&in, e);
	assert_int_equal(e[1].base, FG_LINE_SHADOW);
	assert_int_equal(e[6].base, FG_LINE_DISABLED);

	/* records cut at this start: would-be active lines held, the rest from the log */
	in = cfg_in(&f, FG_LINE_ACTIVE, false);
	in.cut = true;
	fg_audit_start_decide(&in, e);
	assert_int_equal(e[1].base, FG_LINE_SHADOW);
	assert_int_equal(e[1].source, FG_LSRC_CUT);
	assert_int_equal(e[3].source, FG_LSRC_CUT); /* config active, no history */
	assert_int_equal(e[2].base, FG_LINE_DISABLED);
	assert_int_equal(e[2].source, FG_LSRC_LOG);
	/* a RECOVERY record after the last summary does the same; a START after it clears it */
	in.cut = false;
	fold(&f, rec(FG_AREC_RECOVERY));
	assert_true(f.cut);
	fg_audit_start_decide(&in, e);
	assert_int_equal(e[1].source, FG_LSRC_CUT);
	fold(&f, start_all(FG_LINE_ACTIVE, false));
	assert_false(f.cut);
	fg_audit_start_decide(&in, e);
	assert_int_equal(e[1].base, FG_LINE_ACTIVE);
	assert_int_equal(e[1].source, FG_LSRC_LOG);
}

static void test_line_v1_records(void **state)
{
	(void)state;
	struct fg_audit_fold f;
	fg_audit_fold_init(&f);
	fold(&f, rec(FG_AREC_GENESIS));
	fold(&f, line_v1(0, FG_LINE_SHADOW, FG_LINE_ACTIVE));     /* base active */
	fold(&f, line_v1(1, FG_LINE_ACTIVE, FG_LINE_DEGRADED));   /* point down: base kept (active) */
	fold(&f, line_v1(2, FG_LINE_SHADOW, FG_LINE_ACTIVE));
	fold(&f, line_v1(2, FG_LINE_DEGRADED, FG_LINE_DEGRADED)); /* a demotion while degraded, maybe */
	assert_true(f.line[0].base_known && f.line[0].base == FG_LINE_ACTIVE);
	assert_true(f.line[1].base_known && f.line[1].base == FG_LINE_ACTIVE);
	assert_true(f.line[2].base_known && f.line[2].base == FG_LINE_SHADOW);
	assert_false(f.line[0].auto_known);
	struct fg_audit_start_in in = cfg_in(&f, FG_LINE_SHADOW, true);
	struct fg_audit_line_entry e[FG_AUDIT_LINES];
	fg_audit_start_decide(&in, e);
	assert_true(e[0].auto_promote); /* unknown in v1: the config's */
	assert_int_equal(e[0].source, FG_LSRC_LOG);
	assert_int_equal(e[5].source, FG_LSRC_CONFIG);
}

static void test_merge_with_older_files(void **state)
{
	(void)state;
	/* file .1: GENESIS, START (all shadow), line 3 active, line 5 disabled */
	struct fg_audit_fold old1;
	fg_audit_fold_init(&old1);
	fold(&old1, rec(FG_AREC_GENESIS));
	fold(&old1, start_all(FG_LINE_SHADOW, false));
	fold(&old1, line_v2(3, FG_LINE_ACTIVE, false, FG_LEV_OP_ACTIVE, "go"));
	fold(&old1, line_v2(5, FG_LINE_DISABLED, false, FG_LEV_OP_DISABLE, "off"));
	/* file .2: ROTATION only (no summary), line 5 enabled */
	struct fg_audit_fold old2;
	fg_audit_fold_init(&old2);
	fold(&old2, rec(FG_AREC_ROTATION));
	fold(&old2, line_v2(5, FG_LINE_SHADOW, false, FG_LEV_OP_ENABLE, "on"));
	/* current: ROTATION only, line 3 demoted */
	struct fg_audit_fold cur;
	fg_audit_fold_init(&cur);
	fold(&cur, rec(FG_AREC_ROTATION));
	fold(&cur, line_v2(3, FG_LINE_SHADOW, false, FG_LEV_DIVERGENCE, "diverged"));
	assert_false(cur.complete);
	fg_audit_fold_merge_older(&cur, &old2);
	assert_false(cur.complete);
	fg_audit_fold_merge_older(&cur, &old1);
	assert_true(cur.complete);
	assert_int_equal(cur.line[3].base, FG_LINE_SHADOW); /* the newest file wins */
	assert_string_equal(cur.line[3].why, "diverged");
	assert_int_equal(cur.line[5].base, FG_LINE_SHADOW); /* .2 over .1 */
	assert_int_equal(cur.line[0].base, FG_LINE_SHADOW); /* from .1's START */
	/* a complete fold takes nothing from an older one */
	struct fg_audit_fold done = cur;
	fg_audit_fold_merge_older(&done, &old1);
	assert_memory_equal(&done, &cur, sizeof(cur));
	/* a cut in an older file after its last summary is a cut for the state */
	struct fg_audit_fold cut;
	fg_audit_fold_init(&cut);
	fold(&cut, rec(FG_AREC_ROTATION));
	fold(&old2, rec(FG_AREC_RECOVERY));
	fg_audit_fold_merge_older(&cut, &old2);
	assert_true(cut.cut);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fresh_log_takes_the_config),
		cmocka_unit_test(test_history_wins_over_the_config),
		cmocka_unit_test(test_reset_damaged_cut),
		cmocka_unit_test(test_line_v1_records),
		cmocka_unit_test(test_merge_with_older_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

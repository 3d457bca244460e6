/* test_counters.c - the dataplane's counter registry (include/fg/counters.h,
 * core/counters.c) against what the control plane renders from it.
 *
 *   registry: every enum value has a declaration (a counter added to an
 *     enum without one fails here), names are unique over both sets and
 *     the outcome keys, families end in _total, shared families label
 *     their members;
 *   /metrics: cp_metrics_render shows every declared counter as its series
 *     on every lcore, with the value the lcore holds;
 *   fanoctl stats: cp_op_dp_stats has every declared name with the sum over
 *     the lcores;
 *   docs: docs/metrics.md names every counter and every family, so the
 *     documentation cannot drift from the registry.
 * DPDK telemetry (dataplane/dp_telemetry.c) needs a running EAL: the same
 * check against /fanogate/counters is in daemon_metrics.py (dataplane part). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cp_metrics.h"
#include "cp_op.h"
#include "fg/counters.h"
#include "../lib/fg_test_metrics.h" /* cfg, eng, srv, dpk, bnd, met; render */

#define LANES FG_TEST_LANES
#define NDEF (FG_C__COUNT + DP_X__COUNT)

static struct dp_xcounters dpx[LANES];

static const struct fg_counter_def *def(unsigned i)
{
	return i < FG_C__COUNT ? &fg_dp_counter_defs[i] : &fg_dp_xcounter_defs[i - FG_C__COUNT];
}

/* Lane l of counter i holds (l + 1) * 1000 + i: every value is distinct. */
static uint64_t val(unsigned l, unsigned i) { return (uint64_t)(l + 1) * 1000u + i; }

static void setup_snapshot(void)
{
	fg_test_metrics_reset();
	memset(dpx, 0, sizeof(dpx));
	bnd.xcounters = dpx;
	for (unsigned l = 0; l < LANES; l++) {
		for (unsigned i = 0; i < FG_C__COUNT; i++)
			fg_count(&dpk[l], (enum fg_dp_counter)i, val(l, i));
		for (unsigned i = 0; i < DP_X__COUNT; i++)
			dp_xcount(&dpx[l], (enum dp_xcounter)i, val(l, FG_C__COUNT + i));
		for (unsigned o = 0; o < FG_O__COUNT; o++)
			atomic_store(&dpx[l].outcome[o], val(l, NDEF + o));
	}
}

static void test_registry_complete(void **state)
{
	(void)state;
	char keys[NDEF + FG_O__COUNT][64];
	for (unsigned i = 0; i < NDEF; i++) {
		const struct fg_counter_def *d = def(i);
		if (!d->name || !d->family || !d->type || !d->help)
			fail_msg("registry entry %u (%s %u) is not declared", i, i < FG_C__COUNT ? "fg_dp_counter" : "dp_xcounter",
				 i < FG_C__COUNT ? i : i - FG_C__COUNT);
		assert_string_equal(d->type, "counter");
		size_t fl = strlen(d->family);
		assert_true(fl > 6 && !strcmp(d->family + fl - 6, "_total"));
		snprintf(keys[i], sizeof(keys[i]), "%s", d->name);
		/* a family shared by several entries labels each of them */
		for (unsigned j = 0; j < NDEF; j++)
			if (j != i && !strcmp(def(j)->family, d->family) && !d->label)
				fail_msg("%s shares family %s with %s but has no label", d->name, d->family, def(j)->name);
	}
	for (unsigned o = 0; o < FG_O__COUNT; o++)
		fg_dp_outcome_key(o, keys[NDEF + o], sizeof(keys[0]));
	for (unsigned i = 0; i < NDEF + FG_O__COUNT; i++)
		for (unsigned j = i + 1; j < NDEF + FG_O__COUNT; j++)
			if (!strcmp(keys[i], keys[j]))
				fail_msg("counter name %s declared twice (%u, %u)", keys[i], i, j);
	/* the enums' name functions read the registry */
	assert_string_equal(fg_dp_counter_name(FG_C_DROP_LATE), "drop_late");
	assert_string_equal(fg_dp_counter_name(FG_C__COUNT), "unknown");
}

static void test_metrics_render_every_counter(void **state)
{
	(void)state;
	setup_snapshot();
	char *t = render();
	char want[256];
	for (unsigned i = 0; i < NDEF + FG_O__COUNT; i++) {
		for (unsigned l = 0; l < LANES; l++) {
			if (i < NDEF) {
				const struct fg_counter_def *d = def(i);
				if (d->ns)
					snprintf(want, sizeof(want), "\nfanogate_%s{lcore=\"%u\"%s%s} %.9f\n", d->family, l,
						 d->label ? "," : "", d->label ? d->label : "", (double)val(l, i) / 1e9);
				else
					snprintf(want, sizeof(want), "\nfanogate_%s{lcore=\"%u\"%s%s} %llu\n", d->family, l,
						 d->label ? "," : "", d->label ? d->label : "", (unsigned long long)val(l, i));
			} else {
				unsigned o = i - NDEF;
				snprintf(want, sizeof(want), "\nfanogate_%s{lcore=\"%u\",outcome=\"%s\"} %llu\n",
					 FG_DP_OUTCOMES_FAMILY, l, fg_outcome_name((enum fg_outcome)o),
					 (unsigned long long)val(l, i));
			}
			if (!strstr(t, want))
				fail_msg("/metrics lacks%s", want);
		}
		if (i < NDEF) {
			snprintf(want, sizeof(want), "\n# TYPE fanogate_%s counter\n", def(i)->family);
			if (!strstr(t, want))
				fail_msg("/metrics lacks%s", want);
		}
	}
	free(t);
}

static void test_stats_every_counter(void **state)
{
	(void)state;
	setup_snapshot();
	json_t *j = cp_op_dp_stats(&bnd);
	assert_non_null(j);
	char key[64];
	for (unsigned i = 0; i < NDEF + FG_O__COUNT; i++) {
		if (i < NDEF)
			snprintf(key, sizeof(key), "%s", def(i)->name);
		else
			fg_dp_outcome_key(i - NDEF, key, sizeof(key));
		json_t *v = json_object_get(j, key);
		if (!json_is_integer(v))
			fail_msg("fanoctl stats \"dataplane\" lacks %s", key);
		assert_int_equal((uint64_t)json_integer_value(v), val(0, i) + val(1, i));
	}
	assert_int_equal(json_object_size(j), NDEF + FG_O__COUNT);
	json_decref(j);
}

static void test_docs_list_every_counter(void **state)
{
	(void)state;
	const char *data = getenv("FG_TEST_DATA");
	assert_non_null(data);
	char path[4096];
	snprintf(path, sizeof(path), "%s/../../docs/metrics.md", data);
	FILE *f = fopen(path, "r");
	if (!f)
		fail_msg("cannot read %s", path);
	static char doc[1 << 20];
	size_t n = fread(doc, 1, sizeof(doc) - 1, f);
	fclose(f);
	doc[n] = '\0';
	char want[160];
	for (unsigned i = 0; i < NDEF; i++) {
		snprintf(want, sizeof(want), "| `%s` |", def(i)->name);
		if (!strstr(doc, want))
			fail_msg("docs/metrics.md has no row for counter %s (want \"%s\")", def(i)->name, want);
		snprintf(want, sizeof(want), "`fanogate_%s`", def(i)->family);
		if (!strstr(doc, want))
			fail_msg("docs/metrics.md does not name family %s", def(i)->family);
	}
	snprintf(want, sizeof(want), "`fanogate_%s`", FG_DP_OUTCOMES_FAMILY);
	if (!strstr(doc, want))
		fail_msg("docs/metrics.md does not name family %s", FG_DP_OUTCOMES_FAMILY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry_complete),
		cmocka_unit_test(test_metrics_render_every_counter),
		cmocka_unit_test(test_stats_every_counter),
		cmocka_unit_test(test_docs_list_every_counter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

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
 * check against /fanogate/counters is in daemon_metrics.py (dataplane part).
 * The control plane's registry (control/cp_counters.h) the same way: every
 * entry declared, unique, in /metrics and in `fanoctl stats` under its
 * section and key with the value its getter reads, and in docs/metrics.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cp_counters.h"
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

/* ---- the control plane's registry ------------------------------------------ */

/* Every uint64_t field of the server's, the engine's (up to its labelled
 * arrays) and the loop's stats gets its own value, so an entry reading the
 * wrong field shows. */
static void setup_cp_snapshot(void)
{
	fg_test_metrics_reset();
	uint64_t *v = (uint64_t *)(void *)&srv.st;
	for (size_t i = 0; i < sizeof(srv.st) / sizeof(uint64_t); i++)
		v[i] = 100000u + i;
	v = (uint64_t *)(void *)&eng.st;
	for (size_t i = 0; i < offsetof(struct cp_engine_stats, reason) / sizeof(uint64_t); i++)
		v[i] = 200000u + i;
	v = (uint64_t *)(void *)&loop.st;
	for (size_t i = 0; i < sizeof(loop.st) / sizeof(uint64_t); i++)
		v[i] = 300000u + i;
	srv.n_conns = 7;
}

static const struct cp_counter_src cp_src = {.srv = &srv, .engine = &eng, .loop = &loop, .b = &bnd};

static void test_cp_registry_complete(void **state)
{
	(void)state;
	assert_true(cp_counter_count > 40);
	for (unsigned i = 0; i < cp_counter_count; i++) {
		const struct cp_counter_def *d = &cp_counter_defs[i];
		if (!d->metric || !d->type || !d->section || !d->key || !d->help || !d->get || !*d->help)
			fail_msg("control-plane registry entry %u is not declared", i);
		size_t ml = strlen(d->metric);
		if (!strcmp(d->type, "counter"))
			assert_true(ml > 6 && !strcmp(d->metric + ml - 6, "_total"));
		else
			assert_string_equal(d->type, "gauge");
		for (unsigned j = i + 1; j < cp_counter_count; j++) {
			const struct cp_counter_def *e = &cp_counter_defs[j];
			if (!strcmp(d->metric, e->metric))
				fail_msg("fanogate_%s declared twice (%u, %u)", d->metric, i, j);
			if (!strcmp(d->section, e->section) && !strcmp(d->key, e->key))
				fail_msg("stats %s.%s declared twice (%u, %u)", d->section, d->key, i, j);
		}
		for (unsigned k = 0; k < NDEF; k++)
			if (!strcmp(d->metric, def(k)->family))
				fail_msg("fanogate_%s is both a control-plane and a dataplane family", d->metric);
	}
	/* the getters read the fields their names say */
	setup_cp_snapshot();
	srv.st.accepted = 4242;
	loop.st.submits = 4343;
	eng.st.spin_ns = 4444;
	for (unsigned i = 0; i < cp_counter_count; i++) {
		const struct cp_counter_def *d = &cp_counter_defs[i];
		uint64_t v = cp_counter_value(d, &cp_src);
		if (!strcmp(d->metric, "tls_accepted_total"))
			assert_int_equal(v, 4242);
		if (!strcmp(d->metric, "loop_submits_total"))
			assert_int_equal(v, 4343);
		if (!strcmp(d->metric, "lane_answer_spin_seconds_total"))
			assert_true(d->ns && v == 4444);
		if (!strcmp(d->metric, "tls_connections"))
			assert_int_equal(v, 7);
	}
	/* absent sources read 0 */
	const struct cp_counter_src none = {0};
	for (unsigned i = 0; i < cp_counter_count; i++)
		if (strncmp(cp_counter_defs[i].metric, "seccomp", 7)) /* the SIGSYS handler's, process-wide */
			assert_int_equal(cp_counter_value(&cp_counter_defs[i], &none), 0);
}

static void test_cp_metrics_and_stats(void **state)
{
	(void)state;
	setup_cp_snapshot();
	char *t = render();
	struct cp_opsrv o = {.loop = &loop, .cfg = &cfg, .engine = &eng, .srv = &srv, .b = &bnd};
	json_t *j = cp_op_stats(&o);
	assert_non_null(j);
	char want[256];
	unsigned distinct = 0;
	for (unsigned i = 0; i < cp_counter_count; i++) {
		const struct cp_counter_def *d = &cp_counter_defs[i];
		uint64_t v = cp_counter_value(d, &cp_src);
		distinct += v >= 100000u;
		snprintf(want, sizeof(want), "\n# TYPE fanogate_%s %s\n", d->metric, d->type);
		if (!strstr(t, want))
			fail_msg("/metrics lacks%s", want);
		if (d->ns)
			snprintf(want, sizeof(want), "\nfanogate_%s %.9f\n", d->metric, (double)v * 1e-9);
		else
			snprintf(want, sizeof(want), "\nfanogate_%s %llu\n", d->metric, (unsigned long long)v);
		if (!strstr(t, want))
			fail_msg("/metrics lacks%s", want);
		/* the section path, "a.b" */
		json_t *at = j;
		char path[64];
		snprintf(path, sizeof(path), "%s", d->section);
		for (char *save = NULL, *p = strtok_r(path, ".", &save); p && at; p = strtok_r(NULL, ".", &save))
			at = json_object_get(at, p);
		json_t *x = at ? json_object_get(at, d->key) : NULL;
		if (!json_is_integer(x))
			fail_msg("fanoctl stats lacks %s.%s", d->section, d->key);
		assert_int_equal((uint64_t)json_integer_value(x), v);
	}
	/* most entries read a field the snapshot set (the rest: gauges of
	 * counts, the SIGSYS handler's count, sums over the lcores) */
	assert_true(distinct + 8 >= cp_counter_count);
	json_decref(j);
	free(t);
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
	for (unsigned i = 0; i < cp_counter_count; i++) {
		snprintf(want, sizeof(want), "| `fanogate_%s` | %s |", cp_counter_defs[i].metric, cp_counter_defs[i].type);
		if (!strstr(doc, want))
			fail_msg("docs/metrics.md has no row for %s (want \"%s\")", cp_counter_defs[i].metric, want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry_complete),
		cmocka_unit_test(test_metrics_render_every_counter),
		cmocka_unit_test(test_stats_every_counter),
		cmocka_unit_test(test_cp_registry_complete),
		cmocka_unit_test(test_cp_metrics_and_stats),
		cmocka_unit_test(test_docs_list_every_counter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

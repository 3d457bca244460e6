/* fanoctl_counters.c - `fanoctl counters [--json]`: the dataplane's counter
 * registry (fg/counters.h) as declared, offline: each counter's name (the
 * key in `fanoctl stats` "dataplane" and in DPDK telemetry
 * /fanogate/counters), its /metrics series (fanogate_<family>{lcore=...}),
 * its type and help. Tests compare it with the three outputs and with
 * docs/metrics.md.
 *
 * Who may call: tools/fanoctl's dispatcher, the CLI's only thread. */
#include <stdio.h>
#include <string.h>

#include "fanoctl.h"
#include "fg/counters.h"

void fanoctl_counters_help(FILE *out)
{
	fprintf(out, "usage: fanoctl counters [--json]\n\n"
		     "Every dataplane counter as declared: name (fanoctl stats, DPDK telemetry),\n"
		     "/metrics series (one per lcore), type, help. No daemon needed.\n");
}

static void emit(json_t *arr, const char *name, const char *family, const char *label, const char *type,
		 const char *help)
{
	char metric[160];
	snprintf(metric, sizeof(metric), "fanogate_%s{lcore%s%s}", family, label ? "," : "", label ? label : "");
	if (arr) {
		json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:s,s:s}", "name", name, "family", family, "metric",
						     metric, "type", type, "help", help));
		return;
	}
	printf("%-28s %-64s %-8s %s\n", name, metric, type, help);
}

int fanoctl_counters(int argc, char **argv)
{
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else {
			fanoctl_counters_help(stderr);
			return FANOCTL_USAGE;
		}
	}
	json_t *arr = json ? json_array() : NULL;
	if (json && !arr)
		return FANOCTL_REFUSED;
	if (!json)
		printf("%-28s %-64s %-8s %s\n", "NAME", "METRIC", "TYPE", "HELP");
	for (unsigned i = 0; i < FG_C__COUNT; i++) {
		const struct fg_counter_def *d = &fg_dp_counter_defs[i];
		emit(arr, d->name, d->family, d->label, d->type, d->help);
	}
	for (unsigned i = 0; i < DP_X__COUNT; i++) {
		const struct fg_counter_def *d = &fg_dp_xcounter_defs[i];
		emit(arr, d->name, d->family, d->label, d->type, d->help);
	}
	for (unsigned o = 0; o < FG_O__COUNT; o++) {
		char key[64], label[64];
		fg_dp_outcome_key(o, key, sizeof(key));
		snprintf(label, sizeof(label), "outcome=\"%s\"", fg_outcome_name((enum fg_outcome)o));
		emit(arr, key, FG_DP_OUTCOMES_FAMILY, label, "counter", FG_DP_OUTCOMES_HELP);
	}
	if (arr)
		fanoctl_json_print(arr);
	return FANOCTL_OK;
}

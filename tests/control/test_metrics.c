/* test_metrics.c - unit tests of control/cp_metrics.c (the exposition
 * rendered from fake engine, server and boundary snapshots, no sockets) and
 * of cp_reload_diff (which keys may change live).
 *   render: every sample line belongs to a family announced by # HELP and
 *   # TYPE; counters end in _total; values come from the snapshot (TLS and
 *   engine counters, outcomes, per-lcore dataplane counters with drop
 *   reasons, per-line contributions, UDP peers, line labels with the Fano
 *   triple);
 *   diff: identical files, a live key, a restart key, max_connections up
 *   (live) and down (restart), a live and a restart key together. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cp_metrics.h"
#include "cp_reload.h"
#include "fg/fano.h"
#include "../lib/fg_test_metrics.h" /* cfg, eng, srv, dpk, bnd, met; render */

/* The value of the sample line that starts with key + ' ', or -1. */
static double value(const char *text, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, kl) && p[kl] == ' ')
			return strtod(p + kl + 1, NULL);
	return -1;
}

static void setup_snapshot(void)
{
	fg_test_metrics_reset();
	srv.st.accepted = 7;
	srv.st.http_errors = 3;
	eng.st.frames = 11;
	eng.st.outcome[FG_O_RESOLVED] = 4;
	fg_lat_hist_add(&eng.st.hop[CP_HOP_TO_LCORE], 0, 2000);   /* 2 us */
	fg_lat_hist_add(&eng.st.hop[CP_HOP_TO_LCORE], 0, 4000);   /* 4 us */
	fg_lat_hist_add(&eng.st.hop[CP_HOP_TO_LCORE], 100, 8100); /* 8 us */
	eng.st.reason[FG_R__COUNT - 1] = 2;
	eng.lines.line[3].verdicts = 5;
	eng.lines.points_down = 1u << 6; /* point 7 */
	eng.n_peers = 1;
	eng.peers[0].family = 4;
	memcpy(eng.peers[0].addr, "\x0a\x00\x00\x02", 4);
	eng.peers[0].port = 4242;
	eng.peers[0].reports = 12;
	fg_count(&dpk[1], FG_C_RX_BYTES, 1500);
	fg_count(&dpk[1], FG_C_DROP_LATE, 2);
	atomic_store(&dpk[0].per_line[5], 9);
}

static void test_render_families(void **state)
{
	(void)state;
	setup_snapshot();
	char *t = render();
	char help[128] = "", type[128] = "", kind[16] = "";
	unsigned samples = 0;
	for (char *ln = strtok(t, "\n"); ln; ln = strtok(NULL, "\n")) {
		if (!strncmp(ln, "# HELP ", 7)) {
			assert_int_equal(sscanf(ln + 7, "%127s", help), 1);
		} else if (!strncmp(ln, "# TYPE ", 7)) {
			assert_int_equal(sscanf(ln + 7, "%127s %15s", type, kind), 2);
			assert_string_equal(type, help); /* HELP then TYPE of the same family */
			assert_true(!strcmp(kind, "counter") || !strcmp(kind, "gauge") || !strcmp(kind, "histogram"));
			if (!strcmp(kind, "counter"))
				assert_true(strlen(type) > 6 && !strcmp(type + strlen(type) - 6, "_total"));
		} else {
			size_t fl = strcspn(ln, "{ ");
			size_t tl = strlen(type);
			if (!strcmp(kind, "histogram")) {
				/* its series: the family's name + _bucket, _sum or _count */
				assert_true(fl > tl && !memcmp(ln, type, tl));
				assert_true(!strncmp(ln + tl, "_bucket", fl - tl) || !strncmp(ln + tl, "_sum", fl - tl) ||
					    !strncmp(ln + tl, "_count", fl - tl));
			} else {
				assert_int_equal(fl, tl); /* the sample belongs to the last family */
				assert_memory_equal(ln, type, fl);
			}
			samples++;
		}
	}
	assert_true(samples > 100);
	free(t);
}

static void test_render_values(void **state)
{
	(void)state;
	setup_snapshot();
	char *t = render();
	assert_true(value(t, "fanogate_tls_accepted_total") == 7);
	assert_true(value(t, "fanogate_http_errors_total") == 3);
	assert_true(value(t, "fanogate_tls_frames_total") == 11);
	/* the engine's hops: cumulative buckets, +Inf = count, sum in seconds */
	assert_true(value(t, "fanogate_engine_hop_seconds_bucket{hop=\"to_lcore\",le=\"5e-06\"}") == 2);
	assert_true(value(t, "fanogate_engine_hop_seconds_bucket{hop=\"to_lcore\",le=\"1e-05\"}") == 3);
	assert_true(value(t, "fanogate_engine_hop_seconds_bucket{hop=\"to_lcore\",le=\"+Inf\"}") == 3);
	assert_true(value(t, "fanogate_engine_hop_seconds_count{hop=\"to_lcore\"}") == 3);
	assert_true(value(t, "fanogate_engine_hop_seconds_sum{hop=\"to_lcore\"}") > 0.0000139 &&
		    value(t, "fanogate_engine_hop_seconds_sum{hop=\"to_lcore\"}") < 0.0000141);
	assert_true(value(t, "fanogate_engine_hop_seconds_count{hop=\"answer\"}") == 0);
	assert_true(value(t, "fanogate_tls_outcomes_total{outcome=\"resolved\"}") == 4);
	char key[160];
	snprintf(key, sizeof(key), "fanogate_tls_malformed_total{reason=\"%s\"}", fg_reason_name(FG_R__COUNT - 1));
	assert_true(value(t, key) == 2);
	assert_true(value(t, "fanogate_dp_rx_bytes_total{lcore=\"1\"}") == 1500);
	assert_true(value(t, "fanogate_dp_rx_bytes_total{lcore=\"0\"}") == 0);
	assert_true(value(t, "fanogate_dp_drops_total{lcore=\"1\",reason=\"late\"}") == 2);
	assert_true(value(t, "fanogate_dp_drops_total{lcore=\"0\",reason=\"late\"}") == 0);
	const uint8_t *tr = fg_fano_line(5);
	snprintf(key, sizeof(key), "fanogate_dp_line_contributions_total{lcore=\"0\",line=\"5\",triple=\"%u,%u,%u\"}",
		 tr[0], tr[1], tr[2]);
	assert_true(value(t, key) == 9);
	tr = fg_fano_line(3);
	snprintf(key, sizeof(key), "fanogate_line_verdicts_total{line=\"3\",triple=\"%u,%u,%u\"}", tr[0], tr[1], tr[2]);
	assert_true(value(t, key) == 5);
	assert_true(value(t, "fanogate_point_down{point=\"7\"}") == 1);
	assert_true(value(t, "fanogate_point_down{point=\"1\"}") == 0);
	assert_true(value(t, "fanogate_udp_peers") == 1);
	assert_true(value(t, "fanogate_udp_peer_reports_total{peer=\"10.0.0.2\",port=\"4242\"}") == 12);
	assert_true(value(t, "fanogate_build_info{version=\"0.1.0\",mode=\"dataplane\"}") == 1);
	/* lanes mode: the shard series belong to the lcores */
	assert_null(strstr(t, "fanogate_slots_open"));
	free(t);
	/* local mode: the control plane's shard, no dataplane series */
	eng.lanes_mode = false;
	met.b = NULL;
	eng.slots.in_use = 3;
	t = render();
	assert_true(value(t, "fanogate_slots_open{shard=\"0\"}") == 3);
	assert_null(strstr(t, "fanogate_dp_"));
	free(t);
}

static void test_diff(void **state)
{
	(void)state;
	static struct fg_config a, b;
	char out[400];
	bool live;
	fg_config_default(&a);
	fg_config_default(&b);
	assert_int_equal(cp_reload_diff(&a, &b, out, sizeof(out), &live), 0);
	assert_true(live);

	b.policy.promote_count = 5;
	b.idle_timeout_ms = 1234;
	assert_int_equal(cp_reload_diff(&a, &b, out, sizeof(out), &live), 2);
	assert_true(live);
	assert_string_equal(out, "[lines] promote_count, [tls] idle_timeout_ms");

	b.hidden = a.hidden * 2;
	assert_int_equal(cp_reload_diff(&a, &b, out, sizeof(out), &live), 3);
	assert_false(live);
	assert_string_equal(out, "[model] hidden"); /* only what needs a restart */

	fg_config_default(&b);
	b.max_connections = a.max_connections + 1;
	assert_int_equal(cp_reload_diff(&a, &b, out, sizeof(out), &live), 1);
	assert_true(live);
	b.max_connections = a.max_connections - 1;
	assert_int_equal(cp_reload_diff(&a, &b, out, sizeof(out), &live), 1);
	assert_false(live);
	assert_string_equal(out, "[tls] max_connections (lowered)");

	fg_config_default(&b);
	b.n_allow = 1;
	b.allow[0].family = 2;
	b.allow[0].len = 8;
	b.allow[0].addr[0] = 10;
	assert_int_equal(cp_reload_diff(&a, &b, out, sizeof(out), &live), 1); /* allow and n_allow: one key */
	assert_false(live);
	assert_string_equal(out, "[udp] allow");

	fg_config_default(&b);
	b.shadow_sample = 0.5;
	snprintf(b.alert_command, sizeof(b.alert_command), "/bin/true");
	assert_int_equal(cp_reload_diff(&a, &b, out, sizeof(out), &live), 2);
	assert_false(live);
	assert_string_equal(out, "[lines] shadow_sample, [audit] alert_command");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_render_families),
		cmocka_unit_test(test_render_values),
		cmocka_unit_test(test_diff),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* dp_main.c - fanogate-dp: the dataplane alone, from a config and a
 * drivers-config profile, with no control plane. It publishes the line
 * facts of the config, drains the dp->cp lanes itself (counting messages
 * and releasing buffers), prints counters, and writes a JSON report at exit.
 * Used by tests/dataplane and bench/dp before the daemon integrates dp_*.
 *
 * Thread: main (EAL main lcore); the poll lcores run dp_lcore_main. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "fg/boundary.h"
#include "fg/config.h"
#include "fg/ingest.h"
#include "fg/line.h"
#include "dp.h"

static volatile sig_atomic_t g_quit;
static void on_signal(int sig) { (void)sig; g_quit = 1; }

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: fanogate-dp [--config FILE] [--profile NAME|FILE] [--duration SEC]\n"
		   "                   [--idle-exit MS] [--report FILE] [--resolved-out FILE] [--ready-file FILE]\n"
		   "Runs the DPDK dataplane alone (no control plane) until SIGINT/SIGTERM, --duration,\n"
		   "or --idle-exit MS without any received packet (after the first one).\n");
}

struct lane_stats {
	uint64_t msgs[16];
};

static void drain_lanes(struct fg_boundary *b, struct lane_stats *ls, FILE *resolved_out, const struct fg_bands *bands,
			uint8_t *scratch, size_t scratch_cap)
{
	for (unsigned i = 0; i < b->n_lanes; i++) {
		struct fg_lane *l = &b->lanes[i];
		union fg_bmsg m;
		while (fg_ring_pop(l->to_cp, &m)) {
			if (m.kind < 16)
				ls->msgs[m.kind]++;
			const struct fg_bm_body *body = m.kind == FG_BM_RESOLVED    ? &m.resolved.body
							: m.kind == FG_BM_CANONICAL ? &m.canonical.body
										    : NULL;
			if (!body || body->buf == FG_BUF_NONE || body->buf >= l->dp2cp.n)
				continue;
			if (m.kind == FG_BM_RESOLVED && resolved_out && body->len <= l->dp2cp.size) {
				/* --resolved-out keeps the wire format: the frame is built
				 * here, at the edge that writes it (scratch: frame_max) */
				struct fg_resolved rr = {.token_seq = m.resolved.token_seq,
							 .dst_layer = m.resolved.layer,
							 .start_pos = m.resolved.start_pos,
							 .seq_len = m.resolved.seq_len,
							 .body = fg_pool_buf(&l->dp2cp, body->buf),
							 .body_len = body->len};
				ssize_t n = fg_resolved_encode(bands, &rr, scratch, scratch_cap);
				if (n > 0)
					fwrite(scratch, 1, (size_t)n, resolved_out);
			}
			fg_pool_put(&l->dp2cp, body->buf);
		}
	}
}

static int write_report(const char *path, const struct dp_report *r, const struct lane_stats *ls)
{
	json_t *o = json_object(), *c = json_object(), *x = json_object(), *oc = json_object(), *mf = json_object(),
	       *lanes = json_object();
	for (unsigned i = 0; i < FG_C__COUNT; i++)
		json_object_set_new(c, fg_dp_counter_name((enum fg_dp_counter)i), json_integer((json_int_t)r->c[i]));
	for (unsigned i = 0; i < DP_X__COUNT; i++)
		json_object_set_new(x, dp_xcounter_name((enum dp_xcounter)i), json_integer((json_int_t)r->x[i]));
	for (unsigned i = 0; i < FG_O__COUNT; i++)
		json_object_set_new(oc, fg_outcome_name((enum fg_outcome)i), json_integer((json_int_t)r->outcome[i]));
	for (unsigned i = 0; i < FG_R__COUNT; i++)
		if (r->malformed[i])
			json_object_set_new(mf, fg_reason_name((int)i), json_integer((json_int_t)r->malformed[i]));
	static const char *const lane_names[] = {"", "frame", "flush", "outcome", "resolved", "canonical",
						 "conflict", "expired", "peer"};
	for (unsigned i = 1; i < FG_ARRAY_LEN(lane_names); i++)
		json_object_set_new(lanes, lane_names[i], json_integer((json_int_t)ls->msgs[i]));
	json_object_set_new(o, "lcores", json_integer(r->lcores));
	json_object_set_new(o, "hugepages", json_boolean(r->hugepages));
	json_object_set_new(o, "tsc_hz", json_integer((json_int_t)r->tsc_hz));
	json_object_set_new(o, "counters", c);
	json_object_set_new(o, "x", x);
	json_object_set_new(o, "outcomes", oc);
	json_object_set_new(o, "malformed", mf);
	json_object_set_new(o, "lanes_to_cp", lanes);
	json_object_set_new(o, "slots_opened", json_integer((json_int_t)r->slots_opened));
	json_object_set_new(o, "slots_resolved", json_integer((json_int_t)r->slots_resolved));
	json_object_set_new(o, "slots_expired", json_integer((json_int_t)r->slots_expired));
	json_object_set_new(o, "slots_poisoned", json_integer((json_int_t)r->slots_poisoned));
	json_object_set_new(o, "slots_abandoned", json_integer((json_int_t)r->slots_abandoned));
	json_object_set_new(o, "slots_in_use", json_integer(r->slots_in_use));
	json_object_set_new(o, "reasm_timeouts", json_integer((json_int_t)r->reasm_timeouts));
	json_object_set_new(o, "delivery_pending", json_integer(r->delivery_pending));
	json_object_set_new(o, "mbufs_out_started", json_integer(r->mbufs_out_started));
	json_object_set_new(o, "mbufs_out_stopped", json_integer(r->mbufs_out_stopped));
	json_object_set_new(o, "mbufs_out_closed", json_integer(r->mbufs_out_closed));
	json_object_set_new(o, "mbuf_pool_size", json_integer(r->mbuf_pool_size));
	json_object_set_new(o, "mbuf_pool_avail", json_integer(r->mbuf_pool_avail));
	json_object_set_new(o, "xfer_pool_size", json_integer(r->xfer_pool_size));
	json_object_set_new(o, "xfer_pool_avail", json_integer(r->xfer_pool_avail));
	int rc = json_dump_file(o, path, JSON_INDENT(1) | JSON_SORT_KEYS);
	json_decref(o);
	return rc;
}

int main(int argc, char **argv)
{
	const char *config = NULL, *profile = NULL, *report = NULL, *resolved = NULL, *ready = NULL;
	double duration = 0;
	long idle_exit_ms = 0;
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},   {"profile", required_argument, NULL, 'p'},
		{"duration", required_argument, NULL, 'd'}, {"idle-exit", required_argument, NULL, 'i'},
		{"report", required_argument, NULL, 'r'},   {"resolved-out", required_argument, NULL, 'o'},
		{"ready-file", required_argument, NULL, 'R'}, {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch;
	while ((ch = getopt_long(argc, argv, "c:p:d:i:r:o:R:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': config = optarg; break;
		case 'p': profile = optarg; break;
		case 'd': duration = atof(optarg); break;
		case 'i': idle_exit_ms = atol(optarg); break;
		case 'r': report = optarg; break;
		case 'o': resolved = optarg; break;
		case 'R': ready = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	static struct fg_config cfg;
	struct fg_config_error err;
	fg_config_default(&cfg);
	if (config && fg_config_load(&cfg, config, &err) < 0) {
		fprintf(stderr, "fanogate-dp: %s:%d: %s\n", err.file, err.line, err.reason);
		return 1;
	}
	static struct fg_boundary b;
	struct fg_lines lines;
	fg_lines_init(&lines, cfg.line_initial, &cfg.policy, mono_ns());
	atomic_store(&b.linefacts, fg_linefacts_with_audit(fg_linefacts_pack(&lines, 0), FG_AUDIT_OFF));
	int rc = dp_init(&cfg, profile, &b);
	if (rc < 0) {
		fprintf(stderr, "fanogate-dp: dataplane init failed: %s\n", strerror(-rc));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	rc = dp_start();
	if (rc < 0) {
		fprintf(stderr, "fanogate-dp: start failed: %s\n", strerror(-rc));
		dp_stop();
		return 1;
	}
	if (ready) {
		FILE *f = fopen(ready, "w");
		if (f) {
			fprintf(f, "%d\n", (int)getpid());
			fclose(f);
		}
	}
	FILE *rout = resolved ? fopen(resolved, "wb") : NULL;
	struct fg_bands bands = cfg.bands;
	bands.n_layers = cfg.layers;
	size_t scratch_cap = FG_HDR_LEN + FG_SEED_PREFIX_LEN + (size_t)cfg.hidden * 4u * cfg.max_seq_len;
	uint8_t *scratch = rout ? malloc(scratch_cap) : NULL;
	if (rout && !scratch) {
		fprintf(stderr, "fanogate-dp: out of memory\n");
		g_quit = 1;
	}
	struct lane_stats ls = {{0}};
	uint64_t t0 = mono_ns(), last_rx_change = t0, last_rx = 0;
	while (!g_quit) {
		usleep(1000);
		drain_lanes(&b, &ls, scratch ? rout : NULL, &bands, scratch, scratch_cap);
		uint64_t now = mono_ns();
		if (duration > 0 && now - t0 >= (uint64_t)(duration * 1e9))
			break;
		if (idle_exit_ms > 0) {
			struct dp_report r;
			if (dp_report_get(&r) == 0) {
				if (r.c[FG_C_RX_PKTS] != last_rx) {
					last_rx = r.c[FG_C_RX_PKTS];
					last_rx_change = now;
				} else if (last_rx && now - last_rx_change >= (uint64_t)idle_exit_ms * 1000000ull) {
					break;
				}
			}
		}
	}
	/* Stop the lcores first, then drain what they sent last. */
	atomic_store(&b.stop, true);
	struct dp_report r;
	dp_stop();
	if (rout)
		fclose(rout);
	free(scratch);
	if (dp_report_get(&r) < 0)
		return 1;
	fprintf(stderr,
		"fanogate-dp: rx %llu frags %llu frames %llu accepted %llu resolved %llu expired %llu seeds_sent %llu "
		"acks %llu status %llu malformed %llu mbufs %u/%u xfer %u/%u\n",
		(unsigned long long)r.c[FG_C_RX_PKTS], (unsigned long long)r.c[FG_C_FRAGS],
		(unsigned long long)r.c[FG_C_FRAMES], (unsigned long long)r.c[FG_C_CONTRIB_ACCEPTED],
		(unsigned long long)r.c[FG_C_SEEDS_RESOLVED], (unsigned long long)r.c[FG_C_SLOTS_EXPIRED],
		(unsigned long long)r.c[FG_C_SEEDS_SENT], (unsigned long long)r.c[FG_C_ACKS_SENT],
		(unsigned long long)r.c[FG_C_STATUS_SENT], (unsigned long long)r.c[FG_C_DROP_MALFORMED],
		r.mbuf_pool_avail, r.mbuf_pool_size, r.xfer_pool_avail, r.xfer_pool_size);
	if (report && write_report(report, &r, &ls) < 0) {
		fprintf(stderr, "fanogate-dp: cannot write %s\n", report);
		return 1;
	}
	return 0;
}

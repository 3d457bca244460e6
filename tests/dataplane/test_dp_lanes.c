/* test_dp_lanes.c - the boundary as the daemon uses it: dp_init on a
 * net_ring port (no traffic), dp_start with 2 poll lcores, then frames over
 * the cp -> dp lanes to the shard owner (FG_BM_CONTRIB), their FG_BM_OUTCOME
 * and FG_BM_RESOLVED answers (resolved frame bytes checked), a malformed
 * frame's reason, FG_BM_FLUSH of an open slot, every lane buffer returned,
 * a conflict naming its TLS sender's lines, and dp_stop's report. One EAL per process: one test function.
 *
 * usage: test_dp_lanes   (exit 77 when not root) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "fg/boundary.h"
#include "fg/config.h"
#include "fg/line.h"
#include "dp.h"
#include "dp_test_util.h"

static struct fg_config cfg;
static struct fg_boundary b;

/* A frame from a TLS sender speaking for the lines in sender_lines. */
static void push_frame_from(unsigned lane, const uint8_t *frame, uint32_t len, uint32_t req, uint8_t sender_lines)
{
	struct fg_lane *l = &b.lanes[lane];
	uint32_t bi = fg_pool_get(&l->cp2dp);
	assert_int_not_equal(bi, FG_BUF_NONE);
	memcpy(fg_pool_buf(&l->cp2dp, bi), frame, len);
	union fg_bmsg m = {.contrib = {.kind = FG_BM_CONTRIB, .frame = {.buf = bi, .len = len}, .req_id = req,
				       .sender_lines = sender_lines}};
	assert_true(fg_ring_push(l->to_dp, &m));
}

static void push_frame(unsigned lane, const uint8_t *frame, uint32_t len, uint32_t req)
{
	push_frame_from(lane, frame, len, req, 0x7f);
}

/* Wait for a message of `type` (and req_id when non-zero) on any lane. */
static bool wait_msg(uint8_t type, uint32_t req, union fg_bmsg *out, unsigned *lane_out)
{
	for (int t = 0; t < 3000; t++) {
		for (unsigned i = 0; i < b.n_lanes; i++) {
			union fg_bmsg m = { .kind = 0 };
			while (fg_ring_pop(b.lanes[i].to_cp, &m)) {
				if (m.kind == type && (!req || (m.kind == FG_BM_OUTCOME && m.outcome.req_id == req))) {
					*out = m;
					*lane_out = i;
					return true;
				}
				const struct fg_bm_body *body = m.kind == FG_BM_RESOLVED    ? &m.resolved.body
								: m.kind == FG_BM_CANONICAL ? &m.canonical.body
											    : NULL;
				if (body && body->buf != FG_BUF_NONE)
					fg_pool_put(&b.lanes[i].dp2cp, body->buf);
			}
		}
		usleep(1000);
	}
	return false;
}

/* Ask the EAL telemetry socket (per-process prefix fgdp<pid>) for cmd. */
static bool telemetry(const char *cmd, char *out, size_t cap)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "/var/run/dpdk/fgdp%d/dpdk_telemetry.v2", (int)getpid());
	int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	ssize_t n = read(fd, out, cap - 1); /* the greeting */
	bool ok = n > 0 && write(fd, cmd, strlen(cmd)) == (ssize_t)strlen(cmd);
	if (ok) {
		n = read(fd, out, cap - 1);
		ok = n > 0;
		if (ok)
			out[n] = 0;
	}
	close(fd);
	return ok;
}

static void test_lanes(void **state)
{
	(void)state;
	char cfgtext[] = "[model]\nhidden = 4\nlayers = 32\n[rules]\ndefault = 1,3,5\nlayer.1 = 1\nlayer.3 = 1\n"
			 "[slots]\ncapacity = 64\ndeadline_ms = 60000\n[dataplane]\nlcores = 2\n"
			 "[consumers]\nlayer.3 = 10.77.0.2:5000\nresends = 0\n";
	struct fg_config_error err;
	fg_config_default(&cfg);
	assert_int_equal(fg_config_parse(&cfg, cfgtext, "test", &err), 0);
	struct fg_lines ls;
	fg_lines_init(&ls, cfg.line_initial, &cfg.policy, 0);
	atomic_store(&b.linefacts, fg_linefacts_pack(&ls, 0));
	char prof[512];
	snprintf(prof, sizeof(prof), "%s/drivers-config/ring.ini", FG_SOURCE_ROOT);
	setenv("FG_HUGEPAGES", "off", 1);
	/* a daemon killed with SIGKILL left its runtime directory: dp_init
	 * removes it; a live process's directory stays */
	pid_t dead = fork();
	assert_true(dead >= 0);
	if (dead == 0)
		_exit(0);
	assert_int_equal(waitpid(dead, NULL, 0), dead);
	char stale[64], stale_f[96], live[64];
	(void)mkdir("/var/run/dpdk", 0700);
	snprintf(stale, sizeof(stale), "/var/run/dpdk/fgdp%d", (int)dead);
	snprintf(stale_f, sizeof(stale_f), "%s/dpdk_telemetry.v2", stale);
	snprintf(live, sizeof(live), "/var/run/dpdk/fgdp%d", (int)getppid());
	assert_int_equal(mkdir(stale, 0700), 0);
	FILE *sf = fopen(stale_f, "w");
	assert_non_null(sf);
	fclose(sf);
	bool live_made = mkdir(live, 0700) == 0;
	assert_int_equal(dp_init(&cfg, prof, &b), 0);
	assert_int_not_equal(access(stale, F_OK), 0);
	assert_int_equal(access(live, F_OK), 0);
	if (live_made)
		(void)rmdir(live);
	assert_int_equal(b.n_lanes, 2);
	assert_non_null(b.lanes);
	assert_non_null(b.counters);
	assert_int_equal(dp_start(), 0);

	/* S01 resolves alone (layer 1 expects line 1): to its shard owner */
	uint8_t f[256];
	int n = tu_vector("S01", f, sizeof(f));
	assert_int_equal(n, 34);
	unsigned owner = fg_shard_of(42, 1, cfg.layers, 2);
	struct timespec ts0, ts1;
	clock_gettime(CLOCK_MONOTONIC, &ts0);
	push_frame(owner, f, (uint32_t)n, 7);
	union fg_bmsg m = { .kind = 0 };
	unsigned lane;
	assert_true(wait_msg(FG_BM_OUTCOME, 7, &m, &lane));
	clock_gettime(CLOCK_MONOTONIC, &ts1);
	assert_int_equal(lane, owner);
	/* stamped when the lcore took the request (the lane's latency, /metrics) */
	assert_true(m.outcome.t_ns >= (uint64_t)ts0.tv_sec * 1000000000ull + (uint64_t)ts0.tv_nsec);
	assert_true(m.outcome.t_ns <= (uint64_t)ts1.tv_sec * 1000000000ull + (uint64_t)ts1.tv_nsec);
	assert_int_equal(m.outcome.status.outcome, FG_O_RESOLVED);
	assert_int_equal(m.outcome.status.token_seq, 42);
	assert_true(m.outcome.status.fingerprint == 0x5e2de06ec4043aa2ull);
	/* the RESOLVED message came first on the same lane; look for it again */
	push_frame(owner, f, (uint32_t)n, 8); /* late duplicate: answered, not re-added */
	assert_true(wait_msg(FG_BM_OUTCOME, 8, &m, &lane));
	assert_int_equal(m.outcome.status.outcome, FG_O_LATE);

	/* a second slot, to catch its RESOLVED frame */
	uint8_t g[256];
	memcpy(g, f, (size_t)n);
	fg_put_be32(g + 2, 43);
	unsigned owner43 = fg_shard_of(43, 1, cfg.layers, 2);
	push_frame(owner43, g, (uint32_t)n, 9);
	assert_true(wait_msg(FG_BM_RESOLVED, 0, &m, &lane));
	assert_int_equal(lane, owner43);
	/* facts, and the body alone by reference: no frame crosses */
	assert_int_equal(m.resolved.token_seq, 43);
	assert_int_equal(m.resolved.layer, 1);
	assert_int_equal(m.resolved.seq_len, 1);
	assert_int_equal(m.resolved.lines, 1u << 1); /* line 1 */
	assert_true(m.resolved.fingerprint == 0x5e2de06ec4043aa2ull); /* S01's body, hashed once */
	assert_int_equal(m.resolved.body.len, 16);
	/* its times, for /metrics: opened <= resolving contribution taken <= resolved,
	 * and it came through the lane (TLS) */
	assert_int_equal(m.resolved.ingress, FG_INGRESS_TLS);
	assert_true(m.resolved.t_open_ns != 0);
	assert_true(m.resolved.t_open_ns <= m.resolved.t_last_ns);
	assert_true(m.resolved.t_last_ns <= m.resolved.t_ns);
	const uint8_t *rf = fg_pool_buf(&b.lanes[lane].dp2cp, m.resolved.body.buf);
	assert_memory_equal(rf, f + 18, 16); /* body = S01's */
	fg_pool_put(&b.lanes[lane].dp2cp, m.resolved.body.buf);
	assert_true(wait_msg(FG_BM_OUTCOME, 9, &m, &lane));

	/* a malformed frame: the reason comes back in the status */
	n = tu_vector("S03", f, sizeof(f));
	push_frame(0, f, (uint32_t)n, 10);
	assert_true(wait_msg(FG_BM_OUTCOME, 10, &m, &lane));
	assert_int_equal(m.outcome.status.reason, FG_R_SEED_LINE);
	assert_int_equal(m.outcome.status.outcome, FG_O_MALFORMED);

	/* an open slot (layer 0 expects 1,3,5; one line sent), then FLUSH */
	n = tu_vector("S01", f, sizeof(f));
	fg_put_be16(f, 0xAF60);
	fg_put_be32(f + 2, 500);
	unsigned o500 = fg_shard_of(500, 0, cfg.layers, 2);
	push_frame(o500, f, (uint32_t)n, 11);
	assert_true(wait_msg(FG_BM_OUTCOME, 11, &m, &lane));
	assert_int_equal(m.outcome.status.outcome, FG_O_ACCEPTED);
	assert_true(m.outcome.status.facts & FG_FACT_AWAITING);
	union fg_bmsg fl = {.flush = {.kind = FG_BM_FLUSH, .epoch = 1}};
	assert_true(fg_ring_push(b.lanes[o500].to_dp, &fl));
	struct dp_report r;
	for (int t = 0; t < 2000; t++) {
		assert_int_equal(dp_report_get(&r), 0);
		if (r.x[DP_X_LANE_FLUSH] == 1)
			break;
		usleep(1000);
	}
	assert_int_equal(r.x[DP_X_LANE_FLUSH], 1);
	assert_int_equal(r.c[FG_C_SLOTS_FLUSHED], 1); /* a flushed slot is freed, not expired */
	assert_int_equal(r.c[FG_C_SLOTS_EXPIRED], 0);
	assert_int_equal(r.x[DP_X_LANE_FRAMES], 5);
	/* every cp2dp buffer came back to its pool */
	for (unsigned i = 0; i < b.n_lanes; i++)
		assert_int_equal(fg_ring_count(b.lanes[i].cp2dp.free), b.lanes[i].cp2dp.n);
	/* the same figures through rte_telemetry */
	static char js[65536];
	assert_true(telemetry("/fanogate/counters", js, sizeof(js)));
	assert_non_null(strstr(js, "\"lane_frames\": 5") ? strstr(js, "\"lane_frames\": 5") : strstr(js, "\"lane_frames\":5"));
	assert_non_null(strstr(js, "outcome_resolved"));
	assert_true(telemetry("/fanogate/lcore_counters,1", js, sizeof(js)));
	assert_non_null(strstr(js, "\"lcore\""));

	/* Urgent and deferred (boundary.h): the control plane "sleeps"
	 * (waiting = 1). A seed of layer 3 goes to its UDP consumer and nobody
	 * watches layer 3: its RESOLVED is pushed without a wake-up. */
	union fg_bmsg drop;
	for (unsigned i = 0; i < b.n_lanes; i++)
		while (fg_ring_pop(b.lanes[i].to_cp, &drop))
			if (drop.kind == FG_BM_RESOLVED)
				fg_pool_put(&b.lanes[i].dp2cp, drop.resolved.body.buf);
	assert_int_equal(dp_report_get(&r), 0);
	uint64_t deferred0 = r.x[DP_X_LANE_DEFERRED], wakes0 = r.x[DP_X_LANE_WAKES];
	fg_wake_prepare(&b.wake);
	n = tu_vector("S01", f, sizeof(f));
	fg_put_be16(f, 0xAF63);
	fg_put_be32(f + 2, 600);
	push_frame(fg_shard_of(600, 3, cfg.layers, 2), f, (uint32_t)n, 0);
	assert_true(wait_msg(FG_BM_RESOLVED, 0, &m, &lane));
	assert_int_equal(m.resolved.token_seq, 600);
	assert_int_equal(m.resolved.udp_sent, 1);
	fg_pool_put(&b.lanes[lane].dp2cp, m.resolved.body.buf);
	for (int t = 0; t < 2000; t++) {
		assert_int_equal(dp_report_get(&r), 0);
		if (r.x[DP_X_LANE_DEFERRED] > deferred0)
			break;
		usleep(1000);
	}
	assert_true(r.x[DP_X_LANE_DEFERRED] > deferred0);
	assert_int_equal(r.x[DP_X_LANE_WAKES], wakes0);
	assert_int_equal(atomic_load(&b.wake.waiting), 1); /* nobody woke "us" */
	/* Now layer 3 is watched (a WebSocket subscriber): the next one wakes. */
	uint64_t watch[FG_WATCH_WORDS] = {1u << 3};
	fg_watch_set(&b.watch, watch);
	fg_put_be32(f + 2, 601);
	push_frame(fg_shard_of(601, 3, cfg.layers, 2), f, (uint32_t)n, 0);
	struct pollfd pfd = {.fd = b.wake.fd, .events = POLLIN};
	assert_int_equal(poll(&pfd, 1, 5000), 1); /* the lcore wrote the eventfd */
	uint64_t val = 0;
	assert_int_equal(read(b.wake.fd, &val, sizeof(val)), (ssize_t)sizeof(val));
	assert_int_equal(val, 1);
	assert_int_equal(atomic_load(&b.wake.waiting), 0);
	assert_true(wait_msg(FG_BM_RESOLVED, 0, &m, &lane));
	assert_int_equal(m.resolved.token_seq, 601);
	fg_pool_put(&b.lanes[lane].dp2cp, m.resolved.body.buf);
	/* The lane's dp2cp pool runs dry (the control plane holds every
	 * buffer): the seed's facts still cross, without the body
	 * (boundary.h), counted lane_no_body; nothing counts as lane_full.
	 * (We take the buffers while the lcore has nothing to report: it is
	 * the free list's only other consumer.) */
	unsigned nb_lane = fg_shard_of(602, 3, cfg.layers, 2);
	struct fg_pool *pool = &b.lanes[nb_lane].dp2cp;
	uint32_t held[4096], n_held = 0;
	while (n_held < 4096 && (held[n_held] = fg_pool_get(pool)) != FG_BUF_NONE)
		n_held++;
	assert_int_equal(n_held, pool->n);
	assert_int_equal(dp_report_get(&r), 0);
	uint64_t lane_full0 = r.c[FG_C_DROP_LANE_FULL];
	fg_put_be32(f + 2, 602);
	push_frame(nb_lane, f, (uint32_t)n, 0);
	assert_true(wait_msg(FG_BM_RESOLVED, 0, &m, &lane));
	assert_int_equal(lane, nb_lane);
	assert_int_equal(m.resolved.token_seq, 602);
	assert_int_equal(m.resolved.body.buf, FG_BUF_NONE);
	assert_int_equal(m.resolved.body.len, cfg.hidden * 4u);
	assert_true(m.resolved.fingerprint != 0);
	assert_int_equal(dp_report_get(&r), 0);
	assert_int_equal(r.c[FG_C_LANE_NO_BODY], 1);
	assert_int_equal(r.c[FG_C_DROP_LANE_FULL], lane_full0);
	for (uint32_t k = 0; k < n_held; k++)
		fg_pool_put(pool, held[k]);
	/* A conflicting duplicate over a lane: its FG_BM_CONFLICT names the
	 * sender as TLS (family 0) with the lines the CONTRIB said it speaks
	 * for (lines 0, 3, 4: a role of point e2), so the control plane can
	 * judge the attribution (cp_epoch_guard.h rule 2). */
	n = tu_vector("S01", f, sizeof(f));
	fg_put_be16(f, 0xAF60);
	fg_put_be32(f + 2, 700);
	unsigned o700 = fg_shard_of(700, 0, cfg.layers, 2);
	push_frame_from(o700, f, (uint32_t)n, 20, 0x19);
	assert_true(wait_msg(FG_BM_OUTCOME, 20, &m, &lane));
	assert_int_equal(m.outcome.status.outcome, FG_O_ACCEPTED);
	f[18] ^= 1; /* other bytes for the same slot and line */
	push_frame_from(o700, f, (uint32_t)n, 21, 0x19);
	assert_true(wait_msg(FG_BM_CONFLICT, 0, &m, &lane));
	assert_int_equal(lane, o700);
	assert_int_equal(m.conflict.token_seq, 700);
	assert_int_equal(m.conflict.layer, 0);
	assert_int_equal(m.conflict.line, 1);
	assert_int_equal(m.conflict.src.family, 0);
	assert_int_equal(m.conflict.src.lines, 0x19);
	assert_true(wait_msg(FG_BM_OUTCOME, 21, &m, &lane));
	assert_int_equal(m.outcome.status.outcome, FG_O_CONFLICT);
	/* the three deliveries came back round the ring port and were refused
	 * (sent from our own address): no mbuf is left in flight at dp_stop */
	for (int t = 0; t < 2000; t++) {
		assert_int_equal(dp_report_get(&r), 0);
		if (r.x[DP_X_BAD_SOURCE] >= 3)
			break;
		usleep(1000);
	}
	assert_int_equal(r.x[DP_X_BAD_SOURCE], 3);
	dp_stop();
	assert_null(b.lanes);
	char dir[64];
	snprintf(dir, sizeof(dir), "/var/run/dpdk/fgdp%d", (int)getpid());
	assert_int_not_equal(access(dir, F_OK), 0); /* the runtime directory is gone */
	assert_int_equal(dp_report_get(&r), 0);
	assert_int_equal(r.outcome[FG_O_RESOLVED], 5);
	assert_int_equal(r.outcome[FG_O_LATE], 1);
	assert_int_equal(r.outcome[FG_O_ACCEPTED], 2);
	assert_int_equal(r.outcome[FG_O_CONFLICT], 1);
	assert_int_equal(r.outcome[FG_O_MALFORMED], 1);
	assert_int_equal(r.slots_opened, 7);
	assert_int_equal(r.slots_resolved, 5);
	assert_int_equal(r.slots_expired, 0); /* the open one was flushed (FG_C_SLOTS_FLUSHED), not expired */
	assert_int_equal(r.c[FG_C_SLOTS_FLUSHED], 1);
	assert_int_equal(r.mbuf_pool_avail, r.mbuf_pool_size);
	assert_int_equal(r.xfer_pool_avail, r.xfer_pool_size);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("SKIP: the DPDK EAL needs root here\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_lanes)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

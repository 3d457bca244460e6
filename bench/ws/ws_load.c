/* ws_load.c - bench/ws's C load generator: CONNS WebSocket-over-TLS
 * connections to /flow (bearer token), one thread each, each keeping
 * WINDOW residual-seed frames of FRAME_BYTES in flight (lines 1, 3, 5 in
 * turn so the slots resolve, fresh token per slot); every frame is answered
 * by one status message (42 bytes: a 10-byte header and the 32-byte
 * version-2 status, include/fg/wire.h), matched in order. The same protocol as
 * ws_bench_client.js, without Node's per-message cost, so the server and
 * not the generator is the limit (its own CPU is reported to check that).
 *
 * The connection, the upgrade and the status frames coming back are
 * tools/wsclient's (wsc.h). Frames are masked (RFC 6455 5.3) with a fixed
 * key: the templates are encoded once (cp_ws_client_frame_encode) and only
 * the 4 token bytes are re-masked per frame.
 *
 * Per-message cost: whenever the window has room, every frame that fits
 * goes out in one SSL_write from a per-connection buffer of prebuilt
 * frames (no copy per frame: only its token is patched), so a window's
 * worth of frames costs one write call and a few TLS records instead of
 * one of each per frame (WS_LOAD_COALESCE=0 restores one SSL_write, one
 * record, per frame: the server's workload of the runs before
 * 2026-12-02 06:30 UTC).
 *
 * Output: one JSON line: msgs/s over the measured window (after WARM_S),
 * p50/p99 latency (send -> status), errors, this process's CPU seconds.
 * Stops by itself after WARM_S + RUN_S (+ at most 5 s to join).
 * With MAX_MSGS (> 0), each connection instead sends exactly MAX_MSGS
 * frames, waits for their statuses and stops: a fixed workload for
 * instruction counts (valgrind --tool=callgrind), where time means
 * nothing; the whole run is then the measured window.
 * Usage: ws_load PORT CA TOKEN FRAME_BYTES CONNS WINDOW WARM_S RUN_S [MAX_MSGS]
 * Threads: main + one per connection; counters are per thread. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "wsc.h"

#define MAX_WIN 1024
#define STATUS_FRAME_LEN (10u + 32u) /* aeon-flow header + FG_STATUS_PAYLOAD_LEN */

static int g_window, g_hidden;
static bool g_coalesce = true;
static uint64_t g_max_msgs; /* per connection; 0: time-based */
static size_t g_frame;
static struct wsc_opts g_opts;
static SSL_CTX *g_ctx;
static atomic_bool g_measuring, g_stop;
static const uint8_t g_key[4] = {0x37, 0xfa, 0x21, 0x3d};

struct conn {
	pthread_t th;
	int id;
	uint64_t answered, total, errors;
	uint64_t *lat; /* measured latencies, ns */
	size_t nlat, caplat;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void put_be16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put_be32(uint8_t *p, uint32_t v) { put_be16(p, (uint16_t)(v >> 16)); put_be16(p + 2, (uint16_t)v); }

/* The masked WebSocket frame (header + masked payload) for one line. */
static uint8_t *ws_template(int layer, int line, size_t *len, size_t *off)
{
	size_t pl = g_frame;
	uint8_t *p = malloc(pl), *b = malloc(pl + CP_WS_HDR_MAX);
	if (!p || !b)
		exit(1);
	put_be16(p, (uint16_t)(0xAF60 + layer));
	put_be32(p + 2, 0);
	p[6] = (uint8_t)(line << 4);
	uint32_t n = (uint32_t)(8 + 4 * g_hidden);
	p[7] = (uint8_t)(n >> 16);
	p[8] = (uint8_t)(n >> 8);
	p[9] = (uint8_t)n;
	memset(p + 10, 0, 8);
	p[14] = 1; /* seq_len 1 (LE) */
	for (int i = 0; i < g_hidden; i++) {
		float v = (float)(i % 97) * 0.25f + (float)line;
		memcpy(p + 18 + 4 * i, &v, 4);
	}
	ssize_t fl = cp_ws_client_frame_encode(CP_WS_OP_BINARY, p, pl, g_key, b, pl + CP_WS_HDR_MAX);
	free(p);
	if (fl < 0)
		exit(1);
	*len = (size_t)fl;
	*off = (size_t)fl - pl;
	return b;
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	char err[512];
	struct wsc_conn *w = NULL;
	if (wsc_conn_open(g_ctx, &g_opts, &w, err, sizeof err) < 0 || wsc_ws_upgrade(w, "/flow", err, sizeof err) < 0) {
		fprintf(stderr, "ws_load: connection %d: %s\n", c->id, err);
		c->errors++;
		wsc_conn_free(w);
		return NULL;
	}
	size_t len[3], off[3];
	uint8_t *tmpl[3];
	for (int l = 0; l < 3; l++)
		tmpl[l] = ws_template(c->id % 4, 1 + 2 * l, &len[l], &off[l]);
	/* The send buffer holds window + 2 whole frames, prebuilt once, of
	 * lines 1, 3, 5, 1, 3, 5, ... in turn (every line's frame has the same
	 * length), so the frames k, k+1, ... of a batch are the contiguous run
	 * starting at slot k % 3: sending one patches only its 4 (masked) token
	 * bytes in place, and the batch goes to one SSL_write. */
	size_t flen = len[0], batch_frames = g_coalesce ? (size_t)g_window : 1;
	size_t nslots = (size_t)g_window + 2;
	uint8_t *f = malloc(flen * nslots);
	if (!f) {
		c->errors++;
		goto done;
	}
	for (size_t i = 0; i < nslots; i++)
		memcpy(f + i * flen, tmpl[i % 3], flen);
	uint64_t sent_at[MAX_WIN];
	unsigned head = 0, tail = 0; /* FIFO of send times */
	uint64_t k = 0;
	while (!atomic_load(&g_stop)) {
		if (g_max_msgs && c->total >= g_max_msgs)
			break;
		while (tail - head < (unsigned)g_window && (!g_max_msgs || k < g_max_msgs)) {
			size_t first = (size_t)(k % 3), nf = 0;
			uint64_t t_send = now_ns();
			while (tail - head < (unsigned)g_window && nf < batch_frames && (!g_max_msgs || k < g_max_msgs)) {
				uint32_t tok = (uint32_t)c->id * 10000000u + (uint32_t)(k / 3);
				k++;
				uint8_t *fr = f + (first + nf) * flen, t[4];
				put_be32(t, tok);
				for (int i = 0; i < 4; i++)
					fr[off[0] + 2 + i] = t[i] ^ g_key[(2 + i) & 3];
				sent_at[tail++ % MAX_WIN] = t_send;
				nf++;
			}
			if (wsc_write_all(w, f + first * flen, nf * flen) < 0) {
				c->errors++;
				goto done;
			}
		}
		if (wsc_read(w) < 0) {
			c->errors++;
			break;
		}
		struct cp_ws_event ev;
		int r;
		while ((r = wsc_ws_next(w, &ev)) > 0) {
			if (ev.kind == CP_WS_EV_PING) {
				if (wsc_ws_send(w, CP_WS_OP_PONG, ev.data, ev.len) < 0)
					r = -EIO;
			} else if (ev.kind == CP_WS_EV_CLOSE) {
				r = -EPIPE;
			} else if (ev.kind == CP_WS_EV_MESSAGE) {
				if (ev.len != STATUS_FRAME_LEN || ev.data[0] != 0xFF || ev.data[1] != 0xFE)
					c->errors++;
				c->total++;
				uint64_t t0 = sent_at[head++ % MAX_WIN];
				if (atomic_load_explicit(&g_measuring, memory_order_relaxed)) {
					c->answered++;
					if (c->nlat < c->caplat)
						c->lat[c->nlat++] = now_ns() - t0;
				}
			}
			if (r < 0)
				break;
		}
		if (r < 0) {
			c->errors++;
			goto done;
		}
	}
done:
	free(f);
	for (int l = 0; l < 3; l++)
		free(tmpl[l]);
	wsc_conn_free(w);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc != 9 && argc != 10) {
		fprintf(stderr, "usage: ws_load PORT CA TOKEN FRAME_BYTES CONNS WINDOW WARM_S RUN_S [MAX_MSGS]\n");
		return 2;
	}
	int port = atoi(argv[1]);
	g_frame = strtoul(argv[4], NULL, 0);
	int conns = atoi(argv[5]);
	g_window = atoi(argv[6]);
	double warm = atof(argv[7]), run = atof(argv[8]);
	g_max_msgs = argc == 10 ? strtoull(argv[9], NULL, 0) : 0;
	/* A fixed workload may run against a daemon under valgrind on a loaded
	 * machine (icount.sh): its handshakes alone can take seconds there. */
	g_opts = (struct wsc_opts){ .host = "127.0.0.1", .port = (uint16_t)port, .sni = "localhost",
				    .ca_file = argv[2], .token = argv[3], .timeout_ms = g_max_msgs ? 60000 : 5000 };
	const char *co = getenv("WS_LOAD_COALESCE");
	g_coalesce = !co || strcmp(co, "0") != 0;
	if (g_frame < 22 || conns < 1 || conns > 1024 || g_window < 1 || g_window > MAX_WIN || run <= 0) {
		fprintf(stderr, "ws_load: bad arguments\n");
		return 2;
	}
	g_hidden = (int)((g_frame - 18) / 4);
	g_frame = 18 + 4 * (size_t)g_hidden;
	char err[512];
	if (port < 1 || port > 65535 || !(g_ctx = wsc_ctx_new(&g_opts, err, sizeof err))) {
		fprintf(stderr, "ws_load: %s\n", port < 1 || port > 65535 ? "bad port" : err);
		return 1;
	}
	struct conn *c = calloc((size_t)conns, sizeof(*c));
	if (!c)
		return 1;
	if (g_max_msgs) /* every answer counts, from the first */
		atomic_store(&g_measuring, true);
	for (int i = 0; i < conns; i++) {
		c[i].id = i;
		c[i].caplat = 1u << 20;
		c[i].lat = malloc(c[i].caplat * sizeof(uint64_t));
		if (!c[i].lat || pthread_create(&c[i].th, NULL, conn_main, &c[i]))
			return 1;
	}
	struct rusage r0, r1;
	uint64_t t0, t1;
	if (g_max_msgs) { /* fixed workload: the whole run is measured */
		getrusage(RUSAGE_SELF, &r0);
		t0 = now_ns();
		for (int i = 0; i < conns; i++)
			pthread_join(c[i].th, NULL); /* each read has a 60 s timeout here */
		t1 = now_ns();
		getrusage(RUSAGE_SELF, &r1);
	} else {
		struct timespec ts = {.tv_sec = (time_t)warm, .tv_nsec = (long)((warm - (double)(time_t)warm) * 1e9)};
		nanosleep(&ts, NULL);
		getrusage(RUSAGE_SELF, &r0);
		t0 = now_ns();
		atomic_store(&g_measuring, true);
		ts = (struct timespec){.tv_sec = (time_t)run, .tv_nsec = (long)((run - (double)(time_t)run) * 1e9)};
		nanosleep(&ts, NULL);
		atomic_store(&g_measuring, false);
		t1 = now_ns();
		getrusage(RUSAGE_SELF, &r1);
		atomic_store(&g_stop, true);
		for (int i = 0; i < conns; i++)
			pthread_join(c[i].th, NULL); /* each read has a 5 s timeout */
	}
	uint64_t answered = 0, total = 0, errors = 0;
	size_t nlat = 0;
	for (int i = 0; i < conns; i++) {
		answered += c[i].answered;
		total += c[i].total;
		errors += c[i].errors;
		nlat += c[i].nlat;
	}
	uint64_t *lat = malloc((nlat ? nlat : 1) * sizeof(uint64_t));
	size_t k = 0;
	for (int i = 0; i < conns; i++)
		for (size_t j = 0; j < c[i].nlat; j++)
			lat[k++] = c[i].lat[j];
	qsort(lat, nlat, sizeof(uint64_t), cmp_u64);
	double secs = (double)(t1 - t0) / 1e9;
	double cpu = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6 +
		     (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6;
#define PCT(p) (nlat ? (double)lat[(size_t)((double)(nlat - 1) * (p))] / 1e3 : 0.0)
	printf("{\"loadgen\":\"c\",\"coalesce\":%d,\"frame_bytes\":%zu,\"conns\":%d,\"window\":%d,\"msgs_per_s\":%.0f,\"p50_us\":%.0f,"
	       "\"p99_us\":%.0f,\"samples\":%zu,\"total\":%llu,\"errors\":%llu,\"gen_cpu_s\":%.3f,\"seconds\":%.3f}\n",
	       g_coalesce ? 1 : 0, g_frame, conns, g_window, (double)answered / secs, PCT(0.5), PCT(0.99), nlat, (unsigned long long)total,
	       (unsigned long long)errors, cpu, secs);
	return errors ? 3 : 0;
}

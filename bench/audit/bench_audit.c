/* bench_audit.c - audit log durability throughput and latency: group commit
 * versus one fdatasync per record, in the same run, on the same file system.
 *
 * For each mode, appends N verdict records through cp_audit_log as fast as
 * the log takes them (at most WINDOW appended-but-not-durable, like a daemon
 * whose acks wait for durability), polling the log's eventfd like the daemon
 * loop does. Measures:
 *   - verdicts/s made durable (first append to last durable callback);
 *   - verdict->durable latency per record (append time to the on_durable
 *     callback that covered it): p50, p99, p99.9;
 *   - a closed-loop "lone record" latency: append one, wait until durable,
 *     repeat (the fdatasync floor, same for both modes).
 * Modes: "group" (group_commit_us 0: submit at once when idle, gather while
 * a batch is in flight), "group+200us" (wait up to 200 us for company when
 * idle), "per-record" (batch_max_records 1: write+fdatasync per record).
 * Two loads: saturation (closed loop, WINDOW outstanding) and an open-loop
 * offered rate of half what per-record sustained, so both modes see the
 * same load and the latency difference is the batching alone.
 *
 * usage: bench_audit [DIR] [N]   (DIR default: a temp dir under /var/tmp,
 * on the disk; N default 20000 per group mode, per-record mode runs N/10),
 * every mode in 3 interleaved rounds. Single thread. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cp_audit_log.h"

#define WINDOW 1024u

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

struct run {
	uint64_t *t_append; /* by seq - base */
	uint64_t *lat;      /* per record, ns */
	uint64_t base, n_lat, durable_next, n;
	uint64_t t_last;
};

static void on_durable(void *arg, uint64_t seq)
{
	struct run *r = arg;
	uint64_t t = now_ns();
	for (uint64_t s = r->durable_next; s <= seq; s++)
		if (s >= r->base && s - r->base < r->n)
			r->lat[r->n_lat++] = t - r->t_append[s - r->base];
	r->durable_next = seq + 1;
	r->t_last = t;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double pct(const uint64_t *v, uint64_t n, double p)
{
	if (!n)
		return 0;
	uint64_t i = (uint64_t)(p * (double)(n - 1));
	return (double)v[i] / 1000.0; /* us */
}

/* One mode's figures, accumulated over interleaved rounds. */
struct result {
	const char *name;
	uint64_t n;          /* records made durable */
	double secs;         /* first append to last durable, summed over rounds */
	uint64_t batches, durable;
	uint64_t *lat;       /* every record's latency, ns */
	uint64_t n_lat, cap_lat;
	uint64_t lone[600];
	unsigned n_lone;
};

static void pump(struct cp_audit_log *l, int ms)
{
	struct pollfd p = { .fd = cp_audit_log_fd(l), .events = POLLIN };
	(void)poll(&p, 1, ms);
	if (cp_audit_log_process(l) < 0) {
		fprintf(stderr, "bench_audit: log failed\n");
		exit(1);
	}
}

/* rate == 0: closed loop, at most WINDOW outstanding; rate > 0: open loop,
 * one append every 1/rate s (as a fleet would offer verdicts). */
static void run_mode(const char *dir, const char *name, uint32_t gc_us, uint32_t per_batch, uint64_t n,
		     double rate, struct result *res)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s.audit", dir, name);
	unlink(path);
	struct run r = { 0 };
	r.n = n;
	r.t_append = calloc(n, sizeof(uint64_t));
	r.lat = calloc(n, sizeof(uint64_t));
	struct cp_audit_log_cfg cfg = { .path = path, .group_commit_us = gc_us, .batch_max_records = per_batch,
					.who = "bench_audit", .on_durable = on_durable, .arg = &r };
	struct cp_audit_log *l;
	struct cp_audit_open_report rep;
	char err[512];
	if (cp_audit_log_open(&l, &cfg, &rep, err, sizeof(err)) < 0) {
		fprintf(stderr, "bench_audit: %s\n", err);
		exit(1);
	}
	r.base = rep.next_seq;
	r.durable_next = rep.next_seq;
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	p.verdict.lines = 0x2A;
	p.verdict.diff.n_elems = 1536;
	p.verdict.diff.first_index = UINT32_MAX;
	uint64_t appended = 0;
	uint64_t t0 = now_ns();
	while (r.durable_next < r.base + n) {
		while (appended < n && appended - (r.durable_next - r.base) < WINDOW &&
		       (rate <= 0 || now_ns() >= t0 + (uint64_t)((double)appended * 1e9 / rate))) {
			p.verdict.token_seq = (uint32_t)appended;
			p.verdict.fp_jump = p.verdict.fp_canon = appended * 0x9E3779B97F4A7C15ull;
			uint64_t seq;
			r.t_append[appended] = now_ns();
			int rc = cp_audit_log_append(l, FG_AREC_VERDICT, &p, &seq);
			if (rc == -ENOBUFS)
				break;
			if (rc < 0) {
				fprintf(stderr, "bench_audit: append: %s\n", strerror(-rc));
				exit(1);
			}
			appended++;
		}
		pump(l, rate > 0 ? 0 : 5);
	}
	res->name = name;
	res->n += n;
	res->secs += (double)(r.t_last - t0) / 1e9;
	if (res->n_lat + r.n_lat > res->cap_lat) {
		res->cap_lat = 2 * (res->n_lat + r.n_lat);
		res->lat = realloc(res->lat, res->cap_lat * sizeof(uint64_t));
	}
	memcpy(res->lat + res->n_lat, r.lat, r.n_lat * sizeof(uint64_t));
	res->n_lat += r.n_lat;
	struct cp_audit_log_stats st;
	cp_audit_log_stats(l, &st);
	res->batches += st.batches;
	res->durable += st.durable_records;

	/* Lone records: one at a time, closed loop, 100 per round. */
	for (int i = 0; i < 100 && res->n_lone < FG_ARRAY_LEN(res->lone); i++) {
		uint64_t seq, t = now_ns();
		if (cp_audit_log_append(l, FG_AREC_VERDICT, &p, &seq) < 0)
			exit(1);
		while (!cp_audit_log_is_durable(l, seq))
			pump(l, 5);
		res->lone[res->n_lone++] = now_ns() - t;
	}
	cp_audit_log_free(l);
	unlink(path);
	free(r.t_append);
	free(r.lat);
}

int main(int argc, char **argv)
{
	char tmp[] = "/var/tmp/fg-bench-audit-XXXXXX";
	const char *dir = argc > 1 ? argv[1] : mkdtemp(tmp);
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 20000;
	if (!dir || n < 100) {
		fprintf(stderr, "usage: bench_audit [DIR] [N>=100]\n");
		return 2;
	}
	struct utsname u;
	uname(&u);
	time_t now = time(NULL);
	char date[64];
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", gmtime(&now));
	printf("# bench_audit %s, %s %s, dir %s, N %" PRIu64 " (per-record: N/10), window %u, 3 interleaved rounds\n",
	       date, u.sysname, u.release, dir, n, WINDOW);
	/* CPU ceiling: encoding alone (SHA-256 chain + XXH3 check) into memory. */
	{
		enum { ENC = 1000000 };
		static uint8_t buf[FG_AUDIT_REC_MAX];
		struct fg_audit_chain ch;
		fg_audit_chain_init(&ch);
		union fg_audit_payload p;
		memset(&p, 0, sizeof(p));
		p.verdict.lines = 0x2A;
		p.verdict.diff.first_index = UINT32_MAX;
		uint64_t t0 = now_ns();
		uint64_t bytes = 0;
		for (int i = 0; i < ENC; i++) {
			p.verdict.token_seq = (uint32_t)i;
			ssize_t k = fg_audit_encode(&ch, FG_AREC_VERDICT, t0, &p, buf, sizeof(buf));
			if (k < 0)
				return 1;
			bytes += (uint64_t)k;
		}
		double secs = (double)(now_ns() - t0) / 1e9;
		printf("encode only (SHA-256 chain + XXH3 check, %" PRIu64 "-byte verdict records): %.0f records/s, "
		       "%.0f ns/record\n\n", bytes / ENC, ENC / secs, secs * 1e9 / ENC);
	}
	/* Modes run interleaved, ROUNDS times each, so that the disk's changing
	 * speed (this VM's fdatasync varies from 0.5 to 8 ms with its
	 * neighbours' I/O) falls on every mode alike; figures are over all rounds. */
	enum { ROUNDS = 3 };
	static struct result res[6];
	res[0].name = "per-record";
	res[1].name = "group";
	res[2].name = "group+200us";
	for (int r = 0; r < ROUNDS; r++) {
		run_mode(dir, "per-record", 0, 1, n / 30, 0, &res[0]);
		run_mode(dir, "group", 0, 0, n / ROUNDS, 0, &res[1]);
		run_mode(dir, "group+200us", 200, 0, n / ROUNDS, 0, &res[2]);
	}
	/* Open loop at half of what per-record sustained, ~1.5 s per round. */
	double rate = (double)res[0].n / res[0].secs / 2;
	uint64_t m = (uint64_t)(rate * 1.5);
	if (m < 50)
		m = 50;
	for (int r = 0; r < ROUNDS; r++) {
		run_mode(dir, "per-record", 0, 1, m, rate, &res[3]);
		run_mode(dir, "group", 0, 0, m, rate, &res[4]);
		run_mode(dir, "group", 0, 0, 10 * m, 10 * rate, &res[5]);
	}
	printf("| load | mode | records | durable verdicts/s | p50 us | p99 us | p99.9 us | records/fdatasync |"
	       " lone p50 us |\n");
	printf("|---|---|---|---|---|---|---|---|---|\n");
	double rt[6], p50[6], p99[6];
	for (int i = 0; i < 6; i++) {
		struct result *x = &res[i];
		qsort(x->lat, x->n_lat, sizeof(uint64_t), cmp_u64);
		qsort(x->lone, x->n_lone, sizeof(uint64_t), cmp_u64);
		rt[i] = (double)x->n / x->secs;
		p50[i] = pct(x->lat, x->n_lat, 0.50);
		p99[i] = pct(x->lat, x->n_lat, 0.99);
		char load[48];
		if (i < 3)
			snprintf(load, sizeof(load), "saturation (window %u)", WINDOW);
		else
			snprintf(load, sizeof(load), "offered %.0f/s", i == 5 ? 10 * rate : rate);
		printf("| %s | %s | %" PRIu64 " | %.0f | %.0f | %.0f | %.0f | %.1f | %.0f |\n", load, x->name, x->n, rt[i],
		       p50[i], p99[i], pct(x->lat, x->n_lat, 0.999),
		       x->batches ? (double)x->durable / (double)x->batches : 0, pct(x->lone, x->n_lone, 0.5));
	}
	printf("\nsaturation throughput ratio group / per-record: %.1fx; group+200us / per-record: %.1fx\n",
	       rt[1] / rt[0], rt[2] / rt[0]);
	printf("same offered load (%.0f/s): p50 per-record / group %.2fx, p99 per-record / group %.2fx\n", rate,
	       p50[3] / p50[4], p99[3] / p99[4]);
	if (argc <= 1)
		rmdir(dir);
	return 0;
}

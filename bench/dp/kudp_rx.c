/* kudp_rx.c - the kernel-socket baseline for bench/dp and scripts/bench.sh:
 * one thread receiving UDP with recvmmsg and running the dataplane's own
 * shard code (dataplane/dp_shard.c, dp_deliver.c, dp_reply.c behind the
 * I/O interface of dp_io.h), not a copy of it: the same decode-once
 * ingest, reassembler placing straight into the slot, ACK table flushed on
 * resolution and every ack_interval, status frames, and reliable delivery
 * of resolved seeds (tracked until the consumer ACKs them, resent every
 * [consumers] resend_ms, given up after resends). This file is only the
 * I/O: datagrams in through recvmmsg, out through sendmmsg (queued like the
 * lcore's TX buffer and flushed once per loop iteration), the clock, xfer
 * buffers from a fixed free list, and no control plane (its reports are
 * counted and dropped). One shard: no hand-off. Pin it with taskset to the
 * CPU the dataplane's lcore uses.
 *
 * usage: kudp_rx --config FILE [--bind IPv4] ; prints "listening on" to
 * stderr when bound; SIGTERM/SIGINT print one JSON line (the shard's
 * counters and the CPU time used, getrusage) to stdout. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fg/config.h"
#include "fg/counters.h"
#include "fg/ingest.h"
#include "fg/line.h"
#include "fg/slot.h"
#include "dp_io.h"
#include "dp_reply.h"
#include "dp_shard.h"

static volatile sig_atomic_t quit;
static void on_sig(int s) { (void)s; quit = 1; }

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the I/O: one UDP socket ------------------------------------------- */

enum { TXQ = 256, DGRAM_MAX = 2048 };

struct kio {
	int sock;
	/* TX buffer: datagrams queued by the shard, sent by tx_flush */
	unsigned n_tx;
	uint8_t tx[TXQ][DGRAM_MAX];
	struct sockaddr_in to[TXQ];
	struct iovec iov[TXQ];
	struct mmsghdr mm[TXQ];
	/* xfer buffers: a fixed free list, no heap after start */
	uint8_t *xfer_mem;
	size_t xfer_size;
	void **xfer_free;
	unsigned n_free, n_xfer;
	uint64_t tx_sent, tx_failed, tx_refused, reports, xfer_empty;
};

static void tx_flush(struct kio *k)
{
	unsigned sent = 0;
	while (sent < k->n_tx) {
		int r = sendmmsg(k->sock, k->mm + sent, k->n_tx - sent, 0);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			break;
		}
		sent += (unsigned)r;
	}
	k->tx_sent += sent;
	k->tx_failed += k->n_tx - sent;
	k->n_tx = 0;
}

static bool io_dgram(struct dp_lcore *lc, const struct dp_route *rt, const struct dp_peer *to, const uint8_t *head,
		     uint32_t head_len, const uint8_t *data, uint32_t len)
{
	(void)rt; /* the kernel routes */
	struct kio *k = lc->io_arg;
	uint32_t h = head_len;
	if (to->family != 4 || h + len > DGRAM_MAX) {
		k->tx_refused++; /* this receiver binds IPv4 only */
		return false;
	}
	if (k->n_tx == TXQ)
		tx_flush(k);
	unsigned i = k->n_tx++;
	if (h)
		memcpy(k->tx[i], head, h);
	memcpy(k->tx[i] + h, data, len);
	k->to[i] = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons(to->port)};
	memcpy(&k->to[i].sin_addr, to->addr, 4);
	k->iov[i] = (struct iovec){k->tx[i], h + len};
	k->mm[i] = (struct mmsghdr){.msg_hdr = {.msg_name = &k->to[i], .msg_namelen = sizeof(k->to[i]),
						.msg_iov = &k->iov[i], .msg_iovlen = 1}};
	return true;
}

static bool io_route(struct dp_lcore *lc, int family, const uint8_t *addr, struct dp_route *rt, uint64_t now)
{
	(void)lc;
	(void)addr;
	(void)now;
	memset(rt, 0, sizeof(*rt)); /* the kernel routes */
	return family == 4;
}

static struct dp_xfer *io_xfer_get(struct dp_lcore *lc)
{
	struct kio *k = lc->io_arg;
	if (!k->n_free) {
		k->xfer_empty++;
		return NULL;
	}
	return k->xfer_free[--k->n_free];
}

static void io_xfer_put(struct dp_lcore *lc, struct dp_xfer *x)
{
	struct kio *k = lc->io_arg;
	if (k->n_free < k->n_xfer)
		k->xfer_free[k->n_free++] = x;
}

static bool io_handoff(struct dp_lcore *lc, unsigned owner, struct dp_xfer *x)
{
	(void)lc;
	(void)owner;
	(void)x;
	return false; /* one shard: never asked */
}

static void io_report(struct dp_lcore *lc, const union fg_bmsg *m)
{
	(void)m;
	((struct kio *)lc->io_arg)->reports++; /* no control plane here */
}

static bool io_report_body(struct dp_lcore *lc, union fg_bmsg *m, struct fg_bm_body *body, const uint8_t *src,
			   uint32_t len)
{
	(void)body;
	(void)src;
	(void)len;
	io_report(lc, m);
	return false;
}

static const struct dp_io kio_ops = {
	.dgram = io_dgram,
	.route = io_route,
	.xfer_get = io_xfer_get,
	.xfer_put = io_xfer_put,
	.handoff = io_handoff,
	.report = io_report,
	.report_body = io_report_body,
};

/* The reassembler's buffers are xfer buffers' data (dp_shard.c reads the
 * dp_xfer header in front of a reassembled frame). */
static void *reasm_get(void *arg)
{
	struct dp_xfer *x = io_xfer_get(arg);
	return x ? dp_xfer_data(x) : NULL;
}
static void reasm_put(void *arg, void *buf) { io_xfer_put(arg, dp_xfer_of(buf)); }

static void *alloc64(size_t sz)
{
	void *p = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	if (p)
		memset(p, 0, sz);
	return p;
}

/* ---- main ---------------------------------------------------------------- */

static struct fg_config cfg;
static struct fg_seed_limits lim;
static struct fg_dp_counters counters;
static struct dp_xcounters xcounters;
static struct kio kio;
static struct dp_lcore lc;

static unsigned long long C(enum fg_dp_counter i)
{
	return (unsigned long long)atomic_load_explicit(&counters.c[i], memory_order_relaxed);
}

static int shard_init(struct dp_shard_env *env)
{
	struct fg_slots_cfg sc;
	fg_config_slots(&cfg, 1, &sc);
	fg_config_limits(&cfg, &lim);
	env->cfg = &cfg;
	env->io = &kio_ops;
	env->n = 1;
	env->chunk = fg_frag_chunk_size(cfg.mtu);
	/* the frame size bound as dp.c (dp_init) computes it */
	uint64_t fmax = FG_HDR_LEN + FG_SEED_PREFIX_LEN + (uint64_t)cfg.max_seq_len * cfg.hidden * 4u;
	if (fmax < 4096)
		fmax = 4096;
	if (env->chunk < 64 || fmax > (uint64_t)FG_FRAG_MAX * env->chunk)
		return -EINVAL;
	env->frame_max = (uint32_t)((fmax + 63) & ~63ull);
	env->ack_interval_ns = (uint64_t)(cfg.ack_interval_ms ? cfg.ack_interval_ms : 50) * 1000000ull;

	lc.env = env;
	lc.io_arg = &kio;
	lc.k = &counters;
	lc.xk = &xcounters;
	lc.ictx.bands = &cfg.bands;
	lc.ictx.limits = &lim;
	struct fg_lines ls;
	fg_lines_init(&ls, cfg.line_initial, &cfg.policy, 0);
	lc.ictx.lines = fg_linefacts_pack(&ls, 0);

	/* xfer buffers: one per reassembly context, plus slack for hand-off-less frames */
	kio.n_xfer = cfg.reasm_contexts + 64;
	kio.xfer_size = DP_XFER_HDR + env->frame_max;
	kio.xfer_mem = alloc64((size_t)kio.n_xfer * kio.xfer_size);
	kio.xfer_free = calloc(kio.n_xfer, sizeof(void *));
	if (!kio.xfer_mem || !kio.xfer_free)
		return -ENOMEM;
	for (unsigned i = 0; i < kio.n_xfer; i++)
		kio.xfer_free[kio.n_free++] = kio.xfer_mem + (size_t)i * kio.xfer_size;

	size_t sz = fg_slots_mem_size(&sc);
	lc.slots_mem = alloc64(sz);
	int rc = lc.slots_mem ? fg_slots_init(&lc.slots, lc.slots_mem, sz, &sc) : -ENOMEM;
	if (rc < 0)
		return rc;
	struct dp_reasm_cfg rcfg = {.contexts = cfg.reasm_contexts, .chunk = env->chunk, .frame_max = env->frame_max,
				    .timeout_ns = (uint64_t)cfg.reasm_timeout_ms * 1000000ull, .slots = &lc.slots,
				    .shard_self = 0, .n_shards = 1, .n_layers = cfg.layers,
				    .bufs = {.get = reasm_get, .put = reasm_put, .arg = &lc}};
	sz = dp_reasm_mem_size(&rcfg);
	lc.reasm_mem = alloc64(sz);
	rc = lc.reasm_mem ? dp_reasm_init(&lc.reasm, lc.reasm_mem, sz, &rcfg) : -ENOMEM;
	if (rc < 0)
		return rc;
	sz = dp_ack_mem_size(1024);
	lc.ack_mem = alloc64(sz);
	rc = lc.ack_mem ? dp_ack_init(&lc.ack, lc.ack_mem, sz, 1024) : -ENOMEM;
	if (rc < 0)
		return rc;
	/* reliable delivery as the dataplane configures it (dp.c, lcore_setup) */
	struct dp_dlv_cfg dcfg = {
		.capacity = cfg.delivery_pending_max ? cfg.delivery_pending_max : 1,
		.retry_ns = (uint64_t)(cfg.delivery_resend_ms ? cfg.delivery_resend_ms : 200) * 1000000ull,
		.retries = cfg.delivery_resends,
	};
	sz = dp_dlv_mem_size(dcfg.capacity);
	lc.dlv_mem = alloc64(sz);
	rc = lc.dlv_mem ? dp_dlv_init(&lc.dlv, lc.dlv_mem, sz, &dcfg) : -ENOMEM;
	return rc < 0 ? rc : 0;
}

int main(int argc, char **argv)
{
	const char *config = NULL, *bind_ip = "0.0.0.0";
	static const struct option lo[] = {{"config", 1, 0, 'c'}, {"bind", 1, 0, 'b'}, {0, 0, 0, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (ch == 'c')
			config = optarg;
		else if (ch == 'b')
			bind_ip = optarg;
		else
			return 2;
	}
	struct fg_config_error err;
	fg_config_default(&cfg);
	if (config && fg_config_load(&cfg, config, &err) < 0) {
		fprintf(stderr, "kudp_rx: %s:%d: %s\n", err.file, err.line, err.reason);
		return 1;
	}
	static struct dp_shard_env env;
	int rc = shard_init(&env);
	if (rc < 0) {
		fprintf(stderr, "kudp_rx: shard: %s\n", strerror(-rc));
		return 1;
	}

	kio.sock = socket(AF_INET, SOCK_DGRAM, 0);
	if (kio.sock < 0) {
		perror("kudp_rx: socket");
		return 1;
	}
	int b = 32 << 20;
	/* SO_RCVBUFFORCE (root) passes net.core.rmem_max (~208 KiB), so a burst
	 * of fragments is not dropped by the socket before we read it */
	if (setsockopt(kio.sock, SOL_SOCKET, SO_RCVBUFFORCE, &b, sizeof(b)) < 0)
		(void)setsockopt(kio.sock, SOL_SOCKET, SO_RCVBUF, &b, sizeof(b));
	struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(cfg.udp_port)};
	if (inet_pton(AF_INET, bind_ip, &me.sin_addr) != 1) {
		fprintf(stderr, "kudp_rx: --bind %s: not an IPv4 address\n", bind_ip);
		return 2;
	}
	if (bind(kio.sock, (struct sockaddr *)&me, sizeof(me)) < 0) {
		perror("kudp_rx: bind");
		return 1;
	}
	/* wake at least every millisecond: the shard's timers (resends,
	 * reassembly and slot expiry) run from dp_shard_tick */
	struct timeval tv = {.tv_sec = 0, .tv_usec = 1000};
	(void)setsockopt(kio.sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sigaction sa = {.sa_handler = on_sig};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	enum { B = 32 };
	static const struct dp_route no_route;
	static uint8_t bufs[B][DGRAM_MAX];
	struct mmsghdr mm[B];
	struct iovec iov[B];
	struct sockaddr_in from[B];
	uint64_t now = now_ns();
	lc.next_ack_ns = now + env.ack_interval_ns;
	lc.next_timer_ns = now + 1000000ull;
	fprintf(stderr, "kudp_rx: listening on %s:%u\n", bind_ip, cfg.udp_port);
	while (!quit) {
		for (int i = 0; i < B; i++) {
			iov[i] = (struct iovec){bufs[i], sizeof(bufs[i])};
			memset(&mm[i], 0, sizeof(mm[i]));
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
			mm[i].msg_hdr.msg_name = &from[i];
			mm[i].msg_hdr.msg_namelen = sizeof(from[i]);
		}
		int n = recvmmsg(kio.sock, mm, B, MSG_WAITFORONE, NULL);
		now = now_ns();
		for (int i = 0; i < n; i++) {
			fg_count(lc.k, FG_C_RX_PKTS, 1);
			fg_count(lc.k, FG_C_RX_BYTES, mm[i].msg_len);
			struct dp_peer src = {.family = 4, .port = ntohs(from[i].sin_port)};
			memcpy(src.addr, &from[i].sin_addr, 4);
			const struct dp_flow fl = dp_flow_of(&src, &no_route, true); /* the kernel routes */
			struct dp_dgram dg = {.fl = &fl, .payload = bufs[i], .len = mm[i].msg_len};
			dp_shard_dgram(&lc, &dg, now);
		}
		dp_shard_tick(&lc, now);
		tx_flush(&kio);
	}
	dp_reply_ack_flush(&lc);
	tx_flush(&kio);

	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double user = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
	double sys = (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	printf("{\"resolved\":%llu,\"contribs\":%llu,\"statuses\":%llu,\"acks\":%llu,\"seeds_sent\":%llu,"
	       "\"delivery_acked\":%llu,\"delivery_resent\":%llu,\"delivery_given_up\":%llu,\"delivery_pending\":%u,"
	       "\"frags\":%llu,\"drop_malformed\":%llu,\"tx_dgrams\":%llu,\"tx_failed\":%llu,\"tx_refused\":%llu,"
	       "\"reports_dropped\":%llu,\"xfer_empty\":%llu,\"cpu_s\":%.3f,\"user_s\":%.3f,\"sys_s\":%.3f}\n",
	       C(FG_C_SEEDS_RESOLVED), C(FG_C_CONTRIB_ACCEPTED), C(FG_C_STATUS_SENT), C(FG_C_ACKS_SENT),
	       C(FG_C_SEEDS_SENT), C(FG_C_DELIVERY_ACKED), C(FG_C_DELIVERY_RESENT), C(FG_C_DELIVERY_GIVEN_UP),
	       lc.dlv.n, C(FG_C_FRAGS), C(FG_C_DROP_MALFORMED),
	       (unsigned long long)kio.tx_sent, (unsigned long long)kio.tx_failed, (unsigned long long)kio.tx_refused,
	       (unsigned long long)kio.reports, (unsigned long long)kio.xfer_empty, user + sys, user, sys);
	return 0;
}

/* kudp_rx.c - the kernel-socket baseline for bench/dp: a plain UDP receiver
 * (recvmmsg, blocking) doing the same slot work as one dataplane lcore:
 * the same reassembler (dataplane/dp_reasm.c, placing straight into the
 * slot), the same ACK table (dp_ack.c, flushed every ack_interval_ms and on
 * resolution), a status frame per contribution, the resolved seed encoded
 * and sent fragmented to the consumer. One thread; pin it with taskset to
 * the CPU the dataplane's lcore uses.
 *
 * usage: kudp_rx --config FILE [--bind IP] ; SIGTERM prints a JSON line with
 * the seeds resolved and the CPU time used (getrusage). */
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
#include "fg/ingest.h"
#include "fg/line.h"
#include "fg/slot.h"
#include "dp_ack.h"
#include "dp_reasm.h"

static volatile sig_atomic_t quit;
static void on_sig(int s) { (void)s; quit = 1; }

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct fg_config cfg;
static int sock;
static struct fg_slots slots;
static struct dp_reasm ra;
static struct dp_ack ack;
static struct fg_ingest_ctx ictx;
static struct fg_seed_limits lim;
static uint32_t chunk, frame_max;
static uint16_t fid;
static uint64_t resolved, contribs, statuses, acks;
static uint8_t *scratch;

static void *buf_get(void *arg) { (void)arg; return malloc(frame_max); }
static void buf_put(void *arg, void *b) { (void)arg; free(b); }

static void to_sa(const struct dp_peer *p, struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(p->port);
	memcpy(&sa->sin_addr, p->addr, 4);
}

static void send_frame(const struct sockaddr_in *to, const uint8_t *frame, uint32_t len)
{
	uint32_t total = fg_frag_count(len, chunk);
	static uint8_t dg[255][2048];
	struct mmsghdr mm[255];
	struct iovec iov[255];
	uint16_t id = fid++;
	for (uint32_t i = 0; i < total; i++) {
		uint32_t off = i * chunk, n = len - off < chunk ? len - off : chunk;
		fg_put_be16(dg[i], id);
		dg[i][2] = (uint8_t)i;
		dg[i][3] = (uint8_t)total;
		memcpy(dg[i] + 4, frame + off, n);
		iov[i] = (struct iovec){dg[i], n + 4};
		memset(&mm[i], 0, sizeof(mm[i]));
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
		mm[i].msg_hdr.msg_name = (void *)to;
		mm[i].msg_hdr.msg_namelen = sizeof(*to);
	}
	(void)sendmmsg(sock, mm, total, 0);
}

static void send_status(const struct dp_peer *p, const struct fg_status *st)
{
	uint8_t b[4 + FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN];
	fg_put_be16(b, fid++);
	b[2] = 0;
	b[3] = 1;
	ssize_t n = fg_status_encode(st, b + 4, sizeof(b) - 4);
	if (n < 0)
		return;
	struct sockaddr_in sa;
	to_sa(p, &sa);
	(void)sendto(sock, b, (size_t)n + 4, 0, (struct sockaddr *)&sa, sizeof(sa));
	statuses++;
}

static void ack_flush(void)
{
	for (uint32_t i = 0; i < ack.n_dirty; i++) {
		struct dp_ack_peer *pp = &ack.p[ack.dirty[i]];
		struct fg_ack_entry e[DP_ACK_PEND];
		unsigned n = dp_ack_take(pp, e, DP_ACK_PEND);
		if (!n)
			continue;
		uint8_t buf[8192];
		uint32_t lens[16];
		int k = fg_ack_build(e, n, cfg.mtu, fid, buf, sizeof(buf), lens, 16);
		if (k <= 0)
			continue;
		fid = (uint16_t)(fid + k);
		struct sockaddr_in sa;
		to_sa(&pp->peer, &sa);
		uint32_t off = 0;
		for (int j = 0; j < k; j++) {
			(void)sendto(sock, buf + off, lens[j], 0, (struct sockaddr *)&sa, sizeof(sa));
			off += lens[j];
			acks++;
		}
	}
	dp_ack_dirty_reset(&ack);
}

static bool ack_now;

static void deliver(uint32_t slot)
{
	struct fg_seed_view v;
	if (fg_slot_seed(&slots, slot, &v) < 0)
		return;
	struct fg_resolved r = {v.token_seq, v.dst_layer, v.start_pos, v.seq_len, v.body, v.body_len};
	ssize_t n = fg_resolved_encode(&cfg.bands, &r, scratch, frame_max);
	if (n < 0)
		return;
	const struct fg_addr *c = cfg.consumer[v.dst_layer].set ? &cfg.consumer[v.dst_layer] : &cfg.consumer_default;
	if (c->set) {
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(c->port)};
		memcpy(&sa.sin_addr, c->addr, 4);
		send_frame(&sa, scratch, (uint32_t)n);
	}
	resolved++;
	ack_now = true;
}

static void outcome(const struct dp_peer *p, const struct fg_seed *seed, const struct fg_slot_result *res, int reason)
{
	struct fg_status st;
	fg_status_from_result(&ictx, seed, res, reason, &st);
	if (res->outcome == FG_O_ACCEPTED || res->outcome == FG_O_RESOLVED)
		contribs++;
	if (cfg.send_status)
		send_status(p, &st);
	if (res->outcome == FG_O_RESOLVED)
		deliver(res->slot);
}

static void whole(const struct dp_peer *p, const uint8_t *frame, uint32_t len, uint64_t now)
{
	struct fg_frame f;
	if (fg_frame_decode(frame, len, FG_TRANSPORT_MESSAGE, &f) != (ssize_t)len)
		return;
	struct fg_ingest_result r;
	if (fg_ingest_frame(&slots, &ictx, &f, now, &r) == 0 && r.band == FG_BAND_SEED)
		outcome(p, &r.seed, &r.slot, 0);
	bool nw;
	struct dp_route rt = {0};
	struct dp_ack_peer *pp = dp_ack_peer_get(&ack, p, &rt, now, &nw);
	if (pp && dp_ack_note(&ack, pp, f.hdr.stream_id, f.hdr.sequence))
		ack_flush();
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
	struct fg_slots_cfg sc;
	fg_config_slots(&cfg, 1, &sc);
	fg_config_limits(&cfg, &lim);
	size_t sz = fg_slots_mem_size(&sc);
	void *smem = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	if (!smem || fg_slots_init(&slots, smem, sz, &sc) < 0)
		return 1;
	chunk = fg_frag_chunk_size(cfg.mtu);
	frame_max = 18 + cfg.max_seq_len * cfg.hidden * 4;
	if (frame_max < 4096)
		frame_max = 4096;
	scratch = malloc(frame_max);
	struct dp_reasm_cfg rc = {.contexts = cfg.reasm_contexts, .chunk = chunk, .frame_max = frame_max,
				  .timeout_ns = (uint64_t)cfg.reasm_timeout_ms * 1000000ull, .slots = &slots,
				  .shard_self = 0, .n_shards = 1, .n_layers = cfg.layers,
				  .bufs = {.get = buf_get, .put = buf_put}};
	sz = dp_reasm_mem_size(&rc);
	void *rmem = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	if (!rmem || dp_reasm_init(&ra, rmem, sz, &rc) < 0)
		return 1;
	sz = dp_ack_mem_size(1024);
	void *amem = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	if (!amem || dp_ack_init(&ack, amem, sz, 1024) < 0)
		return 1;
	struct fg_lines ls;
	fg_lines_init(&ls, cfg.line_initial, &cfg.policy, 0);
	ictx.bands = &cfg.bands;
	ictx.limits = &lim;
	ictx.lines = fg_linefacts_pack(&ls, 0);

	sock = socket(AF_INET, SOCK_DGRAM, 0);
	int b = 32 << 20;
	/* SO_RCVBUFFORCE (root) passes net.core.rmem_max (~208 KiB), so a burst
	 * of fragments is not dropped by the socket before we read it */
	if (setsockopt(sock, SOL_SOCKET, SO_RCVBUFFORCE, &b, sizeof(b)) < 0)
		setsockopt(sock, SOL_SOCKET, SO_RCVBUF, &b, sizeof(b));
	struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(cfg.udp_port)};
	inet_pton(AF_INET, bind_ip, &me.sin_addr);
	if (bind(sock, (struct sockaddr *)&me, sizeof(me)) < 0) {
		perror("bind");
		return 1;
	}
	struct timeval tv = {.tv_sec = 0, .tv_usec = 10000};
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	struct sigaction sa = {.sa_handler = on_sig};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	enum { B = 32 };
	static uint8_t bufs[B][2048];
	struct mmsghdr mm[B];
	struct iovec iov[B];
	struct sockaddr_in from[B];
	uint64_t next_ack = now_ns() + (uint64_t)cfg.ack_interval_ms * 1000000ull, next_timer = now_ns();
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
		int n = recvmmsg(sock, mm, B, MSG_WAITFORONE, NULL);
		uint64_t now = now_ns();
		for (int i = 0; i < n; i++) {
			struct dp_peer p = {.family = 4, .port = ntohs(from[i].sin_port)};
			memcpy(p.addr, &from[i].sin_addr, 4);
			struct fg_frag f;
			if (fg_frag_decode(bufs[i], mm[i].msg_len, &f) < 0)
				continue;
			if (f.total == 1) {
				whole(&p, f.chunk, f.chunk_len, now);
				continue;
			}
			struct dp_reasm_out out;
			if (dp_reasm_push(&ra, &p, &f, &ictx, now, &out) < 0)
				continue;
			if (out.events & DP_RA_EV_OUTCOME)
				outcome(&p, &out.seed, &out.res, out.reason);
			if (out.events & DP_RA_EV_FRAME) {
				whole(&p, out.buf, out.len, now);
				buf_put(NULL, out.buf);
			} else if (out.events & DP_RA_EV_COMPLETE) {
				bool nw;
				struct dp_route rt = {0};
				struct dp_ack_peer *pp = dp_ack_peer_get(&ack, &p, &rt, now, &nw);
				if (pp && dp_ack_note(&ack, pp, out.stream_id, out.sequence))
					ack_flush();
			}
		}
		if (now >= next_timer) {
			(void)dp_reasm_expire(&ra, now, 1024);
			struct fg_slot_expired ex[32];
			while (fg_slots_expire(&slots, now, ex, 32) == 32)
				;
			next_timer = now + 1000000ull;
		}
		if (ack_now || now >= next_ack) {
			ack_flush();
			ack_now = false;
			next_ack = now + (uint64_t)cfg.ack_interval_ms * 1000000ull;
		}
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
		     ru.ru_stime.tv_usec / 1e6;
	printf("{\"resolved\":%llu,\"contribs\":%llu,\"statuses\":%llu,\"acks\":%llu,\"cpu_s\":%.3f,\"user_s\":%.3f,"
	       "\"sys_s\":%.3f}\n",
	       (unsigned long long)resolved, (unsigned long long)contribs, (unsigned long long)statuses,
	       (unsigned long long)acks, cpu, ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	       ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6);
	return 0;
}

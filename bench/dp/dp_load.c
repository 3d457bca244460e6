/* dp_load.c - load generator for bench/dp: a fleet of kernel UDP sockets
 * sending fragmented residual-seed contributions (3 lines per slot) to one
 * receiver (the DPDK dataplane or bench/dp/kudp_rx) and timing the resolved
 * seeds that come back to its consumer socket.
 *
 *   latency:    one slot at a time; jump delivery latency = time from the
 *               return of the send of the LAST datagram of the LAST
 *               contribution to the arrival of the last fragment of the
 *               resolved seed; p50/p99/p99.9 over --slots slots; with
 *               --gap-us N, N us of quiet after each seed came back
 *   throughput: up to --window slots in flight; resolved seeds per second
 *
 * Every resolved seed is compared bit for bit with the reference sum (the
 * same bodies are reused for every slot, so one reference serves all), and
 * ACKed at once to the address it came from, as the fleet's consumer does
 * (spec/wire.md 2.1), so a receiver with reliable delivery retires it
 * instead of resending it.
 * Output: one JSON object on stdout, with this process's own CPU time
 * (gen_cpu_s, getrusage: user + system) so a run shows whether the
 * generator was the limit. Single-threaded; pin it with taskset. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fg/wire.h"

#define LINES 3
static const uint8_t rule[LINES] = {1, 3, 5};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

struct opts {
	const char *dst, *src;
	int port, cport, hidden, slots, window, mtu, layers, gap_us;
	uint32_t token_base;
	const char *mode, *label;
};

static struct opts o = {.dst = "10.97.0.1", .src = "0.0.0.0", .port = 4242, .cport = 7000, .hidden = 1536,
			.slots = 2000, .window = 32, .mtu = 1472, .layers = 28, .token_base = 1, .mode = "latency",
			.label = "dp"};

static int sk[LINES], csk;
static struct sockaddr_in dst;
static uint8_t *frames[LINES];
static uint32_t frame_len;
static float *bodies[LINES];
static uint8_t *ref;
static uint16_t fid;

/* Send the 3 contributions of slot (token, layer); returns the time the last
 * datagram's send returned. */
static uint64_t send_slot(uint32_t token, uint16_t layer)
{
	uint32_t C = (uint32_t)o.mtu - 4;
	uint32_t total = (frame_len + C - 1) / C;
	static uint8_t dg[256][2048];
	struct mmsghdr mm[256];
	struct iovec iov[256];
	uint64_t t = 0;
	for (int l = 0; l < LINES; l++) {
		uint8_t *f = frames[l];
		fg_put_be16(f, (uint16_t)(0xAF60 + layer));
		fg_put_be32(f + 2, token);
		uint16_t id = fid++;
		for (uint32_t i = 0; i < total; i++) {
			uint32_t off = i * C, n = frame_len - off < C ? frame_len - off : C;
			fg_put_be16(dg[i], id);
			dg[i][2] = (uint8_t)i;
			dg[i][3] = (uint8_t)total;
			memcpy(dg[i] + 4, f + off, n);
			iov[i].iov_base = dg[i];
			iov[i].iov_len = n + 4;
			memset(&mm[i], 0, sizeof(mm[i]));
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
			mm[i].msg_hdr.msg_name = &dst;
			mm[i].msg_hdr.msg_namelen = sizeof(dst);
		}
		uint32_t sent = 0;
		while (sent < total) {
			int k = sendmmsg(sk[l], mm + sent, total - sent, 0);
			if (k < 0) {
				if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN)
					continue;
				perror("sendmmsg");
				exit(1);
			}
			sent += (uint32_t)k;
		}
		t = now_ns();
	}
	return t;
}

struct rx {
	unsigned got, bad, frags;
	uint32_t token;
	uint16_t layer;
	uint8_t buf[1 << 17];
	uint32_t len;
	int cur_fid;
	uint64_t t_done; /* when the seed's last fragment was read, before its ACK */
};

static unsigned acks_sent;
static uint16_t ack_fid;

/* ACK one resolved seed (its frame's stream and sequence) to `to`. */
static void ack_seed(const uint8_t *frame, const struct sockaddr_in *to)
{
	struct fg_ack_entry e = {.stream_id = fg_be16(frame), .base_seq = fg_be32(frame + 2), .bitmap_lo = 1};
	uint8_t buf[256];
	uint32_t lens[1];
	if (fg_ack_build(&e, 1, (uint32_t)o.mtu, ack_fid++, buf, sizeof(buf), lens, 1) == 1 &&
	    sendto(csk, buf, lens[0], 0, (const struct sockaddr *)to, sizeof(*to)) >= 0)
		acks_sent++;
}

/* Read consumer datagrams; returns 1 when a whole resolved seed completed
 * (token/layer in r; ACKed), 0 when nothing (more) is ready, -1 on timeout. */
static int rx_one(struct rx *r, int timeout_ms)
{
	static uint8_t d[65536];
	for (;;) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		ssize_t n = recvfrom(csk, d, sizeof(d), timeout_ms ? 0 : MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return timeout_ms ? -1 : 0;
			if (errno == EINTR)
				continue;
			perror("recv");
			exit(1);
		}
		if (n < 4)
			continue;
		int id = fg_be16(d), idx = d[2], tot = d[3];
		uint32_t C = (uint32_t)o.mtu - 4;
		if (id != r->cur_fid) {
			r->cur_fid = id;
			r->frags = 0;
		}
		if ((uint32_t)idx * C + (uint32_t)(n - 4) <= sizeof(r->buf))
			memcpy(r->buf + (uint32_t)idx * C, d + 4, (size_t)(n - 4));
		r->frags++;
		if ((int)r->frags == tot) {
			r->t_done = now_ns();
			r->len = (uint32_t)((tot - 1) * (int)C + (int)(n - 4));
			r->token = fg_be32(r->buf + 2);
			r->layer = (uint16_t)(fg_be16(r->buf) - 0xAFA0);
			if (r->len != frame_len || memcmp(r->buf + 18, ref, frame_len - 18))
				r->bad++;
			ack_seed(r->buf, &from);
			r->got++;
			r->cur_fid = -1;
			return 1;
		}
	}
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"dst", 1, 0, 'd'},     {"src", 1, 0, 's'},    {"port", 1, 0, 'p'},
					   {"cport", 1, 0, 'c'},   {"hidden", 1, 0, 'h'}, {"slots", 1, 0, 'n'},
					   {"window", 1, 0, 'w'},  {"mtu", 1, 0, 'm'},    {"mode", 1, 0, 'M'},
					   {"label", 1, 0, 'L'},   {"token-base", 1, 0, 't'}, {"gap-us", 1, 0, 'g'},
					   {0, 0, 0, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'd': o.dst = optarg; break;
		case 's': o.src = optarg; break;
		case 'p': o.port = atoi(optarg); break;
		case 'c': o.cport = atoi(optarg); break;
		case 'h': o.hidden = atoi(optarg); break;
		case 'n': o.slots = atoi(optarg); break;
		case 'w': o.window = atoi(optarg); break;
		case 'm': o.mtu = atoi(optarg); break;
		case 'M': o.mode = optarg; break;
		case 'L': o.label = optarg; break;
		case 't': o.token_base = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'g': o.gap_us = atoi(optarg); break;
		default: return 2;
		}
	}
	memset(&dst, 0, sizeof(dst));
	dst.sin_family = AF_INET;
	dst.sin_port = htons((uint16_t)o.port);
	inet_pton(AF_INET, o.dst, &dst.sin_addr);
	struct sockaddr_in me = {.sin_family = AF_INET};
	inet_pton(AF_INET, o.src, &me.sin_addr);
	for (int l = 0; l < LINES; l++) {
		sk[l] = socket(AF_INET, SOCK_DGRAM, 0);
		int sz = 1 << 16; /* ACKs and statuses are not read: a small buffer drops them */
		setsockopt(sk[l], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		sz = 4 << 20;
		setsockopt(sk[l], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		if (bind(sk[l], (struct sockaddr *)&me, sizeof(me)) < 0) {
			perror("bind");
			return 1;
		}
	}
	csk = socket(AF_INET, SOCK_DGRAM, 0);
	int sz = 32 << 20;
	/* SO_RCVBUFFORCE (root) passes net.core.rmem_max, which would cap the
	 * buffer at ~208 KiB and drop bursts of resolved seeds */
	if (setsockopt(csk, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
		setsockopt(csk, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	struct sockaddr_in cme = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o.cport)};
	if (bind(csk, (struct sockaddr *)&cme, sizeof(cme)) < 0) {
		perror("bind consumer");
		return 1;
	}
	struct timeval tv = {.tv_sec = 0, .tv_usec = 200000};
	setsockopt(csk, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

	/* bodies: mixed magnitudes so the reduction order matters */
	struct fg_bands bands;
	fg_bands_default(&bands);
	bands.n_layers = (uint16_t)o.layers;
	size_t blen = (size_t)o.hidden * 4;
	srand(42);
	ref = malloc(blen);
	float *r = (float *)ref;
	for (int l = 0; l < LINES; l++) {
		bodies[l] = malloc(blen);
		for (int k = 0; k < o.hidden; k++) {
			float v = (float)((rand() % 2001) - 1000) * 1e-3f;
			for (int e = rand() % 8; e > 0; e--)
				v *= 10.0f;
			bodies[l][k] = v;
		}
		frames[l] = malloc(blen + 64);
		struct fg_seed s = {.token_seq = 0, .dst_layer = 0, .line = rule[l], .orientation = (uint8_t)(l == 1),
				    .start_pos = 0, .seq_len = 1, .body = (const uint8_t *)bodies[l], .body_len = (uint32_t)blen};
		ssize_t n = fg_seed_encode(&bands, &s, frames[l], blen + 64);
		if (n < 0) {
			fprintf(stderr, "encode: %s\n", fg_reason_name((int)n));
			return 1;
		}
		frame_len = (uint32_t)n;
	}
	for (int k = 0; k < o.hidden; k++) {
		volatile float x = bodies[0][k];
		x = x - bodies[1][k]; /* line 3 is subtracted (orientation 1) */
		x = x + bodies[2][k];
		r[k] = x;
	}

	static struct rx rx;
	rx.cur_fid = -1;
	unsigned lost = 0;
	uint64_t t_start = now_ns();
	uint64_t *lat = calloc((size_t)o.slots, sizeof(uint64_t));
	unsigned nlat = 0;
	if (!strcmp(o.mode, "latency")) {
		for (int i = 0; i < o.slots; i++) {
			uint32_t token = o.token_base + (uint32_t)i;
			uint16_t layer = (uint16_t)(i % o.layers);
			uint64_t t0 = send_slot(token, layer);
			int got;
			while ((got = rx_one(&rx, 200)) == 1 && (rx.token != token || rx.layer != layer))
				; /* a late seed of an earlier slot */
			if (got == 1)
				lat[nlat++] = rx.t_done - t0;
			else
				lost++;
			if (o.gap_us > 0) {
				/* --gap-us: quiet between slots, so a receiver that idles
				 * (fanogate's [poll] settings) has backed off when the
				 * next one comes (bench/dp/idle.sh) */
				struct timespec g = {.tv_sec = o.gap_us / 1000000, .tv_nsec = (long)(o.gap_us % 1000000) * 1000};
				clock_nanosleep(CLOCK_MONOTONIC, 0, &g, NULL);
			}
		}
	} else {
		int inflight = 0, next = 0;
		uint64_t last_progress = now_ns();
		while (nlat + lost < (unsigned)o.slots) {
			while (inflight < o.window && next < o.slots) {
				(void)send_slot(o.token_base + (uint32_t)next, (uint16_t)(next % o.layers));
				next++;
				inflight++;
			}
			int got = rx_one(&rx, 0);
			if (got == 1) {
				nlat++;
				inflight--;
				last_progress = now_ns();
			} else if (now_ns() - last_progress > 300000000ull) {
				/* nothing for 300 ms: count what is outstanding as lost */
				lost += (unsigned)inflight;
				inflight = 0;
				last_progress = now_ns();
				if (next >= o.slots)
					break;
			} else {
				struct pollfd pf = {.fd = csk, .events = POLLIN};
				(void)poll(&pf, 1, 1);
			}
		}
	}
	uint64_t t_end = now_ns();
	struct rusage ru;
	double gen_cpu = 0;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		gen_cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
			  (double)ru.ru_stime.tv_usec / 1e6;
	qsort(lat, nlat, sizeof(uint64_t), cmp_u64);
#define PCT(p) (nlat ? lat[(size_t)((double)(nlat - 1) * (p))] / 1000.0 : 0.0)
	printf("{\"label\":\"%s\",\"mode\":\"%s\",\"hidden\":%d,\"slots\":%d,\"resolved\":%u,\"lost\":%u,\"bad\":%u,"
	       "\"seconds\":%.3f,\"seeds_per_s\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,\"max_us\":%.1f,"
	       "\"contrib_bytes\":%llu,\"gen_cpu_s\":%.3f,\"acks_sent\":%u,\"gap_us\":%d}\n",
	       o.label, o.mode, o.hidden, o.slots, nlat, lost, rx.bad, (double)(t_end - t_start) / 1e9,
	       nlat / ((double)(t_end - t_start) / 1e9), PCT(0.5), PCT(0.99), PCT(0.999), nlat ? lat[nlat - 1] / 1000.0 : 0,
	       (unsigned long long)nlat * LINES * blen, gen_cpu, acks_sent, o.gap_us);
	return rx.bad ? 3 : 0;
}

/* bench_proto.c - throughput of the control plane's protocol parsers
 * (control/proto) on one core, each reported as a ratio to a baseline
 * measured in the same run: memcpy of the same bytes for the WebSocket
 * paths, memmem("\r\n\r\n") over the same head for the HTTP parser (the
 * least work any parser must do to find the end of a head). Not a test:
 * nothing is asserted.
 *
 * Usage: bench_proto [--seconds S]   (time per measurement, default 0.25;
 *                                      best of 5 trials) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cp_http_parse.h"
#include "cp_ws_codec.h"

#define MSG (64u * 1024u) /* the fleet coalesces up to 64 KiB per message */

static double opt_seconds = 0.25;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void clobber(const void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

typedef void (*bench_fn)(void *ctx);

/* Best seconds per call over 5 trials of about opt_seconds each. */
static double measure(bench_fn fn, void *ctx)
{
	uint64_t n = 16;
	for (;;) {
		double t0 = now_s();
		for (uint64_t i = 0; i < n; i++)
			fn(ctx);
		double dt = now_s() - t0;
		if (dt >= opt_seconds / 4)
			break;
		n *= 4;
	}
	double best = 1e30;
	for (int t = 0; t < 5; t++) {
		double t0 = now_s();
		for (uint64_t i = 0; i < n; i++)
			fn(ctx);
		double per = (now_s() - t0) / (double)n;
		if (per < best)
			best = per;
	}
	return best;
}

static uint8_t src[MSG + 64], dst[MSG + 64], frame[MSG + 64];
static size_t frame_len;
static const uint8_t key[4] = { 0x37, 0xfa, 0x21, 0x3d };
static struct cp_ws_rx rx;

static void b_memcpy(void *c) { memcpy(dst, src, MSG); clobber(dst); }
static void b_unmask(void *c) { cp_ws_unmask(dst, MSG, key, 1); clobber(dst); }
static void b_unmask_bytewise(void *c)
{
	/* the textbook loop, for comparison (whatever gcc -O3 makes of it) */
	for (size_t i = 0; i < MSG; i++)
		dst[i] ^= key[(i + 1) & 3];
	clobber(dst);
}
static void b_utf8_ascii(void *c) { clobber((void *)(uintptr_t)cp_utf8_step(0, src, MSG)); }
static void b_utf8_mixed(void *c) { clobber((void *)(uintptr_t)cp_utf8_step(0, dst, MSG)); }
static void b_rx_feed(void *c)
{
	struct cp_ws_event ev;
	ssize_t n = cp_ws_rx_feed(&rx, frame, frame_len, &ev);
	if (n != (ssize_t)frame_len || ev.kind != CP_WS_EV_MESSAGE)
		abort();
	clobber(ev.data);
}

struct head {
	const char *s;
	size_t n;
	struct cp_http_limits lim;
};
static void b_memmem(void *c)
{
	struct head *h = c;
	clobber(memmem(h->s, h->n, "\r\n\r\n", 4));
}
static void b_http(void *c)
{
	struct head *h = c;
	struct cp_http_req r;
	if (cp_http_parse_request((const uint8_t *)h->s, h->n, &h->lim, &r) != (ssize_t)h->n)
		abort();
	clobber(&r);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			opt_seconds = atof(argv[++i]);
		} else {
			fprintf(stderr, "usage: bench_proto [--seconds S]\n");
			return 2;
		}
	}
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(' ' + i % 90);
	/* mixed UTF-8: "κόσμε " repeated (2- and 3-byte sequences) */
	static const uint8_t kosme[] = { 0xce, 0xba, 0xe1, 0xbd, 0xb9, 0xcf, 0x83, 0xce, 0xbc, 0xce, 0xb5, ' ' };
	for (size_t i = 0; i + sizeof(kosme) <= MSG; i += sizeof(kosme))
		memcpy(dst + i, kosme, sizeof(kosme));
	for (size_t i = MSG / sizeof(kosme) * sizeof(kosme); i < MSG; i++)
		dst[i] = 'a';
	if (cp_utf8_step(0, dst, MSG) != CP_UTF8_ACCEPT)
		abort();
	double t_utf8_mixed = measure(b_utf8_mixed, NULL);

	/* a masked 64 KiB binary frame */
	frame[0] = 0x82;
	frame[1] = 0x80 | 127;
	for (int i = 0; i < 8; i++)
		frame[2 + i] = (uint8_t)((uint64_t)MSG >> (56 - 8 * i));
	memcpy(frame + 10, key, 4);
	memcpy(frame + 14, src, MSG);
	frame_len = 14 + MSG;
	struct cp_ws_rx_cfg cfg = { .max_message = 1 << 20, .accept_text = false };
	cp_ws_rx_init(&rx, &cfg);

	double t_memcpy = measure(b_memcpy, NULL);
	double t_unmask = measure(b_unmask, NULL);
	double t_bytewise = measure(b_unmask_bytewise, NULL);
	double t_utf8 = measure(b_utf8_ascii, NULL);
	double t_rx = measure(b_rx_feed, NULL);
	cp_ws_rx_fini(&rx);

	printf("WebSocket, %u-byte messages (GB/s; ratio = memcpy time / this time)\n", MSG);
	printf("  %-28s %7.2f GB/s  1.00\n", "memcpy (baseline)", MSG / t_memcpy / 1e9);
	printf("  %-28s %7.2f GB/s  %.2f\n", "cp_ws_unmask", MSG / t_unmask / 1e9, t_memcpy / t_unmask);
	printf("  %-28s %7.2f GB/s  %.2f\n", "bytewise unmask", MSG / t_bytewise / 1e9, t_memcpy / t_bytewise);
	printf("  %-28s %7.2f GB/s  %.2f\n", "cp_utf8_step ASCII", MSG / t_utf8 / 1e9, t_memcpy / t_utf8);
	printf("  %-28s %7.2f GB/s  %.2f\n", "cp_utf8_step 2/3-byte", MSG / t_utf8_mixed / 1e9,
	       t_memcpy / t_utf8_mixed);
	printf("  %-28s %7.2f GB/s  %.2f\n", "cp_ws_rx_feed (64 KiB frame)", MSG / t_rx / 1e9, t_memcpy / t_rx);

	static const char upgrade[] =
		"GET /flow?layers=1,2,27&status=0 HTTP/1.1\r\nHost: fanogate.example:8443\r\n"
		"User-Agent: aeon-flow/1.0\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
		"Sec-WebSocket-Protocol: aeon-flow\r\nAuthorization: Bearer abcdefghijklmnopqrstuvwxyz012345\r\n\r\n";
	static const char post[] =
		"POST /residual-seed HTTP/1.1\r\nHost: fanogate.example:8443\r\n"
		"Content-Type: application/octet-stream\r\nContent-Length: 6162\r\n"
		"Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345\r\n\r\n";
	const char *names[2] = { "/flow upgrade head", "POST /residual-seed head" };
	const char *heads[2] = { upgrade, post };
	printf("HTTP heads (ns/head; ratio = memmem CRLFCRLF time / parse time)\n");
	for (int k = 0; k < 2; k++) {
		struct head h = { heads[k], strlen(heads[k]), { 0 } };
		cp_http_limits_default(&h.lim);
		double tm = measure(b_memmem, &h), tp = measure(b_http, &h);
		printf("  %-26s %4zu B  memmem %6.1f ns  parse %6.1f ns  %.2f  (%.1f M heads/s)\n", names[k], h.n,
		       tm * 1e9, tp * 1e9, tm / tp, 1e-6 / tp);
	}
	return 0;
}

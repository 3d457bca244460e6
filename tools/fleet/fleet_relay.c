/* fleet_relay.c - the canonical chain's extra hop, for the jump benchmark:
 * DOWN station -> coordinator -> next ATTN station, over HTTPS keep-alive
 * on loopback, measured the way fanofleet measures a jump (last
 * contribution sent -> the next layer's input received).
 *
 * Three parties in one process, so one monotonic clock times them:
 *  - the ATTN station: an HTTPS server; POST /x carries the resolved frame
 *    of x_{l+1}; it checks the bits and stamps the arrival;
 *  - the coordinator: an HTTPS server; POST /contrib carries one Pair X
 *    contribution (a seed frame); it answers at once (as the fleet's
 *    coordinator acks), and when a slot's three contributions are in it
 *    reduces ((x + attn) + ffn) and POSTs the result to the ATTN station
 *    over its own keep-alive connection;
 *  - the DOWN station (the calling thread): per hop, POSTs x and attn
 *    (contributions that would have arrived earlier), then ffn, stamps the
 *    moment ffn's request was written, and waits for the ATTN station.
 *
 * Who may call: fleet_main.c (--relay-bench), main thread. It starts two
 * accept threads and one thread per accepted connection; all of them end
 * before fl_relay_run returns. Blocking OpenSSL on TCP_NODELAY sockets. */
#include <errno.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <openssl/err.h>

#include "fleet.h"

#define REQ_MAX (64u * 1024u)

struct relay {
	const struct fl_relay_opts *o;
	SSL_CTX *srv, *cli;
	struct fg_bands bands;
	struct fg_seed_limits lim;
	int attn_lfd, coord_lfd;
	uint16_t attn_port, coord_port;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* the hop in flight (main thread writes expect/seq, ATTN writes got) */
	uint32_t want_seq;
	uint64_t want_fp;
	uint64_t got_ns;
	bool got, got_ok;
	volatile bool stop;
	/* coordinator state: one slot at a time (hops are sequential) */
	float *c[FL_ROLES];
	uint8_t landed;
	uint32_t slot_seq;
	uint64_t bad;
};

/* ---- tiny blocking HTTP/1.1 ------------------------------------------ */

static int ssl_read_full(SSL *s, uint8_t *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		int r = SSL_read(s, buf + got, (int)(len - got));
		if (r <= 0)
			return -EIO;
		got += (size_t)r;
	}
	return 0;
}

/* Read one message (request or response): headers then Content-Length
 * bytes. Returns the body length, or -errno. *hdr_end = header bytes. */
static int http_read(SSL *s, uint8_t *buf, size_t cap, size_t *hdr_end)
{
	size_t n = 0;
	for (;;) {
		if (n >= cap - 1)
			return -E2BIG;
		int r = SSL_read(s, buf + n, (int)(cap - 1 - n));
		if (r <= 0)
			return -EIO;
		n += (size_t)r;
		buf[n] = 0;
		uint8_t *e = memmem(buf, n, "\r\n\r\n", 4);
		if (!e)
			continue;
		size_t h = (size_t)(e - buf) + 4;
		const char *cl = strcasestr((const char *)buf, "\r\ncontent-length:");
		size_t blen = cl && (uint8_t *)cl < e ? strtoul(cl + 17, NULL, 10) : 0;
		if (h + blen > cap)
			return -E2BIG;
		if (n < h + blen && ssl_read_full(s, buf + n, h + blen - n) < 0)
			return -EIO;
		*hdr_end = h;
		return (int)blen;
	}
}

static int http_post(SSL *s, const char *path, const uint8_t *body, size_t len)
{
	char h[256];
	int hl = snprintf(h, sizeof h,
			  "POST %s HTTP/1.1\r\nHost: relay\r\nContent-Type: application/octet-stream\r\n"
			  "Content-Length: %zu\r\n\r\n", path, len);
	uint8_t *m = malloc((size_t)hl + len);
	if (!m)
		return -ENOMEM;
	memcpy(m, h, (size_t)hl);
	memcpy(m + hl, body, len);
	int w = SSL_write(s, m, (int)((size_t)hl + len));
	free(m);
	return w == (int)((size_t)hl + len) ? 0 : -EIO;
}

static int http_ok(SSL *s)
{
	static const char r[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 12\r\n\r\n{\"ack\":true}";
	return SSL_write(s, r, (int)sizeof r - 1) > 0 ? 0 : -EIO;
}

static SSL *client_connect(struct relay *R, uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int one = 1;
	if (fd < 0)
		return NULL;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	SSL *s = NULL;
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 || !(s = SSL_new(R->cli)) || SSL_set_fd(s, fd) != 1 ||
	    SSL_connect(s) != 1) {
		SSL_free(s);
		close(fd);
		return NULL;
	}
	return s;
}

static void client_close(SSL *s)
{
	if (!s)
		return;
	int fd = SSL_get_fd(s);
	(void)SSL_shutdown(s);
	SSL_free(s);
	close(fd);
}

/* ---- servers ------------------------------------------------------------ */

struct conn_arg {
	struct relay *R;
	int fd;
	bool coordinator;
};

static void attn_handle(struct relay *R, const uint8_t *body, size_t len)
{
	uint64_t now = fl_now_ns();
	struct fg_frame f;
	struct fg_resolved r;
	enum fg_band band;
	uint16_t layer;
	bool ok = fg_frame_decode(body, len, FG_TRANSPORT_MESSAGE, &f) > 0 &&
		  fg_stream_classify(&R->bands, f.hdr.stream_id, &band, &layer) == 0 && band == FG_BAND_RESOLVED &&
		  fg_resolved_decode(&f, layer, &R->lim, &r) > 0;
	pthread_mutex_lock(&R->mu);
	if (ok && r.token_seq == R->want_seq) {
		R->got_ok = fg_fingerprint(r.body, r.body_len) == R->want_fp;
		R->got_ns = now;
		R->got = true;
		pthread_cond_signal(&R->cv);
	} else {
		R->bad++;
	}
	pthread_mutex_unlock(&R->mu);
}

/* The coordinator: collect the slot, reduce in the canonical order, forward. */
static void coord_handle(struct relay *R, SSL **to_attn, const uint8_t *body, size_t len, uint8_t *out)
{
	struct fg_frame f;
	struct fg_seed sd;
	enum fg_band band;
	uint16_t layer;
	uint32_t H = R->o->hidden;
	if (fg_frame_decode(body, len, FG_TRANSPORT_MESSAGE, &f) <= 0 ||
	    fg_stream_classify(&R->bands, f.hdr.stream_id, &band, &layer) < 0 || band != FG_BAND_SEED ||
	    fg_seed_decode(&f, layer, &R->lim, &sd) <= 0) {
		R->bad++;
		return;
	}
	int role = sd.line == FL_LINE_X ? 0 : sd.line == FL_LINE_ATTN ? 1 : sd.line == FL_LINE_FFN ? 2 : -1;
	if (role < 0)
		return;
	if (sd.token_seq != R->slot_seq) {
		R->slot_seq = sd.token_seq;
		R->landed = 0;
	}
	memcpy(R->c[role], sd.body, sd.body_len);
	R->landed |= (uint8_t)(1u << role);
	if (R->landed != 7u)
		return;
	size_t fcap = FG_HDR_LEN + FG_SEED_PREFIX_LEN + (size_t)H * 4u;
	float *res = (float *)(out + ((fcap + 63) & ~(size_t)63)); /* scratch behind the frame */
	fl_model_chain(R->c[0], R->c[1], R->c[2], H, res);
	struct fg_resolved rv = { .token_seq = sd.token_seq, .dst_layer = layer, .start_pos = 0, .seq_len = 1,
				  .body = (const uint8_t *)res, .body_len = H * 4u };
	ssize_t n = fg_resolved_encode(&R->bands, &rv, out, fcap);
	if (n <= 0) {
		R->bad++;
		return;
	}
	if (!*to_attn)
		*to_attn = client_connect(R, R->attn_port);
	uint8_t resp[1024];
	size_t h;
	if (!*to_attn || http_post(*to_attn, "/x", out, (size_t)n) < 0 || http_read(*to_attn, resp, sizeof resp, &h) < 0)
		R->bad++;
}

static void *conn_main(void *arg)
{
	struct conn_arg *a = arg;
	struct relay *R = a->R;
	SSL *s = SSL_new(R->srv);
	SSL *to_attn = NULL;
	uint8_t *buf = malloc(REQ_MAX);
	uint8_t *out = malloc(2 * (FG_HDR_LEN + FG_SEED_PREFIX_LEN + (size_t)R->o->hidden * 4u) + 128);
	if (s && buf && out && SSL_set_fd(s, a->fd) == 1 && SSL_accept(s) == 1) {
		for (;;) {
			size_t h;
			int blen = http_read(s, buf, REQ_MAX, &h);
			if (blen < 0)
				break;
			if (http_ok(s) < 0)
				break;
			if (a->coordinator)
				coord_handle(R, &to_attn, buf + h, (size_t)blen, out);
			else
				attn_handle(R, buf + h, (size_t)blen);
		}
	}
	client_close(to_attn);
	SSL_free(s);
	close(a->fd);
	free(buf);
	free(out);
	free(a);
	return NULL;
}

struct acc_arg {
	struct relay *R;
	int lfd;
	bool coordinator;
};

static void *accept_main(void *arg)
{
	struct acc_arg *a = arg;
	pthread_t th[8];
	int n = 0;
	while (!a->R->stop && n < 8) {
		int fd = accept4(a->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			break;
		int one = 1;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		struct conn_arg *c = malloc(sizeof *c);
		if (!c) {
			close(fd);
			continue;
		}
		*c = (struct conn_arg){ .R = a->R, .fd = fd, .coordinator = a->coordinator };
		if (pthread_create(&th[n], NULL, conn_main, c) != 0) {
			close(fd);
			free(c);
			continue;
		}
		n++;
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return NULL;
}

static int listen_any(uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof a;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &al) < 0) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	*port = ntohs(a.sin_port);
	return fd;
}

int fl_relay_run(const struct fl_relay_opts *o)
{
	struct relay R = { .o = o, .attn_lfd = -1, .coord_lfd = -1 };
	char err[512];
	int rc = 3;
	struct fl_lat lat = { 0 };
	FILE *samples = NULL;
	SSL *down = NULL;
	pthread_t ta = 0, tc = 0;
	struct acc_arg aa, ac;
	uint32_t H = o->hidden;
	uint8_t *frame = malloc(FG_HDR_LEN + FG_SEED_PREFIX_LEN + (size_t)H * 4u);
	float *v[FL_ROLES + 1];
	for (unsigned i = 0; i <= FL_ROLES; i++)
		v[i] = malloc((size_t)H * 4u);
	for (unsigned i = 0; i < FL_ROLES; i++)
		R.c[i] = malloc((size_t)H * 4u);
	pthread_mutex_init(&R.mu, NULL);
	pthread_cond_init(&R.cv, NULL);
	fg_bands_default(&R.bands);
	R.bands.n_layers = 28;
	R.lim = (struct fg_seed_limits){ .hidden = H, .max_seq_len = 1 };
	if (!frame || !v[0] || !v[1] || !v[2] || !v[3] || !R.c[0] || !R.c[1] || !R.c[2] || H * 4u > 1u << 20) {
		fprintf(stderr, "relay: out of memory\n");
		goto out;
	}
	if (!o->cert || !o->key) {
		fprintf(stderr, "relay: --relay-bench needs --cert FILE --key FILE for its two HTTPS servers\n");
		goto out;
	}
	R.srv = SSL_CTX_new(TLS_server_method());
	struct fl_tls_opts co = { .insecure = true };
	R.cli = fl_tls_ctx_new(&co, err, sizeof err);
	if (!R.srv || !R.cli || SSL_CTX_use_certificate_chain_file(R.srv, o->cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(R.srv, o->key, SSL_FILETYPE_PEM) != 1) {
		fl_tls_err(err, sizeof err, "relay: TLS set-up");
		fprintf(stderr, "%s\n", err);
		goto out;
	}
	R.attn_lfd = listen_any(&R.attn_port);
	R.coord_lfd = listen_any(&R.coord_port);
	if (R.attn_lfd < 0 || R.coord_lfd < 0) {
		fprintf(stderr, "relay: listen: %s\n", strerror(errno));
		goto out;
	}
	aa = (struct acc_arg){ .R = &R, .lfd = R.attn_lfd, .coordinator = false };
	ac = (struct acc_arg){ .R = &R, .lfd = R.coord_lfd, .coordinator = true };
	if (pthread_create(&ta, NULL, accept_main, &aa) != 0 || pthread_create(&tc, NULL, accept_main, &ac) != 0) {
		fprintf(stderr, "relay: threads\n");
		goto out;
	}
	down = client_connect(&R, R.coord_port);
	if (!down) {
		fprintf(stderr, "relay: cannot connect to the coordinator\n");
		goto out;
	}
	if (o->json && !(samples = fopen(o->json, "w"))) {
		fprintf(stderr, "relay: cannot write %s\n", o->json);
		goto out;
	}
	uint64_t wrong = 0, lost = 0;
	for (uint32_t hop = 0; hop < o->warmup + o->hops; hop++) {
		unsigned layer = hop % 27u;
		uint32_t seq = hop + 1;
		fl_model_gen(7, hop, layer, FL_KIND_X0, H, v[0]);
		fl_model_gen(7, hop, layer, FL_KIND_ATTN, H, v[1]);
		fl_model_gen(7, hop, layer, FL_KIND_FFN, H, v[2]);
		fl_model_chain(v[0], v[1], v[2], H, v[3]);
		pthread_mutex_lock(&R.mu);
		R.want_seq = seq;
		R.want_fp = fg_fingerprint(v[3], H * 4u);
		R.got = false;
		pthread_mutex_unlock(&R.mu);
		uint64_t t0 = 0;
		for (unsigned role = 0; role < FL_ROLES; role++) {
			static const uint8_t lines[FL_ROLES] = { FL_LINE_X, FL_LINE_ATTN, FL_LINE_FFN };
			struct fg_seed sd = { .token_seq = seq, .dst_layer = (uint16_t)(layer + 1), .line = lines[role],
					      .seq_len = 1, .body = (const uint8_t *)v[role], .body_len = H * 4u };
			ssize_t n = fg_seed_encode(&R.bands, &sd, frame, FG_HDR_LEN + FG_SEED_PREFIX_LEN + H * 4u);
			uint8_t resp[1024];
			size_t h;
			/* Stamped before the write: the coordinator may forward
			 * before this thread returns from SSL_write (this counts the
			 * encryption of one request against the relay, a few us). */
			if (role == FL_ROLES - 1)
				t0 = fl_now_ns();
			if (n <= 0 || http_post(down, "/contrib", frame, (size_t)n) < 0) {
				fprintf(stderr, "relay: POST to the coordinator failed\n");
				goto out;
			}
			if (http_read(down, resp, sizeof resp, &h) < 0) {
				fprintf(stderr, "relay: no answer from the coordinator\n");
				goto out;
			}
		}
		struct timespec dl;
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += 2;
		pthread_mutex_lock(&R.mu);
		while (!R.got)
			if (pthread_cond_timedwait(&R.cv, &R.mu, &dl) == ETIMEDOUT)
				break;
		bool got = R.got, ok = R.got_ok;
		uint64_t t1 = R.got_ns;
		pthread_mutex_unlock(&R.mu);
		if (!got) {
			lost++;
			continue;
		}
		if (!ok)
			wrong++;
		if (hop >= o->warmup) {
			if (fl_lat_add(&lat, t1 - t0) < 0)
				break;
			if (samples)
				fprintf(samples, "coordinator-https relay %llu\n", (unsigned long long)(t1 - t0));
		}
	}
	printf("relay: DOWN -> coordinator -> ATTN over HTTPS keep-alive, hidden %u: %zu hops, p50 %.1f us, "
	       "p99 %.1f us, p99.9 %.1f us, max %.1f us; wrong %llu lost %llu bad %llu\n",
	       H, lat.n, (double)fl_lat_pct(&lat, 50) / 1e3, (double)fl_lat_pct(&lat, 99) / 1e3,
	       (double)fl_lat_pct(&lat, 99.9) / 1e3, (double)fl_lat_pct(&lat, 100) / 1e3, (unsigned long long)wrong,
	       (unsigned long long)lost, (unsigned long long)R.bad);
	rc = (wrong || lost) ? 1 : 0;
out:
	if (samples)
		fclose(samples);
	client_close(down);
	R.stop = true;
	/* Unblock the accept threads: shut the listeners down. */
	if (R.attn_lfd >= 0)
		shutdown(R.attn_lfd, SHUT_RDWR);
	if (R.coord_lfd >= 0)
		shutdown(R.coord_lfd, SHUT_RDWR);
	if (tc)
		pthread_join(tc, NULL);
	if (ta)
		pthread_join(ta, NULL);
	if (R.attn_lfd >= 0)
		close(R.attn_lfd);
	if (R.coord_lfd >= 0)
		close(R.coord_lfd);
	SSL_CTX_free(R.srv);
	SSL_CTX_free(R.cli);
	fl_lat_free(&lat);
	free(frame);
	for (unsigned i = 0; i <= FL_ROLES; i++)
		free(v[i]);
	for (unsigned i = 0; i < FL_ROLES; i++)
		free(R.c[i]);
	return rc;
}

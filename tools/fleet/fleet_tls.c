/* fleet_tls.c - TLS client connections of the fleet: a minimal RFC 6455
 * WebSocket client (masked binary messages, ping/pong/close, fragmented
 * server messages) for wss:///flow, and an HTTP/1.1 keep-alive client for
 * POST /residual-seed and /canonical, both over OpenSSL on non-blocking
 * sockets.
 *
 * Who may call: the fanofleet event loop thread; one connection belongs to
 * one thread. Connection set-up (TCP connect, TLS handshake, WebSocket
 * upgrade) blocks for at most timeout_ms; afterwards nothing blocks.
 *
 * Output is one byte queue per connection; a "mark" (end offset, tag) per
 * queued item fires on_sent when the item's last byte was accepted by
 * SSL_write, which is what the latency clock calls "sent" (with the time
 * that SSL_write began too: fl_udp_sent_fn). Partial writes
 * and moving write buffers are enabled, and an SSL_write that wants to be
 * retried is retried with the same length (OpenSSL's rule). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "fleet.h"

#define WS_MSG_FRAMES 16u
#define WS_MSG_BYTES (64u * 1024u)
#define WS_RX_MAX (16u * 1024u * 1024u)
#define HTTP_HDR_MAX 16384u
#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

struct mark {
	uint64_t end;
	uint64_t tag;
};

struct http_req {
	uint8_t *buf;
	size_t len;
	uint64_t tag;
};

struct fl_conn {
	enum fl_conn_kind kind;
	int fd;
	SSL *ssl;
	bool dead;
	bool want_write; /* SSL needs POLLOUT to make progress */
	struct fl_conn_cb cb;
	char host_hdr[128];
	char auth_hdr[600];
	/* output queue */
	uint8_t *out;
	size_t out_len, out_off, out_cap, retry_len;
	uint64_t queued_total, written_total;
	struct mark *marks;
	size_t m_head, m_tail, m_cap;
	/* input */
	uint8_t *in;
	size_t in_len, in_cap;
	/* WebSocket: server message being reassembled, client message being built */
	uint8_t *rx;
	size_t rx_len, rx_cap;
	bool rx_open;
	uint8_t *tx;
	size_t tx_len, tx_cap;
	uint64_t *tx_tags;
	unsigned tx_frames;
	/* HTTPS: waiting requests and the one in flight */
	struct http_req *rq;
	size_t rq_head, rq_tail, rq_cap;
	bool awaiting;
	uint64_t awaiting_tag;
	struct fl_conn_stats st;
};

void fl_tls_err(char *buf, size_t len, const char *what)
{
	size_t o = (size_t)snprintf(buf, len, "%s", what);
	unsigned long e;
	while ((e = ERR_get_error()) != 0) {
		char s[256];
		ERR_error_string_n(e, s, sizeof s);
		if (o < len)
			o += (size_t)snprintf(buf + o, len - o, ": %s", s);
	}
}

SSL_CTX *fl_tls_ctx_new(const struct fl_tls_opts *o, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx) {
		fl_tls_err(err, errlen, "SSL_CTX_new");
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	if (o->insecure) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	} else {
		int ok = o->ca_file ? SSL_CTX_load_verify_locations(ctx, o->ca_file, NULL)
				    : SSL_CTX_set_default_verify_paths(ctx);
		if (ok != 1) {
			fl_tls_err(err, errlen, "loading CA");
			SSL_CTX_free(ctx);
			return NULL;
		}
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	}
	if (o->cert_file && o->key_file &&
	    (SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1 ||
	     SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) != 1)) {
		fl_tls_err(err, errlen, "loading client certificate");
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/* ---- byte queues ---------------------------------------------------- */

static int grow(uint8_t **p, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 16384;
	while (c < need)
		c *= 2;
	uint8_t *n = realloc(*p, c);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = c;
	return 0;
}

static int out_append(struct fl_conn *c, const void *data, size_t len)
{
	if (c->out_off > 0 && c->out_off == c->out_len && c->retry_len == 0)
		c->out_off = c->out_len = 0;
	if (grow(&c->out, &c->out_cap, c->out_len + len) < 0)
		return -ENOMEM;
	memcpy(c->out + c->out_len, data, len);
	c->out_len += len;
	c->queued_total += len;
	return 0;
}

static int mark_push(struct fl_conn *c, uint64_t tag)
{
	if (c->m_tail == c->m_cap) {
		if (c->m_head > 0) {
			memmove(c->marks, c->marks + c->m_head, (c->m_tail - c->m_head) * sizeof *c->marks);
			c->m_tail -= c->m_head;
			c->m_head = 0;
		} else {
			size_t cap = c->m_cap ? c->m_cap * 2 : 256;
			void *p = realloc(c->marks, cap * sizeof *c->marks);
			if (!p)
				return -ENOMEM;
			c->marks = p;
			c->m_cap = cap;
		}
	}
	c->marks[c->m_tail++] = (struct mark){ .end = c->queued_total, .tag = tag };
	return 0;
}

static int flush_out(struct fl_conn *c)
{
	c->want_write = false;
	uint64_t t_w = 0; /* the latest SSL_write's start: the one that completed a mark */
	while (c->out_off < c->out_len) {
		t_w = fl_now_ns();
		size_t n = c->retry_len ? c->retry_len : c->out_len - c->out_off;
		if (n > 65536)
			n = 65536;
		ERR_clear_error();
		int w = SSL_write(c->ssl, c->out + c->out_off, (int)n);
		if (w <= 0) {
			int e = SSL_get_error(c->ssl, w);
			if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
				c->retry_len = n;
				c->want_write = e == SSL_ERROR_WANT_WRITE;
				break;
			}
			c->dead = true;
			return -EIO;
		}
		c->retry_len = 0;
		c->out_off += (size_t)w;
		c->written_total += (uint64_t)w;
		c->st.bytes_out += (uint64_t)w;
	}
	if (c->m_head < c->m_tail) {
		uint64_t now = fl_now_ns();
		while (c->m_head < c->m_tail && c->marks[c->m_head].end <= c->written_total) {
			if (c->cb.on_sent)
				c->cb.on_sent(c->cb.ctx, c->marks[c->m_head].tag, t_w ? t_w : now, now);
			c->m_head++;
		}
	}
	if (c->out_off == c->out_len && c->retry_len == 0)
		c->out_off = c->out_len = 0;
	return 0;
}

/* ---- WebSocket framing (client side: we mask, the server must not) ---- */

static int ws_frame_out(struct fl_conn *c, uint8_t opcode, const uint8_t *payload, size_t len)
{
	uint8_t h[14];
	size_t hl = 2;
	h[0] = (uint8_t)(0x80u | opcode);
	if (len < 126) {
		h[1] = (uint8_t)(0x80u | len);
	} else if (len <= 0xFFFF) {
		h[1] = 0x80u | 126u;
		fg_put_be16(h + 2, (uint16_t)len);
		hl = 4;
	} else {
		h[1] = 0x80u | 127u;
		fg_put_be32(h + 2, (uint32_t)((uint64_t)len >> 32));
		fg_put_be32(h + 6, (uint32_t)len);
		hl = 10;
	}
	uint8_t key[4];
	if (RAND_bytes(key, sizeof key) != 1)
		return -EIO;
	memcpy(h + hl, key, 4);
	hl += 4;
	if (out_append(c, h, hl) < 0 || grow(&c->out, &c->out_cap, c->out_len + len) < 0)
		return -ENOMEM;
	uint8_t *d = c->out + c->out_len;
	for (size_t i = 0; i < len; i++)
		d[i] = payload[i] ^ key[i & 3];
	c->out_len += len;
	c->queued_total += len;
	return 0;
}

static void ws_deliver(struct fl_conn *c, const uint8_t *m, size_t len, uint64_t now)
{
	c->st.msgs_in++;
	size_t off = 0;
	while (off < len) {
		struct fg_frame f;
		ssize_t r = fg_frame_decode(m + off, len - off, FG_TRANSPORT_MESSAGE, &f);
		if (r < 0) {
			c->st.protocol_errors++;
			return;
		}
		c->st.frames_in++;
		if (c->cb.on_frame)
			c->cb.on_frame(c->cb.ctx, &f, FL_PATH_WSS, now);
		off += (size_t)r;
	}
}

static void ws_parse(struct fl_conn *c, uint64_t now)
{
	size_t off = 0;
	while (!c->dead) {
		uint8_t *p = c->in + off;
		size_t len = c->in_len - off;
		if (len < 2)
			break;
		bool fin = p[0] & 0x80u, masked = p[1] & 0x80u;
		uint8_t op = p[0] & 0x0Fu;
		uint64_t pl = p[1] & 0x7Fu;
		size_t hl = 2;
		if (pl == 126) {
			if (len < 4)
				break;
			pl = fg_be16(p + 2);
			hl = 4;
		} else if (pl == 127) {
			if (len < 10)
				break;
			pl = ((uint64_t)fg_be32(p + 2) << 32) | fg_be32(p + 6);
			hl = 10;
		}
		if (pl > WS_RX_MAX) {
			c->st.protocol_errors++;
			c->dead = true;
			break;
		}
		size_t mo = hl;
		if (masked)
			hl += 4;
		if (len < hl + pl)
			break;
		uint8_t *d = p + hl;
		if (masked)
			for (uint64_t i = 0; i < pl; i++)
				d[i] ^= p[mo + (i & 3)];
		off += hl + (size_t)pl;
		switch (op) {
		case 0x0: /* continuation */
		case 0x1:
		case 0x2:
			if ((op == 0) != c->rx_open) {
				c->st.protocol_errors++;
				c->dead = true;
				break;
			}
			if (op != 0 && fin) { /* the common case: no copy */
				if (op == 0x2)
					ws_deliver(c, d, (size_t)pl, now);
				break;
			}
			if (grow(&c->rx, &c->rx_cap, c->rx_len + pl) < 0 || c->rx_len + pl > WS_RX_MAX) {
				c->dead = true;
				break;
			}
			memcpy(c->rx + c->rx_len, d, (size_t)pl);
			c->rx_len += (size_t)pl;
			c->rx_open = !fin;
			if (fin) {
				ws_deliver(c, c->rx, c->rx_len, now);
				c->rx_len = 0;
			}
			break;
		case 0x8: /* close: echo it, then stop */
			(void)ws_frame_out(c, 0x8, d, pl >= 2 ? 2 : 0);
			(void)flush_out(c);
			c->dead = true;
			break;
		case 0x9:
			c->st.ws_pings++;
			(void)ws_frame_out(c, 0xA, d, (size_t)pl);
			break;
		case 0xA:
			break;
		default:
			c->st.protocol_errors++;
			c->dead = true;
		}
	}
	if (off > 0) {
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
}

int fl_ws_queue_frame(struct fl_conn *c, const uint8_t *frame, uint32_t len, uint64_t tag)
{
	if (c->dead)
		return -EPIPE;
	if (c->tx_frames > 0 && (c->tx_frames == WS_MSG_FRAMES || c->tx_len + len > WS_MSG_BYTES))
		fl_ws_flush(c, 0);
	if (grow(&c->tx, &c->tx_cap, c->tx_len + len) < 0)
		return -ENOMEM;
	if (!c->tx_tags && !(c->tx_tags = malloc(WS_MSG_FRAMES * sizeof *c->tx_tags)))
		return -ENOMEM;
	memcpy(c->tx + c->tx_len, frame, len);
	c->tx_len += len;
	c->tx_tags[c->tx_frames++] = tag;
	return 0;
}

void fl_ws_flush(struct fl_conn *c, uint64_t now)
{
	(void)now;
	if (c->tx_frames == 0 || c->dead)
		return;
	if (ws_frame_out(c, 0x2, c->tx, c->tx_len) < 0) {
		c->dead = true;
		return;
	}
	c->st.msgs_out++;
	c->st.frames_out += c->tx_frames;
	for (unsigned i = 0; i < c->tx_frames; i++)
		if (mark_push(c, c->tx_tags[i]) < 0)
			c->dead = true;
	c->tx_len = 0;
	c->tx_frames = 0;
	(void)flush_out(c);
}

/* ---- HTTP/1.1 client ----------------------------------------------- */

static const char *find_hdr(const char *h, size_t hlen, const char *name)
{
	size_t nl = strlen(name);
	for (const char *p = h; p + nl < h + hlen; p++) {
		if ((p == h || p[-1] == '\n') && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			p += nl + 1;
			while (*p == ' ' || *p == '\t')
				p++;
			return p;
		}
	}
	return NULL;
}

static void http_start_next(struct fl_conn *c)
{
	if (c->awaiting || c->rq_head == c->rq_tail || c->dead)
		return;
	struct http_req *r = &c->rq[c->rq_head++];
	if (out_append(c, r->buf, r->len) < 0 || mark_push(c, r->tag) < 0)
		c->dead = true;
	free(r->buf);
	r->buf = NULL;
	c->awaiting = true;
	c->awaiting_tag = r->tag;
	c->st.requests++;
	(void)flush_out(c);
}

static void http_parse(struct fl_conn *c, uint64_t now)
{
	while (!c->dead && c->in_len > 0) {
		uint8_t *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
		if (!end) {
			if (c->in_len > HTTP_HDR_MAX)
				c->dead = true;
			return;
		}
		size_t hlen = (size_t)(end - c->in) + 4;
		int status = 0;
		if (sscanf((const char *)c->in, "HTTP/1.%*d %d", &status) != 1) {
			c->st.protocol_errors++;
			c->dead = true;
			return;
		}
		const char *cl = find_hdr((const char *)c->in, hlen, "Content-Length");
		size_t blen = cl ? strtoul(cl, NULL, 10) : 0;
		const char *conn = find_hdr((const char *)c->in, hlen, "Connection");
		bool close_after = conn && strncasecmp(conn, "close", 5) == 0;
		if (c->in_len < hlen + blen)
			return;
		if (!c->awaiting) {
			c->st.protocol_errors++;
			c->dead = true;
			return;
		}
		c->st.responses++;
		if (status < 200 || status >= 300)
			c->st.http_errors++;
		/* NUL-terminate the body for the JSON parser: borrow one byte. */
		char save = 0;
		bool room = hlen + blen < c->in_cap;
		if (room) {
			save = (char)c->in[hlen + blen];
			c->in[hlen + blen] = 0;
		}
		c->awaiting = false;
		if (c->cb.on_response)
			c->cb.on_response(c->cb.ctx, c->awaiting_tag, status, (const char *)c->in + hlen, blen, now);
		if (room)
			c->in[hlen + blen] = (uint8_t)save;
		memmove(c->in, c->in + hlen + blen, c->in_len - hlen - blen);
		c->in_len -= hlen + blen;
		if (close_after) {
			c->dead = true;
			return;
		}
		http_start_next(c);
	}
}

static int http_queue(struct fl_conn *c, const char *method, const char *path, const uint8_t *body,
		      uint32_t len, uint64_t tag)
{
	if (c->dead)
		return -EPIPE;
	char h[1024];
	int hl = body ? snprintf(h, sizeof h,
				 "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/octet-stream\r\n"
				 "Content-Length: %u\r\n%s\r\n",
				 method, path, c->host_hdr, len, c->auth_hdr)
		      : snprintf(h, sizeof h, "%s %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", method, path, c->host_hdr,
				 c->auth_hdr);
	if (hl < 0 || (size_t)hl >= sizeof h)
		return -EINVAL;
	if (c->rq_tail == c->rq_cap) {
		if (c->rq_head > 0) {
			memmove(c->rq, c->rq + c->rq_head, (c->rq_tail - c->rq_head) * sizeof *c->rq);
			c->rq_tail -= c->rq_head;
			c->rq_head = 0;
		} else {
			size_t cap = c->rq_cap ? c->rq_cap * 2 : 64;
			void *p = realloc(c->rq, cap * sizeof *c->rq);
			if (!p)
				return -ENOMEM;
			c->rq = p;
			c->rq_cap = cap;
		}
	}
	uint8_t *b = malloc((size_t)hl + len);
	if (!b)
		return -ENOMEM;
	memcpy(b, h, (size_t)hl);
	if (body)
		memcpy(b + hl, body, len);
	else
		len = 0;
	c->rq[c->rq_tail++] = (struct http_req){ .buf = b, .len = (size_t)hl + len, .tag = tag };
	http_start_next(c);
	return 0;
}

int fl_https_post(struct fl_conn *c, const char *path, const uint8_t *body, uint32_t len, uint64_t tag,
		  uint64_t now)
{
	(void)now;
	return http_queue(c, "POST", path, body, len, tag);
}

int fl_https_get(struct fl_conn *c, const char *path, uint64_t tag, uint64_t now)
{
	(void)now;
	return http_queue(c, "GET", path, NULL, 0, tag);
}

size_t fl_conn_backlog(const struct fl_conn *c)
{
	return (c->rq_tail - c->rq_head) + (c->awaiting ? 1u : 0u);
}

/* ---- connection life ---------------------------------------------- */

static int tcp_connect(const struct fl_tls_opts *o, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	char hp[300];
	snprintf(hp, sizeof hp, strchr(o->host, ':') ? "[%s]:%u" : "%s:%u", o->host, o->port);
	if (tool_addr_parse(hp, true, &ss, &sl) < 0) {
		snprintf(err, errlen, "bad address %s", hp);
		return -EINVAL;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -errno;
	}
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS) {
		snprintf(err, errlen, "connect %s: %s", hp, strerror(errno));
		close(fd);
		return -ECONNREFUSED;
	}
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int soerr = 0;
	socklen_t el = sizeof soerr;
	if (poll(&p, 1, (int)o->timeout_ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &el) < 0 ||
	    soerr != 0) {
		snprintf(err, errlen, "connect %s: %s", hp, soerr ? strerror(soerr) : "timeout");
		close(fd);
		return -ECONNREFUSED;
	}
	/* Blocking with timeouts for the handshake and upgrade. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	struct timeval tv = { .tv_sec = o->timeout_ms / 1000, .tv_usec = (o->timeout_ms % 1000) * 1000 };
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	return fd;
}

static int ws_upgrade(struct fl_conn *c, const char *path, char *err, size_t errlen)
{
	uint8_t raw[16];
	char key[32], expect[64], req[1400];
	if (RAND_bytes(raw, sizeof raw) != 1) {
		snprintf(err, errlen, "RAND_bytes failed");
		return -EIO;
	}
	EVP_EncodeBlock((unsigned char *)key, raw, sizeof raw);
	char cat[128];
	unsigned char sha[20];
	unsigned int shalen = 0;
	snprintf(cat, sizeof cat, "%s%s", key, WS_GUID);
	if (EVP_Digest(cat, strlen(cat), sha, &shalen, EVP_sha1(), NULL) != 1) {
		snprintf(err, errlen, "SHA-1 unavailable");
		return -EIO;
	}
	EVP_EncodeBlock((unsigned char *)expect, sha, 20);
	int n = snprintf(req, sizeof req,
			 "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
			 "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s\r\n",
			 path, c->host_hdr, key, c->auth_hdr);
	if (n < 0 || (size_t)n >= sizeof req || SSL_write(c->ssl, req, n) != n) {
		fl_tls_err(err, errlen, "sending the upgrade request");
		return -EIO;
	}
	for (;;) {
		if (grow(&c->in, &c->in_cap, c->in_len + 4096) < 0)
			return -ENOMEM;
		int r = SSL_read(c->ssl, c->in + c->in_len, (int)(c->in_cap - c->in_len - 1));
		if (r <= 0) {
			fl_tls_err(err, errlen, "reading the upgrade response (closed or timed out)");
			return -EIO;
		}
		c->in_len += (size_t)r;
		uint8_t *end = memmem(c->in, c->in_len, "\r\n\r\n", 4);
		if (!end) {
			if (c->in_len > HTTP_HDR_MAX) {
				snprintf(err, errlen, "upgrade response headers too long");
				return -EPROTO;
			}
			continue;
		}
		size_t hlen = (size_t)(end - c->in) + 4;
		int status = 0;
		(void)sscanf((const char *)c->in, "HTTP/1.%*d %d", &status);
		if (status != 101) {
			c->in[hlen - 4] = 0;
			char *eol = strchr((char *)c->in, '\r');
			if (eol)
				*eol = 0;
			snprintf(err, errlen, "upgrade refused: %s", (char *)c->in);
			return -EACCES;
		}
		const char *acc = find_hdr((const char *)c->in, hlen, "Sec-WebSocket-Accept");
		if (!acc || strncmp(acc, expect, strlen(expect)) != 0) {
			snprintf(err, errlen, "bad Sec-WebSocket-Accept");
			return -EPROTO;
		}
		memmove(c->in, c->in + hlen, c->in_len - hlen);
		c->in_len -= hlen;
		return 0;
	}
}

struct fl_conn *fl_conn_open(SSL_CTX *ctx, const struct fl_tls_opts *o, enum fl_conn_kind kind,
			     const char *path, const struct fl_conn_cb *cb, char *err, size_t errlen)
{
	struct fl_conn *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->kind = kind;
	c->cb = *cb;
	c->fd = -1;
	snprintf(c->host_hdr, sizeof c->host_hdr, strchr(o->sni ? o->sni : o->host, ':') ? "[%s]:%u" : "%s:%u",
		 o->sni ? o->sni : o->host, o->port);
	if (o->token)
		snprintf(c->auth_hdr, sizeof c->auth_hdr, "Authorization: Bearer %s\r\n", o->token);
	c->fd = tcp_connect(o, err, errlen);
	if (c->fd < 0)
		goto fail;
	c->ssl = SSL_new(ctx);
	if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1) {
		fl_tls_err(err, errlen, "SSL_new");
		goto fail;
	}
	unsigned char lit[16];
	/* SNI carries host names only, never an address literal (RFC 6066). */
	if (o->sni && inet_pton(AF_INET, o->sni, lit) != 1 && inet_pton(AF_INET6, o->sni, lit) != 1)
		SSL_set_tlsext_host_name(c->ssl, o->sni);
	if (o->sni && !o->insecure)
		SSL_set1_host(c->ssl, o->sni);
	if (SSL_connect(c->ssl) != 1) {
		fl_tls_err(err, errlen, "TLS handshake");
		goto fail;
	}
	if (kind == FL_CONN_WSS && ws_upgrade(c, path, err, errlen) < 0)
		goto fail;
	SSL_set_mode(c->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
	if (c->in_len > 0 && kind == FL_CONN_WSS)
		ws_parse(c, fl_now_ns());
	return c;
fail:
	fl_conn_free(c);
	return NULL;
}

void fl_conn_free(struct fl_conn *c)
{
	if (!c)
		return;
	if (c->ssl) {
		if (!c->dead)
			(void)SSL_shutdown(c->ssl);
		SSL_free(c->ssl);
	}
	if (c->fd >= 0)
		close(c->fd);
	for (size_t i = c->rq_head; i < c->rq_tail; i++)
		free(c->rq[i].buf);
	free(c->rq);
	free(c->out);
	free(c->in);
	free(c->rx);
	free(c->tx);
	free(c->tx_tags);
	free(c->marks);
	free(c);
}

int fl_conn_fd(const struct fl_conn *c) { return c->fd; }
bool fl_conn_is_dead(const struct fl_conn *c) { return c->dead; }
const struct fl_conn_stats *fl_conn_stats(const struct fl_conn *c) { return &c->st; }

short fl_conn_events(const struct fl_conn *c)
{
	short ev = POLLIN;
	if (c->out_off < c->out_len || c->want_write)
		ev |= POLLOUT;
	return ev;
}

int fl_conn_io(struct fl_conn *c, uint64_t now)
{
	if (c->dead)
		return -EPIPE;
	for (;;) {
		if (grow(&c->in, &c->in_cap, c->in_len + 65536 + 1) < 0) {
			c->dead = true;
			return -ENOMEM;
		}
		ERR_clear_error();
		int r = SSL_read(c->ssl, c->in + c->in_len, (int)(c->in_cap - c->in_len - 1));
		if (r > 0) {
			c->in_len += (size_t)r;
			c->st.bytes_in += (uint64_t)r;
			continue;
		}
		int e = SSL_get_error(c->ssl, r);
		if (e == SSL_ERROR_WANT_READ)
			break;
		if (e == SSL_ERROR_WANT_WRITE) {
			c->want_write = true;
			break;
		}
		c->dead = true;
		break;
	}
	if (c->kind == FL_CONN_WSS)
		ws_parse(c, now);
	else
		http_parse(c, now);
	if (!c->dead)
		(void)flush_out(c);
	return c->dead ? -EPIPE : 0;
}

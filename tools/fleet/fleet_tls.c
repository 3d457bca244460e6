/* fleet_tls.c - TLS client connections of the fleet: wss:///flow
 * (coalesced binary messages out, resolved seeds in, ping/pong/close) and an
 * HTTP/1.1 keep-alive client for POST /residual-seed and /canonical and the
 * long-poll GETs, on non-blocking sockets. The connection, the upgrade, the
 * framing and the response parsing are tools/wsclient's (wsc.h); this file
 * owns what is the fleet's: the output queue with its latency marks, the
 * message being built, the request queue and the statistics.
 *
 * Who may call: the fanofleet event loop thread; one connection belongs to
 * one thread. Connection set-up (TCP connect, TLS handshake, WebSocket
 * upgrade) blocks for at most timeout_ms; afterwards nothing blocks.
 *
 * Output is one byte queue per connection; a "mark" (end offset, tag) per
 * queued item fires on_sent when the item's last byte was accepted by
 * SSL_write, which is what the latency clock calls "sent" (with the time
 * that SSL_write began too: fl_udp_sent_fn). Partial writes and moving
 * write buffers are enabled, and an SSL_write that wants to be retried is
 * retried with the same bytes (OpenSSL's rule, kept by wsc_write). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet.h"
#include "wsc.h"

#define WS_MSG_FRAMES 16u
#define WS_MSG_BYTES (64u * 1024u)

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
	struct wsc_conn *wc;
	bool dead;
	struct fl_conn_cb cb;
	/* output queue */
	uint8_t *out;
	size_t out_len, out_off, out_cap;
	uint64_t queued_total, written_total;
	struct mark *marks;
	size_t m_head, m_tail, m_cap;
	/* WebSocket: the client message being built */
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
	wsc_tls_err(buf, len, what);
}

static struct wsc_opts wsc_opts_of(const struct fl_tls_opts *o)
{
	return (struct wsc_opts){
		.host = o->host,
		.port = o->port,
		.sni = o->sni,
		.ca_file = o->ca_file,
		.insecure = o->insecure,
		.cert_file = o->cert_file,
		.key_file = o->key_file,
		.token = o->token,
		.timeout_ms = o->timeout_ms,
	};
}

SSL_CTX *fl_tls_ctx_new(const struct fl_tls_opts *o, char *err, size_t errlen)
{
	struct wsc_opts w = wsc_opts_of(o);
	return wsc_ctx_new(&w, err, errlen);
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

/* Room for len more bytes at the end of the output queue (restarting it
 * when all of it was written). */
static int out_reserve(struct fl_conn *c, size_t len)
{
	if (c->out_off > 0 && c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	return grow(&c->out, &c->out_cap, c->out_len + len);
}

static int out_append(struct fl_conn *c, const void *data, size_t len)
{
	if (out_reserve(c, len) < 0)
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
	uint64_t t_w = 0; /* the latest SSL_write's start: the one that completed a mark */
	while (c->out_off < c->out_len) {
		t_w = fl_now_ns();
		ssize_t w = wsc_write(c->wc, c->out + c->out_off, c->out_len - c->out_off);
		if (w == -EAGAIN)
			break;
		if (w < 0) {
			c->dead = true;
			return -EIO;
		}
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
	if (c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	return 0;
}

/* ---- WebSocket -------------------------------------------------------- */

/* Queue one masked client frame (fresh key, wsc_ws_frame). */
static int ws_frame_out(struct fl_conn *c, uint8_t opcode, const uint8_t *payload, size_t len)
{
	if (out_reserve(c, len + CP_WS_HDR_MAX) < 0)
		return -ENOMEM;
	ssize_t n = wsc_ws_frame(opcode, payload, len, c->out + c->out_len, c->out_cap - c->out_len);
	if (n < 0)
		return -EIO;
	c->out_len += (size_t)n;
	c->queued_total += (uint64_t)n;
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

/* The server's messages and control frames received so far: binary
 * messages are flow frames, text is ignored, a ping is answered, a close
 * is echoed (its code) and ends the connection, a protocol violation
 * (wsc_ws_next) kills it. */
static void ws_parse(struct fl_conn *c, uint64_t now)
{
	struct cp_ws_event ev;
	int r;
	while (!c->dead && (r = wsc_ws_next(c->wc, &ev)) != 0) {
		if (r < 0) {
			c->st.protocol_errors++;
			c->dead = true;
			break;
		}
		switch (ev.kind) {
		case CP_WS_EV_MESSAGE:
			if (ev.opcode == CP_WS_OP_BINARY)
				ws_deliver(c, ev.data, ev.len, now);
			break;
		case CP_WS_EV_PING:
			c->st.ws_pings++;
			if (ws_frame_out(c, CP_WS_OP_PONG, ev.data, ev.len) < 0)
				c->dead = true;
			break;
		case CP_WS_EV_CLOSE: {
			uint8_t code[2] = { (uint8_t)(ev.close_code >> 8), (uint8_t)ev.close_code };
			bool none = ev.close_code == CP_WS_CLOSE_NO_STATUS;
			(void)ws_frame_out(c, CP_WS_OP_CLOSE, code, none ? 0 : 2);
			(void)flush_out(c);
			c->dead = true;
			break;
		}
		default:
			break;
		}
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
	if (ws_frame_out(c, CP_WS_OP_BINARY, c->tx, c->tx_len) < 0) {
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
	struct wsc_http_resp resp;
	int r;
	while (!c->dead && (r = wsc_http_next(c->wc, &resp)) != 0) {
		if (r < 0 || !c->awaiting) {
			c->st.protocol_errors++;
			c->dead = true;
			return;
		}
		c->st.responses++;
		if (resp.status < 200 || resp.status >= 300)
			c->st.http_errors++;
		c->awaiting = false;
		if (c->cb.on_response)
			c->cb.on_response(c->cb.ctx, c->awaiting_tag, resp.status, resp.body, resp.body_len, now);
		if (resp.close) {
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
	int hl = wsc_http_request_head(c->wc, method, path, body ? (int64_t)len : -1, h, sizeof h);
	if (hl < 0)
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
	struct wsc_opts w = wsc_opts_of(o);
	if (wsc_conn_open(ctx, &w, &c->wc, err, errlen) < 0)
		goto fail;
	if (kind == FL_CONN_WSS && wsc_ws_upgrade(c->wc, path, err, errlen) < 0)
		goto fail;
	if (wsc_conn_set_nonblocking(c->wc) < 0) {
		snprintf(err, errlen, "cannot make the connection non-blocking");
		goto fail;
	}
	if (kind == FL_CONN_WSS && wsc_pending(c->wc) > 0)
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
	wsc_conn_free(c->wc);
	for (size_t i = c->rq_head; i < c->rq_tail; i++)
		free(c->rq[i].buf);
	free(c->rq);
	free(c->out);
	free(c->tx);
	free(c->tx_tags);
	free(c->marks);
	free(c);
}

int fl_conn_fd(const struct fl_conn *c) { return wsc_conn_fd(c->wc); }
bool fl_conn_is_dead(const struct fl_conn *c) { return c->dead; }
const struct fl_conn_stats *fl_conn_stats(const struct fl_conn *c) { return &c->st; }

short fl_conn_events(const struct fl_conn *c)
{
	short ev = POLLIN;
	if (c->out_off < c->out_len || wsc_conn_wants_write(c->wc))
		ev |= POLLOUT;
	return ev;
}

int fl_conn_io(struct fl_conn *c, uint64_t now)
{
	if (c->dead)
		return -EPIPE;
	bool ended = false;
	for (;;) {
		ssize_t r = wsc_read(c->wc);
		if (r > 0) {
			c->st.bytes_in += (uint64_t)r;
			continue;
		}
		ended = r != -EAGAIN;
		break;
	}
	/* what arrived before the end still counts */
	if (c->kind == FL_CONN_WSS)
		ws_parse(c, now);
	else
		http_parse(c, now);
	if (ended)
		c->dead = true;
	if (!c->dead)
		(void)flush_out(c);
	return c->dead ? -EPIPE : 0;
}

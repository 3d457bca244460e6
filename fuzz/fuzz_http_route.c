/* fuzz_http_route.c - libFuzzer target for the control plane's HTTP/1.1
 * router (control/cp_http.c, D1) on top of the request parser
 * (control/proto/cp_http_parse.c), driven without sockets or TLS: the
 * connection API it calls (cp_conn_put/flush/close/unblock/deadline/lists,
 * cp_engine_submit(_from)/lookup/count_malformed, cp_tls_token_ok, cp_conn_set_role,
 * cp_ws_start/on_data, logging, the clock) is stubbed here, mirroring cp_conn.c's semantics where they
 * matter (cp_conn_unblock re-runs pipelined input, the wait list).
 *
 * Input: ops, one byte each plus arguments:
 *   0 data     n bytes...: plaintext arrives (appended to c->in up to its
 *              capacity), then cp_http_on_data as conn_process would
 *   1 done     outcome line reason: the engine answers a pending submit
 *              (cp_http_on_done through the cookie, as cp_server_on_done)
 *   2 seed     state: the engine's resolved/ended event for the waited slot
 *   3 timeout  the connection's deadline passed (cp_http_on_timeout)
 *   4 mode     submit behaviour (answer now / later / -EBUSY / -EMSGSIZE),
 *              lookup state, mTLS peer verified, the next put fails
 * Properties:
 *  1. no crash, no out-of-bounds access, no leak;
 *  2. the output is a sequence of well-formed responses: each head is
 *     "HTTP/1.1 <100..599> " ... CRLFCRLF in one put, carries a
 *     Content-Length (except 100/101) and is followed by exactly that many
 *     body bytes (none for HEAD), and the next head starts only after it;
 *  3. nothing is written after the connection was closed, and a failed
 *     put always ends in a close;
 *  4. the input buffer never exceeds its capacity, and a connection never
 *     waits for a seed without being on the wait list. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cp_engine.h"
#include "cp_audit.h"
#include "cp_log.h"
#include "cp_points.h"
#include "cp_loop.h"
#include "cp_server.h"
#include "cp_tls.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define IN_CAP 4096u

static struct {
	bool closed;
	uint64_t now;
	unsigned submit_mode; /* 0 answer now, 1 later, 2 -EBUSY, 3 -EMSGSIZE */
	enum fg_slot_state lookup;
	bool fail_put; /* the next cp_conn_put fails (send queue full) */
	bool put_failed;
	bool pending;
	uint64_t pending_cookie;
	/* output checker */
	uint64_t body_left;
	bool in_body;
	uint64_t responses;
} h;

static struct cp_server srv;
static struct cp_engine eng;
static struct fg_config cfg;
static struct cp_conn conn;
static uint8_t inbuf[IN_CAP];
static uint8_t resolved_frame[64];

/* ---- stubs: logging, clock, hooks, TLS tokens ---- */
bool cp_log_enabled(enum cp_log_level lv)
{
	(void)lv;
	return false;
}
void cp_log(enum cp_log_level lv, const char *fmt, ...)
{
	(void)lv;
	(void)fmt;
}
void cp_log_ssl(enum cp_log_level lv, const char *fmt, ...)
{
	(void)lv;
	(void)fmt;
}
uint64_t cp_now_ns(void) { return h.now; }
void cp_audit_auth_failure(struct cp_audit *a, const char *peer, const char *reason)
{
	(void)a;
	FUZZ_CHECK(peer != NULL && reason != NULL);
}
/* The audit state a JSON ack reports: the harness has no audit (srv.audit
 * is NULL), as cp_audit.c answers for a NULL runner. */
bool cp_audit_is_running(const struct cp_audit *a) { return a != NULL; }
bool cp_audit_is_failed(const struct cp_audit *a)
{
	(void)a;
	return false;
}
bool cp_tls_token_ok(const struct cp_tls *t, const char *token, size_t len, const char **role)
{
	(void)t;
	if (len == 6 && !memcmp(token, "secret", 6)) {
		*role = NULL;
		return true;
	}
	if (len == 6 && !memcmp(token, "reader", 6)) {
		*role = "consumer";
		return true;
	}
	return false;
}

/* The role (and its Fano point, cp_engine_point_attach): only that it is
 * told about this connection once authenticated. */
void cp_conn_set_role(struct cp_conn *c, const char *role)
{
	FUZZ_CHECK(c == &conn && !cp_conn_is_dead(c));
	c->role = role;
}

/* ---- stubs: the connection ---- */
static bool starts_with(const uint8_t *p, size_t n, const char *lit)
{
	size_t k = strlen(lit);
	return n >= k && !memcmp(p, lit, k);
}

int cp_conn_put(struct cp_conn *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	FUZZ_CHECK(c == &conn);
	FUZZ_CHECK(!h.closed && !cp_conn_is_dead(c)); /* nothing after close */
	FUZZ_CHECK(len > 0);
	if (h.fail_put) {
		/* the caller must close: the half-written response is abandoned */
		h.fail_put = false;
		h.in_body = false;
		h.put_failed = true;
		return -ENOBUFS;
	}
	if (h.in_body) {
		FUZZ_CHECK(len <= h.body_left);
		h.body_left -= len;
		h.in_body = h.body_left > 0;
		return 0;
	}
	/* a head, whole in this put */
	FUZZ_CHECK(starts_with(p, len, "HTTP/1.1 "));
	FUZZ_CHECK(len >= 13 && p[9] >= '1' && p[9] <= '5' && p[10] >= '0' && p[10] <= '9' && p[11] >= '0' &&
		   p[11] <= '9' && p[12] == ' ');
	FUZZ_CHECK(len >= 4 && !memcmp(p + len - 4, "\r\n\r\n", 4));
	unsigned status = (unsigned)(p[9] - '0') * 100 + (unsigned)(p[10] - '0') * 10 + (unsigned)(p[11] - '0');
	const char *cl = memmem(p, len, "\r\nContent-Length: ", 18);
	if (status == 100 || status == 101) {
		FUZZ_CHECK(cl == NULL);
		return 0;
	}
	FUZZ_CHECK(cl != NULL);
	uint64_t n = strtoull(cl + 18, NULL, 10);
	h.responses++;
	if (!c->http.is_head && n) {
		h.in_body = true;
		h.body_left = n;
	}
	return 0;
}
void cp_conn_flush(struct cp_conn *c)
{
	FUZZ_CHECK(!h.in_body); /* a response is flushed whole */
	(void)c;
}
void cp_conn_close(struct cp_conn *c, const char *why)
{
	(void)why;
	c->life = CP_LIFE_DEAD;
	h.closed = true;
	cp_conn_list_del(&srv.wait_list, c);
}
void cp_conn_close_after_flush(struct cp_conn *c, const char *why)
{
	(void)why;
	FUZZ_CHECK(!h.in_body);
	if (c->life < CP_LIFE_CLOSING)
		c->life = CP_LIFE_CLOSING;
	h.closed = true;
	cp_conn_list_del(&srv.wait_list, c);
}
void cp_conn_set_deadline(struct cp_conn *c, enum cp_deadline_kind k, uint64_t ns_from_now)
{
	c->dl_kind = k;
	c->deadline_ns = h.now + ns_from_now;
}
void cp_conn_authenticated(struct cp_conn *c) { c->authed = true; } /* admission: cp_conn.c */
void cp_conn_body_deadline(struct cp_conn *c, uint64_t len)
{
	/* as cp_conn.c: handshake_timeout_ms + len / body_min_rate */
	uint64_t rate = srv.cfg->body_min_rate ? srv.cfg->body_min_rate : 1;
	cp_conn_set_deadline(c, CP_DL_BODY, (uint64_t)srv.cfg->handshake_timeout_ms * 1000000ull + len * 1000000000ull / rate);
}
void cp_conn_unblock(struct cp_conn *c)
{
	/* as cp_conn.c: re-run pipelined input unless inside conn_process */
	if (!c->proto_blocked || cp_conn_is_dead(c))
		return;
	c->proto_blocked = false;
	if (c->in_process)
		return;
	if (c->in_len) {
		c->in_process = true;
		if (c->state == CP_CONN_WS)
			cp_ws_on_data(c);
		else
			cp_http_on_data(c);
		c->in_process = false;
	}
}
void cp_conn_list_add(struct cp_conn **head, struct cp_conn *c)
{
	if (c->on_list)
		return;
	c->lprev = NULL;
	c->lnext = *head;
	if (*head)
		(*head)->lprev = c;
	*head = c;
	c->on_list = true;
}
void cp_conn_list_del(struct cp_conn **head, struct cp_conn *c)
{
	if (!c->on_list)
		return;
	if (c->lprev)
		c->lprev->lnext = c->lnext;
	else
		*head = c->lnext;
	if (c->lnext)
		c->lnext->lprev = c->lprev;
	c->lprev = c->lnext = NULL;
	c->on_list = false;
}

/* ---- stubs: WebSocket (the session itself is fuzz_ws's business) ---- */
void cp_ws_start(struct cp_conn *c, const struct cp_flow_query *q)
{
	FUZZ_CHECK(q != NULL);
	c->state = CP_CONN_WS;
	cp_conn_list_add(&srv.ws_list, c);
}
void cp_ws_on_data(struct cp_conn *c)
{
	FUZZ_CHECK(c->state == CP_CONN_WS);
	c->in_len = 0; /* swallowed */
}

/* ---- stubs: the engine ---- */
static struct cp_engine_result result_of(const uint8_t a[3])
{
	struct cp_engine_result r;
	memset(&r, 0, sizeof(r));
	r.band = FG_BAND_SEED;
	r.reason = a[2] % 3 ? 0 : (int)(a[2] % FG_R__COUNT);
	r.status.outcome = (uint8_t)(a[0] % FG_O__COUNT);
	r.status.line = (uint8_t)(a[1] % 8 == 7 ? 0xFF : a[1] % 7);
	r.status.sign = a[1] >> 7;
	r.status.bitset = a[2] & 0x7F;
	r.status.expected = 0x2A;
	r.status.facts = a[0] >> 3 & 0x1F;
	r.status.line_state = a[1] >> 4 & 3;
	r.status.reason = (uint16_t)r.reason;
	r.status.dst_layer = 3;
	r.status.token_seq = 9;
	return r;
}
int cp_engine_submit(struct cp_engine *e, const struct fg_frame *f, uint64_t cookie)
{
	return cp_engine_submit_from(e, f, FG_LAYER_UNBOUND, NULL, cookie);
}

int cp_engine_submit_from(struct cp_engine *e, const struct fg_frame *f, int32_t bound, const struct fg_bm_src *from,
			  uint64_t cookie)
{
	FUZZ_CHECK(e == &eng && f != NULL);
	/* the router names the connection's peer as admission took it */
	FUZZ_CHECK(from != NULL && from->family == conn.src.family &&
		   !memcmp(from->addr, conn.src.addr, sizeof(from->addr)));
	/* a /layers/<L>/ path binds a layer the router has range-checked */
	FUZZ_CHECK(bound == FG_LAYER_UNBOUND || (bound >= 0 && bound < (int32_t)cfg.layers));
	FUZZ_CHECK(f->payload >= conn.in && f->payload + f->hdr.length <= conn.in + conn.in_len);
	switch (h.submit_mode) {
	case 0: {
		static const uint8_t a[3] = { 1, 1, 0 };
		struct cp_engine_result r = result_of(a);
		cp_http_on_done(cp_conn_by_cookie(&srv, cookie), &r);
		return 0;
	}
	case 1:
		h.pending = true;
		h.pending_cookie = cookie;
		return 0;
	case 2:
		return -EBUSY;
	default:
		return -EMSGSIZE;
	}
}
/* A POST body that is not whole frames (cp_engine.c counts it): the reason
 * is fg_batch_decode's, negative or not, never 0. */
void cp_engine_count_malformed(struct cp_engine *e, int reason)
{
	FUZZ_CHECK(e == &eng && reason != 0 && (reason < 0 ? -reason : reason) < FG_R__COUNT);
}
enum fg_slot_state cp_engine_lookup(const struct cp_engine *e, uint16_t layer, uint32_t token_seq,
				    const uint8_t **frame, size_t *len)
{
	FUZZ_CHECK(e == &eng && layer < cfg.layers);
	(void)token_seq;
	if (h.lookup == FG_SLOT_RESOLVED) {
		*frame = resolved_frame;
		*len = sizeof(resolved_frame);
	}
	return h.lookup;
}
struct cp_conn *cp_conn_by_cookie(struct cp_server *s, uint64_t cookie)
{
	FUZZ_CHECK(s == &srv);
	return cookie == cp_conn_cookie(&conn) ? &conn : NULL;
}

/* conn_process: one read's worth of plaintext has been decrypted. */
static void process(void)
{
	struct cp_conn *c = &conn;
	if (cp_conn_is_closing(c))
		return;
	c->in_process = true;
	if (c->state == CP_CONN_WS)
		cp_ws_on_data(c);
	else
		cp_http_on_data(c);
	c->in_process = false;
}

static void check_conn(void)
{
	const struct cp_conn *c = &conn;
	FUZZ_CHECK(c->in_len <= c->in_cap);
	if (c->state == CP_CONN_HTTP && !cp_conn_is_closing(c) && c->http.phase == CP_H_WAIT_SEED)
		FUZZ_CHECK(c->on_list && c->proto_blocked);
	/* a connection that stays open and reads heads is not blocked (one that
	 * is closing may be: a 504 no_outcome closes while the outcome wait is on) */
	if (c->state == CP_CONN_HTTP && !cp_conn_is_closing(c) && c->http.phase == CP_H_HEAD)
		FUZZ_CHECK(!c->proto_blocked);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	memset(&h, 0, sizeof(h));
	memset(&srv, 0, sizeof(srv));
	memset(&eng, 0, sizeof(eng));
	memset(&cfg, 0, sizeof(cfg));
	memset(&conn, 0, sizeof(conn));
	h.now = 1000000000ull;
	h.lookup = FG_SLOT_OPEN;
	cfg.layers = 28;
	cfg.slot_deadline_ns = 500000000ull;
	cfg.handshake_timeout_ms = 5000;
	cfg.idle_timeout_ms = 60000;
	fg_bands_default(&eng.bands);
	eng.bands.n_layers = cfg.layers;
	eng.limits = (struct fg_seed_limits){ .hidden = 4, .max_seq_len = 8, .orientation = FG_ORIENT_BIT };
	eng.cfg = &cfg;
	srv.cfg = &cfg;
	srv.engine = &eng;
	cp_http_limits_default(&srv.hlim);
	srv.hlim.max_body = 2048;
	srv.hlim.max_request_line = 512;
	srv.hlim.max_header_bytes = 1024;
	for (unsigned i = 0; i < sizeof(resolved_frame); i++)
		resolved_frame[i] = (uint8_t)i;
	conn.srv = &srv;
	conn.idx = 3;
	conn.gen = 7;
	conn.src = (struct cp_admit_src){.family = 4, .addr = {192, 0, 2, 7}};
	conn.state = CP_CONN_HTTP;
	conn.in = inbuf;
	conn.in_cap = conn.in_max = IN_CAP;
	conn.http.phase = CP_H_HEAD;
	snprintf(conn.peer, sizeof(conn.peer), "fuzz");
	cp_conn_set_deadline(&conn, CP_DL_HEAD, 5000000000ull);

	while (p < end && !cp_conn_is_closing(&conn)) {
		uint8_t op = *p++ % 5;
		if (op == 0) {
			if (p == end)
				break;
			size_t n = *p++;
			if ((size_t)(end - p) < n)
				n = (size_t)(end - p);
			size_t room = conn.in_cap - conn.in_len;
			memcpy(conn.in + conn.in_len, p, n < room ? n : room);
			conn.in_len += n < room ? n : room;
			p += n;
			process();
		} else if (op == 1) {
			if (end - p < 3)
				break;
			struct cp_engine_result r = result_of(p);
			p += 3;
			if (h.pending) {
				h.pending = false;
				struct cp_conn *c = cp_conn_by_cookie(&srv, h.pending_cookie);
				if (c && !cp_conn_is_dead(c))
					cp_http_on_done(c, &r);
			}
		} else if (op == 2) {
			if (p == end)
				break;
			enum fg_slot_state st = (enum fg_slot_state)(*p++ % 5);
			if (conn.on_list && conn.state == CP_CONN_HTTP)
				cp_http_on_seed(&conn, st, st == FG_SLOT_RESOLVED ? resolved_frame : NULL,
						st == FG_SLOT_RESOLVED ? sizeof(resolved_frame) : 0);
		} else if (op == 3) {
			if (conn.dl_kind != CP_DL_NONE && conn.state == CP_CONN_HTTP) {
				h.now = conn.deadline_ns;
				cp_http_on_timeout(&conn);
			}
		} else {
			if (p == end)
				break;
			h.submit_mode = *p & 3;
			h.lookup = (enum fg_slot_state)((*p >> 2) % 5);
			conn.tls.peer_verified = (*p >> 5) & 1;
			h.fail_put = (*p >> 6) & 1;
			p++;
		}
		check_conn();
	}
	FUZZ_CHECK(!h.in_body);
	FUZZ_CHECK(!h.put_failed || h.closed);
	cp_http_fini(&conn); /* the connection's release (conn_free_done) */
	return 0;
}

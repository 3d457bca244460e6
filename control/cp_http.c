/* cp_http.c - HTTP/1.1 routing of the control plane on top of D2's request
 * parser (cp_http_parse.h): keep-alive, one request at a time (pipelined
 * requests wait in the input buffer), bounded heads and bodies.
 *
 *   GET  /healthz                          200 JSON, no auth
 *   GET  /flow?layers=..&status=..         101 -> WebSocket session (auth)
 *   POST /residual-seed                    one seed frame -> JSON ack (auth)
 *   POST /canonical                        one canonical frame -> JSON ack (auth)
 *   GET  /residual-seed/<layer>/<token>    the resolved-seed frame, waiting
 *                                          up to the slot deadline (auth)
 *   POST /layers/<L>/residual-seed         the same, addressed the fleet's way:
 *   POST /layers/<L>/canonical             a station's base URL is
 *   GET  /layers/<L>/residual-seed/<token> https://host:port/layers/<L>; the
 *                                          frame is for layer L and its
 *                                          stream's low 4 bits must equal
 *                                          L & 0x0F (wire.md section 3)
 *
 * Auth: "Authorization: Bearer <token>" checked on every request (a resumed
 * TLS session re-presents it), or a verified client certificate (mTLS). A
 * bearer that is presented and wrong is refused even with a valid
 * certificate. Role "consumer" may read (GET, /flow) but not send frames.
 *
 * Loop thread only. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cp_audit.h"
#include "cp_epoch_guard.h"
#include "cp_log.h"
#include "cp_points.h"
#include "cp_server.h"

static const char ct_json[] = "application/json";

static bool str_eq(struct cp_http_str s, const char *lit)
{
	size_t n = strlen(lit);
	return s.len == n && memcmp(s.p, lit, n) == 0;
}

static void http_reset(struct cp_conn *c)
{
	size_t used = c->http.head_len + (size_t)c->http.body_len;
	if (used > c->in_len)
		used = c->in_len;
	memmove(c->in, c->in + used, c->in_len - used);
	c->in_len -= used;
	cp_http_fini(c);
	memset(&c->http, 0, sizeof(c->http));
	c->http.phase = CP_H_HEAD;
	c->http.bound_layer = FG_LAYER_UNBOUND;
	const struct fg_config *cfg = c->srv->cfg;
	if (c->in_len) {
		c->http.started = true;
		cp_conn_set_deadline(c, CP_DL_HEAD, (uint64_t)cfg->handshake_timeout_ms * 1000000ull);
	} else {
		/* A peer that never authenticated (a /healthz client) may idle
		 * only as long as a handshake may take (admission, docs/hardening.md). */
		uint32_t ms = c->authed ? cfg->idle_timeout_ms : cfg->handshake_timeout_ms;
		cp_conn_set_deadline(c, CP_DL_IDLE, (uint64_t)ms * 1000000ull);
	}
}

/* Write a whole response; keep decides between the next request and a
 * graceful close. The request is consumed either way. */
static void http_respond(struct cp_conn *c, int status, const char *ctype, const void *body, size_t len,
			 const char *extra, bool keep)
{
	char head[1024];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nServer: fanogate\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			 "Cache-Control: no-store\r\n%s%s\r\n",
			 status, cp_http_status_text(status), ctype, len, extra ? extra : "",
			 keep ? "" : "Connection: close\r\n");
	if (n < 0 || (size_t)n >= sizeof(head) || cp_conn_put(c, head, (size_t)n) < 0 ||
	    (!c->http.is_head && len && cp_conn_put(c, body, len) < 0)) {
		cp_conn_close(c, "cannot write response");
		return;
	}
	cp_conn_flush(c);
	if (status >= 400)
		c->srv->st.http_errors++;
	cp_debug("conn %s: HTTP %d", c->peer, status);
	if (!keep) {
		cp_conn_close_after_flush(c, "response with Connection: close");
		return;
	}
	http_reset(c);
}

static void http_json(struct cp_conn *c, int status, json_t *j, const char *extra, bool keep)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	json_decref(j);
	if (!s) {
		http_respond(c, 500, ct_json, "{\"error\":\"no_memory\"}", 21, NULL, false);
		return;
	}
	size_t n = strlen(s);
	char *b = malloc(n + 1);
	if (!b) {
		free(s);
		http_respond(c, 500, ct_json, "{\"error\":\"no_memory\"}", 21, NULL, false);
		return;
	}
	memcpy(b, s, n);
	b[n] = '\n';
	free(s);
	http_respond(c, status, ct_json, b, n + 1, extra, keep);
	free(b);
}

void cp_http_error(struct cp_conn *c, int status, const char *reason, bool keep)
{
	const char *extra = NULL;
	if (status == 401)
		extra = "WWW-Authenticate: Bearer realm=\"fanogate\"\r\n";
	else if (status == 426)
		extra = "Sec-WebSocket-Version: 13\r\nUpgrade: websocket\r\n";
	else if (status == 405)
		extra = "Allow: GET, HEAD, POST\r\n";
	http_json(c, status, json_pack("{s:s}", "error", reason), extra, keep);
}

/* 0 with c->role set, or the 401/403 is already answered and -EACCES. */
static int http_auth(struct cp_conn *c, const struct cp_http_req *req)
{
	struct cp_server *s = c->srv;
	struct cp_http_str tok;
	int r = cp_http_bearer(req, &tok);
	const char *role = NULL;
	const char *reason = NULL;
	if (r == 0) {
		if (cp_tls_token_ok(&s->tls, tok.p, tok.len, &role)) {
			cp_conn_set_role(c, role);
			cp_conn_authenticated(c);
			return 0;
		}
		reason = "bad_token";
	} else if (r == -CP_HTTP_R_AUTH_MISSING && c->tls.peer_verified) {
		cp_conn_set_role(c, c->tls.cert_role);
		cp_conn_authenticated(c);
		return 0;
	} else {
		reason = cp_http_reason_name(r);
	}
	s->st.auth_failures++;
	cp_info("conn %s: authentication refused: %s", c->peer, reason);
	cp_audit_auth_failure(s->audit, c->peer, reason);
	cp_http_error(c, 401, reason, false);
	return -EACCES;
}

static bool role_may_send(const struct cp_conn *c) { return !c->role || strcmp(c->role, "consumer") != 0; }

static bool parse_u32(const char *p, size_t n, uint32_t *out)
{
	if (n == 0 || n > 10 || (n > 1 && p[0] == '0'))
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	if (v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* ---- JSON ack of wire.md section 5 ------------------------------------------ */
static int ack_status(const struct fg_status *st)
{
	if (st->facts & FG_FACT_ACK)
		return 200;
	switch (st->outcome) {
	case FG_O_MALFORMED:
		return 400;
	case FG_O_LINE_DISABLED:
		return 403;
	case FG_O_NO_SLOT:
		return 503;
	case FG_O_LATE:
	case FG_O_EXPIRED:
		return 410; /* the slot is gone: answered, not re-added */
	default:
		return 409;
	}
}

static json_t *ack_json(const struct fg_status *st, int reason)
{
	char fp[17];
	snprintf(fp, sizeof(fp), "%016" PRIx64, st->fingerprint);
	bool ack = (st->facts & FG_FACT_ACK) != 0;
	const char *outcome = fg_outcome_name((enum fg_outcome)st->outcome);
	json_t *j = json_pack("{s:b,s:s,s:I,s:I,s:I,s:I,s:i,s:I,s:b,s:b,s:b,s:I,s:s,s:s}", "ack", ack, "outcome",
			      outcome, "dst_layer", (json_int_t)st->dst_layer, "token_seq", (json_int_t)st->token_seq,
			      "bitset", (json_int_t)st->bitset, "expected", (json_int_t)st->expected, "sign",
			      st->sign ? -1 : 1, "bytes", (json_int_t)st->bytes, "shadow_mode",
			      (st->facts & FG_FACT_SHADOW) != 0, "fully_resolved", (st->facts & FG_FACT_RESOLVED) != 0,
			      "awaiting_resolution", (st->facts & FG_FACT_AWAITING) != 0, "model_epoch",
			      (json_int_t)st->model_epoch, "fingerprint", fp, "line_state",
			      fg_line_state_name((enum fg_line_state)st->line_state));
	if (!j)
		return NULL;
	json_object_set_new(j, "line", st->line == FG_LINE_NONE ? json_null() : json_integer(st->line));
	json_object_set_new(j, "degraded", json_boolean((st->facts & FG_FACT_DEGRADED) != 0));
	json_object_set_new(j, "landed", json_integer(st->landed));
	if (!ack)
		json_object_set_new(j, "error",
				    json_string(st->outcome == FG_O_MALFORMED ? fg_reason_name(reason ? reason : st->reason)
									      : outcome));
	return j;
}

/* "audit": whether the shadow verdict this frame feeds can still be recorded
 * ("recording"), cannot ("failed": the log failed closed, e.g. disk full),
 * or no audit runs ("off"). docs/hardening.md, item 7. */
static const char *audit_state(const struct cp_conn *c)
{
	const struct cp_audit *a = c->srv->audit;
	if (!cp_audit_is_running(a))
		return "off";
	return cp_audit_is_failed(a) ? "failed" : "recording";
}

static void http_ack(struct cp_conn *c, const struct fg_status *st, int reason)
{
	json_t *j = ack_json(st, reason);
	int status = ack_status(st);
	const char *as = audit_state(c);
	if (j)
		json_object_set_new(j, "audit", json_string(as));
	if (j && c->http.route == CP_RT_CANON_POST && !strcmp(as, "failed") && (st->facts & FG_FACT_ACK)) {
		/* A canonical report serves only the audit, which can no longer
		 * record its verdict: not acknowledged (the seed's own ack stays
		 * true: it is in its slot and is delivered; "audit" says the rest). */
		json_object_set_new(j, "ack", json_false());
		json_object_set_new(j, "error", json_string("audit_failed"));
		status = 503;
	}
	http_json(c, status, j, NULL, c->http.keep_alive);
}

/* A frame that never reached the engine (bad body, wrong band, no room). */
static void http_refuse_frame(struct cp_conn *c, const uint8_t *body, size_t len, enum fg_outcome o,
			      const char *error, int status)
{
	struct fg_status st;
	memset(&st, 0, sizeof(st));
	st.outcome = (uint8_t)o;
	st.line = FG_LINE_NONE;
	/* As the ingest answers a malformed frame: never a reason to skip the
	 * canonical hop, and the current epoch. */
	st.facts = FG_FACT_SHADOW;
	st.model_epoch = c->srv->engine->epoch;
	if (len >= FG_HDR_LEN) {
		st.token_seq = fg_be32(body + 2);
		enum fg_band band;
		uint16_t layer;
		if (fg_stream_classify_at(&c->srv->engine->bands, fg_be16(body), c->http.bound_layer, &band, &layer) == 0)
			st.dst_layer = layer;
		else if (c->http.bound_layer >= 0)
			st.dst_layer = (uint16_t)c->http.bound_layer;
	}
	json_t *j = ack_json(&st, 0);
	if (j)
		json_object_set_new(j, "error", json_string(error));
	http_json(c, status, j, NULL, c->http.keep_alive);
}

void cp_http_on_done(struct cp_conn *c, const struct cp_engine_result *r)
{
	if (c->http.phase != CP_H_WAIT_OUTCOME)
		return;
	http_ack(c, &r->status, r->reason);
	cp_conn_unblock(c);
}

static void http_post_body(struct cp_conn *c)
{
	struct cp_server *s = c->srv;
	const uint8_t *body = c->in + c->http.head_len;
	size_t len = (size_t)c->http.body_len;
	/* The body is in: the outcome's wait is bounded by the idle timeout. */
	cp_conn_set_deadline(c, CP_DL_IDLE, (uint64_t)s->cfg->idle_timeout_ms * 1000000ull);
	struct fg_frame f[2];
	int n = fg_batch_decode(body, len, f, 2);
	if (n < 0) {
		/* Not whole frames: a malformed frame under its codec reason, the
		 * same counter and the same reason in the ack as a frame the
		 * ingest refuses. */
		cp_engine_count_malformed(s->engine, n);
		http_refuse_frame(c, body, len, FG_O_MALFORMED, fg_reason_name(n), 400);
		return;
	}
	/* Whole frames, but not exactly one of the route's band: refused at
	 * the HTTP level (empty_body, multiple_frames, wrong_band), no frame
	 * is counted. */
	if (n != 1) {
		http_refuse_frame(c, body, len, FG_O_MALFORMED, n == 0 ? "empty_body" : "multiple_frames", 400);
		return;
	}
	enum fg_band band;
	uint16_t layer;
	bool want_seed = c->http.route == CP_RT_SEED_POST;
	if (fg_stream_classify_at(&s->engine->bands, f[0].hdr.stream_id, c->http.bound_layer, &band, &layer) == 0 &&
	    band != (want_seed ? FG_BAND_SEED : FG_BAND_CANONICAL) &&
	    (band == FG_BAND_SEED || band == FG_BAND_CANONICAL)) {
		http_refuse_frame(c, body, len, FG_O_MALFORMED, "wrong_band", 400);
		return;
	}
	c->http.phase = CP_H_WAIT_OUTCOME;
	c->proto_blocked = true;
	const struct fg_bm_src from = cp_conn_source(c);
	int r = cp_engine_submit_from(s->engine, &f[0], c->http.bound_layer, &from, cp_conn_cookie(c));
	if (r < 0) {
		c->proto_blocked = false;
		c->http.phase = CP_H_BODY;
		http_refuse_frame(c, body, len, FG_O_NO_SLOT, r == -EMSGSIZE ? "too_large" : "busy",
				  r == -EMSGSIZE ? 413 : 503);
		return;
	}
	/* Local engine: the answer is already written (cp_http_on_done). */
}

/* ---- GET /residual-seed/<layer>/<token_seq> ---------------------------------- */
void cp_http_on_seed(struct cp_conn *c, enum fg_slot_state st, const uint8_t *frame, size_t len)
{
	if (c->http.phase != CP_H_WAIT_SEED)
		return;
	cp_conn_list_del(&c->srv->wait_list, c);
	switch (st) {
	case FG_SLOT_RESOLVED:
		http_respond(c, 200, "application/octet-stream", frame, len, NULL, c->http.keep_alive);
		break;
	case FG_SLOT_POISONED:
		cp_http_error(c, 409, "poisoned", c->http.keep_alive);
		break;
	case FG_SLOT_EXPIRED:
		cp_http_error(c, 504, "expired", c->http.keep_alive);
		break;
	case FG_SLOT_OPEN:
		cp_http_error(c, 504, "not_resolved", c->http.keep_alive);
		break;
	default:
		cp_http_error(c, 404, "unknown_slot", c->http.keep_alive);
		break;
	}
	cp_conn_unblock(c);
}

static void http_seed_wait(struct cp_conn *c, uint32_t layer, uint32_t token);

/* GET /layers/<L>/residual-seed/<token>: rest is "<token>". */
static void http_seed_get_at(struct cp_conn *c, uint32_t layer, struct cp_http_str rest)
{
	uint32_t token;
	if (!parse_u32(rest.p, rest.len, &token)) {
		cp_http_error(c, 404, "not_found", c->http.keep_alive);
		return;
	}
	http_seed_wait(c, layer, token);
}

static void http_seed_get(struct cp_conn *c, struct cp_http_str rest)
{
	const char *slash = memchr(rest.p, '/', rest.len);
	uint32_t layer, token;
	if (!slash || !parse_u32(rest.p, (size_t)(slash - rest.p), &layer) ||
	    !parse_u32(slash + 1, rest.len - (size_t)(slash + 1 - rest.p), &token)) {
		cp_http_error(c, 404, "not_found", c->http.keep_alive);
		return;
	}
	http_seed_wait(c, layer, token);
}

static void http_seed_wait(struct cp_conn *c, uint32_t layer, uint32_t token)
{
	struct cp_server *s = c->srv;
	if (layer >= s->cfg->layers) {
		cp_http_error(c, 400, "bad_layer", c->http.keep_alive);
		return;
	}
	const uint8_t *frame = NULL;
	size_t len = 0;
	enum fg_slot_state st = cp_engine_lookup(s->engine, (uint16_t)layer, token, &frame, &len);
	c->http.wait_layer = (uint16_t)layer;
	c->http.wait_token = token;
	c->http.phase = CP_H_WAIT_SEED;
	if (st == FG_SLOT_RESOLVED || st == FG_SLOT_POISONED || st == FG_SLOT_EXPIRED) {
		cp_http_on_seed(c, st, frame, len);
		return;
	}
	/* Wait: woken by the engine's resolved/ended events, or answered at the
	 * slot deadline (cp_http_on_timeout). */
	c->proto_blocked = true;
	cp_conn_list_add(&s->wait_list, c);
	cp_conn_set_deadline(c, CP_DL_WAIT, s->cfg->slot_deadline_ns);
}

void cp_http_on_timeout(struct cp_conn *c)
{
	if (c->http.phase == CP_H_WAIT_SEED) {
		const uint8_t *frame = NULL;
		size_t len = 0;
		enum fg_slot_state st =
			cp_engine_lookup(c->srv->engine, c->http.wait_layer, c->http.wait_token, &frame, &len);
		cp_http_on_seed(c, st, frame, len);
		return;
	}
	if (c->http.phase == CP_H_WAIT_OUTCOME) {
		/* The dataplane never answered: do not hold the peer forever. */
		c->http.phase = CP_H_HEAD;
		cp_http_error(c, 504, "no_outcome", false);
		return;
	}
	cp_http_error(c, 408, "request_timeout", false);
}

/* ---- routing -------------------------------------------------------------------- */
static void http_healthz(struct cp_conn *c)
{
	struct cp_server *s = c->srv;
	json_t *j = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I}", "status", "ok", "mode",
			      s->engine->lanes_mode ? "dataplane" : "local", "connections", (json_int_t)s->n_conns,
			      "uptime_ms", (json_int_t)((cp_now_ns() - s->started_ns) / 1000000ull), "model_epoch",
			      (json_int_t)s->engine->epoch, "seeds_resolved", (json_int_t)s->engine->st.resolved);
	if (j)
		json_object_set_new(j, "lanes", json_integer(s->engine->b ? s->engine->b->n_lanes : 0));
	http_json(c, 200, j, NULL, c->http.keep_alive);
}

static void http_flow(struct cp_conn *c, const struct cp_http_req *req)
{
	struct cp_server *s = c->srv;
	int r = cp_http_ws_check(req);
	if (r < 0) {
		cp_http_error(c, cp_http_reason_status(r), cp_http_reason_name(r), false);
		return;
	}
	if (req->has_content_length && req->content_length) {
		cp_http_error(c, 400, "body_on_upgrade", false);
		return;
	}
	if (http_auth(c, req) < 0)
		return;
	struct cp_flow_query q;
	r = cp_flow_query_parse(req->query, s->cfg->layers, &q);
	if (r < 0) {
		cp_http_error(c, cp_http_reason_status(r), cp_http_reason_name(r), false);
		return;
	}
	char accept[CP_WS_ACCEPT_LEN + 1];
	if (cp_ws_accept_key(req->ws_key.p, req->ws_key.len, accept) < 0) {
		cp_log_ssl(CP_LOG_ERR, "conn %s: Sec-WebSocket-Accept failed", c->peer);
		cp_http_error(c, 500, "internal", false);
		return;
	}
	char resp[512];
	int n = snprintf(resp, sizeof(resp),
			 "HTTP/1.1 101 Switching Protocols\r\nServer: fanogate\r\nUpgrade: websocket\r\n"
			 "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s\r\n",
			 accept, req->ws_protocol_aeon_flow ? "Sec-WebSocket-Protocol: aeon-flow\r\n" : "");
	if (cp_conn_put(c, resp, (size_t)n) < 0) {
		cp_conn_close(c, "cannot write upgrade");
		return;
	}
	cp_conn_flush(c);
	/* The head is consumed; bytes after it are already WebSocket frames. */
	size_t used = c->http.head_len;
	memmove(c->in, c->in + used, c->in_len - used);
	c->in_len -= used;
	memset(&c->http, 0, sizeof(c->http));
	cp_ws_start(c, &q);
}

/* "/layers/<L>/rest": strip the prefix into *bound (L < layers) and leave
 * "/rest" in *path. 1 when the path had the prefix, 0 when not, -1 when it
 * had it with a bad layer (answered). */
static int http_layer_prefix(struct cp_conn *c, struct cp_http_str *path, int32_t *bound)
{
	static const char pre[] = "/layers/";
	size_t n = sizeof(pre) - 1;
	if (path->len <= n || memcmp(path->p, pre, n) != 0)
		return 0;
	const char *p = path->p + n, *end = path->p + path->len;
	const char *slash = memchr(p, '/', (size_t)(end - p));
	uint32_t layer;
	if (!slash || !parse_u32(p, (size_t)(slash - p), &layer)) {
		cp_http_error(c, 404, "not_found", false);
		return -1;
	}
	if (layer >= c->srv->cfg->layers) {
		cp_http_error(c, 400, "bad_layer", false);
		return -1;
	}
	*bound = (int32_t)layer;
	*path = (struct cp_http_str){slash, (size_t)(end - slash)};
	return 1;
}

static void http_route(struct cp_conn *c, const struct cp_http_req *req)
{
	struct cp_server *s = c->srv;
	struct cp_http_str path = req->path;
	static const char seed_prefix[] = "/residual-seed/";
	c->http.is_head = req->method == CP_HTTP_HEAD;
	c->http.bound_layer = FG_LAYER_UNBOUND;
	s->st.http_requests++;
	int lp = http_layer_prefix(c, &path, &c->http.bound_layer);
	if (lp < 0)
		return;
	if (lp == 0 && str_eq(path, "/healthz")) {
		if (req->method == CP_HTTP_POST) {
			cp_http_error(c, 405, "method_not_allowed", false);
			return;
		}
		http_healthz(c);
		return;
	}
	if (lp == 0 && str_eq(path, "/flow")) {
		http_flow(c, req);
		return;
	}
	if (str_eq(path, "/residual-seed") || str_eq(path, "/canonical")) {
		if (req->method != CP_HTTP_POST) {
			cp_http_error(c, 405, "method_not_allowed", false);
			return;
		}
		if (http_auth(c, req) < 0)
			return;
		if (!role_may_send(c)) {
			cp_http_error(c, 403, "role_may_not_send", false);
			return;
		}
		c->http.route = str_eq(path, "/canonical") ? CP_RT_CANON_POST : CP_RT_SEED_POST;
		if (c->http.route == CP_RT_CANON_POST && !cp_epoch_guard_role_may_report(c->role)) {
			/* Only the coordinator's reports reach the shadow audit
			 * (a report is a verdict, a demotion, a page). */
			c->srv->st.canon_refused_role++;
			cp_info("conn %s: canonical report refused: role %s is not %s", c->peer, c->role ? c->role : "-",
				CP_ROLE_COORDINATOR);
			cp_http_error(c, 403, "canonical_role", false);
			return;
		}
		c->http.body_len = req->content_length;
		c->http.phase = CP_H_BODY;
		cp_conn_body_deadline(c, c->http.body_len); /* [tls] body_min_rate */
		if (req->expect_continue && c->in_len < c->http.head_len + c->http.body_len) {
			static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
			if (cp_conn_put(c, cont, sizeof(cont) - 1) < 0) {
				cp_conn_close(c, "cannot write 100");
				return;
			}
			cp_conn_flush(c);
		}
		return;
	}
	if (path.len > sizeof(seed_prefix) - 1 && !memcmp(path.p, seed_prefix, sizeof(seed_prefix) - 1)) {
		if (req->method == CP_HTTP_POST) {
			cp_http_error(c, 405, "method_not_allowed", false);
			return;
		}
		if (req->has_content_length && req->content_length) {
			cp_http_error(c, 400, "body_on_get", false);
			return;
		}
		if (http_auth(c, req) < 0)
			return;
		struct cp_http_str rest = {path.p + sizeof(seed_prefix) - 1, path.len - (sizeof(seed_prefix) - 1)};
		c->http.route = CP_RT_SEED_GET;
		if (lp > 0)
			http_seed_get_at(c, (uint32_t)c->http.bound_layer, rest);
		else
			http_seed_get(c, rest);
		return;
	}
	/* A GET or HEAD with a body we do not route: the body must still be
	 * skipped to keep the framing, so close instead. */
	cp_http_error(c, 404, "not_found", !(req->has_content_length && req->content_length) && req->keep_alive);
}

void cp_http_fini(struct cp_conn *c)
{
	free(c->http.hp);
	c->http.hp = NULL;
}

void cp_http_on_data(struct cp_conn *c)
{
	struct cp_server *s = c->srv;
	while (!cp_conn_is_closing(c) && !c->proto_blocked && c->state == CP_CONN_HTTP) {
		if (c->http.phase == CP_H_HEAD) {
			if (!c->in_len)
				return;
			if (!c->http.started) {
				c->http.started = true;
				/* A new head on a kept-alive connection gets its own
				 * head deadline (slowloris). The first request keeps the
				 * accept-time deadline. */
				if (c->dl_kind == CP_DL_IDLE)
					cp_conn_set_deadline(c, CP_DL_HEAD,
							     (uint64_t)s->cfg->handshake_timeout_ms * 1000000ull);
			}
			/* The parse resumes where the last record left it: a head
			 * arriving in many records is examined once. Its state
			 * lives on the heap only while the head is partial. */
			struct cp_http_req req;
			struct cp_http_parser local, *hp = c->http.hp;
			if (!hp) {
				cp_http_parser_init(&local);
				hp = &local;
			}
			ssize_t r = cp_http_parser_run(hp, c->in, c->in_len, &s->hlim, &req);
			if (r == -CP_HTTP_R_INCOMPLETE) {
				if (hp == &local) {
					c->http.hp = malloc(sizeof(*hp));
					if (!c->http.hp) {
						cp_conn_close(c, "out of memory");
						return;
					}
					memcpy(c->http.hp, &local, sizeof(local));
				}
				return;
			}
			cp_http_fini(c);
			if (r < 0) {
				cp_info("conn %s: bad request: %s", c->peer, cp_http_reason_name((int)r));
				cp_http_error(c, cp_http_reason_status((int)r), cp_http_reason_name((int)r), false);
				return;
			}
			c->http.head_len = (size_t)r;
			c->http.keep_alive = req.keep_alive && !s->stopping;
			c->http.body_len = 0;
			/* Time from here on is the body's or the wait's, bounded by
			 * the idle timeout. */
			cp_conn_set_deadline(c, CP_DL_IDLE, (uint64_t)s->cfg->idle_timeout_ms * 1000000ull);
			http_route(c, &req);
			if (c->state == CP_CONN_WS) {
				if (c->in_len)
					cp_ws_on_data(c);
				return;
			}
			continue;
		}
		if (c->http.phase == CP_H_BODY) {
			if (c->in_len < c->http.head_len + c->http.body_len)
				return;
			http_post_body(c);
			continue;
		}
		return; /* waiting: proto_blocked is set */
	}
}

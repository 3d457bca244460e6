/* test_http_parse.c - unit tests for control/proto/cp_http_parse.c.
 *
 * 1. Valid request heads with their parsed fields; every strict prefix of
 *    each is -incomplete; all of them parsed ending at a PROT_NONE page.
 * 2. One malformed head per reason (and several per syntax rule); every
 *    prefix of each is -incomplete or the same reason, never another.
 * 3. Every limit at its value (accepted) and one past it (refused), whether
 *    or not the terminator has arrived.
 * 4. Keep-alive matrix, pipelining, bodies, WebSocket handshake checks,
 *    Bearer extraction, /flow query parsing, reason names and statuses.
 * 5. Single-byte mutations of a valid head: always a known outcome.
 * 6. The resumable parse (cp_http_parser): every vector fed one byte at a
 *    time, in a buffer that moves on every call, gives the one-shot verdict
 *    and fields with the same work; the work on a large head fed byte by
 *    byte is linear in its length (bytes examined, counted by the parser). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cp_http_parse.h"
#include "doc_check.h"
#include "guard_buf.h"

static struct cp_http_limits lim;

static ssize_t parse_g(const char *s, size_t n, const struct cp_http_limits *l,
		       struct cp_http_req *r)
{
	const uint8_t *p = guard_place(s, n);
	return cp_http_parse_request(p, n, l, r);
}

static ssize_t parse(const char *s, struct cp_http_req *r)
{
	return parse_g(s, strlen(s), &lim, r);
}

static bool str_is(struct cp_http_str s, const char *lit)
{
	return s.len == strlen(lit) && memcmp(s.p, lit, s.len) == 0;
}

/* ---- 1. valid heads ------------------------------------------------------ */

struct good {
	const char *in;
	size_t body;          /* bytes of body after the head in `in` */
	enum cp_http_method method;
	const char *path, *query; /* query NULL: none */
	int minor;
	uint64_t clen;        /* (uint64_t)-1: no Content-Length */
	bool keep_alive;
	unsigned n_headers;
};

static const struct good goods[] = {
	{ "GET / HTTP/1.1\r\nHost: a\r\n\r\n", 0, CP_HTTP_GET, "/", NULL, 1, (uint64_t)-1, true, 1 },
	{ "GET /healthz HTTP/1.0\r\n\r\n", 0, CP_HTTP_GET, "/healthz", NULL, 0, (uint64_t)-1, false, 0 },
	{ "HEAD /healthz HTTP/1.1\r\nHost: x:8443\r\nConnection: close\r\n\r\n", 0, CP_HTTP_HEAD,
	  "/healthz", NULL, 1, (uint64_t)-1, false, 2 },
	{ "GET /flow?layers=1,2,27&status=0 HTTP/1.1\r\nHost: gw\r\nUpgrade: websocket\r\n"
	  "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	  "Sec-WebSocket-Version: 13\r\nAuthorization: Bearer abc.DEF-123_~+/==\r\n\r\n",
	  0, CP_HTTP_GET, "/flow", "layers=1,2,27&status=0", 1, (uint64_t)-1, true, 6 },
	{ "POST /residual-seed HTTP/1.1\r\nHost: gw\r\nContent-Type: application/octet-stream\r\n"
	  "Content-Length: 5\r\n\r\nHELLO",
	  5, CP_HTTP_POST, "/residual-seed", NULL, 1, 5, true, 3 },
	{ "POST /canonical HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", 0,
	  CP_HTTP_POST, "/canonical", NULL, 0, 0, true, 2 },
	{ "GET /residual-seed/3/17?x HTTP/1.1\r\nhOsT:h\r\nX-Empty:\r\nX-Tabs:\t v \t\r\n\r\n", 0,
	  CP_HTTP_GET, "/residual-seed/3/17", "x", 1, (uint64_t)-1, true, 3 },
	{ "GET /a%20b/c;p=1:@!$&'()*+,=-._~?q=/?%41 HTTP/1.1\r\nHost: h\r\n"
	  "X-Obs: caf\xc3\xa9\r\n\r\n", 0,
	  CP_HTTP_GET, "/a%20b/c;p=1:@!$&'()*+,=-._~", "q=/?%41", 1, (uint64_t)-1, true, 2 },
	{ "GET /? HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, close\r\n\r\n", 0, CP_HTTP_GET, "/",
	  "", 1, (uint64_t)-1, false, 2 },
	{ "POST /residual-seed HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 0007\r\n\r\n",
	  0, CP_HTTP_POST, "/residual-seed", NULL, 1, 7, true, 3 },
};

static void check_good(const struct good *g, const struct cp_http_req *r, ssize_t n)
{
	size_t total = strlen(g->in);
	assert_int_equal(n, (ssize_t)(total - g->body));
	assert_int_equal(r->method, g->method);
	assert_true(str_is(r->path, g->path));
	if (g->query) {
		assert_true(r->has_query);
		assert_true(str_is(r->query, g->query));
	} else {
		assert_false(r->has_query);
		assert_int_equal(r->query.len, 0);
	}
	assert_int_equal(r->version_minor, g->minor);
	if (g->clen == (uint64_t)-1) {
		assert_false(r->has_content_length);
	} else {
		assert_true(r->has_content_length);
		assert_int_equal(r->content_length, g->clen);
	}
	assert_int_equal(r->keep_alive, g->keep_alive);
	assert_int_equal(r->n_headers, g->n_headers);
}

static void test_good_and_prefixes(void **state)
{
	for (size_t i = 0; i < FG_ARRAY_LEN(goods); i++) {
		const struct good *g = &goods[i];
		size_t total = strlen(g->in);
		struct cp_http_req r;
		ssize_t n = parse_g(g->in, total, &lim, &r);
		if (n < 0)
			fail_msg("vector %zu: %s", i, cp_http_reason_name((int)n));
		check_good(g, &r, n);
		/* every strict prefix of the head: incomplete, and *r untouched */
		size_t head = total - g->body;
		for (size_t k = 0; k < head; k++) {
			struct cp_http_req r2;
			memset(&r2, 0xa5, sizeof(r2));
			ssize_t m = parse_g(g->in, k, &lim, &r2);
			if (m != -CP_HTTP_R_INCOMPLETE)
				fail_msg("vector %zu prefix %zu: %zd %s", i, k, m,
					 cp_http_reason_name((int)m));
			assert_int_equal(((uint8_t *)&r2)[0], 0xa5);
		}
	}
}

static void test_good_fields(void **state)
{
	struct cp_http_req r;
	ssize_t n = parse(goods[3].in, &r);
	assert_true(n > 0);
	assert_true(str_is(r.host, "gw"));
	assert_true(r.upgrade_websocket);
	assert_true(r.conn_upgrade);
	assert_int_equal(r.n_ws_key, 1);
	assert_true(str_is(r.ws_key, "dGhlIHNhbXBsZSBub25jZQ=="));
	assert_true(str_is(r.ws_version, "13"));
	assert_false(r.ws_protocol_offered);
	assert_int_equal(cp_http_ws_check(&r), 0);
	const struct cp_http_header *h = cp_http_header_find(&r, "SEC-websocket-VERSION");
	assert_non_null(h);
	assert_true(str_is(h->value, "13"));
	assert_null(cp_http_header_find(&r, "Origin"));

	/* trimmed values, empty value, header names as sent */
	n = parse(goods[6].in, &r);
	assert_true(n > 0);
	assert_true(str_is(r.host, "h"));
	assert_true(str_is(r.headers[0].name, "hOsT"));
	assert_true(str_is(r.headers[1].value, ""));
	assert_true(str_is(r.headers[2].value, "v"));

	n = parse(goods[9].in, &r);
	assert_true(n > 0);
	assert_true(r.expect_continue);
}

static void test_pipelined_and_body(void **state)
{
	const char *two = "GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n";
	struct cp_http_req r;
	ssize_t n = parse(two, &r);
	assert_int_equal(n, 28);
	assert_true(str_is(r.path, "/a"));
	ssize_t m = parse(two + n, &r);
	assert_int_equal(m, 28);
	assert_true(str_is(r.path, "/b"));

	/* the body is not the parser's: a head followed by binary bytes */
	char buf[64];
	int hl = snprintf(buf, sizeof(buf), "POST /canonical HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\n");
	memcpy(buf + hl, "\0\r\n", 3);
	n = parse_g(buf, (size_t)hl + 3, &lim, &r);
	assert_int_equal(n, hl);
	assert_int_equal(r.content_length, 3);
}

/* ---- 2. malformed heads --------------------------------------------------- */

/* Heads the parser must refuse, grouped by the reason it must give. */
struct bad {
	int reason;
	const char *in[11]; /* up to the first NULL */
};

#define H11 " HTTP/1.1\r\nHost: h\r\n"
static const struct bad bads[] = {
	{ CP_HTTP_R_BAD_METHOD, {
		" / HTTP/1.1\r\n\r\n",
		"\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n",
		"GE(T / HTTP/1.1\r\n\r\n",
		"GET\t/ HTTP/1.1\r\n\r\n",
	} },
	{ CP_HTTP_R_METHOD_NOT_ALLOWED, {
		"get / HTTP/1.1\r\n\r\n",
		"PUT / HTTP/1.1\r\n\r\n",
		"DELETE / HTTP/1.1\r\n\r\n",
		"CONNECT h:1 HTTP/1.1\r\n\r\n",
	} },
	{ CP_HTTP_R_BAD_TARGET, {
		"GET  / HTTP/1.1\r\n\r\n",
		"GET * HTTP/1.1\r\n\r\n",
		"GET http://h/ HTTP/1.1\r\n\r\n",
		"GET a/b HTTP/1.1\r\n\r\n",
		"GET /a#frag HTTP/1.1\r\n\r\n",
		"GET /a\"b HTTP/1.1\r\n\r\n",
		"GET /a%2 HTTP/1.1\r\n\r\n",
		"GET /a%zz HTTP/1.1\r\n\r\n",
		"GET /a\x80 HTTP/1.1\r\n\r\n",
		"GET /\r\n\r\n",
	} },
	{ CP_HTTP_R_BAD_VERSION, {
		"GET /  HTTP/1.1\r\n\r\n",
		"GET / http/1.1\r\n\r\n",
		"GET / HTTP/1.x\r\n\r\n",
		"GET / HTTP/11\r\n\r\n",
		"GET / HTTP/1.1 \r\n\r\n",
		"GET / HTTP/1.10\r\n\r\n",
	} },
	{ CP_HTTP_R_VERSION_NOT_SUPPORTED, {
		"GET / HTTP/2.0\r\n\r\n",
		"GET / HTTP/0.9\r\n\r\n",
		"GET / HTTP/1.2\r\n\r\n",
	} },
	{ CP_HTTP_R_BAD_LINE_ENDING, {
		"GET / HTTP/1.1\n\r\n",
		"GET / HTTP/1.1\rX\n\r\n",
		"GET /" H11 "\n",
		"GET /" H11 "\rX",
		"GET /" H11 "A: b\n\r\n",
		"GET /" H11 "A: b\rc\r\n\r\n",
	} },
	{ CP_HTTP_R_BAD_HEADER_NAME, {
		"GET /" H11 "A : b\r\n\r\n",
		"GET /" H11 ": b\r\n\r\n",
		"GET /" H11 "A(b: c\r\n\r\n",
		"GET /" H11 "A\r\n\r\n",
	} },
	{ CP_HTTP_R_BAD_HEADER_VALUE, {
		"GET /" H11 "A: b\x01\r\n\r\n",
		"GET /" H11 "A: b\x7f\r\n\r\n",
	} },
	{ CP_HTTP_R_OBS_FOLD, {
		"GET /" H11 "A: b\r\n c\r\n\r\n",
		"GET /" H11 "A: b\r\n\tc\r\n\r\n",
		"GET / HTTP/1.1\r\n Host: h\r\n\r\n",
	} },
	{ CP_HTTP_R_MISSING_HOST, {
		"GET / HTTP/1.1\r\n\r\n",
	} },
	{ CP_HTTP_R_DUPLICATE_HOST, {
		"GET /" H11 "Host: h\r\n\r\n",
		"GET /" H11 "HOST: i\r\n\r\n",
	} },
	{ CP_HTTP_R_BAD_CONTENT_LENGTH, {
		"POST /" H11 "Content-Length: \r\n\r\n",
		"POST /" H11 "Content-Length: -1\r\n\r\n",
		"POST /" H11 "Content-Length: +1\r\n\r\n",
		"POST /" H11 "Content-Length: 1 2\r\n\r\n",
		"POST /" H11 "Content-Length: 1,1\r\n\r\n",
		"POST /" H11 "Content-Length: 0x10\r\n\r\n",
		"POST /" H11 "Content-Length: 1\r\nContent-Length: 1\r\n\r\n",
	} },
	{ CP_HTTP_R_BODY_TOO_LARGE, {
		"POST /" H11 "Content-Length: 99999999999999999999999999\r\n\r\n",
	} },
	{ CP_HTTP_R_LENGTH_REQUIRED, {
		"POST /" H11 "\r\n",
	} },
	{ CP_HTTP_R_TRANSFER_ENCODING, {
		"POST /" H11 "Transfer-Encoding: chunked\r\n\r\n",
		"POST /" H11 "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET /" H11 "transfer-encoding: identity\r\n\r\n",
	} },
	{ CP_HTTP_R_BAD_CONNECTION, {
		"GET /" H11 "Connection: close;x\r\n\r\n",
		"GET /" H11 "Connection: up grade\r\n\r\n",
		"GET /" H11 "Upgrade: web socket\r\n\r\n",
		"GET /" H11 "Upgrade: websocket/\r\n\r\n",
	} },
	{ CP_HTTP_R_EXPECTATION, {
		"POST /" H11 "Expect: 200-ok\r\nContent-Length: 1\r\n\r\n",
	} },
};

/* Case i of bads, the groups one after the other: its head in *in and
 * its reason in *reason; false past the last case. */
static bool bad_case(size_t i, const char **in, int *reason)
{
	for (size_t g = 0; g < FG_ARRAY_LEN(bads); g++)
		for (size_t k = 0; bads[g].in[k]; k++)
			if (i-- == 0) {
				*in = bads[g].in[k];
				*reason = bads[g].reason;
				return true;
			}
	return false;
}

static void test_bad_and_prefixes(void **state)
{
	const char *in;
	int reason;
	for (size_t i = 0; bad_case(i, &in, &reason); i++) {
		size_t n = strlen(in);
		struct cp_http_req r;
		memset(&r, 0x5a, sizeof(r));
		ssize_t got = parse_g(in, n, &lim, &r);
		if (got != -reason)
			fail_msg("bad %zu: got %zd %s want %s", i, got, cp_http_reason_name((int)got),
				 cp_http_reason_name(reason));
		assert_int_equal(((uint8_t *)&r)[0], 0x5a); /* not written on failure */
		assert_int_not_equal(cp_http_reason_status(reason), 0);
		bool seen = false;
		for (size_t k = 0; k < n; k++) {
			ssize_t m = parse_g(in, k, &lim, &r);
			if (m == -reason)
				seen = true;
			else if (m != -CP_HTTP_R_INCOMPLETE || seen)
				fail_msg("bad %zu prefix %zu: %s", i, k, cp_http_reason_name((int)m));
		}
	}
}

static void test_bad_nul(void **state)
{
	/* NUL bytes in a value, name, target and method */
	static const char v[] = "GET / HTTP/1.1\r\nHost: h\r\nA: \0b\r\n\r\n";
	static const char nm[] = "GET / HTTP/1.1\r\nHost: h\r\nA\0: b\r\n\r\n";
	static const char t[] = "GET /a\0b HTTP/1.1\r\nHost: h\r\n\r\n";
	static const char m[] = "G\0T / HTTP/1.1\r\nHost: h\r\n\r\n";
	struct cp_http_req r;
	assert_int_equal(parse_g(v, sizeof(v) - 1, &lim, &r), -CP_HTTP_R_BAD_HEADER_VALUE);
	assert_int_equal(parse_g(nm, sizeof(nm) - 1, &lim, &r), -CP_HTTP_R_BAD_HEADER_NAME);
	assert_int_equal(parse_g(t, sizeof(t) - 1, &lim, &r), -CP_HTTP_R_BAD_TARGET);
	assert_int_equal(parse_g(m, sizeof(m) - 1, &lim, &r), -CP_HTTP_R_BAD_METHOD);
}

/* ---- 3. limits ------------------------------------------------------------ */

/* A GET whose request line is exactly `line` bytes with CRLF. */
static char *line_of(size_t line, const char *rest)
{
	size_t fixed = strlen("GET / HTTP/1.1\r\n");
	if (line < fixed || line + strlen(rest) >= 16384)
		abort();
	char *s = calloc(1, 16384);
	if (!s)
		abort();
	memcpy(s, "GET /", 5);
	memset(s + 5, 'a', line - fixed);
	strcpy(s + 5 + (line - fixed), " HTTP/1.1\r\n");
	strcat(s, rest);
	return s;
}

static void test_limit_request_line(void **state)
{
	struct cp_http_limits l = lim;
	l.max_request_line = 100;
	struct cp_http_req r;
	char *s = line_of(100, "Host: h\r\n\r\n");
	assert_int_equal(parse_g(s, strlen(s), &l, &r), (ssize_t)strlen(s));
	free(s);
	s = line_of(101, "Host: h\r\n\r\n");
	assert_int_equal(parse_g(s, strlen(s), &l, &r), -CP_HTTP_R_URI_TOO_LONG);
	/* without the terminator: refused as soon as 100 bytes hold no line end */
	assert_int_equal(parse_g(s, 100, &l, &r), -CP_HTTP_R_URI_TOO_LONG);
	assert_int_equal(parse_g(s, 99, &l, &r), -CP_HTTP_R_INCOMPLETE);
	/* a line of 100 whose CR is byte 100: the LF would be 101 */
	free(s);
	s = line_of(101, "");
	s[99] = '\r';
	s[100] = '\n';
	assert_int_equal(parse_g(s, 100, &l, &r), -CP_HTTP_R_URI_TOO_LONG);
	free(s);
	/* the default */
	s = line_of(8192, "Host: h\r\n\r\n");
	assert_true(parse_g(s, strlen(s), &lim, &r) > 0);
	free(s);
	s = line_of(8193, "Host: h\r\n\r\n");
	assert_int_equal(parse_g(s, strlen(s), &lim, &r), -CP_HTTP_R_URI_TOO_LONG);
	free(s);
}

static void test_limit_header_bytes(void **state)
{
	struct cp_http_limits l = lim;
	l.max_header_bytes = 64;
	struct cp_http_req r;
	const char *rl = "GET / HTTP/1.1\r\n";
	/* header section: "Host: h\r\n" (9) + "X: " + v + "\r\n" + "\r\n" = 16 + |v| */
	char s[256];
	for (size_t v = 40; v <= 56; v++) {
		snprintf(s, sizeof(s), "%sHost: h\r\nX: %.*s\r\n\r\n", rl, (int)v,
			 "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv");
		ssize_t n = parse_g(s, strlen(s), &l, &r);
		if (16 + v <= 64)
			assert_int_equal(n, (ssize_t)strlen(s));
		else
			assert_int_equal(n, -CP_HTTP_R_HEADERS_TOO_LARGE);
	}
	/* unterminated: refused once 64 header bytes hold no end */
	memset(s, 'v', sizeof(s));
	memcpy(s, rl, 16);
	memcpy(s + 16, "X: ", 3);
	assert_int_equal(parse_g(s, 16 + 63, &l, &r), -CP_HTTP_R_INCOMPLETE);
	assert_int_equal(parse_g(s, 16 + 64, &l, &r), -CP_HTTP_R_HEADERS_TOO_LARGE);
	assert_int_equal(parse_g(s, 200, &l, &r), -CP_HTTP_R_HEADERS_TOO_LARGE);
}

static void test_limit_header_count(void **state)
{
	struct cp_http_limits l = lim;
	struct cp_http_req r;
	char s[4096];
	for (unsigned max = 1; max <= CP_HTTP_HEADERS_CAP + 2; max += (max < 4 ? 1 : 31)) {
		l.max_headers = max;
		unsigned eff = max < CP_HTTP_HEADERS_CAP ? max : CP_HTTP_HEADERS_CAP;
		for (unsigned n = eff; n <= eff + 1; n++) {
			size_t o = (size_t)snprintf(s, sizeof(s), "GET / HTTP/1.1\r\nHost: h\r\n");
			for (unsigned i = 1; i < n; i++)
				o += (size_t)snprintf(s + o, sizeof(s) - o, "X%u: %u\r\n", i, i);
			o += (size_t)snprintf(s + o, sizeof(s) - o, "\r\n");
			ssize_t got = parse_g(s, o, &l, &r);
			if (n <= eff) {
				assert_int_equal(got, (ssize_t)o);
				assert_int_equal(r.n_headers, n);
			} else {
				assert_int_equal(got, -CP_HTTP_R_TOO_MANY_HEADERS);
			}
		}
	}
}

static void test_limit_body(void **state)
{
	struct cp_http_limits l = lim;
	l.max_body = 1000;
	struct cp_http_req r;
	char s[128];
	snprintf(s, sizeof(s), "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\n\r\n");
	assert_true(parse_g(s, strlen(s), &l, &r) > 0);
	assert_int_equal(r.content_length, 1000);
	snprintf(s, sizeof(s), "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 1001\r\n\r\n");
	assert_int_equal(parse_g(s, strlen(s), &l, &r), -CP_HTTP_R_BODY_TOO_LARGE);
	snprintf(s, sizeof(s), "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551616\r\n\r\n");
	assert_int_equal(parse_g(s, strlen(s), &l, &r), -CP_HTTP_R_BODY_TOO_LARGE);
	l.max_body = UINT64_MAX;
	snprintf(s, sizeof(s), "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551615\r\n\r\n");
	assert_true(parse_g(s, strlen(s), &l, &r) > 0);
	assert_true(r.content_length == UINT64_MAX);
	/* one past UINT64_MAX is too large whatever the limit; never wraps */
	snprintf(s, sizeof(s), "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551616\r\n\r\n");
	assert_int_equal(parse_g(s, strlen(s), &l, &r), -CP_HTTP_R_BODY_TOO_LARGE);
	snprintf(s, sizeof(s), "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999x\r\n\r\n");
	assert_int_equal(parse_g(s, strlen(s), &l, &r), -CP_HTTP_R_BAD_CONTENT_LENGTH);
	/* the default limit */
	snprintf(s, sizeof(s), "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: %u\r\n\r\n", 16u << 20);
	assert_true(parse_g(s, strlen(s), &lim, &r) > 0);
	snprintf(s, sizeof(s), "POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: %u\r\n\r\n", (16u << 20) + 1);
	assert_int_equal(parse_g(s, strlen(s), &lim, &r), -CP_HTTP_R_BODY_TOO_LARGE);
}

/* ---- 4. semantics ---------------------------------------------------------- */

static void test_keep_alive(void **state)
{
	static const struct {
		const char *ver, *conn;
		bool ka;
	} m[] = {
		{ "1.1", NULL, true },
		{ "1.1", "close", false },
		{ "1.1", "Close", false },
		{ "1.1", "keep-alive", true },
		{ "1.1", "Upgrade, close", false },
		{ "1.1", ", , keep-alive ,", true },
		{ "1.1", "", true },
		{ "1.0", NULL, false },
		{ "1.0", "keep-alive", true },
		{ "1.0", "Keep-Alive, Upgrade", true },
		{ "1.0", "keep-alive, close", false },
	};
	for (size_t i = 0; i < FG_ARRAY_LEN(m); i++) {
		char s[256];
		struct cp_http_req r;
		if (m[i].conn)
			snprintf(s, sizeof(s), "GET / HTTP/%s\r\nHost: h\r\nConnection: %s\r\n\r\n",
				 m[i].ver, m[i].conn);
		else
			snprintf(s, sizeof(s), "GET / HTTP/%s\r\nHost: h\r\n\r\n", m[i].ver);
		assert_true(parse(s, &r) > 0);
		if (r.keep_alive != m[i].ka)
			fail_msg("keep-alive case %zu", i);
	}
	/* two Connection fields combine */
	struct cp_http_req r;
	assert_true(parse("GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", &r) > 0);
	assert_false(r.keep_alive);
}

static const char *ws_head(char *s, size_t cap, const char *method, const char *ver,
			   const char *extra)
{
	snprintf(s, cap,
		 "%s /flow HTTP/%s\r\nHost: gw\r\n%s%s\r\n", method, ver, extra,
		 strcmp(method, "POST") == 0 ? "Content-Length: 0\r\n" : "");
	return s;
}

static void test_ws_check(void **state)
{
	static const char *key = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n";
	static const char *ver = "Sec-WebSocket-Version: 13\r\n";
	static const char *up = "Upgrade: websocket\r\nConnection: Upgrade\r\n";
	static const struct {
		const char *method, *ver, *a, *b, *c, *d;
		int want;
	} m[] = {
		{ "GET", "1.1", "Upgrade: websocket\r\nConnection: Upgrade\r\n", "$k", "$v", "", 0 },
		{ "GET", "1.1", "Upgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n", "$k", "$v", "", 0 },
		{ "GET", "1.1", "Upgrade: h2c, websocket\r\nConnection: upgrade\r\n", "$k", "$v", "", 0 },
		{ "GET", "1.1", "Connection: Upgrade\r\n", "$k", "$v", "", CP_HTTP_R_WS_NOT_UPGRADE },
		{ "GET", "1.1", "Upgrade: websocket\r\n", "$k", "$v", "", CP_HTTP_R_WS_NOT_UPGRADE },
		{ "GET", "1.1", "Upgrade: websocket/13\r\nConnection: Upgrade\r\n", "$k", "$v", "", CP_HTTP_R_WS_NOT_UPGRADE },
		{ "GET", "1.0", "$u", "$k", "$v", "", CP_HTTP_R_WS_NOT_UPGRADE },
		{ "POST", "1.1", "$u", "$k", "$v", "", CP_HTTP_R_WS_METHOD },
		{ "HEAD", "1.1", "$u", "$k", "$v", "", CP_HTTP_R_WS_METHOD },
		{ "GET", "1.1", "$u", "$k", "", "", CP_HTTP_R_WS_VERSION },
		{ "GET", "1.1", "$u", "$k", "Sec-WebSocket-Version: 8\r\n", "", CP_HTTP_R_WS_VERSION },
		{ "GET", "1.1", "$u", "$k", "Sec-WebSocket-Version: 13, 8\r\n", "", CP_HTTP_R_WS_VERSION },
		{ "GET", "1.1", "$u", "$k", "$v", "$v", CP_HTTP_R_WS_VERSION },
		{ "GET", "1.1", "$u", "", "$v", "", CP_HTTP_R_WS_KEY },
		{ "GET", "1.1", "$u", "$k", "$v", "$k", CP_HTTP_R_WS_KEY },
		{ "GET", "1.1", "$u", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ\r\n", "$v", "", CP_HTTP_R_WS_KEY },
		{ "GET", "1.1", "$u", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZR==\r\n", "$v", "", CP_HTTP_R_WS_KEY },
		{ "GET", "1.1", "$u", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25j*Q==\r\n", "$v", "", CP_HTTP_R_WS_KEY },
		{ "GET", "1.1", "$u", "Sec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n", "$v", "", 0 },
		{ "GET", "1.1", "$u", "Sec-WebSocket-Key: ////////////////////ww==\r\n", "$v", "", 0 },
		{ "GET", "1.1", "$u", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ===\r\n", "$v", "", CP_HTTP_R_WS_KEY },
	};
	for (size_t i = 0; i < FG_ARRAY_LEN(m); i++) {
		const char *parts[4] = { m[i].a, m[i].b, m[i].c, m[i].d };
		char extra[512] = "";
		for (int k = 0; k < 4; k++) {
			const char *p = parts[k];
			if (strcmp(p, "$k") == 0)
				p = key;
			else if (strcmp(p, "$v") == 0)
				p = ver;
			else if (strcmp(p, "$u") == 0)
				p = up;
			strcat(extra, p);
		}
		char s[1024];
		struct cp_http_req r;
		ws_head(s, sizeof(s), m[i].method, m[i].ver, extra);
		ssize_t n = parse(s, &r);
		if (n <= 0)
			fail_msg("ws case %zu parse: %s", i, cp_http_reason_name((int)n));
		int got = cp_http_ws_check(&r);
		if (got != -m[i].want)
			fail_msg("ws case %zu: got %s want %s", i, cp_http_reason_name(got),
				 cp_http_reason_name(m[i].want));
	}
	assert_int_equal(cp_http_reason_status(CP_HTTP_R_WS_VERSION), 426);
}

static void test_ws_protocol(void **state)
{
	struct cp_http_req r;
	assert_true(parse("GET /flow HTTP/1.1\r\nHost: h\r\nSec-WebSocket-Protocol: chat, aeon-flow\r\n\r\n", &r) > 0);
	assert_true(r.ws_protocol_offered);
	assert_true(r.ws_protocol_aeon_flow);
	assert_true(parse("GET /flow HTTP/1.1\r\nHost: h\r\nSec-WebSocket-Protocol: Aeon-Flow\r\n\r\n", &r) > 0);
	assert_true(r.ws_protocol_offered);
	assert_false(r.ws_protocol_aeon_flow);
	assert_true(parse("GET /flow HTTP/1.1\r\nHost: h\r\nSec-WebSocket-Protocol: x\r\n"
			  "Sec-WebSocket-Protocol: aeon-flow\r\n\r\n", &r) > 0);
	assert_true(r.ws_protocol_aeon_flow);
}

static void test_ws_key_valid(void **state)
{
	/* every last character: only A, Q, g, w leave no stray bits */
	const char *b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char k[25] = "AAAAAAAAAAAAAAAAAAAAAA==";
	for (int i = 0; i < 64; i++) {
		k[21] = b64[i];
		assert_int_equal(cp_http_ws_key_is_valid(k, 24), (i % 16) == 0);
	}
	assert_false(cp_http_ws_key_is_valid(k, 23));
	assert_false(cp_http_ws_key_is_valid("AAAAAAAAAAAAAAAAAAAAAA=A", 24));
	assert_false(cp_http_ws_key_is_valid("AAAAAAAAAAAAAAAAAAAAA===", 24));
}

static void test_bearer(void **state)
{
	static const struct {
		const char *hdrs;
		int want;
		const char *tok;
	} m[] = {
		{ "Authorization: Bearer abc\r\n", 0, "abc" },
		{ "authorization: bearer  A-._~+/9==\r\n", 0, "A-._~+/9==" },
		{ "Authorization: BEARER x \r\n", 0, "x" },
		{ "", CP_HTTP_R_AUTH_MISSING, NULL },
		{ "Authorization: Basic dXNlcjpwdw==\r\n", CP_HTTP_R_AUTH_MALFORMED, NULL },
		{ "Authorization: Bearer\r\n", CP_HTTP_R_AUTH_MALFORMED, NULL },
		{ "Authorization: Bearer \r\n", CP_HTTP_R_AUTH_MALFORMED, NULL },
		{ "Authorization: Bearerabc\r\n", CP_HTTP_R_AUTH_MALFORMED, NULL },
		{ "Authorization: Bearer a b\r\n", CP_HTTP_R_AUTH_MALFORMED, NULL },
		{ "Authorization: Bearer a=b\r\n", CP_HTTP_R_AUTH_MALFORMED, NULL },
		{ "Authorization: Bearer ==\r\n", CP_HTTP_R_AUTH_MALFORMED, NULL },
		{ "Authorization: Bearer a,b\r\n", CP_HTTP_R_AUTH_MALFORMED, NULL },
		{ "Authorization: Bearer a\r\nAuthorization: Bearer a\r\n", CP_HTTP_R_AUTH_MALFORMED, NULL },
	};
	for (size_t i = 0; i < FG_ARRAY_LEN(m); i++) {
		char s[512];
		struct cp_http_req r;
		snprintf(s, sizeof(s), "GET /flow HTTP/1.1\r\nHost: h\r\n%s\r\n", m[i].hdrs);
		assert_true(parse(s, &r) > 0);
		struct cp_http_str tok = { NULL, 0 };
		int got = cp_http_bearer(&r, &tok);
		if (got != -m[i].want)
			fail_msg("bearer %zu: %s", i, cp_http_reason_name(got));
		if (m[i].tok)
			assert_true(str_is(tok, m[i].tok));
		else
			assert_null(tok.p);
	}
	assert_int_equal(cp_http_reason_status(CP_HTTP_R_AUTH_MISSING), 401);
}

static struct cp_http_str S(const char *s)
{
	return (struct cp_http_str){ s, strlen(s) };
}

static void test_query_next(void **state)
{
	struct cp_http_str q = S("a=1&b&c=&d=x=y"), n, v;
	size_t pos = 0;
	assert_int_equal(cp_http_query_next(q, &pos, &n, &v), 1);
	assert_true(str_is(n, "a") && str_is(v, "1"));
	assert_int_equal(cp_http_query_next(q, &pos, &n, &v), 1);
	assert_true(str_is(n, "b") && v.len == 0);
	assert_int_equal(cp_http_query_next(q, &pos, &n, &v), 1);
	assert_true(str_is(n, "c") && v.len == 0);
	assert_int_equal(cp_http_query_next(q, &pos, &n, &v), 1);
	assert_true(str_is(n, "d") && str_is(v, "x=y"));
	assert_int_equal(cp_http_query_next(q, &pos, &n, &v), 0);
	const char *bad[] = { "&a", "a&&b", "a&", "=1" };
	for (size_t i = 0; i < FG_ARRAY_LEN(bad); i++) {
		int rc;
		pos = 0;
		while ((rc = cp_http_query_next(S(bad[i]), &pos, &n, &v)) > 0)
			;
		assert_int_equal(rc, -CP_HTTP_R_BAD_QUERY);
	}
	pos = 0;
	assert_int_equal(cp_http_query_next(S(""), &pos, &n, &v), 0);
}

static void test_flow_query(void **state)
{
	struct cp_flow_query q;
	assert_int_equal(cp_flow_query_parse(S("layers=1,2,27"), 32, &q), 0);
	assert_int_equal(q.n_layers, 3);
	assert_true(q.status);
	for (unsigned l = 0; l < CP_FLOW_LAYERS_MAX; l++)
		assert_int_equal(cp_flow_query_has_layer(&q, l), l == 1 || l == 2 || l == 27);
	assert_false(cp_flow_query_has_layer(&q, 100000));

	assert_int_equal(cp_flow_query_parse(S("layers=all"), 32, &q), 0);
	assert_int_equal(q.n_layers, 32);
	assert_true(cp_flow_query_has_layer(&q, 31));
	assert_false(cp_flow_query_has_layer(&q, 32));
	assert_int_equal(cp_flow_query_parse(S("layers=all"), 256, &q), 0);
	assert_int_equal(q.n_layers, 256);

	assert_int_equal(cp_flow_query_parse(S("status=0&layers=0%2C5%2c255"), 256, &q), 0);
	assert_false(q.status);
	assert_int_equal(q.n_layers, 3);
	assert_true(cp_flow_query_has_layer(&q, 0) && cp_flow_query_has_layer(&q, 255));
	assert_int_equal(cp_flow_query_parse(S("layers=3,3"), 32, &q), 0);
	assert_int_equal(q.n_layers, 1);
	assert_int_equal(cp_flow_query_parse(S(""), 32, &q), 0);
	assert_int_equal(q.n_layers, 0);
	assert_true(q.status);
	assert_int_equal(cp_flow_query_parse(S("status=1"), 32, &q), 0);
	assert_true(q.status);
	assert_false(q.layer_bound);
	/* layer=<L>: a session bound to destination layer L (wire.md 3) */
	assert_int_equal(cp_flow_query_parse(S("layer=17"), 32, &q), 0);
	assert_true(q.layer_bound);
	assert_int_equal(q.bound_layer, 17);
	assert_int_equal(q.n_layers, 0);
	assert_int_equal(cp_flow_query_parse(S("layers=17&layer=0&status=0"), 32, &q), 0);
	assert_true(q.layer_bound);
	assert_int_equal(q.bound_layer, 0);
	assert_true(cp_flow_query_has_layer(&q, 17));
	assert_false(q.status);

	static const struct {
		const char *q;
		int want;
	} bad[] = {
		{ "layers=", CP_HTTP_R_BAD_QUERY },
		{ "layers", CP_HTTP_R_BAD_QUERY },
		{ "layers=1,,2", CP_HTTP_R_BAD_QUERY },
		{ "layers=1,", CP_HTTP_R_BAD_QUERY },
		{ "layers=,1", CP_HTTP_R_BAD_QUERY },
		{ "layers=01", CP_HTTP_R_BAD_QUERY },
		{ "layers=+1", CP_HTTP_R_BAD_QUERY },
		{ "layers=1;2", CP_HTTP_R_BAD_QUERY },
		{ "layers=1%2", CP_HTTP_R_BAD_QUERY },
		{ "layers=1%2D2", CP_HTTP_R_BAD_QUERY },
		{ "layers=ALL", CP_HTTP_R_BAD_QUERY },
		{ "layers=all,1", CP_HTTP_R_BAD_QUERY },
		{ "layers=32", CP_HTTP_R_BAD_LAYER },
		{ "layers=1,2,99999999999", CP_HTTP_R_BAD_LAYER },
		{ "layers=1&layers=2", CP_HTTP_R_BAD_QUERY },
		{ "status=2", CP_HTTP_R_BAD_QUERY },
		{ "status=", CP_HTTP_R_BAD_QUERY },
		{ "status=00", CP_HTTP_R_BAD_QUERY },
		{ "status=0&status=0", CP_HTTP_R_BAD_QUERY },
		{ "layer=", CP_HTTP_R_BAD_QUERY },
		{ "layer=01", CP_HTTP_R_BAD_QUERY },
		{ "layer=1,2", CP_HTTP_R_BAD_QUERY },
		{ "layer=1%2C2", CP_HTTP_R_BAD_QUERY },
		{ "layer=all", CP_HTTP_R_BAD_QUERY },
		{ "layer=1&layer=1", CP_HTTP_R_BAD_QUERY },
		{ "layer=32", CP_HTTP_R_BAD_LAYER },
		{ "lay=1", CP_HTTP_R_BAD_QUERY },
		{ "layers=1&", CP_HTTP_R_BAD_QUERY },
		{ "Layers=1", CP_HTTP_R_BAD_QUERY },
	};
	for (size_t i = 0; i < FG_ARRAY_LEN(bad); i++) {
		memset(&q, 0x77, sizeof(q));
		int got = cp_flow_query_parse(S(bad[i].q), 32, &q);
		if (got != -bad[i].want)
			fail_msg("query %s: %s", bad[i].q, cp_http_reason_name(got));
		assert_int_equal(q.n_layers, 0x77777777u); /* untouched */
	}
}

static void test_reason_names(void **state)
{
	for (int a = CP_HTTP_R_INCOMPLETE; a < CP_HTTP_R__END; a++) {
		const char *na = cp_http_reason_name(a);
		assert_string_not_equal(na, "unknown");
		assert_string_equal(na, cp_http_reason_name(-a));
		int st = cp_http_reason_status(a);
		assert_int_equal(st, cp_http_reason_status(-a));
		if (a == CP_HTTP_R_INCOMPLETE)
			assert_int_equal(st, 0);
		else
			assert_string_not_equal(cp_http_status_text(st), "Unknown");
		for (int b = a + 1; b < CP_HTTP_R__END; b++)
			assert_string_not_equal(na, cp_http_reason_name(b));
	}
	assert_string_equal(cp_http_reason_name(0), "ok");
	assert_string_equal(cp_http_reason_name(CP_HTTP_R__END), "unknown");
	assert_string_equal(cp_http_reason_name(5), "unknown");
	assert_int_equal(cp_http_reason_status(5), 400);
	assert_string_equal(cp_http_status_text(999), "Unknown");
	static const int extra[] = { 101, 200, 403, 404, 408, 409, 429, 500, 502, 503, 504 };
	for (size_t i = 0; i < FG_ARRAY_LEN(extra); i++)
		assert_string_not_equal(cp_http_status_text(extra[i]), "Unknown");
	/* the statuses the brief fixes */
	assert_int_equal(cp_http_reason_status(CP_HTTP_R_METHOD_NOT_ALLOWED), 405);
	assert_int_equal(cp_http_reason_status(CP_HTTP_R_LENGTH_REQUIRED), 411);
	assert_int_equal(cp_http_reason_status(CP_HTTP_R_BODY_TOO_LARGE), 413);
	assert_int_equal(cp_http_reason_status(CP_HTTP_R_URI_TOO_LONG), 414);
	assert_int_equal(cp_http_reason_status(CP_HTTP_R_HEADERS_TOO_LARGE), 431);
	assert_int_equal(cp_http_reason_status(CP_HTTP_R_TOO_MANY_HEADERS), 431);
	assert_int_equal(cp_http_reason_status(CP_HTTP_R_VERSION_NOT_SUPPORTED), 505);
	assert_int_equal(cp_http_reason_status(CP_HTTP_R_TRANSFER_ENCODING), 501);
}

static void test_reasons_documented(void **state)
{
	char *doc = doc_load();
	if (!doc)
		skip();
	for (int r = CP_HTTP_R_INCOMPLETE + 1; r < CP_HTTP_R__END; r++) {
		int c = doc_code(doc, cp_http_reason_name(r));
		if (c != cp_http_reason_status(r))
			fail_msg("docs/websocket.md: %s documented as %d, answered %d", cp_http_reason_name(r), c,
				 cp_http_reason_status(r));
	}
	free(doc);
}

/* ---- 5. mutations ----------------------------------------------------------- */

static void test_mutations(void **state)
{
	static const uint8_t subst[] = { 0, '\r', '\n', ' ', '\t', ':', 0x7f, 0xff, 'A', '/' };
	for (size_t g = 0; g < FG_ARRAY_LEN(goods); g++) {
		size_t n = strlen(goods[g].in);
		uint8_t buf[512];
		for (size_t i = 0; i < n; i++) {
			for (size_t k = 0; k < sizeof(subst); k++) {
				memcpy(buf, goods[g].in, n);
				buf[i] = subst[k];
				struct cp_http_req r;
				const uint8_t *p = guard_place(buf, n);
				ssize_t got = cp_http_parse_request(p, n, &lim, &r);
				if (got >= 0) {
					assert_true((size_t)got <= n);
					assert_true(r.n_headers <= CP_HTTP_HEADERS_CAP);
					assert_true(r.path.p >= (const char *)p &&
						    r.path.p + r.path.len <= (const char *)p + n);
				} else {
					assert_string_not_equal(cp_http_reason_name((int)got), "unknown");
				}
			}
		}
	}
}

static int setup(void **state)
{
	cp_http_limits_default(&lim);
	guard_setup();
	return 0;
}

/* ---- 6. resuming ----------------------------------------------------------- */

/* Feed s[0..n) one byte per call into a buffer that is reallocated to a new
 * address every call (the connection's input buffer may move). The last
 * buffer (where r's slices point) is freed by the next call. */
static uint8_t *bytewise_buf;

static ssize_t parse_bytewise(const char *s, size_t n, struct cp_http_req *r, uint64_t *examined)
{
	free(bytewise_buf);
	bytewise_buf = NULL;
	struct cp_http_parser p;
	cp_http_parser_init(&p);
	ssize_t v = -CP_HTTP_R_INCOMPLETE;
	uint8_t *buf = NULL;
	for (size_t k = 1; k <= n && v == -CP_HTTP_R_INCOMPLETE; k++) {
		uint8_t *nb = malloc(k);
		assert_non_null(nb);
		memcpy(nb, s, k);
		free(buf);
		buf = nb;
		v = cp_http_parser_run(&p, buf, k, &lim, r);
	}
	*examined = p.examined;
	/* A verdict is final: asked again, the same answer. */
	if (v != -CP_HTTP_R_INCOMPLETE) {
		struct cp_http_req r2;
		assert_int_equal(cp_http_parser_run(&p, buf, n, &lim, &r2), v);
	}
	bytewise_buf = buf;
	return v;
}

static uint64_t examined_oneshot(const char *s, size_t n, struct cp_http_req *r, ssize_t *v)
{
	struct cp_http_parser p;
	cp_http_parser_init(&p);
	*v = cp_http_parser_run(&p, (const uint8_t *)s, n, &lim, r);
	return p.examined;
}

static void test_resume_vectors(void **state)
{
	for (size_t i = 0; i < FG_ARRAY_LEN(goods); i++) {
		const struct good *g = &goods[i];
		size_t total = strlen(g->in);
		struct cp_http_req r, r1;
		uint64_t ex;
		ssize_t n = parse_bytewise(g->in, total, &r, &ex);
		if (n < 0)
			fail_msg("vector %zu bytewise: %s", i, cp_http_reason_name((int)n));
		check_good(g, &r, n);
		ssize_t n1;
		assert_int_equal(examined_oneshot(g->in, total, &r1, &n1), ex);
		assert_int_equal(n1, n);
		/* the slices point into the caller's last buffer: compare text */
		assert_int_equal(r.host.len, r1.host.len);
		assert_memory_equal(r.host.p, r1.host.p, r.host.len);
		assert_int_equal(r.authorization.len, r1.authorization.len);
		for (unsigned h = 0; h < r.n_headers; h++) {
			assert_int_equal(r.headers[h].value.len, r1.headers[h].value.len);
			assert_memory_equal(r.headers[h].value.p, r1.headers[h].value.p, r.headers[h].value.len);
			assert_memory_equal(r.headers[h].name.p, r1.headers[h].name.p, r.headers[h].name.len);
		}
	}
	const char *in;
	int reason;
	for (size_t i = 0; bad_case(i, &in, &reason); i++) {
		struct cp_http_req r;
		uint64_t ex;
		ssize_t got = parse_bytewise(in, strlen(in), &r, &ex);
		if (got != -reason)
			fail_msg("bad %zu bytewise: got %s want %s", i, cp_http_reason_name((int)got),
				 cp_http_reason_name(reason));
	}
}

/* A head of n_hdr headers of about 100 bytes each. */
static char *big_head(unsigned n_hdr, size_t *len)
{
	size_t cap = 128 + (size_t)n_hdr * 128;
	char *h = malloc(cap);
	assert_non_null(h);
	size_t o = (size_t)snprintf(h, cap, "GET /flow?layers=1,2,3 HTTP/1.1\r\nHost: gw\r\n");
	for (unsigned i = 0; i < n_hdr; i++)
		o += (size_t)snprintf(h + o, cap - o, "X-Filler-%03u: %.*s\r\n", i, 84,
				      "abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnop");
	o += (size_t)snprintf(h + o, cap - o, "\r\n");
	*len = o;
	return h;
}

static void test_resume_linear(void **state)
{
	/* Fed one byte per call, as a slowloris peer sends it (one TLS record
	 * per byte): the parser must examine each byte a bounded number of
	 * times, not re-parse from byte 0 on every call (which would examine
	 * about len^2 / 2 bytes: 18 M for the 6 KiB head). */
	size_t len_a, len_b;
	char *a = big_head(30, &len_a), *b = big_head(60, &len_b);
	struct cp_http_req r;
	uint64_t ex_a, ex_b;
	assert_int_equal(parse_bytewise(a, len_a, &r, &ex_a), (ssize_t)len_a);
	assert_int_equal(r.n_headers, 31);
	assert_int_equal(parse_bytewise(b, len_b, &r, &ex_b), (ssize_t)len_b);
	assert_int_equal(r.n_headers, 61);
	print_message("bytes examined: %llu for %zu bytes, %llu for %zu bytes\n", (unsigned long long)ex_a, len_a,
		      (unsigned long long)ex_b, len_b);
	assert_true(ex_a <= 3 * len_a);
	assert_true(ex_b <= 3 * len_b);
	/* doubling the head at most doubles the work (plus the fixed part) */
	assert_true(ex_b * len_a <= ex_a * len_b + 64 * len_a);
	/* and one call does the same work as len calls */
	ssize_t v;
	assert_int_equal(examined_oneshot(b, len_b, &r, &v), ex_b);
	free(a);
	free(b);
	free(bytewise_buf);
	bytewise_buf = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good_and_prefixes),
		cmocka_unit_test(test_good_fields),
		cmocka_unit_test(test_pipelined_and_body),
		cmocka_unit_test(test_bad_and_prefixes),
		cmocka_unit_test(test_bad_nul),
		cmocka_unit_test(test_limit_request_line),
		cmocka_unit_test(test_limit_header_bytes),
		cmocka_unit_test(test_limit_header_count),
		cmocka_unit_test(test_limit_body),
		cmocka_unit_test(test_keep_alive),
		cmocka_unit_test(test_ws_check),
		cmocka_unit_test(test_ws_protocol),
		cmocka_unit_test(test_ws_key_valid),
		cmocka_unit_test(test_bearer),
		cmocka_unit_test(test_query_next),
		cmocka_unit_test(test_flow_query),
		cmocka_unit_test(test_reason_names),
		cmocka_unit_test(test_reasons_documented),
		cmocka_unit_test(test_mutations),
		cmocka_unit_test(test_resume_vectors),
		cmocka_unit_test(test_resume_linear),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}

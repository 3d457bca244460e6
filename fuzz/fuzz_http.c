/* fuzz_http.c - libFuzzer target for the HTTP/1.1 request-head parser
 * (control/proto/cp_http_parse.c) and its helpers.
 *
 * Properties checked beyond "no crash, no out-of-bounds read":
 *  1. a head that parses ends in CRLF CRLF inside the input, and every slice
 *     of the result points inside it;
 *  2. the parser is a function of the head alone: parsing data[0..n) gives n
 *     again, and every strict prefix tried is "incomplete";
 *  3. a prefix of any input is "incomplete" or gives the input's verdict
 *     (the parser never changes its mind on more bytes it has not needed);
 *  4. tighter limits never accept what the defaults refuse;
 *  5. the helpers (WebSocket check, Bearer, /flow query) return a known
 *     reason or slices inside the input, and a /flow query valid for 32
 *     layers is valid with the same bits for 256;
 *  6. the resumable parse (cp_http_parser) fed in chunks (sizes taken from
 *     the input), in a buffer that moves between calls, gives the one-shot
 *     verdict, head length and header count with exactly the same bytes
 *     examined. */
#include <stdlib.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "../control/proto/cp_http_parse.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool inside(struct cp_http_str s, const uint8_t *data, size_t n)
{
	if (s.len == 0)
		return true;
	return (const uint8_t *)s.p >= data && (const uint8_t *)s.p + s.len <= data + n;
}

static bool known(ssize_t r)
{
	return strcmp(cp_http_reason_name((int)r), "unknown") != 0;
}

static void helpers(const struct cp_http_req *r, const uint8_t *data, size_t n)
{
	for (unsigned i = 0; i < r->n_headers; i++) {
		FUZZ_CHECK(inside(r->headers[i].name, data, n) && r->headers[i].name.len > 0);
		FUZZ_CHECK(inside(r->headers[i].value, data, n));
	}
	FUZZ_CHECK(inside(r->path, data, n) && r->path.len > 0 && r->path.p[0] == '/');
	FUZZ_CHECK(inside(r->query, data, n) && inside(r->host, data, n));

	int w = cp_http_ws_check(r);
	FUZZ_CHECK(w == 0 || known(w));
	if (w == 0)
		FUZZ_CHECK(cp_http_ws_key_is_valid(r->ws_key.p, r->ws_key.len));

	struct cp_http_str tok = { NULL, 0 };
	int b = cp_http_bearer(r, &tok);
	FUZZ_CHECK(b == 0 || b == -CP_HTTP_R_AUTH_MISSING || b == -CP_HTTP_R_AUTH_MALFORMED);
	if (b == 0)
		FUZZ_CHECK(tok.len > 0 && inside(tok, data, n));

	struct cp_flow_query q32, q256;
	int a = cp_flow_query_parse(r->query, 32, &q32);
	int c = cp_flow_query_parse(r->query, 256, &q256);
	FUZZ_CHECK(a == 0 || a == -CP_HTTP_R_BAD_QUERY || a == -CP_HTTP_R_BAD_LAYER);
	FUZZ_CHECK(c == 0 || c == -CP_HTTP_R_BAD_QUERY || c == -CP_HTTP_R_BAD_LAYER);
	if (a == 0) {
		FUZZ_CHECK(c == 0 && q32.status == q256.status);
		/* "all" differs by design; an explicit list does not */
		if (!(r->query.len >= 10 && memmem(r->query.p, r->query.len, "layers=all", 10)))
			FUZZ_CHECK(memcmp(q32.layers, q256.layers, sizeof(q32.layers)) == 0);
		for (unsigned l = 32; l < CP_FLOW_LAYERS_MAX; l++)
			FUZZ_CHECK(!cp_flow_query_has_layer(&q32, l));
	}
}

static void resume(const uint8_t *data, size_t size, const struct cp_http_limits *lim, ssize_t n,
		   const struct cp_http_req *r)
{
	struct cp_http_parser one, p;
	struct cp_http_req r1, r2;
	cp_http_parser_init(&one);
	FUZZ_CHECK(cp_http_parser_run(&one, data, size, lim, &r1) == n);
	cp_http_parser_init(&p);
	ssize_t v = -CP_HTTP_R_INCOMPLETE;
	uint8_t *buf = NULL;
	size_t have = 0, step = 0;
	while (have < size && v == -CP_HTTP_R_INCOMPLETE) {
		/* chunk sizes 1..16 from the input itself */
		have += 1 + (size_t)(data[step++ % size] & 15);
		if (have > size)
			have = size;
		uint8_t *nb = malloc(have);
		FUZZ_CHECK(nb != NULL);
		memcpy(nb, data, have);
		free(buf);
		buf = nb;
		v = cp_http_parser_run(&p, buf, have, lim, &r2);
	}
	if (size == 0)
		v = cp_http_parser_run(&p, data, 0, lim, &r2);
	FUZZ_CHECK(v == n);
	FUZZ_CHECK(p.examined == one.examined);
	if (n > 0) {
		FUZZ_CHECK(r2.n_headers == r->n_headers && r2.content_length == r->content_length);
		FUZZ_CHECK(r2.path.len == r->path.len && memcmp(r2.path.p, r->path.p, r->path.len) == 0);
		for (unsigned i = 0; i < r2.n_headers; i++)
			FUZZ_CHECK(r2.headers[i].value.len == r->headers[i].value.len &&
				   (const uint8_t *)r2.headers[i].value.p >= buf &&
				   (const uint8_t *)r2.headers[i].value.p + r2.headers[i].value.len <= buf + have);
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cp_http_limits lim, tight;
	struct cp_http_req r, r2;
	cp_http_limits_default(&lim);
	tight = (struct cp_http_limits){ .max_request_line = 64, .max_header_bytes = 128,
					 .max_headers = 4, .max_body = 100 };

	ssize_t n = cp_http_parse_request(data, size, &lim, &r);
	FUZZ_CHECK(n > 0 || known(n));
	if (n > 0) {
		FUZZ_CHECK((size_t)n <= size && n >= 4);
		FUZZ_CHECK(memcmp(data + n - 4, "\r\n\r\n", 4) == 0);
		helpers(&r, data, (size_t)n);
		FUZZ_CHECK(cp_http_parse_request(data, (size_t)n, &lim, &r2) == n);
		FUZZ_CHECK(cp_http_parse_request(data, (size_t)n - 1, &lim, &r2) ==
			   -CP_HTTP_R_INCOMPLETE);
		FUZZ_CHECK(cp_http_parse_request(data, (size_t)n / 2, &lim, &r2) ==
			   -CP_HTTP_R_INCOMPLETE);
	}
	if (size > 0) {
		size_t k = size > 1 ? (size_t)data[0] % size : 0;
		ssize_t p = cp_http_parse_request(data, k, &lim, &r2);
		FUZZ_CHECK(p == -CP_HTTP_R_INCOMPLETE || p == n);
		p = cp_http_parse_request(data, size - 1, &lim, &r2);
		FUZZ_CHECK(p == -CP_HTTP_R_INCOMPLETE || p == n);
	}
	ssize_t t = cp_http_parse_request(data, size, &tight, &r2);
	FUZZ_CHECK(t > 0 || known(t));
	if (t > 0)
		FUZZ_CHECK(t == n);
	resume(data, size, &lim, n, &r);
	return 0;
}

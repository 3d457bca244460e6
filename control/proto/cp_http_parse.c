/* cp_http_parse.c - HTTP/1.1 request-head parser (see cp_http_parse.h).
 *
 * One forward pass over the buffer, picohttpparser style: no state is kept
 * between calls, a call on a longer prefix simply starts again. Every byte is
 * classified the moment it is read, so bad input is refused at its first bad
 * byte and "incomplete" always means "every byte so far is valid". The two
 * size limits are enforced by never scanning past them: a line that has not
 * ended by the limit is refused whether or not more bytes are buffered.
 *
 * Grammar accepted (RFC 9112 section 2-5, RFC 9110 section 5):
 *   request-line = method SP origin-form SP "HTTP/" DIGIT "." DIGIT CRLF
 *   header-line  = token ":" OWS *( VCHAR / obs-text / SP / HTAB ) OWS CRLF
 *   head         = request-line *header-line CRLF
 * Pure; any thread.
 */
#include "cp_http_parse.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

/* Character classes, one bit each in cls[]. */
enum {
	C_TCHAR = 1 << 0,  /* RFC 9110 5.6.2 token character */
	C_TARGET = 1 << 1, /* may appear in an origin-form target (validated further) */
	C_PCHAR = 1 << 2,  /* unreserved / sub-delims / ":" / "@" (pchar without pct-encoded) */
	C_VALUE = 1 << 3,  /* field-vchar, SP, HTAB */
	C_T68 = 1 << 4,    /* token68 body character (RFC 9110 11.2), '=' excluded */
	C_B64 = 1 << 5,    /* base64 alphabet without '=' */
};

#define V C_VALUE
#define PT (C_PCHAR | C_TARGET | C_VALUE)  /* pchar, not a token character */
#define TPT (C_TCHAR | PT)                 /* token character and pchar */
#define AN (TPT | C_T68 | C_B64)           /* ALPHA / DIGIT */

/* Read-only, so any thread may use it. GNU range designators. */
static const uint8_t cls[256] = {
	['\t'] = V, [' '] = V,
	['!'] = TPT, ['"'] = V, ['#'] = C_TCHAR | V, ['$'] = TPT,
	['%'] = C_TCHAR | C_TARGET | V, ['&'] = TPT, ['\''] = TPT, ['('] = PT, [')'] = PT,
	['*'] = TPT, ['+'] = TPT | C_T68 | C_B64, [','] = PT, ['-'] = TPT | C_T68,
	['.'] = TPT | C_T68, ['/'] = C_TARGET | V | C_T68 | C_B64,
	['0' ... '9'] = AN,
	[':'] = PT, [';'] = PT, ['<'] = V, ['='] = PT, ['>'] = V, ['?'] = C_TARGET | V,
	['@'] = PT,
	['A' ... 'Z'] = AN,
	['['] = V, ['\\'] = V, [']'] = V, ['^'] = C_TCHAR | V, ['_'] = TPT | C_T68,
	['`'] = C_TCHAR | V,
	['a' ... 'z'] = AN,
	['{'] = V, ['|'] = C_TCHAR | V, ['}'] = V, ['~'] = TPT | C_T68,
	[0x80 ... 0xff] = V,
};

#undef V
#undef PT
#undef TPT
#undef AN

static inline bool is(uint8_t c, unsigned m)
{
	return (cls[c] & m) != 0;
}

static bool str_ieq(const char *p, size_t len, const char *lit)
{
	size_t n = strlen(lit);
	return len == n && strncasecmp(p, lit, n) == 0;
}

void cp_http_limits_default(struct cp_http_limits *lim)
{
	lim->max_request_line = 8192;
	lim->max_header_bytes = 16384;
	lim->max_headers = 64;
	lim->max_body = 16u << 20;
}

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* origin-form = absolute-path [ "?" query ]; absolute-path = 1*( "/" segment );
 * segment = *pchar; query = *( pchar / "/" / "?" ) (RFC 3986 3.3, 3.4).
 * Every byte is already C_TARGET. */
static int target_check(const uint8_t *t, size_t n, struct cp_http_req *r)
{
	if (n == 0 || t[0] != '/')
		return -CP_HTTP_R_BAD_TARGET;
	size_t q = n;
	for (size_t i = 0; i < n; i++) {
		if (t[i] == '%') {
			if (i + 2 >= n || hexval(t[i + 1]) < 0 || hexval(t[i + 2]) < 0)
				return -CP_HTTP_R_BAD_TARGET;
			i += 2;
		} else if (t[i] == '?' && q == n) {
			q = i;
		}
	}
	r->target = (struct cp_http_str){ (const char *)t, n };
	r->path = (struct cp_http_str){ (const char *)t, q };
	r->has_query = q < n;
	r->query = r->has_query ? (struct cp_http_str){ (const char *)t + q + 1, n - q - 1 }
				: (struct cp_http_str){ (const char *)t + n, 0 };
	return 0;
}

/* Out of bytes at scan end `end`, where the scan was capped at `cap`: over
 * the limit if the cap was reached, else more bytes are needed. */
static inline ssize_t out_of_bytes(size_t len, size_t cap, int over)
{
	return len >= cap ? -over : -CP_HTTP_R_INCOMPLETE;
}

static ssize_t request_line(const uint8_t *b, size_t len, const struct cp_http_limits *lim,
			    struct cp_http_req *r)
{
	size_t cap = lim->max_request_line;
	size_t end = len < cap ? len : cap;
	size_t i = 0;
#define NEED()                                                        \
	do {                                                          \
		if (i == end)                                         \
			return out_of_bytes(len, cap, CP_HTTP_R_URI_TOO_LONG); \
	} while (0)

	while (i < end && is(b[i], C_TCHAR))
		i++;
	NEED();
	if (b[i] != ' ' || i == 0)
		return -CP_HTTP_R_BAD_METHOD;
	/* Methods are case-sensitive (RFC 9110 9.1). */
	if (i == 3 && memcmp(b, "GET", 3) == 0)
		r->method = CP_HTTP_GET;
	else if (i == 4 && memcmp(b, "HEAD", 4) == 0)
		r->method = CP_HTTP_HEAD;
	else if (i == 4 && memcmp(b, "POST", 4) == 0)
		r->method = CP_HTTP_POST;
	else
		return -CP_HTTP_R_METHOD_NOT_ALLOWED;
	i++;

	size_t t0 = i;
	while (i < end && is(b[i], C_TARGET))
		i++;
	NEED();
	if (b[i] != ' ')
		return -CP_HTTP_R_BAD_TARGET;
	int rc = target_check(b + t0, i - t0, r);
	if (rc < 0)
		return rc;
	i++;

	static const char name[] = "HTTP/";
	for (size_t k = 0; k < 5; k++, i++) {
		NEED();
		if (b[i] != (uint8_t)name[k])
			return -CP_HTTP_R_BAD_VERSION;
	}
	int digits[2];
	for (int k = 0; k < 2; k++) {
		NEED();
		if (b[i] < '0' || b[i] > '9')
			return -CP_HTTP_R_BAD_VERSION;
		digits[k] = b[i++] - '0';
		if (k == 0) {
			NEED();
			if (b[i++] != '.')
				return -CP_HTTP_R_BAD_VERSION;
		}
	}
	if (digits[0] != 1 || digits[1] > 1)
		return -CP_HTTP_R_VERSION_NOT_SUPPORTED;
	r->version_minor = (uint8_t)digits[1];
	NEED();
	if (b[i] == '\n')
		return -CP_HTTP_R_BAD_LINE_ENDING;
	if (b[i] != '\r')
		return -CP_HTTP_R_BAD_VERSION;
	i++;
	NEED();
	if (b[i] != '\n')
		return -CP_HTTP_R_BAD_LINE_ENDING;
	return (ssize_t)(i + 1);
#undef NEED
}

/* Next element of a comma-separated list (RFC 9110 5.6.1): empty elements
 * are skipped; returns 1 with *e trimmed of OWS, 0 at the end. */
static int list_next(struct cp_http_str v, size_t *pos, struct cp_http_str *e)
{
	size_t i = *pos;
	while (i < v.len && (v.p[i] == ',' || v.p[i] == ' ' || v.p[i] == '\t'))
		i++;
	if (i == v.len) {
		*pos = i;
		return 0;
	}
	size_t s = i;
	while (i < v.len && v.p[i] != ',')
		i++;
	size_t t = i;
	while (t > s && (v.p[t - 1] == ' ' || v.p[t - 1] == '\t'))
		t--;
	*e = (struct cp_http_str){ v.p + s, t - s };
	*pos = i;
	return 1;
}

static bool all_tchar(const char *p, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is((uint8_t)p[i], C_TCHAR))
			return false;
	return true;
}

/* Connection: 1#connection-option (tokens). */
static int hdr_connection(struct cp_http_str v, bool *close, bool *keep, bool *upgrade)
{
	size_t pos = 0;
	struct cp_http_str e;
	while (list_next(v, &pos, &e)) {
		if (!all_tchar(e.p, e.len))
			return -CP_HTTP_R_BAD_CONNECTION;
		if (str_ieq(e.p, e.len, "close"))
			*close = true;
		else if (str_ieq(e.p, e.len, "keep-alive"))
			*keep = true;
		else if (str_ieq(e.p, e.len, "upgrade"))
			*upgrade = true;
	}
	return 0;
}

/* Upgrade: 1#protocol, protocol = token [ "/" token ] (RFC 9110 7.8). */
static int hdr_upgrade(struct cp_http_str v, bool *websocket)
{
	size_t pos = 0;
	struct cp_http_str e;
	while (list_next(v, &pos, &e)) {
		const char *slash = memchr(e.p, '/', e.len);
		size_t n = slash ? (size_t)(slash - e.p) : e.len;
		if (!all_tchar(e.p, n) || (slash && !all_tchar(slash + 1, e.len - n - 1)))
			return -CP_HTTP_R_BAD_CONNECTION;
		if (!slash && str_ieq(e.p, e.len, "websocket"))
			*websocket = true;
	}
	return 0;
}

static int hdr_content_length(struct cp_http_str v, const struct cp_http_limits *lim,
			      struct cp_http_req *r)
{
	if (r->has_content_length)
		return -CP_HTTP_R_BAD_CONTENT_LENGTH;
	if (v.len == 0)
		return -CP_HTTP_R_BAD_CONTENT_LENGTH;
	uint64_t n = 0;
	bool overflow = false;
	for (size_t i = 0; i < v.len; i++) {
		if (v.p[i] < '0' || v.p[i] > '9')
			return -CP_HTTP_R_BAD_CONTENT_LENGTH;
		unsigned d = (unsigned)(v.p[i] - '0');
		/* Keep checking the digits after an overflow: a non-digit is
		 * 400 wherever it is; an overflow is always 413, never a wrap. */
		if (n > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			n = n * 10 + d;
	}
	if (overflow || n > lim->max_body)
		return -CP_HTTP_R_BODY_TOO_LARGE;
	r->has_content_length = true;
	r->content_length = n;
	return 0;
}

struct head_flags {
	bool close, keep;
};

/* The meaning of the headers fanogate acts on; called for each header line
 * as soon as it is complete. */
static int header_apply(struct cp_http_str nm, struct cp_http_str v,
			const struct cp_http_limits *lim, struct cp_http_req *r,
			struct head_flags *f)
{
	switch (nm.len) {
	case 4:
		if (str_ieq(nm.p, nm.len, "host")) {
			if (r->host.p)
				return -CP_HTTP_R_DUPLICATE_HOST;
			r->host = v;
		}
		return 0;
	case 6:
		if (str_ieq(nm.p, nm.len, "expect")) {
			if (!str_ieq(v.p, v.len, "100-continue"))
				return -CP_HTTP_R_EXPECTATION;
			r->expect_continue = true;
		}
		return 0;
	case 7:
		if (str_ieq(nm.p, nm.len, "upgrade"))
			return hdr_upgrade(v, &r->upgrade_websocket);
		return 0;
	case 10:
		if (str_ieq(nm.p, nm.len, "connection"))
			return hdr_connection(v, &f->close, &f->keep, &r->conn_upgrade);
		return 0;
	case 13:
		if (str_ieq(nm.p, nm.len, "authorization")) {
			if (r->n_authorization < UINT8_MAX)
				r->n_authorization++;
			r->authorization = v;
		}
		return 0;
	case 14:
		if (str_ieq(nm.p, nm.len, "content-length"))
			return hdr_content_length(v, lim, r);
		return 0;
	case 17:
		if (str_ieq(nm.p, nm.len, "transfer-encoding"))
			return -CP_HTTP_R_TRANSFER_ENCODING;
		if (str_ieq(nm.p, nm.len, "sec-websocket-key")) {
			if (r->n_ws_key < UINT8_MAX)
				r->n_ws_key++;
			r->ws_key = v;
		}
		return 0;
	case 21:
		if (str_ieq(nm.p, nm.len, "sec-websocket-version")) {
			if (r->n_ws_version < UINT8_MAX)
				r->n_ws_version++;
			r->ws_version = v;
		}
		return 0;
	case 22:
		if (str_ieq(nm.p, nm.len, "sec-websocket-protocol")) {
			size_t pos = 0;
			struct cp_http_str e;
			r->ws_protocol_offered = true;
			/* subprotocol names compare case-sensitively (RFC 6455 4.1) */
			while (list_next(v, &pos, &e))
				if (e.len == 9 && memcmp(e.p, "aeon-flow", 9) == 0)
					r->ws_protocol_aeon_flow = true;
		}
		return 0;
	default:
		return 0;
	}
}

ssize_t cp_http_parse_request(const uint8_t *b, size_t len, const struct cp_http_limits *lim,
			      struct cp_http_req *out)
{
	struct cp_http_req r;
	struct head_flags f = { false, false };
	/* Only the fixed part is cleared and, on success, only it and the
	 * headers found are copied out: clearing and copying the whole 2 KiB
	 * array cost roughly 15-25% of a parse in alternating bench_proto
	 * runs (noisy machine). */
	memset(&r, 0, offsetof(struct cp_http_req, headers));

	ssize_t rl = request_line(b, len, lim, &r);
	if (rl < 0)
		return rl;

	unsigned max_headers = lim->max_headers < CP_HTTP_HEADERS_CAP ? lim->max_headers
								      : CP_HTTP_HEADERS_CAP;
	size_t cap = (size_t)rl + lim->max_header_bytes;
	size_t end = len < cap ? len : cap;
	size_t i = (size_t)rl;
#define NEED()                                                              \
	do {                                                                \
		if (i == end)                                               \
			return out_of_bytes(len, cap, CP_HTTP_R_HEADERS_TOO_LARGE); \
	} while (0)

	for (;;) {
		NEED();
		if (b[i] == '\r') {
			i++;
			NEED();
			if (b[i] != '\n')
				return -CP_HTTP_R_BAD_LINE_ENDING;
			i++;
			break;
		}
		if (b[i] == '\n')
			return -CP_HTTP_R_BAD_LINE_ENDING;
		/* obs-fold, or whitespace between the start line and the
		 * first field: both MUST be rejected (RFC 9112 2.2, 5.2). */
		if (b[i] == ' ' || b[i] == '\t')
			return -CP_HTTP_R_OBS_FOLD;
		if (r.n_headers >= max_headers)
			return -CP_HTTP_R_TOO_MANY_HEADERS;

		size_t n0 = i;
		while (i < end && is(b[i], C_TCHAR))
			i++;
		NEED();
		/* No whitespace between name and colon (RFC 9112 5.1). */
		if (b[i] != ':' || i == n0)
			return -CP_HTTP_R_BAD_HEADER_NAME;
		struct cp_http_str nm = { (const char *)b + n0, i - n0 };
		i++;
		while (i < end && (b[i] == ' ' || b[i] == '\t'))
			i++;
		size_t v0 = i;
		while (i < end && is(b[i], C_VALUE))
			i++;
		NEED();
		if (b[i] == '\n')
			return -CP_HTTP_R_BAD_LINE_ENDING;
		if (b[i] != '\r')
			return -CP_HTTP_R_BAD_HEADER_VALUE;
		size_t v1 = i;
		i++;
		NEED();
		if (b[i] != '\n')
			return -CP_HTTP_R_BAD_LINE_ENDING;
		i++;
		while (v1 > v0 && (b[v1 - 1] == ' ' || b[v1 - 1] == '\t'))
			v1--;
		struct cp_http_str v = { (const char *)b + v0, v1 - v0 };
		r.headers[r.n_headers++] = (struct cp_http_header){ nm, v };
		int rc = header_apply(nm, v, lim, &r, &f);
		if (rc < 0)
			return rc;
	}
#undef NEED

	if (r.version_minor == 1 && !r.host.p)
		return -CP_HTTP_R_MISSING_HOST;
	if (r.method == CP_HTTP_POST && !r.has_content_length)
		return -CP_HTTP_R_LENGTH_REQUIRED;
	/* RFC 9112 9.3: 1.1 persists unless "close"; 1.0 only with "keep-alive". */
	r.keep_alive = !f.close && (r.version_minor == 1 || f.keep);
	memcpy(out, &r, offsetof(struct cp_http_req, headers) + r.n_headers * sizeof(r.headers[0]));
	return (ssize_t)i;
}

const struct cp_http_header *cp_http_header_find(const struct cp_http_req *req, const char *name)
{
	for (unsigned i = 0; i < req->n_headers; i++)
		if (str_ieq(req->headers[i].name.p, req->headers[i].name.len, name))
			return &req->headers[i];
	return NULL;
}

bool cp_http_ws_key_is_valid(const char *s, size_t len)
{
	static const char last_ok[] = "AQgw"; /* base64 digits with 4 low zero bits */
	if (len != CP_WS_KEY_LEN || s[22] != '=' || s[23] != '=')
		return false;
	for (size_t i = 0; i < 22; i++)
		if (!is((uint8_t)s[i], C_B64))
			return false;
	return memchr(last_ok, s[21], 4) != NULL;
}

int cp_http_ws_check(const struct cp_http_req *r)
{
	/* RFC 6455 4.2.1 items 1-6, in the order a client can fix them. */
	if (!r->upgrade_websocket || !r->conn_upgrade || r->version_minor < 1)
		return -CP_HTTP_R_WS_NOT_UPGRADE;
	if (r->method != CP_HTTP_GET)
		return -CP_HTTP_R_WS_METHOD;
	if (r->n_ws_version != 1 || r->ws_version.len != 2 || memcmp(r->ws_version.p, "13", 2) != 0)
		return -CP_HTTP_R_WS_VERSION;
	if (r->n_ws_key != 1 || !cp_http_ws_key_is_valid(r->ws_key.p, r->ws_key.len))
		return -CP_HTTP_R_WS_KEY;
	return 0;
}

int cp_http_bearer(const struct cp_http_req *r, struct cp_http_str *token)
{
	if (r->n_authorization == 0)
		return -CP_HTTP_R_AUTH_MISSING;
	if (r->n_authorization > 1)
		return -CP_HTTP_R_AUTH_MALFORMED;
	struct cp_http_str v = r->authorization;
	if (v.len < 7 || strncasecmp(v.p, "bearer", 6) != 0 || v.p[6] != ' ')
		return -CP_HTTP_R_AUTH_MALFORMED;
	size_t i = 7;
	while (i < v.len && v.p[i] == ' ')
		i++;
	/* token68 = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
	size_t s = i;
	while (i < v.len && is((uint8_t)v.p[i], C_T68))
		i++;
	if (i == s)
		return -CP_HTTP_R_AUTH_MALFORMED;
	while (i < v.len && v.p[i] == '=')
		i++;
	if (i != v.len)
		return -CP_HTTP_R_AUTH_MALFORMED;
	*token = (struct cp_http_str){ v.p + s, v.len - s };
	return 0;
}

int cp_http_query_next(struct cp_http_str q, size_t *pos, struct cp_http_str *name,
		       struct cp_http_str *value)
{
	size_t i = *pos;
	if (i >= q.len)
		return 0;
	size_t s = i;
	while (i < q.len && q.p[i] != '&')
		i++;
	size_t e = i;
	const char *eq = memchr(q.p + s, '=', e - s);
	size_t ne = eq ? (size_t)(eq - q.p) : e;
	if (ne == s)
		return -CP_HTTP_R_BAD_QUERY;
	*name = (struct cp_http_str){ q.p + s, ne - s };
	*value = eq ? (struct cp_http_str){ eq + 1, e - ne - 1 } : (struct cp_http_str){ q.p + e, 0 };
	/* a trailing '&' leaves an empty parameter: refuse it */
	if (i < q.len && i + 1 == q.len)
		return -CP_HTTP_R_BAD_QUERY;
	*pos = i < q.len ? i + 1 : i;
	return 1;
}

/* layers = "all" / layer *( sep layer ); sep = "," / "%2C" / "%2c";
 * layer = "0" / %x31-39 *DIGIT, < n_layers. */
static int layers_parse(struct cp_http_str v, unsigned n_layers, struct cp_flow_query *q)
{
	if (v.len == 3 && memcmp(v.p, "all", 3) == 0) {
		for (unsigned l = 0; l < n_layers; l++)
			q->layers[l / 64] |= 1ull << (l % 64);
		return 0;
	}
	size_t i = 0;
	for (;;) {
		size_t s = i;
		unsigned n = 0;
		while (i < v.len && v.p[i] >= '0' && v.p[i] <= '9') {
			if (i - s >= 5)
				return -CP_HTTP_R_BAD_LAYER;
			n = n * 10 + (unsigned)(v.p[i] - '0');
			i++;
		}
		if (i == s || (v.p[s] == '0' && i - s > 1))
			return -CP_HTTP_R_BAD_QUERY;
		if (n >= n_layers)
			return -CP_HTTP_R_BAD_LAYER;
		q->layers[n / 64] |= 1ull << (n % 64);
		if (i == v.len)
			return 0;
		if (v.p[i] == ',')
			i++;
		else if (i + 3 <= v.len && v.p[i] == '%' && v.p[i + 1] == '2' &&
			 (v.p[i + 2] == 'C' || v.p[i + 2] == 'c'))
			i += 3;
		else
			return -CP_HTTP_R_BAD_QUERY;
	}
}

int cp_flow_query_parse(struct cp_http_str query, unsigned n_layers, struct cp_flow_query *out)
{
	struct cp_flow_query q;
	memset(&q, 0, sizeof(q));
	q.status = true;
	if (n_layers > CP_FLOW_LAYERS_MAX)
		n_layers = CP_FLOW_LAYERS_MAX;
	bool seen_layers = false, seen_status = false, seen_layer = false;
	size_t pos = 0;
	struct cp_http_str nm, v;
	int rc;
	while ((rc = cp_http_query_next(query, &pos, &nm, &v)) > 0) {
		if (nm.len == 6 && memcmp(nm.p, "layers", 6) == 0) {
			if (seen_layers)
				return -CP_HTTP_R_BAD_QUERY;
			seen_layers = true;
			rc = layers_parse(v, n_layers, &q);
			if (rc < 0)
				return rc;
		} else if (nm.len == 5 && memcmp(nm.p, "layer", 5) == 0) {
			/* layer=<L>: the connection is bound to destination layer L
			 * (wire.md 3); one layer, same number grammar as layers=. */
			struct cp_flow_query one;
			memset(&one, 0, sizeof(one));
			if (seen_layer || (v.len == 3 && memcmp(v.p, "all", 3) == 0) || memchr(v.p, ',', v.len) ||
			    memchr(v.p, '%', v.len))
				return -CP_HTTP_R_BAD_QUERY;
			seen_layer = true;
			rc = layers_parse(v, n_layers, &one);
			if (rc < 0)
				return rc;
			for (unsigned l = 0; l < n_layers; l++)
				if ((one.layers[l / 64] >> (l % 64)) & 1)
					q.bound_layer = (uint16_t)l;
			q.layer_bound = true;
		} else if (nm.len == 6 && memcmp(nm.p, "status", 6) == 0) {
			if (seen_status || v.len != 1 || (v.p[0] != '0' && v.p[0] != '1'))
				return -CP_HTTP_R_BAD_QUERY;
			seen_status = true;
			q.status = v.p[0] == '1';
		} else {
			return -CP_HTTP_R_BAD_QUERY;
		}
	}
	if (rc < 0)
		return rc;
	for (unsigned w = 0; w < FG_ARRAY_LEN(q.layers); w++)
		q.n_layers += (unsigned)__builtin_popcountll(q.layers[w]);
	*out = q;
	return 0;
}

bool cp_flow_query_has_layer(const struct cp_flow_query *q, unsigned layer)
{
	return layer < CP_FLOW_LAYERS_MAX && (q->layers[layer / 64] >> (layer % 64)) & 1;
}

static const struct {
	const char *name;
	int status;
} reasons[] = {
	[CP_HTTP_R_INCOMPLETE - CP_HTTP_R_INCOMPLETE] = { "incomplete", 0 },
	[CP_HTTP_R_BAD_METHOD - CP_HTTP_R_INCOMPLETE] = { "bad_method", 400 },
	[CP_HTTP_R_METHOD_NOT_ALLOWED - CP_HTTP_R_INCOMPLETE] = { "method_not_allowed", 405 },
	[CP_HTTP_R_BAD_TARGET - CP_HTTP_R_INCOMPLETE] = { "bad_target", 400 },
	[CP_HTTP_R_URI_TOO_LONG - CP_HTTP_R_INCOMPLETE] = { "uri_too_long", 414 },
	[CP_HTTP_R_BAD_VERSION - CP_HTTP_R_INCOMPLETE] = { "bad_version", 400 },
	[CP_HTTP_R_VERSION_NOT_SUPPORTED - CP_HTTP_R_INCOMPLETE] = { "version_not_supported", 505 },
	[CP_HTTP_R_BAD_LINE_ENDING - CP_HTTP_R_INCOMPLETE] = { "bad_line_ending", 400 },
	[CP_HTTP_R_BAD_HEADER_NAME - CP_HTTP_R_INCOMPLETE] = { "bad_header_name", 400 },
	[CP_HTTP_R_BAD_HEADER_VALUE - CP_HTTP_R_INCOMPLETE] = { "bad_header_value", 400 },
	[CP_HTTP_R_OBS_FOLD - CP_HTTP_R_INCOMPLETE] = { "obs_fold", 400 },
	[CP_HTTP_R_HEADERS_TOO_LARGE - CP_HTTP_R_INCOMPLETE] = { "headers_too_large", 431 },
	[CP_HTTP_R_TOO_MANY_HEADERS - CP_HTTP_R_INCOMPLETE] = { "too_many_headers", 431 },
	[CP_HTTP_R_MISSING_HOST - CP_HTTP_R_INCOMPLETE] = { "missing_host", 400 },
	[CP_HTTP_R_DUPLICATE_HOST - CP_HTTP_R_INCOMPLETE] = { "duplicate_host", 400 },
	[CP_HTTP_R_BAD_CONTENT_LENGTH - CP_HTTP_R_INCOMPLETE] = { "bad_content_length", 400 },
	[CP_HTTP_R_BODY_TOO_LARGE - CP_HTTP_R_INCOMPLETE] = { "body_too_large", 413 },
	[CP_HTTP_R_LENGTH_REQUIRED - CP_HTTP_R_INCOMPLETE] = { "length_required", 411 },
	[CP_HTTP_R_TRANSFER_ENCODING - CP_HTTP_R_INCOMPLETE] = { "transfer_encoding", 501 },
	[CP_HTTP_R_BAD_CONNECTION - CP_HTTP_R_INCOMPLETE] = { "bad_connection", 400 },
	[CP_HTTP_R_EXPECTATION - CP_HTTP_R_INCOMPLETE] = { "expectation_failed", 417 },
	[CP_HTTP_R_WS_NOT_UPGRADE - CP_HTTP_R_INCOMPLETE] = { "ws_not_upgrade", 400 },
	[CP_HTTP_R_WS_METHOD - CP_HTTP_R_INCOMPLETE] = { "ws_method", 405 },
	[CP_HTTP_R_WS_KEY - CP_HTTP_R_INCOMPLETE] = { "ws_key", 400 },
	[CP_HTTP_R_WS_VERSION - CP_HTTP_R_INCOMPLETE] = { "ws_version", 426 },
	[CP_HTTP_R_AUTH_MISSING - CP_HTTP_R_INCOMPLETE] = { "auth_missing", 401 },
	[CP_HTTP_R_AUTH_MALFORMED - CP_HTTP_R_INCOMPLETE] = { "auth_malformed", 401 },
	[CP_HTTP_R_BAD_QUERY - CP_HTTP_R_INCOMPLETE] = { "bad_query", 400 },
	[CP_HTTP_R_BAD_LAYER - CP_HTTP_R_INCOMPLETE] = { "bad_layer", 400 },
};

_Static_assert(FG_ARRAY_LEN(reasons) == CP_HTTP_R__END - CP_HTTP_R_INCOMPLETE,
	       "every reason has a name and a status");

static int reason_index(int reason)
{
	if (reason < 0)
		reason = -reason;
	if (reason < CP_HTTP_R_INCOMPLETE || reason >= CP_HTTP_R__END)
		return -1;
	return reason - CP_HTTP_R_INCOMPLETE;
}

const char *cp_http_reason_name(int reason)
{
	if (reason == 0)
		return "ok";
	int i = reason_index(reason);
	return i < 0 ? "unknown" : reasons[i].name;
}

int cp_http_reason_status(int reason)
{
	if (reason == 0)
		return 0;
	int i = reason_index(reason);
	return i < 0 ? 400 : reasons[i].status;
}

const char *cp_http_status_text(int status)
{
	switch (status) {
	case 101: return "Switching Protocols";
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 417: return "Expectation Failed";
	case 426: return "Upgrade Required";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	default: return "Unknown";
	}
}

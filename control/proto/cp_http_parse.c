/* cp_http_parse.c - HTTP/1.1 request-head parser (see cp_http_parse.h).
 *
 * One forward pass over the buffer that can stop at any byte and resume
 * there (struct cp_http_parser): a head arriving one TLS record (or one
 * byte) at a time is examined once in all, not once per record. Every byte
 * is classified the moment it is read, so bad input is refused at its first
 * bad byte and "incomplete" always means "every byte so far is valid". The
 * two size limits are enforced by never scanning past them: a line that has
 * not ended by the limit is refused whether or not more bytes are buffered.
 * cp_http_parse_request is the one-call form (a fresh parser).
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


/* The meaning of the headers fanogate acts on; called for each header line
 * as soon as it is complete. */
static int header_apply(struct cp_http_str nm, struct cp_http_str v,
			const struct cp_http_limits *lim, struct cp_http_req *r,
			struct cp_http_head_flags *f)
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

/* ---- the resumable parse --------------------------------------------------- */
/* States of struct cp_http_parser. A call runs from st at pos until the
 * bytes (or the limit) run out, a verdict, or the head ends:
 *
 *   METHOD -SP-> TARGET -SP-> VERSION (k: "HTTP/" d "." d CR LF)
 *      --> LINE -CR-> END_LF -LF-> DONE (head length)
 *           |  \-token-> NAME -:-> OWS --> VALUE -CR-> VALUE_LF -LF-> LINE
 *   any bad byte, or a limit passed --> DONE (the reason)
 *
 * marks: [0] target start (TARGET) or name start (NAME..VALUE_LF), [1] name
 * end, [2] value start, [3] value end (before trimming). */
enum { S_METHOD, S_TARGET, S_VERSION, S_LINE, S_NAME, S_OWS, S_VALUE, S_VALUE_LF, S_END_LF, S_DONE };

void cp_http_parser_init(struct cp_http_parser *p)
{
	/* The header array is written only up to n_headers: left uncleared
	 * (clearing and copying the whole 2 KiB array cost roughly 15-25% of a
	 * parse in alternating bench_proto runs, noisy machine). */
	memset(p, 0, offsetof(struct cp_http_parser, r.headers));
}

static void slice_rebase(struct cp_http_str *s, uintptr_t from, const uint8_t *to)
{
	/* Offsets survive the move: the bytes before pos are the same. */
	if (s->p)
		s->p = (const char *)to + ((uintptr_t)s->p - from);
}

static void parser_rebase(struct cp_http_parser *p, const uint8_t *b)
{
	struct cp_http_req *r = &p->r;
	struct cp_http_str *all[] = { &r->target, &r->path, &r->query, &r->host,
				      &r->ws_key, &r->ws_version, &r->authorization };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		slice_rebase(all[i], p->base, b);
	for (unsigned i = 0; i < r->n_headers; i++) {
		slice_rebase(&r->headers[i].name, p->base, b);
		slice_rebase(&r->headers[i].value, p->base, b);
	}
}

static ssize_t verdict(struct cp_http_parser *p, ssize_t v)
{
	p->st = S_DONE;
	p->verdict = v;
	return v;
}

/* Request line: states METHOD, TARGET, VERSION. 0 when it ended (i past its
 * LF), else the return value of the run. */
static ssize_t run_request_line(struct cp_http_parser *p, const uint8_t *b, size_t len,
				const struct cp_http_limits *lim, size_t *ip)
{
	struct cp_http_req *r = &p->r;
	size_t cap = lim->max_request_line;
	size_t end = len < cap ? len : cap;
	size_t i = *ip;
	ssize_t rc = 0;
#define NEED()                                                                 \
	do {                                                                   \
		if (i == end) {                                                \
			rc = out_of_bytes(len, cap, CP_HTTP_R_URI_TOO_LONG);   \
			goto out;                                              \
		}                                                              \
	} while (0)
#define FAIL(reason)                                                           \
	do {                                                                   \
		rc = verdict(p, -(reason));                                    \
		goto out;                                                      \
	} while (0)

	switch (p->st) {
	case S_METHOD:
		while (i < end && is(b[i], C_TCHAR))
			i++;
		NEED();
		if (b[i] != ' ' || i == 0)
			FAIL(CP_HTTP_R_BAD_METHOD);
		/* Methods are case-sensitive (RFC 9110 9.1). */
		if (i == 3 && memcmp(b, "GET", 3) == 0)
			r->method = CP_HTTP_GET;
		else if (i == 4 && memcmp(b, "HEAD", 4) == 0)
			r->method = CP_HTTP_HEAD;
		else if (i == 4 && memcmp(b, "POST", 4) == 0)
			r->method = CP_HTTP_POST;
		else
			FAIL(CP_HTTP_R_METHOD_NOT_ALLOWED);
		p->examined += i; /* the compare */
		i++;
		p->mark[0] = i;
		p->st = S_TARGET;
		/* fall through */
	case S_TARGET:
		while (i < end && is(b[i], C_TARGET))
			i++;
		NEED();
		if (b[i] != ' ')
			FAIL(CP_HTTP_R_BAD_TARGET);
		p->examined += i - p->mark[0];
		rc = target_check(b + p->mark[0], i - p->mark[0], r);
		if (rc < 0)
			FAIL(-rc);
		i++;
		p->k = 0;
		p->st = S_VERSION;
		/* fall through */
	case S_VERSION:
		/* k: 0-4 "HTTP/", 5 digit, 6 ".", 7 digit, 8 CR, 9 LF */
		while (p->k < 10) {
			NEED();
			uint8_t ch = b[i];
			if (p->k < 5) {
				if (ch != (uint8_t)"HTTP/"[p->k])
					FAIL(CP_HTTP_R_BAD_VERSION);
			} else if (p->k == 5 || p->k == 7) {
				if (ch < '0' || ch > '9')
					FAIL(CP_HTTP_R_BAD_VERSION);
				if (p->k == 5) {
					p->major = (uint8_t)(ch - '0');
				} else {
					if (p->major != 1 || ch > '1')
						FAIL(CP_HTTP_R_VERSION_NOT_SUPPORTED);
					r->version_minor = (uint8_t)(ch - '0');
				}
			} else if (p->k == 6) {
				if (ch != '.')
					FAIL(CP_HTTP_R_BAD_VERSION);
			} else if (p->k == 8) {
				if (ch == '\n')
					FAIL(CP_HTTP_R_BAD_LINE_ENDING);
				if (ch != '\r')
					FAIL(CP_HTTP_R_BAD_VERSION);
			} else if (ch != '\n') {
				FAIL(CP_HTTP_R_BAD_LINE_ENDING);
			}
			i++;
			p->k++;
		}
		p->rl = i;
		p->st = S_LINE;
		rc = 0;
		break;
	default:
		break;
	}
out:
	*ip = i;
	return rc;
#undef NEED
#undef FAIL
}

ssize_t cp_http_parser_run(struct cp_http_parser *p, const uint8_t *b, size_t len,
			   const struct cp_http_limits *lim, struct cp_http_req *out)
{
	struct cp_http_req *r = &p->r;
	if (p->base && p->base != (uintptr_t)b)
		parser_rebase(p, b);
	p->base = (uintptr_t)b;
	if (p->st == S_DONE) {
		if (p->verdict > 0)
			memcpy(out, r, offsetof(struct cp_http_req, headers) + r->n_headers * sizeof(r->headers[0]));
		return p->verdict;
	}
	size_t i = p->pos, from = i;
	ssize_t rc = 0;
	if (p->st < S_LINE) {
		rc = run_request_line(p, b, len, lim, &i);
		if (rc < 0)
			goto out;
	}

	unsigned max_headers = lim->max_headers < CP_HTTP_HEADERS_CAP ? lim->max_headers
								      : CP_HTTP_HEADERS_CAP;
	size_t cap = p->rl + lim->max_header_bytes;
	size_t end = len < cap ? len : cap;
#define NEED()                                                                      \
	do {                                                                        \
		if (i == end) {                                                     \
			rc = out_of_bytes(len, cap, CP_HTTP_R_HEADERS_TOO_LARGE);   \
			goto out;                                                   \
		}                                                                   \
	} while (0)
#define FAIL(reason)                                                                \
	do {                                                                        \
		rc = verdict(p, -(reason));                                         \
		goto out;                                                           \
	} while (0)

	for (;;) {
		switch (p->st) {
		case S_LINE:
			NEED();
			if (b[i] == '\r') {
				i++;
				p->st = S_END_LF;
				continue;
			}
			if (b[i] == '\n')
				FAIL(CP_HTTP_R_BAD_LINE_ENDING);
			/* obs-fold, or whitespace between the start line and the
			 * first field: both MUST be rejected (RFC 9112 2.2, 5.2). */
			if (b[i] == ' ' || b[i] == '\t')
				FAIL(CP_HTTP_R_OBS_FOLD);
			if (r->n_headers >= max_headers)
				FAIL(CP_HTTP_R_TOO_MANY_HEADERS);
			p->mark[0] = i;
			p->st = S_NAME;
			/* fall through */
		case S_NAME:
			while (i < end && is(b[i], C_TCHAR))
				i++;
			NEED();
			/* No whitespace between name and colon (RFC 9112 5.1). */
			if (b[i] != ':' || i == p->mark[0])
				FAIL(CP_HTTP_R_BAD_HEADER_NAME);
			p->mark[1] = i;
			i++;
			p->st = S_OWS;
			/* fall through */
		case S_OWS:
			while (i < end && (b[i] == ' ' || b[i] == '\t'))
				i++;
			/* Stay here when the bytes end: a later SP is still OWS. */
			NEED();
			p->mark[2] = i;
			p->st = S_VALUE;
			/* fall through */
		case S_VALUE:
			while (i < end && is(b[i], C_VALUE))
				i++;
			NEED();
			if (b[i] == '\n')
				FAIL(CP_HTTP_R_BAD_LINE_ENDING);
			if (b[i] != '\r')
				FAIL(CP_HTTP_R_BAD_HEADER_VALUE);
			p->mark[3] = i;
			i++;
			p->st = S_VALUE_LF;
			/* fall through */
		case S_VALUE_LF: {
			NEED();
			if (b[i] != '\n')
				FAIL(CP_HTTP_R_BAD_LINE_ENDING);
			i++;
			size_t v0 = p->mark[2], v1 = p->mark[3];
			while (v1 > v0 && (b[v1 - 1] == ' ' || b[v1 - 1] == '\t'))
				v1--;
			struct cp_http_str nm = { (const char *)b + p->mark[0], p->mark[1] - p->mark[0] };
			struct cp_http_str v = { (const char *)b + v0, v1 - v0 };
			/* trimming, then header_apply's compares and list scans */
			p->examined += (p->mark[3] - v1) + nm.len + v.len;
			r->headers[r->n_headers++] = (struct cp_http_header){ nm, v };
			int hr = header_apply(nm, v, lim, r, &p->f);
			if (hr < 0)
				FAIL(-hr);
			p->st = S_LINE;
			continue;
		}
		case S_END_LF:
			NEED();
			if (b[i] != '\n')
				FAIL(CP_HTTP_R_BAD_LINE_ENDING);
			i++;
			if (r->version_minor == 1 && !r->host.p)
				FAIL(CP_HTTP_R_MISSING_HOST);
			if (r->method == CP_HTTP_POST && !r->has_content_length)
				FAIL(CP_HTTP_R_LENGTH_REQUIRED);
			/* RFC 9112 9.3: 1.1 persists unless "close"; 1.0 only with
			 * "keep-alive". */
			r->keep_alive = !p->f.close && (r->version_minor == 1 || p->f.keep);
			memcpy(out, r, offsetof(struct cp_http_req, headers) + r->n_headers * sizeof(r->headers[0]));
			rc = verdict(p, (ssize_t)i);
			goto out;
		default:
			FAIL(CP_HTTP_R_INCOMPLETE); /* cannot happen */
		}
	}
#undef NEED
#undef FAIL
out:
	p->examined += i - from;
	p->pos = i;
	return rc;
}

ssize_t cp_http_parse_request(const uint8_t *b, size_t len, const struct cp_http_limits *lim,
			      struct cp_http_req *out)
{
	struct cp_http_parser p;
	cp_http_parser_init(&p);
	return cp_http_parser_run(&p, b, len, lim, out);
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

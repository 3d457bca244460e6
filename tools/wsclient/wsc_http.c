/* wsc_http.c - tools/wsclient's HTTP/1.1 layer (client end): the response
 * head parser (status line, Content-Length, Connection; RFC 9112), header
 * lookup, request heads with Host and the bearer token, and whole
 * responses taken from the connection's input buffer. Bodies are delimited
 * by Content-Length only: a response with Transfer-Encoding is refused,
 * one with neither has an empty body (fanogate always sends a length).
 * See wsc.h for the contract. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "wsc_int.h"

bool wsc_has_token(const char *v, size_t n, const char *t)
{
	size_t tl = strlen(t);
	size_t i = 0;
	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		size_t s = i;
		while (i < n && v[i] != ',')
			i++;
		size_t e = i;
		while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (e > s && e - s == tl && strncasecmp(v + s, t, tl) == 0)
			return true;
	}
	return false;
}

static bool is_digit(uint8_t ch)
{
	return ch >= '0' && ch <= '9';
}

/* The header line starting at p (the name) in a head ending at end: the
 * value and its length, blanks trimmed; false if the line has no colon. */
static bool header_value(const char *p, const char *end, size_t nl, const char **v, size_t *vl)
{
	const char *eol = memchr(p, '\r', (size_t)(end - p));
	if (!eol || (size_t)(eol - p) <= nl || p[nl] != ':')
		return false;
	const char *s = p + nl + 1;
	while (s < eol && (*s == ' ' || *s == '\t'))
		s++;
	const char *e = eol;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*v = s;
	*vl = (size_t)(e - s);
	return true;
}

const char *wsc_http_header(const uint8_t *head, size_t head_len, const char *name, size_t *vlen)
{
	const char *h = (const char *)head, *end = h + head_len;
	size_t nl = strlen(name);
	/* header lines start after a CRLF; the status line is skipped */
	const char *p = memchr(h, '\n', head_len);
	while (p && ++p < end) {
		const char *v;
		size_t vl;
		if ((size_t)(end - p) > nl && strncasecmp(p, name, nl) == 0 && header_value(p, end, nl, &v, &vl)) {
			*vlen = vl;
			return v;
		}
		p = memchr(p, '\n', (size_t)(end - p));
	}
	return NULL;
}

ssize_t wsc_http_head_parse(const uint8_t *buf, size_t len, struct wsc_http_head *h)
{
	size_t lim = len < WSC_HTTP_HEAD_MAX ? len : WSC_HTTP_HEAD_MAX;
	const uint8_t *end = memmem(buf, lim, "\r\n\r\n", 4);
	if (!end)
		return len >= WSC_HTTP_HEAD_MAX ? -EMSGSIZE : 0;
	size_t hl = (size_t)(end - buf) + 4;
	/* status-line = HTTP-version SP 3DIGIT SP [reason-phrase] */
	if (hl < 16 || memcmp(buf, "HTTP/1.", 7) != 0 || !is_digit(buf[7]) || buf[8] != ' ' || !is_digit(buf[9]) ||
	    !is_digit(buf[10]) || !is_digit(buf[11]) || (buf[12] != ' ' && buf[12] != '\r'))
		return -EPROTO;
	int status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
	if (status < 100 || status > 599)
		return -EPROTO;
	struct wsc_http_head r = { .status = status, .head_len = hl, .content_length = -1 };
	size_t vl;
	if (wsc_http_header(buf, hl, "Transfer-Encoding", &vl))
		return -EPROTO;
	/* Content-Length: digits only; repeated only with the same value
	 * (RFC 9110 8.6) */
	const char *p = (const char *)buf, *e = p + hl;
	while ((p = memchr(p, '\n', (size_t)(e - p))) && ++p < e) {
		const char *v;
		if ((size_t)(e - p) <= 14 || strncasecmp(p, "Content-Length", 14) != 0 || !header_value(p, e, 14, &v, &vl))
			continue;
		if (vl == 0 || vl > 18)
			return -EPROTO;
		int64_t n = 0;
		for (size_t i = 0; i < vl; i++) {
			if (!is_digit((uint8_t)v[i]))
				return -EPROTO;
			n = n * 10 + (v[i] - '0');
		}
		if (r.content_length >= 0 && r.content_length != n)
			return -EPROTO;
		r.content_length = n;
	}
	const char *cv = wsc_http_header(buf, hl, "Connection", &vl);
	r.close = cv && wsc_has_token(cv, vl, "close");
	*h = r;
	return (ssize_t)hl;
}

int wsc_http_request_head(const struct wsc_conn *c, const char *method, const char *path, int64_t body_len,
			  char *out, size_t cap)
{
	int n = body_len < 0 ? snprintf(out, cap, "%s %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", method, path, c->host_hdr,
					c->auth_hdr)
			     : snprintf(out, cap,
					"%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/octet-stream\r\n"
					"Content-Length: %" PRId64 "\r\n%s\r\n",
					method, path, c->host_hdr, body_len, c->auth_hdr);
	if (n < 0 || (size_t)n >= cap)
		return -ENOSPC;
	return n;
}

int wsc_http_next(struct wsc_conn *c, struct wsc_http_resp *r)
{
	wsc_unborrow(c);
	if (c->in_off == c->in_len)
		return 0;
	struct wsc_http_head h;
	ssize_t hl = wsc_http_head_parse(c->in + c->in_off, c->in_len - c->in_off, &h);
	if (hl <= 0)
		return (int)hl;
	uint64_t blen = h.content_length < 0 ? 0 : (uint64_t)h.content_length;
	if (blen > c->max_message)
		return -EMSGSIZE;
	if (c->in_len - c->in_off - (size_t)hl < blen)
		return 0;
	size_t body = c->in_off + (size_t)hl, end = body + (size_t)blen;
	/* invariant 1: in[end] exists (end <= in_len < in_cap) */
	c->borrow_at = end;
	c->borrow_byte = c->in[end];
	c->in[end] = 0;
	r->status = h.status;
	r->body = (const char *)c->in + body;
	r->body_len = (size_t)blen;
	r->close = h.close;
	c->in_off = end;
	return 1;
}

/* wsc_int.h - the connection object shared by the files of tools/wsclient
 * (wsc_conn.c: TLS and the byte buffers, wsc_ws.c: WebSocket, wsc_http.c:
 * HTTP/1.1). Not for callers: they see struct wsc_conn only through wsc.h. */
#ifndef WSC_INT_H
#define WSC_INT_H

#include "wsc.h"

/* Invariants:
 * 1. in_off <= in_len < in_cap whenever in != NULL: one byte past the
 *    received bytes always exists (wsc_http_next's NUL goes there or over
 *    the byte after a body, saved in borrow_byte and put back by the next
 *    wsc_http_next or wsc_read).
 * 2. in[in_off..in_len) are received bytes no event or response has taken.
 * 3. retry_len > 0 iff the last SSL_write asked to be retried; the next one
 *    must pass at least retry_len bytes, the same ones.
 * 4. broken => no TLS call but SSL_free is made on ssl any more. */
struct wsc_conn {
	int fd;
	SSL *ssl;
	bool nonblocking;
	bool want_write;
	bool broken;
	bool ws;        /* upgraded: rx is initialised */
	bool ws_failed; /* the server broke RFC 6455: no more events */
	uint32_t timeout_ms;
	uint64_t max_message;
	size_t retry_len;
	uint8_t *in;
	size_t in_off, in_len, in_cap;
	size_t borrow_at; /* SIZE_MAX: nothing borrowed */
	uint8_t borrow_byte;
	struct cp_ws_rx rx;
	char host_hdr[300];
	char *auth_hdr; /* "Authorization: Bearer ...\r\n" or "" */
};

/* Whether the comma-separated header value v[0..n) holds token t
 * (case-insensitive), as "Connection: keep-alive, Upgrade" does. */
bool wsc_has_token(const char *v, size_t n, const char *t);

/* Put back the byte wsc_http_next replaced by a NUL, if any. */
void wsc_unborrow(struct wsc_conn *c);

#endif

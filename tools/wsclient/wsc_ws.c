/* wsc_ws.c - tools/wsclient's WebSocket layer (RFC 6455, client end): the
 * opening handshake with its key check (4.1, 4.2.2), server frames out of
 * the input buffer through the project's codec in the client role
 * (control/proto/cp_ws_codec: every header check, reassembly around
 * control frames, whole frames delivered in place), and masked client
 * frames (5.3) with a fresh key each. See wsc.h for the contract. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "wsc_int.h"

int wsc_ws_upgrade(struct wsc_conn *c, const char *path, char *err, size_t errlen)
{
	uint8_t raw[16];
	char key[32], expect[CP_WS_ACCEPT_LEN + 1];
	if (RAND_bytes(raw, sizeof raw) != 1) {
		wsc_tls_err(err, errlen, "RAND_bytes");
		return -EIO;
	}
	/* 4.1: the key is 16 random bytes, base64 (24 characters) */
	EVP_EncodeBlock((unsigned char *)key, raw, sizeof raw);
	if (cp_ws_accept_key(key, strlen(key), expect) < 0) {
		wsc_tls_err(err, errlen, "SHA-1 for Sec-WebSocket-Accept");
		return -EIO;
	}
	char *req = NULL;
	int n = asprintf(&req,
			 "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
			 "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n%s\r\n",
			 path, c->host_hdr, key, c->auth_hdr);
	if (n < 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	int rc = wsc_write_all(c, req, (size_t)n);
	free(req);
	if (rc < 0) {
		wsc_tls_err(err, errlen, "sending the upgrade request");
		return rc;
	}
	struct wsc_http_head h;
	ssize_t hl;
	for (;;) {
		if (c->in_len > c->in_off &&
		    (hl = wsc_http_head_parse(c->in + c->in_off, c->in_len - c->in_off, &h)) != 0)
			break;
		ssize_t r = wsc_read(c);
		if (r < 0) {
			char what[160];
			snprintf(what, sizeof what, "reading the upgrade response (%s)",
				 r == -ETIMEDOUT ? "timed out" : r == -EPIPE ? "closed by the server" : strerror((int)-r));
			wsc_tls_err(err, errlen, what);
			return (int)r;
		}
	}
	if (hl < 0) {
		snprintf(err, errlen, "upgrade response: %s",
			 hl == -EMSGSIZE ? "head too long" : "not an HTTP/1.1 response head");
		return (int)hl;
	}
	const char *head = (const char *)c->in + c->in_off;
	if (h.status != 101) {
		size_t line = strcspn(head, "\r\n");
		snprintf(err, errlen, "upgrade refused: %.*s", (int)(line < 200 ? line : 200), head);
		return -EACCES;
	}
	size_t vl;
	const char *v = wsc_http_header(c->in + c->in_off, (size_t)hl, "Upgrade", &vl);
	if (!v || vl != 9 || strncasecmp(v, "websocket", 9) != 0) {
		snprintf(err, errlen, "upgrade response: no \"Upgrade: websocket\"");
		return -EPROTO;
	}
	v = wsc_http_header(c->in + c->in_off, (size_t)hl, "Connection", &vl);
	if (!v || !wsc_has_token(v, vl, "upgrade")) {
		snprintf(err, errlen, "upgrade response: no \"Connection: Upgrade\"");
		return -EPROTO;
	}
	v = wsc_http_header(c->in + c->in_off, (size_t)hl, "Sec-WebSocket-Accept", &vl);
	if (!v || vl != CP_WS_ACCEPT_LEN || memcmp(v, expect, CP_WS_ACCEPT_LEN) != 0) {
		snprintf(err, errlen, "upgrade response: %s Sec-WebSocket-Accept", v ? "wrong" : "no");
		return -EPROTO;
	}
	/* 4.1: no extension or subprotocol was asked for, so none may come */
	if (wsc_http_header(c->in + c->in_off, (size_t)hl, "Sec-WebSocket-Extensions", &vl) ||
	    wsc_http_header(c->in + c->in_off, (size_t)hl, "Sec-WebSocket-Protocol", &vl)) {
		snprintf(err, errlen, "upgrade response: an extension or subprotocol that was not asked for");
		return -EPROTO;
	}
	c->in_off += (size_t)hl;
	struct cp_ws_rx_cfg cfg = { .max_message = c->max_message, .accept_text = true, .client = true };
	cp_ws_rx_init(&c->rx, &cfg);
	c->ws = true;
	return 0;
}

int wsc_ws_next(struct wsc_conn *c, struct cp_ws_event *ev)
{
	if (!c->ws || c->ws_failed)
		return c->ws ? -CP_WS_R_AFTER_CLOSE : -EINVAL;
	while (c->in_off < c->in_len) {
		ssize_t n = cp_ws_rx_feed(&c->rx, c->in + c->in_off, c->in_len - c->in_off, ev);
		if (n < 0) {
			c->ws_failed = true;
			return (int)n;
		}
		c->in_off += (size_t)n;
		if (ev->kind != CP_WS_EV_NONE)
			return 1;
	}
	return 0;
}

ssize_t wsc_ws_frame(uint8_t opcode, const void *payload, size_t len, uint8_t *out, size_t cap)
{
	uint8_t key[4];
	if (RAND_bytes(key, sizeof key) != 1) {
		ERR_clear_error();
		return -EIO;
	}
	return cp_ws_client_frame_encode(opcode, payload, len, key, out, cap);
}

int wsc_ws_send(struct wsc_conn *c, uint8_t opcode, const void *payload, size_t len)
{
	uint8_t small[512];
	size_t cap = len + CP_WS_HDR_MAX;
	uint8_t *b = cap <= sizeof small ? small : malloc(cap);
	if (!b)
		return -ENOMEM;
	ssize_t n = wsc_ws_frame(opcode, payload, len, b, cap);
	int rc = n < 0 ? (int)n : wsc_write_all(c, b, (size_t)n);
	if (b != small)
		free(b);
	return rc;
}

int wsc_ws_close(struct wsc_conn *c, uint16_t code, const char *reason)
{
	uint8_t key[4], b[CP_WS_CONTROL_MAX + CP_WS_HDR_MAX];
	if (RAND_bytes(key, sizeof key) != 1) {
		ERR_clear_error();
		return -EIO;
	}
	ssize_t n = cp_ws_client_close_encode(code, reason, key, b, sizeof b);
	if (n < 0)
		return (int)n;
	return wsc_write_all(c, b, (size_t)n);
}

/* wsc.h - the C WebSocket/TLS client of the tools, benches and tests
 * (fanofleet, bench/ws's ws_load, tests/tools/test_wsclient): one TCP+TLS
 * connection (OpenSSL) with an optional client certificate and bearer
 * token; on it either the HTTP/1.1 upgrade to a WebSocket, with the key
 * check, then masked frames out and server frames in through the project's
 * RFC 6455 codec (control/proto/cp_ws_codec.h, client role), or HTTP/1.1
 * requests and responses (keep-alive: POST /residual-seed, GET long polls).
 *
 * What the library does not do: queue output or decide when to write.
 * The caller owns its output (one buffer, prebuilt frames, a queue with
 * marks) and hands bytes to wsc_write; received bytes gather in the
 * connection's input buffer (wsc_read) and come out as WebSocket events
 * (wsc_ws_next) or HTTP responses (wsc_http_next).
 *
 * Threads: a struct wsc_conn is used by one thread at a time. An SSL_CTX
 * from wsc_ctx_new may be shared by the connections of many threads once
 * it is made (OpenSSL's rule).
 *
 * Blocking: wsc_conn_open, wsc_ws_upgrade, wsc_write_all, wsc_ws_send and
 * wsc_ws_close block, each socket operation bounded by opts.timeout_ms
 * (SO_RCVTIMEO/SO_SNDTIMEO; a read that times out returns -ETIMEDOUT).
 * After wsc_conn_set_nonblocking, wsc_read and wsc_write never block: they
 * return -EAGAIN, and wsc_conn_wants_write says whether TLS waits for
 * POLLOUT (otherwise for POLLIN).
 *
 * Errors: 0 or a count, or -errno; wsc_ws_next returns -CP_WS_R_xxx (above
 * errno's range, cp_ws_reason_name) for a protocol violation by the server.
 * The calls that take err/errlen also write one line a person can act on,
 * with OpenSSL's error queue drained into it. Every call leaves the
 * thread's OpenSSL error queue empty: SSL_get_error, which tells a retry
 * from a failure, needs it empty, and the library does not clear it before
 * each read and write. A caller that makes OpenSSL calls of its own on the
 * same thread drains the queue where one fails (wsc_tls_err does).
 *
 * Signals: a write to a connection the peer has reset raises SIGPIPE;
 * callers ignore it (signal(SIGPIPE, SIG_IGN)) and see -EIO instead. */
#ifndef WSC_H
#define WSC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <openssl/ssl.h>

#include "cp_ws_codec.h"
#include "fg/common.h"

struct wsc_opts {
	const char *host;                 /* numeric IPv4 or IPv6 address (or "localhost")
					   * to connect to; no name lookup */
	uint16_t port;
	const char *sni;                  /* server name: SNI (host names only, never an
					   * address literal), the certificate name check
					   * and the Host header; NULL: none, Host is the
					   * address (the chain is still verified) */
	const char *ca_file;              /* trust anchors (PEM); NULL: the system's */
	bool insecure;                    /* no certificate verification at all */
	const char *cert_file, *key_file; /* client certificate (mutual TLS); NULL: none */
	const char *token;                /* sent as "Authorization: Bearer TOKEN"; NULL: none */
	uint32_t timeout_ms;              /* each blocking socket operation; 0: 5000 */
	uint64_t max_message;             /* largest WebSocket message or HTTP body
					   * accepted; 0: WSC_MAX_MESSAGE */
};

#define WSC_MAX_MESSAGE (16u * 1024u * 1024u)
#define WSC_HTTP_HEAD_MAX 16384u /* a response head (status line + headers) */

struct wsc_conn;

/* A client SSL_CTX for o: TLS 1.2 or newer, peer verification against
 * o->ca_file (or the system's anchors) unless o->insecure, the client
 * certificate when o->cert_file and o->key_file are both set. Returns it,
 * or NULL with err written. The caller frees it (SSL_CTX_free) after the
 * last connection made with it. Any thread. */
SSL_CTX *wsc_ctx_new(const struct wsc_opts *o, char *err, size_t errlen);

/* Write "what: <OpenSSL errors...>" to buf, draining the thread's OpenSSL
 * error queue. Any thread. */
void wsc_tls_err(char *buf, size_t len, const char *what);

/* Connect to o->host:o->port and complete the TLS handshake (blocking,
 * each step bounded by o->timeout_ms). On success *out is a blocking
 * connection, owned by the caller (wsc_conn_free); o's strings are copied
 * where they are still needed (Host, token). Returns 0, or -errno with err
 * written: -EINVAL (bad address), -ECONNREFUSED (connect failed or timed
 * out), -EPROTO (handshake failed: the reason, certificate verification
 * included, is in err), -ENOMEM. Any thread; the connection then belongs
 * to the caller's thread. */
FG_MUST_CHECK int wsc_conn_open(SSL_CTX *ctx, const struct wsc_opts *o, struct wsc_conn **out, char *err,
				size_t errlen);
/* Send TLS close_notify when the connection is still healthy (never
 * waiting for the peer's), close the socket and free c. NULL is fine. */
void wsc_conn_free(struct wsc_conn *c);

/* From now on wsc_read and wsc_write do not block (O_NONBLOCK, partial
 * writes and moving write buffers allowed). Returns 0 or -errno. */
FG_MUST_CHECK int wsc_conn_set_nonblocking(struct wsc_conn *c);
int wsc_conn_fd(const struct wsc_conn *c);
/* The last wsc_read or wsc_write stopped because TLS must write first:
 * poll for POLLOUT (and call again whichever stopped). */
bool wsc_conn_wants_write(const struct wsc_conn *c);

/* One SSL_read into the input buffer (room for at least 64 KiB is made).
 * Returns the bytes added (> 0), -EAGAIN (non-blocking, nothing yet),
 * -ETIMEDOUT (blocking, nothing within timeout_ms), -EPIPE (the peer
 * closed: close_notify or end of stream), -EIO (TLS or socket error; c is
 * broken), -ENOMEM. Bytes already received stay available to
 * wsc_ws_next/wsc_http_next whatever the result. Moves the input buffer:
 * event and response pointers returned before are invalid afterwards. */
FG_MUST_CHECK ssize_t wsc_read(struct wsc_conn *c);
/* Received bytes not yet taken by wsc_ws_next/wsc_http_next. */
size_t wsc_pending(const struct wsc_conn *c);

/* One SSL_write of up to len bytes of buf. Returns the bytes written
 * (> 0), -EAGAIN (non-blocking: call again with the same bytes first, at
 * least as many as before: OpenSSL's retry rule, which this call checks,
 * -EINVAL otherwise), -ETIMEDOUT, -EIO (c is broken). Non-blocking, at most
 * 64 KiB are taken per call. */
FG_MUST_CHECK ssize_t wsc_write(struct wsc_conn *c, const void *buf, size_t len);
/* All len bytes (waiting with poll for up to timeout_ms at a time when c
 * is non-blocking). Returns 0 or the first error of wsc_write. */
FG_MUST_CHECK int wsc_write_all(struct wsc_conn *c, const void *buf, size_t len);

/* ---- WebSocket --------------------------------------------------------- */

/* GET path with Upgrade: websocket, a fresh random Sec-WebSocket-Key,
 * Sec-WebSocket-Version 13, Host and the bearer token; then read the
 * response head (blocking) and check it (RFC 6455 4.1): status 101,
 * "Upgrade: websocket", a Connection header with the "upgrade" token and
 * Sec-WebSocket-Accept for the key. Bytes after the head (frames the server
 * sent at once) stay in the input buffer for wsc_ws_next. Returns 0, or
 * -EACCES (another status: the status line is in err), -EPROTO (a bad or
 * missing header), -EMSGSIZE (head over WSC_HTTP_HEAD_MAX), a wsc_read
 * error, with err written. Call once, on a blocking connection. */
FG_MUST_CHECK int wsc_ws_upgrade(struct wsc_conn *c, const char *path, char *err, size_t errlen);

/* The next event in the received bytes: a whole message (binary, or text
 * when valid UTF-8), a ping (the caller answers with a pong carrying the
 * same data: wsc_ws_frame or wsc_ws_send), a pong, or the server's close
 * (the caller echoes its code, wsc_ws_close, and stops). Returns 1 with *ev
 * set, 0 when the bytes received so far hold no further event, or
 * -CP_WS_R_xxx when the server broke RFC 6455 (fail the connection; it
 * stays failed). ev->data is valid until the next wsc_ws_next or wsc_read.
 * Only after wsc_ws_upgrade succeeded. */
FG_MUST_CHECK int wsc_ws_next(struct wsc_conn *c, struct cp_ws_event *ev);

/* Encode one client frame (FIN, masked with a fresh key from RAND_bytes,
 * RFC 6455 5.3) of opcode and payload into out[0..cap): at most len +
 * CP_WS_HDR_MAX bytes. Returns its length, -CP_WS_R_NOSPACE,
 * -CP_WS_R_UNENCODABLE (control payload over 125 bytes, bad opcode) or
 * -EIO (no random bytes). For frames built once and sent many times (a
 * load generator) use cp_ws_client_frame_encode with a key of your own. */
FG_MUST_CHECK ssize_t wsc_ws_frame(uint8_t opcode, const void *payload, size_t len, uint8_t *out, size_t cap);
/* Encode and write one frame (wsc_write_all). Returns 0 or -errno /
 * -CP_WS_R_xxx. */
FG_MUST_CHECK int wsc_ws_send(struct wsc_conn *c, uint8_t opcode, const void *payload, size_t len);
/* Write a close frame with code (0: none) and reason (NULL: none; cut to
 * fit the 125-byte control payload). Returns as wsc_ws_send. */
FG_MUST_CHECK int wsc_ws_close(struct wsc_conn *c, uint16_t code, const char *reason);

/* ---- HTTP/1.1 ------------------------------------------------------------ */

/* A parsed response head. */
struct wsc_http_head {
	int status;             /* 100..599 */
	size_t head_len;        /* status line and headers, the empty line included */
	int64_t content_length; /* -1 when there is no Content-Length */
	bool close;             /* Connection: close */
};

/* Parse the response head at buf[0..len). Returns its length (> 0) with *h
 * set, 0 when it is incomplete (and still under WSC_HTTP_HEAD_MAX), or
 * -EMSGSIZE (no end within WSC_HTTP_HEAD_MAX), -EPROTO (not an HTTP/1.x
 * status line, a bad or repeated Content-Length, or Transfer-Encoding,
 * which this client does not speak). Pure; any thread. */
FG_MUST_CHECK ssize_t wsc_http_head_parse(const uint8_t *buf, size_t len, struct wsc_http_head *h);
/* The value of header `name` (case-insensitive) in head[0..head_len),
 * leading blanks skipped, with its length without trailing blanks in
 * *vlen; NULL if absent. The first of repeated headers. Pure. */
const char *wsc_http_header(const uint8_t *head, size_t head_len, const char *name, size_t *vlen);

/* The head of a request to write before body_len body bytes (body_len < 0:
 * no body, no Content-Length; otherwise Content-Type application/octet-
 * stream): request line, Host, the bearer token. Returns its length (a NUL
 * follows) or -ENOSPC. */
FG_MUST_CHECK int wsc_http_request_head(const struct wsc_conn *c, const char *method, const char *path,
					int64_t body_len, char *out, size_t cap);

/* A whole response taken from the received bytes. */
struct wsc_http_resp {
	int status;
	const char *body; /* body_len bytes and a NUL after them (for text parsers) */
	size_t body_len;
	bool close;       /* the server closes after this response */
};

/* The next whole response in the received bytes: returns 1 with *r set
 * (valid until the next wsc_http_next or wsc_read), 0 when it is not all
 * here yet, or -EPROTO/-EMSGSIZE (wsc_http_head_parse; a body over
 * opts.max_message) after which c must not be used for HTTP again.
 * Responses are taken in the order the requests were written; matching
 * them is the caller's. */
FG_MUST_CHECK int wsc_http_next(struct wsc_conn *c, struct wsc_http_resp *r);

#endif

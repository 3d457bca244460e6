/* wsc_conn.c - tools/wsclient's TCP+TLS connection: the client SSL_CTX,
 * connect and handshake with a deadline, the input buffer filled by
 * SSL_read, SSL_write with OpenSSL's retry rule, and the end of a
 * connection. The WebSocket and HTTP layers (wsc_ws.c, wsc_http.c) read
 * from the input buffer this file fills. See wsc.h for the contract. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "tool_addr.h"
#include "wsc_int.h"

#define READ_ROOM (64u * 1024u) /* free input space made before each SSL_read */
#define WRITE_MAX (64u * 1024u) /* bytes per SSL_write on a non-blocking connection */

void wsc_tls_err(char *buf, size_t len, const char *what)
{
	size_t o = (size_t)snprintf(buf, len, "%s", what);
	unsigned long e;
	while ((e = ERR_get_error()) != 0) {
		char s[256];
		ERR_error_string_n(e, s, sizeof s);
		if (o < len)
			o += (size_t)snprintf(buf + o, len - o, ": %s", s);
	}
}

SSL_CTX *wsc_ctx_new(const struct wsc_opts *o, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (!ctx) {
		wsc_tls_err(err, errlen, "SSL_CTX_new");
		return NULL;
	}
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		wsc_tls_err(err, errlen, "setting TLS 1.2 as the minimum");
		goto fail;
	}
	if (o->insecure) {
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	} else {
		int ok = o->ca_file ? SSL_CTX_load_verify_locations(ctx, o->ca_file, NULL)
				    : SSL_CTX_set_default_verify_paths(ctx);
		if (ok != 1) {
			wsc_tls_err(err, errlen, o->ca_file ? "loading the CA file" : "loading the system's CAs");
			goto fail;
		}
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	}
	if (o->cert_file && o->key_file &&
	    (SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1 ||
	     SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) != 1 ||
	     SSL_CTX_check_private_key(ctx) != 1)) {
		wsc_tls_err(err, errlen, "loading the client certificate");
		goto fail;
	}
	return ctx;
fail:
	SSL_CTX_free(ctx);
	return NULL;
}

/* A connected TCP socket to o->host:o->port, blocking, with o's timeout on
 * every later send and receive; or -errno with err written. */
static int tcp_connect(const struct wsc_opts *o, uint32_t timeout_ms, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	char hp[300];
	snprintf(hp, sizeof hp, strchr(o->host, ':') ? "[%s]:%u" : "%s:%u", o->host, o->port);
	if (tool_addr_parse(hp, true, &ss, &sl) < 0) {
		snprintf(err, errlen, "bad address %s (a numeric address and a port)", hp);
		return -EINVAL;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "socket: %s", strerror(e));
		return -e;
	}
	int one = 1;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS) {
		snprintf(err, errlen, "connect %s: %s", hp, strerror(errno));
		close(fd);
		return -ECONNREFUSED;
	}
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int soerr = 0;
	socklen_t el = sizeof soerr;
	if (poll(&p, 1, (int)timeout_ms) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &el) < 0 ||
	    soerr != 0) {
		snprintf(err, errlen, "connect %s: %s", hp, soerr ? strerror(soerr) : "timed out");
		close(fd);
		return -ECONNREFUSED;
	}
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		snprintf(err, errlen, "fcntl: %s", strerror(errno));
		close(fd);
		return -EIO;
	}
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	return fd;
}

static bool is_address(const char *s)
{
	unsigned char b[16];
	return inet_pton(AF_INET, s, b) == 1 || inet_pton(AF_INET6, s, b) == 1;
}

int wsc_conn_open(SSL_CTX *ctx, const struct wsc_opts *o, struct wsc_conn **out, char *err, size_t errlen)
{
	struct wsc_conn *c = calloc(1, sizeof *c);
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	c->fd = -1;
	c->borrow_at = SIZE_MAX;
	c->timeout_ms = o->timeout_ms ? o->timeout_ms : 5000;
	c->max_message = o->max_message ? o->max_message : WSC_MAX_MESSAGE;
	const char *name = o->sni ? o->sni : o->host;
	snprintf(c->host_hdr, sizeof c->host_hdr, strchr(name, ':') ? "[%s]:%u" : "%s:%u", name, o->port);
	int rc = -ENOMEM;
	if (o->token ? asprintf(&c->auth_hdr, "Authorization: Bearer %s\r\n", o->token) < 0
		     : !(c->auth_hdr = strdup(""))) {
		c->auth_hdr = NULL;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	c->fd = tcp_connect(o, c->timeout_ms, err, errlen);
	if (c->fd < 0) {
		rc = c->fd;
		goto fail;
	}
	rc = -EPROTO;
	c->ssl = SSL_new(ctx);
	if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1) {
		wsc_tls_err(err, errlen, "SSL_new");
		c->broken = true;
		goto fail;
	}
	/* SNI carries host names only, never an address literal (RFC 6066 3). */
	if (o->sni && !is_address(o->sni) && SSL_set_tlsext_host_name(c->ssl, o->sni) != 1) {
		wsc_tls_err(err, errlen, "setting the server name");
		c->broken = true;
		goto fail;
	}
	if (o->sni && !o->insecure && SSL_set1_host(c->ssl, o->sni) != 1) {
		wsc_tls_err(err, errlen, "setting the expected certificate name");
		c->broken = true;
		goto fail;
	}
	ERR_clear_error();
	if (SSL_connect(c->ssl) != 1) {
		long v = SSL_get_verify_result(c->ssl);
		char what[512];
		if (v != X509_V_OK)
			snprintf(what, sizeof what, "TLS handshake with %s: certificate: %s", c->host_hdr,
				 X509_verify_cert_error_string(v));
		else
			snprintf(what, sizeof what, "TLS handshake with %s (closed, timed out or refused)", c->host_hdr);
		wsc_tls_err(err, errlen, what);
		c->broken = true;
		goto fail;
	}
	*out = c;
	return 0;
fail:
	wsc_conn_free(c);
	return rc;
}

void wsc_conn_free(struct wsc_conn *c)
{
	if (!c)
		return;
	if (c->ssl) {
		if (!c->broken)
			(void)SSL_shutdown(c->ssl); /* close_notify; the peer's is not awaited */
		SSL_free(c->ssl);
	}
	if (c->fd >= 0)
		close(c->fd);
	if (c->ws)
		cp_ws_rx_fini(&c->rx);
	ERR_clear_error();
	free(c->in);
	free(c->auth_hdr);
	free(c);
}

int wsc_conn_set_nonblocking(struct wsc_conn *c)
{
	int fl = fcntl(c->fd, F_GETFL);
	if (fl < 0 || fcntl(c->fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	SSL_set_mode(c->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	c->nonblocking = true;
	return 0;
}

int wsc_conn_fd(const struct wsc_conn *c)
{
	return c->fd;
}

bool wsc_conn_wants_write(const struct wsc_conn *c)
{
	return c->want_write;
}

size_t wsc_pending(const struct wsc_conn *c)
{
	return c->in_len - c->in_off;
}

void wsc_unborrow(struct wsc_conn *c)
{
	if (c->borrow_at != SIZE_MAX) {
		c->in[c->borrow_at] = c->borrow_byte;
		c->borrow_at = SIZE_MAX;
	}
}

/* Map a failed SSL_read/SSL_write (r <= 0) to -errno; marks c broken when
 * TLS may not be used again (OpenSSL: after SSL_ERROR_SYSCALL or
 * SSL_ERROR_SSL no further I/O, not even SSL_shutdown) and leaves the
 * error queue empty.
 *
 * SSL_get_error reads the thread's error queue, so it must be empty
 * before the call it judges. Rather than clearing it before every
 * SSL_read and SSL_write (ERR_clear_error resets every slot of the queue
 * even when it is empty, more work than the rest of this file per message
 * of a load generator), every path of this library that can leave an
 * error drains it, and the callers' own OpenSSL failures are drained where
 * they are reported (wsc.h, Errors). */
static int ssl_fail(struct wsc_conn *c, int r)
{
	int saved = errno;
	int e = SSL_get_error(c->ssl, r);
	switch (e) {
	/* A blocking socket whose SO_RCVTIMEO/SO_SNDTIMEO expired looks like
	 * a non-blocking one with nothing to do (EAGAIN): a timeout there. */
	case SSL_ERROR_WANT_READ:
		c->want_write = false;
		return c->nonblocking ? -EAGAIN : -ETIMEDOUT;
	case SSL_ERROR_WANT_WRITE:
		c->want_write = true;
		return c->nonblocking ? -EAGAIN : -ETIMEDOUT;
	case SSL_ERROR_ZERO_RETURN:
		return -EPIPE;
	case SSL_ERROR_SYSCALL:
		c->broken = true;
		ERR_clear_error();
		/* an end of stream without close_notify, in OpenSSL before 3 */
		return saved == 0 ? -EPIPE : -EIO;
	default: {
		c->broken = true;
		/* OpenSSL 3 reports an end of stream without close_notify here */
		bool eof = ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
		ERR_clear_error();
		return eof ? -EPIPE : -EIO;
	}
	}
}

ssize_t wsc_read(struct wsc_conn *c)
{
	wsc_unborrow(c);
	if (c->broken)
		return -EIO;
	if (c->in_off == c->in_len) {
		c->in_off = c->in_len = 0;
	} else if (c->in_off > 0 && c->in_cap - c->in_len < READ_ROOM + 1) {
		memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
		c->in_len -= c->in_off;
		c->in_off = 0;
	}
	size_t need = c->in_len + READ_ROOM + 1;
	if (need > c->in_cap) {
		size_t cap = c->in_cap ? c->in_cap : READ_ROOM + 1;
		while (cap < need)
			cap *= 2;
		uint8_t *p = realloc(c->in, cap);
		if (!p)
			return -ENOMEM;
		c->in = p;
		c->in_cap = cap;
	}
	size_t room = c->in_cap - c->in_len - 1;
	errno = 0;
	int r = SSL_read(c->ssl, c->in + c->in_len, room > INT_MAX ? INT_MAX : (int)room);
	if (r > 0) {
		c->in_len += (size_t)r;
		c->want_write = false;
		return r;
	}
	return ssl_fail(c, r);
}

ssize_t wsc_write(struct wsc_conn *c, const void *buf, size_t len)
{
	if (c->broken)
		return -EIO;
	size_t n = len;
	if (c->retry_len) {
		if (len < c->retry_len)
			return -EINVAL;
		n = c->retry_len;
	}
	if (n == 0)
		return 0;
	if (c->nonblocking && n > WRITE_MAX)
		n = WRITE_MAX;
	if (n > INT_MAX)
		n = INT_MAX;
	errno = 0;
	int w = SSL_write(c->ssl, buf, (int)n);
	if (w > 0) {
		c->retry_len = 0;
		c->want_write = false;
		return w;
	}
	int rc = ssl_fail(c, w);
	if (rc == -EAGAIN || rc == -ETIMEDOUT)
		c->retry_len = n;
	return rc;
}

int wsc_write_all(struct wsc_conn *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	while (len > 0) {
		ssize_t w = wsc_write(c, p, len);
		if (w == -EAGAIN) {
			struct pollfd pf = { .fd = c->fd, .events = c->want_write ? POLLOUT : POLLIN };
			int k = poll(&pf, 1, (int)c->timeout_ms);
			if (k == 0)
				return -ETIMEDOUT;
			if (k < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (w < 0)
			return (int)w;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* test_wsclient.c - tests of tools/wsclient (wsc.h) against a tiny TLS
 * server in a thread of this process: real sockets on 127.0.0.1, real TLS
 * (OpenSSL, certificates made here at start-up), the server's end of
 * WebSocket read with the project's codec in the server role (so every
 * frame the client sends must be masked and well formed).
 *
 * 1. Upgrade: the request (path, Host, key, version, bearer token), a
 *    frame sent with the 101 in one write, ping -> pong with the same
 *    data, a 70000-byte message both ways (64-bit length, fragmented by the
 *    server around a ping), the close handshake.
 * 2. Refused upgrades: another status, a wrong or missing accept key, no
 *    Upgrade header, an extension not asked for; a masked server frame.
 * 3. HTTP/1.1 keep-alive: two requests, responses split across writes,
 *    bodies NUL-terminated, Connection: close; the response-head parser's
 *    every prefix, malformed heads, limits, header lookup.
 * 4. TLS: an untrusted certificate and a wrong name refused with the
 *    reason in the message; insecure mode; a client certificate the server
 *    requires, absent and present.
 * 5. Non-blocking reads, a server that does not answer (timeout), a refused
 *    connect, a server that closes (-EPIPE). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "wsc.h"

/* ---- certificates ----------------------------------------------------------- */

static char dir[64];
static char ca_pem[128], srv_cert[128], srv_key[128], other_ca[128], cli_cert[128], cli_key[128];

static EVP_PKEY *new_key(void)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	assert_non_null(k);
	return k;
}

static void add_ext(X509 *x, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	X509_EXTENSION *e = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	assert_non_null(e);
	assert_int_equal(X509_add_ext(x, e, -1), 1);
	X509_EXTENSION_free(e);
}

/* A certificate for key with subject CN cn, signed by (issuer, ikey), or
 * self-signed when issuer is NULL (then a CA). san may be NULL. */
static X509 *new_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *ikey, const char *san, long serial)
{
	X509 *x = X509_new();
	assert_non_null(x);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, key);
	X509_NAME *n = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
	X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
	add_ext(x, issuer ? issuer : x, NID_basic_constraints, issuer ? "critical,CA:FALSE" : "critical,CA:TRUE");
	if (san)
		add_ext(x, issuer ? issuer : x, NID_subject_alt_name, san);
	assert_true(X509_sign(x, ikey ? ikey : key, EVP_sha256()) > 0);
	return x;
}

static void write_pem(const char *path, X509 *x, EVP_PKEY *k)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	if (x)
		assert_int_equal(PEM_write_X509(f, x), 1);
	if (k)
		assert_int_equal(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL), 1);
	assert_int_equal(fclose(f), 0);
}

static int make_certs(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof dir, "/tmp/fg-wsclient.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(ca_pem, sizeof ca_pem, "%s/ca.pem", dir);
	snprintf(srv_cert, sizeof srv_cert, "%s/srv.pem", dir);
	snprintf(srv_key, sizeof srv_key, "%s/srv.key", dir);
	snprintf(other_ca, sizeof other_ca, "%s/other.pem", dir);
	snprintf(cli_cert, sizeof cli_cert, "%s/cli.pem", dir);
	snprintf(cli_key, sizeof cli_key, "%s/cli.key", dir);
	EVP_PKEY *cak = new_key(), *sk = new_key(), *ok = new_key(), *ck = new_key();
	X509 *ca = new_cert(cak, "wsclient test CA", NULL, NULL, NULL, 1);
	X509 *srv = new_cert(sk, "localhost", ca, cak, "DNS:localhost,IP:127.0.0.1", 2);
	X509 *other = new_cert(ok, "another CA", NULL, NULL, NULL, 3);
	X509 *cli = new_cert(ck, "fleet-client", ca, cak, NULL, 4);
	write_pem(ca_pem, ca, NULL);
	write_pem(srv_cert, srv, NULL);
	write_pem(srv_key, NULL, sk);
	write_pem(other_ca, other, NULL);
	write_pem(cli_cert, cli, NULL);
	write_pem(cli_key, NULL, ck);
	X509_free(ca);
	X509_free(srv);
	X509_free(other);
	X509_free(cli);
	EVP_PKEY_free(cak);
	EVP_PKEY_free(sk);
	EVP_PKEY_free(ok);
	EVP_PKEY_free(ck);
	return 0;
}

static int remove_certs(void **state)
{
	(void)state;
	const char *f[] = { ca_pem, srv_cert, srv_key, other_ca, cli_cert, cli_key };
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		unlink(f[i]);
	rmdir(dir);
	return 0;
}

/* ---- the tiny server ------------------------------------------------------------ */

struct srv;
typedef void (*script_fn)(struct srv *s);

struct srv {
	int lfd;
	uint16_t port;
	SSL_CTX *ctx;
	SSL *ssl;
	script_fn script;
	bool want_client_cert;
	bool handshake_ok;
	char peer_cn[64];
	char req[4096]; /* the request head the server read */
	size_t req_len;
	uint8_t in[1 << 18]; /* bytes after the head */
	size_t in_len;
	int failures; /* checks that failed in the server thread */
	char why[256];
	pthread_t th;
};

#define SRV_CHECK(s, cond)                                                                          \
	do {                                                                                          \
		if (!(cond) && (s)->failures++ == 0)                                                  \
			snprintf((s)->why, sizeof((s)->why), "%s:%d: %s", __FILE__, __LINE__, #cond); \
	} while (0)

static void *srv_main(void *arg)
{
	struct srv *s = arg;
	int fd = accept(s->lfd, NULL, NULL);
	if (fd < 0) {
		s->failures++;
		return NULL;
	}
	struct timeval tv = { .tv_sec = 10 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	s->ssl = SSL_new(s->ctx);
	SSL_set_fd(s->ssl, fd);
	if (SSL_accept(s->ssl) == 1) {
		s->handshake_ok = true;
		X509 *pc = SSL_get1_peer_certificate(s->ssl);
		if (pc) {
			X509_NAME_get_text_by_NID(X509_get_subject_name(pc), NID_commonName, s->peer_cn,
						  sizeof s->peer_cn);
			X509_free(pc);
		}
		if (s->script)
			s->script(s);
		SSL_shutdown(s->ssl);
	}
	ERR_clear_error();
	SSL_free(s->ssl);
	close(fd);
	return NULL;
}

static void srv_start(struct srv *s, script_fn script, bool want_client_cert)
{
	memset(s, 0, sizeof *s);
	s->script = script;
	s->want_client_cert = want_client_cert;
	s->ctx = SSL_CTX_new(TLS_server_method());
	assert_non_null(s->ctx);
	assert_int_equal(SSL_CTX_use_certificate_file(s->ctx, srv_cert, SSL_FILETYPE_PEM), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey_file(s->ctx, srv_key, SSL_FILETYPE_PEM), 1);
	if (want_client_cert) {
		assert_int_equal(SSL_CTX_load_verify_locations(s->ctx, ca_pem, NULL), 1);
		SSL_CTX_set_verify(s->ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	}
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s->lfd >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
	assert_int_equal(listen(s->lfd, 4), 0);
	socklen_t al = sizeof a;
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
	s->port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&s->th, NULL, srv_main, s), 0);
}

static void srv_join(struct srv *s)
{
	pthread_join(s->th, NULL);
	close(s->lfd);
	SSL_CTX_free(s->ctx);
	if (s->failures)
		fail_msg("server side: %s", s->why);
}

/* Read until the request head is complete; bytes after it stay in s->in. */
static bool srv_read_head(struct srv *s)
{
	for (;;) {
		char *e = memmem(s->req, s->req_len, "\r\n\r\n", 4);
		if (e) {
			size_t hl = (size_t)(e - s->req) + 4;
			memcpy(s->in, s->req + hl, s->req_len - hl);
			s->in_len = s->req_len - hl;
			s->req_len = hl;
			s->req[hl] = 0;
			return true;
		}
		if (s->req_len >= sizeof s->req - 1)
			return false;
		int r = SSL_read(s->ssl, s->req + s->req_len, (int)(sizeof s->req - 1 - s->req_len));
		if (r <= 0)
			return false;
		s->req_len += (size_t)r;
	}
}

static void srv_write(struct srv *s, const void *p, size_t n)
{
	SRV_CHECK(s, SSL_write(s->ssl, p, (int)n) == (int)n);
}

/* The accept value for the request's key (empty if there is none). */
static void srv_accept_of(struct srv *s, char out[CP_WS_ACCEPT_LEN + 1])
{
	out[0] = 0;
	const char *k = strcasestr(s->req, "\r\nSec-WebSocket-Key: ");
	SRV_CHECK(s, k != NULL);
	if (!k)
		return;
	k += 21;
	size_t kl = strcspn(k, "\r");
	SRV_CHECK(s, kl == 24); /* 16 random bytes in base64 */
	SRV_CHECK(s, cp_ws_accept_key(k, kl, out) == 0);
}

/* The next event from the client, reading as needed (server role: frames
 * must be masked). Returns false at the end of the stream or on an error. */
static bool srv_next(struct srv *s, struct cp_ws_rx *rx, size_t *off, struct cp_ws_event *ev)
{
	for (;;) {
		while (*off < s->in_len) {
			ssize_t n = cp_ws_rx_feed(rx, s->in + *off, s->in_len - *off, ev);
			SRV_CHECK(s, n > 0);
			if (n <= 0)
				return false;
			*off += (size_t)n;
			if (ev->kind != CP_WS_EV_NONE)
				return true;
		}
		if (s->in_len == sizeof s->in)
			return false;
		int r = SSL_read(s->ssl, s->in + s->in_len, (int)(sizeof s->in - s->in_len));
		if (r <= 0)
			return false;
		s->in_len += (size_t)r;
	}
}

static const char *TOKEN = "t0ken-for-the-test";

static struct wsc_opts opts_for(const struct srv *s)
{
	return (struct wsc_opts){ .host = "127.0.0.1", .port = s->port, .sni = "localhost", .ca_file = ca_pem,
				  .token = TOKEN, .timeout_ms = 5000 };
}

/* Connect to s with o; asserts success. */
static struct wsc_conn *open_ok(SSL_CTX **ctx, const struct wsc_opts *o)
{
	char err[512] = "";
	*ctx = wsc_ctx_new(o, err, sizeof err);
	if (!*ctx)
		fail_msg("wsc_ctx_new: %s", err);
	struct wsc_conn *c = NULL;
	int rc = wsc_conn_open(*ctx, o, &c, err, sizeof err);
	if (rc < 0)
		fail_msg("wsc_conn_open: %d %s", rc, err);
	return c;
}

/* The next client-side event, reading as needed (blocking connection). */
static int next_event(struct wsc_conn *c, struct cp_ws_event *ev)
{
	for (;;) {
		int r = wsc_ws_next(c, ev);
		if (r != 0)
			return r;
		ssize_t n = wsc_read(c);
		if (n < 0)
			return (int)n;
	}
}

/* ---- 1. upgrade and a WebSocket session ----------------------------------------- */

static uint8_t big[70000];

static void script_session(struct srv *s)
{
	if (!srv_read_head(s)) {
		SRV_CHECK(s, !"request head");
		return;
	}
	char host[64];
	snprintf(host, sizeof host, "\r\nHost: localhost:%u\r\n", s->port);
	SRV_CHECK(s, strncmp(s->req, "GET /flow?layer=3 HTTP/1.1\r\n", 28) == 0);
	SRV_CHECK(s, strstr(s->req, host) != NULL);
	SRV_CHECK(s, strcasestr(s->req, "\r\nUpgrade: websocket\r\n") != NULL);
	SRV_CHECK(s, strcasestr(s->req, "\r\nConnection: Upgrade\r\n") != NULL);
	SRV_CHECK(s, strstr(s->req, "\r\nSec-WebSocket-Version: 13\r\n") != NULL);
	SRV_CHECK(s, strstr(s->req, "\r\nAuthorization: Bearer t0ken-for-the-test\r\n") != NULL);
	char acc[CP_WS_ACCEPT_LEN + 1];
	srv_accept_of(s, acc);
	/* the 101, a first message and a ping in one write: the client must
	 * keep what follows the head */
	uint8_t out[80000];
	int n = snprintf((char *)out, sizeof out,
			 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\n"
			 "Connection: keep-alive, Upgrade\r\nSec-WebSocket-Accept:  %s \r\n\r\n",
			 acc);
	size_t o = (size_t)n;
	ssize_t k = cp_ws_frame_encode(CP_WS_OP_BINARY, "first", 5, out + o, sizeof out - o);
	SRV_CHECK(s, k > 0);
	o += (size_t)k;
	k = cp_ws_frame_encode(CP_WS_OP_PING, "are you there", 13, out + o, sizeof out - o);
	o += (size_t)k;
	srv_write(s, out, o);

	struct cp_ws_rx rx;
	struct cp_ws_rx_cfg cfg = { .max_message = 1 << 20 };
	cp_ws_rx_init(&rx, &cfg);
	size_t off = 0;
	struct cp_ws_event ev;
	/* the pong carries the ping's data */
	SRV_CHECK(s, srv_next(s, &rx, &off, &ev) && ev.kind == CP_WS_EV_PONG && ev.len == 13 &&
			     memcmp(ev.data, "are you there", 13) == 0);
	/* a 70000-byte message (64-bit length) */
	SRV_CHECK(s, srv_next(s, &rx, &off, &ev) && ev.kind == CP_WS_EV_MESSAGE && ev.opcode == CP_WS_OP_BINARY &&
			     ev.len == sizeof big && memcmp(ev.data, big, sizeof big) == 0);
	/* echoed in three fragments with a ping between the first two */
	o = 0;
	out[o++] = 0x02; /* BINARY, no FIN */
	out[o++] = 126;
	out[o++] = 1000 >> 8;
	out[o++] = 1000 & 0xff;
	memcpy(out + o, big, 1000);
	o += 1000;
	k = cp_ws_frame_encode(CP_WS_OP_PING, "", 0, out + o, sizeof out - o);
	o += (size_t)k;
	srv_write(s, out, o);
	o = 0;
	out[o++] = 0x00; /* CONT, no FIN */
	out[o++] = 126;
	out[o++] = 2000 >> 8;
	out[o++] = 2000 & 0xff;
	memcpy(out + o, big + 1000, 2000);
	o += 2000;
	size_t rest = sizeof big - 3000;
	out[o++] = 0x80; /* CONT, FIN */
	out[o++] = 127;
	for (int i = 0; i < 8; i++)
		out[o++] = (uint8_t)((uint64_t)rest >> (56 - 8 * i));
	memcpy(out + o, big + 3000, rest);
	o += rest;
	srv_write(s, out, o);
	SRV_CHECK(s, srv_next(s, &rx, &off, &ev) && ev.kind == CP_WS_EV_PONG && ev.len == 0);
	/* close: the client echoes the code */
	k = cp_ws_close_encode(1000, "bye", out, sizeof out);
	srv_write(s, out, (size_t)k);
	SRV_CHECK(s, srv_next(s, &rx, &off, &ev) && ev.kind == CP_WS_EV_CLOSE && ev.close_code == 1000);
	cp_ws_rx_fini(&rx);
}

static void test_ws_session(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (uint8_t)(i * 31 + (i >> 9));
	struct srv s;
	srv_start(&s, script_session, false);
	struct wsc_opts o = opts_for(&s);
	SSL_CTX *ctx;
	struct wsc_conn *c = open_ok(&ctx, &o);
	char err[512] = "";
	int rc = wsc_ws_upgrade(c, "/flow?layer=3", err, sizeof err);
	if (rc < 0)
		fail_msg("upgrade: %d %s", rc, err);
	/* the message sent with the 101 is here without another read */
	struct cp_ws_event ev;
	assert_int_equal(wsc_ws_next(c, &ev), 1);
	assert_int_equal(ev.kind, CP_WS_EV_MESSAGE);
	assert_int_equal(ev.len, 5);
	assert_memory_equal(ev.data, "first", 5);
	assert_int_equal(next_event(c, &ev), 1);
	assert_int_equal(ev.kind, CP_WS_EV_PING);
	assert_int_equal(wsc_ws_send(c, CP_WS_OP_PONG, ev.data, ev.len), 0);
	assert_int_equal(wsc_ws_send(c, CP_WS_OP_BINARY, big, sizeof big), 0);
	/* the echo: a ping first (between fragments), then the whole message */
	assert_int_equal(next_event(c, &ev), 1);
	assert_int_equal(ev.kind, CP_WS_EV_PING);
	assert_int_equal(ev.len, 0);
	assert_int_equal(wsc_ws_send(c, CP_WS_OP_PONG, NULL, 0), 0);
	assert_int_equal(next_event(c, &ev), 1);
	assert_int_equal(ev.kind, CP_WS_EV_MESSAGE);
	assert_int_equal(ev.len, sizeof big);
	assert_memory_equal(ev.data, big, sizeof big);
	assert_int_equal(next_event(c, &ev), 1);
	assert_int_equal(ev.kind, CP_WS_EV_CLOSE);
	assert_int_equal(ev.close_code, 1000);
	assert_memory_equal(ev.data, "bye", 3);
	assert_int_equal(wsc_ws_close(c, ev.close_code, NULL), 0);
	/* then the server ends TLS */
	ssize_t r;
	while ((r = wsc_read(c)) > 0)
		;
	assert_int_equal(r, -EPIPE);
	wsc_conn_free(c);
	SSL_CTX_free(ctx);
	srv_join(&s);
}

/* ---- 2. refused upgrades, a masked server frame ------------------------------------ */

static const char *upgrade_reply; /* the response the next script sends; %s = accept */

static void script_reply(struct srv *s)
{
	if (!srv_read_head(s))
		return;
	char acc[CP_WS_ACCEPT_LEN + 1], out[1024];
	srv_accept_of(s, acc);
	int n = snprintf(out, sizeof out, upgrade_reply, acc);
	srv_write(s, out, (size_t)n);
	/* wait for the client to go */
	char b[64];
	while (SSL_read(s->ssl, b, sizeof b) > 0)
		;
}

static int upgrade_with(const char *reply, char *err, size_t errlen, struct cp_ws_event *ev, int *next)
{
	upgrade_reply = reply;
	struct srv s;
	srv_start(&s, script_reply, false);
	struct wsc_opts o = opts_for(&s);
	SSL_CTX *ctx;
	struct wsc_conn *c = open_ok(&ctx, &o);
	int rc = wsc_ws_upgrade(c, "/flow", err, errlen);
	if (rc == 0 && next)
		*next = next_event(c, ev);
	wsc_conn_free(c);
	SSL_CTX_free(ctx);
	srv_join(&s);
	return rc;
}

static void test_ws_refused(void **state)
{
	(void)state;
	char err[512];
	assert_int_equal(upgrade_with("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n", err, sizeof err,
				      NULL, NULL),
			 -EACCES);
	assert_string_equal(err, "upgrade refused: HTTP/1.1 401 Unauthorized");
	assert_int_equal(upgrade_with("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: "
				      "Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
				      err, sizeof err, NULL, NULL),
			 -EPROTO);
	assert_non_null(strstr(err, "wrong Sec-WebSocket-Accept"));
	assert_int_equal(upgrade_with("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: "
				      "Upgrade\r\n\r\n%.0s",
				      err, sizeof err, NULL, NULL),
			 -EPROTO);
	assert_non_null(strstr(err, "no Sec-WebSocket-Accept"));
	assert_int_equal(upgrade_with("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
				      "Sec-WebSocket-Accept: %s\r\n\r\n",
				      err, sizeof err, NULL, NULL),
			 -EPROTO);
	assert_non_null(strstr(err, "Upgrade: websocket"));
	assert_int_equal(upgrade_with("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
				      "Sec-WebSocket-Accept: %s\r\n\r\n",
				      err, sizeof err, NULL, NULL),
			 -EPROTO);
	assert_non_null(strstr(err, "Connection: Upgrade"));
	assert_int_equal(upgrade_with("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: "
				      "Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
				      "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
				      err, sizeof err, NULL, NULL),
			 -EPROTO);
	assert_int_equal(upgrade_with("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", err, sizeof err, NULL, NULL),
			 -EACCES);
	assert_int_equal(upgrade_with("SSH-2.0-OpenSSH\r\n\r\n", err, sizeof err, NULL, NULL), -EPROTO);
	/* accepted, then a masked frame: the client fails the connection */
	struct cp_ws_event ev;
	int next = 0;
	assert_int_equal(upgrade_with("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: "
				      "Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n"
				      "\x82\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58",
				      err, sizeof err, &ev, &next),
			 0);
	assert_int_equal(next, -CP_WS_R_MASKED);
	/* a reserved opcode */
	assert_int_equal(upgrade_with("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: "
				      "Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n\x83\x01x",
				      err, sizeof err, &ev, &next),
			 0);
	assert_int_equal(next, -CP_WS_R_BAD_OPCODE);
}

/* ---- 3. HTTP/1.1 -------------------------------------------------------------------- */

static void script_http(struct srv *s)
{
	/* two requests, possibly in one read */
	if (!srv_read_head(s))
		return;
	SRV_CHECK(s, strncmp(s->req, "POST /residual-seed HTTP/1.1\r\n", 30) == 0);
	SRV_CHECK(s, strstr(s->req, "\r\nContent-Length: 6\r\n") != NULL);
	SRV_CHECK(s, strstr(s->req, "\r\nContent-Type: application/octet-stream\r\n") != NULL);
	SRV_CHECK(s, strstr(s->req, "\r\nAuthorization: Bearer t0ken-for-the-test\r\n") != NULL);
	while (s->in_len < 6) {
		int r = SSL_read(s->ssl, s->in + s->in_len, (int)(sizeof s->in - s->in_len));
		if (r <= 0)
			return;
		s->in_len += (size_t)r;
	}
	SRV_CHECK(s, memcmp(s->in, "\x01\x02\x03\x04\x05\x06", 6) == 0);
	/* the first response in two writes, split inside the body */
	const char *r1 = "HTTP/1.1 200 OK\r\ncontent-length:  13 \r\nContent-Type: application/json\r\n\r\n{\"ok\":true}\r\n";
	size_t l1 = strlen(r1);
	srv_write(s, r1, l1 - 5);
	srv_write(s, r1 + l1 - 5, 5);
	/* the GET */
	size_t rest = s->in_len - 6;
	memmove(s->req, s->in + 6, rest);
	s->req_len = rest;
	if (!srv_read_head(s))
		return;
	SRV_CHECK(s, strncmp(s->req, "GET /residual-seed/3/7 HTTP/1.1\r\n", 33) == 0);
	SRV_CHECK(s, strstr(s->req, "Content-Length") == NULL);
	const char *r2 = "HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno";
	srv_write(s, r2, strlen(r2));
}

static void test_http(void **state)
{
	(void)state;
	struct srv s;
	srv_start(&s, script_http, false);
	struct wsc_opts o = opts_for(&s);
	SSL_CTX *ctx;
	struct wsc_conn *c = open_ok(&ctx, &o);
	char h[512];
	int hl = wsc_http_request_head(c, "POST", "/residual-seed", 6, h, sizeof h);
	assert_true(hl > 0);
	assert_int_equal(wsc_write_all(c, h, (size_t)hl), 0);
	assert_int_equal(wsc_write_all(c, "\x01\x02\x03\x04\x05\x06", 6), 0);
	hl = wsc_http_request_head(c, "GET", "/residual-seed/3/7", -1, h, sizeof h);
	assert_true(hl > 0);
	assert_int_equal(wsc_write_all(c, h, (size_t)hl), 0);
	assert_int_equal(wsc_http_request_head(c, "GET", "/x", -1, h, 20), -ENOSPC);
	struct wsc_http_resp r[2];
	char body0[32] = "";
	int got = 0;
	while (got < 2) {
		struct wsc_http_resp x;
		int k = wsc_http_next(c, &x);
		assert_true(k >= 0);
		if (k == 1) {
			assert_int_equal(x.body[x.body_len], 0); /* NUL after the body */
			if (got == 0)
				memcpy(body0, x.body, x.body_len + 1);
			r[got++] = x;
			continue;
		}
		ssize_t n = wsc_read(c);
		if (n < 0)
			fail_msg("wsc_read: %zd after %d responses", n, got);
	}
	assert_int_equal(r[0].status, 200);
	assert_int_equal(r[0].body_len, 13);
	assert_string_equal(body0, "{\"ok\":true}\r\n");
	assert_false(r[0].close);
	assert_int_equal(r[1].status, 404);
	assert_int_equal(r[1].body_len, 2);
	assert_memory_equal(r[1].body, "no", 2);
	assert_true(r[1].close);
	wsc_conn_free(c);
	SSL_CTX_free(ctx);
	srv_join(&s);
}

static void test_http_head_parse(void **state)
{
	(void)state;
	struct wsc_http_head h;
	const char *good = "HTTP/1.1 200 OK\r\nServer: fanogate\r\nContent-Length: 42\r\nconnection: Keep-Alive, close\r\n\r\nbody";
	size_t hl = strlen(good) - 4;
	/* every prefix is incomplete */
	for (size_t k = 0; k < hl; k++)
		assert_int_equal(wsc_http_head_parse((const uint8_t *)good, k, &h), 0);
	assert_int_equal(wsc_http_head_parse((const uint8_t *)good, strlen(good), &h), (ssize_t)hl);
	assert_int_equal(h.status, 200);
	assert_int_equal(h.head_len, hl);
	assert_int_equal(h.content_length, 42);
	assert_true(h.close);
	size_t vl;
	const char *v = wsc_http_header((const uint8_t *)good, hl, "SERVER", &vl);
	assert_non_null(v);
	assert_int_equal(vl, 8);
	assert_memory_equal(v, "fanogate", 8);
	assert_null(wsc_http_header((const uint8_t *)good, hl, "Serve", &vl));
	assert_null(wsc_http_header((const uint8_t *)good, hl, "HTTP/1.1 200 OK", &vl));
	/* no Content-Length, status without a reason phrase */
	const char *bare = "HTTP/1.0 204\r\n\r\n";
	assert_int_equal(wsc_http_head_parse((const uint8_t *)bare, strlen(bare), &h), (ssize_t)strlen(bare));
	assert_int_equal(h.status, 204);
	assert_int_equal(h.content_length, -1);
	assert_false(h.close);
	static const char *bad[] = {
		"HTTP/2 200 OK\r\n\r\n",
		"HTTP/1.1 20 OK\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 099 Low\r\n\r\n",
		"HTTP/1.1 600 High\r\n\r\n",
		"http/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1234567890123456789\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (wsc_http_head_parse((const uint8_t *)bad[i], strlen(bad[i]), &h) != -EPROTO)
			fail_msg("accepted: %s", bad[i]);
	/* the same length twice is one length */
	const char *twice = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n";
	assert_true(wsc_http_head_parse((const uint8_t *)twice, strlen(twice), &h) > 0);
	assert_int_equal(h.content_length, 5);
	/* a head at the limit, and one past it */
	static uint8_t lim[WSC_HTTP_HEAD_MAX + 8];
	memset(lim, 'a', sizeof lim);
	memcpy(lim, "HTTP/1.1 200 OK\r\nX: ", 20);
	memcpy(lim + WSC_HTTP_HEAD_MAX - 4, "\r\n\r\n", 4);
	assert_int_equal(wsc_http_head_parse(lim, sizeof lim, &h), (ssize_t)WSC_HTTP_HEAD_MAX);
	memcpy(lim + WSC_HTTP_HEAD_MAX - 4, "aa\r\n\r\n", 6);
	assert_int_equal(wsc_http_head_parse(lim, WSC_HTTP_HEAD_MAX - 1, &h), 0);
	assert_int_equal(wsc_http_head_parse(lim, sizeof lim, &h), -EMSGSIZE);
}

/* ---- 4. TLS ---------------------------------------------------------------------------- */

static void script_upgrade_ok(struct srv *s)
{
	if (!srv_read_head(s))
		return;
	char acc[CP_WS_ACCEPT_LEN + 1], out[512];
	srv_accept_of(s, acc);
	int n = snprintf(out, sizeof out,
			 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
			 "Sec-WebSocket-Accept: %s\r\n\r\n",
			 acc);
	srv_write(s, out, (size_t)n);
	char b[64];
	while (SSL_read(s->ssl, b, sizeof b) > 0)
		;
}

/* Open with o against a server running script; returns wsc_conn_open's
 * result (and the upgrade's, when the handshake succeeded). */
static int try_open(struct wsc_opts *o, bool want_client_cert, char *err, size_t errlen, struct srv *s)
{
	srv_start(s, script_upgrade_ok, want_client_cert);
	o->port = s->port;
	SSL_CTX *ctx = wsc_ctx_new(o, err, errlen);
	assert_non_null(ctx);
	struct wsc_conn *c = NULL;
	int rc = wsc_conn_open(ctx, o, &c, err, errlen);
	if (rc == 0) {
		/* with TLS 1.3 a refused client certificate shows at the first read */
		rc = wsc_ws_upgrade(c, "/flow", err, errlen);
		wsc_conn_free(c);
	}
	SSL_CTX_free(ctx);
	srv_join(s);
	return rc;
}

static void test_tls(void **state)
{
	(void)state;
	struct srv s;
	char err[512];
	struct wsc_opts o = { .host = "127.0.0.1", .sni = "localhost", .ca_file = ca_pem, .timeout_ms = 5000 };
	assert_int_equal(try_open(&o, false, err, sizeof err, &s), 0);
	/* a CA that did not sign the server's certificate */
	o.ca_file = other_ca;
	assert_int_equal(try_open(&o, false, err, sizeof err, &s), -EPROTO);
	assert_non_null(strstr(err, "certificate"));
	assert_false(s.handshake_ok);
	/* the right CA, the wrong name */
	o.ca_file = ca_pem;
	o.sni = "fanogate.example";
	assert_int_equal(try_open(&o, false, err, sizeof err, &s), -EPROTO);
	assert_non_null(strstr(err, "hostname mismatch"));
	/* insecure: neither is checked */
	o.ca_file = other_ca;
	o.insecure = true;
	assert_int_equal(try_open(&o, false, err, sizeof err, &s), 0);
	o.insecure = false;
	o.ca_file = ca_pem;
	o.sni = NULL; /* no name: the chain is still checked */
	assert_int_equal(try_open(&o, false, err, sizeof err, &s), 0);
	o.ca_file = other_ca;
	assert_int_equal(try_open(&o, false, err, sizeof err, &s), -EPROTO);
	/* a server that wants a client certificate */
	o.ca_file = ca_pem;
	o.sni = "localhost";
	assert_true(try_open(&o, true, err, sizeof err, &s) < 0);
	assert_false(s.handshake_ok);
	o.cert_file = cli_cert;
	o.key_file = cli_key;
	assert_int_equal(try_open(&o, true, err, sizeof err, &s), 0);
	assert_string_equal(s.peer_cn, "fleet-client");
	/* a key that does not match the certificate */
	o.key_file = srv_key;
	assert_null(wsc_ctx_new(&o, err, sizeof err));
	assert_non_null(strstr(err, "client certificate"));
	o.key_file = cli_key;
	o.ca_file = "/nonexistent/ca.pem";
	assert_null(wsc_ctx_new(&o, err, sizeof err));
	assert_non_null(strstr(err, "CA file"));
}

/* ---- 5. non-blocking, timeouts, refused, closed ------------------------------------------- */

static int srv_pipe[2]; /* the test tells the server when to go on */

static void script_slow(struct srv *s)
{
	if (!srv_read_head(s))
		return;
	char acc[CP_WS_ACCEPT_LEN + 1], out[512];
	srv_accept_of(s, acc);
	int n = snprintf(out, sizeof out,
			 "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
			 "Sec-WebSocket-Accept: %s\r\n\r\n",
			 acc);
	srv_write(s, out, (size_t)n);
	char go;
	SRV_CHECK(s, read(srv_pipe[0], &go, 1) == 1);
	uint8_t f[16];
	ssize_t k = cp_ws_frame_encode(CP_WS_OP_BINARY, "late", 4, f, sizeof f);
	srv_write(s, f, (size_t)k);
	/* the client's frame, then the end */
	struct cp_ws_rx rx;
	struct cp_ws_rx_cfg cfg = { .max_message = 64 };
	cp_ws_rx_init(&rx, &cfg);
	size_t off = 0;
	struct cp_ws_event ev;
	SRV_CHECK(s, srv_next(s, &rx, &off, &ev) && ev.kind == CP_WS_EV_MESSAGE && ev.len == 1 && ev.data[0] == 'x');
	cp_ws_rx_fini(&rx);
}

static void test_nonblocking(void **state)
{
	(void)state;
	assert_int_equal(pipe(srv_pipe), 0);
	struct srv s;
	srv_start(&s, script_slow, false);
	struct wsc_opts o = opts_for(&s);
	SSL_CTX *ctx;
	struct wsc_conn *c = open_ok(&ctx, &o);
	char err[512];
	assert_int_equal(wsc_ws_upgrade(c, "/flow", err, sizeof err), 0);
	assert_int_equal(wsc_conn_set_nonblocking(c), 0);
	assert_int_equal(wsc_read(c), -EAGAIN);
	assert_false(wsc_conn_wants_write(c));
	assert_int_equal(write(srv_pipe[1], "g", 1), 1);
	struct pollfd p = { .fd = wsc_conn_fd(c), .events = POLLIN };
	struct cp_ws_event ev;
	int k = 0;
	while (k == 0) {
		assert_int_equal(poll(&p, 1, 5000), 1);
		ssize_t r = wsc_read(c);
		assert_true(r > 0 || r == -EAGAIN);
		k = wsc_ws_next(c, &ev);
	}
	assert_int_equal(k, 1);
	assert_int_equal(ev.len, 4);
	assert_memory_equal(ev.data, "late", 4);
	assert_int_equal(wsc_pending(c), 0);
	/* a non-blocking write of a frame */
	assert_int_equal(wsc_ws_send(c, CP_WS_OP_BINARY, "x", 1), 0);
	ssize_t r;
	do {
		assert_int_equal(poll(&p, 1, 5000), 1);
	} while ((r = wsc_read(c)) == -EAGAIN);
	assert_int_equal(r, -EPIPE);
	wsc_conn_free(c);
	SSL_CTX_free(ctx);
	srv_join(&s);
	close(srv_pipe[0]);
	close(srv_pipe[1]);
}

static void script_silent(struct srv *s)
{
	char go;
	SRV_CHECK(s, read(srv_pipe[0], &go, 1) == 1); /* holds the connection until the test is done */
}

static void test_timeout_refused(void **state)
{
	(void)state;
	assert_int_equal(pipe(srv_pipe), 0);
	struct srv s;
	srv_start(&s, script_silent, false);
	struct wsc_opts o = opts_for(&s);
	o.timeout_ms = 200;
	SSL_CTX *ctx;
	struct wsc_conn *c = open_ok(&ctx, &o);
	char err[512];
	assert_int_equal(wsc_ws_upgrade(c, "/flow", err, sizeof err), -ETIMEDOUT);
	assert_non_null(strstr(err, "timed out"));
	wsc_conn_free(c);
	assert_int_equal(write(srv_pipe[1], "g", 1), 1);
	srv_join(&s);
	close(srv_pipe[0]);
	close(srv_pipe[1]);
	/* nothing listens on the port the server had */
	c = NULL;
	assert_int_equal(wsc_conn_open(ctx, &o, &c, err, sizeof err), -ECONNREFUSED);
	assert_null(c);
	assert_non_null(strstr(err, "connect 127.0.0.1:"));
	o.host = "fanogate.example"; /* names are not resolved */
	assert_int_equal(wsc_conn_open(ctx, &o, &c, err, sizeof err), -EINVAL);
	SSL_CTX_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ws_session),
		cmocka_unit_test(test_ws_refused),
		cmocka_unit_test(test_http),
		cmocka_unit_test(test_http_head_parse),
		cmocka_unit_test(test_tls),
		cmocka_unit_test(test_nonblocking),
		cmocka_unit_test(test_timeout_refused),
	};
	return cmocka_run_group_tests(tests, make_certs, remove_certs);
}

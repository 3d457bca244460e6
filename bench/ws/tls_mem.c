/* tls_mem.c - bench/ws: OpenSSL's own heap per idle server TLS connection
 * (the goal: at most 8 KiB of RSS per idle TLS connection beyond
 * OpenSSL's own), so rss.sh can say how much of fanogate's figure is
 * OpenSSL's.
 *
 * Builds a server SSL_CTX the way control/cp_tls.c does (TLS 1.2-1.3, the
 * same options, session id context, the given certificate and key), then N
 * times: a client and a server SSL over memory BIOs, the handshake, one
 * application record each way (so the server's record buffers were used),
 * the client freed, the server's BIOs swapped for empty ones (fanogate's
 * BIOs hold no buffer), SSL_free_buffers on the server (what cp_tls_conn_trim
 * does to an idle connection). Reports the in-use heap (mallinfo2 uordblks)
 * per kept server connection, with and without the SSL_free_buffers step:
 *   {"openssl_idle_bytes_per_conn": ..., "openssl_busy_bytes_per_conn": ...}
 * Standalone, single thread, no network. Usage: tls_mem CERT KEY [N] */
#include <malloc.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>

static SSL_CTX *srv_ctx(const char *cert, const char *key)
{
	SSL_CTX *c = SSL_CTX_new(TLS_server_method());
	static const unsigned char sid[] = "fanogate";
	if (!c || !SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION) ||
	    SSL_CTX_use_certificate_chain_file(c, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(c, key, SSL_FILETYPE_PEM) != 1)
		return NULL;
	SSL_CTX_set_options(c, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_session_id_context(c, sid, sizeof(sid) - 1);
	return c;
}

/* Move what one side wrote to the other side's input. */
static int shuttle(BIO *from, BIO *to)
{
	char buf[16384];
	int moved = 0, n;
	while ((n = BIO_read(from, buf, sizeof(buf))) > 0) {
		if (BIO_write(to, buf, n) != n)
			return -1;
		moved += n;
	}
	return moved;
}

/* One kept server connection, or NULL when a step failed. */
static SSL *one(SSL_CTX *sc, SSL_CTX *cc, int trim)
{
	SSL *s = SSL_new(sc), *c = SSL_new(cc);
	BIO *s_in = BIO_new(BIO_s_mem()), *s_out = BIO_new(BIO_s_mem());
	BIO *c_in = BIO_new(BIO_s_mem()), *c_out = BIO_new(BIO_s_mem());
	if (!s || !c || !s_in || !s_out || !c_in || !c_out)
		return NULL;
	BIO_set_mem_eof_return(s_in, -1);
	BIO_set_mem_eof_return(c_in, -1);
	SSL_set_bio(s, s_in, s_out);
	SSL_set_bio(c, c_in, c_out);
	SSL_set_accept_state(s);
	SSL_set_connect_state(c);
	for (int round = 0; round < 10 && !(SSL_is_init_finished(s) && SSL_is_init_finished(c)); round++) {
		SSL_do_handshake(c);
		shuttle(c_out, s_in);
		SSL_do_handshake(s);
		shuttle(s_out, c_in);
	}
	if (!SSL_is_init_finished(s) || !SSL_is_init_finished(c))
		return NULL;
	char msg[512] = {0}, got[1024];
	if (SSL_write(c, msg, sizeof(msg)) != (int)sizeof(msg) || shuttle(c_out, s_in) <= 0 ||
	    SSL_read(s, got, sizeof(got)) != (int)sizeof(msg) || SSL_write(s, msg, 64) != 64 ||
	    shuttle(s_out, c_in) <= 0 || SSL_read(c, got, sizeof(got)) != 64)
		return NULL;
	SSL_free(c);
	/* fanogate's BIOs hold no buffer: swap the used ones for empty ones */
	BIO *e_in = BIO_new(BIO_s_mem()), *e_out = BIO_new(BIO_s_mem());
	if (!e_in || !e_out)
		return NULL;
	SSL_set_bio(s, e_in, e_out);
	if (trim && SSL_free_buffers(s) != 1)
		return NULL;
	return s;
}

static double per_conn(SSL_CTX *sc, SSL_CTX *cc, int n, int trim)
{
	SSL **keep = calloc((size_t)n, sizeof(*keep));
	if (!keep)
		return -1;
	SSL *warm = one(sc, cc, trim); /* first-use allocations (methods, tables) */
	if (!warm)
		return -1;
	size_t before = mallinfo2().uordblks;
	for (int i = 0; i < n; i++)
		if (!(keep[i] = one(sc, cc, trim)))
			return -1;
	size_t after = mallinfo2().uordblks;
	for (int i = 0; i < n; i++)
		SSL_free(keep[i]);
	SSL_free(warm);
	free(keep);
	return (double)(after - before) / n;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: tls_mem CERT KEY [N]\n");
		return 2;
	}
	int n = argc > 3 ? atoi(argv[3]) : 200;
	SSL_CTX *sc = srv_ctx(argv[1], argv[2]), *cc = SSL_CTX_new(TLS_client_method());
	if (!sc || !cc || n <= 0) {
		ERR_print_errors_fp(stderr);
		return 1;
	}
	double idle = per_conn(sc, cc, n, 1), busy = per_conn(sc, cc, n, 0);
	if (idle < 0 || busy < 0) {
		fprintf(stderr, "tls_mem: a handshake failed\n");
		ERR_print_errors_fp(stderr);
		return 1;
	}
	printf("{\"openssl_idle_bytes_per_conn\": %.0f, \"openssl_busy_bytes_per_conn\": %.0f, \"conns\": %d}\n", idle,
	       busy, n);
	SSL_CTX_free(sc);
	SSL_CTX_free(cc);
	return 0;
}

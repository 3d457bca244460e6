/* cp_tls.c - server TLS context, bearer tokens, and per-connection TLS over
 * memory BIOs (see cp_tls.h). Loop thread only. */
#include "cp_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cp_log.h"
#include "cp_selfsigned.h"
#include "cp_tls_files.h"

/* TLS 1.2: forward-secret AEAD suites only. TLS 1.3 keeps OpenSSL's default
 * suites (all AEAD). */
static const char tls12_ciphers[] =
	"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
	"ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
	"ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

static void why_ssl(char *why, size_t len, const char *what, const char *arg)
{
	unsigned long e = ERR_peek_last_error();
	char ebuf[256] = "";
	if (e)
		ERR_error_string_n(e, ebuf, sizeof(ebuf));
	snprintf(why, len, "%s %s: %s", what, arg ? arg : "", e ? ebuf : "unknown OpenSSL error");
	ERR_clear_error();
}

static void sha256(const void *p, size_t n, uint8_t out[32])
{
	unsigned int len = 32;
	if (EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) != 1)
		memset(out, 0, 32); /* cannot happen with the default provider */
}

bool cp_tls_token_ok(const struct cp_tls *t, const char *token, size_t len, const char **role)
{
	uint8_t h[32];
	sha256(token, len, h);
	const char *found = NULL;
	/* Every entry is compared, whatever matched: the time taken does not
	 * depend on which token (if any) matched. */
	for (size_t i = 0; i < t->n_tokens; i++) {
		int diff = CRYPTO_memcmp(h, t->tokens[i].sha, 32);
		if (diff == 0 && !found)
			found = t->tokens[i].role;
	}
	OPENSSL_cleanse(h, sizeof(h));
	if (found && role)
		*role = found;
	return found != NULL;
}

int cp_tls_init(struct cp_tls *t, const struct fg_config *cfg, char *why, size_t why_len)
{
	memset(t, 0, sizeof(*t));
	const char *cert = cfg->tls_cert, *key = cfg->tls_key;
	struct cp_selfsigned ss;
	if (!cfg->tls_cert[0] && !cfg->tls_key[0]) {
		/* The embedded default: a self-signed pair generated on first run
		 * in the state directory, reused later (cp_selfsigned.h). */
		int r = cp_selfsigned_ensure(cfg, &ss, why, why_len);
		if (r < 0)
			return r;
		cp_info("tls: %s self-signed certificate %s (key %s), SHA-256 fingerprint %s",
			ss.generated ? "generated" : "reusing", ss.cert, ss.key, ss.fingerprint);
		cert = ss.cert;
		key = ss.key;
	} else if (!cfg->tls_cert[0] || !cfg->tls_key[0]) {
		snprintf(why, why_len, "[tls] cert and key go together: set both, or neither for a self-signed pair");
		return -EINVAL;
	}
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		why_ssl(why, why_len, "SSL_CTX_new", NULL);
		return -ENOMEM;
	}
	t->ctx = ctx;
	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
	    !SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION)) {
		why_ssl(why, why_len, "protocol versions", NULL);
		goto fail;
	}
	/* Renegotiation is refused outright (SSL_OP_NO_RENEGOTIATION: a TLS 1.2
	 * client's renegotiation ClientHello gets a no_renegotiation alert);
	 * compression is off (CRIME). */
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
					 SSL_OP_CIPHER_SERVER_PREFERENCE);
	if (!SSL_CTX_set_cipher_list(ctx, tls12_ciphers)) {
		why_ssl(why, why_len, "cipher list", NULL);
		goto fail;
	}
	/* No SSL_MODE_RELEASE_BUFFERS: freeing and reallocating the record
	 * buffers around every record cost more than the ~34 KiB per
	 * connection it saves (bench/ws). cp_tls_conn_trim frees them once a
	 * connection went idle instead (cp_conn.c housekeeping). */
	/* Read without blocking, regular files only, parsed from memory
	 * (cp_tls_files.h): a FIFO or a device at a path is refused by name. */
	int fr = cp_tls_files_load(ctx, cert, key, cfg->tls_ca, why, why_len);
	if (fr < 0) {
		cp_tls_fini(t);
		return fr;
	}
	/* Session resumption: tickets on (OpenSSL default), and a session id
	 * context so resumption works with client verification. */
	static const unsigned char sid_ctx[] = "fanogate";
	SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof(sid_ctx) - 1);
	if (cfg->tls_ca[0]) { /* loaded above: the trust store and the client CA list */
		t->mtls = true;
		t->mtls_required = cfg->tls_require_client_cert;
		SSL_CTX_set_verify(ctx,
				   SSL_VERIFY_PEER | (t->mtls_required ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
				   NULL);
		SSL_CTX_set_verify_depth(ctx, 4);
	} else if (cfg->tls_require_client_cert) {
		snprintf(why, why_len, "[tls] require_client_cert needs [tls] ca");
		goto fail_noerr;
	}
	if (cfg->tokens_file[0]) {
		int r = cp_tokens_load(t, cfg->tokens_file, why, why_len);
		if (r < 0) {
			cp_tls_fini(t);
			return r;
		}
	}
	return 0;
fail:
fail_noerr:
	cp_tls_fini(t);
	return -EINVAL;
}

void cp_tls_fini(struct cp_tls *t)
{
	if (t->ctx)
		SSL_CTX_free(t->ctx);
	if (t->tokens)
		OPENSSL_cleanse(t->tokens, t->n_tokens * sizeof(*t->tokens));
	free(t->tokens);
	free(t->cnmap);
	memset(t, 0, sizeof(*t));
}

/* ---- the connection's BIOs ------------------------------------------------- */
/* cp_bio_in: BIO_read takes from the stash, then the window; nothing there
 * is "retry" (want read), never EOF. cp_bio_out: BIO_write goes to the
 * sink, or appends to c->out. Both carry the cp_tls_conn as their data.
 * The two method tables are process-wide, written once (bio_methods, loop
 * thread) and only read after: OpenSSL hands out BIO type indexes per
 * process (at most 127 of them), so one pair serves every context. */
static BIO_METHOD *bio_in_method, *bio_out_method;

static int bio_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	(void)num; (void)ptr;
	struct cp_tls_conn *c = BIO_get_data(b);
	switch (cmd) {
	case BIO_CTRL_FLUSH:
		return 1;
	case BIO_CTRL_PENDING:
		return c && b == c->rbio ? (long)cp_tls_in_pending(c) : 0;
	default:
		return 0;
	}
}

static int bio_in_read(BIO *b, char *buf, int len)
{
	struct cp_tls_conn *c = BIO_get_data(b);
	BIO_clear_retry_flags(b);
	size_t want = len > 0 ? (size_t)len : 0, got = 0;
	if (c && c->stash_len && want) {
		size_t n = c->stash_len < want ? c->stash_len : want;
		memcpy(buf, c->stash + c->stash_off, n);
		c->stash_off += n;
		c->stash_len -= n;
		got += n;
		if (!c->stash_len) { /* invariant 3 */
			free(c->stash);
			c->stash = NULL;
			c->stash_off = c->stash_cap = 0;
		}
	}
	if (c && c->win_len && got < want) {
		size_t n = c->win_len < want - got ? c->win_len : want - got;
		memcpy(buf + got, c->win, n);
		c->win += n;
		c->win_len -= n;
		got += n;
	}
	if (!got) {
		BIO_set_retry_read(b);
		return -1;
	}
	return (int)got;
}

static int bio_out_write(BIO *b, const char *buf, int len)
{
	struct cp_tls_conn *c = BIO_get_data(b);
	BIO_clear_retry_flags(b);
	if (!c || len <= 0)
		return len < 0 ? -1 : 0;
	size_t n = (size_t)len;
	if (c->sink)
		return c->sink(c->sink_arg, (const uint8_t *)buf, n) < 0 ? -1 : len;
	if (c->out_cap - c->out_len < n) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		while (cap - c->out_len < n)
			cap *= 2;
		uint8_t *p = realloc(c->out, cap);
		if (!p)
			return -1;
		c->out = p;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, buf, n);
	c->out_len += n;
	return len;
}

static int bio_methods(void)
{
	if (bio_in_method)
		return 0;
	int type = BIO_get_new_index();
	if (type < 0)
		return -ENOMEM;
	BIO_METHOD *in = BIO_meth_new(type | BIO_TYPE_SOURCE_SINK, "fanogate-in");
	BIO_METHOD *out = BIO_meth_new(type | BIO_TYPE_SOURCE_SINK, "fanogate-out");
	if (!in || !out || !BIO_meth_set_create(in, bio_create) || !BIO_meth_set_ctrl(in, bio_ctrl) ||
	    !BIO_meth_set_read(in, bio_in_read) || !BIO_meth_set_create(out, bio_create) ||
	    !BIO_meth_set_ctrl(out, bio_ctrl) || !BIO_meth_set_write(out, bio_out_write)) {
		BIO_meth_free(in);
		BIO_meth_free(out);
		return -ENOMEM;
	}
	bio_in_method = in;
	bio_out_method = out;
	return 0;
}

int cp_tls_conn_init(struct cp_tls_conn *c, const struct cp_tls *t)
{
	memset(c, 0, sizeof(*c));
	if (bio_methods() < 0) {
		cp_log_ssl(CP_LOG_ERR, "tls: cannot create the connection BIO methods");
		return -ENOMEM;
	}
	c->ssl = SSL_new(t->ctx);
	c->rbio = BIO_new(bio_in_method);
	c->wbio = BIO_new(bio_out_method);
	if (!c->ssl || !c->rbio || !c->wbio) {
		SSL_free(c->ssl);
		BIO_free(c->rbio);
		BIO_free(c->wbio);
		memset(c, 0, sizeof(*c));
		cp_log_ssl(CP_LOG_ERR, "tls: cannot allocate a connection");
		return -ENOMEM;
	}
	BIO_set_data(c->rbio, c);
	BIO_set_data(c->wbio, c);
	SSL_set_bio(c->ssl, c->rbio, c->wbio); /* the SSL owns both BIOs now */
	SSL_set_accept_state(c->ssl);
	return 0;
}

void cp_tls_conn_fini(struct cp_tls_conn *c)
{
	if (c->ssl)
		SSL_free(c->ssl);
	free(c->stash);
	free(c->out);
	memset(c, 0, sizeof(*c));
}

void cp_tls_set_sink(struct cp_tls_conn *c, cp_tls_sink_fn sink, void *arg)
{
	c->sink = sink;
	c->sink_arg = arg;
}

static int stash_append(struct cp_tls_conn *c, const void *buf, size_t len)
{
	if (!len)
		return 0;
	if (c->stash_off && c->stash_cap - c->stash_off - c->stash_len < len) {
		memmove(c->stash, c->stash + c->stash_off, c->stash_len);
		c->stash_off = 0;
	}
	if (c->stash_cap - c->stash_off - c->stash_len < len) {
		size_t cap = c->stash_len + len;
		uint8_t *p = realloc(c->stash, cap);
		if (!p)
			return -ENOMEM;
		c->stash = p;
		c->stash_cap = cap;
	}
	memcpy(c->stash + c->stash_off + c->stash_len, buf, len);
	c->stash_len += len;
	return 0;
}

int cp_tls_feed(struct cp_tls_conn *c, const void *buf, size_t len) { return stash_append(c, buf, len); }

void cp_tls_feed_window(struct cp_tls_conn *c, const void *buf, size_t len)
{
	c->win = buf;
	c->win_len = len;
}

int cp_tls_feed_end(struct cp_tls_conn *c)
{
	int r = stash_append(c, c->win, c->win_len);
	c->win = NULL;
	c->win_len = 0;
	return r;
}

size_t cp_tls_in_pending(const struct cp_tls_conn *c) { return c->stash_len + c->win_len; }

bool cp_tls_conn_trim(struct cp_tls_conn *c)
{
	/* Never with buffered input, processed or not: the record layer
	 * decrypts in place, so unread plaintext lives in the read buffer
	 * (OpenSSL before 3.0.14 freed it anyway: CVE-2024-4741). */
	if (!c->ssl || !c->handshake_done || SSL_has_pending(c->ssl))
		return false;
	return SSL_free_buffers(c->ssl) == 1;
}

static void tls_identity(const struct cp_tls *t, struct cp_tls_conn *c)
{
	c->resumed = SSL_session_reused(c->ssl) == 1;
	X509 *cert = SSL_get0_peer_certificate(c->ssl);
	if (!cert || SSL_get_verify_result(c->ssl) != X509_V_OK || !t->mtls)
		return;
	X509_NAME *name = X509_get_subject_name(cert);
	int idx = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
	if (idx < 0)
		return;
	ASN1_STRING *d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx));
	unsigned char *utf8 = NULL;
	int n = ASN1_STRING_to_UTF8(&utf8, d);
	/* A CN with an embedded NUL or too long is not an identity. */
	if (n > 0 && n < CP_CN_MAX && memchr(utf8, 0, (size_t)n) == NULL) {
		memcpy(c->cn, utf8, (size_t)n);
		c->cn[n] = '\0';
		c->peer_verified = true;
		c->cert_role = "fleet";
		/* Re-derived on every connection, resumed or not. */
		for (size_t i = 0; i < t->n_cnmap; i++)
			if (!strcmp(t->cnmap[i].cn, c->cn)) {
				c->cert_role = t->cnmap[i].role;
				break;
			}
	}
	OPENSSL_free(utf8);
}

ssize_t cp_tls_read(const struct cp_tls *t, struct cp_tls_conn *c, void *buf, size_t cap)
{
	if (!c->handshake_done) {
		int r = SSL_do_handshake(c->ssl);
		if (r != 1) {
			int e = SSL_get_error(c->ssl, r);
			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return 0;
			cp_log_ssl(CP_LOG_DEBUG, "tls: handshake failed (ssl error %d)", e);
			return -EPROTO;
		}
		c->handshake_done = true;
		tls_identity(t, c);
	}
	int n = SSL_read(c->ssl, buf, cap > INT32_MAX ? INT32_MAX : (int)cap);
	if (n > 0)
		return n;
	int e = SSL_get_error(c->ssl, n);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return 0;
	if (e == SSL_ERROR_ZERO_RETURN)
		return -EPIPE;
	cp_log_ssl(CP_LOG_DEBUG, "tls: read failed (ssl error %d)", e);
	return -EPROTO;
}

int cp_tls_write(struct cp_tls_conn *c, const void *buf, size_t len)
{
	while (len) {
		int chunk = len > (1u << 30) ? (1 << 30) : (int)len;
		int n = SSL_write(c->ssl, buf, chunk);
		if (n <= 0) {
			cp_log_ssl(CP_LOG_DEBUG, "tls: write failed (ssl error %d)", SSL_get_error(c->ssl, n));
			return -EPROTO;
		}
		buf = (const uint8_t *)buf + n;
		len -= (size_t)n;
	}
	return 0;
}

size_t cp_tls_out_pending(const struct cp_tls_conn *c) { return c->out_len; }

size_t cp_tls_out_take(struct cp_tls_conn *c, void *buf, size_t cap)
{
	size_t n = c->out_len < cap ? c->out_len : cap;
	if (!n)
		return 0;
	memcpy(buf, c->out, n);
	memmove(c->out, c->out + n, c->out_len - n);
	c->out_len -= n;
	if (!c->out_len) { /* invariant 4 */
		free(c->out);
		c->out = NULL;
		c->out_cap = 0;
	}
	return n;
}

void cp_tls_close_notify(struct cp_tls_conn *c)
{
	if (c->handshake_done) {
		(void)SSL_shutdown(c->ssl);
		ERR_clear_error();
	}
}

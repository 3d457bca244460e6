/* cp_tls.h - TLS for the control plane over memory BIOs, and who a peer is.
 *
 * Owns: the server SSL_CTX (TLS 1.2 and 1.3 only, modern AEAD ciphers,
 * renegotiation refused, compression off, session tickets on), optional
 * mutual TLS (CA file, verify, client certificate subject CN -> role), the
 * bearer-token table (a file that must be mode 0600 and owned by us; tokens
 * compared in constant time), and per-connection TLS state whose only I/O is
 * two BIOs of our own (cp_bio_in, cp_bio_out): the loop feeds ciphertext in
 * and takes ciphertext out. OpenSSL never touches a socket.
 *
 * Memory per connection (docs/control-plane.md, "Memory per connection"):
 * the input BIO reads straight from the caller's buffer (the loop's shared
 * receive buffer) while cp_tls_feed_window is in force; only ciphertext left
 * unread when the caller stops early is copied to a heap stash, freed once
 * read. The output BIO hands each record to the caller's sink (the
 * connection's send queue) or, without a sink, to a heap buffer freed once
 * taken. OpenSSL's own record buffers are freed by cp_tls_conn_trim while a
 * connection is idle. So an idle connection holds no I/O buffer here.
 *
 * Resumption and identity: a resumed TLS session keeps its client
 * certificate (OpenSSL stores it in the session), but fanogate re-derives the
 * role from that certificate against the current CN map on every connection,
 * and a bearer token is checked on every HTTP request, so a resumed session
 * never skips authentication: it must present the token again.
 *
 * Who may call: the loop thread only (the context is shared by every
 * connection of the loop). */
#ifndef CP_TLS_H
#define CP_TLS_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fg/common.h"
#include "fg/config.h"

#define CP_ROLE_MAX 32
#define CP_CN_MAX 128

struct cp_token {
	uint8_t sha[32]; /* SHA-256 of the token: equal-length constant-time compare */
	char role[CP_ROLE_MAX];
};
struct cp_cnmap {
	char cn[CP_CN_MAX];
	char role[CP_ROLE_MAX];
};

struct cp_tls {
	SSL_CTX *ctx;
	bool mtls;          /* a CA is configured: client certificates are verified */
	bool mtls_required; /* and a handshake without one fails */
	struct cp_token *tokens;
	size_t n_tokens;
	struct cp_cnmap *cnmap;
	size_t n_cnmap;
};

/* Build the context from the [tls] section: tls_cert, tls_key (required),
 * tls_ca (optional: enables mTLS), tls_require_client_cert, tokens_file
 * (optional). On failure returns -errno / -EINVAL and writes a one-line
 * human reason (with OpenSSL's errors) to why[0..why_len). */
FG_MUST_CHECK int cp_tls_init(struct cp_tls *t, const struct fg_config *cfg, char *why, size_t why_len);
void cp_tls_fini(struct cp_tls *t);

/* Load the tokens file: one token per line, optionally followed by a space
 * and a role (default role "fleet"); "cn:<subject CN> <role>" lines map a
 * client certificate CN to a role; blank lines and '#' comments are skipped.
 * Refuses (-EPERM) a file readable or writable by group or others, or not
 * owned by the running uid. Returns the number of tokens or -errno with why. */
FG_MUST_CHECK int cp_tokens_load(struct cp_tls *t, const char *path, char *why, size_t why_len);

/* Constant-time check of a presented bearer token against every token (no
 * early exit, SHA-256 then CRYPTO_memcmp). On a match writes the role
 * (pointer into t, valid until cp_tls_fini) and returns true. */
bool cp_tls_token_ok(const struct cp_tls *t, const char *token, size_t len, const char **role);

/* ---- per connection ----------------------------------------------------- */
/* Where the output BIO puts ciphertext: returns 0, or -ENOMEM (the write
 * fails). */
typedef int (*cp_tls_sink_fn)(void *arg, const uint8_t *p, size_t n);

struct cp_tls_conn {
	SSL *ssl;
	BIO *rbio; /* ciphertext from the peer: window then stash, OpenSSL reads */
	BIO *wbio; /* ciphertext to the peer: OpenSSL writes to sink (or out) */
	/* Invariants: 1. win is non-NULL only between cp_tls_feed_window and
	 * cp_tls_feed_end. 2. stash bytes are older than win bytes and are read
	 * first. 3. stash is NULL iff stash_cap == 0; it is freed when read out.
	 * 4. out is NULL iff out_cap == 0; it is freed when taken out. */
	const uint8_t *win;
	size_t win_len;
	uint8_t *stash;
	size_t stash_off, stash_len, stash_cap;
	cp_tls_sink_fn sink;
	void *sink_arg;
	uint8_t *out;
	size_t out_len, out_cap;
	bool handshake_done;
	bool peer_verified; /* a client certificate chain verified against the CA */
	bool resumed;
	char cn[CP_CN_MAX];
	const char *cert_role; /* role from the CN map (or "fleet"), NULL without a cert */
};

FG_MUST_CHECK int cp_tls_conn_init(struct cp_tls_conn *c, const struct cp_tls *t);
void cp_tls_conn_fini(struct cp_tls_conn *c);

/* Send every ciphertext byte OpenSSL writes to sink(arg, ...) from now on
 * (instead of the buffer cp_tls_out_take reads). */
void cp_tls_set_sink(struct cp_tls_conn *c, cp_tls_sink_fn sink, void *arg);

/* Hand ciphertext received from the socket to OpenSSL: copied to the stash
 * (heap). Returns 0 or -ENOMEM. */
FG_MUST_CHECK int cp_tls_feed(struct cp_tls_conn *c, const void *buf, size_t len);
/* Zero-copy feed: OpenSSL reads buf[0..len) in place (after the stash)
 * until cp_tls_feed_end, which the caller must call before buf goes away;
 * it copies what OpenSSL did not read to the stash. Returns 0 or -ENOMEM
 * (then the unread bytes are lost: close the connection). */
void cp_tls_feed_window(struct cp_tls_conn *c, const void *buf, size_t len);
FG_MUST_CHECK int cp_tls_feed_end(struct cp_tls_conn *c);
/* Ciphertext fed and not yet read by OpenSSL (stash + window). */
size_t cp_tls_in_pending(const struct cp_tls_conn *c);

/* Free OpenSSL's record buffers if they hold nothing (SSL_free_buffers: it
 * refuses while a partial record is buffered); they come back on the next
 * record. For connections that went idle: doing it after every record
 * would cost a malloc/free pair of ~17 KiB per record. Returns true when
 * freed. */
bool cp_tls_conn_trim(struct cp_tls_conn *c);

/* Drive the handshake and read plaintext into buf[0..cap). Returns the number
 * of plaintext bytes (> 0), 0 when more ciphertext is needed (or the
 * handshake just progressed: drain cp_tls_out), -EPIPE when the peer sent
 * close_notify, -EPROTO on a TLS error (logged at debug with OpenSSL's queue:
 * a peer's bad handshake is not our error). */
FG_MUST_CHECK ssize_t cp_tls_read(const struct cp_tls *t, struct cp_tls_conn *c, void *buf, size_t cap);

/* Encrypt len plaintext bytes (all of them: memory BIOs never block).
 * Returns 0, or -EPROTO. */
FG_MUST_CHECK int cp_tls_write(struct cp_tls_conn *c, const void *buf, size_t len);

/* Ciphertext waiting to go to the socket. */
size_t cp_tls_out_pending(const struct cp_tls_conn *c);
/* Move up to cap bytes of it to buf; returns the count. */
size_t cp_tls_out_take(struct cp_tls_conn *c, void *buf, size_t cap);

/* Queue close_notify (drain cp_tls_out afterwards). */
void cp_tls_close_notify(struct cp_tls_conn *c);

#endif

/* cp_tls_files.h - the files of the TLS listener: the certificate chain,
 * the private key, the CA bundle of client certificates ([tls] cert, key,
 * ca) and the bearer-tokens file ([tls] tokens_file).
 *
 * Owns: reading them without blocking and only as regular files
 * (fg_file_read: a FIFO, a directory or a device at the path is refused by
 * name, never opened for a read that could hang), parsing them from memory
 * (PEM), and the checks a start-up makes of them: the key matches the
 * certificate, the CA bundle holds a certificate, the tokens file is mode
 * 0600, owned by the running uid and well formed.
 *
 * Not here: the SSL_CTX's protocol settings (cp_tls.c). Linked into the
 * daemon and into fanoctl (`fanoctl config check`), so nothing here logs.
 *
 * Who may call: any one thread at a time per ctx / struct cp_tls. */
#ifndef CP_TLS_FILES_H
#define CP_TLS_FILES_H

#include <openssl/ssl.h>
#include <stddef.h>

#include "cp_tls.h"
#include "fg/common.h"

/* Largest PEM file read (a certificate chain, a key, a CA bundle). */
#define CP_TLS_PEM_MAX (4u << 20)

/* Load cert (a PEM chain: the leaf, then its intermediates) and key into
 * ctx and check that they match; with ca not empty, also load the CA
 * bundle (certificates and CRLs) as ctx's trust store for client
 * certificates and their names as the client CA list. Returns 0, or -errno
 * (-EINVAL for content OpenSSL refuses) with one line in why naming the key
 * and the path ("[tls] cert /x: is a FIFO, not a regular file", "[tls] key
 * /y: does not match the certificate ...") and OpenSSL's error queue,
 * drained. */
FG_MUST_CHECK int cp_tls_files_load(SSL_CTX *ctx, const char *cert, const char *key, const char *ca, char *why,
				    size_t why_len);

#endif

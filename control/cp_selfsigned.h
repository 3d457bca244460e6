/* cp_selfsigned.h - the embedded default's TLS identity: a self-signed
 * certificate generated on first run.
 *
 * Owns: when [tls] cert and key are both unset, an EC P-256 key and a
 * self-signed X.509 certificate (SAN: the host name, "localhost" and the
 * listen address; valid 30 days) in the state directory (the directory of
 * [audit] path, created 0700), files tls-selfsigned.pem / tls-selfsigned.key
 * (0600). Later starts reuse the pair while the certificate is still valid
 * for at least a day; otherwise a new one is generated.
 *
 * Who may call: main thread at start-up (cp_tls_init), before any thread. */
#ifndef CP_SELFSIGNED_H
#define CP_SELFSIGNED_H

#include <stdbool.h>
#include <stddef.h>

#include "fg/common.h"
#include "fg/config.h"

#define CP_SELFSIGNED_DAYS 30

struct cp_selfsigned {
	char cert[FG_PATH_MAX];
	char key[FG_PATH_MAX];
	char fingerprint[96]; /* SHA-256 of the DER certificate, AA:BB:... */
	bool generated;       /* false: reused from an earlier start */
};

/* Make sure the pair exists (generate or reuse) and fill *out. Returns 0, or
 * -errno with a one-line reason in why. */
FG_MUST_CHECK int cp_selfsigned_ensure(const struct fg_config *cfg, struct cp_selfsigned *out, char *why,
				       size_t why_len);

#endif

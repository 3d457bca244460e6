/* cp_tls_files.c - the TLS listener's certificate, key, CA bundle and tokens
 * file, read without blocking and parsed from memory (see cp_tls_files.h;
 * cp_tokens_load is declared in cp_tls.h). */
#include "cp_tls_files.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fg/config.h"

/* "what path: msg: <every OpenSSL error, oldest first>", the queue drained. */
static void why_ssl(char *why, size_t len, const char *what, const char *path, const char *msg)
{
	int n = snprintf(why, len, "%s %s: %s", what, path, msg);
	size_t off = n > 0 && (size_t)n < len ? (size_t)n : len;
	unsigned long e;
	const char *sep = ": ";
	while ((e = ERR_get_error()) != 0) {
		char ebuf[256];
		ERR_error_string_n(e, ebuf, sizeof(ebuf));
		if (off + 1 < len) {
			n = snprintf(why + off, len - off, "%s%s", sep, ebuf);
			off = n > 0 && (size_t)n < len - off ? off + (size_t)n : len;
		}
		sep = "; ";
	}
}

/* A PEM file in memory: the bytes (cleansed when done: a key's too) and a
 * read-only BIO over them. */
struct pem {
	char *buf;
	size_t len;
	BIO *b;
};

static void pem_done(struct pem *p)
{
	BIO_free(p->b);
	if (p->buf) {
		OPENSSL_cleanse(p->buf, p->len);
		free(p->buf);
	}
	memset(p, 0, sizeof(*p));
}

/* Read path (fg_file_read: never blocking, a regular file only) into p.
 * 0, or -errno with why naming what and path. */
static int pem_read(struct pem *p, const char *what, const char *path, char *why, size_t why_len)
{
	char reason[160];
	memset(p, 0, sizeof(*p));
	int r = fg_file_read(path, 0, CP_TLS_PEM_MAX, &p->buf, &p->len, reason, sizeof(reason));
	if (r < 0) {
		snprintf(why, why_len, "%s %s: %s", what, path, reason);
		return r;
	}
	p->b = BIO_new_mem_buf(p->buf, (int)p->len);
	if (!p->b) {
		why_ssl(why, why_len, what, path, "out of memory");
		pem_done(p);
		return -ENOMEM;
	}
	return 0;
}

static int load_chain(SSL_CTX *ctx, const char *path, char *why, size_t why_len)
{
	struct pem p;
	int r = pem_read(&p, "[tls] cert", path, why, why_len);
	if (r < 0)
		return r;
	BIO *b = p.b;
	ERR_clear_error();
	X509 *leaf = PEM_read_bio_X509_AUX(b, NULL, NULL, NULL);
	if (!leaf || SSL_CTX_use_certificate(ctx, leaf) != 1) {
		X509_free(leaf);
		pem_done(&p);
		why_ssl(why, why_len, "[tls] cert", path, "no PEM certificate OpenSSL accepts");
		return -EINVAL;
	}
	X509_free(leaf);
	SSL_CTX_clear_chain_certs(ctx);
	X509 *x;
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		if (SSL_CTX_add0_chain_cert(ctx, x) != 1) {
			X509_free(x);
			pem_done(&p);
			why_ssl(why, why_len, "[tls] cert", path, "chain certificate refused");
			return -EINVAL;
		}
	}
	/* The loop ends at the end of the data (PEM_R_NO_START_LINE) or at a
	 * block that does not parse: only the former is the end of a chain. */
	unsigned long e = ERR_peek_last_error();
	pem_done(&p);
	if (e && !(ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)) {
		why_ssl(why, why_len, "[tls] cert", path, "a chain certificate does not parse");
		return -EINVAL;
	}
	ERR_clear_error();
	return 0;
}

static int load_key(SSL_CTX *ctx, const char *path, char *why, size_t why_len)
{
	struct pem p;
	int r = pem_read(&p, "[tls] key", path, why, why_len);
	if (r < 0)
		return r;
	ERR_clear_error();
	EVP_PKEY *k = PEM_read_bio_PrivateKey(p.b, NULL, NULL, NULL);
	pem_done(&p);
	if (!k) {
		why_ssl(why, why_len, "[tls] key", path, "no PEM private key OpenSSL accepts (an encrypted key is refused)");
		return -EINVAL;
	}
	X509 *leaf = SSL_CTX_get0_certificate(ctx);
	if (leaf && X509_check_private_key(leaf, k) != 1) {
		EVP_PKEY_free(k);
		why_ssl(why, why_len, "[tls] key", path, "does not match the certificate");
		return -EINVAL;
	}
	int ok = SSL_CTX_use_PrivateKey(ctx, k);
	EVP_PKEY_free(k);
	if (ok != 1 || SSL_CTX_check_private_key(ctx) != 1) {
		why_ssl(why, why_len, "[tls] key", path, "private key refused");
		return -EINVAL;
	}
	return 0;
}

static int load_ca(SSL_CTX *ctx, const char *path, char *why, size_t why_len)
{
	struct pem p;
	int r = pem_read(&p, "[tls] ca", path, why, why_len);
	if (r < 0)
		return r;
	ERR_clear_error();
	STACK_OF(X509_INFO) *infos = PEM_X509_INFO_read_bio(p.b, NULL, NULL, NULL);
	pem_done(&p);
	if (!infos) {
		why_ssl(why, why_len, "[tls] ca", path, "not a PEM bundle OpenSSL accepts");
		return -EINVAL;
	}
	X509_STORE *store = SSL_CTX_get_cert_store(ctx);
	int n_cert = 0, rc = 0;
	for (int i = 0; i < sk_X509_INFO_num(infos) && rc == 0; i++) {
		X509_INFO *in = sk_X509_INFO_value(infos, i);
		if (in->x509) {
			if (X509_STORE_add_cert(store, in->x509) != 1 || SSL_CTX_add_client_CA(ctx, in->x509) != 1)
				rc = -EINVAL;
			n_cert++;
		}
		if (in->crl && X509_STORE_add_crl(store, in->crl) != 1)
			rc = -EINVAL;
	}
	sk_X509_INFO_pop_free(infos, X509_INFO_free);
	if (rc == 0 && n_cert == 0) {
		snprintf(why, why_len, "[tls] ca %s: no certificate in the bundle", path);
		return -EINVAL;
	}
	if (rc < 0)
		why_ssl(why, why_len, "[tls] ca", path, "a certificate or CRL was refused");
	return rc;
}

int cp_tls_files_load(SSL_CTX *ctx, const char *cert, const char *key, const char *ca, char *why, size_t why_len)
{
	int r = load_chain(ctx, cert, why, why_len);
	if (r == 0)
		r = load_key(ctx, key, why, why_len);
	if (r == 0 && ca && ca[0])
		r = load_ca(ctx, ca, why, why_len);
	return r;
}

/* ---- tokens ---------------------------------------------------------------- */

static void sha256(const void *p, size_t n, uint8_t out[32])
{
	unsigned int len = 32;
	if (EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) != 1)
		memset(out, 0, 32); /* cannot happen with the default provider */
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	return s;
}

int cp_tokens_load(struct cp_tls *t, const char *path, char *why, size_t why_len)
{
	char reason[160];
	/* Not followed: a link could point anywhere the daemon may read. */
	int fd = fg_file_open(path, FG_FILE_NOFOLLOW, 0, reason, sizeof(reason));
	if (fd < 0) {
		snprintf(why, why_len, "tokens file %s: %s", path, reason);
		return fd;
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		snprintf(why, why_len, "tokens file %s: fstat: %s", path, strerror(e));
		return -e;
	}
	if ((st.st_mode & 077) != 0 || st.st_uid != geteuid()) {
		close(fd);
		snprintf(why, why_len,
			 "tokens file %s has mode %04o owner %u: it must be a regular file of mode 0600 "
			 "owned by uid %u (chmod 600 %s)",
			 path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)geteuid(), path);
		return -EPERM;
	}
	FILE *f = fdopen(fd, "r");
	if (!f) {
		int e = errno;
		close(fd);
		snprintf(why, why_len, "tokens file %s: %s", path, strerror(e));
		return -e;
	}
	char line[1024];
	int lineno = 0, rc = 0;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		char *s = trim(line);
		if (!*s || *s == '#')
			continue;
		char *sp = strpbrk(s, " \t");
		const char *role = "fleet";
		if (sp) {
			*sp = '\0';
			role = trim(sp + 1);
			if (!*role || strlen(role) >= CP_ROLE_MAX || strpbrk(role, " \t")) {
				snprintf(why, why_len, "tokens file %s:%d: bad role", path, lineno);
				rc = -EINVAL;
				break;
			}
		}
		if (!strncmp(s, "cn:", 3)) {
			if (!s[3] || strlen(s + 3) >= CP_CN_MAX) {
				snprintf(why, why_len, "tokens file %s:%d: bad cn: entry", path, lineno);
				rc = -EINVAL;
				break;
			}
			struct cp_cnmap *m = realloc(t->cnmap, (t->n_cnmap + 1) * sizeof(*m));
			if (!m) {
				rc = -ENOMEM;
				break;
			}
			t->cnmap = m;
			snprintf(m[t->n_cnmap].cn, CP_CN_MAX, "%s", s + 3);
			snprintf(m[t->n_cnmap].role, CP_ROLE_MAX, "%s", role);
			t->n_cnmap++;
			continue;
		}
		if (strlen(s) < 16) {
			snprintf(why, why_len, "tokens file %s:%d: token shorter than 16 characters", path, lineno);
			rc = -EINVAL;
			break;
		}
		struct cp_token *tk = realloc(t->tokens, (t->n_tokens + 1) * sizeof(*tk));
		if (!tk) {
			rc = -ENOMEM;
			break;
		}
		t->tokens = tk;
		sha256(s, strlen(s), tk[t->n_tokens].sha);
		snprintf(tk[t->n_tokens].role, CP_ROLE_MAX, "%s", role);
		t->n_tokens++;
		OPENSSL_cleanse(line, sizeof(line));
	}
	OPENSSL_cleanse(line, sizeof(line));
	fclose(f);
	if (rc == -ENOMEM)
		snprintf(why, why_len, "tokens file %s: out of memory", path);
	return rc < 0 ? rc : (int)t->n_tokens;
}

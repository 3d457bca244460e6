/* cp_selfsigned.c - self-signed certificate on first run (see
 * cp_selfsigned.h). Main thread, start-up only. */
#include "cp_selfsigned.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

static void fingerprint_of(X509 *x, char *out, size_t cap)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	out[0] = 0;
	if (X509_digest(x, EVP_sha256(), md, &n) != 1)
		return;
	size_t o = 0;
	for (unsigned i = 0; i < n && o + 3 < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, i ? ":%02X" : "%02X", md[i]);
}

/* Read without blocking and only as a regular file (fg_file_read): a FIFO
 * put in the state directory is not reused, never waited on. */
static X509 *read_cert(const char *path)
{
	char *buf = NULL, why[160];
	size_t len = 0;
	if (fg_file_read(path, 0, 1u << 20, &buf, &len, why, sizeof(why)) < 0)
		return NULL;
	BIO *b = BIO_new_mem_buf(buf, (int)len);
	X509 *x = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	BIO_free(b);
	free(buf);
	ERR_clear_error();
	return x;
}

/* Reusable: both files there, private, and the certificate valid for at
 * least one more day. */
static bool reusable(const struct cp_selfsigned *s, X509 **out)
{
	struct stat st;
	if (stat(s->key, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077))
		return false;
	X509 *x = read_cert(s->cert);
	if (!x)
		return false;
	time_t t = time(NULL) + 86400;
	if (X509_cmp_time(X509_get0_notAfter(x), &t) <= 0) {
		X509_free(x);
		return false;
	}
	*out = x;
	return true;
}

/* Write data to path (created 0600, replaced atomically through path.tmp). */
static int write_private(const char *path, int (*emit)(FILE *f, void *arg), void *arg)
{
	char tmp[FG_PATH_MAX + 8];
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	(void)unlink(tmp);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = -errno;
		close(fd);
		return e;
	}
	int ok = emit(f, arg);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0)
		ok = 0;
	if (fclose(f) != 0)
		ok = 0;
	if (!ok || rename(tmp, path) != 0) {
		(void)unlink(tmp);
		return -EIO;
	}
	return 0;
}

static int emit_key(FILE *f, void *arg) { return PEM_write_PrivateKey(f, arg, NULL, NULL, 0, NULL, NULL) == 1; }
static int emit_cert(FILE *f, void *arg) { return PEM_write_X509(f, arg) == 1; }

static int add_ext(X509 *x, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
	X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ex)
		return 0;
	int ok = X509_add_ext(x, ex, -1);
	X509_EXTENSION_free(ex);
	return ok;
}

static X509 *make_cert(EVP_PKEY *k, const struct fg_config *cfg)
{
	char host[256] = "localhost";
	if (gethostname(host, sizeof(host) - 1) != 0 || !host[0])
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = 0;
	char san[700];
	int n = snprintf(san, sizeof(san), "DNS:%s", host);
	if (strcmp(host, "localhost") != 0)
		n += snprintf(san + n, sizeof(san) - (size_t)n, ",DNS:localhost");
	char ip[INET6_ADDRSTRLEN] = "";
	const struct fg_addr *a = &cfg->tls_listen;
	if (a->set && inet_ntop(a->family, a->addr, ip, sizeof(ip)) && strcmp(ip, "0.0.0.0") != 0 &&
	    strcmp(ip, "::") != 0)
		snprintf(san + n, sizeof(san) - (size_t)n, ",IP:%s", ip);
	else
		snprintf(san + n, sizeof(san) - (size_t)n, ",IP:127.0.0.1");

	X509 *x = X509_new();
	if (!x)
		return NULL;
	unsigned char serial[16];
	FILE *r = fopen("/dev/urandom", "r");
	size_t got = r ? fread(serial, 1, sizeof(serial), r) : 0;
	if (r)
		fclose(r);
	if (got != sizeof(serial)) {
		X509_free(x);
		return NULL;
	}
	serial[0] &= 0x7f;
	BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), NULL);
	X509_NAME *name = X509_get_subject_name(x);
	int ok = bn && X509_set_version(x, 2) && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) &&
		 X509_gmtime_adj(X509_getm_notBefore(x), -300) &&
		 X509_gmtime_adj(X509_getm_notAfter(x), (long)CP_SELFSIGNED_DAYS * 86400) && X509_set_pubkey(x, k) &&
		 X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"fanogate self-signed", -1,
					    -1, 0) &&
		 X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)host, -1, -1, 0) &&
		 X509_set_issuer_name(x, name) && add_ext(x, NID_subject_alt_name, san) &&
		 add_ext(x, NID_basic_constraints, "critical,CA:FALSE") &&
		 add_ext(x, NID_key_usage, "critical,digitalSignature") &&
		 add_ext(x, NID_ext_key_usage, "serverAuth") && add_ext(x, NID_subject_key_identifier, "hash") &&
		 X509_sign(x, k, EVP_sha256()) > 0;
	BN_free(bn);
	if (!ok) {
		X509_free(x);
		return NULL;
	}
	return x;
}

int cp_selfsigned_ensure(const struct fg_config *cfg, struct cp_selfsigned *out, char *why, size_t why_len)
{
	memset(out, 0, sizeof(*out));
	char dir[FG_PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", cfg->audit_path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = 0;
	else
		*slash = 0;
	if ((size_t)snprintf(out->cert, sizeof(out->cert), "%s/tls-selfsigned.pem", dir) >= sizeof(out->cert) ||
	    (size_t)snprintf(out->key, sizeof(out->key), "%s/tls-selfsigned.key", dir) >= sizeof(out->key)) {
		snprintf(why, why_len, "state directory path too long: %s", dir);
		return -ENAMETOOLONG;
	}
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		int e = errno;
		snprintf(why, why_len, "cannot create the state directory %s (the directory of [audit] path): %s", dir,
			 strerror(e));
		return -e;
	}
	X509 *x = NULL;
	if (reusable(out, &x)) {
		fingerprint_of(x, out->fingerprint, sizeof(out->fingerprint));
		X509_free(x);
		return 0;
	}
	EVP_PKEY *k = EVP_EC_gen("P-256");
	if (!k) {
		snprintf(why, why_len, "cannot generate an EC P-256 key");
		ERR_clear_error();
		return -EIO;
	}
	x = make_cert(k, cfg);
	int r = x ? 0 : -EIO;
	if (!x)
		snprintf(why, why_len, "cannot build the self-signed certificate");
	/* Key first: a certificate is never left without its key. */
	if (r == 0 && (r = write_private(out->key, emit_key, k)) < 0)
		snprintf(why, why_len, "cannot write %s: %s", out->key, strerror(-r));
	if (r == 0 && (r = write_private(out->cert, emit_cert, x)) < 0)
		snprintf(why, why_len, "cannot write %s: %s", out->cert, strerror(-r));
	if (r == 0) {
		fingerprint_of(x, out->fingerprint, sizeof(out->fingerprint));
		out->generated = true;
	}
	ERR_clear_error();
	X509_free(x);
	EVP_PKEY_free(k);
	return r;
}

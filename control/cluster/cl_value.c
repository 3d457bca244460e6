/* cl_value.c - the cluster's key schema and authenticated values (see
 * cl_value.h for the format and the contract). Pure: no I/O, no logging. */
#include "cl_value.h"

#include <errno.h>
#include <inttypes.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool cl_dec_parse(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	if (n == 0 || n > 20 || (n > 1 && s[0] == '0'))
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10u)
			return false;
		v = v * 10u + d;
	}
	if (v > max)
		return false;
	*out = v;
	return true;
}

bool cl_name_ok(const char *s, size_t n)
{
	if (n == 0 || n >= FG_CLUSTER_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

static bool has_prefix(const char *s, size_t n, const char *p, size_t *pl)
{
	*pl = strlen(p);
	return n >= *pl && memcmp(s, p, *pl) == 0;
}

enum cl_key_kind cl_key_parse(const char *tail, size_t n, struct cl_key *out)
{
	memset(out, 0, sizeof(*out));
	size_t pl;
	uint64_t v;
	if (n == 5 && memcmp(tail, "epoch", 5) == 0) {
		out->kind = CL_KEY_EPOCH;
	} else if (has_prefix(tail, n, "lines/", &pl)) {
		if (cl_dec_parse(tail + pl, n - pl, FG_LINES - 1, &v)) {
			out->kind = CL_KEY_LINE;
			out->line = (unsigned)v;
		}
	} else {
		static const struct {
			const char *p;
			enum cl_key_kind k;
		} named[] = {{"nodes/", CL_KEY_NODE}, {"points/", CL_KEY_POINTS}, {"beats/", CL_KEY_BEAT}, {"down/", CL_KEY_DOWN}};
		for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
			if (!has_prefix(tail, n, named[i].p, &pl))
				continue;
			if (cl_name_ok(tail + pl, n - pl)) {
				out->kind = named[i].k;
				memcpy(out->node, tail + pl, n - pl);
				out->node[n - pl] = '\0';
			}
			break;
		}
	}
	return out->kind;
}

/* The next space- or newline-ended field of [*p, end): its bytes, and *p
 * past the terminator, which must be term. */
static bool field(const char **p, const char *end, char term, const char **f, size_t *fl)
{
	const char *s = *p;
	const char *e = memchr(s, term, (size_t)(end - s));
	if (!e)
		return false;
	/* no other separator inside a field */
	for (const char *q = s; q < e; q++)
		if (*q == ' ' || *q == '\n')
			return false;
	*f = s;
	*fl = (size_t)(e - s);
	*p = e + 1;
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int cl_env_parse(const char *val, size_t n, struct cl_env *out, const char **why)
{
	struct cl_env e;
	memset(&e, 0, sizeof(e));
	if (n > CL_VALUE_MAX) {
		*why = "too_long";
		return -EINVAL;
	}
	if (n < 4 || memcmp(val, "fg1 ", 4) != 0) {
		*why = "not_enveloped";
		return -EINVAL;
	}
	const char *p = val + 4, *end = val + n, *f;
	size_t fl;
	uint64_t lease, crev, ver, seq;
	*why = "bad_header";
	if (!field(&p, end, ' ', &f, &fl) || fl != 2 * CL_MAC_LEN)
		return -EINVAL;
	for (unsigned i = 0; i < CL_MAC_LEN; i++) {
		int hi = hexval(f[2 * i]), lo = hexval(f[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		e.mac[i] = (uint8_t)(hi << 4 | lo);
	}
	e.signed_from = p;
	if (!field(&p, end, ' ', &f, &fl) || !cl_name_ok(f, fl))
		return -EINVAL;
	memcpy(e.node, f, fl);
	e.node[fl] = '\0';
	if (!field(&p, end, ' ', &f, &fl) || !cl_dec_parse(f, fl, INT64_MAX, &lease) || lease == 0)
		return -EINVAL;
	if (!field(&p, end, ' ', &f, &fl) || !cl_dec_parse(f, fl, INT64_MAX, &crev))
		return -EINVAL;
	if (!field(&p, end, ' ', &f, &fl) || !cl_dec_parse(f, fl, INT64_MAX, &ver) || ver == 0)
		return -EINVAL;
	if ((ver == 1) != (crev == 0))
		return -EINVAL;
	if (!field(&p, end, '\n', &f, &fl) || !cl_dec_parse(f, fl, UINT64_MAX, &seq) || seq == 0)
		return -EINVAL;
	e.lease = (int64_t)lease;
	e.crev = (int64_t)crev;
	e.ver = (int64_t)ver;
	e.seq = seq;
	e.payload = p;
	e.payload_len = (size_t)(end - p);
	e.signed_len = (size_t)(end - e.signed_from);
	*out = e;
	return 0;
}

struct cl_mac_key {
	EVP_MAC *mac;
	EVP_MAC_CTX *base; /* initialised with the key; duplicated per value */
};

int cl_mac_key_new(struct cl_mac_key **out, const uint8_t *key, size_t key_len)
{
	if (key_len < CL_FLEET_KEY_MIN || key_len > CL_FLEET_KEY_MAX)
		return -EINVAL;
	struct cl_mac_key *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0), OSSL_PARAM_construct_end()};
	k->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	k->base = k->mac ? EVP_MAC_CTX_new(k->mac) : NULL;
	if (!k->base || !EVP_MAC_init(k->base, key, key_len, params)) {
		cl_mac_key_free(k);
		return -EIO;
	}
	*out = k;
	return 0;
}

void cl_mac_key_free(struct cl_mac_key *k)
{
	if (!k)
		return;
	EVP_MAC_CTX_free(k->base);
	EVP_MAC_free(k->mac);
	free(k);
}

static int mac_of(struct cl_mac_key *k, const char *ekey, const char *data, size_t n, uint8_t out[CL_MAC_LEN])
{
	EVP_MAC_CTX *c = EVP_MAC_CTX_dup(k->base);
	size_t ol = 0;
	bool ok = c && EVP_MAC_update(c, (const unsigned char *)"fg1\n", 4) &&
		  EVP_MAC_update(c, (const unsigned char *)ekey, strlen(ekey)) &&
		  EVP_MAC_update(c, (const unsigned char *)"\n", 1) && EVP_MAC_update(c, (const unsigned char *)data, n) &&
		  EVP_MAC_final(c, out, &ol, CL_MAC_LEN) && ol == CL_MAC_LEN;
	EVP_MAC_CTX_free(c);
	return ok ? 0 : -EIO;
}

bool cl_env_verify(struct cl_mac_key *k, const char *ekey, const struct cl_env *e)
{
	uint8_t m[CL_MAC_LEN];
	if (mac_of(k, ekey, e->signed_from, e->signed_len, m) < 0)
		return false;
	return CRYPTO_memcmp(m, e->mac, CL_MAC_LEN) == 0;
}

int cl_env_make(struct cl_mac_key *k, const char *ekey, const char *node, int64_t lease, int64_t crev, int64_t ver,
		uint64_t seq, const char *payload, size_t n, char *out, size_t cap)
{
	if (!cl_name_ok(node, strlen(node)) || lease <= 0 || crev < 0 || ver <= 0 || (ver == 1) != (crev == 0) || !seq)
		return -EINVAL;
	const size_t mac_at = 4, signed_at = mac_at + 2 * CL_MAC_LEN + 1;
	if (cap < signed_at + 1)
		return -ENOSPC;
	int h = snprintf(out + signed_at, cap - signed_at, "%s %" PRId64 " %" PRId64 " %" PRId64 " %" PRIu64 "\n", node,
			 lease, crev, ver, seq);
	if (h < 0 || (size_t)h + n + signed_at + 1 > cap || (size_t)h + n + signed_at > CL_VALUE_MAX)
		return -ENOSPC;
	memcpy(out + signed_at + h, payload, n);
	size_t total = signed_at + (size_t)h + n;
	out[total] = '\0';
	uint8_t m[CL_MAC_LEN];
	if (mac_of(k, ekey, out + signed_at, (size_t)h + n, m) < 0)
		return -EIO;
	memcpy(out, "fg1 ", 4);
	static const char hex[] = "0123456789abcdef";
	for (unsigned i = 0; i < CL_MAC_LEN; i++) {
		out[mac_at + 2 * i] = hex[m[i] >> 4];
		out[mac_at + 2 * i + 1] = hex[m[i] & 15];
	}
	out[signed_at - 1] = ' ';
	return (int)total;
}

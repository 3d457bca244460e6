/* cl_value.h - the cluster's key schema and its authenticated values
 * (docs/cluster.md "Keys" and "Authenticated values").
 *
 * Owns: parsing a key under the prefix into what it names (strictly: a
 * name outside the schema, "lines/03" or "lines/7" is foreign), canonical
 * decimal parsing, and the envelope every value fanogate writes carries:
 *
 *   fg1 <mac> <node> <lease> <crev> <ver> <seq>\n<payload>
 *
 * mac: 64 lowercase hex digits, HMAC-SHA256 with the fleet key over
 * "fg1\n" <etcd key> "\n" and every byte after the mac's trailing space
 * (the header's fields and the payload); node: the writer's name; lease:
 * the writer's etcd lease (decimal, > 0); crev and ver: the key's
 * create_revision and version once this write lands (crev 0 and ver 1:
 * this write creates the key), so a value is valid only where it was
 * written (a replay elsewhere or later shows another crev or ver); seq:
 * the writer's own counter, one up per value it writes. Every number is
 * canonical decimal (no sign, no leading zero, no space).
 *
 * Pure: no I/O, no logging; OpenSSL's HMAC only. Any thread; a cl_mac_key
 * is used by one thread at a time. */
#ifndef CL_VALUE_H
#define CL_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/common.h"
#include "fg/config.h"
#include "fg/fano.h"

#define CL_MAC_LEN 32u
#define CL_FLEET_KEY_MIN 32u   /* bytes of fleet key at least */
#define CL_FLEET_KEY_MAX 1024u
#define CL_VALUE_MAX 2048u     /* an envelope longer than this is not one of ours */
#define CL_ENV_HDR_MAX 200u    /* "fg1 " + mac + the header's fields, newline included */

/* ---- keys ------------------------------------------------------------- */

enum cl_key_kind {
	CL_KEY_FOREIGN, /* not fanogate's schema: ignored and counted */
	CL_KEY_EPOCH,   /* epoch */
	CL_KEY_LINE,    /* lines/<0..6> */
	CL_KEY_NODE,    /* nodes/<name> */
	CL_KEY_POINTS,  /* points/<name> */
	CL_KEY_BEAT,    /* beats/<name> */
	CL_KEY_DOWN,    /* down/<name>: the peers whose beats that node proved stopped */
};
struct cl_key {
	enum cl_key_kind kind;
	unsigned line;                  /* CL_KEY_LINE */
	char node[FG_CLUSTER_NAME_MAX]; /* NODE, POINTS, BEAT, DOWN */
};
/* Classify tail (the key without the prefix, n bytes, not NUL-terminated
 * necessarily) into *out; returns out->kind. Never fails: anything that
 * is not exactly a schema key is CL_KEY_FOREIGN. */
enum cl_key_kind cl_key_parse(const char *tail, size_t n, struct cl_key *out);

/* A node name: 1..FG_CLUSTER_NAME_MAX-1 bytes of [A-Za-z0-9._-]. */
bool cl_name_ok(const char *s, size_t n);

/* Canonical decimal in s[0..n): digits only, no leading zero (but "0"),
 * at most max. True with *out set, else false and *out untouched. */
bool cl_dec_parse(const char *s, size_t n, uint64_t max, uint64_t *out);

/* ---- the envelope ------------------------------------------------------- */

struct cl_env {
	char node[FG_CLUSTER_NAME_MAX];
	int64_t lease;           /* > 0 */
	int64_t crev, ver;       /* crev 0 with ver 1 (creates), else crev > 0, ver > 1 */
	uint64_t seq;            /* > 0 */
	const char *payload;     /* into the parsed value; not NUL-terminated */
	size_t payload_len;
	uint8_t mac[CL_MAC_LEN];
	const char *signed_from; /* the bytes the mac covers after the key: into the value */
	size_t signed_len;
};

/* Parse an envelope (val, n bytes) strictly into *out (pointers into
 * val). 0, or -EINVAL (*why: a stable reason: "not_enveloped",
 * "bad_header", "too_long"). */
FG_MUST_CHECK int cl_env_parse(const char *val, size_t n, struct cl_env *out, const char **why);

struct cl_mac_key; /* heap-owned: cl_mac_key_new / cl_mac_key_free */

/* A fleet key of key_len bytes (CL_FLEET_KEY_MIN..MAX) ready for HMAC.
 * 0 or -EINVAL (length) / -ENOMEM / -EIO (OpenSSL; its error queue is left
 * for the caller to drain). */
FG_MUST_CHECK int cl_mac_key_new(struct cl_mac_key **out, const uint8_t *key, size_t key_len);
void cl_mac_key_free(struct cl_mac_key *k);

/* Is e's mac right for etcd key ekey (NUL-terminated) with k? */
bool cl_env_verify(struct cl_mac_key *k, const char *ekey, const struct cl_env *e);

/* Write the envelope of payload (n bytes) for ekey into out (cap bytes,
 * NUL-terminated). Returns its length, or -ENOSPC / -EINVAL (a field out
 * of range) / -EIO (OpenSSL). */
FG_MUST_CHECK int cl_env_make(struct cl_mac_key *k, const char *ekey, const char *node, int64_t lease, int64_t crev,
			      int64_t ver, uint64_t seq, const char *payload, size_t n, char *out, size_t cap);

/* Does a value at etcd's (create_revision, version) = (kv_crev, kv_ver)
 * carry the binding e was made for? (ver 1: kv_ver 1; else both equal.) */
static inline bool cl_env_bound(const struct cl_env *e, int64_t kv_crev, int64_t kv_ver)
{
	return e->ver == kv_ver && (e->ver == 1 || e->crev == kv_crev);
}

#endif

/* fuzz_cluster_value.c - libFuzzer target for the cluster's key schema and
 * value envelope (control/cluster/cl_value.c). The input's first byte
 * splits it: the next that many bytes are a key under the prefix, the rest
 * a value as etcd hands it back.
 *
 * Properties checked beyond "no crash, no leak, no out-of-bounds read":
 *  1. a key is foreign or one of the schema's, and a schema key written
 *     back from what was parsed is the same bytes (the parse is strict:
 *     one spelling per key);
 *  2. an envelope that parses has its payload and signed bytes inside the
 *     input, crev 0 exactly when ver is 1, a lease and a seq above 0, and
 *     every number written back canonically is the input's own bytes;
 *  3. a value made by cl_env_make from what was parsed (same node, lease,
 *     crev, ver, seq, payload) parses back to the same fields and verifies,
 *     and the input itself verifies only if it is byte for byte that value
 *     (a MAC over anything else is a forgery the fuzzer cannot make). */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cl_value.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char fleet_key[] = "fuzz-fleet-key-0123456789abcdef0123456789";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cl_mac_key *k;
	if (!k && cl_mac_key_new(&k, (const uint8_t *)fleet_key, strlen(fleet_key)) != 0)
		return 0;
	if (size < 1)
		return 0;
	size_t kl = data[0] < size - 1 ? data[0] : size - 1;
	const char *key = (const char *)data + 1, *val = key + kl;
	size_t vl = size - 1 - kl;

	struct cl_key ck;
	enum cl_key_kind kind = cl_key_parse(key, kl, &ck);
	char back[128] = "";
	switch (kind) {
	case CL_KEY_FOREIGN: break;
	case CL_KEY_EPOCH: snprintf(back, sizeof(back), "epoch"); break;
	case CL_KEY_LINE: snprintf(back, sizeof(back), "lines/%u", ck.line); break;
	case CL_KEY_NODE: snprintf(back, sizeof(back), "nodes/%s", ck.node); break;
	case CL_KEY_POINTS: snprintf(back, sizeof(back), "points/%s", ck.node); break;
	case CL_KEY_BEAT: snprintf(back, sizeof(back), "beats/%s", ck.node); break;
	case CL_KEY_DOWN: snprintf(back, sizeof(back), "down/%s", ck.node); break;
	}
	if (kind != CL_KEY_FOREIGN)
		FUZZ_CHECK(strlen(back) == kl && memcmp(back, key, kl) == 0);

	struct cl_env e;
	const char *why;
	if (cl_env_parse(val, vl, &e, &why) != 0)
		return 0;
	FUZZ_CHECK(e.payload >= val && e.payload + e.payload_len == val + vl);
	FUZZ_CHECK(e.signed_from > val && e.signed_from + e.signed_len == val + vl);
	FUZZ_CHECK((e.ver == 1) == (e.crev == 0) && e.lease > 0 && e.seq > 0 && e.ver > 0);
	char hdr[CL_ENV_HDR_MAX];
	int hl = snprintf(hdr, sizeof(hdr), "%s %" PRId64 " %" PRId64 " %" PRId64 " %" PRIu64 "\n", e.node, e.lease, e.crev,
			  e.ver, e.seq);
	FUZZ_CHECK(hl > 0 && (size_t)hl <= e.signed_len && memcmp(hdr, e.signed_from, (size_t)hl) == 0);

	char ekey[160];
	snprintf(ekey, sizeof(ekey), "/fanogate/%.*s", (int)(kl < 100 ? kl : 100), key);
	char made[CL_VALUE_MAX + 1];
	int n = cl_env_make(k, ekey, e.node, e.lease, e.crev, e.ver, e.seq, e.payload, e.payload_len, made, sizeof(made));
	if (n < 0)
		return 0; /* longer than a value we write */
	struct cl_env m;
	FUZZ_CHECK(cl_env_parse(made, (size_t)n, &m, &why) == 0);
	FUZZ_CHECK(strcmp(m.node, e.node) == 0 && m.lease == e.lease && m.crev == e.crev && m.ver == e.ver &&
		   m.seq == e.seq && m.payload_len == e.payload_len && memcmp(m.payload, e.payload, e.payload_len) == 0);
	FUZZ_CHECK(cl_env_verify(k, ekey, &m));
	if (cl_env_verify(k, ekey, &e))
		FUZZ_CHECK((size_t)n == vl && memcmp(made, val, vl) == 0);
	return 0;
}

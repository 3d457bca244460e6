/* fuzz_audit_rec.c - libFuzzer target for the audit record parser
 * (core/audit_rec.c): fg_audit_decode and fg_audit_verify on arbitrary
 * bytes. Properties: no crash; a decoded record re-encodes to exactly the
 * same bytes (one encoding per record); verify's good prefix is a whole
 * number of records and equals the input when it reports no error.
 * Build: clang-14 -fsanitize=fuzzer,address,undefined -Iinclude
 *        tests/audit/fuzz_audit_rec.c core/audit_rec.c -lxxhash -lcrypto */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg/audit.h"

#define CHECK(c)                                                                          \
	do {                                                                              \
		if (!(c)) {                                                               \
			fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                          \
		}                                                                         \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fg_audit_rec r;
	ssize_t n = fg_audit_decode(data, size, &r);
	if (n > 0) {
		CHECK((size_t)n <= size && (size_t)n == r.len);
		struct fg_audit_chain ch = { .next_seq = r.seq };
		memcpy(ch.head, r.prev, FG_AUDIT_HASH_LEN);
		uint8_t again[FG_AUDIT_REC_MAX];
		ssize_t m = fg_audit_encode(&ch, r.type, r.time_ns, &r.p, again, sizeof(again));
		CHECK(m == n);
		CHECK(memcmp(again, data, (size_t)n) == 0);
		CHECK(memcmp(ch.head, r.hash, FG_AUDIT_HASH_LEN) == 0);
	} else {
		CHECK(n < 0 && -n < FG_AR__COUNT);
	}
	struct fg_audit_scan s;
	int rc = fg_audit_verify(data, size, NULL, &s);
	CHECK(s.good_bytes <= size);
	if (rc == 0)
		CHECK(s.good_bytes == size);
	else
		CHECK(rc == -s.reason && s.bad_offset == s.good_bytes);
	(void)fg_audit_tail_is_torn(&s, size);
	return 0;
}

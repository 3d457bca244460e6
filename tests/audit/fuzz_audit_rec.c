/* fuzz_audit_rec.c - libFuzzer target for the audit record parser
 * (core/audit_rec.c) and the line fold built on it (core/audit_lines.c):
 * fg_audit_decode and fg_audit_verify on arbitrary bytes, every accepted
 * record folded, the start-up decision taken on the fold. Properties: no
 * crash; a decoded record re-encodes, at its version, to exactly the same
 * bytes (one encoding per record and version); verify's good prefix is a
 * whole number of records and equals the input when it reports no error;
 * the decision gives base states only, never ACTIVE on a damaged log, and
 * the config's state on a reset.
 * Build: clang-14 -fsanitize=fuzzer,address,undefined -Iinclude
 *        tests/audit/fuzz_audit_rec.c core/audit_rec.c core/audit_lines.c
 *        core/lead.c core/line.c core/fano.c core/text.c -lxxhash -lcrypto */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fg/audit.h"
#include "fg/audit_lines.h"
#include "fg/line.h"

#define CHECK(c)                                                                          \
	do {                                                                              \
		if (!(c)) {                                                               \
			fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #c); \
			abort();                                                          \
		}                                                                         \
	} while (0)

static void fold_visit(void *arg, const struct fg_audit_rec *r)
{
	fg_audit_fold_rec(arg, r);
}

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
		CHECK(r.version >= 1 && r.version <= fg_audit_type_version(r.type));
		ssize_t m = fg_audit_encode_version(&ch, r.type, r.version, r.time_ns, &r.p, again, sizeof(again));
		CHECK(m == n);
		CHECK(memcmp(again, data, (size_t)n) == 0);
		CHECK(memcmp(ch.head, r.hash, FG_AUDIT_HASH_LEN) == 0);
	} else {
		CHECK(n < 0 && -n < FG_AR__COUNT);
	}
	struct fg_audit_scan s;
	struct fg_audit_fold f;
	fg_audit_fold_init(&f);
	int rc = fg_audit_verify_visit(data, size, NULL, &s, fold_visit, &f);
	CHECK(f.records == s.records);
	struct fg_audit_start_in in = { .fold = &f, .cfg_auto = size & 1 };
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++)
		in.cfg_base[i] = (uint8_t)((size + i) % 3);
	struct fg_audit_line_entry e[FG_AUDIT_LINES];
	for (unsigned mode = 0; mode < 3; mode++) {
		in.reset = mode == 1;
		in.damaged = mode == 2;
		fg_audit_start_decide(&in, e);
		for (unsigned i = 0; i < FG_AUDIT_LINES; i++) {
			CHECK(e[i].base <= FG_LINE_ACTIVE && e[i].source < FG_LSRC__COUNT && e[i].auto_promote <= 1);
			CHECK(memchr(e[i].why, 0, sizeof(e[i].why)) != NULL);
			if (in.damaged)
				CHECK(e[i].base != FG_LINE_ACTIVE && e[i].source == FG_LSRC_DAMAGED);
			else if (in.reset)
				CHECK(e[i].base == in.cfg_base[i] && e[i].source == FG_LSRC_RESET);
		}
	}
	CHECK(s.good_bytes <= size);
	if (rc == 0)
		CHECK(s.good_bytes == size);
	else
		CHECK(rc == -s.reason && s.bad_offset == s.good_bytes);
	(void)fg_audit_tail_is_torn(&s, size);
	return 0;
}

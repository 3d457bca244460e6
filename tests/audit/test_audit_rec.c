/* test_audit_rec.c - the audit record codec, chain and verification
 * (core/audit_rec.c): round trips of every type, every prefix, malformed
 * and over-limit records, tampering (flip, drop, reorder, truncate, forged
 * checksum), verification across files, the torn-tail decision, and a
 * simulated disk with torn and reordered sector writes of the unsynced tail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <xxhash.h>

#include "fg/audit.h"
#include "fg/common.h"
#include "fg/wire.h"

#include "../lib/fg_test_rng.h" /* fg_test_xorshift64 */

/* The payload of every record type but VERDICT (whose fields vary with
 * the record's index, below): fixed values, every field set. */
static const union fg_audit_payload fixed_payload[FG_AREC__END] = {
	[FG_AREC_GENESIS] = {.genesis = {.format = FG_AUDIT_VERSION, .who = "test"}},
	[FG_AREC_LINE] = {.line = {.line = 3, .from = 1, .to = 2, .event = 4, .uid = 1000, .pid = 4242,
				   .origin = "operator socket", .why = "window clean"}},
	[FG_AREC_EPOCH] = {.epoch = {.from = 1, .to = 2, .uid = 0, .pid = -1, .why = "new weights"}},
	[FG_AREC_CONFLICT] = {.conflict = {.token_seq = 5, .dst_layer = 6, .line = 6, .epoch = 3}},
	[FG_AREC_PEER_AUTH] = {.peer_auth = {.peer = "10.0.0.1:5555", .reason = "bad_token"}},
	[FG_AREC_RECOVERY] = {.recovery = {.cut_offset = 4096, .cut_bytes = 77, .last_seq = 41,
					   .reason = FG_AR_CHECKSUM}},
	[FG_AREC_ROTATION] = {.rotation = {.prev_file_records = 100, .prev_file_bytes = 12800,
					   .prev_file_index = 2}},
	[FG_AREC_START] = {.start = {.uid = 1000, .pid = 77, .flags = FG_ASTART_RESET | FG_ASTART_CLUSTER,
				     .who = "fanogate 0.1.0", .config = "/etc/fanogate/fanogate.ini",
				     .line = {[0] = {.base = 0, .auto_promote = 0, .source = FG_LSRC_CONFIG,
						     .event = FG_AUDIT_UNKNOWN, .seq = FG_AUDIT_NO_SEQ, .why = "[lines]"},
					      [1] = {.base = 1, .auto_promote = 1, .source = FG_LSRC_LOG, .event = 5,
						     .seq = 42, .why = "demoted: fingerprint divergence"},
					      [2] = {.base = 2, .source = FG_LSRC_RESET, .event = 3, .seq = 7},
					      [3] = {.base = 1, .source = FG_LSRC_DAMAGED, .why = "log damaged"},
					      [4] = {.base = 1, .source = FG_LSRC_CUT, .event = 9, .seq = 1}}}},
	[FG_AREC_LINES] = {.lines = {.line = {[5] = {.base = 2, .auto_promote = 1, .source = FG_LSRC_LOG,
						    .event = 4, .seq = 99, .why = "promoted"}}}},
	[FG_AREC_RELOAD] = {.reload = {.result = FG_RELOAD_REFUSED, .uid = 0, .pid = 12, .origin = "SIGHUP",
				       .error = "needs_restart", .what = "changed keys need a restart: [model] hidden"}},
};

/* The payload of record i of type type. */
static void payload_of(unsigned type, unsigned i, union fg_audit_payload *p)
{
	assert_true(type > 0 && type < FG_AREC__END);
	*p = fixed_payload[type];
	if (type != FG_AREC_VERDICT)
		return;
	p->verdict.token_seq = 1000 + i;
	p->verdict.dst_layer = (uint16_t)(i % 28);
	p->verdict.lines = 0x2A;
	p->verdict.kind = i % 3 == 0 ? FG_VERDICT_DIVERGENT : FG_VERDICT_CLEAN;
	p->verdict.canon_kind = 0;
	p->verdict.has_diff = 1;
	p->verdict.epoch = 7;
	p->verdict.fp_jump = 0x1122334455667788ull + i;
	p->verdict.fp_canon = 0x8877665544332211ull;
	p->verdict.diff.n_elems = 1536;
	p->verdict.diff.count = i % 3 == 0 ? 3 : 0;
	p->verdict.diff.nan_count = i % 3 == 0 ? 1 : 0;
	p->verdict.diff.first_index = i % 3 == 0 ? 17 : UINT32_MAX;
	p->verdict.diff.max_abs = 1.5e-7;
	p->verdict.diff.max_ulp = 4;
}

/* A log of n records: GENESIS then verdicts; offsets of each record. */
struct log {
	uint8_t *buf;
	size_t len;
	size_t off[20000];
	size_t n;
	struct fg_audit_chain chain;
};

static struct log *make_log(size_t n)
{
	struct log *l = calloc(1, sizeof(*l));
	assert_non_null(l);
	l->buf = malloc(n * FG_AUDIT_REC_MAX);
	assert_non_null(l->buf);
	fg_audit_chain_init(&l->chain);
	for (size_t i = 0; i < n; i++) {
		union fg_audit_payload p;
		unsigned type = i == 0 ? FG_AREC_GENESIS : FG_AREC_VERDICT;
		payload_of(type, (unsigned)i, &p);
		ssize_t k = fg_audit_encode(&l->chain, type, 1700000000000000000ull + i, &p, l->buf + l->len,
					    FG_AUDIT_REC_MAX);
		assert_true(k > 0);
		l->off[i] = l->len;
		l->len += (size_t)k;
	}
	l->off[n] = l->len;
	l->n = n;
	return l;
}

static void free_log(struct log *l)
{
	free(l->buf);
	free(l);
}

static void test_round_trip_every_type(void **state)
{
	(void)state;
	struct fg_audit_chain ch;
	fg_audit_chain_init(&ch);
	uint8_t buf[16 * FG_AUDIT_REC_MAX];
	size_t len = 0;
	for (unsigned t = FG_AREC_GENESIS; t < FG_AREC__END; t++) {
		if (t == FG_AREC_ROTATION)
			continue; /* only first in a file; tested below */
		union fg_audit_payload p, q;
		payload_of(t, 3, &p);
		uint8_t prev[FG_AUDIT_HASH_LEN];
		memcpy(prev, ch.head, sizeof(prev));
		uint64_t seq = ch.next_seq;
		ssize_t k = fg_audit_encode(&ch, t, 123456789, &p, buf + len, sizeof(buf) - len);
		assert_true(k > (ssize_t)(FG_AUDIT_HDR_LEN + FG_AUDIT_TRAILER_LEN));
		struct fg_audit_rec r;
		assert_int_equal(fg_audit_decode(buf + len, (size_t)k, &r), k);
		assert_int_equal(r.type, t);
		assert_int_equal(r.seq, seq);
		assert_int_equal(r.time_ns, 123456789);
		assert_memory_equal(r.prev, prev, FG_AUDIT_HASH_LEN);
		assert_memory_equal(r.hash, ch.head, FG_AUDIT_HASH_LEN);
		/* Re-encoding the decoded payload gives the same bytes. */
		q = r.p;
		struct fg_audit_chain c2 = { .next_seq = seq };
		memcpy(c2.head, prev, sizeof(prev));
		uint8_t again[FG_AUDIT_REC_MAX];
		assert_int_equal(fg_audit_encode(&c2, t, 123456789, &q, again, sizeof(again)), k);
		assert_memory_equal(again, buf + len, (size_t)k);
		len += (size_t)k;
	}
	struct fg_audit_scan s;
	assert_int_equal(fg_audit_verify(buf, len, NULL, &s), 0);
	assert_int_equal(s.records, FG_AREC__END - 2);
	assert_true(s.anchored);
	assert_int_equal(s.good_bytes, len);
	assert_memory_equal(s.chain.head, ch.head, FG_AUDIT_HASH_LEN);
	assert_string_equal(fg_audit_type_name(FG_AREC_VERDICT), "verdict");
	assert_string_equal(fg_audit_type_name(99), "unknown");
	assert_string_equal(fg_audit_reason_name(-FG_AR_CHAIN), "broken_chain");
	assert_string_equal(fg_audit_reason_name(1000), "unknown");
}

static void test_strings_truncated_and_checked(void **state)
{
	(void)state;
	struct fg_audit_chain ch;
	fg_audit_chain_init(&ch);
	union fg_audit_payload p;
	memset(&p, 0, sizeof(p));
	/* Not NUL-terminated within the field: the encoder writes size - 1 bytes. */
	memset(p.peer_auth.peer, 'x', sizeof(p.peer_auth.peer));
	memset(p.peer_auth.reason, 'y', sizeof(p.peer_auth.reason));
	uint8_t buf[FG_AUDIT_REC_MAX];
	ssize_t k = fg_audit_encode(&ch, FG_AREC_PEER_AUTH, 0, &p, buf, sizeof(buf));
	assert_true(k > 0);
	struct fg_audit_rec r;
	assert_int_equal(fg_audit_decode(buf, (size_t)k, &r), k);
	assert_int_equal(strlen(r.p.peer_auth.peer), FG_AUDIT_PEER_MAX - 1);
	assert_int_equal(strlen(r.p.peer_auth.reason), FG_AUDIT_WHY_MAX - 1);

	/* A string length byte >= the field, with a recomputed checksum: bad_payload. */
	buf[FG_AUDIT_HDR_LEN] = (uint8_t)FG_AUDIT_PEER_MAX;
	fg_put_le64(buf + k - 8, XXH3_64bits(buf, (size_t)k - 8));
	assert_int_equal(fg_audit_decode(buf, (size_t)k, &r), -FG_AR_PAYLOAD);
}

static void refix(uint8_t *rec)
{
	uint32_t n = fg_le32(rec);
	fg_put_le64(rec + n - 8, XXH3_64bits(rec, n - 8));
}

/* The records added with START: every prefix, every field out of range,
 * strings over their field, the largest record still under the limit,
 * LINE version 1 (logs written before version 2) read and re-written. */
static void test_start_lines_reload_records(void **state)
{
	(void)state;
	static const unsigned types[] = { FG_AREC_START, FG_AREC_LINES, FG_AREC_RELOAD, FG_AREC_LINE };
	for (size_t t = 0; t < FG_ARRAY_LEN(types); t++) {
		struct fg_audit_chain ch = { .next_seq = 5 };
		uint8_t b[FG_AUDIT_REC_MAX];
		union fg_audit_payload p = fixed_payload[types[t]];
		ssize_t k = fg_audit_encode(&ch, types[t], 1, &p, b, sizeof(b));
		assert_true(k > 0);
		struct fg_audit_rec r;
		assert_int_equal(fg_audit_decode(b, (size_t)k, &r), k);
		assert_int_equal(r.version, fg_audit_type_version(types[t]));
		for (ssize_t n = 0; n < k; n++)
			assert_int_equal(fg_audit_decode(b, (size_t)n, &r), -FG_AR_TRUNCATED);
		/* a byte more inside the record (len + 1, checksum fixed): bad_payload */
		uint8_t c[FG_AUDIT_REC_MAX + 1];
		memcpy(c, b, (size_t)k - 8);
		c[k - 8] = 0;
		fg_put_le32(c, (uint32_t)k + 1);
		refix(c);
		assert_int_equal(fg_audit_decode(c, (size_t)k + 1, &r), -FG_AR_PAYLOAD);
		/* a version above the type's */
		memcpy(c, b, (size_t)k);
		fg_put_le16(c + 6, (uint16_t)(fg_audit_type_version(types[t]) + 1));
		refix(c);
		assert_int_equal(fg_audit_decode(c, (size_t)k, &r), -FG_AR_VERSION);
		fg_put_le16(c + 6, 0);
		refix(c);
		assert_int_equal(fg_audit_decode(c, (size_t)k, &r), -FG_AR_VERSION);
	}
	assert_int_equal(fg_audit_type_version(FG_AREC_LINE), 2);
	assert_int_equal(fg_audit_type_version(FG_AREC_START), 1);
	assert_int_equal(fg_audit_type_version(FG_AREC__END), 0);
	assert_string_equal(fg_audit_type_name(FG_AREC_START), "start");
	assert_string_equal(fg_audit_type_name(FG_AREC_LINES), "lines");
	assert_string_equal(fg_audit_type_name(FG_AREC_RELOAD), "reload");
	assert_string_equal(fg_audit_line_source_name(FG_LSRC_CONFIG), "config (no line history)");
	assert_string_equal(fg_audit_line_source_name(FG_LSRC_DAMAGED), "log damaged: shadow");
	assert_string_equal(fg_audit_line_source_name(FG_LSRC__COUNT), "unknown");
	assert_string_equal(fg_audit_reload_result_name(FG_RELOAD_UNCHANGED), "unchanged");

	/* every field out of range is bad_payload (the encoder writes what it is given) */
	struct fg_audit_chain ch;
	uint8_t b[FG_AUDIT_REC_MAX];
	struct fg_audit_rec r;
	union fg_audit_payload p;
#define BAD(type, mutate)                                                                 \
	do {                                                                              \
		p = fixed_payload[type];                                                  \
		mutate;                                                                   \
		fg_audit_chain_init(&ch);                                                 \
		ssize_t k_ = fg_audit_encode(&ch, type, 1, &p, b, sizeof(b));             \
		assert_true(k_ > 0);                                                      \
		assert_int_equal(fg_audit_decode(b, (size_t)k_, &r), -FG_AR_PAYLOAD);     \
	} while (0)
	BAD(FG_AREC_START, p.start.line[6].base = 3);           /* DEGRADED is no base state */
	BAD(FG_AREC_START, p.start.line[0].auto_promote = 2);
	BAD(FG_AREC_START, p.start.line[2].source = FG_LSRC__COUNT);
	BAD(FG_AREC_START, p.start.line[3].event = 0xFE);
	BAD(FG_AREC_START, p.start.flags = 0x80);
	BAD(FG_AREC_LINES, p.lines.line[4].base = 0xFF);
	BAD(FG_AREC_RELOAD, p.reload.result = 3);
	BAD(FG_AREC_LINE, p.line.base_to = 3);
	BAD(FG_AREC_LINE, p.line.base_from = 7);
	BAD(FG_AREC_LINE, p.line.auto_promote = 2);
	BAD(FG_AREC_LINE, p.line.event = 0xFF); /* version 2 names a known event */
#undef BAD

	/* a string length byte at or over its field: the first entry's why of a LINES record */
	p = fixed_payload[FG_AREC_LINES];
	fg_audit_chain_init(&ch);
	ssize_t k = fg_audit_encode(&ch, FG_AREC_LINES, 1, &p, b, sizeof(b));
	assert_true(k > 0);
	b[FG_AUDIT_HDR_LEN + 12] = FG_AUDIT_ENTRY_WHY_MAX;
	refix(b);
	assert_int_equal(fg_audit_decode(b, (size_t)k, &r), -FG_AR_PAYLOAD);

	/* the largest START (every string at its limit) still fits a record */
	memset(&p, 0, sizeof(p));
	memset(p.start.who, 'w', sizeof(p.start.who) - 1);
	memset(p.start.config, 'c', sizeof(p.start.config) - 1);
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++)
		memset(p.start.line[i].why, 'y', sizeof(p.start.line[i].why) - 1);
	fg_audit_chain_init(&ch);
	k = fg_audit_encode(&ch, FG_AREC_START, 1, &p, b, sizeof(b));
	assert_true(k > 0 && k <= (ssize_t)FG_AUDIT_REC_MAX);
	assert_int_equal(fg_audit_decode(b, (size_t)k, &r), k);
	assert_int_equal(strlen(r.p.start.config), FG_AUDIT_CONFIG_MAX - 1);
	memset(&p, 0, sizeof(p));
	memset(p.reload.origin, 'o', sizeof(p.reload.origin) - 1);
	memset(p.reload.error, 'e', sizeof(p.reload.error) - 1);
	memset(p.reload.what, 'x', sizeof(p.reload.what) - 1);
	k = fg_audit_encode(&ch, FG_AREC_RELOAD, 1, &p, b, sizeof(b));
	assert_true(k > 0 && k <= (ssize_t)FG_AUDIT_REC_MAX);
	assert_int_equal(fg_audit_decode(b, (size_t)k, &r), k);
	assert_int_equal(strlen(r.p.reload.what), FG_AUDIT_TEXT_MAX - 1);
	/* a buffer one byte short: no_space, the chain unchanged */
	struct fg_audit_chain before = ch;
	assert_int_equal(fg_audit_encode(&ch, FG_AREC_RELOAD, 1, &p, b, (size_t)k - 1), -FG_AR_NOSPACE);
	assert_memory_equal(&before, &ch, sizeof(ch));

	/* LINE version 1: no base states, no flag; read as unknown, written back byte for byte */
	p = fixed_payload[FG_AREC_LINE];
	fg_audit_chain_init(&ch);
	k = fg_audit_encode_version(&ch, FG_AREC_LINE, 1, 9, &p, b, sizeof(b));
	assert_true(k > 0);
	assert_int_equal(fg_audit_decode(b, (size_t)k, &r), k);
	assert_int_equal(r.version, 1);
	assert_int_equal(r.p.line.base_from, FG_AUDIT_UNKNOWN);
	assert_int_equal(r.p.line.base_to, FG_AUDIT_UNKNOWN);
	assert_int_equal(r.p.line.auto_promote, FG_AUDIT_UNKNOWN);
	assert_string_equal(r.p.line.why, "window clean");
	uint8_t again[FG_AUDIT_REC_MAX];
	fg_audit_chain_init(&ch);
	assert_int_equal(fg_audit_encode_version(&ch, FG_AREC_LINE, r.version, 9, &r.p, again, sizeof(again)), k);
	assert_memory_equal(again, b, (size_t)k);
	/* version 1 with the reload's old event 0xFF still reads */
	p.line.event = 0xFF;
	fg_audit_chain_init(&ch);
	k = fg_audit_encode_version(&ch, FG_AREC_LINE, 1, 9, &p, b, sizeof(b));
	assert_int_equal(fg_audit_decode(b, (size_t)k, &r), k);
	assert_int_equal(fg_audit_encode_version(&ch, FG_AREC_LINE, 3, 9, &p, b, sizeof(b)), -FG_AR_VERSION);
	assert_int_equal(fg_audit_encode_version(&ch, FG_AREC_START, 2, 9, &p, b, sizeof(b)), -FG_AR_VERSION);
}

/* VERDICT version 2: the lead over the canonical chain and the ingress.
 * Round trip of known and unknown leads, every prefix, a reader of version
 * 1 refusing it loudly (bad_version: what a reader without version 2 sees,
 * played by lowering the highest version it knows), version 1 read as
 * "no lead" and written back byte for byte, every field out of range. */
static void test_verdict_lead(void **state)
{
	(void)state;
	assert_int_equal(fg_audit_type_version(FG_AREC_VERDICT), 2);
	assert_string_equal(fg_audit_ingress_name(FG_AUDIT_INGRESS_UDP), "udp");
	assert_string_equal(fg_audit_ingress_name(FG_AUDIT_INGRESS_TLS), "tls");
	assert_string_equal(fg_audit_ingress_name(FG_AUDIT_UNKNOWN), "unknown");
	struct fg_audit_chain ch;
	uint8_t b[FG_AUDIT_REC_MAX], v1[FG_AUDIT_REC_MAX];
	struct fg_audit_rec r;
	union fg_audit_payload p;
	static const int64_t leads[][2] = {
		{2000000, 1990000},                  /* 2 ms ahead of the chain, delivered 10 us later */
		{-350000, -420000},                  /* the chain first */
		{0, 0},
		{INT64_MAX, INT64_MIN + 1},
		{123456789, FG_AUDIT_NO_LEAD},       /* resolved, never delivered */
		{FG_AUDIT_NO_LEAD, FG_AUDIT_NO_LEAD}, /* times unknown */
	};
	for (size_t i = 0; i < FG_ARRAY_LEN(leads); i++) {
		payload_of(FG_AREC_VERDICT, 1, &p);
		p.verdict.ingress = i % 2 ? FG_AUDIT_INGRESS_TLS : FG_AUDIT_INGRESS_UDP;
		p.verdict.lead_ns = leads[i][0];
		p.verdict.lead_deliver_ns = leads[i][1];
		fg_audit_chain_init(&ch);
		ssize_t k = fg_audit_encode(&ch, FG_AREC_VERDICT, 3, &p, b, sizeof(b));
		assert_true(k > 0);
		assert_int_equal(fg_audit_decode(b, (size_t)k, &r), k);
		assert_int_equal(r.version, 2);
		assert_int_equal(r.p.verdict.ingress, p.verdict.ingress);
		assert_true(r.p.verdict.lead_ns == leads[i][0]);
		assert_true(r.p.verdict.lead_deliver_ns == leads[i][1]);
		assert_int_equal(r.p.verdict.token_seq, p.verdict.token_seq);
		for (ssize_t n = 0; n < k; n++)
			assert_int_equal(fg_audit_decode(b, (size_t)n, &r), -FG_AR_TRUNCATED);
	}
	/* 17 bytes more than version 1: ingress u8, two i64 */
	payload_of(FG_AREC_VERDICT, 1, &p);
	fg_audit_chain_init(&ch);
	ssize_t k2 = fg_audit_encode(&ch, FG_AREC_VERDICT, 3, &p, b, sizeof(b));
	fg_audit_chain_init(&ch);
	ssize_t k1 = fg_audit_encode_version(&ch, FG_AREC_VERDICT, 1, 3, &p, v1, sizeof(v1));
	assert_int_equal(k2 - k1, 17);
	/* an old reader: it knows VERDICT up to version 1, so version 2 is one
	 * above its highest: the same check refuses it by name */
	uint8_t c[FG_AUDIT_REC_MAX];
	memcpy(c, b, (size_t)k2);
	fg_put_le16(c + 6, 3);
	refix(c);
	assert_int_equal(fg_audit_decode(c, (size_t)k2, &r), -FG_AR_VERSION);
	/* version 2's payload labelled version 1, and the other way round: bad_payload */
	fg_put_le16(c + 6, 1);
	refix(c);
	assert_int_equal(fg_audit_decode(c, (size_t)k2, &r), -FG_AR_PAYLOAD);
	memcpy(c, v1, (size_t)k1);
	fg_put_le16(c + 6, 2);
	refix(c);
	assert_int_equal(fg_audit_decode(c, (size_t)k1, &r), -FG_AR_PAYLOAD);
	/* version 1 reads as "no lead, ingress unknown", and is written back as it was */
	assert_int_equal(fg_audit_decode(v1, (size_t)k1, &r), k1);
	assert_int_equal(r.version, 1);
	assert_int_equal(r.p.verdict.ingress, FG_AUDIT_UNKNOWN);
	assert_true(r.p.verdict.lead_ns == FG_AUDIT_NO_LEAD && r.p.verdict.lead_deliver_ns == FG_AUDIT_NO_LEAD);
	uint8_t again[FG_AUDIT_REC_MAX];
	fg_audit_chain_init(&ch);
	assert_int_equal(fg_audit_encode_version(&ch, FG_AREC_VERDICT, r.version, 3, &r.p, again, sizeof(again)), k1);
	assert_memory_equal(again, v1, (size_t)k1);
	assert_int_equal(fg_audit_encode_version(&ch, FG_AREC_VERDICT, 3, 3, &p, b, sizeof(b)), -FG_AR_VERSION);

#define BAD(mutate)                                                                       \
	do {                                                                              \
		payload_of(FG_AREC_VERDICT, 1, &p);                                       \
		mutate;                                                                   \
		fg_audit_chain_init(&ch);                                                 \
		ssize_t k_ = fg_audit_encode(&ch, FG_AREC_VERDICT, 1, &p, b, sizeof(b));  \
		assert_true(k_ > 0);                                                      \
		assert_int_equal(fg_audit_decode(b, (size_t)k_, &r), -FG_AR_PAYLOAD);     \
	} while (0)
	BAD(p.verdict.ingress = 2);
	BAD(p.verdict.ingress = 0xFE);
	BAD((p.verdict.kind = FG_VERDICT_UNMATCHED, p.verdict.lead_ns = 5, p.verdict.lead_deliver_ns = 4));
	BAD((p.verdict.kind = FG_VERDICT_UNMATCHED, p.verdict.lead_ns = FG_AUDIT_NO_LEAD, p.verdict.lead_deliver_ns = 0));
	BAD((p.verdict.lead_ns = FG_AUDIT_NO_LEAD, p.verdict.lead_deliver_ns = 7)); /* delivered, never resolved */
	BAD((p.verdict.lead_ns = 1000, p.verdict.lead_deliver_ns = 1001));           /* delivered before resolved */
#undef BAD
	/* an unmatched verdict without a lead is fine */
	payload_of(FG_AREC_VERDICT, 1, &p);
	p.verdict.kind = FG_VERDICT_UNMATCHED;
	p.verdict.ingress = FG_AUDIT_UNKNOWN;
	p.verdict.lead_ns = p.verdict.lead_deliver_ns = FG_AUDIT_NO_LEAD;
	fg_audit_chain_init(&ch);
	ssize_t k = fg_audit_encode(&ch, FG_AREC_VERDICT, 1, &p, b, sizeof(b));
	assert_int_equal(fg_audit_decode(b, (size_t)k, &r), k);
}

static void test_malformed_records(void **state)
{
	(void)state;
	struct log *l = make_log(3);
	uint8_t *r1 = l->buf + l->off[1];
	size_t n1 = l->off[2] - l->off[1];
	uint8_t b[FG_AUDIT_REC_MAX * 2];
	struct fg_audit_rec r;

	/* Every prefix of a record is truncated (or zero-looking when it is all zero). */
	for (size_t k = 1; k < n1; k++)
		assert_int_equal(fg_audit_decode(r1, k, &r), -FG_AR_TRUNCATED);
	assert_int_equal(fg_audit_decode(r1, 0, &r), -FG_AR_TRUNCATED);

	memcpy(b, r1, n1);
	fg_put_le32(b, FG_AUDIT_HDR_LEN + FG_AUDIT_TRAILER_LEN - 1);
	assert_int_equal(fg_audit_decode(b, n1, &r), -FG_AR_LENGTH);
	fg_put_le32(b, FG_AUDIT_REC_MAX + 1);
	assert_int_equal(fg_audit_decode(b, sizeof(b), &r), -FG_AR_LENGTH);

	memcpy(b, r1, n1);
	b[6] = 3; /* version: one above VERDICT's */
	refix(b);
	assert_int_equal(fg_audit_decode(b, n1, &r), -FG_AR_VERSION);
	memcpy(b, r1, n1);
	fg_put_le16(b + 4, FG_AREC__END);
	refix(b);
	assert_int_equal(fg_audit_decode(b, n1, &r), -FG_AR_TYPE);
	memcpy(b, r1, n1);
	fg_put_le16(b + 4, FG_AREC_CONFLICT); /* verdict payload is too long for a conflict */
	fg_put_le16(b + 6, 1);                /* (conflict has version 1 only) */
	refix(b);
	assert_int_equal(fg_audit_decode(b, n1, &r), -FG_AR_PAYLOAD);
	memcpy(b, r1, n1);
	b[FG_AUDIT_HDR_LEN + 7] = 9; /* verdict kind out of range */
	refix(b);
	assert_int_equal(fg_audit_decode(b, n1, &r), -FG_AR_PAYLOAD);

	memset(b, 0, sizeof(b));
	assert_int_equal(fg_audit_decode(b, 100, &r), -FG_AR_ZERO);
	assert_int_equal(fg_audit_decode(b, 3, &r), -FG_AR_ZERO);

	/* The encoder refuses a too-small buffer and leaves the chain alone. */
	struct fg_audit_chain ch = l->chain;
	union fg_audit_payload p;
	payload_of(FG_AREC_VERDICT, 1, &p);
	assert_int_equal(fg_audit_encode(&ch, FG_AREC_VERDICT, 0, &p, b, 60), -FG_AR_NOSPACE);
	assert_memory_equal(&ch, &l->chain, sizeof(ch));
	assert_int_equal(fg_audit_encode(&ch, 0, 0, &p, b, sizeof(b)), -FG_AR_TYPE);
	free_log(l);
}

static void expect_bad(const uint8_t *buf, size_t len, int reason, size_t offset, uint64_t seq)
{
	struct fg_audit_scan s;
	assert_int_equal(fg_audit_verify(buf, len, NULL, &s), -reason);
	assert_int_equal(s.reason, reason);
	assert_int_equal(s.bad_offset, offset);
	assert_int_equal(s.bad_seq, seq);
	assert_int_equal(s.good_bytes, offset);
}

static void test_tampering(void **state)
{
	(void)state;
	struct log *l = make_log(10);
	uint8_t *b = malloc(l->len + FG_AUDIT_REC_MAX);
	assert_non_null(b);

	/* flip one payload byte of record 4 */
	memcpy(b, l->buf, l->len);
	b[l->off[4] + FG_AUDIT_HDR_LEN + 2] ^= 0x01;
	expect_bad(b, l->len, FG_AR_CHECKSUM, l->off[4], 4);

	/* the same with the XXH3 check forged: the chain catches it at record 5 */
	refix(b + l->off[4]);
	expect_bad(b, l->len, FG_AR_CHAIN, l->off[5], 5);

	/* drop record 4 */
	size_t n4 = l->off[5] - l->off[4];
	memcpy(b, l->buf, l->off[4]);
	memcpy(b + l->off[4], l->buf + l->off[5], l->len - l->off[5]);
	expect_bad(b, l->len - n4, FG_AR_SEQ, l->off[4], 5);

	/* drop record 4 and renumber everything after it: the chain still breaks */
	{
		size_t off = l->off[4];
		struct fg_audit_rec r;
		for (;;) {
			ssize_t k = fg_audit_decode(b + off, l->len - n4 - off, &r);
			if (k <= 0)
				break;
			fg_put_le64(b + off + 8, r.seq - 1);
			refix(b + off);
			off += (size_t)k;
		}
		expect_bad(b, l->len - n4, FG_AR_CHAIN, l->off[4], 4);
	}

	/* reorder records 4 and 5 */
	size_t n5 = l->off[6] - l->off[5];
	memcpy(b, l->buf, l->len);
	memcpy(b + l->off[4], l->buf + l->off[5], n5);
	memcpy(b + l->off[4] + n5, l->buf + l->off[4], n4);
	expect_bad(b, l->len, FG_AR_SEQ, l->off[4], 5);

	/* truncate inside record 7 */
	expect_bad(l->buf, l->off[7] + 10, FG_AR_TRUNCATED, l->off[7], 7);
	/* truncate exactly at a record boundary: that is a valid (shorter) log */
	struct fg_audit_scan s;
	assert_int_equal(fg_audit_verify(l->buf, l->off[7], NULL, &s), 0);
	assert_int_equal(s.records, 7);
	assert_int_equal(s.last_seq, 6);

	/* a log that does not start with GENESIS */
	expect_bad(l->buf + l->off[1], l->len - l->off[1], FG_AR_GENESIS, 0, 1);
	/* a second GENESIS in the middle */
	memcpy(b, l->buf, l->len);
	memcpy(b + l->len, l->buf, l->off[1]);
	expect_bad(b, l->len + l->off[1], FG_AR_GENESIS, l->len, 0);
	free(b);
	free_log(l);
}

static void test_every_prefix(void **state)
{
	(void)state;
	struct log *l = make_log(6);
	size_t rec = 0;
	for (size_t k = 0; k <= l->len; k++) {
		while (rec < l->n && l->off[rec + 1] <= k)
			rec++;
		struct fg_audit_scan s;
		int rc = fg_audit_verify(l->buf, k, NULL, &s);
		if (k == l->off[rec]) {
			assert_int_equal(rc, 0);
			assert_int_equal(s.records, rec);
		} else {
			assert_int_equal(rc, -FG_AR_TRUNCATED);
			assert_int_equal(s.bad_offset, l->off[rec]);
			assert_int_equal(s.records, rec);
			assert_true(fg_audit_tail_is_torn(&s, k));
		}
	}
	free_log(l);
}

static void test_across_files(void **state)
{
	(void)state;
	/* file 1: genesis + 5 verdicts; file 2: rotation + 4 verdicts */
	struct log *l = make_log(6);
	struct fg_audit_chain ch = l->chain;
	uint8_t f2[8 * FG_AUDIT_REC_MAX];
	size_t n2 = 0;
	for (unsigned i = 0; i < 5; i++) {
		union fg_audit_payload p;
		unsigned t = i == 0 ? FG_AREC_ROTATION : FG_AREC_VERDICT;
		payload_of(t, i, &p);
		ssize_t k = fg_audit_encode(&ch, t, 1, &p, f2 + n2, sizeof(f2) - n2);
		assert_true(k > 0);
		n2 += (size_t)k;
	}
	struct fg_audit_scan s1, s2;
	assert_int_equal(fg_audit_verify(l->buf, l->len, NULL, &s1), 0);
	assert_int_equal(fg_audit_verify(f2, n2, &s1.chain, &s2), 0);
	assert_true(s2.anchored);
	assert_int_equal(s2.first_seq, 6);
	assert_int_equal(s2.last_seq, 10);
	/* file 2 alone: accepted from its rotation record, but not anchored */
	assert_int_equal(fg_audit_verify(f2, n2, NULL, &s2), 0);
	assert_false(s2.anchored);
	/* file 2 after the wrong predecessor (file 1 minus its last record) */
	struct fg_audit_scan s0;
	assert_int_equal(fg_audit_verify(l->buf, l->off[5], NULL, &s0), 0);
	assert_int_equal(fg_audit_verify(f2, n2, &s0.chain, &s2), -FG_AR_SEQ);
	/* same seq but a different head: broken chain */
	s0.chain.next_seq = 6;
	assert_int_equal(fg_audit_verify(f2, n2, &s0.chain, &s2), -FG_AR_CHAIN);
	/* a continuation that does not start with ROTATION */
	assert_int_equal(fg_audit_verify(f2 + fg_le32(f2), n2 - fg_le32(f2), &s1.chain, &s2), -FG_AR_GENESIS);
	free_log(l);
}

static void test_torn_decision(void **state)
{
	(void)state;
	/* > FG_AUDIT_TAIL_MAX of records: damage far from the end is not torn. */
	struct log *l = make_log(12000);
	assert_true(l->len > FG_AUDIT_TAIL_MAX + 4096);
	uint8_t *b = malloc(l->len);
	memcpy(b, l->buf, l->len);
	b[l->off[10] + 20] ^= 0xFF;
	struct fg_audit_scan s;
	assert_int_equal(fg_audit_verify(b, l->len, NULL, &s), -FG_AR_CHECKSUM);
	assert_false(fg_audit_tail_is_torn(&s, l->len));
	/* the same damage near the end is a torn tail */
	memcpy(b, l->buf, l->len);
	b[l->off[l->n - 3] + 20] ^= 0xFF;
	assert_int_equal(fg_audit_verify(b, l->len, NULL, &s), -FG_AR_CHECKSUM);
	assert_true(fg_audit_tail_is_torn(&s, l->len));
	/* a broken chain near the end is never torn */
	memcpy(b, l->buf, l->len);
	b[l->off[l->n - 3] + 20] ^= 0xFF;
	refix(b + l->off[l->n - 3]);
	assert_int_equal(fg_audit_verify(b, l->len, NULL, &s), -FG_AR_CHAIN);
	assert_false(fg_audit_tail_is_torn(&s, l->len));
	free(b);
	free_log(l);
}

/* Simulated disk: 512-byte sectors. Batches are written and then synced;
 * a crash during the last batch persists a random subset of its sectors in
 * any order, possibly one torn sector (a prefix of the new bytes), and a
 * random file size between the synced length and the full length. Recovery
 * must keep every synced record, stop at a torn reason, and chain. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { return fg_test_xorshift64(&rng_state); }

static void test_simulated_disk(void **state)
{
	(void)state;
	struct log *l = make_log(400);
	const size_t sector = 512;
	uint8_t *disk = malloc(l->len + sector);
	unsigned cut_seen = 0, ok_seen = 0;
	for (unsigned trial = 0; trial < 3000; trial++) {
		/* Synced prefix: whole records [0, a); the crashing batch: [a, b). */
		size_t ra = 1 + rnd() % (l->n - 2);
		size_t rb = ra + 1 + rnd() % 40;
		if (rb > l->n)
			rb = l->n;
		size_t a = l->off[ra], b = l->off[rb];
		memset(disk, 0, l->len + sector);
		memcpy(disk, l->buf, a);
		size_t s0 = a / sector, s1 = (b + sector - 1) / sector;
		for (size_t sct = s0; sct < s1; sct++) {
			uint64_t r = rnd() % 8;
			if (r < 4)
				continue; /* not persisted (older sectors may be lost while later ones land) */
			size_t lo = sct * sector, hi = lo + sector < b ? lo + sector : b;
			if (r == 7)
				hi = lo + rnd() % (hi - lo + 1); /* torn inside the sector */
			memcpy(disk + lo, l->buf + lo, hi - lo);
		}
		/* The sector holding a's tail was durable already: its old bytes stay. */
		memcpy(disk, l->buf, a);
		size_t flen = a + rnd() % (b - a + 1);
		if (rnd() % 2)
			flen = b;
		struct fg_audit_scan s;
		int rc = fg_audit_verify(disk, flen, NULL, &s);
		assert_true(s.good_bytes >= a);
		assert_true(s.records >= ra);
		/* The kept prefix is exactly the original records. */
		assert_memory_equal(disk, l->buf, s.good_bytes);
		assert_int_equal(s.good_bytes, l->off[s.records]);
		if (rc == 0) {
			ok_seen++;
			continue;
		}
		cut_seen++;
		assert_true(fg_audit_reason_is_torn(s.reason));
		assert_true(fg_audit_tail_is_torn(&s, flen));
		/* Recovery (truncate at bad_offset) then verifies, and again: idempotent. */
		struct fg_audit_scan s2;
		assert_int_equal(fg_audit_verify(disk, s.bad_offset, NULL, &s2), 0);
		assert_int_equal(s2.records, s.records);
		assert_int_equal(fg_audit_verify(disk, s2.good_bytes, NULL, &s2), 0);
	}
	assert_true(cut_seen > 100);
	assert_true(ok_seen > 10);
	free(disk);
	free_log(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_every_type),
		cmocka_unit_test(test_strings_truncated_and_checked),
		cmocka_unit_test(test_verdict_lead),
		cmocka_unit_test(test_malformed_records),
		cmocka_unit_test(test_start_lines_reload_records),
		cmocka_unit_test(test_tampering),
		cmocka_unit_test(test_every_prefix),
		cmocka_unit_test(test_across_files),
		cmocka_unit_test(test_torn_decision),
		cmocka_unit_test(test_simulated_disk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

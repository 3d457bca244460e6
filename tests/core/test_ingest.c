/* test_ingest.c - core/ingest.c: frame -> slot outcome -> seed status.
 *
 * Vectors S01..S07 and C01/C02 from tests/data/vectors.txt (FG_TEST_DATA),
 * Pair X through the frame path with line states from a real fg_lines
 * table (fg_linefacts_pack), disabled lines, duplicates, conflicts, late
 * answers and the dispatcher's skip rule (wire.md section 5). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <xxhash.h>

#include "fg/ingest.h"
#include "fg/line.h"
#include "fg/slot.h"
#include "fg/wire.h"

#include "../lib/fg_test_status.h"  /* fg_test_status_equal, fg_test_status_draw */
#include "../lib/fg_test_vectors.h" /* fg_test_vector_bytes */

/* A table for the vectors: hidden 4, 32 layers, layer 1 expects line 1
 * only (C01's rule), every other layer Pair X. */
struct fixture {
	struct fg_slots s;
	void *mem;
	struct fg_bands bands;
	struct fg_seed_limits lim;
	struct fg_lines lines;
	struct fg_ingest_ctx ctx;
};

static void fixture_init(struct fixture *fx, uint32_t hidden, enum fg_line_state initial)
{
	struct fg_slots_cfg cfg;
	const uint8_t pair_x[3] = { 1, 3, 5 }, one[1] = { 1 };
	enum fg_line_state init[FG_LINES];
	struct fg_line_policy pol = { .auto_promote = false, .promote_count = 64, .promote_ns = 1 };

	memset(fx, 0, sizeof(*fx));
	memset(&cfg, 0, sizeof(cfg));
	cfg.capacity = 1024; /* 32 tokens x 32 layers side by side */
	cfg.hidden = hidden;
	cfg.max_seq_len = 2;
	cfg.n_layers = 32;
	cfg.deadline_ns = 1000;
	for (unsigned l = 0; l < 32; l++)
		assert_int_equal(fg_rule_make(&cfg.rules[l], l == 1 ? one : pair_x, l == 1 ? 1 : 3), 0);
	size_t len = fg_slots_mem_size(&cfg);
	fx->mem = aligned_alloc(64, len);
	assert_non_null(fx->mem);
	assert_int_equal(fg_slots_init(&fx->s, fx->mem, len, &cfg), 0);
	fg_bands_default(&fx->bands);
	fx->bands.n_layers = 32;
	fx->lim.hidden = hidden;
	fx->lim.max_seq_len = 2;
	for (unsigned i = 0; i < FG_LINES; i++)
		init[i] = initial;
	fg_lines_init(&fx->lines, init, &pol, 0);
	fx->ctx.bands = &fx->bands;
	fx->ctx.limits = &fx->lim;
	fx->ctx.lines = fg_linefacts_pack(&fx->lines, 0);
}

static void fixture_fini(struct fixture *fx) { free(fx->mem); }

static void set_line(struct fixture *fx, unsigned line, enum fg_line_event ev)
{
	struct fg_line_change chg;
	assert_true(fg_line_apply(&fx->lines, line, ev, 1, 0, 0, "test", &chg) >= 0);
	fx->ctx.lines = fg_linefacts_pack(&fx->lines, fg_linefacts_epoch(fx->ctx.lines));
}

static int ingest_bytes(struct fixture *fx, const uint8_t *buf, size_t len, uint64_t now,
			struct fg_ingest_result *out)
{
	struct fg_frame f;
	assert_true(fg_frame_decode(buf, len, FG_TRANSPORT_MESSAGE, &f) == (ssize_t)len);
	return fg_ingest_frame(&fx->s, &fx->ctx, &f, now, out);
}

/* The seed frame (start 0, one position, hidden floats of body) into
 * buf[0..cap); its length. */
static size_t encode_seed(const struct fg_bands *bands, uint32_t tok, uint16_t layer, uint8_t line, uint8_t neg,
			  const float *body, uint32_t hidden, uint8_t *buf, size_t cap)
{
	struct fg_seed sd = {
		.token_seq = tok, .dst_layer = layer, .line = line, .orientation = neg,
		.start_pos = 0, .seq_len = 1, .body = (const uint8_t *)body, .body_len = hidden * 4,
	};
	ssize_t n = fg_seed_encode(bands, &sd, buf, cap);
	assert_true(n > 0);
	return (size_t)n;
}

static int ingest_seed(struct fixture *fx, uint32_t tok, uint16_t layer, uint8_t line, uint8_t neg,
		       const float *body, uint32_t hidden, uint64_t now, struct fg_ingest_result *out)
{
	uint8_t buf[4096];
	size_t n = encode_seed(&fx->bands, tok, layer, line, neg, body, hidden, buf, sizeof(buf));
	return ingest_bytes(fx, buf, n, now, out);
}

/* The body of the small seeds (hidden 4) of the address and [cluster] tests. */
enum { SMALL_H = 4 };
static const float small[SMALL_H] = { 1, 2, 3, 4 };

/* rc and r: the frame was refused as malformed, for reason (named name). */
static void expect_refused(int rc, const struct fg_ingest_result *r, int reason, const char *name)
{
	assert_int_equal(rc, -reason);
	assert_int_equal(r->reason, reason);
	assert_string_equal(fg_reason_name(r->reason), name);
	assert_int_equal(r->status.outcome, FG_O_MALFORMED);
}

/* The fleet dispatcher's rule (wire.md section 5). */
static bool may_skip(const struct fg_status *st)
{
	/* the fleet: shadow_mode false, fully_resolved, not awaiting, and its
	 * coordinator's own gate bitset == 0x7f (wire.md 5) */
	return !(st->facts & FG_FACT_SHADOW) && (st->facts & FG_FACT_RESOLVED) && !(st->facts & FG_FACT_AWAITING) &&
	       st->bitset == FG_FANO_FULL_MASK;
}

static void test_s01_resolves_alone(void **state)
{
	struct fixture fx;
	struct fg_ingest_result r;
	uint8_t buf[256], enc[64];
	size_t len;
	(void)state;

	fixture_init(&fx, 4, FG_LINE_SHADOW);
	len = fg_test_vector_bytes("S01", buf, sizeof(buf));
	assert_int_equal(ingest_bytes(&fx, buf, len, 5, &r), 0);
	assert_int_equal(r.band, FG_BAND_SEED);
	assert_int_equal(r.reason, 0);
	assert_int_equal(r.seed.token_seq, 42);
	assert_int_equal(r.seed.dst_layer, 1);
	assert_int_equal(r.slot.outcome, FG_O_RESOLVED);
	assert_int_equal(r.slot.fingerprint, 0x5e2de06ec4043aa2ull);
	assert_int_equal(r.status.token_seq, 42);
	assert_int_equal(r.status.dst_layer, 1);
	assert_int_equal(r.status.outcome, FG_O_RESOLVED);
	assert_int_equal(r.status.line, 1);
	assert_int_equal(r.status.sign, 0);
	/* resolved: every line satisfied (0x7f, the fleet's gate); landed = line 1 */
	assert_int_equal(r.status.bitset, FG_FANO_FULL_MASK);
	assert_int_equal(r.status.landed, 0x02);
	assert_int_equal(r.status.expected, 0x02);
	assert_int_equal(r.status.bytes, 16);
	assert_int_equal(r.status.fingerprint, 0x5e2de06ec4043aa2ull);
	assert_int_equal(r.status.line_state, FG_LINE_SHADOW);
	assert_int_equal(r.status.facts, FG_FACT_ACK | FG_FACT_SHADOW | FG_FACT_RESOLVED);
	assert_false(may_skip(&r.status)); /* shadow: never skip */

	/* the status encodes and decodes to the same facts */
	ssize_t n = fg_status_encode(&r.status, enc, sizeof(enc));
	assert_int_equal(n, FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN);
	struct fg_frame f;
	struct fg_status back;
	assert_true(fg_frame_decode(enc, (size_t)n, FG_TRANSPORT_MESSAGE, &f) == n);
	assert_true(fg_status_decode(&f, &back) > 0);
	fg_test_status_equal(&back, &r.status);

	/* C01 (full canonical) and C02 (digest) report on the same key */
	len = fg_test_vector_bytes("C01", buf, sizeof(buf));
	assert_int_equal(ingest_bytes(&fx, buf, len, 6, &r), 0);
	assert_int_equal(r.band, FG_BAND_CANONICAL);
	assert_int_equal(r.canon.kind, FG_CANON_FULL);
	assert_int_equal(r.canon.token_seq, 42);
	assert_int_equal(XXH3_64bits(r.canon.body, r.canon.body_len), 0x5e2de06ec4043aa2ull);
	assert_int_equal(r.status.facts & (FG_FACT_ACK | FG_FACT_RESOLVED), FG_FACT_ACK | FG_FACT_RESOLVED);
	assert_int_equal(r.status.fingerprint, 0x5e2de06ec4043aa2ull);
	assert_int_equal(r.status.line, FG_LINE_NONE);
	len = fg_test_vector_bytes("C02", buf, sizeof(buf));
	assert_int_equal(ingest_bytes(&fx, buf, len, 6, &r), 0);
	assert_int_equal(r.canon.kind, FG_CANON_DIGEST);
	assert_int_equal(r.canon.digest, 0x5e2de06ec4043aa2ull);

	/* S01 again: the slot is resolved, the answer is late, still resolved */
	len = fg_test_vector_bytes("S01", buf, sizeof(buf));
	assert_int_equal(ingest_bytes(&fx, buf, len, 7, &r), 0);
	assert_int_equal(r.slot.outcome, FG_O_LATE);
	assert_int_equal(r.status.facts & FG_FACT_RESOLVED, FG_FACT_RESOLVED);
	assert_int_equal(r.status.facts & FG_FACT_ACK, 0);
	assert_int_equal(r.status.fingerprint, 0x5e2de06ec4043aa2ull);
	fixture_fini(&fx);
}

static void test_malformed_vectors(void **state)
{
	static const struct {
		const char *id;
		int reason;
	} cases[] = {
		{ "S03", FG_R_SEED_LINE },
		{ "S04", FG_R_SEED_ORIENTATION },
		{ "S05", FG_R_SEED_BODY_ROWS },
		{ "S06", FG_R_SEED_BODY_LENGTH },
		{ "S07", FG_R_SEED_PREFIX },
	};
	struct fixture fx;
	struct fg_ingest_result r;
	uint8_t buf[256];
	(void)state;

	fixture_init(&fx, 4, FG_LINE_ACTIVE);
	for (size_t i = 0; i < FG_ARRAY_LEN(cases); i++) {
		size_t len = fg_test_vector_bytes(cases[i].id, buf, sizeof(buf));
		assert_int_equal(ingest_bytes(&fx, buf, len, 1, &r), -cases[i].reason);
		assert_int_equal(r.reason, cases[i].reason);
		assert_int_equal(r.slot.outcome, FG_O_MALFORMED);
		assert_int_equal(r.status.outcome, FG_O_MALFORMED);
		assert_int_equal(r.status.reason, cases[i].reason);
		assert_int_equal(r.status.token_seq, 1);
		assert_int_equal(r.status.dst_layer, 2);
		assert_int_equal(r.status.facts & (FG_FACT_ACK | FG_FACT_RESOLVED), 0);
		assert_false(may_skip(&r.status));
	}
	assert_int_equal(fx.s.opened, 0);

	/* a stream outside every band, a layer outside the model, and
	 * fanogate's own output streams never enter a slot */
	uint8_t hdr[FG_HDR_LEN];
	struct fg_hdr h = { .stream_id = 0x1234, .sequence = 9, .flags = 0, .length = 0 };
	assert_true(fg_hdr_encode(&h, hdr, sizeof(hdr)) == FG_HDR_LEN);
	assert_int_equal(ingest_bytes(&fx, hdr, sizeof(hdr), 1, &r), -FG_R_UNKNOWN_STREAM);
	assert_int_equal(r.status.token_seq, 9);
	fx.bands.n_layers = 4;
	h.stream_id = 0xAF60 + 7;
	assert_true(fg_hdr_encode(&h, hdr, sizeof(hdr)) == FG_HDR_LEN);
	assert_int_equal(ingest_bytes(&fx, hdr, sizeof(hdr), 1, &r), -FG_R_UNKNOWN_LAYER);
	fx.bands.n_layers = 32;
	h.stream_id = 0xAFA0 + 1;
	h.flags = FG_FLAG_FIN;
	assert_true(fg_hdr_encode(&h, hdr, sizeof(hdr)) == FG_HDR_LEN);
	assert_int_equal(ingest_bytes(&fx, hdr, sizeof(hdr), 1, &r), -FG_R_UNKNOWN_STREAM);
	assert_int_equal(r.band, FG_BAND_RESOLVED);
	assert_int_equal(fx.s.opened, 0);
	/* NULL arguments */
	struct fg_frame f = { 0 };
	assert_int_equal(fg_ingest_frame(&fx.s, NULL, &f, 0, &r), -EINVAL);
	fixture_fini(&fx);
}

static void test_pair_x_status_facts(void **state)
{
	enum { H = 8 };
	struct fixture fx;
	struct fg_ingest_result r;
	float x[H], attn[H], ffn[H], want[H];
	(void)state;

	for (unsigned i = 0; i < H; i++) {
		x[i] = (float)i * 0.25f;
		attn[i] = 1.0f / (float)(i + 1);
		ffn[i] = -3.0f * (float)i;
	}
	for (unsigned i = 0; i < H; i++)
		want[i] = (x[i] + attn[i]) + ffn[i];
	fixture_init(&fx, H, FG_LINE_ACTIVE);

	/* all lines active: first answers awaiting, last may skip */
	assert_int_equal(ingest_seed(&fx, 100, 3, 3, 0, attn, H, 1, &r), 0);
	assert_int_equal(r.slot.outcome, FG_O_ACCEPTED);
	assert_int_equal(r.status.facts, FG_FACT_ACK | FG_FACT_AWAITING);
	/* satisfied = landed (3) + not expected (0, 2, 4, 6); not 0x7f */
	assert_int_equal(r.status.bitset, (1u << 3) | 0x55);
	assert_int_equal(r.status.landed, 1u << 3);
	assert_int_equal(r.status.expected, (1u << 1) | (1u << 3) | (1u << 5));
	assert_int_equal(r.status.fingerprint, 0);
	assert_false(may_skip(&r.status));
	assert_int_equal(ingest_seed(&fx, 100, 3, 5, 0, ffn, H, 2, &r), 0);
	assert_int_equal(ingest_seed(&fx, 100, 3, 1, 0, x, H, 3, &r), 0);
	assert_int_equal(r.slot.outcome, FG_O_RESOLVED);
	assert_int_equal(r.status.facts, FG_FACT_ACK | FG_FACT_RESOLVED);
	/* the completing live contribution answers bitset 0x7f (the fleet's
	 * coordinator skips the canonical hop only on bitset == 0x7f) */
	assert_int_equal(r.status.bitset, 0x7F);
	assert_int_equal(r.status.landed, (1u << 1) | (1u << 3) | (1u << 5));
	assert_true(may_skip(&r.status));
	assert_int_equal(r.status.fingerprint, XXH3_64bits(want, sizeof(want)));
	struct fg_seed_view v;
	assert_int_equal(fg_slot_seed(&fx.s, r.slot.slot, &v), 0);
	assert_memory_equal(v.body, want, sizeof(want));

	/* duplicate: acked, still resolved... of an open slot */
	assert_int_equal(ingest_seed(&fx, 101, 3, 1, 0, x, H, 4, &r), 0);
	assert_int_equal(ingest_seed(&fx, 101, 3, 1, 0, x, H, 4, &r), 0);
	assert_int_equal(r.slot.outcome, FG_O_DUPLICATE);
	assert_int_equal(r.status.facts, FG_FACT_ACK | FG_FACT_AWAITING);

	/* line 3 in shadow: line 1's status says shadow too (the seed mixes
	 * both), so the dispatcher does not skip */
	set_line(&fx, 3, FG_LEV_OP_SHADOW);
	assert_int_equal(ingest_seed(&fx, 102, 3, 1, 0, x, H, 5, &r), 0);
	assert_int_equal(r.status.line_state, FG_LINE_ACTIVE);
	assert_int_equal(r.status.facts, FG_FACT_ACK | FG_FACT_AWAITING | FG_FACT_SHADOW);
	assert_int_equal(ingest_seed(&fx, 102, 3, 3, 0, attn, H, 5, &r), 0);
	assert_int_equal(r.status.line_state, FG_LINE_SHADOW);
	assert_int_equal(ingest_seed(&fx, 102, 3, 5, 0, ffn, H, 5, &r), 0);
	assert_int_equal(r.slot.outcome, FG_O_RESOLVED);
	assert_int_equal(r.status.facts, FG_FACT_ACK | FG_FACT_RESOLVED | FG_FACT_SHADOW);
	assert_false(may_skip(&r.status));
	set_line(&fx, 3, FG_LEV_OP_ACTIVE);

	/* point 7 down degrades lines 2, 4, 5: line 5 is in Pair X */
	struct fg_line_change chg[3];
	assert_true(fg_lines_point(&fx.lines, 7, true, 6, chg) >= 1);
	fx.ctx.lines = fg_linefacts_pack(&fx.lines, 0);
	assert_int_equal(fg_linefacts_state(fx.ctx.lines, 5), FG_LINE_DEGRADED);
	assert_int_equal(ingest_seed(&fx, 103, 3, 1, 0, x, H, 6, &r), 0);
	assert_int_equal(r.status.facts, FG_FACT_ACK | FG_FACT_AWAITING | FG_FACT_SHADOW | FG_FACT_DEGRADED);
	assert_true(fg_lines_point(&fx.lines, 7, false, 7, chg) >= 1);
	fx.ctx.lines = fg_linefacts_pack(&fx.lines, 0);

	/* disabled line: refused, not placed */
	set_line(&fx, 5, FG_LEV_OP_DISABLE);
	assert_int_equal(ingest_seed(&fx, 104, 3, 5, 0, ffn, H, 8, &r), 0);
	assert_int_equal(r.slot.outcome, FG_O_LINE_DISABLED);
	assert_int_equal(r.status.outcome, FG_O_LINE_DISABLED);
	assert_int_equal(r.status.line_state, FG_LINE_DISABLED);
	assert_int_equal(r.status.facts & (FG_FACT_ACK | FG_FACT_RESOLVED | FG_FACT_AWAITING), 0);
	assert_int_equal(r.status.facts & FG_FACT_SHADOW, FG_FACT_SHADOW);
	struct fg_slot_info info;
	assert_int_equal(fg_slot_lookup(&fx.s, 104, 3, &info), -ENOENT);
	fixture_fini(&fx);
}

static void test_conflict_and_epoch(void **state)
{
	enum { H = 4 };
	struct fixture fx;
	struct fg_ingest_result r;
	float a[H] = { 1, 2, 3, 4 }, b[H] = { 1, 2, 3, 5 };
	(void)state;

	fixture_init(&fx, H, FG_LINE_ACTIVE);
	/* the published epoch is adopted by the table */
	fx.ctx.lines = fg_linefacts_pack(&fx.lines, 7);
	assert_int_equal(fg_linefacts_epoch(fx.ctx.lines), 7);
	assert_int_equal(ingest_seed(&fx, 50, 2, 1, 0, a, H, 1, &r), 0);
	assert_int_equal(r.status.model_epoch, 7);
	assert_int_equal(fx.s.epoch, 7);
	assert_int_equal(ingest_seed(&fx, 50, 2, 1, 0, b, H, 2, &r), 0);
	assert_int_equal(r.slot.outcome, FG_O_CONFLICT);
	assert_int_equal(r.status.outcome, FG_O_CONFLICT);
	/* the conflict does not move the epoch by itself: the control plane
	 * decides (cp_epoch_guard.h) and publishes it */
	assert_int_equal(r.status.model_epoch, 7);
	assert_int_equal(fx.s.epoch, 7);
	assert_int_equal(r.status.facts & (FG_FACT_ACK | FG_FACT_RESOLVED | FG_FACT_AWAITING), 0);
	fx.ctx.lines = fg_linefacts_pack(&fx.lines, 8);
	assert_int_equal(ingest_seed(&fx, 50, 2, 3, 0, a, H, 3, &r), 0);
	assert_int_equal(r.slot.outcome, FG_O_POISONED);
	assert_int_equal(r.status.model_epoch, 8);
	/* an older published epoch never moves the table back */
	fx.ctx.lines = fg_linefacts_pack(&fx.lines, 7);
	assert_int_equal(ingest_seed(&fx, 50, 2, 5, 0, a, H, 4, &r), 0);
	assert_int_equal(r.slot.outcome, FG_O_POISONED);
	assert_int_equal(fx.s.epoch, 8);
	assert_int_equal(r.status.model_epoch, 8);
	fixture_fini(&fx);
}

static void test_linefacts_pack(void **state)
{
	struct fg_lines ls;
	enum fg_line_state init[FG_LINES] = { FG_LINE_DISABLED, FG_LINE_SHADOW, FG_LINE_ACTIVE, FG_LINE_SHADOW,
					     FG_LINE_ACTIVE, FG_LINE_DISABLED, FG_LINE_SHADOW };
	struct fg_line_policy pol = { 0 };
	struct fg_line_change chg[3];
	(void)state;

	fg_lines_init(&ls, init, &pol, 0);
	fg_linefacts f = fg_linefacts_pack(&ls, 0xDEADBEEFu);
	for (unsigned i = 0; i < FG_LINES; i++)
		assert_int_equal(fg_linefacts_state(f, i), init[i]);
	assert_int_equal(fg_linefacts_epoch(f), 0xDEADBEEFu);
	assert_int_equal(f >> 48, 0);
	assert_int_equal((f >> 14) & 3u, 0);
	/* point 2 lies on lines 0, 3, 4: the active/shadow ones degrade */
	assert_true(fg_lines_point(&ls, 2, true, 1, chg) >= 1);
	f = fg_linefacts_pack(&ls, 1);
	assert_int_equal(fg_linefacts_state(f, 0), FG_LINE_DISABLED);
	assert_int_equal(fg_linefacts_state(f, 3), FG_LINE_DEGRADED);
	assert_int_equal(fg_linefacts_state(f, 4), FG_LINE_DEGRADED);
	assert_int_equal(fg_linefacts_state(f, 2), FG_LINE_ACTIVE);
}

/* Layers beyond 15 the fleet's way (wire.md 3): 28 layers, every stream
 * masked to 4 bits (dst_layer & 0x0F on the seed band), the layer named by
 * the address (ctx.layer_bound). Every slot resolves bit-exactly under its
 * own layer, nothing conflicts, the epoch never moves. Without the address,
 * layer 17's frames would land in layer 1's slots and conflict. */
static int ingest_masked(struct fixture *fx, uint32_t tok, uint16_t layer, uint8_t line, const float *body,
			 uint32_t hidden, uint64_t now, struct fg_ingest_result *out)
{
	uint8_t buf[4096];
	size_t n = encode_seed(&fx->bands, tok, (uint16_t)(layer & FG_LAYER_NIBBLE), line, 0, body, hidden, buf,
			       sizeof(buf));
	assert_int_equal(fg_be16(buf), 0xAF60 + (layer & 0x0F));
	fx->ctx.layer_bound = true;
	fx->ctx.bound_layer = layer;
	int r = ingest_bytes(fx, buf, n, now, out);
	fx->ctx.layer_bound = false;
	return r;
}

static void test_layers_beyond_15_address_bound(void **state)
{
	(void)state;
	enum { H = 4, LAYERS = 28 };
	struct fixture fx;
	struct fg_ingest_result r;
	fixture_init(&fx, H, FG_LINE_ACTIVE);
	fx.bands.n_layers = LAYERS;
	/* every layer Pair X here (layer 1 of the fixture expects only line 1) */
	const uint8_t pair_x[3] = { 1, 3, 5 };
	for (unsigned l = 0; l < LAYERS; l++)
		assert_int_equal(fg_rule_make(&fx.s.cfg.rules[l], pair_x, 3), 0);
	uint32_t epoch0 = fx.s.epoch;
	unsigned resolved = 0;
	for (uint32_t tok = 7; tok < 9; tok++) {
		for (unsigned l = 0; l < LAYERS; l++) {
			float x[H], a[H], f[H], want[H];
			for (unsigned i = 0; i < H; i++) {
				x[i] = (float)(l * 7 + tok) + 0.1f * (float)i;
				a[i] = 1.0f / (float)(l + i + 1);
				f[i] = -0.3f * (float)(i + tok);
				want[i] = (x[i] + a[i]) + f[i];
			}
			assert_int_equal(ingest_masked(&fx, tok, (uint16_t)l, 3, a, H, 1, &r), 0);
			assert_int_equal(r.slot.outcome, FG_O_ACCEPTED);
			assert_int_equal(r.status.dst_layer, l);
			assert_int_equal(ingest_masked(&fx, tok, (uint16_t)l, 5, f, H, 2, &r), 0);
			assert_int_equal(r.slot.outcome, FG_O_ACCEPTED);
			assert_int_equal(ingest_masked(&fx, tok, (uint16_t)l, 1, x, H, 3, &r), 0);
			assert_int_equal(r.slot.outcome, FG_O_RESOLVED);
			assert_int_equal(r.seed.dst_layer, l);
			assert_int_equal(r.status.bitset, FG_FANO_FULL_MASK);
			assert_int_equal(r.status.fingerprint, XXH3_64bits(want, sizeof(want)));
			resolved++;
		}
	}
	assert_int_equal(resolved, 2 * LAYERS);
	assert_int_equal(fx.s.epoch, epoch0);
	/* the same slots, keyed by the address's layer, hold both 1 and 17 */
	struct fg_slot_info info;
	assert_int_equal(fg_slot_lookup(&fx.s, 7, 1, &info), 0);
	assert_int_equal(info.state, FG_SLOT_RESOLVED);
	assert_int_equal(fg_slot_lookup(&fx.s, 7, 17, &info), 0);
	assert_int_equal(info.state, FG_SLOT_RESOLVED);
	fixture_fini(&fx);
}

/* A stream whose layer nibble is not the address layer's is refused by
 * name and never placed. */
static void test_layer_nibble_mismatch_refused(void **state)
{
	(void)state;
	struct fixture fx;
	struct fg_ingest_result r;
	uint8_t buf[256];
	fixture_init(&fx, SMALL_H, FG_LINE_ACTIVE);
	fx.bands.n_layers = 28;
	size_t n = encode_seed(&fx.bands, 5, 2, 1, 0, small, SMALL_H, buf, sizeof(buf)); /* stream 0xAF62 */
	fx.ctx.layer_bound = true;
	fx.ctx.bound_layer = 17; /* 17 & 0x0F = 1, not 2 */
	expect_refused(ingest_bytes(&fx, buf, n, 1, &r), &r, FG_R_LAYER_MISMATCH, "layer_mismatch");
	assert_int_equal(r.status.bitset, 0);
	assert_true(r.status.facts & FG_FACT_SHADOW);
	struct fg_slot_info info;
	assert_int_equal(fg_slot_lookup(&fx.s, 5, 17, &info), -ENOENT);
	assert_int_equal(fg_slot_lookup(&fx.s, 5, 2, &info), -ENOENT);
	/* the whole-layer form of the stream (0xAF71 for 17) is accepted too */
	fg_put_be16(buf, 0xAF71);
	assert_int_equal(ingest_bytes(&fx, buf, n, 1, &r), 0);
	assert_int_equal(r.seed.dst_layer, 17);
	/* the nibble of another whole layer (0xAF61 + 16 = 0xAF71 for layer 1) is not */
	fx.ctx.bound_layer = 1;
	assert_int_equal(ingest_bytes(&fx, buf, n, 1, &r), -FG_R_LAYER_MISMATCH);
	/* an address layer beyond the model */
	fx.ctx.bound_layer = 28;
	fg_put_be16(buf, 0xAF6C);
	assert_int_equal(ingest_bytes(&fx, buf, n, 1, &r), -FG_R_UNKNOWN_LAYER);
	fixture_fini(&fx);
}

/* Classify once, ingest with the class (the dataplane's decode-once path):
 * the class says what the stream is under the address binding, and
 * fg_ingest_classified answers exactly as fg_ingest_frame does, on two
 * tables fed the same frames: a seed, the same seed again (duplicate), a
 * canonical report, an unknown stream, a layer beyond the model, a nibble
 * mismatch on a bound address, and one of our own output streams. */
static void test_classify_once_same_answer(void **state)
{
	(void)state;
	struct fixture a, b;
	uint8_t seed[256], canon[256];
	fixture_init(&a, SMALL_H, FG_LINE_ACTIVE);
	fixture_init(&b, SMALL_H, FG_LINE_ACTIVE);
	a.bands.n_layers = b.bands.n_layers = 28;
	size_t sn = encode_seed(&a.bands, 5, 2, 1, 0, small, SMALL_H, seed, sizeof(seed)); /* stream 0xAF62 */
	struct fg_canon cr = { .kind = FG_CANON_FULL, .token_seq = 5, .dst_layer = 2, .start_pos = 0, .seq_len = 1,
			       .body = (const uint8_t *)small, .body_len = sizeof(small) };
	ssize_t cn = fg_canon_encode(&a.bands, &cr, canon, sizeof(canon));
	assert_true(cn > 0);

	struct fg_ingest_class c;
	fg_ingest_classify(&a.ctx, 0xAF62, &c);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.band, FG_BAND_SEED);
	assert_int_equal(c.layer, 2);
	a.ctx.layer_bound = true;
	a.ctx.bound_layer = 17;
	fg_ingest_classify(&a.ctx, 0xAF62, &c);
	assert_int_equal(c.rc, -FG_R_LAYER_MISMATCH);
	assert_int_equal(c.layer, 17); /* the address's layer, for the status */
	fg_ingest_classify(&a.ctx, 0xAF71, &c);
	assert_int_equal(c.rc, 0);
	assert_int_equal(c.layer, 17);
	a.ctx.layer_bound = false;

	static const struct {
		int which;       /* 0 seed, 1 canonical */
		uint16_t stream; /* 0: as encoded */
		bool bound;
		uint16_t bound_layer;
	} cases[] = {
		{ 0, 0, false, 0 },      { 0, 0, false, 0 },      { 1, 0, false, 0 }, { 0, 0xAFC0, false, 0 },
		{ 0, 0xAF7C, false, 0 }, { 0, 0xAF62, true, 17 }, { 0, 0xAF71, true, 17 },
		{ 0, FG_STREAM_STATUS, false, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t buf[256];
		size_t n = cases[i].which ? (size_t)cn : sn;
		memcpy(buf, cases[i].which ? canon : seed, n);
		if (cases[i].stream)
			fg_put_be16(buf, cases[i].stream);
		a.ctx.layer_bound = b.ctx.layer_bound = cases[i].bound;
		a.ctx.bound_layer = b.ctx.bound_layer = cases[i].bound_layer;
		struct fg_frame f;
		assert_true(fg_frame_decode(buf, n, FG_TRANSPORT_MESSAGE, &f) == (ssize_t)n);
		struct fg_ingest_result ra, rb;
		int rca = fg_ingest_frame(&a.s, &a.ctx, &f, 1, &ra);
		fg_ingest_classify(&b.ctx, f.hdr.stream_id, &c);
		int rcb = fg_ingest_classified(&b.s, &b.ctx, &f, &c, 1, &rb);
		assert_int_equal(rca, rcb);
		assert_int_equal(ra.reason, rb.reason);
		assert_int_equal(ra.band, rb.band);
		assert_int_equal(ra.slot.outcome, rb.slot.outcome);
		assert_memory_equal(&ra.status, &rb.status, sizeof(ra.status));
	}
	assert_int_equal(fg_ingest_classified(&b.s, &b.ctx, &(struct fg_frame){ 0 }, NULL, 1,
					      &(struct fg_ingest_result){ 0 }),
			 -EINVAL);
	fixture_fini(&a);
	fixture_fini(&b);
}

/* [cluster] layers (ctx.serves): a seed or canonical report for a layer
 * this node does not serve is refused as layer_not_served and placed
 * nowhere; a served layer still resolves; serves NULL admits every layer. */
static void test_layer_not_served_refused(void **state)
{
	(void)state;
	struct fixture fx;
	struct fg_ingest_result r;
	uint8_t buf[256];
	uint8_t serves[FG_MAX_LAYERS / 8] = { 0x01 }; /* layer 0 only */
	fixture_init(&fx, SMALL_H, FG_LINE_ACTIVE);
	size_t n = encode_seed(&fx.bands, 9, 1, 1, 0, small, SMALL_H, buf, sizeof(buf));
	fx.ctx.serves = serves;
	expect_refused(ingest_bytes(&fx, buf, n, 1, &r), &r, FG_R_LAYER_NOT_SERVED, "layer_not_served");
	assert_int_equal(r.status.dst_layer, 1);
	struct fg_slot_info info;
	assert_int_equal(fg_slot_lookup(&fx.s, 9, 1, &info), -ENOENT);
	/* a served layer is placed */
	n = encode_seed(&fx.bands, 9, 0, 1, 0, small, SMALL_H, buf, sizeof(buf));
	assert_int_equal(ingest_bytes(&fx, buf, n, 1, &r), 0);
	assert_int_equal(fg_slot_lookup(&fx.s, 9, 0, &info), 0);
	/* no [cluster] layers: every layer */
	fx.ctx.serves = NULL;
	n = encode_seed(&fx.bands, 9, 1, 1, 0, small, SMALL_H, buf, sizeof(buf));
	assert_int_equal(ingest_bytes(&fx, buf, n, 1, &r), 0);
	assert_int_equal(fg_slot_lookup(&fx.s, 9, 1, &info), 0);
	fixture_fini(&fx);
}

/* Both readings of the orientation nibble ([wire] orientation) through the
 * ingest: bit (0 = +, 1 = -) and signed (0x1 = +, 0xF = -). */
static void test_orientation_readings(void **state)
{
	(void)state;
	enum { H = 4 };
	static const struct {
		uint8_t mode, nib_x, nib_a, nib_f;
		int rc;
	} cases[] = {
		{ FG_ORIENT_BIT, 0x0, 0x1, 0x0, 0 },     /* x - a + f */
		{ FG_ORIENT_SIGNED, 0x1, 0xF, 0x1, 0 },  /* the same signs */
		{ FG_ORIENT_SIGNED, 0x0, 0xF, 0x1, -FG_R_SEED_ORIENTATION },
		{ FG_ORIENT_BIT, 0xF, 0x1, 0x0, -FG_R_SEED_ORIENTATION },
	};
	float x[H] = { 1.5f, 2, 3, 4 }, a[H] = { 0.25f, 0.5f, 1, 2 }, f[H] = { 8, 4, 2, 1 }, want[H];
	for (unsigned i = 0; i < H; i++)
		want[i] = (x[i] - a[i]) + f[i];
	for (unsigned c = 0; c < FG_ARRAY_LEN(cases); c++) {
		struct fixture fx;
		struct fg_ingest_result r;
		fixture_init(&fx, H, FG_LINE_ACTIVE);
		fx.lim.orientation = cases[c].mode;
		const float *bodies[3] = { x, a, f };
		const uint8_t lines[3] = { 1, 3, 5 }, nibs[3] = { cases[c].nib_x, cases[c].nib_a, cases[c].nib_f };
		int rc = 0;
		for (unsigned k = 0; k < 3; k++) {
			uint8_t buf[256];
			size_t n = encode_seed(&fx.bands, 9, 4, lines[k], 0, bodies[k], H, buf, sizeof(buf));
			buf[6] = (uint8_t)(lines[k] << 4 | nibs[k]);
			rc = ingest_bytes(&fx, buf, n, 1, &r);
			if (rc < 0)
				break;
			assert_int_equal(r.seed.orientation, k == 1 ? 1 : 0);
			assert_int_equal(r.status.sign, k == 1 ? 1 : 0);
		}
		assert_int_equal(rc, cases[c].rc);
		if (rc == 0) {
			assert_int_equal(r.slot.outcome, FG_O_RESOLVED);
			assert_int_equal(r.status.fingerprint, XXH3_64bits(want, sizeof(want)));
		} else {
			assert_string_equal(fg_reason_name(rc), "seed_orientation");
		}
		fixture_fini(&fx);
	}
}

/* The shadow and degraded facts against their definition, line by line:
 * every packing of the 7 line states (4^7), every expected set, the
 * contributing line cycling through 0..6 and none; and the audit's facts
 * (recording, failed, off in turn) on every status. */
static void test_status_line_facts_all_states(void **state)
{
	(void)state;
	static const uint8_t audit_facts[3] = {[FG_AUDIT_RECORDING] = 0, [FG_AUDIT_FAILED] = FG_FACT_AUDIT_FAILED,
					       [FG_AUDIT_OFF] = FG_FACT_AUDIT_OFF};
	for (uint32_t packed = 0; packed < (1u << 14); packed++) {
		enum fg_audit_fact audit = (enum fg_audit_fact)(packed % 3);
		struct fg_ingest_ctx ctx = {
			.lines = fg_linefacts_with_audit((fg_linefacts)packed | (fg_linefacts)7 << 16, audit)};
		for (uint32_t expected = 0; expected < 128; expected++) {
			unsigned line = (packed + expected) % (FG_LINES + 1); /* FG_LINES: no line */
			struct fg_seed seed = {.token_seq = 1, .dst_layer = 2, .line = (uint8_t)line};
			struct fg_slot_result r = {.outcome = FG_O_ACCEPTED, .state = FG_SLOT_OPEN,
						   .expected = (uint8_t)expected};
			struct fg_status st;
			fg_status_from_result(&ctx, &seed, &r, 0, &st);
			uint8_t want = 0, mask = (uint8_t)expected;
			if (line < FG_LINES)
				mask |= (uint8_t)(1u << line);
			for (unsigned i = 0; i < FG_LINES; i++) {
				if (!(mask & (1u << i)))
					continue;
				enum fg_line_state ls = (enum fg_line_state)((packed >> (2 * i)) & 3u);
				if (ls != FG_LINE_ACTIVE)
					want |= FG_FACT_SHADOW;
				if (ls == FG_LINE_DEGRADED)
					want |= FG_FACT_DEGRADED;
			}
			want |= audit_facts[audit];
			if ((st.facts & (FG_FACT_SHADOW | FG_FACT_DEGRADED | FG_FACT_AUDIT_FAILED | FG_FACT_AUDIT_OFF)) !=
			    want)
				fail_msg("states 0x%04x audit %u expected 0x%02x line %u: facts 0x%02x, want 0x%02x", packed,
					 audit, expected, line, st.facts, want);
		}
	}
}

/* fg_status_frame writes what fg_status_encode writes for
 * fg_status_from_result's status, and refuses what it refuses: every
 * outcome (and one past), every slot state, lines 0..7 and 0xFF, signs
 * 0..2, expected/landed sets with and without bit 7, line states and
 * epochs on either side of the result's, a resolved fingerprint; and a
 * buffer one byte short. */
static void test_status_frame_as_encode(void **state)
{
	(void)state;
	static const uint8_t lines[] = {0, 3, 6, 7, FG_LINE_NONE};
	static const uint8_t masks[] = {0x00, 0x2a, 0x7f, 0x15, 0x80, 0xaa};
	unsigned n = 0, refused = 0;
	for (unsigned o = 0; o <= FG_O__COUNT; o++)
		for (unsigned st = 0; st <= FG_SLOT_POISONED + 1; st++)
			for (unsigned li = 0; li < sizeof(lines); li++)
				for (unsigned sign = 0; sign < 3; sign++)
					for (unsigned e = 0; e < sizeof(masks); e++)
						for (unsigned l = 0; l < sizeof(masks); l++) {
							uint32_t k = (o * 7 + st * 5 + li * 3 + sign + e * 11 + l * 13);
							fg_linefacts lf = fg_linefacts_with_audit(
								(fg_linefacts)((k * 0x9E37u) & 0x3fffu) |
									(fg_linefacts)(10 + k % 3) << 16,
								(enum fg_audit_fact)(k / 3 % 3));
							struct fg_ingest_ctx ctx = {.lines = lf};
							struct fg_seed seed = {.token_seq = 0x01020304u + k,
									       .dst_layer = (uint16_t)(k * 31),
									       .line = lines[li],
									       .orientation = (uint8_t)sign,
									       .body_len = 6144 + k};
							struct fg_slot_result r = {.outcome = (enum fg_outcome)o,
										   .slot = k,
										   .landed = masks[l],
										   .expected = masks[e],
										   .state = (uint8_t)st,
										   .epoch = 9 + k % 4,
										   .fingerprint = 0x1122334455667788ull * (k + 1),
										   .bytes = 6144};
							struct fg_status s;
							fg_status_from_result(&ctx, &seed, &r, 0, &s);
							uint8_t want[FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN + 1];
							uint8_t got[sizeof(want)];
							memset(want, 0xA5, sizeof(want));
							memset(got, 0x5A, sizeof(got));
							ssize_t wn = fg_status_encode(&s, want, sizeof(want));
							ssize_t gn = fg_status_frame(&ctx, &seed, &r, got, sizeof(got));
							assert_int_equal(gn, wn);
							if (wn > 0)
								assert_memory_equal(got, want, (size_t)wn);
							else
								refused++;
							assert_int_equal(fg_status_frame(&ctx, &seed, &r, got,
											 FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN - 1),
									 fg_status_encode(&s, want, FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN - 1));
							n++;
						}
	/* both sides of every rule were taken */
	assert_true(refused > 0 && refused < n);
}

/* fg_status_frame_of writes fg_status_frame's 38 bytes for every status
 * that fg_status_frame does not refuse (a decoded seed, an engine result):
 * random line facts, seeds (every line and none, either sign) and results
 * (every outcome and slot state, any 7-line masks, epochs, fingerprints),
 * and not a byte outside them. Every byte of the frame takes more than one
 * value over the run, so a wrong byte anywhere is seen. */
static void test_status_frame_of_as_frame(void **state)
{
	(void)state;
	enum { LEN = FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN };
	uint64_t x = 0x9E3779B97F4A7C15ull;
	uint8_t first[LEN];
	bool varied[LEN] = {false};
	for (unsigned n = 0; n < 200000; n++) {
		uint64_t a = fg_test_xorshift64(&x), b = fg_test_xorshift64(&x), c = fg_test_xorshift64(&x);
		struct fg_ingest_ctx ctx = {.lines = fg_linefacts_with_audit(
						    (fg_linefacts)(b & 0x3fffu) | (fg_linefacts)(uint32_t)(b >> 20) << 16,
						    (enum fg_audit_fact)(c % 3))};
		struct fg_seed seed;
		struct fg_slot_result r;
		fg_test_status_draw(&x, a, b, c, &seed, &r);
		uint8_t want[LEN + 2], got[LEN + 2];
		memset(want, 0xA5, sizeof(want));
		memset(got, 0xA5, sizeof(got));
		assert_int_equal(fg_status_frame(&ctx, &seed, &r, want + 1, LEN), LEN);
		fg_status_frame_of(&ctx, &seed, &r, got + 1);
		if (memcmp(got, want, sizeof(want)))
			fail_msg("status %u (line %u outcome %u state %u): fg_status_frame_of differs", n, seed.line,
				 r.outcome, r.state);
		for (unsigned i = 0; i < LEN; i++) {
			if (n == 0)
				first[i] = got[1 + i];
			else if (got[1 + i] != first[i])
				varied[i] = true;
		}
	}
	/* the constant bytes: stream id, flags, length, version, reason (0 for a
	 * placed contribution), reserved */
	static const uint8_t fixed[] = {0, 1, 6, 7, 8, 9, FG_HDR_LEN, FG_HDR_LEN + 10, FG_HDR_LEN + 11,
					FG_HDR_LEN + 29, FG_HDR_LEN + 30, FG_HDR_LEN + 31};
	for (unsigned i = 0; i < LEN; i++) {
		bool is_fixed = memchr(fixed, (int)i, sizeof(fixed)) != NULL;
		if (varied[i] == is_fixed)
			fail_msg("frame byte %u %s", i, is_fixed ? "varied" : "never varied: the test misses it");
	}
}

/* fg_status_frame_prep writes fg_status_frame's bytes for every outcome,
 * slot state, line (and no line), every packed line state and audit state, its line
 * facts from a prep made for ctx.lines; a prep made for one lf is found
 * made for it and not for another. Each lf is tried with many statuses,
 * as a caller keeps its prep across a burst. */
static void test_status_frame_prep_as_frame(void **state)
{
	(void)state;
	enum { LEN = FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN };
	uint64_t x = 0x2545F4914F6CDD1Dull;
	struct fg_status_prep prep;
	memset(&prep, 0, sizeof(prep));
	assert_false(fg_status_prep_is(&prep, 0)); /* all zero: made for none, not for lf 0 */
	unsigned remade = 0;
	fg_linefacts lf = 0;
	for (unsigned n = 0; n < 200000; n++) {
		uint64_t a = fg_test_xorshift64(&x), b = fg_test_xorshift64(&x), c = fg_test_xorshift64(&x);
		if (n % 64 == 0) { /* every line state of every line over the run, and epochs */
			fg_linefacts next = fg_linefacts_with_audit(
				(fg_linefacts)(b & 0x3fffu) | (fg_linefacts)(uint32_t)(c >> 20) << 16,
				(enum fg_audit_fact)(a % 3));
			if (next != lf)
				assert_false(fg_status_prep_is(&prep, next));
			lf = next;
		}
		struct fg_ingest_ctx ctx = {.lines = lf};
		if (!fg_status_prep_is(&prep, lf)) {
			fg_status_prep_make(&prep, lf);
			remade++;
		}
		assert_true(fg_status_prep_is(&prep, lf));
		struct fg_seed seed;
		struct fg_slot_result r;
		fg_test_status_draw(&x, a, b, c, &seed, &r);
		uint8_t want[LEN + 2], got[LEN + 2];
		memset(want, 0xA5, sizeof(want));
		memset(got, 0x5A, sizeof(got));
		assert_int_equal(fg_status_frame(&ctx, &seed, &r, want + 1, LEN), LEN);
		fg_status_frame_prep(&prep, &seed, &r, got + 1);
		if (memcmp(got + 1, want + 1, LEN) || got[0] != 0x5A || got[LEN + 1] != 0x5A)
			fail_msg("status %u (lf %llx line %u outcome %u state %u): fg_status_frame_prep differs", n,
				 (unsigned long long)lf, seed.line, r.outcome, r.state);
	}
	assert_true(remade > 1000 && remade <= 200000 / 64 + 1);
}

/* With status_later a decoded seed's status is the caller's, whatever the
 * slot answered: the result holds it zeroed, and fg_status_frame from the
 * result's seed and slot writes the bytes the ingest's own status encodes
 * to. A seed the codec refuses (malformed) still gets its status. */
static void test_status_later(void **state)
{
	(void)state;
	struct fixture a, b;
	fixture_init(&a, SMALL_H, FG_LINE_ACTIVE);
	fixture_init(&b, SMALL_H, FG_LINE_ACTIVE);
	b.ctx.status_later = true;
	const uint8_t lines[3] = {1, 3, 5};
	/* accepted, accepted, resolved, late (the slot is resolved); then a
	 * line layer 1's rule does not expect (unexpected_line) */
	for (unsigned i = 0; i < 5; i++) {
		struct fg_ingest_result ra, rb;
		uint8_t line = i < 3 ? lines[i] : i == 3 ? lines[0] : 3;
		uint16_t layer = i < 4 ? 2 : 1;
		assert_int_equal(ingest_seed(&a, 7, layer, line, 0, small, SMALL_H, 10, &ra), 0);
		assert_int_equal(ingest_seed(&b, 7, layer, line, 0, small, SMALL_H, 10, &rb), 0);
		assert_int_equal(ra.slot.outcome, i == 2 ? FG_O_RESOLVED
						  : i == 3 ? FG_O_LATE
						  : i == 4 ? FG_O_UNEXPECTED_LINE
							   : FG_O_ACCEPTED);
		assert_int_equal(rb.slot.outcome, ra.slot.outcome);
		struct fg_status zero;
		memset(&zero, 0, sizeof(zero));
		assert_memory_equal(&rb.status, &zero, sizeof(zero));
		uint8_t want[FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN], got[sizeof(want)];
		assert_int_equal(fg_status_encode(&ra.status, want, sizeof(want)), (ssize_t)sizeof(want));
		assert_int_equal(fg_status_frame(&b.ctx, &rb.seed, &rb.slot, got, sizeof(got)), (ssize_t)sizeof(got));
		assert_memory_equal(got, want, sizeof(want));
	}
	/* malformed: filled */
	struct fg_ingest_result rm;
	uint8_t bad[64];
	size_t n = encode_seed(&b.bands, 9, 2, 1, 0, small, SMALL_H, bad, sizeof(bad));
	bad[6] = 0x70; /* flags: line 7, which is invalid */
	assert_true(ingest_bytes(&b, bad, n, 10, &rm) < 0);
	assert_int_equal(rm.status.outcome, FG_O_MALFORMED);
	assert_int_not_equal(rm.status.reason, 0);
	fixture_fini(&a);
	fixture_fini(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_s01_resolves_alone),
		cmocka_unit_test(test_malformed_vectors),
		cmocka_unit_test(test_pair_x_status_facts),
		cmocka_unit_test(test_status_line_facts_all_states),
		cmocka_unit_test(test_status_frame_as_encode),
		cmocka_unit_test(test_status_frame_of_as_frame),
		cmocka_unit_test(test_status_frame_prep_as_frame),
		cmocka_unit_test(test_status_later),
		cmocka_unit_test(test_conflict_and_epoch),
		cmocka_unit_test(test_classify_once_same_answer),
		cmocka_unit_test(test_linefacts_pack),
		cmocka_unit_test(test_layers_beyond_15_address_bound),
		cmocka_unit_test(test_layer_nibble_mismatch_refused),
		cmocka_unit_test(test_layer_not_served_refused),
		cmocka_unit_test(test_orientation_readings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

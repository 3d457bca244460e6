/* fuzz_ingest.c - libFuzzer target for fg_ingest_frame (core/ingest.c) over
 * a small slot table (core/slot.c, core/reduce.c): frames of every band,
 * hostile shapes, duplicates, conflicts, reclaim and expiry.
 *
 * Input: bytes 0..1 = line states (2 bits per line), byte 2 = clock step,
 * then aeon-flow frames back to back (read as a stream; a trailing partial
 * frame ends the run). The table is re-initialised for every input.
 *
 * Properties:
 *  1. fg_ingest_frame returns 0 or a negative codec reason, never crashes;
 *  2. every status it builds is encodable (fg_status_encode accepts it);
 *  3. a refused frame never says "skip the canonical hop": shadow set,
 *     fully_resolved clear;
 *  4. when the outcome is RESOLVED, fg_slot_seed hands back a body whose
 *     XXH3-64 is the fingerprint in the status;
 *  5. open slots never exceed the capacity;
 *  6. a resolved body is, bit for bit, the scalar reduction (wire.md 4) of
 *     the contributions this input delivered to that key, in rule order
 *     (any NaN matches any NaN: NaN sign/payload are not IEEE-specified). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fg/ingest.h"
#include "fg/slot.h"
#include "fg/wire.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What this input delivered per key and line, pointing into the input. */
struct delivered {
	uint32_t token_seq;
	uint16_t layer;
	uint8_t line, neg;
	const uint8_t *body;
	uint32_t body_len;
};
static struct delivered dl[1024];
static unsigned n_dl;

static void dl_forget_key(uint32_t token_seq, uint16_t layer)
{
	for (unsigned i = 0; i < n_dl;)
		if (dl[i].token_seq == token_seq && dl[i].layer == layer)
			dl[i] = dl[--n_dl];
		else
			i++;
}

static const struct delivered *dl_find(uint32_t token_seq, uint16_t layer, uint8_t line)
{
	for (unsigned i = 0; i < n_dl; i++)
		if (dl[i].token_seq == token_seq && dl[i].layer == layer && dl[i].line == line)
			return &dl[i];
	return NULL;
}

static void dl_record(const struct fg_seed *sd, const struct fg_slot_result *r)
{
	/* only this line landed: a fresh slot for the key, older records are stale */
	if (r->landed == (1u << sd->line))
		dl_forget_key(sd->token_seq, sd->dst_layer);
	if (dl_find(sd->token_seq, sd->dst_layer, sd->line) || n_dl == FG_ARRAY_LEN(dl))
		return;
	dl[n_dl++] = (struct delivered){ sd->token_seq, sd->dst_layer, sd->line, sd->orientation, sd->body,
					 sd->body_len };
}

static void check_resolution(const struct fg_seed_view *v, const struct fg_rule *rule)
{
	const struct delivered *c[FG_LINES];
	for (unsigned k = 0; k < rule->n; k++) {
		c[k] = dl_find(v->token_seq, v->dst_layer, rule->order[k]);
		if (!c[k])
			return; /* record table full: nothing to compare against */
		FUZZ_CHECK(c[k]->body_len == v->body_len);
	}
	for (uint32_t i = 0; i < v->body_len / 4; i++) {
		float r, x, got;
		memcpy(&x, c[0]->body + 4 * i, 4);
		r = c[0]->neg ? -x : x;
		for (unsigned k = 1; k < rule->n; k++) {
			memcpy(&x, c[k]->body + 4 * i, 4);
			r = c[k]->neg ? r - x : r + x;
		}
		memcpy(&got, v->body + 4 * i, 4);
		FUZZ_CHECK((r != r && got != got) || !memcmp(&r, &got, 4));
	}
}

static struct fg_slots_cfg cfg;
static void *mem;
static size_t mem_len;

static void setup(void)
{
	static const uint8_t r0[] = { 0 }, r1[] = { 1, 3, 5 }, r2[] = { 0, 1, 2 }, r3[] = { 6, 5, 4, 3, 2, 1, 0 };
	cfg.capacity = 8;
	cfg.hidden = 2;
	cfg.max_seq_len = 3;
	cfg.n_layers = 4;
	cfg.deadline_ns = 1000;
	FUZZ_CHECK(fg_rule_make(&cfg.rules[0], r0, sizeof(r0)) == 0);
	FUZZ_CHECK(fg_rule_make(&cfg.rules[1], r1, sizeof(r1)) == 0);
	FUZZ_CHECK(fg_rule_make(&cfg.rules[2], r2, sizeof(r2)) == 0);
	FUZZ_CHECK(fg_rule_make(&cfg.rules[3], r3, sizeof(r3)) == 0);
	mem_len = (fg_slots_mem_size(&cfg) + 63) & ~(size_t)63;
	mem = aligned_alloc(64, mem_len);
	FUZZ_CHECK(mem != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fg_slots s;
	struct fg_bands bands;
	struct fg_seed_limits lim;
	uint8_t st_buf[64];

	if (!mem)
		setup();
	if (size < 3)
		return 0;
	FUZZ_CHECK(fg_slots_init(&s, mem, mem_len, &cfg) == 0);
	fg_bands_default(&bands);
	bands.n_layers = cfg.n_layers;
	lim.hidden = cfg.hidden;
	lim.max_seq_len = cfg.max_seq_len;
	/* data[1] bit 7 (above the 14 line-fact bits): the frame arrived on an
	 * address that names its layer (data[2] picks it). */
	struct fg_ingest_ctx ctx = {
		.bands = &bands,
		.limits = &lim,
		.lines = (fg_linefacts)(data[0] | (data[1] << 8)) & 0x3FFF,
		.layer_bound = (data[1] & 0x80) != 0,
		.bound_layer = (uint16_t)(data[2] % bands.n_layers),
	};
	uint64_t step = data[2], now = 1;
	size_t off = 3;
	n_dl = 0;

	while (off < size) {
		struct fg_frame f;
		struct fg_ingest_result res;
		ssize_t n = fg_frame_decode(data + off, size - off, FG_TRANSPORT_STREAM, &f);
		if (n < 0)
			break;
		off += (size_t)n;
		now += step;
		int rc = fg_ingest_frame(&s, &ctx, &f, now, &res);
		FUZZ_CHECK(rc <= 0 && rc > -FG_R__COUNT);
		FUZZ_CHECK(fg_status_encode(&res.status, st_buf, sizeof(st_buf)) == FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN);
		if (rc < 0) {
			FUZZ_CHECK(res.reason == -rc);
			FUZZ_CHECK(res.status.facts & FG_FACT_SHADOW);
			FUZZ_CHECK(!(res.status.facts & FG_FACT_RESOLVED));
		}
		if (rc == 0 && res.band == FG_BAND_SEED &&
		    (res.slot.outcome == FG_O_ACCEPTED || res.slot.outcome == FG_O_RESOLVED))
			dl_record(&res.seed, &res.slot);
		if (rc == 0 && res.band == FG_BAND_SEED && res.slot.outcome == FG_O_RESOLVED) {
			struct fg_seed_view v;
			FUZZ_CHECK(fg_slot_seed(&s, res.slot.slot, &v) == 0);
			FUZZ_CHECK(v.fingerprint == fg_fingerprint(v.body, v.body_len));
			FUZZ_CHECK(res.status.fingerprint == v.fingerprint);
			FUZZ_CHECK(res.status.facts & FG_FACT_RESOLVED);
			FUZZ_CHECK(v.body_len == res.seed.body_len);
			check_resolution(&v, &cfg.rules[v.dst_layer]);
		}
		FUZZ_CHECK(s.in_use <= cfg.capacity);
		struct fg_slot_expired ex[8];
		while (fg_slots_expire(&s, now, ex, 8) == 8)
			;
	}
	return 0;
}

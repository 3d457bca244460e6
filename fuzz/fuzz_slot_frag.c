/* fuzz_slot_frag.c - libFuzzer target for the slot engine's fragment path
 * (fg_slot_begin or fg_slot_begin_decoded / fg_slot_place, fg_slot_land or
 * the caller's own copies and fg_slot_whole / fg_slot_abort, core/slot.c,
 * and the inline fast paths of fg/slot_inline.h)
 * mixed with
 * whole puts and expiry, as a hostile UDP reassembler order would drive it.
 *
 * The harness keeps the engine's contract (slot.h): every byte range of an
 * attempt is placed at most once; within that, the input chooses the keys,
 * lines, signs, shapes, chunk sizes, placement order, supersedes, aborts,
 * duplicates and the clock. Ops, one byte each plus arguments:
 *   0 begin  tok layer line sign|shape|decoded|own|fast seq_len chunk body...
 *            (decoded: fg_slot_begin_decoded, the seed being one the codec
 *            accepts under the table's limits; own: the attempt's chunks
 *            are copied to ref.buf while the reference is live, the line
 *            reported whole with fg_slot_whole; fast: the inline fast
 *            paths the dataplane runs instead, fg_slot_begin_fast for a
 *            decoded begin and fg_slot_whole_fast with a sink for an own
 *            attempt's last chunk)
 *   1 place  attempt chunk (chunk's top bit: fg_slot_land, else fg_slot_place)
 *   2 abort  attempt
 *   3 put    tok layer line sign|shape seq_len body...
 *   4 tick   dt
 * Properties:
 *  1. no crash, no out-of-bounds access;
 *  2. a contract-keeping caller never gets FG_O_BAD_RANGE, and every call
 *     returns 0 with an outcome in range;
 *  3. a resolved body is, bit for bit, the scalar reduction in rule order of
 *     the contributions completed for that key (NaN matches any NaN);
 *  4. open slots never exceed the capacity;
 *  5. a sink asked for a buffer (fg_slot_whole_fast) gets the resolved
 *     body, bit for bit, and is asked only when the slot resolves. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fg/slot.h"
#include "fg/slot_inline.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HIDDEN 2u
#define MAX_SEQ 3u

static struct fg_slots_cfg cfg;
static void *mem;
static size_t mem_len;

struct attempt {
	bool live;
	struct fg_slot_ref ref;
	struct fg_seed seed; /* body points into the input */
	uint32_t chunk, placed; /* chunk size; bit i = chunk i placed */
	bool own;               /* the caller's own placement (fg_slot_whole) */
	bool fast;              /* ... through fg_slot_whole_fast */
};

/* The sink of fg_slot_whole_fast: one buffer, and how often it was asked. */
static uint8_t sink_buf[MAX_SEQ * HIDDEN * 4];
static unsigned sink_calls;

static void *sink(void *arg, uint32_t slot, uint32_t body_len)
{
	(void)arg;
	(void)slot;
	FUZZ_CHECK(body_len <= sizeof(sink_buf));
	sink_calls++;
	return sink_buf;
}

struct done {
	uint32_t token_seq;
	uint16_t layer;
	uint8_t line, neg;
	const uint8_t *body;
	uint32_t body_len;
};
static struct done dn[512];
static unsigned n_dn;

static void setup(void)
{
	static const uint8_t r0[] = { 2 }, r1[] = { 1, 3, 5 }, r2[] = { 4, 0 }, r3[] = { 6, 5, 4, 3, 2, 1, 0 };
	cfg.capacity = 4;
	cfg.hidden = HIDDEN;
	cfg.max_seq_len = MAX_SEQ;
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

static const struct done *dn_find(uint32_t tok, uint16_t layer, uint8_t line)
{
	for (unsigned i = 0; i < n_dn; i++)
		if (dn[i].token_seq == tok && dn[i].layer == layer && dn[i].line == line)
			return &dn[i];
	return NULL;
}

/* A line completed (ACCEPTED or RESOLVED). When it is the only landed line
 * the slot is a fresh one for its key: older records of the key are stale. */
static void dn_record(const struct fg_seed *sd, const struct fg_slot_result *r)
{
	if (r->landed == (1u << sd->line)) {
		for (unsigned i = 0; i < n_dn;) {
			if (dn[i].token_seq == sd->token_seq && dn[i].layer == sd->dst_layer)
				dn[i] = dn[--n_dn];
			else
				i++;
		}
	}
	if (dn_find(sd->token_seq, sd->dst_layer, sd->line) || n_dn == FG_ARRAY_LEN(dn))
		return;
	dn[n_dn++] = (struct done){ sd->token_seq, sd->dst_layer, sd->line, sd->orientation, sd->body, sd->body_len };
}

static void check_resolved(const struct fg_slots *s, uint32_t slot)
{
	struct fg_seed_view v;
	const struct done *c[FG_LINES];
	FUZZ_CHECK(fg_slot_seed(s, slot, &v) == 0);
	FUZZ_CHECK(v.fingerprint == fg_fingerprint(v.body, v.body_len));
	const struct fg_rule *rule = &cfg.rules[v.dst_layer];
	for (unsigned k = 0; k < rule->n; k++) {
		c[k] = dn_find(v.token_seq, v.dst_layer, rule->order[k]);
		FUZZ_CHECK(c[k] != NULL);
		FUZZ_CHECK(c[k]->body_len == v.body_len);
	}
	for (uint32_t i = 0; i < v.body_len / 4; i++) {
		float r, x, got;
		memcpy(&x, c[0]->body + 4 * i, 4);
		r = c[0]->neg ? -x : x;
		for (unsigned k = 1; k < rule->n; k++) {
			memcpy(&x, c[k]->body + 4 * i, 4);
			r = c[k]->neg ? r - x : r + x;
		}
		memcpy(&got, v.body + 4 * i, 4);
		FUZZ_CHECK((r != r && got != got) || !memcmp(&r, &got, 4));
	}
}

static void after(const struct fg_slots *s, const struct fg_seed *sd, const struct fg_slot_result *r)
{
	FUZZ_CHECK((unsigned)r->outcome < FG_O__COUNT);
	FUZZ_CHECK(r->outcome != FG_O_BAD_RANGE);
	if (r->outcome == FG_O_ACCEPTED || r->outcome == FG_O_RESOLVED)
		dn_record(sd, r);
	if (r->outcome == FG_O_RESOLVED)
		check_resolved(s, r->slot);
	FUZZ_CHECK(s->in_use <= cfg.capacity);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fg_slots s;
	struct attempt at[6];
	const uint8_t *p = data, *end = data + size;
	uint64_t now = 1;

	if (!mem)
		setup();
	FUZZ_CHECK(fg_slots_init(&s, mem, mem_len, &cfg) == 0);
	memset(at, 0, sizeof(at));
	n_dn = 0;

	while (p < end) {
		uint8_t op = *p++ % 5;
		struct fg_slot_result r;
		if (op == 0 || op == 3) {
			if (end - p < (op == 0 ? 6 : 5))
				break;
			struct fg_seed sd = { 0 };
			sd.token_seq = p[0] % 6;
			sd.dst_layer = p[1] % 4;
			sd.line = p[2] % 7;
			sd.orientation = p[3] & 1;
			sd.start_pos = (p[3] >> 1) & 1; /* shape mismatches too */
			sd.seq_len = 1 + p[4] % MAX_SEQ;
			sd.body_len = sd.seq_len * HIDDEN * 4;
			uint32_t chunk = op == 0 ? 1 + p[5] % sd.body_len : 0;
			bool decoded = op == 0 && (p[3] & 4), own = op == 0 && (p[3] & 8), fast = op == 0 && (p[3] & 16);
			p += op == 0 ? 6 : 5;
			if ((size_t)(end - p) < sd.body_len)
				break;
			const uint8_t *body = p;
			p += sd.body_len;
			if (op == 3) {
				sd.body = body;
				FUZZ_CHECK(fg_slot_put(&s, &sd, now, &r) == 0);
				after(&s, &sd, &r);
				continue;
			}
			struct fg_slot_ref ref;
			if (decoded) {
				struct fg_seed_limits lim = { .hidden = HIDDEN, .max_seq_len = MAX_SEQ };
				FUZZ_CHECK(fg_slots_fit_limits(&s, &lim));
				enum fg_outcome o = fast ? fg_slot_begin_fast(&s, &sd, now, &ref, &r)
							 : fg_slot_begin_decoded(&s, &sd, now, &ref, &r);
				FUZZ_CHECK((unsigned)o < FG_O__COUNT);
				if (o != FG_O_PARTIAL)
					FUZZ_CHECK(r.outcome == o);
				r.outcome = o;
			} else {
				FUZZ_CHECK(fg_slot_begin(&s, &sd, now, &ref, &r) == 0);
			}
			FUZZ_CHECK((unsigned)r.outcome < FG_O__COUNT);
			FUZZ_CHECK(r.outcome != FG_O_MALFORMED); /* every seed here is well formed */
			if (r.outcome != FG_O_PARTIAL)
				continue;
			FUZZ_CHECK(ref.body_len == sd.body_len);
			struct attempt *a = &at[sd.token_seq % FG_ARRAY_LEN(at)];
			sd.body = body;
			*a = (struct attempt){ true, ref, sd, chunk, 0, own, fast };
		} else if (op == 1) {
			if (end - p < 2)
				break;
			struct attempt *a = &at[p[0] % FG_ARRAY_LEN(at)];
			unsigned pick = p[1];
			p += 2;
			if (!a->live)
				continue;
			uint32_t n_chunks = (a->seed.body_len + a->chunk - 1) / a->chunk, free_n = 0, k;
			for (k = 0; k < n_chunks; k++)
				free_n += !(a->placed & (1u << k));
			if (!free_n)
				continue;
			pick %= free_n;
			for (k = 0; k < n_chunks; k++)
				if (!(a->placed & (1u << k)) && pick-- == 0)
					break;
			a->placed |= 1u << k;
			uint32_t off = k * a->chunk;
			uint32_t len = a->seed.body_len - off < a->chunk ? a->seed.body_len - off : a->chunk;
			if (a->own) {
				/* the reassembler's own placement: copies while the
				 * reference is live, the line whole once every chunk is
				 * in; a dead reference gets its outcome from fg_slot_whole */
				bool live = fg_slot_ref_live(&a->ref);
				if (live)
					memcpy(a->ref.buf + off, a->seed.body + off, len);
				if (live && free_n > 1)
					continue;
				unsigned calls = sink_calls;
				enum fg_outcome o = a->fast ? fg_slot_whole_fast(&s, &a->ref, &r, sink, NULL)
							    : fg_slot_whole(&s, &a->ref, &r);
				FUZZ_CHECK(r.outcome == o);
				FUZZ_CHECK(sink_calls == calls + (a->fast && o == FG_O_RESOLVED));
				if (a->fast && o == FG_O_RESOLVED) {
					struct fg_seed_view v;
					FUZZ_CHECK(fg_slot_seed(&s, r.slot, &v) == 0);
					FUZZ_CHECK(!memcmp(sink_buf, v.body, v.body_len));
				}
				FUZZ_CHECK(live == (o == FG_O_ACCEPTED || o == FG_O_RESOLVED));
				FUZZ_CHECK(!fg_slot_ref_live(&a->ref));
				after(&s, &a->seed, &r);
				a->live = false;
				continue;
			}
			/* the reassembler's fast path (fg_slot_land) or the full one,
			 * by the pick's top bit: the same contract, the same outcomes */
			if (p[-1] & 0x80) {
				enum fg_outcome o = fg_slot_land(&s, &a->ref, off, a->seed.body + off, len, now, &r);
				FUZZ_CHECK((unsigned)o < FG_O__COUNT);
				if (o == FG_O_PARTIAL)
					r.outcome = FG_O_PARTIAL; /* res is not written then */
				FUZZ_CHECK(r.outcome == o);
			} else {
				FUZZ_CHECK(fg_slot_place(&s, &a->ref, off, a->seed.body + off, len, now, &r) == 0);
			}
			after(&s, &a->seed, &r);
			if (r.outcome != FG_O_PARTIAL)
				a->live = false;
		} else if (op == 2) {
			if (end - p < 1)
				break;
			struct attempt *a = &at[*p++ % FG_ARRAY_LEN(at)];
			if (a->live)
				fg_slot_abort(&s, &a->ref);
			a->live = false;
		} else {
			if (end - p < 1)
				break;
			now += (uint64_t)*p++ * 8;
			struct fg_slot_expired ex[4];
			while (fg_slots_expire(&s, now, ex, 4) == 4)
				;
		}
	}
	return 0;
}

/* test_reasm.c - unit tests for dataplane/dp_reasm.c (pure, no DPDK).
 *
 * Covers: in-order and out-of-order reassembly straight into a slot, held
 * fragments drained when fragment 0 arrives last, duplicates (live and
 * after completion), every fragment validation of wire.md 2.1, a frame whose
 * shard belongs to another lcore (whole-frame buffer), non-seed frames,
 * FG_O_DUP_PENDING -> whole frame -> fg_slot_put (duplicate and conflict),
 * timeouts aborting the slot attempt, context overflow and tombstone
 * recycling, disabled lines, malformed prefixes, the U02..U04 vectors in
 * every arrival order, a slot flushed or expired under a frame in flight,
 * the burst path (find, land, push_hinted, push_run) giving the same
 * answers, a seed decoded under ingest limits the slot table does not fit
 * refused by the table, that every buffer taken is returned, the
 * chunk copies (dp_ra_copy_pick) at every length and alignment, and a
 * frame of another shard listed as its received buffers (keep_max): kept
 * up to the bound, copied past it, each kept buffer given back once on
 * every ending (handed out, expired, evicted, shutdown). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fg/ingest.h"
#include "fg/slot.h"
#include "fg/wire.h"
#include "dp_reasm.h"

#include "../lib/fg_test_vectors.h" /* fg_test_vector_bytes */

#define HIDDEN 64u
#define CHUNK 64u
#define LAYERS 4u

struct env {
	struct fg_slots slots;
	void *slots_mem;
	struct dp_reasm r;
	void *rmem;
	struct fg_bands bands;
	struct fg_seed_limits lim;
	struct fg_ingest_ctx ictx;
	int bufs_out;
	uint32_t frame_max;
	uint8_t fr[4096]; /* the seed frame env_seed made, len bytes */
	uint32_t len;
	int dropped; /* received buffers the table gave back (keep_drop) */
};

static void *buf_get(void *arg)
{
	struct env *e = arg;
	e->bufs_out++;
	return malloc(e->frame_max + DP_RA_KEEP_LIST);
}

static void buf_put(void *arg, void *b)
{
	struct env *e = arg;
	e->bufs_out--;
	free(b);
}

/* Received buffers (the test's tokens, struct keep_pkt) given back: each
 * exactly once. */
struct keep_pkt {
	int given_back;
};
static void keep_drop(void *arg, void *const *m, unsigned n)
{
	struct env *e = arg;
	for (unsigned i = 0; i < n; i++) {
		struct keep_pkt *k = m[i];
		assert_int_equal(k->given_back, 0);
		k->given_back = 1;
		e->dropped++;
	}
}

static fg_linefacts facts_all(unsigned state)
{
	fg_linefacts f = 0;
	for (unsigned i = 0; i < 7; i++)
		f |= (fg_linefacts)state << (2 * i);
	return f;
}

/* The parts of an env that do not depend on the slot table: bands, limits,
 * the ingest context (no line facts) and the frame size. */
static struct env *env_alloc(uint32_t frame_max)
{
	struct env *e = calloc(1, sizeof(*e));
	assert_non_null(e);
	fg_bands_default(&e->bands);
	e->bands.n_layers = LAYERS;
	e->lim.hidden = HIDDEN;
	e->lim.max_seq_len = 1;
	e->ictx.bands = &e->bands;
	e->ictx.limits = &e->lim;
	e->frame_max = frame_max;
	return e;
}

/* dp_reasm_init(&e->r) for rc (its buffers are e's) in memory it allocates. */
static void env_reasm_init(struct env *e, struct dp_reasm_cfg *rc)
{
	rc->bufs = (struct dp_buf_ops){.get = buf_get, .put = buf_put, .arg = e};
	size_t sz = dp_reasm_mem_size(rc);
	e->rmem = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	assert_int_equal(dp_reasm_init(&e->r, e->rmem, sz, rc), 0);
}

static struct env *env_new(uint32_t contexts, uint32_t n_shards, uint32_t self, uint32_t frame_max)
{
	struct env *e = env_alloc(frame_max);
	struct fg_slots_cfg sc;
	memset(&sc, 0, sizeof(sc));
	sc.capacity = 64;
	sc.hidden = HIDDEN;
	sc.max_seq_len = 1;
	sc.n_layers = LAYERS;
	sc.deadline_ns = 1000000000ull;
	const uint8_t order[3] = {1, 3, 5};
	for (unsigned l = 0; l < LAYERS; l++)
		assert_int_equal(fg_rule_make(&sc.rules[l], order, 3), 0);
	size_t sz = fg_slots_mem_size(&sc);
	e->slots_mem = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	assert_int_equal(fg_slots_init(&e->slots, e->slots_mem, sz, &sc), 0);
	e->ictx.lines = facts_all(1 /* shadow */);
	struct dp_reasm_cfg rc = {
		.contexts = contexts,
		.chunk = CHUNK,
		.frame_max = frame_max,
		.timeout_ns = 1000000,
		.slots = &e->slots,
		.shard_self = self,
		.n_shards = n_shards,
		.n_layers = LAYERS,
	};
	env_reasm_init(e, &rc);
	return e;
}

static void env_free(struct env *e)
{
	dp_reasm_fini(&e->r);
	assert_int_equal(e->bufs_out, 0); /* every buffer came back */
	free(e->rmem);
	free(e->slots_mem);
	free(e);
}

/* A seed frame for (token, layer, line, sign) with floats base + k * step. */
static uint32_t make_seed(struct env *e, uint8_t *out, uint32_t token, uint16_t layer, uint8_t line, uint8_t neg,
			  float base, float step)
{
	float body[HIDDEN];
	for (unsigned k = 0; k < HIDDEN; k++)
		body[k] = base + (float)k * step;
	struct fg_seed s = {.token_seq = token, .dst_layer = layer, .line = line, .orientation = neg, .start_pos = 3,
			    .seq_len = 1, .body = (const uint8_t *)body, .body_len = sizeof(body)};
	ssize_t n = fg_seed_encode(&e->bands, &s, out, 4096);
	assert_true(n > 0);
	return (uint32_t)n;
}

static struct dp_peer peer_of(uint16_t port)
{
	struct dp_peer p = {.family = 4, .port = port};
	p.addr[0] = 10;
	p.addr[3] = 7;
	return p;
}

/* The common env (16 contexts, one shard, 4096-byte frames) with one seed
 * frame for (token, layer, line, +) in e->fr, its length in e->len. */
static struct env *env_seed(uint32_t token, uint16_t layer, uint8_t line, float base, float step)
{
	struct env *e = env_new(16, 1, 0, 4096);
	e->len = make_seed(e, e->fr, token, layer, line, 0, base, step);
	return e;
}

/* When set, push() takes the burst path: dp_reasm_find, then
 * dp_reasm_land_run (a run of one), then dp_reasm_push_hinted when it
 * declines; `landed` counts the fragments it took. */
static bool via_land;
static unsigned landed;

/* Push fragment idx of frame[0..len) under frame_id. */
static struct dp_reasm_out push(struct env *e, const struct dp_peer *p, uint16_t fid, const uint8_t *frame,
			       uint32_t len, unsigned idx, uint64_t now)
{
	struct fg_frag f;
	f.frame_id = fid;
	f.index = (uint8_t)idx;
	f.total = (uint8_t)fg_frag_count(len, CHUNK);
	f.chunk = frame + idx * CHUNK;
	f.chunk_len = (len - idx * CHUNK) < CHUNK ? len - idx * CHUNK : CHUNK;
	struct dp_reasm_out out;
	if (via_land) {
		uint32_t hash = dp_peer_hash(p, 0);
		struct dp_ra_hint h;
		dp_reasm_find(&e->r, p, hash, fid, &h);
		if (dp_reasm_land_run(&e->r, &h, &f, 1, now, &out) == 1) {
			landed++;
			return out;
		}
		assert_int_equal(dp_reasm_push_hinted(&e->r, p, hash, &h, &f, &e->ictx, now, &out), 0);
		return out;
	}
	assert_int_equal(dp_reasm_push(&e->r, p, &f, &e->ictx, now, &out), 0);
	return out;
}

/* Fragments first .. end - 1 of frame, in order; the last one's output. */
static struct dp_reasm_out push_range(struct env *e, const struct dp_peer *p, uint16_t fid, const uint8_t *frame,
				      uint32_t len, unsigned first, unsigned end, uint64_t now)
{
	struct dp_reasm_out out = { 0 };
	for (unsigned k = first; k < end; k++)
		out = push(e, p, fid, frame, len, k, now);
	return out;
}

/* Fragments first .. end - 1 of frame, in order, each one taken. */
static void push_taken(struct env *e, const struct dp_peer *p, uint16_t fid, const uint8_t *frame, uint32_t len,
		       unsigned first, unsigned end, uint64_t now)
{
	for (unsigned k = first; k < end; k++)
		assert_int_equal(push(e, p, fid, frame, len, k, now).disp, DP_RA_TAKEN);
}

/* env_seed's env (step 1) with an attempt from p under fid that lacks its
 * last fragment: fragments 0..3 of the 5 taken at time 0. */
static struct env *env_seed_partial(const struct dp_peer *p, uint16_t fid, uint32_t token, uint16_t layer,
				    uint8_t line, float base)
{
	struct env *e = env_seed(token, layer, line, base, 1.0f);
	push_taken(e, p, fid, e->fr, e->len, 0, 4, 0);
	return e;
}

/* The output carries a judgement, of outcome want. */
static void expect_outcome(const struct dp_reasm_out *o, enum fg_outcome want)
{
	assert_true(o->events & DP_RA_EV_OUTCOME);
	assert_int_equal(o->res.outcome, want);
}

/* Fragments first .. 4 of a 5-fragment frame complete it: accepted and ACKed. */
static void push_accepted(struct env *e, const struct dp_peer *p, uint16_t fid, const uint8_t *frame, uint32_t len,
			  unsigned first, uint64_t now)
{
	struct dp_reasm_out o = push_range(e, p, fid, frame, len, first, 5, now);
	expect_outcome(&o, FG_O_ACCEPTED);
	assert_true(o.events & DP_RA_EV_COMPLETE);
}

/* Fragments 1 .. 4 of a frame judged at fragment 0: discarded, still ACKed
 * (it was received), and no slot was ever opened. */
static void push_rest_discarded(struct env *e, const struct dp_peer *p, uint16_t fid, const uint8_t *frame,
				uint32_t len)
{
	struct dp_reasm_out o = push_range(e, p, fid, frame, len, 1, 5, 0);
	assert_int_equal(o.disp, DP_RA_DISCARDED);
	assert_int_equal(o.events, DP_RA_EV_COMPLETE);
	assert_int_equal(e->slots.opened, 0);
}

static void reference(float *out, const float *x, const float *a, const float *f, int nx, int na, int nf)
{
	for (unsigned k = 0; k < HIDDEN; k++) {
		volatile float r = nx ? -x[k] : x[k];
		r = na ? r - a[k] : r + a[k];
		r = nf ? r - f[k] : r + f[k];
		out[k] = r;
	}
}

static void fill(float *v, float base, float step)
{
	for (unsigned k = 0; k < HIDDEN; k++)
		v[k] = base + (float)k * step;
}

/* The three seed frames of (token 42, layer 2): lines 1 +, 3 -, 5 +. */
static void make_three_lines(struct env *e, uint8_t fr[3][4096], uint32_t len[3])
{
	len[0] = make_seed(e, fr[0], 42, 2, 1, 0, 0.1f, 1e-3f);
	len[1] = make_seed(e, fr[1], 42, 2, 3, 1, 1e8f, 3.0f);
	len[2] = make_seed(e, fr[2], 42, 2, 5, 0, -1e8f, 7.0f);
}

/* Slot `slot` resolved the three lines resolve_with_orders sends (1 +,
 * 3 -, 5 +): bit for bit the reduction in rule order, start_pos 3. */
static void expect_three_lines(struct env *e, uint32_t slot)
{
	struct fg_seed_view v;
	assert_int_equal(fg_slot_seed(&e->slots, slot, &v), 0);
	float x[HIDDEN], a[HIDDEN], f[HIDDEN], want[HIDDEN];
	fill(x, 0.1f, 1e-3f);
	fill(a, 1e8f, 3.0f);
	fill(f, -1e8f, 7.0f);
	reference(want, x, a, f, 0, 1, 0);
	assert_int_equal(v.body_len, sizeof(want));
	assert_memory_equal(v.body, want, sizeof(want));
	assert_int_equal(v.start_pos, 3);
}

/* Three lines, each fragmented into 5 pieces; `perm` orders fragments. */
static void resolve_with_orders(const unsigned *order)
{
	struct env *e = env_new(16, 1, 0, 4096);
	uint8_t fr[3][4096];
	uint32_t len[3];
	make_three_lines(e, fr, len);
	assert_int_equal(fg_frag_count(len[0], CHUNK), 5);
	struct dp_peer p = peer_of(5000);
	int resolved = 0, completes = 0;
	uint32_t slot = 0;
	for (unsigned line = 0; line < 3; line++) {
		for (unsigned k = 0; k < 5; k++) {
			struct dp_reasm_out o = push(e, &p, (uint16_t)(100 + line), fr[line], len[line], order[k], 1000);
			assert_int_equal(o.disp, DP_RA_TAKEN);
			assert_false(o.events & DP_RA_EV_FRAME);
			if (o.events & DP_RA_EV_COMPLETE) {
				completes++;
				assert_int_equal(o.sequence, 42);
				assert_int_equal(o.stream_id, 0xAF62);
				assert_int_equal(k, 4); /* only the last fragment completes */
			}
			if (o.events & DP_RA_EV_OUTCOME) {
				assert_int_equal(k, 4);
				assert_int_equal(o.seed.token_seq, 42);
				assert_int_equal(o.seed.dst_layer, 2);
				if (line < 2) {
					assert_int_equal(o.res.outcome, FG_O_ACCEPTED);
				} else {
					assert_int_equal(o.res.outcome, FG_O_RESOLVED);
					resolved++;
					slot = o.res.slot;
				}
			}
		}
	}
	assert_int_equal(completes, 3);
	assert_int_equal(resolved, 1);
	expect_three_lines(e, slot);
	/* a duplicate of a finished frame is absorbed by its tombstone */
	struct dp_reasm_out o = push(e, &p, 100, fr[0], len[0], 2, 2000);
	assert_int_equal(o.disp, DP_RA_DUP);
	assert_int_equal(o.events, 0);
	env_free(e);
}

/* The same three frames resolve whatever order their fragments arrive in:
 * in order, the last fragment first, a middle one first. */
static void test_arrival_orders(void **st)
{
	(void)st;
	static const unsigned orders[][5] = {{0, 1, 2, 3, 4}, {4, 2, 3, 1, 0}, {3, 1, 0, 4, 2}};
	for (size_t i = 0; i < FG_ARRAY_LEN(orders); i++) {
		print_message("fragment order %u %u %u %u %u\n", orders[i][0], orders[i][1], orders[i][2],
			      orders[i][3], orders[i][4]);
		resolve_with_orders(orders[i]);
	}
}

static void test_duplicate_fragment(void **st)
{
	(void)st;
	struct env *e = env_seed(7, 1, 1, 1.0f, 0.5f);
	struct dp_peer p = peer_of(1);
	assert_int_equal(push(e, &p, 9, e->fr, e->len, 1, 0).disp, DP_RA_TAKEN);
	assert_int_equal(push(e, &p, 9, e->fr, e->len, 1, 0).disp, DP_RA_DUP);
	assert_int_equal(push(e, &p, 9, e->fr, e->len, 0, 0).disp, DP_RA_TAKEN);
	assert_int_equal(push(e, &p, 9, e->fr, e->len, 0, 0).disp, DP_RA_DUP);
	assert_int_equal(dp_reasm_live(&e->r), 1);
	env_free(e);
}

static void test_validation(void **st)
{
	(void)st;
	struct env *e = env_seed(7, 1, 1, 1.0f, 0.5f); /* 274 bytes: 5 fragments */
	struct dp_peer p = peer_of(2);
	struct dp_reasm_out o;
	struct fg_frag f = {.frame_id = 1, .index = 1, .total = 5, .chunk = e->fr + CHUNK, .chunk_len = CHUNK};

	/* frag_total changing inside a group */
	assert_int_equal(dp_reasm_push(&e->r, &p, &f, &e->ictx, 0, &o), 0);
	assert_int_equal(o.disp, DP_RA_TAKEN);
	f.index = 2;
	f.total = 6;
	assert_int_equal(dp_reasm_push(&e->r, &p, &f, &e->ictx, 0, &o), 0);
	assert_int_equal(o.disp, DP_RA_MALFORMED);
	assert_int_equal(o.reason, FG_R_FRAG_TOTAL_CHANGED);

	/* a non-last fragment shorter than C */
	f.total = 5;
	f.chunk_len = CHUNK - 1;
	assert_int_equal(dp_reasm_push(&e->r, &p, &f, &e->ictx, 0, &o), 0);
	assert_int_equal(o.disp, DP_RA_MALFORMED);
	assert_int_equal(o.reason, FG_R_FRAG_CHUNK_SIZE);
	/* a last fragment longer than C */
	f.index = 4;
	f.chunk_len = CHUNK + 1;
	assert_int_equal(dp_reasm_push(&e->r, &p, &f, &e->ictx, 0, &o), 0);
	assert_int_equal(o.reason, FG_R_FRAG_CHUNK_SIZE);
	/* empty last fragment */
	f.chunk_len = 0;
	assert_int_equal(dp_reasm_push(&e->r, &p, &f, &e->ictx, 0, &o), 0);
	assert_int_equal(o.reason, FG_R_FRAG_CHUNK_SIZE);
	/* index >= total, total 0, total 1 are the caller's, but refused anyway */
	f.index = 5;
	f.chunk_len = 10;
	assert_int_equal(dp_reasm_push(&e->r, &p, &f, &e->ictx, 0, &o), 0);
	assert_int_equal(o.reason, FG_R_FRAG_INDEX_RANGE);
	f.total = 0;
	f.index = 0;
	assert_int_equal(dp_reasm_push(&e->r, &p, &f, &e->ictx, 0, &o), 0);
	assert_int_equal(o.reason, FG_R_FRAG_TOTAL_ZERO);

	/* last fragment's size disagrees with the header (checked at fragment 0) */
	struct dp_peer q = peer_of(3);
	f = (struct fg_frag){.frame_id = 2, .index = 4, .total = 5, .chunk = e->fr + 4 * CHUNK, .chunk_len = 17};
	assert_int_equal(dp_reasm_push(&e->r, &q, &f, &e->ictx, 0, &o), 0);
	assert_int_equal(o.disp, DP_RA_TAKEN);
	o = push(e, &q, 2, e->fr, e->len, 0, 0);
	assert_int_equal(o.disp, DP_RA_MALFORMED);
	assert_int_equal(o.reason, FG_R_FRAG_CHUNK_SIZE);
	for (unsigned i = 1; i < 4; i++) {
		o = push(e, &q, 2, e->fr, e->len, i, 0);
		assert_int_equal(o.disp, DP_RA_DISCARDED);
		assert_false(o.events & DP_RA_EV_COMPLETE); /* a malformed group is never ACKed */
	}

	/* the header says 6 fragments are needed but the group says 5 */
	uint8_t big[4096];
	memcpy(big, e->fr, e->len);
	fg_put_be24(big + 7, (uint32_t)(e->len - 10 + CHUNK)); /* length + C */
	struct dp_peer r = peer_of(4);
	o = push(e, &r, 3, big, e->len, 0, 0);
	assert_int_equal(o.disp, DP_RA_MALFORMED);
	assert_int_equal(o.reason, FG_R_FRAG_CHUNK_SIZE);

	/* nothing of the bad groups reached the slot */
	struct fg_slot_info info;
	if (fg_slot_lookup(&e->slots, 7, 1, &info) == 0)
		assert_int_equal(info.landed, 0);
	env_free(e);
}

static void test_remote_shard_buffer(void **st)
{
	(void)st;
	/* two shards; find a token owned by shard 1 while this table is shard 0 */
	struct env *e = env_new(16, 2, 0, 4096);
	uint32_t token = 0;
	while (fg_shard_of(token, 1, LAYERS, 2) != 1)
		token++;
	uint8_t fr[4096];
	uint32_t len = make_seed(e, fr, token, 1, 3, 0, 2.0f, 0.25f);
	struct dp_peer p = peer_of(6);
	const unsigned order[5] = {2, 0, 4, 1, 3};
	for (unsigned k = 0; k < 5; k++) {
		struct dp_reasm_out o = push(e, &p, 77, fr, len, order[k], 0);
		assert_int_equal(o.disp, DP_RA_TAKEN);
		assert_false(o.events & DP_RA_EV_OUTCOME);
		if (k < 4) {
			assert_int_equal(o.events, 0);
			continue;
		}
		assert_int_equal(o.events, DP_RA_EV_FRAME | DP_RA_EV_COMPLETE);
		assert_int_equal(o.len, len);
		assert_memory_equal(o.buf, fr, len);
		assert_int_equal(o.sequence, token);
		/* fragment 0's decode comes with the frame (decoded once): the
		 * header and the class the whole-frame decode would give */
		struct fg_hdr h;
		assert_int_equal(fg_hdr_decode(fr, len, FG_TRANSPORT_MESSAGE, &h), FG_HDR_LEN);
		assert_int_equal(o.hdr.stream_id, h.stream_id);
		assert_int_equal(o.hdr.sequence, h.sequence);
		assert_int_equal(o.hdr.length, h.length);
		assert_int_equal(o.hdr.flags, h.flags);
		struct fg_ingest_class c;
		fg_ingest_classify(&e->ictx, h.stream_id, &c);
		assert_int_equal(o.cls.rc, 0);
		assert_int_equal(o.cls.band, c.band);
		assert_int_equal(o.cls.layer, c.layer);
		assert_int_equal(o.cls.layer, 1);
		assert_int_equal(o.binding, 0); /* unbound */
		buf_put(e, o.buf); /* the caller owns it now */
	}
	assert_int_equal(e->slots.opened, 0); /* never touched the local shard */
	env_free(e);
}

static void test_dup_pending(void **st)
{
	(void)st;
	struct env *e = env_new(16, 1, 0, 4096);
	uint8_t fr[4096], other[4096];
	uint32_t len = make_seed(e, fr, 5, 0, 1, 0, 1.0f, 1.0f);
	(void)make_seed(e, other, 5, 0, 1, 0, 1.0f, 2.0f);
	struct dp_peer p = peer_of(7);
	for (unsigned k = 0; k < 5; k++)
		(void)push(e, &p, 1, fr, len, k, 0);
	/* the same line again under a new frame_id: begin says DUP_PENDING */
	struct dp_reasm_out o;
	o = push_range(e, &p, 2, fr, len, 0, 5, 0);
	assert_int_equal(o.events, DP_RA_EV_FRAME | DP_RA_EV_COMPLETE);
	struct fg_frame f;
	assert_int_equal(fg_frame_decode(o.buf, o.len, FG_TRANSPORT_MESSAGE, &f), (ssize_t)len);
	struct fg_ingest_result ir;
	assert_int_equal(fg_ingest_frame(&e->slots, &e->ictx, &f, 0, &ir), 0);
	assert_int_equal(ir.slot.outcome, FG_O_DUPLICATE);
	buf_put(e, o.buf);
	/* a different body on the same line: conflict */
	for (unsigned k = 0; k < 5; k++)
		o = push(e, &p, 3, other, len, 4 - k, 0);
	assert_int_equal(o.events, DP_RA_EV_FRAME | DP_RA_EV_COMPLETE);
	assert_int_equal(fg_frame_decode(o.buf, o.len, FG_TRANSPORT_MESSAGE, &f), (ssize_t)len);
	assert_int_equal(fg_ingest_frame(&e->slots, &e->ictx, &f, 0, &ir), 0);
	assert_int_equal(ir.slot.outcome, FG_O_CONFLICT);
	buf_put(e, o.buf);
	env_free(e);
}

static void test_timeout_aborts_attempt(void **st)
{
	(void)st;
	struct dp_peer p = peer_of(8);
	/* fragments 0..3 land in the slot, fragment 4 is lost */
	struct env *e = env_seed_partial(&p, 50, 11, 3, 1, 4.0f);
	assert_int_equal(dp_reasm_expire(&e->r, 999999, 100), 0);
	assert_int_equal(dp_reasm_expire(&e->r, 1000000, 100), 1);
	assert_int_equal(dp_reasm_live(&e->r), 0);
	/* the late fragment starts a new group that also times out, alone */
	assert_int_equal(push(e, &p, 50, e->fr, e->len, 4, 1000001).disp, DP_RA_TAKEN);
	assert_int_equal(e->bufs_out, 1); /* held */
	assert_int_equal(dp_reasm_expire(&e->r, 2000001, 100), 1);
	assert_int_equal(e->bufs_out, 0);
	/* the sender resends under a new frame_id: the whole body lands */
	push_accepted(e, &p, 51, e->fr, e->len, 0, 3000000);
	struct fg_slot_info info;
	assert_int_equal(fg_slot_lookup(&e->slots, 11, 3, &info), 0);
	assert_int_equal(info.landed, 1u << 1);
	env_free(e);
}

static void test_superseded_attempt_not_acked(void **st)
{
	(void)st;
	struct dp_peer p = peer_of(13);
	/* attempt A: fragments 0..3, the last one is late */
	struct env *e = env_seed_partial(&p, 60, 21, 2, 3, 1.0f);
	/* the sender resends under frame_id 61: begin supersedes A */
	struct dp_reasm_out o = push(e, &p, 61, e->fr, e->len, 0, 10);
	assert_int_equal(o.events, 0);
	/* A's late fragment: STALE, judged, and A is never ACKed */
	o = push(e, &p, 60, e->fr, e->len, 4, 20);
	expect_outcome(&o, FG_O_STALE);
	assert_false(o.events & DP_RA_EV_COMPLETE);
	/* B completes: accepted and ACKed */
	push_accepted(e, &p, 61, e->fr, e->len, 1, 30);
	env_free(e);
}

/* The slot ends under a frame in flight: a flush (model epoch change)
 * makes its next fragment STALE, judged and never ACKed; an expiry makes it
 * EXPIRED, judged, ACKed once complete (it was received). Either way the
 * key's next frame is placed and accepted. */
static void test_slot_ends_mid_frame(void **st)
{
	(void)st;
	struct dp_peer p = peer_of(14);
	struct env *e = env_seed(31, 1, 3, 2.0f, 1.0f);
	push_taken(e, &p, 70, e->fr, e->len, 0, 3, 0);
	assert_int_equal(fg_slots_flush(&e->slots), 1);
	struct dp_reasm_out o = push(e, &p, 70, e->fr, e->len, 3, 10);
	expect_outcome(&o, FG_O_STALE);
	assert_false(o.events & DP_RA_EV_COMPLETE);
	o = push(e, &p, 70, e->fr, e->len, 4, 11);
	assert_int_equal(o.disp, DP_RA_DISCARDED);
	assert_int_equal(o.events, 0);
	push_accepted(e, &p, 71, e->fr, e->len, 0, 20);

	struct env *x = env_seed(32, 2, 1, 5.0f, 1.0f);
	push_taken(x, &p, 80, x->fr, x->len, 0, 2, 0);
	push_taken(x, &p, 80, x->fr, x->len, 3, 4, 0);
	struct fg_slot_expired ex[4];
	assert_int_equal(fg_slots_expire(&x->slots, 1000000000ull, ex, 4), 1);
	o = push(x, &p, 80, x->fr, x->len, 2, 1000000001ull);
	expect_outcome(&o, FG_O_EXPIRED);
	assert_false(o.events & DP_RA_EV_COMPLETE);
	o = push(x, &p, 80, x->fr, x->len, 4, 1000000002ull);
	assert_int_equal(o.disp, DP_RA_DISCARDED);
	assert_int_equal(o.events, DP_RA_EV_COMPLETE);
	env_free(e);
	env_free(x);
}

/* The burst path (dp_reasm_find, dp_reasm_land_run, dp_reasm_push_hinted)
 * gives the same outcomes, ACKs and bytes as dp_reasm_push: every arrival
 * order, superseded attempts, timeouts, slots that end mid-frame, and
 * land takes the chunks of a placing context. */
static void test_burst_path(void **st)
{
	via_land = true;
	landed = 0;
	test_arrival_orders(st);
	/* every chunk after its fragment 0, three lines an order: 4 + 0 + 2 */
	assert_int_equal(landed, 3 * (4 + 0 + 2));
	test_superseded_attempt_not_acked(st);
	test_timeout_aborts_attempt(st);
	test_duplicate_fragment(st);
	unsigned before = landed;
	test_slot_ends_mid_frame(st);
	assert_true(landed > before);
	/* frames assembled in a buffer: after fragment 0, 4 1 3 land */
	before = landed;
	test_remote_shard_buffer(st);
	assert_int_equal(landed, before + 3);
	test_dup_pending(st);
	via_land = false;
}

/* Fragment idx of frame[0..len) under frame_id fid, as fg_frag_decode gives it. */
static struct fg_frag frag_of(const uint8_t *frame, uint32_t len, uint16_t fid, unsigned idx)
{
	struct fg_frag f = {.frame_id = fid, .index = (uint8_t)idx, .total = (uint8_t)fg_frag_count(len, CHUNK)};
	f.chunk = frame + idx * CHUNK;
	f.chunk_len = (len - idx * CHUNK) < CHUNK ? len - idx * CHUNK : CHUNK;
	return f;
}

/* A hint that found no context goes stale once the frame is given one
 * (here by dp_reasm_push, as a datagram between the lookup and the push
 * does): the push with that hint finds the frame's group, never gives it
 * a second context; another frame's stale hint still makes its group. */
static void test_hint_without_context(void **st)
{
	(void)st;
	struct env *e = env_new(16, 1, 0, 4096);
	uint8_t fr[3][4096];
	uint32_t len[3];
	make_three_lines(e, fr, len);
	struct dp_peer p = peer_of(5300), q = peer_of(5301);
	uint32_t hash = dp_peer_hash(&p, 0), qhash = dp_peer_hash(&q, 0);
	struct dp_reasm_out out;
	struct dp_ra_hint h, hq;
	/* both lookups before any push, as the burst path makes them */
	dp_reasm_find(&e->r, &p, hash, 300, &h);
	dp_reasm_find(&e->r, &q, qhash, 301, &hq);
	assert_int_equal(h.ctx, DP_RA_HINT_NONE);
	struct fg_frag f0 = frag_of(fr[0], len[0], 300, 0), f1 = frag_of(fr[0], len[0], 300, 1);
	assert_int_equal(dp_reasm_push(&e->r, &p, &f0, &e->ictx, 10, &out), 0);
	assert_int_equal(out.disp, DP_RA_TAKEN);
	assert_int_equal(dp_reasm_live(&e->r), 1);
	/* the stale hint: fragment 0 again is a duplicate of the same group,
	 * fragment 1 lands in it */
	struct dp_ra_hint stale = h;
	assert_int_equal(dp_reasm_push_hinted(&e->r, &p, hash, &stale, &f0, &e->ictx, 11, &out), 0);
	assert_int_equal(out.disp, DP_RA_DUP);
	assert_int_equal(dp_reasm_live(&e->r), 1);
	stale = h;
	assert_int_equal(dp_reasm_push_hinted(&e->r, &p, hash, &stale, &f1, &e->ictx, 11, &out), 0);
	assert_int_equal(out.disp, DP_RA_TAKEN);
	assert_int_equal(dp_reasm_live(&e->r), 1);
	/* q's hint is as stale: its frame still has none, a group is made */
	struct fg_frag g0 = frag_of(fr[1], len[1], 301, 0);
	assert_int_equal(dp_reasm_push_hinted(&e->r, &q, qhash, &hq, &g0, &e->ictx, 12, &out), 0);
	assert_int_equal(out.disp, DP_RA_TAKEN);
	assert_int_equal(dp_reasm_live(&e->r), 2);
	/* a fresh lookup with nothing taken since: the push makes the group */
	struct fg_frag k0 = frag_of(fr[2], len[2], 302, 0);
	dp_reasm_find(&e->r, &p, hash, 302, &h);
	assert_int_equal(dp_reasm_push_hinted(&e->r, &p, hash, &h, &k0, &e->ictx, 13, &out), 0);
	assert_int_equal(out.disp, DP_RA_TAKEN);
	assert_int_equal(dp_reasm_live(&e->r), 3);
	/* and every fragment of the three frames completes each group once */
	for (unsigned line = 0; line < 3; line++) {
		uint16_t fid = (uint16_t)(300 + line);
		const struct dp_peer *pp = line == 1 ? &q : &p;
		for (unsigned i = line == 0 ? 2 : 1; i < fg_frag_count(len[line], CHUNK); i++) {
			struct fg_frag f = frag_of(fr[line], len[line], fid, i);
			assert_int_equal(dp_reasm_push(&e->r, pp, &f, &e->ictx, 14, &out), 0);
			assert_int_equal(out.disp, DP_RA_TAKEN);
		}
		assert_true(out.events & DP_RA_EV_COMPLETE);
		expect_outcome(&out, line < 2 ? FG_O_ACCEPTED : FG_O_RESOLVED);
	}
	env_free(e);
}

/* dp_reasm_land_run takes a frame's fragments as one run: it stops before
 * a fragment it does not take (a repeat, another count for the frame, a
 * wrong length) with nothing changed, and after the chunk that completes
 * the line, whose outcome and ACK it reports; the three lines resolve
 * bit-exactly, as pushed one by one. A frame assembled in a buffer takes
 * the same runs and is handed out whole, byte for byte. A run on an
 * attempt no longer current ends at its first chunk, judged STALE, never
 * ACKed. */
static void test_land_run(void **st)
{
	(void)st;
	struct env *e = env_new(16, 1, 0, 4096);
	uint8_t fr[3][4096];
	uint32_t len[3];
	make_three_lines(e, fr, len);
	struct dp_peer p = peer_of(5100);
	uint32_t hash = dp_peer_hash(&p, 0);
	struct dp_reasm_out out;
	struct dp_ra_hint h;
	uint32_t slot = 0;
	for (unsigned line = 0; line < 3; line++) {
		uint16_t fid = (uint16_t)(200 + line);
		const uint8_t *b = fr[line];
		uint32_t n = len[line];
		/* no context yet: fragment 0 is not the run's to take */
		struct fg_frag f0 = frag_of(b, n, fid, 0);
		dp_reasm_find(&e->r, &p, hash, fid, &h);
		assert_int_equal(h.body_len, 0);
		assert_int_equal(dp_reasm_land_run(&e->r, &h, &f0, 1, 10, &out), 0);
		assert_int_equal(dp_reasm_push_hinted(&e->r, &p, hash, &h, &f0, &e->ictx, 10, &out), 0);
		assert_int_equal(out.disp, DP_RA_TAKEN);
		/* the context places into its slot now: the hint names the body */
		dp_reasm_find(&e->r, &p, hash, fid, &h);
		assert_int_equal(h.body_len, HIDDEN * 4);
		struct fg_frag run[5] = {frag_of(b, n, fid, 1), frag_of(b, n, fid, 2), frag_of(b, n, fid, 2),
					 frag_of(b, n, fid, 3), frag_of(b, n, fid, 4)};
		assert_int_equal(dp_reasm_land_run(&e->r, &h, run, 5, 11, &out), 2);
		assert_int_equal(out.disp, DP_RA_TAKEN);
		assert_int_equal(out.events, 0);
		/* the repeat: not taken, pushed: a duplicate */
		assert_int_equal(dp_reasm_land_run(&e->r, &h, &run[2], 3, 12, &out), 0);
		assert_int_equal(dp_reasm_push_hinted(&e->r, &p, hash, &h, &run[2], &e->ictx, 12, &out), 0);
		assert_int_equal(out.disp, DP_RA_DUP);
		/* another count for the frame, a short middle chunk: not taken */
		struct fg_frag bad = run[3];
		bad.total++;
		assert_int_equal(dp_reasm_land_run(&e->r, &h, &bad, 1, 13, &out), 0);
		bad = run[3];
		bad.chunk_len--;
		assert_int_equal(dp_reasm_land_run(&e->r, &h, &bad, 1, 13, &out), 0);
		/* a middle chunk of the tail's length, a last chunk longer or
		 * shorter than the tail: not taken either */
		assert_true(run[4].chunk_len < run[3].chunk_len);
		bad = run[3];
		bad.chunk_len = run[4].chunk_len;
		assert_int_equal(dp_reasm_land_run(&e->r, &h, &bad, 1, 13, &out), 0);
		bad = run[4];
		bad.chunk_len = run[3].chunk_len;
		assert_int_equal(dp_reasm_land_run(&e->r, &h, &bad, 1, 13, &out), 0);
		bad = run[4];
		bad.chunk_len--;
		assert_int_equal(dp_reasm_land_run(&e->r, &h, &bad, 1, 13, &out), 0);
		/* the rest in one run: the last chunk completes the line */
		assert_int_equal(dp_reasm_land_run(&e->r, &h, &run[3], 2, 14, &out), 2);
		assert_int_equal(out.disp, DP_RA_TAKEN);
		assert_true(out.events & DP_RA_EV_COMPLETE);
		expect_outcome(&out, line < 2 ? FG_O_ACCEPTED : FG_O_RESOLVED);
		assert_int_equal(out.sequence, 42);
		slot = out.res.slot;
		/* the frame is done: its hint places nothing more */
		assert_int_equal(dp_reasm_land_run(&e->r, &h, &run[3], 2, 15, &out), 0);
	}
	expect_three_lines(e, slot);
	env_free(e);

	/* a frame of the other shard, assembled in a buffer: the same runs,
	 * the last chunk hands the whole frame out */
	e = env_new(16, 2, 0, 4096);
	uint32_t token = 0;
	while (fg_shard_of(token, 1, LAYERS, 2) != 1)
		token++;
	uint8_t fb[4096];
	uint32_t lb = make_seed(e, fb, token, 1, 3, 0, 2.0f, 0.25f);
	struct fg_frag b0 = frag_of(fb, lb, 90, 0);
	assert_int_equal(dp_reasm_push(&e->r, &p, &b0, &e->ictx, 0, &out), 0);
	assert_int_equal(out.events, 0);
	dp_reasm_find(&e->r, &p, hash, 90, &h);
	assert_int_equal(h.body_len, lb - DP_RA_SEED_HDR);
	struct fg_frag brun[5] = {frag_of(fb, lb, 90, 1), frag_of(fb, lb, 90, 2), frag_of(fb, lb, 90, 2),
				  frag_of(fb, lb, 90, 3), frag_of(fb, lb, 90, 4)};
	assert_int_equal(dp_reasm_land_run(&e->r, &h, brun, 5, 1, &out), 2);
	assert_int_equal(out.events, 0);
	assert_int_equal(dp_reasm_land_run(&e->r, &h, &brun[2], 3, 2, &out), 0);
	struct fg_frag bad = brun[4];
	bad.chunk_len--; /* the last chunk disagrees with the header's length */
	assert_int_equal(dp_reasm_land_run(&e->r, &h, &bad, 1, 2, &out), 0);
	assert_int_equal(dp_reasm_land_run(&e->r, &h, &brun[3], 2, 3, &out), 2);
	assert_int_equal(out.disp, DP_RA_TAKEN);
	assert_int_equal(out.events, DP_RA_EV_FRAME | DP_RA_EV_COMPLETE);
	assert_int_equal(out.len, lb);
	assert_memory_equal(out.buf, fb, lb);
	assert_int_equal(out.sequence, token);
	buf_put(e, out.buf); /* the caller owns it now */
	assert_int_equal(dp_reasm_land_run(&e->r, &h, &brun[4], 1, 4, &out), 0);
	env_free(e);

	/* the slot flushed under a frame in flight: the run stops at its first
	 * chunk, STALE, and the frame is never ACKed */
	e = env_seed(31, 1, 3, 2.0f, 1.0f);
	struct fg_frag f0 = frag_of(e->fr, e->len, 70, 0);
	assert_int_equal(dp_reasm_push(&e->r, &p, &f0, &e->ictx, 0, &out), 0);
	assert_int_equal(fg_slots_flush(&e->slots), 1);
	struct fg_frag run[4] = {frag_of(e->fr, e->len, 70, 1), frag_of(e->fr, e->len, 70, 2),
				 frag_of(e->fr, e->len, 70, 3), frag_of(e->fr, e->len, 70, 4)};
	dp_reasm_find(&e->r, &p, hash, 70, &h);
	assert_int_equal(dp_reasm_land_run(&e->r, &h, run, 4, 10, &out), 1);
	expect_outcome(&out, FG_O_STALE);
	assert_false(out.events & DP_RA_EV_COMPLETE);
	assert_int_equal(dp_reasm_land_run(&e->r, &h, &run[1], 3, 11, &out), 0);
	for (unsigned k = 1; k < 4; k++) {
		assert_int_equal(dp_reasm_push_hinted(&e->r, &p, hash, &h, &run[k], &e->ictx, 12, &out), 0);
		assert_int_equal(out.disp, DP_RA_DISCARDED);
		assert_int_equal(out.events, 0);
	}
	env_free(e);
}

/* What one fragment's placement said, to compare two placements. */
struct said {
	enum dp_ra_disp disp;
	unsigned events;
	enum fg_outcome outcome; /* with EV_OUTCOME */
	uint32_t sequence;       /* with EV_COMPLETE */
	uint32_t slot;           /* with EV_OUTCOME */
	uint32_t len;            /* with EV_FRAME: the frame, compared byte for byte */
	uint8_t frame[4096];
};

static void said_of(struct env *e, const struct dp_reasm_out *o, struct said *w)
{
	memset(w, 0, sizeof(*w));
	w->disp = o->disp;
	w->events = o->events;
	if (o->events & DP_RA_EV_OUTCOME) {
		w->outcome = o->res.outcome;
		w->slot = o->res.slot;
	}
	if (o->events & DP_RA_EV_COMPLETE)
		w->sequence = o->sequence;
	if (o->events & DP_RA_EV_FRAME) {
		w->len = o->len;
		memcpy(w->frame, o->buf, o->len);
		buf_put(e, o->buf);
	}
}

/* The arrivals of test_push_run: runs of one frame each (frame `fr` of
 * three, frame id 400 + fr, fragment indexes). */
struct arrival {
	unsigned fr, n;
	uint8_t idx[6];
};

/* Place the runs as dp_shard_run does (a run from fragment 0 not looked
 * up; dp_reasm_land_run, else dp_reasm_push_run, whose fragments before
 * the last it consumed only landed), with the frame ids as the burst
 * keeps them (the wire's byte order: not read); *took counts what
 * dp_reasm_push_run consumed past its first fragment. */
static void place_runs(struct env *e, const struct dp_peer *p, uint8_t fr[3][4096], const uint32_t len[3],
		       const struct arrival *a, unsigned na, struct said *w, unsigned *took)
{
	uint32_t hash = dp_peer_hash(p, 0);
	*took = 0;
	for (unsigned r = 0; r < na; r++) {
		uint16_t fid = (uint16_t)(400 + a[r].fr);
		struct fg_frag f[6];
		for (unsigned k = 0; k < a[r].n; k++) {
			f[k] = frag_of(fr[a[r].fr], len[a[r].fr], fid, a[r].idx[k]);
			f[k].frame_id = __builtin_bswap16(fid);
		}
		struct dp_ra_hint h = {.ctx = DP_RA_HINT_NONE};
		if (a[r].idx[0] != 0)
			dp_reasm_find(&e->r, p, hash, fid, &h);
		for (unsigned i = 0; i < a[r].n;) {
			struct dp_reasm_out out;
			unsigned k = h.ctx == DP_RA_HINT_NONE ? 0 : dp_reasm_land_run(&e->r, &h, &f[i], a[r].n - i, 10, &out);
			if (!k) {
				k = dp_reasm_push_run(&e->r, p, hash, &h, &f[i], fid, a[r].n - i, &e->ictx, 10, &out);
				assert_true(k >= 1 && k <= a[r].n - i);
				*took += k - 1;
			}
			for (unsigned j = 0; j + 1 < k; j++, w++)
				said_of(e, &(struct dp_reasm_out){.disp = DP_RA_TAKEN}, w);
			said_of(e, &out, w++);
			i += k;
		}
	}
}

/* The same arrivals one fragment at a time (dp_reasm_push). */
static void place_one_by_one(struct env *e, const struct dp_peer *p, uint8_t fr[3][4096], const uint32_t len[3],
			     const struct arrival *a, unsigned na, struct said *w)
{
	for (unsigned r = 0; r < na; r++)
		for (unsigned k = 0; k < a[r].n; k++, w++) {
			struct dp_reasm_out out;
			struct fg_frag f = frag_of(fr[a[r].fr], len[a[r].fr], (uint16_t)(400 + a[r].fr), a[r].idx[k]);
			assert_int_equal(dp_reasm_push(&e->r, p, &f, &e->ictx, 10, &out), 0);
			said_of(e, &out, w);
		}
}

/* dp_reasm_push_run places a frame's first fragment and the run after it
 * in one call, as dp_reasm_push gives them one by one: every disposition,
 * outcome and ACK, the slot's bytes and the contexts in use. The runs: a
 * whole frame (one call takes all five); a frame whose run holds a repeat
 * (the call stops before it, the repeat is a duplicate, the rest lands);
 * a frame whose fragment 3 came first (held; fragment 0 drains it and
 * the run goes on, the seed resolves); a frame of an unexpected line
 * (fragment 0 judged: the call takes it alone, the rest is discarded and
 * ACKed); fragment 0 again for a finished frame (a duplicate, alone); and
 * on a two-shard table a frame assembled in a buffer, handed out whole. */
static void test_push_run(void **st)
{
	(void)st;
	static const struct arrival arr[] = {
		{0, 5, {0, 1, 2, 3, 4}}, {1, 6, {0, 1, 1, 2, 3, 4}}, {2, 1, {3}}, {2, 4, {0, 1, 2, 4}},
		{0, 2, {0, 1}},
	};
	static const struct arrival unexpected[] = {{0, 5, {0, 1, 2, 3, 4}}};
	static struct said one[32], run[32];
	uint8_t fr[3][4096];
	uint32_t len[3];
	struct dp_peer p = peer_of(5400);
	unsigned took, nw = 5 + 6 + 1 + 4 + 2;
	for (unsigned pass = 0; pass < 3; pass++) {
		/* 0: the seed's three lines; 1: a line the rule does not expect;
		 * 2: another shard's frame, in a buffer */
		struct env *a = env_new(16, pass == 2 ? 2 : 1, 0, 4096), *b = env_new(16, pass == 2 ? 2 : 1, 0, 4096);
		const struct arrival *ar = pass == 1 ? unexpected : arr;
		unsigned na = pass == 1 ? 1 : 5, n = pass == 1 ? 5 : nw;
		if (pass == 0) {
			make_three_lines(a, fr, len);
		} else {
			uint32_t token = 0;
			while (pass == 2 && fg_shard_of(token, 1, LAYERS, 2) != 1)
				token++;
			for (unsigned l = 0; l < 3; l++)
				len[l] = make_seed(a, fr[l], token, 1, pass == 1 ? 2 : (uint8_t)(1 + 2 * l), 0, 1.0f + l, 0.5f);
		}
		place_one_by_one(a, &p, fr, len, ar, na, one);
		place_runs(b, &p, fr, len, ar, na, run, &took);
		for (unsigned k = 0; k < n; k++) {
			assert_int_equal(run[k].disp, one[k].disp);
			assert_int_equal(run[k].events, one[k].events);
			assert_int_equal(run[k].outcome, one[k].outcome);
			assert_int_equal(run[k].sequence, one[k].sequence);
			assert_int_equal(run[k].slot, one[k].slot);
			assert_int_equal(run[k].len, one[k].len);
			assert_memory_equal(run[k].frame, one[k].frame, run[k].len);
		}
		assert_int_equal(dp_reasm_live(&b->r), dp_reasm_live(&a->r));
		assert_int_equal(b->slots.opened, a->slots.opened);
		if (pass == 0) {
			/* 4 after the first fragment of the whole frame, 1 before
			 * the repeat, 3 after the held fragment's fragment 0 */
			assert_int_equal(took, 4 + 1 + 3);
			assert_int_equal(one[15].outcome, FG_O_RESOLVED);
			expect_three_lines(a, one[15].slot);
			expect_three_lines(b, run[15].slot);
		} else if (pass == 1) {
			assert_int_equal(took, 0);
			assert_int_equal(one[0].outcome, FG_O_UNEXPECTED_LINE);
			assert_int_equal(one[4].disp, DP_RA_DISCARDED);
			assert_true(one[4].events & DP_RA_EV_COMPLETE);
		} else {
			assert_int_equal(took, 4 + 1 + 3);
			assert_true(run[4].events & DP_RA_EV_FRAME);
			assert_int_equal(b->slots.opened, 0);
		}
		env_free(a);
		env_free(b);
	}
}

/* A multi-fragment frame refused no_slot at fragment 0 (another key's open
 * slot holds its index) is answered no_slot and never ACKed; once that slot
 * is freed the sender's resend is placed and ACKed. */
static void test_no_slot_not_acked(void **st)
{
	(void)st;
	struct env *e = env_seed(21, 2, 3, 1.0f, 1.0f); /* A */
	uint8_t fb[4096];
	uint32_t lb = make_seed(e, fb, 37, 2, 3, 0, 2.0f, 1.0f); /* B: (37 * 4 + 2) % 64 == (21 * 4 + 2) % 64 */
	struct dp_peer spoof = peer_of(66), fleet = peer_of(67);
	/* fragment 0 only of A: its slot opens and stays open */
	assert_int_equal(push(e, &spoof, 70, e->fr, e->len, 0, 0).disp, DP_RA_TAKEN);
	struct dp_reasm_out o = push(e, &fleet, 80, fb, lb, 0, 10);
	expect_outcome(&o, FG_O_NO_SLOT);
	for (unsigned k = 1; k < 5; k++) {
		o = push(e, &fleet, 80, fb, lb, k, 20);
		assert_false(o.events & DP_RA_EV_COMPLETE);
	}
	/* A times out: its slot is freed; B's resend is placed and ACKed */
	assert_true(dp_reasm_expire(&e->r, 2000000, 64) >= 1);
	push_accepted(e, &fleet, 81, fb, lb, 0, 2000010);
	env_free(e);
}

static void test_overflow_and_recycling(void **st)
{
	(void)st;
	struct env *e = env_new(2, 1, 0, 4096);
	uint8_t fr[4096];
	uint32_t len = make_seed(e, fr, 1, 0, 1, 0, 1.0f, 1.0f);
	struct dp_peer p = peer_of(9);
	assert_int_equal(push(e, &p, 1, fr, len, 1, 0).disp, DP_RA_TAKEN);
	assert_int_equal(push(e, &p, 2, fr, len, 1, 0).disp, DP_RA_TAKEN);
	assert_int_equal(push(e, &p, 3, fr, len, 1, 0).disp, DP_RA_OVERFLOW);
	/* finish group 1: it becomes a tombstone, which a new group may recycle */
	for (unsigned k = 0; k < 5; k++)
		if (k != 1)
			(void)push(e, &p, 1, fr, len, k, 0);
	assert_int_equal(push(e, &p, 3, fr, len, 1, 0).disp, DP_RA_TAKEN);
	assert_int_equal(e->r.recycled, 1);
	assert_int_equal(dp_reasm_live(&e->r), 2);
	env_free(e);
}

/* Tombstones live in completion order through many more groups than
 * the table holds (the ring of tombstones wraps): each new group past
 * the table's size takes the oldest tombstone, the newest ones still
 * absorb their late fragments as duplicates, and expiry frees them
 * oldest first. */
static void test_tombstones_oldest_first(void **st)
{
	(void)st;
	struct env *e = env_new(3, 1, 0, 4096);
	uint8_t fr[4096];
	struct dp_peer p = peer_of(9);
	const uint64_t ms = 1000000; /* the table's timeout */
	uint32_t len = 0;
	for (unsigned g = 0; g < 11; g++) {
		len = make_seed(e, fr, 100 + g, 0, 1, 0, 1.0f, 1.0f);
		unsigned total = fg_frag_count(len, CHUNK);
		struct dp_reasm_out o = {0};
		for (unsigned k = 0; k < total; k++) {
			o = push(e, &p, (uint16_t)(10 + g), fr, len, k, g * ms);
			assert_int_equal(o.disp, DP_RA_TAKEN);
		}
		assert_true(o.events & DP_RA_EV_COMPLETE);
		assert_int_equal(e->r.recycled, g >= 3 ? g - 2 : 0);
		assert_int_equal(e->r.n_done, g < 3 ? g + 1 : 3);
		assert_int_equal(dp_reasm_live(&e->r), g < 3 ? g + 1 : 3);
	}
	/* groups 8, 9, 10 are the tombstones */
	for (unsigned g = 8; g < 11; g++)
		assert_int_equal(push(e, &p, (uint16_t)(10 + g), fr, len, 1, 10 * ms).disp, DP_RA_DUP);
	assert_int_equal(e->r.recycled, 8);
	/* group 8's lifetime ended (completed at 8 ms), group 9's not */
	assert_int_equal(dp_reasm_expire(&e->r, 9 * ms, 100), 0);
	assert_int_equal(e->r.n_done, 2);
	/* its late fragment now opens a group again (held); 9 and 10 still absorb */
	assert_int_equal(push(e, &p, 18, fr, len, 1, 9 * ms).disp, DP_RA_TAKEN);
	assert_int_equal(e->r.n_active, 1);
	assert_int_equal(push(e, &p, 19, fr, len, 1, 9 * ms).disp, DP_RA_DUP);
	assert_int_equal(push(e, &p, 20, fr, len, 1, 9 * ms).disp, DP_RA_DUP);
	/* at 10 ms the held group (incomplete: counted) and 9's tombstone
	 * end, 10's stays; at 11 ms it ends too */
	assert_int_equal(dp_reasm_expire(&e->r, 10 * ms, 100), 1);
	assert_int_equal(e->r.n_active, 0);
	assert_int_equal(e->r.n_done, 1);
	assert_int_equal(push(e, &p, 20, fr, len, 1, 10 * ms).disp, DP_RA_DUP);
	assert_int_equal(dp_reasm_expire(&e->r, 11 * ms, 100), 0);
	assert_int_equal(dp_reasm_live(&e->r), 0);
	env_free(e);
}

/* A table full of one address's incomplete groups: that address is refused,
 * another address's new group evicts the oldest (reported as a timeout, its
 * slot attempt aborted) and completes. */
static void test_full_table_evicts_for_other_source(void **st)
{
	(void)st;
	struct env *e = env_new(2, 1, 0, 4096);
	uint8_t fl[4096], good[4096];
	uint32_t flen = make_seed(e, fl, 5, 1, 1, 0, 1.0f, 1.0f);
	uint32_t glen = make_seed(e, good, 6, 2, 3, 0, 2.0f, 0.5f);
	struct dp_peer a = peer_of(100), a2 = peer_of(101), b = peer_of(200);
	b.addr[3] = 8; /* another station */
	/* fragment 0 opens a slot attempt: the evicted group must abort it */
	assert_int_equal(push(e, &a, 1, fl, flen, 0, 0).disp, DP_RA_TAKEN);
	assert_int_equal(push(e, &a2, 2, fl, flen, 1, 10).disp, DP_RA_TAKEN);
	/* same address, any port: refused, nothing evicted */
	assert_int_equal(push(e, &a, 3, fl, flen, 1, 20).disp, DP_RA_OVERFLOW);
	assert_int_equal(e->r.evicted, 0);
	/* another address: the oldest group (a, 1) gives way */
	push_accepted(e, &b, 7, good, glen, 0, 30);
	assert_int_equal(e->r.evicted, 1);
	/* the eviction is reported once, with the timeouts */
	assert_int_equal(dp_reasm_expire(&e->r, 31, 100), 1);
	assert_int_equal(dp_reasm_expire(&e->r, 32, 100), 0);
	assert_int_equal(e->r.timeouts, 1);
	/* (a, 1)'s slot attempt was aborted: a resend of its body lands whole */
	push_accepted(e, &a, 9, fl, flen, 0, 1000000000);
	env_free(e);
}

static void test_line_disabled_and_bad_prefix(void **st)
{
	(void)st;
	struct env *e = env_seed(12, 0, 3, 1.0f, 1.0f);
	struct dp_peer p = peer_of(10);
	e->ictx.lines = facts_all(1) & ~((fg_linefacts)3 << 6); /* line 3 disabled */
	struct dp_reasm_out o = push(e, &p, 1, e->fr, e->len, 0, 0);
	expect_outcome(&o, FG_O_LINE_DISABLED);
	push_rest_discarded(e, &p, 1, e->fr, e->len); /* still ACKed: it was received */

	e->ictx.lines = facts_all(1);
	e->len = make_seed(e, e->fr, 13, 0, 1, 0, 1.0f, 1.0f);
	e->fr[6] = 0x12; /* line 1, orientation 2 */
	o = push(e, &p, 2, e->fr, e->len, 3, 0);
	o = push(e, &p, 2, e->fr, e->len, 0, 0);
	expect_outcome(&o, FG_O_MALFORMED);
	assert_int_equal(o.reason, FG_R_SEED_ORIENTATION);
	assert_int_equal(e->bufs_out, 0);
	env_free(e);
}

/* [cluster] layers (ictx.serves): a fragmented seed for a layer this node
 * does not serve is judged layer_not_served from its first fragment (no
 * buffer kept, no slot opened), still ACKed when complete; a served layer
 * is placed. */
static void test_layer_not_served(void **st)
{
	(void)st;
	struct env *e = env_new(16, 1, 0, 4096);
	uint8_t fr[4096];
	uint8_t serves[FG_MAX_LAYERS / 8] = {0x01}; /* layer 0 only */
	e->ictx.serves = serves;
	uint32_t len = make_seed(e, fr, 14, 2, 1, 0, 1.0f, 1.0f);
	struct dp_peer p = peer_of(11);
	struct dp_reasm_out o = push(e, &p, 1, fr, len, 0, 0);
	expect_outcome(&o, FG_O_MALFORMED);
	assert_int_equal(o.reason, FG_R_LAYER_NOT_SERVED);
	assert_int_equal(o.seed.dst_layer, 2);
	assert_int_equal(e->bufs_out, 0);
	push_rest_discarded(e, &p, 1, fr, len); /* still ACKed: it was received */

	len = make_seed(e, fr, 15, 0, 1, 0, 1.0f, 1.0f);
	push_accepted(e, &p, 2, fr, len, 0, 0);
	assert_int_equal(e->slots.opened, 1);
	env_free(e);
}

static void test_too_large(void **st)
{
	(void)st;
	struct env *e = env_new(16, 1, 0, 256); /* frames up to 256 bytes */
	uint8_t fr[4096];
	uint32_t len = make_seed(e, fr, 1, 0, 1, 0, 1.0f, 1.0f); /* 274 */
	struct dp_peer p = peer_of(11);
	struct dp_reasm_out o = push(e, &p, 1, fr, len, 4, 0);
	assert_int_equal(o.disp, DP_RA_MALFORMED);
	assert_int_equal(o.reason, FG_R_SEED_TOO_LARGE);
	o = push(e, &p, 1, fr, len, 0, 0);
	expect_outcome(&o, FG_O_MALFORMED);
	assert_int_equal(o.reason, FG_R_SEED_TOO_LARGE);
	env_free(e);
}

/* A seed the codec accepts under the ingest limits but the slot table
 * cannot hold (limits that do not fit the table: a larger max_seq_len, a
 * different hidden) is refused by the slot engine's own checks, judged
 * malformed at fragment 0, nothing placed and its later fragments
 * absorbed; under limits that fit, the codec refuses it first. Either
 * way the table opens no slot. */
static void seed_refused_at_first(struct env *e, uint32_t hidden, uint32_t seq_len, int want_reason)
{
	static float body[2 * HIDDEN];
	for (unsigned k = 0; k < 2 * HIDDEN; k++)
		body[k] = (float)k;
	struct fg_seed s = {.token_seq = 5, .dst_layer = 0, .line = 1, .start_pos = 0, .seq_len = seq_len,
			    .body = (const uint8_t *)body, .body_len = seq_len * hidden * 4u};
	uint8_t fr[4096];
	ssize_t n = fg_seed_encode(&e->bands, &s, fr, sizeof(fr));
	assert_true(n > 0);
	struct dp_peer p = peer_of(40);
	struct dp_reasm_out o = push(e, &p, 3, fr, (uint32_t)n, 0, 0);
	expect_outcome(&o, FG_O_MALFORMED);
	assert_int_equal(o.reason, want_reason);
	o = push(e, &p, 3, fr, (uint32_t)n, 1, 0);
	assert_int_equal(o.disp, DP_RA_DISCARDED);
	assert_int_equal(e->slots.opened, 0);
}

static void test_limits_not_the_tables(void **st)
{
	(void)st;
	for (unsigned v = 0; v < 2; v++) {
		via_land = v;
		/* the codec's limits are the table's: the codec refuses seq_len 2 */
		struct env *e = env_new(16, 1, 0, 4096);
		assert_true(fg_slots_fit_limits(&e->slots, &e->lim));
		seed_refused_at_first(e, HIDDEN, 2, FG_R_SEED_TOO_LARGE);
		env_free(e);
		/* a codec allowing 2 rows in front of a table of 1 */
		e = env_new(16, 1, 0, 4096);
		e->lim.max_seq_len = 2;
		assert_false(fg_slots_fit_limits(&e->slots, &e->lim));
		seed_refused_at_first(e, HIDDEN, 2, 0);
		env_free(e);
		/* a codec of another hidden size */
		e = env_new(16, 1, 0, 4096);
		e->lim.hidden = HIDDEN / 2;
		assert_false(fg_slots_fit_limits(&e->slots, &e->lim));
		seed_refused_at_first(e, HIDDEN / 2, 1, 0);
		env_free(e);
	}
	via_land = false;
}

/* ---- U02..U04: the 3082-byte frame at C = 1468, every arrival order ---- */

static void test_vectors_u02_u04(void **st)
{
	(void)st;
	static uint8_t d[3][2000];
	size_t dl[3] = {fg_test_vector_bytes("U02", d[0], 2000), fg_test_vector_bytes("U03", d[1], 2000),
			fg_test_vector_bytes("U04", d[2], 2000)};
	uint8_t want[3082];
	for (unsigned i = 0; i < 3072; i++)
		want[10 + i] = (uint8_t)i;
	memcpy(want, "\x00\x07\x00\x00\x00\x00\x00\x00\x0c\x00", 10);
	const unsigned perms[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
	for (unsigned pi = 0; pi < 6; pi++) {
		struct env *e = env_alloc(4096); /* no slot table: whole frames only */
		struct dp_reasm_cfg rc = {.contexts = 4, .chunk = 1468, .frame_max = 4096, .timeout_ns = 1,
					  .n_shards = 1, .n_layers = LAYERS};
		env_reasm_init(e, &rc);
		struct dp_peer p = peer_of(12);
		struct dp_reasm_out o;
		for (unsigned k = 0; k < 3; k++) {
			struct fg_frag f;
			unsigned i = perms[pi][k];
			assert_int_equal(fg_frag_decode(d[i], dl[i], &f), (ssize_t)dl[i]);
			assert_int_equal(f.frame_id, 9);
			assert_int_equal(dp_reasm_push(&e->r, &p, &f, &e->ictx, 0, &o), 0);
			assert_int_equal(o.disp, DP_RA_TAKEN);
		}
		assert_int_equal(o.events, DP_RA_EV_FRAME | DP_RA_EV_COMPLETE);
		assert_int_equal(o.len, 3082);
		assert_memory_equal(o.buf, want, 3082);
		buf_put(e, o.buf);
		env_free(e);
	}
}

/* dp_ra_copy_pick: every copy this CPU runs (memcpy, AVX2, AVX-512)
 * writes exactly dst[0..len) with src's bytes, for every length from 0
 * past several rounds of its widest moves (and a jumbo chunk), every
 * alignment of source and destination; the bytes around are untouched. */
static void test_chunk_copy(void **st)
{
	enum { MAX = 9000, PAD = 80 };
	static uint8_t src[MAX + PAD], dst[MAX + 2 * PAD];
	(void)st;
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 131u + 7u);
	dp_ra_copy_fn *seen[3] = { NULL, NULL, NULL };
	for (unsigned level = 0; level < 3; level++) {
		dp_ra_copy_fn *copy = dp_ra_copy_pick(level);
		assert_non_null(copy);
		seen[level] = copy;
		for (uint32_t len = 0; len <= MAX; len += len < 1100 ? 1 : 397) {
			for (unsigned so = 0; so < 3; so++) {
				for (unsigned d0 = 0; d0 < 3; d0++) {
					unsigned doff = PAD + d0 * 7;
					memset(dst, 0xEE, doff + len + PAD);
					copy(dst + doff, src + so * 5, len);
					assert_memory_equal(dst + doff, src + so * 5, len);
					for (unsigned g = 0; g < doff; g++)
						assert_int_equal(dst[g], 0xEE);
					for (unsigned g = 0; g < PAD; g++)
						assert_int_equal(dst[doff + len + g], 0xEE);
				}
			}
		}
	}
	/* the wide copies were the ones tested where the CPU runs them */
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		assert_ptr_not_equal(seen[1], seen[0]);
	if (__builtin_cpu_supports("avx512f"))
		assert_ptr_not_equal(seen[2], seen[1]);
}

/* A table of 2 shards (this one 0) keeping up to keep_max received
 * buffers, `contexts` contexts, with a frame of a seed shard 1 owns in
 * e->fr (5 fragments). */
static struct env *env_keep(uint32_t contexts, uint32_t keep_max)
{
	struct env *e = env_alloc(4096);
	e->ictx.lines = facts_all(1 /* shadow */);
	struct dp_reasm_cfg rc = {.contexts = contexts, .chunk = CHUNK, .frame_max = 4096, .timeout_ns = 1000000,
				  .n_shards = 2, .shard_self = 0, .n_layers = LAYERS, .keep_max = keep_max,
				  .keep_drop = keep_drop};
	rc.bufs = (struct dp_buf_ops){.get = buf_get, .put = buf_put, .arg = e};
	size_t sz = dp_reasm_mem_size(&rc);
	e->rmem = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	assert_int_equal(dp_reasm_init(&e->r, e->rmem, sz, &rc), 0);
	uint32_t token = 0;
	while (fg_shard_of(token, 1, LAYERS, 2) != 1)
		token++;
	e->len = make_seed(e, e->fr, token, 1, 3, 0, 2.0f, 0.25f);
	assert_int_equal(fg_frag_count(e->len, CHUNK), 5);
	return e;
}

/* A burst as a driver names it: fragments first .. end - 1 of e->fr under
 * fid, each in received buffer pkt[k] (pkts[] the burst's, by position). */
struct keep_burst {
	struct fg_frag f[8];
	void *pkts[8];
	unsigned n;
};
static void keep_burst_of(struct env *e, struct keep_burst *b, struct keep_pkt *pkt, uint16_t fid, unsigned first,
			  unsigned end)
{
	b->n = end - first;
	for (unsigned k = 0; k < b->n; k++) {
		unsigned idx = first + k;
		b->f[k] = (struct fg_frag){.frame_id = fid, .index = (uint8_t)idx, .total = 5,
					   .chunk = e->fr + idx * CHUNK,
					   .chunk_len = e->len - idx * CHUNK < CHUNK ? e->len - idx * CHUNK : CHUNK};
		b->pkts[k] = &pkt[idx];
		pkt[idx].given_back = 0;
	}
}

/* The burst b of frame fid from p placed as dp_shard_run places a run
 * (its buffers named): which buffers the table kept (bit k: b->pkts[k]);
 * *out the run's. */
static uint32_t keep_run(struct env *e, const struct dp_peer *p, uint16_t fid, struct keep_burst *b, uint64_t now,
			 struct dp_reasm_out *out)
{
	dp_reasm_keep_begin(&e->r, b->f, b->n, b->pkts);
	struct dp_ra_hint h;
	dp_reasm_find(&e->r, p, dp_peer_hash(p, 0), fid, &h);
	unsigned k = h.ctx == DP_RA_HINT_NONE ? 0 : dp_reasm_land_run(&e->r, &h, b->f, b->n, now, out);
	if (!k)
		k = dp_reasm_push_run(&e->r, p, dp_peer_hash(p, 0), &h, b->f, fid, b->n, &e->ictx, now, out);
	assert_int_equal(k, b->n);
	return dp_reasm_keep_end(&e->r);
}

/* out hands e->fr out as a chunk list: kept[i] says whether fragment i's
 * entry is its received buffer pkt[i] (else copied into the buffer); the
 * frame made whole is e->fr, the kept buffers given back by the receiver. */
static void expect_listed(struct env *e, const struct dp_reasm_out *o, struct keep_pkt *pkt, const bool *kept)
{
	assert_int_equal(o->events, DP_RA_EV_FRAME | DP_RA_EV_COMPLETE);
	assert_int_equal(o->len, e->len);
	assert_int_equal(o->nchunk, 5);
	const struct dp_ra_list *l = dp_ra_list(o->buf, 4096);
	unsigned nk = 0;
	for (unsigned i = 0; i < 5; i++) {
		if (kept[i]) {
			assert_ptr_equal(l->m[nk], &pkt[i]); /* in the order kept */
			assert_ptr_equal(l->p[i], e->fr + i * CHUNK);
			nk++;
		} else {
			assert_ptr_equal(l->p[i], (uint8_t *)o->buf + i * CHUNK);
		}
	}
	assert_int_equal(l->nkept, nk);
	dp_ra_list_flatten(o->buf, 4096, o->nchunk, o->len, CHUNK, e->r.copy);
	assert_memory_equal(o->buf, e->fr, e->len);
	for (unsigned i = 0; i < nk; i++) {
		struct keep_pkt *k = l->m[i];
		assert_int_equal(k->given_back, 0);
		k->given_back = 1;
	}
	dp_reasm_kept_back(&e->r, nk);
	buf_put(e, o->buf);
}

static void test_keep_chunks(void **st)
{
	(void)st;
	struct keep_pkt pkt[5];
	struct keep_burst b;
	struct dp_reasm_out o;
	struct dp_peer p = peer_of(7100);
	const bool all[5] = {true, true, true, true, true};
	/* the whole frame in one burst: every buffer kept, their entries in
	 * the burst cleared, the frame listed */
	struct env *e = env_keep(16, 64);
	keep_burst_of(e, &b, pkt, 1, 0, 5);
	assert_int_equal(keep_run(e, &p, 1, &b, 0, &o), 0x1F);
	expect_listed(e, &o, pkt, all);
	/* in two bursts, the second one after a fragment pushed alone (no
	 * buffer named): that one copied */
	keep_burst_of(e, &b, pkt, 2, 0, 2);
	assert_int_equal(keep_run(e, &p, 2, &b, 0, &o), 0x3);
	assert_int_equal(o.events, 0);
	o = push(e, &p, 2, e->fr, e->len, 2, 0);
	assert_int_equal(o.events, 0);
	keep_burst_of(e, &b, pkt, 2, 3, 5);
	assert_int_equal(keep_run(e, &p, 2, &b, 0, &o), 0x3);
	const bool no2[5] = {true, true, false, true, true};
	expect_listed(e, &o, pkt, no2);
	/* keep_max 7: a burst's buffers are kept while room for all of them
	 * is left: the first frame's 5, then (2 left, the receiver has not
	 * given any back) none of the second's, assembled as before; once
	 * given back, kept again */
	env_free(e);
	e = env_keep(16, 7);
	keep_burst_of(e, &b, pkt, 3, 0, 5);
	assert_int_equal(keep_run(e, &p, 3, &b, 0, &o), 0x1F);
	struct dp_reasm_out o2;
	struct keep_pkt pkt2[5];
	keep_burst_of(e, &b, pkt2, 4, 0, 5);
	assert_int_equal(keep_run(e, &p, 4, &b, 0, &o2), 0);
	assert_int_equal(o2.nchunk, 0);
	assert_memory_equal(o2.buf, e->fr, e->len);
	buf_put(e, o2.buf);
	expect_listed(e, &o, pkt, all);
	keep_burst_of(e, &b, pkt, 11, 0, 5);
	assert_int_equal(keep_run(e, &p, 11, &b, 0, &o), 0x1F);
	expect_listed(e, &o, pkt, all);
	/* a frame begun outside a named burst is assembled as before */
	keep_burst_of(e, &b, pkt, 5, 0, 5);
	for (unsigned k = 0; k < 5; k++)
		o = push(e, &p, 5, e->fr, e->len, k, 0);
	assert_int_equal(o.nchunk, 0);
	assert_memory_equal(o.buf, e->fr, e->len);
	buf_put(e, o.buf);
	assert_int_equal(e->dropped, 0);
	env_free(e);
	/* every ending of an incomplete frame gives its kept buffers back
	 * once: expiry, eviction (a full table, a frame of another source),
	 * shutdown */
	e = env_keep(1, 64);
	keep_burst_of(e, &b, pkt, 6, 0, 3);
	assert_int_equal(keep_run(e, &p, 6, &b, 0, &o), 0x7);
	assert_int_equal(dp_reasm_expire(&e->r, 2000000, 16), 1);
	assert_int_equal(e->dropped, 3);
	for (unsigned k = 0; k < 3; k++)
		assert_int_equal(pkt[k].given_back, 1);
	keep_burst_of(e, &b, pkt, 7, 0, 2);
	assert_int_equal(keep_run(e, &p, 7, &b, 0, &o), 0x3);
	struct dp_peer q = peer_of(7101);
	q.addr[3] = 8;
	assert_int_equal(push(e, &q, 8, e->fr, e->len, 1, 0).disp, DP_RA_TAKEN); /* evicts frame 7 */
	assert_int_equal(e->dropped, 5);
	assert_int_equal(dp_reasm_expire(&e->r, 2000000, 16), 2); /* the eviction and frame 8 */
	keep_burst_of(e, &b, pkt, 9, 0, 4);
	assert_int_equal(keep_run(e, &p, 9, &b, 0, &o), 0xF);
	dp_reasm_fini(&e->r);
	assert_int_equal(e->dropped, 9);
	for (unsigned k = 0; k < 4; k++)
		assert_int_equal(pkt[k].given_back, 1);
	assert_int_equal(e->r.keep.avail, 64); /* none left out */
	env_free(e);
	/* a seed of this shard goes straight into its slot: nothing kept */
	e = env_new(16, 2, 0, 4096);
	assert_int_equal(fg_shard_of(7, 2, LAYERS, 2), 0);
	e->len = make_seed(e, e->fr, 7, 2, 3, 0, 2.0f, 0.25f);
	keep_burst_of(e, &b, pkt, 10, 0, 5);
	assert_int_equal(keep_run(e, &p, 10, &b, 0, &o), 0);
	expect_outcome(&o, FG_O_ACCEPTED);
	env_free(e);
}

static void test_init_refuses(void **st)
{
	(void)st;
	static _Alignas(64) uint8_t mem[1 << 16];
	struct dp_reasm r;
	struct env e0 = {.frame_max = 4096};
	struct dp_reasm_cfg rc = {.contexts = 4, .chunk = 63, .frame_max = 4096, .n_shards = 1,
				  .bufs = {.get = buf_get, .put = buf_put, .arg = &e0}};
	assert_int_equal(dp_reasm_init(&r, mem, sizeof(mem), &rc), -EINVAL); /* chunk < 64 */
	rc.chunk = 64;
	rc.frame_max = 255 * 64 + 1;
	assert_int_equal(dp_reasm_init(&r, mem, sizeof(mem), &rc), -EINVAL);
	rc.frame_max = 4096;
	rc.shard_self = 1;
	assert_int_equal(dp_reasm_init(&r, mem, sizeof(mem), &rc), -EINVAL);
	rc.shard_self = 0;
	assert_int_equal(dp_reasm_init(&r, mem, 64, &rc), -ENOSPC);
	assert_int_equal(dp_reasm_init(&r, mem, sizeof(mem), &rc), 0);
}

/* A frame of 81 fragments (a seq_len-20 seed, one line expected) placed
 * by runs whose fragments come in order: its first 40 with fragment 0
 * (dp_reasm_push_run), the next 30 (dp_reasm_land_run, the fragment bits
 * past their first word), then repeats from either word are duplicates
 * that change nothing, and the last 11 complete the frame: the line is
 * whole, the slot resolves to the body sent. Then the same frame under
 * another key with fragment 70 first (held), fragment 0 draining it and
 * the fragments after 0 out of order from there: the same body. */
static void test_run_many_fragments(void **st)
{
	(void)st;
	enum { SEQ = 20, FLOATS = SEQ * HIDDEN };
	struct env *e = env_alloc(8192);
	e->lim.max_seq_len = SEQ;
	struct fg_slots_cfg sc;
	memset(&sc, 0, sizeof(sc));
	sc.capacity = 8;
	sc.hidden = HIDDEN;
	sc.max_seq_len = SEQ;
	sc.n_layers = LAYERS;
	sc.deadline_ns = 1000000000ull;
	const uint8_t order[1] = {1};
	for (unsigned l = 0; l < LAYERS; l++)
		assert_int_equal(fg_rule_make(&sc.rules[l], order, 1), 0);
	size_t sz = fg_slots_mem_size(&sc);
	e->slots_mem = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	assert_int_equal(fg_slots_init(&e->slots, e->slots_mem, sz, &sc), 0);
	e->ictx.lines = facts_all(1 /* shadow */);
	struct dp_reasm_cfg rc = {.contexts = 8, .chunk = CHUNK, .frame_max = 8192, .timeout_ns = 1000000,
				  .slots = &e->slots, .n_shards = 1, .n_layers = LAYERS};
	env_reasm_init(e, &rc);
	static float body[FLOATS];
	for (unsigned k = 0; k < FLOATS; k++)
		body[k] = 0.25f * (float)k - 7.0f;
	static uint8_t fr[8192];
	struct dp_peer p = peer_of(6100);
	uint32_t hash = dp_peer_hash(&p, 0);
	for (unsigned pass = 0; pass < 2; pass++) {
		struct fg_seed s = {.token_seq = 70 + pass, .dst_layer = 1, .line = 1, .start_pos = 0, .seq_len = SEQ,
				    .body = (const uint8_t *)body, .body_len = sizeof(body)};
		ssize_t len = fg_seed_encode(&e->bands, &s, fr, sizeof(fr));
		assert_true(len > 0);
		assert_int_equal(fg_frag_count((uint32_t)len, CHUNK), 81);
		uint16_t fid = (uint16_t)(900 + pass);
		struct fg_frag f[81];
		for (unsigned k = 0; k < 81; k++) {
			f[k] = frag_of(fr, (uint32_t)len, fid, k);
			f[k].frame_id = __builtin_bswap16(fid);
		}
		struct dp_reasm_out out;
		struct dp_ra_hint h = {.ctx = DP_RA_HINT_NONE};
		if (pass == 0) {
			assert_int_equal(dp_reasm_push_run(&e->r, &p, hash, &h, f, fid, 40, &e->ictx, 10, &out), 40);
			assert_int_equal(out.disp, DP_RA_TAKEN);
			assert_int_equal(out.events, 0);
			assert_int_equal(dp_reasm_land_run(&e->r, &h, &f[40], 30, 10, &out), 30);
			assert_int_equal(out.events, 0);
			const unsigned again[] = {65, 3, 63, 0, 69};
			for (unsigned k = 0; k < 5; k++) {
				assert_int_equal(dp_reasm_land_run(&e->r, &h, &f[again[k]], 1, 10, &out), 0);
				assert_int_equal(dp_reasm_push_hinted(&e->r, &p, hash, &h, &f[again[k]], &e->ictx, 10, &out),
						 0);
				assert_int_equal(out.disp, DP_RA_DUP);
			}
			assert_int_equal(dp_reasm_land_run(&e->r, &h, &f[70], 11, 10, &out), 11);
		} else {
			/* 70 first (held), then 0 and every other one from 80
			 * down to 1 */
			assert_int_equal(dp_reasm_push_run(&e->r, &p, hash, &h, &f[70], fid, 1, &e->ictx, 10, &out), 1);
			assert_int_equal(out.disp, DP_RA_TAKEN);
			struct fg_frag g[81];
			g[0] = f[0];
			unsigned n = 1;
			for (unsigned k = 80; k >= 1; k--)
				if (k != 70)
					g[n++] = f[k];
			assert_int_equal(n, 80);
			unsigned i = 0;
			while (i < n) {
				unsigned k = dp_reasm_land_run(&e->r, &h, &g[i], n - i, 10, &out);
				if (!k)
					k = dp_reasm_push_run(&e->r, &p, hash, &h, &g[i], fid, n - i, &e->ictx, 10, &out);
				assert_int_equal(out.disp, DP_RA_TAKEN);
				i += k;
				assert_true(i == n || !out.events);
			}
		}
		expect_outcome(&out, FG_O_RESOLVED);
		assert_true(out.events & DP_RA_EV_COMPLETE);
		struct fg_seed_view v;
		assert_int_equal(fg_slot_seed(&e->slots, out.res.slot, &v), 0);
		assert_int_equal(v.body_len, sizeof(body));
		assert_memory_equal(v.body, body, sizeof(body));
		/* a repeat after completion: the tombstone's */
		assert_int_equal(dp_reasm_push_hinted(&e->r, &p, hash, &h, &f[66], &e->ictx, 10, &out), 0);
		assert_int_equal(out.disp, DP_RA_DUP);
	}
	env_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arrival_orders),
		cmocka_unit_test(test_duplicate_fragment),
		cmocka_unit_test(test_slot_ends_mid_frame),
		cmocka_unit_test(test_burst_path),
		cmocka_unit_test(test_land_run),
		cmocka_unit_test(test_push_run),
		cmocka_unit_test(test_run_many_fragments),
		cmocka_unit_test(test_validation),
		cmocka_unit_test(test_remote_shard_buffer),
		cmocka_unit_test(test_dup_pending),
		cmocka_unit_test(test_timeout_aborts_attempt),
		cmocka_unit_test(test_superseded_attempt_not_acked),
		cmocka_unit_test(test_no_slot_not_acked),
		cmocka_unit_test(test_overflow_and_recycling),
		cmocka_unit_test(test_tombstones_oldest_first),
		cmocka_unit_test(test_full_table_evicts_for_other_source),
		cmocka_unit_test(test_line_disabled_and_bad_prefix),
		cmocka_unit_test(test_layer_not_served),
		cmocka_unit_test(test_too_large),
		cmocka_unit_test(test_limits_not_the_tables),
		cmocka_unit_test(test_vectors_u02_u04),
		cmocka_unit_test(test_init_refuses),
		cmocka_unit_test(test_keep_chunks),
		cmocka_unit_test(test_chunk_copy),
		cmocka_unit_test(test_hint_without_context),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

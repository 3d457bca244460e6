/* fuzz_udp_rx.c - libFuzzer target for the dataplane's UDP receive path
 * after L2/L3 parsing: fg_frag_decode -> (frag_total 1: whole frame) or
 * the burst path's reassembly (dataplane/dp_reasm.c, pure C: dp_reasm_find,
 * dp_reasm_prefetch, dp_reasm_land_run over a run of a frame's consecutive
 * fragments, dp_reasm_push_run for a fragment it does not take and the
 * run after it, or dp_reasm_push_hinted; dp_reasm_push for every fourth
 * frame id) -> slot placement in place (fg_slot_begin,
 * fg_slot_land/place) or a reassembled buffer -> fg_ingest_frame, into
 * real fg_slots tables (core/slot.c), with a fake clock, reassembly and slot
 * expiry. It mirrors dp_rx.c/dp_shard.c's rx_packet/dp_shard_fragment/dp_shard_whole/on_xfer
 * for lcore 0 of n_shards (1 or 2): a whole frame owned by the other shard
 * is ingested into a second table, as the inbox hand-off would.
 *
 * Input: byte 0 = reassembly config (shards, contexts, buffers, chunk C),
 * byte 1 = slot config (capacity, disabled line, timeout), then ops:
 *   0 define+send  peer fid kind tok layer line|sign seq_len mode order, body...
 *                  (body: seq_len * 8 bytes, repeated when the input ends)
 *                  a "consistent" sender (peers 0..3): the frame for (peer,
 *                  fid) is fixed at first use, so retransmits, duplicates
 *                  and reorderings always carry the same bytes; mode picks
 *                  shape faults and a wrong chunk size; order = which
 *                  fragments are sent (all forward, reverse, odd/even, one)
 *   1 send one     peer fid index: one fragment of a defined frame
 *   2 raw          peer len bytes...: an arbitrary datagram from a hostile
 *                  sender (peers 4..5)
 *   3 tick         dt max: clock += dt * 64 ns; dp_reasm_expire(max),
 *                  fg_slots_expire on both tables
 * Properties:
 *  1. no crash, no out-of-bounds access, push always returns 0 with one
 *     disposition in range;
 *  2. every frame buffer taken from the pool is returned exactly once (by
 *     the table or by the harness after EV_FRAME), all of them after
 *     dp_reasm_fini; live contexts <= contexts; timeouts add up;
 *  3. a frame handed back (EV_FRAME) from a consistent sender is byte for
 *     byte the frame it sent; COMPLETE names its stream and sequence;
 *     direct-path outcomes carry its seed facts and occur only for keys of
 *     the local shard;
 *  4. every resolved seed (direct path or whole frame, either table) is,
 *     bit for bit, the scalar reduction in rule order of the contributions
 *     that became whole for its key (NaN matches any NaN); contributions of
 *     the hostile sender on the direct path have no known body and make
 *     the check skip that slot;
 *  5. open slots never exceed the capacity. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../dataplane/dp_reasm.h"
#include "fg/ingest.h"
#include "fg/slot.h"
#include "fg/wire.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HIDDEN 2u
#define MAX_SEQ 40u
#define N_LAYERS 4u
#define N_CPEERS 4u  /* consistent senders */
#define N_FIDS 16u
#define FRAME_CAP (FG_HDR_LEN + FG_SEED_PREFIX_LEN + MAX_SEQ * HIDDEN * 4 + 64)
#define BODY_CAP (MAX_SEQ * HIDDEN * 4)
#define MAX_BUFS 3u
#define RUN_MAX 6u /* fragments of one frame placed as a run */

static struct fg_slots_cfg scfg;
static void *smem[2];
static size_t smem_len;
static void *rmem;
static size_t rmem_len;
static struct fg_bands bands;
static struct fg_seed_limits limits = { HIDDEN, MAX_SEQ, FG_ORIENT_BIT };

/* ---- buffer pool: each buffer its own allocation of exactly frame_max ---- */
struct pool {
	void *buf[MAX_BUFS];
	bool out[MAX_BUFS];
	unsigned n;
	uint64_t gets, puts;
};
static void *pool_get(void *arg)
{
	struct pool *p = arg;
	for (unsigned i = 0; i < p->n; i++)
		if (!p->out[i]) {
			p->out[i] = true;
			p->gets++;
			return p->buf[i];
		}
	return NULL;
}
static void pool_put(void *arg, void *b)
{
	struct pool *p = arg;
	for (unsigned i = 0; i < p->n; i++)
		if (p->buf[i] == b) {
			FUZZ_CHECK(p->out[i]); /* returned exactly once */
			p->out[i] = false;
			p->puts++;
			return;
		}
	FUZZ_CHECK(!"pool_put of a buffer not from the pool");
}

/* ---- consistent senders' frames ---- */
struct cframe {
	bool defined;
	uint8_t bytes[FRAME_CAP];
	uint32_t len, csend; /* frame length, chunk size the sender uses */
	uint16_t stream_id;
	uint32_t sequence;
	bool is_seed; /* a well-formed seed for a configured layer */
	struct fg_seed seed;
};
static struct cframe cf[N_CPEERS][N_FIDS];

/* ---- reference: contributions that became whole ---- */
struct done {
	uint32_t token_seq;
	uint16_t layer;
	uint8_t line, neg;
	bool known; /* body known (false: hostile direct-path contribution) */
	uint32_t body_len;
	uint8_t body[BODY_CAP];
};
static struct done dn[256];
static unsigned n_dn;

static struct done *dn_find(uint32_t tok, uint16_t layer, uint8_t line)
{
	for (unsigned i = 0; i < n_dn; i++)
		if (dn[i].token_seq == tok && dn[i].layer == layer && dn[i].line == line)
			return &dn[i];
	return NULL;
}

/* As fuzz_slot_frag.c: when a contribution is the only landed line, the
 * slot is a fresh one for its key and older records are stale. */
static void dn_record(const struct fg_seed *sd, const struct fg_slot_result *r, const uint8_t *body)
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
	FUZZ_CHECK(sd->body_len <= BODY_CAP);
	struct done *d = &dn[n_dn++];
	d->token_seq = sd->token_seq;
	d->layer = sd->dst_layer;
	d->line = sd->line;
	d->neg = sd->orientation;
	d->known = body != NULL;
	d->body_len = sd->body_len;
	if (body)
		memcpy(d->body, body, sd->body_len);
}

static void check_resolved(const struct fg_slots *s, uint32_t slot)
{
	struct fg_seed_view v;
	const struct done *c[FG_LINES];
	FUZZ_CHECK(fg_slot_seed(s, slot, &v) == 0);
	FUZZ_CHECK(v.fingerprint == fg_fingerprint(v.body, v.body_len));
	FUZZ_CHECK(v.dst_layer < N_LAYERS);
	const struct fg_rule *rule = &scfg.rules[v.dst_layer];
	for (unsigned k = 0; k < rule->n; k++) {
		c[k] = dn_find(v.token_seq, v.dst_layer, rule->order[k]);
		FUZZ_CHECK(c[k] != NULL);
		if (!c[k]->known)
			return;
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

/* ---- the lcore ---- */
struct rx {
	struct fg_slots slots[2];
	unsigned n_shards;
	struct dp_reasm ra;
	struct pool pool;
	struct fg_ingest_ctx ictx;
	uint64_t now;
	uint64_t timeouts; /* sum of dp_reasm_expire returns */
	uint64_t disp[DP_RA_DISCARDED + 1];
	/* the burst path's hint of the fragment before (dp_shard.c): kept
	 * across ops, so ticks and other frames make it stale */
	struct dp_ra_hint hint;
	unsigned hint_peer;
	uint16_t hint_fid;
	bool have_hint;
	/* the run of the burst path: fragments of one frame, one after
	 * another, their bytes kept until dp_shard_run would place them; as
	 * dp_shard_add keeps them, each fragment's frame id in the wire's
	 * byte order, the run's in run_fid */
	unsigned run_n, run_peer;
	uint16_t run_fid;
	struct fg_frag run_f[RUN_MAX];
	uint8_t run_bytes[RUN_MAX][FRAME_CAP];
};

static void outcome_seen(struct rx *x, unsigned table, const struct fg_seed *sd, const struct fg_slot_result *r,
			 const uint8_t *body, bool body_known)
{
	FUZZ_CHECK((unsigned)r->outcome < FG_O__COUNT);
	FUZZ_CHECK(r->outcome != FG_O_BAD_RANGE);
	if (r->outcome == FG_O_ACCEPTED || r->outcome == FG_O_RESOLVED)
		dn_record(sd, r, body_known ? body : NULL);
	if (r->outcome == FG_O_RESOLVED)
		check_resolved(&x->slots[table], r->slot);
	FUZZ_CHECK(x->slots[table].in_use <= scfg.capacity);
}

static unsigned frame_owner(const struct rx *x, const struct fg_hdr *h)
{
	enum fg_band band;
	uint16_t layer;
	if (x->n_shards > 1 && fg_stream_classify(&bands, h->stream_id, &band, &layer) == 0 && band == FG_BAND_SEED)
		return fg_shard_of(h->sequence, layer, N_LAYERS, x->n_shards);
	return 0;
}

/* A whole frame (frag_total 1, or reassembled): dp_shard.c's dp_shard_whole/on_xfer
 * + dp_shard_frame, with the hand-off to the other shard done in place. */
static void whole(struct rx *x, const uint8_t *frame, uint32_t len)
{
	struct fg_hdr h;
	if (fg_hdr_decode(frame, len, FG_TRANSPORT_MESSAGE, &h) < 0 || FG_HDR_LEN + h.length != len)
		return;
	if (h.stream_id == FG_STREAM_ACK && (h.flags & FG_FLAG_ACK))
		return;
	unsigned owner = frame_owner(x, &h);
	FUZZ_CHECK(owner < x->n_shards);
	struct fg_frame f;
	ssize_t n = fg_frame_decode(frame, len, FG_TRANSPORT_MESSAGE, &f);
	FUZZ_CHECK(n == (ssize_t)len);
	struct fg_ingest_result r;
	int rc = fg_ingest_frame(&x->slots[owner], &x->ictx, &f, x->now, &r);
	FUZZ_CHECK(rc <= 0);
	if (rc < 0 || r.band != FG_BAND_SEED)
		return;
	outcome_seen(x, owner, &r.seed, &r.slot, r.seed.body, true);
}

static struct dp_peer peer_of(unsigned peer_i)
{
	return (struct dp_peer){ .family = 4, .addr = { 10, 0, 0, (uint8_t)(1 + peer_i) }, .port = (uint16_t)(4000 + peer_i) };
}

static void frag_out(struct rx *x, unsigned peer_i, const struct fg_frag *f, const struct dp_reasm_out *o);

/* Fragment i of the run with its frame id in host order. */
static struct fg_frag run_frag(const struct rx *x, unsigned i)
{
	struct fg_frag f = x->run_f[i];
	f.frame_id = x->run_fid;
	return f;
}

/* dp_shard_run's placement of the run: dp_reasm_land_run takes what it
 * can (from the fragments as dp_shard_add stored them); a fragment it
 * does not take is pushed with the run's hint and frame id, and
 * dp_reasm_push_run goes on with the run from its context (a frame id
 * of 2 mod 4 pushes it alone, dp_reasm_push_hinted). The fragments before
 * the last one a call consumed only landed. */
static void run_flush(struct rx *x)
{
	struct dp_peer peer = peer_of(x->run_peer);
	uint32_t h = dp_peer_hash(&peer, 0);
	for (unsigned i = 0; i < x->run_n;) {
		struct dp_reasm_out out;
		unsigned k = dp_reasm_land_run(&x->ra, &x->hint, &x->run_f[i], x->run_n - i, x->now, &out);
		FUZZ_CHECK(k <= x->run_n - i);
		if (k) {
			FUZZ_CHECK(out.disp == DP_RA_TAKEN);
		} else if (x->run_fid % 4 == 2) {
			struct fg_frag g = run_frag(x, i);
			FUZZ_CHECK(dp_reasm_push_hinted(&x->ra, &peer, h, &x->hint, &g, &x->ictx, x->now, &out) == 0);
			k = 1;
		} else {
			k = dp_reasm_push_run(&x->ra, &peer, h, &x->hint, &x->run_f[i], x->run_fid, x->run_n - i,
					      &x->ictx, x->now, &out);
			FUZZ_CHECK(k >= 1 && k <= x->run_n - i);
			FUZZ_CHECK(k == 1 || out.disp == DP_RA_TAKEN);
		}
		struct dp_reasm_out landed = { .disp = DP_RA_TAKEN };
		for (unsigned j = i; j + 1 < i + k; j++) {
			struct fg_frag g = run_frag(x, j);
			frag_out(x, x->run_peer, &g, &landed);
		}
		struct fg_frag g = run_frag(x, i + k - 1);
		frag_out(x, x->run_peer, &g, &out);
		i += k;
	}
	x->run_n = 0;
}

static void fragment(struct rx *x, unsigned peer_i, const struct dp_peer *peer, const struct fg_frag *f)
{
	/* dp_shard_burst's path: a fragment of the frame of the fragment
	 * before starts from that one's hint, any other is looked up; its
	 * destination prefetched; consecutive fragments of one frame placed
	 * as a run (run_flush). Every fourth frame id takes dp_reasm_push
	 * alone, as single datagrams (dp_shard_dgram) do. */
	if (x->run_n && (x->run_peer != peer_i || x->run_fid != f->frame_id || x->run_n == RUN_MAX))
		run_flush(x);
	if (f->frame_id % 4 == 3) {
		struct dp_reasm_out out;
		FUZZ_CHECK(dp_reasm_push(&x->ra, peer, f, &x->ictx, x->now, &out) == 0);
		frag_out(x, peer_i, f, &out);
		return;
	}
	if (!(x->have_hint && x->hint_peer == peer_i && x->hint_fid == f->frame_id))
		dp_reasm_find(&x->ra, peer, dp_peer_hash(peer, 0), f->frame_id, &x->hint);
	x->hint_peer = peer_i;
	x->hint_fid = f->frame_id;
	x->have_hint = true;
	dp_reasm_prefetch(&x->ra, &x->hint, f->index);
	FUZZ_CHECK(f->chunk_len <= FRAME_CAP);
	memcpy(x->run_bytes[x->run_n], f->chunk, f->chunk_len);
	x->run_f[x->run_n] = *f;
	x->run_f[x->run_n].frame_id = __builtin_bswap16(f->frame_id);
	x->run_f[x->run_n].chunk = x->run_bytes[x->run_n];
	x->run_peer = peer_i;
	x->run_fid = f->frame_id;
	x->run_n++;
}

/* What reassembly said about fragment f of peer_i, checked. */
static void frag_out(struct rx *x, unsigned peer_i, const struct fg_frag *f, const struct dp_reasm_out *o)
{
	const struct cframe *c = peer_i < N_CPEERS ? &cf[peer_i][f->frame_id % N_FIDS] : NULL;
	struct dp_reasm_out out = *o;
	FUZZ_CHECK((unsigned)out.disp <= DP_RA_DISCARDED);
	FUZZ_CHECK(!(out.events & ~(DP_RA_EV_OUTCOME | DP_RA_EV_FRAME | DP_RA_EV_COMPLETE)));
	x->disp[out.disp]++;
	FUZZ_CHECK(dp_reasm_live(&x->ra) <= x->ra.cfg.contexts);
	if (out.events & DP_RA_EV_FRAME)
		FUZZ_CHECK(out.events & DP_RA_EV_COMPLETE);
	if (c && (out.events & (DP_RA_EV_COMPLETE | DP_RA_EV_OUTCOME))) {
		FUZZ_CHECK(out.stream_id == c->stream_id);
		FUZZ_CHECK(out.sequence == c->sequence);
	}
	if ((out.events & DP_RA_EV_OUTCOME) && out.res.outcome != FG_O_MALFORMED) {
		FUZZ_CHECK((unsigned)out.res.outcome < FG_O__COUNT);
		if (out.res.outcome == FG_O_ACCEPTED || out.res.outcome == FG_O_RESOLVED) {
			/* the direct path places only seeds of the local shard */
			FUZZ_CHECK(fg_shard_of(out.seed.token_seq, out.seed.dst_layer, N_LAYERS, x->n_shards) == 0);
			FUZZ_CHECK(out.res.bytes == out.seed.body_len);
		}
		if (c) {
			FUZZ_CHECK(c->is_seed);
			FUZZ_CHECK(out.seed.token_seq == c->seed.token_seq && out.seed.dst_layer == c->seed.dst_layer &&
				   out.seed.line == c->seed.line && out.seed.orientation == c->seed.orientation &&
				   out.seed.seq_len == c->seed.seq_len && out.seed.body_len == c->seed.body_len);
		}
		if (out.res.outcome != FG_O_LINE_DISABLED)
			outcome_seen(x, 0, &out.seed, &out.res, c ? c->seed.body : NULL, c != NULL);
	}
	if (out.events & DP_RA_EV_FRAME) {
		FUZZ_CHECK(out.buf != NULL && out.len <= x->ra.cfg.frame_max && out.len >= FG_HDR_LEN);
		if (c)
			FUZZ_CHECK(out.len == c->len && !memcmp(out.buf, c->bytes, c->len));
		whole(x, out.buf, out.len);
		pool_put(&x->pool, out.buf);
	}
}

static void datagram(struct rx *x, unsigned peer_i, const uint8_t *d, size_t len)
{
	struct dp_peer peer = peer_of(peer_i);
	struct fg_frag f;
	if (fg_frag_decode(d, len, &f) < 0)
		return;
	FUZZ_CHECK(f.total >= 1 && f.index < f.total && f.chunk_len >= 1);
	if (f.total == 1) {
		run_flush(x); /* arrival order */
		whole(x, f.chunk, f.chunk_len);
		return;
	}
	fragment(x, peer_i, &peer, &f);
}

/* Send fragment i of a consistent frame. */
static void send_frag(struct rx *x, unsigned peer_i, uint16_t fid, unsigned i)
{
	const struct cframe *c = &cf[peer_i][fid % N_FIDS];
	uint32_t total = (c->len + c->csend - 1) / c->csend;
	if (i >= total)
		return;
	uint8_t dg[FG_FRAG_HDR_LEN + FRAME_CAP];
	uint32_t off = i * c->csend, n = c->len - off < c->csend ? c->len - off : c->csend;
	struct fg_frag f = { .frame_id = fid, .index = (uint8_t)i, .total = (uint8_t)total, .chunk = c->bytes + off, .chunk_len = n };
	ssize_t k = fg_frag_encode(&f, dg, sizeof(dg));
	FUZZ_CHECK(k == (ssize_t)(FG_FRAG_HDR_LEN + n));
	datagram(x, peer_i, dg, (size_t)k);
}

static void define_frame(struct rx *x, struct cframe *c, const uint8_t *a, const uint8_t **pp, const uint8_t *end)
{
	/* a: kind tok layer line|sign seq_len mode */
	uint8_t kind = a[0] % 8, mode = a[5];
	struct fg_seed sd = { 0 };
	sd.token_seq = a[1] % 6;
	sd.dst_layer = (uint16_t)(a[2] % (N_LAYERS + 1)); /* N_LAYERS: unknown layer */
	sd.line = (uint8_t)((a[3] & 0x0F) % 8);           /* 7: bad line */
	sd.orientation = (uint8_t)((a[3] >> 4) & 3);      /* 2, 3: bad orientation */
	if (!(mode & 0x40)) {
		sd.line %= 7;
		sd.orientation &= 1;
	}
	sd.seq_len = 1 + a[4] % MAX_SEQ;
	sd.start_pos = (mode >> 3) & 1;
	sd.body_len = sd.seq_len * HIDDEN * 4;
	uint32_t rows_fault = mode & 0x80 ? 4u : 0u; /* body a float short of seq_len rows */
	uint32_t blen = sd.body_len - rows_fault;
	/* body bytes from the input, repeated when it runs out */
	uint8_t body[BODY_CAP];
	size_t avail = (size_t)(end - *pp);
	for (uint32_t i = 0; i < blen; i++)
		body[i] = avail ? (*pp)[i % avail] : (uint8_t)(i * 37);
	*pp += avail < blen ? avail : blen;

	uint16_t stream;
	uint8_t flags;
	if (kind < 5) { /* seed */
		stream = (uint16_t)(bands.seed_base + sd.dst_layer);
		flags = (uint8_t)(sd.line << 4 | sd.orientation);
	} else if (kind == 5) { /* canonical, full */
		stream = (uint16_t)(bands.canonical_base + sd.dst_layer);
		flags = 0;
	} else if (kind == 6) { /* an ACK-looking or status frame */
		stream = (mode & 1) ? FG_STREAM_ACK : FG_STREAM_STATUS;
		flags = (mode & 1) ? FG_FLAG_ACK : 0;
	} else {
		stream = (uint16_t)(0x1000u + a[2]);
		flags = a[3];
	}
	struct fg_hdr h = { .stream_id = stream, .sequence = sd.token_seq, .flags = flags,
			    .length = FG_SEED_PREFIX_LEN + blen };
	FUZZ_CHECK(fg_hdr_encode(&h, c->bytes, sizeof(c->bytes)) == FG_HDR_LEN);
	fg_put_le32(c->bytes + FG_HDR_LEN, sd.start_pos);
	fg_put_le32(c->bytes + FG_HDR_LEN + 4, sd.seq_len);
	memcpy(c->bytes + FG_HDR_LEN + FG_SEED_PREFIX_LEN, body, blen);
	c->len = FG_HDR_LEN + FG_SEED_PREFIX_LEN + blen;
	c->stream_id = stream;
	c->sequence = sd.token_seq;
	c->is_seed = kind < 5 && sd.dst_layer < N_LAYERS && !rows_fault && sd.line < 7 && sd.orientation < 2;
	c->seed = sd;
	c->seed.body = c->bytes + FG_HDR_LEN + FG_SEED_PREFIX_LEN;
	/* the sender's chunk: right, or a few bytes off (mode bits 0..2) */
	uint32_t C = x->ra.cfg.chunk;
	static const int32_t skew[8] = { 0, 0, 0, 0, 0, -8, 8, -1 };
	c->csend = (uint32_t)((int32_t)C + skew[mode & 7]);
	if ((c->len + c->csend - 1) / c->csend > FG_FRAG_MAX)
		c->csend = C;
	c->defined = true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rx x;
	static const uint32_t chunks[4] = { 64, 72, 96, 128 };
	if (size < 2)
		return 0;
	if (!smem[0]) {
		static const uint8_t r0[] = { 2 }, r1[] = { 1, 3, 5 }, r2[] = { 4, 0 }, r3[] = { 6, 5, 4, 3, 2, 1, 0 };
		scfg.capacity = 4;
		scfg.hidden = HIDDEN;
		scfg.max_seq_len = MAX_SEQ;
		scfg.n_layers = N_LAYERS;
		scfg.deadline_ns = 4000;
		FUZZ_CHECK(fg_rule_make(&scfg.rules[0], r0, sizeof(r0)) == 0);
		FUZZ_CHECK(fg_rule_make(&scfg.rules[1], r1, sizeof(r1)) == 0);
		FUZZ_CHECK(fg_rule_make(&scfg.rules[2], r2, sizeof(r2)) == 0);
		FUZZ_CHECK(fg_rule_make(&scfg.rules[3], r3, sizeof(r3)) == 0);
		smem_len = (fg_slots_mem_size(&scfg) + 63) & ~(size_t)63;
		smem[0] = aligned_alloc(64, smem_len);
		smem[1] = aligned_alloc(64, smem_len);
		struct dp_reasm_cfg big = { .contexts = 8 };
		rmem_len = (dp_reasm_mem_size(&big) + 63) & ~(size_t)63;
		rmem = aligned_alloc(64, rmem_len);
		FUZZ_CHECK(smem[0] && smem[1] && rmem);
		fg_bands_default(&bands);
		bands.n_layers = N_LAYERS;
	}
	const uint8_t *p = data, *end = data + size;
	uint8_t c0 = *p++, c1 = *p++;

	memset(&x, 0, sizeof(x));
	memset(cf, 0, sizeof(cf));
	n_dn = 0;
	x.n_shards = 1 + (c0 & 1);
	x.now = 1;
	struct fg_slots_cfg sc = scfg;
	sc.n_shards = x.n_shards;
	sc.capacity = 1 + (c1 & 3);
	scfg.capacity = sc.capacity; /* check_resolved/outcome_seen read scfg */
	for (unsigned t = 0; t < x.n_shards; t++)
		FUZZ_CHECK(fg_slots_init(&x.slots[t], smem[t], smem_len, &sc) == 0);
	/* all lines active, one possibly disabled */
	fg_linefacts lines = 0;
	unsigned dis = (c1 >> 2) & 7;
	for (unsigned i = 0; i < FG_LINES; i++)
		lines |= (fg_linefacts)(i == dis ? FG_LINE_DISABLED : FG_LINE_ACTIVE) << (2 * i);
	x.ictx = (struct fg_ingest_ctx){ .bands = &bands, .limits = &limits, .lines = lines };

	uint32_t C = chunks[c0 >> 6];
	x.pool.n = (c0 >> 4) & 3;
	uint32_t frame_max = 5 * C;
	for (unsigned i = 0; i < x.pool.n; i++) {
		x.pool.buf[i] = malloc(frame_max);
		FUZZ_CHECK(x.pool.buf[i] != NULL);
	}
	struct dp_reasm_cfg rc = {
		.contexts = 1 + ((c0 >> 1) & 7),
		.chunk = C,
		.frame_max = frame_max,
		.timeout_ns = 64u * (8u + (c1 >> 5) * 16u),
		.slots = &x.slots[0],
		.shard_self = 0,
		.n_shards = x.n_shards,
		.n_layers = N_LAYERS,
		.bufs = { pool_get, pool_put, &x.pool },
	};
	FUZZ_CHECK(dp_reasm_init(&x.ra, rmem, rmem_len, &rc) == 0);

	while (p < end) {
		uint8_t op = *p++ % 4;
		if (op == 0) {
			if (end - p < 9)
				break;
			const uint8_t *a = p;
			p += 9;
			unsigned peer_i = a[0] % N_CPEERS;
			uint16_t fid = a[1] % N_FIDS;
			struct cframe *c = &cf[peer_i][fid];
			if (!c->defined)
				define_frame(&x, c, a + 2, &p, end);
			uint32_t total = (c->len + c->csend - 1) / c->csend;
			uint8_t order = a[8];
			switch (order % 5) {
			case 0:
				for (unsigned i = 0; i < total; i++)
					send_frag(&x, peer_i, fid, i);
				break;
			case 1:
				for (unsigned i = total; i-- > 0;)
					send_frag(&x, peer_i, fid, i);
				break;
			case 2: /* odd indices first, then even: fragment 0 late */
				for (unsigned i = 1; i < total; i += 2)
					send_frag(&x, peer_i, fid, i);
				for (unsigned i = 0; i < total; i += 2)
					send_frag(&x, peer_i, fid, i);
				break;
			case 3: /* all but one */
				for (unsigned i = 0; i < total; i++)
					if (i != (order >> 3) % total)
						send_frag(&x, peer_i, fid, i);
				break;
			default: /* just one */
				send_frag(&x, peer_i, fid, (order >> 3) % total);
				break;
			}
		} else if (op == 1) {
			if (end - p < 3)
				break;
			unsigned peer_i = p[0] % N_CPEERS;
			uint16_t fid = p[1] % N_FIDS;
			if (cf[peer_i][fid].defined)
				send_frag(&x, peer_i, fid, p[2]);
			p += 3;
		} else if (op == 2) {
			if (end - p < 2)
				break;
			unsigned peer_i = N_CPEERS + (p[0] & 1);
			size_t len = p[1];
			p += 2;
			if ((size_t)(end - p) < len)
				len = (size_t)(end - p);
			datagram(&x, peer_i, p, len);
			p += len;
		} else {
			if (end - p < 2)
				break;
			run_flush(&x); /* a burst ends before time moves */
			x.now += (uint64_t)p[0] * 64;
			uint64_t before = x.ra.timeouts;
			uint32_t n = dp_reasm_expire(&x.ra, x.now, 1 + p[1] % 8);
			x.timeouts += n;
			FUZZ_CHECK(x.ra.timeouts - before == n);
			p += 2;
			for (unsigned t = 0; t < x.n_shards; t++) {
				struct fg_slot_expired ex[4];
				while (fg_slots_expire(&x.slots[t], x.now, ex, 4) == 4)
					;
				FUZZ_CHECK(x.slots[t].in_use <= sc.capacity);
			}
		}
	}
	run_flush(&x);
	FUZZ_CHECK(x.ra.timeouts == x.timeouts);
	dp_reasm_fini(&x.ra);
	FUZZ_CHECK(dp_reasm_live(&x.ra) == 0);
	for (unsigned i = 0; i < x.pool.n; i++) {
		FUZZ_CHECK(!x.pool.out[i]); /* every buffer came back */
		free(x.pool.buf[i]);
	}
	FUZZ_CHECK(x.pool.gets == x.pool.puts);
	return 0;
}

/* dp_reasm.c - UDP fragmented-profile reassembly (see dp_reasm.h).
 *
 * Used by the lcore that owns the table only; pure C (no DPDK, no logging). */
#include "dp_reasm.h"

#include <errno.h>
#include <string.h>

#include "fg/slot_inline.h"

#define NIL UINT32_MAX
#define SEED_HDR DP_RA_SEED_HDR

enum ra_state { RA_FREE = 0, RA_HOLD, RA_SLOT, RA_BUFFER, RA_DISCARD, RA_DONE };

/* One frame's reassembly. The first line holds what every fragment reads
 * (the lookup, the state, the fragment bits), the second where a slot
 * context places (ref); the rest is read at fragment 0, completion and
 * expiry. */
struct dp_ra_ctx {
	uint32_t hnext;
	uint32_t hash;      /* dp_peer_hash(peer, 0) */
	uint16_t frame_id;
	uint8_t state;
	uint8_t total;
	uint8_t nrecv;
	bool has_last;
	bool bad;          /* DISCARD, never ACKed: the fragmentation was malformed, or nothing was placed (no_slot, stale, no buffer) */
	bool on_done;
	uint32_t use;       /* bumped when the context is taken and when it is freed (hints) */
	uint32_t last_len;
	uint32_t frame_len; /* 0 until fragment 0 */
	/* HOLD and SLOT: index | total << 8 of the fragment that comes next
	 * in order while the fragments in are exactly 0 .. nrecv - 1, taken
	 * in that order (nrecv | total << 8), else 0: a SLOT context's run
	 * takes such fragments on its fast path (run_on) */
	uint16_t next_key;
	uint64_t bits[4];
	/* SLOT: the attempt's reference (ref.buf is where body byte 0 lands),
	 * the body bytes not yet placed; SLOT and BUFFER: the last fragment's
	 * chunk length */
	struct fg_slot_ref ref;
	uint32_t missing;
	uint32_t tail;
	struct dp_peer peer;
	uint16_t stream_id;
	/* BUFFER: whether the frame is a chunk list (dp_ra_list at buf +
	 * frame_max) instead of assembled in buf, and the received buffers
	 * the list holds (in the two bytes before sequence) */
	bool keep;
	uint8_t nkept;
	uint32_t sequence;
	uint64_t t_ns;
	uint32_t prev, next;
	uint8_t *buf;
	/* BUFFER: fragment 0's header and its stream's class under the binding
	 * it came with (bound_layer + 1, 0 = unbound), handed out with the frame */
	struct fg_hdr hdr;
	struct fg_ingest_class cls;
	uint32_t binding;
	struct fg_seed seed; /* SLOT/DISCARD of a seed: header and prefix facts, body NULL */
};

/* Caller memory: the contexts, the hash buckets, the ring of tombstones. */
size_t dp_reasm_mem_size(const struct dp_reasm_cfg *cfg)
{
	return dp_align64((size_t)cfg->contexts * sizeof(struct dp_ra_ctx)) +
	       dp_align64((size_t)dp_pow2_at_least(cfg->contexts * 4) * sizeof(uint32_t)) +
	       dp_align64((size_t)dp_pow2_at_least(cfg->contexts) * sizeof(uint32_t));
}

int dp_reasm_init(struct dp_reasm *r, void *mem, size_t len, const struct dp_reasm_cfg *cfg)
{
	if (!cfg->contexts || cfg->contexts > (1u << 24) || cfg->chunk < 64 || !cfg->frame_max ||
	    cfg->frame_max > FG_FRAG_MAX * cfg->chunk || !cfg->bufs.get || !cfg->bufs.put ||
	    !cfg->n_shards || cfg->shard_self >= cfg->n_shards || ((uintptr_t)mem & 63) ||
	    (cfg->keep_max && !cfg->keep_drop))
		return -EINVAL;
	if (len < dp_reasm_mem_size(cfg))
		return -ENOSPC;
	memset(r, 0, sizeof(*r));
	r->cfg = *cfg;
	r->copy = dp_ra_copy_pick(2);
	r->gather = dp_ra_gather_pick(2);
	r->keep.avail = cfg->keep_max;
	r->ctx = mem;
	r->n_buckets = dp_pow2_at_least(cfg->contexts * 4);
	r->bucket = (uint32_t *)((uint8_t *)mem + dp_align64((size_t)cfg->contexts * sizeof(struct dp_ra_ctx)));
	r->done = (uint32_t *)((uint8_t *)r->bucket + dp_align64((size_t)r->n_buckets * sizeof(uint32_t)));
	r->done_mask = dp_pow2_at_least(cfg->contexts) - 1;
	memset(r->ctx, 0, (size_t)cfg->contexts * sizeof(struct dp_ra_ctx));
	for (uint32_t i = 0; i < r->n_buckets; i++)
		r->bucket[i] = NIL;
	for (uint32_t i = 0; i < cfg->contexts; i++)
		r->ctx[i].next = i + 1 < cfg->contexts ? i + 1 : NIL;
	r->free_head = 0;
	r->act_head = r->act_tail = NIL;
	return 0;
}

/* ---- chunk copies ------------------------------------------------------- */

/* dst[0..len) = src[0..len) in W-byte moves: eight a round, then four,
 * two and one as the rest needs, the last one ending at byte len (it may
 * rewrite bytes the one before wrote, with the same values); under W
 * bytes, memcpy. name##_in is the copy inlined, name its function, and
 * name##_gather the dp_ra_gather_fn of it. */
#define RA_COPY_FN(name, isa, W)                                                                          \
	__attribute__((target(isa), always_inline)) static inline void name##_in(                          \
		uint8_t *restrict dst, const uint8_t *restrict src, uint32_t len)                         \
	{                                                                                                 \
		typedef uint8_t vec __attribute__((vector_size(W)));                                      \
		vec v0, v1, v2, v3, v4, v5, v6, v7;                                                       \
		if (len < (W)) {                                                                          \
			memcpy(dst, src, len);                                                            \
			return;                                                                           \
		}                                                                                         \
		uint32_t k = 0;                                                                           \
		for (; k + 8 * (W) <= len; k += 8 * (W)) {                                                \
			memcpy(&v0, src + k, (W));                                                        \
			memcpy(&v1, src + k + (W), (W));                                                  \
			memcpy(&v2, src + k + 2 * (W), (W));                                              \
			memcpy(&v3, src + k + 3 * (W), (W));                                              \
			memcpy(&v4, src + k + 4 * (W), (W));                                              \
			memcpy(&v5, src + k + 5 * (W), (W));                                              \
			memcpy(&v6, src + k + 6 * (W), (W));                                              \
			memcpy(&v7, src + k + 7 * (W), (W));                                              \
			memcpy(dst + k, &v0, (W));                                                        \
			memcpy(dst + k + (W), &v1, (W));                                                  \
			memcpy(dst + k + 2 * (W), &v2, (W));                                              \
			memcpy(dst + k + 3 * (W), &v3, (W));                                              \
			memcpy(dst + k + 4 * (W), &v4, (W));                                              \
			memcpy(dst + k + 5 * (W), &v5, (W));                                              \
			memcpy(dst + k + 6 * (W), &v6, (W));                                              \
			memcpy(dst + k + 7 * (W), &v7, (W));                                              \
		}                                                                                         \
		if (k + 4 * (W) <= len) {                                                                 \
			memcpy(&v0, src + k, (W));                                                        \
			memcpy(&v1, src + k + (W), (W));                                                  \
			memcpy(&v2, src + k + 2 * (W), (W));                                              \
			memcpy(&v3, src + k + 3 * (W), (W));                                              \
			memcpy(dst + k, &v0, (W));                                                        \
			memcpy(dst + k + (W), &v1, (W));                                                  \
			memcpy(dst + k + 2 * (W), &v2, (W));                                              \
			memcpy(dst + k + 3 * (W), &v3, (W));                                              \
			k += 4 * (W);                                                                     \
		}                                                                                         \
		if (k + 2 * (W) <= len) {                                                                 \
			memcpy(&v0, src + k, (W));                                                        \
			memcpy(&v1, src + k + (W), (W));                                                  \
			memcpy(dst + k, &v0, (W));                                                        \
			memcpy(dst + k + (W), &v1, (W));                                                  \
			k += 2 * (W);                                                                     \
		}                                                                                         \
		if (k + (W) < len) {                                                                      \
			memcpy(&v0, src + k, (W));                                                        \
			memcpy(dst + k, &v0, (W));                                                        \
		}                                                                                         \
		memcpy(&v0, src + len - (W), (W));                                                        \
		memcpy(dst + len - (W), &v0, (W));                                                        \
	}                                                                                                 \
	__attribute__((target(isa))) static void name(uint8_t *restrict dst, const uint8_t *restrict src, \
						    uint32_t len)                                         \
	{                                                                                                 \
		name##_in(dst, src, len);                                                                 \
	}                                                                                                 \
	__attribute__((target(isa))) static void name##_gather(uint8_t *restrict dst,                     \
							       const uint8_t *const *p, unsigned n,       \
							       uint32_t C, uint32_t skip, uint32_t last)  \
	{                                                                                                 \
		name##_in(dst, p[0] + skip, C - skip);                                                    \
		dst += C - skip;                                                                          \
		for (unsigned i = 1; i + 1u < n; i++, dst += C)                                           \
			name##_in(dst, p[i], C);                                                          \
		name##_in(dst, p[n - 1], last);                                                           \
	}
RA_COPY_FN(copy_avx512, "avx512f", 64)
RA_COPY_FN(copy_avx2, "avx2", 32)

static void copy_libc(uint8_t *restrict dst, const uint8_t *restrict src, uint32_t len) { memcpy(dst, src, len); }
static void copy_libc_gather(uint8_t *restrict dst, const uint8_t *const *p, unsigned n, uint32_t C, uint32_t skip,
			     uint32_t last)
{
	memcpy(dst, p[0] + skip, C - skip);
	dst += C - skip;
	for (unsigned i = 1; i + 1u < n; i++, dst += C)
		memcpy(dst, p[i], C);
	memcpy(dst, p[n - 1], last);
}

/* The widest level of moves this CPU has, at most max_level (2: AVX-512,
 * 1: AVX2, 0: memcpy). */
static unsigned copy_level(unsigned max_level)
{
	__builtin_cpu_init();
	if (max_level >= 2 && __builtin_cpu_supports("avx512f"))
		return 2;
	if (max_level >= 1 && __builtin_cpu_supports("avx2"))
		return 1;
	return 0;
}

dp_ra_copy_fn *dp_ra_copy_pick(unsigned max_level)
{
	static dp_ra_copy_fn *const by_level[] = {copy_libc, copy_avx2, copy_avx512};
	return by_level[copy_level(max_level)];
}

dp_ra_gather_fn *dp_ra_gather_pick(unsigned max_level)
{
	static dp_ra_gather_fn *const by_level[] = {copy_libc_gather, copy_avx2_gather, copy_avx512_gather};
	return by_level[copy_level(max_level)];
}

/* ---- lists and hash ---------------------------------------------------- */

/* A peer's frames sit in consecutive buckets from its hash: frame ids of
 * one sender never collide within 4 * contexts, and the peer is hashed
 * once per burst, not per fragment. Four buckets a context: a full table
 * (tombstones recycled) keeps a quarter of them taken, so a new frame's
 * lookup and a recycled tombstone's unlink mostly meet a chain of one. */
static uint32_t bucket_of(const struct dp_reasm *r, uint32_t hash, uint16_t frame_id)
{
	return (hash + frame_id) & (r->n_buckets - 1);
}

/* The active list (creation order): taken out anywhere (completion),
 * appended at its tail. */
static inline void active_unlink(struct dp_reasm *r, uint32_t i)
{
	struct dp_ra_ctx *c = &r->ctx[i];
	if (c->prev != NIL)
		r->ctx[c->prev].next = c->next;
	else
		r->act_head = c->next;
	if (c->next != NIL)
		r->ctx[c->next].prev = c->prev;
	else
		r->act_tail = c->prev;
	r->n_active--;
}

static void active_append(struct dp_reasm *r, uint32_t i)
{
	struct dp_ra_ctx *c = &r->ctx[i];
	c->on_done = false;
	c->next = NIL;
	c->prev = r->act_tail;
	if (r->act_tail != NIL)
		r->ctx[r->act_tail].next = i;
	else
		r->act_head = i;
	r->act_tail = i;
	r->n_active++;
}

/* The tombstones (completion order, so lifetime order): a ring of
 * context indices, only ever taken from its head (expiry, recycling,
 * shutdown), so no links are written in the contexts. */
static inline uint32_t done_first(const struct dp_reasm *r) { return r->done[r->done_rd & r->done_mask]; }
static inline void done_pop(struct dp_reasm *r)
{
	r->done_rd++;
	r->n_done--;
}
static inline void done_push(struct dp_reasm *r, uint32_t i)
{
	r->done[(r->done_rd + r->n_done) & r->done_mask] = i;
	r->n_done++;
}

static void hash_remove(struct dp_reasm *r, uint32_t i)
{
	uint32_t *pp = &r->bucket[bucket_of(r, r->ctx[i].hash, r->ctx[i].frame_id)];
	while (*pp != NIL) {
		if (*pp == i) {
			*pp = r->ctx[i].hnext;
			return;
		}
		pp = &r->ctx[*pp].hnext;
	}
}

static uint32_t hash_find(const struct dp_reasm *r, const struct dp_peer *p, uint32_t hash, uint16_t frame_id)
{
	for (uint32_t i = r->bucket[bucket_of(r, hash, frame_id)]; i != NIL; i = r->ctx[i].hnext) {
		const struct dp_ra_ctx *c = &r->ctx[i];
		if (c->frame_id == frame_id && c->hash == hash && dp_peer_eq(&c->peer, p))
			return i;
	}
	return NIL;
}

void dp_reasm_find(const struct dp_reasm *r, const struct dp_peer *peer, uint32_t hash, uint16_t frame_id,
		   struct dp_ra_hint *hint)
{
	uint32_t i = hash_find(r, peer, hash, frame_id);
	*hint = (struct dp_ra_hint){.ctx = i};
	if (i == NIL)
		return;
	const struct dp_ra_ctx *c = &r->ctx[i];
	hint->use = c->use;
	if (c->state == RA_SLOT) {
		hint->body_len = c->ref.body_len;
		hint->body = c->ref.buf;
	} else if (c->state == RA_BUFFER) { /* frame byte x at buf + x, as the prefetch reckons */
		hint->body_len = c->frame_len - SEED_HDR;
		hint->body = c->buf + SEED_HDR;
	}
}

static void ctx_drop_buf(struct dp_reasm *r, struct dp_ra_ctx *c)
{
	if (c->buf) {
		r->cfg.bufs.put(r->cfg.bufs.arg, c->buf);
		c->buf = NULL;
	}
}

/* A BUFFER context that lists its chunks ends without handing its frame
 * out: the received buffers it kept are given back. */
static void keep_drop(struct dp_reasm *r, struct dp_ra_ctx *c)
{
	if (c->nkept) {
		r->cfg.keep_drop(r->cfg.bufs.arg, dp_ra_list(c->buf, r->cfg.frame_max)->m, c->nkept);
		r->keep.avail += c->nkept;
	}
	c->nkept = 0;
}

/* Return a context to the free list; releases its buffer and aborts a slot
 * attempt still in progress (timeouts, shutdown). */
static void ctx_free(struct dp_reasm *r, uint32_t i, bool abort_slot)
{
	struct dp_ra_ctx *c = &r->ctx[i];
	if (c->state == RA_SLOT && abort_slot && r->cfg.slots)
		fg_slot_abort(r->cfg.slots, &c->ref);
	if (c->state == RA_BUFFER && c->keep)
		keep_drop(r, c);
	ctx_drop_buf(r, c);
	hash_remove(r, i);
	if (c->on_done)
		done_pop(r); /* a tombstone is freed at the ring's head only */
	else
		active_unlink(r, i);
	c->state = RA_FREE;
	c->next = r->free_head;
	r->free_head = i;
	c->use++;
}

/* Same source address (port ignored: one station may use many ports). */
static bool same_addr(const struct dp_peer *a, const struct dp_peer *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, sizeof(a->addr));
}

/* A new context for frame frame_id of peer p (hash: dp_peer_hash(p, 0)),
 * fragment f its first: its index, or NIL when every context is taken by
 * an incomplete group of p's address. Forced inline into push: every
 * frame's first fragment comes this way, and a call would give it a
 * second prologue and epilogue. */
static inline __attribute__((always_inline)) uint32_t ctx_alloc(struct dp_reasm *r, const struct dp_peer *p,
								   uint32_t hash, uint16_t frame_id,
								   const struct fg_frag *f, uint64_t now)
{
	uint32_t i = r->free_head;
	struct dp_ra_ctx *c;
	if (i != NIL) {
		c = &r->ctx[i];
		r->free_head = c->next;
	} else if (r->n_done) {
		/* Full: the oldest tombstone is taken again (it holds no buffer
		 * and no slot attempt) before a new group is refused. */
		i = done_first(r);
		c = &r->ctx[i];
		hash_remove(r, i);
		done_pop(r);
		r->recycled++;
	} else if (r->act_head != NIL && !same_addr(&r->ctx[r->act_head].peer, p)) {
		/* Full of incomplete groups: the oldest gives way to a group from
		 * another source, so one flooding address only ever refuses itself
		 * (it holds the oldest groups). The evicted group ends as if timed
		 * out: its slot attempt is aborted, nothing of it was ACKed, and
		 * dp_reasm_expire reports it with the timeouts. */
		ctx_free(r, r->act_head, true);
		r->evicted++;
		r->evict_unreported++;
		i = r->free_head;
		c = &r->ctx[i];
		r->free_head = c->next;
	} else {
		return NIL;
	}
	/* What a new group reads before it writes: its counts and bits, the
	 * frame length and stream facts (0 until fragment 0), no buffer. The
	 * rest is written before it is read (ref and missing in SLOT, tail
	 * in SLOT and BUFFER, hdr, cls and binding in BUFFER, seed once
	 * fragment 0 is taken). */
	c->use++;
	c->hash = hash;
	c->peer = *p;
	c->frame_id = frame_id;
	c->state = RA_HOLD;
	c->total = f->total;
	c->nrecv = 0;
	c->next_key = (uint16_t)(f->total << 8);
	c->has_last = false;
	c->bad = false;
	c->frame_len = 0;
	memset(c->bits, 0, sizeof(c->bits));
	c->stream_id = 0;
	c->sequence = 0;
	c->buf = NULL;
	c->t_ns = now;
	uint32_t b = bucket_of(r, hash, frame_id);
	c->hnext = r->bucket[b];
	r->bucket[b] = i;
	active_append(r, i);
	return i;
}

/* An active group is complete: from the active list to the tombstones'
 * ring (a tombstone until its lifetime ends). Forced inline: every
 * contribution's last chunk ends its group, and a call would spill the
 * run's state around it. */
static inline __attribute__((always_inline)) void ctx_done(struct dp_reasm *r, uint32_t i, uint64_t now)
{
	struct dp_ra_ctx *c = &r->ctx[i];
	ctx_drop_buf(r, c);
	active_unlink(r, i);
	c->state = RA_DONE;
	c->t_ns = now;
	c->on_done = true;
	done_push(r, i);
}

/* ---- placement ----------------------------------------------------------- */

static bool bit_test(const struct dp_ra_ctx *c, unsigned i) { return (c->bits[i >> 6] >> (i & 63)) & 1u; }
static void bit_set(struct dp_ra_ctx *c, unsigned i) { c->bits[i >> 6] |= 1ull << (i & 63); }

/* A fragment's index and count as one word, index | total << 8: compared
 * with a context's next_key, one test tells the fragment that comes next
 * in order of the same frame's count. */
static inline uint16_t frag_key(const struct fg_frag *f) { return (uint16_t)(f->index | f->total << 8); }

/* Fragment f of context c's count is in (its bit set, counted): the
 * order goes on when it was the one next in order, else it is broken
 * for good. */
static inline void key_note(struct dp_ra_ctx *c, const struct fg_frag *f)
{
	c->next_key = c->next_key == frag_key(f) ? (uint16_t)(c->next_key + 1u) : 0;
}

static uint32_t frag_len(const struct dp_reasm *r, const struct dp_ra_ctx *c, unsigned i)
{
	return i + 1u == c->total ? c->last_len : r->cfg.chunk;
}

/* The group is judged: outcome o (res, when the slot engine gave one, is
 * already in out->res), later fragments are absorbed. */
static void judge(struct dp_ra_ctx *c, struct dp_reasm_out *out, enum fg_outcome o, int reason)
{
	c->state = RA_DISCARD;
	out->events |= DP_RA_EV_OUTCOME;
	out->res.outcome = o;
	out->reason = reason;
}

/* Fragment 0 refused before the slot engine gave a result: judged with
 * outcome o and reason, the buffer of held fragments released, the status
 * facts of what was decoded (token_seq, layer; no line). */
static void refuse(struct dp_reasm *r, struct dp_ra_ctx *c, struct dp_reasm_out *out, enum fg_outcome o, int reason,
		   uint32_t token_seq, uint16_t layer)
{
	ctx_drop_buf(r, c);
	memset(&out->seed, 0, sizeof(out->seed));
	out->seed.token_seq = token_seq;
	out->seed.dst_layer = layer;
	out->seed.line = FG_LINE_NONE;
	memset(&out->res, 0, sizeof(out->res));
	judge(c, out, o, reason);
}

/* Body bytes [off, off+len) of a SLOT context into its line buffer. The
 * context counts what is missing: its fragments tile the frame, each index
 * once, so every body byte is placed exactly once per attempt. The range
 * is checked anyway; a reference no longer live (or a range that does not
 * fit) goes to fg_slot_land, which names the outcome without placing. */
static inline enum fg_outcome ctx_land(struct dp_reasm *r, struct dp_ra_ctx *c, uint32_t off, const uint8_t *src,
				       uint32_t len, uint64_t now, struct fg_slot_result *res)
{
	if (__builtin_expect(fg_slot_ref_live(&c->ref) && len <= c->missing && off + len <= c->ref.body_len, 1)) {
		r->copy(c->ref.buf + off, src, len);
		c->missing -= len;
		if (c->missing)
			return FG_O_PARTIAL;
		/* the line is whole (inline unless it resolves the slot): when it
		 * resolves the slot, the resolution writes the body where it goes
		 * as well (the sink's buffer) */
		return fg_slot_whole_fast(r->cfg.slots, &c->ref, res, r->cfg.sink, r->cfg.sink_arg);
	}
	return fg_slot_land(r->cfg.slots, &c->ref, off, src, len, now, res);
}

/* Place frame bytes [foff, foff+len) of a SLOT context into the slot. Returns
 * false when the attempt ended (the context was judged). */
static bool slot_place(struct dp_reasm *r, struct dp_ra_ctx *c, uint32_t foff, const uint8_t *src, uint32_t len,
		       uint64_t now, struct dp_reasm_out *out)
{
	if (foff < SEED_HDR) {
		uint32_t skip = SEED_HDR - foff;
		if (len <= skip)
			return true;
		src += skip;
		len -= skip;
		foff = SEED_HDR;
	}
	enum fg_outcome o = ctx_land(r, c, foff - SEED_HDR, src, len, now, &out->res);
	switch (o) {
	case FG_O_PARTIAL:
		return true;
	case FG_O_ACCEPTED:
	case FG_O_RESOLVED:
		out->events |= DP_RA_EV_OUTCOME;
		return true;
	default:
		judge(c, out, o, 0);
		/* A superseded attempt (a resend under a new frame_id began for the
		 * same line) landed nothing: do not ACK it, or a resend that later
		 * times out would leave the sender believing the line arrived. */
		if (o == FG_O_STALE)
			c->bad = true;
		return false;
	}
}

/* Fragment 0 of a seed this shard owns, decoded under lim: begin the slot
 * attempt. Returns true when its chunks go straight into the slot; false
 * with the context judged (refused) or, for FG_O_DUP_PENDING, to be
 * buffered whole. The codec's checks are not made again when the limits
 * are the table's (fg_slot_begin_fast: a key's first line or the next
 * one inline, the rest fg_slot_begin_decoded's); else fg_slot_begin makes
 * them. Forced inline into first_fragment: every seed's fragment 0 comes
 * this way, and a call spills the outcome and the judgement to memory. */
static inline __attribute__((always_inline)) bool begin_direct(struct dp_reasm *r, struct dp_ra_ctx *c,
								const struct fg_seed *s,
								const struct fg_seed_limits *lim, uint64_t now,
								struct dp_reasm_out *out, bool *judged)
{
	struct fg_slots *slots = r->cfg.slots;
	enum fg_outcome o;
	*judged = false;
	if (__builtin_expect(fg_slots_fit_limits(slots, lim), 1)) {
		o = fg_slot_begin_fast(slots, s, now, &c->ref, &out->res);
	} else {
		if (fg_slot_begin(slots, s, now, &c->ref, &out->res) < 0) {
			ctx_drop_buf(r, c);
			memset(&out->res, 0, sizeof(out->res));
			judge(c, out, FG_O_MALFORMED, FG_R_UNENCODABLE);
			*judged = true;
			return false;
		}
		o = out->res.outcome;
	}
	if (o == FG_O_PARTIAL)
		return true;
	if (o == FG_O_DUP_PENDING)
		return false; /* whole frame to fg_slot_put (duplicate or conflict) */
	ctx_drop_buf(r, c);
	judge(c, out, o, 0);
	/* Not placed (another key's open slot holds the index): answered
	 * no_slot, never ACKed, so a sender that only resends unACKed frames
	 * tries again. */
	if (o == FG_O_NO_SLOT)
		c->bad = true;
	*judged = true;
	return false;
}

/* Fragment f of a BUFFER context that lists its chunks: its received
 * buffer kept when the caller named it (f is an element of the burst,
 * dp_reasm_keep_begin, while keep_max leaves room for the burst's); else the chunk
 * copied to its frame offset. Its list entry written either way. */
static inline void keep_chunk(struct dp_reasm *r, struct dp_ra_ctx *c, const struct fg_frag *f)
{
	struct dp_ra_list *l = dp_ra_list(c->buf, r->cfg.frame_max);
	uintptr_t d = (uintptr_t)f - (uintptr_t)r->keep.f;
	if (d < r->keep.size) {
		/* a fragment is taken once: its buffer is kept once (and counted
		 * out of avail with the burst's, dp_reasm_keep_end) */
		uint32_t e = (uint32_t)(d / sizeof(*f));
		l->m[c->nkept++] = r->keep.pkts[e];
		l->p[f->index] = f->chunk;
		r->keep.mask |= 1u << e;
		return;
	}
	uint8_t *dst = c->buf + (size_t)f->index * r->cfg.chunk;
	r->copy(dst, f->chunk, f->chunk_len);
	l->p[f->index] = dst;
}

/* keep_chunk out of line: the paths that are not a run (fragment 0, a
 * fragment pushed alone) stay as small as without keeping. */
static __attribute__((noinline)) void keep_one(struct dp_reasm *r, struct dp_ra_ctx *c, const struct fg_frag *f)
{
	keep_chunk(r, c, f);
}

/* Whether a frame whose fragment 0 (f0) makes its context BUFFER lists
 * its chunks: a seed (cls rc 0, band SEED; s its prefix) of another
 * shard, of at most DP_RA_KEEP_FRAGS fragments, nothing held before
 * fragment 0, and fragment 0 an element of the burst whose buffers the
 * caller named. */
static inline bool keep_frame(const struct dp_reasm *r, const struct dp_ra_ctx *c, const struct fg_frag *f0,
			      const struct fg_ingest_class *cls, const struct fg_seed *s)
{
	return (uintptr_t)f0 - (uintptr_t)r->keep.f < r->keep.size && !c->buf && c->total <= DP_RA_KEEP_FRAGS &&
	       cls->rc == 0 && cls->band == FG_BAND_SEED && r->cfg.n_shards > 1 &&
	       fg_shard_of(s->token_seq, s->dst_layer, r->cfg.n_layers, r->cfg.n_shards) != r->cfg.shard_self;
}

/* Fragment 0 arrived: read the header (and the seed prefix) and choose the
 * context's path. chunk holds frame bytes [0, len) (fragment f0's, whose
 * received buffer a frame that lists its chunks keeps). The header and the
 * class are kept in the context only for BUFFER (handed out with the
 * frame); a seed's prefix is decoded in place (c->seed: read by every
 * later outcome) and copied to out->seed only with an outcome. Forced
 * inline into push: every contribution's fragment 0 comes this way, and
 * a call would give it a second prologue and epilogue. */
static inline __attribute__((always_inline)) void first_fragment(struct dp_reasm *r, struct dp_ra_ctx *c,
								  const uint8_t *chunk, uint32_t len,
								  const struct fg_frag *f0,
								  const struct fg_ingest_ctx *ictx, uint64_t now,
								  struct dp_reasm_out *out)
{
	struct fg_hdr h;
	if (fg_hdr_decode_i(chunk, len, FG_TRANSPORT_STREAM, &h) < 0) {
		c->state = RA_DISCARD; /* unreachable with chunk >= 64; keeps the group inert */
		c->bad = true;
		out->reason = FG_R_SHORT_HEADER;
		return;
	}
	uint32_t flen = FG_HDR_LEN + h.length;
	/* the frame needs exactly total fragments: its last one, of
	 * flen - before bytes, carries 1..C */
	uint32_t before = (c->total - 1u) * r->cfg.chunk;
	if (flen <= before || flen - before > r->cfg.chunk || (c->has_last && c->last_len != flen - before)) {
		/* The header disagrees with the fragmentation: the group is malformed. */
		ctx_drop_buf(r, c);
		c->state = RA_DISCARD;
		c->bad = true;
		out->disp = DP_RA_MALFORMED;
		out->reason = FG_R_FRAG_CHUNK_SIZE;
		return;
	}
	c->frame_len = flen;
	c->tail = flen - before;
	c->stream_id = h.stream_id;
	c->sequence = h.sequence;
	out->stream_id = h.stream_id;
	out->sequence = h.sequence;
	if (flen > r->cfg.frame_max) {
		/* Too big for any buffer: judged now, still ACKed when complete. */
		refuse(r, c, out, FG_O_MALFORMED, FG_R_SEED_TOO_LARGE, h.sequence, 0);
		out->seed.line = 0;
		return;
	}
	/* Classified once: a buffered frame carries this to the whole-frame
	 * ingest (dp_reasm_out.hdr, .cls), which does not decode it again. */
	struct fg_ingest_class cls;
	fg_ingest_classify(ictx, h.stream_id, &cls);
	int cr = cls.rc;
	enum fg_band band = cls.band;
	uint16_t layer = cr == 0 ? cls.layer : 0;
	if (cr == -FG_R_LAYER_MISMATCH) {
		/* on a layer port, a stream naming another layer: refused by name */
		refuse(r, c, out, FG_O_MALFORMED, FG_R_LAYER_MISMATCH, h.sequence, ictx->bound_layer);
		return;
	}
	if (cr == 0 && (band == FG_BAND_SEED || band == FG_BAND_CANONICAL) && !fg_ingest_serves(ictx, layer)) {
		/* [cluster] layers: another node of the fleet serves it */
		refuse(r, c, out, FG_O_MALFORMED, FG_R_LAYER_NOT_SERVED, h.sequence, layer);
		return;
	}
	bool direct = false;
	if (cr == 0 && band == FG_BAND_SEED) {
		/* decoded in place (body NULL) */
		struct fg_seed *s = &c->seed;
		ssize_t rc = fg_seed_decode_prefix_i(&h, chunk + FG_HDR_LEN, len - FG_HDR_LEN, layer, ictx->limits, s);
		if (rc < 0) {
			refuse(r, c, out, FG_O_MALFORMED, (int)-rc, h.sequence, layer);
			return;
		}
		if (fg_linefacts_state(ictx->lines, s->line) == FG_LINE_DISABLED) {
			ctx_drop_buf(r, c);
			memset(&out->res, 0, sizeof(out->res));
			out->res.bytes = s->body_len;
			judge(c, out, FG_O_LINE_DISABLED, 0);
			out->seed = *s;
			return;
		}
		if (r->cfg.slots &&
		    (r->cfg.n_shards == 1 ||
		     fg_shard_of(s->token_seq, s->dst_layer, r->cfg.n_layers, r->cfg.n_shards) == r->cfg.shard_self)) {
			bool judged;
			direct = begin_direct(r, c, s, ictx->limits, now, out, &judged);
			if (judged) {
				out->seed = *s;
				return;
			}
		}
	}
	if (direct) {
		c->state = RA_SLOT;
		c->missing = c->ref.body_len;
		/* The fast path places a chunk by its index alone: only in a
		 * frame whose body is the attempt's (fragment 0 began it for
		 * this seed, whose body length the slot's shape fixes); should
		 * they differ, every chunk goes through ctx_land's range check. */
		if (__builtin_expect(flen - SEED_HDR != c->ref.body_len, 0))
			c->next_key = 0;
		uint8_t *held = c->buf;
		uint32_t blen = len - SEED_HDR;
		if (!held && len > SEED_HDR && blen < c->missing) {
			/* Fragment 0 alone so far: its body bytes land at body
			 * offset 0 of the attempt just begun (live), and bytes stay
			 * missing: slot_place's common case, without its checks. */
			r->copy(c->ref.buf, chunk + SEED_HDR, blen);
			c->missing -= blen;
			return;
		}
		if (slot_place(r, c, 0, chunk, len, now, out)) {
			/* Drain the fragments that arrived before fragment 0. */
			for (unsigned i = 1; held && i < c->total; i++) {
				if (bit_test(c, i) && !slot_place(r, c, i * r->cfg.chunk, held + (size_t)i * r->cfg.chunk,
								  frag_len(r, c, i), now, out))
					break;
			}
		}
		ctx_drop_buf(r, c);
		if (out->events & DP_RA_EV_OUTCOME)
			out->seed = c->seed;
		return;
	}
	/* BUFFER: held fragments are already at their frame offsets. */
	bool keep = keep_frame(r, c, f0, &cls, &c->seed);
	if (!c->buf) {
		c->buf = r->cfg.bufs.get(r->cfg.bufs.arg);
		if (!c->buf) {
			c->state = RA_DISCARD;
			c->bad = true; /* cannot be completed: let the sender resend */
			out->disp = DP_RA_NOBUF;
			return;
		}
	}
	c->keep = keep;
	c->nkept = 0;
	if (keep)
		keep_one(r, c, f0);
	else
		r->copy(c->buf, chunk, len);
	c->state = RA_BUFFER;
	c->hdr = h;
	c->cls = cls;
	c->binding = ictx->layer_bound ? (uint32_t)ictx->bound_layer + 1u : 0u;
}

/* Every fragment of context i is in (and it is not bad): ACK it, hand a
 * buffered frame out with fragment 0's header and class (and a seed's
 * decoded prefix), and the context is done. Forced inline: with two
 * lcores, every frame of the other's shard ends here (buffer_run), and a
 * call would give it a second prologue and epilogue. */
static inline __attribute__((always_inline)) void ctx_complete(struct dp_reasm *r, uint32_t i, uint64_t now,
								struct dp_reasm_out *out)
{
	struct dp_ra_ctx *c = &r->ctx[i];
	out->events |= DP_RA_EV_COMPLETE;
	out->stream_id = c->stream_id;
	out->sequence = c->sequence;
	if (c->state == RA_BUFFER) {
		out->events |= DP_RA_EV_FRAME;
		out->buf = c->buf;
		out->len = c->frame_len;
		out->nchunk = 0;
		if (c->keep) {
			out->nchunk = c->total;
			dp_ra_list(c->buf, r->cfg.frame_max)->nkept = c->nkept;
		}
		out->hdr = c->hdr;
		out->cls = c->cls;
		out->binding = c->binding;
		/* a seed's prefix was decoded at fragment 0 (first_fragment) */
		if (c->cls.rc == 0 && c->cls.band == FG_BAND_SEED)
			out->seed = c->seed;
		c->buf = NULL;
	}
	ctx_done(r, i, now);
}

/* One fragment f of frame frame_id (f->frame_id is not read): the work of
 * dp_reasm_push. Forced inline: dp_reasm_push_run carries the context it
 * leaves in hint straight into the run after it (push_one serves the
 * other callers). */
static inline __attribute__((always_inline)) void push(struct dp_reasm *r, const struct dp_peer *peer, uint32_t hash,
							struct dp_ra_hint *hint, const struct fg_frag *f,
							uint16_t frame_id, const struct fg_ingest_ctx *ictx,
							uint64_t now, struct dp_reasm_out *out)
{
	out->disp = DP_RA_TAKEN;
	out->events = 0;
	out->reason = 0;
	uint32_t C = r->cfg.chunk;
	bool last = f->index + 1u == f->total;
	/* A fragment before the last of a count >= 2 carrying exactly C (every
	 * fragment 0) passes both checks below at once. */
	if (__builtin_expect(!(f->index + 1u < f->total && f->chunk_len == C), 0)) {
		/* Chunk sizes: every fragment but the last is exactly C, the last 1..C. */
		if (f->total < 2 || f->index >= f->total) {
			out->disp = DP_RA_MALFORMED;
			out->reason = f->total ? FG_R_FRAG_INDEX_RANGE : FG_R_FRAG_TOTAL_ZERO;
			return;
		}
		if ((!last && f->chunk_len != C) || (last && (f->chunk_len == 0 || f->chunk_len > C))) {
			out->disp = DP_RA_MALFORMED;
			out->reason = FG_R_FRAG_CHUNK_SIZE;
			return;
		}
	}
	uint32_t i;
	if (hint && hint->ctx < r->cfg.contexts && r->ctx[hint->ctx].use == hint->use)
		i = hint->ctx; /* neither freed nor taken again since the lookup */
	else
		i = hash_find(r, peer, hash, frame_id);
	bool fresh = false;
	if (i == NIL) {
		i = ctx_alloc(r, peer, hash, frame_id, f, now);
		if (i == NIL) {
			out->disp = DP_RA_OVERFLOW;
			return;
		}
		fresh = true;
	}
	struct dp_ra_ctx *c = &r->ctx[i];
	if (hint) {
		hint->ctx = i;
		hint->use = c->use;
	}
	if (fresh && f->index == 0) {
		/* A new group's first fragment (the common order): its context
		 * holds nothing to check it against, and with total >= 2 it
		 * completes nothing. */
		c->bits[0] = 1;
		c->nrecv = 1;
		c->next_key++;
		first_fragment(r, c, f->chunk, f->chunk_len, f, ictx, now, out);
		return;
	}
	if (c->state == RA_DONE) {
		out->disp = DP_RA_DUP;
		return;
	}
	if (f->total != c->total) {
		out->disp = DP_RA_MALFORMED;
		out->reason = FG_R_FRAG_TOTAL_CHANGED;
		return;
	}
	if (bit_test(c, f->index)) {
		out->disp = DP_RA_DUP;
		return;
	}
	if (last && c->frame_len && f->chunk_len != c->frame_len - (c->total - 1u) * C) {
		out->disp = DP_RA_MALFORMED;
		out->reason = FG_R_FRAG_CHUNK_SIZE;
		return;
	}
	if (c->state == RA_DISCARD) {
		bit_set(c, f->index);
		c->nrecv++;
		out->disp = DP_RA_DISCARDED;
		out->stream_id = c->stream_id;
		out->sequence = c->sequence;
		goto complete;
	}
	if (c->state == RA_HOLD && f->index != 0) {
		if (!c->buf) {
			c->buf = r->cfg.bufs.get(r->cfg.bufs.arg);
			if (!c->buf) {
				out->disp = DP_RA_NOBUF;
				return;
			}
		}
		if ((size_t)f->index * C + f->chunk_len > r->cfg.frame_max) {
			/* Cannot fit whatever the header says: the frame is too large. */
			out->disp = DP_RA_MALFORMED;
			out->reason = FG_R_SEED_TOO_LARGE;
			return;
		}
		r->copy(c->buf + (size_t)f->index * C, f->chunk, f->chunk_len);
	}
	bit_set(c, f->index);
	c->nrecv++;
	key_note(c, f);
	if (last) {
		c->has_last = true;
		c->last_len = f->chunk_len;
	}
	switch (c->state) {
	case RA_HOLD:
		if (f->index == 0)
			first_fragment(r, c, f->chunk, f->chunk_len, f, ictx, now, out);
		break;
	case RA_SLOT:
		out->stream_id = c->stream_id;
		out->sequence = c->sequence;
		(void)slot_place(r, c, (uint32_t)f->index * C, f->chunk, f->chunk_len, now, out);
		break;
	case RA_BUFFER:
		if (c->keep)
			keep_one(r, c, f);
		else
			r->copy(c->buf + (size_t)f->index * C, f->chunk, f->chunk_len);
		break;
	default:
		break;
	}
	if ((out->events & DP_RA_EV_OUTCOME) && f->index != 0)
		out->seed = c->seed; /* the status needs fragment 0's prefix facts */
complete:
	if (c->nrecv == c->total && !c->bad && c->state != RA_HOLD)
		ctx_complete(r, i, now, out);
}

/* A chunk of a run landed with outcome o (the slot's, or PARTIAL) and its
 * fragment counted: the outcome answered and, every fragment in, the
 * context done. Forced inline into run_on: every contribution's last
 * chunk comes this way, and a call would give it a second prologue and
 * epilogue. */
static inline __attribute__((always_inline)) void run_landed(struct dp_reasm *r, uint32_t ci, enum fg_outcome o,
							      uint64_t now, struct dp_reasm_out *out)
{
	struct dp_ra_ctx *c = &r->ctx[ci];
	if (o != FG_O_PARTIAL) {
		if (o == FG_O_ACCEPTED || o == FG_O_RESOLVED) {
			out->events |= DP_RA_EV_OUTCOME;
		} else {
			judge(c, out, o, 0);
			if (o == FG_O_STALE)
				c->bad = true; /* as in slot_place: a superseded attempt is never ACKed */
		}
		out->stream_id = c->stream_id;
		out->sequence = c->sequence;
		out->seed = c->seed;
	}
	/* has_last and last_len are read only before fragment 0 (HOLD) */
	if (c->nrecv == c->total && !c->bad) {
		out->events |= DP_RA_EV_COMPLETE;
		out->stream_id = c->stream_id;
		out->sequence = c->sequence;
		ctx_done(r, ci, now);
	}
}

/* Whether fragment f of the frame of SLOT or BUFFER context c may land
 * in a run, and if so its bit set: its frame's count, its chunk C (or,
 * the last fragment, the tail fixed at fragment 0), its bit not set.
 * Such a context has seen fragment 0 (bit 0), so f->index >= 1: in SLOT
 * the chunk lies past the frame's header and seed prefix, index * C >= 64.
 * fg_frag_decode keeps index < f->total, so f->total == c->total keeps
 * it in the bits. The bit is set here, where its word is at hand: a
 * fragment that fits is taken (copied, or given to ctx_land). */
static inline bool run_take(struct dp_ra_ctx *c, const struct fg_frag *f, uint32_t C)
{
	unsigned i = f->index;
	if (f->total != c->total)
		return false;
	if (f->chunk_len != (i + 1u == c->total ? c->tail : C))
		return false;
	uint64_t *w = &c->bits[i >> 6], m = 1ull << (i & 63);
	if (*w & m)
		return false;
	*w |= m;
	return true;
}

/* keep_run's test of fragment g (run_take's, the bits in a local): of
 * the frame's count, its chunk C (or the last one's tail), its bit not
 * set; if so its bit set. */
static inline __attribute__((always_inline)) bool keep_take(const struct fg_frag *g, unsigned total, uint32_t tail,
							     uint32_t C, uint64_t *bits)
{
	const unsigned i = g->index; /* < g->total: with the count checked, < 16 */
	if (g->total != total)
		return false;
	const uint64_t b = 1ull << (i & 63);
	if (g->chunk_len != (i + 1u == total ? tail : C) || (*bits & b))
		return false;
	*bits |= b;
	return true;
}

/* buffer_run of a context that lists its chunks (keep_chunk for each),
 * out of line: the runs of the other contexts are compiled as without
 * keeping. Such a frame has at most DP_RA_KEEP_FRAGS fragments: its
 * bits are bits[0]'s, held in a local with the counts and written back
 * once. A run's fragments are consecutive elements of one burst: named
 * all, or none (keep_chunk's test, made once); named, the k it takes
 * are the burst's elements e0 .. e0 + k - 1, their buffers kept in that
 * order. */
static __attribute__((noinline)) unsigned keep_run(struct dp_reasm *r, uint32_t ci, const struct fg_frag *f,
						    unsigned n, uint64_t now, struct dp_reasm_out *out)
{
	struct dp_ra_ctx *c = &r->ctx[ci];
	const uint32_t C = r->cfg.chunk, tail = c->tail;
	const unsigned total = c->total;
	struct dp_ra_list *l = dp_ra_list(c->buf, r->cfg.frame_max);
	const uintptr_t d = (uintptr_t)f - (uintptr_t)r->keep.f;
	uint64_t bits = c->bits[0];
	unsigned nrecv = c->nrecv, k = 0;
	bool whole = false;
	if (d < r->keep.size) {
		const uint32_t e0 = (uint32_t)(d / sizeof(*f));
		void *const *pk = r->keep.pkts + e0;
		void **m = &l->m[c->nkept];
		for (; k < n; k++) {
			const struct fg_frag *g = &f[k];
			if (!keep_take(g, total, tail, C, &bits))
				break;
			m[k] = pk[k];
			l->p[g->index] = g->chunk;
			if (++nrecv == total && !c->bad) {
				whole = true;
				k++;
				break;
			}
		}
		c->nkept = (uint8_t)(c->nkept + k);
		r->keep.mask |= (uint32_t)(((1ull << k) - 1u) << e0);
	} else {
		for (; k < n; k++) {
			const struct fg_frag *g = &f[k];
			if (!keep_take(g, total, tail, C, &bits))
				break;
			uint8_t *dst = c->buf + (size_t)g->index * C;
			r->copy(dst, g->chunk, g->chunk_len);
			l->p[g->index] = dst;
			if (++nrecv == total && !c->bad) {
				whole = true;
				k++;
				break;
			}
		}
	}
	c->bits[0] = bits;
	c->nrecv = (uint8_t)nrecv;
	if (whole)
		ctx_complete(r, ci, now, out);
	return k;
}

/* The fast path of a BUFFER context: each chunk copied to its frame
 * offset in the buffer; the last one to come hands the whole frame out
 * (EV_FRAME, with fragment 0's header and class) and the context is done.
 * Forced inline into run_on: with two lcores, every frame of the other's
 * shard comes this way, and a call would give it a second prologue. */
static inline __attribute__((always_inline)) unsigned buffer_run(struct dp_reasm *r, uint32_t ci,
								  const struct fg_frag *f, unsigned n, uint64_t now,
								  struct dp_reasm_out *out)
{
	struct dp_ra_ctx *c = &r->ctx[ci];
	uint32_t C = r->cfg.chunk;
	unsigned k = 0;
	if (c->keep)
		return keep_run(r, ci, f, n, now, out);
	while (k < n && run_take(c, &f[k], C)) {
		r->copy(c->buf + (size_t)f[k].index * C, f[k].chunk, f[k].chunk_len);
		k++;
		if (++c->nrecv == c->total && !c->bad) {
			ctx_complete(r, ci, now, out);
			break;
		}
	}
	return k;
}

/* Fragments taken in order on the fast path of SLOT context c, up to
 * the one before next_key key: the fragments in are exactly 0 .. key's
 * index - 1 (at least 2: fragment 0 and one after it), their bits and
 * count written at once. */
static inline void run_commit(struct dp_ra_ctx *c, uint16_t key)
{
	unsigned hi = key & 0xFFu;
	if (__builtin_expect(hi <= 64, 1)) {
		c->bits[0] = ~0ull >> (64 - hi);
	} else {
		for (unsigned w = 0; w < 4; w++)
			c->bits[w] = hi >= 64 * (w + 1) ? ~0ull : hi > 64 * w ? ~0ull >> (64 - (hi - 64 * w)) : 0;
	}
	c->nrecv = (uint8_t)hi;
	c->next_key = key;
}

/* The run f[0..n) of context ci past the hint's checks (dp_reasm_land_run
 * after them; dp_reasm_push_run after its first fragment). live: the
 * context's slot attempt is known current (fragment 0 began it in this
 * call and landed with no outcome), so its liveness is not read again.
 * out->disp, events and reason are set (TAKEN, 0, 0). */
static inline __attribute__((always_inline)) unsigned run_on(struct dp_reasm *r, uint32_t ci, const struct fg_frag *f,
							      unsigned n, bool live, uint64_t now,
							      struct dp_reasm_out *out)
{
	struct dp_ra_ctx *c = &r->ctx[ci];
	const uint32_t C = r->cfg.chunk;
	if (c->state == RA_BUFFER)
		return buffer_run(r, ci, f, n, now, out);
	if (c->state != RA_SLOT)
		return 0;
	uint16_t key = c->next_key;
	/* Nothing but these chunks touches the context or the slot during the
	 * run: an attempt proved current once stays so. One that is not, or
	 * a chunk out of order: each chunk through ctx_land, which checks its
	 * range and names the outcome (an attempt no longer current ends the
	 * run at its first chunk). */
	if (__builtin_expect(frag_key(f) != key || (!live && !fg_slot_ref_live(&c->ref)), 0)) {
		unsigned k = 0;
		while (k < n && run_take(c, &f[k], C)) {
			c->next_key = 0;
			enum fg_outcome o = ctx_land(r, c, f[k].index * C - SEED_HDR, f[k].chunk, f[k].chunk_len, now,
						     &out->res);
			c->nrecv++;
			k++;
			if (o != FG_O_PARTIAL || c->nrecv == c->total) {
				run_landed(r, ci, o, now, out);
				break;
			}
		}
		return k;
	}
	/* The fast path: each fragment the next in order (its bit is not
	 * set) of the frame's count, so it lies past fragment 0 (index * C
	 * >= 64 > SEED_HDR) and, its chunk C or the last one's tail, inside
	 * the body (next_key is not 0: the frame's body is the attempt's).
	 * Fragments tile the body, so the last in order completes it: the
	 * line is whole. */
	const unsigned last = (unsigned)(key >> 8) - 1u;
	unsigned k = 0;
	for (;;) {
		const struct fg_frag *p = &f[k];
		unsigned i = key & 0xFFu;
		uint32_t len = p->chunk_len;
		if (__builtin_expect(i == last, 0)) {
			if (len != c->tail)
				break;
			r->copy(c->ref.buf + (i * C - SEED_HDR), p->chunk, len);
			run_commit(c, (uint16_t)(key + 1u));
			c->missing = 0;
			/* inline unless the line resolves the slot; then the
			 * resolution writes the body where it goes as well (the
			 * sink's buffer) */
			enum fg_outcome o =
				fg_slot_whole_fast(r->cfg.slots, &c->ref, &out->res, r->cfg.sink, r->cfg.sink_arg);
			if (__builtin_expect(o > FG_O_RESOLVED, 0)) {
				run_landed(r, ci, o, now, out);
				return k + 1;
			}
			/* Accepted or resolved (the attempt is current), and the
			 * group complete: the last fragment in order is its last
			 * one in, and a SLOT group is never bad. */
			out->events = DP_RA_EV_OUTCOME | DP_RA_EV_COMPLETE;
			out->stream_id = c->stream_id;
			out->sequence = c->sequence;
			out->seed = c->seed;
			ctx_done(r, ci, now);
			return k + 1;
		}
		if (len != C)
			break;
		r->copy(c->ref.buf + (i * C - SEED_HDR), p->chunk, C);
		key++;
		if (++k == n || frag_key(&f[k]) != key)
			break;
	}
	if (k) {
		run_commit(c, key);
		c->missing -= k * C;
	}
	return k;
}

unsigned dp_reasm_land_run(struct dp_reasm *r, const struct dp_ra_hint *hint, const struct fg_frag *f, unsigned n,
			   uint64_t now, struct dp_reasm_out *out)
{
	if (hint->ctx >= r->cfg.contexts || r->ctx[hint->ctx].use != hint->use)
		return 0;
	out->disp = DP_RA_TAKEN;
	out->events = 0;
	out->reason = 0;
	return run_on(r, hint->ctx, f, n, false, now, out);
}

unsigned dp_reasm_push_run(struct dp_reasm *r, const struct dp_peer *peer, uint32_t hash, struct dp_ra_hint *hint,
			   const struct fg_frag *f, uint16_t frame_id, unsigned n, const struct fg_ingest_ctx *ictx,
			   uint64_t now, struct dp_reasm_out *out)
{
	push(r, peer, hash, hint, f, frame_id, ictx, now, out);
	/* Taken with nothing to answer: the context push used (in hint) takes
	 * the rest as dp_reasm_land_run would. A SLOT context after fragment
	 * 0 taken began its attempt in this push (the state is set only
	 * there, and a fragment 0 seen before is a repeat); no outcome means
	 * every chunk placed since left it current. */
	if (n < 2 || out->disp != DP_RA_TAKEN || out->events)
		return 1;
	return 1 + run_on(r, hint->ctx, f + 1, n - 1, f->index == 0, now, out);
}

static __attribute__((noinline)) void push_one(struct dp_reasm *r, const struct dp_peer *peer, uint32_t hash,
					       struct dp_ra_hint *hint, const struct fg_frag *f,
					       const struct fg_ingest_ctx *ictx, uint64_t now, struct dp_reasm_out *out)
{
	push(r, peer, hash, hint, f, f->frame_id, ictx, now, out);
}

int dp_reasm_push_hinted(struct dp_reasm *r, const struct dp_peer *peer, uint32_t hash, struct dp_ra_hint *hint,
			 const struct fg_frag *f, const struct fg_ingest_ctx *ictx, uint64_t now,
			 struct dp_reasm_out *out)
{
	push_one(r, peer, hash, hint, f, ictx, now, out);
	return 0;
}

int dp_reasm_push(struct dp_reasm *r, const struct dp_peer *peer, const struct fg_frag *f,
		  const struct fg_ingest_ctx *ictx, uint64_t now, struct dp_reasm_out *out)
{
	push_one(r, peer, dp_peer_hash(peer, 0), NULL, f, ictx, now, out);
	return 0;
}

uint32_t dp_reasm_expire(struct dp_reasm *r, uint64_t now, uint32_t max)
{
	uint32_t n = 0, seen = 0;
	while (r->act_head != NIL && seen < max && r->ctx[r->act_head].t_ns + r->cfg.timeout_ns <= now) {
		/* every active context is an incomplete group: count it */
		n++;
		ctx_free(r, r->act_head, true);
		seen++;
	}
	while (r->n_done && seen < max && r->ctx[done_first(r)].t_ns + r->cfg.timeout_ns <= now) {
		ctx_free(r, done_first(r), false);
		seen++;
	}
	n += r->evict_unreported;
	r->evict_unreported = 0;
	r->timeouts += n;
	return n;
}

void dp_reasm_fini(struct dp_reasm *r)
{
	while (r->act_head != NIL)
		ctx_free(r, r->act_head, true);
	while (r->n_done)
		ctx_free(r, done_first(r), false);
}

void dp_ra_list_flatten(uint8_t *buf, uint32_t frame_max, unsigned nchunk, uint32_t len, uint32_t C,
			dp_ra_copy_fn *copy)
{
	const struct dp_ra_list *l = dp_ra_list(buf, frame_max);
	for (unsigned i = 0; i < nchunk; i++) {
		uint8_t *dst = buf + (size_t)i * C;
		if (l->p[i] != dst) /* else copied there already */
			copy(dst, l->p[i], i + 1u < nchunk ? C : len - (nchunk - 1u) * C);
	}
}

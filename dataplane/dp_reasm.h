/* dp_reasm.h - UDP fragmented-profile reassembly (wire.md 2.1), pure C.
 *
 * Owns: the bounded table of reassembly contexts of ONE lcore, keyed by
 * (source address, source port, frame_id); fragment validation; the choice,
 * when fragment 0 arrives, between placing chunks straight into the local
 * slot shard (fg_slot_begin / fg_slot_place) and assembling the whole frame
 * in a buffer (non-seed frames, seeds owned by another lcore's shard,
 * FG_O_DUP_PENDING); holding fragments that arrive before fragment 0;
 * bounded lifetime (timeout) and tombstones that absorb late duplicates.
 *
 * Who may call: the lcore that owns the table (and its slot shard), only.
 * No DPDK types, no allocation after dp_reasm_init, no logging, no I/O:
 * frame buffers come from the caller's dp_buf_ops (an rte_mempool in the
 * dataplane, malloc in the unit test).
 *
 * Frame-size rule (written down in docs/dataplane.md): every fragment except
 * the last carries exactly C = mtu - 4 bytes, C taken from the configuration;
 * a sender with a different MTU is refused with frag_chunk_size. Fragments
 * with frag_total == 1 never enter this table (the caller handles them whole).
 *
 * Context life:
 *
 *     (new) --frag i>0--> HOLD --frag 0, local seed, begin ok--> SLOT --all--> DONE
 *       |                  |  \--frag 0, other frame / remote shard /     |
 *       |                  |      DUP_PENDING----------------> BUFFER --all--> DONE
 *       |                  \--frag 0 refused / malformed -----> DISCARD --all--> DONE
 *       \--------- frag 0 goes straight to the same choice      (bad group: no DONE)
 *     SLOT --fragment of an attempt superseded by a resend (STALE)--> DISCARD, bad:
 *           never ACKed (the newer attempt decides what the sender learns)
 *     any non-DONE state --timeout--> freed (SLOT: fg_slot_abort), counted
 *     DONE --timeout, or recycled when the table is full--> freed
 *
 * Invariants:
 *  1. A context is on exactly one list: the active list (HOLD/SLOT/BUFFER/
 *     DISCARD, creation order = deadline order) or the ring of tombstones
 *     (DONE, completion order), which is only ever taken from its head.
 *  2. buf != NULL only in HOLD and BUFFER (and transiently while SLOT
 *     drains held fragments); every buffer obtained is returned exactly once,
 *     either by the table or by the caller that received EV_FRAME.
 *  3. nrecv == popcount(bits) <= total.
 *  4. In HOLD and SLOT, next_key (dp_reasm.c) is nrecv | total << 8 while
 *     the fragments in are exactly 0 .. nrecv - 1, and 0 once one came out
 *     of that order (no other state reads it).
 *  5. A received buffer the table keeps (keep_max, a BUFFER context that
 *     lists its chunks) is given back exactly once: by the table
 *     (keep_drop) when its context ends without handing the frame out
 *     (expiry, eviction, shutdown), else by whoever received the frame
 *     (EV_FRAME with nchunk), who counts it back (dp_reasm_kept_back).
 */
#ifndef DP_REASM_H
#define DP_REASM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/common.h"
#include "fg/ingest.h"
#include "fg/slot.h"
#include "fg/wire.h"
#include "dp_index.h"


/* Where frame buffers come from (each buffer holds frame_max bytes, and
 * DP_RA_KEEP_LIST more when the table keeps received buffers). */
struct dp_buf_ops {
	void *(*get)(void *arg);         /* NULL when none is free */
	void (*put)(void *arg, void *buf);
	void *arg;
};

/* A frame of a seed another shard owns may be handed out as the list of
 * its fragments' chunks instead of a copy: the received buffers the
 * chunks lie in are kept (the caller names them per burst, dp_ra_keep)
 * and go out with the frame, in a list at buf + frame_max. A chunk whose
 * buffer could not be kept (none named, or keep_max reached) is copied to
 * its frame offset in buf, and listed there. Frames of at most
 * DP_RA_KEEP_FRAGS fragments only. */
#define DP_RA_KEEP_FRAGS 16u
struct dp_ra_list {
	const uint8_t *p[DP_RA_KEEP_FRAGS]; /* fragment i's chunk (C bytes; the last one's, the rest) */
	void *m[DP_RA_KEEP_FRAGS];          /* the received buffers kept, m[0..nkept) */
	uint32_t nkept;
};
#define DP_RA_KEEP_LIST ((sizeof(struct dp_ra_list) + 63u) & ~(size_t)63u)
/* The chunk list of frame buffer buf of a table with frame_max. */
static inline struct dp_ra_list *dp_ra_list(void *buf, uint32_t frame_max)
{
	return (struct dp_ra_list *)(void *)((uint8_t *)buf + frame_max);
}

struct dp_reasm_cfg {
	uint32_t contexts;   /* live contexts, >= 1 */
	uint32_t chunk;      /* C = mtu - 4; >= 64 */
	uint32_t frame_max;  /* largest frame assembled (bytes); <= 255 * chunk */
	uint64_t timeout_ns; /* lifetime of an incomplete group, and of a tombstone */
	struct fg_slots *slots; /* the local shard, or NULL: never place directly */
	uint32_t shard_self, n_shards; /* fg_shard_of(..., n_shards) == shard_self: local */
	uint16_t n_layers;
	struct dp_buf_ops bufs;
	/* Where the body of a slot about to resolve goes besides the slot
	 * (a chunk completing the slot's last line, fg_slot_whole_sink):
	 * called with the slot and the body's length once the slot is known
	 * to resolve, it returns a buffer for the whole body or NULL.
	 * NULL: the body stays in the slot alone. */
	fg_sink_fn *sink;
	void *sink_arg;
	/* Received buffers kept at once (by contexts, and handed out not yet
	 * given back: dp_reasm_kept_back); 0: every chunk is copied. With it,
	 * frame buffers hold frame_max + DP_RA_KEEP_LIST bytes and keep_drop
	 * is set. */
	uint32_t keep_max;
	/* Received buffers the table kept, given back by it (a context that
	 * ends without handing its frame out); arg is bufs.arg. */
	void (*keep_drop)(void *arg, void *const *m, unsigned n);
};

/* What happened to one fragment (exactly one per push). */
enum dp_ra_disp {
	DP_RA_TAKEN = 0,   /* stored, placed or judged; see events */
	DP_RA_DUP,         /* duplicate fragment (same index, or of a finished frame) */
	DP_RA_OVERFLOW,    /* no free context */
	DP_RA_NOBUF,       /* no frame buffer free */
	DP_RA_MALFORMED,   /* refused; out->reason says why */
	DP_RA_DISCARDED,   /* absorbed by a group already judged or refused */
};

#define DP_RA_EV_OUTCOME 0x1u  /* a slot outcome for a seed on the direct path: seed, res, reason */
#define DP_RA_EV_FRAME 0x2u    /* a whole frame is in buf[0..len): the caller owns buf now */
#define DP_RA_EV_COMPLETE 0x4u /* every fragment arrived: ACK (stream_id, sequence) */

/* Written per fragment: disp, events and reason always; every other field
 * only with the disposition or event that names it (a fragment that only
 * landed writes three words, no record). */
struct dp_reasm_out {
	enum dp_ra_disp disp;
	unsigned events;
	int reason;            /* fg_reason for MALFORMED or an OUTCOME of FG_O_MALFORMED; else 0 */
	uint16_t stream_id;    /* COMPLETE, OUTCOME, DISCARDED */
	uint32_t sequence;
	void *buf;             /* FRAME */
	uint32_t len;
	uint8_t nchunk;        /* FRAME: 0, the frame is in buf[0..len); else its nchunk fragments' chunks
				* are listed at dp_ra_list(buf, frame_max) (kept buffers go with it) */
	/* FRAME: the frame's header and its stream's class, decoded once at
	 * fragment 0 under the binding `binding` (bound layer + 1, 0 = unbound):
	 * the whole-frame ingest uses them when its binding is the same */
	struct fg_hdr hdr;
	struct fg_ingest_class cls;
	uint32_t binding;
	struct fg_seed seed;   /* OUTCOME; FRAME of a seed (cls.rc 0, band SEED): decoded header and prefix (body NULL) */
	struct fg_slot_result res; /* OUTCOME */
};

/* The copy a table places chunks with: dst[0..len) = src[0..len), the
 * two not overlapping. */
typedef void dp_ra_copy_fn(uint8_t *restrict dst, const uint8_t *restrict src, uint32_t len);
/* The widest copy this CPU runs among those up to level max_level (2:
 * 64-byte AVX-512 moves, 1: 32-byte AVX2 moves, 0: memcpy); a table takes
 * the widest (dp_reasm_init) for every chunk it places or buffers. A
 * chunk is a fragment's payload, a few wide moves: eight a round, the
 * rest in four, two and one, the last one ending at the chunk's last
 * byte, without memcpy's size classes or a call into libc. Any thread. */
dp_ra_copy_fn *dp_ra_copy_pick(unsigned max_level);
/* The chunks p[0..n) (n >= 2) end to end into dst, each copied as the
 * copy of the same level copies it, in one call: p[0] from byte skip
 * (C - skip bytes), p[1..n-1) C bytes each, p[n-1] last bytes. */
typedef void dp_ra_gather_fn(uint8_t *restrict dst, const uint8_t *const *p, unsigned n, uint32_t C, uint32_t skip,
			     uint32_t last);
dp_ra_gather_fn *dp_ra_gather_pick(unsigned max_level);

/* The received buffers of the burst being placed, named by the caller
 * around its run (dp_reasm_keep_begin, dp_reasm_keep_end): fragment f[e]
 * of the burst lies in buffer pkts[e]; bit e of mask set when the table
 * kept it (the caller does not give it back). */
struct dp_ra_keep {
	const struct fg_frag *f;  /* the burst's fragments */
	uint32_t size;            /* bytes of f[] named; 0: none (outside a burst) */
	uint32_t mask;
	void *const *pkts;
	uint32_t avail;           /* buffers it may keep yet (keep_max less those out): a burst's
				   * are named only while a whole burst fits (size 0 else) */
	uint32_t back_seen;       /* back when avail was last brought up to date */
	/* given back by their receivers (dp_reasm_kept_back), on a line of its
	 * own: other lcores write it */
	_Atomic uint32_t back __attribute__((aligned(64)));
};

struct dp_ra_ctx;
struct dp_reasm {
	struct dp_reasm_cfg cfg;
	dp_ra_copy_fn *copy;     /* dp_ra_copy_pick(2); the owner lcore may copy with it too */
	dp_ra_gather_fn *gather; /* dp_ra_gather_pick(2): a chunk list's body, on the owner lcore */
	struct dp_ra_ctx *ctx;   /* [contexts] */
	uint32_t *bucket;        /* [n_buckets] */
	uint32_t n_buckets;
	uint32_t free_head;
	uint32_t act_head, act_tail;
	/* tombstones: done[(done_rd + k) & done_mask], k < n_done, oldest first */
	uint32_t *done;
	uint32_t done_mask, done_rd;
	uint32_t n_active, n_done;
	/* monotonic */
	uint64_t timeouts, recycled;
	uint64_t evicted;          /* incomplete groups evicted for another source's group */
	uint32_t evict_unreported; /* evictions not yet returned by dp_reasm_expire */
	struct dp_ra_keep keep;
};

/* Name the received buffers of the burst f[0..n) (n <= 32) before its
 * run: f[e] lies in pkts[e] (see struct dp_ra_keep); only with
 * cfg.keep_max. */
static inline void dp_reasm_keep_begin(struct dp_reasm *r, const struct fg_frag *f, uint32_t n, void *const *pkts)
{
	uint32_t b = atomic_load_explicit(&r->keep.back, memory_order_relaxed);
	r->keep.avail += b - r->keep.back_seen;
	r->keep.back_seen = b;
	r->keep.f = f;
	r->keep.size = r->keep.avail >= n ? n * (uint32_t)sizeof(*f) : 0;
	r->keep.mask = 0;
	r->keep.pkts = pkts;
}
/* After the run: which of the burst's buffers the table kept (bit e:
 * pkts[e]). */
static inline uint32_t dp_reasm_keep_end(struct dp_reasm *r)
{
	r->keep.size = 0;
	r->keep.avail -= (uint32_t)__builtin_popcount(r->keep.mask);
	return r->keep.mask;
}
/* n buffers the table kept, handed out with a frame, given back (by the
 * thread that received the frame; any thread). */
static inline void dp_reasm_kept_back(struct dp_reasm *r, uint32_t n)
{
	atomic_fetch_add_explicit(&r->keep.back, n, memory_order_relaxed);
}
/* The frame of a chunk list (dp_reasm_out.nchunk chunks, frame length
 * len, chunk C) made whole in buf: every chunk not yet at its frame
 * offset copied there with copy. Its kept buffers are not read after
 * (the list's m[0..nkept), for the caller to give back). */
void dp_ra_list_flatten(uint8_t *buf, uint32_t frame_max, unsigned nchunk, uint32_t len, uint32_t C,
			dp_ra_copy_fn *copy);

/* Bytes of caller memory for a table (64-byte aligned). */
size_t dp_reasm_mem_size(const struct dp_reasm_cfg *cfg);
/* Lay a table out in mem[0..len). 0, -EINVAL (cfg) or -ENOSPC (len). */
FG_MUST_CHECK int dp_reasm_init(struct dp_reasm *r, void *mem, size_t len, const struct dp_reasm_cfg *cfg);

/* One fragment with frag->total >= 2 (fg_frag_decode already checked
 * total != 0 and index < total). ctx gives bands, limits and the line facts
 * of this burst. Fills *out; returns 0 (the disposition is out->disp).
 * When out->events has EV_OUTCOME with RESOLVED, the seed is readable with
 * fg_slot_seed(slots, out->res.slot) until the next call that mutates the
 * shard. */
FG_MUST_CHECK int dp_reasm_push(struct dp_reasm *r, const struct dp_peer *peer, const struct fg_frag *frag,
				const struct fg_ingest_ctx *ctx, uint64_t now_ns, struct dp_reasm_out *out);

/* The burst path (dp_shard.c): a burst's fragments are looked up first,
 * their destinations prefetched, then pushed. A hint names the context a
 * fragment's frame had at the lookup (or none: look up when pushing);
 * dp_reasm_push_hinted uses it while that context was neither freed nor
 * taken again since (its use count), and writes back the context it used,
 * so the next fragment of the same frame in the burst starts from it.
 * hash = dp_peer_hash(peer, 0). */
#define DP_RA_HINT_NONE UINT32_MAX
/* body_len and body are dp_reasm_find's, for the prefetch: where frame
 * byte DP_RA_SEED_HDR lands and how many bytes follow it (a context
 * placing into a slot: its body; one assembling a frame buffer: the rest
 * of the frame; else 0 bytes). dp_reasm_push_hinted writes ctx and use
 * back, not these. */
struct dp_ra_hint {
	uint32_t ctx;      /* context index, or DP_RA_HINT_NONE */
	uint32_t use;      /* its use count at the lookup */
	uint32_t body_len;
	uint8_t *body;
};
/* Frame bytes before a seed's body: the frame header and the seed prefix. */
#define DP_RA_SEED_HDR (FG_HDR_LEN + FG_SEED_PREFIX_LEN)
void dp_reasm_find(const struct dp_reasm *r, const struct dp_peer *peer, uint32_t hash, uint16_t frame_id,
		   struct dp_ra_hint *hint);
/* Prefetch where fragment `index` of the hinted frame lands: its first two
 * lines in the slot or the frame buffer the context had at the lookup (a
 * hint gone stale since prefetches memory nobody writes: harmless).
 * Fragment 0 (whose offset wraps) and bytes past the body fetch nothing. */
static inline void dp_reasm_prefetch(const struct dp_reasm *r, const struct dp_ra_hint *hint, unsigned index)
{
	uint32_t off = index * r->cfg.chunk - DP_RA_SEED_HDR;
	if (off < hint->body_len) {
		__builtin_prefetch(hint->body + off, 1, 3);
		__builtin_prefetch(hint->body + off + 64, 1, 3);
	}
}
/* dp_reasm_push with the peer's hash and a hint from dp_reasm_find (or
 * NULL: look up). */
FG_MUST_CHECK int dp_reasm_push_hinted(struct dp_reasm *r, const struct dp_peer *peer, uint32_t hash,
				       struct dp_ra_hint *hint, const struct fg_frag *frag,
				       const struct fg_ingest_ctx *ctx, uint64_t now_ns, struct dp_reasm_out *out);

/* The common case of the burst path: a run of fragments f[0..n) of the
 * frame of a current hint whose context places straight into a slot, or
 * assembles the frame in a buffer (each of index >= 1, neither a repeat
 * nor malformed), in arrival order, with nothing else between them. The
 * context's state (and the slot attempt) are checked once for the run,
 * each fragment's length on its own, and its bit or, in a slot while the
 * frame's fragments came in order, that it is the next in order of the
 * frame's count (the run's bits then written once). Returns how many of
 * them it took, in order; a fragment it does not take changes nothing
 * (push it).
 * Stops after the chunk that completes the body or the frame, or meets an
 * attempt no longer current: *out is then that fragment's, as
 * dp_reasm_push_hinted would have filled it (its events: the outcome,
 * every fragment in, the whole frame); for a run that only landed,
 * out->disp == DP_RA_TAKEN and out->events == 0. *out is meaningful only
 * for a result > 0. */
FG_MUST_CHECK unsigned dp_reasm_land_run(struct dp_reasm *r, const struct dp_ra_hint *hint, const struct fg_frag *f,
					 unsigned n, uint64_t now_ns, struct dp_reasm_out *out);
/* A run f[0..n) (n >= 1; fragments of frame frame_id as the burst keeps
 * them: f->frame_id is not read) whose first fragment dp_reasm_land_run
 * did not take (its frame's first fragment to come, in the common order
 * fragment 0, or one it refused): f[0] pushed as dp_reasm_push_hinted
 * would push it (hint: a current hint or DP_RA_HINT_NONE, written back),
 * and when it is taken with nothing to answer, the fragments after it
 * taken in the same call as dp_reasm_land_run would take them from the
 * context push used (fragment 0 of a seed: the record made and the slot
 * attempt begun are used without a second lookup or liveness test).
 * Returns how many of f[] it consumed, >= 1: f[0] was taken unless
 * out->disp != DP_RA_TAKEN (then it returns 1); every one after it was.
 * *out is the last one's, as dp_reasm_land_run and
 * dp_reasm_push_hinted fill it; the ones before it only landed. */
FG_MUST_CHECK unsigned dp_reasm_push_run(struct dp_reasm *r, const struct dp_peer *peer, uint32_t hash,
					 struct dp_ra_hint *hint, const struct fg_frag *f, uint16_t frame_id,
					 unsigned n, const struct fg_ingest_ctx *ictx, uint64_t now_ns,
					 struct dp_reasm_out *out);

/* Free contexts whose lifetime ended (oldest first, at most max); aborts the
 * slot attempt of a timed-out SLOT context. Returns how many INCOMPLETE
 * groups timed out (tombstones are freed silently), plus the incomplete
 * groups evicted since the last call (a full table gives its oldest group
 * to a new group from another source address: counted as timed out). */
uint32_t dp_reasm_expire(struct dp_reasm *r, uint64_t now_ns, uint32_t max);

/* Release every context and buffer (shutdown). */
void dp_reasm_fini(struct dp_reasm *r);

/* Live contexts (active + tombstones). */
static inline uint32_t dp_reasm_live(const struct dp_reasm *r) { return r->n_active + r->n_done; }

#endif

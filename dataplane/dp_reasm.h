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
 */
#ifndef DP_REASM_H
#define DP_REASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/common.h"
#include "fg/ingest.h"
#include "fg/slot.h"
#include "fg/wire.h"
#include "dp_index.h"


/* Where frame buffers come from (each buffer holds frame_max bytes). */
struct dp_buf_ops {
	void *(*get)(void *arg);         /* NULL when none is free */
	void (*put)(void *arg, void *buf);
	void *arg;
};

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

struct dp_ra_ctx;
struct dp_reasm {
	struct dp_reasm_cfg cfg;
	dp_ra_copy_fn *copy;     /* dp_ra_copy_pick(2); the owner lcore may copy with it too */
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
};

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

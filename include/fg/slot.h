/* slot.h - the seed slot engine (pure core: no DPDK, no sockets, no logging).
 *
 * Owns: a fixed-capacity table of seed slots keyed by (token_seq, dst_layer)
 * in memory the caller provides (hugepages in the dataplane, malloc in tests),
 * per-line contribution buffers, byte-range placement, resolution in the
 * rule's canonical order, XXH3-64 fingerprints, duplicates and conflicts,
 * deadlines and expiry.
 *
 * Key -> slot: direct mapped, no hash table. The coordinator allocates
 * token_seq densely, so with k = token_seq * n_layers + layer,
 * index = (k / n_shards) mod capacity puts a window of
 * capacity * n_shards / n_layers consecutive tokens side by side (the
 * SwitchML idea of mapping the sender's pool index directly). Dividing by
 * n_shards matters: fg_shard_of gives a table only keys with
 * k mod n_shards == shard, and without the division those would use only
 * capacity / n_shards of its indices. A key whose
 * index is held by another live (open) slot gets FG_O_NO_SLOT; a resolved,
 * expired or poisoned occupant is reclaimed, its buffers are not read again
 * (every line's landed count is reset, so no stale byte is ever used).
 *
 * Pins: a resolved slot whose body someone still reads in place (the
 * dataplane's TX mbufs attached to it, sent by reference) is pinned
 * (fg_slot_pin) until that reader lets go (fg_slot_unpin). While pinned its
 * body memory is never written: the slot is not reclaimed for another key
 * and not reopened (the claim answers FG_O_NO_SLOT, as for a live open
 * slot), whatever happens meanwhile (a flush, a conflict that poisons it).
 * The pin holder bounds how long that lasts.
 *
 * Concurrency contract: SINGLE WRITER PER TABLE. One table is one shard; it is
 * mutated and read only by the thread that owns it. Several threads scale by
 * owning several tables (fg_shard_of picks the table for a key) and handing
 * frames to the owner through an fg_ring (ring.h). Nothing here is atomic.
 *
 * Invariants (per slot):
 *  1. state FREE: no line has landed bytes; key fields are meaningless.
 *  2. state OPEN: complete <= expected; every complete line has landed == body_len;
 *     all landed contributions share start_pos and seq_len.
 *  3. state RESOLVED: complete == expected; the resolved body is in the
 *     slot's own result buffer (one more buffer per slot) and its
 *     fingerprint is set.
 *  4. state EXPIRED / POISONED: no further bytes are accepted for this key
 *     (a flushed slot is FREE, not EXPIRED: see fg_slots_flush).
 *  5. A slot is on the open FIFO iff its state is OPEN; the FIFO is in
 *     deadline order because every slot gets the same deadline.
 */
#ifndef FG_SLOT_H
#define FG_SLOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/common.h"
#include "fg/fano.h"
#include "fg/wire.h"

#define FG_MAX_LAYERS 256u

/* A per-layer resolution rule: the lines expected and the canonical order.
 * Made by fg_rule_make; fg_slots_init refuses a rule whose fields
 * disagree. */
struct fg_rule {
	uint8_t n;                /* 1..7 lines */
	uint8_t order[FG_LINES];  /* line indices in reduction order */
	uint8_t mask;             /* bit i set when line i is expected */
	uint8_t pos[FG_LINES];    /* line i's index in order, FG_LINES when not expected:
				   * placing a line never searches the order */
};
/* Fill a rule from an ordered list; returns 0 or -EINVAL (dup/out of range). */
FG_MUST_CHECK int fg_rule_make(struct fg_rule *r, const uint8_t *lines, unsigned n);

enum fg_outcome {
	FG_O_ACCEPTED = 0,   /* "accepted": contribution complete, slot awaits other lines */
	FG_O_RESOLVED,       /* "resolved": this contribution completed the slot */
	FG_O_PARTIAL,        /* "partial": bytes placed, contribution not whole yet */
	FG_O_DUPLICATE,      /* "duplicate": same line, identical body: no-op */
	FG_O_DUP_PENDING,    /* "duplicate_pending": line already whole; present the whole body to fg_slot_put */
	FG_O_CONFLICT,       /* "conflict": same line, different body: slot poisoned */
	FG_O_LATE,           /* "late": slot already resolved; not re-added */
	FG_O_EXPIRED,        /* "expired": slot expired; not re-added */
	FG_O_POISONED,       /* "poisoned": slot poisoned by an earlier conflict */
	FG_O_NO_SLOT,        /* "no_slot": table index held by another live (or pinned) slot */
	FG_O_SHAPE_MISMATCH, /* "shape_mismatch": start_pos/seq_len disagree with the slot */
	FG_O_UNEXPECTED_LINE,/* "unexpected_line": the layer's rule does not expect this line */
	FG_O_STALE,          /* "stale": fragment of a superseded attempt */
	FG_O_BAD_RANGE,      /* "bad_range": placement outside the body */
	FG_O_MALFORMED,      /* "malformed": the codec refused the frame (see reason) */
	FG_O_LINE_DISABLED,  /* "line_disabled": the line is disabled by the operator */
	FG_O__COUNT
};
const char *fg_outcome_name(enum fg_outcome o);

struct fg_slots_cfg {
	uint32_t capacity;    /* slots in this table, >= 1 */
	uint32_t hidden;      /* floats per row */
	uint32_t max_seq_len; /* rows per contribution */
	uint16_t n_layers;    /* destination layers, <= FG_MAX_LAYERS */
	uint32_t n_shards;    /* tables the key space is split over by
			       * fg_shard_of; 0 and 1 both mean one */
	uint64_t deadline_ns; /* from slot open to expiry */
	struct fg_rule rules[FG_MAX_LAYERS]; /* per layer */
};

/* Bytes of caller memory needed for a table (64-byte aligned pieces). */
size_t fg_slots_mem_size(const struct fg_slots_cfg *cfg);

struct fg_slot; /* opaque, lives in the caller's memory */

/* The table handle (caller-owned storage, small). */
struct fg_slots {
	struct fg_slots_cfg cfg;
	uint8_t max_lines;     /* max rule n: buffers per slot */
	uint32_t body_max;     /* bytes per line buffer */
	size_t slot_stride;
	uint8_t *mem;
	uint32_t fifo_head, fifo_tail; /* open slots in opening order */
	uint32_t epoch;        /* model epoch: set by the table's owner (a conflict does not move it) */
	/* accounting (all monotonic except in_use) */
	uint64_t opened, resolved, expired, poisoned, reclaimed;
	uint32_t in_use;       /* slots OPEN */
	uint64_t flushed;      /* open slots freed by fg_slots_flush (not in expired).
				* Ledger: opened = in_use + resolved + expired + flushed
				* + abandoned + slots poisoned while OPEN */
	uint64_t abandoned;    /* open slots freed by fg_slot_abort: no line whole and
				* no attempt left (a fragment-0-only group) */
};

/* Initialise a table in mem[0..len). Returns 0, -EINVAL (bad cfg) or
 * -ENOSPC (len < fg_slots_mem_size). mem must be 64-byte aligned. */
FG_MUST_CHECK int fg_slots_init(struct fg_slots *s, void *mem, size_t len, const struct fg_slots_cfg *cfg);

/* Slot states; see the state diagram in docs/slots.md. */
enum fg_slot_state { FG_SLOT_FREE = 0, FG_SLOT_OPEN, FG_SLOT_RESOLVED, FG_SLOT_EXPIRED, FG_SLOT_POISONED };
/* Stable lower-case name ("free", "open", ...); "unknown" out of range. */
const char *fg_slot_state_name(enum fg_slot_state st);

struct fg_slot_result {
	enum fg_outcome outcome;
	uint32_t slot;       /* index; UINT32_MAX when no slot was involved
			      * (NO_SLOT, UNEXPECTED_LINE, MALFORMED) */
	uint8_t landed;      /* lines whose whole body is present (bit i = line i) */
	uint8_t expected;    /* rule mask */
	uint8_t state;       /* enum fg_slot_state of the slot after the call
			      * (FREE when no slot was involved) */
	uint32_t epoch;      /* table epoch after the call */
	uint64_t fingerprint;/* resolved seed's fingerprint whenever the slot is
			      * RESOLVED after the call (RESOLVED, LATE), else 0 */
	uint32_t bytes;      /* contribution body bytes */
};

/* Place one whole contribution (TLS, raw UDP, one-fragment UDP, reassembled
 * duplicates). seed should come from fg_seed_decode (impossible fields are
 * refused as FG_O_MALFORMED anyway); seed->body is copied, not kept.
 * Returns 0 and fills *res (outcome table: docs/slots.md section 3), or
 * -EINVAL for NULL arguments. When RESOLVED, the resolved body is available
 * through fg_slot_seed until the slot is poisoned or reclaimed by another
 * key, which any later mutating call may do: send or copy it first.
 * Owner thread only. */
FG_MUST_CHECK int fg_slot_put(struct fg_slots *s, const struct fg_seed *seed, uint64_t now_ns,
			      struct fg_slot_result *res);

/* Fragment path. fg_slot_begin opens (or finds) the slot for a contribution
 * whose header and prefix are known (fg_seed_decode_prefix) and starts an
 * attempt for its line; fg_slot_place copies body bytes [off, off+len) into
 * the line's buffer in place. The contribution counts only once body_len
 * bytes have landed: the caller places each byte range at most once per
 * attempt (the reassembler deduplicates fragments). A new begin for a line
 * whose previous attempt is still partial supersedes it (fragments of the old
 * attempt then get FG_O_STALE). begin on a line that is already whole returns
 * FG_O_DUP_PENDING: reassemble the frame elsewhere and call fg_slot_put. */
struct fg_slot_ref {
	uint32_t slot;
	uint32_t gen;     /* slot generation at begin */
	uint32_t attempt; /* line attempt at begin */
	uint8_t pos;      /* buffer position (index in rule order) */
	uint8_t line;     /* the attempt's line (the rule's line at pos) */
	uint32_t body_len;
	/* The line buffer's first byte: body byte `off` lands at buf + off.
	 * For prefetching the destination ahead of fg_slot_land only; the
	 * engine writes there only while the reference is current. */
	uint8_t *buf;
	/* The slot's current attempt counter for this position: the reference
	 * is current (its slot OPEN for the same key, its attempt not
	 * superseded or aborted) exactly while *cur == attempt. */
	const uint32_t *cur;
};
/* begin: seed->body may be NULL (body_len = the expected length). Returns 0
 * (outcome FG_O_PARTIAL and *ref written when an attempt started; any other
 * outcome leaves *ref untouched) or -EINVAL. place: returns 0 with PARTIAL,
 * ACCEPTED, RESOLVED, STALE, BAD_RANGE, EXPIRED or POISONED, or -EINVAL for
 * NULL arguments or ref->slot out of range. Owner thread only. */
FG_MUST_CHECK int fg_slot_begin(struct fg_slots *s, const struct fg_seed *seed, uint64_t now_ns,
				struct fg_slot_ref *ref, struct fg_slot_result *res);
/* fg_slot_begin for a caller that decoded the seed itself
 * (fg_seed_decode_prefix or fg_seed_decode under limits lim for which
 * fg_slots_fit_limits(s, lim) holds): the codec's checks (line,
 * orientation, seq_len range, body_len == seq_len * hidden * 4) are not
 * made again; the layer's range, the rule, the claim and the slot's state
 * are. Same effects and outcomes as fg_slot_begin; returns the outcome,
 * *ref written only with FG_O_PARTIAL, *res meaningful only with any
 * other outcome (then as fg_slot_begin fills it). s, seed, ref and res non-NULL. Owner
 * thread only. fg_slot_begin_fast (fg/slot_inline.h) is this function with
 * its common cases inline. */
FG_MUST_CHECK enum fg_outcome fg_slot_begin_decoded(struct fg_slots *s, const struct fg_seed *seed, uint64_t now_ns,
						    struct fg_slot_ref *ref, struct fg_slot_result *res);
/* Whether a seed the codec accepted under lim is one this table can hold
 * (same hidden, max_seq_len no larger): then fg_slot_begin_decoded may
 * take it. Reads only its arguments. */
static inline bool fg_slots_fit_limits(const struct fg_slots *s, const struct fg_seed_limits *lim)
{
	return lim->hidden == s->cfg.hidden && lim->max_seq_len <= s->cfg.max_seq_len;
}
FG_MUST_CHECK int fg_slot_place(struct fg_slots *s, const struct fg_slot_ref *ref, uint32_t off,
				const void *src, uint32_t len, uint64_t now_ns, struct fg_slot_result *res);
/* fg_slot_place for the reassembler's hot path: the same checks and
 * effects, returned as the outcome. *res is written only when the outcome
 * is not FG_O_PARTIAL (a fragment that only landed costs no result record).
 * ref must come from fg_slot_begin on s (ref->slot < capacity is checked).
 * Owner thread only. */
FG_MUST_CHECK enum fg_outcome fg_slot_land(struct fg_slots *s, const struct fg_slot_ref *ref, uint32_t off,
					   const void *src, uint32_t len, uint64_t now_ns, struct fg_slot_result *res);
/* The caller's own placement (the reassembler's hot path): while
 * fg_slot_ref_live(ref) holds, the caller may copy body bytes straight into
 * ref->buf, each byte of [0, body_len) exactly once (it counts them itself;
 * the engine's per-line count is not kept on this path), then report the
 * line whole with fg_slot_whole. A reference that is no longer live goes to
 * fg_slot_land, which names the outcome (STALE, EXPIRED, POISONED) and
 * places nothing. Mixing this path with fg_slot_place/fg_slot_land on one
 * attempt is not allowed. */
static inline bool fg_slot_ref_live(const struct fg_slot_ref *ref) { return *ref->cur == ref->attempt; }
/* Every body byte of ref's live attempt is in ref->buf: the line is whole
 * and the attempt over (ref is no longer live). Returns ACCEPTED or RESOLVED with *res filled as fg_slot_land's, or
 * the outcome fg_slot_place names (nothing changes) when ref is not
 * live. Owner thread only. */
FG_MUST_CHECK enum fg_outcome fg_slot_whole(struct fg_slots *s, const struct fg_slot_ref *ref,
					    struct fg_slot_result *res);
/* Where the body of a slot about to resolve goes besides the slot: called
 * with the slot's index and its body's length, returns the caller's
 * buffer of at least body_len bytes for the whole body, or NULL (none). */
typedef void *fg_sink_fn(void *arg, uint32_t slot, uint32_t body_len);
/* fg_slot_whole that, when (and only when) it resolves the slot, first
 * asks sink (when not NULL) for a buffer the resolved body also goes to,
 * then writes it there from the reduction's registers (fg_reduce_to); the
 * slot's result buffer holds it as with fg_slot_whole. A sink is never
 * called for a line that does not resolve its slot (ACCEPTED, or ref not
 * live). Owner thread only. fg_slot_whole_fast (fg/slot_inline.h) is this
 * function with the line that does not resolve its slot inline. */
FG_MUST_CHECK enum fg_outcome fg_slot_whole_sink(struct fg_slots *s, const struct fg_slot_ref *ref,
						 struct fg_slot_result *res, fg_sink_fn *sink, void *arg);
/* The reassembler gave up on an attempt: its bytes no longer count. When
 * that was the slot's only attempt (no line whole, no other attempt
 * begun and not finished) the slot is freed at once (FREE, counted in
 * abandoned; the key's next contribution opens it again) instead of
 * holding its place until the deadline. */
void fg_slot_abort(struct fg_slots *s, const struct fg_slot_ref *ref);

/* The resolved seed of a slot: body pointer and length, start_pos, seq_len.
 * Returns 0 or -ENOENT when the slot is not RESOLVED. */
struct fg_seed_view {
	uint32_t token_seq;
	uint16_t dst_layer;
	uint32_t start_pos, seq_len;
	const uint8_t *body;
	uint32_t body_len;
	uint64_t fingerprint;
	uint8_t lines; /* mask of lines reduced */
	uint64_t opened_ns; /* when the slot opened: its first contribution's now_ns */
};
FG_MUST_CHECK int fg_slot_seed(const struct fg_slots *s, uint32_t slot, struct fg_seed_view *out);

/* Pin slot `slot`, which must be RESOLVED: until as many fg_slot_unpin
 * calls, its body (fg_slot_seed's view) is not written and the slot is not
 * reclaimed for another key or reopened: a contribution that would claim
 * its index gets FG_O_NO_SLOT. Pins count (up to UINT16_MAX). Returns 0,
 * -ENOENT (slot out of range or not RESOLVED) or -EOVERFLOW. Owner thread
 * only. */
FG_MUST_CHECK int fg_slot_pin(struct fg_slots *s, uint32_t slot);
/* Drop one pin of slot `slot` (in any state: a pinned slot may have been
 * poisoned since); no-op when it holds none. Owner thread only. */
void fg_slot_unpin(struct fg_slots *s, uint32_t slot);
/* Whether slot `slot` holds a pin. */
bool fg_slot_is_pinned(const struct fg_slots *s, uint32_t slot);

/* Expire open slots whose deadline has passed, oldest first; writes up to max
 * of them to out and returns how many expired (call again while it returns max). */
struct fg_slot_expired {
	uint32_t token_seq;
	uint16_t dst_layer;
	uint8_t landed, expected;
};
int fg_slots_expire(struct fg_slots *s, uint64_t now_ns, struct fg_slot_expired *out, int max);

/* Discard every open slot (model epoch change: the fleet's plan clears the
 * affected slots). Each goes back to FREE: its lines are forgotten and the
 * key's next contribution opens a fresh slot (in the new epoch); a fragment
 * attempt begun before the flush gets FG_O_STALE from fg_slot_place.
 * Returns how many were dropped; they count in s->flushed, not expired. */
uint32_t fg_slots_flush(struct fg_slots *s);

/* Look a key up without changing anything (fanoctl slot, GET waits). */
struct fg_slot_info {
	enum fg_slot_state state;
	uint32_t token_seq;
	uint16_t dst_layer;
	uint8_t landed, expected;
	uint64_t opened_ns, deadline_ns;
	uint64_t fingerprint;            /* resolved */
	uint64_t line_fp[FG_LINES];      /* per landed line */
};
/* Returns 0 when the key holds the slot, -ENOENT otherwise. */
FG_MUST_CHECK int fg_slot_lookup(const struct fg_slots *s, uint32_t token_seq, uint16_t layer,
				 struct fg_slot_info *out);

/* Which of n shards owns a key. */
static inline uint32_t fg_shard_of(uint32_t token_seq, uint16_t layer, uint16_t n_layers, uint32_t n)
{
	return (uint32_t)(((uint64_t)token_seq * n_layers + layer) % n);
}

/* The canonical-order reduction itself (exposed for tests and bench):
 * out = s0*c[0]; out = out (+/-) c[i] ... one IEEE f32 rounding per addition,
 * compiled with -ffp-contract=off. n_floats floats each; little-endian hosts.
 * s0*c[0] is exact negation (sign flip) when neg[0] is set; neg[i] != 0
 * means subtract. out must not overlap any c[i]; n may be 0 (no-op).
 * Bit-identical to the obvious scalar loop for every element, except that
 * when an addition meets two NaN operands only NaN-ness is promised (IEEE
 * 754 leaves that payload to the implementation). Any thread. */
void fg_reduce(float *out, const float *const *c, const uint8_t *neg, unsigned n, size_t n_floats);
/* fg_reduce, its result also written to dst (n_floats floats, stored from
 * the reduction's registers: the same bits as out). dst must not overlap
 * out or the lines. Any thread. */
void fg_reduce_to(float *out, float *dst, const float *const *c, const uint8_t *neg, unsigned n, size_t n_floats);

#endif

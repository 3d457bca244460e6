/* slot.c - the seed slot engine: key -> slot mapping, per-line buffers,
 * whole and fragmented placement, duplicates and conflicts, resolution in
 * the rule's canonical order, fingerprints, deadlines and expiry.
 *
 * Who may call: the one thread that owns the table (single writer, see
 * slot.h and docs/slots.md). Pure: no allocation, no I/O, no logging; every
 * byte lives in the caller's memory.
 *
 * Memory layout of one table (every piece 64-byte aligned):
 *
 *   mem: [slot 0][slot 1] ... [slot capacity-1]        slot_stride bytes each
 *   slot: [struct fg_slot header][buf pos 0]..[buf pos max_lines-1][result]
 *                                 body_max bytes each
 *
 * A line's buffer is chosen by its position in the layer's rule order, so a
 * 3-line rule uses buffers 0..2 whatever the line numbers are, and the
 * reduction walks buffers 0..n-1 in canonical order.
 *
 * Slot state machine (writes happen only in the functions named):
 *
 *            open (put/begin on a FREE or reclaimable index)
 *   FREE ------------------------------------------------> OPEN
 *   OPEN --- last expected line whole (put/place) ------> RESOLVED
 *   OPEN --- deadline passed (fg_slots_expire) -------> EXPIRED
 *   OPEN --- fg_slots_flush (model epoch change) ------> FREE
 *   OPEN/RESOLVED --- same line, different body ------> POISONED (the epoch is the caller's)
 *   RESOLVED/EXPIRED/POISONED --- another key's open --> OPEN (reclaimed)
 *
 * Transition table (event, state -> outcome, new state):
 *   put, FREE or other key not OPEN  -> ACCEPTED/RESOLVED, OPEN/RESOLVED
 *     (not pinned)
 *   put, other key OPEN              -> NO_SLOT, unchanged
 *   put/begin, index pinned, not key -> NO_SLOT, unchanged (fg_slot_pin)
 *   put, OPEN, line not whole        -> ACCEPTED/RESOLVED
 *   put, OPEN, line whole, same body -> DUPLICATE, OPEN
 *   put, OPEN, line whole, other     -> CONFLICT, POISONED
 *   put, RESOLVED, same body         -> LATE, RESOLVED
 *   put, RESOLVED, other body        -> CONFLICT, POISONED
 *   put/begin/place, EXPIRED         -> EXPIRED
 *   put/begin/place, POISONED        -> POISONED
 *   begin, OPEN, line whole          -> DUP_PENDING
 *   begin, OPEN, line not whole      -> PARTIAL (new attempt, old one stale)
 *   place, generation/attempt moved  -> STALE
 *   place, slot flushed since begin  -> STALE (FREE, or reopened: gen moved)
 */
#include <errno.h>
#include <string.h>

/* libxxhash's runtime-dispatched XXH3 (SSE2/AVX2/AVX-512 picked by CPUID
 * on first use, no ifunc): the header maps XXH3_64bits to
 * XXH3_64bits_dispatch. Same hash, measured about 8x faster than the
 * library's baseline XXH3_64bits on this machine (bench/core/RESULTS.md). */
#if defined(__x86_64__) && !defined(FG_NO_XXH_DISPATCH)
#include <xxh_x86dispatch.h>
#else
#include <xxhash.h>
#endif

/* The slot header (struct fg_slot, its invariants) and the steps the
 * inline fast paths share with this file (open, start an attempt). */
#include "fg/slot_inline.h"

#define NIL FG_SLOT__NIL
#define HDR_SIZE FG_SLOT__HDR_SIZE

_Static_assert(sizeof(struct fg_slot) <= 2 * FG_CACHE_LINE, "a slot header is two cache lines (pins sits in padding)");

static const char *const outcome_names[FG_O__COUNT] = {
	[FG_O_ACCEPTED] = "accepted",
	[FG_O_RESOLVED] = "resolved",
	[FG_O_PARTIAL] = "partial",
	[FG_O_DUPLICATE] = "duplicate",
	[FG_O_DUP_PENDING] = "duplicate_pending",
	[FG_O_CONFLICT] = "conflict",
	[FG_O_LATE] = "late",
	[FG_O_EXPIRED] = "expired",
	[FG_O_POISONED] = "poisoned",
	[FG_O_NO_SLOT] = "no_slot",
	[FG_O_SHAPE_MISMATCH] = "shape_mismatch",
	[FG_O_UNEXPECTED_LINE] = "unexpected_line",
	[FG_O_STALE] = "stale",
	[FG_O_BAD_RANGE] = "bad_range",
	[FG_O_MALFORMED] = "malformed",
	[FG_O_LINE_DISABLED] = "line_disabled",
};

const char *fg_outcome_name(enum fg_outcome o)
{
	if ((unsigned)o >= FG_O__COUNT)
		return "unknown";
	return outcome_names[o];
}

const char *fg_slot_state_name(enum fg_slot_state st)
{
	switch (st) {
	case FG_SLOT_FREE: return "free";
	case FG_SLOT_OPEN: return "open";
	case FG_SLOT_RESOLVED: return "resolved";
	case FG_SLOT_EXPIRED: return "expired";
	case FG_SLOT_POISONED: return "poisoned";
	}
	return "unknown";
}

int fg_rule_make(struct fg_rule *r, const uint8_t *lines, unsigned n)
{
	struct fg_rule tmp = { 0 };

	if (!r || !lines || n == 0 || n > FG_LINES)
		return -EINVAL;
	memset(tmp.pos, FG_LINES, sizeof(tmp.pos));
	for (unsigned i = 0; i < n; i++) {
		if (lines[i] >= FG_LINES || (tmp.mask & (1u << lines[i])))
			return -EINVAL;
		tmp.order[i] = lines[i];
		tmp.mask |= (uint8_t)(1u << lines[i]);
		tmp.pos[lines[i]] = (uint8_t)i;
	}
	tmp.n = (uint8_t)n;
	*r = tmp;
	return 0;
}

/* A rule is usable when n is 1..7, order holds n distinct lines, mask
 * says exactly which and pos where each is (FG_LINES for the others). */
static bool rule_is_valid(const struct fg_rule *r)
{
	uint8_t m = 0;

	if (r->n == 0 || r->n > FG_LINES)
		return false;
	for (unsigned i = 0; i < r->n; i++) {
		if (r->order[i] >= FG_LINES || (m & (1u << r->order[i])) || r->pos[r->order[i]] != i)
			return false;
		m |= (uint8_t)(1u << r->order[i]);
	}
	for (unsigned l = 0; l < FG_LINES; l++)
		if (!(m & (1u << l)) && r->pos[l] != FG_LINES)
			return false;
	return m == r->mask;
}

static size_t align64(size_t v) { return (v + FG_CACHE_LINE - 1) & ~(size_t)(FG_CACHE_LINE - 1); }

/* Per-line body bytes, or 0 when the shape does not fit a frame (the body
 * plus its 8-byte prefix must fit the 24-bit frame length). */
static uint64_t cfg_body_bytes(const struct fg_slots_cfg *cfg)
{
	uint64_t b = (uint64_t)cfg->hidden * cfg->max_seq_len * sizeof(float);

	if (b == 0 || b + FG_SEED_PREFIX_LEN > FG_LEN_MAX)
		return 0;
	return b;
}

static unsigned cfg_max_lines(const struct fg_slots_cfg *cfg)
{
	unsigned m = 0;

	for (unsigned l = 0; l < cfg->n_layers; l++)
		if (cfg->rules[l].n > m)
			m = cfg->rules[l].n;
	return m;
}

static bool cfg_is_valid(const struct fg_slots_cfg *cfg)
{
	if (!cfg || cfg->capacity == 0 || cfg->capacity == NIL || cfg->hidden == 0 ||
	    cfg->max_seq_len == 0 || cfg->n_layers == 0 || cfg->n_layers > FG_MAX_LAYERS ||
	    cfg->deadline_ns == 0 || cfg_body_bytes(cfg) == 0)
		return false;
	for (unsigned l = 0; l < cfg->n_layers; l++)
		if (!rule_is_valid(&cfg->rules[l]))
			return false;
	return true;
}

static size_t cfg_stride(const struct fg_slots_cfg *cfg)
{
	return HDR_SIZE + (cfg_max_lines(cfg) + 1u) * align64((size_t)cfg_body_bytes(cfg));
}

size_t fg_slots_mem_size(const struct fg_slots_cfg *cfg)
{
	if (!cfg_is_valid(cfg))
		return 0;
	return cfg_stride(cfg) * cfg->capacity;
}

static inline struct fg_slot *slot_at(const struct fg_slots *s, uint32_t i) { return fg_slot__at(s, i); }

static inline uint8_t *slot_buf(const struct fg_slots *s, uint32_t i, unsigned pos) { return fg_slot__buf(s, i, pos); }

int fg_slots_init(struct fg_slots *s, void *mem, size_t len, const struct fg_slots_cfg *cfg)
{
	if (!s || !mem || !cfg_is_valid(cfg) || ((uintptr_t)mem & (FG_CACHE_LINE - 1)))
		return -EINVAL;
	if (len < fg_slots_mem_size(cfg))
		return -ENOSPC;
	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	s->max_lines = (uint8_t)cfg_max_lines(cfg);
	s->body_max = (uint32_t)align64((size_t)cfg_body_bytes(cfg));
	s->slot_stride = cfg_stride(cfg);
	s->mem = mem;
	s->fifo_head = s->fifo_tail = NIL;
	/* Only headers are initialised: buffers are never read before their
	 * bytes are placed (landed counters gate every read). */
	for (uint32_t i = 0; i < cfg->capacity; i++) {
		struct fg_slot *sl = slot_at(s, i);
		memset(sl, 0, sizeof(*sl));
		sl->state = FG_SLOT_FREE;
		sl->prev = sl->next = NIL;
	}
	return 0;
}

/* ---- open FIFO (doubly linked through slot indices) ------------------ */

static inline void fifo_remove(struct fg_slots *s, uint32_t i)
{
	struct fg_slot *sl = slot_at(s, i);

	if (sl->prev != NIL)
		slot_at(s, sl->prev)->next = sl->next;
	else
		s->fifo_head = sl->next;
	if (sl->next != NIL)
		slot_at(s, sl->next)->prev = sl->prev;
	else
		s->fifo_tail = sl->prev;
	sl->prev = sl->next = NIL;
}

/* Leave OPEN for a terminal state; keeps invariant 5 of slot.h. Every
 * position's attempt moves on, so no reference taken while the slot was
 * OPEN is live again (invariant 5 of the header); positions past the
 * rule's n are bumped too (no reference names them), in a few stores
 * instead of a loop. Forced inline: every resolution closes its slot. */
static inline __attribute__((always_inline)) void slot_close(struct fg_slots *s, uint32_t i, enum fg_slot_state st)
{
	struct fg_slot *sl = slot_at(s, i);

	fifo_remove(s, i);
	for (unsigned p = 0; p < FG_LINES; p++)
		sl->attempt[p]++;
	sl->state = (uint8_t)st;
	s->in_use--;
}

/* ---- helpers ---------------------------------------------------------- */

static inline uint32_t slot_index(const struct fg_slots *s, uint32_t token_seq, uint16_t layer)
{
	return fg_slot__index(s, token_seq, layer);
}

/* Position of line in the rule order of layer, or FG_LINES when the rule
 * does not expect it; the caller checked the layer and the line are in
 * range. */
static inline unsigned rule_pos(const struct fg_slots *s, uint16_t layer, unsigned line)
{
	return s->cfg.rules[layer].pos[line];
}

static void result_init(const struct fg_slots *s, const struct fg_seed *seed, struct fg_slot_result *res)
{
	memset(res, 0, sizeof(*res));
	res->slot = NIL;
	res->state = FG_SLOT_FREE;
	res->bytes = seed ? seed->body_len : 0;
	res->epoch = s->epoch;
}

static void result_slot(const struct fg_slots *s, uint32_t i, enum fg_outcome o, struct fg_slot_result *res)
{
	const struct fg_slot *sl = slot_at(s, i);

	res->outcome = o;
	res->slot = i;
	res->landed = sl->complete;
	res->expected = sl->expected;
	res->state = sl->state;
	res->epoch = s->epoch;
	res->fingerprint = sl->state == FG_SLOT_RESOLVED ? sl->fingerprint : 0;
}

/* Codec-level checks repeated here so a caller that skipped the codec can
 * never make the engine read or write outside a buffer. */
static bool seed_is_sane(const struct fg_slots *s, const struct fg_seed *seed, bool need_body)
{
	if (seed->dst_layer >= s->cfg.n_layers || seed->line >= FG_LINES || seed->orientation > 1 ||
	    seed->seq_len == 0 || seed->seq_len > s->cfg.max_seq_len)
		return false;
	if ((uint64_t)seed->seq_len * s->cfg.hidden * sizeof(float) != seed->body_len)
		return false;
	return !need_body || seed->body != NULL;
}

/* MALFORMED / UNEXPECTED_LINE before any slot is touched. */
static bool seed_admit(const struct fg_slots *s, const struct fg_seed *seed, bool need_body,
		       struct fg_slot_result *res)
{
	if (!seed_is_sane(s, seed, need_body)) {
		res->outcome = FG_O_MALFORMED;
		return false;
	}
	res->expected = s->cfg.rules[seed->dst_layer].mask;
	if (!(res->expected & (1u << seed->line))) {
		res->outcome = FG_O_UNEXPECTED_LINE;
		return false;
	}
	return true;
}

/* The slot for seed's key: the existing one, or a newly opened one when the
 * index is free or its occupant is finished (RESOLVED, EXPIRED, POISONED)
 * and not pinned. Returns NIL with res->outcome = NO_SLOT when a live open
 * slot of another key, or a pinned one, holds the index. */
static inline __attribute__((always_inline)) uint32_t slot_claim(struct fg_slots *s, const struct fg_seed *seed,
									uint64_t now_ns, struct fg_slot_result *res)
{
	uint32_t i = slot_index(s, seed->token_seq, seed->dst_layer);
	struct fg_slot *sl = slot_at(s, i);

	if (fg_slot__holds(sl, seed))
		return i;
	/* A pinned slot's body is still read by someone (fg_slot_pin): it is
	 * held like a live one until unpinned. */
	if (sl->state == FG_SLOT_OPEN || sl->pins) {
		res->outcome = FG_O_NO_SLOT;
		return NIL;
	}
	if (sl->state != FG_SLOT_FREE)
		s->reclaimed++;
	fg_slot__open(s, i, seed, now_ns);
	return i;
}

/* Checks every contribution to an existing slot must pass. */
static inline __attribute__((always_inline)) bool slot_admit(const struct fg_slots *s, uint32_t i,
								    const struct fg_seed *seed, struct fg_slot_result *res)
{
	const struct fg_slot *sl = slot_at(s, i);

	if (sl->state == FG_SLOT_EXPIRED) {
		result_slot(s, i, FG_O_EXPIRED, res);
		return false;
	}
	if (sl->state == FG_SLOT_POISONED) {
		result_slot(s, i, FG_O_POISONED, res);
		return false;
	}
	if (sl->start_pos != seed->start_pos || sl->seq_len != seed->seq_len) {
		result_slot(s, i, FG_O_SHAPE_MISMATCH, res);
		return false;
	}
	return true;
}

/* Reduce the whole lines in canonical order into the result buffer (and
 * into dst, when not NULL: fg_reduce_to where it is float-aligned, a copy
 * of the result where not) and fingerprint the result. */
static void slot_resolve(struct fg_slots *s, uint32_t i, void *dst)
{
	struct fg_slot *sl = slot_at(s, i);
	const float *c[FG_LINES];
	uint8_t *out = slot_buf(s, i, s->max_lines);

	for (unsigned p = 0; p < sl->n; p++)
		c[p] = (const float *)(const void *)slot_buf(s, i, p);
	if (dst && (uintptr_t)dst % _Alignof(float) == 0) {
		fg_reduce_to((float *)(void *)out, dst, c, sl->sign, sl->n, sl->body_len / sizeof(float));
	} else {
		fg_reduce((float *)(void *)out, c, sl->sign, sl->n, sl->body_len / sizeof(float));
		if (dst)
			memcpy(dst, out, sl->body_len);
	}
	/* XXH3-64 seed 0, i.e. fg_fingerprint; called directly so the slot
	 * engine does not depend on the codec's translation unit. */
	sl->fingerprint = XXH3_64bits(out, sl->body_len);
	slot_close(s, i, FG_SLOT_RESOLVED);
	s->resolved++;
}

/* A line of slot i just became whole. */
static void line_complete(struct fg_slots *s, uint32_t i, unsigned line, struct fg_slot_result *res)
{
	struct fg_slot *sl = slot_at(s, i);

	sl->complete |= (uint8_t)(1u << line);
	if (sl->complete == sl->expected) {
		slot_resolve(s, i, NULL);
		result_slot(s, i, FG_O_RESOLVED, res);
	} else {
		result_slot(s, i, FG_O_ACCEPTED, res);
	}
}

/* Same line, different body: the slot is withdrawn (wire.md section 4). A
 * resolved slot is poisoned too: its seed may already be delivered, but
 * the caller audits the conflict and lookups stop serving it. The model
 * epoch is not moved here: whether a conflict advances it is the control
 * plane's decision (control/cp_epoch_guard.h: a sender not mapped to the
 * line, or a storm, must not), and the new epoch reaches every table
 * through its owner (FLUSH, line facts). A table that bumped itself would
 * answer the fleet an epoch nobody decided. */
static void slot_poison(struct fg_slots *s, uint32_t i)
{
	struct fg_slot *sl = slot_at(s, i);

	if (sl->state == FG_SLOT_OPEN)
		slot_close(s, i, FG_SLOT_POISONED);
	else
		sl->state = FG_SLOT_POISONED;
	s->poisoned++;
}

int fg_slot_put(struct fg_slots *s, const struct fg_seed *seed, uint64_t now_ns, struct fg_slot_result *res)
{
	uint32_t i;
	struct fg_slot *sl;
	unsigned pos;
	uint8_t *buf;

	if (!s || !seed || !res)
		return -EINVAL;
	result_init(s, seed, res);
	if (!seed_admit(s, seed, true, res))
		return 0;
	i = slot_claim(s, seed, now_ns, res);
	if (i == NIL)
		return 0;
	if (!slot_admit(s, i, seed, res))
		return 0;
	sl = slot_at(s, i);
	pos = rule_pos(s, sl->layer, seed->line);
	buf = slot_buf(s, i, pos);
	if (sl->complete & (1u << seed->line)) {
		/* memcmp, not two hashes: exact, and cheaper than hashing both. */
		bool same = sl->sign[pos] == seed->orientation && memcmp(buf, seed->body, seed->body_len) == 0;
		if (same) {
			result_slot(s, i, sl->state == FG_SLOT_RESOLVED ? FG_O_LATE : FG_O_DUPLICATE, res);
			return 0;
		}
		slot_poison(s, i);
		result_slot(s, i, FG_O_CONFLICT, res);
		return 0;
	}
	/* The line is not whole, so the slot is OPEN (a RESOLVED slot has every
	 * line whole). A whole body supersedes any fragment attempt. */
	memcpy(buf, seed->body, seed->body_len);
	sl->landed[pos] = seed->body_len;
	sl->attempt[pos]++;
	sl->pending &= (uint8_t)~(1u << pos);
	sl->sign[pos] = seed->orientation;
	line_complete(s, i, seed->line, res);
	return 0;
}

/* fg_slot_begin past the checks of the seed's own fields (seed_is_sane):
 * the rule, the claim, the slot's state and the line. full: *res written
 * for PARTIAL too (fg_slot_begin); else only for the other outcomes. */
static inline __attribute__((always_inline)) enum fg_outcome begin_sane(struct fg_slots *s, const struct fg_seed *seed,
									 uint64_t now_ns, struct fg_slot_ref *ref,
									 struct fg_slot_result *res, bool full)
{
	/* the line's position in the layer's rule: FG_LINES when not expected */
	unsigned pos = rule_pos(s, seed->dst_layer, seed->line);
	if (pos == FG_LINES) {
		result_init(s, seed, res);
		res->expected = s->cfg.rules[seed->dst_layer].mask;
		res->outcome = FG_O_UNEXPECTED_LINE;
		return FG_O_UNEXPECTED_LINE;
	}
	uint32_t i = slot_claim(s, seed, now_ns, res);
	if (i == NIL) {
		result_init(s, seed, res);
		res->expected = s->cfg.rules[seed->dst_layer].mask;
		res->outcome = FG_O_NO_SLOT;
		return FG_O_NO_SLOT;
	}
	if (!slot_admit(s, i, seed, res)) {
		res->bytes = seed->body_len;
		return res->outcome;
	}
	struct fg_slot *sl = slot_at(s, i);
	if (sl->complete & (1u << seed->line)) {
		/* Duplicate or conflict: only the whole body can tell. */
		result_slot(s, i, FG_O_DUP_PENDING, res);
		res->bytes = seed->body_len;
		return FG_O_DUP_PENDING;
	}
	fg_slot__start(s, sl, i, pos, seed->line, seed->orientation, ref);
	if (full) {
		result_slot(s, i, FG_O_PARTIAL, res);
		res->bytes = seed->body_len;
	}
	return FG_O_PARTIAL;
}

int fg_slot_begin(struct fg_slots *s, const struct fg_seed *seed, uint64_t now_ns, struct fg_slot_ref *ref,
		  struct fg_slot_result *res)
{
	if (!s || !seed || !ref || !res)
		return -EINVAL;
	/* A refusal before a slot is named starts from result_init; past
	 * that, result_slot writes every field but bytes. */
	if (!seed_is_sane(s, seed, false)) {
		result_init(s, seed, res);
		res->outcome = FG_O_MALFORMED;
		return 0;
	}
	(void)begin_sane(s, seed, now_ns, ref, res, true);
	return 0;
}

enum fg_outcome fg_slot_begin_decoded(struct fg_slots *s, const struct fg_seed *seed, uint64_t now_ns,
				      struct fg_slot_ref *ref, struct fg_slot_result *res)
{
	/* The codec made every check of seed_is_sane but the layer's range
	 * against this table (the caller vouches for the limits agreeing:
	 * fg_slots_fit_limits): the line is in range. */
	if (seed->dst_layer >= s->cfg.n_layers) {
		result_init(s, seed, res);
		res->outcome = FG_O_MALFORMED;
		return FG_O_MALFORMED;
	}
	return begin_sane(s, seed, now_ns, ref, res, false);
}

/* Line index of rule position pos for slot i. */
static unsigned slot_line_at(const struct fg_slots *s, const struct fg_slot *sl, unsigned pos)
{
	return s->cfg.rules[sl->layer].order[pos];
}

int fg_slot_place(struct fg_slots *s, const struct fg_slot_ref *ref, uint32_t off, const void *src, uint32_t len,
		  uint64_t now_ns, struct fg_slot_result *res)
{
	struct fg_slot *sl;

	(void)now_ns;
	if (!s || !ref || !res || (len && !src) || ref->slot >= s->cfg.capacity)
		return -EINVAL;
	result_init(s, NULL, res);
	res->bytes = ref->body_len;
	sl = slot_at(s, ref->slot);
	if (sl->gen != ref->gen || sl->state == FG_SLOT_FREE) {
		/* The slot was reclaimed for another key since begin. */
		res->outcome = FG_O_STALE;
		return 0;
	}
	if (sl->state == FG_SLOT_EXPIRED || sl->state == FG_SLOT_POISONED) {
		result_slot(s, ref->slot, sl->state == FG_SLOT_EXPIRED ? FG_O_EXPIRED : FG_O_POISONED, res);
		return 0;
	}
	if (ref->pos >= sl->n || sl->attempt[ref->pos] != ref->attempt || sl->state != FG_SLOT_OPEN) {
		/* Superseded by a newer begin or a whole put (which may also have
		 * resolved the slot). */
		result_slot(s, ref->slot, FG_O_STALE, res);
		return 0;
	}
	if (off > sl->body_len || len > sl->body_len - off || len > sl->body_len - sl->landed[ref->pos]) {
		result_slot(s, ref->slot, FG_O_BAD_RANGE, res);
		return 0;
	}
	memcpy(slot_buf(s, ref->slot, ref->pos) + off, src, len);
	/* The reassembler prefetches a burst's destinations before it places
	 * them (dp_shard.c), so nothing is prefetched here. */
	sl->landed[ref->pos] += len;
	if (sl->landed[ref->pos] == sl->body_len) {
		sl->pending &= (uint8_t)~(1u << ref->pos);
		line_complete(s, ref->slot, slot_line_at(s, sl, ref->pos), res);
	} else
		result_slot(s, ref->slot, FG_O_PARTIAL, res);
	return 0;
}

enum fg_outcome fg_slot_land(struct fg_slots *s, const struct fg_slot_ref *ref, uint32_t off, const void *src,
			     uint32_t len, uint64_t now_ns, struct fg_slot_result *res)
{
	if (ref->slot < s->cfg.capacity) {
		struct fg_slot *sl = slot_at(s, ref->slot);
		unsigned pos = ref->pos;
		/* The common case in a few compares: the reference is current
		 * and the range fits; anything else takes fg_slot_place, which
		 * names the outcome. */
		if (sl->gen == ref->gen && sl->state == FG_SLOT_OPEN && pos < sl->n && sl->attempt[pos] == ref->attempt &&
		    off <= sl->body_len && len <= sl->body_len - off && len <= sl->body_len - sl->landed[pos]) {
			memcpy(slot_buf(s, ref->slot, pos) + off, src, len);
			sl->landed[pos] += len;
			if (sl->landed[pos] != sl->body_len)
				return FG_O_PARTIAL;
			result_init(s, NULL, res);
			res->bytes = sl->body_len;
			sl->pending &= (uint8_t)~(1u << pos);
			line_complete(s, ref->slot, slot_line_at(s, sl, pos), res);
			return res->outcome;
		}
	}
	if (fg_slot_place(s, ref, off, src, len, now_ns, res) < 0) {
		result_init(s, NULL, res);
		res->outcome = FG_O_BAD_RANGE;
	}
	return res->outcome;
}

/* The line of ref is whole: fg_slot_whole and fg_slot_whole_sink. When
 * the slot resolves and there is a sink, its body also goes to the buffer
 * the sink gives then (asked only once the slot is known to resolve).
 * Forced inline into each: the variant's arguments are constants there. */
static inline __attribute__((always_inline)) enum fg_outcome slot_whole(struct fg_slots *s,
									 const struct fg_slot_ref *ref,
									 struct fg_slot_result *res, fg_sink_fn *sink,
									 void *arg)
{
	if (!fg_slot_ref_live(ref)) {
		/* Not live: fg_slot_place names the outcome and places nothing. */
		if (fg_slot_place(s, ref, 0, ref->buf, 0, 0, res) < 0) {
			result_init(s, NULL, res);
			res->outcome = FG_O_STALE;
		}
		return res->outcome;
	}
	/* Live (invariant 5): the slot is OPEN for the reference's key and
	 * ref->pos < n. The line is whole, the attempt over (a second call is
	 * STALE), and the slot resolves when it was the last line expected;
	 * the result is written once, from what is known here. */
	uint32_t i = ref->slot;
	struct fg_slot *sl = slot_at(s, i);
	fg_slot__mark_whole(sl, ref->pos, (uint8_t)(sl->complete | (1u << slot_line_at(s, sl, ref->pos))));
	enum fg_outcome o = FG_O_ACCEPTED;
	uint64_t fp = 0;
	if (sl->complete == sl->expected) {
		slot_resolve(s, i, sink ? sink(arg, i, sl->body_len) : NULL);
		o = FG_O_RESOLVED;
		fp = sl->fingerprint;
	}
	*res = (struct fg_slot_result){.outcome = o,
				       .slot = i,
				       .landed = sl->complete,
				       .expected = sl->expected,
				       .state = sl->state,
				       .epoch = s->epoch,
				       .fingerprint = fp,
				       .bytes = sl->body_len};
	return o;
}

enum fg_outcome fg_slot_whole(struct fg_slots *s, const struct fg_slot_ref *ref, struct fg_slot_result *res)
{
	return slot_whole(s, ref, res, NULL, NULL);
}

enum fg_outcome fg_slot_whole_sink(struct fg_slots *s, const struct fg_slot_ref *ref, struct fg_slot_result *res,
				   fg_sink_fn *sink, void *arg)
{
	return slot_whole(s, ref, res, sink, arg);
}

void fg_slot_abort(struct fg_slots *s, const struct fg_slot_ref *ref)
{
	struct fg_slot *sl;

	if (!s || !ref || ref->slot >= s->cfg.capacity)
		return;
	sl = slot_at(s, ref->slot);
	if (sl->gen != ref->gen || sl->state != FG_SLOT_OPEN || ref->pos >= sl->n ||
	    sl->attempt[ref->pos] != ref->attempt)
		return;
	sl->landed[ref->pos] = 0;
	sl->attempt[ref->pos]++;
	sl->pending &= (uint8_t)~(1u << ref->pos);
	if (sl->complete == 0 && sl->pending == 0) {
		/* Its only attempt is gone (fragment 0 and nothing after it, a
		 * flood's favourite): free the place now, not at the deadline.
		 * gen is kept, as in a flush: a reopen bumps it (invariant 4). */
		slot_close(s, ref->slot, FG_SLOT_FREE);
		memset(sl->landed, 0, sizeof(sl->landed));
		s->abandoned++;
	}
}

int fg_slot_pin(struct fg_slots *s, uint32_t slot)
{
	struct fg_slot *sl;

	if (!s || slot >= s->cfg.capacity)
		return -ENOENT;
	sl = slot_at(s, slot);
	if (sl->state != FG_SLOT_RESOLVED)
		return -ENOENT;
	if (sl->pins == UINT16_MAX)
		return -EOVERFLOW;
	sl->pins++;
	return 0;
}

void fg_slot_unpin(struct fg_slots *s, uint32_t slot)
{
	struct fg_slot *sl;

	if (!s || slot >= s->cfg.capacity)
		return;
	sl = slot_at(s, slot);
	if (sl->pins)
		sl->pins--;
}

bool fg_slot_is_pinned(const struct fg_slots *s, uint32_t slot)
{
	return s && slot < s->cfg.capacity && slot_at(s, slot)->pins != 0;
}

int fg_slot_seed(const struct fg_slots *s, uint32_t slot, struct fg_seed_view *out)
{
	const struct fg_slot *sl;

	if (!s || !out || slot >= s->cfg.capacity)
		return -ENOENT;
	sl = slot_at(s, slot);
	if (sl->state != FG_SLOT_RESOLVED)
		return -ENOENT;
	out->token_seq = sl->token_seq;
	out->dst_layer = sl->layer;
	out->start_pos = sl->start_pos;
	out->seq_len = sl->seq_len;
	out->body = slot_buf(s, slot, s->max_lines);
	out->body_len = sl->body_len;
	out->fingerprint = sl->fingerprint;
	out->lines = sl->complete;
	out->opened_ns = sl->opened_ns;
	return 0;
}

int fg_slots_expire(struct fg_slots *s, uint64_t now_ns, struct fg_slot_expired *out, int max)
{
	int k = 0;

	if (!s || !out)
		return 0;
	/* Every slot gets the same deadline after its open, so the FIFO head
	 * is always the earliest deadline (invariant 5). */
	while (k < max && s->fifo_head != NIL) {
		uint32_t i = s->fifo_head;
		struct fg_slot *sl = slot_at(s, i);

		if (sl->deadline_ns > now_ns)
			break;
		out[k].token_seq = sl->token_seq;
		out[k].dst_layer = sl->layer;
		out[k].landed = sl->complete;
		out[k].expected = sl->expected;
		k++;
		slot_close(s, i, FG_SLOT_EXPIRED);
		s->expired++;
	}
	return k;
}

uint32_t fg_slots_flush(struct fg_slots *s)
{
	uint32_t n = 0;

	if (!s)
		return 0;
	while (s->fifo_head != NIL) {
		uint32_t i = s->fifo_head;
		struct fg_slot *sl = slot_at(s, i);

		/* Back to FREE, not EXPIRED: the key's next contribution opens a
		 * fresh slot in the new epoch. gen is kept, so a fragment
		 * reference taken before the flush is STALE (fg_slot_place checks
		 * FREE, and a reopen bumps gen). Invariant 1: nothing landed. */
		slot_close(s, i, FG_SLOT_FREE);
		sl->complete = 0;
		memset(sl->landed, 0, sizeof(sl->landed));
		s->flushed++;
		n++;
	}
	return n;
}

int fg_slot_lookup(const struct fg_slots *s, uint32_t token_seq, uint16_t layer, struct fg_slot_info *out)
{
	const struct fg_slot *sl;
	uint32_t i;

	if (!s || !out || layer >= s->cfg.n_layers)
		return -ENOENT;
	i = slot_index(s, token_seq, layer);
	sl = slot_at(s, i);
	if (sl->state == FG_SLOT_FREE || sl->token_seq != token_seq || sl->layer != layer)
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	out->state = (enum fg_slot_state)sl->state;
	out->token_seq = sl->token_seq;
	out->dst_layer = sl->layer;
	out->landed = sl->complete;
	out->expected = sl->expected;
	out->opened_ns = sl->opened_ns;
	out->deadline_ns = sl->deadline_ns;
	out->fingerprint = sl->state == FG_SLOT_RESOLVED ? sl->fingerprint : 0;
	/* Per-line fingerprints are computed here, on demand, rather than on
	 * the hot path: lookups are operator actions, placements are not. */
	for (unsigned p = 0; p < sl->n; p++) {
		unsigned line = slot_line_at(s, sl, p);
		if (sl->complete & (1u << line))
			out->line_fp[line] = XXH3_64bits(slot_buf(s, i, p), sl->body_len);
	}
	return 0;
}

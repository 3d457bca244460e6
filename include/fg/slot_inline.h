/* slot_inline.h - the slot engine's common fragment-path cases, inline, for
 * the table owner's hot path (the dataplane's placement, dp_reasm.c).
 *
 * Owns nothing: the slot header's layout (struct fg_slot) and the engine's
 * own steps on it (open a slot, start an attempt), shared with slot.c, and
 * two inline fast paths beside slot.h's functions:
 *   fg_slot_begin_fast  fg_slot_begin_decoded when the line is expected and
 *                       the key's index is free (or holds a finished,
 *                       unpinned slot of another key) or is this key's OPEN
 *                       slot of the same shape without the line whole;
 *   fg_slot_whole_fast  fg_slot_whole_sink when the reference is live and
 *                       the line does not resolve its slot (ACCEPTED).
 * Every other case goes to the slot.h function, which makes every check
 * again and names the outcome; the fast path changes nothing before it
 * knows it applies. Same effects, outcomes and results as those functions.
 *
 * Part of the pure core (no DPDK, no I/O, no logging). Same contract as
 * slot.h: single writer, owner thread only. Nothing but slot.c and these
 * functions reads or writes a struct fg_slot. */
#ifndef FG_SLOT_INLINE_H
#define FG_SLOT_INLINE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fg/slot.h"

/* Slot header. Invariants (slot.h lists the per-state ones):
 *  1. landed[p] <= body_len for every position p < n.
 *  2. bit l of `complete` is set iff line l is expected and
 *     landed[pos(l)] == body_len.
 *  3. prev/next are meaningful only while state == OPEN.
 *  4. gen changes on every open, so a fg_slot_ref taken for an earlier
 *     occupant never matches again (its fragments become STALE).
 *  5. attempt[p] only grows (begin, put, abort, fg_slot_whole and every
 *     close out of OPEN bump it), so attempt[p] == ref->attempt holds exactly while the
 *     reference's slot is OPEN, for its key, and the attempt is current
 *     (fg_slot_ref_live).
 *  6. pins > 0 only while the slot is RESOLVED or POISONED (fg_slot_pin
 *     takes a RESOLVED slot; nothing but a reclaim leaves either state,
 *     and a claim refuses that while pinned): its result buffer is
 *     not written. */
struct fg_slot {
	uint32_t token_seq;
	uint16_t layer;
	uint8_t state;     /* enum fg_slot_state */
	uint8_t complete;  /* whole lines, bit = line index */
	uint8_t expected;  /* rule mask at open */
	uint8_t n;         /* rule length at open */
	uint16_t pins;     /* fg_slot_pin holders: while not 0 the slot is never (re)opened */
	uint32_t start_pos, seq_len, body_len;
	uint32_t gen;
	uint32_t prev, next; /* open FIFO */
	uint64_t opened_ns, deadline_ns;
	uint64_t fingerprint;
	uint32_t landed[FG_LINES];  /* bytes placed, by rule position */
	uint32_t attempt[FG_LINES]; /* current attempt, by rule position */
	uint8_t sign[FG_LINES];     /* orientation of the current attempt / whole body */
	uint8_t pending;            /* rule positions with a fragment attempt begun, not yet whole or aborted */
};

#define FG_SLOT__NIL UINT32_MAX
#define FG_SLOT__HDR_SIZE ((sizeof(struct fg_slot) + FG_CACHE_LINE - 1) & ~(size_t)(FG_CACHE_LINE - 1))

static inline struct fg_slot *fg_slot__at(const struct fg_slots *s, uint32_t i)
{
	return (struct fg_slot *)(void *)(s->mem + (size_t)i * s->slot_stride);
}

/* Buffer position pos of slot i (pos == max_lines: the result buffer). */
static inline uint8_t *fg_slot__buf(const struct fg_slots *s, uint32_t i, unsigned pos)
{
	return s->mem + (size_t)i * s->slot_stride + FG_SLOT__HDR_SIZE + (size_t)pos * s->body_max;
}

/* The key's index: see "Key -> slot" in slot.h. */
static inline uint32_t fg_slot__index(const struct fg_slots *s, uint32_t token_seq, uint16_t layer)
{
	uint64_t k = (uint64_t)token_seq * s->cfg.n_layers + layer;

	if (s->cfg.n_shards > 1)
		k /= s->cfg.n_shards;
	return (uint32_t)(k % s->cfg.capacity);
}

/* Slot sl holds seed's key (it is not FREE and its key fields are the
 * seed's). */
static inline bool fg_slot__holds(const struct fg_slot *sl, const struct fg_seed *seed)
{
	return sl->state != FG_SLOT_FREE && sl->token_seq == seed->token_seq && sl->layer == seed->dst_layer;
}

/* Append slot i to the open FIFO (its tail: the latest deadline). */
static inline void fg_slot__fifo_push(struct fg_slots *s, uint32_t i)
{
	struct fg_slot *sl = fg_slot__at(s, i);

	sl->next = FG_SLOT__NIL;
	sl->prev = s->fifo_tail;
	if (s->fifo_tail != FG_SLOT__NIL)
		fg_slot__at(s, s->fifo_tail)->next = i;
	else
		s->fifo_head = i;
	s->fifo_tail = i;
}

/* Open slot i (FREE, or a finished unpinned slot of another key: the
 * caller counts the reclaim) for seed's key, its layer in range. What it
 * reads is read before it writes (its stores may alias the seed). */
static inline __attribute__((always_inline)) void fg_slot__open(struct fg_slots *s, uint32_t i,
								const struct fg_seed *seed, uint64_t now_ns)
{
	struct fg_slot *sl = fg_slot__at(s, i);
	const struct fg_rule *r = &s->cfg.rules[seed->dst_layer];
	const uint32_t token_seq = seed->token_seq, start_pos = seed->start_pos, seq_len = seed->seq_len,
		       body_len = seed->body_len;
	const uint16_t layer = seed->dst_layer;
	const uint8_t mask = r->mask, n = r->n;
	const uint64_t deadline = now_ns + s->cfg.deadline_ns < now_ns ? UINT64_MAX : now_ns + s->cfg.deadline_ns;

	sl->token_seq = token_seq;
	sl->layer = layer;
	sl->state = FG_SLOT_OPEN;
	sl->complete = 0;
	sl->expected = mask;
	sl->n = n;
	sl->start_pos = start_pos;
	sl->seq_len = seq_len;
	sl->body_len = body_len;
	sl->gen++;
	sl->opened_ns = now_ns;
	sl->deadline_ns = deadline;
	sl->fingerprint = 0;
	/* Resetting every landed counter is what makes reuse safe: no byte of
	 * the previous occupant is read before this occupant overwrote it. */
	memset(sl->landed, 0, sizeof(sl->landed));
	memset(sl->sign, 0, sizeof(sl->sign));
	sl->pending = 0;
	fg_slot__fifo_push(s, i);
	s->opened++;
	s->in_use++;
}

/* A new attempt for line `line` (orientation sign) at rule position pos
 * of OPEN slot i (its header sl), the line not whole, its previous attempt
 * superseded; *ref names it. The seed's facts come as arguments: the
 * stores here may alias a seed. */
static inline __attribute__((always_inline)) void fg_slot__start(const struct fg_slots *s, struct fg_slot *sl,
								 uint32_t i, unsigned pos, unsigned line, uint8_t sign,
								 struct fg_slot_ref *ref)
{
	uint8_t *buf = (uint8_t *)sl + FG_SLOT__HDR_SIZE + (size_t)pos * s->body_max;
	uint32_t a = sl->attempt[pos] + 1u;

	sl->attempt[pos] = a;
	sl->pending |= (uint8_t)(1u << pos);
	sl->landed[pos] = 0;
	sl->sign[pos] = sign;
	*ref = (struct fg_slot_ref){.slot = i,
				    .gen = sl->gen,
				    .attempt = a,
				    .pos = (uint8_t)pos,
				    .line = (uint8_t)line,
				    .body_len = sl->body_len,
				    .buf = buf,
				    .cur = &sl->attempt[pos]};
}

/* The live attempt at rule position pos of OPEN slot sl made whole and
 * over: its line's bit in complete (the slot's whole lines with it), its
 * body_len bytes landed, the attempt counter moved (a second call is
 * STALE). */
static inline __attribute__((always_inline)) void fg_slot__mark_whole(struct fg_slot *sl, unsigned pos,
								      uint8_t complete)
{
	sl->landed[pos] = sl->body_len;
	sl->attempt[pos]++;
	sl->pending &= (uint8_t)~(1u << pos);
	sl->complete = complete;
}

/* fg_slot_begin_decoded (same arguments, contract, effects and outcomes),
 * its common cases inline: the line expected by the layer's rule, and the
 * key's index free (or holding a finished, unpinned slot of another key:
 * reclaimed) or holding this key's OPEN slot of the seed's shape with the
 * line not whole. Those start the attempt here (FG_O_PARTIAL, *ref
 * written, *res not); anything else is fg_slot_begin_decoded's. Forced
 * inline: every contribution's fragment 0 comes this way, and a call
 * from the placement would spill its state around it. Owner thread
 * only. */
FG_MUST_CHECK static inline __attribute__((always_inline)) enum fg_outcome
fg_slot_begin_fast(struct fg_slots *s, const struct fg_seed *seed, uint64_t now_ns, struct fg_slot_ref *ref,
		   struct fg_slot_result *res)
{
	const uint16_t layer = seed->dst_layer;

	if (__builtin_expect(layer < s->cfg.n_layers, 1)) {
		/* the codec keeps the line below FG_LINES */
		const unsigned line = seed->line;
		const unsigned pos = s->cfg.rules[layer].pos[line];
		if (__builtin_expect(pos != FG_LINES, 1)) {
			const uint32_t i = fg_slot__index(s, seed->token_seq, layer);
			struct fg_slot *const sl = fg_slot__at(s, i);
			if (fg_slot__holds(sl, seed)) {
				if (__builtin_expect(sl->state == FG_SLOT_OPEN && sl->start_pos == seed->start_pos &&
							     sl->seq_len == seed->seq_len && !(sl->complete & (1u << line)),
						     1)) {
					fg_slot__start(s, sl, i, pos, line, seed->orientation, ref);
					return FG_O_PARTIAL;
				}
			} else if (__builtin_expect(sl->state != FG_SLOT_OPEN && !sl->pins, 1)) {
				const uint8_t sign = seed->orientation;
				if (sl->state != FG_SLOT_FREE)
					s->reclaimed++;
				fg_slot__open(s, i, seed, now_ns);
				fg_slot__start(s, sl, i, pos, line, sign, ref);
				return FG_O_PARTIAL;
			}
		}
	}
	return fg_slot_begin_decoded(s, seed, now_ns, ref, res);
}

/* fg_slot_whole_sink (same arguments, contract, effects and outcomes), its
 * common case inline: ref live and its line not the last one the slot
 * expects (ACCEPTED, *res filled, sink not called). Anything else
 * (the line resolves the slot, ref not live) is fg_slot_whole_sink's.
 * Forced inline: every contribution's last chunk comes this way. Owner
 * thread only. */
FG_MUST_CHECK static inline __attribute__((always_inline)) enum fg_outcome
fg_slot_whole_fast(struct fg_slots *s, const struct fg_slot_ref *ref, struct fg_slot_result *res, fg_sink_fn *sink,
		   void *arg)
{
	if (__builtin_expect(fg_slot_ref_live(ref), 1)) {
		/* Live (invariant 5): the slot is OPEN for the reference's key
		 * (not reopened since begin, so ref->body_len is its body_len),
		 * ref->pos < n and ref->line is the rule's line at pos. */
		struct fg_slot *sl = fg_slot__at(s, ref->slot);
		uint8_t complete = (uint8_t)(sl->complete | (1u << ref->line));
		if (__builtin_expect(complete != sl->expected, 1)) {
			fg_slot__mark_whole(sl, ref->pos, complete);
			*res = (struct fg_slot_result){.outcome = FG_O_ACCEPTED,
						       .slot = ref->slot,
						       .landed = complete,
						       .expected = sl->expected,
						       .state = FG_SLOT_OPEN,
						       .epoch = s->epoch,
						       .fingerprint = 0,
						       .bytes = ref->body_len};
			return FG_O_ACCEPTED;
		}
	}
	return fg_slot_whole_sink(s, ref, res, sink, arg);
}

#endif

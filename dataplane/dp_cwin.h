/* dp_cwin.h - how one lcore reads its consumers' ACK bases (dp_cwin.c,
 * and dp_cwin_ack and dp_cwin_sent inline below: they run for every entry
 * of every consumer ACK frame and every delivery): pure C, no DPDK, no
 * I/O, no state shared between lcores.
 *
 * The fleet's receiving transport ACKs at most base..base+63 per stream,
 * base = the lowest sequence it still holds, and trims only once 128 are
 * held (wire.md 2.1). Read that way, a pending delivery below the base has
 * been delivered and one beyond base + 63 cannot be ACKed before the
 * window moves (dp_dlv.h keeps that window and places pending entries
 * against it). A consumer that ACKs exactly what it received says nothing
 * with its base: read the fleet's way, its ACK of seq 10 would retire a
 * lost seq 9. This file decides, per stream, which base the window may
 * take:
 *
 *   reading   [consumers] ack_window (the `mode` argument, enum
 *             fg_ack_window): EXACT never takes a base; FLEET
 *             reads every stream the fleet's way; AUTO reads a stream
 *             exactly until its consumer has shown the fleet's signature
 *             DP_CWIN_FLEET_HITS times: an entry with the same base as
 *             the stream's previous entry naming every sequence that one
 *             named (at least two) and more (its held set grew under an
 *             unchanged lowest sequence). A consumer that ACKs what it
 *             just received names a new base with each frame; one that
 *             packs the sequences received since its last ACK repeats a
 *             base with the earlier bits only when all of them came
 *             again.
 *             "Previous" is any of the stream's DP_CWIN_RECENT latest
 *             bases, so entries of another sender in between (a forged
 *             or replayed ACK, an earlier run's) cannot hide the
 *             signature; entries judged ahead are left out.
 *   ahead     a base beyond the highest sequence this lcore sent on the
 *             stream cannot be the lowest one the consumer holds: ignored
 *             (counted by the caller); it would retire every pending
 *             delivery as delivered.
 *   stale     a base below the window's base (a reordered or replayed
 *             ACK; the fleet's base only moves up once the consumer has
 *             trimmed): ignored (counted); it would hold every pending
 *             delivery beyond its base + 63 without resends. The entry's
 *             bits still ACK what they name, so a late sequence that
 *             lowered a fleet consumer's base is retired by its own bit.
 *   restart   a delivery sent more than DP_CWIN_RESTART below the
 *             window's base (or more than DP_CWIN_RESTART_SENT below the
 *             highest sequence sent) is a new run of the stream: the
 *             window and the highest sequence start again from it, so
 *             the old run's bases are "ahead" of it.
 * An lcore that sent nothing on a stream has no deliveries there to place
 * and takes no base (DP_CWIN_NONE), but still follows the entries for the
 * fleet's signature.
 *
 * Streams live in a direct-mapped table of DP_CWIN_STREAMS (by the
 * stream's low byte, as dp_dlv's windows); a colliding stream takes the
 * entry over and the old one starts again (exact until seen again).
 *
 * Who may call: the owning lcore only (single writer, nothing atomic). */
#ifndef DP_CWIN_H
#define DP_CWIN_H

#include <stdbool.h>
#include <stdint.h>

#include "fg/config.h"

#define DP_CWIN_STREAMS 256u
#define DP_CWIN_FLEET_HITS 2u        /* fleet signatures before AUTO reads a stream the fleet's way */
#define DP_CWIN_RESTART 128u         /* a send this far below the window's base restarts the stream */
#define DP_CWIN_RESTART_SENT (1u << 20) /* ... or this far below the highest sequence sent */
#define DP_CWIN_RECENT 4u            /* recent entries the fleet's signature is looked for against */

struct dp_cwin_stream {
	uint16_t stream;
	bool used;
	bool fleet;         /* read the fleet's way (FLEET, or AUTO once seen) */
	uint8_t hits;       /* fleet signatures seen (AUTO) */
	bool has_sent, has_base, has_seen;
	uint8_t n_recent;   /* recent entries held */
	uint8_t r_old;      /* where the least recent one is (a ring, in the order they came) */
	uint32_t sent_hi;   /* highest sequence this lcore sent on the stream */
	uint32_t seen_base; /* the previous entry's base, whatever its verdict */
	uint32_t base;      /* the window's base: the latest base taken */
	/* the latest entries of distinct bases (not judged ahead), one array
	 * per field: the search compares bases only. Ring order: r_old,
	 * r_old + 1, ... (mod DP_CWIN_RECENT), the least recent first; while
	 * fewer than DP_CWIN_RECENT are held, r_old is 0 and they are
	 * [0, n_recent). */
	uint32_t r_base[DP_CWIN_RECENT] __attribute__((aligned(16)));
	uint64_t r_bits[DP_CWIN_RECENT];
};

/* All zero is the empty table (struct dp_lcore is zeroed at init). */
struct dp_cwin {
	struct dp_cwin_stream s[DP_CWIN_STREAMS];
};

/* What one ACK entry's base does. */
enum dp_cwin_verdict {
	DP_CWIN_NONE = 0, /* no window from it (exact reading, not seen yet, or nothing sent here) */
	DP_CWIN_SAME,     /* the window's base, unchanged */
	DP_CWIN_MOVED,    /* the window takes this base */
	DP_CWIN_STALE,    /* below the window's base: ignored */
	DP_CWIN_AHEAD,    /* beyond anything this lcore sent on the stream: ignored */
};

/* What else an ACK entry told (dp_cwin_ack). */
struct dp_cwin_note {
	bool seen_fleet; /* this entry made AUTO read the stream the fleet's way (once per stream) */
	bool new_base;   /* the stream reads the fleet's way here and the entry's base differs from
			  * the previous entry's: other lcores' windows may move (the caller copies
			  * the frame to them) */
};
/* Whether stream is read the fleet's way on this lcore. */
bool dp_cwin_is_fleet(const struct dp_cwin *w, uint8_t mode, uint16_t stream);

/* The parts of dp_cwin_ack kept out of line, rare: a stream new to its
 * entry (a colliding stream takes the entry over and starts again, exact
 * until seen again), and recent entry k's base named again: whether
 * bits, against k's, show the fleet's signature (then (base, bits) is
 * the most recent entry). */
void dp_cwin_stream_new(struct dp_cwin_stream *s, uint8_t mode, uint16_t stream);
bool dp_cwin_recent_again(struct dp_cwin_stream *s, unsigned k, uint32_t base, uint64_t bits);

/* Sequence arithmetic modulo 2^32: a - b as a signed distance. */
static inline int32_t dp_cwin_dist(uint32_t a, uint32_t b) { return (int32_t)(a - b); }

/* The stream's entry. */
static inline struct dp_cwin_stream *dp_cwin_stream_of(struct dp_cwin *w, uint8_t mode, uint16_t stream)
{
	struct dp_cwin_stream *s = &w->s[stream & (DP_CWIN_STREAMS - 1)];
	if (__builtin_expect(!s->used || s->stream != stream, 0))
		dp_cwin_stream_new(s, mode, stream);
	return s;
}

/* This lcore sent seq on stream for the first time (a new delivery, not a
 * resend). True when that restarts the stream (see above): the caller
 * forgets the window it placed deliveries against. */
static inline bool dp_cwin_sent(struct dp_cwin *w, uint8_t mode, uint16_t stream, uint32_t seq)
{
	struct dp_cwin_stream *s = dp_cwin_stream_of(w, mode, stream);
	if (!s->has_sent) {
		s->has_sent = true;
		s->sent_hi = seq;
		return false;
	}
	if ((s->has_base && dp_cwin_dist(seq, s->base) < -(int32_t)DP_CWIN_RESTART) ||
	    dp_cwin_dist(seq, s->sent_hi) < -(int32_t)DP_CWIN_RESTART_SENT) {
		/* a new run of the stream: what the window said was about the old one */
		s->has_base = false;
		s->sent_hi = seq;
		return true;
	}
	if (dp_cwin_dist(seq, s->sent_hi) > 0)
		s->sent_hi = seq;
	return false;
}

/* Which recent bases equal base: bit i for r_base[i], the four compared
 * at once (one 16-byte vector compare where the target has one). */
static inline unsigned dp_cwin_recent_match(const struct dp_cwin_stream *s, uint32_t base)
{
	_Static_assert(DP_CWIN_RECENT == 4, "four bases, one 16-byte vector");
	typedef uint32_t v4u __attribute__((vector_size(16)));
	v4u r;
	__builtin_memcpy(&r, s->r_base, sizeof(r));
	const v4u bit = {1, 2, 4, 8};
	v4u m = (v4u)(r == base) & bit;
	m |= __builtin_shufflevector(m, m, 2, 3, 0, 1);
	m |= __builtin_shufflevector(m, m, 1, 0, 3, 2);
	return m[0];
}

/* Whether (base, bits) shows the fleet's signature against one of the
 * stream's recent entries (same base, every earlier bit, and more); then
 * remember it as the most recent, in place of that entry, or of the least
 * recent one. */
static inline bool dp_cwin_signature(struct dp_cwin_stream *s, uint32_t base, uint64_t bits)
{
	const unsigned n = s->n_recent;
	/* the bases held are distinct: at most one matches (those beyond
	 * n_recent are not held: r_old is 0 until all are) */
	const unsigned m = dp_cwin_recent_match(s, base) & ((1u << n) - 1);
	if (m)
		return dp_cwin_recent_again(s, (unsigned)__builtin_ctz(m), base, bits);
	if (n < DP_CWIN_RECENT) { /* a free one */
		s->r_base[n] = base;
		s->r_bits[n] = bits;
		s->n_recent = (uint8_t)(n + 1);
	} else { /* in place of the least recent; the next one is now */
		s->r_base[s->r_old] = base;
		s->r_bits[s->r_old] = bits;
		s->r_old = (uint8_t)((s->r_old + 1) % DP_CWIN_RECENT);
	}
	return false;
}

/* An ACK entry of stream from its consumer: base and its 64-bit bitmap
 * (bit k = base + k), read as mode says; *note (not NULL) is written. */
static inline enum dp_cwin_verdict dp_cwin_ack(struct dp_cwin *w, uint8_t mode, uint16_t stream, uint32_t base,
					       uint64_t bits, struct dp_cwin_note *note)
{
	note->seen_fleet = false;
	note->new_base = false;
	if (mode == FG_ACKWIN_EXACT)
		return DP_CWIN_NONE;
	struct dp_cwin_stream *s = dp_cwin_stream_of(w, mode, stream);
	bool changed = !s->has_seen || s->seen_base != base;
	s->has_seen = true;
	s->seen_base = base;
	/* beyond the highest sequence sent here: not a sequence the consumer
	 * can hold (when this lcore sent on the stream at all) */
	bool ahead = s->has_sent && dp_cwin_dist(base, s->sent_hi) > 0;
	if (!s->fleet && !ahead && dp_cwin_signature(s, base, bits) && ++s->hits >= DP_CWIN_FLEET_HITS) {
		s->fleet = true;
		note->seen_fleet = true;
	}
	if (!s->fleet)
		return DP_CWIN_NONE;
	note->new_base = changed;
	if (!s->has_sent)
		return DP_CWIN_NONE; /* nothing of it pending here */
	if (ahead)
		return DP_CWIN_AHEAD;
	if (s->has_base && dp_cwin_dist(base, s->base) < 0)
		return DP_CWIN_STALE;
	if (s->has_base && base == s->base)
		return DP_CWIN_SAME;
	s->has_base = true;
	s->base = base;
	return DP_CWIN_MOVED;
}

#endif

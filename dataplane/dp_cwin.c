/* dp_cwin.c - how one lcore reads its consumers' ACK bases (see
 * dp_cwin.h). Owning lcore only. */
#include "dp_cwin.h"

#include <string.h>

#include "fg/config.h"

/* The stream's entry; a colliding stream takes it over and starts again. */
static struct dp_cwin_stream *stream_of(struct dp_cwin *w, uint8_t mode, uint16_t stream)
{
	struct dp_cwin_stream *s = &w->s[stream & (DP_CWIN_STREAMS - 1)];
	if (!s->used || s->stream != stream) {
		memset(s, 0, sizeof(*s));
		s->used = true;
		s->stream = stream;
		s->fleet = mode == FG_ACKWIN_FLEET;
	}
	return s;
}

/* Sequence arithmetic modulo 2^32: a - b as a signed distance. */
static int32_t dist(uint32_t a, uint32_t b) { return (int32_t)(a - b); }

bool dp_cwin_sent(struct dp_cwin *w, uint8_t mode, uint16_t stream, uint32_t seq)
{
	struct dp_cwin_stream *s = stream_of(w, mode, stream);
	if (!s->has_sent) {
		s->has_sent = true;
		s->sent_hi = seq;
		return false;
	}
	if ((s->has_base && dist(seq, s->base) < -(int32_t)DP_CWIN_RESTART) ||
	    dist(seq, s->sent_hi) < -(int32_t)DP_CWIN_RESTART_SENT) {
		/* a new run of the stream: what the window said was about the old one */
		s->has_base = false;
		s->sent_hi = seq;
		return true;
	}
	if (dist(seq, s->sent_hi) > 0)
		s->sent_hi = seq;
	return false;
}

bool dp_cwin_is_fleet(const struct dp_cwin *w, uint8_t mode, uint16_t stream)
{
	const struct dp_cwin_stream *s = &w->s[stream & (DP_CWIN_STREAMS - 1)];
	return mode == FG_ACKWIN_FLEET || (s->used && s->stream == stream && s->fleet);
}

/* Whether (base, bits) shows the fleet's signature against one of the
 * stream's recent entries (same base, every earlier bit, and more); then
 * remember it in place of that entry, or of the oldest one. */
static bool fleet_signature(struct dp_cwin_stream *s, uint32_t base, uint64_t bits)
{
	/* the bases held are distinct: at most one matches */
	unsigned n = s->n_recent, k = 0;
	while (k < n && s->r_base[k] != base)
		k++;
	bool hit = false;
	if (k < n) {
		/* at least two earlier bits: a consumer that packs what it
		 * received since its last ACK repeats a one-bit entry's base
		 * when that sequence comes again with others */
		uint64_t was = s->r_bits[k];
		hit = (bits & was) == was && bits != was && (was & (was - 1));
	} else if (n < DP_CWIN_RECENT) {
		s->n_recent = (uint8_t)(n + 1); /* a free one */
	} else {
		k = 0; /* the oldest (ages are distinct) */
		for (unsigned j = 1; j < DP_CWIN_RECENT; j++)
			if (s->r_age[j] < s->r_age[k])
				k = j;
	}
	s->r_base[k] = base;
	s->r_bits[k] = bits;
	s->r_age[k] = ++s->clock;
	return hit;
}

enum dp_cwin_verdict dp_cwin_ack(struct dp_cwin *w, uint8_t mode, uint16_t stream, uint32_t base, uint64_t bits,
				 struct dp_cwin_note *note)
{
	note->seen_fleet = false;
	note->new_base = false;
	if (mode == FG_ACKWIN_EXACT)
		return DP_CWIN_NONE;
	struct dp_cwin_stream *s = stream_of(w, mode, stream);
	bool changed = !s->has_seen || s->seen_base != base;
	s->has_seen = true;
	s->seen_base = base;
	/* beyond the highest sequence sent here: not a sequence the consumer
	 * can hold (when this lcore sent on the stream at all) */
	bool ahead = s->has_sent && dist(base, s->sent_hi) > 0;
	if (!s->fleet && !ahead && fleet_signature(s, base, bits) && ++s->hits >= DP_CWIN_FLEET_HITS) {
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
	if (s->has_base && dist(base, s->base) < 0)
		return DP_CWIN_STALE;
	if (s->has_base && base == s->base)
		return DP_CWIN_SAME;
	s->has_base = true;
	s->base = base;
	return DP_CWIN_MOVED;
}

/* dp_cwin.c - how one lcore reads its consumers' ACK bases (see
 * dp_cwin.h). Owning lcore only. */
#include "dp_cwin.h"

#include <string.h>

/* A stream new to its entry: see dp_cwin.h. */
void dp_cwin_stream_new(struct dp_cwin_stream *s, uint8_t mode, uint16_t stream)
{
	memset(s, 0, sizeof(*s));
	s->used = true;
	s->stream = stream;
	s->fleet = mode == FG_ACKWIN_FLEET;
}

bool dp_cwin_is_fleet(const struct dp_cwin *w, uint8_t mode, uint16_t stream)
{
	const struct dp_cwin_stream *s = &w->s[stream & (DP_CWIN_STREAMS - 1)];
	return mode == FG_ACKWIN_FLEET || (s->used && s->stream == stream && s->fleet);
}

/* A recent entry's base again: see dp_cwin.h. The entry becomes the most
 * recent: the ones after it in ring order move up one place. */
bool dp_cwin_recent_again(struct dp_cwin_stream *s, unsigned k, uint32_t base, uint64_t bits)
{
	const unsigned n = s->n_recent, R = DP_CWIN_RECENT;
	/* at least two earlier bits: a consumer that packs what it received
	 * since its last ACK repeats a one-bit entry's base when that
	 * sequence comes again with others */
	const uint64_t was = s->r_bits[k];
	const bool hit = (bits & was) == was && bits != was && (was & (was - 1));
	unsigned i = (k + R - s->r_old) % R, at = k;
	for (; i + 1 < n; i++) {
		unsigned next = (at + 1) % R;
		s->r_base[at] = s->r_base[next];
		s->r_bits[at] = s->r_bits[next];
		at = next;
	}
	s->r_base[at] = base;
	s->r_bits[at] = bits;
	return hit;
}

/* fleet_crit.c - the critical path's rule for one (token, layer): the next
 * layer's start, by jump or by the coordinator's relay (the model is
 * written down in fleet_crit.h).
 *
 * Who may call: any thread (pure functions, no state). */
#include <errno.h>

#include "fleet_crit.h"

static uint64_t later(uint64_t a, uint64_t b) { return a > b ? a : b; }

uint64_t fl_crit_canon_ns(const struct fl_crit_layer *l)
{
	return l->t_ffn + l->relay_ns + l->net_ns;
}

int fl_crit_start(enum fl_crit mode, const struct fl_crit_layer *l, struct fl_crit_start *out)
{
	uint64_t canon = fl_crit_canon_ns(l);
	struct fl_crit_start s = { 0 };

	switch (mode) {
	case FL_CRIT_CANONICAL:
		s.at = canon;
		break;
	case FL_CRIT_JUMP:
		if (!l->decided)
			return -EAGAIN;
		if (!l->gate) {
			/* the coordinator relays once it knows it must */
			s.at = later(canon, l->t_decision + l->relay_ns + l->net_ns);
			break;
		}
		/* The hop is skipped: the jumped seed or nothing. */
		s.jump = true;
		if (l->t_seed) {
			uint64_t seed_at = l->t_seed + l->net_ns;
			s.at = later(seed_at, l->t_decision);
			s.late_decision = l->t_decision > seed_at;
		} else if (l->seed_gone) {
			s.at = later(l->t_gone, l->t_decision);
			s.stalled = true;
		} else {
			return -EAGAIN;
		}
		break;
	default:
		return -EINVAL;
	}
	*out = s;
	return 0;
}

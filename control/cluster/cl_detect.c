/* cl_detect.c - the failure detector's rules (see cl_detect.h for the
 * contract). Pure; any thread. */
#include "cl_detect.h"

uint32_t cl_lease_stale_s(const struct fg_cluster_cfg *cc)
{
	uint64_t ka = cc->keepalive_ms ? cc->keepalive_ms : cc->lease_ttl_s * 1000u / 3u;
	uint64_t s = cc->stale_after_s ? cc->stale_after_s : (ka + cc->timeout_ms + 999u) / 1000u;
	return s < cc->lease_ttl_s ? (uint32_t)s : 0;
}

uint32_t cl_beat_down_ms(const struct fg_cluster_cfg *cc)
{
	if (!cc->beat_ms)
		return 0;
	return cc->beat_down_ms ? cc->beat_down_ms : 3u * cc->beat_ms + 50u;
}

void cl_beat_window(unsigned n, unsigned self, unsigned *lo, unsigned *hi)
{
	if (n <= CL_BEAT_WINDOW) {
		*lo = 0;
		*hi = n ? n - 1 : 0;
		return;
	}
	unsigned l = self >= CL_BEAT_WINDOW / 2 ? self - CL_BEAT_WINDOW / 2 : 0;
	if (l > n - CL_BEAT_WINDOW)
		l = n - CL_BEAT_WINDOW;
	*lo = l;
	*hi = l + CL_BEAT_WINDOW - 1;
}

/* What one timetolive answer proves (see cl_detect.h).
 *
 * etcd answers TTL = the remaining time truncated to whole seconds (r >= 1:
 * remaining in [r, r+1); 0: in (-1, 1); -1: no such lease) and grantedTTL
 * g. Within one raft term the remaining time only falls, 1 s a second,
 * except when the holder refreshes it (back to g, read g-1); a new leader
 * extends every lease past g (read g or more: no information either way,
 * ignored). So:
 *  - stale: g - 1 - r >= stale_s, or the lease is gone: no refresh for more
 *    than stale_s seconds (an extension only raises r: never a false stale);
 *  - refreshed since an earlier answer of the same term (r1 received at
 *    recv1): r2 >= 1 and r2 s + (sent2 - recv1) >= r1 + 1 s, since without
 *    a refresh the remaining time at the second answer is below
 *    r1 + 1 s - (sent2 - recv1). bound_ms keeps the tightest r1 + 1 s + recv1.
 * A stale node is reported back only on such a proof; so is a node after a
 * snapshot (the loop may hold it stale). */
bool cl_lease_judge(struct cl_lease_view *v, int64_t ttl, int64_t granted, uint64_t term, uint64_t sent_ms,
		    uint64_t recv_ms, uint32_t stale_s)
{
	if (ttl >= 0 && granted > 0 && ttl >= granted)
		return false; /* extended by a new leader: says nothing */
	bool known = ttl >= 0 && granted > 0;
	bool stale = !known || granted - 1 - ttl >= (int64_t)stale_s;
	bool refreshed = false;
	if (known) {
		if (term != v->term) {
			v->term = term; /* answers of an earlier term may predate an extension */
			v->bound_ms = UINT64_MAX;
		}
		refreshed = !stale && ttl >= 1 && v->bound_ms != UINT64_MAX && (uint64_t)ttl * 1000u + sent_ms >= v->bound_ms;
		uint64_t bound = (uint64_t)(ttl + 1) * 1000u + recv_ms;
		if (bound < v->bound_ms)
			v->bound_ms = bound;
	}
	int next = stale ? CL_PEER_STALE : v->state == CL_PEER_FRESH || refreshed ? CL_PEER_FRESH : v->state;
	if (next == v->state)
		return false;
	v->state = next;
	return true;
}

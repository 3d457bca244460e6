/* cl_detect.h - the cluster's failure detector: its rules, pure
 * (docs/cluster.md "Heartbeats", "How it scales", and the lease probes).
 *
 * Owns: the bounds a configuration gives (when a peer's lease counts as
 * stale, when its silence counts as down), the beat window (which peers
 * this node watches and probes), when a peer's heartbeats are proven
 * stopped (only by this node's own later beat coming back, and only while
 * its own beats flow steadily), and what a lease probe's answers prove.
 *
 * Who calls: the cluster thread (cp_cluster_etcd.c), which keeps the
 * state these rules read (struct cl_beat_view, struct cl_lease_view, one
 * of each per peer) and acts on their answers; cp_cluster.c reads the
 * bounds for its reports. Pure: no I/O, no clock (times are arguments), no
 * logging; any thread. */
#ifndef CL_DETECT_H
#define CL_DETECT_H

#include <stdbool.h>
#include <stdint.h>

#include "fg/config.h"

/* The beat window: this node and the nodes next to it in name order, this
 * many in all; their beats are all this node watches and judges, and their
 * leases all it probes. A peer outside it is judged by the down/ records of
 * the nodes that watch it (docs/cluster.md "How it scales"). */
#define CL_BEAT_WINDOW 5u

/* The staleness bound in whole seconds this configuration gives (0: off):
 * stale_after_s, or when 0 keepalive + timeout_ms rounded up to a second;
 * off when not shorter than lease_ttl_s (the lease expires as soon). etcd
 * reports a lease's remaining TTL in whole seconds (truncated), so a peer
 * is stale when granted - 1 - remaining >= this: no refresh for more than
 * this many seconds. Any thread. */
uint32_t cl_lease_stale_s(const struct fg_cluster_cfg *cc);

/* The heartbeat's "down" bound in ms this configuration gives (0: no
 * heartbeat): beat_down_ms, or when 0 3 * beat_ms + 50. Any thread. */
uint32_t cl_beat_down_ms(const struct fg_cluster_cfg *cc);

/* What the thread knows of another node's heartbeats (docs/cluster.md
 * "Heartbeats"). last_ms: when its last beat came through the watch (or,
 * before the first, when the thread started watching it), this node's
 * monotonic clock. */
enum { CL_BEAT_UNPROVEN, CL_BEAT_ALIVE, CL_BEAT_DOWN };
struct cl_beat_view {
	int state;        /* CL_BEAT_* */
	uint64_t last_ms;
};
/* From when a peer's silence counts: its last beat, or, when later, the
 * moment this node's own beats became steady again (steady_ms: the send
 * time of the first own beat back after a gap; see cl_beat_steady). */
static inline uint64_t cl_beat_from(const struct cl_beat_view *v, uint64_t steady_ms)
{
	return v->last_ms > steady_ms ? v->last_ms : steady_ms;
}

/* Is the peer down? proven_ms: the send time of this node's latest own beat
 * that came back through the watch. Every beat of the peer committed before
 * that one would have come through the watch first (etcd delivers a watch
 * in revision order), so a peer whose last beat came at last_ms with
 * proven_ms >= last_ms + down_ms wrote no beat for at least down_ms: a
 * stall of etcd, of the watch or of this node's own thread delays the proof
 * as well, and is never taken for the peer's silence. And only while this
 * node's own beats went through steadily (steady_ms, cl_beat_steady): after
 * an etcd leader election or a slow spell every node's beats stalled, and
 * the peer's silence counts again only from when this node's own beats
 * flow again. Pure (tests). */
static inline bool cl_beat_down(const struct cl_beat_view *v, uint64_t proven_ms, uint64_t steady_ms,
				uint32_t down_ms)
{
	return v->state != CL_BEAT_DOWN && down_ms && steady_ms && proven_ms >= cl_beat_from(v, steady_ms) + down_ms;
}

/* This node's own beat sent at sent_ms came back at now_ms; *proven_ms is
 * the latest such send time, *steady_ms the send time from which they came
 * back steadily. A gap: the previous one back was sent more than two beat
 * periods earlier (a beat failed or hung: no leader, an endpoint gone) or
 * this one took more than two periods to come back (etcd slow): then
 * steady_ms = sent_ms. An older beat than *proven_ms changes nothing. Pure
 * (tests). */
static inline void cl_beat_steady(uint64_t *proven_ms, uint64_t *steady_ms, uint64_t sent_ms, uint64_t now_ms,
				  uint32_t beat_ms)
{
	if (sent_ms <= *proven_ms)
		return;
	if (!*steady_ms || sent_ms - *proven_ms > 2ull * beat_ms || now_ms - sent_ms > 2ull * beat_ms)
		*steady_ms = sent_ms;
	*proven_ms = sent_ms;
}

/* What the thread knows of another node's lease from its probes. */
enum { CL_PEER_FRESH, CL_PEER_STALE, CL_PEER_UNPROVEN /* new, or after a snapshot: nothing reported yet */ };
struct cl_lease_view {
	int state;         /* CL_PEER_*: what was last reported */
	uint64_t term;     /* raft_term of the answers bound_ms comes from */
	uint64_t bound_ms; /* without a refresh, remaining TTL < bound_ms - now (mono ms); UINT64_MAX: none */
};
/* Fold one /v3/lease/timetolive answer into v: ttl (TTL, -1 when etcd has
 * no such lease), granted (grantedTTL), term (header raft_term), sent and
 * received at sent_ms / recv_ms (monotonic). STALE when the lease was not
 * refreshed for more than stale_s seconds (or is gone); FRESH from STALE or
 * UNPROVEN only when the answers prove a refresh (an extension by a new
 * leader is not one). Returns true when v->state changed (to report).
 * Pure (tests). */
bool cl_lease_judge(struct cl_lease_view *v, int64_t ttl, int64_t granted, uint64_t term, uint64_t sent_ms,
		    uint64_t recv_ms, uint32_t stale_s);

/* The window of sorted names[0..n) (this node at index self) whose beats
 * this node watches: [*lo, *hi], CL_BEAT_WINDOW names around self, fewer
 * only when n is smaller; never wraps. Every node is in the window of at
 * least two others when n >= 3 (one when n == 2). Pure (tests). */
void cl_beat_window(unsigned n, unsigned self, unsigned *lo, unsigned *hi);

#endif

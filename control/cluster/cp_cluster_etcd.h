/* cp_cluster_etcd.h - the cluster thread: fanogate's etcd v3 client over the
 * JSON gateway (libcurl), and the two queues that are its only contact with
 * the loop thread.
 *
 * Owns: the etcd connection (endpoint rotation, etcd authentication, this
 * node's lease and its keepalive, the watches), the keys' encoding and
 * their authentication (cl_value.h: every value written carries the fleet
 * key's MAC, every value read is verified and bound to a live lease before
 * it becomes a fact), and turning etcd's answers into facts (struct cl_in)
 * for the loop; the loop's changes (struct cl_out) into etcd writes (each a
 * compare-and-swap on the key's version; the epoch only one up at a time).
 *
 * Threads: cl_etcd_start/stop/push_out/pop_in from the loop thread only;
 * everything else runs on the cluster thread it starts. The queues are
 * mutex-guarded rings (control plane, a few messages per change, never per
 * packet); the loop is woken by an eventfd written on the queue's empty ->
 * non-empty edge, the thread by curl_multi_wakeup. */
#ifndef CP_CLUSTER_ETCD_H
#define CP_CLUSTER_ETCD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "fg/common.h"
#include "fg/config.h"

/* loop -> thread: a change this node made. */
enum cl_out_kind {
	CL_OUT_LINE,   /* put lines/<i>; create_only: only if absent (first start) */
	CL_OUT_EPOCH,  /* CAS epoch from -> to; has_from false: create if absent */
	CL_OUT_POINTS, /* put points/<node> (on the lease) */
};
struct cl_out {
	enum cl_out_kind kind;
	unsigned line;
	bool create_only;
	char state[12];   /* disabled | shadow | active */
	char event[16];   /* fg_line_event_name */
	uint32_t uid;     /* operator uid, or FG_UID_AUDIT */
	char why[128];
	bool has_from;
	uint32_t from, to;
	uint8_t alive, judged; /* points bit p-1 */
};

/* thread -> loop: what etcd says. */
enum cl_in_kind {
	CL_IN_UP,        /* reached etcd (endpoint); a snapshot follows */
	CL_IN_DOWN,      /* lost etcd (why) */
	CL_IN_SNAP_END,  /* the snapshot is complete (revision) */
	CL_IN_LINE,      /* lines/<line>, written by node (proven: its MAC and lease; mine: this node's lease) */
	CL_IN_EPOCH,     /* epoch = epoch, advanced by node (why); one up from the last, or a snapshot's */
	CL_IN_NODE,      /* nodes/<node> put (layers) or deleted */
	CL_IN_POINTS,    /* points/<node> put (alive, judged) or deleted */
	CL_IN_LEASE,     /* this node's lease: id, ttl (keepalive answered) */
	CL_IN_DUPLICATE, /* another live node holds nodes/<this name> (its lease and value in why): not joined */
	CL_IN_PEER_LEASE, /* another node's lease (node, lease_id) probed: stale (not refreshed for more than the
			   * bound), or, after stale or a snapshot, a refresh proven (!stale); ttl, granted */
	CL_IN_PEER_BEAT, /* another node's heartbeats (node, lease_id): stopped (stale: none for gap_ms, proven by
			  * this node's own later beat when it is in this node's beat window, else by the down/
			  * record of a node whose window it is in), or beating (!stale: the first beat after that,
			  * or after a (re)connection, or that record withdrawn) */
};
struct cl_in {
	enum cl_in_kind kind;
	bool snapshot;   /* part of a snapshot (after CL_IN_UP), not a watch event */
	bool deleted;
	bool mine;       /* LINE, EPOCH: written under this node's current lease */
	unsigned line;
	char node[FG_CLUSTER_NAME_MAX];
	char state[12];
	char event[16];
	uint32_t uid;
	char why[160];
	uint32_t epoch;
	uint8_t alive, judged;
	char layers[FG_CONFIG_LINE_MAX + 1];
	int64_t lease_id, ttl;
	int64_t granted;  /* CL_IN_PEER_LEASE: the lease's granted TTL (0: etcd no longer has it) */
	bool stale;       /* CL_IN_PEER_LEASE: not refreshed for more than cl_etcd_stale_s seconds; false: refreshed */
	int64_t gap_ms;   /* CL_IN_PEER_BEAT: how long no beat of that node had come (down), or had not (beating) */
	int64_t revision;
};

struct cl_etcd_stats {
	uint64_t requests, request_failures, watch_events, watch_restarts, reconnects;
	uint64_t cas_won, cas_lost, out_dropped, keepalives, leases_granted, duplicate_refusals;
	uint64_t lease_probes, lease_probe_failures; /* timetolive requests on the other nodes' leases */
	uint64_t beats_sent, beat_failures; /* this node's heartbeat puts (beats/<node>), those that failed */
	uint64_t beats_seen;              /* the other nodes' heartbeats seen through the watch */
	/* values refused (never applied), by reason (docs/cluster.md "Authenticated values") */
	uint64_t refused_unauthenticated; /* no envelope, or its MAC is not the fleet key's */
	uint64_t refused_unbound;         /* not on the lease of the node it names (lease-less, another node's) */
	uint64_t refused_replayed;        /* a valid value where it was not written (version, a beat's seq) */
	uint64_t refused_epoch;           /* an epoch that is not the last one plus one */
	uint64_t refused_malformed;       /* authentic but its payload does not parse */
	uint64_t refused_nodes_full;      /* a node beyond [cluster] nodes_max: not tracked */
	uint64_t foreign_keys;            /* keys under the prefix outside the schema: ignored */
	uint64_t names_reclaimed;         /* nodes/<this name> held by no live node's value: taken over */
	uint64_t auth_failures;           /* etcd refused the user, the password or the token */
	uint64_t down_records;            /* down/<node> records this node wrote (its beat window's peers) */
	unsigned watched;                 /* peers in this node's beat window now */
	int64_t revision; /* the last etcd revision seen (snapshot or watch) */
};

#define CL_QUEUE_MAX 1024u
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
uint32_t cl_etcd_stale_s(const struct fg_cluster_cfg *cc);

/* The heartbeat's "down" bound in ms this configuration gives (0: no
 * heartbeat): beat_down_ms, or when 0 3 * beat_ms + 50. Any thread. */
uint32_t cl_etcd_beat_down_ms(const struct fg_cluster_cfg *cc);

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
 * The cluster thread; pure (tests). */
bool cl_lease_judge(struct cl_lease_view *v, int64_t ttl, int64_t granted, uint64_t term, uint64_t sent_ms,
		    uint64_t recv_ms, uint32_t stale_s);

struct cl_etcd; /* opaque; heap-owned */

/* The window of sorted names[0..n) (this node at index self) whose beats
 * this node watches: [*lo, *hi], CL_BEAT_WINDOW names around self, fewer
 * only when n is smaller; never wraps. Every node is in the window of at
 * least two others when n >= 3 (one when n == 2). Pure (tests). */
void cl_beat_window(unsigned n, unsigned self, unsigned *lo, unsigned *hi);

/* Read a secret file (the fleet key, the etcd password): a regular file
 * with no group or other permission bits, at most cap bytes, one trailing
 * newline dropped. Returns its length, or -errno with why (the path and
 * what is wrong: "group- or world-readable (mode 0644): chmod 600 it").
 * Any thread; start-up only. */
FG_MUST_CHECK int cl_secret_read(const char *path, uint8_t *buf, size_t cap, char *why, size_t why_len);

/* Start the cluster thread for cfg->cluster (cfg must outlive it): reads
 * the fleet key (key_file) and the etcd password (password_file) first,
 * refusing a file others may read. *evfd is the eventfd the loop polls for
 * CL_IN messages (owned by the thread object). Returns 0 or -errno with a
 * reason in why. */
FG_MUST_CHECK int cl_etcd_start(struct cl_etcd **out, const struct fg_config *cfg, int *evfd, char *why,
				size_t why_len);
/* Stop the thread (revoking the lease, bounded by timeout_ms) and free. NULL ok. */
void cl_etcd_stop(struct cl_etcd *t);
/* Queue a change for etcd. 0, or -ENOBUFS when the queue is full (counted). */
FG_MUST_CHECK int cl_etcd_push_out(struct cl_etcd *t, const struct cl_out *m);
/* Take up to max facts; returns how many (drains the eventfd first). */
unsigned cl_etcd_pop_in(struct cl_etcd *t, struct cl_in *out, unsigned max);
/* A copy of the thread's counters (taken under the queue lock). */
void cl_etcd_stats(struct cl_etcd *t, struct cl_etcd_stats *out);
/* The endpoint currently used ("" when none). */
void cl_etcd_endpoint(struct cl_etcd *t, char *buf, size_t len);

#endif

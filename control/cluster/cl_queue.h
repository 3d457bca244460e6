/* cl_queue.h - the two queues between the loop thread and the cluster
 * thread, and the facts they carry: struct cl_out (loop -> thread: a
 * change this node made, for etcd) and struct cl_in (thread -> loop: what
 * etcd says, authenticated and bound already).
 *
 * Owns: two bounded rings of fixed-size facts under one mutex (control
 * plane, a few messages per change, never per packet), and the eventfd the
 * loop polls: written on the in-queue's empty -> non-empty edge. The
 * out-queue's consumer is woken by its owner (cl_etcd_push_out wakes the
 * transport). Neither side ever holds the lock across I/O.
 *
 * Who calls: cp_cluster_etcd.c, which owns the queue: cl_queue_push_out
 * and cl_queue_pop_in run on the loop thread (through cl_etcd_push_out and
 * cl_etcd_pop_in), cl_queue_peek_out, cl_queue_drop_out and
 * cl_queue_push_in on the cluster thread; init, stop and fini on the loop
 * thread, without the cluster thread running for init and fini. */
#ifndef CL_QUEUE_H
#define CL_QUEUE_H

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
	bool stale;       /* CL_IN_PEER_LEASE: not refreshed for more than cl_lease_stale_s seconds; false: refreshed */
	int64_t gap_ms;   /* CL_IN_PEER_BEAT: how long no beat of that node had come (down), or had not (beating) */
	int64_t revision;
};

#define CL_QUEUE_MAX 1024u

struct cl_queue {
	pthread_mutex_t lock;
	pthread_cond_t in_space; /* the in-queue has room again, or the queue stops */
	bool stopping;           /* cl_queue_stop: cl_queue_push_in waits no more */
	int evfd;                /* the loop's wake-up (cl_in); -1 before init */
	struct cl_out out[CL_QUEUE_MAX];
	unsigned out_head, out_n;
	struct cl_in in[CL_QUEUE_MAX];
	unsigned in_head, in_n;
	uint64_t out_dropped;    /* changes refused by a full out-queue */
};

/* Set up q (caller-owned storage): empty rings, the eventfd (non-blocking,
 * close-on-exec). Returns 0 or -errno; on failure q needs no fini. */
FG_MUST_CHECK int cl_queue_init(struct cl_queue *q);
/* Close the eventfd and free what init made. The cluster thread has ended. */
void cl_queue_fini(struct cl_queue *q);
/* From now on cl_queue_push_in drops a fact that finds the queue full
 * instead of waiting for the loop (which is stopping). */
void cl_queue_stop(struct cl_queue *q);

/* Loop thread: queue a change. 0, or -ENOBUFS when full (counted in
 * out_dropped; the caller wakes the consumer). */
FG_MUST_CHECK int cl_queue_push_out(struct cl_queue *q, const struct cl_out *m);
/* Cluster thread: the oldest queued change in *m (true), or false. It
 * stays queued until cl_queue_drop_out (a change etcd did not take is sent
 * again). */
bool cl_queue_peek_out(struct cl_queue *q, struct cl_out *m);
void cl_queue_drop_out(struct cl_queue *q);

/* Cluster thread: hand a fact to the loop, waiting for room while the
 * queue is full (the loop always drains: a full ring means it is behind,
 * so the thread waits, never the loop) unless the queue stops. */
void cl_queue_push_in(struct cl_queue *q, const struct cl_in *m);
/* Loop thread: take up to max facts; returns how many (drains the eventfd
 * first, and signals it again when facts remain). */
unsigned cl_queue_pop_in(struct cl_queue *q, struct cl_in *out, unsigned max);
/* Any thread: how many changes a full out-queue refused. */
uint64_t cl_queue_out_dropped(struct cl_queue *q);

#endif

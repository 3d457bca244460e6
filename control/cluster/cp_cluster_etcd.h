/* cp_cluster_etcd.h - the cluster thread: fanogate's etcd client, the
 * state machine of this node's membership in the fleet's etcd.
 *
 * Owns: the connection sequence (authenticate, this node's lease and its
 * keepalive, claiming the node's name, the snapshot, the watches) and its
 * failures (endpoint rotation, etcd lost); the keys' encoding and their
 * authentication (cl_value.h: every value written carries the fleet key's
 * MAC, every value read is verified and bound to a live lease before it
 * becomes a fact); the table of the other live nodes and the failure
 * detector's state (their heartbeats and lease probes, judged by
 * cl_detect.h's rules; this node's own heartbeat and down/ record); turning
 * etcd's answers into facts (struct cl_in) for the loop, and the loop's
 * changes (struct cl_out) into etcd writes (each a compare-and-swap on the
 * key's version; the epoch only one up at a time). It uses the transport
 * (cl_http.h) for every byte to etcd and the queues (cl_queue.h) for every
 * fact to and from the loop.
 *
 * Who calls: cp_cluster.c. Threads: cl_etcd_start, stop, push_out,
 * pop_in, stats and endpoint from the loop thread only; everything else
 * runs on the cluster thread it starts. The loop is woken by the queue's
 * eventfd, the thread by the transport's wakeup. */
#ifndef CP_CLUSTER_ETCD_H
#define CP_CLUSTER_ETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cl_queue.h"
#include "fg/common.h"
#include "fg/config.h"

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

struct cl_etcd; /* opaque; heap-owned */

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
/* A copy of the thread's counters (taken under their locks). */
void cl_etcd_stats(struct cl_etcd *t, struct cl_etcd_stats *out);
/* The endpoint currently used ("" when none). */
void cl_etcd_endpoint(struct cl_etcd *t, char *buf, size_t len);

#endif

/* cp_cluster.h - fleet-wide truth for a fanogate that is one of several
 * ([cluster] in the configuration, docs/cluster.md).
 *
 * Owns, on the loop thread: what this node knows of the fleet (the shared
 * model epoch, each line's base state and who set it, the live nodes with
 * their leases and the points each sees alive), applying the other nodes'
 * changes exactly as if they were local (through the shadow audit, so this
 * node's audit log records each with the node it came from), holding every
 * line in shadow while etcd is unreachable, and degrading the lines through
 * points only a vanished node served. The etcd client runs on the cluster
 * thread (cp_cluster_etcd.h); this file only exchanges facts with it.
 *
 * How it hears this node's changes, without a global: it interposes on the
 * engine's audit sink (cp_engine_set_audit; every event is forwarded to the
 * shadow audit, a model epoch advance is also sent to etcd), registers as
 * the audit's line-change listener (cp_audit_on_lines_changed: operator
 * commands, promotions, demotions), and reads this node's live points
 * (cp_points_live of the engine's points) on a 50 ms housekeeping tick.
 *
 * Who calls: main.c (new/free; the daemon holds the object); cp_op.c
 * (fanoctl cluster, fanoctl status), cp_metrics.c (/metrics) and
 * cp_status.c (the status and its warnings) read it through the handle the
 * daemon gives them. All on the loop thread. */
#ifndef CP_CLUSTER_H
#define CP_CLUSTER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cp_loop.h"
#include "fg/common.h"
#include "fg/config.h"
#include "fg/line.h"

struct cp_audit;
struct cp_cluster; /* heap-owned: cp_cluster_new / cp_cluster_free */
struct cp_engine;

/* With cfg->cluster.node set: start the cluster thread, interpose on e's
 * audit sink (a local model epoch advance goes to etcd) and listen to a's
 * line changes (a local base-state change goes to etcd); *out is the new
 * object. Without it: 0 and *out = NULL (every other call takes NULL).
 * The audit must be running; cfg, e and a must outlive the object.
 * Returns 0 or -errno with why. */
FG_MUST_CHECK int cp_cluster_new(struct cp_cluster **out, struct cp_loop *l, const struct fg_config *cfg,
				 struct cp_engine *e, struct cp_audit *a, char *why, size_t why_len);
/* Stop the thread (revokes this node's lease), give e and a back their
 * sink and listener, free. Call once the loop has stopped. NULL ok. */
void cp_cluster_free(struct cp_cluster *c);

/* The cluster state for `fanoctl cluster` (a new object; NULL when c is
 * NULL), and the /metrics lines (a malloc'd string the caller frees; NULL
 * when c is NULL). */
json_t *cp_cluster_json(const struct cp_cluster *c);
char *cp_cluster_metrics_text(const struct cp_cluster *c);

#endif

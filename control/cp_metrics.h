/* cp_metrics.h - the Prometheus metrics endpoint ([metrics] listen, default
 * 127.0.0.1:9464, "off" disables it).
 *
 * Owns: a plain-HTTP listener on the loop (loopback by default: it carries
 * no secrets but is not authenticated), one request per connection, and the
 * text exposition (format 0.0.4) of the control plane's counters, the
 * engine's outcomes and reasons, line states, the audit hand-off counters and
 * the dataplane's per-lcore counter snapshots (boundary.h, relaxed loads).
 *
 * Who may call: the loop thread only. */
#ifndef CP_METRICS_H
#define CP_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cp_engine.h"
#include "cp_loop.h"
#include "cp_server.h"
#include "cp_small_srv.h"
#include "fg/boundary.h"
#include "fg/config.h"

struct cp_cluster;
struct cp_reload;
struct cp_harden_stats;

struct cp_metrics {
	struct cp_loop *loop;
	const struct fg_config *cfg;
	struct cp_engine *engine;
	struct cp_server *srv;
	const struct fg_boundary *b;
	struct cp_small_srv ls; /* the listening socket, its connections, housekeeping */
	bool stopping;          /* cp_metrics_stop was called (main.c reads it) */
	uint16_t port;
	uint64_t scrapes;
	/* The daemon's configuration reload, for its counters; set by the
	 * daemon after cp_metrics_start. NULL: none (its counters read 0). */
	const struct cp_reload *reload;
	/* The operator socket's refused fds, set with reload; NULL: read 0. */
	const struct cp_harden_stats *op_fds;
	/* [cluster] (control/cluster/cp_cluster.h), set by the daemon once it
	 * runs; NULL: off (no cluster lines). */
	const struct cp_cluster *cluster;
};

/* Start accepting on listen_fd, the listener on [metrics] listen that
 * main.c claimed (cp_claim.h: bound to port, listening, non-blocking;
 * owned from this call, also on failure); a no-op returning 0 when it is
 * -1 ([metrics] listen = off). Returns 0 or -errno with a reason. */
FG_MUST_CHECK int cp_metrics_start(struct cp_metrics *m, struct cp_loop *l, const struct fg_config *cfg,
				   struct cp_engine *e, struct cp_server *srv, const struct fg_boundary *b,
				   int listen_fd, uint16_t port, char *why, size_t why_len);
void cp_metrics_stop(struct cp_metrics *m);

/* Render the exposition into a malloc'd NUL-terminated buffer (*out, length
 * returned), or -ENOMEM. */
FG_MUST_CHECK ssize_t cp_metrics_render(const struct cp_metrics *m, char **out);

#endif

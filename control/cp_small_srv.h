/* cp_small_srv.h - the listener under the control plane's small
 * one-request-per-connection servers: the operator socket (cp_op.c) and the
 * metrics endpoint (cp_metrics.c).
 *
 * Owns: the listening fd once started (closed by cp_small_srv_stop), the
 * io_uring accept on it (multishot when the kernel allows it, re-armed
 * when it ends; -EINVAL turns multishot off for the loop), a housekeeping
 * timer every ops->house_ns that re-arms a lost accept and hands each live
 * connection past its deadline to ops->on_deadline, and the list of the
 * service's connections (struct cp_small_conn embedded in each).
 * Not here: what a connection reads, writes or refuses; the service does
 * that in its callbacks and frees its connections itself (after
 * cp_small_srv_unlink).
 *
 * Who may call: the loop thread only; every callback runs on it. */
#ifndef CP_SMALL_SRV_H
#define CP_SMALL_SRV_H

#include <stdbool.h>
#include <stdint.h>

#include "cp_admit.h"
#include "cp_loop.h"
#include "fg/common.h"

/* Embedded in each connection of a service. */
struct cp_small_conn {
	struct cp_small_conn *next;
	uint64_t deadline_ns; /* on_deadline once cp_now_ns() reaches it */
	bool dead;            /* closing: no deadline, no stop callback any more */
	struct cp_admit_src src; /* the source it counts as (cp_small_srv_admit); family 0: not an IP
				  * peer, no per-source limit */
};

struct cp_small_srv;

struct cp_small_srv_ops {
	const char *name;  /* log prefix: "operator", "metrics" */
	uint64_t house_ns; /* housekeeping period */
	/* fd >= 0 was accepted: take it (cp_small_srv_link) or close it. Runs
	 * also while stopping (check s->stopping). */
	void (*on_accept)(struct cp_small_srv *s, int fd);
	/* A connection that is not dead reached its deadline. */
	void (*on_deadline)(struct cp_small_srv *s, struct cp_small_conn *c);
	/* cp_small_srv_stop: close a connection that is not dead. */
	void (*on_stop)(struct cp_small_srv *s, struct cp_small_conn *c);
};

struct cp_small_srv {
	struct cp_loop *loop;
	const struct cp_small_srv_ops *ops;
	int fd; /* -1 when not listening */
	struct cp_op accept_op;
	bool accept_armed, stopping;
	struct cp_timer house;
	struct cp_small_conn *conns;
	unsigned n_conns;
	uint64_t refused_per_source; /* cp_small_srv_admit: the source had per_source_max open */
	uint64_t evicted;            /* cp_small_srv_admit: one closed to make room */
};

/* Set up s (not listening: fd -1). ops is static; l outlives s. */
void cp_small_srv_init(struct cp_small_srv *s, struct cp_loop *l, const struct cp_small_srv_ops *ops);

/* Accept on listen_fd and start the housekeeping timer. Returns 0, or
 * -errno with s->fd back at -1 (the caller still owns listen_fd then and
 * closes it). */
FG_MUST_CHECK int cp_small_srv_start(struct cp_small_srv *s, int listen_fd);

/* Stop accepting (cancel, close the fd), stop the timer re-arming, then
 * on_stop for every connection that is not dead. Idempotent. */
void cp_small_srv_stop(struct cp_small_srv *s);

/* Add c (a new connection) at the head of the list with a deadline of
 * timeout_ns from now. */
void cp_small_srv_link(struct cp_small_srv *s, struct cp_small_conn *c, uint64_t timeout_ns);

/* Lockout defence (16 idle connections would make every scrape fail).
 * Before linking a new connection c on fd: refuse it (returns false; the
 * caller frees c and closes fd; refused_per_source counted) when its source
 * address (an IPv6 one by its first v6_bits) already has per_source_max
 * connections open; otherwise, when
 * max_conns are open, close the oldest connection of a source that holds
 * two or more, else the oldest (ops->on_deadline; the newest always gets
 * in, so idle connections cannot keep a scraper out, and a lone scraper's
 * connection is passed over while a source spread over several has one to
 * give; evicted counted). Records the source in c. Returns true: link c. */
FG_MUST_CHECK bool cp_small_srv_admit(struct cp_small_srv *s, int fd, struct cp_small_conn *c, unsigned max_conns,
				      unsigned per_source_max, unsigned v6_bits);

/* Take c off the list (before the service frees it). */
void cp_small_srv_unlink(struct cp_small_srv *s, struct cp_small_conn *c);

#endif

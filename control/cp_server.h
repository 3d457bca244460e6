/* cp_server.h - the TLS listener.
 *
 * Owns: the listening socket and its accept (always armed while running:
 * admission, cp_admit.h, refuses, evicts the oldest unauthenticated
 * connection, or takes the peer), the table of connections (bounded by
 * [tls] max_connections; each one is a struct cp_conn, cp_conn.h), the
 * lists the engine's events walk (WebSocket subscribers, GETs waiting for a
 * seed), the batch end (flush what several callbacks queued, publish the
 * watched layers), the 100 ms housekeeping tick, and stopping (every
 * connection closed, then drained).
 *
 * Who may call: the loop thread only. */
#ifndef CP_SERVER_H
#define CP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cp_admit.h"
#include "cp_audit.h"
#include "cp_conn.h"
#include "cp_engine.h"
#include "cp_http_parse.h"
#include "cp_loop.h"
#include "cp_tls.h"
#include "fg/config.h"

struct cp_server_stats {
	uint64_t accepted, refused_max, closed, tls_failed, handshake_timeouts, idle_timeouts;
	uint64_t http_requests, http_errors, ws_sessions, ws_msgs_in, ws_frames_in, ws_msgs_out;
	uint64_t slow_consumer_drops, auth_failures, seeds_pushed;
	uint64_t body_timeouts; /* request bodies slower than [tls] body_min_rate (408) */
	uint64_t ws_message_timeouts; /* WebSocket messages slower than [tls] body_min_rate (close 1008) */
	uint64_t canon_refused_role; /* canonical reports from a peer without the coordinator role (cp_epoch_guard.h) */
};

struct cp_server {
	struct cp_loop *loop;
	const struct fg_config *cfg;
	struct cp_tls tls;
	struct cp_engine *engine;
	struct cp_audit *audit; /* the running shadow audit (cp_audit.h), for the parts the server carries */
	struct cp_http_limits hlim;
	int listen_fd;
	uint16_t port;
	struct cp_op accept_op;
	bool accept_armed;
	struct cp_timer house;
	struct cp_conn **table; /* [max_connections]: the open (not dead) connections */
	uint32_t max_conns, n_conns; /* n_conns: allocated, dead ones included (drained at 0) */
	uint32_t next_gen;           /* the last connection's gen (cookies, peer names) */
	struct cp_admit admit;       /* per-source counts of the open connections */
	struct cp_conn *unauth_head, *unauth_tail; /* open and not authenticated, oldest first */
	struct cp_conn *all;
	struct cp_conn *ws_list;   /* WebSocket sessions (subscribers) */
	struct cp_conn *wait_list; /* GETs waiting for a seed */
	struct cp_conn *dirty;     /* connections to flush at the end of the loop batch */
	/* Send-queue chunks of CP_CHUNK_MIN bytes kept for reuse (at most
	 * CP_CHUNK_CACHE), so a busy connection's flush does not pay a
	 * malloc/free pair per batch; the cache is the server's, so an idle
	 * connection still holds no chunk (invariant 5). */
	struct cp_chunk *chunk_free;
	uint32_t n_chunk_free;
	bool watch_dirty;          /* ws_list or wait_list changed: publish the watched layers (batch end) */
	bool stopping;
	uint64_t started_ns;
	struct cp_server_stats st;
	/* Plaintext of one TLS record, read here when a connection has no
	 * buffered input; only what the protocol leaves unconsumed is copied
	 * to the connection's own c->in. scratch_busy: a connection's input is
	 * in it (a nested conn_process uses its own buffer). */
	bool scratch_busy;
	uint8_t scratch[CP_RBUF_LEN];
};

/* Build the TLS context, start accepting on listen_fd (the listener on
 * [tls] listen that main.c claimed, cp_claim.h: bound to port, listening,
 * non-blocking; the server owns it from this call, also on failure) and
 * the housekeeping timer. engine and audit are the daemon's; they must
 * outlive the server. Returns 0 or -errno with a one-line reason in why. */
FG_MUST_CHECK int cp_server_start(struct cp_server *s, struct cp_loop *l, const struct fg_config *cfg,
				  struct cp_engine *engine, struct cp_audit *audit, int listen_fd, uint16_t port,
				  char *why, size_t why_len);
/* Stop accepting and close every connection (WS sessions get 1001). The loop
 * must run a little longer for the completions (cp_server_drained). */
void cp_server_stop(struct cp_server *s);
bool cp_server_drained(const struct cp_server *s);
void cp_server_fini(struct cp_server *s);

/* Engine callbacks (cp_engine_ops with arg = the server). */
void cp_server_on_done(void *arg, uint64_t cookie, const struct cp_engine_result *r);
void cp_server_on_resolved(void *arg, uint16_t layer, uint32_t token_seq, const uint8_t *frame, size_t len);
void cp_server_on_ended(void *arg, uint16_t layer, uint32_t token_seq, enum fg_slot_state st);

#endif

/* cp_server.h - the TLS listener and its connections.
 *
 * Owns: the listening socket, the table of connections (bounded by
 * [tls] max_connections), each connection's lifecycle and I/O:
 *
 *   accept --> TLS handshake --> HTTP (keep-alive, one request at a time)
 *                  |                |  \--GET /flow upgrade--> WS
 *                  v                v                           v
 *               closed <------------+---------------------------+
 *
 *   state       event                          next / action
 *   TLS         handshake done                 HTTP (head deadline kept)
 *   TLS         handshake error / timeout      closed
 *   HTTP        head + body complete           route; respond; stay HTTP
 *   HTTP        101 sent                       WS
 *   HTTP        error answered / Connection: close   closing (flush, close)
 *   WS          close frame exchanged          closing
 *   WS          send queue over the bound on a push   closing 1008
 *   any         idle / head timeout            closing or closed
 *
 * Invariants:
 *  1. A connection is freed only from a completion of its own free op (a NOP
 *     queued once it is dead and has no recv/send in flight and no caller on
 *     the stack), so no callback ever sees a freed connection.
 *  2. At most one receive (multishot or single) and one sendmsg are in
 *     flight per connection; a multishot receive is cancelled when the
 *     connection stops reading (paused, blocked, closing) and re-armed from
 *     its last completion.
 *  3. sq_bytes is the ciphertext queued and not yet acknowledged by send;
 *     reading pauses while it plus the staged plaintext (pout_len) is above
 *     half the bound and resumes when sq_bytes is below a quarter; pushes
 *     (resolved seeds) that would exceed the bound drop the connection
 *     with 1008 instead of queueing (never unbounded).
 *  4. The plaintext input buffer never exceeds in_max (head + body limits, or
 *     the WebSocket read size). It exists only while it holds bytes: in is
 *     NULL iff in_len == 0, outside conn_process, where in may point at the
 *     server's scratch buffer while the protocol consumes a record.
 *  5. An idle connection holds no receive buffer: ring buffers (multishot
 *     mode) are returned before the completion callback returns, ciphertext
 *     OpenSSL did not read goes to the TLS stash (freed once read), and
 *     OpenSSL's record buffers are freed by housekeeping once a connection
 *     saw no traffic for a tick (docs/control-plane.md). In the fallback
 *     mode (no multishot receive) rbuf is the connection's own buffer.
 *
 * Who may call: the loop thread only. */
#ifndef CP_SERVER_H
#define CP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <sys/socket.h>

#include "cp_admit.h"
#include "cp_audit.h"
#include "cp_engine.h"
#include "cp_http_parse.h"
#include "cp_loop.h"
#include "cp_tls.h"
#include "cp_ws_codec.h"
#include "fg/config.h"

#define CP_RBUF_LEN 16384u
#define CP_IOV_MAX 64u
#define CP_PEER_MAX 64u

struct cp_chunk {
	struct cp_chunk *next;
	uint32_t len, off, cap; /* cap: data[] size; TLS records are appended while len < cap */
	uint8_t data[];
};

enum cp_conn_state { CP_CONN_TLS, CP_CONN_HTTP, CP_CONN_WS };

/* HEAD: TLS handshake + request head (handshake_timeout_ms); IDLE: no
 * traffic; LINGER: output sent, waiting for the peer's close; WAIT: a GET
 * waiting for its seed; BODY: a request body slower than [tls]
 * body_min_rate (408); FLUSH: closing, output still queued (re-armed while
 * the peer consumes it, so a paused reader still gets the close). */
enum cp_deadline_kind { CP_DL_NONE, CP_DL_HEAD, CP_DL_IDLE, CP_DL_LINGER, CP_DL_WAIT, CP_DL_BODY, CP_DL_FLUSH };

enum cp_http_phase { CP_H_HEAD, CP_H_BODY, CP_H_WAIT_OUTCOME, CP_H_WAIT_SEED };

enum cp_route { CP_RT_NONE, CP_RT_HEALTHZ, CP_RT_FLOW, CP_RT_SEED_POST, CP_RT_CANON_POST, CP_RT_SEED_GET };

struct cp_http_state {
	enum cp_http_phase phase;
	enum cp_route route;
	size_t head_len;
	uint64_t body_len;
	bool keep_alive;
	bool is_head; /* HEAD: answer without a body */
	bool started; /* bytes of the current head have arrived */
	/* The head parse, resumed on each record (heap, only while a head is
	 * partial; NULL otherwise). */
	struct cp_http_parser *hp;
	uint16_t wait_layer;
	uint32_t wait_token;
	int32_t bound_layer; /* POST /layers/<L>/..: L; else FG_LAYER_UNBOUND */
};

struct cp_ws_state {
	struct cp_ws_rx rx;
	struct cp_flow_query sub;
	bool send_status;
	bool close_sent, close_received;
	uint8_t *out;  /* status frames of one message, sent as one WS message each */
	size_t out_len, out_cap;
	uint64_t msgs_in, frames_in, msgs_out;
};

struct cp_server;

struct cp_conn {
	struct cp_server *srv;
	uint32_t idx, gen;
	int fd;
	enum cp_conn_state state;
	bool dead, closing, lingering, read_paused, proto_blocked, free_queued, in_process, dirty;
	size_t lingered; /* bytes discarded while closing */
	bool recv_armed, send_armed;
	bool recv_multishot; /* the armed receive draws from the loop's buffer ring */
	bool recv_cancel;    /* a cancel of the multishot receive is in flight */
	bool active;         /* traffic since the last housekeeping tick */
	int busy;
	struct cp_op recv_op, send_op, free_op;
	enum cp_deadline_kind dl_kind;
	uint64_t deadline_ns;
	char peer[CP_PEER_MAX];
	struct cp_tls_conn tls;
	const char *role; /* after authentication */
	uint8_t point;    /* Fano point counted for this connection (cp_engine_point_attach), 0 = none */
	uint8_t *in;
	size_t in_len, in_cap, in_max;
	uint8_t *pout; /* plaintext staged for one SSL_write per flush (fewer TLS records) */
	size_t pout_len, pout_cap;
	struct cp_chunk *sq_head, *sq_tail;
	size_t sq_bytes;
	struct iovec iov[CP_IOV_MAX];
	struct msghdr msg;
	struct cp_http_state http;
	struct cp_ws_state ws;
	struct cp_conn *prev, *next;   /* all connections */
	struct cp_conn *lprev, *lnext; /* WS sessions, or GETs waiting for a seed */
	struct cp_conn *dnext;         /* output staged, flush at the end of the batch */
	bool on_list;
	/* Admission (cp_admit.h): the source, whether the peer authenticated
	 * (bearer token or verified client certificate), and its place in the
	 * server's list of unauthenticated connections, oldest first. */
	struct cp_admit_src src;
	bool authed, on_unauth;
	struct cp_conn *uprev, *unext;
	uint8_t *rbuf; /* [CP_RBUF_LEN], fallback receive mode only */
};

struct cp_server_stats {
	uint64_t accepted, refused_max, closed, tls_failed, handshake_timeouts, idle_timeouts;
	uint64_t http_requests, http_errors, ws_sessions, ws_msgs_in, ws_frames_in, ws_msgs_out;
	uint64_t slow_consumer_drops, auth_failures, seeds_pushed;
	uint64_t body_timeouts; /* request bodies slower than [tls] body_min_rate (408) */
	uint64_t canon_refused_role; /* canonical reports from a peer without the coordinator role (cp_epoch_guard.h) */
};

struct cp_server {
	struct cp_loop *loop;
	const struct fg_config *cfg;
	struct cp_tls tls;
	struct cp_engine *engine;
	struct cp_audit *audit; /* the running shadow audit (cp_audit.h), for the parts the server carries */
	struct cp_cluster *cluster; /* [cluster] (control/cluster/cp_cluster.h), NULL when off */
	struct cp_http_limits hlim;
	int listen_fd;
	uint16_t port;
	struct cp_op accept_op;
	bool accept_armed;
	struct cp_timer house;
	struct cp_conn **table; /* [max_connections]: the open (not dead) connections */
	uint32_t max_conns, n_conns; /* n_conns: allocated, dead ones included (drained at 0) */
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

/* ---- connection API for cp_http.c and cp_ws.c ---------------------------- */
static inline uint64_t cp_conn_cookie(const struct cp_conn *c) { return ((uint64_t)c->gen << 32) | c->idx; }
struct cp_conn *cp_conn_by_cookie(struct cp_server *s, uint64_t cookie);

/* Stage plaintext for the next flush (not yet encrypted nor queued). */
FG_MUST_CHECK int cp_conn_put(struct cp_conn *c, const void *buf, size_t len);
/* Encrypt the staged plaintext (one SSL_write: records of up to 16 KiB),
 * move the TLS output to the send queue and start sending. */
void cp_conn_flush(struct cp_conn *c);
/* Flush at the end of the current batch of completions: output queued by
 * several events (statuses from the lanes, pushes of several seeds) leaves
 * in one TLS write and one sendmsg. */
void cp_conn_flush_later(struct cp_conn *c);
/* Whether len more bytes fit under the send-queue bound. */
bool cp_conn_has_room(const struct cp_conn *c, size_t len);
/* Close at once (why is logged at debug). Safe to call twice. */
void cp_conn_close(struct cp_conn *c, const char *why);
/* Stop reading, send close_notify after what is queued, then close
 * (bounded by a linger deadline). */
void cp_conn_close_after_flush(struct cp_conn *c, const char *why);
void cp_conn_set_deadline(struct cp_conn *c, enum cp_deadline_kind k, uint64_t ns_from_now);
/* The peer authenticated as role (static storage or the TLS context's;
 * NULL: none): kept in c->role, and counted once for the Fano point the
 * role serves (cp_engine_point_attach). */
void cp_conn_set_role(struct cp_conn *c, const char *role);
/* The peer authenticated (bearer token or verified client certificate):
 * it leaves the unauthenticated count and list (admission). Idempotent. */
void cp_conn_authenticated(struct cp_conn *c);
/* A request body of len bytes starts: it must arrive within
 * handshake_timeout_ms + len / [tls] body_min_rate (CP_DL_BODY, else 408). */
void cp_conn_body_deadline(struct cp_conn *c, uint64_t len);
/* Re-enable request processing after proto_blocked (GET or outcome wait). */
void cp_conn_unblock(struct cp_conn *c);
void cp_conn_list_add(struct cp_conn **head, struct cp_conn *c);
void cp_conn_list_del(struct cp_conn **head, struct cp_conn *c);

/* cp_http.c: consume plaintext in c->in (HTTP state). */
void cp_http_on_data(struct cp_conn *c);
void cp_http_on_done(struct cp_conn *c, const struct cp_engine_result *r);
void cp_http_on_seed(struct cp_conn *c, enum fg_slot_state st, const uint8_t *frame, size_t len);
/* Free the partial head's parse state (on reset and on the connection's
 * release). */
void cp_http_fini(struct cp_conn *c);
/* Head/wait deadline passed. */
void cp_http_on_timeout(struct cp_conn *c);
/* Answer with a JSON error (and close when !keep). */
void cp_http_error(struct cp_conn *c, int status, const char *reason, bool keep);

/* cp_ws.c */
void cp_ws_start(struct cp_conn *c, const struct cp_flow_query *q);
void cp_ws_on_data(struct cp_conn *c);
void cp_ws_on_done(struct cp_conn *c, const struct cp_engine_result *r);
void cp_ws_push(struct cp_conn *c, uint16_t layer, const uint8_t *frame, size_t len);
void cp_ws_fini(struct cp_conn *c);
/* Send a close frame with code/reason and close after flush. */
void cp_ws_close(struct cp_conn *c, uint16_t code, const char *reason);

#endif

/* cp_conn.h - one TLS connection of the listener (cp_server.h): its
 * socket I/O (recv -> TLS -> plaintext, plaintext -> TLS -> bounded send
 * queue -> sendmsg), its deadlines, its admission bookkeeping and closing,
 * and the protocol it speaks (cp_http.c, then cp_ws.c after an upgrade).
 *
 * A connection has three state machines, each one enum of struct cp_conn.
 *
 * 1. What the bytes are (state, enum cp_conn_state):
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
 *   "closing" and "closed" are the lifecycle's (2.); state keeps the
 *   protocol while the connection closes (a WebSocket still sends its
 *   close frame, leaves the subscriber list).
 *
 * 2. Its lifecycle (life, enum cp_conn_life); it only moves forward:
 *
 *   OPEN --close_after_flush--> CLOSING --queue sent--> LINGERING
 *     |                            |                        |
 *     +-------- cp_conn_close -----+------------------------+
 *                                  v
 *                                 DEAD --nothing in flight, no caller--> FREEING --NOP--> freed
 *
 *   life       event                                     next / action
 *   OPEN       cp_conn_close_after_flush                 CLOSING: flush, close_notify, FLUSH deadline
 *   CLOSING    send queue empty                          LINGERING: shutdown(WR), LINGER deadline
 *   CLOSING    input                                     CLOSING: discarded, counted in lingered
 *   LINGERING  input beyond CP_LINGER_BYTES, peer EOF    DEAD
 *   OPEN..LING cp_conn_close (error, timeout, eviction)  DEAD: shutdown(RDWR), cancel recv/send,
 *                                                        table slot and admission given back
 *   DEAD       no recv/send in flight and busy == 0      FREEING: a NOP queued (invariant 1)
 *   FREEING    the NOP completes                         freed
 *
 * 3. Its receive (rx, enum cp_conn_rx; invariant 2):
 *
 *   rx         event                                     next
 *   NONE       wants input, the loop's buffer ring on    MULTI: multishot recv armed
 *   NONE       wants input, no buffer ring               ONE: recv into rbuf armed
 *   ONE        its completion                            NONE (re-armed if it still wants input)
 *   MULTI      a completion with IORING_CQE_F_MORE       MULTI
 *   MULTI      stops wanting input (paused, blocked,     CANCEL: a cancel queued
 *              closing before the linger)
 *   MULTI      the last completion (no F_MORE)           NONE (re-armed if it wants input)
 *   CANCEL     a completion with F_MORE                  CANCEL (its data still taken)
 *   CANCEL     the last completion                       NONE
 *
 *   A connection wants input while it is OPEN or LINGERING, its reading is
 *   not paused (invariant 3) and its protocol is not blocked waiting for an
 *   outcome or a seed (a short outcome wait keeps reading into the TLS
 *   stash).
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
 * Who may call: the loop thread only; the protocol files (cp_http.c,
 * cp_ws.c) and the server (cp_server.c). */
#ifndef CP_CONN_H
#define CP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/socket.h>

#include "cp_admit.h"
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

/* The protocol (state machine 1 above). */
enum cp_conn_state { CP_CONN_TLS, CP_CONN_HTTP, CP_CONN_WS };
/* The lifecycle (state machine 2); ordered: it only moves forward. */
enum cp_conn_life { CP_LIFE_OPEN, CP_LIFE_CLOSING, CP_LIFE_LINGERING, CP_LIFE_DEAD, CP_LIFE_FREEING };
/* The receive in flight (state machine 3). */
enum cp_conn_rx { CP_RX_NONE, CP_RX_ONE, CP_RX_MULTI, CP_RX_CANCEL };

/* HEAD: TLS handshake + request head (handshake_timeout_ms); IDLE: no
 * traffic; LINGER: output sent, waiting for the peer's close; WAIT: a GET
 * waiting for its seed; BODY: a request body slower than [tls]
 * body_min_rate (408); FLUSH: closing, output still queued (re-armed while
 * the peer consumes it, so a paused reader still gets the close). */
enum cp_deadline_kind {
	CP_DL_NONE,
	CP_DL_HEAD,
	CP_DL_IDLE,
	CP_DL_LINGER,
	CP_DL_WAIT,
	CP_DL_BODY,
	CP_DL_FLUSH,
	CP_DL_MESSAGE, /* a WebSocket message unfinished for too long (cp_ws.c) */
};

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
	uint64_t msg_t0; /* when the unfinished message's first bytes were read; 0: none */
};

struct cp_server;

struct cp_conn {
	struct cp_server *srv;
	uint32_t idx, gen;
	int fd;
	enum cp_conn_state state;
	enum cp_conn_life life;
	enum cp_conn_rx rx;
	size_t lingered; /* bytes discarded while closing */
	/* Facts beside the three states, each independent of the others: */
	bool read_paused;   /* the send queue is over half its bound (invariant 3) */
	bool proto_blocked; /* the protocol waits for an outcome or a seed (cp_conn_unblock) */
	bool send_armed;    /* a sendmsg is in flight */
	bool in_process;    /* conn_process is on the stack (re-entrancy) */
	bool dirty;         /* on the server's flush list (cp_conn_flush_later) */
	bool active;        /* traffic since the last housekeeping tick */
	int busy;           /* callers on the stack holding c (invariant 1) */
	struct cp_op recv_op, send_op, free_op;
	enum cp_deadline_kind dl_kind;
	uint64_t deadline_ns;
	char peer[CP_PEER_MAX];
	struct cp_tls_conn tls;
	const char *role; /* after authentication */
	uint8_t point;    /* Fano point counted for this connection (cp_engine_point_attach), 0 = none */
	uint8_t lines;    /* with role: the lines it speaks for (cp_epoch_guard_role_lines) */
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

/* Closed (DEAD or FREEING): nothing more is read, written or answered. */
static inline bool cp_conn_is_dead(const struct cp_conn *c) { return c->life >= CP_LIFE_DEAD; }
/* Closing or closed: no more requests are taken. */
static inline bool cp_conn_is_closing(const struct cp_conn *c) { return c->life >= CP_LIFE_CLOSING; }

/* ---- the connection, for the server ------------------------------------ */
/* A connection for the accepted fd (owned from this call, closed on
 * failure) from src (host:port for the logs): in the table, on the
 * unauthenticated list, TLS handshake and head deadline started. A full
 * table or no memory closes fd and counts refused_max. */
void cp_conn_new(struct cp_server *s, int fd, const struct cp_admit_src *src, const char *host, uint16_t port);
/* Housekeeping of one connection at now_ns (the server's 100 ms tick):
 * frees it when dead and idle, gives idle buffers back (invariant 5), and
 * acts on a passed deadline (timeouts close it or answer 408). */
void cp_conn_tick(struct cp_conn *c, uint64_t now_ns);
/* After a call into the connection's protocol made with c->busy held:
 * queue its release when it is dead and idle (invariant 1). */
void cp_conn_maybe_free(struct cp_conn *c);

/* ---- connection API for cp_http.c and cp_ws.c ---------------------------- */
static inline uint64_t cp_conn_cookie(const struct cp_conn *c) { return ((uint64_t)c->gen << 32) | c->idx; }
/* The peer as the engine names a sender (cp_engine_submit_from): family
 * and address as admission took them (an IPv4-mapped peer as IPv4), and
 * the lines its role speaks for (every line before or without a role). */
static inline struct fg_bm_src cp_conn_source(const struct cp_conn *c)
{
	struct fg_bm_src s;
	memset(&s, 0, sizeof(s));
	s.family = c->src.family;
	memcpy(s.addr, c->src.addr, sizeof(s.addr));
	s.lines = c->role ? c->lines : (uint8_t)FG_FANO_FULL_MASK;
	return s;
}
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
/* The unfinished message's deadline (CP_DL_MESSAGE) passed. */
void cp_ws_on_message_timeout(struct cp_conn *c);

#endif

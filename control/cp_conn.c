/* cp_conn.c - one TLS connection's socket I/O: recv -> TLS -> plaintext,
 * plaintext -> TLS -> bounded send queue -> sendmsg, deadlines, its
 * admission bookkeeping and closing (see cp_conn.h for the state machine
 * and invariants). The listener, the accept and the housekeeping tick are
 * cp_server.c's. Loop thread only. */
#include "cp_conn.h"
#include "cp_server.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cp_epoch_guard.h"
#include "cp_log.h"

#define CP_LINGER_NS (2ull * 1000 * 1000 * 1000)
#define CP_LINGER_BYTES (4u << 20)
#define CP_IN_INITIAL 4096u
/* Ciphertext a connection may stash unread while a request waits for its
 * outcome from an lcore (a few microseconds) before its receive stops. */
#define CP_OUTCOME_STASH_MAX (64u << 10)
/* A send-queue chunk holds one whole TLS record (16 KiB of plaintext, its
 * header, tag and padding): a seed's record (6 KiB at hidden 1536) then
 * comes from the server's cache too, not from malloc, whose heap trims and
 * regrows cost page faults on the seed path. */
#define CP_CHUNK_MIN (17u << 10)
#define CP_CHUNK_CACHE 16u

static void conn_recv_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags);
static void conn_linger(struct cp_conn *c);
static void conn_send_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags);
static void conn_free_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags);
static void conn_recv_update(struct cp_conn *c);
static void conn_process(struct cp_conn *c);
static void chunk_put(struct cp_server *s, struct cp_chunk *k);

/* ---- lists ---------------------------------------------------------------- */
void cp_conn_list_add(struct cp_conn **head, struct cp_conn *c)
{
	if (c->on_list)
		return;
	c->lprev = NULL;
	c->lnext = *head;
	if (*head)
		(*head)->lprev = c;
	*head = c;
	c->on_list = true;
	c->srv->watch_dirty = true; /* ws_list and wait_list are the only lists */
}

void cp_conn_list_del(struct cp_conn **head, struct cp_conn *c)
{
	if (!c->on_list)
		return;
	if (c->lprev)
		c->lprev->lnext = c->lnext;
	else
		*head = c->lnext;
	if (c->lnext)
		c->lnext->lprev = c->lprev;
	c->lprev = c->lnext = NULL;
	c->on_list = false;
	c->srv->watch_dirty = true;
}

struct cp_conn *cp_conn_by_cookie(struct cp_server *s, uint64_t cookie)
{
	uint32_t idx = (uint32_t)cookie, gen = (uint32_t)(cookie >> 32);
	if (idx >= s->max_conns)
		return NULL;
	struct cp_conn *c = s->table[idx];
	return c && c->gen == gen && !cp_conn_is_dead(c) ? c : NULL;
}

void cp_conn_set_deadline(struct cp_conn *c, enum cp_deadline_kind k, uint64_t ns_from_now)
{
	c->dl_kind = k;
	c->deadline_ns = k == CP_DL_NONE ? 0 : cp_now_ns() + ns_from_now;
}

/* ---- admission -------------------------------------------------------------- */
static void unauth_del(struct cp_server *s, struct cp_conn *c)
{
	if (!c->on_unauth)
		return;
	if (c->uprev)
		c->uprev->unext = c->unext;
	else
		s->unauth_head = c->unext;
	if (c->unext)
		c->unext->uprev = c->uprev;
	else
		s->unauth_tail = c->uprev;
	c->uprev = c->unext = NULL;
	c->on_unauth = false;
}

void cp_conn_set_role(struct cp_conn *c, const char *role)
{
	c->role = role;
	c->lines = cp_epoch_guard_role_lines(role);
	struct cp_server *s = c->srv;
	if (!c->point && s->engine)
		c->point = (uint8_t)cp_engine_point_attach(s->engine, role, c->peer);
}

/* c is closing: its point loses a peer (not marked down while the server
 * stops). */
static void conn_point_detach(struct cp_conn *c)
{
	struct cp_server *s = c->srv;
	unsigned p = c->point;
	c->point = 0;
	if (p && s->engine)
		cp_engine_point_detach(s->engine, p, s->stopping, c->peer);
}

void cp_conn_authenticated(struct cp_conn *c)
{
	if (c->authed || cp_conn_is_dead(c))
		return;
	c->authed = true;
	cp_admit_authenticate(&c->srv->admit, &c->src);
	unauth_del(c->srv, c);
}

/* A closing connection gives its table index and its admission count back
 * at once (the struct is freed later, invariant 1), so an eviction makes
 * room for the newcomer that caused it. */
static void conn_unadmit(struct cp_conn *c)
{
	struct cp_server *s = c->srv;
	if (s->table[c->idx] != c)
		return;
	s->table[c->idx] = NULL;
	cp_admit_leave(&s->admit, &c->src, c->authed);
	unauth_del(s, c);
}

void cp_conn_body_deadline(struct cp_conn *c, uint64_t len)
{
	const struct fg_config *cfg = c->srv->cfg;
	uint64_t rate = cfg->body_min_rate ? cfg->body_min_rate : 1;
	/* len <= ws_max_message (64 MiB at most): no overflow in ns. */
	uint64_t ns = (uint64_t)cfg->handshake_timeout_ms * 1000000ull + len * 1000000000ull / rate;
	cp_conn_set_deadline(c, CP_DL_BODY, ns);
}

/* ---- freeing -------------------------------------------------------------- */
void cp_conn_maybe_free(struct cp_conn *c)
{
	if (c->life != CP_LIFE_DEAD || c->rx != CP_RX_NONE || c->send_armed || c->busy)
		return;
	/* Invariant 1: free from a completion of our own, never from a caller's
	 * stack (a push loop or an engine callback may still hold c). */
	c->free_op.fn = conn_free_done;
	struct io_uring_sqe *sqe = cp_loop_sqe(c->srv->loop, &c->free_op);
	if (!sqe) {
		cp_err("conn %s: cannot queue its release; retrying from housekeeping", c->peer);
		return;
	}
	io_uring_prep_nop(sqe);
	c->life = CP_LIFE_FREEING;
}

static void conn_free_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	(void)l; (void)res; (void)flags;
	struct cp_conn *c = cp_container_of(op, struct cp_conn, free_op);
	struct cp_server *s = c->srv;
	if (c->dirty) /* rare: unlink from the batch's flush list */
		for (struct cp_conn **pp = &s->dirty; *pp; pp = &(*pp)->dnext)
			if (*pp == c) {
				*pp = c->dnext;
				break;
			}
	if (c->fd >= 0)
		close(c->fd);
	cp_ws_fini(c);
	cp_http_fini(c);
	cp_tls_conn_fini(&c->tls);
	for (struct cp_chunk *k = c->sq_head, *n; k; k = n) {
		n = k->next;
		chunk_put(s, k);
	}
	free(c->in);
	free(c->pout);
	free(c->rbuf);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->all = c->next;
	if (c->next)
		c->next->prev = c->prev;
	if (s->table[c->idx] == c) /* cp_conn_close gave it back already */
		s->table[c->idx] = NULL;
	s->n_conns--;
	s->st.closed++;
	free(c);
	/* A refused accept may be waiting for room. */
	if (!s->accept_armed && !s->stopping && s->listen_fd >= 0) {
		if (cp_loop_accept(s->loop, &s->accept_op, s->listen_fd) == 0)
			s->accept_armed = true;
	}
}

void cp_conn_close(struct cp_conn *c, const char *why)
{
	if (cp_conn_is_dead(c))
		return;
	c->life = CP_LIFE_DEAD;
	cp_debug("conn %s: closed: %s", c->peer, why);
	conn_unadmit(c);
	conn_point_detach(c);
	struct cp_server *s = c->srv;
	if (c->state == CP_CONN_WS)
		cp_conn_list_del(&s->ws_list, c);
	else
		cp_conn_list_del(&s->wait_list, c);
	/* shutdown() completes a pending recv with 0 and fails a pending send;
	 * the explicit cancel covers sockets where it would not. */
	shutdown(c->fd, SHUT_RDWR);
	if (c->rx != CP_RX_NONE && cp_loop_cancel(s->loop, &cp_op_ignore, &c->recv_op) < 0)
		cp_err("conn %s: cannot cancel its recv", c->peer);
	if (c->send_armed && cp_loop_cancel(s->loop, &cp_op_ignore, &c->send_op) < 0)
		cp_err("conn %s: cannot cancel its send", c->peer);
	cp_conn_maybe_free(c);
}

/* Everything we had to say is on the wire: half-close and keep reading
 * (discarding) until the peer closes, the linger deadline passes, or
 * CP_LINGER_BYTES arrived. Closing with unread input would make the kernel
 * send a RST that can destroy our last answer before the peer reads it (a
 * client still sending a refused oversize body). */
static void conn_linger(struct cp_conn *c)
{
	if (c->life >= CP_LIFE_LINGERING)
		return;
	c->life = CP_LIFE_LINGERING;
	shutdown(c->fd, SHUT_WR);
	cp_conn_set_deadline(c, CP_DL_LINGER, CP_LINGER_NS);
	conn_recv_update(c);
}

void cp_conn_close_after_flush(struct cp_conn *c, const char *why)
{
	if (cp_conn_is_closing(c))
		return;
	c->life = CP_LIFE_CLOSING;
	cp_debug("conn %s: closing: %s", c->peer, why);
	cp_conn_flush(c); /* staged plaintext goes before close_notify */
	cp_tls_close_notify(&c->tls);
	cp_conn_flush(c);
	if (cp_conn_is_dead(c))
		return;
	/* The linger's 2 s start once our last bytes (a 1008 close frame
	 * behind a slow consumer's full queue) are on the wire: until then the
	 * connection lives while the peer consumes, up to idle_timeout_ms
	 * without progress (a consumer that reads again after 2 s still gets
	 * the close). */
	cp_conn_set_deadline(c, CP_DL_FLUSH, (uint64_t)c->srv->cfg->idle_timeout_ms * 1000000ull);
	if (!c->sq_head && !c->send_armed)
		conn_linger(c);
}

/* ---- sending -------------------------------------------------------------- */
void cp_conn_flush_later(struct cp_conn *c)
{
	if (c->dirty || cp_conn_is_dead(c))
		return;
	c->dirty = true;
	c->dnext = c->srv->dirty;
	c->srv->dirty = c;
}

bool cp_conn_has_room(const struct cp_conn *c, size_t len)
{
	return c->sq_bytes + c->pout_len + len <= c->srv->cfg->send_queue_max;
}

/* A send-queue chunk of at least cap bytes: from the server's cache when
 * cap fits CP_CHUNK_MIN, else the heap. NULL when out of memory. */
static struct cp_chunk *chunk_get(struct cp_server *s, size_t cap)
{
	if (cap <= CP_CHUNK_MIN && s->chunk_free) {
		struct cp_chunk *k = s->chunk_free;
		s->chunk_free = k->next;
		s->n_chunk_free--;
		return k;
	}
	if (cap < CP_CHUNK_MIN)
		cap = CP_CHUNK_MIN;
	if (cap > UINT32_MAX)
		return NULL;
	struct cp_chunk *k = malloc(sizeof(*k) + cap);
	if (k)
		k->cap = (uint32_t)cap;
	return k;
}

/* Give a sent (or abandoned) chunk back: to the cache while it has room. */
static void chunk_put(struct cp_server *s, struct cp_chunk *k)
{
	if (k->cap == CP_CHUNK_MIN && s->n_chunk_free < CP_CHUNK_CACHE) {
		k->next = s->chunk_free;
		s->chunk_free = k;
		s->n_chunk_free++;
		return;
	}
	free(k);
}

/* The TLS output sink (cp_tls_set_sink): each record OpenSSL writes goes
 * straight to the send queue, appended to the tail chunk while it has room
 * (a chunk is never reallocated, so a sendmsg in flight over its first
 * bytes stays valid), else in a new chunk. Chunks are freed once sent: an
 * idle connection holds none. */
static int conn_sink(void *arg, const uint8_t *p, size_t n)
{
	struct cp_conn *c = arg;
	struct cp_chunk *k = c->sq_tail;
	if (!k || k->cap - k->len < n) {
		k = chunk_get(c->srv, n);
		if (!k)
			return -ENOMEM;
		k->next = NULL;
		k->off = k->len = 0;
		if (c->sq_tail)
			c->sq_tail->next = k;
		else
			c->sq_head = k;
		c->sq_tail = k;
	}
	memcpy(k->data + k->len, p, n);
	k->len += (uint32_t)n;
	c->sq_bytes += n;
	return 0;
}

int cp_conn_put(struct cp_conn *c, const void *buf, size_t len)
{
	if (cp_conn_is_dead(c))
		return -EPIPE;
	if (c->pout_cap - c->pout_len < len) {
		size_t cap = c->pout_cap ? c->pout_cap : 4096;
		while (cap - c->pout_len < len)
			cap *= 2;
		uint8_t *p = realloc(c->pout, cap);
		if (!p)
			return -ENOMEM;
		c->pout = p;
		c->pout_cap = cap;
	}
	memcpy(c->pout + c->pout_len, buf, len);
	c->pout_len += len;
	return 0;
}

static void conn_kick_send(struct cp_conn *c)
{
	if (c->send_armed || cp_conn_is_dead(c) || !c->sq_head)
		return;
	unsigned n = 0;
	for (struct cp_chunk *k = c->sq_head; k && n < CP_IOV_MAX; k = k->next, n++) {
		c->iov[n].iov_base = k->data + k->off;
		c->iov[n].iov_len = k->len - k->off;
	}
	memset(&c->msg, 0, sizeof(c->msg));
	c->msg.msg_iov = c->iov;
	c->msg.msg_iovlen = n;
	c->send_op.fn = conn_send_done;
	struct io_uring_sqe *sqe = cp_loop_sqe(c->srv->loop, &c->send_op);
	if (!sqe) {
		cp_conn_close(c, "send: ring full");
		return;
	}
	io_uring_prep_sendmsg(sqe, c->fd, &c->msg, MSG_NOSIGNAL);
	c->send_armed = true;
}

void cp_conn_flush(struct cp_conn *c)
{
	if (cp_conn_is_dead(c))
		return;
	if (c->pout_len) {
		int r = cp_tls_write(&c->tls, c->pout, c->pout_len);
		c->pout_len = 0;
		if (r < 0) {
			cp_conn_close(c, "tls write failed");
			return;
		}
		/* Do not keep a large staging buffer around for an idle peer. */
		if (c->pout_cap > 65536) {
			free(c->pout);
			c->pout = NULL;
			c->pout_cap = 0;
		}
	}
	conn_kick_send(c);
}

static void conn_send_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	(void)l; (void)flags;
	struct cp_conn *c = cp_container_of(op, struct cp_conn, send_op);
	c->send_armed = false;
	if (cp_conn_is_dead(c)) {
		cp_conn_maybe_free(c);
		return;
	}
	if (res < 0) {
		cp_conn_close(c, res == -EPIPE || res == -ECONNRESET ? "peer reset" : "send failed");
		return;
	}
	size_t done = (size_t)res;
	/* The peer is consuming our output: that is traffic, not idleness (a
	 * paused sender that reads its answers slowly must not be cut). */
	if (done && (c->dl_kind == CP_DL_IDLE || c->dl_kind == CP_DL_FLUSH))
		cp_conn_set_deadline(c, c->dl_kind, (uint64_t)c->srv->cfg->idle_timeout_ms * 1000000ull);
	while (done && c->sq_head) {
		struct cp_chunk *k = c->sq_head;
		size_t left = k->len - k->off;
		if (done < left) {
			k->off += (uint32_t)done;
			c->sq_bytes -= done;
			break;
		}
		done -= left;
		c->sq_bytes -= left;
		c->sq_head = k->next;
		if (!c->sq_head)
			c->sq_tail = NULL;
		chunk_put(c->srv, k);
	}
	if (c->sq_head) {
		conn_kick_send(c);
	} else if (cp_conn_is_closing(c)) {
		conn_linger(c);
		return;
	}
	/* Invariant 3: resume reading once the queue drained below a quarter. */
	if (c->read_paused && c->sq_bytes < c->srv->cfg->send_queue_max / 4) {
		c->read_paused = false;
		c->busy++;
		conn_process(c);
		c->busy--;
		conn_recv_update(c);
		cp_conn_maybe_free(c);
	}
}

/* ---- receiving ------------------------------------------------------------- */
/* A request waiting for its outcome (dataplane mode: an lcore answers in
 * microseconds) keeps the receive armed: cancelling and re-arming it cost
 * an SQE and two completions per request, each of which also ended the
 * engine's answer spin. What arrives meanwhile stays in the TLS stash,
 * up to CP_OUTCOME_STASH_MAX; a long wait (GET of a seed) stops reading. */
static bool conn_blocked_reading(const struct cp_conn *c)
{
	return c->proto_blocked &&
	       !(c->state == CP_CONN_HTTP && c->http.phase == CP_H_WAIT_OUTCOME &&
		 cp_tls_in_pending(&c->tls) < CP_OUTCOME_STASH_MAX);
}

static bool conn_wants_recv(const struct cp_conn *c)
{
	return (c->life == CP_LIFE_OPEN || c->life == CP_LIFE_LINGERING) && !c->read_paused &&
	       !conn_blocked_reading(c);
}

/* Invariant 2: arm a receive when the connection wants input and none is in
 * flight; cancel a multishot one when it no longer does (its completions
 * until then are still taken: fed to TLS, or discarded while closing). */
static void conn_recv_update(struct cp_conn *c)
{
	struct cp_loop *l = c->srv->loop;
	if (cp_conn_is_dead(c))
		return;
	if (!conn_wants_recv(c)) {
		if (c->rx == CP_RX_MULTI) {
			if (cp_loop_cancel(l, &cp_op_ignore, &c->recv_op) < 0) {
				cp_conn_close(c, "recv: ring full");
				return;
			}
			c->rx = CP_RX_CANCEL;
		}
		return;
	}
	if (c->rx != CP_RX_NONE)
		return; /* one in flight, or a cancelled one: its last completion re-arms */
	c->recv_op.fn = conn_recv_done;
	int r;
	enum cp_conn_rx rx;
	if (l->rbuf_ok) {
		r = cp_loop_recv_multishot(l, &c->recv_op, c->fd);
		rx = CP_RX_MULTI;
	} else {
		if (!c->rbuf && !(c->rbuf = malloc(CP_RBUF_LEN))) {
			cp_conn_close(c, "recv: out of memory");
			return;
		}
		r = cp_loop_recv(l, &c->recv_op, c->fd, c->rbuf, CP_RBUF_LEN);
		rx = CP_RX_ONE;
	}
	if (r < 0) {
		cp_conn_close(c, "recv: ring full");
		return;
	}
	c->rx = rx;
}

void cp_conn_unblock(struct cp_conn *c)
{
	if (!c->proto_blocked || cp_conn_is_dead(c))
		return;
	c->proto_blocked = false;
	/* Called from inside conn_process (local engine: synchronous outcome):
	 * the running loop picks the next request up by itself. */
	if (c->in_process)
		return;
	c->busy++;
	/* Pipelined bytes already decrypted go first. */
	if (c->in_len) {
		c->in_process = true;
		if (c->state == CP_CONN_WS)
			cp_ws_on_data(c);
		else
			cp_http_on_data(c);
		c->in_process = false;
		if (!c->in_len) {
			free(c->in);
			c->in = NULL;
			c->in_cap = 0;
		}
	}
	conn_process(c);
	c->busy--;
	conn_recv_update(c);
	cp_conn_maybe_free(c);
}

static int conn_in_reserve(struct cp_conn *c)
{
	if (c->in_cap - c->in_len >= 4096 || c->in_cap >= c->in_max)
		return c->in_cap > c->in_len ? 0 : -ENOSPC;
	size_t cap = c->in_cap ? c->in_cap * 2 : CP_IN_INITIAL;
	if (cap > c->in_max)
		cap = c->in_max;
	uint8_t *p = realloc(c->in, cap);
	if (!p)
		return -ENOMEM;
	c->in = p;
	c->in_cap = cap;
	return 0;
}

/* After the protocol consumed a record from the server's scratch buffer:
 * keep what it left (a partial head, a POST body, bytes behind a blocked
 * request) in a buffer of the connection's own, sized to it (invariant 4). */
static int conn_in_keep(struct cp_conn *c)
{
	size_t n = c->in_len;
	c->in = NULL;
	c->in_cap = 0;
	c->in_len = 0;
	if (!n)
		return 0;
	size_t cap = n < CP_IN_INITIAL ? CP_IN_INITIAL : n;
	if (cap > c->in_max && n <= c->in_max)
		cap = c->in_max;
	uint8_t *p = malloc(cap);
	if (!p)
		return -ENOMEM;
	memcpy(p, c->srv->scratch, n);
	c->in = p;
	c->in_cap = cap;
	c->in_len = n;
	return 0;
}

/* Pull plaintext out of TLS and hand it to the protocol until TLS wants more
 * ciphertext, the protocol blocks, or the send queue is over half full. */
static void conn_process(struct cp_conn *c)
{
	struct cp_server *s = c->srv;
	if (c->in_process)
		return;
	c->in_process = true;
	while (!cp_conn_is_closing(c)) {
		if (c->proto_blocked)
			break;
		if (c->sq_bytes + c->pout_len > s->cfg->send_queue_max / 2) {
			c->read_paused = true; /* invariant 3 */
			break;
		}
		/* Nothing buffered: decrypt into the scratch buffer, so a
		 * connection whose records are consumed whole (WebSocket frames,
		 * a head in one record) never holds an input buffer. */
		bool scratch = c->in_len == 0 && !s->scratch_busy;
		uint8_t *dst;
		size_t room;
		if (scratch) {
			free(c->in);
			c->in = NULL;
			c->in_cap = 0;
			dst = s->scratch;
			room = c->in_max < sizeof(s->scratch) ? c->in_max : sizeof(s->scratch);
		} else if (conn_in_reserve(c) < 0) {
			/* The protocol left a full buffer unconsumed: its limits
			 * should have refused earlier; refuse now. */
			if (c->state == CP_CONN_WS)
				cp_ws_close(c, CP_WS_CLOSE_TOO_BIG, "input buffer full");
			else
				cp_http_error(c, 431, "headers_too_large", false);
			break;
		} else {
			dst = c->in + c->in_len;
			room = c->in_cap - c->in_len;
		}
		ssize_t n = cp_tls_read(&s->tls, &c->tls, dst, room);
		if (n == -EPIPE) {
			cp_conn_close_after_flush(c, "peer close_notify");
			break;
		}
		if (n < 0) {
			if (!c->tls.handshake_done) {
				s->st.tls_failed++;
				cp_info("conn %s: TLS handshake refused", c->peer);
			}
			cp_conn_flush(c); /* the alert */
			cp_conn_close_after_flush(c, "tls error");
			break;
		}
		if (c->state == CP_CONN_TLS && c->tls.handshake_done) {
			c->state = CP_CONN_HTTP;
			if (c->tls.peer_verified) /* a client certificate the CA signed */
				cp_conn_authenticated(c);
			cp_debug("conn %s: TLS %s %s%s%s%s", c->peer, SSL_get_version(c->tls.ssl),
				 SSL_get_cipher_name(c->tls.ssl), c->tls.resumed ? " resumed" : "",
				 c->tls.peer_verified ? " client-cert CN=" : "",
				 c->tls.peer_verified ? c->tls.cn : "");
		}
		if (n == 0)
			break;
		if (scratch) {
			c->in = s->scratch;
			c->in_cap = room;
			c->in_len = (size_t)n;
			s->scratch_busy = true;
		} else {
			c->in_len += (size_t)n;
		}
		if (c->state == CP_CONN_WS)
			cp_ws_on_data(c);
		else
			cp_http_on_data(c);
		if (scratch) {
			s->scratch_busy = false;
			if (conn_in_keep(c) < 0) {
				cp_conn_close(c, "input: out of memory");
				break;
			}
		} else if (!c->in_len) {
			free(c->in);
			c->in = NULL;
			c->in_cap = 0;
		}
	}
	c->in_process = false;
	/* The answers go out at the end of the loop's batch (server_batch_end),
	 * not now: every record of every receive completion reaped in this
	 * batch is answered by one SSL_write (one TLS record) and one sendmsg
	 * per connection, instead of one of each per receive completion (with
	 * a peer that writes one WebSocket frame per segment, one per
	 * message). */
	cp_conn_flush_later(c);
}

static void conn_recv_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	struct cp_conn *c = cp_container_of(op, struct cp_conn, recv_op);
	uint16_t bid = 0;
	/* ONE, MULTI or CANCEL: this completion's receive */
	bool multishot = c->rx == CP_RX_MULTI || c->rx == CP_RX_CANCEL;
	uint8_t *data = multishot ? cp_loop_rbuf_of(l, flags, &bid) : c->rbuf;
	bool ring_buf = multishot && data;
	if (!(flags & IORING_CQE_F_MORE))
		c->rx = CP_RX_NONE;
	if (cp_conn_is_dead(c)) {
		if (ring_buf)
			cp_loop_rbuf_put(l, bid);
		cp_conn_maybe_free(c);
		return;
	}
	if (res <= 0 || !data) {
		if (ring_buf)
			cp_loop_rbuf_put(l, bid);
		if (res == -ENOBUFS && multishot) {
			l->rbuf_empty++; /* every ring buffer was in use: re-arm */
		} else if (res == -ECANCELED) {
			/* our cancel (the connection stopped reading) */
		} else if (res == -EINVAL && multishot && l->rbuf_ok) {
			cp_loop_rbuf_disable(l, "the kernel refuses multishot receive (6.0+)");
			cp_warn("tls: receive mode: per-connection recv (%s)", l->rbuf_why);
		} else {
			cp_conn_close(c, res == 0 ? "peer closed" : res > 0 ? "recv: no buffer" : "recv failed");
			return;
		}
		conn_recv_update(c);
		return;
	}
	c->active = true;
	if (cp_conn_is_closing(c)) {
		/* Input after we decided to close is discarded (bounded). */
		if (ring_buf)
			cp_loop_rbuf_put(l, bid);
		c->lingered += (size_t)res;
		if (c->life == CP_LIFE_LINGERING && c->lingered > CP_LINGER_BYTES)
			cp_conn_close(c, "linger limit");
		else
			conn_recv_update(c); /* conn_linger re-arms once the output is out */
		return;
	}
	/* Zero copy: OpenSSL reads the ring buffer in place; what it did not
	 * read when processing stopped early (paused, blocked) is stashed, and
	 * the ring buffer goes back at once (invariant 5). */
	cp_tls_feed_window(&c->tls, data, (size_t)res);
	c->busy++;
	conn_process(c);
	c->busy--;
	int fr = cp_tls_feed_end(&c->tls);
	if (ring_buf)
		cp_loop_rbuf_put(l, bid);
	if (fr < 0)
		cp_conn_close(c, "out of memory");
	conn_recv_update(c);
	cp_conn_maybe_free(c);
}

/* ---- a new connection -------------------------------------------------------- */
void cp_conn_new(struct cp_server *s, int fd, const struct cp_admit_src *src, const char *host, uint16_t port)
{
	uint32_t idx = 0;
	while (idx < s->max_conns && s->table[idx])
		idx++;
	struct cp_conn *c = idx < s->max_conns ? calloc(1, sizeof(*c)) : NULL;
	if (!c) {
		close(fd);
		s->st.refused_max++;
		return;
	}
	c->srv = s;
	c->idx = idx;
	c->gen = ++s->next_gen;
	c->fd = fd;
	c->state = CP_CONN_TLS;
	c->in_max = (size_t)s->hlim.max_header_bytes + s->hlim.max_request_line + s->hlim.max_body;
	c->src = *src;
	snprintf(c->peer, sizeof(c->peer), "%s:%u#%u", host, port, c->gen);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (cp_tls_conn_init(&c->tls, &s->tls) < 0) {
		close(fd);
		free(c);
		return;
	}
	cp_tls_set_sink(&c->tls, conn_sink, c);
	if (cp_admit_enter(&s->admit, src) < 0) { /* cannot happen within max_connections */
		cp_tls_conn_fini(&c->tls);
		close(fd);
		free(c);
		s->st.refused_max++;
		return;
	}
	s->table[idx] = c;
	s->n_conns++;
	c->next = s->all;
	if (s->all)
		s->all->prev = c;
	s->all = c;
	/* Newest at the tail of the unauthenticated list (eviction takes the head). */
	c->uprev = s->unauth_tail;
	if (s->unauth_tail)
		s->unauth_tail->unext = c;
	else
		s->unauth_head = c;
	s->unauth_tail = c;
	c->on_unauth = true;
	s->st.accepted++;
	/* Slowloris defence: the TLS handshake and the first request head must
	 * both complete within handshake_timeout_ms of the accept. */
	cp_conn_set_deadline(c, CP_DL_HEAD, (uint64_t)s->cfg->handshake_timeout_ms * 1000000ull);
	cp_debug("conn %s: accepted (%u open)", c->peer, s->n_conns);
	conn_recv_update(c);
}

/* ---- housekeeping ------------------------------------------------------------ */
/* A connection that saw no input for a whole tick (100 ms) gives its idle
 * buffers back: OpenSSL's record buffers (~34 KiB once used) and an empty
 * plaintext staging buffer. Invariant 5; a busy connection keeps them, so
 * no record pays for a malloc/free pair. */
static void conn_trim(struct cp_conn *c)
{
	if (c->in_process)
		return;
	(void)cp_tls_conn_trim(&c->tls);
	if (!c->pout_len && c->pout) {
		free(c->pout);
		c->pout = NULL;
		c->pout_cap = 0;
	}
}

void cp_conn_tick(struct cp_conn *c, uint64_t now)
{
	struct cp_server *s = c->srv;
	if (cp_conn_is_dead(c)) {
		cp_conn_maybe_free(c);
		return;
	}
	if (!c->active)
		conn_trim(c);
	c->active = false;
	if (!c->deadline_ns || now < c->deadline_ns)
		return;
	enum cp_deadline_kind k = c->dl_kind;
	cp_conn_set_deadline(c, CP_DL_NONE, 0);
	switch (k) {
	case CP_DL_HEAD:
		s->st.handshake_timeouts++;
		cp_info("conn %s: %s not complete within %u ms: closing", c->peer,
			c->state == CP_CONN_TLS ? "TLS handshake" : "request head", s->cfg->handshake_timeout_ms);
		if (c->state == CP_CONN_TLS)
			cp_conn_close(c, "handshake timeout");
		else
			cp_http_on_timeout(c);
		break;
	case CP_DL_IDLE:
		s->st.idle_timeouts++;
		if (c->state == CP_CONN_WS)
			cp_ws_close(c, CP_WS_CLOSE_GOING_AWAY, "idle timeout");
		else
			cp_conn_close_after_flush(c, "idle timeout");
		break;
	case CP_DL_WAIT:
		cp_http_on_timeout(c);
		break;
	case CP_DL_BODY:
		s->st.body_timeouts++;
		cp_info("conn %s: request body of %llu bytes slower than %u bytes/s: 408", c->peer,
			(unsigned long long)c->http.body_len, s->cfg->body_min_rate);
		cp_http_error(c, 408, "body_timeout", false);
		break;
	case CP_DL_FLUSH:
		cp_conn_close(c, "output not consumed before the idle timeout");
		break;
	case CP_DL_MESSAGE:
		cp_ws_on_message_timeout(c);
		break;
	case CP_DL_LINGER:
	default:
		cp_conn_close(c, "linger timeout");
		break;
	}
}

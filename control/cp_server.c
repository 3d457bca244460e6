/* cp_server.c - the TLS listener: accepting with admission, the batch end,
 * the housekeeping tick, the engine's events handed to the connections,
 * and the listener's start and stop (see cp_server.h). Each connection's
 * own I/O is cp_conn.c's. Loop thread only. */
#include "cp_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cp_log.h"

#define CP_HOUSE_NS (100ull * 1000 * 1000)

/* ---- the batch end ------------------------------------------------------------ */
/* Tell the lcores which layers' resolved seeds we hand on ourselves
 * (boundary.h, struct fg_watch): those wake us, the rest wait for a tick. */
static void server_watch_publish(struct cp_server *s)
{
	uint64_t mask[FG_WATCH_WORDS] = {0};
	s->watch_dirty = false;
	if (!s->engine)
		return;
	for (const struct cp_conn *c = s->ws_list; c; c = c->lnext)
		for (unsigned i = 0; i < FG_WATCH_WORDS && i < CP_FLOW_LAYERS_MAX / 64; i++)
			mask[i] |= c->ws.sub.layers[i];
	for (const struct cp_conn *c = s->wait_list; c; c = c->lnext)
		if (c->http.wait_layer < FG_WATCH_WORDS * 64)
			mask[c->http.wait_layer / 64] |= 1ull << (c->http.wait_layer % 64);
	cp_engine_watch(s->engine, mask);
}

static void server_batch_end(struct cp_loop *l, void *arg)
{
	struct cp_server *s = arg;
	bool more;
	do {
		if (s->watch_dirty)
			server_watch_publish(s);
		/* An lcore owes a peer its answer: take it (and the seeds it
		 * resolved) before the flush, so they leave with this batch's
		 * other output in one flush instead of in the next one. */
		more = s->engine && cp_engine_spin(s->engine);
		while (s->dirty) {
			struct cp_conn *c = s->dirty;
			s->dirty = c->dnext;
			c->dirty = false;
			c->dnext = NULL;
			cp_conn_flush(c);
		}
		/* answers still owed after a whole budget: what this flush
		 * queued goes out now, while we spin again */
		if (more && cp_loop_submit(l) < 0)
			break; /* the loop's own submit reports it */
	} while (more);
}

/* ---- accepting -------------------------------------------------------------- */
/* The peer's address as an admission source (cp_admit_source_of) and,
 * whole, as text for the logs. */
static void conn_source(int fd, unsigned v6_bits, struct cp_admit_src *src, char *host, size_t host_len,
			uint16_t *port)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	memset(src, 0, sizeof(*src));
	snprintf(host, host_len, "?");
	*port = 0;
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
		return;
	cp_admit_source_of(&ss, v6_bits, src);
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &a->sin_addr, host, (socklen_t)host_len);
		*port = ntohs(a->sin_port);
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, (socklen_t)host_len);
		*port = ntohs(a->sin6_port);
	}
}

/* The unauthenticated connection an eviction closes (cp_admit.h,
 * cp_admit_evict_first): among the CP_ADMIT_EVICT_LOOK oldest, the oldest
 * whose source holds two or more; else the oldest. */
static struct cp_conn *evict_victim(struct cp_server *s)
{
	unsigned n = 0;
	for (struct cp_conn *c = s->unauth_head; c && n < CP_ADMIT_EVICT_LOOK; c = c->unext, n++)
		if (cp_admit_evict_first(&s->admit, &c->src))
			return c;
	return s->unauth_head;
}

/* Admission of an accepted fd (cp_admit.h): refuse it, or evict an
 * unauthenticated connection first (evict_victim), or take it. Refusals and
 * evictions are counted by reason (cp_admit) and logged once per 1000 of
 * each. */
static void conn_admit(struct cp_server *s, int fd)
{
	struct cp_admit_src src;
	char host[INET6_ADDRSTRLEN + 1];
	uint16_t port;
	conn_source(fd, s->cfg->ipv6_source_prefix, &src, host, sizeof(host), &port);
	double share = s->cfg->auth_reserve;
	struct cp_admit_limits lim = {
		.max_conns = s->max_conns,
		.reserve = (uint32_t)((double)s->max_conns * (share < 0 ? 0 : share > 1 ? 1 : share)),
		.unauth_per_source = s->cfg->unauth_per_source,
	};
	enum cp_admit_reason why = CP_ADMIT_R_FULL;
	enum cp_admit_verdict v = cp_admit_decide(&s->admit, &src, &lim, &why);
	if (v != CP_ADMIT_TAKE && s->admit.st[why] % 1000 == 1)
		cp_warn("admission: %s %s (%s; %llu so far; %u open, %u unauthenticated, max_connections %u, "
			"unauth_per_source %u)", v == CP_ADMIT_REFUSE ? "refusing" : "evicting an "
			"unauthenticated connection for", host, cp_admit_reason_name(why),
			(unsigned long long)s->admit.st[why], s->admit.n_open, s->admit.n_unauth, s->max_conns,
			lim.unauth_per_source);
	if (v == CP_ADMIT_REFUSE) {
		/* Accept and close, so the backlog does not hold peers in limbo. */
		close(fd);
		if (why == CP_ADMIT_R_FULL)
			s->st.refused_max++;
		return;
	}
	if (v == CP_ADMIT_TAKE_EVICT && s->unauth_head)
		cp_conn_close(evict_victim(s), cp_admit_reason_name(why));
	cp_conn_new(s, fd, &src, host, port);
}

static void server_accept_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	struct cp_server *s = cp_container_of(op, struct cp_server, accept_op);
	bool more = (flags & IORING_CQE_F_MORE) != 0;
	if (!more)
		s->accept_armed = false;
	if (res >= 0) {
		if (s->stopping)
			close(res);
		else
			conn_admit(s, res);
	} else if (res == -EINVAL && l->multishot_accept_ok) {
		cp_info("kernel refuses multishot accept: using single-shot accept");
		l->multishot_accept_ok = false;
	} else if (res != -ECANCELED) {
		cp_warn("accept failed: %s", strerror(-res));
		if (res == -EMFILE || res == -ENFILE || res == -ENOMEM)
			return; /* housekeeping re-arms in 100 ms */
	}
	/* Always accepting: admission decides (refuse, evict, take). */
	if (!s->accept_armed && !s->stopping) {
		if (cp_loop_accept(l, &s->accept_op, s->listen_fd) == 0)
			s->accept_armed = true;
	}
}

/* ---- housekeeping ------------------------------------------------------------ */
static void server_house(struct cp_loop *l, struct cp_timer *t)
{
	struct cp_server *s = cp_container_of(t, struct cp_server, house);
	uint64_t now = cp_now_ns();
	for (struct cp_conn *c = s->all, *n; c; c = n) {
		n = c->next; /* c may be freed by its tick */
		cp_conn_tick(c, now);
	}
	if (!s->accept_armed && !s->stopping && s->listen_fd >= 0) {
		if (cp_loop_accept(l, &s->accept_op, s->listen_fd) == 0)
			s->accept_armed = true;
	}
	if (cp_timer_start(l, &s->house, CP_HOUSE_NS, server_house) < 0)
		cp_err("server: cannot re-arm the housekeeping timer");
}

/* ---- engine events ------------------------------------------------------------ */
void cp_server_on_done(void *arg, uint64_t cookie, const struct cp_engine_result *r)
{
	struct cp_server *s = arg;
	struct cp_conn *c = cp_conn_by_cookie(s, cookie);
	if (!c)
		return; /* the peer left before its answer */
	c->busy++;
	if (c->state == CP_CONN_WS)
		cp_ws_on_done(c, r);
	else
		cp_http_on_done(c, r);
	c->busy--;
	cp_conn_maybe_free(c);
}

void cp_server_on_resolved(void *arg, uint16_t layer, uint32_t token_seq, const uint8_t *frame, size_t len)
{
	struct cp_server *s = arg;
	for (struct cp_conn *c = s->ws_list, *n; c; c = n) {
		n = c->lnext;
		if (cp_flow_query_has_layer(&c->ws.sub, layer)) {
			c->busy++;
			cp_ws_push(c, layer, frame, len);
			c->busy--;
			cp_conn_maybe_free(c);
		}
	}
	for (struct cp_conn *c = s->wait_list, *n; c; c = n) {
		n = c->lnext;
		if (c->http.wait_layer == layer && c->http.wait_token == token_seq) {
			c->busy++;
			cp_http_on_seed(c, FG_SLOT_RESOLVED, frame, len);
			c->busy--;
			cp_conn_maybe_free(c);
		}
	}
}

void cp_server_on_ended(void *arg, uint16_t layer, uint32_t token_seq, enum fg_slot_state st)
{
	struct cp_server *s = arg;
	for (struct cp_conn *c = s->wait_list, *n; c; c = n) {
		n = c->lnext;
		if (c->http.wait_layer == layer && c->http.wait_token == token_seq) {
			c->busy++;
			cp_http_on_seed(c, st, NULL, 0);
			c->busy--;
			cp_conn_maybe_free(c);
		}
	}
}

/* ---- server lifecycle ----------------------------------------------------------- */
int cp_server_start(struct cp_server *s, struct cp_loop *l, const struct fg_config *cfg, struct cp_engine *engine,
		    struct cp_audit *audit, int listen_fd, uint16_t port, char *why, size_t why_len)
{
	memset(s, 0, sizeof(*s));
	s->loop = l;
	s->cfg = cfg;
	s->engine = engine;
	s->audit = audit;
	s->listen_fd = -1;
	s->started_ns = cp_now_ns();
	cp_http_limits_default(&s->hlim);
	/* A body is one frame (POST) and is bounded like a WebSocket message. */
	s->hlim.max_body = cfg->ws_max_message;
	int fd = listen_fd;
	int r = cp_tls_init(&s->tls, cfg, why, why_len);
	if (r < 0) {
		close(fd);
		return r;
	}
	if (!s->tls.n_tokens && !s->tls.mtls)
		cp_warn("no bearer tokens and no client CA: /flow and POST refuse everyone (401)");
	s->max_conns = cfg->max_connections ? cfg->max_connections : 1;
	s->table = calloc(s->max_conns, sizeof(*s->table));
	if (!s->table || cp_admit_init(&s->admit, s->max_conns) < 0) {
		free(s->table);
		cp_tls_fini(&s->tls);
		close(fd);
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	s->port = port;
	s->listen_fd = fd;
	s->accept_op.fn = server_accept_done;
	if ((r = cp_loop_accept(l, &s->accept_op, fd)) < 0 ||
	    (r = cp_timer_start(l, &s->house, CP_HOUSE_NS, server_house)) < 0) {
		snprintf(why, why_len, "io_uring: %s", strerror(-r));
		close(fd);
		cp_admit_fini(&s->admit);
		free(s->table);
		cp_tls_fini(&s->tls);
		return r;
	}
	s->accept_armed = true;
	if (l->rbuf_ok)
		cp_info("tls: receive mode: multishot recv from a shared buffer ring (%u x %u KiB)", CP_LOOP_RBUFS,
			CP_LOOP_RBUF_LEN / 1024);
	else
		cp_info("tls: receive mode: per-connection recv (%s)", l->rbuf_why ? l->rbuf_why : "buffer ring off");
	l->batch_end = server_batch_end;
	l->batch_arg = s;
	return 0;
}

void cp_server_stop(struct cp_server *s)
{
	s->stopping = true;
	if (s->listen_fd >= 0) {
		if (s->accept_armed && cp_loop_cancel(s->loop, &cp_op_ignore, &s->accept_op) < 0)
			cp_err("server: cannot cancel accept");
		close(s->listen_fd);
		s->listen_fd = -1;
	}
	for (struct cp_conn *c = s->all; c; c = c->next) {
		if (cp_conn_is_dead(c))
			continue;
		if (c->state == CP_CONN_WS)
			cp_ws_close(c, CP_WS_CLOSE_GOING_AWAY, "server shutting down");
		else
			cp_conn_close_after_flush(c, "server shutting down");
	}
}

bool cp_server_drained(const struct cp_server *s) { return s->n_conns == 0; }

void cp_server_fini(struct cp_server *s)
{
	/* Connections still alive here had no completion in time; their fds go
	 * with the process. */
	free(s->table);
	s->table = NULL;
	for (struct cp_chunk *k = s->chunk_free, *n; k; k = n) {
		n = k->next;
		free(k);
	}
	s->chunk_free = NULL;
	s->n_chunk_free = 0;
	cp_admit_fini(&s->admit);
	cp_tls_fini(&s->tls);
}

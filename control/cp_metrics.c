/* cp_metrics.c - Prometheus text exposition over plain HTTP on the loop
 * (see cp_metrics.h). Loop thread only. */
#include "cp_metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cp_hooks.h"
#include "cp_http_parse.h"
#include "cp_log.h"

#define CP_M_CONNS_MAX 16u
#define CP_M_REQ_MAX 8192u
#define CP_M_TIMEOUT_NS (5ull * 1000 * 1000 * 1000)
#define CP_M_HOUSE_NS (500ull * 1000 * 1000)

struct cp_mconn {
	struct cp_metrics *m;
	struct cp_mconn *next;
	int fd;
	struct cp_op recv_op, send_op;
	bool recv_armed, send_armed, dead;
	uint64_t deadline_ns;
	char *out;
	size_t out_len, out_off, len;
	uint8_t buf[CP_M_REQ_MAX];
};

/* ---- rendering ---------------------------------------------------------------- */
struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	if (b->oom)
		return;
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		size_t cap = b->cap * 2 + (size_t)n;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

static void counter(struct sbuf *b, const char *name, const char *help, uint64_t v)
{
	sb_printf(b, "# HELP fanogate_%s %s\n# TYPE fanogate_%s counter\nfanogate_%s %llu\n", name, help, name, name,
		  (unsigned long long)v);
}

static void gauge(struct sbuf *b, const char *name, const char *help, uint64_t v)
{
	sb_printf(b, "# HELP fanogate_%s %s\n# TYPE fanogate_%s gauge\nfanogate_%s %llu\n", name, help, name, name,
		  (unsigned long long)v);
}

ssize_t cp_metrics_render(const struct cp_metrics *m, char **out)
{
	struct sbuf b = {.cap = 16384};
	b.p = malloc(b.cap);
	if (!b.p)
		return -ENOMEM;
	b.p[0] = '\0';
	const struct cp_server_stats *s = &m->srv->st;
	const struct cp_engine *e = m->engine;
	gauge(&b, "tls_connections", "open TLS connections", m->srv->n_conns);
	counter(&b, "tls_accepted_total", "TLS connections accepted", s->accepted);
	counter(&b, "tls_refused_max_total", "connections refused over max_connections", s->refused_max);
	counter(&b, "tls_handshake_failures_total", "TLS handshakes refused", s->tls_failed);
	counter(&b, "tls_head_timeouts_total", "handshake or request head not complete in time", s->handshake_timeouts);
	counter(&b, "tls_idle_timeouts_total", "connections closed idle", s->idle_timeouts);
	counter(&b, "http_requests_total", "HTTP requests routed", s->http_requests);
	counter(&b, "http_errors_total", "HTTP answers with status >= 400", s->http_errors);
	counter(&b, "auth_failures_total", "authentication refusals", s->auth_failures);
	counter(&b, "ws_sessions_total", "WebSocket /flow sessions opened", s->ws_sessions);
	counter(&b, "ws_messages_in_total", "WebSocket data messages received", s->ws_msgs_in);
	counter(&b, "ws_messages_out_total", "WebSocket messages sent (statuses and seeds)", s->ws_msgs_out);
	counter(&b, "ws_slow_consumer_drops_total", "sessions dropped with 1008 over send_queue_max",
		s->slow_consumer_drops);
	counter(&b, "seeds_pushed_total", "resolved seeds pushed to subscribers", s->seeds_pushed);
	counter(&b, "tls_frames_total", "frames received over TLS (WebSocket and POST)", e->st.frames);
	counter(&b, "seeds_resolved_total", "slots resolved (seen by the control plane)", e->st.resolved);
	counter(&b, "slots_expired_total", "slots expired", e->st.expired);
	counter(&b, "slots_poisoned_total", "slots poisoned by a conflict", e->st.poisoned);
	gauge(&b, "model_epoch", "model epoch", e->epoch);
	sb_printf(&b, "# HELP fanogate_tls_outcomes_total outcomes of frames received over TLS\n"
		      "# TYPE fanogate_tls_outcomes_total counter\n");
	for (unsigned i = 0; i < FG_O__COUNT; i++)
		sb_printf(&b, "fanogate_tls_outcomes_total{outcome=\"%s\"} %llu\n", fg_outcome_name((enum fg_outcome)i),
			  (unsigned long long)e->st.outcome[i]);
	sb_printf(&b, "# HELP fanogate_tls_malformed_total malformed frames over TLS by reason\n"
		      "# TYPE fanogate_tls_malformed_total counter\n");
	for (unsigned i = 1; i < FG_R__COUNT; i++)
		sb_printf(&b, "fanogate_tls_malformed_total{reason=\"%s\"} %llu\n", fg_reason_name((int)i),
			  (unsigned long long)e->st.reason[i]);
	sb_printf(&b, "# HELP fanogate_line_state effective state of each line (1 for the current state)\n"
		      "# TYPE fanogate_line_state gauge\n");
	for (unsigned i = 0; i < FG_LINES; i++) {
		enum fg_line_state cur = fg_line_effective(&e->lines, i);
		for (unsigned st = FG_LINE_DISABLED; st <= FG_LINE_DEGRADED; st++)
			sb_printf(&b, "fanogate_line_state{line=\"%u\",state=\"%s\"} %d\n", i,
				  fg_line_state_name((enum fg_line_state)st), cur == st);
	}
	counter(&b, "audit_resolved_in_total", "resolved seeds handed to the shadow audit", cp_hook_stats.resolved);
	counter(&b, "audit_canonical_in_total", "canonical reports handed to the shadow audit", cp_hook_stats.canonical);
	counter(&b, "audit_refused_total", "hand-offs the audit refused (failed closed or busy)", cp_hook_stats.refused);
	if (m->b && m->b->counters) {
		for (unsigned c = 0; c < FG_C__COUNT; c++) {
			const char *n = fg_dp_counter_name((enum fg_dp_counter)c);
			sb_printf(&b, "# TYPE fanogate_dp_%s_total counter\n", n);
			for (unsigned i = 0; i < m->b->n_lanes; i++)
				sb_printf(&b, "fanogate_dp_%s_total{lcore=\"%u\"} %llu\n", n, i,
					  (unsigned long long)atomic_load_explicit(&m->b->counters[i].c[c],
										   memory_order_relaxed));
		}
	}
	if (b.oom) {
		free(b.p);
		return -ENOMEM;
	}
	*out = b.p;
	return (ssize_t)b.len;
}

/* ---- connections ------------------------------------------------------------------ */
static void mc_recv_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags);

static void mc_close(struct cp_mconn *c)
{
	c->dead = true;
	if (c->recv_armed || c->send_armed) {
		shutdown(c->fd, SHUT_RDWR);
		return;
	}
	struct cp_metrics *m = c->m;
	for (struct cp_mconn **pp = &m->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	m->n_conns--;
	close(c->fd);
	free(c->out);
	free(c);
}

static void mc_send_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	(void)flags;
	struct cp_mconn *c = cp_container_of(op, struct cp_mconn, send_op);
	c->send_armed = false;
	if (!c->dead && res > 0 && c->out_off + (size_t)res < c->out_len) {
		c->out_off += (size_t)res;
		if (cp_loop_send(l, &c->send_op, c->fd, c->out + c->out_off, c->out_len - c->out_off) == 0) {
			c->send_armed = true;
			return;
		}
	}
	mc_close(c);
}

static void mc_respond(struct cp_mconn *c, int status, const char *ctype, const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			 status, cp_http_status_text(status), ctype, len);
	c->out = malloc((size_t)n + len);
	if (!c->out) {
		mc_close(c);
		return;
	}
	memcpy(c->out, head, (size_t)n);
	memcpy(c->out + n, body, len);
	c->out_len = (size_t)n + len;
	c->out_off = 0;
	c->send_op.fn = mc_send_done;
	if (cp_loop_send(c->m->loop, &c->send_op, c->fd, c->out, c->out_len) < 0) {
		mc_close(c);
		return;
	}
	c->send_armed = true;
}

static void mc_request(struct cp_mconn *c, const struct cp_http_req *req)
{
	static const char path[] = "/metrics";
	if (req->path.len != sizeof(path) - 1 || memcmp(req->path.p, path, sizeof(path) - 1) != 0) {
		mc_respond(c, 404, "text/plain", "not found\n", 10);
		return;
	}
	if (req->method != CP_HTTP_GET) {
		mc_respond(c, 405, "text/plain", "GET only\n", 9);
		return;
	}
	char *body = NULL;
	ssize_t n = cp_metrics_render(c->m, &body);
	if (n < 0) {
		mc_respond(c, 500, "text/plain", "no memory\n", 10);
		return;
	}
	c->m->scrapes++;
	mc_respond(c, 200, "text/plain; version=0.0.4", body, (size_t)n);
	free(body);
}

static void mc_arm_recv(struct cp_mconn *c)
{
	c->recv_op.fn = mc_recv_done;
	if (cp_loop_recv(c->m->loop, &c->recv_op, c->fd, c->buf + c->len, sizeof(c->buf) - c->len) < 0) {
		mc_close(c);
		return;
	}
	c->recv_armed = true;
}

static void mc_recv_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	(void)l; (void)flags;
	struct cp_mconn *c = cp_container_of(op, struct cp_mconn, recv_op);
	c->recv_armed = false;
	if (c->dead || res <= 0) {
		mc_close(c);
		return;
	}
	c->len += (size_t)res;
	struct cp_http_limits lim;
	cp_http_limits_default(&lim);
	lim.max_request_line = 1024;
	lim.max_header_bytes = CP_M_REQ_MAX - 1024;
	lim.max_body = 0;
	struct cp_http_req req;
	ssize_t r = cp_http_parse_request(c->buf, c->len, &lim, &req);
	if (r == -CP_HTTP_R_INCOMPLETE && c->len < sizeof(c->buf)) {
		mc_arm_recv(c);
		return;
	}
	if (r < 0) {
		int st = r == -CP_HTTP_R_INCOMPLETE ? 431 : cp_http_reason_status((int)r);
		mc_respond(c, st, "text/plain", "bad request\n", 12);
		return;
	}
	mc_request(c, &req);
}

static void m_accept_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	struct cp_metrics *m = cp_container_of(op, struct cp_metrics, accept_op);
	if (!(flags & IORING_CQE_F_MORE))
		m->accept_armed = false;
	if (res >= 0) {
		struct cp_mconn *c = m->stopping || m->n_conns >= CP_M_CONNS_MAX ? NULL : calloc(1, sizeof(*c));
		if (!c) {
			close(res);
		} else {
			c->m = m;
			c->fd = res;
			c->deadline_ns = cp_now_ns() + CP_M_TIMEOUT_NS;
			c->next = m->conns;
			m->conns = c;
			m->n_conns++;
			mc_arm_recv(c);
		}
	} else if (res == -EINVAL && l->multishot_accept_ok) {
		l->multishot_accept_ok = false;
	} else if (res != -ECANCELED) {
		cp_warn("metrics: accept failed: %s", strerror(-res));
	}
	if (!m->accept_armed && !m->stopping && m->fd >= 0 && cp_loop_accept(l, &m->accept_op, m->fd) == 0)
		m->accept_armed = true;
}

static void m_house(struct cp_loop *l, struct cp_timer *t)
{
	struct cp_metrics *m = cp_container_of(t, struct cp_metrics, house);
	uint64_t now = cp_now_ns();
	for (struct cp_mconn *c = m->conns, *n; c; c = n) {
		n = c->next;
		if (!c->dead && now >= c->deadline_ns)
			mc_close(c);
	}
	if (!m->accept_armed && !m->stopping && m->fd >= 0 && cp_loop_accept(l, &m->accept_op, m->fd) == 0)
		m->accept_armed = true;
	if (!m->stopping && cp_timer_start(l, &m->house, CP_M_HOUSE_NS, m_house) < 0)
		cp_err("metrics: cannot re-arm its timer");
}

int cp_metrics_start(struct cp_metrics *m, struct cp_loop *l, const struct fg_config *cfg, struct cp_engine *e,
		     struct cp_server *srv, const struct fg_boundary *b, char *why, size_t why_len)
{
	memset(m, 0, sizeof(*m));
	m->loop = l;
	m->cfg = cfg;
	m->engine = e;
	m->srv = srv;
	m->b = b;
	m->fd = -1;
	const struct fg_addr *a = &cfg->metrics_listen;
	if (!a->set) {
		cp_info("metrics endpoint off");
		return 0;
	}
	struct sockaddr_storage ss;
	socklen_t sl;
	memset(&ss, 0, sizeof(ss));
	if (a->family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, a->addr, 16);
		s6->sin6_port = htons(a->port);
		sl = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, a->addr, 4);
		s4->sin_port = htons(a->port);
		sl = sizeof(*s4);
	}
	int fd = socket(a->family == AF_INET6 ? AF_INET6 : AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 16) < 0) {
		int err = errno;
		snprintf(why, why_len, "[metrics] listen port %u: %s", a->port, strerror(err));
		if (fd >= 0)
			close(fd);
		return -err;
	}
	sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		m->port = ntohs(a->family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
						      : ((struct sockaddr_in *)&ss)->sin_port);
	m->fd = fd;
	m->accept_op.fn = m_accept_done;
	int r;
	if ((r = cp_loop_accept(l, &m->accept_op, fd)) < 0 || (r = cp_timer_start(l, &m->house, CP_M_HOUSE_NS, m_house)) < 0) {
		snprintf(why, why_len, "[metrics] io_uring: %s", strerror(-r));
		close(fd);
		m->fd = -1;
		return r;
	}
	m->accept_armed = true;
	cp_info("metrics on port %u (GET /metrics)", m->port);
	return 0;
}

void cp_metrics_stop(struct cp_metrics *m)
{
	m->stopping = true;
	if (m->fd >= 0) {
		if (m->accept_armed && cp_loop_cancel(m->loop, &cp_op_ignore, &m->accept_op) < 0)
			cp_err("metrics: cannot cancel accept");
		close(m->fd);
		m->fd = -1;
	}
	for (struct cp_mconn *c = m->conns, *n; c; c = n) {
		n = c->next;
		if (!c->dead)
			mc_close(c);
	}
}

/* cp_small_srv.c - the listener under the operator socket and the metrics
 * endpoint (see cp_small_srv.h). Loop thread only. */
#include "cp_small_srv.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cp_log.h"

void cp_small_srv_init(struct cp_small_srv *s, struct cp_loop *l, const struct cp_small_srv_ops *ops)
{
	memset(s, 0, sizeof(*s));
	s->loop = l;
	s->ops = ops;
	s->fd = -1;
}

/* A lost accept (a multishot that ended, a failed re-queue) is re-armed
 * here and from the housekeeping timer. */
static void rearm_accept(struct cp_small_srv *s)
{
	if (!s->accept_armed && !s->stopping && s->fd >= 0 && cp_loop_accept(s->loop, &s->accept_op, s->fd) == 0)
		s->accept_armed = true;
}

static void accept_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	struct cp_small_srv *s = cp_container_of(op, struct cp_small_srv, accept_op);
	if (!(flags & IORING_CQE_F_MORE))
		s->accept_armed = false;
	if (res >= 0)
		s->ops->on_accept(s, res);
	else if (res == -EINVAL && l->multishot_accept_ok)
		l->multishot_accept_ok = false;
	else if (res != -ECANCELED)
		cp_warn("%s: accept failed: %s", s->ops->name, strerror(-res));
	rearm_accept(s);
}

static void house(struct cp_loop *l, struct cp_timer *t)
{
	struct cp_small_srv *s = cp_container_of(t, struct cp_small_srv, house);
	uint64_t now = cp_now_ns();
	for (struct cp_small_conn *c = s->conns, *n; c; c = n) {
		n = c->next; /* on_deadline may free c */
		if (!c->dead && now >= c->deadline_ns)
			s->ops->on_deadline(s, c);
	}
	rearm_accept(s);
	if (!s->stopping && cp_timer_start(l, &s->house, s->ops->house_ns, house) < 0)
		cp_err("%s: cannot re-arm its timer", s->ops->name);
}

int cp_small_srv_start(struct cp_small_srv *s, int listen_fd)
{
	s->fd = listen_fd;
	s->accept_op.fn = accept_done;
	int r;
	if ((r = cp_loop_accept(s->loop, &s->accept_op, listen_fd)) < 0 ||
	    (r = cp_timer_start(s->loop, &s->house, s->ops->house_ns, house)) < 0) {
		s->fd = -1;
		return r;
	}
	s->accept_armed = true;
	return 0;
}

void cp_small_srv_stop(struct cp_small_srv *s)
{
	s->stopping = true;
	if (s->fd >= 0) {
		if (s->accept_armed && cp_loop_cancel(s->loop, &cp_op_ignore, &s->accept_op) < 0)
			cp_err("%s: cannot cancel accept", s->ops->name);
		close(s->fd);
		s->fd = -1;
	}
	for (struct cp_small_conn *c = s->conns, *n; c; c = n) {
		n = c->next; /* on_stop may free c */
		if (!c->dead)
			s->ops->on_stop(s, c);
	}
}

void cp_small_srv_link(struct cp_small_srv *s, struct cp_small_conn *c, uint64_t timeout_ns)
{
	c->deadline_ns = cp_now_ns() + timeout_ns;
	c->next = s->conns;
	s->conns = c;
	s->n_conns++;
}

void cp_small_srv_unlink(struct cp_small_srv *s, struct cp_small_conn *c)
{
	for (struct cp_small_conn **pp = &s->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			s->n_conns--;
			return;
		}
}

static bool same_source(const struct cp_admit_src *a, const struct cp_admit_src *b)
{
	return a->family && a->family == b->family && !memcmp(a->addr, b->addr, sizeof(a->addr));
}

/* Whether another live connection of s comes from o's source. */
static bool source_shared(const struct cp_small_srv *s, const struct cp_small_conn *o)
{
	for (const struct cp_small_conn *p = s->conns; p; p = p->next)
		if (p != o && !p->dead && same_source(&p->src, &o->src))
			return true;
	return false;
}

bool cp_small_srv_admit(struct cp_small_srv *s, int fd, struct cp_small_conn *c, unsigned max_conns,
			unsigned per_source_max, unsigned v6_bits)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	memset(&c->src, 0, sizeof(c->src));
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
		cp_admit_source_of(&ss, v6_bits, &c->src);
	unsigned same = 0;
	/* The one an eviction closes: the oldest connection of a source that
	 * holds two or more, else the oldest (as the TLS listener chooses,
	 * cp_admit.h cp_admit_evict_first: a lone scraper is passed over while
	 * a source spread over several connections has one to give). */
	struct cp_small_conn *oldest = NULL, *oldest_shared = NULL;
	for (struct cp_small_conn *o = s->conns; o; o = o->next) {
		if (o->dead)
			continue;
		if (same_source(&o->src, &c->src))
			same++;
		if (!oldest || o->deadline_ns <= oldest->deadline_ns)
			oldest = o;
		if ((!oldest_shared || o->deadline_ns <= oldest_shared->deadline_ns) && source_shared(s, o))
			oldest_shared = o;
	}
	if (c->src.family && per_source_max && same >= per_source_max) {
		s->refused_per_source++;
		return false;
	}
	if (max_conns && s->n_conns >= max_conns && oldest) {
		s->evicted++;
		/* closes it (it may stay listed, dead, until its ops end) */
		s->ops->on_deadline(s, oldest_shared ? oldest_shared : oldest);
	}
	return true;
}

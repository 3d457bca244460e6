/* cp_cluster.c - the loop thread's side of [cluster] (see cp_cluster.h).
 *
 * State machine of this node's view of etcd:
 *
 *   start --> WAITING --CL_IN_UP + snapshot--> UP --CL_IN_DOWN--> LOST
 *                ^                              ^                  |
 *                |                              +--CL_IN_UP + -----+
 *                +-- (never reached: lines held as in LOST)  snapshot
 *
 *   WAITING/LOST/DUPLICATE --CL_IN_DUPLICATE--> DUPLICATE (UP too)
 *
 *   state     lines                                  local changes
 *   WAITING   every line held in shadow (as LOST)    applied, queued for etcd
 *   UP        as etcd says (watch applied at once)   applied, sent to etcd
 *   LOST      every ACTIVE line held in SHADOW,      applied, queued; a line
 *             auto-promotion off, alert raised       going ACTIVE is held again
 *   DUPLICATE as LOST: another live node holds this  as LOST (nothing reaches
 *             node's name; alert cluster_duplicate_  etcd until the name is
 *             node; the thread retries every 500 ms  free)
 *
 * Held lines: "held" is the mask of lines this file moved ACTIVE -> SHADOW
 * because etcd was away; the hold is local (never written to etcd). At the
 * end of the snapshot that follows CL_IN_UP, every line takes etcd's state
 * (a held line whose etcd state is ACTIVE goes ACTIVE again), auto-promotion
 * comes back, held is cleared.
 *
 * Applying a remote change: applying > 0 while this file calls into the
 * shadow audit/engine, so the hooks do not send the change back to etcd.
 * Every fact comes from the cluster thread, which applies only values the
 * fleet key authenticates and that are bound to their writer's lease; the
 * node a fact names is the writer as proven there. Changes this node wrote
 * come back through the watch; they are skipped by this node's lease
 * (m->mine; this node already applied them, and an old echo must not undo a
 * newer local change). A value in this node's name on another lease (its
 * earlier life, or a forgery the thread let through as history) is applied
 * like any other node's.
 *
 * The node table holds at most [cluster] nodes_max entries (this node
 * included); an entry is freed when its node's lease ends (its nodes/ key's
 * delete, or its absence from a snapshot). The thread tracks no more peers
 * than that, so a node beyond is refused there (counted and logged), never
 * silently untracked here.
 *
 * A node that stops refreshing its lease: the cluster thread probes every
 * other node's lease (CL_IN_PEER_LEASE); stale while the node is live ->
 * node_gone at once (its nodes/ key is still in etcd: `stale` marks that);
 * the key's delete when the lease then expires is no second event; refreshed
 * again before that -> live again (its points count again, points_revived).
 * A put of its key on the same lease keeps it stale (a snapshot re-reads
 * it); a put on a new lease is a new start.
 *
 * Invariants:
 *  1. A line is never ACTIVE here unless state == UP (or the cluster is off).
 *  2. held & ~(lines whose base is SHADOW) == 0 while state != UP.
 *  3. cluster_down holds only points no live node (this one included) sees
 *     alive; each such point was marked down through cp_engine_point_set.
 *
 * Loop thread only. */
#include "cp_cluster.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "cl_detect.h"
#include "cp_cluster_etcd.h"
#include "cp_engine.h"
#include "cp_audit.h"
#include "cp_log.h"
#include "cp_shadow.h"
#include "fg/fano.h"

enum cl_state { CL_WAITING, CL_UP, CL_LOST, CL_DUPLICATE };
static const char *const state_names[] = {"waiting", "up", "lost", "duplicate"};

struct cl_node {
	char name[FG_CLUSTER_NAME_MAX];
	bool live;         /* nodes/<name> exists (its lease holds) */
	bool had_points;
	bool was_live;     /* live before the snapshot being read */
	bool stale;        /* reported lost because its lease stopped being refreshed; its key still in etcd */
	bool beat_down;    /* reported lost because its heartbeats stopped; its key still in etcd */
	bool keyed;        /* its nodes/ key is in etcd (as far as this node knows) */
	bool seen;         /* its key was in the snapshot being read */
	char layers[FG_CONFIG_LINE_MAX + 1];
	uint8_t alive, judged;
	int64_t lease;
	uint64_t since_ns, gone_ns;
};

struct cl_line {
	bool known;        /* etcd has lines/<i> */
	bool mine;         /* written under this node's current lease */
	char state[12], event[16], node[FG_CLUSTER_NAME_MAX], why[128];
	uint32_t uid;
};

struct cp_cluster {
	const struct fg_config *cfg;
	struct cp_engine *e;
	struct cp_audit *audit;
	struct cp_loop *l;
	struct cl_etcd *t;
	struct cp_poll poll;
	struct cp_timer tick;   /* 50 ms: this node's live points (cp_points_live) */
	bool stopping;
	const struct cp_engine_audit_ops *inner; /* the sink this one forwards to */
	void *inner_arg;
	enum cl_state state;
	bool in_snapshot;
	bool snap_epoch, snap_lines[FG_LINES];
	int applying;
	uint8_t held;           /* lines held in shadow while etcd is away */
	uint8_t auto_saved;     /* their auto_promote before the hold (all lines) */
	bool auto_held;
	uint8_t cluster_down;   /* points marked down for a vanished node */
	uint8_t local_alive, local_judged;
	uint32_t etcd_epoch;
	bool etcd_epoch_known;
	char epoch_by[FG_CLUSTER_NAME_MAX], epoch_why[160];
	struct cl_line line[FG_LINES];
	struct cl_node *node;   /* nodes_max entries */
	unsigned n_nodes, nodes_max;
	int64_t lease_id, lease_ttl;
	uint64_t lease_seen_ns;
	int64_t revision;
	uint64_t lost_ns, up_ns;
	struct {
		uint64_t lines_applied, epochs_applied, lines_sent, epochs_sent, points_sent, sends_refused;
		uint64_t lost, recovered, nodes_gone, points_degraded, bad_values, holds, duplicates;
		uint64_t nodes_stale, nodes_back, nodes_beat_down, nodes_beat_resumed, nodes_refused;
	} st;
};

static void out_send(struct cp_cluster *c, const struct cl_out *m)
{
	if (cl_etcd_push_out(c->t, m) < 0) {
		c->st.sends_refused++;
		cp_err("cluster: the queue to etcd is full (%u): a change was not sent", CL_QUEUE_MAX);
	}
}

static const char *base_name(enum fg_line_state s) { return fg_line_state_name(s); }

/* Apply ev to a line as this node's own shadow audit would, recording the
 * origin "cluster:<node>" in this node's audit log. */
static int line_apply(struct cp_cluster *c, unsigned line, enum fg_line_event ev, uint32_t uid, const char *origin, const char *why)
{
	struct cp_shadow *sh = c->audit->sh;
	uint64_t seq;
	int r;
	c->applying++;
	if (sh)
		r = cp_shadow_line_op(sh, line, ev, uid, 0, origin, why, cp_now_ns(), &seq);
	else
		r = cp_engine_line_event(c->e, line, ev, uid, 0, why);
	c->applying--;
	if (r == 1)
		cp_engine_publish(c->e);
	return r;
}

static void hold_all(struct cp_cluster *c, const char *why)
{
	if (!c->auto_held) {
		c->auto_saved = 0;
		for (unsigned i = 0; i < FG_LINES; i++) {
			if (c->e->lines.line[i].auto_promote)
				c->auto_saved |= (uint8_t)(1u << i);
			fg_line_set_auto_promote(&c->e->lines, i, false);
		}
		c->auto_held = true;
	}
	for (unsigned i = 0; i < FG_LINES; i++) {
		if (c->e->lines.line[i].base != FG_LINE_ACTIVE)
			continue;
		int r = line_apply(c, i, FG_LEV_OP_SHADOW, FG_UID_AUDIT, "cluster", why);
		if (r == 1) {
			c->held |= (uint8_t)(1u << i);
			c->st.holds++;
		} else {
			cp_err("cluster: cannot hold line %u in shadow (%s)", i, strerror(r < 0 ? -r : EIO));
		}
	}
}

static void raise_alert(struct cp_cluster *c, const char *event, const char *reason)
{
	struct cp_shadow *sh = c->audit->sh;
	if (!sh)
		return;
	struct cp_alert_event ev;
	cp_alert_event_init(&ev, event);
	ev.reason = reason;
	ev.epoch = c->e->epoch;
	(void)cp_alert_raise(cp_shadow_alert(sh), &ev, cp_now_ns());
}

/* ---- nodes and points ------------------------------------------------ */

static struct cl_node *node_get(struct cp_cluster *c, const char *name, bool create)
{
	for (unsigned i = 0; i < c->n_nodes; i++)
		if (strcmp(c->node[i].name, name) == 0)
			return &c->node[i];
	if (!create)
		return NULL;
	if (c->n_nodes == c->nodes_max) {
		c->st.nodes_refused++;
		cp_err("cluster: node %s not tracked: %u nodes already ([cluster] nodes_max)", name, c->nodes_max);
		return NULL;
	}
	struct cl_node *n = &c->node[c->n_nodes++];
	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", name);
	return n;
}

/* Forget n (its lease ended): its entry is free for another node. */
static void node_free(struct cp_cluster *c, struct cl_node *n)
{
	*n = c->node[--c->n_nodes];
}

/* Points (bit p-1) some live node, this one included, sees alive. */
static uint8_t fleet_alive(struct cp_cluster *c)
{
	uint8_t m = c->local_alive;
	for (unsigned i = 0; i < c->n_nodes; i++)
		if (c->node[i].live && strcmp(c->node[i].name, c->cfg->cluster.node) != 0)
			m |= c->node[i].alive;
	return m;
}

/* Points a now-vanished node saw alive that nobody else does: down here. */
static void points_orphaned(struct cp_cluster *c, const struct cl_node *n)
{
	uint8_t orphan = (uint8_t)(n->alive & ~fleet_alive(c) & ~c->cluster_down);
	for (unsigned p = 1; p <= FG_POINTS; p++) {
		if (!(orphan & (1u << (p - 1))))
			continue;
		char who[96];
		snprintf(who, sizeof(who), "cluster: node %s gone, it alone served e%u", n->name, p);
		c->cluster_down |= (uint8_t)(1u << (p - 1));
		c->st.points_degraded++;
		c->applying++;
		cp_engine_point_set(c->e, p, true, who);
		c->applying--;
	}
}

/* Points marked down for a vanished node that some node sees alive again. */
static void points_revived(struct cp_cluster *c)
{
	uint8_t back = (uint8_t)(c->cluster_down & fleet_alive(c));
	for (unsigned p = 1; p <= FG_POINTS; p++) {
		if (!(back & (1u << (p - 1))))
			continue;
		c->cluster_down &= (uint8_t)~(1u << (p - 1));
		c->applying++;
		cp_engine_point_set(c->e, p, false, "cluster: a node sees it alive again");
		c->applying--;
	}
}

static void node_gone(struct cp_cluster *c, struct cl_node *n, const char *how)
{
	if (!n->live)
		return;
	n->live = false;
	n->gone_ns = cp_now_ns();
	c->st.nodes_gone++;
	cp_warn("cluster: node %s gone (%s)", n->name, how);
	points_orphaned(c, n);
}

/* A node reported lost while its key stayed in etcd is live again once no
 * early signal holds it (neither a stale lease nor stopped heartbeats). */
static void node_back(struct cp_cluster *c, struct cl_node *n, const char *how)
{
	if (n->live || n->stale || n->beat_down || !n->keyed)
		return;
	n->live = true;
	n->since_ns = cp_now_ns();
	c->st.nodes_back++;
	cp_warn("cluster: node %s is back: %s; the points it sees alive count again", n->name, how);
	points_revived(c);
}

/* ---- facts from etcd --------------------------------------------------- */

static void on_line(struct cp_cluster *c, const struct cl_in *m)
{
	struct cl_line *ln = &c->line[m->line];
	ln->known = true;
	snprintf(ln->state, sizeof(ln->state), "%s", m->state);
	snprintf(ln->event, sizeof(ln->event), "%s", m->event);
	snprintf(ln->node, sizeof(ln->node), "%s", m->node);
	snprintf(ln->why, sizeof(ln->why), "%.127s", m->why);
	ln->uid = m->uid;
	ln->mine = m->mine;
	if (m->snapshot)
		c->snap_lines[m->line] = true;
	bool mine = m->mine;
	bool held = c->held & (1u << m->line);
	if (mine && !held)
		return; /* already applied here when it was made */
	int target = fg_line_state_parse(m->state);
	if (target < 0 || target == FG_LINE_DEGRADED) {
		c->st.bad_values++;
		cp_warn("cluster: line %u: state '%s' from node %s is not a base state: ignored", m->line, m->state,
			m->node);
		return;
	}
	if (c->state != CL_UP || c->in_snapshot)
		return; /* the snapshot end applies it (after the hold is lifted) */
	enum fg_line_state base = c->e->lines.line[m->line].base;
	if ((int)base == target)
		return;
	enum fg_line_event ev = target == FG_LINE_DISABLED ? FG_LEV_OP_DISABLE
			      : target == FG_LINE_ACTIVE  ? FG_LEV_OP_ACTIVE
			      : base == FG_LINE_ACTIVE && (!strcmp(m->event, "divergence") || !strcmp(m->event, "conflict"))
				  ? FG_LEV_DIVERGENCE
				  : FG_LEV_OP_SHADOW;
	char origin[64], why[256];
	snprintf(origin, sizeof(origin), "cluster:%s", m->node);
	snprintf(why, sizeof(why), "node %s: %s", m->node, m->why);
	int r = line_apply(c, m->line, ev, m->uid, origin, why);
	if (r == 1) {
		c->st.lines_applied++;
		char who[32];
		cp_log(cp_log_change_level(base, target), "cluster: line %u %s: %s -> %s from node %s (%s, by %s: %s)",
		       m->line, fg_fano_line_name(m->line), base_name(base), m->state, m->node, m->event,
		       cp_log_actor(m->uid, who, sizeof(who)), m->why);
	} else if (r < 0) {
		cp_err("cluster: line %u: applying %s from node %s failed: %s", m->line, m->state, m->node, strerror(-r));
	}
}

static void epoch_catch_up(struct cp_cluster *c);

static void on_epoch(struct cp_cluster *c, const struct cl_in *m)
{
	snprintf(c->epoch_by, sizeof(c->epoch_by), "%s", m->node);
	snprintf(c->epoch_why, sizeof(c->epoch_why), "%s", m->why);
	c->etcd_epoch = m->epoch;
	c->etcd_epoch_known = true;
	if (m->snapshot)
		c->snap_epoch = true;
	if (c->in_snapshot)
		return; /* applied at the snapshot's end, after the hold is lifted */
	epoch_catch_up(c);
}

/* Move to etcd's epoch when it is ahead of this node's. */
static void epoch_catch_up(struct cp_cluster *c)
{
	int32_t d = (int32_t)(c->etcd_epoch - c->e->epoch);
	if (d <= 0)
		return; /* this node is there already (it advanced it, or applied it) */
	char why[256];
	snprintf(why, sizeof(why), "cluster: node %s: %s", c->epoch_by[0] ? c->epoch_by : "?",
		 c->epoch_why[0] ? c->epoch_why : "epoch advanced");
	c->applying++;
	cp_engine_epoch_apply(c->e, c->etcd_epoch, why);
	c->applying--;
	c->st.epochs_applied++;
}

static void on_node(struct cp_cluster *c, const struct cl_in *m)
{
	bool me = strcmp(m->node, c->cfg->cluster.node) == 0;
	struct cl_node *n = node_get(c, m->node, !m->deleted);
	if (!n)
		return;
	if (m->deleted) {
		n->keyed = false;
		if (n->stale || n->beat_down) {
			/* reported lost already (its lease stopped being refreshed,
			 * or its heartbeats stopped) */
			n->stale = false;
			n->beat_down = false;
			cp_info("cluster: node %s: its lease expired (reported lost %" PRIu64 " ms ago)", n->name,
				(cp_now_ns() - n->gone_ns) / 1000000u);
		} else if (!me) {
			node_gone(c, n, "its lease expired or it stopped");
		} else {
			n->live = false;
		}
		if (!me)
			node_free(c, n);
		return;
	}
	n->seen = true;
	n->keyed = true;
	if ((n->stale || n->beat_down) && m->lease_id == n->lease) {
		/* its key, still on the stale lease (a snapshot re-read it): lost
		 * until a probe says the lease is refreshed again and it beats */
		snprintf(n->layers, sizeof(n->layers), "%s", m->layers);
		return;
	}
	n->stale = false;
	n->beat_down = false;
	if (!n->live) {
		n->since_ns = cp_now_ns();
		if (!me)
			cp_info("cluster: node %s is up (layers %s)", m->node, m->layers);
	}
	n->live = true;
	n->lease = m->lease_id;
	snprintf(n->layers, sizeof(n->layers), "%s", m->layers);
}

/* The cluster thread probed another node's lease (docs/cluster.md "A node
 * that stops refreshing its lease"). */
static void on_peer_lease(struct cp_cluster *c, const struct cl_in *m)
{
	struct cl_node *n = node_get(c, m->node, false);
	if (!n || !n->keyed || n->lease != m->lease_id || strcmp(m->node, c->cfg->cluster.node) == 0)
		return; /* not a node this file knows on that lease (a newer put came first) */
	if (m->stale) {
		if (n->stale)
			return;
		if (!n->live) {
			n->stale = true; /* reported already (its heartbeats): back needs a refresh too */
			return;
		}
		char how[160];
		if (m->granted > 0)
			snprintf(how, sizeof(how),
				 "its lease %" PRId64 " not refreshed for more than %u s: %" PRId64 " s of %" PRId64 " s left",
				 m->lease_id, cl_lease_stale_s(&c->cfg->cluster), m->ttl, m->granted);
		else
			snprintf(how, sizeof(how), "its lease %" PRId64 " is gone from etcd", m->lease_id);
		c->st.nodes_stale++;
		node_gone(c, n, how);
		n->stale = true;
		return;
	}
	if (!n->stale)
		return;
	n->stale = false;
	char how[160];
	snprintf(how, sizeof(how), "its lease %" PRId64 " is refreshed again before it expired (%" PRId64 " s of %" PRId64
		 " s left)", m->lease_id, m->ttl, m->granted);
	if (n->beat_down)
		cp_info("cluster: node %s: %s, but no heartbeat yet: still lost", n->name, how);
	node_back(c, n, how);
}

/* The cluster thread says another node stopped or resumed beating
 * (docs/cluster.md "Heartbeats"). */
static void on_peer_beat(struct cp_cluster *c, const struct cl_in *m)
{
	struct cl_node *n = node_get(c, m->node, false);
	if (!n || !n->keyed || n->lease != m->lease_id || strcmp(m->node, c->cfg->cluster.node) == 0)
		return;
	char how[200];
	if (m->stale) {
		if (n->beat_down)
			return;
		n->beat_down = true;
		c->st.nodes_beat_down++;
		snprintf(how, sizeof(how),
			 "no heartbeat for %" PRId64 " ms (bound %u ms, proven by this node's own later beat); its lease %" PRId64
			 " still holds, its expiry is the final word",
			 m->gap_ms, cl_beat_down_ms(&c->cfg->cluster), m->lease_id);
		if (n->live)
			node_gone(c, n, how);
		else
			cp_info("cluster: node %s: %s (reported lost already)", n->name, how);
		return;
	}
	if (!n->beat_down)
		return;
	n->beat_down = false;
	c->st.nodes_beat_resumed++;
	snprintf(how, sizeof(how), "its heartbeats resumed after %" PRId64 " ms without one (a stall, not a death)",
		 m->gap_ms);
	if (n->stale)
		cp_warn("cluster: node %s: %s, but its lease is stale: still lost", n->name, how);
	node_back(c, n, how);
}

static void on_points(struct cp_cluster *c, const struct cl_in *m)
{
	struct cl_node *n = node_get(c, m->node, !m->deleted);
	if (!n)
		return;
	if (m->deleted) {
		/* the node's lease went with both keys; its nodes/ delete says so */
		return;
	}
	n->alive = m->alive;
	n->judged = m->judged;
	n->had_points = true;
	points_revived(c);
}

static void on_up(struct cp_cluster *c, const struct cl_in *m)
{
	c->in_snapshot = true;
	c->snap_epoch = false;
	memset(c->snap_lines, 0, sizeof(c->snap_lines));
	/* nodes the snapshot does not list are gone: mark all, the snapshot
	 * marks the live ones again */
	for (unsigned i = 0; i < c->n_nodes; i++)
		c->node[i].was_live = c->node[i].live;
	for (unsigned i = 0; i < c->n_nodes; i++) {
		c->node[i].live = false;
		c->node[i].seen = false;
		c->node[i].keyed = false;
	}
	cp_info("cluster: etcd reached through %s; catching up", m->why);
}

static void on_snap_end(struct cp_cluster *c, const struct cl_in *m)
{
	c->in_snapshot = false;
	c->revision = m->revision;
	bool was_lost = c->state != CL_UP;
	c->state = CL_UP;
	c->up_ns = cp_now_ns();
	/* nodes that were live before and are not in the snapshot: gone */
	for (unsigned i = 0; i < c->n_nodes; i++) {
		struct cl_node *n = &c->node[i];
		if (!n->live && n->was_live && strcmp(n->name, c->cfg->cluster.node) != 0) {
			n->live = true;
			node_gone(c, n, "not in etcd after reconnecting");
		}
		if ((n->stale || n->beat_down) && !n->seen) {
			n->stale = false; /* reported lost already: its lease expired meanwhile */
			n->beat_down = false;
			cp_info("cluster: node %s: its lease expired while etcd was away (reported lost before)", n->name);
		}
	}
	/* entries of nodes whose lease ended are free again */
	for (unsigned i = c->n_nodes; i-- > 0;)
		if (!c->node[i].seen && strcmp(c->node[i].name, c->cfg->cluster.node) != 0)
			node_free(c, &c->node[i]);
	/* the epoch and every line take etcd's value */
	if (c->snap_epoch)
		epoch_catch_up(c);
	if (!c->snap_epoch) {
		struct cl_out o = {.kind = CL_OUT_EPOCH, .has_from = false, .to = c->e->epoch};
		snprintf(o.why, sizeof(o.why), "first node of the fleet");
		out_send(c, &o);
	} else if ((int32_t)(c->e->epoch - c->etcd_epoch) > 0) {
		struct cl_out o = {.kind = CL_OUT_EPOCH, .has_from = true, .from = c->etcd_epoch, .to = c->e->epoch};
		snprintf(o.why, sizeof(o.why), "node %s advanced it while etcd was away", c->cfg->cluster.node);
		out_send(c, &o);
	}
	uint8_t held = c->held;
	c->held = 0;
	if (c->auto_held) {
		for (unsigned i = 0; i < FG_LINES; i++)
			fg_line_set_auto_promote(&c->e->lines, i, (c->auto_saved >> i) & 1u);
		c->auto_held = false;
	}
	for (unsigned i = 0; i < FG_LINES; i++) {
		if (!c->snap_lines[i]) {
			/* first node to know this line: its state becomes the fleet's */
			struct cl_out o = {.kind = CL_OUT_LINE, .line = i, .create_only = true, .uid = FG_UID_AUDIT};
			enum fg_line_state b = c->e->lines.line[i].base;
			if (held & (1u << i))
				b = FG_LINE_ACTIVE;
			snprintf(o.state, sizeof(o.state), "%s", base_name(b));
			snprintf(o.event, sizeof(o.event), "initial");
			snprintf(o.why, sizeof(o.why), "initial state ([lines] of node %s)", c->cfg->cluster.node);
			out_send(c, &o);
			if (b == FG_LINE_ACTIVE && (held & (1u << i)))
				(void)line_apply(c, i, FG_LEV_OP_ACTIVE, FG_UID_AUDIT, "cluster", "etcd is back: hold lifted");
			continue;
		}
		struct cl_in fake;
		memset(&fake, 0, sizeof(fake));
		fake.kind = CL_IN_LINE;
		fake.line = i;
		snprintf(fake.state, sizeof(fake.state), "%s", c->line[i].state);
		snprintf(fake.event, sizeof(fake.event), "%s", c->line[i].event);
		snprintf(fake.node, sizeof(fake.node), "%s", c->line[i].node);
		snprintf(fake.why, sizeof(fake.why), "%s", c->line[i].why);
		fake.uid = c->line[i].uid;
		fake.mine = c->line[i].mine;
		bool mine = fake.mine;
		if (mine && (held & (1u << i))) {
			if (!strcmp(fake.state, "active"))
				(void)line_apply(c, i, FG_LEV_OP_ACTIVE, FG_UID_AUDIT, "cluster", "etcd is back: hold lifted");
			continue;
		}
		on_line(c, &fake);
	}
	points_revived(c);
	if (was_lost) {
		if (c->st.lost)
			c->st.recovered++;
		unsigned live = 0;
		for (unsigned i = 0; i < c->n_nodes; i++)
			live += c->node[i].live;
		cp_info("cluster: in step with etcd at revision %" PRId64 ": model epoch %u, %u live nodes", c->revision,
			c->e->epoch, live);
	}
}

static void on_down(struct cp_cluster *c, const struct cl_in *m)
{
	if (c->state == CL_LOST)
		return;
	bool was_up = c->state == CL_UP;
	c->state = CL_LOST;
	c->in_snapshot = false;
	c->lost_ns = cp_now_ns();
	c->st.lost++;
	cp_err("cluster: etcd lost: %s; serving on the last known state with every line held in shadow", m->why);
	hold_all(c, "etcd unreachable: held in shadow until it answers");
	if (was_up)
		raise_alert(c, "cluster_etcd_lost", m->why);
}

/* Another live node holds this node's name in etcd: this one does not join
 * (writes nothing), holds every line as if etcd were lost, and alerts once
 * per refusal episode; the thread retries until the name is free. */
static void on_duplicate(struct cp_cluster *c, const struct cl_in *m)
{
	if (c->state == CL_DUPLICATE)
		return;
	c->state = CL_DUPLICATE;
	c->in_snapshot = false;
	c->st.duplicates++;
	cp_err("cluster: another live node is already named %s in etcd (%s): this node does not join "
	       "(duplicate_node_name); every line held in shadow until the name is free",
	       c->cfg->cluster.node, m->why);
	hold_all(c, "cluster: duplicate node name: held in shadow");
	char reason[256];
	snprintf(reason, sizeof(reason), "duplicate_node_name %s: held by %s", c->cfg->cluster.node, m->why);
	raise_alert(c, "cluster_duplicate_node", reason);
}

static void on_ready(struct cp_loop *l, struct cp_poll *p, int revents)
{
	(void)l;
	struct cp_cluster *c = cp_container_of(p, struct cp_cluster, poll);
	if (revents < 0 || !c->t)
		return;
	struct cl_in m[64];
	unsigned n;
	while ((n = cl_etcd_pop_in(c->t, m, FG_ARRAY_LEN(m))) > 0) {
		for (unsigned i = 0; i < n; i++) {
			switch (m[i].kind) {
			case CL_IN_UP: on_up(c, &m[i]); break;
			case CL_IN_DOWN: on_down(c, &m[i]); break;
			case CL_IN_DUPLICATE: on_duplicate(c, &m[i]); break;
			case CL_IN_SNAP_END: on_snap_end(c, &m[i]); break;
			case CL_IN_LINE: on_line(c, &m[i]); break;
			case CL_IN_EPOCH: on_epoch(c, &m[i]); break;
			case CL_IN_NODE: on_node(c, &m[i]); break;
			case CL_IN_POINTS: on_points(c, &m[i]); break;
			case CL_IN_PEER_LEASE: on_peer_lease(c, &m[i]); break;
			case CL_IN_PEER_BEAT: on_peer_beat(c, &m[i]); break;
			case CL_IN_LEASE:
				c->lease_id = m[i].lease_id;
				c->lease_ttl = m[i].ttl;
				c->lease_seen_ns = cp_now_ns();
				break;
			}
		}
	}
}

/* ---- hooks ------------------------------------------------------------- */

/* A line's base state changed here (operator, audit, or this file). */
static void on_lines_changed(void *arg, const struct fg_line_change *chg)
{
	struct cp_cluster *c = arg;
	if (c->applying || chg->base_from == chg->base_to)
		return;
	struct cl_out o = {.kind = CL_OUT_LINE, .line = chg->line, .uid = chg->uid};
	snprintf(o.state, sizeof(o.state), "%s", base_name(chg->base_to));
	snprintf(o.event, sizeof(o.event), "%s", fg_line_event_name(chg->event));
	snprintf(o.why, sizeof(o.why), "%s", chg->why);
	out_send(c, &o);
	c->st.lines_sent++;
	if (c->state != CL_UP && chg->base_to == FG_LINE_ACTIVE) {
		/* invariant 1: never active on stale truth; etcd gets the
		 * intent, this node holds it until etcd is back */
		int r = line_apply(c, chg->line, FG_LEV_OP_SHADOW, FG_UID_AUDIT, "cluster",
				   "etcd unreachable: held in shadow until it answers");
		if (r == 1)
			c->held |= (uint8_t)(1u << chg->line);
	}
}

/* The engine's audit sink, interposed: every event goes on to the audit;
 * a local epoch advance also goes to etcd (compare-and-swap). */
static void sink_resolved(void *arg, const struct fg_seed_view *v, uint32_t epoch, const struct fg_seed_times *t)
{
	struct cp_cluster *c = arg;
	c->inner->resolved(c->inner_arg, v, epoch, t);
}

static void sink_canonical(void *arg, const struct fg_canon *cn, uint32_t epoch, uint64_t arrived_ns, unsigned src)
{
	struct cp_cluster *c = arg;
	c->inner->canonical(c->inner_arg, cn, epoch, arrived_ns, src);
}

static void sink_conflict(void *arg, uint16_t layer, uint32_t token_seq, unsigned line, uint32_t epoch)
{
	struct cp_cluster *c = arg;
	c->inner->conflict(c->inner_arg, layer, token_seq, line, epoch);
}

static void sink_conflict_from(void *arg, uint16_t layer, uint32_t token_seq, unsigned line, uint32_t epoch,
			       const char *src)
{
	struct cp_cluster *c = arg;
	if (c->inner->conflict_from)
		c->inner->conflict_from(c->inner_arg, layer, token_seq, line, epoch, src);
	else
		c->inner->conflict(c->inner_arg, layer, token_seq, line, epoch);
}

static void sink_epoch_storm(void *arg, bool began, const char *why, uint64_t hold_ns)
{
	struct cp_cluster *c = arg;
	if (c->inner->epoch_storm)
		c->inner->epoch_storm(c->inner_arg, began, why, hold_ns);
}

static void sink_epoch_changed(void *arg, uint32_t from, uint32_t to, const char *why)
{
	struct cp_cluster *c = arg;
	c->inner->epoch_changed(c->inner_arg, from, to, why);
	if (c->applying)
		return;
	struct cl_out o = {.kind = CL_OUT_EPOCH, .has_from = true, .from = from, .to = to};
	snprintf(o.why, sizeof(o.why), "%s", why ? why : "");
	out_send(c, &o);
	c->st.epochs_sent++;
}

static void sink_line_changed(void *arg, const struct fg_line_change *chg, const char *origin)
{
	struct cp_cluster *c = arg;
	c->inner->line_changed(c->inner_arg, chg, origin);
}

static const struct cp_engine_audit_ops cluster_sink = {
	.resolved = sink_resolved,
	.canonical = sink_canonical,
	.conflict = sink_conflict,
	.conflict_from = sink_conflict_from, /* the sender's name reaches the audit */
	.epoch_storm = sink_epoch_storm,     /* a storm's alert and hold, as without [cluster] */
	.epoch_changed = sink_epoch_changed,
	.line_changed = sink_line_changed,
};

/* Housekeeping, every 50 ms: the points this node sees alive (TLS peers and
 * UDP sources, cp_points_live) go to etcd when they change, and points a
 * vanished node alone served come back when this node sees them. */
#define CL_TICK_NS (50ull * 1000 * 1000)
static void on_tick(struct cp_loop *l, struct cp_timer *t)
{
	struct cp_cluster *c = cp_container_of(t, struct cp_cluster, tick);
	if (c->stopping)
		return;
	const struct cp_points *pt = &c->e->points;
	uint8_t alive = cp_points_live(pt), judged = (uint8_t)(c->local_judged | alive | cp_points_udp_mapped(pt));
	if (alive != c->local_alive || judged != c->local_judged) {
		c->local_alive = alive;
		c->local_judged = judged;
		struct cl_out o = {.kind = CL_OUT_POINTS, .alive = alive, .judged = judged};
		out_send(c, &o);
		c->st.points_sent++;
		points_revived(c);
	}
	if (cp_timer_start(l, t, CL_TICK_NS, on_tick) < 0)
		cp_err("cluster: cannot re-arm its tick");
}

/* ---- start / stop ------------------------------------------------------ */

int cp_cluster_new(struct cp_cluster **out, struct cp_loop *l, const struct fg_config *cfg, struct cp_engine *e,
		   struct cp_audit *a, char *why, size_t why_len)
{
	*out = NULL;
	if (!cfg->cluster.node[0])
		return 0;
	if (!e->audit || !cp_audit_is_running(a)) {
		snprintf(why, why_len, "the shadow audit must run before the cluster starts");
		return -EINVAL;
	}
	struct cp_cluster *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	c->cfg = cfg;
	c->e = e;
	c->audit = a;
	c->l = l;
	c->state = CL_WAITING;
	c->nodes_max = cfg->cluster.nodes_max ? cfg->cluster.nodes_max : 2;
	c->node = calloc(c->nodes_max, sizeof(*c->node));
	if (!c->node) {
		free(c);
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	c->local_alive = cp_points_live(&c->e->points);
	c->local_judged = (uint8_t)(c->local_alive | cp_points_udp_mapped(&c->e->points));
	int evfd;
	int r = cl_etcd_start(&c->t, cfg, &evfd, why, why_len);
	if (r < 0) {
		free(c->node);
		free(c);
		return r;
	}
	r = cp_poll_start(l, &c->poll, evfd, POLLIN, on_ready);
	if (r == 0 && (r = cp_timer_start(l, &c->tick, CL_TICK_NS, on_tick)) < 0)
		cp_poll_stop(l, &c->poll);
	if (r < 0) {
		snprintf(why, why_len, "cannot poll the cluster eventfd: %s", strerror(-r));
		cl_etcd_stop(c->t);
		free(c->node);
		free(c);
		return r;
	}
	c->inner = e->audit;
	c->inner_arg = e->audit_arg;
	cp_engine_set_audit(e, &cluster_sink, c);
	cp_audit_on_lines_changed(a, on_lines_changed, c);
	/* until etcd answers this node does not know the fleet's truth */
	hold_all(c, "cluster: waiting for etcd: held in shadow");
	struct cl_out o = {.kind = CL_OUT_POINTS, .alive = c->local_alive, .judged = c->local_judged};
	out_send(c, &o);
	cp_info("cluster: node %s, %u etcd endpoints, prefix %s, lease %u s, values authenticated with %s%s%s",
		cfg->cluster.node, cfg->cluster.n_endpoints, cfg->cluster.prefix, cfg->cluster.lease_ttl_s,
		cfg->cluster.key_file, cfg->cluster.user[0] ? ", etcd user " : "", cfg->cluster.user);
	if (!cfg->cluster.tls)
		for (unsigned i = 0; i < cfg->cluster.n_endpoints; i++)
			if (strncmp(cfg->cluster.endpoint[i], "http://127.", 11) != 0 &&
			    strncmp(cfg->cluster.endpoint[i], "http://[::1]", 12) != 0)
				cp_warn("cluster: etcd endpoint %s is plain http:// off loopback ([cluster] insecure = true): "
					"etcd traffic and its password travel in clear",
					cfg->cluster.endpoint[i]);
	*out = c;
	return 0;
}

void cp_cluster_free(struct cp_cluster *c)
{
	if (!c)
		return;
	c->stopping = true; /* the tick does not re-arm; a pending one finds this set */
	cp_poll_stop(c->l, &c->poll);
	cl_etcd_stop(c->t);
	c->t = NULL;
	cp_audit_on_lines_changed(c->audit, NULL, NULL);
	if (c->e->audit == &cluster_sink)
		cp_engine_set_audit(c->e, c->inner, c->inner_arg);
	free(c->node);
	free(c); /* the loop has stopped: no completion of c's poll or tick runs again */
}

/* ---- reporting ----------------------------------------------------------- */

json_t *cp_cluster_json(const struct cp_cluster *c)
{
	if (!c)
		return NULL;
	uint64_t now = cp_now_ns();
	json_t *nodes = json_array();
	for (unsigned i = 0; i < c->n_nodes; i++) {
		const struct cl_node *n = &c->node[i];
		json_array_append_new(
			nodes, json_pack("{s:s, s:b, s:b, s:b, s:b, s:s, s:I, s:i, s:i, s:I}", "node", n->name, "self",
					 strcmp(n->name, c->cfg->cluster.node) == 0, "live", n->live, "stale", n->stale,
					 "beat_down", n->beat_down,
					 "layers", n->layers,
					 "lease", (json_int_t)n->lease, "points_alive", n->alive, "points_judged", n->judged,
					 "for_ms", (json_int_t)((now - (n->live ? n->since_ns : n->gone_ns)) / 1000000u)));
	}
	json_t *lines = json_array();
	for (unsigned i = 0; i < FG_LINES; i++) {
		const struct cl_line *ln = &c->line[i];
		json_array_append_new(
			lines, json_pack("{s:i, s:s, s:s, s:s, s:b, s:s, s:s, s:I, s:s}", "line", i, "name",
					 fg_fano_line_name(i), "local", fg_line_state_name(fg_line_effective(&c->e->lines, i)),
					 "fleet", ln->known ? ln->state : "", "held", (c->held >> i) & 1u, "by_node", ln->node,
					 "event", ln->event, "uid", (json_int_t)ln->uid, "why", ln->why));
	}
	struct cl_etcd_stats es;
	cl_etcd_stats(c->t, &es);
	char ep[64];
	cl_etcd_endpoint(c->t, ep, sizeof(ep));
	json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:I, s:i, s:I, s:b, s:I, s:s, s:I, s:s, s:o, s:o, s:i, s:{s:I, s:I, "
			 "s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}}",
			 "node", c->cfg->cluster.node, "etcd", state_names[c->state], "endpoint", ep, "lease",
			 (json_int_t)c->lease_id, "lease_ttl_s", (json_int_t)c->lease_ttl, "stale_after_s",
			 (int)cl_lease_stale_s(&c->cfg->cluster), "revision",
			 (json_int_t)es.revision, "epoch_known", c->etcd_epoch_known, "model_epoch",
			 (json_int_t)c->e->epoch, "epoch_by", c->epoch_by, "etcd_epoch", (json_int_t)c->etcd_epoch,
			 "prefix", c->cfg->cluster.prefix, "nodes", nodes, "lines", lines, "points_degraded_by_cluster",
			 c->cluster_down, "counters", "lines_applied", (json_int_t)c->st.lines_applied, "epochs_applied",
			 (json_int_t)c->st.epochs_applied, "lines_sent", (json_int_t)c->st.lines_sent, "epochs_sent",
			 (json_int_t)c->st.epochs_sent, "etcd_lost", (json_int_t)c->st.lost, "etcd_recovered",
			 (json_int_t)c->st.recovered, "nodes_gone", (json_int_t)c->st.nodes_gone, "nodes_stale",
			 (json_int_t)c->st.nodes_stale, "nodes_back", (json_int_t)c->st.nodes_back, "lease_probes",
			 (json_int_t)es.lease_probes, "lease_probe_failures", (json_int_t)es.lease_probe_failures, "holds",
			 (json_int_t)c->st.holds, "bad_values", (json_int_t)(c->st.bad_values + es.refused_malformed), "sends_refused",
			 (json_int_t)c->st.sends_refused, "duplicate_refusals", (json_int_t)c->st.duplicates, "name_claims_refused", (json_int_t)es.duplicate_refusals, "requests", (json_int_t)es.requests, "request_failures",
			 (json_int_t)es.request_failures, "watch_events", (json_int_t)es.watch_events, "cas_won",
			 (json_int_t)es.cas_won, "cas_lost", (json_int_t)es.cas_lost, "reconnects",
			 (json_int_t)es.reconnects);
	if (!j)
		return NULL;
	json_object_set_new(j, "beat_ms", json_integer(cl_beat_down_ms(&c->cfg->cluster) ? c->cfg->cluster.beat_ms : 0));
	json_object_set_new(j, "beat_down_ms", json_integer(cl_beat_down_ms(&c->cfg->cluster)));
	json_t *ctr = json_object_get(j, "counters");
	json_object_set_new(ctr, "nodes_beat_down", json_integer((json_int_t)c->st.nodes_beat_down));
	json_object_set_new(ctr, "nodes_beat_resumed", json_integer((json_int_t)c->st.nodes_beat_resumed));
	json_object_set_new(ctr, "beats_sent", json_integer((json_int_t)es.beats_sent));
	json_object_set_new(ctr, "beat_failures", json_integer((json_int_t)es.beat_failures));
	json_object_set_new(ctr, "beats_seen", json_integer((json_int_t)es.beats_seen));
	json_object_set_new(ctr, "refused_unauthenticated", json_integer((json_int_t)es.refused_unauthenticated));
	json_object_set_new(ctr, "refused_unbound", json_integer((json_int_t)es.refused_unbound));
	json_object_set_new(ctr, "refused_replayed", json_integer((json_int_t)es.refused_replayed));
	json_object_set_new(ctr, "refused_epoch", json_integer((json_int_t)es.refused_epoch));
	json_object_set_new(ctr, "refused_malformed", json_integer((json_int_t)(es.refused_malformed + c->st.bad_values)));
	json_object_set_new(ctr, "nodes_refused", json_integer((json_int_t)(es.refused_nodes_full + c->st.nodes_refused)));
	json_object_set_new(ctr, "foreign_keys", json_integer((json_int_t)es.foreign_keys));
	json_object_set_new(ctr, "names_reclaimed", json_integer((json_int_t)es.names_reclaimed));
	json_object_set_new(ctr, "auth_failures", json_integer((json_int_t)es.auth_failures));
	json_object_set_new(ctr, "down_records", json_integer((json_int_t)es.down_records));
	json_object_set_new(ctr, "nodes_watched", json_integer((json_int_t)es.watched));
	json_object_set_new(j, "nodes_max", json_integer((json_int_t)c->nodes_max));
	return j;
}

char *cp_cluster_metrics_text(const struct cp_cluster *c)
{
	if (!c)
		return NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	if (!f)
		return NULL;
	struct cl_etcd_stats es;
	cl_etcd_stats(c->t, &es);
	unsigned live = 0, beat_down = 0;
	for (unsigned i = 0; i < c->n_nodes; i++) {
		live += c->node[i].live;
		beat_down += c->node[i].keyed && c->node[i].beat_down;
	}
#define G(name, help, v) fprintf(f, "# HELP fanogate_cluster_" name " " help "\n# TYPE fanogate_cluster_" name " gauge\nfanogate_cluster_" name " %llu\n", (unsigned long long)(v))
#define C(name, help, v) fprintf(f, "# HELP fanogate_cluster_" name " " help "\n# TYPE fanogate_cluster_" name " counter\nfanogate_cluster_" name " %llu\n", (unsigned long long)(v))
	G("etcd_up", "1 while this node is in step with etcd (0: lines held in shadow)", c->state == CL_UP);
	G("nodes_live", "fanogate nodes whose etcd lease holds, this one included", live);
	G("epoch", "the fleet's model epoch as etcd last said", c->etcd_epoch);
	G("lines_held", "lines held in shadow because etcd is unreachable", __builtin_popcount(c->held));
	G("points_degraded", "points down because the only node that saw them alive is gone",
	  __builtin_popcount(c->cluster_down));
	C("lines_applied_total", "line changes from other nodes applied here", c->st.lines_applied);
	C("epochs_applied_total", "model epoch advances from other nodes applied here", c->st.epochs_applied);
	C("lines_sent_total", "line changes of this node sent to etcd", c->st.lines_sent);
	C("epochs_sent_total", "model epoch advances of this node sent to etcd (compare-and-swap)", c->st.epochs_sent);
	C("epoch_cas_lost_total", "epoch compare-and-swaps another node won first", es.cas_lost);
	C("etcd_lost_total", "times etcd became unreachable", c->st.lost);
	G("nodes_beat_down", "other nodes whose heartbeats stopped while their lease still holds (reported lost)", beat_down);
	C("nodes_gone_total", "other nodes reported lost (heartbeats stopped, lease stopped being refreshed, or expired)",
	  c->st.nodes_gone);
	C("nodes_stale_total", "of those, reported lost because their lease stopped being refreshed, before it expired",
	  c->st.nodes_stale);
	C("nodes_back_total", "nodes reported lost that beat and refreshed their lease again before it expired",
	  c->st.nodes_back);
	C("nodes_beat_down_total", "times another node's heartbeats stopped for beat_down_ms (a death or a stall)",
	  c->st.nodes_beat_down);
	C("nodes_beat_resumed_total", "of those, nodes that beat again before their lease expired (a stall: a false down)",
	  c->st.nodes_beat_resumed);
	C("beats_sent_total", "heartbeats of this node sent to etcd (beats/<node>, one put each)", es.beats_sent);
	C("beat_failures_total", "heartbeats of this node that failed (timeout, HTTP error)", es.beat_failures);
	C("lease_probe_failures_total", "probes of another node's lease (timetolive) that failed (its expiry still counts)",
	  es.lease_probe_failures);
	C("requests_total", "etcd requests", es.requests);
	C("request_failures_total", "etcd requests that failed", es.request_failures);
	fprintf(f, "# HELP fanogate_cluster_values_refused_total etcd values not applied, by reason (docs/cluster.md "
		   "\"Authenticated values\")\n# TYPE fanogate_cluster_values_refused_total counter\n");
	fprintf(f, "fanogate_cluster_values_refused_total{reason=\"unauthenticated\"} %llu\n",
		(unsigned long long)es.refused_unauthenticated);
	fprintf(f, "fanogate_cluster_values_refused_total{reason=\"unbound\"} %llu\n", (unsigned long long)es.refused_unbound);
	fprintf(f, "fanogate_cluster_values_refused_total{reason=\"replayed\"} %llu\n", (unsigned long long)es.refused_replayed);
	fprintf(f, "fanogate_cluster_values_refused_total{reason=\"epoch\"} %llu\n", (unsigned long long)es.refused_epoch);
	fprintf(f, "fanogate_cluster_values_refused_total{reason=\"malformed\"} %llu\n",
		(unsigned long long)(es.refused_malformed + c->st.bad_values));
	C("foreign_keys_total", "keys under the prefix outside fanogate's schema (ignored)", es.foreign_keys);
	C("nodes_refused_total", "nodes not tracked because [cluster] nodes_max nodes are tracked already",
	  es.refused_nodes_full + c->st.nodes_refused);
	G("nodes_watched", "other nodes in this node's beat window (their beats watched, their leases probed)", es.watched);
	C("down_records_total", "down/ records this node wrote (beats of its window's peers stopped or resumed)",
	  es.down_records);
	C("names_reclaimed_total", "times nodes/<this name> was held by no live node's value and taken over",
	  es.names_reclaimed);
	C("auth_failures_total", "etcd refusals of this node's user, password, token or permissions", es.auth_failures);
	C("duplicate_refusals_total", "times this node did not join: another live node has its name (duplicate_node_name)",
	  c->st.duplicates);
	C("sends_refused_total", "changes not sent: the queue to the cluster thread was full", c->st.sends_refused);
#undef G
#undef C
	fclose(f);
	return text;
}

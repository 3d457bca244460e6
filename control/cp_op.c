/* cp_op.c - the operator socket: fanoctl's commands on the loop (see
 * cp_op.h). Loop thread only.
 *
 * Connection life: accept -> SO_PEERCRED check -> recv until '\n' (at most
 * CP_OP_REQ_MAX bytes, 10 s) -> parse (control/proto/cp_op_parse.c: framing,
 * JSON, commands, argument checks) -> execute -> [wait until the audit
 * record is durable] -> send the reply -> close. One op in flight per connection, so
 * a connection is freed from its last completion. */
#include "cluster/cp_cluster.h"
#include "cp_op.h"

#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cp_claim.h"
#include "cp_harden.h"
#include "cp_audit.h"
#include "cp_log.h"
#include "cp_reload.h"
#include "cp_counters.h"
#include "cp_status.h"
#include "fg/counters.h"

#define CP_OP_TIMEOUT_NS (10ull * 1000 * 1000 * 1000)
#define CP_OP_HOUSE_NS (200ull * 1000 * 1000)

struct cp_opconn {
	struct cp_small_conn sc; /* list, deadline, dead (cp_small_srv) */
	struct cp_opsrv *o;
	int fd;
	struct cp_op recv_op, send_op;
	bool recv_armed, send_armed, waiting;
	uint32_t uid;
	int32_t pid;
	uint64_t wait_seq;
	json_t *pending; /* reply held until wait_seq is durable */
	char *out;
	size_t out_len, out_off;
	size_t len;
	char buf[CP_OP_REQ_MAX];
	/* Last: its control buffer is a union with struct cmsghdr, whose
	 * flexible array member makes the type variable-sized; anywhere else
	 * it is a GNU extension clang refuses (-Wgnu-variable-sized-type-not-at-end). */
	struct cp_harden_rx rx; /* recvmsg: passed fds are closed and refused */
};


static void opc_recv_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags);
static void opc_send_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags);

static void opc_free(struct cp_opconn *c)
{
	cp_small_srv_unlink(&c->o->ls, &c->sc);
	if (c->fd >= 0)
		close(c->fd);
	json_decref(c->pending);
	free(c->out);
	free(c);
}

static void opc_close(struct cp_opconn *c)
{
	c->sc.dead = true;
	if (c->recv_armed || c->send_armed) {
		shutdown(c->fd, SHUT_RDWR); /* the op in flight completes; it frees */
		return;
	}
	opc_free(c);
}

static void opc_reply(struct cp_opconn *c, json_t *rep)
{
	char *s = rep ? json_dumps(rep, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(rep);
	if (!s) {
		opc_close(c);
		return;
	}
	size_t n = strlen(s);
	c->out = realloc(s, n + 1);
	if (!c->out) {
		free(s);
		opc_close(c);
		return;
	}
	c->out[n] = '\n';
	c->out_len = n + 1;
	c->out_off = 0;
	c->send_op.fn = opc_send_done;
	if (cp_loop_send(c->o->loop, &c->send_op, c->fd, c->out, c->out_len) < 0) {
		opc_close(c);
		return;
	}
	c->send_armed = true;
	c->o->served++;
}

static json_t *err_reply(const char *reason)
{
	return json_pack("{s:b,s:s}", "ok", 0, "error", reason);
}

/* ---- commands ------------------------------------------------------------- */
/* A percentile of the window's leads in us, null when it has none. */
static json_t *lead_us(const struct fg_lead_window *w, double q)
{
	int64_t v = fg_lead_window_pct(w, q);
	return v == FG_LEAD_NONE ? json_null() : json_integer((json_int_t)(v / 1000));
}

static json_t *line_json(const struct fg_lines *ls, unsigned i)
{
	const struct fg_line *ln = &ls->line[i];
	json_t *j = json_pack("{s:i,s:s,s:s,s:s,s:b,s:I,s:I,s:I,s:I}", "line", (int)i, "name", fg_fano_line_name(i),
			      "state", fg_line_state_name(fg_line_effective(ls, i)), "base", fg_line_state_name(ln->base),
			      "auto_promote", ln->auto_promote, "clean", (json_int_t)ln->clean, "verdicts",
			      (json_int_t)ln->verdicts, "divergences", (json_int_t)ln->divergences, "conflicts",
			      (json_int_t)ln->conflicts);
	/* The value of a jump over the current window (docs/lines.md): how far
	 * ahead of the canonical chain its compared seeds resolved. */
	json_object_set_new(j, "leads", json_integer((json_int_t)ln->lead.n));
	json_object_set_new(j, "ahead", json_real(fg_lead_window_share_ahead(&ln->lead)));
	json_object_set_new(j, "lead_p50_us", lead_us(&ln->lead, 50));
	json_object_set_new(j, "lead_p99_us", lead_us(&ln->lead, 99));
	char why[128];
	fg_line_promotion(ls, i, cp_now_ns(), why, sizeof(why));
	if (why[0])
		json_object_set_new(j, "promotion", json_string(why));
	return j;
}

static json_t *cmd_lines(struct cp_opsrv *o)
{
	json_t *arr = json_array();
	for (unsigned i = 0; i < FG_LINES; i++)
		json_array_append_new(arr, line_json(&o->engine->lines, i));
	const struct fg_line_policy *p = &o->engine->lines.policy;
	return json_pack("{s:b,s:o,s:I,s:{s:b,s:I,s:I,s:f,s:I}}", "ok", 1, "lines", arr, "model_epoch",
			 (json_int_t)o->engine->epoch, "policy", "auto_promote", p->auto_promote, "promote_count",
			 (json_int_t)p->promote_count, "promote_ms", (json_int_t)(p->promote_ns / 1000000u),
			 "promote_min_ahead", p->min_ahead, "promote_min_lead_us", (json_int_t)p->min_lead_us);
}

static json_t *cmd_status(struct cp_opsrv *o)
{
	const struct cp_status_src src = {.cfg = o->cfg, .config_path = o->config_path, .engine = o->engine,
					  .srv = o->srv, .b = o->b, .metrics_port = o->metrics_port,
					  .started_ns = o->started_ns, .reload = o->reload ? &o->reload->st : NULL,
					  .cluster = o->cluster};
	return cp_status_json(&src);
}

/* req: a parsed CP_OP_CMD_LINE request (cp_op_parse checked its arguments). */
static json_t *cmd_line(struct cp_opconn *c, const struct cp_op_req *req)
{
	struct cp_opsrv *o = c->o;
	unsigned line = req->line;
	char whybuf[CP_OP_AUDIT_WHY_MAX];
	cp_op_why_format(whybuf, sizeof(whybuf), req, c->uid, c->pid);
	uint64_t seq;
	int r;
	if (req->op == CP_OP_LINE_AUTO_PROMOTE) {
		/* audited like a state change: one LINE record (op_auto_promote) */
		char onbuf[CP_OP_AUDIT_WHY_MAX + 8];
		const char *rest = strchr(whybuf, '(');
		snprintf(onbuf, sizeof(onbuf), "fanoctl line auto_promote %s %s", req->on ? "on" : "off", rest ? rest : "");
		r = cp_audit_auto_promote(o->srv->audit, line, req->on, c->uid, c->pid, "fanoctl", onbuf, &seq);
		goto answer;
	}
	enum fg_line_event ev;
	switch (req->op) {
	case CP_OP_LINE_ENABLE: ev = FG_LEV_OP_ENABLE; break;
	case CP_OP_LINE_DISABLE: ev = FG_LEV_OP_DISABLE; break;
	case CP_OP_LINE_SHADOW: ev = FG_LEV_OP_SHADOW; break;
	case CP_OP_LINE_ACTIVE: ev = FG_LEV_OP_ACTIVE; break;
	default: return err_reply(cp_op_reason_name(CP_OP_R_UNKNOWN_OP));
	}
	r = cp_audit_line_op(o->srv->audit, line, ev, c->uid, c->pid, whybuf, &seq);
answer:
	if (r == -EALREADY)
		return err_reply("already");
	if (r == -EIO)
		return err_reply("audit_failed");
	if (r == -ENOBUFS)
		return err_reply("audit_busy");
	if (r < 0)
		return err_reply("refused");
	json_t *rep = json_pack("{s:b,s:b,s:o}", "ok", 1, "changed", r == 1, "line", line_json(&o->engine->lines, line));
	if (r == 1 && !cp_audit_is_durable(o->srv->audit, seq)) {
		c->waiting = true;
		c->wait_seq = seq;
		c->pending = rep;
		return NULL;
	}
	return rep;
}

static json_t *cmd_slots(struct cp_opsrv *o)
{
	struct cp_engine *e = o->engine;
	json_t *j = json_pack("{s:b,s:s,s:I,s:I,s:I,s:I}", "ok", 1, "mode", e->lanes_mode ? "dataplane" : "local",
			      "capacity", (json_int_t)o->cfg->slot_capacity, "resolved", (json_int_t)e->st.resolved,
			      "expired", (json_int_t)e->st.expired, "poisoned", (json_int_t)e->st.poisoned);
	if (j && !e->lanes_mode) {
		json_t *sh = json_pack("{s:i,s:I,s:I,s:I,s:I,s:I,s:I}", "shard", 0, "in_use", (json_int_t)e->slots.in_use,
				       "opened", (json_int_t)e->slots.opened, "resolved", (json_int_t)e->slots.resolved,
				       "expired", (json_int_t)e->slots.expired, "poisoned", (json_int_t)e->slots.poisoned,
				       "reclaimed", (json_int_t)e->slots.reclaimed);
		json_object_set_new(j, "shards", json_pack("[o]", sh));
	}
	return j;
}

/* req: a parsed CP_OP_CMD_SLOT request (layer below [slots] layers). */
static json_t *cmd_slot(struct cp_opsrv *o, const struct cp_op_req *req)
{
	uint16_t layer = req->layer;
	uint32_t tok = req->token_seq;
	struct cp_engine *e = o->engine;
	if (!e->lanes_mode) {
		struct fg_slot_info info;
		if (fg_slot_lookup(&e->slots, tok, layer, &info) == 0) {
			char fp[17];
			snprintf(fp, sizeof(fp), "%016llx", (unsigned long long)info.fingerprint);
			return json_pack("{s:b,s:i,s:I,s:s,s:i,s:i,s:s}", "ok", 1, "layer", (int)layer, "token_seq",
					 (json_int_t)tok, "state", fg_slot_state_name(info.state), "landed", info.landed,
					 "expected", info.expected, "fingerprint", fp);
		}
	}
	const uint8_t *fr = NULL;
	size_t len = 0;
	enum fg_slot_state st = cp_engine_lookup(e, layer, tok, &fr, &len);
	return json_pack("{s:b,s:i,s:I,s:s}", "ok", 1, "layer", (int)layer, "token_seq", (json_int_t)tok, "state",
			 st == FG_SLOT_FREE ? "unknown" : fg_slot_state_name(st));
}

static json_t *cmd_peers(struct cp_opsrv *o)
{
	json_t *arr = json_array();
	static const char *const states[] = {"tls", "http", "websocket"};
	for (struct cp_conn *c = o->srv->all; c; c = c->next) {
		if (cp_conn_is_dead(c))
			continue;
		json_array_append_new(arr, json_pack("{s:s,s:s,s:s,s:s,s:I}", "peer", c->peer, "state", states[c->state],
						     "role", c->role ? c->role : "-", "cn",
						     c->tls.peer_verified ? c->tls.cn : "-", "send_queue",
						     (json_int_t)c->sq_bytes));
	}
	json_t *udp = json_array();
	uint64_t now = cp_now_ns();
	for (unsigned i = 0; i < o->engine->n_peers; i++) {
		const struct cp_peer *p = &o->engine->peers[i];
		char host[INET6_ADDRSTRLEN] = "?";
		inet_ntop(p->family == 6 ? AF_INET6 : AF_INET, p->addr, host, sizeof(host));
		json_array_append_new(udp, json_pack("{s:s,s:i,s:I,s:I}", "addr", host, "port", (int)p->port, "last_seen_ms",
						     (json_int_t)(now > p->last_ns ? (now - p->last_ns) / 1000000ull : 0),
						     "reports", (json_int_t)p->reports));
	}
	json_t *down = json_array();
	for (unsigned p = 1; p <= FG_POINTS; p++)
		if (o->engine->lines.points_down & (1u << (p - 1)))
			json_array_append_new(down, json_integer(p));
	return json_pack("{s:b,s:o,s:o,s:o}", "ok", 1, "tls_peers", arr, "udp_peers", udp, "points_down", down);
}

json_t *cp_op_dp_stats(const struct fg_boundary *b)
{
	json_t *dp = json_object();
	if (!dp)
		return NULL;
	for (unsigned c = 0; c < FG_C__COUNT; c++) {
		uint64_t sum = 0;
		for (unsigned i = 0; i < b->n_lanes; i++)
			sum += atomic_load_explicit(&b->counters[i].c[c], memory_order_relaxed);
		json_object_set_new(dp, fg_dp_counter_defs[c].name, json_integer((json_int_t)sum));
	}
	for (unsigned x = 0; x < DP_X__COUNT; x++) {
		uint64_t sum = 0;
		for (unsigned i = 0; b->xcounters && i < b->n_lanes; i++)
			sum += atomic_load_explicit(&b->xcounters[i].x[x], memory_order_relaxed);
		json_object_set_new(dp, fg_dp_xcounter_defs[x].name, json_integer((json_int_t)sum));
	}
	char key[64];
	for (unsigned o = 0; o < FG_O__COUNT; o++) {
		uint64_t sum = 0;
		for (unsigned i = 0; b->xcounters && i < b->n_lanes; i++)
			sum += atomic_load_explicit(&b->xcounters[i].outcome[o], memory_order_relaxed);
		fg_dp_outcome_key(o, key, sizeof(key));
		json_object_set_new(dp, key, json_integer((json_int_t)sum));
	}
	return dp;
}

/* The object at a dotted path under root ("engine_tls.lanes"), made on
 * first use; NULL without memory. */
static json_t *stats_section(json_t *root, const char *path)
{
	char part[32];
	json_t *at = root;
	while (at && *path) {
		size_t n = strcspn(path, ".");
		snprintf(part, sizeof(part), "%.*s", (int)(n < sizeof(part) ? n : sizeof(part) - 1), path);
		json_t *next = json_object_get(at, part);
		if (!next) {
			next = json_object();
			if (json_object_set_new(at, part, next))
				return NULL;
		}
		at = next;
		path += n + (path[n] == '.');
	}
	return at;
}

json_t *cp_op_stats(const struct cp_opsrv *o)
{
	const struct cp_engine_stats *es = &o->engine->st;
	json_t *j = json_object();
	if (!j)
		return NULL;
	json_object_set_new(j, "ok", json_true());
	/* every plain counter of the control plane's registry (cp_counters.h) */
	const struct cp_counter_src src = {.srv = o->srv, .engine = o->engine, .loop = o->loop, .b = o->b,
					   .op_fds = &o->fd_st};
	for (unsigned i = 0; i < cp_counter_count; i++) {
		const struct cp_counter_def *d = &cp_counter_defs[i];
		json_t *sec = stats_section(j, d->section);
		if (sec)
			json_object_set_new(sec, d->key, json_integer((json_int_t)cp_counter_value(d, &src)));
	}
	/* the labelled families: admission refusals and evictions by reason
	 * (cp_admit.h), outcomes and malformed frames by name */
	json_t *adm = json_object();
	for (unsigned i = 0; adm && i < CP_ADMIT_R__COUNT; i++)
		json_object_set_new(adm, cp_admit_reason_name((enum cp_admit_reason)i),
				    json_integer((json_int_t)o->srv->admit.st[i]));
	json_t *tls = stats_section(j, "tls");
	if (tls)
		json_object_set_new(tls, "admission", adm);
	else
		json_decref(adm);
	json_t *outcomes = json_object();
	for (unsigned i = 0; outcomes && i < FG_O__COUNT; i++)
		if (es->outcome[i])
			json_object_set_new(outcomes, fg_outcome_name((enum fg_outcome)i), json_integer((json_int_t)es->outcome[i]));
	json_t *malformed = json_object();
	for (unsigned i = 1; malformed && i < FG_R__COUNT; i++)
		if (es->reason[i])
			json_object_set_new(malformed, fg_reason_name((int)i), json_integer((json_int_t)es->reason[i]));
	json_t *eng = stats_section(j, "engine_tls");
	if (eng) {
		json_object_set_new(eng, "outcomes", outcomes);
		json_object_set_new(eng, "malformed", malformed);
	} else {
		json_decref(outcomes);
		json_decref(malformed);
	}
	json_t *op = stats_section(j, "operator"); /* the operator socket's own refused peers */
	if (op)
		json_object_set_new(op, "refused", json_integer((json_int_t)o->refused));
	if (o->b && o->b->counters)
		json_object_set_new(j, "dataplane", cp_op_dp_stats(o->b));
	if (o->srv->audit)
		json_object_set_new(j, "audit", json_pack("{s:I,s:I,s:I,s:I}", "resolved_in",
							  (json_int_t)o->srv->audit->st.resolved, "canonical_in",
							  (json_int_t)o->srv->audit->st.canonical, "conflicts",
							  (json_int_t)o->srv->audit->st.conflict, "refused",
							  (json_int_t)o->srv->audit->st.refused));
	return j;
}

/* config reload (cp_reload.h): answered once its audit records are durable. */
/* fanoctl cluster: [cluster]'s view of the fleet (control/cluster/). */
static json_t *cmd_cluster(struct cp_opsrv *o)
{
	json_t *cl = cp_cluster_json(o->cluster);
	if (!cl)
		return json_pack("{s:b,s:s,s:s}", "ok", 0, "error", "cluster_off", "detail",
				 "[cluster] node is not set: this appliance is on its own");
	json_object_set_new(cl, "ok", json_true());
	return cl;
}

static json_t *cmd_reload(struct cp_opconn *c)
{
	if (!c->o->reload)
		return err_reply("no_config_file");
	struct cp_reload_result *res = malloc(sizeof(*res));
	if (!res)
		return err_reply("no_memory");
	int r = cp_reload_run(c->o->reload, c->uid, c->pid, "fanoctl", res);
	json_t *rep, *ch = json_array();
	for (unsigned i = 0; i < res->n_changes; i++)
		json_array_append_new(ch, json_string(res->changes[i]));
	if (r < 0)
		rep = json_pack("{s:b,s:s,s:s,s:o}", "ok", 0, "error", res->error, "detail", res->detail, "changes", ch);
	else
		rep = json_pack("{s:b,s:b,s:o}", "ok", 1, "changed", r == 1, "changes", ch);
	if (rep && !cp_audit_is_durable(c->o->srv->audit, res->seq)) {
		c->waiting = true;
		c->wait_seq = res->seq;
		c->pending = rep;
		rep = NULL;
	}
	free(res);
	return rep;
}

static void opc_execute(struct cp_opconn *c)
{
	struct cp_opsrv *o = c->o;
	const struct cp_op_limits lim = {.layers = o->cfg->layers};
	struct cp_op_req req;
	int r = cp_op_parse(c->buf, c->len, &lim, &req);
	json_t *rep;
	if (r < 0) {
		rep = err_reply(cp_op_reason_name(r));
	} else {
		switch (req.cmd) {
		case CP_OP_CMD_STATUS: rep = cmd_status(o); break;
		case CP_OP_CMD_LINES: rep = cmd_lines(o); break;
		case CP_OP_CMD_LINE: rep = cmd_line(c, &req); break;
		case CP_OP_CMD_SLOTS: rep = cmd_slots(o); break;
		case CP_OP_CMD_SLOT: rep = cmd_slot(o, &req); break;
		case CP_OP_CMD_PEERS: rep = cmd_peers(o); break;
		case CP_OP_CMD_STATS: rep = cp_op_stats(o); break;
		case CP_OP_CMD_RELOAD: rep = cmd_reload(c); break;
		case CP_OP_CMD_CLUSTER: rep = cmd_cluster(o); break;
		default: rep = err_reply(cp_op_reason_name(CP_OP_R_UNKNOWN_COMMAND)); break;
		}
	}
	cp_debug("operator: uid %u pid %d: %s", (unsigned)c->uid, (int)c->pid,
		 r < 0 ? cp_op_reason_name(r) : cp_op_cmd_name(req.cmd));
	if (c->waiting)
		return; /* answered from the durable callback */
	opc_reply(c, rep ? rep : err_reply("no_memory"));
}

static void op_durable(void *arg, uint64_t seq)
{
	struct cp_opsrv *o = arg;
	for (struct cp_small_conn *sc = o->ls.conns, *n; sc; sc = n) {
		n = sc->next; /* opc_reply may free c */
		struct cp_opconn *c = cp_container_of(sc, struct cp_opconn, sc);
		if (c->waiting && !c->sc.dead && seq >= c->wait_seq) {
			c->waiting = false;
			json_t *rep = c->pending;
			c->pending = NULL;
			opc_reply(c, rep);
		}
	}
}

/* ---- I/O -------------------------------------------------------------------- */
static void opc_arm_recv(struct cp_opconn *c)
{
	c->recv_op.fn = opc_recv_done;
	if (cp_harden_recv(c->o->loop, &c->recv_op, &c->rx, c->fd, c->buf + c->len, sizeof(c->buf) - c->len) < 0) {
		opc_close(c);
		return;
	}
	c->recv_armed = true;
}

static void opc_recv_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	(void)l; (void)flags;
	struct cp_opconn *c = cp_container_of(op, struct cp_opconn, recv_op);
	c->recv_armed = false;
	if ((res = cp_harden_recv_check(&c->rx, res, &c->o->fd_st)) == -EBADMSG && !c->sc.dead) {
		opc_reply(c, err_reply(CP_HARDEN_FD_REASON));
		return;
	}
	if (c->sc.dead || res <= 0) {
		opc_close(c);
		return;
	}
	c->len += (size_t)res;
	ssize_t end = cp_op_frame(c->buf, c->len);
	if (end >= 0) {
		c->len = (size_t)end;
		opc_execute(c);
		return;
	}
	if (end != -CP_OP_R_INCOMPLETE) {
		opc_reply(c, err_reply(cp_op_reason_name(end)));
		return;
	}
	opc_arm_recv(c);
}

static void opc_send_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	(void)flags;
	struct cp_opconn *c = cp_container_of(op, struct cp_opconn, send_op);
	c->send_armed = false;
	if (!c->sc.dead && res > 0 && c->out_off + (size_t)res < c->out_len) {
		c->out_off += (size_t)res;
		if (cp_loop_send(l, &c->send_op, c->fd, c->out + c->out_off, c->out_len - c->out_off) == 0) {
			c->send_armed = true;
			return;
		}
	}
	opc_close(c); /* one request per connection */
}

static bool peer_allowed(const struct cp_opsrv *o, const struct ucred *cr)
{
	if (cr->uid == 0 || cr->uid == geteuid())
		return true;
	if (!o->have_group)
		return false;
	if (cr->gid == o->group)
		return true;
	struct passwd pw, *pwp = NULL;
	char pbuf[4096];
	if (getpwuid_r(cr->uid, &pw, pbuf, sizeof(pbuf), &pwp) != 0 || !pwp)
		return false;
	gid_t groups[256];
	int ng = (int)FG_ARRAY_LEN(groups);
	if (getgrouplist(pw.pw_name, pw.pw_gid, groups, &ng) < 0)
		return false;
	for (int i = 0; i < ng; i++)
		if (groups[i] == o->group)
			return true;
	return false;
}

/* cp_small_srv: a connection arrived. */
static void op_on_accept(struct cp_small_srv *s, int fd)
{
	struct cp_opsrv *o = cp_container_of(s, struct cp_opsrv, ls);
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	if (s->stopping || s->n_conns >= CP_OP_CONNS_MAX || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) {
		o->refused++;
		close(fd);
	} else if (!peer_allowed(o, &cr)) {
		o->refused++;
		cp_warn("operator: uid %u pid %d refused (not root, not uid %u, not in the operator group)",
			(unsigned)cr.uid, (int)cr.pid, (unsigned)geteuid());
		static const char msg[] = "{\"ok\":false,\"error\":\"permission_denied\"}\n";
		ssize_t w = send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w;
		close(fd);
	} else {
		struct cp_opconn *c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
		} else {
			c->o = o;
			c->fd = fd;
			c->uid = cr.uid;
			c->pid = cr.pid;
			cp_small_srv_link(s, &c->sc, CP_OP_TIMEOUT_NS);
			opc_arm_recv(c);
		}
	}
}

/* cp_small_srv: a connection's 10 s are up. */
static void op_on_deadline(struct cp_small_srv *s, struct cp_small_conn *sc)
{
	(void)s;
	struct cp_opconn *c = cp_container_of(sc, struct cp_opconn, sc);
	if (c->waiting) {
		/* the audit did not make the record durable in time */
		c->waiting = false;
		json_decref(c->pending);
		c->pending = NULL;
		opc_reply(c, err_reply("audit_timeout"));
	} else {
		opc_close(c);
	}
}

static void op_on_stop(struct cp_small_srv *s, struct cp_small_conn *sc)
{
	(void)s;
	opc_close(cp_container_of(sc, struct cp_opconn, sc));
}

static const struct cp_small_srv_ops op_srv_ops = {
	.name = "operator",
	.house_ns = CP_OP_HOUSE_NS,
	.on_accept = op_on_accept,
	.on_deadline = op_on_deadline,
	.on_stop = op_on_stop,
};

/* [operator] group must be able to reach the socket: its directory needs
 * search permission for the group (/run/fanogate, made 0750 root:root
 * by the daemon or by systemd's RuntimeDirectory, kept the
 * group out). A directory the daemon's uid owns and nobody else may write
 * (its own runtime directory) is given to the group with g+x added; any
 * other directory (a shared /tmp, someone else's) is left alone, with a
 * warning when the group cannot search it. */
static int op_dir_reach(const char *path, gid_t group, char *why, size_t why_len)
{
	char dir[FG_PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		return 0; /* relative to the working directory: not ours to judge */
	if (slash == dir)
		slash[1] = '\0'; /* "/" */
	else
		*slash = '\0';
	struct stat st;
	if (stat(dir, &st) < 0) {
		int e = errno;
		snprintf(why, why_len, "[operator] socket: %s: %s", dir, strerror(e));
		return -e;
	}
	if ((st.st_mode & S_IXOTH) || (st.st_gid == group && (st.st_mode & S_IXGRP)))
		return 0;
	if (st.st_uid == geteuid() && !(st.st_mode & (S_IWGRP | S_IWOTH))) {
		if ((st.st_gid != group && chown(dir, (uid_t)-1, group) < 0) ||
		    chmod(dir, (st.st_mode & 07777 & ~(mode_t)S_IWGRP) | S_IXGRP | S_IRGRP) < 0) {
			int e = errno;
			snprintf(why, why_len, "[operator] socket: cannot give %s to the operator group: %s", dir,
				 strerror(e));
			return -e;
		}
		cp_info("operator: %s given to group %u (g+rx) so the operator group reaches the socket", dir,
			(unsigned)group);
		return 0;
	}
	/* Not refused: an ACL may grant what the mode bits do not. */
	cp_warn("operator: the operator group (gid %u) cannot search %s (mode %04o, uid %u, gid %u) unless an ACL "
		"allows it: put the socket in a directory the group can reach",
		(unsigned)group, dir, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, (unsigned)st.st_gid);
	return 0;
}

int cp_op_start(struct cp_opsrv *o, struct cp_loop *l, const struct fg_config *cfg, struct cp_engine *e,
		struct cp_server *srv, const struct fg_boundary *b, char *why, size_t why_len)
{
	memset(o, 0, sizeof(*o));
	o->loop = l;
	o->cfg = cfg;
	o->engine = e;
	o->srv = srv;
	o->b = b;
	cp_small_srv_init(&o->ls, l, &op_srv_ops);
	o->started_ns = cp_now_ns();
	const char *path = cfg->op_socket;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (!path[0] || strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(why, why_len, "[operator] socket: empty or too long path");
		return -EINVAL;
	}
	if (cfg->op_group[0]) {
		struct group gr, *grp = NULL;
		char gbuf[4096];
		if (getgrnam_r(cfg->op_group, &gr, gbuf, sizeof(gbuf), &grp) != 0 || !grp) {
			snprintf(why, why_len, "[operator] group %s: no such group", cfg->op_group);
			return -ENOENT;
		}
		o->group = gr.gr_gid;
		o->have_group = true;
	}
	int r = cp_claim_op_dir(path, why, why_len);
	if (r == 0 && o->have_group)
		r = op_dir_reach(path, o->group, why, why_len);
	if (r < 0)
		return r;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	/* A stale socket from a previous run: only a socket is removed, and
	 * only under the lock of cp_claim_take (main.c took it), so never the
	 * socket of a daemon that still runs. */
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			snprintf(why, why_len, "[operator] socket %s exists and is not a socket", path);
			return -EEXIST;
		}
		unlink(path);
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		r = -errno;
		snprintf(why, why_len, "[operator] socket: %s", strerror(-r));
		return r;
	}
	/* Permissions before anyone can connect: bind under a tight umask. */
	mode_t old = umask(o->have_group ? 0117 : 0177);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
	umask(old);
	if (r == 0 && o->have_group && chown(path, (uid_t)-1, o->group) < 0)
		r = -errno;
	if (r == 0 && listen(fd, 16) < 0)
		r = -errno;
	if (r < 0) {
		snprintf(why, why_len, "[operator] socket %s: %s", path, strerror(-r));
		close(fd);
		return r;
	}
	if ((r = cp_small_srv_start(&o->ls, fd)) < 0) {
		snprintf(why, why_len, "[operator] io_uring: %s", strerror(-r));
		close(fd);
		return r;
	}
	cp_audit_on_durable(srv->audit, op_durable, o);
	cp_info("operator socket %s (mode %s)", path, o->have_group ? "0660" : "0600");
	return 0;
}

void cp_op_stop(struct cp_opsrv *o)
{
	o->stopping = true;
	bool listening = o->ls.fd >= 0;
	cp_small_srv_stop(&o->ls); /* closes the socket, then every connection */
	if (listening)
		unlink(o->cfg->op_socket);
	if (o->srv)
		cp_audit_on_durable(o->srv->audit, NULL, NULL);
}

/* cp_metrics.c - Prometheus text exposition over plain HTTP on the loop
 * (see cp_metrics.h). Loop thread only. */
#include "cluster/cp_cluster.h"
#include "cp_metrics.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cp_harden.h"
#include "cp_audit.h"
#include "cp_counters.h"
#include "cp_http_parse.h"
#include "cp_log.h"
#include "cp_reload.h"
#include "cp_small_srv.h"
#include "cp_status.h"
#include "fg/fano.h"

#include "cp_shadow.h"
#include "fg/audit.h"
#include "fg/counters.h"

#ifndef FANOGATE_VERSION
#define FANOGATE_VERSION "0.1.0"
#endif

#define CP_M_CONNS_MAX 16u
/* Per source address; past CP_M_CONNS_MAX the oldest connection is closed
 * for the newest (cp_small_srv_admit): idle connections cannot lock out a
 * scraper. */
#define CP_M_CONNS_PER_SOURCE 4u
#define CP_M_REQ_MAX 8192u
#define CP_M_TIMEOUT_NS (5ull * 1000 * 1000 * 1000)
#define CP_M_HOUSE_NS (500ull * 1000 * 1000)

struct cp_mconn {
	struct cp_small_conn sc; /* list, deadline, dead (cp_small_srv) */
	struct cp_metrics *m;
	int fd;
	struct cp_op recv_op, send_op;
	bool recv_armed, send_armed;
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

/* "# HELP" and "# TYPE" of one family. */
static void fam(struct sbuf *b, const char *name, const char *type, const char *help)
{
	sb_printf(b, "# HELP fanogate_%s %s\n# TYPE fanogate_%s %s\n", name, help, name, type);
}

static void counter(struct sbuf *b, const char *name, const char *help, uint64_t v)
{
	fam(b, name, "counter", help);
	sb_printf(b, "fanogate_%s %llu\n", name, (unsigned long long)v);
}

static void gauge(struct sbuf *b, const char *name, const char *help, uint64_t v)
{
	fam(b, name, "gauge", help);
	sb_printf(b, "fanogate_%s %llu\n", name, (unsigned long long)v);
}

/* line="i",triple="a,b,c" (points of the oriented triple). */
static const char *line_labels(unsigned line, char *buf, size_t len)
{
	const uint8_t *t = fg_fano_line(line);
	snprintf(buf, len, "line=\"%u\",triple=\"%u,%u,%u\"", line, t[0], t[1], t[2]);
	return buf;
}

static uint64_t dp_load(const struct fg_boundary *bd, unsigned lcore, unsigned c)
{
	return atomic_load_explicit(&bd->counters[lcore].c[c], memory_order_relaxed);
}

/* The value of registry entry i (fg_dp_counter_defs then fg_dp_xcounter_defs)
 * on one lcore; the lcores' own figures read 0 when the boundary has none. */
static uint64_t dp_entry(const struct fg_boundary *bd, unsigned lcore, unsigned i)
{
	if (i < FG_C__COUNT)
		return dp_load(bd, lcore, i);
	if (!bd->xcounters)
		return 0;
	return atomic_load_explicit(&bd->xcounters[lcore].x[i - FG_C__COUNT], memory_order_relaxed);
}

static const struct fg_counter_def *dp_def(unsigned i)
{
	return i < FG_C__COUNT ? &fg_dp_counter_defs[i] : &fg_dp_xcounter_defs[i - FG_C__COUNT];
}

/* Every counter of the registry (fg/counters.h), one family at a time (a
 * family's samples must be contiguous: shared families gather their
 * members from both sets), one series per lcore. */
static void render_dataplane(struct sbuf *b, const struct fg_boundary *bd)
{
	if (!bd || !bd->counters)
		return;
	const unsigned n = FG_C__COUNT + DP_X__COUNT;
	for (unsigned i = 0; i < n; i++) {
		const struct fg_counter_def *d = dp_def(i);
		bool seen = false;
		for (unsigned j = 0; j < i && !seen; j++)
			seen = !strcmp(dp_def(j)->family, d->family);
		if (seen)
			continue; /* rendered with its first member */
		fam(b, d->family, d->type, fg_counter_family_help(d));
		for (unsigned j = i; j < n; j++) {
			const struct fg_counter_def *dj = dp_def(j);
			if (strcmp(dj->family, d->family))
				continue;
			for (unsigned l = 0; l < bd->n_lanes; l++) {
				uint64_t v = dp_entry(bd, l, j);
				if (dj->ns)
					sb_printf(b, "fanogate_%s{lcore=\"%u\"%s%s} %.9f\n", dj->family, l,
						  dj->label ? "," : "", dj->label ? dj->label : "", (double)v / 1e9);
				else
					sb_printf(b, "fanogate_%s{lcore=\"%u\"%s%s} %llu\n", dj->family, l,
						  dj->label ? "," : "", dj->label ? dj->label : "", (unsigned long long)v);
			}
		}
	}
	fam(b, FG_DP_OUTCOMES_FAMILY, "counter", FG_DP_OUTCOMES_HELP);
	for (unsigned o = 0; o < FG_O__COUNT; o++)
		for (unsigned l = 0; l < bd->n_lanes; l++)
			sb_printf(b, "fanogate_%s{lcore=\"%u\",outcome=\"%s\"} %llu\n", FG_DP_OUTCOMES_FAMILY, l,
				  fg_outcome_name((enum fg_outcome)o),
				  bd->xcounters ? (unsigned long long)atomic_load_explicit(&bd->xcounters[l].outcome[o],
											 memory_order_relaxed)
						: 0ull);
	char lb[64];
	fam(b, "dp_line_contributions_total", "counter", "contributions accepted by the dataplane, by line and lcore");
	for (unsigned i = 0; i < bd->n_lanes; i++)
		for (unsigned l = 0; l < FG_LINES; l++)
			sb_printf(b, "fanogate_dp_line_contributions_total{lcore=\"%u\",%s} %llu\n", i,
				  line_labels(l, lb, sizeof(lb)),
				  (unsigned long long)atomic_load_explicit(&bd->counters[i].per_line[l],
									   memory_order_relaxed));
	fam(b, "dp_malformed_total", "counter", "malformed frames or datagrams in the dataplane, by codec reason and lcore");
	for (unsigned i = 0; i < bd->n_lanes; i++)
		for (unsigned r = 1; r < FG_R__COUNT; r++)
			sb_printf(b, "fanogate_dp_malformed_total{lcore=\"%u\",reason=\"%s\"} %llu\n", i,
				  fg_reason_name((int)r),
				  (unsigned long long)atomic_load_explicit(&bd->counters[i].malformed[r],
									   memory_order_relaxed));
}

/* One labelled series of a histogram family: n buckets (the last +Inf),
 * bounds le_us[0..n-2], counts not cumulative. */
static void hist_series(struct sbuf *b, const char *name, const char *label, const char *value, const uint32_t *le_us,
			unsigned n, const uint64_t *bucket, uint64_t count, uint64_t sum_ns)
{
	uint64_t cum = 0;
	for (unsigned i = 0; i < n; i++) {
		cum += bucket[i];
		if (i < n - 1)
			sb_printf(b, "fanogate_%s_bucket{%s=\"%s\",le=\"%g\"} %llu\n", name, label, value, le_us[i] * 1e-6,
				  (unsigned long long)cum);
		else
			sb_printf(b, "fanogate_%s_bucket{%s=\"%s\",le=\"+Inf\"} %llu\n", name, label, value,
				  (unsigned long long)cum);
	}
	sb_printf(b, "fanogate_%s_sum{%s=\"%s\"} %.9f\n", name, label, value, (double)sum_ns * 1e-9);
	sb_printf(b, "fanogate_%s_count{%s=\"%s\"} %llu\n", name, label, value, (unsigned long long)count);
}

/* One series of a lead histogram (fg/lead.h) labelled by line and ingress. */
static void lead_series(struct sbuf *b, const char *name, const char *labels, const struct fg_lead_hist *h)
{
	uint64_t cum = 0;
	for (unsigned i = 0; i < FG_LEAD_BUCKETS; i++) {
		cum += h->bucket[i];
		if (i < FG_LEAD_BUCKETS - 1)
			sb_printf(b, "fanogate_%s_bucket{%s,le=\"%g\"} %llu\n", name, labels, fg_lead_hist_le_us[i] * 1e-6,
				  (unsigned long long)cum);
		else
			sb_printf(b, "fanogate_%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, (unsigned long long)cum);
	}
	sb_printf(b, "fanogate_%s_sum{%s} %.9f\n", name, labels, (double)h->sum_ns * 1e-9);
	sb_printf(b, "fanogate_%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
}

/* The lead of compared seeds over the canonical chain (cp_shadow_lead), per
 * line and ingress: four histogram families, every series always present. */
static void render_leads(struct sbuf *b, const struct cp_shadow *sh)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} fams[] = {
		{"line_lead_seconds", "compared seeds ahead of the canonical chain: its report's arrival - the seed's "
		 "resolution, by line and ingress of the resolving contribution", offsetof(struct cp_shadow_lead, ahead)},
		{"line_lag_seconds", "compared seeds behind the canonical chain (or level): the seed's resolution - "
		 "its report's arrival", offsetof(struct cp_shadow_lead, behind)},
		{"line_delivery_lead_seconds", "as line_lead_seconds from the seed's delivery to the next worker",
		 offsetof(struct cp_shadow_lead, deliver_ahead)},
		{"line_delivery_lag_seconds", "as line_lag_seconds from the seed's delivery to the next worker",
		 offsetof(struct cp_shadow_lead, deliver_behind)},
	};
	char lb[64], labels[96];
	for (size_t f = 0; f < FG_ARRAY_LEN(fams); f++) {
		fam(b, fams[f].name, "histogram", fams[f].help);
		for (unsigned i = 0; i < FG_LINES; i++)
			for (unsigned g = 0; g < CP_SHADOW_INGRESSES; g++) {
				snprintf(labels, sizeof(labels), "%s,ingress=\"%s\"", line_labels(i, lb, sizeof(lb)),
					 fg_audit_ingress_name(g));
				const struct cp_shadow_lead *L = cp_shadow_lead(sh, i, g);
				lead_series(b, fams[f].name, labels,
					    (const struct fg_lead_hist *)(const void *)((const char *)L + fams[f].off));
			}
	}
}

/* The engine's hops (cp_engine.h, enum cp_hop), jump delivery by consumer
 * and slot resolution by ingress, each one Prometheus histogram. */
static void render_hops(struct sbuf *b, const struct cp_engine *e)
{
	fam(b, "engine_hop_seconds", "histogram",
	    "where a TLS contribution's time goes in the engine: answer (submit -> outcome, both modes), "
	    "to_lcore, back_to_cp, seed_to_cp (dataplane lanes)");
	for (unsigned h = 0; h < CP_HOP__COUNT; h++) {
		const struct fg_lat_hist *x = &e->st.hop[h];
		hist_series(b, "engine_hop_seconds", "hop", cp_engine_hop_name((enum cp_hop)h), fg_lat_hist_le_us,
			    FG_LAT_BUCKETS, x->bucket, x->count, x->sum_ns);
	}
	fam(b, "jump_delivery_seconds", "histogram",
	    "jump delivery: the resolving contribution taken -> the seed handed to its consumer (udp: the "
	    "dataplane's UDP consumer; tls: WebSocket subscribers and waiting GETs)");
	for (unsigned c = 0; c < CP_CONSUMER__COUNT; c++) {
		const struct fg_lat_hist *x = &e->st.delivery[c];
		hist_series(b, "jump_delivery_seconds", "consumer", cp_engine_consumer_name((enum cp_consumer)c),
			    fg_lat_hist_le_us, FG_LAT_BUCKETS, x->bucket, x->count, x->sum_ns);
	}
	fam(b, "slot_resolution_seconds", "histogram",
	    "slot opened (first contribution) -> resolved (last), by the ingress of the resolving contribution");
	for (unsigned i = 0; i < FG_INGRESS__COUNT; i++) {
		const struct fg_span_hist *x = &e->st.resolution[i];
		hist_series(b, "slot_resolution_seconds", "ingress", cp_engine_ingress_name(i), fg_span_hist_le_us,
			    FG_SPAN_BUCKETS, x->bucket, x->count, x->sum_ns);
	}
	fam(b, "last_resolved_timestamp_seconds", "gauge", "Unix time of the last resolved seed (0: none since start)");
	sb_printf(b, "fanogate_last_resolved_timestamp_seconds %.3f\n", (double)e->st.last_resolved_unix_ns * 1e-9);
}

static void render_lines(struct sbuf *b, const struct cp_engine *e)
{
	const struct fg_lines *ls = &e->lines;
	char lb[64];
	/* Kept label-for-label as first published (tests and dashboards key on it). */
	fam(b, "line_state", "gauge", "effective state of each line (1 for the current state)");
	for (unsigned i = 0; i < FG_LINES; i++) {
		enum fg_line_state cur = fg_line_effective(ls, i);
		for (unsigned st = FG_LINE_DISABLED; st <= FG_LINE_DEGRADED; st++)
			sb_printf(b, "fanogate_line_state{line=\"%u\",state=\"%s\"} %d\n", i,
				  fg_line_state_name((enum fg_line_state)st), cur == st);
	}
	fam(b, "line_info", "gauge", "one series per line: its triple, effective state and base state (value 1)");
	for (unsigned i = 0; i < FG_LINES; i++)
		sb_printf(b, "fanogate_line_info{%s,state=\"%s\",base=\"%s\"} 1\n", line_labels(i, lb, sizeof(lb)),
			  fg_line_state_name(fg_line_effective(ls, i)), fg_line_state_name(ls->line[i].base));
	fam(b, "line_auto_promote", "gauge", "1 when a clean audit window may promote the line to active");
	for (unsigned i = 0; i < FG_LINES; i++)
		sb_printf(b, "fanogate_line_auto_promote{%s} %d\n", line_labels(i, lb, sizeof(lb)),
			  ls->line[i].auto_promote ? 1 : 0);
	fam(b, "line_window_clean", "gauge", "clean verdicts in the line's current promotion window");
	for (unsigned i = 0; i < FG_LINES; i++)
		sb_printf(b, "fanogate_line_window_clean{%s} %u\n", line_labels(i, lb, sizeof(lb)), ls->line[i].clean);
	fam(b, "line_verdicts_total", "counter", "audit verdicts about the line's seeds");
	for (unsigned i = 0; i < FG_LINES; i++)
		sb_printf(b, "fanogate_line_verdicts_total{%s} %llu\n", line_labels(i, lb, sizeof(lb)),
			  (unsigned long long)ls->line[i].verdicts);
	fam(b, "line_divergences_total", "counter", "divergent audit verdicts about the line's seeds");
	for (unsigned i = 0; i < FG_LINES; i++)
		sb_printf(b, "fanogate_line_divergences_total{%s} %llu\n", line_labels(i, lb, sizeof(lb)),
			  (unsigned long long)ls->line[i].divergences);
	fam(b, "line_conflicts_total", "counter", "conflicting duplicate contributions on the line");
	for (unsigned i = 0; i < FG_LINES; i++)
		sb_printf(b, "fanogate_line_conflicts_total{%s} %llu\n", line_labels(i, lb, sizeof(lb)),
			  (unsigned long long)ls->line[i].conflicts);
	fam(b, "line_window_leads", "gauge", "compared seeds with a lead in the line's current window");
	for (unsigned i = 0; i < FG_LINES; i++)
		sb_printf(b, "fanogate_line_window_leads{%s} %u\n", line_labels(i, lb, sizeof(lb)), ls->line[i].lead.n);
	fam(b, "line_window_ahead_ratio", "gauge",
	    "share of the line's current window's compared seeds that were ahead of the canonical chain");
	for (unsigned i = 0; i < FG_LINES; i++)
		sb_printf(b, "fanogate_line_window_ahead_ratio{%s} %.4f\n", line_labels(i, lb, sizeof(lb)),
			  fg_lead_window_share_ahead(&ls->line[i].lead));
	fam(b, "line_promotions_held_total", "counter",
	    "windows that were clean but held in shadow for their lead ([lines] promote_min_ahead, promote_min_lead_us)");
	for (unsigned i = 0; i < FG_LINES; i++)
		sb_printf(b, "fanogate_line_promotions_held_total{%s} %llu\n", line_labels(i, lb, sizeof(lb)),
			  (unsigned long long)ls->line[i].holds);
	fam(b, "point_down", "gauge", "1 while the Fano point has no live peer (its lines are degraded)");
	for (unsigned p = 1; p <= FG_POINTS; p++)
		sb_printf(b, "fanogate_point_down{point=\"%u\"} %d\n", p, (ls->points_down >> (p - 1)) & 1);
	gauge(b, "lines_promote_verdicts", "[lines] promote_count: clean verdicts a window needs", ls->policy.promote_count);
	fam(b, "lines_promote_window_seconds", "gauge", "[lines] promote_ms: minimum age of a window before promotion");
	sb_printf(b, "fanogate_lines_promote_window_seconds %.3f\n", (double)ls->policy.promote_ns / 1e9);
	gauge(b, "lines_auto_promote_default", "[lines] auto_promote as configured (1 = on)", ls->policy.auto_promote);
	fam(b, "lines_promote_min_ahead_ratio", "gauge", "[lines] promote_min_ahead: share of a window's seeds ahead (0: off)");
	sb_printf(b, "fanogate_lines_promote_min_ahead_ratio %.4f\n", ls->policy.min_ahead);
	fam(b, "lines_promote_min_lead_seconds", "gauge", "[lines] promote_min_lead_us: a window's median lead (0: off)");
	sb_printf(b, "fanogate_lines_promote_min_lead_seconds %.6f\n", (double)ls->policy.min_lead_us * 1e-6);
}

static void render_peers(struct sbuf *b, const struct cp_server *srv)
{
	static const char *const states[] = {"tls", "http", "websocket"};
	uint64_t n[3] = {0}, queued = 0;
	for (const struct cp_conn *c = srv->all; c; c = c->next) {
		if (cp_conn_is_dead(c))
			continue;
		if ((unsigned)c->state < 3)
			n[c->state]++;
		queued += c->sq_bytes;
	}
	fam(b, "tls_peers", "gauge", "live TLS peers by protocol state");
	for (unsigned i = 0; i < 3; i++)
		sb_printf(b, "fanogate_tls_peers{state=\"%s\"} %llu\n", states[i], (unsigned long long)n[i]);
	gauge(b, "tls_send_queue_bytes", "ciphertext queued to TLS peers and not yet sent", queued);
	/* what a test polls before the resolving POST, so the woken path is the one tested */
	uint64_t waiting = 0;
	for (const struct cp_conn *c = srv->wait_list; c; c = c->lnext)
		waiting++;
	gauge(b, "http_seed_waiting", "GET /residual-seed requests parked until their slot resolves or ends", waiting);
}

/* UDP sources the dataplane reported (FG_BM_PEER), as `fanoctl peers` lists them. */
static void render_udp_peers(struct sbuf *b, const struct cp_engine *e)
{
	gauge(b, "udp_peers", "UDP sources the dataplane reported (at most CP_PEERS_MAX tracked)", e->n_peers);
	counter(b, "udp_peers_dropped_total", "UDP sources not tracked: the peer table was full", e->st.peers_dropped);
	if (!e->n_peers)
		return;
	uint64_t now = cp_now_ns();
	char host[INET6_ADDRSTRLEN];
	fam(b, "udp_peer_reports_total", "counter", "reports of the UDP source by the dataplane (about one a second while it sends)");
	for (unsigned i = 0; i < e->n_peers; i++) {
		const struct cp_peer *p = &e->peers[i];
		inet_ntop(p->family == 6 ? AF_INET6 : AF_INET, p->addr, host, sizeof(host));
		sb_printf(b, "fanogate_udp_peer_reports_total{peer=\"%s\",port=\"%u\"} %llu\n", host, p->port,
			  (unsigned long long)p->reports);
	}
	fam(b, "udp_peer_last_seen_seconds", "gauge", "seconds since the dataplane last reported the UDP source");
	for (unsigned i = 0; i < e->n_peers; i++) {
		const struct cp_peer *p = &e->peers[i];
		inet_ntop(p->family == 6 ? AF_INET6 : AF_INET, p->addr, host, sizeof(host));
		sb_printf(b, "fanogate_udp_peer_last_seen_seconds{peer=\"%s\",port=\"%u\"} %.3f\n", host, p->port,
			  now > p->last_ns ? (double)(now - p->last_ns) / 1e9 : 0.0);
	}
}

static void render_slots(struct sbuf *b, const struct cp_metrics *m)
{
	const struct cp_engine *e = m->engine;
	gauge(b, "slot_capacity", "[slots] capacity: slot table size over all shards", m->cfg->slot_capacity);
	if (e->lanes_mode)
		return; /* the shards belong to the lcores: see fanogate_dp_* */
	const struct fg_slots *s = &e->slots;
	fam(b, "slots_open", "gauge", "slots open in the control plane's shard (local mode)");
	sb_printf(b, "fanogate_slots_open{shard=\"0\"} %u\n", s->in_use);
	static const char *const what[] = {"opened", "resolved", "expired", "poisoned", "reclaimed", "flushed"};
	const uint64_t v[] = {s->opened, s->resolved, s->expired, s->poisoned, s->reclaimed, s->flushed};
	for (unsigned i = 0; i < FG_ARRAY_LEN(what); i++) {
		char name[48], help[96];
		snprintf(name, sizeof(name), "shard_slots_%s_total", what[i]);
		snprintf(help, sizeof(help), "slots %s in the control plane's shard (local mode)", what[i]);
		fam(b, name, "counter", help);
		sb_printf(b, "fanogate_%s{shard=\"0\"} %llu\n", name, (unsigned long long)v[i]);
	}
}

/* a: the daemon's audit runner (NULL in render tests without one). */
static void render_audit(struct sbuf *b, const struct cp_audit *a)
{
	static const struct cp_audit_stats none;
	const struct cp_audit_stats *hs = a ? &a->st : &none;
	counter(b, "audit_resolved_in_total", "resolved seeds handed to the shadow audit", hs->resolved);
	counter(b, "audit_canonical_in_total", "canonical reports handed to the shadow audit", hs->canonical);
	counter(b, "audit_conflicts_in_total", "conflicts handed to the shadow audit", hs->conflict);
	counter(b, "audit_refused_total", "hand-offs the audit refused (failed closed or busy)", hs->refused);
	if (!cp_audit_is_running(a))
		return;
	struct cp_shadow *sh = a->sh;
	/* The head's hash changes with every record: as a label it would make a
	 * series per record. It is in `fanoctl status` (audit.head_hash). */
	uint8_t hash[FG_AUDIT_HASH_LEN];
	uint64_t next = 0;
	cp_shadow_head(sh, hash, &next);
	gauge(b, "audit_durable_records", "audit records durable on disk (the next sequence number)", next);
	gauge(b, "audit_failed", "1 once the audit log has failed closed", cp_shadow_failed(sh));
	struct cp_shadow_stats st;
	cp_shadow_stats(sh, &st);
	fam(b, "audit_verdicts_total", "counter", "shadow audit verdicts by kind");
	sb_printf(b, "fanogate_audit_verdicts_total{kind=\"clean\"} %llu\n", (unsigned long long)st.verdicts_clean);
	sb_printf(b, "fanogate_audit_verdicts_total{kind=\"divergent\"} %llu\n",
		  (unsigned long long)st.verdicts_divergent);
	sb_printf(b, "fanogate_audit_verdicts_total{kind=\"unmatched\"} %llu\n",
		  (unsigned long long)st.verdicts_unmatched);
	fam(b, "audit_last_divergence_timestamp_seconds", "gauge",
	    "Unix time of the last divergent verdict (0: none since start)");
	sb_printf(b, "fanogate_audit_last_divergence_timestamp_seconds %.3f\n", (double)st.last_divergence_unix_ns * 1e-9);
	counter(b, "audit_sampled_in_total", "active-line seeds chosen by shadow_sample", st.sampled_in);
	counter(b, "audit_sampled_out_total", "active-line seeds not sampled", st.sampled_out);
	counter(b, "audit_evicted_total", "pending comparisons evicted from a full table", st.evicted);
	fam(b, "audit_canonical_table_refused_total", "counter",
	    "canonical reports the pending table did not take (shared fairly by source)");
	sb_printf(b, "fanogate_audit_canonical_table_refused_total{reason=\"seed\"} %llu\n",
		  (unsigned long long)st.canon_refused_seed);
	sb_printf(b, "fanogate_audit_canonical_table_refused_total{reason=\"share\"} %llu\n",
		  (unsigned long long)st.canon_refused_share);
	counter(b, "audit_clean_held_total", "clean verdicts that promoted nothing: an epoch storm held the lines",
		st.clean_held);
	counter(b, "audit_epoch_storms_total", "epoch storms that demoted the active lines and alerted", st.storms);
	counter(b, "audit_canonical_not_sampled_total", "canonical reports whose seed is not audited",
		st.canon_not_sampled);
	counter(b, "audit_line_changes_total", "line changes recorded", st.line_changes);
	counter(b, "audit_promotions_total", "lines promoted by a clean window", st.promotions);
	counter(b, "audit_demotions_total", "lines demoted by the audit", st.demotions);
	counter(b, "audit_peer_auth_failures_total", "peer authentication failures recorded", st.peer_auth_failures);
	counter(b, "audit_append_failures_total", "records the log could not take", st.append_failed);
	counter(b, "audit_records_appended_total", "records appended to the log", st.log.appended);
	counter(b, "audit_written_bytes_total", "bytes written to the log", st.log.bytes_written);
	counter(b, "audit_fsyncs_total", "fdatasync calls of the log", st.log.fsyncs);
	counter(b, "audit_rotations_total", "log file rotations", st.log.rotations);
	gauge(b, "audit_backlog_bytes", "bytes appended and not yet written", st.log.backlog_bytes);
	gauge(b, "audit_file_bytes", "durable bytes in the current log file", st.log.file_bytes);
	counter(b, "audit_promotions_held_total", "clean windows held in shadow for their lead (recorded once each)",
		st.promotions_held);
	render_leads(b, sh);
	counter(b, "alerts_raised_total", "alerts raised", st.alert.raised);
	counter(b, "alerts_spawned_total", "alert commands started", st.alert.spawned);
	counter(b, "alerts_suppressed_total", "alerts dropped by the rate limit or the running cap", st.alert.suppressed);
	counter(b, "alerts_failed_total", "alert commands that could not start or exited non-zero",
		st.alert.spawn_failed + st.alert.exit_failed);
	gauge(b, "alerts_running", "alert commands running", st.alert.running);
}

/* The standard process_* families (Prometheus client conventions), from
 * /proc/self. A figure /proc does not give is left out, never invented. */
/* "# HELP" and "# TYPE" of a family without the fanogate_ prefix. */
static void pfam(struct sbuf *b, const char *name, const char *type, const char *help)
{
	sb_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void render_process(struct sbuf *b)
{
	char buf[1024];
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* comm may hold spaces */
	unsigned long long ut = 0, st = 0, start = 0, vsize = 0, rss = 0;
	/* fields 3.. after the comm: state(3) ... utime(14) stime(15) ... starttime(22) vsize(23) rss(24) */
	bool have = p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d "
				    "%llu %llu %llu", &ut, &st, &start, &vsize, &rss) == 5;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	if (have && tck > 0 && page > 0) {
		pfam(b, "process_cpu_seconds_total", "counter", "user and system CPU time of the daemon");
		sb_printf(b, "process_cpu_seconds_total %.2f\n", (double)(ut + st) / (double)tck);
		pfam(b, "process_resident_memory_bytes", "gauge", "resident set size");
		sb_printf(b, "process_resident_memory_bytes %llu\n", rss * (unsigned long long)page);
		pfam(b, "process_virtual_memory_bytes", "gauge", "virtual memory size");
		sb_printf(b, "process_virtual_memory_bytes %llu\n", vsize);
		unsigned long long btime = 0;
		char line[256];
		FILE *s = fopen("/proc/stat", "re");
		while (s && fgets(line, sizeof(line), s))
			if (sscanf(line, "btime %llu", &btime) == 1)
				break;
		if (s)
			fclose(s);
		if (btime) {
			pfam(b, "process_start_time_seconds", "gauge", "start time of the daemon since the Unix epoch");
			sb_printf(b, "process_start_time_seconds %.2f\n", (double)btime + (double)start / (double)tck);
		}
	}
	DIR *d = opendir("/proc/self/fd");
	if (d) {
		unsigned long fds = 0;
		for (struct dirent *de; (de = readdir(d));)
			fds += de->d_name[0] != '.';
		closedir(d);
		pfam(b, "process_open_fds", "gauge", "open file descriptors (the count includes the one reading them)");
		sb_printf(b, "process_open_fds %lu\n", fds);
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		pfam(b, "process_max_fds", "gauge", "RLIMIT_NOFILE soft limit");
		sb_printf(b, "process_max_fds %llu\n", (unsigned long long)rl.rlim_cur);
	}
}

/* What `fanoctl status` warns about (cp_status.h), every warning always
 * present (0 or 1), and the certificate's end. */
static void render_warnings(struct sbuf *b, const struct cp_metrics *m)
{
	const struct cp_status_src src = {.cfg = m->cfg, .engine = m->engine, .srv = m->srv, .b = m->b,
					  .metrics_port = m->port, .reload = m->reload ? &m->reload->st : NULL,
					  .cluster = m->cluster};
	uint32_t w = cp_status_warnings(&src, NULL);
	fam(b, "warning", "gauge", "1 while the warning `fanoctl status` names holds (cp_status.h)");
	for (unsigned k = 0; k < CP_WARN__COUNT; k++)
		sb_printf(b, "fanogate_warning{warning=\"%s\"} %u\n", cp_warning_name((enum cp_warning)k), (w >> k) & 1u);
	int64_t na;
	if (cp_status_cert_not_after(m->srv, &na) == 0) {
		fam(b, "tls_cert_not_after_timestamp_seconds", "gauge",
		    "Unix time at which the TLS certificate ([tls] cert) stops being valid");
		sb_printf(b, "fanogate_tls_cert_not_after_timestamp_seconds %lld\n", (long long)na);
	}
}

/* Every entry of the control plane's registry (cp_counters.h), in its order. */
static void render_registry(struct sbuf *b, const struct cp_metrics *m)
{
	const struct cp_counter_src src = {.srv = m->srv, .engine = m->engine, .loop = m->loop, .b = m->b,
					   .op_fds = m->op_fds};
	for (unsigned i = 0; i < cp_counter_count; i++) {
		const struct cp_counter_def *d = &cp_counter_defs[i];
		uint64_t v = cp_counter_value(d, &src);
		fam(b, d->metric, d->type, d->help);
		if (d->ns)
			sb_printf(b, "fanogate_%s %.9f\n", d->metric, (double)v * 1e-9);
		else
			sb_printf(b, "fanogate_%s %llu\n", d->metric, (unsigned long long)v);
	}
}

ssize_t cp_metrics_render(const struct cp_metrics *m, char **out)
{
	struct sbuf b = {.cap = 65536};
	b.p = malloc(b.cap);
	if (!b.p)
		return -ENOMEM;
	b.p[0] = '\0';
	const struct cp_server_stats *s = &m->srv->st;
	const struct cp_engine *e = m->engine;
	fam(&b, "build_info", "gauge", "version and slot mode of this daemon (value 1)");
	sb_printf(&b, "fanogate_build_info{version=\"%s\",mode=\"%s\"} 1\n", FANOGATE_VERSION,
		  e->lanes_mode ? "dataplane" : "local");
	fam(&b, "uptime_seconds", "gauge", "seconds since the TLS listener started");
	sb_printf(&b, "fanogate_uptime_seconds %.3f\n", (double)(cp_now_ns() - m->srv->started_ns) / 1e9);
	gauge(&b, "audit_enabled", "1 when the shadow audit runs", cp_audit_is_running(m->srv->audit));
	counter(&b, "metrics_scrapes_total", "GET /metrics answered before this one", m->scrapes);
	counter(&b, "metrics_refused_per_source_total", "metrics connections refused: their source had 4 open",
		m->ls.refused_per_source);
	counter(&b, "metrics_evicted_total", "metrics connections closed for a newer one (16 open)", m->ls.evicted);
	gauge(&b, "tls_max_connections", "[tls] max_connections in force", m->srv->max_conns);
	gauge(&b, "tls_ws_max_message_bytes", "[tls] ws_max_message in force (largest WebSocket message or POST body)",
	      m->cfg->ws_max_message);
	gauge(&b, "tls_send_queue_max_bytes", "[tls] send_queue_max in force (per connection)", m->cfg->send_queue_max);
	fam(&b, "tls_handshake_timeout_seconds", "gauge", "[tls] handshake_timeout_ms in force");
	sb_printf(&b, "fanogate_tls_handshake_timeout_seconds %.3f\n", m->cfg->handshake_timeout_ms / 1e3);
	fam(&b, "tls_idle_timeout_seconds", "gauge", "[tls] idle_timeout_ms in force");
	sb_printf(&b, "fanogate_tls_idle_timeout_seconds %.3f\n", m->cfg->idle_timeout_ms / 1e3);
	render_registry(&b, m);
	fam(&b, "tls_admission_total", "counter",
	    "connections refused or evicted at accept by reason (per_source, full, evicted_unauth_share, evicted_full)");
	for (unsigned i = 0; i < CP_ADMIT_R__COUNT; i++)
		sb_printf(&b, "fanogate_tls_admission_total{reason=\"%s\"} %llu\n",
			  cp_admit_reason_name((enum cp_admit_reason)i), (unsigned long long)m->srv->admit.st[i]);
	render_peers(&b, m->srv);
	render_udp_peers(&b, e);
	fam(&b, "canonical_refused_total", "counter", "canonical reports refused by their source (docs/hardening.md)");
	sb_printf(&b, "fanogate_canonical_refused_total{reason=\"source\"} %llu\n",
		  (unsigned long long)e->st.canon_refused_source);
	sb_printf(&b, "fanogate_canonical_refused_total{reason=\"role\"} %llu\n",
		  (unsigned long long)s->canon_refused_role);
	fam(&b, "lane_answer_spin_ends_total", "counter",
	    "why those polls ended: answered (every owed answer in), input (a completion was ready), budget");
	for (unsigned r = 0; r < CP_SPIN__COUNT; r++)
		sb_printf(&b, "fanogate_lane_answer_spin_ends_total{reason=\"%s\"} %llu\n",
			  cp_engine_spin_end_name((enum cp_spin_end)r), (unsigned long long)e->st.spin_end[r]);
	render_hops(&b, e);
	gauge(&b, "model_epoch", "model epoch", e->epoch);
	fam(&b, "tls_outcomes_total", "counter", "outcomes of frames received over TLS");
	for (unsigned i = 0; i < FG_O__COUNT; i++)
		sb_printf(&b, "fanogate_tls_outcomes_total{outcome=\"%s\"} %llu\n", fg_outcome_name((enum fg_outcome)i),
			  (unsigned long long)e->st.outcome[i]);
	fam(&b, "tls_malformed_total", "counter", "malformed frames over TLS by reason");
	for (unsigned i = 1; i < FG_R__COUNT; i++)
		sb_printf(&b, "fanogate_tls_malformed_total{reason=\"%s\"} %llu\n", fg_reason_name((int)i),
			  (unsigned long long)e->st.reason[i]);
	render_slots(&b, m);
	render_lines(&b, e);
	render_audit(&b, m->srv->audit);
	char *cl = cp_cluster_metrics_text(m->cluster); /* [cluster] only */
	if (cl)
		sb_printf(&b, "%s", cl);
	free(cl);
	const struct cp_reload_stats rst = m->reload ? m->reload->st : (struct cp_reload_stats){0};
	fam(&b, "config_reloads_total", "counter", "configuration reloads (fanoctl config reload, SIGHUP) by result");
	sb_printf(&b, "fanogate_config_reloads_total{result=\"applied\"} %llu\n",
		  (unsigned long long)rst.applied);
	sb_printf(&b, "fanogate_config_reloads_total{result=\"unchanged\"} %llu\n",
		  (unsigned long long)rst.unchanged);
	sb_printf(&b, "fanogate_config_reloads_total{result=\"refused\"} %llu\n",
		  (unsigned long long)rst.refused);
	gauge(&b, "config_last_reload_success", "1 unless the last reload was refused", !rst.last_refused);
	render_warnings(&b, m);
	render_dataplane(&b, m->b);
	render_process(&b);
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
	c->sc.dead = true;
	if (c->recv_armed || c->send_armed) {
		shutdown(c->fd, SHUT_RDWR);
		return;
	}
	cp_small_srv_unlink(&c->m->ls, &c->sc);
	close(c->fd);
	free(c->out);
	free(c);
}

static void mc_send_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	(void)flags;
	struct cp_mconn *c = cp_container_of(op, struct cp_mconn, send_op);
	c->send_armed = false;
	if (!c->sc.dead && res > 0 && c->out_off + (size_t)res < c->out_len) {
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
	if (c->sc.dead || res <= 0) {
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

/* cp_small_srv: a connection arrived. */
static void m_on_accept(struct cp_small_srv *s, int fd)
{
	struct cp_metrics *m = cp_container_of(s, struct cp_metrics, ls);
	struct cp_mconn *c = s->stopping ? NULL : calloc(1, sizeof(*c));
	if (c && !cp_small_srv_admit(s, fd, &c->sc, CP_M_CONNS_MAX, CP_M_CONNS_PER_SOURCE,
						m->cfg->ipv6_source_prefix)) {
		free(c);
		c = NULL;
	}
	if (!c) {
		close(fd);
		return;
	}
	c->m = m;
	c->fd = fd;
	cp_small_srv_link(s, &c->sc, CP_M_TIMEOUT_NS);
	mc_arm_recv(c);
}

/* cp_small_srv: past the deadline, or stopping: close. */
static void m_on_close(struct cp_small_srv *s, struct cp_small_conn *sc)
{
	(void)s;
	mc_close(cp_container_of(sc, struct cp_mconn, sc));
}

static const struct cp_small_srv_ops m_srv_ops = {
	.name = "metrics",
	.house_ns = CP_M_HOUSE_NS,
	.on_accept = m_on_accept,
	.on_deadline = m_on_close,
	.on_stop = m_on_close,
};

int cp_metrics_start(struct cp_metrics *m, struct cp_loop *l, const struct fg_config *cfg, struct cp_engine *e,
		     struct cp_server *srv, const struct fg_boundary *b, int listen_fd, uint16_t port, char *why,
		     size_t why_len)
{
	memset(m, 0, sizeof(*m));
	m->loop = l;
	m->cfg = cfg;
	m->engine = e;
	m->srv = srv;
	m->b = b;
	cp_small_srv_init(&m->ls, l, &m_srv_ops);
	if (listen_fd < 0) {
		cp_info("metrics endpoint off");
		return 0;
	}
	m->port = port;
	int r;
	if ((r = cp_small_srv_start(&m->ls, listen_fd)) < 0) {
		snprintf(why, why_len, "[metrics] io_uring: %s", strerror(-r));
		close(listen_fd);
		return r;
	}
	cp_info("metrics on port %u (GET /metrics)", m->port);
	return 0;
}

void cp_metrics_stop(struct cp_metrics *m)
{
	m->stopping = true;
	cp_small_srv_stop(&m->ls); /* closes the socket, then every connection */
}

/* cp_status.c - the daemon's summary and its warnings (see cp_status.h).
 * Loop thread only. */
#include "cp_status.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/asn1.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "cluster/cp_cluster.h"
#include "cp_audit.h"
#include "cp_reload.h"
#include "cp_shadow.h"
#include "fg/audit.h"
#include "fg/fano.h"

#ifndef FANOGATE_VERSION
#define FANOGATE_VERSION "0.1.0"
#endif

const char *cp_warning_name(enum cp_warning w)
{
	static const char *const n[CP_WARN__COUNT] = {
		[CP_WARN_NO_AUTH] = "no_auth",
		[CP_WARN_AUDIT_OFF] = "audit_off",
		[CP_WARN_AUDIT_FAILED] = "audit_failed",
		[CP_WARN_EPOCH_STORM] = "epoch_storm",
		[CP_WARN_ETCD_LOST] = "etcd_lost",
		[CP_WARN_CERT_EXPIRING] = "cert_expiring",
		[CP_WARN_CERT_EXPIRED] = "cert_expired",
		[CP_WARN_NO_HUGEPAGES] = "no_hugepages",
		[CP_WARN_LINK_DOWN] = "link_down",
		[CP_WARN_NO_ALERT_COMMAND] = "no_alert_command",
		[CP_WARN_POINTS_DOWN] = "points_down",
		[CP_WARN_RELOAD_REFUSED] = "reload_refused",
	};
	return (unsigned)w < CP_WARN__COUNT ? n[w] : "?";
}

int cp_status_cert_not_after(const struct cp_server *srv, int64_t *out)
{
	X509 *x = srv && srv->tls.ctx ? SSL_CTX_get0_certificate(srv->tls.ctx) : NULL;
	if (!x)
		return -ENOENT;
	const ASN1_TIME *na = X509_get0_notAfter(x);
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	if (!na || ASN1_TIME_to_tm(na, &tm) != 1)
		return -EINVAL;
	*out = (int64_t)timegm(&tm);
	return 0;
}

const char *cp_status_link(const struct fg_boundary *b)
{
	if (!b || !b->port.driver[0])
		return "unknown";
	if (b->port.ifname[0]) {
		/* the kernel's view now: a cable pulled after the start shows */
		char path[64], state[16] = "";
		snprintf(path, sizeof(path), "/sys/class/net/%s/operstate", b->port.ifname);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t n = read(fd, state, sizeof(state) - 1);
			close(fd);
			if (n > 0) {
				state[n] = '\0';
				state[strcspn(state, "\n")] = '\0';
				/* a veth or tun reports "unknown" while it passes traffic */
				if (!strcmp(state, "up") || !strcmp(state, "unknown"))
					return "up";
				return "down";
			}
		}
	}
	return b->port.link_up ? "up" : "down";
}

static uint64_t unix_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec;
}

/* The cluster's etcd state ("up", "lost", "waiting", "duplicate"), or NULL
 * without [cluster]. */
static const char *etcd_state(const struct cp_cluster *c, char *buf, size_t len)
{
	json_t *cl = cp_cluster_json(c);
	if (!cl)
		return NULL;
	const char *s = json_string_value(json_object_get(cl, "etcd"));
	snprintf(buf, len, "%s", s ? s : "unknown");
	json_decref(cl);
	return buf;
}

uint32_t cp_status_warnings(const struct cp_status_src *s, char (*text)[CP_STATUS_TEXT_MAX])
{
	uint32_t w = 0;
	char scratch[CP_WARN__COUNT][CP_STATUS_TEXT_MAX];
	char (*t)[CP_STATUS_TEXT_MAX] = text ? text : scratch;
	const struct cp_server *srv = s->srv;
	const struct cp_engine *e = s->engine;
#define WARN(k, ...)                                                                                               \
	do {                                                                                                       \
		w |= 1u << (k);                                                                                    \
		snprintf(t[k], sizeof(t[k]), __VA_ARGS__);                                                        \
	} while (0)
	if (srv && !srv->tls.n_tokens && !srv->tls.mtls)
		WARN(CP_WARN_NO_AUTH, "no bearer tokens and no client CA: every request is refused (401); set [tls] "
				      "tokens_file or ca");
	const struct cp_audit *a = srv ? srv->audit : NULL;
	if (!cp_audit_is_running(a)) {
		WARN(CP_WARN_AUDIT_OFF, "the shadow audit does not run: no verdict, no promotion, no page");
	} else {
		if (cp_shadow_failed(a->sh))
			WARN(CP_WARN_AUDIT_FAILED, "the audit log %s failed closed: every line is held in shadow and line "
						   "changes are refused (docs/audit.md)", s->cfg->audit_path);
		if (cp_shadow_is_held(a->sh, cp_now_ns()))
			WARN(CP_WARN_EPOCH_STORM, "an epoch storm holds every line in shadow (conflicting duplicates "
						  "faster than [shadow] epoch_min_interval_ms)");
	}
	char es[16];
	const char *etcd = etcd_state(s->cluster, es, sizeof(es));
	if (etcd && strcmp(etcd, "up") != 0)
		WARN(CP_WARN_ETCD_LOST, "[cluster] etcd is %s: every line is held in shadow", etcd);
	int64_t na;
	if (srv && cp_status_cert_not_after(srv, &na) == 0) {
		int64_t left = na - (int64_t)unix_now();
		if (left <= 0)
			WARN(CP_WARN_CERT_EXPIRED, "the TLS certificate %s expired %lld days ago", s->cfg->tls_cert,
			     (long long)(-left / 86400));
		else if (left < CP_STATUS_CERT_WARN_S)
			WARN(CP_WARN_CERT_EXPIRING, "the TLS certificate %s expires in %lld days", s->cfg->tls_cert,
			     (long long)(left / 86400));
	}
	if (s->b && s->b->port.driver[0]) {
		if (!s->b->port.hugepages)
			WARN(CP_WARN_NO_HUGEPAGES, "the dataplane runs without hugepages (--no-huge): slower, not for "
						   "production");
		if (!strcmp(cp_status_link(s->b), "down"))
			WARN(CP_WARN_LINK_DOWN, "the dataplane's port %s%s%s has no link", s->b->port.device,
			     s->b->port.ifname[0] ? " on " : "", s->b->port.ifname);
	}
	if (!s->cfg->alert_command[0])
		WARN(CP_WARN_NO_ALERT_COMMAND, "[audit] alert_command is empty: a divergence pages nobody");
	if (e && e->lines.points_down) {
		char pts[32] = "";
		size_t k = 0;
		for (unsigned p = 1; p <= FG_POINTS && k < sizeof(pts); p++)
			if (e->lines.points_down & (1u << (p - 1)))
				k += (size_t)snprintf(pts + k, sizeof(pts) - k, "%se%u", k ? "," : "", p);
		WARN(CP_WARN_POINTS_DOWN, "point(s) %s have no live peer: their lines are degraded", pts);
	}
	if (s->reload && s->reload->last_refused)
		WARN(CP_WARN_RELOAD_REFUSED, "the last configuration reload was refused: %s is not what runs",
		     s->config_path ? s->config_path : "the file");
#undef WARN
	return w;
}

static json_t *dataplane_json(const struct fg_boundary *b)
{
	if (!b || !b->port.driver[0])
		return json_pack("{s:b}", "running", 0);
	const struct fg_port_facts *p = &b->port;
	return json_pack("{s:b,s:s,s:s,s:s,s:s,s:i,s:s,s:I,s:i,s:i,s:i,s:b}", "running", 1, "profile", p->profile,
			 "driver", p->driver, "device", p->device, "interface", p->ifname, "port_id", (int)p->port_id,
			 "link", cp_status_link(b), "link_speed_mbps", (json_int_t)p->link_speed_mbps, "rx_queues",
			 (int)p->rx_queues, "tx_queues", (int)p->tx_queues, "lcores", (int)p->lcores, "hugepages",
			 p->hugepages);
}

static json_t *tls_json(const struct cp_status_src *s)
{
	const struct cp_server *srv = s->srv;
	json_t *j = json_pack("{s:i,s:I,s:I,s:s,s:I,s:b}", "port", (int)srv->port, "connections",
			      (json_int_t)srv->n_conns, "ws_sessions_total", (json_int_t)srv->st.ws_sessions, "cert",
			      s->cfg->tls_cert, "tokens", (json_int_t)srv->tls.n_tokens, "client_ca", srv->tls.mtls);
	int64_t na;
	if (j && cp_status_cert_not_after(srv, &na) == 0) {
		char when[32];
		time_t t = (time_t)na;
		struct tm tm;
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
		json_object_set_new(j, "cert_not_after", json_string(when));
		json_object_set_new(j, "cert_days_left", json_integer((json_int_t)((na - (int64_t)unix_now()) / 86400)));
	}
	return j;
}

static json_t *audit_json(const struct cp_status_src *s)
{
	const struct cp_audit *a = s->srv->audit;
	json_t *j = json_pack("{s:b,s:s,s:s}", "enabled", cp_audit_is_running(a), "path", s->cfg->audit_path,
			      "alert_command", s->cfg->alert_command[0] ? "set" : "none");
	if (!j || !cp_audit_is_running(a))
		return j;
	uint8_t hash[FG_AUDIT_HASH_LEN];
	char hex[2 * FG_AUDIT_HASH_LEN + 1];
	uint64_t next = 0;
	cp_shadow_head(a->sh, hash, &next);
	fg_audit_hex(hash, hex);
	/* the head an operator pins (fanoctl audit verify prints the same) */
	json_object_set_new(j, "durable_records", json_integer((json_int_t)next));
	if (next)
		json_object_set_new(j, "head_seq", json_integer((json_int_t)(next - 1)));
	json_object_set_new(j, "head_hash", json_string(hex));
	json_object_set_new(j, "failed", json_boolean(cp_shadow_failed(a->sh)));
	struct cp_shadow_stats st;
	cp_shadow_stats(a->sh, &st);
	json_object_set_new(j, "divergences", json_integer((json_int_t)st.verdicts_divergent));
	if (st.last_divergence_unix_ns) {
		char when[32];
		time_t t = (time_t)(st.last_divergence_unix_ns / 1000000000u);
		struct tm tm;
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
		json_object_set_new(j, "last_divergence", json_string(when));
	}
	return j;
}

static json_t *cluster_json(const struct cp_cluster *c)
{
	json_t *cl = cp_cluster_json(c);
	if (!cl)
		return json_pack("{s:b}", "enabled", 0);
	unsigned live = 0, n = 0;
	size_t i;
	json_t *node;
	json_array_foreach(json_object_get(cl, "nodes"), i, node) {
		n++;
		live += json_is_true(json_object_get(node, "live"));
	}
	json_t *j = json_pack("{s:b,s:O,s:O,s:i,s:i}", "enabled", 1, "node", json_object_get(cl, "node"), "etcd",
			      json_object_get(cl, "etcd"), "nodes", (int)n, "nodes_live", (int)live);
	json_decref(cl);
	return j;
}

json_t *cp_status_json(const struct cp_status_src *s)
{
	const struct cp_engine *e = s->engine;
	char host[256] = "";
	if (gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "unknown");
	char states[FG_LINES * 12] = "";
	for (unsigned i = 0; i < FG_LINES; i++) {
		strcat(states, fg_line_state_name(fg_line_effective(&e->lines, i)));
		if (i + 1 < FG_LINES)
			strcat(states, ",");
	}
	char metrics[80] = "off";
	if (s->metrics_port) {
		char a[64] = "?";
		const struct fg_addr *m = &s->cfg->metrics_listen;
		inet_ntop(m->family == AF_INET6 ? AF_INET6 : AF_INET, m->addr, a, sizeof(a));
		snprintf(metrics, sizeof(metrics), m->family == AF_INET6 ? "http://[%s]:%u/metrics" : "http://%s:%u/metrics",
			 a, s->metrics_port);
	}
	json_t *j = json_pack("{s:b,s:s,s:s,s:i,s:I,s:s,s:s,s:o,s:s,s:s,s:o,s:o,s:o,s:I,s:s,s:I,s:I,s:I,s:I}", "ok", 1,
			      "version", FANOGATE_VERSION, "host", host, "pid", (int)getpid(), "uptime_ms",
			      (json_int_t)((cp_now_ns() - s->started_ns) / 1000000ull), "mode",
			      e->lanes_mode ? "dataplane" : "local", "config",
			      s->config_path ? s->config_path : "embedded default", "dataplane", dataplane_json(s->b),
			      "metrics", metrics, "operator_socket", s->cfg->op_socket, "tls", tls_json(s), "audit",
			      audit_json(s), "cluster", cluster_json(s->cluster), "model_epoch", (json_int_t)e->epoch, "lines",
			      states, "frames_tls", (json_int_t)e->st.frames, "seeds_resolved", (json_int_t)e->st.resolved,
			      "slots_expired", (json_int_t)e->st.expired, "tls_port", (json_int_t)s->srv->port);
	if (!j)
		return NULL;
	if (!e->lanes_mode)
		json_object_set_new(j, "slots_open", json_integer(e->slots.in_use));
	char text[CP_WARN__COUNT][CP_STATUS_TEXT_MAX];
	uint32_t w = cp_status_warnings(s, text);
	json_t *arr = json_array();
	for (unsigned k = 0; arr && k < CP_WARN__COUNT; k++)
		if (w & (1u << k))
			json_array_append_new(arr, json_pack("{s:s,s:s}", "warning", cp_warning_name((enum cp_warning)k),
							     "text", text[k]));
	json_object_set_new(j, "warnings", arr ? arr : json_array());
	return j;
}

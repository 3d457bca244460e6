/* fanoctl_config.c - `fanoctl config check FILE [--json]` (validate a
 * configuration and print its effective summary, or the refusal as
 * file:line: reason, exit 1) and `fanoctl config keys [--json]` (every key
 * with its default, range and meaning; docs/config.md mirrors it).
 *
 * Who may call: fanoctl's main (single-threaded). */
#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "fanoctl.h"
#include "fg/config.h"

void fanoctl_config_help(FILE *out)
{
	fprintf(out, "usage: fanoctl config check FILE [--json]\n"
		     "       fanoctl config keys [--json]\n"
		     "       fanoctl config reload [--json]\n\n"
		     "check  parse and validate FILE as fanogate would (fanogate --check-config\n"
		     "       does the same) and print the effective configuration: every value,\n"
		     "       defaults included. A refusal prints FILE:LINE: REASON and exits 1.\n"
		     "keys   list every key: section, name, type, default, accepted range, meaning.\n"
		     "reload ask the running daemon to re-read the file it was started with\n"
		     "       (also SIGHUP): the whole file is validated; [lines] auto_promote,\n"
		     "       promote_count, promote_ms and [tls] ws_max_message, handshake and idle\n"
		     "       timeouts, send_queue_max, max_connections (grow only) change live, all\n"
		     "       at once; any other changed key refuses the reload as a whole, naming\n"
		     "       the keys that need a restart. Audited. Prints the changes applied.\n\n"
		     "exit: 0 valid (reload: applied or unchanged), 1 invalid, unreadable or refused\n"
		     "(reload prints FILE:LINE: REASON), 2 usage error, 3 daemon unreachable.\n");
}

static void addr_text(const struct fg_addr *a, char *buf, size_t cap)
{
	char host[INET6_ADDRSTRLEN];

	if (!a->set) {
		snprintf(buf, cap, "off");
		return;
	}
	inet_ntop(a->family, a->addr, host, sizeof(host));
	snprintf(buf, cap, a->family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, a->port);
}

static void prefix_text(const struct fg_prefix *p, char *buf, size_t cap)
{
	char host[INET6_ADDRSTRLEN];

	inet_ntop(p->family, p->addr, host, sizeof(host));
	snprintf(buf, cap, "%s/%u", host, p->len);
}

/* The n prefixes of p as a JSON array of "addr/len" strings. */
static json_t *prefixes_json(const struct fg_prefix *p, unsigned n)
{
	json_t *arr = json_array();
	char t[INET6_ADDRSTRLEN + 8];

	for (unsigned i = 0; i < n; i++) {
		prefix_text(&p[i], t, sizeof(t));
		json_array_append_new(arr, json_string(t));
	}
	return arr;
}

/* The n prefixes of p as an INI value: " a/l, b/l" (nothing when n is 0). */
static void print_prefixes(const struct fg_prefix *p, unsigned n)
{
	char t[INET6_ADDRSTRLEN + 8];

	for (unsigned i = 0; i < n; i++) {
		prefix_text(&p[i], t, sizeof(t));
		printf("%s%s", i ? ", " : " ", t);
	}
}

static void rule_text(const struct fg_rule *r, char *buf, size_t cap)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < r->n && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, i ? ",%u" : "%u", r->order[i]);
}

static json_t *addr_json(const struct fg_addr *a)
{
	char t[64];

	if (!a->set)
		return json_null();
	addr_text(a, t, sizeof(t));
	return json_string(t);
}

static const char *seccomp_text(uint8_t m)
{
	switch (m) {
	case FG_SECCOMP_OFF: return "off";
	case FG_SECCOMP_ON: return "on";
	case FG_SECCOMP_KILL: return "kill";
	case FG_SECCOMP_LOG: return "log";
	}
	return "?";
}

/* The effective configuration as JSON (sections as objects). */
static json_t *config_json(const struct fg_config *c)
{
	json_t *root = json_object(), *s;
	char t[128];

	s = json_object();
	json_object_set_new(s, "hidden", json_integer(c->hidden));
	json_object_set_new(s, "layers", json_integer(c->layers));
	json_object_set_new(s, "max_seq_len", json_integer(c->max_seq_len));
	json_object_set_new(root, "model", s);

	s = json_object();
	json_object_set_new(s, "seed_base", json_integer(c->bands.seed_base));
	json_object_set_new(s, "canonical_base", json_integer(c->bands.canonical_base));
	json_object_set_new(s, "resolved_base", json_integer(c->bands.resolved_base));
	json_object_set_new(s, "layer_bits", json_integer(c->bands.layer_bits));
	json_object_set_new(root, "bands", s);

	s = json_object();
	for (unsigned l = 0; l < c->layers; l++) {
		json_t *arr = json_array();
		for (unsigned i = 0; i < c->rules[l].n; i++)
			json_array_append_new(arr, json_integer(c->rules[l].order[i]));
		snprintf(t, sizeof(t), "layer.%u", l);
		json_object_set_new(s, t, arr);
	}
	json_object_set_new(root, "rules", s);

	s = json_object();
	json_object_set_new(s, "capacity", json_integer(c->slot_capacity));
	json_object_set_new(s, "deadline_ms", json_integer((json_int_t)(c->slot_deadline_ns / 1000000u)));
	json_object_set_new(root, "slots", s);

	s = json_object();
	for (unsigned l = 0; l < FG_LINES; l++) {
		snprintf(t, sizeof(t), "line.%u", l);
		json_object_set_new(s, t, json_string(fg_line_state_name(c->line_initial[l])));
	}
	json_object_set_new(s, "auto_promote", json_boolean(c->policy.auto_promote));
	json_object_set_new(s, "promote_count", json_integer(c->policy.promote_count));
	json_object_set_new(s, "promote_ms", json_integer((json_int_t)(c->policy.promote_ns / 1000000u)));
	json_object_set_new(s, "shadow_sample", json_real(c->shadow_sample));
	json_object_set_new(root, "lines", s);

	s = json_object();
	json_object_set_new(s, "port", json_integer(c->udp_port));
	json_object_set_new(s, "raw_port", json_integer(c->udp_raw_port));
	json_object_set_new(s, "mtu", json_integer(c->mtu));
	json_object_set_new(s, "ack_interval_ms", json_integer(c->ack_interval_ms));
	json_object_set_new(s, "send_status", json_boolean(c->send_status));
	json_object_set_new(s, "allow", prefixes_json(c->allow, c->n_allow));
	json_object_set_new(s, "reasm_contexts", json_integer(c->reasm_contexts));
	json_object_set_new(s, "reasm_timeout_ms", json_integer(c->reasm_timeout_ms));
	json_object_set_new(root, "udp", s);

	s = json_object();
	json_object_set_new(s, "default", addr_json(&c->consumer_default));
	for (unsigned l = 0; l < c->layers; l++) {
		snprintf(t, sizeof(t), "layer.%u", l);
		json_object_set_new(s, t, addr_json(&c->consumer[l]));
	}
	json_object_set_new(s, "resend_ms", json_integer(c->delivery_resend_ms));
	json_object_set_new(s, "resends", json_integer(c->delivery_resends));
	json_object_set_new(s, "pending_max", json_integer(c->delivery_pending_max));
	json_object_set_new(root, "consumers", s);

	s = json_object();
	for (unsigned p = 0; p < FG_POINTS; p++) {
		snprintf(t, sizeof(t), "e%u", p + 1);
		json_object_set_new(s, t, prefixes_json(c->point_prefix[p], c->n_point_prefix[p]));
	}
	json_object_set_new(s, "peer_timeout_ms", json_integer(c->peer_timeout_ms));
	json_object_set_new(root, "points", s);

	s = json_object();
	json_object_set_new(s, "profile", json_string(c->dp_profile));
	json_object_set_new(s, "lcores", json_integer(c->lcores));
	json_object_set_new(root, "dataplane", s);

	s = json_object();
	json_object_set_new(s, "listen", addr_json(&c->tls_listen));
	json_object_set_new(s, "cert", json_string(c->tls_cert));
	json_object_set_new(s, "key", json_string(c->tls_key));
	json_object_set_new(s, "ca", json_string(c->tls_ca));
	json_object_set_new(s, "require_client_cert", json_boolean(c->tls_require_client_cert));
	json_object_set_new(s, "tokens_file", json_string(c->tokens_file));
	json_object_set_new(s, "max_connections", json_integer(c->max_connections));
	json_object_set_new(s, "ws_max_message", json_integer(c->ws_max_message));
	json_object_set_new(s, "handshake_timeout_ms", json_integer(c->handshake_timeout_ms));
	json_object_set_new(s, "idle_timeout_ms", json_integer(c->idle_timeout_ms));
	json_object_set_new(s, "send_queue_max", json_integer(c->send_queue_max));
	json_object_set_new(s, "unauth_per_source", json_integer(c->unauth_per_source));
	json_object_set_new(s, "auth_reserve", json_real(c->auth_reserve));
	json_object_set_new(s, "body_min_rate", json_integer(c->body_min_rate));
	json_object_set_new(root, "tls", s);

	s = json_object();
	json_object_set_new(s, "path", json_string(c->audit_path));
	json_object_set_new(s, "rotate_bytes", json_integer((json_int_t)c->audit_rotate_bytes));
	json_object_set_new(s, "group_commit_us", json_integer(c->group_commit_us));
	json_object_set_new(s, "alert_command", json_string(c->alert_command));
	json_object_set_new(s, "alert_min_interval_ms", json_integer(c->alert_min_interval_ms));
	json_object_set_new(root, "audit", s);

	s = json_object();
	json_object_set_new(s, "socket", json_string(c->op_socket));
	json_object_set_new(s, "group", json_string(c->op_group));
	json_object_set_new(root, "operator", s);

	s = json_object();
	json_object_set_new(s, "listen", addr_json(&c->metrics_listen));
	json_object_set_new(root, "metrics", s);

	s = json_object();
	json_object_set_new(s, "user", json_string(c->run_user));
	json_object_set_new(s, "group", json_string(c->run_group));
	json_object_set_new(s, "seccomp", json_string(seccomp_text(c->seccomp)));
	json_object_set_new(root, "daemon", s);
	return root;
}

static const char *str_or(const char *s, const char *dflt)
{
	return s[0] ? s : dflt;
}

/* The human summary: INI-shaped, so it can be pasted back into a file. */
static void config_print(const struct fg_config *c)
{
	char t[128], u[128];

	printf("[model]\nhidden = %u\nlayers = %u\nmax_seq_len = %u\n", c->hidden, c->layers, c->max_seq_len);
	printf("; largest seed frame: %llu bytes\n", (unsigned long long)fg_config_max_frame(c));
	printf("\n[bands]\nseed_base = 0x%04X\ncanonical_base = 0x%04X\nresolved_base = 0x%04X\nlayer_bits = %u\n",
	       c->bands.seed_base, c->bands.canonical_base, c->bands.resolved_base, c->bands.layer_bits);

	/* Rules: the most common rule as default, the others per layer. */
	unsigned best = 0, best_n = 0;
	for (unsigned l = 0; l < c->layers; l++) {
		unsigned n = 0;
		for (unsigned k = 0; k < c->layers; k++)
			n += memcmp(&c->rules[l], &c->rules[k], sizeof(c->rules[l])) == 0;
		if (n > best_n) {
			best_n = n;
			best = l;
		}
	}
	rule_text(&c->rules[best], t, sizeof(t));
	printf("\n[rules]\ndefault = %s\n", t);
	for (unsigned l = 0; l < c->layers; l++) {
		if (memcmp(&c->rules[l], &c->rules[best], sizeof(c->rules[l])) == 0)
			continue;
		rule_text(&c->rules[l], t, sizeof(t));
		printf("layer.%u = %s\n", l, t);
	}

	printf("\n[slots]\ncapacity = %u\ndeadline_ms = %llu\n", c->slot_capacity,
	       (unsigned long long)(c->slot_deadline_ns / 1000000u));

	printf("\n[lines]\n");
	for (unsigned l = 0; l < FG_LINES; l++)
		printf("line.%u = %s  ; %s\n", l, fg_line_state_name(c->line_initial[l]), fg_fano_line_name(l));
	printf("auto_promote = %s\npromote_count = %u\npromote_ms = %llu\nshadow_sample = %g\n",
	       c->policy.auto_promote ? "true" : "false", c->policy.promote_count,
	       (unsigned long long)(c->policy.promote_ns / 1000000u), c->shadow_sample);

	printf("\n[udp]\nport = %u\nraw_port = %u\nmtu = %u\nack_interval_ms = %u\nsend_status = %s\nallow =",
	       c->udp_port, c->udp_raw_port, c->mtu, c->ack_interval_ms, c->send_status ? "true" : "false");
	print_prefixes(c->allow, c->n_allow);
	printf("%s\nreasm_contexts = %u\nreasm_timeout_ms = %u\n", c->n_allow ? "" : "  ; every source",
	       c->reasm_contexts, c->reasm_timeout_ms);

	printf("\n[consumers]\n");
	if (c->consumer_default.set) {
		addr_text(&c->consumer_default, t, sizeof(t));
		printf("default = %s\n", t);
	} else {
		printf("default =  ; none\n");
	}
	for (unsigned l = 0; l < c->layers; l++) {
		if (memcmp(&c->consumer[l], &c->consumer_default, sizeof(c->consumer[l])) == 0)
			continue;
		addr_text(&c->consumer[l], t, sizeof(t));
		printf("layer.%u = %s\n", l, t);
	}
	printf("resend_ms = %u\nresends = %u\npending_max = %u\n", c->delivery_resend_ms, c->delivery_resends,
	       c->delivery_pending_max);

	printf("\n[points]\n");
	for (unsigned p = 0; p < FG_POINTS; p++) {
		printf("e%u =", p + 1);
		print_prefixes(c->point_prefix[p], c->n_point_prefix[p]);
		printf("%s\n", c->n_point_prefix[p] ? "" : "  ; TLS peers only");
	}
	printf("peer_timeout_ms = %u\n", c->peer_timeout_ms);

	printf("\n[dataplane]\nprofile = %s\nlcores = %u\n", c->dp_profile, c->lcores);

	addr_text(&c->tls_listen, t, sizeof(t));
	printf("\n[tls]\nlisten = %s\ncert = %s\nkey = %s\nca = %s\nrequire_client_cert = %s\ntokens_file = %s\n", t,
	       str_or(c->tls_cert, " ; none: TLS needs cert and key"), str_or(c->tls_key, " ; none"), c->tls_ca,
	       c->tls_require_client_cert ? "true" : "false", str_or(c->tokens_file, " ; no token auth"));
	printf("max_connections = %u\nws_max_message = %u\nhandshake_timeout_ms = %u\nidle_timeout_ms = %u\n"
	       "send_queue_max = %u\nunauth_per_source = %u\nauth_reserve = %g\nbody_min_rate = %u\n",
	       c->max_connections, c->ws_max_message, c->handshake_timeout_ms, c->idle_timeout_ms, c->send_queue_max,
	       c->unauth_per_source, c->auth_reserve, c->body_min_rate);

	printf("\n[audit]\npath = %s\nrotate_bytes = %llu\ngroup_commit_us = %u\nalert_command = %s\n"
	       "alert_min_interval_ms = %u\n",
	       c->audit_path, (unsigned long long)c->audit_rotate_bytes, c->group_commit_us,
	       str_or(c->alert_command, " ; none"), c->alert_min_interval_ms);

	printf("\n[operator]\nsocket = %s\ngroup = %s\n", c->op_socket, str_or(c->op_group, " ; root only"));

	addr_text(&c->metrics_listen, u, sizeof(u));
	printf("\n[metrics]\nlisten = %s\n", u);

	printf("\n[daemon]\nuser = %s\ngroup = %s\nseccomp = %s\n", str_or(c->run_user, " ; uid 0, no capabilities"),
	       str_or(c->run_group, " ; the user's primary group"), seccomp_text(c->seccomp));
}

static int config_check(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false;
	int c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'h': fanoctl_config_help(stdout); return FANOCTL_OK;
		default: fanoctl_config_help(stderr); return FANOCTL_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "fanoctl config check: want exactly one FILE\n");
		return FANOCTL_USAGE;
	}
	struct fg_config cfg;
	struct fg_config_error err;
	int rc = fg_config_load(&cfg, argv[optind], &err);

	if (rc != 0) {
		if (json) {
			json_t *doc = json_object();
			json_object_set_new(doc, "ok", json_false());
			json_object_set_new(doc, "file", json_string(err.file));
			json_object_set_new(doc, "line", json_integer(err.line));
			json_object_set_new(doc, "reason", json_string(err.reason));
			fanoctl_json_print(doc);
		}
		fprintf(stderr, "%s:%d: %s\n", err.file, err.line, err.reason);
		return FANOCTL_REFUSED;
	}
	if (json) {
		json_t *doc = json_object();
		json_object_set_new(doc, "ok", json_true());
		json_object_set_new(doc, "file", json_string(argv[optind]));
		json_object_set_new(doc, "config", config_json(&cfg));
		fanoctl_json_print(doc);
	} else {
		printf("; %s: valid. Effective configuration (defaults included):\n\n", argv[optind]);
		config_print(&cfg);
	}
	return FANOCTL_OK;
}

static int config_keys(int argc, char **argv)
{
	bool json = argc > 1 && strcmp(argv[1], "--json") == 0;

	if (argc > (json ? 2 : 1)) {
		fprintf(stderr, "fanoctl config keys: takes only --json\n");
		return FANOCTL_USAGE;
	}
	json_t *arr = json ? json_array() : NULL;

	for (size_t i = 0; i < fg_config_key_count(); i++) {
		const struct fg_config_key_doc *k = fg_config_key(i);
		if (json) {
			json_t *o = json_object();
			json_object_set_new(o, "section", json_string(k->section));
			json_object_set_new(o, "key", json_string(k->key));
			json_object_set_new(o, "type", json_string(k->type));
			json_object_set_new(o, "default", json_string(k->def));
			json_object_set_new(o, "range", json_string(k->range));
			json_object_set_new(o, "help", json_string(k->help));
			json_array_append_new(arr, o);
		} else {
			printf("[%s] %s (%s) default \"%s\"; %s; %s\n", k->section, k->key, k->type, k->def, k->range, k->help);
		}
	}
	if (json)
		fanoctl_json_print(arr);
	return FANOCTL_OK;
}

int fanoctl_config(int argc, char **argv)
{
	if (argc < 2) {
		fanoctl_config_help(stderr);
		return FANOCTL_USAGE;
	}
	if (strcmp(argv[1], "check") == 0)
		return config_check(argc - 1, argv + 1);
	if (strcmp(argv[1], "keys") == 0)
		return config_keys(argc - 1, argv + 1);
	if (strcmp(argv[1], "reload") == 0)
		return fanoctl_op_reload(argc - 1, argv + 1);
	fprintf(stderr, "fanoctl config: unknown subcommand '%s' (check, keys, reload)\n", argv[1]);
	return FANOCTL_USAGE;
}

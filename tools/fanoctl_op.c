/* fanoctl_op.c - the commands that ask the running daemon, over its
 * operator socket: status, lines (and line changes), slots, peers, stats.
 *
 * Who may call: fanoctl's main (single-threaded).
 *
 * Operator socket protocol (the daemon side is control/, D1; this is the
 * client's half and the contract proposed to it):
 *   - AF_UNIX SOCK_STREAM at [operator] socket (default
 *     /run/fanogate/fanoctl.sock); the daemon checks the peer with
 *     SO_PEERCRED and file permissions.
 *   - One request per connection: one JSON object and '\n'. The object has
 *     "cmd" plus arguments:
 *       {"cmd":"status"}
 *       {"cmd":"lines"}
 *       {"cmd":"line","line":1,"op":"enable|disable|shadow|active|auto_promote","on":true,"why":"text"}
 *       {"cmd":"slots"}   {"cmd":"slot","layer":3,"token_seq":42}
 *       {"cmd":"peers"}   {"cmd":"stats"}   {"cmd":"reload"}
 *   - One reply: one JSON object and '\n' (at most 16 MiB), then the daemon
 *     closes. {"ok":true, ...fields...} or {"ok":false,"error":"reason"}
 *     (optionally "detail": a human sentence, printed after the reason).
 * The human output prints whatever fields the reply holds, so the daemon
 * can add fields without a fanoctl change; --json prints the reply as is.
 *
 * Adding a daemon command: one function below that builds the request (or
 * op_simple) plus one entry in fanoctl.c's table. */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fanoctl.h"
#include "fg/fano.h"

#define OP_REPLY_MAX (16u << 20)
#define OP_TIMEOUT_S 10
#define OP_SOCKET_DEFAULT "/run/fanogate/fanoctl.sock"

static const char *op_socket_path(void)
{
	const char *p = getenv("FANOCTL_SOCKET");

	return p && *p ? p : OP_SOCKET_DEFAULT;
}

/* Send req, read the reply. Returns 0 with *reply set, or an exit code
 * (FANOCTL_UNREACHABLE, FANOCTL_REFUSED) after printing why. Takes req. */
static int op_call(json_t *req, json_t **reply)
{
	const char *path = op_socket_path();
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char *text = json_dumps(req, JSON_COMPACT);

	json_decref(req);
	if (!text)
		return FANOCTL_REFUSED;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "fanoctl: socket path too long: %s\n", path);
		free(text);
		return FANOCTL_USAGE;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "fanoctl: cannot reach fanogate at %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		free(text);
		return FANOCTL_UNREACHABLE;
	}
	struct timeval tv = {.tv_sec = OP_TIMEOUT_S};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));

	size_t n = strlen(text);
	text[n] = '\n'; /* json_dumps' NUL becomes the request terminator */
	for (size_t off = 0; off < n + 1;) {
		ssize_t w = send(fd, text + off, n + 1 - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			fprintf(stderr, "fanoctl: sending to %s: %s\n", path, strerror(errno));
			close(fd);
			free(text);
			return FANOCTL_UNREACHABLE;
		}
		off += (size_t)w;
	}
	free(text);

	size_t cap = 4096, have = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (have + 1 == cap) {
			if (cap >= OP_REPLY_MAX)
				break;
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
		ssize_t r = recv(fd, buf + have, cap - 1 - have, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "fanoctl: no reply from %s: %s\n", path, strerror(errno));
			free(buf);
			close(fd);
			return FANOCTL_UNREACHABLE;
		}
		if (r == 0)
			break;
		have += (size_t)r;
		if (memchr(buf + have - (size_t)r, '\n', (size_t)r))
			break;
	}
	close(fd);
	if (!buf)
		return FANOCTL_REFUSED;
	buf[have] = '\0';
	json_error_t jerr;
	json_t *rep = json_loads(buf, JSON_DISABLE_EOF_CHECK, &jerr);
	free(buf);
	if (!json_is_object(rep)) {
		fprintf(stderr, "fanoctl: unreadable reply from %s: %s\n", path, have ? jerr.text : "empty");
		json_decref(rep);
		return FANOCTL_UNREACHABLE;
	}
	*reply = rep;
	return 0;
}

/* Generic human printing: scalars as "key: value", nested objects
 * indented, arrays of objects one per line. */
static void print_value(const char *key, json_t *v, int indent);

static void print_scalar(json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_STRING: printf("%s", json_string_value(v)); break;
	case JSON_INTEGER: printf("%lld", (long long)json_integer_value(v)); break;
	case JSON_REAL: printf("%g", json_real_value(v)); break;
	case JSON_TRUE: printf("true"); break;
	case JSON_FALSE: printf("false"); break;
	case JSON_NULL: printf("-"); break;
	default: {
		char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
		printf("%s", s ? s : "?");
		free(s);
	}
	}
}

static void print_value(const char *key, json_t *v, int indent)
{
	if (json_is_object(v)) {
		const char *k;
		json_t *x;
		if (key)
			printf("%*s%s:\n", indent, "", key);
		json_object_foreach(v, k, x) print_value(k, x, key ? indent + 2 : indent);
		return;
	}
	if (json_is_array(v) && json_array_size(v) && json_is_object(json_array_get(v, 0))) {
		size_t i;
		json_t *x;
		printf("%*s%s:\n", indent, "", key);
		json_array_foreach(v, i, x) {
			const char *k;
			json_t *y;
			const char *sep = "";
			printf("%*s", indent + 2, "");
			json_object_foreach(x, k, y) {
				printf("%s%s=", sep, k);
				print_scalar(y);
				sep = " ";
			}
			printf("\n");
		}
		return;
	}
	printf("%*s%s: ", indent, "", key);
	print_scalar(v);
	printf("\n");
}

/* Run a request and print the reply. Exit 1 when the daemon says no. */
static int op_run(json_t *req, bool json)
{
	json_t *rep = NULL;
	int rc = op_call(req, &rep);

	if (rc)
		return rc;
	json_t *ok = json_object_get(rep, "ok");
	bool good = json_is_true(ok);

	if (json) {
		fanoctl_json_print(rep);
		return good ? FANOCTL_OK : FANOCTL_REFUSED;
	}
	if (!good) {
		json_t *e = json_object_get(rep, "error");
		json_t *d = json_object_get(rep, "detail");
		fprintf(stderr, "fanoctl: refused: %s%s%s\n", json_is_string(e) ? json_string_value(e) : "(no reason)",
			json_is_string(d) ? ": " : "", json_is_string(d) ? json_string_value(d) : "");
		json_decref(rep);
		return FANOCTL_REFUSED;
	}
	json_object_del(rep, "ok");
	print_value(NULL, rep, 0);
	json_decref(rep);
	return FANOCTL_OK;
}

/* Options shared by the daemon commands: --json only. Leaves optind at
 * the first operand; returns -1 after printing usage, else json. */
static int op_opts(int argc, char **argv, void (*help)(FILE *))
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int json = 0, c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "+jh", opts, NULL)) != -1) {
		if (c == 'j')
			json = 1;
		else {
			help(c == 'h' ? stdout : stderr);
			return -1;
		}
	}
	return json;
}

static int op_simple(int argc, char **argv, const char *cmd, void (*help)(FILE *))
{
	int json = op_opts(argc, argv, help);

	if (json < 0)
		return FANOCTL_USAGE;
	if (optind != argc) {
		fprintf(stderr, "fanoctl %s: unexpected argument '%s'\n", argv[0], argv[optind]);
		return FANOCTL_USAGE;
	}
	json_t *req = json_object();
	json_object_set_new(req, "cmd", json_string(cmd));
	return op_run(req, json);
}

static bool parse_u32(const char *s, uint32_t max, uint32_t *out)
{
	char *end;

	if (!s || !*s || *s == '-')
		return false;
	errno = 0;
	unsigned long v = strtoul(s, &end, 0);
	if (errno || *end || v > max)
		return false;
	*out = (uint32_t)v;
	return true;
}

static void op_common_help(FILE *out)
{
	fprintf(out, "\nAsks the running daemon over its operator socket (fanoctl --socket PATH,\n"
		     "or $FANOCTL_SOCKET). --json prints the daemon's reply as JSON.\n"
		     "exit: 0 ok, 1 refused by the daemon, 2 usage error, 3 daemon unreachable.\n");
}

void fanoctl_op_status_help(FILE *out)
{
	fprintf(out, "usage: fanoctl status [--json]\n\n"
		     "One summary of the running daemon: version, host, uptime; mode and the\n"
		     "dataplane's profile, port, link, queues and hugepages; the config file,\n"
		     "metrics address and operator socket; TLS (port, tokens, certificate end);\n"
		     "the audit log and its head (seq and hash, as `fanoctl audit verify`\n"
		     "prints it); the cluster; the lines; traffic totals; and the warnings in\n"
		     "force (\"no bearer tokens ...: every request is refused\", an audit log\n"
		     "failed closed, etcd lost, a certificate near its end, ...), the same\n"
		     "ones /metrics has as fanogate_warning{warning}.\n");
	op_common_help(out);
}

static const char *jstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));
	return s ? s : "?";
}

static long long jint(json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

static bool jtrue(json_t *o, const char *k)
{
	return json_is_true(json_object_get(o, k));
}

/* "3d 4h", "2h 5m", "42s" */
static void print_uptime(long long ms)
{
	long long s = ms / 1000;
	if (s >= 86400)
		printf("%lldd %lldh", s / 86400, s % 86400 / 3600);
	else if (s >= 3600)
		printf("%lldh %lldm", s / 3600, s % 3600 / 60);
	else if (s >= 60)
		printf("%lldm %llds", s / 60, s % 60);
	else
		printf("%llds", s);
}

/* The status reply as a person reads it: one fact per line, the warnings
 * last and marked. Fields it does not know are not printed (--json has
 * everything). */
static void print_status(json_t *r)
{
	printf("fanogate %s on %s, pid %lld, up ", jstr(r, "version"), jstr(r, "host"), jint(r, "pid"));
	print_uptime(jint(r, "uptime_ms"));
	printf("\n");
	json_t *dp = json_object_get(r, "dataplane");
	if (jtrue(dp, "running")) {
		printf("%-10s dataplane: profile %s, driver %s, device %s", "mode:", jstr(dp, "profile"), jstr(dp, "driver"),
		       jstr(dp, "device"));
		if (*jstr(dp, "interface"))
			printf(" on %s", jstr(dp, "interface"));
		printf("\n%-10s %s", "link:", jstr(dp, "link"));
		if (jint(dp, "link_speed_mbps"))
			printf(" %lld Mb/s", jint(dp, "link_speed_mbps"));
		printf(", %lld rx / %lld tx queues, %lld lcores, %s\n", jint(dp, "rx_queues"), jint(dp, "tx_queues"),
		       jint(dp, "lcores"), jtrue(dp, "hugepages") ? "hugepages" : "no hugepages (--no-huge)");
	} else {
		printf("%-10s %s (no dataplane: slots in the control plane)\n", "mode:", jstr(r, "mode"));
	}
	printf("%-10s %s\n", "config:", jstr(r, "config"));
	printf("%-10s %s\n", "metrics:", jstr(r, "metrics"));
	printf("%-10s %s\n", "operator:", jstr(r, "operator_socket"));
	json_t *tls = json_object_get(r, "tls");
	if (tls) {
		printf("%-10s port %lld, %lld connections, %lld tokens, client CA %s", "tls:", jint(tls, "port"),
		       jint(tls, "connections"), jint(tls, "tokens"), jtrue(tls, "client_ca") ? "yes" : "no");
		if (json_object_get(tls, "cert_not_after"))
			printf(", certificate valid until %s (%lld days)", jstr(tls, "cert_not_after"),
			       jint(tls, "cert_days_left"));
		printf("\n");
	}
	json_t *au = json_object_get(r, "audit");
	if (au && jtrue(au, "enabled")) {
		printf("%-10s %s%s, ", "audit:", jstr(au, "path"), jtrue(au, "failed") ? " FAILED CLOSED" : "");
		if (json_object_get(au, "head_seq"))
			printf("head seq %lld hash %s, ", jint(au, "head_seq"), jstr(au, "head_hash"));
		printf("%lld divergences", jint(au, "divergences"));
		if (json_object_get(au, "last_divergence"))
			printf(" (last %s)", jstr(au, "last_divergence"));
		printf(", alert command %s\n", jstr(au, "alert_command"));
	} else if (au) {
		printf("%-10s off\n", "audit:");
	}
	json_t *cl = json_object_get(r, "cluster");
	if (jtrue(cl, "enabled"))
		printf("%-10s node %s, etcd %s, %lld of %lld nodes live\n", "cluster:", jstr(cl, "node"), jstr(cl, "etcd"),
		       jint(cl, "nodes_live"), jint(cl, "nodes"));
	else
		printf("%-10s off (one appliance)\n", "cluster:");
	const char *ls = jstr(r, "lines");
	printf("%-10s", "lines:");
	for (unsigned i = 0; *ls && i < FG_LINES; i++) {
		size_t n = strcspn(ls, ",");
		printf(" %u %s %.*s%s", i, fg_fano_line_name(i), (int)n, ls, i + 1 < FG_LINES ? "," : "");
		ls += n + (ls[n] == ',');
	}
	printf("\n%-10s model epoch %lld, %lld frames over TLS, %lld seeds resolved, %lld slots expired", "traffic:",
	       jint(r, "model_epoch"), jint(r, "frames_tls"), jint(r, "seeds_resolved"), jint(r, "slots_expired"));
	if (json_object_get(r, "slots_open"))
		printf(", %lld slots open", jint(r, "slots_open"));
	printf("\n");
	json_t *w = json_object_get(r, "warnings");
	if (!json_array_size(w)) {
		printf("%-10s none\n", "warnings:");
		return;
	}
	printf("warnings:\n");
	size_t i;
	json_t *x;
	json_array_foreach(w, i, x) printf("  ! %s (%s)\n", jstr(x, "text"), jstr(x, "warning"));
}

int fanoctl_op_status(int argc, char **argv)
{
	int json = op_opts(argc, argv, fanoctl_op_status_help);

	if (json < 0)
		return FANOCTL_USAGE;
	if (optind != argc) {
		fprintf(stderr, "fanoctl status: unexpected argument '%s'\n", argv[optind]);
		return FANOCTL_USAGE;
	}
	json_t *req = json_object(), *rep = NULL;
	json_object_set_new(req, "cmd", json_string("status"));
	if (json)
		return op_run(req, true);
	int rc = op_call(req, &rep);
	if (rc)
		return rc;
	if (!json_is_true(json_object_get(rep, "ok"))) {
		json_t *e = json_object_get(rep, "error");
		fprintf(stderr, "fanoctl: refused: %s\n", json_is_string(e) ? json_string_value(e) : "(no reason)");
		json_decref(rep);
		return FANOCTL_REFUSED;
	}
	print_status(rep);
	json_decref(rep);
	return FANOCTL_OK;
}

void fanoctl_op_peers_help(FILE *out)
{
	fprintf(out, "usage: fanoctl peers [--json]\n\nLive peers per Fano point e1..e7, and the lines each down point degrades.\n");
	op_common_help(out);
}

int fanoctl_op_peers(int argc, char **argv)
{
	return op_simple(argc, argv, "peers", fanoctl_op_peers_help);
}

void fanoctl_op_cluster_help(FILE *out)
{
	fprintf(out, "usage: fanoctl cluster [--json]\n\n[cluster]: this node, etcd reachability, the nodes, their leases and\n"
		     "heartbeats (live, stale, beat_down), the shared model epoch and every line's local and\n"
		     "fleet-wide state (docs/cluster.md).\n");
	op_common_help(out);
}

int fanoctl_op_cluster(int argc, char **argv)
{
	return op_simple(argc, argv, "cluster", fanoctl_op_cluster_help);
}

#define WATCH_DEFAULT_S 2u

void fanoctl_op_stats_help(FILE *out)
{
	fprintf(out, "usage: fanoctl stats [--json]\n"
		     "       fanoctl stats --watch [SECONDS] [--count N]\n\n"
		     "Counters: frames per ingress, outcomes, malformed reasons, audit verdicts.\n"
		     "--watch asks every SECONDS (1..3600, default %u) and shows every counter\n"
		     "that is not zero with its rate per second since the last sample, under\n"
		     "a header with the local time. On a terminal the screen is redrawn in\n"
		     "place; otherwise each sample is appended, headed by its time. N samples\n"
		     "(default: until interrupted).\n", WATCH_DEFAULT_S);
	op_common_help(out);
}

/* Every non-zero integer leaf of cur, with its rate since prev (none on the
 * first sample). Returns how many were printed. */
static unsigned watch_print(const char *prefix, json_t *cur, json_t *prev, double secs)
{
	const char *k;
	json_t *v;
	unsigned n = 0;
	char path[256];

	json_object_foreach(cur, k, v) {
		json_t *pv = prev ? json_object_get(prev, k) : NULL;
		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", k);
		if (json_is_object(v)) {
			n += watch_print(path, v, json_is_object(pv) ? pv : NULL, secs);
		} else if (json_is_integer(v) && json_integer_value(v)) {
			long long now = json_integer_value(v);
			printf("  %-48s %14lld", path, now);
			if (prev && secs > 0) {
				long long was = json_is_integer(pv) ? json_integer_value(pv) : 0;
				printf("  %+12.1f/s", (double)(now - was) / secs);
			}
			printf("\n");
			n++;
		}
	}
	return n;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int fanoctl_op_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"watch", no_argument, NULL, 'w'},
		{"count", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false, watch = false;
	uint32_t every = WATCH_DEFAULT_S, count = 0;
	int c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'w': watch = true; break;
		case 'c':
			if (!parse_u32(optarg, UINT32_MAX, &count) || count == 0) {
				fprintf(stderr, "fanoctl stats: --count wants a number >= 1\n");
				return FANOCTL_USAGE;
			}
			break;
		case 'h': fanoctl_op_stats_help(stdout); return FANOCTL_OK;
		default: fanoctl_op_stats_help(stderr); return FANOCTL_USAGE;
		}
	}
	/* --watch's interval, when given, is the one operand */
	if (watch && optind + 1 == argc) {
		if (!parse_u32(argv[optind], 3600, &every) || every == 0) {
			fprintf(stderr, "fanoctl stats: --watch wants 1..3600 seconds\n");
			return FANOCTL_USAGE;
		}
		optind++;
	}
	if (optind != argc || (count && !watch) || (json && watch)) {
		fprintf(stderr, "fanoctl stats: takes --json, or --watch [SECONDS] [--count N]\n");
		return FANOCTL_USAGE;
	}
	if (!watch) {
		json_t *req = json_object();
		json_object_set_new(req, "cmd", json_string("stats"));
		return op_run(req, json);
	}
	bool tty = isatty(STDOUT_FILENO);
	json_t *prev = NULL;
	double t_prev = 0;

	for (uint32_t i = 0; !count || i < count; i++) {
		if (i)
			sleep(every);
		json_t *req = json_object(), *rep = NULL;
		json_object_set_new(req, "cmd", json_string("stats"));
		int rc = op_call(req, &rep);
		if (rc) {
			json_decref(prev);
			return rc;
		}
		double t = mono_s();
		if (!json_is_true(json_object_get(rep, "ok"))) {
			json_t *e = json_object_get(rep, "error");
			fprintf(stderr, "fanoctl: refused: %s\n", json_is_string(e) ? json_string_value(e) : "(no reason)");
			json_decref(rep);
			json_decref(prev);
			return FANOCTL_REFUSED;
		}
		json_object_del(rep, "ok");
		char when[64];
		time_t now = time(NULL);
		struct tm tm;
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %z", localtime_r(&now, &tm));
		if (tty)
			printf("\033[H\033[2J"); /* home, clear: the sample replaces the last */
		printf("fanogate stats at %s, every %u s", when, every);
		if (prev)
			printf(", rates over the last %.1f s", t - t_prev);
		printf("%s\n", tty ? " (Ctrl-C to stop)" : "");
		if (watch_print("", rep, prev, prev ? t - t_prev : 0) == 0)
			printf("  (every counter is zero)\n");
		if (!tty)
			printf("\n");
		fflush(stdout);
		json_decref(prev);
		prev = rep;
		t_prev = t;
	}
	json_decref(prev);
	return FANOCTL_OK;
}

void fanoctl_op_slots_help(FILE *out)
{
	fprintf(out, "usage: fanoctl slots [--json] [LAYER TOKEN_SEQ]\n\n"
		     "Without operands: occupancy of the slot table per shard. With LAYER and\n"
		     "TOKEN_SEQ: that slot's state, landed lines, deadline and fingerprints.\n");
	op_common_help(out);
}


int fanoctl_op_slots(int argc, char **argv)
{
	int json = op_opts(argc, argv, fanoctl_op_slots_help);

	if (json < 0)
		return FANOCTL_USAGE;
	json_t *req = json_object();
	if (optind == argc) {
		json_object_set_new(req, "cmd", json_string("slots"));
		return op_run(req, json);
	}
	uint32_t layer, seq;
	if (argc - optind != 2 || !parse_u32(argv[optind], 0xFFFF, &layer) ||
	    !parse_u32(argv[optind + 1], UINT32_MAX, &seq)) {
		json_decref(req);
		fprintf(stderr, "fanoctl slots: want LAYER TOKEN_SEQ (numbers)\n");
		return FANOCTL_USAGE;
	}
	json_object_set_new(req, "cmd", json_string("slot"));
	json_object_set_new(req, "layer", json_integer(layer));
	json_object_set_new(req, "token_seq", json_integer(seq));
	return op_run(req, json);
}

void fanoctl_op_slot_help(FILE *out)
{
	fprintf(out, "usage: fanoctl slot [--json] TOKEN_SEQ LAYER\n\n"
		     "One slot: state, landed lines, deadline and fingerprints (the same as\n"
		     "`fanoctl slots LAYER TOKEN_SEQ`, operands in the token-first order).\n");
	op_common_help(out);
}

int fanoctl_op_slot(int argc, char **argv)
{
	/* Swap the two operands (the last two words) and reuse `slots`. */
	int n = 0, idx[2] = {0, 0};
	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-' && argv[i][1] != '\0')
			continue;
		if (n < 2)
			idx[n] = i;
		n++;
	}
	if (n != 2) {
		bool help = false;
		for (int i = 1; i < argc; i++)
			help |= strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
		fanoctl_op_slot_help(help ? stdout : stderr);
		return help ? FANOCTL_OK : FANOCTL_USAGE;
	}
	char *t = argv[idx[0]];
	argv[idx[0]] = argv[idx[1]];
	argv[idx[1]] = t;
	return fanoctl_op_slots(argc, argv);
}

void fanoctl_op_lines_help(FILE *out)
{
	fprintf(out, "usage: fanoctl lines [--json]\n"
		     "       fanoctl lines enable|disable|shadow|active LINE... [--why TEXT] [--json]\n"
		     "       fanoctl lines auto-promote LINE... on|off [--why TEXT] [--json]\n"
		     "       (also spelled: fanoctl line VERB ..., --reason TEXT, auto-promote on|off LINE...)\n\n"
		     "Without a verb: every line's state (disabled, shadow, active, degraded),\n"
		     "window and counters, the window's lead over the canonical chain (leads,\n"
		     "ahead: share of its compared seeds that were first, lead_p50_us and\n"
		     "lead_p99_us: negative when the chain was first) and, for a shadow line,\n"
		     "what its promotion waits for (promotion: \"clean, not ahead: 12%% of 64\n"
		     "seeds ahead, needs 50%%\"). LINE is an index 0..6, or an oriented Fano triple\n"
		     "in parentheses, quoted for the shell: '(1,4,5)' is line 1. Several\n"
		     "lines: `fanoctl lines shadow 1 2 3`. A bare 1,2,3 is refused as\n"
		     "ambiguous (lines 1, 2 and 3, or the line whose triple it is?).\n"
		     "Each line is changed and audited on its own, in the order given; a\n"
		     "refusal (already, refused, ...) does not stop the others, and makes\n"
		     "the exit status 1. enable: disabled -> shadow; active forces the line\n"
		     "active without a clean window. Every change is audited with your uid\n"
		     "and the --why text (docs/lines.md).\n");
	op_common_help(out);
}

/* One LINE operand: an index 0..6, or "(a,b,c)". Returns the index, or -1
 * after printing why (a bare "a,b,c" is ambiguous). */
static int line_operand(const char *s)
{
	if (s[0] >= '0' && s[0] <= '6' && s[1] == '\0')
		return s[0] - '0';
	if (s[0] == '(') {
		int line = fg_fano_line_parse(s);
		if (line < 0)
			fprintf(stderr, "fanoctl lines: '%s' is not an oriented Fano triple (fanoctl lines lists them)\n", s);
		return line;
	}
	if (strchr(s, ',')) {
		/* "1,2,3" reads as lines 1, 2 and 3 or as line 0, whose triple it
		 * is: neither is guessed */
		char par[64];
		snprintf(par, sizeof(par), "(%s)", s);
		int line = fg_fano_line_parse(par);
		fprintf(stderr, "fanoctl lines: '%s' is ambiguous: write ", s);
		if (line >= 0)
			fprintf(stderr, "'%s' for line %d, whose triple it is, or ", par, line);
		else
			fprintf(stderr, "a triple in parentheses, such as '(1,4,5)', or ");
		fprintf(stderr, "the indexes apart (");
		for (const char *p = s; *p; p++)
			fputc(*p == ',' ? ' ' : *p, stderr);
		fprintf(stderr, ") for several lines\n");
		return -1;
	}
	fprintf(stderr, "fanoctl lines: '%s' is not a line (an index 0..6, or a triple such as '(1,4,5)')\n", s);
	return -1;
}

/* One line change; prints its result unless json. Returns 0, or an exit
 * code (FANOCTL_REFUSED for a refusal, FANOCTL_UNREACHABLE: stop). With
 * out, the reply is appended to it instead of printed. */
static int line_change(int line, const char *op, int on, const char *why, bool json, bool many, json_t *out)
{
	json_t *req = json_object(), *rep = NULL;
	json_object_set_new(req, "cmd", json_string("line"));
	json_object_set_new(req, "line", json_integer(line));
	json_object_set_new(req, "op", json_string(op));
	if (on >= 0)
		json_object_set_new(req, "on", json_boolean(on));
	if (why)
		json_object_set_new(req, "why", json_string(why));
	if (!many)
		return op_run(req, json);
	int rc = op_call(req, &rep);
	if (rc)
		return rc;
	bool good = json_is_true(json_object_get(rep, "ok"));
	if (json) {
		json_object_set_new(rep, "line_index", json_integer(line));
		json_array_append(out, rep);
	} else if (good) {
		json_t *ln = json_object_get(rep, "line");
		printf("line %d %s: %s", line, fg_fano_line_name((unsigned)line), jstr(ln, "state"));
		if (on >= 0)
			printf(", auto_promote %s", jtrue(ln, "auto_promote") ? "on" : "off");
		printf("%s\n", json_object_get(rep, "changed") && !jtrue(rep, "changed") ? " (unchanged)" : "");
	} else {
		json_t *d = json_object_get(rep, "detail");
		fprintf(stderr, "fanoctl: line %d %s: refused: %s%s%s\n", line, fg_fano_line_name((unsigned)line),
			jstr(rep, "error"), json_is_string(d) ? ": " : "", json_is_string(d) ? json_string_value(d) : "");
	}
	json_decref(rep);
	return good ? FANOCTL_OK : FANOCTL_REFUSED;
}

int fanoctl_op_lines(int argc, char **argv)
{
	static const struct option opts[] = {
		{"json", no_argument, NULL, 'j'},
		{"why", required_argument, NULL, 'w'},
		{"reason", required_argument, NULL, 'w'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const char *const verbs[] = {"enable", "disable", "shadow", "active", "auto-promote"};
	bool json = false;
	const char *why = NULL;
	int c;

	optind = 0;
	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = true; break;
		case 'w': why = optarg; break;
		case 'h': fanoctl_op_lines_help(stdout); return FANOCTL_OK;
		default: fanoctl_op_lines_help(stderr); return FANOCTL_USAGE;
		}
	}
	if (optind == argc) {
		if (why) {
			fprintf(stderr, "fanoctl lines: --why goes with a verb\n");
			return FANOCTL_USAGE;
		}
		json_t *req = json_object();
		json_object_set_new(req, "cmd", json_string("lines"));
		return op_run(req, json);
	}
	const char *verb = argv[optind++];
	size_t v;
	for (v = 0; v < sizeof(verbs) / sizeof(verbs[0]); v++)
		if (strcmp(verb, verbs[v]) == 0)
			break;
	if (v == sizeof(verbs) / sizeof(verbs[0])) {
		fprintf(stderr, "fanoctl lines: want enable|disable|shadow|active LINE..., or auto-promote LINE... on|off\n");
		return FANOCTL_USAGE;
	}
	bool auto_promote = v == 4;
	int on = -1, first = optind, last = argc; /* the LINE operands: argv[first..last) */
	if (auto_promote) {
		/* "auto-promote LINE... on|off" and the operator guide's "auto-promote on|off LINE..." */
		const char *w = NULL;
		if (first < argc && (!strcmp(argv[first], "on") || !strcmp(argv[first], "off")))
			w = argv[first++];
		else if (last > first && (!strcmp(argv[last - 1], "on") || !strcmp(argv[last - 1], "off")))
			w = argv[--last];
		if (!w) {
			fprintf(stderr, "fanoctl lines auto-promote: on or off\n");
			return FANOCTL_USAGE;
		}
		on = !strcmp(w, "on");
	}
	if (first == last) {
		fprintf(stderr, "fanoctl lines %s: which line? (an index 0..6 or a triple such as '(1,4,5)')\n", verb);
		return FANOCTL_USAGE;
	}
	int lines[FG_LINES], n = 0;
	unsigned seen = 0;
	for (int i = first; i < last; i++) {
		int line = line_operand(argv[i]);
		if (line < 0)
			return FANOCTL_USAGE;
		if (seen & (1u << line)) {
			fprintf(stderr, "fanoctl lines: line %d %s is named twice\n", line, fg_fano_line_name((unsigned)line));
			return FANOCTL_USAGE;
		}
		seen |= 1u << line;
		lines[n++] = line;
	}
	const char *op = auto_promote ? "auto_promote" : verb;
	if (n == 1)
		return line_change(lines[0], op, on, why, json, false, NULL);
	json_t *all = json ? json_array() : NULL;
	int worst = FANOCTL_OK;
	for (int i = 0; i < n; i++) {
		int rc = line_change(lines[i], op, on, why, json, true, all);
		if (rc == FANOCTL_UNREACHABLE || rc == FANOCTL_USAGE) {
			json_decref(all);
			return rc;
		}
		if (rc)
			worst = rc;
	}
	if (json)
		fanoctl_json_print(json_pack("{s:b,s:o}", "ok", worst == FANOCTL_OK, "results", all));
	return worst;
}

int fanoctl_op_audit_path(char *buf, size_t len)
{
	json_t *req = json_object(), *rep = NULL;
	json_object_set_new(req, "cmd", json_string("status"));
	int rc = op_call(req, &rep);
	if (rc)
		return rc;
	const char *p = json_string_value(json_object_get(json_object_get(rep, "audit"), "path"));
	if (!json_is_true(json_object_get(rep, "ok")) || !p || !*p || strlen(p) >= len) {
		fprintf(stderr, "fanoctl: the daemon did not name its audit log (give FILE)\n");
		json_decref(rep);
		return FANOCTL_REFUSED;
	}
	snprintf(buf, len, "%s", p);
	json_decref(rep);
	return 0;
}

int fanoctl_op_reload(int argc, char **argv)
{
	return op_simple(argc, argv, "reload", fanoctl_config_help);
}

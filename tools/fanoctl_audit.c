/* fanoctl_audit.c - `fanoctl audit verify FILE...`,
 * `fanoctl audit tail [--json] [-n N] [-f] FILE` and
 * `fanoctl audit repair FILE`.
 *
 * Owns: the offline reading of audit log files (no daemon needed: the log
 * is self-describing), on the core's record format (fg/audit.h) and file
 * scan (fg/audit_file.h) only. Repairing writes the log, which only the
 * daemon's writer does: `repair` runs `fanogate --audit-repair FILE`.
 * tools/fanoctl's dispatcher calls fanoctl_audit_cli with the words after
 * "audit" (see fanoctl_audit.h).
 * Runs in the CLI's only thread; prints to stdout, errors to stderr.
 *
 * Exit codes: 0 ok; 1 the log is bad (verify) ; 2 usage or I/O error. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "fanoctl_audit.h"
#include "fg/audit.h"
#include "fg/audit_file.h"
#include "fg/line.h"
#include "fg/text.h"

/* The line module's own names, so a new event (point_down, point_up, ...)
 * shows up here without a second table. */
static const char *state_name(unsigned s) { return fg_line_state_name((enum fg_line_state)s); }
static const char *event_name(unsigned e) { return fg_line_event_name((enum fg_line_event)e); }

/* "uid U pid P" for an operator, "audit" for the daemon's own decisions
 * (FG_UID_AUDIT); the JSON output keeps the raw numbers. */
static const char *who(uint32_t uid, int32_t pid, char *buf, size_t cap)
{
	if (uid == FG_UID_AUDIT)
		return "audit";
	snprintf(buf, cap, "uid %u pid %d", uid, pid);
	return buf;
}

/* ---- verify ---------------------------------------------------------------- */

static int cmd_verify(int argc, char **argv)
{
	if (argc < 1) {
		fprintf(stderr, "usage: fanoctl audit verify FILE... (oldest first: "
				"fanogate.audit.1 fanogate.audit.2 ... fanogate.audit)\n");
		return 2;
	}
	struct fg_audit_chain chain;
	bool have_chain = false, anchored = true;
	uint64_t total = 0, first_seq = 0;
	for (int i = 0; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC);
		struct fg_audit_scan s;
		uint64_t len = 0;
		int rc = fd < 0 ? -errno : fg_audit_file_scan(fd, have_chain ? &chain : NULL, &s, &len, UINT64_MAX);
		if (fd >= 0)
			close(fd);
		if (rc < 0) {
			fprintf(stderr, "fanoctl audit verify: %s: %s\n", argv[i], strerror(-rc));
			return 2;
		}
		if (i == 0) {
			anchored = s.anchored;
			first_seq = s.first_seq;
		}
		if (rc > 0) {
			printf("BAD %s: first bad record at offset %" PRIu64 ", seq %" PRIu64 ": %s"
			       " (%" PRIu64 " good records before it%s)\n",
			       argv[i], s.bad_offset, s.bad_seq, fg_audit_reason_name(s.reason), s.records,
			       fg_audit_reason_is_torn(s.reason) && len - s.bad_offset <= FG_AUDIT_TAIL_MAX
				       ? "; looks like a torn tail the daemon would cut on start-up"
				       : "");
			return 1;
		}
		if (s.records == 0) {
			printf("BAD %s: empty file\n", argv[i]);
			return 1;
		}
		printf("ok  %s: %" PRIu64 " records, seq %" PRIu64 "..%" PRIu64 ", %" PRIu64 " bytes\n", argv[i],
		       s.records, s.first_seq, s.last_seq, len);
		chain = s.chain;
		have_chain = true;
		total += s.records;
	}
	char hex[2 * FG_AUDIT_HASH_LEN + 1];
	fg_audit_hex(chain.head, hex);
	if (anchored)
		printf("OK: %" PRIu64 " records in %d file(s), chain verified from genesis; head seq %" PRIu64
		       " hash %s\n", total, argc, chain.next_seq - 1, hex);
	else {
		printf("OK: %" PRIu64 " records in %d file(s), chain verified from seq %" PRIu64
		       " (earlier files not given: the start is taken on trust); head seq %" PRIu64 " hash %s\n",
		       total, argc, first_seq, chain.next_seq - 1, hex);
		uint32_t hi = fg_audit_file_highest_rotated(argv[0]);
		if (hi > 0)
			printf("hint: to verify from genesis pass the rotated files first, oldest first: "
			       "%s.1 .. %s.%u %s\n", argv[0], argv[0], hi, argv[0]);
	}
	return 0;
}

/* ---- tail ------------------------------------------------------------------ */

/* Operator-supplied text as a JSON string: bytes that are not UTF-8
 * (records written before reasons were cut on character boundaries) become
 * U+FFFD, so jansson always accepts it and the output is valid JSON. */
static json_t *jtext(const char *s)
{
	char buf[4 * FG_AUDIT_TEXT_MAX]; /* at most 3 bytes out per byte in */
	(void)fg_text_utf8_fix(buf, sizeof(buf), s);
	return json_string(buf);
}

/* A record field for a terminal: control characters, escape sequences and
 * invalid bytes written as \xNN (fg_text_escape). */
static const char *ttext(const char *s, char *buf, size_t cap)
{
	(void)fg_text_escape(buf, cap, s);
	return buf;
}

static void fmt_time(uint64_t ns, char *out, size_t cap)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;
	gmtime_r(&t, &tm);
	size_t k = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + k, cap - k, ".%06uZ", (unsigned)(ns % 1000000000u / 1000u));
}

static void lines_list(uint8_t m, char *out, size_t cap)
{
	size_t k = 0;
	out[0] = '\0';
	for (unsigned i = 0; i < 7; i++)
		if (m & (1u << i))
			k += (size_t)snprintf(out + k, cap - k, "%s%u", k ? "," : "", i);
}

static json_t *jdouble(double d)
{
	if (isfinite(d))
		return json_real(d);
	return json_string(isnan(d) ? "nan" : (d > 0 ? "inf" : "-inf"));
}

static json_t *jhex64(uint64_t v)
{
	char h[17];
	snprintf(h, sizeof(h), "%016" PRIx64, v);
	return json_string(h);
}

static json_t *jentries(const struct fg_audit_line_entry e[FG_AUDIT_LINES])
{
	json_t *a = json_array();
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "line", json_integer(i));
		json_object_set_new(o, "base", json_string(state_name(e[i].base)));
		json_object_set_new(o, "auto_promote", json_boolean(e[i].auto_promote));
		json_object_set_new(o, "source", json_string(fg_audit_line_source_name(e[i].source)));
		json_object_set_new(o, "event", e[i].event == FG_AUDIT_UNKNOWN ? json_null() : json_string(event_name(e[i].event)));
		json_object_set_new(o, "seq", e[i].seq == FG_AUDIT_NO_SEQ ? json_null() : json_integer((json_int_t)e[i].seq));
		json_object_set_new(o, "why", jtext(e[i].why));
		json_array_append_new(a, o);
	}
	return a;
}

/* "0 shadow (log) 1 active auto (config (no line history)) ..." */
static void print_entries(FILE *o, const struct fg_audit_line_entry e[FG_AUDIT_LINES])
{
	char t[4 * FG_AUDIT_ENTRY_WHY_MAX + 1];
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++)
		fprintf(o, "%s%u %s%s (%s: %s)", i ? "; " : "", i, state_name(e[i].base),
			e[i].auto_promote ? " auto" : "", fg_audit_line_source_name(e[i].source),
			ttext(e[i].why, t, sizeof(t)));
}

/* One record as one line of JSON (jansson; keys in this order). Returns 0,
 * or -ENOMEM. */
static int print_json(FILE *o, const struct fg_audit_rec *r)
{
	char t[40], hex[2 * FG_AUDIT_HASH_LEN + 1];
	fmt_time(r->time_ns, t, sizeof(t));
	fg_audit_hex(r->hash, hex);
	json_t *j = json_object();
	if (!j)
		return -ENOMEM;
	json_object_set_new(j, "seq", json_integer((json_int_t)r->seq));
	json_object_set_new(j, "time", json_string(t));
	json_object_set_new(j, "type", json_string(fg_audit_type_name(r->type)));
	json_object_set_new(j, "version", json_integer(r->version));
	json_object_set_new(j, "hash", json_string(hex));
	const union fg_audit_payload *p = &r->p;
	switch (r->type) {
	case FG_AREC_GENESIS:
		json_object_set_new(j, "format", json_integer(p->genesis.format));
		json_object_set_new(j, "who", jtext(p->genesis.who));
		break;
	case FG_AREC_VERDICT: {
		const struct fg_audit_verdict *v = &p->verdict;
		json_t *lines = json_array();
		for (unsigned i = 0; i < 7; i++)
			if (v->lines & (1u << i))
				json_array_append_new(lines, json_integer(i));
		json_object_set_new(j, "token_seq", json_integer(v->token_seq));
		json_object_set_new(j, "dst_layer", json_integer(v->dst_layer));
		json_object_set_new(j, "lines", lines);
		json_object_set_new(j, "verdict", json_string(fg_verdict_kind_name(v->kind)));
		json_object_set_new(j, "epoch", json_integer(v->epoch));
		json_object_set_new(j, "sampled", json_boolean(v->sampled));
		json_object_set_new(j, "fp_jump", jhex64(v->fp_jump));
		json_object_set_new(j, "fp_canon", jhex64(v->fp_canon));
		json_object_set_new(j, "canonical",
				    json_string(v->canon_kind == 0 ? "full" : v->canon_kind == 1 ? "digest" : "none"));
		json_object_set_new(j, "shape_mismatch", json_boolean(v->shape_mismatch));
		if (r->version >= 2) {
			/* the lead over the canonical chain (docs/audit.md): ns, null when unknown */
			json_object_set_new(j, "ingress", json_string(fg_audit_ingress_name(v->ingress)));
			json_object_set_new(j, "lead_ns", v->lead_ns == FG_AUDIT_NO_LEAD ? json_null()
											: json_integer((json_int_t)v->lead_ns));
			json_object_set_new(j, "lead_deliver_ns", v->lead_deliver_ns == FG_AUDIT_NO_LEAD
									  ? json_null()
									  : json_integer((json_int_t)v->lead_deliver_ns));
		}
		if (v->has_diff) {
			json_t *d = json_object();
			json_object_set_new(d, "elements", json_integer(v->diff.n_elems));
			json_object_set_new(d, "count", json_integer(v->diff.count));
			json_object_set_new(d, "nan", json_integer(v->diff.nan_count));
			json_object_set_new(d, "max_abs", jdouble(v->diff.max_abs));
			json_object_set_new(d, "max_ulp", json_integer((json_int_t)v->diff.max_ulp));
			json_object_set_new(d, "first_index", v->diff.first_index == UINT32_MAX
								      ? json_null()
								      : json_integer(v->diff.first_index));
			json_object_set_new(j, "diff", d);
		}
		break;
	}
	case FG_AREC_LINE:
		json_object_set_new(j, "line", json_integer(p->line.line));
		json_object_set_new(j, "from", json_string(state_name(p->line.from)));
		json_object_set_new(j, "to", json_string(state_name(p->line.to)));
		json_object_set_new(j, "event", json_string(event_name(p->line.event)));
		json_object_set_new(j, "uid", json_integer(p->line.uid));
		json_object_set_new(j, "pid", json_integer(p->line.pid));
		if (r->version >= 2) {
			json_object_set_new(j, "base_from", json_string(state_name(p->line.base_from)));
			json_object_set_new(j, "base_to", json_string(state_name(p->line.base_to)));
			json_object_set_new(j, "auto_promote", json_boolean(p->line.auto_promote));
		}
		json_object_set_new(j, "origin", jtext(p->line.origin));
		json_object_set_new(j, "why", jtext(p->line.why));
		break;
	case FG_AREC_EPOCH:
		json_object_set_new(j, "from", json_integer(p->epoch.from));
		json_object_set_new(j, "to", json_integer(p->epoch.to));
		json_object_set_new(j, "uid", json_integer(p->epoch.uid));
		json_object_set_new(j, "pid", json_integer(p->epoch.pid));
		json_object_set_new(j, "why", jtext(p->epoch.why));
		break;
	case FG_AREC_CONFLICT:
		json_object_set_new(j, "token_seq", json_integer(p->conflict.token_seq));
		json_object_set_new(j, "dst_layer", json_integer(p->conflict.dst_layer));
		json_object_set_new(j, "line", json_integer(p->conflict.line));
		json_object_set_new(j, "epoch", json_integer(p->conflict.epoch));
		break;
	case FG_AREC_PEER_AUTH:
		json_object_set_new(j, "peer", jtext(p->peer_auth.peer));
		json_object_set_new(j, "reason", jtext(p->peer_auth.reason));
		break;
	case FG_AREC_RECOVERY:
		json_object_set_new(j, "cut_offset", json_integer((json_int_t)p->recovery.cut_offset));
		json_object_set_new(j, "cut_bytes", json_integer((json_int_t)p->recovery.cut_bytes));
		json_object_set_new(j, "last_seq", json_integer((json_int_t)p->recovery.last_seq));
		json_object_set_new(j, "reason", json_string(fg_audit_reason_name(p->recovery.reason)));
		break;
	case FG_AREC_ROTATION:
		json_object_set_new(j, "prev_file_records", json_integer((json_int_t)p->rotation.prev_file_records));
		json_object_set_new(j, "prev_file_bytes", json_integer((json_int_t)p->rotation.prev_file_bytes));
		json_object_set_new(j, "prev_file_index", json_integer(p->rotation.prev_file_index));
		break;
	case FG_AREC_START:
		json_object_set_new(j, "who", jtext(p->start.who));
		json_object_set_new(j, "config", jtext(p->start.config));
		json_object_set_new(j, "uid", json_integer(p->start.uid));
		json_object_set_new(j, "pid", json_integer(p->start.pid));
		json_object_set_new(j, "reset_lines", json_boolean(p->start.flags & FG_ASTART_RESET));
		json_object_set_new(j, "cluster", json_boolean(p->start.flags & FG_ASTART_CLUSTER));
		json_object_set_new(j, "lines", jentries(p->start.line));
		break;
	case FG_AREC_LINES:
		json_object_set_new(j, "lines", jentries(p->lines.line));
		break;
	case FG_AREC_RELOAD:
		json_object_set_new(j, "result", json_string(fg_audit_reload_result_name(p->reload.result)));
		json_object_set_new(j, "uid", json_integer(p->reload.uid));
		json_object_set_new(j, "pid", json_integer(p->reload.pid));
		json_object_set_new(j, "origin", jtext(p->reload.origin));
		json_object_set_new(j, "error", jtext(p->reload.error));
		json_object_set_new(j, "what", jtext(p->reload.what));
		break;
	default:
		break;
	}
	int rc = json_dumpf(j, o, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9)) == 0 ? 0 : -ENOMEM;
	json_decref(j);
	fputc('\n', o);
	return rc;
}

static void print_human(FILE *o, const struct fg_audit_rec *r)
{
	char t[40], by[48];
	char e1[4 * FG_AUDIT_TEXT_MAX + 1], e2[4 * FG_AUDIT_TEXT_MAX + 1]; /* \xNN per byte at most */
	fmt_time(r->time_ns, t, sizeof(t));
	fprintf(o, "%-8" PRIu64 " %s  %-9s ", r->seq, t, fg_audit_type_name(r->type));
	const union fg_audit_payload *p = &r->p;
	switch (r->type) {
	case FG_AREC_GENESIS:
		fprintf(o, "new log, format %u, by %s", p->genesis.format, ttext(p->genesis.who, e1, sizeof(e1)));
		break;
	case FG_AREC_VERDICT: {
		const struct fg_audit_verdict *v = &p->verdict;
		char l[32];
		lines_list(v->lines, l, sizeof(l));
		fprintf(o, "token %u layer %u lines %s %s%s jump %016" PRIx64 " canon %016" PRIx64, v->token_seq,
			v->dst_layer, l, fg_verdict_kind_name(v->kind), v->sampled ? " (sampled)" : "", v->fp_jump,
			v->fp_canon);
		if (v->shape_mismatch)
			fputs(" shape mismatch", o);
		if (v->has_diff && v->diff.count)
			fprintf(o, " diff %u/%u max_abs %.9g max_ulp %" PRIu64 " nan %u", v->diff.count, v->diff.n_elems,
				v->diff.max_abs, v->diff.max_ulp, v->diff.nan_count);
		/* version 2: how far ahead of the chain (+) or behind it (-) */
		if (r->version >= 2 && v->lead_ns != FG_AUDIT_NO_LEAD) {
			fprintf(o, " lead %+.3f ms", (double)v->lead_ns / 1e6);
			if (v->lead_deliver_ns != FG_AUDIT_NO_LEAD)
				fprintf(o, " (delivered %+.3f ms)", (double)v->lead_deliver_ns / 1e6);
			fprintf(o, " via %s", fg_audit_ingress_name(v->ingress));
		}
		break;
	}
	case FG_AREC_LINE:
		if (r->version >= 2 && p->line.event == FG_LEV_OP_AUTO_PROMOTE) {
			fprintf(o, "line %u auto-promote %s by %s via %s: %s", p->line.line,
				p->line.auto_promote ? "on" : "off", who(p->line.uid, p->line.pid, by, sizeof(by)),
				ttext(p->line.origin, e1, sizeof(e1)), ttext(p->line.why, e2, sizeof(e2)));
			break;
		}
		fprintf(o, "line %u %s -> %s (%s) by %s via %s: %s", p->line.line, state_name(p->line.from),
			state_name(p->line.to), event_name(p->line.event), who(p->line.uid, p->line.pid, by, sizeof(by)),
			ttext(p->line.origin, e1, sizeof(e1)), ttext(p->line.why, e2, sizeof(e2)));
		if (r->version >= 2 && (p->line.base_from != p->line.from || p->line.base_to != p->line.to))
			fprintf(o, " [base %s -> %s]", state_name(p->line.base_from), state_name(p->line.base_to));
		break;
	case FG_AREC_EPOCH:
		fprintf(o, "model epoch %u -> %u by %s: %s", p->epoch.from, p->epoch.to,
			who(p->epoch.uid, p->epoch.pid, by, sizeof(by)), ttext(p->epoch.why, e2, sizeof(e2)));
		break;
	case FG_AREC_CONFLICT:
		fprintf(o, "token %u layer %u line %u epoch %u", p->conflict.token_seq, p->conflict.dst_layer,
			p->conflict.line, p->conflict.epoch);
		break;
	case FG_AREC_PEER_AUTH:
		fprintf(o, "peer %s: %s", ttext(p->peer_auth.peer, e1, sizeof(e1)),
			ttext(p->peer_auth.reason, e2, sizeof(e2)));
		break;
	case FG_AREC_RECOVERY:
		fprintf(o, "cut %" PRIu64 " bytes at offset %" PRIu64 " (%s); last intact seq %" PRIu64,
			p->recovery.cut_bytes, p->recovery.cut_offset, fg_audit_reason_name(p->recovery.reason),
			p->recovery.last_seq);
		break;
	case FG_AREC_ROTATION:
		fprintf(o, "continues from file .%u (%" PRIu64 " records, %" PRIu64 " bytes)",
			p->rotation.prev_file_index, p->rotation.prev_file_records, p->rotation.prev_file_bytes);
		break;
	case FG_AREC_START:
		fprintf(o, "%s started by uid %u pid %d, config %s%s%s; lines: ", ttext(p->start.who, e1, sizeof(e1)),
			p->start.uid, p->start.pid, ttext(p->start.config, e2, sizeof(e2)),
			p->start.flags & FG_ASTART_RESET ? ", --reset-lines" : "",
			p->start.flags & FG_ASTART_CLUSTER ? ", cluster (held in shadow until etcd answers)" : "");
		print_entries(o, p->start.line);
		break;
	case FG_AREC_LINES:
		fputs("lines: ", o);
		print_entries(o, p->lines.line);
		break;
	case FG_AREC_RELOAD: {
		char e3[4 * FG_AUDIT_TEXT_MAX + 1];
		fprintf(o, "config %s%s%s%s by %s via %s: %s", fg_audit_reload_result_name(p->reload.result),
			p->reload.error[0] ? " (" : "", ttext(p->reload.error, e1, sizeof(e1)), p->reload.error[0] ? ")" : "",
			who(p->reload.uid, p->reload.pid, by, sizeof(by)), ttext(p->reload.origin, e2, sizeof(e2)),
			ttext(p->reload.what, e3, sizeof(e3)));
		break;
	}
	default:
		break;
	}
	fputc('\n', o);
}

static void print_rec(const struct fg_audit_rec *r, bool json)
{
	if (json) {
		if (print_json(stdout, r) < 0)
			fprintf(stderr, "fanoctl audit tail: record %" PRIu64 ": out of memory for its JSON\n", r->seq);
	} else
		print_human(stdout, r);
}

/* Decode whole records from buf[0..len); returns bytes consumed. A record
 * that does not decode (yet) ends the walk: the writer may be mid-batch. */
static size_t walk(const uint8_t *buf, size_t len, struct fg_audit_rec *ring, size_t n, size_t *count)
{
	size_t off = 0;
	while (off < len) {
		struct fg_audit_rec r;
		ssize_t k = fg_audit_decode(buf + off, len - off, &r);
		if (k < 0)
			break;
		if (n)
			ring[*count % n] = r;
		(*count)++;
		off += (size_t)k;
	}
	return off;
}

static int cmd_tail(int argc, char **argv)
{
	bool json = false, follow = false;
	long nlast = 10;
	const char *path = NULL;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--follow"))
			follow = true;
		else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			char *end;
			nlast = strtol(argv[++i], &end, 10);
			if (*end || nlast < 0 || nlast > 1000000) {
				fprintf(stderr, "fanoctl audit tail: bad -n %s\n", argv[i]);
				return 2;
			}
		} else if (argv[i][0] == '-' || path) {
			fprintf(stderr, "usage: fanoctl audit tail [--json] [-n N] [-f] FILE\n");
			return 2;
		} else
			path = argv[i];
	}
	if (!path) {
		fprintf(stderr, "usage: fanoctl audit tail [--json] [-n N] [-f] FILE\n");
		return 2;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "fanoctl audit tail: %s: %s\n", path, strerror(errno));
		return 2;
	}
	struct fg_audit_rec *ring = NULL;
	if (nlast) {
		ring = calloc((size_t)nlast, sizeof(*ring));
		if (!ring) {
			close(fd);
			return 2;
		}
	}
	/* Walk the file in chunks (bounded memory for any size), keeping the
	 * last N records; stop at the first record that does not decode. */
	static uint8_t chunk[1 << 20];
	size_t count = 0;
	uint64_t off = 0;
	for (;;) {
		ssize_t n = pread(fd, chunk, sizeof(chunk), (off_t)off);
		if (n <= 0)
			break;
		size_t used = walk(chunk, (size_t)n, ring, (size_t)nlast, &count);
		off += used;
		if (used == 0)
			break;
	}
	size_t first = count > (size_t)nlast ? count - (size_t)nlast : 0;
	for (size_t i = first; i < count; i++)
		print_rec(&ring[i % (size_t)nlast], json);
	free(ring);
	fflush(stdout);
	if (!follow) {
		close(fd);
		return 0;
	}

	/* Follow: poll every 200 ms. The open fd keeps reading the file it was
	 * opened on; when path names a new file (rotation) the old one is read
	 * to its end first, so no record written just before the rename is
	 * missed, then the new one from offset 0. */
	size_t have = 0; /* bytes of chunk not yet decoded (a record in progress) */
	for (;;) {
		for (;;) {
			ssize_t n = pread(fd, chunk + have, sizeof(chunk) - have, (off_t)(off + have));
			if (n <= 0)
				break;
			have += (size_t)n;
			size_t used = 0;
			while (used < have) {
				struct fg_audit_rec r;
				ssize_t k = fg_audit_decode(chunk + used, have - used, &r);
				if (k < 0)
					break;
				print_rec(&r, json);
				used += (size_t)k;
			}
			memmove(chunk, chunk + used, have - used);
			have -= used;
			off += used;
			if (have == sizeof(chunk))
				have = 0; /* undecodable 64 KiB: not a record stream; skip it */
		}
		fflush(stdout);
		struct stat cur, now;
		if (fstat(fd, &cur) == 0 && stat(path, &now) == 0 && now.st_ino != cur.st_ino) {
			int nfd = open(path, O_RDONLY | O_CLOEXEC);
			if (nfd >= 0) {
				close(fd);
				fd = nfd;
				off = 0;
				have = 0;
				continue; /* read the new file at once */
			}
		}
		struct timespec ts = { 0, 200 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* ---- repair ---------------------------------------------------------------- */

/* The daemon must be stopped (the log's head file is locked while it runs).
 * The writer repairs (control/audit/cp_audit_log.c, cp_audit_log_repair):
 * run `fanogate --audit-repair FILE` and pass its exit code on. */
static int cmd_repair(int argc, char **argv)
{
	if (argc != 1 || argv[0][0] == '-') {
		fprintf(stderr, "usage: fanoctl audit repair FILE (the current log file; stop fanogate first)\n");
		return 2;
	}
	char self[PATH_MAX], beside[PATH_MAX + 16];
	const char *bin = getenv("FANOGATE");
	if (!bin || !*bin) {
		bin = "fanogate"; /* PATH */
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n > 0) {
			self[n] = '\0';
			char *slash = strrchr(self, '/');
			if (slash) {
				*slash = '\0';
				snprintf(beside, sizeof(beside), "%s/fanogate", self);
				if (access(beside, X_OK) == 0)
					bin = beside;
			}
		}
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "fanoctl audit repair: fork: %s\n", strerror(errno));
		return 2;
	}
	if (pid == 0) {
		char *args[] = { (char *)bin, "--audit-repair", argv[0], NULL };
		execvp(bin, args);
		fprintf(stderr, "fanoctl audit repair: cannot run %s: %s (set FANOGATE to the daemon binary)\n", bin,
			strerror(errno));
		_exit(2);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "fanoctl audit repair: waitpid: %s\n", strerror(errno));
			return 2;
		}
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}

int fanoctl_audit_cli(int argc, char **argv)
{
	if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
		fprintf(argc < 1 ? stderr : stdout,
			"usage: fanoctl audit verify FILE...            check checksums and the hash chain\n"
			"       fanoctl audit tail [--json] [-n N] [-f] [FILE] show the last records\n"
			"                                                (no FILE: the running daemon's log)\n"
			"       fanoctl audit repair FILE               move damage aside (fanogate stopped)\n");
		return argc < 1 ? 2 : 0;
	}
	if (!strcmp(argv[0], "verify"))
		return cmd_verify(argc - 1, argv + 1);
	if (!strcmp(argv[0], "tail"))
		return cmd_tail(argc - 1, argv + 1);
	if (!strcmp(argv[0], "repair"))
		return cmd_repair(argc - 1, argv + 1);
	fprintf(stderr, "fanoctl audit: unknown command %s (verify, tail, repair)\n", argv[0]);
	return 2;
}

/* fuzz_op_parse.c - libFuzzer target for the operator socket's request
 * parser (control/proto/cp_op_parse.c). The input is the bytes a client
 * sends on the socket.
 *
 * Properties checked beyond "no crash, no leak, no out-of-bounds read":
 *  1. framing: cp_op_frame finds the first '\n' within CP_OP_REQ_MAX bytes,
 *     says "incomplete" below the limit and "request_too_large" at it, and
 *     every prefix of the input agrees with the whole (incomplete before the
 *     '\n', the same length after it); the same with the input placed at
 *     the limit (after CP_OP_REQ_MAX - 8 bytes without a '\n');
 *  2. the parser gives exactly the answer of the code it replaced: a copy of
 *     the checks cp_op.c made before the split (ref_parse below, jansson
 *     calls and comparisons as they were) gives the same reason, the same
 *     command and arguments, and the same audit text for a line change
 *     (cp_op_why_format against the old snprintf), for two layer limits;
 *  3. refused: *out untouched and the reason is one of the four a request can
 *     get; accepted: every field in range for its command and zero for the
 *     others, why NUL-terminated inside its buffer;
 *  4. a tighter layer limit never accepts what a wider one refuses;
 *  5. an accepted request, written back as fanoctl would send it, parses to
 *     the same request.
 * The JSON syntax itself is jansson's (a system library, not instrumented):
 * coverage feedback comes from the parser and this harness, the dictionary
 * fuzz/dict/fuzz_op_parse.dict supplies the protocol's words. */
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../control/proto/cp_op_parse.h"
#include "fg/fano.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- the checks of cp_op.c before the split (commit 78732a1) -------------- */

struct ref {
	const char *reason; /* "ok" or the error string answered */
	const char *cmd;    /* the command name when ok */
	unsigned line;
	const char *op;
	bool on;
	char whybuf[160];
	unsigned layer;
	uint32_t tok;
};

static void ref_parse(const char *buf, size_t len, unsigned layers, uint32_t uid, int32_t pid, struct ref *o)
{
	static const char *const simple[] = {"status", "lines", "slots", "peers", "stats", "reload", "cluster"};
	memset(o, 0, sizeof(*o));
	o->reason = "ok";
	json_error_t jerr;
	json_t *req = json_loadb(buf, len, 0, &jerr);
	const char *cmd = json_string_value(json_object_get(req, "cmd"));
	if (!json_is_object(req) || !cmd) {
		o->reason = "bad_request";
		goto out;
	}
	for (size_t i = 0; i < sizeof(simple) / sizeof(simple[0]); i++)
		if (!strcmp(cmd, simple[i]))
			o->cmd = simple[i];
	if (o->cmd)
		goto out;
	if (!strcmp(cmd, "line")) {
		o->cmd = "line";
		json_t *jl = json_object_get(req, "line");
		const char *op = json_string_value(json_object_get(req, "op"));
		const char *why = json_string_value(json_object_get(req, "why"));
		if (!json_is_integer(jl) || json_integer_value(jl) < 0 || json_integer_value(jl) >= FG_LINES || !op) {
			o->reason = "bad_request";
			goto out;
		}
		o->line = (unsigned)json_integer_value(jl);
		snprintf(o->whybuf, sizeof(o->whybuf), "fanoctl line %s (uid %u pid %d)%s%s", op, (unsigned)uid, (int)pid,
			 why ? ": " : "", why ? why : "");
		if (!strcmp(op, "auto_promote")) {
			json_t *on = json_object_get(req, "on");
			if (!json_is_boolean(on)) {
				o->reason = "bad_request";
				goto out;
			}
			o->op = "auto_promote";
			o->on = json_is_true(on);
			goto out;
		}
		static const char *const ops[] = {"enable", "disable", "shadow", "active"};
		for (size_t i = 0; i < 4; i++)
			if (!strcmp(op, ops[i]))
				o->op = ops[i];
		if (!o->op)
			o->reason = "unknown_op";
		goto out;
	}
	if (!strcmp(cmd, "slot")) {
		o->cmd = "slot";
		json_t *jl = json_object_get(req, "layer"), *jt = json_object_get(req, "token_seq");
		/* cfg->layers is a uint16_t: the comparison as the old code made it */
		uint16_t cfg_layers = (uint16_t)layers;
		if (!json_is_integer(jl) || !json_is_integer(jt) || json_integer_value(jl) < 0 ||
		    json_integer_value(jl) >= cfg_layers || json_integer_value(jt) < 0 ||
		    json_integer_value(jt) > UINT32_MAX) {
			o->reason = "bad_request";
			goto out;
		}
		o->layer = (uint16_t)json_integer_value(jl);
		o->tok = (uint32_t)json_integer_value(jt);
		goto out;
	}
	o->reason = "unknown_command";
out:
	json_decref(req);
}

/* ---- properties --------------------------------------------------------------- */

static bool is_request_reason(int r)
{
	return r == -CP_OP_R_REQUEST_TOO_LARGE || r == -CP_OP_R_BAD_REQUEST || r == -CP_OP_R_UNKNOWN_COMMAND ||
	       r == -CP_OP_R_UNKNOWN_OP;
}

static void check_accepted(const struct cp_op_req *r, unsigned layers)
{
	FUZZ_CHECK(r->cmd >= CP_OP_CMD_STATUS && r->cmd < CP_OP_CMD__END);
	FUZZ_CHECK(memchr(r->why, '\0', sizeof(r->why)) != NULL);
	if (r->cmd == CP_OP_CMD_LINE) {
		FUZZ_CHECK(r->line < FG_LINES);
		FUZZ_CHECK(r->op >= CP_OP_LINE_ENABLE && r->op < CP_OP_LINE__END);
		FUZZ_CHECK(r->op == CP_OP_LINE_AUTO_PROMOTE || !r->on);
		FUZZ_CHECK(r->has_why || r->why[0] == '\0');
	} else {
		FUZZ_CHECK(r->line == 0 && r->op == 0 && !r->on && !r->has_why && r->why[0] == '\0');
	}
	if (r->cmd == CP_OP_CMD_SLOT)
		FUZZ_CHECK(r->layer < layers);
	else
		FUZZ_CHECK(r->layer == 0 && r->token_seq == 0);
}

/* What the old code answered equals what the parser answers. */
static void check_same(int rc, const struct cp_op_req *r, const struct ref *ref, uint32_t uid, int32_t pid)
{
	FUZZ_CHECK(!strcmp(cp_op_reason_name(rc), ref->reason));
	if (rc < 0)
		return;
	FUZZ_CHECK(!strcmp(cp_op_cmd_name(r->cmd), ref->cmd));
	if (r->cmd == CP_OP_CMD_LINE) {
		FUZZ_CHECK(r->line == ref->line && !strcmp(cp_op_line_op_name(r->op), ref->op) && r->on == ref->on);
		char why[CP_OP_AUDIT_WHY_MAX];
		size_t n = cp_op_why_format(why, sizeof(why), r, uid, pid);
		FUZZ_CHECK(n == strlen(why) && n < sizeof(why));
		FUZZ_CHECK(!strcmp(why, ref->whybuf));
	}
	if (r->cmd == CP_OP_CMD_SLOT)
		FUZZ_CHECK(r->layer == ref->layer && r->token_seq == ref->tok);
}

/* Write r back as fanoctl sends it and parse it again. */
static void check_round_trip(const struct cp_op_req *r, const struct cp_op_limits *lim)
{
	if (r->has_why && strlen(r->why) == sizeof(r->why) - 1)
		return; /* the why was cut: the copy is not the original */
	json_t *j = json_object();
	json_object_set_new(j, "cmd", json_string(cp_op_cmd_name(r->cmd)));
	if (r->cmd == CP_OP_CMD_LINE) {
		json_object_set_new(j, "line", json_integer(r->line));
		json_object_set_new(j, "op", json_string(cp_op_line_op_name(r->op)));
		if (r->op == CP_OP_LINE_AUTO_PROMOTE)
			json_object_set_new(j, "on", json_boolean(r->on));
		if (r->has_why)
			json_object_set_new(j, "why", json_string(r->why));
	} else if (r->cmd == CP_OP_CMD_SLOT) {
		json_object_set_new(j, "layer", json_integer(r->layer));
		json_object_set_new(j, "token_seq", json_integer(r->token_seq));
	}
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!s)
		return; /* a why that is not valid UTF-8 cannot occur: jansson checked it */
	struct cp_op_req again;
	memset(&again, 0, sizeof(again));
	size_t n = strlen(s);
	FUZZ_CHECK(cp_op_parse(s, n, lim, &again) == 0);
	free(s);
	FUZZ_CHECK(again.cmd == r->cmd && again.line == r->line && again.op == r->op && again.on == r->on &&
		   again.has_why == r->has_why && !strcmp(again.why, r->why) && again.layer == r->layer &&
		   again.token_seq == r->token_seq);
}

static void one_line(const char *line, size_t len, uint32_t uid, int32_t pid)
{
	static const unsigned layer_lims[] = {28, 65535};
	int rcs[2];
	for (unsigned k = 0; k < 2; k++) {
		const struct cp_op_limits lim = {.layers = layer_lims[k]};
		struct cp_op_req r, sentinel;
		memset(&r, 0xA5, sizeof(r));
		sentinel = r;
		int rc = rcs[k] = cp_op_parse(line, len, &lim, &r);
		if (rc < 0) {
			FUZZ_CHECK(is_request_reason(rc));
			FUZZ_CHECK(memcmp(&r, &sentinel, sizeof(r)) == 0);
		} else {
			FUZZ_CHECK(rc == 0);
			check_accepted(&r, lim.layers);
		}
		if (len < CP_OP_REQ_MAX) {
			struct ref ref;
			ref_parse(line, len, lim.layers, uid, pid, &ref);
			check_same(rc, &r, &ref, uid, pid);
		} else {
			FUZZ_CHECK(rc == -CP_OP_R_REQUEST_TOO_LARGE);
		}
		if (rc == 0)
			check_round_trip(&r, &lim);
	}
	/* 4. 28 layers never accepts what 65535 refuses */
	FUZZ_CHECK(rcs[0] != 0 || rcs[1] == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	/* 1. framing, against memchr over the bytes the daemon would hold */
	size_t held = size < CP_OP_REQ_MAX ? size : CP_OP_REQ_MAX;
	const char *nl = held ? memchr(buf, '\n', held) : NULL;
	ssize_t end = cp_op_frame(buf, size);
	if (nl)
		FUZZ_CHECK(end == nl - buf);
	else
		FUZZ_CHECK(end == (size < CP_OP_REQ_MAX ? -CP_OP_R_INCOMPLETE : -CP_OP_R_REQUEST_TOO_LARGE));
	/* prefixes: a few cut points, as if the bytes arrived in pieces */
	size_t cuts[] = {0, 1, size / 3, size / 2, size > 0 ? size - 1 : 0};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		size_t k = cuts[i];
		ssize_t e = cp_op_frame(buf, k);
		if (end >= 0 && (size_t)end < k)
			FUZZ_CHECK(e == end);
		else if (k < CP_OP_REQ_MAX)
			FUZZ_CHECK(e == -CP_OP_R_INCOMPLETE);
		else
			FUZZ_CHECK(e == -CP_OP_R_REQUEST_TOO_LARGE);
	}
	/* ... and at the size limit: the input placed so that its first 8 bytes
	 * are the last ones the daemon would hold, after bytes without a '\n' */
	static char big[CP_OP_REQ_MAX + 4096];
	if (!big[0])
		memset(big, 'x', sizeof(big));
	size_t put = size < 4096 ? size : 4096, at = CP_OP_REQ_MAX - 8;
	memcpy(big + at, buf, put);
	const char *nl8 = put ? memchr(buf, '\n', put < 8 ? put : 8) : NULL;
	ssize_t e8 = cp_op_frame(big, at + put);
	if (nl8)
		FUZZ_CHECK(e8 == (ssize_t)at + (nl8 - buf));
	else
		FUZZ_CHECK(e8 == (at + put < CP_OP_REQ_MAX ? -CP_OP_R_INCOMPLETE : -CP_OP_R_REQUEST_TOO_LARGE));
	memset(big + at, 'x', put);
	/* 2-5. the request as framed, and the input whole (any bytes) */
	uint32_t uid = size > 0 ? (uint32_t)data[0] * 16843009u : 0;
	int32_t pid = size > 1 ? -(int32_t)data[1] * 8421504 : 1;
	if (end >= 0)
		one_line(buf, (size_t)end, uid, pid);
	one_line(buf, size, uid, pid);
	return 0;
}

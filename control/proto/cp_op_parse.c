/* cp_op_parse.c - request parser of the operator socket protocol (see
 * cp_op_parse.h). Pure; any thread.
 *
 * The JSON syntax is jansson's (json_loadb, flags 0), exactly what the
 * daemon accepted before this parser was split out of cp_op.c: keeping the
 * same library call keeps the same answers on the wire for every input,
 * including the odd ones (duplicate keys: the last wins; a NUL byte or
 * "\u0000": refused; trailing bytes after the object: refused). */
#include "cp_op_parse.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "fg/fano.h"

static const char *const cmd_names[CP_OP_CMD__END] = {
	[CP_OP_CMD_STATUS] = "status", [CP_OP_CMD_LINES] = "lines", [CP_OP_CMD_LINE] = "line",
	[CP_OP_CMD_SLOTS] = "slots",   [CP_OP_CMD_SLOT] = "slot",   [CP_OP_CMD_PEERS] = "peers",
	[CP_OP_CMD_STATS] = "stats",   [CP_OP_CMD_RELOAD] = "reload",
	[CP_OP_CMD_CLUSTER] = "cluster",
};

static const char *const op_names[CP_OP_LINE__END] = {
	[CP_OP_LINE_ENABLE] = "enable", [CP_OP_LINE_DISABLE] = "disable", [CP_OP_LINE_SHADOW] = "shadow",
	[CP_OP_LINE_ACTIVE] = "active", [CP_OP_LINE_AUTO_PROMOTE] = "auto_promote",
};

static const char *const reason_names[CP_OP_R__END - CP_OP_R_INCOMPLETE] = {
	[CP_OP_R_INCOMPLETE - CP_OP_R_INCOMPLETE] = "incomplete",
	[CP_OP_R_REQUEST_TOO_LARGE - CP_OP_R_INCOMPLETE] = "request_too_large",
	[CP_OP_R_BAD_REQUEST - CP_OP_R_INCOMPLETE] = "bad_request",
	[CP_OP_R_UNKNOWN_COMMAND - CP_OP_R_INCOMPLETE] = "unknown_command",
	[CP_OP_R_UNKNOWN_OP - CP_OP_R_INCOMPLETE] = "unknown_op",
};

const char *cp_op_cmd_name(enum cp_op_cmd c)
{
	return (unsigned)c < CP_OP_CMD__END && cmd_names[c] ? cmd_names[c] : "?";
}

const char *cp_op_line_op_name(enum cp_op_line_op op)
{
	return (unsigned)op < CP_OP_LINE__END && op_names[op] ? op_names[op] : "?";
}

const char *cp_op_reason_name(int reason)
{
	if (reason < 0)
		reason = -reason;
	if (reason == CP_OP_R_OK)
		return "ok";
	if (reason >= CP_OP_R_INCOMPLETE && reason < CP_OP_R__END)
		return reason_names[reason - CP_OP_R_INCOMPLETE];
	return "?";
}

ssize_t cp_op_frame(const char *buf, size_t len)
{
	size_t n = len < CP_OP_REQ_MAX ? len : CP_OP_REQ_MAX;
	const char *nl = n ? memchr(buf, '\n', n) : NULL;
	if (nl)
		return (ssize_t)(nl - buf);
	return len < CP_OP_REQ_MAX ? -CP_OP_R_INCOMPLETE : -CP_OP_R_REQUEST_TOO_LARGE;
}

/* The command named by s, or 0. */
static enum cp_op_cmd cmd_lookup(const char *s)
{
	for (unsigned i = 1; i < CP_OP_CMD__END; i++)
		if (!strcmp(s, cmd_names[i]))
			return (enum cp_op_cmd)i;
	return 0;
}

static int parse_line(json_t *req, struct cp_op_req *r)
{
	json_t *jl = json_object_get(req, "line");
	const char *op = json_string_value(json_object_get(req, "op"));
	const char *why = json_string_value(json_object_get(req, "why"));
	if (!json_is_integer(jl) || json_integer_value(jl) < 0 || json_integer_value(jl) >= FG_LINES || !op)
		return -CP_OP_R_BAD_REQUEST;
	r->line = (unsigned)json_integer_value(jl);
	if (!strcmp(op, "auto_promote")) {
		json_t *on = json_object_get(req, "on");
		if (!json_is_boolean(on))
			return -CP_OP_R_BAD_REQUEST;
		r->op = CP_OP_LINE_AUTO_PROMOTE;
		r->on = json_is_true(on);
	} else {
		r->op = 0;
		for (unsigned i = CP_OP_LINE_ENABLE; i < CP_OP_LINE_AUTO_PROMOTE; i++)
			if (!strcmp(op, op_names[i]))
				r->op = (enum cp_op_line_op)i;
		if (!r->op)
			return -CP_OP_R_UNKNOWN_OP;
	}
	if (why) {
		/* jansson refuses "\u0000" (no JSON_ALLOW_NUL), so the string
		 * ends at its NUL; longer text is cut like the audit text is. */
		r->has_why = true;
		size_t n = strlen(why);
		if (n >= sizeof(r->why))
			n = sizeof(r->why) - 1;
		memcpy(r->why, why, n);
		r->why[n] = '\0';
	}
	return 0;
}

static int parse_slot(json_t *req, const struct cp_op_limits *lim, struct cp_op_req *r)
{
	json_t *jl = json_object_get(req, "layer"), *jt = json_object_get(req, "token_seq");
	if (!json_is_integer(jl) || !json_is_integer(jt) || json_integer_value(jl) < 0 ||
	    json_integer_value(jl) >= (json_int_t)lim->layers || json_integer_value(jt) < 0 ||
	    json_integer_value(jt) > (json_int_t)UINT32_MAX)
		return -CP_OP_R_BAD_REQUEST;
	/* lim->layers may exceed 65536 only in a caller's bug; the cast then
	 * would wrap, so refuse instead. */
	if (json_integer_value(jl) > UINT16_MAX)
		return -CP_OP_R_BAD_REQUEST;
	r->layer = (uint16_t)json_integer_value(jl);
	r->token_seq = (uint32_t)json_integer_value(jt);
	return 0;
}

int cp_op_parse(const char *line, size_t len, const struct cp_op_limits *lim, struct cp_op_req *out)
{
	if (len >= CP_OP_REQ_MAX)
		return -CP_OP_R_REQUEST_TOO_LARGE;
	json_error_t jerr;
	json_t *req = json_loadb(line, len, 0, &jerr);
	const char *cmd = json_string_value(json_object_get(req, "cmd"));
	struct cp_op_req r;
	memset(&r, 0, sizeof(r));
	int rc = 0;
	if (!json_is_object(req) || !cmd)
		rc = -CP_OP_R_BAD_REQUEST;
	else if (!(r.cmd = cmd_lookup(cmd)))
		rc = -CP_OP_R_UNKNOWN_COMMAND;
	else if (r.cmd == CP_OP_CMD_LINE)
		rc = parse_line(req, &r);
	else if (r.cmd == CP_OP_CMD_SLOT)
		rc = parse_slot(req, lim, &r);
	json_decref(req);
	if (rc == 0)
		*out = r;
	return rc;
}

size_t cp_op_why_format(char *out, size_t out_len, const struct cp_op_req *r, uint32_t uid, int32_t pid)
{
	int n = snprintf(out, out_len, "fanoctl line %s (uid %u pid %d)%s%s", cp_op_line_op_name(r->op),
			 (unsigned)uid, (int)pid, r->has_why ? ": " : "", r->has_why ? r->why : "");
	if (n < 0) {
		out[0] = '\0';
		return 0;
	}
	return (size_t)n < out_len ? (size_t)n : out_len - 1;
}

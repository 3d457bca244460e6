/* cp_op_parse.h - request parser of the operator socket protocol
 * (docs/operator-protocol.md; the daemon side is control/cp_op.c, the client
 * tools/fanoctl_op.c).
 *
 * Owns: the framing of a request (one line ending in '\n', at most
 * CP_OP_REQ_MAX bytes with the '\n'), its syntax (one JSON object, parsed
 * with jansson's defaults: no "\u0000" in strings, nesting depth limited by
 * jansson, nothing but whitespace after the object), the commands and their
 * arguments, the argument checks (line index 0..FG_LINES-1, layer below the
 * configured number of layers, token_seq 0..UINT32_MAX, the line operations,
 * "on" a boolean), and the stable reasons a request is refused with before
 * anything is executed. Also the text that goes into the audit record of a
 * line change (cp_op_why_format).
 *
 * Pure: no sockets, no logging, no global state (jansson allocates while
 * parsing and frees before returning). Every function may be called from any
 * thread; the caller owns every buffer. A parsed request (struct cp_op_req)
 * holds copies, not pointers into the input.
 *
 * Not here: executing a command, the replies, and the refusals that depend
 * on the daemon's state (already, audit_failed, audit_busy, audit_timeout,
 * refused, the reload's reasons, fd_passing_refused, permission_denied). */
#ifndef CP_OP_PARSE_H
#define CP_OP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fg/common.h"

/* Bytes of a request including its '\n': a connection that sent this many
 * bytes without a '\n' is refused request_too_large. */
#define CP_OP_REQ_MAX 65536u
/* Bytes of "why" kept (with the NUL). The audit text built from it
 * (cp_op_why_format) is shorter than this, so nothing that could show is
 * lost. */
#define CP_OP_WHY_MAX 160u
/* Size of the buffer cp_op_why_format fills (the daemon's, unchanged). */
#define CP_OP_AUDIT_WHY_MAX 160u

/* Stable reasons. Above errno's range and above the HTTP parser's
 * (cp_http_parse.h), so they never collide with a -errno. The names
 * (cp_op_reason_name) are what the daemon answers in {"ok":false,"error":..}:
 * part of the operator interface; never rename one, only append. */
enum cp_op_reason {
	CP_OP_R_OK = 0,
	CP_OP_R_INCOMPLETE = 4608,   /* "incomplete": no '\n' yet and under the limit (never answered) */
	CP_OP_R_REQUEST_TOO_LARGE,   /* "request_too_large": CP_OP_REQ_MAX bytes without a '\n' */
	CP_OP_R_BAD_REQUEST,         /* "bad_request": not one JSON object, no string "cmd", or an
				      * argument missing, of the wrong type or out of range */
	CP_OP_R_UNKNOWN_COMMAND,     /* "unknown_command": "cmd" names no command */
	CP_OP_R_UNKNOWN_OP,          /* "unknown_op": "line" with an "op" that is no line operation */
	CP_OP_R__END
};

enum cp_op_cmd {
	CP_OP_CMD_STATUS = 1, /* {"cmd":"status"} */
	CP_OP_CMD_LINES,      /* {"cmd":"lines"} */
	CP_OP_CMD_LINE,       /* {"cmd":"line","line":0..6,"op":..,["on":bool],["why":".."]} */
	CP_OP_CMD_SLOTS,      /* {"cmd":"slots"} */
	CP_OP_CMD_SLOT,       /* {"cmd":"slot","layer":L,"token_seq":T} */
	CP_OP_CMD_PEERS,      /* {"cmd":"peers"} */
	CP_OP_CMD_STATS,      /* {"cmd":"stats"} */
	CP_OP_CMD_RELOAD,     /* {"cmd":"reload"} */
	CP_OP_CMD_CLUSTER,    /* {"cmd":"cluster"} */
	CP_OP_CMD__END
};

enum cp_op_line_op {
	CP_OP_LINE_ENABLE = 1,
	CP_OP_LINE_DISABLE,
	CP_OP_LINE_SHADOW,
	CP_OP_LINE_ACTIVE,
	CP_OP_LINE_AUTO_PROMOTE,
	CP_OP_LINE__END
};

/* What the checks depend on. */
struct cp_op_limits {
	unsigned layers; /* [slots] layers: a slot request's layer must be below it */
};

/* A parsed request. Fields other than cmd are set only for the command that
 * takes them (zero otherwise). Unknown members of the object are ignored. */
struct cp_op_req {
	enum cp_op_cmd cmd;
	/* CP_OP_CMD_LINE */
	unsigned line;              /* 0..FG_LINES-1 */
	enum cp_op_line_op op;
	bool on;                    /* CP_OP_LINE_AUTO_PROMOTE only */
	bool has_why;               /* "why" was a string (a non-string counts as absent) */
	char why[CP_OP_WHY_MAX];    /* its first CP_OP_WHY_MAX-1 bytes, NUL-terminated */
	/* CP_OP_CMD_SLOT */
	uint16_t layer;
	uint32_t token_seq;
};

/* Where the request in buf[0..len) ends: the first '\n'.
 * Returns the request's length (the bytes before the '\n'; anything after
 * it is ignored), -CP_OP_R_INCOMPLETE when there is no '\n' and
 * len < CP_OP_REQ_MAX (read more, into at most CP_OP_REQ_MAX - len more
 * bytes), or -CP_OP_R_REQUEST_TOO_LARGE when there is none in the first
 * CP_OP_REQ_MAX bytes. Reads no byte at or past buf[len], nor past
 * buf[CP_OP_REQ_MAX - 1]. Any thread. */
FG_MUST_CHECK ssize_t cp_op_frame(const char *buf, size_t len);

/* Parse one request line line[0..len) (without its '\n'; it may contain any
 * bytes, a NUL is refused like any other invalid JSON) against lim.
 * Returns 0 with *out filled, or -CP_OP_R_REQUEST_TOO_LARGE (len >=
 * CP_OP_REQ_MAX), -CP_OP_R_BAD_REQUEST, -CP_OP_R_UNKNOWN_COMMAND,
 * -CP_OP_R_UNKNOWN_OP with *out untouched. The checks run in this order
 * (it decides which reason a request with several faults gets):
 *   1. one JSON object with a string "cmd", else bad_request;
 *   2. "cmd" a known command, else unknown_command;
 *   3. line: "line" an integer 0..FG_LINES-1 and "op" a string, else
 *      bad_request; "op" "auto_promote" with a non-boolean "on" ->
 *      bad_request; any other "op" but enable|disable|shadow|active ->
 *      unknown_op;
 *   4. slot: "layer" an integer 0..lim->layers-1 and "token_seq" an integer
 *      0..UINT32_MAX, else bad_request.
 * Reads no byte at or past line[len]. Any thread; line, lim and out owned by
 * the caller. */
FG_MUST_CHECK int cp_op_parse(const char *line, size_t len, const struct cp_op_limits *lim,
			      struct cp_op_req *out);

/* The text of a line change's audit record, as the daemon has always
 * written it: "fanoctl line OP (uid U pid P)" then ": WHY" when the request
 * had a why, truncated to out_len - 1 bytes (NUL-terminated; out_len > 0).
 * r is a parsed CP_OP_CMD_LINE request. Returns the length written. Any
 * thread. */
size_t cp_op_why_format(char *out, size_t out_len, const struct cp_op_req *r, uint32_t uid, int32_t pid);

/* "status", "lines", ... for a command; "line" operation names as sent
 * ("enable", ..., "auto_promote"); reason names as answered
 * ("bad_request", ...; "ok" for 0). Accept the value or its negation for
 * reasons. "?" for anything else. Static storage. */
const char *cp_op_cmd_name(enum cp_op_cmd c);
const char *cp_op_line_op_name(enum cp_op_line_op op);
const char *cp_op_reason_name(int reason);

#endif

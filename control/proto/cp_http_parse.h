/* cp_http_parse.h - HTTP/1.1 request-head parser of the control plane.
 *
 * Owns: the syntax of an HTTP/1.1 request head (request line and header
 * section, RFC 9110/9112), the limits on its size, the handful of headers
 * fanogate acts on (Host, Content-Length, Transfer-Encoding, Connection,
 * Expect, Upgrade, Sec-WebSocket-Key/Version/Protocol, Authorization), the
 * WebSocket opening-handshake checks of RFC 6455 section 4.2.1, Bearer token
 * extraction, and the query string of GET /flow. The stable reasons and the
 * HTTP status each one maps to.
 *
 * Pure: no I/O, no allocation, no logging, no global state. Every function may
 * be called from any thread; the caller owns every buffer. Results point into
 * the caller's buffer (struct cp_http_str), so they live as long as it does.
 *
 * Not here: routing (404, and 405 for a path that does not take the method,
 * are the router's: it may reuse CP_HTTP_R_METHOD_NOT_ALLOWED), bodies (the
 * head tells how long the body is; the caller reads it), responses.
 *
 * Deliberate refusals (documented in docs/websocket.md):
 *   - any Transfer-Encoding (chunked included) -> 501: the fleet always sends
 *     Content-Length, and refusing TE removes every CL/TE smuggling question;
 *   - POST without Content-Length -> 411;
 *   - obs-fold, whitespace before the colon, bare LF or CR -> 400;
 *   - absolute-form, authority-form and asterisk-form targets -> 400;
 *   - methods other than GET, HEAD and POST -> 405 (fanogate serves no other);
 *   - HTTP versions other than 1.0 and 1.1 -> 505.
 */
#ifndef CP_HTTP_PARSE_H
#define CP_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fg/common.h"

/* Capacity of the header array in struct cp_http_req; limits.max_headers is
 * clamped to it. */
#define CP_HTTP_HEADERS_CAP 64u
/* Layers a /flow subscription can name; equals FG_MAX_LAYERS (fg/slot.h). */
#define CP_FLOW_LAYERS_MAX 256u
/* Length of a Sec-WebSocket-Key (base64 of 16 bytes) */
#define CP_WS_KEY_LEN 24u

/* Stable reasons. They start above errno's range so they never collide with a
 * -errno. Names (cp_http_reason_name) are part of the operator interface:
 * never renumber or rename one, only append. The status each maps to is in
 * the comment and in cp_http_reason_status(). */
enum cp_http_reason {
	CP_HTTP_R_OK = 0,
	CP_HTTP_R_INCOMPLETE = 4096,      /* "incomplete": head not complete yet (no status) */
	CP_HTTP_R_BAD_METHOD,             /* "bad_method" 400: method empty or not a token */
	CP_HTTP_R_METHOD_NOT_ALLOWED,     /* "method_not_allowed" 405: not GET, HEAD or POST */
	CP_HTTP_R_BAD_TARGET,             /* "bad_target" 400: not origin-form, bad char or %-escape */
	CP_HTTP_R_URI_TOO_LONG,           /* "uri_too_long" 414: request line over the limit */
	CP_HTTP_R_BAD_VERSION,            /* "bad_version" 400: not HTTP/d.d */
	CP_HTTP_R_VERSION_NOT_SUPPORTED,  /* "version_not_supported" 505: not 1.0 or 1.1 */
	CP_HTTP_R_BAD_LINE_ENDING,        /* "bad_line_ending" 400: bare LF, or CR not before LF */
	CP_HTTP_R_BAD_HEADER_NAME,        /* "bad_header_name" 400: empty, not a token, space before ':' */
	CP_HTTP_R_BAD_HEADER_VALUE,       /* "bad_header_value" 400: control character in a value */
	CP_HTTP_R_OBS_FOLD,               /* "obs_fold" 400: header line starts with SP or HTAB */
	CP_HTTP_R_HEADERS_TOO_LARGE,      /* "headers_too_large" 431: header section over the limit */
	CP_HTTP_R_TOO_MANY_HEADERS,       /* "too_many_headers" 431 */
	CP_HTTP_R_MISSING_HOST,           /* "missing_host" 400: HTTP/1.1 without Host */
	CP_HTTP_R_DUPLICATE_HOST,         /* "duplicate_host" 400 */
	CP_HTTP_R_BAD_CONTENT_LENGTH,     /* "bad_content_length" 400: not digits, or repeated */
	CP_HTTP_R_BODY_TOO_LARGE,         /* "body_too_large" 413 */
	CP_HTTP_R_LENGTH_REQUIRED,        /* "length_required" 411: POST without Content-Length */
	CP_HTTP_R_TRANSFER_ENCODING,      /* "transfer_encoding" 501: any Transfer-Encoding */
	CP_HTTP_R_BAD_CONNECTION,         /* "bad_connection" 400: Connection/Upgrade not a token list */
	CP_HTTP_R_EXPECTATION,            /* "expectation_failed" 417: Expect other than 100-continue */
	CP_HTTP_R_WS_NOT_UPGRADE,         /* "ws_not_upgrade" 400: /flow without a valid Upgrade handshake */
	CP_HTTP_R_WS_METHOD,              /* "ws_method" 405: upgrade with a method other than GET */
	CP_HTTP_R_WS_KEY,                 /* "ws_key" 400: Sec-WebSocket-Key missing, repeated or not 16 bytes */
	CP_HTTP_R_WS_VERSION,             /* "ws_version" 426: Sec-WebSocket-Version missing or not 13 */
	CP_HTTP_R_AUTH_MISSING,           /* "auth_missing" 401: no Authorization */
	CP_HTTP_R_AUTH_MALFORMED,         /* "auth_malformed" 401: not "Bearer <token68>", or repeated */
	CP_HTTP_R_BAD_QUERY,              /* "bad_query" 400: malformed, unknown or repeated parameter */
	CP_HTTP_R_BAD_LAYER,              /* "bad_layer" 400: layer not a number below n_layers */
	CP_HTTP_R__END
};

/* Size limits. A request that breaks one gets the reason's status and the
 * caller closes the connection after answering. */
struct cp_http_limits {
	uint32_t max_request_line; /* bytes, CRLF included; default 8192 -> 414 */
	uint32_t max_header_bytes; /* header section incl. the final empty line; default 16384 -> 431 */
	uint32_t max_headers;      /* default 64, clamped to CP_HTTP_HEADERS_CAP -> 431 */
	uint64_t max_body;         /* Content-Length; default 16 MiB -> 413 */
};

/* A slice of the caller's buffer. Not NUL-terminated. */
struct cp_http_str {
	const char *p;
	size_t len;
};

enum cp_http_method {
	CP_HTTP_GET = 1,
	CP_HTTP_HEAD,
	CP_HTTP_POST,
};

struct cp_http_header {
	struct cp_http_str name;  /* as sent (compare case-insensitively) */
	struct cp_http_str value; /* leading and trailing SP/HTAB trimmed */
};

/* The parsed head. Every cp_http_str points into the parsed buffer. */
struct cp_http_req {
	enum cp_http_method method;
	struct cp_http_str target;      /* the whole origin-form target */
	struct cp_http_str path;        /* target up to '?', still %-encoded */
	struct cp_http_str query;       /* after '?', without it; len 0 if none */
	bool has_query;
	uint8_t version_minor;          /* HTTP/1.<minor>: 0 or 1 */
	struct cp_http_str host;        /* len 0 if absent (HTTP/1.0 only) */
	bool has_content_length;
	uint64_t content_length;        /* 0 when absent */
	bool keep_alive;                /* after this response the connection stays open */
	bool expect_continue;           /* Expect: 100-continue was sent */
	/* WebSocket opening handshake inputs (validated by cp_http_ws_check) */
	bool conn_upgrade;              /* Connection lists "upgrade" */
	bool upgrade_websocket;         /* Upgrade lists "websocket" */
	uint8_t n_ws_key;               /* Sec-WebSocket-Key fields seen */
	uint8_t n_ws_version;           /* Sec-WebSocket-Version fields seen */
	struct cp_http_str ws_key;      /* the last one seen */
	struct cp_http_str ws_version;
	bool ws_protocol_offered;       /* any Sec-WebSocket-Protocol was sent */
	bool ws_protocol_aeon_flow;     /* ... and it lists "aeon-flow" */
	uint8_t n_authorization;
	struct cp_http_str authorization;
	/* Last, so a parse writes only headers[0..n_headers) of the array. */
	unsigned n_headers;
	struct cp_http_header headers[CP_HTTP_HEADERS_CAP]; /* [n_headers..] unspecified */
};

/* Fill the defaults listed in struct cp_http_limits. */
void cp_http_limits_default(struct cp_http_limits *lim);

/* Parse one request head at the start of buf[0..len).
 * Returns the head's length in bytes (through the empty line; the body, if
 * any, starts there and is req->content_length bytes long),
 * -CP_HTTP_R_INCOMPLETE if every byte so far is valid but the head is not
 * complete and no limit is exceeded yet (call again with more bytes), or
 * -CP_HTTP_R_xxx. Invalid input is refused as soon as it is seen, so a caller
 * never needs to buffer more than the limits. *req is written only on success.
 * Reads no byte at or past buf[len]. Any thread; lim and req owned by the
 * caller; on success req's slices point into buf. */
FG_MUST_CHECK ssize_t cp_http_parse_request(const uint8_t *buf, size_t len,
					    const struct cp_http_limits *lim,
					    struct cp_http_req *req);

/* A parse that resumes where it stopped. Call cp_http_parser_run with the
 * same head again each time bytes are appended to it: only the new bytes
 * are examined (the parse examines each byte a bounded number of times
 * whatever the number of calls: `examined` counts it). The buffer may move
 * between calls (realloc): the slices already found are re-based; the
 * bytes before the previous call's len must be unchanged, and lim the same.
 * Fields are private except examined. */
struct cp_http_head_flags {
	bool close, keep;
};
struct cp_http_parser {
	size_t pos;          /* bytes examined */
	size_t rl;           /* request line length once it ended */
	size_t mark[4];      /* offsets within the current line (cp_http_parse.c) */
	uint64_t examined;   /* byte reads so far (scans, compares, trims): tests check it is linear */
	uintptr_t base;      /* address of the last call's buffer */
	ssize_t verdict;     /* once st is done: head length or -reason */
	uint8_t st, k, major;
	struct cp_http_head_flags f;
	struct cp_http_req r; /* last: headers[n_headers..] never touched */
};

/* Start a new head (the previous one's verdict forgotten). */
void cp_http_parser_init(struct cp_http_parser *p);

/* Like cp_http_parse_request on buf[0..len), examining only the bytes past
 * the previous call's. After a verdict (not -CP_HTTP_R_INCOMPLETE) further
 * calls return it again (and rewrite *req on success) until
 * cp_http_parser_init. Any thread; p, lim, req owned by the caller. */
FG_MUST_CHECK ssize_t cp_http_parser_run(struct cp_http_parser *p, const uint8_t *buf, size_t len,
					 const struct cp_http_limits *lim, struct cp_http_req *req);

/* Find a header by name (case-insensitive); the first one if repeated.
 * Returns it or NULL. */
const struct cp_http_header *cp_http_header_find(const struct cp_http_req *req,
						 const char *name);

/* The RFC 6455 4.2.1 checks of an upgrade request on /flow: GET, HTTP/1.1,
 * Upgrade lists websocket, Connection lists upgrade, exactly one
 * Sec-WebSocket-Key that is base64 of 16 bytes, exactly one
 * Sec-WebSocket-Version equal to 13. Returns 0 or -CP_HTTP_R_WS_xxx (a 426
 * answer must carry "Sec-WebSocket-Version: 13"). */
FG_MUST_CHECK int cp_http_ws_check(const struct cp_http_req *req);

/* Whether s is a well-formed Sec-WebSocket-Key: 22 base64 characters whose
 * last one carries no stray bits, then "==". */
bool cp_http_ws_key_is_valid(const char *s, size_t len);

/* The token of "Authorization: Bearer <token68>" (scheme case-insensitive,
 * RFC 6750 2.1). Returns 0 with *token set (a slice of the request buffer),
 * -CP_HTTP_R_AUTH_MISSING, or -CP_HTTP_R_AUTH_MALFORMED (other scheme, bad
 * token characters, or more than one Authorization field). */
FG_MUST_CHECK int cp_http_bearer(const struct cp_http_req *req, struct cp_http_str *token);

/* Iterate the parameters of a query string ("a=1&b=2"). *pos starts at 0.
 * Returns 1 with *name and *value set (raw, still %-encoded; value len 0 for
 * "a" or "a="), 0 at the end, or -CP_HTTP_R_BAD_QUERY for an empty name. */
FG_MUST_CHECK int cp_http_query_next(struct cp_http_str query, size_t *pos,
				     struct cp_http_str *name, struct cp_http_str *value);

/* What GET /flow?... asks for. */
struct cp_flow_query {
	uint64_t layers[CP_FLOW_LAYERS_MAX / 64]; /* bit L set: subscribed to layer L */
	unsigned n_layers;                        /* bits set */
	bool status;                              /* answer frames with status frames (default true) */
	bool layer_bound;                         /* layer=<L> given: frames are for layer bound_layer */
	uint16_t bound_layer;
};

/* Parse the query of GET /flow: "layers=1,2,27" or "layers=all" (all of
 * 0..n_layers-1; commas may be sent as %2C), "status=0" or "status=1",
 * "layer=17" (the connection is bound to destination layer 17: its seed and
 * canonical frames are for that layer, wire.md section 3). All
 * optional (no layers = subscribed to nothing; status defaults to 1); an
 * unknown or repeated parameter, an empty list element, a number with a sign
 * or leading zero, or a layer >= n_layers is refused. n_layers <=
 * CP_FLOW_LAYERS_MAX. Returns 0 with *out filled, or -CP_HTTP_R_BAD_QUERY /
 * -CP_HTTP_R_BAD_LAYER (*out untouched). */
FG_MUST_CHECK int cp_flow_query_parse(struct cp_http_str query, unsigned n_layers,
				      struct cp_flow_query *out);

/* Whether layer is set in q. */
bool cp_flow_query_has_layer(const struct cp_flow_query *q, unsigned layer);

/* Stable lower-case name of a reason ("unknown" out of range). Accepts the
 * reason or its negation. */
const char *cp_http_reason_name(int reason);
/* HTTP status code for a reason (accepts its negation); 0 for OK and
 * incomplete, 400 for out-of-range values. */
int cp_http_reason_status(int reason);
/* Reason phrase of a status code this module can produce plus 101, 200, 403,
 * 404, 408, 409, 429, 500, 502, 503 and 504 ("Unknown" otherwise). */
const char *cp_http_status_text(int status);

#endif

/* test_op_parse.c - unit tests for control/proto/cp_op_parse.c, the
 * operator socket's request parser.
 *
 * 1. Every request kind, byte for byte as fanoctl sends it (json_dumps
 *    JSON_COMPACT + '\n'), with its parsed fields; framed, then parsed ending
 *    at a PROT_NONE page; every strict prefix of each request is
 *    "incomplete" for the framer and bad_request for the parser.
 * 2. One malformed request per class with its exact stable reason: truncated,
 *    oversized, unknown command, unknown op, bad numbers, bad line (a triple,
 *    a string), embedded NUL, missing or mistyped fields, not an object,
 *    trailing bytes; the order in which the checks decide.
 * 3. The limits at their value and one past it (request size, line index,
 *    layer, token_seq).
 * 4. The audit text of a line change; the reason, command and op names;
 *    docs/operator-protocol.md lists every reason the parser answers.
 * 5. Single-byte mutations of every valid request: always a known reason, and
 *    *out untouched on failure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cp_op_parse.h"
#include "guard_buf.h"

static const struct cp_op_limits lim = {.layers = 28};

/* Parse s[0..n) placed so that it ends at the guard page. */
static int parse_n(const char *s, size_t n, struct cp_op_req *r)
{
	const char *p = (const char *)guard_place(s, n);
	return cp_op_parse(p, n, &lim, r);
}

static int parse(const char *s, struct cp_op_req *r)
{
	return parse_n(s, strlen(s), r);
}

/* The reason a request is refused with, "ok" if accepted; *out must stay
 * untouched when refused. */
static const char *verdict(const char *s, size_t n)
{
	struct cp_op_req r, before;
	memset(&r, 0xA5, sizeof(r));
	before = r;
	int rc = parse_n(s, n, &r);
	if (rc < 0)
		assert_memory_equal(&r, &before, sizeof(r));
	return cp_op_reason_name(rc);
}

#define EXPECT(reason, lit) assert_string_equal(verdict(lit, sizeof(lit) - 1), reason)

/* ---- 1. every request kind ------------------------------------------------ */

struct good {
	const char *wire; /* as fanoctl sends it, '\n' included */
	enum cp_op_cmd cmd;
	unsigned line;
	enum cp_op_line_op op;
	bool on, has_why;
	const char *why;
	unsigned layer;
	uint32_t token_seq;
};

static const struct good goods[] = {
	{"{\"cmd\":\"status\"}\n", CP_OP_CMD_STATUS, 0, 0, false, false, "", 0, 0},
	{"{\"cmd\":\"lines\"}\n", CP_OP_CMD_LINES, 0, 0, false, false, "", 0, 0},
	{"{\"cmd\":\"line\",\"line\":1,\"op\":\"enable\",\"why\":\"T\"}\n", CP_OP_CMD_LINE, 1, CP_OP_LINE_ENABLE,
	 false, true, "T", 0, 0},
	{"{\"cmd\":\"line\",\"line\":0,\"op\":\"disable\"}\n", CP_OP_CMD_LINE, 0, CP_OP_LINE_DISABLE, false, false,
	 "", 0, 0},
	{"{\"cmd\":\"line\",\"line\":6,\"op\":\"shadow\",\"why\":\"\"}\n", CP_OP_CMD_LINE, 6, CP_OP_LINE_SHADOW,
	 false, true, "", 0, 0},
	{"{\"cmd\":\"line\",\"line\":4,\"op\":\"active\",\"why\":\"incident 7 \\u00e9\\\"q\\\"\"}\n", CP_OP_CMD_LINE, 4,
	 CP_OP_LINE_ACTIVE, false, true, "incident 7 \xc3\xa9\"q\"", 0, 0},
	{"{\"cmd\":\"line\",\"line\":3,\"op\":\"auto_promote\",\"on\":true}\n", CP_OP_CMD_LINE, 3,
	 CP_OP_LINE_AUTO_PROMOTE, true, false, "", 0, 0},
	{"{\"cmd\":\"line\",\"line\":6,\"op\":\"auto_promote\",\"on\":false,\"why\":\"OPS-2\"}\n", CP_OP_CMD_LINE, 6,
	 CP_OP_LINE_AUTO_PROMOTE, false, true, "OPS-2", 0, 0},
	{"{\"cmd\":\"slots\"}\n", CP_OP_CMD_SLOTS, 0, 0, false, false, "", 0, 0},
	{"{\"cmd\":\"slot\",\"layer\":3,\"token_seq\":42}\n", CP_OP_CMD_SLOT, 0, 0, false, false, "", 3, 42},
	{"{\"cmd\":\"slot\",\"layer\":27,\"token_seq\":4294967295}\n", CP_OP_CMD_SLOT, 0, 0, false, false, "", 27,
	 4294967295u},
	{"{\"cmd\":\"slot\",\"layer\":0,\"token_seq\":0}\n", CP_OP_CMD_SLOT, 0, 0, false, false, "", 0, 0},
	{"{\"cmd\":\"peers\"}\n", CP_OP_CMD_PEERS, 0, 0, false, false, "", 0, 0},
	{"{\"cmd\":\"stats\"}\n", CP_OP_CMD_STATS, 0, 0, false, false, "", 0, 0},
	{"{\"cmd\":\"reload\"}\n", CP_OP_CMD_RELOAD, 0, 0, false, false, "", 0, 0},
	/* not what fanoctl sends, but accepted: whitespace, CR, key order,
	 * unknown members, a non-string why (absent), duplicate keys (last wins) */
	{" \t{ \"op\" : \"enable\" , \"line\" : 2 , \"cmd\" : \"line\" , \"x\" : [1, {\"y\": null}] }\r\n",
	 CP_OP_CMD_LINE, 2, CP_OP_LINE_ENABLE, false, false, "", 0, 0},
	{"{\"cmd\":\"line\",\"line\":5,\"op\":\"disable\",\"why\":17}\n", CP_OP_CMD_LINE, 5, CP_OP_LINE_DISABLE, false,
	 false, "", 0, 0},
	{"{\"cmd\":\"peers\",\"cmd\":\"stats\"}\n", CP_OP_CMD_STATS, 0, 0, false, false, "", 0, 0},
	{"{\"cmd\":\"status\",\"line\":\"junk\",\"layer\":-1}\n", CP_OP_CMD_STATUS, 0, 0, false, false, "", 0, 0},
};

static void check_good(const struct good *g, const struct cp_op_req *r)
{
	assert_int_equal(r->cmd, g->cmd);
	assert_int_equal(r->line, g->line);
	assert_int_equal(r->op, g->op);
	assert_int_equal(r->on, g->on);
	assert_int_equal(r->has_why, g->has_why);
	assert_string_equal(r->why, g->why);
	assert_int_equal(r->layer, g->layer);
	assert_int_equal(r->token_seq, g->token_seq);
}

static void test_every_kind(void **state)
{
	(void)state;
	for (size_t i = 0; i < FG_ARRAY_LEN(goods); i++) {
		const struct good *g = &goods[i];
		size_t n = strlen(g->wire);
		const char *p = (const char *)guard_place(g->wire, n);
		ssize_t end = cp_op_frame(p, n);
		assert_int_equal(end, (ssize_t)n - 1);
		struct cp_op_req r;
		memset(&r, 0x5A, sizeof(r));
		assert_int_equal(cp_op_parse(p, (size_t)end, &lim, &r), 0);
		check_good(g, &r);
		/* bytes after the '\n' are not part of the request */
		char two[512];
		assert_true(2 * n < sizeof(two));
		memcpy(two, g->wire, n);
		memcpy(two + n, g->wire, n);
		p = (const char *)guard_place(two, 2 * n);
		assert_int_equal(cp_op_frame(p, 2 * n), (ssize_t)n - 1);
	}
}

static void test_every_prefix(void **state)
{
	(void)state;
	for (size_t i = 0; i < FG_ARRAY_LEN(goods); i++) {
		const char *w = goods[i].wire;
		size_t n = strlen(w);
		for (size_t k = 0; k + 1 < n; k++) {
			const char *p = (const char *)guard_place(w, k);
			assert_int_equal(cp_op_frame(p, k), -CP_OP_R_INCOMPLETE);
			/* a strict prefix of the object is never a request; the
			 * CR-ended one is whole one byte early */
			if (w[n - 2] == '\r' && k == n - 2)
				continue;
			struct cp_op_req r;
			assert_int_equal(cp_op_parse(p, k, &lim, &r), -CP_OP_R_BAD_REQUEST);
		}
	}
}

/* ---- 2. malformed classes ------------------------------------------------- */

static void test_truncated(void **state)
{
	(void)state;
	EXPECT("bad_request", "");
	EXPECT("bad_request", " \t\r ");
	EXPECT("bad_request", "{");
	EXPECT("bad_request", "{\"cmd\":\"status\"");
	EXPECT("bad_request", "{\"cmd\":\"stat");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":1,\"op\":\"enable\",\"why\":\"T");
	EXPECT("bad_request", "{\"cmd\":\"slot\",\"layer\":3,\"token_seq\":");
	struct cp_op_req r;
	assert_int_equal(cp_op_parse(NULL, 0, &lim, &r), -CP_OP_R_BAD_REQUEST);
	assert_int_equal(cp_op_frame(NULL, 0), -CP_OP_R_INCOMPLETE);
}

static void test_unknown_verb(void **state)
{
	(void)state;
	EXPECT("unknown_command", "{\"cmd\":\"reboot\"}");
	EXPECT("unknown_command", "{\"cmd\":\"\"}");
	EXPECT("unknown_command", "{\"cmd\":\"STATUS\"}");
	EXPECT("unknown_command", "{\"cmd\":\"status \"}");
	EXPECT("unknown_command", "{\"cmd\":\"statu\"}");
	EXPECT("unknown_command", "{\"cmd\":\"statuss\"}");
	EXPECT("unknown_command", "{\"cmd\":\"config reload\"}");
	EXPECT("unknown_command", "{\"cmd\":\"lines\\u00e9\"}");
	EXPECT("unknown_op", "{\"cmd\":\"line\",\"line\":1,\"op\":\"enabled\"}");
	EXPECT("unknown_op", "{\"cmd\":\"line\",\"line\":1,\"op\":\"\"}");
	EXPECT("unknown_op", "{\"cmd\":\"line\",\"line\":1,\"op\":\"ENABLE\"}");
	EXPECT("unknown_op", "{\"cmd\":\"line\",\"line\":1,\"op\":\"auto-promote\",\"on\":true}");
	EXPECT("unknown_op", "{\"cmd\":\"line\",\"line\":1,\"op\":\"degraded\"}");
}

static void test_bad_numbers(void **state)
{
	(void)state;
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":-1,\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":7,\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":1.0,\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":1e0,\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":01,\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":+1,\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":0x1,\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":4294967297,\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":-9223372036854775808,\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":99999999999999999999,\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":NaN,\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"slot\",\"layer\":-1,\"token_seq\":42}");
	EXPECT("bad_request", "{\"cmd\":\"slot\",\"layer\":28,\"token_seq\":42}");
	EXPECT("bad_request", "{\"cmd\":\"slot\",\"layer\":65539,\"token_seq\":42}");
	EXPECT("bad_request", "{\"cmd\":\"slot\",\"layer\":3,\"token_seq\":-1}");
	EXPECT("bad_request", "{\"cmd\":\"slot\",\"layer\":3,\"token_seq\":4294967296}");
	EXPECT("bad_request", "{\"cmd\":\"slot\",\"layer\":3,\"token_seq\":42.0}");
	EXPECT("bad_request", "{\"cmd\":\"slot\",\"layer\":3,\"token_seq\":\"42\"}");
	EXPECT("bad_request", "{\"cmd\":\"slot\",\"layer\":\"3\",\"token_seq\":42}");
	EXPECT("bad_request", "{\"cmd\":\"slot\",\"layer\":3,\"token_seq\":18446744073709551616}");
}

static void test_bad_line(void **state)
{
	(void)state;
	/* the daemon takes the index only: fanoctl turns a triple into it */
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":\"1,4,5\",\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":\"(1,4,5)\",\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":[1,4,5],\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":\"1\",\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":{\"a\":1},\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":true,\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":null,\"op\":\"enable\"}");
}

static void test_embedded_nul(void **state)
{
	(void)state;
	EXPECT("bad_request", "{\"cmd\":\"status\"}\0");
	EXPECT("bad_request", "\0{\"cmd\":\"status\"}");
	EXPECT("bad_request", "{\"cmd\":\"sta\0tus\"}");
	EXPECT("bad_request", "{\"cmd\":\"status\"\0}");
	EXPECT("bad_request", "{\"cmd\":\"status\\u0000\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":1,\"op\":\"enable\",\"why\":\"a\\u0000b\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":1,\"op\":\"enable\\u0000\"}");
	EXPECT("bad_request", "{\"cm\\u0000d\":\"status\"}");
	/* the framer is not fooled by a NUL either: only '\n' ends a request */
	static const char nul[] = "{\"cmd\":\0\"status\"}\n";
	assert_int_equal(cp_op_frame(nul, sizeof(nul) - 1), (ssize_t)sizeof(nul) - 2);
}

static void test_missing_fields(void **state)
{
	(void)state;
	EXPECT("bad_request", "{}");
	EXPECT("bad_request", "{\"command\":\"status\"}");
	EXPECT("bad_request", "{\"cmd\":null}");
	EXPECT("bad_request", "{\"cmd\":1}");
	EXPECT("bad_request", "{\"cmd\":[\"status\"]}");
	EXPECT("bad_request", "{\"cmd\":{\"status\":1}}");
	EXPECT("bad_request", "{\"cmd\":\"line\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":1}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"op\":\"enable\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":1,\"op\":1}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":1,\"op\":null}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":1,\"op\":\"auto_promote\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":1,\"op\":\"auto_promote\",\"on\":\"true\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":1,\"op\":\"auto_promote\",\"on\":1}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":1,\"op\":\"auto_promote\",\"on\":null}");
	EXPECT("bad_request", "{\"cmd\":\"slot\"}");
	EXPECT("bad_request", "{\"cmd\":\"slot\",\"layer\":3}");
	EXPECT("bad_request", "{\"cmd\":\"slot\",\"token_seq\":42}");
}

static void test_not_one_object(void **state)
{
	(void)state;
	EXPECT("bad_request", "[\"status\"]");
	EXPECT("bad_request", "\"status\"");
	EXPECT("bad_request", "status");
	EXPECT("bad_request", "42");
	EXPECT("bad_request", "null");
	EXPECT("bad_request", "{\"cmd\":\"status\"} x");
	EXPECT("bad_request", "{\"cmd\":\"status\"}{\"cmd\":\"status\"}");
	EXPECT("bad_request", "{\"cmd\":\"status\",}");
	EXPECT("bad_request", "{'cmd':'status'}");
	EXPECT("bad_request", "{cmd:\"status\"}");
	EXPECT("ok", "{\"cmd\":\"status\"}\n \t\r"); /* trailing JSON whitespace */
	EXPECT("bad_request", "\xef\xbb\xbf{\"cmd\":\"status\"}");  /* a BOM */
	EXPECT("bad_request", "{\"cmd\":\"st\xff\"}");              /* not UTF-8 */
	EXPECT("bad_request", "{\"cmd\":\"st\x01\"}");              /* control character */
}

/* The order of the checks decides the reason of a request with two faults. */
static void test_check_order(void **state)
{
	(void)state;
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":9,\"op\":\"bogus\"}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":9,\"op\":\"auto_promote\",\"on\":true}");
	EXPECT("bad_request", "{\"cmd\":\"line\",\"line\":1,\"op\":\"auto_promote\",\"on\":2,\"why\":\"x\"}");
	EXPECT("unknown_op", "{\"cmd\":\"line\",\"line\":1,\"op\":\"bogus\",\"on\":2}");
	EXPECT("unknown_command", "{\"cmd\":\"bogus\",\"line\":99,\"layer\":-5}");
	EXPECT("ok", "{\"cmd\":\"line\",\"line\":1,\"op\":\"enable\",\"on\":\"junk\"}");
}

/* Deep nesting is refused by jansson's depth limit, not the stack. */
static void test_deep_nesting(void **state)
{
	(void)state;
	static char s[CP_OP_REQ_MAX - 1];
	size_t n = sizeof(s);
	static const char head[] = "{\"cmd\":\"status\",\"x\":";
	memcpy(s, head, sizeof(head) - 1);
	memset(s + sizeof(head) - 1, '[', n - (sizeof(head) - 1));
	assert_string_equal(verdict(s, n), "bad_request");
	memset(s, '{', n);
	assert_string_equal(verdict(s, n), "bad_request");
}

/* ---- 3. limits -------------------------------------------------------------- */

static void test_size_limit(void **state)
{
	(void)state;
	static const char head[] = "{\"cmd\":\"line\",\"line\":2,\"op\":\"disable\",\"why\":\"";
	static char s[CP_OP_REQ_MAX + 1];
	/* CP_OP_REQ_MAX bytes with the '\n' last: accepted; the why is cut */
	memcpy(s, head, sizeof(head) - 1);
	memset(s + sizeof(head) - 1, 'w', CP_OP_REQ_MAX - (sizeof(head) - 1));
	memcpy(s + CP_OP_REQ_MAX - 3, "\"}\n", 3);
	const char *p = (const char *)guard_place(s, CP_OP_REQ_MAX);
	ssize_t end = cp_op_frame(p, CP_OP_REQ_MAX);
	assert_int_equal(end, CP_OP_REQ_MAX - 1);
	struct cp_op_req r;
	assert_int_equal(cp_op_parse(p, (size_t)end, &lim, &r), 0);
	assert_int_equal(r.line, 2);
	assert_true(r.has_why);
	assert_int_equal(strlen(r.why), CP_OP_WHY_MAX - 1);
	assert_true(strspn(r.why, "w") == CP_OP_WHY_MAX - 1);
	/* CP_OP_REQ_MAX bytes without a '\n': refused; one less: read on */
	s[CP_OP_REQ_MAX - 1] = ' ';
	p = (const char *)guard_place(s, CP_OP_REQ_MAX);
	assert_int_equal(cp_op_frame(p, CP_OP_REQ_MAX), -CP_OP_R_REQUEST_TOO_LARGE);
	assert_string_equal(cp_op_reason_name(cp_op_frame(p, CP_OP_REQ_MAX)), "request_too_large");
	p = (const char *)guard_place(s, CP_OP_REQ_MAX - 1);
	assert_int_equal(cp_op_frame(p, CP_OP_REQ_MAX - 1), -CP_OP_R_INCOMPLETE);
	/* a '\n' past the limit does not count; the framer stops looking */
	s[CP_OP_REQ_MAX] = '\n';
	p = (const char *)guard_place(s, CP_OP_REQ_MAX + 1);
	assert_int_equal(cp_op_frame(p, CP_OP_REQ_MAX + 1), -CP_OP_R_REQUEST_TOO_LARGE);
	/* the parser refuses a line the framer could never have passed */
	assert_int_equal(cp_op_parse(p, CP_OP_REQ_MAX, &lim, &r), -CP_OP_R_REQUEST_TOO_LARGE);
}

static void test_range_limits(void **state)
{
	(void)state;
	char buf[128];
	struct cp_op_req r;
	for (int line = -2; line <= 8; line++) {
		snprintf(buf, sizeof(buf), "{\"cmd\":\"line\",\"line\":%d,\"op\":\"shadow\"}", line);
		int rc = parse(buf, &r);
		if (line >= 0 && line < 7) {
			assert_int_equal(rc, 0);
			assert_int_equal(r.line, (unsigned)line);
		} else {
			assert_int_equal(rc, -CP_OP_R_BAD_REQUEST);
		}
	}
	/* the layer limit comes from the caller */
	static const unsigned layer_lims[] = {1, 28, 256, 65535, 65536};
	for (size_t i = 0; i < FG_ARRAY_LEN(layer_lims); i++) {
		struct cp_op_limits l = {.layers = layer_lims[i]};
		snprintf(buf, sizeof(buf), "{\"cmd\":\"slot\",\"layer\":%u,\"token_seq\":1}", layer_lims[i] - 1);
		assert_int_equal(cp_op_parse(buf, strlen(buf), &l, &r), 0);
		assert_int_equal(r.layer, layer_lims[i] - 1);
		snprintf(buf, sizeof(buf), "{\"cmd\":\"slot\",\"layer\":%u,\"token_seq\":1}", layer_lims[i]);
		assert_int_equal(cp_op_parse(buf, strlen(buf), &l, &r), -CP_OP_R_BAD_REQUEST);
	}
	struct cp_op_limits none = {.layers = 0};
	snprintf(buf, sizeof(buf), "{\"cmd\":\"slot\",\"layer\":0,\"token_seq\":1}");
	assert_int_equal(cp_op_parse(buf, strlen(buf), &none, &r), -CP_OP_R_BAD_REQUEST);
	/* a caller's limit past uint16_t cannot wrap a layer */
	struct cp_op_limits huge = {.layers = 70000};
	snprintf(buf, sizeof(buf), "{\"cmd\":\"slot\",\"layer\":65536,\"token_seq\":1}");
	assert_int_equal(cp_op_parse(buf, strlen(buf), &huge, &r), -CP_OP_R_BAD_REQUEST);
}

/* ---- 4. audit text, names, docs ------------------------------------------------ */

static void test_why_format(void **state)
{
	(void)state;
	struct cp_op_req r;
	char out[CP_OP_AUDIT_WHY_MAX];
	assert_int_equal(parse("{\"cmd\":\"line\",\"line\":1,\"op\":\"enable\",\"why\":\"d1 test\"}", &r), 0);
	size_t n = cp_op_why_format(out, sizeof(out), &r, 1000, 4242);
	assert_string_equal(out, "fanoctl line enable (uid 1000 pid 4242): d1 test");
	assert_int_equal(n, strlen(out));
	assert_int_equal(parse("{\"cmd\":\"line\",\"line\":1,\"op\":\"disable\"}", &r), 0);
	cp_op_why_format(out, sizeof(out), &r, 0, -1);
	assert_string_equal(out, "fanoctl line disable (uid 0 pid -1)");
	assert_int_equal(parse("{\"cmd\":\"line\",\"line\":1,\"op\":\"shadow\",\"why\":\"\"}", &r), 0);
	cp_op_why_format(out, sizeof(out), &r, 7, 8);
	assert_string_equal(out, "fanoctl line shadow (uid 7 pid 8): ");
	/* a long why: cut at the buffer, NUL-terminated */
	char req[600];
	snprintf(req, sizeof(req), "{\"cmd\":\"line\",\"line\":1,\"op\":\"active\",\"why\":\"%0500d\"}", 0);
	assert_int_equal(parse(req, &r), 0);
	n = cp_op_why_format(out, sizeof(out), &r, 4294967295u, 2147483647);
	assert_int_equal(n, sizeof(out) - 1);
	assert_int_equal(strlen(out), sizeof(out) - 1);
	static const char pre[] = "fanoctl line active (uid 4294967295 pid 2147483647): ";
	assert_memory_equal(out, pre, sizeof(pre) - 1);
	assert_int_equal(strspn(out + sizeof(pre) - 1, "0"), sizeof(out) - sizeof(pre));
	char tiny[1];
	assert_int_equal(cp_op_why_format(tiny, 1, &r, 1, 1), 0);
	assert_int_equal(tiny[0], '\0');
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(cp_op_reason_name(0), "ok");
	assert_string_equal(cp_op_reason_name(-CP_OP_R_INCOMPLETE), "incomplete");
	assert_string_equal(cp_op_reason_name(CP_OP_R_REQUEST_TOO_LARGE), "request_too_large");
	assert_string_equal(cp_op_reason_name(-CP_OP_R_BAD_REQUEST), "bad_request");
	assert_string_equal(cp_op_reason_name(-CP_OP_R_UNKNOWN_COMMAND), "unknown_command");
	assert_string_equal(cp_op_reason_name(-CP_OP_R_UNKNOWN_OP), "unknown_op");
	assert_string_equal(cp_op_reason_name(-CP_OP_R__END), "?");
	assert_string_equal(cp_op_reason_name(-22), "?");
	assert_string_equal(cp_op_reason_name(CP_OP_R_INCOMPLETE - 1), "?");
	static const char *const cmds[] = {"?", "status", "lines", "line", "slots", "slot", "peers", "stats",
					   "reload", "cluster", "?"};
	for (unsigned i = 0; i <= CP_OP_CMD__END; i++)
		assert_string_equal(cp_op_cmd_name((enum cp_op_cmd)i), cmds[i]);
	static const char *const ops[] = {"?", "enable", "disable", "shadow", "active", "auto_promote", "?"};
	for (unsigned i = 0; i <= CP_OP_LINE__END; i++)
		assert_string_equal(cp_op_line_op_name((enum cp_op_line_op)i), ops[i]);
	/* every command name parses to itself */
	for (unsigned i = 1; i < CP_OP_CMD__END; i++) {
		char buf[64];
		struct cp_op_req r;
		if (i == CP_OP_CMD_LINE || i == CP_OP_CMD_SLOT)
			continue;
		snprintf(buf, sizeof(buf), "{\"cmd\":\"%s\"}", cp_op_cmd_name((enum cp_op_cmd)i));
		assert_int_equal(parse(buf, &r), 0);
		assert_int_equal(r.cmd, i);
	}
}

/* docs/operator-protocol.md names every reason the parser answers, in
 * backquotes, in its table of refusals. */
static void test_docs_list_reasons(void **state)
{
	(void)state;
	const char *d = getenv("FG_TEST_DATA");
	if (!d) {
		skip();
		return;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/../../docs/operator-protocol.md", d);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char *doc = calloc(1, 1 << 20);
	assert_non_null(doc);
	size_t n = fread(doc, 1, (1 << 20) - 1, f);
	fclose(f);
	assert_true(n > 0);
	for (int r = CP_OP_R_REQUEST_TOO_LARGE; r < CP_OP_R__END; r++) {
		char needle[64];
		snprintf(needle, sizeof(needle), "| `%s` |", cp_op_reason_name(r));
		if (!strstr(doc, needle))
			fail_msg("docs/operator-protocol.md has no table row for `%s`", cp_op_reason_name(r));
	}
	free(doc);
}

/* ---- 5. mutations --------------------------------------------------------------- */

static void test_mutations(void **state)
{
	(void)state;
	static const uint8_t subst[] = {0, '\n', '"', '\\', '{', '}', ',', ':', ' ', '0', '9', '-', 'x', 0x80, 0xff};
	unsigned accepted = 0, refused = 0;
	for (size_t i = 0; i < FG_ARRAY_LEN(goods); i++) {
		size_t n = strlen(goods[i].wire) - 1; /* without the '\n' */
		char buf[256];
		assert_true(n < sizeof(buf));
		for (size_t pos = 0; pos < n; pos++) {
			for (size_t k = 0; k < FG_ARRAY_LEN(subst); k++) {
				memcpy(buf, goods[i].wire, n);
				buf[pos] = (char)subst[k];
				const char *v = verdict(buf, n);
				if (!strcmp(v, "ok")) {
					accepted++;
				} else {
					assert_true(!strcmp(v, "bad_request") || !strcmp(v, "unknown_command") ||
						    !strcmp(v, "unknown_op"));
					refused++;
				}
			}
			/* and deleted */
			memcpy(buf, goods[i].wire, pos);
			memcpy(buf + pos, goods[i].wire + pos + 1, n - pos - 1);
			const char *v = verdict(buf, n - 1);
			assert_true(!strcmp(v, "ok") || !strcmp(v, "bad_request") || !strcmp(v, "unknown_command") ||
				    !strcmp(v, "unknown_op"));
		}
	}
	/* both outcomes happen: the mutations reach past the JSON syntax */
	assert_true(accepted > 0 && refused > accepted);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_kind),
		cmocka_unit_test(test_every_prefix),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_unknown_verb),
		cmocka_unit_test(test_bad_numbers),
		cmocka_unit_test(test_bad_line),
		cmocka_unit_test(test_embedded_nul),
		cmocka_unit_test(test_missing_fields),
		cmocka_unit_test(test_not_one_object),
		cmocka_unit_test(test_check_order),
		cmocka_unit_test(test_deep_nesting),
		cmocka_unit_test(test_size_limit),
		cmocka_unit_test(test_range_limits),
		cmocka_unit_test(test_why_format),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_docs_list_reasons),
		cmocka_unit_test(test_mutations),
	};
	return cmocka_run_group_tests_name("cp_op_parse", tests, NULL, NULL);
}

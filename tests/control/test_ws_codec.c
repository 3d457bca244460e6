/* test_ws_codec.c - unit tests for control/proto/cp_ws_codec.c.
 *
 * 1. RFC 6455 section 5.7 example frames (as received, and as encoded by
 *    the server side), the 4.2.2 Sec-WebSocket-Accept example.
 * 2. One frame per bad-frame class with its reason and close code; every
 *    prefix of each header: incomplete or the same reason; headers parsed
 *    ending at a PROT_NONE page.
 * 3. The receive state machine: fragmented messages, interleaved control
 *    frames, limits at and one past, close payloads and codes 0..65535,
 *    text and UTF-8, frames after close; the same stream fed whole, byte by
 *    byte and in every two-piece split gives the same events.
 * 4. Unmasking against a byte-wise reference at every offset and alignment,
 *    UTF-8 vectors split at every position, encoders, reason names.
 * 5. The client role: server frames (unmasked) accepted and masked ones
 *    refused, whole frames delivered in place with the same checks and the
 *    same events as when they arrive in pieces; client frames encoded
 *    (masked) and read back by the server side. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cp_ws_codec.h"
#include "doc_check.h"
#include "guard_buf.h"

static const uint8_t mkey[4] = { 0x37, 0xfa, 0x21, 0x3d }; /* RFC 6455 5.7 */

/* Build a client frame. b0 = FIN/RSV/opcode byte; lenform 0 = minimal,
 * 16 or 64 forces that form; masked false leaves MASK clear. */
static size_t mk(uint8_t *out, uint8_t b0, bool masked, int lenform, const void *pl, size_t n)
{
	size_t o = 0;
	out[o++] = b0;
	uint8_t mb = masked ? 0x80 : 0;
	if (lenform == 0)
		lenform = n < 126 ? 7 : n < 65536 ? 16 : 64;
	if (lenform == 7) {
		out[o++] = mb | (uint8_t)n;
	} else if (lenform == 16) {
		out[o++] = mb | 126;
		out[o++] = (uint8_t)(n >> 8);
		out[o++] = (uint8_t)n;
	} else {
		out[o++] = mb | 127;
		for (int i = 0; i < 8; i++)
			out[o++] = (uint8_t)((uint64_t)n >> (56 - 8 * i));
	}
	if (masked) {
		memcpy(out + o, mkey, 4);
		o += 4;
	}
	for (size_t i = 0; i < n; i++)
		out[o + i] = ((const uint8_t *)pl)[i] ^ (masked ? mkey[i & 3] : 0);
	return o + n;
}

/* ---- recorded feeds ------------------------------------------------------- */

struct rec {
	int n;
	enum cp_ws_event_kind kind[64];
	uint8_t opcode[64];
	uint16_t code[64];
	size_t len[64];
	uint8_t data[64][256]; /* first bytes of each event */
	int err;               /* final -reason, or 0 */
	size_t consumed;
};

/* Feed buf in pieces of at most `step` bytes (0 = whole), recording every
 * event, stopping at the first error. */
static void feed(const struct cp_ws_rx_cfg *cfg, const uint8_t *buf, size_t len, size_t step,
		 struct rec *r)
{
	struct cp_ws_rx rx;
	memset(r, 0, sizeof(*r));
	cp_ws_rx_init(&rx, cfg);
	size_t off = 0;
	while (off < len) {
		size_t piece = step && len - off > step ? step : len - off;
		/* the piece goes at the guard page: reading past it faults */
		const uint8_t *p = guard_place(buf + off, piece);
		size_t pos = 0;
		while (pos < piece) {
			struct cp_ws_event ev;
			ssize_t n = cp_ws_rx_feed(&rx, p + pos, piece - pos, &ev);
			if (n < 0) {
				r->err = (int)-n;
				r->consumed = off + pos;
				cp_ws_rx_fini(&rx);
				return;
			}
			assert_true(n > 0);
			assert_true((size_t)n <= piece - pos);
			pos += (size_t)n;
			if (ev.kind != CP_WS_EV_NONE) {
				assert_true(r->n < 64);
				r->kind[r->n] = ev.kind;
				r->opcode[r->n] = ev.opcode;
				r->code[r->n] = ev.close_code;
				r->len[r->n] = ev.len;
				if (ev.len)
					memcpy(r->data[r->n], ev.data, ev.len < 256 ? ev.len : 256);
				r->n++;
			} else {
				assert_int_equal(pos, piece); /* NONE only when all is used */
			}
		}
		off += piece;
	}
	r->consumed = off;
	/* a zero-length feed is a no-op */
	struct cp_ws_event ev;
	ssize_t z = cp_ws_rx_feed(&rx, NULL, 0, &ev);
	assert_int_equal(z, 0);
	assert_int_equal(ev.kind, CP_WS_EV_NONE);
	cp_ws_rx_fini(&rx);
}

static void rec_equal(const struct rec *a, const struct rec *b)
{
	assert_int_equal(a->err, b->err);
	assert_int_equal(a->n, b->n);
	for (int i = 0; i < a->n; i++) {
		assert_int_equal(a->kind[i], b->kind[i]);
		assert_int_equal(a->opcode[i], b->opcode[i]);
		assert_int_equal(a->code[i], b->code[i]);
		assert_int_equal(a->len[i], b->len[i]);
		size_t l = a->len[i] < 256 ? a->len[i] : 256;
		assert_memory_equal(a->data[i], b->data[i], l);
	}
}

/* The same stream whole, byte by byte and split at every position must
 * give the same events and the same verdict. */
static void feed_all_ways(const struct cp_ws_rx_cfg *cfg, const uint8_t *buf, size_t len,
			  struct rec *whole)
{
	static struct rec other;
	feed(cfg, buf, len, 0, whole);
	feed(cfg, buf, len, 1, &other);
	rec_equal(whole, &other);
	for (size_t s = 2; s < len && s < 300; s++) {
		feed(cfg, buf, len, s, &other);
		rec_equal(whole, &other);
	}
}

static const struct cp_ws_rx_cfg cfg_bin = { .max_message = 1 << 20, .accept_text = false };
static const struct cp_ws_rx_cfg cfg_text = { .max_message = 1 << 20, .accept_text = true };

/* ---- 1. RFC 6455 5.7 ------------------------------------------------------ */

static void test_rfc_examples_rx(void **state)
{
	static struct rec r;
	/* A single-frame unmasked text message: a server must refuse it */
	static const uint8_t unmasked[] = { 0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f };
	feed_all_ways(&cfg_text, unmasked, sizeof(unmasked), &r);
	assert_int_equal(r.err, CP_WS_R_UNMASKED);
	assert_int_equal(cp_ws_reason_close_code(r.err), 1002);

	/* A single-frame masked text message "Hello" */
	static const uint8_t masked[] = { 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
					  0x7f, 0x9f, 0x4d, 0x51, 0x58 };
	feed_all_ways(&cfg_text, masked, sizeof(masked), &r);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.kind[0], CP_WS_EV_MESSAGE);
	assert_int_equal(r.opcode[0], CP_WS_OP_TEXT);
	assert_int_equal(r.len[0], 5);
	assert_memory_equal(r.data[0], "Hello", 5);
	/* fanogate's default: text refused with 1003 */
	feed_all_ways(&cfg_bin, masked, sizeof(masked), &r);
	assert_int_equal(r.err, CP_WS_R_TEXT_REFUSED);
	assert_int_equal(cp_ws_reason_close_code(r.err), 1003);

	/* A fragmented unmasked text message: refused at the first frame */
	static const uint8_t frag[] = { 0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f };
	feed_all_ways(&cfg_text, frag, sizeof(frag), &r);
	assert_int_equal(r.err, CP_WS_R_UNMASKED);
	assert_int_equal(r.consumed, 0);

	/* The same fragmented message masked: one "Hello" message */
	uint8_t b[64];
	size_t o = mk(b, 0x01, true, 0, "Hel", 3);
	o += mk(b + o, 0x80, true, 0, "lo", 2);
	feed_all_ways(&cfg_text, b, o, &r);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.len[0], 5);
	assert_memory_equal(r.data[0], "Hello", 5);

	/* Unmasked ping refused; masked pong "Hello" (5.7's masked pong) */
	static const uint8_t ping[] = { 0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f };
	feed_all_ways(&cfg_bin, ping, sizeof(ping), &r);
	assert_int_equal(r.err, CP_WS_R_UNMASKED);
	static const uint8_t pong[] = { 0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d,
					0x7f, 0x9f, 0x4d, 0x51, 0x58 };
	feed_all_ways(&cfg_bin, pong, sizeof(pong), &r);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.kind[0], CP_WS_EV_PONG);
	assert_memory_equal(r.data[0], "Hello", 5);

	/* 256 bytes and 64 KiB binary messages in a single masked frame */
	static uint8_t big[65536 + 32], pl[65536];
	for (size_t i = 0; i < sizeof(pl); i++)
		pl[i] = (uint8_t)(i * 7 + 3);
	for (size_t k = 0; k < 2; k++) {
		size_t n = k ? 65536 : 256;
		o = mk(big, 0x82, true, 0, pl, n);
		assert_int_equal(big[1] & 0x7f, k ? 127 : 126);
		feed(&cfg_bin, big, o, 0, &r);
		assert_int_equal(r.err, 0);
		assert_int_equal(r.n, 1);
		assert_int_equal(r.len[0], n);
		assert_memory_equal(r.data[0], pl, 256);
	}
}

static void test_rfc_examples_tx(void **state)
{
	uint8_t out[80000];
	static const uint8_t hello[] = { 0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f };
	assert_int_equal(cp_ws_frame_encode(CP_WS_OP_TEXT, "Hello", 5, out, sizeof(out)), 7);
	assert_memory_equal(out, hello, 7);
	static const uint8_t ping[] = { 0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f };
	assert_int_equal(cp_ws_frame_encode(CP_WS_OP_PING, "Hello", 5, out, sizeof(out)), 7);
	assert_memory_equal(out, ping, 7);
	static const uint8_t h256[] = { 0x82, 0x7e, 0x01, 0x00 };
	assert_int_equal(cp_ws_hdr_encode(CP_WS_OP_BINARY, 256, out, sizeof(out)), 4);
	assert_memory_equal(out, h256, 4);
	static const uint8_t h64k[] = { 0x82, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0 };
	assert_int_equal(cp_ws_hdr_encode(CP_WS_OP_BINARY, 65536, out, sizeof(out)), 10);
	assert_memory_equal(out, h64k, 10);
}

static void test_accept_key(void **state)
{
	char out[CP_WS_ACCEPT_LEN + 1];
	const char *key = "dGhlIHNhbXBsZSBub25jZQ==";
	assert_int_equal(cp_ws_accept_key(key, strlen(key), out), 0);
	assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	/* a second, independently known pair (RFC 6455 1.3 uses the first) */
	key = "x3JJHMbDL1EzLkh9GBhXDw==";
	assert_int_equal(cp_ws_accept_key(key, strlen(key), out), 0);
	assert_string_equal(out, "HSmrc0sMlYUkAGmm5OPpG2HaGWk=");
}

/* ---- 2. bad frames ---------------------------------------------------------- */

struct badf {
	uint8_t b[16];
	size_t n;
	int reason;
	uint16_t close;
};

static const struct badf badfs[] = {
	{ { 0xc2, 0x80, 1, 2, 3, 4 }, 6, CP_WS_R_RSV_BITS, 1002 },       /* RSV1 */
	{ { 0xa2, 0x80, 1, 2, 3, 4 }, 6, CP_WS_R_RSV_BITS, 1002 },       /* RSV2 */
	{ { 0x92, 0x80, 1, 2, 3, 4 }, 6, CP_WS_R_RSV_BITS, 1002 },       /* RSV3 */
	{ { 0xf9, 0x80, 1, 2, 3, 4 }, 6, CP_WS_R_RSV_BITS, 1002 },       /* ping with all RSV */
	{ { 0x83, 0x80, 1, 2, 3, 4 }, 6, CP_WS_R_BAD_OPCODE, 1002 },
	{ { 0x87, 0x80, 1, 2, 3, 4 }, 6, CP_WS_R_BAD_OPCODE, 1002 },
	{ { 0x8b, 0x80, 1, 2, 3, 4 }, 6, CP_WS_R_BAD_OPCODE, 1002 },
	{ { 0x8f, 0x80, 1, 2, 3, 4 }, 6, CP_WS_R_BAD_OPCODE, 1002 },
	{ { 0x82, 0x00 }, 2, CP_WS_R_UNMASKED, 1002 },
	{ { 0x88, 0x02, 0x03, 0xe8 }, 4, CP_WS_R_UNMASKED, 1002 },
	{ { 0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4 }, 14, CP_WS_R_LENGTH_63BIT, 1002 },
	{ { 0x82, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4 }, 14, CP_WS_R_LENGTH_63BIT, 1002 },
	{ { 0x82, 0xfe, 0x00, 0x7d, 1, 2, 3, 4 }, 8, CP_WS_R_LENGTH_NOT_MINIMAL, 1002 },
	{ { 0x82, 0xfe, 0x00, 0x00, 1, 2, 3, 4 }, 8, CP_WS_R_LENGTH_NOT_MINIMAL, 1002 },
	{ { 0x82, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4 }, 14, CP_WS_R_LENGTH_NOT_MINIMAL, 1002 },
	{ { 0x82, 0xff, 0, 0, 0, 0, 0, 0, 0, 5, 1, 2, 3, 4 }, 14, CP_WS_R_LENGTH_NOT_MINIMAL, 1002 },
	{ { 0x09, 0x80, 1, 2, 3, 4 }, 6, CP_WS_R_CONTROL_FRAGMENTED, 1002 },
	{ { 0x08, 0x80, 1, 2, 3, 4 }, 6, CP_WS_R_CONTROL_FRAGMENTED, 1002 },
	{ { 0x0a, 0x80, 1, 2, 3, 4 }, 6, CP_WS_R_CONTROL_FRAGMENTED, 1002 },
	{ { 0x89, 0xfe, 0x00, 0x7e, 1, 2, 3, 4 }, 8, CP_WS_R_CONTROL_TOO_LONG, 1002 },
	{ { 0x88, 0xfe, 0x01, 0x00, 1, 2, 3, 4 }, 8, CP_WS_R_CONTROL_TOO_LONG, 1002 },
	{ { 0x8a, 0xff, 0, 0, 0, 0, 0, 1, 0, 0, 1, 2, 3, 4 }, 14, CP_WS_R_CONTROL_TOO_LONG, 1002 },
};

static void test_bad_headers(void **state)
{
	for (size_t i = 0; i < FG_ARRAY_LEN(badfs); i++) {
		const struct badf *f = &badfs[i];
		struct cp_ws_hdr h;
		memset(&h, 0x5a, sizeof(h));
		const uint8_t *p = guard_place(f->b, f->n);
		ssize_t got = cp_ws_hdr_parse(p, f->n, &h);
		if (got != -f->reason)
			fail_msg("badf %zu: %s", i, cp_ws_reason_name((int)got));
		assert_int_equal(((uint8_t *)&h)[0], 0x5a);
		assert_int_equal(cp_ws_reason_close_code(f->reason), f->close);
		bool seen = false;
		for (size_t k = 0; k < f->n; k++) {
			p = guard_place(f->b, k);
			got = cp_ws_hdr_parse(p, k, &h);
			if (got == -f->reason)
				seen = true;
			else if (got != -CP_WS_R_INCOMPLETE || seen)
				fail_msg("badf %zu prefix %zu: %s", i, k, cp_ws_reason_name((int)got));
		}
		/* and through the state machine, in every split */
		static struct rec r;
		feed_all_ways(&cfg_bin, f->b, f->n, &r);
		assert_int_equal(r.err, f->reason);
		assert_int_equal(r.n, 0);
	}
}

static void test_good_headers_prefixes(void **state)
{
	/* every length form, every opcode: every strict prefix incomplete */
	static const uint8_t ops[] = { 0x0, 0x1, 0x2, 0x8, 0x9, 0xa };
	static const uint64_t lens[] = { 0, 1, 125, 126, 127, 65535, 65536, 1ull << 32,
					 (1ull << 63) - 1 };
	for (size_t o = 0; o < FG_ARRAY_LEN(ops); o++) {
		for (size_t l = 0; l < FG_ARRAY_LEN(lens); l++) {
			bool control = ops[o] & 8;
			if (control && lens[l] > 125)
				continue;
			uint8_t b[14];
			size_t n = 0;
			b[n++] = (uint8_t)((ops[o] == 0 ? 0x00 : 0x80) | ops[o]);
			if (lens[l] < 126) {
				b[n++] = 0x80 | (uint8_t)lens[l];
			} else if (lens[l] < 65536) {
				b[n++] = 0x80 | 126;
				b[n++] = (uint8_t)(lens[l] >> 8);
				b[n++] = (uint8_t)lens[l];
			} else {
				b[n++] = 0x80 | 127;
				for (int i = 0; i < 8; i++)
					b[n++] = (uint8_t)(lens[l] >> (56 - 8 * i));
			}
			memcpy(b + n, mkey, 4);
			n += 4;
			struct cp_ws_hdr h;
			const uint8_t *p = guard_place(b, n);
			assert_int_equal(cp_ws_hdr_parse(p, n, &h), (ssize_t)n);
			assert_int_equal(h.opcode, ops[o]);
			assert_int_equal(h.fin, ops[o] != 0);
			assert_true(h.masked);
			assert_int_equal(h.hdr_len, n);
			assert_true(h.payload_len == lens[l]);
			assert_memory_equal(h.mask, mkey, 4);
			for (size_t k = 0; k < n; k++) {
				p = guard_place(b, k);
				assert_int_equal(cp_ws_hdr_parse(p, k, &h), -CP_WS_R_INCOMPLETE);
			}
		}
	}
}

/* ---- 3. state machine --------------------------------------------------------- */

static void test_fragmented_with_controls(void **state)
{
	static uint8_t b[4096];
	static struct rec r;
	size_t o = 0;
	o += mk(b + o, 0x02, true, 0, "AB", 2);          /* BINARY, !FIN */
	o += mk(b + o, 0x89, true, 0, "p1", 2);          /* PING between */
	o += mk(b + o, 0x00, true, 0, "", 0);            /* empty CONT */
	o += mk(b + o, 0x8a, true, 0, "", 0);            /* empty PONG */
	o += mk(b + o, 0x00, true, 16, "CDE", 3);        /* CONT, 16-bit form for 3: not minimal */
	feed_all_ways(&cfg_bin, b, o, &r);
	assert_int_equal(r.err, CP_WS_R_LENGTH_NOT_MINIMAL);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.kind[0], CP_WS_EV_PING);
	assert_int_equal(r.len[0], 2);
	assert_memory_equal(r.data[0], "p1", 2);
	assert_int_equal(r.kind[1], CP_WS_EV_PONG);

	o = 0;
	o += mk(b + o, 0x02, true, 0, "AB", 2);
	o += mk(b + o, 0x89, true, 0, "p1", 2);
	o += mk(b + o, 0x00, true, 0, "", 0);
	o += mk(b + o, 0x8a, true, 0, "", 0);
	o += mk(b + o, 0x00, true, 0, "CDE", 3);
	o += mk(b + o, 0x89, true, 0, "p2", 2);
	o += mk(b + o, 0x80, true, 0, "F", 1);           /* CONT, FIN */
	o += mk(b + o, 0x82, true, 0, "xyz", 3);         /* next message */
	o += mk(b + o, 0x82, true, 0, "", 0);            /* empty binary message */
	uint8_t cl[] = { 0x03, 0xe8, 'b', 'y', 'e' };
	o += mk(b + o, 0x88, true, 0, cl, sizeof(cl));   /* close 1000 "bye" */
	feed_all_ways(&cfg_bin, b, o, &r);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.n, 7);
	enum cp_ws_event_kind want[] = { CP_WS_EV_PING, CP_WS_EV_PONG, CP_WS_EV_PING,
					 CP_WS_EV_MESSAGE, CP_WS_EV_MESSAGE, CP_WS_EV_MESSAGE,
					 CP_WS_EV_CLOSE };
	for (int i = 0; i < 7; i++)
		assert_int_equal(r.kind[i], want[i]);
	assert_int_equal(r.len[3], 6);
	assert_memory_equal(r.data[3], "ABCDEF", 6);
	assert_int_equal(r.opcode[3], CP_WS_OP_BINARY);
	assert_int_equal(r.len[4], 3);
	assert_memory_equal(r.data[4], "xyz", 3);
	assert_int_equal(r.len[5], 0);
	assert_int_equal(r.code[6], 1000);
	assert_int_equal(r.len[6], 3);
	assert_memory_equal(r.data[6], "bye", 3);

	/* bytes after the close frame */
	b[o++] = 0x82;
	feed_all_ways(&cfg_bin, b, o, &r);
	assert_int_equal(r.err, CP_WS_R_AFTER_CLOSE);
	assert_int_equal(r.n, 7);
}

/* cp_ws_rx_partial, fed one byte at a time: 0 exactly at the end of a
 * message or of a control frame between messages, above 0 inside one. */
static void test_partial(void **state)
{
	(void)state;
	static uint8_t b[256];
	size_t o = 0, ends[3];
	o += mk(b + o, 0x02, true, 0, "AB", 2); /* BINARY, !FIN */
	o += mk(b + o, 0x89, true, 0, "p", 1);  /* PING inside the message */
	o += mk(b + o, 0x80, true, 0, "C", 1);  /* CONT, FIN */
	ends[0] = o;
	o += mk(b + o, 0x89, true, 0, "q", 1);  /* PING between messages */
	ends[1] = o;
	o += mk(b + o, 0x82, true, 0, "xyz", 3);
	ends[2] = o;
	o += mk(b + o, 0x02, true, 0, "", 0);   /* an empty first fragment */
	struct cp_ws_rx rx;
	cp_ws_rx_init(&rx, &cfg_bin);
	assert_int_equal(cp_ws_rx_partial(&rx), 0);
	for (size_t i = 0; i < o; i++) {
		struct cp_ws_event ev;
		assert_int_equal(cp_ws_rx_feed(&rx, b + i, 1, &ev), 1);
		uint64_t p = cp_ws_rx_partial(&rx);
		bool end = i + 1 == ends[0] || i + 1 == ends[1] || i + 1 == ends[2];
		if (end)
			assert_int_equal(p, 0);
		else
			assert_true(p > 0);
	}
	assert_true(cp_ws_rx_partial(&rx) > 0); /* the empty fragment left a message open */
	cp_ws_rx_fini(&rx);
}

static void test_sequence_errors(void **state)
{
	static uint8_t b[256];
	static struct rec r;
	size_t o;
	/* continuation with no message */
	o = mk(b, 0x80, true, 0, "x", 1);
	feed_all_ways(&cfg_bin, b, o, &r);
	assert_int_equal(r.err, CP_WS_R_UNEXPECTED_CONT);
	/* ... also right after a complete message */
	o = mk(b, 0x82, true, 0, "x", 1);
	o += mk(b + o, 0x00, true, 0, "y", 1);
	feed_all_ways(&cfg_bin, b, o, &r);
	assert_int_equal(r.err, CP_WS_R_UNEXPECTED_CONT);
	assert_int_equal(r.n, 1);
	/* a new data frame inside a fragmented message */
	o = mk(b, 0x02, true, 0, "x", 1);
	o += mk(b + o, 0x82, true, 0, "y", 1);
	feed_all_ways(&cfg_bin, b, o, &r);
	assert_int_equal(r.err, CP_WS_R_EXPECTED_CONT);
	o = mk(b, 0x01, true, 0, "x", 1);
	o += mk(b + o, 0x02, true, 0, "y", 1);
	feed_all_ways(&cfg_text, b, o, &r);
	assert_int_equal(r.err, CP_WS_R_EXPECTED_CONT);
	/* text inside binary refused as text or as sequence: sequence wins */
	o = mk(b, 0x02, true, 0, "x", 1);
	o += mk(b + o, 0x81, true, 0, "y", 1);
	feed_all_ways(&cfg_bin, b, o, &r);
	assert_int_equal(r.err, CP_WS_R_EXPECTED_CONT);
	/* fragmented text refused at its first frame, payload never taken */
	o = mk(b, 0x01, true, 0, "abc", 3);
	feed_all_ways(&cfg_bin, b, o, &r);
	assert_int_equal(r.err, CP_WS_R_TEXT_REFUSED);
	feed(&cfg_bin, b, 6, 0, &r); /* the header alone is enough */
	assert_int_equal(r.err, CP_WS_R_TEXT_REFUSED);
}

static void test_limits(void **state)
{
	static uint8_t b[3000], pl[1100];
	static struct rec r;
	struct cp_ws_rx_cfg c = { .max_message = 1000, .accept_text = false };
	memset(pl, 0x42, sizeof(pl));
	/* exactly the limit in one frame, then one past */
	size_t o = mk(b, 0x82, true, 0, pl, 1000);
	feed(&c, b, o, 0, &r);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.len[0], 1000);
	o = mk(b, 0x82, true, 0, pl, 1001);
	feed_all_ways(&c, b, o, &r);
	assert_int_equal(r.err, CP_WS_R_MESSAGE_TOO_BIG);
	assert_int_equal(cp_ws_reason_close_code(r.err), 1009);
	feed(&c, b, 8, 0, &r); /* refused at its header */
	assert_int_equal(r.err, CP_WS_R_MESSAGE_TOO_BIG);
	/* across fragments: 600 + 400 fits, 600 + 401 does not */
	o = mk(b, 0x02, true, 0, pl, 600);
	o += mk(b + o, 0x80, true, 0, pl, 400);
	feed(&c, b, o, 0, &r);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.len[0], 1000);
	o = mk(b, 0x02, true, 0, pl, 600);
	o += mk(b + o, 0x80, true, 0, pl, 401);
	feed(&c, b, o, 7, &r);
	assert_int_equal(r.err, CP_WS_R_MESSAGE_TOO_BIG);
	/* a 63-bit length is refused by its header, no allocation attempted */
	uint8_t huge[] = { 0x82, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4 };
	feed(&cfg_bin, huge, sizeof(huge), 0, &r);
	assert_int_equal(r.err, CP_WS_R_MESSAGE_TOO_BIG);
	/* the limit counts the message, not the frame: a control frame in
	 * between does not count */
	o = mk(b, 0x02, true, 0, pl, 999);
	o += mk(b + o, 0x89, true, 0, pl, 125);
	o += mk(b + o, 0x80, true, 0, pl, 1);
	feed(&c, b, o, 0, &r);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.len[0], 125);
	assert_int_equal(r.len[1], 1000);
	/* control payload 125 fine (above), 126 refused */
	o = mk(b, 0x89, true, 16, pl, 126);
	feed(&cfg_bin, b, o, 0, &r);
	assert_int_equal(r.err, CP_WS_R_CONTROL_TOO_LONG);
	/* max_message 0: only empty messages */
	c.max_message = 0;
	o = mk(b, 0x82, true, 0, "", 0);
	o += mk(b + o, 0x82, true, 0, "x", 1);
	feed(&c, b, o, 0, &r);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.err, CP_WS_R_MESSAGE_TOO_BIG);
}

static void test_buffer_shrinks(void **state)
{
	/* a 200 KiB message grows the buffer; the next message frees it */
	static uint8_t b[210000], pl[200000];
	struct cp_ws_rx rx;
	struct cp_ws_event ev;
	cp_ws_rx_init(&rx, &cfg_bin);
	size_t o = mk(b, 0x82, true, 0, pl, sizeof(pl));
	assert_int_equal(cp_ws_rx_feed(&rx, b, o, &ev), (ssize_t)o);
	assert_int_equal(ev.kind, CP_WS_EV_MESSAGE);
	assert_true(rx.msg_cap >= sizeof(pl));
	o = mk(b, 0x82, true, 0, "abc", 3);
	assert_int_equal(cp_ws_rx_feed(&rx, b, o, &ev), (ssize_t)o);
	assert_int_equal(ev.len, 3);
	assert_memory_equal(ev.data, "abc", 3);
	assert_true(rx.msg_cap <= CP_WS_RX_KEEP);
	/* a 64 KiB buffer is kept */
	o = mk(b, 0x82, true, 0, pl, CP_WS_RX_KEEP);
	assert_int_equal(cp_ws_rx_feed(&rx, b, o, &ev), (ssize_t)o);
	uint8_t *kept = rx.msg;
	o = mk(b, 0x82, true, 0, "abc", 3);
	assert_int_equal(cp_ws_rx_feed(&rx, b, o, &ev), (ssize_t)o);
	assert_ptr_equal(rx.msg, kept);
	cp_ws_rx_fini(&rx);
	assert_null(rx.msg);
}

static bool code_valid_ref(unsigned c)
{
	if (c >= 1000 && c <= 1003)
		return true;
	if (c >= 1007 && c <= 1011)
		return true;
	return c >= 3000 && c <= 4999;
}

static void test_close_codes(void **state)
{
	uint8_t b[64];
	struct rec *r = malloc(sizeof(*r));
	for (unsigned c = 0; c < 65536; c++) {
		assert_int_equal(cp_ws_close_code_is_valid(c), code_valid_ref(c));
		if (!(c < 1100 || (c >= 2990 && c <= 3010) || (c >= 4990 && c <= 5010) || c > 65530))
			continue;
		uint8_t pl[2] = { (uint8_t)(c >> 8), (uint8_t)c };
		size_t o = mk(b, 0x88, true, 0, pl, 2);
		feed(&cfg_bin, b, o, 0, r);
		if (code_valid_ref(c)) {
			assert_int_equal(r->err, 0);
			assert_int_equal(r->kind[0], CP_WS_EV_CLOSE);
			assert_int_equal(r->code[0], c);
		} else {
			assert_int_equal(r->err, CP_WS_R_CLOSE_CODE);
			assert_int_equal(cp_ws_reason_close_code(r->err), 1002);
		}
	}
	/* the classes the brief names */
	static const unsigned invalid[] = { 0, 999, 1004, 1005, 1006, 1012, 1013, 1014, 1015,
					    1016, 2000, 2999, 5000, 65535 };
	for (size_t i = 0; i < FG_ARRAY_LEN(invalid); i++)
		assert_false(cp_ws_close_code_is_valid(invalid[i]));
	/* empty close: 1005 reported */
	size_t o = mk(b, 0x88, true, 0, "", 0);
	feed(&cfg_bin, b, o, 0, r);
	assert_int_equal(r->err, 0);
	assert_int_equal(r->code[0], 1005);
	assert_int_equal(r->len[0], 0);
	/* 1-byte close payload */
	o = mk(b, 0x88, true, 0, "\x03", 1);
	feed(&cfg_bin, b, o, 0, r);
	assert_int_equal(r->err, CP_WS_R_CLOSE_PAYLOAD);
	assert_int_equal(cp_ws_reason_close_code(r->err), 1002);
	/* reason: valid UTF-8, invalid UTF-8, 123 bytes */
	uint8_t pl[125] = { 0x03, 0xe8, 0xce, 0xba, 0xe1, 0xbd, 0xb9 };
	o = mk(b, 0x88, true, 0, pl, 7);
	feed(&cfg_bin, b, o, 0, r);
	assert_int_equal(r->err, 0);
	assert_int_equal(r->len[0], 5);
	pl[4] = 0xc0;
	o = mk(b, 0x88, true, 0, pl, 7);
	feed(&cfg_bin, b, o, 0, r);
	assert_int_equal(r->err, CP_WS_R_CLOSE_REASON_UTF8);
	assert_int_equal(cp_ws_reason_close_code(r->err), 1007);
	/* truncated code point at the end of the reason */
	o = mk(b, 0x88, true, 0, pl, 5);
	pl[4] = 0xce;
	o = mk(b, 0x88, true, 0, pl, 5);
	feed(&cfg_bin, b, o, 0, r);
	assert_int_equal(r->err, CP_WS_R_CLOSE_REASON_UTF8);
	static uint8_t bb[200];
	memset(pl + 2, 'r', 123);
	o = mk(bb, 0x88, true, 0, pl, 125);
	feed(&cfg_bin, bb, o, 0, r);
	assert_int_equal(r->err, 0);
	assert_int_equal(r->len[0], 123);
	/* direct parser: too long */
	uint16_t code;
	const uint8_t *reason;
	size_t rl;
	uint8_t p126[126] = { 0x03, 0xe8 };
	assert_int_equal(cp_ws_close_parse(p126, 126, &code, &reason, &rl), -CP_WS_R_CONTROL_TOO_LONG);
	free(r);
}

static void test_text(void **state)
{
	static uint8_t b[512];
	static struct rec r;
	/* "κόσμε" split inside a code point across fragments, with a ping */
	static const uint8_t kosme[] = { 0xce, 0xba, 0xe1, 0xbd, 0xb9, 0xcf, 0x83, 0xce, 0xbc, 0xce, 0xb5 };
	size_t o = mk(b, 0x01, true, 0, kosme, 3);
	o += mk(b + o, 0x89, true, 0, "", 0);
	o += mk(b + o, 0x80, true, 0, kosme + 3, sizeof(kosme) - 3);
	feed_all_ways(&cfg_text, b, o, &r);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.opcode[1], CP_WS_OP_TEXT);
	assert_memory_equal(r.data[1], kosme, sizeof(kosme));
	/* invalid in the first fragment: refused before the message ends */
	static const uint8_t bad[] = { 'a', 0xed, 0xa0, 0x80, 'b' };
	o = mk(b, 0x01, true, 0, bad, sizeof(bad));
	o += mk(b + o, 0x80, true, 0, "z", 1);
	feed_all_ways(&cfg_text, b, o, &r);
	assert_int_equal(r.err, CP_WS_R_BAD_UTF8);
	assert_int_equal(cp_ws_reason_close_code(r.err), 1007);
	assert_true(r.consumed <= 6 + sizeof(bad));
	/* truncated code point at the end of the message */
	o = mk(b, 0x81, true, 0, kosme, 4);
	feed_all_ways(&cfg_text, b, o, &r);
	assert_int_equal(r.err, CP_WS_R_BAD_UTF8);
	/* ... but fine when the continuation completes it */
	o = mk(b, 0x01, true, 0, kosme, 4);
	o += mk(b + o, 0x80, true, 0, kosme + 4, 1);
	feed_all_ways(&cfg_text, b, o, &r);
	assert_int_equal(r.err, 0);
	/* binary messages are never UTF-8 checked */
	o = mk(b, 0x82, true, 0, bad, sizeof(bad));
	feed_all_ways(&cfg_text, b, o, &r);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.opcode[0], CP_WS_OP_BINARY);
}

/* ---- 4. primitives -------------------------------------------------------- */

static void test_unmask(void **state)
{
	uint8_t ref[300], buf[320];
	const uint8_t key[4] = { 0x01, 0x80, 0xfe, 0x5a };
	for (size_t n = 0; n <= 260; n += (n < 70 ? 1 : 19)) {
		for (unsigned off = 0; off < 8; off++) {
			for (size_t al = 0; al < 8; al++) {
				for (size_t i = 0; i < n; i++)
					ref[i] = buf[al + i] = (uint8_t)(i * 31 + n);
				buf[al + n] = 0xee;
				for (size_t i = 0; i < n; i++)
					ref[i] ^= key[(off + i) & 3];
				cp_ws_unmask(buf + al, n, key, off);
				assert_memory_equal(buf + al, ref, n);
				assert_int_equal(buf[al + n], 0xee);
			}
		}
	}
	/* in pieces: same as whole */
	for (size_t i = 0; i < 200; i++)
		ref[i] = buf[i] = (uint8_t)i;
	cp_ws_unmask(ref, 200, key, 0);
	cp_ws_unmask(buf, 3, key, 0);
	cp_ws_unmask(buf + 3, 50, key, 3);
	cp_ws_unmask(buf + 53, 147, key, 53);
	assert_memory_equal(buf, ref, 200);
	/* a 64-bit offset */
	for (size_t i = 0; i < 16; i++)
		ref[i] = buf[i] = 0;
	cp_ws_unmask(buf, 16, key, (1ull << 40) + 2);
	for (size_t i = 0; i < 16; i++)
		assert_int_equal(buf[i], key[(2 + i) & 3]);
}

static void test_utf8(void **state)
{
	static const struct {
		const char *s;
		bool ok;
	} v[] = {
		{ "", true },
		{ "plain ascii, long enough for the 8-byte path", true },
		{ "\xc2\x80", true },
		{ "\xdf\xbf", true },
		{ "\xe0\xa0\x80", true },
		{ "\xef\xbf\xbf", true },
		{ "\xed\x9f\xbf", true },
		{ "\xee\x80\x80", true },
		{ "\xf0\x90\x80\x80", true },
		{ "\xf4\x8f\xbf\xbf", true },
		{ "abcdefgh\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5ijklmnop", true },
		{ "\x80", false },
		{ "\xbf", false },
		{ "\xc0\x80", false },
		{ "\xc1\xbf", false },
		{ "\xc2", false },
		{ "\xc2\x7f", false },
		{ "\xc2\xc0", false },
		{ "\xe0\x80\x80", false },
		{ "\xe0\x9f\xbf", false },
		{ "\xed\xa0\x80", false },
		{ "\xed\xbf\xbf", false },
		{ "\xef\xbf", false },
		{ "\xf0\x80\x80\x80", false },
		{ "\xf0\x8f\xbf\xbf", false },
		{ "\xf4\x90\x80\x80", false },
		{ "\xf5\x80\x80\x80", false },
		{ "\xf8\x88\x80\x80\x80", false },
		{ "\xfe", false },
		{ "\xff", false },
		{ "abcdefghijklmnop\xff", false },
	};
	for (size_t i = 0; i < FG_ARRAY_LEN(v); i++) {
		const uint8_t *p = (const uint8_t *)v[i].s;
		size_t n = strlen(v[i].s);
		const uint8_t *g = guard_place(p, n);
		if (cp_utf8_is_valid(g, n) != v[i].ok)
			fail_msg("utf8 vector %zu", i);
		/* split at every position: same verdict */
		for (size_t k = 0; k <= n; k++) {
			uint32_t s = cp_utf8_step(CP_UTF8_ACCEPT, g, k);
			s = cp_utf8_step(s, g + k, n - k);
			assert_int_equal(s == CP_UTF8_ACCEPT, v[i].ok);
		}
	}
	/* every code point encodes to something the validator accepts; every
	 * surrogate encoding is refused */
	for (uint32_t cp = 0; cp <= 0x10ffff; cp += (cp < 0x20000 ? 1 : 61)) {
		uint8_t e[4];
		size_t n;
		if (cp < 0x80) {
			e[0] = (uint8_t)cp;
			n = 1;
		} else if (cp < 0x800) {
			e[0] = (uint8_t)(0xc0 | cp >> 6);
			e[1] = (uint8_t)(0x80 | (cp & 0x3f));
			n = 2;
		} else if (cp < 0x10000) {
			e[0] = (uint8_t)(0xe0 | cp >> 12);
			e[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
			e[2] = (uint8_t)(0x80 | (cp & 0x3f));
			n = 3;
		} else {
			e[0] = (uint8_t)(0xf0 | cp >> 18);
			e[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
			e[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
			e[3] = (uint8_t)(0x80 | (cp & 0x3f));
			n = 4;
		}
		bool surrogate = cp >= 0xd800 && cp <= 0xdfff;
		assert_int_equal(cp_utf8_is_valid(e, n), !surrogate);
	}
	assert_int_equal(cp_utf8_step(CP_UTF8_REJECT, (const uint8_t *)"a", 1), CP_UTF8_REJECT);
}

static void test_encode(void **state)
{
	uint8_t out[70000];
	static const struct {
		uint64_t len;
		ssize_t hl;
	} m[] = { { 0, 2 }, { 125, 2 }, { 126, 4 }, { 65535, 4 }, { 65536, 10 },
		  { (1ull << 63) - 1, 10 } };
	for (size_t i = 0; i < FG_ARRAY_LEN(m); i++) {
		ssize_t h = cp_ws_hdr_encode(CP_WS_OP_BINARY, m[i].len, out, sizeof(out));
		assert_int_equal(h, m[i].hl);
		assert_int_equal(out[0], 0x82);
		assert_int_equal(out[1] & 0x80, 0); /* servers never mask */
		/* too small a buffer */
		assert_int_equal(cp_ws_hdr_encode(CP_WS_OP_BINARY, m[i].len, out, (size_t)m[i].hl - 1),
				 -CP_WS_R_NOSPACE);
	}
	assert_int_equal(cp_ws_hdr_encode(CP_WS_OP_BINARY, 1ull << 63, out, sizeof(out)),
			 -CP_WS_R_UNENCODABLE);
	assert_int_equal(cp_ws_hdr_encode(CP_WS_OP_PING, 126, out, sizeof(out)), -CP_WS_R_UNENCODABLE);
	assert_int_equal(cp_ws_hdr_encode(CP_WS_OP_PONG, 125, out, sizeof(out)), 2);
	assert_int_equal(cp_ws_hdr_encode(3, 1, out, sizeof(out)), -CP_WS_R_UNENCODABLE);
	assert_int_equal(cp_ws_hdr_encode(0xb, 1, out, sizeof(out)), -CP_WS_R_UNENCODABLE);
	assert_int_equal(cp_ws_frame_encode(CP_WS_OP_BINARY, "abc", 3, out, 4), -CP_WS_R_NOSPACE);
	assert_int_equal(cp_ws_frame_encode(CP_WS_OP_BINARY, "abc", 3, out, 5), 5);

	/* encode, then re-parse as if masked by a client with a zero key */
	static uint8_t pl[66000];
	for (size_t i = 0; i < sizeof(pl); i++)
		pl[i] = (uint8_t)(i ^ (i >> 8));
	static const size_t ls[] = { 0, 1, 125, 126, 65535, 65536 };
	for (size_t i = 0; i < FG_ARRAY_LEN(ls); i++) {
		ssize_t n = cp_ws_frame_encode(CP_WS_OP_BINARY, pl, ls[i], out, sizeof(out));
		assert_true(n > 0);
		size_t hl = (size_t)n - ls[i];
		static uint8_t c[70000];
		memcpy(c, out, hl);
		c[1] |= 0x80;
		memset(c + hl, 0, 4);
		memcpy(c + hl + 4, out + hl, ls[i]);
		struct cp_ws_hdr h;
		assert_int_equal(cp_ws_hdr_parse(c, hl + 4 + ls[i], &h), (ssize_t)(hl + 4));
		assert_true(h.payload_len == ls[i]);
		assert_memory_equal(c + hl + 4, pl, ls[i]);
	}

	/* close frames */
	assert_int_equal(cp_ws_close_encode(1002, "rsv_bits", out, sizeof(out)), 2 + 2 + 8);
	assert_int_equal(out[0], 0x88);
	assert_int_equal(out[1], 10);
	assert_int_equal(out[2], 0x03);
	assert_int_equal(out[3], 0xea);
	assert_memory_equal(out + 4, "rsv_bits", 8);
	assert_int_equal(cp_ws_close_encode(0, NULL, out, sizeof(out)), 2);
	assert_int_equal(out[1], 0);
	assert_int_equal(cp_ws_close_encode(1000, NULL, out, sizeof(out)), 4);
	assert_int_equal(cp_ws_close_encode(1005, "", out, sizeof(out)), -CP_WS_R_UNENCODABLE);
	assert_int_equal(cp_ws_close_encode(1009, "x", out, 4), -CP_WS_R_NOSPACE);
	/* a long reason of 2-byte characters is cut at a character boundary */
	char lng[301];
	for (int i = 0; i < 300; i += 2) {
		lng[i] = (char)0xce;
		lng[i + 1] = (char)0xba;
	}
	lng[300] = 0;
	ssize_t n = cp_ws_close_encode(1008, lng, out, sizeof(out));
	assert_int_equal(n, 2 + 2 + 122);
	uint16_t code;
	const uint8_t *reason;
	size_t rl;
	assert_int_equal(cp_ws_close_parse(out + 2, (size_t)n - 2, &code, &reason, &rl), 0);
	assert_int_equal(code, 1008);
	assert_int_equal(rl, 122);
	/* an ASCII reason is cut at 123 */
	memset(lng, 'a', 300);
	n = cp_ws_close_encode(1008, lng, out, sizeof(out));
	assert_int_equal(n, 2 + 125);
}

static void test_reason_names(void **state)
{
	for (int a = CP_WS_R_INCOMPLETE; a < CP_WS_R__END; a++) {
		const char *na = cp_ws_reason_name(a);
		assert_string_not_equal(na, "unknown");
		assert_string_equal(na, cp_ws_reason_name(-a));
		uint16_t c = cp_ws_reason_close_code(a);
		assert_int_equal(c, cp_ws_reason_close_code(-a));
		if (a == CP_WS_R_INCOMPLETE || a == CP_WS_R_NOSPACE || a == CP_WS_R_UNENCODABLE)
			assert_int_equal(c, 0);
		else
			assert_true(cp_ws_close_code_is_valid(c));
		for (int b = a + 1; b < CP_WS_R__END; b++)
			assert_string_not_equal(na, cp_ws_reason_name(b));
	}
	assert_string_equal(cp_ws_reason_name(0), "ok");
	assert_string_equal(cp_ws_reason_name(7), "unknown");
	assert_int_equal(cp_ws_reason_close_code(7), 1002);
	assert_int_equal(cp_ws_reason_close_code(CP_WS_R_MESSAGE_TOO_BIG), 1009);
	assert_int_equal(cp_ws_reason_close_code(CP_WS_R_TEXT_REFUSED), 1003);
	assert_int_equal(cp_ws_reason_close_code(CP_WS_R_BAD_UTF8), 1007);
}

static void test_reasons_documented(void **state)
{
	char *doc = doc_load();
	if (!doc)
		skip();
	for (int r = CP_WS_R_INCOMPLETE + 1; r < CP_WS_R__END; r++) {
		if (r == CP_WS_R_NOSPACE || r == CP_WS_R_UNENCODABLE)
			continue; /* encoder results, never sent */
		int c = doc_code(doc, cp_ws_reason_name(r));
		if (c != cp_ws_reason_close_code(r))
			fail_msg("docs/websocket.md: %s documented as %d, sent %d", cp_ws_reason_name(r), c,
				 cp_ws_reason_close_code(r));
	}
	free(doc);
}

/* ---- 5. the client role ------------------------------------------------------ */

static const struct cp_ws_rx_cfg cfg_cli = { .max_message = 1 << 20, .client = true };
static const struct cp_ws_rx_cfg cfg_cli_text = { .max_message = 1 << 20, .accept_text = true, .client = true };

static void test_client_rx(void **state)
{
	static struct rec r;
	/* RFC 6455 5.7: the unmasked "Hello" a server sends */
	static const uint8_t hello[] = { 0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f };
	feed_all_ways(&cfg_cli_text, hello, sizeof(hello), &r);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.opcode[0], CP_WS_OP_TEXT);
	assert_memory_equal(r.data[0], "Hello", 5);
	feed_all_ways(&cfg_cli, hello, sizeof(hello), &r);
	assert_int_equal(r.err, CP_WS_R_TEXT_REFUSED);

	/* A masked frame from the server: refused at its second byte */
	static const uint8_t masked[] = { 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
					  0x7f, 0x9f, 0x4d, 0x51, 0x58 };
	feed_all_ways(&cfg_cli_text, masked, sizeof(masked), &r);
	assert_int_equal(r.err, CP_WS_R_MASKED);
	assert_int_equal(r.consumed, 0);
	assert_int_equal(cp_ws_reason_close_code(r.err), 1002);
	assert_string_equal(cp_ws_reason_name(CP_WS_R_MASKED), "masked");
	struct cp_ws_hdr h;
	assert_int_equal(cp_ws_hdr_parse_client(masked, 1, &h), -CP_WS_R_INCOMPLETE);
	assert_int_equal(cp_ws_hdr_parse_client(masked, 2, &h), -CP_WS_R_MASKED);
	/* the header rules other than MASK are the server's */
	static const uint8_t rsv[] = { 0xc2, 0x00 }, op3[] = { 0x83, 0x00 }, long_ping[] = { 0x89, 0x7e, 0, 126 },
			     not_min[] = { 0x82, 0x7e, 0x00, 0x05 };
	assert_int_equal(cp_ws_hdr_parse_client(rsv, 2, &h), -CP_WS_R_RSV_BITS);
	assert_int_equal(cp_ws_hdr_parse_client(op3, 2, &h), -CP_WS_R_BAD_OPCODE);
	assert_int_equal(cp_ws_hdr_parse_client(long_ping, 4, &h), -CP_WS_R_CONTROL_TOO_LONG);
	assert_int_equal(cp_ws_hdr_parse_client(not_min, 4, &h), -CP_WS_R_LENGTH_NOT_MINIMAL);
	/* every prefix of a good 16-bit header is incomplete, the whole is 4 bytes */
	static const uint8_t h16[] = { 0x82, 0x7e, 0x01, 0x00 };
	for (size_t k = 0; k < sizeof(h16); k++)
		assert_int_equal(cp_ws_hdr_parse_client(guard_place(h16, k), k, &h), -CP_WS_R_INCOMPLETE);
	assert_int_equal(cp_ws_hdr_parse_client(guard_place(h16, 4), 4, &h), 4);
	assert_false(h.masked);
	assert_true(h.payload_len == 256);

	/* A fragmented message around a ping, then a close, as a server sends
	 * them (server encoders): whole, byte by byte and in every split */
	uint8_t b[512];
	size_t o = 0;
	b[o++] = 0x02;
	b[o++] = 3;
	memcpy(b + o, "Hel", 3);
	o += 3;
	ssize_t n = cp_ws_frame_encode(CP_WS_OP_PING, "pi", 2, b + o, sizeof(b) - o);
	assert_true(n > 0);
	o += (size_t)n;
	b[o++] = 0x80;
	b[o++] = 2;
	memcpy(b + o, "lo", 2);
	o += 2;
	n = cp_ws_frame_encode(CP_WS_OP_BINARY, "whole", 5, b + o, sizeof(b) - o);
	assert_true(n > 0);
	o += (size_t)n;
	n = cp_ws_close_encode(1001, "bye", b + o, sizeof(b) - o);
	assert_true(n > 0);
	o += (size_t)n;
	feed_all_ways(&cfg_cli, b, o, &r);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.n, 4);
	assert_int_equal(r.kind[0], CP_WS_EV_PING);
	assert_memory_equal(r.data[0], "pi", 2);
	assert_int_equal(r.kind[1], CP_WS_EV_MESSAGE);
	assert_int_equal(r.len[1], 5);
	assert_memory_equal(r.data[1], "Hello", 5);
	assert_int_equal(r.kind[2], CP_WS_EV_MESSAGE);
	assert_memory_equal(r.data[2], "whole", 5);
	assert_int_equal(r.kind[3], CP_WS_EV_CLOSE);
	assert_int_equal(r.code[3], 1001);
	assert_memory_equal(r.data[3], "bye", 3);

	/* a new data frame inside a fragmented message, both in one feed: the
	 * in-place path must not skip the sequence check */
	o = 0;
	b[o++] = 0x02;
	b[o++] = 1;
	b[o++] = 'a';
	b[o++] = 0x82;
	b[o++] = 1;
	b[o++] = 'b';
	feed_all_ways(&cfg_cli, b, o, &r);
	assert_int_equal(r.err, CP_WS_R_EXPECTED_CONT);
	assert_int_equal(r.n, 0);
}

static void test_client_rx_in_place(void **state)
{
	static uint8_t buf[70000], pl[65536];
	static struct rec r;
	for (size_t i = 0; i < sizeof(pl); i++)
		pl[i] = (uint8_t)(i * 13 + 1);
	static const size_t ls[] = { 0, 1, 125, 126, 65535, 65536 };
	for (size_t i = 0; i < FG_ARRAY_LEN(ls); i++) {
		ssize_t n = cp_ws_frame_encode(CP_WS_OP_BINARY, pl, ls[i], buf, sizeof(buf));
		assert_true(n > 0);
		/* whole: delivered where it lies, nothing kept in the rx */
		struct cp_ws_rx rx;
		cp_ws_rx_init(&rx, &cfg_cli);
		const uint8_t *g = guard_place(buf, (size_t)n);
		struct cp_ws_event ev;
		assert_int_equal(cp_ws_rx_feed(&rx, g, (size_t)n, &ev), n);
		assert_int_equal(ev.kind, CP_WS_EV_MESSAGE);
		assert_int_equal(ev.len, ls[i]);
		assert_ptr_equal(ev.data, g + (n - (ssize_t)ls[i]));
		assert_null(rx.msg);
		cp_ws_rx_fini(&rx);
		/* in pieces: reassembled, the same bytes */
		feed_all_ways(&cfg_cli, buf, (size_t)n, &r);
		assert_int_equal(r.err, 0);
		assert_int_equal(r.n, 1);
		assert_int_equal(r.len[0], ls[i]);
		assert_memory_equal(r.data[0], pl, ls[i] < 256 ? ls[i] : 256);
	}

	/* the limits hold on the in-place path: at and one past max_message */
	const struct cp_ws_rx_cfg small = { .max_message = 1000, .client = true };
	ssize_t n = cp_ws_frame_encode(CP_WS_OP_BINARY, pl, 1000, buf, sizeof(buf));
	assert_true(n > 0);
	feed_all_ways(&small, buf, (size_t)n, &r);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.len[0], 1000);
	n = cp_ws_frame_encode(CP_WS_OP_BINARY, pl, 1001, buf, sizeof(buf));
	assert_true(n > 0);
	feed_all_ways(&small, buf, (size_t)n, &r);
	assert_int_equal(r.err, CP_WS_R_MESSAGE_TOO_BIG);
	/* and text: UTF-8 checked whole as in pieces */
	static const uint8_t bad_text[] = { 0x81, 0x03, 'a', 0xc0, 0xaf };
	feed_all_ways(&cfg_cli_text, bad_text, sizeof(bad_text), &r);
	assert_int_equal(r.err, CP_WS_R_BAD_UTF8);
	feed_all_ways(&cfg_cli, bad_text, sizeof(bad_text), &r);
	assert_int_equal(r.err, CP_WS_R_TEXT_REFUSED);
}

static void test_client_encode(void **state)
{
	static uint8_t out[70000], pl[66000];
	static struct rec r;
	/* RFC 6455 5.7: the masked "Hello" a client sends */
	static const uint8_t hello[] = { 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
					 0x7f, 0x9f, 0x4d, 0x51, 0x58 };
	assert_int_equal(cp_ws_client_frame_encode(CP_WS_OP_TEXT, "Hello", 5, mkey, out, sizeof(out)), 11);
	assert_memory_equal(out, hello, sizeof(hello));
	assert_int_equal(cp_ws_client_frame_encode(CP_WS_OP_TEXT, "Hello", 5, mkey, out, 10), -CP_WS_R_NOSPACE);
	assert_int_equal(cp_ws_client_frame_encode(CP_WS_OP_TEXT, "Hello", 5, mkey, out, 5), -CP_WS_R_NOSPACE);
	assert_int_equal(cp_ws_client_frame_encode(CP_WS_OP_PING, pl, 126, mkey, out, sizeof(out)),
			 -CP_WS_R_UNENCODABLE);
	/* every length form, read back by the server side */
	for (size_t i = 0; i < sizeof(pl); i++)
		pl[i] = (uint8_t)(i ^ (i >> 8));
	static const size_t ls[] = { 0, 1, 125, 126, 65535, 65536 };
	for (size_t i = 0; i < FG_ARRAY_LEN(ls); i++) {
		ssize_t n = cp_ws_client_frame_encode(CP_WS_OP_BINARY, pl, ls[i], mkey, out, sizeof(out));
		size_t hl = ls[i] < 126 ? 6 : ls[i] < 65536 ? 8 : 14;
		assert_int_equal(n, (ssize_t)(hl + ls[i]));
		assert_int_equal(cp_ws_client_frame_encode(CP_WS_OP_BINARY, pl, ls[i], mkey, out, (size_t)n - 1),
				 -CP_WS_R_NOSPACE);
		n = cp_ws_client_frame_encode(CP_WS_OP_BINARY, pl, ls[i], mkey, out, sizeof(out));
		struct cp_ws_hdr h;
		assert_int_equal(cp_ws_hdr_parse(out, (size_t)n, &h), (ssize_t)hl);
		assert_true(h.masked);
		assert_memory_equal(h.mask, mkey, 4);
		feed(&cfg_bin, out, (size_t)n, 0, &r);
		assert_int_equal(r.err, 0);
		assert_int_equal(r.n, 1);
		assert_int_equal(r.len[0], ls[i]);
		assert_memory_equal(r.data[0], pl, ls[i] < 256 ? ls[i] : 256);
	}
	/* a close frame, read back with its code and reason */
	ssize_t n = cp_ws_client_close_encode(1000, "done", mkey, out, sizeof(out));
	assert_int_equal(n, 6 + 2 + 4);
	feed(&cfg_bin, out, (size_t)n, 0, &r);
	assert_int_equal(r.err, 0);
	assert_int_equal(r.kind[0], CP_WS_EV_CLOSE);
	assert_int_equal(r.code[0], 1000);
	assert_memory_equal(r.data[0], "done", 4);
	assert_int_equal(cp_ws_client_close_encode(0, NULL, mkey, out, sizeof(out)), 6);
	assert_int_equal(cp_ws_client_close_encode(1006, NULL, mkey, out, sizeof(out)), -CP_WS_R_UNENCODABLE);
}

int main(void)
{
	guard_setup();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc_examples_rx),
		cmocka_unit_test(test_rfc_examples_tx),
		cmocka_unit_test(test_accept_key),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_good_headers_prefixes),
		cmocka_unit_test(test_fragmented_with_controls),
		cmocka_unit_test(test_partial),
		cmocka_unit_test(test_sequence_errors),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_buffer_shrinks),
		cmocka_unit_test(test_close_codes),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_unmask),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_reason_names),
		cmocka_unit_test(test_reasons_documented),
		cmocka_unit_test(test_client_rx),
		cmocka_unit_test(test_client_rx_in_place),
		cmocka_unit_test(test_client_encode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* fuzz_ws.c - libFuzzer target for the RFC 6455 codec
 * (control/proto/cp_ws_codec.c).
 *
 * Input: byte 0 = flags (bit 0 accept_text, bits 1-3 pick max_message,
 * bit 4 the client role: the rest are bytes from a server, unmasked frames,
 * whole ones delivered in place), byte 1 = seed of the split pattern, the
 * rest = bytes from the peer.
 *
 * Properties checked beyond "no crash, no out-of-bounds read, no leak":
 *  1. feeding the stream whole and in the pieces the seed picks gives the
 *     same events (kind, opcode, code, length, contents) and the same final
 *     verdict: the state machine does not depend on how TCP/TLS cut bytes;
 *  2. every call consumes > 0 bytes when given any, and NONE means all used;
 *  3. every event respects the limits: message <= max_message, text valid
 *     UTF-8, control payload <= 125, close code valid or 1005;
 *  4. cp_ws_hdr_parse (cp_ws_hdr_parse_client in the client role) on the
 *     stream start agrees with its prefixes;
 *  5. every delivered message re-encodes as a server frame whose header the
 *     parser reads back (after setting MASK) with the same length;
 *  6. a close frame encoded with a valid code and the stream's first bytes
 *     as reason (when they are UTF-8) parses back to the same code and a
 *     reason that is the longest prefix fitting 123 bytes at a character
 *     boundary. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../control/proto/cp_ws_codec.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_EV 256

struct trace {
	int n;
	int err;
	struct {
		uint8_t kind, opcode;
		uint16_t code;
		size_t len;
		uint64_t hash;
	} ev[MAX_EV];
};

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static void check_event(const struct cp_ws_rx_cfg *cfg, const struct cp_ws_event *ev)
{
	switch (ev->kind) {
	case CP_WS_EV_MESSAGE: {
		FUZZ_CHECK(ev->len <= cfg->max_message);
		FUZZ_CHECK(ev->opcode == CP_WS_OP_BINARY ||
			   (ev->opcode == CP_WS_OP_TEXT && cfg->accept_text));
		if (ev->opcode == CP_WS_OP_TEXT)
			FUZZ_CHECK(cp_utf8_is_valid(ev->data, ev->len));
		static uint8_t out[16];
		ssize_t h = cp_ws_hdr_encode(ev->opcode, ev->len, out, sizeof(out));
		FUZZ_CHECK(h == 2 || h == 4 || h == 10);
		uint8_t c[16];
		memcpy(c, out, (size_t)h);
		c[1] |= 0x80;
		memset(c + h, 0, 4);
		struct cp_ws_hdr hd;
		FUZZ_CHECK(cp_ws_hdr_parse(c, (size_t)h + 4, &hd) == h + 4);
		FUZZ_CHECK(hd.payload_len == ev->len && hd.fin && hd.opcode == ev->opcode);
		break;
	}
	case CP_WS_EV_PING:
	case CP_WS_EV_PONG:
		FUZZ_CHECK(ev->len <= CP_WS_CONTROL_MAX);
		break;
	case CP_WS_EV_CLOSE:
		FUZZ_CHECK(ev->len <= CP_WS_CONTROL_MAX - 2);
		FUZZ_CHECK(cp_ws_close_code_is_valid(ev->close_code) ||
			   (ev->close_code == CP_WS_CLOSE_NO_STATUS && ev->len == 0));
		FUZZ_CHECK(cp_utf8_is_valid(ev->data, ev->len));
		break;
	default:
		FUZZ_CHECK(0);
	}
}

/* Feed in pieces: step 0 = whole; otherwise sizes from an LCG seeded by
 * `seed`, 1..step bytes each. Each piece is copied to its own heap block so
 * ASan catches a read past it. */
static void run(const struct cp_ws_rx_cfg *cfg, const uint8_t *p, size_t n, size_t step,
		uint32_t seed, struct trace *t)
{
	struct cp_ws_rx rx;
	memset(t, 0, sizeof(*t));
	cp_ws_rx_init(&rx, cfg);
	size_t off = 0;
	while (off < n && !t->err) {
		size_t piece = n - off;
		if (step) {
			seed = seed * 1103515245u + 12345u;
			size_t s = 1 + (seed >> 16) % step;
			if (s < piece)
				piece = s;
		}
		uint8_t *copy = malloc(piece);
		memcpy(copy, p + off, piece);
		size_t pos = 0;
		while (pos < piece) {
			struct cp_ws_event ev;
			ssize_t r = cp_ws_rx_feed(&rx, copy + pos, piece - pos, &ev);
			if (r < 0) {
				FUZZ_CHECK(strcmp(cp_ws_reason_name((int)r), "unknown") != 0);
				FUZZ_CHECK(r != -CP_WS_R_INCOMPLETE && r != -CP_WS_R_NOSPACE &&
					   r != -CP_WS_R_UNENCODABLE);
				FUZZ_CHECK(cp_ws_close_code_is_valid(cp_ws_reason_close_code((int)r)));
				t->err = (int)-r;
				break;
			}
			FUZZ_CHECK(r > 0 && (size_t)r <= piece - pos);
			pos += (size_t)r;
			if (ev.kind == CP_WS_EV_NONE) {
				FUZZ_CHECK(pos == piece);
				/* bytes were taken and nothing completed: something is open */
				FUZZ_CHECK(cp_ws_rx_partial(&rx) > 0);
				continue;
			}
			/* a whole message leaves nothing open (the session's deadline
			 * goes back to idle: cp_ws.c ws_deadline) */
			if (ev.kind == CP_WS_EV_MESSAGE)
				FUZZ_CHECK(cp_ws_rx_partial(&rx) == 0);
			check_event(cfg, &ev);
			if (t->n < MAX_EV) {
				t->ev[t->n].kind = (uint8_t)ev.kind;
				t->ev[t->n].opcode = ev.opcode;
				t->ev[t->n].code = ev.close_code;
				t->ev[t->n].len = ev.len;
				t->ev[t->n].hash = fnv(ev.data, ev.len);
			}
			t->n++;
		}
		free(copy);
		off += piece;
	}
	cp_ws_rx_fini(&rx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t maxes[8] = { 0, 1, 125, 126, 1000, 65536, 65537, 1 << 20 };
	if (size < 2)
		return 0;
	struct cp_ws_rx_cfg cfg = { .max_message = maxes[(data[0] >> 1) & 7],
				    .accept_text = data[0] & 1,
				    .client = (data[0] >> 4) & 1 };
	uint32_t seed = data[1];
	const uint8_t *p = data + 2;
	size_t n = size - 2;

	static struct trace a, b;
	run(&cfg, p, n, 0, 0, &a);
	run(&cfg, p, n, 1 + seed % 17, seed, &b);
	FUZZ_CHECK(a.err == b.err && a.n == b.n);
	for (int i = 0; i < a.n && i < MAX_EV; i++)
		FUZZ_CHECK(memcmp(&a.ev[i], &b.ev[i], sizeof(a.ev[i])) == 0);

	/* 6. close encode -> parse round trip */
	char reason[300];
	size_t rl = n < sizeof(reason) - 1 ? n : sizeof(reason) - 1;
	memcpy(reason, p, rl);
	reason[rl] = 0;
	rl = strlen(reason);
	uint16_t code = (uint16_t)(3000 + seed * 7);
	if (cp_utf8_is_valid((const uint8_t *)reason, rl)) {
		uint8_t cf[CP_WS_CONTROL_MAX + 2];
		ssize_t e = cp_ws_close_encode(code, reason, cf, sizeof(cf));
		FUZZ_CHECK(e >= 4 && cf[0] == 0x88 && (size_t)cf[1] + 2 == (size_t)e);
		uint16_t got;
		const uint8_t *gr;
		size_t gl;
		FUZZ_CHECK(cp_ws_close_parse(cf + 2, (size_t)e - 2, &got, &gr, &gl) == 0);
		FUZZ_CHECK(got == code && gl <= rl && gl <= CP_WS_CONTROL_MAX - 2 && memcmp(gr, reason, gl) == 0);
		FUZZ_CHECK(gl == rl || gl > CP_WS_CONTROL_MAX - 2 - 4);
	}

	struct cp_ws_hdr h, h2;
	ssize_t (*parse)(const uint8_t *, size_t, struct cp_ws_hdr *) =
		cfg.client ? cp_ws_hdr_parse_client : cp_ws_hdr_parse;
	ssize_t r = parse(p, n, &h);
	if (r > 0) {
		FUZZ_CHECK((cfg.client ? r >= 2 && r <= 10 : r >= 6 && r <= 14) && (size_t)r <= n &&
			   h.hdr_len == r && h.masked == !cfg.client);
		FUZZ_CHECK(h.payload_len < (1ull << 63));
		FUZZ_CHECK(parse(p, (size_t)r - 1, &h2) == -CP_WS_R_INCOMPLETE);
	} else if (n > 0) {
		ssize_t r2 = parse(p, n - 1, &h2);
		FUZZ_CHECK(r2 == -CP_WS_R_INCOMPLETE || r2 == r);
	}
	return 0;
}

/* cp_ws_codec.c - RFC 6455 framing, server and client side (see cp_ws_codec.h).
 *
 * The receive side consumes bytes as they arrive: header bytes are collected
 * in rx->hdr (at most 14), payload bytes are unmasked straight into the
 * message buffer (data frames) or rx->ctl (control frames), so the caller
 * never has to hold a whole frame. Every check that can be made on a header
 * is made before any of its payload is accepted (fail fast, as RFC 6455 7.1.7
 * asks: "fail the WebSocket connection").
 *
 * Transition table of struct cp_ws_rx (state x input -> action, next):
 *   HEADER,  header incomplete          -> keep bytes,                HEADER
 *   HEADER,  header invalid             -> -reason
 *   HEADER,  CONT and !in_message       -> -unexpected_continuation
 *   HEADER,  TEXT/BINARY and in_message -> -expected_continuation
 *   HEADER,  TEXT and !accept_text      -> -text_refused
 *   HEADER,  message would pass max     -> -message_too_big
 *   HEADER,  header ok                  -> grow buffer,               PAYLOAD
 *   PAYLOAD, bytes                      -> unmask, copy, check UTF-8, PAYLOAD
 *   PAYLOAD, frame complete, data !FIN  ->                            HEADER
 *   PAYLOAD, frame complete, data FIN   -> MESSAGE event,             HEADER
 *   PAYLOAD, frame complete, PING/PONG  -> PING/PONG event,           HEADER
 *   PAYLOAD, frame complete, CLOSE ok   -> CLOSE event,               CLOSED
 *   CLOSED,  any byte                   -> -frame_after_close
 * and in the client role one shortcut of HEADER -> PAYLOAD -> HEADER:
 *   HEADER,  a feed starting with a whole FIN TEXT/BINARY frame, !in_message
 *                                       -> same checks, MESSAGE event
 *                                          pointing into the feed,   HEADER
 */
#include "cp_ws_codec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

enum { RX_HEADER = 0, RX_PAYLOAD, RX_CLOSED };

static inline bool op_is_control(uint8_t op)
{
	return (op & 0x8) != 0;
}

static inline bool op_is_known(uint8_t op)
{
	return op <= CP_WS_OP_BINARY || (op >= CP_WS_OP_CLOSE && op <= CP_WS_OP_PONG);
}

/* One header parser for both roles: a server requires MASK, a client
 * refuses it (5.1); every other rule is the same. */
static inline ssize_t hdr_parse(const uint8_t *b, size_t len, bool client, struct cp_ws_hdr *h)
{
	if (len < 1)
		return -CP_WS_R_INCOMPLETE;
	/* 5.2: RSV1-3 MUST be 0 unless an extension defines them; fanogate
	 * negotiates none. */
	if (b[0] & 0x70)
		return -CP_WS_R_RSV_BITS;
	uint8_t op = b[0] & 0x0f;
	if (!op_is_known(op))
		return -CP_WS_R_BAD_OPCODE;
	bool fin = (b[0] & 0x80) != 0;
	if (len < 2)
		return -CP_WS_R_INCOMPLETE;
	/* 5.1: a server MUST close on an unmasked client frame, a client on
	 * a masked server frame. */
	bool masked = (b[1] & 0x80) != 0;
	if (masked == client)
		return client ? -CP_WS_R_MASKED : -CP_WS_R_UNMASKED;
	uint8_t l7 = b[1] & 0x7f;
	/* 5.5: control frames are never fragmented and carry <= 125 bytes. */
	if (op_is_control(op)) {
		if (!fin)
			return -CP_WS_R_CONTROL_FRAGMENTED;
		if (l7 > CP_WS_CONTROL_MAX)
			return -CP_WS_R_CONTROL_TOO_LONG;
	}
	size_t n = 2;
	uint64_t plen = l7;
	if (l7 == 126) {
		if (len < 4)
			return -CP_WS_R_INCOMPLETE;
		plen = (uint64_t)b[2] << 8 | b[3];
		/* 5.2: "the minimal number of bytes MUST be used" */
		if (plen < 126)
			return -CP_WS_R_LENGTH_NOT_MINIMAL;
		n = 4;
	} else if (l7 == 127) {
		if (len < 10)
			return -CP_WS_R_INCOMPLETE;
		plen = 0;
		for (int i = 0; i < 8; i++)
			plen = plen << 8 | b[2 + i];
		if (plen >> 63)
			return -CP_WS_R_LENGTH_63BIT;
		if (plen < 65536)
			return -CP_WS_R_LENGTH_NOT_MINIMAL;
		n = 10;
	}
	size_t mask_len = masked ? 4 : 0;
	if (len < n + mask_len)
		return -CP_WS_R_INCOMPLETE;
	h->fin = fin;
	h->opcode = op;
	h->masked = masked;
	if (masked)
		memcpy(h->mask, b + n, 4);
	else
		memset(h->mask, 0, 4);
	h->payload_len = plen;
	h->hdr_len = (uint8_t)(n + mask_len);
	return (ssize_t)(n + mask_len);
}

ssize_t cp_ws_hdr_parse(const uint8_t *b, size_t len, struct cp_ws_hdr *h)
{
	return hdr_parse(b, len, false, h);
}

ssize_t cp_ws_hdr_parse_client(const uint8_t *b, size_t len, struct cp_ws_hdr *h)
{
	return hdr_parse(b, len, true, h);
}

/* dst[i] = src[i] ^ key; dst == src is allowed (each chunk is loaded before
 * it is stored). Copying and unmasking in one pass instead of memcpy then
 * cp_ws_unmask: bench_proto measured cp_ws_rx_feed at 0.38x memcpy with two
 * passes.
 *
 * 32 bytes per step as one vector (GCC vector extension; memcpy keeps the
 * loads legal at any alignment). target_clones adds an AVX2 build picked at
 * load time (ifunc), one load, xor and store per step instead of two of
 * each, and the key widened without a byte loop (bench/ws/icount.sh counts
 * it; bench/ws/RESULTS.md). Not under clang or TSan (as core/reduce.c:
 * the ifunc resolver runs before the TSan runtime is up). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(FG_NO_TARGET_CLONES) && \
	!defined(__SANITIZE_THREAD__)
#define CP_UNMASK_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CP_UNMASK_CLONES
#endif
typedef uint8_t cp_v32 __attribute__((vector_size(32)));

static CP_UNMASK_CLONES void unmask_copy(uint8_t *dst, const uint8_t *src, size_t n, const uint8_t mask[4],
					 uint64_t offset)
{
	/* The key in phase with offset, widened without a per-byte loop over
	 * 32 bytes (that loop cost as much as unmasking 1 KiB). */
	uint8_t m[4];
	for (int i = 0; i < 4; i++)
		m[i] = mask[(offset + (uint64_t)i) & 3];
	uint32_t m32;
	memcpy(&m32, m, 4);
	const uint64_t m64 = (uint64_t)m32 << 32 | m32;
	const uint64_t mm[4] = {m64, m64, m64, m64};
	cp_v32 mv;
	memcpy(&mv, mm, sizeof(mv));
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		cp_v32 w;
		memcpy(&w, src + i, sizeof(w));
		w ^= mv;
		memcpy(dst + i, &w, sizeof(w));
	}
	/* i is a multiple of 32 here, so the key is still in phase. */
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, src + i, 8);
		w ^= m64;
		memcpy(dst + i, &w, 8);
	}
	for (; i < n; i++)
		dst[i] = src[i] ^ m[i & 3];
}

void cp_ws_unmask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t offset)
{
	unmask_copy(p, p, n, mask, offset);
}

/* State: 0 = between characters; otherwise need (continuation bytes still
 * expected) << 16 | lowest allowed next byte << 8 | highest. The first-byte
 * cases are RFC 3629 section 4's table, which excludes overlongs (E0 A0..,
 * F0 90..), surrogates (ED 80..9F) and code points above U+10FFFF (F4 80..8F). */
static inline uint32_t utf8_state(uint32_t need, uint32_t lo, uint32_t hi)
{
	return need << 16 | lo << 8 | hi;
}

uint32_t cp_utf8_step(uint32_t s, const uint8_t *p, size_t n)
{
	size_t i = 0;
	if (s == CP_UTF8_REJECT)
		return s;
	while (i < n) {
		if (s == CP_UTF8_ACCEPT) {
			/* ASCII fast path, 8 bytes at a time */
			while (i + 8 <= n) {
				uint64_t w;
				memcpy(&w, p + i, 8);
				if (w & 0x8080808080808080ull)
					break;
				i += 8;
			}
			if (i == n)
				break;
			uint8_t c = p[i++];
			if (c < 0x80)
				continue;
			if (c >= 0xc2 && c <= 0xdf)
				s = utf8_state(1, 0x80, 0xbf);
			else if (c == 0xe0)
				s = utf8_state(2, 0xa0, 0xbf);
			else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef)
				s = utf8_state(2, 0x80, 0xbf);
			else if (c == 0xed)
				s = utf8_state(2, 0x80, 0x9f);
			else if (c == 0xf0)
				s = utf8_state(3, 0x90, 0xbf);
			else if (c >= 0xf1 && c <= 0xf3)
				s = utf8_state(3, 0x80, 0xbf);
			else if (c == 0xf4)
				s = utf8_state(3, 0x80, 0x8f);
			else
				return CP_UTF8_REJECT;
		} else {
			uint8_t c = p[i++];
			uint32_t lo = (s >> 8) & 0xff, hi = s & 0xff, need = s >> 16;
			if (c < lo || c > hi)
				return CP_UTF8_REJECT;
			s = need == 1 ? CP_UTF8_ACCEPT : utf8_state(need - 1, 0x80, 0xbf);
		}
	}
	return s;
}

bool cp_utf8_is_valid(const uint8_t *p, size_t n)
{
	return cp_utf8_step(CP_UTF8_ACCEPT, p, n) == CP_UTF8_ACCEPT;
}

bool cp_ws_close_code_is_valid(unsigned code)
{
	/* 7.4.1/7.4.2: 1004 reserved; 1005, 1006 and 1015 must never be on
	 * the wire; 0-999 unused; 1012-2999 reserved for the protocol;
	 * 3000-3999 registered, 4000-4999 private. */
	return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1011) ||
	       (code >= 3000 && code <= 4999);
}

int cp_ws_close_parse(const uint8_t *p, size_t n, uint16_t *code, const uint8_t **reason,
		      size_t *reason_len)
{
	if (n > CP_WS_CONTROL_MAX)
		return -CP_WS_R_CONTROL_TOO_LONG;
	if (n == 0) {
		*code = CP_WS_CLOSE_NO_STATUS;
		*reason = p;
		*reason_len = 0;
		return 0;
	}
	if (n == 1)
		return -CP_WS_R_CLOSE_PAYLOAD;
	unsigned c = (unsigned)p[0] << 8 | p[1];
	if (!cp_ws_close_code_is_valid(c))
		return -CP_WS_R_CLOSE_CODE;
	/* 5.5.1: the reason is UTF-8; 8.1: invalid UTF-8 fails the connection. */
	if (!cp_utf8_is_valid(p + 2, n - 2))
		return -CP_WS_R_CLOSE_REASON_UTF8;
	*code = (uint16_t)c;
	*reason = p + 2;
	*reason_len = n - 2;
	return 0;
}

void cp_ws_rx_init(struct cp_ws_rx *rx, const struct cp_ws_rx_cfg *cfg)
{
	memset(rx, 0, sizeof(*rx));
	rx->cfg = *cfg;
	rx->state = RX_HEADER;
}

uint64_t cp_ws_rx_partial(const struct cp_ws_rx *rx)
{
	uint64_t n = rx->in_message ? rx->msg_len : 0;
	if (rx->state == RX_PAYLOAD)
		n += 2 + rx->got; /* the frame's header: 2 bytes at least */
	else if (rx->state == RX_HEADER)
		n += rx->hdr_have;
	return n == 0 && rx->in_message ? 1 : n; /* an open message after an empty fragment */
}

void cp_ws_rx_fini(struct cp_ws_rx *rx)
{
	free(rx->msg);
	rx->msg = NULL;
	rx->msg_cap = 0;
	rx->msg_len = 0;
}

/* Make room for `need` message bytes: doubling, capped at max_message. */
static int msg_reserve(struct cp_ws_rx *rx, uint64_t need)
{
	if (need <= rx->msg_cap)
		return 0;
	uint64_t cap = rx->msg_cap ? rx->msg_cap : 4096;
	while (cap < need)
		cap *= 2;
	if (cap > rx->cfg.max_message)
		cap = rx->cfg.max_message;
	if (cap > SIZE_MAX)
		return -CP_WS_R_NO_MEMORY;
	uint8_t *m = realloc(rx->msg, (size_t)cap);
	if (!m)
		return -CP_WS_R_NO_MEMORY;
	rx->msg = m;
	rx->msg_cap = (size_t)cap;
	return 0;
}

/* Message-level checks of a parsed header, before any payload is taken. */
static int frame_begin(struct cp_ws_rx *rx, const struct cp_ws_hdr *h)
{
	if (op_is_control(h->opcode))
		return 0;
	if (h->opcode == CP_WS_OP_CONT) {
		if (!rx->in_message)
			return -CP_WS_R_UNEXPECTED_CONT;
	} else {
		if (rx->in_message)
			return -CP_WS_R_EXPECTED_CONT;
		if (h->opcode == CP_WS_OP_TEXT && !rx->cfg.accept_text)
			return -CP_WS_R_TEXT_REFUSED;
		rx->in_message = true;
		rx->msg_opcode = h->opcode;
		rx->msg_len = 0;
		rx->utf8 = CP_UTF8_ACCEPT;
		/* A buffer grown for one large message is not kept for the
		 * connection's life: idle memory per connection stays at most
		 * CP_WS_RX_KEEP (the fleet's messages are <= 64 KiB, so its
		 * steady state never reallocates). */
		if (rx->msg_cap > CP_WS_RX_KEEP) {
			free(rx->msg);
			rx->msg = NULL;
			rx->msg_cap = 0;
		}
	}
	if (h->payload_len > rx->cfg.max_message - rx->msg_len)
		return -CP_WS_R_MESSAGE_TOO_BIG;
	return msg_reserve(rx, rx->msg_len + h->payload_len);
}

/* Client role: a whole unfragmented data frame that lies in the fed bytes
 * is delivered where it lies (a server frame is not masked, so there is
 * nothing to undo and nothing to copy), after the checks frame_begin and
 * frame_end would make: text refused or not UTF-8, over max_message.
 * The caller has checked !in_message, FIN and TEXT/BINARY. */
static int frame_in_place(const struct cp_ws_rx *rx, const struct cp_ws_hdr *h, const uint8_t *payload,
			  struct cp_ws_event *ev)
{
	size_t n = (size_t)h->payload_len;
	if (h->opcode == CP_WS_OP_TEXT) {
		if (!rx->cfg.accept_text)
			return -CP_WS_R_TEXT_REFUSED;
		if (h->payload_len > rx->cfg.max_message)
			return -CP_WS_R_MESSAGE_TOO_BIG;
		if (!cp_utf8_is_valid(payload, n))
			return -CP_WS_R_BAD_UTF8;
	} else if (h->payload_len > rx->cfg.max_message) {
		return -CP_WS_R_MESSAGE_TOO_BIG;
	}
	*ev = (struct cp_ws_event){ .kind = CP_WS_EV_MESSAGE, .opcode = h->opcode, .data = payload, .len = n };
	return 0;
}

/* Client role, between frames (HEADER, no header bytes kept): when buf
 * starts with a whole unfragmented data frame outside a message, deliver
 * it in place. Returns the bytes taken (header and payload), a -reason
 * (the one the general path would return for the same bytes), or 0 when
 * buf starts otherwise (incomplete, a control frame, a fragment, a frame
 * inside a message): the general path then takes it. */
static ssize_t rx_whole(const struct cp_ws_rx *rx, const uint8_t *buf, size_t len, struct cp_ws_event *ev)
{
	struct cp_ws_hdr h;
	ssize_t hl = hdr_parse(buf, len, true, &h);
	if (hl < 0)
		return hl == -CP_WS_R_INCOMPLETE ? 0 : hl;
	if (!h.fin || rx->in_message || (h.opcode != CP_WS_OP_BINARY && h.opcode != CP_WS_OP_TEXT) ||
	    h.payload_len > len - (size_t)hl)
		return 0;
	int rc = frame_in_place(rx, &h, buf + hl, ev);
	if (rc < 0)
		return rc;
	return hl + (ssize_t)h.payload_len;
}

/* The frame's payload is complete: produce its event, if any. */
static int frame_end(struct cp_ws_rx *rx, struct cp_ws_event *ev)
{
	const struct cp_ws_hdr *h = &rx->cur;
	size_t n = (size_t)h->payload_len;
	switch (h->opcode) {
	case CP_WS_OP_PING:
	case CP_WS_OP_PONG:
		ev->kind = h->opcode == CP_WS_OP_PING ? CP_WS_EV_PING : CP_WS_EV_PONG;
		ev->data = rx->ctl;
		ev->len = n;
		return 0;
	case CP_WS_OP_CLOSE: {
		uint16_t code;
		const uint8_t *reason;
		size_t rlen;
		int rc = cp_ws_close_parse(rx->ctl, n, &code, &reason, &rlen);
		if (rc < 0)
			return rc;
		ev->kind = CP_WS_EV_CLOSE;
		ev->close_code = code;
		ev->data = reason;
		ev->len = rlen;
		rx->state = RX_CLOSED;
		return 0;
	}
	default:
		if (!h->fin)
			return 0;
		if (rx->msg_opcode == CP_WS_OP_TEXT && rx->utf8 != CP_UTF8_ACCEPT)
			return -CP_WS_R_BAD_UTF8;
		rx->in_message = false;
		ev->kind = CP_WS_EV_MESSAGE;
		ev->opcode = rx->msg_opcode;
		ev->data = rx->msg;
		ev->len = rx->msg_len;
		return 0;
	}
}

/* The general path of cp_ws_rx_feed: the state machine above. Not
 * inlined, so that the client role's whole frames (rx_whole) do not pay
 * for this function's frame set-up. */
static __attribute__((noinline)) ssize_t rx_feed(struct cp_ws_rx *rx, const uint8_t *buf, size_t len, struct cp_ws_event *ev)
{
	size_t used = 0;
	memset(ev, 0, sizeof(*ev));
	if (rx->state == RX_CLOSED)
		return len ? -CP_WS_R_AFTER_CLOSE : 0;
	while (used < len) {
		if (rx->state == RX_HEADER) {
			size_t have = rx->hdr_have;
			size_t take = CP_WS_HDR_MAX - have;
			if (take > len - used)
				take = len - used;
			memcpy(rx->hdr + have, buf + used, take);
			ssize_t hl = hdr_parse(rx->hdr, have + take, rx->cfg.client, &rx->cur);
			if (hl == -CP_WS_R_INCOMPLETE) {
				rx->hdr_have = (uint8_t)(have + take);
				used += take;
				continue;
			}
			if (hl < 0)
				return hl;
			used += (size_t)hl - have;
			rx->hdr_have = 0;
			int rc = frame_begin(rx, &rx->cur);
			if (rc < 0)
				return rc;
			rx->state = RX_PAYLOAD;
			rx->got = 0;
		}

		uint64_t want = rx->cur.payload_len - rx->got;
		size_t take = want < len - used ? (size_t)want : len - used;
		bool control = op_is_control(rx->cur.opcode);
		if (take) {
			/* computed only when take > 0: msg may still be NULL */
			uint8_t *dst = control ? rx->ctl + rx->got : rx->msg + rx->msg_len;
			if (rx->cur.masked)
				unmask_copy(dst, buf + used, take, rx->cur.mask, rx->got);
			else
				memcpy(dst, buf + used, take);
			used += take;
			rx->got += take;
			if (!control) {
				rx->msg_len += take;
				/* 8.1 with 5.6: fail as soon as the text can no
				 * longer be UTF-8, not only at the end. */
				if (rx->msg_opcode == CP_WS_OP_TEXT) {
					rx->utf8 = cp_utf8_step(rx->utf8, dst, take);
					if (rx->utf8 == CP_UTF8_REJECT)
						return -CP_WS_R_BAD_UTF8;
				}
			}
		}
		if (rx->got == rx->cur.payload_len) {
			rx->state = RX_HEADER;
			int rc = frame_end(rx, ev);
			if (rc < 0)
				return rc;
			if (ev->kind != CP_WS_EV_NONE)
				return (ssize_t)used;
		}
	}
	return (ssize_t)used;
}

ssize_t cp_ws_rx_feed(struct cp_ws_rx *rx, const uint8_t *buf, size_t len, struct cp_ws_event *ev)
{
	if (rx->cfg.client && rx->state == RX_HEADER && rx->hdr_have == 0) {
		ssize_t r = rx_whole(rx, buf, len, ev);
		if (r != 0)
			return r;
	}
	return rx_feed(rx, buf, len, ev);
}

ssize_t cp_ws_hdr_encode(uint8_t opcode, uint64_t len, uint8_t *out, size_t cap)
{
	if (!op_is_known(opcode) || (op_is_control(opcode) && len > CP_WS_CONTROL_MAX) ||
	    (len >> 63))
		return -CP_WS_R_UNENCODABLE;
	size_t n = len < 126 ? 2 : len < 65536 ? 4 : 10;
	if (cap < n)
		return -CP_WS_R_NOSPACE;
	out[0] = (uint8_t)(0x80 | opcode);
	if (n == 2) {
		out[1] = (uint8_t)len;
	} else if (n == 4) {
		out[1] = 126;
		out[2] = (uint8_t)(len >> 8);
		out[3] = (uint8_t)len;
	} else {
		out[1] = 127;
		for (int i = 0; i < 8; i++)
			out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
	}
	return (ssize_t)n;
}

ssize_t cp_ws_frame_encode(uint8_t opcode, const void *payload, size_t len, uint8_t *out,
			   size_t cap)
{
	ssize_t h = cp_ws_hdr_encode(opcode, len, out, cap);
	if (h < 0)
		return h;
	if (cap - (size_t)h < len)
		return -CP_WS_R_NOSPACE;
	if (len)
		memcpy(out + h, payload, len);
	return h + (ssize_t)len;
}

/* The payload of a close frame: code and reason cut to fit 125 bytes at a
 * character boundary; code 0 for an empty payload. Returns its length or
 * -CP_WS_R_UNENCODABLE. */
static ssize_t close_payload(uint16_t code, const char *reason, uint8_t pl[CP_WS_CONTROL_MAX])
{
	size_t n = 0;
	if (code) {
		if (!cp_ws_close_code_is_valid(code))
			return -CP_WS_R_UNENCODABLE;
		pl[0] = (uint8_t)(code >> 8);
		pl[1] = (uint8_t)code;
		n = 2;
		size_t rl = reason ? strlen(reason) : 0;
		if (rl > CP_WS_CONTROL_MAX - 2) {
			rl = CP_WS_CONTROL_MAX - 2;
			/* cut at a character boundary so the reason stays UTF-8 */
			while (rl > 0 && ((uint8_t)reason[rl] & 0xc0) == 0x80)
				rl--;
		}
		if (rl)
			memcpy(pl + 2, reason, rl);
		n += rl;
	}
	return (ssize_t)n;
}

ssize_t cp_ws_close_encode(uint16_t code, const char *reason, uint8_t *out, size_t cap)
{
	uint8_t pl[CP_WS_CONTROL_MAX];
	ssize_t n = close_payload(code, reason, pl);
	if (n < 0)
		return n;
	return cp_ws_frame_encode(CP_WS_OP_CLOSE, pl, (size_t)n, out, cap);
}

ssize_t cp_ws_client_frame_encode(uint8_t opcode, const void *payload, size_t len, const uint8_t mask[4],
				  uint8_t *out, size_t cap)
{
	ssize_t h = cp_ws_hdr_encode(opcode, len, out, cap);
	if (h < 0)
		return h;
	if (cap - (size_t)h < 4 || cap - (size_t)h - 4 < len)
		return -CP_WS_R_NOSPACE;
	out[1] |= 0x80;
	memcpy(out + h, mask, 4);
	if (len)
		unmask_copy(out + h + 4, payload, len, mask, 0);
	return h + 4 + (ssize_t)len;
}

ssize_t cp_ws_client_close_encode(uint16_t code, const char *reason, const uint8_t mask[4], uint8_t *out,
				  size_t cap)
{
	uint8_t pl[CP_WS_CONTROL_MAX];
	ssize_t n = close_payload(code, reason, pl);
	if (n < 0)
		return n;
	return cp_ws_client_frame_encode(CP_WS_OP_CLOSE, pl, (size_t)n, mask, out, cap);
}

int cp_ws_accept_key(const char *key, size_t key_len, char out[CP_WS_ACCEPT_LEN + 1])
{
	static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int md_len = 0;
	int ok = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (ctx)
		ok = EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) &&
		     EVP_DigestUpdate(ctx, key, key_len) &&
		     EVP_DigestUpdate(ctx, guid, sizeof(guid) - 1) &&
		     EVP_DigestFinal_ex(ctx, md, &md_len) && md_len == 20;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -EIO;
	/* EVP_EncodeBlock writes 28 characters and a NUL for 20 bytes. */
	if (EVP_EncodeBlock((unsigned char *)out, md, 20) != CP_WS_ACCEPT_LEN)
		return -EIO;
	return 0;
}

static const struct {
	const char *name;
	uint16_t close;
} reasons[] = {
	[CP_WS_R_INCOMPLETE - CP_WS_R_INCOMPLETE] = { "incomplete", 0 },
	[CP_WS_R_RSV_BITS - CP_WS_R_INCOMPLETE] = { "rsv_bits", 1002 },
	[CP_WS_R_BAD_OPCODE - CP_WS_R_INCOMPLETE] = { "bad_opcode", 1002 },
	[CP_WS_R_UNMASKED - CP_WS_R_INCOMPLETE] = { "unmasked", 1002 },
	[CP_WS_R_LENGTH_63BIT - CP_WS_R_INCOMPLETE] = { "length_63bit", 1002 },
	[CP_WS_R_LENGTH_NOT_MINIMAL - CP_WS_R_INCOMPLETE] = { "length_not_minimal", 1002 },
	[CP_WS_R_CONTROL_FRAGMENTED - CP_WS_R_INCOMPLETE] = { "control_fragmented", 1002 },
	[CP_WS_R_CONTROL_TOO_LONG - CP_WS_R_INCOMPLETE] = { "control_too_long", 1002 },
	[CP_WS_R_UNEXPECTED_CONT - CP_WS_R_INCOMPLETE] = { "unexpected_continuation", 1002 },
	[CP_WS_R_EXPECTED_CONT - CP_WS_R_INCOMPLETE] = { "expected_continuation", 1002 },
	[CP_WS_R_TEXT_REFUSED - CP_WS_R_INCOMPLETE] = { "text_refused", 1003 },
	[CP_WS_R_MESSAGE_TOO_BIG - CP_WS_R_INCOMPLETE] = { "message_too_big", 1009 },
	[CP_WS_R_BAD_UTF8 - CP_WS_R_INCOMPLETE] = { "bad_utf8", 1007 },
	[CP_WS_R_CLOSE_PAYLOAD - CP_WS_R_INCOMPLETE] = { "close_payload", 1002 },
	[CP_WS_R_CLOSE_CODE - CP_WS_R_INCOMPLETE] = { "close_code", 1002 },
	[CP_WS_R_CLOSE_REASON_UTF8 - CP_WS_R_INCOMPLETE] = { "close_reason_utf8", 1007 },
	[CP_WS_R_AFTER_CLOSE - CP_WS_R_INCOMPLETE] = { "frame_after_close", 1002 },
	[CP_WS_R_NO_MEMORY - CP_WS_R_INCOMPLETE] = { "no_memory", 1011 },
	[CP_WS_R_NOSPACE - CP_WS_R_INCOMPLETE] = { "no_space", 0 },
	[CP_WS_R_UNENCODABLE - CP_WS_R_INCOMPLETE] = { "unencodable", 0 },
	[CP_WS_R_MASKED - CP_WS_R_INCOMPLETE] = { "masked", 1002 },
};

_Static_assert(FG_ARRAY_LEN(reasons) == CP_WS_R__END - CP_WS_R_INCOMPLETE,
	       "every reason has a name and a close code");

static int reason_index(int reason)
{
	if (reason < 0)
		reason = -reason;
	if (reason < CP_WS_R_INCOMPLETE || reason >= CP_WS_R__END)
		return -1;
	return reason - CP_WS_R_INCOMPLETE;
}

const char *cp_ws_reason_name(int reason)
{
	if (reason == 0)
		return "ok";
	int i = reason_index(reason);
	return i < 0 ? "unknown" : reasons[i].name;
}

uint16_t cp_ws_reason_close_code(int reason)
{
	if (reason == 0)
		return 0;
	int i = reason_index(reason);
	return i < 0 ? CP_WS_CLOSE_PROTOCOL : reasons[i].close;
}

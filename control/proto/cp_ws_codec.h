/* cp_ws_codec.h - RFC 6455 WebSocket framing, for both ends.
 *
 * Owns: the frame header syntax and its checks (section 5.2), unmasking
 * (5.3), the receive state machine that reassembles fragmented messages
 * around interleaved control frames (5.4, 5.5), close-frame payloads and the
 * status codes a peer may send (5.5.1, 7.4), UTF-8 validation (8.1), server
 * frame encoding (unmasked), client frame encoding (masked), the
 * Sec-WebSocket-Accept value (4.2.2), and the stable reasons with the close
 * code each one is answered with.
 *
 * The daemon is the server end. The client end (tools/wsclient: fanofleet,
 * bench/ws) uses the same parser and state machine in the client role
 * (cp_ws_rx_cfg.client), where frames must arrive unmasked.
 *
 * Pure apart from the receive buffer the state machine allocates (bounded by
 * its max_message). No I/O, no logging. A struct cp_ws_rx belongs to one
 * connection and is used by the thread that owns that connection; the other
 * functions may be called from any thread.
 *
 * What fanogate accepts (docs/websocket.md): binary messages only (text is
 * refused with 1003 unless cfg.accept_text), no extensions (RSV bits must be
 * 0), masked client frames only.
 */
#ifndef CP_WS_CODEC_H
#define CP_WS_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fg/common.h"

enum cp_ws_opcode {
	CP_WS_OP_CONT = 0x0,
	CP_WS_OP_TEXT = 0x1,
	CP_WS_OP_BINARY = 0x2,
	CP_WS_OP_CLOSE = 0x8,
	CP_WS_OP_PING = 0x9,
	CP_WS_OP_PONG = 0xA,
};

/* Close status codes (RFC 6455 7.4.1) fanogate sends or reports. */
enum cp_ws_close_code {
	CP_WS_CLOSE_NORMAL = 1000,
	CP_WS_CLOSE_GOING_AWAY = 1001,
	CP_WS_CLOSE_PROTOCOL = 1002,
	CP_WS_CLOSE_UNSUPPORTED = 1003,  /* fanogate: text data */
	CP_WS_CLOSE_NO_STATUS = 1005,    /* reported for an empty close; never sent */
	CP_WS_CLOSE_BAD_DATA = 1007,     /* invalid UTF-8 */
	CP_WS_CLOSE_POLICY = 1008,
	CP_WS_CLOSE_TOO_BIG = 1009,
	CP_WS_CLOSE_INTERNAL = 1011,
};

#define CP_WS_CONTROL_MAX 125u    /* control frame payload limit (5.5) */
#define CP_WS_HDR_MAX 14u         /* 2 + 8 length + 4 mask */
#define CP_WS_SERVER_HDR_MAX 10u  /* unmasked */
#define CP_WS_ACCEPT_LEN 28u      /* base64 of a SHA-1 */
#define CP_WS_RX_KEEP (64u * 1024u) /* message buffer kept between messages */

/* Stable reasons, above errno's range and apart from cp_http's. Names
 * (cp_ws_reason_name) are part of the operator interface: only append. The
 * close code each one is answered with is in the comment and in
 * cp_ws_reason_close_code(). */
enum cp_ws_reason {
	CP_WS_R_OK = 0,
	CP_WS_R_INCOMPLETE = 8192,     /* "incomplete" (frame header parser only) */
	CP_WS_R_RSV_BITS,              /* "rsv_bits" 1002: RSV1-3 set, no extension negotiated */
	CP_WS_R_BAD_OPCODE,            /* "bad_opcode" 1002: reserved opcode 3-7, B-F */
	CP_WS_R_UNMASKED,              /* "unmasked" 1002: client frame without MASK */
	CP_WS_R_LENGTH_63BIT,          /* "length_63bit" 1002: 64-bit length with the top bit set */
	CP_WS_R_LENGTH_NOT_MINIMAL,    /* "length_not_minimal" 1002: 16/64-bit form for a shorter length */
	CP_WS_R_CONTROL_FRAGMENTED,    /* "control_fragmented" 1002: control frame without FIN */
	CP_WS_R_CONTROL_TOO_LONG,      /* "control_too_long" 1002: control payload > 125 */
	CP_WS_R_UNEXPECTED_CONT,       /* "unexpected_continuation" 1002: no message to continue */
	CP_WS_R_EXPECTED_CONT,         /* "expected_continuation" 1002: new data frame mid-message */
	CP_WS_R_TEXT_REFUSED,          /* "text_refused" 1003: fanogate takes binary only */
	CP_WS_R_MESSAGE_TOO_BIG,       /* "message_too_big" 1009: message over max_message */
	CP_WS_R_BAD_UTF8,              /* "bad_utf8" 1007: text message not UTF-8 */
	CP_WS_R_CLOSE_PAYLOAD,         /* "close_payload" 1002: close payload of 1 byte */
	CP_WS_R_CLOSE_CODE,            /* "close_code" 1002: status code not allowed on the wire */
	CP_WS_R_CLOSE_REASON_UTF8,     /* "close_reason_utf8" 1007: close reason not UTF-8 */
	CP_WS_R_AFTER_CLOSE,           /* "frame_after_close" 1002: data after a close frame */
	CP_WS_R_NO_MEMORY,             /* "no_memory" 1011: message buffer allocation failed */
	CP_WS_R_NOSPACE,               /* "no_space": encoder output too small (no close code) */
	CP_WS_R_UNENCODABLE,           /* "unencodable": encoder refuses its input (no close code) */
	CP_WS_R_MASKED,                /* "masked" 1002: client role: server frame with MASK set */
	CP_WS_R__END
};

/* A parsed frame header. */
struct cp_ws_hdr {
	bool fin;
	uint8_t opcode;       /* enum cp_ws_opcode */
	bool masked;
	uint8_t hdr_len;      /* 2..14 */
	uint8_t mask[4];
	uint64_t payload_len; /* < 2^63 */
};

/* Parse the frame header at buf[0..len) as a server (MASK required).
 * Returns the header length (2..14), -CP_WS_R_INCOMPLETE, or -CP_WS_R_xxx
 * (checked as soon as the bytes that decide it are present: RSV and opcode
 * with one byte, MASK, control length and FIN with two). *h is written only
 * on success. Reads no byte at or past buf[len]. Any thread. */
FG_MUST_CHECK ssize_t cp_ws_hdr_parse(const uint8_t *buf, size_t len, struct cp_ws_hdr *h);
/* The same as a client: MASK must be clear (RFC 6455 5.1: a client closes
 * on a masked frame, -CP_WS_R_MASKED); returns 2..10, h->masked false. */
FG_MUST_CHECK ssize_t cp_ws_hdr_parse_client(const uint8_t *buf, size_t len, struct cp_ws_hdr *h);

/* XOR n bytes at p with the masking key, starting at key position
 * offset % 4 (so a payload can be unmasked in pieces: pass the count of
 * payload bytes already unmasked). Eight bytes at a time. Any thread. */
void cp_ws_unmask(uint8_t *p, size_t n, const uint8_t mask[4], uint64_t offset);

/* Incremental UTF-8 validation: the UTF8-octets syntax of RFC 3629 section 4
 * as a state machine. State starts at CP_UTF8_ACCEPT; cp_utf8_step returns
 * CP_UTF8_REJECT as soon as the bytes can no longer be valid UTF-8
 * (overlongs, surrogates, > U+10FFFF included); a complete valid text ends in
 * CP_UTF8_ACCEPT. Any thread. */
#define CP_UTF8_ACCEPT 0u
#define CP_UTF8_REJECT 1u
uint32_t cp_utf8_step(uint32_t state, const uint8_t *p, size_t n);
bool cp_utf8_is_valid(const uint8_t *p, size_t n);

/* Whether a peer may send this close status code (RFC 6455 7.4): 1000-1003,
 * 1007-1011 and 3000-4999. */
bool cp_ws_close_code_is_valid(unsigned code);

/* Parse a close frame payload (already unmasked). Returns 0 with *code (1005
 * for an empty payload) and the reason slice set, or -CP_WS_R_CLOSE_PAYLOAD /
 * -CP_WS_R_CLOSE_CODE / -CP_WS_R_CLOSE_REASON_UTF8 / -CP_WS_R_CONTROL_TOO_LONG. */
FG_MUST_CHECK int cp_ws_close_parse(const uint8_t *p, size_t n, uint16_t *code,
				    const uint8_t **reason, size_t *reason_len);

/* The receive state machine of one connection.
 *
 *   HEADER --header complete--> PAYLOAD --payload complete--> HEADER
 *      |                                  (emits an event for a control frame or
 *      |                                   the FIN frame of a message)
 *      +-- close frame delivered --> CLOSED (every further byte: frame_after_close)
 *   any violation: the call returns -reason; the rx must not be fed again.
 *
 * Message state (in_message) is orthogonal: set by a non-FIN TEXT/BINARY,
 * cleared by the FIN CONT; control frames may come in between. */
struct cp_ws_rx_cfg {
	uint64_t max_message; /* bytes of one reassembled message; > limit -> 1009 */
	bool accept_text;     /* deliver UTF-8-checked text messages instead of 1003 */
	bool client;          /* this end is the client: frames arrive unmasked
			       * (cp_ws_hdr_parse_client), and a whole unfragmented
			       * data frame within one feed is delivered in place */
};

enum cp_ws_event_kind {
	CP_WS_EV_NONE = 0, /* all input consumed, nothing to deliver yet */
	CP_WS_EV_MESSAGE,  /* a whole data message: opcode, data, len */
	CP_WS_EV_PING,     /* answer with a pong carrying data/len */
	CP_WS_EV_PONG,
	CP_WS_EV_CLOSE,    /* valid close: code (1005 if none), data/len = reason; echo and close */
};

struct cp_ws_event {
	enum cp_ws_event_kind kind;
	uint8_t opcode;      /* MESSAGE: CP_WS_OP_BINARY or CP_WS_OP_TEXT */
	uint16_t close_code; /* CLOSE */
	const uint8_t *data; /* owned by the rx, valid until the next feed/fini; in
			      * the client role a MESSAGE may instead point into the
			      * fed buffer (valid as long as that buffer) */
	size_t len;
};

struct cp_ws_rx {
	struct cp_ws_rx_cfg cfg;
	/* Invariants:
	 * 1. state == RX_HEADER: hdr_have < CP_WS_HDR_MAX bytes of the next
	 *    header are in hdr[].
	 * 2. state == RX_PAYLOAD: cur is the current frame, got < cur.payload_len
	 *    or the frame is empty and about to complete.
	 * 3. in_message => msg_opcode is TEXT or BINARY and msg_len <= max_message.
	 * 4. msg_len <= msg_cap; msg is NULL iff msg_cap == 0.
	 * 5. between messages msg_cap <= CP_WS_RX_KEEP once the next message
	 *    starts (a larger buffer is freed then). */
	uint8_t state;
	uint8_t hdr_have;
	uint8_t hdr[CP_WS_HDR_MAX];
	struct cp_ws_hdr cur;
	uint64_t got;
	bool in_message;
	uint8_t msg_opcode;
	uint32_t utf8;
	uint8_t *msg;
	size_t msg_len, msg_cap;
	uint8_t ctl[CP_WS_CONTROL_MAX];
};

/* Initialise rx for one connection (no allocation yet). */
void cp_ws_rx_init(struct cp_ws_rx *rx, const struct cp_ws_rx_cfg *cfg);
/* Release the message buffer; rx may be initialised again. */
void cp_ws_rx_fini(struct cp_ws_rx *rx);

/* Feed received bytes. Consumes bytes until one event is complete or the
 * input is exhausted, and returns how many it consumed (> 0 whenever len > 0)
 * with *ev set (CP_WS_EV_NONE if nothing completed); the caller calls again
 * with the rest. Returns -CP_WS_R_xxx on a protocol violation: send a close
 * with cp_ws_reason_close_code() and stop reading. buf is only read. In the
 * client role an unfragmented data frame whose header and payload are all
 * in buf is checked as any other and delivered without a copy (ev->data
 * points into buf). Owning thread of rx only. */
FG_MUST_CHECK ssize_t cp_ws_rx_feed(struct cp_ws_rx *rx, const uint8_t *buf, size_t len,
				    struct cp_ws_event *ev);

/* Bytes of the unfinished message (or control frame) received so far,
 * at least 1: the completed fragments' payload, the current frame's
 * payload and its header (counted as 2 bytes once complete); 0 between
 * frames with no message open. */
uint64_t cp_ws_rx_partial(const struct cp_ws_rx *rx);

/* Encode a server frame header (FIN set, unmasked) for a payload of len
 * bytes into out[0..cap). Returns its length (2, 4 or 10), -CP_WS_R_NOSPACE,
 * or -CP_WS_R_UNENCODABLE (bad opcode, control payload > 125, len >= 2^63). */
FG_MUST_CHECK ssize_t cp_ws_hdr_encode(uint8_t opcode, uint64_t len, uint8_t *out, size_t cap);
/* Header + payload in one buffer. Same returns, total length on success. */
FG_MUST_CHECK ssize_t cp_ws_frame_encode(uint8_t opcode, const void *payload, size_t len,
					 uint8_t *out, size_t cap);
/* A close frame with code and reason (truncated to fit 125 bytes at a UTF-8
 * character boundary). code 0 sends an empty close. Same returns. */
FG_MUST_CHECK ssize_t cp_ws_close_encode(uint16_t code, const char *reason, uint8_t *out,
					 size_t cap);

/* Client frames (RFC 6455 5.3): FIN set, MASK set with the caller's key
 * (a client picks a fresh unpredictable key per frame, RAND_bytes; a fixed
 * key is for a load generator's prebuilt frames), payload masked while it is
 * copied to out. Returns the total length (header 6, 8 or 14 bytes plus len),
 * -CP_WS_R_NOSPACE or -CP_WS_R_UNENCODABLE, as the server encoders. */
FG_MUST_CHECK ssize_t cp_ws_client_frame_encode(uint8_t opcode, const void *payload, size_t len,
						const uint8_t mask[4], uint8_t *out, size_t cap);
/* The client's close frame: cp_ws_close_encode's payload, masked. */
FG_MUST_CHECK ssize_t cp_ws_client_close_encode(uint16_t code, const char *reason,
						const uint8_t mask[4], uint8_t *out, size_t cap);

/* Sec-WebSocket-Accept for a key (the header value, as sent): base64 of
 * SHA-1(key || 258EAFA5-E914-47DA-95CA-C5AB0DC85B11). Writes
 * CP_WS_ACCEPT_LEN characters and a NUL to out. Returns 0 or -EIO (OpenSSL
 * failure; the caller logs its error queue). Any thread. */
FG_MUST_CHECK int cp_ws_accept_key(const char *key, size_t key_len,
				   char out[CP_WS_ACCEPT_LEN + 1]);

/* Stable name of a reason ("unknown" out of range; accepts its negation). */
const char *cp_ws_reason_name(int reason);
/* The close code a reason is answered with; 0 for OK, incomplete and the
 * encoder reasons, 1002 out of range. */
uint16_t cp_ws_reason_close_code(int reason);

#endif

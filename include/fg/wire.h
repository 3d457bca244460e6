/* wire.h - codecs for the fanogate wire contract (spec: docs/wire-decisions.md
 * and the fleet's wire.md).
 *
 * Owns: stateless parsers and encoders for the 10-byte aeon-flow header and
 * back-to-back batches, the UDP fragmented profile (fragment header, ACK
 * entries, ACK frames), residual-seed contributions, canonical reports,
 * resolved-seed frames and the seed status frame.
 *
 * Who may call: anyone, from any thread. Nothing here allocates, logs or
 * keeps state; every function reads only its arguments.
 *
 * Return convention for every parser:
 *   > 0              bytes consumed (a whole unit was decoded; out is written)
 *   -FG_R_INCOMPLETE more bytes are needed (stream transports only)
 *   -FG_R_xxx        malformed, with a stable named reason (fg_reason_name)
 * Out-parameters are written only on success. Encoders return the number of
 * bytes written, or -FG_R_NOSPACE / -FG_R_UNENCODABLE and write nothing
 * meaningful.
 *
 * Byte order: header fields big-endian, payload fields little-endian (as the
 * fleet does). */
#ifndef FG_WIRE_H
#define FG_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "fg/common.h"
#include "fg/fano.h"

#define FG_HDR_LEN 10u
#define FG_LEN_MAX 0xFFFFFFu
#define FG_FRAG_HDR_LEN 4u
#define FG_FRAG_MAX 255u
#define FG_ACK_ENTRY_LEN 14u
#define FG_SEED_PREFIX_LEN 8u
#define FG_DIGEST_PAYLOAD_LEN 16u
#define FG_STATUS_PAYLOAD_LEN 32u
/* The fleet's "all seven lines" constant (FANO_FULL_MASK): its coordinator
 * skips the canonical hop only when a status says bitset == 0x7f. */
#define FG_FANO_FULL_MASK 0x7Fu

#define FG_STREAM_STATUS 0xFFFEu
#define FG_STREAM_ACK 0xFFFFu
#define FG_FLAG_ACK 0x80u
#define FG_FLAG_FIN 0x10u

/* Stable reasons. Names (fg_reason_name) are part of the operator and fleet
 * contract: they appear in JSON acks, counters and logs. Append only. */
enum fg_reason {
	FG_R_OK = 0,
	FG_R_INCOMPLETE,          /* "incomplete" */
	FG_R_SHORT_HEADER,        /* "short_header": < 10 bytes on a message transport */
	FG_R_TRUNCATED_FRAME,     /* "truncated_frame": length runs past the buffer, or 1..9 stray bytes */
	FG_R_FRAG_SHORT,          /* "frag_short": datagram shorter than the 4-byte fragment header */
	FG_R_FRAG_TOTAL_ZERO,     /* "frag_total_zero" */
	FG_R_FRAG_INDEX_RANGE,    /* "frag_index_range": frag_index >= frag_total */
	FG_R_FRAG_TOTAL_CHANGED,  /* "frag_total_changed": inside one reassembly group */
	FG_R_FRAG_CHUNK_SIZE,     /* "frag_chunk_size": chunk empty, too big, or not C bytes before the last */
	FG_R_ACK_HEADER,          /* "ack_header": ACK frame not (0xFFFF, seq 0, flags 0x80) */
	FG_R_ACK_LENGTH,          /* "ack_length": ACK payload not a multiple of 14, or (dataplane) more entries than 128 */
	FG_R_UNKNOWN_STREAM,      /* "unknown_stream" */
	FG_R_UNKNOWN_LAYER,       /* "unknown_layer": band offset >= configured layers */
	FG_R_SEED_PREFIX,         /* "seed_prefix": payload shorter than the 8-byte prefix */
	FG_R_SEED_LINE,           /* "seed_line": line 7 */
	FG_R_SEED_ORIENTATION,    /* "seed_orientation": orientation not 0 or 1 */
	FG_R_SEED_BODY_ROWS,      /* "seed_body_rows": body not a whole number of f32 rows of hidden */
	FG_R_SEED_BODY_LENGTH,    /* "seed_body_length": body != seq_len * hidden f32 */
	FG_R_SEED_EMPTY,          /* "seed_empty": seq_len == 0 */
	FG_R_SEED_TOO_LARGE,      /* "seed_too_large": seq_len above the configured maximum */
	FG_R_CANON_KIND,          /* "canonical_kind": flags low nibble not 0 (full) or 1 (digest) */
	FG_R_CANON_DIGEST_LENGTH, /* "canonical_digest_length": digest payload != 16 bytes */
	FG_R_STATUS_LENGTH,       /* "status_length" */
	FG_R_STATUS_VERSION,      /* "status_version" */
	FG_R_NOSPACE,             /* "no_space": encoder output buffer too small */
	FG_R_UNENCODABLE,         /* "unencodable": encoder refuses its input */
	FG_R_BAD_FLAGS,           /* "bad_flags": resolved frame flags != 0x10, status frame flags != 0 */
	FG_R_STATUS_FIELD,        /* "status_field": a status field out of its range (line, sign, masks, state, reason) */
	FG_R_LAYER_MISMATCH,      /* "layer_mismatch": the stream's layer nibble is not the address's layer & 0x0F */
	FG_R_LAYER_NOT_SERVED,    /* "layer_not_served": a destination layer outside this node's [cluster] layers */
	FG_R__COUNT
};

/* Stable lower-case name of a reason; "unknown" for out-of-range values.
 * Accepts the reason or its negation. */
const char *fg_reason_name(int reason);

/* ---- 1. The aeon-flow header ---------------------------------------- */

struct fg_hdr {
	uint16_t stream_id;
	uint32_t sequence;
	uint8_t flags;
	uint32_t length; /* payload bytes, 0..FG_LEN_MAX */
};

/* How a short buffer is judged: stream transports wait for more bytes,
 * datagram and message transports call it malformed. */
enum fg_transport { FG_TRANSPORT_STREAM, FG_TRANSPORT_MESSAGE };

/* Parse one header from buf[0..len). Returns 10 on success. */
FG_MUST_CHECK ssize_t fg_hdr_decode(const uint8_t *buf, size_t len, enum fg_transport t,
				    struct fg_hdr *out);
/* Write 10 header bytes. Refuses length > FG_LEN_MAX. */
FG_MUST_CHECK ssize_t fg_hdr_encode(const struct fg_hdr *h, uint8_t *buf, size_t cap);

/* One whole frame at the start of buf: header plus payload (payload points
 * into buf). Returns 10 + length. Bytes after the frame are not looked at:
 * a caller that needs "exactly one frame" compares the return with len, a
 * caller that holds several frames uses fg_batch_decode. Short buffers:
 * STREAM -> -FG_R_INCOMPLETE; MESSAGE -> -FG_R_SHORT_HEADER (< 10 bytes) or
 * -FG_R_TRUNCATED_FRAME (length runs past the end). */
struct fg_frame {
	struct fg_hdr hdr;
	const uint8_t *payload;
};
FG_MUST_CHECK ssize_t fg_frame_decode(const uint8_t *buf, size_t len, enum fg_transport t,
				      struct fg_frame *out);
FG_MUST_CHECK ssize_t fg_frame_encode(const struct fg_hdr *h, const void *payload, uint8_t *buf,
				      size_t cap);

/* Batch: frames back to back in one message. Validates the whole buffer
 * first (a complete frame followed by 1..9 stray bytes, or a frame that runs
 * past the end, makes the whole batch malformed); on success returns the
 * number of frames n (>= 0) and fills out[0..min(n,max)). An empty buffer is
 * a valid batch of 0 frames. */
FG_MUST_CHECK int fg_batch_decode(const uint8_t *buf, size_t len, struct fg_frame *out,
				  size_t max);

/* ---- 2.1 UDP fragmented profile --------------------------------------- */

struct fg_frag {
	uint16_t frame_id;
	uint8_t index;
	uint8_t total;
	const uint8_t *chunk;
	uint32_t chunk_len;
};
/* Parse one datagram. Rejects a datagram shorter than 4 bytes (frag_short),
 * frag_total 0, frag_index >= frag_total and an empty chunk (no encoded frame
 * is shorter than 10 bytes, so no fragment is empty). chunk points into
 * dgram. Returns the datagram length. */
FG_MUST_CHECK ssize_t fg_frag_decode(const uint8_t *dgram, size_t len, struct fg_frag *out);
/* fg_frag_decode, inlined for a per-packet loop (same checks, same
 * reasons); defined below, after the byte-order helpers. */
static inline ssize_t fg_frag_decode_fast(const uint8_t *dgram, size_t len, struct fg_frag *out);
FG_MUST_CHECK ssize_t fg_frag_encode(const struct fg_frag *f, uint8_t *buf, size_t cap);
/* Check a decoded fragment's chunk against the chunk size C of its profile:
 * every fragment carries 1..C bytes and every fragment but the last exactly
 * C (the sender splits at multiples of C). The last fragment's exact size is
 * only known once the frame header (first fragment) is known: the
 * reassembler checks 10 + length == (total - 1) * C + last chunk_len.
 * Returns 0 or -FG_R_FRAG_CHUNK_SIZE. */
FG_MUST_CHECK int fg_frag_check(const struct fg_frag *f, uint32_t chunk);
/* Chunk size C for an MTU (MTU - 4); 0 if the MTU is too small (< 4 + 10). */
uint32_t fg_frag_chunk_size(uint32_t mtu);
/* Number of fragments for an encoded frame of frame_len bytes at chunk C;
 * 0 if it would need more than 255. */
uint32_t fg_frag_count(uint32_t frame_len, uint32_t chunk);

struct fg_ack_entry {
	uint16_t stream_id;
	uint32_t base_seq;
	uint32_t bitmap_hi; /* bit k acks base_seq + 32 + k */
	uint32_t bitmap_lo; /* bit k acks base_seq + k */
};
FG_MUST_CHECK ssize_t fg_ack_entry_decode(const uint8_t *buf, size_t len, struct fg_ack_entry *out);
FG_MUST_CHECK ssize_t fg_ack_entry_encode(const struct fg_ack_entry *e, uint8_t *buf, size_t cap);
/* True when the entry acknowledges seq. */
bool fg_ack_entry_covers(const struct fg_ack_entry *e, uint32_t seq);

/* An ACK frame's payload: validates header (0xFFFF, seq 0, flags 0x80) and
 * length (multiple of 14). Returns the entry count; fills out[0..min(n,max)). */
FG_MUST_CHECK int fg_ack_frame_decode(const struct fg_frame *f, struct fg_ack_entry *out, size_t max);

/* Build ACK datagrams (fragment header + ACK frame) for n entries so that no
 * datagram exceeds mtu bytes. Writes datagrams back to back into buf and
 * their lengths into lens[0..max_dgrams). frame_id is the first fragment
 * frame_id used; each datagram takes the next one. Returns the number of
 * datagrams written, -FG_R_NOSPACE, or -FG_R_UNENCODABLE (mtu too small for
 * one entry). */
FG_MUST_CHECK int fg_ack_build(const struct fg_ack_entry *e, size_t n, uint32_t mtu, uint16_t frame_id,
			       uint8_t *buf, size_t cap, uint32_t *lens, size_t max_dgrams);

/* ---- 3. Stream bands --------------------------------------------------- */

struct fg_bands {
	uint16_t seed_base;      /* default 0xAF60 */
	uint16_t canonical_base; /* default 0xAF80 */
	uint16_t resolved_base;  /* default 0xAFA0 */
	uint8_t layer_bits;      /* default 5: 32 layers per band */
	uint16_t n_layers;       /* configured model layers, <= 1 << layer_bits */
};
void fg_bands_default(struct fg_bands *b);

enum fg_band { FG_BAND_SEED, FG_BAND_CANONICAL, FG_BAND_RESOLVED, FG_BAND_STATUS, FG_BAND_ACK };
/* Classify a stream id. Returns 0 and writes band and layer, or
 * -FG_R_UNKNOWN_STREAM / -FG_R_UNKNOWN_LAYER. The layer is the band offset:
 * without an address that names the layer, a band of layer_bits bits can
 * only name layers below 1 << layer_bits (a 4-bit band refuses layers above
 * 15 rather than folding them onto 0..15). */
FG_MUST_CHECK int fg_stream_classify(const struct fg_bands *b, uint16_t stream_id, enum fg_band *band,
				     uint16_t *layer);

/* The fleet's dispatcher writes dst_layer & 0x0F into the stream id and
 * names the destination by the address it sends to (a station URL, a
 * per-layer UDP port, a WebSocket bound to one layer; wire.md section 3).
 * FG_LAYER_UNBOUND: the address names no layer (fg_stream_classify). */
#define FG_LAYER_UNBOUND (-1)
#define FG_LAYER_NIBBLE 0x0Fu
/* Classify a stream that arrived on an address bound to layer `bound`
 * (or FG_LAYER_UNBOUND). For the seed and canonical bands the layer is
 * `bound`, and the band offset must be either `bound` itself or
 * bound & 0x0F (the fleet's masked form); any other offset is
 * -FG_R_LAYER_MISMATCH, a bound layer >= n_layers -FG_R_UNKNOWN_LAYER. The
 * other bands classify as fg_stream_classify. Two layers never share slot
 * keys: the layer written is always the address's. */
FG_MUST_CHECK int fg_stream_classify_at(const struct fg_bands *b, uint16_t stream_id, int32_t bound,
					enum fg_band *band, uint16_t *layer);

/* The two above, inline, for the dataplane's hot path (every frame's first
 * fragment is classified): fg_stream_classify_n classifies with the band
 * offset bounded by n_layers (b->n_layers, or the band's width for a bound
 * address), fg_stream_classify_at_i is fg_stream_classify_at. */
static inline int fg_stream_classify_n(const struct fg_bands *b, uint16_t stream_id, uint16_t n_layers,
				       enum fg_band *band, uint16_t *layer)
{
	/* The transport streams win over any band that a configuration might
	 * have stretched over them. */
	if (stream_id == FG_STREAM_ACK || stream_id == FG_STREAM_STATUS) {
		*band = stream_id == FG_STREAM_ACK ? FG_BAND_ACK : FG_BAND_STATUS;
		*layer = 0;
		return 0;
	}
	if (b->layer_bits > 16)
		return -FG_R_UNKNOWN_STREAM;
	/* an id below a base wraps to an offset past any width */
	uint32_t width = 1u << b->layer_bits, off;
	enum fg_band k;
	if ((off = (uint32_t)stream_id - b->seed_base) < width)
		k = FG_BAND_SEED;
	else if ((off = (uint32_t)stream_id - b->canonical_base) < width)
		k = FG_BAND_CANONICAL;
	else if ((off = (uint32_t)stream_id - b->resolved_base) < width)
		k = FG_BAND_RESOLVED;
	else
		return -FG_R_UNKNOWN_STREAM;
	if (off >= n_layers)
		return -FG_R_UNKNOWN_LAYER;
	*band = k;
	*layer = (uint16_t)off;
	return 0;
}

static inline int fg_stream_classify_at_i(const struct fg_bands *b, uint16_t stream_id, int32_t bound,
					enum fg_band *band, uint16_t *layer)
{
	enum fg_band bd;
	uint16_t off;

	if (bound < 0)
		return fg_stream_classify_n(b, stream_id, b->n_layers, band, layer);
	/* The offset is checked against the band's width, not n_layers: the
	 * masked form of layer 17 is offset 1 whatever the model's size. */
	int r = fg_stream_classify_n(b, stream_id, b->layer_bits > 16 ? 0 : (uint16_t)(1u << b->layer_bits), &bd,
				     &off);
	if (r < 0)
		return r;
	if (bd == FG_BAND_SEED || bd == FG_BAND_CANONICAL) {
		if ((uint32_t)bound >= b->n_layers)
			return -FG_R_UNKNOWN_LAYER;
		/* wire.md 3: the stream's low 4 bits must equal layer & 0x0F; an
		 * offset that names a different whole layer is refused too. */
		if (off != (uint32_t)bound && off != ((uint32_t)bound & FG_LAYER_NIBBLE))
			return -FG_R_LAYER_MISMATCH;
		off = (uint16_t)bound;
	} else if (bd == FG_BAND_RESOLVED && off >= b->n_layers) {
		return -FG_R_UNKNOWN_LAYER;
	}
	*band = bd;
	*layer = off;
	return 0;
}

/* ---- 3.1 Residual-seed contribution ------------------------------------ */

struct fg_seed {
	uint32_t token_seq;
	uint16_t dst_layer;
	uint8_t line;        /* 0..6 */
	uint8_t orientation; /* 0 add, 1 subtract (whatever the wire reading) */
	uint32_t start_pos;
	uint32_t seq_len;
	const uint8_t *body; /* f32 LE, seq_len * hidden floats */
	uint32_t body_len;   /* bytes */
};

/* How the flags' low nibble of a seed says its sign ([wire] orientation,
 * wire.md 3.1). BIT: 0 = add, 1 = subtract (the default); SIGNED: 0x1 =
 * add, 0xF = subtract (+1/-1 as a nibble). Anything else is
 * -FG_R_SEED_ORIENTATION. Decoders return orientation 0/1 either way. */
enum fg_orientation_mode { FG_ORIENT_BIT = 0, FG_ORIENT_SIGNED = 1 };

/* Seed decode limits from configuration. */
struct fg_seed_limits {
	uint32_t hidden;      /* floats per row */
	uint32_t max_seq_len; /* rows per contribution */
	uint8_t orientation;  /* enum fg_orientation_mode; 0 (BIT) when zeroed */
};
/* The flags low nibble that means orientation o (0 add, 1 subtract) in
 * mode m (for encoders and test vectors). */
static inline uint8_t fg_orientation_nibble(enum fg_orientation_mode m, uint8_t o)
{
	return m == FG_ORIENT_SIGNED ? (o ? 0x0Fu : 0x01u) : (uint8_t)(o & 1u);
}

/* Decode the payload of a frame already known to be on the seed band.
 * Checks, in this order (the first fault decides the reason): line,
 * orientation, 8-byte prefix, seq_len 0 (refused), seq_len above the limit,
 * whole rows of hidden f32, exactly seq_len rows. Returns the payload
 * length; body points into the frame. */
FG_MUST_CHECK ssize_t fg_seed_decode(const struct fg_frame *f, uint16_t dst_layer,
				     const struct fg_seed_limits *lim, struct fg_seed *out);
/* Validate only the 10-byte header and the 8-byte prefix of a seed frame
 * (what the first UDP fragment carries): flags, prefix, and that
 * hdr.length == 8 + seq_len * hidden * 4. body/body_len are set to NULL and
 * the expected body length. Returns 18. */
FG_MUST_CHECK ssize_t fg_seed_decode_prefix(const struct fg_hdr *h, const uint8_t *prefix, size_t len,
					    uint16_t dst_layer, const struct fg_seed_limits *lim,
					    struct fg_seed *out);
FG_MUST_CHECK ssize_t fg_seed_encode(const struct fg_bands *b, const struct fg_seed *s, uint8_t *buf,
				     size_t cap);

/* ---- 3.2 Canonical report ---------------------------------------------- */

enum fg_canon_kind { FG_CANON_FULL = 0, FG_CANON_DIGEST = 1 };
struct fg_canon {
	uint32_t token_seq;
	uint16_t dst_layer;
	enum fg_canon_kind kind;
	uint32_t start_pos;
	uint32_t seq_len;
	const uint8_t *body; /* FULL only */
	uint32_t body_len;   /* FULL only */
	uint64_t digest;     /* DIGEST: as sent; FULL: 0 from the decoder; a caller that hashed the body stores it here */
};
FG_MUST_CHECK ssize_t fg_canon_decode(const struct fg_frame *f, uint16_t dst_layer,
				      const struct fg_seed_limits *lim, struct fg_canon *out);
FG_MUST_CHECK ssize_t fg_canon_encode(const struct fg_bands *b, const struct fg_canon *c, uint8_t *buf,
				      size_t cap);

/* ---- 3.3 Resolved seed ------------------------------------------------- */

struct fg_resolved {
	uint32_t token_seq;
	uint16_t dst_layer;
	uint32_t start_pos;
	uint32_t seq_len;
	const uint8_t *body;
	uint32_t body_len;
};
/* flags = FG_FLAG_FIN (0x10), stream = resolved_base + layer. The decoder
 * refuses other flags (-FG_R_BAD_FLAGS) and applies the seed body rules;
 * both return the payload length / bytes written like the seed codec. */
FG_MUST_CHECK ssize_t fg_resolved_encode(const struct fg_bands *b, const struct fg_resolved *r,
					 uint8_t *buf, size_t cap);
/* The head of the same frame: its header and prefix, FG_RESOLVED_HEAD_LEN
 * (18) bytes into buf, for a sender that gathers the body from where it
 * lies (the dataplane copies it from the slot straight into its packets).
 * r->body is checked as by fg_resolved_encode but not read; the frame is
 * buf[0..18) followed by r->body[0..r->body_len). Returns 18, or
 * -FG_R_UNENCODABLE / -FG_R_NOSPACE like fg_resolved_encode. */
#define FG_RESOLVED_HEAD_LEN (FG_HDR_LEN + FG_SEED_PREFIX_LEN)
FG_MUST_CHECK ssize_t fg_resolved_head_encode(const struct fg_bands *b, const struct fg_resolved *r,
					      uint8_t *buf, size_t cap);
FG_MUST_CHECK ssize_t fg_resolved_decode(const struct fg_frame *f, uint16_t dst_layer,
					 const struct fg_seed_limits *lim, struct fg_resolved *out);

/* ---- 5. Seed status frame (fanogate's own layout, docs/wire-decisions.md)
 *
 * stream 0xFFFE, sequence = token_seq, flags 0x00 (never 0x80),
 * payload 32 bytes, little-endian (version 2; version 1 was 28 bytes and its
 * bitset meant the landed lines):
 *   0  u8  version (2)
 *   1  u8  outcome (enum fg_outcome)
 *   2  u8  line (0..6; 0xFF when not about one line)
 *   3  u8  sign (0 +, 1 -)
 *   4  u16 dst_layer
 *   6  u8  bitset: lines satisfied (bit i = line i): landed, plus the lines
 *              the layer's rule does not expect; FG_FANO_FULL_MASK (0x7f)
 *              exactly when the slot is fully resolved (what the fleet acts on)
 *   7  u8  expected: lines the rule expects
 *   8  u8  facts: bit0 ack, bit1 shadow_mode, bit2 fully_resolved,
 *              bit3 awaiting_resolution, bit4 degraded, bit5 audit_failed
 *              (the shadow audit's log failed closed: no verdict this
 *              frame feeds can be recorded), bit6 audit_off (no shadow
 *              audit runs); neither: the audit is recording (the JSON
 *              ack's "audit"); never both
 *   9  u8  line_state (enum fg_line_state of `line`)
 *   10 u16 reason (enum fg_reason for malformed, else 0)
 *   12 u32 bytes (contribution body bytes)
 *   16 u32 model_epoch
 *   20 u64 fingerprint (resolved seed's XXH3-64 when fully resolved, else 0)
 *   28 u8  landed: the lines whose contribution actually landed
 *   29 u8[3] reserved, 0 (refused otherwise)
 */
#define FG_STATUS_VERSION 2u
#define FG_FACT_ACK 0x01u
#define FG_FACT_SHADOW 0x02u
#define FG_FACT_RESOLVED 0x04u
#define FG_FACT_AWAITING 0x08u
#define FG_FACT_DEGRADED 0x10u
#define FG_FACT_AUDIT_FAILED 0x20u
#define FG_FACT_AUDIT_OFF 0x40u
struct fg_status {
	uint32_t token_seq;
	uint16_t dst_layer;
	uint8_t outcome;
	uint8_t line;
	uint8_t sign;
	uint8_t bitset;   /* satisfied lines (see above) */
	uint8_t expected;
	uint8_t landed;   /* lines landed */
	uint8_t facts;
	uint8_t line_state;
	uint16_t reason;
	uint32_t bytes;
	uint32_t model_epoch;
	uint64_t fingerprint;
};
/* Writes the whole frame (10 + 32 bytes). Refuses (-FG_R_UNENCODABLE) any
 * field outside its range: outcome >= FG_O__COUNT, line not 0..6/0xFF,
 * sign > 1, bit 7 in bitset/expected/landed, unknown fact bits (or both
 * audit facts), line_state > 3, reason >= FG_R__COUNT. */
FG_MUST_CHECK ssize_t fg_status_encode(const struct fg_status *s, uint8_t *buf, size_t cap);
/* Returns 32 (the payload length), or -FG_R_UNKNOWN_STREAM (not 0xFFFE),
 * -FG_R_BAD_FLAGS (flags != 0), -FG_R_STATUS_LENGTH, -FG_R_STATUS_VERSION,
 * -FG_R_STATUS_FIELD (the encoder's range rules). */
FG_MUST_CHECK ssize_t fg_status_decode(const struct fg_frame *f, struct fg_status *out);
/* What a status's facts say of the shadow audit, as the JSON ack's
 * "audit": "failed", "off" or "recording". */
const char *fg_status_audit_name(uint8_t facts);

/* ---- Fingerprint --------------------------------------------------------- */
/* XXH3-64, seed 0, over body bytes exactly as on the wire. */
uint64_t fg_fingerprint(const void *body, size_t len);

/* Little-endian / big-endian helpers used by every codec. */
static inline uint16_t fg_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }

static inline uint32_t fg_be24(const uint8_t *p) { return ((uint32_t)p[0] << 16) | ((uint32_t)p[1] << 8) | p[2]; }
static inline uint32_t fg_be32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint16_t fg_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t fg_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t fg_le64(const uint8_t *p) { return (uint64_t)fg_le32(p) | ((uint64_t)fg_le32(p + 4) << 32); }
/* one store of the swapped word: the byte-at-a-time form is not always
 * merged by the compiler (the dataplane's header templates patch fields
 * with it per datagram) */
static inline void fg_put_be16(uint8_t *p, uint16_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap16(v);
#endif
	memcpy(p, &v, 2);
}
static inline void fg_put_be24(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 16); p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)v; }
static inline void fg_put_be32(uint8_t *p, uint32_t v) { fg_put_be16(p, (uint16_t)(v >> 16)); fg_put_be16(p + 2, (uint16_t)v); }
static inline void fg_put_le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void fg_put_le32(uint8_t *p, uint32_t v) { fg_put_le16(p, (uint16_t)v); fg_put_le16(p + 2, (uint16_t)(v >> 16)); }
static inline void fg_put_le64(uint8_t *p, uint64_t v) { fg_put_le32(p, (uint32_t)v); fg_put_le32(p + 4, (uint32_t)(v >> 32)); }

/* fg_hdr_decode and fg_seed_decode_prefix, inline, for the dataplane's
 * first fragments; the seed body rules (fg_seed_body_check) and the flags
 * check (fg_seed_flags_check) shared with the other seed decoders. */
static inline ssize_t fg_hdr_decode_i(const uint8_t *buf, size_t len, enum fg_transport t, struct fg_hdr *out)
{
	if (len < FG_HDR_LEN)
		return t == FG_TRANSPORT_STREAM ? -FG_R_INCOMPLETE : -FG_R_SHORT_HEADER;
	/* flags and the u24 length are one big-endian word at byte 6 */
	uint32_t fl = fg_be32(buf + 6);
	out->stream_id = fg_be16(buf);
	out->sequence = fg_be32(buf + 2);
	out->flags = (uint8_t)(fl >> 24);
	out->length = fl & 0xFFFFFFu;
	return FG_HDR_LEN;
}
/* The body rules shared by seeds, full canonical reports and resolved
 * seeds (wire.md 3.1), in the order the reasons are reported:
 * empty, over the limit, not whole rows, not seq_len rows. */
static inline int fg_seed_body_check(uint32_t seq_len, uint64_t body_len, const struct fg_seed_limits *lim)
{
	uint64_t row = (uint64_t)lim->hidden * 4u;

	/* the common case passes every rule below at once (a body of
	 * seq_len rows is whole rows) */
	if (__builtin_expect(seq_len != 0 && seq_len <= lim->max_seq_len && row != 0 &&
				     body_len == (uint64_t)seq_len * row,
			     1))
		return 0;
	if (seq_len == 0)
		return -FG_R_SEED_EMPTY;
	if (seq_len > lim->max_seq_len)
		return -FG_R_SEED_TOO_LARGE;
	if (row == 0 || body_len % row)
		return -FG_R_SEED_BODY_ROWS;
	if (body_len != (uint64_t)seq_len * row)
		return -FG_R_SEED_BODY_LENGTH;
	return 0;
}
/* flags = (line << 4) | orientation; 0x80 makes line >= 8, also refused.
 * Returns the orientation (0 add, 1 subtract) read in mode m, or -reason. */
static inline int fg_seed_flags_check(uint8_t flags, uint8_t m)
{
	uint8_t o = flags & 0x0F;

	if ((flags >> 4) >= FG_LINES)
		return -FG_R_SEED_LINE;
	if (m == FG_ORIENT_SIGNED) {
		if (o == 0x01)
			return 0;
		if (o == 0x0F)
			return 1;
		return -FG_R_SEED_ORIENTATION;
	}
	if (o > 1)
		return -FG_R_SEED_ORIENTATION;
	return o;
}
static inline ssize_t fg_seed_decode_prefix_i(const struct fg_hdr *h, const uint8_t *prefix, size_t len,
					      uint16_t dst_layer, const struct fg_seed_limits *lim,
					      struct fg_seed *out)
{
	int r = fg_seed_flags_check(h->flags, lim->orientation);
	uint8_t orient = (uint8_t)r;

	if (r < 0)
		return r;
	if (h->length < FG_SEED_PREFIX_LEN || len < FG_SEED_PREFIX_LEN)
		return -FG_R_SEED_PREFIX;
	uint32_t seq_len = fg_le32(prefix + 4);
	r = fg_seed_body_check(seq_len, h->length - FG_SEED_PREFIX_LEN, lim);
	if (r < 0)
		return r;
	out->token_seq = h->sequence;
	out->dst_layer = dst_layer;
	out->line = h->flags >> 4;
	out->orientation = orient;
	out->start_pos = fg_le32(prefix);
	out->seq_len = seq_len;
	out->body = NULL;
	out->body_len = h->length - FG_SEED_PREFIX_LEN;
	return FG_HDR_LEN + FG_SEED_PREFIX_LEN;
}

/* The status frame's fixed layout (header and payload: FG_HDR_LEN +
 * FG_STATUS_PAYLOAD_LEN bytes at buf), unchecked: for the encoders that
 * have validated s (fg_status_encode, fg_status_frame in ingest.h) or
 * built it in range (fg_status_frame_of). On a little-endian host each
 * multi-byte field is one store (the put helpers write byte by byte). */
static inline void fg_status_write(uint8_t *buf, const struct fg_status *s)
{
	uint8_t *p = buf + FG_HDR_LEN;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint16_t stream = __builtin_bswap16(FG_STREAM_STATUS);
	const uint32_t seq = __builtin_bswap32(s->token_seq), len = __builtin_bswap32(FG_STATUS_PAYLOAD_LEN);
	const uint32_t landed = s->landed; /* with the 3 reserved bytes */
	__builtin_memcpy(buf, &stream, 2);
	__builtin_memcpy(buf + 2, &seq, 4);
	__builtin_memcpy(buf + 6, &len, 4); /* flags 0, u24 length */
	p[0] = FG_STATUS_VERSION;
	p[1] = s->outcome;
	p[2] = s->line;
	p[3] = s->sign;
	__builtin_memcpy(p + 4, &s->dst_layer, 2);
	p[6] = s->bitset;
	p[7] = s->expected;
	p[8] = s->facts;
	p[9] = s->line_state;
	__builtin_memcpy(p + 10, &s->reason, 2);
	__builtin_memcpy(p + 12, &s->bytes, 4);
	__builtin_memcpy(p + 16, &s->model_epoch, 4);
	__builtin_memcpy(p + 20, &s->fingerprint, 8);
	__builtin_memcpy(p + 28, &landed, 4);
#else
	fg_put_be16(buf, FG_STREAM_STATUS);
	fg_put_be32(buf + 2, s->token_seq);
	fg_put_be32(buf + 6, FG_STATUS_PAYLOAD_LEN); /* flags 0, u24 length */
	p[0] = FG_STATUS_VERSION;
	p[1] = s->outcome;
	p[2] = s->line;
	p[3] = s->sign;
	fg_put_le16(p + 4, s->dst_layer);
	p[6] = s->bitset;
	p[7] = s->expected;
	p[8] = s->facts;
	p[9] = s->line_state;
	fg_put_le16(p + 10, s->reason);
	fg_put_le32(p + 12, s->bytes);
	fg_put_le32(p + 16, s->model_epoch);
	fg_put_le64(p + 20, s->fingerprint);
	p[28] = s->landed;
	p[29] = p[30] = p[31] = 0;
#endif
}

static inline ssize_t fg_frag_decode_fast(const uint8_t *dgram, size_t len, struct fg_frag *out)
{
	/* the common case in one test: a chunk after the header, and
	 * index < total (so total > 0); the reasons in their order else */
	if (__builtin_expect(len > FG_FRAG_HDR_LEN && len - FG_FRAG_HDR_LEN <= UINT32_MAX && dgram[2] < dgram[3], 1)) {
		out->frame_id = fg_be16(dgram);
		out->index = dgram[2];
		out->total = dgram[3];
		out->chunk = dgram + FG_FRAG_HDR_LEN;
		out->chunk_len = (uint32_t)(len - FG_FRAG_HDR_LEN);
		return (ssize_t)len;
	}
	if (len < FG_FRAG_HDR_LEN)
		return -FG_R_FRAG_SHORT;
	if (dgram[3] == 0)
		return -FG_R_FRAG_TOTAL_ZERO;
	if (dgram[2] >= dgram[3])
		return -FG_R_FRAG_INDEX_RANGE;
	return -FG_R_FRAG_CHUNK_SIZE; /* no chunk, or more than 4 GiB */
}

/* Unchecked writers of the ACK datagram (wire.md 2.1), for encoders that
 * have sized and validated already: fg_ack_build and the dataplane's
 * direct encoder from a peer's pending list (dp_ack_encode). Each field is
 * one byte-swapped word store (fg_put_be* write byte by byte). */
#define FG_ACK_DGRAM_HEAD_LEN (FG_FRAG_HDR_LEN + FG_HDR_LEN)
static inline void fg_ack_store16(uint8_t *p, uint16_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap16(v);
#endif
	__builtin_memcpy(p, &v, 2);
}
static inline void fg_ack_store32(uint8_t *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	__builtin_memcpy(p, &v, 4);
}
static inline void fg_ack_store64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	__builtin_memcpy(p, &v, 8);
}
/* The 14 bytes in front of an ACK datagram's n entries: the fragment header
 * (frame_id, index 0, total 1: ACKs are never fragmented) and the ACK
 * frame's header (0xFFFF, sequence 0, flags 0x80, length 14 n; n * 14 <=
 * FG_LEN_MAX). */
static inline void fg_ack_dgram_head_put(uint8_t *buf, uint16_t frame_id, uint32_t n)
{
	static const uint8_t mid[8] = {0, 1, FG_STREAM_ACK >> 8, FG_STREAM_ACK & 0xFF, 0, 0, 0, 0};
	fg_ack_store16(buf, frame_id);
	__builtin_memcpy(buf + 2, mid, 8); /* index, total, stream_id, sequence */
	fg_ack_store32(buf + 10, (uint32_t)FG_FLAG_ACK << 24 | n * FG_ACK_ENTRY_LEN); /* flags, u24 length */
}
/* One 14-byte entry: stream_id, base_seq, bitmap_hi, bitmap_lo. */
static inline void fg_ack_entry_put(uint8_t *buf, uint16_t stream, uint32_t base, uint32_t hi, uint32_t lo)
{
	fg_ack_store16(buf, stream);
	fg_ack_store32(buf + 2, base);
	fg_ack_store64(buf + 6, (uint64_t)hi << 32 | lo);
}

#endif

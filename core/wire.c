/* wire.c - the fanogate wire codecs (contract: include/fg/wire.h, decisions:
 * docs/wire-decisions.md).
 *
 * Owns: stateless decode/encode of the aeon-flow header, frames, batches,
 * the UDP fragment header, ACK entries and ACK datagrams, stream band
 * classification, residual-seed, canonical, resolved-seed and status
 * payloads, the fingerprint, and the reason names.
 *
 * Who may call: anyone, any thread. No allocation, no logging, no state.
 *
 * Every decoder reads only inside [buf, buf + len): lengths are compared
 * before any byte is loaded, and arithmetic on wire lengths is done in 64
 * bits so a hostile seq_len * hidden cannot wrap. */
#include "fg/wire.h"

#include <assert.h>
#include <string.h>

#include <xxhash.h>

#include "fg/line.h"
#include "fg/slot.h"

/* Body floats travel as little-endian f32 and the core hands body bytes to
 * the reduction as floats without swapping: little-endian hosts only. */
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "fanogate assumes a little-endian host");
static_assert(sizeof(float) == 4, "f32 bodies");

static const char *const reason_names[FG_R__COUNT] = {
	[FG_R_OK] = "ok",
	[FG_R_INCOMPLETE] = "incomplete",
	[FG_R_SHORT_HEADER] = "short_header",
	[FG_R_TRUNCATED_FRAME] = "truncated_frame",
	[FG_R_FRAG_SHORT] = "frag_short",
	[FG_R_FRAG_TOTAL_ZERO] = "frag_total_zero",
	[FG_R_FRAG_INDEX_RANGE] = "frag_index_range",
	[FG_R_FRAG_TOTAL_CHANGED] = "frag_total_changed",
	[FG_R_FRAG_CHUNK_SIZE] = "frag_chunk_size",
	[FG_R_ACK_HEADER] = "ack_header",
	[FG_R_ACK_LENGTH] = "ack_length",
	[FG_R_UNKNOWN_STREAM] = "unknown_stream",
	[FG_R_UNKNOWN_LAYER] = "unknown_layer",
	[FG_R_SEED_PREFIX] = "seed_prefix",
	[FG_R_SEED_LINE] = "seed_line",
	[FG_R_SEED_ORIENTATION] = "seed_orientation",
	[FG_R_SEED_BODY_ROWS] = "seed_body_rows",
	[FG_R_SEED_BODY_LENGTH] = "seed_body_length",
	[FG_R_SEED_EMPTY] = "seed_empty",
	[FG_R_SEED_TOO_LARGE] = "seed_too_large",
	[FG_R_CANON_KIND] = "canonical_kind",
	[FG_R_CANON_DIGEST_LENGTH] = "canonical_digest_length",
	[FG_R_STATUS_LENGTH] = "status_length",
	[FG_R_STATUS_VERSION] = "status_version",
	[FG_R_NOSPACE] = "no_space",
	[FG_R_UNENCODABLE] = "unencodable",
	[FG_R_BAD_FLAGS] = "bad_flags",
	[FG_R_STATUS_FIELD] = "status_field",
	[FG_R_LAYER_MISMATCH] = "layer_mismatch",
	[FG_R_LAYER_NOT_SERVED] = "layer_not_served",
};

const char *fg_reason_name(int reason)
{
	/* -INT_MIN does not exist; anything that negative is unknown anyway */
	if (reason < 0)
		reason = reason < -FG_R__COUNT ? FG_R__COUNT : -reason;
	if (reason >= FG_R__COUNT || !reason_names[reason])
		return "unknown";
	return reason_names[reason];
}

uint64_t fg_fingerprint(const void *body, size_t len)
{
	/* XXH3 reads nothing for len 0, but a NULL pointer is still passed
	 * around by callers with empty bodies: give it a valid one. */
	return XXH3_64bits(body ? body : "", len);
}

/* ---- 1. header, frame, batch ------------------------------------------- */

ssize_t fg_hdr_decode(const uint8_t *buf, size_t len, enum fg_transport t, struct fg_hdr *out)
{
	return fg_hdr_decode_i(buf, len, t, out);
}

/* Unchecked writers for callers that have sized and validated already
 * (the public encoders are must-check, these are not). */
static void put_hdr(uint8_t *buf, uint16_t stream, uint32_t seq, uint8_t flags, uint32_t length)
{
	fg_put_be16(buf, stream);
	fg_put_be32(buf + 2, seq);
	buf[6] = flags;
	fg_put_be24(buf + 7, length);
}

static void put_ack_entry(uint8_t *buf, const struct fg_ack_entry *e)
{
	fg_ack_entry_put(buf, e->stream_id, e->base_seq, e->bitmap_hi, e->bitmap_lo);
}

static void get_ack_entry(const uint8_t *buf, struct fg_ack_entry *e)
{
	e->stream_id = fg_be16(buf);
	e->base_seq = fg_be32(buf + 2);
	e->bitmap_hi = fg_be32(buf + 6);
	e->bitmap_lo = fg_be32(buf + 10);
}

ssize_t fg_hdr_encode(const struct fg_hdr *h, uint8_t *buf, size_t cap)
{
	if (h->length > FG_LEN_MAX)
		return -FG_R_UNENCODABLE;
	if (cap < FG_HDR_LEN)
		return -FG_R_NOSPACE;
	put_hdr(buf, h->stream_id, h->sequence, h->flags, h->length);
	return FG_HDR_LEN;
}

ssize_t fg_frame_decode(const uint8_t *buf, size_t len, enum fg_transport t, struct fg_frame *out)
{
	struct fg_hdr h;
	ssize_t n = fg_hdr_decode(buf, len, t, &h);

	if (n < 0)
		return n;
	if (len - FG_HDR_LEN < h.length)
		return t == FG_TRANSPORT_STREAM ? -FG_R_INCOMPLETE : -FG_R_TRUNCATED_FRAME;
	out->hdr = h;
	out->payload = buf + FG_HDR_LEN;
	return (ssize_t)(FG_HDR_LEN + h.length);
}

ssize_t fg_frame_encode(const struct fg_hdr *h, const void *payload, uint8_t *buf, size_t cap)
{
	if (h->length > FG_LEN_MAX || (h->length && !payload))
		return -FG_R_UNENCODABLE;
	if (cap < FG_HDR_LEN + (size_t)h->length)
		return -FG_R_NOSPACE;
	put_hdr(buf, h->stream_id, h->sequence, h->flags, h->length);
	if (h->length)
		memcpy(buf + FG_HDR_LEN, payload, h->length);
	return (ssize_t)(FG_HDR_LEN + h->length);
}

int fg_batch_decode(const uint8_t *buf, size_t len, struct fg_frame *out, size_t max)
{
	size_t off = 0, n = 0;
	struct fg_frame f;

	/* Pass 1 validates the whole message: out is written only on success,
	 * and a bad tail condemns the frames before it (wire.md 1). */
	while (off < len) {
		ssize_t r = fg_frame_decode(buf + off, len - off, FG_TRANSPORT_MESSAGE, &f);
		if (r < 0) {
			/* 1..9 stray bytes after a complete frame are a truncated
			 * frame; a message of 1..9 bytes is a short header. */
			if (r == -FG_R_SHORT_HEADER && n > 0)
				return -FG_R_TRUNCATED_FRAME;
			return (int)r;
		}
		off += (size_t)r;
		if (++n > INT32_MAX)
			return -FG_R_UNENCODABLE; /* unreachable below 20 GiB */
	}
	for (size_t i = 0, o = 0; i < n && i < max; i++) {
		ssize_t r = fg_frame_decode(buf + o, len - o, FG_TRANSPORT_MESSAGE, &out[i]);
		o += (size_t)r; /* cannot fail: validated above */
	}
	return (int)n;
}

/* ---- 2.1 fragments and ACKs ------------------------------------------- */

ssize_t fg_frag_decode(const uint8_t *dgram, size_t len, struct fg_frag *out)
{
	return fg_frag_decode_fast(dgram, len, out);
}

ssize_t fg_frag_encode(const struct fg_frag *f, uint8_t *buf, size_t cap)
{
	if (f->total == 0 || f->index >= f->total || f->chunk_len == 0 || !f->chunk)
		return -FG_R_UNENCODABLE;
	if (cap < FG_FRAG_HDR_LEN + (size_t)f->chunk_len)
		return -FG_R_NOSPACE;
	fg_put_be16(buf, f->frame_id);
	buf[2] = f->index;
	buf[3] = f->total;
	memcpy(buf + FG_FRAG_HDR_LEN, f->chunk, f->chunk_len);
	return (ssize_t)(FG_FRAG_HDR_LEN + f->chunk_len);
}

int fg_frag_check(const struct fg_frag *f, uint32_t chunk)
{
	if (chunk == 0 || f->chunk_len == 0 || f->chunk_len > chunk)
		return -FG_R_FRAG_CHUNK_SIZE;
	if (f->index + 1u < f->total && f->chunk_len != chunk)
		return -FG_R_FRAG_CHUNK_SIZE;
	return 0;
}

uint32_t fg_frag_chunk_size(uint32_t mtu)
{
	/* the smallest frame (a bare header) must fit one datagram */
	if (mtu < FG_FRAG_HDR_LEN + FG_HDR_LEN)
		return 0;
	return mtu - FG_FRAG_HDR_LEN;
}

uint32_t fg_frag_count(uint32_t frame_len, uint32_t chunk)
{
	if (chunk == 0 || frame_len == 0)
		return 0;
	uint64_t n = ((uint64_t)frame_len + chunk - 1) / chunk;
	return n > FG_FRAG_MAX ? 0 : (uint32_t)n;
}

ssize_t fg_ack_entry_decode(const uint8_t *buf, size_t len, struct fg_ack_entry *out)
{
	if (len < FG_ACK_ENTRY_LEN)
		return -FG_R_ACK_LENGTH;
	get_ack_entry(buf, out);
	return FG_ACK_ENTRY_LEN;
}

ssize_t fg_ack_entry_encode(const struct fg_ack_entry *e, uint8_t *buf, size_t cap)
{
	if (cap < FG_ACK_ENTRY_LEN)
		return -FG_R_NOSPACE;
	put_ack_entry(buf, e);
	return FG_ACK_ENTRY_LEN;
}

bool fg_ack_entry_covers(const struct fg_ack_entry *e, uint32_t seq)
{
	/* distance modulo 2^32, as the fleet's sequence numbers wrap */
	uint32_t d = seq - e->base_seq;

	if (d < 32)
		return (e->bitmap_lo >> d) & 1u;
	if (d < 64)
		return (e->bitmap_hi >> (d - 32)) & 1u;
	return false;
}

int fg_ack_frame_decode(const struct fg_frame *f, struct fg_ack_entry *out, size_t max)
{
	if (f->hdr.stream_id != FG_STREAM_ACK || f->hdr.sequence != 0 || f->hdr.flags != FG_FLAG_ACK)
		return -FG_R_ACK_HEADER;
	if (f->hdr.length % FG_ACK_ENTRY_LEN)
		return -FG_R_ACK_LENGTH;
	uint32_t n = f->hdr.length / FG_ACK_ENTRY_LEN;
	for (uint32_t i = 0; i < n && i < max; i++)
		get_ack_entry(f->payload + (size_t)i * FG_ACK_ENTRY_LEN, &out[i]);
	return (int)n;
}

int fg_ack_build(const struct fg_ack_entry *e, size_t n, uint32_t mtu, uint16_t frame_id, uint8_t *buf,
		 size_t cap, uint32_t *lens, size_t max_dgrams)
{
	const uint32_t overhead = FG_ACK_DGRAM_HEAD_LEN;

	if (mtu < overhead + FG_ACK_ENTRY_LEN)
		return -FG_R_UNENCODABLE;
	/* entries per datagram; also bounded by the u24 length (never binding
	 * for a real MTU) */
	size_t per = (mtu - overhead) / FG_ACK_ENTRY_LEN;
	if (per > FG_LEN_MAX / FG_ACK_ENTRY_LEN)
		per = FG_LEN_MAX / FG_ACK_ENTRY_LEN;
	size_t dgrams = (n + per - 1) / per;
	if (dgrams > INT32_MAX)
		return -FG_R_UNENCODABLE;
	/* size everything before writing anything */
	if (dgrams > max_dgrams || cap < dgrams * overhead + n * FG_ACK_ENTRY_LEN)
		return -FG_R_NOSPACE;

	uint8_t *p = buf;
	for (size_t d = 0, i = 0; d < dgrams; d++) {
		size_t k = n - i < per ? n - i : per;
		fg_ack_dgram_head_put(p, (uint16_t)(frame_id + d), (uint32_t)k);
		uint8_t *q = p + overhead;
		for (size_t j = 0; j < k; j++, i++, q += FG_ACK_ENTRY_LEN)
			put_ack_entry(q, &e[i]);
		lens[d] = (uint32_t)(q - p);
		p = q;
	}
	return (int)dgrams;
}

/* ---- 3. stream bands ----------------------------------------------------- */

void fg_bands_default(struct fg_bands *b)
{
	b->seed_base = 0xAF60;
	b->canonical_base = 0xAF80;
	b->resolved_base = 0xAFA0;
	b->layer_bits = 5;
	b->n_layers = 32;
}

int fg_stream_classify(const struct fg_bands *b, uint16_t stream_id, enum fg_band *band, uint16_t *layer)
{
	return fg_stream_classify_n(b, stream_id, b->n_layers, band, layer);
}

int fg_stream_classify_at(const struct fg_bands *b, uint16_t stream_id, int32_t bound, enum fg_band *band,
			  uint16_t *layer)
{
	return fg_stream_classify_at_i(b, stream_id, bound, band, layer);
}

/* The stream id of layer on a band base, or -1 when it does not exist. */
static int32_t band_stream(const struct fg_bands *b, uint16_t base, uint16_t layer)
{
	if (b->layer_bits > 16 || layer >= (1u << b->layer_bits) || layer >= b->n_layers)
		return -1;
	uint32_t id = (uint32_t)base + layer;
	if (id >= FG_STREAM_STATUS)
		return -1;
	return (int32_t)id;
}

/* ---- 3.1 .. 3.3 seed-shaped payloads ------------------------------------- */

ssize_t fg_seed_decode(const struct fg_frame *f, uint16_t dst_layer, const struct fg_seed_limits *lim,
		       struct fg_seed *out)
{
	uint32_t len = f->hdr.length;
	int r = fg_seed_flags_check(f->hdr.flags, lim->orientation);
	uint8_t orient = (uint8_t)r;

	if (r < 0)
		return r;
	if (len < FG_SEED_PREFIX_LEN)
		return -FG_R_SEED_PREFIX;
	uint32_t seq_len = fg_le32(f->payload + 4);
	r = fg_seed_body_check(seq_len, len - FG_SEED_PREFIX_LEN, lim);
	if (r < 0)
		return r;
	out->token_seq = f->hdr.sequence;
	out->dst_layer = dst_layer;
	out->line = f->hdr.flags >> 4;
	out->orientation = orient;
	out->start_pos = fg_le32(f->payload);
	out->seq_len = seq_len;
	out->body = f->payload + FG_SEED_PREFIX_LEN;
	out->body_len = len - FG_SEED_PREFIX_LEN;
	return (ssize_t)len;
}

ssize_t fg_seed_decode_prefix(const struct fg_hdr *h, const uint8_t *prefix, size_t len, uint16_t dst_layer,
			      const struct fg_seed_limits *lim, struct fg_seed *out)
{
	return fg_seed_decode_prefix_i(h, prefix, len, dst_layer, lim, out);
}

/* Encoder side of fg_seed_body_check: without `hidden` the encoder can only insist
 * on a non-empty whole number of seq_len equal rows of f32. */
static bool body_encodable(uint32_t seq_len, const uint8_t *body, uint32_t body_len)
{
	if (seq_len == 0 || body_len == 0 || !body || body_len % 4)
		return false;
	if ((body_len / 4) % seq_len)
		return false;
	return (uint64_t)body_len + FG_SEED_PREFIX_LEN <= FG_LEN_MAX;
}

/* Header + 8-byte prefix + body; the caller has checked everything. */
static ssize_t seedlike_encode(uint16_t stream, uint32_t seq, uint8_t flags, uint32_t start_pos,
			       uint32_t seq_len, const uint8_t *body, uint32_t body_len, uint8_t *buf,
			       size_t cap)
{
	size_t total = FG_HDR_LEN + FG_SEED_PREFIX_LEN + (size_t)body_len;

	if (cap < total)
		return -FG_R_NOSPACE;
	put_hdr(buf, stream, seq, flags, FG_SEED_PREFIX_LEN + body_len);
	fg_put_le32(buf + FG_HDR_LEN, start_pos);
	fg_put_le32(buf + FG_HDR_LEN + 4, seq_len);
	if (body_len)
		memcpy(buf + FG_HDR_LEN + FG_SEED_PREFIX_LEN, body, body_len);
	return (ssize_t)total;
}

ssize_t fg_seed_encode(const struct fg_bands *b, const struct fg_seed *s, uint8_t *buf, size_t cap)
{
	int32_t stream = band_stream(b, b->seed_base, s->dst_layer);

	if (stream < 0 || s->line >= FG_LINES || s->orientation > 1 ||
	    !body_encodable(s->seq_len, s->body, s->body_len))
		return -FG_R_UNENCODABLE;
	return seedlike_encode((uint16_t)stream, s->token_seq, (uint8_t)(s->line << 4 | s->orientation),
			       s->start_pos, s->seq_len, s->body, s->body_len, buf, cap);
}

ssize_t fg_canon_decode(const struct fg_frame *f, uint16_t dst_layer, const struct fg_seed_limits *lim,
			struct fg_canon *out)
{
	/* The high nibble is not given a meaning by wire.md 3.2: ignored. */
	uint8_t kind = f->hdr.flags & 0x0F;
	uint32_t len = f->hdr.length;
	int r;

	if (kind != FG_CANON_FULL && kind != FG_CANON_DIGEST)
		return -FG_R_CANON_KIND;
	if (kind == FG_CANON_DIGEST && len != FG_DIGEST_PAYLOAD_LEN)
		return -FG_R_CANON_DIGEST_LENGTH;
	if (len < FG_SEED_PREFIX_LEN)
		return -FG_R_SEED_PREFIX;
	uint32_t seq_len = fg_le32(f->payload + 4);
	if (kind == FG_CANON_DIGEST) {
		/* shape rules that do not involve the body still apply */
		if (seq_len == 0)
			return -FG_R_SEED_EMPTY;
		if (seq_len > lim->max_seq_len)
			return -FG_R_SEED_TOO_LARGE;
	} else {
		r = fg_seed_body_check(seq_len, len - FG_SEED_PREFIX_LEN, lim);
		if (r < 0)
			return r;
	}
	out->token_seq = f->hdr.sequence;
	out->dst_layer = dst_layer;
	out->kind = (enum fg_canon_kind)kind;
	out->start_pos = fg_le32(f->payload);
	out->seq_len = seq_len;
	if (kind == FG_CANON_DIGEST) {
		out->body = NULL;
		out->body_len = 0;
		out->digest = fg_le64(f->payload + FG_SEED_PREFIX_LEN);
	} else {
		out->body = f->payload + FG_SEED_PREFIX_LEN;
		out->body_len = len - FG_SEED_PREFIX_LEN;
		out->digest = 0;
	}
	return (ssize_t)len;
}

ssize_t fg_canon_encode(const struct fg_bands *b, const struct fg_canon *c, uint8_t *buf, size_t cap)
{
	int32_t stream = band_stream(b, b->canonical_base, c->dst_layer);
	uint8_t d[8];

	if (stream < 0)
		return -FG_R_UNENCODABLE;
	if (c->kind == FG_CANON_DIGEST) {
		if (c->seq_len == 0)
			return -FG_R_UNENCODABLE;
		fg_put_le64(d, c->digest);
		return seedlike_encode((uint16_t)stream, c->token_seq, FG_CANON_DIGEST, c->start_pos,
				       c->seq_len, d, sizeof(d), buf, cap);
	}
	if (c->kind != FG_CANON_FULL || !body_encodable(c->seq_len, c->body, c->body_len))
		return -FG_R_UNENCODABLE;
	return seedlike_encode((uint16_t)stream, c->token_seq, FG_CANON_FULL, c->start_pos, c->seq_len,
			       c->body, c->body_len, buf, cap);
}

ssize_t fg_resolved_encode(const struct fg_bands *b, const struct fg_resolved *r, uint8_t *buf, size_t cap)
{
	int32_t stream = band_stream(b, b->resolved_base, r->dst_layer);

	if (stream < 0 || !body_encodable(r->seq_len, r->body, r->body_len))
		return -FG_R_UNENCODABLE;
	return seedlike_encode((uint16_t)stream, r->token_seq, FG_FLAG_FIN, r->start_pos, r->seq_len, r->body,
			       r->body_len, buf, cap);
}

ssize_t fg_resolved_head_encode(const struct fg_bands *b, const struct fg_resolved *r, uint8_t *buf, size_t cap)
{
	int32_t stream = band_stream(b, b->resolved_base, r->dst_layer);

	if (stream < 0 || !body_encodable(r->seq_len, r->body, r->body_len))
		return -FG_R_UNENCODABLE;
	if (cap < FG_RESOLVED_HEAD_LEN)
		return -FG_R_NOSPACE;
	put_hdr(buf, (uint16_t)stream, r->token_seq, FG_FLAG_FIN, FG_SEED_PREFIX_LEN + r->body_len);
	fg_put_le32(buf + FG_HDR_LEN, r->start_pos);
	fg_put_le32(buf + FG_HDR_LEN + 4, r->seq_len);
	return FG_RESOLVED_HEAD_LEN;
}

ssize_t fg_resolved_decode(const struct fg_frame *f, uint16_t dst_layer, const struct fg_seed_limits *lim,
			   struct fg_resolved *out)
{
	uint32_t len = f->hdr.length;

	if (f->hdr.flags != FG_FLAG_FIN)
		return -FG_R_BAD_FLAGS;
	if (len < FG_SEED_PREFIX_LEN)
		return -FG_R_SEED_PREFIX;
	uint32_t seq_len = fg_le32(f->payload + 4);
	int r = fg_seed_body_check(seq_len, len - FG_SEED_PREFIX_LEN, lim);
	if (r < 0)
		return r;
	out->token_seq = f->hdr.sequence;
	out->dst_layer = dst_layer;
	out->start_pos = fg_le32(f->payload);
	out->seq_len = seq_len;
	out->body = f->payload + FG_SEED_PREFIX_LEN;
	out->body_len = len - FG_SEED_PREFIX_LEN;
	return (ssize_t)len;
}

/* ---- 5. status frame ----------------------------------------------------- */

#define STATUS_FACTS_AUDIT (FG_FACT_AUDIT_FAILED | FG_FACT_AUDIT_OFF)
#define STATUS_FACTS_ALL                                                                                \
	(FG_FACT_ACK | FG_FACT_SHADOW | FG_FACT_RESOLVED | FG_FACT_AWAITING | FG_FACT_DEGRADED | STATUS_FACTS_AUDIT)

static bool status_fields_ok(const struct fg_status *s)
{
	return s->outcome < FG_O__COUNT && (s->line < FG_LINES || s->line == FG_LINE_NONE) && s->sign <= 1 &&
	       !(s->bitset & 0x80) && !(s->expected & 0x80) && !(s->landed & 0x80) &&
	       !(s->facts & ~STATUS_FACTS_ALL) && (s->facts & STATUS_FACTS_AUDIT) != STATUS_FACTS_AUDIT &&
	       s->line_state <= FG_LINE_DEGRADED && s->reason < FG_R__COUNT;
}

ssize_t fg_status_encode(const struct fg_status *s, uint8_t *buf, size_t cap)
{
	if (!status_fields_ok(s))
		return -FG_R_UNENCODABLE;
	if (cap < FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN)
		return -FG_R_NOSPACE;
	fg_status_write(buf, s);
	return FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN;
}

const char *fg_status_audit_name(uint8_t facts)
{
	return facts & FG_FACT_AUDIT_FAILED ? "failed" : facts & FG_FACT_AUDIT_OFF ? "off" : "recording";
}

ssize_t fg_status_decode(const struct fg_frame *f, struct fg_status *out)
{
	const uint8_t *p = f->payload;
	struct fg_status s;

	if (f->hdr.stream_id != FG_STREAM_STATUS)
		return -FG_R_UNKNOWN_STREAM;
	if (f->hdr.flags != 0)
		return -FG_R_BAD_FLAGS;
	if (f->hdr.length != FG_STATUS_PAYLOAD_LEN)
		return -FG_R_STATUS_LENGTH;
	if (p[0] != FG_STATUS_VERSION)
		return -FG_R_STATUS_VERSION;
	s.token_seq = f->hdr.sequence;
	s.outcome = p[1];
	s.line = p[2];
	s.sign = p[3];
	s.dst_layer = fg_le16(p + 4);
	s.bitset = p[6];
	s.expected = p[7];
	s.facts = p[8];
	s.line_state = p[9];
	s.reason = fg_le16(p + 10);
	s.bytes = fg_le32(p + 12);
	s.model_epoch = fg_le32(p + 16);
	s.fingerprint = fg_le64(p + 20);
	s.landed = p[28];
	if (p[29] | p[30] | p[31])
		return -FG_R_STATUS_FIELD;
	if (!status_fields_ok(&s))
		return -FG_R_STATUS_FIELD;
	*out = s;
	return FG_STATUS_PAYLOAD_LEN;
}

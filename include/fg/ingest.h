/* ingest.h - one decoded frame into one slot table, and the status to answer.
 *
 * Owns: the one path every ingress (DPDK UDP, kernel UDP, WebSocket, HTTPS)
 * takes from "a whole aeon-flow frame" to "slot outcome + seed status", so
 * the acceptance rules live in one place. Pure core; same single-writer
 * contract as slot.h (the caller owns the table).
 *
 * Canonical reports are decoded and validated here but not compared: they
 * are returned to the caller, who hands them to the shadow audit. */
#ifndef FG_INGEST_H
#define FG_INGEST_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#include "fg/common.h"
#include "fg/line.h"
#include "fg/slot.h"
#include "fg/wire.h"

/* Line facts the engine needs, packed so the control plane can publish them
 * with one atomic 64-bit store (boundary.h):
 *   bits  0..13  effective state of line i in bits 2i..2i+1 (enum fg_line_state)
 *   bits 16..47  model epoch
 *   bits 48..49  the shadow audit's state (enum fg_audit_fact), which every
 *                status carries (FG_FACT_AUDIT_FAILED, FG_FACT_AUDIT_OFF)
 */
typedef uint64_t fg_linefacts;
enum fg_audit_fact { FG_AUDIT_RECORDING = 0, FG_AUDIT_FAILED = 1, FG_AUDIT_OFF = 2 };
#define FG_LINEFACTS_AUDIT_SHIFT 48
static inline enum fg_line_state fg_linefacts_state(fg_linefacts f, unsigned line)
{
	return (enum fg_line_state)((f >> (2 * line)) & 3u);
}
static inline uint32_t fg_linefacts_epoch(fg_linefacts f) { return (uint32_t)(f >> 16); }
/* The lines' states and the epoch (the audit's bits 0: recording). */
fg_linefacts fg_linefacts_pack(const struct fg_lines *ls, uint32_t epoch);
/* f with the audit's state a. */
static inline fg_linefacts fg_linefacts_with_audit(fg_linefacts f, enum fg_audit_fact a)
{
	return (f & ~((fg_linefacts)3 << FG_LINEFACTS_AUDIT_SHIFT)) | (fg_linefacts)(a & 3u) << FG_LINEFACTS_AUDIT_SHIFT;
}
/* The status facts the audit's state in f gives: FG_FACT_AUDIT_FAILED,
 * FG_FACT_AUDIT_OFF or none (bits 48, 49 of f to bits 5, 6). */
static inline uint8_t fg_linefacts_audit_facts(fg_linefacts f)
{
	_Static_assert(FG_FACT_AUDIT_FAILED == 1u << 5 && FG_FACT_AUDIT_OFF == 1u << 6 &&
			       FG_AUDIT_FAILED == 1 && FG_AUDIT_OFF == 2,
		       "the audit's bits of an lf are its status facts, shifted");
	return (uint8_t)((f >> (FG_LINEFACTS_AUDIT_SHIFT - 5)) & (FG_FACT_AUDIT_FAILED | FG_FACT_AUDIT_OFF));
}

struct fg_ingest_ctx {
	const struct fg_bands *bands;
	const struct fg_seed_limits *limits;
	fg_linefacts lines; /* snapshot taken by the caller for this burst */
	/* The address the frame arrived on names its destination layer (a
	 * /layers/<L>/ path, a WebSocket /flow?layer=<L>, UDP port
	 * layer_ports + L): the slot's layer is bound_layer and the stream's
	 * layer nibble must agree (fg_stream_classify_at). false: the band
	 * offset is the layer. */
	bool layer_bound;
	uint16_t bound_layer;
	/* [cluster] layers (fg_cluster_cfg.serves, bit L = layer L): a frame
	 * for a layer this node does not serve is refused with
	 * FG_R_LAYER_NOT_SERVED (another node of the fleet serves it). NULL:
	 * every layer (one appliance, or layers = all). */
	const uint8_t *serves;
	/* The caller writes a decoded seed's status itself, from the seed and
	 * the slot result (fg_status_frame: the same bytes): for such a seed
	 * fg_ingest_classified leaves fg_ingest_result.status zeroed. Every
	 * other status (malformed, canonical, refused streams) is filled. */
	bool status_later;
};

/* Does ctx's node serve destination layer `layer`? Any thread. */
static inline bool fg_ingest_serves(const struct fg_ingest_ctx *ctx, uint16_t layer)
{
	return !ctx->serves || (layer < FG_MAX_LAYERS && ((ctx->serves[layer / 8] >> (layer % 8)) & 1u));
}

struct fg_ingest_result {
	enum fg_band band;         /* what the frame was */
	int reason;                /* fg_reason when malformed, else 0 */
	struct fg_slot_result slot;/* for seeds */
	struct fg_seed seed;       /* for seeds: decoded fields (body points into the frame) */
	struct fg_canon canon;     /* for canonical reports */
	struct fg_status status;   /* the status to send back (encode with fg_status_encode) */
};

/* Classify and decode f; place a seed into s (a seed of a DISABLED line is
 * refused with FG_O_LINE_DISABLED and not placed); build the status (facts
 * as documented in docs/slots.md section 7). Raises s->epoch to the epoch in
 * ctx->lines first, so the table's epoch never runs behind the published one.
 * Returns 0 (see out->slot.outcome / out->band) or -reason when the frame was
 * malformed, on an unknown stream, or on one of fanogate's own output
 * streams (resolved, status, ACK: -FG_R_UNKNOWN_STREAM with out->band set);
 * out->reason and out->status are still filled so the caller can answer and
 * count. out->band is meaningless when classification itself failed.
 * -EINVAL for NULL arguments. Owner thread of s only. */
FG_MUST_CHECK int fg_ingest_frame(struct fg_slots *s, const struct fg_ingest_ctx *ctx,
				  const struct fg_frame *f, uint64_t now_ns, struct fg_ingest_result *out);

/* A frame's stream classified once under ctx's address binding
 * (fg_stream_classify_at with ctx->layer_bound / bound_layer), so a caller
 * that needs the band and layer before ingest (a shard's owner, a hand-off)
 * does not classify again (fg_ingest_classified). */
struct fg_ingest_class {
	int rc;            /* 0, or -FG_R_UNKNOWN_STREAM / -FG_R_UNKNOWN_LAYER / -FG_R_LAYER_MISMATCH */
	enum fg_band band; /* rc == 0: the band; else 0 */
	uint16_t layer;    /* rc == 0: the slot's layer (the bound one when bound); else the bound layer, or 0 */
};
/* Classify stream_id under ctx's binding into *c. Reads only its
 * arguments (ctx->bands must be set); any thread. */
static inline void fg_ingest_classify(const struct fg_ingest_ctx *ctx, uint16_t stream_id, struct fg_ingest_class *c)
{
	int32_t bound = ctx->layer_bound ? (int32_t)ctx->bound_layer : FG_LAYER_UNBOUND;

	c->band = (enum fg_band)0;
	c->layer = 0;
	c->rc = fg_stream_classify_at_i(ctx->bands, stream_id, bound, &c->band, &c->layer);
	if (c->rc < 0) {
		c->band = (enum fg_band)0;
		/* the address's layer: what the sender sent it for (0 when unbound) */
		c->layer = ctx->layer_bound ? ctx->bound_layer : 0;
	}
}
/* fg_ingest_frame for a frame whose stream c classified
 * (fg_ingest_classify, same ctx binding): the stream is not classified
 * again. Same returns, same result; fg_ingest_frame is classify + this.
 * Owner thread of s only. */
FG_MUST_CHECK int fg_ingest_classified(struct fg_slots *s, const struct fg_ingest_ctx *ctx, const struct fg_frame *f,
				       const struct fg_ingest_class *c, uint64_t now_ns, struct fg_ingest_result *out);

/* The status bitset of wire.md section 5: the lines that are satisfied,
 * i.e. landed plus the lines the rule does not expect, except that a
 * poisoned slot satisfies none of its expected lines, and 0 when no rule is
 * known (expected == 0: a frame that never reached a slot). Equals
 * FG_FANO_FULL_MASK exactly when the slot is resolved. Any thread. */
uint8_t fg_status_bitset(uint8_t landed, uint8_t expected, enum fg_slot_state state);

/* Build a status for a slot result (also used by the fragment path).
 * seed may be NULL (then the status is about no line: line 0xFF, and
 * shadow_mode is set); reason is an fg_reason (either sign). Reads only its
 * arguments; any thread. */
void fg_status_from_result(const struct fg_ingest_ctx *ctx, const struct fg_seed *seed,
			   const struct fg_slot_result *r, int reason, struct fg_status *st);
/* Byte for byte what fg_status_encode writes (and refuses) for
 * fg_status_from_result(ctx, seed, r, 0): the status frame of a placed
 * contribution written straight into buf, its fields never stored apart.
 * Returns FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN, -FG_R_UNENCODABLE or
 * -FG_R_NOSPACE. Reads only its arguments; any thread. */
FG_MUST_CHECK ssize_t fg_status_frame(const struct fg_ingest_ctx *ctx, const struct fg_seed *seed,
				      const struct fg_slot_result *r, uint8_t *buf, size_t cap);
/* fg_status_frame's bytes for a status it never refuses: seed decoded by
 * the codec (fg_seed_decode, fg_seed_decode_prefix, or the refusals'
 * facts: line FG_LINE_NONE, sign 0) and r written by the slot engine, so
 * every field is in range by construction (asserted in debug builds, not
 * checked). Writes FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN bytes at buf. The
 * dataplane's status of a placed contribution. Reads only its arguments;
 * any thread. */
void fg_status_frame_of(const struct fg_ingest_ctx *ctx, const struct fg_seed *seed, const struct fg_slot_result *r,
			uint8_t *buf) __attribute__((nonnull));

/* The parts of fg_status_from_result and fg_status_frame_of that their
 * callers inline (names ending in _ are not for other callers). */
extern const uint16_t fg_line_spread[128];

static inline bool fg_status_outcome_is_ack_(enum fg_outcome o)
{
	return o == FG_O_ACCEPTED || o == FG_O_RESOLVED || o == FG_O_DUPLICATE;
}

/* Shadow and degraded facts for a line and the lines of its slot's rule,
 * by word operations on the packed states (2 bits per line, line i at bit
 * 2i; ACTIVE = 2, DEGRADED = 3): a status is built for every contribution,
 * and the per-line loop this replaced was a third of that. */
static inline uint8_t fg_status_line_facts_(fg_linefacts lf, unsigned line, uint8_t expected)
{
	uint32_t m = expected & FG_FANO_FULL_MASK;

	if (line < FG_LINES)
		m |= 1u << line;
	/* bit i of the line mask at bit 2i (the low bit of line i's state) */
	m = fg_line_spread[m];
	uint32_t lo = (uint32_t)lf & 0x1555u, hi = (uint32_t)(lf >> 1) & 0x1555u;
	uint32_t active = hi & ~lo, degraded = hi & lo;
	uint8_t facts = 0;
	if (m & ~active)
		facts |= FG_FACT_SHADOW;
	if (m & degraded)
		facts |= FG_FACT_DEGRADED;
	return facts;
}

/* fg_status_bitset, inlined into fg_status_build_. */
static inline uint8_t fg_status_bitset_(uint8_t landed, uint8_t expected, enum fg_slot_state state)
{
	uint8_t full = FG_FANO_FULL_MASK;

	if (!(expected & full))
		return 0;
	if (state == FG_SLOT_RESOLVED)
		return full;
	if (state == FG_SLOT_POISONED)
		return (uint8_t)(~expected & full);
	/* Open or gone: an expected line is satisfied once it landed. The
	 * slot resolves the moment the last one lands, so this is never
	 * FG_FANO_FULL_MASK here; say so rather than trust it. */
	uint8_t b = (uint8_t)((landed | ~expected) & full);
	return b == full ? (uint8_t)(full & ~expected) : b;
}

/* The status of fg_status_from_result, inlined into its users: every
 * fact computed into a local first (a store through a byte field would
 * force the inputs to be read again), fg_status_frame and
 * fg_status_frame_put writing them straight into the frame. */
static inline __attribute__((always_inline)) struct fg_status fg_status_build_(const struct fg_ingest_ctx *ctx,
									       const struct fg_seed *seed,
									       const struct fg_slot_result *r,
									       int reason)
{
	fg_linefacts lf = ctx ? ctx->lines : 0;
	uint32_t epoch = fg_linefacts_epoch(lf);
	uint32_t token_seq = 0, bytes = 0;
	uint16_t dst_layer = 0;
	uint8_t line = FG_LINE_NONE, sign = 0, line_state = 0;
	uint8_t landed = 0, bitset = 0, expected = 0, facts = fg_linefacts_audit_facts(lf);
	uint64_t fingerprint = 0;

	if (seed) {
		token_seq = seed->token_seq;
		dst_layer = seed->dst_layer;
		line = seed->line;
		sign = seed->orientation;
		bytes = seed->body_len;
		if (line < FG_LINES)
			line_state = (uint8_t)fg_linefacts_state(lf, line);
	}
	if (r) {
		enum fg_slot_state state = (enum fg_slot_state)r->state;
		landed = r->landed;
		expected = r->expected;
		bitset = fg_status_bitset_(landed, expected, state);
		if (r->epoch > epoch)
			epoch = r->epoch;
		if (fg_status_outcome_is_ack_(r->outcome))
			facts |= FG_FACT_ACK;
		facts |= seed ? fg_status_line_facts_(lf, line, expected) : FG_FACT_SHADOW;
		if (state == FG_SLOT_RESOLVED) {
			facts |= FG_FACT_RESOLVED;
			fingerprint = r->fingerprint;
		} else if (state == FG_SLOT_OPEN) {
			facts |= FG_FACT_AWAITING;
		}
	}
	return (struct fg_status){.token_seq = token_seq,
				  .dst_layer = dst_layer,
				  .outcome = (uint8_t)(r ? r->outcome : FG_O_MALFORMED),
				  .line = line,
				  .sign = sign,
				  .bitset = bitset,
				  .expected = expected,
				  .landed = landed,
				  .facts = facts,
				  .line_state = line_state,
				  .reason = (uint16_t)(reason < 0 ? -reason : reason),
				  .bytes = bytes,
				  .model_epoch = epoch,
				  .fingerprint = fingerprint};
}

/* fg_status_frame_of, inlined: for the dataplane, which writes a status
 * per placed contribution straight into its datagram (dp_tx.c). */
static inline __attribute__((always_inline)) void fg_status_frame_put(const struct fg_ingest_ctx *ctx,
									 const struct fg_seed *seed,
									 const struct fg_slot_result *r, uint8_t *buf)
{
	/* nonnull: fg_status_build_'s NULL cases fold away */
	const struct fg_status s = fg_status_build_(ctx, seed, r, 0);
	/* in range by construction (a decoded seed, an engine result): what
	 * fg_status_frame checks, asserted */
	assert(s.outcome < FG_O__COUNT && (uint8_t)(s.line + 1u) <= FG_LINES && s.sign <= 1 &&
	       !((s.expected | s.landed) & 0x80));
	fg_status_write(buf, &s);
}

/* A status's facts that follow from the published line facts alone (the
 * states of the lines, the epoch): made once for each lf a caller sees
 * (fg_status_prep_make), then read by every status it builds under that
 * lf (fg_status_payload_prep) instead of worked out from the packed states
 * again. A caller keeps one and remakes it when ctx->lines changes. */
#define FG_STATUS_PREP_MADE (1ull << 63) /* beyond every fact an lf packs */
struct fg_status_prep {
	fg_linefacts key; /* lf | FG_STATUS_PREP_MADE; 0 (all zero): made for none */
	uint32_t epoch;   /* fg_linefacts_epoch(lf) */
	uint8_t inactive; /* bit i: line i is not ACTIVE */
	uint8_t degraded; /* bit i: line i is DEGRADED */
	uint8_t state[8]; /* line i's state (i < FG_LINES); [7]: 0, the state of no line */
	/* [m] for a mask m of lines: FG_FACT_SHADOW when one of them is not
	 * ACTIVE, FG_FACT_DEGRADED when one is DEGRADED, and the audit's
	 * facts (fg_linefacts_audit_facts) for every m */
	uint8_t line_facts[FG_FANO_FULL_MASK + 1];
};
/* Make *p for lf. Reads only its arguments; any thread. */
void fg_status_prep_make(struct fg_status_prep *p, fg_linefacts lf) __attribute__((nonnull));
/* Whether *p was made for lf. */
static inline bool fg_status_prep_is(const struct fg_status_prep *p, fg_linefacts lf)
{
	return p->key == (lf | FG_STATUS_PREP_MADE);
}

/* The payload (FG_STATUS_PAYLOAD_LEN bytes at q) of fg_status_frame_of's
 * frame (seed and r as it takes them), the line facts from p (made for
 * ctx->lines): written a word at a time, every fact computed in
 * registers. Inline: the dataplane writes a status per placed
 * contribution straight into its datagram (dp_tx.c), the frame header
 * from a prepared copy. */
static inline __attribute__((always_inline)) void fg_status_payload_prep(const struct fg_status_prep *p,
									    const struct fg_seed *seed,
									    const struct fg_slot_result *r, uint8_t *q)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint32_t full = FG_FANO_FULL_MASK;
	const unsigned line = seed->line, li = line < FG_LINES ? line : 7u;
	const enum fg_slot_state state = (enum fg_slot_state)r->state;
	const uint32_t outcome = (uint32_t)r->outcome, landed = r->landed, expected = r->expected;
	/* the contributing line and the rule's lines (no line: bit 7, masked
	 * off): their facts from p; the outcome's (fg_status_outcome_is_ack_)
	 * and the state's (RESOLVED, or AWAITING for an open slot) from
	 * constant bit tables, byte i of the state's for state i */
	const uint32_t m = (expected | 1u << li) & full;
	_Static_assert(FG_FACT_ACK == 1u && FG_O__COUNT <= 32 && FG_SLOT_POISONED < 8, "the facts' tables");
	const uint32_t ack_outcomes = 1u << FG_O_ACCEPTED | 1u << FG_O_RESOLVED | 1u << FG_O_DUPLICATE;
	const uint64_t state_facts = (uint64_t)FG_FACT_RESOLVED << (8 * FG_SLOT_RESOLVED) |
				     (uint64_t)FG_FACT_AWAITING << (8 * FG_SLOT_OPEN);
	const uint32_t facts = p->line_facts[m] | ((ack_outcomes >> (outcome & 31u)) & FG_FACT_ACK) |
			       (uint32_t)(state_facts >> (8u * ((unsigned)state & 7u)) & 0xFFu);
	const uint32_t bitset = fg_status_bitset_((uint8_t)landed, (uint8_t)expected, state);
	const uint32_t epoch = r->epoch > p->epoch ? r->epoch : p->epoch;
	const uint64_t fingerprint = state == FG_SLOT_RESOLVED ? r->fingerprint : 0;
	assert(outcome < FG_O__COUNT && (uint8_t)(line + 1u) <= FG_LINES && seed->orientation <= 1 &&
	       !((expected | landed) & 0x80));
	/* fg_status_write's layout (wire.md 5): version, outcome, line,
	 * sign, dst_layer, bitset, expected | facts, line_state, reason (0),
	 * bytes | epoch | fingerprint | landed and the 3 reserved bytes */
	/* dst_layer, line and orientation lie in that order in one word of
	 * the seed: rotated by 16, they are the frame's line, sign and
	 * dst_layer bytes */
	_Static_assert(offsetof(struct fg_seed, line) == offsetof(struct fg_seed, dst_layer) + 2 &&
			       offsetof(struct fg_seed, orientation) == offsetof(struct fg_seed, dst_layer) + 3,
		       "fg_seed's dst_layer, line, orientation");
	uint32_t lso;
	__builtin_memcpy(&lso, &seed->dst_layer, 4);
	lso = lso >> 16 | lso << 16;
	const uint64_t w0 = FG_STATUS_VERSION | outcome << 8 | (uint64_t)lso << 16 | (uint64_t)bitset << 48 |
			    (uint64_t)expected << 56;
	const uint64_t w1 = facts | (uint32_t)p->state[li] << 8 | (uint64_t)seed->body_len << 32;
	__builtin_memcpy(q, &w0, 8);
	__builtin_memcpy(q + 8, &w1, 8);
	__builtin_memcpy(q + 16, &epoch, 4);
	__builtin_memcpy(q + 20, &fingerprint, 8);
	__builtin_memcpy(q + 28, &landed, 4);
#else
	uint8_t f[FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN];
	struct fg_ingest_ctx ctx = {.lines = p->key & ~FG_STATUS_PREP_MADE};
	fg_status_frame_put(&ctx, seed, r, f);
	__builtin_memcpy(q, f + FG_HDR_LEN, FG_STATUS_PAYLOAD_LEN);
#endif
}

/* fg_status_frame_of's bytes (FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN at
 * buf), the line facts from p (made for ctx->lines): the frame header,
 * then fg_status_payload_prep. */
static inline __attribute__((always_inline)) void fg_status_frame_prep(const struct fg_status_prep *p,
									  const struct fg_seed *seed,
									  const struct fg_slot_result *r, uint8_t *buf)
{
	fg_put_be16(buf, FG_STREAM_STATUS);
	fg_put_be32(buf + 2, seed->token_seq);
	fg_put_be32(buf + 6, FG_STATUS_PAYLOAD_LEN); /* flags 0, u24 length */
	fg_status_payload_prep(p, seed, r, buf + FG_HDR_LEN);
}

#endif

/* ingest.c - one whole aeon-flow frame into one slot table, and the seed
 * status to answer with.
 *
 * Who may call: the thread that owns the slot table (slot.h's single-writer
 * contract); fg_status_from_result, fg_status_frame, fg_status_frame_of,
 * fg_status_prep_make and fg_linefacts_pack read only their arguments and
 * may be called from any thread.
 *
 * The status facts, and why they are computed this way (wire.md section 5:
 * the dispatcher skips the canonical hop only when
 * shadow_mode == false && fully_resolved == true && awaiting_resolution != true):
 *   ack                 the contribution is held by the slot: ACCEPTED,
 *                       RESOLVED, DUPLICATE (and PARTIAL on the fragment path
 *                       is not answered); canonical reports that decoded.
 *   shadow_mode         the contributing line, or any line the slot's rule
 *                       expects, is not ACTIVE. The spec's wording is "the
 *                       line is in shadow"; we extend it to every non-active
 *                       state (DEGRADED, DISABLED) and to the slot's other
 *                       lines because a resolved seed is only as trusted as
 *                       its least trusted line. Never says false unless the
 *                       dispatcher may really skip.
 *   bitset              the lines satisfied (fg_status_bitset): landed plus
 *                       the lines the rule does not expect, 0x7f exactly
 *                       when fully resolved, because the fleet's coordinator
 *                       skips the canonical hop only on bitset == 0x7f
 *                       (wire.md 5); `landed` carries the landed lines.
 *   fully_resolved      the slot is RESOLVED after this call.
 *   awaiting_resolution the slot is OPEN after this call.
 *   degraded            the contributing line or an expected line is DEGRADED.
 *   audit_failed/_off   the shadow audit's state as published (bits 48..49
 *                       of the line facts), on every status: its log failed
 *                       closed / no audit runs. The JSON ack's "audit".
 *   fingerprint         the resolved seed's XXH3-64 when fully_resolved.
 *   model_epoch         the table's epoch, which fg_ingest_frame first raises
 *                       to the control plane's published epoch (linefacts):
 *                       the later of the two, so a conflict seen here shows
 *                       at once, before the control plane has heard of it. */
#include <errno.h>
#include <string.h>

#include "fg/ingest.h"

fg_linefacts fg_linefacts_pack(const struct fg_lines *ls, uint32_t epoch)
{
	fg_linefacts f = (fg_linefacts)epoch << 16;

	for (unsigned i = 0; i < FG_LINES; i++)
		f |= (fg_linefacts)(fg_line_effective(ls, i) & 3u) << (2 * i);
	return f;
}

/* Bit i of a 7-line mask moved to bit 2i: fg_status_line_facts_'s
 * index of the packed states (ingest.h). */
#define SPREAD2(m) (((m) & 1u) | ((m) & 2u) << 1 | ((m) & 4u) << 2 | ((m) & 8u) << 3)
#define SPREAD7(m) (uint16_t)(SPREAD2(m) | ((m) & 16u) << 4 | ((m) & 32u) << 5 | ((m) & 64u) << 6)
#define SPREAD_8(b) SPREAD7(b), SPREAD7(b + 1), SPREAD7(b + 2), SPREAD7(b + 3), SPREAD7(b + 4), SPREAD7(b + 5), \
		    SPREAD7(b + 6), SPREAD7(b + 7)
const uint16_t fg_line_spread[128] = {SPREAD_8(0),  SPREAD_8(8),  SPREAD_8(16), SPREAD_8(24),
					  SPREAD_8(32), SPREAD_8(40), SPREAD_8(48), SPREAD_8(56),
					  SPREAD_8(64), SPREAD_8(72), SPREAD_8(80), SPREAD_8(88),
					  SPREAD_8(96), SPREAD_8(104), SPREAD_8(112), SPREAD_8(120)};

uint8_t fg_status_bitset(uint8_t landed, uint8_t expected, enum fg_slot_state state)
{
	return fg_status_bitset_(landed, expected, state);
}

void fg_status_from_result(const struct fg_ingest_ctx *ctx, const struct fg_seed *seed,
			   const struct fg_slot_result *r, int reason, struct fg_status *st)
{
	*st = fg_status_build_(ctx, seed, r, reason);
}

ssize_t fg_status_frame(const struct fg_ingest_ctx *ctx, const struct fg_seed *seed,
			const struct fg_slot_result *r, uint8_t *buf, size_t cap)
{
	const struct fg_status s = fg_status_build_(ctx, seed, r, 0);
	/* fg_status_encode's range rules, for the fields that come from the
	 * arguments as they are (the others are in range by construction:
	 * bitset, facts, line_state, reason 0) */
	if (s.outcome >= FG_O__COUNT || (uint8_t)(s.line + 1u) > FG_LINES || s.sign > 1 ||
	    ((s.expected | s.landed) & 0x80))
		return -FG_R_UNENCODABLE;
	if (cap < FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN)
		return -FG_R_NOSPACE;
	fg_status_write(buf, &s);
	return FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN;
}

void fg_status_frame_of(const struct fg_ingest_ctx *ctx, const struct fg_seed *seed, const struct fg_slot_result *r,
			uint8_t *buf)
{
	fg_status_frame_put(ctx, seed, r, buf);
}

void fg_status_prep_make(struct fg_status_prep *p, fg_linefacts lf)
{
	*p = (struct fg_status_prep){.key = lf | FG_STATUS_PREP_MADE, .epoch = fg_linefacts_epoch(lf)};
	for (unsigned i = 0; i < FG_LINES; i++) {
		enum fg_line_state st = fg_linefacts_state(lf, i);
		p->state[i] = (uint8_t)st;
		if (st != FG_LINE_ACTIVE)
			p->inactive |= (uint8_t)(1u << i);
		if (st == FG_LINE_DEGRADED)
			p->degraded |= (uint8_t)(1u << i);
	}
	const uint8_t audit = fg_linefacts_audit_facts(lf);
	for (unsigned m = 0; m <= FG_FANO_FULL_MASK; m++)
		p->line_facts[m] = (uint8_t)((m & p->inactive ? FG_FACT_SHADOW : 0u) |
					     (m & p->degraded ? FG_FACT_DEGRADED : 0u) | audit);
}

/* Status for a frame that never reached a slot (bad stream, bad payload). */
static void status_malformed(const struct fg_ingest_ctx *ctx, const struct fg_frame *f, uint16_t layer,
			     int reason, struct fg_ingest_result *out)
{
	struct fg_slot_result r = { .outcome = FG_O_MALFORMED, .slot = UINT32_MAX };

	out->reason = reason < 0 ? -reason : reason;
	fg_status_from_result(ctx, NULL, &r, out->reason, &out->status);
	out->status.token_seq = f->hdr.sequence;
	out->status.dst_layer = layer;
	out->status.facts = FG_FACT_SHADOW; /* never a reason to skip the canonical hop */
	out->slot = r;
}

/* Canonical reports are not placed; the status says what the slot of the
 * same key looks like now, so a canonical sender can see a resolution. */
static void status_canonical(struct fg_slots *s, const struct fg_ingest_ctx *ctx, struct fg_ingest_result *out)
{
	struct fg_slot_info info;
	struct fg_slot_result r = { .outcome = FG_O_ACCEPTED, .slot = UINT32_MAX, .epoch = s->epoch };

	if (fg_slot_lookup(s, out->canon.token_seq, out->canon.dst_layer, &info) == 0) {
		r.landed = info.landed;
		r.expected = info.expected;
		r.state = (uint8_t)info.state;
		r.fingerprint = info.fingerprint;
	}
	out->slot = r;
	fg_status_from_result(ctx, NULL, &r, 0, &out->status);
	out->status.token_seq = out->canon.token_seq;
	out->status.dst_layer = out->canon.dst_layer;
	out->status.bytes = out->canon.body_len;
}

int fg_ingest_frame(struct fg_slots *s, const struct fg_ingest_ctx *ctx, const struct fg_frame *f, uint64_t now_ns,
		    struct fg_ingest_result *out)
{
	struct fg_ingest_class c;

	if (!ctx || !ctx->bands || !f)
		return -EINVAL;
	fg_ingest_classify(ctx, f->hdr.stream_id, &c);
	return fg_ingest_classified(s, ctx, f, &c, now_ns, out);
}

int fg_ingest_classified(struct fg_slots *s, const struct fg_ingest_ctx *ctx, const struct fg_frame *f,
			 const struct fg_ingest_class *c, uint64_t now_ns, struct fg_ingest_result *out)
{
	uint16_t layer = c ? c->layer : 0;
	ssize_t rc;
	int crc;

	if (!s || !ctx || !ctx->bands || !ctx->limits || !f || !c || !out)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->slot.slot = UINT32_MAX;
	/* The table's epoch never runs behind the published one. */
	if ((int32_t)(fg_linefacts_epoch(ctx->lines) - s->epoch) > 0)
		s->epoch = fg_linefacts_epoch(ctx->lines);

	if (c->rc < 0) {
		status_malformed(ctx, f, layer, c->rc, out);
		return -out->reason;
	}
	out->band = c->band;
	if ((out->band == FG_BAND_SEED || out->band == FG_BAND_CANONICAL) && !fg_ingest_serves(ctx, layer)) {
		/* [cluster] layers: another node of the fleet serves it */
		status_malformed(ctx, f, layer, -FG_R_LAYER_NOT_SERVED, out);
		return -out->reason;
	}
	if (out->band == FG_BAND_CANONICAL) {
		rc = fg_canon_decode(f, layer, ctx->limits, &out->canon);
		if (rc < 0) {
			status_malformed(ctx, f, layer, (int)rc, out);
			return -out->reason;
		}
		status_canonical(s, ctx, out);
		return 0;
	}
	if (out->band != FG_BAND_SEED) {
		/* Resolved, status and ACK streams are fanogate's own output;
		 * they never enter a slot. */
		status_malformed(ctx, f, layer, -FG_R_UNKNOWN_STREAM, out);
		return -out->reason;
	}
	rc = fg_seed_decode(f, layer, ctx->limits, &out->seed);
	if (rc < 0) {
		status_malformed(ctx, f, layer, (int)rc, out);
		return -out->reason;
	}
	if (fg_linefacts_state(ctx->lines, out->seed.line) == FG_LINE_DISABLED) {
		out->slot.outcome = FG_O_LINE_DISABLED;
		out->slot.bytes = out->seed.body_len;
		out->slot.epoch = s->epoch;
		if (out->seed.dst_layer < s->cfg.n_layers)
			out->slot.expected = s->cfg.rules[out->seed.dst_layer].mask;
	} else {
		crc = fg_slot_put(s, &out->seed, now_ns, &out->slot);
		if (crc < 0)
			return crc;
	}
	if (!ctx->status_later)
		fg_status_from_result(ctx, &out->seed, &out->slot, 0, &out->status);
	return 0;
}

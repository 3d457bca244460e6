/* shadow.h - shadow-mode comparison of jumped seeds with the canonical chain
 * (pure core: no I/O, no logging, no clock of its own).
 *
 * Owns: the pending comparisons keyed by (token_seq, dst_layer) in a bounded
 * direct-mapped table in caller memory, the sampling decision, the
 * fingerprint comparison, the elementwise residual figures (differing
 * elements, largest absolute difference, largest ULP distance) and the
 * mapping of a verdict onto the line state machine (fg_line_apply).
 *
 * Who may call: the one control-plane thread that owns the line table;
 * SINGLE WRITER, nothing here is atomic. control/audit/cp_shadow.c glues it
 * to the audit log and the alert runner.
 *
 * A comparison needs two halves that arrive in either order: the resolved
 * seed (fg_shadow_seed, from the slot engine) and the canonical report
 * (fg_shadow_canon, from the fleet). The first half waits in the table with
 * a deadline; the second half produces the verdict and frees the entry.
 *
 * Lead (fg/lead.h): each half keeps its times (the seed: resolved and
 * delivered; the report: arrived), so the verdict says how far ahead of
 * the canonical chain the seed was, whichever half came first:
 * v.lead_ns = arrived - resolved, v.lead_deliver_ns = arrived - delivered.
 *
 * Invariants (per entry):
 *  1. state EMPTY: nothing else is meaningful.
 *  2. state SEED: the resolved seed's fingerprint, shape and lines are kept;
 *     its body is kept too when it fits body_max (has_body).
 *  3. state CANON: the canonical report's kind, shape and fingerprint (digest
 *     as sent, or fg_fingerprint of the full body) are kept; a full body
 *     that fits body_max is kept (has_body).
 *  4. index = (token_seq * n_layers + dst_layer) mod capacity; a new key
 *     whose index holds another key evicts it (counted in `evicted`),
 *     except that a canonical half (the pending table is shared fairly by
 *     source) never evicts a waiting seed half
 *     (`canon_refused_seed`), nor a canonical half of another source that
 *     holds no more than its quota, capacity / FG_SHADOW_SHARE entries
 *     (`canon_refused_share`): a flood can push out only its own halves
 *     and those of sources over their quota. A refused half is dropped,
 *     counted, never judged.
 *  6. src_live[k] = canonical halves on the table whose source is k.
 *  5. every non-EMPTY entry is on one doubly linked list (head..tail, links
 *     in the entries) ordered by deadline, oldest first; EMPTY entries are
 *     on no list. Insertion walks back from the tail past later deadlines
 *     (O(1) when now_ns is monotonic, as the daemon's clock is), release is
 *     O(1), and fg_shadow_expire pops from the head, so expiring k entries
 *     costs O(k + 1) per call instead of a sweep of the table.
 *
 * Sampling: every seed that reduces a line in shadow is compared; a seed
 * whose lines are all active is compared when
 *   XXH3-64("token_seq(le32) dst_layer(le16)") >> 32  <  sample * 2^32,
 * a deterministic choice (no RNG state, the same seed is always in or out),
 * so the fleet and the tests can predict which keys are audited. A canonical
 * report that finds its seed already there is compared regardless.
 *
 * NaN and signed zero in the residual figures: elements are compared by
 * their bits, so +0 vs -0 counts as a differing element (abs 0, ULP 0) and
 * two NaNs with the same bits are equal. A differing element where either
 * side is NaN is counted in count and nan_count but left out of max_abs and
 * max_ulp (a distance to NaN means nothing). ULP distance maps each f32 to
 * a signed integer ordered like the reals (negative values mirrored below
 * zero, both zeros at 0), so a difference across zero is the sum of the
 * two sides' distances to zero, and +-inf are one step past the largest
 * finite value. */
#ifndef FG_SHADOW_H
#define FG_SHADOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/audit.h"
#include "fg/common.h"
#include "fg/lead.h"
#include "fg/line.h"
#include "fg/slot.h"
#include "fg/wire.h"

struct fg_shadow_cfg {
	uint32_t capacity;  /* entries, >= 1 */
	uint32_t body_max;  /* bytes of body kept per entry (hidden * max_seq_len * 4) */
	uint16_t n_layers;  /* >= 1 */
	uint64_t expiry_ns; /* how long half a comparison waits for the other half */
	double sample;      /* fraction of all-active seeds audited, 0..1 */
};

/* Source classes of canonical halves (fg_shadow_canon_from); 0 = unnamed. */
#define FG_SHADOW_SOURCES 64u
/* A source's quota of canonical halves: capacity / FG_SHADOW_SHARE (>= 1). */
#define FG_SHADOW_SHARE 8u

struct fg_shadow {
	struct fg_shadow_cfg cfg;
	uint8_t *mem;
	size_t stride;
	uint64_t sample_threshold; /* of 2^32 */
	uint32_t live;             /* entries not EMPTY */
	uint32_t head, tail;       /* deadline list (invariant 5), FG_SHADOW_NIL when empty */
	/* accounting, monotonic */
	uint64_t seeds, canons, sampled_out, sampled_in;
	uint64_t clean, divergent, unmatched, evicted, duplicate_half;
	uint64_t expire_visits;    /* entries fg_shadow_expire looked at (work counter for tests/bench) */
	uint64_t canon_refused_seed, canon_refused_share; /* invariant 4: canonical halves not taken */
	uint32_t src_live[FG_SHADOW_SOURCES];             /* invariant 6 */
};

#define FG_SHADOW_NIL UINT32_MAX

/* When a resolved seed's facts were taken (CLOCK_MONOTONIC ns, the clock of
 * the canonical arrival times; 0 = unknown). */
struct fg_seed_times {
	uint64_t resolved_ns;  /* the contribution that resolved the slot was taken */
	uint64_t delivered_ns; /* the seed was handed to the next worker's consumer; 0 = not delivered */
	uint8_t ingress;       /* FG_AUDIT_INGRESS_* of the resolving contribution, FG_AUDIT_UNKNOWN */
};

/* One comparison's outcome; the glue audits it (struct fg_audit_verdict). */
struct fg_shadow_verdict {
	struct fg_audit_verdict v; /* epoch is left 0: the caller knows the model epoch */
	uint8_t shadow_lines;      /* lines of v.lines that were in shadow at seed time */
	bool seed_side;            /* UNMATCHED only: true when the seed waited alone */
};

/* A source's quota of canonical halves on sh (invariant 4). */
static inline uint32_t fg_shadow_quota(const struct fg_shadow *sh)
{
	uint32_t q = sh->cfg.capacity / FG_SHADOW_SHARE;
	return q ? q : 1;
}

/* Bytes of caller memory for a table (8-byte aligned). 0 on a bad cfg. */
size_t fg_shadow_mem_size(const struct fg_shadow_cfg *cfg);
/* Initialise in mem[0..len), 8-byte aligned. 0, -EINVAL (cfg) or -ENOSPC. */
FG_MUST_CHECK int fg_shadow_init(struct fg_shadow *sh, void *mem, size_t len, const struct fg_shadow_cfg *cfg);

/* True when a seed reducing `lines` must be compared: a line of it is in
 * shadow in ls, or the deterministic sample picks (token_seq, layer). */
bool fg_shadow_wants(const struct fg_shadow *sh, const struct fg_lines *ls, uint32_t token_seq,
		     uint16_t layer, uint8_t lines, bool *sampled);

/* A slot resolved. v->body is read (copied when it must wait); ls decides
 * shadow versus sampling. v->body NULL with v->body_len set: the body did
 * not reach the control plane (an empty lane pool, boundary.h); the verdict
 * then rests on the fingerprint and the shape, with no diff. Returns 1 with *out filled when the canonical
 * report was already there (a verdict), 0 when the seed now waits or was not
 * sampled, -EINVAL on a bad view. */
FG_MUST_CHECK int fg_shadow_seed(struct fg_shadow *sh, const struct fg_seed_view *v, const struct fg_lines *ls,
				 uint64_t now_ns, struct fg_shadow_verdict *out);
/* The same with the seed's times (t NULL: resolved at now_ns, delivery and
 * ingress unknown, as fg_shadow_seed). */
FG_MUST_CHECK int fg_shadow_seed_at(struct fg_shadow *sh, const struct fg_seed_view *v, const struct fg_seed_times *t,
				    const struct fg_lines *ls, uint64_t now_ns, struct fg_shadow_verdict *out);

/* True when a resolved seed for the key waits for its canonical report. */
bool fg_shadow_has_seed(const struct fg_shadow *sh, uint32_t token_seq, uint16_t layer);

/* A canonical report arrived (c from fg_canon_decode; c->body for FULL;
 * a FULL report whose body did not reach us has body NULL, body_len set and
 * digest the lcore's hash of it).
 * Returns 1 with *out filled when the seed was waiting, 0 when the report now
 * waits, -EINVAL on a bad report. */
FG_MUST_CHECK int fg_shadow_canon(struct fg_shadow *sh, const struct fg_canon *c, uint64_t now_ns,
				  struct fg_shadow_verdict *out);
/* The source class of a sender of canonical reports, 1 .. FG_SHADOW_SOURCES
 * - 1, from its address (family 4: addr[0..4); 6: addr[0..16)) under a
 * secret key the caller draws once: the coordinator and any other sender
 * share a class, and so a quota, only by a collision of the keyed hash,
 * which no sender can aim at without the key. 0 (unnamed) for any other
 * family. */
unsigned fg_shadow_source_class(uint64_t key, uint8_t family, const uint8_t *addr);
/* Senders of canonical reports, each given a class of its own as it first
 * reports: the first FG_SHADOW_SOURCES - 1 distinct senders never share a
 * class; a sender after those gets fg_shadow_source_class's keyed hash.
 * Caller-owned, zeroed, then key set (drawn once); one writer. */
struct fg_shadow_senders {
	uint64_t key;
	uint32_t n;               /* classes given: senders 1..n */
	uint32_t hashed;          /* reports classed by the keyed hash (the table was full) */
	struct {
		uint8_t family;
		uint8_t addr[16];
	} s[FG_SHADOW_SOURCES - 1];
};
/* The class of the sender at (family, addr): its own (registered on its
 * first report while there is room), else the keyed hash; 0 (unnamed) for
 * a family other than 4 and 6. */
unsigned fg_shadow_sender_class(struct fg_shadow_senders *ss, uint8_t family, const uint8_t *addr);
/* The same for a report from source class src (< FG_SHADOW_SOURCES; the
 * caller maps its senders onto classes, fg_shadow_sender_class). fg_shadow_canon is src 0.
 * A report refused by invariant 4 returns 0 and is counted. */
FG_MUST_CHECK int fg_shadow_canon_from(struct fg_shadow *sh, const struct fg_canon *c, unsigned src, uint64_t now_ns,
				       struct fg_shadow_verdict *out);
/* The same with the report's arrival time (fg_shadow_canon_from: now_ns). */
FG_MUST_CHECK int fg_shadow_canon_at(struct fg_shadow *sh, const struct fg_canon *c, unsigned src, uint64_t arrived_ns,
				     uint64_t now_ns, struct fg_shadow_verdict *out);

/* Expire halves older than expiry_ns. Writes up to max UNMATCHED verdicts
 * (only for seeds that had a line in shadow; lone sampled seeds and lone
 * canonical reports are only counted) and returns how many; call again
 * while it returns max. Work: the entries expired plus at most one that is
 * not due yet (expire_visits counts them); never a sweep of the table. */
int fg_shadow_expire(struct fg_shadow *sh, uint64_t now_ns, struct fg_shadow_verdict *out, int max);

/* Drop every pending half (model epoch change). Returns how many. */
uint32_t fg_shadow_flush(struct fg_shadow *sh);

/* Feed a verdict to the line state machine: FG_LEV_CLEAN or
 * FG_LEV_DIVERGENCE on each line of v->v.lines (UNMATCHED changes nothing);
 * a clean verdict's lead goes into each line's window first
 * (fg_line_note_lead). Writes the transitions, and the holds
 * (FG_LINE_HELD: states unchanged, fg/line.h), into chg[0..7) and returns
 * how many, or -EINVAL. */
FG_MUST_CHECK int fg_shadow_apply(struct fg_lines *ls, const struct fg_shadow_verdict *v, uint64_t now_ns,
				  struct fg_line_change chg[FG_LINES]);

/* Elementwise figures of two f32 little-endian bodies of len bytes each
 * (len a multiple of 4). See the NaN/zero rules above. */
void fg_residual_diff(const uint8_t *a, const uint8_t *b, size_t len, struct fg_diff *out);

/* ULP distance between two f32 bit patterns, neither NaN. */
uint64_t fg_f32_ulp_distance(uint32_t a, uint32_t b);

#endif

/* shadow.c - pending shadow comparisons, verdicts and residual figures
 * (pure core: no I/O, no logging). Contract and invariants: fg/shadow.h.
 * Single writer: the control-plane thread that owns the line table. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <xxhash.h>

#include "fg/shadow.h"

_Static_assert(FG_LEAD_NONE == FG_AUDIT_NO_LEAD, "one value for an unknown lead in the core and the record");

enum entry_state { E_EMPTY = 0, E_SEED, E_CANON };

struct entry {
	uint8_t state;     /* enum entry_state */
	uint8_t lines;     /* SEED: lines reduced */
	uint8_t shadow_lines;
	uint8_t sampled;
	uint8_t kind;      /* CANON: enum fg_canon_kind */
	uint8_t has_body;
	uint8_t src;       /* CANON: source class (invariant 6) */
	uint8_t ingress;   /* SEED: fg_seed_times.ingress */
	uint16_t layer;
	uint32_t token_seq;
	uint32_t start_pos, seq_len;
	uint32_t body_len; /* the half's body length (kept or not) */
	uint32_t prev, next; /* deadline list links (fg/shadow.h invariant 5) */
	uint64_t deadline_ns;
	uint64_t fp;
	uint64_t t_a;      /* SEED: resolved_ns; CANON: arrived_ns (0: unknown) */
	uint64_t t_b;      /* SEED: delivered_ns (0: not delivered) */
	uint8_t body[];    /* body_max bytes */
};

static struct entry *entry_at(const struct fg_shadow *sh, uint32_t i)
{
	return (struct entry *)(void *)(sh->mem + (size_t)i * sh->stride);
}

static size_t stride_of(const struct fg_shadow_cfg *cfg)
{
	return (sizeof(struct entry) + cfg->body_max + 7u) & ~(size_t)7u;
}

size_t fg_shadow_mem_size(const struct fg_shadow_cfg *cfg)
{
	if (!cfg || cfg->capacity == 0 || cfg->n_layers == 0)
		return 0;
	return (size_t)cfg->capacity * stride_of(cfg);
}

int fg_shadow_init(struct fg_shadow *sh, void *mem, size_t len, const struct fg_shadow_cfg *cfg)
{
	size_t need = fg_shadow_mem_size(cfg);
	if (need == 0 || !(cfg->sample >= 0.0 && cfg->sample <= 1.0) || ((uintptr_t)mem & 7u))
		return -EINVAL;
	if (len < need)
		return -ENOSPC;
	memset(sh, 0, sizeof(*sh));
	sh->cfg = *cfg;
	sh->mem = mem;
	sh->stride = stride_of(cfg);
	/* sample * 2^32, with 1.0 meaning "every key" (threshold above any value). */
	sh->sample_threshold = (uint64_t)(cfg->sample * 4294967296.0);
	sh->head = sh->tail = FG_SHADOW_NIL;
	for (uint32_t i = 0; i < cfg->capacity; i++) {
		struct entry *e = entry_at(sh, i);
		e->state = E_EMPTY;
		e->prev = e->next = FG_SHADOW_NIL;
	}
	return 0;
}

static uint32_t index_of(const struct fg_shadow *sh, uint32_t token_seq, uint16_t layer)
{
	return (uint32_t)(((uint64_t)token_seq * sh->cfg.n_layers + layer) % sh->cfg.capacity);
}

static uint8_t shadow_mask(const struct fg_lines *ls, uint8_t lines)
{
	uint8_t m = 0;
	for (unsigned i = 0; i < FG_LINES; i++)
		if ((lines & (1u << i)) && fg_line_is_shadow(ls, i))
			m |= (uint8_t)(1u << i);
	return m;
}

bool fg_shadow_wants(const struct fg_shadow *sh, const struct fg_lines *ls, uint32_t token_seq,
		     uint16_t layer, uint8_t lines, bool *sampled)
{
	*sampled = false;
	if (shadow_mask(ls, lines))
		return true;
	uint8_t key[6];
	fg_put_le32(key, token_seq);
	fg_put_le16(key + 4, layer);
	uint64_t h = XXH3_64bits(key, sizeof(key)) >> 32;
	*sampled = h < sh->sample_threshold;
	return *sampled;
}

/* ---- residual figures ---------------------------------------------------- */

static bool f32_is_nan(uint32_t b)
{
	return (b & 0x7FFFFFFFu) > 0x7F800000u;
}

/* Order-preserving map of f32 bits onto integers: both zeros at 0,
 * negatives mirrored below it. */
static int64_t f32_ord(uint32_t b)
{
	int64_t mag = (int64_t)(b & 0x7FFFFFFFu);
	return (b & 0x80000000u) ? -mag : mag;
}

uint64_t fg_f32_ulp_distance(uint32_t a, uint32_t b)
{
	int64_t d = f32_ord(a) - f32_ord(b);
	return (uint64_t)(d < 0 ? -d : d);
}

void fg_residual_diff(const uint8_t *a, const uint8_t *b, size_t len, struct fg_diff *out)
{
	struct fg_diff d = { .first_index = UINT32_MAX };
	size_t n = len / 4;
	d.n_elems = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		uint32_t x = fg_le32(a + 4 * i), y = fg_le32(b + 4 * i);
		if (x == y)
			continue;
		d.count++;
		if (d.first_index == UINT32_MAX)
			d.first_index = (uint32_t)i;
		if (f32_is_nan(x) || f32_is_nan(y)) {
			d.nan_count++;
			continue;
		}
		float fx, fy;
		memcpy(&fx, &x, 4);
		memcpy(&fy, &y, 4);
		/* Exact in double for finite inputs; inf - finite = inf. */
		double ad = fabs((double)fx - (double)fy);
		if (isnan(ad)) /* inf - inf of the same sign cannot differ in bits; opposite signs give inf */
			ad = INFINITY;
		if (ad > d.max_abs)
			d.max_abs = ad;
		uint64_t u = fg_f32_ulp_distance(x, y);
		if (u > d.max_ulp)
			d.max_ulp = u;
	}
	*out = d;
}

/* ---- the table ------------------------------------------------------------ */

static uint32_t index_of_entry(const struct fg_shadow *sh, const struct entry *e)
{
	return (uint32_t)(((const uint8_t *)e - sh->mem) / sh->stride);
}

/* Take a live entry off the deadline list. O(1). */
static void unlink_entry(struct fg_shadow *sh, struct entry *e)
{
	if (e->prev != FG_SHADOW_NIL)
		entry_at(sh, e->prev)->next = e->next;
	else
		sh->head = e->next;
	if (e->next != FG_SHADOW_NIL)
		entry_at(sh, e->next)->prev = e->prev;
	else
		sh->tail = e->prev;
	e->prev = e->next = FG_SHADOW_NIL;
}

/* Put an entry whose deadline_ns is set on the deadline list, after every
 * entry with a deadline <= its own. With a monotonic clock and one expiry_ns
 * the new deadline is the latest and the walk stops at once. */
static void link_entry(struct fg_shadow *sh, struct entry *e)
{
	uint32_t i = index_of_entry(sh, e);
	uint32_t after = sh->tail;
	while (after != FG_SHADOW_NIL && entry_at(sh, after)->deadline_ns > e->deadline_ns)
		after = entry_at(sh, after)->prev;
	e->prev = after;
	if (after == FG_SHADOW_NIL) {
		e->next = sh->head;
		sh->head = i;
	} else {
		e->next = entry_at(sh, after)->next;
		entry_at(sh, after)->next = i;
	}
	if (e->next != FG_SHADOW_NIL)
		entry_at(sh, e->next)->prev = i;
	else
		sh->tail = i;
}

static void release(struct fg_shadow *sh, struct entry *e)
{
	if (e->state == E_CANON && sh->src_live[e->src])
		sh->src_live[e->src]--;
	unlink_entry(sh, e);
	e->state = E_EMPTY;
	sh->live--;
}

/* Take the entry for a key: the key's own entry, or a free/evicted one. */
static struct entry *claim(struct fg_shadow *sh, uint32_t token_seq, uint16_t layer, bool *mine)
{
	struct entry *e = entry_at(sh, index_of(sh, token_seq, layer));
	*mine = e->state != E_EMPTY && e->token_seq == token_seq && e->layer == layer;
	if (!*mine && e->state != E_EMPTY) {
		sh->evicted++;
		release(sh, e);
	}
	return e;
}

struct half {
	uint32_t start_pos, seq_len, body_len;
	const uint8_t *body; /* NULL when not available */
	uint64_t fp;
	uint64_t t_a, t_b;   /* as struct entry */
	uint8_t ingress;
};

/* Build the verdict from the seed half and the canonical half. */
static void judge(struct fg_shadow *sh, const struct half *seed, uint8_t lines, uint8_t shadow_lines,
		  bool sampled, const struct half *canon, enum fg_canon_kind ck, uint32_t token_seq,
		  uint16_t layer, struct fg_shadow_verdict *out)
{
	memset(out, 0, sizeof(*out));
	struct fg_audit_verdict *v = &out->v;
	v->token_seq = token_seq;
	v->dst_layer = layer;
	v->lines = lines;
	v->canon_kind = (uint8_t)ck;
	v->sampled = sampled;
	v->fp_jump = seed->fp;
	v->fp_canon = canon->fp;
	v->diff.first_index = UINT32_MAX;
	v->ingress = seed->ingress;
	v->lead_ns = fg_lead_of(canon->t_a, seed->t_a);
	v->lead_deliver_ns = fg_lead_of(canon->t_a, seed->t_b);
	/* The record's rules (fg/audit.h): no delivery lead without a
	 * resolution lead; a delivery never before its resolution (two
	 * readings of one clock on two threads may disagree by a hair). */
	if (v->lead_ns == FG_LEAD_NONE || (v->lead_deliver_ns != FG_LEAD_NONE && v->lead_deliver_ns > v->lead_ns))
		v->lead_deliver_ns = v->lead_ns == FG_LEAD_NONE ? FG_LEAD_NONE : v->lead_ns;
	out->shadow_lines = shadow_lines;
	bool same = seed->fp == canon->fp;
	if (seed->start_pos != canon->start_pos || seed->seq_len != canon->seq_len ||
	    (ck == FG_CANON_FULL && seed->body_len != canon->body_len)) {
		v->shape_mismatch = 1;
		same = false;
	} else if (ck == FG_CANON_FULL && seed->body && canon->body) {
		fg_residual_diff(seed->body, canon->body, seed->body_len, &v->diff);
		v->has_diff = 1;
		/* Bits decide; a fingerprint collision cannot hide a difference. */
		same = same && v->diff.count == 0;
	}
	v->kind = same ? FG_VERDICT_CLEAN : FG_VERDICT_DIVERGENT;
	if (same)
		sh->clean++;
	else
		sh->divergent++;
}

int fg_shadow_seed(struct fg_shadow *sh, const struct fg_seed_view *v, const struct fg_lines *ls,
		   uint64_t now_ns, struct fg_shadow_verdict *out)
{
	return fg_shadow_seed_at(sh, v, NULL, ls, now_ns, out);
}

int fg_shadow_seed_at(struct fg_shadow *sh, const struct fg_seed_view *v, const struct fg_seed_times *t,
		      const struct fg_lines *ls, uint64_t now_ns, struct fg_shadow_verdict *out)
{
	const struct fg_seed_times at = t ? *t : (struct fg_seed_times){.resolved_ns = now_ns, .ingress = FG_AUDIT_UNKNOWN};
	/* v->body NULL with a length: the body did not reach us (the lane's
	 * pool was empty, boundary.h): judged by fingerprint and shape alone. */
	if (!v || (v->body_len & 3u) || v->lines == 0 || v->lines > 0x7F)
		return -EINVAL;
	sh->seeds++;
	struct entry *e = entry_at(sh, index_of(sh, v->token_seq, v->dst_layer));
	bool waiting_canon = e->state == E_CANON && e->token_seq == v->token_seq && e->layer == v->dst_layer;
	bool sampled = false;
	bool want = fg_shadow_wants(sh, ls, v->token_seq, v->dst_layer, v->lines, &sampled);
	uint8_t smask = shadow_mask(ls, v->lines);
	if (!want && !waiting_canon) {
		sh->sampled_out++;
		return 0;
	}
	if (sampled)
		sh->sampled_in++;
	struct half seed = { v->start_pos, v->seq_len, v->body_len, v->body, v->fingerprint,
			     at.resolved_ns, at.delivered_ns, at.ingress };
	if (waiting_canon) {
		struct half canon = { e->start_pos, e->seq_len, e->body_len, e->has_body ? e->body : NULL, e->fp,
				      e->t_a, 0, FG_AUDIT_UNKNOWN };
		judge(sh, &seed, v->lines, smask, sampled, &canon, (enum fg_canon_kind)e->kind, v->token_seq,
		      v->dst_layer, out);
		release(sh, e);
		return 1;
	}
	bool mine;
	e = claim(sh, v->token_seq, v->dst_layer, &mine);
	if (mine) {
		/* A second resolved seed for the key: the slot engine resolves once,
		 * so this is a reclaimed slot reused; the newer seed replaces it. */
		sh->duplicate_half++;
		release(sh, e);
	}
	e->state = E_SEED;
	e->token_seq = v->token_seq;
	e->layer = v->dst_layer;
	e->lines = v->lines;
	e->shadow_lines = smask;
	e->sampled = sampled;
	e->kind = 0;
	e->start_pos = v->start_pos;
	e->seq_len = v->seq_len;
	e->body_len = v->body_len;
	e->fp = v->fingerprint;
	e->t_a = at.resolved_ns;
	e->t_b = at.delivered_ns;
	e->ingress = at.ingress;
	e->deadline_ns = now_ns + sh->cfg.expiry_ns;
	e->has_body = v->body && v->body_len <= sh->cfg.body_max;
	if (e->has_body && v->body_len)
		memcpy(e->body, v->body, v->body_len);
	link_entry(sh, e);
	sh->live++;
	return 0;
}

bool fg_shadow_has_seed(const struct fg_shadow *sh, uint32_t token_seq, uint16_t layer)
{
	const struct entry *e = entry_at(sh, index_of(sh, token_seq, layer));
	return e->state == E_SEED && e->token_seq == token_seq && e->layer == layer;
}

unsigned fg_shadow_source_class(uint64_t key, uint8_t family, const uint8_t *addr)
{
	uint8_t b[17];
	size_t n;
	if (family == 4)
		n = 4;
	else if (family == 6)
		n = 16;
	else
		return 0;
	b[0] = family;
	memcpy(b + 1, addr, n);
	return 1u + (unsigned)(XXH3_64bits_withSeed(b, 1 + n, key) % (FG_SHADOW_SOURCES - 1u));
}

unsigned fg_shadow_sender_class(struct fg_shadow_senders *ss, uint8_t family, const uint8_t *addr)
{
	size_t n = family == 4 ? 4 : family == 6 ? 16 : 0;
	if (!n)
		return 0;
	/* Linear: at most 63 entries of 17 bytes, once per canonical report. */
	for (uint32_t i = 0; i < ss->n; i++)
		if (ss->s[i].family == family && memcmp(ss->s[i].addr, addr, n) == 0)
			return i + 1;
	if (ss->n < FG_SHADOW_SOURCES - 1u) {
		ss->s[ss->n].family = family;
		memset(ss->s[ss->n].addr, 0, sizeof(ss->s[ss->n].addr));
		memcpy(ss->s[ss->n].addr, addr, n);
		return ++ss->n;
	}
	ss->hashed++;
	return fg_shadow_source_class(ss->key, family, addr);
}

int fg_shadow_canon(struct fg_shadow *sh, const struct fg_canon *c, uint64_t now_ns, struct fg_shadow_verdict *out)
{
	return fg_shadow_canon_from(sh, c, 0, now_ns, out);
}

int fg_shadow_canon_from(struct fg_shadow *sh, const struct fg_canon *c, unsigned src, uint64_t now_ns,
			 struct fg_shadow_verdict *out)
{
	return fg_shadow_canon_at(sh, c, src, now_ns, now_ns, out);
}

int fg_shadow_canon_at(struct fg_shadow *sh, const struct fg_canon *c, unsigned src, uint64_t arrived_ns,
		       uint64_t now_ns, struct fg_shadow_verdict *out)
{
	if (src >= FG_SHADOW_SOURCES)
		return -EINVAL;
	/* FULL with body NULL and a length: the body did not reach us, the
	 * caller's fingerprint (digest) stands for it; without one, refused. */
	if (!c || (c->kind != FG_CANON_FULL && c->kind != FG_CANON_DIGEST) ||
	    (c->kind == FG_CANON_FULL && ((c->body_len && !c->body && !c->digest) || (c->body_len & 3u))))
		return -EINVAL;
	sh->canons++;
	struct half canon = { c->start_pos, c->seq_len, c->body_len,
			      c->kind == FG_CANON_FULL ? c->body : NULL,
			      /* FULL: the caller's hash of the body when it made one
			       * (the lcore or the engine, once), else hash it here */
			      c->kind == FG_CANON_FULL && !c->digest && (c->body || !c->body_len)
				  ? fg_fingerprint(c->body, c->body_len)
				  : c->digest,
			      arrived_ns, 0, FG_AUDIT_UNKNOWN };
	/* Invariant 4: a canonical half takes another key's entry only from
	 * its own source or from a source holding more (never a waiting seed). */
	struct entry *e = entry_at(sh, index_of(sh, c->token_seq, c->dst_layer));
	bool other = e->state != E_EMPTY && !(e->token_seq == c->token_seq && e->layer == c->dst_layer);
	if (other && e->state == E_SEED) {
		sh->canon_refused_seed++;
		return 0;
	}
	if (other && e->state == E_CANON && e->src != src && sh->src_live[e->src] <= fg_shadow_quota(sh)) {
		sh->canon_refused_share++;
		return 0;
	}
	bool mine;
	e = claim(sh, c->token_seq, c->dst_layer, &mine);
	if (mine && e->state == E_SEED) {
		struct half seed = { e->start_pos, e->seq_len, e->body_len, e->has_body ? e->body : NULL, e->fp,
				     e->t_a, e->t_b, e->ingress };
		judge(sh, &seed, e->lines, e->shadow_lines, e->sampled, &canon, c->kind, c->token_seq,
		      c->dst_layer, out);
		release(sh, e);
		return 1;
	}
	if (mine) {
		/* A second canonical report for the key: keep the newer one. */
		sh->duplicate_half++;
		release(sh, e);
	}
	e->state = E_CANON;
	e->token_seq = c->token_seq;
	e->layer = c->dst_layer;
	e->lines = 0;
	e->shadow_lines = 0;
	e->sampled = 0;
	e->kind = (uint8_t)c->kind;
	e->src = (uint8_t)src;
	sh->src_live[src]++;
	e->start_pos = c->start_pos;
	e->seq_len = c->seq_len;
	e->body_len = c->kind == FG_CANON_FULL ? c->body_len : 0;
	e->fp = canon.fp;
	e->t_a = arrived_ns;
	e->t_b = 0;
	e->ingress = FG_AUDIT_UNKNOWN;
	e->deadline_ns = now_ns + sh->cfg.expiry_ns;
	e->has_body = c->kind == FG_CANON_FULL && c->body && c->body_len <= sh->cfg.body_max;
	if (e->has_body && c->body_len)
		memcpy(e->body, c->body, c->body_len);
	link_entry(sh, e);
	sh->live++;
	return 0;
}

int fg_shadow_expire(struct fg_shadow *sh, uint64_t now_ns, struct fg_shadow_verdict *out, int max)
{
	int n = 0;
	/* Pop from the head of the deadline list (invariant 5): each call looks
	 * at the entries it expires plus the first one not due yet. */
	while (n < max && sh->head != FG_SHADOW_NIL) {
		struct entry *e = entry_at(sh, sh->head);
		sh->expire_visits++;
		if (e->deadline_ns > now_ns)
			break;
		sh->unmatched++;
		if (e->state == E_SEED && e->shadow_lines) {
			struct fg_shadow_verdict *o = &out[n++];
			memset(o, 0, sizeof(*o));
			o->v.token_seq = e->token_seq;
			o->v.dst_layer = e->layer;
			o->v.lines = e->lines;
			o->v.kind = FG_VERDICT_UNMATCHED;
			o->v.canon_kind = 0xFF;
			o->v.sampled = e->sampled;
			o->v.fp_jump = e->fp;
			o->v.diff.first_index = UINT32_MAX;
			o->v.ingress = e->ingress;
			o->v.lead_ns = o->v.lead_deliver_ns = FG_LEAD_NONE;
			o->shadow_lines = e->shadow_lines;
			o->seed_side = true;
		}
		release(sh, e);
	}
	return n;
}

uint32_t fg_shadow_flush(struct fg_shadow *sh)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < sh->cfg.capacity; i++) {
		struct entry *e = entry_at(sh, i);
		if (e->state != E_EMPTY) {
			e->state = E_EMPTY;
			n++;
		}
		e->src = 0;
		e->prev = e->next = FG_SHADOW_NIL;
	}
	sh->head = sh->tail = FG_SHADOW_NIL;
	sh->live = 0;
	memset(sh->src_live, 0, sizeof(sh->src_live));
	return n;
}

int fg_shadow_apply(struct fg_lines *ls, const struct fg_shadow_verdict *v, uint64_t now_ns,
		    struct fg_line_change chg[FG_LINES])
{
	if (v->v.kind == FG_VERDICT_UNMATCHED)
		return 0;
	if (v->v.kind != FG_VERDICT_CLEAN && v->v.kind != FG_VERDICT_DIVERGENT)
		return -EINVAL;
	enum fg_line_event ev = v->v.kind == FG_VERDICT_CLEAN ? FG_LEV_CLEAN : FG_LEV_DIVERGENCE;
	/* A promotion's reason is the window itself, which fg_line_apply
	 * describes (why = NULL); a demotion names the verdict. */
	char why[FG_AUDIT_WHY_MAX];
	/* Without both bodies (a digest report, a body not kept) there is no
	 * element count to give: the fingerprints differ. */
	if (v->v.shape_mismatch)
		snprintf(why, sizeof(why), "divergence token %u layer %u: shapes differ", v->v.token_seq,
			 v->v.dst_layer);
	else if (v->v.has_diff)
		snprintf(why, sizeof(why), "divergence token %u layer %u: %u elements differ", v->v.token_seq,
			 v->v.dst_layer, v->v.diff.count);
	else
		snprintf(why, sizeof(why), "divergence token %u layer %u: fingerprints differ (no body to compare)",
			 v->v.token_seq, v->v.dst_layer);
	int n = 0;
	for (unsigned i = 0; i < FG_LINES; i++) {
		if (!(v->v.lines & (1u << i)))
			continue;
		if (ev == FG_LEV_CLEAN)
			fg_line_note_lead(ls, i, v->v.lead_ns);
		int rc = fg_line_apply(ls, i, ev, now_ns, FG_UID_AUDIT, 0, ev == FG_LEV_CLEAN ? NULL : why, &chg[n]);
		if (rc < 0)
			return rc;
		if (rc > 0)
			n++;
	}
	return n;
}

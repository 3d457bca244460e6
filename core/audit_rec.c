/* audit_rec.c - audit record codec, hash chain and verification (pure: no
 * I/O, no logging, no state beyond the caller's chain and a process-wide
 * fetched SHA-256 method).
 *
 * Owns the byte layout documented in include/fg/audit.h. Any thread may call
 * it. SHA-256 comes from OpenSSL's libcrypto (EVP, computation only); the
 * checksum is XXH3-64 from libxxhash.
 *
 * Payload layouts (little-endian; "str" is a u8 length then that many bytes,
 * length < the field's size so the decoded string always has its NUL):
 *   GENESIS   u32 format, str who
 *   VERDICT   u32 token_seq, u16 dst_layer, u8 lines, u8 kind, u8 canon_kind,
 *             u8 sampled, u8 has_diff, u8 shape_mismatch, u32 epoch,
 *             u64 fp_jump, u64 fp_canon, u32 n_elems, u32 count,
 *             u32 nan_count, u32 first_index, f64 max_abs (IEEE bits),
 *             u64 max_ulp                                     (64 bytes)
 *   LINE v1   u8 line, u8 from, u8 to, u8 event, u32 uid, i32 pid,
 *             str origin, str why
 *   LINE v2   u8 line, u8 from, u8 to, u8 event, u32 uid, i32 pid,
 *             u8 base_from, u8 base_to, u8 auto_promote, str origin, str why
 *   EPOCH     u32 from, u32 to, u32 uid, i32 pid, str why
 *   CONFLICT  u32 token_seq, u16 dst_layer, u8 line, u8 0, u32 epoch (12)
 *   PEER_AUTH str peer, str reason
 *   RECOVERY  u64 cut_offset, u64 cut_bytes, u64 last_seq, u16 reason (26)
 *   ROTATION  u64 prev_file_records, u64 prev_file_bytes,
 *             u32 prev_file_index                             (20)
 *   START     u32 uid, i32 pid, u8 flags, str who, str config, 7 x entry
 *   LINES     7 x entry
 *   RELOAD    u8 result, u32 uid, i32 pid, str origin, str error, str what
 * where entry = u8 base, u8 auto_promote, u8 source, u8 event, u64 seq,
 * str why (one per line, in line order).
 */
#include <errno.h>
#include <string.h>

#include <pthread.h>

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <xxhash.h>

#include "fg/audit.h"
#include "fg/fano.h"
#include "fg/line.h"
#include "fg/wire.h"

_Static_assert(FG_AUDIT_LINES == FG_LINES, "START and LINES records hold every line");

/* OpenSSL 3's one-shot SHA256() looks the algorithm up in the provider
 * store on every call (1.26 us per 120-byte record here); fetching it once
 * and using EVP_Digest costs 0.55 us (measured, bench/audit). The fetched
 * method lives as long as the process. SHA256() stays as the fallback. */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static void sha256(const uint8_t *p, size_t n, uint8_t out[FG_AUDIT_HASH_LEN])
{
	(void)pthread_once(&sha256_once, sha256_fetch);
	if (!sha256_md || EVP_Digest(p, n, out, NULL, sha256_md, NULL) != 1)
		SHA256(p, n, out);
}

#define VERDICT_LEN 64u
#define CONFLICT_LEN 12u
#define RECOVERY_LEN 26u
#define ROTATION_LEN 20u

const char *fg_audit_type_name(unsigned type)
{
	static const char *const names[] = {
		[FG_AREC_GENESIS] = "genesis",   [FG_AREC_VERDICT] = "verdict",
		[FG_AREC_LINE] = "line",         [FG_AREC_EPOCH] = "epoch",
		[FG_AREC_CONFLICT] = "conflict", [FG_AREC_PEER_AUTH] = "peer_auth",
		[FG_AREC_RECOVERY] = "recovery", [FG_AREC_ROTATION] = "rotation",
		[FG_AREC_START] = "start",       [FG_AREC_LINES] = "lines",
		[FG_AREC_RELOAD] = "reload",
	};
	if (type >= FG_ARRAY_LEN(names) || !names[type])
		return "unknown";
	return names[type];
}

unsigned fg_audit_type_version(unsigned type)
{
	if (type < FG_AREC_GENESIS || type >= FG_AREC__END)
		return 0;
	return type == FG_AREC_LINE || type == FG_AREC_VERDICT ? 2u : 1u;
}

const char *fg_audit_ingress_name(unsigned ingress)
{
	switch (ingress) {
	case FG_AUDIT_INGRESS_UDP: return "udp";
	case FG_AUDIT_INGRESS_TLS: return "tls";
	default: return "unknown";
	}
}

const char *fg_audit_line_source_name(unsigned src)
{
	static const char *const names[FG_LSRC__COUNT] = {
		[FG_LSRC_LOG] = "log",
		[FG_LSRC_CONFIG] = "config (no line history)",
		[FG_LSRC_RESET] = "reset by operator",
		[FG_LSRC_DAMAGED] = "log damaged: shadow",
		[FG_LSRC_CUT] = "log cut: shadow",
	};
	return src < FG_LSRC__COUNT ? names[src] : "unknown";
}

const char *fg_audit_reload_result_name(unsigned r)
{
	switch (r) {
	case FG_RELOAD_APPLIED: return "applied";
	case FG_RELOAD_UNCHANGED: return "unchanged";
	case FG_RELOAD_REFUSED: return "refused";
	default: return "unknown";
	}
}

const char *fg_verdict_kind_name(unsigned k)
{
	switch (k) {
	case FG_VERDICT_CLEAN: return "clean";
	case FG_VERDICT_DIVERGENT: return "divergent";
	case FG_VERDICT_UNMATCHED: return "unmatched";
	default: return "unknown";
	}
}

const char *fg_audit_reason_name(int r)
{
	static const char *const names[FG_AR__COUNT] = {
		[FG_AR_OK] = "ok",
		[FG_AR_TRUNCATED] = "truncated",
		[FG_AR_LENGTH] = "bad_length",
		[FG_AR_ZERO] = "zeroed",
		[FG_AR_CHECKSUM] = "bad_checksum",
		[FG_AR_VERSION] = "bad_version",
		[FG_AR_TYPE] = "bad_type",
		[FG_AR_PAYLOAD] = "bad_payload",
		[FG_AR_SEQ] = "bad_sequence",
		[FG_AR_CHAIN] = "broken_chain",
		[FG_AR_GENESIS] = "bad_start",
		[FG_AR_NOSPACE] = "no_space",
		[FG_AR_HEAD] = "head_mismatch",
	};
	if (r < 0)
		r = -r;
	if (r >= FG_AR__COUNT)
		return "unknown";
	return names[r];
}

void fg_audit_chain_init(struct fg_audit_chain *ch)
{
	memset(ch, 0, sizeof(*ch));
}

void fg_audit_record_hash(const uint8_t *rec, uint8_t out[FG_AUDIT_HASH_LEN])
{
	sha256(rec, fg_le32(rec) - FG_AUDIT_TRAILER_LEN, out);
}

void fg_audit_hex(const uint8_t hash[FG_AUDIT_HASH_LEN], char out[2 * FG_AUDIT_HASH_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	for (unsigned i = 0; i < FG_AUDIT_HASH_LEN; i++) {
		out[2 * i] = hex[hash[i] >> 4];
		out[2 * i + 1] = hex[hash[i] & 15];
	}
	out[2 * FG_AUDIT_HASH_LEN] = '\0';
}

/* ---- a bounded writer / reader over a byte range ------------------------ */

struct wbuf {
	uint8_t *p;
	size_t cap, n;
	bool over;
};

static uint8_t *w_take(struct wbuf *w, size_t k)
{
	if (w->over || w->cap - w->n < k) {
		w->over = true;
		return NULL;
	}
	uint8_t *p = w->p + w->n;
	w->n += k;
	return p;
}
static void w_u8(struct wbuf *w, uint8_t v)
{
	uint8_t *p = w_take(w, 1);
	if (p)
		*p = v;
}
static void w_u16(struct wbuf *w, uint16_t v)
{
	uint8_t *p = w_take(w, 2);
	if (p)
		fg_put_le16(p, v);
}
static void w_u32(struct wbuf *w, uint32_t v)
{
	uint8_t *p = w_take(w, 4);
	if (p)
		fg_put_le32(p, v);
}
static void w_u64(struct wbuf *w, uint64_t v)
{
	uint8_t *p = w_take(w, 8);
	if (p)
		fg_put_le64(p, v);
}
/* A string field of `size` bytes (incl. NUL) in memory: at most size - 1 go out. */
static void w_str(struct wbuf *w, const char *s, size_t size)
{
	size_t n = strnlen(s, size - 1);
	w_u8(w, (uint8_t)n);
	uint8_t *p = w_take(w, n);
	if (p)
		memcpy(p, s, n);
}

struct rbuf {
	const uint8_t *p;
	size_t len, n;
	bool bad;
};

static const uint8_t *r_take(struct rbuf *r, size_t k)
{
	if (r->bad || r->len - r->n < k) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *p = r->p + r->n;
	r->n += k;
	return p;
}
static uint8_t r_u8(struct rbuf *r)
{
	const uint8_t *p = r_take(r, 1);
	return p ? *p : 0;
}
static uint16_t r_u16(struct rbuf *r)
{
	const uint8_t *p = r_take(r, 2);
	return p ? fg_le16(p) : 0;
}
static uint32_t r_u32(struct rbuf *r)
{
	const uint8_t *p = r_take(r, 4);
	return p ? fg_le32(p) : 0;
}
static uint64_t r_u64(struct rbuf *r)
{
	const uint8_t *p = r_take(r, 8);
	return p ? fg_le64(p) : 0;
}
static void r_str(struct rbuf *r, char *out, size_t size)
{
	size_t n = r_u8(r);
	out[0] = '\0';
	if (n >= size) {
		r->bad = true;
		return;
	}
	const uint8_t *p = r_take(r, n);
	if (!p)
		return;
	memcpy(out, p, n);
	out[n] = '\0';
	/* An embedded NUL would make the printed string differ from the bytes. */
	if (memchr(out, '\0', n))
		r->bad = true;
}

static uint64_t f64_bits(double d)
{
	uint64_t u;
	memcpy(&u, &d, sizeof(u));
	return u;
}
static double bits_f64(uint64_t u)
{
	double d;
	memcpy(&d, &u, sizeof(d));
	return d;
}

static void w_entries(struct wbuf *w, const struct fg_audit_line_entry e[FG_AUDIT_LINES])
{
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++) {
		w_u8(w, e[i].base);
		w_u8(w, e[i].auto_promote);
		w_u8(w, e[i].source);
		w_u8(w, e[i].event);
		w_u64(w, e[i].seq);
		w_str(w, e[i].why, sizeof(e[i].why));
	}
}

static void encode_payload(struct wbuf *w, unsigned type, unsigned version, const union fg_audit_payload *p)
{
	switch (type) {
	case FG_AREC_GENESIS:
		w_u32(w, p->genesis.format);
		w_str(w, p->genesis.who, sizeof(p->genesis.who));
		break;
	case FG_AREC_VERDICT: {
		const struct fg_audit_verdict *v = &p->verdict;
		w_u32(w, v->token_seq);
		w_u16(w, v->dst_layer);
		w_u8(w, v->lines);
		w_u8(w, v->kind);
		w_u8(w, v->canon_kind);
		w_u8(w, v->sampled);
		w_u8(w, v->has_diff);
		w_u8(w, v->shape_mismatch);
		w_u32(w, v->epoch);
		w_u64(w, v->fp_jump);
		w_u64(w, v->fp_canon);
		w_u32(w, v->diff.n_elems);
		w_u32(w, v->diff.count);
		w_u32(w, v->diff.nan_count);
		w_u32(w, v->diff.first_index);
		w_u64(w, f64_bits(v->diff.max_abs));
		w_u64(w, v->diff.max_ulp);
		if (version >= 2) {
			w_u8(w, v->ingress);
			w_u64(w, (uint64_t)v->lead_ns);
			w_u64(w, (uint64_t)v->lead_deliver_ns);
		}
		break;
	}
	case FG_AREC_LINE:
		w_u8(w, p->line.line);
		w_u8(w, p->line.from);
		w_u8(w, p->line.to);
		w_u8(w, p->line.event);
		w_u32(w, p->line.uid);
		w_u32(w, (uint32_t)p->line.pid);
		if (version >= 2) {
			w_u8(w, p->line.base_from);
			w_u8(w, p->line.base_to);
			w_u8(w, p->line.auto_promote);
		}
		w_str(w, p->line.origin, sizeof(p->line.origin));
		w_str(w, p->line.why, sizeof(p->line.why));
		break;
	case FG_AREC_EPOCH:
		w_u32(w, p->epoch.from);
		w_u32(w, p->epoch.to);
		w_u32(w, p->epoch.uid);
		w_u32(w, (uint32_t)p->epoch.pid);
		w_str(w, p->epoch.why, sizeof(p->epoch.why));
		break;
	case FG_AREC_CONFLICT:
		w_u32(w, p->conflict.token_seq);
		w_u16(w, p->conflict.dst_layer);
		w_u8(w, p->conflict.line);
		w_u8(w, 0);
		w_u32(w, p->conflict.epoch);
		break;
	case FG_AREC_PEER_AUTH:
		w_str(w, p->peer_auth.peer, sizeof(p->peer_auth.peer));
		w_str(w, p->peer_auth.reason, sizeof(p->peer_auth.reason));
		break;
	case FG_AREC_RECOVERY:
		w_u64(w, p->recovery.cut_offset);
		w_u64(w, p->recovery.cut_bytes);
		w_u64(w, p->recovery.last_seq);
		w_u16(w, p->recovery.reason);
		break;
	case FG_AREC_ROTATION:
		w_u64(w, p->rotation.prev_file_records);
		w_u64(w, p->rotation.prev_file_bytes);
		w_u32(w, p->rotation.prev_file_index);
		break;
	case FG_AREC_START:
		w_u32(w, p->start.uid);
		w_u32(w, (uint32_t)p->start.pid);
		w_u8(w, p->start.flags);
		w_str(w, p->start.who, sizeof(p->start.who));
		w_str(w, p->start.config, sizeof(p->start.config));
		w_entries(w, p->start.line);
		break;
	case FG_AREC_LINES:
		w_entries(w, p->lines.line);
		break;
	case FG_AREC_RELOAD:
		w_u8(w, p->reload.result);
		w_u32(w, p->reload.uid);
		w_u32(w, (uint32_t)p->reload.pid);
		w_str(w, p->reload.origin, sizeof(p->reload.origin));
		w_str(w, p->reload.error, sizeof(p->reload.error));
		w_str(w, p->reload.what, sizeof(p->reload.what));
		break;
	default:
		break;
	}
}

/* A line entry is a base state (never DEGRADED), a flag, a known source and
 * a line event or none. */
static bool r_entries(struct rbuf *r, struct fg_audit_line_entry e[FG_AUDIT_LINES])
{
	bool ok = true;
	for (unsigned i = 0; i < FG_AUDIT_LINES; i++) {
		e[i].base = r_u8(r);
		e[i].auto_promote = r_u8(r);
		e[i].source = r_u8(r);
		e[i].event = r_u8(r);
		e[i].seq = r_u64(r);
		r_str(r, e[i].why, sizeof(e[i].why));
		if (e[i].base > FG_LINE_ACTIVE || e[i].auto_promote > 1 || e[i].source >= FG_LSRC__COUNT ||
		    (e[i].event >= FG_LEV__COUNT && e[i].event != FG_AUDIT_UNKNOWN))
			ok = false;
	}
	return ok;
}

/* Decode a payload; false when its length or a field is wrong for the type. */
static bool decode_payload(struct rbuf *r, unsigned type, unsigned version, union fg_audit_payload *p)
{
	memset(p, 0, sizeof(*p));
	switch (type) {
	case FG_AREC_GENESIS:
		p->genesis.format = r_u32(r);
		r_str(r, p->genesis.who, sizeof(p->genesis.who));
		break;
	case FG_AREC_VERDICT: {
		struct fg_audit_verdict *v = &p->verdict;
		v->token_seq = r_u32(r);
		v->dst_layer = r_u16(r);
		v->lines = r_u8(r);
		v->kind = r_u8(r);
		v->canon_kind = r_u8(r);
		v->sampled = r_u8(r);
		v->has_diff = r_u8(r);
		v->shape_mismatch = r_u8(r);
		v->epoch = r_u32(r);
		v->fp_jump = r_u64(r);
		v->fp_canon = r_u64(r);
		v->diff.n_elems = r_u32(r);
		v->diff.count = r_u32(r);
		v->diff.nan_count = r_u32(r);
		v->diff.first_index = r_u32(r);
		v->diff.max_abs = bits_f64(r_u64(r));
		v->diff.max_ulp = r_u64(r);
		if (version >= 2) {
			v->ingress = r_u8(r);
			v->lead_ns = (int64_t)r_u64(r);
			v->lead_deliver_ns = (int64_t)r_u64(r);
			/* A known ingress or none; no lead without a canonical report;
			 * a seed is delivered after it resolved. */
			if ((v->ingress > FG_AUDIT_INGRESS_TLS && v->ingress != FG_AUDIT_UNKNOWN) ||
			    (v->kind == FG_VERDICT_UNMATCHED &&
			     (v->lead_ns != FG_AUDIT_NO_LEAD || v->lead_deliver_ns != FG_AUDIT_NO_LEAD)) ||
			    (v->lead_ns == FG_AUDIT_NO_LEAD && v->lead_deliver_ns != FG_AUDIT_NO_LEAD) ||
			    (v->lead_deliver_ns != FG_AUDIT_NO_LEAD && v->lead_deliver_ns > v->lead_ns))
				return false;
		} else {
			v->ingress = FG_AUDIT_UNKNOWN;
			v->lead_ns = v->lead_deliver_ns = FG_AUDIT_NO_LEAD;
		}
		if (v->kind > FG_VERDICT_UNMATCHED || v->lines > 0x7F || v->sampled > 1 || v->has_diff > 1 ||
		    v->shape_mismatch > 1 || v->diff.count > v->diff.n_elems ||
		    v->diff.nan_count > v->diff.count)
			return false;
		break;
	}
	case FG_AREC_LINE:
		p->line.line = r_u8(r);
		p->line.from = r_u8(r);
		p->line.to = r_u8(r);
		p->line.event = r_u8(r);
		p->line.uid = r_u32(r);
		p->line.pid = (int32_t)r_u32(r);
		if (version >= 2) {
			p->line.base_from = r_u8(r);
			p->line.base_to = r_u8(r);
			p->line.auto_promote = r_u8(r);
		} else {
			p->line.base_from = p->line.base_to = p->line.auto_promote = FG_AUDIT_UNKNOWN;
		}
		r_str(r, p->line.origin, sizeof(p->line.origin));
		r_str(r, p->line.why, sizeof(p->line.why));
		if (p->line.line >= 7 || p->line.from > 3 || p->line.to > 3)
			return false;
		/* Version 2 names base states and a known event (version 1
		 * records of config reloads carry event 0xFF). */
		if (version >= 2 && (p->line.base_from > FG_LINE_ACTIVE || p->line.base_to > FG_LINE_ACTIVE ||
				     p->line.auto_promote > 1 || p->line.event >= FG_LEV__COUNT))
			return false;
		break;
	case FG_AREC_EPOCH:
		p->epoch.from = r_u32(r);
		p->epoch.to = r_u32(r);
		p->epoch.uid = r_u32(r);
		p->epoch.pid = (int32_t)r_u32(r);
		r_str(r, p->epoch.why, sizeof(p->epoch.why));
		break;
	case FG_AREC_CONFLICT:
		p->conflict.token_seq = r_u32(r);
		p->conflict.dst_layer = r_u16(r);
		p->conflict.line = r_u8(r);
		if (r_u8(r) != 0 || p->conflict.line >= 7)
			return false;
		p->conflict.epoch = r_u32(r);
		break;
	case FG_AREC_PEER_AUTH:
		r_str(r, p->peer_auth.peer, sizeof(p->peer_auth.peer));
		r_str(r, p->peer_auth.reason, sizeof(p->peer_auth.reason));
		break;
	case FG_AREC_RECOVERY:
		p->recovery.cut_offset = r_u64(r);
		p->recovery.cut_bytes = r_u64(r);
		p->recovery.last_seq = r_u64(r);
		p->recovery.reason = r_u16(r);
		break;
	case FG_AREC_ROTATION:
		p->rotation.prev_file_records = r_u64(r);
		p->rotation.prev_file_bytes = r_u64(r);
		p->rotation.prev_file_index = r_u32(r);
		break;
	case FG_AREC_START:
		p->start.uid = r_u32(r);
		p->start.pid = (int32_t)r_u32(r);
		p->start.flags = r_u8(r);
		r_str(r, p->start.who, sizeof(p->start.who));
		r_str(r, p->start.config, sizeof(p->start.config));
		if (!r_entries(r, p->start.line) || (p->start.flags & ~(FG_ASTART_RESET | FG_ASTART_CLUSTER)))
			return false;
		break;
	case FG_AREC_LINES:
		if (!r_entries(r, p->lines.line))
			return false;
		break;
	case FG_AREC_RELOAD:
		p->reload.result = r_u8(r);
		p->reload.uid = r_u32(r);
		p->reload.pid = (int32_t)r_u32(r);
		r_str(r, p->reload.origin, sizeof(p->reload.origin));
		r_str(r, p->reload.error, sizeof(p->reload.error));
		r_str(r, p->reload.what, sizeof(p->reload.what));
		if (p->reload.result > FG_RELOAD_REFUSED)
			return false;
		break;
	default:
		return false;
	}
	/* Every byte of the payload must have been consumed, no more. */
	return !r->bad && r->n == r->len;
}

ssize_t fg_audit_encode(struct fg_audit_chain *ch, unsigned type, uint64_t time_ns,
			const union fg_audit_payload *p, uint8_t *buf, size_t cap)
{
	return fg_audit_encode_version(ch, type, fg_audit_type_version(type), time_ns, p, buf, cap);
}

ssize_t fg_audit_encode_version(struct fg_audit_chain *ch, unsigned type, unsigned version, uint64_t time_ns,
				const union fg_audit_payload *p, uint8_t *buf, size_t cap)
{
	if (type < FG_AREC_GENESIS || type >= FG_AREC__END)
		return -FG_AR_TYPE;
	if (version < 1 || version > fg_audit_type_version(type))
		return -FG_AR_VERSION;
	struct wbuf w = { .p = buf, .cap = cap < FG_AUDIT_REC_MAX ? cap : FG_AUDIT_REC_MAX };
	uint8_t *hdr = w_take(&w, FG_AUDIT_HDR_LEN);
	encode_payload(&w, type, version, p);
	uint8_t *trailer = w_take(&w, FG_AUDIT_TRAILER_LEN);
	if (w.over || !hdr || !trailer)
		return -FG_AR_NOSPACE;
	fg_put_le32(hdr, (uint32_t)w.n);
	fg_put_le16(hdr + 4, (uint16_t)type);
	fg_put_le16(hdr + 6, (uint16_t)version);
	fg_put_le64(hdr + 8, ch->next_seq);
	fg_put_le64(hdr + 16, time_ns);
	memcpy(hdr + 24, ch->head, FG_AUDIT_HASH_LEN);
	size_t body = w.n - FG_AUDIT_TRAILER_LEN;
	fg_put_le64(trailer, XXH3_64bits(buf, body));
	sha256(buf, body, ch->head);
	ch->next_seq++;
	return (ssize_t)w.n;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

ssize_t fg_audit_decode(const uint8_t *buf, size_t len, struct fg_audit_rec *out)
{
	if (len < 4)
		return all_zero(buf, len) && len > 0 ? -FG_AR_ZERO : -FG_AR_TRUNCATED;
	uint32_t rlen = fg_le32(buf);
	if (rlen == 0) {
		size_t n = len < FG_AUDIT_HDR_LEN ? len : FG_AUDIT_HDR_LEN;
		if (all_zero(buf, n))
			return -FG_AR_ZERO;
	}
	if (rlen < FG_AUDIT_HDR_LEN + FG_AUDIT_TRAILER_LEN || rlen > FG_AUDIT_REC_MAX)
		return -FG_AR_LENGTH;
	if (rlen > len)
		return -FG_AR_TRUNCATED;
	size_t body = rlen - FG_AUDIT_TRAILER_LEN;
	if (XXH3_64bits(buf, body) != fg_le64(buf + body))
		return all_zero(buf + 4, rlen - 4) ? -FG_AR_ZERO : -FG_AR_CHECKSUM;
	unsigned type = fg_le16(buf + 4), version = fg_le16(buf + 6);
	/* A version is a version of its type's payload: the type first. An
	 * unknown type with version 1 was bad_type before versions were per
	 * type, and still is; so is a known type with an unknown version. */
	if (version < 1 || (type >= FG_AREC_GENESIS && type < FG_AREC__END && version > fg_audit_type_version(type)))
		return -FG_AR_VERSION;
	if (type < FG_AREC_GENESIS || type >= FG_AREC__END)
		return -FG_AR_TYPE;
	struct fg_audit_rec rec;
	rec.len = rlen;
	rec.type = (uint16_t)type;
	rec.version = (uint16_t)version;
	rec.seq = fg_le64(buf + 8);
	rec.time_ns = fg_le64(buf + 16);
	memcpy(rec.prev, buf + 24, FG_AUDIT_HASH_LEN);
	struct rbuf r = { .p = buf + FG_AUDIT_HDR_LEN, .len = body - FG_AUDIT_HDR_LEN };
	if (!decode_payload(&r, type, version, &rec.p))
		return -FG_AR_PAYLOAD;
	sha256(buf, body, rec.hash);
	*out = rec;
	return (ssize_t)rlen;
}

/* Walk records of buf[0..len), which sits at file offset s->good_bytes,
 * continuing the scan in *s. */
static int verify_run(const uint8_t *buf, size_t len, struct fg_audit_scan *s, fg_audit_visit_fn visit, void *arg)
{
	size_t off = 0;
	int reason = FG_AR_OK;
	uint64_t bad_seq = 0;
	while (off < len) {
		struct fg_audit_rec rec;
		ssize_t n = fg_audit_decode(buf + off, len - off, &rec);
		if (n < 0) {
			reason = (int)-n;
			bad_seq = s->chain.next_seq;
			break;
		}
		bad_seq = rec.seq;
		bool first = s->records == 0;
		if (first && !s->from_given) {
			if (rec.type == FG_AREC_ROTATION) {
				/* A later file verified alone: take its start as given. */
				s->anchored = false;
				s->chain.next_seq = rec.seq;
				memcpy(s->chain.head, rec.prev, FG_AUDIT_HASH_LEN);
			} else if (rec.type != FG_AREC_GENESIS) {
				reason = FG_AR_GENESIS;
				break;
			}
		}
		if (rec.type == FG_AREC_GENESIS && (!first || rec.seq != 0)) {
			reason = FG_AR_GENESIS;
			break;
		}
		if (rec.type == FG_AREC_ROTATION && !first) {
			reason = FG_AR_GENESIS;
			break;
		}
		if (first && s->from_given && s->chain.next_seq > 0 && rec.type != FG_AREC_ROTATION) {
			reason = FG_AR_GENESIS;
			break;
		}
		if (rec.seq != s->chain.next_seq) {
			reason = FG_AR_SEQ;
			break;
		}
		if (memcmp(rec.prev, s->chain.head, FG_AUDIT_HASH_LEN) != 0) {
			reason = FG_AR_CHAIN;
			break;
		}
		if (first)
			s->first_seq = rec.seq;
		s->last_seq = rec.seq;
		s->records++;
		s->chain.next_seq = rec.seq + 1;
		memcpy(s->chain.head, rec.hash, FG_AUDIT_HASH_LEN);
		off += (size_t)n;
		if (visit)
			visit(arg, &rec);
	}
	s->good_bytes += off;
	s->bad_offset = s->good_bytes;
	s->reason = reason;
	s->bad_seq = reason ? bad_seq : 0;
	return reason ? -reason : 0;
}

int fg_audit_verify(const uint8_t *buf, size_t len, const struct fg_audit_chain *from,
		    struct fg_audit_scan *out)
{
	return fg_audit_verify_visit(buf, len, from, out, NULL, NULL);
}

int fg_audit_verify_visit(const uint8_t *buf, size_t len, const struct fg_audit_chain *from,
			  struct fg_audit_scan *out, fg_audit_visit_fn visit, void *arg)
{
	struct fg_audit_scan s;
	memset(&s, 0, sizeof(s));
	if (from)
		s.chain = *from;
	else
		fg_audit_chain_init(&s.chain);
	s.from_given = from != NULL;
	s.anchored = true;
	int rc = verify_run(buf, len, &s, visit, arg);
	*out = s;
	return rc;
}

int fg_audit_verify_more(const uint8_t *buf, size_t len, struct fg_audit_scan *s)
{
	return verify_run(buf, len, s, NULL, NULL);
}

int fg_audit_verify_more_visit(const uint8_t *buf, size_t len, struct fg_audit_scan *s, fg_audit_visit_fn visit,
			       void *arg)
{
	return verify_run(buf, len, s, visit, arg);
}

bool fg_audit_tail_is_torn(const struct fg_audit_scan *s, uint64_t file_len)
{
	if (s->reason == FG_AR_OK || !fg_audit_reason_is_torn(s->reason))
		return false;
	if (s->bad_offset > file_len)
		return false;
	return file_len - s->bad_offset <= FG_AUDIT_TAIL_MAX;
}

/* test_wire.c - unit tests for core/wire.c (include/fg/wire.h).
 *
 * 1. Every conformance vector of tests/data/vectors.txt (via FG_TEST_DATA),
 *    checked by id against the expectation written beside it; a vector this
 *    file does not know fails the run.
 * 2. Every strict prefix of every valid frame, header, batch and datagram
 *    vector, on stream and message transports.
 * 3. Every vector and every prefix decoded from a buffer whose last byte is
 *    the last byte before a PROT_NONE page.
 * 4. Encode/decode round trips and encoder refusals for every type, ACK
 *    building across MTUs, band classification, limits, reason names. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "fg/fano.h"
#include "fg/wire.h"

#include "../lib/fg_test_status.h" /* fg_test_status_equal */

/* ---- vectors ------------------------------------------------------------- */

struct vec {
	char id[8];
	char kind[16];
	uint8_t *b;
	size_t len;
	char expect[512];
};
static struct vec vecs[64];
static size_t n_vecs;

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = 0;
	return s;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parse hex digits until the first non-hex character; returns the count or -1. */
static long parse_hex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	while (hexval(s[0]) >= 0) {
		if (hexval(s[1]) < 0 || n >= cap)
			return -1;
		out[n++] = (uint8_t)(hexval(s[0]) << 4 | hexval(s[1]));
		s += 2;
	}
	return (long)n;
}

static int load_vectors(void **state)
{
	(void)state;
	const char *dir = getenv("FG_TEST_DATA");
	char path[4096], line[16384];
	if (!dir) {
		fprintf(stderr, "test_wire: FG_TEST_DATA is not set (directory holding vectors.txt)\n");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/vectors.txt", dir);
	FILE *fp = fopen(path, "r");
	if (!fp) {
		fprintf(stderr, "test_wire: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), fp)) {
		char *f[5];
		char *p = line;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		for (int i = 0; i < 5; i++) {
			f[i] = p;
			p = strchr(p, '|');
			if (!p && i < 4) {
				fprintf(stderr, "test_wire: bad vector line: %s\n", line);
				fclose(fp);
				return -1;
			}
			if (p)
				*p++ = 0;
		}
		if (n_vecs == FG_ARRAY_LEN(vecs)) {
			fprintf(stderr, "test_wire: too many vectors\n");
			fclose(fp);
			return -1;
		}
		struct vec *v = &vecs[n_vecs++];
		snprintf(v->id, sizeof(v->id), "%s", trim(f[0]));
		snprintf(v->kind, sizeof(v->kind), "%s", trim(f[1]));
		snprintf(v->expect, sizeof(v->expect), "%s", trim(f[3]));
		char *hex = trim(f[2]);
		v->b = malloc(strlen(hex) / 2 + 1);
		long n = parse_hex(hex, v->b, strlen(hex) / 2 + 1);
		if (n < 0 || (size_t)n * 2 != strlen(hex)) {
			fprintf(stderr, "test_wire: bad hex in vector %s\n", v->id);
			fclose(fp);
			return -1;
		}
		v->len = (size_t)n;
	}
	fclose(fp);
	if (n_vecs == 0) {
		fprintf(stderr, "test_wire: no vectors in %s\n", path);
		return -1;
	}
	return 0;
}

static int free_vectors(void **state)
{
	(void)state;
	for (size_t i = 0; i < n_vecs; i++)
		free(vecs[i].b);
	return 0;
}

static const struct vec *vec_get(const char *id)
{
	for (size_t i = 0; i < n_vecs; i++)
		if (!strcmp(vecs[i].id, id))
			return &vecs[i];
	fail_msg("vector %s missing from vectors.txt", id);
	return NULL;
}

/* The value after "key" where key starts a word (so "seq=" does not match
 * inside "token_seq="). NULL when absent. */
static const char *kv(const char *s, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = strstr(s, key); p; p = strstr(p + 1, key)) {
		if (p == s || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= '0' && p[-1] <= '9')))
			return p + kl;
	}
	return NULL;
}

static uint64_t kv_num(const char *s, const char *key)
{
	const char *p = kv(s, key);
	if (!p)
		fail_msg("expectation '%s' has no %s", s, key);
	return strtoull(p, NULL, 0);
}

static uint64_t kv_hex64(const char *s, const char *key)
{
	const char *p = kv(s, key);
	if (!p)
		fail_msg("expectation '%s' has no %s", s, key);
	return strtoull(p, NULL, 16);
}

/* field by field: the structs have padding */
static void assert_ack_equal(const struct fg_ack_entry *a, const struct fg_ack_entry *b)
{
	assert_int_equal(a->stream_id, b->stream_id);
	assert_int_equal(a->base_seq, b->base_seq);
	assert_int_equal(a->bitmap_hi, b->bitmap_hi);
	assert_int_equal(a->bitmap_lo, b->bitmap_lo);
}

static void assert_hdr_equal(const struct fg_hdr *a, const struct fg_hdr *b)
{
	assert_int_equal(a->stream_id, b->stream_id);
	assert_int_equal(a->sequence, b->sequence);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->length, b->length);
}

static bool starts_with(const char *s, const char *pre) { return !strncmp(s, pre, strlen(pre)); }

/* ---- guard pages ---------------------------------------------------------- */

/* A copy of src whose last byte is the last byte of a readable page followed
 * by a PROT_NONE page: any read past the end faults. */
struct guard {
	uint8_t *map;
	size_t map_len;
	uint8_t *p;
};

static void guard_place(struct guard *g, const uint8_t *src, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t pages = (len + pg - 1) / pg;
	if (pages == 0)
		pages = 1;
	g->map_len = (pages + 1) * pg;
	g->map = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(g->map != MAP_FAILED);
	assert_int_equal(mprotect(g->map + pages * pg, pg, PROT_NONE), 0);
	g->p = g->map + pages * pg - len;
	if (len)
		memcpy(g->p, src, len);
}

static void guard_free(struct guard *g) { munmap(g->map, g->map_len); }

/* ---- decode helpers used by the vector checks ----------------------------- */

static const struct fg_seed_limits lim4 = { .hidden = 4, .max_seq_len = 64 };
static const struct fg_seed_limits lim1 = { .hidden = 1, .max_seq_len = 64 };

/* The header's stream, sequence and flags are the expectation e's. */
static void check_hdr_fields(const struct fg_hdr *h, const char *e)
{
	assert_int_equal(h->stream_id, kv_num(e, "stream="));
	assert_int_equal(h->sequence, kv_num(e, "seq="));
	assert_int_equal(h->flags, kv_num(e, "flags="));
}

static void check_frame_fields(const struct fg_frame *f, const char *e)
{
	check_hdr_fields(&f->hdr, e);
	assert_int_equal(f->hdr.length, kv_num(e, "len="));
	const char *pl = kv(e, "payload=");
	if (pl) {
		uint8_t want[64];
		long n = parse_hex(pl, want, sizeof(want));
		assert_int_equal(n, f->hdr.length);
		assert_memory_equal(f->payload, want, (size_t)n);
	}
}

/* "ok stream=.. seq=.. flags=.. len=.. [payload=..]": one whole frame */
static void vec_frame_ok(const struct vec *v, const uint8_t *in)
{
	struct fg_frame f;
	assert_true(starts_with(v->expect, "ok"));
	for (int t = 0; t < 2; t++) {
		memset(&f, 0, sizeof(f));
		assert_int_equal(fg_frame_decode(in, v->len, (enum fg_transport)t, &f), (ssize_t)v->len);
		check_frame_fields(&f, v->expect);
		assert_ptr_equal(f.payload, in + FG_HDR_LEN);
	}
	struct fg_frame one[2];
	assert_int_equal(fg_batch_decode(in, v->len, one, 2), 1);
	check_frame_fields(&one[0], v->expect);
	/* re-encoding gives the same bytes */
	uint8_t out[64];
	assert_int_equal(fg_frame_encode(&f.hdr, f.payload, out, sizeof(out)), (ssize_t)v->len);
	assert_memory_equal(out, v->b, v->len);
}

/* Header-only vectors: the header decodes; the absent payload makes the
 * frame incomplete (stream) or truncated (message). */
static void vec_header_ok(const struct vec *v, const uint8_t *in)
{
	struct fg_hdr h;
	struct fg_frame f;
	assert_int_equal(v->len, FG_HDR_LEN);
	for (int t = 0; t < 2; t++) {
		assert_int_equal(fg_hdr_decode(in, v->len, (enum fg_transport)t, &h), FG_HDR_LEN);
		check_hdr_fields(&h, v->expect);
		assert_int_equal(h.length, kv_num(v->expect, "len="));
	}
	assert_true(h.length > 0);
	assert_int_equal(fg_frame_decode(in, v->len, FG_TRANSPORT_STREAM, &f), -FG_R_INCOMPLETE);
	assert_int_equal(fg_frame_decode(in, v->len, FG_TRANSPORT_MESSAGE, &f), -FG_R_TRUNCATED_FRAME);
	uint8_t out[FG_HDR_LEN];
	assert_int_equal(fg_hdr_encode(&h, out, sizeof(out)), FG_HDR_LEN);
	assert_memory_equal(out, v->b, FG_HDR_LEN);
}

/* F10: "ok 3 frames: (0,0,0x01,01) (0,1,0x00,0203) (2,0,0x10,-)" */
static void vec_batch_ok(const struct vec *v, const uint8_t *in)
{
	struct fg_frame fr[8];
	const char *p = v->expect;
	assert_true(starts_with(p, "ok "));
	long want = strtol(p + 3, NULL, 10);
	assert_int_equal(fg_batch_decode(in, v->len, fr, 8), want);
	for (long i = 0; i < want; i++) {
		p = strchr(p, '(');
		assert_non_null(p);
		char *end;
		unsigned long s = strtoul(p + 1, &end, 0);
		unsigned long q = strtoul(end + 1, &end, 0);
		unsigned long fl = strtoul(end + 1, &end, 0);
		assert_int_equal(fr[i].hdr.stream_id, s);
		assert_int_equal(fr[i].hdr.sequence, q);
		assert_int_equal(fr[i].hdr.flags, fl);
		uint8_t pl[16];
		long n = end[1] == '-' ? 0 : parse_hex(end + 1, pl, sizeof(pl));
		assert_int_equal(fr[i].hdr.length, n);
		assert_memory_equal(fr[i].payload, pl, (size_t)n);
		p++;
	}
}

static void vec_f11(const struct vec *v, const uint8_t *in)
{
	struct fg_frame f;
	assert_non_null(strstr(v->expect, "malformed on datagram/message"));
	assert_non_null(strstr(v->expect, "incomplete on a stream"));
	assert_int_equal(fg_frame_decode(in, v->len, FG_TRANSPORT_STREAM, &f), -FG_R_INCOMPLETE);
	assert_int_equal(fg_frame_decode(in, v->len, FG_TRANSPORT_MESSAGE, &f), -FG_R_TRUNCATED_FRAME);
	assert_int_equal(fg_batch_decode(in, v->len, &f, 1), -FG_R_TRUNCATED_FRAME);
}

static void vec_f12(const struct vec *v, const uint8_t *in)
{
	struct fg_frame f[4];
	assert_true(starts_with(v->expect, "malformed: truncated frame after one complete frame"));
	f[0].payload = NULL;
	assert_int_equal(fg_batch_decode(in, v->len, f, 4), -FG_R_TRUNCATED_FRAME);
	assert_null(f[0].payload); /* nothing written on failure */
	/* the first frame alone is whole; what follows is a short header */
	ssize_t n = fg_frame_decode(in, v->len, FG_TRANSPORT_MESSAGE, &f[0]);
	assert_true(n > 0 && (size_t)n < v->len && v->len - (size_t)n < FG_HDR_LEN);
	assert_int_equal(fg_frame_decode(in + n, v->len - (size_t)n, FG_TRANSPORT_STREAM, &f[1]),
			 -FG_R_INCOMPLETE);
	assert_int_equal(fg_batch_decode(in, (size_t)n, f, 4), 1);
}

static void vec_f13(const struct vec *v, const uint8_t *in)
{
	struct fg_frame f;
	assert_true(starts_with(v->expect, "malformed/incomplete"));
	assert_true(v->len < FG_HDR_LEN);
	assert_int_equal(fg_frame_decode(in, v->len, FG_TRANSPORT_STREAM, &f), -FG_R_INCOMPLETE);
	assert_int_equal(fg_frame_decode(in, v->len, FG_TRANSPORT_MESSAGE, &f), -FG_R_SHORT_HEADER);
	assert_int_equal(fg_batch_decode(in, v->len, &f, 1), -FG_R_SHORT_HEADER);
}

static void check_frag_fields(const struct fg_frag *fr, const char *e)
{
	assert_int_equal(fr->frame_id, kv_num(e, "frame_id="));
	assert_int_equal(fr->index, kv_num(e, "index="));
	assert_int_equal(fr->total, kv_num(e, "total="));
}

/* U01: one unfragmented datagram carrying F07 */
static void vec_u01(const struct vec *v, const uint8_t *in)
{
	struct fg_frag fr;
	struct fg_frame f;
	const struct vec *f07 = vec_get("F07");
	assert_non_null(strstr(v->expect, "carries frame F07 whole"));
	assert_int_equal(fg_frag_decode(in, v->len, &fr), (ssize_t)v->len);
	check_frag_fields(&fr, v->expect);
	assert_int_equal(fr.chunk_len, f07->len);
	assert_memory_equal(fr.chunk, f07->b, f07->len);
	assert_int_equal(fg_frag_check(&fr, fg_frag_chunk_size(1472)), 0);
	assert_int_equal(fg_frame_decode(fr.chunk, fr.chunk_len, FG_TRANSPORT_MESSAGE, &f), (ssize_t)fr.chunk_len);
	uint8_t out[64];
	assert_int_equal(fg_frag_encode(&fr, out, sizeof(out)), (ssize_t)v->len);
	assert_memory_equal(out, v->b, v->len);
}

/* U02..U04: one fragment each; the group is reassembled in every order by
 * test_u_group_reassembly. "chunk bytes [a,b) of a N-byte frame" */
static void vec_u_frag(const struct vec *v, const uint8_t *in)
{
	struct fg_frag fr;
	const uint32_t C = fg_frag_chunk_size(1472);
	assert_int_equal(fg_frag_decode(in, v->len, &fr), (ssize_t)v->len);
	check_frag_fields(&fr, v->expect);
	const char *r = strstr(v->expect, "chunk bytes [");
	assert_non_null(r);
	char *end;
	unsigned long a = strtoul(r + 13, &end, 10);
	unsigned long b = strtoul(end + 1, &end, 10);
	unsigned long total = strtoul(strstr(end, "of a ") + 5, NULL, 10);
	assert_int_equal(a, (unsigned long)fr.index * C);
	assert_int_equal(fr.chunk_len, b - a);
	assert_int_equal(fg_frag_check(&fr, C), 0);
	assert_int_equal(fg_frag_count((uint32_t)total, C), fr.total);
}

static void vec_frag_bad(const struct vec *v, const uint8_t *in, int reason)
{
	struct fg_frag fr = { 0 };
	assert_true(starts_with(v->expect, "malformed"));
	assert_int_equal(fg_frag_decode(in, v->len, &fr), -reason);
	assert_null(fr.chunk);
}

static void vec_u05(const struct vec *v, const uint8_t *in) { vec_frag_bad(v, in, FG_R_FRAG_TOTAL_ZERO); }
static void vec_u06(const struct vec *v, const uint8_t *in) { vec_frag_bad(v, in, FG_R_FRAG_INDEX_RANGE); }
static void vec_u07(const struct vec *v, const uint8_t *in) { vec_frag_bad(v, in, FG_R_FRAG_SHORT); }

/* A01: "stream=42 base=100 acks {100,101,103,107,163}" */
static void vec_a01(const struct vec *v, const uint8_t *in)
{
	struct fg_ack_entry e;
	bool want[200] = { false };
	assert_int_equal(fg_ack_entry_decode(in, v->len, &e), FG_ACK_ENTRY_LEN);
	assert_int_equal(e.stream_id, kv_num(v->expect, "stream="));
	uint32_t base = (uint32_t)kv_num(v->expect, "base=");
	assert_int_equal(e.base_seq, base);
	const char *p = strchr(v->expect, '{');
	assert_non_null(p);
	int count = 0;
	while (*p && *p != '}') {
		char *end;
		unsigned long s = strtoul(p + 1, &end, 10);
		assert_true(s >= base && s < base + 100);
		want[s - base + 50] = true;
		count++;
		p = end;
	}
	assert_int_equal(count, 5);
	/* every seq from base - 50 to base + 149: covered exactly when listed */
	for (uint32_t i = 0; i < 200; i++)
		assert_int_equal(fg_ack_entry_covers(&e, base - 50 + i), want[i]);
	uint8_t out[FG_ACK_ENTRY_LEN];
	assert_int_equal(fg_ack_entry_encode(&e, out, sizeof(out)), FG_ACK_ENTRY_LEN);
	assert_memory_equal(out, v->b, FG_ACK_ENTRY_LEN);
	/* one byte short */
	assert_int_equal(fg_ack_entry_decode(in + 1, v->len - 1, &e), -FG_R_ACK_LENGTH);
}

/* A02: an ACK datagram holding A01; fg_ack_build must produce it exactly */
static void vec_a02(const struct vec *v, const uint8_t *in)
{
	struct fg_frag fr;
	struct fg_frame f;
	struct fg_ack_entry e[4], a01;
	const struct vec *va = vec_get("A01");
	assert_non_null(strstr(v->expect, "one entry = A01"));
	assert_int_equal(fg_frag_decode(in, v->len, &fr), (ssize_t)v->len);
	assert_int_equal(fr.frame_id, kv_num(v->expect, "frame_id "));
	assert_int_equal(fr.index, 0);
	assert_int_equal(fr.total, 1);
	assert_int_equal(fg_frame_decode(fr.chunk, fr.chunk_len, FG_TRANSPORT_MESSAGE, &f), (ssize_t)fr.chunk_len);
	check_hdr_fields(&f.hdr, v->expect);
	assert_int_equal(fg_ack_frame_decode(&f, e, 4), 1);
	assert_int_equal(fg_ack_entry_decode(va->b, va->len, &a01), FG_ACK_ENTRY_LEN);
	assert_ack_equal(&e[0], &a01);
	uint8_t out[256];
	uint32_t lens[2];
	assert_int_equal(fg_ack_build(&a01, 1, 1472, fr.frame_id, out, sizeof(out), lens, 2), 1);
	assert_int_equal(lens[0], v->len);
	assert_memory_equal(out, v->b, v->len);
}

/* S01/S02: "seed dst_layer=1 token_seq=42 line=1 (1,4,5) sign=+ start_pos=0
 * seq_len=1 floats=[...] (hidden=4) [; body xxh3_64=...]" */
static void vec_seed_ok(const struct vec *v, const uint8_t *in)
{
	struct fg_frame f;
	struct fg_seed s;
	struct fg_bands b;
	enum fg_band band;
	uint16_t layer;
	const char *e = v->expect;
	fg_bands_default(&b);
	assert_int_equal(kv_num(e, "hidden="), 4);
	assert_int_equal(fg_frame_decode(in, v->len, FG_TRANSPORT_MESSAGE, &f), (ssize_t)v->len);
	assert_int_equal(fg_stream_classify(&b, f.hdr.stream_id, &band, &layer), 0);
	assert_int_equal(band, FG_BAND_SEED);
	assert_int_equal(layer, kv_num(e, "dst_layer="));
	assert_int_equal(fg_seed_decode(&f, layer, &lim4, &s), (ssize_t)f.hdr.length);
	assert_int_equal(s.token_seq, kv_num(e, "token_seq="));
	assert_int_equal(s.dst_layer, layer);
	assert_int_equal(s.line, kv_num(e, "line="));
	/* the named triple is the line's triple in the fleet's order */
	const uint8_t *tri = fg_fano_line(s.line);
	char name[16];
	snprintf(name, sizeof(name), "(%u,%u,%u)", tri[0], tri[1], tri[2]);
	assert_non_null(strstr(e, name));
	const char *sign = kv(e, "sign=");
	assert_non_null(sign);
	assert_int_equal(s.orientation, *sign == '-' ? 1 : 0);
	assert_int_equal(s.start_pos, kv_num(e, "start_pos="));
	assert_int_equal(s.seq_len, kv_num(e, "seq_len="));
	const char *fl = kv(e, "floats=[");
	assert_non_null(fl);
	uint32_t nf = 0;
	while (*fl && *fl != ']') {
		char *end;
		float want = strtof(fl, &end);
		float got;
		assert_true(nf * 4 + 4 <= s.body_len);
		memcpy(&got, s.body + nf * 4, 4);
		assert_memory_equal(&got, &want, 4); /* bit for bit */
		nf++;
		fl = *end == ',' ? end + 1 : end;
	}
	assert_int_equal(nf * 4, s.body_len);
	assert_int_equal(nf, s.seq_len * lim4.hidden);
	if (kv(e, "xxh3_64="))
		assert_int_equal(fg_fingerprint(s.body, s.body_len), kv_hex64(e, "xxh3_64="));
	/* prefix-only decode agrees */
	struct fg_seed sp;
	assert_int_equal(fg_seed_decode_prefix(&f.hdr, f.payload, FG_SEED_PREFIX_LEN, layer, &lim4, &sp),
			 FG_HDR_LEN + FG_SEED_PREFIX_LEN);
	assert_null(sp.body);
	assert_int_equal(sp.body_len, s.body_len);
	assert_int_equal(sp.line, s.line);
	assert_int_equal(sp.orientation, s.orientation);
	assert_int_equal(sp.seq_len, s.seq_len);
	/* re-encoding gives the same bytes */
	uint8_t out[128];
	assert_int_equal(fg_seed_encode(&b, &s, out, sizeof(out)), (ssize_t)v->len);
	assert_memory_equal(out, v->b, v->len);
}

/* The malformed seed vectors: what the expectation text names, and the
 * reason the decoder must give. */
static const struct {
	const char *id, *names;
	int reason;
} bad_seeds[] = {
	{ "S03", "line 7", FG_R_SEED_LINE },
	{ "S04", "orientation 2", FG_R_SEED_ORIENTATION },
	{ "S05", "not a whole number of f32 rows", FG_R_SEED_BODY_ROWS },
	{ "S06", "seq_len=2", FG_R_SEED_BODY_LENGTH },
	{ "S07", "shorter than the 8-byte prefix", FG_R_SEED_PREFIX },
};

static void vec_seed_bad(const struct vec *v, const uint8_t *in)
{
	struct fg_frame f;
	struct fg_seed s = { 0 };
	size_t i = 0;
	while (i < FG_ARRAY_LEN(bad_seeds) && strcmp(bad_seeds[i].id, v->id))
		i++;
	if (i == FG_ARRAY_LEN(bad_seeds))
		fail_msg("%s is not in bad_seeds", v->id);
	const int reason = bad_seeds[i].reason;
	assert_non_null(strstr(v->expect, bad_seeds[i].names));
	assert_true(starts_with(v->expect, "malformed"));
	assert_int_equal(fg_frame_decode(in, v->len, FG_TRANSPORT_MESSAGE, &f), (ssize_t)v->len);
	assert_int_equal(fg_seed_decode(&f, 2, &lim4, &s), -reason);
	assert_null(s.body);
	if (reason != FG_R_SEED_PREFIX || f.hdr.length >= FG_SEED_PREFIX_LEN) {
		/* the first fragment alone gives the same verdict */
		size_t have = f.hdr.length < FG_SEED_PREFIX_LEN ? f.hdr.length : FG_SEED_PREFIX_LEN;
		assert_int_equal(fg_seed_decode_prefix(&f.hdr, f.payload, have, 2, &lim4, &s), -reason);
	}
}


static void decode_seed_vec(const char *id, struct fg_frame *f, struct fg_seed *s)
{
	const struct vec *v = vec_get(id);
	assert_int_equal(fg_frame_decode(v->b, v->len, FG_TRANSPORT_MESSAGE, f), (ssize_t)v->len);
	assert_true(fg_seed_decode(f, 1, &lim4, s) > 0);
}

/* C01: canonical full residual equal to the seed resolved from S01 alone */
static void vec_c01(const struct vec *v, const uint8_t *in)
{
	struct fg_frame f, fs;
	struct fg_canon c;
	struct fg_seed s01;
	struct fg_bands b;
	enum fg_band band;
	uint16_t layer;
	fg_bands_default(&b);
	decode_seed_vec("S01", &fs, &s01);
	assert_int_equal(fg_frame_decode(in, v->len, FG_TRANSPORT_MESSAGE, &f), (ssize_t)v->len);
	assert_int_equal(fg_stream_classify(&b, f.hdr.stream_id, &band, &layer), 0);
	assert_int_equal(band, FG_BAND_CANONICAL);
	assert_int_equal(layer, kv_num(v->expect, "dst_layer="));
	assert_int_equal(f.hdr.sequence, kv_num(v->expect, "token_seq="));
	assert_int_equal(fg_canon_decode(&f, layer, &lim4, &c), (ssize_t)f.hdr.length);
	assert_int_equal(c.kind, FG_CANON_FULL);
	assert_int_equal(c.token_seq, s01.token_seq);
	assert_int_equal(c.start_pos, s01.start_pos);
	assert_int_equal(c.seq_len, s01.seq_len);
	assert_int_equal(c.digest, 0);
	/* a rule of one line with orientation + resolves to that body itself */
	assert_int_equal(s01.orientation, 0);
	assert_int_equal(c.body_len, s01.body_len);
	assert_memory_equal(c.body, s01.body, c.body_len);
	assert_int_equal(fg_fingerprint(c.body, c.body_len), fg_fingerprint(s01.body, s01.body_len));
	uint8_t out[128];
	assert_int_equal(fg_canon_encode(&b, &c, out, sizeof(out)), (ssize_t)v->len);
	assert_memory_equal(out, v->b, v->len);
}

/* C02: digest report = xxh3 of S01's body */
static void vec_c02(const struct vec *v, const uint8_t *in)
{
	struct fg_frame f, fs;
	struct fg_canon c;
	struct fg_seed s01;
	struct fg_bands b;
	fg_bands_default(&b);
	decode_seed_vec("S01", &fs, &s01);
	assert_int_equal(fg_frame_decode(in, v->len, FG_TRANSPORT_MESSAGE, &f), (ssize_t)v->len);
	assert_int_equal(fg_canon_decode(&f, 1, &lim4, &c), FG_DIGEST_PAYLOAD_LEN);
	assert_int_equal(c.kind, FG_CANON_DIGEST);
	assert_int_equal(c.token_seq, kv_num(v->expect, "token_seq="));
	assert_null(c.body);
	assert_int_equal(c.digest, kv_hex64(v->expect, "xxh3_64 "));
	assert_int_equal(c.digest, fg_fingerprint(s01.body, s01.body_len));
	assert_non_null(strstr(v->expect, "(match)"));
	uint8_t out[64];
	assert_int_equal(fg_canon_encode(&b, &c, out, sizeof(out)), (ssize_t)v->len);
	assert_memory_equal(out, v->b, v->len);
}

/* R01/R02: contributions back to back (hidden=1); the decoded values
 * reduced in the rule's order give the stated bits. */
static void vec_reduce(const struct vec *v, const uint8_t *in)
{
	struct fg_frame fr[8];
	struct fg_bands b;
	fg_bands_default(&b);
	assert_int_equal(kv_num(v->expect, "hidden="), 1);
	const char *ex = strstr(v->expect, "expect lines {");
	if (!ex)
		ex = strstr(v->expect, "restricted to lines {");
	assert_non_null(ex);
	ex = strchr(ex, '{');
	uint8_t order[7];
	unsigned n_rule = 0;
	while (*ex && *ex != '}') {
		char *end;
		order[n_rule++] = (uint8_t)strtoul(ex + 1, &end, 10);
		ex = end;
	}
	int n = fg_batch_decode(in, v->len, fr, 8);
	assert_int_equal(n, (int)n_rule);
	float val[7] = { 0 };
	uint8_t neg[7] = { 0 }, seen = 0;
	for (int i = 0; i < n; i++) {
		enum fg_band band;
		uint16_t layer;
		struct fg_seed s;
		assert_int_equal(fg_stream_classify(&b, fr[i].hdr.stream_id, &band, &layer), 0);
		assert_int_equal(band, FG_BAND_SEED);
		assert_int_equal(layer, 3);
		assert_true(fg_seed_decode(&fr[i], layer, &lim1, &s) > 0);
		assert_int_equal(s.body_len, 4);
		assert_false(seen & (1u << s.line));
		seen |= (uint8_t)(1u << s.line);
		memcpy(&val[s.line], s.body, 4);
		neg[s.line] = s.orientation;
	}
	/* canonical order = the listed order, one rounding per step */
	float r = neg[order[0]] ? -val[order[0]] : val[order[0]];
	for (unsigned i = 1; i < n_rule; i++)
		r = neg[order[i]] ? r - val[order[i]] : r + val[order[i]];
	uint32_t bits;
	memcpy(&bits, &r, 4);
	assert_int_equal(bits, kv_hex64(v->expect, "(bits "));
	if (!strcmp(v->id, "R01")) {
		/* the other association gives 1.0: the order matters */
		float other = val[0] + (val[1] + val[2]);
		assert_true(other == 1.0f);
	}
}

static void vec_x01(const struct vec *v, const uint8_t *in)
{
	(void)in; /* the empty body */
	assert_int_equal(v->len, 0);
	assert_int_equal(fg_fingerprint(NULL, 0), kv_hex64(v->expect, "xxh3_64 of the empty body = "));
	assert_int_equal(fg_fingerprint("", 0), 0x2d06800538d394c2ull);
}

/* A vector's check: v, with its bytes at in, whose last byte is the last
 * one of a readable page (test_every_vector places them there). */
struct vec_handler {
	const char *id;
	void (*fn)(const struct vec *v, const uint8_t *in);
};
static const struct vec_handler handlers[] = {
	{ "F01", vec_frame_ok },  { "F02", vec_frame_ok },  { "F03", vec_frame_ok },  { "F04", vec_header_ok },
	{ "F05", vec_header_ok }, { "F06", vec_header_ok }, { "F07", vec_frame_ok },  { "F08", vec_header_ok },
	{ "F09", vec_header_ok }, { "F10", vec_batch_ok },  { "F11", vec_f11 },       { "F12", vec_f12 },
	{ "F13", vec_f13 },       { "U01", vec_u01 },       { "U02", vec_u_frag },    { "U03", vec_u_frag },
	{ "U04", vec_u_frag },    { "U05", vec_u05 },       { "U06", vec_u06 },       { "U07", vec_u07 },
	{ "A01", vec_a01 },       { "A02", vec_a02 },       { "S01", vec_seed_ok },   { "S02", vec_seed_ok },
	{ "S03", vec_seed_bad },  { "S04", vec_seed_bad },  { "S05", vec_seed_bad },  { "S06", vec_seed_bad },
	{ "S07", vec_seed_bad },       { "C01", vec_c01 },       { "C02", vec_c02 },       { "R01", vec_reduce },
	{ "R02", vec_reduce },    { "X01", vec_x01 },
};

static void test_every_vector(void **state)
{
	(void)state;
	size_t checked = 0;
	for (size_t i = 0; i < n_vecs; i++) {
		const struct vec_handler *h = NULL;
		for (size_t j = 0; j < FG_ARRAY_LEN(handlers); j++)
			if (!strcmp(handlers[j].id, vecs[i].id))
				h = &handlers[j];
		if (!h)
			fail_msg("vector %s has no check in test_wire.c", vecs[i].id);
		print_message("vector %s (%s)\n", vecs[i].id, vecs[i].kind);
		struct guard g;
		guard_place(&g, vecs[i].b, vecs[i].len);
		h->fn(&vecs[i], g.p);
		guard_free(&g);
		checked++;
	}
	/* and no check refers to a vector that disappeared */
	for (size_t j = 0; j < FG_ARRAY_LEN(handlers); j++)
		assert_non_null(vec_get(handlers[j].id));
	assert_int_equal(checked, FG_ARRAY_LEN(handlers));
}

/* U02..U04 reassembled in all 6 arrival orders. */
static void test_u_group_reassembly(void **state)
{
	(void)state;
	static const int perms[6][3] = { { 0, 1, 2 }, { 0, 2, 1 }, { 1, 0, 2 }, { 1, 2, 0 }, { 2, 0, 1 }, { 2, 1, 0 } };
	const struct vec *u[3] = { vec_get("U02"), vec_get("U03"), vec_get("U04") };
	const uint32_t C = fg_frag_chunk_size(1472);
	assert_int_equal(C, 1468);
	for (int p = 0; p < 6; p++) {
		uint8_t buf[4096];
		uint32_t have = 0, got = 0, total = 0, frame_len = 0;
		for (int k = 0; k < 3; k++) {
			struct fg_frag fr;
			const struct vec *v = u[perms[p][k]];
			assert_int_equal(fg_frag_decode(v->b, v->len, &fr), (ssize_t)v->len);
			assert_int_equal(fg_frag_check(&fr, C), 0);
			if (total)
				assert_int_equal(fr.total, total);
			total = fr.total;
			assert_false(have & (1u << fr.index));
			have |= 1u << fr.index;
			memcpy(buf + (size_t)fr.index * C, fr.chunk, fr.chunk_len);
			got += fr.chunk_len;
			if (fr.index == fr.total - 1)
				frame_len = (fr.total - 1u) * C + fr.chunk_len;
		}
		assert_int_equal(have, 7);
		assert_int_equal(got, frame_len);
		assert_int_equal(frame_len, 3082);
		struct fg_frame f;
		assert_int_equal(fg_frame_decode(buf, frame_len, FG_TRANSPORT_MESSAGE, &f), 3082);
		assert_int_equal(f.hdr.stream_id, 7);
		assert_int_equal(f.hdr.sequence, 0);
		assert_int_equal(f.hdr.length, 3072);
		for (uint32_t i = 0; i < f.hdr.length; i++)
			assert_int_equal(f.payload[i], i & 0xFF);
	}
}

/* ---- prefixes, at the guard page ----------------------------------------- */

static bool vec_is_valid(const struct vec *v) { return !starts_with(v->expect, "malformed") && v->len > 0; }

static void prefixes_frame(const struct vec *v)
{
	for (size_t k = 0; k < v->len; k++) {
		struct guard g;
		struct fg_frame f;
		guard_place(&g, v->b, k);
		assert_int_equal(fg_frame_decode(g.p, k, FG_TRANSPORT_STREAM, &f), -FG_R_INCOMPLETE);
		int msg = k < FG_HDR_LEN ? FG_R_SHORT_HEADER : FG_R_TRUNCATED_FRAME;
		assert_int_equal(fg_frame_decode(g.p, k, FG_TRANSPORT_MESSAGE, &f), -msg);
		assert_int_equal(fg_batch_decode(g.p, k, &f, 1), k == 0 ? 0 : -msg);
		if (k < FG_HDR_LEN) {
			struct fg_hdr h;
			assert_int_equal(fg_hdr_decode(g.p, k, FG_TRANSPORT_STREAM, &h), -FG_R_INCOMPLETE);
			assert_int_equal(fg_hdr_decode(g.p, k, FG_TRANSPORT_MESSAGE, &h), -FG_R_SHORT_HEADER);
		}
		guard_free(&g);
	}
}

/* A batch prefix is a valid batch when it ends on a frame boundary, and
 * malformed otherwise; a stream reader takes the whole frames and asks for
 * more. */
static void prefixes_batch(const struct vec *v)
{
	size_t bound[16], nb = 0, off = 0;
	struct fg_frame f;
	bound[nb++] = 0;
	while (off < v->len) {
		ssize_t r = fg_frame_decode(v->b + off, v->len - off, FG_TRANSPORT_MESSAGE, &f);
		assert_true(r > 0);
		off += (size_t)r;
		bound[nb++] = off;
	}
	for (size_t k = 0; k < v->len; k++) {
		struct guard g;
		struct fg_frame fr[16];
		size_t whole = 0;
		while (whole + 1 < nb && bound[whole + 1] <= k)
			whole++;
		guard_place(&g, v->b, k);
		int want;
		if (bound[whole] == k)
			want = (int)whole;
		else if (whole == 0 && k < FG_HDR_LEN)
			want = -FG_R_SHORT_HEADER;
		else
			want = -FG_R_TRUNCATED_FRAME;
		assert_int_equal(fg_batch_decode(g.p, k, fr, 16), want);
		/* stream reading */
		size_t o = 0, frames = 0;
		for (;;) {
			ssize_t r = fg_frame_decode(g.p + o, k - o, FG_TRANSPORT_STREAM, &f);
			if (r == -FG_R_INCOMPLETE)
				break;
			assert_true(r > 0);
			o += (size_t)r;
			frames++;
		}
		assert_int_equal(frames, whole);
		assert_int_equal(o, bound[whole]);
		guard_free(&g);
	}
}

static void prefixes_datagram(const struct vec *v)
{
	struct fg_frag full;
	const uint32_t C = fg_frag_chunk_size(1472);
	assert_int_equal(fg_frag_decode(v->b, v->len, &full), (ssize_t)v->len);
	for (size_t k = 0; k < v->len; k++) {
		struct guard g;
		struct fg_frag fr;
		struct fg_frame f;
		guard_place(&g, v->b, k);
		ssize_t r = fg_frag_decode(g.p, k, &fr);
		if (k < FG_FRAG_HDR_LEN) {
			assert_int_equal(r, -FG_R_FRAG_SHORT);
		} else if (k == FG_FRAG_HDR_LEN) {
			assert_int_equal(r, -FG_R_FRAG_CHUNK_SIZE);
		} else {
			assert_int_equal(r, (ssize_t)k);
			if (fr.total == 1) {
				/* an unfragmented datagram must hold one whole frame */
				int msg = fr.chunk_len < FG_HDR_LEN ? FG_R_SHORT_HEADER : FG_R_TRUNCATED_FRAME;
				assert_int_equal(fg_frame_decode(fr.chunk, fr.chunk_len, FG_TRANSPORT_MESSAGE, &f),
						 -msg);
			} else if (fr.index + 1 < fr.total) {
				assert_int_equal(fg_frag_check(&fr, C), -FG_R_FRAG_CHUNK_SIZE);
			} else {
				/* a short last chunk: the reassembled length disagrees
				 * with the frame header (3082 bytes for U02..U04) */
				assert_int_equal(fg_frag_check(&fr, C), 0);
				assert_true((fr.total - 1u) * C + fr.chunk_len < 3082);
			}
		}
		guard_free(&g);
	}
}

static void prefixes_ack_entry(const struct vec *v)
{
	for (size_t k = 0; k < v->len; k++) {
		struct guard g;
		struct fg_ack_entry e;
		guard_place(&g, v->b, k);
		assert_int_equal(fg_ack_entry_decode(g.p, k, &e), -FG_R_ACK_LENGTH);
		guard_free(&g);
	}
}

static void test_prefixes(void **state)
{
	(void)state;
	size_t done = 0;
	for (size_t i = 0; i < n_vecs; i++) {
		const struct vec *v = &vecs[i];
		if (!vec_is_valid(v))
			continue;
		if (!strcmp(v->kind, "frame") || !strcmp(v->kind, "header"))
			prefixes_frame(v);
		else if (!strcmp(v->kind, "batch") || !strcmp(v->kind, "reduce"))
			prefixes_batch(v);
		else if (!strcmp(v->kind, "datagram"))
			prefixes_datagram(v);
		else if (!strcmp(v->kind, "ack-entry"))
			prefixes_ack_entry(v);
		else
			continue;
		done++;
	}
	assert_true(done >= 20);
}

/* ---- round trips and refusals -------------------------------------------- */

static void test_hdr_frame_roundtrip(void **state)
{
	(void)state;
	static const struct fg_hdr hs[] = {
		{ 0, 0, 0, 0 }, { 0xFFFF, 0xFFFFFFFF, 0xFF, 3 }, { 0xAF60, 42, 0x10, 200 }, { 1, 2, 3, 4000 },
	};
	uint8_t payload[4096], buf[8192];
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	for (size_t i = 0; i < FG_ARRAY_LEN(hs); i++) {
		struct fg_frame f;
		ssize_t n = fg_frame_encode(&hs[i], payload, buf, sizeof(buf));
		assert_int_equal(n, FG_HDR_LEN + hs[i].length);
		assert_int_equal(fg_frame_decode(buf, (size_t)n, FG_TRANSPORT_MESSAGE, &f), n);
		assert_hdr_equal(&f.hdr, &hs[i]);
		assert_memory_equal(f.payload, payload, hs[i].length);
		/* one byte of room short */
		assert_int_equal(fg_frame_encode(&hs[i], payload, buf, (size_t)n - 1), -FG_R_NOSPACE);
	}
	struct fg_hdr big = { 1, 1, 0, FG_LEN_MAX + 1 };
	assert_int_equal(fg_hdr_encode(&big, buf, sizeof(buf)), -FG_R_UNENCODABLE);
	assert_int_equal(fg_frame_encode(&big, payload, buf, sizeof(buf)), -FG_R_UNENCODABLE);
	struct fg_hdr max = { 1, 1, 0, FG_LEN_MAX };
	assert_int_equal(fg_hdr_encode(&max, buf, FG_HDR_LEN - 1), -FG_R_NOSPACE);
	assert_int_equal(fg_hdr_encode(&max, buf, FG_HDR_LEN), FG_HDR_LEN);
	struct fg_hdr back;
	assert_int_equal(fg_hdr_decode(buf, FG_HDR_LEN, FG_TRANSPORT_STREAM, &back), FG_HDR_LEN);
	assert_int_equal(back.length, FG_LEN_MAX);
	struct fg_hdr nopl = { 1, 1, 0, 5 };
	assert_int_equal(fg_frame_encode(&nopl, NULL, buf, sizeof(buf)), -FG_R_UNENCODABLE);
}

static void test_batch_roundtrip(void **state)
{
	(void)state;
	uint8_t buf[4096], pl[512];
	static const uint32_t lens[] = { 0, 1, 9, 10, 11, 500, 0 };
	size_t off = 0;
	memset(pl, 0xA5, sizeof(pl));
	for (size_t i = 0; i < FG_ARRAY_LEN(lens); i++) {
		struct fg_hdr h = { (uint16_t)i, (uint32_t)(i * 1000), (uint8_t)i, lens[i] };
		ssize_t n = fg_frame_encode(&h, pl, buf + off, sizeof(buf) - off);
		assert_true(n > 0);
		off += (size_t)n;
	}
	struct fg_frame fr[16];
	assert_int_equal(fg_batch_decode(buf, off, fr, 16), (int)FG_ARRAY_LEN(lens));
	for (size_t i = 0; i < FG_ARRAY_LEN(lens); i++) {
		assert_int_equal(fr[i].hdr.stream_id, i);
		assert_int_equal(fr[i].hdr.sequence, i * 1000);
		assert_int_equal(fr[i].hdr.length, lens[i]);
	}
	/* max smaller than the count: count returned, only max filled */
	memset(fr, 0xEE, sizeof(fr));
	assert_int_equal(fg_batch_decode(buf, off, fr, 2), (int)FG_ARRAY_LEN(lens));
	assert_int_equal(fr[1].hdr.stream_id, 1);
	assert_int_equal(fr[2].hdr.stream_id, 0xEEEE);
	/* every count of stray bytes after the batch condemns it */
	for (size_t extra = 1; extra < FG_HDR_LEN; extra++)
		assert_int_equal(fg_batch_decode(buf, off + extra, fr, 16), -FG_R_TRUNCATED_FRAME);
	assert_int_equal(fg_batch_decode(buf, 0, fr, 16), 0);
	assert_int_equal(fg_batch_decode(NULL, 0, NULL, 0), 0);
}

static void test_frag_roundtrip(void **state)
{
	(void)state;
	/* a seed frame split for MTU 1472 and reassembled */
	static uint8_t body[4 * 1000], frame[16384], dgrams[64][1472], back[16384];
	struct fg_bands b;
	fg_bands_default(&b);
	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (uint8_t)(i * 31);
	struct fg_seed s = { 7, 3, 2, 1, 10, 250, body, sizeof(body) };
	ssize_t L = fg_seed_encode(&b, &s, frame, sizeof(frame));
	assert_int_equal(L, FG_HDR_LEN + FG_SEED_PREFIX_LEN + sizeof(body));
	uint32_t C = fg_frag_chunk_size(1472);
	uint32_t n = fg_frag_count((uint32_t)L, C);
	assert_int_equal(n, 3);
	ssize_t dl[64];
	for (uint32_t i = 0; i < n; i++) {
		uint32_t a = i * C, e = a + C < (uint32_t)L ? a + C : (uint32_t)L;
		struct fg_frag f = { 0xFFFF, (uint8_t)i, (uint8_t)n, frame + a, e - a };
		dl[i] = fg_frag_encode(&f, dgrams[i], sizeof(dgrams[i]));
		assert_true(dl[i] > 0 && dl[i] <= 1472);
	}
	for (uint32_t k = n; k-- > 0;) { /* reverse arrival */
		struct fg_frag f;
		assert_int_equal(fg_frag_decode(dgrams[k], (size_t)dl[k], &f), dl[k]);
		assert_int_equal(f.frame_id, 0xFFFF);
		assert_int_equal(f.total, n);
		assert_int_equal(fg_frag_check(&f, C), 0);
		memcpy(back + (size_t)f.index * C, f.chunk, f.chunk_len);
	}
	assert_memory_equal(back, frame, (size_t)L);
	/* the first fragment alone validates the seed's shape */
	struct fg_hdr h;
	struct fg_seed sp;
	struct fg_seed_limits lim = { 4, 250, FG_ORIENT_BIT };
	struct fg_seed_limits lim_small = { 4, 249, FG_ORIENT_BIT };
	assert_int_equal(fg_hdr_decode(dgrams[0] + 4, C, FG_TRANSPORT_STREAM, &h), FG_HDR_LEN);
	assert_int_equal(fg_seed_decode_prefix(&h, dgrams[0] + 4 + FG_HDR_LEN, C - FG_HDR_LEN, 3, &lim, &sp),
			 FG_HDR_LEN + FG_SEED_PREFIX_LEN);
	assert_int_equal(sp.body_len, sizeof(body));
	assert_int_equal(sp.start_pos, 10);
	assert_int_equal(sp.line, 2);
	assert_int_equal(sp.orientation, 1);
	assert_int_equal(fg_seed_decode_prefix(&h, dgrams[0] + 4 + FG_HDR_LEN, C - FG_HDR_LEN, 3, &lim_small, &sp),
			 -FG_R_SEED_TOO_LARGE);
	assert_int_equal(fg_seed_decode_prefix(&h, dgrams[0] + 4 + FG_HDR_LEN, 7, 3, &lim, &sp), -FG_R_SEED_PREFIX);
	h.length -= 4;
	assert_int_equal(fg_seed_decode_prefix(&h, dgrams[0] + 4 + FG_HDR_LEN, 8, 3, &lim, &sp),
			 -FG_R_SEED_BODY_ROWS);

	/* refusals */
	uint8_t out[64];
	struct fg_frag bad = { 1, 0, 0, frame, 10 };
	assert_int_equal(fg_frag_encode(&bad, out, sizeof(out)), -FG_R_UNENCODABLE);
	bad.total = 2;
	bad.index = 2;
	assert_int_equal(fg_frag_encode(&bad, out, sizeof(out)), -FG_R_UNENCODABLE);
	bad.index = 1;
	bad.chunk_len = 0;
	assert_int_equal(fg_frag_encode(&bad, out, sizeof(out)), -FG_R_UNENCODABLE);
	bad.chunk_len = 61;
	assert_int_equal(fg_frag_encode(&bad, out, sizeof(out)), -FG_R_NOSPACE);
	/* chunk rules */
	struct fg_frag ck = { 1, 0, 3, frame, C };
	assert_int_equal(fg_frag_check(&ck, C), 0);
	ck.chunk_len = C - 1;
	assert_int_equal(fg_frag_check(&ck, C), -FG_R_FRAG_CHUNK_SIZE);
	ck.index = 2;
	assert_int_equal(fg_frag_check(&ck, C), 0);
	ck.chunk_len = C + 1;
	assert_int_equal(fg_frag_check(&ck, C), -FG_R_FRAG_CHUNK_SIZE);
	assert_int_equal(fg_frag_check(&ck, 0), -FG_R_FRAG_CHUNK_SIZE);
	/* sizes */
	assert_int_equal(fg_frag_chunk_size(1472), 1468);
	assert_int_equal(fg_frag_chunk_size(14), 10);
	assert_int_equal(fg_frag_chunk_size(13), 0);
	assert_int_equal(fg_frag_chunk_size(0), 0);
	assert_int_equal(fg_frag_count(374340, 1468), 255);
	assert_int_equal(fg_frag_count(374341, 1468), 0);
	assert_int_equal(fg_frag_count(1468, 1468), 1);
	assert_int_equal(fg_frag_count(1469, 1468), 2);
	assert_int_equal(fg_frag_count(10, 0), 0);
	assert_int_equal(fg_frag_count(0, 1468), 0);
	assert_int_equal(fg_frag_count(0xFFFFFFFF, 0xFFFFFFFF), 1);
}

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s;
}

static void test_ack_build(void **state)
{
	(void)state;
	enum { N = 1000 };
	static struct fg_ack_entry in[N], got[N + 8];
	static uint8_t buf[N * 14 + 14 * N + 64];
	static uint32_t lens[N + 1];
	static const uint32_t mtus[] = { 28, 41, 42, 43, 100, 576, 1472, 9000 };
	uint32_t seed = 12345;
	for (int i = 0; i < N; i++)
		in[i] = (struct fg_ack_entry){ (uint16_t)lcg(&seed), lcg(&seed), lcg(&seed), lcg(&seed) };
	for (size_t m = 0; m < FG_ARRAY_LEN(mtus); m++) {
		uint32_t mtu = mtus[m];
		size_t per = (mtu - 14) / 14;
		int want = (int)((N + per - 1) / per);
		int nd = fg_ack_build(in, N, mtu, 0xFFFE, buf, sizeof(buf), lens, N + 1);
		assert_int_equal(nd, want);
		size_t off = 0, ne = 0;
		for (int d = 0; d < nd; d++) {
			struct fg_frag fr;
			struct fg_frame f;
			assert_true(lens[d] <= mtu);
			assert_true(lens[d] >= 4 + 10 + 14);
			assert_int_equal(fg_frag_decode(buf + off, lens[d], &fr), lens[d]);
			assert_int_equal(fr.frame_id, (uint16_t)(0xFFFE + d));
			assert_int_equal(fr.index, 0);
			assert_int_equal(fr.total, 1);
			assert_int_equal(fg_frame_decode(fr.chunk, fr.chunk_len, FG_TRANSPORT_MESSAGE, &f), fr.chunk_len);
			assert_int_equal(f.hdr.flags & FG_FLAG_ACK, FG_FLAG_ACK);
			int k = fg_ack_frame_decode(&f, got + ne, N + 8 - ne);
			assert_true(k >= 1 && (size_t)k <= per);
			ne += (size_t)k;
			off += lens[d];
		}
		assert_int_equal(ne, N);
		for (int i = 0; i < N; i++)
			assert_ack_equal(&got[i], &in[i]);
		/* too little room: nothing claimed written */
		assert_int_equal(fg_ack_build(in, N, mtu, 0, buf, off - 1, lens, N + 1), -FG_R_NOSPACE);
		assert_int_equal(fg_ack_build(in, N, mtu, 0, buf, sizeof(buf), lens, (size_t)nd - 1), -FG_R_NOSPACE);
	}
	assert_int_equal(fg_ack_build(in, N, 27, 0, buf, sizeof(buf), lens, N + 1), -FG_R_UNENCODABLE);
	assert_int_equal(fg_ack_build(in, 0, 1472, 0, buf, sizeof(buf), lens, N + 1), 0);
	/* ACK frame header and length rules */
	uint8_t fb[64];
	struct fg_frame f;
	struct fg_ack_entry e[2];
	struct fg_hdr h = { FG_STREAM_ACK, 0, FG_FLAG_ACK, 14 };
	memset(fb, 0, sizeof(fb));
	assert_int_equal(fg_frame_encode(&h, fb + 32, fb, sizeof(fb)), 24);
	assert_int_equal(fg_frame_decode(fb, 24, FG_TRANSPORT_MESSAGE, &f), 24);
	assert_int_equal(fg_ack_frame_decode(&f, e, 2), 1);
	f.hdr.sequence = 1;
	assert_int_equal(fg_ack_frame_decode(&f, e, 2), -FG_R_ACK_HEADER);
	f.hdr.sequence = 0;
	f.hdr.flags = 0x81;
	assert_int_equal(fg_ack_frame_decode(&f, e, 2), -FG_R_ACK_HEADER);
	f.hdr.flags = FG_FLAG_ACK;
	f.hdr.stream_id = 0xFFFE;
	assert_int_equal(fg_ack_frame_decode(&f, e, 2), -FG_R_ACK_HEADER);
	f.hdr.stream_id = FG_STREAM_ACK;
	f.hdr.length = 13;
	assert_int_equal(fg_ack_frame_decode(&f, e, 2), -FG_R_ACK_LENGTH);
	f.hdr.length = 0;
	assert_int_equal(fg_ack_frame_decode(&f, e, 2), 0);
}

static void test_ack_covers_wrap(void **state)
{
	(void)state;
	struct fg_ack_entry e = { 1, 0xFFFFFFF0u, 0x1u, 0x80000001u };
	assert_true(fg_ack_entry_covers(&e, 0xFFFFFFF0u));        /* lo bit 0 */
	assert_true(fg_ack_entry_covers(&e, 0xFFFFFFF0u + 31u));  /* lo bit 31, wraps to 0x0F */
	assert_true(fg_ack_entry_covers(&e, 0xFFFFFFF0u + 32u));  /* hi bit 0 */
	assert_false(fg_ack_entry_covers(&e, 0xFFFFFFF0u + 33u));
	assert_false(fg_ack_entry_covers(&e, 0xFFFFFFF0u + 64u)); /* beyond the window */
	assert_false(fg_ack_entry_covers(&e, 0xFFFFFFEFu));       /* before base */
	struct fg_ack_entry all = { 1, 5, 0xFFFFFFFFu, 0xFFFFFFFFu };
	for (uint32_t s = 0; s < 100; s++)
		assert_int_equal(fg_ack_entry_covers(&all, s), s >= 5 && s < 69);
}

static void test_seed_roundtrip_and_refusals(void **state)
{
	(void)state;
	struct fg_bands b;
	uint8_t body[3 * 4 * 4], buf[256];
	fg_bands_default(&b);
	for (size_t i = 0; i < sizeof(body); i++)
		body[i] = (uint8_t)(0x40 + i);
	for (uint8_t line = 0; line < 7; line++) {
		for (uint8_t o = 0; o < 2; o++) {
			struct fg_seed s = { 0xDEADBEEF, 31, line, o, 77, 3, body, sizeof(body) }, d;
			struct fg_frame f;
			ssize_t n = fg_seed_encode(&b, &s, buf, sizeof(buf));
			assert_int_equal(n, 10 + 8 + sizeof(body));
			assert_int_equal(buf[6], line << 4 | o);
			assert_false(buf[6] & 0x80);
			assert_int_equal(fg_frame_decode(buf, (size_t)n, FG_TRANSPORT_MESSAGE, &f), n);
			assert_int_equal(f.hdr.stream_id, 0xAF60 + 31);
			assert_int_equal(fg_seed_decode(&f, 31, &lim4, &d), 8 + sizeof(body));
			assert_int_equal(d.token_seq, s.token_seq);
			assert_int_equal(d.dst_layer, 31);
			assert_int_equal(d.line, line);
			assert_int_equal(d.orientation, o);
			assert_int_equal(d.start_pos, 77);
			assert_int_equal(d.seq_len, 3);
			assert_int_equal(d.body_len, sizeof(body));
			assert_memory_equal(d.body, body, sizeof(body));
		}
	}
	struct fg_seed s = { 1, 1, 0, 0, 0, 3, body, sizeof(body) };
	struct fg_seed t;
	t = s, t.line = 7;
	assert_int_equal(fg_seed_encode(&b, &t, buf, sizeof(buf)), -FG_R_UNENCODABLE);
	t = s, t.orientation = 2;
	assert_int_equal(fg_seed_encode(&b, &t, buf, sizeof(buf)), -FG_R_UNENCODABLE);
	t = s, t.body_len = 47;
	assert_int_equal(fg_seed_encode(&b, &t, buf, sizeof(buf)), -FG_R_UNENCODABLE);
	t = s, t.body_len = 44; /* 11 floats, not 3 equal rows */
	assert_int_equal(fg_seed_encode(&b, &t, buf, sizeof(buf)), -FG_R_UNENCODABLE);
	t = s, t.seq_len = 0;
	assert_int_equal(fg_seed_encode(&b, &t, buf, sizeof(buf)), -FG_R_UNENCODABLE);
	t = s, t.body = NULL;
	assert_int_equal(fg_seed_encode(&b, &t, buf, sizeof(buf)), -FG_R_UNENCODABLE);
	t = s, t.dst_layer = 32;
	assert_int_equal(fg_seed_encode(&b, &t, buf, sizeof(buf)), -FG_R_UNENCODABLE);
	t = s, t.seq_len = 1, t.body_len = 0xFFFFF8; /* 8 + body > FG_LEN_MAX, refused before reading */
	assert_int_equal(fg_seed_encode(&b, &t, buf, sizeof(buf)), -FG_R_UNENCODABLE);
	assert_int_equal(fg_seed_encode(&b, &s, buf, 10 + 8 + sizeof(body) - 1), -FG_R_NOSPACE);
	struct fg_bands b28 = b;
	b28.n_layers = 28;
	t = s, t.dst_layer = 28;
	assert_int_equal(fg_seed_encode(&b28, &t, buf, sizeof(buf)), -FG_R_UNENCODABLE);
}

static void test_seed_limits(void **state)
{
	(void)state;
	uint8_t buf[256];
	struct fg_frame f;
	struct fg_seed s;
	struct fg_hdr h = { 0xAF62, 1, 0x00, 8 + 16 * 4 };
	uint8_t payload[8 + 64] = { 0 };
	/* seq_len 4 at hidden 4: 64 bytes */
	fg_put_le32(payload + 4, 4);
	assert_int_equal(fg_frame_encode(&h, payload, buf, sizeof(buf)), 10 + 72);
	assert_int_equal(fg_frame_decode(buf, 82, FG_TRANSPORT_MESSAGE, &f), 82);
	struct fg_seed_limits at = { 4, 4, FG_ORIENT_BIT }, below = { 4, 3, FG_ORIENT_BIT };
	assert_int_equal(fg_seed_decode(&f, 2, &at, &s), 72);
	assert_int_equal(fg_seed_decode(&f, 2, &below, &s), -FG_R_SEED_TOO_LARGE);
	/* seq_len 0 is refused even with an empty body (docs/wire-decisions.md) */
	struct fg_hdr h0 = { 0xAF62, 1, 0x00, 8 };
	uint8_t p0[8] = { 0 };
	assert_int_equal(fg_frame_encode(&h0, p0, buf, sizeof(buf)), 18);
	assert_int_equal(fg_frame_decode(buf, 18, FG_TRANSPORT_MESSAGE, &f), 18);
	assert_int_equal(fg_seed_decode(&f, 2, &at, &s), -FG_R_SEED_EMPTY);
	/* hostile seq_len: no overflow, a clean reason */
	struct fg_seed_limits huge = { 0x40000000u, 0xFFFFFFFFu, FG_ORIENT_BIT };
	fg_put_le32(payload + 4, 0xFFFFFFFFu);
	assert_int_equal(fg_frame_encode(&h, payload, buf, sizeof(buf)), 82);
	assert_int_equal(fg_frame_decode(buf, 82, FG_TRANSPORT_MESSAGE, &f), 82);
	assert_int_equal(fg_seed_decode(&f, 2, &huge, &s), -FG_R_SEED_BODY_ROWS);
	struct fg_seed_limits one = { 1, 0xFFFFFFFFu, FG_ORIENT_BIT };
	assert_int_equal(fg_seed_decode(&f, 2, &one, &s), -FG_R_SEED_BODY_LENGTH);
	struct fg_seed_limits zero = { 0, 0xFFFFFFFFu, FG_ORIENT_BIT };
	assert_int_equal(fg_seed_decode(&f, 2, &zero, &s), -FG_R_SEED_BODY_ROWS);
	/* every flags byte: line bits and orientation are judged */
	fg_put_le32(payload + 4, 4);
	for (unsigned fl = 0; fl < 256; fl++) {
		h.flags = (uint8_t)fl;
		assert_int_equal(fg_frame_encode(&h, payload, buf, sizeof(buf)), 82);
		assert_int_equal(fg_frame_decode(buf, 82, FG_TRANSPORT_MESSAGE, &f), 82);
		ssize_t r = fg_seed_decode(&f, 2, &at, &s);
		if ((fl >> 4) > 6)
			assert_int_equal(r, -FG_R_SEED_LINE);
		else if ((fl & 15) > 1)
			assert_int_equal(r, -FG_R_SEED_ORIENTATION);
		else
			assert_int_equal(r, 72);
	}
}

static void test_canon_roundtrip(void **state)
{
	(void)state;
	struct fg_bands b;
	uint8_t body[2 * 4 * 4], buf[256];
	fg_bands_default(&b);
	memset(body, 0x3F, sizeof(body));
	struct fg_canon c = { 99, 5, FG_CANON_FULL, 12, 2, body, sizeof(body), 0 }, d;
	struct fg_frame f;
	ssize_t n = fg_canon_encode(&b, &c, buf, sizeof(buf));
	assert_int_equal(n, 10 + 8 + sizeof(body));
	assert_int_equal(fg_frame_decode(buf, (size_t)n, FG_TRANSPORT_MESSAGE, &f), n);
	assert_int_equal(f.hdr.stream_id, 0xAF85);
	assert_int_equal(f.hdr.flags, 0);
	assert_int_equal(fg_canon_decode(&f, 5, &lim4, &d), 8 + sizeof(body));
	assert_int_equal(d.kind, FG_CANON_FULL);
	assert_int_equal(d.seq_len, 2);
	assert_int_equal(d.start_pos, 12);
	assert_memory_equal(d.body, body, sizeof(body));
	struct fg_canon dg = { 99, 5, FG_CANON_DIGEST, 12, 2, NULL, 0, 0x0123456789ABCDEFull };
	n = fg_canon_encode(&b, &dg, buf, sizeof(buf));
	assert_int_equal(n, 10 + 16);
	assert_int_equal(fg_frame_decode(buf, (size_t)n, FG_TRANSPORT_MESSAGE, &f), n);
	assert_int_equal(f.hdr.flags, 1);
	assert_int_equal(fg_canon_decode(&f, 5, &lim4, &d), 16);
	assert_int_equal(d.digest, 0x0123456789ABCDEFull);
	assert_int_equal(d.seq_len, 2);
	assert_int_equal(buf[18], 0xEF); /* little-endian digest */
	/* digest rules */
	struct fg_seed_limits tight = { 4, 1, FG_ORIENT_BIT };
	assert_int_equal(fg_canon_decode(&f, 5, &tight, &d), -FG_R_SEED_TOO_LARGE);
	f.hdr.length = 15;
	assert_int_equal(fg_canon_decode(&f, 5, &lim4, &d), -FG_R_CANON_DIGEST_LENGTH);
	f.hdr.length = 16;
	for (unsigned k = 2; k < 16; k++) {
		f.hdr.flags = (uint8_t)k;
		assert_int_equal(fg_canon_decode(&f, 5, &lim4, &d), -FG_R_CANON_KIND);
	}
	f.hdr.flags = 0x31; /* high nibble ignored */
	assert_int_equal(fg_canon_decode(&f, 5, &lim4, &d), 16);
	dg.kind = 2;
	assert_int_equal(fg_canon_encode(&b, &dg, buf, sizeof(buf)), -FG_R_UNENCODABLE);
	dg.kind = FG_CANON_DIGEST, dg.seq_len = 0;
	assert_int_equal(fg_canon_encode(&b, &dg, buf, sizeof(buf)), -FG_R_UNENCODABLE);
	c.body_len = 6;
	assert_int_equal(fg_canon_encode(&b, &c, buf, sizeof(buf)), -FG_R_UNENCODABLE);
}

static void test_resolved_roundtrip(void **state)
{
	(void)state;
	struct fg_bands b;
	uint8_t body[4 * 4], buf[128];
	fg_bands_default(&b);
	memset(body, 0x11, sizeof(body));
	struct fg_resolved r = { 0xFFFFFFFF, 31, 0, 1, body, sizeof(body) }, d;
	struct fg_frame f;
	ssize_t n = fg_resolved_encode(&b, &r, buf, sizeof(buf));
	assert_int_equal(n, 10 + 8 + 16);
	assert_int_equal(fg_frame_decode(buf, (size_t)n, FG_TRANSPORT_MESSAGE, &f), n);
	assert_int_equal(f.hdr.stream_id, 0xAFA0 + 31);
	assert_int_equal(f.hdr.flags, FG_FLAG_FIN);
	assert_int_equal(f.hdr.sequence, 0xFFFFFFFF);
	assert_int_equal(fg_resolved_decode(&f, 31, &lim4, &d), 24);
	assert_int_equal(d.token_seq, 0xFFFFFFFF);
	assert_int_equal(d.seq_len, 1);
	assert_memory_equal(d.body, body, 16);
	enum fg_band band;
	uint16_t layer;
	assert_int_equal(fg_stream_classify(&b, f.hdr.stream_id, &band, &layer), 0);
	assert_int_equal(band, FG_BAND_RESOLVED);
	f.hdr.flags = 0x90;
	assert_int_equal(fg_resolved_decode(&f, 31, &lim4, &d), -FG_R_BAD_FLAGS);
	f.hdr.flags = FG_FLAG_FIN;
	f.hdr.length = 7;
	assert_int_equal(fg_resolved_decode(&f, 31, &lim4, &d), -FG_R_SEED_PREFIX);
	r.dst_layer = 32;
	assert_int_equal(fg_resolved_encode(&b, &r, buf, sizeof(buf)), -FG_R_UNENCODABLE);
	r.dst_layer = 0, r.seq_len = 0;
	assert_int_equal(fg_resolved_encode(&b, &r, buf, sizeof(buf)), -FG_R_UNENCODABLE);
}

/* The head (header + prefix) is exactly the first 18 bytes of the whole
 * encoding, for every shape; it refuses what the whole encoder refuses and
 * never writes past cap. */
static void test_resolved_head(void **state)
{
	(void)state;
	struct fg_bands b;
	uint8_t body[6 * 4], whole[128], head[FG_RESOLVED_HEAD_LEN + 4];
	fg_bands_default(&b);
	for (unsigned i = 0; i < sizeof(body); i++)
		body[i] = (uint8_t)(i * 7 + 1);
	const struct fg_resolved rs[] = {
		{0, 0, 0, 1, body, 4},
		{0xFFFFFFFF, 31, 0xDEADBEEF, 3, body, 12},
		{1001, 7, 5, 2, body, 24},
	};
	for (unsigned k = 0; k < FG_ARRAY_LEN(rs); k++) {
		ssize_t n = fg_resolved_encode(&b, &rs[k], whole, sizeof(whole));
		assert_true(n > 0);
		memset(head, 0xA5, sizeof(head));
		assert_int_equal(fg_resolved_head_encode(&b, &rs[k], head, FG_RESOLVED_HEAD_LEN), FG_RESOLVED_HEAD_LEN);
		assert_memory_equal(head, whole, FG_RESOLVED_HEAD_LEN);
		assert_int_equal(head[FG_RESOLVED_HEAD_LEN], 0xA5); /* nothing past the head */
		assert_memory_equal(whole + FG_RESOLVED_HEAD_LEN, rs[k].body, rs[k].body_len);
		assert_int_equal((size_t)n, FG_RESOLVED_HEAD_LEN + rs[k].body_len);
		assert_int_equal(fg_resolved_head_encode(&b, &rs[k], head, FG_RESOLVED_HEAD_LEN - 1), -FG_R_NOSPACE);
	}
	struct fg_resolved r = rs[1];
	r.dst_layer = 32;
	assert_int_equal(fg_resolved_head_encode(&b, &r, head, sizeof(head)), -FG_R_UNENCODABLE);
	r = rs[1];
	r.seq_len = 0;
	assert_int_equal(fg_resolved_head_encode(&b, &r, head, sizeof(head)), -FG_R_UNENCODABLE);
	r = rs[1];
	r.body_len = 8; /* not seq_len rows */
	assert_int_equal(fg_resolved_head_encode(&b, &r, head, sizeof(head)), -FG_R_UNENCODABLE);
	r = rs[1];
	r.body = NULL;
	assert_int_equal(fg_resolved_head_encode(&b, &r, head, sizeof(head)), -FG_R_UNENCODABLE);
}

static void test_status_roundtrip(void **state)
{
	(void)state;
	uint8_t buf[64];
	struct fg_status s = {
		.token_seq = 42, .dst_layer = 27, .outcome = 1, .line = 6, .sign = 1, .bitset = 0x7F,
		.expected = 0x2A, .landed = 0x2A, .facts = 0x1F, .line_state = 3, .reason = FG_R_SEED_LINE,
		.bytes = 0x01020304, .model_epoch = 0xA0B0C0D0, .fingerprint = 0x5e2de06ec4043aa2ull,
	}, d;
	struct fg_frame f;
	assert_int_equal(fg_status_encode(&s, buf, sizeof(buf)), 42);
	assert_int_equal(fg_status_encode(&s, buf, 41), -FG_R_NOSPACE);
	assert_int_equal(fg_status_encode(&s, buf, sizeof(buf)), 42);
	assert_int_equal(fg_frame_decode(buf, 42, FG_TRANSPORT_MESSAGE, &f), 42);
	assert_int_equal(f.hdr.stream_id, FG_STREAM_STATUS);
	assert_int_equal(f.hdr.sequence, 42);
	assert_int_equal(f.hdr.flags, 0); /* never 0x80: the fleet would take it for an ACK */
	assert_int_equal(f.hdr.length, FG_STATUS_PAYLOAD_LEN);
	/* the documented layout, byte for byte */
	/* version 2: bitset = lines satisfied (0x7f = fully resolved, what the
	 * fleet acts on), landed at byte 28, three reserved zero bytes */
	static const uint8_t want[32] = { 2, 1, 6, 1, 27, 0, 0x7F, 0x2A, 0x1F, 3, FG_R_SEED_LINE, 0,
					  4, 3, 2, 1, 0xD0, 0xC0, 0xB0, 0xA0,
					  0xa2, 0x3a, 0x04, 0xc4, 0x6e, 0xe0, 0x2d, 0x5e, 0x2A, 0, 0, 0 };
	assert_memory_equal(f.payload, want, 32);
	memset(&d, 0, sizeof(d));
	assert_int_equal(fg_status_decode(&f, &d), 32);
	fg_test_status_equal(&d, &s);
	struct fg_status line_none = s;
	line_none.line = 0xFF;
	assert_int_equal(fg_status_encode(&line_none, buf, sizeof(buf)), 42);
	/* encoder refusals: s with one field out of its range, each */
	struct fg_status over[10];
	for (size_t k = 0; k < FG_ARRAY_LEN(over); k++)
		over[k] = s;
	over[0].line = 7;
	over[1].sign = 2;
	over[2].facts = 0x80;
	over[9].facts = FG_FACT_AUDIT_FAILED | FG_FACT_AUDIT_OFF; /* never both */
	over[3].line_state = 4;
	over[4].reason = FG_R__COUNT;
	over[5].bitset = 0x80;
	over[6].landed = 0x80;
	over[7].expected = 0x80;
	over[8].outcome = 200;
	for (size_t k = 0; k < FG_ARRAY_LEN(over); k++)
		if (fg_status_encode(&over[k], buf, sizeof(buf)) != -FG_R_UNENCODABLE)
			fail_msg("out-of-range case %zu not refused", k);
	/* decoder refusals */
	assert_int_equal(fg_status_encode(&s, buf, sizeof(buf)), 42);
	assert_int_equal(fg_frame_decode(buf, 42, FG_TRANSPORT_MESSAGE, &f), 42);
	f.hdr.flags = FG_FLAG_ACK;
	assert_int_equal(fg_status_decode(&f, &d), -FG_R_BAD_FLAGS);
	f.hdr.flags = 0;
	f.hdr.stream_id = 0xFFFF;
	assert_int_equal(fg_status_decode(&f, &d), -FG_R_UNKNOWN_STREAM);
	f.hdr.stream_id = FG_STREAM_STATUS;
	f.hdr.length = 28; /* version 1's length */
	assert_int_equal(fg_status_decode(&f, &d), -FG_R_STATUS_LENGTH);
	f.hdr.length = 32;
	buf[10] = 1;
	assert_int_equal(fg_status_decode(&f, &d), -FG_R_STATUS_VERSION);
	buf[10] = 2;
	buf[41] = 1; /* reserved */
	assert_int_equal(fg_status_decode(&f, &d), -FG_R_STATUS_FIELD);
	buf[41] = 0;
	buf[38] = 0x80; /* landed bit 7 */
	assert_int_equal(fg_status_decode(&f, &d), -FG_R_STATUS_FIELD);
	buf[38] = 0x2A;
	buf[12] = 9; /* line 9 */
	assert_int_equal(fg_status_decode(&f, &d), -FG_R_STATUS_FIELD);
	buf[12] = 6;
	buf[19] = 4; /* line_state */
	assert_int_equal(fg_status_decode(&f, &d), -FG_R_STATUS_FIELD);
	buf[19] = 3;
	assert_int_equal(fg_status_decode(&f, &d), 32);
	assert_string_equal(fg_status_audit_name(d.facts), "recording");
	/* the audit's facts: each alone at bit 5 / 6 of byte 8, both refused */
	static const struct {
		uint8_t facts;
		const char *name;
	} audit[] = {{FG_FACT_AUDIT_FAILED, "failed"}, {FG_FACT_AUDIT_OFF, "off"}};
	for (size_t k = 0; k < FG_ARRAY_LEN(audit); k++) {
		struct fg_status a = s;
		a.facts = (uint8_t)(s.facts | audit[k].facts);
		assert_int_equal(fg_status_encode(&a, buf, sizeof(buf)), 42);
		assert_int_equal(buf[18], 0x1F | audit[k].facts);
		assert_int_equal(fg_frame_decode(buf, 42, FG_TRANSPORT_MESSAGE, &f), 42);
		assert_int_equal(fg_status_decode(&f, &d), 32);
		fg_test_status_equal(&d, &a);
		assert_string_equal(fg_status_audit_name(d.facts), audit[k].name);
	}
	buf[18] = 0x1F | FG_FACT_AUDIT_FAILED | FG_FACT_AUDIT_OFF;
	assert_int_equal(fg_status_decode(&f, &d), -FG_R_STATUS_FIELD);
	buf[18] = 0x9F; /* bit 7: no such fact */
	assert_int_equal(fg_status_decode(&f, &d), -FG_R_STATUS_FIELD);
}

static void test_bands(void **state)
{
	(void)state;
	struct fg_bands b;
	enum fg_band band;
	uint16_t layer;
	unsigned counts[5] = { 0 }, unknown = 0, bad_layer = 0;
	fg_bands_default(&b);
	assert_int_equal(b.seed_base, 0xAF60);
	assert_int_equal(b.canonical_base, 0xAF80);
	assert_int_equal(b.resolved_base, 0xAFA0);
	assert_int_equal(b.layer_bits, 5);
	for (uint32_t id = 0; id <= 0xFFFF; id++) {
		int r = fg_stream_classify(&b, (uint16_t)id, &band, &layer);
		if (r == 0)
			counts[band]++;
		else if (r == -FG_R_UNKNOWN_STREAM)
			unknown++;
		else
			bad_layer++;
	}
	assert_int_equal(counts[FG_BAND_SEED], 32);
	assert_int_equal(counts[FG_BAND_CANONICAL], 32);
	assert_int_equal(counts[FG_BAND_RESOLVED], 32);
	assert_int_equal(counts[FG_BAND_STATUS], 1);
	assert_int_equal(counts[FG_BAND_ACK], 1);
	assert_int_equal(bad_layer, 0);
	assert_int_equal(unknown, 65536 - 98);
	assert_int_equal(fg_stream_classify(&b, 0xAF7B, &band, &layer), 0);
	assert_int_equal(band, FG_BAND_SEED);
	assert_int_equal(layer, 27);
	/* a model of 28 layers: offsets 28..31 of each band are unknown layers */
	b.n_layers = 28;
	assert_int_equal(fg_stream_classify(&b, 0xAF7C, &band, &layer), -FG_R_UNKNOWN_LAYER);
	assert_int_equal(fg_stream_classify(&b, 0xAF9F, &band, &layer), -FG_R_UNKNOWN_LAYER);
	assert_int_equal(fg_stream_classify(&b, 0xAFBC, &band, &layer), -FG_R_UNKNOWN_LAYER);
	assert_int_equal(fg_stream_classify(&b, 0xAFC0, &band, &layer), -FG_R_UNKNOWN_STREAM);
	assert_int_equal(fg_stream_classify(&b, 0xAF5F, &band, &layer), -FG_R_UNKNOWN_STREAM);
	assert_int_equal(fg_stream_classify(&b, 0xAF9B, &band, &layer), 0);
	assert_int_equal(band, FG_BAND_CANONICAL);
	assert_int_equal(layer, 27);
	assert_int_equal(fg_stream_classify(&b, 0xFFFE, &band, &layer), 0);
	assert_int_equal(band, FG_BAND_STATUS);
	assert_int_equal(fg_stream_classify(&b, 0xFFFF, &band, &layer), 0);
	assert_int_equal(band, FG_BAND_ACK);
	/* custom bands: 8 layers per band */
	struct fg_bands c = { 0x1000, 0x2000, 0x3000, 3, 6 };
	assert_int_equal(fg_stream_classify(&c, 0x1005, &band, &layer), 0);
	assert_int_equal(layer, 5);
	assert_int_equal(fg_stream_classify(&c, 0x1006, &band, &layer), -FG_R_UNKNOWN_LAYER);
	assert_int_equal(fg_stream_classify(&c, 0x1008, &band, &layer), -FG_R_UNKNOWN_STREAM);
	assert_int_equal(fg_stream_classify(&c, 0x3002, &band, &layer), 0);
	assert_int_equal(band, FG_BAND_RESOLVED);
}

static void test_reason_names(void **state)
{
	(void)state;
	for (int i = 1; i < FG_R__COUNT; i++) {
		const char *n = fg_reason_name(i);
		assert_string_not_equal(n, "unknown");
		assert_string_equal(fg_reason_name(-i), n);
		for (int j = 1; j < i; j++)
			assert_string_not_equal(fg_reason_name(j), n);
	}
	assert_string_equal(fg_reason_name(-FG_R_INCOMPLETE), "incomplete");
	assert_string_equal(fg_reason_name(FG_R_TRUNCATED_FRAME), "truncated_frame");
	assert_string_equal(fg_reason_name(FG_R_CANON_KIND), "canonical_kind");
	assert_string_equal(fg_reason_name(FG_R_UNENCODABLE), "unencodable");
	assert_string_equal(fg_reason_name(FG_R__COUNT), "unknown");
	assert_string_equal(fg_reason_name(-FG_R__COUNT), "unknown");
	assert_string_equal(fg_reason_name(-2147483647 - 1), "unknown");
	assert_string_equal(fg_reason_name(1000), "unknown");
}

/* fg_stream_classify_at: the address names the layer (wire.md 3). */
static void test_classify_bound_layer(void **state)
{
	(void)state;
	struct fg_bands b;
	enum fg_band band;
	uint16_t layer = 0xFFFF;
	fg_bands_default(&b);
	b.n_layers = 28;
	/* layer 17 the fleet's way: stream 0xAF61 on an address naming 17 */
	assert_int_equal(fg_stream_classify_at(&b, 0xAF61, 17, &band, &layer), 0);
	assert_int_equal(band, FG_BAND_SEED);
	assert_int_equal(layer, 17);
	assert_int_equal(fg_stream_classify_at(&b, 0xAF71, 17, &band, &layer), 0); /* whole-layer form */
	assert_int_equal(layer, 17);
	assert_int_equal(fg_stream_classify_at(&b, 0xAF81, 17, &band, &layer), 0);
	assert_int_equal(band, FG_BAND_CANONICAL);
	assert_int_equal(layer, 17);
	layer = 0xFFFF;
	assert_int_equal(fg_stream_classify_at(&b, 0xAF62, 17, &band, &layer), -FG_R_LAYER_MISMATCH);
	assert_int_equal(fg_stream_classify_at(&b, 0xAF71, 1, &band, &layer), -FG_R_LAYER_MISMATCH);
	assert_int_equal(fg_stream_classify_at(&b, 0xAF6C, 28, &band, &layer), -FG_R_UNKNOWN_LAYER);
	assert_int_equal(layer, 0xFFFF); /* written only on success */
	/* unbound = fg_stream_classify: the offset is the layer */
	assert_int_equal(fg_stream_classify_at(&b, 0xAF61, FG_LAYER_UNBOUND, &band, &layer), 0);
	assert_int_equal(layer, 1);
	/* transport streams are not the address's business */
	assert_int_equal(fg_stream_classify_at(&b, 0xFFFF, 3, &band, &layer), 0);
	assert_int_equal(band, FG_BAND_ACK);
	/* a 4-bit band without an address: offsets 0..15 only, never folded */
	b.layer_bits = 4;
	b.n_layers = 16;
	assert_int_equal(fg_stream_classify(&b, 0xAF6F, &band, &layer), 0);
	assert_int_equal(layer, 15);
	assert_int_equal(fg_stream_classify(&b, 0xAF70, &band, &layer), -FG_R_UNKNOWN_STREAM);
	assert_string_equal(fg_reason_name(FG_R_LAYER_MISMATCH), "layer_mismatch");
}

/* [wire] orientation: both readings of the flags' low nibble, with vectors. */
static void test_seed_orientation_modes(void **state)
{
	(void)state;
	/* S-shaped vector: stream 0xAF63, token 42, line 1, hidden 4 */
	static const struct {
		uint8_t mode, nibble;
		int want; /* orientation 0/1, or -reason */
	} v[] = {
		{ FG_ORIENT_BIT, 0x0, 0 },    { FG_ORIENT_BIT, 0x1, 1 },
		{ FG_ORIENT_BIT, 0x2, -FG_R_SEED_ORIENTATION }, { FG_ORIENT_BIT, 0xF, -FG_R_SEED_ORIENTATION },
		{ FG_ORIENT_SIGNED, 0x1, 0 }, { FG_ORIENT_SIGNED, 0xF, 1 },
		{ FG_ORIENT_SIGNED, 0x0, -FG_R_SEED_ORIENTATION }, { FG_ORIENT_SIGNED, 0xE, -FG_R_SEED_ORIENTATION },
		{ FG_ORIENT_SIGNED, 0x2, -FG_R_SEED_ORIENTATION },
	};
	uint8_t frame[10 + 8 + 16] = { 0xAF, 0x63, 0, 0, 0, 42, 0x10, 0, 0, 24, 0, 0, 0, 0, 1, 0, 0, 0 };
	for (unsigned i = 0; i < FG_ARRAY_LEN(v); i++) {
		struct fg_seed_limits lim = { .hidden = 4, .max_seq_len = 1, .orientation = v[i].mode };
		struct fg_frame f;
		struct fg_seed sd;
		frame[6] = (uint8_t)(0x10 | v[i].nibble);
		assert_int_equal(fg_frame_decode(frame, sizeof(frame), FG_TRANSPORT_MESSAGE, &f), sizeof(frame));
		ssize_t r = fg_seed_decode(&f, 3, &lim, &sd);
		ssize_t rp = fg_seed_decode_prefix(&f.hdr, f.payload, 8, 3, &lim, &sd);
		if (v[i].want < 0) {
			assert_int_equal(r, v[i].want);
			assert_int_equal(rp, v[i].want);
			continue;
		}
		assert_int_equal(r, 24);
		assert_int_equal(rp, 18);
		assert_int_equal(sd.orientation, v[i].want);
		assert_int_equal(sd.line, 1);
		assert_int_equal(fg_orientation_nibble(v[i].mode, (uint8_t)v[i].want), v[i].nibble);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_vector),
		cmocka_unit_test(test_u_group_reassembly),
		cmocka_unit_test(test_prefixes),
		cmocka_unit_test(test_hdr_frame_roundtrip),
		cmocka_unit_test(test_batch_roundtrip),
		cmocka_unit_test(test_frag_roundtrip),
		cmocka_unit_test(test_ack_build),
		cmocka_unit_test(test_ack_covers_wrap),
		cmocka_unit_test(test_seed_roundtrip_and_refusals),
		cmocka_unit_test(test_seed_limits),
		cmocka_unit_test(test_canon_roundtrip),
		cmocka_unit_test(test_resolved_roundtrip),
		cmocka_unit_test(test_resolved_head),
		cmocka_unit_test(test_classify_bound_layer),
		cmocka_unit_test(test_seed_orientation_modes),
		cmocka_unit_test(test_status_roundtrip),
		cmocka_unit_test(test_bands),
		cmocka_unit_test(test_reason_names),
	};
	return cmocka_run_group_tests(tests, load_vectors, free_vectors);
}

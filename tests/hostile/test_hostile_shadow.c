/* test_hostile_shadow.c - the shadow audit's
 * pending-comparison table (core/shadow.c) is shared fairly by source.
 *
 * 1. 40 real seeds wait for their canonical reports; 5,000 canonical
 *    digests for other keys arrive (a flood: before this change they pushed
 *    real seeds out of the direct-mapped table, 14 of 40 in the outsider
 *    audit, and those slots got no verdict). Every one of the 40 real
 *    reports must still find its seed and give a clean verdict.
 * 2. (fg_shadow_canon_from) one source's flood cannot push out another
 *    source's waiting canonical halves; a source can replace its own.
 * 3. (fg_shadow_source_class) the daemon's classes of senders.
 * Pure core, single thread. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fg/shadow.h"
#include "fg/wire.h"
#include "../lib/fg_test_shadow.h" /* fg_test_shadow_new, fg_test_lines_all */

#define HIDDEN 8
#define CAP 4096
#define LAYERS 4
#define SEC 1000000000ull
#define REAL 40
#define FLOOD 5000

struct fix {
	struct fg_shadow sh;
	void *mem;
	struct fg_lines lines;
};

static struct fix *fix_new(void)
{
	struct fix *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	struct fg_shadow_cfg cfg = {.capacity = CAP, .body_max = HIDDEN * 4, .n_layers = LAYERS,
				    .expiry_ns = 60 * SEC, .sample = 0.0};
	f->mem = fg_test_shadow_new(&f->sh, &cfg);
	struct fg_line_policy pol = {.auto_promote = false, .promote_count = 64, .promote_ns = 10 * SEC};
	fg_test_lines_all(&f->lines, FG_LINE_SHADOW, &pol);
	return f;
}

static void fix_free(struct fix *f)
{
	free(f->mem);
	free(f);
}

static void body_of(uint32_t token, uint8_t b[HIDDEN * 4])
{
	for (unsigned i = 0; i < HIDDEN; i++)
		fg_put_le32(b + 4 * i, token * 2654435761u + i);
}

/* A digest report for (token, layer) with fingerprint fp. */
static struct fg_canon digest(uint32_t token, uint16_t layer, uint64_t fp)
{
	struct fg_canon c;
	memset(&c, 0, sizeof(c));
	c.token_seq = token;
	c.dst_layer = layer;
	c.kind = FG_CANON_DIGEST;
	c.start_pos = 0;
	c.seq_len = 1;
	c.digest = fp;
	return c;
}

static void test_flood_keeps_waiting_seeds(void **state)
{
	(void)state;
	struct fix *f = fix_new();
	uint8_t b[HIDDEN * 4];
	struct fg_shadow_verdict v;
	uint64_t now = SEC;
	for (uint32_t t = 0; t < REAL; t++) {
		body_of(t, b);
		struct fg_seed_view sv = {.token_seq = t, .dst_layer = 0, .start_pos = 0, .seq_len = 1, .body = b,
					  .body_len = sizeof(b), .fingerprint = fg_fingerprint(b, sizeof(b)), .lines = 0x2A};
		assert_int_equal(fg_shadow_seed(&f->sh, &sv, &f->lines, now, &v), 0);
	}
	/* The flood: digests for keys that are not waiting, spread over the
	 * table as a spoofer's token numbers would be. */
	uint32_t x = 12345;
	for (unsigned i = 0; i < FLOOD; i++) {
		x = x * 1103515245u + 12345u;
		struct fg_canon c = digest(100000 + (x >> 8) % 1000000, (uint16_t)(x % LAYERS), x);
		assert_true(fg_shadow_canon(&f->sh, &c, now + i, &v) >= 0);
	}
	unsigned judged = 0, clean = 0;
	for (uint32_t t = 0; t < REAL; t++) {
		body_of(t, b);
		struct fg_canon c = digest(t, 0, fg_fingerprint(b, sizeof(b)));
		int r = fg_shadow_canon(&f->sh, &c, now + FLOOD + t, &v);
		assert_true(r >= 0);
		if (r == 1) {
			judged++;
			clean += v.v.kind == FG_VERDICT_CLEAN;
		}
	}
	if (judged != REAL)
		fail_msg("%u of %u real slots lost their waiting seed to the flood", REAL - judged, REAL);
	assert_int_equal(clean, REAL);
	fix_free(f);
}

#ifdef FG_SHADOW_SOURCES
static void test_share_by_source(void **state)
{
	(void)state;
	struct fix *f = fix_new();
	struct fg_shadow_verdict v;
	uint64_t now = SEC;
	/* Source 1 (the coordinator) has 40 reports waiting for their seeds. */
	for (uint32_t t = 0; t < REAL; t++) {
		struct fg_canon c = digest(t, 0, 1000 + t);
		assert_int_equal(fg_shadow_canon_from(&f->sh, &c, 1, now, &v), 0);
	}
	assert_int_equal(f->sh.src_live[1], REAL);
	/* Source 2 floods keys that collide with them and with everything else. */
	for (uint32_t i = 0; i < FLOOD; i++) {
		uint32_t t = i % REAL + (1 + i / REAL) * CAP; /* same index as token i % REAL, layer 0 */
		struct fg_canon c = digest(t, 0, i);
		assert_true(fg_shadow_canon_from(&f->sh, &c, 2, now + i, &v) >= 0);
	}
	assert_int_equal(f->sh.src_live[1], REAL);
	assert_true(f->sh.canon_refused_share > 0);
	/* Every one of source 1's reports still meets its seed. */
	uint8_t b[HIDDEN * 4];
	for (uint32_t t = 0; t < REAL; t++) {
		body_of(t, b);
		struct fg_seed_view sv = {.token_seq = t, .dst_layer = 0, .start_pos = 0, .seq_len = 1, .body = b,
					  .body_len = sizeof(b), .fingerprint = 1000 + t, .lines = 0x2A};
		assert_int_equal(fg_shadow_seed(&f->sh, &sv, &f->lines, now + FLOOD, &v), 1);
		assert_int_equal(v.v.kind, FG_VERDICT_CLEAN);
	}
	assert_int_equal(f->sh.src_live[1], 0);
	/* Over its quota a source's halves are fair game: source 2 takes 600
	 * free entries (more than capacity / FG_SHADOW_SHARE = 512), then
	 * source 1 takes one of them back. */
	for (uint32_t t = 1000; t < 1600; t++) {
		struct fg_canon c2 = digest(t, 0, t);
		assert_int_equal(fg_shadow_canon_from(&f->sh, &c2, 2, now, &v), 0);
	}
	assert_true(f->sh.src_live[2] > fg_shadow_quota(&f->sh));
	uint32_t live2 = f->sh.src_live[2];
	struct fg_canon c1 = digest(1000 + 1024, 0, 5); /* the index of token 1000 */
	assert_int_equal(fg_shadow_canon_from(&f->sh, &c1, 1, now, &v), 0);
	assert_int_equal(f->sh.src_live[2], live2 - 1);
	assert_int_equal(f->sh.src_live[1], 1);
	/* A source may replace its own halves. */
	struct fg_canon c = digest(7, 0, 1);
	assert_int_equal(fg_shadow_canon_from(&f->sh, &c, 3, now, &v), 0);
	c = digest(7 + CAP, 0, 2); /* same index */
	uint64_t ev = f->sh.evicted;
	assert_int_equal(fg_shadow_canon_from(&f->sh, &c, 3, now, &v), 0);
	assert_int_equal(f->sh.evicted, ev + 1);
	assert_int_equal(f->sh.src_live[3], 1);
	assert_int_equal(fg_shadow_canon_from(&f->sh, &c, FG_SHADOW_SOURCES, now, &v), -EINVAL);
	fix_free(f);
}
#endif

/* fg_shadow_source_class: a sender's class from its address under a key,
 * 1 .. FG_SHADOW_SOURCES - 1, every class reached; the key and the family
 * change it; the bytes past the family's length are not read. */
static void test_source_class(void **state)
{
	(void)state;
	const uint64_t k1 = 0x0123456789abcdefull, k2 = 0xfedcba9876543210ull;
	uint8_t a[16] = {10, 0, 0, 1};
	assert_int_equal(fg_shadow_source_class(k1, 0, a), 0);
	assert_int_equal(fg_shadow_source_class(k1, 5, a), 0);
	bool seen[FG_SHADOW_SOURCES] = {false};
	unsigned differ_key = 0, differ_family = 0;
	for (unsigned i = 0; i < 2000; i++) {
		uint8_t v4[16] = {10, 0, (uint8_t)(i >> 8), (uint8_t)i};
		unsigned c = fg_shadow_source_class(k1, 4, v4);
		assert_true(c >= 1 && c < FG_SHADOW_SOURCES);
		seen[c] = true;
		assert_int_equal(fg_shadow_source_class(k1, 4, v4), c); /* a function of its inputs */
		memset(v4 + 4, 0xAB, 12);
		assert_int_equal(fg_shadow_source_class(k1, 4, v4), c); /* IPv4: 4 bytes read */
		if (i < 100) {
			differ_key += fg_shadow_source_class(k2, 4, v4) != c;
			differ_family += fg_shadow_source_class(k1, 6, v4) != c;
		}
	}
	for (unsigned c = 1; c < FG_SHADOW_SOURCES; c++)
		assert_true(seen[c]);
	assert_false(seen[0]);
	/* about 62 in 63 differ; a key or family that changed nothing would
	 * leave all 100 equal */
	assert_true(differ_key > 80);
	assert_true(differ_family > 80);
}

/* fg_shadow_sender_class: the first 63 distinct senders each get a class
 * of their own, whatever the key would have hashed them to; a sender keeps
 * its class; after the 63rd, the keyed hash (counted). */
static void test_sender_class(void **state)
{
	(void)state;
	static struct fg_shadow_senders ss;
	memset(&ss, 0, sizeof(ss));
	ss.key = 0x0123456789abcdefull;
	uint8_t a[16] = {10, 0, 0, 1};
	assert_int_equal(fg_shadow_sender_class(&ss, 0, a), 0);
	assert_int_equal(ss.n, 0);
	bool seen[FG_SHADOW_SOURCES] = {false};
	for (unsigned i = 0; i < FG_SHADOW_SOURCES - 1; i++) {
		/* alternate families: the same 4 leading bytes as IPv4 and IPv6 are two senders */
		uint8_t v[16] = {10, 0, 0, (uint8_t)(i / 2)};
		unsigned c = fg_shadow_sender_class(&ss, i % 2 ? 6 : 4, v);
		assert_int_equal(c, i + 1);
		assert_false(seen[c]);
		seen[c] = true;
	}
	uint8_t first[16] = {10, 0, 0, 0};
	assert_int_equal(fg_shadow_sender_class(&ss, 4, first), 1);
	assert_int_equal(ss.hashed, 0);
	uint8_t late[16] = {192, 0, 2, 9};
	assert_int_equal(fg_shadow_sender_class(&ss, 4, late), fg_shadow_source_class(ss.key, 4, late));
	assert_int_equal(ss.hashed, 1);
	assert_int_equal(ss.n, FG_SHADOW_SOURCES - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flood_keeps_waiting_seeds),
		cmocka_unit_test(test_source_class),
		cmocka_unit_test(test_sender_class),
#ifdef FG_SHADOW_SOURCES
		cmocka_unit_test(test_share_by_source),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

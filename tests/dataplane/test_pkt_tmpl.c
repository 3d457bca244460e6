/* test_pkt_tmpl.c - unit tests for dataplane/dp_pkt.c's header templates
 * (dp_pkt_tmpl_init, dp_pkt_tmpl_put): every frame written from a
 * template is byte for byte dp_pkt_build_udp's with the same arguments,
 * over IPv4 and IPv6, with and without a VLAN tag, for every IPv4 id (so
 * every value of the incrementally patched header checksum, 0x0000 and
 * 0xFFFF among them), payload lengths of both parities up to the largest
 * UDP payload, and random addresses, ports and MACs; the template writes
 * nothing beyond the headers, so an IPv4 payload may be written before or
 * after it. And dp_frag_part: the parts of a frame's head and body each
 * fragment gathers are, in fragment order, the frame, chunk bytes a
 * fragment but the last, in fg_frag_count fragments (at most FG_FRAG_MAX). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dp_pkt.h"
#include "fg/wire.h"

#define BUF (DP_PKT_HDR_MAX + 65535u)

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

struct args {
	struct dp_route rt;
	int family;
	uint8_t src[16], dst[16];
	uint16_t sport, dport;
};

static void random_args(struct args *a, int family, bool vlan)
{
	memset(a, 0, sizeof(*a));
	a->family = family;
	for (unsigned i = 0; i < 6; i++) {
		a->rt.mac[i] = (uint8_t)rnd();
		a->rt.our_mac[i] = (uint8_t)rnd();
	}
	a->rt.has_vlan = vlan;
	a->rt.vlan_tci = vlan ? (uint16_t)rnd() : 0;
	for (unsigned i = 0; i < (family == 6 ? 16u : 4u); i++) {
		a->src[i] = (uint8_t)rnd();
		a->dst[i] = (uint8_t)rnd();
	}
	memcpy(a->rt.local, a->src, 16);
	a->sport = (uint16_t)rnd();
	a->dport = (uint16_t)rnd();
}

/* The frame from the template against dp_pkt_build_udp's, for one payload
 * length and id; the payload written before the template (any family) and,
 * over IPv4, after it. */
static void same_frame(const struct args *a, const struct dp_pkt_tmpl *t, uint32_t plen, uint16_t id, uint8_t *want,
		       uint8_t *got)
{
	uint32_t hl = dp_pkt_hdr_len(&a->rt, a->family);
	assert_int_equal(t->hl, hl);
	for (uint32_t i = 0; i < plen; i++)
		want[hl + i] = got[hl + i] = (uint8_t)rnd();
	uint32_t n = dp_pkt_build_udp(want, &a->rt, a->family, a->src, a->sport, a->dst, a->dport, plen, id);
	assert_int_equal(n, hl + plen);
	memset(got, 0xA5, hl);
	assert_int_equal(dp_pkt_tmpl_put(got, t, plen, id), n);
	assert_memory_equal(got, want, n);
	if (a->family == 4) {
		/* the header first, the payload after: the same frame */
		uint8_t keep[64];
		uint32_t k = plen < sizeof(keep) ? plen : sizeof(keep);
		memcpy(keep, got + hl, k);
		memset(got, 0x5A, hl + k);
		memcpy(got + hl, keep, k); /* the payload's first bytes back; the header is garbage */
		assert_int_equal(dp_pkt_tmpl_put(got, t, plen, id), n);
		assert_memory_equal(got, want, n);
	}
}

/* Nothing beyond the header is written: a canary right behind it stays. */
static void writes_header_only(const struct dp_pkt_tmpl *t, int family)
{
	uint8_t buf[DP_PKT_HDR_MAX + 64];
	memset(buf, 0xC3, sizeof(buf));
	if (family == 6)
		memset(buf + t->hl, 0, 16); /* the payload the checksum reads */
	(void)dp_pkt_tmpl_put(buf, t, 16, 1);
	for (uint32_t i = t->hl + (family == 6 ? 16 : 0); i < sizeof(buf); i++)
		assert_int_equal(buf[i], 0xC3);
}

static void every_id(int family, bool vlan)
{
	uint8_t *want = malloc(BUF), *got = malloc(BUF);
	assert_non_null(want);
	assert_non_null(got);
	struct args a;
	random_args(&a, family, vlan);
	struct dp_pkt_tmpl t;
	dp_pkt_tmpl_init(&t, &a.rt, a.family, a.src, a.sport, a.dst, a.dport);
	writes_header_only(&t, family);
	/* every id with a few lengths: over IPv4 every header checksum value */
	for (uint32_t id = 0; id <= 0xFFFF; id++)
		same_frame(&a, &t, (id * 7) % 31, (uint16_t)id, want, got);
	free(want);
	free(got);
}

static void random_headers(int family, bool vlan)
{
	uint8_t *want = malloc(BUF), *got = malloc(BUF);
	assert_non_null(want);
	assert_non_null(got);
	static const uint32_t lens[] = {0, 1, 2, 3, 17, 18, 1467, 1468, 8192, 65507};
	for (unsigned r = 0; r < 300; r++) {
		struct args a;
		random_args(&a, family, vlan);
		struct dp_pkt_tmpl t;
		dp_pkt_tmpl_init(&t, &a.rt, a.family, a.src, a.sport, a.dst, a.dport);
		uint32_t plen = r < FG_ARRAY_LEN(lens) ? lens[r] : rnd() % 1500;
		same_frame(&a, &t, plen, (uint16_t)rnd(), want, got);
	}
	free(want);
	free(got);
}

static void test_v4_every_id(void **s) { (void)s; every_id(4, false); }
static void test_v4_vlan_every_id(void **s) { (void)s; every_id(4, true); }
static void test_v6_every_id(void **s) { (void)s; every_id(6, false); }
static void test_v4_random(void **s) { (void)s; random_headers(4, false); }
static void test_v4_vlan_random(void **s) { (void)s; random_headers(4, true); }
static void test_v6_random(void **s) { (void)s; random_headers(6, false); }
static void test_v6_vlan_random(void **s) { (void)s; random_headers(6, true); }

/* Every fragment's parts of head and body, laid end to end, against the
 * frame assembled, for heads of 0..40 bytes, bodies of 0..300 and chunks
 * of 1..64 bytes. */
static void test_frag_parts(void **state)
{
	(void)state;
	uint8_t head[40], body[300], frame[340], got[340];
	for (unsigned i = 0; i < sizeof(head); i++)
		head[i] = (uint8_t)(i + 1);
	for (unsigned i = 0; i < sizeof(body); i++)
		body[i] = (uint8_t)(0x80 | i);
	for (uint32_t hl = 0; hl <= sizeof(head); hl += 3) {
		for (uint32_t bl = 0; bl <= sizeof(body); bl += 7) {
			memcpy(frame, head, hl);
			memcpy(frame + hl, body, bl);
			for (uint32_t c = 1; c <= 64; c++) {
				uint32_t total = fg_frag_count(hl + bl, c), at = 0, want = (hl + bl + c - 1) / c;
				assert_int_equal(total, want <= FG_FRAG_MAX ? want : 0);
				if (!total)
					continue;
				memset(got, 0, sizeof(got));
				for (uint32_t i = 0; i < total; i++) {
					struct dp_frag_part p = dp_frag_part(i * c, hl, bl, c);
					uint32_t n = p.head_n + p.body_n;
					assert_int_equal(at, i * c);
					assert_int_equal(n, i + 1 < total ? c : hl + bl - at);
					assert_true(p.head_off + p.head_n <= hl && p.body_off + p.body_n <= bl);
					assert_true(!p.head_n || !p.body_n || p.head_off + p.head_n == hl);
					assert_true(!p.body_n || p.body_off || at + p.head_n == hl);
					memcpy(got + at, head + p.head_off, p.head_n);
					memcpy(got + at + p.head_n, body + p.body_off, p.body_n);
					at += n;
				}
				assert_int_equal(at, hl + bl);
				assert_memory_equal(got, frame, at);
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v4_every_id),
		cmocka_unit_test(test_v4_vlan_every_id),
		cmocka_unit_test(test_v6_every_id),
		cmocka_unit_test(test_v4_random),
		cmocka_unit_test(test_v4_vlan_random),
		cmocka_unit_test(test_v6_random),
		cmocka_unit_test(test_v6_vlan_random),
		cmocka_unit_test(test_frag_parts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* test_pkt.c - unit tests for dataplane/dp_pkt.c: build -> parse round
 * trips (IPv4, IPv6, 802.1Q, QinQ), checksums that verify (UDP over IPv6;
 * none over IPv4), every prefix of
 * a valid packet (truncation never reads past the end), inconsistent
 * lengths, IP fragments, other protocols, ARP parse and reply, the
 * common form recognised without a parse (dp_pkt_udp4_form), and its
 * lengths tested four frames at once (dp_pkt_udp4_lens4). */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dp_pkt.h"
#include "dp_test_util.h" /* tu_arp_request */
#include "../lib/fg_test_rng.h" /* fg_test_xorshift64 */
#include "fg/wire.h"

static uint8_t a4[16], b4[16], a6[16], b6[16];
static const uint8_t mac_a[6] = {2, 0, 0, 0, 0, 0xa}, mac_b[6] = {2, 0, 0, 0, 0, 0xb};

static uint32_t build(uint8_t *buf, int fam, bool vlan, uint32_t plen)
{
	struct dp_route rt = {0};
	memcpy(rt.mac, mac_b, 6);
	memcpy(rt.our_mac, mac_a, 6);
	rt.has_vlan = vlan;
	rt.vlan_tci = 0x2064;
	uint32_t hl = dp_pkt_hdr_len(&rt, fam);
	for (uint32_t i = 0; i < plen; i++)
		buf[hl + i] = (uint8_t)(i * 7);
	return dp_pkt_build_udp(buf, &rt, fam, fam == 6 ? a6 : a4, 5555, fam == 6 ? b6 : b4, 4242, plen, 9);
}

static uint16_t sum16(const uint8_t *p, size_t n, uint32_t s)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		s += (uint32_t)(p[n - 1] << 8);
	while (s >> 16)
		s = (s & 0xFFFF) + (s >> 16);
	return (uint16_t)s;
}

static void roundtrip(int fam, bool vlan)
{
	uint8_t buf[2048];
	uint32_t n = build(buf, fam, vlan, 301);
	struct dp_pkt pk;
	assert_int_equal(dp_pkt_parse(buf, n, &pk), DP_PKT_UDP);
	assert_int_equal(pk.src.family, fam);
	assert_memory_equal(pk.src.addr, fam == 6 ? a6 : a4, fam == 6 ? 16 : 4);
	assert_memory_equal(pk.dst, fam == 6 ? b6 : b4, fam == 6 ? 16 : 4);
	assert_int_equal(pk.src.port, 5555);
	assert_int_equal(pk.dst_port, 4242);
	assert_int_equal(pk.payload_len, 301);
	for (uint32_t i = 0; i < 301; i++)
		assert_int_equal(pk.payload[i], (uint8_t)(i * 7));
	assert_memory_equal(pk.route.mac, mac_a, 6); /* replies go back to the source MAC */
	assert_int_equal(pk.route.has_vlan, vlan);
	if (vlan)
		assert_int_equal(pk.route.vlan_tci, 0x2064);
	/* checksums: the IPv4 header sums to 0xFFFF and its UDP checksum is 0
	 * (none, RFC 768); over IPv6 the UDP checksum verifies over the
	 * pseudo-header */
	const uint8_t *l3 = buf + 14 + (vlan ? 4 : 0);
	const uint8_t *udp = pk.payload - 8;
	uint32_t ulen = 8 + 301, ps = 17 + ulen;
	if (fam == 4) {
		assert_int_equal(sum16(l3, 20, 0), 0xFFFF);
		assert_int_equal(fg_be16(udp + 6), 0);
	} else {
		ps = sum16(l3 + 8, 32, ps);
		assert_int_equal(sum16(udp, ulen, ps), 0xFFFF);
	}
	/* every prefix is refused, never read past */
	for (uint32_t k = 0; k < n; k++) {
		uint8_t *cut = malloc(k ? k : 1);
		memcpy(cut, buf, k);
		enum dp_pkt_kind kind = dp_pkt_parse(cut, k, &pk);
		assert_int_not_equal(kind, DP_PKT_UDP);
		free(cut);
	}
}

/* The IPv6 UDP checksum (8 bytes at a time, then 4, 2, 1) verifies for
 * every payload length around each of those steps. */
static void test_v6_checksum_lengths(void **st)
{
	(void)st;
	for (uint32_t plen = 0; plen < 80; plen++) {
		uint8_t buf[2048];
		uint32_t n = build(buf, 6, plen & 1, plen);
		struct dp_pkt pk;
		assert_int_equal(dp_pkt_parse(buf, n, &pk), DP_PKT_UDP);
		const uint8_t *l3 = buf + 14 + ((plen & 1) ? 4 : 0);
		uint32_t ulen = 8 + plen;
		uint32_t ps = sum16(l3 + 8, 32, 17 + ulen);
		assert_int_equal(sum16(pk.payload - 8, ulen, ps), 0xFFFF);
		assert_int_not_equal(fg_be16(pk.payload - 2), 0); /* 0 is sent as 0xFFFF */
	}
}

static void test_roundtrip_v4(void **st) { (void)st; roundtrip(4, false); }
static void test_roundtrip_v4_vlan(void **st) { (void)st; roundtrip(4, true); }
static void test_roundtrip_v6(void **st) { (void)st; roundtrip(6, false); }
static void test_roundtrip_v6_vlan(void **st) { (void)st; roundtrip(6, true); }

static void test_qinq(void **st)
{
	(void)st;
	uint8_t buf[2048], q[2100];
	uint32_t n = build(buf, 4, true, 20);
	/* insert an 802.1ad outer tag in front of the 802.1Q one */
	memcpy(q, buf, 12);
	q[12] = 0x88, q[13] = 0xa8, q[14] = 0x00, q[15] = 0x05;
	memcpy(q + 16, buf + 12, n - 12);
	struct dp_pkt pk;
	assert_int_equal(dp_pkt_parse(q, n + 4, &pk), DP_PKT_UDP);
	assert_int_equal(pk.route.vlan_tci, 0x2064); /* the inner tag is the one replies keep */
	assert_int_equal(pk.payload_len, 20);
}

static void test_inconsistent_lengths(void **st)
{
	(void)st;
	uint8_t buf[2048];
	uint32_t n = build(buf, 4, false, 100);
	struct dp_pkt pk;
	uint8_t c[2048];
	memcpy(c, buf, n);
	fg_put_be16(c + 14 + 2, (uint16_t)(n - 14 + 1)); /* IP total length past the frame */
	assert_int_equal(dp_pkt_parse(c, n, &pk), DP_PKT_MALFORMED);
	memcpy(c, buf, n);
	fg_put_be16(c + 34 + 4, 200); /* UDP length past the IP payload */
	assert_int_equal(dp_pkt_parse(c, n, &pk), DP_PKT_MALFORMED);
	memcpy(c, buf, n);
	fg_put_be16(c + 34 + 4, 7); /* UDP length below its header */
	assert_int_equal(dp_pkt_parse(c, n, &pk), DP_PKT_MALFORMED);
	memcpy(c, buf, n);
	c[14] = 0x44; /* IHL 4 */
	assert_int_equal(dp_pkt_parse(c, n, &pk), DP_PKT_MALFORMED);
	memcpy(c, buf, n);
	c[14] = 0x65; /* version 6 in an IPv4 ethertype */
	assert_int_equal(dp_pkt_parse(c, n, &pk), DP_PKT_MALFORMED);
	/* Ethernet padding after the IP packet is fine */
	memcpy(c, buf, n);
	memset(c + n, 0, 10);
	assert_int_equal(dp_pkt_parse(c, n + 10, &pk), DP_PKT_UDP);
	assert_int_equal(pk.payload_len, 100);
}

static void test_fragments_and_protocols(void **st)
{
	(void)st;
	uint8_t buf[2048], c[2048];
	uint32_t n = build(buf, 4, false, 100);
	struct dp_pkt pk;
	memcpy(c, buf, n);
	c[14 + 6] = 0x20; /* MF */
	assert_int_equal(dp_pkt_parse(c, n, &pk), DP_PKT_IP_FRAG);
	memcpy(c, buf, n);
	c[14 + 7] = 0x10; /* offset */
	assert_int_equal(dp_pkt_parse(c, n, &pk), DP_PKT_IP_FRAG);
	memcpy(c, buf, n);
	c[14 + 9] = 6; /* TCP */
	assert_int_equal(dp_pkt_parse(c, n, &pk), DP_PKT_NOT_UDP);
	n = build(buf, 6, false, 100);
	memcpy(c, buf, n);
	c[14 + 6] = 44; /* IPv6 fragment header */
	assert_int_equal(dp_pkt_parse(c, n, &pk), DP_PKT_IP_FRAG);
	c[14 + 6] = 0; /* hop-by-hop options: extension headers are refused */
	assert_int_equal(dp_pkt_parse(c, n, &pk), DP_PKT_NOT_UDP);
	memcpy(c, buf, n);
	c[12] = 0x88, c[13] = 0xcc; /* LLDP */
	assert_int_equal(dp_pkt_parse(c, n, &pk), DP_PKT_NOT_UDP);
}

/* dp_pkt_udp4_form (the receive path's known flows) says yes exactly when
 * dp_pkt_parse gives an untagged IPv4 UDP verdict with the payload after a
 * 20-byte header: every value of every header byte, every truncation, and
 * VLAN, QinQ and IPv6 frames; and the flow key (frame bytes 6..13, 26..37)
 * holds what the parse read. A flow's pattern, taken from frame `orig`,
 * matches (dp_pkt_udp4_lens and dp_flow_pat_eq) exactly when the frame is
 * of the form and has orig's flow key. */
static bool form_agrees(const uint8_t *c, uint32_t n, const uint8_t *orig)
{
	struct dp_pkt pk;
	bool parsed = dp_pkt_parse(c, n, &pk) == DP_PKT_UDP && pk.src.family == 4 && pk.payload == c + DP_UDP4_PAYLOAD;
	bool form = dp_pkt_udp4_form(c, n);
	if (form != parsed)
		return false;
	if (form) {
		if (memcmp(c + 6, pk.route.mac, 6) || pk.payload_len != (uint32_t)fg_be16(c + DP_UDP4_UDP + 4) - 8u)
			return false;
		if (memcmp(c + 26, pk.src.addr, 4) || memcmp(c + 30, pk.dst, 4))
			return false;
		if (fg_be16(c + 34) != pk.src.port || fg_be16(c + 36) != pk.dst_port)
			return false;
	}
	struct dp_flow_pat pat;
	dp_flow_pat_of(orig, &pat);
	bool key = form && !memcmp(c + 6, orig + 6, 8) && !memcmp(c + 26, orig + 26, 12);
	return (dp_pkt_udp4_lens(c, n) && dp_flow_pat_eq(c, &pat)) == key;
}

static void test_udp4_form(void **st)
{
	(void)st;
	uint8_t buf[2048], c[2048], o[2048];
	uint32_t n = build(buf, 4, false, 100);
	assert_true(dp_pkt_udp4_form(buf, n));
	assert_true(form_agrees(buf, n, buf));
	for (uint32_t i = 0; i < DP_UDP4_PAYLOAD; i++)
		for (unsigned v = 0; v < 256; v++) {
			memcpy(c, buf, n);
			c[i] = (uint8_t)v;
			if (!form_agrees(c, n, buf))
				fail_msg("byte %u = 0x%02x: dp_pkt_udp4_form, dp_pkt_parse or the pattern disagree", i, v);
			/* a pattern taken from the changed frame, when it is of the form */
			if (dp_pkt_udp4_form(c, n) && !form_agrees(buf, n, c))
				fail_msg("pattern of byte %u = 0x%02x: the pattern disagrees", i, v);
		}
	/* the TOS, id, DF, TTL and lengths of the flow's frames vary */
	memcpy(o, buf, n);
	o[15] = 0xB8, o[18] = 0x12, o[19] = 0x34, o[20] = 0x40, o[22] = 3;
	assert_true(dp_pkt_udp4_form(o, n));
	assert_true(form_agrees(o, n, buf));
	struct dp_flow_pat pat;
	dp_flow_pat_of(buf, &pat);
	assert_true(dp_pkt_udp4_lens(o, n) && dp_flow_pat_eq(o, &pat));
	for (uint32_t len = 0; len <= n; len++)
		if (!form_agrees(buf, len, buf))
			fail_msg("truncated to %u: dp_pkt_udp4_form, dp_pkt_parse or the pattern disagree", len);
	n = build(buf, 4, true, 100); /* 802.1Q */
	assert_false(dp_pkt_udp4_form(buf, n));
	assert_true(form_agrees(buf, n, o));
	n = build(buf, 6, false, 100);
	assert_false(dp_pkt_udp4_form(buf, n));
	assert_true(form_agrees(buf, n, o));
}

#ifdef __SSE4_1__
/* One lane of dp_pkt_udp4_lens4: frame f with IP total length tot and UDP
 * length ulen, frame length len (>= DP_UDP4_PAYLOAD). */
struct lens_lane {
	uint32_t len, tot, ulen;
};

/* dp_pkt_udp4_lens4 on four lanes agrees with dp_pkt_udp4_lens on each:
 * true exactly when all four are, and then each lane's payload length is
 * the UDP length - 8. */
static void lens4_agrees(const struct lens_lane *l)
{
	uint8_t f[4][64];
	const uint8_t *p[4];
	bool all = true;
	for (unsigned k = 0; k < 4; k++) {
		memset(f[k], 0xA5, sizeof(f[k]));
		fg_put_be16(f[k] + DP_UDP4_IP + 2, (uint16_t)l[k].tot);
		fg_put_be16(f[k] + DP_UDP4_UDP + 4, (uint16_t)l[k].ulen);
		p[k] = f[k];
		all &= dp_pkt_udp4_lens(f[k], l[k].len);
	}
	__m128i plen;
	bool got = dp_pkt_udp4_lens4(p, _mm_setr_epi32((int)l[0].len, (int)l[1].len, (int)l[2].len, (int)l[3].len), &plen);
	if (got != all)
		fail_msg("lens4 %d, lens %d: len/tot/ulen %u/%u/%u %u/%u/%u %u/%u/%u %u/%u/%u", got, all, l[0].len, l[0].tot,
			 l[0].ulen, l[1].len, l[1].tot, l[1].ulen, l[2].len, l[2].tot, l[2].ulen, l[3].len, l[3].tot, l[3].ulen);
	if (got) {
		uint32_t out[4];
		_mm_storeu_si128((__m128i *)(void *)out, plen);
		for (unsigned k = 0; k < 4; k++)
			assert_int_equal(out[k], l[k].ulen - 8u);
	}
}

static void test_udp4_lens4(void **st)
{
	(void)st;
	/* every lane alone through the edges of each range, the others of the form */
	static const uint32_t v[] = {0,  1,  7,  8,  9,  12, 19, 20, 21,   27,   28,   29,    41,    42,
				     43, 60, 99, 100, 101, 1500, 1514, 32767, 32768, 65513, 65521, 65534, 65535};
	const unsigned nv = sizeof(v) / sizeof(v[0]);
	const struct lens_lane ok = {.len = 100, .tot = 86, .ulen = 66};
	for (unsigned k = 0; k < 4; k++)
		for (unsigned a = 0; a < nv; a++)
			for (unsigned b = 0; b < nv; b++)
				for (unsigned c = 0; c < nv; c++) {
					if (v[a] < DP_UDP4_PAYLOAD)
						continue;
					struct lens_lane l[4] = {ok, ok, ok, ok};
					l[k] = (struct lens_lane){.len = v[a], .tot = v[b], .ulen = v[c]};
					lens4_agrees(l);
				}
	/* four lanes at random, near the form's ranges half of the time */
	uint64_t x = 0x9E3779B97F4A7C15ull;
	for (unsigned i = 0; i < 200000; i++) {
		struct lens_lane l[4];
		for (unsigned k = 0; k < 4; k++) {
			uint64_t r = fg_test_xorshift64(&x);
			l[k].len = DP_UDP4_PAYLOAD + (uint32_t)(r % (65536 - DP_UDP4_PAYLOAD));
			if (r >> 63) {
				l[k].tot = l[k].len - DP_ETH_HLEN - (uint32_t)((r >> 20) % 4) + 1u;
				l[k].ulen = (uint32_t)((l[k].tot - 20u - ((r >> 30) % 4) + 1u) & 0xFFFFu);
				l[k].tot &= 0xFFFFu;
			} else {
				l[k].tot = (uint32_t)(r >> 16) & 0xFFFFu;
				l[k].ulen = (uint32_t)(r >> 32) & 0xFFFFu;
			}
		}
		lens4_agrees(l);
	}
}
#endif

static void test_arp(void **st)
{
	(void)st;
	uint8_t req[60];
	tu_arp_request(req, mac_b, b4, a4);
	struct dp_pkt pk;
	assert_int_equal(dp_pkt_parse(req, 60, &pk), DP_PKT_ARP);
	assert_int_equal(pk.arp_op, 1);
	assert_memory_equal(pk.arp_tpa, a4, 4);
	uint8_t rep[64];
	uint32_t n = dp_pkt_build_arp_reply(rep, &pk, mac_a, a4);
	assert_int_equal(n, 60);
	struct dp_pkt r;
	assert_int_equal(dp_pkt_parse(rep, n, &r), DP_PKT_ARP);
	assert_int_equal(r.arp_op, 2);
	assert_memory_equal(r.arp_sha, mac_a, 6);
	assert_memory_equal(r.arp_spa, a4, 4);
	assert_memory_equal(r.arp_tpa, b4, 4);
	assert_memory_equal(rep, mac_b, 6);
	/* a truncated ARP is malformed */
	assert_int_equal(dp_pkt_parse(req, 14 + 27, &pk), DP_PKT_MALFORMED);
}

static void test_ndp(void **st)
{
	(void)st;
	/* a neighbour solicitation from a6 for b6 (built by hand, RFC 4861 4.3) */
	uint8_t ns[86] = {0};
	memcpy(ns, "\x33\x33\xff\x00\x00\x04", 6);
	memcpy(ns + 6, mac_b, 6);
	ns[12] = 0x86, ns[13] = 0xdd;
	uint8_t *ip = ns + 14;
	ip[0] = 0x60;
	fg_put_be16(ip + 4, 32);
	ip[6] = 58;
	ip[7] = 255;
	memcpy(ip + 8, a6, 16);
	memcpy(ip + 24, "\xff\x02\0\0\0\0\0\0\0\0\0\x01\xff\x00\x00\x04", 16);
	ip[40] = 135;
	memcpy(ip + 48, b6, 16);
	ip[64] = 1, ip[65] = 1;
	memcpy(ip + 66, mac_b, 6);
	struct dp_pkt pk;
	assert_int_equal(dp_pkt_parse(ns, sizeof(ns), &pk), DP_PKT_NDP_NS);
	assert_memory_equal(pk.nd_target, b6, 16);
	assert_memory_equal(pk.src.addr, a6, 16);
	/* hop limit other than 255 is not a valid solicitation */
	ip[7] = 64;
	assert_int_equal(dp_pkt_parse(ns, sizeof(ns), &pk), DP_PKT_NOT_UDP);
	ip[7] = 255;
	assert_int_equal(dp_pkt_parse(ns, sizeof(ns), &pk), DP_PKT_NDP_NS);
	uint8_t na[128];
	uint32_t n = dp_pkt_build_ndp_na(na, &pk, mac_a, b6);
	assert_int_equal(n, 14 + 40 + 32);
	assert_memory_equal(na, mac_b, 6);       /* to the solicitor */
	assert_memory_equal(na + 6, mac_a, 6);
	const uint8_t *nip = na + 14;
	assert_int_equal(nip[6], 58);
	assert_int_equal(nip[7], 255);
	assert_memory_equal(nip + 8, b6, 16);
	assert_memory_equal(nip + 24, a6, 16);
	const uint8_t *ic = nip + 40;
	assert_int_equal(ic[0], 136);
	assert_int_equal(ic[4], 0x60);            /* solicited, override */
	assert_memory_equal(ic + 8, b6, 16);
	assert_int_equal(ic[24], 2);
	assert_memory_equal(ic + 26, mac_a, 6);
	/* the ICMPv6 checksum verifies over the pseudo-header */
	uint32_t ps = sum16(nip + 8, 32, 32 + 58);
	assert_int_equal(sum16(ic, 32, ps), 0xFFFF);
	/* DAD (unspecified source): to all nodes, not solicited */
	memset(ip + 8, 0, 16);
	assert_int_equal(dp_pkt_parse(ns, sizeof(ns), &pk), DP_PKT_NDP_NS);
	n = dp_pkt_build_ndp_na(na, &pk, mac_a, b6);
	assert_memory_equal(na, "\x33\x33\x00\x00\x00\x01", 6);
	assert_int_equal(na[14 + 40 + 4], 0x20);
	/* every prefix is refused */
	for (uint32_t k = 0; k < sizeof(ns); k++)
		assert_int_not_equal(dp_pkt_parse(ns, k, &pk), DP_PKT_NDP_NS);
}

/* Our own requests: a broadcast ARP request and a neighbour solicitation
 * to the solicited-node address parse back as what they ask; an
 * advertisement answering the solicitation parses with its flags and
 * target link-layer address. */
static void test_requests_and_answers(void **st)
{
	(void)st;
	uint8_t f[128];
	struct dp_pkt pk;
	uint32_t n = dp_pkt_build_arp_request(f, mac_a, a4, b4);
	assert_int_equal(n, 60);
	assert_int_equal(dp_pkt_parse(f, n, &pk), DP_PKT_ARP);
	assert_memory_equal(f, "\xff\xff\xff\xff\xff\xff", 6);
	assert_int_equal(pk.arp_op, 1);
	assert_memory_equal(pk.arp_sha, mac_a, 6);
	assert_memory_equal(pk.arp_spa, a4, 4);
	assert_memory_equal(pk.arp_tpa, b4, 4);
	/* the answer a host's kernel sends: to our MAC, for our MAC */
	uint8_t rep[64];
	n = dp_pkt_build_arp_reply(rep, &pk, mac_b, b4);
	struct dp_pkt r;
	assert_int_equal(dp_pkt_parse(rep, n, &r), DP_PKT_ARP);
	assert_int_equal(r.arp_op, 2);
	assert_memory_equal(r.arp_tha, mac_a, 6);
	assert_memory_equal(r.route.our_mac, mac_a, 6);
	assert_memory_equal(r.arp_spa, b4, 4);

	n = dp_pkt_build_ndp_ns(f, mac_a, a6, b6);
	assert_int_equal(n, 86);
	assert_int_equal(dp_pkt_parse(f, n, &pk), DP_PKT_NDP_NS);
	assert_memory_equal(f, "\x33\x33\xff\x00\x00\x04", 6);
	assert_memory_equal(pk.nd_target, b6, 16);
	assert_memory_equal(pk.src.addr, a6, 16);
	assert_memory_equal(pk.dst, "\xff\x02\0\0\0\0\0\0\0\0\0\x01\xff\x00\x00\x04", 16);
	const uint8_t *ip = f + 14;
	uint32_t ps = sum16(ip + 8, 32, 32 + 58);
	assert_int_equal(sum16(ip + 40, 32, ps), 0xFFFF);
	assert_int_equal(ip[40 + 24], 1); /* source link-layer address option */
	assert_memory_equal(ip + 40 + 26, mac_a, 6);
	/* b6's answer (solicited, override, its MAC in the option) */
	uint8_t na[128];
	n = dp_pkt_build_ndp_na(na, &pk, mac_b, b6);
	assert_int_equal(dp_pkt_parse(na, n, &r), DP_PKT_NDP_NA);
	assert_int_equal(r.nd_flags & DP_ND_SOLICITED, DP_ND_SOLICITED);
	assert_true(r.nd_has_lladdr);
	assert_memory_equal(r.nd_lladdr, mac_b, 6);
	assert_memory_equal(r.nd_target, b6, 16);
	assert_memory_equal(r.dst, a6, 16);
	assert_memory_equal(r.route.our_mac, mac_a, 6);
	/* an option of length 0 is malformed (RFC 4861 4.6); no option: none */
	na[14 + 40 + 25] = 0;
	assert_int_equal(dp_pkt_parse(na, n, &r), DP_PKT_MALFORMED);
	fg_put_be16(na + 14 + 4, 24);
	assert_int_equal(dp_pkt_parse(na, n - 8, &r), DP_PKT_NDP_NA);
	assert_false(r.nd_has_lladdr);
	/* hop limit other than 255: not an advertisement */
	na[14 + 7] = 64;
	assert_int_equal(dp_pkt_parse(na, n - 8, &r), DP_PKT_NOT_UDP);
}

/* Addresses: only one host may send, only we may be sent to. */
static enum dp_addr_verdict addr_of(int fam, const char *src, const char *dst, const uint8_t *own4, const uint8_t *own6)
{
	struct dp_pkt pk;
	memset(&pk, 0, sizeof(pk));
	pk.src.family = (uint8_t)fam;
	assert_int_equal(inet_pton(fam == 6 ? AF_INET6 : AF_INET, src, pk.src.addr), 1);
	assert_int_equal(inet_pton(fam == 6 ? AF_INET6 : AF_INET, dst, pk.dst), 1);
	return dp_pkt_addr_check(&pk, own4, own6);
}

static void test_addr_check(void **st)
{
	(void)st;
	uint8_t own4[4], own6[16];
	assert_int_equal(inet_pton(AF_INET, "10.99.0.1", own4), 1);
	assert_int_equal(inet_pton(AF_INET6, "fd99::1", own6), 1);
	assert_int_equal(addr_of(4, "10.99.0.2", "10.99.0.1", own4, own6), DP_ADDR_OK);
	assert_int_equal(addr_of(6, "fd99::2", "fd99::1", own4, own6), DP_ADDR_OK);
	/* sources that are not one host, or are us */
	const char *bad4[] = {"0.0.0.0", "0.1.2.3", "127.0.0.1", "127.9.9.9", "224.0.0.1", "239.1.1.1",
			      "240.0.0.1", "255.255.255.255", "10.99.0.1"};
	for (size_t i = 0; i < sizeof(bad4) / sizeof(bad4[0]); i++)
		assert_int_equal(addr_of(4, bad4[i], "10.99.0.1", own4, own6), DP_ADDR_BAD_SOURCE);
	const char *bad6[] = {"::", "::1", "ff02::1", "ff05::2", "fd99::1"};
	for (size_t i = 0; i < sizeof(bad6) / sizeof(bad6[0]); i++)
		assert_int_equal(addr_of(6, bad6[i], "fd99::1", own4, own6), DP_ADDR_BAD_SOURCE);
	/* destinations: foreign, broadcast, multicast */
	const char *not4[] = {"10.99.0.2", "10.99.0.255", "255.255.255.255", "224.0.0.1", "127.0.0.1", "0.0.0.0"};
	for (size_t i = 0; i < sizeof(not4) / sizeof(not4[0]); i++)
		assert_int_equal(addr_of(4, "10.99.0.2", not4[i], own4, own6), DP_ADDR_NOT_OURS);
	const char *not6[] = {"fd99::2", "ff02::1", "::1", "::"};
	for (size_t i = 0; i < sizeof(not6) / sizeof(not6[0]); i++)
		assert_int_equal(addr_of(6, "fd99::2", not6[i], own4, own6), DP_ADDR_NOT_OURS);
	/* our address of a family unknown: any unicast destination of it */
	assert_int_equal(addr_of(6, "fd99::2", "fd00::7", own4, NULL), DP_ADDR_OK);
	assert_int_equal(addr_of(6, "fd99::2", "ff02::1", own4, NULL), DP_ADDR_NOT_OURS);
	assert_int_equal(addr_of(4, "10.1.1.1", "10.2.2.2", NULL, own6), DP_ADDR_OK);
	assert_int_equal(addr_of(4, "10.1.1.1", "255.255.255.255", NULL, own6), DP_ADDR_NOT_OURS);
}

int main(void)
{
	inet_pton(AF_INET, "10.1.2.3", a4);
	inet_pton(AF_INET, "10.1.2.4", b4);
	inet_pton(AF_INET6, "fd00::3", a6);
	inet_pton(AF_INET6, "fd00::4", b6);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip_v4),
		cmocka_unit_test(test_roundtrip_v4_vlan),
		cmocka_unit_test(test_roundtrip_v6),
		cmocka_unit_test(test_v6_checksum_lengths),
		cmocka_unit_test(test_roundtrip_v6_vlan),
		cmocka_unit_test(test_qinq),
		cmocka_unit_test(test_inconsistent_lengths),
		cmocka_unit_test(test_fragments_and_protocols),
		cmocka_unit_test(test_udp4_form),
#ifdef __SSE4_1__
		cmocka_unit_test(test_udp4_lens4),
#endif
		cmocka_unit_test(test_arp),
		cmocka_unit_test(test_ndp),
		cmocka_unit_test(test_requests_and_answers),
		cmocka_unit_test(test_addr_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

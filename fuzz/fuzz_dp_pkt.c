/* fuzz_dp_pkt.c - libFuzzer target for the dataplane's L2/L3/L4 parser and
 * builders (dataplane/dp_pkt.c, pure C: UDP, ARP reply, NDP advertisement): the first thing every received
 * Ethernet frame meets, before fuzz_udp_rx's part of the path.
 *
 * Input: byte 0 selects the mode, the rest is the frame or the parameters.
 *   mode even: parse the rest as an Ethernet frame (exact-size allocation,
 *              so a read past the end is caught);
 *   mode odd:  build a UDP packet (VLAN or not, IPv4 or IPv6, addresses,
 *              ports, payload from the input) and parse it back; build an
 *              ARP reply to the input read as an ARP request.
 * Properties:
 *  1. no crash, no out-of-bounds read;
 *  2. a UDP verdict's payload lies inside the frame, after the headers, and
 *     the source family is 4 or 6 with the unused address bytes zero (v4);
 *  3. build then parse gives back the route (MACs, VLAN), family,
 *     addresses, ports and payload; the IPv4 header checksum and the UDP
 *     checksum (with its pseudo-header) verify; the length is
 *     dp_pkt_hdr_len + payload;
 *  4. an ARP reply to a parsed request parses as ARP op 2 from our address
 *     to the requester's, is at least 60 bytes and keeps the VLAN tag;
 *  5. a neighbour advertisement built for a parsed solicitation has the
 *     documented length, our address as source and target, hop limit 255,
 *     a verifying ICMPv6 checksum, and does not parse as a solicitation;
 *  6. dp_pkt_udp4_form says yes exactly when the parse gives an untagged
 *     IPv4 UDP verdict with the payload after a 20-byte header. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../dataplane/dp_pkt.h"
#include "fg/wire.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t sum16(const uint8_t *p, uint32_t len, uint32_t sum)
{
	for (; len > 1; p += 2, len -= 2)
		sum += (uint32_t)(p[0] << 8 | p[1]);
	if (len)
		sum += (uint32_t)(p[0] << 8);
	return sum;
}
static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xFFFFu) + (sum >> 16);
	return (uint16_t)sum;
}

static void parse_only(const uint8_t *d, size_t n)
{
	uint8_t *f = malloc(n ? n : 1);
	FUZZ_CHECK(f != NULL);
	memcpy(f, d, n);
	struct dp_pkt pk;
	enum dp_pkt_kind k = dp_pkt_parse(f, (uint32_t)n, &pk);
	FUZZ_CHECK(k == pk.kind && (unsigned)k <= DP_PKT_NDP_NA);
	if (k == DP_PKT_UDP) {
		FUZZ_CHECK(pk.src.family == 4 || pk.src.family == 6);
		FUZZ_CHECK(pk.payload >= f + DP_ETH_HLEN + 20 + 8);
		FUZZ_CHECK(pk.payload + pk.payload_len <= f + n);
		if (pk.src.family == 4)
			for (unsigned i = 4; i < 16; i++)
				FUZZ_CHECK(pk.src.addr[i] == 0 && pk.dst[i] == 0);
		FUZZ_CHECK(!memcmp(pk.route.local, pk.dst, 16));
		FUZZ_CHECK(!memcmp(pk.route.mac, f + 6, 6));
	}
	/* 6: the common form is exactly an untagged IPv4 UDP verdict with the
	 *    payload after a 20-byte header (dp_rx.c's known flows rely on it) */
	FUZZ_CHECK(dp_pkt_udp4_form(f, (uint32_t)n) ==
		   (k == DP_PKT_UDP && pk.src.family == 4 && pk.payload == f + DP_UDP4_PAYLOAD));
	if (k == DP_PKT_ARP) {
		uint8_t reply[64];
		static const uint8_t mac[6] = { 2, 0, 0, 0, 0, 1 }, ip[4] = { 10, 0, 0, 1 };
		uint32_t rn = dp_pkt_build_arp_reply(reply, &pk, mac, ip);
		FUZZ_CHECK(rn >= 60 && rn <= sizeof(reply));
		struct dp_pkt rp;
		FUZZ_CHECK(dp_pkt_parse(reply, rn, &rp) == DP_PKT_ARP);
		FUZZ_CHECK(rp.arp_op == 2 && !memcmp(rp.arp_spa, ip, 4) && !memcmp(rp.arp_tpa, pk.arp_spa, 4));
		FUZZ_CHECK(!memcmp(rp.arp_sha, mac, 6) && !memcmp(rp.route.our_mac, pk.arp_sha, 6));
		FUZZ_CHECK(rp.route.has_vlan == pk.route.has_vlan && rp.route.vlan_tci == pk.route.vlan_tci);
	}
	if (k == DP_PKT_NDP_NS) {
		uint8_t na[128];
		static const uint8_t mac[6] = { 2, 0, 0, 0, 0, 1 };
		static const uint8_t ip6[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
		uint32_t nn = dp_pkt_build_ndp_na(na, &pk, mac, ip6);
		uint32_t vl = pk.route.has_vlan ? 4u : 0u;
		FUZZ_CHECK(nn == DP_ETH_HLEN + vl + 40 + 32);
		const uint8_t *ip = na + DP_ETH_HLEN + vl;
		FUZZ_CHECK(fg_be16(ip - 2) == DP_ETHERTYPE_IPV6 && ip[6] == 58 && ip[7] == 255 && ip[40] == 136);
		FUZZ_CHECK(!memcmp(ip + 8, ip6, 16) && !memcmp(ip + 48, ip6, 16) && !memcmp(na + 6, mac, 6));
		/* ICMPv6 checksum over the pseudo-header verifies */
		FUZZ_CHECK(fold(sum16(ip + 40, 32, sum16(ip + 8, 32, 0) + 32 + 58)) == 0xFFFF);
		struct dp_pkt rp;
		/* an advertisement parses back as one: our address, our MAC */
		FUZZ_CHECK(dp_pkt_parse(na, nn, &rp) == DP_PKT_NDP_NA);
		FUZZ_CHECK(!memcmp(rp.nd_target, ip6, 16) && !memcmp(rp.src.addr, ip6, 16));
		FUZZ_CHECK(rp.nd_has_lladdr && !memcmp(rp.nd_lladdr, mac, 6));
		FUZZ_CHECK(rp.route.has_vlan == pk.route.has_vlan && rp.route.vlan_tci == pk.route.vlan_tci);
	}
	if (k == DP_PKT_ARP || k == DP_PKT_NDP_NS || k == DP_PKT_NDP_NA) {
		/* our own requests for the address the packet named, parsed back */
		static const uint8_t mac[6] = { 2, 0, 0, 0, 0, 1 }, ip4[4] = { 10, 0, 0, 1 };
		static const uint8_t ip6[16] = { 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 };
		uint8_t req[128];
		struct dp_pkt rp;
		if (k == DP_PKT_ARP) {
			uint32_t rn = dp_pkt_build_arp_request(req, mac, ip4, pk.arp_spa);
			FUZZ_CHECK(rn == 60);
			FUZZ_CHECK(dp_pkt_parse(req, rn, &rp) == DP_PKT_ARP);
			FUZZ_CHECK(rp.arp_op == 1 && !memcmp(rp.arp_tpa, pk.arp_spa, 4) && !memcmp(rp.arp_spa, ip4, 4));
			FUZZ_CHECK(!memcmp(rp.arp_sha, mac, 6));
		} else {
			uint32_t rn = dp_pkt_build_ndp_ns(req, mac, ip6, pk.nd_target);
			FUZZ_CHECK(rn == 86);
			enum dp_pkt_kind rk = dp_pkt_parse(req, rn, &rp);
			/* a multicast or unspecified target is refused by the parser's own checks */
			FUZZ_CHECK(rk == DP_PKT_NDP_NS || rk == DP_PKT_NOT_UDP || rk == DP_PKT_MALFORMED);
			if (rk == DP_PKT_NDP_NS)
				FUZZ_CHECK(!memcmp(rp.nd_target, pk.nd_target, 16) && !memcmp(rp.src.addr, ip6, 16));
		}
	}
	free(f);
}

static void build_parse(const uint8_t *d, size_t n)
{
	/* parameters: flags(1) tci(2) mac(6) our(6) src(16) dst(16) sport(2) dport(2) id(2), payload */
	if (n < 53)
		return;
	struct dp_route rt = { 0 };
	int family = d[0] & 1 ? 6 : 4;
	rt.has_vlan = d[0] & 2;
	rt.vlan_tci = rt.has_vlan ? fg_be16(d + 1) : 0;
	memcpy(rt.mac, d + 3, 6);
	memcpy(rt.our_mac, d + 9, 6);
	uint8_t src[16] = { 0 }, dst[16] = { 0 };
	memcpy(src, d + 15, family == 6 ? 16 : 4);
	memcpy(dst, d + 31, family == 6 ? 16 : 4);
	uint16_t sport = fg_be16(d + 47), dport = fg_be16(d + 49), id = fg_be16(d + 51);
	const uint8_t *pl = d + 53;
	uint32_t plen = (uint32_t)(n - 53);
	if (plen > 1400)
		plen = 1400;
	uint32_t hl = dp_pkt_hdr_len(&rt, family);
	uint32_t total = hl + plen;
	uint8_t *buf = malloc(total);
	FUZZ_CHECK(buf != NULL);
	memcpy(buf + hl, pl, plen);
	uint32_t got = dp_pkt_build_udp(buf, &rt, family, src, sport, dst, dport, plen, id);
	FUZZ_CHECK(got == total);
	struct dp_pkt pk;
	enum dp_pkt_kind k = dp_pkt_parse(buf, total, &pk);
	/* a VLAN TCI of a QinQ/VLAN ethertype cannot confuse the parser: the tag
	 * is written by us, so the verdict is always UDP */
	FUZZ_CHECK(k == DP_PKT_UDP);
	FUZZ_CHECK(pk.src.family == family && !memcmp(pk.src.addr, src, 16) && !memcmp(pk.dst, dst, 16));
	FUZZ_CHECK(pk.src.port == sport && pk.dst_port == dport);
	FUZZ_CHECK(pk.payload == buf + hl && pk.payload_len == plen && !memcmp(pk.payload, pl, plen));
	FUZZ_CHECK(!memcmp(pk.route.mac, rt.our_mac, 6) && !memcmp(pk.route.our_mac, rt.mac, 6));
	FUZZ_CHECK(pk.route.has_vlan == rt.has_vlan && pk.route.vlan_tci == rt.vlan_tci);
	const uint8_t *l3 = buf + DP_ETH_HLEN + (rt.has_vlan ? 4 : 0);
	const uint8_t *udp = l3 + (family == 6 ? 40 : 20);
	uint32_t ulen = 8 + plen;
	if (family == 4) {
		FUZZ_CHECK(fold(sum16(l3, 20, 0)) == 0xFFFF);
		FUZZ_CHECK(udp[6] == 0 && udp[7] == 0); /* no UDP checksum over IPv4 (RFC 768) */
	} else {
		uint32_t sum = sum16(l3 + 8, 32, 0) + 17 + ulen;
		FUZZ_CHECK(fold(sum16(udp, ulen, sum)) == 0xFFFF);
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] & 1)
		build_parse(data + 1, size - 1);
	else
		parse_only(data + 1, size - 1);
	return 0;
}

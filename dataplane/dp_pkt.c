/* dp_pkt.c - L2/L3/L4 parsing and building on byte buffers (see dp_pkt.h).
 * Stateless; any thread. */
#include "dp_pkt.h"

#include <string.h>

#include "fg/wire.h"

#define IPPROTO_UDP_ 17u

enum dp_pkt_kind dp_pkt_parse(const uint8_t *p, uint32_t len, struct dp_pkt *out)
{
	memset(&out->src, 0, sizeof(out->src));
	out->kind = DP_PKT_MALFORMED;
	if (len < DP_ETH_HLEN)
		return out->kind;
	memcpy(out->route.mac, p + 6, 6);
	memcpy(out->route.our_mac, p, 6);
	out->route.has_vlan = false;
	out->route.vlan_tci = 0;
	uint32_t off = 12;
	uint16_t et = fg_be16(p + off);
	if (et == DP_ETHERTYPE_QINQ) { /* outer tag: skipped, replies keep only the inner one */
		if (len < off + 8)
			return out->kind;
		off += 4;
		et = fg_be16(p + off);
	}
	if (et == DP_ETHERTYPE_VLAN) {
		if (len < off + 6)
			return out->kind;
		out->route.has_vlan = true;
		out->route.vlan_tci = fg_be16(p + off + 2);
		off += 4;
		et = fg_be16(p + off);
	}
	off += 2;
	const uint8_t *l3 = p + off;
	uint32_t l3len = len - off;
	if (et == DP_ETHERTYPE_ARP) {
		/* htype 1, ptype IPv4, hlen 6, plen 4 */
		if (l3len < 28 || fg_be16(l3) != 1 || fg_be16(l3 + 2) != DP_ETHERTYPE_IPV4 || l3[4] != 6 || l3[5] != 4)
			return out->kind;
		out->arp_op = fg_be16(l3 + 6);
		memcpy(out->arp_sha, l3 + 8, 6);
		memcpy(out->arp_spa, l3 + 14, 4);
		memcpy(out->arp_tha, l3 + 18, 6);
		memcpy(out->arp_tpa, l3 + 24, 4);
		return out->kind = DP_PKT_ARP;
	}
	const uint8_t *l4;
	uint32_t l4len;
	if (et == DP_ETHERTYPE_IPV4) {
		if (l3len < 20 || (l3[0] >> 4) != 4)
			return out->kind;
		uint32_t ihl = (uint32_t)(l3[0] & 15u) * 4u;
		uint32_t tot = fg_be16(l3 + 2);
		if (ihl < 20 || tot < ihl || tot > l3len)
			return out->kind;
		if (fg_be16(l3 + 6) & 0x3FFFu) /* MF or a fragment offset */
			return out->kind = DP_PKT_IP_FRAG;
		if (l3[9] != IPPROTO_UDP_)
			return out->kind = DP_PKT_NOT_UDP;
		out->src.family = 4;
		memcpy(out->src.addr, l3 + 12, 4);
		memset(out->dst, 0, 16);
		memcpy(out->dst, l3 + 16, 4);
		l4 = l3 + ihl;
		l4len = tot - ihl;
	} else if (et == DP_ETHERTYPE_IPV6) {
		if (l3len < 40 || (l3[0] >> 4) != 6)
			return out->kind;
		uint32_t plen = fg_be16(l3 + 4);
		if (plen > l3len - 40)
			return out->kind;
		if (l3[6] == 44) /* fragment header: not reassembled at L3 */
			return out->kind = DP_PKT_IP_FRAG;
		if (l3[6] == 58 && plen >= 24 && l3[40] == 135 && l3[41] == 0 && l3[7] == 255) {
			/* ICMPv6 neighbour solicitation (RFC 4861 4.3): hop limit 255 */
			out->src.family = 6;
			memcpy(out->src.addr, l3 + 8, 16);
			memcpy(out->dst, l3 + 24, 16);
			memcpy(out->nd_target, l3 + 48, 16);
			return out->kind = DP_PKT_NDP_NS;
		}
		if (l3[6] == 58 && plen >= 24 && l3[40] == 136 && l3[41] == 0 && l3[7] == 255) {
			/* ICMPv6 neighbour advertisement (RFC 4861 4.4): hop limit
			 * 255; the target link-layer address option, when present */
			out->src.family = 6;
			memcpy(out->src.addr, l3 + 8, 16);
			memcpy(out->dst, l3 + 24, 16);
			out->nd_flags = l3[44];
			memcpy(out->nd_target, l3 + 48, 16);
			out->nd_has_lladdr = false;
			for (uint32_t o = 64; o + 8 <= 40 + plen;) {
				uint32_t olen = (uint32_t)l3[o + 1] * 8u;
				if (!olen)
					return out->kind = DP_PKT_MALFORMED; /* RFC 4861 4.6: a zero length is invalid */
				if (o + olen > 40 + plen)
					break;
				if (l3[o] == 2 && olen == 8) {
					out->nd_has_lladdr = true;
					memcpy(out->nd_lladdr, l3 + o + 2, 6);
				}
				o += olen;
			}
			return out->kind = DP_PKT_NDP_NA;
		}
		if (l3[6] != IPPROTO_UDP_)
			return out->kind = DP_PKT_NOT_UDP;
		out->src.family = 6;
		memcpy(out->src.addr, l3 + 8, 16);
		memcpy(out->dst, l3 + 24, 16);
		l4 = l3 + 40;
		l4len = plen;
	} else {
		return out->kind = DP_PKT_NOT_UDP;
	}
	if (l4len < 8)
		return out->kind;
	uint32_t ulen = fg_be16(l4 + 4);
	if (ulen < 8 || ulen > l4len)
		return out->kind;
	out->src.port = fg_be16(l4);
	out->dst_port = fg_be16(l4 + 2);
	out->payload = l4 + 8;
	out->payload_len = ulen - 8;
	memcpy(out->route.local, out->dst, 16);
	return out->kind = DP_PKT_UDP;
}

uint32_t dp_pkt_hdr_len(const struct dp_route *rt, int family)
{
	return DP_ETH_HLEN + (rt->has_vlan ? 4u : 0u) + (family == 6 ? 40u : 20u) + 8u;
}

/* RFC 1071 sum of p[0..len) as big-endian 16-bit words, added to sum (a
 * partial sum in the same big-endian domain, not folded). The data are read
 * 8 bytes at a time in host order and the folded 16-bit result is swapped
 * back to network order (RFC 1071 2(B): the sum is byte-order independent),
 * a fraction of the instructions of a byte-pair loop. */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, uint32_t len)
{
	uint64_t s = 0;
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		s += (uint32_t)w;
		s += w >> 32;
		p += 8;
		len -= 8;
	}
	if (len >= 4) {
		uint32_t w;
		memcpy(&w, p, 4);
		s += w;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		uint16_t w;
		memcpy(&w, p, 2);
		s += w;
		p += 2;
		len -= 2;
	}
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (len)
		s += p[0]; /* a lone last byte is the high byte of a zero-padded big-endian word */
	while (s >> 16)
		s = (s & 0xFFFFu) + (s >> 16);
	return sum + (uint32_t)__builtin_bswap16((uint16_t)s);
#else
	if (len)
		s += (uint32_t)p[0] << 8;
	while (s >> 16)
		s = (s & 0xFFFFu) + (s >> 16);
	return sum + (uint32_t)s;
#endif
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xFFFFu) + (sum >> 16);
	return (uint16_t)~sum;
}

uint32_t dp_pkt_build_udp(uint8_t *buf, const struct dp_route *rt, int family, const uint8_t *src_ip,
			  uint16_t src_port, const uint8_t *dst_ip, uint16_t dst_port, uint32_t payload_len,
			  uint16_t ip_id)
{
	uint8_t *p = buf;
	memcpy(p, rt->mac, 6);
	memcpy(p + 6, rt->our_mac, 6);
	p += 12;
	if (rt->has_vlan) {
		fg_put_be16(p, DP_ETHERTYPE_VLAN);
		fg_put_be16(p + 2, rt->vlan_tci);
		p += 4;
	}
	fg_put_be16(p, family == 6 ? DP_ETHERTYPE_IPV6 : DP_ETHERTYPE_IPV4);
	p += 2;
	uint32_t ulen = 8 + payload_len;
	uint8_t *udp;
	uint32_t sum = 0;
	if (family == 6) {
		p[0] = 0x60;
		p[1] = p[2] = p[3] = 0;
		fg_put_be16(p + 4, (uint16_t)ulen);
		p[6] = IPPROTO_UDP_;
		p[7] = 64;
		memcpy(p + 8, src_ip, 16);
		memcpy(p + 24, dst_ip, 16);
		sum = csum_add(sum, p + 8, 32);
		udp = p + 40;
	} else {
		p[0] = 0x45;
		p[1] = 0;
		fg_put_be16(p + 2, (uint16_t)(20 + ulen));
		fg_put_be16(p + 4, ip_id);
		fg_put_be16(p + 6, 0x4000); /* DF */
		p[8] = 64;
		p[9] = IPPROTO_UDP_;
		p[10] = p[11] = 0;
		memcpy(p + 12, src_ip, 4);
		memcpy(p + 16, dst_ip, 4);
		fg_put_be16(p + 10, csum_fold(csum_add(0, p, 20)));
		udp = p + 20;
	}
	fg_put_be16(udp, src_port);
	fg_put_be16(udp + 2, dst_port);
	fg_put_be16(udp + 4, (uint16_t)ulen);
	udp[6] = udp[7] = 0;
	if (family == 6) { /* mandatory over IPv6 (RFC 8200 8.1) */
		sum += IPPROTO_UDP_ + ulen;
		sum = csum_add(sum, udp, ulen);
		uint16_t c = csum_fold(sum);
		fg_put_be16(udp + 6, c ? c : 0xFFFF);
	}
	/* IPv4: 0 = no checksum (RFC 768), which every receiver accepts (the
	 * Linux stack, veth, af_packet/af_xdp peers): summing every byte sent
	 * would cost the lcore a pass over each frame for a check the Ethernet
	 * FCS and the frame's own consistency checks already cover. */
	return (uint32_t)(udp - buf) + ulen;
}

void dp_pkt_tmpl_init(struct dp_pkt_tmpl *t, const struct dp_route *rt, int family, const uint8_t *src_ip,
		      uint16_t src_port, const uint8_t *dst_ip, uint16_t dst_port)
{
	memset(t, 0, sizeof(*t));
	t->family = family == 6 ? 6 : 4;
	t->hl = (uint8_t)dp_pkt_hdr_len(rt, t->family);
	t->l3 = (uint8_t)(t->hl - 8 - (t->family == 6 ? 40 : 20));
	/* the reference build with every per-datagram field zero: ip_id 0,
	 * an empty payload; those fields (and the checksums) are then cleared */
	(void)dp_pkt_build_udp(t->hdr, rt, t->family, src_ip, src_port, dst_ip, dst_port, 0, 0);
	uint8_t *ip = t->hdr + t->l3, *udp = t->hdr + t->hl - 8;
	udp[4] = udp[5] = udp[6] = udp[7] = 0;
	if (t->family == 4) {
		ip[2] = ip[3] = ip[4] = ip[5] = ip[10] = ip[11] = 0;
		for (unsigned i = 0; i < 20; i += 2)
			t->sum += fg_be16(ip + i);
	} else {
		ip[4] = ip[5] = 0;
		for (unsigned i = 8; i < 40; i += 2)
			t->sum += fg_be16(ip + i);
		t->sum += IPPROTO_UDP_ + src_port + dst_port;
	}
}

uint16_t dp_pkt_tmpl_udp6_csum(const uint8_t *buf, const struct dp_pkt_tmpl *t, uint32_t ulen)
{
	/* the pseudo-header's length and the UDP header's (the same), the
	 * payload; the UDP header's checksum field is zero */
	uint32_t sum = csum_add(t->sum + 2 * ulen, buf + t->hl, ulen - 8);
	uint16_t c = csum_fold(sum);
	return c ? c : 0xFFFF;
}

uint32_t dp_pkt_build_arp_reply(uint8_t *buf, const struct dp_pkt *req, const uint8_t our_mac[6],
				const uint8_t our_ip[4])
{
	uint8_t *p = buf;
	memcpy(p, req->arp_sha, 6);
	memcpy(p + 6, our_mac, 6);
	p += 12;
	if (req->route.has_vlan) {
		fg_put_be16(p, DP_ETHERTYPE_VLAN);
		fg_put_be16(p + 2, req->route.vlan_tci);
		p += 4;
	}
	fg_put_be16(p, DP_ETHERTYPE_ARP);
	p += 2;
	fg_put_be16(p, 1);
	fg_put_be16(p + 2, DP_ETHERTYPE_IPV4);
	p[4] = 6;
	p[5] = 4;
	fg_put_be16(p + 6, 2);
	memcpy(p + 8, our_mac, 6);
	memcpy(p + 14, our_ip, 4);
	memcpy(p + 18, req->arp_sha, 6);
	memcpy(p + 24, req->arp_spa, 4);
	p += 28;
	uint32_t n = (uint32_t)(p - buf);
	if (n < 60) {
		memset(p, 0, 60 - n);
		n = 60;
	}
	return n;
}

/* An ICMPv6 neighbour discovery message (RFC 4861: solicitation 135,
 * advertisement 136) at ip: its IPv6 header from src to dst (hop limit
 * 255), then type, the flags word, target and one link-layer address
 * option (opt: 1 source, 2 target) holding mac, and the checksum over the
 * pseudo-header. Returns the message's end. */
static uint8_t *nd_put(uint8_t *ip, const uint8_t src[16], const uint8_t dst[16], uint8_t type, uint32_t flags,
		       const uint8_t target[16], uint8_t opt, const uint8_t mac[6])
{
	const uint32_t icmp_len = 32; /* header 8 + target 16 + link-layer option 8 */
	ip[0] = 0x60;
	ip[1] = ip[2] = ip[3] = 0;
	fg_put_be16(ip + 4, icmp_len);
	ip[6] = 58;
	ip[7] = 255;
	memcpy(ip + 8, src, 16);
	memcpy(ip + 24, dst, 16);
	uint8_t *ic = ip + 40;
	ic[0] = type;
	ic[1] = 0;
	ic[2] = ic[3] = 0;
	fg_put_be32(ic + 4, flags);
	memcpy(ic + 8, target, 16);
	ic[24] = opt;
	ic[25] = 1;
	memcpy(ic + 26, mac, 6);
	uint32_t sum = csum_add(0, ip + 8, 32);
	sum += icmp_len + 58;
	sum = csum_add(sum, ic, icmp_len);
	fg_put_be16(ic + 2, csum_fold(sum));
	return ic + icmp_len;
}

uint32_t dp_pkt_build_ndp_na(uint8_t *buf, const struct dp_pkt *ns, const uint8_t our_mac[6],
			     const uint8_t our_ip[16])
{
	static const uint8_t unspec[16] = {0};
	static const uint8_t all_nodes[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
	bool dad = !memcmp(ns->src.addr, unspec, 16); /* solicitor without an address: answer all nodes */
	const uint8_t *dst = dad ? all_nodes : ns->src.addr;
	uint8_t *p = buf;
	if (dad) {
		const uint8_t mc[6] = {0x33, 0x33, 0, 0, 0, 1};
		memcpy(p, mc, 6);
	} else {
		memcpy(p, ns->route.mac, 6);
	}
	memcpy(p + 6, our_mac, 6);
	p += 12;
	if (ns->route.has_vlan) {
		fg_put_be16(p, DP_ETHERTYPE_VLAN);
		fg_put_be16(p + 2, ns->route.vlan_tci);
		p += 4;
	}
	fg_put_be16(p, DP_ETHERTYPE_IPV6);
	/* flags S (unless DAD) and O; our address as the target, our MAC in a
	 * target link-layer address option */
	const uint8_t *end = nd_put(p + 2, our_ip, dst, 136, dad ? 0x20000000u : 0x60000000u, our_ip, 2, our_mac);
	return (uint32_t)(end - buf);
}

uint32_t dp_pkt_build_arp_request(uint8_t *buf, const uint8_t our_mac[6], const uint8_t our_ip[4],
				  const uint8_t target_ip[4])
{
	uint8_t *p = buf;
	memset(p, 0xFF, 6);
	memcpy(p + 6, our_mac, 6);
	fg_put_be16(p + 12, DP_ETHERTYPE_ARP);
	p += 14;
	fg_put_be16(p, 1);
	fg_put_be16(p + 2, DP_ETHERTYPE_IPV4);
	p[4] = 6;
	p[5] = 4;
	fg_put_be16(p + 6, 1);
	memcpy(p + 8, our_mac, 6);
	memcpy(p + 14, our_ip, 4);
	memset(p + 18, 0, 6);
	memcpy(p + 24, target_ip, 4);
	memset(p + 28, 0, 60 - 42); /* padding to the 60-byte minimum frame */
	return 60;
}

uint32_t dp_pkt_build_ndp_ns(uint8_t *buf, const uint8_t our_mac[6], const uint8_t our_ip[16],
			     const uint8_t target[16])
{
	/* solicited-node multicast ff02::1:ffXX:XXXX and its MAC 33:33:ff:XX:XX:XX */
	uint8_t snm[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, target[13], target[14], target[15]};
	uint8_t *p = buf;
	p[0] = 0x33;
	p[1] = 0x33;
	memcpy(p + 2, snm + 12, 4);
	memcpy(p + 6, our_mac, 6);
	fg_put_be16(p + 12, DP_ETHERTYPE_IPV6);
	/* no flags; our MAC in a source link-layer address option */
	const uint8_t *end = nd_put(p + 14, our_ip, snm, 135, 0, target, 1, our_mac);
	return (uint32_t)(end - buf);
}

/* Unspecified, loopback, multicast, broadcast or reserved: never one host. */
static bool addr_special(int family, const uint8_t *a)
{
	if (family == 4)
		return a[0] == 0 || a[0] == 127 || a[0] >= 224;
	static const uint8_t zero[16];
	if (a[0] == 0xff)
		return true; /* ff00::/8 multicast */
	return !memcmp(a, zero, 15) && (a[15] == 0 || a[15] == 1); /* :: and ::1 */
}

enum dp_addr_verdict dp_pkt_addr_check(const struct dp_pkt *pk, const uint8_t *own4, const uint8_t *own6)
{
	int fam = pk->src.family;
	if (fam == 4) {
		/* the common case in a few instructions: first octets, then one
		 * 32-bit compare each against our address */
		uint8_t s0 = pk->src.addr[0], d0 = pk->dst[0];
		uint32_t s, d, o;
		memcpy(&s, pk->src.addr, 4);
		memcpy(&d, pk->dst, 4);
		if (s0 == 0 || s0 == 127 || s0 >= 224)
			return DP_ADDR_BAD_SOURCE;
		if (own4) {
			memcpy(&o, own4, 4);
			if (s == o)
				return DP_ADDR_BAD_SOURCE;
			return d == o ? DP_ADDR_OK : DP_ADDR_NOT_OURS; /* ours is one host */
		}
		return d0 == 0 || d0 == 127 || d0 >= 224 ? DP_ADDR_NOT_OURS : DP_ADDR_OK;
	}
	const uint8_t *own = fam == 6 ? own6 : own4;
	size_t alen = fam == 6 ? 16 : 4;
	if (addr_special(fam, pk->src.addr) || (own && !memcmp(pk->src.addr, own, alen)))
		return DP_ADDR_BAD_SOURCE;
	if (addr_special(fam, pk->dst) || (own && memcmp(pk->dst, own, alen)))
		return DP_ADDR_NOT_OURS;
	return DP_ADDR_OK;
}

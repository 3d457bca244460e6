/* dp_pkt.h - Ethernet (+VLAN), IPv4/IPv6 and UDP parsing and building on
 * plain byte buffers, plus ARP replies. Pure C (no DPDK types) so it is
 * unit-tested without an EAL.
 *
 * Who may call: any thread; stateless.
 *
 * Parsing rules (docs/dataplane.md): at most two VLAN tags (802.1ad outer,
 * 802.1Q inner); IPv4 with a valid header length and total length, not an IP
 * fragment; IPv6 whose next header is UDP (extension headers are refused);
 * UDP whose length fits the IP payload. Checksums are left to the NIC's
 * verdict (veth and af_packet deliver CHECKSUM_PARTIAL packets whose UDP
 * checksum is not final yet). */
#ifndef DP_PKT_H
#define DP_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE4_1__
#include <smmintrin.h>
#endif

#include "fg/common.h"
#include "fg/wire.h"
#include "dp_reasm.h"

#define DP_ETH_HLEN 14u
#define DP_ETHERTYPE_IPV4 0x0800u
#define DP_ETHERTYPE_IPV6 0x86DDu
#define DP_ETHERTYPE_ARP 0x0806u
#define DP_ETHERTYPE_VLAN 0x8100u
#define DP_ETHERTYPE_QINQ 0x88A8u

/* How to answer a peer at L2/L3. */
struct dp_route {
	uint8_t mac[6];     /* peer's MAC: destination of replies */
	uint8_t our_mac[6]; /* our MAC on that port */
	uint16_t vlan_tci;  /* 802.1Q TCI of the received packet, 0 = untagged */
	bool has_vlan;
	uint8_t local[16];  /* our address the peer sent to: source of replies */
};

enum dp_pkt_kind {
	DP_PKT_UDP = 0,   /* a UDP datagram for us: see fields */
	DP_PKT_ARP,       /* an ARP packet (arp_op, arp_tpa, arp_spa, arp_sha) */
	DP_PKT_NOT_UDP,   /* another protocol (or IPv6 extension headers, ICMP, TCP) */
	DP_PKT_MALFORMED, /* a header is truncated or inconsistent */
	DP_PKT_IP_FRAG,   /* an IPv4 fragment or an IPv6 fragment header (not reassembled at L3) */
	DP_PKT_NDP_NS,    /* an IPv6 neighbour solicitation (nd_target, src.addr, route.mac) */
	DP_PKT_NDP_NA,    /* an IPv6 neighbour advertisement (nd_target, nd_flags, nd_lladdr, src.addr, dst) */
};

#define DP_ND_SOLICITED 0x40u /* neighbour advertisement flag S (RFC 4861 4.4) */

struct dp_pkt {
	enum dp_pkt_kind kind;
	struct dp_peer src;  /* UDP source */
	uint8_t dst[16];     /* IP destination */
	uint16_t dst_port;
	const uint8_t *payload; /* UDP payload */
	uint32_t payload_len;
	struct dp_route route;  /* reply route (mac = source MAC) */
	/* ARP */
	uint16_t arp_op;
	uint8_t arp_sha[6];
	uint8_t arp_spa[4], arp_tpa[4];
	uint8_t arp_tha[6];
	/* neighbour solicitation / advertisement */
	uint8_t nd_target[16];
	uint8_t nd_flags;      /* NA: R 0x80, S 0x40, O 0x20 */
	bool nd_has_lladdr;    /* NA: a target link-layer address option */
	uint8_t nd_lladdr[6];
};

/* Parse one Ethernet frame p[0..len). Returns the kind (also in out->kind). */
enum dp_pkt_kind dp_pkt_parse(const uint8_t *p, uint32_t len, struct dp_pkt *out);

/* The addresses of a parsed UDP datagram (docs/dataplane.md, "Addresses").
 * The source must be one host: not unspecified, loopback, multicast,
 * broadcast or reserved (IPv4 0/8, 127/8, 224/4, 240/4; IPv6 ::, ::1,
 * ff00::/8) and not our own address. The destination must be unicast
 * (not those either) and, for a family whose address we know (own4/own6
 * non-NULL), ours: a datagram sent to a foreign, broadcast or multicast
 * address is not for us, whatever its UDP port. */
enum dp_addr_verdict {
	DP_ADDR_OK = 0,
	DP_ADDR_BAD_SOURCE, /* counted drop_bad_source */
	DP_ADDR_NOT_OURS,   /* counted drop_not_ours */
};
enum dp_addr_verdict dp_pkt_addr_check(const struct dp_pkt *pk, const uint8_t *own4, const uint8_t *own6);

/* The common form, recognised without a parse (dataplane/dp_rx.c's known
 * flows): an untagged IPv4 frame with a 20-byte header, not an IP
 * fragment, carrying UDP, its lengths consistent (28 <= IP total length
 * <= len - 14, 8 <= UDP length <= IP total length - 20). Exactly such a
 * frame dp_pkt_parse takes as DP_PKT_UDP with its payload at
 * DP_UDP4_PAYLOAD, UDP length - 8 bytes long, and every verdict the
 * receive path gives it (the parse, the address checks, the port demux,
 * the allowlist, the reply route) reads only the fields of its flow key
 * (the source MAC and EtherType, frame bytes 6..13; the IP source and
 * destination; the UDP source and destination ports). fuzz_dp_pkt checks
 * the first against dp_pkt_parse. */
#define DP_UDP4_IP DP_ETH_HLEN              /* version/IHL */
#define DP_UDP4_UDP (DP_ETH_HLEN + 20u)     /* the UDP header */
#define DP_UDP4_PAYLOAD (DP_UDP4_UDP + 8u)  /* the UDP payload */

static inline uint64_t dp_pkt_ld64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static inline uint32_t dp_pkt_ld32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* The form's two length ranges (28 <= IP total length <= len - 14, 8 <=
 * UDP length <= IP total length - 20), as unsigned differences. */
static inline bool dp_pkt_udp4_lens(const uint8_t *p, uint32_t len)
{
	if (len < DP_UDP4_PAYLOAD)
		return false;
	uint32_t tot = fg_be16(p + DP_UDP4_IP + 2), ulen = fg_be16(p + DP_UDP4_UDP + 4);
	return tot - 28u <= len - DP_UDP4_PAYLOAD && ulen - 8u <= tot - 28u;
}

#ifdef __SSE4_1__
/* dp_pkt_udp4_lens of four frames p[0..4) at once, their lengths len in
 * the 32-bit lanes, each at least DP_UDP4_PAYLOAD (the caller's check:
 * each frame's bytes up to the UDP payload are read). True when all four
 * are in the form's ranges; then *plen holds their UDP payload lengths
 * (UDP length - 8), a lane each. In 32-bit lanes of 16-bit values (no
 * lane overflows) the ranges are len - 14 - tot >= 0, tot - 20 - ulen >=
 * 0 and ulen - 8 >= 0 (tot >= 28 and len >= 42 follow): three
 * subtractions and one test of the sign bits. */
static inline bool dp_pkt_udp4_lens4(const uint8_t *const *p, __m128i len, __m128i *plen)
{
	/* the IP total lengths (words 0-3) and UDP lengths (words 4-7) as
	 * the wire has them, then each byte-swapped into a 32-bit lane */
	__m128i w = _mm_setzero_si128();
	uint16_t v;
#define DP_LENS4_W(k)                                  \
	memcpy(&v, p[k] + DP_UDP4_IP + 2, 2);           \
	w = _mm_insert_epi16(w, v, k);                  \
	memcpy(&v, p[k] + DP_UDP4_UDP + 4, 2);          \
	w = _mm_insert_epi16(w, v, (k) + 4)
	DP_LENS4_W(0);
	DP_LENS4_W(1);
	DP_LENS4_W(2);
	DP_LENS4_W(3);
#undef DP_LENS4_W
	__m128i tot = _mm_shuffle_epi8(w, _mm_setr_epi8(1, 0, -1, -1, 3, 2, -1, -1, 5, 4, -1, -1, 7, 6, -1, -1));
	__m128i ulen = _mm_shuffle_epi8(w, _mm_setr_epi8(9, 8, -1, -1, 11, 10, -1, -1, 13, 12, -1, -1, 15, 14, -1, -1));
	__m128i x = _mm_sub_epi32(_mm_sub_epi32(len, tot), _mm_set1_epi32(DP_ETH_HLEN));
	__m128i y = _mm_sub_epi32(_mm_sub_epi32(tot, ulen), _mm_set1_epi32(20));
	__m128i z = _mm_sub_epi32(ulen, _mm_set1_epi32(8));
	*plen = z;
	return !_mm_movemask_ps(_mm_castsi128_ps(_mm_or_si128(_mm_or_si128(x, y), z)));
}
#endif

static inline bool dp_pkt_udp4_form(const uint8_t *p, uint32_t len)
{
	if (!dp_pkt_udp4_lens(p, len))
		return false;
	/* two words against a pattern (constants once compiled, in either
	 * byte order): EtherType 0x0800 and version/IHL 0x45; no MF flag or
	 * fragment offset, protocol 17 (the TTL masked out) */
	static const uint8_t want0[4] = {0x08, 0x00, 0x45, 0}, mask0[4] = {0xFF, 0xFF, 0xFF, 0};
	static const uint8_t want1[4] = {0, 0, 0, 17}, mask1[4] = {0x3F, 0xFF, 0, 0xFF};
	return !(((dp_pkt_ld32(p + 12) & dp_pkt_ld32(mask0)) ^ dp_pkt_ld32(want0)) |
		 ((dp_pkt_ld32(p + DP_UDP4_IP + 6) & dp_pkt_ld32(mask1)) ^ dp_pkt_ld32(want1)));
}

/* A flow of that form, as a pattern over frame bytes 6..37 (four words):
 * the source MAC and EtherType, the IP header's version/IHL, flags and
 * fragment offset (but DF), protocol and addresses, the UDP ports; the
 * TOS, the lengths, the id, the TTL and the checksum masked out. Taken
 * from a frame of the form (dp_flow_pat_of), it holds the form's fixed
 * fields and the flow key (source MAC + EtherType, IP addresses, UDP
 * ports), so a frame matches it (dp_pkt_udp4_lens and dp_flow_pat_eq)
 * exactly when it is of dp_pkt_udp4_form and has that key: one test
 * where the form and the key took two (test_pkt checks every byte). */
#define DP_FLOW_OFF 6u
struct dp_flow_pat {
	uint64_t w[4];
};

static inline uint64_t dp_flow_mask(unsigned i)
{
	static const uint8_t m[32] = {
		0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, /* 6..13: source MAC, EtherType */
		0xFF, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3F, 0xFF, /* 14..21: ver/IHL, flags/offset */
		0x00, 0xFF, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, /* 22..29: protocol, source */
		0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, /* 30..37: destination, ports */
	};
	return dp_pkt_ld64(m + 8 * i);
}

static inline void dp_flow_pat_of(const uint8_t *p, struct dp_flow_pat *pat)
{
	for (unsigned i = 0; i < 4; i++)
		pat->w[i] = dp_pkt_ld64(p + DP_FLOW_OFF + 8 * i) & dp_flow_mask(i);
}

static inline bool dp_flow_pat_eq(const uint8_t *p, const struct dp_flow_pat *pat)
{
	return !((dp_pkt_ld64(p + DP_FLOW_OFF) ^ pat->w[0]) |
		 ((dp_pkt_ld64(p + DP_FLOW_OFF + 8) ^ pat->w[1]) & dp_flow_mask(1)) |
		 ((dp_pkt_ld64(p + DP_FLOW_OFF + 16) ^ pat->w[2]) & dp_flow_mask(2)) |
		 (dp_pkt_ld64(p + DP_FLOW_OFF + 24) ^ pat->w[3]));
}

/* Bytes of Ethernet + (VLAN) + IP + UDP headers for a route and family. */
uint32_t dp_pkt_hdr_len(const struct dp_route *rt, int family);

/* Write Ethernet/(VLAN)/IP/UDP headers in front of a UDP payload that is
 * already at buf + dp_pkt_hdr_len(rt, family). Computes the IPv4 header
 * checksum; the UDP checksum only over IPv6, where it is mandatory; over
 * IPv4 it is 0 ("none", RFC 768), which veth, af_packet, af_xdp and the
 * kernel's UDP sockets accept. family 4 or 6; dst/src addresses as in
 * dp_peer. Returns the total frame length. */
uint32_t dp_pkt_build_udp(uint8_t *buf, const struct dp_route *rt, int family, const uint8_t *src_ip,
			  uint16_t src_port, const uint8_t *dst_ip, uint16_t dst_port, uint32_t payload_len,
			  uint16_t ip_id);

/* A prebuilt Ethernet/(VLAN)/IP/UDP header shared by every datagram from
 * one source to one destination over one route: dp_pkt_tmpl_init builds
 * it once, dp_pkt_tmpl_put writes it in front of each payload with
 * fixed-size copies and patches only what differs per datagram (the
 * lengths, the IPv4 id, the checksums: the IPv4 header checksum from the
 * template's partial sum, the IPv6 UDP checksum from the pseudo-header's
 * partial sum and the payload). The frames are byte for byte those of
 * dp_pkt_build_udp with the same arguments. */
#define DP_PKT_HDR_MAX 66u /* Ethernet + VLAN + IPv6 + UDP */
struct dp_pkt_tmpl {
	uint8_t hdr[DP_PKT_HDR_MAX]; /* lengths, id and checksums zero */
	uint8_t hl;                  /* header bytes (dp_pkt_hdr_len) */
	uint8_t l3;                  /* offset of the IP header */
	uint8_t family;              /* 4 or 6 */
	uint32_t sum;                /* IPv4: ones' complement sum of the IP header's 16-bit words
				      * (big-endian values, not folded); IPv6: of the pseudo-header's
				      * addresses and next header and of the UDP ports */
};

/* Build t for datagrams as dp_pkt_build_udp(buf, rt, family, src_ip,
 * src_port, dst_ip, dst_port, ...) writes them. Pointers are read only
 * during the call. */
void dp_pkt_tmpl_init(struct dp_pkt_tmpl *t, const struct dp_route *rt, int family, const uint8_t *src_ip,
		      uint16_t src_port, const uint8_t *dst_ip, uint16_t dst_port);

/* The IPv6 UDP checksum of a datagram written from t whose UDP length is
 * ulen and whose payload (ulen - 8 bytes) is at buf + t->hl. */
uint16_t dp_pkt_tmpl_udp6_csum(const uint8_t *buf, const struct dp_pkt_tmpl *t, uint32_t ulen);

/* Copy n (32..96) bytes with fixed-size 32-byte copies (overlapping). */
static inline void dp_pkt_copy32s(uint8_t *dst, const uint8_t *src, uint32_t n)
{
	__builtin_memcpy(dst, src, 32);
	if (n > 64)
		__builtin_memcpy(dst + 32, src + 32, 32);
	__builtin_memcpy(dst + n - 32, src + n - 32, 32);
}

/* Write t's headers at buf[0..t->hl) for a UDP payload of payload_len
 * bytes and IPv4 id ip_id (unused over IPv6). Over IPv4 the payload may
 * be written before or after; over IPv6 it must already be at buf + t->hl
 * (the UDP checksum covers it). Returns the frame length. */
static inline uint32_t dp_pkt_tmpl_put(uint8_t *buf, const struct dp_pkt_tmpl *t, uint32_t payload_len,
				       uint16_t ip_id)
{
	uint32_t ulen = 8 + payload_len;
	if (t->hl == DP_UDP4_PAYLOAD) { /* untagged IPv4 (the only such length): fixed offsets and sizes */
		uint32_t tot = (uint16_t)(20 + ulen);
		uint32_t s = t->sum + tot + ip_id;
		s = (s & 0xFFFFu) + (s >> 16);
		s = (s & 0xFFFFu) + (s >> 16);
		__builtin_memcpy(buf, t->hdr, 32);
		__builtin_memcpy(buf + DP_UDP4_PAYLOAD - 16, t->hdr + DP_UDP4_PAYLOAD - 16, 16);
		fg_put_be16(buf + DP_UDP4_IP + 2, (uint16_t)tot);
		fg_put_be16(buf + DP_UDP4_IP + 4, ip_id);
		fg_put_be16(buf + DP_UDP4_IP + 10, (uint16_t)~s);
		fg_put_be16(buf + DP_UDP4_UDP + 4, (uint16_t)ulen);
		return DP_UDP4_PAYLOAD + payload_len;
	}
	uint8_t *ip = buf + t->l3, *udp = buf + t->hl - 8;
	dp_pkt_copy32s(buf, t->hdr, t->hl);
	fg_put_be16(udp + 4, (uint16_t)ulen);
	if (t->family == 4) {
		uint32_t tot = (uint16_t)(20 + ulen);
		uint32_t s = t->sum + tot + ip_id;
		s = (s & 0xFFFFu) + (s >> 16);
		s = (s & 0xFFFFu) + (s >> 16);
		fg_put_be16(ip + 2, (uint16_t)tot);
		fg_put_be16(ip + 4, ip_id);
		fg_put_be16(ip + 10, (uint16_t)~s);
	} else {
		fg_put_be16(ip + 4, (uint16_t)ulen);
		fg_put_be16(udp + 6, dp_pkt_tmpl_udp6_csum(buf, t, ulen));
	}
	return t->hl + payload_len;
}

/* A frame head[0..head_len) + body[0..body_len) sent in the fragmented
 * profile, chunk bytes a fragment (wire.md 1.2), without being assembled:
 * fragment i (0 <= i < fg_frag_count(head_len + body_len, chunk)) carries
 * the frame's bytes from off = i * chunk on, head[head_off..+head_n) then
 * body[body_off..+body_n) (head_n 0 once past the head). */
struct dp_frag_part {
	uint32_t head_off, head_n, body_off, body_n;
};

static inline struct dp_frag_part dp_frag_part(uint32_t off, uint32_t head_len, uint32_t body_len, uint32_t chunk)
{
	uint32_t len = head_len + body_len;
	uint32_t n = len - off < chunk ? len - off : chunk;
	struct dp_frag_part p = {.head_off = 0, .head_n = 0, .body_off = off - head_len, .body_n = n};
	if (off < head_len) {
		p.head_off = off;
		p.head_n = head_len - off < n ? head_len - off : n;
		p.body_off = 0;
		p.body_n = n - p.head_n;
	}
	return p;
}

/* Build an ARP reply to a request parsed into req, answering for our_ip with
 * our_mac. Returns the frame length (42 or 46 with VLAN; padded to 60). */
uint32_t dp_pkt_build_arp_reply(uint8_t *buf, const struct dp_pkt *req, const uint8_t our_mac[6],
				const uint8_t our_ip[4]);

/* Build a neighbour advertisement answering a solicitation parsed into ns
 * for our_ip (solicited, override; to the solicitor, or all-nodes when it
 * had no address yet), ICMPv6 checksum included. Returns the frame length. */
uint32_t dp_pkt_build_ndp_na(uint8_t *buf, const struct dp_pkt *ns, const uint8_t our_mac[6],
			     const uint8_t our_ip[16]);

/* Build a broadcast ARP request from our_mac/our_ip for target_ip
 * (untagged). Returns the frame length (60, padded). */
uint32_t dp_pkt_build_arp_request(uint8_t *buf, const uint8_t our_mac[6], const uint8_t our_ip[4],
				  const uint8_t target_ip[4]);

/* Build a neighbour solicitation from our_mac/our_ip for target (RFC 4861
 * 4.3: to target's solicited-node multicast address, hop limit 255, our
 * link-layer address option; untagged), ICMPv6 checksum included. Returns
 * the frame length (86). */
uint32_t dp_pkt_build_ndp_ns(uint8_t *buf, const uint8_t our_mac[6], const uint8_t our_ip[16],
			     const uint8_t target[16]);

#endif

/* dp_rx.c - an lcore's receive side: the RX burst, the known flows (a
 * datagram of a flow already accepted recognised by its header fields),
 * L2-L4 parse (dp_pkt_parse) for the others, ARP/NDP (solicitations,
 * advertisements) to dp_neigh.c, the UDP port demux (fragmented profile on
 * [udp] port, raw profile on raw_port), the source allowlist, point
 * liveness, the hand-over of the burst's datagrams to the shard work
 * (dp_shard_add, dp_shard_run: dp_shard.c) and the burst's mbufs freed.
 *
 * Point liveness ([points]): every datagram that passed the allowlist
 * stores `now` into b->point_seen_ns[p] for each point p whose prefixes hold
 * its source, at most once a millisecond per lcore and point.
 *
 * Who may call: the lcore that owns `lc` (its poll loop, dp_lcore.c). Every
 * received mbuf is only read here; dp_rx_burst frees the whole burst. */
#include <stddef.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>
#ifdef __SSE4_1__
#include <smmintrin.h>
#endif

#include "dp_burst_guard.h"
#include "dp_neigh.h"
#include "dp_rx.h"
#include "dp_shard.h"

/* The points whose prefixes hold addr, a bit per point (bit p-1). */
static uint8_t points_of(int family, const uint8_t *addr)
{
	int fam = family == 6 ? AF_INET6 : AF_INET;
	uint8_t mask = 0;
	for (unsigned p = 1; p <= FG_POINTS; p++) {
		unsigned np = dp_g.cfg.n_point_prefix[p - 1];
		for (unsigned j = 0; j < np; j++) {
			if (fg_prefix_match(&dp_g.cfg.point_prefix[p - 1][j], fam, addr)) {
				mask |= (uint8_t)(1u << (p - 1));
				break;
			}
		}
	}
	return mask;
}

/* A datagram from a source of the points in mask passed the checks:
 * each point's liveness stored, at most once a millisecond per lcore. */
static void points_seen(struct dp_lcore *lc, uint8_t mask, uint64_t now)
{
	for (unsigned p = 1; p <= FG_POINTS; p++) {
		if (!(mask & (1u << (p - 1))) || now - lc->point_store_ns[p] < 1000000ull)
			continue;
		atomic_store_explicit(&dp_g.b->point_seen_ns[p], now, memory_order_relaxed);
		lc->point_store_ns[p] = now;
		dp_lc_xcount(lc, DP_X_POINT_SEEN);
	}
}

/* Decode one packet: L2-L4 into *pk, ARP and NDP answered at once, the
 * checks; for a UDP datagram for the shard its flow's facts go to *fl and
 * true is returned (its payload: pk->payload, pk->payload_len). */
static bool rx_packet(struct dp_lcore *lc, struct rte_mbuf *m, struct dp_pkt *pk, struct dp_flow *fl, uint64_t now)
{
	if (m->nb_segs > 1) {
		dp_lc_xcount(lc, DP_X_MULTISEG);
		return false;
	}
	const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
	switch (dp_pkt_parse(p, rte_pktmbuf_data_len(m), pk)) {
	case DP_PKT_ARP:
		dp_neigh_on_arp(lc, pk);
		return false;
	case DP_PKT_NDP_NS:
		dp_neigh_on_ndp(lc, pk);
		return false;
	case DP_PKT_NDP_NA:
		dp_neigh_on_na(lc, pk);
		return false;
	case DP_PKT_NOT_UDP:
		dp_lc_count(lc, FG_C_DROP_NOT_UDP, 1);
		return false;
	case DP_PKT_IP_FRAG:
		dp_lc_xcount(lc, DP_X_IP_FRAG);
		return false;
	case DP_PKT_MALFORMED:
		dp_lc_xcount(lc, DP_X_PKT_MALFORMED);
		dp_lc_count(lc, FG_C_DROP_MALFORMED, 1);
		return false;
	case DP_PKT_UDP:
		break;
	}
	/* one host, sending to us (docs/dataplane.md "Addresses") */
	switch (dp_pkt_addr_check(pk, dp_g.prof.has_ip4 ? dp_g.prof.ip4 : NULL, dp_g.prof.has_ip6 ? dp_g.prof.ip6 : NULL)) {
	case DP_ADDR_OK:
		break;
	case DP_ADDR_BAD_SOURCE:
		dp_lc_xcount(lc, DP_X_BAD_SOURCE);
		return false;
	case DP_ADDR_NOT_OURS:
		dp_lc_xcount(lc, DP_X_NOT_OURS);
		return false;
	}
	bool frag = pk->dst_port == dp_g.cfg.udp_port;
	/* [udp] layer_ports: port BASE + L speaks the fragmented profile for
	 * layer L (wire.md 3); the datagram carries L into the shard's ingest
	 * context (and dp_shard copies it into any hand-off). */
	uint32_t lp_off = (uint32_t)pk->dst_port - dp_g.cfg.udp_layer_ports;
	bool bound = dp_g.cfg.udp_layer_ports && pk->dst_port >= dp_g.cfg.udp_layer_ports && lp_off < dp_g.cfg.layers;
	frag |= bound;
	if (!frag && !(dp_g.cfg.udp_raw_port && pk->dst_port == dp_g.cfg.udp_raw_port)) {
		dp_lc_count(lc, FG_C_DROP_BAD_PORT, 1);
		return false;
	}
	if (dp_g.cfg.n_allow) {
		bool ok = false;
		int fam = pk->src.family == 6 ? AF_INET6 : AF_INET;
		for (unsigned i = 0; i < dp_g.cfg.n_allow && !ok; i++)
			ok = fg_prefix_match(&dp_g.cfg.allow[i], fam, pk->src.addr);
		if (!ok) {
			dp_lc_count(lc, FG_C_DROP_NOT_ALLOWED, 1);
			return false;
		}
	}
	memcpy(pk->route.our_mac, dp_g.mac.addr_bytes, 6);
	/* no neighbour learning from UDP (a spoofed source would move it): replies go back to
	 * pk->route.mac; deliveries use ARP/NDP-learnt or static neighbours */
	if (dp_g.have_points)
		points_seen(lc, points_of(pk->src.family, pk->src.addr), now);
	if (pk->src.family == 4 && !lc->has_local4) {
		lc->has_local4 = true;
		memcpy(lc->local4, pk->dst, 16);
	} else if (pk->src.family == 6 && !lc->has_local6) {
		lc->has_local6 = true;
		memcpy(lc->local6, pk->dst, 16);
	}
	*fl = (struct dp_flow){.src = pk->src,
			       .route = pk->route,
			       .hash = dp_peer_hash(&pk->src, 0),
			       .fragmented = frag,
			       .layer_bound = bound,
			       .bound_layer = bound ? (uint16_t)lp_off : 0};
	return true;
}

/* A flow's pattern (dp_flow_pat: the flow before in the receive loop, an
 * entry of the flow table), held in two vectors where the target has
 * them: a frame tested against it in two loads, two XORs, two masks and
 * one test (dp_flow_pat_eq's meaning, which test_pkt checks byte by
 * byte). */
#ifdef __SSE4_1__
struct rx_pat {
	__m128i lo, hi; /* words 0-1, 2-3 */
};
static inline struct rx_pat rx_pat_of(const struct dp_flow_pat *pat)
{
	return (struct rx_pat){_mm_loadu_si128((const __m128i *)&pat->w[0]), _mm_loadu_si128((const __m128i *)&pat->w[2])};
}
static inline bool rx_pat_eq(const uint8_t *p, struct rx_pat pt)
{
	const __m128i mlo = _mm_set_epi64x((long long)dp_flow_mask(1), -1);
	const __m128i mhi = _mm_set_epi64x(-1, (long long)dp_flow_mask(2));
	__m128i lo = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(p + DP_FLOW_OFF)), pt.lo);
	__m128i hi = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(p + DP_FLOW_OFF + 16)), pt.hi);
	__m128i d = _mm_or_si128(_mm_and_si128(lo, mlo), _mm_and_si128(hi, mhi));
	return _mm_testz_si128(d, d);
}
#else
struct rx_pat {
	struct dp_flow_pat pat;
};
static inline struct rx_pat rx_pat_of(const struct dp_flow_pat *pat)
{
	return (struct rx_pat){*pat};
}
static inline bool rx_pat_eq(const uint8_t *p, struct rx_pat pt)
{
	return dp_flow_pat_eq(p, &pt.pat);
}
#endif

/* The flow table's two places for a frame of dp_pkt_udp4_form: two
 * indexes of a hash of its addresses and ports (so two flows rarely evict
 * each other burst after burst, as they would in one place), the first
 * (rx_flow_at) from the hash's top 4 bits, the other (rx_flow_other)
 * from the 4 below. */
static inline uint64_t rx_flow_hash(const uint8_t *p)
{
	return (dp_pkt_ld64(p + DP_UDP4_IP + 12) ^ ((uint64_t)dp_pkt_ld32(p + DP_UDP4_UDP) << 13)) * 0x9E3779B97F4A7C15ull;
}
static inline struct dp_rx_flow *rx_flow_at(struct dp_lcore *lc, uint64_t h)
{
	return &lc->rx_flow[h >> 60];
}
static inline struct dp_rx_flow *rx_flow_other(struct dp_lcore *lc, uint64_t h)
{
	return &lc->rx_flow[(h >> 56) & (DP_RX_FLOWS - 1u)];
}

/* The entry of the flow frame p (of dp_pkt_udp4_form) belongs to, or NULL. */
static inline const struct dp_rx_flow *rx_flow_find(struct dp_lcore *lc, const uint8_t *p)
{
	uint64_t h = rx_flow_hash(p);
	const struct dp_rx_flow *e = rx_flow_at(lc, h);
	if (e->used && rx_pat_eq(p, rx_pat_of(&e->pat)))
		return e;
	e = rx_flow_other(lc, h);
	if (e->used && rx_pat_eq(p, rx_pat_of(&e->pat)))
		return e;
	return NULL;
}

/* Remember the flow of an accepted datagram of dp_pkt_udp4_form (frame p,
 * its flow's facts fl, its source address in pk): the flow's next
 * datagrams skip rx_packet while it keeps its entry. Every verdict
 * rx_packet gave is a function of the pattern's fields and of what is
 * fixed while the dataplane runs (the allowlist, the ports, our addresses
 * and MAC); point liveness is kept by the entry's points. The first of its
 * two places that is free or already its own, else the one not taken
 * last time. */
static void rx_flow_learn(struct dp_lcore *lc, const uint8_t *p, const struct dp_pkt *pk, const struct dp_flow *fl)
{
	struct dp_flow_pat pat;
	dp_flow_pat_of(p, &pat);
	uint64_t h = rx_flow_hash(p);
	struct dp_rx_flow *o = rx_flow_other(lc, h), *e = rx_flow_at(lc, h);
	if (e->used && memcmp(&e->pat, &pat, sizeof(pat))) {
		if (!o->used || !memcmp(&o->pat, &pat, sizeof(pat)))
			e = o;
		else if ((lc->rx_flow_turn ^= 1u))
			e = o;
	}
	e->pat = pat;
	e->fl = *fl;
	e->points = dp_g.have_points ? points_of(pk->src.family, pk->src.addr) : 0;
	e->used = true;
}

/* An mbuf's reference count and segment count in one load: the 16-bit
 * words at +2 and +4 of its rearm_data word (x86 is little-endian), 1 and
 * 1 for the plain mbuf a PMD's RX burst gives. */
_Static_assert(offsetof(struct rte_mbuf, refcnt) == offsetof(struct rte_mbuf, rearm_data) + 2 &&
		       offsetof(struct rte_mbuf, nb_segs) == offsetof(struct rte_mbuf, rearm_data) + 4 &&
		       __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "rte_mbuf's rearm_data layout");
#define RX_ONE_REF_ONE_SEG 0x0000000100010000ull

/* Whether an mbuf is what a PMD's RX burst gives: of pool mp, direct, one
 * segment, referenced once. Sets *one_seg: whether it has one segment
 * (read from the same word when it is plain). Where the target has the
 * vectors, the reference count, the segment count and the two flags
 * that make an mbuf not direct (the 16 bytes from rearm_data: ol_flags
 * follows it) are tested in one load, one mask and one compare. */
#ifdef __SSE4_1__
_Static_assert(offsetof(struct rte_mbuf, ol_flags) == offsetof(struct rte_mbuf, rearm_data) + 8,
	       "rte_mbuf's ol_flags after rearm_data");
static inline bool rx_plain(const struct rte_mbuf *m, const struct rte_mempool *mp, bool *one_seg)
{
	const __m128i mask = _mm_set_epi64x((long long)(RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL),
					    (long long)0x0000FFFFFFFF0000ull);
	const __m128i want = _mm_set_epi64x(0, (long long)RX_ONE_REF_ONE_SEG);
	__m128i d = _mm_xor_si128(_mm_and_si128(_mm_loadu_si128((const __m128i *)(const void *)&m->rearm_data), mask),
				  want);
	if (_mm_testz_si128(d, d)) {
		*one_seg = true;
		return m->pool == mp;
	}
	*one_seg = m->nb_segs == 1;
	return false;
}
#else
static inline uint64_t rx_refs_segs(const struct rte_mbuf *m)
{
	uint64_t w;
	memcpy(&w, &m->rearm_data, 8);
	return w & 0x0000FFFFFFFF0000ull;
}

static inline bool rx_plain(const struct rte_mbuf *m, const struct rte_mempool *mp, bool *one_seg)
{
	if (rx_refs_segs(m) == RX_ONE_REF_ONE_SEG) {
		*one_seg = true;
		return RTE_MBUF_DIRECT(m) && m->pool == mp;
	}
	*one_seg = m->nb_segs == 1;
	return false;
}
#endif

/* The receive checks of one packet (frame p): its mbuf (*plain cleared
 * unless rx_plain) and, when it has one segment, the lengths of
 * dp_pkt_udp4_form (dp_pkt_udp4_lens). Returns p when both hold (*len:
 * its UDP payload length), else NULL; its bytes are added to *bytes. */
static inline const uint8_t *rx_check(const struct rte_mbuf *m, const uint8_t *p, const struct rte_mempool *mp,
				      bool *plain, uint32_t *len, uint64_t *bytes)
{
	bool one_seg;
	*bytes += m->pkt_len;
	*plain &= rx_plain(m, mp, &one_seg);
	if (!one_seg || !dp_pkt_udp4_lens(p, rte_pktmbuf_data_len(m)))
		return NULL;
	*len = (uint32_t)fg_be16(p + DP_UDP4_UDP + 4) - 8u;
	return p;
}

#ifdef __SSE4_1__
/* rx_check of four packets at once, a test per lane (DPDK l3fwd's and
 * VPP's quad loop), for the common case only: true when all four mbufs
 * are plain and of pool mp and all four frames (p[0..4)) have the lengths
 * of dp_pkt_udp4_form; then len[0..4) are their UDP payload lengths and
 * their data lengths are added to the lanes of *bytes (one segment: its
 * data length is the packet's length, at most 65535, by the mbuf
 * contract). Otherwise nothing is written and the caller takes the four
 * one by one. A frame is read only once its data length is known to
 * cover the bytes read (dp_pkt_udp4_lens4). */
static inline bool rx_check4(struct rte_mbuf *const *m, const uint8_t *const *p, const struct rte_mempool *mp,
			     uint32_t *len, __m128i *bytes)
{
	if (__builtin_expect(m[0]->pool != mp || m[1]->pool != mp || m[2]->pool != mp || m[3]->pool != mp, 0))
		return false;
	const __m128i want = _mm_set_epi64x(0, (long long)RX_ONE_REF_ONE_SEG);
	/* rearm_data is 16-byte aligned (a cache-aligned mbuf, offset 16) */
	__m128i d = _mm_xor_si128(_mm_load_si128((const __m128i *)(const void *)&m[0]->rearm_data), want);
	d = _mm_or_si128(d, _mm_xor_si128(_mm_load_si128((const __m128i *)(const void *)&m[1]->rearm_data), want));
	d = _mm_or_si128(d, _mm_xor_si128(_mm_load_si128((const __m128i *)(const void *)&m[2]->rearm_data), want));
	d = _mm_or_si128(d, _mm_xor_si128(_mm_load_si128((const __m128i *)(const void *)&m[3]->rearm_data), want));
	d = _mm_and_si128(d, _mm_set_epi64x((long long)(RTE_MBUF_F_INDIRECT | RTE_MBUF_F_EXTERNAL),
					    (long long)0x0000FFFFFFFF0000ull));
	/* data_len and the 16 bits after it, a lane each, then data_len alone */
	_Static_assert(offsetof(struct rte_mbuf, data_len) + 4 <= sizeof(struct rte_mbuf), "data_len's word");
	int32_t w0, w1, w2, w3;
	memcpy(&w0, &m[0]->data_len, 4);
	memcpy(&w1, &m[1]->data_len, 4);
	memcpy(&w2, &m[2]->data_len, 4);
	memcpy(&w3, &m[3]->data_len, 4);
	__m128i dl = _mm_and_si128(_mm_setr_epi32(w0, w1, w2, w3), _mm_set1_epi32(0xFFFF));
	d = _mm_or_si128(d, _mm_cmplt_epi32(dl, _mm_set1_epi32((int)DP_UDP4_PAYLOAD)));
	if (!_mm_testz_si128(d, d))
		return false;
	__m128i z;
	if (!dp_pkt_udp4_lens4(p, dl, &z))
		return false;
	_mm_storeu_si128((__m128i *)(void *)len, z);
	*bytes = _mm_add_epi32(*bytes, dl);
	return true;
}
#endif

/* The work of a non-empty burst, in three passes (VPP's vector spirit).
 * First every packet's checks (rx_check: its mbuf, the lengths of
 * dp_pkt_udp4_form), four at a time where the target has the vectors
 * (rx_check4), each packet's first line fetched a quad ahead. Then every
 * packet decoded and its datagram added to the shard's burst
 * (dp_shard_add: its fragment header read, its reassembly record found
 * and the slot line it lands in prefetched), then the datagrams placed
 * in arrival order (dp_shard_run). A datagram whose lengths are of the
 * form and whose frame matches the pattern of the flow before it, or of
 * a flow rx_packet accepted before (lc->rx_flow, rx_flow_learn), takes
 * that flow's facts; the others go through rx_packet. The mbufs go back
 * to their pool together: one rte_mempool_put_bulk when all are plain
 * (as a NIC's fast-free TX offload does; a single segment's next is NULL
 * by the mbuf contract, so its second line is not read), else
 * rte_pktmbuf_free_bulk, which handles every case mbuf by mbuf. pkts has
 * room for RX_AHEAD entries past the burst, written here. Not inlined:
 * the poll loop calls it only when the PMD returned packets, so
 * bench/cap/callgrind.sh counts the lcore's work per seed as this call's
 * cost (and empty polls never reach it). */
#define RX_AHEAD 4u
static __attribute__((noinline)) void dp_rx_work(struct dp_lcore *lc, struct rte_mbuf **pkts, uint16_t n, uint64_t now)
{
	struct dp_shard_burst b;
	struct dp_shard_adder a;
	struct dp_pkt pk[DP_BURST];
	struct dp_flow fl[DP_BURST]; /* the flows rx_packet accepted: of pk[i] */
	const uint8_t *learn[DP_BURST]; /* the frame of pk[i] when it is of the form, else NULL */
	const uint8_t *fp[DP_BURST + RX_AHEAD]; /* packet i's frame; after the checks NULL unless they held */
	uint32_t flen[DP_BURST];                /* then its UDP payload length */
	unsigned np = 0;
	uint32_t dropped = 0; /* bit i: packet i refused before the burst (rx_packet) */
	uint64_t bytes = 0;
	struct rte_mempool *mp = pkts[0]->pool;
	bool plain = true;
	struct rx_pat last = {0}; /* the pattern of lastf, when lastf is set */
	const struct dp_flow *lastf = NULL;
	unsigned i = 0;
	/* DPDK l3fwd's PREFETCH_OFFSET: on a zero-copy memif port (and a NIC)
	 * a packet's first line was last written by another agent; the last
	 * packet stands in for the ones past the burst */
	for (unsigned k = 0; k < RX_AHEAD; k++)
		pkts[n + k] = pkts[n - 1];
	for (unsigned k = 0; k < RX_AHEAD; k++) {
		fp[k] = rte_pktmbuf_mtod(pkts[k], const uint8_t *);
		rte_prefetch0(fp[k]);
	}
#ifdef __SSE4_1__
	__m128i bytes4 = _mm_setzero_si128();
	for (; i + 4 <= n; i += 4) {
		for (unsigned k = 0; k < RX_AHEAD; k++) {
			fp[i + RX_AHEAD + k] = rte_pktmbuf_mtod(pkts[i + RX_AHEAD + k], const uint8_t *);
			rte_prefetch0(fp[i + RX_AHEAD + k]);
		}
		if (__builtin_expect(rx_check4(&pkts[i], &fp[i], mp, &flen[i], &bytes4), 1))
			continue;
		for (unsigned k = i; k < i + 4; k++)
			fp[k] = rx_check(pkts[k], fp[k], mp, &plain, &flen[k], &bytes);
	}
	/* at most DP_BURST lengths of at most 65535: the sum fits one 32-bit lane */
	bytes4 = _mm_add_epi32(bytes4, _mm_shuffle_epi32(bytes4, _MM_SHUFFLE(1, 0, 3, 2)));
	bytes4 = _mm_add_epi32(bytes4, _mm_shuffle_epi32(bytes4, _MM_SHUFFLE(2, 3, 0, 1)));
	bytes += (uint32_t)_mm_cvtsi128_si32(bytes4);
#endif
	for (; i < n; i++) {
		fp[i + RX_AHEAD] = rte_pktmbuf_mtod(pkts[i + RX_AHEAD], const uint8_t *);
		rte_prefetch0(fp[i + RX_AHEAD]);
		fp[i] = rx_check(pkts[i], fp[i], mp, &plain, &flen[i], &bytes);
	}
	dp_shard_add_begin(&a, lc, &b); /* n <= DP_BURST: dp_rx_burst asks the PMD for no more */
	for (i = 0; i < n; i++) {
		const uint8_t *p = fp[i];
		const struct dp_flow *f;
		const uint8_t *payload;
		uint32_t len;
		if (__builtin_expect(p != NULL, 1)) {
			if (__builtin_expect(lastf != NULL && rx_pat_eq(p, last), 1)) {
				f = lastf;
			} else {
				const struct dp_rx_flow *e = rx_flow_find(lc, p);
				if (!e)
					goto full;
				if (e->points)
					points_seen(lc, e->points, now);
				f = lastf = &e->fl;
				last = rx_pat_of(&e->pat);
			}
			payload = p + DP_UDP4_PAYLOAD;
			len = flen[i];
			goto add;
		}
	full:
		if (!rx_packet(lc, pkts[i], &pk[np], &fl[np], now)) {
			dropped |= 1u << i;
			continue;
		}
		learn[np] = NULL;
		if (p && dp_pkt_udp4_form(p, rte_pktmbuf_data_len(pkts[i]))) {
			struct dp_flow_pat pat;
			learn[np] = p;
			dp_flow_pat_of(p, &pat);
			last = rx_pat_of(&pat);
			lastf = &fl[np];
		}
		f = &fl[np];
		payload = pk[np].payload;
		len = pk[np].payload_len;
		np++;
	add:
		dp_shard_add(lc, &a, f, payload, len);
	}
	dp_lc_count(lc, FG_C_RX_PKTS, n);
	dp_lc_count(lc, FG_C_RX_BYTES, bytes);
	dp_shard_add_end(&a);
	/* With several lcores, reassembly may keep the mbufs of a frame
	 * another lcore owns (dp_reasm.h, handed over as its chunks): plain
	 * mbufs of the pool, of a burst whose every packet is a datagram of
	 * the burst (datagram e is packet e) only. The ones it kept (bit k of
	 * kept: packet k) are not freed here. */
	_Static_assert(DP_BURST <= 32, "a burst's packets in the bits of a word");
	uint32_t kept = 0;
	if (lc->rx_keep && plain && mp == dp_g.mbufs && !dropped && b.n) {
		dp_reasm_keep_begin(&lc->reasm, b.f, n, (void *const *)pkts);
		dp_shard_run(lc, &b, now);
		kept = dp_reasm_keep_end(&lc->reasm);
	} else if (b.n) {
		dp_shard_run(lc, &b, now);
	}
	/* learnt after the burst, whose datagrams point into the entries */
	for (unsigned k = 0; k < np; k++)
		if (learn[k])
			rx_flow_learn(lc, learn[k], &pk[k], &fl[k]);
	/* every mbuf was only read: this burst's owner frees them all (but
	 * those reassembly kept: the others moved to the front, in place, as
	 * packet k moves to an index <= k) */
	if (kept) {
		unsigned k = 0;
		for (uint32_t left = ~kept & (n == 32 ? ~0u : (1u << n) - 1u); left; left &= left - 1u)
			pkts[k++] = pkts[__builtin_ctz(left)];
		n = (uint16_t)k;
	}
	if (plain)
		rte_mempool_put_bulk(mp, (void **)pkts, n);
	else
		rte_pktmbuf_free_bulk(pkts, n);
}

unsigned dp_rx_burst(struct dp_lcore *lc, uint64_t now)
{
	struct rte_mbuf *pkts[DP_BURST + RX_AHEAD]; /* dp_rx_work's prefetch reads past the burst */
	if (lc->rxq < 0)
		return 0;
	uint16_t n;
	if (dp_burst_guarded()) { /* net_memif: see dp_burst_guard.h */
		dp_burst_enter(lc->idx);
		n = rte_eth_rx_burst(dp_g.port, (uint16_t)lc->rxq, pkts, DP_BURST);
		dp_burst_leave(lc->idx);
	} else {
		n = rte_eth_rx_burst(dp_g.port, (uint16_t)lc->rxq, pkts, DP_BURST);
	}
	if (n)
		dp_rx_work(lc, pkts, n, now);
	return n;
}

/* dp_neigh.c - an lcore's neighbours: the per-lcore table of IP -> MAC
 * learnt from ARP and from every accepted datagram's source, the route to
 * an address we did not just hear from (the consumer), and the answers to
 * ARP requests and IPv6 neighbour solicitations for our own address.
 *
 * Who may call: the lcore that owns `lc` (dp_rx.c for received packets,
 * dp_deliver.c for routes). The table is per lcore (no sharing): a miss
 * falls back to the profile's gateway MAC or broadcast, counted neigh_miss. */
#include <string.h>

#include "dp_neigh.h"
#include "dp_tx.h"

static unsigned neigh_slot(int family, const uint8_t *addr)
{
	struct dp_peer p = {.family = (uint8_t)family};
	memcpy(p.addr, addr, family == 6 ? 16 : 4);
	return dp_peer_hash(&p, 0) & (DP_NEIGH - 1);
}

void dp_neigh_learn(struct dp_lcore *lc, int family, const uint8_t *addr, const uint8_t *mac)
{
	struct dp_neigh *n = &lc->neigh[neigh_slot(family, addr)];
	size_t al = family == 6 ? 16 : 4;
	if (n->family == family && !memcmp(n->addr, addr, al) && !memcmp(n->mac, mac, 6))
		return;
	n->family = (uint8_t)family;
	memset(n->addr, 0, 16);
	memcpy(n->addr, addr, al);
	memcpy(n->mac, mac, 6);
}

/* Route to an address we did not just hear from (the consumer). */
bool dp_neigh_route(struct dp_lcore *lc, int family, const uint8_t *addr, struct dp_route *rt)
{
	memset(rt, 0, sizeof(*rt));
	memcpy(rt->our_mac, dp_g.mac.addr_bytes, 6);
	if (family == 4 ? !lc->has_local4 : !lc->has_local6)
		return false;
	memcpy(rt->local, family == 4 ? lc->local4 : lc->local6, 16);
	const struct dp_neigh *n = &lc->neigh[neigh_slot(family, addr)];
	if (n->family == family && !memcmp(n->addr, addr, family == 6 ? 16 : 4)) {
		memcpy(rt->mac, n->mac, 6);
	} else {
		dp_lc_xcount(lc, DP_X_NEIGH_MISS);
		if (dp_g.prof.has_gateway)
			memcpy(rt->mac, dp_g.prof.gateway_mac, 6);
		else
			memset(rt->mac, 0xFF, 6);
	}
	return true;
}

void dp_neigh_on_arp(struct dp_lcore *lc, const struct dp_pkt *pk)
{
	dp_lc_xcount(lc, DP_X_ARP);
	if (pk->arp_op == 1 && dp_g.prof.arp_reply && dp_g.prof.has_ip4 && !memcmp(pk->arp_tpa, dp_g.prof.ip4, 4)) {
		struct rte_mbuf *r = rte_pktmbuf_alloc(dp_g.mbufs);
		uint8_t *q = r ? (uint8_t *)rte_pktmbuf_append(r, 64) : NULL;
		if (q) {
			uint32_t n = dp_pkt_build_arp_reply(q, pk, dp_g.mac.addr_bytes, dp_g.prof.ip4);
			rte_pktmbuf_trim(r, (uint16_t)(64 - n));
			dp_tx_queue(lc, r);
		} else if (r) {
			rte_pktmbuf_free(r);
		}
	}
	if (pk->arp_op == 1 || pk->arp_op == 2) {
		uint8_t a[16] = {0};
		memcpy(a, pk->arp_spa, 4);
		dp_neigh_learn(lc, 4, a, pk->arp_sha);
	}
}

void dp_neigh_on_ndp(struct dp_lcore *lc, const struct dp_pkt *pk)
{
	dp_lc_xcount(lc, DP_X_NDP);
	if (dp_g.prof.has_ip6 && !memcmp(pk->nd_target, dp_g.prof.ip6, 16)) {
		struct rte_mbuf *r = rte_pktmbuf_alloc(dp_g.mbufs);
		uint8_t *q = r ? (uint8_t *)rte_pktmbuf_append(r, 96) : NULL;
		if (q) {
			uint32_t n = dp_pkt_build_ndp_na(q, pk, dp_g.mac.addr_bytes, dp_g.prof.ip6);
			rte_pktmbuf_trim(r, (uint16_t)(96 - n));
			dp_tx_queue(lc, r);
		} else if (r) {
			rte_pktmbuf_free(r);
		}
	}
}

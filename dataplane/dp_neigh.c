/* dp_neigh.c - an lcore's neighbours: the per-lcore table of IP -> MAC
 * learnt from ARP requests/replies and IPv6 neighbour solicitations (never
 * from a UDP datagram's source MAC), under dp_neigh_rule.c's rule: only for
 * addresses [udp] allow admits or configured consumers, and a known entry is
 * never changed by the wire (issue 14 item 4); [dataplane] neighbours
 * (static, looked up first, never written by the wire); the route to
 * an address we did not just hear from (the consumer), and the answers to
 * ARP requests and IPv6 neighbour solicitations for our own address.
 *
 * Who may call: the lcore that owns `lc` (dp_rx.c for received packets,
 * dp_deliver.c for routes). The table is per lcore (no sharing): a miss
 * falls back to the profile's gateway MAC or broadcast, counted neigh_miss. */
#include <string.h>

#include "dp_neigh.h"
#include "dp_tx.h"

/* An address may sit in any of DP_NEIGH_PROBES slots from its hash's
 * (linear probing): two neighbours whose hashes meet in the 64 slots both
 * fit, where one slot per hash left the second unlearnable (SLOT_BUSY,
 * its deliveries broadcast). Entries are never removed, so a lookup may
 * stop at the first empty slot. */
#define DP_NEIGH_PROBES 4u

static bool neigh_is(const struct dp_neigh *n, int family, const uint8_t *addr)
{
	return n->family == family && !memcmp(n->addr, addr, family == 6 ? 16 : 4);
}

/* The slot holding addr; else the first empty one of its probe run (to
 * learn into); else the run's first slot (busy with another address). */
static struct dp_neigh *neigh_slot(struct dp_lcore *lc, int family, const uint8_t *addr)
{
	struct dp_peer p = {.family = (uint8_t)family};
	memcpy(p.addr, addr, family == 6 ? 16 : 4);
	unsigned h = dp_peer_hash(&p, 0);
	for (unsigned i = 0; i < DP_NEIGH_PROBES; i++) {
		struct dp_neigh *n = &lc->neigh[(h + i) & (DP_NEIGH - 1)];
		if (!n->family || neigh_is(n, family, addr))
			return n;
	}
	return &lc->neigh[h & (DP_NEIGH - 1)];
}

/* May ARP/NDP write a neighbour for addr: [udp] allow admits it (an empty
 * allowlist admits every address) or it is a configured consumer. */
static bool neigh_admitted(int family, const uint8_t *addr)
{
	int fam = family == 6 ? AF_INET6 : AF_INET;
	size_t al = family == 6 ? 16 : 4;
	if (!dp_g.cfg.n_allow)
		return true;
	for (unsigned i = 0; i < dp_g.cfg.n_allow; i++)
		if (fg_prefix_match(&dp_g.cfg.allow[i], fam, addr))
			return true;
	for (unsigned l = 0; l < FG_CONSUMERS_MAX; l++) {
		const struct fg_addr *c = &dp_g.cfg.consumer[l];
		if (c->set && c->family == fam && !memcmp(c->addr, addr, al))
			return true;
	}
	const struct fg_addr *c = &dp_g.cfg.consumer_default;
	return c->set && c->family == fam && !memcmp(c->addr, addr, al);
}

/* The [dataplane] neighbours entry for addr, as a table entry, or false. */
static bool neigh_static(int family, const uint8_t *addr, struct dp_neigh *out)
{
	for (unsigned i = 0; i < dp_g.cfg.n_static_neigh; i++) {
		const struct fg_static_neigh *s = &dp_g.cfg.static_neigh[i];
		if (s->family == family && !memcmp(s->addr, addr, family == 6 ? 16 : 4)) {
			memset(out, 0, sizeof(*out));
			out->family = s->family;
			out->is_static = true;
			memcpy(out->addr, s->addr, 16);
			memcpy(out->mac, s->mac, 6);
			return true;
		}
	}
	return false;
}

void dp_neigh_offer(struct dp_lcore *lc, int family, const uint8_t *addr, const uint8_t *mac)
{
	struct dp_neigh st;
	struct dp_neigh *n = neigh_slot(lc, family, addr);
	bool fixed = neigh_static(family, addr, &st);
	/* solicited = false: the appliance sends no ARP/NDP requests of its own */
	switch (dp_neigh_judge(fixed ? &st : n, family, addr, mac, neigh_admitted(family, addr), false)) {
	case DP_NEIGH_SAME:
		return;
	case DP_NEIGH_NOT_ALLOWED:
		dp_lc_xcount(lc, DP_X_NEIGH_NOT_ALLOWED);
		return;
	case DP_NEIGH_UNSOLICITED:
		dp_lc_xcount(lc, DP_X_NEIGH_UNSOLICITED);
		return;
	case DP_NEIGH_SLOT_BUSY:
		dp_lc_xcount(lc, DP_X_NEIGH_SLOT_BUSY);
		return;
	case DP_NEIGH_LEARN:
		break;
	}
	if (fixed) /* the rule never lets the wire write a static neighbour */
		return;
	n->family = (uint8_t)family;
	n->is_static = false;
	memset(n->addr, 0, 16);
	memcpy(n->addr, addr, family == 6 ? 16 : 4);
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
	struct dp_neigh st;
	const struct dp_neigh *n = neigh_slot(lc, family, addr);
	if (neigh_static(family, addr, &st))
		n = &st;
	if (neigh_is(n, family, addr)) {
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
		dp_neigh_offer(lc, 4, a, pk->arp_sha);
	}
}

void dp_neigh_on_ndp(struct dp_lcore *lc, const struct dp_pkt *pk)
{
	dp_lc_xcount(lc, DP_X_NDP);
	/* the solicitation's source (not the unspecified address of DAD) */
	static const uint8_t unspec[16];
	if (memcmp(pk->src.addr, unspec, 16))
		dp_neigh_offer(lc, 6, pk->src.addr, pk->route.mac);
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

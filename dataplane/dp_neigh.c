/* dp_neigh.c - an lcore's neighbours: the per-lcore table of IP -> MAC
 * learnt from ARP and NDP (never from a UDP datagram's source MAC), under
 * dp_neigh_rule.c's rule: only for addresses [udp] allow admits or
 * configured consumers, and a known entry changes only as the answer to a
 * request of ours; [dataplane] neighbours (static, looked up first, never
 * written by the wire, never asked for); the route to an address we did
 * not just hear from (the consumer); our own requests; and the answers to
 * ARP requests and IPv6 neighbour solicitations for our own address.
 *
 * Resolving like a router: the dataplane asks for a consumer (a broadcast
 * ARP request, or a neighbour solicitation to its solicited-node
 * multicast address, built into an mbuf of the lcore's pool and queued on
 * its TX queue) at first use, when its entry was not confirmed for
 * [dataplane] neighbour_reachable_ms (confirmed = learnt, answered, or a
 * delivery to it ACKed), and when deliveries to it come due again without
 * an ACK while it has been unconfirmed for neighbour_answer_ms (doubling
 * up to neighbour_reachable_ms while answers keep naming the same MAC:
 * the silence is then not the neighbour's). At most one request per
 * address per neighbour_answer_ms. An answer is an ARP reply or a
 * solicited neighbour advertisement sent to our MAC (and, ARP, our
 * address), for the asked-for address, within neighbour_answer_ms of the
 * request: only it may change a known MAC, and the first one closes the
 * request (a second answer is unsolicited). Gratuitous ARP, ARP requests,
 * unsolicited advertisements and late answers never change a known entry
 * (neigh_unsolicited). Each lcore keeps its own table and asks for
 * itself; an answer lands on one lcore, which hands a copy to every other
 * one (dp_neigh_handed), and each takes it only against its own request.
 *
 * Who may call: the lcore that owns `lc` (dp_rx.c for received packets,
 * dp_io_dpdk.c for routes, hints and handed answers). No heap, lock, log
 * or syscall beyond the vDSO clock: a miss falls back to the profile's
 * gateway MAC or broadcast, counted neigh_miss. */
#include <string.h>

#include "dp_neigh.h"
#include "dp_tx.h"

/* An address may sit in any of DP_NEIGH_PROBES slots from its hash's
 * (linear probing): two neighbours whose hashes meet in the 64 slots both
 * fit, where one slot per hash left the second unlearnable (SLOT_BUSY,
 * its deliveries broadcast). Entries are never removed, so a lookup may
 * stop at the first empty slot. */
#define DP_NEIGH_PROBES 4u

/* Is n the entry of addr (4 or 16 bytes by family)? Word compares: the
 * lookup runs for every delivery, and a libc memcmp call of a length known
 * only at run time costs more than the compare itself. */
static inline bool neigh_is(const struct dp_neigh *n, int family, const uint8_t *addr)
{
	if (n->family != family)
		return false;
	if (family == 4) {
		uint32_t x, y;
		memcpy(&x, n->addr, 4);
		memcpy(&y, addr, 4);
		return x == y;
	}
	uint64_t x0, x1, y0, y1;
	memcpy(&x0, n->addr, 8);
	memcpy(&x1, n->addr + 8, 8);
	memcpy(&y0, addr, 8);
	memcpy(&y1, addr + 8, 8);
	return ((x0 ^ y0) | (x1 ^ y1)) == 0;
}

/* The slot holding addr; else the first empty one of its probe run (to
 * learn into); else the run's first slot (busy with another address). The
 * hash is dp_peer_hash of (family, addr, port 0), an IPv4 address in the
 * first 4 bytes and zeros after it. */
static struct dp_neigh *neigh_slot(struct dp_lcore *lc, int family, const uint8_t *addr)
{
	struct dp_peer p = {.family = (uint8_t)family};
	if (family == 6)
		memcpy(p.addr, addr, 16);
	else
		memcpy(p.addr, addr, 4);
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

static uint64_t answer_ns(void) { return (uint64_t)dp_g.cfg.neigh_answer_ms * 1000000ull; }
static uint64_t reachable_ns(void) { return (uint64_t)dp_g.cfg.neigh_reachable_ms * 1000000ull; }

/* How long before now t was, 0 when t is later. Routes and hints age an
 * entry by their caller's clock (the loop's `now`, read once per loop
 * iteration), while learning and answers stamp it with a fresh read: an
 * entry confirmed during the current iteration is newer than that `now`,
 * and counts as just confirmed, not as one from the far past. The ages
 * so read are at most one loop iteration short, against timeouts of
 * [dataplane] neighbour_answer_ms and neighbour_reachable_ms. */
static inline uint64_t since(uint64_t now, uint64_t t) { return now > t ? now - t : 0; }

/* Our address of a family to ask from: the profile's, else the last one a
 * sender used; NULL when none is known yet. */
static const uint8_t *our_ip(const struct dp_lcore *lc, int family)
{
	if (family == 4)
		return dp_g.prof.has_ip4 ? dp_g.prof.ip4 : lc->has_local4 ? lc->local4 : NULL;
	return dp_g.prof.has_ip6 ? dp_g.prof.ip6 : lc->has_local6 ? lc->local6 : NULL;
}

/* Ask for n's address (broadcast ARP request or neighbour solicitation),
 * unless a request for it left less than neighbour_answer_ms ago. probe:
 * because its deliveries went unanswered (an answer naming the same MAC
 * then backs the next such request off). */
static void neigh_ask(struct dp_lcore *lc, struct dp_neigh *n, uint64_t now, bool probe)
{
	if (n->asked_ns && since(now, n->asked_ns) < answer_ns())
		return;
	const uint8_t *src = our_ip(lc, n->family);
	if (!src)
		return;
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp_g.mbufs);
	uint8_t *q = m ? (uint8_t *)rte_pktmbuf_append(m, 96) : NULL;
	if (!q) {
		if (m)
			rte_pktmbuf_free(m);
		dp_lc_xcount(lc, DP_X_TX_NOMBUF);
		return;
	}
	uint32_t len = n->family == 4 ? dp_pkt_build_arp_request(q, dp_g.mac.addr_bytes, src, n->addr)
				      : dp_pkt_build_ndp_ns(q, dp_g.mac.addr_bytes, src, n->addr);
	rte_pktmbuf_trim(m, (uint16_t)(96 - len));
	dp_tx_queue(lc, m);
	n->asked_ns = now ? now : 1;
	n->probing = probe;
	dp_lc_xcount(lc, DP_X_NEIGH_REQUESTS);
}

/* The [dataplane] neighbours entry for addr, or NULL. */
static const struct fg_static_neigh *static_find(int family, const uint8_t *addr)
{
	for (unsigned i = 0; i < dp_g.cfg.n_static_neigh; i++) {
		const struct fg_static_neigh *s = &dp_g.cfg.static_neigh[i];
		if (s->family == family && !memcmp(s->addr, addr, family == 6 ? 16 : 4))
			return s;
	}
	return NULL;
}

/* The [dataplane] neighbours entry for addr, as a table entry, or false. */
static bool neigh_static(int family, const uint8_t *addr, struct dp_neigh *out)
{
	const struct fg_static_neigh *s = static_find(family, addr);
	if (!s)
		return false;
	memset(out, 0, sizeof(*out));
	out->family = s->family;
	out->is_static = true;
	memcpy(out->addr, s->addr, 16);
	memcpy(out->mac, s->mac, 6);
	return true;
}

void dp_neigh_offer(struct dp_lcore *lc, int family, const uint8_t *addr, const uint8_t *mac)
{
	struct dp_neigh st;
	struct dp_neigh *n = neigh_slot(lc, family, addr);
	bool fixed = neigh_static(family, addr, &st);
	/* solicited = false: only an answer to our request (neigh_answer) may
	 * change a known entry */
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
	/* the rule lets an offer write only an empty or incomplete slot */
	n->family = (uint8_t)family;
	n->is_static = false;
	n->incomplete = false;
	memset(n->addr, 0, 16);
	memcpy(n->addr, addr, family == 6 ? 16 : 4);
	memcpy(n->mac, mac, 6);
	n->confirmed_ns = dp_clock_ns();
	lc->neigh_gen++;
}

static inline bool memo_of(const struct dp_lcore *lc, int family, const uint8_t *addr)
{
	return dp_neigh_memo_of(lc, family, addr);
}

static inline bool memo_is(const struct dp_lcore *lc, int family, const uint8_t *addr, uint64_t now)
{
	return now < lc->route_memo.fresh_until && dp_neigh_memo_of(lc, family, addr);
}

/* n: addr's entry, NULL for a static neighbour (fresh_until UINT64_MAX). */
static inline void memo_put(struct dp_lcore *lc, int family, const uint8_t *addr, struct dp_neigh *n,
			    uint64_t fresh_until, const struct dp_route *rt)
{
	struct dp_route_memo *r = &lc->route_memo;
	r->family = (uint8_t)family;
	memset(r->addr, 0, 16);
	memcpy(r->addr, addr, family == 6 ? 16 : 4);
	r->gen = lc->neigh_gen;
	r->fresh_until = fresh_until;
	r->n = n;
	r->tx = NULL; /* its template: the next consumer_frags's (dp_tx.c) */
	r->rt = *rt;
}

/* Route to an address we did not just hear from (the consumer). A route
 * found for a known entry that needs no request (or a static one) is
 * remembered (lc->route_memo): every delivery to the consumer asks for
 * its route, and until the table changes (any address or MAC written:
 * lc->neigh_gen) or the entry ages (confirmed_ns + neighbour_reachable_ms,
 * a later confirmation only extending it), the lookup below would find the
 * same. The local address is part of it: set once per family, never
 * changed (dp_rx.c, dp.c); the static neighbours do not change while
 * the lcores run. */
bool dp_neigh_route(struct dp_lcore *lc, int family, const uint8_t *addr, struct dp_route *rt, uint64_t now)
{
	if (memo_is(lc, family, addr, now)) {
		*rt = lc->route_memo.rt;
		return true;
	}
	memset(rt, 0, sizeof(*rt));
	memcpy(rt->our_mac, dp_g.mac.addr_bytes, 6);
	if (family == 4 ? !lc->has_local4 : !lc->has_local6)
		return false;
	memcpy(rt->local, family == 4 ? lc->local4 : lc->local6, 16);
	const struct fg_static_neigh *s = dp_g.cfg.n_static_neigh ? static_find(family, addr) : NULL;
	if (s) {
		memcpy(rt->mac, s->mac, 6);
		memo_put(lc, family, addr, NULL, UINT64_MAX, rt);
		return true;
	}
	struct dp_neigh *n = neigh_slot(lc, family, addr);
	if (neigh_is(n, family, addr) && !n->incomplete) {
		memcpy(rt->mac, n->mac, 6);
		if (since(now, n->confirmed_ns) >= reachable_ns())
			neigh_ask(lc, n, now, false); /* aged: keep using it, and ask */
		else
			memo_put(lc, family, addr, n, n->confirmed_ns + reachable_ns(), rt);
		return true;
	}
	dp_lc_xcount(lc, DP_X_NEIGH_MISS);
	if (dp_g.prof.has_gateway)
		memcpy(rt->mac, dp_g.prof.gateway_mac, 6);
	else
		memset(rt->mac, 0xFF, 6);
	if (!n->family) { /* first use: remember that we asked */
		memset(n, 0, sizeof(*n));
		n->family = (uint8_t)family;
		n->incomplete = true;
		memcpy(n->addr, addr, family == 6 ? 16 : 4);
		lc->neigh_gen++;
	}
	if (neigh_is(n, family, addr))
		neigh_ask(lc, n, now, false);
	return true;
}

/* The consumer's entry comes from the route memo when that is about it
 * (the deliveries that led to this hint asked for its route). */
void dp_neigh_hint(struct dp_lcore *lc, int family, const uint8_t *addr, enum dp_neigh_hint hint, uint64_t now)
{
	struct dp_neigh *n;
	if (memo_of(lc, family, addr)) {
		n = lc->route_memo.n;
		if (!n)
			return; /* static */
	} else {
		if (dp_g.cfg.n_static_neigh && static_find(family, addr))
			return;
		n = neigh_slot(lc, family, addr);
		if (!neigh_is(n, family, addr))
			return; /* the next route asks at first use */
	}
	if (hint == DP_NEIGH_CONFIRMED) {
		if (!n->incomplete) {
			if (now > n->confirmed_ns) /* never back in time (see since) */
				n->confirmed_ns = now;
			n->gap_ns = 0;
		}
		return;
	}
	uint64_t gap = n->gap_ns ? n->gap_ns : answer_ns();
	if (n->incomplete || since(now, n->confirmed_ns) >= gap)
		neigh_ask(lc, n, now, true);
}

/* family/addr is at mac, in a packet shaped as an answer to a request of
 * ours (checked by the caller). Taken when this lcore asked for addr within
 * neighbour_answer_ms; otherwise judged as any offer (forwarded: only
 * learnt into an empty or incomplete slot, the receiving lcore having
 * judged and counted it already). */
static void neigh_answer(struct dp_lcore *lc, int family, const uint8_t *addr, const uint8_t *mac, bool forwarded)
{
	uint64_t now = dp_clock_ns();
	struct dp_neigh st;
	bool fixed = neigh_static(family, addr, &st);
	struct dp_neigh *n = neigh_slot(lc, family, addr);
	bool solicited = !fixed && neigh_is(n, family, addr) && n->asked_ns && now - n->asked_ns <= answer_ns();
	if (!solicited) {
		if (!forwarded)
			dp_neigh_offer(lc, family, addr, mac);
		else if (!fixed && (!n->family || (neigh_is(n, family, addr) && n->incomplete)) &&
			 dp_neigh_judge(n, family, addr, mac, neigh_admitted(family, addr), false) == DP_NEIGH_LEARN)
			dp_neigh_offer(lc, family, addr, mac);
		return;
	}
	switch (dp_neigh_judge(n, family, addr, mac, neigh_admitted(family, addr), true)) {
	case DP_NEIGH_NOT_ALLOWED:
		if (!forwarded)
			dp_lc_xcount(lc, DP_X_NEIGH_NOT_ALLOWED);
		return;
	case DP_NEIGH_UNSOLICITED: /* cannot happen for a solicited, non-static entry */
	case DP_NEIGH_SLOT_BUSY:
		return;
	case DP_NEIGH_SAME:
		/* there at the same MAC: a silence that made us ask is not the
		 * neighbour's, ask less often for it */
		if (n->probing) {
			uint64_t gap = 2 * (n->gap_ns ? n->gap_ns : answer_ns());
			n->gap_ns = gap < reachable_ns() ? gap : reachable_ns();
		}
		break;
	case DP_NEIGH_LEARN:
		if (!n->incomplete) {
			dp_lc_xcount(lc, DP_X_NEIGH_MOVED);
			n->gap_ns = 0;
		}
		memcpy(n->mac, mac, 6);
		n->incomplete = false;
		break;
	}
	n->confirmed_ns = now;
	n->asked_ns = 0; /* one answer per request: a second one is unsolicited */
	lc->neigh_gen++;
	n->probing = false;
	dp_lc_xcount(lc, DP_X_NEIGH_ANSWERS);
}

/* Hand an answer this lcore received to every other lcore: each asks for
 * itself and keeps its own table. */
static void neigh_forward(struct dp_lcore *lc, int family, const uint8_t *addr, const uint8_t *mac)
{
	for (unsigned o = 0; o < dp_g.n; o++) {
		if (o == lc->idx)
			continue;
		struct dp_xfer *x = lc->env->io->xfer_get(lc);
		if (!x) {
			dp_lc_xcount(lc, DP_X_NEIGH_ANSWER_FWD_FAIL);
			continue;
		}
		memset(x, 0, sizeof(*x));
		x->len = DP_XFER_NEIGH;
		x->peer.family = (uint8_t)family;
		memcpy(x->peer.addr, addr, 16);
		memcpy(x->route.mac, mac, 6);
		if (!lc->env->io->handoff(lc, o, x)) {
			lc->env->io->xfer_put(lc, x);
			dp_lc_xcount(lc, DP_X_NEIGH_ANSWER_FWD_FAIL);
			continue;
		}
		dp_lc_xcount(lc, DP_X_NEIGH_ANSWER_FWD);
	}
}

void dp_neigh_handed(struct dp_lcore *lc, const struct dp_xfer *x)
{
	if (x->peer.family == 4 || x->peer.family == 6)
		neigh_answer(lc, x->peer.family, x->peer.addr, x->route.mac, true);
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
		/* an answer to a request of ours: a reply sent to our MAC, for
		 * our MAC (and our address when the profile sets one);
		 * gratuitous ARP (to broadcast, for the sender itself) is not */
		const uint8_t *me = dp_g.mac.addr_bytes;
		bool answer = pk->arp_op == 2 && !memcmp(pk->route.our_mac, me, 6) && !memcmp(pk->arp_tha, me, 6) &&
			      (!dp_g.prof.has_ip4 || !memcmp(pk->arp_tpa, dp_g.prof.ip4, 4));
		if (!answer) {
			dp_neigh_offer(lc, 4, a, pk->arp_sha);
			return;
		}
		neigh_answer(lc, 4, a, pk->arp_sha, false);
		neigh_forward(lc, 4, a, pk->arp_sha);
	}
}

void dp_neigh_on_na(struct dp_lcore *lc, const struct dp_pkt *pk)
{
	dp_lc_xcount(lc, DP_X_NDP_NA);
	const uint8_t *mac = pk->nd_has_lladdr ? pk->nd_lladdr : pk->route.mac;
	const uint8_t *me6 = our_ip(lc, 6);
	/* an answer to a solicitation of ours: solicited, sent to our MAC and
	 * our address; anything else (unsolicited, to all nodes) is an offer */
	bool answer = (pk->nd_flags & DP_ND_SOLICITED) && !memcmp(pk->route.our_mac, dp_g.mac.addr_bytes, 6) &&
		      me6 && !memcmp(pk->dst, me6, 16);
	if (!answer) {
		dp_neigh_offer(lc, 6, pk->nd_target, mac);
		return;
	}
	neigh_answer(lc, 6, pk->nd_target, mac, false);
	neigh_forward(lc, 6, pk->nd_target, mac);
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

/* dp_neigh.h - an lcore's neighbour table, routes, its own ARP requests
 * and IPv6 neighbour solicitations for consumers, and the answers to
 * others' (dp_neigh.c). Every function runs on the lcore that owns `lc`
 * only. */
#ifndef DP_NEIGH_H
#define DP_NEIGH_H

#include "dp_internal.h"

/* dp_xfer.len of an answer one lcore hands the others (dp_inbox_poll):
 * x->peer.family/addr is at x->route.mac. No frame is ever that long. */
#define DP_XFER_NEIGH UINT32_MAX

/* An ARP/NDP claim that addr (family 4 or 6; 16 bytes, IPv4 in the first 4)
 * is at mac: written only under dp_neigh_rule.h's rule, refusals counted
 * (neigh_not_allowed, neigh_unsolicited, neigh_slot_busy). */
void dp_neigh_offer(struct dp_lcore *lc, int family, const uint8_t *addr, const uint8_t *mac);
/* Fill *rt to reach addr from the last local address seen in that family.
 * Returns false when no local address of that family is known yet. At
 * first use of an address, and when its entry was not confirmed for
 * [dataplane] neighbour_reachable_ms, a request for it is sent. now: the
 * caller's loop clock (at most one loop iteration old; see dp_neigh.c). */
bool dp_neigh_route(struct dp_lcore *lc, int family, const uint8_t *addr, struct dp_route *rt, uint64_t now);
/* What deliveries to consumer addr say (dp_io.h neigh_hint): ACKed
 * (confirmed), or due again without an ACK (asked for again once it was
 * not confirmed for neighbour_answer_ms, backing off while answers keep
 * naming the same MAC). now: as for dp_neigh_route. */
void dp_neigh_hint(struct dp_lcore *lc, int family, const uint8_t *addr, enum dp_neigh_hint hint, uint64_t now);
/* Whether lc->route_memo (dp_io.h) is about addr (family 4 or 6), the
 * table unchanged since it was taken. */
static inline bool dp_neigh_memo_of(const struct dp_lcore *lc, int family, const uint8_t *addr)
{
	const struct dp_route_memo *r = &lc->route_memo;
	if (r->family != family || r->gen != lc->neigh_gen)
		return false;
	if (family == 4)
		return dp_pkt_ld32(r->addr) == dp_pkt_ld32(addr);
	return !((dp_pkt_ld64(r->addr) ^ dp_pkt_ld64(addr)) | (dp_pkt_ld64(r->addr + 8) ^ dp_pkt_ld64(addr + 8)));
}
/* lc->route_memo when its route is the one dp_neigh_route(lc, family,
 * addr, ., now) would fill in, without a request or a count; else NULL. */
static inline struct dp_route_memo *dp_neigh_memo(struct dp_lcore *lc, int family, const uint8_t *addr,
						  uint64_t now)
{
	return now < lc->route_memo.fresh_until && dp_neigh_memo_of(lc, family, addr) ? &lc->route_memo : NULL;
}
/* A parsed ARP packet: answer a request for our IPv4 address (when the
 * profile says so), take a reply to a request of ours, offer the sender
 * to the table. pk is borrowed. */
void dp_neigh_on_arp(struct dp_lcore *lc, const struct dp_pkt *pk);
/* A parsed neighbour solicitation: answer it when it targets our IPv6 address,
 * and offer its source to the table. */
void dp_neigh_on_ndp(struct dp_lcore *lc, const struct dp_pkt *pk);
/* A parsed neighbour advertisement: an answer to a solicitation of ours
 * (solicited, to us) or an offer of its target. */
void dp_neigh_on_na(struct dp_lcore *lc, const struct dp_pkt *pk);
/* An answer another lcore received and handed over (x->len ==
 * DP_XFER_NEIGH): taken when it answers this lcore's own request. x stays
 * the caller's. */
void dp_neigh_handed(struct dp_lcore *lc, const struct dp_xfer *x);

#endif

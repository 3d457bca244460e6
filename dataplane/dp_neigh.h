/* dp_neigh.h - an lcore's neighbour table, routes and ARP/NDP answers
 * (dp_neigh.c). Every function runs on the lcore that owns `lc` only. */
#ifndef DP_NEIGH_H
#define DP_NEIGH_H

#include "dp_internal.h"

/* An ARP/NDP claim that addr (family 4 or 6; 16 bytes, IPv4 in the first 4)
 * is at mac: written only under dp_neigh_rule.h's rule, refusals counted
 * (neigh_not_allowed, neigh_unsolicited, neigh_slot_busy). */
void dp_neigh_offer(struct dp_lcore *lc, int family, const uint8_t *addr, const uint8_t *mac);
/* Fill *rt to reach addr from the last local address seen in that family.
 * Returns false when no local address of that family is known yet. */
bool dp_neigh_route(struct dp_lcore *lc, int family, const uint8_t *addr, struct dp_route *rt);
/* A parsed ARP packet: answer a request for our IPv4 address (when the
 * profile says so) and offer the sender to the table. pk is borrowed. */
void dp_neigh_on_arp(struct dp_lcore *lc, const struct dp_pkt *pk);
/* A parsed neighbour solicitation: answer it when it targets our IPv6 address,
 * and offer its source to the table. */
void dp_neigh_on_ndp(struct dp_lcore *lc, const struct dp_pkt *pk);

#endif

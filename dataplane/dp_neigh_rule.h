/* dp_neigh_rule.h - who may write a neighbour table entry (dp_neigh_rule.c):
 * the pure rule dp_neigh.c applies to every ARP/NDP offer, kept free of DPDK
 * so tests/hostile/test_hostile_neigh.c can drive it. Any thread; no state. */
#ifndef DP_NEIGH_RULE_H
#define DP_NEIGH_RULE_H

#include <stdbool.h>
#include <stdint.h>

#include "fg/common.h"

struct dp_neigh {
	uint8_t family;     /* 0 = empty, 4 or 6 */
	bool is_static;     /* from [dataplane] neighbours: nothing on the wire changes it */
	uint8_t addr[16];   /* IPv4 in the first 4 bytes */
	uint8_t mac[6];
};

enum dp_neigh_verdict {
	DP_NEIGH_LEARN,        /* write the entry (an empty slot) */
	DP_NEIGH_SAME,         /* the entry already says this: nothing to do */
	DP_NEIGH_NOT_ALLOWED,  /* the claimed address is neither allowlisted nor a consumer */
	DP_NEIGH_UNSOLICITED,  /* the address is known (or static) and this is no answer to a request of ours */
	DP_NEIGH_SLOT_BUSY,    /* the slot holds another address: the first one keeps it */
};

/* Judge an offer "family/addr is at mac" against the slot *n it hashes to.
 * admitted: the address passes [udp] allow or is a configured consumer.
 * solicited: the offer answers an outstanding request of ours (the
 * appliance sends none today, so callers pass false). Only DP_NEIGH_LEARN
 * writes; a known address never changes unless solicited and not static. */
FG_MUST_CHECK enum dp_neigh_verdict dp_neigh_judge(const struct dp_neigh *n, int family, const uint8_t *addr,
                                                   const uint8_t *mac, bool admitted, bool solicited);

#endif

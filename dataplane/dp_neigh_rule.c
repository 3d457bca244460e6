/* dp_neigh_rule.c - the rule deciding whether an ARP/NDP offer may write a
 * neighbour table entry. Called by dp_neigh.c on the lcore
 * that received the offer, and by tests; pure, no state. */
#include <string.h>

#include "dp_neigh_rule.h"

enum dp_neigh_verdict dp_neigh_judge(const struct dp_neigh *n, int family, const uint8_t *addr,
                                     const uint8_t *mac, bool admitted, bool solicited)
{
	size_t al = family == 6 ? 16 : 4;
	bool mine = n->family == family && !memcmp(n->addr, addr, al);
	bool known = mine && !n->incomplete;
	if (known && !memcmp(n->mac, mac, 6))
		return DP_NEIGH_SAME;
	if (!admitted)
		return DP_NEIGH_NOT_ALLOWED;
	if (known)
		return solicited && !n->is_static ? DP_NEIGH_LEARN : DP_NEIGH_UNSOLICITED;
	if (n->family && !mine)
		return DP_NEIGH_SLOT_BUSY;
	return DP_NEIGH_LEARN;
}

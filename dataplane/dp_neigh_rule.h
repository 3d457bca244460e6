/* dp_neigh_rule.h - who may write a neighbour table entry (dp_neigh_rule.c):
 * the pure rule dp_neigh.c applies to every ARP/NDP offer, kept free of DPDK
 * so tests/hostile/test_hostile_neigh.c can drive it. Any thread; no state. */
#ifndef DP_NEIGH_RULE_H
#define DP_NEIGH_RULE_H

#include <stdbool.h>
#include <stdint.h>

#include "fg/common.h"

/* A neighbour table entry. States (dp_neigh.c):
 *
 *   empty --first use (route)--> incomplete --answer or offer--> known
 *                                    |                             |
 *                                    +--- asked again every -------+-- aged, or deliveries
 *                                         neighbour_answer_ms           unanswered: asked again;
 *                                                                       an answer in time may
 *                                                                       change its MAC
 *
 * An entry is never removed; a static one (from [dataplane] neighbours)
 * never changes and is never asked for. */
struct dp_neigh {
	uint8_t family;     /* 0 = empty, 4 or 6 */
	bool is_static;     /* from [dataplane] neighbours: nothing on the wire changes it */
	bool incomplete;    /* asked for at first use, no MAC yet (sends fall back as for a miss) */
	bool probing;       /* the outstanding request was sent for unanswered deliveries */
	uint8_t addr[16];   /* IPv4 in the first 4 bytes */
	uint8_t mac[6];
	uint64_t confirmed_ns; /* learnt, answered, or its deliveries ACKed, last (CLOCK_MONOTONIC) */
	uint64_t asked_ns;     /* our outstanding request for it left then; 0: none */
	uint64_t gap_ns;       /* unanswered deliveries ask again once unconfirmed this long; 0: neighbour_answer_ms */
};

/* What deliveries tell the neighbour table about a consumer (dp_io.h
 * neigh_hint). */
enum dp_neigh_hint {
	DP_NEIGH_CONFIRMED,  /* the consumer ACKed a delivery: its entry reaches it */
	DP_NEIGH_UNANSWERED, /* a delivery is due again without an ACK */
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
 * solicited: the offer answers an outstanding request of ours for addr
 * (dp_neigh.c: an ARP reply or solicited neighbour advertisement sent to
 * us, within neighbour_answer_ms of the request). Only DP_NEIGH_LEARN
 * writes; a known address never changes unless solicited and not static;
 * an incomplete entry (asked for, no MAC yet) learns like an empty slot. */
FG_MUST_CHECK enum dp_neigh_verdict dp_neigh_judge(const struct dp_neigh *n, int family, const uint8_t *addr,
                                                   const uint8_t *mac, bool admitted, bool solicited);

#endif

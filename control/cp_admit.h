/* cp_admit.h - admission of the TLS listener's connections by source
 * address (the lockout it prevents: about 1,000 idle TCP connections from one
 * unauthenticated client made every legitimate /healthz fail).
 *
 * Owns: a hash table of the sources that have connections open (per source:
 * connections open, and how many of them are not yet authenticated), the
 * totals, the admission policy and its counters by named reason. Memory is
 * bounded: the table has a power-of-two capacity of at least twice
 * max_connections (an entry exists only while its source has a connection
 * open, so it is never more than half full), allocated at init and only
 * grown when max_connections grows (config reload). The hash is keyed by a
 * random secret drawn at init, so a client choosing source addresses cannot
 * aim its collisions.
 *
 * Not here: the connections themselves. cp_server.c (the accept path) asks
 * cp_admit_decide, closes the connection it says to evict (chosen from its
 * own list of unauthenticated ones, cp_admit_evict_first), then counts the newcomer in with
 * cp_admit_enter; it reports authentication (cp_admit_authenticate) and
 * every close (cp_admit_leave).
 *
 * Policy, for a new connection from source S (limits in struct
 * cp_admit_limits, from [tls] max_connections, auth_reserve and
 * unauth_per_source):
 *   1. S already has unauth_per_source unauthenticated connections open:
 *      refused (reason per_source).
 *   2. unauthenticated connections hold max_connections - reserve: an
 *      unauthenticated connection is closed to make room (evicted
 *      unauth_share; which one: cp_admit_evict_first, the oldest of a
 *      source holding two or more, else the oldest). The reserve is kept
 *      for authenticated peers.
 *   3. max_connections are open: an unauthenticated one is closed (evicted
 *      full, chosen as in 2); when every open connection is authenticated,
 *      the newcomer is refused (full). An authenticated connection is never
 *      closed for a newcomer.
 *   4. otherwise admitted.
 * A connection without an IP source (family 0) skips rule 1.
 *
 * Who may call: the loop thread only (no locks). The table is pure memory:
 * no I/O, no logging. */
#ifndef CP_ADMIT_H
#define CP_ADMIT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fg/common.h"

/* A connection's source: IPv4 (family 4, address in addr[0..3], the rest
 * zero), IPv6 (family 6), or 0 when the peer has no IP address. */
struct cp_admit_src {
	uint8_t family;
	uint8_t addr[16];
};

/* The source an accepted peer counts as (ss from getpeername): an IPv4
 * peer as itself, an IPv4-mapped IPv6 peer as its IPv4 address (one
 * source, whichever family it came by), any other IPv6 peer by its first
 * v6_bits ([tls] ipv6_source_prefix: one host's /64 is one source); family
 * 0 for anything else. */
void cp_admit_source_of(const struct sockaddr_storage *ss, unsigned v6_bits, struct cp_admit_src *src);

/* Named reasons of every refusal and eviction (fanogate_tls_admission_total
 * {reason=...}, fanoctl stats tls.admission). */
enum cp_admit_reason {
	CP_ADMIT_R_PER_SOURCE,   /* refused: its source has unauth_per_source unauthenticated connections open */
	CP_ADMIT_R_FULL,         /* refused: max_connections open, all of them authenticated */
	CP_ADMIT_R_EVICT_UNAUTH, /* evicted: unauthenticated connections held max_connections - reserve */
	CP_ADMIT_R_EVICT_FULL,   /* evicted: max_connections were open */
	CP_ADMIT_R__COUNT
};

enum cp_admit_verdict {
	CP_ADMIT_TAKE,       /* admit */
	CP_ADMIT_TAKE_EVICT, /* close the oldest unauthenticated connection, then admit */
	CP_ADMIT_REFUSE,     /* close the newcomer */
};

struct cp_admit_limits {
	uint32_t max_conns;         /* [tls] max_connections (>= 1) */
	uint32_t reserve;           /* kept for authenticated connections (< max_conns) */
	uint32_t unauth_per_source; /* 0: no per-source limit */
};

struct cp_admit_entry {
	uint32_t open;   /* connections open from this source; 0 = the entry is free */
	uint32_t unauth; /* ... of which not yet authenticated (<= open) */
	struct cp_admit_src src;
};

/* Invariants:
 *  1. n_open = sum of entries' open; n_unauth = sum of entries' unauth.
 *  2. used = entries with open > 0 <= n_open; used <= (mask + 1) / 2 while
 *     n_open stays within the max_conns the table was sized for.
 *  3. Linear probing without tombstones: every entry in use is reachable
 *     from its home slot through used slots (deletion shifts back). */
struct cp_admit {
	struct cp_admit_entry *tab; /* [mask + 1] */
	uint32_t mask;
	uint32_t used;
	uint32_t n_open, n_unauth;
	uint64_t key; /* hash secret */
	uint64_t st[CP_ADMIT_R__COUNT];
};

/* Allocate the table for max_conns connections and draw the hash secret.
 * Returns 0 or -ENOMEM. */
FG_MUST_CHECK int cp_admit_init(struct cp_admit *a, uint32_t max_conns);
void cp_admit_fini(struct cp_admit *a);
/* Make room for max_conns (a reload raised max_connections): rehash into a
 * larger table. 0 (also when already large enough) or -ENOMEM (the old
 * table is kept). */
FG_MUST_CHECK int cp_admit_grow(struct cp_admit *a, uint32_t max_conns);

/* The policy above for a new connection from src; counts the reason in
 * a->st when the verdict is not TAKE and writes it to *why. */
enum cp_admit_verdict cp_admit_decide(struct cp_admit *a, const struct cp_admit_src *src,
				      const struct cp_admit_limits *lim, enum cp_admit_reason *why);
/* Count a new (unauthenticated) connection of src in. 0, or -ENOSPC when
 * the table is full (cannot happen within the max_conns it was sized for;
 * the caller refuses the connection). */
FG_MUST_CHECK int cp_admit_enter(struct cp_admit *a, const struct cp_admit_src *src);
/* One of src's connections authenticated (called once per connection). */
void cp_admit_authenticate(struct cp_admit *a, const struct cp_admit_src *src);
/* One of src's connections closed; authed: whether it had authenticated. */
void cp_admit_leave(struct cp_admit *a, const struct cp_admit_src *src, bool authed);
/* Unauthenticated connections open from src (0 for an unknown source). */
uint32_t cp_admit_unauth_of(const struct cp_admit *a, const struct cp_admit_src *src);

/* Which unauthenticated connection an eviction closes (rules 2 and 3): the
 * caller walks its connections oldest first, at most CP_ADMIT_EVICT_LOOK
 * of them, and closes the first whose source cp_admit_evict_first says
 * holds two or more unauthenticated connections; when none of them does,
 * the oldest. A client with one handshake in flight is passed over while a
 * source spread over many connections has one to give: an attacker
 * churning connections from a few addresses evicts its own. To reach a
 * lone client's, it must fill the places of the walk from the client's
 * on with connections of sources holding one each (CP_ADMIT_EVICT_LOOK
 * addresses). The bound keeps an eviction's cost at 64 lookups. */
#define CP_ADMIT_EVICT_LOOK 64u
bool cp_admit_evict_first(const struct cp_admit *a, const struct cp_admit_src *src);

/* "per_source", "full", "evicted_unauth_share", "evicted_full". */
const char *cp_admit_reason_name(enum cp_admit_reason r);

#endif

/* dp.h - the DPDK poll-mode dataplane, as the daemon (control/main.c) and
 * the standalone driver (fanogate-dp) see it.
 *
 * Lifecycle, all from ONE thread (the control plane's main thread), in order:
 *   dp_init   -> EAL from the drivers-config profile, the port and its
 *                queues, mempools, one slot shard per poll lcore (hugepage or
 *                --no-huge memory), reassembly and ACK tables, the hand-off
 *                rings between lcores, and the boundary lanes (b->lanes,
 *                b->counters, b->n_lanes are filled here). Nothing is
 *                allocated after this returns.
 *   dp_start  -> launch one poll loop per lcore (lcore i owns shard i).
 *   dp_stop   -> set b->stop, join the lcores, stop and close the port,
 *                free everything, keep a final report (dp_report_get).
 * Between dp_start and dp_stop the caller talks to the lcores only through
 * the boundary (include/fg/boundary.h).
 *
 * Errors: dp_init returns 0 or -errno and logs once, with context, through
 * the DPDK log (RTE_LOG); it never exits the process. */
#ifndef DP_H
#define DP_H

#include <stdbool.h>
#include <stdint.h>

#include "fg/boundary.h"
#include "fg/common.h"
#include "fg/config.h"
#include "fg/slot.h"

/* profile_path: a drivers-config name ("af_packet") or a file path; NULL
 * means cfg->dp_profile. cfg is copied; b must outlive dp_stop. */
FG_MUST_CHECK int dp_init(const struct fg_config *cfg, const char *profile_path, struct fg_boundary *b);
/* Launch the poll lcores. 0 or -errno (-EALREADY, -ENODEV before init). */
FG_MUST_CHECK int dp_start(void);
/* Stop and release everything; safe to call when not started (then only
 * frees). Not re-entrant; the EAL is cleaned up, so dp_init cannot be
 * called again in this process. */
void dp_stop(void);

/* Dataplane-only figures kept beside boundary.h's fg_dp_counters, per lcore. */
enum dp_xcounter {
	DP_X_ARP,            /* ARP packets (requests answered or ignored) */
	DP_X_IP_FRAG,        /* IPv4 fragments (refused) */
	DP_X_MULTISEG,       /* multi-segment mbufs (refused) */
	DP_X_PKT_MALFORMED,  /* L2..L4 or fragment header malformed (also in drop_malformed) */
	DP_X_RAW_DGRAMS,     /* datagrams on the raw profile port */
	DP_X_FRAG_SINGLE,    /* fragmented-profile datagrams with frag_total 1 */
	DP_X_FRAG_TAKEN,     /* fragments stored or placed */
	DP_X_FRAG_DUP,       /* duplicate fragments */
	DP_X_FRAG_DISCARDED, /* fragments of a group already judged */
	DP_X_FRAG_NOBUF,     /* no frame buffer free */
	DP_X_FRAG_MALFORMED, /* fragment refused (total changed, chunk size, too large) */
	DP_X_HANDOFF_OUT,    /* whole frames handed to the lcore owning their shard */
	DP_X_HANDOFF_IN,     /* whole frames received from other lcores */
	DP_X_ACK_RX,         /* ACK frames received (the fleet ACKing our sends) */
	DP_X_LANE_FRAMES,    /* FG_BM_FRAME messages processed */
	DP_X_LANE_FLUSH,     /* FG_BM_FLUSH messages processed */
	DP_X_NEIGH_MISS,     /* TX to an address whose MAC was unknown (gateway or broadcast used) */
	DP_X_NO_CONSUMER,    /* resolved seeds with no consumer configured for the layer */
	DP_X_NO_SRC_ADDR,    /* resolved seeds not sent: no local address of the consumer's family */
	DP_X_TX_NOMBUF,      /* TX mbuf allocation failures */
	DP_X_PEERS_NEW,      /* FG_BM_PEER messages sent */
	DP_X_ACK_FULL,       /* ACK table full: flushed early */
	DP_X_BUSY_CYCLES,    /* TSC cycles of poll iterations that found work (CPU cost per seed) */
	DP_X_NDP,            /* IPv6 neighbour solicitations (answered when for [net] ip6) */
	/* reliable delivery (dp_dlv.h): why deliveries were given up (their sum
	 * is delivery_given_up), and the ACK traffic of consumers */
	DP_X_DLV_GIVEUP_RESENDS,  /* resends exhausted without an ACK */
	DP_X_DLV_GIVEUP_RECLAIMED,/* the slot no longer held the seed when a resend was due */
	DP_X_DLV_GIVEUP_FULL,     /* pending table full ([consumers] pending_max): the oldest was given up */
	DP_X_DLV_SUPERSEDED,      /* the same (layer, token_seq) was delivered again before its ACK */
	DP_X_DLV_ACK_FWD,         /* consumer ACK frames copied to the lcore owning some of their seqs */
	DP_X_DLV_ACK_FWD_FAIL,    /* ... copies that found no buffer or ring room (the consumer ACKs the resend) */
	DP_X_POINT_SEEN,          /* point last-seen stores ([points] liveness) */
	DP_X_LANE_WAKES,          /* eventfd writes waking the control plane (at most one per its sleep) */
	DP_X_LANE_WAKE_FAIL,      /* ... writes that failed (cannot happen short of a closed fd) */
	DP_X_IDLE_SLEEPS,         /* idle sleeps ([poll] idle_sleep_us) */
	DP_X_THREAD_CPU_NS,       /* the lcore thread's CPU time (its CPU clock, idle polling included), added at stop */
	DP_X_ACK_FOREIGN,         /* ACK entries for a layer whose configured consumer is not the sender (ignored) */
	DP_X_ACK_BUDGET,          /* ACK frames cut short: DP_DLV_ACK_MISS_MAX seqs matched nothing pending */
	DP_X__COUNT
};
const char *dp_xcounter_name(enum dp_xcounter c);

/* The final report kept by dp_stop (and readable live for the counters). */
struct dp_report {
	unsigned lcores;
	uint64_t c[FG_C__COUNT];          /* summed over lcores */
	uint64_t x[DP_X__COUNT];
	uint64_t outcome[FG_O__COUNT];    /* every seed frame decided, by outcome */
	uint64_t malformed[FG_R__COUNT];
	uint64_t slots_opened, slots_resolved, slots_expired, slots_poisoned;
	uint32_t slots_in_use;
	uint64_t reasm_timeouts;
	uint32_t delivery_pending; /* deliveries still unACKed at dp_stop (ledger: seeds_sent = acked + given_up + pending) */
	/* mbufs out of the pool: after the port started (posted to RX rings by
	 * PMDs that pre-fill them), after the lcores stopped and the port
	 * stopped, and after the port closed; then the pool figures */
	uint32_t mbufs_out_started, mbufs_out_stopped, mbufs_out_closed;
	/* filled by dp_stop after the port is closed */
	uint32_t mbuf_pool_size, mbuf_pool_avail;
	uint32_t xfer_pool_size, xfer_pool_avail;
	bool hugepages;
	uint64_t tsc_hz;
};
/* Copy the last report (dp_stop) or, while running, a live sum of the
 * counters (pool and slot figures then read 0). 0 or -ENODEV. */
FG_MUST_CHECK int dp_report_get(struct dp_report *out);

#endif

/* counters.h - the one registry of the dataplane's counters.
 *
 * Owns: the declaration of every counter the dataplane keeps, once: its
 * name (the key in `fanoctl stats` "dataplane" and in DPDK telemetry
 * /fanogate/counters), its /metrics family (fanogate_<family>, one series
 * per lcore, plus the def's label when the family has several members),
 * its type and its help text. Two sets:
 *   - enum fg_dp_counter (fg/boundary.h): fg_dp_counter_defs[];
 *   - enum dp_xcounter (below): the lcores' own figures, fg_dp_xcounter_defs[];
 * plus the per-lcore outcome counts (struct dp_xcounters.outcome, family
 * dp_outcomes_total, key "outcome_<name>", by enum fg_outcome).
 * Every renderer (control/cp_metrics.c, control/cp_op.c, tools/fanoctl
 * counters, dataplane/dp_telemetry.c) iterates these tables, so a counter
 * added here is shown everywhere; tests/control/test_counters and
 * daemon_metrics check that none is left out and that docs/metrics.md lists it.
 *
 * Memory: the values live per lcore in fg_boundary.counters[] and
 * fg_boundary.xcounters[] (written by the owning lcore only, relaxed
 * stores; read by anyone, relaxed loads).
 *
 * Who may call: any thread (the tables are constant). */
#ifndef FG_COUNTERS_H
#define FG_COUNTERS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/boundary.h"
#include "fg/slot.h"

/* The dataplane's own figures, per lcore, beside boundary.h's fg_dp_counters.
 * Named dp_ because only the lcores write them. */
enum dp_xcounter {
	DP_X_ARP,            /* ARP packets (requests answered or ignored) */
	DP_X_IP_FRAG,        /* IPv4 fragments (refused) */
	DP_X_MULTISEG,       /* multi-segment mbufs (refused) */
	DP_X_BAD_SOURCE,     /* UDP from an address that is not one host, or from ours (refused) */
	DP_X_NOT_OURS,       /* UDP to a foreign, broadcast or multicast address (refused) */
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
	DP_X_LANE_FRAMES,    /* FG_BM_CONTRIB messages processed */
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
	DP_X_SLOTS_ABANDONED,     /* open slots freed when their only attempt was aborted (fg_slot_abort) */
	DP_X_LANE_DEFERRED,       /* bursts to the control plane with nothing urgent: left for its 1 ms tick */
	DP_X_IDLE_SLEEPS,         /* idle sleeps ([poll] idle_sleep_us) */
	DP_X_THREAD_CPU_NS,       /* the lcore thread's CPU time (its CPU clock, idle polling included), added at stop */
	DP_X_ACK_FOREIGN,         /* ACK entries for a layer whose configured consumer is not the sender (ignored) */
	DP_X_ACK_BUDGET,          /* ACK frames cut short: DP_DLV_ACK_MISS_MAX seqs matched nothing pending */
	DP_X_DLV_ACK_FOREIGN,     /* consumer ACK entries of streams outside the resolved band (skipped, one compare) */
	DP_X_DLV_WINDOW_WAIT,     /* due resends held: beyond the consumer's base + 63, waiting for its window to move */
	DP_X_NEIGH_NOT_ALLOWED,   /* ARP/NDP offers refused: the address is neither in [udp] allow nor a consumer */
	DP_X_NEIGH_UNSOLICITED,   /* ARP/NDP offers refused: they would change a known (or static) neighbour */
	DP_X_NEIGH_SLOT_BUSY,     /* ARP/NDP offers refused: the 4 slots their address may use hold other neighbours */
	DP_X_GUARD_WAITS,         /* a peer's memory unmap waited for this lcore to leave a burst (dp_burst_guard.h) */
	DP_X_GUARD_TIMEOUTS,      /* ... and gave up after 1 s (the lcore stayed inside one burst) */
	DP_X_IDLE_WAITS,          /* idle waits in ppoll() ([poll] idle_wake, dataplane/dp_idle.h) */
	DP_X_IDLE_WAKE_RX,        /* ... ended by a packet on the lcore's RX queue */
	DP_X_IDLE_WAKE_LANE,      /* ... ended by the lane's eventfd (a control-plane message or a handed frame) */
	DP_X_IDLE_WAKE_TIMER,     /* ... ended by the lcore's next timer (1 ms tick, ACK interval, 100 ms when quiet) */
	DP_X_INBOX_WAKES,         /* eventfd writes waking another lcore asleep after a frame was handed to it */
	DP_X_TX_HELD,             /* TX back-pressure: flushes the TX queue did not take whole; RX paused until the rest went */
	DP_X_TX_HOLD_EXPIRED,     /* ... pauses that reached [port] tx_hold_ms (50 ms): the waiting packets dropped (drop_tx_full), no pause for 10 times as long */
	/* the consumer's ACK window (dataplane/dp_cwin.h) */
	DP_X_DLV_BASE_STALE,      /* consumer ACK bases below the window's base (reordered or replayed): ignored for the window */
	DP_X_DLV_BASE_AHEAD,      /* consumer ACK bases beyond anything sent on their stream: ignored for the window */
	DP_X_DLV_FLEET_SEEN,      /* streams [consumers] ack_window = auto began to read the fleet's way (their consumer ACKs like the fleet) */
	DP_X_DLV_RESTART,         /* deliveries far below their stream's window or last sequence: a new run, the window forgotten */
	/* neighbour resolution (dataplane/dp_neigh.c) */
	DP_X_NDP_NA,              /* IPv6 neighbour advertisements received */
	DP_X_NEIGH_REQUESTS,      /* ARP requests and IPv6 neighbour solicitations the dataplane sent for consumers */
	DP_X_NEIGH_ANSWERS,       /* answers to them (from the asked-for address, in time) */
	DP_X_NEIGH_MOVED,         /* ... that changed a known neighbour's MAC */
	DP_X_NEIGH_ANSWER_FWD,    /* answers copied to the other lcores (each keeps its own table) */
	DP_X_NEIGH_ANSWER_FWD_FAIL, /* ... copies that found no buffer or ring room (that lcore asks again) */
	DP_X__COUNT
};
const char *dp_xcounter_name(enum dp_xcounter c);

struct dp_xcounters {
	_Alignas(64) _Atomic uint64_t x[DP_X__COUNT];
	_Atomic uint64_t outcome[FG_O__COUNT];
};
/* no_icf: the body is identical to boundary.h's fg_count, and gcc 12's
 * identical-code folding then checks x[c] against fg_dp_counters.c's bound
 * (-Warray-bounds false positive once DP_X__COUNT > FG_C__COUNT). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((no_icf))
#endif
static inline void dp_xcount(struct dp_xcounters *k, enum dp_xcounter c, uint64_t n)
{
	atomic_store_explicit(&k->x[c], atomic_load_explicit(&k->x[c], memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* One declared counter. */
struct fg_counter_def {
	const char *name;   /* stats and telemetry key (unique over both sets) */
	const char *family; /* /metrics family without "fanogate_", ends in _total */
	const char *label;  /* extra label of a shared family (reason="late"), NULL when alone */
	const char *type;   /* Prometheus type: "counter" */
	const char *help;   /* what it counts (HELP text of a family of its own) */
	int ns;             /* 1: the value is nanoseconds; /metrics shows seconds (Prometheus base unit) */
};

extern const struct fg_counter_def fg_dp_counter_defs[FG_C__COUNT];
extern const struct fg_counter_def fg_dp_xcounter_defs[DP_X__COUNT];

/* The HELP text of the family def belongs to (shared families have their own). */
const char *fg_counter_family_help(const struct fg_counter_def *d);

/* Per-lcore outcome counts (struct dp_xcounters.outcome). */
#define FG_DP_OUTCOMES_FAMILY "dp_outcomes_total"
#define FG_DP_OUTCOMES_HELP "slot outcomes of contributions the dataplane ingested, by outcome and lcore"
/* "outcome_<fg_outcome_name>" into out (stats and telemetry key). */
void fg_dp_outcome_key(unsigned outcome, char *out, size_t cap);

#endif

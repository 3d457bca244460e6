/* dp_internal.h - the DPDK side's shared state (dp.c, the lcore's files
 * dp_lcore.c, dp_rx.c, dp_io_dpdk.c, dp_lanes.c, dp_neigh.c, dp_tx.c, and
 * dp_telemetry.c). The per-lcore state and the shard's I/O interface,
 * which the kernel-socket receiver (bench/dp/kudp_rx.c) shares, are in
 * dp_io.h, without DPDK types. Not for the control plane: it sees dp.h and
 * boundary.h only.
 *
 * Ownership: `struct dp_state` is written by the init thread before the
 * lcores launch and read-only afterwards, except each `struct dp_lcore`,
 * which belongs to its lcore while it runs. */
#ifndef DP_INTERNAL_H
#define DP_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dp_io.h"
#include "dp_profile.h"

struct dp_state {
	bool inited, started;
	struct fg_config cfg;
	struct dp_profile prof;
	struct fg_boundary *b;
	struct fg_seed_limits limits;
	struct fg_slots_cfg scfg;
	uint16_t port;
	const char *driver;          /* the port's PMD (its static name), NULL before port_setup */
	struct rte_ether_addr mac;
	uint16_t n_rxq, n_txq;
	unsigned n;                  /* poll lcores = shards = lanes */
	uint32_t chunk, frame_max;
	uint64_t ack_interval_ns;
	bool have_points;            /* [points] maps some UDP prefix to a point */
	struct rte_mempool *mbufs, *xfer;
	struct dp_lcore *lc[DP_MAX_LCORES];
	struct dp_xcounters *xk;     /* [n] */
	void *lane_mem[DP_MAX_LCORES];
	bool hugepages;
	bool own_prefix;             /* --file-prefix fgdp<pid>: runtime dir removed at stop */
	uint32_t mbufs_out_started;
	bool guard_bursts;           /* the port's PMD unmaps under a burst (dp_burst_guard.h) */
	bool tx_by_ref;              /* multi-segment TX on: deliveries sent by reference (dp_tx.h) */
	int rxq_fd[DP_MAX_LCORES];   /* [poll] idle_wake: the socket RX queue q receives on, -1 unknown (dp_idle.h) */
	bool have_report;
	struct dp_report report;
	struct dp_shard_env env;     /* what every lcore's shard reads (lc->env) */
};

extern struct dp_state dp_g;

/* The DPDK lcore's side of the shard's I/O (dp_io_dpdk.c): TX through
 * mbufs, routes from the neighbour table, xfer buffers from dp_g.xfer,
 * hand-off through the owners' inboxes, reports through the lane. */
extern const struct dp_io dp_io_dpdk;
/* Take up to DP_BURST frames other lcores handed to this one (its inbox)
 * into the shard (dp_shard_handed). Returns how many. Owner lcore only. */
unsigned dp_inbox_poll(struct dp_lcore *lc, uint64_t now);
/* Wake the owners this lcore handed frames to since its last call, if
 * they sleep in their idle wait ([poll] idle_wake). Once per loop
 * iteration, before this lcore may sleep itself. Owner lcore only. */
void dp_inbox_kick(struct dp_lcore *lc);

/* The poll loop (rte_eal_remote_launch entry); arg is the struct dp_lcore. */
int dp_lcore_main(void *arg);
/* Sum the live counters into out (fg counters, x counters, outcomes). */
void dp_counters_sum(struct dp_report *out);
/* Register /fanogate/... telemetry commands. 0 or -errno. */
int dp_telemetry_register(void);

#endif

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
#include "fg/counters.h"
#include "fg/common.h"
#include "fg/config.h"
#include "fg/slot.h"

/* profile_path: a drivers-config name ("af_packet") or a file path; NULL
 * means cfg->dp_profile. cfg is copied; b must outlive dp_stop. */
FG_MUST_CHECK int dp_init(const struct fg_config *cfg, const char *profile_path, struct fg_boundary *b);

/* Send every DPDK log line (the EAL's, the drivers', the dataplane's own)
 * to fn(prio, line) instead of DPDK's stdout/syslog pair: prio is the
 * line's syslog priority (0 emerg .. 7 debug, DPDK's level - 1), line has
 * no newline and no "USER1: " logtype prefix. Call before dp_init, from the
 * thread that will call it; fn runs on whichever thread logs (the caller's,
 * an lcore, a DPDK service thread), one whole line at a time. 0 or -errno. */
FG_MUST_CHECK int dp_log_to(void (*fn)(int prio, const char *line));
/* Launch the poll lcores. 0 or -errno (-EALREADY, -ENODEV before init). */
FG_MUST_CHECK int dp_start(void);
/* Stop and release everything; safe to call when not started (then only
 * frees). Not re-entrant; the EAL is cleaned up, so dp_init cannot be
 * called again in this process. */
void dp_stop(void);

/* Dataplane-only figures (enum dp_xcounter, struct dp_xcounters): the
 * counter registry, fg/counters.h. */

/* The final report kept by dp_stop (and readable live for the counters). */
struct dp_report {
	unsigned lcores;
	uint64_t c[FG_C__COUNT];          /* summed over lcores */
	uint64_t x[DP_X__COUNT];
	uint64_t outcome[FG_O__COUNT];    /* every seed frame decided, by outcome */
	uint64_t malformed[FG_R__COUNT];
	uint64_t slots_opened, slots_resolved, slots_expired, slots_poisoned;
	uint64_t slots_abandoned; /* freed when their only attempt was aborted (fg_slot_abort) */
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

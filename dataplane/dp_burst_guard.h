/* dp_burst_guard.h - keep a port's shared memory mapped while an lcore is
 * inside one of its RX/TX bursts.
 *
 * Why: DPDK 22.11's net_memif unmaps the peer's shared memory from the EAL
 * interrupt thread when the peer disconnects (memif_disconnect ->
 * memif_free_regions -> munmap), and nothing makes that thread wait for an
 * lcore already inside eth_memif_rx/tx: the lcore then reads an unmapped
 * ring and the appliance dies of SIGSEGV (seen in dp_seccomp_memif under
 * load: the crash is in eth_memif_rx, called from dp_rx_burst, while the
 * client process exits). The PMD clears its CONNECTED flag before the
 * unmap, and a burst that starts after that returns at once; so it is
 * enough that the unmap waits for the bursts that had already started.
 *
 * How: each lcore's sequence is odd while it is inside a burst (a seq_cst
 * fence after making it odd, so the PMD's flag is read after the store).
 * munmap is interposed (dp_burst_guard.c): called from the EAL interrupt
 * thread while a guarded port runs, it first waits until every lcore seen
 * inside a burst has left it (a grace period, as in RCU), then unmaps.
 * Any other caller, or no guarded port, goes straight to the system call.
 *
 * Cost on the lcore: two stores and a fence per burst, on guarded ports
 * only (net_memif; dp.c decides, dp_burst_guard_needed).
 *
 * Which DPDK releases need it (RTE_VERSION): net_memif has unmapped this
 * way since it came (19.08). 22.11, the release fanogate is built and
 * tested with, does (tests/dataplane/test_burst_guard.c reproduces it),
 * and so does the newest upstream source read when this was written
 * (memif_free_regions in the rte_atomic_* code of 24.03 and later):
 * disconnect clears ETH_MEMIF_FLAG_CONNECTED, which only a burst that
 * starts later reads, and unmaps at once. DP_BURST_GUARD_CHECKED is the
 * newest release known to need it; a newer DPDK keeps the guard (its cost
 * is small, a crash is not) and dp.c says so at start, so that whoever
 * builds on it checks that release's memif_disconnect and moves the mark
 * (or ends the guard at the release that waits for running bursts). */
#ifndef DP_BURST_GUARD_H
#define DP_BURST_GUARD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_version.h>

#include "dp_io.h" /* DP_MAX_LCORES */
#include "fg/counters.h"

#define DP_BURST_GUARD_FIRST RTE_VERSION_NUM(19, 8, 0, 0)   /* net_memif's first release */
#define DP_BURST_GUARD_CHECKED RTE_VERSION_NUM(24, 3, 0, 0) /* the newest release read that needs it */

/* Whether a port of PMD `driver` (rte_eth_dev_info.driver_name) needs the
 * guard with the DPDK this is built on. *unchecked: this DPDK is newer than
 * the releases checked (the guard stays on). */
static inline bool dp_burst_guard_needed(const char *driver, bool *unchecked)
{
	*unchecked = false;
	if (!driver || __builtin_strcmp(driver, "net_memif") != 0)
		return false;
#if RTE_VERSION < DP_BURST_GUARD_FIRST
	return false;
#else
	*unchecked = RTE_VERSION > DP_BURST_GUARD_CHECKED;
	return true;
#endif
}

/* Whether munmap is interposed in this build (not under a sanitizer,
 * whose runtime keeps its own interceptor: then the guard only marks
 * bursts, and nothing waits). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DP_GUARD_INTERPOSE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define DP_GUARD_INTERPOSE 0
#endif
#endif
#ifndef DP_GUARD_INTERPOSE
#define DP_GUARD_INTERPOSE 1
#endif

#define DP_GUARD_MAX DP_MAX_LCORES /* one guard per poll lcore */

struct dp_burst_guard {
	_Alignas(64) _Atomic uint64_t seq; /* odd: inside a burst */
};

extern struct dp_burst_guard dp_guards[DP_GUARD_MAX];
/* Written by the init thread before the lcores launch and after they
 * stopped; read by the lcores and by the interposed munmap. */
extern _Atomic bool dp_guard_on;
extern _Atomic unsigned dp_guard_n;

/* Turn the guard on for lcores 0..n-1 (before they launch) or off (after
 * they stopped: n = 0). A wait for lcore i counts DP_X_GUARD_WAITS (and
 * DP_X_GUARD_TIMEOUTS) in xk[i]: the lcore never writes those two. */
void dp_burst_guard_set(unsigned n, struct dp_xcounters *xk);

static inline bool dp_burst_guarded(void) { return atomic_load_explicit(&dp_guard_on, memory_order_relaxed); }

static inline void dp_burst_enter(unsigned idx)
{
	struct dp_burst_guard *g = &dp_guards[idx];
	atomic_store_explicit(&g->seq, atomic_load_explicit(&g->seq, memory_order_relaxed) + 1, memory_order_relaxed);
	atomic_thread_fence(memory_order_seq_cst);
}

static inline void dp_burst_leave(unsigned idx)
{
	struct dp_burst_guard *g = &dp_guards[idx];
	atomic_store_explicit(&g->seq, atomic_load_explicit(&g->seq, memory_order_relaxed) + 1, memory_order_release);
}

/* Wait until every lcore that is inside a burst now has left it (bounded:
 * 1 s). The caller has made new bursts harmless first. */
void dp_burst_guard_quiesce(void);

#endif

/* dp_lcore.c - the poll loop of one lcore: policy only, in the shape of
 * DPDK l3fwd's main loop. Each iteration: refresh the published line facts,
 * receive a burst (dp_rx.c), take frames other lcores handed over
 * (dp_shard.c), take the control plane's messages (dp_lanes.c), run the
 * housekeeping timers about once a millisecond, flush ACKs when due
 * (dp_reply.c) and the TX buffer (dp_tx.c), then wake the control plane
 * if this iteration gave it something while it slept (dp_lanes.c).
 *
 * Who may call: dp_lcore_main runs on its own EAL lcore, launched by
 * dp_start; it touches only that lcore's struct dp_lcore, the shared
 * read-only dp_g, MP-safe mempools and the owner lcores' MP/SC inbox rings.
 * Nothing here allocates from the heap, locks or logs; the only syscalls are
 * clock_gettime (vDSO), the eventfd write of dp_lane_wake (only on the
 * control plane's empty -> non-empty edge) and, when [poll] idle_sleep_us
 * is set, a sleep after 64 empty polls. */
#include <time.h>

#include <rte_cycles.h>

#include "dp_internal.h"
#include "dp_lanes.h"
#include "dp_reply.h"
#include "dp_rx.h"
#include "dp_shard.h"
#include "dp_tx.h"

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int dp_lcore_main(void *arg)
{
	struct dp_lcore *lc = arg;
	unsigned idle = 0;
	uint64_t now = now_ns();
	lc->next_ack_ns = now + dp_g.ack_interval_ns;
	lc->next_timer_ns = now + 1000000ull;

	while (!atomic_load_explicit(&dp_g.b->stop, memory_order_relaxed)) {
		/* two TSC reads per iteration (~10 ns) buy the busy-time figure bench/dp reports */
		uint64_t tsc0 = rte_rdtsc();
		now = now_ns();
		/* line facts: one acquire load per burst; the table's epoch never runs behind */
		lc->ictx.lines = atomic_load_explicit(&dp_g.b->linefacts, memory_order_acquire);
		uint32_t ep = fg_linefacts_epoch(lc->ictx.lines);
		if ((int32_t)(ep - lc->slots.epoch) > 0)
			lc->slots.epoch = ep;

		unsigned work = dp_rx_burst(lc, now);
		work += dp_shard_inbox_poll(lc, now);
		work += dp_lane_poll(lc, now);
		if (now >= lc->next_timer_ns) {
			dp_shard_timers(lc, now);
			lc->next_timer_ns = now + 1000000ull;
		}
		if (lc->ack_now || now >= lc->next_ack_ns) {
			dp_reply_ack_flush(lc);
			lc->ack_now = false;
			lc->next_ack_ns = now + dp_g.ack_interval_ns;
		}
		dp_tx_flush(lc);
		dp_lane_wake(lc);
		if (work) {
			dp_xcount(lc->xk, DP_X_BUSY_CYCLES, rte_rdtsc() - tsc0);
			idle = 0;
		} else if (dp_g.prof.idle_sleep_us && ++idle >= 64) {
			rte_delay_us_sleep(dp_g.prof.idle_sleep_us);
		}
	}
	dp_reply_ack_flush(lc);
	dp_tx_flush(lc);
	dp_lane_wake(lc);
	return 0;
}

/* dp_lcore.c - the poll loop of one lcore: policy only, in the shape of
 * DPDK l3fwd's main loop. Each iteration: refresh the published line facts,
 * receive a burst (dp_rx.c), take frames other lcores handed over
 * (dp_io_dpdk.c), take the control plane's messages (dp_lanes.c), let the
 * shard run its timers and ACK flushes (dp_shard_tick), wake the control
 * plane if this iteration gave it something while it slept (dp_lanes.c),
 * then send the TX buffer (dp_tx.c). While packets the TX queue refused
 * wait in that buffer, the next iterations receive nothing (TX
 * back-pressure, dp_tx.c, at most [port] tx_hold_ms).
 *
 * Who may call: dp_lcore_main runs on its own EAL lcore, launched by
 * dp_start; it touches only that lcore's struct dp_lcore, the shared
 * read-only dp_g, MP-safe mempools and the owner lcores' MP/SC inbox rings.
 * Nothing here allocates from the heap, locks or logs; the only syscalls are
 * clock_gettime (vDSO), the eventfd write of dp_lane_wake (only on the
 * control plane's empty -> non-empty edge) and, when [poll] idle_sleep_us
 * is set, a sleep after idle_polls empty polls, or with [poll] idle_wake
 * a ppoll() (dp_idle.c) (and one prctl at start, below).
 *
 * Idle ([poll], docs/dataplane.md): idle_sleep_us = 0 polls without pause
 * (a whole core, the lowest latency). Otherwise, after idle_polls empty
 * polls, each further empty iteration sleeps idle_sleep_us, or with
 * idle_backoff 1, 2, 4 ... us up to idle_sleep_us; any work resets it.
 * Cost: a packet that arrives during a sleep waits for its end, at most
 * the current sleep (+ the 1 us timer slack set here, + the scheduler's
 * wake-up); fully backed off, half the cap on average. With idle_wake the
 * lcore instead, after idle_wake_after_us without work (so steady traffic,
 * from the wire or the control plane, never finds it asleep), waits
 * in ppoll() until a packet, a message from the control plane or a handed
 * frame arrives, or its next timer is due: the cost is one wake-up of a
 * sleeping thread (dp_idle.h); drivers without an RX socket keep the
 * sleeps above. */
#include <sys/prctl.h>

#include <rte_cycles.h>
#include <rte_mempool.h>

#include "dp_idle.h"
#include "dp_internal.h"
#include "dp_lanes.h"
#include "dp_reply.h"
#include "dp_rx.h"
#include "dp_shard.h"
#include "dp_tx.h"

int dp_lcore_main(void *arg)
{
	struct dp_lcore *lc = arg;
	unsigned idle = 0;
	uint32_t sleep_us = 1;
	uint64_t now = dp_clock_ns();
	/* [poll] idle_wake and this lcore has something to wait on (dp.c) */
	bool can_wait = lc->lane->wake.has_fd;
	uint64_t wait_after = (uint64_t)dp_g.prof.idle_wake_after_us * 1000u, last_work = now;
	/* the default 50 us timer slack would stretch every short sleep to
	 * ~55 us: 1 us keeps the backoff's first steps short */
	if (dp_g.prof.idle_sleep_us)
		(void)prctl(PR_SET_TIMERSLACK, 1000ul, 0, 0, 0);
	lc->next_ack_ns = now + dp_g.ack_interval_ns;
	lc->next_timer_ns = now + 1000000ull;
	lc->mbuf_cache = rte_mempool_default_cache(dp_g.mbufs, rte_lcore_id()); /* io->kept_put's */

	while (!atomic_load_explicit(&dp_g.b->stop, memory_order_relaxed)) {
		/* two TSC reads per iteration (~10 ns) buy the busy-time figure bench/dp reports */
		uint64_t tsc0 = rte_rdtsc();
		now = dp_clock_ns();
		/* line facts: one acquire load per burst; the table's epoch never runs behind */
		lc->ictx.lines = atomic_load_explicit(&dp_g.b->linefacts, memory_order_acquire);
		uint32_t ep = fg_linefacts_epoch(lc->ictx.lines);
		if ((int32_t)(ep - lc->slots.epoch) > 0)
			lc->slots.epoch = ep;

		/* TX back-pressure (dp_tx.c): while packets the TX queue refused
		 * wait, receive nothing, for at most [port] tx_hold_ms */
		bool held = lc->n_tx != 0 && dp_tx_held(lc, now);
		unsigned work = held ? 1u : dp_rx_burst(lc, now);
		work += dp_inbox_poll(lc, now);
		work += dp_lane_poll(lc, now);
		dp_shard_tick(lc, now);
		/* The control plane before the wire: the eventfd write (only when
		 * it sleeps and somebody waits on what we pushed) is one syscall,
		 * the TX flush of a resolved seed's datagrams through a veth can
		 * be ten times that, and the TLS subscriber's seed waits on it. */
		if (lc->lane_sent)
			dp_lane_wake(lc);
		dp_inbox_kick(lc);
		if (lc->n_tx)
			dp_tx_send(lc, held, now);
		if (work) {
			dp_xcount(lc->xk, DP_X_BUSY_CYCLES, rte_rdtsc() - tsc0);
			idle = 0;
			sleep_us = 1;
			last_work = now;
		} else if (can_wait) {
			if (now - last_work >= wait_after)
				dp_idle_wait(lc, now);
		} else if (dp_g.prof.idle_sleep_us && ++idle >= dp_g.prof.idle_polls) {
			idle = dp_g.prof.idle_polls; /* no wrap on a long idle period */
			if (!dp_g.prof.idle_backoff) {
				rte_delay_us_sleep(dp_g.prof.idle_sleep_us);
			} else {
				rte_delay_us_sleep(sleep_us);
				sleep_us = RTE_MIN(sleep_us * 2, dp_g.prof.idle_sleep_us);
			}
			dp_lc_xcount(lc, DP_X_IDLE_SLEEPS);
		}
	}
	dp_reply_ack_flush(lc);
	(void)dp_tx_flush(lc);
	dp_tx_drop(lc);
	dp_tx_stash_release(lc);
	dp_lane_wake(lc);
	dp_inbox_kick(lc);
	struct timespec cpu;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		dp_xcount(lc->xk, DP_X_THREAD_CPU_NS, (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec);
	return 0;
}

/* dp_idle.c - the idle lcore's wait ([poll] idle_wake, dp_idle.h); the
 * socket it waits on is found at port setup (dp_idle_fd.h). */
#include <errno.h>
#include <stdbool.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_ring.h>

#include "dp_idle.h"

/* The longest wait when nothing is pending: only a stop or a reload of
 * the line facts (read at the next iteration) would come unannounced, and
 * dp_stop writes the eventfd. */
#define DP_IDLE_QUIET_NS (100ull * 1000 * 1000)

/* Nothing this lcore's timers would act on (dp_shard.c, timers and the ACK
 * flush): no open slot (its deadline), no reassembly context (its
 * timeout), no eviction or abandoned slot left to report, no delivery
 * waiting for its consumer's ACK (its resend), no ACK waiting to be sent.
 * Then the wait needs no timer of its own; the next iteration runs the
 * timers at once (their time has passed) and they find nothing. */
static bool quiet(const struct dp_lcore *lc)
{
	return lc->slots.in_use == 0 && lc->reasm.n_active == 0 && lc->reasm.n_done == 0 &&
	       lc->reasm.evict_unreported == 0 && lc->slots.abandoned == lc->abandoned_seen && lc->dlv.n == 0 &&
	       lc->ack.n_dirty == 0 && !lc->ack_now;
}

void dp_idle_wait(struct dp_lcore *lc, uint64_t now)
{
	struct fg_wake *w = &lc->lane->wake;
	uint64_t due = quiet(lc) ? now + DP_IDLE_QUIET_NS : RTE_MIN(lc->next_timer_ns, lc->next_ack_ns);
	if (lc->ack_now || due <= now)
		return;
	/* Announce the sleep, then re-check what a producer may have pushed
	 * (boundary.h, struct fg_wake: either we see its push here or it sees
	 * the flag and writes the eventfd). */
	fg_wake_prepare(w);
	if (fg_ring_count(lc->lane->to_dp) || (lc->inbox && rte_ring_count(lc->inbox))) {
		fg_wake_cancel(w);
		return;
	}
	uint64_t ns = due - now;
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull), .tv_nsec = (long)(ns % 1000000000ull)};
	struct pollfd p[2] = {{.fd = lc->wait_fd, .events = POLLIN}, {.fd = w->fd, .events = POLLIN}};
	int r = ppoll(p, 2, &ts, NULL);
	fg_wake_cancel(w);
	dp_lc_xcount(lc, DP_X_IDLE_WAITS);
	if (r <= 0) {
		/* 0: the timer is due; <0: EINTR (a signal), the loop goes on */
		dp_lc_xcount(lc, DP_X_IDLE_WAKE_TIMER);
		return;
	}
	if (p[0].revents)
		dp_lc_xcount(lc, DP_X_IDLE_WAKE_RX);
	if (p[1].revents & POLLIN) {
		uint64_t v;
		/* resets the count (non-blocking: a racing second read finds 0) */
		(void)!read(w->fd, &v, sizeof(v));
		dp_lc_xcount(lc, DP_X_IDLE_WAKE_LANE);
	}
}

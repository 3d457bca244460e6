/* dp_idle.c - the idle lcore's wait ([poll] idle_wake, dp_idle.h); the
 * socket it waits on is found at port setup (dp_idle_fd.h). */
#include <errno.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_ring.h>

#include "dp_idle.h"

void dp_idle_wait(struct dp_lcore *lc, uint64_t now)
{
	struct fg_wake *w = &lc->lane->wake;
	uint64_t due = RTE_MIN(lc->next_timer_ns, lc->next_ack_ns);
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

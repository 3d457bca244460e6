/* dp_burst_guard.c - the grace period before a PMD's shared memory is
 * unmapped under a running lcore (see dp_burst_guard.h for why). */
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_interrupts.h>
#include <rte_pause.h>

#include "dp_burst_guard.h"

struct dp_burst_guard dp_guards[DP_GUARD_MAX];
_Atomic bool dp_guard_on;
_Atomic unsigned dp_guard_n;
static struct dp_xcounters *guard_xk; /* [dp_guard_n] */

void dp_burst_guard_set(unsigned n, struct dp_xcounters *xk)
{
	if (n > DP_GUARD_MAX || !xk)
		n = 0;
	atomic_store(&dp_guard_on, false);
	guard_xk = xk;
	atomic_store(&dp_guard_n, n);
	atomic_store(&dp_guard_on, n > 0);
}

void dp_burst_guard_quiesce(void)
{
	/* pairs with the fence in dp_burst_enter: either the lcore's odd
	 * sequence is seen here, or its burst reads the PMD's cleared flag */
	atomic_thread_fence(memory_order_seq_cst);
	unsigned n = atomic_load(&dp_guard_n);
	uint64_t give_up = rte_get_timer_cycles() + rte_get_timer_hz();
	for (unsigned i = 0; i < n; i++) {
		uint64_t s = atomic_load_explicit(&dp_guards[i].seq, memory_order_acquire);
		if (!(s & 1))
			continue;
		atomic_fetch_add_explicit(&guard_xk[i].x[DP_X_GUARD_WAITS], 1, memory_order_relaxed);
		while (atomic_load_explicit(&dp_guards[i].seq, memory_order_acquire) == s) {
			if (rte_get_timer_cycles() > give_up) {
				atomic_fetch_add_explicit(&guard_xk[i].x[DP_X_GUARD_TIMEOUTS], 1, memory_order_relaxed);
				break;
			}
			rte_pause();
		}
	}
}

/* The interposed munmap: the executable's definition comes before libc's
 * for every shared object (the PMDs are loaded with dlopen and call munmap
 * through the PLT); glibc's own internal unmaps (malloc) do not come here.
 * Sanitizer builds keep their runtime's interceptor instead (no guard:
 * DP_GUARD_INTERPOSE, dp_burst_guard.h). */
#if DP_GUARD_INTERPOSE
int munmap(void *addr, size_t len)
{
	if (atomic_load_explicit(&dp_guard_on, memory_order_acquire) && rte_thread_is_intr())
		dp_burst_guard_quiesce();
	return (int)syscall(SYS_munmap, addr, len);
}
#endif

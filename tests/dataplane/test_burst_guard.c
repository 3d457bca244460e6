/* test_burst_guard.c - dp_burst_guard.h against a real net_memif peer that
 * leaves while an lcore is inside a burst on the port.
 *
 * This process is the memif server (as fanogate-dp in bench/cap); a second
 * process (this program again, "peer" mode) is the client. An lcore enters
 * the guarded window and calls rte_eth_rx_burst, as the poll loop does,
 * and stays inside; the peer is then killed. The server's EAL interrupt
 * thread sees its control channel close and unmaps the peer's memory
 * (memif_disconnect -> memif_free_regions -> munmap). The lcore then
 * reads every mapping of that memory, as a burst in progress would.
 *
 *   guard      (the default, what dp.c does on net_memif): the unmap must
 *              wait for the lcore (dp_burst_guard_waits_total = 1, no
 *              timeout), the reads must succeed, and the memory must be
 *              unmapped once the lcore left its burst.
 *   unguarded  the same with the guard off: the unmap does not wait and
 *              the lcore's read must fault. This is the reproduction: it
 *              shows the first mode passes because of the guard, not by
 *              luck of timing.
 *
 * A read that faults is caught (SIGSEGV handler, siglongjmp), so either
 * mode reports instead of crashing.
 * Usage: test_burst_guard [guard|unguarded]; exit 77 when the EAL or the
 * memif PMD cannot run here, or under a sanitizer (no interposed munmap). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include "dp_burst_guard.h"

extern char **environ;

#define MAX_MAPS 16

static struct {
	uintptr_t addr[MAX_MAPS];
	unsigned n;
} maps;

static struct dp_xcounters xk[1];
static bool guarded;
static uint16_t port;
static _Atomic int inside;   /* the lcore is inside its burst */
static _Atomic int lcore_rc; /* 0 read fine, 1 read faulted, -1 gave up waiting */
static sigjmp_buf probe_jmp;
static volatile sig_atomic_t probing;

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The start addresses of this process's mappings of the memif peer's
 * memory (the peer's memfd, "/memfd:memif_region_N" in 22.11). Returns
 * how many. */
static unsigned memif_maps(uintptr_t *addr, unsigned max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned n = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if ((strstr(line, "memif_region") || strstr(line, "memif region")) && n < max)
			addr[n++] = (uintptr_t)strtoull(line, NULL, 16);
	fclose(f);
	return n;
}

static void on_segv(int sig)
{
	(void)sig;
	if (probing)
		siglongjmp(probe_jmp, 1);
	_exit(2);
}

/* The lcore: inside a burst while the peer leaves. */
static int lcore_fn(void *arg)
{
	(void)arg;
	struct rte_mbuf *m[32];
	dp_burst_enter(0);
	uint16_t n = rte_eth_rx_burst(port, 0, m, 32);
	if (n)
		rte_pktmbuf_free_bulk(m, n);
	atomic_store(&inside, 1);
	/* the unmap has begun: with the guard it waits for us (counted), without
	 * it the mappings are gone */
	uint64_t give_up = mono_ms() + 10000;
	for (;;) {
		uintptr_t now[MAX_MAPS];
		if (guarded ? atomic_load_explicit(&xk[0].x[DP_X_GUARD_WAITS], memory_order_relaxed) > 0
			    : memif_maps(now, MAX_MAPS) < maps.n)
			break;
		if (mono_ms() > give_up) {
			atomic_store(&lcore_rc, -1);
			dp_burst_leave(0);
			return 0;
		}
	}
	/* what a burst still running reads: the rings and buffers */
	int rc = 0;
	probing = 1;
	if (sigsetjmp(probe_jmp, 1) == 0) {
		for (unsigned i = 0; i < maps.n; i++)
			(void)*(volatile const uint8_t *)maps.addr[i];
	} else {
		rc = 1;
	}
	probing = 0;
	atomic_store(&lcore_rc, rc);
	dp_burst_leave(0);
	return 0;
}

static int start_port(struct rte_mempool *mp)
{
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof(conf));
	if (rte_eth_dev_count_avail() < 1)
		return -ENODEV;
	RTE_ETH_FOREACH_DEV(port)
	break;
	if (rte_eth_dev_configure(port, 1, 1, &conf) < 0 ||
	    rte_eth_rx_queue_setup(port, 0, 256, (unsigned)rte_eth_dev_socket_id(port), NULL, mp) < 0 ||
	    rte_eth_tx_queue_setup(port, 0, 256, (unsigned)rte_eth_dev_socket_id(port), NULL) < 0 ||
	    rte_eth_dev_start(port) < 0)
		return -EIO;
	return 0;
}

static int eal(const char *role, const char *sock, unsigned lcores)
{
	char prefix[64], vdev[512], lc[16];
	snprintf(prefix, sizeof(prefix), "--file-prefix=fgbg%d", (int)getpid());
	snprintf(vdev, sizeof(vdev), "--vdev=net_memif0,role=%s,id=0,socket=%s,bsize=2048,rsize=8", role, sock);
	snprintf(lc, sizeof(lc), lcores > 1 ? "0,1" : "0");
	char *argv[] = {"test_burst_guard", "-l", lc, "--no-huge", "-m", "128", "--no-shconf", prefix, "--no-pci",
			vdev, "--log-level=*:error", NULL};
	return rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])) - 1, argv);
}

/* "peer" mode: the memif client, connected until killed. */
static int peer(const char *sock)
{
	if (eal("client", sock, 1) < 0)
		return 77;
	struct rte_mempool *mp = rte_pktmbuf_pool_create("peer", 1024, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	if (!mp || start_port(mp) < 0)
		return 77;
	for (;;)
		pause();
}

static bool link_up(void)
{
	struct rte_eth_link l;
	return rte_eth_link_get_nowait(port, &l) == 0 && l.link_status == RTE_ETH_LINK_UP;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "peer"))
		return peer(argv[2]);
	if (!DP_GUARD_INTERPOSE) {
		printf("SKIP: sanitizer build: munmap is the sanitizer's, not interposed\n");
		return 77;
	}
	guarded = !(argc >= 2 && !strcmp(argv[1], "unguarded"));
	char dir[] = "/tmp/fgbgXXXXXX", sock[64];
	if (!mkdtemp(dir))
		return 1;
	snprintf(sock, sizeof(sock), "%s/memif.sock", dir);
	int rc = 1;
	pid_t pid = -1;
	if (eal("server", sock, 2) < 0) {
		printf("SKIP: the EAL cannot start here\n");
		rmdir(dir);
		return 77;
	}
	struct rte_mempool *mp = rte_pktmbuf_pool_create("srv", 1024, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, 0);
	if (!mp || start_port(mp) < 0) {
		printf("SKIP: no net_memif port\n");
		rc = 77;
		goto out;
	}
	bool unchecked;
	if (!dp_burst_guard_needed("net_memif", &unchecked)) {
		printf("FAIL: dp_burst_guard_needed says DPDK %s needs no guard on net_memif\n", rte_version());
		goto out;
	}
	dp_burst_guard_set(guarded ? 1 : 0, xk);
	struct sigaction sa = {.sa_handler = on_segv};
	sigaction(SIGSEGV, &sa, NULL);
	char *pargv[] = {"/proc/self/exe", "peer", sock, NULL};
	if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, pargv, environ) != 0) {
		printf("FAIL: cannot start the peer\n");
		goto out;
	}
	uint64_t until = mono_ms() + 20000;
	while (!link_up() && mono_ms() < until) {
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid) {
			pid = -1;
			printf("SKIP: the memif peer could not start (exit %d)\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
			rc = 77;
			goto out;
		}
		usleep(1000);
	}
	if (!link_up()) {
		printf("FAIL: the memif link did not come up in 20 s\n");
		goto out;
	}
	maps.n = memif_maps(maps.addr, MAX_MAPS);
	if (!maps.n) {
		printf("FAIL: no mapping of the peer's memory found in /proc/self/maps\n");
		goto out;
	}
	unsigned lcore = rte_get_next_lcore(-1, 1, 0);
	if (rte_eal_remote_launch(lcore_fn, NULL, lcore) < 0) {
		printf("FAIL: cannot launch the lcore\n");
		goto out;
	}
	while (!atomic_load(&inside))
		usleep(100);
	kill(pid, SIGKILL); /* the peer leaves while the lcore is inside its burst */
	waitpid(pid, NULL, 0);
	pid = -1;
	rte_eal_wait_lcore(lcore);
	int lr = atomic_load(&lcore_rc);
	uint64_t waits = atomic_load(&xk[0].x[DP_X_GUARD_WAITS]), timeouts = atomic_load(&xk[0].x[DP_X_GUARD_TIMEOUTS]);
	uintptr_t left[MAX_MAPS];
	until = mono_ms() + 10000;
	while (memif_maps(left, MAX_MAPS) && mono_ms() < until)
		usleep(1000);
	unsigned n_left = memif_maps(left, MAX_MAPS);
	printf("%s: %u mappings of the peer's memory; lcore read %s; guard waits %llu, timeouts %llu; %u mappings left\n",
	       guarded ? "guard" : "unguarded", maps.n, lr == 0 ? "fine" : lr == 1 ? "FAULTED" : "(gave up waiting)",
	       (unsigned long long)waits, (unsigned long long)timeouts, n_left);
	if (lr < 0) {
		printf("FAIL: the peer's memory was not unmapped within 10 s of its exit\n");
	} else if (guarded) {
		if (lr == 0 && waits >= 1 && timeouts == 0 && n_left == 0) {
			printf("PASS: the unmap waited for the burst, then happened\n");
			rc = 0;
		} else {
			printf("FAIL: with the guard the read must succeed, the unmap wait (once, no timeout) and then happen\n");
		}
	} else if (lr == 1) {
		printf("PASS: without the guard the unmap under a running burst faults (reproduced)\n");
		rc = 0;
	} else {
		printf("FAIL: without the guard the read did not fault: not reproduced\n");
	}
out:
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	dp_burst_guard_set(0, NULL);
	unlink(sock);
	rmdir(dir);
	fflush(stdout);
	/* no rte_eal_cleanup: the port's peer is gone, nothing to hand back */
	_exit(rc);
}

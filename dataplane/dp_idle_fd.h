/* dp_idle_fd.h - finding the kernel socket an RX queue receives on, for the
 * idle lcore's wait ([poll] idle_wake, dp_idle.h). Pure POSIX, no DPDK.
 *
 * Why: in DPDK 22.11 neither net_af_xdp nor net_af_packet (nor net_memif)
 * implements rte_eth_dev_rx_intr_enable, but each receives through a kernel
 * socket (AF_XDP; AF_PACKET with PACKET_MMAP) whose poll() reports a
 * non-empty receive ring, and neither PMD hands that fd out. So dp.c finds
 * it: af_xdp creates queue q's socket in rte_eth_rx_queue_setup(q), so the
 * one AF_XDP socket that appears across that call is q's; af_packet
 * creates one socket per queue at probe, in queue order, so the i-th
 * AF_PACKET socket (ascending fd) is queue i's.
 *
 * Who may call: the init thread (port setup). */
#ifndef DP_IDLE_FD_H
#define DP_IDLE_FD_H

#define DP_IDLE_MAX_SOCKS 256

/* The process's open sockets of address family `family` (AF_XDP,
 * AF_PACKET, ...), ascending, read from /proc/self/fd. Returns how many
 * were stored (at most max), or -errno. */
int dp_idle_socks(int family, int *fds, int max);

/* The one fd of after[0..n_after) that is not in before[0..n_before), or
 * -1 when there is none or more than one (not ours to guess). */
int dp_idle_new_fd(const int *before, int n_before, const int *after, int n_after);

#endif

/* dp.c - dataplane lifecycle: EAL start-up from a drivers-config profile,
 * the port, mempools, per-lcore state and the boundary lanes (dp_init),
 * launching the poll lcores (dp_start), and teardown with a final report
 * (dp_stop).
 *
 * Who may call: one thread (the control plane's main thread, or
 * fanogate-dp's main), in the order init, start, stop. Logs through RTE_LOG
 * once per failure, at this edge. */
#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_cycles.h>
#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_devargs.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_memory.h>
#include <rte_pdump.h>

#include "dp_burst_guard.h"
#include "dp_idle_fd.h"
#include "dp_internal.h"
#include "dp_neigh.h"
#include "dp_shard.h"
#include "dp_tx.h"

#define DP_LOG(level, fmt, ...) RTE_LOG(level, USER1, "dataplane: " fmt "\n", ##__VA_ARGS__)

struct dp_state dp_g;

const char *dp_xcounter_name(enum dp_xcounter c)
{
	return (unsigned)c < DP_X__COUNT && fg_dp_xcounter_defs[c].name ? fg_dp_xcounter_defs[c].name : "unknown";
}

/* ---- the log bridge (dp_log_to) ------------------------------------------ */

/* A stdio stream whose writes are cut into lines and handed to the sink
 * with the level of the message being logged (rte_log_cur_msg_loglevel:
 * per thread, set by rte_vlog before it formats). stdio's stream lock
 * serialises the writes, so the partial-line buffer needs no lock of its
 * own. */
static struct {
	void (*fn)(int prio, const char *line);
	char part[2048];
	size_t n;
} log_bridge;

static void log_bridge_flush(void)
{
	const char *line = log_bridge.part;
	log_bridge.part[log_bridge.n] = 0;
	if (!strncmp(line, "USER1: ", 7))
		line += 7; /* the dataplane's own lines: DP_LOG names the part */
	int lv = rte_log_cur_msg_loglevel();
	log_bridge.fn(lv >= 1 && lv <= 8 ? lv - 1 : 6, line);
	log_bridge.n = 0;
}

static ssize_t log_bridge_write(void *cookie, const char *buf, size_t size)
{
	(void)cookie;
	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '\n') {
			log_bridge_flush();
			continue;
		}
		if (log_bridge.n < sizeof(log_bridge.part) - 1)
			log_bridge.part[log_bridge.n++] = buf[i];
	}
	return (ssize_t)size;
}

int dp_log_to(void (*fn)(int prio, const char *line))
{
	static const cookie_io_functions_t io = {.write = log_bridge_write};
	if (!fn)
		return -EINVAL;
	log_bridge.fn = fn;
	FILE *f = fopencookie(NULL, "w", io);
	if (!f)
		return -errno;
	setvbuf(f, NULL, _IOLBF, 0);
	return rte_openlog_stream(f) == 0 ? 0 : -EINVAL;
}

/* ---- EAL arguments -------------------------------------------------------- */

struct argv_buf {
	char *v[128];
	int n;
	char store[8192];
	size_t used;
};

static int arg_add(struct argv_buf *a, const char *s)
{
	size_t l = strlen(s) + 1;
	if (a->n >= 127 || a->used + l > sizeof(a->store))
		return -E2BIG;
	memcpy(a->store + a->used, s, l);
	a->v[a->n++] = a->store + a->used;
	a->v[a->n] = NULL;
	a->used += l;
	return 0;
}

/* A network interface with no device behind it (/sys/class/net/IF has no
 * "device" link): veth, bridge, tun; none of them runs AF_XDP zero-copy. */
static bool iface_virtual(const char *iface)
{
	char path[128];
	snprintf(path, sizeof(path), "/sys/class/net/%s", iface);
	if (access(path, F_OK) != 0)
		return false; /* unknown here: leave the PMD its default, it reports the name */
	snprintf(path, sizeof(path), "/sys/class/net/%s/device", iface);
	return access(path, F_OK) != 0;
}

/* A hugetlbfs mount for 2 MiB pages, from /proc/mounts. */
static bool hugetlbfs_mounted(const char *want_dir)
{
	FILE *f = fopen("/proc/mounts", "r");
	char dev[256], dir[256], type[64], opts[512];
	bool found = false;
	if (!f)
		return false;
	while (fscanf(f, "%255s %255s %63s %511s %*d %*d", dev, dir, type, opts) == 4) {
		if (strcmp(type, "hugetlbfs"))
			continue;
		if (strstr(opts, "pagesize=1G") || strstr(opts, "pagesize=1024M"))
			continue;
		if (want_dir && *want_dir && strcmp(want_dir, dir))
			continue;
		found = true;
		break;
	}
	fclose(f);
	return found;
}

static uint64_t read_u64_file(const char *path)
{
	FILE *f = fopen(path, "r");
	unsigned long long v = 0;
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* Memory the dataplane will ask the EAL for, in bytes (without DPDK's own). */
static uint64_t memory_needed(const struct dp_state *g, uint32_t n_mbufs, uint32_t n_xfer)
{
	struct dp_reasm_cfg rc = {.contexts = g->cfg.reasm_contexts, .chunk = g->chunk, .frame_max = g->frame_max};
	uint64_t per_lcore = fg_slots_mem_size(&g->scfg) + dp_tx_ref_mem_size(g->scfg.capacity) +
			     dp_reasm_mem_size(&rc) + dp_ack_mem_size(g->prof.ack_peers) +
			     dp_dlv_mem_size(g->cfg.delivery_pending_max ? g->cfg.delivery_pending_max : 1) +
			     sizeof(struct dp_lcore) + g->frame_max + 65536;
	uint64_t lanes = 2ull * fg_ring_mem_size(g->prof.lane_ring, sizeof(union fg_bmsg)) +
			 2ull * fg_pool_mem_size(g->prof.lane_bufs, g->frame_max);
	uint64_t rings = (uint64_t)g->prof.handoff_ring * 8 + 4096;
	return (uint64_t)g->n * (per_lcore + lanes + rings) + (uint64_t)n_mbufs * (RTE_MBUF_DEFAULT_BUF_SIZE + 256) +
	       (uint64_t)n_xfer * (g->frame_max + DP_XFER_HDR + DP_RA_KEEP_LIST + 64);
}

static int build_eal_args(struct dp_state *g, struct argv_buf *a, uint64_t need_bytes)
{
	const struct dp_profile *p = &g->prof;
	char tmp[512];
	int rc = 0;
	uint64_t need_mb = need_bytes / (1024 * 1024) + 128; /* + DPDK's own heap and telemetry */
	if (p->memory_mb)
		need_mb = p->memory_mb;

	rc |= arg_add(a, "fanogate-dp");
	rc |= arg_add(a, "--log-level");
	rc |= arg_add(a, p->log_level);
	/* Hugepages: only when a 2 MiB hugetlbfs mount exists and has enough free pages. */
	uint64_t free_pages = read_u64_file("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages");
	bool mount = hugetlbfs_mounted(p->huge_dir);
	bool huge = p->hugepages != DP_HUGE_OFF && mount && free_pages * 2 >= need_mb;
	if (p->hugepages == DP_HUGE_ON && !huge) {
		DP_LOG(ERR, "%s: hugepages = on but %s (%llu free 2 MiB pages, %llu MiB needed)", p->path,
		       mount ? "not enough are free" : "no 2 MiB hugetlbfs is mounted", (unsigned long long)free_pages,
		       (unsigned long long)need_mb);
		return -ENOMEM;
	}
	if (huge) {
		rc |= arg_add(a, "--file-prefix");
		if (p->multiprocess) {
			rc |= arg_add(a, p->file_prefix);
		} else {
			/* a private prefix: the telemetry socket is then
			 * /var/run/dpdk/fgdp<pid>/dpdk_telemetry.v2, removed at dp_stop */
			snprintf(tmp, sizeof(tmp), "fgdp%d", (int)getpid());
			rc |= arg_add(a, tmp);
			rc |= arg_add(a, "--in-memory");
			g->own_prefix = true;
		}
		if (p->huge_dir[0]) {
			rc |= arg_add(a, "--huge-dir");
			rc |= arg_add(a, p->huge_dir);
		}
	} else {
		if (p->hugepages == DP_HUGE_AUTO)
			DP_LOG(WARNING,
			       "no usable hugepages (%s, %llu free 2 MiB pages, %llu MiB needed): running with --no-huge "
			       "(slower, not for production; dpdk-dumpcap cannot attach)",
			       mount ? "hugetlbfs mounted" : "no hugetlbfs mount", (unsigned long long)free_pages,
			       (unsigned long long)need_mb);
		rc |= arg_add(a, "--no-huge");
		rc |= arg_add(a, "--no-shconf");
		rc |= arg_add(a, "-m");
		snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)need_mb);
		rc |= arg_add(a, tmp);
		rc |= arg_add(a, "--file-prefix");
		snprintf(tmp, sizeof(tmp), "fgdp%d", (int)getpid());
		rc |= arg_add(a, tmp);
		g->own_prefix = true;
	}
	g->hugepages = huge;
	rc |= arg_add(a, "--lcores");
	if (p->lcores[0]) {
		rc |= arg_add(a, p->lcores);
	} else {
		/* dp_lcores_default: the control thread off the CPUs the poll
		 * lcores spin on when there are CPUs left (woken on a spinning
		 * CPU it waits for the spinner's time slice, milliseconds). */
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		if (dp_lcores_default(tmp, sizeof(tmp), ncpu, g->n) < 0)
			return -E2BIG;
		rc |= arg_add(a, tmp);
	}
	for (unsigned i = 0; i < p->n_vdev; i++) {
		char vdev[DP_PROFILE_STR + 32];
		int t = dp_vdev_tune(p->vdev[i], iface_virtual, vdev, sizeof(vdev));
		if (t < 0)
			return -E2BIG;
		if (t > 0)
			DP_LOG(NOTICE, "%s: virtual interface, AF_XDP in copy mode: busy_budget=0 (no recvfrom() per empty "
				       "RX burst; write busy_budget= in the vdev to choose)", vdev);
		rc |= arg_add(a, "--vdev");
		rc |= arg_add(a, vdev);
	}
	for (unsigned i = 0; i < p->n_pci; i++) {
		rc |= arg_add(a, "-a");
		rc |= arg_add(a, p->pci[i]);
	}
	if (!p->n_pci)
		rc |= arg_add(a, "--no-pci");
	/* extra arguments, split on blanks */
	char extra[DP_PROFILE_STR];
	snprintf(extra, sizeof(extra), "%s", p->eal_args);
	for (char *save = NULL, *t = strtok_r(extra, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
		rc |= arg_add(a, t);
	return rc ? -E2BIG : 0;
}

/* ---- port ---------------------------------------------------------------- */

/* net_af_packet (DPDK 22.11) creates each queue's ETH_P_ALL socket and its
 * RX ring before bind()ing it to the interface, so the ring starts with
 * whatever crossed ANY interface in that window (loopback TCP, other links'
 * multicast): seen in the veth tests as stray "malformed" and "not allowed"
 * packets. They are not input from this port: discard them once, before the
 * lcores start counting, and say how many. (Only af_packet: a pcap or ring
 * port's first packets are real input.) */
static void drain_unbound_af_packet(struct dp_state *g, uint16_t pid, const char *driver)
{
	if (strcmp(driver, "net_af_packet") != 0)
		return;
	struct rte_mbuf *pk[32];
	uint64_t n = 0;
	for (uint16_t q = 0; q < g->n_rxq; q++)
		for (unsigned i = 0; i < 1024; i++) { /* bounded: the ring holds at most framecnt */
			uint16_t k = rte_eth_rx_burst(pid, q, pk, FG_ARRAY_LEN(pk));
			if (!k)
				break;
			rte_pktmbuf_free_bulk(pk, k);
			n += k;
		}
	if (n)
		DP_LOG(NOTICE, "port %u (%s): discarded %llu frames the sockets caught before they were bound "
			       "to the interface", pid, driver, (unsigned long long)n);
}

/* Whether the port sends a resolved seed by reference (dp_tx.h): a header
 * mbuf chained to one attached to the slot's body. It must take
 * multi-segment TX (RTE_ETH_TX_OFFLOAD_MULTI_SEGS), read each segment
 * where it lies into one frame and free the mbufs from its TX queue, on
 * the lcore that sends (dp_tx.c: the slot's unpin runs there). Two that
 * offer multi-segment TX do not: net_ring hands the mbufs themselves to
 * its receiver, which frees them on its own thread and sees the chain; a
 * zero-copy memif client hands every segment to the peer as a descriptor
 * into the first memseg list (22.11), whatever memory it is in, and the
 * peer receives a chain.
 * [port] delivery_by_ref = auto (the default) takes it on a hardware (PCI)
 * device only, whose DMA gathers the segments: a virtual device (memif,
 * af_packet, pcap, tap) copies every packet in its driver anyway, and
 * there a chain costs the driver more than the lcore's copy saves
 * (bench/cap/RESULTS.md). on: wherever it fits (tests, a driver measured to gain); off:
 * always copied. *why says what decided, for the log. */
static bool tx_by_ref_fits(const struct rte_eth_dev_info *info, enum dp_by_ref mode, const char **why)
{
	*why = "copied";
	if (mode == DP_BY_REF_OFF) {
		*why = "copied ([port] delivery_by_ref = off)";
		return false;
	}
	if (!(info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)) {
		*why = "copied (no multi-segment TX)";
		return false;
	}
	if (strcmp(info->driver_name, "net_ring") == 0)
		return false;
	if (strcmp(info->driver_name, "net_memif") == 0) {
		const struct rte_devargs *da = info->device ? rte_dev_devargs(info->device) : NULL;
		if (da && da->args && strstr(da->args, "zero-copy=yes"))
			return false;
	}
	if (mode == DP_BY_REF_AUTO) {
		const struct rte_bus *bus = info->device ? rte_dev_bus(info->device) : NULL;
		if (!bus || strcmp(rte_bus_name(bus), "pci") != 0) {
			*why = "copied (a virtual device copies in its driver; [port] delivery_by_ref = on to override)";
			return false;
		}
	}
	*why = "by reference (multi-segment TX)";
	return true;
}

/* IOVA of mem[0..len) minus its address when the range is IOVA-contiguous
 * (always with IOVA as VA; checked page by page with IOVA as PA), in *delta.
 * false: the NIC could not be told one address for a body: copy. */
static bool iova_contig(const void *mem, size_t len, uint64_t *delta)
{
	rte_iova_t base = rte_malloc_virt2iova(mem);
	if (base == RTE_BAD_IOVA)
		return false;
	if (rte_eal_iova_mode() != RTE_IOVA_VA) {
		const struct rte_memseg_list *msl = rte_mem_virt2memseg_list(mem);
		if (!msl || !msl->page_sz)
			return false;
		uintptr_t a = (uintptr_t)mem, end = a + len;
		for (uintptr_t pg = RTE_ALIGN_FLOOR(a, msl->page_sz); pg < end; pg += msl->page_sz) {
			uintptr_t at = pg < a ? a : pg;
			if (rte_mem_virt2iova((const void *)at) != base + (at - a))
				return false;
		}
	}
	*delta = (uint64_t)base - (uint64_t)(uintptr_t)mem;
	return true;
}

static int port_setup(struct dp_state *g)
{
	struct rte_eth_dev_info info;
	struct rte_eth_conf conf;
	int rc;
	uint16_t pid = RTE_MAX_ETHPORTS;
	unsigned nports = 0;
	uint16_t p;

	RTE_ETH_FOREACH_DEV(p)
	{
		if (pid == RTE_MAX_ETHPORTS)
			pid = p;
		nports++;
	}
	if (!nports) {
		DP_LOG(ERR, "%s: no port was probed%s%s (check [dataplane] port, the profile's vdev/pci lines and the device)",
		       g->prof.path, g->prof.port_used ? " for port " : "", g->prof.port_used ? g->prof.port : "");
		return -ENODEV;
	}
	if (nports > 1)
		DP_LOG(WARNING, "%u ports probed; the dataplane uses port %u only", nports, pid);
	g->port = pid;
	rc = rte_eth_dev_info_get(pid, &info);
	if (rc < 0) {
		DP_LOG(ERR, "port %u: dev_info: %s", pid, rte_strerror(-rc));
		return rc;
	}
	g->n_rxq = (uint16_t)RTE_MIN(g->n, (unsigned)info.max_rx_queues);
	g->n_txq = (uint16_t)g->n;
	if (info.max_tx_queues < g->n) {
		DP_LOG(ERR, "port %u (%s): %u TX queues, but [dataplane] lcores = %u needs one per lcore (raise the "
			    "device's queue count in the profile, e.g. qpairs= / queue_count= / one tx_pcap per lcore)",
		       pid, info.driver_name, info.max_tx_queues, g->n);
		return -EINVAL;
	}
	memset(&conf, 0, sizeof(conf));
	uint64_t rss_hf = (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP) & info.flow_type_rss_offloads;
	if (g->n_rxq > 1 && g->prof.rss && rss_hf) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_hf = rss_hf;
	} else if (g->n_rxq > 1) {
		DP_LOG(NOTICE, "port %u (%s): %u RX queues without device RSS; the driver spreads flows itself "
			       "(af_packet: PACKET_FANOUT_HASH)", pid, info.driver_name, g->n_rxq);
	}
	const char *by_ref_why;
	g->tx_by_ref = tx_by_ref_fits(&info, g->prof.delivery_by_ref, &by_ref_why);
	if (g->tx_by_ref)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	rc = rte_eth_dev_configure(pid, g->n_rxq, g->n_txq, &conf);
	if (rc < 0) {
		DP_LOG(ERR, "port %u (%s): configure %u rx / %u tx queues: %s", pid, info.driver_name, g->n_rxq,
		       g->n_txq, rte_strerror(-rc));
		return rc;
	}
	if (g->prof.mtu) {
		rc = rte_eth_dev_set_mtu(pid, (uint16_t)g->prof.mtu);
		if (rc < 0 && rc != -ENOTSUP)
			DP_LOG(WARNING, "port %u: set MTU %u: %s (kept the device's)", pid, g->prof.mtu, rte_strerror(-rc));
	}
	uint16_t rxd = g->prof.rx_desc, txd = g->prof.tx_desc;
	rc = rte_eth_dev_adjust_nb_rx_tx_desc(pid, &rxd, &txd);
	if (rc < 0) {
		DP_LOG(ERR, "port %u: descriptor counts: %s", pid, rte_strerror(-rc));
		return rc;
	}
	int socket = rte_eth_dev_socket_id(pid);
	if (socket < 0)
		socket = 0;
	/* [poll] idle_wake: the AF_XDP socket that appears across queue q's
	 * setup is q's (dp_idle_fd.h) */
	bool scan_xdp = g->prof.idle_wake && strcmp(info.driver_name, "net_af_xdp") == 0;
	static int before[DP_IDLE_MAX_SOCKS], after[DP_IDLE_MAX_SOCKS];
	for (uint16_t q = 0; q < g->n_rxq; q++) {
		int nb = scan_xdp ? dp_idle_socks(AF_XDP, before, DP_IDLE_MAX_SOCKS) : -1;
		rc = rte_eth_rx_queue_setup(pid, q, rxd, (unsigned)socket, NULL, g->mbufs);
		if (rc < 0) {
			DP_LOG(ERR, "port %u: rx queue %u: %s", pid, q, rte_strerror(-rc));
			return rc;
		}
		int na = nb >= 0 ? dp_idle_socks(AF_XDP, after, DP_IDLE_MAX_SOCKS) : -1;
		g->rxq_fd[q] = na >= 0 ? dp_idle_new_fd(before, nb, after, na) : -1;
	}
	/* af_packet opened one socket per queue at probe, in queue order */
	if (g->prof.idle_wake && strcmp(info.driver_name, "net_af_packet") == 0) {
		int n = dp_idle_socks(AF_PACKET, after, DP_IDLE_MAX_SOCKS);
		for (uint16_t q = 0; q < g->n_rxq; q++)
			g->rxq_fd[q] = n == (int)g->n_rxq ? after[q] : -1;
	}
	for (uint16_t q = 0; q < g->n_txq; q++) {
		rc = rte_eth_tx_queue_setup(pid, q, txd, (unsigned)socket, NULL);
		if (rc < 0) {
			DP_LOG(ERR, "port %u: tx queue %u: %s", pid, q, rte_strerror(-rc));
			return rc;
		}
	}
	bool unchecked;
	g->guard_bursts = dp_burst_guard_needed(info.driver_name, &unchecked);
	if (unchecked)
		DP_LOG(NOTICE, "port %u (%s): burst guard kept on: DPDK %s is newer than the releases checked for "
		       "unmapping under a running burst (dataplane/dp_burst_guard.h)", pid, info.driver_name, rte_version());
	g->driver = info.driver_name;
	DP_LOG(INFO, "port %u (%s): %u rx / %u tx queues, %u/%u descriptors, rss %s, deliveries %s", pid,
	       info.driver_name, g->n_rxq, g->n_txq, rxd, txd, conf.rxmode.mq_mode == RTE_ETH_MQ_RX_RSS ? "on" : "off",
	       by_ref_why);
	if (g->tx_by_ref) /* said at notice level: tests and operators read it */
		DP_LOG(NOTICE, "port %u (%s): deliveries by reference: resolved seeds sent from their slots", pid,
		       info.driver_name);
	return 0;
}

/* Start the port configured by port_setup. Called after every allocation
 * of dp_init: a started port receives, and a zero-copy memif client has
 * handed its memory to the peer once connected (22.11 closes the memseg
 * file then, so hugepage memory could no longer grow for the slots). */
static int port_start(struct dp_state *g)
{
	uint16_t pid = g->port;
	int rc = rte_eth_dev_start(pid);
	if (rc < 0) {
		DP_LOG(ERR, "port %u (%s): start: %s", pid, g->driver, rte_strerror(-rc));
		return rc;
	}
	drain_unbound_af_packet(g, pid, g->driver);
	g->mbufs_out_started = g->mbufs->size - rte_mempool_avail_count(g->mbufs);
	if (g->prof.promiscuous && rte_eth_promiscuous_enable(pid) < 0)
		DP_LOG(WARNING, "port %u: promiscuous mode refused", pid);
	if (rte_eth_macaddr_get(pid, &g->mac) < 0)
		memset(&g->mac, 0, sizeof(g->mac));
	DP_LOG(INFO, "port %u (%s): started, mac " RTE_ETHER_ADDR_PRT_FMT, pid, g->driver,
	       RTE_ETHER_ADDR_BYTES(&g->mac));
	return 0;
}

/* What the control plane shows operators (boundary.h, struct fg_port_facts). */
static void port_facts(const struct dp_state *g, struct fg_port_facts *f)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->profile, sizeof(f->profile), "%s", g->prof.path);
	snprintf(f->driver, sizeof(f->driver), "%s", g->driver ? g->driver : "");
	f->port_id = g->port;
	f->rx_queues = g->n_rxq;
	f->tx_queues = g->n_txq;
	f->lcores = (uint16_t)g->n;
	f->hugepages = g->hugepages;
	char name[RTE_ETH_NAME_MAX_LEN];
	if (rte_eth_dev_get_name_by_port(g->port, name) == 0)
		snprintf(f->device, sizeof(f->device), "%s", name);
	struct rte_eth_dev_info info;
	char ifn[IF_NAMESIZE];
	if (rte_eth_dev_info_get(g->port, &info) == 0 && info.if_index && if_indextoname(info.if_index, ifn))
		snprintf(f->ifname, sizeof(f->ifname), "%s", ifn);
	struct rte_eth_link link;
	if (rte_eth_link_get_nowait(g->port, &link) == 0) {
		f->link_up = link.link_status == RTE_ETH_LINK_UP;
		f->link_speed_mbps = link.link_speed == RTE_ETH_SPEED_NUM_UNKNOWN ? 0 : link.link_speed;
	}
}

/* ---- per-lcore state and lanes ------------------------------------------------ */

static void *xfer_get(void *arg)
{
	void *e;
	if (rte_mempool_get(arg, &e) < 0)
		return NULL;
	return dp_xfer_data(e);
}

static void xfer_put(void *arg, void *buf) { rte_mempool_put(arg, dp_xfer_of(buf)); }

/* Received mbufs a reassembly table kept (plain, of dp_g.mbufs: dp_rx.c)
 * given back by the table itself. */
static void kept_drop(void *arg, void *const *m, unsigned n)
{
	(void)arg;
	rte_mempool_put_bulk(dp_g.mbufs, m, n);
}

/* Received mbufs each lcore's reassembly may keep at once (a frame of a
 * seed another lcore owns, handed over as its fragments' mbufs instead of
 * a copy: dp_reasm.h): with several lcores, DP_KEEP_MAX each, which the
 * default pool has room for besides; with [port] mbufs set, a quarter of
 * that pool shared out, at most DP_KEEP_MAX each. */
#define DP_KEEP_MAX 2048u
static uint32_t keep_max_of(const struct dp_state *g)
{
	if (g->n < 2)
		return 0;
	if (!g->prof.mbufs)
		return DP_KEEP_MAX;
	return RTE_MIN(DP_KEEP_MAX, g->prof.mbufs / (4u * g->n));
}

/* Whether the port's received mbufs may outlive their burst (kept by
 * reassembly): not a zero-copy memif client's or an AF_XDP socket's,
 * whose buffers are the rings' shared memory. */
static bool rx_may_keep(const struct dp_state *g)
{
	struct rte_eth_dev_info info;
	if (rte_eth_dev_info_get(g->port, &info) != 0)
		return false;
	if (strcmp(info.driver_name, "net_af_xdp") == 0)
		return false;
	if (strcmp(info.driver_name, "net_memif") == 0) {
		const struct rte_devargs *da = info.device ? rte_dev_devargs(info.device) : NULL;
		if (da && da->args && strstr(da->args, "zero-copy=yes"))
			return false;
	}
	return true;
}

static int lane_setup(struct dp_state *g, unsigned i, struct fg_lane *lane)
{
	size_t ring = fg_ring_mem_size(g->prof.lane_ring, sizeof(union fg_bmsg));
	ring = (ring + 63) & ~(size_t)63;
	size_t pool = fg_pool_mem_size(g->prof.lane_bufs, g->frame_max);
	char name[32];
	snprintf(name, sizeof(name), "fgdp_lane%u", i);
	uint8_t *m = rte_zmalloc(name, 2 * ring + 2 * pool, 64);
	if (!m)
		return -ENOMEM;
	g->lane_mem[i] = m;
	lane->to_dp = (struct fg_ring *)m;
	lane->to_cp = (struct fg_ring *)(m + ring);
	if (fg_ring_init(lane->to_dp, g->prof.lane_ring, sizeof(union fg_bmsg)) < 0 ||
	    fg_ring_init(lane->to_cp, g->prof.lane_ring, sizeof(union fg_bmsg)) < 0)
		return -EINVAL;
	if (fg_pool_init(&lane->cp2dp, m + 2 * ring, g->prof.lane_bufs, g->frame_max) < 0 ||
	    fg_pool_init(&lane->dp2cp, m + 2 * ring + pool, g->prof.lane_bufs, g->frame_max) < 0)
		return -EINVAL;
	return 0;
}

static int lcore_setup(struct dp_state *g, unsigned i, unsigned lcore_id)
{
	char name[32];
	int rc;
	snprintf(name, sizeof(name), "fgdp_lc%u", i);
	struct dp_lcore *lc = rte_zmalloc(name, sizeof(*lc), RTE_CACHE_LINE_SIZE);
	if (!lc)
		return -ENOMEM;
	g->lc[i] = lc;
	lc->idx = i;
	lc->lcore_id = lcore_id;
	lc->rxq = i < g->n_rxq ? (int)i : -1;
	lc->wait_fd = lc->rxq >= 0 ? g->rxq_fd[lc->rxq] : -1;
	lc->txq = (uint16_t)i;
	g->env = (struct dp_shard_env){.cfg = &g->cfg, .io = &dp_io_dpdk, .n = g->n, .chunk = g->chunk,
				       .frame_max = g->frame_max, .ack_interval_ns = g->ack_interval_ns};
	lc->env = &g->env;
	lc->k = &g->b->counters[i];
	lc->xk = &g->xk[i];
	lc->lane = &g->b->lanes[i];
	lc->ictx.bands = &g->cfg.bands;
	lc->ictx.limits = &g->limits;
	lc->ictx.serves = g->cfg.cluster.node[0] ? g->cfg.cluster.serves : NULL; /* [cluster] layers */
	lc->frame_id = (uint16_t)(i * 4099u);

	size_t sz = fg_slots_mem_size(&g->scfg);
	snprintf(name, sizeof(name), "fgdp_slots%u", i);
	lc->slots_mem = rte_malloc(name, sz, 64);
	if (!lc->slots_mem)
		return -ENOMEM;
	rc = fg_slots_init(&lc->slots, lc->slots_mem, sz, &g->scfg);
	if (rc < 0) {
		DP_LOG(ERR, "slot shard %u: %s", i, strerror(-rc));
		return rc;
	}
	uint64_t iova_delta;
	if (g->tx_by_ref && iova_contig(lc->slots_mem, sz, &iova_delta)) {
		snprintf(name, sizeof(name), "fgdp_txref%u", i);
		lc->tx_ref_mem = rte_malloc(name, dp_tx_ref_mem_size(g->scfg.capacity), 64);
		if (!lc->tx_ref_mem)
			return -ENOMEM;
		dp_tx_ref_init(lc, lc->tx_ref_mem, iova_delta);
	} else if (g->tx_by_ref) {
		DP_LOG(NOTICE, "slot shard %u: its memory is not IOVA-contiguous; its deliveries are copied", i);
	}
	struct dp_reasm_cfg rcfg = {
		.contexts = g->cfg.reasm_contexts,
		.chunk = g->chunk,
		.frame_max = g->frame_max,
		.timeout_ns = (uint64_t)g->cfg.reasm_timeout_ms * 1000000ull,
		.slots = &lc->slots,
		.shard_self = i,
		.n_shards = g->n,
		.n_layers = g->cfg.layers,
		.bufs = {.get = xfer_get, .put = xfer_put, .arg = g->xfer},
		.keep_drop = kept_drop,
		.sink = dp_shard_sink,
		.sink_arg = lc,
	};
	lc->rx_keep = keep_max_of(g) && rx_may_keep(g);
	rcfg.keep_max = lc->rx_keep ? keep_max_of(g) : 0;
	sz = dp_reasm_mem_size(&rcfg);
	snprintf(name, sizeof(name), "fgdp_reasm%u", i);
	lc->reasm_mem = rte_malloc(name, sz, 64);
	if (!lc->reasm_mem)
		return -ENOMEM;
	rc = dp_reasm_init(&lc->reasm, lc->reasm_mem, sz, &rcfg);
	if (rc < 0) {
		DP_LOG(ERR, "reassembly table %u: %s (mtu %u, chunk %u, frame_max %u)", i, strerror(-rc), g->cfg.mtu,
		       g->chunk, g->frame_max);
		return rc;
	}
	sz = dp_ack_mem_size(g->prof.ack_peers);
	snprintf(name, sizeof(name), "fgdp_ack%u", i);
	lc->ack_mem = rte_malloc(name, sz, 64);
	if (!lc->ack_mem)
		return -ENOMEM;
	rc = dp_ack_init(&lc->ack, lc->ack_mem, sz, g->prof.ack_peers);
	if (rc < 0)
		return rc;
	struct dp_dlv_cfg dcfg = {
		.capacity = g->cfg.delivery_pending_max ? g->cfg.delivery_pending_max : 1,
		.retry_ns = (uint64_t)(g->cfg.delivery_resend_ms ? g->cfg.delivery_resend_ms : 200) * 1000000ull,
		.retries = g->cfg.delivery_resends,
	};
	sz = dp_dlv_mem_size(dcfg.capacity);
	snprintf(name, sizeof(name), "fgdp_dlv%u", i);
	lc->dlv_mem = rte_malloc(name, sz, 64);
	if (!lc->dlv_mem)
		return -ENOMEM;
	rc = dp_dlv_init(&lc->dlv, lc->dlv_mem, sz, &dcfg);
	if (rc < 0) {
		DP_LOG(ERR, "delivery table %u: %s ([consumers] pending_max %u)", i, strerror(-rc), dcfg.capacity);
		return rc;
	}
	snprintf(name, sizeof(name), "fgdp_inbox%u", i);
	lc->inbox = rte_ring_create(name, g->prof.handoff_ring, (int)rte_socket_id(), RING_F_SC_DEQ);
	if (!lc->inbox) {
		DP_LOG(ERR, "hand-off ring %u: %s", i, rte_strerror(rte_errno));
		return -ENOMEM;
	}
	if (g->prof.has_ip4) {
		lc->has_local4 = true;
		memcpy(lc->local4, g->prof.ip4, 4);
	}
	if (g->prof.has_ip6) {
		lc->has_local6 = true;
		memcpy(lc->local6, g->prof.ip6, 16);
	}
	return 0;
}

static void free_all(struct dp_state *g)
{
	for (unsigned i = 0; i < DP_MAX_LCORES; i++) {
		struct dp_lcore *lc = g->lc[i];
		if (lc) {
			if (lc->reasm.ctx)
				dp_reasm_fini(&lc->reasm);
			if (lc->inbox) {
				void *e;
				while (rte_ring_dequeue(lc->inbox, &e) == 0) {
					struct dp_xfer *x = e;
					const struct dp_ra_list *l = dp_ra_list(dp_xfer_data(x), g->frame_max);
					for (unsigned j = 0; x->len != DP_XFER_NEIGH && x->nchunk && j < l->nkept; j++)
						rte_mempool_put(g->mbufs, l->m[j]); /* a chunk list's kept mbufs */
					rte_mempool_put(g->xfer, e);
				}
				rte_ring_free(lc->inbox);
			}
			rte_free(lc->slots_mem);
			rte_free(lc->tx_ref_mem); /* after the port's close: no mbuf refers to a slot any more */
			rte_free(lc->reasm_mem);
			rte_free(lc->ack_mem);
			rte_free(lc->dlv_mem);
			rte_free(lc);
			g->lc[i] = NULL;
		}
		rte_free(g->lane_mem[i]);
		g->lane_mem[i] = NULL;
	}
}

/* Where the EAL keeps runtime directories (eal_get_runtime_dir's rule). */
static void runtime_base(char *out, size_t cap)
{
	const char *base = getuid() == 0 ? "/var/run/dpdk" : getenv("XDG_RUNTIME_DIR");
	if (!base)
		base = "/tmp";
	snprintf(out, cap, "%s%s", base, getuid() == 0 ? "" : "/dpdk");
}

/* The EAL leaves its runtime directory behind; ours is per process
 * (fgdp<pid>) so nobody else can be using it. */
static bool remove_dir_of(const char *prefix, int pid)
{
	char base[96], dir[128], path[512];
	runtime_base(base, sizeof(base));
	snprintf(dir, sizeof(dir), "%s/%s%d", base, prefix, pid);
	DIR *d = opendir(dir);
	if (!d)
		return false;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		(void)unlink(path);
	}
	closedir(d);
	return rmdir(dir) == 0;
}

static void remove_runtime_dir(void) { (void)remove_dir_of("fgdp", (int)getpid()); }

/* A daemon killed with SIGKILL never reached dp_stop: its fgdp<pid>
 * directory stays (so do those of the project's bench and test programs,
 * fg<name><pid>). Remove those whose process no longer exists (a pid
 * reused by another process keeps its directory: harmless, and never ours
 * to judge). Returns how many went. */
static unsigned reap_stale_runtime_dirs(void)
{
	char base[96];
	runtime_base(base, sizeof(base));
	DIR *d = opendir(base);
	if (!d)
		return 0;
	unsigned n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		char *end;
		const char *p = e->d_name;
		if (strncmp(p, "fg", 2) != 0)
			continue;
		p += 2;
		while (*p >= 'a' && *p <= 'z')
			p++;
		if (*p < '1' || *p > '9')
			continue;
		long pid = strtol(p, &end, 10);
		if (*end || pid <= 0 || pid > 0x3fffffff || pid == (long)getpid())
			continue;
		char prefix[64];
		snprintf(prefix, sizeof(prefix), "%.*s", (int)(p - e->d_name), e->d_name);
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH && remove_dir_of(prefix, (int)pid))
			n++;
	}
	closedir(d);
	return n;
}

/* The NIC the profile names as ${port} exists on this host: an interface
 * in /sys/class/net, or a PCI device in /sys/bus/pci/devices. Checked
 * before the EAL, whose own failure ("No such device") names neither the
 * port nor what to check. 0, or -ENODEV logged with the port. */
static int port_check(const struct dp_profile *p)
{
	char sys[160];
	if (!p->port_used || !p->port[0])
		return 0;
	if (dp_port_is_pci(p->port)) {
		snprintf(sys, sizeof(sys), "/sys/bus/pci/devices/%s%s", strlen(p->port) == 7 ? "0000:" : "", p->port);
		if (access(sys, F_OK) == 0)
			return 0;
		DP_LOG(ERR, "[dataplane] port = %s: no such PCI device (%s); check the address with lspci -D and "
			    "[dataplane] port in the configuration (profile %s)",
		       p->port, sys, p->path);
		return -ENODEV;
	}
	snprintf(sys, sizeof(sys), "/sys/class/net/%s", p->port);
	if (access(sys, F_OK) == 0)
		return 0;
	DP_LOG(ERR, "[dataplane] port = %s: no such network interface; check ip link show and [dataplane] port "
		    "in the configuration (profile %s drives an interface by name)",
	       p->port, p->path);
	return -ENODEV;
}

int dp_init(const struct fg_config *cfg, const char *profile_path, struct fg_boundary *b)
{
	struct dp_state *g = &dp_g;
	char path[256], err[512];
	int rc;

	if (g->inited)
		return -EALREADY;
	if (!cfg || !b)
		return -EINVAL;
	memset(g, 0, sizeof(*g));
	g->cfg = *cfg;
	g->b = b;
	g->n = cfg->lcores ? cfg->lcores : 1;
	unsigned stale = reap_stale_runtime_dirs();
	if (stale)
		DP_LOG(INFO, "removed %u DPDK runtime director%s of processes that died without stopping", stale,
		       stale == 1 ? "y" : "ies");
	{
		/* profiles size their queues with ${FG_LCORES} */
		char v[16];
		snprintf(v, sizeof(v), "%u", g->n);
		setenv("FG_LCORES", v, 1);
	}
	const char *name = profile_path && *profile_path ? profile_path : cfg->dp_profile;
	rc = dp_profile_find(name, path, sizeof(path));
	if (rc < 0) {
		const char *dirs[DP_PROFILE_DIRS];
		unsigned nd = dp_profile_dirs(dirs);
		char where[600] = "";
		for (unsigned k = 0, o = 0; k < nd && o < sizeof(where); k++)
			o += (unsigned)snprintf(where + o, sizeof(where) - o, "%s%s", k ? ", " : "", dirs[k]);
		DP_LOG(ERR, "drivers-config profile '%s' not found (looked in %s; [dataplane] profile, or --dp-profile FILE)",
		       name, where);
		return rc;
	}
	/* [dataplane] port; a test harness that made its own veth may give it
	 * as FG_IFACE instead when the configuration names none. */
	const char *port = cfg->dp_port[0] ? cfg->dp_port : getenv("FG_IFACE");
	rc = dp_profile_load(&g->prof, path, port, err, sizeof(err));
	if (rc < 0) {
		DP_LOG(ERR, "%s", err);
		return rc;
	}
	if (cfg->dp_port[0] && !g->prof.port_used) {
		DP_LOG(ERR, "[dataplane] port = %s: profile %s does not drive a NIC by name (no ${port} in it); leave port "
			    "empty or pick a profile that takes one (af_xdp, af_packet, a pci profile)",
		       cfg->dp_port, path);
		return -EINVAL;
	}
	rc = port_check(&g->prof);
	if (rc < 0)
		return rc;
	if (g->n > DP_MAX_LCORES) {
		DP_LOG(ERR, "[dataplane] lcores = %u: at most %u", g->n, DP_MAX_LCORES);
		return -EINVAL;
	}
	fg_config_slots(cfg, g->n, &g->scfg);
	fg_config_limits(cfg, &g->limits);
	g->chunk = fg_frag_chunk_size(cfg->mtu);
	uint64_t fmax = FG_HDR_LEN + FG_SEED_PREFIX_LEN + (uint64_t)cfg->max_seq_len * cfg->hidden * 4u;
	if (fmax < 4096)
		fmax = 4096; /* floor for non-seed frames (digests, ACKs, the fleet's test frames) */
	if (g->chunk < 64 || fmax > (uint64_t)FG_FRAG_MAX * g->chunk) {
		DP_LOG(ERR, "[udp] mtu = %u: chunk %u cannot carry a %llu-byte frame in 255 fragments (or is < 64)",
		       cfg->mtu, g->chunk, (unsigned long long)fmax);
		return -EINVAL;
	}
	g->frame_max = (uint32_t)((fmax + 63) & ~63ull);
	g->ack_interval_ns = (uint64_t)(cfg->ack_interval_ms ? cfg->ack_interval_ms : 50) * 1000000ull;
	for (unsigned p = 0; p < FG_POINTS; p++)
		g->have_points |= g->cfg.n_point_prefix[p] != 0;

	uint32_t n_mbufs = g->prof.mbufs;
	if (!n_mbufs)
		n_mbufs = (uint32_t)(g->n * (g->prof.rx_desc + g->prof.tx_desc + DP_TX_MAX + 2 * DP_BURST + 512 +
					     keep_max_of(g)) +
				     2048);
	uint32_t n_xfer = g->n * (cfg->reasm_contexts + g->prof.handoff_ring) + 1024;

	struct argv_buf a = {.n = 0};
	rc = build_eal_args(g, &a, memory_needed(g, n_mbufs, n_xfer));
	if (rc < 0)
		return rc;
	{
		char line[2048];
		int o = 0;
		for (int i = 0; i < a.n && o < (int)sizeof(line) - 2; i++)
			o += snprintf(line + o, sizeof(line) - (size_t)o, "%s ", a.v[i]);
		DP_LOG(INFO, "EAL: %s", line);
	}
	rc = rte_eal_init(a.n, a.v);
	if (rc < 0) {
		DP_LOG(ERR, "EAL init failed: %s (profile %s%s%s)", rte_strerror(rte_errno), path,
		       g->prof.port_used ? ", port " : "", g->prof.port_used ? g->prof.port : "");
		return -rte_errno ? -rte_errno : -EINVAL;
	}
	g->inited = true;
	if (rte_lcore_count() < g->n + 1) {
		DP_LOG(ERR, "EAL gave %u lcores; need %u poll lcores + the main one", rte_lcore_count(), g->n);
		rc = -EINVAL;
		goto fail;
	}
	g->mbufs = rte_pktmbuf_pool_create("fgdp_mbuf", n_mbufs, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	/* a frame buffer: the xfer header, the frame, a chunk list (dp_reasm.h) */
	g->xfer = rte_mempool_create("fgdp_xfer", n_xfer, DP_XFER_HDR + g->frame_max + DP_RA_KEEP_LIST, 64, 0, NULL, NULL, NULL, NULL,
				     (int)rte_socket_id(), 0);
	if (!g->mbufs || !g->xfer) {
		DP_LOG(ERR, "mempools (%u mbufs, %u frame buffers of %u bytes): %s", n_mbufs, n_xfer, g->frame_max,
		       rte_strerror(rte_errno));
		rc = -ENOMEM;
		goto fail;
	}
	rc = port_setup(g);
	if (rc < 0)
		goto fail;

	/* Boundary: lanes and counters, one per poll lcore. */
	b->lanes = rte_zmalloc("fgdp_lanes", g->n * sizeof(struct fg_lane), 64);
	b->counters = rte_zmalloc("fgdp_counters", g->n * sizeof(struct fg_dp_counters), 64);
	g->xk = rte_zmalloc("fgdp_xcounters", g->n * sizeof(struct dp_xcounters), 64);
	b->xcounters = g->xk; /* published for /metrics and fanoctl stats */
	if (!b->lanes || !b->counters || !g->xk) {
		rc = -ENOMEM;
		goto fail;
	}
	unsigned i = 0, lcore_id;
	RTE_LCORE_FOREACH_WORKER(lcore_id)
	{
		if (i == g->n)
			break;
		rc = lane_setup(g, i, &b->lanes[i]);
		if (rc < 0) {
			DP_LOG(ERR, "lane %u: %s", i, strerror(-rc));
			goto fail;
		}
		rc = lcore_setup(g, i, lcore_id);
		if (rc < 0) {
			DP_LOG(ERR, "lcore %u (shard %u): %s", lcore_id, i, strerror(-rc));
			goto fail;
		}
		i++;
	}
	b->n_lanes = g->n;
	atomic_store(&b->stop, false);
	/* The arrival wake-up of the dp -> cp rings (boundary.h, struct fg_wake). */
	{
		/* Blocking on purpose: io_uring completes a read of an O_NONBLOCK file
		 * with -EAGAIN instead of waiting. A write never blocks: at most one
		 * +1 per control-plane sleep, and each wake-up read resets the count. */
		int efd = eventfd(0, EFD_CLOEXEC);
		if (efd < 0) {
			rc = -errno;
			DP_LOG(ERR, "eventfd for the lanes' wake-up: %s", strerror(errno));
			goto fail;
		}
		fg_wake_init(&b->wake, efd);
	}
	/* [poll] idle_wake: each lcore that can wait (its RX queue's socket
	 * found, or no RX queue at all) gets its lane's eventfd (dp_idle.h). */
	if (g->prof.idle_wake) {
		unsigned waiting = 0;
		for (unsigned k = 0; k < g->n; k++) {
			struct dp_lcore *lc = g->lc[k];
			if (lc->rxq >= 0 && lc->wait_fd < 0)
				continue;
			int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
			if (efd < 0) {
				rc = -errno;
				DP_LOG(ERR, "eventfd for lcore %u's idle wake-up: %s", lc->lcore_id, strerror(errno));
				goto fail;
			}
			fg_wake_init(&b->lanes[k].wake, efd);
			waiting++;
		}
		if (waiting == g->n)
			DP_LOG(NOTICE, "[poll] idle_wake: %u lcore(s) wait in ppoll() on their RX socket and lane "
				       "after %u us without work", waiting, g->prof.idle_wake_after_us);
		else
			DP_LOG(WARNING, "[poll] idle_wake: %u of %u lcore(s) can wait; the others found no RX socket "
					"(driver %s: only net_af_xdp and net_af_packet have one) and %s",
			       waiting, g->n, g->driver ? g->driver : "?",
			       g->prof.idle_sleep_us ? "sleep idle_sleep_us instead" : "poll without pause");
	}
	/* Mapped points start live: each gets peer_timeout_ms from now to be heard. */
	{
		uint64_t t0 = dp_clock_ns();
		for (unsigned p = 1; p <= FG_POINTS; p++)
			atomic_store(&b->point_seen_ns[p], t0);
	}
	if (dp_telemetry_register() < 0)
		DP_LOG(WARNING, "telemetry commands not registered");
	rc = rte_pdump_init();
	if (rc < 0)
		DP_LOG(NOTICE, "pdump: %s (dpdk-dumpcap needs [eal] multiprocess = on with hugepages)",
		       rte_strerror(rte_errno));
	rc = port_start(g);
	if (rc < 0)
		goto fail;
	port_facts(g, &b->port);
	DP_LOG(INFO, "ready: %u poll lcores, %s, shard capacity %u, chunk %u, frame_max %u", g->n,
	       g->hugepages ? "hugepages" : "no hugepages", g->scfg.capacity, g->chunk, g->frame_max);
	return 0;
fail:
	dp_stop();
	return rc;
}

int dp_start(void)
{
	struct dp_state *g = &dp_g;
	if (!g->inited || !g->lc[0])
		return -ENODEV;
	if (g->started)
		return -EALREADY;
	if (g->guard_bursts)
		dp_burst_guard_set(g->n, g->xk);
	for (unsigned i = 0; i < g->n; i++) {
		int rc = rte_eal_remote_launch(dp_lcore_main, g->lc[i], g->lc[i]->lcore_id);
		if (rc < 0) {
			DP_LOG(ERR, "launch lcore %u: %s", g->lc[i]->lcore_id, rte_strerror(-rc));
			atomic_store(&g->b->stop, true);
			rte_eal_mp_wait_lcore();
			dp_burst_guard_set(0, NULL);
			return rc;
		}
	}
	g->started = true;
	return 0;
}

void dp_counters_sum(struct dp_report *r)
{
	struct dp_state *g = &dp_g;
	memset(r, 0, sizeof(*r));
	r->lcores = g->n;
	r->hugepages = g->hugepages;
	r->tsc_hz = g->inited ? rte_get_tsc_hz() : 0;
	if (!g->b || !g->b->counters || !g->xk)
		return;
	for (unsigned i = 0; i < g->n; i++) {
		struct fg_dp_counters *k = &g->b->counters[i];
		for (unsigned c = 0; c < FG_C__COUNT; c++)
			r->c[c] += atomic_load_explicit(&k->c[c], memory_order_relaxed);
		for (unsigned c = 0; c < FG_R__COUNT; c++)
			r->malformed[c] += atomic_load_explicit(&k->malformed[c], memory_order_relaxed);
		for (unsigned c = 0; c < DP_X__COUNT; c++)
			r->x[c] += atomic_load_explicit(&g->xk[i].x[c], memory_order_relaxed);
		for (unsigned c = 0; c < FG_O__COUNT; c++)
			r->outcome[c] += atomic_load_explicit(&g->xk[i].outcome[c], memory_order_relaxed);
	}
}

int dp_report_get(struct dp_report *out)
{
	struct dp_state *g = &dp_g;
	if (g->have_report) {
		*out = g->report;
		return 0;
	}
	if (!g->inited)
		return -ENODEV;
	dp_counters_sum(out);
	return 0;
}

void dp_stop(void)
{
	struct dp_state *g = &dp_g;
	if (!g->inited)
		return;
	if (g->b) {
		atomic_store(&g->b->stop, true);
		/* an lcore in its idle wait sees the flag now, not at its next timer */
		for (unsigned i = 0; g->b->lanes && i < g->n; i++)
			if (g->b->lanes[i].wake.has_fd)
				(void)!write(g->b->lanes[i].wake.fd, &(uint64_t){1}, sizeof(uint64_t));
	}
	if (g->started)
		rte_eal_mp_wait_lcore();
	g->started = false;
	dp_burst_guard_set(0, NULL); /* no lcore runs a burst any more */
	struct dp_report *r = &g->report;
	dp_counters_sum(r);
	for (unsigned i = 0; i < g->n; i++) {
		struct dp_lcore *lc = g->lc[i];
		if (!lc || !lc->slots_mem)
			continue;
		r->slots_opened += lc->slots.opened;
		r->slots_resolved += lc->slots.resolved;
		r->slots_expired += lc->slots.expired;
		r->slots_poisoned += lc->slots.poisoned;
		r->slots_abandoned += lc->slots.abandoned;
		r->slots_in_use += lc->slots.in_use;
		r->reasm_timeouts += lc->reasm.timeouts;
		r->delivery_pending += lc->dlv.n;
	}
	r->mbufs_out_started = g->mbufs_out_started;
	if (g->port != RTE_MAX_ETHPORTS && rte_eth_dev_is_valid_port(g->port)) {
		(void)rte_eth_dev_stop(g->port);
		if (g->mbufs)
			r->mbufs_out_stopped = g->mbufs->size - rte_mempool_avail_count(g->mbufs);
		(void)rte_eth_dev_close(g->port);
		if (g->mbufs)
			r->mbufs_out_closed = g->mbufs->size - rte_mempool_avail_count(g->mbufs);
	}
	free_all(g);
	if (g->mbufs) {
		r->mbuf_pool_size = g->mbufs->size;
		r->mbuf_pool_avail = rte_mempool_avail_count(g->mbufs);
	}
	if (g->xfer) {
		r->xfer_pool_size = g->xfer->size;
		r->xfer_pool_avail = rte_mempool_avail_count(g->xfer);
	}
	g->have_report = true;
	if (g->b) {
		/* The control plane must not touch the lanes after dp_stop. */
		g->b->n_lanes = 0;
		for (unsigned i = 0; g->b->lanes && i < g->n; i++)
			if (g->b->lanes[i].wake.has_fd)
				(void)close(g->b->lanes[i].wake.fd);
		rte_free(g->b->lanes);
		g->b->lanes = NULL;
		/* counters are kept readable in the report; the array goes. */
		rte_free(g->b->counters);
		g->b->counters = NULL;
		/* the lcores are stopped: nobody writes the eventfd any more */
		if (g->b->wake.has_fd) {
			(void)close(g->b->wake.fd);
			fg_wake_init(&g->b->wake, -1);
		}
		g->b->xcounters = NULL;
	}
	rte_free(g->xk);
	g->xk = NULL;
	(void)rte_pdump_uninit();
	rte_mempool_free(g->xfer);
	rte_mempool_free(g->mbufs);
	g->xfer = g->mbufs = NULL;
	(void)rte_eal_cleanup();
	if (g->own_prefix)
		remove_runtime_dir();
	g->inited = false;
}

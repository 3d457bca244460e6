/* dp_profile.h - drivers-config profiles: one INI file per device kind
 * (drivers-config/<name>.ini) holding the EAL arguments, the devices (vdev
 * devargs or PCI addresses), queue and descriptor counts, RSS, MTU, the
 * dataplane's own addresses and poll-loop knobs. Parsed with libinih.
 *
 * Values may name the NIC as ${port}: [dataplane] port of the configuration
 * (an interface name or a PCI address), given by the caller; ${port:-x}
 * gives x when the configuration names none. Other ${VAR} / ${VAR:-default}
 * come from the environment.
 *
 * Who may call: the thread running dp_init (before any lcore starts), tests.
 * Pure: reads one file and the environment, no logging; errors come back in
 * a message buffer. dp_profile_find also reads /proc/self/exe (is this a
 * program in the build tree?). docs/dataplane.md documents every key. */
#ifndef DP_PROFILE_H
#define DP_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fg/common.h"

#define DP_PROFILE_DEVS 8
#define DP_PROFILE_STR 512

enum dp_huge { DP_HUGE_AUTO = 0, DP_HUGE_ON, DP_HUGE_OFF };
/* [port] delivery_by_ref: auto = by reference on a hardware (PCI) device
 * only; on = wherever the device takes it; off = always copied */
enum dp_by_ref { DP_BY_REF_AUTO = 0, DP_BY_REF_ON, DP_BY_REF_OFF };

struct dp_profile {
	char path[256];
	/* ${port}: whether a value named it, and what it stood for there
	 * ([dataplane] port, or the profile's ${port:-default}) */
	bool port_used;
	char port[64];
	/* [eal] */
	char eal_args[DP_PROFILE_STR]; /* extra EAL arguments, split on blanks */
	enum dp_huge hugepages;        /* auto: --in-memory when a hugetlbfs mount has enough free pages */
	char huge_dir[256];            /* --huge-dir (optional) */
	uint32_t memory_mb;            /* 0 = computed from the sizes */
	char lcores[128];              /* EAL --lcores map; "" = derived */
	bool multiprocess;             /* shared config so dpdk-dumpcap can attach (needs hugepages) */
	char file_prefix[64];          /* with multiprocess; default "fanogate" */
	char log_level[64];            /* --log-level, default "*:notice" */
	/* [port] */
	char vdev[DP_PROFILE_DEVS][DP_PROFILE_STR];
	unsigned n_vdev;
	char pci[DP_PROFILE_DEVS][DP_PROFILE_STR]; /* "-a" arguments: address[,devargs] */
	unsigned n_pci;
	uint16_t rx_desc, tx_desc;     /* default 1024 / 1024 */
	bool rss;                      /* default true (used when the port has > 1 RX queue) */
	uint32_t mtu;                  /* L3 MTU set on the port; 0 = leave the device's */
	bool promiscuous;              /* default false */
	uint32_t mbufs;                /* 0 = computed */
	enum dp_by_ref delivery_by_ref; /* a resolved seed's body sent from its slot (dp_tx.h); default auto */
	uint32_t tx_hold_ms;           /* TX back-pressure: longest RX pause for a TX queue that refuses packets (default 50; 0 = none, drop at once) */
	/* [net] */
	bool has_ip4, has_ip6, has_gateway;
	uint8_t ip4[4], ip6[16], gateway_mac[6];
	bool arp_reply;                /* answer ARP requests for ip4 (default true) */
	/* [poll] */
	uint32_t idle_sleep_us;        /* after idle_polls empty polls sleep this long (the cap with idle_backoff); 0 = pure polling (default) */
	uint32_t idle_polls;           /* empty polls before the first sleep (64) */
	bool idle_backoff;             /* sleeps start at 1 us and double up to idle_sleep_us (default off: idle_sleep_us at once) */
	bool idle_wake;                /* when idle wait in ppoll() on the RX socket and lane eventfd (dp_idle.h; default off, on in the af_xdp and af_packet profiles) */
	uint32_t idle_wake_after_us;   /* ... after this long without work (default 1000): steady traffic, from the wire or the control plane, never finds the lcore asleep */
	uint32_t handoff_ring;         /* frames queued per lcore from other lcores (power of two, 1024) */
	uint32_t lane_ring;            /* boundary lane messages per direction (power of two, 4096) */
	uint32_t lane_bufs;            /* boundary buffers per pool (1024) */
	uint32_t ack_peers;            /* ACK table entries per lcore (1024) */
};

/* Defaults (also what a key left out means). */
void dp_profile_default(struct dp_profile *p);
/* The EAL --lcores map when [eal] lcores is "" for n poll lcores on ncpu
 * CPUs, into buf: poll lcore k (1..n) on CPU (ncpu - k) mod ncpu; lcore 0
 * (the control thread and the threads it starts) on the CPUs left,
 * floating over them (over all CPUs when the poll lcores take every one).
 * Returns the length written, or -1 when cap is too small. Pure. */
int dp_lcores_default(char *buf, size_t cap, long ncpu, unsigned n);

/* The vdev argument handed to the EAL, into out[0..cap): `vdev` itself,
 * except that a net_af_xdp vdev with an iface= and no busy_budget= gets
 * ",busy_budget=0" when iface_virtual(iface) says the interface is virtual
 * (a veth: AF_XDP in copy mode). DPDK 22.11's default busy_budget (64)
 * makes the PMD call recvfrom() after every empty RX burst, which in copy
 * mode only busy-polls a NAPI the sender's softirq already runs. A physical
 * interface keeps the PMD's default: with busy_budget=0 the PMD calls
 * poll(fd, 1, 1000) when the driver asks for a wake-up, which a zero-copy
 * driver does when its RX ring runs dry, and the lcore would block.
 * Returns 1 when it appended, 0 when it copied, -1 when cap is too small.
 * Pure but for the callback. */
int dp_vdev_tune(const char *vdev, bool (*iface_virtual)(const char *iface), char *out, size_t cap);

/* Parse a file over the defaults, ${port} standing for port (NULL or ""
 * when the configuration names none). Returns 0, or -errno / -EINVAL with a
 * human message "file:line: reason" in err[0..errlen); a ${port} with no
 * port and no default is refused naming [dataplane] port. */
FG_MUST_CHECK int dp_profile_load(struct dp_profile *p, const char *path, const char *port, char *err,
				  size_t errlen);

/* The directories a profile name is looked up in, in order, into dirs[]
 * (at most DP_PROFILE_DIRS; empty ones left out): $FG_DRIVERS_CONFIG, the
 * operator's SYSCONFDIR/fanogate/drivers-config, then the packaged
 * profiles: DATADIR/fanogate/drivers-config for an installed program, the
 * source tree's drivers-config for one run from the build tree (never the
 * source tree for an installed one). Returns the count. */
#define DP_PROFILE_DIRS 3
unsigned dp_profile_dirs(const char *dirs[DP_PROFILE_DIRS]);

/* Resolve a profile name ("af_xdp") or path ("./x.ini") to a readable file:
 * a value holding '/' or ending in ".ini" is a path; a name is looked up as
 * <dir>/<name>.ini in dp_profile_dirs. Returns 0 and writes out, or -ENOENT. */
FG_MUST_CHECK int dp_profile_find(const char *name, char *out, size_t outlen);

/* Expand ${port} (from port; NULL or "" = unset) and ${VAR} from the
 * environment, each with an optional :-default. *port_used (may be NULL)
 * is set when ${port} occurred. Returns 0 or -ENAMETOOLONG / -EINVAL
 * (unterminated, or unset with no default). */
FG_MUST_CHECK int dp_profile_expand(const char *in, const char *port, char *out, size_t outlen, bool *port_used);

/* True when s reads as a PCI address (domain:bus:device.function, the
 * domain optional), the way a pci line names a NIC; else it is taken as a
 * network interface name. Pure. */
bool dp_port_is_pci(const char *s);

#endif

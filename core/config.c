/* config.c - the fanogate configuration file: defaults, parsing with
 * libinih, per-key validation, cross-field validation, and a refusal with
 * file, line and reason for every invalid value (include/fg/config.h).
 *
 * Who may call: any thread; no shared state (inih's globals are only read).
 * The only I/O is reading files: the configuration (fg_config_load) and,
 * for its callers, the files it names (fg_file_open / fg_file_read: never
 * blocking on a FIFO or a device); nothing is logged.
 *
 * One table (config_keys) drives parsing, defaults documentation,
 * `fanoctl config keys` (fg_config_key) and the effective configuration
 * `fanoctl config check` prints (fg_config_settings); families of keys
 * (layer.N, line.N) are entries whose name ends in ".N". */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fg/config.h"

/* ---- the key table --------------------------------------------------- */

enum ktype {
	KT_U8,
	KT_U16,
	KT_U32,
	KT_BYTES32,
	KT_BYTES64,
	KT_MS_NS,    /* milliseconds in the file, nanoseconds in the struct (u64) */
	KT_HEX16,    /* a u16 usually written 0x... */
	KT_BOOL,
	KT_FRAC,     /* double in [min, max] / 1 */
	KT_STR,      /* char[size] */
	KT_ADDR,     /* struct fg_addr */
	KT_ADDR_OFF, /* struct fg_addr, or "off" */
	KT_PREFIXES, /* [udp] allow */
	KT_POINT_PREFIXES, /* [points] eN; off = point index 0..6 */
	KT_CANON_PREFIXES, /* [shadow] canonical_sources */
	KT_RULE,     /* [rules] default */
	KT_LAYER_RULE,
	KT_LINE_STATE,
	KT_LAYER_ADDR,
	KT_SECCOMP,  /* [daemon] seccomp: on | off | kill | log */
	KT_ORIENT,   /* [wire] orientation: bit | signed */
	KT_ACKWIN,   /* [consumers] ack_window: auto | exact | fleet */
	KT_NEIGHS,   /* [dataplane] neighbours: IP=MAC, ... */
	KT_U32_AUTO, /* a u32, or "auto" (the bool at offset size true; the value derived in config_validate) */
};

struct ckey {
	struct fg_config_key_doc doc;
	enum ktype t;
	size_t off;   /* offsetof in struct fg_config */
	size_t size;  /* KT_STR: buffer size */
	uint64_t min, max;
};

#define OFF(f) offsetof(struct fg_config, f)
#define SZ(f) sizeof(((struct fg_config *)0)->f)
#define KIB 1024ull
#define MIB (1024ull * 1024ull)
#define GIB (1024ull * 1024ull * 1024ull)
#define SUN_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path))

/* Sorted by section in file order, then as documented in docs/config.md. */
static const struct ckey config_keys[] = {
	{{"model", "hidden", "uint", "1536", "1..65536", "f32 values per row of the residual stream (the model's hidden size)"},
	 KT_U32, OFF(hidden), 0, 1, 65536},
	{{"model", "layers", "uint", "28", "1..256, at most 1 << layer_bits", "destination layers; slot keys and band offsets run 0..layers-1"},
	 KT_U16, OFF(layers), 0, 1, FG_MAX_LAYERS},
	{{"model", "max_seq_len", "uint", "1", "1..65536", "most rows (tokens) one contribution may carry"},
	 KT_U32, OFF(max_seq_len), 0, 1, 65536},

	{{"bands", "seed_base", "hex16", "0xAF60", "0x0000..0xFFFD, bands disjoint", "first stream id of the residual-seed band"},
	 KT_HEX16, OFF(bands.seed_base), 0, 0, 0xFFFD},
	{{"bands", "canonical_base", "hex16", "0xAF80", "0x0000..0xFFFD, bands disjoint", "first stream id of the canonical-report band"},
	 KT_HEX16, OFF(bands.canonical_base), 0, 0, 0xFFFD},
	{{"bands", "resolved_base", "hex16", "0xAFA0", "0x0000..0xFFFD, bands disjoint", "first stream id of the resolved-seed band"},
	 KT_HEX16, OFF(bands.resolved_base), 0, 0, 0xFFFD},
	{{"bands", "layer_bits", "uint", "5", "0..8", "each band spans 1 << layer_bits stream ids"},
	 KT_U8, OFF(bands.layer_bits), 0, 0, 8},

	{{"wire", "orientation", "mode", "bit", "bit | signed", "how a seed's flags low nibble gives its sign: bit 0 = +, 1 = -; signed 0x1 = +, 0xF = -; anything else refused"},
	 KT_ORIENT, OFF(orientation), 0, 0, 0},

	{{"rules", "default", "rule", "1,3,5", "1..7 distinct line indices 0..6", "lines expected for every layer without its own rule, in reduction order (Pair X)"},
	 KT_RULE, 0, 0, 0, 0},
	{{"rules", "layer.N", "rule", "(default)", "N < layers; 1..7 distinct line indices 0..6", "lines expected for destination layer N, in reduction order"},
	 KT_LAYER_RULE, 0, 0, 0, 0},

	{{"slots", "capacity", "uint", "4096", "1..16777216, >= dataplane lcores", "slots in the whole table (split evenly over the shards)"},
	 KT_U32, OFF(slot_capacity), 0, 1, 1u << 24},
	{{"slots", "deadline_ms", "ms", "3000", "1..600000", "time from a slot's first contribution to its expiry; covers the fleet's resend schedule (last resend ~2.03 s, give-up ~2.4 s) with margin"},
	 KT_MS_NS, OFF(slot_deadline_ns), 0, 1, 600000},

	{{"lines", "line.N", "state", "shadow", "disabled | shadow | active; N = index 0..6 or triple like 1,4,5", "state of line N on a log without line history, or with --reset-lines (else its last state in the audit log)"},
	 KT_LINE_STATE, 0, 0, 0, 0},
	{{"lines", "auto_promote", "bool", "false", "true | false", "let a clean audit window promote shadow lines to active (each line's flag: from the audit log at start, like line.N; a reload that changes it sets every line)"},
	 KT_BOOL, OFF(policy.auto_promote), 0, 0, 0},
	{{"lines", "promote_count", "uint", "64", "1..100000000", "clean verdicts a window needs before promotion"},
	 KT_U32, OFF(policy.promote_count), 0, 1, 100000000},
	{{"lines", "promote_ms", "ms", "10000", "0..86400000", "and at least this long since the window opened"},
	 KT_MS_NS, OFF(policy.promote_ns), 0, 0, 86400000},
	{{"lines", "shadow_sample", "fraction", "0.01", "0..1", "fraction of active-line seeds still audited against the canonical chain"},
	 KT_FRAC, OFF(shadow_sample), 0, 0, 1},
	{{"lines", "promote_min_ahead", "fraction", "0", "0..1", "and this share of the window's compared seeds ahead of the canonical chain (lead > 0); 0 = off: a clean window behind the chain stays in shadow"},
	 KT_FRAC, OFF(policy.min_ahead), 0, 0, 1},
	{{"lines", "promote_min_lead_us", "uint", "0", "0..10000000", "and the window's median lead over the canonical chain at least this; 0 = off"},
	 KT_U32, OFF(policy.min_lead_us), 0, 0, 10000000},

	{{"udp", "port", "uint", "4242", "1..65535", "UDP port of the fragmented profile"},
	 KT_U16, OFF(udp_port), 0, 1, 65535},
	{{"udp", "raw_port", "uint", "0", "0 (off) or 1..65535, != port", "UDP port of the raw profile (one frame per datagram, no ACKs)"},
	 KT_U16, OFF(udp_raw_port), 0, 0, 65535},
	{{"udp", "layer_ports", "uint", "0", "0 (off) or 1..65535 - layers + 1; range clear of port and raw_port", "per-layer ports of the fragmented profile: a datagram to port layer_ports + L is for layer L (the stream's low 4 bits must equal L & 0x0F)"},
	 KT_U16, OFF(udp_layer_ports), 0, 0, 65535},
	{{"udp", "mtu", "uint", "1472", "64..65507", "UDP payload bytes per fragment and per ACK datagram"},
	 KT_U32, OFF(mtu), 0, 64, 65507},
	{{"udp", "ack_interval_ms", "uint", "50", "1..10000", "how often pending ACK entries are flushed"},
	 KT_U32, OFF(ack_interval_ms), 0, 1, 10000},
	{{"udp", "send_status", "bool", "true", "true | false", "answer UDP seed and canonical frames with a status frame"},
	 KT_BOOL, OFF(send_status), 0, 0, 0},
	{{"udp", "status_accepted", "bool", "true", "true | false", "with send_status: also answer a contribution that only waits for the other lines (outcome accepted); false sends statuses for slot events and refusals only"},
	 KT_BOOL, OFF(status_accepted), 0, 0, 0},
	{{"udp", "allow", "prefixes", "", "comma list of IPv4/IPv6 prefixes, at most 32", "UDP source allowlist; empty allows every source"},
	 KT_PREFIXES, 0, 0, 0, 0},
	{{"udp", "reasm_contexts", "uint", "1024", "1..1048576", "fragment reassembly groups in flight per lcore"},
	 KT_U32, OFF(reasm_contexts), 0, 1, 1u << 20},
	{{"udp", "reasm_timeout_ms", "uint", "250", "1..60000", "an incomplete fragment group is dropped after this long"},
	 KT_U32, OFF(reasm_timeout_ms), 0, 1, 60000},

	{{"consumers", "default", "address", "", "host:port", "UDP consumer of resolved seeds for layers without their own; empty: none"},
	 KT_ADDR, OFF(consumer_default), 0, 0, 0},
	{{"consumers", "layer.N", "address", "(default)", "N < layers; host:port", "UDP consumer of layer N's resolved seeds"},
	 KT_LAYER_ADDR, 0, 0, 0, 0},
	{{"consumers", "resend_ms", "uint", "200", "1..60000", "an unACKed resolved-seed delivery is resent after this long (the fleet's RTO)"},
	 KT_U32, OFF(delivery_resend_ms), 0, 1, 60000},
	{{"consumers", "resends", "uint", "5", "0..255", "resends of an unACKed delivery before it is given up (counted delivery_given_up)"},
	 KT_U32, OFF(delivery_resends), 0, 0, 255},
	{{"consumers", "pending_max", "uint", "4096", "1..1048576", "unACKed deliveries tracked per lcore; when full the oldest is given up"},
	 KT_U32, OFF(delivery_pending_max), 0, 1, 1u << 20},
	{{"consumers", "ack_window", "mode", "auto", "auto | exact | fleet", "how consumers ACK: exact ACKs only what they name; fleet ACKs base..base+63 from its lowest held sequence (below the base = delivered, beyond base+63 waits); auto reads each stream exactly until its consumer ACKs the fleet's way"},
	 KT_ACKWIN, OFF(consumer_ack_window), 0, 0, 0},

	{{"points", "e1", "prefixes", "", "comma list of IPv4/IPv6 prefixes, at most 8", "UDP sources serving point e1; empty: e1's liveness comes from TLS peers only"},
	 KT_POINT_PREFIXES, 0, 0, 0, 0},
	{{"points", "e2", "prefixes", "", "as e1", "UDP sources serving point e2"},
	 KT_POINT_PREFIXES, 1, 0, 0, 0},
	{{"points", "e3", "prefixes", "", "as e1", "UDP sources serving point e3"},
	 KT_POINT_PREFIXES, 2, 0, 0, 0},
	{{"points", "e4", "prefixes", "", "as e1", "UDP sources serving point e4"},
	 KT_POINT_PREFIXES, 3, 0, 0, 0},
	{{"points", "e5", "prefixes", "", "as e1", "UDP sources serving point e5"},
	 KT_POINT_PREFIXES, 4, 0, 0, 0},
	{{"points", "e6", "prefixes", "", "as e1", "UDP sources serving point e6"},
	 KT_POINT_PREFIXES, 5, 0, 0, 0},
	{{"points", "e7", "prefixes", "", "as e1", "UDP sources serving point e7"},
	 KT_POINT_PREFIXES, 6, 0, 0, 0},
	{{"points", "peer_timeout_ms", "uint", "3000", "1..600000", "a point with prefixes is live while a datagram from one of them came within this long"},
	 KT_U32, OFF(peer_timeout_ms), 0, 1, 600000},

	{{"shadow", "canonical_sources", "prefixes", "", "comma list of IPv4/IPv6 prefixes, at most 8", "UDP sources (the coordinator) whose canonical reports the shadow audit believes; empty: canonical reports only over TLS from peers with the coordinator role, every UDP report refused"},
	 KT_CANON_PREFIXES, 0, 0, 0, 0},
	{{"shadow", "epoch_min_interval_ms", "uint", "1000", "1..3600000", "conflicting duplicates advance the model epoch (and flush every shard) at most once per this; more is a storm: alerted once, lines held in shadow, no flush"},
	 KT_U32, OFF(epoch_min_interval_ms), 0, 1, 3600000},

	{{"dataplane", "profile", "string", "af_xdp", "a drivers-config profile name or path", "how DPDK gets packets (drivers-config/)"},
	 KT_STR, OFF(dp_profile), SZ(dp_profile), 0, 0},
	{{"dataplane", "port", "string", "", "an interface name (af_xdp, af_packet) or a PCI address (dddd:bb:dd.f; pci profiles); letters, digits and . _ - : only",
	  "the NIC the profile drives (its ${port}); empty: the profile's own default (fgveth0, the demo's veth, in af_xdp and af_packet)"},
	 KT_STR, OFF(dp_port), SZ(dp_port), 0, 0},
	{{"dataplane", "lcores", "uint", "1", "1..128", "poll lcores; lcore i owns slot shard i"},
	 KT_U32, OFF(lcores), 0, 1, 128},
	{{"dataplane", "answer_spin_us", "uint", "50", "0..1000",
	  "while an lcore owes a TLS peer its answer, the control plane polls the lanes this long before it sleeps; 0: sleep at once"},
	 KT_U32, OFF(answer_spin_us), 0, 0, 1000},
	{{"dataplane", "neighbours", "list", "", "comma list of IP=MAC (IPv4 or IPv6, MAC as aa:bb:cc:dd:ee:ff), at most 16",
	  "static neighbours: the dataplane sends to IP at MAC and no ARP/NDP packet changes it"},
	 KT_NEIGHS, 0, 0, 0, 0},
	{{"dataplane", "neighbour_reachable_ms", "uint", "30000", "1000..3600000",
	  "a learnt neighbour not confirmed (by an ACK of its deliveries or an answer) for this long is asked again (ARP request, IPv6 neighbour solicitation) at its next use"},
	 KT_U32, OFF(neigh_reachable_ms), 0, 1000, 3600000},
	{{"dataplane", "neighbour_answer_ms", "uint", "1000", "10..10000",
	  "an answer may change a known neighbour's MAC only this long after the dataplane asked for that address; also the least time between two requests for one address"},
	 KT_U32, OFF(neigh_answer_ms), 0, 10, 10000},

	{{"tls", "listen", "address", "0.0.0.0:8443", "host:port", "TLS listener (WebSocket /flow, POST /residual-seed, pulls, health)"},
	 KT_ADDR, OFF(tls_listen), 0, 0, 0},
	{{"tls", "cert", "string", "", "path; with key", "server certificate chain (PEM); with key unset too, a self-signed pair is generated on first run"},
	 KT_STR, OFF(tls_cert), SZ(tls_cert), 0, 0},
	{{"tls", "key", "string", "", "path; with cert", "server private key (PEM)"},
	 KT_STR, OFF(tls_key), SZ(tls_key), 0, 0},
	{{"tls", "ca", "string", "", "path", "CA bundle (PEM) for client certificates"},
	 KT_STR, OFF(tls_ca), SZ(tls_ca), 0, 0},
	{{"tls", "require_client_cert", "bool", "false", "true | false; needs ca", "mutual TLS: refuse clients without a certificate signed by ca"},
	 KT_BOOL, OFF(tls_require_client_cert), 0, 0, 0},
	{{"tls", "tokens_file", "string", "", "path", "bearer tokens, one per line, optional role after a space; empty: no token auth"},
	 KT_STR, OFF(tokens_file), SZ(tokens_file), 0, 0},
	{{"tls", "max_connections", "uint", "1024", "1..1000000", "concurrent TLS connections"},
	 KT_U32, OFF(max_connections), 0, 1, 1000000},
	{{"tls", "ws_max_message", "bytes", "1M", "1K..64M, >= the largest seed frame", "largest WebSocket message accepted"},
	 KT_BYTES32, OFF(ws_max_message), 0, KIB, 64 * MIB},
	{{"tls", "handshake_timeout_ms", "uint", "5000", "1..600000", "TLS + HTTP upgrade must finish within this"},
	 KT_U32, OFF(handshake_timeout_ms), 0, 1, 600000},
	{{"tls", "idle_timeout_ms", "uint", "60000", "1..86400000", "a connection with no traffic is closed after this"},
	 KT_U32, OFF(idle_timeout_ms), 0, 1, 86400000},
	{{"tls", "send_queue_max", "bytes", "4M", "4K..1G, >= the largest seed frame", "queued output bytes per connection before it is dropped as slow"},
	 KT_BYTES32, OFF(send_queue_max), 0, 4 * KIB, GIB},
	{{"tls", "unauth_per_source", "uint", "auto", "auto, or 0 (no limit) .. 1000000", "connections one source address may hold open before they authenticate; more are refused; auto: 2 * (layers + 4), at least 16 (a coordinator's WebSocket per layer and 4 HTTPS keep-alives, twice)"},
	 KT_U32_AUTO, OFF(unauth_per_source), OFF(unauth_per_source_auto), 0, 1000000},
	{{"tls", "ipv6_source_prefix", "uint", "64", "32..128", "leading bits of an IPv6 peer's address that name its source (the per-source admission counts of the TLS listener and the metrics endpoint, canonical source classes): 64, one host's subnet, so that a host cannot multiply its share with the addresses of its /64; 128: each address"},
	 KT_U32, OFF(ipv6_source_prefix), 0, 32, 128},
	{{"tls", "auth_reserve", "fraction", "0.25", "0..1", "share of max_connections kept for authenticated connections: unauthenticated ones never hold more (at least one), the oldest is closed for a newcomer"},
	 KT_FRAC, OFF(auth_reserve), 0, 0, 1},
	{{"tls", "body_min_rate", "bytes", "64K", "1..1G (bytes per second)", "a request body must arrive within handshake_timeout_ms + its length at this rate, else 408; a WebSocket message, from its first bytes, within handshake_timeout_ms + its bytes so far at this rate, else close 1008"},
	 KT_BYTES32, OFF(body_min_rate), 0, 1, GIB},

	{{"audit", "path", "string", "/var/lib/fanogate/audit.log", "path", "append-only, hash-chained audit log"},
	 KT_STR, OFF(audit_path), SZ(audit_path), 0, 0},
	{{"audit", "rotate_bytes", "bytes", "64M", "0 (never) .. 1T", "start a new log file after this many bytes"},
	 KT_BYTES64, OFF(audit_rotate_bytes), 0, 0, 1024 * GIB},
	{{"audit", "group_commit_us", "uint", "1000", "0..1000000", "records wait at most this long to share one fdatasync"},
	 KT_U32, OFF(group_commit_us), 0, 0, 1000000},
	{{"audit", "alert_command", "string", "", "path and arguments", "run on every divergence (page the on-call); empty: none"},
	 KT_STR, OFF(alert_command), SZ(alert_command), 0, 0},
	{{"audit", "alert_min_interval_ms", "uint", "10000", "0..86400000", "the alert command runs at most once per interval"},
	 KT_U32, OFF(alert_min_interval_ms), 0, 0, 86400000},

	{{"operator", "socket", "string", "/run/fanogate/fanoctl.sock", "path, < 108 bytes", "Unix socket fanoctl talks to"},
	 KT_STR, OFF(op_socket), SUN_PATH_MAX, 0, 0},
	{{"operator", "group", "string", "", "group name", "group allowed to use the operator socket; empty: root only"},
	 KT_STR, OFF(op_group), SZ(op_group), 0, 0},

	{{"metrics", "listen", "address", "127.0.0.1:9464", "host:port or off", "Prometheus metrics endpoint"},
	 KT_ADDR_OFF, OFF(metrics_listen), 0, 0, 0},

	{{"daemon", "user", "string", "", "user name", "user to run as once start-up is done; empty: stay uid 0 with no capabilities in any thread"},
	 KT_STR, OFF(run_user), SZ(run_user), 0, 0},
	{{"daemon", "group", "string", "", "group name", "group to run as with user; empty: the user's primary group"},
	 KT_STR, OFF(run_group), SZ(run_group), 0, 0},
	{{"daemon", "seccomp", "mode", "on", "on | off | kill | log", "system call allow-list once started: on refuses others with EPERM (counted, logged), kill ends the process, log only logs"},
	 KT_SECCOMP, OFF(seccomp), 0, 0, 0},

	{{"cluster", "node", "string", "", "[A-Za-z0-9._-], 1..47 bytes; empty: no cluster", "this node's name in the fleet; empty: one appliance, nothing in etcd"},
	 KT_STR, OFF(cluster.node), SZ(cluster.node), 0, 0},
	{{"cluster", "endpoints", "string", "", "comma list of http://IP:port or https://IP:port, at most 8, one scheme", "etcd v3 JSON gateway endpoints (the etcd members' client URLs); needed with node"},
	 KT_STR, OFF(cluster.endpoints_text), SZ(cluster.endpoints_text), 0, 0},
	{{"cluster", "ca", "string", "", "path; https endpoints only", "CA bundle (PEM) that signs the etcd members' certificates; empty: the system's"},
	 KT_STR, OFF(cluster.ca), SZ(cluster.ca), 0, 0},
	{{"cluster", "cert", "string", "", "path; with key; https endpoints only", "client certificate (PEM) presented to etcd"},
	 KT_STR, OFF(cluster.cert), SZ(cluster.cert), 0, 0},
	{{"cluster", "key", "string", "", "path; with cert", "client private key (PEM)"},
	 KT_STR, OFF(cluster.key), SZ(cluster.key), 0, 0},
	{{"cluster", "layers", "string", "all", "all, or a comma list of layers and ranges like 0-13,20 (each < layers)", "destination layers this node serves (reported in etcd)"},
	 KT_STR, OFF(cluster.layers_text), SZ(cluster.layers_text), 0, 0},
	{{"cluster", "prefix", "string", "/fanogate/", "starts and ends with /, printable, no spaces, < 64 bytes", "etcd key prefix; every fanogate of one fleet uses the same"},
	 KT_STR, OFF(cluster.prefix), SZ(cluster.prefix), 0, 0},
	{{"cluster", "lease_ttl_s", "uint", "3", "1..60", "this node's etcd lease; the others see it gone this long after it stops"},
	 KT_U32, OFF(cluster.lease_ttl_s), 0, 1, 60},
	{{"cluster", "timeout_ms", "uint", "1000", "50..60000", "an etcd request slower than this fails and the next endpoint is tried"},
	 KT_U32, OFF(cluster.timeout_ms), 0, 50, 60000},
	{{"cluster", "keepalive_ms", "uint", "0", "0, or 50..60000 and shorter than lease_ttl_s", "how often this node renews its lease; 0: a third of lease_ttl_s (shorter: a killed node is seen gone sooner, within lease_ttl_s - keepalive_ms .. lease_ttl_s + etcd's 500 ms expiry check)"},
	 KT_U32, OFF(cluster.keepalive_ms), 0, 0, 60000},
	{{"cluster", "lost_after_ms", "uint", "3000", "100..600000", "etcd counts as lost (every line held in shadow) when no request succeeded for this long (or at once when every endpoint refuses); longer than an etcd leader election"},
	 KT_U32, OFF(cluster.lost_after_ms), 0, 100, 600000},
	{{"cluster", "stale_after_s", "uint", "0", "0..60; 0: auto; not shorter than keepalive_ms + timeout_ms; lease_ttl_s or more: off", "another node is reported lost when etcd says its lease has not been refreshed for more than this (remaining TTL, whole seconds), before the lease expires; 0: keepalive_ms + timeout_ms rounded up to a second, off when that is not shorter than lease_ttl_s"},
	 KT_U32, OFF(cluster.stale_after_s), 0, 0, 60},
	{{"cluster", "beat_ms", "uint", "200", "0, or 50..10000", "how often this node writes its heartbeat (beats/<node>, on its lease); the others report it down when no beat came for beat_down_ms; 0: no heartbeat (the lease alone tells)"},
	 KT_U32, OFF(cluster.beat_ms), 0, 0, 10000},
	{{"cluster", "beat_down_ms", "uint", "0", "0: auto; else at least twice beat_ms, up to 60000", "another node is reported down when none of its heartbeats came for this long (proven by this node's own later beat coming back through etcd), and up again at its next beat; 0: 3 * beat_ms + 50"},
	 KT_U32, OFF(cluster.beat_down_ms), 0, 0, 60000},
	{{"cluster", "key_file", "string", "", "path of a regular file, no group or other permission bits, 32..1024 bytes (a trailing newline is not part of it); needed with node", "the fleet's key, the same file on every node: every value this node writes under the prefix carries its HMAC-SHA256, and a value without a valid one is never applied"},
	 KT_STR, OFF(cluster.key_file), SZ(cluster.key_file), 0, 0},
	{{"cluster", "user", "string", "", "etcd user name, 1..63 bytes; empty: no etcd authentication", "the etcd user this node authenticates as (/v3/auth/authenticate; the token is refreshed when etcd refuses it)"},
	 KT_STR, OFF(cluster.user), SZ(cluster.user), 0, 0},
	{{"cluster", "password_file", "string", "", "path, as key_file; with user", "the etcd user's password: the file's first line"},
	 KT_STR, OFF(cluster.password_file), SZ(cluster.password_file), 0, 0},
	{{"cluster", "insecure", "bool", "false", "true | false", "allow http:// endpoints that are not loopback (etcd traffic in clear over the network; logged at warning); false refuses them"},
	 KT_BOOL, OFF(cluster.insecure), 0, 0, 0},
	{{"cluster", "nodes_max", "uint", "64", "2..4096", "fleet nodes this node tracks, itself included; a node beyond is refused (not tracked, logged and counted: fanogate_cluster_nodes_refused_total)"},
	 KT_U32, OFF(cluster.nodes_max), 0, 2, 4096},
};
#define N_KEYS FG_ARRAY_LEN(config_keys)

static const char *const config_sections[] = {
	"model", "bands", "wire", "rules", "slots", "lines", "udp", "consumers", "points", "shadow", "dataplane", "tls", "audit", "operator", "metrics", "daemon", "cluster",
};

size_t fg_config_key_count(void)
{
	return N_KEYS;
}

const struct fg_config_key_doc *fg_config_key(size_t i)
{
	return i < N_KEYS ? &config_keys[i].doc : NULL;
}

/* ---- defaults -------------------------------------------------------- */

static const uint8_t pair_x[] = {1, 3, 5}; /* x_l, attn_l, ffn_l: ((x + attn) + ffn) */

static void addr_v4(struct fg_addr *a, uint8_t b0, uint8_t b1, uint8_t b2, uint8_t b3, uint16_t port)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->addr[0] = b0;
	a->addr[1] = b1;
	a->addr[2] = b2;
	a->addr[3] = b3;
	a->port = port;
	a->set = true;
}

void fg_config_default(struct fg_config *c)
{
	memset(c, 0, sizeof(*c));
	c->hidden = 1536;
	c->layers = 28;
	c->max_seq_len = 1;
	fg_bands_default(&c->bands);
	c->bands.n_layers = c->layers;
	for (unsigned i = 0; i < FG_MAX_LAYERS; i++)
		if (fg_rule_make(&c->rules[i], pair_x, FG_ARRAY_LEN(pair_x)) != 0)
			abort(); /* a constant rule; cannot fail */
	c->slot_capacity = 4096;
	/* The fleet's sender resends on a 200 ms check timer with a 200 ms age
	 * test (~400 ms apart), its 5th resend leaves up to ~2.03 s after the
	 * first send and it gives up at ~2.4 s (wire.md 2.1): 3 s covers that
	 * with 0.6 s for the spread between a slot's three senders
	 * (docs/config.md has the arithmetic). */
	c->slot_deadline_ns = 3000ull * 1000000ull;
	for (unsigned i = 0; i < FG_LINES; i++)
		c->line_initial[i] = FG_LINE_SHADOW;
	c->policy.auto_promote = false;
	c->policy.promote_count = 64;
	c->policy.promote_ns = 10000ull * 1000000ull;
	c->shadow_sample = 0.01;
	c->n_canon_src = 0;
	c->epoch_min_interval_ms = 1000;
	c->udp_port = 4242;
	c->udp_raw_port = 0;
	c->mtu = 1472;
	c->ack_interval_ms = 50;
	c->send_status = true;
	c->status_accepted = true;
	c->n_allow = 0;
	c->n_static_neigh = 0;
	c->reasm_contexts = 1024;
	c->reasm_timeout_ms = 250;
	c->delivery_resend_ms = 200;
	c->delivery_resends = 5;
	c->delivery_pending_max = 4096;
	c->consumer_ack_window = FG_ACKWIN_AUTO;
	c->neigh_reachable_ms = 30000;
	c->neigh_answer_ms = 1000;
	c->peer_timeout_ms = 3000;
	snprintf(c->dp_profile, sizeof(c->dp_profile), "af_xdp");
	c->lcores = 1;
	c->answer_spin_us = 50;
	addr_v4(&c->tls_listen, 0, 0, 0, 0, 8443);
	c->tls_require_client_cert = false;
	c->max_connections = 1024;
	c->ws_max_message = 1u << 20;
	c->handshake_timeout_ms = 5000;
	c->idle_timeout_ms = 60000;
	c->send_queue_max = 4u << 20;
	c->unauth_per_source_auto = true;
	c->unauth_per_source = fg_config_unauth_auto(c->layers);
	c->ipv6_source_prefix = 64;
	c->auth_reserve = 0.25;
	c->body_min_rate = 64u << 10;
	snprintf(c->audit_path, sizeof(c->audit_path), "/var/lib/fanogate/audit.log");
	c->audit_rotate_bytes = 64ull << 20;
	c->group_commit_us = 1000;
	c->alert_min_interval_ms = 10000;
	snprintf(c->op_socket, sizeof(c->op_socket), "/run/fanogate/fanoctl.sock");
	addr_v4(&c->metrics_listen, 127, 0, 0, 1, 9464);
	c->seccomp = FG_SECCOMP_ON;
	snprintf(c->cluster.layers_text, sizeof(c->cluster.layers_text), "all");
	memset(c->cluster.serves, 0xFF, sizeof(c->cluster.serves));
	snprintf(c->cluster.prefix, sizeof(c->cluster.prefix), "/fanogate/");
	c->cluster.lease_ttl_s = 3;
	c->cluster.timeout_ms = 1000;
	c->cluster.lost_after_ms = 3000;
	c->cluster.beat_ms = 200;
	c->cluster.nodes_max = 64;
}

/* ---- value parsers (no side effects on failure) ------------------------ */

static bool parse_u64(const char *s, uint64_t *out)
{
	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return false;
	char *end;

	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		return false;
	/* strtoull base 0 reads a leading 0 as octal: refuse "010" (a likely
	 * decimal typo) rather than read 8. */
	if (s[0] == '0' && s[1] >= '0' && s[1] <= '9')
		return false;
	*out = v;
	return true;
}

/* Byte sizes: a number with an optional K, M, G or T suffix (binary),
 * optionally followed by "iB" or "B". */
static bool parse_bytes(const char *s, uint64_t *out)
{
	char buf[64];
	size_t n = strlen(s);

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, s, n + 1);
	uint64_t mult = 1;

	if (n >= 3 && strcmp(buf + n - 2, "iB") == 0)
		buf[n -= 2] = '\0';
	else if (n >= 2 && buf[n - 1] == 'B' && strchr("KMGTkmgt", buf[n - 2]))
		buf[--n] = '\0';
	switch (buf[n - 1]) {
	case 'k': case 'K': mult = KIB; break;
	case 'm': case 'M': mult = MIB; break;
	case 'g': case 'G': mult = GIB; break;
	case 't': case 'T': mult = 1024 * GIB; break;
	default: break;
	}
	if (mult != 1)
		buf[--n] = '\0';
	uint64_t v;

	if (!parse_u64(buf, &v) || (v && mult > UINT64_MAX / v))
		return false;
	*out = v * mult;
	return true;
}

static int parse_bool(const char *s)
{
	static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};

	for (size_t i = 0; i < FG_ARRAY_LEN(yes); i++) {
		if (strcmp(s, yes[i]) == 0)
			return 1;
		if (strcmp(s, no[i]) == 0)
			return 0;
	}
	return -1;
}

bool fg_prefix_match(const struct fg_prefix *p, int family, const uint8_t *addr)
{
	if (p->family != family)
		return false;
	unsigned full = p->len / 8, rest = p->len % 8;

	if (memcmp(p->addr, addr, full) != 0)
		return false;
	if (rest) {
		uint8_t mask = (uint8_t)(0xFFu << (8 - rest));
		if ((p->addr[full] & mask) != (addr[full] & mask))
			return false;
	}
	return true;
}

void fg_addr_cut(uint8_t addr[16], unsigned bits)
{
	if (bits >= 128)
		return;
	unsigned byte = bits / 8, rest = bits % 8;
	if (rest)
		addr[byte++] &= (uint8_t)(0xFFu << (8 - rest));
	memset(addr + byte, 0, 16 - byte);
}

int fg_prefix_parse(const char *s, struct fg_prefix *out)
{
	char buf[64];
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, n + 1);
	struct fg_prefix p;

	memset(&p, 0, sizeof(p));
	char *slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (inet_pton(AF_INET, buf, p.addr) == 1) {
		p.family = AF_INET;
		p.len = 32;
	} else if (inet_pton(AF_INET6, buf, p.addr) == 1) {
		p.family = AF_INET6;
		p.len = 128;
	} else {
		return -EINVAL;
	}
	if (slash) {
		uint64_t len;
		if (!parse_u64(slash + 1, &len) || len > p.len || (slash[1] == '0' && slash[2]))
			return -EINVAL;
		p.len = (uint8_t)len;
	}
	/* host bits must be clear */
	unsigned bytes = p.family == AF_INET ? 4 : 16;
	for (unsigned bit = p.len; bit < bytes * 8; bit++)
		if (p.addr[bit / 8] & (0x80u >> (bit % 8)))
			return -EINVAL;
	*out = p;
	return 0;
}

#define ADDR_PORT0 "port 0 is not allowed"

/* Returns NULL on success, else the reason. Port 0 is parsed (*out
 * written) but refused with ADDR_PORT0, which listeners accept. */
static const char *addr_parse_reason(const char *s, struct fg_addr *out)
{
	bool zero = false;
	char host[64];
	const char *colon, *hs;
	size_t hl;

	if (!s || !*s)
		return "empty address (expected host:port)";
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (!rb || rb[1] != ':')
			return "expected [IPv6]:port";
		hs = s + 1;
		hl = (size_t)(rb - hs);
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return "missing :port (expected host:port)";
		hs = s;
		hl = (size_t)(colon - s);
		if (memchr(hs, ':', hl))
			return "IPv6 addresses need brackets: [addr]:port";
	}
	if (hl == 0 || hl >= sizeof(host))
		return "bad host (expected an IPv4 address, [IPv6], localhost or *)";
	memcpy(host, hs, hl);
	host[hl] = '\0';
	uint64_t port;

	if (!parse_u64(colon + 1, &port) || port > 65535)
		return "bad port (expected 1..65535)";
	if (port == 0)
		zero = true;
	struct fg_addr a;

	memset(&a, 0, sizeof(a));
	if (strcmp(host, "localhost") == 0) {
		addr_v4(&a, 127, 0, 0, 1, 0);
	} else if (strcmp(host, "*") == 0) {
		addr_v4(&a, 0, 0, 0, 0, 0);
	} else if (s[0] != '[' && inet_pton(AF_INET, host, a.addr) == 1) {
		a.family = AF_INET;
	} else if (s[0] == '[' && inet_pton(AF_INET6, host, a.addr) == 1) {
		a.family = AF_INET6;
	} else {
		return "bad host (expected an IPv4 address, [IPv6], localhost or *; no name lookup)";
	}
	a.port = (uint16_t)port;
	a.set = true;
	*out = a;
	return zero ? ADDR_PORT0 : NULL;
}

int fg_addr_parse(const char *s, struct fg_addr *out)
{
	struct fg_addr a;
	if (addr_parse_reason(s, &a))
		return -EINVAL;
	*out = a;
	return 0;
}

int fg_addr_parse_port0(const char *s, struct fg_addr *out)
{
	struct fg_addr a;
	const char *r = addr_parse_reason(s, &a);

	if (r && strcmp(r, ADDR_PORT0))
		return -EINVAL;
	*out = a;
	return 0;
}

/* The names of the mode keys' values, indexed by the value (parsed and
 * written back by fg_config_settings). */
static const char *const seccomp_names[] = {[FG_SECCOMP_OFF] = "off", [FG_SECCOMP_ON] = "on",
					    [FG_SECCOMP_KILL] = "kill", [FG_SECCOMP_LOG] = "log"};
static const char *const orient_names[] = {[FG_ORIENT_BIT] = "bit", [FG_ORIENT_SIGNED] = "signed"};
static const char *const ackwin_names[] = {[FG_ACKWIN_EXACT] = "exact", [FG_ACKWIN_FLEET] = "fleet",
					   [FG_ACKWIN_AUTO] = "auto"};

/* The index of value among the n names, or -1. */
static int mode_parse(const char *const *names, size_t n, const char *value)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(value, names[i]) == 0)
			return (int)i;
	return -1;
}

/* ---- the parse ------------------------------------------------------- */

struct pstate {
	struct fg_config *c;
	struct fg_config_error *err;
	bool failed;
	int lineno;             /* line the reader last returned */
	const char *cur;        /* reader position */
	int key_line[N_KEYS];   /* 0 = not given */
	int rule_line[FG_MAX_LAYERS];
	int consumer_line[FG_MAX_LAYERS];
	int line_line[FG_LINES];
	struct fg_rule default_rule;
	char section_seen[FG_ARRAY_LEN(config_sections)];
};

static void fail(struct pstate *ps, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(struct pstate *ps, int line, const char *fmt, ...)
{
	if (ps->failed)
		return; /* the first error is the one reported */
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ps->err->reason, sizeof(ps->err->reason), fmt, ap);
	va_end(ap);
	ps->err->line = line;
	ps->failed = true;
}

/* fgets-like reader over the text that counts lines and refuses a line
 * longer than inih's fixed buffer (inih would split it silently). */
static char *config_reader(char *str, int num, void *stream)
{
	struct pstate *ps = stream;

	if (ps->failed || !*ps->cur)
		return NULL;
	const char *nl = strchr(ps->cur, '\n');
	size_t len = nl ? (size_t)(nl - ps->cur) + 1 : strlen(ps->cur);
	size_t content = len - (nl ? 1 : 0);

	if (content && ps->cur[content - 1] == '\r')
		content--;
	ps->lineno++;
	if (content > FG_CONFIG_LINE_MAX || len + 1 > (size_t)num) {
		fail(ps, ps->lineno, "line longer than %u bytes", FG_CONFIG_LINE_MAX);
		return NULL;
	}
	memcpy(str, ps->cur, len);
	str[len] = '\0';
	ps->cur += len;
	return str;
}

/* Parse "a,b,c" (line indices) into a rule; NULL or the reason. */
static const char *rule_parse(const char *v, struct fg_rule *r, char *why, size_t cap)
{
	uint8_t lines[FG_LINES];
	unsigned n = 0;
	const char *p = v;

	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9') {
			snprintf(why, cap, "expected a comma list of line indices 0..6, like 1,3,5");
			return why;
		}
		unsigned d = 0;
		while (*p >= '0' && *p <= '9') {
			d = d * 10 + (unsigned)(*p - '0');
			if (d > 99)
				break;
			p++;
		}
		if (d >= FG_LINES) {
			snprintf(why, cap, "line %u does not exist (lines are 0..6)", d);
			return why;
		}
		for (unsigned k = 0; k < n; k++)
			if (lines[k] == d) {
				snprintf(why, cap, "line %u listed twice", d);
				return why;
			}
		if (n == FG_LINES) {
			snprintf(why, cap, "more than 7 lines");
			return why;
		}
		lines[n++] = (uint8_t)d;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			break;
		if (*p != ',') {
			snprintf(why, cap, "expected a comma list of line indices 0..6, like 1,3,5");
			return why;
		}
		p++;
	}
	if (fg_rule_make(r, lines, n) != 0) {
		snprintf(why, cap, "invalid rule");
		return why;
	}
	return NULL;
}

static bool parse_layer_suffix(const char *s, unsigned *layer)
{
	uint64_t v;

	if (!parse_u64(s, &v) || (s[0] == '0' && s[1] == 'x') || v >= FG_MAX_LAYERS)
		return false;
	*layer = (unsigned)v;
	return true;
}

static const struct ckey *key_find(const char *section, const char *name, const char **suffix)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct ckey *k = &config_keys[i];
		size_t kl = strlen(k->doc.key);

		if (strcmp(k->doc.section, section) != 0)
			continue;
		if (kl > 2 && strcmp(k->doc.key + kl - 2, ".N") == 0) {
			if (strncmp(name, k->doc.key, kl - 1) == 0) {
				*suffix = name + kl - 1;
				return k;
			}
		} else if (strcmp(k->doc.key, name) == 0) {
			*suffix = NULL;
			return k;
		}
	}
	return NULL;
}

static int config_handler(void *user, const char *section, const char *name, const char *value)
{
	struct pstate *ps = user;
	struct fg_config *c = ps->c;
	int ln = ps->lineno;
	char why[160];

	if (ps->failed)
		return 1; /* keep inih quiet; the first error stands */
	if (!*section) {
		fail(ps, ln, "key '%s' outside any section", name);
		return 0;
	}
	size_t sec;
	for (sec = 0; sec < FG_ARRAY_LEN(config_sections); sec++)
		if (strcmp(section, config_sections[sec]) == 0)
			break;
	if (sec == FG_ARRAY_LEN(config_sections)) {
		fail(ps, ln, "unknown section [%s]", section);
		return 0;
	}
	const char *suffix;
	const struct ckey *k = key_find(section, name, &suffix);

	if (!k) {
		fail(ps, ln, "[%s] unknown key '%s'", section, name);
		return 0;
	}
	size_t ki = (size_t)(k - config_keys);

	if (!suffix) {
		if (ps->key_line[ki]) {
			fail(ps, ln, "[%s] %s: already set on line %d%s", section, name, ps->key_line[ki],
			     ps->key_line[ki] == ln - 1 ? " (an indented line continues the previous key)" : "");
			return 0;
		}
		ps->key_line[ki] = ln;
	}
	uint8_t *field = (uint8_t *)c + k->off;
	uint64_t u;

	switch (k->t) {
	case KT_U8:
	case KT_U16:
	case KT_U32:
	case KT_HEX16:
	case KT_MS_NS:
	case KT_BYTES32:
	case KT_BYTES64: {
		bool bytes = k->t == KT_BYTES32 || k->t == KT_BYTES64;
		if (!(bytes ? parse_bytes(value, &u) : parse_u64(value, &u))) {
			fail(ps, ln, "[%s] %s = %s: not a number%s", section, name, value,
			     bytes ? " (a byte count, optionally with K, M or G)" : "");
			return 0;
		}
		if (u < k->min || u > k->max) {
			fail(ps, ln, "[%s] %s = %s: out of range (%s)", section, name, value, k->doc.range);
			return 0;
		}
		switch (k->t) {
		case KT_U8: *(uint8_t *)field = (uint8_t)u; break;
		case KT_U16: case KT_HEX16: *(uint16_t *)field = (uint16_t)u; break;
		case KT_U32: case KT_BYTES32: *(uint32_t *)field = (uint32_t)u; break;
		case KT_BYTES64: *(uint64_t *)field = u; break;
		default: *(uint64_t *)field = u * 1000000ull; break; /* KT_MS_NS */
		}
		break;
	}
	case KT_BOOL: {
		int b = parse_bool(value);
		if (b < 0) {
			fail(ps, ln, "[%s] %s = %s: not a boolean (true/false, yes/no, on/off, 1/0)", section, name, value);
			return 0;
		}
		*(bool *)field = b;
		break;
	}
	case KT_FRAC: {
		char *end;
		errno = 0;
		double d = strtod(value, &end);
		if (!*value || *end || errno || !isfinite(d)) {
			fail(ps, ln, "[%s] %s = %s: not a number", section, name, value);
			return 0;
		}
		if (d < (double)k->min || d > (double)k->max) {
			fail(ps, ln, "[%s] %s = %s: out of range (%s)", section, name, value, k->doc.range);
			return 0;
		}
		*(double *)field = d;
		break;
	}
	case KT_STR: {
		size_t n = strlen(value);
		if (n >= k->size) {
			fail(ps, ln, "[%s] %s: value too long (%zu bytes, at most %zu)", section, name, n, k->size - 1);
			return 0;
		}
		memcpy(field, value, n + 1);
		break;
	}
	case KT_SECCOMP: {
		int b = parse_bool(value);
		int m = b < 0 ? mode_parse(seccomp_names, FG_ARRAY_LEN(seccomp_names), value)
			: b ? FG_SECCOMP_ON : FG_SECCOMP_OFF;
		if (m < 0) {
			fail(ps, ln, "[%s] %s = %s: not a mode (%s)", section, name, value, k->doc.range);
			return 0;
		}
		*(uint8_t *)field = (uint8_t)m;
		break;
	}
	case KT_ORIENT: {
		int m = mode_parse(orient_names, FG_ARRAY_LEN(orient_names), value);
		if (m < 0) {
			fail(ps, ln, "[%s] %s = %s: not a mode (%s)", section, name, value, k->doc.range);
			return 0;
		}
		*(uint8_t *)field = (uint8_t)m;
		break;
	}
	case KT_NEIGHS: {
		char list[FG_CONFIG_LINE_MAX + 1];
		unsigned n = 0;
		snprintf(list, sizeof(list), "%s", value);
		for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			while (*tok == ' ' || *tok == '\t')
				tok++;
			for (char *e = tok + strlen(tok); e > tok && (e[-1] == ' ' || e[-1] == '\t');)
				*--e = '\0';
			if (n == FG_STATIC_NEIGH_MAX) {
				fail(ps, ln, "[%s] %s: more than %u neighbours", section, name, FG_STATIC_NEIGH_MAX);
				return 0;
			}
			struct fg_static_neigh *sn = &c->static_neigh[n];
			memset(sn, 0, sizeof(*sn));
			char *eq = strchr(tok, '=');
			unsigned m[6];
			char tail;
			if (eq)
				*eq = '\0';
			bool ok = eq != NULL;
			if (ok && inet_pton(AF_INET, tok, sn->addr) == 1)
				sn->family = 4;
			else if (ok && inet_pton(AF_INET6, tok, sn->addr) == 1)
				sn->family = 6;
			else
				ok = false;
			ok = ok && sscanf(eq + 1, "%2x:%2x:%2x:%2x:%2x:%2x%c", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &tail) == 6;
			if (!ok) {
				fail(ps, ln, "[%s] %s: '%s%s%s' is not IP=MAC (like 10.0.0.2=02:00:00:00:00:02)", section, name, tok,
				     eq ? "=" : "", eq ? eq + 1 : "");
				return 0;
			}
			for (int i = 0; i < 6; i++)
				sn->mac[i] = (uint8_t)m[i];
			n++;
		}
		c->n_static_neigh = n;
		break;
	}
	case KT_U32_AUTO:
		if (strcmp(value, "auto") == 0) {
			*(bool *)((uint8_t *)c + k->size) = true; /* the value: config_validate */
			break;
		}
		if (!parse_u64(value, &u)) {
			fail(ps, ln, "[%s] %s = %s: not a number or auto", section, name, value);
			return 0;
		}
		if (u < k->min || u > k->max) {
			fail(ps, ln, "[%s] %s = %s: out of range (%s)", section, name, value, k->doc.range);
			return 0;
		}
		*(uint32_t *)field = (uint32_t)u;
		*(bool *)((uint8_t *)c + k->size) = false;
		break;
	case KT_ACKWIN: {
		int m = mode_parse(ackwin_names, FG_ARRAY_LEN(ackwin_names), value);
		if (m < 0) {
			fail(ps, ln, "[%s] %s = %s: not a mode (%s)", section, name, value, k->doc.range);
			return 0;
		}
		*(uint8_t *)field = (uint8_t)m;
		break;
	}
	case KT_ADDR_OFF:
		if (strcmp(value, "off") == 0) {
			memset(field, 0, sizeof(struct fg_addr));
			break;
		}
		/* fall through */
	case KT_ADDR: {
		if (k->t == KT_ADDR && !*value && strcmp(section, "consumers") == 0) {
			memset(field, 0, sizeof(struct fg_addr));
			break;
		}
		const char *r = addr_parse_reason(value, (struct fg_addr *)field);
		/* a listener on port 0 takes a port the kernel picks, and reports
		 * it (log, --ready-fd): tests run in parallel without guessing */
		if (r && !strcmp(name, "listen") && ((struct fg_addr *)field)->port == 0 && !strcmp(r, ADDR_PORT0))
			r = NULL;
		if (r) {
			fail(ps, ln, "[%s] %s = %s: %s", section, name, value, r);
			return 0;
		}
		break;
	}
	case KT_PREFIXES:
	case KT_POINT_PREFIXES:
	case KT_CANON_PREFIXES: {
		char list[FG_CONFIG_LINE_MAX + 1];
		struct fg_prefix tmp[FG_ALLOW_MAX];
		unsigned n = 0, max = k->t == KT_PREFIXES ? FG_ALLOW_MAX
				    : k->t == KT_CANON_PREFIXES ? FG_CANON_SRC_MAX : FG_POINT_PREFIX_MAX;
		snprintf(list, sizeof(list), "%s", value);
		for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			while (*tok == ' ' || *tok == '\t')
				tok++;
			for (char *e = tok + strlen(tok); e > tok && (e[-1] == ' ' || e[-1] == '\t');)
				*--e = '\0';
			if (n == max) {
				fail(ps, ln, "[%s] %s: more than %u prefixes", section, name, max);
				return 0;
			}
			if (fg_prefix_parse(tok, &tmp[n]) != 0) {
				fail(ps, ln, "[%s] %s: '%s' is not an IPv4/IPv6 prefix (like 10.0.0.0/8 or fd00::/8, host bits zero)",
				     section, name, tok);
				return 0;
			}
			n++;
		}
		if (k->t == KT_PREFIXES) {
			memcpy(c->allow, tmp, n * sizeof(tmp[0]));
			c->n_allow = n;
		} else if (k->t == KT_CANON_PREFIXES) {
			memcpy(c->canon_src, tmp, n * sizeof(tmp[0]));
			c->n_canon_src = n;
		} else {
			memcpy(c->point_prefix[k->off], tmp, n * sizeof(tmp[0]));
			c->n_point_prefix[k->off] = (uint8_t)n;
		}
		break;
	}
	case KT_RULE:
		if (rule_parse(value, &ps->default_rule, why, sizeof(why))) {
			fail(ps, ln, "[rules] default = %s: %s", value, why);
			return 0;
		}
		break;
	case KT_LAYER_RULE:
	case KT_LAYER_ADDR: {
		unsigned layer;
		int *seen = k->t == KT_LAYER_RULE ? ps->rule_line : ps->consumer_line;
		if (!parse_layer_suffix(suffix, &layer)) {
			fail(ps, ln, "[%s] %s: layer must be a number 0..%u", section, name, FG_MAX_LAYERS - 1);
			return 0;
		}
		if (seen[layer]) {
			fail(ps, ln, "[%s] layer.%u: already set on line %d", section, layer, seen[layer]);
			return 0;
		}
		if (k->t == KT_LAYER_RULE) {
			if (rule_parse(value, &c->rules[layer], why, sizeof(why))) {
				fail(ps, ln, "[rules] %s = %s: %s", name, value, why);
				return 0;
			}
		} else {
			const char *r = addr_parse_reason(value, &c->consumer[layer]);
			if (r) {
				fail(ps, ln, "[consumers] %s = %s: %s", name, value, r);
				return 0;
			}
		}
		seen[layer] = ln;
		break;
	}
	case KT_LINE_STATE: {
		int line = fg_fano_line_parse(suffix);
		if (line < 0) {
			fail(ps, ln, "[lines] %s: '%s' is not a line (an index 0..6 or an oriented triple like 1,4,5)", name, suffix);
			return 0;
		}
		if (ps->line_line[line]) {
			fail(ps, ln, "[lines] line %s: already set on line %d", fg_fano_line_name((unsigned)line),
			     ps->line_line[line]);
			return 0;
		}
		int st = fg_line_state_parse(value);
		if (st < 0) {
			fail(ps, ln, "[lines] %s = %s: expected disabled, shadow or active", name, value);
			return 0;
		}
		c->line_initial[line] = (enum fg_line_state)st;
		ps->line_line[line] = ln;
		break;
	}
	}
	return 1;
}

static int key_line(const struct pstate *ps, const char *section, const char *name)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(config_keys[i].doc.section, section) == 0 && strcmp(config_keys[i].doc.key, name) == 0)
			return ps->key_line[i];
	return 0;
}

/* First non-zero line among candidates: where the reader should look. */
static int first_line(int a, int b)
{
	return a ? a : b;
}

struct band_span {
	const char *name;
	uint32_t lo, hi; /* [lo, hi) */
};

/* A user or group name as useradd takes it (letters, digits, '.', '_', '-',
 * not starting with '-'; an optional trailing '$'), or empty. Whether it
 * exists is the daemon's question (name lookup is I/O). */
static bool account_name_ok(const char *s)
{
	if (s[0] == '-')
		return false;
	for (const char *p = s; *p; p++) {
		bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
			  *p == '_' || *p == '-' || (*p == '$' && p[1] == '\0');
		if (!ok)
			return false;
	}
	return true;
}

/* [cluster]: the endpoint and layer lists are strings in the key table and
 * parsed here, once every key (and [model] layers) is known. */
static void cluster_validate(struct pstate *ps)
{
	struct fg_cluster_cfg *k = &ps->c->cluster;
	int l_node = key_line(ps, "cluster", "node"), l_ep = key_line(ps, "cluster", "endpoints");
	int l_layers = key_line(ps, "cluster", "layers"), l_prefix = key_line(ps, "cluster", "prefix");
	char list[FG_CONFIG_LINE_MAX + 1];
	struct fg_addr a;
	const char *r;

	for (const char *p = k->node; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '.' ||
		      *p == '_' || *p == '-')) {
			fail(ps, l_node, "[cluster] node = %s: only letters, digits, '.', '_' and '-'", k->node);
			return;
		}
	k->n_endpoints = 0;
	k->tls = false;
	snprintf(list, sizeof(list), "%s", k->endpoints_text);
	for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ' || *tok == '\t')
			tok++;
		for (char *e = tok + strlen(tok); e > tok && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '/');)
			*--e = '\0';
		bool https = strncmp(tok, "https://", 8) == 0;
		if (!https && strncmp(tok, "http://", 7) != 0) {
			fail(ps, l_ep, "[cluster] endpoints: '%s' is not http://IP:port or https://IP:port", tok);
			return;
		}
		if ((r = addr_parse_reason(tok + (https ? 8 : 7), &a)) != NULL) {
			fail(ps, l_ep, "[cluster] endpoints: '%s': %s", tok, r);
			return;
		}
		if (k->n_endpoints == FG_CLUSTER_ENDPOINTS_MAX) {
			fail(ps, l_ep, "[cluster] endpoints: more than %u", FG_CLUSTER_ENDPOINTS_MAX);
			return;
		}
		if (k->n_endpoints && https != k->tls) {
			fail(ps, l_ep, "[cluster] endpoints: http:// and https:// mixed; one scheme for every member");
			return;
		}
		if (strlen(tok) >= sizeof(k->endpoint[0])) {
			fail(ps, l_ep, "[cluster] endpoints: '%s' too long", tok);
			return;
		}
		bool loopback = a.family == AF_INET ? a.addr[0] == 127
						    : memcmp(a.addr, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\1", 16) == 0;
		if (!https && !loopback && !k->insecure) {
			fail(ps, l_ep,
			     "[cluster] endpoints: '%s': plain http:// to an etcd that is not on loopback (use https://, "
			     "or insecure = true to send etcd traffic in clear)",
			     tok);
			return;
		}
		k->tls = https;
		snprintf(k->endpoint[k->n_endpoints++], sizeof(k->endpoint[0]), "%s", tok);
	}
	if (k->node[0] && k->n_endpoints == 0) {
		fail(ps, first_line(l_ep, l_node), "[cluster] node = %s needs endpoints (the etcd members)", k->node);
		return;
	}
	if (!k->node[0] && k->n_endpoints) {
		fail(ps, l_ep, "[cluster] endpoints need node (this appliance's name in the fleet)");
		return;
	}
	if (!k->user[0] != !k->password_file[0]) {
		fail(ps, first_line(key_line(ps, "cluster", "user"), key_line(ps, "cluster", "password_file")),
		     "[cluster] user and password_file go together: set both or neither");
		return;
	}
	for (const char *p = k->user; *p; p++)
		if (*p <= ' ' || *p >= 0x7F || *p == '"' || *p == '\\') {
			fail(ps, key_line(ps, "cluster", "user"), "[cluster] user = %s: printable, no spaces or quotes",
			     k->user);
			return;
		}
	if (!k->cert[0] != !k->key[0]) {
		fail(ps, first_line(key_line(ps, "cluster", "cert"), key_line(ps, "cluster", "key")),
		     "[cluster] cert and key go together: set both or neither");
		return;
	}
	if ((k->ca[0] || k->cert[0]) && !k->tls) {
		fail(ps, first_line(key_line(ps, "cluster", "ca"), key_line(ps, "cluster", "cert")),
		     "[cluster] ca/cert/key need https:// endpoints");
		return;
	}
	memset(k->serves, 0, sizeof(k->serves));
	if (strcmp(k->layers_text, "all") == 0) {
		for (unsigned l = 0; l < ps->c->layers; l++)
			k->serves[l / 8] |= (uint8_t)(1u << (l % 8));
	} else {
		bool any = false;
		snprintf(list, sizeof(list), "%s", k->layers_text);
		for (char *save = NULL, *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			while (*tok == ' ' || *tok == '\t')
				tok++;
			for (char *e = tok + strlen(tok); e > tok && (e[-1] == ' ' || e[-1] == '\t');)
				*--e = '\0';
			char *dash = strchr(tok, '-');
			uint64_t lo, hi;
			if (dash)
				*dash = '\0';
			if (!parse_u64(tok, &lo) || !(dash ? parse_u64(dash + 1, &hi) : (hi = lo, true)) || lo > hi) {
				fail(ps, l_layers, "[cluster] layers = %s: expected all, or layers and ranges like 0-13,20",
				     k->layers_text);
				return;
			}
			if (hi >= ps->c->layers) {
				fail(ps, l_layers, "[cluster] layers = %s: layer %llu >= [model] layers (%u)", k->layers_text,
				     (unsigned long long)hi, ps->c->layers);
				return;
			}
			for (uint64_t l = lo; l <= hi; l++)
				k->serves[l / 8] |= (uint8_t)(1u << (l % 8));
			any = true;
		}
		if (!any) {
			fail(ps, l_layers, "[cluster] layers: empty (all, or a list like 0-13,20)");
			return;
		}
	}
	size_t pl = strlen(k->prefix);
	bool ok = pl >= 1 && k->prefix[0] == '/' && k->prefix[pl - 1] == '/';
	for (size_t i = 0; ok && i < pl; i++)
		ok = k->prefix[i] > ' ' && k->prefix[i] < 0x7F && k->prefix[i] != '"' && k->prefix[i] != '\\';
	if (!ok) {
		fail(ps, l_prefix, "[cluster] prefix = %s: must start and end with '/', printable, no spaces or quotes",
		     k->prefix);
		return;
	}
	if (k->lease_ttl_s * 1000ull <= k->timeout_ms) {
		fail(ps, first_line(key_line(ps, "cluster", "timeout_ms"), key_line(ps, "cluster", "lease_ttl_s")),
		     "[cluster] timeout_ms = %u: not shorter than lease_ttl_s (%u s); a keepalive could never arrive in time",
		     k->timeout_ms, k->lease_ttl_s);
		return;
	}
	if (k->keepalive_ms && (k->keepalive_ms < 50 || k->keepalive_ms >= k->lease_ttl_s * 1000ull)) {
		fail(ps, key_line(ps, "cluster", "keepalive_ms"),
		     "[cluster] keepalive_ms = %u: 0, or 50 ms up to less than lease_ttl_s (%u s)", k->keepalive_ms,
		     k->lease_ttl_s);
		return;
	}
	uint64_t ka = k->keepalive_ms ? k->keepalive_ms : k->lease_ttl_s * 1000u / 3u;
	if (k->stale_after_s && k->stale_after_s < k->lease_ttl_s && k->stale_after_s * 1000ull < ka + k->timeout_ms) {
		fail(ps, key_line(ps, "cluster", "stale_after_s"),
		     "[cluster] stale_after_s = %u: shorter than keepalive_ms + timeout_ms (%llu ms); a live node would be "
		     "reported lost",
		     k->stale_after_s, (unsigned long long)(ka + k->timeout_ms));
		return;
	}
	if (k->beat_ms && k->beat_ms < 50) {
		fail(ps, key_line(ps, "cluster", "beat_ms"), "[cluster] beat_ms = %u: 0 (off), or 50 ms or more", k->beat_ms);
		return;
	}
	if (k->beat_ms && k->beat_down_ms && k->beat_down_ms < 2ull * k->beat_ms) {
		fail(ps, first_line(key_line(ps, "cluster", "beat_down_ms"), key_line(ps, "cluster", "beat_ms")),
		     "[cluster] beat_down_ms = %u: shorter than twice beat_ms (%u ms); one late beat would report a live "
		     "node down",
		     k->beat_down_ms, k->beat_ms);
		return;
	}
	if (k->node[0] && !k->key_file[0]) {
		fail(ps, first_line(key_line(ps, "cluster", "key_file"), l_node),
		     "[cluster] node = %s needs key_file (the fleet's key every value in etcd is authenticated with)",
		     k->node);
		return;
	}
}

/* Cross-field checks, after every key is read (sections may come in any
 * order). Reports the line of the key most worth editing. */
static void config_validate(struct pstate *ps)
{
	struct fg_config *c = ps->c;
	int l_layers = key_line(ps, "model", "layers");
	int l_bits = key_line(ps, "bands", "layer_bits");

	if ((uint32_t)c->layers > (1u << c->bands.layer_bits)) {
		fail(ps, first_line(l_layers, l_bits), "[model] layers = %u: more than the %u layers a band holds "
			  "(1 << [bands] layer_bits = %u)", c->layers, 1u << c->bands.layer_bits, c->bands.layer_bits);
		return;
	}
	c->bands.n_layers = c->layers;
	if (c->unauth_per_source_auto)
		c->unauth_per_source = fg_config_unauth_auto(c->layers);

	struct band_span b[3] = {
		{"seed_base", c->bands.seed_base, (uint32_t)c->bands.seed_base + (1u << c->bands.layer_bits)},
		{"canonical_base", c->bands.canonical_base, (uint32_t)c->bands.canonical_base + (1u << c->bands.layer_bits)},
		{"resolved_base", c->bands.resolved_base, (uint32_t)c->bands.resolved_base + (1u << c->bands.layer_bits)},
	};
	for (unsigned i = 0; i < 3; i++) {
		if (b[i].hi > FG_STREAM_STATUS) {
			fail(ps, first_line(key_line(ps, "bands", b[i].name), l_bits),
			     "[bands] %s = 0x%04X: band 0x%04X..0x%04X reaches the status/ACK streams 0xFFFE/0xFFFF",
			     b[i].name, b[i].lo, b[i].lo, b[i].hi - 1);
			return;
		}
		for (unsigned j = 0; j < i; j++) {
			if (b[i].lo < b[j].hi && b[j].lo < b[i].hi) {
				int li = key_line(ps, "bands", b[i].name), lj = key_line(ps, "bands", b[j].name);
				fail(ps, li > lj ? li : first_line(lj, l_bits),
				     "[bands] overlapping bands: %s 0x%04X..0x%04X and %s 0x%04X..0x%04X", b[j].name, b[j].lo,
				     b[j].hi - 1, b[i].name, b[i].lo, b[i].hi - 1);
				return;
			}
		}
	}

	uint64_t body = (uint64_t)c->hidden * c->max_seq_len * 4u;
	int l_shape = first_line(key_line(ps, "model", "max_seq_len"), key_line(ps, "model", "hidden"));

	if (body + FG_SEED_PREFIX_LEN > FG_LEN_MAX) {
		fail(ps, l_shape, "[model] hidden * max_seq_len * 4 = %llu bytes: a seed frame holds at most %u body bytes",
		     (unsigned long long)body, FG_LEN_MAX - FG_SEED_PREFIX_LEN);
		return;
	}
	uint64_t frame = fg_config_max_frame(c);
	uint64_t chunk = c->mtu - FG_FRAG_HDR_LEN;

	if (frame > FG_FRAG_MAX * chunk) {
		fail(ps, first_line(key_line(ps, "udp", "mtu"), l_shape),
		     "[udp] mtu = %u: a %llu-byte seed frame needs %llu fragments, at most %u allowed "
		     "(raise mtu or lower hidden * max_seq_len)", c->mtu, (unsigned long long)frame,
		     (unsigned long long)((frame + chunk - 1) / chunk), FG_FRAG_MAX);
		return;
	}
	if (c->ws_max_message < frame) {
		fail(ps, first_line(key_line(ps, "tls", "ws_max_message"), l_shape),
		     "[tls] ws_max_message = %u: smaller than the largest seed frame (%llu bytes)", c->ws_max_message,
		     (unsigned long long)frame);
		return;
	}
	if (c->send_queue_max < frame) {
		fail(ps, first_line(key_line(ps, "tls", "send_queue_max"), l_shape),
		     "[tls] send_queue_max = %u: smaller than the largest seed frame (%llu bytes)", c->send_queue_max,
		     (unsigned long long)frame);
		return;
	}

	for (unsigned l = 0; l < FG_MAX_LAYERS; l++) {
		if (ps->rule_line[l] && l >= c->layers) {
			fail(ps, ps->rule_line[l], "[rules] layer.%u: layer >= [model] layers (%u)", l, c->layers);
			return;
		}
		if (ps->consumer_line[l] && l >= c->layers) {
			fail(ps, ps->consumer_line[l], "[consumers] layer.%u: layer >= [model] layers (%u)", l, c->layers);
			return;
		}
	}
	for (unsigned l = 0; l < FG_MAX_LAYERS; l++) {
		if (!ps->rule_line[l])
			c->rules[l] = ps->default_rule;
		if (!ps->consumer_line[l])
			c->consumer[l] = c->consumer_default;
	}

	if (c->udp_raw_port && c->udp_raw_port == c->udp_port) {
		fail(ps, first_line(key_line(ps, "udp", "raw_port"), key_line(ps, "udp", "port")),
		     "[udp] raw_port = %u: same port as the fragmented profile; a port speaks one profile", c->udp_raw_port);
		return;
	}
	if (c->udp_layer_ports) {
		uint32_t lo = c->udp_layer_ports, hi = lo + c->layers - 1;
		int l_lp = key_line(ps, "udp", "layer_ports");
		if (hi > 65535) {
			fail(ps, first_line(l_lp, key_line(ps, "model", "layers")),
			     "[udp] layer_ports = %u: ports %u..%u for %u layers run past 65535", lo, lo, hi, c->layers);
			return;
		}
		if ((c->udp_port >= lo && c->udp_port <= hi) || (c->udp_raw_port && c->udp_raw_port >= lo && c->udp_raw_port <= hi)) {
			fail(ps, first_line(l_lp, key_line(ps, "udp", "port")),
			     "[udp] layer_ports = %u: ports %u..%u hold [udp] port or raw_port; a port names one layer or none",
			     lo, lo, hi);
			return;
		}
	}
	if (c->slot_capacity < c->lcores) {
		fail(ps, first_line(key_line(ps, "slots", "capacity"), key_line(ps, "dataplane", "lcores")),
		     "[slots] capacity = %u: fewer slots than [dataplane] lcores (%u); every shard needs one", c->slot_capacity,
		     c->lcores);
		return;
	}
	if (!c->tls_cert[0] != !c->tls_key[0]) {
		fail(ps, first_line(key_line(ps, "tls", "cert"), key_line(ps, "tls", "key")),
		     "[tls] cert and key go together: set both or neither");
		return;
	}
	if (c->tls_require_client_cert && !c->tls_ca[0]) {
		fail(ps, key_line(ps, "tls", "require_client_cert"),
		     "[tls] require_client_cert = true needs ca (the CA that signs client certificates)");
		return;
	}
	if (!c->op_socket[0]) {
		fail(ps, key_line(ps, "operator", "socket"), "[operator] socket: empty path");
		return;
	}
	if (!c->audit_path[0]) {
		fail(ps, key_line(ps, "audit", "path"), "[audit] path: empty path");
		return;
	}
	if (!c->dp_profile[0]) {
		fail(ps, key_line(ps, "dataplane", "profile"), "[dataplane] profile: empty");
		return;
	}
	/* [dataplane] port lands in a devargs list (iface=PORT,...): a ',', '='
	 * or blank there would add arguments of its own. */
	for (const char *q = c->dp_port; *q; q++) {
		if (!(*q >= 'a' && *q <= 'z') && !(*q >= 'A' && *q <= 'Z') && !(*q >= '0' && *q <= '9') && !strchr("._-:", *q)) {
			fail(ps, key_line(ps, "dataplane", "port"),
			     "[dataplane] port = %s: not an interface name or PCI address (letters, digits and . _ - : only)",
			     c->dp_port);
			return;
		}
	}
	if (!account_name_ok(c->run_user)) {
		fail(ps, key_line(ps, "daemon", "user"), "[daemon] user = %s: not a user name", c->run_user);
		return;
	}
	if (!account_name_ok(c->run_group)) {
		fail(ps, key_line(ps, "daemon", "group"), "[daemon] group = %s: not a group name", c->run_group);
		return;
	}
	if (c->run_group[0] && !c->run_user[0]) {
		fail(ps, key_line(ps, "daemon", "group"), "[daemon] group needs user (the daemon drops both or neither)");
		return;
	}
	cluster_validate(ps);
}

int fg_config_parse(struct fg_config *c, const char *text, const char *name, struct fg_config_error *err)
{
	struct pstate *ps = calloc(1, sizeof(*ps));
	struct fg_config *tmp = malloc(sizeof(*tmp));

	memset(err, 0, sizeof(*err));
	snprintf(err->file, sizeof(err->file), "%s", name ? name : "(string)");
	if (!ps || !tmp) {
		free(ps);
		free(tmp);
		snprintf(err->reason, sizeof(err->reason), "out of memory");
		return -ENOMEM;
	}
	fg_config_default(tmp);
	ps->c = tmp;
	ps->err = err;
	ps->cur = text ? text : "";
	if (fg_rule_make(&ps->default_rule, pair_x, FG_ARRAY_LEN(pair_x)) != 0)
		abort();

	int rc = ini_parse_stream(config_reader, ps, config_handler, ps);

	/* inih reports the first failing line, ours or its own syntax error;
	 * a syntax error on an earlier line than ours comes first. */
	if (rc > 0 && (!ps->failed || rc < err->line)) {
		ps->failed = false;
		fail(ps, rc, "syntax error: expected [section], key = value, or a comment");
	} else if (rc < 0 && !ps->failed) {
		fail(ps, 0, "parser failure (%d)", rc);
	}
	if (!ps->failed)
		config_validate(ps);

	int ret = ps->failed ? -EINVAL : 0;

	if (!ret)
		*c = *tmp;
	free(ps);
	free(tmp);
	return ret;
}

const char *fg_file_kind(unsigned mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG: return "is a regular file";
	case S_IFDIR: return "is a directory";
	case S_IFIFO: return "is a FIFO";
	case S_IFCHR: return "is a character device";
	case S_IFBLK: return "is a block device";
	case S_IFSOCK: return "is a socket";
	case S_IFLNK: return "is a symbolic link";
	default: return "is not a regular file";
	}
}

int fg_file_open(const char *path, unsigned flags, uint64_t max, char *why, size_t why_len)
{
	/* O_NONBLOCK: opening a FIFO (no writer yet) or a device must not
	 * wait; fstat then says what it is. A regular file ignores the flag. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC |
				   ((flags & FG_FILE_NOFOLLOW) ? O_NOFOLLOW : 0));
	if (fd < 0) {
		int e = errno;
		if (e == ELOOP && (flags & FG_FILE_NOFOLLOW))
			snprintf(why, why_len, "is a symbolic link (refused: it must be the file itself)");
		else
			snprintf(why, why_len, "cannot open: %s", strerror(e));
		return -e;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		snprintf(why, why_len, "cannot stat: %s", strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(why, why_len, "%s, not a regular file", fg_file_kind(st.st_mode));
		return -EINVAL;
	}
	if (max && (uint64_t)st.st_size > max) {
		close(fd);
		snprintf(why, why_len, "file larger than %llu bytes", (unsigned long long)max);
		return -EFBIG;
	}
	return fd;
}

int fg_file_read(const char *path, unsigned flags, uint64_t max, char **out, size_t *len, char *why,
		 size_t why_len)
{
	int fd = fg_file_open(path, flags, max, why, why_len);
	if (fd < 0)
		return fd;
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		snprintf(why, why_len, "cannot stat: %s", strerror(e));
		return -e;
	}
	char *buf = malloc((size_t)st.st_size + 1);
	size_t have = 0;

	if (!buf) {
		close(fd);
		snprintf(why, why_len, "out of memory");
		return -ENOMEM;
	}
	/* The size fstat gave: a file that grows meanwhile is read as it was. */
	while (have < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + have, (size_t)st.st_size - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) { /* a regular file on a file system that honours O_NONBLOCK */
			int fl = fcntl(fd, F_GETFL);
			if (fl >= 0 && (fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0)
				continue;
		}
		if (n <= 0) {
			if (n == 0)
				break; /* shrank meanwhile: what is there */
			int e = errno;
			free(buf);
			close(fd);
			snprintf(why, why_len, "cannot read: %s", strerror(e));
			return -e;
		}
		have += (size_t)n;
	}
	close(fd);
	buf[have] = '\0';
	*out = buf;
	*len = have;
	return 0;
}

int fg_config_load(struct fg_config *c, const char *path, struct fg_config_error *err)
{
	memset(err, 0, sizeof(*err));
	snprintf(err->file, sizeof(err->file), "%s", path ? path : "");
	char *buf = NULL;
	size_t have = 0;
	int r = fg_file_read(path, 0, FG_CONFIG_FILE_MAX, &buf, &have, err->reason, sizeof(err->reason));
	if (r < 0)
		return r;
	if (memchr(buf, '\0', have)) {
		free(buf);
		snprintf(err->reason, sizeof(err->reason), "binary file (NUL byte)");
		return -EINVAL;
	}
	int rc = fg_config_parse(c, buf, path, err);

	free(buf);
	return rc;
}

/* ---- derived views ----------------------------------------------------- */

uint32_t fg_config_unauth_auto(uint32_t layers)
{
	/* The fleet's coordinator opens one WebSocket /flow?layer=L per layer
	 * and 4 HTTPS keep-alives from one address, all at once, before any of
	 * them authenticates; twice that lets a full reconnect overlap the
	 * previous attempt's handshakes still open (closed at
	 * handshake_timeout_ms). At least the 16 an idle flood is held to
	 * for a small model. */
	uint32_t n = 2u * (layers + 4u);
	return n > 16u ? n : 16u;
}

uint64_t fg_config_max_frame(const struct fg_config *c)
{
	return FG_HDR_LEN + FG_SEED_PREFIX_LEN + (uint64_t)c->hidden * c->max_seq_len * 4u;
}

void fg_config_slots(const struct fg_config *c, uint32_t n_shards, struct fg_slots_cfg *out)
{
	memset(out, 0, sizeof(*out));
	if (n_shards == 0)
		n_shards = 1;
	out->capacity = c->slot_capacity / n_shards;
	if (out->capacity == 0)
		out->capacity = 1;
	out->hidden = c->hidden;
	out->max_seq_len = c->max_seq_len;
	out->n_layers = c->layers;
	out->deadline_ns = c->slot_deadline_ns;
	out->n_shards = n_shards;
	memcpy(out->rules, c->rules, sizeof(out->rules));
}

void fg_config_limits(const struct fg_config *c, struct fg_seed_limits *out)
{
	out->hidden = c->hidden;
	out->max_seq_len = c->max_seq_len;
	out->orientation = c->orientation;
}

/* ---- the effective configuration as text ------------------------------- */

/* Appends to a setting's value; the value stays NUL-terminated and is cut
 * at its buffer (which the file's line limit keeps any value inside). */
struct vbuf {
	char *p;
	size_t cap, n;
};

static void vb_add(struct vbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void vb_add(struct vbuf *b, const char *fmt, ...)
{
	va_list ap;

	if (b->n >= b->cap)
		return;
	va_start(ap, fmt);
	int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		b->n += (size_t)k;
}

static void vb_addr(struct vbuf *b, const struct fg_addr *a, bool off)
{
	char host[INET6_ADDRSTRLEN];

	if (!a->set) {
		vb_add(b, "%s", off ? "off" : "");
		return;
	}
	inet_ntop(a->family, a->addr, host, sizeof(host));
	vb_add(b, a->family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, a->port);
}

static void vb_prefixes(struct vbuf *b, const struct fg_prefix *p, unsigned n)
{
	char host[INET6_ADDRSTRLEN];

	for (unsigned i = 0; i < n; i++) {
		inet_ntop(p[i].family, p[i].addr, host, sizeof(host));
		vb_add(b, "%s%s/%u", i ? ", " : "", host, p[i].len);
	}
}

static void vb_rule(struct vbuf *b, const struct fg_rule *r)
{
	for (unsigned i = 0; i < r->n; i++)
		vb_add(b, i ? ",%u" : "%u", r->order[i]);
}

/* The shortest %g text that reads back as d. */
static void vb_real(struct vbuf *b, double d)
{
	char t[32];

	for (int prec = 6; prec <= 17; prec++) {
		snprintf(t, sizeof(t), "%.*g", prec, d);
		if (strtod(t, NULL) == d)
			break;
	}
	vb_add(b, "%s", t);
}

static bool rule_equal(const struct fg_rule *a, const struct fg_rule *b)
{
	return a->n == b->n && memcmp(a->order, b->order, a->n) == 0;
}

/* The rule most layers < layers have (the first such on a tie): what
 * [rules] default stands for once the layers have been given theirs. */
static const struct fg_rule *rule_most_common(const struct fg_config *c)
{
	unsigned best = 0, best_n = 0;

	for (unsigned l = 0; l < c->layers; l++) {
		unsigned n = 0;
		for (unsigned k = 0; k < c->layers; k++)
			n += rule_equal(&c->rules[l], &c->rules[k]);
		if (n > best_n) {
			best_n = n;
			best = l;
		}
	}
	return &c->rules[best];
}

static bool addr_equal(const struct fg_addr *a, const struct fg_addr *b)
{
	if (!a->set || !b->set)
		return a->set == b->set;
	return a->family == b->family && a->port == b->port && memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

/* Write the value of key k (of family member n) in c into b. */
static void setting_value(const struct fg_config *c, const struct ckey *k, unsigned n, struct vbuf *b)
{
	const uint8_t *field = (const uint8_t *)c + k->off;

	switch (k->t) {
	case KT_U8: vb_add(b, "%u", *field); break;
	case KT_U16: vb_add(b, "%u", *(const uint16_t *)field); break;
	case KT_HEX16: vb_add(b, "0x%04X", *(const uint16_t *)field); break;
	case KT_U32:
	case KT_BYTES32: vb_add(b, "%u", *(const uint32_t *)field); break;
	case KT_BYTES64: vb_add(b, "%llu", (unsigned long long)*(const uint64_t *)field); break;
	case KT_MS_NS: vb_add(b, "%llu", (unsigned long long)(*(const uint64_t *)field / 1000000ull)); break;
	case KT_BOOL: vb_add(b, "%s", *(const bool *)field ? "true" : "false"); break;
	case KT_FRAC: vb_real(b, *(const double *)field); break;
	case KT_STR: vb_add(b, "%s", (const char *)field); break;
	case KT_SECCOMP: vb_add(b, "%s", seccomp_names[*field]); break;
	case KT_ORIENT: vb_add(b, "%s", orient_names[*field]); break;
	case KT_ACKWIN: vb_add(b, "%s", ackwin_names[*field]); break;
	case KT_U32_AUTO:
		if (*(const bool *)((const uint8_t *)c + k->size))
			vb_add(b, "auto");
		else
			vb_add(b, "%u", *(const uint32_t *)field);
		break;
	case KT_ADDR:
	case KT_ADDR_OFF: vb_addr(b, (const struct fg_addr *)field, k->t == KT_ADDR_OFF); break;
	case KT_PREFIXES: vb_prefixes(b, c->allow, c->n_allow); break;
	case KT_CANON_PREFIXES: vb_prefixes(b, c->canon_src, c->n_canon_src); break;
	case KT_POINT_PREFIXES: vb_prefixes(b, c->point_prefix[k->off], c->n_point_prefix[k->off]); break;
	case KT_RULE: vb_rule(b, rule_most_common(c)); break;
	case KT_LAYER_RULE: vb_rule(b, &c->rules[n]); break;
	case KT_LAYER_ADDR: vb_addr(b, &c->consumer[n], false); break;
	case KT_LINE_STATE: vb_add(b, "%s", fg_line_state_name(c->line_initial[n])); break;
	case KT_NEIGHS:
		for (unsigned i = 0; i < c->n_static_neigh; i++) {
			const struct fg_static_neigh *sn = &c->static_neigh[i];
			char host[INET6_ADDRSTRLEN];
			inet_ntop(sn->family == 6 ? AF_INET6 : AF_INET, sn->addr, host, sizeof(host));
			vb_add(b, "%s%s=%02x:%02x:%02x:%02x:%02x:%02x", i ? ", " : "", host, sn->mac[0], sn->mac[1],
			       sn->mac[2], sn->mac[3], sn->mac[4], sn->mac[5]);
		}
		break;
	}
}

/* The members of key k's family that c writes: n_out of them in out[]. A
 * key that is not a family is its one member 0. */
static unsigned setting_members(const struct fg_config *c, const struct ckey *k, unsigned *out)
{
	unsigned n = 0;

	switch (k->t) {
	case KT_LINE_STATE:
		for (unsigned l = 0; l < FG_LINES; l++)
			out[n++] = l;
		return n;
	case KT_LAYER_RULE: {
		const struct fg_rule *d = rule_most_common(c);
		for (unsigned l = 0; l < c->layers; l++)
			if (!rule_equal(&c->rules[l], d))
				out[n++] = l;
		return n;
	}
	case KT_LAYER_ADDR:
		/* a layer without a consumer of its own has the default's */
		for (unsigned l = 0; l < c->layers; l++)
			if (c->consumer[l].set && !addr_equal(&c->consumer[l], &c->consumer_default))
				out[n++] = l;
		return n;
	default:
		out[0] = 0;
		return 1;
	}
}

size_t fg_config_settings(const struct fg_config *c, void (*fn)(const struct fg_config_setting *s, void *arg),
			  void *arg)
{
	struct fg_config_setting s;
	unsigned members[FG_MAX_LAYERS];
	size_t count = 0;

	for (size_t i = 0; i < N_KEYS; i++) {
		const struct ckey *k = &config_keys[i];
		unsigned n = setting_members(c, k, members);

		for (unsigned m = 0; m < n; m++) {
			struct vbuf b = {.p = s.value, .cap = sizeof(s.value)};
			size_t kl = strlen(k->doc.key);

			memset(&s, 0, sizeof(s));
			s.doc = &k->doc;
			if (kl > 2 && strcmp(k->doc.key + kl - 2, ".N") == 0)
				snprintf(s.key, sizeof(s.key), "%.*s%u", (int)(kl - 1), k->doc.key, members[m]);
			else
				snprintf(s.key, sizeof(s.key), "%s", k->doc.key);
			setting_value(c, k, members[m], &b);
			fn(&s, arg);
			count++;
		}
	}
	return count;
}

/* config.h - the fanogate configuration file (INI, parsed with libinih).
 *
 * Owns: the defaults (the embedded default configuration runs on any Linux
 * box without a NIC), parsing, validation, and refusal of every invalid
 * value with file, line and reason. Pure: reads files (the configuration
 * and, for its callers, the files it names) or a string, no other I/O, no
 * logging; errors are returned in struct fg_config_error.
 *
 * Who may call: any thread; the result is a plain value the caller owns.
 * docs/config.md documents every key and docs/fanogate.ini.example is a
 * complete example; both are checked against the key table
 * (fg_config_key, printed by `fanoctl config keys`) by the tools tests.
 *
 * Syntax: inih's (sections, key = value, ';' or '#' comment lines, ';'
 * inline comments, an indented line continues the previous key's value,
 * which here means the key is given twice and is refused). Lines are at most
 * FG_CONFIG_LINE_MAX bytes. Every key may be given once. Numbers are decimal
 * or 0x-hex; byte sizes take K, M or G (binary) suffixes; booleans are
 * true/false, yes/no, on/off, 1/0. */
#ifndef FG_CONFIG_H
#define FG_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include "fg/common.h"
#include "fg/line.h"
#include "fg/slot.h"
#include "fg/wire.h"

#define FG_PATH_MAX 256
#define FG_CONFIG_LINE_MAX 197  /* inih's fixed line buffer, minus CR LF NUL */
#define FG_CONFIG_FILE_MAX (1u << 20)
#define FG_ALLOW_MAX 32
#define FG_STATIC_NEIGH_MAX 16 /* [dataplane] neighbours */
#define FG_CONSUMERS_MAX FG_MAX_LAYERS
#define FG_POINT_PREFIX_MAX 8 /* [points] prefixes per point */
#define FG_CANON_SRC_MAX 8    /* [shadow] canonical_sources prefixes */

/* An address prefix for the UDP source allowlist (IPv4 or IPv6). */
struct fg_prefix {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	uint8_t len; /* prefix bits */
};
/* True when addr (4 or 16 bytes per family) lies inside p. */
bool fg_prefix_match(const struct fg_prefix *p, int family, const uint8_t *addr);
/* Zero every bit of the 16-byte address addr after its first bits (the
 * prefix an IPv6 peer is counted by: [tls] ipv6_source_prefix). */
void fg_addr_cut(uint8_t addr[16], unsigned bits);
/* Parse "10.0.0.0/8", "fd00::/8", or a bare address (full length). Host
 * bits beyond the prefix must be zero (10.0.0.1/8 is refused as a likely
 * typo). 0 or -EINVAL; *out written only on success. */
FG_MUST_CHECK int fg_prefix_parse(const char *s, struct fg_prefix *out);

/* "a.b.c.d:port", "[v6]:port", "localhost:port" (127.0.0.1) or "*:port"
 * (0.0.0.0) listener or peer address; no name resolution. Port 1..65535.
 * 0 or -EINVAL; *out written only on success (set = true). */
struct fg_addr {
	int family;
	uint8_t addr[16];
	uint16_t port;
	bool set;
};
FG_MUST_CHECK int fg_addr_parse(const char *s, struct fg_addr *out);
/* As fg_addr_parse, but port 0 is accepted (a listener or a bind address
 * that lets the kernel pick). 0 or -EINVAL; *out written only on success. */
FG_MUST_CHECK int fg_addr_parse_port0(const char *s, struct fg_addr *out);

/* [daemon] seccomp: what a system call outside the daemon's allow-list gets
 * once it is up (control/cp_harden.c). */
/* [cluster]: fleet-wide line states, model epoch and liveness in etcd
 * (docs/cluster.md, control/cluster/). node empty = one appliance, no etcd. */
#define FG_CLUSTER_ENDPOINTS_MAX 8
#define FG_CLUSTER_NAME_MAX 48
struct fg_cluster_cfg {
	char node[FG_CLUSTER_NAME_MAX];       /* this node's name: [A-Za-z0-9._-], unique in the fleet */
	char endpoints_text[FG_CONFIG_LINE_MAX + 1]; /* as written; parsed into endpoint[] */
	char endpoint[FG_CLUSTER_ENDPOINTS_MAX][64]; /* "http://127.0.0.1:2379" (no trailing '/') */
	unsigned n_endpoints;
	bool tls;                             /* endpoints are https:// */
	char ca[FG_PATH_MAX], cert[FG_PATH_MAX], key[FG_PATH_MAX]; /* https only; cert with key */
	char layers_text[FG_CONFIG_LINE_MAX + 1]; /* "all" or "0-13,20"; parsed into serves[] */
	uint8_t serves[FG_MAX_LAYERS / 8];    /* bit L: this node serves destination layer L */
	char prefix[64];                      /* etcd key prefix, default "/fanogate/" */
	uint32_t lease_ttl_s;                 /* node lease TTL, default 3 */
	uint32_t timeout_ms;                  /* one etcd request, default 1000 */
	uint32_t keepalive_ms;                /* lease renewal period; 0: lease_ttl_s * 1000 / 3 */
	uint32_t lost_after_ms;               /* no success this long: etcd lost, default 3000 */
	uint32_t stale_after_s;               /* a peer's lease unrefreshed this long: lost; 0 auto (cl_lease_stale_s) */
	uint32_t beat_ms;                     /* heartbeat period (beats/<node>), default 200; 0: off */
	uint32_t beat_down_ms;                /* no beat of a peer this long: down; 0 auto (cl_beat_down_ms) */
	char key_file[FG_PATH_MAX];           /* the fleet's HMAC key (read at start, 0600 or stricter) */
	char user[64];                        /* etcd user (etcd auth); empty: none */
	char password_file[FG_PATH_MAX];      /* its password (first line), with user */
	bool insecure;                        /* allow http:// to a non-loopback etcd */
	uint32_t nodes_max;                   /* nodes tracked, this one included, default 64 */
};

enum fg_seccomp_mode {
	FG_SECCOMP_OFF,  /* no filter */
	FG_SECCOMP_ON,   /* refused with EPERM, counted and logged (default) */
	FG_SECCOMP_KILL, /* the whole process is killed (SIGSYS) */
	FG_SECCOMP_LOG,  /* allowed, and the kernel logs it (finding the set) */
};

enum fg_ack_window { FG_ACKWIN_EXACT = 0, FG_ACKWIN_FLEET = 1, FG_ACKWIN_AUTO = 2 };

struct fg_config {
	/* [model] */
	uint32_t hidden;       /* default 1536 */
	uint16_t layers;       /* default 28 */
	uint32_t max_seq_len;  /* default 1 */
	/* [bands] */
	struct fg_bands bands; /* defaults of wire.md section 3 */
	/* [wire] */
	uint8_t orientation;   /* enum fg_orientation_mode, default FG_ORIENT_BIT */
	/* [rules] default = 1,3,5 (Pair X); layer.N = a,b,c */
	struct fg_rule rules[FG_MAX_LAYERS];
	/* [slots] */
	uint32_t slot_capacity;   /* default 4096 */
	uint64_t slot_deadline_ns;/* default 3000 ms (the fleet's resend schedule + margin) */
	/* [lines] */
	enum fg_line_state line_initial[FG_LINES]; /* default shadow for every line */
	struct fg_line_policy policy;             /* auto_promote off, 64 clean, 10 s */
	double shadow_sample;                     /* fraction of active-line seeds audited, default 0.01 */
	/* [shadow] (control/cp_epoch_guard.h) */
	struct fg_prefix canon_src[FG_CANON_SRC_MAX]; /* canonical_sources: UDP sources whose canonical
						       * reports are believed; none (default): UDP reports refused */
	unsigned n_canon_src;
	uint32_t epoch_min_interval_ms;           /* conflict-driven epoch advances at most one per this, default 1000 */
	/* [udp] */
	uint16_t udp_port;      /* fragmented profile, default 4242 */
	uint16_t udp_raw_port;  /* raw profile, 0 = off (default) */
	uint16_t udp_layer_ports; /* fragmented profile, port udp_layer_ports + L is layer L; 0 = off (default) */
	uint32_t mtu;           /* UDP payload MTU for fragments and ACKs, default 1472 */
	uint32_t ack_interval_ms; /* default 50 */
	bool send_status;       /* status frames to UDP senders, default true */
	bool status_accepted;   /* ... also for outcome accepted (awaiting the other lines), default true */
	struct fg_prefix allow[FG_ALLOW_MAX];
	unsigned n_allow;       /* 0 = allow all */
	/* [consumers] layer.N = host:port; default = host:port. After loading,
	 * consumer[L] is the effective UDP consumer of layer L (its own entry,
	 * else the default); set == false: no UDP delivery for that layer
	 * (WebSocket subscribers and pulls still get the seed). Default: none. */
	struct fg_addr consumer[FG_CONSUMERS_MAX];
	struct fg_addr consumer_default;
	/* [consumers] reliable UDP delivery: an unACKed resolved seed is resent
	 * after resend_ms, at most resends times, then given up (counted);
	 * pending_max unACKed deliveries are tracked per lcore. */
	uint32_t delivery_resend_ms;  /* default 200 */
	uint32_t delivery_resends;    /* default 5 */
	uint32_t delivery_pending_max;/* default 4096 */
	/* [consumers] ack_window: how the consumers' ACK entries read (wire.md
	 * 2.1). EXACT: an entry ACKs exactly the sequences it names. FLEET:
	 * the fleet's receiving transport, base = its lowest held sequence and
	 * at most base..base+63 ACKed: a delivery below the base is delivered,
	 * one beyond base+63 waits for the window to move instead of being
	 * resent (dataplane/dp_dlv.h). AUTO (default): exact until a stream's
	 * consumer ACKs the fleet's way, then fleet (dataplane/dp_cwin.h). A
	 * base below the window or beyond anything sent is ignored either way. */
	uint8_t consumer_ack_window;  /* enum fg_ack_window */
	/* [points] eN = prefixes: UDP sources serving Fano point N (liveness:
	 * a datagram within peer_timeout_ms); point_prefix[p-1][0..n-1]. A point
	 * with no prefix is judged by its TLS peers only (today's behaviour). */
	struct fg_prefix point_prefix[FG_POINTS][FG_POINT_PREFIX_MAX];
	uint8_t n_point_prefix[FG_POINTS];
	uint32_t peer_timeout_ms;     /* default 3000 */
	uint32_t reasm_contexts;  /* default 1024 */
	uint32_t reasm_timeout_ms;/* default 250 */
	/* [dataplane] */
	char dp_profile[FG_PATH_MAX]; /* drivers-config profile, default "af_xdp" */
	char dp_port[64];             /* the NIC the profile drives (its ${port}): interface or PCI address; "" = the profile's default */
	uint32_t lcores;              /* poll lcores, default 1 */
	uint32_t answer_spin_us;      /* control plane polls the lanes this long for an owed answer, default 50 */
	/* [dataplane] neighbours = IP=MAC, ...: fixed IP -> MAC entries that
	 * nothing on the wire changes (dataplane/dp_neigh.c); default none */
	struct fg_static_neigh {
		uint8_t family;   /* 4 or 6 */
		uint8_t addr[16]; /* IPv4 in the first 4 bytes */
		uint8_t mac[6];
	} static_neigh[FG_STATIC_NEIGH_MAX];
	unsigned n_static_neigh;
	/* [dataplane] neighbour resolution (dataplane/dp_neigh.c): the
	 * dataplane asks (ARP request, IPv6 neighbour solicitation) for a
	 * consumer at first use, when its deliveries go unanswered, and when
	 * its entry was not confirmed for neighbour_reachable_ms; an answer
	 * may change a known MAC only within neighbour_answer_ms of the
	 * request, which is also the least time between two requests. */
	uint32_t neigh_reachable_ms;  /* default 30000 */
	uint32_t neigh_answer_ms;     /* default 1000 */
	/* [tls] */
	struct fg_addr tls_listen;    /* default 0.0.0.0:8443 */
	char tls_cert[FG_PATH_MAX], tls_key[FG_PATH_MAX], tls_ca[FG_PATH_MAX];
					/* cert/key: both or neither; the daemon (cp_tls) needs both */
	bool tls_require_client_cert;   /* default false; needs tls_ca */
	char tokens_file[FG_PATH_MAX];  /* bearer tokens, one per line; empty = no token auth */
	uint32_t max_connections;     /* default 1024 */
	uint32_t ws_max_message;      /* default 1 MiB */
	uint32_t handshake_timeout_ms;/* default 5000 */
	uint32_t idle_timeout_ms;     /* default 60000 */
	uint32_t send_queue_max;      /* bytes per connection, default 4 MiB */
	uint32_t unauth_per_source;   /* unauthenticated connections per source address in force; 0 = no limit */
	bool unauth_per_source_auto;  /* "auto" (the default): unauth_per_source = fg_config_unauth_auto(layers) */
	uint32_t ipv6_source_prefix;  /* leading bits of an IPv6 peer's address that name its source, default 64 */
	double auth_reserve;          /* fraction of max_connections only authenticated ones may hold, default 0.25 */
	uint32_t body_min_rate;       /* bytes/s a request body must keep up, default 64 KiB */
	/* [audit] */
	char audit_path[FG_PATH_MAX]; /* default /var/lib/fanogate/audit.log */
	uint64_t audit_rotate_bytes;  /* default 64 MiB */
	uint32_t group_commit_us;     /* default 1000 */
	char alert_command[FG_PATH_MAX]; /* run on divergence; empty = none */
	uint32_t alert_min_interval_ms; /* default 10000 */
	/* [operator] */
	char op_socket[FG_PATH_MAX];  /* default /run/fanogate/fanoctl.sock */
	char op_group[64];            /* group allowed on the socket; empty = root only */
	/* [metrics] */
	struct fg_addr metrics_listen;/* default 127.0.0.1:9464; "off" = set false */
	/* [daemon] */
	char run_user[64];            /* run as this user once started; empty = uid 0, no capabilities */
	char run_group[64];           /* with run_user; empty = the user's primary group */
	uint8_t seccomp;              /* enum fg_seccomp_mode, default FG_SECCOMP_ON */
	/* [cluster] */
	struct fg_cluster_cfg cluster;
};

struct fg_config_error {
	char file[FG_PATH_MAX];
	int line;         /* 1-based; 0 when not about one line */
	char reason[256];
};

/* Fill every default (the embedded default configuration). */
void fg_config_default(struct fg_config *c);
/* Read a file (at most FG_CONFIG_FILE_MAX bytes) and parse it over the
 * defaults (keys not in the file keep their default). Returns 0 with *c
 * written, or -EINVAL (invalid value; err->line says where) / -errno (cannot
 * read; err->line 0) with *err filled and *c untouched. */
FG_MUST_CHECK int fg_config_load(struct fg_config *c, const char *path, struct fg_config_error *err);
/* Files the configuration names (the configuration itself, [tls] cert,
 * key, ca, tokens_file, ...): opened without blocking (O_NONBLOCK, so a
 * FIFO without a writer or a device cannot hang the daemon, a reload or a
 * check), then refused unless fstat says a regular file of at most max
 * bytes (0: any size). Reasons (in why, without the path, which the caller
 * names with its key): "is a FIFO, not a regular file", "is a directory,
 * ...", "is a character device, ...", "cannot open: <strerror>", "file
 * larger than N bytes". Any thread; the only I/O of the pure core besides
 * fg_config_load. */
#define FG_FILE_NOFOLLOW 1u /* refuse a symbolic link at path itself */
/* The open fd (O_RDONLY, close-on-exec; the caller closes it), or -errno. */
FG_MUST_CHECK int fg_file_open(const char *path, unsigned flags, uint64_t max, char *why, size_t why_len);
/* The whole file in a new NUL-terminated buffer (*out, the caller frees it;
 * *len bytes before the NUL). 0 or -errno; *out and *len only on success. */
FG_MUST_CHECK int fg_file_read(const char *path, unsigned flags, uint64_t max, char **out, size_t *len,
			       char *why, size_t why_len);
/* "is a FIFO", "is a directory", "is a character device", ... for st_mode. */
const char *fg_file_kind(unsigned mode);
/* Same from a NUL-terminated string (tests, fuzzing, the embedded default).
 * name is used as err->file. */
FG_MUST_CHECK int fg_config_parse(struct fg_config *c, const char *text, const char *name,
				  struct fg_config_error *err);
/* Derived: slot table configuration for one shard of n (capacity / n each,
 * at least 1), the model shape, the deadline and every layer's rule. */
void fg_config_slots(const struct fg_config *c, uint32_t n_shards, struct fg_slots_cfg *out);
void fg_config_limits(const struct fg_config *c, struct fg_seed_limits *out);
/* [tls] unauth_per_source = auto for a model of `layers` layers:
 * 2 * (layers + 4), at least 16 (docs/config.md [tls] has the reasoning). */
uint32_t fg_config_unauth_auto(uint32_t layers);
/* Bytes of the largest seed frame the configuration admits:
 * 10 + 8 + hidden * max_seq_len * 4. */
uint64_t fg_config_max_frame(const struct fg_config *c);

/* The key table, for documentation and `fanoctl config keys`. Keys written
 * "layer.N" / "line.N" stand for a family (N a layer number, or a line index
 * or triple). All strings are static. */
struct fg_config_key_doc {
	const char *section; /* "model", ... */
	const char *key;     /* "hidden", "layer.N", ... */
	const char *type;    /* "uint", "bytes", "bool", "fraction", "string", "address", "prefixes", "rule", "state", "hex16", "ms", "mode" */
	const char *def;     /* default as written in a file; "" when empty */
	const char *range;   /* accepted values */
	const char *help;    /* one sentence */
};
/* Number of keys, and key i (NULL when i >= the count). */
size_t fg_config_key_count(void);
const struct fg_config_key_doc *fg_config_key(size_t i);

/* One effective setting of a configuration as a file writes it: a key of
 * the table, or one member of a family (layer.3, line.0). */
struct fg_config_setting {
	const struct fg_config_key_doc *doc; /* its key in the table (static) */
	char key[40];                        /* "hidden", "layer.3", "line.0" */
	char value[512];                     /* "1536", "0xAF60", "true", "1,3,5", "10.0.0.0/8, fd00::/64"; "" empty */
};
/* Call fn(s, arg) for every setting of c, in the table's order (so section
 * by section): every key of the table once, and a family member by member:
 * line.N every line, layer.N each layer < layers whose value differs from
 * its section's default ([rules] default is the rule most layers have).
 * Numbers are written plain (bytes as a count, ms as ms), bands in hex;
 * the text of every setting, written back as a file, parses to the same
 * configuration. s is only valid during the call. Returns the number of
 * settings. Who may call: any thread. */
size_t fg_config_settings(const struct fg_config *c, void (*fn)(const struct fg_config_setting *s, void *arg),
			  void *arg);

#endif

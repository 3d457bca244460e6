/* config.h - the fanogate configuration file (INI, parsed with libinih).
 *
 * Owns: the defaults (the embedded default configuration runs on any Linux
 * box without a NIC), parsing, validation, and refusal of every invalid
 * value with file, line and reason. Pure: reads a file or a string, no other
 * I/O, no logging; errors are returned in struct fg_config_error.
 *
 * Who may call: any thread; the result is a plain value the caller owns.
 * docs/config.md documents every key; fanogate.ini.example is generated
 * from the same table (fg_config_keys). */
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
#define FG_ALLOW_MAX 32
#define FG_CONSUMERS_MAX FG_MAX_LAYERS

/* An address prefix for the UDP source allowlist (IPv4 or IPv6). */
struct fg_prefix {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	uint8_t len; /* prefix bits */
};
/* True when addr (4 or 16 bytes per family) lies inside p. */
bool fg_prefix_match(const struct fg_prefix *p, int family, const uint8_t *addr);
/* Parse "10.0.0.0/8", "fd00::/8", or a bare address (full length). 0 or -EINVAL. */
FG_MUST_CHECK int fg_prefix_parse(const char *s, struct fg_prefix *out);

/* "host:port" / "[v6]:port" listener or peer address. */
struct fg_addr {
	int family;
	uint8_t addr[16];
	uint16_t port;
	bool set;
};
FG_MUST_CHECK int fg_addr_parse(const char *s, struct fg_addr *out);

struct fg_config {
	/* [model] */
	uint32_t hidden;       /* default 1536 */
	uint16_t layers;       /* default 28 */
	uint32_t max_seq_len;  /* default 1 */
	/* [bands] */
	struct fg_bands bands; /* defaults of wire.md section 3 */
	/* [rules] default = 1,3,5 (Pair X); layer.N = a,b,c */
	struct fg_rule rules[FG_MAX_LAYERS];
	/* [slots] */
	uint32_t slot_capacity;   /* default 4096 */
	uint64_t slot_deadline_ns;/* default 500 ms */
	/* [lines] */
	enum fg_line_state line_initial[FG_LINES]; /* default shadow for every line */
	struct fg_line_policy policy;             /* auto_promote off, 64 clean, 10 s */
	double shadow_sample;                     /* fraction of active-line seeds audited, default 0.01 */
	/* [udp] */
	uint16_t udp_port;      /* fragmented profile, default 4242 */
	uint16_t udp_raw_port;  /* raw profile, 0 = off (default) */
	uint32_t mtu;           /* UDP payload MTU for fragments and ACKs, default 1472 */
	uint32_t ack_interval_ms; /* default 50 */
	bool send_status;       /* status frames to UDP senders, default true */
	struct fg_prefix allow[FG_ALLOW_MAX];
	unsigned n_allow;       /* 0 = allow all */
	struct fg_addr consumer[FG_CONSUMERS_MAX]; /* [consumers] layer.N = host:port; default = ... */
	struct fg_addr consumer_default;
	uint32_t reasm_contexts;  /* default 1024 */
	uint32_t reasm_timeout_ms;/* default 250 */
	/* [dataplane] */
	char dp_profile[FG_PATH_MAX]; /* drivers-config profile, default "af_xdp" */
	uint32_t lcores;              /* poll lcores, default 1 */
	/* [tls] */
	struct fg_addr tls_listen;    /* default 0.0.0.0:8443 */
	char tls_cert[FG_PATH_MAX], tls_key[FG_PATH_MAX], tls_ca[FG_PATH_MAX];
	bool tls_require_client_cert;
	char tokens_file[FG_PATH_MAX];
	uint32_t max_connections;     /* default 1024 */
	uint32_t ws_max_message;      /* default 1 MiB */
	uint32_t handshake_timeout_ms;/* default 5000 */
	uint32_t idle_timeout_ms;     /* default 60000 */
	uint32_t send_queue_max;      /* bytes per connection, default 4 MiB */
	/* [audit] */
	char audit_path[FG_PATH_MAX]; /* default /var/lib/fanogate/audit.log */
	uint64_t audit_rotate_bytes;  /* default 64 MiB */
	uint32_t group_commit_us;     /* default 1000 */
	char alert_command[FG_PATH_MAX];
	uint32_t alert_min_interval_ms; /* default 10000 */
	/* [operator] */
	char op_socket[FG_PATH_MAX];  /* default /run/fanogate/fanoctl.sock */
	char op_group[64];
	/* [metrics] */
	struct fg_addr metrics_listen;/* default 127.0.0.1:9464 */
};

struct fg_config_error {
	char file[FG_PATH_MAX];
	int line;         /* 1-based; 0 when not about one line */
	char reason[256];
};

/* Fill every default (the embedded default configuration). */
void fg_config_default(struct fg_config *c);
/* Parse a file over the defaults. Returns 0, or -EINVAL / -errno with *err filled. */
FG_MUST_CHECK int fg_config_load(struct fg_config *c, const char *path, struct fg_config_error *err);
/* Same from a string (tests, fuzzing, the embedded default). name is used in errors. */
FG_MUST_CHECK int fg_config_parse(struct fg_config *c, const char *text, const char *name,
				  struct fg_config_error *err);
/* Derived: slot table configuration for one shard of n (capacity / n each). */
void fg_config_slots(const struct fg_config *c, uint32_t n_shards, struct fg_slots_cfg *out);
void fg_config_limits(const struct fg_config *c, struct fg_seed_limits *out);

#endif

/* fleet_run.h - the fanofleet run engine: options of one emulation run and
 * its entry point. Who may call: fleet_main.c, on the main thread. */
#ifndef FLEET_RUN_H
#define FLEET_RUN_H

#include "fleet.h"
#include "fleet_crit.h"

#define FL_UDP_NODES 3u /* --udp-node targets besides --udp */

enum fl_assign { FL_ASSIGN_LAYER, FL_ASSIGN_SLOT, FL_ASSIGN_STATION };
enum fl_mode { FL_MODE_CHAIN, FL_MODE_BURST };
enum fl_canon_mode { FL_CANON_DIGEST, FL_CANON_FULL, FL_CANON_NONE };

struct fl_run_opts {
	/* model */
	uint64_t tokens;
	uint16_t layers;
	uint32_t hidden;
	uint64_t seed;
	uint32_t token_base;     /* token_seq of token 0 */
	/* traffic */
	double mix[FL_IN_COUNT]; /* weights per ingress */
	enum fl_assign assign;
	/* Explicit per-station ingress (--station), -1 = by the mix:
	 * [0][l] the DOWN station of layer l (sends x_l and ffn_l),
	 * [1][l] the ATTN station of layer l (sends attn_l). */
	int8_t station_ingress[2][32];
	enum fl_mode mode;
	double rate;             /* tokens per second, 0 = as fast as the window allows */
	uint32_t window;         /* tokens in flight */
	enum fl_canon_mode canon;
	int canon_via;           /* enum fl_ingress, or -1 = first available of wss, https, udp */
	/* fault injection */
	int64_t corrupt_at;      /* token index, -1 = none */
	unsigned corrupt_line;   /* Fano line index of the corrupted contribution: 1, 3 or 5 */
	int corrupt_layer;       /* destination layer, -1 = layers / 2 */
	uint32_t corrupt_index;  /* float index whose low bit flips */
	/* UDP */
	bool have_udp;
	struct sockaddr_storage udp_dst;
	socklen_t udp_dlen;
	bool have_udp_bind;
	struct sockaddr_storage udp_bind; /* source address (port 0 = any) */
	socklen_t udp_blen;
	struct fl_udp_opts udp;
	bool have_consumer;
	struct sockaddr_storage consumer;
	socklen_t consumer_len;
	enum fl_cack consumer_ack; /* how the UDP consumer ACKs (default EACH) */
	/* Address layers the fleet's way (wire.md 3): streams carry
	 * dst_layer & 0x0F, the layer is named by the address: HTTPS
	 * /layers/<L>/residual-seed (and /canonical, the pull GET), one WSS
	 * connection per layer bound with /flow?layer=<L>, UDP to port
	 * udp_layer_ports + L (when set; else the --udp port). */
	bool fleet_addr;
	uint16_t udp_layer_ports;
	/* A fleet split across appliances ([cluster] layers, docs/cluster.md):
	 * --udp-node FIRST[-LAST]=HOST:PORT sends destination layers FIRST..LAST
	 * to that appliance (udp_node_of[d] = k + 1 for udp_node[k]); the other
	 * layers go to udp_dst. */
	unsigned n_udp_nodes;
	struct sockaddr_storage udp_node[FL_UDP_NODES];
	socklen_t udp_node_len[FL_UDP_NODES];
	uint8_t udp_node_of[32];
	/* TLS */
	bool have_tls;
	struct fl_tls_opts tls;
	uint32_t wss_conns, https_conns;
	bool subscribe;
	uint32_t pull_conns;     /* > 0: also GET /residual-seed/<layer>/<token_seq> per slot */
	/* run control */
	uint32_t slot_timeout_ms;
	uint32_t linger_ms;      /* after the last token, keep serving the UDP consumer (ACKing the
				  * appliance's resends of seeds whose ACK was lost or that arrived
				  * by another path first) up to this long, until the socket has
				  * been quiet for linger_quiet_ms; default 2000, 0 = off */
	uint32_t linger_quiet_ms; /* default FL_LINGER_QUIET_MS */
	uint32_t duration_s;     /* hard cap, 0 = none */
	uint64_t max_missing;
	const char *json_path;
	const char *samples_path;
	bool quiet;
	/* Timing of the canonical reports: != 0, each slot's report is sent
	 * this long after its contributions; < 0, the report goes first and
	 * the contributions |canon_delay_us| later (the shadow audit's lead,
	 * docs/lines.md). Not with crit. */
	int64_t canon_delay_us;
	/* The critical path (bench/critical): each layer's stations compute
	 * for their stage times (a, g, d: drawn per token and layer, uniform in
	 * [lo, hi] us), every hop takes net_delay_us one way, the coordinator's
	 * relay takes a relay time (drawn from relay_ns[] when given, else
	 * uniform in [relay_lo_us, relay_hi_us]). FL_CRIT_JUMP: the fleet's
	 * gate decides each layer on the status fanogate sent for its last
	 * contribution: passed, the next layer starts on the jumped seed,
	 * however late; not passed, on the relay, never before the decision
	 * (fleet_crit.h); FL_CRIT_CANONICAL: always the relay, no gate. */
	enum fl_crit crit;
	uint32_t stage_lo_us[FL_ROLES], stage_hi_us[FL_ROLES]; /* a, g, d */
	uint32_t net_delay_us;
	uint32_t relay_lo_us, relay_hi_us;
	const uint64_t *relay_ns; /* measured relay hops (fanofleet --relay-bench --samples) */
	size_t n_relay;
};

#define FL_LINGER_QUIET_MS 400ull

void fl_run_opts_default(struct fl_run_opts *o);
/* Run the emulation. SIGUSR1 drains it: no new token is issued, the run
 * ends once those in flight are retired and is judged on them (a test
 * ends a run when its scenario is over). Returns the process exit code:
 * 0 all seeds bit-exact and present; 1 a wrong seed (or an injected
 * corruption that did not show); 2 more missing seeds than allowed;
 * 3 set-up failure; 4 interrupted. */
int fl_run(const struct fl_run_opts *o);

#endif

/* fleet_main.c - fanofleet's command line: parses options into a run
 * (fleet_run.c), the loopback fake receiver (fleet_fake.c) or the relay
 * benchmark (fleet_relay.c).
 *
 * Who may call: the process entry point only (main thread). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fleet_run.h"

static void usage(FILE *f)
{
	fputs(
"usage: fanofleet [options]                 emulate the fleet against fanogate\n"
"       fanofleet --fake-receiver [options]  loopback stand-in for the appliance (UDP)\n"
"       fanofleet --relay-bench [options]    DOWN -> coordinator -> ATTN over HTTPS\n"
"\n"
"model:\n"
"  --tokens N            tokens to decode (200)\n"
"  --layers N            model layers (28); slots per token = layers - 1\n"
"  --hidden N            floats per row (1536)\n"
"  --seed N              generator seed (1)\n"
"  --token-base N        token_seq of the first token (1)\n"
"traffic:\n"
"  --mix udp=W,wss=W,https=W   ingress weights (1,1,1; unavailable ones are skipped)\n"
"  --assign layer|slot|station how stations pick an ingress (layer)\n"
"  --station SPEC=INGRESS  force stations (repeatable): SPEC attn|down|all[FIRST[-LAST]],\n"
"                        e.g. attn=wss, down0-13=udp (DOWN sends x and ffn, ATTN attn)\n"
"  --mode chain|burst    chain: a token's next layer waits for the resolved seed (chain)\n"
"  --rate R              tokens per second, 0 = as fast as the window allows (0)\n"
"  --window N            tokens in flight (8)\n"
"  --canonical digest|full|none   canonical reports of the coordinator (digest)\n"
"  --canonical-via udp|wss|https  their ingress (wss, else https, else udp)\n"
"  --canon-delay-us N    send each slot's canonical report N us after its\n"
"                        contributions; negative: the report first, the\n"
"                        contributions -N us later (the appliance's lead)\n"
"critical path (bench/critical):\n"
"  --critical-path jump|canonical   stations compute for their stage times and\n"
"                        every hop takes --net-delay-us; jump: the fleet's gate\n"
"                        reads the status for each layer's last contribution\n"
"                        (bitset 0x7f, resolved, not shadow): passed, the hop is\n"
"                        skipped and the next layer waits for the jumped seed,\n"
"                        however late; not passed, the coordinator relays, not\n"
"                        before that status came; canonical: always the relay.\n"
"                        Per token: wall time, the chain alone, the saving (< 0:\n"
"                        a cost); layers gate passed, jumped, in time (--json)\n"
"  --stage-a-us N|LO-HI, --stage-g-us N|LO-HI, --stage-d-us N|LO-HI\n"
"                        ATTN, GATE-UP and DOWN compute per layer, fixed or\n"
"                        uniform in LO..HI (300-670 each: 0.9-2 ms a layer)\n"
"  --net-delay-us N      one-way delay of every hop (0)\n"
"  --relay-us N|LO-HI    the coordinator's relay, fixed or uniform (100-200)\n"
"  --relay-samples FILE  draw it from measured hops instead (ns, the last field\n"
"                        of each line:\n"
"                        fanofleet --relay-bench --samples FILE)\n"
"faults:\n"
"  --corrupt-at T        token index whose contribution gets one flipped low bit\n"
"  --corrupt-line N      Fano line of that contribution: 1 (x), 3 (attn), 5 (ffn) (3)\n"
"  --corrupt-layer D     its destination layer (layers / 2)\n"
"  --corrupt-index I     float index whose lowest bit flips (7)\n"
"  --loss P, --dup P     UDP: drop / duplicate each fragment with probability P\n"
"  --udp-drop-over-cwnd  UDP: drop sends beyond cwnd like the fleet (default: queue)\n"
"targets:\n"
"  --udp HOST:PORT       fanogate's fragmented-profile UDP port (dataplane)\n"
"  --udp-bind HOST       source address of the UDP stations\n"
"  --udp-node FIRST[-LAST]=HOST:PORT  destination layers FIRST..LAST go to this\n"
"                        appliance instead (a fleet split across appliances, each\n"
"                        serving its [cluster] layers; repeatable, 3 at most)\n"
"  --mtu N               UDP payload MTU (1472)\n"
"  --rto-ms N            UDP: a frame unACKed this long is resent ... (200)\n"
"  --check-ms N          ... when the sender's check timer fires, every N ms (200:\n"
"                        the fleet's schedule, attempts ~400 ms apart; 0: at rto)\n"
"  --resends N           UDP resends before a frame is given up (5)\n"
"  --address band|fleet  band: the stream names the layer (seed band + L); fleet:\n"
"                        the fleet's dispatcher, stream = band + (L & 0x0F) and the\n"
"                        address names L: https /layers/L/residual-seed, one wss\n"
"                        /flow?layer=L per layer, UDP port --udp-layer-ports + L\n"
"  --udp-layer-ports B   with --address fleet: send layer L's UDP to port B + L\n"
"                        (fanogate's [udp] layer_ports); default: the --udp port\n"
"  --consumer HOST:PORT  bind the UDP consumer of resolved seeds here\n"
"  --no-consumer-ack     do not ACK resolved seeds on the consumer socket\n"
"  --consumer-acks each|fleet|none  each: ACK every seed received (default);\n"
"                        fleet: as the fleet's transport, a 64-sequence window per\n"
"                        stream from the lowest held, trimmed once 128 are held,\n"
"                        re-ACKed every 50 ms\n"
"  --tls HOST:PORT       fanogate's TLS listener (wss:///flow, https:///residual-seed)\n"
"  --sni NAME            TLS server name to send and verify\n"
"  --ca FILE | --insecure   verify the server with FILE / not at all\n"
"  --cert FILE --key FILE   client certificate (mutual TLS)\n"
"  --token TOKEN | --token-file FILE   Bearer token (file: first word of first line)\n"
"  --wss-conns N         WebSocket connections (2); the first subscribes ?layers=all\n"
"  --https-conns N       HTTPS keep-alive connections (4)\n"
"  --no-subscribe        do not subscribe to resolved seeds over WSS\n"
"  --pull N              also fetch every seed with GET /residual-seed/L/T (long poll)\n"
"                        over N HTTPS connections (give N >= --window)\n"
"run:\n"
"  --slot-timeout-ms N   a slot without a resolved seed by then is missing (3500)\n"
"  --linger-ms N         after the last token, keep ACKing resolved seeds on the UDP\n"
"                        consumer up to N ms, until it is quiet for --linger-quiet-ms\n"
"                        (the appliance resends seeds whose ACK it missed) (2000; 0 off)\n"
"  --linger-quiet-ms N   how long a quiet consumer socket ends the linger: longer than\n"
"                        the appliance's resend interval times the transmissions a\n"
"                        lossy path can lose in a row (400)\n"
"  --duration S          hard time limit (none)\n"
"  --max-missing N       missing seeds tolerated before exit 2 (0)\n"
"  --json FILE           write the results as JSON\n"
"  --samples FILE        write every latency sample: class path ns ns_from_write_start\n"
"                        (from the return of the write that handed the slot's last\n"
"                        contribution over, and from when that write began)\n"
"  --quiet               no progress lines\n"
"fake receiver:\n"
"  --listen HOST:PORT    UDP port to receive on (127.0.0.1:14242)\n"
"  --consumer HOST:PORT  where resolved seeds go\n"
"  --fake-drop P         drop incoming fragments with probability P\n"
"  --no-ack              never ACK (exercises the sender's retransmits)\n"
"relay bench:\n"
"  --hops N, --warmup N, --cert FILE --key FILE, --samples FILE\n"
"SIGUSR1: issue no new token, end once those in flight are judged\n"
"exit codes: 0 pass, 1 wrong seed or injected corruption not seen, 2 missing seeds,\n"
"            3 set-up failure, 4 interrupted\n", f);
}

static int parse_mix(const char *s, double *mix)
{
	double m[FL_IN_COUNT] = { 0, 0, 0 };
	char buf[256];
	snprintf(buf, sizeof buf, "%s", s);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		double w = 1.0;
		if (eq) {
			*eq = 0;
			char *end;
			w = strtod(eq + 1, &end);
			if (*end || w < 0)
				return -EINVAL;
		}
		unsigned i;
		for (i = 0; i < FL_IN_COUNT; i++)
			if (strcmp(tok, fl_ingress_name(i)) == 0)
				break;
		if (i == FL_IN_COUNT)
			return -EINVAL;
		m[i] = w;
	}
	memcpy(mix, m, sizeof m);
	return 0;
}

static int ingress_of(const char *s);

/* --udp-node FIRST[-LAST]=HOST:PORT: destination layers FIRST..LAST (1..31)
 * are sent to HOST:PORT (o->udp_node[k]) rather than --udp. */
static int parse_udp_node(const char *arg, struct fl_run_opts *o)
{
	char *end;
	const char *eq = strchr(arg, '=');
	unsigned long lo = strtoul(arg, &end, 10), hi = lo;
	if (!eq || end == arg || o->n_udp_nodes >= FL_UDP_NODES)
		return -EINVAL;
	if (*end == '-')
		hi = strtoul(end + 1, &end, 10);
	if (end != eq || lo < 1 || lo > hi || hi > 31)
		return -EINVAL;
	unsigned k = o->n_udp_nodes;
	if (tool_addr_parse(eq + 1, true, &o->udp_node[k], &o->udp_node_len[k]) < 0)
		return -EINVAL;
	for (unsigned long l = lo; l <= hi; l++)
		o->udp_node_of[l] = (uint8_t)(k + 1);
	o->n_udp_nodes++;
	return 0;
}

/* --station SPEC=INGRESS, SPEC = attn|down|all [FIRST[-LAST]] (layer indices
 * of the stations, 0-based): "attn=wss", "down0-13=udp", "all5=https". */
static int parse_station(const char *arg, struct fl_run_opts *o)
{
	char spec[64];
	const char *eq = strchr(arg, '=');
	if (!eq || (size_t)(eq - arg) >= sizeof spec)
		return -EINVAL;
	memcpy(spec, arg, (size_t)(eq - arg));
	spec[eq - arg] = 0;
	int ing = ingress_of(eq + 1);
	if (ing < 0)
		return -EINVAL;
	bool down = false, attn = false;
	char *p = spec;
	if (!strncmp(p, "attn", 4)) { attn = true; p += 4; }
	else if (!strncmp(p, "down", 4)) { down = true; p += 4; }
	else if (!strncmp(p, "all", 3)) { attn = down = true; p += 3; }
	else return -EINVAL;
	unsigned lo = 0, hi = 31;
	if (*p) {
		char *end;
		lo = hi = (unsigned)strtoul(p, &end, 10);
		if (end == p)
			return -EINVAL;
		if (*end == '-') {
			p = end + 1;
			hi = (unsigned)strtoul(p, &end, 10);
			if (end == p)
				return -EINVAL;
		}
		if (*end || lo > hi || hi > 31)
			return -EINVAL;
	}
	for (unsigned l = lo; l <= hi; l++) {
		if (down)
			o->station_ingress[0][l] = (int8_t)ing;
		if (attn)
			o->station_ingress[1][l] = (int8_t)ing;
	}
	return 0;
}

static int ingress_of(const char *s)
{
	for (unsigned i = 0; i < FL_IN_COUNT; i++)
		if (strcmp(s, fl_ingress_name(i)) == 0)
			return (int)i;
	return -1;
}

/* N or LO-HI microseconds (0..10 s). */
static int parse_range_us(const char *s, uint32_t *lo, uint32_t *hi)
{
	char *end;
	errno = 0;
	unsigned long a = strtoul(s, &end, 10), b = a;
	if (end == s || errno)
		return -EINVAL;
	if (*end == '-') {
		const char *p = end + 1;
		b = strtoul(p, &end, 10);
		if (end == p || errno)
			return -EINVAL;
	}
	if (*end || a > b || b > 10000000ul)
		return -EINVAL;
	*lo = (uint32_t)a;
	*hi = (uint32_t)b;
	return 0;
}

/* Measured relay hops, ns, one a line (the last field of each). */
static int read_relay_samples(const char *path, struct fl_run_opts *o)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	char line[128];
	while (fgets(line, sizeof line, f)) {
		/* the last field ("coordinator-https relay NS" or a bare NS) */
		line[strcspn(line, "\r\n")] = 0;
		char *last = strrchr(line, ' ');
		last = last ? last + 1 : line;
		char *end;
		unsigned long long x = strtoull(last, &end, 10);
		if (end == last || *end)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			uint64_t *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				fclose(f);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = x;
	}
	fclose(f);
	if (!n) {
		free(v);
		return -ENODATA;
	}
	o->relay_ns = v;
	o->n_relay = n;
	return 0;
}

static char *read_token(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char line[512];
	char *t = NULL;
	if (fgets(line, sizeof line, f)) {
		line[strcspn(line, " \t\r\n")] = 0;
		if (line[0])
			t = strdup(line);
	}
	fclose(f);
	return t;
}

enum {
	O_TOKENS = 256, O_LAYERS, O_HIDDEN, O_SEED, O_TOKEN_BASE, O_MIX, O_ASSIGN, O_MODE, O_RATE, O_WINDOW,
	O_CANON, O_CANON_VIA, O_CORRUPT_AT, O_CORRUPT_LINE, O_CORRUPT_LAYER, O_CORRUPT_INDEX, O_LOSS, O_DUP,
	O_DROP_CWND, O_UDP, O_UDP_BIND, O_MTU, O_RTO, O_CONSUMER, O_NO_CACK, O_TLS, O_SNI, O_CA, O_INSECURE,
	O_CERT, O_KEY, O_TOKEN, O_TOKEN_FILE, O_WSS_CONNS, O_HTTPS_CONNS, O_NO_SUB, O_SLOT_TO, O_DURATION,
	O_MAX_MISSING, O_JSON, O_SAMPLES, O_QUIET, O_FAKE, O_LISTEN, O_FAKE_DROP, O_NO_ACK, O_RELAY, O_HOPS,
	O_WARMUP, O_HELP, O_VERSION, O_STATION, O_PULL, O_LINGER, O_LINGER_QUIET, O_CACKS, O_ADDRESS, O_LAYER_PORTS, O_CHECK_MS,
	O_RESENDS, O_UDP_NODE, O_CANON_DELAY, O_CRIT, O_STAGE_A, O_STAGE_G, O_STAGE_D, O_NET_DELAY, O_RELAY_US,
	O_RELAY_SAMPLES,
};

static const struct option longopts[] = {
	{ "tokens", 1, 0, O_TOKENS }, { "layers", 1, 0, O_LAYERS }, { "hidden", 1, 0, O_HIDDEN },
	{ "seed", 1, 0, O_SEED }, { "token-base", 1, 0, O_TOKEN_BASE }, { "mix", 1, 0, O_MIX },
	{ "assign", 1, 0, O_ASSIGN }, { "mode", 1, 0, O_MODE }, { "rate", 1, 0, O_RATE },
	{ "window", 1, 0, O_WINDOW }, { "canonical", 1, 0, O_CANON }, { "canonical-via", 1, 0, O_CANON_VIA },
	{ "corrupt-at", 1, 0, O_CORRUPT_AT }, { "corrupt-line", 1, 0, O_CORRUPT_LINE },
	{ "corrupt-layer", 1, 0, O_CORRUPT_LAYER }, { "corrupt-index", 1, 0, O_CORRUPT_INDEX },
	{ "loss", 1, 0, O_LOSS }, { "dup", 1, 0, O_DUP }, { "udp-drop-over-cwnd", 0, 0, O_DROP_CWND },
	{ "udp", 1, 0, O_UDP }, { "udp-bind", 1, 0, O_UDP_BIND }, { "mtu", 1, 0, O_MTU }, { "rto-ms", 1, 0, O_RTO },
	{ "consumer", 1, 0, O_CONSUMER }, { "no-consumer-ack", 0, 0, O_NO_CACK }, { "tls", 1, 0, O_TLS },
	{ "sni", 1, 0, O_SNI }, { "ca", 1, 0, O_CA }, { "insecure", 0, 0, O_INSECURE }, { "cert", 1, 0, O_CERT },
	{ "key", 1, 0, O_KEY }, { "token", 1, 0, O_TOKEN }, { "token-file", 1, 0, O_TOKEN_FILE },
	{ "wss-conns", 1, 0, O_WSS_CONNS }, { "https-conns", 1, 0, O_HTTPS_CONNS },
	{ "no-subscribe", 0, 0, O_NO_SUB }, { "slot-timeout-ms", 1, 0, O_SLOT_TO },
	{ "linger-ms", 1, 0, O_LINGER }, { "linger-quiet-ms", 1, 0, O_LINGER_QUIET }, { "consumer-acks", 1, 0, O_CACKS }, { "address", 1, 0, O_ADDRESS },
	{ "udp-layer-ports", 1, 0, O_LAYER_PORTS }, { "check-ms", 1, 0, O_CHECK_MS }, { "resends", 1, 0, O_RESENDS },
	{ "udp-node", 1, 0, O_UDP_NODE }, { "canon-delay-us", 1, 0, O_CANON_DELAY },
	{ "critical-path", 1, 0, O_CRIT }, { "stage-a-us", 1, 0, O_STAGE_A }, { "stage-g-us", 1, 0, O_STAGE_G },
	{ "stage-d-us", 1, 0, O_STAGE_D }, { "net-delay-us", 1, 0, O_NET_DELAY }, { "relay-us", 1, 0, O_RELAY_US },
	{ "relay-samples", 1, 0, O_RELAY_SAMPLES },
	{ "duration", 1, 0, O_DURATION }, { "max-missing", 1, 0, O_MAX_MISSING }, { "json", 1, 0, O_JSON },
	{ "samples", 1, 0, O_SAMPLES }, { "quiet", 0, 0, O_QUIET }, { "fake-receiver", 0, 0, O_FAKE },
	{ "listen", 1, 0, O_LISTEN }, { "fake-drop", 1, 0, O_FAKE_DROP }, { "no-ack", 0, 0, O_NO_ACK },
	{ "relay-bench", 0, 0, O_RELAY }, { "hops", 1, 0, O_HOPS }, { "warmup", 1, 0, O_WARMUP },
	{ "station", 1, 0, O_STATION }, { "pull", 1, 0, O_PULL }, { "help", 0, 0, O_HELP }, { "version", 0, 0, O_VERSION }, { 0, 0, 0, 0 },
};

static int bad(const char *opt, const char *val)
{
	fprintf(stderr, "fanofleet: invalid value for --%s: '%s' (see --help)\n", opt, val);
	return 3;
}

static bool num(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

int main(int argc, char **argv)
{
	struct fl_run_opts o;
	fl_run_opts_default(&o);
	struct fl_fake_opts fk = { .listen = "127.0.0.1:14242", .consumer = NULL, .mtu = 1472 };
	struct fl_relay_opts rl = { .hops = 2000, .warmup = 200 };
	bool fake = false, relay = false, stage_set[3] = { false, false, false }, relay_set = false;
	const char *consumer_str = NULL, *tls_str = NULL, *token_file = NULL;
	int c;
	double v;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		const char *name = "?";
		for (const struct option *p = longopts; p->name; p++)
			if (p->val == c)
				name = p->name;
		switch (c) {
		case O_TOKENS: if (!num(optarg, 1, 1e9, &v)) return bad(name, optarg); o.tokens = (uint64_t)v; break;
		case O_LAYERS: if (!num(optarg, 2, 32, &v)) return bad(name, optarg); o.layers = (uint16_t)v; break;
		case O_HIDDEN: if (!num(optarg, 1, 65536, &v)) return bad(name, optarg); o.hidden = (uint32_t)v; fk.hidden = o.hidden; rl.hidden = o.hidden; break;
		case O_SEED: if (!num(optarg, 0, 1.8e19, &v)) return bad(name, optarg); o.seed = (uint64_t)v; break;
		case O_TOKEN_BASE: if (!num(optarg, 0, 4e9, &v)) return bad(name, optarg); o.token_base = (uint32_t)v; break;
		case O_MIX: if (parse_mix(optarg, o.mix) < 0) return bad(name, optarg); break;
		case O_STATION: if (parse_station(optarg, &o) < 0) return bad(name, optarg); break;
		case O_ASSIGN:
			if (!strcmp(optarg, "layer")) o.assign = FL_ASSIGN_LAYER;
			else if (!strcmp(optarg, "slot")) o.assign = FL_ASSIGN_SLOT;
			else if (!strcmp(optarg, "station")) o.assign = FL_ASSIGN_STATION;
			else return bad(name, optarg);
			break;
		case O_MODE:
			if (!strcmp(optarg, "chain")) o.mode = FL_MODE_CHAIN;
			else if (!strcmp(optarg, "burst")) o.mode = FL_MODE_BURST;
			else return bad(name, optarg);
			break;
		case O_RATE: if (!num(optarg, 0, 1e7, &o.rate)) return bad(name, optarg); break;
		case O_WINDOW: if (!num(optarg, 1, 4096, &v)) return bad(name, optarg); o.window = (uint32_t)v; break;
		case O_CANON:
			if (!strcmp(optarg, "digest")) o.canon = FL_CANON_DIGEST;
			else if (!strcmp(optarg, "full")) o.canon = FL_CANON_FULL;
			else if (!strcmp(optarg, "none")) o.canon = FL_CANON_NONE;
			else return bad(name, optarg);
			break;
		case O_CANON_VIA: if ((o.canon_via = ingress_of(optarg)) < 0) return bad(name, optarg); break;
		case O_CORRUPT_AT: if (!num(optarg, 0, 1e9, &v)) return bad(name, optarg); o.corrupt_at = (int64_t)v; break;
		case O_CORRUPT_LINE:
			if (!num(optarg, 0, 6, &v) || (v != FL_LINE_X && v != FL_LINE_ATTN && v != FL_LINE_FFN))
				return bad(name, optarg);
			o.corrupt_line = (unsigned)v;
			break;
		case O_CORRUPT_LAYER: if (!num(optarg, 1, 31, &v)) return bad(name, optarg); o.corrupt_layer = (int)v; break;
		case O_CORRUPT_INDEX: if (!num(optarg, 0, 65535, &v)) return bad(name, optarg); o.corrupt_index = (uint32_t)v; break;
		case O_LOSS: if (!num(optarg, 0, 0.9, &o.udp.loss)) return bad(name, optarg); break;
		case O_DUP: if (!num(optarg, 0, 1, &o.udp.dup)) return bad(name, optarg); break;
		case O_DROP_CWND: o.udp.drop_over_cwnd = true; break;
		case O_UDP: if (tool_addr_parse(optarg, true, &o.udp_dst, &o.udp_dlen) < 0) return bad(name, optarg); o.have_udp = true; break;
		case O_UDP_BIND: {
			if (tool_bind_parse(optarg, &o.udp_bind, &o.udp_blen) < 0)
				return bad(name, optarg);
			o.have_udp_bind = true;
			break;
		}
		case O_MTU: if (!num(optarg, 64, 9000, &v)) return bad(name, optarg); o.udp.mtu = (uint32_t)v; fk.mtu = o.udp.mtu; break;
		case O_RTO: if (!num(optarg, 1, 60000, &v)) return bad(name, optarg); o.udp.rto_ms = (uint32_t)v; break;
		case O_CONSUMER: consumer_str = optarg; break;
		case O_NO_CACK: o.consumer_ack = FL_CACK_NONE; break;
		case O_CACKS:
			if (!strcmp(optarg, "each"))
				o.consumer_ack = FL_CACK_EACH;
			else if (!strcmp(optarg, "fleet"))
				o.consumer_ack = FL_CACK_FLEET;
			else if (!strcmp(optarg, "none"))
				o.consumer_ack = FL_CACK_NONE;
			else
				return bad(name, optarg);
			break;
		case O_ADDRESS:
			if (!strcmp(optarg, "fleet"))
				o.fleet_addr = true;
			else if (!strcmp(optarg, "band"))
				o.fleet_addr = false;
			else
				return bad(name, optarg);
			break;
		case O_LAYER_PORTS: if (!num(optarg, 1, 65535, &v)) return bad(name, optarg); o.udp_layer_ports = (uint16_t)v; break;
		case O_CHECK_MS: if (!num(optarg, 0, 60000, &v)) return bad(name, optarg); o.udp.check_ms = (uint32_t)v; break;
		case O_UDP_NODE: if (parse_udp_node(optarg, &o) < 0) return bad(name, optarg); break;
		case O_CANON_DELAY: if (!num(optarg, -1e7, 1e7, &v)) return bad(name, optarg); o.canon_delay_us = (int64_t)v; break;
		case O_CRIT:
			if (!strcmp(optarg, "jump")) o.crit = FL_CRIT_JUMP;
			else if (!strcmp(optarg, "canonical")) o.crit = FL_CRIT_CANONICAL;
			else return bad(name, optarg);
			break;
		case O_STAGE_A: case O_STAGE_G: case O_STAGE_D: {
			unsigned k = c == O_STAGE_A ? 0 : c == O_STAGE_G ? 1 : 2;
			if (parse_range_us(optarg, &o.stage_lo_us[k], &o.stage_hi_us[k]) < 0)
				return bad(name, optarg);
			stage_set[k] = true;
			break;
		}
		case O_NET_DELAY: if (!num(optarg, 0, 1e7, &v)) return bad(name, optarg); o.net_delay_us = (uint32_t)v; break;
		case O_RELAY_US: if (parse_range_us(optarg, &o.relay_lo_us, &o.relay_hi_us) < 0) return bad(name, optarg); relay_set = true; break;
		case O_RELAY_SAMPLES: {
			int r = read_relay_samples(optarg, &o);
			if (r < 0) {
				fprintf(stderr, "fanofleet: --relay-samples %s: %s\n", optarg,
					r == -ENODATA ? "no sample in it" : strerror(-r));
				return 3;
			}
			break;
		}
		case O_RESENDS: if (!num(optarg, 0, 255, &v)) return bad(name, optarg); o.udp.max_resends = (uint32_t)v; break;
		case O_TLS: tls_str = optarg; break;
		case O_SNI: o.tls.sni = optarg; break;
		case O_CA: o.tls.ca_file = optarg; break;
		case O_INSECURE: o.tls.insecure = true; break;
		case O_CERT: o.tls.cert_file = optarg; rl.cert = optarg; break;
		case O_KEY: o.tls.key_file = optarg; rl.key = optarg; break;
		case O_TOKEN: o.tls.token = optarg; break;
		case O_TOKEN_FILE: token_file = optarg; break;
		case O_WSS_CONNS: if (!num(optarg, 0, 64, &v)) return bad(name, optarg); o.wss_conns = (uint32_t)v; break;
		case O_HTTPS_CONNS: if (!num(optarg, 0, 64, &v)) return bad(name, optarg); o.https_conns = (uint32_t)v; break;
		case O_NO_SUB: o.subscribe = false; break;
		case O_PULL: if (!num(optarg, 0, 64, &v)) return bad(name, optarg); o.pull_conns = (uint32_t)v; break;
		case O_SLOT_TO: if (!num(optarg, 1, 600000, &v)) return bad(name, optarg); o.slot_timeout_ms = (uint32_t)v; break;
		case O_LINGER: if (!num(optarg, 0, 600000, &v)) return bad(name, optarg); o.linger_ms = (uint32_t)v; break;
		case O_LINGER_QUIET: if (!num(optarg, 1, 600000, &v)) return bad(name, optarg); o.linger_quiet_ms = (uint32_t)v; break;
		case O_DURATION: if (!num(optarg, 0, 86400, &v)) return bad(name, optarg); o.duration_s = (uint32_t)v; fk.duration_s = o.duration_s; break;
		case O_MAX_MISSING: if (!num(optarg, 0, 1e12, &v)) return bad(name, optarg); o.max_missing = (uint64_t)v; break;
		case O_JSON: o.json_path = optarg; break;
		case O_SAMPLES: o.samples_path = optarg; rl.json = optarg; break;
		case O_QUIET: o.quiet = true; break;
		case O_FAKE: fake = true; break;
		case O_LISTEN: fk.listen = optarg; break;
		case O_FAKE_DROP: if (!num(optarg, 0, 0.9, &fk.drop)) return bad(name, optarg); break;
		case O_NO_ACK: fk.no_ack = true; break;
		case O_RELAY: relay = true; break;
		case O_HOPS: if (!num(optarg, 1, 1e7, &v)) return bad(name, optarg); rl.hops = (uint32_t)v; break;
		case O_WARMUP: if (!num(optarg, 0, 1e7, &v)) return bad(name, optarg); rl.warmup = (uint32_t)v; break;
		case O_VERSION: printf("fanofleet 0.1.0\n"); return 0;
		case 'h':
		case O_HELP: usage(stdout); return 0;
		default: usage(stderr); return 3;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fanofleet: unexpected argument '%s'\n", argv[optind]);
		return 3;
	}
	if (!fk.hidden)
		fk.hidden = o.hidden;
	fk.layers = o.layers;
	if (!rl.hidden)
		rl.hidden = o.hidden;
	if (fake) {
		fk.consumer = consumer_str;
		if (!fk.consumer) {
			fprintf(stderr, "fanofleet: --fake-receiver needs --consumer HOST:PORT\n");
			return 3;
		}
		return fl_fake_run(&fk);
	}
	if (relay)
		return fl_relay_run(&rl);
	if (consumer_str) {
		if (tool_addr_parse(consumer_str, true, &o.consumer, &o.consumer_len) < 0)
			return bad("consumer", consumer_str);
		o.have_consumer = true;
	}
	static char host[128];
	if (tls_str) {
		struct sockaddr_storage ss;
		socklen_t sl;
		if (tool_addr_parse(tls_str, true, &ss, &sl) < 0)
			return bad("tls", tls_str);
		const char *colon = strrchr(tls_str, ':');
		size_t hl = (size_t)(colon - tls_str);
		if (tls_str[0] == '[')
			snprintf(host, sizeof host, "%.*s", (int)(hl - 2), tls_str + 1);
		else
			snprintf(host, sizeof host, "%.*s", (int)hl, tls_str);
		o.tls.host = host;
		o.tls.port = (uint16_t)atoi(colon + 1);
		o.have_tls = true;
	}
	if (token_file) {
		o.tls.token = read_token(token_file);
		if (!o.tls.token) {
			fprintf(stderr, "fanofleet: cannot read a token from %s\n", token_file);
			return 3;
		}
	}
	if (o.crit) {
		/* the seed's 90-200 ms a layer, scaled down 100 times for run time */
		for (unsigned k = 0; k < 3; k++)
			if (!stage_set[k]) {
				o.stage_lo_us[k] = 300;
				o.stage_hi_us[k] = 670;
			}
		if (!relay_set && !o.n_relay) {
			o.relay_lo_us = 100;
			o.relay_hi_us = 200;
		}
		if (o.canon_delay_us) {
			fprintf(stderr, "fanofleet: --canon-delay-us and --critical-path do not go together (the critical path times the reports)\n");
			return 3;
		}
		if (o.tokens > 1000000) {
			fprintf(stderr, "fanofleet: --critical-path keeps every token's figures: at most 1000000 tokens\n");
			return 3;
		}
		o.mode = FL_MODE_CHAIN;
	}
	if (!o.have_udp && !o.have_tls) {
		fprintf(stderr, "fanofleet: give --udp HOST:PORT and/or --tls HOST:PORT (see --help)\n");
		return 3;
	}
	int rc = fl_run(&o);
	if (token_file)
		free((char *)o.tls.token);
	free((void *)o.relay_ns);
	return rc;
}

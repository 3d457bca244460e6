/* cap_gen.c - bench/cap's load generator: a DPDK memif peer that plays
 * three fleet workers (Pair X: lines 1, 3, 5, line 3 subtracted) and the
 * consumer of resolved seeds, driving fanogate-dp's poll lcore over net_memif
 * with no kernel in the path.
 *
 * Owns: its own EAL (a second DPDK process: --no-huge, its own file
 * prefix), one memif port, its mbuf pool. Single thread (the EAL main
 * lcore); nothing else calls into it. The port's role comes from --vdev:
 * role=client against fanogate-dp's server (memif copy mode: fanogate's PMD
 * copies), or role=server against fanogate-dp's zero-copy client (this
 * process's PMD then copies into and out of fanogate's mbufs; DPDK 22.11
 * has zero-copy for the client role only). Nothing else here depends on
 * the role.
 *
 * What it does, bounded in count (--seeds) and time (--max-seconds):
 *   - fresh slots: token_seq advances by one per slot (layer = token % layers),
 *     the three contributions of a slot are sent as whole fragment groups
 *     (1468-byte chunks at MTU 1472), at most --window slots in flight;
 *   - the consumer side checks every fragment of every resolved seed against
 *     the reference sum (bit for bit, header fields included), and ACKs each
 *     seed (wire.md 2.1: stream 0xAFA0+L, base_seq + bitmap, merged per
 *     stream like the fleet's receiver) so fanogate's reliable delivery sees
 *     its ACKs and never resends;
 *   - the workers' side counts fanogate's ACK and status frames;
 *   - it answers ARP requests for its address, as the consumer's host
 *     would (a poll lcore that never sees the consumer's own packets asks
 *     for its MAC: with two lcores, the one its ACKs do not reach).
 * Bodies: --sets sets of three random bodies with mixed magnitudes (the
 * reduction order matters), set = token % sets, each with its reference
 * ((x - attn) + ffn) computed here in the canonical order.
 *
 * Latency mode (--gap-us N): one slot at a time, N us of quiet before each
 * (so an adaptive-idle lcore has backed off), and the time from the first
 * fragment's send to the resolved seed's last fragment, p50/p99/max.
 *
 * Output: one JSON object (stdout, or --json FILE): seeds resolved, wrong,
 * lost, fragments sent, seconds, fragments/s, seeds/s, fanogate's packets seen
 * (ACK, status, seed fragments), this process's thread CPU seconds and how
 * often its TX ring was full (backpressure: the dataplane, not the generator,
 * was the limit). Exit 0 when every seed came back bit-exact, 3 when any was
 * wrong or lost, 1 on set-up errors, 77 when no memif port exists.
 *
 * Addresses: 198.18.0.0/15 (RFC 2544's benchmarking range) by default. The
 * packets only ever exist in the shared memory between the two processes:
 * no kernel interface sees them. */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "fg/wire.h"

#define LINES 3
#define BURST 32
#define RS_TABLE 4096u /* resolved-seed reassembly states, by frame_id */
#define ACK_MAX 96u    /* pending consumer ACK entries (one ACK datagram: 10 + 96 * 14 <= 1468) */

static const uint8_t rule[LINES] = {1, 3, 5};

struct opts {
	uint32_t hidden, seeds, window, layers, sets, mtu, warmup, gap_us;
	uint32_t rx_stall_us, rx_stall_every_ms; /* a consumer that stops reading now and then */
	double max_seconds, link_timeout, idle_seconds, peer_exit_wait;
	uint32_t token_base;
	uint16_t queues; /* memif queue pairs; a flow's queue is its source port mod queues */
	uint8_t dp_ip[4], ip[4];
	uint16_t port, cport, wport;
	const char *json, *label;
};

static struct opts o = {.hidden = 1536, .seeds = 200000, .window = 256, .layers = 28, .sets = 8, .mtu = 1472,
			.warmup = 256, .max_seconds = 60, .link_timeout = 20, .idle_seconds = 1, .token_base = 1, .port = 4242,
			.cport = 7000, .wport = 5001, .queues = 1, .label = "memif"};

struct stats {
	uint64_t frags_tx, seeds_sent, resolved, wrong, dup, lost;
	uint64_t rx_pkts, rx_seed_frags, rx_acks, rx_status, rx_arp, rx_other, rx_orphan;
	uint64_t acks_tx, tx_full, rx_stalls, arp_replies;
};

struct rs_state { /* one resolved seed being received */
	uint16_t fid;
	bool live, bad;
	uint8_t total, got;
	uint32_t token;
};

static uint16_t g_port;
static struct rte_mempool *g_pool;
static struct rte_ether_addr g_mac, g_dp_mac;
static bool g_have_dp_mac;
static uint32_t g_frame_len, g_chunk, g_nfrag;
static uint8_t **g_frames;   /* [set * LINES + l]: encoded contribution frames */
static uint8_t **g_expect;   /* [set]: the resolved frame's payload (prefix + body) */
static uint8_t *g_done;      /* [seeds + warmup]: resolved once */
static struct rs_state g_rs[RS_TABLE];
static struct fg_ack_entry g_ack[ACK_MAX];
static unsigned g_nack;
static uint16_t g_fid[LINES + 1];
static uint16_t g_ip_id;
static struct stats g_st;
static uint32_t g_inflight;
static uint64_t *g_lat; /* latency mode: TSC cycles per seed */
static uint32_t g_nlat;
static uint64_t g_rx_stall_until, g_rx_stall_next; /* TSC: --rx-stall-us */
static bool g_rx_stall_once; /* --rx-stall-every-ms 0: one stall, armed at the measured phase */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double thread_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint16_t ip_csum(const uint8_t *p)
{
	uint32_t s = 0;
	for (int i = 0; i < 20; i += 2)
		s += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (s >> 16)
		s = (s & 0xFFFF) + (s >> 16);
	return (uint16_t)~s;
}

/* Ethernet + IPv4 + UDP (checksum 0: optional over IPv4) in front of a
 * payload of plen bytes; returns the payload pointer. */
static uint8_t *put_hdrs(struct rte_mbuf *m, uint16_t sport, uint16_t dport, uint32_t plen)
{
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
	uint32_t len = 14 + 20 + 8 + plen;
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	if (g_have_dp_mac)
		memcpy(p, g_dp_mac.addr_bytes, 6);
	else
		memset(p, 0xFF, 6);
	memcpy(p + 6, g_mac.addr_bytes, 6);
	fg_put_be16(p + 12, 0x0800);
	uint8_t *ip = p + 14;
	ip[0] = 0x45;
	ip[1] = 0;
	fg_put_be16(ip + 2, (uint16_t)(20 + 8 + plen));
	fg_put_be16(ip + 4, g_ip_id++);
	fg_put_be16(ip + 6, 0x4000);
	ip[8] = 64;
	ip[9] = 17;
	ip[10] = ip[11] = 0;
	memcpy(ip + 12, o.ip, 4);
	memcpy(ip + 16, o.dp_ip, 4);
	fg_put_be16(ip + 10, ip_csum(ip));
	uint8_t *udp = ip + 20;
	fg_put_be16(udp, sport);
	fg_put_be16(udp + 2, dport);
	fg_put_be16(udp + 4, (uint16_t)(8 + plen));
	udp[6] = udp[7] = 0;
	return udp + 8;
}

static void rx_poll(void);

/* Send n mbufs, polling RX while the TX ring is full (fanogate's replies must
 * keep flowing or it would drop them). Bounded by --max-seconds overall. */
static uint64_t g_deadline_ns = UINT64_MAX; /* --max-seconds from the start of the run */

/* --queues: memif has no RSS, so the generator spreads flows like a NIC's
 * RSS would, by a hash of the 5-tuple; the flows differ only in their
 * source port (workers wport + line, the consumer cport). */
static uint16_t queue_of(uint16_t sport) { return (uint16_t)(sport % o.queues); }

static void tx_all(uint16_t q, struct rte_mbuf **m, unsigned n)
{
	unsigned sent = 0;
	while (sent < n) {
		uint16_t k = rte_eth_tx_burst(g_port, q, m + sent, (uint16_t)(n - sent));
		sent += k;
		if (sent < n) {
			g_st.tx_full++;
			rx_poll();
			/* a peer that left never frees its ring: without this bound
			 * the loop spun forever (seen once in a smoke run) */
			if ((g_st.tx_full & 1023) == 0 && mono_ns() > g_deadline_ns) {
				fprintf(stderr, "cap_gen: the ring stayed full until --max-seconds: the peer stopped reading\n");
				exit(1);
			}
		}
	}
}

static void ack_flush(void)
{
	if (!g_nack)
		return;
	uint8_t buf[2048];
	uint32_t lens[4];
	int nd = fg_ack_build(g_ack, g_nack, o.mtu, g_fid[LINES], buf, sizeof(buf), lens, 4);
	if (nd < 0) {
		fprintf(stderr, "cap_gen: fg_ack_build: %s\n", fg_reason_name(nd));
		exit(1);
	}
	g_fid[LINES] = (uint16_t)(g_fid[LINES] + nd);
	struct rte_mbuf *m[4];
	if (rte_pktmbuf_alloc_bulk(g_pool, m, (unsigned)nd)) {
		fprintf(stderr, "cap_gen: mbuf pool empty\n");
		exit(1);
	}
	uint32_t off = 0;
	for (int i = 0; i < nd; i++) {
		memcpy(put_hdrs(m[i], o.cport, o.port, lens[i]), buf + off, lens[i]);
		off += lens[i];
	}
	g_nack = 0;
	g_st.acks_tx += (uint64_t)nd;
	tx_all(queue_of(o.cport), m, (unsigned)nd);
}

/* ACK (stream, token) like the fleet's receiver: one entry per stream covers
 * base..base+63. */
static void ack_add(uint16_t stream, uint32_t token)
{
	for (unsigned i = 0; i < g_nack; i++) {
		struct fg_ack_entry *e = &g_ack[i];
		uint32_t d = token - e->base_seq;
		if (e->stream_id == stream && d < 64) {
			if (d < 32)
				e->bitmap_lo |= 1u << d;
			else
				e->bitmap_hi |= 1u << (d - 32);
			return;
		}
	}
	if (g_nack == ACK_MAX)
		ack_flush();
	g_ack[g_nack++] = (struct fg_ack_entry){.stream_id = stream, .base_seq = token, .bitmap_lo = 1};
}

static void seed_done(struct rs_state *s)
{
	s->live = false;
	uint32_t i = s->token - o.token_base;
	uint32_t total = o.seeds + o.warmup;
	ack_add((uint16_t)(0xAFA0 + s->token % o.layers), s->token);
	if (i >= total || g_done[i]) {
		g_st.dup++;
		return;
	}
	g_done[i] = 1;
	g_inflight--;
	g_st.resolved++;
	if (s->bad)
		g_st.wrong++;
}

/* A fragment of a resolved seed for the consumer port. */
static void on_seed_frag(const uint8_t *d, uint32_t n)
{
	if (n < 4) {
		g_st.rx_other++;
		return;
	}
	uint16_t fid = fg_be16(d);
	uint8_t idx = d[2], tot = d[3];
	const uint8_t *c = d + 4;
	uint32_t cl = n - 4;
	struct rs_state *s = &g_rs[fid & (RS_TABLE - 1)];
	g_st.rx_seed_frags++;
	if (idx == 0) {
		if (cl < 18 || tot != g_nfrag) {
			g_st.rx_other++;
			return;
		}
		uint32_t token = fg_be32(c + 2);
		*s = (struct rs_state){.fid = fid, .live = true, .total = tot, .got = 1, .token = token};
		const uint8_t *exp = g_expect[token % o.sets];
		s->bad = fg_be16(c) != 0xAFA0 + token % o.layers || c[6] != 0x10 ||
			 fg_be24(c + 7) != g_frame_len - FG_HDR_LEN || cl != (tot == 1 ? g_frame_len : g_chunk) ||
			 memcmp(c + FG_HDR_LEN, exp, cl - FG_HDR_LEN);
	} else {
		if (!s->live || s->fid != fid || idx != s->got || tot != s->total) {
			g_st.rx_orphan++; /* out of order or a lost first fragment: fanogate resends */
			return;
		}
		uint32_t off = (uint32_t)idx * g_chunk;
		uint32_t want = idx + 1u == tot ? g_frame_len - off : g_chunk;
		const uint8_t *exp = g_expect[s->token % o.sets];
		if (cl != want || memcmp(c, exp + off - FG_HDR_LEN, cl))
			s->bad = true;
		s->got++;
	}
	if (s->got == s->total)
		seed_done(s);
}

/* An Ethernet ARP frame (60 bytes, padded) into p: operation op (1
 * request, 2 reply) from our MAC and address, to dst_mac (the Ethernet
 * destination) about target MAC tha and IPv4 tpa. */
static void arp_frame(uint8_t *p, const uint8_t *dst_mac, uint16_t op, const uint8_t *tha, const uint8_t *tpa)
{
	memcpy(p, dst_mac, 6);
	memcpy(p + 6, g_mac.addr_bytes, 6);
	fg_put_be16(p + 12, 0x0806);
	uint8_t *a = p + 14;
	fg_put_be16(a, 1);
	fg_put_be16(a + 2, 0x0800);
	a[4] = 6;
	a[5] = 4;
	fg_put_be16(a + 6, op);
	memcpy(a + 8, g_mac.addr_bytes, 6);
	memcpy(a + 14, o.ip, 4);
	memcpy(a + 18, tha, 6);
	memcpy(a + 24, tpa, 4);
	memset(a + 28, 0, 60 - 42);
}

/* An ARP request for our address answered after the burst (rx_poll), as
 * the consumer's host would: on queue q, to the sender's MAC and IPv4. */
static struct {
	bool pending;
	uint16_t q;
	uint8_t mac[6], ip[4];
} g_arp_reply;

static void on_arp(uint16_t q, const uint8_t *a, uint32_t n)
{
	g_st.rx_arp++;
	if (n < 28 || fg_be16(a) != 1 || fg_be16(a + 2) != 0x0800 || a[4] != 6 || a[5] != 4)
		return;
	if (fg_be16(a + 6) == 2 && !memcmp(a + 14, o.dp_ip, 4)) {
		memcpy(g_dp_mac.addr_bytes, a + 8, 6);
		g_have_dp_mac = true;
	} else if (fg_be16(a + 6) == 1 && !memcmp(a + 24, o.ip, 4)) {
		g_arp_reply.pending = true;
		g_arp_reply.q = q;
		memcpy(g_arp_reply.mac, a + 8, 6);
		memcpy(g_arp_reply.ip, a + 14, 4);
	}
}

static void arp_reply_send(void)
{
	if (!g_arp_reply.pending)
		return;
	g_arp_reply.pending = false;
	struct rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
	if (!m)
		return; /* the requester asks again */
	arp_frame(rte_pktmbuf_mtod(m, uint8_t *), g_arp_reply.mac, 2, g_arp_reply.mac, g_arp_reply.ip);
	m->data_len = m->pkt_len = 60;
	g_st.arp_replies++;
	tx_all(g_arp_reply.q, &m, 1);
}

static void rx_queue(uint16_t q, struct rte_mbuf **m);

static void rx_poll(void)
{
	struct rte_mbuf *m[BURST];
	if (o.rx_stall_us) {
		/* --rx-stall-us: every --rx-stall-every-ms (0: once, when the
		 * measured phase starts), read nothing for rx_stall_us (sending
		 * goes on while the ring takes it), so fanogate's TX queue
		 * towards us fills */
		uint64_t now = rte_rdtsc(), hz = rte_get_tsc_hz();
		if (now < g_rx_stall_until)
			return;
		if (g_rx_stall_once) {
			g_rx_stall_once = false;
			g_rx_stall_until = now + hz / 1000000 * o.rx_stall_us;
			g_st.rx_stalls++;
			return;
		}
		if (o.rx_stall_every_ms && now >= g_rx_stall_next) {
			if (g_rx_stall_next) {
				g_rx_stall_until = now + hz / 1000000 * o.rx_stall_us;
				g_st.rx_stalls++;
			}
			g_rx_stall_next = now + hz / 1000 * o.rx_stall_every_ms;
			if (g_rx_stall_until > now)
				return;
		}
	}
	for (uint16_t q = 0; q < o.queues; q++)
		rx_queue(q, m);
	arp_reply_send();
	ack_flush();
}

/* One RX burst of queue q (rx_poll's work). */
static void rx_queue(uint16_t q, struct rte_mbuf **m)
{
	uint16_t n = rte_eth_rx_burst(g_port, q, m, BURST);
	for (uint16_t i = 0; i < n; i++) {
		const uint8_t *p = rte_pktmbuf_mtod(m[i], const uint8_t *);
		uint32_t len = rte_pktmbuf_data_len(m[i]);
		g_st.rx_pkts++;
		if (len >= 14 && fg_be16(p + 12) == 0x0806) {
			on_arp(q, p + 14, len - 14);
		} else if (len >= 42 && fg_be16(p + 12) == 0x0800 && p[23] == 17) {
			uint32_t ihl = (uint32_t)(p[14] & 15) * 4;
			const uint8_t *udp = p + 14 + ihl;
			uint32_t ulen = fg_be16(udp + 4);
			if (14 + ihl + ulen > len || ulen < 8) {
				g_st.rx_other++;
			} else if (fg_be16(udp + 2) == o.cport) {
				on_seed_frag(udp + 8, ulen - 8);
			} else if (ulen >= 8 + 4 + FG_HDR_LEN) {
				uint16_t stream = fg_be16(udp + 12);
				if (stream == 0xFFFF && (udp[12 + 6] & 0x80))
					g_st.rx_acks++;
				else if (stream == 0xFFFE)
					g_st.rx_status++;
				else
					g_st.rx_other++;
			} else {
				g_st.rx_other++;
			}
		} else {
			g_st.rx_other++;
		}
	}
	if (n)
		rte_pktmbuf_free_bulk(m, n);
}

/* The three contributions of one slot, as fragment groups. */
static void send_slot(uint32_t token)
{
	uint16_t layer = (uint16_t)(token % o.layers);
	uint32_t set = token % o.sets;
	struct rte_mbuf *m[LINES * 255];
	unsigned n = LINES * g_nfrag;
	if (rte_pktmbuf_alloc_bulk(g_pool, m, n)) {
		fprintf(stderr, "cap_gen: mbuf pool empty\n");
		exit(1);
	}
	unsigned k = 0;
	for (unsigned l = 0; l < LINES; l++) {
		const uint8_t *f = g_frames[set * LINES + l];
		uint16_t fid = g_fid[l]++;
		for (uint32_t i = 0; i < g_nfrag; i++) {
			uint32_t off = i * g_chunk, cl = RTE_MIN(g_chunk, g_frame_len - off);
			uint8_t *d = put_hdrs(m[k], (uint16_t)(o.wport + l), o.port, 4 + cl);
			fg_put_be16(d, fid);
			d[2] = (uint8_t)i;
			d[3] = (uint8_t)g_nfrag;
			memcpy(d + 4, f + off, cl);
			if (i == 0) { /* the frame's header: this slot's stream and token */
				fg_put_be16(d + 4, (uint16_t)(0xAF60 + layer));
				fg_put_be32(d + 6, token);
			}
			k++;
		}
	}
	g_st.frags_tx += n;
	g_st.seeds_sent++;
	g_inflight++;
	if (o.queues == 1) {
		tx_all(0, m, n);
	} else {
		for (unsigned l = 0; l < LINES; l++) /* each worker's flow on its queue */
			tx_all(queue_of((uint16_t)(o.wport + l)), m + l * g_nfrag, g_nfrag);
	}
}

static int port_setup(void)
{
	uint16_t pid = RTE_MAX_ETHPORTS;
	RTE_ETH_FOREACH_DEV(pid) break;
	if (pid >= RTE_MAX_ETHPORTS) {
		fprintf(stderr, "cap_gen: no DPDK port (pass --vdev=net_memif0,role=client|server,...)\n");
		return -ENODEV;
	}
	g_port = pid;
	g_pool = rte_pktmbuf_pool_create("capgen", 8191, 256, 0, RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	if (!g_pool) {
		fprintf(stderr, "cap_gen: mbuf pool: %s\n", rte_strerror(rte_errno));
		return -ENOMEM;
	}
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof(conf));
	int rc = rte_eth_dev_configure(g_port, o.queues, o.queues, &conf);
	for (uint16_t q = 0; q < o.queues && !rc; q++) {
		rc = rte_eth_rx_queue_setup(g_port, q, 1024, (unsigned)rte_eth_dev_socket_id(g_port), NULL, g_pool);
		if (!rc)
			rc = rte_eth_tx_queue_setup(g_port, q, 1024, (unsigned)rte_eth_dev_socket_id(g_port), NULL);
	}
	if (!rc)
		rc = rte_eth_dev_start(g_port);
	if (!rc)
		rc = rte_eth_macaddr_get(g_port, &g_mac);
	if (rc) {
		fprintf(stderr, "cap_gen: port %u set-up: %s\n", g_port, rte_strerror(-rc));
		return rc;
	}
	/* memif's link comes up once the two sides connected (as client: the
	 * server accepted us; as server: fanogate-dp connected) */
	uint64_t t0 = mono_ns();
	for (;;) {
		struct rte_eth_link link;
		if (rte_eth_link_get_nowait(g_port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP)
			break;
		if (mono_ns() - t0 > (uint64_t)(o.link_timeout * 1e9)) {
			fprintf(stderr, "cap_gen: memif link not up after %.0f s (is fanogate-dp the other role on that "
					"socket?)\n", o.link_timeout);
			return -ETIMEDOUT;
		}
		rte_delay_us_sleep(1000);
	}
	/* learn fanogate's MAC (ARP, up to 1 s; broadcast works on memif too) */
	for (int tries = 0; tries < 10 && !g_have_dp_mac; tries++) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(g_pool);
		if (!m)
			return -ENOMEM;
		static const uint8_t bcast[6] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, none[6];
		arp_frame(rte_pktmbuf_mtod(m, uint8_t *), bcast, 1, none, o.dp_ip);
		m->data_len = m->pkt_len = 60;
		tx_all(0, &m, 1);
		uint64_t t1 = mono_ns();
		while (!g_have_dp_mac && mono_ns() - t1 < 100000000ull)
			rx_poll();
	}
	return 0;
}

static int bodies_setup(void)
{
	struct fg_bands bands;
	fg_bands_default(&bands);
	bands.n_layers = (uint16_t)o.layers;
	size_t blen = (size_t)o.hidden * 4;
	float *body[LINES];
	g_frames = calloc((size_t)o.sets * LINES, sizeof(*g_frames));
	g_expect = calloc(o.sets, sizeof(*g_expect));
	for (unsigned l = 0; l < LINES; l++)
		body[l] = malloc(blen);
	if (!g_frames || !g_expect || !body[0] || !body[1] || !body[2])
		return -ENOMEM;
	srand(42);
	for (uint32_t s = 0; s < o.sets; s++) {
		for (unsigned l = 0; l < LINES; l++) {
			for (uint32_t k = 0; k < o.hidden; k++) {
				float v = (float)((rand() % 2001) - 1000) * 1e-3f;
				for (int e = rand() % 8; e > 0; e--)
					v *= 10.0f;
				body[l][k] = v;
			}
			uint8_t *f = malloc(blen + 64);
			if (!f)
				return -ENOMEM;
			struct fg_seed sd = {.token_seq = 0, .dst_layer = 0, .line = rule[l], .orientation = (uint8_t)(l == 1),
					     .start_pos = 0, .seq_len = 1, .body = (const uint8_t *)body[l],
					     .body_len = (uint32_t)blen};
			ssize_t n = fg_seed_encode(&bands, &sd, f, blen + 64);
			if (n < 0) {
				fprintf(stderr, "cap_gen: encode: %s\n", fg_reason_name((int)n));
				return -EINVAL;
			}
			g_frame_len = (uint32_t)n;
			g_frames[s * LINES + l] = f;
		}
		/* the resolved payload: prefix (start_pos 0, seq_len 1) + the
		 * canonical-order sum, one rounding per addition (volatile: no
		 * contraction or reassociation) */
		uint8_t *e = malloc(8 + blen);
		if (!e)
			return -ENOMEM;
		fg_put_le32(e, 0);
		fg_put_le32(e + 4, 1);
		for (uint32_t k = 0; k < o.hidden; k++) {
			volatile float x = body[0][k];
			x = x - body[1][k];
			x = x + body[2][k];
			float r = x;
			memcpy(e + 8 + (size_t)k * 4, &r, 4); /* little-endian host (wire.c asserts it) */
		}
		g_expect[s] = e;
	}
	for (unsigned l = 0; l < LINES; l++)
		free(body[l]);
	g_chunk = o.mtu - 4;
	g_nfrag = (g_frame_len + g_chunk - 1) / g_chunk;
	return 0;
}

/* Run seeds [first, first + count) with at most --window in flight. Returns
 * when all came back or no seed arrived for --idle-seconds (default 1; the
 * rest counted lost), or at the deadline. */
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Latency mode: seeds one at a time, gap_us of quiet before each. */
static void run_latency(uint32_t first, uint32_t count, uint64_t deadline_ns, bool record)
{
	uint64_t hz = rte_get_tsc_hz();
	for (uint32_t i = 0; i < count; i++) {
		uint64_t t = rte_rdtsc(), gap = hz / 1000000 * o.gap_us;
		while (rte_rdtsc() - t < gap)
			rx_poll();
		g_inflight = 0;
		uint64_t before = g_st.resolved, t0 = rte_rdtsc();
		send_slot(o.token_base + first + i);
		while (g_st.resolved == before) {
			rx_poll();
			if (rte_rdtsc() - t0 > hz || mono_ns() > deadline_ns) {
				g_st.lost++;
				break;
			}
		}
		if (record && g_st.resolved != before)
			g_lat[g_nlat++] = rte_rdtsc() - t0;
	}
}

static void run_phase(uint32_t first, uint32_t count, uint64_t deadline_ns)
{
	uint32_t next = first, end = first + count;
	uint64_t last = mono_ns(), resolved0 = g_st.resolved, seen = g_st.resolved;
	g_inflight = 0;
	while (g_st.resolved - resolved0 < count) {
		while (g_inflight < o.window && next < end)
			send_slot(o.token_base + next++);
		rx_poll();
		/* Progress is any seed resolved since the last look, here or in
		 * tx_all's polls while the ring was full (comparing around this
		 * rx_poll only missed those, and a run whose seeds all came back
		 * during the sends ended "idle" with its last window in flight) */
		uint64_t now = mono_ns();
		if (g_st.resolved != seen) {
			seen = g_st.resolved;
			last = now;
		} else if (now - last > (uint64_t)(o.idle_seconds * 1e9) || now > deadline_ns) {
			g_st.lost += (uint64_t)g_inflight + (end - next);
			return;
		}
	}
}

static int parse_ip(const char *s, uint8_t out[4])
{
	return inet_pton(AF_INET, s, out) == 1 ? 0 : -EINVAL;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: cap_gen EAL-ARGS -- [--hidden N] [--seeds N] [--warmup N] [--window N] [--layers N]\n"
		"               [--sets N] [--mtu N] [--max-seconds S] [--dp-ip A] [--ip A] [--port P]\n"
		"               [--cport P] [--wport P] [--token-base T] [--label S] [--json FILE]\n"
		"               [--queues N]  (memif queue pairs, 1..8; a flow's queue is its source\n"
		"                                  port mod N, as RSS would spread them)\n"
		"               [--gap-us N]   (latency mode: one seed at a time, N us apart)\n"
		"               [--rx-stall-us N --rx-stall-every-ms M]  (read nothing for N us every M ms;\n"
		"                                  M = 0: once, when the measured phase starts)\n"
		"               [--idle-seconds S]  (give up when no seed arrived for S s; default 1)\n"
		"               [--link-timeout S]  (wait S s for the memif peer; default 20)\n"
		"               [--peer-exit-wait S]  (after the results: wait up to S s for the peer to\n"
		"                                  stop, then exit without stopping the port)\n");
}

int main(int argc, char **argv)
{
	int eal = rte_eal_init(argc, argv);
	if (eal < 0) {
		fprintf(stderr, "cap_gen: EAL: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argc -= eal;
	argv += eal;
	parse_ip("198.18.0.1", o.dp_ip);
	parse_ip("198.18.0.2", o.ip);
	static const struct option lo[] = {
		{"hidden", 1, 0, 'h'}, {"seeds", 1, 0, 'n'},       {"window", 1, 0, 'w'}, {"layers", 1, 0, 'L'},
		{"sets", 1, 0, 'S'},   {"mtu", 1, 0, 'm'},         {"max-seconds", 1, 0, 'T'}, {"dp-ip", 1, 0, 'd'},
		{"ip", 1, 0, 'i'},     {"port", 1, 0, 'p'},        {"cport", 1, 0, 'c'},  {"wport", 1, 0, 'W'},
		{"json", 1, 0, 'j'},   {"label", 1, 0, 'l'},       {"warmup", 1, 0, 'u'}, {"token-base", 1, 0, 't'},
		{"gap-us", 1, 0, 'g'}, {"idle-seconds", 1, 0, 'I'}, {"link-timeout", 1, 0, 'K'},
		{"peer-exit-wait", 1, 0, 'P'}, {"rx-stall-us", 1, 0, 'r'}, {"rx-stall-every-ms", 1, 0, 'e'},
		{"queues", 1, 0, 'Q'}, {0, 0, 0, 0}};
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'h': o.hidden = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'n': o.seeds = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'w': o.window = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'L': o.layers = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'S': o.sets = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'm': o.mtu = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'T': o.max_seconds = atof(optarg); break;
		case 'd': if (parse_ip(optarg, o.dp_ip)) { usage(); return 2; } break;
		case 'i': if (parse_ip(optarg, o.ip)) { usage(); return 2; } break;
		case 'p': o.port = (uint16_t)atoi(optarg); break;
		case 'c': o.cport = (uint16_t)atoi(optarg); break;
		case 'W': o.wport = (uint16_t)atoi(optarg); break;
		case 'j': o.json = optarg; break;
		case 'l': o.label = optarg; break;
		case 'u': o.warmup = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 't': o.token_base = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'g': o.gap_us = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'I': o.idle_seconds = atof(optarg); break;
		case 'K': o.link_timeout = atof(optarg); break;
		case 'P': o.peer_exit_wait = atof(optarg); break;
		case 'r': o.rx_stall_us = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'e': o.rx_stall_every_ms = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'Q': o.queues = (uint16_t)atoi(optarg); break;
		default: usage(); return 2;
		}
	}
	if (!o.hidden || !o.seeds || !o.window || !o.layers || o.layers > 32 || !o.sets || o.mtu < 64 ||
	    o.mtu > 1500 || o.max_seconds <= 0 || o.idle_seconds <= 0 || o.link_timeout <= 0 ||
	    o.peer_exit_wait < 0 || !o.queues || o.queues > 8) {
		usage();
		return 2;
	}
	if (rte_eth_dev_count_avail() == 0) {
		fprintf(stderr, "cap_gen: SKIP: no memif port (net_memif PMD missing?)\n");
		return 77;
	}
	if (bodies_setup() || g_nfrag > 255)
		return 1;
	g_done = calloc((size_t)o.seeds + o.warmup, 1);
	g_lat = calloc(o.seeds, sizeof(*g_lat));
	if (!g_done || !g_lat || port_setup())
		return 1;

	uint64_t deadline = mono_ns() + (uint64_t)(o.max_seconds * 1e9);
	g_deadline_ns = deadline;
	/* warm-up: caches, fanogate's neighbour entry for the consumer */
	if (o.gap_us)
		run_latency(0, o.warmup, deadline, false);
	else
		run_phase(0, o.warmup, deadline);
	uint64_t warm_lost = g_st.lost;
	struct stats s0 = g_st;
	double cpu0 = thread_cpu_s();
	uint64_t t0 = mono_ns(), c0 = rte_rdtsc();
	g_rx_stall_once = o.rx_stall_us && !o.rx_stall_every_ms;
	if (o.gap_us)
		run_latency(o.warmup, o.seeds, deadline, true);
	else
		run_phase(o.warmup, o.seeds, deadline);
	uint64_t t1 = mono_ns(), c1 = rte_rdtsc();
	double cpu1 = thread_cpu_s();
	/* drain late replies (ACKs, statuses) for 50 ms so the counts are whole */
	for (uint64_t t = mono_ns(); mono_ns() - t < 50000000ull;)
		rx_poll();
	ack_flush();

	double secs = (double)(t1 - t0) / 1e9;
	uint64_t frags = g_st.frags_tx - s0.frags_tx, res = g_st.resolved - s0.resolved;
	double cyc_per_ns = (double)(c1 - c0) / (double)(t1 - t0);
	qsort(g_lat, g_nlat, sizeof(*g_lat), cmp_u64);
#define PCT_US(p) (g_nlat ? (double)g_lat[(size_t)((double)(g_nlat - 1) * (p))] / cyc_per_ns / 1e3 : 0.0)
	/* --json: written to FILE.tmp, renamed when whole, so a script that
	 * waits for FILE never reads half of it */
	char tmp_json[4096];
	FILE *out = stdout;
	if (o.json) {
		snprintf(tmp_json, sizeof(tmp_json), "%s.tmp", o.json);
		if (!(out = fopen(tmp_json, "w"))) {
			perror(tmp_json);
			return 1;
		}
	}
	fprintf(out,
		"{\"label\":\"%s\",\"hidden\":%u,\"lines\":%d,\"chunk\":%u,\"frags_per_seed\":%u,\"window\":%u,"
		"\"seeds\":%u,\"warmup\":%u,\"warmup_lost\":%llu,\"resolved\":%llu,\"wrong\":%llu,\"lost\":%llu,"
		"\"dup\":%llu,\"frags_sent\":%llu,\"seconds\":%.6f,\"frags_per_s\":%.0f,\"seeds_per_s\":%.0f,"
		"\"contrib_bytes_per_s\":%.0f,\"tsc_hz\":%.0f,\"rx\":{\"pkts\":%llu,\"seed_frags\":%llu,\"acks\":%llu,"
		"\"status\":%llu,\"arp\":%llu,\"other\":%llu,\"orphan\":%llu},\"acks_sent\":%llu,\"arp_replies\":%llu,"
		"\"gen_cpu_s\":%.6f,\"gen_tx_full\":%llu,\"gen_rx_stalls\":%llu,\"gap_us\":%u,\"lat_p50_us\":%.2f,\"lat_p99_us\":%.2f,"
		"\"lat_max_us\":%.2f}\n",
		o.label, o.hidden, LINES, g_chunk, g_nfrag, o.window, o.seeds, o.warmup, (unsigned long long)warm_lost,
		(unsigned long long)res, (unsigned long long)g_st.wrong, (unsigned long long)(g_st.lost - warm_lost),
		(unsigned long long)g_st.dup, (unsigned long long)frags, secs, (double)frags / secs,
		(double)res / secs, (double)res * LINES * o.hidden * 4 / secs, cyc_per_ns * 1e9,
		(unsigned long long)(g_st.rx_pkts - s0.rx_pkts), (unsigned long long)(g_st.rx_seed_frags - s0.rx_seed_frags),
		(unsigned long long)(g_st.rx_acks - s0.rx_acks), (unsigned long long)(g_st.rx_status - s0.rx_status),
		(unsigned long long)(g_st.rx_arp - s0.rx_arp), (unsigned long long)(g_st.rx_other - s0.rx_other),
		(unsigned long long)(g_st.rx_orphan - s0.rx_orphan), (unsigned long long)(g_st.acks_tx - s0.acks_tx),
		(unsigned long long)g_st.arp_replies, cpu1 - cpu0, (unsigned long long)(g_st.tx_full - s0.tx_full), (unsigned long long)g_st.rx_stalls, o.gap_us, PCT_US(0.5), PCT_US(0.99),
		g_nlat ? (double)g_lat[g_nlat - 1] / cyc_per_ns / 1e3 : 0.0);
	if (out != stdout && (fclose(out) != 0 || rename(tmp_json, o.json) != 0)) {
		perror(o.json);
		return 1;
	}
	int rc = g_st.wrong || g_st.lost ? 3 : 0;
	if (o.peer_exit_wait > 0) {
		/* Leave the port to the peer: DPDK 22.11's memif disconnects from
		 * the EAL interrupt thread when the peer goes, with no lock against
		 * a disconnect of our own (rte_eth_dev_stop) on this thread; the two
		 * at once were seen to crash at exit (bench/cap zero-copy under
		 * valgrind: this process with its main thread in the disconnect's
		 * munmap and the interrupt thread in rte_intr_fd_get; fanogate-dp
		 * once inside the PMD). So wait until the peer stopped (link down: our
		 * interrupt thread did the one disconnect), then exit without
		 * touching the port. */
		uint64_t w0 = mono_ns();
		struct rte_eth_link link;
		while (rte_eth_link_get_nowait(g_port, &link) == 0 && link.link_status == RTE_ETH_LINK_UP &&
		       mono_ns() - w0 < (uint64_t)(o.peer_exit_wait * 1e9))
			rte_delay_us_sleep(1000);
		fflush(NULL);
		_exit(rc);
	}
	rte_eth_dev_stop(g_port);
	rte_eth_dev_close(g_port);
	rte_eal_cleanup();
	return rc;
}

/* test_dp_vectors.c - every frame, datagram, seed, canonical and reduce
 * vector of tests/data/vectors.txt through the dataplane's whole receive
 * path (net_pcap in, net_pcap out, fanogate-dp), on 1 lcore or on 2 lcores
 * with contributions to one slot arriving on different queues.
 *
 * Checks: the resolved seeds sent to the consumer bit for bit (S01, S02,
 * R01; R02 in a second run with its own rule), status frames, ACK entries
 * against exactly the frames that arrived whole, ARP reply, per-reason
 * malformed counters, the counter identities (every packet and every
 * fragment lands in exactly one disposition, every seed in one outcome,
 * opened slots = resolved), and that every mbuf and frame buffer returned
 * to its pool.
 *
 * usage: test_dp_vectors FANOGATE_DP LCORES   (exit 77 when not root) */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "fg/wire.h"
#include "dp_test_util.h"

static const char *g_dp;
static int g_lcores = 1;
static char g_dir[64];

static uint8_t ip_dp[16], ip_s1[16], ip_s3[16], ip_s4[16], ip_bad[16], ip6_dp[16], ip6_s2[16], ip6_twin[16];

struct sent {
	uint16_t stream;
	uint32_t seq;
};

struct world {
	struct tu_pcap in[2];
	uint16_t fid;
	uint32_t pkts;
	struct sent ackable[64];
	unsigned n_ackable;
};

static void add_pkt(struct world *w, int q, const uint8_t *p, uint32_t len)
{
	tu_pcap_add(&w->in[g_lcores > 1 ? q : 0], p, len);
	w->pkts++;
}

/* One frame as a single-fragment datagram (frag_total 1) from src:sport. */
static void send_frag1(struct world *w, int q, int fam, const uint8_t *src, uint16_t sport, const uint8_t *frame,
		       uint32_t len, int vlan)
{
	uint8_t dg[4096], pkt[4200];
	fg_put_be16(dg, w->fid++);
	dg[2] = 0;
	dg[3] = 1;
	memcpy(dg + 4, frame, len);
	uint32_t n = tu_udp_pkt(pkt, fam, src, sport, fam == 6 ? ip6_dp : ip_dp, 4242, dg, len + 4, vlan);
	add_pkt(w, q, pkt, n);
	struct fg_hdr h;
	if (fg_hdr_decode(frame, len, FG_TRANSPORT_MESSAGE, &h) > 0 && FG_HDR_LEN + h.length == len &&
	    !(h.stream_id == 0xFFFF && (h.flags & 0x80)) && fam == 4 && sport == 5001) {
		w->ackable[w->n_ackable].stream = h.stream_id;
		w->ackable[w->n_ackable++].seq = h.sequence;
	}
}

static void send_dgram(struct world *w, int q, const uint8_t *src, uint16_t sport, uint16_t dport, const uint8_t *d,
		       uint32_t len)
{
	uint8_t pkt[4200];
	uint32_t n = tu_udp_pkt(pkt, 4, src, sport, ip_dp, dport, d, len, -1);
	add_pkt(w, q, pkt, n);
}

static uint32_t vec(const char *id, uint8_t *b)
{
	int n = tu_vector(id, b, 4096);
	assert_true(n >= 0);
	return (uint32_t)n;
}

/* ---- what came out ---- */
struct out {
	unsigned resolved;
	uint8_t frames[8][64];
	uint32_t lens[8];
	unsigned status;
	struct fg_status st[32];
	uint8_t st_dst[32][16]; /* each status's IP destination */
	unsigned acks;
	struct sent acked[128];
	unsigned n_acked;
	unsigned arp_replies;
	unsigned other;
};

static void on_out(const uint8_t *p, uint32_t len, void *arg)
{
	struct out *o = arg;
	struct dp_pkt pk;
	enum dp_pkt_kind k = dp_pkt_parse(p, len, &pk);
	if (k == DP_PKT_ARP) {
		if (pk.arp_op == 2 && !memcmp(pk.arp_spa, ip_dp, 4))
			o->arp_replies++;
		return;
	}
	if (k != DP_PKT_UDP || pk.src.port != 4242) {
		o->other++;
		return;
	}
	struct fg_frag f;
	struct fg_frame fr;
	if (fg_frag_decode(pk.payload, pk.payload_len, &f) < 0 || f.total != 1 ||
	    fg_frame_decode(f.chunk, f.chunk_len, FG_TRANSPORT_MESSAGE, &fr) < 0) {
		o->other++;
		return;
	}
	if (pk.dst_port == 7000) {
		assert_true(o->resolved < 8 && f.chunk_len <= 64);
		memcpy(o->frames[o->resolved], f.chunk, f.chunk_len);
		o->lens[o->resolved++] = f.chunk_len;
	} else if (fr.hdr.stream_id == FG_STREAM_STATUS) {
		assert_true(o->status < 32);
		assert_true(fg_status_decode(&fr, &o->st[o->status]) > 0);
		memcpy(o->st_dst[o->status], pk.dst, 16);
		o->status++;
	} else if (fr.hdr.stream_id == FG_STREAM_ACK) {
		struct fg_ack_entry e[64];
		int n = fg_ack_frame_decode(&fr, e, 64);
		assert_true(n > 0);
		o->acks++;
		/* only ACKs to the 10.99.0.2:5001 sender are tracked */
		if (pk.dst_port != 5001)
			return;
		for (int i = 0; i < n; i++)
			for (unsigned b = 0; b < 64; b++)
				if (fg_ack_entry_covers(&e[i], e[i].base_seq + b)) {
					assert_true(o->n_acked < 128);
					o->acked[o->n_acked].stream = e[i].stream_id;
					o->acked[o->n_acked++].seq = e[i].base_seq + b;
				}
	} else {
		o->other++;
	}
}

static bool in_set(const struct sent *s, unsigned n, uint16_t stream, uint32_t seq)
{
	for (unsigned i = 0; i < n; i++)
		if (s[i].stream == stream && s[i].seq == seq)
			return true;
	return false;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Run fanogate-dp over in1/in2 with `rules`; returns the parsed report. */
static json_t *run_dp(unsigned hidden, const char *rules, struct out *o)
{
	char path[256], cfg[2048], prof[1024], rep[256];
	snprintf(cfg, sizeof(cfg),
		 "[model]\nhidden = %u\nlayers = 32\nmax_seq_len = 4\n"
		 "[rules]\ndefault = 1,3,5\nlayer.1 = 1\nlayer.27 = 6\n%s"
		 "[slots]\ncapacity = 256\ndeadline_ms = 5000\n"
		 "[udp]\nport = 4242\nraw_port = 4243\nmtu = 1472\nallow = 10.99.0.0/24,fd99::/48\n"
		 /* no consumer can ACK a pcap: one transmission per seed, then given up */
		 "[consumers]\ndefault = 10.99.0.2:7000\nresends = 0\n"
		 "[dataplane]\nlcores = %d\n",
		 hidden, rules, g_lcores);
	snprintf(path, sizeof(path), "%s/fanogate.ini", g_dir);
	write_file(path, cfg);
	if (g_lcores > 1)
		snprintf(prof, sizeof(prof),
			 "[eal]\nhugepages = off\n[port]\nvdev = net_pcap0,rx_pcap=%s/in1.pcap,rx_pcap=%s/in2.pcap,"
			 "tx_pcap=%s/out1.pcap,tx_pcap=%s/out2.pcap\n[net]\nip4 = 10.99.0.1\nip6 = fd99::1\n"
			 "[poll]\nidle_sleep_us = 100\n",
			 g_dir, g_dir, g_dir, g_dir);
	else
		snprintf(prof, sizeof(prof),
			 "[eal]\nhugepages = off\n[port]\nvdev = net_pcap0,rx_pcap=%s/in1.pcap,tx_pcap=%s/out1.pcap\n"
			 "[net]\nip4 = 10.99.0.1\nip6 = fd99::1\n[poll]\nidle_sleep_us = 100\n",
			 g_dir, g_dir);
	snprintf(path, sizeof(path), "%s/pcap.ini", g_dir);
	write_file(path, prof);
	char a_cfg[256], a_prof[256];
	snprintf(a_cfg, sizeof(a_cfg), "%s/fanogate.ini", g_dir);
	snprintf(a_prof, sizeof(a_prof), "%s/pcap.ini", g_dir);
	snprintf(rep, sizeof(rep), "%s/report.json", g_dir);
	char *argv[] = {(char *)g_dp, "--config", a_cfg, "--profile", a_prof, "--idle-exit", "400", "--duration", "20",
			"--report", rep, NULL};
	assert_int_equal(tu_run(argv, 60), 0);
	memset(o, 0, sizeof(*o));
	for (int i = 1; i <= g_lcores; i++) {
		snprintf(path, sizeof(path), "%s/out%d.pcap", g_dir, i);
		assert_true(tu_pcap_each(path, on_out, o) >= 0);
	}
	json_error_t err;
	json_t *r = json_load_file(rep, 0, &err);
	assert_non_null(r);
	return r;
}

static void open_inputs(struct world *w)
{
	char path[256];
	memset(w, 0, sizeof(*w));
	w->fid = 1000;
	for (int i = 0; i < g_lcores; i++) {
		snprintf(path, sizeof(path), "%s/in%d.pcap", g_dir, i + 1);
		assert_true(tu_pcap_open(&w->in[i], path));
	}
}

static void close_inputs(struct world *w)
{
	for (int i = 0; i < g_lcores; i++)
		tu_pcap_close(&w->in[i]);
}

static void check_identities(json_t *r, uint64_t pkts)
{
#define C(k) tu_json_u64(r, "counters", k)
#define X(k) tu_json_u64(r, "x", k)
	assert_int_equal(C("rx_pkts"), pkts);
	/* every packet lands in exactly one disposition */
	assert_int_equal(C("rx_pkts"), X("arp") + X("ndp_solicitations") + X("ndp_advertisements") + X("drop_ip_fragment") + X("drop_multiseg") + X("pkt_malformed") +
					       C("drop_not_udp") + X("drop_bad_source") + X("drop_not_ours") + C("drop_bad_port") + C("drop_not_allowed") +
					       X("raw_datagrams") + C("frags"));
	/* every fragment too */
	assert_int_equal(C("frags"), X("frag_single") + X("frag_taken") + X("frag_duplicate") + X("frag_discarded") +
					     X("frag_nobuf") + X("frag_malformed") + C("drop_reasm_overflow"));
	/* slots: opened = resolved + expired + poisoned + abandoned + still open (none) */
	assert_int_equal(tu_json_u64(r, NULL, "slots_in_use"), 0);
	assert_int_equal(tu_json_u64(r, NULL, "slots_opened"),
			 tu_json_u64(r, NULL, "slots_resolved") + tu_json_u64(r, NULL, "slots_expired") +
				 tu_json_u64(r, NULL, "slots_poisoned") + tu_json_u64(r, NULL, "slots_abandoned"));
	assert_int_equal(C("seeds_resolved"), tu_json_u64(r, "outcomes", "resolved"));
	assert_int_equal(C("contrib_accepted"),
			 tu_json_u64(r, "outcomes", "resolved") + tu_json_u64(r, "outcomes", "accepted"));
	/* pools: every mbuf and every frame buffer came back */
	assert_int_equal(tu_json_u64(r, NULL, "mbuf_pool_avail"), tu_json_u64(r, NULL, "mbuf_pool_size"));
	assert_int_equal(tu_json_u64(r, NULL, "xfer_pool_avail"), tu_json_u64(r, NULL, "xfer_pool_size"));
	assert_int_equal(C("drop_lane_full"), 0);
	assert_int_equal(C("drop_tx_full"), 0);
	/* delivery ledger: nothing ACKs on a pcap, so every seed sent ends
	 * given up (resends = 0) or is still pending at exit, and none resent */
	assert_int_equal(C("delivery_acked"), 0);
	assert_int_equal(C("delivery_resent"), 0);
	assert_int_equal(C("seeds_sent"), C("delivery_given_up") + tu_json_u64(r, NULL, "delivery_pending"));
#undef C
#undef X
}

static void test_all_vectors(void **state)
{
	(void)state;
	struct world w;
	uint8_t b[4096];
	uint32_t n;
	open_inputs(&w);
	/* whole frames in single-fragment datagrams, from 10.99.0.2:5001 */
	const char *frames[] = {"F01", "F02", "F03", "F07", "F10", "F11", "F12", "F13", "S01", "S03", "S04",
				"S05", "S06", "S07", "C01", "C02"};
	for (unsigned i = 0; i < FG_ARRAY_LEN(frames); i++) {
		n = vec(frames[i], b);
		send_frag1(&w, 0, 4, ip_s1, 5001, b, n, -1);
	}
	/* S02 behind an 802.1Q tag */
	n = vec("S02", b);
	send_frag1(&w, 0, 4, ip_s1, 5001, b, n, 100);
	/* datagrams as they are: U01, the U02..U04 group out of order, bad headers, an ACK */
	const char *dgrams[] = {"U01", "U03", "U04", "U02", "U05", "U06", "U07", "A02"};
	for (unsigned i = 0; i < FG_ARRAY_LEN(dgrams); i++) {
		n = vec(dgrams[i], b);
		send_dgram(&w, 0, ip_s1, 5001, 4242, b, n);
	}
	w.ackable[w.n_ackable++] = (struct sent){12345, 67890}; /* U01 carries F07 */
	w.ackable[w.n_ackable++] = (struct sent){7, 0};         /* U02..U04 */
	/* raw profile: one frame per datagram, no fragment header */
	n = vec("F01", b);
	send_dgram(&w, 1, ip_s3, 5002, 4243, b, n);
	n = vec("F11", b);
	send_dgram(&w, 1, ip_s3, 5002, 4243, b, n);
	n = vec("S01", b);
	send_dgram(&w, 1, ip_s3, 5002, 4243, b, n);
	/* a wrong port, a source outside the allowlist, ICMP, an IP fragment, ARP */
	send_dgram(&w, 1, ip_s3, 5002, 9999, b, n);
	send_dgram(&w, 1, ip_bad, 5002, 4242, b, n);
	uint8_t pkt[256];
	/* a spoofed loopback source, and a datagram to the subnet's broadcast */
	uint8_t lo[16] = {127, 0, 0, 1}, bcast[16] = {10, 99, 0, 255};
	send_dgram(&w, 1, lo, 5002, 4242, b, n);
	uint32_t bcl = tu_udp_pkt(pkt, 4, ip_s3, 5002, bcast, 4242, b, 8, -1);
	add_pkt(&w, 1, pkt, bcl);
	/* ICMP and an IP fragment with the addresses and ports of the raw
	 * flow accepted above: a known flow's key does not pass a packet of
	 * another form (dp_rx.c, rx_form) */
	uint32_t pl = tu_udp_pkt(pkt, 4, ip_s3, 5002, ip_dp, 4243, b, 8, -1);
	pkt[23] = 1; /* protocol ICMP */
	add_pkt(&w, 1, pkt, pl);
	pl = tu_udp_pkt(pkt, 4, ip_s3, 5002, ip_dp, 4243, b, 8, -1);
	pkt[20] = 0x20; /* MF */
	add_pkt(&w, 1, pkt, pl);
	uint8_t arp[60];
	add_pkt(&w, 0, arp, tu_arp_request(arp, tu_peer_mac, ip_s1, ip_dp));
	close_inputs(&w);

	struct out o;
	json_t *r = run_dp(4, "", &o);
	check_identities(r, w.pkts);

	/* resolved seeds, bit for bit */
	assert_int_equal(o.resolved, 2);
	bool s01 = false, s02 = false;
	for (unsigned i = 0; i < o.resolved; i++) {
		struct fg_frame f;
		assert_int_equal(fg_frame_decode(o.frames[i], o.lens[i], FG_TRANSPORT_MESSAGE, &f), (ssize_t)o.lens[i]);
		assert_int_equal(f.hdr.flags, 0x10);
		const uint8_t *body = f.payload + 8;
		uint32_t bl = f.hdr.length - 8;
		if (f.hdr.stream_id == 0xAFA1 && f.hdr.sequence == 42) {
			n = vec("S01", b);
			assert_int_equal(bl, 16);
			assert_memory_equal(body, b + 18, 16);
			assert_true(fg_fingerprint(body, bl) == 0x5e2de06ec4043aa2ull);
			s01 = true;
		} else if (f.hdr.stream_id == 0xAFBB && f.hdr.sequence == 9001) {
			/* line 6 subtracts: -[1, -2, 0.5, 0] = [-1, 2, -0.5, -0] */
			const uint8_t want[16] = {0, 0, 0x80, 0xbf, 0, 0, 0, 0x40, 0, 0, 0, 0xbf, 0, 0, 0, 0x80};
			assert_int_equal(fg_le32(f.payload), 5); /* start_pos */
			assert_memory_equal(body, want, 16);
			s02 = true;
		}
	}
	assert_true(s01 && s02);

	/* outcomes and reasons */
#define C(k) tu_json_u64(r, "counters", k)
#define M(k) tu_json_u64(r, "malformed", k)
#define O(k) tu_json_u64(r, "outcomes", k)
	assert_int_equal(O("resolved"), 2);
	assert_int_equal(O("accepted"), 0);
	assert_int_equal(O("late"), 1);    /* S01 again on the raw port */
	assert_int_equal(O("malformed"), 5);
	assert_int_equal(M("seed_line"), 1);
	assert_int_equal(M("seed_orientation"), 1);
	assert_int_equal(M("seed_body_rows"), 1);
	assert_int_equal(M("seed_body_length"), 1);
	assert_int_equal(M("seed_prefix"), 1);
	assert_int_equal(M("frag_total_zero"), 1);
	assert_int_equal(M("frag_index_range"), 1);
	assert_int_equal(M("frag_short"), 1);
	assert_int_equal(M("truncated_frame"), 4); /* F10 and F12 as datagrams, F11 twice */
	assert_int_equal(M("short_header"), 1);    /* F13 */
	assert_int_equal(C("drop_unknown_stream"), 6);
	assert_int_equal(tu_json_u64(r, "x", "ack_rx"), 2); /* F03 (0xFFFF, flags 0xff) and A02 */
	assert_int_equal(C("canonical"), 2);
	assert_int_equal(tu_json_u64(r, "lanes_to_cp", "canonical"), 2);
	assert_int_equal(tu_json_u64(r, "lanes_to_cp", "resolved"), 2);
	assert_int_equal(C("drop_not_udp"), 1);
	assert_int_equal(C("drop_bad_port"), 1);
	assert_int_equal(C("drop_not_allowed"), 1);
	assert_int_equal(tu_json_u64(r, "x", "drop_bad_source"), 1);
	assert_int_equal(tu_json_u64(r, "x", "drop_not_ours"), 1);
	assert_int_equal(tu_json_u64(r, "x", "drop_ip_fragment"), 1);
	assert_int_equal(C("seeds_sent"), 2);

	/* one status per seed or canonical frame that came over UDP */
	assert_int_equal(o.status, 10);
	assert_int_equal(C("status_sent"), 10);
	bool s01_status = false;
	for (unsigned i = 0; i < o.status; i++)
		if (o.st[i].token_seq == 42 && o.st[i].dst_layer == 1 && o.st[i].outcome == FG_O_RESOLVED) {
			assert_true(o.st[i].facts & FG_FACT_ACK);
			assert_true(o.st[i].facts & FG_FACT_RESOLVED);
			assert_true(o.st[i].facts & FG_FACT_SHADOW); /* lines start in shadow */
			assert_true(o.st[i].fingerprint == 0x5e2de06ec4043aa2ull);
			s01_status = true;
		}
	assert_true(s01_status);

	/* ACKs: exactly the frames that arrived whole from 10.99.0.2:5001 */
	for (unsigned i = 0; i < w.n_ackable; i++)
		assert_true(in_set(o.acked, o.n_acked, w.ackable[i].stream, w.ackable[i].seq));
	for (unsigned i = 0; i < o.n_acked; i++)
		assert_true(in_set(w.ackable, w.n_ackable, o.acked[i].stream, o.acked[i].seq));
	assert_int_equal(o.arp_replies, 1);
	assert_int_equal(o.other, 0);
#undef C
#undef M
#undef O
	json_decref(r);
}

/* R01 (hidden 1): three contributions from three senders, one over IPv6,
 * arriving 2, 0, 1, two of them on the second queue, through the dataplane
 * with rule layer.3 = 0,1,2 and the config lines more; checks what every
 * such run shows (packet identities, one resolved seed out of two
 * accepted contributions) and returns the report (the caller frees it). */
static json_t *run_r01(const char *more, struct out *o)
{
	struct world w;
	uint8_t b[256];
	char cfg[256];
	open_inputs(&w);
	uint32_t n = vec("R01", b);
	assert_int_equal(n, 66);
	send_frag1(&w, 1, 6, ip6_s2, 5003, b + 44, 22, -1);
	send_frag1(&w, 0, 4, ip_s1, 5001, b, 22, -1);
	send_frag1(&w, 1, 4, ip_s4, 5004, b + 22, 22, -1);
	close_inputs(&w);
	snprintf(cfg, sizeof(cfg), "layer.3 = 0,1,2\n%s", more);
	json_t *r = run_dp(1, cfg, o);
	check_identities(r, w.pkts);
	assert_int_equal(o->resolved, 1);
	assert_int_equal(tu_json_u64(r, "outcomes", "accepted"), 2);
	assert_int_equal(tu_json_u64(r, "outcomes", "resolved"), 1);
	return r;
}

static void test_r01(void **state)
{
	(void)state;
	struct out o;
	json_t *r = run_r01("", &o);
	struct fg_frame f;
	assert_true(fg_frame_decode(o.frames[0], o.lens[0], FG_TRANSPORT_MESSAGE, &f) > 0);
	assert_int_equal(f.hdr.stream_id, 0xAFA3);
	assert_int_equal(f.hdr.sequence, 7);
	/* (1.0 + 1e8) + (-1e8) = 0.0, bits 00000000, whatever the arrival order */
	assert_int_equal(f.hdr.length, 12);
	assert_int_equal(fg_le32(f.payload + 8), 0);
	assert_int_equal(o.status, 3);
	/* the 10.99.0.2:5001 contribution is ACKed */
	assert_true(in_set(o.acked, o.n_acked, 0xAF63, 7));
	if (g_lcores > 1) /* the shard owner got the others' contributions handed over */
		assert_true(tu_json_u64(r, "x", "handoff_out") >= 1);
	json_decref(r);
}

/* Two IPv6 senders whose addresses differ in byte 7 only, from one port
 * (the header templates of dp_tx.c are indexed by the first four bytes
 * and the port: the two share a place): each status goes to its own
 * sender. */
static void test_v6_twins(void **state)
{
	(void)state;
	struct world w;
	uint8_t b[256];
	struct out o;
	open_inputs(&w);
	assert_int_equal(vec("R01", b), 66);
	send_frag1(&w, 0, 6, ip6_s2, 5003, b, 22, -1);
	send_frag1(&w, 0, 6, ip6_twin, 5003, b + 22, 22, -1);
	send_frag1(&w, 0, 4, ip_s4, 5004, b + 44, 22, -1);
	close_inputs(&w);
	json_t *r = run_dp(1, "layer.3 = 0,1,2\n", &o);
	check_identities(r, w.pkts);
	assert_int_equal(o.resolved, 1);
	assert_int_equal(o.status, 3);
	unsigned to_s2 = 0, to_twin = 0;
	for (unsigned i = 0; i < o.status; i++) {
		to_s2 += !memcmp(o.st_dst[i], ip6_s2, 16);
		to_twin += !memcmp(o.st_dst[i], ip6_twin, 16);
	}
	assert_int_equal(to_s2, 1);
	assert_int_equal(to_twin, 1);
	json_decref(r);
}

/* [udp] status_accepted = false: R01's two "accepted" contributions get no
 * status, the resolving one gets its "resolved" status; all three ACKed. */
static void test_r01_status_events_only(void **state)
{
	(void)state;
	struct out o;
	json_t *r = run_r01("[udp]\nstatus_accepted = false\n", &o);
	assert_int_equal(o.status, 1);
	assert_int_equal(tu_json_u64(r, "counters", "status_sent"), 1);
	assert_int_equal(o.st[0].outcome, FG_O_RESOLVED);
	assert_int_equal(o.st[0].token_seq, 7);
	assert_true(in_set(o.acked, o.n_acked, 0xAF63, 7));
	json_decref(r);
}

static void test_r02(void **state)
{
	(void)state;
	struct world w;
	uint8_t b[256];
	open_inputs(&w);
	uint32_t n = vec("R02", b);
	assert_int_equal(n, 44);
	send_frag1(&w, 1, 4, ip_s4, 5004, b + 22, 22, -1); /* the subtracted one first */
	send_frag1(&w, 0, 4, ip_s1, 5001, b, 22, -1);
	close_inputs(&w);
	struct out o;
	json_t *r = run_dp(1, "layer.3 = 0,1\n", &o);
	check_identities(r, w.pkts);
	assert_int_equal(o.resolved, 1);
	struct fg_frame f;
	assert_true(fg_frame_decode(o.frames[0], o.lens[0], FG_TRANSPORT_MESSAGE, &f) > 0);
	assert_int_equal(f.hdr.stream_id, 0xAFA3);
	assert_int_equal(f.hdr.sequence, 8);
	assert_int_equal(fg_le32(f.payload + 8), 0x40200000); /* 3.0 - 0.5 = 2.5 */
	json_decref(r);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s FANOGATE_DP [LCORES]\n", argv[0]);
		return 2;
	}
	if (geteuid() != 0) {
		printf("SKIP: the DPDK EAL needs root here\n");
		return 77;
	}
	g_dp = argv[1];
	g_lcores = argc > 2 ? atoi(argv[2]) : 1;
	inet_pton(AF_INET, "10.99.0.1", ip_dp);
	inet_pton(AF_INET, "10.99.0.2", ip_s1);
	inet_pton(AF_INET, "10.99.0.3", ip_s3);
	inet_pton(AF_INET, "10.99.0.4", ip_s4);
	inet_pton(AF_INET, "192.168.7.7", ip_bad);
	inet_pton(AF_INET6, "fd99::1", ip6_dp);
	inet_pton(AF_INET6, "fd99::2", ip6_s2);
	inet_pton(AF_INET6, "fd99:0:0:1::2", ip6_twin); /* ip6_s2 but for address byte 7 */
	snprintf(g_dir, sizeof(g_dir), "/tmp/fgdp-vec-XXXXXX");
	if (!mkdtemp(g_dir)) {
		perror("mkdtemp");
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_all_vectors),
		cmocka_unit_test(test_r01),
		cmocka_unit_test(test_v6_twins),
		cmocka_unit_test(test_r01_status_events_only),
		cmocka_unit_test(test_r02),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	if (!getenv("FG_KEEP_TMP")) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", g_dir);
	}
	return rc;
}

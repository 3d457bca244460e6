/* test_tx_reply.c - what a UDP sender hears back, as the lcore builds it
 * into mbufs (dataplane/dp_tx.c: dp_tx_status_of, dp_tx_ack_one), and a
 * frame's fragments (dp_tx_frags), byte for byte against the reference:
 * the frame encoded into a buffer (fg_status_frame_of, dp_ack_encode) or
 * a fragment's part of it behind the header dp_pkt_build_udp writes with
 * the same IPv4 id.
 *   statuses   every outcome, slot state, line and line state, under
 *              line facts that change now and then (the lcore's prepared
 *              facts made again), over untagged IPv4 (the prepared status
 *              head), 802.1Q and IPv6 (the template written per
 *              datagram), IPv4 ids across the checksum's carries and the
 *              wrap, and routes that rebuild the template entry between
 *              statuses (its status head made again);
 *   ACKs       an ACK peer's datagram from the template it holds; after
 *              its route changes (dp_ack_peer_route) the next one goes
 *              over the new route; after a status to the same peer over
 *              another route rebuilt the template entry it held, the
 *              next one still goes over the peer's own route;
 *   fragments  a frame sent in the fragmented profile (dp_tx_frags), each
 *              datagram against its fragment behind the reference header,
 *              over the three headers, with ids across the carries and
 *              the wrap;
 *   TX bytes   counted for what the device took: a whole flush, the
 *              part a full TX ring took (the rest when it goes), not a
 *              dropped datagram;
 *   mbufs      the stash refilled from the top of the lcore's pool
 *              cache in rte_mempool_get_bulk's order; a status that
 *              does not fit the pool's mbufs refused, counted.
 * The lcore is driven by the test's thread (no poll loop), as in
 * test_tx_ref.c, on a net_ring port over two rings the test owns.
 *
 * usage: test_tx_reply   (exit 77 when not root) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <rte_eal.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "fg/config.h"
#include "fg/ingest.h"
#include "dp_ack.h"
#include "dp_internal.h"
#include "dp_tx.h"

#include "../lib/fg_test_status.h" /* fg_test_status_draw */

#define POOL_N 512u

static struct rte_ring *txr, *rxr;
static struct dp_lcore *lc;
static struct fg_dp_counters *kc;
static struct dp_xcounters *xk;


static int setup(void **state)
{
	(void)state;
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "--file-prefix=fgtxreply%d", (int)getpid());
	char *argv[] = {"test_tx_reply", "-l", "0", "--no-huge", "-m", "128", "--no-pci", "--no-shconf",
			prefix, "--log-level", "*:error"};
	if (rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])), argv) < 0)
		return -1;
	txr = rte_ring_create("txreply_tx", 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	rxr = rte_ring_create("txreply_rx", 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	assert_non_null(txr);
	assert_non_null(rxr);
	int port = rte_eth_from_rings("net_txreply", &rxr, 1, &txr, 1, SOCKET_ID_ANY);
	assert_true(port >= 0);
	dp_g.port = (uint16_t)port;
	dp_g.mbufs = rte_pktmbuf_pool_create("txreply_pool", POOL_N, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	assert_non_null(dp_g.mbufs);
	fg_config_default(&dp_g.cfg);
	lc = rte_zmalloc("txreply_lc", sizeof(*lc), 64);
	kc = rte_zmalloc("txreply_k", sizeof(*kc), 64);
	xk = rte_zmalloc("txreply_xk", sizeof(*xk), 64);
	assert_non_null(lc);
	assert_non_null(kc);
	assert_non_null(xk);
	lc->k = kc;
	lc->xk = xk;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (!lc)
		return -1;
	dp_tx_drop(lc);
	dp_tx_stash_release(lc);
	assert_int_equal(rte_mempool_avail_count(dp_g.mbufs), POOL_N);
	rte_free(lc);
	rte_free(kc);
	rte_free(xk);
	rte_mempool_free(dp_g.mbufs);
	rte_ring_free(txr);
	rte_ring_free(rxr);
	(void)rte_eal_cleanup();
	return 0;
}

/* The reference datagram: payload pl[0..n) behind dp_pkt_build_udp's
 * header for (rt, to) from the data port, IPv4 id ip_id. */
static uint32_t ref_dgram(uint8_t *out, const struct dp_route *rt, const struct dp_peer *to, const uint8_t *pl,
			  uint32_t n, uint16_t ip_id)
{
	memcpy(out + dp_pkt_hdr_len(rt, to->family), pl, n);
	return dp_pkt_build_udp(out, rt, to->family, rt->local, dp_g.cfg.udp_port, to->addr, to->port, n, ip_id);
}

/* The one datagram the lcore queued equals want[0..len); freed. */
static void expect_queued(const uint8_t *want, uint32_t len, const char *what, unsigned n)
{
	assert_int_equal(lc->n_tx, 1);
	struct rte_mbuf *m = lc->tx[0];
	lc->n_tx = 0;
	if (m->pkt_len != len || m->data_len != len || memcmp(rte_pktmbuf_mtod(m, const uint8_t *), want, len))
		fail_msg("%s %u: the datagram differs from the reference (%u bytes, want %u)", what, n, m->pkt_len,
			 len);
	rte_pktmbuf_free(m);
}

static struct dp_route route4(uint8_t mac_last)
{
	struct dp_route rt = {.mac = {2, 0, 0, 0, 0, mac_last}, .our_mac = {2, 0, 0, 0, 0, 1}};
	memcpy(rt.local, (uint8_t[]){198, 18, 0, 1}, 4);
	return rt;
}

static void test_statuses(void **state)
{
	(void)state;
	enum { PLEN = FG_FRAG_HDR_LEN + FG_HDR_LEN + FG_STATUS_PAYLOAD_LEN };
	const struct dp_peer to4 = {.family = 4, .addr = {198, 18, 0, 2}, .port = 5001};
	struct dp_peer to6 = {.family = 6, .port = 5002};
	to6.addr[0] = 0xfd, to6.addr[15] = 2;
	struct dp_route rts[4] = {route4(2), route4(3), route4(2), route4(2)};
	rts[2].has_vlan = true, rts[2].vlan_tci = 7;
	rts[3].local[0] = 0xfd, rts[3].local[15] = 1;
	const uint64_t sent0 = kc->c[FG_C_STATUS_SENT];
	uint64_t x = 0x9E3779B97F4A7C15ull;
	fg_linefacts lf = 0;
	unsigned head_path = 0;
	for (unsigned n = 0; n < 40000; n++) {
		uint64_t a = fg_test_xorshift64(&x), b = fg_test_xorshift64(&x), c = fg_test_xorshift64(&x);
		if (n % 97 == 0)
			lf = fg_linefacts_with_audit((fg_linefacts)(b & 0x3fffu) | (fg_linefacts)(uint32_t)(c >> 20) << 16,
						     (enum fg_audit_fact)(a % 3));
		lc->ictx.lines = lf;
		/* mostly the same untagged IPv4 route (a template kept), now and
		 * then another MAC (the entry rebuilt), a VLAN or IPv6 */
		unsigned k = (unsigned)(c % 16);
		unsigned which = k < 10 ? 0 : k < 12 ? 1 : k < 14 ? 2 : 3;
		const struct dp_route *rt = &rts[which];
		const struct dp_peer *to = which == 3 ? &to6 : &to4;
		head_path += which < 2;
		struct fg_seed seed;
		struct fg_slot_result r;
		fg_test_status_draw(&x, a, b, c, &seed, &r);
		/* every IPv4 id, the wrap included, over the run's first 65,536 */
		const uint16_t ip_id = (uint16_t)(n * 40503u + (uint32_t)(b >> 32));
		const uint16_t fid = (uint16_t)(b >> 16);
		lc->ip_id = ip_id;
		assert_int_equal(dp_tx_status_of(lc, rt, to, &seed, &r, fid), 1);
		assert_int_equal(lc->ip_id, (uint16_t)(ip_id + 1));
		uint8_t pl[PLEN], want[128];
		fg_ack_store32(pl, (uint32_t)fid << 16 | 1u);
		fg_status_frame_of(&lc->ictx, &seed, &r, pl + FG_FRAG_HDR_LEN);
		expect_queued(want, ref_dgram(want, rt, to, pl, PLEN, ip_id), "status", n);
	}
	assert_true(head_path > 20000);
	assert_int_equal(kc->c[FG_C_STATUS_SENT] - sent0, 40000);
}

/* An ACK of pairs (1, seq0), (1, seq0 + 1), (2, seq0) from pp over its
 * route, frame id fid, IPv4 id ip_id, equals the reference over want_rt. */
static void ack_over(struct dp_ack *a, struct dp_ack_peer *pp, uint32_t seq0, uint16_t fid, uint16_t ip_id,
		     const struct dp_route *want_rt, unsigned n)
{
	(void)dp_ack_note(a, pp, 1, seq0);
	(void)dp_ack_note(a, pp, 1, seq0 + 1);
	(void)dp_ack_note(a, pp, 2, seq0);
	struct dp_ack_peer copy = *pp;
	uint8_t pl[DP_ACK_BUF_MAX], want[DP_ACK_BUF_MAX + 128];
	uint32_t len;
	assert_int_equal(dp_ack_encode(&copy, 1500, fid, pl, sizeof(pl), &len, 1), 1);
	lc->ip_id = ip_id;
	assert_int_equal(dp_tx_ack_one(lc, pp, 1500, fid), 1);
	assert_int_equal(pp->n, 0);
	expect_queued(want, ref_dgram(want, want_rt, &pp->peer, pl, len, ip_id), "ack", n);
	dp_ack_dirty_reset(a);
}

static void test_acks(void **state)
{
	(void)state;
	struct dp_ack a;
	size_t sz = dp_ack_mem_size(8);
	void *mem = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	assert_non_null(mem);
	assert_int_equal(dp_ack_init(&a, mem, sz, 8), 0);
	const struct dp_peer p = {.family = 4, .addr = {198, 18, 0, 3}, .port = 5003};
	const struct dp_route r1 = route4(4), r2 = route4(5);
	bool nw;
	struct dp_ack_peer *pp = dp_ack_peer_get(&a, &p, dp_peer_hash(&p, 0), &r1, 1, &nw);
	assert_non_null(pp);
	/* the first ACK finds the template, the next ones hold it */
	ack_over(&a, pp, 100, 7, 0xFFFF, &r1, 0);
	const struct dp_tx_tmpl *held = pp->tx;
	assert_non_null(held);
	ack_over(&a, pp, 200, 8, 0x1234, &r1, 1);
	assert_ptr_equal(pp->tx, held);
	/* the peer's frames come over another route: the next ACK takes it */
	dp_ack_peer_route(pp, &r2);
	ack_over(&a, pp, 300, 9, 0x8000, &r2, 2);
	/* a status to the same peer over r1 rebuilds the template entry pp
	 * holds (same destination, same cache index): pp's next ACK is still
	 * over r2 */
	assert_non_null(pp->tx);
	struct fg_seed seed = {.token_seq = 5, .line = 1, .body_len = 4};
	struct fg_slot_result r = {.outcome = FG_O_ACCEPTED, .expected = 0x2a, .landed = 0x2, .state = FG_SLOT_OPEN};
	assert_int_equal(dp_tx_status_of(lc, &r1, &p, &seed, &r, 3), 1);
	assert_int_equal(lc->n_tx, 1);
	rte_pktmbuf_free(lc->tx[0]);
	lc->n_tx = 0;
	ack_over(&a, pp, 400, 10, 0x0001, &r2, 3);
	free(mem);
}

/* A frame head + body sent in the fragmented profile (dp_tx_frags):
 * each datagram the lcore queued equals the reference, the fragment
 * header (frame id, index, count) and its part of the frame behind
 * dp_pkt_build_udp's header, IPv4 ids one a datagram from lc->ip_id on.
 * Frames of one fragment to 12, their last fragment full or short, the
 * head within the first fragment or across several, over untagged IPv4
 * (the body's fragments from one prepared header), 802.1Q and IPv6,
 * IPv4 ids across the checksum's carries and the wrap. */
static void test_frags(void **state)
{
	(void)state;
	const struct dp_peer to4 = {.family = 4, .addr = {198, 18, 0, 4}, .port = 7000};
	struct dp_peer to6 = {.family = 6, .port = 7001};
	to6.addr[0] = 0xfd, to6.addr[15] = 4;
	struct dp_route rts[3] = {route4(6), route4(6), route4(6)};
	rts[1].has_vlan = true, rts[1].vlan_tci = 9;
	rts[2].local[0] = 0xfd, rts[2].local[15] = 1;
	static uint8_t frame[12 * 1472];
	uint64_t x = 0xD1B54A32D192ED03ull;
	for (size_t i = 0; i < sizeof(frame); i++)
		frame[i] = (uint8_t)fg_test_xorshift64(&x);
	unsigned short_last = 0, full_last = 0;
	for (unsigned n = 0; n < 3000; n++) {
		uint64_t a = fg_test_xorshift64(&x), b = fg_test_xorshift64(&x);
		const unsigned which = n % 4 == 3 ? 1u + (unsigned)(a >> 60) % 2u : 0u;
		const struct dp_route *rt = &rts[which];
		const struct dp_peer *to = which == 2 ? &to6 : &to4;
		const uint32_t chunk = (uint32_t)(64 + (a >> 8) % 1409); /* 64..1472 */
		uint32_t total = 1 + (uint32_t)((a >> 24) % 12);
		/* a last fragment of 1..chunk bytes, every third one full */
		const uint32_t last = n % 3 == 0 ? chunk : 1 + (uint32_t)((a >> 36) % chunk);
		const uint32_t len = (total - 1) * chunk + last;
		const uint32_t head_len = (uint32_t)((b >> 40) % (len < 2 * chunk ? len + 1 : 2 * chunk));
		const uint16_t ip_id = (uint16_t)(n * 40503u + (uint32_t)b);
		const uint16_t fid = (uint16_t)(b >> 16);
		assert_int_equal(fg_frag_count(len, chunk), total);
		short_last += last < chunk;
		full_last += last == chunk && total > 1;
		lc->ip_id = ip_id;
		assert_true(dp_tx_frags(lc, rt, to, fid, total, frame, head_len, frame + head_len, len - head_len, chunk));
		assert_int_equal(lc->n_tx, total);
		assert_int_equal(lc->ip_id, (uint16_t)(ip_id + total));
		for (uint32_t i = 0; i < total; i++) {
			const uint32_t off = i * chunk, k = len - off < chunk ? len - off : chunk;
			uint8_t pl[FG_FRAG_HDR_LEN + 1472], want[1600];
			fg_put_be16(pl, fid);
			pl[2] = (uint8_t)i;
			pl[3] = (uint8_t)total;
			memcpy(pl + FG_FRAG_HDR_LEN, frame + off, k);
			const uint32_t wlen = ref_dgram(want, rt, to, pl, FG_FRAG_HDR_LEN + k, (uint16_t)(ip_id + i));
			struct rte_mbuf *m = lc->tx[i];
			if (m->pkt_len != wlen || m->data_len != wlen ||
			    memcmp(rte_pktmbuf_mtod(m, const uint8_t *), want, wlen))
				fail_msg("frame %u fragment %u/%u: the datagram differs from the reference (%u bytes, "
					 "want %u)",
					 n, i, total, m->pkt_len, wlen);
			rte_pktmbuf_free(m);
		}
		lc->n_tx = 0;
	}
	assert_true(short_last > 1000 && full_last > 300);
}

/* The ring's datagrams taken off (the device's sends), freed. */
static unsigned drain_txr(void)
{
	void *m[64];
	unsigned k = rte_ring_dequeue_burst(txr, m, 64, NULL);
	for (unsigned i = 0; i < k; i++)
		rte_pktmbuf_free(m[i]);
	return k;
}

/* TX bytes count what the device took: all of a flush, the part a full
 * TX ring took of a larger one (the rest counted when it goes), nothing
 * of what was dropped. */
static void test_tx_bytes(void **state)
{
	(void)state;
	const struct dp_peer to = {.family = 4, .addr = {198, 18, 0, 4}, .port = 7000};
	const struct dp_route rt = route4(6);
	static uint8_t data[1400];
	/* the other tests took their datagrams out of tx[] by hand, unsent */
	lc->tx_bytes = 0;
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof(conf));
	assert_int_equal(rte_eth_dev_configure(dp_g.port, 1, 1, &conf), 0);
	assert_int_equal(rte_eth_rx_queue_setup(dp_g.port, 0, 64, SOCKET_ID_ANY, NULL, dp_g.mbufs), 0);
	assert_int_equal(rte_eth_tx_queue_setup(dp_g.port, 0, 64, SOCKET_ID_ANY, NULL), 0);
	assert_int_equal(rte_eth_dev_start(dp_g.port), 0);
	const uint64_t pkts0 = kc->c[FG_C_TX_PKTS], bytes0 = kc->c[FG_C_TX_BYTES];
	/* 100 datagrams, more than the ring holds (63) */
	uint64_t sum = 0, first = 0;
	for (unsigned i = 0; i < 100; i++)
		assert_true(dp_tx_dgram(lc, &rt, &to, NULL, 0, data, 1 + i * 13));
	assert_int_equal(lc->n_tx, 100);
	for (unsigned i = 0; i < 100; i++)
		sum += lc->tx[i]->pkt_len;
	(void)dp_tx_flush(lc);
	const unsigned sent = 100 - lc->n_tx;
	assert_true(sent > 0 && sent < 100);
	assert_int_equal(drain_txr(), sent);
	for (unsigned i = 0; i < sent; i++)
		first += 42 + 1 + i * 13; /* Ethernet, IPv4, UDP: 42 bytes */
	assert_int_equal(kc->c[FG_C_TX_PKTS] - pkts0, sent);
	assert_int_equal(kc->c[FG_C_TX_BYTES] - bytes0, first);
	while (lc->n_tx) {
		(void)dp_tx_flush(lc);
		(void)drain_txr();
	}
	assert_int_equal(kc->c[FG_C_TX_PKTS] - pkts0, 100);
	assert_int_equal(kc->c[FG_C_TX_BYTES] - bytes0, sum);
	/* dropped datagrams are not counted sent; the next flush counts its own */
	for (unsigned i = 0; i < 5; i++)
		assert_true(dp_tx_dgram(lc, &rt, &to, NULL, 0, data, 1000));
	dp_tx_drop(lc);
	for (unsigned i = 0; i < 3; i++)
		assert_true(dp_tx_dgram(lc, &rt, &to, NULL, 0, data, 10));
	assert_int_equal(dp_tx_flush(lc), 0);
	assert_int_equal(drain_txr(), 3);
	assert_int_equal(kc->c[FG_C_TX_PKTS] - pkts0, 103);
	assert_int_equal(kc->c[FG_C_TX_BYTES] - bytes0, sum + 3 * (42 + 10));
	assert_int_equal(rte_eth_dev_stop(dp_g.port), 0);
}

/* Where a datagram's mbuf comes from. The stash refills from the top of
 * the lcore's pool cache when it holds enough: the mbufs
 * rte_mempool_get_bulk returns, in its order (the ones put back last go
 * first). A status over untagged IPv4 whose datagram does not fit the
 * pool's mbufs is refused (tx_nombuf, no IPv4 id used), never written
 * past its buffer; a datagram that fits them still goes. */
static void test_mbuf_sources(void **state)
{
	(void)state;
	struct rte_mempool *pool0 = dp_g.mbufs;
	const struct dp_peer to = {.family = 4, .addr = {198, 18, 0, 5}, .port = 5005};
	const struct dp_route rt = route4(7), rt_small = route4(8);
	uint64_t x = 0x2545F4914F6CDD1Dull;
	struct fg_seed seed;
	struct fg_slot_result r;
	fg_test_status_draw(&x, fg_test_xorshift64(&x), fg_test_xorshift64(&x), fg_test_xorshift64(&x), &seed, &r);
	assert_int_equal(lc->n_tx, 0);
	dp_tx_stash_release(lc);
	/* 16 mbufs of a pool with a cache put back on top of it, in order */
	struct rte_mempool *cached =
		rte_pktmbuf_pool_create("txreply_cached", 256, 32, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	assert_non_null(cached);
	void *put[DP_TX_STASH];
	assert_int_equal(rte_mempool_get_bulk(cached, put, DP_TX_STASH), 0);
	rte_mempool_put_bulk(cached, put, DP_TX_STASH);
	dp_g.mbufs = cached;
	for (unsigned i = 0; i < DP_TX_STASH; i++)
		assert_int_equal(dp_tx_status_of(lc, &rt, &to, &seed, &r, (uint16_t)i), 1);
	assert_int_equal(lc->n_tx, DP_TX_STASH);
	for (unsigned i = 0; i < DP_TX_STASH; i++) {
		assert_ptr_equal(lc->tx[i], put[DP_TX_STASH - 1 - i]);
		rte_pktmbuf_free(lc->tx[i]);
	}
	lc->n_tx = 0;
	lc->tx_bytes = 0;
	dp_tx_stash_release(lc);
	assert_int_equal(rte_mempool_avail_count(cached), 256);
	/* mbufs with 64 bytes behind the headroom: a status over untagged
	 * IPv4 (42 + 46 bytes) does not fit, a 52-byte datagram does */
	struct rte_mempool *small =
		rte_pktmbuf_pool_create("txreply_small", 64, 0, 0, RTE_PKTMBUF_HEADROOM + 64, SOCKET_ID_ANY);
	assert_non_null(small);
	dp_g.mbufs = small;
	const uint64_t nombuf = xk->x[DP_X_TX_NOMBUF], sent = kc->c[FG_C_STATUS_SENT];
	lc->ip_id = 100;
	assert_int_equal(dp_tx_status_of(lc, &rt_small, &to, &seed, &r, 1), 0);
	assert_int_equal(lc->n_tx, 0);
	assert_int_equal(lc->ip_id, 100);
	assert_int_equal(xk->x[DP_X_TX_NOMBUF], nombuf + 1);
	assert_int_equal(kc->c[FG_C_STATUS_SENT], sent);
	static const uint8_t d[10];
	assert_true(dp_tx_dgram(lc, &rt_small, &to, NULL, 0, d, sizeof(d)));
	assert_int_equal(lc->n_tx, 1);
	assert_int_equal(lc->tx[0]->pkt_len, 42 + sizeof(d));
	rte_pktmbuf_free(lc->tx[0]);
	lc->n_tx = 0;
	lc->tx_bytes = 0;
	dp_tx_stash_release(lc);
	assert_int_equal(rte_mempool_avail_count(small), 64);
	dp_g.mbufs = pool0;
	rte_mempool_free(cached);
	rte_mempool_free(small);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("SKIP: the DPDK EAL needs root here\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_statuses),
		cmocka_unit_test(test_acks),
		cmocka_unit_test(test_frags),
		cmocka_unit_test(test_tx_bytes),
		cmocka_unit_test(test_mbuf_sources),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

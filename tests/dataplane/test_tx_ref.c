/* test_tx_ref.c - a resolved seed sent by reference (dataplane/dp_tx.c,
 * dp_tx_consumer_frags with lc->tx_ref) against the same seed copied into
 * its packets, on a net_ring port built over two rings this test owns
 * (rte_eth_from_rings), so that it reads what the port transmitted and
 * decides how much the TX ring takes:
 *   identical   the datagrams by reference (header mbuf chained to one
 *               attached to the slot's body, no body byte copied) are byte
 *               for byte those of the copy, in count, order and length;
 *               the TX counters count the same packets and bytes;
 *   held        the TX ring takes 3 of the 5 fragments: the other 2 wait
 *               in the lcore's TX buffer (dp_tx_send starts a hold), and
 *               while any fragment is out (in the buffer or in the ring)
 *               the slot stays pinned: a contribution of another key for
 *               its index is refused (no_slot) and the body is unchanged;
 *               once the last fragment is freed the slot is unpinned and
 *               the same contribution reclaims it;
 *   dropped     fragments dropped from the TX buffer (dp_tx_drop) unpin
 *               the slot as well; every mbuf goes back to its pool;
 *   exhausted   the pool runs dry during a delivery: with 3 mbufs left
 *               the first fragment goes (header and body mbufs), each of
 *               the other 4 finds a header but no body mbuf, gives the
 *               header back and is counted (tx_nombuf); the slot stays
 *               pinned for the one fragment out and is let go when it is
 *               freed; with none left nothing is queued and nothing
 *               stays pinned; no mbuf is lost either way;
 *   fields      every field of a TX mbuf that rte_pktmbuf_reset and
 *               rte_pktmbuf_append set is what they would set, whatever
 *               the mbuf's last user left in it (every pool mbuf is
 *               scribbled over first; dp_tx.c writes them a word at a
 *               time).
 * The lcore is driven by the test's thread (no poll loop): it is the
 * lcore that owns lc, as the dataplane's own would be.
 *
 * usage: test_tx_ref   (exit 77 when not root) */
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
#include "fg/slot.h"
#include "dp_internal.h"
#include "dp_tx.h"

#define HIDDEN 1536u
#define BODY (HIDDEN * 4u)
#define CHUNK 1468u
#define POOL_N 256u
#define TX_RING 4u /* holds 3 */

static struct rte_ring *txr, *rxr;
static struct dp_lcore *lc;
static struct fg_dp_counters *kc;
static struct dp_xcounters *xk;
static uint8_t head[FG_RESOLVED_HEAD_LEN];
static const struct dp_peer to = {.family = 4, .addr = {198, 18, 0, 2}, .port = 7000};
static uint32_t slot;
static const uint8_t *body;

/* What the port transmitted so far, each packet flattened, its mbufs freed. */
static unsigned take_sent(uint8_t out[][2048], uint32_t *len, unsigned max)
{
	struct rte_mbuf *m[16];
	unsigned n = rte_ring_dequeue_burst(txr, (void **)m, 16, NULL);
	assert_true(n <= max);
	for (unsigned i = 0; i < n; i++) {
		assert_true(m[i]->pkt_len <= 2048);
		len[i] = m[i]->pkt_len;
		const void *p = rte_pktmbuf_read(m[i], 0, m[i]->pkt_len, out[i]);
		assert_non_null(p);
		if (p != out[i])
			memcpy(out[i], p, m[i]->pkt_len);
		rte_pktmbuf_free(m[i]);
	}
	return n;
}

/* A contribution of line 1 for token tok of layer 0 (the others' bodies
 * do not matter here). */
static enum fg_outcome put_line(uint32_t tok, uint8_t line, uint8_t fill)
{
	static uint8_t b[BODY];
	memset(b, fill, sizeof(b));
	struct fg_seed sd = {.token_seq = tok, .dst_layer = 0, .line = line, .start_pos = 0, .seq_len = 1,
			     .body = b, .body_len = BODY};
	struct fg_slot_result r;
	assert_int_equal(fg_slot_put(&lc->slots, &sd, 1, &r), 0);
	return r.outcome;
}

static int setup(void **state)
{
	(void)state;
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "--file-prefix=fgtxref%d", (int)getpid());
	char *argv[] = {"test_tx_ref", "-l", "0", "--no-huge", "-m", "128", "--no-pci", "--no-shconf",
			prefix, "--log-level", "*:error"};
	if (rte_eal_init((int)(sizeof(argv) / sizeof(argv[0])), argv) < 0)
		return -1;
	txr = rte_ring_create("txref_tx", TX_RING, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	rxr = rte_ring_create("txref_rx", 64, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	assert_non_null(txr);
	assert_non_null(rxr);
	int port = rte_eth_from_rings("net_txref", &rxr, 1, &txr, 1, SOCKET_ID_ANY);
	assert_true(port >= 0);
	dp_g.port = (uint16_t)port;
	dp_g.mbufs = rte_pktmbuf_pool_create("txref_pool", POOL_N, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	assert_non_null(dp_g.mbufs);
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof(conf));
	assert_int_equal(rte_eth_dev_configure((uint16_t)port, 1, 1, &conf), 0);
	assert_int_equal(rte_eth_rx_queue_setup((uint16_t)port, 0, 64, SOCKET_ID_ANY, NULL, dp_g.mbufs), 0);
	assert_int_equal(rte_eth_tx_queue_setup((uint16_t)port, 0, 64, SOCKET_ID_ANY, NULL), 0);
	assert_int_equal(rte_eth_dev_start((uint16_t)port), 0);

	char cfgtext[] = "[model]\nhidden = 1536\nlayers = 4\n[rules]\ndefault = 1,3,5\n"
			 "[dataplane]\nneighbours = 198.18.0.2=02:00:00:00:00:02\n";
	struct fg_config_error err;
	fg_config_default(&dp_g.cfg);
	assert_int_equal(fg_config_parse(&dp_g.cfg, cfgtext, "test", &err), 0);
	dp_g.prof.tx_hold_ms = 50;

	lc = rte_zmalloc("txref_lc", sizeof(*lc), 64);
	kc = rte_zmalloc("txref_k", sizeof(*kc), 64);
	xk = rte_zmalloc("txref_xk", sizeof(*xk), 64);
	assert_non_null(lc);
	assert_non_null(kc);
	assert_non_null(xk);
	lc->k = kc;
	lc->xk = xk;
	lc->has_local4 = true;
	memcpy(lc->local4, (uint8_t[]){198, 18, 0, 1}, 4);
	struct fg_slots_cfg scfg = {.capacity = 8, .hidden = HIDDEN, .max_seq_len = 1, .n_layers = 4,
				    .deadline_ns = UINT64_MAX / 4};
	for (unsigned l = 0; l < 4; l++)
		assert_int_equal(fg_rule_make(&scfg.rules[l], (const uint8_t[]){1, 3, 5}, 3), 0);
	size_t sz = fg_slots_mem_size(&scfg);
	lc->slots_mem = rte_malloc("txref_slots", sz, 64);
	assert_non_null(lc->slots_mem);
	assert_int_equal(fg_slots_init(&lc->slots, lc->slots_mem, sz, &scfg), 0);
	lc->tx_ref_mem = rte_malloc("txref_refs", dp_tx_ref_mem_size(scfg.capacity), 64);
	assert_non_null(lc->tx_ref_mem);

	/* token 3 of layer 0 resolves; its body is what every test sends */
	assert_int_equal(put_line(3, 1, 0x11), FG_O_ACCEPTED);
	assert_int_equal(put_line(3, 3, 0x22), FG_O_ACCEPTED);
	assert_int_equal(put_line(3, 5, 0x33), FG_O_RESOLVED);
	struct fg_seed_view v;
	slot = lc->slots.cfg.capacity; /* found below */
	for (uint32_t i = 0; i < lc->slots.cfg.capacity; i++)
		if (fg_slot_seed(&lc->slots, i, &v) == 0)
			slot = i;
	assert_int_equal(fg_slot_seed(&lc->slots, slot, &v), 0);
	body = v.body;
	for (unsigned i = 0; i < sizeof(head); i++)
		head[i] = (uint8_t)(0xA0 + i);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (!lc || !lc->tx_ref_mem)
		return -1; /* setup failed: nothing to check */
	dp_tx_stash_release(lc);
	assert_int_equal(rte_mempool_avail_count(dp_g.mbufs), POOL_N);
	(void)rte_eth_dev_stop(dp_g.port);
	(void)rte_eth_dev_close(dp_g.port);
	rte_free(lc->tx_ref_mem);
	rte_free(lc->slots_mem);
	rte_free(lc);
	rte_free(kc);
	rte_free(xk);
	rte_mempool_free(dp_g.mbufs);
	rte_ring_free(txr);
	rte_ring_free(rxr);
	(void)rte_eal_cleanup();
	return 0;
}

static uint32_t frag_total(void) { return fg_frag_count(FG_RESOLVED_HEAD_LEN + BODY, CHUNK); }

/* Queue the seed's fragments (fid 9, IP ids from 100): 1 when all queued. */
static int send_seed(uint32_t which)
{
	lc->ip_id = 100;
	return dp_tx_consumer_frags(lc, &to, 1, 9, frag_total(), head, FG_RESOLVED_HEAD_LEN, body, BODY, CHUNK,
				    which);
}

static void test_identical(void **state)
{
	(void)state;
	static uint8_t copy[8][2048], ref[8][2048];
	uint32_t copy_len[8], ref_len[8];
	const unsigned total = frag_total();
	assert_int_equal(total, 5);

	/* the copy: no references laid out */
	lc->tx_ref = NULL;
	assert_int_equal(send_seed(slot), 1);
	assert_int_equal(lc->n_tx, total);
	for (unsigned i = 0; i < total; i++)
		assert_int_equal(lc->tx[i]->nb_segs, 1);
	unsigned got = 0;
	while (lc->n_tx) {
		(void)dp_tx_flush(lc);
		got += take_sent(copy + got, copy_len + got, 8 - got);
	}
	assert_int_equal(got, total);
	uint64_t pkts = kc->c[FG_C_TX_PKTS], bytes = kc->c[FG_C_TX_BYTES];

	/* by reference: every fragment a header mbuf and the body where it lies */
	dp_tx_ref_init(lc, lc->tx_ref_mem, 0);
	assert_int_equal(send_seed(slot), 1);
	assert_int_equal(lc->n_tx, total);
	for (unsigned i = 0; i < total; i++) {
		const struct rte_mbuf *m = lc->tx[i];
		assert_int_equal(m->nb_segs, 2);
		assert_true(RTE_MBUF_HAS_EXTBUF(m->next));
		const uint8_t *at = rte_pktmbuf_mtod(m->next, const uint8_t *);
		assert_true(at >= body && at + m->next->data_len <= body + BODY);
	}
	assert_true(fg_slot_is_pinned(&lc->slots, slot));
	got = 0;
	while (lc->n_tx) {
		(void)dp_tx_flush(lc);
		got += take_sent(ref + got, ref_len + got, 8 - got);
	}
	assert_int_equal(got, total);
	for (unsigned i = 0; i < total; i++) {
		assert_int_equal(ref_len[i], copy_len[i]);
		assert_memory_equal(ref[i], copy[i], copy_len[i]);
	}
	assert_int_equal(kc->c[FG_C_TX_PKTS] - pkts, pkts);
	assert_int_equal(kc->c[FG_C_TX_BYTES] - bytes, bytes);
	/* every fragment freed: the slot is free to go */
	assert_false(fg_slot_is_pinned(&lc->slots, slot));
}

static void test_held(void **state)
{
	(void)state;
	static uint8_t out[8][2048];
	uint32_t len[8];
	static uint8_t before[BODY];
	memcpy(before, body, BODY);
	dp_tx_ref_init(lc, lc->tx_ref_mem, 0);
	assert_int_equal(send_seed(slot), 1);
	/* the TX ring takes 3: 2 wait in the TX buffer, a hold starts */
	uint64_t held = xk->x[DP_X_TX_HELD];
	dp_tx_send(lc, false, 1000);
	assert_int_equal(lc->n_tx, 2);
	assert_int_equal(xk->x[DP_X_TX_HELD], held + 1);
	assert_true(dp_tx_held(lc, 1000 + 1000000));
	assert_true(fg_slot_is_pinned(&lc->slots, slot));

	/* token 3 + 8 * 4 / 4: the same index (capacity 8, 4 layers, 1
	 * shard: index = (tok * 4 + layer) mod 8), another key */
	const uint32_t other = 3 + 2;
	assert_int_equal(put_line(other, 1, 0x44), FG_O_NO_SLOT);
	/* the ring's 3 read and freed: the 2 in the buffer still pin it */
	unsigned got = take_sent(out, len, 8);
	assert_int_equal(got, 3);
	assert_true(fg_slot_is_pinned(&lc->slots, slot));
	assert_int_equal(put_line(other, 1, 0x44), FG_O_NO_SLOT);
	assert_memory_equal(body, before, BODY);
	/* the hold ends: the rest goes, and once read the slot is let go */
	dp_tx_send(lc, true, 2000);
	assert_int_equal(lc->n_tx, 0);
	assert_true(fg_slot_is_pinned(&lc->slots, slot));
	got = take_sent(out, len, 8);
	assert_int_equal(got, 2);
	assert_false(fg_slot_is_pinned(&lc->slots, slot));
	assert_memory_equal(body, before, BODY);
}

static void test_dropped(void **state)
{
	(void)state;
	dp_tx_ref_init(lc, lc->tx_ref_mem, 0);
	uint64_t drops = kc->c[FG_C_DROP_TX_FULL];
	assert_int_equal(send_seed(slot), 1);
	assert_true(fg_slot_is_pinned(&lc->slots, slot));
	dp_tx_drop(lc);
	assert_int_equal(kc->c[FG_C_DROP_TX_FULL], drops + frag_total());
	assert_false(fg_slot_is_pinned(&lc->slots, slot));
	/* now another key takes the index */
	assert_int_equal(put_line(3 + 2, 1, 0x44), FG_O_ACCEPTED);
	/* and a slot no longer resolved is sent by copy, nothing pinned */
	assert_int_equal(send_seed(slot), 1);
	for (unsigned i = 0; i < lc->n_tx; i++)
		assert_int_equal(lc->tx[i]->nb_segs, 1);
	assert_false(fg_slot_is_pinned(&lc->slots, slot));
	dp_tx_drop(lc);
}

/* Take every mbuf of the pool but `leave` (the lcore's stash emptied
 * first); returns how many were taken into held. */
static unsigned drain_pool(struct rte_mbuf **held, unsigned leave)
{
	dp_tx_stash_release(lc);
	unsigned avail = rte_mempool_avail_count(dp_g.mbufs);
	assert_true(avail >= leave);
	unsigned n = avail - leave;
	assert_int_equal(rte_mempool_get_bulk(dp_g.mbufs, (void **)held, n), 0);
	assert_int_equal(rte_mempool_avail_count(dp_g.mbufs), leave);
	return n;
}

static void test_exhausted(void **state)
{
	(void)state;
	static struct rte_mbuf *held[POOL_N];
	static uint8_t out[8][2048];
	uint32_t len[8];
	static uint8_t before[BODY];
	memcpy(before, body, BODY);
	dp_tx_ref_init(lc, lc->tx_ref_mem, 0);
	const unsigned total = frag_total();

	/* 3 mbufs: fragment 0's two, then a header for each of the others */
	unsigned n = drain_pool(held, 3);
	uint64_t nombuf = xk->x[DP_X_TX_NOMBUF];
	assert_int_equal(send_seed(slot), 0);
	assert_int_equal(lc->n_tx, 1);
	assert_int_equal(lc->tx[0]->nb_segs, 2);
	assert_int_equal(xk->x[DP_X_TX_NOMBUF] - nombuf, total - 1);
	assert_int_equal(rte_mempool_avail_count(dp_g.mbufs), 1); /* the header given back */
	assert_true(fg_slot_is_pinned(&lc->slots, slot));
	/* the one fragment sent and freed: the slot is let go */
	while (lc->n_tx)
		(void)dp_tx_flush(lc);
	assert_int_equal(take_sent(out, len, 8), 1);
	assert_false(fg_slot_is_pinned(&lc->slots, slot));
	rte_mempool_put_bulk(dp_g.mbufs, (void **)held, n);

	/* none: nothing queued, nothing pinned, each fragment counted */
	n = drain_pool(held, 0);
	nombuf = xk->x[DP_X_TX_NOMBUF];
	assert_int_equal(send_seed(slot), 0);
	assert_int_equal(lc->n_tx, 0);
	assert_int_equal(xk->x[DP_X_TX_NOMBUF] - nombuf, total);
	assert_false(fg_slot_is_pinned(&lc->slots, slot));
	rte_mempool_put_bulk(dp_g.mbufs, (void **)held, n);
	assert_memory_equal(body, before, BODY);
	/* and with mbufs again, the whole seed goes by reference */
	assert_int_equal(send_seed(slot), 1);
	assert_int_equal(lc->n_tx, total);
	assert_true(fg_slot_is_pinned(&lc->slots, slot));
	dp_tx_drop(lc);
	assert_false(fg_slot_is_pinned(&lc->slots, slot));
}

/* Scribble over every field rte_pktmbuf_reset sets in every mbuf of the
 * pool but those a raw mbuf's contract fixes (refcnt 1, one segment, no
 * next, direct), as a last user (an RX burst, another sender) may leave
 * them. */
static void scribble_pool(void)
{
	static struct rte_mbuf *all[POOL_N];
	dp_tx_stash_release(lc);
	unsigned n = rte_mempool_avail_count(dp_g.mbufs);
	assert_int_equal(n, POOL_N);
	assert_int_equal(rte_mempool_get_bulk(dp_g.mbufs, (void **)all, n), 0);
	for (unsigned i = 0; i < n; i++) {
		struct rte_mbuf *m = all[i];
		m->data_off = 7;
		m->port = 3;
		m->ol_flags = RTE_MBUF_F_RX_IP_CKSUM_BAD | RTE_MBUF_F_RX_VLAN | RTE_MBUF_F_TX_IPV4;
		m->packet_type = 0xdeadbeefu;
		m->pkt_len = 999;
		m->data_len = 999;
		m->vlan_tci = 0x1234;
		m->vlan_tci_outer = 0x5678;
		m->tx_offload = ~0ull;
	}
	rte_mempool_put_bulk(dp_g.mbufs, (void *const *)all, n);
}

/* m as rte_pktmbuf_alloc then rte_pktmbuf_append of its length would
 * have left it, field by field. */
static void assert_fresh(const struct rte_mbuf *m)
{
	assert_int_equal(m->data_off, RTE_PKTMBUF_HEADROOM);
	assert_int_equal(rte_mbuf_refcnt_read(m), 1);
	assert_int_equal(m->nb_segs, 1);
	assert_int_equal(m->port, RTE_MBUF_PORT_INVALID);
	assert_int_equal(m->ol_flags, 0);
	assert_int_equal(m->packet_type, 0);
	assert_int_equal(m->pkt_len, m->data_len);
	assert_true(m->data_len > 0);
	assert_int_equal(m->vlan_tci, 0);
	assert_int_equal(m->vlan_tci_outer, 0);
	assert_null(m->next);
	assert_int_equal(m->tx_offload, 0);
}

static void test_fields(void **state)
{
	(void)state;
	static const uint8_t data[100] = {1, 2, 3};
	struct dp_route rt = {.mac = {2, 0, 0, 0, 0, 2}, .our_mac = {2, 0, 0, 0, 0, 1}};
	memcpy(rt.local, (uint8_t[]){198, 18, 0, 1}, 4);
	lc->tx_ref = NULL;
	scribble_pool();
	assert_true(dp_tx_dgram(lc, &rt, &to, NULL, 0, data, sizeof(data)));
	assert_int_equal(send_seed(slot), 1);
	const unsigned total = frag_total();
	assert_int_equal(lc->n_tx, 1 + total);
	assert_int_equal(lc->tx[0]->pkt_len, DP_UDP4_PAYLOAD + sizeof(data));
	for (unsigned i = 0; i < lc->n_tx; i++)
		assert_fresh(lc->tx[i]);
	assert_int_equal(lc->tx[1]->pkt_len, DP_UDP4_PAYLOAD + FG_FRAG_HDR_LEN + CHUNK);
	dp_tx_drop(lc);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("SKIP: the DPDK EAL needs root here\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identical),
		cmocka_unit_test(test_held),
		cmocka_unit_test(test_exhausted),
		cmocka_unit_test(test_dropped),
		cmocka_unit_test(test_fields),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* test_rx_mbufs.c - the receive burst gives every mbuf back exactly once,
 * whatever the PMD handed it. dp_init on a net_ring port with one poll
 * lcore; this test puts mbufs on the port's RX ring (the loopback ring
 * "ETH_RXTX0_net_ring0"), all of a case in one enqueue, so the lcore takes
 * them in one burst:
 *   plain         of one pool, referenced once, one segment: the fast
 *                 return (rte_mempool_put_bulk, dp_rx.c rx_plain);
 *   two pools     plain mbufs of two pools in one burst;
 *   shared        one mbuf the test also references (refcnt 2);
 *   chained       one packet of two segments;
 *   indirect      a clone (its own pool) of a mbuf the test keeps;
 *   indirect, one pool  a clone of the burst's pool: referenced once, one
 *                 segment, only its flags make it not plain;
 * the last five return one by one (rte_pktmbuf_free_bulk). Then the same
 * cases four at a time (dp_rx.c rx_check4): bursts of eight whose frames
 * carry the lengths of the common form (dp_pkt_udp4_lens), so that a quad
 * is taken whole unless one of its mbufs is not plain; the odd mbuf in
 * the second quad. Checks, per case: each pool's available count where it
 * was (waited for, with a deadline), the test's references left at 1, and
 * the lcore counted the packets; at the end, their bytes. The frames are
 * not for the dataplane (ethertype 0): nothing is sent, so this test is
 * the ring's only producer (its TX count stays 0).
 *
 * usage: test_rx_mbufs   (exit 77 when not root) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "fg/boundary.h"
#include "fg/config.h"
#include "fg/line.h"
#include "dp.h"

#define FRAME 60u
#define POOL_N 64u

static struct fg_config cfg;
static struct fg_boundary b;
static struct rte_mempool *pa, *pb;
static struct rte_ring *rx;
static uint64_t rx_seen, rx_bytes;

static struct rte_mbuf *frame(struct rte_mempool *p, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(p);
	assert_non_null(m);
	char *d = rte_pktmbuf_append(m, len);
	assert_non_null(d);
	memset(d, 0, len); /* ethertype 0: not for the dataplane */
	return m;
}

/* A frame of len bytes (>= 42) with the lengths of the common form: IP
 * total length len - 14, UDP length len - 34 (ethertype still 0). */
static struct rte_mbuf *form(struct rte_mempool *p, uint16_t len)
{
	struct rte_mbuf *m = frame(p, len);
	uint8_t *d = rte_pktmbuf_mtod(m, uint8_t *);
	d[16] = (uint8_t)((len - 14) >> 8), d[17] = (uint8_t)(len - 14);
	d[38] = (uint8_t)((len - 34) >> 8), d[39] = (uint8_t)(len - 34);
	return m;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Put the n mbufs on the RX ring at once, then wait (5 s at most) until
 * the lcore counted them and pools a and b hold want_a and want_b again. */
static void burst(struct rte_mbuf **m, unsigned n, unsigned want_a, unsigned want_b)
{
	for (unsigned i = 0; i < n; i++)
		rx_bytes += rte_pktmbuf_pkt_len(m[i]);
	assert_int_equal(rte_ring_enqueue_bulk(rx, (void **)m, n, NULL), n);
	rx_seen += n;
	struct dp_report r;
	uint64_t end = now_ms() + 5000;
	for (;;) {
		assert_int_equal(dp_report_get(&r), 0);
		if ((r.c[FG_C_RX_PKTS] == rx_seen && rte_mempool_avail_count(pa) == want_a &&
		     rte_mempool_avail_count(pb) == want_b) ||
		    now_ms() > end)
			break;
		usleep(200);
	}
	assert_int_equal(r.c[FG_C_RX_PKTS], rx_seen);
	assert_int_equal(rte_mempool_avail_count(pa), want_a);
	assert_int_equal(rte_mempool_avail_count(pb), want_b);
	assert_int_equal(r.c[FG_C_TX_PKTS], 0);
}

static void test_rx_mbufs(void **state)
{
	(void)state;
	char cfgtext[] = "[model]\nhidden = 4\nlayers = 4\n[rules]\ndefault = 1,3,5\n[dataplane]\nlcores = 1\n";
	struct fg_config_error err;
	fg_config_default(&cfg);
	assert_int_equal(fg_config_parse(&cfg, cfgtext, "test", &err), 0);
	struct fg_lines ls;
	fg_lines_init(&ls, cfg.line_initial, &cfg.policy, 0);
	atomic_store(&b.linefacts, fg_linefacts_pack(&ls, 0));
	char prof[512];
	snprintf(prof, sizeof(prof), "%s/drivers-config/ring.ini", FG_SOURCE_ROOT);
	setenv("FG_HUGEPAGES", "off", 1);
	assert_int_equal(dp_init(&cfg, prof, &b), 0);
	assert_int_equal(dp_start(), 0);
	rx = rte_ring_lookup("ETH_RXTX0_net_ring0");
	assert_non_null(rx);
	pa = rte_pktmbuf_pool_create("rxm_a", POOL_N, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	pb = rte_pktmbuf_pool_create("rxm_b", POOL_N, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	assert_non_null(pa);
	assert_non_null(pb);
	struct rte_mbuf *m[8];

	/* plain, one pool */
	for (unsigned i = 0; i < 4; i++)
		m[i] = frame(pa, FRAME);
	burst(m, 4, POOL_N, POOL_N);

	/* plain, two pools */
	for (unsigned i = 0; i < 3; i++)
		m[i] = frame(pa, FRAME);
	m[3] = frame(pb, FRAME);
	burst(m, 4, POOL_N, POOL_N);

	/* shared: the lcore drops its reference only */
	struct rte_mbuf *kept = frame(pa, FRAME);
	rte_mbuf_refcnt_update(kept, 1);
	m[0] = frame(pa, FRAME);
	m[1] = kept;
	m[2] = frame(pa, FRAME);
	burst(m, 3, POOL_N - 1, POOL_N);
	assert_int_equal(rte_mbuf_refcnt_read(kept), 1);
	rte_pktmbuf_free(kept);
	assert_int_equal(rte_mempool_avail_count(pa), POOL_N);

	/* chained: both segments come back */
	m[0] = frame(pa, FRAME);
	m[1] = frame(pa, FRAME);
	assert_int_equal(rte_pktmbuf_chain(m[1], frame(pa, 10)), 0);
	assert_int_equal(m[1]->nb_segs, 2);
	burst(m, 2, POOL_N, POOL_N);

	/* indirect: the clone back to its pool, the direct mbuf to the test */
	struct rte_mbuf *direct = frame(pa, FRAME);
	m[0] = frame(pa, FRAME);
	m[1] = rte_pktmbuf_clone(direct, pb);
	assert_non_null(m[1]);
	assert_true(RTE_MBUF_CLONED(m[1]));
	assert_int_equal(rte_mbuf_refcnt_read(direct), 2);
	burst(m, 2, POOL_N - 1, POOL_N);
	assert_int_equal(rte_mbuf_refcnt_read(direct), 1);
	rte_pktmbuf_free(direct);
	assert_int_equal(rte_mempool_avail_count(pa), POOL_N);

	/* indirect, of the burst's pool: only its flags tell it from a plain
	 * mbuf (referenced once, one segment, pool pa) */
	direct = frame(pa, FRAME);
	m[0] = frame(pa, FRAME);
	m[1] = rte_pktmbuf_clone(direct, pa);
	assert_non_null(m[1]);
	assert_true(RTE_MBUF_CLONED(m[1]));
	assert_int_equal(rte_mbuf_refcnt_read(m[1]), 1);
	burst(m, 2, POOL_N - 1, POOL_N);
	assert_int_equal(rte_mbuf_refcnt_read(direct), 1);
	rte_pktmbuf_free(direct);
	assert_int_equal(rte_mempool_avail_count(pa), POOL_N);

	/* four at a time: plain, one pool (two whole quads) */
	for (unsigned i = 0; i < 8; i++)
		m[i] = form(pa, FRAME);
	burst(m, 8, POOL_N, POOL_N);

	/* four at a time, the odd mbuf of another pool */
	for (unsigned i = 0; i < 8; i++)
		m[i] = form(pa, FRAME);
	rte_pktmbuf_free(m[5]);
	m[5] = form(pb, FRAME);
	burst(m, 8, POOL_N, POOL_N);

	/* four at a time, shared */
	kept = form(pa, FRAME);
	rte_mbuf_refcnt_update(kept, 1);
	for (unsigned i = 0; i < 8; i++)
		m[i] = i == 5 ? kept : form(pa, FRAME);
	burst(m, 8, POOL_N - 1, POOL_N);
	assert_int_equal(rte_mbuf_refcnt_read(kept), 1);
	rte_pktmbuf_free(kept);

	/* four at a time, chained */
	for (unsigned i = 0; i < 8; i++)
		m[i] = form(pa, FRAME);
	assert_int_equal(rte_pktmbuf_chain(m[5], frame(pa, 10)), 0);
	burst(m, 8, POOL_N, POOL_N);

	/* four at a time, indirect of the burst's pool */
	direct = form(pa, FRAME);
	for (unsigned i = 0; i < 8; i++)
		m[i] = i == 5 ? rte_pktmbuf_clone(direct, pa) : form(pa, FRAME);
	assert_non_null(m[5]);
	burst(m, 8, POOL_N - 1, POOL_N);
	assert_int_equal(rte_mbuf_refcnt_read(direct), 1);
	rte_pktmbuf_free(direct);
	assert_int_equal(rte_mempool_avail_count(pa), POOL_N);

	dp_stop();
	struct dp_report r;
	assert_int_equal(dp_report_get(&r), 0);
	assert_int_equal(r.c[FG_C_RX_PKTS], rx_seen);
	assert_int_equal(r.c[FG_C_RX_BYTES], rx_bytes);
	assert_int_equal(r.mbuf_pool_avail, r.mbuf_pool_size);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("SKIP: the DPDK EAL needs root here\n");
		return 77;
	}
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_rx_mbufs)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* dp_io_dpdk.c - the DPDK lcore's implementation of the shard's I/O
 * interface (dp_io.h): datagrams into mbufs on the lcore's TX buffer
 * (dp_tx.c), consumer routes from the neighbour table (dp_neigh.c), xfer
 * buffers from the shared mempool dp_g.xfer, hand-off through the owner
 * lcore's MP/SC inbox ring, reports to the control plane through the
 * lcore's boundary lane (dp_lanes.c), neighbour hints from deliveries; and
 * the inbox's consumer side (handed frames, and ARP/NDP answers other
 * lcores received, dp_neigh.c).
 *
 * Who may call: the lcore that owns `lc` (through lc->env->io from the
 * shard code, and its loop for the inbox). No heap, locks or logs. */
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dp_internal.h"
#include "dp_lanes.h"
#include "dp_neigh.h"
#include "dp_shard.h"
#include "dp_tx.h"

static bool io_route(struct dp_lcore *lc, int family, const uint8_t *addr, struct dp_route *rt, uint64_t now)
{
	return dp_neigh_route(lc, family, addr, rt, now);
}

static void io_neigh_hint(struct dp_lcore *lc, int family, const uint8_t *addr, enum dp_neigh_hint hint,
			  uint64_t now)
{
	dp_neigh_hint(lc, family, addr, hint, now);
}

static struct dp_xfer *io_xfer_get(struct dp_lcore *lc)
{
	(void)lc;
	void *p;
	return rte_mempool_get(dp_g.xfer, &p) < 0 ? NULL : p;
}

static void io_xfer_put(struct dp_lcore *lc, struct dp_xfer *x)
{
	(void)lc;
	rte_mempool_put(dp_g.xfer, x);
}

/* io->kept_put: plain mbufs of dp_g.mbufs (only those are kept, dp_rx.c),
 * back to their pool as the receive burst returns them, through the
 * lcore's cache (dp_lcore_main found it). */
static __attribute__((noinline)) void kept_put_flush(struct dp_lcore *lc, void *const *m, unsigned n)
{
	rte_mempool_generic_put(dp_g.mbufs, m, n, lc->mbuf_cache);
}

static void io_kept_put(struct dp_lcore *lc, unsigned src, void *const *m, unsigned n)
{
	struct rte_mempool_cache *c = lc->mbuf_cache;
	if (__builtin_expect(c && c->len + n <= c->flushthresh, 1)) {
		/* rte_mempool_generic_put's common case, a few pointers */
		void **to = &c->objs[c->len];
		c->len += n;
		for (unsigned i = 0; i < n; i++)
			to[i] = m[i];
	} else {
		kept_put_flush(lc, m, n);
	}
	dp_reasm_kept_back(&dp_g.lc[src]->reasm, n);
}

static bool io_handoff(struct dp_lcore *lc, unsigned owner, struct dp_xfer *x)
{
	if (owner >= dp_g.n || rte_ring_mp_enqueue(dp_g.lc[owner]->inbox, x) != 0)
		return false;
	/* [poll] idle_wake: the owner may sleep in its idle wait (dp_idle.h);
	 * dp_inbox_kick wakes it once per loop iteration, not per frame */
	if (dp_g.lc[owner]->lane->wake.has_fd)
		lc->inbox_kick |= 1ull << owner;
	return true;
}

void dp_inbox_kick(struct dp_lcore *lc)
{
	/* one fence and one load per owner handed frames in this iteration; an
	 * eventfd write only for an owner that announced its sleep */
	while (lc->inbox_kick) {
		unsigned owner = (unsigned)__builtin_ctzll(lc->inbox_kick);
		lc->inbox_kick &= lc->inbox_kick - 1;
		if (fg_wake_kick(&dp_g.lc[owner]->lane->wake) > 0)
			dp_lc_xcount(lc, DP_X_INBOX_WAKES);
	}
}

static void io_report(struct dp_lcore *lc, const union fg_bmsg *m)
{
	dp_lane_send(lc, m);
}

static bool io_report_body(struct dp_lcore *lc, union fg_bmsg *m, struct fg_bm_body *body, const uint8_t *src,
			   uint32_t len)
{
	return dp_lane_send_body(lc, m, body, src, len);
}

/* io->sink: the lane's buffer; the slot it is for noted for
 * dp_deliver_seed. */
static void *io_sink(struct dp_lcore *lc, uint32_t slot, uint32_t body_len)
{
	lc->sink_slot = 0;
	void *dst = dp_lane_sink(lc, body_len);
	if (dst) {
		lc->sink_slot = slot + 1;
		lc->sink_resolved = lc->slots.resolved + 1;
	}
	return dst;
}

const struct dp_io dp_io_dpdk = {
	.dgram = dp_tx_dgram,
	.route = io_route,
	.xfer_get = io_xfer_get,
	.xfer_put = io_xfer_put,
	.handoff = io_handoff,
	.report = io_report,
	.report_body = io_report_body,
	.neigh_hint = io_neigh_hint,
	.frags = dp_tx_frags,
	.status_of = dp_tx_status_of,
	.ack_one = dp_tx_ack_one,
	.consumer_frags = dp_tx_consumer_frags,
	.report_reserve = dp_lane_reserve,
	.report_commit = dp_lane_commit_body,
	.sink = io_sink,
	.report_commit_sunk = dp_lane_commit_sunk,
	.kept_put = io_kept_put,
};

unsigned dp_inbox_poll(struct dp_lcore *lc, uint64_t now)
{
	void *in[DP_BURST];
	unsigned k = rte_ring_sc_dequeue_burst(lc->inbox, in, DP_BURST, NULL);
	for (unsigned i = 0; i < k; i++) {
		struct dp_xfer *x = in[i];
		if (x->len == DP_XFER_NEIGH) { /* an ARP/NDP answer another lcore received */
			dp_neigh_handed(lc, x);
			rte_mempool_put(dp_g.xfer, x);
			continue;
		}
		dp_shard_handed(lc, x, now);
	}
	return k;
}

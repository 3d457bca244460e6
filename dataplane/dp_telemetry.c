/* dp_telemetry.c - rte_telemetry commands for the dataplane's counters:
 *   /fanogate/counters            sums over every poll lcore
 *   /fanogate/lcore_counters,<i>  one lcore (shard i)
 *   /fanogate/pools               mbuf and frame-buffer pools: size, available,
 *                                 in use, and the mbufs the RX rings held at start
 * Read with dpdk-telemetry.py (the socket lives in the EAL runtime dir).
 *
 * The counter names are the registry's (fg/counters.h), as in /metrics and
 * `fanoctl stats`.
 *
 * Who may call: dp_telemetry_register from dp_init; the callbacks run on
 * the EAL telemetry thread and only read counters (relaxed atomic loads). */
#include <stdlib.h>

#include <rte_mempool.h>
#include <rte_telemetry.h>

#include "dp_internal.h"

static void add_counters(struct rte_tel_data *d, const uint64_t *c, const uint64_t *x, const uint64_t *o)
{
	/* every counter of the registry (fg/counters.h), by its name */
	for (unsigned i = 0; i < FG_C__COUNT; i++)
		rte_tel_data_add_dict_u64(d, fg_dp_counter_defs[i].name, c[i]);
	for (unsigned i = 0; i < DP_X__COUNT; i++)
		rte_tel_data_add_dict_u64(d, fg_dp_xcounter_defs[i].name, x[i]);
	char name[64];
	for (unsigned i = 0; i < FG_O__COUNT; i++) {
		fg_dp_outcome_key(i, name, sizeof(name));
		rte_tel_data_add_dict_u64(d, name, o[i]);
	}
}

static int cmd_counters(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dp_report r;
	dp_counters_sum(&r);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "lcores", r.lcores);
	add_counters(d, r.c, r.x, r.outcome);
	return 0;
}

static int cmd_lcore(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dp_state *g = &dp_g;
	if (!params || !*params)
		return -EINVAL;
	char *end;
	unsigned long i = strtoul(params, &end, 10);
	if (*end || i >= g->n || !g->b || !g->b->counters || !g->xk)
		return -EINVAL;
	uint64_t c[FG_C__COUNT], x[DP_X__COUNT], o[FG_O__COUNT];
	for (unsigned k = 0; k < FG_C__COUNT; k++)
		c[k] = atomic_load_explicit(&g->b->counters[i].c[k], memory_order_relaxed);
	for (unsigned k = 0; k < DP_X__COUNT; k++)
		x[k] = atomic_load_explicit(&g->xk[i].x[k], memory_order_relaxed);
	for (unsigned k = 0; k < FG_O__COUNT; k++)
		o[k] = atomic_load_explicit(&g->xk[i].outcome[k], memory_order_relaxed);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "lcore", i);
	add_counters(d, c, x, o);
	return 0;
}

/* In use = size - available (available counts the per-lcore caches too)
 * - the TX mbufs the lcores took ahead (mbuf_stashed, dp_tx.c). Once
 * traffic stops and reasm_timeout_ms has passed, every mbuf but those the
 * RX rings held at start, and every frame buffer, must be back. */
static int cmd_pools(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct dp_state *g = &dp_g;
	(void)cmd;
	(void)params;
	if (!g->mbufs || !g->xfer)
		return -EINVAL;
	unsigned stashed = 0;
	for (unsigned i = 0; i < g->n; i++)
		if (g->lc[i])
			stashed += __atomic_load_n(&g->lc[i]->n_stash, __ATOMIC_RELAXED);
	unsigned ma = rte_mempool_avail_count(g->mbufs), xa = rte_mempool_avail_count(g->xfer);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_u64(d, "mbuf_size", g->mbufs->size);
	rte_tel_data_add_dict_u64(d, "mbuf_avail", ma);
	rte_tel_data_add_dict_u64(d, "mbuf_stashed", stashed);
	rte_tel_data_add_dict_u64(d, "mbuf_in_use", g->mbufs->size - ma - RTE_MIN(stashed, g->mbufs->size - ma));
	rte_tel_data_add_dict_u64(d, "mbuf_in_use_at_start", g->mbufs_out_started);
	rte_tel_data_add_dict_u64(d, "xfer_size", g->xfer->size);
	rte_tel_data_add_dict_u64(d, "xfer_avail", xa);
	rte_tel_data_add_dict_u64(d, "xfer_in_use", g->xfer->size - xa);
	return 0;
}

int dp_telemetry_register(void)
{
	int rc = rte_telemetry_register_cmd("/fanogate/counters", cmd_counters,
					    "fanogate dataplane counters summed over the poll lcores. No parameters");
	if (rc == 0)
		rc = rte_telemetry_register_cmd("/fanogate/lcore_counters", cmd_lcore,
						"fanogate dataplane counters of one poll lcore. Parameter: lcore index");
	if (rc == 0)
		rc = rte_telemetry_register_cmd("/fanogate/pools", cmd_pools,
						"fanogate dataplane mbuf and frame-buffer pools: size, available, in use. No parameters");
	return rc;
}

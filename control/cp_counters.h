/* cp_counters.h - the one registry of the control plane's own counters
 * (and its few plain gauges), beside the dataplane's (fg/counters.h).
 *
 * Owns: the declaration of every plain control-plane figure, once: its
 * /metrics name (fanogate_<metric>), type and help, and where `fanoctl
 * stats` shows it (an object path, "engine_tls.lanes", and a key). Both
 * renderers iterate cp_counter_defs (cp_metrics_render, cp_op's stats),
 * so a counter added here is shown in both; tests/control/test_counters
 * checks that and that docs/metrics.md lists every one.
 *
 * Not here: the labelled families that enumerate a reason or an outcome
 * (their names come from those enums: admission, outcomes, malformed,
 * spin ends, canonical refusals, reloads), the per-line, per-peer and
 * per-lcore series, the audit's figures (cp_audit), the /metrics
 * server's own counters and the configuration gauges.
 *
 * Who may call: the loop thread (the values are the loop's plain fields,
 * read without locks). */
#ifndef CP_COUNTERS_H
#define CP_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cp_server;
struct cp_engine;
struct cp_loop;
struct fg_boundary;
struct cp_harden_stats;

/* What the values are read from; any pointer may be NULL (its counters
 * read 0). b: the boundary, for counters the lcores add to (lanes mode). */
struct cp_counter_src {
	const struct cp_server *srv;
	const struct cp_engine *engine;
	const struct cp_loop *loop;
	const struct fg_boundary *b;
	const struct cp_harden_stats *op_fds; /* the operator socket's refused fds (cp_harden.h) */
};

struct cp_counter_def {
	const char *metric;  /* fanogate_<metric> */
	const char *type;    /* "counter" or "gauge" */
	const char *section; /* the `fanoctl stats` object: "tls", "engine_tls", "engine_tls.lanes", ... */
	const char *key;     /* its key there */
	const char *help;
	bool ns;             /* the value is nanoseconds: /metrics shows seconds, stats the ns */
	uint64_t (*get)(const struct cp_counter_src *s);
};

extern const struct cp_counter_def cp_counter_defs[];
extern const unsigned cp_counter_count;

/* The value of d over s (0 when its source is absent). */
uint64_t cp_counter_value(const struct cp_counter_def *d, const struct cp_counter_src *s);

#endif

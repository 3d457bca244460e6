/* cp_status.h - the daemon's summary for an operator: the facts `fanoctl
 * status` prints (mode, profile, port, link and queues, hugepages, the
 * config file, the metrics address, the operator socket, TLS and its
 * certificate, the audit log and its head, the cluster, the lines) and the
 * warnings in force. The same warnings are on /metrics as
 * fanogate_warning{warning} (0 or 1, every one always present), so a rule
 * can page on what `fanoctl status` says.
 *
 * A warning is a condition that holds now (not an event): the daemon is
 * running in a way an operator would not choose, or that holds every line
 * in shadow. Events (a divergence, a demotion) are paged by the alert
 * command and counted; they are not warnings.
 *
 * Who may call: the loop thread (it reads the engine, the server, the
 * audit and the cluster state, all loop-owned). */
#ifndef CP_STATUS_H
#define CP_STATUS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "cp_engine.h"
#include "cp_server.h"
#include "fg/boundary.h"
#include "fg/config.h"

/* A certificate this close to its notAfter is a warning. */
#define CP_STATUS_CERT_WARN_S (14 * 86400)
/* Bytes of one warning's sentence (with its NUL). */
#define CP_STATUS_TEXT_MAX 400

/* Stable names (cp_warning_name): part of the operator interface (the
 * /metrics label and the "warning" key of `fanoctl status --json`); never
 * rename one, only append. */
enum cp_warning {
	CP_WARN_NO_AUTH,          /* "no_auth": no bearer tokens and no client CA: every request is refused */
	CP_WARN_AUDIT_OFF,        /* "audit_off": the shadow audit does not run */
	CP_WARN_AUDIT_FAILED,     /* "audit_failed": the audit log failed closed */
	CP_WARN_EPOCH_STORM,      /* "epoch_storm": an epoch storm holds every line in shadow */
	CP_WARN_ETCD_LOST,        /* "etcd_lost": [cluster] without etcd: lines held in shadow */
	CP_WARN_CERT_EXPIRING,    /* "cert_expiring": the TLS certificate ends within 14 days */
	CP_WARN_CERT_EXPIRED,     /* "cert_expired": ... or has ended */
	CP_WARN_NO_HUGEPAGES,     /* "no_hugepages": the dataplane runs with --no-huge */
	CP_WARN_LINK_DOWN,        /* "link_down": the dataplane's port has no link */
	CP_WARN_NO_ALERT_COMMAND, /* "no_alert_command": [audit] alert_command is empty: nobody is paged */
	CP_WARN_POINTS_DOWN,      /* "points_down": a Fano point has no live peer: its lines are degraded */
	CP_WARN_RELOAD_REFUSED,   /* "reload_refused": the last reload was refused: the file is not what runs */
	CP_WARN__COUNT
};
const char *cp_warning_name(enum cp_warning w);

struct cp_cluster;
struct cp_reload_stats;

/* What the summary reads. All pointers are borrowed and loop-owned. */
struct cp_status_src {
	const struct fg_config *cfg;
	const char *config_path;   /* the --config file; NULL: the embedded default */
	const struct cp_engine *engine;
	const struct cp_server *srv;
	const struct fg_boundary *b; /* NULL: no dataplane (local mode) */
	uint16_t metrics_port;     /* the bound /metrics port; 0: off */
	uint64_t started_ns;       /* CLOCK_MONOTONIC of the start (uptime) */
	const struct cp_reload_stats *reload; /* the config reload's counters; NULL: none */
	const struct cp_cluster *cluster; /* [cluster] (control/cluster/cp_cluster.h); NULL: off */
};

/* The TLS certificate's notAfter as Unix seconds in *out. Returns 0, or
 * -ENOENT when the server has no certificate loaded, -EINVAL when its time
 * cannot be read. */
FG_MUST_CHECK int cp_status_cert_not_after(const struct cp_server *srv, int64_t *out);

/* The live state of the dataplane's link: "up", "down" (the kernel
 * interface's operstate when there is one, else the state at start), or
 * "unknown" without a dataplane. */
const char *cp_status_link(const struct fg_boundary *b);

/* Which warnings hold now: bit w for enum cp_warning w. With text: each
 * warning's sentence for a person (with its figures) in text[w]. */
uint32_t cp_status_warnings(const struct cp_status_src *s, char (*text)[CP_STATUS_TEXT_MAX]);

/* The reply of `fanoctl status` (docs/operator-protocol.md): a new object,
 * NULL without memory. */
json_t *cp_status_json(const struct cp_status_src *s);

#endif

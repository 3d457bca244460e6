/* cp_reload.h - configuration reload (`fanoctl config reload`, SIGHUP).
 *
 * Owns: re-reading the file the daemon was started with, validating the
 * whole file (fg_config_load: a bad value refuses the reload with
 * file:line: reason), comparing it key by key with the configuration in
 * force, and applying the keys that can change live, all at once, from the
 * loop thread (no other thread reads them, so the change is atomic for every
 * reader):
 *   [lines]  auto_promote (every line's flag is set to it), promote_count,
 *            promote_ms
 *   [tls]    ws_max_message, handshake_timeout_ms, idle_timeout_ms,
 *            send_queue_max (connections accepted later, and new deadlines),
 *            max_connections (may only grow: the connection table is
 *            grown; lowering it needs a restart)
 * Any other key that differs refuses the reload as a whole with the list of
 * keys that need a restart (the dataplane, the audit and the TLS context
 * keep copies of them: [udp] allow, [lines] shadow_sample,
 * [audit] alert_command, certificates, ...). Nothing is applied from a
 * refused reload.
 *
 * Audit: every reload that changes something or is refused is recorded by
 * the shadow audit BEFORE it is applied, as one line record
 * per line (from == to, origin "config reload", why = who and the keys), so
 * the log says who changed the policy every line runs under; the operator
 * reply waits until the records are durable (cp_audit_is_durable). Every
 * result is also logged.
 *
 * Who may call: the loop thread only. */
#ifndef CP_RELOAD_H
#define CP_RELOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cp_engine.h"
#include "cp_loop.h"
#include "cp_server.h"
#include "fg/config.h"

struct cp_reload_stats {
	uint64_t applied, unchanged, refused;
	bool last_refused;
};

/* One daemon's reload: what it re-reads, what it applies to, its SIGHUP
 * signalfd and its counters. Caller-owned storage (struct daemon); written
 * by cp_reload_start, read by the operator socket and /metrics (st). */
struct cp_reload {
	struct cp_loop *loop;
	const char *path, *dp_profile;
	struct fg_config *live;
	struct cp_engine *e;
	struct cp_server *srv;
	int sigfd;
	struct cp_poll sigpoll;
	bool started;
	struct cp_reload_stats st;
};

#define CP_RELOAD_CHANGES_MAX 16u
#define CP_RELOAD_CHANGE_LEN 96u

struct cp_reload_result {
	int status;            /* 1 applied, 0 nothing changed, <0 refused */
	const char *error;     /* refused: stable reason "config_invalid", "needs_restart", "no_config_file",
				* "audit_failed", "audit_busy", "no_memory" */
	char detail[512];      /* refused: "file:line: reason", or the keys that need a restart */
	unsigned n_changes;    /* applied: "[section] key: old -> new" */
	char changes[CP_RELOAD_CHANGES_MAX][CP_RELOAD_CHANGE_LEN];
	uint64_t seq;          /* last audit record written, CP_AUDIT_NO_SEQ when none */
};

/* Fill *g with what a reload needs and watch SIGHUP (the caller has blocked it
 * in every thread before any thread started: the signal is read from a
 * signalfd polled by the loop). path: the --config file, NULL when the
 * daemon runs on the embedded default (a reload is then refused);
 * dp_profile: the --dp-profile override, NULL when none. live is the
 * configuration every module points at; the engine and server are the ones
 * running on it. Returns 0 or -errno with a reason. */
FG_MUST_CHECK int cp_reload_start(struct cp_reload *g, struct cp_loop *l, const char *path, const char *dp_profile,
				  struct fg_config *live, struct cp_engine *e, struct cp_server *srv, char *why,
				  size_t why_len);
/* Stop watching SIGHUP. */
void cp_reload_stop(struct cp_reload *g);

/* Reload g's file now on behalf of uid/pid (origin: "fanoctl", "SIGHUP").
 * A g not started (or on the embedded default) refuses: no_config_file. Fills *res;
 * returns res->status. */
int cp_reload_run(struct cp_reload *g, uint32_t uid, int32_t pid, const char *origin, struct cp_reload_result *res);

/* Compare two configurations key by key (key-table order). Returns the
 * number of keys that differ; *live_only is true when every one of them can
 * change live. out gets, comma separated as "[section] key", the keys that
 * need a restart, or, when there are none, the keys that differ. Pure; for
 * tests. */
unsigned cp_reload_diff(const struct fg_config *a, const struct fg_config *b, char *out, size_t out_len,
			bool *live_only);

#endif

/* cp_op.h - the operator socket (fanoctl's daemon side).
 *
 * Owns: the AF_UNIX stream socket at [operator] socket, its permissions
 * (mode 0660 with [operator] group, else 0600; parent directory created
 * 0750), the SO_PEERCRED check (root, the daemon's own uid, or a member of
 * the operator group), and the commands of the protocol fanoctl speaks
 * (tools/fanoctl_op.c): one JSON object + '\n' per connection, one JSON reply
 * + '\n', then close. The request's parsing and argument checks are the pure
 * control/proto/cp_op_parse.c (fuzzed: fuzz/fuzz_op_parse.c).
 *   status | lines | line {line, op: enable|disable|shadow|active|auto_promote,
 *   on, why} | slots | slot {layer, token_seq} | peers | stats | reload
 * A line change is answered only once its audit record is durable.
 *
 * Who may call: the loop thread only. */
#ifndef CP_OP_H
#define CP_OP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "cp_engine.h"
#include "cp_harden.h"
#include "cp_loop.h"
#include "cp_op_parse.h"
#include "cp_server.h"
#include "cp_small_srv.h"
#include "fg/boundary.h"
#include "fg/config.h"

#define CP_OP_CONNS_MAX 16u
/* CP_OP_REQ_MAX (bytes of a request with its '\n') is the parser's. */


struct cp_cluster;
struct cp_reload;

struct cp_opsrv {
	struct cp_loop *loop;
	const struct fg_config *cfg;
	struct cp_engine *engine;
	struct cp_server *srv;
	const struct fg_boundary *b; /* NULL in local mode */
	struct cp_small_srv ls;      /* the listening socket, its connections, housekeeping */
	bool stopping;               /* cp_op_stop was called (main.c reads it) */
	bool have_group;
	gid_t group;
	uint64_t started_ns;
	uint64_t served, refused;
	struct cp_harden_stats fd_st; /* requests refused for carrying fds (cp_harden_recv_check) */
	/* For `fanoctl status`, set by the daemon once they are known (after
	 * cp_op_start): the --config file (NULL: the embedded default) and the
	 * bound /metrics port (0: off). */
	const char *config_path;
	uint16_t metrics_port;
	/* The daemon's configuration reload (`fanoctl config reload`, the
	 * reload warning), set with the two above; NULL: no reload. */
	struct cp_reload *reload;
	/* [cluster] (control/cluster/cp_cluster.h) for `fanoctl cluster` and
	 * `fanoctl status`, set by the daemon once it runs; NULL: off. */
	const struct cp_cluster *cluster;
};

/* Bind and listen (unlinking a stale socket first: call it holding the
 * socket's lock, cp_claim_take); start accepting. Returns 0 or -errno with
 * a reason. */
FG_MUST_CHECK int cp_op_start(struct cp_opsrv *o, struct cp_loop *l, const struct fg_config *cfg,
			      struct cp_engine *e, struct cp_server *srv, const struct fg_boundary *b, char *why,
			      size_t why_len);
/* Stop accepting, close the socket and unlink its path. */
void cp_op_stop(struct cp_opsrv *o);

/* The "dataplane" object of `fanoctl stats`: every counter of the registry
 * (fg/counters.h) summed over b's lanes, keyed by its name, and the
 * outcome counts as "outcome_<name>". Returns a new object (NULL without
 * memory); b->counters must be set. Loop thread (relaxed loads). */
json_t *cp_op_dp_stats(const struct fg_boundary *b);

/* The reply of `fanoctl stats` (without the dataplane object when o->b has
 * no counters, without "audit" when o->srv has no audit): every entry of
 * the control plane's registry (cp_counters.h) under its section and key,
 * the labelled families, the dataplane's and the audit's figures. Returns
 * a new object (NULL without memory). Loop thread. */
json_t *cp_op_stats(const struct cp_opsrv *o);

#endif

/* cp_hooks.h - the control plane's hand-off points to the shadow audit.
 *
 * Owns: the seam between the slot engine and the shadow audit (helper F's
 * control/audit/cp_shadow.h). When the daemon is built with the audit
 * (FG_HAVE_AUDIT) these calls forward every resolved seed, canonical report,
 * conflict and authentication failure to cp_shadow, poll the audit log's and
 * alert runner's fds from the loop (cp_poll) and tick it every 100 ms; line
 * changes the audit makes are logged and republished to the dataplane.
 * Without it they only count, and conflicts demote the line through the
 * engine itself. Keeping the seam in one place means the engine does not
 * change when the audit changes.
 *
 * Who may call: the loop thread only. Pointers are valid during the call. */
#ifndef CP_HOOKS_H
#define CP_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cp_loop.h"
#include "fg/config.h"
#include "fg/line.h"
#include "fg/slot.h"
#include "fg/wire.h"

struct cp_engine;

struct cp_hook_stats {
	uint64_t resolved, canonical, conflict, auth_failures, refused, epoch_changes;
};
extern struct cp_hook_stats cp_hook_stats;

/* Open the shadow audit (its log under [audit] path) and start polling its
 * fds. Returns 0 or -errno with a one-line reason. A no-op without the audit. */
FG_MUST_CHECK int cp_hooks_start(struct cp_loop *l, const struct fg_config *cfg, struct cp_engine *e, char *why,
				 size_t why_len);
/* Drain and close the audit (bounded). */
void cp_hooks_stop(void);
/* Whether a shadow audit is running (it then owns conflict demotions). */
bool cp_hooks_have_audit(void);
/* The running shadow audit (control/audit/cp_shadow.h), NULL without one:
 * the metrics read its head hash and counters through it, a config reload
 * audits through it. */
struct cp_shadow;
struct cp_shadow *cp_hooks_shadow(void);

/* An operator line command (FG_LEV_OP_*): applied and audited through the
 * shadow audit when it runs (then *seq is the record to wait for before
 * answering, CP_HOOK_NO_SEQ when nothing needs waiting), else applied by the
 * engine. Returns what fg_line_apply returns (1 changed, 0 unchanged,
 * -EALREADY/-EINVAL), or -EIO/-ENOBUFS when the audit refuses (not applied). */
#define CP_HOOK_NO_SEQ UINT64_MAX
FG_MUST_CHECK int cp_hooks_line_op(struct cp_engine *e, unsigned line, enum fg_line_event ev, uint32_t uid,
				   int32_t pid, const char *why, uint64_t *seq);
/* Whether the audit record seq is durable (true without an audit). */
bool cp_hooks_is_durable(uint64_t seq);
/* Called with the highest durable sequence number as records become durable. */
void cp_hooks_on_durable(void (*fn)(void *arg, uint64_t seq), void *arg);

void cp_hook_shadow_resolved(struct cp_engine *e, const struct fg_seed_view *v);
void cp_hook_shadow_canonical(struct cp_engine *e, const struct fg_canon *c);
void cp_hook_shadow_conflict(struct cp_engine *e, uint16_t layer, uint32_t token_seq, unsigned line);
void cp_hook_auth_failure(const char *peer, const char *reason);
/* Mark Fano point p (1..7) down or up (fg_lines_point): the lines through
 * it degrade or come back; each change is logged, audited as a line change
 * (origin "peers") and the facts republished. who: the peer that caused it. */
void cp_hooks_point(struct cp_engine *e, unsigned p, bool down, const char *who);
/* The model epoch moved from -> to (the engine already published it):
 * recorded in the audit log (cp_shadow_on_epoch_change). */
void cp_hook_epoch_change(struct cp_engine *e, uint32_t from, uint32_t to, const char *why);

#endif

/* cp_counters.c - the control plane's counter registry (see cp_counters.h).
 * A constant table; its getters read the loop's plain fields. */
#include "cp_counters.h"

#include <stdatomic.h>

#include "cp_engine.h"
#include "cp_harden.h"
#include "cp_loop.h"
#include "cp_server.h"
#include "fg/boundary.h"

#define SRV(f)                                                                                                 \
	static uint64_t srv_##f(const struct cp_counter_src *s) { return s->srv ? s->srv->st.f : 0; }
#define ENG(f)                                                                                                 \
	static uint64_t eng_##f(const struct cp_counter_src *s) { return s->engine ? s->engine->st.f : 0; }
#define LOOP(f)                                                                                                \
	static uint64_t loop_##f(const struct cp_counter_src *s) { return s->loop ? s->loop->st.f : 0; }

SRV(accepted) SRV(closed) SRV(refused_max) SRV(tls_failed) SRV(handshake_timeouts) SRV(idle_timeouts)
SRV(body_timeouts) SRV(ws_message_timeouts) SRV(http_requests) SRV(http_errors) SRV(auth_failures) SRV(ws_sessions) SRV(ws_msgs_in)
SRV(ws_frames_in) SRV(ws_msgs_out) SRV(slow_consumer_drops) SRV(seeds_pushed)
ENG(frames) ENG(resolved) ENG(expired) ENG(poisoned) ENG(canonical) ENG(conflicts_unmapped) ENG(epoch_held_rate)
ENG(epoch_storms) ENG(epoch_changes) ENG(lane_full) ENG(pool_empty) ENG(req_table_full) ENG(too_big)
ENG(bad_lane_msgs) ENG(resolved_no_body) ENG(canon_no_body) ENG(seeds_unkept) ENG(outcomes_unmatched)
ENG(outcomes_lost) ENG(flush_sent) ENG(wakes) ENG(wake_yields) ENG(wake_rechecks) ENG(wake_errors) ENG(spins)
ENG(spin_hits) ENG(spin_ns) ENG(lcore_wakes) ENG(lcore_wake_errors)
LOOP(cqes) LOOP(submits) LOOP(batches) LOOP(sqe_full)

static uint64_t srv_conns(const struct cp_counter_src *s) { return s->srv ? s->srv->n_conns : 0; }
static uint64_t srv_unauth(const struct cp_counter_src *s) { return s->srv ? s->srv->admit.n_unauth : 0; }
static uint64_t seccomp_refused(const struct cp_counter_src *s)
{
	(void)s;
	return atomic_load(&cp_harden_sys_refused);
}
static uint64_t op_fd_requests_refused(const struct cp_counter_src *s)
{
	return s->op_fds ? s->op_fds->fd_requests_refused : 0;
}
static uint64_t op_fds_closed(const struct cp_counter_src *s)
{
	return s->op_fds ? s->op_fds->fds_closed : 0;
}
/* Open slots freed by epoch changes: the local table's, or every lcore's. */
static uint64_t slots_flushed(const struct cp_counter_src *s)
{
	const struct cp_engine *e = s->engine;
	if (!e)
		return 0;
	uint64_t n = e->st.slots_flushed;
	const struct fg_boundary *b = s->b;
	if (e->lanes_mode && b && b->counters)
		for (unsigned i = 0; i < b->n_lanes; i++)
			n += atomic_load_explicit(&b->counters[i].c[FG_C_SLOTS_FLUSHED], memory_order_relaxed);
	return n;
}

#define C(metric, section, key, get, help) {metric, "counter", section, key, help, false, get}
#define G(metric, section, key, get, help) {metric, "gauge", section, key, help, false, get}
#define LANES "engine_tls.lanes"

const struct cp_counter_def cp_counter_defs[] = {
	/* the TLS server (`fanoctl stats` "tls") */
	G("tls_connections", "tls", "connections", srv_conns, "open TLS connections"),
	G("tls_unauthenticated_connections", "tls", "unauthenticated", srv_unauth,
	  "open TLS connections not (yet) authenticated"),
	C("tls_accepted_total", "tls", "accepted", srv_accepted, "TLS connections accepted"),
	C("tls_closed_total", "tls", "closed", srv_closed, "TLS connections closed"),
	C("tls_refused_max_total", "tls", "refused_max", srv_refused_max, "connections refused over max_connections"),
	C("tls_handshake_failures_total", "tls", "tls_failed", srv_tls_failed, "TLS handshakes refused"),
	C("tls_head_timeouts_total", "tls", "handshake_timeouts", srv_handshake_timeouts,
	  "handshake or request head not complete in time"),
	C("tls_idle_timeouts_total", "tls", "idle_timeouts", srv_idle_timeouts, "connections closed idle"),
	C("tls_body_timeouts_total", "tls", "body_timeouts", srv_body_timeouts,
	  "request bodies slower than [tls] body_min_rate (answered 408)"),
	C("tls_ws_message_timeouts_total", "tls", "ws_message_timeouts", srv_ws_message_timeouts,
	  "WebSocket messages slower than [tls] body_min_rate (closed 1008)"),
	C("http_requests_total", "tls", "http_requests", srv_http_requests, "HTTP requests routed"),
	C("http_errors_total", "tls", "http_errors", srv_http_errors, "HTTP answers with status >= 400"),
	C("auth_failures_total", "tls", "auth_failures", srv_auth_failures, "authentication refusals"),
	C("ws_sessions_total", "tls", "ws_sessions", srv_ws_sessions, "WebSocket /flow sessions opened"),
	C("ws_messages_in_total", "tls", "ws_msgs_in", srv_ws_msgs_in, "WebSocket data messages received"),
	C("ws_frames_in_total", "tls", "ws_frames_in", srv_ws_frames_in, "aeon frames received in WebSocket messages"),
	C("ws_messages_out_total", "tls", "ws_msgs_out", srv_ws_msgs_out, "WebSocket messages sent (statuses and seeds)"),
	C("ws_slow_consumer_drops_total", "tls", "slow_consumer_drops", srv_slow_consumer_drops,
	  "sessions dropped with 1008 over send_queue_max"),
	C("seeds_pushed_total", "tls", "seeds_pushed", srv_seeds_pushed, "resolved seeds pushed to subscribers"),
	/* the slot engine behind TLS ("engine_tls") */
	C("tls_frames_total", "engine_tls", "frames", eng_frames, "frames received over TLS (WebSocket and POST)"),
	C("seeds_resolved_total", "engine_tls", "resolved", eng_resolved, "slots resolved (seen by the control plane)"),
	C("slots_expired_total", "engine_tls", "expired", eng_expired, "slots expired"),
	C("slots_poisoned_total", "engine_tls", "poisoned", eng_poisoned, "slots poisoned by a conflict"),
	C("slots_flushed_total", "engine_tls", "slots_flushed", slots_flushed,
	  "open slots freed by a model epoch change (not expired: the key reopens)"),
	C("canonical_total", "engine_tls", "canonical", eng_canonical, "canonical reports received over TLS"),
	C("conflicts_unmapped_total", "engine_tls", "conflicts_unmapped", eng_conflicts_unmapped,
	  "conflicting duplicates that moved nothing: sender not mapped to the line's points"),
	C("epoch_held_total", "engine_tls", "epoch_held", eng_epoch_held_rate,
	  "conflicts that did not advance the model epoch: [shadow] epoch_min_interval_ms"),
	C("epoch_storms_total", "engine_tls", "epoch_storms", eng_epoch_storms,
	  "epoch storms (alerted once each, lines held in shadow)"),
	C("model_epoch_changes_total", "engine_tls", "epoch_changes", eng_epoch_changes,
	  "model epoch advances the engine applied (a conflict here, the audit or the cluster)"),
	C("seeds_unkept_total", "engine_tls", "seeds_unkept", eng_seeds_unkept,
	  "resolved seeds the control plane could not keep for TLS consumers (memory)"),
	C("lane_full_total", "engine_tls", "lane_full", eng_lane_full,
	  "frames refused: the lane to the lcore was full (dataplane mode)"),
	C("lane_pool_empty_total", "engine_tls", "pool_empty", eng_pool_empty,
	  "frames refused: no lane buffer free (dataplane mode)"),
	C("lane_request_table_full_total", "engine_tls", "request_table_full", eng_req_table_full,
	  "frames refused: 4096 requests already awaited their lcore's outcome (dataplane mode)"),
	C("lane_frames_too_big_total", "engine_tls", "too_big", eng_too_big,
	  "frames refused: larger than a lane buffer (dataplane mode)"),
	C("lane_bad_messages_total", "engine_tls", "bad_lane_messages", eng_bad_lane_msgs,
	  "lane messages naming a buffer outside their pool, dropped (a bug if ever non-zero)"),
	C("lane_seeds_without_body_total", "engine_tls", "seeds_without_body", eng_resolved_no_body,
	  "resolved seeds that crossed without their body (lcore's pool empty): audited by fingerprint, not kept"),
	C("lane_canonical_without_body_total", "engine_tls", "canonical_without_body", eng_canon_no_body,
	  "full canonical reports that crossed without their body (lcore's pool empty): audited by fingerprint"),
	C("lane_outcomes_unmatched_total", "engine_tls", "outcomes_unmatched", eng_outcomes_unmatched,
	  "outcomes from an lcore that matched no request"),
	C("lane_requests_timed_out_total", "engine_tls", "requests_timed_out", eng_outcomes_lost,
	  "TLS requests answered no_slot because their lcore's outcome did not come within 2 s"),
	/* the lanes' wake-ups and answer polls ("engine_tls" "lanes") */
	C("lane_flushes_sent_total", LANES, "flushes_sent", eng_flush_sent,
	  "flush messages pushed to the lcores (one per lcore per model epoch change)"),
	C("lane_wakeups_total", LANES, "wakeups", eng_wakes, "eventfd wake-ups from the lcores (dataplane mode)"),
	C("lane_wakeup_yields_total", LANES, "wakeup_yields", eng_wake_yields,
	  "drains cut by their budget and continued after the loop's other work"),
	C("lane_wakeup_rechecks_total", LANES, "wakeup_rechecks", eng_wake_rechecks,
	  "drains run again: a message came between the last pop and the sleep announcement"),
	C("lane_wakeup_errors_total", LANES, "wakeup_errors", eng_wake_errors,
	  "failed eventfd reads (never expected; the first is logged)"),
	C("lane_lcore_wakeups_total", LANES, "lcore_wakeups", eng_lcore_wakes,
	  "eventfd writes waking an lcore asleep in its idle wait ([poll] idle_wake) after a push to its lane"),
	C("lane_lcore_wakeup_errors_total", LANES, "lcore_wakeup_errors", eng_lcore_wake_errors,
	  "failed eventfd writes to an lcore (never expected: a closed fd)"),
	C("lane_answer_spins_total", LANES, "answer_spins", eng_spins,
	  "times the control plane polled the lanes for an owed answer instead of sleeping ([dataplane] answer_spin_us)"),
	C("lane_answer_spin_hits_total", LANES, "answer_spin_hits", eng_spin_hits,
	  "... polls that found a message before the budget ran out"),
	{"lane_answer_spin_seconds_total", "counter", LANES, "answer_spin_ns",
	 "time the control plane spent waiting in those polls (not the answering it did meanwhile)", true,
	 eng_spin_ns},
	/* the io_uring loop ("loop") */
	C("loop_completions_total", "loop", "completions", loop_cqes, "io_uring completions reaped by the control-plane loop"),
	C("loop_submits_total", "loop", "submits", loop_submits, "io_uring_submit calls of the control-plane loop"),
	C("loop_batches_total", "loop", "batches", loop_batches, "batches of completions the loop handled"),
	C("loop_sqe_full_total", "loop", "sqe_full", loop_sqe_full,
	  "submission queue found full: the batch so far was submitted early to make room"),
	/* confinement (cp_harden) */
	C("seccomp_refused_total", "seccomp", "refused", seccomp_refused,
	  "system calls the seccomp allow-list refused with EPERM ([daemon] seccomp = on)"),
	C("operator_fd_requests_refused_total", "operator", "fd_requests_refused", op_fd_requests_refused,
	  "operator requests that carried file descriptors (refused)"),
	C("operator_fds_closed_total", "operator", "fds_closed", op_fds_closed,
	  "file descriptors passed on the operator socket and closed unread"),
};

const unsigned cp_counter_count = sizeof(cp_counter_defs) / sizeof(cp_counter_defs[0]);

uint64_t cp_counter_value(const struct cp_counter_def *d, const struct cp_counter_src *s)
{
	return d->get(s);
}

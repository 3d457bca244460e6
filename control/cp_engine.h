/* cp_engine.h - the control plane's slot backend.
 *
 * Owns: where a frame received over TLS (WebSocket or HTTPS) goes and how its
 * outcome comes back, in one of two modes:
 *   - local (--no-dataplane): one fg_slots table owned by the loop thread;
 *     frames are ingested synchronously (fg_ingest_frame) and open slots
 *     expire on a timer;
 *   - lanes (dataplane running): each frame is copied into a cp2dp buffer and
 *     sent to the lcore that owns its shard (fg_shard_of) as FG_BM_CONTRIB with a
 *     req_id; the lcores wake the loop through the boundary's eventfd when a
 *     dp->cp ring goes from empty to non-empty (boundary.h, struct fg_wake),
 *     and the engine, woken by that io_uring read, drains every dp->cp ring:
 *     OUTCOME messages complete the request with the same req_id; RESOLVED,
 *     CANONICAL, CONFLICT and EXPIRED messages become events. No timer is
 *     on that path: the 1 ms tick is housekeeping (FLUSH retries, the
 *     lost-OUTCOME sweep, point liveness). Canonical reports received over TLS go to the shadow
 *     audit at submit (the lcore only reports the canonical frames it
 *     received over UDP).
 * Model epoch: a conflict outcome (either mode) advances the one global
 * epoch, flushes every shard's open slots (local table / FG_BM_FLUSH to
 * every lane) and records the change in the audit log.
 * Also owns the line table (struct fg_lines) of the loop thread, published as
 * fg_linefacts to the boundary after every change, and a small direct-mapped
 * cache of recent slot endings (resolved-seed frames, expiries, poisonings)
 * that serves GET /residual-seed in both modes.
 *
 * Events go to the cp_engine_ops the server registers (resolved seeds to
 * subscribed WebSocket sessions and pending GETs) and to the
 * cp_engine_audit_ops the shadow audit registers (control/cp_audit.h).
 *
 * Who may call: the loop thread only. */
#ifndef CP_ENGINE_H
#define CP_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cp_epoch_guard.h"
#include "cp_loop.h"
#include "cp_points.h"
#include "fg/boundary.h"
#include "fg/common.h"
#include "fg/config.h"
#include "fg/ingest.h"
#include "fg/lat_hist.h"
#include "fg/line.h"
#include "fg/shadow.h"
#include "fg/slot.h"
#include "fg/wire.h"

/* What a submitted frame came to. */
struct cp_engine_result {
	enum fg_band band;
	int reason;              /* fg_reason when malformed, else 0 */
	struct fg_status status; /* the status to answer with */
};

struct cp_engine_ops {
	/* The outcome of cp_engine_submit(cookie). Local mode: called before
	 * submit returns. Lanes mode: called when the lcores wake the loop. */
	void (*done)(void *arg, uint64_t cookie, const struct cp_engine_result *r);
	/* A slot resolved: frame is the resolved-seed frame (wire.md 3.3) in
	 * the engine's endings cache, valid during the call (copy it to keep it). */
	void (*resolved)(void *arg, uint16_t layer, uint32_t token_seq, const uint8_t *frame, size_t len);
	/* A slot ended without a seed: expired, or poisoned by a conflict. */
	void (*ended)(void *arg, uint16_t layer, uint32_t token_seq, enum fg_slot_state st);
};

/* What the shadow audit judges, emitted by the engine (either mode). The
 * daemon always registers one (cp_audit_start); an engine without one (unit
 * harnesses) records no verdicts and demotes no line on a conflict.
 * Pointers are valid during the call. */
struct cp_engine_audit_ops {
	/* A slot resolved: v has the seed's body; t when it resolved and was
	 * delivered, and the resolving contribution's ingress (the lead). */
	void (*resolved)(void *arg, const struct fg_seed_view *v, uint32_t epoch, const struct fg_seed_times *t);
	/* A canonical report arrived at arrived_ns (CLOCK_MONOTONIC; digest
	 * filled in for full reports) from source class src (its sender's
	 * address: fg_shadow_sender_class, a class of its own for each of the
	 * first 63 senders; 0 when the sender is not known). */
	void (*canonical)(void *arg, const struct fg_canon *c, uint32_t epoch, uint64_t arrived_ns, unsigned src);
	/* A conflicting duplicate poisoned a slot: the audit records it and
	 * demotes the line. */
	void (*conflict)(void *arg, uint16_t layer, uint32_t token_seq, unsigned line, uint32_t epoch);
	/* The same with its sender named ("udp 10.0.0.2:4000", "tls"): called
	 * instead of conflict when set. Only attributed senders get here
	 * (cp_epoch_guard.h rule 2); unmapped ones are counted, not audited. */
	void (*conflict_from)(void *arg, uint16_t layer, uint32_t token_seq, unsigned line, uint32_t epoch,
			      const char *src);
	/* An attributed conflict did not move the epoch: a storm (cp_epoch_guard.h
	 * rule 3). began: the first of this storm (alert once, hold the lines in
	 * shadow); every call extends the hold by hold_ns from now. Optional. */
	void (*epoch_storm)(void *arg, bool began, const char *why, uint64_t hold_ns);
	/* The model epoch moved from -> to (already published and flushed). */
	void (*epoch_changed)(void *arg, uint32_t from, uint32_t to, const char *why);
	/* The line table changed outside the audit (a Fano point went down or
	 * up, cp_engine_point_*): recorded as a line change from origin. */
	void (*line_changed)(void *arg, const struct fg_line_change *chg, const char *origin);
};

/* One entry of the ending cache. */
struct cp_ending {
	uint32_t token_seq;
	uint16_t layer;
	uint8_t state;   /* FG_SLOT_RESOLVED / EXPIRED / POISONED; FREE = empty */
	uint32_t len;
	uint8_t *frame;  /* resolved-seed frame when RESOLVED */
	uint32_t cap;
};

/* A UDP source the dataplane reported (FG_BM_PEER, at most once a second
 * per source). */
#define CP_PEERS_MAX 256u
struct cp_peer {
	uint8_t addr[16];
	uint8_t family; /* 4 or 6 */
	uint16_t port;
	uint64_t first_ns, last_ns, reports;
};

struct cp_engine_req {
	uint32_t req_id; /* 0 = free */
	uint64_t cookie;
	uint64_t t_ns;   /* sent */
	bool canonical;  /* a canonical report: its OUTCOME is no slot outcome (as in local mode) */
};
/* A lanes request whose OUTCOME has not come back after this long (the
 * dp->cp ring was full and the lcore dropped it) is answered "no_slot". */
#define CP_ENGINE_REQ_TIMEOUT_NS (2ull * 1000 * 1000 * 1000)

/* Who a resolved seed is delivered to. */
enum cp_consumer {
	CP_CONSUMER_UDP, /* lanes: the lcore sent it to the layer's UDP consumer ([consumers]) */
	CP_CONSUMER_TLS, /* handed to the TLS side: WebSocket subscribers, waiting GETs, the pull cache */
	CP_CONSUMER__COUNT
};
/* "udp", "tls"; "?" for anything else. Static storage. */
const char *cp_engine_consumer_name(enum cp_consumer c);
/* "udp", "tls" (enum fg_ingress); "?" for anything else. Static storage. */
const char *cp_engine_ingress_name(unsigned ingress);

/* Where a TLS contribution's time goes inside the engine. */
enum cp_hop {
	CP_HOP_ANSWER,   /* submit -> its outcome handed to ops.done: the placement itself (local) or
			  * the round trip through the lane and the lcore (lanes) */
	CP_HOP_TO_LCORE, /* lanes: CONTRIB pushed -> the lcore took it */
	CP_HOP_BACK,     /* lanes: the lcore took it -> its OUTCOME taken here */
	CP_HOP_SEED,     /* lanes: an lcore resolved a seed -> its RESOLVED taken here */
	CP_HOP__COUNT
};
const char *cp_engine_hop_name(enum cp_hop h);

/* Why an answer spin ended (cp_engine_spin). */
enum cp_spin_end {
	CP_SPIN_ANSWERED, /* every owed answer came in */
	CP_SPIN_INPUT,    /* a completion was ready: the loop went on */
	CP_SPIN_BUDGET,   /* [dataplane] answer_spin_us ran out */
	CP_SPIN__COUNT
};
const char *cp_engine_spin_end_name(enum cp_spin_end r);

struct cp_engine_stats {
	uint64_t frames, resolved, expired, poisoned, canonical, malformed;
	uint64_t lane_full, pool_empty, req_table_full, too_big, outcomes_unmatched, bad_lane_msgs, peers_dropped;
	uint64_t outcomes_lost; /* requests answered no_slot after CP_ENGINE_REQ_TIMEOUT_NS */
	uint64_t epoch_changes, slots_flushed, flush_sent;
	/* lanes wake-ups: eventfd reads completed, drains cut by the budget
	 * (continued after a NOP), re-drains because a message came between
	 * the last pop and the sleep announcement, failed reads */
	uint64_t wakes, wake_yields, wake_rechecks, wake_errors;
	/* eventfd writes waking an lcore asleep in its idle wait ([poll]
	 * idle_wake) after a push to its to_dp ring; failed writes */
	uint64_t lcore_wakes, lcore_wake_errors;
	/* polls for an owed answer (cp_engine_spin), and those that found one */
	uint64_t spins, spin_hits, spin_ns; /* spin_ns: time spent waiting in them (not answering) */
	uint64_t spin_end[CP_SPIN__COUNT];
	uint64_t seeds_unkept; /* resolved seeds the endings cache could not keep (memory, unencodable) */
	/* RESOLVED / FULL CANONICAL that came without their body (the lcore's
	 * dp2cp pool was empty, boundary.h): audited by fingerprint, no frame */
	uint64_t resolved_no_body, canon_no_body;
	/* cp_epoch_guard.h: UDP canonical reports from a source
	 * outside [shadow] canonical_sources (not audited); conflicts that did not
	 * move the epoch because their sender is not attributed to the line, or
	 * because of the rate limit (a storm); storms begun */
	uint64_t canon_refused_source, conflicts_unmapped, epoch_held_rate, epoch_storms;
	uint64_t reason[FG_R__COUNT];
	uint64_t outcome[FG_O__COUNT];
	/* latency of the engine's own hops (/metrics fanogate_engine_hop_seconds,
	 * cp_engine_hop_name): CP_HOP_ANSWER in both modes, the rest lanes only */
	struct fg_lat_hist hop[CP_HOP__COUNT];
	/* jump delivery: the resolving contribution taken -> the seed handed to
	 * a consumer (cp_engine_consumer_name; /metrics
	 * fanogate_jump_delivery_seconds) */
	struct fg_lat_hist delivery[CP_CONSUMER__COUNT];
	/* resolution: the slot opened (first contribution) -> resolved, by how
	 * the resolving contribution came (enum fg_ingress; /metrics
	 * fanogate_slot_resolution_seconds) */
	struct fg_span_hist resolution[FG_INGRESS__COUNT];
	/* CLOCK_REALTIME ns of the last resolved seed, 0 before the first */
	uint64_t last_resolved_unix_ns;
};

struct cp_engine {
	struct cp_loop *loop;
	const struct fg_config *cfg;
	struct fg_bands bands;
	struct fg_seed_limits limits;
	struct cp_engine_ops ops;
	void *arg;
	const struct cp_engine_audit_ops *audit; /* NULL = none registered */
	void *audit_arg;
	struct fg_lines lines;
	/* The ONE model epoch: advanced by the control plane on every conflict
	 * outcome (either mode), published in the line facts, recorded in the
	 * audit log; every shard's open slots are flushed when it moves. */
	uint32_t epoch;
	/* The shadow audit's state, published with the lines (every status
	 * carries it): FG_AUDIT_OFF until cp_audit_start says otherwise. */
	enum fg_audit_fact audit_fact;
	struct cp_epoch_guard guard; /* who may move it, how often (cp_epoch_guard.h) */
	struct cp_points points;     /* Fano point liveness, applied to lines (cp_points.h) */
	uint64_t guard_warn_ns;      /* next log line about refused sources allowed (one per second) */
	uint64_t guard_warn_skipped; /* refusals not logged since the last line */
	struct fg_shadow_senders senders; /* canonical senders' classes (its key drawn at init) */
	bool lanes_mode;
	/* local mode */
	struct fg_slots slots;
	void *slots_mem; /* mmap'd, populated */
	size_t slots_len;
	/* lanes mode */
	struct fg_boundary *b;
	uint32_t next_req;
	unsigned outstanding;       /* requests waiting for an OUTCOME */
	uint64_t last_req_ns;       /* when the newest of them was sent */
	uint64_t next_sweep_ns;
	struct cp_engine_req *reqs; /* [CP_ENGINE_REQS] */
	uint32_t *flush_pending;    /* [n_lanes]: epoch of a FLUSH not yet pushed (ring full), 0 = none */
	struct cp_op wake_op;       /* the eventfd read (b->wake.fd), always in flight */
	uint64_t wake_val;          /* its 8-byte buffer */
	bool wake_armed;
	struct cp_op kick_op;       /* a NOP that continues a drain cut by its budget */
	bool kick_armed;
	struct cp_peer peers[CP_PEERS_MAX];
	unsigned n_peers;
	/* both */
	struct cp_ending *endings;  /* [n_endings], direct mapped */
	uint32_t n_endings;
	struct cp_timer tick;
	uint64_t tick_ns;
	bool stopping;
	struct cp_engine_stats st;
};

#define CP_ENGINE_REQS 4096u

/* Set up the engine. b == NULL selects local mode; in lanes mode b->wake
 * must hold the eventfd (dp_init makes it; -EINVAL otherwise) and the read
 * on it is queued here. The config must outlive the engine. Starts the
 * tick timer. Returns 0 or -errno. */
FG_MUST_CHECK int cp_engine_init(struct cp_engine *e, struct cp_loop *l, const struct fg_config *cfg,
				 struct fg_boundary *b, const struct cp_engine_ops *ops, void *arg);
/* Register (ops != NULL) or remove (NULL) the audit sink; ops must outlive
 * the registration. */
void cp_engine_set_audit(struct cp_engine *e, const struct cp_engine_audit_ops *ops, void *arg);
/* The audit's state every status says (recording, failed closed, off):
 * set and published. */
void cp_engine_audit_fact(struct cp_engine *e, enum fg_audit_fact a);
/* Stop the tick (the timer callback does not re-arm) and free everything. */
void cp_engine_fini(struct cp_engine *e);

/* Hand one whole decoded frame (f from fg_batch_decode/fg_frame_decode: its
 * 10 header bytes sit right before f->payload) to the slot owner; the bytes
 * are copied if they must travel.
 * The outcome arrives through ops->done(cookie). Returns 0, or -ENOBUFS when
 * the lane or its buffer pool is full, -EMSGSIZE when the frame does not fit a
 * lane buffer, -EBUSY when too many requests are outstanding; on an error
 * done is not called (the caller answers "no_slot"). */
FG_MUST_CHECK int cp_engine_submit(struct cp_engine *e, const struct fg_frame *f, uint64_t cookie);
/* The same for a frame from a sender at from, on an address that may name
 * its destination layer.
 * - bound: the layer a /layers/<L>/ path or a WebSocket /flow?layer=<L>
 *   names, or FG_LAYER_UNBOUND (as cp_engine_submit). The slot's layer is
 *   L and the stream's layer nibble must agree (fg_stream_classify_at;
 *   else the done callback reports layer_mismatch).
 * - from: family 4 or 6 and the address (the port is not read), or NULL
 *   (not known, as cp_engine_submit): a canonical report counts against
 *   its source's share of the shadow audit's pending table
 *   (fg_shadow_sender_class; NULL: class 0), so one sender's flood cannot
 *   push out another's waiting reports; from->lines are the lines its
 *   role speaks for (cp_conn_source): a conflicting duplicate it sends
 *   on another line moves nothing (cp_epoch_guard.h rule 2; NULL: every
 *   line). */
FG_MUST_CHECK int cp_engine_submit_from(struct cp_engine *e, const struct fg_frame *f, int32_t bound,
					const struct fg_bm_src *from, uint64_t cookie);

/* Lanes mode: poll the lanes for up to [dataplane] answer_spin_us while
 * requests wait for their OUTCOME, instead of sleeping until an lcore wakes
 * us, until every owed answer is in. Call at the batch end, before the
 * flush; it submits nothing. Returns true when it handled messages and
 * ran out of its budget with answers still owed: flush, submit (so that
 * what it took leaves now), then call again. Otherwise the caller flushes
 * and goes back to its loop, whose one submit sends that output (every
 * answer in) or also reaps the input that ended the spin. */
bool cp_engine_spin(struct cp_engine *e);
/* Lanes mode: publish the layers whose resolved seeds the control plane
 * hands on (WebSocket subscribers, HTTP long polls): their RESOLVED
 * messages wake us (boundary.h, struct fg_watch). No-op in local mode. */
void cp_engine_watch(struct cp_engine *e, const uint64_t mask[FG_WATCH_WORDS]);

/* A POST body or WebSocket message refused as a whole before any frame of
 * it reached the engine (fg_batch_decode < 0: short_header, truncated_frame):
 * counted like a frame the ingest refuses, one frame received over TLS and
 * one malformed under its reason (fanogate_tls_malformed_total{reason}). */
void cp_engine_count_malformed(struct cp_engine *e, int reason);

/* How a slot ended, if the cache still knows. Returns the state
 * (FG_SLOT_RESOLVED with *frame and *len set, FG_SLOT_EXPIRED, FG_SLOT_POISONED),
 * FG_SLOT_OPEN when the local table holds it open, or FG_SLOT_FREE. */
enum fg_slot_state cp_engine_lookup(const struct cp_engine *e, uint16_t layer, uint32_t token_seq,
				    const uint8_t **frame, size_t *len);

/* Apply a line event (operator or audit), log and republish the facts.
 * Returns what fg_line_apply returns. */
FG_MUST_CHECK int cp_engine_line_event(struct cp_engine *e, unsigned line, enum fg_line_event ev, uint32_t uid,
				       int32_t pid, const char *why);

/* Emit a change of e->lines made outside the audit (a point down or up)
 * to the audit sink, origin naming the cause ("peers"). Does not publish. */
void cp_engine_line_changed(struct cp_engine *e, const struct fg_line_change *chg, const char *origin);

/* Fano points (e->points, cp_points.h): an authenticated TLS connection
 * whose role serves a point is counted for it; a point with no live peer
 * (TLS or, lanes mode, a mapped UDP source) is marked down in the line
 * table (its lines degrade), and up again when one comes back. Each change
 * is logged, audited as a line change (origin "peers") and published.
 *
 * An authenticated connection with role (who: its peer name) opened:
 * returns the point it is counted for (1..7; the caller keeps it for
 * cp_engine_point_detach), or 0 when the role serves none. */
unsigned cp_engine_point_attach(struct cp_engine *e, const char *role, const char *who);
/* A connection counted for point p (from cp_engine_point_attach) closed.
 * quiet: the server is stopping; uncount without marking the point down. */
void cp_engine_point_detach(struct cp_engine *e, unsigned p, bool quiet, const char *who);
/* Mark point p (1..7) down or up for a cause outside the engine ([cluster]:
 * the only node that saw it alive is gone), as a local change. Nothing
 * when p already is so. */
void cp_engine_point_set(struct cp_engine *e, unsigned p, bool down, const char *who);
/* Move the model epoch forward to `to` as a conflict here would (publish,
 * flush every shard, audit through the audit sink's epoch_changed with why); nothing
 * when `to` is not ahead. For [cluster]: another node's advance. */
void cp_engine_epoch_apply(struct cp_engine *e, uint32_t to, const char *why);

/* Publish the line facts (after a change made by the shadow audit). */
void cp_engine_publish(struct cp_engine *e);

/* The facts as currently published. */
fg_linefacts cp_engine_linefacts(const struct cp_engine *e);

#endif

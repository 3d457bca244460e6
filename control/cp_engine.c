/* cp_engine.c - the slot backend of the control plane: local table or
 * dataplane lanes, slot endings cache, line table (see cp_engine.h).
 * Loop thread only. */
#include "cp_engine.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cp_key.h"
#include "cp_log.h"
#include "cp_mem.h"

#define CP_ENGINE_ENDINGS 1024u
#define CP_TICK_LOCAL_NS (5ull * 1000 * 1000)
/* Lanes mode: housekeeping only (pending FLUSH retries, the lost-OUTCOME
 * sweep, UDP point liveness); arrivals are drained when the lcores wake us. */
#define CP_TICK_LANES_NS (1ull * 1000 * 1000)
#define CP_DRAIN_MAX 256

static void engine_tick(struct cp_loop *l, struct cp_timer *t);
static void lanes_service(struct cp_engine *e);
static void lanes_flush_push(struct cp_engine *e);
static void count_malformed(struct cp_engine *e, int reason);

fg_linefacts cp_engine_linefacts(const struct cp_engine *e)
{
	return fg_linefacts_with_audit(fg_linefacts_pack(&e->lines, e->epoch), e->audit_fact);
}

void cp_engine_publish(struct cp_engine *e)
{
	if (e->b)
		atomic_store_explicit(&e->b->linefacts, cp_engine_linefacts(e), memory_order_release);
}

static struct cp_ending *ending_slot(const struct cp_engine *e, uint16_t layer, uint32_t token_seq)
{
	uint64_t k = (uint64_t)token_seq * (e->bands.n_layers ? e->bands.n_layers : 1) + layer;
	return &e->endings[k % e->n_endings];
}

/* Record how a slot ended. A resolved seed is written here as its frame
 * (wire.md 3.3), built once from the facts and the body: this is the one
 * copy of the body the control plane makes for its TLS consumers (the
 * WebSocket push and GET /residual-seed copy from here into their output).
 * Returns the entry, or NULL when the seed could not be kept (out of memory,
 * unencodable: logged once, counted). */
static struct cp_ending *ending_put(struct cp_engine *e, uint16_t layer, uint32_t token_seq, enum fg_slot_state st,
				    const struct fg_seed_view *v)
{
	struct cp_ending *en = ending_slot(e, layer, token_seq);
	en->layer = layer;
	en->token_seq = token_seq;
	en->state = (uint8_t)st;
	en->len = 0;
	if (st != FG_SLOT_RESOLVED || !v)
		return en;
	size_t need = FG_HDR_LEN + FG_SEED_PREFIX_LEN + (size_t)v->body_len;
	if (en->cap < need) {
		uint8_t *p = realloc(en->frame, need);
		if (!p) {
			/* Out of memory: forget the entry rather than lie. */
			en->state = FG_SLOT_FREE;
			e->st.seeds_unkept++;
			return NULL;
		}
		en->frame = p;
		en->cap = (uint32_t)need;
	}
	struct fg_resolved rr = {.token_seq = v->token_seq, .dst_layer = v->dst_layer, .start_pos = v->start_pos,
				 .seq_len = v->seq_len, .body = v->body, .body_len = v->body_len};
	ssize_t n = fg_resolved_encode(&e->bands, &rr, en->frame, en->cap);
	if (n < 0) {
		en->state = FG_SLOT_FREE;
		if (e->st.seeds_unkept++ == 0)
			cp_err("engine: cannot encode resolved seed layer=%u token_seq=%u: %s", v->dst_layer,
			       v->token_seq, fg_reason_name((int)n));
		return NULL;
	}
	en->len = (uint32_t)n;
	return en;
}

enum fg_slot_state cp_engine_lookup(const struct cp_engine *e, uint16_t layer, uint32_t token_seq,
				    const uint8_t **frame, size_t *len)
{
	const struct cp_ending *en = ending_slot(e, layer, token_seq);
	if (en->state != FG_SLOT_FREE && en->layer == layer && en->token_seq == token_seq) {
		if (en->state == FG_SLOT_RESOLVED) {
			*frame = en->frame;
			*len = en->len;
		}
		return (enum fg_slot_state)en->state;
	}
	if (!e->lanes_mode) {
		struct fg_slot_info info;
		if (fg_slot_lookup(&e->slots, token_seq, layer, &info) == 0 && info.state == FG_SLOT_OPEN)
			return FG_SLOT_OPEN;
	}
	return FG_SLOT_FREE;
}

int cp_engine_line_event(struct cp_engine *e, unsigned line, enum fg_line_event ev, uint32_t uid, int32_t pid,
			 const char *why)
{
	struct fg_line_change chg;
	int r = fg_line_apply(&e->lines, line, ev, cp_now_ns(), uid, pid, why, &chg);
	if (r == 1) {
		char who[32];
		cp_log(cp_log_change_level(chg.from, chg.to), "line %u %s: %s -> %s by %s: %s", line,
		       fg_fano_line_name(line), fg_line_state_name(chg.from), fg_line_state_name(chg.to),
		       cp_log_actor(uid, who, sizeof(who)), why);
		cp_engine_publish(e);
	}
	return r;
}

/* A canonical report from the sender at from (NULL: not known) to the
 * audit, with its source class. */
static void emit_canonical(struct cp_engine *e, const struct fg_canon *cn, uint64_t arrived_ns,
			   const struct fg_bm_src *from)
{
	if (!e->audit)
		return;
	uint32_t hashed = e->senders.hashed;
	unsigned src = from ? fg_shadow_sender_class(&e->senders, from->family, from->addr) : 0;
	if (hashed == 0 && e->senders.hashed)
		cp_warn("engine: more than %u senders of canonical reports since the start: later ones share the "
			"audit's quotas by a keyed hash", FG_SHADOW_SOURCES - 1u);
	e->audit->canonical(e->audit_arg, cn, e->epoch, arrived_ns, src);
}

/* A refusal by the epoch guard: one log line per second at most (the
 * senders are outside; counters carry the rest). */
static void guard_warn(struct cp_engine *e, const char *what, const char *src, uint16_t layer, uint32_t token_seq)
{
	uint64_t now = cp_now_ns();
	if (now < e->guard_warn_ns) {
		e->guard_warn_skipped++;
		return;
	}
	e->guard_warn_ns = now + 1000000000ull;
	cp_warn("engine: %s from %s (layer=%u token_seq=%u)%s", what, src, layer, token_seq,
		e->guard_warn_skipped ? " (and more refusals in the last second, counted)" : "");
	e->guard_warn_skipped = 0;
}

void cp_engine_set_audit(struct cp_engine *e, const struct cp_engine_audit_ops *ops, void *arg)
{
	e->audit = ops;
	e->audit_arg = arg;
}

void cp_engine_audit_fact(struct cp_engine *e, enum fg_audit_fact a)
{
	e->audit_fact = a;
	cp_engine_publish(e);
}

void cp_engine_line_changed(struct cp_engine *e, const struct fg_line_change *chg, const char *origin)
{
	if (e->audit)
		e->audit->line_changed(e->audit_arg, chg, origin);
}

/* ---- Fano points: cp_points.h decides, the engine applies ------------------ */

/* Mark Fano point p (1..7) down or up in the line table: the lines through
 * it degrade or come back; each change is logged, emitted to the audit as a
 * line change (origin "peers") and the facts republished. who: the peer
 * that caused it ("udp: ..." for UDP sources). */
static void point_set(struct cp_engine *e, unsigned p, bool down, const char *who)
{
	struct fg_line_change chg[3];
	int n = fg_lines_point(&e->lines, p, down, cp_now_ns(), chg);
	bool udp = who && !strncmp(who, "udp:", 4);
	const char *src = udp ? "UDP sources" : "TLS peers";
	cp_info("point e%u %s: %s (%s)", p, down ? "down" : "up",
		down ? (udp ? "no live TLS peer or UDP source" : "its last TLS peer disconnected")
		     : (udp ? "a UDP source sent again" : "a TLS peer is back"),
		who ? who : "-");
	for (int i = 0; i < n; i++) {
		snprintf(chg[i].why, sizeof(chg[i].why), "point e%u %s (%s)", p, down ? "down" : "up", src);
		cp_info("line %u %s: %s -> %s (point e%u %s)", chg[i].line, fg_fano_line_name(chg[i].line),
			fg_line_state_name(chg[i].from), fg_line_state_name(chg[i].to), p, down ? "down" : "up");
		cp_engine_line_changed(e, &chg[i], "peers");
	}
	if (n > 0)
		cp_engine_publish(e);
}

void cp_engine_point_set(struct cp_engine *e, unsigned p, bool down, const char *who)
{
	if (p >= 1 && p <= FG_POINTS && !(e->lines.points_down & (1u << (p - 1))) == down)
		point_set(e, p, down, who);
}

unsigned cp_engine_point_attach(struct cp_engine *e, const char *role, const char *who)
{
	unsigned p = cp_point_of_role(role);
	if (!p)
		return 0;
	if (cp_points_tls_attach(&e->points, p) && (e->lines.points_down & (1u << (p - 1))))
		point_set(e, p, false, who);
	return p;
}

void cp_engine_point_detach(struct cp_engine *e, unsigned p, bool quiet, const char *who)
{
	if (cp_points_tls_detach(&e->points, p) && !quiet)
		point_set(e, p, true, who);
}

/* [points]: the UDP sources the lcores heard (lanes mode). */
static void points_udp_tick(struct cp_engine *e, uint64_t now)
{
	struct cp_point_change chg[FG_POINTS];
	unsigned n = cp_points_udp_tick(&e->points, e->b->point_seen_ns, now, e->lines.points_down, chg);
	for (unsigned i = 0; i < n; i++)
		point_set(e, chg[i].point, chg[i].down, chg[i].who);
}

/* A slot resolved (either mode): v holds the facts and the body (the local
 * table's slot, or a dp2cp buffer released after this call). Cache the
 * frame, deliver it from the cache, audit the facts and body. */
/* When a resolved seed's times were taken (one clock, CLOCK_MONOTONIC). */
struct resolved_times {
	uint64_t open_ns;     /* the slot opened */
	uint64_t last_ns;     /* the resolving contribution was taken */
	uint64_t resolved_ns; /* resolved (lanes: after the UDP consumer's copy went to TX) */
	unsigned ingress;     /* enum fg_ingress of the resolving contribution */
	bool udp_sent;        /* lanes: the lcore delivered it to the UDP consumer */
};

static uint64_t unix_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void on_resolved(struct cp_engine *e, const struct fg_seed_view *v, const struct resolved_times *t)
{
	e->st.resolved++;
	e->st.last_resolved_unix_ns = unix_ns();
	if (t->ingress < FG_INGRESS__COUNT && t->open_ns)
		fg_span_hist_add(&e->st.resolution[t->ingress], t->open_ns, t->resolved_ns);
	if (t->udp_sent)
		fg_lat_hist_add(&e->st.delivery[CP_CONSUMER_UDP], t->last_ns, t->resolved_ns);
	/* For the audit's lead (fg/lead.h): resolved when the resolving
	 * contribution was taken; delivered when the UDP consumer's copy went
	 * to TX, else when it was handed to the TLS consumers below. */
	struct fg_seed_times at = {.resolved_ns = t->last_ns, .delivered_ns = t->udp_sent ? t->resolved_ns : 0,
				   .ingress = t->ingress < FG_INGRESS__COUNT ? (uint8_t)t->ingress : FG_AUDIT_UNKNOWN};
	if (!v->body && v->body_len) {
		/* The lcore's pool was empty: the facts came without the body
		 * (boundary.h). Nothing to cache or hand a TLS consumer (the
		 * UDP consumer, if any, has it already); the audit judges it
		 * by fingerprint. */
		e->st.resolved_no_body++;
		if (e->audit)
			e->audit->resolved(e->audit_arg, v, e->epoch, &at);
		return;
	}
	const struct cp_ending *en = ending_put(e, v->dst_layer, v->token_seq, FG_SLOT_RESOLVED, v);
	if (en && e->ops.resolved) {
		e->ops.resolved(e->arg, v->dst_layer, v->token_seq, en->frame, en->len);
		/* pushed to the WebSocket subscribers, handed to the waiting GETs */
		uint64_t now = cp_now_ns();
		fg_lat_hist_add(&e->st.delivery[CP_CONSUMER_TLS], t->last_ns, now);
		if (!at.delivered_ns)
			at.delivered_ns = now;
	}
	if (e->audit)
		e->audit->resolved(e->audit_arg, v, e->epoch, &at);
}

static void on_ended(struct cp_engine *e, uint16_t layer, uint32_t token_seq, enum fg_slot_state st)
{
	if (st == FG_SLOT_EXPIRED)
		e->st.expired++;
	else
		e->st.poisoned++;
	(void)ending_put(e, layer, token_seq, st, NULL);
	if (e->ops.ended)
		e->ops.ended(e->arg, layer, token_seq, st);
}

/* Advance the one model epoch to `to` (or by one): publish it, flush every
 * shard's open slots (the fleet's plan clears them), audit the change. */
static void epoch_advance(struct cp_engine *e, uint32_t to, const char *why)
{
	uint32_t from = e->epoch;
	if ((int32_t)(to - from) <= 0)
		to = from + 1;
	e->epoch = to;
	e->st.epoch_changes++;
	cp_engine_publish(e);
	if (e->lanes_mode) {
		for (unsigned i = 0; i < e->b->n_lanes; i++)
			e->flush_pending[i] = to;
		lanes_flush_push(e);
	} else {
		if ((int32_t)(to - e->slots.epoch) > 0)
			e->slots.epoch = to;
		e->st.slots_flushed += fg_slots_flush(&e->slots);
	}
	cp_info("model epoch %u -> %u: %s; open slots flushed", from, to, why);
	if (e->audit)
		e->audit->epoch_changed(e->audit_arg, from, to, why);
}

void cp_engine_epoch_apply(struct cp_engine *e, uint32_t to, const char *why)
{
	if ((int32_t)(to - e->epoch) > 0)
		epoch_advance(e, to, why);
}

/* src: who sent the conflicting duplicate (family 0: over TLS). The slot
 * is poisoned either way (the lcore did it); what else happens is the
 * epoch guard's decision (cp_epoch_guard.h). */
static void on_conflict(struct cp_engine *e, uint16_t layer, uint32_t token_seq, unsigned line,
			const struct fg_bm_src *src)
{
	on_ended(e, layer, token_seq, FG_SLOT_POISONED);
	char who[64];
	cp_epoch_src_name(src, who, sizeof(who));
	bool mapped = line < FG_LINES && cp_epoch_guard_is_mapped(e->cfg, src, line);
	bool began = false;
	enum cp_epoch_verdict v = cp_epoch_guard_judge(&e->guard, mapped, cp_now_ns(), &began);
	if (v == CP_EPOCH_HELD_UNMAPPED) {
		/* Not attributed to the line: no demotion, no page, no flush. */
		e->st.conflicts_unmapped++;
		guard_warn(e, src->family ? "conflicting duplicate ignored: sender not mapped to the line's points ([points])"
					  : "conflicting duplicate ignored: the TLS sender's role names a point not on "
					    "the line",
			   who, layer, token_seq);
		return;
	}
	/* The shadow audit demotes the line and records why (and who). */
	if (e->audit) {
		if (e->audit->conflict_from)
			e->audit->conflict_from(e->audit_arg, layer, token_seq, line, e->epoch, who);
		else
			e->audit->conflict(e->audit_arg, layer, token_seq, line, e->epoch);
	}
	char why[320];
	if (v == CP_EPOCH_HELD_RATE) {
		e->st.epoch_held_rate++;
		if (began)
			e->st.epoch_storms++;
		snprintf(why, sizeof(why),
			 "epoch storm: conflicting duplicates faster than one per %llu ms (last from %s, line %u "
			 "layer %u token %u): epoch held at %u, lines held in shadow, nothing flushed",
			 (unsigned long long)(e->guard.min_ns / 1000000ull), who, line, layer, token_seq, e->epoch);
		if (began)
			cp_warn("engine: %s", why);
		if (e->audit && e->audit->epoch_storm)
			e->audit->epoch_storm(e->audit_arg, began, why, CP_EPOCH_STORM_QUIET * e->guard.min_ns);
		return;
	}
	/* The one model epoch moves by one (a table never moves its own:
	 * core/slot.c slot_poison); every shard learns it by FLUSH. */
	snprintf(why, sizeof(why), "conflicting duplicate contribution from %s (line %u layer %u token %u)", who,
		 line, layer, token_seq);
	epoch_advance(e, e->epoch + 1, why);
}

/* An answer leaving the control plane carries the one model epoch when it
 * is ahead of the table's (a conflict the control plane just accepted). */
static void stamp_epoch(const struct cp_engine *e, struct fg_status *st)
{
	if ((int32_t)(e->epoch - st->model_epoch) > 0)
		st->model_epoch = e->epoch;
}

const char *cp_engine_spin_end_name(enum cp_spin_end r)
{
	static const char *const n[CP_SPIN__COUNT] = {"answered", "input", "budget"};
	return r < CP_SPIN__COUNT ? n[r] : "unknown";
}

const char *cp_engine_consumer_name(enum cp_consumer c)
{
	static const char *const names[CP_CONSUMER__COUNT] = {[CP_CONSUMER_UDP] = "udp", [CP_CONSUMER_TLS] = "tls"};
	return (unsigned)c < CP_CONSUMER__COUNT ? names[c] : "?";
}

const char *cp_engine_ingress_name(unsigned ingress)
{
	static const char *const names[FG_INGRESS__COUNT] = {[FG_INGRESS_UDP] = "udp", [FG_INGRESS_TLS] = "tls"};
	return ingress < FG_INGRESS__COUNT ? names[ingress] : "?";
}

const char *cp_engine_hop_name(enum cp_hop h)
{
	static const char *const names[CP_HOP__COUNT] = {
		[CP_HOP_ANSWER] = "answer", [CP_HOP_TO_LCORE] = "to_lcore", [CP_HOP_BACK] = "back_to_cp",
		[CP_HOP_SEED] = "seed_to_cp"};
	return (unsigned)h < CP_HOP__COUNT ? names[h] : "?";
}

/* ---- local mode ----------------------------------------------------------- */

static int local_submit(struct cp_engine *e, const struct fg_frame *f, int32_t bound, const struct fg_bm_src *from,
			uint64_t cookie)
{
	struct fg_ingest_ctx ctx = {.bands = &e->bands, .limits = &e->limits, .lines = cp_engine_linefacts(e),
				    .layer_bound = bound >= 0, .bound_layer = bound >= 0 ? (uint16_t)bound : 0,
				    .serves = e->cfg && e->cfg->cluster.node[0] ? e->cfg->cluster.serves : NULL};
	struct fg_ingest_result res;
	memset(&res, 0, sizeof(res));
	uint64_t t0 = cp_now_ns();
	int r = fg_ingest_frame(&e->slots, &ctx, f, t0, &res);
	struct cp_engine_result out = {.band = res.band, .reason = r < 0 ? -r : 0, .status = res.status};
	if (r < 0) {
		count_malformed(e, r);
	} else if (res.band == FG_BAND_SEED && res.slot.outcome < FG_O__COUNT) {
		e->st.outcome[res.slot.outcome]++;
	}
	/* A conflict is judged first, so its own answer carries the epoch the
	 * guard's decision left (moved by one, or not at all). */
	if (r >= 0 && res.band == FG_BAND_SEED && res.slot.outcome == FG_O_CONFLICT) {
		/* over TLS (local mode has no UDP), speaking for the lines its
		 * role names (not known: every line) */
		struct fg_bm_src tls = {.family = 0, .lines = from ? from->lines : (uint8_t)FG_FANO_FULL_MASK};
		on_conflict(e, res.seed.dst_layer, res.seed.token_seq, res.seed.line, &tls);
		stamp_epoch(e, &out.status);
	}
	fg_lat_hist_add(&e->st.hop[CP_HOP_ANSWER], t0, cp_now_ns());
	if (e->ops.done)
		e->ops.done(e->arg, cookie, &out);
	if (r < 0)
		return 0;
	if (res.band == FG_BAND_SEED) {
		if (res.slot.outcome == FG_O_RESOLVED) {
			struct fg_seed_view v;
			if (fg_slot_seed(&e->slots, res.slot.slot, &v) == 0) {
				const struct resolved_times t = {.open_ns = v.opened_ns, .last_ns = t0,
								 .resolved_ns = cp_now_ns(), .ingress = FG_INGRESS_TLS};
				on_resolved(e, &v, &t);
			}
		}
	} else if (res.band == FG_BAND_CANONICAL) {
		e->st.canonical++;
		struct fg_canon cn = res.canon;
		if (cn.kind == FG_CANON_FULL && !cn.digest)
			cn.digest = fg_fingerprint(cn.body, cn.body_len);
		emit_canonical(e, &cn, t0, from);
	}
	return 0;
}

static void local_expire(struct cp_engine *e)
{
	struct fg_slot_expired ex[64];
	int n;
	do {
		n = fg_slots_expire(&e->slots, cp_now_ns(), ex, (int)FG_ARRAY_LEN(ex));
		for (int i = 0; i < n; i++)
			on_ended(e, ex[i].dst_layer, ex[i].token_seq, FG_SLOT_EXPIRED);
	} while (n == (int)FG_ARRAY_LEN(ex));
}

/* ---- lanes mode ----------------------------------------------------------- */

/* After a push to ln->to_dp: wake its lcore if it sleeps in its idle wait
 * ([poll] idle_wake; boundary.h, struct fg_lane.wake). Without idle_wake
 * the lane has no fd and this is one load. */
static void lcore_kick(struct cp_engine *e, struct fg_lane *ln)
{
	int k = fg_wake_kick(&ln->wake);
	if (k > 0)
		e->st.lcore_wakes++;
	else if (k < 0 && e->st.lcore_wake_errors++ == 0)
		cp_err("engine: eventfd write to wake an lcore: %s", strerror(errno));
}

static int lanes_submit(struct cp_engine *e, const struct fg_frame *f, int32_t bound, const struct fg_bm_src *from,
			uint64_t cookie)
{
	enum fg_band band = FG_BAND_STATUS;
	uint16_t layer = 0;
	uint32_t lane = 0;
	bool canonical = false;
	/* Frames that do not classify still go to a lane (lane 0): the owner's
	 * ingest answers them with the stable reason, so both modes answer
	 * malformed input the same way. */
	if (fg_stream_classify_at(&e->bands, f->hdr.stream_id, bound, &band, &layer) == 0 &&
	    (band == FG_BAND_SEED || band == FG_BAND_CANONICAL)) {
		canonical = band == FG_BAND_CANONICAL;
		lane = fg_shard_of(f->hdr.sequence, layer, e->bands.n_layers, e->b->n_lanes);
	}
	struct fg_lane *ln = &e->b->lanes[lane];
	size_t len = FG_HDR_LEN + (size_t)f->hdr.length;
	if (len > ln->cp2dp.size) {
		e->st.too_big++;
		return -EMSGSIZE;
	}
	uint32_t id = ++e->next_req;
	if (id == 0)
		id = ++e->next_req;
	struct cp_engine_req *rq = &e->reqs[id & (CP_ENGINE_REQS - 1)];
	if (rq->req_id != 0) {
		e->st.req_table_full++;
		return -EBUSY;
	}
	/* We are the only producer of to_dp: when it has room now, the push
	 * below succeeds, so a pool buffer is never taken and then stranded
	 * (we may not push it back: the lcore is the free list's producer). */
	if (fg_ring_count(ln->to_dp) > ln->to_dp->mask) {
		e->st.lane_full++;
		return -ENOBUFS;
	}
	uint32_t bi = fg_pool_get(&ln->cp2dp);
	if (bi == FG_BUF_NONE) {
		e->st.pool_empty++;
		return -ENOBUFS;
	}
	memcpy(fg_pool_buf(&ln->cp2dp, bi), f->payload - FG_HDR_LEN, len);
	union fg_bmsg m = {.contrib = {.kind = FG_BM_CONTRIB,
				       .band = (uint8_t)band,
				       .layer = bound >= 0 ? (uint16_t)bound : layer,
				       .token_seq = f->hdr.sequence,
				       .req_id = id,
				       .frame = {.buf = bi, .len = (uint32_t)len},
				       .layer_bound = bound >= 0,
				       .sender_lines = from ? from->lines : (uint8_t)FG_FANO_FULL_MASK,
				       .t_ns = cp_now_ns()}};
	if (!fg_ring_push(ln->to_dp, &m)) {
		/* Cannot happen (checked above); keep the buffer for nobody rather
		 * than break the SPSC contract, and say so. */
		e->st.lane_full++;
		cp_err("engine: lane %u push failed after the room check; buffer %u leaked", lane, bi);
		return -ENOBUFS;
	}
	lcore_kick(e, ln);
	rq->req_id = id;
	rq->cookie = cookie;
	rq->t_ns = m.contrib.t_ns;
	rq->canonical = canonical;
	e->outstanding++;
	e->last_req_ns = cp_now_ns();
	/* We are awake and will poll for this answer at the batch's end
	 * (cp_engine_spin, which announces the sleep again when it stops):
	 * take the sleep flag back, so that the lcore, answering in a few
	 * microseconds while we still work on the batch, does not write the
	 * eventfd for nothing (a system call on the lcore, a completion and a
	 * re-armed read here: about 0.6 per https seed before). */
	if (e->cfg->answer_spin_us)
		fg_wake_cancel(&e->b->wake);
	/* The lcore reports canonical frames it received over UDP (FG_BM_CANONICAL),
	 * not the ones we hand it: audit those here, once, like local mode. */
	if (canonical) {
		struct fg_canon cn;
		if (fg_canon_decode(f, layer, &e->limits, &cn) >= 0) {
			e->st.canonical++;
			if (cn.kind == FG_CANON_FULL && !cn.digest)
				cn.digest = fg_fingerprint(cn.body, cn.body_len);
			emit_canonical(e, &cn, rq->t_ns, from);
		}
	}
	return 0;
}

/* Push the FLUSH messages an epoch change left pending (ring full). */
static void lanes_flush_push(struct cp_engine *e)
{
	for (unsigned i = 0; i < e->b->n_lanes; i++) {
		if (!e->flush_pending[i])
			continue;
		union fg_bmsg m = {.flush = {.kind = FG_BM_FLUSH, .epoch = e->flush_pending[i], .t_ns = cp_now_ns()}};
		if (fg_ring_push(e->b->lanes[i].to_dp, &m)) {
			e->flush_pending[i] = 0;
			e->st.flush_sent++;
			lcore_kick(e, &e->b->lanes[i]);
		}
	}
}

static void peer_seen(struct cp_engine *e, const struct fg_bm_peer *m)
{
	uint8_t fam = m->family == 6 ? 6 : 4;
	uint16_t port = m->port;
	for (unsigned i = 0; i < e->n_peers; i++) {
		struct cp_peer *p = &e->peers[i];
		if (p->family == fam && p->port == port && !memcmp(p->addr, m->addr, 16)) {
			p->last_ns = m->t_ns;
			p->reports++;
			return;
		}
	}
	if (e->n_peers == CP_PEERS_MAX) {
		e->st.peers_dropped++;
		return;
	}
	struct cp_peer *p = &e->peers[e->n_peers++];
	memcpy(p->addr, m->addr, 16);
	p->family = fam;
	p->port = port;
	p->first_ns = p->last_ns = m->t_ns;
	p->reports = 1;
}

/* A body a dp->cp message names, or NULL when the reference is invalid. */
static const uint8_t *lane_body(const struct fg_lane *ln, const struct fg_bm_body *b)
{
	if (b->buf >= ln->dp2cp.n || b->len > ln->dp2cp.size)
		return NULL;
	return fg_pool_buf(&ln->dp2cp, b->buf);
}

static void lanes_msg(struct cp_engine *e, struct fg_lane *ln, const union fg_bmsg *m)
{
	const struct fg_bm_body *owned = NULL; /* a dp2cp buffer this message hands us */
	switch (m->kind) {
	case FG_BM_OUTCOME: {
		const struct fg_bm_outcome *o = &m->outcome;
		struct cp_engine_req *rq = &e->reqs[o->req_id & (CP_ENGINE_REQS - 1)];
		if (o->req_id == 0 || rq->req_id != o->req_id) {
			e->st.outcomes_unmatched++;
			break;
		}
		struct cp_engine_result out = {.band = rq->canonical ? FG_BAND_CANONICAL : FG_BAND_SEED,
					       .reason = o->status.reason, .status = o->status};
		/* Counted as in local mode: malformed by reason, seeds by outcome,
		 * canonical reports only in st.canonical (at submit). */
		if (o->status.outcome == FG_O_MALFORMED)
			count_malformed(e, o->status.reason);
		else if (!rq->canonical && o->status.outcome < FG_O__COUNT)
			e->st.outcome[o->status.outcome]++;
		uint64_t cookie = rq->cookie, now = cp_now_ns();
		if (o->t_ns) {
			fg_lat_hist_add(&e->st.hop[CP_HOP_TO_LCORE], rq->t_ns, o->t_ns);
			fg_lat_hist_add(&e->st.hop[CP_HOP_BACK], o->t_ns, now);
		}
		fg_lat_hist_add(&e->st.hop[CP_HOP_ANSWER], rq->t_ns, now);
		rq->req_id = 0;
		e->outstanding--;
		stamp_epoch(e, &out.status);
		if (e->ops.done)
			e->ops.done(e->arg, cookie, &out);
		break;
	}
	case FG_BM_RESOLVED: {
		const struct fg_bm_resolved *r = &m->resolved;
		owned = &r->body;
		const uint8_t *body = NULL;
		if (r->body.buf != FG_BUF_NONE && !(body = lane_body(ln, &r->body))) {
			e->st.bad_lane_msgs++;
			break;
		}
		fg_lat_hist_add(&e->st.hop[CP_HOP_SEED], r->t_ns, cp_now_ns());
		/* Facts as the lcore's slot engine stated them: nothing to decode,
		 * the fingerprint is not computed again. */
		struct fg_seed_view v = {.token_seq = r->token_seq, .dst_layer = r->layer, .start_pos = r->start_pos,
					 .seq_len = r->seq_len, .body = body, .body_len = r->body.len,
					 .fingerprint = r->fingerprint, .lines = r->lines, .opened_ns = r->t_open_ns};
		const struct resolved_times t = {.open_ns = r->t_open_ns, .last_ns = r->t_last_ns, .resolved_ns = r->t_ns,
						 .ingress = r->ingress, .udp_sent = r->udp_sent};
		on_resolved(e, &v, &t);
		break;
	}
	case FG_BM_CANONICAL: {
		const struct fg_bm_canonical *c = &m->canonical;
		owned = &c->body;
		if (!cp_epoch_guard_canon_source_ok(e->cfg, &c->src)) {
			/* Not the coordinator ([shadow] canonical_sources): a spoofed
			 * report must not reach the audit (no verdict, no demotion, no
			 * page, no slot of its pending table). */
			char who[64];
			cp_epoch_src_name(&c->src, who, sizeof(who));
			e->st.canon_refused_source++;
			guard_warn(e, "canonical report refused: source not in [shadow] canonical_sources", who, c->layer,
				   c->token_seq);
			break;
		}
		e->st.canonical++;
		struct fg_canon cn = {.token_seq = c->token_seq, .dst_layer = c->layer,
				      .kind = (enum fg_canon_kind)c->canon_kind, .start_pos = c->start_pos,
				      .seq_len = c->seq_len, .digest = c->fingerprint};
		if (cn.kind == FG_CANON_FULL) {
			/* the lcore hashed the body: digest carries it, the audit uses it */
			cn.body_len = c->body.len;
			if (c->body.buf == FG_BUF_NONE) {
				/* sent without the body (boundary.h): the digest stands for it */
				e->st.canon_no_body++;
			} else if (!(cn.body = lane_body(ln, &c->body))) {
				e->st.bad_lane_msgs++;
				break;
			}
		} else if (cn.kind != FG_CANON_DIGEST) {
			e->st.bad_lane_msgs++;
			break;
		}
		emit_canonical(e, &cn, c->t_ns, &c->src);
		break;
	}
	case FG_BM_CONFLICT:
		on_conflict(e, m->conflict.layer, m->conflict.token_seq, m->conflict.line, &m->conflict.src);
		break;
	case FG_BM_EXPIRED:
		on_ended(e, m->expired.layer, m->expired.token_seq, FG_SLOT_EXPIRED);
		break;
	case FG_BM_PEER:
		peer_seen(e, &m->peer);
		break;
	default:
		e->st.bad_lane_msgs++;
		break;
	}
	/* A dp2cp buffer the message names is ours now: release it. */
	if (owned && owned->buf != FG_BUF_NONE && owned->buf < ln->dp2cp.n)
		fg_pool_put(&ln->dp2cp, owned->buf);
}

/* Answer requests whose OUTCOME never came (at most once a second, and
 * only while some are outstanding: the sweep is 4096 entries). */
static void lanes_sweep(struct cp_engine *e, uint64_t now)
{
	if (!e->outstanding || now < e->next_sweep_ns)
		return;
	e->next_sweep_ns = now + 1000000000ull;
	for (uint32_t i = 0; i < CP_ENGINE_REQS; i++) {
		struct cp_engine_req *rq = &e->reqs[i];
		if (!rq->req_id || now - rq->t_ns < CP_ENGINE_REQ_TIMEOUT_NS)
			continue;
		uint64_t cookie = rq->cookie;
		rq->req_id = 0;
		e->outstanding--;
		e->st.outcomes_lost++;
		struct cp_engine_result out = {.band = FG_BAND_SEED};
		out.status.outcome = FG_O_NO_SLOT;
		out.status.line = FG_LINE_NONE;
		if (e->ops.done)
			e->ops.done(e->arg, cookie, &out);
	}
}

/* Take up to CP_DRAIN_MAX messages from every lane. Returns true when some
 * lane hit that budget (more may be waiting). */
static bool lanes_drain(struct cp_engine *e)
{
	bool more = false;
	for (unsigned i = 0; i < e->b->n_lanes; i++) {
		struct fg_lane *ln = &e->b->lanes[i];
		union fg_bmsg m;
		int n = 0;
		while (n < CP_DRAIN_MAX && fg_ring_pop(ln->to_cp, &m)) {
			lanes_msg(e, ln, &m);
			n++;
		}
		more |= n == CP_DRAIN_MAX;
	}
	return more;
}

static bool lanes_empty(struct cp_engine *e)
{
	for (unsigned i = 0; i < e->b->n_lanes; i++)
		if (fg_ring_count(e->b->lanes[i].to_cp))
			return false;
	return true;
}

/* ---- the wake-up (boundary.h, struct fg_wake) -------------------------------
 *
 *   sleeping --eventfd read completes--> draining
 *   draining --budget hit--------------> yielding (a NOP completion comes back)
 *   yielding --NOP completes-----------> draining
 *   draining --prepare, rings empty----> sleeping (waiting = 1, read in flight)
 *   draining --prepare, ring not empty-> draining (cancel, drain again)
 *
 * The eventfd read is always in flight while the engine runs: a wake-up
 * that comes while we drain completes it at once and costs one empty
 * drain. Yielding keeps the loop fair under a flood: the TLS connections
 * and the operator get their completions between two budgets. */
static void wake_arm(struct cp_engine *e);

static void wake_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	(void)l;
	(void)flags;
	struct cp_engine *e = cp_container_of(op, struct cp_engine, wake_op);
	e->wake_armed = false;
	if (e->stopping || res == -ECANCELED)
		return;
	if (res < 0) {
		/* Never expected (a blocking eventfd read): say so once per kind
		 * and keep going; the lcores keep the messages for the next read. */
		if (e->st.wake_errors++ == 0)
			cp_err("engine: lanes wake-up read: %s", strerror(-res));
	} else {
		e->st.wakes++;
	}
	lanes_service(e);
	wake_arm(e);
}

static void wake_arm(struct cp_engine *e)
{
	if (e->wake_armed || e->stopping)
		return;
	if (cp_loop_read(e->loop, &e->wake_op, e->b->wake.fd, &e->wake_val, sizeof(e->wake_val)) < 0) {
		/* The SQ is broken: the loop itself is failing. */
		cp_err("engine: cannot queue the lanes wake-up read");
		return;
	}
	e->wake_armed = true;
}

static void kick_done(struct cp_loop *l, struct cp_op *op, int res, uint32_t flags)
{
	(void)l;
	(void)res;
	(void)flags;
	struct cp_engine *e = cp_container_of(op, struct cp_engine, kick_op);
	e->kick_armed = false;
	if (!e->stopping)
		lanes_service(e);
}

/* Drain until every ring is empty with the sleep announced, or until a
 * budget runs out (then come back through a NOP completion, without
 * announcing the sleep: no producer needs to wake us). */
static void lanes_service(struct cp_engine *e)
{
	for (;;) {
		if (lanes_drain(e)) {
			if (!e->kick_armed) {
				struct io_uring_sqe *sqe = cp_loop_sqe(e->loop, &e->kick_op);
				if (!sqe) {
					cp_err("engine: cannot queue the lanes drain continuation");
					return;
				}
				io_uring_prep_nop(sqe);
				e->kick_armed = true;
				e->st.wake_yields++;
			}
			return;
		}
		fg_wake_prepare(&e->b->wake);
		if (lanes_empty(e))
			return; /* asleep: the next push on an empty ring writes the eventfd */
		fg_wake_cancel(&e->b->wake);
		e->st.wake_rechecks++;
	}
}

static inline void cp_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* Poll the lanes, instead of sleeping, while an lcore owes a TLS peer its
 * answer (e->outstanding): an lcore answers in a few microseconds, and a
 * sleep costs a wake-up of this thread (on a VM, of its virtual CPU) on top.
 * It drains what comes and keeps polling until every owed answer is in,
 * so that the answers of one batch (a WebSocket peer's three contributions,
 * their status frames and the seed they resolve) leave in one flush: one
 * TLS record and one send where a flush per arrival cost one each, as in
 * local mode, which answers a batch at its end. Bounded by [dataplane]
 * answer_spin_us per call; stops early when a completion is ready (new
 * input: the loop goes on). Call at the server's batch end, before its
 * flush: the answers and seeds it takes leave in that flush. It submits
 * nothing itself (the completions of a batch's own SQEs, such as the
 * receive cancel of an HTTP request now waiting for its outcome, would end
 * it at once). Returns true only when it drained something and ran out of
 * budget with answers still owed (cp_engine.h): a spin that ended with
 * every answer in, or on new input, leaves the submit to the loop, one
 * io_uring_enter per batch as in local mode instead of two. */
bool cp_engine_spin(struct cp_engine *e)
{
	if (!e->lanes_mode || !e->outstanding || !e->cfg->answer_spin_us || e->kick_armed || e->stopping)
		return false;
	/* The newest request is older than a millisecond: the lcore is busy
	 * or its answer was lost (lanes_sweep); sleep and be woken. */
	uint64_t t0 = cp_now_ns(), budget = (uint64_t)e->cfg->answer_spin_us * 1000u;
	if (t0 - e->last_req_ns > 1000000u) {
		lanes_service(e); /* lanes_submit took the sleep flag back: announce it */
		return false;
	}
	/* No eventfd write while we look ourselves (fg_wake: we are awake). */
	fg_wake_cancel(&e->b->wake);
	bool got = false;
	unsigned i = 0;
	uint64_t work_ns = 0; /* answering what came (TLS writes): not waiting */
	enum cp_spin_end end;
	for (;;) {
		if (!lanes_empty(e)) {
			uint64_t w0 = cp_now_ns();
			(void)lanes_drain(e); /* a drain budget hit: drained again below */
			work_ns += cp_now_ns() - w0;
			got = true;
			if (!e->outstanding) {
				end = CP_SPIN_ANSWERED;
				break;
			}
		} else {
			cp_cpu_relax();
		}
		/* the budget holds while messages keep coming too (an lcore
		 * under UDP load while an answer is late): the loop goes on */
		if (cp_loop_has_cqe(e->loop)) {
			end = CP_SPIN_INPUT;
			break;
		}
		if ((++i & 15) == 0 && cp_now_ns() - t0 >= budget) {
			end = CP_SPIN_BUDGET;
			break;
		}
	}
	e->st.spins++;
	e->st.spin_end[end]++;
	e->st.spin_ns += cp_now_ns() - t0 - work_ns;
	if (got)
		e->st.spin_hits++;
	lanes_service(e); /* drain, announce the sleep again */
	return got && end == CP_SPIN_BUDGET && e->outstanding;
}

void cp_engine_watch(struct cp_engine *e, const uint64_t mask[FG_WATCH_WORDS])
{
	if (e->lanes_mode)
		fg_watch_set(&e->b->watch, mask);
}

/* ---- both ------------------------------------------------------------------ */

/* The one place a malformed frame is counted, under its reason (either sign). */
static void count_malformed(struct cp_engine *e, int reason)
{
	unsigned r = (unsigned)(reason < 0 ? -reason : reason);
	e->st.malformed++;
	e->st.reason[r < FG_R__COUNT ? r : 0]++;
}

void cp_engine_count_malformed(struct cp_engine *e, int reason)
{
	e->st.frames++;
	count_malformed(e, reason);
}

int cp_engine_submit(struct cp_engine *e, const struct fg_frame *f, uint64_t cookie)
{
	return cp_engine_submit_from(e, f, FG_LAYER_UNBOUND, NULL, cookie);
}

int cp_engine_submit_from(struct cp_engine *e, const struct fg_frame *f, int32_t bound, const struct fg_bm_src *from,
			  uint64_t cookie)
{
	e->st.frames++;
	return e->lanes_mode ? lanes_submit(e, f, bound, from, cookie) : local_submit(e, f, bound, from, cookie);
}

static void engine_tick(struct cp_loop *l, struct cp_timer *t)
{
	struct cp_engine *e = cp_container_of(t, struct cp_engine, tick);
	if (e->stopping)
		return;
	if (e->lanes_mode) {
		lanes_flush_push(e);
		/* deferred messages (boundary.h): nobody woke us for them */
		if (!e->kick_armed)
			lanes_service(e);
		uint64_t now = cp_now_ns();
		lanes_sweep(e, now);
		points_udp_tick(e, now);
	} else
		local_expire(e);
	if (cp_timer_start(l, &e->tick, e->tick_ns, engine_tick) < 0)
		cp_err("engine: cannot re-arm the tick timer");
}

int cp_engine_init(struct cp_engine *e, struct cp_loop *l, const struct fg_config *cfg, struct fg_boundary *b,
		   const struct cp_engine_ops *ops, void *arg)
{
	memset(e, 0, sizeof(*e));
	e->loop = l;
	e->cfg = cfg;
	e->bands = cfg->bands;
	e->bands.n_layers = cfg->layers;
	fg_config_limits(cfg, &e->limits);
	e->ops = *ops;
	e->arg = arg;
	fg_lines_init(&e->lines, cfg->line_initial, &cfg->policy, cp_now_ns());
	e->audit_fact = FG_AUDIT_OFF;
	cp_epoch_guard_init(&e->guard, cfg);
	cp_points_init(&e->points, cfg, b != NULL); /* UDP reaches the points only through the lanes */
	e->senders.key = cp_key_draw(e);
	e->n_endings = CP_ENGINE_ENDINGS;
	e->endings = calloc(e->n_endings, sizeof(*e->endings));
	if (!e->endings)
		return -ENOMEM;
	if (b) {
		if (b->n_lanes == 0 || !b->lanes || !b->wake.has_fd) {
			cp_engine_fini(e);
			return -EINVAL;
		}
		e->b = b;
		e->lanes_mode = true;
		e->reqs = calloc(CP_ENGINE_REQS, sizeof(*e->reqs));
		e->flush_pending = calloc(b->n_lanes, sizeof(*e->flush_pending));
		if (!e->reqs || !e->flush_pending) {
			cp_engine_fini(e);
			return -ENOMEM;
		}
		e->tick_ns = CP_TICK_LANES_NS;
		e->wake_op.fn = wake_done;
		e->kick_op.fn = kick_done;
	} else {
		struct fg_slots_cfg scfg;
		fg_config_slots(cfg, 1, &scfg);
		size_t sz = fg_slots_mem_size(&scfg);
		/* populated up front (cp_mem.h; the table is 100+ MB and every
		 * contribution lands on cold memory: huge pages when the kernel
		 * gives them save a TLB miss per 4 KiB copied) */
		e->slots_mem = cp_mem_map_populated(sz, &e->slots_len);
		if (!e->slots_mem) {
			cp_engine_fini(e);
			return -ENOMEM;
		}
		int r = fg_slots_init(&e->slots, e->slots_mem, sz, &scfg);
		if (r < 0) {
			cp_engine_fini(e);
			return r;
		}
		e->tick_ns = CP_TICK_LOCAL_NS;
	}
	cp_engine_publish(e);
	int r = cp_timer_start(l, &e->tick, e->tick_ns, engine_tick);
	if (r < 0) {
		cp_engine_fini(e);
		return r;
	}
	if (e->lanes_mode) {
		wake_arm(e);
		lanes_service(e); /* announce the first sleep (or take what is already there) */
	}
	return 0;
}

void cp_engine_fini(struct cp_engine *e)
{
	e->stopping = true;
	/* The read completes with -ECANCELED if the loop runs again (wake_done
	 * then returns at once); otherwise cp_loop_fini drops it. */
	if (e->wake_armed && cp_loop_cancel(e->loop, &cp_op_ignore, &e->wake_op) < 0)
		cp_warn("engine: cannot cancel the lanes wake-up read");
	if (e->endings)
		for (uint32_t i = 0; i < e->n_endings; i++)
			free(e->endings[i].frame);
	free(e->endings);
	free(e->reqs);
	free(e->flush_pending);
	e->flush_pending = NULL;
	cp_mem_unmap(e->slots_mem, e->slots_len);
	e->endings = NULL;
	e->reqs = NULL;
	e->slots_mem = NULL;
}

/* fleet_run.c - the fanofleet run engine: issues tokens at a rate, sends
 * each slot's Pair X contributions over the chosen ingress, sends the
 * coordinator's canonical reports, receives resolved seeds (UDP consumer,
 * WSS subscription), checks every one bit for bit, measures jump delivery
 * latency (last contribution sent -> resolved seed received) per ingress,
 * prints progress once per second and a summary, writes JSON.
 *
 * Who may call: fleet_main.c; everything runs on the calling thread in one
 * poll loop.
 *
 * Ingress per contribution: by the --mix weights per layer, slot or station
 * (--assign), unless --station forces a station's ingress. Delivery paths:
 * the UDP consumer socket, the WSS subscription (?layers=all on the first
 * connection) and, with --pull, one long-poll GET /residual-seed/L/T per
 * slot; the first arrival is timed, every arrival is checked.
 *
 * Tokens and slots. Token t (token_seq = token_base + t) opens the slots
 * (token_seq, d) for d = 1 .. layers-1; slot d receives x_{d-1} on line 1,
 * attn_{d-1} on line 3 and ffn_{d-1} on line 5 (orientation +) in a
 * per-slot pseudo-random order, from up to three stations. In chain mode
 * (the default) a token's slot d+1 is only sent once slot d's resolved
 * seed arrived (or timed out): the way a pipeline waits for its input. In
 * burst mode all slots of a token are sent at once. `window` tokens are in
 * flight at a time.
 *
 * Timing (fleet_sched.c). --canon-delay-us holds each slot's canonical
 * report back (or, negative, its contributions), so the appliance sees the
 * chain a known time behind (or ahead of) the jump.
 *
 * The critical path (--critical-path, bench/critical; the rule is
 * fleet_crit.h's). Per layer the stations compute for their stage times:
 * x_l leaves at the layer's start, attn_l after a, ffn_l (the layer's last
 * contribution) after a + g + d, each reaching the appliance and the
 * coordinator one delay later (t_ffn for ffn_l: when it really left, see
 * crit_sent). With the chain alone the
 * coordinator relays for a relay time and the next ATTN station has the
 * canonical input one more delay later: t_canon = t_ffn + relay + delay
 * (the coordinator's canonical report for the audit reaches the appliance
 * then, whatever the gate decides). With jumps (FL_CRIT_JUMP) the gate
 * decision is taken when the status fanogate really sent for the layer's
 * last contribution arrives here (over UDP, WSS or HTTPS, at its real
 * arrival time): bitset 0x7f, fully resolved, not shadow, nothing awaited.
 * Passed: the hop is skipped and the next layer starts on the jumped seed,
 * one delay after it reached the consumer, however late (nothing to fall
 * back on). Not passed: the coordinator relays once it knows it must, at
 * max(t_canon, decision + relay + delay). No status for that contribution
 * by the slot timeout: the dispatcher decides to relay then. The next
 * layer's start is an event at that time (fire_events), and its
 * contributions' times count from it. A token's wall time runs from its
 * start to its last layer's input; a layer's saving is t_canon minus the
 * time the next layer started: negative (a cost) when the jumped seed came
 * after the canonical input would have, or the relay waited for the
 * decision. A token through the chain alone takes its wall time plus its
 * layers' savings.
 *
 * Checks. For each slot the engine knows the canonical x_d and the
 * contributions it actually sent. A resolved seed must equal the reduction
 * of what was sent, bit for bit ("wrong" otherwise). For the one slot with
 * an injected corruption, that reduction differs from the canonical chain
 * on purpose: seeing it differ is "divergence_seen"; if the resolved seed
 * equals the canonical chain anyway, something silently repaired or
 * ignored the corrupted contribution and that is counted as wrong. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <jansson.h>

#include "fg/slot.h"
#include "fleet_run.h"

#define ROLE_CANON 3u
#define TAG_PULL 0x8000u /* tag bit: the answer to a pull GET */
#define MAX_CONNS 64u
#define FL_UDP_GROUPS 16u /* fleet addressing: one sender set per 16 layers, so (stream, seq) keys stay unique per socket */
#define MAX_UDP ((FL_ROLES + 1) * FL_UDP_GROUPS * (1 + FL_UDP_NODES)) /* per group, per target appliance */
#define NAME_SLOTS 40u

static const uint8_t role_line[FL_ROLES] = { FL_LINE_X, FL_LINE_ATTN, FL_LINE_FFN };
static const char *const role_name[FL_ROLES] = { "x", "attn", "ffn" };

const char *fl_ingress_name(unsigned cls)
{
	static const char *const n[FL_CLS_COUNT] = { "udp", "wss", "https", "mixed" };
	return cls < FL_CLS_COUNT ? n[cls] : "?";
}

const char *fl_path_name(unsigned p)
{
	static const char *const n[FL_PATH_COUNT] = { "udp-consumer", "wss-push", "https-pull" };
	return p < FL_PATH_COUNT ? n[p] : "?";
}

struct slot {
	uint8_t cls;
	uint8_t to_send;  /* contributions not yet handed to the transport */
	uint8_t ing[FL_ROLES];
	bool opened, corrupted, resolved, timed_out, dropped;
	uint8_t deliveries;
	uint64_t t_open, t_last_sent, t_last_begin; /* fl_udp_sent_fn's two clocks */
	/* critical path (fleet_crit.h): the layer's start and its rule's facts
	 * (t_seed there: crit.t_seed); the line of the contribution sent last,
	 * whose status the gate reads; queued: the next layer's start is an
	 * event; advanced: it fired */
	uint64_t t_in, t_canon;
	struct fl_crit_layer crit;
	uint8_t last_line;
	bool queued, advanced, jumped, stalled;
};

struct token {
	bool live;
	uint64_t idx;
	float *x;    /* x_0 .. x_{L-1}, hidden floats each */
	float *attn; /* attn_0 .. attn_{L-2} */
	float *ffn;
	struct slot *slots; /* index d - 1 */
	unsigned done, next;
	uint64_t t_start;   /* critical path: the token's first layer began */
};

/* Critical path, per token (tokens in order of issue). */
struct crit_tok {
	uint64_t wall_ns;     /* start -> the last layer's input */
	uint64_t compute_ns;  /* sum of its stage times */
	int64_t saving_ns;    /* sum of its layers' savings (t_canon - start of the next layer); < 0: a cost */
	uint32_t in_time;     /* layers whose seed was at the next worker before t_canon */
	uint32_t gate;        /* layers whose gate passed */
	uint32_t jumped;      /* layers whose next layer started on the jumped seed */
};

enum ev_kind { EV_SEND = 1, EV_ADVANCE };

struct name_count {
	char name[32];
	uint64_t n;
};

struct engine {
	const struct fl_run_opts *o;
	struct fg_bands bands;
	struct fg_seed_limits lim;
	uint32_t n_slots; /* per token: layers - 1 */
	int corrupt_layer;
	struct token *tok;
	uint64_t issued, retired;
	/* transports */
	struct fl_udp_sender *udp[MAX_UDP]; /* [role + (FL_ROLES + 1) * (group + groups * node)], + canonical */
	unsigned n_udp, udp_groups;
	int16_t wss_of_layer[256]; /* fleet addressing: index in wss[] bound to the layer, -1 none */
	struct fl_udp_consumer *cons;
	SSL_CTX *ssl;
	struct fl_conn *wss[MAX_CONNS];
	struct fl_conn *https[MAX_CONNS];
	struct fl_conn *pull[MAX_CONNS];
	uint32_t n_wss, n_https, n_pull;
	uint64_t pull_sent, pull_ok, pull_other;
	bool avail[FL_IN_COUNT];
	double cum[FL_IN_COUNT]; /* cumulative normalised weights */
	/* results */
	struct fl_lat lat[FL_CLS_COUNT];
	struct fl_lat lat_path[FL_PATH_COUNT];
	uint64_t slots_cls[FL_CLS_COUNT], resolved_cls[FL_CLS_COUNT];
	uint64_t slots_opened, resolved, exact, wrong, divergence_seen, missing, dropped, late, unknown;
	uint64_t deliveries[FL_PATH_COUNT], dup_deliveries[FL_PATH_COUNT];
	uint64_t contributions[FL_IN_COUNT], canon_sent, send_errors;
	struct name_count outcomes[NAME_SLOTS];
	uint64_t facts_shadow, facts_resolved, facts_awaiting, facts_degraded, statuses[FL_IN_COUNT];
	uint64_t http_errors_json;
	char first_error[256];
	char corrupt_desc[200];
	uint32_t corrupt_index; /* the float actually flipped */
	FILE *samples;
	uint8_t *fbuf; /* frame encode buffer */
	float *tmp;
	uint64_t t0;
	struct fl_sched sched;  /* delayed sends, critical-path events */
	struct crit_tok *crit;  /* o->tokens entries (critical path) */
	uint64_t crit_layers, crit_in_time, crit_gate, crit_jumped, crit_done;
	uint64_t crit_no_status;     /* decided at the slot timeout: no status for the last contribution */
	uint64_t crit_late_decision; /* gate passed after the seed was at the next worker */
	uint64_t crit_stalled;       /* gate passed, no seed by the slot timeout */
	int64_t crit_save_jumped, crit_save_relayed; /* sums of the layers' savings, ns */
};

static volatile sig_atomic_t g_stop, g_drain;
static void on_signal(int sig) { (void)sig; g_stop = 1; }
static void on_drain(int sig) { (void)sig; g_drain = 1; }

void fl_run_opts_default(struct fl_run_opts *o)
{
	memset(o, 0, sizeof *o);
	o->tokens = 200;
	o->layers = 28;
	o->hidden = 1536;
	o->seed = 1;
	o->token_base = 1;
	o->mix[FL_IN_UDP] = o->mix[FL_IN_WSS] = o->mix[FL_IN_HTTPS] = 1.0;
	o->assign = FL_ASSIGN_LAYER;
	memset(o->station_ingress, -1, sizeof o->station_ingress);
	o->mode = FL_MODE_CHAIN;
	o->window = 8;
	o->canon = FL_CANON_DIGEST;
	o->canon_via = -1;
	o->corrupt_at = -1;
	o->corrupt_line = FL_LINE_ATTN;
	o->corrupt_layer = -1;
	o->corrupt_index = 7;
	/* the fleet's sender as measured (wire.md 2.1): a 200 ms check timer,
	 * a 200 ms age test, 5 resends */
	o->udp = (struct fl_udp_opts){ .mtu = 1472, .cwnd_init = 16, .cwnd_max = 256, .rto_ms = 200, .check_ms = 200,
				       .max_resends = 5, .rng = 1 };
	o->consumer_ack = FL_CACK_EACH;
	o->linger_ms = 2000;
	o->linger_quiet_ms = FL_LINGER_QUIET_MS;
	o->tls.timeout_ms = 5000;
	o->wss_conns = 2;
	o->https_conns = 4;
	o->subscribe = true;
	/* fanogate's default slot deadline (3 s) plus a delivery's flight */
	o->slot_timeout_ms = 3500;
}

__attribute__((format(printf, 2, 3))) static void note_error(struct engine *e, const char *fmt, ...)
{
	if (e->first_error[0] != 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->first_error, sizeof e->first_error, fmt, ap);
	va_end(ap);
}

static void count_name(struct engine *e, const char *name)
{
	for (unsigned i = 0; i < NAME_SLOTS; i++) {
		if (e->outcomes[i].name[0] == 0) {
			snprintf(e->outcomes[i].name, sizeof e->outcomes[i].name, "%s", name);
			e->outcomes[i].n = 1;
			return;
		}
		if (strcmp(e->outcomes[i].name, name) == 0) {
			e->outcomes[i].n++;
			return;
		}
	}
}

static uint64_t tag_of(uint64_t idx, unsigned d, unsigned role) { return (idx << 16) | ((uint64_t)d << 2) | role; }

static struct token *token_of(struct engine *e, uint64_t idx)
{
	struct token *t = &e->tok[idx % e->o->window];
	return t->live && t->idx == idx ? t : NULL;
}

static float *vec(float *base, unsigned i, uint32_t hidden) { return base + (size_t)i * hidden; }

/* ---- callbacks from the transports -------------------------------- */

static void on_sent(void *ctx, uint64_t tag, uint64_t t_begin, uint64_t now)
{
	struct engine *e = ctx;
	unsigned role = tag & 3u, d = (tag >> 2) & 0x3FFFu;
	struct token *t = token_of(e, tag >> 16);
	if (role == ROLE_CANON || !t || d == 0 || d > e->n_slots)
		return;
	struct slot *s = &t->slots[d - 1];
	if (s->to_send > 0 && --s->to_send == 0) {
		s->t_last_sent = now;
		s->t_last_begin = t_begin;
	}
}

static void crit_status(struct engine *e, uint32_t token_seq, unsigned d, int line, bool pass, uint64_t now);
static void crit_try(struct engine *e, struct token *t, unsigned d);

static void on_status(void *ctx, const struct fg_status *st, enum fl_ingress via)
{
	struct engine *e = ctx;
	/* the fleet's gate (wire.md 5): skip the canonical hop only on a full
	 * bitset, not in shadow, resolved, nothing awaited */
	bool pass = st->bitset == 0x7F && (st->facts & FG_FACT_RESOLVED) &&
		    !(st->facts & (FG_FACT_SHADOW | FG_FACT_AWAITING));
	crit_status(e, st->token_seq, st->dst_layer, st->line, pass, fl_now_ns());
	e->statuses[via]++;
	count_name(e, st->outcome < FG_O__COUNT ? fg_outcome_name(st->outcome) : "unknown_outcome");
	if (st->facts & FG_FACT_SHADOW)
		e->facts_shadow++;
	if (st->facts & FG_FACT_RESOLVED)
		e->facts_resolved++;
	if (st->facts & FG_FACT_AWAITING)
		e->facts_awaiting++;
	if (st->facts & FG_FACT_DEGRADED)
		e->facts_degraded++;
	if (st->reason != 0)
		note_error(e, "status reason %s (layer %u)", fg_reason_name(st->reason), (unsigned)st->dst_layer);
}

static void on_frame(void *ctx, const struct fg_frame *f, enum fl_path path, uint64_t now);

static void on_response(void *ctx, uint64_t tag, int status, const char *body, size_t len, uint64_t now)
{
	struct engine *e = ctx;
	if (tag & TAG_PULL) {
		struct fg_frame f;
		if (status == 200 && fg_frame_decode((const uint8_t *)body, len, FG_TRANSPORT_MESSAGE, &f) > 0) {
			e->pull_ok++;
			on_frame(e, &f, FL_PATH_HTTPS_PULL, now);
		} else {
			e->pull_other++;
		}
		return;
	}
	e->statuses[FL_IN_HTTPS]++;
	json_error_t je;
	json_t *j = json_loadb(body, len, 0, &je);
	if (!j) {
		e->http_errors_json++;
		char b[64];
		snprintf(b, sizeof b, "%.*s", (int)(len < 60 ? len : 60), body);
		note_error(e, "HTTPS answer not JSON: %s (status %d)", b, status);
		count_name(e, "http_not_json");
		return;
	}
	const char *oc = json_string_value(json_object_get(j, "outcome"));
	const char *err = json_string_value(json_object_get(j, "error"));
	count_name(e, oc ? oc : err ? err : (status >= 200 && status < 300) ? "ok_no_outcome" : "http_error");
	if (err && *err)
		note_error(e, "HTTPS error %s (status %d)", err, status);
	json_t *bs = json_object_get(j, "bitset"), *ln = json_object_get(j, "line");
	bool pass = json_is_integer(bs) && json_integer_value(bs) == 0x7F &&
		    json_is_true(json_object_get(j, "fully_resolved")) && !json_is_true(json_object_get(j, "shadow_mode")) &&
		    !json_is_true(json_object_get(j, "awaiting_resolution"));
	if (json_is_integer(json_object_get(j, "token_seq")) && json_is_integer(json_object_get(j, "dst_layer")))
		crit_status(e, (uint32_t)json_integer_value(json_object_get(j, "token_seq")),
			    (unsigned)json_integer_value(json_object_get(j, "dst_layer")),
			    json_is_integer(ln) ? (int)json_integer_value(ln) : -1, pass, now);
	if (json_is_true(json_object_get(j, "shadow_mode")))
		e->facts_shadow++;
	if (json_is_true(json_object_get(j, "fully_resolved")))
		e->facts_resolved++;
	if (json_is_true(json_object_get(j, "awaiting_resolution")))
		e->facts_awaiting++;
	json_decref(j);
}

static void slot_done(struct engine *e, struct token *t, unsigned d);

static void check_resolved(struct engine *e, const struct fg_resolved *r, enum fl_path path, uint64_t now)
{
	const struct fl_run_opts *o = e->o;
	uint64_t idx = (uint64_t)(uint32_t)(r->token_seq - o->token_base);
	struct token *t = token_of(e, idx);
	unsigned d = r->dst_layer;
	if (!t || d == 0 || d > e->n_slots || !t->slots[d - 1].opened) {
		if (idx < e->issued)
			e->late++;
		else
			e->unknown++;
		return;
	}
	struct slot *s = &t->slots[d - 1];
	uint32_t H = o->hidden;
	if (r->seq_len != 1 || r->start_pos != 0 || r->body_len != H * 4u) {
		e->wrong++;
		note_error(e, "resolved seed of layer %u has the wrong shape", d);
		return;
	}
	const float *canon = vec(t->x, d, H);
	/* What the appliance must have computed from what we actually sent. */
	const float *expect = canon;
	if (s->corrupted) {
		float *c = e->tmp;
		const float *in[FL_ROLES] = { vec(t->x, d - 1, H), vec(t->attn, d - 1, H), vec(t->ffn, d - 1, H) };
		memcpy(c, in[0], H * 4u);
		memcpy(c + H, in[1], H * 4u);
		memcpy(c + 2 * H, in[2], H * 4u);
		unsigned role = o->corrupt_line == FL_LINE_X ? 0 : o->corrupt_line == FL_LINE_ATTN ? 1 : 2;
		uint32_t bits;
		memcpy(&bits, &c[role * H + e->corrupt_index], 4);
		bits ^= 1u;
		memcpy(&c[role * H + e->corrupt_index], &bits, 4);
		fl_model_chain(c, c + H, c + 2 * H, H, c + 3 * H);
		expect = c + 3 * H;
	}
	/* Take the clock here, not at the top of the poll iteration: this
	 * seed may be the answer to a slot opened earlier in the same batch. */
	now = fl_now_ns();
	bool first = !s->resolved;
	s->deliveries++;
	e->deliveries[path]++;
	if (!first)
		e->dup_deliveries[path]++;
	if (memcmp(r->body, expect, H * 4u) != 0) {
		e->wrong++;
		uint32_t nd = 0;
		uint64_t maxulp = 0;
		for (uint32_t i = 0; i < H; i++) {
			float v;
			memcpy(&v, r->body + 4 * i, 4);
			uint64_t u = fl_ulp_distance(v, expect[i]);
			if (u) {
				nd++;
				if (u > maxulp)
					maxulp = u;
			}
		}
		if (!o->quiet)
			fprintf(stderr, "fleet: WRONG resolved seed token_seq=%u layer=%u via %s: %u floats differ, max %llu ULP\n",
				r->token_seq, d, fl_path_name(path), nd, (unsigned long long)maxulp);
		note_error(e, "wrong resolved seed (%s) token_seq %u layer %u", fl_path_name(path), r->token_seq, d);
	} else if (first) {
		e->exact++;
		if (s->corrupted && memcmp(r->body, canon, H * 4u) != 0) {
			e->divergence_seen++;
			if (!o->quiet)
				printf("fleet: injected corruption visible in resolved seed token_seq=%u layer=%u "
				       "(differs from the canonical chain, as expected)\n", r->token_seq, d);
		}
	}
	if (first) {
		s->resolved = true;
		s->crit.t_seed = now;
		e->resolved++;
		e->resolved_cls[s->cls]++;
		if (s->to_send == 0 && !s->timed_out) {
			uint64_t lat = now - s->t_last_sent;
			if (fl_lat_add(&e->lat[s->cls], lat) < 0 || fl_lat_add(&e->lat_path[path], lat) < 0)
				note_error(e, "out of memory for samples");
			if (e->samples)
				fprintf(e->samples, "%s %s %llu %llu\n", fl_ingress_name(s->cls), fl_path_name(path),
					(unsigned long long)lat, (unsigned long long)(now - s->t_last_begin));
		}
		if (!s->timed_out)
			slot_done(e, t, d);
	}
}

static void on_frame(void *ctx, const struct fg_frame *f, enum fl_path path, uint64_t now)
{
	struct engine *e = ctx;
	if (f->hdr.stream_id == FG_STREAM_STATUS) {
		struct fg_status st;
		if (fg_status_decode(f, &st) >= 0)
			on_status(e, &st, path == FL_PATH_WSS ? FL_IN_WSS : FL_IN_UDP);
		else
			e->unknown++;
		return;
	}
	enum fg_band band;
	uint16_t layer;
	struct fg_resolved r;
	if (fg_stream_classify(&e->bands, f->hdr.stream_id, &band, &layer) < 0 || band != FG_BAND_RESOLVED ||
	    fg_resolved_decode(f, layer, &e->lim, &r) < 0) {
		e->unknown++;
		return;
	}
	check_resolved(e, &r, path, now);
}

/* ---- sending --------------------------------------------------------- */

static unsigned pick_ingress(struct engine *e, uint64_t key)
{
	double u = (double)(fl_mix64(e->o->seed * 0x9E37u ^ key) >> 11) / 9007199254740992.0;
	for (unsigned i = 0; i < FL_IN_COUNT; i++)
		if (e->avail[i] && u < e->cum[i])
			return i;
	for (unsigned i = FL_IN_COUNT; i-- > 0;)
		if (e->avail[i])
			return i;
	return 0;
}

static unsigned ingress_for(struct engine *e, uint64_t idx, unsigned d, unsigned role)
{
	int8_t forced = e->o->station_ingress[role == 1 ? 1 : 0][(d - 1) & 31u];
	if (forced >= 0)
		return (unsigned)forced; /* checked available at set-up */
	switch (e->o->assign) {
	case FL_ASSIGN_SLOT:
		return pick_ingress(e, (idx << 8) | d);
	case FL_ASSIGN_STATION: /* x and ffn from the DOWN station, attn from ATTN */
		return pick_ingress(e, ((uint64_t)d << 1) | (role == 1 ? 1u : 0u));
	case FL_ASSIGN_LAYER:
	default:
		return pick_ingress(e, d);
	}
}

static struct fl_conn *least_backlog(struct fl_conn **c, uint32_t n)
{
	struct fl_conn *best = NULL;
	for (uint32_t i = 0; i < n; i++)
		if (c[i] && !fl_conn_is_dead(c[i]) && (!best || fl_conn_backlog(c[i]) < fl_conn_backlog(best)))
			best = c[i];
	return best;
}

static int send_frame(struct engine *e, unsigned ing, unsigned role, unsigned d, const uint8_t *buf, uint32_t len,
		      uint64_t tag, uint64_t now, bool canon)
{
	const struct fl_run_opts *o = e->o;
	int rc = -ENOTCONN;
	if (ing == FL_IN_UDP) {
		unsigned g = o->fleet_addr ? (d >> 4) % FL_UDP_GROUPS : 0;
		unsigned node = d < 32 ? o->udp_node_of[d] : 0; /* the appliance serving layer d */
		uint16_t port = o->fleet_addr && o->udp_layer_ports ? (uint16_t)(o->udp_layer_ports + d) : 0;
		rc = fl_udp_send_port(e->udp[role + (FL_ROLES + 1) * (g + e->udp_groups * node)], port, buf, len, tag,
				      now);
	} else if (ing == FL_IN_WSS) {
		struct fl_conn *c;
		if (o->fleet_addr) {
			/* the station's own connection, bound to its layer */
			c = d < 256 && e->wss_of_layer[d] >= 0 ? e->wss[e->wss_of_layer[d]] : NULL;
			if (c && fl_conn_is_dead(c))
				c = NULL;
		} else {
			c = e->wss[role % e->n_wss];
			if (c && fl_conn_is_dead(c))
				c = least_backlog(e->wss, e->n_wss);
		}
		if (c)
			rc = fl_ws_queue_frame(c, buf, len, tag);
	} else {
		struct fl_conn *c = least_backlog(e->https, e->n_https);
		char path[64];
		if (o->fleet_addr)
			snprintf(path, sizeof path, "/layers/%u/%s", d, canon ? "canonical" : "residual-seed");
		else
			snprintf(path, sizeof path, "%s", canon ? "/canonical" : "/residual-seed");
		if (c)
			rc = fl_https_post(c, path, buf, len, tag, now);
	}
	return rc;
}

/* The first float index at or after --corrupt-index whose flipped low bit
 * survives the canonical additions (a flip in a small addend can be
 * absorbed by rounding, and a corruption nobody could see proves nothing). */
static uint32_t visible_index(struct engine *e, const struct token *t, unsigned d, unsigned role)
{
	uint32_t H = e->o->hidden;
	const float *in[FL_ROLES] = { vec(t->x, d - 1, H), vec(t->attn, d - 1, H), vec(t->ffn, d - 1, H) };
	for (uint32_t k = 0; k < H; k++) {
		uint32_t i = (e->o->corrupt_index + k) % H;
		float v[FL_ROLES] = { in[0][i], in[1][i], in[2][i] };
		uint32_t bits;
		memcpy(&bits, &v[role], 4);
		bits ^= 1u;
		memcpy(&v[role], &bits, 4);
		float r = v[0] + v[1];
		r = r + v[2];
		float c = vec(t->x, d, H)[i];
		if (memcmp(&r, &c, 4) != 0)
			return i;
	}
	return e->o->corrupt_index;
}

/* Send a frame now, or at due (a copy waits in the schedule). */
static int dispatch(struct engine *e, unsigned ing, unsigned role, unsigned d, const uint8_t *buf, uint32_t len,
		    uint64_t tag, uint64_t now, bool canon, uint64_t due)
{
	if (due <= now)
		return send_frame(e, ing, role, d, buf, len, tag, now, canon);
	struct fl_event ev = { .due_ns = due, .kind = EV_SEND, .a = tag,
			       .b = ing | (canon ? 0x100u : 0u) | ((uint64_t)role << 16) | ((uint64_t)d << 24) };
	return fl_sched_push(&e->sched, &ev, buf, len);
}

/* A uniform draw in [lo, hi] us as ns, fixed by (seed, token, layer, k). */
static uint64_t draw_ns(const struct engine *e, uint64_t idx, unsigned d, unsigned k, uint32_t lo, uint32_t hi)
{
	if (hi <= lo)
		return (uint64_t)lo * 1000u;
	uint64_t h = fl_mix64(e->o->seed * 0x2545F4914F6CDD1Dull ^ (idx << 20) ^ ((uint64_t)d << 4) ^ k);
	return (uint64_t)lo * 1000u + h % ((uint64_t)(hi - lo) * 1000u + 1);
}

/* The coordinator's relay for (token, layer): a measured hop drawn from
 * relay_ns[], else uniform in [relay_lo_us, relay_hi_us]. */
static uint64_t relay_draw_ns(const struct engine *e, uint64_t idx, unsigned d)
{
	const struct fl_run_opts *o = e->o;
	if (o->n_relay)
		return o->relay_ns[fl_mix64(o->seed ^ 0x5EEDull ^ (idx << 20) ^ d) % o->n_relay];
	return draw_ns(e, idx, d, 7, o->relay_lo_us, o->relay_hi_us);
}

static void send_slot(struct engine *e, struct token *t, unsigned d, uint64_t now)
{
	const struct fl_run_opts *o = e->o;
	uint32_t H = o->hidden;
	struct slot *s = &t->slots[d - 1];
	uint32_t token_seq = o->token_base + (uint32_t)t->idx;
	s->opened = true;
	s->t_open = now;
	s->to_send = FL_ROLES;
	e->slots_opened++;
	const float *body[FL_ROLES] = { vec(t->x, d - 1, H), vec(t->attn, d - 1, H), vec(t->ffn, d - 1, H) };
	for (unsigned r = 0; r < FL_ROLES; r++)
		s->ing[r] = (uint8_t)ingress_for(e, t->idx, d, r);
	/* When each contribution and the report reach the appliance (the file's
	 * head comment, "Timing"). */
	uint64_t due[FL_ROLES] = { now, now, now }, canon_due = now;
	if (o->crit) {
		uint64_t net = (uint64_t)o->net_delay_us * 1000u, st[FL_ROLES];
		for (unsigned k = 0; k < FL_ROLES; k++)
			st[k] = draw_ns(e, t->idx, d, k, o->stage_lo_us[k], o->stage_hi_us[k]);
		due[0] = now + net;                          /* x_l: the layer's input itself */
		due[1] = now + st[0] + net;                  /* attn_l after a */
		due[2] = now + st[0] + st[1] + st[2] + net;  /* ffn_l after a + g + d */
		s->t_in = now;
		s->crit = (struct fl_crit_layer){ .t_ffn = due[2], .relay_ns = relay_draw_ns(e, t->idx, d),
						  .net_ns = net };
		s->t_canon = fl_crit_canon_ns(&s->crit);
		canon_due = s->t_canon;                      /* the coordinator reports as it relays */
		e->crit[t->idx].compute_ns += st[0] + st[1] + st[2];
		/* the chain alone: the next layer starts on the relay, no gate */
		if (o->crit == FL_CRIT_CANONICAL)
			crit_try(e, t, d);
	} else if (o->canon_delay_us > 0) {
		canon_due = now + (uint64_t)o->canon_delay_us * 1000u;
	} else if (o->canon_delay_us < 0) {
		for (unsigned k = 0; k < FL_ROLES; k++)
			due[k] = now + (uint64_t)(-o->canon_delay_us) * 1000u;
	}
	s->cls = (s->ing[0] == s->ing[1] && s->ing[1] == s->ing[2]) ? s->ing[0] : FL_CLS_MIXED;
	e->slots_cls[s->cls]++;
	/* A per-slot order: arrival order must not matter to the appliance. */
	unsigned order[FL_ROLES] = { 0, 1, 2 };
	uint64_t h = fl_mix64(o->seed ^ tag_of(t->idx, d, 0));
	for (unsigned i = FL_ROLES - 1; i > 0; i--) {
		unsigned j = (unsigned)(h % (i + 1));
		h /= (i + 1);
		unsigned x = order[i];
		order[i] = order[j];
		order[j] = x;
	}
	/* the contribution that leaves last (a tie: the later in the order),
	 * whose status the fleet's gate reads */
	unsigned last = order[0];
	for (unsigned k = 1; k < FL_ROLES; k++)
		if (due[order[k]] >= due[last])
			last = order[k];
	s->last_line = role_line[last];
	for (unsigned k = 0; k < FL_ROLES; k++) {
		unsigned r = order[k];
		const float *b = body[r];
		if (o->corrupt_at >= 0 && (uint64_t)o->corrupt_at == t->idx && (int)d == e->corrupt_layer &&
		    role_line[r] == o->corrupt_line) {
			memcpy(e->tmp, b, H * 4u);
			e->corrupt_index = visible_index(e, t, d, r);
			uint32_t bits;
			memcpy(&bits, &e->tmp[e->corrupt_index], 4);
			bits ^= 1u; /* the lowest mantissa bit of one float */
			memcpy(&e->tmp[e->corrupt_index], &bits, 4);
			b = e->tmp;
			s->corrupted = true;
			snprintf(e->corrupt_desc, sizeof e->corrupt_desc,
				 "token_seq=%u dst_layer=%u line=%u (%s) float %u low bit flipped, sent via %s",
				 token_seq, d, o->corrupt_line, role_name[r], e->corrupt_index, fl_ingress_name(s->ing[r]));
			if (!o->quiet)
				printf("fleet: injecting a corrupted contribution: %s\n", e->corrupt_desc);
		}
		struct fg_seed sd = {
			.token_seq = token_seq, .dst_layer = (uint16_t)d, .line = role_line[r], .orientation = 0,
			.start_pos = 0, .seq_len = 1, .body = (const uint8_t *)b, .body_len = H * 4u,
		};
		ssize_t n = fg_seed_encode(&e->bands, &sd, e->fbuf, FG_HDR_LEN + FG_SEED_PREFIX_LEN + H * 4u);
		if (n > 0 && o->fleet_addr) /* the fleet's dispatcher: dst_layer & 0x0F in the stream */
			fg_put_be16(e->fbuf, (uint16_t)(e->bands.seed_base + (d & 0x0Fu)));
		int rc = n < 0 ? (int)n
			       : dispatch(e, s->ing[r], r, d, e->fbuf, (uint32_t)n, tag_of(t->idx, d, r), now, false, due[r]);
		if (rc < 0) {
			/* Never sent: the slot cannot resolve; it will time out. */
			e->send_errors++;
			s->dropped = true;
			note_error(e, "sending a contribution over %s failed (%s)", fl_ingress_name(s->ing[r]), strerror(-rc));
		} else {
			e->contributions[s->ing[r]]++;
		}
	}
	if (s->dropped)
		e->dropped++;
	if (e->n_pull > 0) {
		/* Long poll: the appliance holds the GET until the slot resolves
		 * (or its deadline passes). */
		char path[64];
		if (o->fleet_addr)
			snprintf(path, sizeof path, "/layers/%u/residual-seed/%u", d, token_seq);
		else
			snprintf(path, sizeof path, "/residual-seed/%u/%u", d, token_seq);
		struct fl_conn *c = least_backlog(e->pull, e->n_pull);
		if (c && fl_https_get(c, path, tag_of(t->idx, d, ROLE_CANON) | TAG_PULL, now) == 0)
			e->pull_sent++;
	}
	if (o->canon == FL_CANON_NONE)
		return;
	/* The coordinator's canonical report for the shadow audit. */
	int via = o->canon_via >= 0 ? o->canon_via : e->avail[FL_IN_WSS] ? FL_IN_WSS : e->avail[FL_IN_HTTPS] ? FL_IN_HTTPS : FL_IN_UDP;
	const float *cx = vec(t->x, d, H);
	struct fg_canon c = { .token_seq = token_seq, .dst_layer = (uint16_t)d, .start_pos = 0, .seq_len = 1 };
	if (o->canon == FL_CANON_FULL) {
		c.kind = FG_CANON_FULL;
		c.body = (const uint8_t *)cx;
		c.body_len = H * 4u;
	} else {
		c.kind = FG_CANON_DIGEST;
		c.digest = fg_fingerprint(cx, H * 4u);
	}
	ssize_t n = fg_canon_encode(&e->bands, &c, e->fbuf, FG_HDR_LEN + FG_SEED_PREFIX_LEN + H * 4u);
	if (n > 0 && o->fleet_addr)
		fg_put_be16(e->fbuf, (uint16_t)(e->bands.canonical_base + (d & 0x0Fu)));
	if (n < 0 || dispatch(e, (unsigned)via, ROLE_CANON, d, e->fbuf, (uint32_t)n, tag_of(t->idx, d, ROLE_CANON), now,
			      true, canon_due) < 0) {
		e->send_errors++;
		note_error(e, "sending a canonical report over %s failed", fl_ingress_name((unsigned)via));
	} else {
		e->canon_sent++;
	}
}

static void token_retire(struct engine *e, struct token *t)
{
	t->live = false;
	e->retired++;
}

static void slot_done(struct engine *e, struct token *t, unsigned d)
{
	t->done++;
	if (e->o->crit) {
		/* the next layer starts on a timed event (crit_try), not here */
		struct slot *s = &t->slots[d - 1];
		if (s->timed_out) {
			s->crit.seed_gone = true;
			s->crit.t_gone = fl_now_ns();
		}
		crit_try(e, t, d);
		if (t->done == e->n_slots && t->next > e->n_slots)
			token_retire(e, t);
		return;
	}
	if (e->o->mode == FL_MODE_CHAIN && d == t->next && d < e->n_slots) {
		t->next = d + 1;
		send_slot(e, t, d + 1, fl_now_ns());
	}
	if (t->done == e->n_slots)
		token_retire(e, t);
}

static void token_start(struct engine *e, uint64_t now)
{
	const struct fl_run_opts *o = e->o;
	uint32_t H = o->hidden;
	struct token *t = &e->tok[e->issued % o->window];
	t->live = true;
	t->idx = e->issued++;
	t->done = 0;
	t->t_start = now;
	memset(t->slots, 0, e->n_slots * sizeof *t->slots);
	fl_model_gen(o->seed, t->idx, 0, FL_KIND_X0, H, t->x);
	for (unsigned l = 0; l + 1 < o->layers; l++) {
		fl_model_gen(o->seed, t->idx, l, FL_KIND_ATTN, H, vec(t->attn, l, H));
		fl_model_gen(o->seed, t->idx, l, FL_KIND_FFN, H, vec(t->ffn, l, H));
		fl_model_chain(vec(t->x, l, H), vec(t->attn, l, H), vec(t->ffn, l, H), H, vec(t->x, l + 1, H));
	}
	if (o->mode == FL_MODE_CHAIN || o->crit) {
		t->next = 1;
		send_slot(e, t, 1, now);
	} else {
		for (unsigned d = 1; d <= e->n_slots; d++)
			send_slot(e, t, d, now);
	}
}

/* ---- the critical path ------------------------------------------------- */

/* The status fanogate sent for a contribution to (token_seq, d) of `line`
 * (-1: none named) arrived at now: when it answers the layer's last
 * contribution it is the gate decision (the first such status only). */
static void crit_status(struct engine *e, uint32_t token_seq, unsigned d, int line, bool pass, uint64_t now)
{
	if (e->o->crit != FL_CRIT_JUMP)
		return;
	struct token *t = token_of(e, (uint64_t)(uint32_t)(token_seq - e->o->token_base));
	if (!t || d == 0 || d > e->n_slots)
		return;
	struct slot *s = &t->slots[d - 1];
	if (!s->opened || s->crit.decided || line != (int)s->last_line)
		return;
	s->crit.decided = true;
	s->crit.gate = pass;
	s->crit.t_decision = now;
	crit_try(e, t, d);
}

/* Once layer d's facts fix the next layer's start (fleet_crit.h), queue it
 * as an event at that time. Called on every new fact: the decision, the
 * seed, the slot's timeout. */
static void crit_try(struct engine *e, struct token *t, unsigned d)
{
	struct slot *s = &t->slots[d - 1];
	struct fl_crit_start st;
	if (s->queued || fl_crit_start(e->o->crit, &s->crit, &st) < 0)
		return;
	s->queued = true;
	s->stalled = st.stalled;
	if (st.late_decision)
		e->crit_late_decision++;
	struct fl_event ev = { .due_ns = st.at, .kind = EV_ADVANCE, .a = t->idx, .b = d | (st.jump ? 1u << 16 : 0u) };
	if (fl_sched_push(&e->sched, &ev, NULL, 0) < 0)
		note_error(e, "out of memory for events");
}

/* Layer d's input reached the next worker at `at` (jump or canonical). */
static void crit_advance(struct engine *e, uint64_t idx, unsigned d, bool jump, uint64_t at)
{
	struct token *t = token_of(e, idx);
	if (!t || d == 0 || d > e->n_slots)
		return;
	struct slot *s = &t->slots[d - 1];
	if (s->advanced)
		return;
	s->advanced = true;
	s->jumped = jump;
	struct crit_tok *ct = &e->crit[idx];
	int64_t saving = (int64_t)s->t_canon - (int64_t)at; /* < 0: a cost */
	e->crit_layers++;
	ct->saving_ns += saving;
	if (jump) {
		e->crit_jumped++;
		ct->jumped++;
		e->crit_save_jumped += saving;
	} else {
		e->crit_save_relayed += saving;
	}
	if (s->crit.decided && s->crit.gate) {
		e->crit_gate++;
		ct->gate++;
	}
	if (s->stalled)
		e->crit_stalled++;
	/* in time: the seed was at the next worker before the chain's input,
	 * whatever the gate made of it */
	if (s->crit.t_seed && s->crit.t_seed + s->crit.net_ns < s->t_canon) {
		e->crit_in_time++;
		ct->in_time++;
	}
	if (d < e->n_slots) {
		t->next = d + 1;
		send_slot(e, t, d + 1, at);
		return;
	}
	t->next = d + 1;
	ct->wall_ns = at - t->t_start;
	e->crit_done++;
	if (t->done == e->n_slots)
		token_retire(e, t);
}

/* The layer's last contribution really leaves now, a little after its
 * modelled time (this loop wakes late by the host's timer slack and
 * scheduling). Both sides of the comparison count from this instant: the
 * chain's relay starts when ffn_l reaches the coordinator, and the jumped
 * seed's latency runs from when it reached the appliance. Else the chain
 * alone, which is all model, would gain the loop's lateness on every layer. */
static void crit_sent(struct engine *e, uint64_t idx, unsigned d, unsigned role, uint64_t now)
{
	if (e->o->crit != FL_CRIT_JUMP)
		return;
	struct token *t = token_of(e, idx);
	if (!t || d < 1 || d > e->n_slots)
		return;
	struct slot *s = &t->slots[d - 1];
	if (!s->opened || role_line[role] != s->last_line || now <= s->crit.t_ffn)
		return;
	s->crit.t_ffn = now;
	s->t_canon = fl_crit_canon_ns(&s->crit);
}

/* Fire every event due: delayed sends and critical-path inputs. */
static void fire_events(struct engine *e)
{
	struct fl_event ev;
	while (fl_sched_pop(&e->sched, fl_now_ns(), &ev)) {
		if (ev.kind == EV_SEND) {
			unsigned ing = (unsigned)(ev.b & 0xFFu), role = (unsigned)((ev.b >> 16) & 0xFFu);
			unsigned d = (unsigned)(ev.b >> 24);
			bool canon = ev.b & 0x100u;
			uint64_t sent_at = fl_now_ns();
			if (!canon)
				crit_sent(e, ev.a >> 16, d, role, sent_at);
			if (send_frame(e, ing, role, d, ev.buf, ev.len, ev.a, sent_at, canon) < 0) {
				e->send_errors++;
				note_error(e, "sending a %s over %s failed", canon ? "canonical report" : "contribution",
					   fl_ingress_name(ing));
				struct token *t = token_of(e, ev.a >> 16);
				if (!canon && t && d >= 1 && d <= e->n_slots && !t->slots[d - 1].dropped) {
					t->slots[d - 1].dropped = true;
					e->dropped++;
				}
			}
		} else if (ev.kind == EV_ADVANCE) {
			crit_advance(e, ev.a, (unsigned)(ev.b & 0xFFFFu), (ev.b >> 16) & 1u, ev.due_ns);
		}
		free(ev.buf);
	}
}

static void check_timeouts(struct engine *e, uint64_t now)
{
	uint64_t to = (uint64_t)e->o->slot_timeout_ms * 1000000ull;
	for (uint32_t w = 0; w < e->o->window; w++) {
		struct token *t = &e->tok[w];
		if (!t->live)
			continue;
		for (unsigned d = 1; d <= e->n_slots && t->live; d++) {
			struct slot *s = &t->slots[d - 1];
			/* t_open may be later than now: a slot opened by chain
			 * progress earlier in this very scan. */
			if (e->o->crit == FL_CRIT_JUMP && s->opened && !s->crit.decided && now > s->t_open &&
			    now - s->t_open > to) {
				/* no status for the last contribution: the
				 * dispatcher's deadline, it relays */
				s->crit.decided = true;
				s->crit.t_decision = now;
				e->crit_no_status++;
				crit_try(e, t, d);
			}
			if (s->opened && !s->resolved && !s->timed_out && now > s->t_open && now - s->t_open > to) {
				s->timed_out = true;
				e->missing++;
				if (!e->o->quiet && e->missing <= 5)
					fprintf(stderr, "fleet: no resolved seed for token_seq=%u layer=%u within %u ms (ingress %s)\n",
						e->o->token_base + (uint32_t)t->idx, d, e->o->slot_timeout_ms,
						fl_ingress_name(s->cls));
				slot_done(e, t, d);
			}
		}
	}
}

/* ---- set-up ------------------------------------------------------------ */

static int setup(struct engine *e)
{
	const struct fl_run_opts *o = e->o;
	char err[512];
	struct fl_conn_cb cb = { .on_frame = on_frame, .on_sent = on_sent, .on_response = on_response, .ctx = e };
	for (unsigned l = 0; l < 256; l++)
		e->wss_of_layer[l] = -1;
	/* The critical path's sends are timed events: wake for them without
	 * the default 50 us of timer slack (best effort: a refusal only makes
	 * them later, and crit_sent counts from when they really leave). */
	if (o->crit)
		(void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	if (o->have_udp) {
		unsigned groups = o->fleet_addr ? (o->layers + 15u) / 16u : 1;
		if (groups > FL_UDP_GROUPS)
			groups = FL_UDP_GROUPS;
		e->udp_groups = groups;
		e->n_udp = (FL_ROLES + 1) * groups * (1 + o->n_udp_nodes);
		for (unsigned r = 0; r < e->n_udp; r++) {
			struct fl_udp_opts u = o->udp;
			unsigned node = r / ((FL_ROLES + 1) * groups); /* 0: --udp, k: --udp-node k */
			u.rng = fl_mix64(o->seed + r + 1);
			e->udp[r] = fl_udp_sender_new(node ? &o->udp_node[node - 1] : &o->udp_dst,
						      node ? o->udp_node_len[node - 1] : o->udp_dlen,
						      o->have_udp_bind ? &o->udp_bind : NULL, o->udp_blen, &u, on_sent,
						      on_status, e);
			if (!e->udp[r]) {
				fprintf(stderr, "fleet: UDP sender: %s\n", strerror(errno));
				return -1;
			}
		}
		e->avail[FL_IN_UDP] = o->mix[FL_IN_UDP] > 0;
	}
	if (o->have_consumer) {
		e->cons = fl_udp_consumer_new(&o->consumer, o->consumer_len, o->udp.mtu, o->consumer_ack, on_frame, e);
		if (!e->cons) {
			fprintf(stderr, "fleet: UDP consumer bind: %s\n", strerror(errno));
			return -1;
		}
	}
	if (o->have_tls) {
		e->ssl = fl_tls_ctx_new(&o->tls, err, sizeof err);
		if (!e->ssl) {
			fprintf(stderr, "fleet: %s\n", err);
			return -1;
		}
		uint32_t nw = o->mix[FL_IN_WSS] > 0 ? o->wss_conns : 0;
		if (nw == 0 && o->subscribe)
			nw = 1;
		/* Fleet addressing: connection 0 subscribes (when asked), then
		 * one connection per destination layer 1..layers-1, bound to it. */
		if (o->fleet_addr)
			nw = (o->subscribe ? 1u : 0u) + (o->mix[FL_IN_WSS] > 0 ? (uint32_t)o->layers - 1u : 0u);
		if (nw > MAX_CONNS) {
			fprintf(stderr, "fleet: %u WebSocket connections needed, at most %u\n", nw, MAX_CONNS);
			return -1;
		}
		for (uint32_t i = 0; i < nw && i < MAX_CONNS; i++) {
			/* Connection 0 subscribes to every layer's resolved seeds. */
			char pbuf[48];
			const char *path = (i == 0 && o->subscribe) ? "/flow?layers=all" : "/flow";
			if (o->fleet_addr && !(i == 0 && o->subscribe)) {
				unsigned layer = i + (o->subscribe ? 0u : 1u);
				snprintf(pbuf, sizeof pbuf, "/flow?layer=%u", layer);
				path = pbuf;
				e->wss_of_layer[layer] = (int16_t)i;
			}
			e->wss[i] = fl_conn_open(e->ssl, &o->tls, FL_CONN_WSS, path, &cb, err, sizeof err);
			if (!e->wss[i]) {
				fprintf(stderr, "fleet: wss://%s:%u%s: %s\n", o->tls.host, o->tls.port, path, err);
				return -1;
			}
			e->n_wss++;
		}
		e->avail[FL_IN_WSS] = o->mix[FL_IN_WSS] > 0 && e->n_wss > (o->fleet_addr && o->subscribe ? 1u : 0u);
		uint32_t nh = o->mix[FL_IN_HTTPS] > 0 || o->canon_via == FL_IN_HTTPS ? o->https_conns : 0;
		for (uint32_t i = 0; i < nh && i < MAX_CONNS; i++) {
			e->https[i] = fl_conn_open(e->ssl, &o->tls, FL_CONN_HTTPS, NULL, &cb, err, sizeof err);
			if (!e->https[i]) {
				fprintf(stderr, "fleet: https://%s:%u: %s\n", o->tls.host, o->tls.port, err);
				return -1;
			}
			e->n_https++;
		}
		e->avail[FL_IN_HTTPS] = o->mix[FL_IN_HTTPS] > 0 && e->n_https > 0;
		for (uint32_t i = 0; i < o->pull_conns && i < MAX_CONNS; i++) {
			e->pull[i] = fl_conn_open(e->ssl, &o->tls, FL_CONN_HTTPS, NULL, &cb, err, sizeof err);
			if (!e->pull[i]) {
				fprintf(stderr, "fleet: https://%s:%u (pull): %s\n", o->tls.host, o->tls.port, err);
				return -1;
			}
			e->n_pull++;
		}
	}
	for (unsigned k = 0; k < 2; k++)
		for (unsigned l = 0; l + 1 < o->layers; l++) {
			int8_t g = o->station_ingress[k][l];
			bool ok = g < 0 || (g == FL_IN_UDP && e->udp[0]) || (g == FL_IN_WSS && e->n_wss > 0) ||
				  (g == FL_IN_HTTPS && e->n_https > 0);
			if (!ok) {
				fprintf(stderr, "fleet: --station: the %s station of layer %u uses %s, which is not "
					"configured (give its target and a --mix weight > 0)\n", k ? "ATTN" : "DOWN", l,
					fl_ingress_name((unsigned)g));
				return -1;
			}
		}
	double sum = 0;
	for (unsigned i = 0; i < FL_IN_COUNT; i++)
		sum += e->avail[i] ? o->mix[i] : 0;
	if (sum <= 0) {
		fprintf(stderr, "fleet: no ingress available (give --udp and/or --tls and a --mix with weight > 0)\n");
		return -1;
	}
	double acc = 0;
	for (unsigned i = 0; i < FL_IN_COUNT; i++) {
		acc += e->avail[i] ? o->mix[i] / sum : 0;
		e->cum[i] = acc;
	}
	if (!e->cons && !(e->n_wss > 0 && o->subscribe) && e->n_pull == 0)
		fprintf(stderr, "fleet: warning: no --consumer and no WSS subscription: resolved seeds cannot arrive\n");
	return 0;
}

/* ---- reporting ------------------------------------------------------ */

static double us(uint64_t ns) { return (double)ns / 1000.0; }

static void progress(struct engine *e, uint64_t now)
{
	char lat[256] = "";
	size_t off = 0;
	for (unsigned c = 0; c < FL_CLS_COUNT; c++)
		if (e->lat[c].n > 0 && off < sizeof lat)
			off += (size_t)snprintf(lat + off, sizeof lat - off, " %s p50 %.0f us", fl_ingress_name(c),
						us(fl_lat_pct_copy(&e->lat[c], 50)));
	printf("fleet: %5.1fs tokens %llu/%llu  seeds %llu/%llu  exact %llu  wrong %llu  missing %llu |%s\n",
	       (double)(now - e->t0) / 1e9, (unsigned long long)e->retired, (unsigned long long)e->o->tokens,
	       (unsigned long long)e->resolved, (unsigned long long)e->slots_opened,
	       (unsigned long long)e->exact, (unsigned long long)e->wrong, (unsigned long long)e->missing, lat);
	fflush(stdout);
}

static json_t *lat_json(struct fl_lat *l)
{
	return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f}", "samples", (json_int_t)l->n,
			 "p50_us", us(fl_lat_pct(l, 50)), "p90_us", us(fl_lat_pct(l, 90)), "p99_us", us(fl_lat_pct(l, 99)),
			 "p999_us", us(fl_lat_pct(l, 99.9)), "max_us", us(fl_lat_pct(l, 100)),
			 "mean_us", l->n ? us(l->sum / l->n) : 0.0);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* One per-token figure of the tokens whose chain ended (what: 0 the run's
 * wall time, 1 the chain alone, 2 the saving), its percentile q (nearest
 * rank); 0 when no token ended. */
static int64_t crit_pct(const struct engine *e, int what, double q)
{
	size_t n = 0;
	int64_t *v = malloc((e->o->tokens ? e->o->tokens : 1) * sizeof *v);
	if (!v)
		return 0;
	for (uint64_t i = 0; i < e->issued && i < e->o->tokens; i++) {
		const struct crit_tok *c = &e->crit[i];
		if (!c->wall_ns)
			continue;
		v[n++] = what == 0 ? (int64_t)c->wall_ns : what == 1 ? (int64_t)c->wall_ns + c->saving_ns : c->saving_ns;
	}
	int64_t r = 0;
	if (n) {
		qsort(v, n, sizeof *v, cmp_i64);
		size_t k = (size_t)(q / 100.0 * (double)n);
		if ((double)k < q / 100.0 * (double)n)
			k++;
		r = v[(k ? k : 1) - 1];
	}
	free(v);
	return r;
}

static double share(uint64_t part, uint64_t whole) { return whole ? 100.0 * (double)part / (double)whole : 0.0; }

static double mean_us(int64_t sum, uint64_t n) { return n ? (double)sum / (double)n / 1000.0 : 0.0; }

static void crit_summary(struct engine *e)
{
	const struct fl_run_opts *o = e->o;
	double save = (double)crit_pct(e, 2, 50) / 1000.0;
	printf("  critical path (%s): %llu tokens, net delay %u us per hop; per token p50: this run %.0f us, the chain "
	       "alone %.0f us, saving %.0f us (%.1f us per layer%s)\n",
	       o->crit == FL_CRIT_JUMP ? "jump with the fleet's gate" : "canonical chain only",
	       (unsigned long long)e->crit_done, o->net_delay_us, (double)crit_pct(e, 0, 50) / 1000.0,
	       (double)crit_pct(e, 1, 50) / 1000.0, save, save / (double)e->n_slots, save < 0 ? ": a cost" : "");
	uint64_t relayed = e->crit_layers - e->crit_jumped;
	printf("  critical path layers: %llu; gate passed %llu (%.1f%%), started on the jumped seed %llu, seed in time "
	       "%llu (%.1f%%); mean saving %.1f us per jumped layer, %.1f us per relayed one; decided at the slot "
	       "timeout %llu, decision after the seed %llu, stalled %llu\n",
	       (unsigned long long)e->crit_layers, (unsigned long long)e->crit_gate, share(e->crit_gate, e->crit_layers),
	       (unsigned long long)e->crit_jumped, (unsigned long long)e->crit_in_time,
	       share(e->crit_in_time, e->crit_layers), mean_us(e->crit_save_jumped, e->crit_jumped),
	       mean_us(e->crit_save_relayed, relayed), (unsigned long long)e->crit_no_status,
	       (unsigned long long)e->crit_late_decision, (unsigned long long)e->crit_stalled);
}

static json_t *crit_json(struct engine *e)
{
	const struct fl_run_opts *o = e->o;
	json_t *j = json_object(), *toks = json_array();
	json_object_set_new(j, "mode", json_string(o->crit == FL_CRIT_JUMP ? "jump" : "canonical"));
	json_object_set_new(j, "net_delay_us", json_integer(o->net_delay_us));
	static const char *const stage[FL_ROLES] = { "a", "g", "d" };
	json_t *st = json_object();
	for (unsigned k = 0; k < FL_ROLES; k++)
		json_object_set_new(st, stage[k], json_pack("[I,I]", (json_int_t)o->stage_lo_us[k],
							   (json_int_t)o->stage_hi_us[k]));
	json_object_set_new(j, "stage_us", st);
	json_object_set_new(j, "relay", o->n_relay ? json_pack("{s:s,s:I}", "from", "samples", "samples",
							    (json_int_t)o->n_relay)
						   : json_pack("{s:s,s:[I,I]}", "from", "uniform", "us",
							       (json_int_t)o->relay_lo_us, (json_int_t)o->relay_hi_us));
	json_object_set_new(j, "layers", json_integer((json_int_t)e->crit_layers));
	json_object_set_new(j, "layers_per_token", json_integer(e->n_slots));
	json_object_set_new(j, "layers_gate_passed", json_integer((json_int_t)e->crit_gate));
	json_object_set_new(j, "layers_jumped", json_integer((json_int_t)e->crit_jumped));
	json_object_set_new(j, "layers_in_time", json_integer((json_int_t)e->crit_in_time));
	json_object_set_new(j, "layers_decided_at_timeout", json_integer((json_int_t)e->crit_no_status));
	json_object_set_new(j, "layers_late_decision", json_integer((json_int_t)e->crit_late_decision));
	json_object_set_new(j, "layers_stalled", json_integer((json_int_t)e->crit_stalled));
	json_object_set_new(j, "saving_jumped_ns", json_integer((json_int_t)e->crit_save_jumped));
	json_object_set_new(j, "saving_relayed_ns", json_integer((json_int_t)e->crit_save_relayed));
	for (uint64_t i = 0; i < e->issued && i < o->tokens; i++) {
		const struct crit_tok *c = &e->crit[i];
		if (!c->wall_ns)
			continue;
		/* wall: this run; canonical: the same token through the chain
		 * alone (its wall plus what each layer saved; a cost subtracts) */
		json_t *x = json_pack("{s:I,s:I,s:I,s:I,s:I}", "token", (json_int_t)i, "wall_ns", (json_int_t)c->wall_ns,
				      "canonical_ns", (json_int_t)c->wall_ns + (json_int_t)c->saving_ns, "saving_ns",
				      (json_int_t)c->saving_ns, "compute_ns", (json_int_t)c->compute_ns);
		json_object_set_new(x, "in_time", json_integer(c->in_time));
		json_object_set_new(x, "gate_passed", json_integer(c->gate));
		json_object_set_new(x, "jumped", json_integer(c->jumped));
		json_array_append_new(toks, x);
	}
	json_object_set_new(j, "tokens", toks);
	return j;
}

static void summary(struct engine *e, uint64_t now, int rc)
{
	const struct fl_run_opts *o = e->o;
	double secs = (double)(now - e->t0) / 1e9;
	printf("\nfanofleet summary: %u layers x hidden %u, tokens %llu/%llu in %.2f s (%.1f tokens/s, %.0f seeds/s)%s\n",
	       o->layers, o->hidden, (unsigned long long)e->retired, (unsigned long long)o->tokens, secs,
	       secs > 0 ? (double)e->retired / secs : 0, secs > 0 ? (double)e->resolved / secs : 0,
	       g_drain ? ", drained (SIGUSR1)" : "");
	printf("  slots %llu  resolved %llu  bit-exact %llu  wrong %llu  missing %llu  never-sent %llu  "
	       "injected-divergence-seen %llu  late %llu  unknown %llu\n",
	       (unsigned long long)e->slots_opened, (unsigned long long)e->resolved, (unsigned long long)e->exact,
	       (unsigned long long)e->wrong, (unsigned long long)e->missing, (unsigned long long)e->dropped,
	       (unsigned long long)e->divergence_seen, (unsigned long long)e->late, (unsigned long long)e->unknown);
	printf("  %-8s %8s %9s %10s %10s %10s %10s\n", "ingress", "slots", "resolved", "p50 us", "p99 us",
	       "p99.9 us", "max us");
	for (unsigned c = 0; c < FL_CLS_COUNT; c++) {
		if (e->slots_cls[c] == 0)
			continue;
		struct fl_lat *l = &e->lat[c];
		printf("  %-8s %8llu %9llu %10.1f %10.1f %10.1f %10.1f\n", fl_ingress_name(c),
		       (unsigned long long)e->slots_cls[c], (unsigned long long)e->resolved_cls[c],
		       us(fl_lat_pct(l, 50)), us(fl_lat_pct(l, 99)), us(fl_lat_pct(l, 99.9)), us(fl_lat_pct(l, 100)));
	}
	printf("  %-14s %9s %6s %10s %10s\n", "delivery path", "seeds", "dups", "p50 us", "p99 us");
	for (unsigned p = 0; p < FL_PATH_COUNT; p++)
		if (e->deliveries[p])
			printf("  %-14s %9llu %6llu %10.1f %10.1f\n", fl_path_name(p), (unsigned long long)e->deliveries[p],
			       (unsigned long long)e->dup_deliveries[p], us(fl_lat_pct(&e->lat_path[p], 50)),
			       us(fl_lat_pct(&e->lat_path[p], 99)));
	printf("  contributions udp %llu wss %llu https %llu, canonical reports %llu, send errors %llu\n",
	       (unsigned long long)e->contributions[0], (unsigned long long)e->contributions[1],
	       (unsigned long long)e->contributions[2], (unsigned long long)e->canon_sent,
	       (unsigned long long)e->send_errors);
	printf("  status answers udp %llu wss %llu https %llu; shadow_mode %llu fully_resolved %llu awaiting %llu degraded %llu\n",
	       (unsigned long long)e->statuses[0], (unsigned long long)e->statuses[1], (unsigned long long)e->statuses[2],
	       (unsigned long long)e->facts_shadow, (unsigned long long)e->facts_resolved,
	       (unsigned long long)e->facts_awaiting, (unsigned long long)e->facts_degraded);
	if (e->n_pull)
		printf("  https pulls: %llu sent, %llu answered with the seed, %llu other answers\n",
		       (unsigned long long)e->pull_sent, (unsigned long long)e->pull_ok,
		       (unsigned long long)e->pull_other);
	if (e->outcomes[0].name[0]) {
		printf("  outcomes:");
		for (unsigned i = 0; i < NAME_SLOTS && e->outcomes[i].name[0]; i++)
			printf(" %s=%llu", e->outcomes[i].name, (unsigned long long)e->outcomes[i].n);
		printf("\n");
	}
	if (o->have_udp) {
		struct fl_udp_stats u = { 0 };
		for (unsigned r = 0; r < e->n_udp; r++) {
			const struct fl_udp_stats *s = fl_udp_sender_stats(e->udp[r]);
			u.frames += s->frames; u.fragments += s->fragments; u.resends += s->resends;
			u.gave_up += s->gave_up; u.acks += s->acks; u.acked_frames += s->acked_frames;
			u.injected_loss += s->injected_loss; u.injected_dup += s->injected_dup;
			u.dropped_cwnd += s->dropped_cwnd; u.bad_datagrams += s->bad_datagrams;
			u.send_failed += s->send_failed;
			if (s->cwnd_max > u.cwnd_max)
				u.cwnd_max = s->cwnd_max;
		}
		printf("  udp sender: frames %llu fragments %llu resends %llu gave-up %llu acks %llu acked-frames %llu "
		       "cwnd-max %u injected loss %llu dup %llu cwnd-drops %llu send-failed %llu bad %llu\n",
		       (unsigned long long)u.frames, (unsigned long long)u.fragments, (unsigned long long)u.resends,
		       (unsigned long long)u.gave_up, (unsigned long long)u.acks, (unsigned long long)u.acked_frames,
		       u.cwnd_max, (unsigned long long)u.injected_loss, (unsigned long long)u.injected_dup,
		       (unsigned long long)u.dropped_cwnd, (unsigned long long)u.send_failed,
		       (unsigned long long)u.bad_datagrams);
	}
	if (o->crit)
		crit_summary(e);
	if (e->corrupt_desc[0])
		printf("  injected corruption: %s -> %s\n", e->corrupt_desc,
		       e->divergence_seen ? "seen in the resolved seed" : "NOT seen");
	if (e->first_error[0])
		printf("  first problem: %s\n", e->first_error);
	printf("  result: %s\n", rc == 0 ? "PASS" : rc == 1 ? "FAIL (wrong seed)" : rc == 2 ? "FAIL (missing seeds)"
				     : rc == 4 ? "INTERRUPTED" : "FAIL");
	/* the generator's own CPU: a load row whose generator used a whole
	 * core says more about the generator than about the appliance */
	struct rusage ru;
	double cpu = 0;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
		      ru.ru_stime.tv_usec / 1e6;
	printf("  fleet cpu: %.2f s user+system, %.0f%% of one core over %.2f s\n", cpu, secs > 0 ? 100 * cpu / secs : 0,
	       secs);
	fflush(stdout);

	if (!o->json_path)
		return;
	json_t *j = json_object();
	json_object_set_new(j, "cpu_seconds", json_real(cpu));
	json_object_set_new(j, "tool", json_string("fanofleet"));
	json_object_set_new(j, "layers", json_integer(o->layers));
	json_object_set_new(j, "hidden", json_integer(o->hidden));
	json_object_set_new(j, "seed", json_integer((json_int_t)o->seed));
	json_object_set_new(j, "mode", json_string(o->mode == FL_MODE_CHAIN ? "chain" : "burst"));
	json_object_set_new(j, "tokens_requested", json_integer((json_int_t)o->tokens));
	json_object_set_new(j, "tokens_done", json_integer((json_int_t)e->retired));
	json_object_set_new(j, "drained", json_boolean(g_drain));
	json_object_set_new(j, "seconds", json_real(secs));
	json_object_set_new(j, "slots", json_integer((json_int_t)e->slots_opened));
	json_object_set_new(j, "resolved", json_integer((json_int_t)e->resolved));
	json_object_set_new(j, "bit_exact", json_integer((json_int_t)e->exact));
	json_object_set_new(j, "wrong", json_integer((json_int_t)e->wrong));
	json_object_set_new(j, "missing", json_integer((json_int_t)e->missing));
	json_object_set_new(j, "never_sent", json_integer((json_int_t)e->dropped));
	json_object_set_new(j, "late", json_integer((json_int_t)e->late));
	json_object_set_new(j, "unknown", json_integer((json_int_t)e->unknown));
	json_object_set_new(j, "injected_corruption", e->corrupt_desc[0] ? json_string(e->corrupt_desc) : json_null());
	json_object_set_new(j, "divergence_seen", json_integer((json_int_t)e->divergence_seen));
	json_t *ing = json_object();
	for (unsigned c = 0; c < FL_CLS_COUNT; c++) {
		if (e->slots_cls[c] == 0)
			continue;
		json_t *x = lat_json(&e->lat[c]);
		json_object_set_new(x, "slots", json_integer((json_int_t)e->slots_cls[c]));
		json_object_set_new(x, "resolved", json_integer((json_int_t)e->resolved_cls[c]));
		json_object_set_new(ing, fl_ingress_name(c), x);
	}
	json_object_set_new(j, "latency_by_ingress", ing);
	json_t *paths = json_object();
	for (unsigned p = 0; p < FL_PATH_COUNT; p++) {
		if (!e->deliveries[p])
			continue;
		json_t *x = lat_json(&e->lat_path[p]);
		json_object_set_new(x, "deliveries", json_integer((json_int_t)e->deliveries[p]));
		json_object_set_new(x, "duplicates", json_integer((json_int_t)e->dup_deliveries[p]));
		json_object_set_new(paths, fl_path_name(p), x);
	}
	json_object_set_new(j, "latency_by_delivery_path", paths);
	json_t *oc = json_object();
	for (unsigned i = 0; i < NAME_SLOTS && e->outcomes[i].name[0]; i++)
		json_object_set_new(oc, e->outcomes[i].name, json_integer((json_int_t)e->outcomes[i].n));
	json_object_set_new(j, "outcomes", oc);
	json_object_set_new(j, "facts", json_pack("{s:I,s:I,s:I,s:I}", "shadow_mode", (json_int_t)e->facts_shadow,
						  "fully_resolved", (json_int_t)e->facts_resolved, "awaiting_resolution",
						  (json_int_t)e->facts_awaiting, "degraded", (json_int_t)e->facts_degraded));
	json_object_set_new(j, "contributions", json_pack("{s:I,s:I,s:I}", "udp", (json_int_t)e->contributions[0],
							  "wss", (json_int_t)e->contributions[1], "https",
							  (json_int_t)e->contributions[2]));
	if (o->crit)
		json_object_set_new(j, "critical_path", crit_json(e));
	json_object_set_new(j, "result", json_string(rc == 0 ? "pass" : "fail"));
	json_object_set_new(j, "exit_code", json_integer(rc));
	if (json_dump_file(j, o->json_path, JSON_INDENT(2) | JSON_SORT_KEYS) != 0)
		fprintf(stderr, "fleet: cannot write %s\n", o->json_path);
	json_decref(j);
}

/* Whether a TLS connection still has output to write. */
static bool output_waits(const struct engine *e)
{
	for (uint32_t i = 0; i < e->n_wss; i++)
		if (!fl_conn_is_dead(e->wss[i]) && (fl_conn_events(e->wss[i]) & POLLOUT))
			return true;
	for (uint32_t i = 0; i < e->n_https; i++)
		if (!fl_conn_is_dead(e->https[i]) && (fl_conn_events(e->https[i]) & POLLOUT))
			return true;
	return false;
}

/* ---- the loop ---------------------------------------------------------- */

int fl_run(const struct fl_run_opts *o)
{
	struct engine E = { .o = o };
	struct engine *e = &E;
	int rc = 3;
	if (o->layers < 2 || o->hidden == 0 || o->window == 0 || o->corrupt_index >= o->hidden) {
		fprintf(stderr, "fleet: need layers >= 2, hidden >= 1, window >= 1, corrupt index < hidden\n");
		return 3;
	}
	fg_bands_default(&e->bands);
	e->bands.n_layers = o->layers;
	e->lim = (struct fg_seed_limits){ .hidden = o->hidden, .max_seq_len = 1 };
	e->n_slots = o->layers - 1u;
	e->corrupt_layer = o->corrupt_layer >= 0 ? o->corrupt_layer : o->layers / 2;
	uint32_t H = o->hidden;
	e->tok = calloc(o->window, sizeof *e->tok);
	e->fbuf = malloc(FG_HDR_LEN + FG_SEED_PREFIX_LEN + (size_t)H * 4u);
	e->tmp = malloc((size_t)H * 4u * 4u);
	if (!e->tok || !e->fbuf || !e->tmp)
		goto out;
	if (o->crit && !(e->crit = calloc(o->tokens, sizeof *e->crit)))
		goto out;
	for (uint32_t w = 0; w < o->window; w++) {
		struct token *t = &e->tok[w];
		t->x = malloc((size_t)o->layers * H * 4u);
		t->attn = malloc((size_t)o->layers * H * 4u);
		t->ffn = malloc((size_t)o->layers * H * 4u);
		t->slots = calloc(e->n_slots, sizeof *t->slots);
		if (!t->x || !t->attn || !t->ffn || !t->slots)
			goto out;
	}
	if (o->samples_path && !(e->samples = fopen(o->samples_path, "w"))) {
		fprintf(stderr, "fleet: cannot write %s: %s\n", o->samples_path, strerror(errno));
		goto out;
	}
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	struct sigaction sd = { .sa_handler = on_drain };
	sigaction(SIGUSR1, &sd, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (setup(e) < 0)
		goto out;

	e->t0 = fl_now_ns();
	uint64_t next_progress = e->t0 + 1000000000ull, next_timeouts = e->t0;
	uint64_t hard_end = o->duration_s ? e->t0 + (uint64_t)o->duration_s * 1000000000ull : UINT64_MAX;
	double period = o->rate > 0 ? 1e9 / o->rate : 0;
	struct pollfd pfd[3 * MAX_CONNS + MAX_UDP + 2];
	while (!g_stop) {
		uint64_t now = fl_now_ns();
		if (now >= hard_end) {
			fprintf(stderr, "fleet: duration limit reached\n");
			break;
		}
		/* Issue tokens: window and rate permitting. */
		uint64_t wait = 10000000ull;
		while (!g_drain && e->issued < o->tokens && e->issued - e->retired < o->window &&
		       !e->tok[e->issued % o->window].live) {
			uint64_t due = e->t0 + (uint64_t)(period * (double)e->issued);
			if (period > 0 && due > now) {
				if (due - now < wait)
					wait = due - now;
				break;
			}
			token_start(e, now);
		}
		fire_events(e);
		now = fl_now_ns();
		for (uint32_t i = 0; i < e->n_wss; i++)
			fl_ws_flush(e->wss[i], now);
		/* the run ends once the delayed sends are out too (a report held
		 * back past its slot's seed), written to the sockets */
		if ((e->retired == o->tokens || (g_drain && e->retired == e->issued)) && e->sched.n == 0 &&
		    !output_waits(e))
			break;
		uint64_t due = fl_sched_next(&e->sched);
		if (due != UINT64_MAX)
			wait = due > now ? (due - now < wait ? due - now : wait) : 0;
		if (o->have_udp)
			for (unsigned r = 0; r < e->n_udp; r++) {
				uint64_t n = fl_udp_sender_tick(e->udp[r], now);
				if (n < wait)
					wait = n;
			}
		if (e->cons) {
			uint64_t n = fl_udp_consumer_tick(e->cons, now);
			if (n < wait)
				wait = n;
		}
		if (now >= next_timeouts) {
			check_timeouts(e, now);
			next_timeouts = now + 10000000ull;
		}
		if (now >= next_progress) {
			if (!o->quiet)
				progress(e, now);
			next_progress += 1000000000ull;
		}
		nfds_t n = 0;
		if (o->have_udp)
			for (unsigned r = 0; r < e->n_udp; r++)
				pfd[n++] = (struct pollfd){ .fd = fl_udp_sender_fd(e->udp[r]), .events = POLLIN };
		if (e->cons)
			pfd[n++] = (struct pollfd){ .fd = fl_udp_consumer_fd(e->cons), .events = POLLIN };
		nfds_t first_conn = n;
		for (uint32_t i = 0; i < e->n_wss; i++)
			pfd[n++] = (struct pollfd){ .fd = fl_conn_is_dead(e->wss[i]) ? -1 : fl_conn_fd(e->wss[i]),
						    .events = fl_conn_events(e->wss[i]) };
		for (uint32_t i = 0; i < e->n_https; i++)
			pfd[n++] = (struct pollfd){ .fd = fl_conn_is_dead(e->https[i]) ? -1 : fl_conn_fd(e->https[i]),
						    .events = fl_conn_events(e->https[i]) };
		for (uint32_t i = 0; i < e->n_pull; i++)
			pfd[n++] = (struct pollfd){ .fd = fl_conn_is_dead(e->pull[i]) ? -1 : fl_conn_fd(e->pull[i]),
						    .events = fl_conn_events(e->pull[i]) };
		struct timespec ts = { .tv_sec = (time_t)(wait / 1000000000ull), .tv_nsec = (long)(wait % 1000000000ull) };
		if (ppoll(pfd, n, &ts, NULL) < 0 && errno != EINTR)
			break;
		now = fl_now_ns();
		nfds_t k = 0;
		if (o->have_udp)
			for (unsigned r = 0; r < e->n_udp; r++, k++)
				if (pfd[k].revents)
					fl_udp_sender_input(e->udp[r], now);
		if (e->cons && pfd[k++].revents)
			fl_udp_consumer_input(e->cons, now);
		k = first_conn;
		for (uint32_t i = 0; i < e->n_wss; i++, k++)
			if (pfd[k].revents && fl_conn_io(e->wss[i], now) < 0)
				note_error(e, "WebSocket connection %u closed", i);
		for (uint32_t i = 0; i < e->n_https; i++, k++)
			if (pfd[k].revents && fl_conn_io(e->https[i], now) < 0)
				note_error(e, "HTTPS connection %u closed", i);
		for (uint32_t i = 0; i < e->n_pull; i++, k++)
			if (pfd[k].revents && fl_conn_io(e->pull[i], now) < 0)
				note_error(e, "HTTPS pull connection %u closed", i);
	}
	/* A short grace period for the last status answers. */
	uint64_t end = fl_now_ns();
	if (!g_stop) {
		uint64_t until = end + 50000000ull;
		while (fl_now_ns() < until) {
			struct pollfd p[MAX_CONNS];
			nfds_t n = 0;
			for (uint32_t i = 0; i < e->n_wss; i++)
				if (!fl_conn_is_dead(e->wss[i]))
					p[n++] = (struct pollfd){ .fd = fl_conn_fd(e->wss[i]), .events = POLLIN };
			if (n == 0 || poll(p, n, 10) <= 0)
				break;
			for (uint32_t i = 0; i < e->n_wss; i++)
				if (!fl_conn_is_dead(e->wss[i]))
					(void)fl_conn_io(e->wss[i], fl_now_ns());
			if (o->have_udp)
				for (unsigned r = 0; r < e->n_udp; r++)
					fl_udp_sender_input(e->udp[r], fl_now_ns());
		}
	}
	/* Linger: a real consumer outlives the last seed; the appliance resends
	 * a seed whose ACK was lost, and only an ACK ends that. */
	if (!g_stop && o->linger_ms && e->cons) {
		/* Up to linger_ms, ending early once linger_quiet_ms pass without a
		 * datagram: longer than the appliance's resend interval (200 ms), so a
		 * quiet consumer socket means nothing is waiting for our ACK (on a
		 * lossy path, longer than the resends it can lose in a row). */
		uint64_t t = fl_now_ns(), until = t + (uint64_t)o->linger_ms * 1000000ull;
		uint64_t quiet_ns = (uint64_t)(o->linger_quiet_ms ? o->linger_quiet_ms : FL_LINGER_QUIET_MS) * 1000000ull;
		uint64_t quiet_end = t + quiet_ns;
		while (!g_stop && (t = fl_now_ns()) < until && t < quiet_end) {
			struct pollfd p = { .fd = fl_udp_consumer_fd(e->cons), .events = POLLIN };
			if (poll(&p, 1, 10) > 0) {
				fl_udp_consumer_input(e->cons, fl_now_ns());
				quiet_end = fl_now_ns() + quiet_ns;
			}
		}
	}
	if (g_stop)
		rc = 4;
	else if (e->wrong > 0 || (o->corrupt_at >= 0 && e->corrupt_desc[0] && e->divergence_seen == 0 &&
				  e->missing == 0))
		rc = 1;
	else if (e->missing > o->max_missing || (e->retired < o->tokens && !g_drain))
		rc = 2;
	else
		rc = 0;
	if (rc == 1 && e->wrong == 0)
		note_error(e, "the injected corruption did not show in the resolved seed");
	summary(e, end, rc);
out:
	if (e->samples)
		fclose(e->samples);
	for (unsigned r = 0; r < e->n_udp; r++)
		fl_udp_sender_free(e->udp[r]);
	fl_udp_consumer_free(e->cons);
	for (uint32_t i = 0; i < e->n_wss; i++)
		fl_conn_free(e->wss[i]);
	for (uint32_t i = 0; i < e->n_https; i++)
		fl_conn_free(e->https[i]);
	for (uint32_t i = 0; i < e->n_pull; i++)
		fl_conn_free(e->pull[i]);
	if (e->ssl)
		SSL_CTX_free(e->ssl);
	for (unsigned c = 0; c < FL_CLS_COUNT; c++)
		fl_lat_free(&e->lat[c]);
	for (unsigned p = 0; p < FL_PATH_COUNT; p++)
		fl_lat_free(&e->lat_path[p]);
	if (e->tok)
		for (uint32_t w = 0; w < o->window; w++) {
			free(e->tok[w].x);
			free(e->tok[w].attn);
			free(e->tok[w].ffn);
			free(e->tok[w].slots);
		}
	free(e->tok);
	free(e->fbuf);
	free(e->tmp);
	free(e->crit);
	fl_sched_free(&e->sched);
	return rc;
}

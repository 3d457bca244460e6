/* test_engine.c - unit tests of control/cp_engine.c:
 *   local mode: outcomes through ops->done, the resolved-seed frame through
 *   ops->resolved (decoded and compared with a reference reduction),
 *   lookups (open, resolved, poisoned, expired, unknown), expiry on the
 *   loop's timer, malformed frames answered with their reason;
 *   lanes mode: a frame goes to the owning lane (fg_shard_of) with its bytes
 *   in a cp2dp buffer; OUTCOME/RESOLVED/EXPIRED/CONFLICT messages from a
 *   fake lcore complete requests and raise events; dp2cp buffers are
 *   released; a full lane is refused with -ENOBUFS;
 *   the wake-up: lanes mode needs the boundary's eventfd, arrivals are
 *   drained when the eventfd is written (never by the tick), one write per
 *   sleep however many messages arrive. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "cp_engine.h"
#include "cp_epoch_guard.h"
#include "cp_harden.h"
#include "cp_loop.h"

#define HIDDEN 4u

static struct cp_loop L;
static struct fg_config cfg;
static struct {
	int done, resolved, ended;
	uint64_t cookie;
	struct cp_engine_result r;
	uint8_t frame[256];
	size_t len;
	uint16_t layer;
	uint32_t token;
	enum fg_slot_state st;
} ev;

static void on_done(void *arg, uint64_t cookie, const struct cp_engine_result *r)
{
	(void)arg;
	ev.done++;
	ev.cookie = cookie;
	ev.r = *r;
}

static void on_resolved(void *arg, uint16_t layer, uint32_t token_seq, const uint8_t *frame, size_t len)
{
	(void)arg;
	ev.resolved++;
	ev.layer = layer;
	ev.token = token_seq;
	assert_true(len <= sizeof(ev.frame));
	memcpy(ev.frame, frame, len);
	ev.len = len;
}

static void on_ended(void *arg, uint16_t layer, uint32_t token_seq, enum fg_slot_state st)
{
	(void)arg;
	ev.ended++;
	ev.layer = layer;
	ev.token = token_seq;
	ev.st = st;
}

static const struct cp_engine_ops ops = {.done = on_done, .resolved = on_resolved, .ended = on_ended};

/* What the engine hands the shadow audit (lanes mode: the lcore's facts). */
static struct {
	int resolved, canonical;
	unsigned src; /* the last canonical report's source class */
	bool body_null; /* the last seed came without its body (v->body NULL) */
	uint64_t fp;
	uint8_t lines;
	float body[HIDDEN];
	struct fg_canon canon;
	float canon_body[HIDDEN];
	struct fg_seed_times t; /* the last seed's times */
	uint64_t arrived_ns;    /* the last report's arrival */
} au;
static void au_resolved(void *arg, const struct fg_seed_view *v, uint32_t epoch, const struct fg_seed_times *t)
{
	(void)arg;
	(void)epoch;
	au.resolved++;
	au.t = *t;
	au.fp = v->fingerprint;
	au.lines = v->lines;
	assert_int_equal(v->body_len, sizeof(au.body));
	au.body_null = !v->body;
	if (v->body)
		memcpy(au.body, v->body, sizeof(au.body));
}
static void au_canonical(void *arg, const struct fg_canon *c, uint32_t epoch, uint64_t arrived_ns, unsigned src)
{
	(void)arg;
	(void)epoch;
	au.canonical++;
	au.src = src;
	au.arrived_ns = arrived_ns;
	au.canon = *c;
	if (c->kind == FG_CANON_FULL) {
		assert_int_equal(c->body_len, sizeof(au.canon_body));
		if (c->body)
			memcpy(au.canon_body, c->body, sizeof(au.canon_body));
		else
			memset(au.canon_body, 0, sizeof(au.canon_body));
	}
	au.canon.body = NULL;
}
static void au_conflict(void *arg, uint16_t layer, uint32_t token_seq, unsigned line, uint32_t epoch)
{
	(void)arg, (void)layer, (void)token_seq, (void)line, (void)epoch;
}
static void au_epoch(void *arg, uint32_t from, uint32_t to, const char *why)
{
	(void)arg, (void)from, (void)to, (void)why;
}
static void au_line(void *arg, const struct fg_line_change *chg, const char *origin)
{
	(void)arg, (void)chg, (void)origin;
}
static const struct cp_engine_audit_ops audit_ops = {.resolved = au_resolved, .canonical = au_canonical,
						      .conflict = au_conflict, .epoch_changed = au_epoch,
						      .line_changed = au_line};

static int setup(void **state)
{
	(void)state;
	fg_config_default(&cfg);
	cfg.hidden = HIDDEN;
	cfg.layers = 4;
	cfg.bands.n_layers = 4;
	cfg.max_seq_len = 1;
	cfg.slot_capacity = 64;
	cfg.slot_deadline_ns = 30ull * 1000 * 1000;
	return cp_loop_init(&L, 64, cp_harden_ring);
}

static int teardown(void **state)
{
	(void)state;
	cp_loop_fini(&L);
	return 0;
}

static size_t mk_seed(uint8_t *buf, size_t cap, uint16_t layer, uint32_t tok, uint8_t line, uint8_t neg,
		      const float *v)
{
	struct fg_seed s = {.token_seq = tok, .dst_layer = layer, .line = line, .orientation = neg,
			    .start_pos = 0, .seq_len = 1, .body = (const uint8_t *)v, .body_len = HIDDEN * 4};
	ssize_t n = fg_seed_encode(&cfg.bands, &s, buf, cap);
	assert_true(n > 0);
	return (size_t)n;
}

static int submit(struct cp_engine *e, const uint8_t *buf, size_t len, uint64_t cookie)
{
	struct fg_frame f;
	assert_int_equal(fg_frame_decode(buf, len, FG_TRANSPORT_MESSAGE, &f), (ssize_t)len);
	return cp_engine_submit(e, &f, cookie);
}

static int submit_from(struct cp_engine *e, const uint8_t *buf, size_t len, const struct fg_bm_src *from,
		       uint64_t cookie)
{
	struct fg_frame f;
	assert_int_equal(fg_frame_decode(buf, len, FG_TRANSPORT_MESSAGE, &f), (ssize_t)len);
	return cp_engine_submit_from(e, &f, FG_LAYER_UNBOUND, from, cookie);
}

static void stop_cb(struct cp_loop *l, struct cp_timer *t)
{
	(void)t;
	cp_loop_stop(l);
}

static void run_for(uint64_t ns)
{
	struct cp_timer t = {0};
	assert_int_equal(cp_timer_start(&L, &t, ns, stop_cb), 0);
	L.stop = false;
	assert_int_equal(cp_loop_run(&L), 0);
}

static void test_local(void **state)
{
	(void)state;
	struct cp_engine e;
	assert_int_equal(cp_engine_init(&e, &L, &cfg, NULL, &ops, NULL), 0);
	assert_false(e.lanes_mode);
	const float x[HIDDEN] = {1.0f, 2.0f, 0.1f, -3.0f}, a[HIDDEN] = {0.5f, 0.25f, 0.2f, 1e-8f},
		    f[HIDDEN] = {8.0f, -1.0f, 0.3f, 3.0f};
	uint8_t buf[128];
	memset(&ev, 0, sizeof(ev));
	size_t n = mk_seed(buf, sizeof(buf), 2, 7, 5, 0, f);
	assert_int_equal(submit(&e, buf, n, 11), 0);
	assert_int_equal(ev.done, 1);
	assert_int_equal(ev.cookie, 11);
	assert_int_equal(ev.r.status.outcome, FG_O_ACCEPTED);
	const uint8_t *fr = NULL;
	size_t fl = 0;
	assert_int_equal(cp_engine_lookup(&e, 2, 7, &fr, &fl), FG_SLOT_OPEN);
	n = mk_seed(buf, sizeof(buf), 2, 7, 1, 0, x);
	assert_int_equal(submit(&e, buf, n, 12), 0);
	n = mk_seed(buf, sizeof(buf), 2, 7, 3, 1, a);
	assert_int_equal(submit(&e, buf, n, 13), 0);
	assert_int_equal(ev.done, 3);
	assert_int_equal(ev.r.status.outcome, FG_O_RESOLVED);
	assert_int_equal(ev.resolved, 1);
	assert_int_equal(ev.layer, 2);
	assert_int_equal(ev.token, 7);
	/* the pushed frame is the reference reduction ((x - a) + f) */
	struct fg_frame rf;
	struct fg_resolved rr;
	struct fg_seed_limits lim = {.hidden = HIDDEN, .max_seq_len = 1};
	assert_int_equal(fg_frame_decode(ev.frame, ev.len, FG_TRANSPORT_MESSAGE, &rf), (ssize_t)ev.len);
	assert_int_equal(rf.hdr.stream_id, cfg.bands.resolved_base + 2);
	assert_int_equal(rf.hdr.flags, FG_FLAG_FIN);
	assert_true(fg_resolved_decode(&rf, 2, &lim, &rr) > 0);
	for (unsigned i = 0; i < HIDDEN; i++) {
		volatile float r = x[i];
		r = r - a[i];
		r = r + f[i];
		float got;
		memcpy(&got, rr.body + 4 * i, 4);
		assert_memory_equal(&got, (const void *)&r, 4);
	}
	assert_int_equal(cp_engine_lookup(&e, 2, 7, &fr, &fl), FG_SLOT_RESOLVED);
	assert_int_equal(fl, ev.len);
	assert_memory_equal(fr, ev.frame, fl);
	assert_int_equal(cp_engine_lookup(&e, 2, 8, &fr, &fl), FG_SLOT_FREE);

	/* conflict: poisoned, epoch advanced, event raised */
	uint32_t epoch = e.epoch;
	n = mk_seed(buf, sizeof(buf), 1, 9, 1, 0, x);
	assert_int_equal(submit(&e, buf, n, 14), 0);
	n = mk_seed(buf, sizeof(buf), 1, 9, 1, 0, a);
	ev.ended = 0;
	assert_int_equal(submit(&e, buf, n, 15), 0);
	assert_int_equal(ev.r.status.outcome, FG_O_CONFLICT);
	assert_int_equal(ev.ended, 1);
	assert_int_equal(ev.st, FG_SLOT_POISONED);
	assert_true(e.epoch > epoch);
	assert_int_equal(fg_linefacts_epoch(cp_engine_linefacts(&e)), e.epoch);
	assert_int_equal(cp_engine_lookup(&e, 1, 9, &fr, &fl), FG_SLOT_POISONED);

	/* A TLS sender speaks for the lines its role names (cp_epoch_guard.h
	 * rule 2): a role of point e2 for lines 0 (1,2,3), 3 (2,4,6) and
	 * 4 (2,5,7). Its conflict on line 5 poisons the slot and moves
	 * nothing else; on line 3 it is attributed (held by the rate here:
	 * the conflict above advanced the epoch a moment ago). */
	assert_int_equal(cp_epoch_guard_role_lines(NULL), 0x7f);
	assert_int_equal(cp_epoch_guard_role_lines(CP_ROLE_COORDINATOR), 0x7f);
	assert_int_equal(cp_epoch_guard_role_lines("e2"), 0x19);
	assert_int_equal(cp_epoch_guard_role_lines("fleet"), 0x7f);
	assert_int_equal(cp_epoch_guard_role_lines("E7"), 0x34); /* lines 2 (1,7,6), 4 (2,5,7), 5 (3,4,7) */
	const struct fg_bm_src e2 = {.family = 4, .addr = {10, 0, 0, 2}, .lines = 0x19};
	const uint64_t unmapped0 = e.st.conflicts_unmapped, judged0 = e.guard.advanced + e.guard.held_rate;
	epoch = e.epoch;
	n = mk_seed(buf, sizeof(buf), 1, 10, 5, 0, x);
	assert_int_equal(submit_from(&e, buf, n, &e2, 21), 0);
	n = mk_seed(buf, sizeof(buf), 1, 10, 5, 0, a);
	assert_int_equal(submit_from(&e, buf, n, &e2, 22), 0);
	assert_int_equal(ev.r.status.outcome, FG_O_CONFLICT);
	assert_int_equal(cp_engine_lookup(&e, 1, 10, &fr, &fl), FG_SLOT_POISONED);
	assert_int_equal(e.st.conflicts_unmapped, unmapped0 + 1);
	assert_int_equal(e.guard.advanced + e.guard.held_rate, judged0);
	assert_int_equal(e.epoch, epoch);
	n = mk_seed(buf, sizeof(buf), 1, 11, 3, 0, x);
	assert_int_equal(submit_from(&e, buf, n, &e2, 23), 0);
	n = mk_seed(buf, sizeof(buf), 1, 11, 3, 0, a);
	assert_int_equal(submit_from(&e, buf, n, &e2, 24), 0);
	assert_int_equal(ev.r.status.outcome, FG_O_CONFLICT);
	assert_int_equal(e.st.conflicts_unmapped, unmapped0 + 1);
	assert_int_equal(e.guard.advanced + e.guard.held_rate, judged0 + 1);

	/* malformed: answered with the codec's reason */
	uint8_t junk[12] = {0xAF, 0x61, 0, 0, 0, 1, 0x10, 0, 0, 2, 0, 0};
	struct fg_frame jf;
	assert_int_equal(fg_frame_decode(junk, sizeof(junk), FG_TRANSPORT_MESSAGE, &jf), 12);
	ev.done = 0;
	assert_int_equal(cp_engine_submit(&e, &jf, 16), 0);
	assert_int_equal(ev.done, 1);
	assert_int_equal(ev.r.status.outcome, FG_O_MALFORMED);
	assert_int_equal(ev.r.reason, FG_R_SEED_PREFIX);

	/* expiry on the engine's timer */
	n = mk_seed(buf, sizeof(buf), 3, 20, 1, 0, x);
	assert_int_equal(submit(&e, buf, n, 17), 0);
	ev.ended = 0;
	run_for(80ull * 1000 * 1000);
	assert_int_equal(ev.ended, 1);
	assert_int_equal(ev.st, FG_SLOT_EXPIRED);
	assert_int_equal(ev.layer, 3);
	assert_int_equal(ev.token, 20);
	assert_int_equal(cp_engine_lookup(&e, 3, 20, &fr, &fl), FG_SLOT_EXPIRED);

	/* canonical digests: the sender's address names the report's source
	 * class (fg_shadow_sender_class: each new sender its own, in order);
	 * without a sender, class 0 */
	cp_engine_set_audit(&e, &audit_ops, NULL);
	memset(&au, 0, sizeof(au));
	const struct fg_canon cd = {.token_seq = 30, .dst_layer = 2, .kind = FG_CANON_DIGEST, .seq_len = 1,
				    .digest = 0x1234};
	ssize_t cn = fg_canon_encode(&cfg.bands, &cd, buf, sizeof(buf));
	assert_true(cn > 0);
	struct fg_frame cf;
	assert_int_equal(fg_frame_decode(buf, (size_t)cn, FG_TRANSPORT_MESSAGE, &cf), cn);
	struct fg_bm_src from = {.family = 4, .addr = {10, 0, 0, 1}};
	assert_int_equal(cp_engine_submit_from(&e, &cf, FG_LAYER_UNBOUND, &from, 18), 0);
	assert_int_equal(au.canonical, 1);
	assert_true(au.canon.digest == 0x1234);
	assert_int_equal(au.src, 1); /* the first sender: the first class */
	from.addr[3] = 2;
	assert_int_equal(cp_engine_submit_from(&e, &cf, FG_LAYER_UNBOUND, &from, 19), 0);
	assert_int_equal(au.src, 2);
	from.addr[3] = 1;
	assert_int_equal(cp_engine_submit_from(&e, &cf, FG_LAYER_UNBOUND, &from, 19), 0);
	assert_int_equal(au.src, 1); /* and it keeps it */
	assert_int_equal(cp_engine_submit(&e, &cf, 20), 0);
	assert_int_equal(au.canonical, 4);
	assert_int_equal(au.src, 0);
	cp_engine_fini(&e);
	run_for(10ull * 1000 * 1000); /* let the stopped tick complete */
}

/* ---- lanes ----------------------------------------------------------- */
struct fake_lane {
	void *mem[6];
};

static struct fg_ring *mk_ring(void **keep, uint32_t count)
{
	size_t sz = (fg_ring_mem_size(count, sizeof(union fg_bmsg)) + 63) & ~(size_t)63;
	struct fg_ring *r = aligned_alloc(64, sz);
	assert_non_null(r);
	assert_int_equal(fg_ring_init(r, count, sizeof(union fg_bmsg)), 0);
	*keep = r;
	return r;
}

static void mk_pool(struct fg_pool *p, void **keep, uint32_t n, uint32_t size)
{
	size_t sz = (fg_pool_mem_size(n, size) + 63) & ~(size_t)63;
	void *m = aligned_alloc(64, sz);
	assert_non_null(m);
	assert_int_equal(fg_pool_init(p, m, n, size), 0);
	*keep = m;
}

/* A fake lcore's push: the message, then the wake-up protocol of
 * boundary.h (write the eventfd when the engine sleeps). */
static void cp_push(struct fg_boundary *b, struct fg_lane *ln, const union fg_bmsg *o)
{
	assert_true(fg_ring_push(ln->to_cp, o));
	if (fg_wake_after_push(&b->wake)) {
		uint64_t one = 1;
		assert_int_equal(write(b->wake.fd, &one, sizeof(one)), (ssize_t)sizeof(one));
	}
}

static void test_lanes(void **state)
{
	(void)state;
	enum { NL = 2, RING = 4 };
	struct fg_lane lanes[NL];
	struct fake_lane keep[NL];
	memset(lanes, 0, sizeof(lanes));
	for (int i = 0; i < NL; i++) {
		lanes[i].to_dp = mk_ring(&keep[i].mem[0], RING);
		lanes[i].to_cp = mk_ring(&keep[i].mem[1], 64);
		mk_pool(&lanes[i].cp2dp, &keep[i].mem[2], 8, 256);
		mk_pool(&lanes[i].dp2cp, &keep[i].mem[3], 8, 256);
	}
	static struct fg_boundary b;
	b.n_lanes = NL;
	b.lanes = lanes;
	struct cp_engine e;
	memset(&ev, 0, sizeof(ev));
	/* no wake-up eventfd: lanes mode is refused (no tick would drain) */
	assert_int_equal(cp_engine_init(&e, &L, &cfg, &b, &ops, NULL), -EINVAL);
	int efd = eventfd(0, EFD_CLOEXEC);
	assert_true(efd >= 0);
	fg_wake_init(&b.wake, efd);
	assert_int_equal(cp_engine_init(&e, &L, &cfg, &b, &ops, NULL), 0);
	assert_true(e.lanes_mode);
	memset(&au, 0, sizeof(au));
	cp_engine_set_audit(&e, &audit_ops, NULL);
	/* the engine drained the (empty) rings and announced its sleep */
	assert_int_equal(atomic_load(&b.wake.waiting), 1);
	assert_int_equal(atomic_load(&b.linefacts), cp_engine_linefacts(&e));
	/* the audit's state rides the published facts: off until the audit
	 * says it records, then failed when its log fails closed */
	assert_int_equal(fg_linefacts_audit_facts(atomic_load(&b.linefacts)), FG_FACT_AUDIT_OFF);
	cp_engine_audit_fact(&e, FG_AUDIT_RECORDING);
	assert_int_equal(fg_linefacts_audit_facts(atomic_load(&b.linefacts)), 0);
	cp_engine_audit_fact(&e, FG_AUDIT_FAILED);
	assert_int_equal(fg_linefacts_audit_facts(atomic_load(&b.linefacts)), FG_FACT_AUDIT_FAILED);
	assert_int_equal(fg_linefacts_state(atomic_load(&b.linefacts), 0), fg_line_effective(&e.lines, 0));
	cp_engine_audit_fact(&e, FG_AUDIT_RECORDING);

	const float x[HIDDEN] = {1, 2, 3, 4};
	uint8_t buf[128];
	size_t n = mk_seed(buf, sizeof(buf), 3, 1001, 1, 0, x);
	assert_int_equal(submit(&e, buf, n, 77), 0);
	assert_int_equal(ev.done, 0); /* asynchronous */
	uint32_t lane = fg_shard_of(1001, 3, 4, NL);
	union fg_bmsg m;
	assert_false(fg_ring_pop(lanes[1 - lane].to_dp, &m));
	assert_true(fg_ring_pop(lanes[lane].to_dp, &m));
	assert_int_equal(m.kind, FG_BM_CONTRIB);
	assert_int_equal(m.contrib.frame.len, n);
	assert_int_equal(m.contrib.token_seq, 1001);
	assert_int_equal(m.contrib.layer, 3);
	assert_int_equal(m.contrib.band, FG_BAND_SEED);
	assert_int_equal(m.contrib.sender_lines, 0x7f); /* sender not known: every line */
	assert_memory_equal(fg_pool_buf(&lanes[lane].cp2dp, m.contrib.frame.buf), buf, n);
	assert_int_not_equal(m.contrib.req_id, 0);

	/* the lcore answers: OUTCOME, then a RESOLVED seed: facts, and the
	 * body alone in a dp2cp buffer (no frame crosses) */
	union fg_bmsg o = {.outcome = {.kind = FG_BM_OUTCOME, .req_id = m.contrib.req_id}};
	o.outcome.status.outcome = FG_O_ACCEPTED;
	o.outcome.status.token_seq = 1001;
	cp_push(&b, &lanes[lane], &o);
	uint32_t bi = fg_pool_get(&lanes[lane].dp2cp);
	assert_int_not_equal(bi, FG_BUF_NONE);
	memcpy(fg_pool_buf(&lanes[lane].dp2cp, bi), x, sizeof(x));
	const uint64_t fp_given = 0x0123456789abcdefull; /* not the body's hash: proves no re-hash */
	o = (union fg_bmsg){.resolved = {.kind = FG_BM_RESOLVED, .lines = 0x15, .layer = 3, .token_seq = 1001,
					 .start_pos = 0, .seq_len = 1, .fingerprint = fp_given,
					 .udp_sent = 1, .ingress = FG_INGRESS_UDP,
					 .body = {.buf = bi, .len = sizeof(x)},
					 .t_ns = 5000, .t_last_ns = 4000, .t_open_ns = 1000}};
	cp_push(&b, &lanes[lane], &o);
	o = (union fg_bmsg){.expired = {.kind = FG_BM_EXPIRED, .layer = 1, .token_seq = 5}};
	cp_push(&b, &lanes[lane], &o);
	/* the frame a TLS consumer must get: encoded once, from the facts */
	uint8_t want[128];
	struct fg_resolved rr = {.token_seq = 1001, .dst_layer = 3, .start_pos = 0, .seq_len = 1,
				 .body = (const uint8_t *)x, .body_len = sizeof(x)};
	ssize_t rl = fg_resolved_encode(&cfg.bands, &rr, want, sizeof(want));
	assert_true(rl > 0);
	uint32_t before = fg_ring_count(lanes[lane].dp2cp.free);
	run_for(5ull * 1000 * 1000);
	assert_int_equal(ev.done, 1);
	assert_int_equal(ev.cookie, 77);
	assert_int_equal(ev.r.status.outcome, FG_O_ACCEPTED);
	assert_int_equal(ev.resolved, 1);
	assert_int_equal(ev.len, (size_t)rl);
	assert_memory_equal(ev.frame, want, (size_t)rl);
	/* the audit got the lcore's facts: its fingerprint as given (no
	 * re-hash on the control plane), its line mask, the body */
	assert_int_equal(au.resolved, 1);
	assert_true(au.fp == fp_given);
	assert_int_equal(au.lines, 0x15);
	assert_memory_equal(au.body, x, sizeof(x));
	/* and its times, for the lead: resolved when the resolving contribution
	 * was taken, delivered when the UDP consumer's copy went to TX */
	assert_int_equal(au.t.resolved_ns, 4000);
	assert_int_equal(au.t.delivered_ns, 5000);
	assert_int_equal(au.t.ingress, FG_INGRESS_UDP);

	/* a FULL canonical report from UDP: fingerprint computed on the lcore,
	 * passed on as the digest; its body by reference */
	uint32_t cbi = fg_pool_get(&lanes[lane].dp2cp);
	assert_int_not_equal(cbi, FG_BUF_NONE);
	memcpy(fg_pool_buf(&lanes[lane].dp2cp, cbi), x, sizeof(x));
	o = (union fg_bmsg){.canonical = {.kind = FG_BM_CANONICAL, .canon_kind = FG_CANON_FULL, .layer = 3,
					  .token_seq = 1001, .seq_len = 1, .fingerprint = fp_given,
					  .body = {.buf = cbi, .len = sizeof(x)}, .t_ns = 7000}};
	uint32_t free_before = fg_ring_count(lanes[lane].dp2cp.free);
	cp_push(&b, &lanes[lane], &o);
	run_for(5ull * 1000 * 1000);
	assert_int_equal(au.canonical, 1);
	assert_int_equal(au.src, 0); /* no sender named in the message */
	assert_int_equal(au.arrived_ns, 7000); /* the lcore's arrival time */
	assert_int_equal(au.canon.kind, FG_CANON_FULL);
	assert_true(au.canon.digest == fp_given);
	assert_int_equal(au.canon.token_seq, 1001);
	assert_memory_equal(au.canon_body, x, sizeof(x));
	assert_int_equal(fg_ring_count(lanes[lane].dp2cp.free), free_before + 1); /* released */
	/* a body reference outside the pool is refused, counted */
	o.canonical.body.buf = 1000;
	cp_push(&b, &lanes[lane], &o);
	run_for(5ull * 1000 * 1000);
	assert_int_equal(au.canonical, 1);
	assert_int_equal(e.st.bad_lane_msgs, 1);
	/* a digest from a UDP sender inside [shadow] canonical_sources: its
	 * address names its source class */
	cfg.canon_src[0] = (struct fg_prefix){.family = AF_INET, .addr = {10, 9, 0, 0}, .len = 16};
	cfg.n_canon_src = 1;
	o = (union fg_bmsg){.canonical = {.kind = FG_BM_CANONICAL, .canon_kind = FG_CANON_DIGEST, .layer = 3,
					  .token_seq = 1001, .seq_len = 1, .fingerprint = fp_given,
					  .body = {.buf = FG_BUF_NONE}, .t_ns = 7500,
					  .src = {.family = 4, .addr = {10, 9, 0, 7}, .port = 9000}}};
	cp_push(&b, &lanes[lane], &o);
	run_for(5ull * 1000 * 1000);
	assert_int_equal(au.canonical, 2);
	assert_int_equal(au.src, 1); /* the UDP sender: the engine's first */
	/* the same sender outside them: refused before the audit */
	o.canonical.src.addr[1] = 8;
	cp_push(&b, &lanes[lane], &o);
	run_for(5ull * 1000 * 1000);
	assert_int_equal(au.canonical, 2);
	assert_int_equal(e.st.canon_refused_source, 1);
	cfg.n_canon_src = 0;
	assert_int_equal(ev.ended, 1);
	assert_int_equal(fg_ring_count(lanes[lane].dp2cp.free), before + 1); /* released */
	const uint8_t *fr;
	size_t fl;
	assert_int_equal(cp_engine_lookup(&e, 3, 1001, &fr, &fl), FG_SLOT_RESOLVED);
	assert_int_equal(cp_engine_lookup(&e, 1, 5, &fr, &fl), FG_SLOT_EXPIRED);

	/* The lcore's dp2cp pool was empty: a RESOLVED and a FULL CANONICAL
	 * cross without their body (buf FG_BUF_NONE, len the body's length).
	 * The audit still gets the facts (judged by fingerprint), nothing is
	 * counted bad, no buffer is released, and no frame is made up for a
	 * TLS consumer. */
	uint32_t free_nb = fg_ring_count(lanes[lane].dp2cp.free);
	int resolved_nb = ev.resolved;
	o = (union fg_bmsg){.resolved = {.kind = FG_BM_RESOLVED, .lines = 0x15, .layer = 3, .token_seq = 1002,
					 .start_pos = 0, .seq_len = 1, .fingerprint = fp_given ^ 1,
					 .body = {.buf = FG_BUF_NONE, .len = sizeof(x)}}};
	cp_push(&b, &lanes[lane], &o);
	o = (union fg_bmsg){.canonical = {.kind = FG_BM_CANONICAL, .canon_kind = FG_CANON_FULL, .layer = 3,
					  .token_seq = 1002, .seq_len = 1, .fingerprint = fp_given ^ 1,
					  .body = {.buf = FG_BUF_NONE, .len = sizeof(x)}}};
	cp_push(&b, &lanes[lane], &o);
	run_for(5ull * 1000 * 1000);
	assert_int_equal(au.resolved, 2);
	assert_true(au.body_null);
	assert_true(au.fp == (fp_given ^ 1));
	assert_int_equal(au.canonical, 3);
	assert_true(au.canon.digest == (fp_given ^ 1));
	assert_int_equal(au.canon.body_len, sizeof(x));
	assert_int_equal(e.st.resolved_no_body, 1);
	assert_int_equal(e.st.canon_no_body, 1);
	assert_int_equal(e.st.bad_lane_msgs, 1); /* unchanged */
	assert_int_equal(ev.resolved, resolved_nb); /* no frame handed on */
	assert_int_equal(cp_engine_lookup(&e, 3, 1002, &fr, &fl), FG_SLOT_FREE);
	assert_int_equal(fg_ring_count(lanes[lane].dp2cp.free), free_nb);

	/* PEER reports: one entry per (family, address, port), refreshed */
	for (int k = 0; k < 3; k++) {
		o = (union fg_bmsg){.peer = {.kind = FG_BM_PEER, .family = 4, .port = k == 2 ? 4243 : 4242,
					     .t_ns = 1000 + (uint64_t)k}};
		o.peer.addr[0] = 10;
		o.peer.addr[3] = 7;
		cp_push(&b, &lanes[0], &o);
	}
	run_for(5ull * 1000 * 1000);
	assert_int_equal(e.n_peers, 2);
	assert_int_equal(e.peers[0].port, 4242);
	assert_int_equal(e.peers[0].reports, 2);
	assert_int_equal(e.peers[0].last_ns, 1001);
	assert_int_equal(e.peers[0].family, 4);
	assert_int_equal(e.peers[1].port, 4243);

	/* an OUTCOME for an unknown req_id is counted, not delivered */
	o = (union fg_bmsg){.outcome = {.kind = FG_BM_OUTCOME, .req_id = 999999}};
	cp_push(&b, &lanes[0], &o);
	run_for(5ull * 1000 * 1000);
	assert_int_equal(ev.done, 1);
	assert_int_equal(e.st.outcomes_unmatched, 1);

	/* a request whose OUTCOME never comes is answered no_slot after the
	 * timeout (the lcore dropped it on a full dp->cp ring) */
	n = mk_seed(buf, sizeof(buf), 1, 3001, 1, 0, x);
	assert_int_equal(submit(&e, buf, n, 99), 0);
	uint32_t lost_lane = fg_shard_of(3001, 1, 4, NL);
	assert_true(fg_ring_pop(lanes[lost_lane].to_dp, &m)); /* the "lcore" takes it and says nothing */
	ev.done = 0;
	e.reqs[m.contrib.req_id & (CP_ENGINE_REQS - 1)].t_ns -= CP_ENGINE_REQ_TIMEOUT_NS + 1;
	e.next_sweep_ns = 0;
	run_for(5ull * 1000 * 1000);
	assert_int_equal(ev.done, 1);
	assert_int_equal(ev.cookie, 99);
	assert_int_equal(ev.r.status.outcome, FG_O_NO_SLOT);
	assert_int_equal(e.st.outcomes_lost, 1);
	assert_int_equal(e.outstanding, 0);

	/* a full lane: -ENOBUFS, and no buffer is taken */
	int ok = 0, full = 0;
	for (uint32_t t = 0; t < 64; t++) {
		n = mk_seed(buf, sizeof(buf), 0, 2000 + t * NL, 1, 0, x); /* same shard: (t*2*4) % 2 == 0 */
		int r = submit(&e, buf, n, t);
		if (r == 0)
			ok++;
		else {
			assert_int_equal(r, -ENOBUFS);
			full++;
		}
	}
	assert_int_equal(ok, RING);
	assert_true(full > 0);
	assert_int_equal(fg_ring_count(lanes[0].cp2dp.free), 8 - RING);
	cp_engine_fini(&e);
	run_for(5ull * 1000 * 1000);
	assert_false(e.wake_armed); /* the read was cancelled */
	close(efd);
	for (int i = 0; i < NL; i++)
		for (int k = 0; k < 4; k++)
			free(keep[i].mem[k]);
}

/* One lane over fake memory: an 8-message to_dp ring, 64 to_cp, two
 * pools of 8 buffers of 256 bytes; no wake-up fd. */
static void mk_lane(struct fg_lane *lane, struct fake_lane *keep)
{
	memset(lane, 0, sizeof(*lane));
	lane->to_dp = mk_ring(&keep->mem[0], 8);
	lane->to_cp = mk_ring(&keep->mem[1], 64);
	mk_pool(&lane->cp2dp, &keep->mem[2], 8, 256);
	mk_pool(&lane->dp2cp, &keep->mem[3], 8, 256);
}

/* Arrivals wake the engine. A message pushed without the wake-up (a
 * deferred one, boundary.h) is drained by the 1 ms housekeeping tick, with
 * no wake-up; a signalled one completes the engine's eventfd read and the
 * drain answers the request. Wake-ups are edge-only: one per sleep. */
static void test_lanes_wake(void **state)
{
	(void)state;
	struct fg_lane lane;
	struct fake_lane keep;
	mk_lane(&lane, &keep);
	static struct fg_boundary b;
	b.n_lanes = 1;
	b.lanes = &lane;
	int efd = eventfd(0, EFD_CLOEXEC);
	assert_true(efd >= 0);
	fg_wake_init(&b.wake, efd);
	struct cp_engine e;
	memset(&ev, 0, sizeof(ev));
	/* First without answer spins (answer_spin_us = 0): every answer comes
	 * by the tick or by the eventfd, and a submit leaves the sleep as it is. */
	cfg.answer_spin_us = 0;
	assert_int_equal(cp_engine_init(&e, &L, &cfg, &b, &ops, NULL), 0);
	assert_int_equal(atomic_load(&b.wake.waiting), 1);

	const float x[HIDDEN] = {1, 2, 3, 4};
	uint8_t buf[128];
	size_t n = mk_seed(buf, sizeof(buf), 2, 7, 1, 0, x);
	assert_int_equal(submit(&e, buf, n, 55), 0);
	union fg_bmsg m, m2, o;
	assert_true(fg_ring_pop(lane.to_dp, &m));
	o = (union fg_bmsg){.outcome = {.kind = FG_BM_OUTCOME, .req_id = m.contrib.req_id}};
	o.outcome.status.outcome = FG_O_ACCEPTED;

	/* pushed but not signalled (deferred): the tick drains it, no wake-up */
	assert_true(fg_ring_push(lane.to_cp, &o));
	uint64_t t0 = cp_now_ns();
	while (ev.done == 0 && cp_now_ns() - t0 < 2ull * 1000 * 1000 * 1000)
		run_for(1000ull * 1000);
	assert_int_equal(ev.done, 1);
	assert_int_equal(ev.cookie, 55);
	assert_int_equal(fg_ring_count(lane.to_cp), 0);
	assert_int_equal(e.st.wakes, 0);
	assert_int_equal(atomic_load(&b.wake.waiting), 1); /* asleep again */

	/* a second request, answered with the wake-up */
	ev.done = 0;
	n = mk_seed(buf, sizeof(buf), 2, 8, 1, 0, x);
	assert_int_equal(submit(&e, buf, n, 56), 0);
	assert_true(fg_ring_pop(lane.to_dp, &m));
	o = (union fg_bmsg){.outcome = {.kind = FG_BM_OUTCOME, .req_id = m.contrib.req_id}};
	o.outcome.status.outcome = FG_O_ACCEPTED;
	assert_true(fg_ring_push(lane.to_cp, &o));

	/* the producer's edge check: the first burst after the sleep signals,
	 * the next ones do not (the flag was taken) */
	assert_true(fg_wake_after_push(&b.wake));
	assert_false(fg_wake_after_push(&b.wake));
	assert_false(fg_wake_after_push(&b.wake));
	uint64_t one = 1;
	assert_int_equal(write(efd, &one, sizeof(one)), (ssize_t)sizeof(one));
	t0 = cp_now_ns();
	/* run the loop only until the answer: a stop timer far beyond any tick */
	while (ev.done == 0 && cp_now_ns() - t0 < 2ull * 1000 * 1000 * 1000)
		run_for(100ull * 1000);
	assert_int_equal(ev.done, 1);
	assert_int_equal(ev.cookie, 56);
	assert_int_equal(e.st.wakes, 1);
	assert_int_equal(atomic_load(&b.wake.waiting), 1); /* asleep again */

	/* many messages while asleep: one wake-up, all drained */
	int writes = 0;
	for (int k = 0; k < 10; k++) {
		o = (union fg_bmsg){.expired = {.kind = FG_BM_EXPIRED, .layer = 1, .token_seq = 100 + (uint32_t)k}};
		assert_true(fg_ring_push(lane.to_cp, &o));
		if (fg_wake_after_push(&b.wake)) {
			writes++;
			assert_int_equal(write(efd, &one, sizeof(one)), (ssize_t)sizeof(one));
		}
	}
	assert_int_equal(writes, 1);
	ev.ended = 0;
	t0 = cp_now_ns();
	while (ev.ended < 10 && cp_now_ns() - t0 < 2ull * 1000 * 1000 * 1000)
		run_for(100ull * 1000);
	assert_int_equal(ev.ended, 10);
	assert_int_equal(e.st.wakes, 2);
	assert_int_equal(fg_ring_count(lane.to_cp), 0);

	/* With answer spins: a submit takes the sleep back (the server's batch
	 * end will poll for the answer), so the lcore's push writes no
	 * eventfd; the spin takes the answer and announces the sleep again. */
	cfg.answer_spin_us = 50;
	ev.done = 0;
	n = mk_seed(buf, sizeof(buf), 2, 9, 1, 0, x);
	assert_int_equal(submit(&e, buf, n, 57), 0);
	assert_int_equal(atomic_load(&b.wake.waiting), 0);
	assert_true(fg_ring_pop(lane.to_dp, &m));
	o = (union fg_bmsg){.outcome = {.kind = FG_BM_OUTCOME, .req_id = m.contrib.req_id}};
	o.outcome.status.outcome = FG_O_ACCEPTED;
	assert_true(fg_ring_push(lane.to_cp, &o));
	assert_false(fg_wake_after_push(&b.wake));
	/* every answer in: handled, and nothing to call again for (the
	 * loop's own submit sends the output) */
	assert_false(cp_engine_spin(&e));
	assert_int_equal(ev.done, 1);
	assert_int_equal(ev.cookie, 57);
	assert_int_equal(e.st.spin_end[CP_SPIN_ANSWERED], 1);
	assert_int_equal(e.st.spin_hits, 1);
	assert_int_equal(e.st.wakes, 2);
	assert_int_equal(atomic_load(&b.wake.waiting), 1); /* asleep again */

	/* Two owed, one answered: the spin takes it, runs out of budget on
	 * the other and asks to be called again after a flush and submit. */
	ev.done = 0;
	n = mk_seed(buf, sizeof(buf), 2, 10, 1, 0, x);
	assert_int_equal(submit(&e, buf, n, 58), 0);
	n = mk_seed(buf, sizeof(buf), 2, 11, 1, 0, x);
	assert_int_equal(submit(&e, buf, n, 59), 0);
	assert_true(fg_ring_pop(lane.to_dp, &m));
	assert_true(fg_ring_pop(lane.to_dp, &m2));
	o = (union fg_bmsg){.outcome = {.kind = FG_BM_OUTCOME, .req_id = m.contrib.req_id}};
	o.outcome.status.outcome = FG_O_ACCEPTED;
	assert_true(fg_ring_push(lane.to_cp, &o));
	assert_true(cp_engine_spin(&e));
	assert_int_equal(ev.done, 1);
	assert_int_equal(ev.cookie, 58);
	assert_int_equal(e.st.spin_end[CP_SPIN_BUDGET], 1);
	/* called again with nothing coming: no messages, nothing to repeat
	 * (whether it spun its budget or, a millisecond after the submit on
	 * a loaded machine, went to sleep at once) */
	assert_false(cp_engine_spin(&e));
	o.outcome.req_id = m2.contrib.req_id;
	assert_true(fg_ring_push(lane.to_cp, &o));
	assert_false(cp_engine_spin(&e));
	assert_int_equal(ev.done, 2);
	assert_int_equal(ev.cookie, 59);

	cp_engine_fini(&e);
	run_for(5ull * 1000 * 1000);
	close(efd);
	for (int k = 0; k < 4; k++)
		free(keep.mem[k]);
}

/* The other way ([poll] idle_wake): a push to an lcore's to_dp writes the
 * lane's eventfd only when that lcore announced its sleep, once per sleep
 * (boundary.h, struct fg_lane.wake), and counts it. */
static void test_lanes_lcore_wake(void **state)
{
	(void)state;
	struct fg_lane lane;
	struct fake_lane keep;
	mk_lane(&lane, &keep);
	int lfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(lfd >= 0);
	fg_wake_init(&lane.wake, lfd);
	static struct fg_boundary b;
	b.n_lanes = 1;
	b.lanes = &lane;
	int efd = eventfd(0, EFD_CLOEXEC);
	assert_true(efd >= 0);
	fg_wake_init(&b.wake, efd);
	struct cp_engine e;
	memset(&ev, 0, sizeof(ev));
	cfg.answer_spin_us = 0;
	assert_int_equal(cp_engine_init(&e, &L, &cfg, &b, &ops, NULL), 0);
	const float x[HIDDEN] = {1, 2, 3, 4};
	uint8_t buf[128];
	uint64_t v;

	/* the lcore is awake: a push writes nothing */
	size_t n = mk_seed(buf, sizeof(buf), 2, 7, 1, 0, x);
	assert_int_equal(submit(&e, buf, n, 60), 0);
	assert_int_equal(read(lfd, &v, sizeof(v)), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(e.st.lcore_wakes, 0);

	/* it announced its sleep: the next push wakes it, once */
	fg_wake_prepare(&lane.wake);
	n = mk_seed(buf, sizeof(buf), 2, 8, 1, 0, x);
	assert_int_equal(submit(&e, buf, n, 61), 0);
	assert_int_equal(atomic_load(&lane.wake.waiting), 0);
	assert_int_equal(read(lfd, &v, sizeof(v)), (ssize_t)sizeof(v));
	assert_int_equal(v, 1);
	assert_int_equal(e.st.lcore_wakes, 1);
	n = mk_seed(buf, sizeof(buf), 2, 9, 1, 0, x);
	assert_int_equal(submit(&e, buf, n, 62), 0);
	assert_int_equal(read(lfd, &v, sizeof(v)), -1);
	assert_int_equal(e.st.lcore_wakes, 1);
	assert_int_equal(fg_ring_count(lane.to_dp), 3); /* every frame pushed */
	assert_int_equal(e.st.lcore_wake_errors, 0);

	cp_engine_fini(&e);
	run_for(5ull * 1000 * 1000);
	close(efd);
	close(lfd);
	for (int k = 0; k < 4; k++)
		free(keep.mem[k]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_local),
		cmocka_unit_test(test_lanes),
		cmocka_unit_test(test_lanes_wake),
		cmocka_unit_test(test_lanes_lcore_wake),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

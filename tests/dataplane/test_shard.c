/* test_shard.c - the shard work (dataplane/dp_shard.c, dp_deliver.c,
 * dp_reply.c) driven through its I/O interface (dp_io.h) by a recording
 * fake, with no DPDK: what the DPDK lcore and bench/dp/kudp_rx both run.
 *   - three contributions (lines 1, 3, 5) in two fragments each, the
 *     first one's out of order: a status per contribution, the seed resolved and
 *     sent to the consumer in the fragmented profile, bit for bit
 *     ((x + attn) + ffn), reported to the control plane with its body;
 *   - the tick flushes one ACK per sender naming its frames; senders
 *     taking turns: each told to the control plane once a second, ACKed
 *     its own frames over its latest route;
 *   - reliable delivery: resent every resend_ms, an ACK from another
 *     address retires nothing, the consumer's ACK retires it (no resend
 *     after), and with no ACK the seed is given up after `resends`;
 *   - decode once: a short header and a truncated frame are counted
 *     malformed, a consumer ACK is recognised without ingest;
 *   - the consumer's window at the default ack_window (auto): a fleet
 *     consumer is recognised, a stale and a far-ahead base are ignored and
 *     counted while the pending delivery is resent; an exact consumer is
 *     never read the fleet's way;
 *   - the burst path (dp_shard_add, dp_shard_run) places a burst of
 *     interleaved frames, a refused fragment header inside a frame's run,
 *     a duplicate, a raw datagram, a frame whose fragments come out of
 *     order and a consumer ACK exactly as dp_shard_dgram does one by one:
 *     every counter, every datagram sent, every report; and so a burst
 *     of five-fragment frames whose runs start at fragment 0 (placed with
 *     it in one call), one with a repeat, one refused at fragment 0, one
 *     with a fragment held before its fragment 0;
 *   - frames another lcore handed over (dp_shard_handed) are placed,
 *     answered, ACKed and delivered exactly as the same frames arriving in
 *     fragments on their owner, handed whole or as chunk lists (the
 *     received buffers reassembly kept, dp_reasm.h);
 *   - a chunk list's buffers are each given back once whatever ends it:
 *     the owner's inbox full, the owner placing it, reassembly timing out;
 *   - with io->sink, the resolution writes the lane message's body (the
 *     slot's bytes exactly), and an empty pool, a full ring and a ring
 *     that fills before the commit lose nothing and leak no buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fg/config.h"
#include "fg/counters.h"
#include "fg/line.h"
#include "dp_io.h"
#include "dp_reply.h"
#include "dp_shard.h"

#define MS 1000000ull
#define H 512u /* 2048-byte bodies: two fragments at mtu 1472 */

/* ---- a recording dp_io ----------------------------------------------------- */

struct sent {
	struct dp_peer to;
	struct dp_route rt;
	uint32_t len;
	uint8_t b[2048];
};

static struct {
	struct sent s[256];
	unsigned n;
	unsigned reports[16];
	unsigned bodies;
	uint8_t xmem[8][DP_XFER_HDR + 8192 + DP_RA_KEEP_LIST] __attribute__((aligned(64)));
	void *xfree[8];
	unsigned nfree;
	unsigned kept_back; /* received buffers of chunk lists given back (f_kept_put) */
	int handoff;        /* 0: no hand-off expected; 1: refused (a full inbox); 2: taken, to handed */
	struct dp_xfer *handed;
} io;

static bool f_dgram(struct dp_lcore *lc, const struct dp_route *rt, const struct dp_peer *to, const uint8_t *head,
		    uint32_t head_len, const uint8_t *data, uint32_t len)
{
	(void)lc;
	assert_true(io.n < 256);
	assert_true(head_len <= DP_DGRAM_HEAD_MAX);
	struct sent *s = &io.s[io.n++];
	s->to = *to;
	s->rt = *rt;
	s->len = head_len + len;
	assert_true(s->len <= sizeof(s->b));
	if (head_len)
		memcpy(s->b, head, head_len);
	memcpy(s->b + head_len, data, len);
	return true;
}

static bool f_route(struct dp_lcore *lc, int family, const uint8_t *addr, struct dp_route *rt, uint64_t now)
{
	(void)lc;
	(void)addr;
	(void)now;
	memset(rt, 0, sizeof(*rt));
	return family == 4;
}

static struct dp_xfer *f_xget(struct dp_lcore *lc)
{
	(void)lc;
	return io.nfree ? io.xfree[--io.nfree] : NULL;
}

static void f_xput(struct dp_lcore *lc, struct dp_xfer *x)
{
	(void)lc;
	assert_true(io.nfree < 8);
	io.xfree[io.nfree++] = x;
}

static bool f_handoff(struct dp_lcore *lc, unsigned owner, struct dp_xfer *x)
{
	(void)lc;
	if (!io.handoff)
		fail_msg("one shard: no hand-off");
	assert_int_equal(owner, 1);
	if (io.handoff == 1)
		return false;
	io.handed = x;
	return true;
}

/* A chunk list's received buffers (struct keep_tok here) given back: each
 * once, to the lcore that received them (0). */
struct keep_tok {
	unsigned given;
};
static void f_kept_put(struct dp_lcore *lc, unsigned src, void *const *m, unsigned n)
{
	assert_int_equal(src, 0);
	for (unsigned i = 0; i < n; i++)
		((struct keep_tok *)m[i])->given++;
	io.kept_back += n;
	dp_reasm_kept_back(&lc->reasm, n); /* src's table: the one lcore here */
}

static void f_report(struct dp_lcore *lc, const union fg_bmsg *m)
{
	(void)lc;
	if (m->kind < 16)
		io.reports[m->kind]++;
}

static bool f_report_body(struct dp_lcore *lc, union fg_bmsg *m, struct fg_bm_body *body, const uint8_t *src,
			  uint32_t len)
{
	(void)body;
	(void)src;
	f_report(lc, m);
	if (len)
		io.bodies++;
	return true;
}

static const struct dp_io fake = {f_dgram, f_route, f_xget, f_xput, f_handoff, f_report, f_report_body, NULL, NULL, NULL, NULL,
				  NULL, NULL, NULL, NULL, NULL, f_kept_put};

static void *rget(void *arg)
{
	struct dp_xfer *x = f_xget(arg);
	return x ? dp_xfer_data(x) : NULL;
}
static void rput(void *arg, void *b) { f_xput(arg, dp_xfer_of(b)); }

/* ---- the shard ----------------------------------------------------------------- */

static struct fg_config cfg;
static struct fg_seed_limits lim;
static struct fg_dp_counters K;
static struct dp_xcounters XK;
static struct dp_shard_env env;
static struct dp_lcore lc;

static const struct dp_route no_route;
static const struct dp_peer consumer = {.family = 4, .addr = {10, 0, 0, 9}, .port = 7000};

static void *zalloc(size_t sz)
{
	void *p = aligned_alloc(64, (sz + 63) & ~(size_t)63);
	assert_non_null(p);
	memset(p, 0, sz);
	return p;
}

/* The shard of configuration ini, afresh (keep_as_one sets it up again). */
static const char *setup_cur;
static void setup_ini(const char *ini)
{
	struct fg_config_error err;
	setup_cur = ini;
	fg_config_default(&cfg);
	assert_int_equal(fg_config_parse(&cfg, ini, "test", &err), 0);
	memset(&io, 0, sizeof(io));
	for (unsigned i = 0; i < 8; i++)
		io.xfree[io.nfree++] = io.xmem[i];
	memset(&lc, 0, sizeof(lc));
	memset(&K, 0, sizeof(K));
	memset(&XK, 0, sizeof(XK));
	fg_config_limits(&cfg, &lim);
	env = (struct dp_shard_env){.cfg = &cfg, .io = &fake, .n = 1, .chunk = fg_frag_chunk_size(cfg.mtu),
				    .frame_max = 8192, .ack_interval_ns = 50 * MS};
	lc.env = &env;
	lc.k = &K;
	lc.xk = &XK;
	lc.ictx.bands = &cfg.bands;
	lc.ictx.limits = &lim;
	struct fg_lines ls;
	fg_lines_init(&ls, cfg.line_initial, &cfg.policy, 0);
	lc.ictx.lines = fg_linefacts_pack(&ls, 0);
	struct fg_slots_cfg sc;
	fg_config_slots(&cfg, 1, &sc);
	size_t sz = fg_slots_mem_size(&sc);
	lc.slots_mem = zalloc(sz);
	assert_int_equal(fg_slots_init(&lc.slots, lc.slots_mem, sz, &sc), 0);
	struct dp_reasm_cfg rc = {.contexts = 4, .chunk = env.chunk, .frame_max = env.frame_max,
				  .timeout_ns = 100 * MS, .slots = &lc.slots, .shard_self = 0, .n_shards = 1,
				  .n_layers = cfg.layers, .bufs = {.get = rget, .put = rput, .arg = &lc}};
	sz = dp_reasm_mem_size(&rc);
	lc.reasm_mem = zalloc(sz);
	assert_int_equal(dp_reasm_init(&lc.reasm, lc.reasm_mem, sz, &rc), 0);
	sz = dp_ack_mem_size(16);
	lc.ack_mem = zalloc(sz);
	assert_int_equal(dp_ack_init(&lc.ack, lc.ack_mem, sz, 16), 0);
	struct dp_dlv_cfg dc = {.capacity = 16, .retry_ns = (uint64_t)cfg.delivery_resend_ms * MS,
				.retries = cfg.delivery_resends};
	sz = dp_dlv_mem_size(dc.capacity);
	lc.dlv_mem = zalloc(sz);
	assert_int_equal(dp_dlv_init(&lc.dlv, lc.dlv_mem, sz, &dc), 0);
	lc.next_ack_ns = 50 * MS;
	lc.next_timer_ns = 1 * MS;
}

static int setup(void **st)
{
	(void)st;
	setup_ini("[model]\nhidden = 512\nlayers = 4\n[rules]\ndefault = 1,3,5\n"
		  "[udp]\nmtu = 1472\nsend_status = true\n"
		  "[consumers]\ndefault = 10.0.0.9:7000\nresend_ms = 10\nresends = 2\n");
	return 0;
}

/* The fleet's shape: hidden 1536, a contribution in five fragments. */
#define H5 1536u
static int setup_wide(void **st)
{
	(void)st;
	setup_ini("[model]\nhidden = 1536\nlayers = 4\n[rules]\ndefault = 1,3,5\n"
		  "[udp]\nmtu = 1472\nsend_status = true\n"
		  "[consumers]\ndefault = 10.0.0.9:7000\nresend_ms = 10\nresends = 2\n");
	return 0;
}

static int teardown(void **st)
{
	(void)st;
	free(lc.slots_mem);
	free(lc.reasm_mem);
	free(lc.ack_mem);
	free(lc.dlv_mem);
	return 0;
}

static uint64_t C(enum fg_dp_counter c) { return atomic_load_explicit(&K.c[c], memory_order_relaxed); }

static struct dp_peer sender(unsigned i) { return (struct dp_peer){.family = 4, .addr = {10, 0, 0, (uint8_t)(1 + i)}, .port = (uint16_t)(9000 + i)}; }

/* Send frame[0..len) from `from` in the fragmented profile (frame id fid). */
static void send_frame(const struct dp_peer *from, uint16_t fid, const uint8_t *frame, uint32_t len, uint64_t now)
{
	uint32_t total = fg_frag_count(len, env.chunk);
	for (uint32_t i = 0; i < total; i++) {
		uint8_t dg[2048];
		uint32_t off = i * env.chunk, n = len - off < env.chunk ? len - off : env.chunk;
		fg_put_be16(dg, fid);
		dg[2] = (uint8_t)i;
		dg[3] = (uint8_t)total;
		memcpy(dg + 4, frame + off, n);
		const struct dp_flow fl = dp_flow_of(from, &no_route, true);
		struct dp_dgram d = {.fl = &fl, .payload = dg, .len = n + 4};
		dp_shard_dgram(&lc, &d, now);
	}
}

static uint32_t contribution(uint8_t line, const float *body, uint8_t *buf, size_t cap)
{
	struct fg_seed sd = {.token_seq = 7, .dst_layer = 2, .line = line, .start_pos = 0, .seq_len = 1,
			     .body = (const uint8_t *)body, .body_len = H * 4};
	ssize_t n = fg_seed_encode(&cfg.bands, &sd, buf, cap);
	assert_true(n > 0);
	return (uint32_t)n;
}

/* Reassemble what was sent to the consumer since index `from` (one frame). */
static uint32_t consumer_frame(unsigned from, uint8_t *out, size_t cap, unsigned *ndgrams)
{
	uint32_t len = 0;
	*ndgrams = 0;
	for (unsigned i = from; i < io.n; i++) {
		if (!dp_peer_eq(&io.s[i].to, &consumer))
			continue;
		struct fg_frag f;
		assert_true(fg_frag_decode(io.s[i].b, io.s[i].len, &f) >= 0);
		uint32_t off = f.index * env.chunk;
		assert_true(off + f.chunk_len <= cap);
		memcpy(out + off, f.chunk, f.chunk_len);
		if (off + f.chunk_len > len)
			len = off + f.chunk_len;
		(*ndgrams)++;
	}
	return len;
}

static unsigned sent_to(unsigned from, const struct dp_peer *p)
{
	unsigned k = 0;
	for (unsigned i = from; i < io.n; i++)
		k += dp_peer_eq(&io.s[i].to, p);
	return k;
}

/* The consumer ACKs (stream resolved_base + 2, seq 7) from `as`. */
static void consumer_ack(const struct dp_peer *as, uint64_t now)
{
	struct fg_ack_entry e = {.stream_id = (uint16_t)(cfg.bands.resolved_base + 2), .base_seq = 7, .bitmap_lo = 1};
	uint8_t buf[256];
	uint32_t lens[2];
	assert_int_equal(fg_ack_build(&e, 1, cfg.mtu, 77, buf, sizeof(buf), lens, 2), 1);
	const struct dp_flow fl = dp_flow_of(as, &no_route, true);
	struct dp_dgram d = {.fl = &fl, .payload = buf, .len = lens[0]};
	dp_shard_dgram(&lc, &d, now);
}

static void resolve_one(uint64_t now)
{
	static float x[H], a[H], f[H];
	for (unsigned i = 0; i < H; i++) {
		x[i] = 1.0f + (float)i * 0.25f;
		a[i] = 1e-3f * (float)(i % 17) - 0.5f;
		f[i] = 3.0e7f / (float)(i + 1);
	}
	uint8_t fr[8192];
	const float *bodies[3] = {x, a, f};
	const uint8_t lines[3] = {1, 3, 5};
	for (unsigned k = 0; k < 3; k++) {
		struct dp_peer p = sender(k);
		uint32_t n = contribution(lines[k], bodies[k], fr, sizeof(fr));
		if (k == 0) {
			/* one whole frame in one datagram cannot hold 2 KiB at this
			 * mtu: send the first one's fragments in reverse order */
			uint32_t total = fg_frag_count(n, env.chunk);
			assert_int_equal(total, 2);
			for (int i = (int)total - 1; i >= 0; i--) {
				uint8_t dg[2048];
				uint32_t off = (uint32_t)i * env.chunk, m = n - off < env.chunk ? n - off : env.chunk;
				fg_put_be16(dg, 10);
				dg[2] = (uint8_t)i;
				dg[3] = (uint8_t)total;
				memcpy(dg + 4, fr + off, m);
				const struct dp_flow fl = dp_flow_of(&p, &no_route, true);
				struct dp_dgram d = {.fl = &fl, .payload = dg, .len = m + 4};
				dp_shard_dgram(&lc, &d, now);
			}
		} else {
			send_frame(&p, (uint16_t)(10 + k), fr, n, now);
		}
		assert_int_equal(sent_to(0, &p), 1); /* its status */
	}
	assert_int_equal(C(FG_C_CONTRIB_ACCEPTED), 3);
	assert_int_equal(C(FG_C_SEEDS_RESOLVED), 1);
	assert_int_equal(C(FG_C_SEEDS_SENT), 1);
	assert_int_equal(io.reports[FG_BM_RESOLVED], 1);
	assert_int_equal(io.bodies, 1);
	/* the seed at the consumer, bit for bit: ((x + attn) + ffn) */
	uint8_t got[8192];
	unsigned nd;
	uint32_t len = consumer_frame(0, got, sizeof(got), &nd);
	assert_int_equal(nd, 2);
	struct fg_frame ff;
	assert_true(fg_frame_decode(got, len, FG_TRANSPORT_MESSAGE, &ff) == (ssize_t)len);
	struct fg_resolved r;
	assert_true(fg_resolved_decode(&ff, 2, &lim, &r) >= 0);
	assert_int_equal(r.token_seq, 7);
	assert_int_equal(r.body_len, H * 4);
	for (unsigned i = 0; i < H; i++) {
		float want = (x[i] + a[i]) + f[i], v;
		memcpy(&v, r.body + 4 * i, 4);
		assert_memory_equal(&v, &want, 4);
	}
}

static void test_resolve_ack_and_resend(void **st)
{
	(void)st;
	uint64_t now = 2 * MS;
	resolve_one(now);
	/* the tick after a resolution flushes the ACKs: one per sender */
	unsigned mark = io.n;
	dp_shard_tick(&lc, now);
	for (unsigned k = 0; k < 3; k++) {
		struct dp_peer p = sender(k);
		assert_int_equal(sent_to(mark, &p), 1);
	}
	assert_int_equal(C(FG_C_ACKS_SENT), 3);
	/* not ACKed: resent after resend_ms (10 ms) */
	mark = io.n;
	dp_shard_tick(&lc, now + 11 * MS);
	assert_int_equal(C(FG_C_DELIVERY_RESENT), 1);
	assert_int_equal(sent_to(mark, &consumer), 2);
	/* an ACK from another address retires nothing */
	struct dp_peer other = sender(0);
	consumer_ack(&other, now + 12 * MS);
	assert_int_equal(C(FG_C_DELIVERY_ACKED), 0);
	/* the consumer's ACK retires it: no resend after */
	consumer_ack(&consumer, now + 13 * MS);
	assert_int_equal(C(FG_C_DELIVERY_ACKED), 1);
	assert_int_equal(lc.dlv.n, 0);
	mark = io.n;
	dp_shard_tick(&lc, now + 40 * MS);
	dp_shard_tick(&lc, now + 80 * MS);
	assert_int_equal(sent_to(mark, &consumer), 0);
	assert_int_equal(C(FG_C_DELIVERY_RESENT), 1);
	assert_int_equal(C(FG_C_DROP_MALFORMED), 0);
	assert_int_equal(io.nfree, 8); /* every xfer buffer back */
}

/* The frame is never assembled on the lcore: each datagram gathers its
 * part of the head and of the slot's body. Resent at chunk sizes that cut
 * the 18-byte head (10 bytes: fragment 1 holds its end and the body's
 * start) and at one that ends exactly on it (18: fragment 0 is the head
 * alone), the consumer still reassembles the same frame bit for bit. */
static void test_resend_split_head(void **st)
{
	(void)st;
	uint64_t now = 2 * MS;
	resolve_one(now);
	static uint8_t first[8192], again[8192];
	unsigned nd;
	uint32_t len = consumer_frame(0, first, sizeof(first), &nd);
	assert_int_equal(len, FG_RESOLVED_HEAD_LEN + H * 4);
	static const uint32_t chunks[] = {10, 18};
	uint32_t saved = env.chunk;
	for (unsigned k = 0; k < FG_ARRAY_LEN(chunks); k++) {
		io.n = 0; /* only this resend's datagrams */
		env.chunk = chunks[k];
		dp_shard_tick(&lc, now + (k + 1) * 11 * MS);
		env.chunk = saved;
		uint32_t want = fg_frag_count(len, chunks[k]);
		assert_int_equal(sent_to(0, &consumer), want);
		memset(again, 0, sizeof(again));
		env.chunk = chunks[k];
		assert_int_equal(consumer_frame(0, again, sizeof(again), &nd), len);
		env.chunk = saved;
		assert_int_equal(nd, want);
		assert_memory_equal(again, first, len);
	}
	assert_int_equal(C(FG_C_DELIVERY_RESENT), 2);
}

static void test_given_up_without_ack(void **st)
{
	(void)st;
	uint64_t now = 2 * MS;
	resolve_one(now);
	for (unsigned t = 1; t <= 6; t++)
		dp_shard_tick(&lc, now + t * 11 * MS);
	assert_int_equal(C(FG_C_DELIVERY_RESENT), 2); /* resends = 2 */
	assert_int_equal(C(FG_C_DELIVERY_GIVEN_UP), 1);
	assert_int_equal(lc.dlv.n, 0);
}

/* ---- the consumer's window at the default [consumers] ack_window ---------- */

static uint64_t X(enum dp_xcounter c) { return atomic_load_explicit(&XK.x[c], memory_order_relaxed); }

/* Resolve token t on layer 2: three one-line contributions (2 fragments each). */
static void resolve_token(uint32_t t, uint64_t now)
{
	static float body[H];
	uint8_t fr[8192];
	const uint8_t lines[3] = {1, 3, 5};
	for (unsigned k = 0; k < 3; k++) {
		for (unsigned i = 0; i < H; i++)
			body[i] = (float)(t * 3 + k) + (float)i * 0.5f;
		struct fg_seed sd = {.token_seq = t, .dst_layer = 2, .line = lines[k], .start_pos = 0, .seq_len = 1,
				     .body = (const uint8_t *)body, .body_len = H * 4};
		ssize_t n = fg_seed_encode(&cfg.bands, &sd, fr, sizeof(fr));
		assert_true(n > 0);
		struct dp_peer p = sender(k);
		send_frame(&p, (uint16_t)(t * 4 + k), fr, (uint32_t)n, now);
	}
	io.n = 0; /* the record only needs what comes next */
}

/* One ACK entry of layer 2's stream from the consumer. */
static void consumer_entry(uint32_t base, uint64_t bits, uint64_t now)
{
	struct fg_ack_entry e = {.stream_id = (uint16_t)(cfg.bands.resolved_base + 2), .base_seq = base,
				 .bitmap_lo = (uint32_t)bits, .bitmap_hi = (uint32_t)(bits >> 32)};
	uint8_t buf[256];
	uint32_t lens[2];
	assert_int_equal(fg_ack_build(&e, 1, cfg.mtu, 77, buf, sizeof(buf), lens, 2), 1);
	const struct dp_flow fl = dp_flow_of(&consumer, &no_route, true);
	struct dp_dgram d = {.fl = &fl, .payload = buf, .len = lens[0]};
	dp_shard_dgram(&lc, &d, now);
}

/* The fleet's consumer (wire.md 2.1) at the default ack_window (auto): it
 * is seen ACKing the fleet's way; then a stale base (below the window) and
 * a far-ahead one (beyond anything sent) are ignored and counted, and the
 * delivery still pending is resent, not held for a window nor taken as
 * delivered. */
static void test_window_stale_and_ahead_bases_ignored(void **st)
{
	(void)st;
	assert_int_equal(cfg.consumer_ack_window, FG_ACKWIN_AUTO);
	uint64_t now = 2 * MS;
	for (uint32_t t = 1000; t < 1004; t++)
		resolve_token(t, now);
	assert_int_equal(C(FG_C_SEEDS_SENT), 4);
	/* it holds 1000, then 999 (resolved late), 1001, 1002: the same
	 * base, more bits */
	resolve_token(999, now);
	consumer_entry(1000, 0x1, now);
	consumer_entry(999, 0x3, now);
	consumer_entry(999, 0x7, now);
	assert_int_equal(X(DP_X_DLV_FLEET_SEEN), 0);
	consumer_entry(999, 0xF, now);
	assert_int_equal(X(DP_X_DLV_FLEET_SEEN), 1);
	assert_int_equal(C(FG_C_DELIVERY_ACKED), 4);
	assert_int_equal(lc.dlv.n, 1); /* 1003 */
	/* a stale base: read as the window, 1003 would lie beyond 900 + 63
	 * and wait without resends */
	consumer_entry(900, 0x1, now + 1 * MS);
	assert_int_equal(X(DP_X_DLV_BASE_STALE), 1);
	dp_shard_tick(&lc, now + 11 * MS);
	assert_int_equal(C(FG_C_DELIVERY_RESENT), 1);
	assert_int_equal(X(DP_X_DLV_WINDOW_WAIT), 0);
	assert_int_equal(sent_to(0, &consumer), 2); /* the seed again, two fragments */
	/* a far-ahead base: read as the window, 1003 would be delivered */
	consumer_entry(50000, 0x1, now + 12 * MS);
	assert_int_equal(X(DP_X_DLV_BASE_AHEAD), 1);
	dp_shard_tick(&lc, now + 22 * MS);
	assert_int_equal(C(FG_C_DELIVERY_RESENT), 2);
	assert_int_equal(C(FG_C_DELIVERY_ACKED), 4);
	/* resends exhausted (2): given up, counted; nothing silently delivered */
	dp_shard_tick(&lc, now + 33 * MS);
	assert_int_equal(C(FG_C_DELIVERY_GIVEN_UP), 1);
	assert_int_equal(X(DP_X_DLV_GIVEUP_RESENDS), 1);
	assert_int_equal(lc.dlv.n, 0);
	/* the consumer's real base still moves the window; a delivery below
	 * it is resent, not taken as delivered (the consumer may have lost it
	 * before it took a later one), and its own ACK retires it */
	consumer_entry(1003, 0x1, now + 34 * MS);
	resolve_token(990, now + 35 * MS); /* resolved late, below the base */
	assert_int_equal(C(FG_C_SEEDS_SENT), 6);
	dp_shard_tick(&lc, now + 46 * MS);
	assert_int_equal(C(FG_C_DELIVERY_RESENT), 3);
	consumer_entry(990, 0x1, now + 47 * MS);
	assert_int_equal(C(FG_C_DELIVERY_ACKED), 5);
	assert_int_equal(lc.dlv.n, 0);
}

/* A consumer that ACKs exactly what it received (a new base each frame)
 * is never read the fleet's way: its ACK of 1001 says nothing about 1000,
 * which is resent. */
static void test_window_exact_consumer_not_fleet(void **st)
{
	(void)st;
	uint64_t now = 2 * MS;
	for (uint32_t t = 1000; t < 1003; t++)
		resolve_token(t, now);
	consumer_entry(1001, 0x1, now);
	consumer_entry(1002, 0x1, now);
	consumer_entry(1002, 0x1, now); /* a duplicate ACK: the same base, no new bit */
	assert_int_equal(X(DP_X_DLV_FLEET_SEEN), 0);
	assert_int_equal(C(FG_C_DELIVERY_ACKED), 2);
	dp_shard_tick(&lc, now + 11 * MS);
	assert_int_equal(C(FG_C_DELIVERY_RESENT), 1);
	assert_int_equal(C(FG_C_DELIVERY_ACKED), 2);
}

static void test_malformed_counted(void **st)
{
	(void)st;
	struct dp_peer p = sender(0);
	/* a whole frame (frag_total 1) with a 5-byte header, then one whose
	 * header says more payload than the datagram holds */
	uint8_t dg[64] = {0, 1, 0, 1, 0xAF, 0x62, 0, 0, 0};
	const struct dp_flow fl = dp_flow_of(&p, &no_route, true);
	struct dp_dgram d = {.fl = &fl, .payload = dg, .len = 9};
	dp_shard_dgram(&lc, &d, MS);
	assert_int_equal(C(FG_C_DROP_MALFORMED), 1);
	uint8_t fr[32] = {0};
	fg_put_be16(fr, 0xAF62);
	fr[9] = 100; /* length 100, 10 bytes present */
	fg_put_be16(dg, 2);
	dg[2] = 0;
	dg[3] = 1;
	memcpy(dg + 4, fr, 20);
	d.len = 24;
	dp_shard_dgram(&lc, &d, MS);
	assert_int_equal(C(FG_C_DROP_MALFORMED), 2);
	assert_int_equal(C(FG_C_CONTRIB_ACCEPTED), 0);
	assert_int_equal(io.n, 0); /* nothing answered, nothing ACKed */
	dp_shard_tick(&lc, 60 * MS);
	assert_int_equal(io.n, 0);
}

/* A consumer's ACK frame that is not one: a payload not a multiple of 14
 * bytes (a whole datagram), and 200 entries reassembled from fragments
 * (an ACK datagram within the MTU holds at most 104; the lcore reads at
 * most 128). Each is counted as ack_length and retires nothing; the
 * consumer's real ACK afterwards still does. */
static void test_consumer_ack_malformed(void **st)
{
	(void)st;
	uint64_t now = 2 * MS;
	resolve_one(now);
	static uint8_t fr[FG_HDR_LEN + 200 * FG_ACK_ENTRY_LEN];
	uint8_t dg[64];
	const struct dp_flow fl = dp_flow_of(&consumer, &no_route, true);
	/* 13 bytes of payload, one datagram */
	struct fg_hdr h = {.stream_id = FG_STREAM_ACK, .sequence = 0, .flags = FG_FLAG_ACK, .length = 13};
	assert_true(fg_hdr_encode(&h, dg + 4, sizeof(dg) - 4) == FG_HDR_LEN);
	memset(dg + 4 + FG_HDR_LEN, 0, 13);
	fg_put_be16(dg, 900);
	dg[2] = 0;
	dg[3] = 1;
	struct dp_dgram d = {.fl = &fl, .payload = dg, .len = 4 + FG_HDR_LEN + 13};
	dp_shard_dgram(&lc, &d, now + MS);
	assert_int_equal(C(FG_C_DROP_MALFORMED), 1);
	assert_int_equal(K.malformed[FG_R_ACK_LENGTH], 1);
	/* 200 entries, each naming the resolved seed (stream resolved_base
	 * + 2, seq 7), in fragments */
	h.length = 200 * FG_ACK_ENTRY_LEN;
	assert_true(fg_hdr_encode(&h, fr, sizeof(fr)) == FG_HDR_LEN);
	for (unsigned i = 0; i < 200; i++) {
		struct fg_ack_entry e = {.stream_id = (uint16_t)(cfg.bands.resolved_base + 2), .base_seq = 7, .bitmap_lo = 1};
		assert_true(fg_ack_entry_encode(&e, fr + FG_HDR_LEN + i * FG_ACK_ENTRY_LEN, FG_ACK_ENTRY_LEN) ==
			    FG_ACK_ENTRY_LEN);
	}
	assert_true(fg_frag_count(sizeof(fr), env.chunk) > 1);
	send_frame(&consumer, 901, fr, sizeof(fr), now + 2 * MS);
	assert_int_equal(C(FG_C_DROP_MALFORMED), 2);
	assert_int_equal(K.malformed[FG_R_ACK_LENGTH], 2);
	assert_int_equal(C(FG_C_DELIVERY_ACKED), 0);
	assert_int_equal(lc.dlv.n, 1);
	consumer_ack(&consumer, now + 3 * MS);
	assert_int_equal(C(FG_C_DELIVERY_ACKED), 1);
	assert_int_equal(lc.dlv.n, 0);
	assert_int_equal(C(FG_C_DROP_MALFORMED), 2);
}

/* ---- ACK notes from senders taking turns ---------------------------------- */

/* The ACK entries of datagram i (one entry per stream here). */
static int acks_of(unsigned i, struct fg_ack_entry *e, size_t max)
{
	struct fg_frag fr;
	struct fg_frame f;
	assert_true(fg_frag_decode(io.s[i].b, io.s[i].len, &fr) >= 0);
	assert_int_equal(fr.total, 1);
	assert_int_equal(fg_frame_decode(fr.chunk, fr.chunk_len, FG_TRANSPORT_MESSAGE, &f), (ssize_t)fr.chunk_len);
	return fg_ack_frame_decode(&f, e, max);
}

/* Three senders' frames noted in turn (dp_reply_ack_note_peer, as a
 * fragment run completing does): each sender is told the control plane
 * once when first seen and again only after a second, its route is the
 * one of its latest frame, and the flush sends each exactly its own
 * frames, one ACK datagram each. */
static void test_ack_notes_interleaved(void **st)
{
	(void)st;
	struct dp_peer p[3];
	struct dp_route rt[3];
	for (unsigned k = 0; k < 3; k++) {
		p[k] = sender(k);
		rt[k] = (struct dp_route){.mac = {2, 0, 0, 0, 0, (uint8_t)k}, .local = {10, 0, 0, 100}};
	}
	uint64_t now = 5 * MS;
	for (uint32_t s = 0; s < 10; s++)
		for (unsigned k = 0; k < 3; k++)
			dp_reply_ack_note_peer(&lc, &p[k], dp_peer_hash(&p[k], 0), &rt[k], (uint16_t)(40 + k),
					       100 * k + s, now + s);
	assert_int_equal(io.reports[FG_BM_PEER], 3);
	assert_int_equal(X(DP_X_PEERS_NEW), 3);
	assert_int_equal(lc.ack.n_dirty, 3);
	/* within the second: sender 2's next frame comes over a new route */
	rt[2].mac[0] = 7;
	dp_reply_ack_note_peer(&lc, &p[2], dp_peer_hash(&p[2], 0), &rt[2], 42, 210, now + 20);
	assert_int_equal(io.reports[FG_BM_PEER], 3);
	/* a second on: sender 1 is told again on its next frame, with its new route */
	rt[1].mac[0] = 6;
	dp_reply_ack_note_peer(&lc, &p[1], dp_peer_hash(&p[1], 0), &rt[1], 41, 110, now + 1001 * MS);
	assert_int_equal(io.reports[FG_BM_PEER], 4);
	unsigned mark = io.n;
	dp_reply_ack_flush(&lc);
	assert_int_equal(io.n - mark, 3);
	assert_int_equal(C(FG_C_ACKS_SENT), 3);
	assert_int_equal(lc.ack.n_dirty, 0);
	for (unsigned k = 0; k < 3; k++) {
		unsigned at = io.n;
		for (unsigned i = mark; i < io.n; i++)
			if (dp_peer_eq(&io.s[i].to, &p[k]))
				at = i;
		assert_true(at < io.n);
		assert_int_equal(sent_to(mark, &p[k]), 1);
		assert_memory_equal(&io.s[at].rt, &rt[k], sizeof(rt[k]));
		struct fg_ack_entry e[4];
		assert_int_equal(acks_of(at, e, 4), 1);
		assert_int_equal(e[0].stream_id, 40 + k);
		assert_int_equal(e[0].base_seq, 100 * k);
		assert_int_equal(e[0].bitmap_hi, 0);
		assert_int_equal(e[0].bitmap_lo, k == 0 ? 0x3FFu : 0x7FFu); /* 1 and 2: one more */
	}
	/* nothing pending: the next flush sends nothing */
	dp_reply_ack_flush(&lc);
	assert_int_equal(C(FG_C_ACKS_SENT), 3);
}

/* ---- the burst path against one datagram at a time ------------------------ */

#define BURST_N 10u
static uint8_t bdg[BURST_N][2048];
static struct dp_flow bfl[5]; /* senders 0-2, the consumer, a raw-profile sender */

/* The burst of test_burst_as_one_by_one: its datagrams in arrival order,
 * written into bdg (flow index in fi[], length in len[]). */
static void burst_build(unsigned *fi, uint32_t *len)
{
	static float x[H], a[H], f[H];
	for (unsigned i = 0; i < H; i++) {
		x[i] = 2.0f + (float)i;
		a[i] = 0.5f - 1e-3f * (float)i;
		f[i] = 1e3f / (float)(i + 1);
	}
	const float *bodies[3] = {x, a, f};
	const uint8_t lines[3] = {1, 3, 5};
	static uint8_t fr[3][8192];
	uint32_t n[3];
	for (unsigned k = 0; k < 3; k++) {
		struct dp_peer p = sender(k);
		bfl[k] = dp_flow_of(&p, &no_route, true);
		n[k] = contribution(lines[k], bodies[k], fr[k], sizeof(fr[k]));
		assert_int_equal(fg_frag_count(n[k], env.chunk), 2);
	}
	bfl[3] = dp_flow_of(&consumer, &no_route, true);
	struct dp_peer raw = sender(4);
	bfl[4] = dp_flow_of(&raw, &no_route, false);
	/* sender, fragment index (0xFF: a refused header; 0xFE: raw; 0xFD: the consumer's ACK) */
	static const uint8_t plan[BURST_N][2] = {{0, 0}, {1, 0}, {1, 0xFF}, {1, 1},   {0, 1},
						 {0, 1}, {4, 0xFE}, {2, 1}, {2, 0}, {3, 0xFD}};
	for (unsigned d = 0; d < BURST_N; d++) {
		unsigned k = plan[d][0], i = plan[d][1];
		uint8_t *dg = bdg[d];
		fi[d] = k;
		if (i == 0xFF) { /* frag_total 0 */
			fg_put_be16(dg, (uint16_t)(10 + k));
			dg[2] = 0;
			dg[3] = 0;
			len[d] = 8;
		} else if (i == 0xFE) { /* a raw frame whose header says more than it holds */
			memset(dg, 0, 20);
			fg_put_be16(dg, 0xAF62);
			dg[9] = 100;
			len[d] = 20;
		} else if (i == 0xFD) {
			struct fg_ack_entry e = {.stream_id = (uint16_t)(cfg.bands.resolved_base + 2), .base_seq = 7,
						 .bitmap_lo = 1};
			uint32_t lens[2];
			assert_int_equal(fg_ack_build(&e, 1, cfg.mtu, 77, dg, sizeof(bdg[d]), lens, 2), 1);
			len[d] = lens[0];
		} else {
			uint32_t off = i * env.chunk, m = n[k] - off < env.chunk ? n[k] - off : env.chunk;
			fg_put_be16(dg, (uint16_t)(10 + k));
			dg[2] = (uint8_t)i;
			dg[3] = 2;
			memcpy(dg + 4, fr[k] + off, m);
			len[d] = m + 4;
		}
	}
}

static struct {
	struct fg_dp_counters k;
	struct dp_xcounters xk;
	unsigned n, reports[16];
	struct sent s[256];
} one;

/* The first run's counters, datagrams and reports kept in `one`; the
 * lcore set up afresh for the second. */
static void keep_as_one(void **st)
{
	memcpy(&one.k, &K, sizeof(K));
	memcpy(&one.xk, &XK, sizeof(XK));
	one.n = io.n;
	memcpy(one.reports, io.reports, sizeof(one.reports));
	memcpy(one.s, io.s, sizeof(one.s));
	teardown(st);
	setup_ini(setup_cur);
}

/* Every counter but skip[0..n_skip), every outcome, report and datagram
 * sent the same as `one`'s; the lcore-local extra counters too when xk. */
static void same_as_one_but(const enum fg_dp_counter *skip, size_t n_skip, bool xk)
{
	for (unsigned c = 0; c < FG_C__COUNT; c++) {
		bool skipped = false;
		for (size_t t = 0; t < n_skip; t++)
			skipped |= c == skip[t];
		if (!skipped)
			assert_int_equal(atomic_load(&one.k.c[c]), C((enum fg_dp_counter)c));
	}
	for (unsigned c = 0; xk && c < DP_X__COUNT; c++)
		assert_int_equal(atomic_load(&one.xk.x[c]), X((enum dp_xcounter)c));
	for (unsigned o = 0; o < FG_O__COUNT; o++)
		assert_int_equal(atomic_load(&one.xk.outcome[o]), atomic_load(&XK.outcome[o]));
	assert_memory_equal(one.reports, io.reports, sizeof(one.reports));
	assert_int_equal(one.n, io.n);
	for (unsigned i = 0; i < io.n; i++) {
		assert_true(dp_peer_eq(&one.s[i].to, &io.s[i].to));
		assert_int_equal(one.s[i].len, io.s[i].len);
		assert_memory_equal(one.s[i].b, io.s[i].b, io.s[i].len);
	}
}

/* Every counter, datagram sent and report the same as `one`'s. */
static void burst_same_as_one(void) { same_as_one_but(NULL, 0, true); }

/* One burst: two senders' frames interleaved (runs of one fragment, a
 * lookup each), a refused fragment header between the two fragments of
 * sender 1's frame (its second fragment's run continues the first's), a
 * duplicate joining its frame's run, a raw datagram, sender 2's fragments
 * out of order (the seed resolves and goes to the consumer), the
 * consumer's ACK. Placed by dp_shard_run, it gives what the same
 * datagrams give one by one through dp_shard_dgram. */
static void test_burst_as_one_by_one(void **st)
{
	unsigned fi[BURST_N];
	uint32_t len[BURST_N];
	burst_build(fi, len);
	for (unsigned d = 0; d < BURST_N; d++) {
		struct dp_dgram g = {.fl = &bfl[fi[d]], .payload = bdg[d], .len = len[d]};
		dp_shard_dgram(&lc, &g, MS);
	}
	dp_shard_tick(&lc, 60 * MS);
	assert_int_equal(C(FG_C_SEEDS_RESOLVED), 1);
	assert_int_equal(C(FG_C_SEEDS_SENT), 1);
	assert_int_equal(C(FG_C_FRAGS), 8); /* 7 of two-fragment frames, the ACK */
	assert_int_equal(X(DP_X_FRAG_TAKEN), 6);
	assert_int_equal(X(DP_X_FRAG_DUP), 1);
	assert_int_equal(X(DP_X_RAW_DGRAMS), 1);
	assert_int_equal(X(DP_X_PKT_MALFORMED), 1);
	assert_int_equal(C(FG_C_DROP_MALFORMED), 2); /* the refused header, the raw frame */
	assert_int_equal(X(DP_X_ACK_RX), 1);
	assert_int_equal(C(FG_C_ACKS_SENT), 3);
	keep_as_one(st);
	burst_build(fi, len);
	struct dp_shard_burst b;
	struct dp_shard_adder a;
	dp_shard_add_begin(&a, &lc, &b);
	for (unsigned d = 0; d < BURST_N; d++)
		dp_shard_add(&lc, &a, &bfl[fi[d]], bdg[d], len[d]);
	dp_shard_add_end(&a);
	/* items: s0 | s1 | refused | s1 (continues) | s0 s0 | raw | s2 s2 | ACK */
	static const uint8_t at[] = {0, 1, 2, 3, 4, 6, 7, 9, 10};
	static const int8_t rc[] = {1, 1, -FG_R_FRAG_TOTAL_ZERO, 1, 1, 0, 1, 0};
	assert_int_equal(b.n, 8);
	assert_int_equal(b.nfrag, 7);
	for (unsigned k = 0; k <= b.n; k++)
		assert_int_equal(b.it[k].at, at[k]);
	for (unsigned k = 0; k < b.n; k++) {
		assert_int_equal(b.it[k].rc, rc[k]);
		assert_int_equal(b.it[k].cont, k == 3);
	}
	dp_shard_run(&lc, &b, MS);
	dp_shard_tick(&lc, 60 * MS);
	burst_same_as_one();
}

/* A run that starts with its frame's fragment 0 is not looked up in the
 * locate pass: the push of that fragment finds its record. Burst 1:
 * sender 0's fragment 1 (its record holds it). Burst 2: sender 0's
 * fragment 0 (the record exists), sender 1's frame. Burst 3: sender 1's
 * frame again (its record is done: duplicates, ACKed again), sender 2's
 * frame (the seed resolves). Burst by burst, they give what they give one
 * by one. */
static void test_burst_from_fragment0_with_record(void **st)
{
	static float x[H], a[H], f[H];
	for (unsigned i = 0; i < H; i++) {
		x[i] = 1.5f + (float)i;
		a[i] = 0.25f - 1e-3f * (float)i;
		f[i] = 2e3f / (float)(i + 1);
	}
	const float *bodies[3] = {x, a, f};
	const uint8_t lines[3] = {1, 3, 5};
	static uint8_t fr[3][8192], dg[8][2048];
	uint32_t n[3], len[8];
	struct dp_flow fl[3];
	for (unsigned k = 0; k < 3; k++) {
		struct dp_peer p = sender(k);
		fl[k] = dp_flow_of(&p, &no_route, true);
		n[k] = contribution(lines[k], bodies[k], fr[k], sizeof(fr[k]));
		assert_int_equal(fg_frag_count(n[k], env.chunk), 2);
	}
	/* burst, sender, fragment index */
	static const uint8_t plan[8][3] = {{0, 0, 1}, {1, 0, 0}, {1, 1, 0}, {1, 1, 1},
					   {2, 1, 0}, {2, 1, 1}, {2, 2, 0}, {2, 2, 1}};
	for (unsigned d = 0; d < 8; d++) {
		unsigned k = plan[d][1], i = plan[d][2];
		uint32_t off = i * env.chunk, m = n[k] - off < env.chunk ? n[k] - off : env.chunk;
		fg_put_be16(dg[d], (uint16_t)(20 + k));
		dg[d][2] = (uint8_t)i;
		dg[d][3] = 2;
		memcpy(dg[d] + 4, fr[k] + off, m);
		len[d] = m + 4;
	}
	for (unsigned d = 0; d < 8; d++) {
		struct dp_dgram g = {.fl = &fl[plan[d][1]], .payload = dg[d], .len = len[d]};
		dp_shard_dgram(&lc, &g, MS);
	}
	dp_shard_tick(&lc, 60 * MS);
	assert_int_equal(C(FG_C_SEEDS_RESOLVED), 1);
	assert_int_equal(C(FG_C_FRAGS), 8);
	assert_int_equal(X(DP_X_FRAG_TAKEN), 6);
	assert_int_equal(X(DP_X_FRAG_DUP), 2);
	keep_as_one(st);
	for (unsigned bn = 0, d = 0; bn < 3; bn++) {
		struct dp_shard_burst b;
		struct dp_shard_adder ad;
		dp_shard_add_begin(&ad, &lc, &b);
		for (; d < 8 && plan[d][0] == bn; d++)
			dp_shard_add(&lc, &ad, &fl[plan[d][1]], dg[d], len[d]);
		dp_shard_add_end(&ad);
		/* every run of bursts 2 and 3 starts at fragment 0: no lookup */
		for (unsigned k = 0; bn && k < b.n; k++)
			assert_int_equal(b.it[k].hint.ctx, DP_RA_HINT_NONE);
		dp_shard_run(&lc, &b, MS);
	}
	dp_shard_tick(&lc, 60 * MS);
	burst_same_as_one();
}


/* A burst in the fleet's shape (contributions in five fragments, each
 * frame's run from its fragment 0: one call places fragment 0 and the
 * run after it): sender 0's whole frame; sender 1's with a repeat inside
 * its run; sender 3's of a line the rule does not expect (fragment 0
 * judged, a status, the rest discarded); sender 2's whose fragment 3
 * comes first (held, then drained by fragment 0; the seed resolves and
 * goes to the consumer). Placed by dp_shard_run, it gives what the same
 * datagrams give one by one through dp_shard_dgram. */
static void test_burst_runs_from_fragment0(void **st)
{
	static float body[4][H5];
	static uint8_t fr[4][8192], dg[32][2048];
	static const uint8_t lines[4] = {1, 3, 5, 2};
	uint32_t n[4], len[32];
	struct dp_flow fl[4];
	for (unsigned k = 0; k < 4; k++) {
		for (unsigned i = 0; i < H5; i++)
			body[k][i] = (float)(k + 1) * 0.5f + (float)i * 1e-3f;
		struct dp_peer p = sender(k);
		fl[k] = dp_flow_of(&p, &no_route, true);
		struct fg_seed sd = {.token_seq = 9, .dst_layer = 2, .line = lines[k], .seq_len = 1,
				     .body = (const uint8_t *)body[k], .body_len = H5 * 4};
		ssize_t m = fg_seed_encode(&cfg.bands, &sd, fr[k], sizeof(fr[k]));
		assert_true(m > 0);
		n[k] = (uint32_t)m;
		assert_int_equal(fg_frag_count(n[k], env.chunk), 5);
	}
	/* sender, fragment index */
	static const uint8_t plan[][2] = {{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}, {1, 0}, {1, 1}, {1, 1},
					  {1, 2}, {1, 3}, {1, 4}, {3, 0}, {3, 1}, {3, 2}, {3, 3}, {3, 4},
					  {2, 3}, {2, 0}, {2, 1}, {2, 2}, {2, 4}};
	const unsigned nd = sizeof(plan) / sizeof(plan[0]);
	for (unsigned d = 0; d < nd; d++) {
		unsigned k = plan[d][0], i = plan[d][1];
		uint32_t off = i * env.chunk, m = n[k] - off < env.chunk ? n[k] - off : env.chunk;
		fg_put_be16(dg[d], (uint16_t)(30 + k));
		dg[d][2] = (uint8_t)i;
		dg[d][3] = 5;
		memcpy(dg[d] + 4, fr[k] + off, m);
		len[d] = m + 4;
	}
	for (unsigned d = 0; d < nd; d++) {
		struct dp_dgram g = {.fl = &fl[plan[d][0]], .payload = dg[d], .len = len[d]};
		dp_shard_dgram(&lc, &g, MS);
	}
	dp_shard_tick(&lc, 60 * MS);
	assert_int_equal(C(FG_C_SEEDS_RESOLVED), 1);
	assert_int_equal(C(FG_C_SEEDS_SENT), 1);
	assert_int_equal(C(FG_C_FRAGS), nd);
	assert_int_equal(X(DP_X_FRAG_DUP), 1);
	assert_int_equal(X(DP_X_FRAG_DISCARDED), 4);
	assert_int_equal(X(DP_X_FRAG_TAKEN), nd - 1 - 4);
	assert_int_equal(atomic_load(&XK.outcome[FG_O_UNEXPECTED_LINE]), 1);
	keep_as_one(st);
	struct dp_shard_burst b;
	struct dp_shard_adder a;
	dp_shard_add_begin(&a, &lc, &b);
	for (unsigned d = 0; d < nd; d++)
		dp_shard_add(&lc, &a, &fl[plan[d][0]], dg[d], len[d]);
	dp_shard_add_end(&a);
	/* a run a frame, the first three from fragment 0 (no lookup) */
	assert_int_equal(b.n, 4);
	for (unsigned k = 0; k < 3; k++)
		assert_int_equal(b.it[k].hint.ctx, DP_RA_HINT_NONE);
	dp_shard_run(&lc, &b, MS);
	dp_shard_tick(&lc, 60 * MS);
	burst_same_as_one();
}

/* ---- frames handed over by another lcore --------------------------------- */

/* The contributions of test_handed_as_owned, in order: token 7 lines 1, 3,
 * 5 (resolved), token 7 line 3 again (late), token 9 line 1, again
 * (duplicate), with another body (conflict). */
#define HANDED_N 7u
static uint32_t handed_frame(unsigned k, uint8_t *buf, size_t cap, struct dp_peer *from)
{
	static float b[3][H];
	for (unsigned i = 0; i < H; i++) {
		b[0][i] = 1.0f + (float)i * 0.25f;
		b[1][i] = 1e-3f * (float)(i % 17) - 0.5f;
		b[2][i] = 3.0e7f / (float)(i + 1);
	}
	static const uint8_t line[HANDED_N] = {1, 3, 5, 3, 1, 1, 1};
	static const uint8_t body[HANDED_N] = {0, 1, 2, 1, 0, 0, 2};
	static const uint32_t token[HANDED_N] = {7, 7, 7, 7, 9, 9, 9};
	struct fg_seed sd = {.token_seq = token[k], .dst_layer = 2, .line = line[k], .start_pos = 0, .seq_len = 1,
			     .body = (const uint8_t *)b[body[k]], .body_len = H * 4};
	ssize_t n = fg_seed_encode(&cfg.bands, &sd, buf, cap);
	assert_true(n > 0);
	*from = sender(line[k] / 2u);
	return (uint32_t)n;
}

/* frame[0..len) from `from` as another lcore hands it over (dp_shard.c's
 * fragment_out: reassembled, decoded, to be ACKed by its owner); seeded:
 * with the seed prefix its fragment 0 decoded. */
static void hand(const struct dp_peer *from, const uint8_t *frame, uint32_t len, bool seeded, uint64_t now)
{
	struct dp_xfer *x = f_xget(&lc);
	assert_non_null(x);
	*x = (struct dp_xfer){.peer = *from, .route = no_route, .len = len, .ack = true, .decoded = true,
			      .hash = dp_peer_hash(from, 0)};
	memcpy(dp_xfer_data(x), frame, len);
	assert_int_equal(dp_frame_decode(&lc.ictx, dp_xfer_data(x), len, &x->fr), 0);
	if (seeded) {
		assert_true(fg_seed_decode_prefix(&x->fr.hdr, frame + FG_HDR_LEN, len - FG_HDR_LEN, x->fr.cls.layer,
						  &lim, &x->seed) > 0);
		x->seeded = true;
	}
	dp_shard_handed(&lc, x, now);
}

/* hand()'s frame as a chunk list (dp_reasm.h): each fragment's chunk in
 * its own received buffer (keep_tok) at an odd offset, the frame's bytes
 * in the xfer buffer not written (their place overwritten), so the body
 * can only come from the chunks; every buffer given back once. */
static void hand_chunks(const struct dp_peer *from, const uint8_t *frame, uint32_t len, bool seeded, uint64_t now)
{
	static uint8_t pkt[DP_RA_KEEP_FRAGS][2048];
	static struct keep_tok tok[DP_RA_KEEP_FRAGS];
	struct dp_xfer *x = f_xget(&lc);
	assert_non_null(x);
	uint32_t C = env.chunk, total = fg_frag_count(len, C);
	assert_true(total >= 2 && total <= DP_RA_KEEP_FRAGS && C + 5 <= sizeof(pkt[0]));
	*x = (struct dp_xfer){.peer = *from, .route = no_route, .len = len, .ack = true, .decoded = true,
			      .hash = dp_peer_hash(from, 0), .nchunk = (uint8_t)total, .src = 0};
	assert_int_equal(dp_frame_decode(&lc.ictx, frame, len, &x->fr), 0);
	if (seeded) {
		assert_true(fg_seed_decode_prefix(&x->fr.hdr, frame + FG_HDR_LEN, len - FG_HDR_LEN, x->fr.cls.layer,
						  &lim, &x->seed) > 0);
		x->seeded = true;
	}
	struct dp_ra_list *l = dp_ra_list(dp_xfer_data(x), env.frame_max);
	for (uint32_t i = 0; i < total; i++) {
		uint32_t n = i + 1 < total ? C : len - i * C;
		memcpy(pkt[i] + 5, frame + i * C, n);
		l->p[i] = pkt[i] + 5;
		l->m[i] = &tok[i];
		tok[i].given = 0;
	}
	l->nkept = total;
	memset(dp_xfer_data(x), 0xEE, len);
	unsigned back = io.kept_back;
	dp_shard_handed(&lc, x, now);
	assert_int_equal(io.kept_back, back + total);
	for (uint32_t i = 0; i < total; i++)
		assert_int_equal(tok[i].given, 1);
}

/* Received buffers given back by the table itself (dp_reasm_cfg.keep_drop). */
static void f_keep_drop(void *arg, void *const *m, unsigned n)
{
	(void)arg;
	for (unsigned i = 0; i < n; i++)
		((struct keep_tok *)m[i])->given++;
}

/* Shard 0 of two, its reassembly keeping received buffers: a seed of
 * shard 1 in two fragments, received in bursts whose buffers are named
 * (as dp_rx.c names them), goes out as a chunk list. Every ending gives
 * each kept buffer back exactly once: the owner's inbox full (refused:
 * dropped lane_full, not ACKed), taken and placed by the owner, the frame
 * incomplete until its reassembly times out. */
static void test_keep_handoff(void **st)
{
	(void)st;
	env.n = 2;
	dp_reasm_fini(&lc.reasm);
	struct dp_reasm_cfg rc = {.contexts = 4, .chunk = env.chunk, .frame_max = env.frame_max,
				  .timeout_ns = 100 * MS, .slots = &lc.slots, .shard_self = 0, .n_shards = 2,
				  .n_layers = cfg.layers, .bufs = {.get = rget, .put = rput, .arg = &lc},
				  .keep_max = 64, .keep_drop = f_keep_drop};
	assert_int_equal(dp_reasm_init(&lc.reasm, lc.reasm_mem, dp_reasm_mem_size(&rc), &rc), 0);
	static float body[H];
	for (unsigned i = 0; i < H; i++)
		body[i] = 0.5f + (float)i;
	assert_int_equal(fg_shard_of(7, 1, cfg.layers, 2), 1);
	struct fg_seed sd = {.token_seq = 7, .dst_layer = 1, .line = 1, .seq_len = 1,
			     .body = (const uint8_t *)body, .body_len = H * 4};
	uint8_t fr[4096];
	ssize_t len = fg_seed_encode(&cfg.bands, &sd, fr, sizeof(fr));
	assert_true(len > 0);
	uint32_t ck = env.chunk;
	assert_int_equal(fg_frag_count((uint32_t)len, ck), 2);
	struct dp_peer from = sender(0);
	const struct dp_flow fl = dp_flow_of(&from, &no_route, true);
	static uint8_t dg[2][2048];
	static struct keep_tok tok[2];
	for (unsigned round = 0; round < 3; round++) {
		/* the datagrams of frame 40 + round: fragment 0, then 1 (not in round 2) */
		uint32_t dl[2];
		void *pkts[2] = {&tok[0], &tok[1]};
		for (unsigned i = 0; i < 2; i++) {
			uint32_t n = i == 0 ? ck : (uint32_t)len - ck;
			dg[i][0] = 0, dg[i][1] = (uint8_t)(40 + round), dg[i][2] = (uint8_t)i, dg[i][3] = 2;
			memcpy(dg[i] + FG_FRAG_HDR_LEN, fr + i * ck, n);
			dl[i] = FG_FRAG_HDR_LEN + n;
			tok[i].given = 0;
		}
		unsigned nd = round == 2 ? 1 : 2;
		io.handoff = round == 0 ? 1 : 2;
		io.handed = NULL;
		struct dp_shard_burst b;
		struct dp_shard_adder a;
		dp_shard_add_begin(&a, &lc, &b);
		for (unsigned i = 0; i < nd; i++)
			dp_shard_add(&lc, &a, &fl, dg[i], dl[i]);
		dp_shard_add_end(&a);
		dp_reasm_keep_begin(&lc.reasm, b.f, nd, pkts);
		const uint64_t frames = C(FG_C_FRAMES), out = X(DP_X_HANDOFF_OUT);
		dp_shard_run(&lc, &b, MS);
		assert_int_equal(dp_reasm_keep_end(&lc.reasm), (1u << nd) - 1u);
		/* a whole frame counted once, handed out only when taken */
		assert_int_equal(C(FG_C_FRAMES) - frames, round < 2 ? 1 : 0);
		assert_int_equal(X(DP_X_HANDOFF_OUT) - out, round == 1 ? 1 : 0);
		if (round == 0) {
			/* refused: both given back by the receiving lcore, the frame dropped */
			assert_int_equal(C(FG_C_DROP_LANE_FULL), 1);
			assert_null(io.handed);
		} else if (round == 1) {
			/* taken: a chunk list whose chunks are the datagrams'; placed by
			 * its owner (here, the same table), given back there */
			struct dp_xfer *x = io.handed;
			assert_non_null(x);
			assert_int_equal(x->nchunk, 2);
			assert_true(x->seeded);
			const struct dp_ra_list *l = dp_ra_list(dp_xfer_data(x), env.frame_max);
			assert_int_equal(l->nkept, 2);
			assert_ptr_equal(l->p[0], dg[0] + FG_FRAG_HDR_LEN);
			assert_ptr_equal(l->p[1], dg[1] + FG_FRAG_HDR_LEN);
			assert_int_equal(tok[0].given + tok[1].given, 0);
			uint64_t acc = C(FG_C_CONTRIB_ACCEPTED);
			dp_shard_handed(&lc, x, MS);
			assert_int_equal(C(FG_C_CONTRIB_ACCEPTED), acc + 1);
		} else {
			/* fragment 0 only: kept until its reassembly times out */
			assert_int_equal(tok[0].given, 0);
			dp_shard_tick(&lc, 300 * MS);
			assert_int_equal(C(FG_C_REASM_TIMEOUT), 1);
		}
		for (unsigned i = 0; i < nd; i++)
			assert_int_equal(tok[i].given, 1);
		assert_int_equal(io.nfree, 8); /* every xfer given back */
	}
	/* all given back: the table may keep as many as at first */
	dp_reasm_keep_begin(&lc.reasm, NULL, 0, NULL);
	assert_int_equal(dp_reasm_keep_end(&lc.reasm), 0);
	assert_int_equal(lc.reasm.keep.avail, 64);
}

/* Handed over, with the seed prefix the receiving lcore decoded or
 * without, a seed's contributions are placed as the owner's own fragment
 * path places them: resolved, late, duplicate, conflict give
 * every status byte, ACK, delivery and report that the same frames give
 * arriving in fragments; every outcome and drop counter the same. A frame
 * handed whole whose header disagrees with its length is still counted
 * malformed (the whole-frame ingest's case), unanswered but ACKed. */
static void test_handed_as_owned(void **st)
{
	uint8_t fr[8192];
	struct dp_peer p;
	for (unsigned k = 0; k < HANDED_N; k++) {
		uint32_t n = handed_frame(k, fr, sizeof(fr), &p);
		send_frame(&p, (uint16_t)(10 + k), fr, n, MS + k);
	}
	dp_shard_tick(&lc, 60 * MS);
	assert_int_equal(C(FG_C_SEEDS_RESOLVED), 1);
	assert_int_equal(C(FG_C_DROP_DUPLICATE), 1);
	assert_int_equal(C(FG_C_DROP_CONFLICT), 1);
	assert_int_equal(C(FG_C_DROP_LATE), 1);
	keep_as_one(st);
	for (unsigned k = 0; k < HANDED_N; k++) {
		uint32_t n = handed_frame(k, fr, sizeof(fr), &p);
		hand(&p, fr, n, k % 2 == 1, MS + k); /* with and without the prefix decoded */
	}
	dp_shard_tick(&lc, 60 * MS);
	assert_int_equal(X(DP_X_HANDOFF_IN), HANDED_N);
	assert_int_equal(io.nfree, 8); /* every xfer given back */
	/* the receiving lcore counted the fragments and frames */
	static const enum fg_dp_counter theirs[] = {FG_C_FRAGS, FG_C_FRAMES};
	same_as_one_but(theirs, FG_ARRAY_LEN(theirs), false);
	/* the same handed as chunk lists (a seed's prefix decoded: placed
	 * from the chunks; without: made whole first) */
	keep_as_one(st);
	for (unsigned k = 0; k < HANDED_N; k++) {
		uint32_t n = handed_frame(k, fr, sizeof(fr), &p);
		hand(&p, fr, n, k % 2 == 1, MS + k);
	}
	dp_shard_tick(&lc, 60 * MS);
	keep_as_one(st);
	for (unsigned k = 0; k < HANDED_N; k++) {
		uint32_t n = handed_frame(k, fr, sizeof(fr), &p);
		hand_chunks(&p, fr, n, k % 2 == 1, MS + k);
	}
	dp_shard_tick(&lc, 60 * MS);
	assert_int_equal(io.nfree, 8);
	same_as_one_but(NULL, 0, true);

	/* a header that says one byte less than the frame handed */
	uint32_t n = handed_frame(4, fr, sizeof(fr), &p);
	unsigned mark = io.n;
	uint64_t bad = C(FG_C_DROP_MALFORMED);
	fr[9] = (uint8_t)(fr[9] - 1);
	hand(&p, fr, n, false, 70 * MS);
	assert_int_equal(C(FG_C_DROP_MALFORMED), bad + 1);
	dp_shard_tick(&lc, 200 * MS);
	/* no status; ACKed as received, as a malformed frame reassembled on
	 * its owner is (a resend would be refused the same way) */
	assert_int_equal(sent_to(mark, &p), 1);
	struct fg_ack_entry e[2];
	assert_int_equal(acks_of(io.n - 1, e, 2), 1);
}

/* ---- the resolution writes the lane message's body (io->sink) ------------ */

/* A lane as dp_lanes.c keeps it, recorded: a ring of LN_RING messages
 * (reserve, then commit) and a pool of LN_BUFS body buffers; io->sink
 * takes a buffer only when the ring has room, keeps it held by the lcore
 * (lc->sink_buf) until a sunk commit sends it, and notes the slot it was
 * prepared for (dp_io_dpdk.c's io_sink, dp_lane_sink). */
enum { LN_RING = 4, LN_BUFS = 3 };
static struct {
	union fg_bmsg ring[LN_RING];
	unsigned n;          /* messages committed, not drained */
	bool busy[LN_BUFS];  /* buffers out of the pool */
	uint8_t buf[LN_BUFS][H * 4] __attribute__((aligned(64))); /* as a pool's */
	unsigned sunk, copied, no_body, full, reserves;
	bool fill_after_sink; /* the ring is full by the time of the commit */
} ln;

static uint32_t ln_get(void)
{
	for (uint32_t i = 0; i < LN_BUFS; i++)
		if (!ln.busy[i]) {
			ln.busy[i] = true;
			return i;
		}
	return FG_BUF_NONE;
}

static unsigned ln_free(void)
{
	unsigned k = 0;
	for (unsigned i = 0; i < LN_BUFS; i++)
		k += !ln.busy[i];
	return k;
}

static union fg_bmsg *s_reserve(struct dp_lcore *l)
{
	(void)l;
	ln.reserves++;
	if (ln.n == LN_RING) {
		ln.full++;
		return NULL;
	}
	return &ln.ring[ln.n];
}

static void s_commit(struct dp_lcore *l, union fg_bmsg *m, struct fg_bm_body *body, const uint8_t *src, uint32_t len)
{
	(void)l;
	body->buf = len <= sizeof(ln.buf[0]) ? ln_get() : FG_BUF_NONE;
	body->len = len;
	if (body->buf != FG_BUF_NONE)
		memcpy(ln.buf[body->buf], src, len);
	else
		ln.no_body++;
	assert_ptr_equal(m, &ln.ring[ln.n]);
	ln.n++;
	ln.copied++;
}

static void *s_sink(struct dp_lcore *l, uint32_t slot, uint32_t body_len)
{
	l->sink_slot = 0;
	if (body_len > sizeof(ln.buf[0]))
		return NULL;
	if (!l->sink_has_buf) {
		if (ln.n == LN_RING)
			return NULL;
		uint32_t bi = ln_get();
		if (bi == FG_BUF_NONE)
			return NULL;
		l->sink_buf = bi;
		l->sink_has_buf = true;
	}
	l->sink_slot = slot + 1;
	l->sink_resolved = l->slots.resolved + 1;
	if (ln.fill_after_sink)
		ln.n = LN_RING;
	return ln.buf[l->sink_buf];
}

static void s_commit_sunk(struct dp_lcore *l, union fg_bmsg *m, struct fg_bm_body *body, uint32_t len)
{
	assert_true(l->sink_has_buf);
	body->buf = l->sink_buf;
	body->len = len;
	l->sink_has_buf = false;
	assert_ptr_equal(m, &ln.ring[ln.n]);
	ln.n++;
	ln.sunk++;
}

static const struct dp_io sinking = {.dgram = f_dgram, .route = f_route, .xfer_get = f_xget, .xfer_put = f_xput,
				     .handoff = f_handoff, .report = f_report, .report_body = f_report_body,
				     .report_reserve = s_reserve, .report_commit = s_commit, .sink = s_sink,
				     .report_commit_sunk = s_commit_sunk};

/* The resolved body of token t (layer 2) in its slot's result buffer. */
static const uint8_t *slot_body(uint32_t t)
{
	for (uint32_t i = 0; i < lc.slots.cfg.capacity; i++) {
		struct fg_seed_view v;
		if (fg_slot_seed(&lc.slots, i, &v) == 0 && v.token_seq == t && v.dst_layer == 2) {
			assert_int_equal(v.body_len, H * 4);
			return v.body;
		}
	}
	fail_msg("token %u not resolved", t);
	return NULL;
}

/* The control plane's drain: every RESOLVED message's body is the slot's
 * result buffer's, byte for byte (when it has one), and its buffer goes
 * back to the pool. Returns how many messages. */
static unsigned ln_drain(void)
{
	unsigned k = ln.n;
	for (unsigned i = 0; i < ln.n; i++) {
		const struct fg_bm_resolved *r = &ln.ring[i].resolved;
		assert_int_equal(r->kind, FG_BM_RESOLVED);
		assert_int_equal(r->body.len, H * 4);
		if (r->body.buf == FG_BUF_NONE)
			continue;
		assert_memory_equal(ln.buf[r->body.buf], slot_body(r->token_seq), H * 4);
		ln.busy[r->body.buf] = false;
	}
	ln.n = 0;
	return k;
}

/* Token t's three contributions in one burst (dp_shard_add, dp_shard_run):
 * each frame's fragment 1 lands behind its fragment 0, the last one's
 * through land_end, which completes the slot. Odd tokens get values that
 * make NaNs and denormals meet. */
static void burst_seed(uint32_t t, uint64_t now)
{
	static uint8_t dg[6][2048];
	static struct dp_flow fls[3];
	uint32_t lens[6];
	unsigned nd = 0;
	for (unsigned k = 0; k < 3; k++) {
		static float body[H];
		uint8_t fr[8192];
		for (unsigned i = 0; i < H; i++)
			body[i] = (float)(t * 3 + k) + (float)i * 0.37f - (t % 2 && i % 7 == 0 ? 1e-39f : 0.0f);
		struct fg_seed sd = {.token_seq = t, .dst_layer = 2, .line = (uint8_t)(1 + 2 * k), .start_pos = 0,
				     .seq_len = 1, .body = (const uint8_t *)body, .body_len = H * 4};
		ssize_t n = fg_seed_encode(&cfg.bands, &sd, fr, sizeof(fr));
		assert_true(n > 0);
		struct dp_peer p = sender(k);
		fls[k] = dp_flow_of(&p, &no_route, true);
		uint32_t total = fg_frag_count((uint32_t)n, env.chunk);
		assert_int_equal(total, 2);
		for (uint32_t i = 0; i < total; i++, nd++) {
			uint32_t off = i * env.chunk, m = (uint32_t)n - off < env.chunk ? (uint32_t)n - off : env.chunk;
			fg_put_be16(dg[nd], (uint16_t)(t * 4 + k));
			dg[nd][2] = (uint8_t)i;
			dg[nd][3] = (uint8_t)total;
			memcpy(dg[nd] + 4, fr + off, m);
			lens[nd] = m + 4;
		}
	}
	struct dp_shard_burst b;
	struct dp_shard_adder a;
	dp_shard_add_begin(&a, &lc, &b);
	for (unsigned d = 0; d < nd; d++)
		dp_shard_add(&lc, &a, &fls[d / 2], dg[d], lens[d]);
	dp_shard_add_end(&a);
	dp_shard_run(&lc, &b, now);
}

/* The seed the consumer got (since io record `from`) is the slot's. */
static void consumer_got_slot(unsigned from, uint32_t t)
{
	uint8_t got[8192];
	unsigned nd;
	uint32_t len = consumer_frame(from, got, sizeof(got), &nd);
	assert_int_equal(nd, 2);
	assert_int_equal(len, FG_RESOLVED_HEAD_LEN + H * 4);
	assert_memory_equal(got + FG_RESOLVED_HEAD_LEN, slot_body(t), H * 4);
}

/* With io->sink, the resolution writes the lane message's body itself:
 * the body the control plane gets is the slot's result buffer's byte for
 * byte (and what the consumer got), with no copy on delivery (sunk).
 * Exhaustion loses nothing: with the pool empty the message goes without
 * its body (as without a sink); with the ring full nothing is taken and
 * the message is counted as not sent (drop_lane_full's place); a ring
 * that fills between the sink and the commit leaves the buffer held by
 * the lcore, used by the next resolution. Every buffer is back in the
 * pool at the end. A handed frame that resolves its slot sinks the same
 * way, and a resend after a sunk delivery carries the slot's bytes. */
static void test_sink_lane(void **st)
{
	(void)st;
	memset(&ln, 0, sizeof(ln));
	env.io = &sinking;
	lc.reasm.cfg.sink = dp_shard_sink; /* as dp.c sets it up */
	lc.reasm.cfg.sink_arg = &lc;
	/* 1. the common case */
	burst_seed(21, MS);
	assert_int_equal(C(FG_C_SEEDS_RESOLVED), 1);
	assert_int_equal(ln.sunk, 1);
	assert_int_equal(ln.copied, 0);
	consumer_got_slot(0, 21);
	assert_int_equal(ln_drain(), 1);
	assert_int_equal(ln_free(), LN_BUFS);
	assert_false(lc.sink_has_buf);
	/* a resend carries the slot's bytes */
	unsigned mark = io.n;
	dp_shard_tick(&lc, MS + (uint64_t)cfg.delivery_resend_ms * MS + 1);
	assert_true(sent_to(mark, &consumer) == 2);
	consumer_got_slot(mark, 21);

	/* 2. no buffer free: the message goes without its body, copied path */
	for (unsigned i = 0; i < LN_BUFS; i++)
		ln.busy[i] = true;
	burst_seed(22, 2 * MS);
	assert_int_equal(C(FG_C_SEEDS_RESOLVED), 2);
	assert_int_equal(ln.sunk, 1);
	assert_int_equal(ln.copied, 1);
	assert_int_equal(ln.no_body, 1);
	assert_int_equal(ln_drain(), 1);
	for (unsigned i = 0; i < LN_BUFS; i++)
		ln.busy[i] = false;

	/* 3. the ring full: nothing taken, the message not sent */
	ln.n = LN_RING;
	for (unsigned i = 0; i < LN_RING; i++)
		ln.ring[i].resolved = (struct fg_bm_resolved){.kind = FG_BM_RESOLVED, .token_seq = 21,
							      .body = {.buf = FG_BUF_NONE, .len = H * 4}};
	burst_seed(23, 3 * MS);
	assert_int_equal(C(FG_C_SEEDS_RESOLVED), 3);
	assert_int_equal(ln.full, 1);
	assert_int_equal(ln.sunk + ln.copied, 2);
	assert_int_equal(ln_free(), LN_BUFS);
	assert_false(lc.sink_has_buf);
	ln.n = 0;

	/* 4. the ring fills between the sink and the commit: the buffer stays
	 * held, the next resolution sends it */
	ln.fill_after_sink = true;
	burst_seed(24, 4 * MS);
	ln.fill_after_sink = false;
	assert_int_equal(ln.full, 2);
	assert_true(lc.sink_has_buf);
	assert_int_equal(ln_free(), LN_BUFS - 1);
	ln.n = 0;
	burst_seed(25, 5 * MS);
	assert_int_equal(ln.sunk, 2);
	assert_false(lc.sink_has_buf);
	assert_int_equal(ln_drain(), 1);
	assert_int_equal(ln_free(), LN_BUFS);

	/* 5. a handed frame resolving its slot */
	uint8_t fr[8192];
	static float hb[H];
	for (unsigned k = 0; k < 3; k++) {
		for (unsigned i = 0; i < H; i++)
			hb[i] = (float)(k + 1) * 0.75f - (float)i;
		struct fg_seed sd = {.token_seq = 26, .dst_layer = 2, .line = (uint8_t)(1 + 2 * k), .start_pos = 0,
				     .seq_len = 1, .body = (const uint8_t *)hb, .body_len = H * 4};
		ssize_t n = fg_seed_encode(&cfg.bands, &sd, fr, sizeof(fr));
		assert_true(n > 0);
		struct dp_peer p = sender(k);
		hand(&p, fr, (uint32_t)n, k == 1, 6 * MS);
	}
	assert_int_equal(C(FG_C_SEEDS_RESOLVED), 6);
	assert_int_equal(ln.sunk, 3);
	assert_int_equal(ln_drain(), 1);
	assert_int_equal(ln_free(), LN_BUFS);
	assert_int_equal(lc.sink_slot, 0);
	env.io = &fake;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ack_notes_interleaved, setup, teardown),
		cmocka_unit_test_setup_teardown(test_burst_as_one_by_one, setup, teardown),
		cmocka_unit_test_setup_teardown(test_burst_from_fragment0_with_record, setup, teardown),
		cmocka_unit_test_setup_teardown(test_burst_runs_from_fragment0, setup_wide, teardown),
		cmocka_unit_test_setup_teardown(test_given_up_without_ack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keep_handoff, setup, teardown),
		cmocka_unit_test_setup_teardown(test_handed_as_owned, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed_counted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_consumer_ack_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resolve_ack_and_resend, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sink_lane, setup, teardown),
		cmocka_unit_test_setup_teardown(test_resend_split_head, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_exact_consumer_not_fleet, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_stale_and_ahead_bases_ignored, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* fleet_fake.c - a loopback stand-in for the appliance, UDP fragmented
 * profile only, so fanofleet can be tested before (and independently of)
 * fanogate: it reassembles contributions, ACKs them, answers a status
 * frame per seed or canonical frame, resolves Pair X slots in the
 * canonical order ((x + attn) + ffn) in f32, sends the resolved seed
 * (fragmented) to the consumer, and compares canonical reports with the
 * resolved fingerprint.
 *
 * It is deliberately a separate, simple implementation of the resolution
 * rule (not the project's slot engine), so that fanofleet's own chain is
 * checked against something it does not share code with.
 *
 * Who may call: fleet_main.c (--fake-receiver), main thread only. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fg/ingest.h"
#include "fg/line.h"
#include "fg/slot.h"
#include "fleet.h"

#define FAKE_SLOTS 8192u

struct fslot {
	bool used, resolved, has_canon;
	uint32_t token_seq;
	uint16_t layer;
	uint8_t landed; /* bit per role */
	uint8_t sign[FL_ROLES];
	uint64_t fp, canon;
	float *body[FL_ROLES];
	float *res;
};

struct fake {
	const struct fl_fake_opts *o;
	struct fl_udp_consumer *in;
	struct sockaddr_storage cons;
	socklen_t cons_len;
	struct fg_bands bands;
	struct fg_seed_limits lim;
	struct fslot *slots;
	uint16_t frame_id;
	uint8_t *buf;
	uint64_t seeds, resolved, dups, conflicts, malformed, canon_match, canon_diverge, canon_early, evicted, send_errors;
};

static volatile sig_atomic_t f_stop;
static void f_sig(int s) { (void)s; f_stop = 1; }

static int role_of(unsigned line)
{
	return line == FL_LINE_X ? 0 : line == FL_LINE_ATTN ? 1 : line == FL_LINE_FFN ? 2 : -1;
}

static void status(struct fake *k, uint32_t seq, uint16_t layer, uint8_t line, enum fg_outcome oc,
		   const struct fslot *s, uint16_t reason)
{
	struct fg_status st = {
		.token_seq = seq, .dst_layer = layer, .outcome = (uint8_t)oc, .line = line, .sign = 0,
		.bitset = 0, .expected = (1u << FL_LINE_X) | (1u << FL_LINE_ATTN) | (1u << FL_LINE_FFN),
		.facts = FG_FACT_ACK | FG_FACT_SHADOW, .line_state = FG_LINE_SHADOW, .reason = reason,
		.bytes = k->o->hidden * 4u, .model_epoch = 1,
	};
	if (s) {
		for (unsigned r = 0; r < FL_ROLES; r++)
			if (s->landed & (1u << r))
				st.landed |= (uint8_t)(1u << (r == 0 ? FL_LINE_X : r == 1 ? FL_LINE_ATTN : FL_LINE_FFN));
		/* satisfied lines, as fanogate answers them (wire.md 5) */
		st.bitset = fg_status_bitset(st.landed, st.expected, s->resolved ? FG_SLOT_RESOLVED : FG_SLOT_OPEN);
		if (s->resolved) {
			st.facts |= FG_FACT_RESOLVED;
			st.fingerprint = s->fp;
		} else {
			st.facts |= FG_FACT_AWAITING;
		}
	}
	uint8_t frame[64], dg[128];
	ssize_t n = fg_status_encode(&st, frame, sizeof frame);
	socklen_t sl;
	const struct sockaddr_storage *src = fl_udp_consumer_src(k->in, &sl);
	if (n > 0 && src) {
		struct fg_frag fr = { .frame_id = k->frame_id++, .index = 0, .total = 1, .chunk = frame,
				      .chunk_len = (uint32_t)n };
		ssize_t w = fg_frag_encode(&fr, dg, sizeof dg);
		if (w > 0)
			(void)sendto(fl_udp_consumer_fd(k->in), dg, (size_t)w, 0, (const struct sockaddr *)src, sl);
	}
}

static void verdict(struct fake *k, struct fslot *s)
{
	if (s->canon == s->fp) {
		k->canon_match++;
	} else {
		k->canon_diverge++;
		printf("fake: DIVERGENCE token_seq=%u layer=%u jumped %016llx canonical %016llx\n", s->token_seq,
		       s->layer, (unsigned long long)s->fp, (unsigned long long)s->canon);
		fflush(stdout);
	}
}

static struct fslot *lookup(struct fake *k, uint32_t seq, uint16_t layer, bool create)
{
	struct fslot *s = &k->slots[((uint64_t)seq * k->o->layers + layer) % FAKE_SLOTS];
	if (s->used && s->token_seq == seq && s->layer == layer)
		return s;
	if (!create)
		return NULL;
	if (s->used && !s->resolved)
		k->evicted++;
	s->used = true;
	s->resolved = s->has_canon = false;
	s->token_seq = seq;
	s->layer = layer;
	s->landed = 0;
	return s;
}

static void resolve(struct fake *k, struct fslot *s)
{
	uint32_t H = k->o->hidden;
	for (uint32_t i = 0; i < H; i++) {
		float r = s->sign[0] ? -s->body[0][i] : s->body[0][i];
		r = s->sign[1] ? r - s->body[1][i] : r + s->body[1][i];
		r = s->sign[2] ? r - s->body[2][i] : r + s->body[2][i];
		s->res[i] = r;
	}
	s->fp = fg_fingerprint(s->res, H * 4u);
	s->resolved = true;
	k->resolved++;
	struct fg_resolved rv = { .token_seq = s->token_seq, .dst_layer = s->layer, .start_pos = 0, .seq_len = 1,
				  .body = (const uint8_t *)s->res, .body_len = H * 4u };
	ssize_t n = fg_resolved_encode(&k->bands, &rv, k->buf, FG_HDR_LEN + FG_SEED_PREFIX_LEN + H * 4u);
	if (n < 0 || fl_udp_send_fragmented(fl_udp_consumer_fd(k->in), (const struct sockaddr *)&k->cons,
					    k->cons_len, k->o->mtu, k->frame_id++, k->buf, (uint32_t)n) < 0)
		k->send_errors++;
	if (s->has_canon)
		verdict(k, s);
}

static void on_in(void *ctx, const struct fg_frame *f, enum fl_path path, uint64_t now)
{
	struct fake *k = ctx;
	(void)path;
	(void)now;
	enum fg_band band;
	uint16_t layer;
	if (fg_stream_classify(&k->bands, f->hdr.stream_id, &band, &layer) < 0) {
		k->malformed++;
		status(k, f->hdr.sequence, 0, FG_LINE_NONE, FG_O_MALFORMED, NULL, FG_R_UNKNOWN_STREAM);
		return;
	}
	if (band == FG_BAND_SEED) {
		struct fg_seed sd;
		ssize_t r = fg_seed_decode(f, layer, &k->lim, &sd);
		int role = r < 0 ? -1 : role_of(sd.line);
		if (r < 0 || role < 0) {
			k->malformed++;
			status(k, f->hdr.sequence, layer, FG_LINE_NONE, r < 0 ? FG_O_MALFORMED : FG_O_UNEXPECTED_LINE,
			       NULL, r < 0 ? (uint16_t)-r : 0);
			return;
		}
		k->seeds++;
		struct fslot *s = lookup(k, sd.token_seq, layer, true);
		if (s->resolved) {
			status(k, sd.token_seq, layer, sd.line, FG_O_LATE, s, 0);
			return;
		}
		if (s->landed & (1u << role)) {
			bool same = memcmp(s->body[role], sd.body, sd.body_len) == 0;
			same ? k->dups++ : k->conflicts++;
			status(k, sd.token_seq, layer, sd.line, same ? FG_O_DUPLICATE : FG_O_CONFLICT, s, 0);
			return;
		}
		memcpy(s->body[role], sd.body, sd.body_len);
		s->sign[role] = sd.orientation;
		s->landed |= (uint8_t)(1u << role);
		if (s->landed == 7u) {
			resolve(k, s);
			status(k, sd.token_seq, layer, sd.line, FG_O_RESOLVED, s, 0);
		} else {
			status(k, sd.token_seq, layer, sd.line, FG_O_ACCEPTED, s, 0);
		}
	} else if (band == FG_BAND_CANONICAL) {
		struct fg_canon c;
		if (fg_canon_decode(f, layer, &k->lim, &c) < 0) {
			k->malformed++;
			return;
		}
		struct fslot *s = lookup(k, c.token_seq, layer, true);
		if (s->has_canon) { /* a resent report: one verdict per slot */
			status(k, c.token_seq, layer, FG_LINE_NONE, FG_O_DUPLICATE, s, 0);
			return;
		}
		s->canon = c.kind == FG_CANON_FULL ? fg_fingerprint(c.body, c.body_len) : c.digest;
		s->has_canon = true;
		if (s->resolved)
			verdict(k, s);
		else
			k->canon_early++;
		status(k, c.token_seq, layer, FG_LINE_NONE, s->resolved ? FG_O_RESOLVED : FG_O_ACCEPTED, s, 0);
	} else {
		k->malformed++;
	}
}

int fl_fake_run(const struct fl_fake_opts *o)
{
	struct fake K = { .o = o };
	struct sockaddr_storage ls;
	socklen_t ll;
	int rc = 3;
	if (tool_addr_parse(o->listen, true, &ls, &ll) < 0 || tool_addr_parse(o->consumer, true, &K.cons, &K.cons_len) < 0) {
		fprintf(stderr, "fake: bad --listen or --consumer address\n");
		return 3;
	}
	fg_bands_default(&K.bands);
	K.bands.n_layers = o->layers;
	K.lim = (struct fg_seed_limits){ .hidden = o->hidden, .max_seq_len = 1 };
	K.slots = calloc(FAKE_SLOTS, sizeof *K.slots);
	K.buf = malloc(FG_HDR_LEN + FG_SEED_PREFIX_LEN + (size_t)o->hidden * 4u);
	if (!K.slots || !K.buf)
		goto out;
	for (unsigned i = 0; i < FAKE_SLOTS; i++) {
		for (unsigned r = 0; r < FL_ROLES; r++)
			if (!(K.slots[i].body[r] = malloc((size_t)o->hidden * 4u)))
				goto out;
		if (!(K.slots[i].res = malloc((size_t)o->hidden * 4u)))
			goto out;
	}
	K.in = fl_udp_consumer_new(&ls, ll, o->mtu, o->no_ack ? FL_CACK_NONE : FL_CACK_EACH, on_in, &K);
	if (!K.in) {
		fprintf(stderr, "fake: bind %s: %s\n", o->listen, strerror(errno));
		goto out;
	}
	fl_udp_consumer_set_drop(K.in, o->drop, 42);
	struct sigaction sa = { .sa_handler = f_sig };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	printf("fake: receiving on %s, resolved seeds to %s%s\n", o->listen, o->consumer, o->no_ack ? ", never ACKing" : "");
	fflush(stdout);
	uint64_t end = o->duration_s ? fl_now_ns() + (uint64_t)o->duration_s * 1000000000ull : UINT64_MAX;
	while (!f_stop && fl_now_ns() < end) {
		struct pollfd p = { .fd = fl_udp_consumer_fd(K.in), .events = POLLIN };
		if (poll(&p, 1, 100) > 0)
			fl_udp_consumer_input(K.in, fl_now_ns());
	}
	const struct fl_consumer_stats *cs = fl_udp_consumer_stats(K.in);
	printf("fake: datagrams %llu frames %llu seeds %llu resolved %llu duplicates %llu conflicts %llu malformed %llu "
	       "canonical match %llu divergence %llu evicted-open %llu acks %llu injected-drop %llu\n",
	       (unsigned long long)cs->datagrams, (unsigned long long)cs->frames, (unsigned long long)K.seeds,
	       (unsigned long long)K.resolved, (unsigned long long)K.dups, (unsigned long long)K.conflicts,
	       (unsigned long long)K.malformed, (unsigned long long)K.canon_match, (unsigned long long)K.canon_diverge,
	       (unsigned long long)K.evicted, (unsigned long long)cs->acks_sent, (unsigned long long)cs->injected_drop);
	rc = 0;
out:
	fl_udp_consumer_free(K.in);
	if (K.slots)
		for (unsigned i = 0; i < FAKE_SLOTS; i++) {
			for (unsigned r = 0; r < FL_ROLES; r++)
				free(K.slots[i].body[r]);
			free(K.slots[i].res);
		}
	free(K.slots);
	free(K.buf);
	return rc;
}

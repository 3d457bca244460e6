/* bench_core.c - throughput of the pure core on one core: frame decode
 * (header + residual-seed payload) and slot resolution (reduction in
 * canonical order + XXH3-64), reported as a ratio to plain memcpy of the
 * same bytes measured in the same run. Not a test: nothing is asserted.
 *
 * Usage: bench_core [--seconds S] [--json FILE]
 *   --seconds S  time per measurement (default 0.25; best of 5 trials)
 *   --json FILE  also write the figures as JSON
 *
 * Working sets are sized to stay in L2 (a few slots of up to 4 lines of
 * hidden 4096 f32), the case the slot engine is built for: a slot is
 * resolved while its contributions are still warm from reassembly. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <xxh_x86dispatch.h> /* as core/slot.c */
#else
#include <xxhash.h>
#endif

#include "fg/slot.h"
#include "fg/wire.h"

#define N_SETS 4u /* slots / source sets cycled through: L2-resident */

static double opt_seconds = 0.25;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Keep the compiler from dropping work whose result is never read. */
static inline void clobber(const void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

typedef void (*bench_fn)(void *ctx, uint64_t iter);

/* Iterations that take about opt_seconds. */
static uint64_t calibrate(bench_fn fn, void *ctx)
{
	uint64_t n = 16;

	for (;;) {
		double t0 = now_s();
		for (uint64_t i = 0; i < n; i++)
			fn(ctx, i);
		double dt = now_s() - t0;
		if (dt >= opt_seconds / 4 || n > (1ull << 40))
			return (uint64_t)((double)n * (opt_seconds / (dt > 1e-9 ? dt : 1e-9))) + 1;
		n *= 4;
	}
}

/* Best rate (iterations per second) of 5 trials of each of k functions,
 * the trials interleaved (f0, f1, .., f0, f1, ..) so that a neighbour's
 * load on this shared machine hits baseline and candidate alike. */
static void measure_k(const bench_fn *fn, void *ctx, unsigned k, double *best)
{
	uint64_t n[4];

	for (unsigned j = 0; j < k; j++) {
		n[j] = calibrate(fn[j], ctx);
		best[j] = 0;
	}
	for (int trial = 0; trial < 5; trial++) {
		for (unsigned j = 0; j < k; j++) {
			double t0 = now_s();
			for (uint64_t i = 0; i < n[j]; i++)
				fn[j](ctx, i);
			double rate = (double)n[j] / (now_s() - t0);
			if (rate > best[j])
				best[j] = rate;
		}
	}
}

static double measure(bench_fn fn, void *ctx)
{
	double best;
	measure_k(&fn, ctx, 1, &best);
	return best;
}

static void *xalloc(size_t n)
{
	void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);
	if (!p) {
		fprintf(stderr, "bench_core: out of memory\n");
		exit(1);
	}
	return p;
}

static float rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (float)((double)(int64_t)((*s * 0x2545F4914F6CDD1Dull) >> 11) / (double)(1ull << 52)) - 1.0f;
}

/* ---- decode ---------------------------------------------------------- */

struct decode_ctx {
	uint8_t *frame;
	size_t len;
	struct fg_bands bands;
	struct fg_seed_limits lim;
	uint64_t sink;
};

static void bench_decode(void *p, uint64_t iter)
{
	struct decode_ctx *c = p;
	struct fg_frame f;
	struct fg_seed sd;
	enum fg_band band;
	uint16_t layer;

	(void)iter;
	if (fg_frame_decode(c->frame, c->len, FG_TRANSPORT_MESSAGE, &f) < 0 ||
	    fg_stream_classify(&c->bands, f.hdr.stream_id, &band, &layer) < 0 ||
	    fg_seed_decode(&f, layer, &c->lim, &sd) < 0)
		abort();
	c->sink += sd.body_len + sd.token_seq;
	clobber(&c->sink);
}

static double run_decode(uint32_t hidden)
{
	struct decode_ctx c = { 0 };
	uint64_t s = 1;
	float *body = xalloc(hidden * 4);
	struct fg_seed sd = { .token_seq = 42, .dst_layer = 3, .line = 3, .orientation = 0,
			      .start_pos = 0, .seq_len = 1, .body = (const uint8_t *)body, .body_len = hidden * 4 };

	for (uint32_t i = 0; i < hidden; i++)
		body[i] = rnd(&s);
	fg_bands_default(&c.bands);
	c.bands.n_layers = 28;
	c.lim.hidden = hidden;
	c.lim.max_seq_len = 1;
	c.len = FG_HDR_LEN + FG_SEED_PREFIX_LEN + (size_t)hidden * 4;
	c.frame = xalloc(c.len);
	if (fg_seed_encode(&c.bands, &sd, c.frame, c.len) != (ssize_t)c.len)
		abort();
	double r = measure(bench_decode, &c);
	free(c.frame);
	free(body);
	return r;
}

/* ---- resolution -------------------------------------------------------- */

struct res_ctx {
	unsigned n;
	uint32_t hidden;
	float *src[N_SETS][FG_LINES]; /* contributions, one set per slot */
	float *dst[N_SETS][FG_LINES]; /* memcpy destinations (same footprint as slot buffers) */
	float *out[N_SETS];
	uint8_t neg[FG_LINES];
	uint64_t sink;
	struct fg_slots slots;
	void *mem;
	struct fg_seed seeds[N_SETS][FG_LINES];
	uint32_t token;
};

static void bench_memcpy(void *p, uint64_t iter)
{
	struct res_ctx *c = p;
	unsigned set = (unsigned)(iter % N_SETS);

	for (unsigned k = 0; k < c->n; k++) {
		memcpy(c->dst[set][k], c->src[set][k], (size_t)c->hidden * 4);
		clobber(c->dst[set][k]);
	}
}

static void bench_reduce(void *p, uint64_t iter)
{
	struct res_ctx *c = p;
	unsigned set = (unsigned)(iter % N_SETS);

	fg_reduce(c->out[set], (const float *const *)c->src[set], c->neg, c->n, c->hidden);
	c->sink += XXH3_64bits(c->out[set], (size_t)c->hidden * 4);
	clobber(&c->sink);
}

/* The whole engine path: every contribution copied into its slot, the last
 * one reducing and fingerprinting; slots are reclaimed N_SETS tokens later. */
static void bench_engine(void *p, uint64_t iter)
{
	struct res_ctx *c = p;
	unsigned set = (unsigned)(iter % N_SETS);
	struct fg_slot_result r;

	(void)iter;
	for (unsigned k = 0; k < c->n; k++) {
		c->seeds[set][k].token_seq = c->token;
		if (fg_slot_put(&c->slots, &c->seeds[set][k], 0, &r) != 0)
			abort();
	}
	if (r.outcome != FG_O_RESOLVED)
		abort();
	c->sink += r.fingerprint;
	c->token++;
	clobber(&c->sink);
}

struct row {
	uint32_t hidden;
	unsigned lines;
	double bytes;        /* contribution bytes per slot */
	double memcpy_gbs;   /* memcpy of those bytes */
	double reduce_gbs;   /* fg_reduce + XXH3-64 of the result */
	double engine_gbs;   /* fg_slot_put of every contribution (copy-in + resolve) */
	double slots_per_s;  /* engine path */
};

static void run_resolution(uint32_t hidden, unsigned n, struct row *row)
{
	struct res_ctx *c = xalloc(sizeof(*c));
	uint64_t s = hidden * 31u + n;
	struct fg_slots_cfg cfg;
	uint8_t lines[FG_LINES] = { 1, 3, 5, 0, 2, 4, 6 };

	memset(c, 0, sizeof(*c));
	c->n = n;
	c->hidden = hidden;
	for (unsigned set = 0; set < N_SETS; set++) {
		for (unsigned k = 0; k < n; k++) {
			c->src[set][k] = xalloc((size_t)hidden * 4);
			c->dst[set][k] = xalloc((size_t)hidden * 4);
			for (uint32_t i = 0; i < hidden; i++)
				c->src[set][k][i] = rnd(&s);
			c->seeds[set][k] = (struct fg_seed){ .dst_layer = 0, .line = lines[k],
							     .orientation = (uint8_t)(k == 2), .start_pos = 0,
							     .seq_len = 1, .body = (const uint8_t *)c->src[set][k],
							     .body_len = hidden * 4 };
		}
		c->out[set] = xalloc((size_t)hidden * 4);
	}
	for (unsigned k = 0; k < n; k++)
		c->neg[k] = (uint8_t)(k == 2);
	memset(&cfg, 0, sizeof(cfg));
	cfg.capacity = N_SETS;
	cfg.hidden = hidden;
	cfg.max_seq_len = 1;
	cfg.n_layers = 1;
	cfg.deadline_ns = 1;
	if (fg_rule_make(&cfg.rules[0], lines, n) != 0)
		abort();
	size_t len = fg_slots_mem_size(&cfg);
	c->mem = xalloc(len);
	if (fg_slots_init(&c->slots, c->mem, len, &cfg) != 0)
		abort();

	row->hidden = hidden;
	row->lines = n;
	row->bytes = (double)n * hidden * 4;
	const bench_fn fns[3] = { bench_memcpy, bench_reduce, bench_engine };
	double rate[3];
	measure_k(fns, c, 3, rate);
	row->memcpy_gbs = rate[0] * row->bytes / 1e9;
	row->reduce_gbs = rate[1] * row->bytes / 1e9;
	row->slots_per_s = rate[2];
	row->engine_gbs = row->slots_per_s * row->bytes / 1e9;

	for (unsigned set = 0; set < N_SETS; set++) {
		for (unsigned k = 0; k < n; k++) {
			free(c->src[set][k]);
			free(c->dst[set][k]);
		}
		free(c->out[set]);
	}
	free(c->mem);
	free(c);
}

static const char *reduce_isa(void)
{
#if defined(__x86_64__)
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		return "avx512f";
	if (__builtin_cpu_supports("avx2"))
		return "avx2";
#endif
	return "default";
}

int main(int argc, char **argv)
{
	const char *json = NULL;
	static const uint32_t hiddens[] = { 896, 1536, 3584, 4096 };
	static const unsigned line_counts[] = { 2, 3 };
	struct row rows[FG_ARRAY_LEN(hiddens) * FG_ARRAY_LEN(line_counts)];
	unsigned nrows = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") && i + 1 < argc) {
			json = argv[++i];
		} else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) {
			opt_seconds = strtod(argv[++i], NULL);
			if (!(opt_seconds > 0)) {
				fprintf(stderr, "bench_core: --seconds wants a positive number\n");
				return 2;
			}
		} else {
			fprintf(stderr, "usage: %s [--seconds S] [--json FILE]\n", argv[0]);
			return strcmp(argv[i], "--help") ? 2 : 0;
		}
	}

	double dec_small = run_decode(4), dec_1536 = run_decode(1536), dec_4096 = run_decode(4096);
	printf("decode (header + seed payload), one core, frames/s\n");
	printf("  hidden    4: %12.0f\n  hidden 1536: %12.0f\n  hidden 4096: %12.0f\n", dec_small, dec_1536,
	       dec_4096);
	printf("\nresolution, one core, L2-resident slots (%u in rotation); reduce ISA: %s\n", N_SETS, reduce_isa());
	printf("%7s %5s %10s %11s %11s %8s %11s %8s %12s\n", "hidden", "lines", "bytes", "memcpy GB/s",
	       "reduce+fp", "ratio", "engine", "ratio", "slots/s");
	for (size_t h = 0; h < FG_ARRAY_LEN(hiddens); h++) {
		for (size_t l = 0; l < FG_ARRAY_LEN(line_counts); l++) {
			struct row *r = &rows[nrows++];
			run_resolution(hiddens[h], line_counts[l], r);
			printf("%7u %5u %10.0f %11.2f %11.2f %8.2f %11.2f %8.2f %12.0f\n", r->hidden, r->lines, r->bytes,
			       r->memcpy_gbs, r->reduce_gbs, r->reduce_gbs / r->memcpy_gbs, r->engine_gbs,
			       r->engine_gbs / r->memcpy_gbs, r->slots_per_s);
			fflush(stdout);
		}
	}
	printf("\nratio = GB/s of contribution bytes / GB/s of memcpy of the same bytes (goal >= 0.5 for reduce+fp)\n");
	printf("engine = fg_slot_put of every line (copy into the slot, then reduce + fingerprint)\n");

	if (json) {
		FILE *f = fopen(json, "w");
		if (!f) {
			fprintf(stderr, "bench_core: %s: %s\n", json, strerror(errno));
			return 1;
		}
		fprintf(f, "{\n  \"seconds_per_measurement\": %g,\n  \"reduce_isa\": \"%s\",\n", opt_seconds, reduce_isa());
		fprintf(f, "  \"decode_frames_per_s\": {\"4\": %.0f, \"1536\": %.0f, \"4096\": %.0f},\n", dec_small,
			dec_1536, dec_4096);
		fprintf(f, "  \"resolution\": [\n");
		for (unsigned i = 0; i < nrows; i++) {
			struct row *r = &rows[i];
			fprintf(f,
				"    {\"hidden\": %u, \"lines\": %u, \"bytes\": %.0f, \"memcpy_gbs\": %.3f, "
				"\"reduce_fp_gbs\": %.3f, \"reduce_fp_ratio\": %.3f, \"engine_gbs\": %.3f, "
				"\"engine_ratio\": %.3f, \"slots_per_s\": %.0f}%s\n",
				r->hidden, r->lines, r->bytes, r->memcpy_gbs, r->reduce_gbs, r->reduce_gbs / r->memcpy_gbs,
				r->engine_gbs, r->engine_gbs / r->memcpy_gbs, r->slots_per_s, i + 1 < nrows ? "," : "");
		}
		fprintf(f, "  ]\n}\n");
		if (fclose(f) != 0) {
			fprintf(stderr, "bench_core: %s: %s\n", json, strerror(errno));
			return 1;
		}
	}
	return 0;
}

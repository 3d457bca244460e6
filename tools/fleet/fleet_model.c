/* fleet_model.c - the emulated model: deterministic pseudo-random vectors of
 * (seed, token, layer, kind) and the canonical Pair X chain in f32.
 *
 * Who may call: fanofleet, any thread (pure functions, no state).
 * Built with -ffp-contract=off like the whole project: the chain below must
 * round once per addition, exactly as the fleet's canonical chain does. */
#include <string.h>
#include <time.h>

#include "fleet.h"

uint64_t fl_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t fl_mix64(uint64_t v)
{
	v += 0x9E3779B97F4A7C15ull;
	v = (v ^ (v >> 30)) * 0xBF58476D1CE4E5B9ull;
	v = (v ^ (v >> 27)) * 0x94D049BB133111EBull;
	return v ^ (v >> 31);
}

/* A float with a random sign, a random 23-bit mantissa and an exponent in
 * [-8, +3]: sums of such values lose low bits differently depending on the
 * order of additions, which is what the audit must catch. */
static float model_value(uint64_t r)
{
	uint32_t mant = (uint32_t)(r & 0x7FFFFFu);
	uint32_t sign = (uint32_t)((r >> 23) & 1u);
	uint32_t exp = 127u - 8u + (uint32_t)((r >> 24) % 12u);
	uint32_t bits = (sign << 31) | (exp << 23) | mant;
	float f;
	memcpy(&f, &bits, sizeof f);
	return f;
}

void fl_model_gen(uint64_t seed, uint64_t token, unsigned layer, enum fl_kind kind, uint32_t hidden,
		  float *out)
{
	uint64_t key = fl_mix64(seed ^ fl_mix64(token * 0x100000001B3ull + ((uint64_t)layer << 8) + (uint64_t)kind));
	for (uint32_t i = 0; i < hidden; i++)
		out[i] = model_value(fl_mix64(key + i));
}

void fl_model_chain(const float *x, const float *attn, const float *ffn, uint32_t hidden, float *out)
{
	for (uint32_t i = 0; i < hidden; i++) {
		/* Two statements: one rounding each, in the canonical order. */
		float r = x[i] + attn[i];
		r = r + ffn[i];
		out[i] = r;
	}
}

/* Map a float's bits onto a monotonic integer line so the ULP distance is a
 * subtraction. */
static int64_t ulp_key(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return (u & 0x80000000u) ? -(int64_t)(u & 0x7FFFFFFFu) : (int64_t)u;
}

uint64_t fl_ulp_distance(float a, float b)
{
	int64_t d = ulp_key(a) - ulp_key(b);
	return (uint64_t)(d < 0 ? -d : d);
}

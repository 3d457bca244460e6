/* reduce.c - the bit-exact canonical-order reduction of a slot's lines.
 *
 * Who may call: anyone, any thread (reads its arguments, writes only out).
 * The slot engine calls it on resolution; tests and bench/core call it
 * directly against a scalar reference.
 *
 * Semantics, per element i (wire.md section 4):
 *   r = s0 ? -c[0][i] : c[0][i]        negation is exact (sign bit flip)
 *   r = s1 ? r - c[1][i] : r + c[1][i] one IEEE f32 rounding
 *   ...                                 lines in rule order, never regrouped
 *
 * Why this vectorises without changing a bit: SIMD lanes are different
 * elements i, and each element still sees its additions one after the other
 * in canonical order; only the order across elements changes, which no
 * element can observe. What would change bits is contraction into FMA
 * (-ffp-contract=off is project-wide), reassociation (-ffast-math is never
 * used; -fno-fast-math is set explicitly) or flush-to-zero of denormals
 * (never enabled: no -ffast-math, no MXCSR changes).
 *
 * Blocking: the output block (FG_REDUCE_BLOCK floats = 8 KiB) stays in L1
 * while each further line is added into it, so every contribution byte is
 * read from memory once and the result written once. Measured in
 * bench/core (RESULTS.md).
 *
 * target_clones builds an AVX-512, an AVX2 and a baseline (SSE2) version
 * and picks one at load time (ifunc); each is the same C, so each has the
 * same per-element semantics. The scalar tail is that same code too. */
#include <stddef.h>
#include <stdint.h>

#include "fg/slot.h"

#define FG_REDUCE_BLOCK 2048u

/* Not under TSan: the ifunc resolver runs during relocation, before the
 * TSan runtime is initialised, and crashes there (seen with gcc 12). The
 * TSan build then uses the baseline loop, which has the same semantics. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(FG_NO_TARGET_CLONES) && \
	!defined(__SANITIZE_THREAD__)
#define FG_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FG_CLONES
#endif

/* o = a (+|-) b, for one block: the common case (first line added). Two
 * plain branch-free elementwise loops gcc turns into packed add/sub. */
static inline __attribute__((always_inline)) void pair_block(float *restrict o, const float *restrict a,
							      const float *restrict b, unsigned n1, size_t n)
{
	if (!n1)
		for (size_t i = 0; i < n; i++)
			o[i] = a[i] + b[i];
	else
		for (size_t i = 0; i < n; i++)
			o[i] = a[i] - b[i];
}

/* o = -a, for one block. Kept as its own pass on purpose: written as
 * o = -a + b in one loop, gcc folds it into o = b - a, which is the same
 * number but not the same NaN (x86 returns the first NaN operand, so the
 * sign of a NaN result would depend on the fold). Negate, store, then add,
 * exactly as the reference does. */
static inline __attribute__((always_inline)) void neg_block(float *restrict o, const float *restrict a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		o[i] = -a[i];
}

/* o = o (+|-) c, for one block. */
static inline __attribute__((always_inline)) void acc_block(float *restrict o, const float *restrict c,
							     unsigned neg, size_t n)
{
	if (!neg)
		for (size_t i = 0; i < n; i++)
			o[i] = o[i] + c[i];
	else
		for (size_t i = 0; i < n; i++)
			o[i] = o[i] - c[i];
}

FG_CLONES
void fg_reduce(float *out, const float *const *c, const uint8_t *neg, unsigned n, size_t n_floats)
{
	if (n == 0 || n_floats == 0)
		return;
	if (n == 1) {
		for (size_t i = 0; i < n_floats; i++)
			out[i] = neg[0] ? -c[0][i] : c[0][i];
		return;
	}
	for (size_t base = 0; base < n_floats; base += FG_REDUCE_BLOCK) {
		size_t m = n_floats - base < FG_REDUCE_BLOCK ? n_floats - base : FG_REDUCE_BLOCK;
		float *o = out + base;

		unsigned k = 1;

		if (!(neg[0] & 1u)) {
			pair_block(o, c[0] + base, c[1] + base, neg[1] & 1u, m);
			k = 2;
		} else {
			neg_block(o, c[0] + base, m);
		}
		for (; k < n; k++)
			acc_block(o, c[k] + base, neg[k] & 1u, m);
	}
}

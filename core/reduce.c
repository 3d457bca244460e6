/* reduce.c - the bit-exact canonical-order reduction of a slot's lines.
 *
 * Who may call: anyone, any thread (reads its arguments, writes only out
 * and fg_reduce_to's dst).
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
 * The NaN rule: the first line's sign is its own operation, an XOR of the
 * sign bit, before the first addition, as in the reference. Written as
 * o = -a + b, both gcc and clang fold it into o = b - a: the same number,
 * but when a is NaN a NaN of the other sign (x86 returns the NaN operand;
 * a subtraction does not flip it). So the sign is applied as an integer XOR
 * with a mask (0 or the sign bit) made opaque by an empty asm: no compiler
 * can recognise a negation it could fold. With AVX the XOR takes the load's
 * place (a vector XOR with a memory operand), so it costs no instruction;
 * with SSE2 it costs one per vector.
 *
 * One pass for the first two or three lines (rule n is 1..7; Pair X is 3):
 * every line of an element is read and the result stored once,
 *   o[i] = ((a[i] ^ m) (+|-) b[i]) (+|-) c[i]
 * one kernel per add/subtract choice of lines 1 and 2 (macro-generated, so
 * the choice is loop-invariant: no per-element branch or blend). The main
 * loop takes FG_REDUCE_UNROLL floats per iteration as a fixed-count inner
 * loop the compiler vectorises and unrolls whole (16 AVX2 or 8 AVX-512
 * vectors), so the loop's own instructions are few beside the arithmetic;
 * the rest is the same expression in a plain loop.
 *
 * n >= 3: the output is processed in blocks (FG_REDUCE_BLOCK floats = 8 KiB)
 * that stay in L1: the first three lines fused into the block, then each
 * further line added into it, so every contribution byte is read from
 * memory once. n = 3 with up to FG_REDUCE_BLOCK floats is one block.
 *
 * fg_reduce_to: the same reduction, its result also stored to a second
 * destination (the dataplane's lane buffer for the control plane) from the
 * register it is in: the last pass over each element stores twice.
 *
 * target_clones builds an AVX-512, an AVX2 and a baseline (SSE2) version
 * and picks one at load time (ifunc); each is the same C, so each has the
 * same per-element semantics. The tails are that same expression too. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fg/slot.h"

#define FG_REDUCE_BLOCK 2048u
#define FG_REDUCE_UNROLL 128u

/* Not under TSan: the ifunc resolver runs during relocation, before the
 * TSan runtime is initialised, and crashes there (seen with gcc 12). The
 * TSan build then uses the baseline loop, which has the same semantics. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(FG_NO_TARGET_CLONES) && \
	!defined(__SANITIZE_THREAD__)
#define FG_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define FG_CLONES
#endif

#define FG_INLINE static inline __attribute__((always_inline))

/* x with its sign bit XORed with m (0 or 0x80000000): exact, NaN included. */
FG_INLINE float sign_xor(float x, uint32_t m)
{
	uint32_t u;

	memcpy(&u, &x, sizeof(u));
	u ^= m;
	memcpy(&x, &u, sizeof(x));
	return x;
}

/* The first line's sign as a mask the compiler cannot see through (see the
 * NaN rule above); one register move, outside every loop. */
FG_INLINE uint32_t sign_mask(uint8_t neg)
{
	uint32_t m = (uint32_t)(neg & 1u) << 31;

	__asm__("" : "+r"(m));
	return m;
}

/* The kernels store the result to o and, when nd is 1, to d too (the
 * same value from the same register); nd is a constant where they are
 * inlined, so fg_reduce's kernels carry no second store. */
#define FG_PUT(o, d, nd, i, v)                                                                                 \
	do {                                                                                                   \
		const float v_ = (v);                                                                          \
		(o)[i] = v_;                                                                                   \
		if (nd)                                                                                        \
			(d)[i] = v_;                                                                           \
	} while (0)

/* o = (a ^ m) OP1 b, for n floats. */
#define FG_REDUCE_PAIR(NAME, OP1)                                                                              \
	FG_INLINE void NAME(float *restrict o, float *restrict d, const unsigned nd, const float *restrict a,  \
			    const float *restrict b, uint32_t m, size_t n)                                     \
	{                                                                                                      \
		size_t i = 0;                                                                                  \
		for (; i + FG_REDUCE_UNROLL <= n; i += FG_REDUCE_UNROLL)                                       \
			for (size_t j = 0; j < FG_REDUCE_UNROLL; j++)                                          \
				FG_PUT(o, d, nd, i + j, sign_xor(a[i + j], m) OP1 b[i + j]);                   \
		for (; i < n; i++)                                                                             \
			FG_PUT(o, d, nd, i, sign_xor(a[i], m) OP1 b[i]);                                       \
	}

/* o = ((a ^ m) OP1 b) OP2 c, for n floats. */
#define FG_REDUCE_TRIPLE(NAME, OP1, OP2)                                                                       \
	FG_INLINE void NAME(float *restrict o, float *restrict d, const unsigned nd, const float *restrict a,  \
			    const float *restrict b, const float *restrict c, uint32_t m, size_t n)            \
	{                                                                                                      \
		size_t i = 0;                                                                                  \
		for (; i + FG_REDUCE_UNROLL <= n; i += FG_REDUCE_UNROLL)                                       \
			for (size_t j = 0; j < FG_REDUCE_UNROLL; j++)                                          \
				FG_PUT(o, d, nd, i + j, (sign_xor(a[i + j], m) OP1 b[i + j]) OP2 c[i + j]);    \
		for (; i < n; i++)                                                                             \
			FG_PUT(o, d, nd, i, (sign_xor(a[i], m) OP1 b[i]) OP2 c[i]);                            \
	}

FG_REDUCE_PAIR(pair_add, +)
FG_REDUCE_PAIR(pair_sub, -)
FG_REDUCE_TRIPLE(triple_add_add, +, +)
FG_REDUCE_TRIPLE(triple_add_sub, +, -)
FG_REDUCE_TRIPLE(triple_sub_add, -, +)
FG_REDUCE_TRIPLE(triple_sub_sub, -, -)

/* o = a ^ m, for n floats (a rule of one line). */
FG_INLINE void single(float *restrict o, float *restrict d, const unsigned nd, const float *restrict a, uint32_t m,
		      size_t n)
{
	size_t i = 0;

	for (; i + FG_REDUCE_UNROLL <= n; i += FG_REDUCE_UNROLL)
		for (size_t j = 0; j < FG_REDUCE_UNROLL; j++)
			FG_PUT(o, d, nd, i + j, sign_xor(a[i + j], m));
	for (; i < n; i++)
		FG_PUT(o, d, nd, i, sign_xor(a[i], m));
}

/* o = ((a ^ m) (+|-) b) (+|-) c: lines 1 and 2's signs pick the kernel. */
FG_INLINE void triple(float *restrict o, float *restrict d, const unsigned nd, const float *restrict a,
		      const float *restrict b, const float *restrict c, uint32_t m, unsigned s1, unsigned s2, size_t n)
{
	switch (s1 | s2 << 1) {
	case 0:
		triple_add_add(o, d, nd, a, b, c, m, n);
		break;
	case 1:
		triple_sub_add(o, d, nd, a, b, c, m, n);
		break;
	case 2:
		triple_add_sub(o, d, nd, a, b, c, m, n);
		break;
	default:
		triple_sub_sub(o, d, nd, a, b, c, m, n);
		break;
	}
}

/* o = o (+|-) c, for one block. */
FG_INLINE void acc_block(float *restrict o, float *restrict d, const unsigned nd, const float *restrict c,
			 unsigned neg, size_t n)
{
	if (!neg)
		for (size_t i = 0; i < n; i++)
			FG_PUT(o, d, nd, i, o[i] + c[i]);
	else
		for (size_t i = 0; i < n; i++)
			FG_PUT(o, d, nd, i, o[i] - c[i]);
}

/* The reduction into out and, when nd is 1, d: one pass for one or two
 * lines; from three, blocks of FG_REDUCE_BLOCK floats, the first three
 * lines fused into the block, each further line added into it, the last
 * pass storing to d too. */
FG_INLINE void reduce(float *out, float *d, const unsigned nd, const float *const *c, const uint8_t *neg, unsigned n,
		      size_t n_floats)
{
	uint32_t m = sign_mask(neg[0]);

	switch (n) {
	case 1:
		single(out, d, nd, c[0], m, n_floats);
		return;
	case 2:
		if (!(neg[1] & 1u))
			pair_add(out, d, nd, c[0], c[1], m, n_floats);
		else
			pair_sub(out, d, nd, c[0], c[1], m, n_floats);
		return;
	default:
		break;
	}
	for (size_t base = 0; base < n_floats; base += FG_REDUCE_BLOCK) {
		size_t len = n_floats - base < FG_REDUCE_BLOCK ? n_floats - base : FG_REDUCE_BLOCK;
		float *o = out + base, *e = nd ? d + base : o;

		if (n == 3) {
			triple(o, e, nd, c[0] + base, c[1] + base, c[2] + base, m, neg[1] & 1u, neg[2] & 1u, len);
			continue;
		}
		triple(o, e, 0, c[0] + base, c[1] + base, c[2] + base, m, neg[1] & 1u, neg[2] & 1u, len);
		for (unsigned k = 3; k + 1 < n; k++)
			acc_block(o, e, 0, c[k] + base, neg[k] & 1u, len);
		acc_block(o, e, nd, c[n - 1] + base, neg[n - 1] & 1u, len);
	}
}

FG_CLONES
void fg_reduce(float *out, const float *const *c, const uint8_t *neg, unsigned n, size_t n_floats)
{
	if (n == 0 || n_floats == 0)
		return;
	reduce(out, out, 0, c, neg, n, n_floats);
}

FG_CLONES
void fg_reduce_to(float *out, float *dst, const float *const *c, const uint8_t *neg, unsigned n, size_t n_floats)
{
	if (n == 0 || n_floats == 0)
		return;
	reduce(out, dst, 1, c, neg, n, n_floats);
}

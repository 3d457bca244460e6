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
 * fg_reduce_to: the same reduction, its result also stored to a few
 * destinations given as spans of the body (the dataplane's delivery
 * packets and lane buffer), from the registers the result is in: the body
 * is cut into segments at the spans' edges, each segment reduced by the
 * kernels above with one or two further stores per vector (the _to
 * kernels, the same expressions): up to two spans over the whole body
 * (a lane buffer) and the others one after another in offset order (a
 * delivery's fragments). A span edge within a float (a span offset not a
 * multiple of 4) gets those bytes from the result buffer after the
 * reduction; so does every byte of a span the kernels cannot store (its
 * destination not 4-byte aligned relative to its offset, a third span
 * over one segment, a span out of order).
 *
 * target_clones builds an AVX-512, an AVX2 and a baseline (SSE2) version
 * and picks one at load time (ifunc); each is the same C, so each has the
 * same per-element semantics. The tails are that same expression too. */
#include <stdbool.h>
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

/* o = (a ^ m) OP1 b, for n floats. */
#define FG_REDUCE_PAIR(NAME, OP1)                                                                              \
	FG_INLINE void NAME(float *restrict o, const float *restrict a, const float *restrict b, uint32_t m,   \
			    size_t n)                                                                          \
	{                                                                                                      \
		size_t i = 0;                                                                                  \
		for (; i + FG_REDUCE_UNROLL <= n; i += FG_REDUCE_UNROLL)                                       \
			for (size_t j = 0; j < FG_REDUCE_UNROLL; j++)                                          \
				o[i + j] = sign_xor(a[i + j], m) OP1 b[i + j];                                 \
		for (; i < n; i++)                                                                             \
			o[i] = sign_xor(a[i], m) OP1 b[i];                                                     \
	}

/* o = ((a ^ m) OP1 b) OP2 c, for n floats. */
#define FG_REDUCE_TRIPLE(NAME, OP1, OP2)                                                                       \
	FG_INLINE void NAME(float *restrict o, const float *restrict a, const float *restrict b,               \
			    const float *restrict c, uint32_t m, size_t n)                                     \
	{                                                                                                      \
		size_t i = 0;                                                                                  \
		for (; i + FG_REDUCE_UNROLL <= n; i += FG_REDUCE_UNROLL)                                       \
			for (size_t j = 0; j < FG_REDUCE_UNROLL; j++)                                          \
				o[i + j] = (sign_xor(a[i + j], m) OP1 b[i + j]) OP2 c[i + j];                  \
		for (; i < n; i++)                                                                             \
			o[i] = (sign_xor(a[i], m) OP1 b[i]) OP2 c[i];                                          \
	}

FG_REDUCE_PAIR(pair_add, +)
FG_REDUCE_PAIR(pair_sub, -)
FG_REDUCE_TRIPLE(triple_add_add, +, +)
FG_REDUCE_TRIPLE(triple_add_sub, +, -)
FG_REDUCE_TRIPLE(triple_sub_add, -, +)
FG_REDUCE_TRIPLE(triple_sub_sub, -, -)

/* o = a ^ m, for n floats (a rule of one line). */
FG_INLINE void single(float *restrict o, const float *restrict a, uint32_t m, size_t n)
{
	size_t i = 0;

	for (; i + FG_REDUCE_UNROLL <= n; i += FG_REDUCE_UNROLL)
		for (size_t j = 0; j < FG_REDUCE_UNROLL; j++)
			o[i + j] = sign_xor(a[i + j], m);
	for (; i < n; i++)
		o[i] = sign_xor(a[i], m);
}

/* o = ((a ^ m) (+|-) b) (+|-) c: lines 1 and 2's signs pick the kernel. */
FG_INLINE void triple(float *restrict o, const float *restrict a, const float *restrict b,
		      const float *restrict c, uint32_t m, unsigned s1, unsigned s2, size_t n)
{
	switch (s1 | s2 << 1) {
	case 0:
		triple_add_add(o, a, b, c, m, n);
		break;
	case 1:
		triple_sub_add(o, a, b, c, m, n);
		break;
	case 2:
		triple_add_sub(o, a, b, c, m, n);
		break;
	default:
		triple_sub_sub(o, a, b, c, m, n);
		break;
	}
}

/* o = o (+|-) c, for one block. */
FG_INLINE void acc_block(float *restrict o, const float *restrict c, unsigned neg, size_t n)
{
	if (!neg)
		for (size_t i = 0; i < n; i++)
			o[i] = o[i] + c[i];
	else
		for (size_t i = 0; i < n; i++)
			o[i] = o[i] - c[i];
}

/* The _to kernels: the expressions above, the result also stored to d1
 * (nd >= 1) and d2 (nd == 2); nd is a constant where they are inlined. */
#define FG_PUT(o, d1, d2, nd, i, v)                                                                            \
	do {                                                                                                   \
		const float v_ = (v);                                                                          \
		(o)[i] = v_;                                                                                   \
		if ((nd) > 0)                                                                                  \
			(d1)[i] = v_;                                                                          \
		if ((nd) > 1)                                                                                  \
			(d2)[i] = v_;                                                                          \
	} while (0)

#define FG_REDUCE_PAIR_TO(NAME, OP1)                                                                           \
	FG_INLINE void NAME(float *restrict o, float *restrict d1, float *restrict d2, const unsigned nd,     \
			    const float *restrict a, const float *restrict b, uint32_t m, size_t n)            \
	{                                                                                                      \
		size_t i = 0;                                                                                  \
		for (; i + FG_REDUCE_UNROLL <= n; i += FG_REDUCE_UNROLL)                                       \
			for (size_t j = 0; j < FG_REDUCE_UNROLL; j++)                                          \
				FG_PUT(o, d1, d2, nd, i + j, sign_xor(a[i + j], m) OP1 b[i + j]);              \
		for (; i < n; i++)                                                                             \
			FG_PUT(o, d1, d2, nd, i, sign_xor(a[i], m) OP1 b[i]);                                  \
	}

#define FG_REDUCE_TRIPLE_TO(NAME, OP1, OP2)                                                                    \
	FG_INLINE void NAME(float *restrict o, float *restrict d1, float *restrict d2, const unsigned nd,     \
			    const float *restrict a, const float *restrict b, const float *restrict c,         \
			    uint32_t m, size_t n)                                                              \
	{                                                                                                      \
		size_t i = 0;                                                                                  \
		for (; i + FG_REDUCE_UNROLL <= n; i += FG_REDUCE_UNROLL)                                       \
			for (size_t j = 0; j < FG_REDUCE_UNROLL; j++)                                          \
				FG_PUT(o, d1, d2, nd, i + j,                                                   \
				       (sign_xor(a[i + j], m) OP1 b[i + j]) OP2 c[i + j]);                     \
		for (; i < n; i++)                                                                             \
			FG_PUT(o, d1, d2, nd, i, (sign_xor(a[i], m) OP1 b[i]) OP2 c[i]);                       \
	}

FG_REDUCE_PAIR_TO(pair_add_to, +)
FG_REDUCE_PAIR_TO(pair_sub_to, -)
FG_REDUCE_TRIPLE_TO(triple_add_add_to, +, +)
FG_REDUCE_TRIPLE_TO(triple_add_sub_to, +, -)
FG_REDUCE_TRIPLE_TO(triple_sub_add_to, -, +)
FG_REDUCE_TRIPLE_TO(triple_sub_sub_to, -, -)

FG_INLINE void single_to(float *restrict o, float *restrict d1, float *restrict d2, const unsigned nd,
			 const float *restrict a, uint32_t m, size_t n)
{
	size_t i = 0;

	for (; i + FG_REDUCE_UNROLL <= n; i += FG_REDUCE_UNROLL)
		for (size_t j = 0; j < FG_REDUCE_UNROLL; j++)
			FG_PUT(o, d1, d2, nd, i + j, sign_xor(a[i + j], m));
	for (; i < n; i++)
		FG_PUT(o, d1, d2, nd, i, sign_xor(a[i], m));
}

FG_INLINE void triple_to(float *restrict o, float *restrict d1, float *restrict d2, const unsigned nd,
			 const float *restrict a, const float *restrict b, const float *restrict c, uint32_t m,
			 unsigned s1, unsigned s2, size_t n)
{
	switch (s1 | s2 << 1) {
	case 0:
		triple_add_add_to(o, d1, d2, nd, a, b, c, m, n);
		break;
	case 1:
		triple_sub_add_to(o, d1, d2, nd, a, b, c, m, n);
		break;
	case 2:
		triple_add_sub_to(o, d1, d2, nd, a, b, c, m, n);
		break;
	default:
		triple_sub_sub_to(o, d1, d2, nd, a, b, c, m, n);
		break;
	}
}

FG_INLINE void acc_block_to(float *restrict o, float *restrict d1, float *restrict d2, const unsigned nd,
			    const float *restrict c, unsigned neg, size_t n)
{
	if (!neg)
		for (size_t i = 0; i < n; i++)
			FG_PUT(o, d1, d2, nd, i, o[i] + c[i]);
	else
		for (size_t i = 0; i < n; i++)
			FG_PUT(o, d1, d2, nd, i, o[i] - c[i]);
}

/* Elements [x, x + len) of the reduction into out + x and, nd of them,
 * d1 and d2 (element x at d1[0]): fg_reduce's passes over that range, the
 * last one storing to the destinations too. */
FG_INLINE void seg_reduce(float *out, float *d1, float *d2, const unsigned nd, const float *const *c,
			  const uint8_t *neg, unsigned n, uint32_t m, size_t x, size_t len)
{
	float *o = out + x;

	switch (n) {
	case 1:
		single_to(o, d1, d2, nd, c[0] + x, m, len);
		return;
	case 2:
		if (!(neg[1] & 1u))
			pair_add_to(o, d1, d2, nd, c[0] + x, c[1] + x, m, len);
		else
			pair_sub_to(o, d1, d2, nd, c[0] + x, c[1] + x, m, len);
		return;
	default:
		break;
	}
	for (size_t base = 0; base < len; base += FG_REDUCE_BLOCK) {
		size_t l = len - base < FG_REDUCE_BLOCK ? len - base : FG_REDUCE_BLOCK;
		size_t e = x + base;
		/* with nd below 2 the unused pointers are never written */
		float *e1 = nd > 0 ? d1 + base : o + base, *e2 = nd > 1 ? d2 + base : o + base;

		if (n == 3) {
			triple_to(o + base, e1, e2, nd, c[0] + e, c[1] + e, c[2] + e, m, neg[1] & 1u, neg[2] & 1u, l);
			continue;
		}
		triple(o + base, c[0] + e, c[1] + e, c[2] + e, m, neg[1] & 1u, neg[2] & 1u, l);
		for (unsigned k = 3; k + 1 < n; k++)
			acc_block(o + base, c[k] + e, neg[k] & 1u, l);
		acc_block_to(o + base, e1, e2, nd, c[n - 1] + e, neg[n - 1] & 1u, l);
	}
}

/* seg_reduce of [x, x + len) with the destinations: all[0..n_all) (the
 * whole body's, element 0 at all[i][0]) and t (element x's place), when
 * not NULL; at most two in all. A function of its own (each clone's):
 * inlined at every segment of fg_reduce_to, the kernels run out of
 * registers there and reload their pointers from the stack per vector. */
FG_CLONES __attribute__((noinline)) static void seg_to(float *out, float *const *all, unsigned n_all, float *t, const float *const *c,
		      const uint8_t *neg, unsigned n, uint32_t m, size_t x, size_t len)
{
	if (!len)
		return;
	switch (n_all + (t != NULL)) {
	case 0:
		seg_reduce(out, out, out, 0, c, neg, n, m, x, len);
		break;
	case 1:
		seg_reduce(out, t ? t : all[0] + x, out, 1, c, neg, n, m, x, len);
		break;
	default:
		seg_reduce(out, all[0] + x, t ? t : all[1] + x, 2, c, neg, n, m, x, len);
		break;
	}
}

FG_CLONES
void fg_reduce_to(float *out, const float *const *c, const uint8_t *neg, unsigned n, size_t n_floats,
		  const struct fg_span *sp, unsigned n_sp)
{
	if (n == 0 || n_floats == 0)
		return;
	if (n_sp > FG_SPANS_MAX)
		n_sp = FG_SPANS_MAX;
	const size_t bytes = n_floats * sizeof(float);
	if (n_sp == 1 && sp->off == 0 && sp->len >= bytes && (uintptr_t)sp->dst % _Alignof(float) == 0) {
		/* one destination over the whole body (a lane buffer) */
		seg_reduce(out, (float *)(void *)sp->dst, out, 1, c, neg, n, sign_mask(neg[0]), 0, n_floats);
		return;
	}
	/* The kernels' destinations: up to two spans over the whole body
	 * (all), stored everywhere, and the others (tiles) one at a time, in
	 * offset order, over their whole floats [a, b). A span that fits
	 * neither (a third whole one, one out of order or overlapping the
	 * tile before it, one with no whole float or a destination not
	 * aligned as the body) is copied from out after the reduction
	 * (copy), as are a tile's bytes at its edges within a float. */
	float *all[2] = {NULL, NULL};
	unsigned n_all = 0, n_tile = 0;
	unsigned tile[FG_SPANS_MAX];
	uint32_t copy = 0;
	size_t a[FG_SPANS_MAX], b[FG_SPANS_MAX], last_b = 0;

	for (unsigned k = 0; k < n_sp; k++) {
		size_t off = sp[k].off, end = off + sp[k].len;

		if (end > bytes)
			end = bytes;
		a[k] = (off + 3) / 4;
		b[k] = end / 4;
		if (off >= end)
			continue; /* nothing of the body */
		if (a[k] >= b[k] || ((uintptr_t)sp[k].dst + (4 * a[k] - off)) % _Alignof(float) != 0) {
			copy |= 1u << k;
		} else if (off == 0 && end == bytes && n_all < 2) {
			all[n_all++] = (float *)(void *)sp[k].dst;
		} else if (n_tile && a[k] < last_b) {
			copy |= 1u << k;
		} else {
			tile[n_tile++] = k;
			last_b = b[k];
		}
	}
	uint32_t m = sign_mask(neg[0]);
	size_t x = 0;

	for (unsigned t = 0; t < n_tile; t++) {
		unsigned k = tile[t];

		seg_to(out, all, n_all, NULL, c, neg, n, m, x, a[k] - x);
		if (n_all < 2) {
			float *t_dst = (float *)(void *)(sp[k].dst + (4 * a[k] - sp[k].off));
			seg_to(out, all, n_all, t_dst, c, neg, n, m, a[k], b[k] - a[k]);
		} else {
			seg_to(out, all, n_all, NULL, c, neg, n, m, a[k], b[k] - a[k]);
			copy |= 1u << k;
		}
		x = b[k];
	}
	seg_to(out, all, n_all, NULL, c, neg, n, m, x, n_floats - x);
	/* the bytes the kernels did not store, from the result */
	const uint8_t *r = (const uint8_t *)out;
	for (unsigned k = 0; k < n_sp; k++) {
		size_t off = sp[k].off, end = off + sp[k].len;

		if (end > bytes)
			end = bytes;
		if (off >= end)
			continue;
		if (copy & (1u << k)) {
			memcpy(sp[k].dst, r + off, end - off);
			continue;
		}
		if (4 * a[k] > off)
			memcpy(sp[k].dst, r + off, 4 * a[k] - off);
		if (end > 4 * b[k])
			memcpy(sp[k].dst + (4 * b[k] - off), r + 4 * b[k], end - 4 * b[k]);
	}
}

FG_CLONES
void fg_reduce(float *out, const float *const *c, const uint8_t *neg, unsigned n, size_t n_floats)
{
	if (n == 0 || n_floats == 0)
		return;
	uint32_t m = sign_mask(neg[0]);

	switch (n) {
	case 1:
		single(out, c[0], m, n_floats);
		return;
	case 2:
		if (!(neg[1] & 1u))
			pair_add(out, c[0], c[1], m, n_floats);
		else
			pair_sub(out, c[0], c[1], m, n_floats);
		return;
	default:
		break;
	}
	for (size_t base = 0; base < n_floats; base += FG_REDUCE_BLOCK) {
		size_t len = n_floats - base < FG_REDUCE_BLOCK ? n_floats - base : FG_REDUCE_BLOCK;
		float *o = out + base;

		triple(o, c[0] + base, c[1] + base, c[2] + base, m, neg[1] & 1u, neg[2] & 1u, len);
		for (unsigned k = 3; k < n; k++)
			acc_block(o, c[k] + base, neg[k] & 1u, len);
	}
}

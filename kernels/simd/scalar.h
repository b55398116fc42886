/* The SIMD vocabulary of every family's kernel bodies on the scalar path (one per ISA:
 * kernels/simd/scalar.h, avx2.h, avx512.h, neon.h; the names mean the same on each):
 *   LM_V holds LM_W floats; LM_ISA_SUFFIX names the path in generated function names;
 *   V_ZERO, V_SET1, V_BCAST(p) (*p in every lane), V_LOADU / V_STOREU (unaligned),
 *   V_STREAM / V_SFENCE (non-temporal store, where the ISA has one), V_ADD, V_SUB, V_MUL,
 *   V_DIV, V_FMA(a, b, c) = a*b + c, V_MAX, V_MIN, V_ABS, V_EXP / V_EXPM1 / V_LOG1P,
 *   V_ROUND (to the nearest integer), V_SCALE2(a, k) = a 2^k (k integral, |k| <= 126),
 *   V_RCP (1 / a to within 2 ulp: V_DIV where division is cheap, else an estimate refined
 *   by Newton steps; fast_exp.h builds V_EXP_FAST / V_EXPM1_FAST from these),
 *   V_HSUM / V_HMAX (over the lanes), V_HSUM4(a, b, c, d, out) (four sums at once);
 *   V_LOAD_F16 / V_LOAD_BF16 (LM_W stored halves to floats), V_LOAD_U8 / U4 / U2 (LM_W
 *   unsigned codes of a packed row from element c, as floats);
 *   PF_*, PV_*, DEC_*: the register-tile shapes of the attention and kvquant bodies.
 * Portable: one float per "vector", libm transcendental functions. */
#ifndef LONGMIX_SIMD_SCALAR_H
#define LONGMIX_SIMD_SCALAR_H

#include <math.h>

#define LM_V float
#define LM_W 1
#define V_LOADU(ptr) (*(ptr))
#define V_STOREU(ptr, v) (*(ptr) = (v))
#define V_SET1(s) (s)
#define V_ADD(a, b) ((a) + (b))
#define V_SUB(a, b) ((a) - (b))
#define V_MUL(a, b) ((a) * (b))
#define V_DIV(a, b) ((a) / (b))
#define V_FMA(a, b, c) ((a) * (b) + (c))
#define V_MAX(a, b) fmaxf(a, b)
#define V_MIN(a, b) fminf(a, b)
#define V_ABS(a) fabsf(a)
#define V_EXP(a) expf(a)
#define V_EXPM1(a) expm1f(a)
#define V_LOG1P(a) log1pf(a)
#define V_HSUM(a) (a)
#define V_ROUND(a) nearbyintf(a)
#define V_SCALE2(a, k) ldexpf(a, (int)(k))
#define V_RCP(a) (1.0f / (a))

#define LM_ISA_SUFFIX scalar
#define V_ZERO() 0.0f
#define V_BCAST(p) (*(p))
#define V_HMAX(x) (x)
#define V_LOAD_F16(p) lm_f32_from_f16(*(p))
#define V_LOAD_BF16(p) lm_f32_from_bf16(*(p))
#define PF_RK 4
#define PF_NV 4
#define PV_R 4
#define PV_CV 4
#define DEC_GB 4
#define DEC_CV 4

/* codes: element c of a row of unsigned codes at `row` (c a multiple of LM_W) */
#define V_LOAD_U8(row, c) ((float)(row)[c])
#define V_LOAD_U4(row, c) ((float)(((row)[(c) >> 1] >> (((c) & 1u) * 4)) & 15u))
#define V_LOAD_U2(row, c) ((float)(((row)[(c) >> 2] >> (((c) & 3u) * 2)) & 3u))

#endif

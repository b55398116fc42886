/* The thin SIMD mapping layer of the recurrent-family kernel bodies (mamba1_body.h,
 * conv_body.h, and the scan, linear-attention and delta-rule bodies): LM_V holds LM_W floats;
 * V_LOADU/V_STOREU/V_SET1, V_ADD/V_SUB/V_MUL/V_DIV/V_MAX/V_MIN, V_FMA(a, b, c) = a*b + c,
 * V_ABS, V_EXP/V_EXPM1/V_LOG1P.
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

#endif

/* The thin SIMD mapping layer of the recurrent-family kernel bodies (mamba1_body.h,
 * conv_body.h, and the scan, linear-attention and delta-rule bodies): LM_V holds LM_W floats;
 * V_LOADU/V_STOREU/V_SET1, V_ADD/V_SUB/V_MUL/V_DIV/V_MAX/V_MIN, V_FMA(a, b, c) = a*b + c,
 * V_ABS, V_EXP/V_EXPM1/V_LOG1P, V_HSUM (the sum of the lanes).
 * AVX-512F: 16 floats, SLEEF 1-ulp transcendental functions (include only from an
 * avx512*.c file). */
#ifndef LONGMIX_SIMD_AVX512_H
#define LONGMIX_SIMD_AVX512_H

#include <immintrin.h>
#include <sleef.h>

#define LM_V __m512
#define LM_W 16
#define V_LOADU(ptr) _mm512_loadu_ps(ptr)
#define V_STOREU(ptr, v) _mm512_storeu_ps(ptr, v)
/* non-temporal store (ptr aligned to the vector), and the fence that orders such stores */
#define V_STREAM(ptr, v) _mm512_stream_ps(ptr, v)
#define V_SFENCE() _mm_sfence()
#define V_SET1(s) _mm512_set1_ps(s)
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_SUB(a, b) _mm512_sub_ps(a, b)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_DIV(a, b) _mm512_div_ps(a, b)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_MAX(a, b) _mm512_max_ps(a, b)
#define V_MIN(a, b) _mm512_min_ps(a, b)
#define V_ABS(a) _mm512_abs_ps(a)
#define V_EXP(a) Sleef_expf16_u10avx512f(a)
#define V_EXPM1(a) Sleef_expm1f16_u10avx512f(a)
#define V_LOG1P(a) Sleef_log1pf16_u10avx512f(a)
/* sum of the 16 lanes (a reduction tree) */
#define V_HSUM(a) _mm512_reduce_add_ps(a)

#endif

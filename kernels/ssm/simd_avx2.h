/* The thin SIMD mapping layer of the recurrent-family kernel bodies (mamba1_body.h,
 * conv_body.h, and the scan, linear-attention and delta-rule bodies): LM_V holds LM_W floats;
 * V_LOADU/V_STOREU/V_SET1, V_ADD/V_SUB/V_MUL/V_DIV/V_MAX/V_MIN, V_FMA(a, b, c) = a*b + c,
 * V_ABS, V_EXP/V_EXPM1/V_LOG1P, V_HSUM (the sum of the lanes).
 * AVX2 + FMA: 8 floats, SLEEF 1-ulp transcendental functions (include only from an
 * avx2*.c file, which gets -mavx2 -mfma). */
#ifndef LONGMIX_SIMD_AVX2_H
#define LONGMIX_SIMD_AVX2_H

#include <immintrin.h>
#include <sleef.h>

#define LM_V __m256
#define LM_W 8
#define V_LOADU(ptr) _mm256_loadu_ps(ptr)
#define V_STOREU(ptr, v) _mm256_storeu_ps(ptr, v)
/* non-temporal store (ptr aligned to the vector), and the fence that orders such stores */
#define V_STREAM(ptr, v) _mm256_stream_ps(ptr, v)
#define V_SFENCE() _mm_sfence()
#define V_SET1(s) _mm256_set1_ps(s)
#define V_ADD(a, b) _mm256_add_ps(a, b)
#define V_SUB(a, b) _mm256_sub_ps(a, b)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_DIV(a, b) _mm256_div_ps(a, b)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_MAX(a, b) _mm256_max_ps(a, b)
#define V_MIN(a, b) _mm256_min_ps(a, b)
#define V_ABS(a) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a) /* clear the sign bit */
#define V_EXP(a) Sleef_expf8_u10avx2(a)
#define V_EXPM1(a) Sleef_expm1f8_u10avx2(a)
#define V_LOG1P(a) Sleef_log1pf8_u10avx2(a)
/* sum of the 8 lanes (a reduction tree) */
static inline float lm_hsum_avx2(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
#define V_HSUM(a) lm_hsum_avx2(a)

#endif

/* AVX2 + FMA peak loop: 12 chains of 8 lanes, x = x * a + b. */
#if !defined(__AVX2__) || !defined(__FMA__)
#error "kernels/core/avx2_peak.c needs -mavx2 -mfma"
#endif
#include "peak.h"

#include <immintrin.h>

uint64_t lm_peak_fma_f32_avx2(uint64_t iterations, float *sink)
{
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(0.000001f);
    __m256 x0 = _mm256_set1_ps(0.0f * 0.01f);
    __m256 x1 = _mm256_set1_ps(1.0f * 0.01f);
    __m256 x2 = _mm256_set1_ps(2.0f * 0.01f);
    __m256 x3 = _mm256_set1_ps(3.0f * 0.01f);
    __m256 x4 = _mm256_set1_ps(4.0f * 0.01f);
    __m256 x5 = _mm256_set1_ps(5.0f * 0.01f);
    __m256 x6 = _mm256_set1_ps(6.0f * 0.01f);
    __m256 x7 = _mm256_set1_ps(7.0f * 0.01f);
    __m256 x8 = _mm256_set1_ps(8.0f * 0.01f);
    __m256 x9 = _mm256_set1_ps(9.0f * 0.01f);
    __m256 x10 = _mm256_set1_ps(10.0f * 0.01f);
    __m256 x11 = _mm256_set1_ps(11.0f * 0.01f);
    for (uint64_t i = 0; i < iterations; i++) { /* x_c = x_c * a + b, twelve independent chains */
        x0 = _mm256_fmadd_ps(x0, a, b);
        x1 = _mm256_fmadd_ps(x1, a, b);
        x2 = _mm256_fmadd_ps(x2, a, b);
        x3 = _mm256_fmadd_ps(x3, a, b);
        x4 = _mm256_fmadd_ps(x4, a, b);
        x5 = _mm256_fmadd_ps(x5, a, b);
        x6 = _mm256_fmadd_ps(x6, a, b);
        x7 = _mm256_fmadd_ps(x7, a, b);
        x8 = _mm256_fmadd_ps(x8, a, b);
        x9 = _mm256_fmadd_ps(x9, a, b);
        x10 = _mm256_fmadd_ps(x10, a, b);
        x11 = _mm256_fmadd_ps(x11, a, b);
    }
    x0 = _mm256_add_ps(x0, x1), x2 = _mm256_add_ps(x2, x3), x4 = _mm256_add_ps(x4, x5);
    x6 = _mm256_add_ps(x6, x7), x8 = _mm256_add_ps(x8, x9), x10 = _mm256_add_ps(x10, x11);
    __m256 s = _mm256_add_ps(_mm256_add_ps(x0, x2), _mm256_add_ps(_mm256_add_ps(x4, x6), _mm256_add_ps(x8, x10)));
    float lanes[8];
    _mm256_storeu_ps(lanes, s);
    *sink = lanes[0] + lanes[7];
    return iterations * LM_PEAK_CHAINS * 8u * 2u;
}

/* AVX-512F peak loop: 12 chains of 16 lanes, x = x * a + b. */
#if !defined(__AVX512F__)
#error "kernels/core/avx512_peak.c needs -mavx512f"
#endif
#include "peak.h"

#include <immintrin.h>

uint64_t lm_peak_fma_f32_avx512(uint64_t iterations, float *sink)
{
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(0.000001f);
    __m512 x0 = _mm512_set1_ps(0.0f * 0.01f);
    __m512 x1 = _mm512_set1_ps(1.0f * 0.01f);
    __m512 x2 = _mm512_set1_ps(2.0f * 0.01f);
    __m512 x3 = _mm512_set1_ps(3.0f * 0.01f);
    __m512 x4 = _mm512_set1_ps(4.0f * 0.01f);
    __m512 x5 = _mm512_set1_ps(5.0f * 0.01f);
    __m512 x6 = _mm512_set1_ps(6.0f * 0.01f);
    __m512 x7 = _mm512_set1_ps(7.0f * 0.01f);
    __m512 x8 = _mm512_set1_ps(8.0f * 0.01f);
    __m512 x9 = _mm512_set1_ps(9.0f * 0.01f);
    __m512 x10 = _mm512_set1_ps(10.0f * 0.01f);
    __m512 x11 = _mm512_set1_ps(11.0f * 0.01f);
    for (uint64_t i = 0; i < iterations; i++) { /* x_c = x_c * a + b, twelve independent chains */
        x0 = _mm512_fmadd_ps(x0, a, b);
        x1 = _mm512_fmadd_ps(x1, a, b);
        x2 = _mm512_fmadd_ps(x2, a, b);
        x3 = _mm512_fmadd_ps(x3, a, b);
        x4 = _mm512_fmadd_ps(x4, a, b);
        x5 = _mm512_fmadd_ps(x5, a, b);
        x6 = _mm512_fmadd_ps(x6, a, b);
        x7 = _mm512_fmadd_ps(x7, a, b);
        x8 = _mm512_fmadd_ps(x8, a, b);
        x9 = _mm512_fmadd_ps(x9, a, b);
        x10 = _mm512_fmadd_ps(x10, a, b);
        x11 = _mm512_fmadd_ps(x11, a, b);
    }
    x0 = _mm512_add_ps(x0, x1), x2 = _mm512_add_ps(x2, x3), x4 = _mm512_add_ps(x4, x5);
    x6 = _mm512_add_ps(x6, x7), x8 = _mm512_add_ps(x8, x9), x10 = _mm512_add_ps(x10, x11);
    __m512 s = _mm512_add_ps(_mm512_add_ps(x0, x2), _mm512_add_ps(_mm512_add_ps(x4, x6), _mm512_add_ps(x8, x10)));
    *sink = _mm512_reduce_add_ps(s);
    return iterations * LM_PEAK_CHAINS * 16u * 2u;
}

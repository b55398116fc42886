/* AVX512-VNNI peak loop: 12 chains of VPDPBUSD, acc += sum of 4 u8 x s8 products per
 * 32-bit lane, so the loop is bound by the integer dot-product units (what the quantized
 * KV decode's scores and weighted values run on). Written as asm because gcc 12 copies the
 * accumulator around _mm512_dpbusd_epi32 (see kernels/kvquant/avx512vnni.c); volatile so
 * the chains are not merged. Called only when cpuid reports AVX512-VNNI. */
#if !defined(__AVX512F__) || !defined(__AVX512VNNI__)
#error "kernels/core/avx512vnni_peak.c needs -mavx512f -mavx512vnni"
#endif
#include "peak.h"

#include <immintrin.h>

/* acc += dpbusd(u, w) in place */
#define PEAK_DPBUSD(acc) __asm__ volatile("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(w))

uint64_t lm_peak_dot_i8_avx512vnni(uint64_t iterations, float *sink)
{
    const __m512i u = _mm512_set1_epi8(1), w = _mm512_set1_epi8(-1); /* sums stay small */
    __m512i x0 = _mm512_setzero_si512(), x1 = x0, x2 = x0, x3 = x0, x4 = x0, x5 = x0;
    __m512i x6 = x0, x7 = x0, x8 = x0, x9 = x0, x10 = x0, x11 = x0;
    for (uint64_t i = 0; i < iterations; i++) { /* x_c += 4 (1 x -1) per lane, twelve chains */
        PEAK_DPBUSD(x0);
        PEAK_DPBUSD(x1);
        PEAK_DPBUSD(x2);
        PEAK_DPBUSD(x3);
        PEAK_DPBUSD(x4);
        PEAK_DPBUSD(x5);
        PEAK_DPBUSD(x6);
        PEAK_DPBUSD(x7);
        PEAK_DPBUSD(x8);
        PEAK_DPBUSD(x9);
        PEAK_DPBUSD(x10);
        PEAK_DPBUSD(x11);
    }
    x0 = _mm512_add_epi32(x0, x1), x2 = _mm512_add_epi32(x2, x3), x4 = _mm512_add_epi32(x4, x5);
    x6 = _mm512_add_epi32(x6, x7), x8 = _mm512_add_epi32(x8, x9), x10 = _mm512_add_epi32(x10, x11);
    x0 = _mm512_add_epi32(_mm512_add_epi32(x0, x2), _mm512_add_epi32(x4, x6));
    /* lanes folded with OR: the chains wrap around 2^32 on long runs, which the vector adds
     * do by definition but a scalar int sum would overflow */
    *sink = (float)_mm512_reduce_or_epi32(_mm512_add_epi32(x0, _mm512_add_epi32(x8, x10)));
    /* 2 operations (multiply, add) per byte product, 64 products per instruction */
    return iterations * LM_PEAK_CHAINS * 64u * 2u;
}

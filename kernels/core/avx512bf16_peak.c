/* AVX512-BF16 peak loop: 12 chains of VDPBF16PS, acc += sum of 2 bf16 x bf16 products per
 * float32 lane (what a bf16 matmul without AMX runs on). asm, volatile, like the VNNI loop,
 * so the chains are neither merged nor copied around. Called only when cpuid reports
 * AVX512-BF16. */
#if !defined(__AVX512F__) || !defined(__AVX512BF16__)
#error "kernels/core/avx512bf16_peak.c needs -mavx512f -mavx512bf16"
#endif
#include "peak.h"

#include <immintrin.h>

/* acc += dpbf16(u, w) in place */
#define PEAK_DPBF16(acc) __asm__ volatile("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(u), "v"(w))

uint64_t lm_peak_dot_bf16_avx512bf16(uint64_t iterations, float *sink)
{
    /* u = 1.0 and w = 2^-20 in bf16: the sums stay far from overflow and exact */
    const __m512i u = _mm512_set1_epi16(0x3F80), w = _mm512_set1_epi16(0x3580);
    __m512 x0 = _mm512_setzero_ps(), x1 = x0, x2 = x0, x3 = x0, x4 = x0, x5 = x0;
    __m512 x6 = x0, x7 = x0, x8 = x0, x9 = x0, x10 = x0, x11 = x0;
    for (uint64_t i = 0; i < iterations; i++) { /* x_c += 2 u w per lane, twelve chains */
        PEAK_DPBF16(x0);
        PEAK_DPBF16(x1);
        PEAK_DPBF16(x2);
        PEAK_DPBF16(x3);
        PEAK_DPBF16(x4);
        PEAK_DPBF16(x5);
        PEAK_DPBF16(x6);
        PEAK_DPBF16(x7);
        PEAK_DPBF16(x8);
        PEAK_DPBF16(x9);
        PEAK_DPBF16(x10);
        PEAK_DPBF16(x11);
    }
    x0 = _mm512_add_ps(x0, x1), x2 = _mm512_add_ps(x2, x3), x4 = _mm512_add_ps(x4, x5);
    x6 = _mm512_add_ps(x6, x7), x8 = _mm512_add_ps(x8, x9), x10 = _mm512_add_ps(x10, x11);
    x0 = _mm512_add_ps(_mm512_add_ps(x0, x2), _mm512_add_ps(x4, x6));
    *sink = _mm512_reduce_add_ps(_mm512_add_ps(x0, _mm512_add_ps(x8, x10)));
    /* 2 operations per bf16 product, 32 products per instruction */
    return iterations * LM_PEAK_CHAINS * 32u * 2u;
}

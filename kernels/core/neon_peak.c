/* NEON peak loop: 12 chains of 4 lanes, x = x * a + b with vfmaq_f32. */
#if !defined(__ARM_NEON)
#error "kernels/core/neon_peak.c needs an AArch64 target with Advanced SIMD"
#endif
#include "peak.h"

#include <arm_neon.h>

uint64_t lm_peak_fma_f32_neon(uint64_t iterations, float *sink)
{
    const float32x4_t a = vdupq_n_f32(0.999999f), b = vdupq_n_f32(0.000001f);
    float32x4_t x0 = vdupq_n_f32(0.0f * 0.01f);
    float32x4_t x1 = vdupq_n_f32(1.0f * 0.01f);
    float32x4_t x2 = vdupq_n_f32(2.0f * 0.01f);
    float32x4_t x3 = vdupq_n_f32(3.0f * 0.01f);
    float32x4_t x4 = vdupq_n_f32(4.0f * 0.01f);
    float32x4_t x5 = vdupq_n_f32(5.0f * 0.01f);
    float32x4_t x6 = vdupq_n_f32(6.0f * 0.01f);
    float32x4_t x7 = vdupq_n_f32(7.0f * 0.01f);
    float32x4_t x8 = vdupq_n_f32(8.0f * 0.01f);
    float32x4_t x9 = vdupq_n_f32(9.0f * 0.01f);
    float32x4_t x10 = vdupq_n_f32(10.0f * 0.01f);
    float32x4_t x11 = vdupq_n_f32(11.0f * 0.01f);
    for (uint64_t i = 0; i < iterations; i++) { /* x_c = x_c * a + b, twelve independent chains */
        x0 = vfmaq_f32(b, x0, a);
        x1 = vfmaq_f32(b, x1, a);
        x2 = vfmaq_f32(b, x2, a);
        x3 = vfmaq_f32(b, x3, a);
        x4 = vfmaq_f32(b, x4, a);
        x5 = vfmaq_f32(b, x5, a);
        x6 = vfmaq_f32(b, x6, a);
        x7 = vfmaq_f32(b, x7, a);
        x8 = vfmaq_f32(b, x8, a);
        x9 = vfmaq_f32(b, x9, a);
        x10 = vfmaq_f32(b, x10, a);
        x11 = vfmaq_f32(b, x11, a);
    }
    x0 = vaddq_f32(x0, x1), x2 = vaddq_f32(x2, x3), x4 = vaddq_f32(x4, x5);
    x6 = vaddq_f32(x6, x7), x8 = vaddq_f32(x8, x9), x10 = vaddq_f32(x10, x11);
    float32x4_t s = vaddq_f32(vaddq_f32(x0, x2), vaddq_f32(vaddq_f32(x4, x6), vaddq_f32(x8, x10)));
    *sink = vaddvq_f32(s);
    return iterations * LM_PEAK_CHAINS * 4u * 2u;
}

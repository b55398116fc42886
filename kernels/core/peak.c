/* Portable float32 peak loop (what the scalar path's arithmetic can reach) and the
 * per-ISA lookup. */
#include "peak.h"

/* The multiplier keeps every chain bounded: x -> b / (1 - a) = 1, never denormal. */
#define PEAK_A 0.999999f
#define PEAK_B 0.000001f

uint64_t lm_peak_fma_f32_scalar(uint64_t iterations, float *sink)
{
    float x0 = 0.0f * 0.01f;
    float x1 = 1.0f * 0.01f;
    float x2 = 2.0f * 0.01f;
    float x3 = 3.0f * 0.01f;
    float x4 = 4.0f * 0.01f;
    float x5 = 5.0f * 0.01f;
    float x6 = 6.0f * 0.01f;
    float x7 = 7.0f * 0.01f;
    float x8 = 8.0f * 0.01f;
    float x9 = 9.0f * 0.01f;
    float x10 = 10.0f * 0.01f;
    float x11 = 11.0f * 0.01f;
    for (uint64_t i = 0; i < iterations; i++) { /* x_c = x_c * a + b, twelve independent chains */
        x0 = x0 * PEAK_A + PEAK_B;
        x1 = x1 * PEAK_A + PEAK_B;
        x2 = x2 * PEAK_A + PEAK_B;
        x3 = x3 * PEAK_A + PEAK_B;
        x4 = x4 * PEAK_A + PEAK_B;
        x5 = x5 * PEAK_A + PEAK_B;
        x6 = x6 * PEAK_A + PEAK_B;
        x7 = x7 * PEAK_A + PEAK_B;
        x8 = x8 * PEAK_A + PEAK_B;
        x9 = x9 * PEAK_A + PEAK_B;
        x10 = x10 * PEAK_A + PEAK_B;
        x11 = x11 * PEAK_A + PEAK_B;
    }
    float s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7)) + ((x8 + x9) + (x10 + x11));
    *sink = s;
    return iterations * LM_PEAK_CHAINS * 2u;
}

lm_peak_fn lm_peak_for(lm_isa isa)
{
    switch (isa) {
    case LM_ISA_SCALAR: return lm_peak_fma_f32_scalar;
#if defined(__x86_64__)
    case LM_ISA_AVX2: return lm_peak_fma_f32_avx2;
    case LM_ISA_AVX512: return lm_peak_fma_f32_avx512;
#endif
#if defined(__aarch64__)
    case LM_ISA_NEON: return lm_peak_fma_f32_neon;
#endif
    default: /* a derived path (avx512vnni, avx512bf16) has its parent's vector width */
        return lm_isa_derived(isa) ? lm_peak_for(lm_isa_parent(isa)) : NULL;
    }
}

lm_peak_fn lm_peak_dot_i8(void)
{
#if defined(__x86_64__)
    if (lm_isa_available(LM_ISA_AVX512) && lm_cpu()->avx512_vnni)
        return lm_peak_dot_i8_avx512vnni;
#endif
    return NULL;
}

lm_peak_fn lm_peak_dot_bf16(void)
{
#if defined(__x86_64__)
    if (lm_isa_available(LM_ISA_AVX512) && lm_cpu()->avx512_bf16)
        return lm_peak_dot_bf16_avx512bf16;
#endif
    return NULL;
}

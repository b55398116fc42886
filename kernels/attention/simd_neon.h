/* SIMD mapping layer for neon (see kernel_body.h for the list of names): shared by the
 * attention and kvquant kernels of this path. Include only from neon.c files. */
#ifndef LONGMIX_SIMD_NEON_H
#define LONGMIX_SIMD_NEON_H


#include <arm_neon.h>
#include <sleef.h>
#include <string.h>

#define LM_ISA_SUFFIX neon
typedef float32x4_t vf;
#define VW 4
#define V_ZERO() vdupq_n_f32(0.0f)
#define V_SET1(x) vdupq_n_f32(x)
#define V_LOAD(p) vld1q_f32(p)
#define V_STORE(p, x) vst1q_f32(p, x)
#define V_BCAST(p) vld1q_dup_f32(p)
#define V_FMA(a, b, c) vfmaq_f32(c, a, b)
#define V_MUL(a, b) vmulq_f32(a, b)
#define V_ADD(a, b) vaddq_f32(a, b)
#define V_SUB(a, b) vsubq_f32(a, b)
#define V_MAX(a, b) vmaxq_f32(a, b)
#define V_HSUM(x) vaddvq_f32(x)
#define V_HMAX(x) vmaxvq_f32(x)
#define V_EXP(x) Sleef_expf4_u10advsimd(x)
/* 4 halves -> 4 floats (fcvtl) */
#define V_LOAD_F16(p) vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p)))
/* 4 bfloat16 -> 4 floats: widen, shift into the high half */
#define V_LOAD_BF16(p) vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16))
#define PF_RK 4
#define PF_NV 4
#define PV_R 4
#define PV_CV 4
#define DEC_GB 4
#define DEC_CV 4

/* codes: VW unsigned codes of a row at `row`, from element c (a multiple of 4) */
static inline float32x4_t load_codes_neon(const uint8_t *row, size_t c, unsigned bits)
{
    const unsigned per_byte = 8 / bits, mask = (1u << bits) - 1u;
    uint32_t lanes[4];
    for (size_t i = 0; i < 4; i++) {
        size_t e = c + i;
        lanes[i] = (row[e / per_byte] >> ((e % per_byte) * bits)) & mask;
    }
    return vcvtq_f32_u32(vld1q_u32(lanes));
}
#define V_LOAD_U8(row, c) load_codes_neon(row, c, 8)
#define V_LOAD_U4(row, c) load_codes_neon(row, c, 4)
#define V_LOAD_U2(row, c) load_codes_neon(row, c, 2)

#endif

/* The SIMD vocabulary of every family's kernel bodies on the neon path (one per ISA:
 * kernels/simd/scalar.h, avx2.h, avx512.h, neon.h; the names mean the same on each):
 *   LM_V holds LM_W floats; LM_ISA_SUFFIX names the path in generated function names;
 *   V_ZERO, V_SET1, V_BCAST(p) (*p in every lane), V_LOADU / V_STOREU (unaligned),
 *   V_STREAM / V_SFENCE (non-temporal store, where the ISA has one), V_ADD, V_SUB, V_MUL,
 *   V_DIV, V_FMA(a, b, c) = a*b + c, V_MAX, V_MIN, V_ABS, V_EXP / V_EXPM1 / V_LOG1P,
 *   V_ROUND (to the nearest integer), V_SCALE2(a, k) = a 2^k (k integral, |k| <= 126),
 *   V_RCP (1 / a to within 2 ulp: V_DIV where division is cheap, else an estimate refined
 *   by Newton steps; fast_exp.h builds V_EXP_FAST / V_EXPM1_FAST from these),
 *   V_HSUM / V_HMAX (over the lanes), V_HSUM4(a, b, c, d, out) (four sums at once);
 *   V_LOAD_F16 / V_LOAD_BF16 (LM_W stored halves to floats), V_LOAD_U8 / U4 / U2 (LM_W
 *   unsigned codes of a packed row from element c, as floats);
 *   PF_*, PV_*, DEC_*: the register-tile shapes of the attention and kvquant bodies.
 * AArch64 Advanced SIMD: 4 floats, SLEEF 1-ulp transcendental functions. */
#ifndef LONGMIX_SIMD_NEON_H
#define LONGMIX_SIMD_NEON_H

#include <arm_neon.h>
#include <sleef.h>
#include <string.h>

#define LM_V float32x4_t
#define LM_W 4
#define V_LOADU(ptr) vld1q_f32(ptr)
#define V_STOREU(ptr, v) vst1q_f32(ptr, v)
#define V_SET1(s) vdupq_n_f32(s)
#define V_ADD(a, b) vaddq_f32(a, b)
#define V_SUB(a, b) vsubq_f32(a, b)
#define V_MUL(a, b) vmulq_f32(a, b)
#define V_DIV(a, b) vdivq_f32(a, b)
#define V_FMA(a, b, c) vfmaq_f32(c, a, b) /* c + a*b */
#define V_MAX(a, b) vmaxq_f32(a, b)
#define V_MIN(a, b) vminq_f32(a, b)
#define V_ABS(a) vabsq_f32(a)
#define V_EXP(a) Sleef_expf4_u10advsimd(a)
#define V_EXPM1(a) Sleef_expm1f4_u10advsimd(a)
#define V_LOG1P(a) Sleef_log1pf4_u10advsimd(a)
#define V_HSUM(a) vaddvq_f32(a) /* sum of the 4 lanes */
#define V_ROUND(a) vrndnq_f32(a)
/* a 2^k: k + 127 in the exponent field of a float */
#define V_SCALE2(a, k)                                                                         \
    vmulq_f32(a, vreinterpretq_f32_s32(vshlq_n_s32(                                            \
                     vaddq_s32(vcvtq_s32_f32(k), vdupq_n_s32(127)), 23)))
/* 1 / a: the estimate and two Newton steps (vrecps: 2 - a r) */
#define V_RCP(a) lm_rcp_neon(a)
static inline float32x4_t lm_rcp_neon(float32x4_t a)
{
    float32x4_t r = vrecpeq_f32(a);
    r = vmulq_f32(r, vrecpsq_f32(a, r));
    return vmulq_f32(r, vrecpsq_f32(a, r));
}

#define LM_ISA_SUFFIX neon
#define V_ZERO() vdupq_n_f32(0.0f)
#define V_BCAST(p) vld1q_dup_f32(p)
#define V_HMAX(x) vmaxvq_f32(x)
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

/* codes: LM_W unsigned codes of a row at `row`, from element c (a multiple of 4) */
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

/* out[0..4) = lane sums of a, b, c, d: two levels of pairwise adds */
#define V_HSUM4(a, b, c, d, out) vst1q_f32(out, vpaddq_f32(vpaddq_f32(a, b), vpaddq_f32(c, d)))

#endif

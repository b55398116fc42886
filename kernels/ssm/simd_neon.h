/* The thin SIMD mapping layer of the recurrent-family kernel bodies (mamba1_body.h,
 * conv_body.h, and the scan, linear-attention and delta-rule bodies): LM_V holds LM_W floats;
 * V_LOADU/V_STOREU/V_SET1, V_ADD/V_SUB/V_MUL/V_DIV/V_MAX/V_MIN, V_FMA(a, b, c) = a*b + c,
 * V_ABS, V_EXP/V_EXPM1/V_LOG1P.
 * AArch64 Advanced SIMD: 4 floats, SLEEF 1-ulp transcendental functions (include only
 * from a neon*.c file). */
#ifndef LONGMIX_SIMD_NEON_H
#define LONGMIX_SIMD_NEON_H

#include <arm_neon.h>
#include <sleef.h>

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

#endif

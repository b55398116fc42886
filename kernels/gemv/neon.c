/* NEON float32 y = X w: 4 lanes, two accumulators, scalar tail. */
#if !defined(__ARM_NEON)
#error "kernels/gemv/neon.c needs an AArch64 target with Advanced SIMD"
#endif
#include "gemv.h"

#include <arm_neon.h>

void lm_gemv_rowdot_f32_neon(const float *restrict x, const float *restrict w,
                             float *restrict y, size_t n, size_t d)
{
    for (size_t i = 0; i < n; i++) {
        const float *row = x + i * d; /* {d} */
        float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);
        size_t j = 0;
        for (; j + 8 <= d; j += 8) { /* acc += row[j..j+8) * w[j..j+8) */
            acc0 = vfmaq_f32(acc0, vld1q_f32(row + j), vld1q_f32(w + j));
            acc1 = vfmaq_f32(acc1, vld1q_f32(row + j + 4), vld1q_f32(w + j + 4));
        }
        float sum = vaddvq_f32(vaddq_f32(acc0, acc1));
        for (; j < d; j++)
            sum += row[j] * w[j];
        y[i] = sum;
    }
}

/* Portable float32 y = X w: four independent partial sums so the compiler can pipeline. */
#include "gemv.h"

void lm_gemv_rowdot_f32_scalar(const float *restrict x, const float *restrict w,
                               float *restrict y, size_t n, size_t d)
{
    for (size_t i = 0; i < n; i++) {
        const float *row = x + i * d; /* {d} */
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
        size_t j = 0;
        for (; j + 4 <= d; j += 4) {
            s0 += row[j] * w[j];
            s1 += row[j + 1] * w[j + 1];
            s2 += row[j + 2] * w[j + 2];
            s3 += row[j + 3] * w[j + 3];
        }
        for (; j < d; j++)
            s0 += row[j] * w[j];
        y[i] = (s0 + s1) + (s2 + s3);
    }
}

/* AVX2 + FMA float32 y = X w: 8 lanes, two accumulators, scalar tail. */
#if !defined(__AVX2__) || !defined(__FMA__)
#error "kernels/gemv/avx2.c needs -mavx2 -mfma"
#endif
#include "gemv.h"

#include <immintrin.h>

static float horizontal_sum_256(__m256 v)
{
    __m128 sum = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    sum = _mm_add_ps(sum, _mm_movehl_ps(sum, sum)); /* lanes 0+2, 1+3 */
    sum = _mm_add_ss(sum, _mm_movehdup_ps(sum));    /* lane 0 + lane 1 */
    return _mm_cvtss_f32(sum);
}

void lm_gemv_rowdot_f32_avx2(const float *restrict x, const float *restrict w,
                             float *restrict y, size_t n, size_t d)
{
    for (size_t i = 0; i < n; i++) {
        const float *row = x + i * d; /* {d} */
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        size_t j = 0;
        for (; j + 16 <= d; j += 16) { /* acc += row[j..j+16) * w[j..j+16) */
            acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + j), _mm256_loadu_ps(w + j), acc0);
            acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(row + j + 8), _mm256_loadu_ps(w + j + 8), acc1);
        }
        float sum = horizontal_sum_256(_mm256_add_ps(acc0, acc1));
        for (; j < d; j++)
            sum += row[j] * w[j];
        y[i] = sum;
    }
}

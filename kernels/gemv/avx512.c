/* AVX-512F float32 y = X w: 16 lanes, masked tail load instead of a scalar loop. */
#if !defined(__AVX512F__)
#error "kernels/gemv/avx512.c needs -mavx512f"
#endif
#include "gemv.h"

#include <immintrin.h>

void lm_gemv_rowdot_f32_avx512(const float *restrict x, const float *restrict w,
                               float *restrict y, size_t n, size_t d)
{
    for (size_t i = 0; i < n; i++) {
        const float *row = x + i * d; /* {d} */
        __m512 acc = _mm512_setzero_ps();
        size_t j = 0;
        for (; j + 16 <= d; j += 16) /* acc += row[j..j+16) * w[j..j+16) */
            acc = _mm512_fmadd_ps(_mm512_loadu_ps(row + j), _mm512_loadu_ps(w + j), acc);
        if (j < d) { /* tail: lanes past d load as zero */
            __mmask16 live = (__mmask16)((1u << (d - j)) - 1u);
            acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(live, row + j),
                                  _mm512_maskz_loadu_ps(live, w + j), acc);
        }
        y[i] = _mm512_reduce_add_ps(acc);
    }
}

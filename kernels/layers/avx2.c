/* AVX2 dense kernels: per row, nb sequences' running sums in ymm registers, two column
 * blocks of 8 in flight, each weight loaded and widened to float32 once for the batch
 * block; tail columns (cols not a multiple of 8) one by one. */
#if !defined(__AVX2__) || !defined(__FMA__)
#error "kernels/layers/avx2.c needs -mavx2 -mfma"
#endif
#include "layers.h"

#include <immintrin.h>

/* loops over the constant batch extent: unrolled so the sums live in registers */
#define UNROLL _Pragma("GCC unroll 8")
#include <string.h>

/* 8 weights at p[c..c+8) widened to float32 */
static inline __m256 load_f32(const void *p, size_t c) { return _mm256_loadu_ps((const float *)p + c); }
static inline __m256 load_bf16(const void *p, size_t c)
{
    /* w = (float)(bits << 16) */
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + c));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
static inline __m256 load_int8(const void *p, size_t c)
{
    __m128i b = _mm_loadl_epi64((const __m128i *)((const int8_t *)p + c)); /* (float)code */
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
}
static inline float one_f32(const void *p, size_t c) { return ((const float *)p)[c]; }
static inline float one_bf16(const void *p, size_t c)
{
    uint32_t bits = (uint32_t)((const uint16_t *)p)[c] << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
static inline float one_int8(const void *p, size_t c) { return (float)((const int8_t *)p)[c]; }

static inline float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

typedef __m256 (*load_fn)(const void *, size_t);
typedef float (*one_fn)(const void *, size_t);

static inline __attribute__((always_inline)) void
row_dot(load_fn load, one_fn one, const void *row, const float *x, size_t nb, size_t cols,
        float rscale, float *y, size_t ldy, size_t r)
{
    __m256 a0[LM_DENSE_BATCH_BLOCK], a1[LM_DENSE_BATCH_BLOCK];
    UNROLL
    for (size_t b = 0; b < nb; b++)
        a0[b] = a1[b] = _mm256_setzero_ps();
    size_t c = 0;
    for (; c + 16 <= cols; c += 16) {
        __m256 w0 = load(row, c), w1 = load(row, c + 8);
        UNROLL
        for (size_t b = 0; b < nb; b++) { /* a[b] += w * x[b, c..c+16) */
            a0[b] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + b * cols + c), a0[b]);
            a1[b] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + b * cols + c + 8), a1[b]);
        }
    }
    UNROLL
    for (size_t b = 0; b < nb; b++) {
        float s = hsum(_mm256_add_ps(a0[b], a1[b]));
        for (size_t t = c; t < cols; t++)
            s += one(row, t) * x[b * cols + t];
        y[b * ldy + r] = s * rscale;
    }
}

#define ROWS_NB(load, one, elem, NB)                                                           \
    for (size_t r = r0; r < r1; r++)                                                           \
        row_dot(load, one, (const elem *)w + r * cols, x, NB, cols,                            \
                scale != NULL ? scale[r] : 1.0f, y, ldy, r);

#define DENSE_ROWS_AVX2(name, load, one, elem, has_scale)                                      \
    void name(const void *w, const float *scale_in, const float *x, size_t nb, size_t cols,    \
              size_t r0, size_t r1, float *y, size_t ldy)                                      \
    {                                                                                          \
        const float *scale = has_scale ? scale_in : NULL;                                      \
        switch (nb) {                                                                          \
        case 1: ROWS_NB(load, one, elem, 1) break;                                             \
        case 2: ROWS_NB(load, one, elem, 2) break;                                             \
        case 3: ROWS_NB(load, one, elem, 3) break;                                             \
        case 4: ROWS_NB(load, one, elem, 4) break;                                             \
        case 5: ROWS_NB(load, one, elem, 5) break;                                             \
        case 6: ROWS_NB(load, one, elem, 6) break;                                             \
        case 7: ROWS_NB(load, one, elem, 7) break;                                             \
        default: ROWS_NB(load, one, elem, LM_DENSE_BATCH_BLOCK) break;                         \
        }                                                                                      \
    }

DENSE_ROWS_AVX2(lm_dense_rows_f32_avx2, load_f32, one_f32, float, 0)
DENSE_ROWS_AVX2(lm_dense_rows_bf16_avx2, load_bf16, one_bf16, uint16_t, 0)
DENSE_ROWS_AVX2(lm_dense_rows_int8_avx2, load_int8, one_int8, int8_t, 1)

/* AVX-512 dense kernels: each weight is loaded and widened to float32 once for the whole
 * batch block, the nb sequences' running sums live in zmm registers. One sequence: one row
 * at a time, two column blocks of 16 in flight. Several: three rows at a time, so each
 * load of x[b, c..c+16) (which at batch 8 no longer fits L1 and comes from L2) serves
 * three rows' FMAs; 3 x 8 sums + 3 weights + x fit the 32 registers. Tail columns (cols
 * not a multiple of 16) are masked loads. */
#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "kernels/layers/avx512.c needs -mavx512f -mavx512bw"
#endif
#include "layers.h"

#include <immintrin.h>

/* loops over the constant batch and row extents: unrolled so the arrays of sums live in
 * registers (at -O2 GCC otherwise keeps them on the stack, a load and a store per FMA) */
#define UNROLL _Pragma("GCC unroll 8")

/* 16 weights at p[c..c+16) (lanes off `live` read as zero) widened to float32. */
static inline __m512 load_f32(const void *p, size_t c, __mmask16 live)
{
    return _mm512_maskz_loadu_ps(live, (const float *)p + c);
}
static inline __m512 load_bf16(const void *p, size_t c, __mmask16 live)
{
    /* w = (float)(bits << 16): bf16 is the high half of a float32 */
    __m256i h = _mm256_maskz_loadu_epi16(live, (const uint16_t *)p + c);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
static inline __m512 load_int8(const void *p, size_t c, __mmask16 live)
{
    __m128i b = _mm_maskz_loadu_epi8(live, (const int8_t *)p + c); /* w = (float)code */
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
}

typedef __m512 (*load_fn)(const void *, size_t, __mmask16);

/* One row against nb (a constant after inlining) sequences. */
static inline __attribute__((always_inline)) void
row_dot(load_fn load, const void *row, const float *x, size_t nb, size_t cols, float rscale,
        float *y, size_t ldy, size_t r)
{
    __m512 a0[LM_DENSE_BATCH_BLOCK], a1[LM_DENSE_BATCH_BLOCK];
    UNROLL
    for (size_t b = 0; b < nb; b++)
        a0[b] = a1[b] = _mm512_setzero_ps();
    size_t c = 0;
    for (; c + 32 <= cols; c += 32) {
        __m512 w0 = load(row, c, 0xFFFF), w1 = load(row, c + 16, 0xFFFF);
        UNROLL
        for (size_t b = 0; b < nb; b++) { /* a[b] += w * x[b, c..c+32) */
            a0[b] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + b * cols + c), a0[b]);
            a1[b] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + b * cols + c + 16), a1[b]);
        }
    }
    for (; c < cols; c += 16) {
        __mmask16 live = cols - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (cols - c)) - 1u);
        __m512 w0 = load(row, c, live);
        UNROLL
        for (size_t b = 0; b < nb; b++)
            a0[b] = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(live, x + b * cols + c), a0[b]);
    }
    UNROLL
    for (size_t b = 0; b < nb; b++)
        y[b * ldy + r] = _mm512_reduce_add_ps(_mm512_add_ps(a0[b], a1[b])) * rscale;
}

/* Rows r .. r + nr - 1 (rows of `esize` bytes apart in w) against nb sequences, nr and nb
 * constants after inlining. */
static inline __attribute__((always_inline)) void
rows_dot(load_fn load, const char *w, size_t esize, const float *x, size_t nb, size_t nr,
         size_t cols, const float *scale, float *y, size_t ldy, size_t r)
{
    enum { NR = 3 };
    __m512 a[NR][LM_DENSE_BATCH_BLOCK];
    UNROLL
    for (size_t i = 0; i < nr; i++)
        UNROLL
        for (size_t b = 0; b < nb; b++)
            a[i][b] = _mm512_setzero_ps();
    const char *row = w + r * cols * esize;
    for (size_t c = 0; c < cols; c += 16) {
        __mmask16 live = cols - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (cols - c)) - 1u);
        __m512 wv[NR];
        UNROLL
        for (size_t i = 0; i < nr; i++)
            wv[i] = load(row + i * cols * esize, c, live);
        UNROLL
        for (size_t b = 0; b < nb; b++) { /* a[i][b] += w[r + i, c..] * x[b, c..] */
            const __m512 xv = _mm512_maskz_loadu_ps(live, x + b * cols + c);
            UNROLL
            for (size_t i = 0; i < nr; i++)
                a[i][b] = _mm512_fmadd_ps(wv[i], xv, a[i][b]);
        }
    }
    UNROLL
    for (size_t i = 0; i < nr; i++) {
        const float s = scale != NULL ? scale[r + i] : 1.0f;
        UNROLL
        for (size_t b = 0; b < nb; b++)
            y[b * ldy + r + i] = _mm512_reduce_add_ps(a[i][b]) * s;
    }
}

/* rows [r0, r1) with nb fixed at compile time by the switch below */
#define ROWS_NB(load, elem, NB)                                                                \
    if (NB == 1) {                                                                             \
        for (size_t r = r0; r < r1; r++)                                                       \
            row_dot(load, (const elem *)w + r * cols, x, NB, cols,                             \
                    scale != NULL ? scale[r] : 1.0f, y, ldy, r);                               \
    } else {                                                                                   \
        size_t r = r0;                                                                         \
        for (; r + 3 <= r1; r += 3)                                                            \
            rows_dot(load, w, sizeof(elem), x, NB, 3, cols, scale, y, ldy, r);                 \
        for (; r < r1; r++)                                                                    \
            rows_dot(load, w, sizeof(elem), x, NB, 1, cols, scale, y, ldy, r);                 \
    }

#define DENSE_ROWS_AVX512(name, load, elem, has_scale)                                         \
    void name(const void *w, const float *scale_in, const float *x, size_t nb, size_t cols,    \
              size_t r0, size_t r1, float *y, size_t ldy)                                      \
    {                                                                                          \
        const float *scale = has_scale ? scale_in : NULL;                                      \
        switch (nb) {                                                                          \
        case 1: ROWS_NB(load, elem, 1) break;                                                  \
        case 2: ROWS_NB(load, elem, 2) break;                                                  \
        case 3: ROWS_NB(load, elem, 3) break;                                                  \
        case 4: ROWS_NB(load, elem, 4) break;                                                  \
        case 5: ROWS_NB(load, elem, 5) break;                                                  \
        case 6: ROWS_NB(load, elem, 6) break;                                                  \
        case 7: ROWS_NB(load, elem, 7) break;                                                  \
        default: ROWS_NB(load, elem, LM_DENSE_BATCH_BLOCK) break;                              \
        }                                                                                      \
    }

DENSE_ROWS_AVX512(lm_dense_rows_f32_avx512, load_f32, float, 0)
DENSE_ROWS_AVX512(lm_dense_rows_bf16_avx512, load_bf16, uint16_t, 0)
DENSE_ROWS_AVX512(lm_dense_rows_int8_avx512, load_int8, int8_t, 1)

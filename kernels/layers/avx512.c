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

/* bytes ahead in each row that the batched loop (rows_dot) prefetches: without it the
 * hardware prefetcher leaves the FMAs and the DRAM reads one after the other (14336 x 4096
 * bf16 at batch 8, 1 thread: 8 -> 9.5 GB/s, f32 9.6-11.8 -> 11.3-12; int8, bound by its
 * widening, gains nothing; 256-768 bytes measure alike) */
#ifndef PF_ROWS
#define PF_ROWS 512
#endif
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
        for (size_t i = 0; i < nr; i++) {
            if (esize > 1 && (c * esize) % 64 == 0) /* once per line; int8 gains nothing */
                _mm_prefetch(row + i * cols * esize + c * esize + PF_ROWS, _MM_HINT_T0);
            wv[i] = load(row + i * cols * esize, c, live);
        }
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

/* bf16 at batch 2-8; batch 1 is lm_dense_rows_bf16_avx512's own loop below (internal
 * linkage from this declaration) */
static lm_dense_rows_fn dense_rows_bf16_batched;

DENSE_ROWS_AVX512(lm_dense_rows_f32_avx512, load_f32, float, 0)
DENSE_ROWS_AVX512(dense_rows_bf16_batched, load_bf16, uint16_t, 0)
DENSE_ROWS_AVX512(lm_dense_rows_int8_avx512, load_int8, int8_t, 1)

/* bf16 at batch 1, where the widening is the work per weight: 32 weights are one 64-byte
 * load v; as float32, the even ones (2i) are v << 16 and the odd ones (2i + 1) are v with
 * the low halves cleared, two single-cycle ops and no shuffle. x is laid out to match once
 * per call: block j of 32 columns becomes xp[32 j .. +16) = x[32 j + 2i] and
 * xp[32 j + 16 .. +16) = x[32 j + 2i + 1]. Columns are taken in chunks of BF16_XCHUNK so
 * that xp lives on the stack (64 KiB; every preset's rows are one chunk); rows go two at a
 * time (bf16_rows2_split); the columns past the last whole block of 32 go the widening
 * way (load_bf16). */
enum { BF16_XCHUNK = 16384 };
#ifndef PF_AHEAD
#define PF_AHEAD 1024
#endif

static void bf16_split_x(const float *x, size_t n, float *xp)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (size_t c = 0; c < n; c += 32) {
        const __m512 a = _mm512_loadu_ps(x + c), b = _mm512_loadu_ps(x + c + 16);
        _mm512_storeu_ps(xp + c, _mm512_permutex2var_ps(a, even, b));
        _mm512_storeu_ps(xp + c + 16, _mm512_permutex2var_ps(a, odd, b));
    }
}

/* sum over columns [0, n) of one row (n a multiple of 32) against the split x */
static inline float bf16_row_split(const uint16_t *row, const float *xp, size_t n)
{
    const __m512i high = _mm512_set1_epi32((int)0xFFFF0000u);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    size_t c = 0;
    for (; c + 64 <= n; c += 64) {
        _mm_prefetch((const char *)(row + c) + PF_AHEAD, _MM_HINT_T0);
        _mm_prefetch((const char *)(row + c) + PF_AHEAD + 64, _MM_HINT_T0);
        const __m512i v0 = _mm512_loadu_si512(row + c), v1 = _mm512_loadu_si512(row + c + 32);
        a0 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v0, 16)),
                             _mm512_loadu_ps(xp + c), a0);
        a1 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(v0, high)),
                             _mm512_loadu_ps(xp + c + 16), a1);
        a2 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v1, 16)),
                             _mm512_loadu_ps(xp + c + 32), a2);
        a3 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(v1, high)),
                             _mm512_loadu_ps(xp + c + 48), a3);
    }
    if (c < n) {
        const __m512i v0 = _mm512_loadu_si512(row + c);
        a0 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v0, 16)),
                             _mm512_loadu_ps(xp + c), a0);
        a1 = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(v0, high)),
                             _mm512_loadu_ps(xp + c + 16), a1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

/* One block of 32 columns of a row into its even and odd sums. */
#define BF16_BLOCK(v, xe, xo, ae, ao)                                                          \
    do {                                                                                       \
        ae = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), xe, ae);           \
        ao = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(v, high)), xo, ao);          \
    } while (0)

/* Two rows over columns [0, n) (n a multiple of 32): each load of the split x serves both
 * rows, halving x's traffic, which at long rows (x past L1) competes with the weights'. */
static inline void bf16_rows2_split(const uint16_t *ra, const uint16_t *rb, const float *xp,
                                    size_t n, float *sa, float *sb)
{
    const __m512i high = _mm512_set1_epi32((int)0xFFFF0000u);
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m512 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    size_t c = 0;
    for (; c + 64 <= n; c += 64) {
        _mm_prefetch((const char *)(ra + c) + PF_AHEAD, _MM_HINT_T0);
        _mm_prefetch((const char *)(ra + c) + PF_AHEAD + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)(rb + c) + PF_AHEAD, _MM_HINT_T0);
        _mm_prefetch((const char *)(rb + c) + PF_AHEAD + 64, _MM_HINT_T0);
        const __m512 x0 = _mm512_loadu_ps(xp + c), x1 = _mm512_loadu_ps(xp + c + 16);
        const __m512 x2 = _mm512_loadu_ps(xp + c + 32), x3 = _mm512_loadu_ps(xp + c + 48);
        const __m512i va0 = _mm512_loadu_si512(ra + c), va1 = _mm512_loadu_si512(ra + c + 32);
        const __m512i vb0 = _mm512_loadu_si512(rb + c), vb1 = _mm512_loadu_si512(rb + c + 32);
        BF16_BLOCK(va0, x0, x1, a0, a1);
        BF16_BLOCK(vb0, x0, x1, b0, b1);
        BF16_BLOCK(va1, x2, x3, a2, a3);
        BF16_BLOCK(vb1, x2, x3, b2, b3);
    }
    if (c < n) {
        const __m512 x0 = _mm512_loadu_ps(xp + c), x1 = _mm512_loadu_ps(xp + c + 16);
        const __m512i va0 = _mm512_loadu_si512(ra + c), vb0 = _mm512_loadu_si512(rb + c);
        BF16_BLOCK(va0, x0, x1, a0, a1);
        BF16_BLOCK(vb0, x0, x1, b0, b1);
    }
    *sa = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    *sb = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(b0, b1), _mm512_add_ps(b2, b3)));
}

/* sum over the tail columns [c0, cols) (fewer than 32) of one row, unsplit x */
static inline float bf16_row_tail(const uint16_t *row, const float *x, size_t c0, size_t cols)
{
    __m512 a = _mm512_setzero_ps();
    for (size_t c = c0; c < cols; c += 16) {
        __mmask16 live = cols - c >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (cols - c)) - 1u);
        a = _mm512_fmadd_ps(load_bf16(row, c, live), _mm512_maskz_loadu_ps(live, x + c), a);
    }
    return _mm512_reduce_add_ps(a);
}

static void bf16_rows_one(const uint16_t *w, const float *x, size_t cols, size_t r0,
                          size_t r1, float *y)
{
    float xp[BF16_XCHUNK];
    const size_t whole = cols / 32 * 32;
    for (size_t c0 = 0; c0 < whole; c0 += BF16_XCHUNK) {
        const size_t n = whole - c0 < BF16_XCHUNK ? whole - c0 : BF16_XCHUNK;
        bf16_split_x(x + c0, n, xp);
        size_t r = r0;
        for (; r + 2 <= r1; r += 2) {
            float sa, sb;
            bf16_rows2_split(w + r * cols + c0, w + (r + 1) * cols + c0, xp, n, &sa, &sb);
            y[r] = c0 == 0 ? sa : y[r] + sa;
            y[r + 1] = c0 == 0 ? sb : y[r + 1] + sb;
        }
        for (; r < r1; r++) {
            const float s = bf16_row_split(w + r * cols + c0, xp, n);
            y[r] = c0 == 0 ? s : y[r] + s;
        }
    }
    if (whole < cols)
        for (size_t r = r0; r < r1; r++) {
            const float s = bf16_row_tail(w + r * cols, x, whole, cols);
            y[r] = whole == 0 ? s : y[r] + s;
        }
}

void lm_dense_rows_bf16_avx512(const void *w, const float *scale, const float *x, size_t nb,
                               size_t cols, size_t r0, size_t r1, float *y, size_t ldy)
{
    if (nb == 1)
        bf16_rows_one((const uint16_t *)w, x, cols, r0, r1, y);
    else
        dense_rows_bf16_batched(w, scale, x, nb, cols, r0, r1, y, ldy);
}

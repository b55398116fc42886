/* bf16 dense kernel on AVX512-BF16, batch 2-8: the activations x {nb, cols} are rounded to
 * bf16 (round to nearest even) once per call, and each 64-byte load of 32 weights meets
 * them in one VDPBF16PS per sequence (two products per float32 lane, summed in float32),
 * as oneDNN's bf16 matmul does. The float32 way (avx512.c) widens every weight and spends
 * one FMA per 16 products, which caps batch 8 at 22 GB/s of weights on one core hot in
 * cache; this one halves the work per weight. The price is x's rounding (2^-9 relative per
 * element; layers.h gives the bound). Batch 1 stays avx512.c's float32 loop: it is bound by
 * memory there, and the rounding would buy nothing.
 *
 * Three rows at a time, so each x load serves three rows; 3 x 8 sums + 3 weights + x fit
 * the 32 registers. The rounded x lives on the stack, in chunks of at most DP_XCHUNK
 * columns (256 KiB at batch 8; every preset's rows are one chunk, as in avx512.c: a second
 * chunk, a second pass over the rows in shorter runs, cost 10 % at 14336 columns); past a
 * chunk's last whole block of 32, masked weights meet zero-padded x. */
#if !defined(__AVX512BF16__) || !defined(__AVX512BW__)
#error "kernels/layers/avx512bf16.c needs -mavx512bf16 -mavx512bw"
#endif
#include "layers.h"

#include <immintrin.h>

/* loops over the constant batch and row extents, unrolled so the sums live in registers */
#define UNROLL _Pragma("GCC unroll 8")

enum { DP_XCHUNK = 16384, DP_ROWS = 3 };
/* bytes ahead in each row prefetched once per line, as avx512.c's PF_ROWS */
#ifndef DP_PF_AHEAD
#define DP_PF_AHEAD 512
#endif

/* xb[b][0 .. n32) = bf16(x[b, c0 .. c0 + n)), zeros from n to n32 (n rounded up to 32). */
static void round_x(const float *x, size_t nb, size_t cols, size_t c0, size_t n,
                    uint16_t xb[][DP_XCHUNK])
{
    for (size_t b = 0; b < nb; b++) {
        const float *xr = x + b * cols + c0;
        for (size_t c = 0; c < n; c += 32) {
            const size_t lo = n - c >= 16 ? 16 : n - c, hi = n - c >= 32 ? 16 : n - c - lo;
            const __mmask16 mlo = (__mmask16)((1u << lo) - 1u);
            const __mmask16 mhi = (__mmask16)((1u << hi) - 1u);
            const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(mhi, xr + c + 16),
                                                   _mm512_maskz_loadu_ps(mlo, xr + c));
            _mm512_storeu_si512((void *)(xb[b] + c), (__m512i)v);
        }
    }
}

/* Rows r .. r + nr - 1 over columns [c0, c0 + n) against the rounded xb, nr and nb
 * constants after inlining; y is set by the first chunk and added to by the others. */
static inline __attribute__((always_inline)) void
rows_dp(const uint16_t *w, size_t cols, size_t c0, size_t n, uint16_t xb[][DP_XCHUNK],
        size_t nb, size_t nr, size_t r, bool first, float *y, size_t ldy)
{
    __m512 a[DP_ROWS][LM_DENSE_BATCH_BLOCK];
    UNROLL
    for (size_t i = 0; i < nr; i++)
        UNROLL
        for (size_t b = 0; b < nb; b++)
            a[i][b] = _mm512_setzero_ps();
    const uint16_t *row = w + r * cols + c0;
    for (size_t c = 0; c < n; c += 32) {
        const __mmask32 live = n - c >= 32 ? ~(__mmask32)0 : (__mmask32)((1u << (n - c)) - 1u);
        __m512bh wv[DP_ROWS];
        UNROLL
        for (size_t i = 0; i < nr; i++) {
            _mm_prefetch((const char *)(row + i * cols + c) + DP_PF_AHEAD, _MM_HINT_T0);
            wv[i] = (__m512bh)_mm512_maskz_loadu_epi16(live, row + i * cols + c);
        }
        UNROLL
        for (size_t b = 0; b < nb; b++) { /* a[i][b] += w[r + i, c..c+32) . x[b, c..c+32) */
            const __m512bh xv = (__m512bh)_mm512_loadu_si512((const void *)(xb[b] + c));
            UNROLL
            for (size_t i = 0; i < nr; i++)
                a[i][b] = _mm512_dpbf16_ps(a[i][b], wv[i], xv);
        }
    }
    UNROLL
    for (size_t i = 0; i < nr; i++)
        UNROLL
        for (size_t b = 0; b < nb; b++) {
            const float s = _mm512_reduce_add_ps(a[i][b]);
            y[b * ldy + r + i] = first ? s : y[b * ldy + r + i] + s;
        }
}

/* rows [r0, r1) of one chunk with nb fixed at compile time by the switch below */
#define ROWS_DP_NB(NB)                                                                         \
    do {                                                                                       \
        size_t r = r0;                                                                         \
        for (; r + DP_ROWS <= r1; r += DP_ROWS)                                                \
            rows_dp(w, cols, c0, n, xb, NB, DP_ROWS, r, c0 == 0, y, ldy);                      \
        for (; r < r1; r++)                                                                    \
            rows_dp(w, cols, c0, n, xb, NB, 1, r, c0 == 0, y, ldy);                            \
    } while (0)

static void bf16_rows_dp(const uint16_t *w, const float *x, size_t nb, size_t cols, size_t r0,
                         size_t r1, float *y, size_t ldy)
{
    uint16_t xb[LM_DENSE_BATCH_BLOCK][DP_XCHUNK];
    /* the fewest chunks, of even widths (whole blocks of 32): each chunk is one more pass
     * over the rows in runs of its width, which the hardware prefetcher restarts */
    const size_t chunks = (cols + DP_XCHUNK - 1) / DP_XCHUNK;
    const size_t width = ((cols + chunks - 1) / chunks + 31) / 32 * 32;
    for (size_t c0 = 0; c0 < cols; c0 += width) {
        const size_t n = cols - c0 < width ? cols - c0 : width;
        round_x(x, nb, cols, c0, n, xb);
        switch (nb) {
        case 2: ROWS_DP_NB(2); break;
        case 3: ROWS_DP_NB(3); break;
        case 4: ROWS_DP_NB(4); break;
        case 5: ROWS_DP_NB(5); break;
        case 6: ROWS_DP_NB(6); break;
        case 7: ROWS_DP_NB(7); break;
        default: ROWS_DP_NB(LM_DENSE_BATCH_BLOCK); break;
        }
    }
}

void lm_dense_rows_bf16_avx512bf16(const void *w, const float *scale, const float *x,
                                   size_t nb, size_t cols, size_t r0, size_t r1, float *y,
                                   size_t ldy)
{
    if (nb == 1)
        lm_dense_rows_bf16_avx512(w, scale, x, nb, cols, r0, r1, y, ldy);
    else
        bf16_rows_dp((const uint16_t *)w, x, nb, cols, r0, r1, y, ldy);
}

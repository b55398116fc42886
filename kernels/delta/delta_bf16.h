/* The chunked delta rule's state products on AVX512-BF16 dot products (VDPBF16PS: float32
 * lane i += a[2i] b[2i] + a[2i+1] b[2i+1], with exact products of bfloat16). Included by
 * delta_body.h in the file that defines DELTA_BF16_DOT (avx512bf16.c), after the AVX-512
 * mapping layer.
 *
 * Each operand is laid out in pairs along the summed index (one 32-bit word per pair):
 *   W += diag(-beta gamma / ||k||) K S_0 and Y = diag(gamma) Q S_0 sum over the key index
 *     c: the raw bfloat16 rows of k and q (pairs (c, c + 1) side by side as stored, exact
 *     inputs: the key's normalization is the row scale) broadcast one word per row; S_0 as
 *     sp {dk / 2, dv} words (St[2 c2, j], St[2 c2 + 1, j]), rounded to bfloat16;
 *   S_C = gamma_{n-1} S_0 + K^T diag(G_end / ||k||) U sums over the chunk's tokens t: kp
 *     {dk, ldn / 2} words (k[2 t2, c], k[2 t2 + 1, c]) of the raw keys, and up {ldn / 2, dv}
 *     words of the corrections scaled by G_end,t / ||k_t||, rounded to bfloat16; an odd
 *     last token pairs with zeros.
 * The state St itself stays float32 (the bfloat16 copy sp is an operand only), and so do
 * the scores, the triangular solve U = T W and Y += qk U. Error bound: docs/kernels.md
 * ("bf16", the delta rule). Needs d_key and d_value multiples of 16 (chunked_run falls back
 * to the float32 products on the widened rows otherwise). */
#ifndef __AVX512BF16__
#error "delta_bf16.h needs -mavx512bf16"
#endif

#include <immintrin.h>

/* 32 bfloat16 = the words (lo[i], hi[i]), i < 16, rounded to nearest even. */
static inline __m512i bf16_pair_words(__m512 lo, __m512 hi)
{
    static const uint16_t order[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                       8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    const __m512i both = (__m512i)_mm512_cvtne2ps_pbh(hi, lo); /* [lo 0..15 | hi 0..15] */
    return _mm512_permutexvar_epi16(_mm512_loadu_si512(order), both);
}

/* dst {ceil(rows / 2), 2 n} halves: word (t2, j) = (s_{2 t2} src[2 t2, j],
 * s_{2 t2 + 1} src[2 t2 + 1, j]); src {rows, n} (row stride n, n a multiple of 16), scale
 * {rows} or NULL (1); a missing odd row is zero. */
static void pack_row_pairs(const float *src, size_t rows, size_t n, const float *scale,
                           uint16_t *dst)
{
    for (size_t t2 = 0; 2 * t2 < rows; t2++) {
        const size_t t = 2 * t2;
        const bool odd = t + 1 < rows;
        const __m512 s0 = _mm512_set1_ps(scale != NULL ? scale[t] : 1.0f);
        const __m512 s1 = _mm512_set1_ps(odd ? (scale != NULL ? scale[t + 1] : 1.0f) : 0.0f);
        const float *hi_row = odd ? src + (t + 1) * n : src + t * n; /* scaled by 0 if none */
        for (size_t j = 0; j < n; j += 16) {
            const __m512 lo = _mm512_mul_ps(_mm512_loadu_ps(src + t * n + j), s0);
            const __m512 hi = _mm512_mul_ps(_mm512_loadu_ps(hi_row + j), s1);
            _mm512_storeu_si512(dst + t2 * 2 * n + 2 * j, bf16_pair_words(lo, hi));
        }
    }
}

/* One tile: C[r, 0:16 nv] = keep C[r, ...] + scale_r sum_{p < kw} A_r[word p] . B[p, ...]
 * for r < mr <= 4, nv <= 4: A rows at A + r lda (halves), word p at halves 2p, 2p + 1; B
 * {kw, 2 ldc'} halves with row stride ldb halves. keep 0 never reads C. */
static inline __attribute__((always_inline)) void
dp_tile(size_t mr, size_t nv, size_t kw, const uint16_t *A, size_t lda, const uint16_t *B,
        size_t ldb, float *C, size_t ldc, const float *scale, float keep)
{
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (size_t r = 0; r < mr; r++)
#pragma GCC unroll 4
        for (size_t v = 0; v < nv; v++)
            acc[r][v] = _mm512_setzero_ps();
    for (size_t p = 0; p < kw; p++) {
        __m512i bv[4];
#pragma GCC unroll 4
        for (size_t v = 0; v < nv; v++)
            bv[v] = _mm512_loadu_si512(B + p * ldb + 32 * v);
#pragma GCC unroll 4
        for (size_t r = 0; r < mr; r++) {
            uint32_t word; /* (A[r, 2p], A[r, 2p + 1]) */
            memcpy(&word, A + r * lda + 2 * p, sizeof word);
            const __m512i a = _mm512_set1_epi32((int)word);
#pragma GCC unroll 4
            for (size_t v = 0; v < nv; v++) /* acc += A[r, 2p] B[2p, :] + A[r, 2p+1] B[2p+1, :] */
                acc[r][v] = _mm512_dpbf16_ps(acc[r][v], (__m512bh)a, (__m512bh)bv[v]);
        }
    }
    const __m512 kv = _mm512_set1_ps(keep);
#pragma GCC unroll 4
    for (size_t r = 0; r < mr; r++) {
        const __m512 s = _mm512_set1_ps(scale != NULL ? scale[r] : 1.0f);
        float *c = C + r * ldc;
#pragma GCC unroll 4
        for (size_t v = 0; v < nv; v++) {
            const __m512 x = scale != NULL ? _mm512_mul_ps(acc[r][v], s) : acc[r][v];
            _mm512_storeu_ps(c + 16 * v, keep != 0.0f
                                             ? _mm512_fmadd_ps(_mm512_loadu_ps(c + 16 * v), kv, x)
                                             : x);
        }
    }
}

#define DP_ARGS                                                                               \
    size_t kw, const uint16_t *A, size_t lda, const uint16_t *B, size_t ldb, float *C,        \
        size_t ldc, const float *scale, float keep
#define DP_FIXED(MR, NV)                                                                      \
    static void dp_tile_##MR##x##NV(DP_ARGS)                                                  \
    {                                                                                         \
        dp_tile(MR, NV, kw, A, lda, B, ldb, C, ldc, scale, keep);                            \
    }
#define DP_ROW(MR) DP_FIXED(MR, 1) DP_FIXED(MR, 2) DP_FIXED(MR, 3) DP_FIXED(MR, 4)
DP_ROW(1) DP_ROW(2) DP_ROW(3) DP_ROW(4)

typedef void (*dp_tile_fn)(DP_ARGS);
#define DP_ENTRY(MR) {dp_tile_##MR##x1, dp_tile_##MR##x2, dp_tile_##MR##x3, dp_tile_##MR##x4}
static const dp_tile_fn dp_tiles[4][4] = {DP_ENTRY(1), DP_ENTRY(2), DP_ENTRY(3), DP_ENTRY(4)};

/* One left operand and output of a pair product: C {m, n} = keep C + diag(scale) A B, A
 * {m, 2 kw} halves (row stride lda), C row stride ldc, scale {m} or NULL. */
typedef struct dp_operand {
    size_t m;
    const uint16_t *A;
    size_t lda;
    float *C;
    size_t ldc;
    const float *scale;
    float keep;
} dp_operand;

/* The products of `count` operands with one B {kw, n} of words (row stride 2 n halves, n a
 * multiple of 16): column panels of 4 vectors outside (read from L1 by every row block),
 * row blocks of 4 inside. */
static void dp_sets(size_t n, size_t kw, const uint16_t *B, const dp_operand *ops, size_t count,
                    prefetcher *pf)
{
    const size_t nvec = n / 16;
    for (size_t j0 = 0; j0 < nvec; j0 += 4) {
        const size_t nv = nvec - j0 < 4 ? nvec - j0 : 4;
        for (size_t o = 0; o < count; o++) {
            const dp_operand *x = &ops[o];
            for (size_t r0 = 0; r0 < x->m; r0 += 4) {
                const size_t mr = x->m - r0 < 4 ? x->m - r0 : 4;
                pf_step(pf, PF_LINES);
                dp_tiles[mr - 1][nv - 1](kw, x->A + r0 * x->lda, x->lda, B + 32 * j0, 2 * n,
                                         x->C + r0 * x->ldc + 16 * j0, x->ldc,
                                         x->scale != NULL ? x->scale + r0 : NULL, x->keep);
            }
        }
    }
}

/* W {n, dv} += diag(nbg / ||k||) K S_0 and Y {n, dv} = diag(gamma) Q S_0 from the chunk's
 * bfloat16 rows k16, q16 {n, dk} and S_0 = x->St rounded to bfloat16 pairs. */
static void dot_state_products(const uint16_t *k16, const uint16_t *q16, size_t n, size_t dk,
                               size_t dv, const chunk_ws *x, float *w, float *y, prefetcher *pf)
{
    pack_row_pairs(x->St, dk, dv, NULL, x->sp);
    for (size_t t = 0; t < n; t++)
        x->nbg[t] *= x->rk[t]; /* -beta gamma / ||k|| */
    const dp_operand states[2] = {{n, k16, dk, w, dv, x->nbg, 1.0f},
                                  {n, q16, dk, y, dv, x->gam, 0.0f}};
    dp_sets(dv, dk / 2, x->sp, states, 2, pf);
}

/* St {dk, dv} = gamma_{n-1} St + K^T diag(G_end / ||k||) U over the chunk's n tokens:
 * kp the raw keys k16 {n, dk} as token pairs, up the scaled corrections x->u {n, dv}. */
static void dot_state_update(const uint16_t *k16, size_t n, size_t dk, size_t dv, size_t ldn,
                             bool gated, const chunk_ws *x, prefetcher *pf)
{
    const size_t n2 = (n + 1) / 2;
    for (size_t c = 0; c < dk; c++) { /* kp[c, t] = k[t, c]; zero for t >= n */
        uint16_t *row = x->kp + c * ldn;
        for (size_t t = 0; t < 2 * n2; t++)
            row[t] = t < n ? k16[t * dk + c] : 0;
    }
    for (size_t t = 0; t < n; t++) /* the scales G_end,t / ||k_t||, in rk */
        x->rk[t] = gated ? x->gend[t] * x->rk[t] : x->rk[t];
    pack_row_pairs(x->u, n, dv, x->rk, x->up);
    const dp_operand update = {dk, x->kp, ldn, x->St, dv, NULL, x->gam[n - 1]};
    dp_sets(dv, n2, x->up, &update, 1, pf);
}

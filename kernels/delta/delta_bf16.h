/* The chunked delta rule's products on AVX512-BF16 dot products (VDPBF16PS: float32 lane
 * i += a[2i] b[2i] + a[2i+1] b[2i+1], with exact products of bfloat16). Included by
 * delta_body.h in the file that defines DELTA_BF16_DOT (avx512bf16.c), after the AVX-512
 * mapping layer.
 *
 * Each operand is laid out in pairs along the summed index (one 32-bit word per pair, the
 * left operand's word broadcast per row):
 *   kk = K^ K^T and qk = Q K^T sum over c: the raw bfloat16 rows of k and q as stored
 *     against the keys as pairs along c {dk / 2, ldn}; exact products, the normalizations
 *     1/||k|| float32 scales after, so the scores carry no bfloat16 rounding;
 *   W += diag(-beta gamma / ||k||) K S_0 and Y = diag(gamma) Q S_0 sum over c: the raw rows
 *     again against S_0 as sp {dk / 2, dv} words (St[2 c2, j], St[2 c2 + 1, j]), rounded;
 *   Y += qk U sums over tokens i: qk rounded to bfloat16 (its rows in order are the pairs),
 *     U rounded to token pairs {ldn / 2, dv};
 *   S_C = gamma_{n-1} S_0 + K^T diag(G_end / ||k||) U sums over tokens t: the raw keys as
 *     token pairs {ldn / 2, dk} words (k[2 t2, c], k[2 t2 + 1, c]), read transposed, against
 *     the corrections scaled by G_end,t / ||k_t|| and rounded; an odd last token pairs with
 *     zeros.
 * The state St itself stays float32 (sp is an operand copy), and so do the decay masks and
 * the triangular solve (T and U = T W): the solve's input and output in float32 keep T's
 * conditioning out of the bound. Needs d_key and d_value multiples of 16 (chunked_run falls
 * back to the float32 products on the widened rows otherwise).
 *
 * Error bound above the float32 kernel's (docs/kernels.md, "bf16" of the delta rule), with
 * b = 2^-8 (one rounding to bfloat16) and Sa the absolute-value recurrence of the
 * tolerance, whose homogeneous part P(X) = g X (I + beta |k^||k^|^T) majorizes how a state
 * difference moves through a token (|g D (I - beta k^ k^T)| <= P(|D|)), so an error
 * |E| <= e Sa stays <= e Sa later. Per chunk: (1) K S_0 and Q S_0 read S_0' = bf16(S_0)
 * against exact k and q, so W, U and Y are exactly the chunk run from S_0': y errs by
 * <= b P(|S_0|)|q| <= b Sa|q|, the state by b Sa plus b gamma |S_0| <= b Sa for the carry
 * of the unrounded S_0; (2) the update rounds each G u_t / ||k_t|| once: <= b Sa, since
 * Sa_t >= g_t Sa_{t-1} + |u_t||k^_t|^T; (3) qk U rounds both factors, an error of y alone
 * <= (2b + b^2) Sa|q|. So the state gains <= 3 b Sa per chunk, the shares add, and every
 * output errs by <= e (1 + e) of its scale, e = 3 b ceil(L / C) (the 1 + e: rounding a
 * state that already carries e). */
#ifndef __AVX512BF16__
#error "delta_bf16.h needs -mavx512bf16"
#endif

#include "../simd/avx512bf16.h"

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
            _mm512_storeu_si512(dst + t2 * 2 * n + 2 * j, bf16_pair_ps(lo, hi));
        }
    }
}

/* One tile: C[r, 0:16 nv] = keep C[r, ...] + scale_r sum_{p < kw} A[r, word p] . B[p, ...]
 * for r < mr <= 4, nv <= 4: word (r, p) of A at halves A + r lda + p acs (two halves); B
 * {kw, 16 nv} words with row stride ldb halves. keep 0 never reads C. */
static inline __attribute__((always_inline)) void
dp_tile(size_t mr, size_t nv, size_t kw, const uint16_t *A, size_t lda, size_t acs,
        const uint16_t *B, size_t ldb, float *C, size_t ldc, const float *scale, float keep)
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
            memcpy(&word, A + r * lda + p * acs, sizeof word);
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
    size_t kw, const uint16_t *A, size_t lda, size_t acs, const uint16_t *B, size_t ldb,      \
        float *C, size_t ldc, const float *scale, float keep
#define DP_FIXED(MR, NV)                                                                      \
    static void dp_tile_##MR##x##NV(DP_ARGS)                                                  \
    {                                                                                         \
        dp_tile(MR, NV, kw, A, lda, acs, B, ldb, C, ldc, scale, keep);                       \
    }
#define DP_ROW(MR) DP_FIXED(MR, 1) DP_FIXED(MR, 2) DP_FIXED(MR, 3) DP_FIXED(MR, 4)
DP_ROW(1) DP_ROW(2) DP_ROW(3) DP_ROW(4)

typedef void (*dp_tile_fn)(DP_ARGS);
#define DP_ENTRY(MR) {dp_tile_##MR##x1, dp_tile_##MR##x2, dp_tile_##MR##x3, dp_tile_##MR##x4}
static const dp_tile_fn dp_tiles[4][4] = {DP_ENTRY(1), DP_ENTRY(2), DP_ENTRY(3), DP_ENTRY(4)};

/* One left operand and output of a pair product: C {m, n} = keep C + diag(scale) A B, A
 * {m, kw} words (word (r, p) at halves r lda + p acs), C row stride ldc, scale {m} or NULL. */
typedef struct dp_operand {
    size_t m;
    const uint16_t *A;
    size_t lda, acs;
    float *C;
    size_t ldc;
    const float *scale;
    float keep;
} dp_operand;

/* The products of `count` operands with one B {kw, n} of words (row stride ldb halves, n
 * a multiple of 16): column panels of 4 vectors outside (read from L1 by every row block),
 * row blocks of 4 inside. Shapes as mm_sets': SHAPE_TRIL_A reads the words of A up to the
 * row block's diagonal only (A lower-triangular over token pairs), SHAPE_LOWER_C skips the
 * column vectors past it (entries above the diagonal are left unspecified). */
static void dp_sets(shape sh, size_t n, size_t kw, const uint16_t *B, size_t ldb,
                    const dp_operand *ops, size_t count, prefetcher *pf)
{
    const size_t nvec = n / 16;
    for (size_t j0 = 0; j0 < nvec; j0 += 4) {
        const size_t nv = nvec - j0 < 4 ? nvec - j0 : 4;
        for (size_t o = 0; o < count; o++) {
            const dp_operand *x = &ops[o];
            for (size_t r0 = 0; r0 < x->m; r0 += 4) {
                const size_t mr = x->m - r0 < 4 ? x->m - r0 : 4;
                size_t k = kw, v = nv;
                if (sh == SHAPE_TRIL_A) /* words holding columns 0 .. r0 + mr - 1 */
                    k = (r0 + mr + 1) / 2 < kw ? (r0 + mr + 1) / 2 : kw;
                if (sh == SHAPE_LOWER_C) {
                    const size_t need = (r0 + mr + 15) / 16; /* vectors to the diagonal */
                    if (need <= j0)
                        continue;
                    v = need - j0 < nv ? need - j0 : nv;
                }
                pf_step(pf, PF_LINES);
                dp_tiles[mr - 1][v - 1](k, x->A + r0 * x->lda, x->lda, x->acs, B + 32 * j0, ldb,
                                        x->C + r0 * x->ldc + 16 * j0, x->ldc,
                                        x->scale != NULL ? x->scale + r0 : NULL, x->keep);
            }
        }
    }
}

/* kk {n, ldn} = diag(1/||k||) K K^T diag(1/||k||) and qk = Q K^T diag(1/||k||), the lower
 * parts (SHAPE_LOWER_C), from the raw bfloat16 rows k16, q16 {n, dk}: products of bfloat16
 * are exact, so these are the float32 scores up to the order of the float32 sums. B = the
 * keys as pairs along d_key {dk / 2, ldn} words (x->kp), zero for the padded tokens; the
 * column scale 1/||k_i|| (0 past n, x->rk) after. */
static void dot_scores(const uint16_t *k16, const uint16_t *q16, size_t n, size_t dk,
                       size_t ldn, const chunk_ws *x, float *kk, float *qk, prefetcher *pf)
{
    /* the widened raw keys transposed into kt {dk, ldn} (zero past n; unit_keys is done
     * with it), then rows 2 c2, 2 c2 + 1 as pairs: exact, the values are bfloat16 */
    transpose(x->kw, dk, n, dk, x->kt, ldn);
    for (size_t c = 0; c < dk && n < ldn; c++)
        memset(x->kt + c * ldn + n, 0, (ldn - n) * sizeof(float));
    pack_row_pairs(x->kt, dk, ldn, NULL, x->kp);
    const size_t nw = (n + 15) / 16 * 16;
    const dp_operand scores[2] = {{n, k16, dk, 2, kk, ldn, x->rk, 0.0f},
                                  {n, q16, dk, 2, qk, ldn, NULL, 0.0f}};
    dp_sets(SHAPE_LOWER_C, nw, dk / 2, x->kp, 2 * ldn, scores, 2, pf);
    for (size_t t = 0; t < n; t++) { /* columns i <= t, whole vectors */
        const size_t w = (t + 16) / 16 * 16;
        for (size_t j = 0; j < w; j += 16) {
            const __m512 r = _mm512_loadu_ps(x->rk + j);
            _mm512_storeu_ps(kk + t * ldn + j, _mm512_mul_ps(_mm512_loadu_ps(kk + t * ldn + j), r));
            _mm512_storeu_ps(qk + t * ldn + j, _mm512_mul_ps(_mm512_loadu_ps(qk + t * ldn + j), r));
        }
    }
}

/* Y {n, dv} += qk U with qk {n, ldn} (lower, zero above the diagonal) and U = x->u {n, dv}
 * both rounded to bfloat16: qk's rows in order are pairs along the token index i, U as
 * token pairs (x->up); SHAPE_TRIL_A. */
static void dot_masked_values(size_t n, size_t dv, size_t ldn, const chunk_ws *x,
                              const float *qk, float *y, prefetcher *pf)
{
    for (size_t t = 0; t < n; t++)
        for (size_t j = 0; j < ldn; j += 16) /* 16 floats -> 16 bfloat16 in order */
            _mm256_storeu_si256((__m256i *)(void *)(x->qk16 + t * ldn + j),
                                (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(qk + t * ldn + j)));
    pack_row_pairs(x->u, n, dv, NULL, x->up);
    const dp_operand masked = {n, x->qk16, ldn, 2, y, dv, NULL, 1.0f};
    dp_sets(SHAPE_TRIL_A, dv, (n + 1) / 2, x->up, 2 * dv, &masked, 1, pf);
}

/* W {n, dv} += diag(nbg / ||k||) K S_0 and Y {n, dv} = diag(gamma) Q S_0 from the chunk's
 * bfloat16 rows k16, q16 {n, dk} and S_0 = x->St rounded to bfloat16 pairs. */
static void dot_state_products(const uint16_t *k16, const uint16_t *q16, size_t n, size_t dk,
                               size_t dv, const chunk_ws *x, float *w, float *y, prefetcher *pf)
{
    pack_row_pairs(x->St, dk, dv, NULL, x->sp);
    for (size_t t = 0; t < n; t++)
        x->nbg[t] *= x->rk[t]; /* -beta gamma / ||k|| */
    const dp_operand states[2] = {{n, k16, dk, 2, w, dv, x->nbg, 1.0f},
                                  {n, q16, dk, 2, y, dv, x->gam, 0.0f}};
    dp_sets(SHAPE_FULL, dv, dk / 2, x->sp, 2 * dv, states, 2, pf);
}

/* St {dk, dv} = gamma_{n-1} St + K^T diag(G_end / ||k||) U over the chunk's n tokens:
 * kp the widened raw keys x->kw {n, dk} as token pairs {n2, dk} words (exact), read as
 * A {dk, n2} (word (c, t2) at halves 2 c + t2 2 dk); up the scaled corrections. */
static void dot_state_update(size_t n, size_t dk, size_t dv, bool gated, const chunk_ws *x,
                             prefetcher *pf)
{
    const size_t n2 = (n + 1) / 2;
    pack_row_pairs(x->kw, n, dk, NULL, x->kp);
    for (size_t t = 0; t < n; t++) /* the scales G_end,t / ||k_t||, in rk */
        x->rk[t] = gated ? x->gend[t] * x->rk[t] : x->rk[t];
    pack_row_pairs(x->u, n, dv, x->rk, x->up);
    const dp_operand update = {dk, x->kp, 2, 2 * dk, x->St, dv, NULL, x->gam[n - 1]};
    dp_sets(SHAPE_FULL, dv, n2, x->up, 2 * dv, &update, 1, pf);
}

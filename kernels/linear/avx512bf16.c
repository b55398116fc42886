/* AVX512-BF16 chunked linear attention (lm_linear_chunked_bf16_avx512bf16): bfloat16 q, k, v,
 * the chunk's four matrix products on VDPBF16PS dot products (each float32 lane adds
 * a[2i] b[2i] + a[2i+1] b[2i+1] of two bfloat16 vectors; products of bfloat16 are exact in
 * float32) with float32 sums. The avx512bf16 path's other linear slots are its parents'.
 *
 * Per chunk of n <= C tokens (linear.h's chunked form), Cp = C rounded up to 16, every
 * operand in pairs of its summed index (one 32-bit word per pair):
 *   scores   A {n, Cp} = phi(q) phi(k)^T, summed over key channels c:
 *            qp {n, dk} bfloat16 rows (pairs (c, c + 1) side by side), one word broadcast;
 *            kp2 {dk / 2, Cp} words (phi(k)[s, 2 c2], phi(k)[s, 2 c2 + 1]), keys s >= n zero;
 *            then, in float32, the scalar gate's decay b_t / b_s and the causal mask;
 *   readout  y {n, dv} = qp S, summed over c: s2 {dk / 2, dv} words of the state rounded;
 *   intra    y += A v, summed over keys s: ap {n, Cp} the decayed, masked scores rounded,
 *            one word broadcast; vp2 {Cp / 2, dv} words (v[2 p, j], v[2 p + 1, j]), an odd
 *            last key paired with a zero row;
 *   carry    S = b_C S + (phi(k) * ratio)^T v, summed over s: kt2 {dk, Cp / 2} words of the
 *            scaled keys rounded, vp2 as above.
 * The state S, the normalizer z and the denominators (from the float32 scores and phi(q))
 * stay float32. Error bound (first order, each bfloat16 rounding relative <= 2^-8: 8
 * significant bits; inputs
 * exact): a score carries the roundings of phi(q) and phi(k) (identity: none) and its own
 * as an operand of the intra product, 3 x 2^-8 of its |terms|; a readout term the rounding
 * of phi(q), of the state operand, and the state's own error, which is at most 2^-8 of its
 * absolute-value recurrence (one rounding of each scaled key it summed); so every term of y
 * and of the numerator and denominator of the normalized form is within 3 x 2^-8 of its
 * absolute value, and s_final within 2^-8: |error| <= 3 x 2^-8 scale + the float32 rule
 * (LM_LINEAR_BF16_RTOL adds 2^-14 for the products of roundings, 3 x 2^-16 + 2^-24). A channel gate, an
 * odd d_key or a d_value not a multiple of 16 widen instead (widen_bf16.h over this ISA's
 * f32 kernel). */
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512BF16__)
#error "kernels/linear/avx512bf16.c needs -mavx512f -mavx512bw -mavx512bf16"
#endif
#include "linear.h"

#include "../simd/avx512.h"
#include "../simd/avx512bf16.h"
#include "../simd/fast_exp.h"

#include <immintrin.h>

/* This ISA's f32 kernel, local to the file: the fallback, and the body's helpers (masks,
 * decays, exponentials) for the bfloat16 kernel. */
static void lin_f32_recurrent(const lm_linear_f32 *p, size_t h, size_t chunk, float *work)
    __attribute__((unused));
static void lin_f32_chunked(const lm_linear_f32 *p, size_t h, size_t chunk, float *work);
#define RECURRENT_NAME lin_f32_recurrent
#define CHUNKED_NAME lin_f32_chunked
#include "linear_body.h"
#include "widen_bf16.h"

/* ---- bfloat16 rows (the pair primitives are simd/avx512bf16.h's) --------------------- */

/* x rounded to bfloat16, to nearest even (finite x). */
static inline uint32_t bf16_bits(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
}

/* y[0:n] = x[0:n] rounded to bfloat16 */
static void round_row(const float *x, uint16_t *y, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(void *)(y + i),
                            (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + i)));
    for (; i < n; i++)
        y[i] = (uint16_t)bf16_bits(x[i]);
}

/* One pass over bfloat16 x[0:n]: f = phi(x) in float32 (elu: elu(x) + 1, its exp the inline
 * one of fast_exp.h on whole vectors, else x itself) and, when r is not NULL, r = phi(x)
 * rounded back to bfloat16. */
static void feature_row(const uint16_t *x, bool elu, float *f, uint16_t *r, size_t n)
{
    const __m512 zero = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = bf16_load_ps(x + i);
        if (elu) /* exp(min(x, 0)) + max(x, 0), the inline exp (2 ulp: far inside the
                  * bfloat16 rounding that follows; docs/kernels.md) */
            v = _mm512_add_ps(V_EXP_FAST_NONPOS(_mm512_min_ps(v, zero)), _mm512_max_ps(v, zero));
        _mm512_storeu_ps(f + i, v);
        if (r != NULL)
            _mm256_storeu_si256((__m256i *)(void *)(r + i), (__m256i)_mm512_cvtneps_pbh(v));
    }
    for (; i < n; i++) {
        const float v = lm_f32_from_bf16(x[i]);
        f[i] = elu ? (v > 0.0f ? v + 1.0f : expf(v)) : v;
        if (r != NULL)
            r[i] = (uint16_t)bf16_bits(f[i]);
    }
}

/* ---- the dot-product micro-kernel -----------------------------------------------------
 * C[r, 16 v + j] = beta C[r, ...] + sum_{p < kk} A(r, p) . B(p, 16 v + j) for r < mr, v < nv:
 * A(r, p) the word at A + r lda + p (two bfloat16 along the summed index, broadcast), B(p, .)
 * the words of row p of B (row stride ldb words). beta 0 does not read C. MR x NV = 4 x 4
 * accumulators + 4 B vectors + 1 broadcast of the 32 registers. */
enum { DP_MR = 4, DP_NV = 4 };

static LM_ALWAYS_INLINE void dp_tile(int mr, int nv, float beta, size_t kk,
                                     const uint16_t *A, size_t lda, const uint32_t *B,
                                     size_t ldb, float *C, size_t ldc)
{
    __m512 acc[DP_MR][DP_NV];
    LM_UNROLL for (int r = 0; r < mr; r++)
        LM_UNROLL for (int v = 0; v < nv; v++)
            acc[r][v] = beta == 0.0f ? _mm512_setzero_ps()
                        : beta == 1.0f
                            ? _mm512_loadu_ps(C + (size_t)r * ldc + (size_t)v * 16)
                            : _mm512_mul_ps(_mm512_set1_ps(beta),
                                            _mm512_loadu_ps(C + (size_t)r * ldc + (size_t)v * 16));
    for (size_t p = 0; p < kk; p++) {
        __m512i b[DP_NV];
        LM_UNROLL for (int v = 0; v < nv; v++)
            b[v] = _mm512_loadu_si512(B + p * ldb + (size_t)v * 16);
        LM_UNROLL for (int r = 0; r < mr; r++) {
            /* A(r, p) = (a[2p], a[2p + 1]) in every lane; acc += a.lo b.lo + a.hi b.hi */
            const __m512i a = bf16_bcast_word(A + (size_t)r * 2 * lda + 2 * p);
            LM_UNROLL for (int v = 0; v < nv; v++)
                acc[r][v] = bf16_dot(acc[r][v], a, b[v]);
        }
    }
    LM_UNROLL for (int r = 0; r < mr; r++)
        LM_UNROLL for (int v = 0; v < nv; v++)
            _mm512_storeu_ps(C + (size_t)r * ldc + (size_t)v * 16, acc[r][v]);
}

#define DP_TILE_FN(MR, NV)                                                                    \
    static void dp_tile_##MR##x##NV(float beta, size_t kk, const uint16_t *A, size_t lda,     \
                                    const uint32_t *B, size_t ldb, float *C, size_t ldc)      \
    {                                                                                         \
        dp_tile(MR, NV, beta, kk, A, lda, B, ldb, C, ldc);                                    \
    }
DP_TILE_FN(4, 1)
DP_TILE_FN(4, 2)
DP_TILE_FN(4, 3)
DP_TILE_FN(4, 4)
DP_TILE_FN(1, 1)
DP_TILE_FN(1, 2)
DP_TILE_FN(1, 3)
DP_TILE_FN(1, 4)

typedef void (*dp_tile_fn)(float beta, size_t kk, const uint16_t *A, size_t lda,
                           const uint32_t *B, size_t ldb, float *C, size_t ldc);

/* rows (4 or 1) x nvec vectors of C, in column blocks of up to 4 vectors; A in words (lda
 * words per row, given as its bfloat16 start). */
static void dp_rows(size_t rows, float beta, size_t nvec, size_t kk, const uint16_t *A,
                    size_t lda, const uint32_t *B, size_t ldb, float *C, size_t ldc)
{
    static const dp_tile_fn tiles[2][DP_NV] = {
        {dp_tile_1x1, dp_tile_1x2, dp_tile_1x3, dp_tile_1x4},
        {dp_tile_4x1, dp_tile_4x2, dp_tile_4x3, dp_tile_4x4}};
    const dp_tile_fn *row = tiles[rows == DP_MR];
    for (size_t v = 0; v < nvec; v += DP_NV) {
        const size_t nv = nvec - v < DP_NV ? nvec - v : DP_NV;
        row[nv - 1](beta, kk, A, lda, B + v * 16, ldb, C + v * 16, ldc);
    }
}

/* C {m, 16 nvec} = beta C + A B, A {m, kk} words, B {kk, 16 nvec} words. */
static void dp_gemm(size_t m, size_t nvec, size_t kk, float beta, const uint16_t *A,
                    size_t lda, const uint32_t *B, size_t ldb, float *C, size_t ldc)
{
    size_t i = 0;
    for (; i + DP_MR <= m; i += DP_MR)
        dp_rows(DP_MR, beta, nvec, kk, A + i * 2 * lda, lda, B, ldb, C + i * ldc, ldc);
    for (; i < m; i++)
        dp_rows(1, beta, nvec, kk, A + i * 2 * lda, lda, B, ldb, C + i * ldc, ldc);
}

/* ---- one chunk ------------------------------------------------------------------------ */

/* The workspace of lm_linear_bf16_pair_floats, carved in its order. */
typedef struct pair_work {
    float *S, *z, *fq, *fk;
    uint16_t *qp, *kb;
    uint32_t *kp2;
    float *A;
    uint16_t *ap;
    uint32_t *s2, *vp2, *kt2;
    float *lg, *seg, *ratio, *bq, *cl, *den;
} pair_work;

static pair_work pair_work_carve(float *work, size_t dk, size_t dv, size_t C)
{
    const size_t cp = round16(C);
    pair_work w;
    float *f = work;
    w.S = f, f += round16(dk * dv);
    w.z = f, f += round16(dk);
    w.fq = f, f += round16(C * dk);
    w.fk = f, f += round16(C * dk);
    w.qp = (uint16_t *)(void *)f, f += round16((C * dk + 1) / 2);
    w.kb = (uint16_t *)(void *)f, f += round16((C * dk + 1) / 2);
    w.kp2 = (uint32_t *)(void *)f, f += round16(dk / 2 * cp);
    w.A = f, f += round16(C * cp);
    w.ap = (uint16_t *)(void *)f, f += round16(C * cp / 2);
    w.s2 = (uint32_t *)(void *)f, f += round16(dk / 2 * dv);
    w.vp2 = (uint32_t *)(void *)f, f += round16(cp / 2 * dv);
    w.kt2 = (uint32_t *)(void *)f, f += round16(dk * cp / 2);
    w.lg = f, f += cp;
    w.seg = f, f += cp;
    w.ratio = f, f += cp;
    w.bq = f, f += cp;
    w.cl = f, f += cp;
    w.den = f;
    return w;
}

/* kp2 {dk / 2, cp} words (phi(k)[s, 2 c2], phi(k)[s, 2 c2 + 1]): the transpose of phi(k)
 * {n, dk} read as words {n, dk / 2} (kb: bfloat16 rows as stored), keys n..cp zero. A word
 * moves as a float32 bit pattern (never NaN: the halves are finite). */
static void pack_keys(const uint16_t *kb, size_t n, size_t dk, size_t cp, uint32_t *kp2)
{
    transpose(n, dk / 2, (const float *)(const void *)kb, dk / 2, (float *)(void *)kp2, cp);
    for (size_t c2 = 0; c2 < dk / 2; c2++)
        memset(kp2 + c2 * cp + n, 0, (cp - n) * sizeof *kp2);
}

/* s2 {dk / 2, dv} words of S {dk, dv} rounded (dv a multiple of 16). */
static void pack_state(const float *S, size_t dk, size_t dv, uint32_t *s2)
{
    for (size_t c2 = 0; c2 < dk / 2; c2++)
        for (size_t j = 0; j < dv; j += 16)
            _mm512_storeu_si512(s2 + c2 * dv + j,
                                bf16_pair_ps(_mm512_loadu_ps(S + 2 * c2 * dv + j),
                                        _mm512_loadu_ps(S + (2 * c2 + 1) * dv + j)));
}

/* vp2 {ceil(n / 2), dv} words of v {n, dv} bfloat16 (an odd last row paired with zeros). */
static void pack_values(const uint16_t *v, size_t n, size_t dv, uint32_t *vp2)
{
    for (size_t p = 0; 2 * p < n; p++) {
        const uint16_t *lo = v + 2 * p * dv, *hi = 2 * p + 1 < n ? lo + dv : NULL;
        for (size_t j = 0; j < dv; j += 16)
            _mm512_storeu_si512(vp2 + p * dv + j, bf16_pair_rows(lo + j, hi != NULL ? hi + j : NULL));
    }
}

/* kt2 {dk, cp / 2} words (kr[2 p, c], kr[2 p + 1, c]) of kr {n, dk} rounded: the pair rows
 * W {ceil(n / 2), dk} words (row p from key rows 2 p and 2 p + 1), then transposed; W lives
 * in scratch (at least ceil(n / 2) dk words). */
static void pack_keys_t(const float *kr, size_t n, size_t dk, size_t cp, uint32_t *scratch,
                        uint32_t *kt2)
{
    const size_t pairs = (n + 1) / 2;
    for (size_t p = 0; p < pairs; p++) {
        const float *lo = kr + 2 * p * dk, *hi = 2 * p + 1 < n ? lo + dk : NULL;
        uint32_t *w = scratch + p * dk;
        size_t c = 0;
        for (; c + 16 <= dk; c += 16)
            _mm512_storeu_si512(w + c, bf16_pair_ps(_mm512_loadu_ps(lo + c),
                                               hi != NULL ? _mm512_loadu_ps(hi + c)
                                                          : _mm512_setzero_ps()));
        for (; c < dk; c++)
            w[c] = bf16_bits(lo[c]) | (hi != NULL ? bf16_bits(hi[c]) << 16 : 0u);
    }
    transpose(pairs, dk, (const float *)(const void *)scratch, dk, (float *)(void *)kt2, cp / 2);
}

/* Scores A {n, cp} = qp kp2 on the lower part (row block [i, i + 4): the key vectors up to
 * min(i + 4, n)), then the decay (scalar gate) and the causal mask in float32, then ap =
 * A rounded on those vectors. */
static void chunk_scores(const pair_work *w, const uint16_t *qp, size_t n, size_t dk,
                         size_t cp, bool scalar_gate)
{
    for (size_t i = 0; i < n; i += DP_MR) {
        const size_t rows = n - i < DP_MR ? n - i : DP_MR;
        const size_t end = i + DP_MR < n ? i + DP_MR : n, nvec = (end + 15) / 16;
        if (rows == DP_MR)
            dp_rows(DP_MR, 0.0f, nvec, dk / 2, qp + i * dk, dk / 2, w->kp2, cp, w->A + i * cp, cp);
        else
            for (size_t t = i; t < n; t++)
                dp_rows(1, 0.0f, nvec, dk / 2, qp + t * dk, dk / 2, w->kp2, cp, w->A + t * cp, cp);
    }
    if (scalar_gate)
        decay_scores(w->A, cp, n, w->lg, w->seg);
    mask_scores(w->A, cp, n);
    for (size_t t = 0; t < n; t++) {
        const size_t i = t / DP_MR * DP_MR, end = i + DP_MR < n ? i + DP_MR : n;
        round_row(w->A + t * cp, w->ap + t * cp, (end + 15) / 16 * 16);
    }
}

/* y {n, dv} += ap vp2 over the causal pairs: row block [i, i + 4) the key pairs below i + 4,
 * a single row t those up to t + 1 (the columns past t there are zero: masked, or keys past
 * n, which score 0). */
static void chunk_intra(const pair_work *w, size_t n, size_t dv, size_t cp, float *y)
{
    size_t i = 0;
    for (; i + DP_MR <= n; i += DP_MR)
        dp_rows(DP_MR, 1.0f, dv / 16, (i + DP_MR) / 2, w->ap + i * cp, cp / 2, w->vp2, dv,
                y + i * dv, dv);
    for (size_t t = i; t < n; t++)
        dp_rows(1, 1.0f, dv / 16, (t + 2) / 2, w->ap + t * cp, cp / 2, w->vp2, dv, y + t * dv, dv);
}

/* The scalar gate of chunk rows [row0, row0 + n): lg_t = log a_t, cl_t = lg_0 + ... + lg_t,
 * ratio_s = b_n / b_s = exp(lg_{s+1} + ... + lg_{n-1}), bq_t = b_t = exp(cl_t). */
static void chunk_gate(const lm_linear_f32 *p, size_t row0, size_t n, const pair_work *w)
{
    float acc = 0.0f;
    for (size_t t = 0; t < n; t++) {
        w->lg[t] = p->gate != NULL ? logf(p->gate[row0 + t]) : p->log_gate[row0 + t];
        w->cl[t] = acc += w->lg[t];
    }
    float d = 0.0f;
    for (size_t t = n; t-- > 0;) {
        w->ratio[t] = d; /* the exponent first, as the f32 body */
        d += w->lg[t];
    }
    exp_row(w->ratio, w->ratio, n);
    exp_row(w->cl, w->bq, n);
}

/* One head on the pair layouts (dk even, dv a multiple of 16, gate none or scalar). */
static void chunked_pairs(const lm_linear_f32 *p, size_t h, size_t chunk, float *work)
{
    const size_t L = p->length, dk = p->d_key, dv = p->d_value;
    const size_t C = chunk < L ? chunk : L, cp = round16(C);
    const bool elu = p->feature != LM_LINEAR_IDENTITY;
    const bool scalar = p->gate_kind == LM_LINEAR_GATE_SCALAR;
    const bool need_z = p->normalize || p->z_final != NULL;
    const pair_work w = pair_work_carve(work, dk, dv, C);
    const bool s_in_place = p->s0 != NULL && p->s0 == p->s_final;
    const bool z_in_place = p->z0 != NULL && p->z0 == p->z_final;
    float *S = s_in_place ? p->s_final + h * dk * dv : w.S; /* {dk, dv} */
    float *z = z_in_place ? p->z_final + h * dk : w.z;       /* {dk} */
    lm_linear_head_start(p, h, S, z);

    for (size_t t0 = 0; t0 < L; t0 += C) {
        const size_t n = L - t0 < C ? L - t0 : C, row0 = h * L + t0;
        const uint16_t *q = p->q16 + row0 * dk, *k = p->k16 + row0 * dk; /* {n, dk} */
        const uint16_t *v = p->v16 + row0 * dv;                           /* {n, dv} */
        float *y = p->y + row0 * dv;                                      /* {n, dv} */
        /* phi(k) in float32 (the carry's keys and z); phi(q) in float32 where it is needed
         * (the normalizer, or rounded to qp for elu1) */
        feature_row(k, elu, w.fk, elu ? w.kb : NULL, n * dk);
        if (elu || p->normalize)
            feature_row(q, elu, w.fq, elu ? w.qp : NULL, n * dk);
        const uint16_t *qp = elu ? w.qp : q; /* phi(q), phi(k) in bfloat16 */
        pack_keys(elu ? w.kb : k, n, dk, cp, w.kp2);
        pack_values(v, n, dv, w.vp2);
        pack_state(S, dk, dv, w.s2);
        if (scalar)
            chunk_gate(p, row0, n, &w);
        chunk_scores(&w, qp, n, dk, cp, scalar);

        /* y = (phi(q) S) * b + A v;  den = (phi(q) . z) b + rowsum(A) (float32 scores) */
        if (p->normalize)
            for (size_t t = 0; t < n; t++)
                w.den[t] = dot(w.fq + t * dk, z, dk) * (scalar ? w.bq[t] : 1.0f) +
                           sum_row(w.A + t * cp, t + 1);
        dp_gemm(n, dv / 16, dk / 2, 0.0f, qp, dk / 2, w.s2, dv, y, dv);
        if (scalar)
            for (size_t t = 0; t < n; t++)
                scale_row(y + t * dv, w.bq[t], dv);
        chunk_intra(&w, n, dv, cp, y);
        if (p->normalize)
            for (size_t t = 0; t < n; t++)
                scale_row(y + t * dv, 1.0f / w.den[t], dv);

        /* Carry: S = b_n S + (phi(k) * ratio)^T v;  z = b_n z + sum_s phi(k_s) ratio_s */
        float beta = 1.0f;
        if (scalar) {
            beta = w.bq[n - 1];
            for (size_t s = 0; s < n; s++)
                scale_row(w.fk + s * dk, w.ratio[s], dk);
            if (need_z)
                for (size_t c = 0; c < dk; c++)
                    z[c] *= beta;
        }
        pack_keys_t(w.fk, n, dk, cp, w.kp2, w.kt2); /* kp2 is free after the scores */
        dp_gemm(dk, dv / 16, (n + 1) / 2, beta, (const uint16_t *)w.kt2, cp / 2, w.vp2, dv, S,
                dv);
        if (need_z)
            add_col_sums(w.fk, n, dk, z);
    }
    if (p->s_final != NULL && !s_in_place)
        memcpy(p->s_final + h * dk * dv, S, dk * dv * sizeof(float));
    if (p->z_final != NULL && !z_in_place)
        memcpy(p->z_final + h * dk, z, dk * sizeof(float));
}

void lm_linear_chunked_bf16_avx512bf16(const lm_linear_f32 *p, size_t h, size_t chunk,
                                       float *work)
{
    if (p->d_key % 2 == 0 && p->d_value % 16 == 0 && p->gate_kind != LM_LINEAR_GATE_CHANNEL)
        chunked_pairs(p, h, chunk, work);
    else
        chunked_bf16_widened(p, h, chunk, work);
}

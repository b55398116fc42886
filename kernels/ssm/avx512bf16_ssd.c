/* AVX512-BF16 chunked Mamba-2 SSD (slot ssd_chunked_bf16 of lm_kernels.h): x, B and C in
 * bfloat16, the three products of a sub-chunk (ssd_chunked.h) on VDPBF16PS with float32
 * accumulators, everything else as the float32 kernel (ssd_body.h) does it:
 *   output rows  y[t] = u_t (alpha C_t S + sum_s sc[t, s] Xw[s]) + skip x[t]
 *   state rows   S[k] = beta (alpha S[k] + sum_s B[s, k] Xw[s])
 * Each product pairs neighbours of its summed index, so per sub-chunk [a0, b1) of m rows:
 *   Sp  {N / 2, P}   words (S[2 k2, j], S[2 k2 + 1, j]): the float32 state rounded;
 *   Xwp {m2, P}      words (Xw[2 s2, j], Xw[2 s2 + 1, j]): w_s x_s rounded;
 *   Bp  {m2, N}      words (B[2 s2, k], B[2 s2 + 1, k]): exact (B is bfloat16);
 *   scp {m, m2}      words (sc[t, 2 s2], sc[t, 2 s2 + 1]): the float32 scores rounded;
 * and C_t's words (C[t, 2 k2], C[t, 2 k2 + 1]) are read in place (m2 = ceil(m / 2), an odd
 * last s paired with zeros). The state S itself stays float32; it is rounded only as an
 * operand. Error bound (docs/kernels.md, "Chunked SSD in bf16"): relative 2^-8 per rounded
 * operand (8 significant bits), so each term of y or S is off by at most (2^-7 + 2^-16) of
 * its absolute value
 * on top of the float32 rule. Shapes outside the pair layout (P not a multiple of 16, N
 * odd) take the AVX-512 path's widening kernel. */
#if !defined(__AVX512F__) || !defined(__AVX512BF16__)
#error "kernels/ssm/avx512bf16_ssd.c needs -mavx512f -mavx512bw -mavx512bf16"
#endif
#include <stdbool.h>

#include "../simd/avx512.h"
#include "../simd/avx512bf16.h"
#include "lm_kernels.h"
#include "ssd_decay.h"

#define SB_MR 4 /* tile rows */
#define SB_NV 4 /* tile vectors of 16 floats: 16 accumulators of the 32 registers */
#define SB_UNROLL _Pragma("GCC unroll 8")

/* Output tile: rows [0, mr) x nv vectors of
 *   y[r] = u[r] (alpha sum_{k2 < n2} C[r, 2 k2 ..] Sp[k2] + sum_{s2 < ks2} scp[r, s2] Xwp[s2])
 *          + skip x[r]. */
BF16_INLINE void sb_out_tile(int mr, int nv, size_t n2, size_t ks2, float alpha,
                             const uint16_t *c, size_t ldc, const uint32_t *sp, size_t P,
                             const uint32_t *scp, size_t ldsc, const uint32_t *xwp,
                             const float *u, float skip, const uint16_t *xb, size_t ldxb,
                             float *y, size_t ldy)
{
    __m512 acc[SB_MR][SB_NV];
    SB_UNROLL for (int r = 0; r < mr; r++)
        SB_UNROLL for (int v = 0; v < nv; v++)
            acc[r][v] = _mm512_setzero_ps();
    for (size_t k2 = 0; k2 < n2; k2++) {
        __m512i bv[SB_NV];
        SB_UNROLL for (int v = 0; v < nv; v++)
            bv[v] = _mm512_loadu_si512(sp + k2 * P + (size_t)v * 16);
        SB_UNROLL for (int r = 0; r < mr; r++) {
            const __m512i ar = bf16_bcast_word(c + (size_t)r * ldc + 2 * k2);
            SB_UNROLL for (int v = 0; v < nv; v++)
                acc[r][v] = bf16_dot(acc[r][v], ar, bv[v]);
        }
    }
    const __m512 va = _mm512_set1_ps(alpha);
    SB_UNROLL for (int r = 0; r < mr; r++)
        SB_UNROLL for (int v = 0; v < nv; v++)
            acc[r][v] = _mm512_mul_ps(acc[r][v], va);
    for (size_t s2 = 0; s2 < ks2; s2++) {
        __m512i bv[SB_NV];
        SB_UNROLL for (int v = 0; v < nv; v++)
            bv[v] = _mm512_loadu_si512(xwp + s2 * P + (size_t)v * 16);
        SB_UNROLL for (int r = 0; r < mr; r++) {
            const __m512i ar = _mm512_set1_epi32((int)scp[(size_t)r * ldsc + s2]);
            SB_UNROLL for (int v = 0; v < nv; v++)
                acc[r][v] = bf16_dot(acc[r][v], ar, bv[v]);
        }
    }
    const __m512 vs = _mm512_set1_ps(skip);
    SB_UNROLL for (int r = 0; r < mr; r++) {
        const __m512 ur = _mm512_set1_ps(u[r]);
        SB_UNROLL for (int v = 0; v < nv; v++) {
            const __m512 xr = bf16_load_ps(xb + (size_t)r * ldxb + (size_t)v * 16);
            _mm512_storeu_ps(y + (size_t)r * ldy + (size_t)v * 16,
                             _mm512_fmadd_ps(ur, acc[r][v], _mm512_mul_ps(vs, xr)));
        }
    }
}

/* State tile: rows [0, mr) x nv vectors of S[r] = beta (alpha S[r] + sum_{s2 < m2}
 * Bp[s2, r] Xwp[s2]) (Bp rows N words apart). */
BF16_INLINE void sb_state_tile(int mr, int nv, size_t m2, float alpha, float beta,
                               const uint32_t *bp, size_t N, const uint32_t *xwp, size_t P,
                               float *S)
{
    __m512 acc[SB_MR][SB_NV];
    const __m512 va = _mm512_set1_ps(alpha);
    SB_UNROLL for (int r = 0; r < mr; r++)
        SB_UNROLL for (int v = 0; v < nv; v++)
            acc[r][v] = _mm512_mul_ps(va, _mm512_loadu_ps(S + (size_t)r * P + (size_t)v * 16));
    for (size_t s2 = 0; s2 < m2; s2++) {
        __m512i bv[SB_NV];
        SB_UNROLL for (int v = 0; v < nv; v++)
            bv[v] = _mm512_loadu_si512(xwp + s2 * P + (size_t)v * 16);
        SB_UNROLL for (int r = 0; r < mr; r++) {
            const __m512i ar = _mm512_set1_epi32((int)bp[s2 * N + (size_t)r]);
            SB_UNROLL for (int v = 0; v < nv; v++)
                acc[r][v] = bf16_dot(acc[r][v], ar, bv[v]);
        }
    }
    const __m512 vb = _mm512_set1_ps(beta);
    SB_UNROLL for (int r = 0; r < mr; r++)
        SB_UNROLL for (int v = 0; v < nv; v++)
            _mm512_storeu_ps(S + (size_t)r * P + (size_t)v * 16, _mm512_mul_ps(vb, acc[r][v]));
}

/* The instances: full-height (SB_MR) and single-row tiles, SB_NV vectors (p) or one (v). */
#define SB_TILE_FNS(MR, NV, SUFFIX)                                                           \
    static void sb_out_##SUFFIX(size_t n2, size_t ks2, float alpha, const uint16_t *c,        \
                                size_t ldc, const uint32_t *sp, size_t P,                     \
                                const uint32_t *scp, size_t ldsc, const uint32_t *xwp,        \
                                const float *u, float skip, const uint16_t *xb, size_t ldxb,  \
                                float *y, size_t ldy)                                         \
    {                                                                                         \
        sb_out_tile(MR, NV, n2, ks2, alpha, c, ldc, sp, P, scp, ldsc, xwp, u, skip, xb, ldxb, \
                    y, ldy);                                                                  \
    }                                                                                         \
    static void sb_state_##SUFFIX(size_t m2, float alpha, float beta, const uint32_t *bp,     \
                                  size_t N, const uint32_t *xwp, size_t P, float *S)          \
    {                                                                                         \
        sb_state_tile(MR, NV, m2, alpha, beta, bp, N, xwp, P, S);                             \
    }
SB_TILE_FNS(SB_MR, SB_NV, 4p)
SB_TILE_FNS(1, SB_NV, 1p)
SB_TILE_FNS(SB_MR, 1, 4v)
SB_TILE_FNS(1, 1, 1v)

/* The pair layouts of one sub-chunk of m rows starting at row s0 of the chunk (x and B
 * rows of the block already offset to it). */
typedef struct sb_pack {
    uint32_t *xwp; /* {m2, P} */
    uint32_t *sp;  /* {N / 2, P} */
    uint32_t *bp;  /* {m2, N} */
    uint32_t *scp; /* {m, m2} */
} sb_pack;

/* Xwp from the m bfloat16 x rows (ldx apart) scaled by w {m}. */
static void sb_pack_xw(const uint16_t *x, size_t ldx, const float *w, size_t m, size_t P,
                       uint32_t *xwp)
{
    for (size_t s2 = 0; 2 * s2 < m; s2++) {
        const size_t s = 2 * s2;
        const bool odd = s + 1 == m;
        const __m512 wl = _mm512_set1_ps(w[s]), wh = _mm512_set1_ps(odd ? 0.0f : w[s + 1]);
        const uint16_t *lo = x + s * ldx, *hi = odd ? lo : lo + ldx;
        for (size_t j = 0; j < P; j += 16)
            _mm512_storeu_si512(xwp + s2 * P + j,
                                bf16_pair_ps(_mm512_mul_ps(wl, bf16_load_ps(lo + j)),
                                             _mm512_mul_ps(wh, bf16_load_ps(hi + j))));
    }
}

/* Sp from the float32 state S {N, P} (N even). */
static void sb_pack_state(const float *S, size_t N, size_t P, uint32_t *sp)
{
    for (size_t k2 = 0; k2 < N / 2; k2++)
        for (size_t j = 0; j < P; j += 16)
            _mm512_storeu_si512(sp + k2 * P + j,
                                bf16_pair_ps(_mm512_loadu_ps(S + 2 * k2 * P + j),
                                             _mm512_loadu_ps(S + (2 * k2 + 1) * P + j)));
}

/* Bp from the m bfloat16 B rows (ldb apart, N wide). */
static void sb_pack_b(const uint16_t *b, size_t ldb, size_t m, size_t N, uint32_t *bp)
{
    for (size_t s2 = 0; 2 * s2 < m; s2++) {
        const uint16_t *lo = b + 2 * s2 * ldb, *hi = 2 * s2 + 1 < m ? lo + ldb : NULL;
        size_t k = 0;
        for (; k + 16 <= N; k += 16)
            _mm512_storeu_si512(bp + s2 * N + k, bf16_pair_rows(lo + k, hi ? hi + k : NULL));
        for (; k < N; k++)
            bp[s2 * N + k] = (uint32_t)lo[k] | (uint32_t)(hi ? hi[k] : 0) << 16;
    }
}

/* scp from the float32 scores of rows [0, m) (ldsc apart; columns [0, m), the rest of a
 * row's words zero). */
static void sb_pack_scores(const float *sc, size_t ldsc, size_t m, uint32_t *scp)
{
    const size_t m2 = (m + 1) / 2;
    for (size_t t = 0; t < m; t++) {
        const float *row = sc + t * ldsc;
        for (size_t s = 0; s < m; s += 32) { /* 32 floats -> 16 words, in order */
            const size_t left = m - s;
            const __mmask16 lo = left >= 16 ? 0xFFFF : (__mmask16)((1u << left) - 1);
            const __mmask16 hi = left >= 32 ? 0xFFFF
                                 : left > 16 ? (__mmask16)((1u << (left - 16)) - 1) : 0;
            const __m512bh words = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, row + s + 16),
                                                       _mm512_maskz_loadu_ps(lo, row + s));
            const size_t n = (left >= 32 ? 32 : left + 1) / 2;
            _mm512_mask_storeu_epi32(scp + t * m2 + s / 2, (__mmask16)((1u << n) - 1),
                                     (__m512i)words);
        }
    }
}

/* Output rows [r, r + mr) of the sub-chunk, all P columns (P a multiple of 16). */
static void sb_out_rows(size_t mr, size_t r, size_t P, size_t N, size_t m2, float alpha,
                        const uint16_t *c, size_t ldc, const sb_pack *pk, const float *u,
                        float skip, const uint16_t *xb, size_t ldxb, float *y, size_t ldy)
{
    const bool full = mr == SB_MR;
    const size_t ks2 = (r + mr + 1) / 2 < m2 ? (r + mr + 1) / 2 : m2; /* columns <= row */
    const uint32_t *scp = pk->scp + r * m2;
    size_t j = 0;
    for (; j + SB_NV * 16 <= P; j += SB_NV * 16)
        (full ? sb_out_4p : sb_out_1p)(N / 2, ks2, alpha, c, ldc, pk->sp + j, P, scp, m2,
                                       pk->xwp + j, u, skip, xb + j, ldxb, y + j, ldy);
    for (; j < P; j += 16)
        (full ? sb_out_4v : sb_out_1v)(N / 2, ks2, alpha, c, ldc, pk->sp + j, P, scp, m2,
                                       pk->xwp + j, u, skip, xb + j, ldxb, y + j, ldy);
}

/* State rows [k, k + mr), all P columns. */
static void sb_state_rows(size_t mr, size_t k, size_t P, size_t N, size_t m2, float alpha,
                          float beta, const sb_pack *pk, float *S)
{
    const bool full = mr == SB_MR;
    size_t j = 0;
    for (; j + SB_NV * 16 <= P; j += SB_NV * 16)
        (full ? sb_state_4p : sb_state_1p)(m2, alpha, beta, pk->bp + k, N, pk->xwp + j, P,
                                           S + k * P + j);
    for (; j < P; j += 16)
        (full ? sb_state_4v : sb_state_1v)(m2, alpha, beta, pk->bp + k, N, pk->xwp + j, P,
                                           S + k * P + j);
}

/* One sub-chunk [a0, a0 + m) of the chunk at t0: pack, then output rows (reading S), then
 * the state rows. */
static void sb_subchunk(const lm_ssd_block_f32 *blk, size_t t0, size_t a0, size_t m,
                        float alpha, float beta, const float *u, const float *w,
                        const float *sc, const sb_pack *pk, float *S)
{
    const size_t P = blk->head_dim, N = blk->state, C = blk->chunk, m2 = (m + 1) / 2;
    const size_t ldx = blk->ldx, ldbc = blk->ldbc, row0 = t0 + a0;
    sb_pack_xw(blk->x16 + row0 * ldx, ldx, w + a0, m, P, pk->xwp);
    sb_pack_state(S, N, P, pk->sp);
    sb_pack_b(blk->b16 + row0 * ldbc, ldbc, m, N, pk->bp);
    sb_pack_scores(sc + a0 * C + a0, C, m, pk->scp);
    for (size_t r = 0; r < m;) {
        const size_t rows = m - r >= SB_MR ? SB_MR : 1;
        sb_out_rows(rows, r, P, N, m2, alpha, blk->c16 + (row0 + r) * ldbc, ldbc, pk,
                    u + a0 + r, blk->skip, blk->x16 + (row0 + r) * ldx, ldx,
                    blk->y + (row0 + r) * blk->ldy, blk->ldy);
        r += rows;
    }
    for (size_t k = 0; k < N;) {
        const size_t rows = N - k >= SB_MR ? SB_MR : 1;
        sb_state_rows(rows, k, P, N, m2, alpha, beta, pk, S);
        k += rows;
    }
}

void lm_ssd_chunked_bf16_avx512bf16(const lm_ssd_block_f32 *blk, float *work)
{
    const size_t len = blk->length, C = blk->chunk, P = blk->head_dim, N = blk->state;
    if (P % 16 != 0 || N % 2 != 0) { /* outside the pair layout: widen, float32 kernel */
        lm_ssd_chunked_bf16_avx512(blk, work);
        return;
    }
    const size_t c16 = ((C + 15) & ~(size_t)15) + 16, c2 = (C + 1) / 2 + 1;
    float *dl = work, *lg = dl + c16, *cl = lg + c16, *u = cl + c16, *w = u + c16;
    float *tmp = w + c16;
    uint32_t *base = (uint32_t *)(void *)(tmp + c16);
    const sb_pack pk = {.xwp = base,
                        .sp = base + ((c2 * P + 15) & ~(size_t)15),
                        .bp = base + ((c2 * P + 15) & ~(size_t)15) + (((N + 1) / 2 * P + 15) & ~(size_t)15),
                        .scp = base + ((c2 * P + 15) & ~(size_t)15) +
                               (((N + 1) / 2 * P + 15) & ~(size_t)15) + ((N * c2 + 15) & ~(size_t)15)};
    for (size_t t0 = 0; t0 < len; t0 += C) {
        const size_t n = len - t0 < C ? len - t0 : C;
        const float *sc = blk->scores + (t0 / C) * C * C; /* {C, C} */
        ssd_softplus(blk->dt_raw + t0 * blk->ld_dt, blk->ld_dt, blk->dt_bias, n, tmp, dl);
        for (size_t t = 0; t < n; t++)
            lg[t] = dl[t] * blk->a;
        for (size_t a0 = 0; a0 < n;) {
            float alpha, beta;
            const size_t b1 = ssd_subchunk(lg, dl, a0, n, cl, u, w, &alpha, &beta);
            sb_subchunk(blk, t0, a0, b1 - a0, alpha, beta, u, w, sc, &pk, blk->s);
            a0 = b1;
        }
    }
}

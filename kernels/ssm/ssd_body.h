/* The chunked Mamba-2 SSD kernel (ssd_chunked.h), written once and instantiated per ISA
 * through kernels/simd/<isa>.h; SSD_CHUNKED_NAME names the public function.
 *
 * Two products per sub-chunk, both on register-blocked tiles of SSD_MR rows x SSD_NV
 * vectors (per step k: SSD_NV loads of a row of the right operand, SSD_MR broadcasts):
 *   output rows:  y[t] = u_t (alpha C_t S + sum_s sc[t, s] Xw[s]) + skip x[t]  (inner extent
 *                 N, then the sub-chunk's columns up to the row block's end; the scores are
 *                 zero above the diagonal), written straight into y;
 *   state rows:   S[k] = beta (alpha S[k] + sum_s B[s, k] Xw[s])  (B read in place,
 *                 transposed access), S updated in place.
 * One pass over the x rows builds Xw = diag(w) x (the output tiles read x again, in place,
 * for skip x); nothing else touches y or S. */
#include "ssd_chunked.h"
#include "ssd_decay.h"

#include <math.h>
#include <string.h>

#define SSD_MR 4
#ifndef SSD_NV
#if LM_W == 8
#define SSD_NV 2
#else
#define SSD_NV 4
#endif
#endif

#if defined(__GNUC__)
#define SSD_UNROLL _Pragma("GCC unroll 8")
#define SSD_INLINE inline __attribute__((always_inline))
#define SSD_PREFETCH(ptr) __builtin_prefetch(ptr, 0, 3)
#define SSD_PREFETCH_W(ptr) __builtin_prefetch(ptr, 1, 3)
#else
#define SSD_UNROLL
#define SSD_INLINE inline
#define SSD_PREFETCH(ptr) ((void)(ptr))
#define SSD_PREFETCH_W(ptr) ((void)(ptr))
#endif

/* Output tile: rows [0, mr) x nv vectors of
 *   y[r] = u[r] (alpha sum_{k<N} c[r, k] S[k] + sum_{s<ks} sc[r, s] xw[s]) + skip xb[r]. */
static SSD_INLINE void ssd_out_tile(size_t mr, size_t nv, size_t N, size_t ks, float alpha,
                                    const float *c, size_t ldc, const float *S, size_t lds,
                                    const float *sc, size_t ldsc, const float *xw, size_t ldw,
                                    const float *u, float skip, const float *xb, size_t ldxb,
                                    float *y, size_t ldy)
{
    LM_V acc[SSD_MR][SSD_NV];
    SSD_UNROLL for (size_t r = 0; r < mr; r++)
        SSD_UNROLL for (size_t v = 0; v < nv; v++)
            acc[r][v] = V_SET1(0.0f);
    for (size_t k = 0; k < N; k++) {
        LM_V bv[SSD_NV];
        SSD_UNROLL for (size_t v = 0; v < nv; v++)
            bv[v] = V_LOADU(S + k * lds + v * LM_W);
        SSD_UNROLL for (size_t r = 0; r < mr; r++) {
            const LM_V ar = V_SET1(c[r * ldc + k]); /* C[r, k] in every lane */
            SSD_UNROLL for (size_t v = 0; v < nv; v++)
                acc[r][v] = V_FMA(ar, bv[v], acc[r][v]); /* acc += C[r, k] S[k] */
        }
    }
    const LM_V va = V_SET1(alpha);
    SSD_UNROLL for (size_t r = 0; r < mr; r++)
        SSD_UNROLL for (size_t v = 0; v < nv; v++)
            acc[r][v] = V_MUL(acc[r][v], va);
    for (size_t s = 0; s < ks; s++) {
        LM_V bv[SSD_NV];
        SSD_UNROLL for (size_t v = 0; v < nv; v++)
            bv[v] = V_LOADU(xw + s * ldw + v * LM_W);
        SSD_UNROLL for (size_t r = 0; r < mr; r++) {
            const LM_V ar = V_SET1(sc[r * ldsc + s]); /* score (r, s), 0 above the diagonal */
            SSD_UNROLL for (size_t v = 0; v < nv; v++)
                acc[r][v] = V_FMA(ar, bv[v], acc[r][v]); /* acc += sc[r, s] Xw[s] */
        }
    }
    const LM_V vs = V_SET1(skip);
    SSD_UNROLL for (size_t r = 0; r < mr; r++) {
        const LM_V ur = V_SET1(u[r]);
        SSD_UNROLL for (size_t v = 0; v < nv; v++) /* y = u acc + skip x */
            V_STOREU(y + r * ldy + v * LM_W,
                     V_FMA(ur, acc[r][v], V_MUL(vs, V_LOADU(xb + r * ldxb + v * LM_W))));
    }
}

/* State tile: rows [0, mr) x nv vectors of S[r] = beta (alpha S[r] + sum_{s<m} b[s, r] xw[s])
 * (b[s, r] at b[s ldb + r]: B read transposed in place). */
static SSD_INLINE void ssd_state_tile(size_t mr, size_t nv, size_t m, float alpha, float beta,
                                      const float *b, size_t ldb, const float *xw, size_t ldw,
                                      float *S, size_t lds)
{
    LM_V acc[SSD_MR][SSD_NV];
    const LM_V va = V_SET1(alpha);
    SSD_UNROLL for (size_t r = 0; r < mr; r++)
        SSD_UNROLL for (size_t v = 0; v < nv; v++)
            acc[r][v] = V_MUL(va, V_LOADU(S + r * lds + v * LM_W));
    for (size_t s = 0; s < m; s++) {
        LM_V bv[SSD_NV];
        SSD_UNROLL for (size_t v = 0; v < nv; v++)
            bv[v] = V_LOADU(xw + s * ldw + v * LM_W);
        SSD_UNROLL for (size_t r = 0; r < mr; r++) {
            const LM_V ar = V_SET1(b[s * ldb + r]); /* B[s, k + r] in every lane */
            SSD_UNROLL for (size_t v = 0; v < nv; v++)
                acc[r][v] = V_FMA(ar, bv[v], acc[r][v]); /* acc += B[s, k] Xw[s] */
        }
    }
    const LM_V vb = V_SET1(beta);
    SSD_UNROLL for (size_t r = 0; r < mr; r++)
        SSD_UNROLL for (size_t v = 0; v < nv; v++)
            V_STOREU(S + r * lds + v * LM_W, V_MUL(vb, acc[r][v]));
}


/* The instances: full-height (SSD_MR) and single-row tiles, a panel of SSD_NV vectors (p)
 * or one vector (v) wide. */
#define SSD_TILE_FNS(MR, NV, SUFFIX)                                                          \
    static void ssd_out_##SUFFIX(size_t N, size_t ks, float alpha, const float *c,            \
                                 size_t ldc, const float *S, size_t lds, const float *sc,     \
                                 size_t ldsc, const float *xw, size_t ldw, const float *u,    \
                                 float skip, const float *xb, size_t ldxb, float *y,          \
                                 size_t ldy)                                                  \
    {                                                                                         \
        ssd_out_tile(MR, NV, N, ks, alpha, c, ldc, S, lds, sc, ldsc, xw, ldw, u, skip, xb,    \
                     ldxb, y, ldy);                                                           \
    }                                                                                         \
    static void ssd_state_##SUFFIX(size_t m, float alpha, float beta, const float *b,         \
                                   size_t ldb, const float *xw, size_t ldw, float *S,         \
                                   size_t lds)                                                \
    {                                                                                         \
        ssd_state_tile(MR, NV, m, alpha, beta, b, ldb, xw, ldw, S, lds);                      \
    }
SSD_TILE_FNS(SSD_MR, SSD_NV, 4p)
SSD_TILE_FNS(1, SSD_NV, 1p)
SSD_TILE_FNS(SSD_MR, 1, 4v)
SSD_TILE_FNS(1, 1, 1v)

/* Output rows [0, mr) (mr = SSD_MR or 1), all P columns (row stride P in S, xw, xb):
 * panels, single vectors, then scalar columns. */
static void ssd_out_rows(size_t mr, size_t P, size_t N, size_t ks, float alpha, const float *c,
                         size_t ldc, const float *S, const float *sc, size_t ldsc,
                         const float *xw, const float *u, float skip, const float *xb,
                         size_t ldxb, float *y, size_t ldy)
{
    const bool full = mr == SSD_MR;
    size_t j = 0;
    for (; j + SSD_NV * LM_W <= P; j += SSD_NV * LM_W)
        (full ? ssd_out_4p : ssd_out_1p)(N, ks, alpha, c, ldc, S + j, P, sc, ldsc, xw + j, P,
                                         u, skip, xb + j, ldxb, y + j, ldy);
    for (; j + LM_W <= P; j += LM_W)
        (full ? ssd_out_4v : ssd_out_1v)(N, ks, alpha, c, ldc, S + j, P, sc, ldsc, xw + j, P,
                                         u, skip, xb + j, ldxb, y + j, ldy);
    for (; j < P; j++) /* scalar columns */
        for (size_t r = 0; r < mr; r++) {
            float acc = 0.0f;
            for (size_t k = 0; k < N; k++)
                acc += c[r * ldc + k] * S[k * P + j];
            acc *= alpha;
            for (size_t s = 0; s < ks; s++)
                acc += sc[r * ldsc + s] * xw[s * P + j];
            y[r * ldy + j] = u[r] * acc + skip * xb[r * ldxb + j];
        }
}

/* State rows [0, mr) of S (row stride P), all P columns. */
static void ssd_state_rows(size_t mr, size_t P, size_t m, float alpha, float beta,
                           const float *b, size_t ldb, const float *xw, float *S)
{
    const bool full = mr == SSD_MR;
    size_t j = 0;
    for (; j + SSD_NV * LM_W <= P; j += SSD_NV * LM_W)
        (full ? ssd_state_4p : ssd_state_1p)(m, alpha, beta, b, ldb, xw + j, P, S + j, P);
    for (; j + LM_W <= P; j += LM_W)
        (full ? ssd_state_4v : ssd_state_1v)(m, alpha, beta, b, ldb, xw + j, P, S + j, P);
    for (; j < P; j++) /* scalar columns */
        for (size_t r = 0; r < mr; r++) {
            float acc = alpha * S[r * P + j];
            for (size_t s = 0; s < m; s++)
                acc += b[s * ldb + r] * xw[s * P + j];
            S[r * P + j] = beta * acc;
        }
}

void SSD_CHUNKED_NAME(const lm_ssd_block_f32 *blk, float *work)
{
    const size_t len = blk->length, C = blk->chunk, P = blk->head_dim, N = blk->state;
    const size_t ldx = blk->ldx, ldy = blk->ldy, ldbc = blk->ldbc;
    const size_t cp = (C * P + 15) & ~(size_t)15, c16 = ((C + 15) & ~(size_t)15) + 16;
    float *xw = work;       /* {C, P}: w_s x_s */
    float *dl = xw + cp;    /* {C}: delta */
    float *lg = dl + c16;   /* {C}: delta A */
    float *cl = lg + c16;   /* {C}: c_t, the decay since the sub-chunk's first token */
    float *u = cl + c16;    /* {C}: exp(c_t) */
    float *w = u + c16;     /* {C}: exp(-c_s) delta_s */
    float *tmp = w + c16;   /* {C} */
    float *S = blk->s;      /* {N, P} */
    for (size_t t0 = 0; t0 < len; t0 += C) {
        const size_t n = len - t0 < C ? len - t0 : C;
        const float *sc = blk->scores + (t0 / C) * C * C; /* {C, C} */
        /* the next chunk's x and y rows and dt_raw entries, fetched a few at a time during
         * the state products (rows ldx apart, a page each: too far apart for the hardware
         * prefetcher) */
        const size_t next = len - t0 > C ? (len - t0 - C < C ? len - t0 - C : C) : 0;
        const size_t state_tiles = (N + SSD_MR - 1) / SSD_MR;
        const size_t per_tile = (next + state_tiles - 1) / state_tiles;
        size_t fetched = 0;
        ssd_softplus(blk->dt_raw + t0 * blk->ld_dt, blk->ld_dt, blk->dt_bias, n, tmp, dl);
        for (size_t t = 0; t < n; t++)
            lg[t] = dl[t] * blk->a;
        for (size_t a0 = 0; a0 < n;) {
            float alpha, beta; /* the sub-chunk [a0, b1) and its decays */
            const size_t b1 = ssd_subchunk(lg, dl, a0, n, cl, u, w, &alpha, &beta);
            const size_t m = b1 - a0;
            for (size_t s = a0; s < b1; s++) { /* xw = w x */
                const float *xr = blk->x + (t0 + s) * ldx; /* {P} */
                float *xws = xw + s * P;
                const LM_V ws = V_SET1(w[s]);
                size_t j = 0;
                for (; j + LM_W <= P; j += LM_W)
                    V_STOREU(xws + j, V_MUL(ws, V_LOADU(xr + j)));
                for (; j < P; j++)
                    xws[j] = w[s] * xr[j];
            }
            for (size_t r = 0; r < m;) { /* output rows, reading S before it is updated */
                const size_t rows = m - r >= SSD_MR ? SSD_MR : 1, t = a0 + r;
                ssd_out_rows(rows, P, N, r + rows, alpha, blk->c + (t0 + t) * ldbc, ldbc, S,
                             sc + t * C + a0, C, xw + a0 * P, u + t, blk->skip,
                             blk->x + (t0 + t) * ldx, ldx, blk->y + (t0 + t) * ldy, ldy);
                r += rows;
            }
            for (size_t k = 0; k < N;) { /* the state carried past the sub-chunk */
                const size_t rows = N - k >= SSD_MR ? SSD_MR : 1;
                ssd_state_rows(rows, P, m, alpha, beta, blk->b + (t0 + a0) * ldbc + k, ldbc,
                               xw + a0 * P, S + k * P);
                for (size_t f = 0; f < per_tile && fetched < next; f++, fetched++) {
                    const size_t t = t0 + C + fetched;
                    SSD_PREFETCH(blk->dt_raw + t * blk->ld_dt);
                    for (size_t j = 0; j < P; j += 16) {
                        SSD_PREFETCH(blk->x + t * ldx + j);
                        SSD_PREFETCH_W(blk->y + t * ldy + j);
                    }
                }
                k += rows;
            }
            a0 = b1;
        }
    }
}

#ifdef SSD_CHUNKED_BF16_NAME
#include "../attention/attention.h" /* lm_f32_from_bf16 */

/* dst {rows, cols} (dense) = the bfloat16 rows src {rows, cols} (ld apart), widened. */
static void ssd_widen_rows(const uint16_t *src, size_t ld, size_t rows, size_t cols,
                           float *dst)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < cols; j++)
            dst[r * cols + j] = lm_f32_from_bf16(src[r * ld + j]);
}

/* Slot ssd_chunked_bf16 on a path without bfloat16 dot products: the block's x, b and c
 * rows widened to float32 (exact) into work, then the f32 kernel on them; the result is
 * the f32 slot's on the widened inputs, bit for bit. work holds
 * lm_ssd_chunked_bf16_work_floats(blk->length, ...) floats. */
void SSD_CHUNKED_BF16_NAME(const lm_ssd_block_f32 *blk, float *work)
{
    const size_t len = blk->length, P = blk->head_dim, N = blk->state;
    float *xf = work, *bf = xf + len * P, *cf = bf + len * N;
    float *kw = work + ((len * (P + 2 * N) + 15) & ~(size_t)15);
    ssd_widen_rows(blk->x16, blk->ldx, len, P, xf);
    ssd_widen_rows(blk->b16, blk->ldbc, len, N, bf);
    ssd_widen_rows(blk->c16, blk->ldbc, len, N, cf);
    lm_ssd_block_f32 f = *blk;
    f.x = xf, f.b = bf, f.c = cf, f.ldx = P, f.ldbc = N;
    f.x16 = f.b16 = f.c16 = NULL;
    SSD_CHUNKED_NAME(&f, kw);
}
#endif

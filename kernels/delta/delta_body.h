/* The (gated) delta-rule kernels (delta.h), written once and instantiated per ISA through
 * kernels/simd/<isa>.h; RECURRENT_NAME, CHUNKED_NAME and CHUNKED_BF16_NAME name the public
 * functions (each optional: avx512bf16.c defines only the last, with DELTA_BF16_DOT).
 * Internally the state is kept transposed, St {d_key, d_value}, so that every product runs
 * along contiguous value rows; it is transposed from s0 and back to s_final once per head.
 * Self-contained (its own register-tiled product, not kernels/linear/gemm_body.h): the
 * chunked form needs products with a strided (transposed) left operand, a per-row output
 * scale, triangular operands and a lower-triangular output, all in one tile. */
#include <math.h>
#include <string.h>

#include "../simd/state_row.h"

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

static inline float hsum(LM_V v) { return V_HSUM(v); }

static inline float dot(const float *x, const float *y, size_t n)
{
    LM_V acc = V_SET1(0.0f);
    size_t i = 0;
    for (; i + LM_W <= n; i += LM_W)
        acc = V_FMA(V_LOADU(x + i), V_LOADU(y + i), acc);
    float s = hsum(acc);
    for (; i < n; i++)
        s += x[i] * y[i];
    return s;
}

/* y[0:n] *= s */
static inline void scale_row(float *y, float s, size_t n)
{
    size_t j = 0;
    for (; j + LM_W <= n; j += LM_W)
        V_STOREU(y + j, V_MUL(V_LOADU(y + j), V_SET1(s)));
    for (; j < n; j++)
        y[j] *= s;
}

/* out[0:n] += s * x[0:n] */
static inline void axpy(float *out, float s, const float *x, size_t n)
{
    size_t j = 0;
    for (; j + LM_W <= n; j += LM_W)
        V_STOREU(out + j, V_FMA(V_SET1(s), V_LOADU(x + j), V_LOADU(out + j)));
    for (; j < n; j++)
        out[j] += s * x[j];
}

/* kh = k / ||k||, scaled by max|k| first (no overflow or underflow for huge or tiny keys).
 * The driver has rejected zero keys. */
static void unit_key(const float *k, float *kh, size_t dk)
{
    LM_V vtop = V_SET1(0.0f);
    size_t c = 0;
    for (; c + LM_W <= dk; c += LM_W)
        vtop = V_MAX(vtop, V_ABS(V_LOADU(k + c)));
    _Alignas(64) float lanes[LM_W];
    V_STOREU(lanes, vtop);
    float top = 0.0f;
    for (size_t i = 0; i < LM_W; i++)
        top = lanes[i] > top ? lanes[i] : top;
    for (; c < dk; c++)
        top = fabsf(k[c]) > top ? fabsf(k[c]) : top;
    /* 1/top is finite unless top is subnormal: then divide */
    const bool tiny = top < 0x1p-126f;
    const LM_V vt = V_SET1(tiny ? top : 1.0f / top);
    LM_V ss = V_SET1(0.0f);
    for (c = 0; c + LM_W <= dk; c += LM_W) {
        const LM_V x = tiny ? V_DIV(V_LOADU(k + c), vt) : V_MUL(V_LOADU(k + c), vt);
        V_STOREU(kh + c, x);
        ss = V_FMA(x, x, ss);
    }
    float s = hsum(ss);
    for (; c < dk; c++) {
        kh[c] = tiny ? k[c] / top : k[c] * (1.0f / top);
        s += kh[c] * kh[c];
    }
    scale_row(kh, 1.0f / sqrtf(s), dk);
}

static void load_state(const lm_delta_seq_f32 *p, size_t h, float *St)
{
    const size_t dk = p->d_key, dv = p->d_value;
    if (p->s0 == NULL) {
        memset(St, 0, dk * dv * sizeof(float));
        return;
    }
    const float *s0 = p->s0 + h * dv * dk; /* {dv, dk} */
    for (size_t j = 0; j < dv; j++)
        for (size_t c = 0; c < dk; c++)
            St[c * dv + j] = s0[j * dk + c];
}

static void store_state(const lm_delta_seq_f32 *p, size_t h, const float *St)
{
    const size_t dk = p->d_key, dv = p->d_value;
    if (p->s_final == NULL)
        return;
    float *sf = p->s_final + h * dv * dk; /* {dv, dk} */
    for (size_t j = 0; j < dv; j++)
        for (size_t c = 0; c < dk; c++)
            sf[j * dk + c] = St[c * dv + j];
}

#ifdef RECURRENT_NAME
/* ---- the recurrent form --------------------------------------------------------------
 * Per token, with the unit key kh, on the transposed state St {dk, dv} (rows St_c):
 *   u = beta (v - g St^T kh)            pass 1: St only read (g scales the sum)
 *   St_c = g St_c + kh_c u;  y = St^T q  pass 2: St read, updated and written once
 * The value columns are independent (u_j, y_j and column j of St use no other column), so
 * they run in panels of nv vectors whose sums and u stay in registers: RP = 8 vectors with
 * 32 registers (16 partial sums: even and odd rows apart, which halves the FMA chains, and 8
 * of u), 4 on AVX2's 16; then panels of 1 vector, then the last columns one float each. */
enum { RP = LM_W == 8 ? 4 : 8 };

/* acc += kh_c St_c over a panel's nv vectors (pass 1, one row). */
static inline __attribute__((always_inline)) void rec_dot_row(const float *r, float k,
                                                              LM_V *acc, int nv)
{
    const LM_V vk = V_SET1(k);
    _Pragma("GCC unroll 8") for (int e = 0; e < nv; e++)
        acc[e] = V_FMA(vk, V_LOADU(r + e * LM_W), acc[e]);
}

/* One token for the nv vectors of value columns at St, v, y (nv <= RP). */
static inline __attribute__((always_inline)) void
rec_panel(float *St, size_t dk, size_t dv, const float *kh, const float *q, const float *v,
          float g, float beta, float *y, int nv, bool gated)
{
    LM_V a0[RP], a1[RP], u[RP];
    const LM_V vg = V_SET1(g);
    _Pragma("GCC unroll 8") for (int e = 0; e < nv; e++)
        a0[e] = a1[e] = V_SET1(0.0f);
    size_t c = 0;
    for (; c + 2 <= dk; c += 2) {
        rec_dot_row(St + c * dv, kh[c], a0, nv);
        rec_dot_row(St + (c + 1) * dv, kh[c + 1], a1, nv);
    }
    if (c < dk)
        rec_dot_row(St + c * dv, kh[c], a0, nv);
    _Pragma("GCC unroll 8") for (int e = 0; e < nv; e++) { /* u = beta (v - g sum) */
        const LM_V sum = V_ADD(a0[e], a1[e]);
        u[e] = V_MUL(V_SET1(beta), V_SUB(V_LOADU(v + e * LM_W), gated ? V_MUL(vg, sum) : sum));
        a0[e] = a1[e] = V_SET1(0.0f);
    }
    for (c = 0; c + 2 <= dk; c += 2) {
        state_row_update(St + c * dv, g, kh[c], q[c], u, a0, nv, gated);
        state_row_update(St + (c + 1) * dv, g, kh[c + 1], q[c + 1], u, a1, nv, gated);
    }
    if (c < dk)
        state_row_update(St + c * dv, g, kh[c], q[c], u, a0, nv, gated);
    _Pragma("GCC unroll 8") for (int e = 0; e < nv; e++)
        V_STOREU(y + e * LM_W, V_ADD(a0[e], a1[e]));
}

/* One token over all dv columns (see above). */
static inline __attribute__((always_inline)) void
rec_token(float *St, size_t dk, size_t dv, const float *kh, const float *q, const float *v,
          float g, float beta, float *y, bool gated)
{
    size_t j = 0;
    for (; j + RP * LM_W <= dv; j += RP * LM_W)
        rec_panel(St + j, dk, dv, kh, q, v + j, g, beta, y + j, RP, gated);
    for (; j + LM_W <= dv; j += LM_W)
        rec_panel(St + j, dk, dv, kh, q, v + j, g, beta, y + j, 1, gated);
    for (; j < dv; j++) { /* the last columns, one float each */
        float sum = 0.0f, acc = 0.0f;
        for (size_t c = 0; c < dk; c++)
            sum += kh[c] * St[c * dv + j];
        const float u = beta * (v[j] - (gated ? g * sum : sum));
        for (size_t c = 0; c < dk; c++) {
            float *x = St + c * dv + j;
            *x = kh[c] * u + (gated ? g * *x : *x);
            acc += q[c] * *x;
        }
        y[j] = acc;
    }
}

static void rec_tokens(const lm_delta_seq_f32 *p, size_t h, float *St, float *kh, bool gated)
{
    const size_t L = p->length, dk = p->d_key, dv = p->d_value;
    for (size_t t = 0; t < L; t++) {
        const size_t row = h * L + t;
        unit_key(p->k + row * dk, kh, dk);
        rec_token(St, dk, dv, kh, p->q + row * dk, p->v + row * dv,
                  gated ? p->gate[row] : 1.0f, p->beta[row], p->y + row * dv, gated);
    }
}

void RECURRENT_NAME(const lm_delta_seq_f32 *p, size_t h, size_t chunk, float *work)
{
    (void)chunk;
    float *St = work, *kh = St + round16(p->d_key * p->d_value);
    load_state(p, h, St);
    if (p->gate != NULL)
        rec_tokens(p, h, St, kh, true);
    else
        rec_tokens(p, h, St, kh, false);
    store_state(p, h, St);
}

#endif /* RECURRENT_NAME */

/* ---- the register-tiled product of the chunked form ------------------------------------
 * One tile: C[r, 0:nv W] = keep C[r, 0:nv W] + scale_r sum_{p<kk} A[r ars + p acs] B[p, 0:nv W]
 * for r < mr (mr <= TILE_MAX_ROWS, nv <= TILE_MAX_VECS): mr x nv accumulators in registers,
 * one broadcast of A and nv vector loads of B per FMA row. keep == 0 never reads C (it may
 * hold anything); scale NULL means 1. Strides ars / acs let A be a row-major matrix (ars =
 * lda, acs = 1) or a transposed one (ars = 1, acs = lda). Instantiated for constant mr and
 * nv (TILE_FIXED below) so that the loops unroll into straight register code. */
#define TILE_MAX_ROWS 8
#define TILE_MAX_VECS 4

static inline __attribute__((always_inline)) void
tile(size_t mr, size_t nv, size_t kk, const float *A, size_t ars, size_t acs, const float *B,
     size_t ldb, float *C, size_t ldc, const float *scale, float keep)
{
    LM_V acc[TILE_MAX_ROWS][TILE_MAX_VECS];
#pragma GCC unroll 8
    for (size_t r = 0; r < mr; r++)
#pragma GCC unroll 4
        for (size_t v = 0; v < nv; v++)
            acc[r][v] = V_SET1(0.0f);
    for (size_t p = 0; p < kk; p++) {
        const float *b = B + p * ldb;
        LM_V bv[TILE_MAX_VECS];
#pragma GCC unroll 4
        for (size_t v = 0; v < nv; v++)
            bv[v] = V_LOADU(b + v * LM_W);
#pragma GCC unroll 8
        for (size_t r = 0; r < mr; r++) {
            const LM_V a = V_SET1(A[r * ars + p * acs]); /* a = A[r, p] */
#pragma GCC unroll 4
            for (size_t v = 0; v < nv; v++)
                acc[r][v] = V_FMA(a, bv[v], acc[r][v]);
        }
    }
    /* the store: no multiply by a unit scale (the C-deep state update, where the store
     * is a visible part of the tile's work, has none) */
    if (scale != NULL) {
#pragma GCC unroll 8
        for (size_t r = 0; r < mr; r++) {
            const LM_V s = V_SET1(scale[r]);
#pragma GCC unroll 4
            for (size_t v = 0; v < nv; v++)
                acc[r][v] = V_MUL(acc[r][v], s);
        }
    }
    const LM_V kv = V_SET1(keep);
#pragma GCC unroll 8
    for (size_t r = 0; r < mr; r++) {
        float *c = C + r * ldc;
#pragma GCC unroll 4
        for (size_t v = 0; v < nv; v++)
            V_STOREU(c + v * LM_W, keep != 0.0f ? V_FMA(V_LOADU(c + v * LM_W), kv, acc[r][v])
                                                : acc[r][v]);
    }
}

#define TILE_ARGS                                                                             \
    size_t kk, const float *A, size_t ars, size_t acs, const float *B, size_t ldb, float *C,   \
        size_t ldc, const float *scale, float keep
#define TILE_FIXED(MR, NV)                                                                    \
    static void tile_##MR##x##NV(TILE_ARGS)                                                   \
    {                                                                                         \
        tile(MR, NV, kk, A, ars, acs, B, ldb, C, ldc, scale, keep);                          \
    }
#define TILE_ROW(MR) TILE_FIXED(MR, 1) TILE_FIXED(MR, 2) TILE_FIXED(MR, 3) TILE_FIXED(MR, 4)
TILE_ROW(1) TILE_ROW(2) TILE_ROW(3) TILE_ROW(4) TILE_ROW(5) TILE_ROW(6) TILE_ROW(7) TILE_ROW(8)

typedef void (*tile_fn)(TILE_ARGS);
#define TILE_ENTRY(MR) {tile_##MR##x1, tile_##MR##x2, tile_##MR##x3, tile_##MR##x4}
static const tile_fn tiles[TILE_MAX_ROWS][TILE_MAX_VECS] = {
    TILE_ENTRY(1), TILE_ENTRY(2), TILE_ENTRY(3), TILE_ENTRY(4),
    TILE_ENTRY(5), TILE_ENTRY(6), TILE_ENTRY(7), TILE_ENTRY(8),
};

/* Which part of a product is needed. */
typedef enum shape {
    SHAPE_FULL,    /* all of C */
    SHAPE_TRIL_A,  /* A {m, m} is lower-triangular with zeros above its diagonal: row block
                      r0.. reads A[r, p] only for p < r0 + rows */
    SHAPE_LOWER_C, /* only C[r, j] for j <= r is wanted: columns past the row block are
                      skipped; entries above the diagonal are left unspecified */
} shape;

/* The register block of one product: rows x vecs accumulators. */
typedef struct block {
    size_t rows, vecs;
} block;

/* One left operand and output of a product: C {m, n} = keep C + diag(scale) A B with
 * A {m, kk} at strides (ars, acs), C row stride ldc, scale {m} or NULL. */
typedef struct operand {
    size_t m;
    const float *A;
    size_t ars, acs;
    float *C;
    size_t ldc;
    const float *scale;
    float keep;
} operand;

/* The next chunk's k, v and q rows, asked for a few cache lines at a time between the
 * tiles of this chunk's products. One burst of a few hundred prefetches at the chunk start
 * (384 lines at C = 16, d = 128) mostly did not land: it cost nothing in the profile, yet
 * the key transpose and W = beta V still stalled on their first touch of the rows. */
typedef struct prefetcher {
    const char *base[3];
    size_t bytes[3];
    size_t seg, off;
} prefetcher;

static inline void pf_step(prefetcher *pf, size_t lines)
{
    if (pf == NULL)
        return;
    while (lines > 0 && pf->seg < 3) {
        if (pf->off >= pf->bytes[pf->seg]) {
            pf->seg++;
            pf->off = 0;
            continue;
        }
        __builtin_prefetch(pf->base[pf->seg] + pf->off);
        pf->off += 64;
        lines--;
    }
}

/* Cache lines prefetched before each tile of a product. */
#define PF_LINES 4

/* The products of `count` operands with one B {kk, n} (row stride ldb): column panels of
 * bk.vecs vectors outside, then the row blocks of every operand (the B panel is read from
 * L1 by all of them), then a scalar column tail. */
static void mm_sets(shape sh, block bk, size_t n, size_t kk, const float *B, size_t ldb,
                    const operand *ops, size_t count, prefetcher *pf)
{
    const size_t nvec = n / LM_W;
    for (size_t j0 = 0; j0 < nvec; j0 += bk.vecs) {
        const size_t nv = nvec - j0 < bk.vecs ? nvec - j0 : bk.vecs;
        for (size_t o = 0; o < count; o++) {
            const operand *x = &ops[o];
            for (size_t r0 = 0; r0 < x->m; r0 += bk.rows) {
                const size_t mr = x->m - r0 < bk.rows ? x->m - r0 : bk.rows;
                size_t k = kk, v = nv;
                if (sh == SHAPE_TRIL_A)
                    k = r0 + mr < kk ? r0 + mr : kk;
                if (sh == SHAPE_LOWER_C) {
                    const size_t need = (r0 + mr + LM_W - 1) / LM_W; /* vectors to the diagonal */
                    if (need <= j0)
                        continue;
                    v = need - j0 < nv ? need - j0 : nv;
                }
                pf_step(pf, PF_LINES);
                tiles[mr - 1][v - 1](k, x->A + r0 * x->ars, x->ars, x->acs, B + j0 * LM_W, ldb,
                                     x->C + r0 * x->ldc + j0 * LM_W, x->ldc,
                                     x->scale != NULL ? x->scale + r0 : NULL, x->keep);
            }
        }
    }
    for (size_t o = 0; o < count && nvec * LM_W < n; o++) { /* the n % LM_W last columns */
        const operand *x = &ops[o];
        for (size_t r = 0; r < x->m; r++) {
            const size_t k = sh == SHAPE_TRIL_A && r + 1 < kk ? r + 1 : kk;
            const float s = x->scale != NULL ? x->scale[r] : 1.0f;
            float *c = x->C + r * x->ldc;
            for (size_t j = nvec * LM_W; j < n; j++) {
                float acc = 0.0f;
                for (size_t p = 0; p < k; p++)
                    acc += x->A[r * x->ars + p * x->acs] * B[p * ldb + j];
                c[j] = x->keep != 0.0f ? x->keep * c[j] + s * acc : s * acc;
            }
        }
    }
}

/* C {m, n} = keep C + diag(scale) A B: mm_sets with one operand. */
static void mm(shape sh, block bk, size_t m, size_t n, size_t kk, const float *A, size_t ars,
               size_t acs, const float *B, size_t ldb, float *C, size_t ldc, const float *scale,
               float keep, prefetcher *pf)
{
    const operand x = {m, A, ars, acs, C, ldc, scale, keep};
    mm_sets(sh, bk, n, kk, B, ldb, &x, 1, pf);
}

/* Register blocks per product: rows x vecs accumulators plus vecs loads of B and one
 * broadcast must fit the register file (16 vector registers on AVX2, 32 elsewhere). */
#ifndef BK_STATE
#if LM_W == 8
#define BK_STATE {2, 4}
#define BK_UPDATE {2, 4}
#define BK_SCORE {4, 2}
#define BK_TRIL {2, 4}
#else
#define BK_STATE {4, 4}
#define BK_UPDATE {4, 4}
#define BK_SCORE {8, 2}
#define BK_TRIL {4, 4}
#endif
#endif
static const block bk_state = BK_STATE;   /* X S_0: kk = d_key */
static const block bk_update = BK_UPDATE; /* S += K^T U: kk = chunk */
static const block bk_score = BK_SCORE;   /* K K^T, Q K^T: kk = d_key, lower output */
static const block bk_tril = BK_TRIL;     /* triangular A: kk up to chunk */

/* Decay rows are re-anchored every RA rows in chunks longer than RA (see decay_masks). */
enum { RA = 16 };

/* gam_t = g_0 g_1 ... g_t, the decay from the chunk start (1 without a gate), for t < n and
 * 1 on to ldn. A running product, re-anchored as exp(log g_0 + ... + log g_t) every RA
 * tokens, so the rounding of at most RA - 1 products accumulates; lg_t = log g_t is filled
 * only for chunks longer than RA (decay_masks' anchors need it). g {n} or NULL. */
static void chunk_decays(size_t n, size_t ldn, const float *g, float *lg, float *gam)
{
    for (size_t t = 0; t < ldn; t++)
        gam[t] = 1.0f;
    if (g == NULL)
        return;
    const bool logs = n > RA;
    float cum = 0.0f, run = 1.0f;
    for (size_t t = 0; t < n; t++) {
        if (logs) {
            lg[t] = logf(g[t]);
            cum += lg[t];
        }
        run = t > 0 && t % RA == 0 ? expf(cum) : run * g[t];
        gam[t] = run;
    }
}

/* The chunk's decay and masks, row by row. Row t of G (G_ti = g_{i+1} ... g_t, G_tt = 1) is
 * row t - 1 times g_t, then lane t set to 1: one multiply per lane instead of an
 * exponential. In chunks longer than RA, rows t = RA, 2 RA, ... are re-anchored as exp(dl)
 * with dl_i = log G_ti = lg_{i+1} + ... + lg_t kept as one running row (dl += lg_t, then
 * dl[t] = 0): pairwise sums of terms of one sign, so the anchors do not cancel where
 * exp(cl_t - cl_i) would, and between anchors at most RA - 1 products round. Strong decays
 * underflow to 0 as exp would. kk[t, i] becomes beta_t G_ti kk[t, i] for i < t, 0 from t on;
 * qk[t, i] becomes G_ti qk[t, i] for i <= t, 0 after; both zeroed up to the padded width
 * ldn (a multiple of LM_W). gend {ldn} carries the rows and ends as G_{n-1, i}. Whole
 * vectors throughout: lanes past t hold finite products or partial sums, masked after.
 * g {n} (NULL: no gate), lg {n} (chunks longer than RA), dl {ldn} scratch. */
static void decay_masks(size_t n, size_t ldn, const float *g, const float *lg,
                        const float *beta, float *kk, float *qk, float *dl, float *gend)
{
    const bool gated = g != NULL, logs = gated && n > RA;
    if (logs)
        memset(dl, 0, ldn * sizeof(float));
    for (size_t j = 0; j < ldn; j++)
        gend[j] = 1.0f; /* row 0: G_00 = 1 */
    for (size_t t = 0; t < n; t++) {
        float *a = kk + t * ldn, *b = qk + t * ldn;
        const size_t w = (t + LM_W) / LM_W * LM_W; /* columns 0..t, whole vectors */
        const LM_V vb = V_SET1(beta[t]);
        if (gated) {
            if (logs) {
                const LM_V l = V_SET1(lg[t]);
                for (size_t j = 0; j < w; j += LM_W)
                    V_STOREU(dl + j, V_ADD(V_LOADU(dl + j), l)); /* dl += lg_t */
                dl[t] = 0.0f;
            }
            if (t > 0) {
                if (logs && t % RA == 0) {
                    for (size_t j = 0; j < w; j += LM_W) /* the anchor: G_t = exp(dl) */
                        V_STOREU(gend + j, V_EXP(V_LOADU(dl + j)));
                } else {
                    const LM_V gt = V_SET1(g[t]);
                    for (size_t j = 0; j < w; j += LM_W) /* G_t = g_t G_{t-1} */
                        V_STOREU(gend + j, V_MUL(V_LOADU(gend + j), gt));
                }
                gend[t] = 1.0f;
            }
            for (size_t j = 0; j < w; j += LM_W) {
                const LM_V G = V_LOADU(gend + j);
                V_STOREU(a + j, V_MUL(V_MUL(V_LOADU(a + j), G), vb)); /* beta G kk */
                V_STOREU(b + j, V_MUL(V_LOADU(b + j), G));             /* G qk */
            }
        } else {
            for (size_t j = 0; j < w; j += LM_W)
                V_STOREU(a + j, V_MUL(V_LOADU(a + j), vb));
        }
        a[t] = 0.0f;
        for (size_t j = t + 1; j < w; j++)
            a[j] = b[j] = 0.0f;
        if (w < ldn) {
            memset(a + w, 0, (ldn - w) * sizeof(float));
            memset(b + w, 0, (ldn - w) * sizeof(float));
        }
    }
}

/* T = (I + A)^{-1} for A {n, n} strictly lower-triangular (row stride ldn, a multiple of
 * LM_W): unit lower triangular, rows T_t = e_t - sum_{i<t} A_ti T_i, zero above the
 * diagonal up to ldn. Whole vectors: T_i[j] = 0 for j > i, so column block j0 sums over
 * i >= j0 only, in two interleaved partial sums (the FMA latency). */
static void unit_lower_inverse(size_t n, size_t ldn, const float *A, float *T)
{
    memset(T, 0, n * ldn * sizeof(float));
    for (size_t t = 0; t < n; t++) {
        const float *a = A + t * ldn;
        float *x = T + t * ldn;
        for (size_t j0 = 0; j0 < t; j0 += LM_W) {
            LM_V s0 = V_SET1(0.0f), s1 = V_SET1(0.0f);
            size_t i = j0;
            for (; i + 2 <= t; i += 2) {
                s0 = V_FMA(V_SET1(a[i]), V_LOADU(T + i * ldn + j0), s0);
                s1 = V_FMA(V_SET1(a[i + 1]), V_LOADU(T + (i + 1) * ldn + j0), s1);
            }
            if (i < t)
                s0 = V_FMA(V_SET1(a[i]), V_LOADU(T + i * ldn + j0), s0);
            V_STOREU(x + j0, V_SUB(V_SET1(0.0f), V_ADD(s0, s1))); /* x = -(s0 + s1) */
        }
        x[t] = 1.0f;
    }
}

/* dst[c ldd + t] = src[t lds + c] for t < rows, c < cols. AVX-512: 16 x 16 blocks in
 * registers (32-bit, then 64-bit interleaves within 128-bit lanes, then two 128-bit lane
 * shuffles); other paths and the edges element by element. */
static void transpose(const float *src, size_t lds, size_t rows, size_t cols, float *dst,
                      size_t ldd)
{
    size_t t0 = 0;
#if LM_W == 16 && defined(__AVX512F__)
    for (; t0 + 16 <= rows; t0 += 16) {
        size_t c0 = 0;
        for (; c0 + 16 <= cols; c0 += 16) {
            __m512 r[16], s[16];
#pragma GCC unroll 16
            for (size_t i = 0; i < 16; i++)
                r[i] = _mm512_loadu_ps(src + (t0 + i) * lds + c0);
#pragma GCC unroll 8
            for (size_t i = 0; i < 16; i += 2) { /* rows i, i+1 interleaved per 32 bits */
                s[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
                s[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
            }
#pragma GCC unroll 4
            for (size_t j = 0; j < 16; j += 4) { /* r[j + m] lane l: column 4l + m, rows j.. */
                const __m512d a = _mm512_castps_pd(s[j]), b = _mm512_castps_pd(s[j + 1]);
                const __m512d c = _mm512_castps_pd(s[j + 2]), d = _mm512_castps_pd(s[j + 3]);
                r[j] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
                r[j + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
                r[j + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
                r[j + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
            }
#pragma GCC unroll 4
            for (size_t m = 0; m < 4; m++) { /* 4 x 4 transpose of 128-bit lanes */
                const __m512 u0 = _mm512_shuffle_f32x4(r[m], r[4 + m], 0x44);
                const __m512 u1 = _mm512_shuffle_f32x4(r[m], r[4 + m], 0xEE);
                const __m512 u2 = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0x44);
                const __m512 u3 = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0xEE);
                float *o = dst + (c0 + m) * ldd + t0;
                _mm512_storeu_ps(o, _mm512_shuffle_f32x4(u0, u2, 0x88));
                _mm512_storeu_ps(o + 4 * ldd, _mm512_shuffle_f32x4(u0, u2, 0xDD));
                _mm512_storeu_ps(o + 8 * ldd, _mm512_shuffle_f32x4(u1, u3, 0x88));
                _mm512_storeu_ps(o + 12 * ldd, _mm512_shuffle_f32x4(u1, u3, 0xDD));
            }
        }
        for (size_t t = t0; t < t0 + 16; t++)
            for (size_t c = c0; c < cols; c++)
                dst[c * ldd + t] = src[t * lds + c];
    }
#endif
    for (size_t t = t0; t < rows; t++)
        for (size_t c = 0; c < cols; c++)
            dst[c * ldd + t] = src[t * lds + c];
}

/* The chunk's unit keys in both layouts: kt {dk, ldn} = K^T of the raw keys, normalized
 * column by column with whole vectors across tokens (no horizontal reductions): per token
 * top = max|k|, x = k / top, s = 1 / (top ||x||); then kh = s k and kt = s K^T. A subnormal
 * top (1/top would overflow) takes unit_key's division path. r {ldn} ends as s per token (1
 * on the division path, 0 past n); ss {ldn} scratch. Returns false when some token took
 * the division path (r is not its scale). */
static bool unit_keys(const float *k, size_t n, size_t dk, size_t ldn, float *kh, float *kt,
                      float *r, float *ss)
{
    bool scaled = true;
    transpose(k, dk, n, dk, kt, ldn);
    for (size_t c = 0; c < dk && n < ldn; c++) /* padded tokens: zero keys, finite everywhere */
        for (size_t t = n; t < ldn; t++)
            kt[c * ldn + t] = 0.0f;
    /* max and sum of squares over the dk rows: four partial results each, so the
     * loops run at throughput instead of one dependent max or FMA per row */
    for (size_t t0 = 0; t0 < ldn; t0 += LM_W) {
        LM_V top[4] = {V_SET1(0.0f), V_SET1(0.0f), V_SET1(0.0f), V_SET1(0.0f)};
        size_t c = 0;
        for (; c + 4 <= dk; c += 4)
#pragma GCC unroll 4
            for (size_t m = 0; m < 4; m++)
                top[m] = V_MAX(top[m], V_ABS(V_LOADU(kt + (c + m) * ldn + t0)));
        for (; c < dk; c++)
            top[0] = V_MAX(top[0], V_ABS(V_LOADU(kt + c * ldn + t0)));
        V_STOREU(r + t0, V_MAX(V_MAX(top[0], top[1]), V_MAX(top[2], top[3])));
    }
    for (size_t t = 0; t < ldn; t++) /* 1/top; padded tokens: 1 */
        r[t] = t < n && r[t] > 0.0f ? 1.0f / r[t] : 1.0f;
    for (size_t t0 = 0; t0 < ldn; t0 += LM_W) {
        const LM_V rv = V_LOADU(r + t0);
        LM_V acc[4] = {V_SET1(0.0f), V_SET1(0.0f), V_SET1(0.0f), V_SET1(0.0f)};
        size_t c = 0;
        for (; c + 4 <= dk; c += 4)
#pragma GCC unroll 4
            for (size_t m = 0; m < 4; m++) {
                const LM_V x = V_MUL(V_LOADU(kt + (c + m) * ldn + t0), rv);
                acc[m] = V_FMA(x, x, acc[m]);
            }
        for (; c < dk; c++) {
            const LM_V x = V_MUL(V_LOADU(kt + c * ldn + t0), rv);
            acc[0] = V_FMA(x, x, acc[0]);
        }
        V_STOREU(ss + t0, V_ADD(V_ADD(acc[0], acc[1]), V_ADD(acc[2], acc[3])));
    }
    for (size_t t = 0; t < ldn; t++) {
        r[t] = r[t] / sqrtf(ss[t]); /* s = (1/top) / ||k/top|| */
        if (t >= n)
            r[t] = 0.0f;
    }
    for (size_t t = 0; t < n; t++) {
        const float *kr = k + t * dk;
        float *o = kh + t * dk;
        if (!(isfinite(r[t]) && r[t] > 0.0f)) { /* subnormal top: divide */
            unit_key(kr, o, dk);
            for (size_t c = 0; c < dk; c++)
                kt[c * ldn + t] = o[c];
            r[t] = 1.0f;
            scaled = false;
            continue;
        }
        const LM_V sv = V_SET1(r[t]);
        size_t c = 0;
        for (; c + LM_W <= dk; c += LM_W)
            V_STOREU(o + c, V_MUL(V_LOADU(kr + c), sv));
        for (; c < dk; c++)
            o[c] = kr[c] * r[t];
    }
    for (size_t c = 0; c < dk; c++)
        for (size_t t0 = 0; t0 < ldn; t0 += LM_W)
            V_STOREU(kt + c * ldn + t0, V_MUL(V_LOADU(kt + c * ldn + t0), V_LOADU(r + t0)));
    return scaled;
}

/* The prefetcher for the next chunk's rows (row0.., `rows` of them) of elements of `esize`
 * bytes at k, v, q (float32 or bfloat16 arrays). */
static prefetcher next_rows(const lm_delta_seq_f32 *p, const void *k, const void *v,
                            const void *q, size_t esize, size_t row0, size_t rows)
{
    const size_t bk = rows * p->d_key * esize, bv = rows * p->d_value * esize;
    const prefetcher pf = {{(const char *)k + row0 * p->d_key * esize,
                            (const char *)v + row0 * p->d_value * esize,
                            (const char *)q + row0 * p->d_key * esize},
                           {bk, bv, bk},
                           0,
                           0};
    return pf;
}

/* The input modes of the chunked kernel (constants after inlining): float32 q, k, v
 * (CH_F32); bfloat16 widened to float32 chunk by chunk, then the f32 computation on the
 * widened rows (CH_WIDEN: bit for bit the f32 kernel on widened inputs); the same with the
 * state products on BF16 dot products (CH_DOT, delta_bf16.h). */
enum { CH_F32 = 0, CH_WIDEN = 1, CH_DOT = 2 };

/* dst[0:n] = float32 of the bfloat16 src[0:n] */
static inline void widen_rows(const uint16_t *src, size_t n, float *dst)
{
    size_t i = 0;
    for (; i + LM_W <= n; i += LM_W)
        V_STOREU(dst + i, V_LOAD_BF16(src + i));
    for (; i < n; i++)
        dst[i] = lm_f32_from_bf16(src[i]);
}

/* Where one head's workspace puts what (lm_delta_work_floats gives the size). */
typedef struct chunk_ws {
    float *St;              /* {dk, dv} */
    float *kh;              /* {C, dk}: unit keys (G_end-scaled at the end) */
    float *kt;              /* {dk, ldn}: unit keys transposed */
    float *kk;              /* {C, ldn}: beta_t G_ti (k_t . k_i), strictly lower */
    float *qk;              /* {C, ldn}: G_ti (q_t . k_i), lower */
    float *ti;              /* {C, ldn}: (I + kk)^{-1} */
    float *w;               /* {C, dv}: right-hand sides */
    float *u;               /* {C, dv}: the corrections */
    float *lg;              /* {C}: log g_t */
    float *gam;             /* {ldn}: gamma_t */
    float *nbg;             /* {C}: -beta_t gamma_t */
    float *dl;              /* {ldn}: one row of log G; unit_keys' scales until decay_masks */
    float *gend;            /* {ldn}: G_{n-1, i} */
    float *qw, *kw, *vw;    /* bf16 modes: the chunk's widened q, k {C, dk}, v {C, dv} */
    float *rk;              /* CH_DOT: {ldn} the key scales 1 / ||k_t|| */
    uint16_t *sp, *kp, *up; /* CH_DOT: bfloat16 pairs of S_0, of K (along d_key for the
                               scores, along tokens for the update), of U (scaled for it) */
    uint16_t *qk16;         /* CH_DOT: {C, ldn} qk in bfloat16 */
} chunk_ws;

static chunk_ws chunk_layout(float *work, size_t dk, size_t dv, size_t C, size_t ldn,
                             bool bf16)
{
    chunk_ws x = {0};
    x.St = work;
    x.kh = x.St + round16(dk * dv);
    x.kt = x.kh + round16(C * dk);
    x.kk = x.kt + dk * ldn;
    x.qk = x.kk + C * ldn;
    x.ti = x.qk + C * ldn;
    x.w = x.ti + C * ldn;
    x.u = x.w + round16(C * dv);
    x.lg = x.u + round16(C * dv);
    x.gam = x.lg + ldn;
    x.nbg = x.gam + ldn;
    x.dl = x.nbg + ldn;
    x.gend = x.dl + ldn;
    if (!bf16) /* the bf16 modes' part: lm_delta_work_floats counts it for dtype bf16 */
        return x;
    x.qw = x.gend + ldn;
    x.kw = x.qw + round16(C * dk);
    x.vw = x.kw + round16(C * dk);
    x.rk = x.vw + round16(C * dv);
    x.sp = (uint16_t *)(void *)(x.rk + ldn);                           /* {dk/2, 2 dv} */
    x.kp = x.sp + 2 * round16((dk + 1) / 2 * dv);                      /* {dk, ldn} */
    x.up = x.kp + 2 * round16(dk * ldn / 2);                           /* {ldn/2, 2 dv} */
    x.qk16 = x.up + 2 * round16(ldn / 2 * dv);                         /* {C, ldn} */
    return x;
}

#ifdef DELTA_BF16_DOT
#include "delta_bf16.h"
#endif

/* One head of the chunked form in input mode `mode` (see above). */
static inline __attribute__((always_inline)) void
chunked_run(const lm_delta_seq_f32 *p, size_t h, size_t chunk, float *work, int mode)
{
    const size_t L = p->length, dk = p->d_key, dv = p->d_value;
    const size_t C = chunk < L ? chunk : L, ldn = round16(C);
    const bool gated = p->gate != NULL;
    const chunk_ws x = chunk_layout(work, dk, dv, C, ldn, mode != CH_F32);
    float *const St = x.St, *const kh = x.kh, *const kt = x.kt, *const kk = x.kk;
    float *const qk = x.qk, *const ti = x.ti, *const w = x.w, *const u = x.u, *const lg = x.lg;
    float *const gam = x.gam, *const nbg = x.nbg, *const dl = x.dl, *const gend = x.gend;
    const size_t esize = mode == CH_F32 ? sizeof(float) : sizeof(uint16_t);
    const void *qsrc = mode == CH_F32 ? (const void *)p->q : (const void *)p->q16;
    const void *ksrc = mode == CH_F32 ? (const void *)p->k : (const void *)p->k16;
    const void *vsrc = mode == CH_F32 ? (const void *)p->v : (const void *)p->v16;
#ifdef DELTA_BF16_DOT
    /* the pair layouts need even d_key and whole vectors of d_value */
    const bool dims_fit = mode == CH_DOT && dk % 16 == 0 && dv % 16 == 0;
#endif
    load_state(p, h, St);
    for (size_t t0 = 0; t0 < L; t0 += C) {
        const size_t n = L - t0 < C ? L - t0 : C;
        const size_t row0 = h * L + t0;
        const float *q, *k, *v;  /* {n, dk}, {n, dk}, {n, dv}: the chunk's rows as float32 */
        if (mode == CH_F32) {
            q = p->q + row0 * dk;
            k = p->k + row0 * dk;
            v = p->v + row0 * dv;
        } else {
            widen_rows(p->q16 + row0 * dk, n * dk, x.qw);
            widen_rows(p->k16 + row0 * dk, n * dk, x.kw);
            widen_rows(p->v16 + row0 * dv, n * dv, x.vw);
            q = x.qw, k = x.kw, v = x.vw;
        }
        const float *beta = p->beta + row0;   /* {n} */
        float *y = p->y + row0 * dv;          /* {n, dv} */
        const size_t next = t0 + n < L ? (L - t0 - n < C ? L - t0 - n : C) : 0;
        prefetcher pf = next_rows(p, ksrc, vsrc, qsrc, esize, row0 + n, next);
        const bool scaled = unit_keys(k, n, dk, ldn, kh, kt, dl, gend);
#ifdef DELTA_BF16_DOT
        const bool dot = dims_fit && scaled;
        if (dot)
            memcpy(x.rk, dl, ldn * sizeof(float));
#else
        (void)scaled;
#endif
        chunk_decays(n, ldn, gated ? p->gate + row0 : NULL, lg, gam);
        for (size_t t = 0; t < n; t++) { /* w_t = beta_t v_t */
            const LM_V b = V_SET1(beta[t]);
            size_t j = 0;
            for (; j + LM_W <= dv; j += LM_W)
                V_STOREU(w + t * dv + j, V_MUL(b, V_LOADU(v + t * dv + j)));
            for (; j < dv; j++)
                w[t * dv + j] = beta[t] * v[t * dv + j];
        }
        for (size_t t = 0; t < n; t++)
            nbg[t] = -beta[t] * gam[t];
        /* kk = K K^T, qk = Q K^T (lower parts), then the decays and masks */
#ifdef DELTA_BF16_DOT
        if (dot) {
            dot_scores(p->k16 + row0 * dk, p->q16 + row0 * dk, n, dk, ldn, &x, kk, qk, &pf);
        } else
#endif
        {
            const size_t nw = (n + LM_W - 1) / LM_W * LM_W; /* kt's padded tokens are zero */
            const operand scores[2] = {{n, kh, dk, 1, kk, ldn, NULL, 0.0f},
                                       {n, q, dk, 1, qk, ldn, NULL, 0.0f}};
            mm_sets(SHAPE_LOWER_C, bk_score, nw, dk, kt, ldn, scores, 2, &pf);
        }
        decay_masks(n, ldn, gated ? p->gate + row0 : NULL, lg, beta, kk, qk, dl, gend);
        /* U = (I + kk)^{-1} W with W = beta (V - diag(gamma) K S_0) */
        unit_lower_inverse(n, ldn, kk, ti);
        /* W = beta V - diag(beta gamma) K S_0 and Y = diag(gamma) Q S_0 in one pass over S_0 */
#ifdef DELTA_BF16_DOT
        if (dot) {
            dot_state_products(p->k16 + row0 * dk, p->q16 + row0 * dk, n, dk, dv, &x, w, y,
                               &pf);
        } else
#endif
        {
            const operand states[2] = {{n, kh, dk, 1, w, dv, nbg, 1.0f},
                                       {n, q, dk, 1, y, dv, gam, 0.0f}};
            mm_sets(SHAPE_FULL, bk_state, dv, dk, St, dv, states, 2, &pf);
        }
        mm(SHAPE_TRIL_A, bk_tril, n, dv, n, ti, ldn, 1, w, dv, u, dv, NULL, 0.0f, &pf);
        /* Y += qk U */
#ifdef DELTA_BF16_DOT
        if (dot)
            dot_masked_values(n, dv, ldn, &x, qk, y, &pf);
        else
#endif
            mm(SHAPE_TRIL_A, bk_tril, n, dv, n, qk, ldn, 1, u, dv, y, dv, NULL, 1.0f, &pf);
        /* S_C = gamma_{n-1} S_0 + (G_end K)^T U */
#ifdef DELTA_BF16_DOT
        if (dot) {
            dot_state_update(n, dk, dv, gated, &x, &pf);
        } else
#endif
        {
            if (gated)
                for (size_t t = 0; t < n; t++)
                    scale_row(kh + t * dk, gend[t], dk);
            mm(SHAPE_FULL, bk_update, dk, dv, n, kh, 1, dk, u, dv, St, dv, NULL, gam[n - 1],
               &pf);
        }
        pf_step(&pf, SIZE_MAX); /* whatever the tiles left */
    }
    store_state(p, h, St);
}

#ifdef CHUNKED_NAME
void CHUNKED_NAME(const lm_delta_seq_f32 *p, size_t h, size_t chunk, float *work)
{
    chunked_run(p, h, chunk, work, CH_F32);
}
#endif

#ifdef CHUNKED_BF16_NAME
void CHUNKED_BF16_NAME(const lm_delta_seq_f32 *p, size_t h, size_t chunk, float *work)
{
#ifdef DELTA_BF16_DOT
    chunked_run(p, h, chunk, work, CH_DOT);
#else
    chunked_run(p, h, chunk, work, CH_WIDEN);
#endif
}
#endif

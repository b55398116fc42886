/* The attention kernels written once over a thin SIMD mapping layer. Each ISA file
 * (scalar.c, avx2.c, avx512.c, neon.c) defines the layer below, then includes this file,
 * which defines lm_attn_prefill_f32_<isa> and lm_attn_decode_{f32,f16,bf16}_<isa>.
 *
 * The layer, W lanes of float per vector `vf`:
 *   LM_ISA_SUFFIX         name suffix (scalar, avx2, ...)
 *   VW                    lanes
 *   V_ZERO() V_SET1(x) V_LOAD(p) V_STORE(p, x) V_BCAST(p)   (V_BCAST: all lanes = *p)
 *   V_FMA(a, b, c) = a * b + c      V_MUL V_ADD V_SUB V_MAX
 *   V_HSUM(x) V_HMAX(x)             lane sum / max as a float
 *   V_EXP(x)                        lane-wise e^x (e^-inf = 0)
 *   V_LOAD_F16(p) V_LOAD_BF16(p)    VW stored halves / bfloat16 widened to float
 *   V_LOAD_U8/U4/U2(row, c)         VW unsigned codes of a packed row from element c
 *   PF_RK PF_NV                     prefill scores: keys x query-vectors per micro-tile
 *   PV_R PV_CV                      prefill P V: query rows x d-vectors per micro-tile
 *   DEC_GB DEC_CV                   decode: query heads per pass, d-vectors per P V pass
 *
 * Prefill works on S^T: a query tile's Q is packed transposed once, Qt {d, TQ}, so scores
 * of a key against TQ queries come from broadcasting k[j, c] against Qt rows, the row
 * maxima and sums of the online softmax run lane-wise (no horizontal reductions), and
 * K and V rows are read in place. */
#ifndef LM_ISA_SUFFIX
#error "define the SIMD mapping layer before including kernel_body.h"
#endif

#include <float.h>

#define LM_CAT_(a, b) a##_##b
#define LM_CAT(a, b) LM_CAT_(a, b)
#define LM_NAME(base) LM_CAT(base, LM_ISA_SUFFIX)
#define LM_INLINE static inline __attribute__((always_inline))
/* register-blocked loops over constant micro-tile extents: unrolled so the arrays of vectors
 * live in registers */
#define LM_UNROLL _Pragma("GCC unroll 16")

enum { TQ = LM_ATTN_TILE_Q, TK = LM_ATTN_TILE_K, QV = LM_ATTN_TILE_Q / VW };
_Static_assert(LM_ATTN_TILE_Q % (VW * PF_NV) == 0, "query tile must hold whole micro-tiles");

static inline size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* St[jj, 0..TQ) = sum_c k[j0 + jj, c] * Qt[c, 0..TQ) for jj in [jj0, jj0 + rk), query
 * vectors [qv0, qv0 + nv). rk and nv are constants after inlining. */
LM_INLINE void prefill_scores_block(const float *restrict krow, size_t ldk,
                                    const float *restrict qt, float *restrict st, size_t d,
                                    size_t qv0, int rk, int nv)
{
    vf acc[PF_RK][PF_NV];
    LM_UNROLL
    for (int a = 0; a < rk; a++)
        LM_UNROLL
        for (int b = 0; b < nv; b++)
            acc[a][b] = V_ZERO();
    for (size_t c = 0; c < d; c++) {
        vf qvec[PF_NV];
        LM_UNROLL
        for (int b = 0; b < nv; b++)
            qvec[b] = V_LOAD(qt + c * TQ + (qv0 + (size_t)b) * VW);
        LM_UNROLL
        for (int a = 0; a < rk; a++) {
            vf kb = V_BCAST(krow + (size_t)a * ldk + c); /* k[j, c] in every lane */
            LM_UNROLL
            for (int b = 0; b < nv; b++)
                acc[a][b] = V_FMA(kb, qvec[b], acc[a][b]); /* St[j, q] += k[j, c] Qt[c, q] */
        }
    }
    LM_UNROLL
    for (int a = 0; a < rk; a++)
        LM_UNROLL
        for (int b = 0; b < nv; b++)
            V_STORE(st + (size_t)a * TQ + (qv0 + (size_t)b) * VW, acc[a][b]);
}

/* o[r, c0 .. c0 + cv VW) += sum_jj St[jj, r] v[jj, ...] for rows [r0, r0 + rr). */
LM_INLINE void prefill_pv_block(const float *restrict st, const float *restrict vrow, size_t ldv,
                                size_t cols, float *restrict orow, size_t ldo, size_t r0,
                                size_t c0, int rr, int cv)
{
    vf acc[PV_R][PV_CV];
    LM_UNROLL
    for (int a = 0; a < rr; a++)
        LM_UNROLL
        for (int b = 0; b < cv; b++)
            acc[a][b] = V_LOAD(orow + (r0 + (size_t)a) * ldo + c0 + (size_t)b * VW);
    for (size_t jj = 0; jj < cols; jj++) {
        vf vvec[PV_CV];
        LM_UNROLL
        for (int b = 0; b < cv; b++)
            vvec[b] = V_LOAD(vrow + jj * ldv + c0 + (size_t)b * VW);
        LM_UNROLL
        for (int a = 0; a < rr; a++) {
            vf p = V_BCAST(st + jj * TQ + r0 + (size_t)a); /* weight of key jj for row r */
            LM_UNROLL
            for (int b = 0; b < cv; b++)
                acc[a][b] = V_FMA(p, vvec[b], acc[a][b]);
        }
    }
    LM_UNROLL
    for (int a = 0; a < rr; a++)
        LM_UNROLL
        for (int b = 0; b < cv; b++)
            V_STORE(orow + (r0 + (size_t)a) * ldo + c0 + (size_t)b * VW, acc[a][b]);
}

LM_INLINE void prefill_pv_rows(const float *restrict st, const float *restrict vrow, size_t ldv,
                               size_t cols, float *restrict orow, size_t ldo, size_t r0, int rr,
                               size_t d)
{
    size_t c0 = 0;
    for (; c0 + PV_CV * VW <= d; c0 += PV_CV * VW)
        prefill_pv_block(st, vrow, ldv, cols, orow, ldo, r0, c0, rr, PV_CV);
    for (; c0 < d; c0 += VW)
        prefill_pv_block(st, vrow, ldv, cols, orow, ldo, r0, c0, rr, 1);
}

void LM_NAME(lm_attn_prefill_f32)(const lm_attn_prefill_args *a, size_t head, size_t tile_begin,
                                  size_t tile_end, float *workspace, lm_attn_counts *counts)
{
    const size_t n = a->n, d = a->head_dim, heads = a->heads, kv_heads = a->kv_heads;
    const size_t g = head / (heads / kv_heads);
    const size_t ldq = heads * d, ldk = kv_heads * d;
    const float *qh = a->q + head * d; /* q[i, head, :] at qh + i ldq */
    const float *kh = a->k + g * d;    /* k[j, g, :] at kh + j ldk */
    const float *vh = a->v + g * d;
    float *oh = a->o + head * d;
    float *qt = workspace;     /* {d, TQ} */
    float *st = qt + d * TQ;   /* {TK, TQ}: scores, then weights */
    float *mrun = st + TK * TQ; /* {TQ} running max */
    float *lrun = mrun + TQ;    /* {TQ} running sum */
    float *alpha = lrun + TQ;   /* {TQ} rescale of this tile */
    const vf scale = V_SET1(a->scale);
    uint64_t tiles_total = 0, tiles_computed = 0, pairs = 0;

    for (size_t t = tile_begin; t < tile_end; t++) {
        const size_t i0 = t * TQ, i1 = min_size(i0 + TQ, n), rows = i1 - i0;
        for (size_t c = 0; c < d; c++) /* Qt[c, r] = q[i0 + r, c]; rows past n are zero */
            for (size_t r = 0; r < TQ; r++)
                qt[c * TQ + r] = r < rows ? qh[(i0 + r) * ldq + c] : 0.0f;
        for (size_t r = 0; r < TQ; r++) {
            mrun[r] = -FLT_MAX; /* finite, so exp(m_old - m_new) never sees inf - inf */
            lrun[r] = 0.0f;
        }
        for (size_t r = 0; r < rows; r++)
            memset(oh + (i0 + r) * ldq, 0, d * sizeof(float));

        for (size_t j0 = 0; j0 < i1; j0 += TK) {
            const size_t j1 = min_size(j0 + TK, i1), cols = j1 - j0;
            tiles_total++;
            lm_attn_tile_class cls = lm_attn_tile_classify(&a->mask, i0, i1, j0, j1);
            if (cls == LM_TILE_EMPTY)
                continue;
            tiles_computed++;
            pairs += (uint64_t)rows * cols;

            /* scores St[jj, r] = k[j0 + jj] . q[i0 + r] */
            const float *krow = kh + j0 * ldk;
            for (size_t qv0 = 0; qv0 < QV; qv0 += PF_NV) {
                size_t jj = 0;
                for (; jj + PF_RK <= cols; jj += PF_RK)
                    prefill_scores_block(krow + jj * ldk, ldk, qt, st + jj * TQ, d, qv0, PF_RK,
                                         PF_NV);
                for (; jj < cols; jj++)
                    prefill_scores_block(krow + jj * ldk, ldk, qt, st + jj * TQ, d, qv0, 1,
                                         PF_NV);
            }
            if (cls == LM_TILE_PARTIAL) /* masked pairs score -inf: weight exactly 0 */
                for (size_t jj = 0; jj < cols; jj++)
                    for (size_t r = 0; r < rows; r++)
                        if (!lm_attn_mask_allows(&a->mask, i0 + r, j0 + jj))
                            st[jj * TQ + r] = -INFINITY;

            /* online softmax, lane-wise over the TQ queries */
            for (size_t qv = 0; qv < QV; qv++) {
                vf mold = V_LOAD(mrun + qv * VW), mnew = mold;
                for (size_t jj = 0; jj < cols; jj++) {
                    vf s = V_MUL(V_LOAD(st + jj * TQ + qv * VW), scale);
                    V_STORE(st + jj * TQ + qv * VW, s);
                    mnew = V_MAX(mnew, s);
                }
                vf sum = V_ZERO();
                for (size_t jj = 0; jj < cols; jj++) {
                    vf p = V_EXP(V_SUB(V_LOAD(st + jj * TQ + qv * VW), mnew)); /* e^(s - m) */
                    V_STORE(st + jj * TQ + qv * VW, p);
                    sum = V_ADD(sum, p);
                }
                vf al = V_EXP(V_SUB(mold, mnew));
                V_STORE(alpha + qv * VW, al);
                V_STORE(lrun + qv * VW, V_FMA(V_LOAD(lrun + qv * VW), al, sum));
                V_STORE(mrun + qv * VW, mnew);
            }
            for (size_t r = 0; r < rows; r++) { /* o[r] *= e^(m_old - m_new) */
                float *orow = oh + (i0 + r) * ldq;
                vf al = V_BCAST(alpha + r);
                for (size_t c = 0; c < d; c += VW)
                    V_STORE(orow + c, V_MUL(V_LOAD(orow + c), al));
            }

            /* o[r] += sum_jj P[jj, r] v[j0 + jj] */
            const float *vrow = vh + j0 * ldk;
            float *orow = oh + i0 * ldq;
            size_t r0 = 0;
            for (; r0 + PV_R <= rows; r0 += PV_R)
                prefill_pv_rows(st, vrow, ldk, cols, orow, ldq, r0, PV_R, d);
            for (; r0 < rows; r0++)
                prefill_pv_rows(st, vrow, ldk, cols, orow, ldq, r0, 1, d);
        }
        for (size_t r = 0; r < rows; r++) { /* o[r] /= l[r] */
            float *orow = oh + (i0 + r) * ldq;
            vf inv = V_SET1(1.0f / lrun[r]);
            for (size_t c = 0; c < d; c += VW)
                V_STORE(orow + c, V_MUL(V_LOAD(orow + c), inv));
        }
    }
    counts->tiles_total += tiles_total;
    counts->tiles_computed += tiles_computed;
    counts->pairs_computed += pairs;
}

/* ---- decode ------------------------------------------------------------------------ */

enum { DEC_F32 = 0, DEC_F16 = 1, DEC_BF16 = 2, BKD = LM_ATTN_DECODE_BLOCK };

/* VW stored elements of row `row` (of width d) at column c, widened to float. */
LM_INLINE vf load_kv(const void *base, size_t row, size_t d, size_t c, int dtype)
{
    if (dtype == DEC_F32)
        return V_LOAD((const float *)base + row * d + c);
    if (dtype == DEC_F16)
        return V_LOAD_F16((const uint16_t *)base + row * d + c);
    return V_LOAD_BF16((const uint16_t *)base + row * d + c);
}

/* s[gb, jj] = q[g0 + gb] . k[j0 + jj] for gb < gn (gn <= DEC_GB). */
LM_INLINE void decode_scores(const float *restrict q, const void *k, size_t j0, size_t cnt,
                             size_t d, size_t g0, int gn, float *restrict s, int dtype)
{
    for (size_t jj = 0; jj < cnt; jj++) {
        vf acc[DEC_GB];
        LM_UNROLL
        for (int b = 0; b < gn; b++)
            acc[b] = V_ZERO();
        for (size_t c = 0; c < d; c += VW) {
            vf kv = load_kv(k, j0 + jj, d, c, dtype); /* the key row, read once per pass */
            LM_UNROLL
            for (int b = 0; b < gn; b++)
                acc[b] = V_FMA(V_LOAD(q + (g0 + (size_t)b) * d + c), kv, acc[b]);
        }
#ifdef V_HSUM4
        if (gn == 4) {
            float sums[4];
            V_HSUM4(acc[0], acc[1], acc[2], acc[3], sums);
            for (int b = 0; b < 4; b++)
                s[(g0 + (size_t)b) * BKD + jj] = sums[b];
            continue;
        }
#endif
        LM_UNROLL
        for (int b = 0; b < gn; b++)
            s[(g0 + (size_t)b) * BKD + jj] = V_HSUM(acc[b]);
    }
}

/* acc[g0 + gb, c0 ..) += sum_jj p[g0 + gb, jj] v[j0 + jj, c0 ..) over cv vectors. */
LM_INLINE void decode_pv(const float *restrict p, const void *v, size_t j0, size_t cnt,
                         size_t d, size_t g0, int gn, size_t c0, int cv, float *restrict accs,
                         int dtype)
{
    vf acc[DEC_GB][DEC_CV];
    LM_UNROLL
    for (int b = 0; b < gn; b++)
        LM_UNROLL
        for (int e = 0; e < cv; e++)
            acc[b][e] = V_LOAD(accs + (g0 + (size_t)b) * d + c0 + (size_t)e * VW);
    for (size_t jj = 0; jj < cnt; jj++) {
        vf vv[DEC_CV];
        LM_UNROLL
        for (int e = 0; e < cv; e++)
            vv[e] = load_kv(v, j0 + jj, d, c0 + (size_t)e * VW, dtype);
        LM_UNROLL
        for (int b = 0; b < gn; b++) {
            vf w = V_BCAST(p + (g0 + (size_t)b) * BKD + jj);
            LM_UNROLL
            for (int e = 0; e < cv; e++)
                acc[b][e] = V_FMA(w, vv[e], acc[b][e]);
        }
    }
    LM_UNROLL
    for (int b = 0; b < gn; b++)
        LM_UNROLL
        for (int e = 0; e < cv; e++)
            V_STORE(accs + (g0 + (size_t)b) * d + c0 + (size_t)e * VW, acc[b][e]);
}

LM_INLINE void decode_group_pass(const float *restrict q, const void *k, const void *v,
                                 size_t j0, size_t cnt, size_t d, size_t g0, int gn,
                                 float *restrict s, float *restrict accs, int dtype, int phase)
{
    if (phase == 0) {
        decode_scores(q, k, j0, cnt, d, g0, gn, s, dtype);
        return;
    }
    size_t c0 = 0;
    for (; c0 + DEC_CV * VW <= d; c0 += DEC_CV * VW)
        decode_pv(s, v, j0, cnt, d, g0, gn, c0, DEC_CV, accs, dtype);
    for (; c0 < d; c0 += VW)
        decode_pv(s, v, j0, cnt, d, g0, gn, c0, 1, accs, dtype);
}

LM_INLINE void decode_body(const float *restrict q, const void *k, const void *v, size_t n,
                           size_t d, size_t group, float scale, float *restrict m,
                           float *restrict l, float *restrict accs, float *restrict s,
                           int dtype)
{
    for (size_t g = 0; g < group; g++) {
        m[g] = -FLT_MAX;
        l[g] = 0.0f;
    }
    memset(accs, 0, group * d * sizeof(float));
    const vf vscale = V_SET1(scale);
    for (size_t j0 = 0; j0 < n; j0 += BKD) {
        const size_t cnt = min_size(BKD, n - j0);
        for (int phase = 0; phase < 2; phase++) {
            size_t g0 = 0;
            for (; g0 + DEC_GB <= group; g0 += DEC_GB)
                decode_group_pass(q, k, v, j0, cnt, d, g0, DEC_GB, s, accs, dtype, phase);
            for (; g0 < group; g0++)
                decode_group_pass(q, k, v, j0, cnt, d, g0, 1, s, accs, dtype, phase);
            if (phase == 1)
                break;
            for (size_t g = 0; g < group; g++) { /* online softmax over this block */
                float *sg = s + g * BKD;
                for (size_t jj = cnt; jj < BKD; jj++)
                    sg[jj] = -INFINITY; /* padding weighs exactly 0 */
                vf mx = V_SET1(m[g]);
                for (size_t jj = 0; jj < BKD; jj += VW) {
                    vf x = V_MUL(V_LOAD(sg + jj), vscale);
                    V_STORE(sg + jj, x);
                    mx = V_MAX(mx, x);
                }
                const float mnew = V_HMAX(mx);
                const vf vm = V_SET1(mnew);
                vf sum = V_ZERO();
                for (size_t jj = 0; jj < BKD; jj += VW) {
                    vf p = V_EXP(V_SUB(V_LOAD(sg + jj), vm));
                    V_STORE(sg + jj, p);
                    sum = V_ADD(sum, p);
                }
                const float al = expf(m[g] - mnew);
                l[g] = l[g] * al + V_HSUM(sum);
                m[g] = mnew;
                if (al != 1.0f) {
                    const vf va = V_SET1(al);
                    for (size_t c = 0; c < d; c += VW)
                        V_STORE(accs + g * d + c, V_MUL(V_LOAD(accs + g * d + c), va));
                }
            }
        }
    }
}

#define LM_DECODE_DEFINE(dtype, isa) LM_ATTN_DECODE_DECLARE(dtype, isa)

LM_DECODE_DEFINE(f32, LM_ISA_SUFFIX)
{
    decode_body(q, k, v, n, d, group, scale, m, l, acc, workspace, DEC_F32);
}

LM_DECODE_DEFINE(f16, LM_ISA_SUFFIX)
{
    decode_body(q, k, v, n, d, group, scale, m, l, acc, workspace, DEC_F16);
}

LM_DECODE_DEFINE(bf16, LM_ISA_SUFFIX)
{
    decode_body(q, k, v, n, d, group, scale, m, l, acc, workspace, DEC_BF16);
}

/* Causal (masked) GQA prefill over the SIMD mapping layer; included by kernel_body.h,
 * which supplies the layer, LM_NAME, LM_INLINE, LM_UNROLL and min_size.
 *
 * One call computes a block of query heads that share one KV head (at most
 * LM_ATTN_PREFILL_HEADS) over a block of query tiles of TQ rows (at most
 * LM_ATTN_PREFILL_TILES), all (tile, head) slots together:
 *   - each key tile of TK rows is copied once into contiguous workspace, Kp and Vp {TK, d},
 *     and then serves every slot: K and V come from memory once per 4 heads x 2 query tiles
 *     (on this project's VM the last-level cache holds little beyond the 1 MiB L2, so a
 *     KV head's 4 MiB at n = 4,096 streams from DRAM for every pass), and the tile after
 *     next is prefetched while this one computes. In the cache layout {n, kv_heads, d} consecutive
 *     keys lie kv_heads d floats apart (4 KiB for 8 x 128), so read in place a tile's rows
 *     would all fall in the same few L1 sets and the tile would not stay in L1;
 *   - per head the work is on S^T: the query tile is packed transposed and pre-scaled,
 *     Qt {d, TQ} = q^T / sqrt(d), so the scores of a key against TQ queries come from
 *     broadcasting k[j, c] against Qt rows, and the online-softmax maxima and sums run
 *     lane-wise over queries (no horizontal reductions);
 *   - the output accumulates in a contiguous acc {TQ, d} per slot: P V sums into zeroed
 *     registers, then stores acc e^(m_old - m_new) + P V; acc is divided by the row sums
 *     and written to o once per query tile.
 * Partial tiles (the diagonal, window edges) add a bias {TK, TQ} of 0 / -inf built once
 * per key tile for the whole head block.
 *
 * Three input modes share this loop (prefill_run's `mode`): PF_F32 (float32 q, k, v),
 * PF_WIDEN (bfloat16 q, k, v widened to float32 as they are packed, then the f32 kernel)
 * and PF_DOT (bfloat16 with BF16 dot products, prefill_bf16.h: the file that defines
 * LM_ATTN_PREFILL_BF16_DOT). */

enum { TQ = LM_ATTN_TILE_Q, TK = LM_ATTN_TILE_K, QV = LM_ATTN_TILE_Q / LM_W };
_Static_assert(LM_ATTN_TILE_Q % (LM_W * PF_NV) == 0, "query tile must hold whole micro-tiles");

/* St[jj, qv0 LM_W ..) = sum_c kp[jj, c] Qt[c, qv0 LM_W ..) for jj < rk, nv query vectors. rk and
 * nv are constants after inlining. */
LM_INLINE void prefill_scores_block(const float *restrict kp, const float *restrict qt,
                                    float *restrict st, size_t d, size_t qv0, int rk, int nv)
{
    LM_V acc[PF_RK][PF_NV];
    LM_UNROLL
    for (int a = 0; a < rk; a++)
        LM_UNROLL
        for (int b = 0; b < nv; b++)
            acc[a][b] = V_ZERO();
    for (size_t c = 0; c < d; c++) {
        LM_V qvec[PF_NV];
        LM_UNROLL
        for (int b = 0; b < nv; b++)
            qvec[b] = V_LOADU(qt + c * TQ + (qv0 + (size_t)b) * LM_W);
        LM_UNROLL
        for (int a = 0; a < rk; a++) {
            LM_V kb = V_BCAST(kp + (size_t)a * d + c); /* k[j, c] in every lane */
            LM_UNROLL
            for (int b = 0; b < nv; b++)
                acc[a][b] = V_FMA(kb, qvec[b], acc[a][b]); /* St[j, q] += k[j, c] Qt[c, q] */
        }
    }
    LM_UNROLL
    for (int a = 0; a < rk; a++)
        LM_UNROLL
        for (int b = 0; b < nv; b++)
            V_STOREU(st + (size_t)a * TQ + (qv0 + (size_t)b) * LM_W, acc[a][b]);
}

/* St {cols, TQ} = Kp {cols, d} Qt {d, TQ}. */
LM_INLINE void prefill_scores(const float *restrict kp, const float *restrict qt,
                              float *restrict st, size_t cols, size_t d)
{
    for (size_t qv0 = 0; qv0 < QV; qv0 += PF_NV) {
        size_t jj = 0;
        for (; jj + PF_RK <= cols; jj += PF_RK)
            prefill_scores_block(kp + jj * d, qt, st + jj * TQ, d, qv0, PF_RK, PF_NV);
        for (; jj + 2 <= cols; jj += 2) /* two rows still keep 2 PF_NV chains in flight */
            prefill_scores_block(kp + jj * d, qt, st + jj * TQ, d, qv0, 2, PF_NV);
        for (; jj < cols; jj++)
            prefill_scores_block(kp + jj * d, qt, st + jj * TQ, d, qv0, 1, PF_NV);
    }
}

/* e^x lane-wise for the softmax (x <= 0, -inf for masked pairs). SLEEF's (1 ulp) on every
 * path; the BF16-dot path, whose weights are then rounded to bfloat16 (2^-8), takes the
 * inline fast_exp.h one (2 ulp, 14 instructions instead of a call), with x below its
 * clamp (e^x < 1.3e-38) set to exactly 0 so masked pairs still weigh nothing. */
LM_INLINE LM_V prefill_exp(LM_V x, int fast)
{
#ifdef LM_ATTN_PREFILL_BF16_DOT
    if (fast) {
        const __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(LM_FAST_EXP_LO), _CMP_GE_OQ);
        return _mm512_maskz_mov_ps(live, V_EXP_FAST_NONPOS(x));
    }
#else
    (void)fast;
#endif
    return V_EXP(x);
}

/* Online softmax of one head over one key tile, lane-wise over the TQ queries: St (plus
 * bias when non-NULL) becomes the weights e^(s - m_new); m, l {TQ} are updated and
 * alpha {TQ} = e^(m_old - m_new) receives the rescale of the rows' earlier sums. */
LM_INLINE void prefill_softmax(float *restrict st, const float *restrict bias, size_t cols,
                               float *restrict m, float *restrict l, float *restrict alpha,
                               int fast)
{
    for (size_t qv = 0; qv < QV; qv++) {
        const size_t off = qv * LM_W;
        LM_V mold = V_LOADU(m + off), mnew = mold;
        if (bias != NULL)
            for (size_t jj = 0; jj < cols; jj++) {
                LM_V s = V_ADD(V_LOADU(st + jj * TQ + off), V_LOADU(bias + jj * TQ + off));
                V_STOREU(st + jj * TQ + off, s); /* masked pairs: -inf, weight exactly 0 */
                mnew = V_MAX(mnew, s);
            }
        else
            for (size_t jj = 0; jj < cols; jj++)
                mnew = V_MAX(mnew, V_LOADU(st + jj * TQ + off));
        LM_V sum = V_ZERO();
        for (size_t jj = 0; jj < cols; jj++) {
            LM_V p = prefill_exp(V_SUB(V_LOADU(st + jj * TQ + off), mnew), fast); /* e^(s - m) */
            V_STOREU(st + jj * TQ + off, p);
            sum = V_ADD(sum, p);
        }
        LM_V al = prefill_exp(V_SUB(mold, mnew), fast);
        V_STOREU(alpha + off, al);
        V_STOREU(l + off, V_FMA(V_LOADU(l + off), al, sum));
        V_STOREU(m + off, mnew);
    }
}

/* Prefetch of a later key tile's K and V rows while this one computes: keys
 * kv_heads d floats apart sit on different pages, which the hardware prefetchers do not
 * follow, so the copy into Kp / Vp would wait on every row. The lines are requested a few
 * at a time between P V micro-tiles: a burst of hundreds would fill the miss queues and
 * stall the loads of the computation. */
typedef struct prefill_prefetch {
    const char *k, *v; /* row 0 of the next tile */
    size_t ld, bytes;  /* row stride, row length (bytes) */
    size_t rows, row, col;
    size_t quota; /* lines of K (and of V) per step */
} prefill_prefetch;

LM_INLINE void prefill_prefetch_step(prefill_prefetch *pf)
{
    enum { LINE = 64 };
    for (size_t i = 0; i < pf->quota && pf->row < pf->rows; i++) {
        __builtin_prefetch(pf->k + pf->row * pf->ld + pf->col, 0, 2);
        __builtin_prefetch(pf->v + pf->row * pf->ld + pf->col, 0, 2);
        pf->col += LINE;
        if (pf->col >= pf->bytes) {
            pf->col = 0;
            pf->row++;
        }
    }
}

/* acc[r, c0 .. c0 + cv LM_W) = alpha[r] acc[r, ...] + sum_jj P[jj, r] vp[jj, ...] for rows
 * [r0, r0 + rr). */
LM_INLINE void prefill_pv_block(const float *restrict st, const float *restrict vp,
                                size_t cols, size_t d, float *restrict acc,
                                const float *restrict alpha, size_t r0, size_t c0, int rr,
                                int cv)
{
    LM_V o[PV_R][PV_CV];
    LM_UNROLL
    for (int a = 0; a < rr; a++)
        LM_UNROLL
        for (int b = 0; b < cv; b++)
            o[a][b] = V_ZERO();
    for (size_t jj = 0; jj < cols; jj++) {
        LM_V vvec[PV_CV];
        LM_UNROLL
        for (int b = 0; b < cv; b++)
            vvec[b] = V_LOADU(vp + jj * d + c0 + (size_t)b * LM_W);
        LM_UNROLL
        for (int a = 0; a < rr; a++) {
            LM_V p = V_BCAST(st + jj * TQ + r0 + (size_t)a); /* weight of key jj for row r */
            LM_UNROLL
            for (int b = 0; b < cv; b++)
                o[a][b] = V_FMA(p, vvec[b], o[a][b]);
        }
    }
    /* acc is read only now: the sums above do not wait for it (it comes from L2, and the
     * next micro-tile's sums overlap these loads) */
    LM_UNROLL
    for (int a = 0; a < rr; a++) {
        LM_V al = V_BCAST(alpha + r0 + (size_t)a);
        LM_UNROLL
        for (int b = 0; b < cv; b++) {
            float *p = acc + (r0 + (size_t)a) * d + c0 + (size_t)b * LM_W;
            V_STOREU(p, V_FMA(V_LOADU(p), al, o[a][b]));
        }
    }
}

LM_INLINE void prefill_pv_rows(const float *restrict st, const float *restrict vp, size_t cols,
                               size_t d, float *restrict acc, const float *restrict alpha,
                               size_t r0, int rr)
{
    size_t c0 = 0;
    for (; c0 + PV_CV * LM_W <= d; c0 += PV_CV * LM_W)
        prefill_pv_block(st, vp, cols, d, acc, alpha, r0, c0, rr, PV_CV);
    for (; c0 < d; c0 += LM_W)
        prefill_pv_block(st, vp, cols, d, acc, alpha, r0, c0, rr, 1);
}

/* acc {rows, d} = alpha acc + P^T Vp. */
LM_INLINE void prefill_pv(const float *restrict st, const float *restrict vp, size_t cols,
                          size_t rows, size_t d, float *restrict acc,
                          const float *restrict alpha, prefill_prefetch *pf)
{
    size_t r0 = 0;
    for (; r0 + PV_R <= rows; r0 += PV_R) {
        prefill_pv_rows(st, vp, cols, d, acc, alpha, r0, PV_R);
        prefill_prefetch_step(pf);
    }
    for (; r0 < rows; r0++) {
        prefill_pv_rows(st, vp, cols, d, acc, alpha, r0, 1);
        prefill_prefetch_step(pf);
    }
}

/* The input modes of prefill_run (constants after inlining). */
enum { PF_F32 = 0, PF_WIDEN = 1, PF_DOT = 2 };

/* Qt {d, TQ} = q rows [i0, i0 + rows) of one head, transposed and scaled (rows past n: 0),
 * from float32 q (mode PF_F32) or bfloat16 q16 (PF_WIDEN); m = -FLT_MAX, l = 0, acc = 0. */
LM_INLINE void prefill_start(const void *qh, size_t ldq, size_t i0, size_t rows, size_t d,
                             float scale, float *restrict qt, float *restrict acc,
                             float *restrict m, float *restrict l, int mode)
{
    for (size_t r = 0; r < TQ; r++) {
        if (r < rows && mode == PF_F32) {
            const float *qrow = (const float *)qh + (i0 + r) * ldq;
            for (size_t c = 0; c < d; c++)
                qt[c * TQ + r] = qrow[c] * scale;
        } else if (r < rows) {
            const uint16_t *qrow = (const uint16_t *)qh + (i0 + r) * ldq;
            for (size_t c = 0; c < d; c++)
                qt[c * TQ + r] = lm_f32_from_bf16(qrow[c]) * scale;
        } else { /* rows past n score 0 and are never written */
            for (size_t c = 0; c < d; c++)
                qt[c * TQ + r] = 0.0f;
        }
        m[r] = -FLT_MAX; /* finite, so e^(m_old - m_new) never sees inf - inf */
        l[r] = 0.0f;
    }
    memset(acc, 0, rows * d * sizeof(float));
}

/* Kp, Vp {cnt, d} = key rows [j0, j0 + cnt) of one KV head (row stride ld elements), as
 * float32 (PF_WIDEN widens bfloat16; d is a multiple of LM_W on every path). */
LM_INLINE void prefill_pack_f32(const void *kh, const void *vh, size_t ld, size_t j0,
                                size_t cnt, size_t d, float *restrict kp, float *restrict vp,
                                int mode)
{
    for (size_t jj = 0; jj < cnt; jj++) {
        if (mode == PF_F32) {
            memcpy(kp + jj * d, (const float *)kh + (j0 + jj) * ld, d * sizeof(float));
            memcpy(vp + jj * d, (const float *)vh + (j0 + jj) * ld, d * sizeof(float));
            continue;
        }
        const uint16_t *krow = (const uint16_t *)kh + (j0 + jj) * ld;
        const uint16_t *vrow = (const uint16_t *)vh + (j0 + jj) * ld;
        for (size_t c = 0; c < d; c += LM_W) {
            V_STOREU(kp + jj * d + c, V_LOAD_BF16(krow + c));
            V_STOREU(vp + jj * d + c, V_LOAD_BF16(vrow + c));
        }
    }
}

#ifdef LM_ATTN_PREFILL_BF16_DOT
#include "prefill_bf16.h"
#endif

/* Where a call's workspace puts what (lm_attn_prefill_workspace_floats gives the size). */
typedef struct prefill_ws {
    float *kp, *vp;   /* this key tile's keys and values (PF_DOT: bfloat16, V paired) */
    float *st, *bias; /* {TK, TQ} scores, then weights; 0 or -inf on partial tiles */
    float *pp;        /* PF_DOT: the weights as bfloat16 pairs {TK / 2, TQ} */
    float *alpha;     /* {TQ} rescale of this tile */
    float *slots;     /* per (query tile ti, head h) at ti hb + h: Qt, acc {TQ, d}, m, l */
    size_t qt_floats, slot_floats;
} prefill_ws;

LM_INLINE prefill_ws prefill_layout(float *workspace, size_t d, int mode)
{
    const size_t tile = mode == PF_DOT ? TK * d / 2 : TK * d; /* K or V tile */
    prefill_ws w;
    w.kp = workspace;
    w.vp = w.kp + tile;
    w.st = w.vp + tile;
    w.bias = w.st + TK * TQ;
    w.pp = w.bias + TK * TQ;
    w.alpha = w.pp + (mode == PF_DOT ? TK * TQ / 2 : 0);
    w.slots = w.alpha + TQ;
    w.qt_floats = mode == PF_DOT ? d * TQ / 2 : d * TQ;
    w.slot_floats = w.qt_floats + d * TQ + 2 * TQ;
    return w;
}

/* One prefill kernel call (lm_attn_prefill_f32 / _bf16) in input mode `mode`. */
LM_INLINE void prefill_run(const lm_attn_prefill_args *a, size_t head_begin, size_t head_end,
                           size_t tile_begin, size_t tile_end, float *workspace,
                           lm_attn_counts *counts, int mode)
{
    const size_t n = a->n, d = a->head_dim, heads = a->heads, kv_heads = a->kv_heads;
    const size_t hb = head_end - head_begin, nt = tile_end - tile_begin;
    const size_t g = head_begin / (heads / kv_heads);
    const size_t ldq = heads * d, ldk = kv_heads * d;
    const size_t esize = mode == PF_F32 ? sizeof(float) : sizeof(uint16_t);
    const char *q = mode == PF_F32 ? (const char *)a->q : (const char *)a->q16;
    const char *kh = (mode == PF_F32 ? (const char *)a->k : (const char *)a->k16) + g * d * esize;
    const char *vh = (mode == PF_F32 ? (const char *)a->v : (const char *)a->v16) + g * d * esize;
    const prefill_ws w = prefill_layout(workspace, d, mode);
#define LM_SLOT_QT(ti, h) (w.slots + ((ti) * hb + (h)) * w.slot_floats)
#define LM_SLOT_ACC(ti, h) (LM_SLOT_QT(ti, h) + w.qt_floats)
#define LM_SLOT_M(ti, h) (LM_SLOT_ACC(ti, h) + TQ * d)
#define LM_SLOT_L(ti, h) (LM_SLOT_M(ti, h) + TQ)
    const size_t i_end = min_size(tile_end * TQ, n); /* rows of the block: [tile_begin TQ, i_end) */
    uint64_t tiles_total = 0, tiles_computed = 0, pairs = 0;

    for (size_t ti = 0; ti < nt; ti++) {
        const size_t i0 = (tile_begin + ti) * TQ, rows = min_size(i0 + TQ, n) - i0;
        for (size_t h = 0; h < hb; h++) {
            const char *qh = q + (head_begin + h) * d * esize;
#ifdef LM_ATTN_PREFILL_BF16_DOT
            if (mode == PF_DOT) {
                prefill_start_bf16((const uint16_t *)(const void *)qh, ldq, i0, rows, d,
                                   LM_SLOT_QT(ti, h), LM_SLOT_ACC(ti, h), LM_SLOT_M(ti, h),
                                   LM_SLOT_L(ti, h));
                continue;
            }
#endif
            prefill_start(qh, ldq, i0, rows, d, a->scale, LM_SLOT_QT(ti, h), LM_SLOT_ACC(ti, h),
                          LM_SLOT_M(ti, h), LM_SLOT_L(ti, h), mode);
        }
    }

    for (size_t j0 = 0; j0 < i_end; j0 += TK) {
        const size_t j_end = min_size(j0 + TK, i_end);
        lm_attn_tile_class cls[LM_ATTN_PREFILL_TILES];
        size_t steps = 0; /* P V micro-tiles this key tile runs */
        for (size_t ti = 0; ti < nt; ti++) {
            const size_t i0 = (tile_begin + ti) * TQ, i1 = min_size(i0 + TQ, n);
            cls[ti] = LM_TILE_EMPTY;
            if (j0 >= i1) /* above the diagonal: not a tile */
                continue;
            const size_t j1 = min_size(j0 + TK, i1);
            tiles_total++;
            cls[ti] = lm_attn_tile_classify(&a->mask, i0, i1, j0, j1);
            if (cls[ti] == LM_TILE_EMPTY)
                continue;
            tiles_computed++;
            pairs += (uint64_t)(i1 - i0) * (j1 - j0);
            steps += hb * ((i1 - i0) / PV_R + (i1 - i0) % PV_R);
        }
        if (steps == 0)
            continue;
        /* one copy for every (tile, head) */
#ifdef LM_ATTN_PREFILL_BF16_DOT
        if (mode == PF_DOT)
            prefill_pack_bf16((const uint16_t *)(const void *)kh,
                              (const uint16_t *)(const void *)vh, ldk, j0, j_end - j0, d,
                              (uint16_t *)(void *)w.kp, (uint32_t *)(void *)w.vp);
        else
#endif
            prefill_pack_f32(kh, vh, ldk, j0, j_end - j0, d, w.kp, w.vp, mode);
        /* the rows of the tile after next, requested a few lines at a time between this
         * tile's P V micro-tiles */
        const size_t jf = j_end + TK;
        const size_t jn = jf < i_end ? jf : j0; /* no such tile: nothing to fetch */
        prefill_prefetch pf = {kh + jn * ldk * esize, vh + jn * ldk * esize, ldk * esize,
                               d * esize, jf < i_end ? min_size(TK, i_end - jf) : 0, 0, 0, 0};
        pf.quota = (pf.rows * ((d * esize + 63) / 64) + steps - 1) / steps;

        for (size_t ti = 0; ti < nt; ti++) {
            if (cls[ti] == LM_TILE_EMPTY)
                continue;
            const size_t i0 = (tile_begin + ti) * TQ, i1 = min_size(i0 + TQ, n),
                         rows = i1 - i0, cols = min_size(j0 + TK, i1) - j0;
            if (cls[ti] == LM_TILE_PARTIAL) /* shared by the heads */
                for (size_t jj = 0; jj < cols; jj++)
                    for (size_t r = 0; r < TQ; r++)
                        w.bias[jj * TQ + r] =
                            r >= rows || lm_attn_mask_allows(&a->mask, i0 + r, j0 + jj)
                                ? 0.0f
                                : -INFINITY;
            const float *bias = cls[ti] == LM_TILE_PARTIAL ? w.bias : NULL;
            for (size_t h = 0; h < hb; h++) {
#ifdef LM_ATTN_PREFILL_BF16_DOT
                if (mode == PF_DOT) {
                    prefill_tile_bf16((const uint16_t *)(const void *)w.kp,
                                      (const uint32_t *)(const void *)w.vp,
                                      (const uint32_t *)(const void *)LM_SLOT_QT(ti, h), w.st,
                                      bias, (uint32_t *)(void *)w.pp, cols, rows, d, a->scale,
                                      LM_SLOT_M(ti, h), LM_SLOT_L(ti, h), w.alpha,
                                      LM_SLOT_ACC(ti, h), &pf);
                    continue;
                }
#endif
                prefill_scores(w.kp, LM_SLOT_QT(ti, h), w.st, cols, d);
                prefill_softmax(w.st, bias, cols, LM_SLOT_M(ti, h), LM_SLOT_L(ti, h), w.alpha, 0);
                prefill_pv(w.st, w.vp, cols, rows, d, LM_SLOT_ACC(ti, h), w.alpha, &pf);
            }
        }
    }

    for (size_t ti = 0; ti < nt; ti++) { /* o[i, head] = acc[i - i0] / l[i - i0] */
        const size_t i0 = (tile_begin + ti) * TQ, rows = min_size(i0 + TQ, n) - i0;
        for (size_t h = 0; h < hb; h++) {
            const float *acc = LM_SLOT_ACC(ti, h), *l = LM_SLOT_L(ti, h);
            float *oh = a->o + (head_begin + h) * d;
            for (size_t r = 0; r < rows; r++) {
                float *orow = oh + (i0 + r) * ldq;
                const LM_V inv = V_SET1(1.0f / l[r]);
                for (size_t c = 0; c < d; c += LM_W) /* d is a multiple of LM_W on every path */
                    V_STOREU(orow + c, V_MUL(V_LOADU(acc + r * d + c), inv));
            }
        }
    }
#undef LM_SLOT_QT
#undef LM_SLOT_ACC
#undef LM_SLOT_M
#undef LM_SLOT_L
    counts->tiles_total += tiles_total * hb;
    counts->tiles_computed += tiles_computed * hb;
    counts->pairs_computed += pairs * hb;
}

#ifdef LM_ATTN_PREFILL_BF16_DOT
/* The path with BF16 dot products defines only the bf16 slot (its f32 slot is its
 * parent's). */
void LM_NAME(lm_attn_prefill_bf16)(const lm_attn_prefill_args *a, size_t head_begin,
                                   size_t head_end, size_t tile_begin, size_t tile_end,
                                   float *workspace, lm_attn_counts *counts)
{
    prefill_run(a, head_begin, head_end, tile_begin, tile_end, workspace, counts, PF_DOT);
}
#else
void LM_NAME(lm_attn_prefill_f32)(const lm_attn_prefill_args *a, size_t head_begin,
                                  size_t head_end, size_t tile_begin, size_t tile_end,
                                  float *workspace, lm_attn_counts *counts)
{
    prefill_run(a, head_begin, head_end, tile_begin, tile_end, workspace, counts, PF_F32);
}

/* bfloat16 inputs widened to float32 as each tile is packed: the f32 kernel's arithmetic
 * on the rounded values. */
void LM_NAME(lm_attn_prefill_bf16)(const lm_attn_prefill_args *a, size_t head_begin,
                                   size_t head_end, size_t tile_begin, size_t tile_end,
                                   float *workspace, lm_attn_counts *counts)
{
    prefill_run(a, head_begin, head_end, tile_begin, tile_end, workspace, counts, PF_WIDEN);
}
#endif

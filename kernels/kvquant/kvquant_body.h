/* Quantized-cache decode written once over the SIMD mapping layer of
 * kernels/attention/simd_<isa>.h (included first by the ISA file). Defines
 * lm_kvq_decode_<isa>.
 *
 * A stored value is u s + lo (kvquant.h). Per block of LM_ATTN_DECODE_BLOCK tokens:
 *   scores   per-token keys:   s_j = scale (s_j^k (q . u_j) + lo_j^k sum_c q_c)
 *            per-channel keys: s_j = scale ((q * s^k_grp) . u_j + q . lo^k_grp)
 *   softmax  online, as the float cache's decode
 *   values   acc += sum_j (p_j s^v_j) u_j + (sum_j p_j lo^v_j) 1
 * Codes are widened to float in registers (V_LOAD_U8/U4/U2); nothing is dequantized to
 * memory. Each code row is read once for all query heads of the group. */
#ifndef LM_ISA_SUFFIX
#error "include kernels/attention/simd_<isa>.h before kvquant_body.h"
#endif

#include <float.h>
#include <math.h>

#define KQ_CAT_(a, b) a##_##b
#define KQ_CAT(a, b) KQ_CAT_(a, b)
#define KQ_INLINE static inline __attribute__((always_inline))
#ifndef LM_UNROLL
#define LM_UNROLL _Pragma("GCC unroll 16")
#endif

enum { KQ_BLOCK = LM_ATTN_DECODE_BLOCK, KQ_GROUP = LM_KVQ_KIVI_GROUP };
_Static_assert(LM_ATTN_DECODE_BLOCK % LM_KVQ_KIVI_GROUP == 0, "blocks hold whole KIVI groups");

KQ_INLINE vf kq_load_codes(const uint8_t *row, size_t c, int bits)
{
    if (bits == 8)
        return V_LOAD_U8(row, c);
    if (bits == 4)
        return V_LOAD_U4(row, c);
    return V_LOAD_U2(row, c);
}

/* dots[g, jj] = qsrc[g] . u_{j0 + jj} for query heads [g0, g0 + gn) */
KQ_INLINE void kq_dots(const uint8_t *codes, size_t row_bytes, size_t j0, size_t cnt,
                       const float *qsrc, size_t d, size_t g0, int gn, float *s, size_t s_off,
                       int bits)
{
    for (size_t jj = 0; jj < cnt; jj++) {
        const uint8_t *row = codes + (j0 + jj) * row_bytes;
        vf acc[DEC_GB];
        LM_UNROLL
        for (int b = 0; b < gn; b++)
            acc[b] = V_ZERO();
        for (size_t c = 0; c < d; c += VW) {
            vf u = kq_load_codes(row, c, bits); /* the code row, read once per pass */
            LM_UNROLL
            for (int b = 0; b < gn; b++)
                acc[b] = V_FMA(V_LOAD(qsrc + (g0 + (size_t)b) * d + c), u, acc[b]);
        }
#ifdef V_HSUM4
        if (gn == 4) {
            float sums[4];
            V_HSUM4(acc[0], acc[1], acc[2], acc[3], sums);
            for (int b = 0; b < 4; b++)
                s[(g0 + (size_t)b) * KQ_BLOCK + s_off + jj] = sums[b];
            continue;
        }
#endif
        LM_UNROLL
        for (int b = 0; b < gn; b++)
            s[(g0 + (size_t)b) * KQ_BLOCK + s_off + jj] = V_HSUM(acc[b]);
    }
}

KQ_INLINE void kq_dots_all(const uint8_t *codes, size_t row_bytes, size_t j0, size_t cnt,
                           const float *qsrc, size_t d, size_t group, float *s, size_t s_off,
                           int bits)
{
    size_t g0 = 0;
    for (; g0 + DEC_GB <= group; g0 += DEC_GB)
        kq_dots(codes, row_bytes, j0, cnt, qsrc, d, g0, DEC_GB, s, s_off, bits);
    for (; g0 < group; g0++)
        kq_dots(codes, row_bytes, j0, cnt, qsrc, d, g0, 1, s, s_off, bits);
}

/* acc[g, c0 ..) += sum_jj w[g, jj] u_{j0 + jj}[c0 ..) over cv vectors */
KQ_INLINE void kq_pv(const uint8_t *codes, size_t row_bytes, size_t j0, size_t cnt,
                     const float *w, size_t d, size_t g0, int gn, size_t c0, int cv,
                     float *accs, int bits)
{
    vf acc[DEC_GB][DEC_CV];
    LM_UNROLL
    for (int b = 0; b < gn; b++)
        LM_UNROLL
        for (int e = 0; e < cv; e++)
            acc[b][e] = V_LOAD(accs + (g0 + (size_t)b) * d + c0 + (size_t)e * VW);
    for (size_t jj = 0; jj < cnt; jj++) {
        const uint8_t *row = codes + (j0 + jj) * row_bytes;
        vf u[DEC_CV];
        LM_UNROLL
        for (int e = 0; e < cv; e++)
            u[e] = kq_load_codes(row, c0 + (size_t)e * VW, bits);
        LM_UNROLL
        for (int b = 0; b < gn; b++) {
            vf wv = V_BCAST(w + (g0 + (size_t)b) * KQ_BLOCK + jj);
            LM_UNROLL
            for (int e = 0; e < cv; e++)
                acc[b][e] = V_FMA(wv, u[e], acc[b][e]);
        }
    }
    LM_UNROLL
    for (int b = 0; b < gn; b++)
        LM_UNROLL
        for (int e = 0; e < cv; e++)
            V_STORE(accs + (g0 + (size_t)b) * d + c0 + (size_t)e * VW, acc[b][e]);
}

KQ_INLINE void kq_pv_all(const uint8_t *codes, size_t row_bytes, size_t j0, size_t cnt,
                         const float *w, size_t d, size_t group, float *accs, int bits)
{
    size_t g0 = 0;
    for (; g0 + DEC_GB <= group; g0 += DEC_GB) {
        size_t c0 = 0;
        for (; c0 + DEC_CV * VW <= d; c0 += DEC_CV * VW)
            kq_pv(codes, row_bytes, j0, cnt, w, d, g0, DEC_GB, c0, DEC_CV, accs, bits);
        for (; c0 < d; c0 += VW)
            kq_pv(codes, row_bytes, j0, cnt, w, d, g0, DEC_GB, c0, 1, accs, bits);
    }
    for (; g0 < group; g0++)
        for (size_t c0 = 0; c0 < d; c0 += VW)
            kq_pv(codes, row_bytes, j0, cnt, w, d, g0, 1, c0, 1, accs, bits);
}

KQ_INLINE void kq_body(const lm_kvq_view *view, size_t j0, size_t j1, const float *q,
                       size_t group, float scale, float *m, float *l, float *accs,
                       float *workspace, int bits, int per_channel)
{
    const size_t d = view->head_dim, rb = view->row_bytes;
    float *s = workspace;           /* {group, KQ_BLOCK}: scores, then weights */
    float *qs = s + group * KQ_BLOCK; /* {group, d}: q * s^k of the current key group */
    float *qsum = qs + group * d;   /* {group}: sum_c q_c, or q . lo^k of the group */
    for (size_t g = 0; g < group; g++) {
        m[g] = -FLT_MAX;
        l[g] = 0.0f;
        float total = 0.0f;
        for (size_t c = 0; c < d; c++)
            total += q[g * d + c];
        qsum[g] = total;
    }
    memset(accs, 0, group * d * sizeof(float));
    const vf vscale = V_SET1(scale);

    for (size_t b0 = j0; b0 < j1; b0 += KQ_BLOCK) {
        const size_t cnt = b0 + KQ_BLOCK < j1 ? KQ_BLOCK : j1 - b0;
        if (per_channel) { /* one key group at a time: fold s^k into q, lo^k into a dot */
            for (size_t t0 = 0; t0 < cnt; t0 += KQ_GROUP) {
                const float *kp = view->k_params + (b0 + t0) / KQ_GROUP * 2 * d; /* {2, d} */
                for (size_t g = 0; g < group; g++) {
                    vf lo_dot = V_ZERO();
                    for (size_t c = 0; c < d; c += VW) {
                        vf qv = V_LOAD(q + g * d + c);
                        V_STORE(qs + g * d + c, V_MUL(qv, V_LOAD(kp + c)));
                        lo_dot = V_FMA(qv, V_LOAD(kp + d + c), lo_dot);
                    }
                    qsum[g] = V_HSUM(lo_dot);
                }
                size_t tn = cnt - t0 < KQ_GROUP ? cnt - t0 : KQ_GROUP;
                kq_dots_all(view->k_codes, rb, b0 + t0, tn, qs, d, group, s, t0, bits);
                for (size_t g = 0; g < group; g++)
                    for (size_t jj = t0; jj < t0 + tn; jj++)
                        s[g * KQ_BLOCK + jj] += qsum[g];
            }
        } else {
            kq_dots_all(view->k_codes, rb, b0, cnt, q, d, group, s, 0, bits);
            const float *kp = view->k_params + b0 * 2; /* {cnt, 2} */
            for (size_t g = 0; g < group; g++)
                for (size_t jj = 0; jj < cnt; jj++)
                    s[g * KQ_BLOCK + jj] = kp[2 * jj] * s[g * KQ_BLOCK + jj] + kp[2 * jj + 1] * qsum[g];
        }

        const float *vp = view->v_params + b0 * 2; /* {cnt, 2}: (s^v, lo^v) */
        for (size_t g = 0; g < group; g++) {       /* online softmax, then weights p s^v */
            float *sg = s + g * KQ_BLOCK;
            for (size_t jj = cnt; jj < KQ_BLOCK; jj++)
                sg[jj] = -INFINITY;
            vf mx = V_SET1(m[g]);
            for (size_t jj = 0; jj < KQ_BLOCK; jj += VW) {
                vf x = V_MUL(V_LOAD(sg + jj), vscale);
                V_STORE(sg + jj, x);
                mx = V_MAX(mx, x);
            }
            const float mnew = V_HMAX(mx);
            const vf vm = V_SET1(mnew);
            vf sum = V_ZERO();
            for (size_t jj = 0; jj < KQ_BLOCK; jj += VW) {
                vf p = V_EXP(V_SUB(V_LOAD(sg + jj), vm));
                V_STORE(sg + jj, p);
                sum = V_ADD(sum, p);
            }
            const float al = expf(m[g] - mnew);
            l[g] = l[g] * al + V_HSUM(sum);
            m[g] = mnew;
            float lo_sum = 0.0f; /* sum_j p_j lo^v_j, added to every channel */
            for (size_t jj = 0; jj < cnt; jj++) {
                lo_sum += sg[jj] * vp[2 * jj + 1];
                sg[jj] *= vp[2 * jj];
            }
            const vf va = V_SET1(al), vlo = V_SET1(lo_sum);
            for (size_t c = 0; c < d; c += VW)
                V_STORE(accs + g * d + c, V_FMA(V_LOAD(accs + g * d + c), va, vlo));
        }
        kq_pv_all(view->v_codes, rb, b0, cnt, s, d, group, accs, bits);
    }
}

#define KQ_DEFINE(isa) LM_KVQ_DECODE_DECLARE(isa)

KQ_DEFINE(LM_ISA_SUFFIX)
{
    switch (view->format) {
    case LM_KVQ_INT8: kq_body(view, j0, j1, q, group, scale, m, l, acc, workspace, 8, 0); break;
    case LM_KVQ_INT4: kq_body(view, j0, j1, q, group, scale, m, l, acc, workspace, 4, 0); break;
    case LM_KVQ_KIVI4: kq_body(view, j0, j1, q, group, scale, m, l, acc, workspace, 4, 1); break;
    case LM_KVQ_KIVI2: kq_body(view, j0, j1, q, group, scale, m, l, acc, workspace, 2, 1); break;
    default: break;
    }
}

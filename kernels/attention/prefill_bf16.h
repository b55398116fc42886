/* The prefill's micro-kernels on AVX512-BF16 dot products (VDPBF16PS: each float32 lane
 * adds a[2i] b[2i] + a[2i+1] b[2i+1] of two bfloat16 vectors; products of bfloat16 are
 * exact in float32). Included by prefill_body.h in the file that defines
 * LM_ATTN_PREFILL_BF16_DOT (avx512bf16_prefill.c), after the AVX-512 mapping layer.
 *
 * A dot product pairs neighbours along the summed index, so each operand is laid out in
 * pairs of that index (one 32-bit word per pair):
 *   S^T = K Qt sums over the head dimension c: Kp {TK, d} bfloat16 rows as stored (pairs
 *         (c, c + 1) side by side), broadcast one word per key; Qt2 {d / 2, TQ} words
 *         (q[r, 2 c2], q[r, 2 c2 + 1]), unscaled: the scale multiplies the float32 scores;
 *   acc += P^T V sums over keys j: Pp {TK / 2, TQ} words (P[2 j2, r], P[2 j2 + 1, r]) of the
 *         weights rounded to bfloat16, broadcast one word per query row; Vp2 {TK / 2, d}
 *         words (v[2 j2, c], v[2 j2 + 1, c]). An odd last key pairs with a zero weight and
 *         a zero value row.
 * The softmax itself (maxima, exponentials, sums, rescale) is prefill_softmax's, in float32
 * on the unrounded scores with the inline exp (prefill_exp); the row sums l are of the
 * unrounded weights. */
#ifndef __AVX512BF16__
#error "prefill_bf16.h needs -mavx512bf16"
#endif

#include "../simd/avx512bf16.h"

/* Qt2 {d / 2, TQ} = the words of q rows [i0, i0 + rows) of one head (rows past n: 0);
 * m = -FLT_MAX, l = 0, acc {rows, d} = 0. */
LM_INLINE void prefill_start_bf16(const uint16_t *restrict qh, size_t ldq, size_t i0,
                                  size_t rows, size_t d, float *restrict qt,
                                  float *restrict acc, float *restrict m, float *restrict l)
{
    uint32_t *qt2 = (uint32_t *)(void *)qt;
    for (size_t r = 0; r < TQ; r++) {
        for (size_t c2 = 0; c2 < d / 2; c2++) {
            uint32_t word = 0; /* rows past n score 0 and are never written */
            if (r < rows)
                memcpy(&word, qh + (i0 + r) * ldq + 2 * c2, sizeof word);
            qt2[c2 * TQ + r] = word;
        }
        m[r] = -FLT_MAX;
        l[r] = 0.0f;
    }
    memset(acc, 0, rows * d * sizeof(float));
}

/* Kp {cnt, d} = key rows [j0, j0 + cnt) as stored; Vp2 {ceil(cnt / 2), d} = their value
 * rows in pairs (row stride ld elements; d a multiple of 16). */
LM_INLINE void prefill_pack_bf16(const uint16_t *kh, const uint16_t *vh, size_t ld, size_t j0,
                                 size_t cnt, size_t d, uint16_t *restrict kp,
                                 uint32_t *restrict vp2)
{
    for (size_t jj = 0; jj < cnt; jj++)
        memcpy(kp + jj * d, kh + (j0 + jj) * ld, d * sizeof(uint16_t));
    for (size_t j2 = 0; 2 * j2 < cnt; j2++) {
        const uint16_t *lo = vh + (j0 + 2 * j2) * ld;
        const uint16_t *hi = 2 * j2 + 1 < cnt ? lo + ld : NULL;
        for (size_t c = 0; c < d; c += 16)
            _mm512_storeu_si512(vp2 + j2 * d + c, bf16_pair_rows(lo + c, hi != NULL ? hi + c : NULL));
    }
}

/* St[jj, qv0 16 ..] = scale sum_c kp[jj, c] q[c, ...] for jj < rk, nv query vectors. */
LM_INLINE void prefill_scores_block_bf16(const uint16_t *restrict kp,
                                         const uint32_t *restrict qt2, float *restrict st,
                                         size_t d, size_t qv0, int rk, int nv, __m512 scale)
{
    __m512 acc[PF_RK][PF_NV];
    LM_UNROLL
    for (int a = 0; a < rk; a++)
        LM_UNROLL
        for (int b = 0; b < nv; b++)
            acc[a][b] = _mm512_setzero_ps();
    for (size_t c2 = 0; c2 < d / 2; c2++) {
        __m512i qvec[PF_NV];
        LM_UNROLL
        for (int b = 0; b < nv; b++)
            qvec[b] = _mm512_loadu_si512(qt2 + c2 * TQ + (qv0 + (size_t)b) * 16);
        LM_UNROLL
        for (int a = 0; a < rk; a++) {
            const __m512i kb = bf16_bcast_word(kp + (size_t)a * d + 2 * c2);
            LM_UNROLL
            for (int b = 0; b < nv; b++)
                acc[a][b] = bf16_dot(acc[a][b], kb, qvec[b]);
        }
    }
    LM_UNROLL
    for (int a = 0; a < rk; a++)
        LM_UNROLL
        for (int b = 0; b < nv; b++)
            _mm512_storeu_ps(st + (size_t)a * TQ + (qv0 + (size_t)b) * 16,
                             _mm512_mul_ps(acc[a][b], scale));
}

LM_INLINE void prefill_scores_bf16(const uint16_t *restrict kp, const uint32_t *restrict qt2,
                                   float *restrict st, size_t cols, size_t d, float scale)
{
    const __m512 vs = _mm512_set1_ps(scale);
    for (size_t qv0 = 0; qv0 < QV; qv0 += PF_NV) {
        size_t jj = 0;
        for (; jj + PF_RK <= cols; jj += PF_RK)
            prefill_scores_block_bf16(kp + jj * d, qt2, st + jj * TQ, d, qv0, PF_RK, PF_NV, vs);
        for (; jj + 2 <= cols; jj += 2)
            prefill_scores_block_bf16(kp + jj * d, qt2, st + jj * TQ, d, qv0, 2, PF_NV, vs);
        for (; jj < cols; jj++)
            prefill_scores_block_bf16(kp + jj * d, qt2, st + jj * TQ, d, qv0, 1, PF_NV, vs);
    }
}

/* Pp {ceil(cols / 2), TQ} = the weights St {cols, TQ} rounded to bfloat16, in key pairs. */
LM_INLINE void prefill_pair_weights(const float *restrict st, size_t cols, uint32_t *restrict pp)
{
    for (size_t j2 = 0; 2 * j2 < cols; j2++) {
        const float *lo = st + 2 * j2 * TQ, *hi = lo + TQ;
        const bool odd = 2 * j2 + 1 == cols;
        for (size_t qv = 0; qv < QV; qv++) {
            const __m512 a = _mm512_loadu_ps(lo + qv * 16);
            const __m512 b = odd ? _mm512_setzero_ps() : _mm512_loadu_ps(hi + qv * 16);
            _mm512_storeu_si512(pp + j2 * TQ + qv * 16, bf16_pair_ps(a, b));
        }
    }
}

/* acc[r, c0 .. c0 + 16 cv) = alpha[r] acc[r, ...] + sum_j P[j, r] v[j, ...] for rows
 * [r0, r0 + rr), over key pairs. */
LM_INLINE void prefill_pv_block_bf16(const uint32_t *restrict pp, const uint32_t *restrict vp2,
                                     size_t kpairs, size_t d, float *restrict acc,
                                     const float *restrict alpha, size_t r0, size_t c0, int rr,
                                     int cv)
{
    __m512 o[PV_R][PV_CV];
    LM_UNROLL
    for (int a = 0; a < rr; a++)
        LM_UNROLL
        for (int b = 0; b < cv; b++)
            o[a][b] = _mm512_setzero_ps();
    for (size_t j2 = 0; j2 < kpairs; j2++) {
        __m512i vvec[PV_CV];
        LM_UNROLL
        for (int b = 0; b < cv; b++)
            vvec[b] = _mm512_loadu_si512(vp2 + j2 * d + c0 + (size_t)b * 16);
        LM_UNROLL
        for (int a = 0; a < rr; a++) {
            const __m512i p = _mm512_set1_epi32((int)pp[j2 * TQ + r0 + (size_t)a]);
            LM_UNROLL
            for (int b = 0; b < cv; b++)
                o[a][b] = bf16_dot(o[a][b], p, vvec[b]);
        }
    }
    LM_UNROLL
    for (int a = 0; a < rr; a++) {
        const __m512 al = _mm512_set1_ps(alpha[r0 + (size_t)a]);
        LM_UNROLL
        for (int b = 0; b < cv; b++) {
            float *p = acc + (r0 + (size_t)a) * d + c0 + (size_t)b * 16;
            _mm512_storeu_ps(p, _mm512_fmadd_ps(_mm512_loadu_ps(p), al, o[a][b]));
        }
    }
}

LM_INLINE void prefill_pv_rows_bf16(const uint32_t *restrict pp, const uint32_t *restrict vp2,
                                    size_t kpairs, size_t d, float *restrict acc,
                                    const float *restrict alpha, size_t r0, int rr)
{
    size_t c0 = 0;
    for (; c0 + PV_CV * 16 <= d; c0 += PV_CV * 16)
        prefill_pv_block_bf16(pp, vp2, kpairs, d, acc, alpha, r0, c0, rr, PV_CV);
    for (; c0 < d; c0 += 16)
        prefill_pv_block_bf16(pp, vp2, kpairs, d, acc, alpha, r0, c0, rr, 1);
}

/* One head over one key tile: scores, softmax (float32), weights to bfloat16 pairs, then
 * acc {rows, d} = alpha acc + P^T V. */
LM_INLINE void prefill_tile_bf16(const uint16_t *restrict kp, const uint32_t *restrict vp2,
                                 const uint32_t *restrict qt2, float *restrict st,
                                 const float *restrict bias, uint32_t *restrict pp,
                                 size_t cols, size_t rows, size_t d, float scale,
                                 float *restrict m, float *restrict l, float *restrict alpha,
                                 float *restrict acc, prefill_prefetch *pf)
{
    prefill_scores_bf16(kp, qt2, st, cols, d, scale);
    prefill_softmax(st, bias, cols, m, l, alpha, 1);
    prefill_pair_weights(st, cols, pp);
    const size_t kpairs = (cols + 1) / 2;
    size_t r0 = 0;
    for (; r0 + PV_R <= rows; r0 += PV_R) {
        prefill_pv_rows_bf16(pp, vp2, kpairs, d, acc, alpha, r0, PV_R);
        prefill_prefetch_step(pf);
    }
    for (; r0 < rows; r0++) {
        prefill_pv_rows_bf16(pp, vp2, kpairs, d, acc, alpha, r0, 1);
        prefill_prefetch_step(pf);
    }
}

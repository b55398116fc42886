/* One block of the online (streaming) softmax of one query head, shared by the attention
 * decode (kernels/attention/kernel_body.h) and the quantized-cache decode
 * (kernels/kvquant/kvquant_body.h). Include after the vocabulary kernels/simd/<isa>.h.
 *
 * s {block} holds the raw scores q . k_j of the block's cnt keys (block a multiple of LM_W).
 * On return s[j] = exp(scale s_j - m_new) (0 for the padding j >= cnt), the running max
 * *m = m_new = max(m_old, max_j scale s_j), the running sum *l = l_old al + sum_j s[j], and
 * the result is al = exp(m_old - m_new), the factor the caller rescales its accumulator by. */
#ifndef LONGMIX_ONLINE_SOFTMAX_H
#define LONGMIX_ONLINE_SOFTMAX_H

#include <math.h>
#include <stddef.h>

static inline __attribute__((always_inline)) float
lm_online_softmax_block(float *s, size_t cnt, size_t block, LM_V vscale, float *m, float *l)
{
    for (size_t jj = cnt; jj < block; jj++)
        s[jj] = -INFINITY; /* padding weighs exactly 0 */
    LM_V mx = V_SET1(*m);
    for (size_t jj = 0; jj < block; jj += LM_W) {
        LM_V x = V_MUL(V_LOADU(s + jj), vscale);
        V_STOREU(s + jj, x);
        mx = V_MAX(mx, x);
    }
    const float mnew = V_HMAX(mx);
    const LM_V vm = V_SET1(mnew);
    LM_V sum = V_ZERO();
    for (size_t jj = 0; jj < block; jj += LM_W) {
        LM_V p = V_EXP(V_SUB(V_LOADU(s + jj), vm));
        V_STOREU(s + jj, p);
        sum = V_ADD(sum, p);
    }
    const float al = expf(*m - mnew);
    *l = *l * al + V_HSUM(sum);
    *m = mnew;
    return al;
}

#endif

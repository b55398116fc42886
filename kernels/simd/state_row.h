/* The rank-one update and read-out of one state row over a panel of nv vectors, shared by
 * the recurrent forms of linear attention (linear_body.h) and of the delta rule
 * (delta_body.h). Include after the vocabulary kernels/simd/<isa>.h (LM_V, LM_W, V_*):
 *   r = g r + k w   (r unscaled when !gated);   acc += q r
 * r {nv LM_W floats}; w, acc {nv vectors}, kept in registers by the callers' panels. */
#ifndef LONGMIX_STATE_ROW_H
#define LONGMIX_STATE_ROW_H

#include <stdbool.h>

static inline __attribute__((always_inline)) void
state_row_update(float *r, float g, float k, float q, const LM_V *w, LM_V *acc, int nv,
                 bool gated)
{
    const LM_V vg = V_SET1(g), vk = V_SET1(k), vq = V_SET1(q);
    _Pragma("GCC unroll 8") for (int e = 0; e < nv; e++) {
        const LM_V old = V_LOADU(r + e * LM_W);
        const LM_V x = V_FMA(vk, w[e], gated ? V_MUL(vg, old) : old);
        V_STOREU(r + e * LM_W, x);
        acc[e] = V_FMA(vq, x, acc[e]);
    }
}

#endif

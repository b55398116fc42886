/* The decays of one chunk of the chunked SSD (ssd_chunked.h), shared by the float32 body
 * (ssd_body.h) and the bfloat16 one (ssd_bf16.h); instantiated per ISA through
 * kernels/simd/<isa>.h, like them. */
#ifndef LONGMIX_SSD_DECAY_H
#define LONGMIX_SSD_DECAY_H

#include "ssd_chunked.h"

#include <math.h>

/* delta[0:n] = softplus(raw[0:n stride ld] + bias) = max(u, 0) + log1p(exp(-|u|)) */
static inline void ssd_softplus(const float *raw, size_t ld, float bias, size_t n, float *tmp,
                                float *delta)
{
    for (size_t t = 0; t < n; t++)
        tmp[t] = raw[t * ld] + bias;
    const LM_V zero = V_SET1(0.0f);
    size_t t = 0;
    for (; t + LM_W <= n; t += LM_W) {
        const LM_V v = V_LOADU(tmp + t);
        V_STOREU(delta + t, V_ADD(V_MAX(v, zero), V_LOG1P(V_EXP(V_SUB(zero, V_ABS(v))))));
    }
    for (; t < n; t++)
        delta[t] = fmaxf(tmp[t], 0.0f) + log1pf(expf(-fabsf(tmp[t])));
}

/* The sub-chunk that starts at a0 of a chunk of n tokens with log-decays lg {n} and steps
 * dl {n}: the longest run [a0, b1) whose decay c_t = lg_{a0+1} + ... + lg_t stays within
 * SSD_RANGE. Writes cl[t] = c_t, u[t] = exp(c_t), w[t] = exp(-c_t) dl[t] for t in [a0, b1),
 * *alpha = exp(lg_a0) (the state's decay into the sub-chunk) and *beta = u[b1 - 1] (its
 * decay out of it); returns b1. */
static inline size_t ssd_subchunk(const float *lg, const float *dl, size_t a0, size_t n,
                                  float *cl, float *u, float *w, float *alpha, float *beta)
{
    size_t b1 = a0 + 1;
    float acc = 0.0f;
    cl[a0] = 0.0f;
    while (b1 < n && acc + lg[b1] >= -SSD_RANGE) {
        acc += lg[b1];
        cl[b1++] = acc;
    }
    size_t i = a0;
    for (; i + LM_W <= b1; i += LM_W) { /* u = exp(c), w = exp(-c) delta */
        const LM_V ci = V_LOADU(cl + i);
        V_STOREU(u + i, V_EXP(ci));
        V_STOREU(w + i, V_MUL(V_EXP(V_SUB(V_SET1(0.0f), ci)), V_LOADU(dl + i)));
    }
    for (; i < b1; i++) {
        u[i] = expf(cl[i]);
        w[i] = expf(-cl[i]) * dl[i];
    }
    *alpha = expf(lg[a0]);
    *beta = u[b1 - 1];
    return b1;
}

#endif

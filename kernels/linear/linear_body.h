/* The multi-head linear-attention kernels (linear.h), written once and instantiated per
 * ISA through the mapping layer kernels/ssm/simd_<isa>.h; RECURRENT_NAME and CHUNKED_NAME
 * name the two public functions. Vectors run along the rows of row-major matrices (the
 * value dimension of S and y, the key index of the score rows); small matrix products use
 * a 2-row x 4-vector register block. */
#include "gemm_body.h"

static inline float feature(lm_linear_feature f, float x)
{
    return f == LM_LINEAR_IDENTITY ? x : (x > 0.0f ? x + 1.0f : expf(x)); /* elu + 1 */
}


/* Token by token: one pass over S per token, updating a row and accumulating y from it. */
void RECURRENT_NAME(const lm_linear_f32 *p, size_t h, size_t chunk, float *work)
{
    (void)chunk;
    const size_t L = p->length, dk = p->d_key, dv = p->d_value;
    float *S = work, *z = S + round16(dk * dv), *fq = z + round16(dk), *fk = fq + round16(dk);
    if (p->s0 != NULL)
        memcpy(S, p->s0 + h * dk * dv, dk * dv * sizeof(float));
    else
        memset(S, 0, dk * dv * sizeof(float));
    if (p->z0 != NULL)
        memcpy(z, p->z0 + h * dk, dk * sizeof(float));
    else
        memset(z, 0, dk * sizeof(float));
    for (size_t t = 0; t < L; t++) {
        const size_t row = h * L + t;
        const float *v = p->v + row * dv; /* {dv} */
        float *y = p->y + row * dv;       /* {dv} */
        for (size_t c = 0; c < dk; c++) {
            fq[c] = feature(p->feature, p->q[row * dk + c]);
            fk[c] = feature(p->feature, p->k[row * dk + c]);
        }
        memset(y, 0, dv * sizeof(float));
        float den = 0.0f;
        const float a_scalar = p->gate_kind != LM_LINEAR_GATE_SCALAR ? 1.0f
                               : p->gate != NULL ? p->gate[row] : expf(p->log_gate[row]);
        for (size_t c = 0; c < dk; c++) {
            const float a = p->gate_kind == LM_LINEAR_GATE_CHANNEL ? p->gate[row * dk + c]
                                                                   : a_scalar;
            float *s = S + c * dv; /* {dv}: s = a s + fk[c] v;  y += fq[c] s */
            const LM_V va = V_SET1(a), vk = V_SET1(fk[c]), vq = V_SET1(fq[c]);
            size_t j = 0;
            for (; j + LM_W <= dv; j += LM_W) {
                const LM_V sj = V_FMA(vk, V_LOADU(v + j), V_MUL(va, V_LOADU(s + j)));
                V_STOREU(s + j, sj);
                V_STOREU(y + j, V_FMA(vq, sj, V_LOADU(y + j)));
            }
            for (; j < dv; j++) {
                s[j] = fk[c] * v[j] + a * s[j];
                y[j] += fq[c] * s[j];
            }
            z[c] = a * z[c] + fk[c];
            den += fq[c] * z[c];
        }
        if (p->normalize)
            scale_row(y, 1.0f / den, dv);
    }
    if (p->s_final != NULL)
        memcpy(p->s_final + h * dk * dv, S, dk * dv * sizeof(float));
    if (p->z_final != NULL)
        memcpy(p->z_final + h * dk, z, dk * sizeof(float));
}

/* Chunks of C tokens: inter-chunk term from the carried state, intra-chunk masked product,
 * then the state carried past the chunk (linear.h). */
void CHUNKED_NAME(const lm_linear_f32 *p, size_t h, size_t chunk, float *work)
{
    const size_t L = p->length, dk = p->d_key, dv = p->d_value;
    const size_t C = chunk < L ? chunk : L;
    float *S = work;                       /* {dk, dv} carried state */
    float *z = S + round16(dk * dv);       /* {dk} carried normalizer */
    float *fq = z + round16(dk);           /* {C, dk}: phi(q) (then * b_t) */
    float *fk = fq + round16(C * dk);      /* {C, dk}: phi(k) */
    float *kt = fk + round16(C * dk);      /* {dk, C}: a transposed key block */
    float *A = kt + round16(dk * C);       /* {C, C}: masked, decayed scores */
    float *ratio = A + round16(C * C);     /* {C, dk}: b_C / b_s per key channel ({C}
                                            * for a scalar gate) */
    float *cum = ratio + round16(C * dk);  /* {dk}: running decay */
    float *cl = cum + round16(dk);         /* {C}: cumulative log of a scalar gate */
    float *den = cl + round16(C);          /* {C}: normalizers */
    float *lg = den + round16(C);          /* {C}: log of a scalar gate per token */
    if (p->s0 != NULL)
        memcpy(S, p->s0 + h * dk * dv, dk * dv * sizeof(float));
    else
        memset(S, 0, dk * dv * sizeof(float));
    if (p->z0 != NULL)
        memcpy(z, p->z0 + h * dk, dk * sizeof(float));
    else
        memset(z, 0, dk * sizeof(float));

    for (size_t t0 = 0; t0 < L; t0 += C) {
        const size_t n = L - t0 < C ? L - t0 : C;
        const size_t row0 = h * L + t0;
        const float *v = p->v + row0 * dv; /* {n, dv} */
        float *y = p->y + row0 * dv;       /* {n, dv} */
        if (p->feature == LM_LINEAR_IDENTITY) {
            memcpy(fq, p->q + row0 * dk, n * dk * sizeof(float));
            memcpy(fk, p->k + row0 * dk, n * dk * sizeof(float));
        } else {
            for (size_t i = 0; i < n * dk; i++) {
                fq[i] = feature(p->feature, p->q[row0 * dk + i]);
                fk[i] = feature(p->feature, p->k[row0 * dk + i]);
            }
        }

        /* Scores w_ts (s <= t), before the query is decayed. */
        memset(A, 0, n * C * sizeof(float));
        if (p->gate_kind != LM_LINEAR_GATE_CHANNEL) {
            for (size_t s = 0; s < n; s++) /* kt = fk^T */
                for (size_t c = 0; c < dk; c++)
                    kt[c * C + s] = fk[s * dk + c];
            gemm_acc_lower(n, dk, fq, dk, kt, C, A, C); /* A = fq fk^T, lower part */
            if (p->gate_kind == LM_LINEAR_GATE_SCALAR) {
                float acc = 0.0f;
                for (size_t t = 0; t < n; t++) {
                    lg[t] = p->gate != NULL ? logf(p->gate[row0 + t]) : p->log_gate[row0 + t];
                    cl[t] = acc += lg[t];
                }
            }
            for (size_t t = 0; t < n; t++) {
                for (size_t s = t + 1; s < n; s++) /* causal mask */
                    A[t * C + s] = 0.0f;
                if (p->gate_kind == LM_LINEAR_GATE_SCALAR) {
                    /* b_t / b_s = exp(lg_{s+1} + ... + lg_t) <= 1, the exponent summed from
                     * t down (not cl_t - cl_s: its rounding would grow with |cl|) */
                    float d = 0.0f;
                    for (size_t s = t; s-- > 0;) {
                        d += lg[s + 1];
                        A[t * C + s] *= expf(d);
                    }
                }
            }
        } else {
            /* b_t / b_s per channel as running products: w = fk_s * a_{s+1} * ... * a_t */
            for (size_t s = 0; s < n; s++) {
                float *w = cum; /* {dk} */
                memcpy(w, fk + s * dk, dk * sizeof(float));
                A[s * C + s] = dot(fq + s * dk, w, dk);
                for (size_t t = s + 1; t < n; t++) {
                    const float *g = p->gate + (row0 + t) * dk;
                    size_t c = 0;
                    for (; c + LM_W <= dk; c += LM_W)
                        V_STOREU(w + c, V_MUL(V_LOADU(w + c), V_LOADU(g + c)));
                    for (; c < dk; c++)
                        w[c] *= g[c];
                    A[t * C + s] = dot(fq + t * dk, w, dk);
                }
            }
        }

        /* Decay of each key channel from the chunk start: fq *= b_t; ratio_s = b_C / b_s. */
        if (p->gate_kind == LM_LINEAR_GATE_SCALAR) {
            float d = 0.0f; /* lg_{t+1} + ... + lg_{n-1}, summed from the end */
            for (size_t t = n; t-- > 0;) {
                scale_row(fq + t * dk, expf(cl[t]), dk);
                ratio[t] = expf(d); /* one ratio per token: ratio {C} */
                d += lg[t];
            }
        } else if (p->gate_kind == LM_LINEAR_GATE_CHANNEL) {
            for (size_t c = 0; c < dk; c++)
                cum[c] = 1.0f;
            for (size_t t = 0; t < n; t++) {
                const float *g = p->gate + (row0 + t) * dk;
                for (size_t c = 0; c < dk; c++) {
                    cum[c] *= g[c];
                    fq[t * dk + c] *= cum[c];
                }
            }
            for (size_t c = 0; c < dk; c++)
                ratio[(n - 1) * dk + c] = 1.0f;
            for (size_t t = n - 1; t > 0; t--) {
                const float *g = p->gate + (row0 + t) * dk;
                for (size_t c = 0; c < dk; c++)
                    ratio[(t - 1) * dk + c] = ratio[t * dk + c] * g[c];
            }
        }

        /* y = (fq * b) S + A v;  den = (fq * b) . z + rowsum(A) */
        memset(y, 0, n * dv * sizeof(float));
        gemm_acc(n, dv, dk, fq, dk, S, dv, y, dv);
        gemm_acc_tril(n, dv, A, C, v, dv, y, dv);
        if (p->normalize)
            for (size_t t = 0; t < n; t++) {
                float d = dot(fq + t * dk, z, dk);
                for (size_t s = 0; s <= t; s++)
                    d += A[t * C + s];
                den[t] = d;
                scale_row(y + t * dv, 1.0f / d, dv);
            }

        /* Carry: S = diag(b_C) S + (fk * ratio)^T v;  z = b_C * z + sum_s fk_s * ratio_s */
        if (p->gate_kind != LM_LINEAR_GATE_NONE) {
            for (size_t c = 0; c < dk; c++) {
                const float bc = p->gate_kind == LM_LINEAR_GATE_SCALAR ? expf(cl[n - 1]) : cum[c];
                scale_row(S + c * dv, bc, dv);
                z[c] *= bc;
            }
            if (p->gate_kind == LM_LINEAR_GATE_SCALAR)
                for (size_t s = 0; s < n; s++)
                    scale_row(fk + s * dk, ratio[s], dk);
            else
                for (size_t s = 0; s < n; s++)
                    for (size_t c = 0; c < dk; c++)
                        fk[s * dk + c] *= ratio[s * dk + c];
            for (size_t s = 0; s < n; s++)
                for (size_t c = 0; c < dk; c++)
                    kt[c * C + s] = fk[s * dk + c];
        } else {
            for (size_t s = 0; s < n; s++)
                for (size_t c = 0; c < dk; c++)
                    kt[c * C + s] = fk[s * dk + c];
        }
        gemm_acc(dk, dv, n, kt, C, v, dv, S, dv);
        for (size_t c = 0; c < dk; c++) {
            float acc = z[c];
            for (size_t s = 0; s < n; s++)
                acc += kt[c * C + s];
            z[c] = acc;
        }
    }
    if (p->s_final != NULL)
        memcpy(p->s_final + h * dk * dv, S, dk * dv * sizeof(float));
    if (p->z_final != NULL)
        memcpy(p->z_final + h * dk, z, dk * sizeof(float));
}

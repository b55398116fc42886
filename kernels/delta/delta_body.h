/* The (gated) delta-rule kernels (delta.h), written once and instantiated per ISA through
 * kernels/ssm/simd_<isa>.h; RECURRENT_NAME and CHUNKED_NAME name the two public functions.
 * Internally the state is kept transposed, St {d_key, d_value}, so that every product runs
 * along contiguous value rows; it is transposed from s0 and back to s_final once per head. */
#include "../linear/gemm_body.h"

/* kh = k / ||k||, scaled by max|k| first (no overflow or underflow for huge or tiny keys).
 * The driver has rejected zero keys. */
static void unit_key(const float *k, float *kh, size_t dk)
{
    float top = 0.0f;
    for (size_t c = 0; c < dk; c++)
        top = fmaxf(top, fabsf(k[c]));
    for (size_t c = 0; c < dk; c++)
        kh[c] = k[c] / top;
    scale_row(kh, 1.0f / sqrtf(dot(kh, kh, dk)), dk);
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

/* out[0:n] += s * x[0:n] */
static inline void axpy(float *out, float s, const float *x, size_t n)
{
    size_t j = 0;
    for (; j + LM_W <= n; j += LM_W)
        V_STOREU(out + j, V_FMA(V_SET1(s), V_LOADU(x + j), V_LOADU(out + j)));
    for (; j < n; j++)
        out[j] += s * x[j];
}

void RECURRENT_NAME(const lm_delta_seq_f32 *p, size_t h, size_t chunk, float *work)
{
    (void)chunk;
    const size_t L = p->length, dk = p->d_key, dv = p->d_value;
    float *St = work, *kh = St + round16(dk * dv), *u = kh + round16(dk);
    load_state(p, h, St);
    for (size_t t = 0; t < L; t++) {
        const size_t row = h * L + t;
        const float *q = p->q + row * dk, *v = p->v + row * dv;
        float *y = p->y + row * dv;
        unit_key(p->k + row * dk, kh, dk);
        const float g = p->gate != NULL ? p->gate[row] : 1.0f, beta = p->beta[row];
        /* St *= g;  u = St^T kh (the prediction) */
        memset(u, 0, dv * sizeof(float));
        for (size_t c = 0; c < dk; c++) {
            if (g != 1.0f)
                scale_row(St + c * dv, g, dv);
            axpy(u, kh[c], St + c * dv, dv);
        }
        for (size_t j = 0; j < dv; j++) /* u = beta (v - prediction) */
            u[j] = beta * (v[j] - u[j]);
        /* St += kh u^T;  y = St^T q */
        memset(y, 0, dv * sizeof(float));
        for (size_t c = 0; c < dk; c++) {
            axpy(St + c * dv, kh[c], u, dv);
            axpy(y, q[c], St + c * dv, dv);
        }
    }
    store_state(p, h, St);
}

void CHUNKED_NAME(const lm_delta_seq_f32 *p, size_t h, size_t chunk, float *work)
{
    const size_t L = p->length, dk = p->d_key, dv = p->d_value;
    const size_t C = chunk < L ? chunk : L;
    float *St = work;                 /* {dk, dv} */
    float *kh = St + round16(dk * dv); /* {C, dk}: unit keys */
    float *qd = kh + round16(C * dk); /* {C, dk}: gamma_t q_t */
    float *kt = qd + round16(C * dk); /* {dk, C}: transposed (weighted) keys */
    float *kk = kt + round16(dk * C); /* {C, C}: -beta_t G_ti (k_t . k_i), strictly lower */
    float *qk = kk + round16(C * C);  /* {C, C}: (q_t . k_i) G_ti, lower */
    float *u = qk + round16(C * C);   /* {C, dv}: the corrections */
    float *lg = u + round16(C * dv);  /* {C}: log g_t */
    float *cl = lg + round16(C);      /* {C}: log gamma_t */
    load_state(p, h, St);
    for (size_t t0 = 0; t0 < L; t0 += C) {
        const size_t n = L - t0 < C ? L - t0 : C;
        const size_t row0 = h * L + t0;
        const float *q = p->q + row0 * dk;    /* {n, dk} */
        const float *v = p->v + row0 * dv;    /* {n, dv} */
        const float *beta = p->beta + row0;   /* {n} */
        float *y = p->y + row0 * dv;          /* {n, dv} */
        float acc = 0.0f;
        for (size_t t = 0; t < n; t++) {
            unit_key(p->k + (row0 + t) * dk, kh + t * dk, dk);
            lg[t] = p->gate != NULL ? logf(p->gate[row0 + t]) : 0.0f;
            cl[t] = acc += lg[t];
        }
        /* kk = K K^T, qk = Q K^T (lower parts; the masks follow) */
        for (size_t t = 0; t < n; t++)
            for (size_t c = 0; c < dk; c++)
                kt[c * C + t] = kh[t * dk + c];
        memset(kk, 0, n * C * sizeof(float));
        memset(qk, 0, n * C * sizeof(float));
        gemm_acc_lower(n, dk, kh, dk, kt, C, kk, C);
        gemm_acc_lower(n, dk, q, dk, kt, C, qk, C);
        for (size_t t = 0; t < n; t++) {
            float d = 0.0f; /* log G_ti = lg_{i+1} + ... + lg_t, summed from t down */
            for (size_t i = t; i-- > 0;) {
                d += lg[i + 1];
                const float G = expf(d);
                kk[t * C + i] *= -beta[t] * G;
                qk[t * C + i] *= G;
            }
            for (size_t i = t + 1; i < n; i++)
                qk[t * C + i] = 0.0f;
        }
        /* u_t = beta_t (v_t - gamma_t (S_0 k_t)), then the triangular solve
         * u_t += sum_{i<t} kk_ti u_i, row by row */
        memset(u, 0, n * dv * sizeof(float));
        gemm_acc(n, dv, dk, kh, dk, St, dv, u, dv);
        for (size_t t = 0; t < n; t++) {
            const float gamma = expf(cl[t]);
            for (size_t j = 0; j < dv; j++)
                u[t * dv + j] = beta[t] * (v[t * dv + j] - gamma * u[t * dv + j]);
            if (t > 0)
                gemm_acc(1, dv, t, kk + t * C, C, u, dv, u + t * dv, dv);
        }
        /* y = diag(gamma) Q S_0^T + qk U */
        for (size_t t = 0; t < n; t++) {
            const float gamma = expf(cl[t]);
            for (size_t c = 0; c < dk; c++)
                qd[t * dk + c] = gamma * q[t * dk + c];
        }
        memset(y, 0, n * dv * sizeof(float));
        gemm_acc(n, dv, dk, qd, dk, St, dv, y, dv);
        gemm_acc_tril(n, dv, qk, C, u, dv, y, dv);
        /* S_C = gamma_C S_0 + (G_C K)^T U, G_C,i = exp(lg_{i+1} + ... + lg_{n-1}) */
        if (p->gate != NULL) {
            const float gamma_c = expf(cl[n - 1]);
            for (size_t c = 0; c < dk; c++)
                scale_row(St + c * dv, gamma_c, dv);
            float d = 0.0f;
            for (size_t i = n; i-- > 0;) {
                const float G = expf(d);
                for (size_t c = 0; c < dk; c++)
                    kt[c * C + i] *= G;
                d += lg[i];
            }
        }
        gemm_acc(dk, dv, n, kt, C, u, dv, St, dv);
    }
    store_state(p, h, St);
}

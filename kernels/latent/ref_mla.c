/* Float64 oracle for DeepSeek-V2 multi-head latent attention with the decoupled rotary key,
 * written the expanded way: build every head's keys and values from the latents, then
 * softmax attention, one query row at a time. */
#include "latent.h"

#include "../attention/attention.h"

#include <math.h>

lm_status lm_mla_check(const lm_mla_shape *s, lm_error *err)
{
    if (s == NULL)
        return lm_fail(err, LM_ERR_ARG, "shape must not be NULL");
    if (s->heads == 0 || s->latent == 0 || s->nope == 0 || s->v_dim == 0)
        return lm_fail(err, LM_ERR_SHAPE, "heads, latent, nope and v_dim must be positive");
    if (s->v_dim > s->nope + s->rope)
        return lm_fail(err, LM_ERR_SHAPE, "v_dim (%zu) must be at most nope + rope (%zu)",
                       s->v_dim, s->nope + s->rope);
    return LM_OK;
}

lm_status lm_mla_attend_f64_ref(const lm_mla_shape *s, const double *q, const double *ckv,
                                const double *w_uk, const double *w_uv, size_t n_q, size_t n,
                                bool causal, double *o, lm_error *err)
{
    lm_status status = lm_mla_check(s, err);
    if (status != LM_OK)
        return status;
    if (n == 0 || n_q == 0 || (causal && n_q != n))
        return lm_fail(err, LM_ERR_SHAPE, "n and n_q must be positive (n_q = n when causal)");
    if (q == NULL || ckv == NULL || w_uk == NULL || w_uv == NULL || o == NULL)
        return lm_fail(err, LM_ERR_ARG, "q, ckv, w_uk, w_uv and o must not be NULL");
    const size_t H = s->heads, L = s->latent, R = s->rope, dq = s->nope + s->rope;
    if (!lm_all_finite_f64(q, n_q * H * dq) || !lm_all_finite_f64(ckv, n * (L + R)) ||
        !lm_all_finite_f64(w_uk, L * H * s->nope) || !lm_all_finite_f64(w_uv, L * H * s->v_dim))
        return lm_fail(err, LM_ERR_NONFINITE, "q, ckv, w_uk and w_uv must be finite");
    double *k = lm_alloc(n * dq * sizeof *k);        /* one head's keys {n, nope + rope} */
    double *v = lm_alloc(n * s->v_dim * sizeof *v);  /* one head's values {n, v_dim} */
    double *w = lm_alloc(n * sizeof *w);
    if (k == NULL || v == NULL || w == NULL) {
        lm_free(k), lm_free(v), lm_free(w);
        return lm_fail(err, LM_ERR_NOMEM, "latent oracle scratch for %zu tokens", n);
    }
    const double root = sqrt((double)dq);
    for (size_t h = 0; h < H; h++) {
        for (size_t j = 0; j < n; j++) { /* k_j = [c_j W_uk_h, k_rope_j], v_j = c_j W_uv_h */
            const double *c = ckv + j * (L + R);
            for (size_t e = 0; e < s->nope; e++) {
                double sum = 0.0;
                for (size_t l = 0; l < L; l++)
                    sum += c[l] * w_uk[l * H * s->nope + h * s->nope + e];
                k[j * dq + e] = sum;
            }
            for (size_t r = 0; r < R; r++)
                k[j * dq + s->nope + r] = c[L + r];
            for (size_t e = 0; e < s->v_dim; e++) {
                double sum = 0.0;
                for (size_t l = 0; l < L; l++)
                    sum += c[l] * w_uv[l * H * s->v_dim + h * s->v_dim + e];
                v[j * s->v_dim + e] = sum;
            }
        }
        for (size_t i = 0; i < n_q; i++) {
            const double *qi = q + (i * H + h) * dq;
            const size_t keys = causal ? i + 1 : n;
            double top = -(double)INFINITY, total = 0.0;
            for (size_t j = 0; j < keys; j++) {
                double dot = 0.0;
                for (size_t c = 0; c < dq; c++)
                    dot += qi[c] * k[j * dq + c];
                w[j] = dot / root;
                top = w[j] > top ? w[j] : top;
            }
            double *oi = o + (i * H + h) * s->v_dim;
            for (size_t e = 0; e < s->v_dim; e++)
                oi[e] = 0.0;
            for (size_t j = 0; j < keys; j++) {
                double p = exp(w[j] - top);
                total += p;
                for (size_t e = 0; e < s->v_dim; e++)
                    oi[e] += p * v[j * s->v_dim + e];
            }
            for (size_t e = 0; e < s->v_dim; e++)
                oi[e] /= total;
        }
    }
    lm_free(k), lm_free(v), lm_free(w);
    return LM_OK;
}

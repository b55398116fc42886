/* Float64 oracle of the (gated) delta rule over sequences (delta.h), token by token:
 * the M8 update (decay, then correct toward v along the unit key) and the readout S q. */
#include "delta.h"
#include "lm_validate.h"

#include <math.h>
#include <stdlib.h>

lm_status lm_delta_gated_f64_ref(const lm_delta_seq_f64 *p, lm_error *err)
{
    const size_t H = p->heads, L = p->length, dk = p->d_key, dv = p->d_value;
    if (H == 0 || L == 0 || dk == 0 || dv == 0)
        return lm_fail(err, LM_ERR_SHAPE, "heads, length, d_key and d_value must be positive");
    if (!p->q || !p->k || !p->v || !p->beta || !p->y)
        return lm_fail(err, LM_ERR_SHAPE, "q, k, v, beta and y must be given");
    lm_status s;
    if ((s = lm_require_finite_or_null_f64("q", p->q, H * L * dk, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("k", p->k, H * L * dk, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("v", p->v, H * L * dv, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("beta", p->beta, H * L, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("gate", p->gate, H * L, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("s0", p->s0, H * dv * dk, err)) != LM_OK)
        return s;
    for (size_t i = 0; i < H * L; i++) {
        if (p->beta[i] < 0.0 || p->beta[i] > 1.0)
            return lm_fail(err, LM_ERR_ARG, "beta must lie in [0, 1], beta[%zu] = %g", i,
                           p->beta[i]);
        if (p->gate != NULL && !(p->gate[i] > 0.0 && p->gate[i] <= 1.0))
            return lm_fail(err, LM_ERR_DOMAIN, "gate must lie in (0, 1], gate[%zu] = %g", i,
                           p->gate[i]);
    }
    double *S = malloc(dv * dk * sizeof(double)), *kh = malloc(dk * sizeof(double));
    if (S == NULL || kh == NULL) {
        free(S), free(kh);
        return lm_fail(err, LM_ERR_NOMEM, "no memory for the state");
    }
    lm_status status = LM_OK;
    for (size_t h = 0; h < H && status == LM_OK; h++) {
        for (size_t i = 0; i < dv * dk; i++)
            S[i] = p->s0 != NULL ? p->s0[h * dv * dk + i] : 0.0;
        for (size_t t = 0; t < L; t++) {
            const size_t row = h * L + t;
            const double *k = p->k + row * dk, *q = p->q + row * dk, *v = p->v + row * dv;
            /* unit key, scaled by max|k| first as m8's normalize_key does */
            double top = 0.0, norm = 0.0;
            for (size_t c = 0; c < dk; c++)
                top = fmax(top, fabs(k[c]));
            if (top == 0.0) {
                status = lm_fail(err, LM_ERR_DOMAIN, "k must have non-zero norm: head %zu, "
                                 "token %zu", h, t);
                break;
            }
            for (size_t c = 0; c < dk; c++)
                norm += (k[c] / top) * (k[c] / top);
            norm = sqrt(norm);
            for (size_t c = 0; c < dk; c++)
                kh[c] = (k[c] / top) / norm;
            const double g = p->gate != NULL ? p->gate[row] : 1.0, beta = p->beta[row];
            for (size_t j = 0; j < dv; j++) { /* row j of S: decay, then correct */
                double *srow = S + j * dk, pred = 0.0;
                for (size_t c = 0; c < dk; c++) {
                    srow[c] *= g;
                    pred += srow[c] * kh[c];
                }
                const double u = beta * (v[j] - pred);
                double y = 0.0;
                for (size_t c = 0; c < dk; c++) {
                    srow[c] += u * kh[c];
                    y += srow[c] * q[c];
                }
                p->y[row * dv + j] = y;
            }
        }
        if (status == LM_OK && p->s_final != NULL)
            for (size_t i = 0; i < dv * dk; i++)
                p->s_final[h * dv * dk + i] = S[i];
    }
    free(S), free(kh);
    return status;
}

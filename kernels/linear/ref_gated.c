/* Float64 oracle of multi-head linear attention: additive or normalized, identity or
 * elu+1 feature, no / scalar / per-channel decay (linear.h states the math). Token by
 * token, one head at a time, for clarity. */
#include "linear.h"
#include "lm_validate.h"

#include <math.h>
#include <stdlib.h>

static double phi(lm_linear_feature feature, double x)
{
    if (feature == LM_LINEAR_IDENTITY)
        return x;
    return x > 0.0 ? x + 1.0 : exp(x); /* elu(x) + 1 */
}

lm_status lm_linear_gated_f64_ref(const lm_linear_f64 *p, lm_error *err)
{
    const size_t H = p->heads, L = p->length, dk = p->d_key, dv = p->d_value;
    if (H == 0 || L == 0 || dk == 0 || dv == 0)
        return lm_fail(err, LM_ERR_SHAPE, "heads, length, d_key and d_value must be positive");
    if (p->q == NULL || p->k == NULL || p->v == NULL || p->y == NULL)
        return lm_fail(err, LM_ERR_SHAPE, "q, k, v and y must be given");
    if (p->gate_kind != LM_LINEAR_GATE_NONE && p->gate == NULL)
        return lm_fail(err, LM_ERR_SHAPE, "gate must be given for a gated form");
    if (p->normalize && p->feature != LM_LINEAR_ELU1)
        return lm_fail(err, LM_ERR_ARG, "normalize needs feature elu1 (a positive feature "
                       "map keeps the denominator positive)");
    const size_t gate_count = p->gate_kind == LM_LINEAR_GATE_CHANNEL ? H * L * dk : H * L;
    lm_status s;
    if ((s = lm_require_finite_or_null_f64("q", p->q, H * L * dk, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("k", p->k, H * L * dk, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("v", p->v, H * L * dv, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("gate", p->gate_kind ? p->gate : NULL, gate_count, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("s0", p->s0, H * dk * dv, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("z0", p->z0, H * dk, err)) != LM_OK)
        return s;
    if (p->gate_kind != LM_LINEAR_GATE_NONE)
        for (size_t i = 0; i < gate_count; i++)
            if (!(p->gate[i] > 0.0 && p->gate[i] <= 1.0))
                return lm_fail(err, LM_ERR_DOMAIN, "gate must lie in (0, 1], gate[%zu] = %g", i,
                               p->gate[i]);

    double *S = malloc(dk * dv * sizeof(double)), *z = malloc(dk * sizeof(double));
    double *fq = malloc(dk * sizeof(double)), *fk = malloc(dk * sizeof(double));
    if (!S || !z || !fq || !fk) {
        free(S), free(z), free(fq), free(fk);
        return lm_fail(err, LM_ERR_NOMEM, "no memory for the state");
    }
    lm_status status = LM_OK;
    for (size_t h = 0; h < H && status == LM_OK; h++) {
        for (size_t i = 0; i < dk * dv; i++)
            S[i] = p->s0 != NULL ? p->s0[h * dk * dv + i] : 0.0;
        for (size_t c = 0; c < dk; c++)
            z[c] = p->z0 != NULL ? p->z0[h * dk + c] : 0.0;
        for (size_t t = 0; t < L && status == LM_OK; t++) {
            const size_t row = h * L + t;
            for (size_t c = 0; c < dk; c++) {
                fq[c] = phi(p->feature, p->q[row * dk + c]);
                fk[c] = phi(p->feature, p->k[row * dk + c]);
            }
            for (size_t c = 0; c < dk; c++) {
                double a = 1.0;
                if (p->gate_kind == LM_LINEAR_GATE_SCALAR)
                    a = p->gate[row];
                else if (p->gate_kind == LM_LINEAR_GATE_CHANNEL)
                    a = p->gate[row * dk + c];
                for (size_t j = 0; j < dv; j++) /* S = diag(a) S + phi(k) v^T */
                    S[c * dv + j] = a * S[c * dv + j] + fk[c] * p->v[row * dv + j];
                z[c] = a * z[c] + fk[c];
            }
            double den = 1.0;
            if (p->normalize) {
                den = 0.0;
                for (size_t c = 0; c < dk; c++)
                    den += fq[c] * z[c];
                if (!(den > 0.0)) {
                    status = lm_fail(err, LM_ERR_NUMERIC, "the normalizer of head %zu, token "
                                     "%zu is not positive", h, t);
                    break;
                }
            }
            for (size_t j = 0; j < dv; j++) { /* y = S^T phi(q) / den */
                double acc = 0.0;
                for (size_t c = 0; c < dk; c++)
                    acc += S[c * dv + j] * fq[c];
                p->y[row * dv + j] = acc / den;
            }
        }
        if (status == LM_OK && p->s_final != NULL)
            for (size_t i = 0; i < dk * dv; i++)
                p->s_final[h * dk * dv + i] = S[i];
        if (status == LM_OK && p->z_final != NULL)
            for (size_t c = 0; c < dk; c++)
                p->z_final[h * dk + c] = z[c];
    }
    free(S), free(z), free(fq), free(fk);
    return status;
}

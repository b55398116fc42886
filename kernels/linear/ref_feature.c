/* Float64 references for the lesson's linear attention with phi = elu + 1. */
#include "linear.h"
#include "lm_validate.h"

#include <math.h>
#include <string.h>

static double phi(double x)
{
    return x > 0.0 ? x + 1.0 : exp(x);
}

static lm_status check_qkv(const double *q, const double *k, const double *v, size_t n,
                           size_t d, size_t d_v, lm_error *err)
{
    if (q == NULL || k == NULL || (d_v > 0 && v == NULL))
        return lm_fail(err, LM_ERR_ARG, "q, k and v must not be NULL");
    if (n == 0 || d == 0)
        return lm_fail(err, LM_ERR_SHAPE, "q and k must be non-empty, got n=%zu d=%zu", n, d);
    lm_status status = lm_require_finite_f64("q", q, n * d, err);
    if (status == LM_OK)
        status = lm_require_finite_f64("k", k, n * d, err);
    if (status == LM_OK && d_v > 0)
        status = lm_require_finite_f64("v", v, n * d_v, err);
    return status;
}

/* check_qkv for an attention output: out given and values of positive width d_v. */
static lm_status check_attention(const double *q, const double *k, const double *v, size_t n,
                                 size_t d, size_t d_v, const double *out, lm_error *err)
{
    if (out == NULL)
        return lm_fail(err, LM_ERR_ARG, "out must not be NULL");
    if (d_v == 0)
        return lm_fail(err, LM_ERR_SHAPE, "v must have a positive width d_v");
    return check_qkv(q, k, v, n, d, d_v, err);
}

lm_status lm_linear_feature_map_f64_ref(const double *x, size_t count, double *out,
                                        lm_error *err)
{
    if (x == NULL || out == NULL)
        return lm_fail(err, LM_ERR_ARG, "x and out must not be NULL");
    lm_status status = lm_require_nonempty_finite_f64("x", x, count, err);
    if (status != LM_OK)
        return status;
    for (size_t i = 0; i < count; i++)
        out[i] = phi(x[i]);
    return LM_OK;
}

lm_status lm_linear_feature_weights_f64_ref(const double *q, const double *k, size_t n,
                                            size_t d, double *weights, lm_error *err)
{
    if (weights == NULL)
        return lm_fail(err, LM_ERR_ARG, "weights must not be NULL");
    lm_status status = check_qkv(q, k, NULL, n, d, 0, err);
    if (status != LM_OK)
        return status;
    for (size_t i = 0; i < n; i++) {
        double total = 0.0;
        for (size_t j = 0; j < n; j++) {
            double score = 0.0;
            if (j <= i) /* the future contributes nothing */
                for (size_t c = 0; c < d; c++)
                    score += phi(q[i * d + c]) * phi(k[j * d + c]);
            weights[i * n + j] = score;
            total += score;
        }
        if (!(total > 0.0) || !isfinite(total))
            return lm_fail(err, LM_ERR_NUMERIC, "row %zu of the weights has total %g", i, total);
        for (size_t j = 0; j < n; j++)
            weights[i * n + j] /= total;
    }
    return LM_OK;
}

lm_status lm_linear_feature_quadratic_f64_ref(const double *q, const double *k,
                                              const double *v, size_t n, size_t d,
                                              size_t d_v, double *out, lm_error *err)
{
    lm_status status = check_attention(q, k, v, n, d, d_v, out, err);
    if (status != LM_OK)
        return status;
    double *weights = lm_alloc(n * n * sizeof *weights); /* {n, n} */
    if (weights == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "weights of %zu x %zu", n, n);
    status = lm_linear_feature_weights_f64_ref(q, k, n, d, weights, err);
    if (status == LM_OK)
        for (size_t i = 0; i < n; i++)
            for (size_t c = 0; c < d_v; c++) {
                double sum = 0.0;
                for (size_t j = 0; j < n; j++)
                    sum += weights[i * n + j] * v[j * d_v + c];
                out[i * d_v + c] = sum;
            }
    lm_free(weights);
    return status;
}

lm_status lm_linear_feature_recurrent_f64_ref(const double *q, const double *k,
                                              const double *v, size_t n, size_t d,
                                              size_t d_v, double *out, double *s_final,
                                              double *z_final, lm_error *err)
{
    lm_status status = check_attention(q, k, v, n, d, d_v, out, err);
    if (status != LM_OK)
        return status;
    double *s = lm_alloc(d * d_v * sizeof *s);       /* {d, d_v}: the pot */
    double *z = lm_alloc(d * sizeof *z);             /* {d}: the running total of phi(k) */
    double *phi_q = lm_alloc(d * sizeof *phi_q);     /* {d} */
    if (s == NULL || z == NULL || phi_q == NULL) {
        lm_free(s);
        lm_free(z);
        lm_free(phi_q);
        return lm_fail(err, LM_ERR_NOMEM, "linear attention state of %zu x %zu", d, d_v);
    }
    for (size_t i = 0; i < n && status == LM_OK; i++) {
        for (size_t m = 0; m < d; m++) {
            double phi_k = phi(k[i * d + m]);
            for (size_t c = 0; c < d_v; c++)
                s[m * d_v + c] += phi_k * v[i * d_v + c]; /* S += phi(k_i) v_i^T */
            z[m] += phi_k;                                /* z += phi(k_i) */
            phi_q[m] = phi(q[i * d + m]);
        }
        double denominator = 0.0;
        for (size_t m = 0; m < d; m++)
            denominator += phi_q[m] * z[m];
        if (!(denominator > 0.0) || !isfinite(denominator)) {
            status = lm_fail(err, LM_ERR_NUMERIC, "phi(q) . z of token %zu is %g", i,
                             denominator);
            break;
        }
        for (size_t c = 0; c < d_v; c++) {
            double numerator = 0.0;
            for (size_t m = 0; m < d; m++)
                numerator += phi_q[m] * s[m * d_v + c];
            out[i * d_v + c] = numerator / denominator;
        }
    }
    if (status == LM_OK && s_final != NULL)
        memcpy(s_final, s, d * d_v * sizeof *s);
    if (status == LM_OK && z_final != NULL)
        memcpy(z_final, z, d * sizeof *z);
    lm_free(s);
    lm_free(z);
    lm_free(phi_q);
    return status;
}

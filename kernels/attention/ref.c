/* Float64 oracle for softmax attention (lesson section 4 and every masked variant). */
#include "attention.h"
#include "lm_validate.h"

#include <math.h>

lm_status lm_attn_softmax_rows_f64_ref(const double *scores, double *out, size_t rows,
                                       size_t cols, lm_error *err)
{
    if (scores == NULL || out == NULL)
        return lm_fail(err, LM_ERR_ARG, "scores and out must not be NULL");
    if (rows == 0 || cols == 0)
        return lm_fail(err, LM_ERR_SHAPE, "scores must be non-empty, got shape {%zu, %zu}",
                       rows, cols);
    for (size_t r = 0; r < rows; r++) {
        const double *x = scores + r * cols;
        double top = -HUGE_VAL;
        for (size_t c = 0; c < cols; c++) {
            if (isnan(x[c]) || x[c] == HUGE_VAL)
                return lm_fail(err, LM_ERR_NONFINITE,
                               "scores must be finite or -inf (masked), got %g at [%zu, %zu]",
                               x[c], r, c);
            if (x[c] > top)
                top = x[c];
        }
        if (top == -HUGE_VAL)
            return lm_fail(err, LM_ERR_DOMAIN, "scores row %zu has no unmasked entry", r);
        double *y = out + r * cols;
        double total = 0.0;
        for (size_t c = 0; c < cols; c++) {
            y[c] = x[c] == -HUGE_VAL ? 0.0 : exp(x[c] - top); /* max entry gives exp(0) = 1 */
            total += y[c];
        }
        for (size_t c = 0; c < cols; c++)
            y[c] /= total;
    }
    return LM_OK;
}

lm_status lm_attn_causal_mask(size_t n, uint8_t *mask, lm_error *err)
{
    if (mask == NULL)
        return lm_fail(err, LM_ERR_ARG, "mask must not be NULL");
    if (n == 0)
        return lm_fail(err, LM_ERR_SHAPE, "n must be positive");
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            mask[i * n + j] = j <= i;
    return LM_OK;
}

lm_status lm_attn_sdpa_f64_ref(const double *q, const double *k, const double *v,
                               const uint8_t *mask, bool scale, size_t n_q, size_t n_k,
                               size_t d, size_t d_v, double *out, double *weights,
                               lm_error *err)
{
    if (q == NULL || k == NULL || v == NULL || out == NULL)
        return lm_fail(err, LM_ERR_ARG, "q, k, v and out must not be NULL");
    if (n_q == 0 || n_k == 0 || d == 0 || d_v == 0)
        return lm_fail(err, LM_ERR_SHAPE,
                       "attention extents must be positive, got n_q=%zu n_k=%zu d=%zu d_v=%zu",
                       n_q, n_k, d, d_v);
    lm_status status;
    if ((status = lm_require_finite_f64("q", q, n_q * d, err)) != LM_OK ||
        (status = lm_require_finite_f64("k", k, n_k * d, err)) != LM_OK ||
        (status = lm_require_finite_f64("v", v, n_k * d_v, err)) != LM_OK)
        return status;
    double *row = lm_alloc(n_k * sizeof *row);
    if (row == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "attention scratch of %zu scores", n_k);
    const double root = sqrt((double)d);
    status = LM_OK;
    for (size_t i = 0; i < n_q && status == LM_OK; i++) {
        for (size_t j = 0; j < n_k; j++) {
            if (mask != NULL && !mask[i * n_k + j]) {
                row[j] = -HUGE_VAL;
                continue;
            }
            double dot = 0.0;
            for (size_t c = 0; c < d; c++)
                dot += q[i * d + c] * k[j * d + c];
            row[j] = scale ? dot / root : dot;
        }
        status = lm_attn_softmax_rows_f64_ref(row, row, 1, n_k, err);
        if (status == LM_ERR_DOMAIN)
            status = lm_fail(err, LM_ERR_DOMAIN, "mask row %zu allows no key", i);
        if (status != LM_OK)
            break;
        for (size_t c = 0; c < d_v; c++) {
            double sum = 0.0;
            for (size_t j = 0; j < n_k; j++)
                sum += row[j] * v[j * d_v + c];
            out[i * d_v + c] = sum;
        }
        if (weights != NULL)
            for (size_t j = 0; j < n_k; j++)
                weights[i * n_k + j] = row[j];
    }
    lm_free(row);
    return status;
}

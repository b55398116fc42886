/* Float64 oracle for key normalization and the gated delta rule. */
#include "delta.h"
#include "lm_validate.h"

#include <math.h>

static double euclidean_norm(const double *x, size_t width)
{
    double sum = 0.0;
    for (size_t i = 0; i < width; i++)
        sum += x[i] * x[i];
    return sqrt(sum);
}

lm_status lm_delta_normalize_key_f64_ref(const double *key, size_t width, double *unit_key,
                                         lm_error *err)
{
    lm_status status = lm_require_nonempty_finite_f64("key", key, width, err);
    if (status != LM_OK)
        return status;
    double scale = 0.0; /* max |key|: dividing by it first keeps the squares in range */
    for (size_t i = 0; i < width; i++)
        scale = fmax(scale, fabs(key[i]));
    if (scale == 0.0)
        return lm_fail(err, LM_ERR_DOMAIN, "key must have non-zero norm");
    for (size_t i = 0; i < width; i++)
        unit_key[i] = key[i] / scale;
    double norm = euclidean_norm(unit_key, width);
    for (size_t i = 0; i < width; i++)
        unit_key[i] /= norm;
    return LM_OK;
}

lm_status lm_delta_update_f64_ref(const double *state, size_t state_rows, size_t state_cols,
                                  const double *key, size_t key_width, const double *value,
                                  size_t value_width, double beta, double decay,
                                  bool normalize, const lm_delta_update_result *result,
                                  lm_error *err)
{
    lm_status status;
    if (state_rows == 0 || state_cols == 0)
        return lm_fail(err, LM_ERR_SHAPE, "state must be non-empty");
    if ((status = lm_require_finite_f64("state", state, state_rows * state_cols, err)) != LM_OK)
        return status;
    if ((status = lm_require_nonempty_finite_f64("key", key, key_width, err)) != LM_OK ||
        (status = lm_require_nonempty_finite_f64("value", value, value_width, err)) != LM_OK)
        return status;
    if (state_rows != value_width || state_cols != key_width)
        return lm_fail(err, LM_ERR_SHAPE,
                       "state must have shape [d_value, d_key] = [%zu, %zu], got [%zu, %zu]",
                       value_width, key_width, state_rows, state_cols);
    if ((status = lm_require_unit_interval_f64("beta", beta, err)) != LM_OK ||
        (status = lm_require_unit_interval_f64("decay", decay, err)) != LM_OK)
        return status;

    double *k = result->normalized_key; /* {d_key} */
    if (normalize) {
        if ((status = lm_delta_normalize_key_f64_ref(key, key_width, k, err)) != LM_OK)
            return status;
    } else {
        double norm = euclidean_norm(key, key_width);
        if (!(fabs(norm - 1.0) <= 1e-10))
            return lm_fail(err, LM_ERR_DOMAIN,
                           "key must have unit norm when normalize=false (|key| = %.17g)", norm);
        for (size_t c = 0; c < key_width; c++)
            k[c] = key[c];
    }

    const size_t dv = value_width, dk = key_width;
    for (size_t r = 0; r < dv; r++) { /* before = (decay * S) k */
        double prediction = 0.0;
        for (size_t c = 0; c < dk; c++)
            prediction += (decay * state[r * dk + c]) * k[c];
        result->retrieval_before[r] = prediction;
    }
    for (size_t r = 0; r < dv; r++) {
        double correction = value[r] - result->retrieval_before[r];
        for (size_t c = 0; c < dk; c++)
            result->state[r * dk + c] = decay * state[r * dk + c] + beta * (correction * k[c]);
    }
    for (size_t r = 0; r < dv; r++) { /* after = S' k */
        double retrieved = 0.0;
        for (size_t c = 0; c < dk; c++)
            retrieved += result->state[r * dk + c] * k[c];
        result->retrieval_after[r] = retrieved;
    }
    return LM_OK;
}

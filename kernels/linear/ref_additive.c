/* Float64 oracle for causal additive linear attention, sequential and chunked. */
#include "linear.h"
#include "lm_validate.h"

static lm_status validate_qkv(const double *q, size_t q_width, const double *k, size_t k_width,
                              const double *v, size_t value_width, size_t steps, lm_error *err)
{
    if (steps == 0 || q_width == 0)
        return lm_fail(err, LM_ERR_SHAPE, "q must be non-empty, got shape [%zu, %zu]", steps,
                       q_width);
    if (k_width == 0)
        return lm_fail(err, LM_ERR_SHAPE, "k must be non-empty, got shape [%zu, 0]", steps);
    if (value_width == 0)
        return lm_fail(err, LM_ERR_SHAPE, "v must be non-empty, got shape [%zu, 0]", steps);
    lm_status status;
    if ((status = lm_require_finite_f64("q", q, steps * q_width, err)) != LM_OK ||
        (status = lm_require_finite_f64("k", k, steps * k_width, err)) != LM_OK ||
        (status = lm_require_finite_f64("v", v, steps * value_width, err)) != LM_OK)
        return status;
    if (q_width != k_width)
        return lm_fail(err, LM_ERR_SHAPE,
                       "q and k must share feature width d_key (q has %zu, k has %zu)",
                       q_width, k_width);
    return LM_OK;
}

lm_status lm_linear_additive_sequential_f64_ref(const double *q, size_t q_width,
                                                const double *k, size_t k_width,
                                                const double *v, size_t value_width,
                                                size_t steps, double *out, lm_error *err)
{
    lm_status status = validate_qkv(q, q_width, k, k_width, v, value_width, steps, err);
    if (status != LM_OK)
        return status;
    const size_t dk = k_width, dv = value_width;
    double *state = lm_alloc(dv * dk * sizeof *state); /* S {d_value, d_key}, zero */
    if (state == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "linear attention state of %zu x %zu", dv, dk);
    for (size_t t = 0; t < steps; t++) {
        for (size_t r = 0; r < dv; r++)
            for (size_t c = 0; c < dk; c++)
                state[r * dk + c] += v[t * dv + r] * k[t * dk + c];
        for (size_t r = 0; r < dv; r++) {
            double y = 0.0;
            for (size_t c = 0; c < dk; c++)
                y += state[r * dk + c] * q[t * dk + c];
            out[t * dv + r] = y;
        }
    }
    lm_free(state);
    return LM_OK;
}

lm_status lm_linear_additive_chunked_f64_ref(const double *q, size_t q_width,
                                             const double *k, size_t k_width,
                                             const double *v, size_t value_width,
                                             size_t steps, size_t chunk_size, double *out,
                                             lm_error *err)
{
    lm_status status = validate_qkv(q, q_width, k, k_width, v, value_width, steps, err);
    if (status != LM_OK)
        return status;
    if ((status = lm_require_positive_size("chunk_size", chunk_size, err)) != LM_OK)
        return status;
    const size_t dk = k_width, dv = value_width;
    double *state = lm_alloc(dv * dk * sizeof *state); /* S {d_value, d_key}, zero */
    if (state == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "linear attention state of %zu x %zu", dv, dk);

    for (size_t start = 0; start < steps; start += chunk_size) {
        size_t end = steps - start < chunk_size ? steps : start + chunk_size;
        for (size_t i = start; i < end; i++) {
            double *row = out + i * dv; /* {d_value} */
            for (size_t r = 0; r < dv; r++)
                row[r] = 0.0;
            for (size_t j = start; j <= i; j++) { /* intra: sum_{j<=i} (q_i . k_j) v_j */
                double score = 0.0;
                for (size_t c = 0; c < dk; c++)
                    score += q[i * dk + c] * k[j * dk + c];
                for (size_t r = 0; r < dv; r++)
                    row[r] += score * v[j * dv + r];
            }
            for (size_t r = 0; r < dv; r++) {
                double inter = 0.0; /* (q_i S^T)[r]: what earlier chunks stored */
                for (size_t c = 0; c < dk; c++)
                    inter += q[i * dk + c] * state[r * dk + c];
                row[r] = inter + row[r];
            }
        }
        for (size_t r = 0; r < dv; r++)      /* S += v_c^T k_c */
            for (size_t c = 0; c < dk; c++) {
                double add = 0.0;
                for (size_t j = start; j < end; j++)
                    add += v[j * dv + r] * k[j * dk + c];
                state[r * dk + c] += add;
            }
    }
    lm_free(state);
    return LM_OK;
}

/* Float64 oracle for elementwise affine composition and the affine scan. */
#include "scan.h"
#include "lm_validate.h"

lm_status lm_scan_compose_affine_f64_ref(const double *later_multiplier,
                                         const double *later_bias,
                                         const double *earlier_multiplier,
                                         const double *earlier_bias, size_t width,
                                         double *out_multiplier, double *out_bias,
                                         lm_error *err)
{
    if (width == 0)
        return lm_fail(err, LM_ERR_SHAPE, "affine components must be non-empty [d_state]");
    lm_status status = lm_require_finite_f64("later.multiplier", later_multiplier, width, err);
    if (status == LM_OK)
        status = lm_require_finite_f64("later.bias", later_bias, width, err);
    if (status == LM_OK)
        status = lm_require_finite_f64("earlier.multiplier", earlier_multiplier, width, err);
    if (status == LM_OK)
        status = lm_require_finite_f64("earlier.bias", earlier_bias, width, err);
    if (status != LM_OK)
        return status;
    for (size_t i = 0; i < width; i++) {
        out_multiplier[i] = later_multiplier[i] * earlier_multiplier[i];
        out_bias[i] = later_multiplier[i] * earlier_bias[i] + later_bias[i];
    }
    return LM_OK;
}

static lm_status validate_scan(const double *multipliers, const double *biases, size_t steps,
                               size_t width, const double *initial_state, lm_error *err)
{
    if (steps == 0 || width == 0)
        return lm_fail(err, LM_ERR_SHAPE, "multipliers must be non-empty, got shape [%zu, %zu]",
                       steps, width);
    lm_status status;
    if ((status = lm_require_finite_f64("multipliers", multipliers, steps * width, err)) != LM_OK ||
        (status = lm_require_finite_f64("biases", biases, steps * width, err)) != LM_OK)
        return status;
    if (initial_state != NULL)
        return lm_require_finite_f64("initial_state", initial_state, width, err);
    return LM_OK;
}

lm_status lm_scan_affine_sequential_f64_ref(const double *multipliers, const double *biases,
                                            size_t steps, size_t width,
                                            const double *initial_state, double *states,
                                            lm_error *err)
{
    lm_status status = validate_scan(multipliers, biases, steps, width, initial_state, err);
    if (status != LM_OK)
        return status;
    for (size_t t = 0; t < steps; t++) {
        const double *previous = t == 0 ? initial_state : states + (t - 1) * width;
        for (size_t i = 0; i < width; i++) {
            double carried = previous == NULL ? 0.0 : multipliers[t * width + i] * previous[i];
            states[t * width + i] = carried + biases[t * width + i];
        }
    }
    return LM_OK;
}

lm_status lm_scan_affine_chunked_f64_ref(const double *multipliers, const double *biases,
                                         size_t steps, size_t width, size_t chunk_size,
                                         const double *initial_state, double *states,
                                         lm_error *err)
{
    lm_status status = validate_scan(multipliers, biases, steps, width, initial_state, err);
    if (status != LM_OK)
        return status;
    if ((status = lm_require_positive_size("chunk_size", chunk_size, err)) != LM_OK)
        return status;

    for (size_t start = 0; start < steps; start += chunk_size) {
        size_t end = steps - start < chunk_size ? steps : start + chunk_size;
        /* state entering the chunk: initial_state (or zero) for the first chunk */
        const double *boundary = start == 0 ? initial_state : states + (start - 1) * width;
        for (size_t i = 0; i < width; i++) {
            double h_in = boundary == NULL ? 0.0 : boundary[i];
            double local = 0.0;      /* zero-start local state */
            double cumulative = 1.0; /* cumprod of multipliers within the chunk */
            for (size_t t = start; t < end; t++) {
                double a = multipliers[t * width + i];
                local = a * local + biases[t * width + i];
                cumulative = t == start ? a : cumulative * a;
                /* written row t never feeds a later row of this chunk: the boundary state
                 * is read from row start-1, which belongs to the previous chunk */
                states[t * width + i] = local + cumulative * h_in;
            }
        }
    }
    return LM_OK;
}

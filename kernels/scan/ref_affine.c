/* Float64 oracle for elementwise affine composition and the affine scan. */
#include "scan.h"

#include <math.h>

static lm_status require_finite(const double *values, size_t count, const char *name,
                                lm_error *err)
{
    for (size_t i = 0; i < count; i++)
        if (!isfinite(values[i]))
            return lm_fail(err, LM_ERR_NONFINITE, "%s must contain only finite values", name);
    return LM_OK;
}

lm_status lm_scan_compose_affine_f64_ref(const double *later_multiplier,
                                         const double *later_bias,
                                         const double *earlier_multiplier,
                                         const double *earlier_bias, size_t width,
                                         double *out_multiplier, double *out_bias,
                                         lm_error *err)
{
    if (width == 0)
        return lm_fail(err, LM_ERR_SHAPE, "affine components must be non-empty [d_state]");
    lm_status status;
    if ((status = require_finite(later_multiplier, width, "later.multiplier", err)) != LM_OK ||
        (status = require_finite(later_bias, width, "later.bias", err)) != LM_OK ||
        (status = require_finite(earlier_multiplier, width, "earlier.multiplier", err)) != LM_OK ||
        (status = require_finite(earlier_bias, width, "earlier.bias", err)) != LM_OK)
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
    if ((status = require_finite(multipliers, steps * width, "multipliers", err)) != LM_OK ||
        (status = require_finite(biases, steps * width, "biases", err)) != LM_OK)
        return status;
    if (initial_state != NULL &&
        (status = require_finite(initial_state, width, "initial_state", err)) != LM_OK)
        return status;
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
    if (chunk_size == 0)
        return lm_fail(err, LM_ERR_ARG, "chunk_size must be positive, got 0");

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

/* Float64 oracle for the exact diagonal ZOH step and the selective diagonal scan
 * (the M8 notebook, section 1). Written for clarity: every input is validated with a message
 * that names it, as the notebook's _finite_array / _positive_real do. */
#include "ssm.h"
#include "lm_validate.h"

#include <math.h>

/* The stable lesson model: every continuous mode a[i] <= 0. */
static lm_status require_stable(const double *a, size_t d_state, lm_error *err)
{
    for (size_t i = 0; i < d_state; i++)
        if (a[i] > 0.0)
            return lm_fail(err, LM_ERR_DOMAIN,
                           "continuous_a must be non-positive for the stable lesson model "
                           "(continuous_a[%zu] = %g)", i, a[i]);
    return LM_OK;
}

/* phi = expm1(delta*a)/a, with the continuous limit phi = delta exactly at a == 0. */
static double zoh_input_factor(double a, double delta)
{
    return a == 0.0 ? delta : expm1(delta * a) / a;
}

lm_status lm_ssm_zoh_discretize_f64_ref(const double *a, size_t d_state, const double *b,
                                        size_t b_rows, size_t d_input, double delta,
                                        double *transition, double *input_matrix,
                                        lm_error *err)
{
    lm_status status = lm_require_nonempty_finite_f64("continuous_a", a, d_state, err);
    if (status != LM_OK)
        return status;
    if ((status = require_stable(a, d_state, err)) != LM_OK)
        return status;
    if (b_rows == 0 || d_input == 0)
        return lm_fail(err, LM_ERR_SHAPE, "continuous_b must be non-empty");
    if ((status = lm_require_finite_f64("continuous_b", b, b_rows * d_input, err)) != LM_OK)
        return status;
    if (b_rows != d_state)
        return lm_fail(err, LM_ERR_SHAPE,
                       "continuous_b must have shape [d_state, d_input], got [%zu, %zu] "
                       "with d_state = %zu", b_rows, d_input, d_state);
    if ((status = lm_require_positive_f64("delta", delta, err)) != LM_OK)
        return status;

    for (size_t i = 0; i < d_state; i++) {
        double factor = zoh_input_factor(a[i], delta);
        for (size_t j = 0; j < d_input; j++) {
            double entry = factor * b[i * d_input + j];
            if (!isfinite(entry))
                return lm_fail(err, LM_ERR_NUMERIC,
                               "ZOH discretization produced a non-finite input matrix "
                               "(row %zu, delta = %g)", i, delta);
        }
    }
    for (size_t i = 0; i < d_state; i++) {
        double factor = zoh_input_factor(a[i], delta);
        transition[i] = exp(delta * a[i]);
        for (size_t j = 0; j < d_input; j++)
            input_matrix[i * d_input + j] = factor * b[i * d_input + j];
    }
    return LM_OK;
}

/* Shape and value checks of the scan, in the notebook's order. */
static lm_status validate_scan(const lm_ssm_system *s, const double *inputs, size_t steps,
                               size_t input_width, const double *deltas, size_t delta_steps,
                               const double *initial_state, lm_error *err)
{
    lm_status status = lm_require_nonempty_finite_f64("continuous_a", s->a, s->d_state, err);
    if (status != LM_OK)
        return status;
    if (s->b_rows == 0 || s->d_input == 0)
        return lm_fail(err, LM_ERR_SHAPE, "continuous_b must be non-empty");
    status = lm_require_finite_f64("continuous_b", s->b, s->b_rows * s->d_input, err);
    if (status != LM_OK)
        return status;
    if (s->d_output == 0 || s->c_cols == 0)
        return lm_fail(err, LM_ERR_SHAPE, "output_c must be non-empty");
    if ((status = lm_require_finite_f64("output_c", s->c, s->d_output * s->c_cols, err)) != LM_OK)
        return status;
    if (steps == 0 || input_width == 0)
        return lm_fail(err, LM_ERR_SHAPE, "inputs must be non-empty (an empty sequence)");
    if ((status = lm_require_finite_f64("inputs", inputs, steps * input_width, err)) != LM_OK)
        return status;
    if (delta_steps == 0)
        return lm_fail(err, LM_ERR_SHAPE, "deltas must be non-empty (an empty sequence)");
    if ((status = lm_require_finite_f64("deltas", deltas, delta_steps, err)) != LM_OK)
        return status;
    if (s->b_rows != s->d_state)
        return lm_fail(err, LM_ERR_SHAPE, "continuous_b must have shape [d_state, d_input]");
    if (s->c_cols != s->d_state)
        return lm_fail(err, LM_ERR_SHAPE, "output_c must have shape [d_output, d_state]");
    if (input_width != s->d_input)
        return lm_fail(err, LM_ERR_SHAPE, "inputs must have shape [T, d_input], got width %zu "
                       "with d_input = %zu", input_width, s->d_input);
    if (steps != delta_steps)
        return lm_fail(err, LM_ERR_SHAPE,
                       "inputs and deltas must have the same sequence length (%zu != %zu)",
                       steps, delta_steps);
    for (size_t t = 0; t < delta_steps; t++)
        if (deltas[t] <= 0.0)
            return lm_fail(err, LM_ERR_ARG, "every delta must be positive (deltas[%zu] = %g)",
                           t, deltas[t]);
    if ((status = require_stable(s->a, s->d_state, err)) != LM_OK)
        return status;
    if (initial_state != NULL)
        return lm_require_finite_f64("initial_state", initial_state, s->d_state, err);
    return LM_OK;
}

lm_status lm_ssm_scan_diagonal_f64_ref(const lm_ssm_system *system, const double *inputs,
                                       size_t steps, size_t input_width,
                                       const double *deltas, size_t delta_steps,
                                       const double *initial_state, bool exact_input,
                                       const lm_ssm_scan_result *result, lm_error *err)
{
    lm_status status = validate_scan(system, inputs, steps, input_width, deltas, delta_steps,
                                     initial_state, err);
    if (status != LM_OK)
        return status;
    const size_t n = system->d_state, p = system->d_input, m = system->d_output;

    for (size_t t = 0; t < steps; t++) {
        double *transition = result->transitions + t * n;       /* {d_state} */
        double *input_matrix = result->input_matrices + t * n * p; /* {d_state, d_input} */
        status = lm_ssm_zoh_discretize_f64_ref(system->a, n, system->b, n, p, deltas[t],
                                               transition, input_matrix, err);
        if (status != LM_OK)
            return status;
        if (!exact_input)
            for (size_t k = 0; k < n * p; k++)
                input_matrix[k] = deltas[t] * system->b[k];

        const double *token = inputs + t * p;          /* {d_input} */
        const double *previous = t == 0 ? initial_state : result->states + (t - 1) * n;
        double *state = result->states + t * n;        /* {d_state} */
        for (size_t i = 0; i < n; i++) {
            double drive = 0.0;                         /* (Bbar x_t)[i] */
            for (size_t j = 0; j < p; j++)
                drive += input_matrix[i * p + j] * token[j];
            double carried = previous == NULL ? 0.0 : transition[i] * previous[i];
            state[i] = carried + drive;
        }
        for (size_t r = 0; r < m; r++) {
            double y = 0.0;
            for (size_t i = 0; i < n; i++)
                y += system->c[r * n + i] * state[i];
            result->outputs[t * m + r] = y;
        }
    }
    for (size_t k = 0; k < steps * n; k++)
        if (!isfinite(result->states[k]))
            return lm_fail(err, LM_ERR_NUMERIC, "SSM scan produced non-finite states or outputs");
    for (size_t k = 0; k < steps * m; k++)
        if (!isfinite(result->outputs[k]))
            return lm_fail(err, LM_ERR_NUMERIC, "SSM scan produced non-finite states or outputs");
    return LM_OK;
}

/* Float64 references for the lesson's state-space models (section 5): the fixed SSM as a
 * loop and as a convolution, zero-order hold for one channel, softplus step sizes, the
 * one-channel selective SSM and the recall task. */
#include "ssm.h"
#include "lm_validate.h"

#include <math.h>
#include <string.h>

static lm_status check_system(const double *a, const double *b, const double *c,
                              size_t n_state, lm_error *err)
{
    if (a == NULL || b == NULL || c == NULL)
        return lm_fail(err, LM_ERR_ARG, "A, B and C must not be NULL");
    if (n_state == 0)
        return lm_fail(err, LM_ERR_SHAPE, "the state size N must be positive");
    lm_status status = lm_require_finite_f64("A", a, n_state * n_state, err);
    if (status == LM_OK)
        status = lm_require_finite_f64("B", b, n_state, err);
    if (status == LM_OK)
        status = lm_require_finite_f64("C", c, n_state, err);
    return status;
}

static lm_status check_sequence(const char *name, const double *x, size_t steps,
                                lm_error *err)
{
    if (x == NULL)
        return lm_fail(err, LM_ERR_ARG, "%s must not be NULL", name);
    return lm_require_nonempty_finite_f64(name, x, steps, err);
}

lm_status lm_ssm_lesson_recurrent_f64_ref(const double *x, size_t steps, const double *a,
                                          const double *b, const double *c, size_t n_state,
                                          double *y, lm_error *err)
{
    lm_status status = check_sequence("x", x, steps, err);
    if (status == LM_OK)
        status = check_system(a, b, c, n_state, err);
    if (status != LM_OK)
        return status;
    if (y == NULL)
        return lm_fail(err, LM_ERR_ARG, "y must not be NULL");
    double *h = lm_alloc(2 * n_state * sizeof *h); /* {2, N}: state and next state */
    if (h == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "SSM state of %zu numbers", n_state);
    double *next = h + n_state;
    for (size_t t = 0; t < steps; t++) {
        double out = 0.0;
        for (size_t i = 0; i < n_state; i++) {
            double sum = 0.0;
            for (size_t j = 0; j < n_state; j++)
                sum += a[i * n_state + j] * h[j];
            next[i] = sum + b[i] * x[t]; /* h = A h + B x_t */
        }
        memcpy(h, next, n_state * sizeof *h);
        for (size_t i = 0; i < n_state; i++)
            out += c[i] * h[i];
        if (!isfinite(out)) {
            lm_free(h);
            return lm_fail(err, LM_ERR_NUMERIC, "the SSM output overflowed at step %zu", t);
        }
        y[t] = out;
    }
    lm_free(h);
    return LM_OK;
}

lm_status lm_ssm_lesson_kernel_f64_ref(const double *a, const double *b, const double *c,
                                       size_t n_state, size_t length, double *kernel,
                                       lm_error *err)
{
    lm_status status = check_system(a, b, c, n_state, err);
    if (status != LM_OK)
        return status;
    if (kernel == NULL)
        return lm_fail(err, LM_ERR_ARG, "kernel must not be NULL");
    if (length == 0)
        return lm_fail(err, LM_ERR_SHAPE, "length must be positive");
    double *power = lm_alloc(2 * n_state * sizeof *power); /* A^k B, and the next one */
    if (power == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "kernel scratch of %zu numbers", n_state);
    double *next = power + n_state;
    memcpy(power, b, n_state * sizeof *power);
    for (size_t k = 0; k < length; k++) {
        double value = 0.0;
        for (size_t i = 0; i < n_state; i++)
            value += c[i] * power[i];
        kernel[k] = value;
        for (size_t i = 0; i < n_state; i++) {
            double sum = 0.0;
            for (size_t j = 0; j < n_state; j++)
                sum += a[i * n_state + j] * power[j];
            next[i] = sum;
        }
        memcpy(power, next, n_state * sizeof *power);
    }
    lm_free(power);
    return LM_OK;
}

lm_status lm_ssm_lesson_convolution_f64_ref(const double *x, size_t steps, const double *a,
                                            const double *b, const double *c,
                                            size_t n_state, double *y, lm_error *err)
{
    lm_status status = check_sequence("x", x, steps, err);
    if (status != LM_OK)
        return status;
    if (y == NULL)
        return lm_fail(err, LM_ERR_ARG, "y must not be NULL");
    double *kernel = lm_alloc(steps * sizeof *kernel);
    if (kernel == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "kernel of %zu numbers", steps);
    status = lm_ssm_lesson_kernel_f64_ref(a, b, c, n_state, steps, kernel, err);
    for (size_t t = 0; t < steps && status == LM_OK; t++) {
        double sum = 0.0;
        for (size_t k = 0; k <= t; k++)
            sum += kernel[k] * x[t - k]; /* y_t = sum_k (C A^k B) x_{t-k} */
        y[t] = sum;
    }
    lm_free(kernel);
    return status;
}

lm_status lm_ssm_lesson_discretize(double delta, double a, double b, double *a_bar,
                                   double *b_bar, lm_error *err)
{
    if (a_bar == NULL || b_bar == NULL)
        return lm_fail(err, LM_ERR_ARG, "a_bar and b_bar must not be NULL");
    if (!isfinite(delta) || !isfinite(a) || !isfinite(b))
        return lm_fail(err, LM_ERR_NONFINITE, "delta, a and b must be finite");
    if (!(delta > 0.0))
        return lm_fail(err, LM_ERR_ARG, "delta must be positive, got %g", delta);
    if (!(a < 0.0))
        return lm_fail(err, LM_ERR_DOMAIN, "a must be negative (a stable mode), got %g", a);
    double keep = exp(delta * a);
    *a_bar = keep;
    *b_bar = (keep - 1.0) / a * b;
    return LM_OK;
}

static double softplus(double x)
{
    /* numpy.logaddexp(0, x): the larger argument plus log1p(exp(-|difference|)) */
    if (x == 0.0)
        return log(2.0);
    if (x > 0.0)
        return x + log1p(exp(-x));
    return log1p(exp(x));
}

lm_status lm_ssm_softplus_f64_ref(const double *x, size_t count, double *out, lm_error *err)
{
    lm_status status = check_sequence("x", x, count, err);
    if (status != LM_OK)
        return status;
    if (out == NULL)
        return lm_fail(err, LM_ERR_ARG, "out must not be NULL");
    for (size_t i = 0; i < count; i++)
        out[i] = softplus(x[i]);
    return LM_OK;
}

lm_status lm_ssm_step_sizes_f64_ref(const double *markers, size_t count, double sharpness,
                                    double bias, double *delta, lm_error *err)
{
    lm_status status = check_sequence("markers", markers, count, err);
    if (status != LM_OK)
        return status;
    if (delta == NULL)
        return lm_fail(err, LM_ERR_ARG, "delta must not be NULL");
    if (!isfinite(sharpness) || !isfinite(bias))
        return lm_fail(err, LM_ERR_NONFINITE, "sharpness and bias must be finite");
    for (size_t i = 0; i < count; i++) {
        double u = sharpness * markers[i] + bias;
        if (!isfinite(u))
            return lm_fail(err, LM_ERR_NUMERIC, "sharpness * markers[%zu] + bias overflowed", i);
        delta[i] = softplus(u);
    }
    return LM_OK;
}

lm_status lm_ssm_lesson_selective_f64_ref(const double *x, const double *delta, size_t steps,
                                          double a, double b, double c, double *y,
                                          lm_error *err)
{
    lm_status status = check_sequence("x", x, steps, err);
    if (status == LM_OK)
        status = check_sequence("delta", delta, steps, err);
    if (status != LM_OK)
        return status;
    if (y == NULL)
        return lm_fail(err, LM_ERR_ARG, "y must not be NULL");
    if (!isfinite(c))
        return lm_fail(err, LM_ERR_NONFINITE, "c must be finite");
    double h = 0.0;
    for (size_t t = 0; t < steps; t++) {
        double keep, write;
        status = lm_ssm_lesson_discretize(delta[t], a, b, &keep, &write, err);
        if (status != LM_OK)
            return status;
        h = keep * h + write * x[t];
        y[t] = c * h;
    }
    return LM_OK;
}

lm_status lm_ssm_selective_recall(const double *values, const double *markers, size_t steps,
                                  double sharpness, double bias, double a, double b, double c,
                                  double *final_state, lm_error *err)
{
    if (final_state == NULL)
        return lm_fail(err, LM_ERR_ARG, "final_state must not be NULL");
    if (steps == 0)
        return lm_fail(err, LM_ERR_SHAPE, "values must be non-empty");
    double *work = lm_alloc(2 * steps * sizeof *work); /* delta {steps}, y {steps} */
    if (work == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "recall scratch of %zu steps", steps);
    lm_status status = lm_ssm_step_sizes_f64_ref(markers, steps, sharpness, bias, work, err);
    if (status == LM_OK)
        status = lm_ssm_lesson_selective_f64_ref(values, work, steps, a, b, c, work + steps,
                                                 err);
    if (status == LM_OK)
        *final_state = work[2 * steps - 1];
    lm_free(work);
    return status;
}

lm_status lm_ssm_time_invariant_recall(const double *values, size_t steps, double delta,
                                       double a, double b, double c, double *final_state,
                                       lm_error *err)
{
    if (final_state == NULL)
        return lm_fail(err, LM_ERR_ARG, "final_state must not be NULL");
    if (steps == 0)
        return lm_fail(err, LM_ERR_SHAPE, "values must be non-empty");
    double *work = lm_alloc(2 * steps * sizeof *work);
    if (work == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "recall scratch of %zu steps", steps);
    for (size_t t = 0; t < steps; t++)
        work[t] = delta;
    lm_status status =
        lm_ssm_lesson_selective_f64_ref(values, work, steps, a, b, c, work + steps, err);
    if (status == LM_OK)
        *final_state = work[2 * steps - 1];
    lm_free(work);
    return status;
}

lm_status lm_ssm_geomspace(double start, double stop, size_t num, double *out, lm_error *err)
{
    if (out == NULL)
        return lm_fail(err, LM_ERR_ARG, "out must not be NULL");
    if (num == 0)
        return lm_fail(err, LM_ERR_SHAPE, "num must be positive");
    if (!isfinite(start) || !isfinite(stop) || !(start > 0.0) || !(stop > 0.0))
        return lm_fail(err, LM_ERR_DOMAIN, "start and stop must be positive and finite");
    double low = log10(start), high = log10(stop);
    double step = num > 1 ? (high - low) / (double)(num - 1) : 0.0;
    for (size_t i = 0; i < num; i++)
        out[i] = pow(10.0, (double)i * step + low); /* numpy.linspace: i * step + start */
    out[0] = start;
    if (num > 1)
        out[num - 1] = stop;
    return LM_OK;
}

lm_status lm_ssm_best_time_invariant_recall(const double *values, size_t steps,
                                            const double *grid, size_t grid_count, double a,
                                            double b, double c, size_t *best_index,
                                            double *best_delta, double *best_value,
                                            lm_error *err)
{
    if (best_index == NULL || best_delta == NULL || best_value == NULL)
        return lm_fail(err, LM_ERR_ARG, "best_index, best_delta and best_value must not be NULL");
    lm_status status = check_sequence("grid", grid, grid_count, err);
    if (status != LM_OK)
        return status;
    for (size_t g = 0; g < grid_count; g++) {
        double value;
        status = lm_ssm_time_invariant_recall(values, steps, grid[g], a, b, c, &value, err);
        if (status != LM_OK)
            return status;
        if (g == 0 || value > *best_value) { /* strict: the first maximum, like argmax */
            *best_index = g;
            *best_delta = grid[g];
            *best_value = value;
        }
    }
    return LM_OK;
}

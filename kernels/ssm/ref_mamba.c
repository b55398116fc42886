/* Float64 oracle for the Mamba-1 selective scan (ssm.h states the math). Written for
 * clarity, one (batch row, channel, token, state index) at a time; it validates every
 * input and is the reference for each float32 path. */
#include "ssm.h"
#include "lm_validate.h"
#include "lm_math.h"

#include <math.h>

static double silu(double v) { return v / (1.0 + exp(-v)); }

static lm_status check_shapes(const lm_ssm_mamba1_f64 *p, lm_error *err)
{
    if (p->batch == 0 || p->length == 0 || p->channels == 0 || p->state == 0)
        return lm_fail(err, LM_ERR_SHAPE, "batch, length, channels and state must be positive, "
                       "got B=%zu L=%zu D=%zu N=%zu", p->batch, p->length, p->channels, p->state);
    if (p->state > LM_SSM_MAX_STATE)
        return lm_fail(err, LM_ERR_SHAPE, "state must be at most %d, got N=%zu",
                       LM_SSM_MAX_STATE, p->state);
    if (p->x == NULL || p->delta_raw == NULL || p->a == NULL || p->b == NULL || p->c == NULL ||
        p->y == NULL)
        return lm_fail(err, LM_ERR_SHAPE, "x, delta_raw, a, b, c and y must be given");
    return LM_OK;
}

lm_status lm_ssm_mamba1_scan_f64_ref(const lm_ssm_mamba1_f64 *p, lm_error *err)
{
    lm_status status = check_shapes(p, err);
    if (status != LM_OK)
        return status;
    const size_t B = p->batch, L = p->length, D = p->channels, N = p->state;
    const size_t tokens = B * L;
    if ((status = lm_require_finite_or_null_f64("x", p->x, tokens * D, err)) != LM_OK ||
        (status = lm_require_finite_or_null_f64("delta_raw", p->delta_raw, tokens * D, err)) != LM_OK ||
        (status = lm_require_finite_or_null_f64("delta_bias", p->delta_bias, D, err)) != LM_OK ||
        (status = lm_require_finite_or_null_f64("a", p->a, D * N, err)) != LM_OK ||
        (status = lm_require_finite_or_null_f64("b", p->b, tokens * N, err)) != LM_OK ||
        (status = lm_require_finite_or_null_f64("c", p->c, tokens * N, err)) != LM_OK ||
        (status = lm_require_finite_or_null_f64("skip", p->skip, D, err)) != LM_OK ||
        (status = lm_require_finite_or_null_f64("z", p->z, tokens * D, err)) != LM_OK ||
        (status = lm_require_finite_or_null_f64("h0", p->h0, B * D * N, err)) != LM_OK)
        return status;
    for (size_t i = 0; i < D * N; i++)
        if (p->a[i] > 0.0)
            return lm_fail(err, LM_ERR_DOMAIN, "a must be non-positive (stable modes): "
                           "a[%zu,%zu] = %g", i / N, i % N, p->a[i]);

    double h[LM_SSM_MAX_STATE];
    for (size_t bi = 0; bi < B; bi++) {
        for (size_t d = 0; d < D; d++) {
            const double *a = p->a + d * N; /* {N} */
            for (size_t n = 0; n < N; n++)
                h[n] = p->h0 != NULL ? p->h0[(bi * D + d) * N + n] : 0.0;
            for (size_t t = 0; t < L; t++) {
                const size_t row = bi * L + t;
                const double x = p->x[row * D + d];
                const double bias = p->delta_bias != NULL ? p->delta_bias[d] : 0.0;
                const double delta = lm_softplus_f64(p->delta_raw[row * D + d] + bias);
                const double *bt = p->b + row * N, *ct = p->c + row * N; /* {N} */
                double y = 0.0;
                for (size_t n = 0; n < N; n++) {
                    const double abar = exp(delta * a[n]);
                    double factor = delta; /* delta*B approximation, and ZOH's a == 0 limit */
                    if (p->exact_zoh && a[n] != 0.0)
                        factor = expm1(delta * a[n]) / a[n];
                    h[n] = abar * h[n] + factor * bt[n] * x;
                    y += ct[n] * h[n];
                }
                if (p->skip != NULL)
                    y += p->skip[d] * x;
                if (p->z != NULL)
                    y *= silu(p->z[row * D + d]);
                if (!isfinite(y))
                    return lm_fail(err, LM_ERR_NUMERIC, "the scan overflowed at batch %zu, "
                                   "token %zu, channel %zu", bi, t, d);
                p->y[row * D + d] = y;
            }
            if (p->h_final != NULL)
                for (size_t n = 0; n < N; n++)
                    p->h_final[(bi * D + d) * N + n] = h[n];
        }
    }
    return LM_OK;
}

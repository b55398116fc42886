/* Float64 oracle of the Mamba-2 SSD recurrence (ssm.h), token by token. */
#include "ssm.h"
#include "lm_validate.h"
#include "lm_math.h"

#include <math.h>
#include <stdlib.h>


lm_status lm_ssm_ssd_f64_ref(const lm_ssm_ssd_f64 *p, lm_error *err)
{
    const size_t B = p->batch, L = p->length, H = p->heads, P = p->head_dim;
    const size_t G = p->groups, N = p->state;
    if (B == 0 || L == 0 || H == 0 || P == 0 || G == 0 || N == 0)
        return lm_fail(err, LM_ERR_SHAPE, "batch, length, heads, head_dim, groups and state "
                       "must be positive");
    if (H % G != 0)
        return lm_fail(err, LM_ERR_SHAPE, "heads (%zu) must be a multiple of groups (%zu)", H, G);
    if (!p->x || !p->dt_raw || !p->a || !p->b || !p->c || !p->y)
        return lm_fail(err, LM_ERR_SHAPE, "x, dt_raw, a, b, c and y must be given");
    lm_status s;
    if ((s = lm_require_finite_or_null_f64("x", p->x, B * L * H * P, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("dt_raw", p->dt_raw, B * L * H, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("dt_bias", p->dt_bias, H, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("a", p->a, H, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("b", p->b, B * L * G * N, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("c", p->c, B * L * G * N, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("skip", p->skip, H, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("h0", p->h0, B * H * P * N, err)) != LM_OK)
        return s;
    for (size_t h = 0; h < H; h++)
        if (p->a[h] > 0.0)
            return lm_fail(err, LM_ERR_DOMAIN, "a must be non-positive (stable modes): a[%zu] = %g",
                           h, p->a[h]);
    double *S = malloc(P * N * sizeof(double));
    if (S == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "no memory for the state");
    for (size_t bi = 0; bi < B; bi++)
        for (size_t h = 0; h < H; h++) {
            const size_t g = h / (H / G);
            for (size_t i = 0; i < P * N; i++)
                S[i] = p->h0 != NULL ? p->h0[(bi * H + h) * P * N + i] : 0.0;
            for (size_t t = 0; t < L; t++) {
                const size_t row = bi * L + t;
                const double delta =
                    lm_softplus_f64(p->dt_raw[row * H + h] + (p->dt_bias ? p->dt_bias[h] : 0.0));
                const double abar = exp(delta * p->a[h]);
                const double *x = p->x + (row * H + h) * P;   /* {P} */
                const double *bt = p->b + (row * G + g) * N;  /* {N} */
                const double *ct = p->c + (row * G + g) * N;  /* {N} */
                for (size_t i = 0; i < P; i++) {
                    double y = 0.0;
                    for (size_t n = 0; n < N; n++) {
                        S[i * N + n] = abar * S[i * N + n] + delta * x[i] * bt[n];
                        y += S[i * N + n] * ct[n];
                    }
                    p->y[(row * H + h) * P + i] = y + (p->skip ? p->skip[h] * x[i] : 0.0);
                }
            }
            if (p->h_final != NULL)
                for (size_t i = 0; i < P * N; i++)
                    p->h_final[(bi * H + h) * P * N + i] = S[i];
        }
    free(S);
    return LM_OK;
}

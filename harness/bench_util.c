/* Shared pieces of the bench cases' check functions; see bench_util.h. */
#include "bench_util.h"

#include <math.h>
#include <stdlib.h>

lm_bench_err lm_bench_err_start(void) { return (lm_bench_err){.worst = 0.0, .scale = 1e-30}; }

void lm_bench_err_add(lm_bench_err *e, double fast, double exact)
{
    double d = fabs(fast - exact);
    if (!(d <= e->worst))
        e->worst = d;
    if (fabs(exact) > e->scale)
        e->scale = fabs(exact);
}

void lm_bench_err_add_f32(lm_bench_err *e, const float *fast, const double *exact,
                          size_t count)
{
    for (size_t i = 0; i < count; i++)
        lm_bench_err_add(e, (double)fast[i], exact[i]);
}

bool lm_bench_err_within(const lm_bench_err *e, double checksum, double tolerance,
                         double *err_max)
{
    *err_max = e->worst / e->scale;
    return isfinite(checksum) && *err_max <= tolerance;
}

lm_status lm_bench_err_skipped(double checksum, double *err_max, lm_error *err)
{
    *err_max = -1.0;
    return isfinite(checksum) ? LM_OK : lm_fail(err, LM_ERR_NUMERIC, "non-finite output");
}

double *lm_bench_widen(const float *x, size_t count)
{
    double *out = malloc((count ? count : 1) * sizeof *out);
    for (size_t i = 0; out != NULL && i < count; i++)
        out[i] = (double)x[i];
    return out;
}

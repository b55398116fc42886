/* Float64 oracle for y = X w. */
#include "gemv.h"

#include <math.h>

lm_status lm_gemv_rowdot_f64_ref(const double *x, const double *w, double *y, size_t n,
                                 size_t d, lm_error *err)
{
    if (n == 0 || d == 0)
        return lm_fail(err, LM_ERR_SHAPE, "x must be non-empty, got shape {%zu, %zu}", n, d);
    for (size_t j = 0; j < d; j++)
        if (!isfinite(w[j]))
            return lm_fail(err, LM_ERR_NONFINITE, "w must contain only finite values");
    for (size_t i = 0; i < n; i++) {
        double sum = 0.0;
        for (size_t j = 0; j < d; j++) {
            if (!isfinite(x[i * d + j]))
                return lm_fail(err, LM_ERR_NONFINITE, "x must contain only finite values");
            sum += x[i * d + j] * w[j];
        }
        y[i] = sum;
    }
    return LM_OK;
}

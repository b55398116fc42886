/* Input checks shared by the float64 references (see lm_validate.h for each message). */
#include "lm_validate.h"

#include <math.h>

bool lm_all_finite_f64(const double *x, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (!isfinite(x[i]))
            return false;
    return true;
}

lm_status lm_require_finite_f64(const char *name, const double *x, size_t count,
                                lm_error *err)
{
    if (!lm_all_finite_f64(x, count))
        return lm_fail(err, LM_ERR_NONFINITE, "%s must contain only finite values", name);
    return LM_OK;
}

lm_status lm_require_finite_or_null_f64(const char *name, const double *x, size_t count,
                                        lm_error *err)
{
    for (size_t i = 0; x != NULL && i < count; i++)
        if (!isfinite(x[i]))
            return lm_fail(err, LM_ERR_NONFINITE, "%s must contain only finite values (%s[%zu] = %g)",
                           name, name, i, x[i]);
    return LM_OK;
}

lm_status lm_require_nonempty_finite_f64(const char *name, const double *x, size_t count,
                                         lm_error *err)
{
    if (count == 0)
        return lm_fail(err, LM_ERR_SHAPE, "%s must be non-empty", name);
    return lm_require_finite_f64(name, x, count, err);
}

lm_status lm_require_positive_size(const char *name, size_t count, lm_error *err)
{
    if (count == 0)
        return lm_fail(err, LM_ERR_ARG, "%s must be positive, got %zu", name, count);
    return LM_OK;
}

lm_status lm_require_positive_i64(const char *name, long long value, lm_error *err)
{
    if (value <= 0)
        return lm_fail(err, LM_ERR_ARG, "%s must be positive, got %lld", name, value);
    return LM_OK;
}

lm_status lm_require_non_negative_i64(const char *name, long long value, lm_error *err)
{
    if (value < 0)
        return lm_fail(err, LM_ERR_ARG, "%s must be non-negative, got %lld", name, value);
    return LM_OK;
}

lm_status lm_require_positive_f64(const char *name, double value, lm_error *err)
{
    if (!isfinite(value))
        return lm_fail(err, LM_ERR_NONFINITE, "%s must be finite", name);
    if (value <= 0.0)
        return lm_fail(err, LM_ERR_ARG, "%s must be positive, got %g", name, value);
    return LM_OK;
}

lm_status lm_require_unit_interval_f64(const char *name, double value, lm_error *err)
{
    if (!isfinite(value))
        return lm_fail(err, LM_ERR_NONFINITE, "%s must be finite", name);
    if (value < 0.0 || value > 1.0)
        return lm_fail(err, LM_ERR_ARG, "%s must lie in [0, 1], got %g", name, value);
    return LM_OK;
}

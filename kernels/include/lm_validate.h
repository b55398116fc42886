/* Input checks shared by the float64 references and the contract arithmetic.
 *
 * Each returns LM_OK when the rule holds, otherwise the lm_status named below with err
 * filled by a message that starts with the argument's name, e.g. "q must contain only
 * finite values" (the M8 notebook's _finite_array / _positive_real wording; tests
 * match these texts, so keep them). */
#ifndef LONGMIX_VALIDATE_H
#define LONGMIX_VALIDATE_H

#include "lm_core.h"

#include <stdbool.h>
#include <stddef.h>

/* True when every one of x[0..count) is finite (an empty run is). Also declared by
 * kernels/attention/attention.h. */
bool lm_all_finite_f64(const double *x, size_t count);

/* LM_ERR_NONFINITE "NAME must contain only finite values" when x[0..count) holds NaN or
 * Inf. Checks nothing else: callers test emptiness first, with their own message. */
lm_status lm_require_finite_f64(const char *name, const double *x, size_t count,
                                lm_error *err);

/* An optional array: LM_OK when x is NULL, else LM_ERR_NONFINITE "NAME must contain only
 * finite values (NAME[i] = v)" naming the first non-finite element. */
lm_status lm_require_finite_or_null_f64(const char *name, const double *x, size_t count,
                                        lm_error *err);

/* A non-empty finite array: LM_ERR_SHAPE "NAME must be non-empty" when count is 0, then
 * lm_require_finite_f64. */
lm_status lm_require_nonempty_finite_f64(const char *name, const double *x, size_t count,
                                         lm_error *err);

/* LM_ERR_ARG "NAME must be positive, got N" when count is 0. */
lm_status lm_require_positive_size(const char *name, size_t count, lm_error *err);

/* LM_ERR_ARG "NAME must be positive, got V" when value <= 0. */
lm_status lm_require_positive_i64(const char *name, long long value, lm_error *err);

/* LM_ERR_ARG "NAME must be non-negative, got V" when value < 0. */
lm_status lm_require_non_negative_i64(const char *name, long long value, lm_error *err);

/* A finite real > 0: LM_ERR_NONFINITE "NAME must be finite" for NaN or Inf, then
 * LM_ERR_ARG "NAME must be positive, got V" for value <= 0. */
lm_status lm_require_positive_f64(const char *name, double value, lm_error *err);

/* A finite real in [0, 1] (the notebook's _unit_interval): LM_ERR_NONFINITE "NAME must be
 * finite", then LM_ERR_ARG "NAME must lie in [0, 1], got V". */
lm_status lm_require_unit_interval_f64(const char *name, double value, lm_error *err);

#endif

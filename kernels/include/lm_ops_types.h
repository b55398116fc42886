/* Operator function types and field lists per family, pulled into lm_ops.h.
 * Attention-family entries go in LM_OPS_FIELDS_ATTENTION, recurrent-family entries in
 * LM_OPS_FIELDS_RECURRENT. Each entry: X(function type, field name). */
#ifndef LONGMIX_OPS_TYPES_H
#define LONGMIX_OPS_TYPES_H

#include "longmix.h"

/* y[i] = sum_j x[i, j] * w[j] over n rows of width d: the smallest fast kernel, kept as
 * the dispatch smoke test and the roofline's sanity reference.
 * x {n, d} row-major, w {d}, y {n}. */
typedef void (*lm_rowdot_f32_fn)(const float *restrict x, const float *restrict w,
                                 float *restrict y, size_t n, size_t d);

#define LM_OPS_FIELDS_ATTENTION(X) X(lm_rowdot_f32_fn, rowdot_f32)

#define LM_OPS_FIELDS_RECURRENT(X)

#endif

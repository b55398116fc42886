/* Matrix-vector product y = X w: the smallest fast kernel, the template every family
 * follows (ref.c float64 oracle, scalar.c portable f32, one file per ISA). */
#ifndef LONGMIX_GEMV_H
#define LONGMIX_GEMV_H

#include "lm_core.h"
#include "lm_kernels.h"

/* Float64 oracle. x {n, d} row-major, w {d}, y {n}. LM_ERR_SHAPE when n or d is 0,
 * LM_ERR_NONFINITE when an input is NaN or Inf. */
lm_status lm_gemv_rowdot_f64_ref(const double *x, const double *w, double *y, size_t n,
                                 size_t d, lm_error *err);

/* Fast paths (slot gemv_rowdot_f32 of lm_kernels.h), the same meaning in float32; shapes
 * are the caller's to validate. */

#endif

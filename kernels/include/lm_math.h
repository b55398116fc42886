/* Scalar functions several families evaluate the same way (one definition each). */
#ifndef LONGMIX_MATH_H
#define LONGMIX_MATH_H

#include <math.h>

/* softplus(u) = log(1 + e^u), evaluated as max(u, 0) + log1p(exp(-|u|)): no overflow for
 * large u, no cancellation for very negative u, never negative (a sum of two non-negative
 * terms). The Mamba-1 and Mamba-2 step size delta = softplus(raw + bias). */
static inline double lm_softplus_f64(double u) { return fmax(u, 0.0) + log1p(exp(-fabs(u))); }
static inline float lm_softplus_f32(float u) { return fmaxf(u, 0.0f) + log1pf(expf(-fabsf(u))); }

#endif

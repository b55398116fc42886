/* Causal additive linear attention S_t = S_{t-1} + v_t k_t^T, y_t = S_t q_t, with the state
 * S of shape [d_value, d_key] (seed 003, section 3), sequential and chunked. */
#ifndef LONGMIX_LINEAR_H
#define LONGMIX_LINEAR_H

#include "longmix.h"

#include <stddef.h>

/* ---- float64 references (kernels/linear/ref_additive.c) ---------------------------- */

/* Token-by-token evaluation. q {steps, q_width}, k {steps, k_width}, v {steps, value_width},
 * out {steps, value_width}. q_width must equal k_width (d_key).
 * LM_ERR_SHAPE ("q, k and v must be non-empty", "q and k must share feature width d_key"),
 * LM_ERR_NONFINITE naming q, k or v, LM_ERR_NOMEM (the [d_value, d_key] state). */
lm_status lm_linear_additive_sequential_f64_ref(const double *q, size_t q_width,
                                                const double *k, size_t k_width,
                                                const double *v, size_t value_width,
                                                size_t steps, double *out, lm_error *err);

/* The exact chunked form: per chunk, out = q_c S^T + tril(q_c k_c^T) v_c, then
 * S += v_c^T k_c. A reordering, not an approximation. Arrays as above; chunk_size >= 1
 * (LM_ERR_ARG "chunk_size must be positive"); the last chunk may be partial. */
lm_status lm_linear_additive_chunked_f64_ref(const double *q, size_t q_width,
                                             const double *k, size_t k_width,
                                             const double *v, size_t value_width,
                                             size_t steps, size_t chunk_size, double *out,
                                             lm_error *err);

/* ---- float64 references: the lesson's feature-map linear attention
 *      (kernels/linear/ref_feature.c, lesson section 4) ------------------------------
 * phi(x) = elu(x) + 1 = x + 1 for x > 0, e^x otherwise: always positive. The weight of
 * key j for query i is phi(q_i).phi(k_j) (causal, j <= i), each row divided by its total:
 *   o_i = phi(q_i)^T S_i / phi(q_i)^T z_i,  S_i = S_{i-1} + phi(k_i) v_i^T,
 *                                           z_i = z_{i-1} + phi(k_i).
 * Here S has shape [d_key, d_value] (the lesson's orientation, the transpose of the
 * additive state above). q, k {n, d}, v {n, d_v}. */

/* out[i] = phi(x[i]) for i < count. LM_ERR_NONFINITE for NaN/Inf, LM_ERR_SHAPE for 0. */
lm_status lm_linear_feature_map_f64_ref(const double *x, size_t count, double *out,
                                        lm_error *err);

/* The n x n causal weights, each row summing to 1. weights {n, n} (zero above the
 * diagonal). LM_ERR_SHAPE for a zero extent, LM_ERR_NONFINITE naming q or k. */
lm_status lm_linear_feature_weights_f64_ref(const double *q, const double *k, size_t n,
                                            size_t d, double *weights, lm_error *err);

/* The quadratic form: weights @ V. out {n, d_v}. */
lm_status lm_linear_feature_quadratic_f64_ref(const double *q, const double *k,
                                              const double *v, size_t n, size_t d,
                                              size_t d_v, double *out, lm_error *err);

/* The recurrent form with two running sums; returns the final S {d, d_v} and z {d}
 * (either may be NULL). out {n, d_v}. */
lm_status lm_linear_feature_recurrent_f64_ref(const double *q, const double *k,
                                              const double *v, size_t n, size_t d,
                                              size_t d_v, double *out, double *s_final,
                                              double *z_final, lm_error *err);

#endif

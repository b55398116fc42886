/* Diagonal state-space models: exact zero-order-hold (ZOH) discretization and the
 * selective recurrent scan (the M8 notebook, section 1). Float64 references first; fast paths
 * are declared below them by their own helpers. */
#ifndef LONGMIX_SSM_H
#define LONGMIX_SSM_H

#include "lm_core.h"
#include "lm_ops.h"
#include "../attention/attention.h"
#include "../linear/linear.h"
#include "ssd_chunked.h"

#include <stdbool.h>
#include <stddef.h>

/* ---- float64 references (kernels/ssm/ref_zoh.c) ------------------------------------ */

/* Exact ZOH step of dh/dt = A h + B x for diagonal stable A and a constant input:
 *   transition[i]        = exp(delta * a[i])
 *   input_matrix[i][j]   = phi_i * b[i][j],  phi_i = expm1(delta * a[i]) / a[i]  (a[i] < 0)
 *                                            phi_i = delta exactly              (a[i] == 0)
 * a {d_state}, b {b_rows, d_input} row-major (b_rows must equal d_state),
 * transition {d_state}, input_matrix {d_state, d_input} (written only on LM_OK).
 * Errors: LM_ERR_SHAPE (empty a or b, b_rows != d_state), LM_ERR_NONFINITE (a, b or delta
 * not finite), LM_ERR_DOMAIN (a positive mode: "continuous_a must be non-positive ..."),
 * LM_ERR_ARG (delta <= 0), LM_ERR_NUMERIC (the input matrix overflowed). */
lm_status lm_ssm_zoh_discretize_f64_ref(const double *a, size_t d_state, const double *b,
                                        size_t b_rows, size_t d_input, double delta,
                                        double *transition, double *input_matrix,
                                        lm_error *err);

/* A continuous diagonal system with its readout: A {d_state}, B {b_rows, d_input},
 * C {d_output, c_cols}. The scan checks b_rows == d_state and c_cols == d_state. */
typedef struct lm_ssm_system {
    const double *a; /* {d_state} */
    size_t d_state;
    const double *b; /* {b_rows, d_input} */
    size_t b_rows, d_input;
    const double *c; /* {d_output, c_cols} */
    size_t d_output, c_cols;
} lm_ssm_system;

/* Caller-owned outputs of a scan over T steps (every pointer required). */
typedef struct lm_ssm_scan_result {
    double *states;         /* {T, d_state}: every post-update state */
    double *outputs;        /* {T, d_output}: C h_t */
    double *transitions;    /* {T, d_state}: exp(delta_t a) */
    double *input_matrices; /* {T, d_state, d_input}: exact ZOH B-bar or delta_t * B */
} lm_ssm_scan_result;

/* Selective diagonal scan h_t = Abar_t h_{t-1} + Bbar_t x_t, y_t = C h_t with a per-step
 * delta_t. exact_input == false keeps the exact transition but uses the small-step
 * approximation Bbar_t = delta_t * B (the M8 notebook's "educational" variant).
 * inputs {steps, input_width}, deltas {delta_steps}, initial_state {d_state} or NULL (zero).
 * Errors: LM_ERR_SHAPE (empty sequence, input_width != d_input, steps != delta_steps,
 * B or C of the wrong shape), LM_ERR_NONFINITE, LM_ERR_ARG (a delta <= 0), LM_ERR_DOMAIN
 * (a positive mode), LM_ERR_NUMERIC (a non-finite state or output). */
lm_status lm_ssm_scan_diagonal_f64_ref(const lm_ssm_system *system, const double *inputs,
                                       size_t steps, size_t input_width,
                                       const double *deltas, size_t delta_steps,
                                       const double *initial_state, bool exact_input,
                                       const lm_ssm_scan_result *result, lm_error *err);

/* ---- Mamba-1 selective scan (kernels/ssm/ref_mamba.c, scalar/avx2/avx512/neon.c,
 *      driver.c) ------------------------------------------------------------------------
 * Per batch row b, channel d, state index n and token t (helper "rec"):
 *   delta[t,d] = softplus(delta_raw[t,d] + delta_bias[d]),  softplus(u) = log(1 + e^u)
 *   Abar       = exp(delta * A[d,n])
 *   Bbar       = expm1(delta * A[d,n]) / A[d,n] * B[t,n]   exact ZOH (A[d,n] == 0: delta * B)
 *              = delta * B[t,n]                            the delta*B approximation
 *   h[d,n]     = Abar * h[d,n] + Bbar * x[t,d]
 *   y[t,d]     = (sum_n C[t,n] h[d,n] + skip[d] x[t,d]) * silu(z[t,d])   (silu(z) = z/(1+e^-z))
 * The skip term is left out when skip is NULL and the gate when z is NULL. delta is never
 * negative: softplus maps every finite real to (0, inf) and its float evaluation
 * max(u,0) + log1p(exp(-|u|)) is a sum of non-negative terms; it can only round to 0 for
 * u < about -104 (f32) / -745 (f64), where Abar = 1 and Bbar = 0: the exact limit of a
 * vanishing step, so no check is needed. */

/* Largest state width N the kernels take (their per-block state lives on the stack). */
#define LM_SSM_MAX_STATE 256

typedef struct lm_ssm_mamba1_f64 {
    size_t batch, length, channels, state; /* B, L, D, N */
    const double *x;          /* {B, L, D} */
    const double *delta_raw;  /* {B, L, D} before bias and softplus */
    const double *delta_bias; /* {D} or NULL (zero) */
    const double *a;          /* {D, N} continuous A, every entry <= 0 */
    const double *b;          /* {B, L, N} */
    const double *c;          /* {B, L, N} */
    const double *skip;       /* {D} or NULL */
    const double *z;          /* {B, L, D} or NULL (no gate) */
    const double *h0;         /* {B, D, N} or NULL (zero state) */
    double *y;                /* {B, L, D} */
    double *h_final;          /* {B, D, N} or NULL; may alias h0 */
    bool exact_zoh;           /* true: exact ZOH Bbar; false: delta * B */
} lm_ssm_mamba1_f64;

typedef struct lm_ssm_mamba1_f32 {
    size_t batch, length, channels, state; /* B, L, D, N */
    const float *x;          /* {B, L, D} */
    const float *delta_raw;  /* {B, L, D} */
    const float *delta_bias; /* {D} or NULL */
    const float *a;          /* {D, N}, <= 0 */
    const float *b;          /* {B, L, N} */
    const float *c;          /* {B, L, N} */
    const float *skip;       /* {D} or NULL */
    const float *z;          /* {B, L, D} or NULL */
    const float *h0;         /* {B, D, N} or NULL */
    float *y;                /* {B, L, D} */
    float *h_final;          /* {B, D, N} or NULL; may alias h0 (decode: state in place) */
    bool exact_zoh;
} lm_ssm_mamba1_f32;

/* Float64 oracle of the Mamba-1 scan above. Errors: LM_ERR_SHAPE (a size is 0, N >
 * LM_SSM_MAX_STATE, a required pointer is NULL), LM_ERR_NONFINITE (naming the array),
 * LM_ERR_DOMAIN ("a must be non-positive (stable modes): a[d,n] = ..."), LM_ERR_NUMERIC
 * (the state or output overflowed). Outputs are written only on LM_OK... except y, which
 * may be partly written when LM_ERR_NUMERIC is returned. */
lm_status lm_ssm_mamba1_scan_f64_ref(const lm_ssm_mamba1_f64 *p, lm_error *err);

/* Fast kernels (slot mamba1_scan_f32, lm_kernels.h): batch row `batch_index`, channels
 * [d_begin, d_end) of the scan above, in float32. Shapes are the driver's to validate; no
 * allocation, no threads. */

/* Checks what the fast kernels assume: sizes non-zero, N <= LM_SSM_MAX_STATE, required
 * pointers set, every A finite and <= 0 (LM_ERR_DOMAIN names the first positive entry).
 * Token data are not scanned for NaN (an O(L D) pass the oracle does). */
lm_status lm_ssm_mamba1_check_f32(const lm_ssm_mamba1_f32 *p, lm_error *err);

/* The operator: checks p, then runs the mamba1_scan_f32 kernel of `ops` over every (batch
 * row, block of channels) with OpenMP (the calling thread's OMP team size). */
lm_status lm_ssm_mamba1_scan_f32(const lm_ssm_mamba1_f32 *p, const lm_ops *ops, lm_error *err);

/* Decode step: one token per batch row, state updated in place. p->length must be 1 and
 * p->h0 == p->h_final (the state {B, D, N}); x, delta_raw, z, y are {B, D}, b and c {B, N}.
 * The same kernel as the scan (a one-token scan, the mamba1_scan_f32 kernel of `ops`); LM_ERR_ARG
 * when length != 1 or the state is not shared. */
lm_status lm_ssm_mamba1_decode_f32(const lm_ssm_mamba1_f32 *p, const lm_ops *ops,
                                   lm_error *err);

/* The same step for a p whose a (and pointers and sizes) the caller has already passed
 * through lm_ssm_mamba1_check_f32 and has not changed since: the O(D N) pass over a, which
 * costs as much as the step itself, is skipped. A decode loop checks its weights once and
 * steps with this. Only the decode shape (length 1, state in place) is checked. */
lm_status lm_ssm_mamba1_decode_checked_f32(const lm_ssm_mamba1_f32 *p, const lm_ops *ops,
                                           lm_error *err);

/* ---- float64 references: the lesson's SSMs (kernels/ssm/ref_lesson.c, lesson
 *      section 5) ---------------------------------------------------------------------
 * A fixed SSM h_t = A h_{t-1} + B x_t, y_t = C . h_t (h_0 = 0) on one input channel,
 * A {N, N} row-major, B {N}, C {N}; its convolution kernel C A^k B; the one-channel
 * selective SSM with per-token step sizes; and the lesson's recall task. */

/* y {steps} from x {steps}. LM_ERR_SHAPE (steps or N zero), LM_ERR_NONFINITE naming the
 * array, LM_ERR_NUMERIC when the state overflows. */
lm_status lm_ssm_lesson_recurrent_f64_ref(const double *x, size_t steps, const double *a,
                                          const double *b, const double *c, size_t n_state,
                                          double *y, lm_error *err);

/* kernel[k] = C A^k B for k < length. */
lm_status lm_ssm_lesson_kernel_f64_ref(const double *a, const double *b, const double *c,
                                       size_t n_state, size_t length, double *kernel,
                                       lm_error *err);

/* The same outputs as the recurrence from the kernel: y_t = sum_{k<=t} kernel[k] x[t-k]. */
lm_status lm_ssm_lesson_convolution_f64_ref(const double *x, size_t steps, const double *a,
                                            const double *b, const double *c,
                                            size_t n_state, double *y, lm_error *err);

/* Zero-order hold for one channel: a_bar = e^(delta a), b_bar = (a_bar - 1) / a * b.
 * delta > 0 (LM_ERR_ARG), a < 0 (LM_ERR_DOMAIN: the lesson's model is stable and divides
 * by a), all finite (LM_ERR_NONFINITE). */
lm_status lm_ssm_lesson_discretize(double delta, double a, double b, double *a_bar,
                                   double *b_bar, lm_error *err);

/* softplus(x) = log(1 + e^x) evaluated as NumPy's logaddexp(0, x):
 * x > 0: x + log1p(e^-x); x < 0: log1p(e^x); x = 0: log 2. out may alias x. */
lm_status lm_ssm_softplus_f64_ref(const double *x, size_t count, double *out, lm_error *err);

/* delta[t] = softplus(sharpness * markers[t] + bias). */
lm_status lm_ssm_step_sizes_f64_ref(const double *markers, size_t count, double sharpness,
                                    double bias, double *delta, lm_error *err);

/* One-channel selective SSM: h_t = a_bar_t h_{t-1} + b_bar_t x_t, y_t = c h_t with
 * (a_bar_t, b_bar_t) = lm_ssm_lesson_discretize(delta[t], a, b). x, delta, y {steps}. */
lm_status lm_ssm_lesson_selective_f64_ref(const double *x, const double *delta, size_t steps,
                                          double a, double b, double c, double *y,
                                          lm_error *err);

/* The recall task with Delta set by each token: the final state of the selective SSM on
 * values {steps} with delta = step_sizes(markers {steps}, sharpness, bias). */
lm_status lm_ssm_selective_recall(const double *values, const double *markers, size_t steps,
                                  double sharpness, double bias, double a, double b, double c,
                                  double *final_state, lm_error *err);

/* The same task with one fixed delta for every token (a time-invariant SSM). */
lm_status lm_ssm_time_invariant_recall(const double *values, size_t steps, double delta,
                                       double a, double b, double c, double *final_state,
                                       lm_error *err);

/* numpy.geomspace(start, stop, num): 10^linspace(log10 start, log10 stop, num) with the
 * end points set exactly. start, stop > 0; num >= 1. out {num}. */
lm_status lm_ssm_geomspace(double start, double stop, size_t num, double *out, lm_error *err);

/* The best fixed step over grid {grid_count}: the largest final state (first maximum,
 * like numpy.argmax) of lm_ssm_time_invariant_recall; *best_index, *best_delta and
 * *best_value receive where and what it is. */
lm_status lm_ssm_best_time_invariant_recall(const double *values, size_t steps,
                                            const double *grid, size_t grid_count, double a,
                                            double b, double c, size_t *best_index,
                                            double *best_delta, double *best_value,
                                            lm_error *err);

/* ---- Mamba-2 SSD (kernels/ssm/ref_ssd.c, driver_ssd.c; the chunked form is the SSD kernel
 *      of kernels/ssm/ssd_chunked.h, the recurrent scan the linear-attention kernel) ------
 * Per batch row, head h (group g = h / (H / G)), token t; head_dim P, state N:
 *   delta_t = softplus(dt_raw[t,h] + dt_bias[h]),  abar_t = exp(delta_t * A[h])  (A[h] <= 0)
 *   S_t     = abar_t S_{t-1} + delta_t x_t B_t^T          S {P, N}, x_t {P}, B_t, C_t {N}
 *   y_t     = S_t C_t + skip[h] x_t
 * This is linear attention with q = C_t, k = delta_t B_t, v = x_t and the scalar gate
 * abar_t given by its logarithm delta_t A[h]: the recurrent scan is the recurrent
 * linear-attention kernel; the chunked SSD form (intra-chunk products masked by
 * exp(segment sums of delta A), inter-chunk state passing) has its own kernel
 * (ssd_chunked.h) that computes the C B^T scores once per group. */
typedef struct lm_ssm_ssd_f64 {
    size_t batch, length, heads, head_dim, groups, state; /* B, L, H, P, G, N */
    const double *x;       /* {B, L, H, P} */
    const double *dt_raw;  /* {B, L, H} before bias and softplus */
    const double *dt_bias; /* {H} or NULL */
    const double *a;       /* {H}, every entry <= 0 */
    const double *b;       /* {B, L, G, N} */
    const double *c;       /* {B, L, G, N} */
    const double *skip;    /* {H} or NULL */
    const double *h0;      /* {B, H, P, N} or NULL */
    double *y;             /* {B, L, H, P} */
    double *h_final;       /* {B, H, P, N} or NULL; may alias h0 */
} lm_ssm_ssd_f64;

/* The inputs x, b and c are float32, or (dtype LM_KV_BF16, chunked form only) bfloat16 in
 * x16, b16 and c16 with x, b and c NULL; dt_raw, dt_bias, a, skip, h0 and the outputs are
 * float32 either way. A zeroed dtype is F32. */
typedef struct lm_ssm_ssd_f32 {
    size_t batch, length, heads, head_dim, groups, state;
    const float *x, *dt_raw, *dt_bias, *a, *b, *c, *skip, *h0; /* as in lm_ssm_ssd_f64 */
    float *y;
    float *h_final;
    lm_kv_dtype dtype;                /* F32 or BF16 (x, b, c) */
    const uint16_t *x16, *b16, *c16;  /* dtype BF16: x {B, L, H, P}, b and c {B, L, G, N} */
} lm_ssm_ssd_f32;

/* Float64 oracle (token by token). LM_ERR_SHAPE (a size 0, heads not a multiple of
 * groups, a required array NULL), LM_ERR_NONFINITE, LM_ERR_DOMAIN ("a must be
 * non-positive ..."). */
lm_status lm_ssm_ssd_f64_ref(const lm_ssm_ssd_f64 *p, lm_error *err);

/* The operator: checks p (as the oracle, without scanning token data), then with the
 * kernels of `ops`
 *   chunked: the SSD kernel (ssd_chunked_f32, or ssd_chunked_bf16 for bfloat16 inputs,
 *            with gemm_acc_f32 for the chunk scores computed once per group);
 *   recurrent: for every (batch row, head) the recurrent linear-attention kernel
 *            (linear_recurrent_f32) over blocks of time with the head's state in place.
 * chunk 0 is LM_ERR_ARG when chunked; bfloat16 inputs in the recurrent form or the decode
 * step are LM_ERR_ARG. */
lm_status lm_ssm_ssd_scan_f32(const lm_ssm_ssd_f32 *p, bool chunked, size_t chunk,
                              const lm_ops *ops, lm_error *err);

/* Decode step: length must be 1 and h0 == h_final (the state {B, H, P, N} updated in
 * place); x, y {B, H, P}, dt_raw {B, H}, b, c {B, G, N}. The ssd_step_f32 kernel of `ops`
 * (ssd_step_body.h: along the state rows, no transposition) for every (batch row, head),
 * OpenMP over them when the state is large. */
lm_status lm_ssm_ssd_decode_f32(const lm_ssm_ssd_f32 *p, const lm_ops *ops, lm_error *err);

#endif

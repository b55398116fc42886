/* Elementwise affine recurrences h_t = a_t * h_{t-1} + b_t: the composition law that makes
 * a scan parallel, and the sequential and chunked evaluations (the M8 notebook, section 2). */
#ifndef LONGMIX_SCAN_H
#define LONGMIX_SCAN_H

#include "lm_core.h"
#include "lm_ops.h"

#include <stddef.h>

/* ---- float64 references (kernels/scan/ref_affine.c) -------------------------------- */

/* later(earlier(h)) for elementwise transforms T(h) = m*h + c:
 *   out_multiplier = later_m * earlier_m,  out_bias = later_m * earlier_c + later_c.
 * Every array is {width}; the outputs may alias no input. LM_ERR_SHAPE when width is 0,
 * LM_ERR_NONFINITE naming the component ("later.multiplier", "earlier.bias", ...). */
lm_status lm_scan_compose_affine_f64_ref(const double *later_multiplier,
                                         const double *later_bias,
                                         const double *earlier_multiplier,
                                         const double *earlier_bias, size_t width,
                                         double *out_multiplier, double *out_bias,
                                         lm_error *err);

/* h_t = multipliers[t] * h_{t-1} + biases[t] in time order.
 * multipliers, biases {steps, width}; initial_state {width} or NULL (zero);
 * states {steps, width} receives every post-update state.
 * LM_ERR_SHAPE (steps or width 0), LM_ERR_NONFINITE naming the array. */
lm_status lm_scan_affine_sequential_f64_ref(const double *multipliers, const double *biases,
                                            size_t steps, size_t width,
                                            const double *initial_state, double *states,
                                            lm_error *err);

/* The same recurrence in non-overlapping chunks of chunk_size steps (the last may be
 * shorter; chunk_size may exceed steps). Inside a chunk the zero-start local states and the
 * cumulative multipliers are formed, then h = local + cumprod(a) * h_chunk_start; only one
 * boundary state crosses each chunk. Equal to the sequential scan up to rounding.
 * Same arrays as the sequential scan; LM_ERR_ARG "chunk_size must be positive" for 0. */
lm_status lm_scan_affine_chunked_f64_ref(const double *multipliers, const double *biases,
                                         size_t steps, size_t width, size_t chunk_size,
                                         const double *initial_state, double *states,
                                         lm_error *err);

/* ---- float64 references: parallel scans (kernels/scan/ref_parallel.c) --------------
 * The same recurrence h_t = a_t h_{t-1} + b_t (h before the start = 0) by parallel
 * prefix over the composition (a1, b1) then (a2, b2) = (a1 a2, a2 b1 + b2), for any
 * length (not only powers of two). */

/* The lesson's Hillis-Steele scan: in round r every position merges with the one 2^r
 * earlier (the do-nothing map (1, 0) before the start), all at once: ceil(log2 steps)
 * rounds. a, b {steps}; states {steps} receives the b parts (every state); a_out {steps}
 * (or NULL) the a parts. max_rounds = 0 runs to completion, k > 0 stops after k rounds
 * (the lesson's round-by-round trace). *rounds receives the rounds run.
 * LM_ERR_SHAPE (steps 0), LM_ERR_NONFINITE naming a or b, LM_ERR_NOMEM. */
lm_status lm_scan_hillis_steele_f64_ref(const double *a, const double *b, size_t steps,
                                        size_t max_rounds, double *a_out, double *states,
                                        size_t *rounds, lm_error *err);

/* The work-efficient (Blelloch) scan: an up-sweep of partial compositions and a
 * down-sweep of exclusive prefixes over a tree padded with (1, 0) to a power of two,
 * O(steps) merges instead of O(steps log steps). a, b, states {steps}. */
lm_status lm_scan_blelloch_f64_ref(const double *a, const double *b, size_t steps,
                                   double *states, lm_error *err);

/* Which parallel scan a columnwise call uses. */
typedef enum lm_scan_method { LM_SCAN_HILLIS_STEELE, LM_SCAN_BLELLOCH } lm_scan_method;

/* Every column of multipliers, biases {steps, width} scanned independently with `method`,
 * starting from initial_state {width} (NULL = zero; folded in as b_0 + a_0 h_init).
 * states {steps, width}: the same layout as lm_scan_affine_sequential_f64_ref. */
lm_status lm_scan_parallel_columns_f64_ref(lm_scan_method method, const double *multipliers,
                                           const double *biases, size_t steps, size_t width,
                                           const double *initial_state, double *states,
                                           lm_error *err);

/* Exercise (the M8 notebook): parallel prefix at lengths that are not powers of two. One
 * default_rng(seed) stream; for each length L in order: multipliers = uniform(a_low,
 * a_high, (L, width)), biases = standard_normal((L, width)), h0 = standard_normal(width).
 * hillis_diff, blelloch_diff {count}: max |parallel - lm_scan_affine_sequential_f64_ref|. */
lm_status lm_scan_parallel_prefix_exercise(uint64_t seed, const size_t *lengths, size_t count,
                                           size_t width, double a_low, double a_high,
                                           double *hillis_diff, double *blelloch_diff,
                                           lm_error *err);

/* Project demo 1 (the M8 notebook): carrying state across chunk boundaries. default_rng(seed):
 * a = uniform(a_low, a_high, (steps, width)), b = standard_normal((steps, width)),
 * h0 = standard_normal(width). chunk_errors {chunk_count}: max |chunked(chunk_sizes[i])
 * - sequential| from h0. *reset_error: max |reset - sequential| of the deliberately wrong
 * control that restarts every reset_chunk steps from a zero state. */
lm_status lm_scan_chunk_boundary_demo(uint64_t seed, size_t steps, size_t width, double a_low,
                                      double a_high, const size_t *chunk_sizes,
                                      size_t chunk_count, size_t reset_chunk,
                                      double *chunk_errors, double *reset_error,
                                      lm_error *err);

/* ---- float32 fast paths (helper "rec": scalar/avx2/avx512/neon.c, driver.c) -----------
 * Rows of `width` floats, row-major {steps, width}, vectorized across the width; the time
 * loop is serial inside a kernel and split into chunks by the driver. */

/* The kernels (slots scan_affine_f32 and scan_affine_reduce_f32 of lm_kernels.h):
 * the sequential scan of steps rows, h = a[t] * h + b[t]; out[t] = h (a, b, out {steps,
 * width}; state {width} in and out; out may alias b), and the composition of steps rows as
 * one affine map h -> prod * h + acc (prod = a[0] * ... * a[steps-1], acc = the scan of
 * those rows from h = 0; prod, acc {width}). */

/* The operator, h_t = a_t * h_{t-1} + b_t over {steps, width} from initial_state {width}
 * (NULL = zero) into states {steps, width}; final_state {width} (NULL = not wanted).
 * chunk == 0 is rejected (LM_ERR_ARG "chunk must be positive"). With parts == 1 it is one
 * sequential kernel call. Otherwise time is cut into chunks of `chunk` rows, chunk i taken by
 * thread i mod team in one OpenMP region, each going through the three phases itself:
 * (1) reduce its rows to one map (prod, acc), (2) wait for the state after chunk i - 1 and
 * publish its own end state prod * start + acc (the carry, the only sequential part), (3)
 * scan its rows from that true start (re-reading a and b while they are still in cache).
 * Chunk 0 is scanned directly from the initial state. No barriers: while one thread scans,
 * the other reduces its next chunk; chunks small enough for a and b to stay in L2 (about
 * 256 KiB of a + b) read memory once. The result depends on chunk only through rounding.
 * The team is min(parts, chunks, the OpenMP thread budget); parts == 0 takes the budget.
 * LM_ERR_SHAPE for a zero size or NULL array, LM_ERR_NOMEM for the per-thread workspace
 * (allocated once per call). The kernels are those of `ops`. */
lm_status lm_scan_affine_f32(const float *a, const float *b, size_t steps, size_t width,
                             const float *initial_state, float *states, float *final_state,
                             size_t chunk, size_t parts, const lm_ops *ops, lm_error *err);

#endif

/* Associative memories with state S of shape [d_value, d_key]: the delta rule with a
 * normalized key and a decay gate (the M8 notebook, section 4), and the capacity study of an
 * additive state against explicit softmax addressing (section 5). */
#ifndef LONGMIX_DELTA_H
#define LONGMIX_DELTA_H

#include "lm_core.h"
#include "lm_ops.h"
#include "../attention/attention.h"

#include <stdbool.h>
#include <stddef.h>

/* ---- float64 references: the delta rule (kernels/delta/ref_delta.c) --------------- */

/* unit_key = key / ||key||_2, computed as (key / max|key|) / ||key / max|key|||_2 so that
 * keys near 1e300 or 1e-300 neither overflow nor underflow. key, unit_key {width}.
 * LM_ERR_SHAPE (width 0), LM_ERR_NONFINITE, LM_ERR_DOMAIN "key must have non-zero norm". */
lm_status lm_delta_normalize_key_f64_ref(const double *key, size_t width, double *unit_key,
                                         lm_error *err);

/* Caller-owned outputs of one delta-rule write (every pointer required). */
typedef struct lm_delta_update_result {
    double *state;            /* {d_value, d_key}: the updated state */
    double *normalized_key;   /* {d_key}: the key actually used */
    double *retrieval_before; /* {d_value}: (decay * S) k */
    double *retrieval_after;  /* {d_value}: S' k */
} lm_delta_update_result;

/* Gated delta rule with unit key k (normalized here when `normalize`):
 *   base = decay * S;   S' = base + beta * (value - base k) k^T.
 * beta = 1 overwrites retrieval at k exactly; beta = 0 only applies the decay.
 * state {state_rows, state_cols} must be [d_value, d_key] = [value_width, key_width];
 * key {key_width}, value {value_width}; beta and decay in [0, 1].
 * Without normalization the key must have unit norm within 1e-10 (LM_ERR_DOMAIN "key must
 * have unit norm when normalize=false"): the exact-overwrite claim needs it.
 * LM_ERR_SHAPE, LM_ERR_NONFINITE, LM_ERR_ARG ("beta must lie in [0, 1]") otherwise. */
lm_status lm_delta_update_f64_ref(const double *state, size_t state_rows, size_t state_cols,
                                  const double *key, size_t key_width, const double *value,
                                  size_t value_width, double beta, double decay,
                                  bool normalize, const lm_delta_update_result *result,
                                  lm_error *err);

/* ---- float64 references: recall capacity (kernels/delta/ref_recall.c) -------------- */

/* Point-retrieval MSE of S = sum_i v_i k_i^T for random unit keys, one value per load.
 * Draws with numpy.random.default_rng(seed), for each load in order:
 * keys = standard_normal((load, key_width)) normalized per row, then
 * targets = standard_normal((load, value_width)); mse = mean(((S K^T)^T - targets)^2).
 * loads {load_count} (each >= 1), mse {load_count}. LM_ERR_ARG names the bad argument
 * (key_width, value_width, seed, stored_pairs item); LM_ERR_SHAPE for no loads. */
lm_status lm_delta_recall_curve_f64_ref(const long long *loads, size_t load_count,
                                        long long key_width, long long value_width,
                                        long long seed, double *mse, lm_error *err);

/* Row-wise softmax with the row maximum subtracted first. logits, weights {rows, cols}.
 * LM_ERR_SHAPE (empty), LM_ERR_NONFINITE "logits must contain only finite values",
 * LM_ERR_NUMERIC if a denominator is not positive and finite. */
lm_status lm_delta_softmax_rows_f64_ref(const double *logits, size_t rows, size_t cols,
                                        double *weights, lm_error *err);

/* Finite-temperature self-retrieval MSE from an explicit key/value table: with
 * default_rng(seed): keys (stored_pairs, key_width) normalized per row, targets
 * (stored_pairs, value_width); W = softmax_rows(inverse_temperature * (K K^T));
 * mse = mean((W V - V)^2). Not zero at any finite temperature, only small. */
lm_status lm_delta_softmax_addressing_mse_f64_ref(long long stored_pairs, long long key_width,
                                                  long long value_width,
                                                  double inverse_temperature, long long seed,
                                                  double *mse, lm_error *err);

/* The paired control: the same draws as lm_delta_recall_curve_f64_ref (same seed, same
 * keys and values at every load), read out by softmax addressing with logits
 * (inverse_temperature * K) K^T instead of the additive state. mse {load_count}. */
lm_status lm_delta_paired_softmax_curve_f64_ref(const long long *loads, size_t load_count,
                                                long long key_width, long long value_width,
                                                double inverse_temperature, long long seed,
                                                double *mse, lm_error *err);

/* ---- float64 references: the M8 notebook's demo and exercise on rewriting keys
 *      (kernels/delta/ref_rewrite.c) ------------------------------------------------- */

/* The three write rules of project demo 2. */
typedef enum lm_delta_write_rule {
    LM_DELTA_WRITE_ADDITIVE, /* S += v k^T */
    LM_DELTA_WRITE_DELTA,    /* lm_delta_update_f64_ref with beta 1, decay 1 */
    LM_DELTA_WRITE_GATED,    /* the same with the demo's decay (0.9) */
    LM_DELTA_WRITE_RULE_COUNT
} lm_delta_write_rule;

typedef struct lm_delta_rewrite_result {
    double final_mse[LM_DELTA_WRITE_RULE_COUNT];         /* mean((K S^T - latest)^2) after the last write */
    double current_key_error[LM_DELTA_WRITE_RULE_COUNT]; /* max over writes of max|S k - v| */
} lm_delta_rewrite_result;

/* Project demo 2, "rewriting non-orthogonal keys". default_rng(seed): keys =
 * standard_normal((n_keys, key_width)) normalized per row, values = standard_normal((writes,
 * value_width)); write t goes to key t mod n_keys with each rule on its own [value_width,
 * key_width] state (all start at zero). The MSE is against each key's latest value (zero
 * before its first write). decay in [0, 1] (LM_ERR_ARG), sizes positive (LM_ERR_SHAPE). */
lm_status lm_delta_rewrite_keys_demo(uint64_t seed, size_t n_keys, size_t key_width,
                                     size_t value_width, size_t writes, double decay,
                                     lm_delta_rewrite_result *result, lm_error *err);

/* Exercise 3: how a write at one key changes retrieval at a second, non-orthogonal key.
 * S' = lm_delta_update_f64_ref(state, key, value, beta, decay, normalize = true);
 * k2 = lm_delta_normalize_key_f64_ref(other_key). Outputs (each {state_rows}):
 * retrieval_before = S k2, retrieval_after = S' k2, retrieval_at_key = S' k_unit;
 * *change_norm = ||S' k2 - S k2||_2 (= beta |v - decay S k| |cos(k, k2)| when decay = 1).
 * state {state_rows, state_cols}, key and other_key {state_cols}, value {state_rows}. */
lm_status lm_delta_overwrite_interference(const double *state, size_t state_rows,
                                          size_t state_cols, const double *key,
                                          const double *other_key, const double *value,
                                          double beta, double decay, double *retrieval_before,
                                          double *retrieval_after, double *retrieval_at_key,
                                          double *change_norm, lm_error *err);

/* ---- the (gated) delta rule over sequences, multi-head (helper "rec": ref_gated.c
 *      float64 oracle; scalar/avx2/avx512/neon.c; driver.c) ------------------------------
 * Per head and token, with the unit key k^_t = k_t / ||k_t|| (a zero key is rejected),
 * beta_t in [0, 1] and the decay g_t in (0, 1] (1 without a gate), S {d_value, d_key}:
 *   S_t = g_t S_{t-1} + beta_t (v_t - g_t S_{t-1} k^_t) k^_t^T    (M8: decay, then correct)
 *   y_t = S_t q_t
 * Chunked (WY / UT form, chunk C): with gamma_t the decay from the chunk start and
 * G_ti = gamma_t / gamma_i (i <= t, formed as exp of segment sums of log g), the chunk's
 * corrections u_t (S = gamma S_0 + sum_i G u_i k^_i^T) solve the unit lower-triangular
 *   u_t + beta_t sum_{i<t} G_ti (k^_t . k^_i) u_i = beta_t (v_t - gamma_t S_0 k^_t),
 * then Y = diag(gamma) Q S_0^T + (tril(Q K^T) * G) U and S_C = gamma_C S_0 + (G_C K)^T U:
 * matrix products plus one triangular solve per chunk. */
typedef struct lm_delta_seq_f64 {
    size_t heads, length, d_key, d_value;
    const double *q, *k; /* {H, L, d_key} */
    const double *v;     /* {H, L, d_value} */
    const double *beta;  /* {H, L}, each in [0, 1] */
    const double *gate;  /* {H, L}, each in (0, 1], or NULL (the plain delta rule) */
    const double *s0;    /* {H, d_value, d_key} or NULL (zero) */
    double *y;           /* {H, L, d_value} */
    double *s_final;     /* {H, d_value, d_key} or NULL; may alias s0 */
} lm_delta_seq_f64;

/* float32 operator arguments. dtype LM_KV_F32 (a zeroed struct) reads q, k, v; LM_KV_BF16
 * reads their bfloat16 copies q16, k16, v16 (same shapes; q, k, v are then ignored) and
 * needs the chunked form. beta, gate, s0, y and s_final are float32 either way. */
typedef struct lm_delta_seq_f32 {
    size_t heads, length, d_key, d_value;
    const float *q, *k, *v, *beta, *gate, *s0; /* as in lm_delta_seq_f64 */
    float *y;
    float *s_final;
    lm_kv_dtype dtype;               /* LM_KV_F32 or LM_KV_BF16: the type of q, k, v */
    const uint16_t *q16, *k16, *v16; /* dtype BF16: {H, L, d_key} twice, {H, L, d_value} */
} lm_delta_seq_f32;

/* Float64 oracle, token by token. LM_ERR_SHAPE (a size 0, q/k/v/beta/y NULL),
 * LM_ERR_NONFINITE naming the array, LM_ERR_DOMAIN ("k must have non-zero norm: head h,
 * token t", "gate must lie in (0, 1]"), LM_ERR_ARG ("beta must lie in [0, 1]"). */
lm_status lm_delta_gated_f64_ref(const lm_delta_seq_f64 *p, lm_error *err);

/* Floats of workspace one head needs at chunk size `chunk` (recurrent: chunk 1); with
 * dtype bf16 also the chunk's widened q, k, v and the bfloat16 pair buffers of the
 * BF16-dot path (delta_body.h). */
size_t lm_delta_work_floats(const lm_delta_seq_f32 *p, size_t chunk);

/* Fast kernels, one head; work holds lm_delta_work_floats(p, chunk) floats (64-byte
 * aligned). The recurrent kernel ignores chunk. No allocation, no threads.
 * Slots delta_recurrent_f32 and delta_chunked_f32 of lm_kernels.h, and delta_chunked_bf16
 * (dtype bf16: the chunk's q, k, v widened to float32 and the f32 kernel run on them; on
 * avx512bf16 the state products on VDPBF16PS, docs/kernels.md "bf16"). */

/* The operator: validates (sizes, arrays of the dtype, beta in [0, 1], gate in (0, 1],
 * every key non-zero and finite, chunk > 0 when chunked), then runs the delta_chunked_f32
 * or delta_chunked_bf16 (chunked, by p->dtype) or delta_recurrent_f32 kernel of `ops` over
 * the heads with OpenMP, one workspace per thread. LM_ERR_ARG for a dtype other than f32
 * and bf16, and for bf16 with the recurrent form (bf16 is a chunked compute path). */
lm_status lm_delta_rule_f32(const lm_delta_seq_f32 *p, bool chunked, size_t chunk,
                            const lm_ops *ops, lm_error *err);

#endif

/* Causal additive linear attention S_t = S_{t-1} + v_t k_t^T, y_t = S_t q_t, with the state
 * S of shape [d_value, d_key] (the M8 notebook, section 3), sequential and chunked. */
#ifndef LONGMIX_LINEAR_H
#define LONGMIX_LINEAR_H

#include "lm_core.h"
#include "lm_ops.h"
#include "../attention/attention.h" /* lm_kv_dtype */

#include <stddef.h>
#include <string.h>

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

/* ---- multi-head linear attention, additive / normalized / gated (helper "rec":
 *      ref_gated.c float64 oracle, scalar/avx2/avx512/neon.c, driver.c) ------------------
 * Per head, with phi the identity (feature = LM_LINEAR_IDENTITY, M8's additive form) or
 * phi(x) = elu(x) + 1 (LM_LINEAR_ELU1, the lesson's), and a decay a_t in (0, 1]^{d_key}
 * (gate none: 1; scalar: g_t for every key channel; channel: g_t[c], as in GLA):
 *   S_t = diag(a_t) S_{t-1} + phi(k_t) v_t^T        S {d_key, d_value}
 *   z_t = a_t * z_{t-1} + phi(k_t)                   z {d_key} (normalized form only)
 *   y_t = S_t^T phi(q_t)                             additive
 *   y_t = S_t^T phi(q_t) / (phi(q_t) . z_t)          normalized
 * The chunked form (chunk C) computes the same outputs per chunk from the carried state:
 *   y_t = (phi(q_t) * b_t)^T S_0 + sum_{s<=t} w_ts v_s,  b_t = a_1 * ... * a_t (in chunk)
 *   w_ts = sum_c phi(q_t)[c] phi(k_s)[c] b_t[c] / b_s[c]  (causal mask s <= t)
 * with the ratios b_t / b_s formed without dividing (exp of a log difference for a scalar
 * gate, running products for a channel gate), then S_C = diag(b_C) S_0 +
 * sum_s (phi(k_s) * b_C / b_s) v_s^T. */
typedef enum lm_linear_feature { LM_LINEAR_IDENTITY = 0, LM_LINEAR_ELU1 = 1 } lm_linear_feature;
typedef enum lm_linear_gate {
    LM_LINEAR_GATE_NONE = 0,
    LM_LINEAR_GATE_SCALAR = 1,  /* gate {H, L}: one decay per head and step */
    LM_LINEAR_GATE_CHANNEL = 2, /* gate {H, L, d_key}: one decay per key channel */
} lm_linear_gate;

typedef struct lm_linear_f64 {
    size_t heads, length, d_key, d_value;
    lm_linear_feature feature;
    bool normalize;
    lm_linear_gate gate_kind;
    const double *q, *k; /* {H, L, d_key} */
    const double *v;     /* {H, L, d_value} */
    const double *gate;  /* {H, L} or {H, L, d_key} or NULL (gate none) */
    const double *s0;    /* {H, d_key, d_value} or NULL (zero) */
    const double *z0;    /* {H, d_key} or NULL (zero); normalized form */
    double *y;           /* {H, L, d_value} */
    double *s_final;     /* {H, d_key, d_value} or NULL */
    double *z_final;     /* {H, d_key} or NULL */
} lm_linear_f64;

typedef struct lm_linear_f32 {
    size_t heads, length, d_key, d_value;
    lm_linear_feature feature;
    bool normalize;
    lm_linear_gate gate_kind;
    const float *q, *k;  /* {H, L, d_key} */
    const float *v;      /* {H, L, d_value} */
    const float *gate;   /* {H, L} or {H, L, d_key} or NULL */
    const float *s0;     /* {H, d_key, d_value} or NULL */
    const float *z0;     /* {H, d_key} or NULL */
    float *y;            /* {H, L, d_value} */
    float *s_final;      /* {H, d_key, d_value} or NULL; may alias s0 */
    float *z_final;      /* {H, d_key} or NULL; may alias z0 */
    /* Scalar gate given by its logarithm instead ({H, L}, every entry <= 0; used when
     * gate_kind is LM_LINEAR_GATE_SCALAR and gate is NULL): the SSD form, where
     * log a_t = delta_t * A can be far below the float32 exp range. */
    const float *log_gate;
    /* The inputs' type: LM_KV_F32 (a zeroed struct) reads q, k, v; LM_KV_BF16 reads q16,
     * k16, v16 instead (bfloat16, same shapes; chunked form only, slot linear_chunked_bf16).
     * Gates, states and outputs stay float32 either way. */
    lm_kv_dtype dtype;
    const uint16_t *q16, *k16; /* {H, L, d_key} bfloat16 */
    const uint16_t *v16;       /* {H, L, d_value} bfloat16 */
} lm_linear_f32;

/* Head h's state S {dk, dv} and normalizer z {dk} at the start of a kernel call: s0 and z0
 * copied in (nothing to copy when S or z is that very row: the state updated in place), or
 * zero when they are NULL. */
static inline void lm_linear_head_start(const lm_linear_f32 *p, size_t h, float *S, float *z)
{
    const size_t dk = p->d_key, dv = p->d_value;
    if (p->s0 == NULL)
        memset(S, 0, dk * dv * sizeof(float));
    else if (S != p->s0 + h * dk * dv)
        memcpy(S, p->s0 + h * dk * dv, dk * dv * sizeof(float));
    if (p->z0 == NULL)
        memset(z, 0, dk * sizeof(float));
    else if (z != p->z0 + h * dk)
        memcpy(z, p->z0 + h * dk, dk * sizeof(float));
}

/* Float64 oracle, token by token. Errors: LM_ERR_SHAPE (a size 0, NULL q/k/v/y, a gate
 * kind without its array), LM_ERR_NONFINITE naming the array, LM_ERR_DOMAIN ("gate must
 * lie in (0, 1]"), LM_ERR_NUMERIC (a normalized row whose denominator is not positive:
 * only possible with the identity feature, which the normalized form rejects: LM_ERR_ARG
 * "normalize needs feature elu1"). */
lm_status lm_linear_gated_f64_ref(const lm_linear_f64 *p, lm_error *err);

/* Floats of workspace one head of the chunked kernel needs at chunk size `chunk` (for
 * dtype bf16 also the widened chunk or the bfloat16 pair layouts, whichever is larger). */
size_t lm_linear_chunk_work_floats(const lm_linear_f32 *p, size_t chunk);

/* Floats of the f32 chunked kernel's own workspace (lm_linear_chunk_work_floats of a float32
 * problem); the bf16 slot's widening paths put theirs after it. */
size_t lm_linear_chunk_work_floats_f32(const lm_linear_f32 *p, size_t chunk);

/* Floats of the avx512bf16 kernel's pair layouts at d_key dk, d_value dv, chunk C. */
size_t lm_linear_bf16_pair_floats(size_t dk, size_t dv, size_t C);

/* The bf16 slot (linear_chunked_bf16): bfloat16 q16, k16, v16, float32 sums. Paths without
 * BF16 dot products widen one chunk of q, k, v at a time to float32 and run that path's f32
 * chunked kernel on it, the state carried in the workspace: bit for bit the f32 slot on the
 * widened inputs. On avx512bf16 the chunk's four products (scores phi(q) phi(k)^T, the
 * readout phi(q) S, the masked weights times v, the carry (phi(k) ratio)^T v) run on
 * VDPBF16PS with float32 sums, their operands packed as bfloat16 pairs along the summed
 * index; phi(q), phi(k) (elu1), the decayed scores, the scaled keys and the state are
 * rounded to bfloat16 only as operands (the state, z and the normalizer stay float32).
 * Error above the float32 rule <= 3 * 2^-8 (first order) of the absolute-value scale
 * (docs/kernels.md, "bf16 linear attention"). It widens instead for a channel gate, an odd
 * d_key or a d_value not a multiple of 16. */
#define LM_LINEAR_BF16_RTOL (3.0 / 256.0 + 1.0 / 16384.0)

/* Fast kernels, one head (slots linear_recurrent_f32 and linear_chunked_f32 of
 * lm_kernels.h): recurrent (chunk ignored, work unused) or chunked; work holds
 * lm_linear_chunk_work_floats(p, chunk) floats, 64-byte aligned. No allocation. */

/* C {m, n} += A {m, kk} B {kk, n} with row strides lda, ldb, ldc: the register-blocked
 * product of the chunked kernels (gemm_body.h), exposed through the dispatch table for
 * other families (the latent-attention expansion). No validation: a kernel.
 * Slot gemm_acc_f32 of lm_kernels.h. */

/* The operator: validates (sizes, arrays, normalize needs elu1, chunk > 0 when chunked,
 * gates in (0, 1]: LM_ERR_DOMAIN; dtype f32 or bf16, bf16 only chunked: LM_ERR_ARG; NaN or
 * Inf in q16, k16 or v16: LM_ERR_NONFINITE), then runs the linear_chunked_f32 or
 * linear_chunked_bf16 (chunked, by dtype) or linear_recurrent_f32 kernel of `ops` over the
 * heads with OpenMP, one workspace per thread. */
lm_status lm_linear_attention_f32(const lm_linear_f32 *p, bool chunked, size_t chunk,
                                  const lm_ops *ops, lm_error *err);

#endif

/* Dense projections and the small per-token operations of a whole layer, for the model
 * runner (`longmix model`): a batched matrix-vector product over f32, bf16 or int8
 * weights (decode is a GEMV per projection, weights read once for the whole batch),
 * RMSNorm and the SwiGLU gate. The float64 oracle is lm_dense_f64_ref. */
#ifndef LONGMIX_LAYERS_H
#define LONGMIX_LAYERS_H

#include "lm_core.h"
#include "lm_ops.h"

typedef enum lm_weight_dtype { LM_WEIGHT_F32 = 0, LM_WEIGHT_BF16, LM_WEIGHT_INT8 } lm_weight_dtype;

/* "f32" | "bf16" | "int8"; LM_ERR_ARG naming the text otherwise. */
lm_status lm_weight_dtype_parse(const char *name, lm_weight_dtype *dtype, lm_error *err);
const char *lm_weight_dtype_name(lm_weight_dtype dtype);
/* Bytes per weight: 4, 2, 1 (int8 adds one float32 scale per row). */
size_t lm_weight_dtype_size(lm_weight_dtype dtype);

/* The most sequences one kernel call carries in registers; the driver splits larger
 * batches into blocks of it (the row is then re-read from L1). */
#define LM_DENSE_BATCH_BLOCK 8

/* A projection W {rows, cols} row-major in `dtype`; int8 rows carry scale {rows}:
 * W[r, c] = scale[r] * code[r, c]. */
typedef struct lm_dense {
    size_t rows, cols;
    lm_weight_dtype dtype;
    void *w;      /* {rows, cols} of dtype */
    float *scale; /* {rows} for int8, else NULL */
} lm_dense;

/* Allocates W with synthetic weights from lm_rng(seed): uniform in
 * [-sqrt(3 / cols), sqrt(3 / cols)] (unit-variance outputs for unit-variance inputs),
 * rounded to dtype (int8: symmetric per row, scale = max |w| / 127). LM_ERR_SHAPE for a
 * zero size, LM_ERR_NOMEM. Free with lm_dense_free. */
lm_status lm_dense_init(lm_dense *d, size_t rows, size_t cols, lm_weight_dtype dtype,
                        uint64_t seed, lm_error *err);
void lm_dense_free(lm_dense *d);
/* Bytes the weights occupy (codes and scales). */
size_t lm_dense_bytes(const lm_dense *d);
/* W[r, c] as the fast path reads it, in float64 (bf16 and int8 decoded exactly). */
double lm_dense_weight(const lm_dense *d, size_t r, size_t c);

/* Float64 oracle: y {batch, rows} = x {batch, cols} W^T, W {rows, cols}. LM_ERR_SHAPE
 * for a zero size, LM_ERR_NONFINITE for NaN/Inf in w or x. */
lm_status lm_dense_f64_ref(const double *w, const double *x, size_t batch, size_t rows,
                           size_t cols, double *y, lm_error *err);

/* Kernel: rows [r0, r1) of y {nb, ldy} = x {nb, cols} W^T for nb <= LM_DENSE_BATCH_BLOCK
 * sequences; w the weights of dtype, scale {rows} for int8 (else ignored). No
 * allocation, no threads. One per dtype and ISA file (scalar, avx2, avx512). */
typedef void lm_dense_rows_fn(const void *w, const float *scale, const float *x, size_t nb,
                              size_t cols, size_t r0, size_t r1, float *y, size_t ldy);
#define LM_DENSE_DECLARE(isa)                                                                  \
    lm_dense_rows_fn lm_dense_rows_f32_##isa, lm_dense_rows_bf16_##isa,                        \
        lm_dense_rows_int8_##isa;
LM_DENSE_DECLARE(scalar)
LM_DENSE_DECLARE(avx2)
LM_DENSE_DECLARE(avx512)
#undef LM_DENSE_DECLARE
/* bf16 on AVX512-BF16: batch 1 is lm_dense_rows_bf16_avx512; batch 2-8 rounds x to bf16
 * and multiplies with VDPBF16PS (float32 sums): see lm_dense_x_roundoff. */
lm_dense_rows_fn lm_dense_rows_bf16_avx512bf16;

/* The kernel the driver runs for dtype on the vector width of `ops` (its ISA path: the
 * avx512 family, avx2, or the portable one elsewhere). */
lm_dense_rows_fn *lm_dense_kernel(lm_weight_dtype dtype, const lm_ops *ops);

/* The relative rounding that lm_dense_apply's kernel for (dtype, ops, batch) gives each
 * element of x before multiplying: 2^-9 (bf16's unit roundoff, round to nearest even) for
 * bf16 weights at batch >= 2 on the avx512bf16 path, 0 where x is multiplied as float32.
 * Each output then moves by at most this times sum_c |W[r, c] x[b, c]| beyond the float32
 * sums' own error. */
double lm_dense_x_roundoff(lm_weight_dtype dtype, const lm_ops *ops, size_t batch);
/* y {batch, rows} = x {batch, cols} W^T with the kernel of ops, rows split over the
 * calling OpenMP team (blocks of 16 rows), every row read once per block of
 * LM_DENSE_BATCH_BLOCK sequences. LM_ERR_ARG for a NULL pointer, LM_ERR_SHAPE for
 * batch 0. x is trusted (the runner's activations). */
lm_status lm_dense_apply(const lm_dense *d, const float *x, size_t batch, float *y,
                         const lm_ops *ops, lm_error *err);

/* y[b, i] = x[b, i] / sqrt(mean_i x[b, i]^2 + eps) * gain[i]; x, y {batch, d}, gain {d}
 * (NULL: ones). y may alias x. */
void lm_rmsnorm_f32(const float *x, const float *gain, size_t batch, size_t d, float eps,
                    float *y);
/* The SwiGLU gate in place: g[i] = silu(g[i]) * u[i] = g / (1 + exp(-g)) * u, {count}. */
void lm_swiglu_f32(float *g, const float *u, size_t count);
/* silu in place, {count}. */
void lm_silu_f32(float *x, size_t count);

/* Float64 oracle of one SwiGLU MLP layer with its pre-norm and residual:
 *   h = x / sqrt(mean(x^2) + eps),  y = x + W_down (silu(W_gate h) * (W_up h))
 * x, y {batch, d}; W_gate, W_up {ff, d}; W_down {d, ff}; silu(g) = g / (1 + exp(-g)).
 * LM_ERR_SHAPE for a zero size, LM_ERR_NONFINITE for NaN/Inf in x. */
lm_status lm_mlp_layer_f64_ref(const double *x, const double *w_gate, const double *w_up,
                               const double *w_down, size_t batch, size_t d, size_t ff,
                               double eps, double *y, lm_error *err);

#endif

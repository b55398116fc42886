/* The signatures of the dispatch table's kernels: one function type per kind of slot,
 * named in the kernel list (lm_kernels.h). Types only: the argument structs are declared
 * here by tag and defined in their family headers, so this header includes no family.
 * Kernels take explicit shapes and a work range; they never validate, allocate or thread
 * (the family's driver does that). */
#ifndef LONGMIX_OPS_TYPES_H
#define LONGMIX_OPS_TYPES_H

#include <stddef.h>

struct lm_attn_prefill_args;
struct lm_attn_counts;
struct lm_kvq_view;
struct lm_ssm_mamba1_f32;
struct lm_conv_causal_f32;
struct lm_linear_f32;
struct lm_delta_seq_f32;
struct lm_ssd_block_f32;

/* y[i] = sum_j x[i, j] * w[j] over n rows of width d. x {n, d} row-major, w {d}, y {n}. */
typedef void lm_gemv_rowdot_fn(const float *restrict x, const float *restrict w,
                               float *restrict y, size_t n, size_t d);

/* Causal (masked) GQA prefill of query heads [head_begin, head_end), all of one KV head,
 * over query tiles [tile_begin, tile_end) (kernels/attention/attention.h). */
typedef void lm_attn_prefill_fn(const struct lm_attn_prefill_args *a, size_t head_begin,
                                size_t head_end, size_t tile_begin, size_t tile_end,
                                float *workspace, struct lm_attn_counts *counts);

/* Decode partial of `group` query heads q {group, d} over one KV head's rows k, v {n, d}
 * (of the slot's dtype): the softmax state m, l {group} and acc {group, d}. */
typedef void lm_attn_decode_fn(const float *q, const void *k, const void *v, size_t n,
                               size_t d, size_t group, float scale, float *m, float *l,
                               float *acc, float *workspace);

/* Decode partial over quantized tokens [j0, j1) of one KV head, reading the codes. */
typedef void lm_kvq_decode_fn(const struct lm_kvq_view *view, size_t j0, size_t j1,
                              const float *q, size_t group, float scale, float *m, float *l,
                              float *acc, float *workspace);

/* Mamba-1 selective scan of batch row `batch_index`, channels [d_begin, d_end). */
typedef void lm_mamba1_scan_fn(const struct lm_ssm_mamba1_f32 *p, size_t batch_index,
                               size_t d_begin, size_t d_end);

/* Causal depthwise convolution of batch row `batch_index`, channels [d_begin, d_end). */
typedef void lm_conv_causal_fn(const struct lm_conv_causal_f32 *p, size_t batch_index,
                               size_t d_begin, size_t d_end);

/* Sequential affine scan of steps rows: h = a[t] * h + b[t]; out[t] = h. a, b, out
 * {steps, width}; state {width} in and out; out may alias b. */
typedef void lm_scan_affine_fn(const float *a, const float *b, size_t steps, size_t width,
                               float *state, float *out);
/* The composition of steps rows as one map h -> prod * h + acc; prod, acc {width}. */
typedef void lm_scan_affine_reduce_fn(const float *a, const float *b, size_t steps,
                                      size_t width, float *prod, float *acc);

/* One head of linear attention (recurrent: chunk ignored; chunked: work holds
 * lm_linear_chunk_work_floats floats). */
typedef void lm_linear_head_fn(const struct lm_linear_f32 *p, size_t head, size_t chunk,
                               float *work);
/* C {m, n} += A {m, kk} B {kk, n}, row strides lda, ldb, ldc. */
typedef void lm_gemm_acc_fn(size_t m, size_t n, size_t kk, const float *a, size_t lda,
                            const float *b, size_t ldb, float *c, size_t ldc);

/* One head of the (gated) delta rule; work holds lm_delta_work_floats(p, chunk) floats. */
typedef void lm_delta_head_fn(const struct lm_delta_seq_f32 *p, size_t head, size_t chunk,
                              float *work);

/* The chunked SSD of one block (kernels/ssm/ssd_chunked.h); work holds
 * lm_ssd_chunked_work_floats floats. */
typedef void lm_ssd_chunked_fn(const struct lm_ssd_block_f32 *blk, float *work);
/* One SSD decode step of one head: S {P, N} in place, y {P}. */
typedef void lm_ssd_step_fn(const float *x, const float *b, const float *c, size_t P,
                            size_t N, float abar, float delta, float skip, float *S, float *y);

#endif

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

/* Attention family (kernels/attention/attention.h holds the structs and the contracts). */
struct lm_attn_prefill_args;
struct lm_attn_counts;
/* Causal (masked) GQA prefill of query heads [head_begin, head_end), all of one KV head,
 * over query tiles [tile_begin, tile_end). */
typedef void (*lm_attn_prefill_f32_fn)(const struct lm_attn_prefill_args *a, size_t head_begin,
                                       size_t head_end, size_t tile_begin, size_t tile_end,
                                       float *workspace, struct lm_attn_counts *counts);
/* Decode partial of `group` query heads q {group, d} over one KV head's rows k, v {n, d}. */
typedef void (*lm_attn_decode_fn)(const float *q, const void *k, const void *v, size_t n,
                                  size_t d, size_t group, float scale, float *m, float *l,
                                  float *acc, float *workspace);

struct lm_kvq_view;
/* Decode partial over quantized tokens [j0, j1) of one KV head, reading the codes. */
typedef void (*lm_kvq_decode_fn)(const struct lm_kvq_view *view, size_t j0, size_t j1,
                                 const float *q, size_t group, float scale, float *m, float *l,
                                 float *acc, float *workspace);

#define LM_OPS_FIELDS_ATTENTION(X) X(lm_rowdot_f32_fn, rowdot_f32) \
    X(lm_attn_prefill_f32_fn, attn_prefill_f32) \
    X(lm_attn_decode_fn, attn_decode_f32) \
    X(lm_attn_decode_fn, attn_decode_f16) \
    X(lm_attn_decode_fn, attn_decode_bf16) \
    X(lm_kvq_decode_fn, kvq_decode)

/* Recurrent family (helper "rec"): the family headers declare the function types. */
#include "../ssm/ssm.h"
#include "../conv/conv.h"
#include "../scan/scan.h"
#include "../linear/linear.h"
#include "../delta/delta.h"
#include "../ssm/ssd_chunked.h"

#define LM_OPS_FIELDS_RECURRENT(X) \
    X(lm_ssm_mamba1_scan_f32_fn, mamba1_scan_f32) \
    X(lm_conv_causal_f32_fn, conv_causal_f32) \
    X(lm_scan_affine_f32_fn, scan_affine_f32) \
    X(lm_scan_affine_reduce_f32_fn, scan_affine_reduce_f32) \
    X(lm_linear_head_f32_fn, linear_recurrent_f32) \
    X(lm_linear_head_f32_fn, linear_chunked_f32) \
    X(lm_delta_head_f32_fn, delta_recurrent_f32) \
    X(lm_delta_head_f32_fn, delta_chunked_f32) \
    X(lm_gemm_acc_f32_fn, gemm_acc_f32) \
    X(lm_ssd_chunked_f32_fn, ssd_chunked_f32) \
    X(lm_ssd_step_f32_fn, ssd_step_f32)

#endif

/* The short causal depthwise convolution of the Mamba block (width 4 in Mamba-1/2), with
 * its tail state so that prefill and token-by-token decode give the same output (helper
 * "rec"). Per batch row b, channel d, token t, with K the width and xx the concatenation
 * of the tail (K-1 previous inputs) and x along time:
 *   y[t,d] = bias[d] + sum_{k=0}^{K-1} w[d,k] * xx[t + k, d]        (xx[0..K-2] = tail)
 *   y[t,d] = silu(y[t,d]) = y / (1 + e^-y)   when apply_silu
 *   tail_out = the last K-1 rows of xx (the inputs the next call needs). */
#ifndef LONGMIX_CONV_H
#define LONGMIX_CONV_H

#include "lm_core.h"
#include "lm_ops.h"

#include <stdbool.h>
#include <stddef.h>

/* Largest width K (the kernels keep a window of K-1 rows per channel block). */
#define LM_CONV_MAX_WIDTH 8

typedef struct lm_conv_causal_f64 {
    size_t batch, length, channels, width; /* B, L, D, K */
    const double *x;        /* {B, L, D} */
    const double *weight;   /* {D, K}: weight[d, K-1] multiplies the current token */
    const double *bias;     /* {D} or NULL */
    const double *tail_in;  /* {B, K-1, D} or NULL (zeros: the start of a sequence) */
    double *y;              /* {B, L, D} */
    double *tail_out;       /* {B, K-1, D} or NULL; may alias tail_in */
    bool apply_silu;
} lm_conv_causal_f64;

typedef struct lm_conv_causal_f32 {
    size_t batch, length, channels, width;
    const float *x;       /* {B, L, D} */
    const float *weight;  /* {D, K} */
    const float *bias;    /* {D} or NULL */
    const float *tail_in; /* {B, K-1, D} or NULL */
    float *y;             /* {B, L, D} */
    float *tail_out;      /* {B, K-1, D} or NULL; may alias tail_in (decode in place) */
    bool apply_silu;
} lm_conv_causal_f32;

/* Float64 oracle. LM_ERR_SHAPE (a size 0, K > LM_CONV_MAX_WIDTH, x/weight/y NULL),
 * LM_ERR_NONFINITE naming the array. */
lm_status lm_conv_causal_f64_ref(const lm_conv_causal_f64 *p, lm_error *err);

/* Fast kernels (slot conv_causal_f32, lm_kernels.h): batch row batch_index, channels
 * [d_begin, d_end), float32. */

/* The operator: checks shapes, runs the conv_causal_f32 kernel of `ops` over (batch row,
 * channel block) items with OpenMP. A decode step is a call with length 1 and
 * tail_in == tail_out. */
lm_status lm_conv_causal(const lm_conv_causal_f32 *p, const lm_ops *ops, lm_error *err);

#endif

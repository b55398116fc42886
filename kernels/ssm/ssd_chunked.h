/* The chunked Mamba-2 SSD kernel of one (batch row, head) over one block of time, per ISA
 * (ssd_body.h instantiated by ssd_scalar.c, avx2_ssd.c, avx512_ssd.c, neon_ssd.c); the
 * operator driver is kernels/ssm/driver_ssd.c.
 *
 * Per chunk of C tokens (row t, 0-based in the chunk; the state S {N, P} enters as S_in):
 *   delta_t = softplus(dt_raw_t + dt_bias),  lg_t = delta_t A  (<= 0)
 * The chunk is cut into sub-chunks [a, b) whose decay c_t = lg_{a+1} + ... + lg_t stays
 * within SSD_RANGE (usually the whole chunk). With u_t = exp(c_t), w_s = exp(-c_s) delta_s,
 * alpha = exp(lg_a), Xw = diag(w) X:
 *   y_t   = u_t (alpha C_t S_in + sum_{a<=s<=t} (C_t . B_s) Xw_s) + skip x_t
 *   S_out = u_{b-1} (alpha S_in + B^T Xw)
 * which is the recurrence S_t = exp(lg_t) S_{t-1} + delta_t B_t x_t^T, y_t = S_t^T C_t +
 * skip x_t unrolled: every decay exp(c_t - c_s) (s <= t) is the product u_t w_s, and
 * every term of a row of y (or of S_out) carries the same factor u_t (u_{b-1}), so scaling
 * by it is not a cancellation. The C . B scores are shared by every head of a group: the
 * driver computes them once per chunk (`scores`). */
#ifndef LONGMIX_SSD_CHUNKED_H
#define LONGMIX_SSD_CHUNKED_H

#include "lm_kernels.h"

#include <stddef.h>
#include <stdint.h>

/* Largest decay range of a sub-chunk: w_s <= e^48 (about 7e20), far from float overflow
 * for any sane input, and u_t >= e^-48 far above the smallest normal float. */
#define SSD_RANGE 48.0f

typedef struct lm_ssd_block_f32 {
    size_t length;     /* tokens in this block */
    size_t chunk;      /* C >= 1 */
    size_t head_dim;   /* P */
    size_t state;      /* N */
    const float *x;    /* {length, P}, rows ldx apart */
    const float *dt_raw; /* {length}, entries ld_dt apart, before bias and softplus */
    const float *b;    /* {length, N}, rows ldbc apart */
    const float *c;    /* {length, N}, rows ldbc apart */
    const float *scores; /* {ceil(length / C), C, C}: C_t . B_s of each chunk for s <= t,
                          * zero for s > t */
    float *y;          /* {length, P}, rows ldy apart */
    float *s;          /* {N, P}: the state, updated in place */
    size_t ldx, ld_dt, ldbc, ldy;
    float dt_bias, a, skip; /* the head's bias, A (<= 0) and skip */
    /* Slot ssd_chunked_bf16: x, b and c in bfloat16 here instead (same layout and strides;
     * the float32 pointers are not read). */
    const uint16_t *x16, *b16, *c16;
} lm_ssd_block_f32;

/* Floats of workspace one call needs (per thread). */
static inline size_t lm_ssd_chunked_work_floats(size_t chunk, size_t head_dim)
{
    const size_t cp = (chunk * head_dim + 15) & ~(size_t)15;
    const size_t c16 = ((chunk + 15) & ~(size_t)15) + 16;
    return cp + 6 * c16;
}

/* Floats of workspace one call of slot ssd_chunked_bf16 needs (per thread) for blocks of
 * at most `length` tokens: the float32 copies of the block's x, b and c rows that a path
 * without bfloat16 dot products widens into (then the f32 kernel's workspace), or the
 * bfloat16 pair layouts of the avx512bf16 kernel (ssd_bf16.h), whichever is larger. */
static inline size_t lm_ssd_chunked_bf16_work_floats(size_t length, size_t chunk,
                                                     size_t head_dim, size_t state)
{
    const size_t r16 = 15, wide = ((length * (head_dim + 2 * state) + r16) & ~r16) +
                                  lm_ssd_chunked_work_floats(chunk, head_dim);
    /* pairs: Xw {C/2, P}, S {N/2, P}, B^T {N, C/2}, scores {C, C/2} words, + f32 work */
    const size_t c2 = (chunk + 1) / 2 + 1;
    const size_t pairs = ((c2 * head_dim + r16) & ~r16) + (((state + 1) / 2 * head_dim + r16) & ~r16) +
                         ((state * c2 + r16) & ~r16) + ((chunk * c2 + r16) & ~r16) +
                         lm_ssd_chunked_work_floats(chunk, head_dim);
    return wide > pairs ? wide : pairs;
}

/* Runs the block's chunks in order, updating blk->s in place and writing blk->y.
 * blk->scores must hold the block's chunk scores; work holds
 * lm_ssd_chunked_work_floats(chunk, head_dim) floats (slot ssd_chunked_f32 of lm_kernels.h). */

/* One decode step of one head (ssd_step_body.h): S {P, N} updated in place,
 * S_i = abar S_i + (delta x_i) b, y_i = S_i . c + skip x_i. x, y {P}; b, c {N}
 * (slot ssd_step_f32 of lm_kernels.h). */

#endif

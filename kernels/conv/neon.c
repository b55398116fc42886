/* NEON float32 causal conv: 4 channels per vector (conv_body.h), SLEEF exp for the
 * SiLU; the channels past the last full block go to the scalar kernel. */
#if !defined(__ARM_NEON)
#error "kernels/conv/neon.c needs an AArch64 target with Advanced SIMD"
#endif
#include "conv.h"

#include "../simd/neon.h"
#define CONV_BLOCK conv_block_neon
#include "conv_body.h"

void lm_conv_causal_f32_neon(const lm_conv_causal_f32 *p, size_t batch_index,
                             size_t d_begin, size_t d_end)
{
    size_t d = d_begin;
    for (; d + LM_W <= d_end; d += LM_W)
        conv_block_neon(p, batch_index, d);
    lm_conv_causal_f32_scalar(p, batch_index, d, d_end);
}

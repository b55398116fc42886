/* AVX2 + FMA float32 causal conv: 8 channels per vector (conv_body.h), SLEEF exp for
 * the SiLU; the channels past the last full block go to the scalar kernel. */
#if !defined(__AVX2__) || !defined(__FMA__)
#error "kernels/conv/avx2.c needs -mavx2 -mfma"
#endif
#include "conv.h"

#include "../simd/avx2.h"
#define CONV_BLOCK conv_block_avx2
#include "conv_body.h"

void lm_conv_causal_f32_avx2(const lm_conv_causal_f32 *p, size_t batch_index,
                             size_t d_begin, size_t d_end)
{
    size_t d = d_begin;
    for (; d + LM_W <= d_end; d += LM_W)
        conv_block_avx2(p, batch_index, d);
    lm_conv_causal_f32_scalar(p, batch_index, d, d_end);
}

/* Portable float32 causal conv: the shared body (conv_body.h), one channel per "vector";
 * also the tail of the SIMD paths. */
#include "conv.h"

#include "../simd/scalar.h"
#define CONV_BLOCK conv_block_scalar
#include "conv_body.h"

void lm_conv_causal_f32_scalar(const lm_conv_causal_f32 *p, size_t batch_index,
                               size_t d_begin, size_t d_end)
{
    for (size_t d = d_begin; d < d_end; d++)
        conv_block_scalar(p, batch_index, d);
}

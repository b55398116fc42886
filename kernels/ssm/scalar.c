/* Portable float32 Mamba-1 scan: the shared kernel body (mamba1_body.h) with one channel
 * per "vector" and libm's expf/expm1f/log1pf. Also the tail of the SIMD paths. */
#include "ssm.h"

#include "../simd/scalar.h"
#define MAMBA1_BLOCK mamba1_block_scalar
#define MAMBA1_DECODE_BLOCK mamba1_decode_block_scalar
#include "mamba1_body.h"

void lm_mamba1_scan_f32_scalar(const lm_ssm_mamba1_f32 *p, size_t batch_index,
                                   size_t d_begin, size_t d_end)
{
    for (size_t d = d_begin; d < d_end; d++)
        if (p->length == 1)
            mamba1_decode_block_scalar(p, batch_index, d);
        else
            mamba1_block_scalar(p, batch_index, d);
}

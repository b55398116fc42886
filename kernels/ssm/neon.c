/* NEON float32 Mamba-1 scan: 4 channels per vector (mamba1_body.h), SLEEF's AdvSIMD
 * exp/expm1/log1p (1-ulp variants); channels past the last full block go to the scalar
 * kernel. */
#if !defined(__ARM_NEON)
#error "kernels/ssm/neon.c needs an AArch64 target with Advanced SIMD"
#endif
#include "ssm.h"

#include "../simd/neon.h"
#define MAMBA1_BLOCK mamba1_block_neon
#define MAMBA1_DECODE_BLOCK mamba1_decode_block_neon
#include "mamba1_body.h"

void lm_mamba1_scan_f32_neon(const lm_ssm_mamba1_f32 *p, size_t batch_index,
                                 size_t d_begin, size_t d_end)
{
    size_t d = d_begin;
    for (; d + LM_W <= d_end; d += LM_W)
        if (p->length == 1)
            mamba1_decode_block_neon(p, batch_index, d);
        else
            mamba1_block_neon(p, batch_index, d);
    lm_mamba1_scan_f32_scalar(p, batch_index, d, d_end);
}

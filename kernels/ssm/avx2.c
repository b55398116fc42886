/* AVX2 + FMA float32 Mamba-1 scan: 8 channels per vector (mamba1_body.h), SLEEF's AVX2
 * exp/expm1/log1p (1-ulp variants); channels past the last full block go to the scalar
 * kernel. */
#if !defined(__AVX2__) || !defined(__FMA__)
#error "kernels/ssm/avx2.c needs -mavx2 -mfma"
#endif
#include "ssm.h"

#include "../simd/avx2.h"
#define MAMBA1_BLOCK mamba1_block_avx2
#define MAMBA1_DECODE_BLOCK mamba1_decode_block_avx2
#include "mamba1_body.h"

void lm_mamba1_scan_f32_avx2(const lm_ssm_mamba1_f32 *p, size_t batch_index,
                                 size_t d_begin, size_t d_end)
{
    size_t d = d_begin;
    for (; d + LM_W <= d_end; d += LM_W)
        if (p->length == 1)
            mamba1_decode_block_avx2(p, batch_index, d);
        else
            mamba1_block_avx2(p, batch_index, d);
    lm_mamba1_scan_f32_scalar(p, batch_index, d, d_end);
}

/* AVX-512F float32 Mamba-1 scan: 16 channels per vector (mamba1_body.h), SLEEF's AVX-512
 * exp/expm1/log1p (1-ulp variants); channels past the last full block go to the scalar
 * kernel. */
#if !defined(__AVX512F__)
#error "kernels/ssm/avx512.c needs -mavx512f"
#endif
#include "ssm.h"

#include "../simd/avx512.h"
#define MAMBA1_BLOCK mamba1_block_avx512
#define MAMBA1_DECODE_BLOCK mamba1_decode_block_avx512
#include "mamba1_body.h"

void lm_mamba1_scan_f32_avx512(const lm_ssm_mamba1_f32 *p, size_t batch_index,
                                   size_t d_begin, size_t d_end)
{
    size_t d = d_begin;
    for (; d + LM_W <= d_end; d += LM_W)
        if (p->length == 1)
            mamba1_decode_block_avx512(p, batch_index, d);
        else
            mamba1_block_avx512(p, batch_index, d);
    lm_mamba1_scan_f32_scalar(p, batch_index, d, d_end);
}

/* Quantized-cache decode, avx512 path: kvquant_body.h over the avx512 SIMD mapping layer
 * (lm_kvq_decode_avx512f32, float arithmetic), and the table's avx512 entry, which runs the
 * integer-dot-product kernel (avx512vnni.c) when the CPU has AVX512-VNNI. */
#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "kernels/kvquant/avx512.c needs -mavx512f -mavx512bw"
#endif
#include "kvquant.h"

#include "../attention/attention.h"
#include "../attention/simd_avx512.h"

#undef LM_ISA_SUFFIX
#define LM_ISA_SUFFIX avx512f32

#include "words_avx512.h"

#include "kvquant_body.h"

LM_KVQ_DECODE_DECLARE(avx512)
{
    if (lm_cpu()->avx512_vnni) /* runtime check: the VNNI file needs the instructions */
        lm_kvq_decode_avx512vnni(view, j0, j1, q, group, scale, m, l, acc, workspace);
    else
        lm_kvq_decode_avx512f32(view, j0, j1, q, group, scale, m, l, acc, workspace);
}

/* Quantized-cache decode, avx512 path: kvquant_body.h over the avx512 SIMD mapping layer
 * (lm_kvq_decode_avx512, float arithmetic). The integer-dot-product kernel is the
 * avx512vnni path's own entry (avx512vnni.c). */
#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "kernels/kvquant/avx512.c needs -mavx512f -mavx512bw"
#endif
#include "kvquant.h"

#include "../attention/attention.h"
#include "../simd/avx512.h"

#include "words_avx512.h"

#include "kvquant_body.h"

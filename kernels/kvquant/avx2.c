/* Quantized-cache decode, avx2 path: kvquant_body.h over the avx2 SIMD mapping layer. */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "kernels/kvquant/avx2.c needs -mavx2 -mfma -mf16c"
#endif
#include "kvquant.h"

#include "../attention/attention.h"
#include "../attention/simd_avx2.h"

#include "kvquant_body.h"

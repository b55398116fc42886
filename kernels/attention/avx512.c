/* AVX-512 F/BW/VL attention kernels: 16 float lanes, F16C-style vcvtph2ps for f16 caches,
 * SLEEF exp. Decode kernels are in avx512_decode.c. */
#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "kernels/attention/avx512.c needs -mavx512f -mavx512bw"
#endif
#include "attention.h"
#include "../simd/avx512.h"
/* decode: avx512_decode.c (16-lane score vectors, prefetch, BF16 dot products) */
#define LM_ATTN_OWN_DECODE 1

#include "kernel_body.h"

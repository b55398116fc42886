/* AVX-512 F/BW/VL attention kernels: 16 float lanes, F16C-style vcvtph2ps for f16 caches,
 * SLEEF exp. */
#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "kernels/attention/avx512.c needs -mavx512f -mavx512bw"
#endif
#include "attention.h"
#include "simd_avx512.h"

#include "kernel_body.h"

/* AVX2 + FMA (+ F16C) attention kernels: 8 float lanes, SLEEF exp. */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "kernels/attention/avx2.c needs -mavx2 -mfma -mf16c"
#endif
#include "attention.h"
#include "../simd/avx2.h"

#include "kernel_body.h"

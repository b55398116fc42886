/* Quantized-cache decode, neon path: kvquant_body.h over the neon SIMD mapping layer. */
#if !defined(__ARM_NEON)
#error "kernels/kvquant/neon.c needs an AArch64 target with Advanced SIMD"
#endif
#include "kvquant.h"

#include "../attention/attention.h"
#include "../attention/simd_neon.h"

#include "kvquant_body.h"

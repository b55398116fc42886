/* NEON attention kernels: 4 float lanes, 32 registers, SLEEF exp. */
#if !defined(__ARM_NEON)
#error "kernels/attention/neon.c needs an AArch64 target with Advanced SIMD"
#endif
#include "attention.h"
#include "../simd/neon.h"

#include "kernel_body.h"

/* NEON float32 affine scan: 4 columns per vector (scan_body.h). */
#if !defined(__ARM_NEON)
#error "kernels/scan/neon.c needs an AArch64 target with Advanced SIMD"
#endif
#include "scan.h"

#include "../simd/neon.h"
#define SCAN_NAME lm_scan_affine_f32_neon
#define REDUCE_NAME lm_scan_affine_reduce_f32_neon
#define SCAN_BLOCK scan_block_neon
#define REDUCE_BLOCK reduce_block_neon
#include "scan_body.h"

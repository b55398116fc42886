/* AVX2 + FMA float32 affine scan: 8 columns per vector (scan_body.h). */
#if !defined(__AVX2__) || !defined(__FMA__)
#error "kernels/scan/avx2.c needs -mavx2 -mfma"
#endif
#include "scan.h"

#include "../simd/avx2.h"
#define SCAN_NAME lm_scan_affine_f32_avx2
#define REDUCE_NAME lm_scan_affine_reduce_f32_avx2
#define SCAN_BLOCK scan_block_avx2
#define REDUCE_BLOCK reduce_block_avx2
#include "scan_body.h"

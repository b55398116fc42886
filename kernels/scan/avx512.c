/* AVX-512F float32 affine scan: 16 columns per vector (scan_body.h). */
#if !defined(__AVX512F__)
#error "kernels/scan/avx512.c needs -mavx512f"
#endif
#include "scan.h"

#include "../simd/avx512.h"
#define SCAN_NAME lm_scan_affine_f32_avx512
#define REDUCE_NAME lm_scan_affine_reduce_f32_avx512
#define SCAN_BLOCK scan_block_avx512
#define REDUCE_BLOCK reduce_block_avx512
#include "scan_body.h"

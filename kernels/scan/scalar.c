/* Portable float32 affine scan (scan_body.h with one float per vector). */
#include "scan.h"

#include "../simd/scalar.h"
#define SCAN_NAME lm_scan_affine_f32_scalar
#define REDUCE_NAME lm_scan_affine_reduce_f32_scalar
#define SCAN_BLOCK scan_block_scalar
#define REDUCE_BLOCK reduce_block_scalar
#include "scan_body.h"

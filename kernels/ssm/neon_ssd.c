/* NEON float32 chunked Mamba-2 SSD: 4 floats per vector (ssd_body.h), 4 x 4-vector tiles
 * (16 accumulators of the 32 registers), SLEEF's Advanced SIMD exp/log1p. */
#if !defined(__ARM_NEON)
#error "kernels/ssm/neon_ssd.c needs an AArch64 target with Advanced SIMD"
#endif
#include <stdbool.h>

#include "../simd/neon.h"
#define SSD_CHUNKED_NAME lm_ssd_chunked_f32_neon
#define SSD_CHUNKED_BF16_NAME lm_ssd_chunked_bf16_neon
#include "ssd_body.h"
#define SSD_STEP_NAME lm_ssd_step_f32_neon
#include "ssd_step_body.h"

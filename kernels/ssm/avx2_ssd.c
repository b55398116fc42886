/* AVX2 float32 chunked Mamba-2 SSD: 8 floats per vector (ssd_body.h), 4 x 2-vector tiles
 * (8 accumulators of the 16 registers), SLEEF's AVX2 exp/log1p. */
#if !defined(__AVX2__) || !defined(__FMA__)
#error "kernels/ssm/avx2_ssd.c needs -mavx2 -mfma"
#endif
#include <stdbool.h>

#include "../simd/avx2.h"
#define SSD_CHUNKED_NAME lm_ssd_chunked_f32_avx2
#define SSD_CHUNKED_BF16_NAME lm_ssd_chunked_bf16_avx2
#include "ssd_body.h"
#define SSD_STEP_NAME lm_ssd_step_f32_avx2
#include "ssd_step_body.h"

/* AVX-512F float32 chunked Mamba-2 SSD: 16 floats per vector (ssd_body.h), 4 x 4-vector
 * tiles (16 accumulators of the 32 registers), SLEEF's AVX-512 exp/log1p. */
#if !defined(__AVX512F__)
#error "kernels/ssm/avx512_ssd.c needs -mavx512f"
#endif
#include <stdbool.h>

#include "../simd/avx512.h"
#define SSD_CHUNKED_NAME lm_ssd_chunked_f32_avx512
#define SSD_CHUNKED_BF16_NAME lm_ssd_chunked_bf16_avx512
#include "ssd_body.h"
#define SSD_STEP_NAME lm_ssd_step_f32_avx512
#include "ssd_step_body.h"

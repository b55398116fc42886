/* Portable float32 chunked Mamba-2 SSD: the shared kernel body (ssd_body.h) with one float
 * per "vector" and libm's expf/log1pf. */
#include <stdbool.h>

#include "../simd/scalar.h"
#define SSD_CHUNKED_NAME lm_ssd_chunked_f32_scalar
#define SSD_CHUNKED_BF16_NAME lm_ssd_chunked_bf16_scalar
#include "ssd_body.h"
#define SSD_STEP_NAME lm_ssd_step_f32_scalar
#include "ssd_step_body.h"

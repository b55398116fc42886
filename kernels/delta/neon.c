/* NEON float32 (gated) delta rule: 4 floats per vector (delta_body.h). */
#if !defined(__ARM_NEON)
#error "kernels/delta/neon.c needs an AArch64 target with Advanced SIMD"
#endif
#include "delta.h"

#include "../simd/neon.h"
#define RECURRENT_NAME lm_delta_recurrent_f32_neon
#define CHUNKED_NAME lm_delta_chunked_f32_neon
#define CHUNKED_BF16_NAME lm_delta_chunked_bf16_neon
#include "delta_body.h"

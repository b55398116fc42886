/* AVX2 + FMA float32 (gated) delta rule: 8 floats per vector (delta_body.h). */
#if !defined(__AVX2__) || !defined(__FMA__)
#error "kernels/delta/avx2.c needs -mavx2 -mfma"
#endif
#include "delta.h"

#include "../simd/avx2.h"
#define RECURRENT_NAME lm_delta_recurrent_f32_avx2
#define CHUNKED_NAME lm_delta_chunked_f32_avx2
#define CHUNKED_BF16_NAME lm_delta_chunked_bf16_avx2
#include "delta_body.h"

/* AVX-512F float32 (gated) delta rule: 16 floats per vector (delta_body.h). */
#if !defined(__AVX512F__)
#error "kernels/delta/avx512.c needs -mavx512f"
#endif
#include "delta.h"

#include "../simd/avx512.h"
#define RECURRENT_NAME lm_delta_recurrent_f32_avx512
#define CHUNKED_NAME lm_delta_chunked_f32_avx512
#define CHUNKED_BF16_NAME lm_delta_chunked_bf16_avx512
#include "delta_body.h"

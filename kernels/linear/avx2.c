/* AVX2 + FMA float32 linear attention: 8 floats per vector (linear_body.h). */
#if !defined(__AVX2__) || !defined(__FMA__)
#error "kernels/linear/avx2.c needs -mavx2 -mfma"
#endif
#include "linear.h"

#include "../ssm/simd_avx2.h"
#define RECURRENT_NAME lm_linear_recurrent_f32_avx2
#define CHUNKED_NAME lm_linear_chunked_f32_avx2
#include "linear_body.h"

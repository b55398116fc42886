/* NEON float32 linear attention: 4 floats per vector (linear_body.h). */
#if !defined(__ARM_NEON)
#error "kernels/linear/neon.c needs an AArch64 target with Advanced SIMD"
#endif
#include "linear.h"

#include "../simd/neon.h"
#define RECURRENT_NAME lm_linear_recurrent_f32_neon
#define CHUNKED_NAME lm_linear_chunked_f32_neon
#include "linear_body.h"
#include "widen_bf16.h"

void lm_gemm_acc_f32_neon(size_t m, size_t n, size_t kk, const float *a, size_t lda,
                          const float *b, size_t ldb, float *c, size_t ldc)
{
    gemm_acc(m, n, kk, a, lda, b, ldb, c, ldc);
}

/* The bf16 slot: bfloat16 inputs widened chunk by chunk, then the f32 kernel (widen_bf16.h). */
void lm_linear_chunked_bf16_neon(const lm_linear_f32 *p, size_t h, size_t chunk, float *work)
{
    chunked_bf16_widened(p, h, chunk, work);
}

/* Portable float32 linear attention (linear_body.h, one float per vector). */
#include "linear.h"

#include "../simd/scalar.h"
#define RECURRENT_NAME lm_linear_recurrent_f32_scalar
#define CHUNKED_NAME lm_linear_chunked_f32_scalar
#include "linear_body.h"

void lm_gemm_acc_f32_scalar(size_t m, size_t n, size_t kk, const float *a, size_t lda,
                            const float *b, size_t ldb, float *c, size_t ldc)
{
    gemm_acc(m, n, kk, a, lda, b, ldb, c, ldc);
}

/* The small dense helpers of kernels/linear/gemm_body.h (register-blocked products, transpose,
 * elu + 1) against plain double loops, instantiated with the portable mapping: the blocking
 * logic (row and column tails, narrow tiles, transposed A, beta) on odd shapes. The SIMD
 * instantiations are checked through the linear_attention and ssm_ssd contract cases. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdlib.h>

#include "../kernels/simd/scalar.h"
#include "../kernels/linear/gemm_body.h"

/* deterministic values in [-1, 1) */
static void fill(float *x, size_t n, unsigned seed)
{
    unsigned s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) / 8388608.0f - 1.0f;
    }
}

/* C {m, n} = beta C + op(A) B in double, op(A)(i, p) = trans ? A[p lda + i] : A[i lda + p] */
static void naive(bool trans, double beta, size_t m, size_t n, size_t kk, const float *A,
                  size_t lda, const float *B, size_t ldb, float *C, size_t ldc)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            double acc = beta == 0.0 ? 0.0 : beta * (double)C[i * ldc + j];
            for (size_t p = 0; p < kk; p++)
                acc += (double)(trans ? A[p * lda + i] : A[i * lda + p]) * (double)B[p * ldb + j];
            C[i * ldc + j] = (float)acc;
        }
}

static void assert_close(const float *got, const float *want, size_t m, size_t n, size_t ld,
                         size_t kk, const char *what)
{
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) {
            const double g = (double)got[i * ld + j], w = (double)want[i * ld + j];
            /* kk + 2 products of |values| <= 1, each rounded once in float */
            cr_assert(fabs(g - w) <= 4e-7 * (double)(kk + 2), "%s: C[%zu, %zu] = %.9g, want %.9g",
                      what, i, j, g, w);
        }
}

struct shape {
    size_t m, n, kk;
};

ParameterizedTestParameters(gemm_body, products)
{
    static struct shape shapes[] = {{1, 1, 1},  {4, 16, 8},  {5, 7, 3},   {13, 33, 17},
                                    {32, 64, 128}, {9, 70, 1}, {3, 2, 40}};
    return cr_make_param_array(struct shape, shapes, sizeof shapes / sizeof shapes[0]);
}

ParameterizedTest(struct shape *s, gemm_body, products)
{
    const size_t m = s->m, n = s->n, kk = s->kk, lda = kk + 3, ldb = n + 5, ldc = n + 2;
    const size_t ldt = m + 1; /* A^T stored {kk, m} */
    cr_log_info("m %zu n %zu kk %zu", m, n, kk);
    float *A = malloc(m * lda * sizeof(float)), *At = malloc(kk * ldt * sizeof(float));
    float *B = malloc(kk * ldb * sizeof(float)), *C = malloc(m * ldc * sizeof(float));
    float *W = malloc(m * ldc * sizeof(float));
    cr_assert(A && At && B && C && W);
    fill(A, m * lda, 1), fill(B, kk * ldb, 2), fill(At, kk * ldt, 3);

    fill(C, m * ldc, 4), memcpy(W, C, m * ldc * sizeof(float));
    gemm_acc(m, n, kk, A, lda, B, ldb, C, ldc);
    naive(false, 1.0, m, n, kk, A, lda, B, ldb, W, ldc);
    assert_close(C, W, m, n, ldc, kk, "gemm_acc");

    fill(C, m * ldc, 5), memcpy(W, C, m * ldc * sizeof(float));
    gemm_set(m, n, kk, A, lda, B, ldb, C, ldc);
    naive(false, 0.0, m, n, kk, A, lda, B, ldb, W, ldc);
    assert_close(C, W, m, n, ldc, kk, "gemm_set");

    const float betas[] = {0.0f, 1.0f, 0.375f};
    for (size_t b = 0; b < 3; b++) {
        fill(C, m * ldc, 6), memcpy(W, C, m * ldc * sizeof(float));
        gemm_scale_acc_at(m, n, kk, betas[b], At, ldt, B, ldb, C, ldc);
        naive(true, (double)betas[b], m, n, kk, At, ldt, B, ldb, W, ldc);
        assert_close(C, W, m, n, ldc, kk, "gemm_scale_acc_at");
    }
    free(A), free(At), free(B), free(C), free(W);
}

/* The triangular forms on square m x m outputs: row i of gemm_acc_lower has at least
 * columns 0..i right; gemm_acc_tril reads only A[i, 0..i]. */
Test(gemm_body, triangular)
{
    const size_t sizes[] = {1, 3, 4, 7, 16, 33, 64};
    for (size_t q = 0; q < sizeof sizes / sizeof sizes[0]; q++) {
        const size_t m = sizes[q], kk = 9, n = 21, ld = m + 3;
        float *A = malloc(m * kk * sizeof(float)), *B = malloc(kk * ld * sizeof(float));
        float *C = malloc(m * ld * sizeof(float)), *W = malloc(m * ld * sizeof(float));
        float *T = malloc(m * ld * sizeof(float)), *V = malloc(m * n * sizeof(float));
        float *Y = malloc(m * n * sizeof(float)), *Z = malloc(m * n * sizeof(float));
        cr_assert(A && B && C && W && T && V && Y && Z);
        fill(A, m * kk, 7), fill(B, kk * ld, 8), fill(C, m * ld, 9);
        memcpy(W, C, m * ld * sizeof(float));
        gemm_acc_lower(m, kk, A, kk, B, ld, C, ld);
        naive(false, 1.0, m, m, kk, A, kk, B, ld, W, ld);
        for (size_t i = 0; i < m; i++)
            assert_close(C + i * ld, W + i * ld, 1, i + 1, ld, kk, "gemm_acc_lower");

        fill(T, m * ld, 10), fill(V, m * n, 11), fill(Y, m * n, 12);
        for (size_t i = 0; i < m; i++) /* lower-triangular: zeros above the diagonal */
            for (size_t j = i + 1; j < ld; j++)
                T[i * ld + j] = 0.0f;
        memcpy(Z, Y, m * n * sizeof(float));
        gemm_acc_tril(m, n, T, ld, V, n, Y, n);
        for (size_t i = 0; i < m; i++)
            naive(false, 1.0, 1, n, i + 1, T + i * ld, ld, V, n, Z + i * n, n);
        assert_close(Y, Z, m, n, n, m, "gemm_acc_tril");
        free(A), free(B), free(C), free(W), free(T), free(V), free(Y), free(Z);
    }
}

Test(gemm_body, transpose_and_feature)
{
    const size_t rows = 19, cols = 37, ld_src = cols + 2, ld_dst = rows + 3;
    float *src = malloc(rows * ld_src * sizeof(float));
    float *dst = malloc(cols * ld_dst * sizeof(float));
    cr_assert(src && dst);
    fill(src, rows * ld_src, 13);
    transpose(rows, cols, src, ld_src, dst, ld_dst);
    for (size_t i = 0; i < rows; i++)
        for (size_t c = 0; c < cols; c++)
            cr_assert_eq(dst[c * ld_dst + i], src[i * ld_src + c]);

    const float x[] = {-30.0f, -1.5f, -0.0f, 0.0f, 1e-8f, 0.25f, 3.0f};
    float y[7];
    elu1_row(x, y, 7);
    for (size_t i = 0; i < 7; i++) { /* elu(x) + 1: x + 1 above 0, e^x at or below */
        const double want = x[i] > 0.0f ? (double)x[i] + 1.0 : exp((double)x[i]);
        cr_assert(fabs((double)y[i] - want) <= 2e-7 * want, "phi(%g) = %.9g, want %.9g",
                  (double)x[i], (double)y[i], want);
    }
    free(src), free(dst);
}

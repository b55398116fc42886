/* Small dense helpers shared by the linear-attention and delta-rule kernel bodies,
 * instantiated per ISA through kernels/ssm/simd_<isa>.h: a horizontal sum, a dot product,
 * C += A B with a 2-row x 4-vector register block, and a row scaling. */
#ifndef LONGMIX_GEMM_BODY_H
#define LONGMIX_GEMM_BODY_H

#include <math.h>
#include <string.h>

static inline float hsum(LM_V v)
{
    _Alignas(64) float lanes[LM_W];
    V_STOREU(lanes, v);
    float s = 0.0f;
    for (size_t i = 0; i < LM_W; i++)
        s += lanes[i];
    return s;
}

static inline float dot(const float *x, const float *y, size_t n)
{
    LM_V acc = V_SET1(0.0f);
    size_t i = 0;
    for (; i + LM_W <= n; i += LM_W)
        acc = V_FMA(V_LOADU(x + i), V_LOADU(y + i), acc);
    float s = hsum(acc);
    for (; i < n; i++)
        s += x[i] * y[i];
    return s;
}

/* C {m, n} += A {m, kk} B {kk, n}; row strides lda, ldb, ldc. */
static void gemm_acc(size_t m, size_t n, size_t kk, const float *A, size_t lda,
                     const float *B, size_t ldb, float *C, size_t ldc)
{
    size_t i = 0;
    for (; i + 2 <= m; i += 2) {
        float *c0 = C + i * ldc, *c1 = c0 + ldc;
        const float *a0 = A + i * lda, *a1 = a0 + lda;
        size_t j = 0;
        for (; j + 4 * LM_W <= n; j += 4 * LM_W) { /* 8 accumulators: c[0..1][j..j+4W) */
            LM_V x0 = V_LOADU(c0 + j), x1 = V_LOADU(c0 + j + LM_W);
            LM_V x2 = V_LOADU(c0 + j + 2 * LM_W), x3 = V_LOADU(c0 + j + 3 * LM_W);
            LM_V y0 = V_LOADU(c1 + j), y1 = V_LOADU(c1 + j + LM_W);
            LM_V y2 = V_LOADU(c1 + j + 2 * LM_W), y3 = V_LOADU(c1 + j + 3 * LM_W);
            for (size_t p = 0; p < kk; p++) {
                const float *b = B + p * ldb + j;
                const LM_V b0 = V_LOADU(b), b1 = V_LOADU(b + LM_W);
                const LM_V b2 = V_LOADU(b + 2 * LM_W), b3 = V_LOADU(b + 3 * LM_W);
                const LM_V s0 = V_SET1(a0[p]), s1 = V_SET1(a1[p]);
                x0 = V_FMA(s0, b0, x0), x1 = V_FMA(s0, b1, x1);
                x2 = V_FMA(s0, b2, x2), x3 = V_FMA(s0, b3, x3);
                y0 = V_FMA(s1, b0, y0), y1 = V_FMA(s1, b1, y1);
                y2 = V_FMA(s1, b2, y2), y3 = V_FMA(s1, b3, y3);
            }
            V_STOREU(c0 + j, x0), V_STOREU(c0 + j + LM_W, x1);
            V_STOREU(c0 + j + 2 * LM_W, x2), V_STOREU(c0 + j + 3 * LM_W, x3);
            V_STOREU(c1 + j, y0), V_STOREU(c1 + j + LM_W, y1);
            V_STOREU(c1 + j + 2 * LM_W, y2), V_STOREU(c1 + j + 3 * LM_W, y3);
        }
        for (; j + LM_W <= n; j += LM_W) {
            LM_V x0 = V_LOADU(c0 + j), y0 = V_LOADU(c1 + j);
            for (size_t p = 0; p < kk; p++) {
                const LM_V b0 = V_LOADU(B + p * ldb + j);
                x0 = V_FMA(V_SET1(a0[p]), b0, x0);
                y0 = V_FMA(V_SET1(a1[p]), b0, y0);
            }
            V_STOREU(c0 + j, x0), V_STOREU(c1 + j, y0);
        }
        for (; j < n; j++) {
            float x = c0[j], y = c1[j];
            for (size_t p = 0; p < kk; p++) {
                x += a0[p] * B[p * ldb + j];
                y += a1[p] * B[p * ldb + j];
            }
            c0[j] = x, c1[j] = y;
        }
    }
    for (; i < m; i++) {
        float *c0 = C + i * ldc;
        const float *a0 = A + i * lda;
        size_t j = 0;
        for (; j + LM_W <= n; j += LM_W) {
            LM_V x0 = V_LOADU(c0 + j);
            for (size_t p = 0; p < kk; p++)
                x0 = V_FMA(V_SET1(a0[p]), V_LOADU(B + p * ldb + j), x0);
            V_STOREU(c0 + j, x0);
        }
        for (; j < n; j++) {
            float x = c0[j];
            for (size_t p = 0; p < kk; p++)
                x += a0[p] * B[p * ldb + j];
            c0[j] = x;
        }
    }
}

/* The lower-triangular part of C {m, m} += A {m, kk} B {kk, m}: row pair i, i+1 computes
 * the columns up to i + 1 rounded up to whole 4-vector blocks; entries above the diagonal
 * may be written and must be masked by the caller. */
static void gemm_acc_lower(size_t m, size_t kk, const float *A, size_t lda, const float *B,
                           size_t ldb, float *C, size_t ldc)
{
    for (size_t i = 0; i < m; i += 2) {
        const size_t rows = m - i < 2 ? m - i : 2;
        /* whole 4-vector column blocks (no scalar column tail), at most m */
        size_t cols = (i + rows + 4 * LM_W - 1) / (4 * LM_W) * (4 * LM_W);
        cols = cols < m ? cols : m;
        gemm_acc(rows, cols, kk, A + i * lda, lda, B, ldb, C + i * ldc, ldc);
    }
}

/* C {m, n} += A {m, m} B {m, n} for a lower-triangular A (row i uses A[i, 0..i]). */
static void gemm_acc_tril(size_t m, size_t n, const float *A, size_t lda, const float *B,
                          size_t ldb, float *C, size_t ldc)
{
    for (size_t i = 0; i < m; i += 2) {
        const size_t rows = m - i < 2 ? m - i : 2;
        gemm_acc(rows, n, i + rows, A + i * lda, lda, B, ldb, C + i * ldc, ldc);
    }
}

/* y[0:n] *= s */
static inline void scale_row(float *y, float s, size_t n)
{
    size_t j = 0;
    for (; j + LM_W <= n; j += LM_W)
        V_STOREU(y + j, V_MUL(V_LOADU(y + j), V_SET1(s)));
    for (; j < n; j++)
        y[j] *= s;
}

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

#endif

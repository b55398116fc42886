/* Small dense helpers of the linear-attention kernel bodies (gemm_acc is also exported per
 * ISA as lm_gemm_acc_f32_<isa>), instantiated through kernels/simd/<isa>.h: a
 * horizontal sum, a dot product,
 * small matrix products C (+)= op(A) B built on one register-blocked micro-kernel, a row
 * scaling, a transpose and the elu + 1 feature map on whole vectors.
 *
 * The micro-kernel holds an LM_GEMM_MR x LM_GEMM_NV block of C in registers (LM_GEMM_NV
 * vectors of LM_W floats per row) and, per step p of the inner dimension, loads LM_GEMM_NV
 * vectors of B row p and broadcasts LM_GEMM_MR elements of A column p: MR + NV loads per
 * MR x NV fused multiply-adds. A is read either as stored ({m, kk}, element (i, p) at
 * A[i lda + p]) or transposed ({kk, m}, element (i, p) at A[p lda + i]), so products like
 * K^T V need no transposed copy. B is walked in column panels of NV vectors, each panel
 * (kk x NV W floats, 32 KiB for kk = 128 with AVX-512) reused from L1 by every row block. */
#ifndef LONGMIX_GEMM_BODY_H
#define LONGMIX_GEMM_BODY_H

#include <math.h>
#include <stdbool.h>
#include <string.h>

/* Register block: 4 rows x LM_GEMM_NV vectors. AVX-512 and NEON have 32 vector registers
 * (16 accumulators + 4 B vectors + 1 broadcast); AVX2 has 16 (8 + 2 + 1); the portable
 * path (LM_W = 1) uses 16 scalar accumulators. */
#define LM_GEMM_MR 4
#ifndef LM_GEMM_NV
#if LM_W == 8
#define LM_GEMM_NV 2
#else
#define LM_GEMM_NV 4
#endif
#endif

#if defined(__GNUC__)
#define LM_UNROLL _Pragma("GCC unroll 8")
#define LM_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define LM_UNROLL
#define LM_ALWAYS_INLINE inline
#endif

static inline float hsum(LM_V v) { return V_HSUM(v); }

static inline float dot(const float *x, const float *y, size_t n)
{
    LM_V acc0 = V_SET1(0.0f), acc1 = V_SET1(0.0f);
    size_t i = 0;
    for (; i + 2 * LM_W <= n; i += 2 * LM_W) { /* two chains: half the FMA latency */
        acc0 = V_FMA(V_LOADU(x + i), V_LOADU(y + i), acc0);
        acc1 = V_FMA(V_LOADU(x + i + LM_W), V_LOADU(y + i + LM_W), acc1);
    }
    for (; i + LM_W <= n; i += LM_W)
        acc0 = V_FMA(V_LOADU(x + i), V_LOADU(y + i), acc0);
    float s = hsum(V_ADD(acc0, acc1));
    for (; i < n; i++)
        s += x[i] * y[i];
    return s;
}

/* The micro-kernel: C[0..mr, 0..nv W) = beta C + op(A)[0..mr, 0..kk) B[0..kk, 0..nv W),
 * op(A)(i, p) = trans_a ? A[p lda + i] : A[i lda + p]; beta = 0 does not read C. mr <= LM_GEMM_MR,
 * nv <= LM_GEMM_NV and trans_a are compile-time constants at every call (the loops over
 * them unroll and the accumulators stay in registers). */
static LM_ALWAYS_INLINE void gemm_tile(size_t mr, size_t nv, bool trans_a, float beta,
                                       size_t kk, const float *A, size_t lda,
                                       const float *B, size_t ldb, float *C, size_t ldc)
{
    LM_V acc[LM_GEMM_MR][LM_GEMM_NV];
    LM_UNROLL for (size_t r = 0; r < mr; r++)
        LM_UNROLL for (size_t v = 0; v < nv; v++)
            acc[r][v] = beta == 0.0f ? V_SET1(0.0f)
                        : beta == 1.0f ? V_LOADU(C + r * ldc + v * LM_W)
                                       : V_MUL(V_SET1(beta), V_LOADU(C + r * ldc + v * LM_W));
    const size_t a_row = trans_a ? 1 : lda, a_step = trans_a ? lda : 1;
    for (size_t p = 0; p < kk; p++) {
        const float *b = B + p * ldb; /* {nv W}: row p of the panel */
        const float *a = A + p * a_step;
        LM_V bv[LM_GEMM_NV];
        LM_UNROLL for (size_t v = 0; v < nv; v++)
            bv[v] = V_LOADU(b + v * LM_W);
        LM_UNROLL for (size_t r = 0; r < mr; r++) {
            const LM_V ar = V_SET1(a[r * a_row]); /* A(r, p) in every lane */
            LM_UNROLL for (size_t v = 0; v < nv; v++)
                acc[r][v] = V_FMA(ar, bv[v], acc[r][v]); /* c[r][v] += A(r, p) b[v] */
        }
    }
    LM_UNROLL for (size_t r = 0; r < mr; r++)
        LM_UNROLL for (size_t v = 0; v < nv; v++)
            V_STOREU(C + r * ldc + v * LM_W, acc[r][v]);
}

/* The instances: full-height (LM_GEMM_MR rows) and single-row tiles, 1..LM_GEMM_NV vectors
 * wide, A as stored (n) or transposed (t). */
#define LM_GEMM_TILE_FN(MR, NV, TA, SUFFIX)                                                   \
    static void gemm_tile_##MR##x##NV##SUFFIX(float beta, size_t kk, const float *A,          \
                                              size_t lda, const float *B, size_t ldb,         \
                                              float *C, size_t ldc)                           \
    {                                                                                         \
        gemm_tile(MR, NV, TA, beta, kk, A, lda, B, ldb, C, ldc);                              \
    }
#define LM_GEMM_TILE_FNS(NV)                                                                  \
    LM_GEMM_TILE_FN(4, NV, false, n)                                                          \
    LM_GEMM_TILE_FN(1, NV, false, n)                                                          \
    LM_GEMM_TILE_FN(4, NV, true, t)                                                           \
    LM_GEMM_TILE_FN(1, NV, true, t)
LM_GEMM_TILE_FNS(1)
#if LM_GEMM_NV >= 2
LM_GEMM_TILE_FNS(2)
#endif
#if LM_GEMM_NV >= 3
LM_GEMM_TILE_FNS(3)
#endif
#if LM_GEMM_NV >= 4
LM_GEMM_TILE_FNS(4)
#endif
#if LM_GEMM_NV > 4
#error "LM_GEMM_NV above 4 needs more tile instances"
#endif

typedef void (*gemm_tile_fn)(float beta, size_t kk, const float *A, size_t lda,
                             const float *B, size_t ldb, float *C, size_t ldc);

/* The tile of `rows` (LM_GEMM_MR or 1) x `nv` vectors (1..LM_GEMM_NV). */
static inline gemm_tile_fn gemm_tile_pick(bool trans_a, size_t rows, size_t nv)
{
    static const gemm_tile_fn tiles[2][2][LM_GEMM_NV] = {
        {{gemm_tile_1x1n,
#if LM_GEMM_NV >= 2
          gemm_tile_1x2n,
#endif
#if LM_GEMM_NV >= 3
          gemm_tile_1x3n,
#endif
#if LM_GEMM_NV >= 4
          gemm_tile_1x4n,
#endif
         },
         {gemm_tile_4x1n,
#if LM_GEMM_NV >= 2
          gemm_tile_4x2n,
#endif
#if LM_GEMM_NV >= 3
          gemm_tile_4x3n,
#endif
#if LM_GEMM_NV >= 4
          gemm_tile_4x4n,
#endif
         }},
        {{gemm_tile_1x1t,
#if LM_GEMM_NV >= 2
          gemm_tile_1x2t,
#endif
#if LM_GEMM_NV >= 3
          gemm_tile_1x3t,
#endif
#if LM_GEMM_NV >= 4
          gemm_tile_1x4t,
#endif
         },
         {gemm_tile_4x1t,
#if LM_GEMM_NV >= 2
          gemm_tile_4x2t,
#endif
#if LM_GEMM_NV >= 3
          gemm_tile_4x3t,
#endif
#if LM_GEMM_NV >= 4
          gemm_tile_4x4t,
#endif
         }},
    };
    return tiles[trans_a][rows == LM_GEMM_MR][nv - 1];
}

/* Columns [j0, j1) of `rows` rows of C (+)= op(A) B, j1 - j0 < LM_W: the scalar tail. */
static inline void gemm_tail_cols(bool trans_a, float beta, size_t rows, size_t j0, size_t j1,
                           size_t kk, const float *A, size_t lda, const float *B, size_t ldb,
                           float *C, size_t ldc)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t j = j0; j < j1; j++) {
            float x = beta == 0.0f ? 0.0f : beta * C[r * ldc + j];
            for (size_t p = 0; p < kk; p++)
                x += (trans_a ? A[p * lda + r] : A[r * lda + p]) * B[p * ldb + j];
            C[r * ldc + j] = x;
        }
}

/* The row block at A, C (rows <= LM_GEMM_MR rows; rows below LM_GEMM_MR run as single
 * rows), columns [0, n): panels of LM_GEMM_NV vectors, a narrower last panel, scalar tail
 * columns. */
static inline void gemm_rows(bool trans_a, float beta, size_t rows, size_t n, size_t kk,
                      const float *A, size_t lda, const float *B, size_t ldb, float *C,
                      size_t ldc)
{
    const size_t a_row = trans_a ? 1 : lda;
    const size_t nvec = n / LM_W;
    for (size_t r = 0; r < rows;) {
        const size_t mr = rows - r >= LM_GEMM_MR ? LM_GEMM_MR : 1;
        for (size_t v = 0; v < nvec; v += LM_GEMM_NV) {
            const size_t nv = nvec - v < LM_GEMM_NV ? nvec - v : LM_GEMM_NV;
            gemm_tile_pick(trans_a, mr, nv)(beta, kk, A + r * a_row, lda, B + v * LM_W, ldb,
                                            C + r * ldc + v * LM_W, ldc);
        }
        if (nvec * LM_W < n)
            gemm_tail_cols(trans_a, beta, mr, nvec * LM_W, n, kk, A + r * a_row, lda, B, ldb,
                           C + r * ldc, ldc);
        r += mr;
    }
}

/* C {m, n} (+)= op(A) B over whole matrices: column panels outer (a panel of B stays in L1
 * while every row block passes over it), row blocks inner. */
static inline void gemm_full(bool trans_a, float beta, size_t m, size_t n, size_t kk,
                      const float *A, size_t lda, const float *B, size_t ldb, float *C,
                      size_t ldc)
{
    if (kk == 0) {
        for (size_t i = 0; i < m; i++)
            if (beta == 0.0f)
                memset(C + i * ldc, 0, n * sizeof(float));
            else if (beta != 1.0f)
                for (size_t j = 0; j < n; j++)
                    C[i * ldc + j] *= beta;
        return;
    }
    const size_t a_row = trans_a ? 1 : lda;
    const size_t panel = LM_GEMM_NV * LM_W;
    for (size_t j = 0; j < n; j += panel) {
        const size_t w = n - j < panel ? n - j : panel;
        for (size_t i = 0; i < m; i += LM_GEMM_MR) {
            const size_t rows = m - i < LM_GEMM_MR ? m - i : LM_GEMM_MR;
            gemm_rows(trans_a, beta, rows, w, kk, A + i * a_row, lda, B + j, ldb,
                      C + i * ldc + j, ldc);
        }
    }
}

/* C {m, n} += A {m, kk} B {kk, n}; row strides lda, ldb, ldc. */
static inline void gemm_acc(size_t m, size_t n, size_t kk, const float *A, size_t lda,
                            const float *B, size_t ldb, float *C, size_t ldc)
{
    gemm_full(false, 1.0f, m, n, kk, A, lda, B, ldb, C, ldc);
}

/* C {m, n} = A {m, kk} B {kk, n} (C is only written: no clearing needed). */
static inline void gemm_set(size_t m, size_t n, size_t kk, const float *A, size_t lda,
                            const float *B, size_t ldb, float *C, size_t ldc)
{
    gemm_full(false, 0.0f, m, n, kk, A, lda, B, ldb, C, ldc);
}

/* C {m, n} = beta C + A^T B for A stored {kk, m} (row stride lda): K^T V without a
 * transpose, a decay of the old C folded into the same pass. */
static inline void gemm_scale_acc_at(size_t m, size_t n, size_t kk, float beta, const float *A,
                                     size_t lda, const float *B, size_t ldb, float *C,
                                     size_t ldc)
{
    gemm_full(true, beta, m, n, kk, A, lda, B, ldb, C, ldc);
}

/* The lower-triangular part of C {m, m} (+)= A {m, kk} B {kk, m}, row block by row block:
 * rows [i, i + r) compute columns [0, i + r) rounded up to whole vectors (at most m). */
static inline void gemm_lower(float beta, size_t m, size_t kk, const float *A, size_t lda,
                       const float *B, size_t ldb, float *C, size_t ldc)
{
    for (size_t i = 0; i < m; i += LM_GEMM_MR) {
        const size_t rows = m - i < LM_GEMM_MR ? m - i : LM_GEMM_MR;
        size_t cols = (i + rows + LM_W - 1) / LM_W * LM_W;
        cols = cols < m ? cols : m;
        gemm_rows(false, beta, rows, cols, kk, A + i * lda, lda, B, ldb, C + i * ldc, ldc);
    }
}

/* The lower-triangular part of C {m, m} += A {m, kk} B {kk, m}: row i gets at least the
 * columns 0..i; entries above the diagonal may be written and must be masked by the
 * caller. */
static inline void gemm_acc_lower(size_t m, size_t kk, const float *A, size_t lda,
                                  const float *B, size_t ldb, float *C, size_t ldc)
{
    gemm_lower(1.0f, m, kk, A, lda, B, ldb, C, ldc);
}

/* As gemm_acc_lower with C = A B: row i gets at least columns 0..i (the rest of its
 * vectors may be written too); the other entries are not touched. */
static inline void gemm_set_lower(size_t m, size_t kk, const float *A, size_t lda,
                                  const float *B, size_t ldb, float *C, size_t ldc)
{
    gemm_lower(0.0f, m, kk, A, lda, B, ldb, C, ldc);
}

/* C {m, n} += A {m, m} B {m, n} for a lower-triangular A (row i uses A[i, 0..i]): the row
 * block [i, i + r) runs over the inner extent i + r. */
static inline void gemm_acc_tril(size_t m, size_t n, const float *A, size_t lda, const float *B,
                          size_t ldb, float *C, size_t ldc)
{
    for (size_t i = 0; i < m; i += LM_GEMM_MR) {
        const size_t rows = m - i < LM_GEMM_MR ? m - i : LM_GEMM_MR;
        gemm_rows(false, 1.0f, rows, n, i + rows, A + i * lda, lda, B, ldb, C + i * ldc, ldc);
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

#if LM_W == 16
/* dst rows 0..15 (stride ld_dst) = the 16 x 16 block at src (stride ld_src), transposed in
 * registers: pairs of rows interleaved (unpack ps, then pd), then 128-bit lanes regrouped
 * twice (shuffle_f32x4), 64 shuffles per 256 floats. */
static inline void transpose_block(const float *src, size_t ld_src, float *dst, size_t ld_dst)
{
    __m512 r[16], u[16];
    for (int i = 0; i < 16; i++)
        r[i] = _mm512_loadu_ps(src + (size_t)i * ld_src);
    for (int g = 0; g < 4; g++) { /* rows 4g..4g+3 -> u[4g+j] lane L = column 4L + j */
        const __m512 t0 = _mm512_unpacklo_ps(r[4 * g], r[4 * g + 1]); /* a0 b0 a1 b1 */
        const __m512 t1 = _mm512_unpackhi_ps(r[4 * g], r[4 * g + 1]); /* a2 b2 a3 b3 */
        const __m512 t2 = _mm512_unpacklo_ps(r[4 * g + 2], r[4 * g + 3]);
        const __m512 t3 = _mm512_unpackhi_ps(r[4 * g + 2], r[4 * g + 3]);
        u[4 * g] = _mm512_castpd_ps(
            _mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2))); /* a0 b0 c0 d0 */
        u[4 * g + 1] = _mm512_castpd_ps(
            _mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2))); /* a1 b1 c1 d1 */
        u[4 * g + 2] = _mm512_castpd_ps(
            _mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
        u[4 * g + 3] = _mm512_castpd_ps(
            _mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
    }
    for (int j = 0; j < 4; j++) { /* output row 4L + j = lane L of u[j], u[4+j], u[8+j], u[12+j] */
        const __m512 v0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x44); /* u0.L0 u0.L1 u1.L0 u1.L1 */
        const __m512 v1 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xEE); /* u0.L2 u0.L3 u1.L2 u1.L3 */
        const __m512 v2 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x44);
        const __m512 v3 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xEE);
        _mm512_storeu_ps(dst + (size_t)j * ld_dst, _mm512_shuffle_f32x4(v0, v2, 0x88));
        _mm512_storeu_ps(dst + (size_t)(4 + j) * ld_dst, _mm512_shuffle_f32x4(v0, v2, 0xDD));
        _mm512_storeu_ps(dst + (size_t)(8 + j) * ld_dst, _mm512_shuffle_f32x4(v1, v3, 0x88));
        _mm512_storeu_ps(dst + (size_t)(12 + j) * ld_dst, _mm512_shuffle_f32x4(v1, v3, 0xDD));
    }
}
#define LM_TRANSPOSE_BLOCK 16
#elif LM_W == 8
/* The 8 x 8 block, transposed in registers (unpack, shuffle, then 128-bit halves). */
static inline void transpose_block(const float *src, size_t ld_src, float *dst, size_t ld_dst)
{
    __m256 r[8], u[8];
    for (int i = 0; i < 8; i++)
        r[i] = _mm256_loadu_ps(src + (size_t)i * ld_src);
    for (int g = 0; g < 2; g++) { /* rows 4g..4g+3 -> u[4g+j] half H = column 4H + j */
        const __m256 t0 = _mm256_unpacklo_ps(r[4 * g], r[4 * g + 1]); /* a0 b0 a1 b1 */
        const __m256 t1 = _mm256_unpackhi_ps(r[4 * g], r[4 * g + 1]); /* a2 b2 a3 b3 */
        const __m256 t2 = _mm256_unpacklo_ps(r[4 * g + 2], r[4 * g + 3]);
        const __m256 t3 = _mm256_unpackhi_ps(r[4 * g + 2], r[4 * g + 3]);
        u[4 * g] = _mm256_shuffle_ps(t0, t2, 0x44);     /* a0 b0 c0 d0 */
        u[4 * g + 1] = _mm256_shuffle_ps(t0, t2, 0xEE); /* a1 b1 c1 d1 */
        u[4 * g + 2] = _mm256_shuffle_ps(t1, t3, 0x44);
        u[4 * g + 3] = _mm256_shuffle_ps(t1, t3, 0xEE);
    }
    for (int j = 0; j < 4; j++) {
        _mm256_storeu_ps(dst + (size_t)j * ld_dst, _mm256_permute2f128_ps(u[j], u[4 + j], 0x20));
        _mm256_storeu_ps(dst + (size_t)(4 + j) * ld_dst,
                         _mm256_permute2f128_ps(u[j], u[4 + j], 0x31));
    }
}
#define LM_TRANSPOSE_BLOCK 8
#endif

/* dst {cols, ld_dst} = src {rows, cols}^T (row stride ld_src): whole blocks transposed in
 * registers where the ISA has them, the edges (and other ISAs) in 4-row strips. */
static inline void transpose(size_t rows, size_t cols, const float *src, size_t ld_src,
                             float *dst, size_t ld_dst)
{
    size_t i = 0;
#ifdef LM_TRANSPOSE_BLOCK
    for (; i + LM_TRANSPOSE_BLOCK <= rows; i += LM_TRANSPOSE_BLOCK) {
        size_t c = 0;
        for (; c + LM_TRANSPOSE_BLOCK <= cols; c += LM_TRANSPOSE_BLOCK)
            transpose_block(src + i * ld_src + c, ld_src, dst + c * ld_dst + i, ld_dst);
        for (; c < cols; c++)
            for (size_t r = 0; r < LM_TRANSPOSE_BLOCK; r++)
                dst[c * ld_dst + i + r] = src[(i + r) * ld_src + c];
    }
#endif
    for (; i + 4 <= rows; i += 4) {
        const float *s0 = src + i * ld_src, *s1 = s0 + ld_src, *s2 = s1 + ld_src;
        const float *s3 = s2 + ld_src;
        for (size_t c = 0; c < cols; c++) {
            float *d = dst + c * ld_dst + i;
            d[0] = s0[c], d[1] = s1[c], d[2] = s2[c], d[3] = s3[c];
        }
    }
    for (; i < rows; i++)
        for (size_t c = 0; c < cols; c++)
            dst[c * ld_dst + i] = src[i * ld_src + c];
}

/* y[0:n] = elu(x) + 1 = exp(min(x, 0)) + max(x, 0): x + 1 for x > 0, e^x otherwise. */
static inline void elu1_row(const float *x, float *y, size_t n)
{
    size_t j = 0;
    const LM_V zero = V_SET1(0.0f);
    for (; j + LM_W <= n; j += LM_W) {
        const LM_V xj = V_LOADU(x + j);
        V_STOREU(y + j, V_ADD(V_EXP(V_MIN(xj, zero)), V_MAX(xj, zero)));
    }
    for (; j < n; j++)
        y[j] = x[j] > 0.0f ? x[j] + 1.0f : expf(x[j]);
}

static inline size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

#endif

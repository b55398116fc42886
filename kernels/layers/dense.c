/* The dense projection: weights, the driver that splits rows over OpenMP, its float64
 * oracle, and the per-token helpers (RMSNorm, SwiGLU). */
#include "layers.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "../attention/attention.h"

static const char *const weight_names[] = {"f32", "bf16", "int8"};

lm_status lm_weight_dtype_parse(const char *name, lm_weight_dtype *dtype, lm_error *err)
{
    for (int i = 0; i < 3; i++)
        if (name != NULL && strcmp(name, weight_names[i]) == 0) {
            *dtype = (lm_weight_dtype)i;
            return LM_OK;
        }
    return lm_fail(err, LM_ERR_ARG, "weights dtype must be f32, bf16 or int8, got '%s'",
                   name != NULL ? name : "(null)");
}

const char *lm_weight_dtype_name(lm_weight_dtype dtype)
{
    return (unsigned)dtype < 3 ? weight_names[dtype] : "unknown";
}

size_t lm_weight_dtype_size(lm_weight_dtype dtype)
{
    return dtype == LM_WEIGHT_F32 ? 4 : dtype == LM_WEIGHT_BF16 ? 2 : 1;
}

size_t lm_dense_bytes(const lm_dense *d)
{
    return d->rows * d->cols * lm_weight_dtype_size(d->dtype) +
           (d->dtype == LM_WEIGHT_INT8 ? d->rows * sizeof(float) : 0);
}

/* Fills one row from 16-bit draws of the generator: u in [-1, 1) times the bound. */
static void fill_row(lm_dense *d, size_t r, lm_rng *rng, float bound, float *tmp)
{
    uint64_t bits = 0;
    for (size_t c = 0; c < d->cols; c++) {
        if (c % 4 == 0)
            bits = lm_rng_next_u64(rng);
        float u = (float)(bits & 0xFFFFu) * (2.0f / 65536.0f) - 1.0f;
        bits >>= 16;
        tmp[c] = u * bound;
    }
    size_t at = r * d->cols;
    if (d->dtype == LM_WEIGHT_F32) {
        memcpy((float *)d->w + at, tmp, d->cols * sizeof(float));
    } else if (d->dtype == LM_WEIGHT_BF16) {
        for (size_t c = 0; c < d->cols; c++)
            ((uint16_t *)d->w)[at + c] = lm_bf16_from_f32(tmp[c]);
    } else {
        float top = 0.0f;
        for (size_t c = 0; c < d->cols; c++)
            top = fmaxf(top, fabsf(tmp[c]));
        float s = top > 0.0f ? top / 127.0f : 1.0f;
        d->scale[r] = s;
        for (size_t c = 0; c < d->cols; c++)
            ((int8_t *)d->w)[at + c] = (int8_t)lrintf(tmp[c] / s);
    }
}

lm_status lm_dense_init(lm_dense *d, size_t rows, size_t cols, lm_weight_dtype dtype,
                        uint64_t seed, lm_error *err)
{
    memset(d, 0, sizeof *d);
    if (rows == 0 || cols == 0)
        return lm_fail(err, LM_ERR_SHAPE, "a projection must be non-empty, got {%zu, %zu}",
                       rows, cols);
    d->rows = rows;
    d->cols = cols;
    d->dtype = dtype;
    d->w = lm_alloc(rows * cols * lm_weight_dtype_size(dtype));
    d->scale = dtype == LM_WEIGHT_INT8 ? lm_alloc(rows * sizeof(float)) : NULL;
    float *tmp = lm_alloc(cols * sizeof(float));
    if (d->w == NULL || tmp == NULL || (dtype == LM_WEIGHT_INT8 && d->scale == NULL)) {
        lm_free(tmp);
        lm_dense_free(d);
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for a {%zu, %zu} projection", rows,
                       cols);
    }
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    float bound = sqrtf(3.0f / (float)cols);
    for (size_t r = 0; r < rows; r++)
        fill_row(d, r, &rng, bound, tmp);
    lm_free(tmp);
    return LM_OK;
}

void lm_dense_free(lm_dense *d)
{
    lm_free(d->w);
    lm_free(d->scale);
    d->w = NULL;
    d->scale = NULL;
}

double lm_dense_weight(const lm_dense *d, size_t r, size_t c)
{
    size_t at = r * d->cols + c;
    if (d->dtype == LM_WEIGHT_F32)
        return (double)((const float *)d->w)[at];
    if (d->dtype == LM_WEIGHT_BF16)
        return (double)lm_f32_from_bf16(((const uint16_t *)d->w)[at]);
    return (double)d->scale[r] * (double)((const int8_t *)d->w)[at];
}

lm_status lm_dense_f64_ref(const double *w, const double *x, size_t batch, size_t rows,
                           size_t cols, double *y, lm_error *err)
{
    if (batch == 0 || rows == 0 || cols == 0)
        return lm_fail(err, LM_ERR_SHAPE, "sizes must be positive, got batch %zu, W {%zu, %zu}",
                       batch, rows, cols);
    for (size_t i = 0; i < rows * cols; i++)
        if (!isfinite(w[i]))
            return lm_fail(err, LM_ERR_NONFINITE, "w must contain only finite values");
    for (size_t i = 0; i < batch * cols; i++)
        if (!isfinite(x[i]))
            return lm_fail(err, LM_ERR_NONFINITE, "x must contain only finite values");
    for (size_t b = 0; b < batch; b++)
        for (size_t r = 0; r < rows; r++) {
            double s = 0.0; /* y[b, r] = sum_c W[r, c] x[b, c] */
            for (size_t c = 0; c < cols; c++)
                s += w[r * cols + c] * x[b * cols + c];
            y[b * rows + r] = s;
        }
    return LM_OK;
}

lm_dense_rows_fn *lm_dense_kernel(lm_weight_dtype dtype, const lm_ops *ops)
{
    lm_isa isa = ops != NULL ? ops->isa : LM_ISA_SCALAR;
#if defined(__x86_64__) || defined(__i386__)
    if (isa == LM_ISA_AVX512BF16 && dtype == LM_WEIGHT_BF16)
        return lm_dense_rows_bf16_avx512bf16;
    if (isa == LM_ISA_AVX512 || isa == LM_ISA_AVX512VNNI || isa == LM_ISA_AVX512BF16)
        return dtype == LM_WEIGHT_F32    ? lm_dense_rows_f32_avx512
               : dtype == LM_WEIGHT_BF16 ? lm_dense_rows_bf16_avx512
                                         : lm_dense_rows_int8_avx512;
    if (isa == LM_ISA_AVX2)
        return dtype == LM_WEIGHT_F32    ? lm_dense_rows_f32_avx2
               : dtype == LM_WEIGHT_BF16 ? lm_dense_rows_bf16_avx2
                                         : lm_dense_rows_int8_avx2;
#else
    (void)isa;
#endif
    return dtype == LM_WEIGHT_F32    ? lm_dense_rows_f32_scalar
           : dtype == LM_WEIGHT_BF16 ? lm_dense_rows_bf16_scalar
                                     : lm_dense_rows_int8_scalar;
}

double lm_dense_x_roundoff(lm_weight_dtype dtype, const lm_ops *ops, size_t batch)
{
#if defined(__x86_64__) || defined(__i386__)
    if (batch >= 2 && lm_dense_kernel(dtype, ops) == lm_dense_rows_bf16_avx512bf16)
        return 0x1p-9;
#else
    (void)dtype, (void)ops, (void)batch;
#endif
    return 0.0;
}

#define DENSE_ROW_BLOCK 16

/* Rows [r0, r1) of y for every block of LM_DENSE_BATCH_BLOCK sequences. */
static void dense_rows(const lm_dense *d, lm_dense_rows_fn *kernel, const float *x,
                       size_t batch, size_t r0, size_t r1, float *y)
{
    for (size_t b0 = 0; b0 < batch; b0 += LM_DENSE_BATCH_BLOCK) {
        size_t nb = batch - b0 < LM_DENSE_BATCH_BLOCK ? batch - b0 : LM_DENSE_BATCH_BLOCK;
        kernel(d->w, d->scale, x + b0 * d->cols, nb, d->cols, r0, r1, y + b0 * d->rows,
               d->rows);
    }
}

lm_status lm_dense_apply(const lm_dense *d, const float *x, size_t batch, float *y,
                         const lm_ops *ops, lm_error *err)
{
    if (d == NULL || d->w == NULL || x == NULL || y == NULL)
        return lm_fail(err, LM_ERR_ARG, "dense: weights, x and y must be set");
    if (batch == 0)
        return lm_fail(err, LM_ERR_SHAPE, "dense: batch must be positive");
    lm_dense_rows_fn *kernel = lm_dense_kernel(d->dtype, ops);
    const size_t rows = d->rows, blocks = (rows + DENSE_ROW_BLOCK - 1) / DENSE_ROW_BLOCK;
    if (batch <= LM_DENSE_BATCH_BLOCK) {
        /* one block of sequences: each thread's rows in one call, so a kernel that lays x
         * out (bf16: split or rounded) does it once per thread, not once per 16 rows */
#pragma omp parallel
        {
            const size_t t = (size_t)omp_get_thread_num(), nt = (size_t)omp_get_num_threads();
            const size_t r0 = blocks * t / nt * DENSE_ROW_BLOCK;
            const size_t end = blocks * (t + 1) / nt * DENSE_ROW_BLOCK;
            if (r0 < rows)
                dense_rows(d, kernel, x, batch, r0, end < rows ? end : rows, y);
        }
        return LM_OK;
    }
    /* blocks of 16 rows, each re-read from L1 / L2 for every block of sequences */
#pragma omp parallel for schedule(static)
    for (size_t blk = 0; blk < blocks; blk++) {
        const size_t r0 = blk * DENSE_ROW_BLOCK, end = r0 + DENSE_ROW_BLOCK;
        dense_rows(d, kernel, x, batch, r0, end < rows ? end : rows, y);
    }
    return LM_OK;
}

void lm_rmsnorm_f32(const float *x, const float *gain, size_t batch, size_t d, float eps,
                    float *y)
{
    for (size_t b = 0; b < batch; b++) {
        const float *xb = x + b * d;
        float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (size_t i = 0; i < d; i++)
            ss += xb[i] * xb[i];
        float inv = 1.0f / sqrtf(ss / (float)d + eps);
        float *yb = y + b * d;
        for (size_t i = 0; i < d; i++)
            yb[i] = xb[i] * inv * (gain != NULL ? gain[i] : 1.0f);
    }
}

void lm_silu_f32(float *x, size_t count)
{
    for (size_t i = 0; i < count; i++)
        x[i] = x[i] / (1.0f + expf(-x[i]));
}

void lm_swiglu_f32(float *g, const float *u, size_t count)
{
    for (size_t i = 0; i < count; i++)
        g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* lm_gemm over oneDNN's C API (dnnl.h): one matmul primitive per shape, the weights
 * reordered once into the layout it asks for, a user-managed scratchpad. */
#include "gemm.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The elementwise passes of the int8 path (quantizing A, scaling C's rows) split their rows
 * over omp_get_max_threads() threads, as oneDNN does, from this many elements. */
#define LM_GEMM_PASS_PARALLEL (1u << 16)

#ifdef LM_NO_DNNL

struct lm_gemm {
    int unused;
};

bool lm_gemm_available(void) { return false; }

lm_status lm_gemm_create(lm_gemm **out, size_t m, size_t n, size_t k, lm_weight_dtype dtype,
                         const void *w, const float *scale, unsigned flags, lm_error *err)
{
    (void)m, (void)n, (void)k, (void)dtype, (void)w, (void)scale, (void)flags;
    if (out)
        *out = NULL;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "this build has no GEMM library (oneDNN)");
}
void lm_gemm_free(lm_gemm *g) { free(g); }
lm_status lm_gemm_run(lm_gemm *g, const float *a, float *c, lm_error *err)
{
    (void)g, (void)a, (void)c;
    return lm_fail(err, LM_ERR_UNSUPPORTED, "this build has no GEMM library (oneDNN)");
}
const char *lm_gemm_impl(const lm_gemm *g) { return (void)g, "none"; }
size_t lm_gemm_weight_bytes(const lm_gemm *g) { return (void)g, 0; }
size_t lm_gemm_work_bytes(const lm_gemm *g) { return (void)g, 0; }

#else

#include <oneapi/dnnl/dnnl.h>

bool lm_gemm_available(void) { return true; }

struct lm_gemm {
    size_t m, n, k;
    lm_weight_dtype dtype;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_t matmul;
    dnnl_primitive_t to_bf16; /* A f32 -> bf16 (bf16 weights only) */
    dnnl_memory_t a_user;     /* {m, k} f32, the caller's pointer set per run */
    dnnl_memory_t a_bf16;     /* {m, k} bf16, owned (bf16 weights only) */
    dnnl_memory_t a_s8;       /* {m, k} s8 codes of A, owned (int8 weights only) */
    float *a_scale;           /* {m} A's row scales, owned (int8 weights only) */
    dnnl_memory_t w;          /* the weights in the primitive's layout, over w_data */
    void *w_data;             /* owned, from lm_alloc: huge pages, so packing a unit's
                               * gigabytes faults 2 MiB at a time, not 4 KiB */
    dnnl_memory_t c_user;     /* {m, n} f32, the caller's pointer set per run */
    dnnl_memory_t scratch;    /* oneDNN's scratchpad, owned (NULL when it needs none) */
    size_t weight_bytes, work_bytes;
    char impl[64];
};

static lm_status dnnl_fail(lm_error *err, dnnl_status_t s, const char *what)
{
    lm_status st = s == dnnl_out_of_memory ? LM_ERR_NOMEM : LM_ERR_UNSUPPORTED;
    const char *name = s == dnnl_out_of_memory        ? "out_of_memory"
                       : s == dnnl_invalid_arguments ? "invalid_arguments"
                       : s == dnnl_unimplemented     ? "unimplemented"
                                                     : "runtime_error";
    return lm_fail(err, st, "oneDNN: %s failed (%s)", what, name);
}

#define DNNL_TRY(call, what)                                                                   \
    do {                                                                                       \
        dnnl_status_t s_ = (call);                                                             \
        if (s_ != dnnl_success) {                                                              \
            st = dnnl_fail(err, s_, what);                                                     \
            goto fail;                                                                         \
        }                                                                                      \
    } while (0)

void lm_gemm_free(lm_gemm *g)
{
    if (!g)
        return;
    dnnl_memory_t mems[] = {g->a_user, g->a_bf16, g->a_s8, g->w, g->c_user, g->scratch};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i])
            dnnl_memory_destroy(mems[i]);
    if (g->matmul)
        dnnl_primitive_destroy(g->matmul);
    if (g->to_bf16)
        dnnl_primitive_destroy(g->to_bf16);
    if (g->stream)
        dnnl_stream_destroy(g->stream);
    if (g->engine)
        dnnl_engine_destroy(g->engine);
    lm_free(g->w_data);
    free(g->a_scale);
    free(g);
}

/* W {n, k} row-major is the matmul's weights {k, n} with strides {1, k}: tag "ba". */
static lm_status copy_weights(lm_gemm *g, const dnnl_memory_desc_t *want, dnnl_data_type_t wt,
                              const void *w, lm_error *err)
{
    lm_status st = LM_OK;
    dnnl_memory_desc_t plain;
    dnnl_memory_t src = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    dnnl_primitive_t reorder = NULL;
    const dnnl_dims_t dims = {(dnnl_dim_t)g->k, (dnnl_dim_t)g->n};
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&plain, 2, dims, wt, dnnl_ba), "weights descriptor");
    /* oneDNN's API takes a non-const handle; the reorder only reads it. */
    DNNL_TRY(dnnl_memory_create(&src, &plain, g->engine, (void *)(uintptr_t)w), "weights memory");
    g->weight_bytes = dnnl_memory_desc_get_size(want);
    g->w_data = lm_alloc(g->weight_bytes);
    if (g->w_data == NULL) {
        st = lm_fail(err, LM_ERR_NOMEM, "out of memory for %zu bytes of packed weights",
                     g->weight_bytes);
        goto fail;
    }
    DNNL_TRY(dnnl_memory_create(&g->w, want, g->engine, g->w_data), "packed weights memory");
    DNNL_TRY(dnnl_reorder_primitive_desc_create(&rpd, &plain, g->engine, want, g->engine, NULL),
             "weights reorder");
    DNNL_TRY(dnnl_primitive_create(&reorder, rpd), "weights reorder primitive");
    dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, g->w}};
    DNNL_TRY(dnnl_primitive_execute(reorder, g->stream, 2, args), "weights reorder");
    DNNL_TRY(dnnl_stream_wait(g->stream), "weights reorder");
fail:
    if (reorder)
        dnnl_primitive_destroy(reorder);
    if (rpd)
        dnnl_primitive_desc_destroy(rpd);
    if (src)
        dnnl_memory_destroy(src);
    return st;
}

/* The matmul's data types: A as the kernel reads it (bf16 rounded, int8 quantized per row),
 * W as stored. */
static dnnl_data_type_t dnnl_type(lm_weight_dtype dtype)
{
    return dtype == LM_WEIGHT_BF16 ? dnnl_bf16 : dtype == LM_WEIGHT_INT8 ? dnnl_s8 : dnnl_f32;
}

/* int8: C[i, j] = sa[i] (scale[j] S[i, j]), S the s32 sums of codes; oneDNN applies the
 * weights' row scales {n} (output scales on C's dim 1), the pass after the matmul the
 * per-row scales of A. */
static lm_status int8_attributes(dnnl_primitive_attr_t attr, size_t n, const float *scale,
                                 lm_error *err)
{
    if (!scale)
        return lm_fail(err, LM_ERR_ARG, "lm_gemm_create: NULL scale for int8 weights");
    lm_status st = LM_OK;
    DNNL_TRY(dnnl_primitive_attr_set_output_scales(attr, (dnnl_dim_t)n, 1 << 1, scale),
             "output scales");
fail:
    return st;
}

/* The per-call conversion of A: a oneDNN reorder to bf16, or the s8 codes and their row
 * scales; both owned, counted in work_bytes. */
static lm_status a_buffers(lm_gemm *g, const dnnl_memory_desc_t *a_f32,
                           const dnnl_memory_desc_t *a_mm, lm_error *err)
{
    lm_status st = LM_OK;
    dnnl_primitive_desc_t cpd = NULL;
    if (g->dtype == LM_WEIGHT_INT8) {
        DNNL_TRY(dnnl_memory_create(&g->a_s8, a_mm, g->engine, DNNL_MEMORY_ALLOCATE),
                 "s8 A memory");
        g->a_scale = malloc(g->m * sizeof *g->a_scale);
        if (!g->a_scale)
            return lm_fail(err, LM_ERR_NOMEM, "lm_gemm: out of memory for A's row scales");
        g->work_bytes += dnnl_memory_desc_get_size(a_mm) + g->m * sizeof *g->a_scale;
    } else if (g->dtype == LM_WEIGHT_BF16) {
        DNNL_TRY(dnnl_memory_create(&g->a_bf16, a_mm, g->engine, DNNL_MEMORY_ALLOCATE),
                 "bf16 A memory");
        g->work_bytes += dnnl_memory_desc_get_size(a_mm);
        DNNL_TRY(dnnl_reorder_primitive_desc_create(&cpd, a_f32, g->engine, a_mm, g->engine,
                                                    NULL),
                 "A to bf16 reorder");
        DNNL_TRY(dnnl_primitive_create(&g->to_bf16, cpd), "A to bf16 reorder primitive");
    }
fail:
    if (cpd)
        dnnl_primitive_desc_destroy(cpd);
    return st;
}

lm_status lm_gemm_create(lm_gemm **out, size_t m, size_t n, size_t k, lm_weight_dtype dtype,
                         const void *w, const float *scale, unsigned flags, lm_error *err)
{
    if (!out || !w)
        return lm_fail(err, LM_ERR_ARG, "lm_gemm_create: NULL %s", out ? "weights" : "out");
    *out = NULL;
    if (m == 0 || n == 0 || k == 0)
        return lm_fail(err, LM_ERR_SHAPE, "a GEMM must be non-empty, got m %zu n %zu k %zu", m,
                       n, k);
    if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
        return lm_fail(err, LM_ERR_SHAPE, "GEMM dims past 2^31: m %zu n %zu k %zu", m, n, k);
    if (dtype != LM_WEIGHT_F32 && dtype != LM_WEIGHT_BF16 && dtype != LM_WEIGHT_INT8)
        return lm_fail(err, LM_ERR_ARG, "lm_gemm_create: unknown weight dtype %d", (int)dtype);
    if (dtype == LM_WEIGHT_INT8 && k > LM_GEMM_INT8_K_MAX)
        return lm_fail(err, LM_ERR_SHAPE, "int8 GEMM: k %zu past %d (the s32 sums of 127 x 127 "
                       "products could overflow)", k, LM_GEMM_INT8_K_MAX);
    lm_gemm *g = calloc(1, sizeof *g);
    if (!g)
        return lm_fail(err, LM_ERR_NOMEM, "lm_gemm: out of memory");
    g->m = m, g->n = n, g->k = k, g->dtype = dtype;
    lm_status st = LM_OK;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_attr_t attr = NULL;
    const dnnl_data_type_t wt = dnnl_type(dtype);
    const dnnl_dims_t a_dims = {(dnnl_dim_t)m, (dnnl_dim_t)k};
    const dnnl_dims_t w_dims = {(dnnl_dim_t)k, (dnnl_dim_t)n};
    const dnnl_dims_t c_dims = {(dnnl_dim_t)m, (dnnl_dim_t)n};
    dnnl_memory_desc_t a_f32, a_mm, w_mm, c_md;
    DNNL_TRY(dnnl_engine_create(&g->engine, dnnl_cpu, 0), "engine");
    DNNL_TRY(dnnl_stream_create(&g->stream, g->engine, dnnl_stream_default_flags), "stream");
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&a_f32, 2, a_dims, dnnl_f32, dnnl_ab), "A descriptor");
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&a_mm, 2, a_dims, wt, dnnl_ab), "A descriptor");
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&w_mm, 2, w_dims, wt,
                                          (flags & LM_GEMM_PLAIN_WEIGHTS) ? dnnl_ba : dnnl_format_tag_any),
             "weights descriptor");
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&c_md, 2, c_dims, dnnl_f32, dnnl_ab), "C descriptor");
    dnnl_matmul_desc_t md;
    DNNL_TRY(dnnl_matmul_desc_init(&md, &a_mm, &w_mm, NULL, &c_md), "matmul descriptor");
    DNNL_TRY(dnnl_primitive_attr_create(&attr), "attributes");
    DNNL_TRY(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user),
             "scratchpad mode");
    if (dtype == LM_WEIGHT_INT8 && (st = int8_attributes(attr, n, scale, err)) != LM_OK)
        goto fail;
    DNNL_TRY(dnnl_primitive_desc_create(&pd, &md, attr, g->engine, NULL), "matmul");
    const char *impl = NULL;
    DNNL_TRY(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl), "impl query");
    snprintf(g->impl, sizeof g->impl, "%s", impl ? impl : "?");
    const dnnl_memory_desc_t *w_want = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (!w_want)
        DNNL_TRY(dnnl_runtime_error, "weights layout query");
    st = copy_weights(g, w_want, wt, w, err);
    if (st != LM_OK)
        goto fail;
    if (sp && dnnl_memory_desc_get_size(sp) > 0) {
        DNNL_TRY(dnnl_memory_create(&g->scratch, sp, g->engine, DNNL_MEMORY_ALLOCATE),
                 "scratchpad");
        g->work_bytes += dnnl_memory_desc_get_size(sp);
    }
    DNNL_TRY(dnnl_primitive_create(&g->matmul, pd), "matmul primitive");
    DNNL_TRY(dnnl_memory_create(&g->a_user, &a_f32, g->engine, DNNL_MEMORY_NONE), "A memory");
    DNNL_TRY(dnnl_memory_create(&g->c_user, &c_md, g->engine, DNNL_MEMORY_NONE), "C memory");
    if ((st = a_buffers(g, &a_f32, &a_mm, err)) != LM_OK)
        goto fail;
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    *out = g;
    return LM_OK;
fail:
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    lm_gemm_free(g);
    return st;
}

/* c {m, n} *= a_scale[i] on row i: the activations' share of the int8 product's scale. */
static void scale_rows(float *c, const float *a_scale, size_t m, size_t n)
{
#pragma omp parallel for schedule(static) if (m * n >= LM_GEMM_PASS_PARALLEL)
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++)
            c[i * n + j] *= a_scale[i];
}

lm_status lm_gemm_run(lm_gemm *g, const float *a, float *c, lm_error *err)
{
    if (!g || !a || !c)
        return lm_fail(err, LM_ERR_ARG, "lm_gemm_run: NULL %s", !g ? "gemm" : !a ? "A" : "C");
    lm_status st = LM_OK;
    DNNL_TRY(dnnl_memory_set_data_handle(g->a_user, (void *)(uintptr_t)a), "A handle");
    DNNL_TRY(dnnl_memory_set_data_handle(g->c_user, c), "C handle");
    dnnl_memory_t src = g->a_user;
    if (g->to_bf16) {
        dnnl_exec_arg_t cargs[] = {{DNNL_ARG_FROM, g->a_user}, {DNNL_ARG_TO, g->a_bf16}};
        DNNL_TRY(dnnl_primitive_execute(g->to_bf16, g->stream, 2, cargs), "A to bf16");
        src = g->a_bf16;
    }
    if (g->a_s8) {
        void *codes = NULL;
        DNNL_TRY(dnnl_memory_get_data_handle(g->a_s8, &codes), "s8 A handle");
        lm_gemm_quantize_rows_s8(a, g->m, g->k, codes, g->a_scale);
        src = g->a_s8;
    }
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, g->w},
                               {DNNL_ARG_DST, g->c_user}, {DNNL_ARG_SCRATCHPAD, g->scratch}};
    DNNL_TRY(dnnl_primitive_execute(g->matmul, g->stream, g->scratch ? 4 : 3, args), "matmul");
    DNNL_TRY(dnnl_stream_wait(g->stream), "matmul");
    if (g->a_s8)
        scale_rows(c, g->a_scale, g->m, g->n);
fail:
    return st;
}

const char *lm_gemm_impl(const lm_gemm *g) { return g ? g->impl : ""; }
size_t lm_gemm_weight_bytes(const lm_gemm *g) { return g ? g->weight_bytes : 0; }
size_t lm_gemm_work_bytes(const lm_gemm *g) { return g ? g->work_bytes : 0; }

#endif

/* Per row i of a {m, k}: s = max |a| / 127 and q = round(a / s), the float32 quotient
 * rounded to the nearest integer (ties to even), so |q| <= 127 and
 * |a - s q| <= s (1/2 + 2^-17) (half a step, plus the quotient's rounding). A zero row
 * has s = 0 and codes 0. */
/* Row {k} of A to codes q {k}: q = round(a / s), |a| <= 127 s, s > 0. Ternaries rather than
 * fminf/fmaxf, which without fast-math are library calls and keep the loop scalar. */
static void quantize_row(const float *restrict a, size_t k, float s, int8_t *restrict q)
{
    for (size_t l = 0; l < k; l++) {
        float v = a[l] / s;
        v = v < -127.0f ? -127.0f : v > 127.0f ? 127.0f : v;
        /* v = round-to-nearest-even(v): exact for |v| < 2^22 (adding 1.5 2^23 leaves no
         * fraction bits; the build has no fast-math) */
        v = (v + 12582912.0f) - 12582912.0f;
        q[l] = (int8_t)v;
    }
}

void lm_gemm_quantize_rows_s8(const float *a, size_t m, size_t k, int8_t *q, float *scale)
{
#pragma omp parallel for schedule(static) if (m * k >= LM_GEMM_PASS_PARALLEL)
    for (size_t i = 0; i < m; i++) {
        const float *row = a + i * k; /* {k} */
        float most = 0.0f;
        for (size_t l = 0; l < k; l++) {
            float v = fabsf(row[l]);
            most = v > most ? v : most;
        }
        float s = most / 127.0f;
        scale[i] = s;
        if (s > 0.0f)
            quantize_row(row, k, s, q + i * k);
        else
            memset(q + i * k, 0, k);
    }
}

size_t lm_gemm_bytes_estimate(size_t m, size_t n, size_t k, lm_weight_dtype dtype)
{
    if (dtype == LM_WEIGHT_INT8) /* s8 codes and row scales of W, s8 copy and scales of A */
        return n * k + n * sizeof(float) + m * k + m * sizeof(float);
    size_t ws = dtype == LM_WEIGHT_BF16 ? 2 : 4;
    return n * k * ws + (dtype == LM_WEIGHT_BF16 ? m * k * 2 : 0);
}

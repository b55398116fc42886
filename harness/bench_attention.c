/* Bench cases of the attention family (kernels/attention): decode of one token over a KV
 * cache of n_ctx tokens (f32 / f16 / bf16 storage), and causal prefill of n_ctx tokens.
 * Defaults are the M8 geometry: 32 query heads, 8 KV heads of 128. Each case checks its
 * output against a float64 computation written here (every row for decode; three query
 * rows of every head for prefill, where the full reference would cost more than the run). */
#include "bench_util.h"
#include "registry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The float64 side of an attention check: the query rows of one KV head's group widened,
 * its rows 0..n-1 of k and v (any storage dtype) widened once for the group, and the
 * family's oracle's output. */
typedef struct attend_scratch {
    double *q, *k, *v, *exact; /* {group, d}, {n, d}, {n, d}, {group, d} */
    float *row;                /* {d} */
} attend_scratch;

static void scratch_close(attend_scratch *w)
{
    free(w->q), free(w->k), free(w->v), free(w->exact), free(w->row);
}

/* False (everything freed) when out of memory. */
static bool scratch_open(attend_scratch *w, size_t n, size_t d, size_t group)
{
    w->q = malloc(group * d * sizeof *w->q);
    w->k = malloc(n * d * sizeof *w->k);
    w->v = malloc(n * d * sizeof *w->v);
    w->exact = malloc(group * d * sizeof *w->exact);
    w->row = malloc(d * sizeof *w->row);
    if (w->q != NULL && w->k != NULL && w->v != NULL && w->exact != NULL && w->row != NULL)
        return true;
    scratch_close(w);
    return false;
}

/* w->exact {group, d}: for each of the `group` query rows q {group, d} that share one KV
 * head, softmax_j(q . k_j / sqrt(d)) v over rows 0..n-1 of k/v (storage dtype, rows
 * row_stride elements apart), by the attention family's float64 oracle
 * lm_attn_decode_f64_ref (one sequence, `group` heads over one KV head). NaN when the
 * oracle refuses the inputs, so the check fails rather than passing unchecked. */
static void attend_f64(const float *q, const void *k, const void *v, lm_kv_dtype dtype,
                       size_t n, size_t d, size_t row_stride, size_t group, attend_scratch *w)
{
    const size_t size = lm_kv_dtype_size(dtype);
    for (size_t c = 0; c < group * d; c++)
        w->q[c] = (double)q[c];
    for (size_t j = 0; j < n; j++) {
        lm_kv_load(dtype, (const char *)k + j * row_stride * size, w->row, d);
        for (size_t c = 0; c < d; c++)
            w->k[j * d + c] = (double)w->row[c];
        lm_kv_load(dtype, (const char *)v + j * row_stride * size, w->row, d);
        for (size_t c = 0; c < d; c++)
            w->v[j * d + c] = (double)w->row[c];
    }
    if (lm_attn_decode_f64_ref(w->q, w->k, w->v, &n, w->exact, 1, group, 1, d, n, NULL) !=
        LM_OK)
        for (size_t c = 0; c < group * d; c++)
            w->exact[c] = (double)NAN;
}

/* ---- decode ------------------------------------------------------------------------ */

typedef struct decode_state {
    lm_attn_decode_args args;
    float *q, *o;
    void *k, *v;
    size_t *lengths;
} decode_state;

static void decode_teardown(void *state)
{
    decode_state *s = state;
    if (s == NULL)
        return;
    lm_free(s->q), lm_free(s->o), lm_free(s->k), lm_free(s->v), lm_free(s->lengths);
    free(s);
}

static lm_status decode_setup(const lm_bench_config *c, void **state, lm_error *err)
{
    lm_kv_dtype dtype;
    lm_status st = lm_kv_dtype_parse(c->dtype, &dtype, err);
    if (st != LM_OK)
        return st;
    if (c->n_ctx < 1 || c->heads < 1 || c->kv_heads < 1 || c->head_dim < 1 || c->batch < 1)
        return lm_fail(err, LM_ERR_SHAPE, "attn_decode needs positive n_ctx, heads, kv_heads, "
                                          "head_dim and batch");
    decode_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    size_t b = (size_t)c->batch, h = (size_t)c->heads, g = (size_t)c->kv_heads;
    size_t d = (size_t)c->head_dim, n = (size_t)c->n_ctx;
    size_t kv_count = b * g * n * d;
    s->q = lm_bench_normal_f32(c->seed, b * h * d, 1.0);
    s->o = lm_alloc(b * h * d * sizeof(float));
    s->k = lm_alloc(kv_count * lm_kv_dtype_size(dtype));
    s->v = lm_alloc(kv_count * lm_kv_dtype_size(dtype));
    s->lengths = lm_alloc(b * sizeof *s->lengths);
    float *staging = lm_bench_normal_f32(c->seed + 1, kv_count, 1.0);
    if (staging != NULL && s->k != NULL)
        lm_kv_store(dtype, staging, s->k, kv_count);
    lm_free(staging);
    staging = lm_bench_normal_f32(c->seed + 2, kv_count, 1.0);
    if (staging != NULL && s->v != NULL)
        lm_kv_store(dtype, staging, s->v, kv_count);
    if (staging == NULL || s->q == NULL || s->o == NULL || s->k == NULL || s->v == NULL ||
        s->lengths == NULL) {
        lm_free(staging);
        decode_teardown(s);
        return lm_fail(err, LM_ERR_NOMEM, "cannot allocate a KV cache of %zu tokens", n);
    }
    lm_free(staging);
    for (size_t i = 0; i < b; i++)
        s->lengths[i] = n;
    s->args = (lm_attn_decode_args){.q = s->q, .k = s->k, .v = s->v, .lengths = s->lengths,
                                    .o = s->o, .batch = b, .heads = h, .kv_heads = g,
                                    .head_dim = d, .capacity = n, .dtype = dtype};
    *state = s;
    return LM_OK;
}

static lm_status decode_run(void *state, const lm_ops *ops, lm_error *err)
{
    decode_state *s = state;
    return lm_attn_decode(&s->args, ops, err);
}

static lm_status decode_check(void *state, const lm_ops *ops, double *checksum,
                            double *err_max, lm_error *err)
{
    (void)ops;
    decode_state *s = state;
    const lm_attn_decode_args *a = &s->args;
    size_t d = a->head_dim, n = a->capacity, group = a->heads / a->kv_heads;
    size_t size = lm_kv_dtype_size(a->dtype);
    *checksum = lm_bench_sum_f32(s->o, a->batch * a->heads * d);
    attend_scratch w;
    lm_bench_err e = lm_bench_err_start();
    if (!scratch_open(&w, n, d, group))
        return lm_bench_err_skipped(*checksum, err_max, err);
    for (size_t b = 0; b < a->batch; b++)
        for (size_t h = 0; h < a->heads; h += group) { /* the group of KV head h / group */
            size_t kv = b * a->kv_heads + h / group;
            const char *k = (const char *)a->k + kv * n * d * size;
            const char *v = (const char *)a->v + kv * n * d * size;
            attend_f64(a->q + (b * a->heads + h) * d, k, v, a->dtype, n, d, d, group, &w);
            lm_bench_err_add_f32(&e, a->o + (b * a->heads + h) * d, w.exact, group * d);
        }
    scratch_close(&w);
    if (!lm_bench_err_within(&e, *checksum, 1e-3, err_max))
        return lm_fail(err, LM_ERR_NUMERIC, "attn_decode output differs from the float64 "
                                            "reference by %.3g (relative to max |o|)", *err_max);
    return LM_OK;
}

static void decode_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    double b = (double)c->batch, h = (double)c->heads, g = (double)c->kv_heads;
    double d = (double)c->head_dim, n = (double)c->n_ctx;
    double size = strcmp(c->dtype, "f32") == 0 ? 4.0 : 2.0;
    *flops = 4.0 * b * h * n * d;                             /* q k^T and p v, 2 each */
    *bytes = 2.0 * b * g * n * d * size + 2.0 * b * h * d * 4.0; /* K, V once; q, o */
}

const lm_bench_case lm_bench_attn_decode = {
    .name = "attn_decode",
    .summary = "decode: one query token per head over n_ctx cached tokens (GQA, split-KV)",
    .role = "decode_attention",
    .dtypes = "f32,f16,bf16",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_HEADS | LM_BENCH_USES_BATCH,
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 4096, .heads = 32, .kv_heads = 8,
                 .head_dim = 128, .batch = 1},
    .setup = decode_setup,
    .run = decode_run,
    .check = decode_check,
    .cost = decode_cost,
    .teardown = decode_teardown,
};

/* ---- prefill --------------------------------------------------------------------- */

/* dtype bf16: q, k, v drawn in float32, rounded to bfloat16 (q16, k16, v16, what the
 * kernel reads) and the float32 arrays overwritten by the rounded values (what the check's
 * float64 reference reads). */
typedef struct prefill_state {
    lm_attn_prefill_args args;
    float *q, *k, *v, *o;
    uint16_t *q16, *k16, *v16;
} prefill_state;

static void prefill_teardown(void *state)
{
    prefill_state *s = state;
    if (s == NULL)
        return;
    lm_free(s->q), lm_free(s->k), lm_free(s->v), lm_free(s->o);
    lm_free(s->q16), lm_free(s->k16), lm_free(s->v16);
    free(s);
}

static lm_status prefill_setup_mask(const lm_bench_config *c, void **state, lm_attn_mask mask,
                                    lm_error *err)
{
    if (c->n_ctx < 1 || c->heads < 1 || c->kv_heads < 1 || c->head_dim < 1)
        return lm_fail(err, LM_ERR_SHAPE, "attn_prefill needs positive n_ctx, heads, kv_heads "
                                          "and head_dim");
    const bool bf16 = strcmp(c->dtype, "bf16") == 0;
    prefill_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    size_t n = (size_t)c->n_ctx, h = (size_t)c->heads, g = (size_t)c->kv_heads;
    size_t d = (size_t)c->head_dim;
    s->q = lm_bench_normal_f32(c->seed, n * h * d, 1.0);
    s->k = lm_bench_normal_f32(c->seed + 1, n * g * d, 1.0);
    s->v = lm_bench_normal_f32(c->seed + 2, n * g * d, 1.0);
    s->o = lm_alloc(n * h * d * sizeof(float));
    if (s->q == NULL || s->k == NULL || s->v == NULL || s->o == NULL) {
        prefill_teardown(s);
        return lm_fail(err, LM_ERR_NOMEM, "cannot allocate a prefill of %zu tokens", n);
    }
    s->args = (lm_attn_prefill_args){.q = s->q, .k = s->k, .v = s->v, .o = s->o, .n = n,
                                     .heads = h, .kv_heads = g, .head_dim = d, .mask = mask,
                                     .scale = 1.0f / sqrtf((float)d)};
    if (bf16) {
        s->q16 = lm_bench_round_bf16(s->q, n * h * d);
        s->k16 = lm_bench_round_bf16(s->k, n * g * d);
        s->v16 = lm_bench_round_bf16(s->v, n * g * d);
        if (s->q16 == NULL || s->k16 == NULL || s->v16 == NULL) {
            prefill_teardown(s);
            return lm_fail(err, LM_ERR_NOMEM, "cannot allocate a bf16 prefill of %zu tokens", n);
        }
        s->args.dtype = LM_KV_BF16;
        s->args.q16 = s->q16, s->args.k16 = s->k16, s->args.v16 = s->v16;
    }
    *state = s;
    return LM_OK;
}

static lm_status prefill_setup(const lm_bench_config *c, void **state, lm_error *err)
{
    lm_attn_mask causal = {.kind = LM_ATTN_MASK_CAUSAL};
    return prefill_setup_mask(c, state, causal, err);
}

static lm_status prefill_window_setup(const lm_bench_config *c, void **state, lm_error *err)
{
    if (c->chunk < 1)
        return lm_fail(err, LM_ERR_ARG, "attn_prefill_window needs chunk (the window) >= 1");
    lm_attn_mask window = {.kind = LM_ATTN_MASK_WINDOW, .window = (size_t)c->chunk};
    return prefill_setup_mask(c, state, window, err);
}

static lm_status prefill_run(void *state, const lm_ops *ops, lm_error *err)
{
    prefill_state *s = state;
    return lm_attn_prefill(&s->args, ops, NULL, err);
}

static lm_status prefill_check(void *state, const lm_ops *ops, double *checksum,
                            double *err_max, lm_error *err)
{
    (void)ops;
    prefill_state *s = state;
    const lm_attn_prefill_args *a = &s->args;
    size_t n = a->n, d = a->head_dim, group = a->heads / a->kv_heads;
    *checksum = lm_bench_sum_f32(s->o, n * a->heads * d);
    attend_scratch w;
    lm_bench_err e = lm_bench_err_start();
    size_t rows[3] = {0, n / 2, n - 1};
    if (!scratch_open(&w, n, d, group))
        return lm_bench_err_skipped(*checksum, err_max, err);
    for (size_t r = 0; r < 3; r++)
        for (size_t h = 0; h < a->heads; h += group) {
            size_t i = rows[r], first = 0;
            if (a->mask.kind == LM_ATTN_MASK_WINDOW && i + 1 > a->mask.window)
                first = i + 1 - a->mask.window;
            size_t g = h / group;
            /* keys first..i of KV head g: row stride kv_heads * d floats */
            attend_f64(a->q + (i * a->heads + h) * d, a->k + (first * a->kv_heads + g) * d,
                       a->v + (first * a->kv_heads + g) * d, LM_KV_F32, i + 1 - first, d,
                       a->kv_heads * d, group, &w);
            lm_bench_err_add_f32(&e, a->o + (i * a->heads + h) * d, w.exact, group * d);
        }
    scratch_close(&w);
    /* bf16: the BF16-dot path rounds the softmax weights to bfloat16 (error <= 2^-8
     * sum p|v|, a few 2^-8 of max |o| on these inputs); a sanity bound for gross errors,
     * the contract cases hold the precise one */
    const double tolerance = a->dtype == LM_KV_BF16 ? 1.6e-2 : 1e-3;
    if (!lm_bench_err_within(&e, *checksum, tolerance, err_max))
        return lm_fail(err, LM_ERR_NUMERIC, "attn_prefill output differs from the float64 "
                                            "reference by %.3g (relative to max |o|)", *err_max);
    return LM_OK;
}

static void prefill_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    double h = (double)c->heads, g = (double)c->kv_heads, d = (double)c->head_dim;
    double n = (double)c->n_ctx;
    double pairs = n * (n + 1.0) / 2.0; /* causal */
    if (c->chunk > 0 && c->chunk < c->n_ctx) { /* window w: sum_i min(i + 1, w) */
        double w = (double)c->chunk;
        pairs = w * (w + 1.0) / 2.0 + (n - w) * w;
    }
    *flops = 4.0 * h * d * pairs;
    const double in = strcmp(c->dtype, "bf16") == 0 ? 2.0 : 4.0; /* q, k, v element bytes */
    *bytes = in * (n * h * d + 2.0 * n * g * d) + 4.0 * n * h * d; /* q, k, v, o once */
}

const lm_bench_case lm_bench_attn_prefill = {
    .name = "attn_prefill",
    .summary = "causal GQA prefill of n_ctx tokens (tiled online softmax; bf16: BF16 dot "
               "products where the CPU has them)",
    .role = "prefill_attention",
    .dtypes = "f32,bf16",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_HEADS,
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 1024, .heads = 32, .kv_heads = 8,
                 .head_dim = 128, .batch = 1},
    .setup = prefill_setup,
    .run = prefill_run,
    .check = prefill_check,
    .cost = prefill_cost,
    .teardown = prefill_teardown,
};

const lm_bench_case lm_bench_attn_prefill_window = {
    .name = "attn_prefill_window",
    .summary = "sliding-window prefill: each token reads the last `chunk` tokens",
    .dtypes = "f32,bf16",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_HEADS | LM_BENCH_USES_CHUNK,
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 4096, .chunk = 512, .heads = 32,
                 .kv_heads = 8, .head_dim = 128, .batch = 1},
    .setup = prefill_window_setup,
    .run = prefill_run,
    .check = prefill_check,
    .cost = prefill_cost,
    .teardown = prefill_teardown,
};

/* ---- decode over a quantized KV cache (kernels/kvquant) -------------------------------
 * dtype names the format (int8, int4, kivi4, kivi2, kivi4g64, kivi2g64); the newest
 * lm_kvq_group(format) tokens stay float32 as the cache keeps them. err_max is measured against attention over the
 * ORIGINAL float32 K/V: it is the quantization error, what the kv-bits sweep plots. */

typedef struct kvq_state {
    lm_kvq_cache cache;
    bool cache_ready;
    float *q, *o, *k, *v; /* q, o {heads, d}; k, v {n, kv_heads, d}: the values appended */
    size_t heads, n;
    int bits;
} kvq_state;

static void kvq_teardown(void *state)
{
    kvq_state *s = state;
    if (s == NULL)
        return;
    if (s->cache_ready)
        lm_kvq_cache_free(&s->cache);
    lm_free(s->q), lm_free(s->o), lm_free(s->k), lm_free(s->v);
    free(s);
}

static lm_status kvq_setup(const lm_bench_config *c, void **state, lm_error *err)
{
    lm_kvq_format format;
    lm_status st = lm_kvq_format_parse(c->dtype, &format, err);
    if (st != LM_OK)
        return st;
    if (c->n_ctx < 1 || c->heads < 1 || c->kv_heads < 1 || c->head_dim < 1)
        return lm_fail(err, LM_ERR_SHAPE, "kvq_decode needs positive n_ctx, heads, kv_heads "
                                          "and head_dim");
    kvq_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    size_t h = (size_t)c->heads, g = (size_t)c->kv_heads, d = (size_t)c->head_dim;
    size_t n = (size_t)c->n_ctx;
    const size_t kg = lm_kvq_group(format);
    size_t capacity = (n + kg - 1) / kg * kg;
    s->heads = h;
    s->n = n;
    s->bits = lm_kvq_bits(format);
    s->q = lm_bench_normal_f32(c->seed, h * d, 1.0);
    s->o = lm_alloc(h * d * sizeof(float));
    s->k = lm_bench_normal_f32(c->seed + 1, n * g * d, 1.0);
    s->v = lm_bench_normal_f32(c->seed + 2, n * g * d, 1.0);
    if (!s->q || !s->o || !s->k || !s->v) {
        kvq_teardown(s);
        return lm_fail(err, LM_ERR_NOMEM, "cannot allocate a KV cache of %zu tokens", n);
    }
    st = lm_kvq_cache_init(&s->cache, format, g, d, capacity, 0, err);
    s->cache_ready = st == LM_OK;
    for (size_t t = 0; t < n && st == LM_OK; t++)
        st = lm_kvq_cache_append(&s->cache, s->k + t * g * d, s->v + t * g * d, err);
    if (st != LM_OK) {
        kvq_teardown(s);
        return st;
    }
    *state = s;
    return LM_OK;
}

static lm_status kvq_run(void *state, const lm_ops *ops, lm_error *err)
{
    kvq_state *s = state;
    return lm_kvq_decode(&s->cache, s->q, s->heads, s->o, ops, err);
}

static lm_status kvq_check(void *state, const lm_ops *ops, double *checksum,
                            double *err_max, lm_error *err)
{
    (void)ops;
    kvq_state *s = state;
    size_t g = s->cache.kv_heads, d = s->cache.head_dim, n = s->n, group = s->heads / g;
    *checksum = lm_bench_sum_f32(s->o, s->heads * d);
    attend_scratch w;
    lm_bench_err e = lm_bench_err_start();
    if (!scratch_open(&w, n, d, group))
        return lm_bench_err_skipped(*checksum, err_max, err);
    for (size_t h = 0; h < s->heads; h += group) { /* token-major {n, kv_heads, d}: stride g d */
        attend_f64(s->q + h * d, s->k + (h / group) * d, s->v + (h / group) * d, LM_KV_F32, n,
                   d, g * d, group, &w);
        lm_bench_err_add_f32(&e, s->o + h * d, w.exact, group * d);
    }
    scratch_close(&w);
    /* Beyond these the output is garbage, not quantization noise (uniform-ish inputs give
     * relative errors near 2^-bits times a small factor). */
    double bound = s->bits >= 8 ? 0.05 : s->bits >= 4 ? 0.5 : 2.0;
    if (!lm_bench_err_within(&e, *checksum, bound, err_max))
        return lm_fail(err, LM_ERR_NUMERIC, "kvq_decode (%d-bit) output is %.3g away from "
                                            "float attention (bound %.2g)", s->bits, *err_max, bound);
    return LM_OK;
}

static void kvq_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    double h = (double)c->heads, g = (double)c->kv_heads, d = (double)c->head_dim;
    double n = (double)c->n_ctx;
    lm_kvq_format format = LM_KVQ_INT8;
    (void)lm_kvq_format_parse(c->dtype, &format, NULL);
    const double bits = (double)lm_kvq_bits(format), kg = (double)lm_kvq_group(format);
    *flops = 4.0 * h * n * d;
    /* key and value codes, one (s, lo) pair of floats per value vector, and per key vector
     * (INT) or per channel and key group (KIVI: 8 d / group bytes per token), as
     * lm_kvq_bytes_per_token counts them; plus q and o */
    const double key_params = lm_kvq_is_kivi(format) ? 8.0 * d / kg : 8.0;
    *bytes = g * n * (2.0 * d * bits / 8.0 + key_params + 8.0) + 2.0 * h * d * 4.0;
}

const lm_bench_case lm_bench_kvq_decode = {
    .name = "kvq_decode",
    .summary = "decode over a quantized KV cache (int8, int4, kivi4, kivi2; kivi4g64 and "
               "kivi2g64: key groups of 64 tokens), codes read directly",
    .role = "decode_attention_quantized",
    .dtypes = "int8,int4,kivi4,kivi2,kivi4g64,kivi2g64",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_HEADS,
    .defaults = {.dtype = "int8", .bits = 8, .n_ctx = 4096, .heads = 32, .kv_heads = 8,
                 .head_dim = 128, .batch = 1},
    .setup = kvq_setup,
    .run = kvq_run,
    .check = kvq_check,
    .cost = kvq_cost,
    .teardown = kvq_teardown,
};

/* ---- sliding-window decode over a rolling buffer (kernels/window/rolling.c) ------------
 * n_ctx tokens appended to a ring of `chunk` slots; one query per head reads the
 * min(n_ctx, chunk) tokens held. Checked against float64 attention over the ring itself. */

typedef struct ring_state {
    lm_window_cache cache;
    bool ready;
    float *q, *o;
    size_t heads;
} ring_state;

static void ring_teardown(void *state)
{
    ring_state *s = state;
    if (s == NULL)
        return;
    if (s->ready)
        lm_window_cache_free(&s->cache);
    lm_free(s->q), lm_free(s->o);
    free(s);
}

static lm_status ring_setup(const lm_bench_config *c, void **state, lm_error *err)
{
    lm_kv_dtype dtype;
    lm_status st = lm_kv_dtype_parse(c->dtype, &dtype, err);
    if (st != LM_OK)
        return st;
    if (c->n_ctx < 1 || c->chunk < 1 || c->heads < 1 || c->kv_heads < 1 || c->head_dim < 1)
        return lm_fail(err, LM_ERR_SHAPE, "window_decode needs positive n_ctx, chunk (the "
                                          "window), heads, kv_heads and head_dim");
    ring_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    size_t h = (size_t)c->heads, g = (size_t)c->kv_heads, d = (size_t)c->head_dim;
    size_t n = (size_t)c->n_ctx, w = (size_t)c->chunk;
    s->heads = h;
    s->q = lm_bench_normal_f32(c->seed, h * d, 1.0);
    s->o = lm_alloc(h * d * sizeof(float));
    /* only the last min(n, w) tokens stay: generate those, the rest would be overwritten */
    size_t kept = n < w ? n : w;
    float *k = lm_bench_normal_f32(c->seed + 1, kept * g * d, 1.0);
    float *v = lm_bench_normal_f32(c->seed + 2, kept * g * d, 1.0);
    st = s->q && s->o && k && v ? lm_window_cache_init(&s->cache, w, g, d, dtype, err)
                                : lm_fail(err, LM_ERR_NOMEM, "cannot allocate window_decode");
    s->ready = st == LM_OK;
    if (st == LM_OK)
        s->cache.position = n - kept; /* the tokens before these have left the window */
    for (size_t t = 0; t < kept && st == LM_OK; t++)
        st = lm_window_cache_append(&s->cache, k + t * g * d, v + t * g * d, err);
    lm_free(k), lm_free(v);
    if (st != LM_OK) {
        ring_teardown(s);
        return st;
    }
    *state = s;
    return LM_OK;
}

static lm_status ring_run(void *state, const lm_ops *ops, lm_error *err)
{
    ring_state *s = state;
    return lm_window_decode(&s->cache, s->q, s->heads, s->o, ops, err);
}

static lm_status ring_check(void *state, const lm_ops *ops, double *checksum,
                            double *err_max, lm_error *err)
{
    (void)ops;
    ring_state *s = state;
    const lm_window_cache *c = &s->cache;
    size_t d = c->head_dim, held = lm_window_cache_held(c), group = s->heads / c->kv_heads;
    size_t size = lm_kv_dtype_size(c->dtype);
    *checksum = lm_bench_sum_f32(s->o, s->heads * d);
    attend_scratch w;
    lm_bench_err e = lm_bench_err_start();
    if (!scratch_open(&w, held, d, group))
        return lm_bench_err_skipped(*checksum, err_max, err);
    for (size_t h = 0; h < s->heads; h += group) {
        size_t kv = h / group;
        const char *k = (const char *)c->k + kv * c->window * d * size;
        const char *v = (const char *)c->v + kv * c->window * d * size;
        attend_f64(s->q + h * d, k, v, c->dtype, held, d, d, group, &w);
        lm_bench_err_add_f32(&e, s->o + h * d, w.exact, group * d);
    }
    scratch_close(&w);
    if (!lm_bench_err_within(&e, *checksum, 1e-3, err_max))
        return lm_fail(err, LM_ERR_NUMERIC, "window_decode output differs from the float64 "
                                            "reference by %.3g", *err_max);
    return LM_OK;
}

static void ring_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    double h = (double)c->heads, g = (double)c->kv_heads, d = (double)c->head_dim;
    double held = (double)(c->n_ctx < c->chunk ? c->n_ctx : c->chunk);
    double size = strcmp(c->dtype, "f32") == 0 ? 4.0 : 2.0;
    *flops = 4.0 * h * held * d;
    *bytes = 2.0 * g * held * d * size + 2.0 * h * d * 4.0;
}

const lm_bench_case lm_bench_window_decode = {
    .name = "window_decode",
    .summary = "sliding-window decode: a ring of `chunk` slots after n_ctx tokens",
    .dtypes = "f32,f16,bf16",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_CHUNK | LM_BENCH_USES_HEADS,
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 16384, .chunk = 4096, .heads = 32,
                 .kv_heads = 8, .head_dim = 128, .batch = 1},
    .setup = ring_setup,
    .run = ring_run,
    .check = ring_check,
    .cost = ring_cost,
    .teardown = ring_teardown,
};

/* ---- latent (MLA) decode, absorbed and expanded (kernels/latent/mla.c) ------------------
 * Geometry mapped onto the configuration: heads = heads, nope = v_dim = head_dim,
 * latent = d_inner, rope = d_state; n_ctx cached rows of latent + rope floats. One query
 * per head. Checked against the float64 oracle up to 1,024 cached tokens; beyond, against
 * the other fast path (absorbed vs expanded: two different algorithms). */

typedef struct mla_state {
    lm_mla_shape shape;
    float *q, *ckv, *w_uk, *w_uv, *o;
    float *k, *v; /* {H, n, nope + rope}: the expanded cache (latent_mla_cached), or NULL */
    size_t n;
    bool absorbed;
} mla_state;

static void mla_teardown(void *state)
{
    mla_state *s = state;
    if (s == NULL)
        return;
    lm_free(s->q), lm_free(s->ckv), lm_free(s->w_uk), lm_free(s->w_uv), lm_free(s->o);
    lm_free(s->k), lm_free(s->v);
    free(s);
}

static lm_status mla_setup_common(const lm_bench_config *c, bool absorbed, void **state,
                                  lm_error *err)
{
    lm_mla_shape shape = {.heads = (size_t)c->heads, .latent = (size_t)c->d_inner,
                          .rope = (size_t)c->d_state, .nope = (size_t)c->head_dim,
                          .v_dim = (size_t)c->head_dim};
    lm_status st = lm_mla_check(&shape, err);
    if (st != LM_OK)
        return st;
    if (c->n_ctx < 1)
        return lm_fail(err, LM_ERR_SHAPE, "mla decode needs n_ctx >= 1");
    mla_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    size_t h = shape.heads, row = shape.latent + shape.rope;
    s->shape = shape;
    s->n = (size_t)c->n_ctx;
    s->absorbed = absorbed;
    /* weights scaled 1/sqrt(latent) so the scores stay O(1) */
    double w_scale = 1.0 / sqrt((double)shape.latent);
    s->q = lm_bench_normal_f32(c->seed, h * (shape.nope + shape.rope), 1.0);
    s->ckv = lm_bench_normal_f32(c->seed + 1, s->n * row, 1.0);
    s->w_uk = lm_bench_normal_f32(c->seed + 2, shape.latent * h * shape.nope, w_scale);
    s->w_uv = lm_bench_normal_f32(c->seed + 3, shape.latent * h * shape.v_dim, w_scale);
    s->o = lm_alloc(h * shape.v_dim * sizeof(float));
    if (!s->q || !s->ckv || !s->w_uk || !s->w_uv || !s->o) {
        mla_teardown(s);
        return lm_fail(err, LM_ERR_NOMEM, "cannot allocate an MLA cache of %ld tokens",
                       c->n_ctx);
    }
    *state = s;
    return LM_OK;
}

static lm_status mla_absorbed_setup(const lm_bench_config *c, void **state, lm_error *err)
{
    return mla_setup_common(c, true, state, err);
}

static lm_status mla_expanded_setup(const lm_bench_config *c, void **state, lm_error *err)
{
    return mla_setup_common(c, false, state, err);
}

/* The expanded cache built once (not timed: it is what prefill would have stored). */
static lm_status mla_cached_setup(const lm_bench_config *c, void **state, lm_error *err)
{
    lm_status st = mla_setup_common(c, false, state, err);
    if (st != LM_OK)
        return st;
    mla_state *s = *state;
    const size_t count = s->shape.heads * s->n * (s->shape.nope + s->shape.rope);
    s->k = lm_alloc(count * sizeof(float));
    s->v = lm_alloc(count * sizeof(float));
    st = s->k == NULL || s->v == NULL
             ? lm_fail(err, LM_ERR_NOMEM, "cannot allocate an expanded cache of %ld tokens",
                       c->n_ctx)
             : lm_mla_expand(&s->shape, s->ckv, s->n, s->w_uk, s->w_uv, false, s->k, s->v,
                             lm_ops_for(c->isa), err);
    if (st != LM_OK) {
        mla_teardown(s);
        *state = NULL;
    }
    return st;
}

static lm_status mla_run_path(mla_state *s, const lm_ops *ops, bool absorbed, float *o,
                              lm_error *err)
{
    return (absorbed ? lm_mla_attend_absorbed : lm_mla_attend_expanded)(
        &s->shape, s->q, s->ckv, s->w_uk, s->w_uv, 1, s->n, false, o, ops, err);
}

/* MHA decode over the expanded cache: every head its own K/V rows of nope + rope floats
 * (V padded with zeros past v_dim), scale 1/sqrt(nope + rope) as MLA's. */
static lm_status mla_cached_decode(mla_state *s, const lm_ops *ops, float *o, lm_error *err)
{
    const lm_mla_shape *sh = &s->shape;
    const size_t dq = sh->nope + sh->rope;
    float *out = lm_alloc(sh->heads * dq * sizeof(float));
    if (out == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    lm_attn_decode_args a = {s->q, s->k, s->v, &s->n, out, 1, sh->heads, sh->heads, dq, s->n,
                             LM_KV_F32};
    lm_status st = lm_attn_decode(&a, ops, err);
    for (size_t h = 0; st == LM_OK && h < sh->heads; h++)
        memcpy(o + h * sh->v_dim, out + h * dq, sh->v_dim * sizeof(float));
    lm_free(out);
    return st;
}

static lm_status mla_run(void *state, const lm_ops *ops, lm_error *err)
{
    mla_state *s = state;
    if (s->k != NULL)
        return mla_cached_decode(s, ops, s->o, err);
    return mla_run_path(s, ops, s->absorbed, s->o, err);
}

static lm_status mla_check(void *state, const lm_ops *ops, double *checksum,
                            double *err_max, lm_error *err)
{
    mla_state *s = state;
    const lm_mla_shape *sh = &s->shape;
    size_t count = sh->heads * sh->v_dim, row = sh->latent + sh->rope;
    *checksum = lm_bench_sum_f32(s->o, count);
    double *exact = malloc(count * sizeof *exact);
    lm_status st = exact ? LM_OK : LM_ERR_NOMEM;
    if (st == LM_OK && s->n <= 1024) {
        double *q = lm_bench_widen(s->q, sh->heads * (sh->nope + sh->rope));
        double *ckv = lm_bench_widen(s->ckv, s->n * row);
        double *w_uk = lm_bench_widen(s->w_uk, sh->latent * sh->heads * sh->nope);
        double *w_uv = lm_bench_widen(s->w_uv, sh->latent * sh->heads * sh->v_dim);
        st = q && ckv && w_uk && w_uv
                 ? lm_mla_attend_f64_ref(sh, q, ckv, w_uk, w_uv, 1, s->n, false, exact, err)
                 : LM_ERR_NOMEM;
        free(q), free(ckv), free(w_uk), free(w_uv);
    } else if (st == LM_OK) {
        float *other = lm_alloc(count * sizeof *other);
        st = other ? mla_run_path(s, ops, !s->absorbed, other, err) : LM_ERR_NOMEM;
        for (size_t i = 0; st == LM_OK && i < count; i++)
            exact[i] = (double)other[i];
        lm_free(other);
    }
    lm_bench_err e = lm_bench_err_start();
    if (st == LM_OK)
        lm_bench_err_add_f32(&e, s->o, exact, count);
    free(exact);
    if (st != LM_OK)
        return lm_bench_err_skipped(*checksum, err_max, err);
    if (!lm_bench_err_within(&e, *checksum, 1e-3, err_max))
        return lm_fail(err, LM_ERR_NUMERIC, "mla decode output differs from the reference by "
                                            "%.3g", *err_max);
    return LM_OK;
}

/* Absorbed: q folded into latent space (heads nope latent x 2), MQA over n rows of
 * latent + rope (scores and values, 2 each), out through W_uv; expanded: K and V built
 * for every head from each cached row (n latent heads (nope + v) x 2) then MHA. */
static void mla_cost_common(const lm_bench_config *c, bool absorbed, double *flops,
                            double *bytes)
{
    double h = (double)c->heads, n = (double)c->n_ctx, lat = (double)c->d_inner;
    double rope = (double)c->d_state, d = (double)c->head_dim;
    double weights = 4.0 * lat * h * d; /* W_uk and W_uv, float32 */
    if (absorbed) {
        *flops = 2.0 * h * d * lat + 4.0 * h * n * (lat + rope) + 2.0 * h * lat * d;
        *bytes = 4.0 * n * (lat + rope) + 2.0 * weights;
    } else {
        *flops = 2.0 * n * lat * h * 2.0 * d + 4.0 * h * n * (d + rope);
        *bytes = 4.0 * n * (lat + rope) + 2.0 * weights;
    }
}

static void mla_absorbed_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    mla_cost_common(c, true, flops, bytes);
}

static void mla_expanded_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    mla_cost_common(c, false, flops, bytes);
}

/* Scores over nope + rope and values over v_dim per (head, cached token); the kernel
 * streams K and the zero-padded V, both heads x n x (nope + rope) floats. */
static void mla_cached_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    double h = (double)c->heads, n = (double)c->n_ctx, d = (double)c->head_dim;
    double rope = (double)c->d_state;
    *flops = 2.0 * h * n * (d + rope) + 2.0 * h * n * d;
    *bytes = 2.0 * 4.0 * h * n * (d + rope);
}

const lm_bench_case lm_bench_latent_mla = {
    .name = "latent_mla",
    .summary = "latent attention decode, W_uk/W_uv absorbed (MQA over the latent rows)",
    .dtypes = "f32",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_HEADS | LM_BENCH_USES_SSM,
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 4096, .heads = 128, .kv_heads = 1,
                 .head_dim = 128, .d_inner = 512, .d_state = 64, .batch = 1},
    .setup = mla_absorbed_setup,
    .run = mla_run,
    .check = mla_check,
    .cost = mla_absorbed_cost,
    .teardown = mla_teardown,
};

const lm_bench_case lm_bench_latent_mla_expanded = {
    .name = "latent_mla_expanded",
    .summary = "latent attention decode, K/V expanded per head from the latent rows",
    .dtypes = "f32",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_HEADS | LM_BENCH_USES_SSM,
    /* 1,024 tokens: re-expanding every head's K/V costs 2 x 128 x 512 x 256 flops per
     * cached token (33.6 MFLOP; ~1.1 TFLOP per step at 32k), which absorbing removes */
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 1024, .heads = 128, .kv_heads = 1,
                 .head_dim = 128, .d_inner = 512, .d_state = 64, .batch = 1},
    .setup = mla_expanded_setup,
    .run = mla_run,
    .check = mla_check,
    .cost = mla_expanded_cost,
    .teardown = mla_teardown,
};

const lm_bench_case lm_bench_latent_mla_cached = {
    .name = "latent_mla_cached",
    .summary = "latent attention decode over an expanded per-head K/V cache (MHA-sized)",
    .dtypes = "f32",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_HEADS | LM_BENCH_USES_SSM,
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 4096, .heads = 128, .kv_heads = 1,
                 .head_dim = 128, .d_inner = 512, .d_state = 64, .batch = 1},
    .setup = mla_cached_setup,
    .run = mla_run,
    .check = mla_check,
    .cost = mla_cached_cost,
    .teardown = mla_teardown,
};


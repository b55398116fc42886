/* Kernel-contract runners for the attention family, registered in harness/registry.h
 * (recipes: docs/contracts.md; NumPy side: scripts/kcases/attention.py). */
#include "registry.h"

#include <math.h>
#include <string.h>

static lm_status read_mask(lm_kcase *kcase, lm_attn_mask *mask, lm_error *err)
{
    static const char *const kinds[LM_ATTN_MASK_COUNT] = {"causal", "window", "window_global",
                                                          "strided"};
    const char *kind;
    long long window, n_global, stride;
    lm_status status;
    if ((status = lm_kcase_opt_string(kcase, "mask", "causal", &kind, err)) != LM_OK ||
        (status = lm_kcase_opt_int(kcase, "window", 0, &window, err)) != LM_OK ||
        (status = lm_kcase_opt_int(kcase, "n_global", 0, &n_global, err)) != LM_OK ||
        (status = lm_kcase_opt_int(kcase, "stride", 0, &stride, err)) != LM_OK)
        return status;
    if (window < 0 || n_global < 0 || stride < 0)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options window, n_global, stride must be "
                       ">= 0", kcase->id);
    memset(mask, 0, sizeof *mask);
    mask->kind = LM_ATTN_MASK_COUNT;
    for (int k = 0; k < LM_ATTN_MASK_COUNT; k++)
        if (strcmp(kind, kinds[k]) == 0)
            mask->kind = (lm_attn_mask_kind)k;
    if (mask->kind == LM_ATTN_MASK_COUNT)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.mask '%s' must be causal, window, "
                       "window_global or strided", kcase->id, kind);
    mask->window = (size_t)window;
    mask->n_global = (size_t)n_global;
    mask->stride = (size_t)stride;
    return LM_OK;
}

/* Sets element 0 of x to NaN when options.poison names this array. */
static lm_status poison(lm_kcase *kcase, const char *array, double *x, lm_error *err)
{
    const char *which;
    lm_status status = lm_kcase_opt_string(kcase, "poison", "", &which, err);
    if (status == LM_OK && strcmp(which, array) == 0)
        x[0] = (double)NAN;
    return status;
}

/* While the case is probed (lm_kcase_probe), the attention kernels' own rule for heads,
 * kv_heads and head_dim (positive, heads a multiple of kv_heads: lm_attn_prefill_check),
 * so a contract with a shape the kernel refuses is refused when it is loaded. */
static lm_status probe_heads(const lm_kcase *kcase, size_t heads, size_t kv_heads, size_t d,
                             lm_error *err)
{
    const lm_attn_mask causal = {.kind = LM_ATTN_MASK_CAUSAL};
    return kcase->probing ? lm_attn_prefill_check(1, heads, kv_heads, d, &causal, err) : LM_OK;
}

/* Reserves the case's memory for draw_qkv's q {nq}, k and v {nk} and output {nq} with
 * their float32 copies, the float64 reference's two rows of `keys` scores, and whatever
 * `more` adds (NULL: nothing). */
static lm_status reserve_qkv(lm_kcase *kcase, size_t nq, size_t nk, size_t keys,
                             const lm_budget *more, lm_error *err)
{
    lm_budget budget = lm_kcase_budget(kcase);
    lm_budget_add(&budget, nq, 2 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, nk, 2 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, keys, sizeof(double) + sizeof(double *));
    if (more != NULL)
        budget.bytes = lm_size_add(budget.bytes, more->bytes);
    return lm_kcase_reserve(kcase, &budget, err);
}

/* Draws q {nq}, then k and v {nk} each (case-owned, in that order) and allocates the nq
 * outputs; LM_ERR_NOMEM "no memory for inputs" when any allocation fails. */
static lm_status draw_qkv(lm_kcase *kcase, lm_rng *rng, size_t nq, size_t nk, double **q,
                          double **k, double **v, lm_kout *out, lm_error *err)
{
    *q = lm_kcase_normal(kcase, rng, nq);
    *k = lm_kcase_normal(kcase, rng, nk);
    *v = lm_kcase_normal(kcase, rng, nk);
    if (*q == NULL || *k == NULL || *v == NULL || lm_kcase_output(kcase, nq, out, err) != LM_OK)
        return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for inputs", kcase->id);
    return LM_OK;
}

/* a's float32 q {nq}, k and v {nk} rounded to bfloat16 copies (case-owned), dtype BF16. */
static lm_status to_bf16(lm_kcase *kcase, lm_attn_prefill_args *a, size_t nq, size_t nk,
                         lm_error *err)
{
    uint16_t *q = lm_kcase_alloc(kcase, nq, sizeof *q), *k = lm_kcase_alloc(kcase, nk, sizeof *k);
    uint16_t *v = lm_kcase_alloc(kcase, nk, sizeof *v);
    if ((nq && q == NULL) || (nk && (k == NULL || v == NULL)))
        return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for bfloat16 copies", kcase->id);
    lm_kv_store(LM_KV_BF16, a->q, q, nq);
    lm_kv_store(LM_KV_BF16, a->k, k, nk);
    lm_kv_store(LM_KV_BF16, a->v, v, nk);
    *a = (lm_attn_prefill_args){.o = a->o, .n = a->n, .heads = a->heads, .kv_heads = a->kv_heads,
                                .head_dim = a->head_dim, .mask = a->mask, .scale = a->scale,
                                .dtype = LM_KV_BF16, .q16 = q, .k16 = k, .v16 = v};
    return LM_OK;
}

/* attn_prefill (old contract name attention_prefill): causal (masked) GQA prefill.
 * Recipe: q = rng.standard_normal((n, heads, head_dim)), k = rng.standard_normal((n,
 * kv_heads, head_dim)), v likewise; rounded to float32 for dtype f32, to float32 then
 * bfloat16 for dtype bf16 (the bf16 slot: BF16 dot products where the path has them).
 * Output o {n, heads, head_dim}. Options: mask (causal | window | window_global | strided), window, n_global,
 * stride, poison ("q" or "k": its element 0 = NaN, for the non-finite bad-input cases). */
lm_status lm_kcase_attn_prefill(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops, lm_kout *out,
                                lm_error *err)
{
    static const char *const dtypes[] = {"f32", "bf16", "f64", NULL};
    static const char *const options[] = {"mask", "window", "n_global", "stride", "poison",
                                          NULL};
    size_t n, heads, kv_heads, d;
    lm_attn_mask mask;
    lm_status status;
    if ((status = lm_kcase_dtype_in(kcase, dtypes, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = lm_kcase_size0(kcase, "n", &n, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "heads", &heads, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "kv_heads", &kv_heads, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "head_dim", &d, err)) != LM_OK ||
        (status = read_mask(kcase, &mask, err)) != LM_OK)
        return status;
    if (kcase->probing && (status = lm_attn_prefill_check(n, heads, kv_heads, d, &mask, err)) !=
                              LM_OK)
        return status;
    if (n > ((size_t)1 << 24) / (heads * d))
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: n * heads * head_dim must be at most 2^24",
                       kcase->id);
    lm_budget copies = lm_kcase_budget(kcase); /* dtype bf16: q, k, v in bfloat16 too */
    if (strcmp(kcase->dtype, "bf16") == 0)
        lm_budget_add(&copies, LM_PRODUCT(n, heads + 2 * kv_heads, d), sizeof(uint16_t));
    if ((status = reserve_qkv(kcase, LM_PRODUCT(n, heads, d), LM_PRODUCT(n, kv_heads, d), n,
                              &copies, err)) != LM_OK)
        return status;
    const size_t nq = n * heads * d, nk = n * kv_heads * d;
    double *q, *k, *v; /* {n, heads, d}, {n, kv_heads, d} twice */
    if ((status = draw_qkv(kcase, rng, nq, nk, &q, &k, &v, out, err)) != LM_OK)
        return status;
    if ((status = poison(kcase, "q", q, err)) != LM_OK ||
        (status = poison(kcase, "k", k, err)) != LM_OK)
        return status;
    if (ops == NULL)
        return lm_attn_prefill_f64_ref(q, k, v, out->values, n, heads, kv_heads, d, &mask, err);
    float *qf = lm_kcase_to_f32(kcase, q, nq), *kf = lm_kcase_to_f32(kcase, k, nk);
    float *vf = lm_kcase_to_f32(kcase, v, nk);
    float *of = lm_kcase_alloc(kcase, nq, sizeof(float));
    if ((nq && (qf == NULL || of == NULL)) || (nk && (kf == NULL || vf == NULL)))
        return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for float32 copies", kcase->id);
    lm_attn_prefill_args a = {.q = qf, .k = kf, .v = vf, .o = of, .n = n, .heads = heads,
                              .kv_heads = kv_heads, .head_dim = d, .mask = mask,
                              .scale = 1.0f / sqrtf((float)d)};
    if (strcmp(kcase->dtype, "bf16") == 0 && (status = to_bf16(kcase, &a, nq, nk, err)) != LM_OK)
        return status;
    return lm_kcase_store_f32(lm_attn_prefill(&a, ops, NULL, err), out->values, of, nq);
}

/* attn_decode (old contract name attention_decode): one query per sequence over a KV cache.
 * Recipe: q = rng.standard_normal((batch, heads, head_dim)), k = rng.standard_normal((batch,
 * kv_heads, capacity, head_dim)), v likewise; q rounded to float32, k and v to the case's
 * dtype (f32 | f16 | bf16); f64 runs the reference unrounded. Sequence b holds
 * lengths[b] = 1 + (length - 1) * (batch - b) // batch tokens (options.length, default
 * capacity; 0 makes the n = 0 bad-input case). Output o {batch, heads, head_dim}. */
lm_status lm_kcase_attn_decode(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops, lm_kout *out,
                               lm_error *err)
{
    static const char *const dtypes[] = {"f32", "f16", "bf16", "f64", NULL};
    static const char *const options[] = {"length", "poison", NULL};
    size_t batch, heads, kv_heads, d, capacity;
    long long length;
    lm_status status;
    if ((status = lm_kcase_dtype_in(kcase, dtypes, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "batch", &batch, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "heads", &heads, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "kv_heads", &kv_heads, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "head_dim", &d, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "capacity", &capacity, err)) != LM_OK ||
        (status = lm_kcase_opt_int(kcase, "length", (long long)capacity, &length, err)) != LM_OK)
        return status;
    if ((status = probe_heads(kcase, heads, kv_heads, d, err)) != LM_OK)
        return status;
    if (length < 0)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.length must be >= 0", kcase->id);
    if (batch * kv_heads > ((size_t)1 << 24) / (capacity * d) || batch > 4096)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: batch * kv_heads * capacity * head_dim "
                       "must be at most 2^24", kcase->id);
    /* lengths, the cache in the case's dtype (at most 4 bytes a value) and the decode's
     * partial states: one {heads, d + 2} per 512 tokens of each sequence */
    lm_budget more = lm_kcase_budget(kcase);
    lm_budget_add(&more, batch, sizeof(size_t));
    lm_budget_add(&more, LM_PRODUCT(batch, kv_heads, capacity, d), 2 * sizeof(float));
    lm_budget_add(&more, LM_PRODUCT(batch, heads, capacity / 512 + 2, d + 2), sizeof(float));
    if ((status = reserve_qkv(kcase, LM_PRODUCT(batch, heads, d),
                              LM_PRODUCT(batch, kv_heads, capacity, d), capacity, &more, err)) !=
        LM_OK)
        return status;
    size_t *lengths = lm_kcase_alloc(kcase, batch, sizeof *lengths);
    if (lengths == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for lengths", kcase->id);
    for (size_t b = 0; b < batch; b++)
        lengths[b] = length == 0 ? 0 : 1 + ((size_t)length - 1) * (batch - b) / batch;
    const size_t nq = batch * heads * d, nk = batch * kv_heads * capacity * d;
    double *q, *k, *v; /* {batch, heads, d}, {batch, kv_heads, capacity, d} twice */
    if ((status = draw_qkv(kcase, rng, nq, nk, &q, &k, &v, out, err)) != LM_OK)
        return status;
    if ((status = poison(kcase, "q", q, err)) != LM_OK)
        return status;
    if (ops == NULL)
        return lm_attn_decode_f64_ref(q, k, v, lengths, out->values, batch, heads, kv_heads, d,
                                      capacity, err);
    lm_kv_dtype dtype;
    if ((status = lm_kv_dtype_parse(kcase->dtype, &dtype, err)) != LM_OK)
        return status;
    float *qf = lm_kcase_to_f32(kcase, q, nq), *kf = lm_kcase_to_f32(kcase, k, nk);
    float *vf = lm_kcase_to_f32(kcase, v, nk);
    float *of = lm_kcase_alloc(kcase, nq, sizeof(float));
    void *ks = lm_kcase_alloc(kcase, nk, lm_kv_dtype_size(dtype));
    void *vs = lm_kcase_alloc(kcase, nk, lm_kv_dtype_size(dtype));
    if (qf == NULL || kf == NULL || vf == NULL || of == NULL || ks == NULL || vs == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for the cache", kcase->id);
    lm_kv_store(dtype, kf, ks, nk);
    lm_kv_store(dtype, vf, vs, nk);
    lm_attn_decode_args a = {qf, ks, vs, lengths, of, batch, heads, kv_heads, d, capacity, dtype};
    return lm_kcase_store_f32(lm_attn_decode(&a, ops, err), out->values, of, nq);
}

/* window_decode: token-by-token decode through the rolling buffer of w slots.
 * Recipe: q = rng.standard_normal((n, heads, head_dim)), k, v = rng.standard_normal((n,
 * kv_heads, head_dim)) each; q rounded to float32, k and v to float32 then the case's dtype
 * (f32 | f16 | bf16). Token t is appended, then its query decodes. Output o {n, heads,
 * head_dim}: equals attention_prefill with mask "window". dtype f64 runs the float64 masked
 * prefill. Options: window. */
lm_status lm_kcase_window_decode(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops, lm_kout *out,
                                 lm_error *err)
{
    static const char *const dtypes[] = {"f32", "f16", "bf16", "f64", NULL};
    static const char *const options[] = {"window", NULL};
    size_t n, heads, kv_heads, d;
    long long window;
    lm_status status;
    if ((status = lm_kcase_dtype_in(kcase, dtypes, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "n", &n, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "heads", &heads, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "kv_heads", &kv_heads, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "head_dim", &d, err)) != LM_OK ||
        (status = lm_kcase_opt_int(kcase, "window", 1, &window, err)) != LM_OK)
        return status;
    if ((status = probe_heads(kcase, heads, kv_heads, d, err)) != LM_OK)
        return status;
    if (window < 0 || n > ((size_t)1 << 22) / (heads * d))
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: window >= 0 and n * heads * head_dim <= "
                       "2^22", kcase->id);
    /* one token's output and the rolling buffer: k and v of `window` slots (<= 4 bytes) */
    lm_budget more = lm_kcase_budget(kcase);
    lm_budget_add(&more, LM_PRODUCT(heads, d), sizeof(float));
    lm_budget_add(&more, LM_PRODUCT((size_t)window, kv_heads, d), 2 * sizeof(float));
    if ((status = reserve_qkv(kcase, LM_PRODUCT(n, heads, d), LM_PRODUCT(n, kv_heads, d), n,
                              &more, err)) != LM_OK)
        return status;
    const size_t nq = n * heads * d, nk = n * kv_heads * d;
    double *q, *k, *v; /* {n, heads, d}, {n, kv_heads, d} twice */
    if ((status = draw_qkv(kcase, rng, nq, nk, &q, &k, &v, out, err)) != LM_OK)
        return status;
    if (ops == NULL) {
        lm_attn_mask mask = {LM_ATTN_MASK_WINDOW, (size_t)window, 0, 0};
        return lm_attn_prefill_f64_ref(q, k, v, out->values, n, heads, kv_heads, d, &mask, err);
    }
    lm_kv_dtype dtype;
    if ((status = lm_kv_dtype_parse(kcase->dtype, &dtype, err)) != LM_OK)
        return status;
    float *qf = lm_kcase_to_f32(kcase, q, nq), *kf = lm_kcase_to_f32(kcase, k, nk);
    float *vf = lm_kcase_to_f32(kcase, v, nk);
    float *of = lm_kcase_alloc(kcase, heads * d, sizeof(float));
    if (qf == NULL || kf == NULL || vf == NULL || of == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for float32 copies", kcase->id);
    lm_window_cache cache;
    if ((status = lm_window_cache_init(&cache, (size_t)window, kv_heads, d, dtype, err)) != LM_OK)
        return status;
    for (size_t t = 0; t < n && status == LM_OK; t++) {
        status = lm_window_cache_append(&cache, kf + t * kv_heads * d, vf + t * kv_heads * d, err);
        if (status == LM_OK)
            status = lm_window_decode(&cache, qf + t * heads * d, heads, of, ops, err);
        status = lm_kcase_store_f32(status, out->values + t * heads * d, of, heads * d);
    }
    lm_window_cache_free(&cache);
    return status;
}

/* kvq_decode (old names kvquant_decode, attn_decode_q): one decode step over a quantized cache, reading the codes.
 * Recipe: k = rng.standard_normal((n, kv_heads, head_dim)), then v likewise, then
 * q = rng.standard_normal((heads, head_dim)); all rounded to float32; the n tokens are
 * appended in order (quantize on append, options.format int8 | int4 | kivi4 | kivi2 |
 * kivi4g64 | kivi2g64, options.recent float32 tokens kept), then q decodes. Output o {heads, head_dim}. dtype f64
 * runs the float64 oracle lm_kvq_decode_f64_ref (the decode's int8 query on the codes). */
lm_status lm_kcase_kvq_decode(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops, lm_kout *out,
                              lm_error *err)
{
    static const char *const dtypes[] = {"f32", "f64", NULL};
    static const char *const options[] = {"format", "recent", NULL};
    size_t n, heads, kv_heads, d;
    const char *format_name;
    long long recent;
    lm_status status;
    if ((status = lm_kcase_dtype_in(kcase, dtypes, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "n", &n, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "heads", &heads, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "kv_heads", &kv_heads, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "head_dim", &d, err)) != LM_OK ||
        (status = lm_kcase_opt_string(kcase, "format", "int8", &format_name, err)) != LM_OK ||
        (status = lm_kcase_opt_int(kcase, "recent", 0, &recent, err)) != LM_OK)
        return status;
    if ((status = probe_heads(kcase, heads, kv_heads, d, err)) != LM_OK)
        return status;
    lm_kvq_format format;
    if (lm_kvq_format_parse(format_name, &format, NULL) != LM_OK || recent < 0)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.format must be int8, int4, kivi4, "
                       "kivi2, kivi4g64 or kivi2g64 and recent >= 0", kcase->id);
    if (n > ((size_t)1 << 22) / (kv_heads * d))
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: n * kv_heads * head_dim <= 2^22", kcase->id);
    const size_t kg = lm_kvq_group(format);
    const size_t capacity = (n + kg - 1) / kg * kg;
    /* the quantized cache: codes (at most a byte a value, in whole blocks of 64 tokens),
     * scales and offsets, the float32 ring of recent + group tokens; the decode's partial
     * states (one {heads, d + 2} per 512 tokens) and the float64 oracle's scores */
    lm_budget more = lm_kcase_budget(kcase);
    lm_budget_add(&more, LM_PRODUCT(kv_heads, capacity + 64, d + 4), 2);
    lm_budget_add(&more, LM_PRODUCT(kv_heads, capacity + 64), 4 * sizeof(float));
    lm_budget_add(&more, LM_PRODUCT(kv_heads, capacity / kg + 1, d), 2 * sizeof(float));
    lm_budget_add(&more, LM_PRODUCT(kv_heads, lm_size_add((size_t)recent, kg), d),
                  2 * sizeof(float));
    lm_budget_add(&more, LM_PRODUCT(heads, n / 512 + 3, d + 2), sizeof(float));
    lm_budget_add(&more, lm_size_add(n, 2 * d), sizeof(double));
    if ((status = reserve_qkv(kcase, LM_PRODUCT(heads, d), LM_PRODUCT(n, kv_heads, d), 0, &more,
                              err)) != LM_OK)
        return status;
    const size_t nk = n * kv_heads * d, nq = heads * d;
    double *k = lm_kcase_normal(kcase, rng, nk), *v = lm_kcase_normal(kcase, rng, nk);
    double *q = lm_kcase_normal(kcase, rng, nq);
    if (q == NULL || k == NULL || v == NULL ||
        (status = lm_kcase_output(kcase, nq, out, err)) != LM_OK)
        return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for inputs", kcase->id);
    float *qf = lm_kcase_to_f32(kcase, q, nq), *kf = lm_kcase_to_f32(kcase, k, nk);
    float *vf = lm_kcase_to_f32(kcase, v, nk);
    float *of = lm_kcase_alloc(kcase, nq, sizeof(float));
    if (qf == NULL || kf == NULL || vf == NULL || of == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for float32 copies", kcase->id);
    lm_kvq_cache cache;
    if ((status = lm_kvq_cache_init(&cache, format, kv_heads, d, capacity, (size_t)recent,
                                    err)) != LM_OK)
        return status;
    for (size_t t = 0; t < n && status == LM_OK; t++)
        status = lm_kvq_cache_append(&cache, kf + t * kv_heads * d, vf + t * kv_heads * d, err);
    if (status == LM_OK && ops == NULL) {
        for (size_t i = 0; i < nq; i++)
            q[i] = (double)qf[i];
        status = lm_kvq_decode_f64_ref(&cache, q, heads, out->values, NULL, err);
    } else if (status == LM_OK) {
        status = lm_kcase_store_f32(lm_kvq_decode(&cache, qf, heads, of, ops, err), out->values,
                                    of, nq);
    }
    lm_kvq_cache_free(&cache);
    return status;
}

/* latent_mla: DeepSeek-V2 multi-head latent attention with the decoupled rotary key.
 * Recipe: q = rng.standard_normal((n_q, heads, nope + rope)) with n_q = n when causal else 1,
 * ckv = rng.standard_normal((n, latent + rope)), w_uk = rng.standard_normal((latent, heads *
 * nope)) / sqrt(latent), w_uv = rng.standard_normal((latent, heads * v_dim)) / sqrt(latent);
 * all rounded to float32 for dtype f32. Options: path (absorbed | expanded), causal (prefill).
 * Output o {n_q, heads, v_dim}. dtype f64 runs lm_mla_attend_f64_ref. */
lm_status lm_kcase_latent_mla(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops, lm_kout *out,
                              lm_error *err)
{
    static const char *const dtypes[] = {"f32", "f64", NULL};
    static const char *const options[] = {"path", "causal", NULL};
    lm_mla_shape sh;
    size_t n;
    const char *path;
    bool causal;
    lm_status status;
    if ((status = lm_kcase_dtype_in(kcase, dtypes, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "heads", &sh.heads, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "latent", &sh.latent, err)) != LM_OK ||
        (status = lm_kcase_size0(kcase, "rope", &sh.rope, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "nope", &sh.nope, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "v_dim", &sh.v_dim, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "n", &n, err)) != LM_OK ||
        (status = lm_kcase_opt_string(kcase, "path", "absorbed", &path, err)) != LM_OK ||
        (status = lm_kcase_opt_bool(kcase, "causal", false, &causal, err)) != LM_OK)
        return status;
    bool absorbed = strcmp(path, "absorbed") == 0;
    if (!absorbed && strcmp(path, "expanded") != 0)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.path must be absorbed or expanded",
                       kcase->id);
    if (kcase->probing && (status = lm_mla_check(&sh, err)) != LM_OK)
        return status;
    if (n > 4096)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: shape.n must be at most 4096", kcase->id);
    const size_t n_q = causal ? n : 1, dq = sh.nope + sh.rope, dk = sh.latent + sh.rope;
    /* q, ckv, both weights and o with their float32 copies; the absorbed queries and their
     * mixes {n_q, heads, latent + rope}; the expanded keys and values {n, heads, dq} and its
     * outputs; the decodes' partial states (one {dq + 2} per head and 128 tokens expanded,
     * one {latent + rope + 2} per head and 256 tokens absorbed); the float64 oracle's keys,
     * values and weights of one head */
    lm_budget budget = lm_kcase_budget(kcase);
    lm_budget_add(&budget, LM_PRODUCT(n_q, sh.heads, dq), LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(n, dk), LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(sh.latent, sh.heads, sh.nope), LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(sh.latent, sh.heads, sh.v_dim), LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(n_q, sh.heads, sh.v_dim), LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(n_q, sh.heads, dk), 2 * sizeof(float));
    lm_budget_add(&budget, LM_PRODUCT(n, sh.heads, dq), 2 * sizeof(float));
    lm_budget_add(&budget, LM_PRODUCT(n_q, sh.heads, dq), sizeof(float));
    lm_budget_add(&budget, LM_PRODUCT(sh.heads, n / 128 + 1, dq + 2), sizeof(float));
    lm_budget_add(&budget, LM_PRODUCT(sh.heads, n / 256 + 1, dk + 2), sizeof(float));
    lm_budget_add(&budget, LM_PRODUCT(n, dq + sh.v_dim + 1), sizeof(double));
    if ((status = lm_kcase_reserve(kcase, &budget, err)) != LM_OK)
        return status;
    const size_t nq = n_q * sh.heads * dq, nc = n * (sh.latent + sh.rope);
    const size_t nuk = sh.latent * sh.heads * sh.nope, nuv = sh.latent * sh.heads * sh.v_dim;
    const size_t no = n_q * sh.heads * sh.v_dim;
    double *q = lm_kcase_normal(kcase, rng, nq), *ckv = lm_kcase_normal(kcase, rng, nc);
    double *uk = lm_kcase_normal(kcase, rng, nuk), *uv = lm_kcase_normal(kcase, rng, nuv);
    if (q == NULL || ckv == NULL || uk == NULL || uv == NULL ||
        (status = lm_kcase_output(kcase, no, out, err)) != LM_OK)
        return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for inputs", kcase->id);
    const double w_scale = 1.0 / sqrt((double)sh.latent);
    for (size_t i = 0; i < nuk; i++)
        uk[i] *= w_scale;
    for (size_t i = 0; i < nuv; i++)
        uv[i] *= w_scale;
    if (ops == NULL)
        return lm_mla_attend_f64_ref(&sh, q, ckv, uk, uv, n_q, n, causal, out->values, err);
    float *qf = lm_kcase_to_f32(kcase, q, nq), *cf = lm_kcase_to_f32(kcase, ckv, nc);
    float *ukf = lm_kcase_to_f32(kcase, uk, nuk), *uvf = lm_kcase_to_f32(kcase, uv, nuv);
    float *of = lm_kcase_alloc(kcase, no, sizeof(float));
    if (qf == NULL || cf == NULL || ukf == NULL || uvf == NULL || of == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for float32 copies", kcase->id);
    status = absorbed ? lm_mla_attend_absorbed(&sh, qf, cf, ukf, uvf, n_q, n, causal, of, ops, err)
                      : lm_mla_attend_expanded(&sh, qf, cf, ukf, uvf, n_q, n, causal, of, ops, err);
    return lm_kcase_store_f32(status, out->values, of, no);
}


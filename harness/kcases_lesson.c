/* Kernel-contract runners for the lesson's float64 references (dtype f64 only): the
 * oracles checked against NumPy on random inputs. Recipes: docs/contracts.md, "kernels",
 * and scripts/kcases/lesson.py, which draws the same inputs in the same order. */
#include "registry.h"

#include <string.h>

static const char *const f64_only[] = {"f64", NULL};

/* Reserves `count` float64 values and `bytes` more (the draws, outputs, masks and the
 * reference's scratch, which each runner adds up from its shape) for the case. */
static lm_status reserve_doubles(lm_kcase *kcase, size_t count, size_t bytes, lm_error *err)
{
    lm_budget budget = lm_kcase_budget(kcase);
    lm_budget_add(&budget, count, sizeof(double));
    lm_budget_add(&budget, bytes, 1);
    return lm_kcase_reserve(kcase, &budget, err);
}

static lm_status no_memory(const lm_kcase *kcase, lm_error *err)
{
    return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for inputs", kcase->id);
}

/* Every size in `names` (NULL-terminated) into sizes[], each in [1, 2^31), and their
 * products kept small enough for a contract case. */
static lm_status read_sizes(const lm_kcase *kcase, const char *const *names, size_t *sizes,
                            lm_error *err)
{
    for (size_t i = 0; names[i] != NULL; i++) {
        lm_status status = lm_kcase_size(kcase, names[i], &sizes[i], err);
        if (status != LM_OK)
            return status;
        if (sizes[i] > 4096)
            return lm_fail(err, LM_ERR_SCHEMA, "case %s: shape.%s must be at most 4096 for a "
                                               "reference case", kcase->id, names[i]);
    }
    return LM_OK;
}

/* lesson_sdpa. Draws q {n_q, d}, k {n_k, d}, v {n_k, d_v}. Options: mask none|causal|window
 * (square only, window needs w), scale (default true). Output: out {n_q, d_v}, weights
 * {n_q, n_k}. */
lm_status lm_kcase_lesson_sdpa(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops, lm_kout *out,
                          lm_error *err)
{
    static const char *const names[] = {"n_q", "n_k", "d", "d_v", NULL};
    static const char *const options[] = {"mask", "w", "scale", NULL};
    size_t s[4];
    const char *mask_kind;
    long long w;
    bool scale;
    lm_status status;
    (void)ops;
    if ((status = lm_kcase_dtype_in(kcase, f64_only, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = read_sizes(kcase, names, s, err)) != LM_OK ||
        (status = lm_kcase_opt_string(kcase, "mask", "none", &mask_kind, err)) != LM_OK ||
        (status = lm_kcase_opt_int(kcase, "w", 0, &w, err)) != LM_OK ||
        (status = lm_kcase_opt_bool(kcase, "scale", true, &scale, err)) != LM_OK)
        return status;
    const size_t n_q = s[0], n_k = s[1], d = s[2], d_v = s[3];
    /* q, k, v; out and weights; the reference's row of scores; the mask (bytes) */
    const size_t values = lm_size_add(lm_size_add(LM_PRODUCT(lm_size_add(n_q, n_k), d),
                                                  LM_PRODUCT(lm_size_add(n_k, n_q), d_v)),
                                      lm_size_add(LM_PRODUCT(n_q, n_k), n_k));
    if ((status = reserve_doubles(kcase, values, LM_PRODUCT(n_q, n_k), err)) != LM_OK)
        return status;
    double *q = lm_kcase_normal(kcase, rng, n_q * d);   /* {n_q, d} */
    double *k = lm_kcase_normal(kcase, rng, n_k * d);   /* {n_k, d} */
    double *v = lm_kcase_normal(kcase, rng, n_k * d_v); /* {n_k, d_v} */
    uint8_t *mask = lm_kcase_alloc(kcase, n_q * n_k, 1); /* {n_q, n_k} */
    if (!q || !k || !v || !mask || lm_kcase_output(kcase, n_q * d_v + n_q * n_k, out, err))
        return no_memory(kcase, err);
    bool masked = strcmp(mask_kind, "none") != 0;
    if (masked && n_q != n_k)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.mask %s needs n_q == n_k",
                       kcase->id, mask_kind);
    if (strcmp(mask_kind, "causal") == 0)
        status = lm_attn_causal_mask(n_q, mask, err);
    else if (strcmp(mask_kind, "window") == 0)
        status = w < 1 ? lm_fail(err, LM_ERR_SCHEMA, "case %s: options.w must be positive",
                                 kcase->id)
                       : lm_window_mask(n_q, (size_t)w, mask, err);
    else if (masked)
        return lm_fail(err, LM_ERR_SCHEMA,
                       "case %s: options.mask must be none, causal or window, got %s",
                       kcase->id, mask_kind);
    if (status != LM_OK)
        return status;
    return lm_attn_sdpa_f64_ref(q, k, v, masked ? mask : NULL, scale, n_q, n_k, d, d_v,
                                out->values, out->values + n_q * d_v, err);
}

/* lesson_window_decode. Draws q {n, d}, k {n, d}, v {n, d_v}; option w. Output: out
 * {n, d_v}, then the largest number of entries the buffer held. */
lm_status lm_kcase_lesson_window_decode(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops,
                                   lm_kout *out, lm_error *err)
{
    static const char *const names[] = {"n", "d", "d_v", NULL};
    static const char *const options[] = {"w", NULL};
    size_t s[3];
    long long w;
    lm_status status;
    (void)ops;
    if ((status = lm_kcase_dtype_in(kcase, f64_only, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = read_sizes(kcase, names, s, err)) != LM_OK ||
        (status = lm_kcase_opt_int(kcase, "w", 0, &w, err)) != LM_OK)
        return status;
    if (w < 1)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.w must be positive", kcase->id);
    const size_t n = s[0], d = s[1], d_v = s[2];
    /* q, k; v and out; the reference's rolling buffer of at most n keys and values */
    if ((status = reserve_doubles(kcase, lm_size_add(LM_PRODUCT(n, 3 * d + 3 * d_v), 1), 0,
                                  err)) != LM_OK)
        return status;
    double *q = lm_kcase_normal(kcase, rng, n * d);
    double *k = lm_kcase_normal(kcase, rng, n * d);
    double *v = lm_kcase_normal(kcase, rng, n * d_v);
    if (!q || !k || !v || lm_kcase_output(kcase, n * d_v + 1, out, err))
        return no_memory(kcase, err);
    size_t largest = 0;
    status = lm_window_decode_f64_ref(q, k, v, n, d, d_v, (size_t)w, out->values, &largest,
                                      err);
    out->values[n * d_v] = (double)largest;
    return status;
}

/* lesson_linear_feature. Draws q {n, d}, k {n, d}, v {n, d_v}; option form
 * quadratic|recurrent. Output: out {n, d_v}; recurrent appends S {d, d_v} and z {d}. */
lm_status lm_kcase_lesson_linear_feature(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops,
                                    lm_kout *out, lm_error *err)
{
    static const char *const names[] = {"n", "d", "d_v", NULL};
    static const char *const options[] = {"form", NULL};
    size_t s[3];
    const char *form;
    lm_status status;
    (void)ops;
    if ((status = lm_kcase_dtype_in(kcase, f64_only, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = read_sizes(kcase, names, s, err)) != LM_OK ||
        (status = lm_kcase_opt_string(kcase, "form", "quadratic", &form, err)) != LM_OK)
        return status;
    bool recurrent = strcmp(form, "recurrent") == 0;
    if (!recurrent && strcmp(form, "quadratic") != 0)
        return lm_fail(err, LM_ERR_SCHEMA,
                       "case %s: options.form must be quadratic or recurrent, got %s",
                       kcase->id, form);
    const size_t n = s[0], d = s[1], d_v = s[2];
    /* q, k; v and out; S {d, d_v} and z, phi_q {d}; the quadratic form's weights {n, n} */
    const size_t values = lm_size_add(lm_size_add(LM_PRODUCT(n, 2 * d + 2 * d_v),
                                                  LM_PRODUCT(d, 2 * d_v + 3)),
                                      LM_PRODUCT(n, n));
    if ((status = reserve_doubles(kcase, values, 0, err)) != LM_OK)
        return status;
    double *q = lm_kcase_normal(kcase, rng, n * d);
    double *k = lm_kcase_normal(kcase, rng, n * d);
    double *v = lm_kcase_normal(kcase, rng, n * d_v);
    size_t count = n * d_v + (recurrent ? d * d_v + d : 0);
    if (!q || !k || !v || lm_kcase_output(kcase, count, out, err))
        return no_memory(kcase, err);
    if (!recurrent)
        return lm_linear_feature_quadratic_f64_ref(q, k, v, n, d, d_v, out->values, err);
    double *s_final = out->values + n * d_v; /* {d, d_v} */
    return lm_linear_feature_recurrent_f64_ref(q, k, v, n, d, d_v, out->values, s_final,
                                               s_final + d * d_v, err);
}

/* lesson_affine_scan. Draws a = uniform(0.5, 1, {steps, width}), b = standard_normal
 * {steps, width}, h0 = standard_normal {width}. Options: method sequential|chunked|
 * hillis_steele|blelloch, chunk, h0 (use h0, else a zero start). Output: states
 * {steps, width}. */
lm_status lm_kcase_lesson_affine_scan(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops,
                                 lm_kout *out, lm_error *err)
{
    static const char *const names[] = {"steps", "width", NULL};
    static const char *const options[] = {"method", "chunk", "h0", NULL};
    size_t s[2];
    const char *method;
    long long chunk;
    bool use_h0;
    lm_status status;
    (void)ops;
    if ((status = lm_kcase_dtype_in(kcase, f64_only, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = read_sizes(kcase, names, s, err)) != LM_OK ||
        (status = lm_kcase_opt_string(kcase, "method", "sequential", &method, err)) != LM_OK ||
        (status = lm_kcase_opt_int(kcase, "chunk", 0, &chunk, err)) != LM_OK ||
        (status = lm_kcase_opt_bool(kcase, "h0", false, &use_h0, err)) != LM_OK)
        return status;
    const size_t steps = s[0], width = s[1];
    /* a, b and the states {steps, width}; h0 {width}; the parallel references' work, tree
     * (at most 4 steps) and column, {steps} each */
    if ((status = reserve_doubles(kcase, lm_size_add(LM_PRODUCT(steps, 3 * width + 10), width),
                                  0, err)) != LM_OK)
        return status;
    double *a = lm_kcase_uniform(kcase, rng, 0.5, 1.0, steps * width);
    double *b = lm_kcase_normal(kcase, rng, steps * width);
    double *h0 = lm_kcase_normal(kcase, rng, width);
    if (!a || !b || !h0 || lm_kcase_output(kcase, steps * width, out, err))
        return no_memory(kcase, err);
    const double *start = use_h0 ? h0 : NULL;
    if (strcmp(method, "sequential") == 0)
        return lm_scan_affine_sequential_f64_ref(a, b, steps, width, start, out->values, err);
    if (strcmp(method, "chunked") == 0) {
        if (chunk < 1)
            return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.chunk must be positive",
                           kcase->id);
        return lm_scan_affine_chunked_f64_ref(a, b, steps, width, (size_t)chunk, start,
                                              out->values, err);
    }
    if (strcmp(method, "hillis_steele") == 0 || strcmp(method, "blelloch") == 0)
        return lm_scan_parallel_columns_f64_ref(
            strcmp(method, "blelloch") == 0 ? LM_SCAN_BLELLOCH : LM_SCAN_HILLIS_STEELE, a, b,
            steps, width, start, out->values, err);
    return lm_fail(err, LM_ERR_SCHEMA,
                   "case %s: options.method must be sequential, chunked, hillis_steele or "
                   "blelloch, got %s", kcase->id, method);
}

static lm_status read_bits(const lm_kcase *kcase, long long *bits, lm_error *err)
{
    lm_status status = lm_kcase_opt_int(kcase, "bits", 0, bits, err);
    if (status == LM_OK && (*bits < 1 || *bits > 16))
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.bits must be in [1, 16]",
                       kcase->id);
    return status;
}

/* lesson_kv_quantize. Draws x = standard_normal {rows, cols}; option bits. Output: codes
 * {rows, cols} (as numbers), then scales {rows}. */
lm_status lm_kcase_lesson_kv_quantize(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops,
                                 lm_kout *out, lm_error *err)
{
    static const char *const names[] = {"rows", "cols", NULL};
    static const char *const options[] = {"bits", NULL};
    size_t s[2];
    long long bits;
    lm_status status;
    (void)ops;
    if ((status = lm_kcase_dtype_in(kcase, f64_only, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = read_sizes(kcase, names, s, err)) != LM_OK ||
        (status = read_bits(kcase, &bits, err)) != LM_OK)
        return status;
    const size_t rows = s[0], cols = s[1];
    /* x and the codes as numbers {rows, cols}, the scales {rows}; the codes (int32) */
    if ((status = reserve_doubles(kcase, LM_PRODUCT(rows, 2 * cols + 1),
                                  LM_PRODUCT(rows, cols, sizeof(int32_t)), err)) != LM_OK)
        return status;
    double *x = lm_kcase_normal(kcase, rng, rows * cols);
    int32_t *codes = lm_kcase_alloc(kcase, rows * cols, sizeof(int32_t));
    if (!x || !codes || lm_kcase_output(kcase, rows * cols + rows, out, err))
        return no_memory(kcase, err);
    status = lm_kvquant_quantize_rows_f64_ref(x, rows, cols, (int)bits, codes,
                                              out->values + rows * cols, err);
    for (size_t i = 0; i < rows * cols; i++)
        out->values[i] = (double)codes[i];
    return status;
}

/* lesson_kivi. Draws x = standard_normal {rows, cols}; options bits, axis token|channel.
 * Output: x_hat {rows, cols}. */
lm_status lm_kcase_lesson_kivi(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops, lm_kout *out,
                          lm_error *err)
{
    static const char *const names[] = {"rows", "cols", NULL};
    static const char *const options[] = {"bits", "axis", NULL};
    size_t s[2];
    long long bits;
    const char *axis;
    lm_status status;
    (void)ops;
    if ((status = lm_kcase_dtype_in(kcase, f64_only, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = read_sizes(kcase, names, s, err)) != LM_OK ||
        (status = read_bits(kcase, &bits, err)) != LM_OK ||
        (status = lm_kcase_opt_string(kcase, "axis", "", &axis, err)) != LM_OK)
        return status;
    bool per_token = strcmp(axis, "token") == 0;
    if (!per_token && strcmp(axis, "channel") != 0)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.axis must be token or channel",
                       kcase->id);
    const size_t rows = s[0], cols = s[1];
    /* x and x_hat {rows, cols} */
    if ((status = reserve_doubles(kcase, LM_PRODUCT(rows, cols, 2), 0, err)) != LM_OK)
        return status;
    double *x = lm_kcase_normal(kcase, rng, rows * cols);
    if (!x || lm_kcase_output(kcase, rows * cols, out, err))
        return no_memory(kcase, err);
    return lm_kvquant_kivi_f64_ref(x, rows, cols, (int)bits,
                                   per_token ? LM_KIVI_PER_TOKEN : LM_KIVI_PER_CHANNEL,
                                   out->values, err);
}


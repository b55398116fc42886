/* Kernel-contract runners for the recurrent family, registered in harness/registry.h
 * (recipes: docs/contracts.md, "kernels",
 * and scripts/kcases/recurrent.py, which draws the same inputs in the same order). */
#include "registry.h"

#include <math.h>
#include <string.h>

/* Reads a list of boolean options into `values` (same order as `names`). */
static lm_status read_flags(const lm_kcase *kcase, const char *const *names, bool *values,
                            lm_error *err)
{
    for (size_t i = 0; names[i] != NULL; i++) {
        lm_status status = lm_kcase_opt_bool(kcase, names[i], false, &values[i], err);
        if (status != LM_OK)
            return status;
    }
    return LM_OK;
}

static lm_status no_memory(const lm_kcase *kcase, lm_error *err)
{
    return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for inputs", kcase->id);
}

/* Float32 copies of count values, or NULL for a NULL input (an absent optional array). */
static float *to_f32(lm_kcase *kcase, const double *values, size_t count)
{
    return values != NULL ? lm_kcase_to_f32(kcase, values, count) : NULL;
}

/* A case-owned bfloat16 copy of count float32 values (round to nearest even), or NULL. */
static uint16_t *to_bf16_copy(lm_kcase *kcase, const float *values, size_t count)
{
    uint16_t *out = values != NULL ? lm_kcase_alloc(kcase, count, sizeof *out) : NULL;
    if (out != NULL)
        lm_kv_store(LM_KV_BF16, values, out, count);
    return out;
}

/* ---- ssm_mamba1_scan ---------------------------------------------------------------------
 * Recipe, shape {batch B, length L, channels D, state N}, every array drawn whatever the
 * options, in this order:
 *   x = standard_normal((B, L, D)); delta_raw = standard_normal((B, L, D));
 *   delta_bias = uniform(-3, 0, D); a = uniform(-8, -0.05, (D, N));
 *   b = standard_normal((B, L, N)); c = standard_normal((B, L, N)); skip = standard_normal(D);
 *   z = standard_normal((B, L, D)); h0 = standard_normal((B, D, N)).
 * Options (booleans, default false): exact_zoh; bias, skip, gate, h0 (use that array, else
 * NULL); zero_modes (a[d, d % N] = 0); positive_a (a[0, N-1] = 0.5, a bad-input case).
 * Output: y {B, L, D} followed by h_final {B, D, N}. */
lm_status lm_kcase_mamba1_scan(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops, lm_kout *out,
                            lm_error *err)
{
    static const char *const dtypes[] = {"f32", "f64", NULL};
    static const char *const options[] = {"exact_zoh", "bias", "skip", "gate", "h0",
                                          "zero_modes", "positive_a", NULL};
    enum { EXACT, BIAS, SKIP, GATE, H0, ZERO, POSITIVE };
    bool flag[7];
    size_t B, L, D, N;
    lm_status status;
    if ((status = lm_kcase_dtype_in(kcase, dtypes, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = read_flags(kcase, options, flag, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "batch", &B, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "length", &L, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "channels", &D, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "state", &N, err)) != LM_OK)
        return status;
    /* x, delta_raw, z and y {B, L, D}; bias, skip {D}; a {D, N}; b, c {B, L, N}; h0 and
     * h_final {B, D, N}: each drawn or returned in float64 with its float32 copy */
    lm_budget budget = lm_kcase_budget(kcase);
    lm_budget_add(&budget, LM_PRODUCT(B, L, D), 4 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, D, 2 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(D, N), LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(B, L, N), 2 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(B, D, N), 2 * LM_KCASE_VALUE_BYTES);
    if ((status = lm_kcase_reserve(kcase, &budget, err)) != LM_OK)
        return status;
    const size_t tok = B * L;
    double *x = lm_kcase_normal(kcase, rng, tok * D);
    double *dr = lm_kcase_normal(kcase, rng, tok * D);
    double *bias = lm_kcase_uniform(kcase, rng, -3.0, 0.0, D);
    double *a = lm_kcase_uniform(kcase, rng, -8.0, -0.05, D * N);
    double *b = lm_kcase_normal(kcase, rng, tok * N);
    double *c = lm_kcase_normal(kcase, rng, tok * N);
    double *skip = lm_kcase_normal(kcase, rng, D);
    double *z = lm_kcase_normal(kcase, rng, tok * D);
    double *h0 = lm_kcase_normal(kcase, rng, B * D * N);
    if (!x || !dr || !bias || !a || !b || !c || !skip || !z || !h0)
        return no_memory(kcase, err);
    if (flag[ZERO])
        for (size_t d = 0; d < D; d++)
            a[d * N + d % N] = 0.0;
    if (flag[POSITIVE])
        a[N - 1] = 0.5;
    if ((status = lm_kcase_output(kcase, tok * D + B * D * N, out, err)) != LM_OK)
        return status;
    if (!flag[BIAS])
        bias = NULL;
    if (!flag[SKIP])
        skip = NULL;
    if (!flag[GATE])
        z = NULL;
    if (!flag[H0])
        h0 = NULL;
    if (ops == NULL) {
        lm_ssm_mamba1_f64 p = {B, L, D, N, x, dr, bias, a, b, c, skip, z, h0,
                               out->values, out->values + tok * D, flag[EXACT]};
        return lm_ssm_mamba1_scan_f64_ref(&p, err);
    }
    float *y = lm_kcase_alloc(kcase, tok * D + B * D * N, sizeof(float));
    lm_ssm_mamba1_f32 p = {B, L, D, N,
                           to_f32(kcase, x, tok * D), to_f32(kcase, dr, tok * D),
                           to_f32(kcase, bias, D), to_f32(kcase, a, D * N),
                           to_f32(kcase, b, tok * N), to_f32(kcase, c, tok * N),
                           to_f32(kcase, skip, D), to_f32(kcase, z, tok * D),
                           to_f32(kcase, h0, B * D * N), y, y != NULL ? y + tok * D : NULL,
                           flag[EXACT]};
    if (!y || !p.x || !p.delta_raw || !p.a || !p.b || !p.c || (bias && !p.delta_bias) ||
        (skip && !p.skip) || (z && !p.z) || (h0 && !p.h0))
        return no_memory(kcase, err);
    return lm_kcase_store_f32(lm_ssm_mamba1_scan_f32(&p, ops, err),
                              out->values, y, out->count);
}

/* ---- conv_causal -------------------------------------------------------------------------
 * Recipe, shape {batch B, length L, channels D, width K}: x = standard_normal((B, L, D));
 * weight = standard_normal((D, K)); bias = standard_normal(D);
 * tail = standard_normal((B, K-1, D)). Options (booleans, default false): bias, tail (use
 * that array, else NULL = zeros), silu. Output: y {B, L, D} followed by tail_out
 * {B, K-1, D}. */
lm_status lm_kcase_conv_causal(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops, lm_kout *out,
                          lm_error *err)
{
    static const char *const dtypes[] = {"f32", "f64", NULL};
    static const char *const options[] = {"bias", "tail", "silu", NULL};
    bool flag[3];
    size_t B, L, D, K;
    lm_status status;
    if ((status = lm_kcase_dtype_in(kcase, dtypes, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = read_flags(kcase, options, flag, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "batch", &B, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "length", &L, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "channels", &D, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "width", &K, err)) != LM_OK)
        return status;
    if (K > 64)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: shape.width must be at most 64, got %zu",
                       kcase->id, K);
    /* x and y {B, L, D}; weight {D, K}; bias {D}; tail and tail_out {B, K-1, D} */
    lm_budget budget = lm_kcase_budget(kcase);
    lm_budget_add(&budget, LM_PRODUCT(B, L, D), 2 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(D, K), LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, D, LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(B, K - 1, D), 2 * LM_KCASE_VALUE_BYTES);
    if ((status = lm_kcase_reserve(kcase, &budget, err)) != LM_OK)
        return status;
    double *x = lm_kcase_normal(kcase, rng, B * L * D);
    double *w = lm_kcase_normal(kcase, rng, D * K);
    double *bias = lm_kcase_normal(kcase, rng, D);
    double *tail = lm_kcase_normal(kcase, rng, B * (K - 1) * D);
    if (!x || !w || !bias || (!tail && K > 1))
        return no_memory(kcase, err);
    const size_t tail_count = B * (K - 1) * D;
    if ((status = lm_kcase_output(kcase, B * L * D + tail_count, out, err)) != LM_OK)
        return status;
    if (!flag[0])
        bias = NULL;
    if (!flag[1])
        tail = NULL;
    if (ops == NULL) {
        lm_conv_causal_f64 p = {B, L, D, K, x, w, bias, tail, out->values,
                                out->values + B * L * D, flag[2]};
        return lm_conv_causal_f64_ref(&p, err);
    }
    float *y = lm_kcase_alloc(kcase, B * L * D + tail_count, sizeof(float));
    lm_conv_causal_f32 p = {B, L, D, K, to_f32(kcase, x, B * L * D), to_f32(kcase, w, D * K),
                            to_f32(kcase, bias, D), to_f32(kcase, tail, tail_count), y,
                            y != NULL ? y + B * L * D : NULL, flag[2]};
    if (!y || !p.x || !p.weight || (bias && !p.bias) || (tail && tail_count && !p.tail_in))
        return no_memory(kcase, err);
    return lm_kcase_store_f32(lm_conv_causal(&p, ops, err),
                              out->values, y, out->count);
}

/* ---- scan_affine ---------------------------------------------------------------------------
 * Recipe, shape {steps T, width W}: a = uniform(0.7, 0.999, (T, W)); b = standard_normal((T, W));
 * h0 = standard_normal(W). Options: chunk (integer, default T), parts (integer, default 1:
 * sequential; > 1: the three-phase chunked driver), h0 (boolean: start from h0, else 0).
 * Output: states {T, W}. dtype f64 runs the float64 reference: chunked when the case sets
 * chunk, sequential otherwise. */
lm_status lm_kcase_scan_affine(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops,
                                 lm_kout *out, lm_error *err)
{
    static const char *const dtypes[] = {"f32", "f64", NULL};
    static const char *const options[] = {"chunk", "parts", "h0", NULL};
    size_t T, W;
    long long chunk, parts;
    bool use_h0;
    lm_status status;
    if ((status = lm_kcase_dtype_in(kcase, dtypes, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "steps", &T, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "width", &W, err)) != LM_OK ||
        (status = lm_kcase_opt_int(kcase, "chunk", -1, &chunk, err)) != LM_OK ||
        (status = lm_kcase_opt_int(kcase, "parts", 1, &parts, err)) != LM_OK ||
        (status = lm_kcase_opt_bool(kcase, "h0", false, &use_h0, err)) != LM_OK)
        return status;
    if (parts < 1 || parts > 64 || chunk < -1)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.parts must be in [1, 64] and "
                       "options.chunk >= 0", kcase->id);
    /* a, b and the states {T, W}; h0 {W}; the chunked driver's ends and per-thread products,
     * sums and states {W} (2 + 3 parts of them); the float64 chunked reference's columns */
    lm_budget budget = lm_kcase_budget(kcase);
    lm_budget_add(&budget, LM_PRODUCT(T, W), 3 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, W, LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(W, 2 + 3 * (size_t)parts), sizeof(float));
    lm_budget_add(&budget, T, 3 * sizeof(double));
    if ((status = lm_kcase_reserve(kcase, &budget, err)) != LM_OK)
        return status;
    double *a = lm_kcase_uniform(kcase, rng, 0.7, 0.999, T * W);
    double *b = lm_kcase_normal(kcase, rng, T * W);
    double *h0 = lm_kcase_normal(kcase, rng, W);
    if (!a || !b || !h0)
        return no_memory(kcase, err);
    if ((status = lm_kcase_output(kcase, T * W, out, err)) != LM_OK)
        return status;
    if (ops == NULL)
        return chunk >= 0 ? lm_scan_affine_chunked_f64_ref(a, b, T, W, (size_t)chunk,
                                                           use_h0 ? h0 : NULL, out->values,
                                                           err)
                          : lm_scan_affine_sequential_f64_ref(a, b, T, W, use_h0 ? h0 : NULL,
                                                              out->values, err);
    float *af = lm_kcase_to_f32(kcase, a, T * W), *bf = lm_kcase_to_f32(kcase, b, T * W);
    float *h0f = lm_kcase_to_f32(kcase, h0, W);
    float *hf = lm_kcase_alloc(kcase, T * W, sizeof(float));
    if (!af || !bf || !h0f || !hf)
        return no_memory(kcase, err);
    status = lm_scan_affine_f32(af, bf, T, W, use_h0 ? h0f : NULL, hf, NULL,
                                chunk >= 0 ? (size_t)chunk : T, (size_t)parts, ops, err);
    return lm_kcase_store_f32(status, out->values, hf, T * W);
}

/* p's float32 q, k, v rounded to bfloat16 copies (case-owned), dtype BF16; the bf16 slot
 * reads only those. */
static lm_status linear_to_bf16(lm_kcase *kcase, lm_linear_f32 *p, lm_error *err)
{
    const size_t nk = p->heads * p->length * p->d_key, nv = p->heads * p->length * p->d_value;
    if ((p->q16 = to_bf16_copy(kcase, p->q, nk)) == NULL ||
        (p->k16 = to_bf16_copy(kcase, p->k, nk)) == NULL ||
        (p->v16 = to_bf16_copy(kcase, p->v, nv)) == NULL)
        return no_memory(kcase, err);
    p->dtype = LM_KV_BF16;
    p->q = p->k = p->v = NULL;
    return LM_OK;
}

/* ---- linear_attention -----------------------------------------------------------------------
 * Recipe, shape {heads H, length L, d_key dk, d_value dv}, with r = 1 / sqrt(dk):
 *   q = standard_normal((H, L, dk)) * r; k = standard_normal((H, L, dk)) * r;
 *   v = standard_normal((H, L, dv)); gate = uniform(0.8, 1.0, (H, L)) for gate "none" and
 *   "scalar", (H, L, dk) for "channel"; s0 = standard_normal((H, dk, dv)) * 0.5;
 *   z0 = uniform(0.5, 2.0, (H, dk)).
 * Options: feature "identity" | "elu1" (default identity), normalize (boolean), gate
 * "none" | "scalar" | "channel" (default none), s0 (boolean: start from s0 and z0),
 * chunk (integer: the chunked kernel with that chunk; absent: the recurrent kernel), and
 * gate_value (number: overwrites gate[0] for bad-input cases), poison ("q" or "k": its
 * element 0 = NaN, a bad-input case).
 * dtype f32 rounds every array to float32; dtype bf16 (chunked form only: slot
 * linear_chunked_bf16) rounds q, k, v to float32 then bfloat16, the rest to float32.
 * Output: y {H, L, dv}, then s_final {H, dk, dv}, then z_final {H, dk}. */
static lm_status run_linear(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops, lm_kout *out,
                            lm_error *err)
{
    static const char *const dtypes[] = {"f32", "bf16", "f64", NULL};
    static const char *const options[] = {"feature", "normalize", "gate", "s0", "chunk",
                                          "gate_value", "poison", NULL};
    size_t H, L, dk, dv;
    const char *feature_name, *gate_name;
    bool normalize, use_s0;
    long long chunk;
    double gate_value;
    lm_status status;
    if ((status = lm_kcase_dtype_in(kcase, dtypes, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "heads", &H, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "length", &L, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "d_key", &dk, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "d_value", &dv, err)) != LM_OK ||
        (status = lm_kcase_opt_string(kcase, "feature", "identity", &feature_name, err)) !=
            LM_OK ||
        (status = lm_kcase_opt_string(kcase, "gate", "none", &gate_name, err)) != LM_OK ||
        (status = lm_kcase_opt_bool(kcase, "normalize", false, &normalize, err)) != LM_OK ||
        (status = lm_kcase_opt_bool(kcase, "s0", false, &use_s0, err)) != LM_OK ||
        (status = lm_kcase_opt_int(kcase, "chunk", -1, &chunk, err)) != LM_OK ||
        (status = lm_kcase_opt_real(kcase, "gate_value", -1.0, &gate_value, err)) != LM_OK)
        return status;
    lm_linear_feature feature;
    lm_linear_gate gate_kind;
    if (strcmp(feature_name, "identity") == 0)
        feature = LM_LINEAR_IDENTITY;
    else if (strcmp(feature_name, "elu1") == 0)
        feature = LM_LINEAR_ELU1;
    else
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.feature must be identity or elu1",
                       kcase->id);
    if (strcmp(gate_name, "none") == 0)
        gate_kind = LM_LINEAR_GATE_NONE;
    else if (strcmp(gate_name, "scalar") == 0)
        gate_kind = LM_LINEAR_GATE_SCALAR;
    else if (strcmp(gate_name, "channel") == 0)
        gate_kind = LM_LINEAR_GATE_CHANNEL;
    else
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.gate must be none, scalar or "
                       "channel", kcase->id);
    if (chunk < -1)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.chunk must be >= 0", kcase->id);
    const char *poison_name;
    if ((status = lm_kcase_opt_string(kcase, "poison", "", &poison_name, err)) != LM_OK)
        return status;
    if (*poison_name != '\0' && strcmp(poison_name, "q") != 0 && strcmp(poison_name, "k") != 0)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.poison must be q or k", kcase->id);
    const bool bf16 = strcmp(kcase->dtype, "bf16") == 0;
    const size_t C = chunk < 1 ? 1 : (size_t)chunk < L ? (size_t)chunk : L; /* the kernel's */
    /* q, k {H, L, dk}; v and y {H, L, dv}; the gate; s0 and s_final {H, dk, dv}; z0 and
     * z_final {H, dk}; per thread, the chunk's workspace (state, C x dk tiles, C x C scores,
     * lm_linear_chunk_work_floats); the float64 reference's state and feature rows */
    lm_budget budget = lm_kcase_budget(kcase);
    lm_budget_add(&budget, LM_PRODUCT(H, L, dk), 2 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(H, L, dv), 2 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, gate_kind == LM_LINEAR_GATE_CHANNEL ? LM_PRODUCT(H, L, dk)
                                                               : LM_PRODUCT(H, L),
                  LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(H, dk, dv), 2 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(H, dk), 2 * LM_KCASE_VALUE_BYTES);
    lm_kcase_budget_per_thread(&budget, lm_size_add(LM_PRODUCT(dk + 16, dv + 16),
                                                    LM_PRODUCT(C + 16, 4 * dk + C + 96)),
                               sizeof(float));
    lm_budget_add(&budget, LM_PRODUCT(dk, dv + 3), sizeof(double));
    if (bf16) { /* q, k, v in bfloat16 too; the widened chunk and state per thread */
        lm_budget_add(&budget, LM_PRODUCT(H, L, 2 * dk + dv), sizeof(uint16_t));
        lm_kcase_budget_per_thread(&budget, LM_PRODUCT(C + 16, 2 * dk + dv + 48),
                                   sizeof(float));
    }
    if ((status = lm_kcase_reserve(kcase, &budget, err)) != LM_OK)
        return status;
    const double r = 1.0 / sqrt((double)dk);
    const size_t gn = gate_kind == LM_LINEAR_GATE_CHANNEL ? H * L * dk : H * L;
    double *q = lm_kcase_normal(kcase, rng, H * L * dk);
    double *k = lm_kcase_normal(kcase, rng, H * L * dk);
    double *v = lm_kcase_normal(kcase, rng, H * L * dv);
    double *g = lm_kcase_uniform(kcase, rng, 0.8, 1.0, gn);
    double *s0 = lm_kcase_normal(kcase, rng, H * dk * dv);
    double *z0 = lm_kcase_uniform(kcase, rng, 0.5, 2.0, H * dk);
    if (!q || !k || !v || !g || !s0 || !z0)
        return no_memory(kcase, err);
    for (size_t i = 0; i < H * L * dk; i++) {
        q[i] *= r;
        k[i] *= r;
    }
    for (size_t i = 0; i < H * dk * dv; i++)
        s0[i] *= 0.5;
    if (gate_value >= 0.0)
        g[0] = gate_value;
    if (strcmp(poison_name, "q") == 0 || strcmp(poison_name, "k") == 0)
        (poison_name[0] == 'q' ? q : k)[0] = (double)NAN;
    const size_t ny = H * L * dv, ns = H * dk * dv, nz = H * dk;
    if ((status = lm_kcase_output(kcase, ny + ns + nz, out, err)) != LM_OK)
        return status;
    if (ops == NULL) {
        lm_linear_f64 p = {H, L, dk, dv, feature, normalize, gate_kind, q, k, v,
                           gate_kind ? g : NULL, use_s0 ? s0 : NULL, use_s0 ? z0 : NULL,
                           out->values, out->values + ny, out->values + ny + ns};
        return lm_linear_gated_f64_ref(&p, err);
    }
    float *res = lm_kcase_alloc(kcase, ny + ns + nz, sizeof(float));
    lm_linear_f32 p = {H, L, dk, dv, feature, normalize, gate_kind,
                       to_f32(kcase, q, H * L * dk), to_f32(kcase, k, H * L * dk),
                       to_f32(kcase, v, H * L * dv), gate_kind ? to_f32(kcase, g, gn) : NULL,
                       use_s0 ? to_f32(kcase, s0, ns) : NULL,
                       use_s0 ? to_f32(kcase, z0, nz) : NULL, res,
                       res ? res + ny : NULL, res ? res + ny + ns : NULL, NULL, LM_KV_F32,
                       NULL, NULL, NULL};
    if (!res || !p.q || !p.k || !p.v || (gate_kind && !p.gate) || (use_s0 && (!p.s0 || !p.z0)))
        return no_memory(kcase, err);
    if (bf16 && (status = linear_to_bf16(kcase, &p, err)) != LM_OK)
        return status;
    const bool chunked = chunk >= 0;
    status = lm_linear_attention_f32(&p, chunked, chunked ? (size_t)chunk : 0, ops, err);
    return lm_kcase_store_f32(status, out->values, res, out->count);
}

/* ---- ssm_ssd (Mamba-2) -------------------------------------------------------------------
 * Recipe, shape {batch B, length L, heads H, head_dim P, groups G, state N}, r = 1/sqrt(N):
 *   x = standard_normal((B, L, H, P)); dt_raw = standard_normal((B, L, H));
 *   dt_bias = uniform(-4, -1, H); a = uniform(-8, 0, H) with a[0] = 0 (a mode that does not
 *   decay); b = standard_normal((B, L, G, N)) * r; c = standard_normal((B, L, G, N)) * r;
 *   skip = standard_normal(H); h0 = standard_normal((B, H, P, N)).
 * Options: extras (boolean: use dt_bias, skip and h0), chunk (integer: the chunked form;
 * absent: recurrent), decode (boolean: run the sequence one decode step at a time, state
 * in place), positive_a (boolean: a[H-1] = 0.5, a bad-input case).
 * Output: y {B, L, H, P} then h_final {B, H, P, N}. */
static lm_status run_ssd(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops, lm_kout *out,
                         lm_error *err)
{
    static const char *const dtypes[] = {"f32", "bf16", "f64", NULL};
    static const char *const options[] = {"extras", "chunk", "decode", "positive_a", NULL};
    size_t B, L, H, P, G, N;
    bool extras, decode, positive;
    long long chunk;
    lm_status status;
    if ((status = lm_kcase_dtype_in(kcase, dtypes, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "batch", &B, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "length", &L, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "heads", &H, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "head_dim", &P, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "groups", &G, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "state", &N, err)) != LM_OK ||
        (status = lm_kcase_opt_bool(kcase, "extras", false, &extras, err)) != LM_OK ||
        (status = lm_kcase_opt_bool(kcase, "decode", false, &decode, err)) != LM_OK ||
        (status = lm_kcase_opt_bool(kcase, "positive_a", false, &positive, err)) != LM_OK ||
        (status = lm_kcase_opt_int(kcase, "chunk", -1, &chunk, err)) != LM_OK)
        return status;
    if (chunk < -1)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.chunk must be >= 0", kcase->id);
    /* the kernel's own rule; G > H always, so that groups are bounded before anything is
     * allocated, and every case of a contract being loaded (lm_kcase_probe) */
    if (G > H || (kcase->probing && H % G != 0))
        return lm_fail(err, LM_ERR_SHAPE, "heads (%zu) must be a multiple of groups (%zu)", H,
                       G);
    const size_t C = chunk < 1 ? 1 : (size_t)chunk < L ? (size_t)chunk : L; /* the kernel's */
    const size_t T = C >= 256 ? C : 256; /* tokens of a time block, at most */
    /* x and y {B, L, H, P}; dt_raw {B, L, H}; dt_bias, a, skip {H}; b, c {B, L, G, N}; h0
     * and h_final {B, H, P, N}; one decode step's x, y, dt, b, c; the drivers' states
     * {B H, N, P}, chunk scores {B G, chunks, C, C} and per-thread blocks of T tokens; the
     * float64 reference's state {P, N} */
    lm_budget budget = lm_kcase_budget(kcase);
    lm_budget_add(&budget, LM_PRODUCT(B, L, H, P), 2 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(B, L, H), LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, H, 3 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(B, L, G, N), 2 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(B, H, P, N), 2 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(B, H, P + 1), 2 * sizeof(float));
    lm_budget_add(&budget, LM_PRODUCT(B, G, N), 2 * sizeof(float));
    lm_budget_add(&budget, LM_PRODUCT(B, H, lm_size_add(LM_PRODUCT(N, P), 16)), sizeof(float));
    lm_budget_add(&budget, LM_PRODUCT(B, G, L + C, C), sizeof(float));
    lm_kcase_budget_per_thread(&budget, LM_PRODUCT(T + 16, 2 * N + 4 * P + C + 128),
                               sizeof(float));
    lm_budget_add(&budget, LM_PRODUCT(P, N), sizeof(double));
    const bool bf16 = strcmp(kcase->dtype, "bf16") == 0; /* x, b, c in bfloat16 too */
    if (bf16) {
        lm_budget_add(&budget, LM_PRODUCT(B, L, H, P), sizeof(uint16_t));
        lm_budget_add(&budget, LM_PRODUCT(B, L, G, N), 2 * sizeof(uint16_t));
        lm_kcase_budget_per_thread(&budget, LM_PRODUCT(T + 16, 2 * N + 2 * P + 2 * C + 64),
                                   sizeof(float));
    }
    if ((status = lm_kcase_reserve(kcase, &budget, err)) != LM_OK)
        return status;
    const double r = 1.0 / sqrt((double)N);
    const size_t nx = B * L * H * P, nbc = B * L * G * N, ns = B * H * P * N;
    double *x = lm_kcase_normal(kcase, rng, nx);
    double *dt = lm_kcase_normal(kcase, rng, B * L * H);
    double *bias = lm_kcase_uniform(kcase, rng, -4.0, -1.0, H);
    double *a = lm_kcase_uniform(kcase, rng, -8.0, 0.0, H);
    double *b = lm_kcase_normal(kcase, rng, nbc);
    double *c = lm_kcase_normal(kcase, rng, nbc);
    double *skip = lm_kcase_normal(kcase, rng, H);
    double *h0 = lm_kcase_normal(kcase, rng, ns);
    if (!x || !dt || !bias || !a || !b || !c || !skip || !h0)
        return no_memory(kcase, err);
    a[0] = 0.0;
    if (positive)
        a[H - 1] = 0.5;
    for (size_t i = 0; i < nbc; i++) {
        b[i] *= r;
        c[i] *= r;
    }
    if ((status = lm_kcase_output(kcase, nx + ns, out, err)) != LM_OK)
        return status;
    if (ops == NULL) {
        lm_ssm_ssd_f64 p = {B, L, H, P, G, N, x, dt, extras ? bias : NULL, a, b, c,
                            extras ? skip : NULL, extras ? h0 : NULL, out->values,
                            out->values + nx};
        return lm_ssm_ssd_f64_ref(&p, err);
    }
    float *res = lm_kcase_alloc(kcase, nx + ns, sizeof(float));
    lm_ssm_ssd_f32 p = {.batch = B, .length = L, .heads = H, .head_dim = P, .groups = G,
                        .state = N, .x = to_f32(kcase, x, nx),
                        .dt_raw = to_f32(kcase, dt, B * L * H),
                        .dt_bias = extras ? to_f32(kcase, bias, H) : NULL,
                        .a = to_f32(kcase, a, H), .b = to_f32(kcase, b, nbc),
                        .c = to_f32(kcase, c, nbc), .skip = extras ? to_f32(kcase, skip, H) : NULL,
                        .h0 = extras ? to_f32(kcase, h0, ns) : NULL, .y = res,
                        .h_final = res ? res + nx : NULL};
    if (!res || !p.x || !p.dt_raw || !p.a || !p.b || !p.c || (extras && (!p.dt_bias ||
        !p.skip || !p.h0)))
        return no_memory(kcase, err);
    if (bf16) { /* x, b and c rounded to bfloat16 (float32 first); the rest stays float32 */
        p.dtype = LM_KV_BF16;
        if ((p.x16 = to_bf16_copy(kcase, p.x, nx)) == NULL ||
            (p.b16 = to_bf16_copy(kcase, p.b, nbc)) == NULL ||
            (p.c16 = to_bf16_copy(kcase, p.c, nbc)) == NULL)
            return no_memory(kcase, err);
        p.x = p.b = p.c = NULL;
    }
    if (!decode) {
        const bool chunked = chunk >= 0;
        status = lm_ssm_ssd_scan_f32(&p, chunked, chunked ? (size_t)chunk : 0, ops, err);
    } else if (bf16) { /* the step is float32 only: the operator's own refusal */
        p.length = 1, p.h_final = res + nx, p.h0 = p.h_final;
        status = lm_ssm_ssd_decode_f32(&p, ops, err);
    } else {
        /* one token at a time; the state lives in res + nx */
        float *state = res + nx;
        if (p.h0 != NULL)
            memcpy(state, p.h0, ns * sizeof(float));
        float *xt = lm_kcase_alloc(kcase, B * H * P, sizeof(float));
        float *dtt = lm_kcase_alloc(kcase, B * H, sizeof(float));
        float *bt = lm_kcase_alloc(kcase, B * G * N, sizeof(float));
        float *ct = lm_kcase_alloc(kcase, B * G * N, sizeof(float));
        float *yt = lm_kcase_alloc(kcase, B * H * P, sizeof(float));
        if (!xt || !dtt || !bt || !ct || !yt)
            return no_memory(kcase, err);
        for (size_t t = 0; t < L && status == LM_OK; t++) {
            for (size_t bi = 0; bi < B; bi++) {
                memcpy(xt + bi * H * P, p.x + (bi * L + t) * H * P, H * P * sizeof(float));
                memcpy(dtt + bi * H, p.dt_raw + (bi * L + t) * H, H * sizeof(float));
                memcpy(bt + bi * G * N, p.b + (bi * L + t) * G * N, G * N * sizeof(float));
                memcpy(ct + bi * G * N, p.c + (bi * L + t) * G * N, G * N * sizeof(float));
            }
            lm_ssm_ssd_f32 step = {.batch = B, .length = 1, .heads = H, .head_dim = P,
                                   .groups = G, .state = N, .x = xt, .dt_raw = dtt,
                                   .dt_bias = p.dt_bias, .a = p.a, .b = bt, .c = ct,
                                   .skip = p.skip, .h0 = state, .y = yt, .h_final = state};
            status = lm_ssm_ssd_decode_f32(&step, ops, err);
            for (size_t bi = 0; bi < B; bi++)
                memcpy(res + (bi * L + t) * H * P, yt + bi * H * P, H * P * sizeof(float));
        }
    }
    return lm_kcase_store_f32(status, out->values, res, out->count);
}

/* ---- delta_rule ----------------------------------------------------------------------------
 * Recipe, shape {heads H, length L, d_key dk, d_value dv}, r = 1 / sqrt(dk):
 *   q = standard_normal((H, L, dk)) * r; k = standard_normal((H, L, dk));
 *   v = standard_normal((H, L, dv)); beta = uniform(0, 1, (H, L)) with beta[0, 0] = 1;
 *   gate = uniform(0.7, 1.0, (H, L)); s0 = standard_normal((H, dv, dk)) * 0.5.
 * Options: gated (boolean: use gate), s0 (boolean), chunk (integer: the chunked WY form;
 * absent: recurrent), zero_key (boolean: k[0, L-1, :] = 0, a bad-input case), nan_key
 * (boolean: k[0, 0, 0] = NaN, a bad-input case). dtype f32: everything rounded to float32;
 * bf16: q, k, v rounded to float32 then bfloat16 (the operator's bf16 inputs), beta, gate
 * and s0 to float32. Output: y {H, L, dv} then s_final {H, dv, dk}. */
/* x[0:n] = x rounded to float32, then to bfloat16 (as the fast path stores it). */
static void round_to_bf16(double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (double)lm_f32_from_bf16(lm_bf16_from_f32((float)x[i]));
}

/* p's float32 q, k {nq} and v {nv} as case-owned bfloat16 copies, dtype BF16. */
static lm_status delta_to_bf16(lm_kcase *kcase, lm_delta_seq_f32 *p, size_t nq, size_t nv,
                               lm_error *err)
{
    if ((p->q16 = to_bf16_copy(kcase, p->q, nq)) == NULL ||
        (p->k16 = to_bf16_copy(kcase, p->k, nq)) == NULL ||
        (p->v16 = to_bf16_copy(kcase, p->v, nv)) == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for bfloat16 copies", kcase->id);
    p->dtype = LM_KV_BF16;
    return LM_OK;
}

static lm_status run_delta(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops, lm_kout *out,
                           lm_error *err)
{
    static const char *const dtypes[] = {"f32", "bf16", "f64", NULL};
    static const char *const options[] = {"gated", "s0", "chunk", "zero_key", "nan_key", NULL};
    size_t H, L, dk, dv;
    bool gated, use_s0, zero_key, nan_key;
    long long chunk;
    lm_status status;
    if ((status = lm_kcase_dtype_in(kcase, dtypes, err)) != LM_OK ||
        (status = lm_kcase_known_options(kcase, options, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "heads", &H, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "length", &L, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "d_key", &dk, err)) != LM_OK ||
        (status = lm_kcase_size(kcase, "d_value", &dv, err)) != LM_OK ||
        (status = lm_kcase_opt_bool(kcase, "gated", false, &gated, err)) != LM_OK ||
        (status = lm_kcase_opt_bool(kcase, "s0", false, &use_s0, err)) != LM_OK ||
        (status = lm_kcase_opt_bool(kcase, "zero_key", false, &zero_key, err)) != LM_OK ||
        (status = lm_kcase_opt_bool(kcase, "nan_key", false, &nan_key, err)) != LM_OK ||
        (status = lm_kcase_opt_int(kcase, "chunk", -1, &chunk, err)) != LM_OK)
        return status;
    if (chunk < -1)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: options.chunk must be >= 0", kcase->id);
    const size_t C = chunk < 1 ? 1 : (size_t)chunk < L ? (size_t)chunk : L; /* the kernel's */
    /* q, k {H, L, dk}; v and y {H, L, dv}; beta, gate {H, L}; s0 and s_final {H, dv, dk};
     * per thread, the WY chunk's workspace (lm_delta_work_floats: state, C x dk and C x C
     * tiles); the float64 reference's state and key */
    lm_budget budget = lm_kcase_budget(kcase);
    lm_budget_add(&budget, LM_PRODUCT(H, L, dk), 2 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(H, L, dv), 2 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(H, L), 2 * LM_KCASE_VALUE_BYTES);
    lm_budget_add(&budget, LM_PRODUCT(H, dk, dv), 2 * LM_KCASE_VALUE_BYTES);
    lm_kcase_budget_per_thread(&budget, lm_size_add(LM_PRODUCT(dk + 16, dv + 16),
                                                    LM_PRODUCT(C + 16, 2 * dk + 3 * C + 2 * dv + 96)),
                               sizeof(float));
    lm_budget_add(&budget, LM_PRODUCT(dk, dv + 1), sizeof(double));
    const bool bf16 = strcmp(kcase->dtype, "bf16") == 0;
    if (bf16) { /* the bfloat16 q, k, v; per thread, the chunk's widened rows and pairs */
        lm_budget_add(&budget, LM_PRODUCT(H, L, 2 * dk + dv), sizeof(uint16_t));
        lm_kcase_budget_per_thread(&budget, LM_PRODUCT(C + 16, 3 * dk + 2 * dv + C / 2 + 56),
                                   sizeof(float));
    }
    if ((status = lm_kcase_reserve(kcase, &budget, err)) != LM_OK)
        return status;
    const double r = 1.0 / sqrt((double)dk);
    const size_t nq = H * L * dk, nv = H * L * dv, ns = H * dv * dk;
    double *q = lm_kcase_normal(kcase, rng, nq);
    double *k = lm_kcase_normal(kcase, rng, nq);
    double *v = lm_kcase_normal(kcase, rng, nv);
    double *beta = lm_kcase_uniform(kcase, rng, 0.0, 1.0, H * L);
    double *g = lm_kcase_uniform(kcase, rng, 0.7, 1.0, H * L);
    double *s0 = lm_kcase_normal(kcase, rng, ns);
    if (!q || !k || !v || !beta || !g || !s0)
        return no_memory(kcase, err);
    for (size_t i = 0; i < nq; i++)
        q[i] *= r;
    for (size_t i = 0; i < ns; i++)
        s0[i] *= 0.5;
    beta[0] = 1.0;
    if (zero_key)
        for (size_t c = 0; c < dk; c++)
            k[(L - 1) * dk + c] = 0.0;
    if (nan_key)
        k[0] = (double)NAN;
    if ((status = lm_kcase_output(kcase, nv + ns, out, err)) != LM_OK)
        return status;
    if (ops == NULL && bf16) { /* the reference reads the rounded inputs */
        round_to_bf16(q, nq);
        round_to_bf16(k, nq);
        round_to_bf16(v, nv);
    }
    if (ops == NULL) {
        lm_delta_seq_f64 p = {H, L, dk, dv, q, k, v, beta, gated ? g : NULL,
                              use_s0 ? s0 : NULL, out->values, out->values + nv};
        return lm_delta_gated_f64_ref(&p, err);
    }
    float *res = lm_kcase_alloc(kcase, nv + ns, sizeof(float));
    lm_delta_seq_f32 p = {H, L, dk, dv, to_f32(kcase, q, nq), to_f32(kcase, k, nq),
                          to_f32(kcase, v, nv), to_f32(kcase, beta, H * L),
                          gated ? to_f32(kcase, g, H * L) : NULL,
                          use_s0 ? to_f32(kcase, s0, ns) : NULL, res, res ? res + nv : NULL,
                          LM_KV_F32, NULL, NULL, NULL};
    if (!res || !p.q || !p.k || !p.v || !p.beta || (gated && !p.gate) || (use_s0 && !p.s0))
        return no_memory(kcase, err);
    if (bf16 && (status = delta_to_bf16(kcase, &p, nq, nv, err)) != LM_OK)
        return status;
    const bool chunked = chunk >= 0;
    status = lm_delta_rule_f32(&p, chunked, chunked ? (size_t)chunk : 0, ops, err);
    return lm_kcase_store_f32(status, out->values, res, out->count);
}

/* ---- the words of the split runners -------------------------------------------------------
 * linear_attention, ssm_ssd and delta_rule were one contract name each, the form chosen by
 * options (chunk, decode); each form is now its own word (the one the sweep and the dispatch
 * table use) and the old name is an alias resolved by the same options (registry.c). A case
 * that names a word itself must have that word's options. */

/* True when options.<key> is present and not false. */
static bool option_set(const lm_kcase *kcase, const char *key)
{
    const json_t *options = json_object_get(kcase->json, "options");
    const json_t *value = json_is_object(options) ? json_object_get(options, key) : NULL;
    return value != NULL && !json_is_false(value) && !json_is_null(value);
}

/* LM_ERR_SCHEMA unless options.chunk (and options.decode) are as the word needs. */
static lm_status require_form(const lm_kcase *kcase, const char *word, bool chunk, bool decode,
                              lm_error *err)
{
    if (strcmp(kcase->kernel, word) != 0) /* an old name: resolved by these options */
        return LM_OK;
    if (option_set(kcase, "chunk") != chunk || option_set(kcase, "decode") != decode)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: kernel %s %s options.chunk%s", kcase->id,
                       word, chunk ? "needs" : "takes no", decode ? " and needs options.decode"
                                                             : "");
    return LM_OK;
}

#define LM_SPLIT_RUNNER(word, runner, chunk, decode)                                          \
    lm_status lm_kcase_##word(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops, lm_kout *out,   \
                              lm_error *err)                                                   \
    {                                                                                          \
        lm_status status = require_form(kcase, #word, chunk, decode, err);                     \
        return status != LM_OK ? status : runner(kcase, rng, ops, out, err);                   \
    }
LM_SPLIT_RUNNER(linear_recurrent, run_linear, false, false)
LM_SPLIT_RUNNER(linear_chunked, run_linear, true, false)
LM_SPLIT_RUNNER(ssd_recurrent, run_ssd, false, false)
LM_SPLIT_RUNNER(ssd_chunked, run_ssd, true, false)
LM_SPLIT_RUNNER(ssd_step, run_ssd, false, true)
LM_SPLIT_RUNNER(delta_recurrent, run_delta, false, false)
LM_SPLIT_RUNNER(delta_chunked, run_delta, true, false)

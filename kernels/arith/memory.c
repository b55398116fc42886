/* Exact cache arithmetic, the decode FLOP scenario, and the crossovers solved from them. */
#include "arith.h"
#include "lm_validate.h"

#include <math.h>

/* *product = product of factors[0..count), or LM_ERR_NUMERIC when it leaves int64. */
static lm_status checked_product(const long long *factors, int count, const char *what,
                                 long long *product, lm_error *err)
{
    long long result = 1;
    for (int i = 0; i < count; i++)
        if (__builtin_mul_overflow(result, factors[i], &result))
            return lm_fail(err, LM_ERR_NUMERIC, "%s overflows a 64-bit byte count", what);
    *product = result;
    return LM_OK;
}

static lm_status validate_kv(const lm_kv_cache_geometry *g, lm_error *err)
{
    lm_status status;
    if ((status = lm_require_positive_i64("layers", g->layers, err)) != LM_OK ||
        (status = lm_require_positive_i64("kv_heads", g->kv_heads, err)) != LM_OK ||
        (status = lm_require_positive_i64("head_width", g->head_width, err)) != LM_OK ||
        (status = lm_require_positive_i64("bytes_per_value", g->bytes_per_value, err)) != LM_OK)
        return status;
    return LM_OK;
}

lm_status lm_arith_kv_bytes_per_token(const lm_kv_cache_geometry *geometry, long long *bytes,
                                      lm_error *err)
{
    lm_status status = validate_kv(geometry, err);
    if (status != LM_OK)
        return status;
    const long long factors[] = {2, geometry->layers, geometry->kv_heads, geometry->head_width,
                                 geometry->bytes_per_value};
    return checked_product(factors, 5, "KV bytes per token", bytes, err);
}

lm_status lm_arith_kv_total_bytes(const lm_kv_cache_geometry *geometry,
                                  long long context_tokens, long long batch, long long *bytes,
                                  lm_error *err)
{
    long long per_token;
    lm_status status = lm_arith_kv_bytes_per_token(geometry, &per_token, err);
    if (status != LM_OK)
        return status;
    if ((status = lm_require_non_negative_i64("context_tokens", context_tokens, err)) != LM_OK ||
        (status = lm_require_positive_i64("batch_size", batch, err)) != LM_OK)
        return status;
    const long long factors[] = {batch, context_tokens, per_token};
    return checked_product(factors, 3, "KV cache size", bytes, err);
}

static lm_status validate_conv(long long conv_width, long long conv_channels, lm_error *err)
{
    lm_status status;
    if ((status = lm_require_non_negative_i64("conv_width", conv_width, err)) != LM_OK ||
        (status = lm_require_non_negative_i64("conv_channels", conv_channels, err)) != LM_OK)
        return status;
    if ((conv_width == 0) != (conv_channels == 0))
        return lm_fail(err, LM_ERR_ARG,
                       "conv_width and conv_channels must both be zero or both be positive "
                       "(got %lld and %lld)", conv_width, conv_channels);
    return LM_OK;
}

lm_status lm_arith_ssm_state_bytes(const lm_ssm_state_geometry *geometry, long long batch,
                                   lm_ssm_state_bytes *out, lm_error *err)
{
    const lm_ssm_state_geometry *g = geometry;
    lm_status status;
    if ((status = lm_require_positive_i64("layers", g->layers, err)) != LM_OK ||
        (status = lm_require_positive_i64("inner_width", g->inner_width, err)) != LM_OK ||
        (status = lm_require_positive_i64("state_width", g->state_width, err)) != LM_OK ||
        (status = lm_require_positive_i64("bytes_per_value", g->bytes_per_value, err)) != LM_OK ||
        (status = validate_conv(g->conv_width, g->conv_channels, err)) != LM_OK ||
        (status = lm_require_positive_i64("batch_size", batch, err)) != LM_OK)
        return status;
    const long long ssm[] = {batch, g->layers, g->inner_width, g->state_width,
                             g->bytes_per_value};
    const long long conv[] = {batch, g->layers, g->conv_channels, g->conv_width,
                              g->bytes_per_value};
    lm_ssm_state_bytes result;
    if ((status = checked_product(ssm, 5, "SSM state size", &result.ssm_bytes, err)) != LM_OK ||
        (status = checked_product(conv, 5, "convolution cache size", &result.conv_bytes, err)) !=
            LM_OK)
        return status;
    if (__builtin_add_overflow(result.ssm_bytes, result.conv_bytes, &result.total_bytes))
        return lm_fail(err, LM_ERR_NUMERIC, "recurrent cache size overflows a 64-bit byte count");
    *out = result;
    return LM_OK;
}

lm_status lm_arith_hybrid_memory(const lm_hybrid_config *config, lm_hybrid_memory *out,
                                 lm_error *err)
{
    const lm_hybrid_config *c = config;
    lm_status status;
    if ((status = lm_require_positive_i64("total_layers", c->total_layers, err)) != LM_OK)
        return status;
    if (c->attention_layers < 0 || c->attention_layers > c->total_layers)
        return lm_fail(err, LM_ERR_ARG,
                       "attention_layers must lie in [0, total_layers] (got %lld of %lld)",
                       c->attention_layers, c->total_layers);
    if ((status = lm_require_non_negative_i64("context_tokens", c->context_tokens, err)) != LM_OK ||
        (status = lm_require_positive_i64("inner_width", c->inner_width, err)) != LM_OK ||
        (status = lm_require_positive_i64("state_width", c->state_width, err)) != LM_OK ||
        (status = validate_conv(c->conv_width, c->conv_channels, err)) != LM_OK ||
        (status = lm_require_positive_i64("kv_heads", c->kv_heads, err)) != LM_OK ||
        (status = lm_require_positive_i64("head_width", c->head_width, err)) != LM_OK ||
        (status = lm_require_positive_i64("bytes_per_value", c->bytes_per_value, err)) != LM_OK)
        return status;

    lm_hybrid_memory m = {.total_layers = c->total_layers,
                          .attention_layers = c->attention_layers,
                          .ssm_layers = c->total_layers - c->attention_layers,
                          .context_tokens = c->context_tokens};
    if (m.attention_layers > 0) {
        const lm_kv_cache_geometry kv = {c->attention_layers, c->kv_heads, c->head_width,
                                         c->bytes_per_value};
        if ((status = lm_arith_kv_total_bytes(&kv, c->context_tokens, 1, &m.kv_bytes, err)) !=
            LM_OK)
            return status;
    }
    if (m.ssm_layers > 0) {
        const lm_ssm_state_geometry ssm = {m.ssm_layers,   c->inner_width,   c->state_width,
                                           c->conv_width,  c->conv_channels, c->bytes_per_value};
        lm_ssm_state_bytes bytes;
        if ((status = lm_arith_ssm_state_bytes(&ssm, 1, &bytes, err)) != LM_OK)
            return status;
        m.ssm_bytes = bytes.ssm_bytes;
        m.conv_bytes = bytes.conv_bytes;
        m.recurrent_bytes = bytes.total_bytes;
    }
    if (__builtin_add_overflow(m.kv_bytes, m.recurrent_bytes, &m.total_bytes))
        return lm_fail(err, LM_ERR_NUMERIC, "hybrid cache size overflows a 64-bit byte count");
    *out = m;
    return LM_OK;
}

lm_status lm_arith_memory_crossover(long long kv_bytes_per_token, long long recurrent_bytes,
                                    lm_memory_crossover *out, lm_error *err)
{
    lm_status status = lm_require_positive_i64("kv_bytes_per_token", kv_bytes_per_token, err);
    if (status == LM_OK)
        status = lm_require_positive_i64("recurrent_bytes", recurrent_bytes, err);
    if (status != LM_OK)
        return status;
    long long whole = recurrent_bytes / kv_bytes_per_token;     /* floor(r / kv) */
    long long remainder = recurrent_bytes % kv_bytes_per_token;
    out->first_integer_token = remainder == 0 ? whole : whole + 1; /* n * kv >= r */
    out->first_strictly_larger_token = whole + 1;                  /* n * kv > r */
    /* r / kv as Python's int / int: correctly rounded. Below 2^53 both operands convert
     * exactly and one IEEE division rounds once; above, whole + remainder / kv keeps the
     * integer part exact and rounds the fraction. */
    const long long exact_limit = 1LL << 53;
    if (recurrent_bytes <= exact_limit && kv_bytes_per_token <= exact_limit)
        out->tokens_exact = (double)recurrent_bytes / (double)kv_bytes_per_token;
    else
        out->tokens_exact = (double)whole + (double)remainder / (double)kv_bytes_per_token;
    return LM_OK;
}

lm_status lm_arith_decode_flops(long long context_tokens, long long model_width,
                                long long inner_width, long long state_width,
                                lm_decode_flops *out, lm_error *err)
{
    lm_status status;
    if ((status = lm_require_positive_i64("context_tokens", context_tokens, err)) != LM_OK ||
        (status = lm_require_positive_i64("model_width", model_width, err)) != LM_OK ||
        (status = lm_require_positive_i64("inner_width", inner_width, err)) != LM_OK ||
        (status = lm_require_positive_i64("state_width", state_width, err)) != LM_OK)
        return status;
    const long long attention[] = {4, context_tokens, model_width};
    const long long ssm[] = {5, inner_width, state_width};
    lm_decode_flops result = {.context_tokens = context_tokens};
    if ((status = checked_product(attention, 3, "attention FLOP count",
                                  &result.attention_core_flops, err)) != LM_OK ||
        (status = checked_product(ssm, 3, "SSM FLOP count", &result.ssm_core_flops, err)) != LM_OK)
        return status;
    result.ratio = (double)result.attention_core_flops / (double)result.ssm_core_flops;
    *out = result;
    return LM_OK;
}

/* Delta / phi(Delta) - 1 with phi = expm1(Delta a)/a, the exact ZOH input factor. */
static double relative_error(double a, double step)
{
    return step / (expm1(step * a) / a) - 1.0;
}

lm_status lm_arith_delta_b_relative_error(double a, double step, double *error, lm_error *err)
{
    if (!isfinite(a) || a >= 0.0)
        return lm_fail(err, LM_ERR_DOMAIN, "a must be negative and finite, got %g", a);
    if (!isfinite(step) || step <= 0.0)
        return lm_fail(err, LM_ERR_ARG, "step must be positive and finite, got %g", step);
    *error = relative_error(a, step);
    return LM_OK;
}

lm_status lm_arith_delta_b_error_root(double a, double target, double *step, lm_error *err)
{
    if (!isfinite(a) || a >= 0.0)
        return lm_fail(err, LM_ERR_DOMAIN, "a must be negative and finite, got %g", a);
    if (!isfinite(target) || target <= 0.0)
        return lm_fail(err, LM_ERR_ARG, "target must be positive and finite, got %g", target);
    /* The error grows from 0 (Delta -> 0) without bound: bracket, then bisect. */
    double low = 0.0, high = 1.0 / -a;
    for (int i = 0; relative_error(a, high) < target; i++) {
        if (i == 2000 || !isfinite(high))
            return lm_fail(err, LM_ERR_NUMERIC, "no step reaches a relative error of %g", target);
        low = high;
        high *= 2.0;
    }
    for (;;) {
        double middle = low + 0.5 * (high - low);
        if (middle <= low || middle >= high)
            break;
        if (relative_error(a, middle) < target)
            low = middle;
        else
            high = middle;
    }
    /* high is the first representable step whose error reaches the target */
    *step = high;
    return LM_OK;
}

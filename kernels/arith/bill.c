/* The lesson's bill: pairs, KV bytes at any bit width, SSM state, hybrids, the cache of
 * every design at a context length, and the batch-independence of the crossover. Widths
 * that are whole bytes use the memory.c geometry; other widths floor(numbers * bits / 8). */
#include "arith.h"
#include "lm_validate.h"

#include <stdint.h>

/* floor(product of factors * bits / 8) with overflow checks. */
static lm_status bits_to_bytes(const long long *factors, int count, long long bits,
                               const char *what, long long *bytes, lm_error *err)
{
    long long total = bits;
    for (int i = 0; i < count; i++)
        if (__builtin_mul_overflow(total, factors[i], &total))
            return lm_fail(err, LM_ERR_NUMERIC, "%s overflows a 64-bit count", what);
    *bytes = total / 8;
    return LM_OK;
}

lm_status lm_arith_bill_pairs_per_head_per_layer(long long n, long long *pairs, lm_error *err)
{
    if (pairs == NULL)
        return lm_fail(err, LM_ERR_ARG, "pairs must not be NULL");
    lm_status status = lm_require_non_negative_i64("n", n, err);
    if (status != LM_OK)
        return status;
    if (__builtin_mul_overflow(n, n, pairs))
        return lm_fail(err, LM_ERR_NUMERIC, "n * n overflows a 64-bit count");
    return LM_OK;
}

lm_status lm_arith_bill_handshakes(long long n, long long *count, lm_error *err)
{
    if (count == NULL)
        return lm_fail(err, LM_ERR_ARG, "count must not be NULL");
    lm_status status = lm_require_non_negative_i64("n", n, err);
    if (status != LM_OK)
        return status;
    long long product;
    if (n > 0 && __builtin_mul_overflow(n, n - 1, &product))
        return lm_fail(err, LM_ERR_NUMERIC, "n (n - 1) overflows a 64-bit count");
    *count = n > 0 ? product / 2 : 0;
    return LM_OK;
}

static lm_status check_kv(long long layers, long long kv_heads, long long head_dim,
                          long long bits, lm_error *err)
{
    lm_status status;
    if ((status = lm_require_positive_i64("layers", layers, err)) != LM_OK ||
        (status = lm_require_positive_i64("kv_heads", kv_heads, err)) != LM_OK ||
        (status = lm_require_positive_i64("head_dim", head_dim, err)) != LM_OK ||
        (status = lm_require_positive_i64("bits", bits, err)) != LM_OK)
        return status;
    return LM_OK;
}

lm_status lm_arith_bill_kv_bytes_per_token(long long layers, long long kv_heads,
                                           long long head_dim, long long bits,
                                           long long *bytes, lm_error *err)
{
    if (bytes == NULL)
        return lm_fail(err, LM_ERR_ARG, "bytes must not be NULL");
    lm_status status = check_kv(layers, kv_heads, head_dim, bits, err);
    if (status != LM_OK)
        return status;
    if (bits % 8 == 0) {
        lm_kv_cache_geometry g = {layers, kv_heads, head_dim, bits / 8};
        return lm_arith_kv_bytes_per_token(&g, bytes, err);
    }
    const long long factors[] = {2, layers, kv_heads, head_dim};
    return bits_to_bytes(factors, 4, bits, "KV bytes per token", bytes, err);
}

lm_status lm_arith_bill_kv_cache_bytes(long long n, long long layers, long long kv_heads,
                                       long long head_dim, long long bits, long long *bytes,
                                       lm_error *err)
{
    if (bytes == NULL)
        return lm_fail(err, LM_ERR_ARG, "bytes must not be NULL");
    lm_status status = check_kv(layers, kv_heads, head_dim, bits, err);
    if (status == LM_OK)
        status = lm_require_non_negative_i64("n", n, err);
    if (status != LM_OK)
        return status;
    if (bits % 8 == 0) {
        lm_kv_cache_geometry g = {layers, kv_heads, head_dim, bits / 8};
        return lm_arith_kv_total_bytes(&g, n, 1, bytes, err);
    }
    const long long factors[] = {n, 2, layers, kv_heads, head_dim};
    return bits_to_bytes(factors, 5, bits, "the KV cache", bytes, err);
}

lm_status lm_arith_bill_context_cost(long long n, long long layers, long long kv_heads,
                                     long long head_dim, long long bits, long long *pairs,
                                     long long *kv_bytes, lm_error *err)
{
    lm_status status = lm_arith_bill_pairs_per_head_per_layer(n, pairs, err);
    if (status != LM_OK)
        return status;
    return lm_arith_bill_kv_cache_bytes(n, layers, kv_heads, head_dim, bits, kv_bytes, err);
}

lm_status lm_arith_bill_ssm_state_bytes(long long channels, long long state_size,
                                        long long bits, long long *bytes, lm_error *err)
{
    if (bytes == NULL)
        return lm_fail(err, LM_ERR_ARG, "bytes must not be NULL");
    lm_status status;
    if ((status = lm_require_positive_i64("channels", channels, err)) != LM_OK ||
        (status = lm_require_positive_i64("state_size", state_size, err)) != LM_OK ||
        (status = lm_require_positive_i64("bits", bits, err)) != LM_OK)
        return status;
    if (bits % 8 == 0) {
        lm_ssm_state_geometry g = {1, channels, state_size, 0, 0, bits / 8};
        lm_ssm_state_bytes out;
        status = lm_arith_ssm_state_bytes(&g, 1, &out, err);
        if (status == LM_OK)
            *bytes = out.ssm_bytes;
        return status;
    }
    const long long factors[] = {channels, state_size};
    return bits_to_bytes(factors, 2, bits, "the SSM state", bytes, err);
}

lm_status lm_arith_bill_hybrid_cache_bytes(long long context, long long layers,
                                           long long attention_layers, long long kv_heads,
                                           long long head_dim, long long channels,
                                           long long state_size, long long bits,
                                           long long *bytes, lm_error *err)
{
    if (bytes == NULL)
        return lm_fail(err, LM_ERR_ARG, "bytes must not be NULL");
    lm_status status;
    if ((status = lm_require_positive_i64("layers", layers, err)) != LM_OK ||
        (status = lm_require_non_negative_i64("context", context, err)) != LM_OK)
        return status;
    if (attention_layers < 0 || attention_layers > layers)
        return lm_fail(err, LM_ERR_ARG, "attention_layers must lie in [0, layers], got %lld",
                       attention_layers);
    long long per_token, state, attention, recurrent;
    if ((status = lm_arith_bill_kv_bytes_per_token(1, kv_heads, head_dim, bits, &per_token,
                                                   err)) != LM_OK ||
        (status = lm_arith_bill_ssm_state_bytes(channels, state_size, bits, &state, err)) !=
            LM_OK)
        return status;
    if (__builtin_mul_overflow(attention_layers, context, &attention) ||
        __builtin_mul_overflow(attention, per_token, &attention) ||
        __builtin_mul_overflow(layers - attention_layers, state, &recurrent) ||
        __builtin_add_overflow(attention, recurrent, bytes))
        return lm_fail(err, LM_ERR_NUMERIC, "the hybrid cache overflows a 64-bit count");
    return LM_OK;
}

static const char *const method_labels[LM_CACHE_METHOD_COUNT] = {
    "multi-head (32 KV heads)", "grouped-query (8 KV heads)", "grouped-query, 4-bit",
    "latent (576 per layer)",   "sliding window 4k",          "hybrid, 1 attention in 8",
    "state-space",
};
static const char *const method_keys[LM_CACHE_METHOD_COUNT] = {
    "multi_head",     "grouped_query", "grouped_query_4bit", "latent",
    "sliding_window", "hybrid",        "state_space",
};

const char *lm_arith_cache_method_label(lm_cache_method method)
{
    return (unsigned)method < LM_CACHE_METHOD_COUNT ? method_labels[method] : NULL;
}

const char *lm_arith_cache_method_key(lm_cache_method method)
{
    return (unsigned)method < LM_CACHE_METHOD_COUNT ? method_keys[method] : NULL;
}

lm_status lm_arith_cache_bytes_by_method(long long context, double *bytes, lm_error *err)
{
    enum { LAYERS = 32, KV_HEADS = 8, HEAD_DIM = 128, WINDOW = 4096 };
    if (bytes == NULL)
        return lm_fail(err, LM_ERR_ARG, "bytes must not be NULL");
    lm_status status = lm_require_non_negative_i64("context", context, err);
    if (status != LM_OK)
        return status;
    long long mha, gqa, window, hybrid, state;
    if ((status = lm_arith_bill_kv_cache_bytes(context, LAYERS, 32, HEAD_DIM, 16, &mha, err)) !=
            LM_OK ||
        (status = lm_arith_bill_kv_cache_bytes(context, LAYERS, KV_HEADS, HEAD_DIM, 16, &gqa,
                                               err)) != LM_OK ||
        (status = lm_arith_bill_kv_cache_bytes(context < WINDOW ? context : WINDOW, LAYERS,
                                               KV_HEADS, HEAD_DIM, 16, &window, err)) != LM_OK ||
        (status = lm_arith_bill_hybrid_cache_bytes(context, LAYERS, 4, KV_HEADS, HEAD_DIM, 4096,
                                                   16, 16, &hybrid, err)) != LM_OK ||
        (status = lm_arith_bill_ssm_state_bytes(4096, 16, 16, &state, err)) != LM_OK)
        return status;
    /* 2 L H (d 4/8 + 16/8) bytes per token, the lesson's float formula */
    double quantized = (double)(2 * LAYERS * KV_HEADS) * ((double)HEAD_DIM * 4.0 / 8.0 + 16.0 / 8.0);
    long long latent_per_token = LAYERS * (512 + 64) * 16 / 8;
    bytes[LM_CACHE_MULTI_HEAD] = (double)mha;
    bytes[LM_CACHE_GROUPED_QUERY] = (double)gqa;
    bytes[LM_CACHE_GROUPED_QUERY_4BIT] = (double)context * quantized;
    bytes[LM_CACHE_LATENT] = (double)context * (double)latent_per_token;
    bytes[LM_CACHE_SLIDING_WINDOW] = (double)window;
    bytes[LM_CACHE_HYBRID] = (double)hybrid;
    bytes[LM_CACHE_STATE_SPACE] = (double)(LAYERS * state);
    return LM_OK;
}

lm_status lm_arith_crossover_by_batch(const lm_kv_cache_geometry *kv,
                                      const lm_ssm_state_geometry *ssm,
                                      const long long *batches, size_t count,
                                      lm_memory_crossover *crossover, lm_error *err)
{
    if (kv == NULL || ssm == NULL || batches == NULL || crossover == NULL)
        return lm_fail(err, LM_ERR_ARG, "kv, ssm, batches and crossover must not be NULL");
    if (count == 0)
        return lm_fail(err, LM_ERR_SHAPE, "batches must be non-empty");
    for (size_t i = 0; i < count; i++) {
        if (batches[i] <= 0)
            return lm_fail(err, LM_ERR_ARG, "batches[%zu] must be positive, got %lld", i,
                           batches[i]);
        long long kv_batch;
        lm_ssm_state_bytes state;
        lm_status status = lm_arith_kv_total_bytes(kv, 1, batches[i], &kv_batch, err);
        if (status == LM_OK)
            status = lm_arith_ssm_state_bytes(ssm, batches[i], &state, err);
        if (status == LM_OK)
            status = lm_arith_memory_crossover(kv_batch, state.total_bytes, &crossover[i], err);
        if (status != LM_OK)
            return status;
    }
    return LM_OK;
}

/* Rolling-buffer sliding-window decode: a ring of `window` slots per KV head, decoded by
 * the attention family's split-KV driver (the ring is a cache of capacity `window`). */
#include "window.h"

#include <math.h>
#include <string.h>

lm_status lm_window_cache_init(lm_window_cache *cache, size_t window, size_t kv_heads,
                               size_t head_dim, lm_kv_dtype dtype, lm_error *err)
{
    if (cache == NULL)
        return lm_fail(err, LM_ERR_ARG, "cache must not be NULL");
    memset(cache, 0, sizeof *cache);
    if (window == 0)
        return lm_fail(err, LM_ERR_ARG, "window must be at least 1 (w = 0 reads nothing)");
    if (kv_heads == 0 || head_dim == 0)
        return lm_fail(err, LM_ERR_SHAPE, "kv_heads and head_dim must be positive");
    if ((unsigned)dtype >= LM_KV_DTYPE_COUNT)
        return lm_fail(err, LM_ERR_ARG, "dtype must be f32, f16 or bf16");
    cache->window = window;
    cache->kv_heads = kv_heads;
    cache->head_dim = head_dim;
    cache->dtype = dtype;
    const size_t bytes = kv_heads * window * head_dim * lm_kv_dtype_size(dtype);
    cache->k = lm_alloc(bytes);
    cache->v = lm_alloc(bytes);
    if (cache->k == NULL || cache->v == NULL) {
        lm_window_cache_free(cache);
        return lm_fail(err, LM_ERR_NOMEM, "window cache of 2 x %zu bytes", bytes);
    }
    return LM_OK;
}

void lm_window_cache_free(lm_window_cache *cache)
{
    if (cache == NULL)
        return;
    lm_free(cache->k);
    lm_free(cache->v);
    cache->k = cache->v = NULL;
}

size_t lm_window_cache_bytes(const lm_window_cache *cache)
{
    return 2 * cache->kv_heads * cache->window * cache->head_dim *
           lm_kv_dtype_size(cache->dtype);
}

size_t lm_window_cache_held(const lm_window_cache *cache)
{
    return cache->position < cache->window ? (size_t)cache->position : cache->window;
}

lm_status lm_window_cache_append(lm_window_cache *cache, const float *k, const float *v,
                                 lm_error *err)
{
    if (cache == NULL || cache->k == NULL || k == NULL || v == NULL)
        return lm_fail(err, LM_ERR_ARG, "cache, k and v must not be NULL");
    const size_t d = cache->head_dim, row = cache->kv_heads * d;
    for (size_t i = 0; i < row; i++)
        if (!isfinite(k[i]) || !isfinite(v[i]))
            return lm_fail(err, LM_ERR_NONFINITE, "k and v must contain only finite values");
    const size_t slot = (size_t)(cache->position % cache->window);
    const size_t esize = lm_kv_dtype_size(cache->dtype);
    for (size_t g = 0; g < cache->kv_heads; g++) {
        size_t at = (g * cache->window + slot) * d * esize; /* row (g, slot) */
        lm_kv_store(cache->dtype, k + g * d, (char *)cache->k + at, d);
        lm_kv_store(cache->dtype, v + g * d, (char *)cache->v + at, d);
    }
    cache->position++;
    return LM_OK;
}

lm_status lm_window_decode(const lm_window_cache *cache, const float *q, size_t heads,
                           float *o, const lm_ops *ops, lm_error *err)
{
    if (cache == NULL || cache->k == NULL)
        return lm_fail(err, LM_ERR_ARG, "cache must be initialised");
    size_t held = lm_window_cache_held(cache);
    if (held == 0)
        return lm_fail(err, LM_ERR_SHAPE, "the window cache is empty: append a token first");
    lm_attn_decode_args a = {q,      cache->k,         cache->v,        &held,
                             o,      1,                heads,           cache->kv_heads,
                             cache->head_dim, cache->window, cache->dtype};
    return lm_attn_decode(&a, ops, err);
}

/* Sliding-window attention (lesson section 2): the band mask, its pair count, the
 * receptive field of a stack of windowed layers, the reach L(w - 1), and decoding with a
 * rolling buffer of at most w keys and values. Masks are uint8 {n, n}, 1 = scored. */
#ifndef LONGMIX_WINDOW_H
#define LONGMIX_WINDOW_H

#include "lm_core.h"

/* M[i, j] = 1 when 0 <= i - j < w. mask {n, n}. LM_ERR_SHAPE when n is 0, LM_ERR_ARG
 * when w is 0. */
lm_status lm_window_mask(size_t n, size_t w, uint8_t *mask, lm_error *err);

/* pairs_computed: the count of 1s in any mask {rows, cols}. */
lm_status lm_mask_pairs(const uint8_t *mask, size_t rows, size_t cols, uint64_t *pairs,
                        lm_error *err);

/* Pairs a window of w scores over n tokens: sum_i min(i + 1, w), without building the
 * mask (n may be large). Full causal attention is lm_window_pairs(n, n) = n (n + 1) / 2. */
lm_status lm_window_pairs(uint64_t n, uint64_t w, uint64_t *pairs, lm_error *err);

/* heard {n, n}: 1 where token j can influence token i's output after `layers` windowed
 * layers (the 0/1 mask applied `layers` times, starting from the identity; layers = 0
 * gives the identity). LM_ERR_NOMEM when the n x n scratch cannot be allocated. */
lm_status lm_window_receptive_field(size_t n, size_t w, size_t layers, uint8_t *heard,
                                    lm_error *err);

/* reach = layers * (w - 1): how far back information travels. w >= 1. */
lm_status lm_window_reach(uint64_t w, uint64_t layers, uint64_t *reach, lm_error *err);

/* The fewest windowed layers (relay hops) that carry a token `distance` positions back:
 * ceil(distance / (w - 1)); 0 for distance 0. w >= 2. */
lm_status lm_window_relay_hops(uint64_t distance, uint64_t w, uint64_t *hops, lm_error *err);

/* The rolling buffer after tokens 0..last_token were appended: slots {w} receives the
 * token held by each slot (slot = token mod w), or -1 for a slot never written. */
lm_status lm_window_rolling_slots(size_t w, size_t last_token, int64_t *slots, lm_error *err);

/* Token-by-token decoding with a rolling buffer of w keys and values: token t is written
 * to slot t mod w, then its query attends (scaled by 1/sqrt(d)) to the buffer only.
 * The outputs equal lm_attn_sdpa_f64_ref with lm_window_mask(n, w).
 * q {n, d}, k {n, d}, v {n, d_v}, out {n, d_v}; *largest_buffer receives the most
 * entries the buffer ever held (min(n, w)). */
lm_status lm_window_decode_f64_ref(const double *q, const double *k, const double *v,
                                   size_t n, size_t d, size_t d_v, size_t w, double *out,
                                   size_t *largest_buffer, lm_error *err);

/* ---- rolling-buffer decode, fast path (rolling.c) -----------------------------------
 * A ring of `window` slots per KV head: token t lives in slot t mod window, so the cache
 * holds min(position, window) tokens and its memory never grows. Decoding a query over the
 * ring equals the WINDOW-masked prefill row of that token (softmax does not care about the
 * order of its keys; positions are applied to q and k before they are cached). */
#include "../attention/attention.h"

typedef struct lm_window_cache {
    size_t window, kv_heads, head_dim;
    lm_kv_dtype dtype;
    uint64_t position; /* tokens appended so far */
    void *k;           /* {kv_heads, window, head_dim} of dtype */
    void *v;           /* {kv_heads, window, head_dim} of dtype */
} lm_window_cache;

/* Allocates an empty ring. LM_ERR_ARG when window is 0 or dtype unknown, LM_ERR_SHAPE when
 * kv_heads or head_dim is 0, LM_ERR_NOMEM. Free with lm_window_cache_free. */
lm_status lm_window_cache_init(lm_window_cache *cache, size_t window, size_t kv_heads,
                               size_t head_dim, lm_kv_dtype dtype, lm_error *err);
void lm_window_cache_free(lm_window_cache *cache);
/* Bytes the ring holds for K and V: 2 kv_heads window head_dim sizeof(dtype), at any
 * position. */
size_t lm_window_cache_bytes(const lm_window_cache *cache);
/* Tokens the ring holds now: min(position, window). */
size_t lm_window_cache_held(const lm_window_cache *cache);
/* Appends one token: k, v {kv_heads, head_dim} float32, stored as the cache dtype into
 * slot position mod window (overwriting the token that leaves the window).
 * LM_ERR_NONFINITE (the cache stays unchanged) when k or v holds NaN or Inf. */
lm_status lm_window_cache_append(lm_window_cache *cache, const float *k, const float *v,
                                 lm_error *err);
/* One decode step: q {heads, head_dim} reads the held tokens; o {heads, head_dim}.
 * heads must be a multiple of kv_heads (LM_ERR_SHAPE); LM_ERR_SHAPE when nothing was
 * appended yet; LM_ERR_NONFINITE for NaN/Inf in q. ops NULL: the active path. */
lm_status lm_window_decode(const lm_window_cache *cache, const float *q, size_t heads,
                           float *o, const lm_ops *ops, lm_error *err);

#endif

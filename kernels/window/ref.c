/* Float64 references for sliding-window attention and its rolling-buffer decode. */
#include "window.h"

#include "../attention/attention.h"
#include "lm_validate.h"

#include <math.h>
#include <string.h>

/* w >= 1: a window reads at least the token itself. */
static lm_status require_window(uint64_t w, lm_error *err)
{
    if (w == 0)
        return lm_fail(err, LM_ERR_ARG, "w must be positive (a window reads itself)");
    return LM_OK;
}

/* n >= 1 tokens, then a valid window w. */
static lm_status require_tokens_and_window(uint64_t n, uint64_t w, lm_error *err)
{
    if (n == 0)
        return lm_fail(err, LM_ERR_SHAPE, "n must be positive");
    return require_window(w, err);
}

lm_status lm_window_mask(size_t n, size_t w, uint8_t *mask, lm_error *err)
{
    if (mask == NULL)
        return lm_fail(err, LM_ERR_ARG, "mask must not be NULL");
    lm_status status = require_tokens_and_window(n, w, err);
    if (status != LM_OK)
        return status;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            mask[i * n + j] = j <= i && i - j < w; /* never the future, at most w - 1 back */
    return LM_OK;
}

lm_status lm_mask_pairs(const uint8_t *mask, size_t rows, size_t cols, uint64_t *pairs,
                        lm_error *err)
{
    if (mask == NULL || pairs == NULL)
        return lm_fail(err, LM_ERR_ARG, "mask and pairs must not be NULL");
    if (rows == 0 || cols == 0)
        return lm_fail(err, LM_ERR_SHAPE, "mask must be non-empty, got {%zu, %zu}", rows, cols);
    uint64_t count = 0;
    for (size_t i = 0; i < rows * cols; i++)
        count += mask[i] != 0;
    *pairs = count;
    return LM_OK;
}

lm_status lm_window_pairs(uint64_t n, uint64_t w, uint64_t *pairs, lm_error *err)
{
    if (pairs == NULL)
        return lm_fail(err, LM_ERR_ARG, "pairs must not be NULL");
    lm_status status = require_tokens_and_window(n, w, err);
    if (status != LM_OK)
        return status;
    if (n > UINT64_C(4000000000))
        return lm_fail(err, LM_ERR_ARG, "n must be at most 4e9 so the count fits 64 bits");
    uint64_t ramp = w < n ? w : n; /* rows 0..ramp-1 read i + 1 keys */
    *pairs = ramp * (ramp + 1) / 2 + (n - ramp) * w;
    return LM_OK;
}

lm_status lm_window_receptive_field(size_t n, size_t w, size_t layers, uint8_t *heard,
                                    lm_error *err)
{
    if (heard == NULL)
        return lm_fail(err, LM_ERR_ARG, "heard must not be NULL");
    lm_status status = require_tokens_and_window(n, w, err);
    if (status != LM_OK)
        return status;
    uint8_t *step = lm_alloc(n * n), *next = lm_alloc(n * n);
    if (step == NULL || next == NULL) {
        lm_free(step);
        lm_free(next);
        return lm_fail(err, LM_ERR_NOMEM, "receptive field scratch of %zu x %zu", n, n);
    }
    lm_window_mask(n, w, step, NULL);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            heard[i * n + j] = i == j; /* before any layer each token knows only itself */
    for (size_t layer = 0; layer < layers; layer++) {
        /* heard <- min(step @ heard, 1): i hears j if i reads some m that heard j */
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                uint8_t any = 0;
                for (size_t m = 0; m < n && !any; m++)
                    any = step[i * n + m] && heard[m * n + j];
                next[i * n + j] = any;
            }
        memcpy(heard, next, n * n);
    }
    lm_free(step);
    lm_free(next);
    return LM_OK;
}

lm_status lm_window_reach(uint64_t w, uint64_t layers, uint64_t *reach, lm_error *err)
{
    if (reach == NULL)
        return lm_fail(err, LM_ERR_ARG, "reach must not be NULL");
    lm_status status = require_window(w, err);
    if (status != LM_OK)
        return status;
    if (layers != 0 && w - 1 > UINT64_MAX / layers)
        return lm_fail(err, LM_ERR_ARG, "layers * (w - 1) must fit 64 bits");
    *reach = layers * (w - 1);
    return LM_OK;
}

lm_status lm_window_relay_hops(uint64_t distance, uint64_t w, uint64_t *hops, lm_error *err)
{
    if (hops == NULL)
        return lm_fail(err, LM_ERR_ARG, "hops must not be NULL");
    if (w < 2)
        return lm_fail(err, LM_ERR_ARG, "w must be at least 2 for information to move back");
    *hops = distance / (w - 1) + (distance % (w - 1) != 0);
    return LM_OK;
}

lm_status lm_window_rolling_slots(size_t w, size_t last_token, int64_t *slots, lm_error *err)
{
    if (slots == NULL)
        return lm_fail(err, LM_ERR_ARG, "slots must not be NULL");
    lm_status status = require_window(w, err);
    if (status != LM_OK)
        return status;
    for (size_t s = 0; s < w; s++)
        slots[s] = -1;
    for (size_t t = 0; t <= last_token; t++)
        slots[t % w] = (int64_t)t; /* the newest token overwrites the oldest slot */
    return LM_OK;
}

lm_status lm_window_decode_f64_ref(const double *q, const double *k, const double *v,
                                   size_t n, size_t d, size_t d_v, size_t w, double *out,
                                   size_t *largest_buffer, lm_error *err)
{
    if (q == NULL || k == NULL || v == NULL || out == NULL || largest_buffer == NULL)
        return lm_fail(err, LM_ERR_ARG, "q, k, v, out and largest_buffer must not be NULL");
    if (n == 0 || d == 0 || d_v == 0)
        return lm_fail(err, LM_ERR_SHAPE, "extents must be positive, got n=%zu d=%zu d_v=%zu",
                       n, d, d_v);
    lm_status status;
    if ((status = require_window(w, err)) != LM_OK ||
        (status = lm_require_finite_f64("q", q, n * d, err)) != LM_OK ||
        (status = lm_require_finite_f64("k", k, n * d, err)) != LM_OK ||
        (status = lm_require_finite_f64("v", v, n * d_v, err)) != LM_OK)
        return status;
    size_t slots = w < n ? w : n; /* the buffer: never more than w entries */
    double *keys = lm_alloc(slots * d * sizeof *keys);     /* {slots, d} */
    double *values = lm_alloc(slots * d_v * sizeof *values); /* {slots, d_v} */
    if (keys == NULL || values == NULL) {
        lm_free(keys);
        lm_free(values);
        return lm_fail(err, LM_ERR_NOMEM, "rolling buffer of %zu entries", slots);
    }
    size_t held = 0;
    *largest_buffer = 0;
    status = LM_OK;
    for (size_t t = 0; t < n && status == LM_OK; t++) {
        size_t slot = t % w;
        memcpy(keys + slot * d, k + t * d, d * sizeof *keys);
        memcpy(values + slot * d_v, v + t * d_v, d_v * sizeof *values);
        if (held < w)
            held++;
        if (held > *largest_buffer)
            *largest_buffer = held;
        /* one row of attention over the buffer only */
        status = lm_attn_sdpa_f64_ref(q + t * d, keys, values, NULL, true, 1, held, d, d_v,
                                      out + t * d_v, NULL, err);
    }
    lm_free(keys);
    lm_free(values);
    return status;
}

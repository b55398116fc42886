/* Float64 oracles for the shapes the fast kernels compute: grouped-query prefill under
 * the four mask kinds, and decode over a KV cache with a batch of sequences.
 *
 * For query head h of G = heads / kv_heads heads per group, KV head g = h / G, and the
 * keys J(i) the mask allows for query i:
 *   s_j   = q[i, h] . k[j, g] / sqrt(d)                       j in J(i)
 *   o[i,h] = sum_j exp(s_j - max s) v[j, g] / sum_j exp(s_j - max s)
 * written plainly, one query row at a time, so it reads as the formula. */
#include "attention.h"

#include <math.h>

uint64_t lm_attn_mask_pairs(const lm_attn_mask *m, size_t n)
{
    uint64_t pairs = 0;
    for (size_t i = 0; i < n; i++) {
        switch (m->kind) {
        case LM_ATTN_MASK_CAUSAL: pairs += i + 1; break;
        case LM_ATTN_MASK_WINDOW: pairs += i + 1 < m->window ? i + 1 : m->window; break;
        default: /* the general count, one key at a time */
            for (size_t j = 0; j <= i; j++)
                pairs += lm_attn_mask_allows(m, i, j);
            break;
        }
    }
    return pairs;
}

lm_status lm_attn_prefill_check(size_t n, size_t heads, size_t kv_heads, size_t head_dim,
                                const lm_attn_mask *mask, lm_error *err)
{
    if (n == 0)
        return lm_fail(err, LM_ERR_SHAPE, "n (tokens) must be positive");
    if (heads == 0 || kv_heads == 0 || head_dim == 0)
        return lm_fail(err, LM_ERR_SHAPE,
                       "heads, kv_heads and head_dim must be positive, got %zu, %zu, %zu", heads,
                       kv_heads, head_dim);
    if (heads % kv_heads != 0)
        return lm_fail(err, LM_ERR_SHAPE, "heads (%zu) must be a multiple of kv_heads (%zu)",
                       heads, kv_heads);
    if (mask == NULL)
        return lm_fail(err, LM_ERR_ARG, "mask must not be NULL");
    switch (mask->kind) {
    case LM_ATTN_MASK_CAUSAL: break;
    case LM_ATTN_MASK_WINDOW:
    case LM_ATTN_MASK_WINDOW_GLOBAL:
        if (mask->window == 0)
            return lm_fail(err, LM_ERR_ARG, "mask window must be at least 1 (w = 0 reads nothing)");
        break;
    case LM_ATTN_MASK_STRIDED:
        if (mask->stride == 0)
            return lm_fail(err, LM_ERR_ARG, "mask stride must be at least 1");
        break;
    default:
        return lm_fail(err, LM_ERR_ARG, "mask kind %d is not one of causal, window, "
                       "window_global, strided", (int)mask->kind);
    }
    return LM_OK;
}

/* One query row: o {d} = softmax over the allowed keys, scores already in s {count}. */
static void softmax_mix(const double *s, const double *const *vrows, size_t count, size_t d,
                        double *o)
{
    double top = -(double)INFINITY;
    for (size_t t = 0; t < count; t++)
        top = s[t] > top ? s[t] : top;
    double total = 0.0;
    for (size_t c = 0; c < d; c++)
        o[c] = 0.0;
    for (size_t t = 0; t < count; t++) {
        double weight = exp(s[t] - top);
        total += weight;
        for (size_t c = 0; c < d; c++)
            o[c] += weight * vrows[t][c];
    }
    for (size_t c = 0; c < d; c++)
        o[c] /= total;
}

static double dot(const double *a, const double *b, size_t d)
{
    double sum = 0.0;
    for (size_t c = 0; c < d; c++)
        sum += a[c] * b[c];
    return sum;
}

lm_status lm_attn_prefill_f64_ref(const double *q, const double *k, const double *v, double *o,
                                  size_t n, size_t heads, size_t kv_heads, size_t head_dim,
                                  const lm_attn_mask *mask, lm_error *err)
{
    lm_status status = lm_attn_prefill_check(n, heads, kv_heads, head_dim, mask, err);
    if (status != LM_OK)
        return status;
    if (q == NULL || k == NULL || v == NULL || o == NULL)
        return lm_fail(err, LM_ERR_ARG, "q, k, v and o must not be NULL");
    if (!lm_all_finite_f64(q, n * heads * head_dim))
        return lm_fail(err, LM_ERR_NONFINITE, "q must contain only finite values");
    if (!lm_all_finite_f64(k, n * kv_heads * head_dim))
        return lm_fail(err, LM_ERR_NONFINITE, "k must contain only finite values");
    if (!lm_all_finite_f64(v, n * kv_heads * head_dim))
        return lm_fail(err, LM_ERR_NONFINITE, "v must contain only finite values");

    double *s = lm_alloc(n * sizeof *s);
    const double **vrows = lm_alloc(n * sizeof *vrows);
    if (s == NULL || vrows == NULL) {
        lm_free(s);
        lm_free(vrows);
        return lm_fail(err, LM_ERR_NOMEM, "prefill scratch of %zu scores", n);
    }
    const size_t group = heads / kv_heads, d = head_dim;
    const double root = sqrt((double)d);
    for (size_t h = 0; h < heads; h++) {
        size_t g = h / group;
        for (size_t i = 0; i < n; i++) {
            const double *qi = q + (i * heads + h) * d;
            size_t count = 0;
            for (size_t j = 0; j <= i; j++) {
                if (!lm_attn_mask_allows(mask, i, j))
                    continue;
                s[count] = dot(qi, k + (j * kv_heads + g) * d, d) / root;
                vrows[count++] = v + (j * kv_heads + g) * d;
            }
            softmax_mix(s, vrows, count, d, o + (i * heads + h) * d); /* j = i always allowed */
        }
    }
    lm_free(s);
    lm_free(vrows);
    return LM_OK;
}

lm_status lm_attn_decode_check(size_t batch, size_t heads, size_t kv_heads, size_t head_dim,
                               size_t capacity, const size_t *lengths, lm_error *err)
{
    if (batch == 0)
        return lm_fail(err, LM_ERR_SHAPE, "batch must be positive");
    if (heads == 0 || kv_heads == 0 || head_dim == 0)
        return lm_fail(err, LM_ERR_SHAPE,
                       "heads, kv_heads and head_dim must be positive, got %zu, %zu, %zu", heads,
                       kv_heads, head_dim);
    if (heads % kv_heads != 0)
        return lm_fail(err, LM_ERR_SHAPE, "heads (%zu) must be a multiple of kv_heads (%zu)",
                       heads, kv_heads);
    if (capacity == 0)
        return lm_fail(err, LM_ERR_SHAPE, "capacity must be positive");
    if (lengths == NULL)
        return lm_fail(err, LM_ERR_ARG, "lengths must not be NULL");
    for (size_t b = 0; b < batch; b++)
        if (lengths[b] == 0 || lengths[b] > capacity)
            return lm_fail(err, LM_ERR_SHAPE,
                           "lengths[%zu] = %zu must be in 1..capacity (%zu): n = 0 has no key",
                           b, lengths[b], capacity);
    return LM_OK;
}

lm_status lm_attn_decode_f64_ref(const double *q, const double *k, const double *v,
                                 const size_t *lengths, double *o, size_t batch, size_t heads,
                                 size_t kv_heads, size_t head_dim, size_t capacity,
                                 lm_error *err)
{
    lm_status status =
        lm_attn_decode_check(batch, heads, kv_heads, head_dim, capacity, lengths, err);
    if (status != LM_OK)
        return status;
    if (q == NULL || k == NULL || v == NULL || o == NULL)
        return lm_fail(err, LM_ERR_ARG, "q, k, v and o must not be NULL");
    const size_t group = heads / kv_heads, d = head_dim;
    if (!lm_all_finite_f64(q, batch * heads * d))
        return lm_fail(err, LM_ERR_NONFINITE, "q must contain only finite values");
    for (size_t b = 0; b < batch; b++)
        for (size_t g = 0; g < kv_heads; g++) {
            size_t base = ((b * kv_heads + g) * capacity) * d;
            if (!lm_all_finite_f64(k + base, lengths[b] * d))
                return lm_fail(err, LM_ERR_NONFINITE, "k must contain only finite values");
            if (!lm_all_finite_f64(v + base, lengths[b] * d))
                return lm_fail(err, LM_ERR_NONFINITE, "v must contain only finite values");
        }
    double *s = lm_alloc(capacity * sizeof *s);
    const double **vrows = lm_alloc(capacity * sizeof *vrows);
    if (s == NULL || vrows == NULL) {
        lm_free(s);
        lm_free(vrows);
        return lm_fail(err, LM_ERR_NOMEM, "decode scratch of %zu scores", capacity);
    }
    const double root = sqrt((double)d);
    for (size_t b = 0; b < batch; b++)
        for (size_t h = 0; h < heads; h++) {
            const size_t g = h / group;
            const double *kb = k + ((b * kv_heads + g) * capacity) * d; /* {capacity, d} */
            const double *vb = v + ((b * kv_heads + g) * capacity) * d;
            const double *qh = q + (b * heads + h) * d;
            for (size_t j = 0; j < lengths[b]; j++) {
                s[j] = dot(qh, kb + j * d, d) / root;
                vrows[j] = vb + j * d;
            }
            softmax_mix(s, vrows, lengths[b], d, o + (b * heads + h) * d);
        }
    lm_free(s);
    lm_free(vrows);
    return LM_OK;
}

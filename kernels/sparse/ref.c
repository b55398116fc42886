/* References for the sparse patterns: predicates, masks and pair counts. */
#include "sparse.h"

static lm_status check_global(size_t n, size_t w, const size_t *global_tokens,
                              size_t n_global, lm_error *err)
{
    if (n == 0)
        return lm_fail(err, LM_ERR_SHAPE, "n must be positive");
    if (w == 0)
        return lm_fail(err, LM_ERR_ARG, "w must be positive (a window reads itself)");
    if (n_global > 0 && global_tokens == NULL)
        return lm_fail(err, LM_ERR_ARG, "global_tokens must not be NULL when n_global > 0");
    for (size_t g = 0; g < n_global; g++)
        if (global_tokens[g] >= n)
            return lm_fail(err, LM_ERR_ARG, "global_tokens[%zu] = %zu must be below n = %zu", g,
                           global_tokens[g], n);
    return LM_OK;
}

/* n >= 1 tokens and a stride >= 1. */
static lm_status check_strided(size_t n, size_t stride, lm_error *err)
{
    if (n == 0)
        return lm_fail(err, LM_ERR_SHAPE, "n must be positive");
    if (stride == 0)
        return lm_fail(err, LM_ERR_ARG, "stride must be positive");
    return LM_OK;
}

static bool is_global(size_t token, const size_t *global_tokens, size_t n_global)
{
    for (size_t g = 0; g < n_global; g++)
        if (global_tokens[g] == token)
            return true;
    return false;
}

/* Every token reads the global tokens and the global tokens read every token, but nobody
 * reads the future. */
static bool global_local_pair(size_t i, size_t j, size_t w, const size_t *global_tokens,
                              size_t n_global)
{
    if (j > i)
        return false;
    return i - j < w || is_global(j, global_tokens, n_global) ||
           is_global(i, global_tokens, n_global);
}

static bool strided_pair(size_t i, size_t j, size_t stride)
{
    return j <= i && (i - j < stride || (i - j) % stride == 0);
}

lm_status lm_sparse_global_local_mask(size_t n, size_t w, const size_t *global_tokens,
                                      size_t n_global, uint8_t *mask, lm_error *err)
{
    if (mask == NULL)
        return lm_fail(err, LM_ERR_ARG, "mask must not be NULL");
    lm_status status = check_global(n, w, global_tokens, n_global, err);
    if (status != LM_OK)
        return status;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            mask[i * n + j] = global_local_pair(i, j, w, global_tokens, n_global);
    return LM_OK;
}

lm_status lm_sparse_global_local_pairs(size_t n, size_t w, const size_t *global_tokens,
                                       size_t n_global, uint64_t *pairs, lm_error *err)
{
    if (pairs == NULL)
        return lm_fail(err, LM_ERR_ARG, "pairs must not be NULL");
    lm_status status = check_global(n, w, global_tokens, n_global, err);
    if (status != LM_OK)
        return status;
    uint64_t count = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++)
            count += global_local_pair(i, j, w, global_tokens, n_global);
    *pairs = count;
    return LM_OK;
}

lm_status lm_sparse_strided_mask(size_t n, size_t stride, uint8_t *mask, lm_error *err)
{
    if (mask == NULL)
        return lm_fail(err, LM_ERR_ARG, "mask must not be NULL");
    lm_status status = check_strided(n, stride, err);
    if (status != LM_OK)
        return status;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++)
            mask[i * n + j] = strided_pair(i, j, stride);
    return LM_OK;
}

lm_status lm_sparse_strided_pairs(size_t n, size_t stride, uint64_t *pairs, lm_error *err)
{
    if (pairs == NULL)
        return lm_fail(err, LM_ERR_ARG, "pairs must not be NULL");
    lm_status status = check_strided(n, stride, err);
    if (status != LM_OK)
        return status;
    uint64_t count = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++)
            count += strided_pair(i, j, stride);
    *pairs = count;
    return LM_OK;
}

/* Operator driver of the causal conv: validate, then split (batch row, channel block)
 * items over OpenMP threads. */
#include "conv.h"
#include "lm_ops.h"

enum { CONV_CHANNEL_BLOCK = 256 }; /* a multiple of every vector width */

lm_status lm_conv_causal(const lm_conv_causal_f32 *p, const lm_ops *ops, lm_error *err)
{
    lm_status ops_status = lm_ops_check(ops, err);
    if (ops_status != LM_OK)
        return ops_status;
    if (p == NULL)
        return lm_fail(err, LM_ERR_ARG, "p must not be NULL");
    if (p->batch == 0 || p->length == 0 || p->channels == 0 || p->width == 0)
        return lm_fail(err, LM_ERR_SHAPE, "batch, length, channels and width must be positive, "
                       "got B=%zu L=%zu D=%zu K=%zu", p->batch, p->length, p->channels,
                       p->width);
    if (p->width > LM_CONV_MAX_WIDTH)
        return lm_fail(err, LM_ERR_SHAPE, "width must be at most %d, got %zu",
                       LM_CONV_MAX_WIDTH, p->width);
    if (p->x == NULL || p->weight == NULL || p->y == NULL)
        return lm_fail(err, LM_ERR_SHAPE, "x, weight and y must be given");
    lm_conv_causal_fn *const kernel = ops->conv_causal_f32;
    const size_t blocks = (p->channels + CONV_CHANNEL_BLOCK - 1) / CONV_CHANNEL_BLOCK;
    const long long items = (long long)(p->batch * blocks);
#pragma omp parallel for schedule(static) if (items > 1 && p->length * p->channels > 4096)
    for (long long item = 0; item < items; item++) {
        const size_t bi = (size_t)item / blocks, block = (size_t)item % blocks;
        const size_t d_begin = block * CONV_CHANNEL_BLOCK;
        const size_t d_end = d_begin + CONV_CHANNEL_BLOCK < p->channels
                                 ? d_begin + CONV_CHANNEL_BLOCK : p->channels;
        kernel(p, bi, d_begin, d_end);
    }
    return LM_OK;
}

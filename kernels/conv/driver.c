/* Operator driver of the causal conv: validate, then split (batch row, channel block)
 * items over OpenMP threads. */
#include "conv.h"
#include "lm_ops.h"

enum { CONV_CHANNEL_BLOCK = 256 }; /* a multiple of every vector width */

lm_status lm_conv_causal_f32_with(lm_conv_causal_f32_fn kernel, const lm_conv_causal_f32 *p,
                                  lm_error *err)
{
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
    if (kernel == NULL)
        kernel = lm_ops_active()->conv_causal_f32;
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

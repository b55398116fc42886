/* Float64 oracle of the causal depthwise convolution with tail state (conv.h). */
#include "conv.h"
#include "lm_validate.h"

#include <math.h>

lm_status lm_conv_causal_f64_ref(const lm_conv_causal_f64 *p, lm_error *err)
{
    if (p->batch == 0 || p->length == 0 || p->channels == 0 || p->width == 0)
        return lm_fail(err, LM_ERR_SHAPE, "batch, length, channels and width must be positive");
    if (p->width > LM_CONV_MAX_WIDTH)
        return lm_fail(err, LM_ERR_SHAPE, "width must be at most %d, got %zu",
                       LM_CONV_MAX_WIDTH, p->width);
    if (p->x == NULL || p->weight == NULL || p->y == NULL)
        return lm_fail(err, LM_ERR_SHAPE, "x, weight and y must be given");
    const size_t B = p->batch, L = p->length, D = p->channels, K = p->width;
    lm_status s;
    if ((s = lm_require_finite_or_null_f64("x", p->x, B * L * D, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("weight", p->weight, D * K, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("bias", p->bias, D, err)) != LM_OK ||
        (s = lm_require_finite_or_null_f64("tail_in", p->tail_in, B * (K - 1) * D, err)) != LM_OK)
        return s;
    for (size_t b = 0; b < B; b++)
        for (size_t d = 0; d < D; d++) {
            /* window[0..K-2]: the K-1 inputs before the current token, oldest first */
            double window[LM_CONV_MAX_WIDTH];
            for (size_t k = 0; k + 1 < K; k++)
                window[k] = p->tail_in != NULL ? p->tail_in[(b * (K - 1) + k) * D + d] : 0.0;
            for (size_t t = 0; t < L; t++) {
                window[K - 1] = p->x[(b * L + t) * D + d];
                double acc = p->bias != NULL ? p->bias[d] : 0.0;
                for (size_t k = 0; k < K; k++)
                    acc += p->weight[d * K + k] * window[k];
                if (p->apply_silu)
                    acc = acc / (1.0 + exp(-acc));
                p->y[(b * L + t) * D + d] = acc;
                for (size_t k = 0; k + 1 < K; k++)
                    window[k] = window[k + 1];
            }
            if (p->tail_out != NULL)
                for (size_t k = 0; k + 1 < K; k++)
                    p->tail_out[(b * (K - 1) + k) * D + d] = window[k];
        }
    return LM_OK;
}

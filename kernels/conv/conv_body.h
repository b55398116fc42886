/* The causal-conv kernel body, instantiated per ISA through the mapping layer of
 * kernels/ssm/mamba1_body.h (LM_V, LM_W, V_LOADU, V_STOREU, V_SET1, V_ADD, V_SUB, V_MUL,
 * V_DIV, V_FMA, V_EXP) and CONV_BLOCK, the static block function name.
 * One vector holds LM_W channels; the window of the K-1 previous inputs stays in a small
 * array of vectors, so every input is loaded once and the tail falls out at the end. */

static void CONV_BLOCK(const lm_conv_causal_f32 *p, size_t bi, size_t d0)
{
    const size_t L = p->length, D = p->channels, K = p->width;
    _Alignas(64) float w_t[LM_CONV_MAX_WIDTH * LM_W]; /* {K, W}: weight transposed */
    LM_V window[LM_CONV_MAX_WIDTH];                   /* oldest first; [K-1] = current */
    for (size_t j = 0; j < LM_W; j++)
        for (size_t k = 0; k < K; k++)
            w_t[k * LM_W + j] = p->weight[(d0 + j) * K + k];
    for (size_t k = 0; k + 1 < K; k++)
        window[k] = p->tail_in != NULL ? V_LOADU(p->tail_in + (bi * (K - 1) + k) * D + d0)
                                       : V_SET1(0.0f);
    const LM_V bias = p->bias != NULL ? V_LOADU(p->bias + d0) : V_SET1(0.0f);
    const LM_V one = V_SET1(1.0f), zero = V_SET1(0.0f);
    for (size_t t = 0; t < L; t++) {
        const size_t row = bi * L + t;
        window[K - 1] = V_LOADU(p->x + row * D + d0);
        LM_V acc = bias;
        for (size_t k = 0; k < K; k++) /* acc += w[:, k] * window[k] */
            acc = V_FMA(V_LOADU(w_t + k * LM_W), window[k], acc);
        if (p->apply_silu) /* acc / (1 + exp(-acc)) */
            acc = V_DIV(acc, V_ADD(one, V_EXP(V_SUB(zero, acc))));
        V_STOREU(p->y + row * D + d0, acc);
        for (size_t k = 0; k + 1 < K; k++)
            window[k] = window[k + 1];
    }
    if (p->tail_out != NULL)
        for (size_t k = 0; k + 1 < K; k++)
            V_STOREU(p->tail_out + (bi * (K - 1) + k) * D + d0, window[k]);
}

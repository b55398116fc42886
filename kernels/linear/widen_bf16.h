/* The bf16 slot on a path without BF16 dot products (linear.h): one chunk of bfloat16 q, k,
 * v at a time widened to float32, then that path's f32 chunked kernel (CHUNKED_NAME, from
 * linear_body.h, included before this header) on the chunk, the carried state and
 * normalizer living in the workspace between chunks (the kernel's in-place form, s0 ==
 * s_final). Chunk by chunk the arithmetic is the f32 kernel's own, so the result is bit for
 * bit the f32 slot's on the widened inputs. */
#ifndef LONGMIX_LINEAR_WIDEN_BF16_H
#define LONGMIX_LINEAR_WIDEN_BF16_H

/* y[0:n] = x[0:n] widened (exact: a bfloat16 is the top half of a float32) */
static inline void widen_bf16_row(const uint16_t *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] = lm_f32_from_bf16(x[i]);
}

/* Head h of p (dtype bf16) through CHUNKED_NAME; work holds lm_linear_chunk_work_floats(p,
 * chunk) floats: the f32 kernel's workspace, then wq, wk {C, dk}, wv {C, dv}, S {dk, dv},
 * z {dk}. */
static void chunked_bf16_widened(const lm_linear_f32 *p, size_t h, size_t chunk, float *work)
{
    const size_t L = p->length, dk = p->d_key, dv = p->d_value;
    const size_t C = chunk < L ? chunk : L;
    float *wq = work + lm_linear_chunk_work_floats_f32(p, chunk);
    float *wk = wq + round16(C * dk), *wv = wk + round16(C * dk);
    float *S = wv + round16(C * dv), *z = S + round16(dk * dv);
    lm_linear_head_start(p, h, S, z);
    const size_t gate_width = p->gate_kind == LM_LINEAR_GATE_CHANNEL ? dk : 1;
    /* z only where the whole-head call tracks it (it chooses where the ratios go by that) */
    float *zc = p->normalize || p->z_final != NULL ? z : NULL;
    for (size_t t0 = 0; t0 < L; t0 += C) {
        const size_t n = L - t0 < C ? L - t0 : C, row0 = h * L + t0;
        widen_bf16_row(p->q16 + row0 * dk, wq, n * dk);
        widen_bf16_row(p->k16 + row0 * dk, wk, n * dk);
        widen_bf16_row(p->v16 + row0 * dv, wv, n * dv);
        /* the chunk as a one-head problem of n tokens, state in place */
        lm_linear_f32 c = {.heads = 1, .length = n, .d_key = dk, .d_value = dv,
                           .feature = p->feature, .normalize = p->normalize,
                           .gate_kind = p->gate_kind, .q = wq, .k = wk, .v = wv,
                           .gate = p->gate != NULL ? p->gate + row0 * gate_width : NULL,
                           .log_gate = p->log_gate != NULL ? p->log_gate + row0 : NULL,
                           .s0 = S, .s_final = S, .z0 = zc, .z_final = zc,
                           .y = p->y + row0 * dv};
        CHUNKED_NAME(&c, 0, chunk, work);
    }
    if (p->s_final != NULL)
        memcpy(p->s_final + h * dk * dv, S, dk * dv * sizeof(float));
    if (p->z_final != NULL)
        memcpy(p->z_final + h * dk, z, dk * sizeof(float));
}

#endif

/* Multi-head latent attention, fast drivers over the attention family's dispatched kernels.
 *
 * Absorbed: q_abs_h = [W_uk_h q_nope_h, q_rope_h] {latent + rope}; then the cached rows
 * ckv_j = [c_j, k_rope_j] are both the keys and (their first `latent` numbers) the values of
 * an MQA with every head in one group, so each cached row is read once for all heads;
 * o_h = mixed_h[0..latent) W_uv_h. Expanded: K_h, V_h rebuilt for every head from the
 * latents, then MHA. Both scale scores by 1 / sqrt(nope + rope). */
#include "latent.h"

#include "../attention/attention.h"

#include <math.h>
#include <omp.h>
#include <string.h>

double lm_mla_bytes_per_token(const lm_mla_shape *s, bool absorbed)
{
    if (absorbed)
        return 4.0 * (double)(s->latent + s->rope);
    return 4.0 * (double)s->heads * (double)(s->nope + s->rope + s->v_dim);
}

static lm_status check_args(const lm_mla_shape *s, const float *q, const float *ckv,
                            const float *w_uk, const float *w_uv, size_t n_q, size_t n,
                            bool causal, const float *o, lm_error *err)
{
    lm_status status = lm_mla_check(s, err);
    if (status != LM_OK)
        return status;
    if (n == 0 || n_q == 0 || (causal && n_q != n))
        return lm_fail(err, LM_ERR_SHAPE, "n and n_q must be positive (n_q = n when causal)");
    if (q == NULL || ckv == NULL || w_uk == NULL || w_uv == NULL || o == NULL)
        return lm_fail(err, LM_ERR_ARG, "q, ckv, w_uk, w_uv and o must not be NULL");
    for (size_t i = 0; i < n_q * s->heads * (s->nope + s->rope); i++)
        if (!isfinite(q[i]))
            return lm_fail(err, LM_ERR_NONFINITE, "q must contain only finite values");
    return LM_OK;
}

/* MQA decode of the `group` query rows q {group, d} over rows kv {n, d} (keys = values),
 * split over threads and merged: out {group, d}. */
static lm_status shared_row_decode(const lm_ops *ops, const float *q, const float *kv, size_t n,
                                   size_t d, size_t group, float scale, float *out,
                                   lm_error *err)
{
    const size_t threads = (size_t)omp_get_max_threads();
    size_t chunk = (n / (2 * threads) + LM_ATTN_DECODE_BLOCK - 1) / LM_ATTN_DECODE_BLOCK *
                   LM_ATTN_DECODE_BLOCK;
    if (chunk < 4 * LM_ATTN_DECODE_BLOCK)
        chunk = 4 * LM_ATTN_DECODE_BLOCK;
    const size_t parts = (n + chunk - 1) / chunk;
    float *m = lm_alloc(parts * group * sizeof(float)), *l = lm_alloc(parts * group * sizeof(float));
    float *acc = lm_alloc(parts * group * d * sizeof(float));
    bool failed = false;
    if (m == NULL || l == NULL || acc == NULL) {
        lm_free(m), lm_free(l), lm_free(acc);
        return lm_fail(err, LM_ERR_NOMEM, "latent decode partials");
    }
#pragma omp parallel
    {
        float *ws = lm_alloc(lm_attn_decode_workspace_floats(group) * sizeof(float));
        if (ws == NULL) {
#pragma omp atomic write
            failed = true;
        }
#pragma omp for schedule(dynamic, 1)
        for (long p = 0; p < (long)parts; p++) {
            if (ws == NULL)
                continue;
            const size_t j0 = (size_t)p * chunk, j1 = j0 + chunk < n ? j0 + chunk : n;
            ops->attn_decode_f32(q, kv + j0 * d, kv + j0 * d, j1 - j0, d, group, scale,
                                 m + (size_t)p * group, l + (size_t)p * group,
                                 acc + (size_t)p * group * d, ws);
        }
        lm_free(ws);
    }
    if (!failed)
        lm_attn_merge_partials(m, l, acc, parts, group, d, out, d);
    lm_free(m), lm_free(l), lm_free(acc);
    return failed ? lm_fail(err, LM_ERR_NOMEM, "latent decode partials") : LM_OK;
}

lm_status lm_mla_attend_absorbed(const lm_mla_shape *s, const float *q, const float *ckv,
                                 const float *w_uk, const float *w_uv, size_t n_q, size_t n,
                                 bool causal, float *o, const lm_ops *ops, lm_error *err)
{
    lm_status status = lm_ops_check(ops, err);
    if (status == LM_OK)
        status = check_args(s, q, ckv, w_uk, w_uv, n_q, n, causal, o, err);
    if (status != LM_OK)
        return status;
    const size_t H = s->heads, L = s->latent, R = s->rope, dk = L + R, dq = s->nope + s->rope;
    const float scale = 1.0f / sqrtf((float)dq);
    float *qa = lm_alloc(n_q * H * dk * sizeof(float));    /* {n_q, H, latent + rope} */
    float *mixed = lm_alloc(n_q * H * dk * sizeof(float)); /* {n_q, H, latent + rope} */
    if (qa == NULL || mixed == NULL) {
        lm_free(qa), lm_free(mixed);
        return lm_fail(err, LM_ERR_NOMEM, "absorbed queries of %zu x %zu x %zu", n_q, H, dk);
    }
    /* q_abs[l] = sum_e W_uk[l, h nope + e] q_nope[e]; the rope part is copied */
#pragma omp parallel for schedule(static)
    for (long ih = 0; ih < (long)(n_q * H); ih++) {
        const size_t h = (size_t)ih % H;
        const float *qi = q + (size_t)ih * dq;
        float *out = qa + (size_t)ih * dk;
        for (size_t l = 0; l < L; l++) {
            const float *wrow = w_uk + l * H * s->nope + h * s->nope;
            float sum = 0.0f;
            for (size_t e = 0; e < s->nope; e++)
                sum += wrow[e] * qi[e];
            out[l] = sum;
        }
        memcpy(out + L, qi + s->nope, R * sizeof(float));
    }
    if (causal) {
        lm_attn_prefill_args a = {.q = qa, .k = ckv, .v = ckv, .o = mixed, .n = n, .heads = H,
                                  .kv_heads = 1, .head_dim = dk,
                                  .mask = {.kind = LM_ATTN_MASK_CAUSAL}, .scale = scale};
        status = lm_attn_prefill(&a, ops, NULL, err);
    } else {
        const lm_ops *run = dk % 16 != 0 ? lm_ops_for(LM_ISA_SCALAR) : ops;
        for (size_t i = 0; i < n_q && status == LM_OK; i++)
            status = shared_row_decode(run, qa + i * H * dk, ckv, n, dk, H, scale,
                                       mixed + i * H * dk, err);
    }
    if (status == LM_OK) { /* o_h = mixed_h[0..latent) W_uv_h */
#pragma omp parallel for schedule(static)
        for (long ih = 0; ih < (long)(n_q * H); ih++) {
            const size_t h = (size_t)ih % H;
            const float *mi = mixed + (size_t)ih * dk;
            float *out = o + (size_t)ih * s->v_dim;
            memset(out, 0, s->v_dim * sizeof(float));
            for (size_t l = 0; l < L; l++) {
                const float *wrow = w_uv + l * H * s->v_dim + h * s->v_dim;
                for (size_t e = 0; e < s->v_dim; e++)
                    out[e] += mi[l] * wrow[e];
            }
        }
    }
    lm_free(qa), lm_free(mixed);
    return status;
}

/* Tokens per expansion block of the expanded decode: K and V of one head for 128 tokens
 * (2 x 96 KiB at nope + rope = 192) stay in L2 between their product and their use. */
enum { MLA_EXPAND_BLOCK = 128 };

/* Head h of tokens j0..j1 expanded into rows of `ld` floats: k rows [c_j W_uk_h, k_rope_j]
 * {j1 - j0, nope + rope}, v rows [c_j W_uv_h, zeros] {j1 - j0, nope + rope}. Two products
 * of the dispatched GEMM (the latent rows are read in place, stride latent + rope). */
static void expand_head(const lm_ops *ops, const lm_mla_shape *s, const float *ckv, size_t j0,
                        size_t j1, size_t h, const float *w_uk, const float *w_uv, float *k,
                        float *v, size_t ld)
{
    const size_t L = s->latent, R = s->rope, dq = s->nope + R, rows = j1 - j0;
    for (size_t t = 0; t < rows; t++) {
        memset(k + t * ld, 0, s->nope * sizeof(float));
        memcpy(k + t * ld + s->nope, ckv + (j0 + t) * (L + R) + L, R * sizeof(float));
        memset(v + t * ld, 0, dq * sizeof(float));
    }
    ops->gemm_acc_f32(rows, s->nope, L, ckv + j0 * (L + R), L + R, w_uk + h * s->nope,
                      s->heads * s->nope, k, ld);
    ops->gemm_acc_f32(rows, s->v_dim, L, ckv + j0 * (L + R), L + R, w_uv + h * s->v_dim,
                      s->heads * s->v_dim, v, ld);
}

lm_status lm_mla_expand(const lm_mla_shape *s, const float *ckv, size_t n, const float *w_uk,
                        const float *w_uv, bool token_major, float *k, float *v,
                        const lm_ops *ops, lm_error *err)
{
    lm_status status = lm_ops_check(ops, err);
    if (status == LM_OK)
        status = lm_mla_check(s, err);
    if (status != LM_OK)
        return status;
    if (n == 0 || ckv == NULL || w_uk == NULL || w_uv == NULL || k == NULL || v == NULL)
        return lm_fail(err, LM_ERR_ARG, "n must be positive and ckv, w_uk, w_uv, k, v given");
    const lm_ops *run = ops;
    const size_t H = s->heads, dq = s->nope + s->rope;
    const size_t blocks = (n + MLA_EXPAND_BLOCK - 1) / MLA_EXPAND_BLOCK;
#pragma omp parallel for schedule(dynamic, 1)
    for (long item = 0; item < (long)(H * blocks); item++) {
        const size_t h = (size_t)item / blocks, j0 = (size_t)item % blocks * MLA_EXPAND_BLOCK;
        const size_t j1 = j0 + MLA_EXPAND_BLOCK < n ? j0 + MLA_EXPAND_BLOCK : n;
        const size_t first = token_major ? j0 * H + h : h * n + j0; /* row of token j0 */
        const size_t ld = token_major ? H * dq : dq;
        expand_head(run, s, ckv, j0, j1, h, w_uk, w_uv, k + first * dq, v + first * dq, ld);
    }
    return LM_OK;
}

/* Decode the expanded way without an expanded cache: items (head, block of tokens) rebuild
 * K_h, V_h of the block (expand_head), run the dispatched decode kernel on it for every
 * query, and leave one partial (m, l, acc) per (query, head, block), merged per (query,
 * head) with log-sum-exp. Head-major items keep W_uk_h and W_uv_h in cache. */
static lm_status expanded_decode(const lm_mla_shape *s, const float *q, const float *ckv,
                                 const float *w_uk, const float *w_uv, size_t n_q, size_t n,
                                 float *out, const lm_ops *ops, lm_error *err)
{
    const size_t H = s->heads, dq = s->nope + s->rope, B = MLA_EXPAND_BLOCK;
    const size_t blocks = (n + B - 1) / B, parts = n_q * H * blocks;
    const lm_ops *run = ops;
    const lm_ops *attn = dq % 16 != 0 ? lm_ops_for(LM_ISA_SCALAR) : run;
    const float scale = 1.0f / sqrtf((float)dq);
    float *m = lm_alloc(parts * sizeof(float)), *l = lm_alloc(parts * sizeof(float));
    float *acc = lm_alloc(parts * dq * sizeof(float)); /* {n_q, H, blocks, dq} */
    bool failed = false;
    if (m == NULL || l == NULL || acc == NULL) {
        lm_free(m), lm_free(l), lm_free(acc);
        return lm_fail(err, LM_ERR_NOMEM, "expanded decode partials of %zu tokens", n);
    }
#pragma omp parallel
    {
        const size_t ws_floats = 2 * B * dq + lm_attn_decode_workspace_floats(1);
        float *kb = lm_alloc(ws_floats * sizeof(float));
        if (kb == NULL) {
#pragma omp atomic write
            failed = true;
        }
        float *vb = kb + B * dq, *ws = vb + B * dq;
#pragma omp for schedule(dynamic, 1)
        for (long item = 0; item < (long)(H * blocks); item++) {
            if (kb == NULL)
                continue;
            const size_t h = (size_t)item / blocks, b = (size_t)item % blocks;
            const size_t j0 = b * B, j1 = j0 + B < n ? j0 + B : n;
            expand_head(run, s, ckv, j0, j1, h, w_uk, w_uv, kb, vb, dq);
            for (size_t i = 0; i < n_q; i++) {
                const size_t part = (i * H + h) * blocks + b;
                attn->attn_decode_f32(q + (i * H + h) * dq, kb, vb, j1 - j0, dq, 1, scale,
                                      m + part, l + part, acc + part * dq, ws);
            }
        }
        lm_free(kb);
    }
    if (!failed)
        for (size_t ih = 0; ih < n_q * H; ih++)
            lm_attn_merge_partials(m + ih * blocks, l + ih * blocks, acc + ih * blocks * dq,
                                   blocks, 1, dq, out + ih * dq, dq);
    lm_free(m), lm_free(l), lm_free(acc);
    return failed ? lm_fail(err, LM_ERR_NOMEM, "expanded decode partials of %zu tokens", n)
                  : LM_OK;
}

lm_status lm_mla_attend_expanded(const lm_mla_shape *s, const float *q, const float *ckv,
                                 const float *w_uk, const float *w_uv, size_t n_q, size_t n,
                                 bool causal, float *o, const lm_ops *ops, lm_error *err)
{
    lm_status status = lm_ops_check(ops, err);
    if (status == LM_OK)
        status = check_args(s, q, ckv, w_uk, w_uv, n_q, n, causal, o, err);
    if (status != LM_OK)
        return status;
    const size_t H = s->heads, dq = s->nope + s->rope;
    float *out = lm_alloc(n_q * H * dq * sizeof(float)); /* {n_q, H, dq}, v_dim used */
    if (out == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "expanded outputs of %zu queries", n_q);
    if (causal) { /* prefill: K, V {n, H, dq} token-major, then causal MHA */
        float *k = lm_alloc(n * H * dq * sizeof(float)), *v = lm_alloc(n * H * dq * sizeof(float));
        status = k == NULL || v == NULL
                     ? lm_fail(err, LM_ERR_NOMEM, "expanded keys and values of %zu tokens", n)
                     : lm_mla_expand(s, ckv, n, w_uk, w_uv, true, k, v, ops, err);
        if (status == LM_OK) {
            lm_attn_prefill_args a = {.q = q, .k = k, .v = v, .o = out, .n = n, .heads = H,
                                      .kv_heads = H, .head_dim = dq,
                                      .mask = {.kind = LM_ATTN_MASK_CAUSAL},
                                      .scale = 1.0f / sqrtf((float)dq)};
            status = lm_attn_prefill(&a, ops, NULL, err);
        }
        lm_free(k), lm_free(v);
    } else {
        status = expanded_decode(s, q, ckv, w_uk, w_uv, n_q, n, out, ops, err);
    }
    for (size_t ih = 0; status == LM_OK && ih < n_q * H; ih++)
        memcpy(o + ih * s->v_dim, out + ih * dq, s->v_dim * sizeof(float));
    lm_free(out);
    return status;
}

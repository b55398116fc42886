/* The prefill of each unit (model_unit.h, cfg.prompt > 0): a prompt of n tokens for each
 * of the batch's sequences at once, in the order of the real layer, timed by component.
 * Projections are lm_gemm products over all batch x n rows (kernels/gemm, oneDNN); the
 * mixing runs longmix's prefill kernels over whole sequences: lm_attn_prefill (causal, or
 * the sliding-window mask), lm_mla_attend_expanded (causal), lm_conv_causal, the Mamba-1
 * scan, the chunked SSD and the chunked gated delta rule. The LM head is a GEMV over the
 * last token of each sequence (the first generated token's logits). Activations are rows
 * {batch, n, width}. */
#include "model_unit_impl.h"
#include "try.h"

#include <math.h>
#include <omp.h>
#include <string.h>

/* Chunk sizes of the chunked scans: the bench cases' defaults (ssd_chunked, delta_chunked). */
#define PREFILL_SSD_CHUNK 32
#define PREFILL_DELTA_CHUNK 64

/* c {m, rows of d} = a {m, cols of d} W^T through the packed GEMM g, timed into u. */
static lm_status gemm(lm_unit *u, lm_gemm *g, const lm_dense *d, size_t m, const float *a,
                      float *c, lm_error *err)
{
    double t0 = omp_get_wtime();
    TRY(lm_gemm_run(g, a, c, err));
    u->gemm_s += omp_get_wtime() - t0;
    u->gemm_flops += 2.0 * (double)m * (double)d->rows * (double)d->cols;
    return LM_OK;
}
#define PROJ(i, a, c) gemm(u, u->gemm[i], &u->dense[i], u->rows, (a), (c), err)

static lm_status conv_all(lm_unit *u, const float *x, size_t ch, size_t K, float *y, lm_error *err)
{
    lm_conv_causal_f32 p = {.batch = u->batch, .length = u->held, .channels = ch, .width = K,
                            .x = x, .weight = u->conv_w, .bias = NULL, .tail_in = NULL,
                            .y = y, .tail_out = u->tail, .apply_silu = true};
    return lm_conv_causal(&p, u->cfg.ops, err);
}

/* Ends a mixer's prefill: the mixing time since *t, then x {rows, d} += dense[i](a) through
 * buffer o, and the projection time. */
static lm_status prefill_out(lm_unit *u, size_t i, const float *a, float *o, float *x, double *t,
                             double *sec, lm_error *err)
{
    sec[LM_COMP_MIXING] += unit_lap(t);
    TRY(PROJ(i, a, o));
    unit_add_into(x, o, u->rows * (size_t)u->cfg.spec->d_model);
    sec[LM_COMP_PROJ] += unit_lap(t);
    return LM_OK;
}

static lm_status prefill_attention(lm_unit *u, float *x, double *sec, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t R = u->rows, n = u->held, d = (size_t)s->d_model, H = (size_t)s->attention.heads;
    size_t KV = (size_t)s->attention.kv_heads, hd = (size_t)s->attention.head_dim;
    float **f = u->buf; /* h q k v o out [gate] */
    double t = omp_get_wtime();
    lm_rmsnorm_f32(x, NULL, R, d, 1e-5f, f[0]);
    TRY(PROJ(0, f[0], f[1]));
    TRY(PROJ(1, f[0], f[2]));
    TRY(PROJ(2, f[0], f[3]));
    if (s->attention.q_gate)
        TRY(PROJ(4, f[0], f[6]));
    sec[LM_COMP_PROJ] += unit_lap(&t);
    size_t w = (size_t)s->attention.window;
    lm_attn_mask mask = {.kind = w > 0 ? LM_ATTN_MASK_WINDOW : LM_ATTN_MASK_CAUSAL, .window = w};
    for (size_t b = 0; b < u->batch; b++) {
        lm_attn_prefill_args a = {.q = f[1] + b * n * H * hd, .k = f[2] + b * n * KV * hd,
                                  .v = f[3] + b * n * KV * hd, .o = f[4] + b * n * H * hd,
                                  .n = n, .heads = H, .kv_heads = KV, .head_dim = hd,
                                  .mask = mask, .scale = 1.0f / sqrtf((float)hd)};
        TRY(lm_attn_prefill(&a, u->cfg.ops, NULL, err));
    }
    if (s->attention.q_gate) /* o *= sigmoid(gate) */
        for (size_t i = 0; i < R * H * hd; i++)
            f[4][i] /= 1.0f + expf(-f[6][i]);
    return prefill_out(u, 3, f[4], f[5], x, &t, sec, err);
}

static lm_status prefill_mla(lm_unit *u, float *x, double *sec, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t R = u->rows, n = (size_t)u->cfg.prompt, d = (size_t)s->d_model;
    size_t H = (size_t)s->mla.heads, L = (size_t)s->mla.latent, RO = (size_t)s->mla.rope;
    size_t NO = (size_t)s->mla.nope, V = (size_t)s->mla.v_dim;
    lm_mla_shape shape = {H, L, RO, NO, V};
    float **f = u->buf; /* h q ckv o out */
    double t = omp_get_wtime();
    lm_rmsnorm_f32(x, NULL, R, d, 1e-6f, f[0]);
    TRY(PROJ(0, f[0], f[1]));
    TRY(PROJ(1, f[0], f[2]));
    for (size_t r = 0; r < R; r++) /* kv_a_layernorm over each row's latent part */
        lm_rmsnorm_f32(f[2] + r * (L + RO), NULL, 1, L, 1e-6f, f[2] + r * (L + RO));
    sec[LM_COMP_PROJ] += unit_lap(&t);
    for (size_t b = 0; b < u->batch; b++) /* DeepSeek's prefill form: K, V expanded per head */
        TRY(lm_mla_attend_expanded(&shape, f[1] + b * n * H * (NO + RO), f[2] + b * n * (L + RO),
                                   u->w_uk, u->w_uv, n, n, true, f[3] + b * n * H * V,
                                   u->cfg.ops, err));
    return prefill_out(u, 2, f[3], f[4], x, &t, sec, err);
}

static lm_status prefill_mamba1(lm_unit *u, float *x, double *sec, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t R = u->rows, d = (size_t)s->d_model, Di = (size_t)s->mamba1.d_inner;
    size_t N = (size_t)s->mamba1.d_state, Rk = (size_t)s->mamba1.dt_rank;
    float **f = u->buf; /* h xz z xc dbc dtlow dt bmat cmat y */
    double t = omp_get_wtime();
    lm_rmsnorm_f32(x, NULL, R, d, 1e-5f, f[0]);
    TRY(PROJ(0, f[0], f[1]));
    sec[LM_COMP_PROJ] += unit_lap(&t);
    unit_take_cols(f[1], 2 * Di, 0, Di, R, f[9]);
    unit_take_cols(f[1], 2 * Di, Di, Di, R, f[2]);
    TRY(conv_all(u, f[9], Di, (size_t)s->mamba1.d_conv, f[3], err));
    sec[LM_COMP_MIXING] += unit_lap(&t);
    TRY(PROJ(1, f[3], f[4]));
    unit_take_cols(f[4], Rk + 2 * N, 0, Rk, R, f[5]);
    unit_take_cols(f[4], Rk + 2 * N, Rk, N, R, f[7]);
    unit_take_cols(f[4], Rk + 2 * N, Rk + N, N, R, f[8]);
    TRY(PROJ(2, f[5], f[6]));
    sec[LM_COMP_PROJ] += unit_lap(&t);
    lm_ssm_mamba1_f32 p = {.batch = u->batch, .length = u->held, .channels = Di, .state = N,
                           .x = f[3], .delta_raw = f[6], .delta_bias = u->bias, .a = u->a,
                           .b = f[7], .c = f[8], .skip = u->skip, .z = f[2], .h0 = NULL,
                           .y = f[9], .h_final = u->state, .exact_zoh = false};
    TRY(lm_ssm_mamba1_scan_f32(&p, u->cfg.ops, err)); /* y = scan(xc) * silu(z) */
    return prefill_out(u, 3, f[9], f[0], x, &t, sec, err);
}

static lm_status prefill_mamba2(lm_unit *u, float *x, double *sec, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t R = u->rows, d = (size_t)s->d_model, Di = (size_t)s->mamba2.d_inner;
    size_t N = (size_t)s->mamba2.d_state, G = (size_t)s->mamba2.groups;
    size_t P = (size_t)s->mamba2.head_dim, H = Di / P, ch = Di + 2 * G * N;
    size_t in_w = 2 * Di + 2 * G * N + H;
    float **f = u->buf; /* h zxbcdt xbc xbc_conv x bmat cmat dt y z */
    double t = omp_get_wtime();
    lm_rmsnorm_f32(x, NULL, R, d, 1e-5f, f[0]);
    TRY(PROJ(0, f[0], f[1]));
    sec[LM_COMP_PROJ] += unit_lap(&t);
    unit_take_cols(f[1], in_w, 0, Di, R, f[9]);
    unit_take_cols(f[1], in_w, Di, ch, R, f[2]);
    unit_take_cols(f[1], in_w, Di + ch, H, R, f[7]);
    TRY(conv_all(u, f[2], ch, (size_t)s->mamba2.d_conv, f[3], err));
    unit_take_cols(f[3], ch, 0, Di, R, f[4]);
    unit_take_cols(f[3], ch, Di, G * N, R, f[5]);
    unit_take_cols(f[3], ch, Di + G * N, G * N, R, f[6]);
    lm_ssm_ssd_f32 p = {.batch = u->batch, .length = u->held, .heads = H, .head_dim = P,
                        .groups = G, .state = N, .x = f[4], .dt_raw = f[7], .dt_bias = u->bias,
                        .a = u->a, .b = f[5], .c = f[6], .skip = u->skip, .h0 = NULL,
                        .y = f[8], .h_final = u->state};
    TRY(lm_ssm_ssd_scan_f32(&p, true, PREFILL_SSD_CHUNK, u->cfg.ops, err));
    lm_silu_f32(f[9], R * Di); /* gated RMSNorm: norm(y * silu(z)) */
    for (size_t i = 0; i < R * Di; i++)
        f[8][i] *= f[9][i];
    lm_rmsnorm_f32(f[8], NULL, R, Di, 1e-5f, f[8]);
    return prefill_out(u, 1, f[8], f[0], x, &t, sec, err);
}

static lm_status prefill_delta(lm_unit *u, float *x, double *sec, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t R = u->rows, B = u->batch, n = u->held, d = (size_t)s->d_model;
    size_t Hk = (size_t)s->delta.key_heads, Hv = (size_t)s->delta.value_heads;
    size_t dk = (size_t)s->delta.key_dim, dv = (size_t)s->delta.value_dim;
    size_t kw = Hk * dk, vw = Hv * dv, ch = 2 * kw + vw, in_w = 2 * kw + 2 * vw, rep = Hv / Hk;
    float **f = u->buf; /* h qkvz ba qkv qkv_conv q k v beta+gate y */
    double t = omp_get_wtime();
    lm_rmsnorm_f32(x, NULL, R, d, 1e-6f, f[0]);
    TRY(PROJ(0, f[0], f[1]));
    TRY(PROJ(1, f[0], f[2]));
    sec[LM_COMP_PROJ] += unit_lap(&t);
    unit_take_cols(f[1], in_w, 0, ch, R, f[3]);
    TRY(conv_all(u, f[3], ch, (size_t)s->delta.d_conv, f[4], err));
    /* token-major rows to the kernel's head-major {B Hv, n, width}; value head h reads key
     * head h / rep */
    float *beta = f[8], *gate = f[8] + B * Hv * n;
    for (size_t b = 0; b < B; b++)
        for (size_t tk = 0; tk < n; tk++) {
            const float *row = f[4] + (b * n + tk) * ch, *ba = f[2] + (b * n + tk) * 2 * Hv;
            for (size_t h = 0; h < Hv; h++) {
                size_t at = (b * Hv + h) * n + tk;
                memcpy(f[5] + at * dk, row + (h / rep) * dk, dk * sizeof(float));
                memcpy(f[6] + at * dk, row + kw + (h / rep) * dk, dk * sizeof(float));
                memcpy(f[7] + at * dv, row + 2 * kw + h * dv, dv * sizeof(float));
                beta[at] = 1.0f / (1.0f + expf(-ba[h]));
                gate[at] = expf(-logf(1.0f + expf(ba[Hv + h])) * 0.1f); /* in (0, 1] */
            }
        }
    lm_delta_seq_f32 p = {.heads = B * Hv, .length = n, .d_key = dk, .d_value = dv, .q = f[5],
                          .k = f[6], .v = f[7], .beta = beta, .gate = gate, .s0 = NULL,
                          .y = f[9], .s_final = u->state};
    TRY(lm_delta_rule_f32(&p, true, PREFILL_DELTA_CHUNK, u->cfg.ops, err));
    lm_rmsnorm_f32(f[9], NULL, B * Hv * n, dv, 1e-6f, f[9]); /* per-head norm */
    for (size_t b = 0; b < B; b++) /* gated by silu(z), back to token-major rows in f[7] */
        for (size_t tk = 0; tk < n; tk++) {
            float *z = f[1] + (b * n + tk) * in_w + ch, *o = f[7] + (b * n + tk) * vw;
            lm_silu_f32(z, vw);
            for (size_t h = 0; h < Hv; h++) {
                const float *y = f[9] + ((b * Hv + h) * n + tk) * dv;
                for (size_t i = 0; i < dv; i++)
                    o[h * dv + i] = y[i] * z[h * dv + i];
            }
        }
    return prefill_out(u, 2, f[7], f[0], x, &t, sec, err);
}

/* SwiGLU of the first m rows of f[0] through the GEMMs gate, up, down (g[0..2], shapes
 * dn[0..2]); adds w * result into f[4]. */
static lm_status swiglu(lm_unit *u, lm_gemm *const *g, const lm_dense *dn, size_t m, float w,
                        lm_error *err)
{
    float **f = u->buf;
    size_t ff = dn[0].rows, d = dn[2].rows;
    TRY(gemm(u, g[0], &dn[0], m, f[0], f[1], err));
    TRY(gemm(u, g[1], &dn[1], m, f[0], f[2], err));
    lm_swiglu_f32(f[1], f[2], m * ff);
    TRY(gemm(u, g[2], &dn[2], m, f[1], f[3], err));
    for (size_t i = 0; i < m * d; i++)
        f[4][i] += w * f[3][i];
    return LM_OK;
}

static lm_status prefill_mlp(lm_unit *u, float *x, double *sec, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t R = u->rows, d = (size_t)s->d_model;
    float **f = u->buf; /* h gate up down acc router */
    double t = omp_get_wtime();
    lm_rmsnorm_f32(x, NULL, R, d, 1e-5f, f[0]);
    memset(f[4], 0, R * d * sizeof(float));
    if (u->cfg.kind == LM_MLP_DENSE) {
        TRY(swiglu(u, &u->gemm[0], &u->dense[0], R, 1.0f, err));
    } else {
        TRY(PROJ(0, f[0], f[5])); /* router logits */
        if (s->moe.shared_d_ff > 0)
            TRY(swiglu(u, &u->gemm[1], &u->dense[1], R, 1.0f, err));
        float w = 1.0f / (float)s->moe.active; /* each expert's rows: the prompt's first */
        for (size_t e = 0; e < u->expert_count; e++)
            TRY(swiglu(u, &u->expert_gemm[3 * e], &u->experts[3 * e], u->per_expert, w, err));
    }
    unit_add_into(x, f[4], R * d);
    sec[LM_COMP_MLP] += unit_lap(&t);
    return LM_OK;
}

/* Row `row` of the embedding table, decoded to float32. */
static void embed_row(const lm_dense *table, size_t row, float *out)
{
    size_t c = table->cols;
    if (table->dtype == LM_WEIGHT_F32) {
        memcpy(out, (const float *)table->w + row * c, c * sizeof(float));
    } else if (table->dtype == LM_WEIGHT_BF16) {
        const uint16_t *w = (const uint16_t *)table->w + row * c;
        for (size_t i = 0; i < c; i++)
            out[i] = lm_f32_from_bf16(w[i]);
    } else {
        const int8_t *w = (const int8_t *)table->w + row * c;
        for (size_t i = 0; i < c; i++)
            out[i] = table->scale[row] * (float)w[i];
    }
}

static lm_status prefill_head(lm_unit *u, float *x, double *sec, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t B = u->batch, n = u->held, d = (size_t)s->d_model;
    float **f = u->buf; /* h(last tokens) logits embedded */
    double t = omp_get_wtime();
    const lm_dense *table = &u->dense[s->tied_embeddings ? 0 : 1];
    for (size_t r = 0; r < u->rows; r++) /* the prompt's embedding rows */
        embed_row(table, (size_t)(r * 7919u + 17u) % table->rows, f[2] + r * d);
    for (size_t b = 0; b < B; b++) /* logits of the last token of each sequence */
        memcpy(f[0] + b * d, x + (b * n + n - 1) * d, d * sizeof(float));
    lm_rmsnorm_f32(f[0], NULL, B, d, 1e-5f, f[0]);
    TRY(lm_dense_apply(&u->dense[0], f[0], B, f[1], u->cfg.ops, err));
    sec[LM_COMP_HEAD] += unit_lap(&t);
    return LM_OK;
}

lm_status lm_unit_prefill(lm_unit *u, float *x, double seconds[LM_COMP_COUNT], lm_error *err)
{
    if (u->cfg.role == LM_UNIT_HEAD)
        return prefill_head(u, x, seconds, err);
    if (u->cfg.role == LM_UNIT_MLP)
        return prefill_mlp(u, x, seconds, err);
    switch ((lm_mixer_kind)u->cfg.kind) {
    case LM_MIXER_ATTENTION: return prefill_attention(u, x, seconds, err);
    case LM_MIXER_MLA: return prefill_mla(u, x, seconds, err);
    case LM_MIXER_MAMBA1: return prefill_mamba1(u, x, seconds, err);
    case LM_MIXER_MAMBA2: return prefill_mamba2(u, x, seconds, err);
    case LM_MIXER_DELTA: return prefill_delta(u, x, seconds, err);
    default: return lm_fail(err, LM_ERR_ARG, "unknown mixer kind %d", u->cfg.kind);
    }
}

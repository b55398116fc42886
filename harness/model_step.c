/* One decode step of each unit (model_unit.h): the order of operations of the real layer,
 * timed by component. Activations are rows {batch, width}. */
#include "model_unit_impl.h"
#include "try.h"

#include <math.h>
#include <omp.h>
#include <string.h>

/* y {nb, rows} = x {nb, cols} W^T for one of the unit's projections d (u->dense[i] or
 * u->experts[e]): through its packed GEMM when the unit has one (lm_unit_decode_gemm; built
 * for the rows it is called with: batch, or per_expert for an expert), else longmix's GEMV. */
static lm_status project(lm_unit *u, const lm_dense *d, const float *x, size_t nb, float *y,
                         lm_error *err)
{
    lm_gemm *g = NULL;
    for (size_t i = 0; i < u->dense_count && g == NULL; i++)
        if (d == &u->dense[i])
            g = u->gemm[i];
    for (size_t e = 0; u->expert_gemm != NULL && e < 3 * u->expert_count && g == NULL; e++)
        if (d == &u->experts[e])
            g = u->expert_gemm[e];
    return g != NULL ? lm_gemm_run(g, x, y, err) : lm_dense_apply(d, x, nb, y, u->cfg.ops, err);
}

/* Starts a mixer step: h = rmsnorm(x) {B, d} into buf[0] (eps as the layer's), then
 * buf[1 + i] = dense[i](h) for each i < in_count, the layer's input projections. */
static lm_status mixer_in(lm_unit *u, const float *x, float eps, size_t in_count, lm_error *err)
{
    size_t B = u->batch;
    lm_rmsnorm_f32(x, NULL, B, (size_t)u->cfg.spec->d_model, eps, u->buf[0]);
    for (size_t i = 0; i < in_count; i++)
        TRY(project(u, &u->dense[i], u->buf[0], B, u->buf[1 + i], err));
    return LM_OK;
}

/* Ends a mixer step: the time since *t is mixing; then x {B, d} += out(o) through the
 * scratch row buffer tmp {B, d}, and that time is projection. */
static lm_status mixer_out(lm_unit *u, const lm_dense *out, const float *o, float *tmp,
                           float *x, double *t, double *sec, lm_error *err)
{
    size_t B = u->batch;
    sec[LM_COMP_MIXING] += unit_lap(t);
    TRY(project(u, out, o, B, tmp, err));
    unit_add_into(x, tmp, B * (size_t)u->cfg.spec->d_model);
    sec[LM_COMP_PROJ] += unit_lap(t);
    return LM_OK;
}

static lm_status conv_step(lm_unit *u, const float *x, size_t ch, size_t K, float *y, lm_error *err)
{
    lm_conv_causal_f32 p = {.batch = u->batch, .length = 1, .channels = ch, .width = K, .x = x,
                            .weight = u->conv_w, .bias = NULL, .tail_in = u->tail, .y = y,
                            .tail_out = u->tail, .apply_silu = true};
    return lm_conv_causal(&p, u->cfg.ops, err);
}

static lm_status step_attention(lm_unit *u, float *x, double *sec, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    const lm_ops *ops = u->cfg.ops;
    size_t B = u->batch, H = (size_t)s->attention.heads;
    size_t KV = (size_t)s->attention.kv_heads, hd = (size_t)s->attention.head_dim;
    float **f = u->buf; /* h q k v o out [gate] */
    double t = omp_get_wtime();
    TRY(mixer_in(u, x, 1e-5f, 3, err));
    if (s->attention.q_gate)
        TRY(project(u, &u->dense[4], f[0], B, f[6], err));
    sec[LM_COMP_PROJ] += unit_lap(&t);
    if (!u->cfg.cache.quantized) {
        lm_attn_decode_args a = {.q = f[1], .k = u->k, .v = u->v, .lengths = u->lengths,
                                 .o = f[4], .batch = B, .heads = H, .kv_heads = KV,
                                 .head_dim = hd, .capacity = u->held, .dtype = u->cfg.cache.dense};
        TRY(lm_attn_decode(&a, ops, err));
    } else {
        for (size_t b = 0; b < B; b++)
            TRY(lm_kvq_decode(&u->kvq[b], f[1] + b * H * hd, H, f[4] + b * H * hd, ops, err));
    }
    if (s->attention.q_gate) /* o *= sigmoid(gate) */
        for (size_t i = 0; i < B * H * hd; i++)
            f[4][i] /= 1.0f + expf(-f[6][i]);
    return mixer_out(u, &u->dense[3], f[4], f[5], x, &t, sec, err);
}

static lm_status step_mla(lm_unit *u, float *x, double *sec, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t B = u->batch, H = (size_t)s->mla.heads;
    size_t R = (size_t)s->mla.rope, NO = (size_t)s->mla.nope, V = (size_t)s->mla.v_dim;
    size_t row = (size_t)(s->mla.latent + s->mla.rope);
    lm_mla_shape shape = {H, (size_t)s->mla.latent, R, NO, V};
    float **f = u->buf; /* h q ckv_new o out */
    double t = omp_get_wtime();
    TRY(mixer_in(u, x, 1e-6f, 2, err));
    lm_rmsnorm_f32(f[2], NULL, B, (size_t)s->mla.latent, 1e-6f, f[2]); /* kv_a_layernorm */
    sec[LM_COMP_PROJ] += unit_lap(&t);
    for (size_t b = 0; b < B; b++)
        TRY(lm_mla_attend_absorbed(&shape, f[1] + b * H * (NO + R), u->ckv + b * u->held * row,
                                   u->w_uk, u->w_uv, 1, u->held, false, f[3] + b * H * V,
                                   u->cfg.ops, err));
    return mixer_out(u, &u->dense[2], f[3], f[4], x, &t, sec, err);
}

static lm_status step_mamba1(lm_unit *u, float *x, double *sec, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    const lm_ops *ops = u->cfg.ops;
    size_t B = u->batch, Di = (size_t)s->mamba1.d_inner;
    size_t N = (size_t)s->mamba1.d_state, R = (size_t)s->mamba1.dt_rank;
    float **f = u->buf; /* h xz xs(z) xc dbc dtlow dt bmat cmat y */
    double t = omp_get_wtime();
    TRY(mixer_in(u, x, 1e-5f, 1, err));
    sec[LM_COMP_PROJ] += unit_lap(&t);
    unit_take_cols(f[1], 2 * Di, 0, Di, B, f[9]);  /* x into y's buffer for the conv input */
    unit_take_cols(f[1], 2 * Di, Di, Di, B, f[2]); /* z */
    TRY(conv_step(u, f[9], Di, (size_t)s->mamba1.d_conv, f[3], err));
    sec[LM_COMP_MIXING] += unit_lap(&t);
    TRY(project(u, &u->dense[1], f[3], B, f[4], err));
    unit_take_cols(f[4], R + 2 * N, 0, R, B, f[5]);
    unit_take_cols(f[4], R + 2 * N, R, N, B, f[7]);
    unit_take_cols(f[4], R + 2 * N, R + N, N, B, f[8]);
    TRY(project(u, &u->dense[2], f[5], B, f[6], err));
    sec[LM_COMP_PROJ] += unit_lap(&t);
    TRY(lm_ssm_mamba1_decode_checked_f32(&u->m1, ops, err)); /* y = scan(xc) * silu(z) */
    return mixer_out(u, &u->dense[3], f[9], f[0], x, &t, sec, err);
}

static lm_status step_mamba2(lm_unit *u, float *x, double *sec, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t B = u->batch, Di = (size_t)s->mamba2.d_inner;
    size_t N = (size_t)s->mamba2.d_state, G = (size_t)s->mamba2.groups;
    size_t P = (size_t)s->mamba2.head_dim, H = Di / P, ch = Di + 2 * G * N;
    size_t in_w = 2 * Di + 2 * G * N + H;
    float **f = u->buf; /* h zxbcdt xbc xbc_conv x bmat cmat dt y z */
    double t = omp_get_wtime();
    TRY(mixer_in(u, x, 1e-5f, 1, err));
    sec[LM_COMP_PROJ] += unit_lap(&t);
    unit_take_cols(f[1], in_w, 0, Di, B, f[9]);
    unit_take_cols(f[1], in_w, Di, ch, B, f[2]);
    unit_take_cols(f[1], in_w, Di + ch, H, B, f[7]);
    TRY(conv_step(u, f[2], ch, (size_t)s->mamba2.d_conv, f[3], err));
    unit_take_cols(f[3], ch, 0, Di, B, f[4]);
    unit_take_cols(f[3], ch, Di, G * N, B, f[5]);
    unit_take_cols(f[3], ch, Di + G * N, G * N, B, f[6]);
    lm_ssm_ssd_f32 p = {.batch = B, .length = 1, .heads = H, .head_dim = P, .groups = G,
                        .state = N, .x = f[4], .dt_raw = f[7], .dt_bias = u->bias, .a = u->a,
                        .b = f[5], .c = f[6], .skip = u->skip, .h0 = u->state, .y = f[8],
                        .h_final = u->state};
    TRY(lm_ssm_ssd_decode_f32(&p, u->cfg.ops, err));
    lm_silu_f32(f[9], B * Di); /* gated RMSNorm: norm(y * silu(z)) */
    for (size_t i = 0; i < B * Di; i++)
        f[8][i] *= f[9][i];
    lm_rmsnorm_f32(f[8], NULL, B, Di, 1e-5f, f[8]);
    return mixer_out(u, &u->dense[1], f[8], f[0], x, &t, sec, err);
}

static lm_status step_delta(lm_unit *u, float *x, double *sec, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t B = u->batch, Hk = (size_t)s->delta.key_heads;
    size_t Hv = (size_t)s->delta.value_heads, dk = (size_t)s->delta.key_dim;
    size_t dv = (size_t)s->delta.value_dim, kw = Hk * dk, vw = Hv * dv, ch = 2 * kw + vw;
    size_t rep = Hv / Hk;
    float **f = u->buf; /* h qkvz ba qkv qkv_conv q k v beta+gate y */
    double t = omp_get_wtime();
    TRY(mixer_in(u, x, 1e-6f, 2, err));
    sec[LM_COMP_PROJ] += unit_lap(&t);
    unit_take_cols(f[1], 2 * kw + 2 * vw, 0, ch, B, f[3]);
    TRY(conv_step(u, f[3], ch, (size_t)s->delta.d_conv, f[4], err));
    for (size_t b = 0; b < B; b++) /* value head h reads key head h / rep */
        for (size_t h = 0; h < Hv; h++) {
            const float *row = f[4] + b * ch;
            memcpy(f[5] + (b * Hv + h) * dk, row + (h / rep) * dk, dk * sizeof(float));
            memcpy(f[6] + (b * Hv + h) * dk, row + kw + (h / rep) * dk, dk * sizeof(float));
            memcpy(f[7] + (b * Hv + h) * dv, row + 2 * kw + h * dv, dv * sizeof(float));
            float bl = f[2][b * 2 * Hv + h], gl = f[2][b * 2 * Hv + Hv + h];
            f[8][b * Hv + h] = 1.0f / (1.0f + expf(-bl));                 /* beta */
            f[8][B * Hv + b * Hv + h] = expf(-logf(1.0f + expf(gl)) * 0.1f); /* gate in (0, 1] */
        }
    lm_delta_seq_f32 p = {.heads = B * Hv, .length = 1, .d_key = dk, .d_value = dv, .q = f[5],
                          .k = f[6], .v = f[7], .beta = f[8], .gate = f[8] + B * Hv,
                          .s0 = u->state, .y = f[9], .s_final = u->state};
    TRY(lm_delta_rule_f32(&p, false, 1, u->cfg.ops, err));
    lm_rmsnorm_f32(f[9], NULL, B * Hv, dv, 1e-6f, f[9]); /* per-head norm, gated by silu(z) */
    for (size_t b = 0; b < B; b++) {
        float *z = f[1] + b * (2 * kw + 2 * vw) + ch;
        lm_silu_f32(z, vw);
        for (size_t i = 0; i < vw; i++)
            f[9][b * vw + i] *= z[i];
    }
    return mixer_out(u, &u->dense[2], f[9], f[0], x, &t, sec, err);
}

/* SwiGLU of the first nb rows of h through gate, up, down; adds w * result into acc. */
static lm_status swiglu(lm_unit *u, const lm_dense *g, const lm_dense *up, const lm_dense *down,
                        float **f, size_t nb, float w, lm_error *err)
{
    size_t ff = g->rows, d = down->rows;
    TRY(project(u, g, f[0], nb, f[1], err));
    TRY(project(u, up, f[0], nb, f[2], err));
    lm_swiglu_f32(f[1], f[2], nb * ff);
    TRY(project(u, down, f[1], nb, f[3], err));
    for (size_t i = 0; i < nb * d; i++)
        f[4][i] += w * f[3][i];
    return LM_OK;
}

static lm_status step_mlp(lm_unit *u, float *x, double *sec, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t B = u->batch, d = (size_t)s->d_model;
    float **f = u->buf; /* h gate up down acc router */
    double t = omp_get_wtime();
    lm_rmsnorm_f32(x, NULL, B, d, 1e-5f, f[0]);
    memset(f[4], 0, B * d * sizeof(float));
    if (u->cfg.kind == LM_MLP_DENSE) {
        TRY(swiglu(u, &u->dense[0], &u->dense[1], &u->dense[2], f, B, 1.0f, err));
    } else {
        TRY(project(u, &u->dense[0], f[0], B, f[5], err)); /* router logits */
        if (s->moe.shared_d_ff > 0)
            TRY(swiglu(u, &u->dense[1], &u->dense[2], &u->dense[3], f, B, 1.0f, err));
        float w = 1.0f / (float)s->moe.active; /* each expert's rows: the batch's first */
        for (size_t e = 0; e < u->expert_count; e++)
            TRY(swiglu(u, &u->experts[3 * e], &u->experts[3 * e + 1], &u->experts[3 * e + 2], f,
                       u->per_expert, w, err));
    }
    unit_add_into(x, f[4], B * d);
    sec[LM_COMP_MLP] += unit_lap(&t);
    return LM_OK;
}

static lm_status step_head(lm_unit *u, float *x, double *sec, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t B = u->batch, d = (size_t)s->d_model;
    float **f = u->buf; /* h logits embedded */
    double t = omp_get_wtime();
    lm_rmsnorm_f32(x, NULL, B, d, 1e-5f, f[0]);
    TRY(project(u, &u->dense[0], f[0], B, f[1], err));
    const lm_dense *table = &u->dense[s->tied_embeddings ? 0 : 1];
    for (size_t b = 0; b < B; b++) { /* the next token's embedding row */
        size_t token = (size_t)(b * 7919u + 17u) % table->rows;
        for (size_t i = 0; i < d; i++)
            f[2][b * d + i] = (float)lm_dense_weight(table, token, i);
    }
    sec[LM_COMP_HEAD] += unit_lap(&t);
    return LM_OK;
}

lm_status lm_unit_step(lm_unit *u, float *x, double seconds[LM_COMP_COUNT], lm_error *err)
{
    if (u->cfg.prompt > 0)
        return lm_unit_prefill(u, x, seconds, err);
    if (u->cfg.role == LM_UNIT_HEAD)
        return step_head(u, x, seconds, err);
    if (u->cfg.role == LM_UNIT_MLP)
        return step_mlp(u, x, seconds, err);
    switch ((lm_mixer_kind)u->cfg.kind) {
    case LM_MIXER_ATTENTION: return step_attention(u, x, seconds, err);
    case LM_MIXER_MLA: return step_mla(u, x, seconds, err);
    case LM_MIXER_MAMBA1: return step_mamba1(u, x, seconds, err);
    case LM_MIXER_MAMBA2: return step_mamba2(u, x, seconds, err);
    case LM_MIXER_DELTA: return step_delta(u, x, seconds, err);
    default: return lm_fail(err, LM_ERR_ARG, "unknown mixer kind %d", u->cfg.kind);
    }
}

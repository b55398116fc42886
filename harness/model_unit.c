/* The units of a decode step, assembled from longmix's kernels: lm_dense_apply for every
 * projection, lm_attn_decode / lm_kvq_decode for attention, lm_mla_attend_absorbed,
 * lm_conv_causal + lm_ssm_mamba1_decode_checked_f32, lm_ssm_ssd_decode_f32,
 * lm_delta_rule_f32; RMSNorm and SwiGLU from kernels/layers. Shapes beside each buffer. */
#include "model_unit_impl.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static const char *const component_names[LM_COMP_COUNT] = {"proj", "mixing", "mlp", "head"};
const char *lm_component_name(lm_model_component c)
{
    return (unsigned)c < LM_COMP_COUNT ? component_names[c] : "unknown";
}


/* ---- sizes ---------------------------------------------------------------------------- */

long long lm_moe_experts_reached(long long experts, long long active, size_t batch)
{
    double miss = pow(1.0 - (double)active / (double)experts, (double)batch);
    long long reached = (long long)ceil((double)experts * (1.0 - miss) - 1e-9);
    return reached < active ? active : reached > experts ? experts : reached;
}

static double held_tokens(const lm_unit_config *c)
{
    long long w = c->spec->attention.window;
    return (double)(w > 0 && w < c->ctx ? w : c->ctx);
}

void lm_unit_signature(const lm_unit_config *c, long long out[LM_UNIT_SIGNATURE_LEN])
{
    const lm_model_spec *s = c->spec;
    for (int i = 0; i < LM_UNIT_SIGNATURE_LEN; i++)
        out[i] = 0;
    out[0] = c->role;
    out[1] = c->role == LM_UNIT_HEAD ? 0 : c->kind;
    out[2] = (long long)c->batch;
    out[3] = s->d_model;
    out[4] = c->prompt;
    long long *k = out + 5; /* 8 entries: the section's shapes */
    if (c->role == LM_UNIT_HEAD) {
        k[0] = s->vocab;
        k[1] = s->tied_embeddings;
    } else if (c->role == LM_UNIT_MLP) { /* the router's and the shared experts' widths
                                          * size a dense unit's buffers too (build_mlp) */
        k[0] = c->kind == LM_MLP_DENSE ? s->mlp.d_ff : 0;
        k[1] = s->moe.experts;
        k[2] = s->moe.active;
        k[3] = s->moe.d_ff;
        k[4] = s->moe.shared_d_ff;
    } else if (c->kind == LM_MIXER_ATTENTION) {
        /* decode: the tokens held; prefill: the window's mask (model_prefill.c masks with
         * any window, so a window is part of the unit even past the prompt) */
        const long long a[] = {s->attention.heads,
                               s->attention.kv_heads,
                               s->attention.head_dim,
                               s->attention.q_gate,
                               c->prompt > 0 ? 0 : (long long)held_tokens(c),
                               c->prompt > 0 ? s->attention.window : 0};
        memcpy(k, a, sizeof a);
    } else if (c->kind == LM_MIXER_MLA) {
        const long long a[] = {s->mla.heads, s->mla.latent, s->mla.rope, s->mla.nope,
                               s->mla.v_dim, c->prompt > 0 ? 0 : c->ctx};
        memcpy(k, a, sizeof a);
    } else if (c->kind == LM_MIXER_MAMBA1) {
        const long long a[] = {s->mamba1.d_inner, s->mamba1.d_state, s->mamba1.d_conv,
                               s->mamba1.dt_rank};
        memcpy(k, a, sizeof a);
    } else if (c->kind == LM_MIXER_MAMBA2) {
        const long long a[] = {s->mamba2.d_inner, s->mamba2.d_state, s->mamba2.head_dim,
                               s->mamba2.groups, s->mamba2.d_conv};
        memcpy(k, a, sizeof a);
    } else if (c->kind == LM_MIXER_DELTA) {
        const long long a[] = {s->delta.key_heads, s->delta.value_heads, s->delta.key_dim,
                               s->delta.value_dim, s->delta.d_conv};
        memcpy(k, a, sizeof a);
    }
}

bool lm_unit_decode_gemm(const lm_unit_config *cfg)
{
    return cfg->prompt == 0 && cfg->weights == LM_WEIGHT_BF16 && cfg->ops != NULL &&
           cfg->ops->isa == LM_ISA_AVX512BF16 && lm_gemm_available();
}

double lm_unit_x_roundoff(const lm_unit_config *cfg)
{
    return lm_unit_decode_gemm(cfg) ? 0x1p-9
                                    : lm_dense_x_roundoff(cfg->weights, cfg->ops, cfg->batch);
}

size_t lm_unit_rows(const lm_unit_config *cfg)
{
    return cfg->prompt > 0 ? cfg->batch * (size_t)cfg->prompt : cfg->batch;
}

void lm_unit_bytes_of(const lm_unit_config *c, lm_unit_bytes *out)
{
    const lm_model_spec *s = c->spec;
    double wb = (double)lm_weight_dtype_size(c->weights), B = (double)c->batch;
    /* Activations are per row: a decode unit has batch rows, a prefill unit batch x prompt;
     * a prefill unit holds its weights twice while it packs them (plain, then the GEMM's),
     * a decode unit on lm_gemm keeps both (the plain ones for its float64 reference). */
    const double rows = (double)lm_unit_rows(c);
    const double twice = c->prompt > 0 || lm_unit_decode_gemm(c) ? 2.0 : 1.0;
    memset(out, 0, sizeof *out);
    double d = (double)s->d_model;
    if (c->role == LM_UNIT_HEAD) {
        out->weights_read = (double)s->vocab * d * wb + rows * d * wb;
        out->alloc = (double)s->vocab * d * wb * (s->tied_embeddings ? 1.0 : 2.0) + B * (double)s->vocab * 4.0 +
                     rows * d * 4.0 + (twice - 1.0) * (double)s->vocab * d * wb;
        return;
    }
    if (c->role == LM_UNIT_MLP) {
        if (c->kind == LM_MLP_MOE) {
            double reached = (double)lm_moe_experts_reached(s->moe.experts, s->moe.active, lm_unit_rows(c));
            out->weights_read = wb * (d * (double)s->moe.experts + reached * 3.0 * d * (double)s->moe.d_ff +
                                      3.0 * d * (double)s->moe.shared_d_ff);
        } else {
            out->weights_read = wb * 3.0 * d * (double)s->mlp.d_ff;
        }
        out->alloc = twice * out->weights_read + rows * 4.0 * (4.0 * d + 3.0 * (double)(s->mlp.d_ff + s->moe.d_ff + s->moe.shared_d_ff) + (double)s->moe.experts);
        return;
    }
    double params = (double)lm_model_mixer_params(s, (lm_mixer_kind)c->kind);
    out->weights_read = params * wb;
    double acts = 0.0;
    switch ((lm_mixer_kind)c->kind) {
    case LM_MIXER_ATTENTION: {
        /* the kernel reads the held tokens of every sequence */
        out->cache = c->prompt > 0 ? 0.0 : B * held_tokens(c) * lm_model_kv_token_bytes(s, &c->cache);
        acts = 4.0 * (double)(s->attention.heads * s->attention.head_dim) + 2.0 * d;
        break;
    }
    case LM_MIXER_MLA: {
        double w_abs = (double)(s->mla.latent * s->mla.heads * (s->mla.nope + s->mla.v_dim));
        out->weights_read += w_abs * (4.0 - wb); /* the absorbed weights are float32 */
        out->cache = c->prompt > 0 ? 0.0 : B * (double)c->ctx * (double)(s->mla.latent + s->mla.rope) * 4.0;
        acts = (double)(s->mla.heads * (s->mla.nope + s->mla.rope + s->mla.v_dim)) + 2.0 * d + 1024.0;
        if (c->prompt > 0) /* lm_mla_attend_expanded's K and V of one sequence */
            acts += 2.0 * (double)(s->mla.heads * (s->mla.nope + s->mla.rope)) / B;
        break;
    }
    case LM_MIXER_MAMBA1: {
        double di = (double)s->mamba1.d_inner;
        out->state = B * 4.0 * di * (double)(s->mamba1.d_state + s->mamba1.d_conv - 1);
        acts = 8.0 * di + 2.0 * d + 512.0;
        break;
    }
    case LM_MIXER_MAMBA2: {
        double di = (double)s->mamba2.d_inner, gn = (double)(s->mamba2.groups * s->mamba2.d_state);
        out->state = B * 4.0 * (di * (double)s->mamba2.d_state + (di + 2.0 * gn) * (double)(s->mamba2.d_conv - 1));
        acts = 6.0 * di + 8.0 * gn + 2.0 * d + 512.0;
        break;
    }
    case LM_MIXER_DELTA: {
        double k = (double)(s->delta.key_heads * s->delta.key_dim);
        double v = (double)(s->delta.value_heads * s->delta.value_dim);
        double kv = (double)(s->delta.value_heads * s->delta.key_dim);
        out->state = B * 4.0 * ((double)s->delta.value_heads * (double)(s->delta.key_dim * s->delta.value_dim) +
                                (2.0 * k + v) * (double)(s->delta.d_conv - 1));
        acts = 4.0 * (2.0 * k + 2.0 * v) + 4.0 * kv + 4.0 * v + 2.0 * d + 512.0;
        break;
    }
    default:
        break;
    }
    out->alloc = twice * out->weights_read + out->cache + out->state + rows * 4.0 * acts;
}

/* ---- building ------------------------------------------------------------------------- */

static lm_status add_dense(lm_unit *u, size_t rows, size_t cols, lm_error *err)
{
    lm_dense *d = &u->dense[u->dense_count];
    lm_status st = lm_dense_init(d, rows, cols, u->cfg.weights,
                                 u->cfg.seed * 131u + u->dense_count + 1u, err);
    if (st == LM_OK)
        u->dense_count++;
    return st;
}

/* buf[i] of `floats` floats, zero-filled. */
static lm_status add_buf(lm_unit *u, size_t i, size_t floats, lm_error *err)
{
    u->buf[i] = lm_alloc((floats > 0 ? floats : 1) * sizeof(float));
    return u->buf[i] != NULL ? LM_OK : lm_fail(err, LM_ERR_NOMEM, "out of memory for a unit buffer");
}

/* Cheap values in [-scale, scale): a 64-entry table tiled (caches of gigabytes are filled
 * at memory speed; their values do not change the time of a step). */
static void fill_f32(float *x, size_t count, float scale, uint64_t seed)
{
    float table[64];
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    for (int i = 0; i < 64; i++)
        table[i] = (float)lm_rng_uniform(&rng, -(double)scale, (double)scale);
    for (size_t i = 0; i < count; i++)
        x[i] = table[(i * 7 + i / 64) % 64];
}

static lm_status build_attention(lm_unit *u, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t d = (size_t)s->d_model, H = (size_t)s->attention.heads;
    size_t KV = (size_t)s->attention.kv_heads, hd = (size_t)s->attention.head_dim, B = u->batch;
    lm_status st = LM_OK;
    u->held = (size_t)held_tokens(&u->cfg);
    if (st == LM_OK) st = add_dense(u, H * hd, d, err);  /* q */
    if (st == LM_OK) st = add_dense(u, KV * hd, d, err); /* k */
    if (st == LM_OK) st = add_dense(u, KV * hd, d, err); /* v */
    if (st == LM_OK) st = add_dense(u, d, H * hd, err);  /* o */
    if (st == LM_OK && s->attention.q_gate) st = add_dense(u, H * hd, d, err); /* gate */
    size_t widths[6] = {d, H * hd, KV * hd, KV * hd, H * hd, d}; /* h q k v o out */
    for (size_t i = 0; i < 6 && st == LM_OK; i++)
        st = add_buf(u, i, u->rows * widths[i], err);
    if (st == LM_OK && s->attention.q_gate)
        st = add_buf(u, 6, u->rows * H * hd, err);
    if (st != LM_OK || u->cfg.prompt > 0) /* a prefill's K and V are its projections' */
        return st;
    if (!u->cfg.cache.quantized) {
        size_t count = B * KV * u->held * hd, es = lm_kv_dtype_size(u->cfg.cache.dense);
        u->k = lm_alloc(count * es);
        u->v = lm_alloc(count * es);
        u->lengths = lm_alloc(B * sizeof(size_t));
        float *row = lm_alloc(4096 * sizeof(float));
        if (u->k == NULL || u->v == NULL || u->lengths == NULL || row == NULL) {
            lm_free(row);
            return lm_fail(err, LM_ERR_NOMEM, "out of memory for a KV cache of %zu tokens x %zu",
                           u->held, B);
        }
        fill_f32(row, 4096, 1.0f, u->cfg.seed + 7u);
        char *kb = u->k, *vb = u->v;
        for (size_t at = 0; at < count; at += 4096) {
            size_t n = count - at < 4096 ? count - at : 4096;
            lm_kv_store(u->cfg.cache.dense, row, kb + at * es, n);
            lm_kv_store(u->cfg.cache.dense, row, vb + at * es, n);
        }
        lm_free(row);
        for (size_t b = 0; b < B; b++)
            u->lengths[b] = u->held;
        return LM_OK;
    }
    u->kvq = calloc(B, sizeof *u->kvq);
    float *kt = lm_alloc(KV * hd * 64 * sizeof(float)), *vt = lm_alloc(KV * hd * 64 * sizeof(float));
    if (u->kvq == NULL || kt == NULL || vt == NULL) {
        lm_free(kt);
        lm_free(vt);
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for quantized caches");
    }
    fill_f32(kt, KV * hd * 64, 1.0f, u->cfg.seed + 11u);
    fill_f32(vt, KV * hd * 64, 1.0f, u->cfg.seed + 13u);
    size_t group = LM_KVQ_KIVI_GROUP_MAX;
    size_t capacity = (u->held + group - 1) / group * group;
    for (size_t b = 0; b < B && st == LM_OK; b++) {
        st = lm_kvq_cache_init(&u->kvq[b], u->cfg.cache.format, KV, hd, capacity, 32, err);
        for (size_t t = 0; t < u->held && st == LM_OK; t++)
            st = lm_kvq_cache_append(&u->kvq[b], kt + (t % 64) * KV * hd, vt + (t % 64) * KV * hd, err);
    }
    lm_free(kt);
    lm_free(vt);
    return st;
}

static lm_status build_mla(lm_unit *u, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t d = (size_t)s->d_model, H = (size_t)s->mla.heads, L = (size_t)s->mla.latent;
    size_t R = (size_t)s->mla.rope, NO = (size_t)s->mla.nope, V = (size_t)s->mla.v_dim, B = u->batch;
    lm_status st = add_dense(u, H * (NO + R), d, err);  /* q */
    if (st == LM_OK) st = add_dense(u, L + R, d, err);  /* kv_a: latent + rope of the new token */
    if (st == LM_OK) st = add_dense(u, d, H * V, err);  /* o */
    size_t widths[5] = {d, H * (NO + R), L + R, H * V, d}; /* h q ckv_new o out */
    for (size_t i = 0; i < 5 && st == LM_OK; i++)
        st = add_buf(u, i, u->rows * widths[i], err);
    if (st != LM_OK)
        return st;
    u->held = (size_t)u->cfg.ctx;
    if (u->cfg.prompt > 0) /* the prompt's latent rows are the kv_a projection's output */
        u->held = 0;
    u->ckv = u->held == 0 ? NULL : lm_alloc(B * u->held * (L + R) * sizeof(float));
    u->w_uk = lm_alloc(L * H * NO * sizeof(float));
    u->w_uv = lm_alloc(L * H * V * sizeof(float));
    if ((u->ckv == NULL && u->held > 0) || u->w_uk == NULL || u->w_uv == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for the latent cache");
    if (u->ckv != NULL)
        fill_f32(u->ckv, B * u->held * (L + R), 1.0f, u->cfg.seed + 17u);
    fill_f32(u->w_uk, L * H * NO, 1.0f / sqrtf((float)L), u->cfg.seed + 19u);
    fill_f32(u->w_uv, L * H * V, 1.0f / sqrtf((float)L), u->cfg.seed + 23u);
    return LM_OK;
}

/* SSM parameters: a {count} <= 0, bias, skip {skip_count}, conv weights {ch, K}, tail. */
static lm_status ssm_params(lm_unit *u, size_t a_count, size_t skip_count, size_t ch, size_t K,
                            size_t state_floats, lm_error *err)
{
    u->a = lm_alloc(a_count * sizeof(float));
    u->bias = lm_alloc(skip_count * sizeof(float));
    u->skip = lm_alloc(skip_count * sizeof(float));
    u->conv_w = lm_alloc(ch * K * sizeof(float));
    u->tail = lm_alloc(u->batch * ch * (K > 1 ? K - 1 : 1) * sizeof(float));
    u->state = lm_alloc(state_floats * sizeof(float));
    if (!u->a || !u->bias || !u->skip || !u->conv_w || !u->tail || !u->state)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for the recurrent state");
    for (size_t i = 0; i < a_count; i++)
        u->a[i] = -(float)(1 + i % 16) * 0.25f;
    for (size_t i = 0; i < skip_count; i++) {
        u->bias[i] = -2.0f;
        u->skip[i] = 1.0f;
    }
    fill_f32(u->conv_w, ch * K, 0.5f, u->cfg.seed + 29u);
    fill_f32(u->state, state_floats, 0.1f, u->cfg.seed + 31u);
    return LM_OK;
}

static lm_status build_mamba1(lm_unit *u, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t d = (size_t)s->d_model, Di = (size_t)s->mamba1.d_inner, N = (size_t)s->mamba1.d_state;
    size_t R = (size_t)s->mamba1.dt_rank, K = (size_t)s->mamba1.d_conv, B = u->batch;
    lm_status st = add_dense(u, 2 * Di, d, err);       /* in: x, z */
    if (st == LM_OK) st = add_dense(u, R + 2 * N, Di, err); /* x_proj: dt, B, C */
    if (st == LM_OK) st = add_dense(u, Di, R, err);    /* dt_proj */
    if (st == LM_OK) st = add_dense(u, d, Di, err);    /* out */
    /* h xz xs xc dbc dtlow dt bmat cmat y ; z is xs's neighbour in xz */
    size_t widths[10] = {d, 2 * Di, Di, Di, R + 2 * N, R, Di, N, N, Di};
    for (size_t i = 0; i < 10 && st == LM_OK; i++)
        st = add_buf(u, i, u->rows * widths[i], err);
    if (st == LM_OK) st = ssm_params(u, Di * N, Di, Di, K, B * Di * N, err);
    if (st != LM_OK || u->cfg.prompt > 0) /* a prefill sets up its scan when it runs */
        return st;
    u->m1 = (lm_ssm_mamba1_f32){.batch = B, .length = 1, .channels = Di, .state = N,
                                .x = u->buf[3], .delta_raw = u->buf[6], .delta_bias = u->bias,
                                .a = u->a, .b = u->buf[7], .c = u->buf[8], .skip = u->skip,
                                .z = u->buf[2], .h0 = u->state, .y = u->buf[9],
                                .h_final = u->state, .exact_zoh = false};
    return lm_ssm_mamba1_check_f32(&u->m1, err);
}

static lm_status build_mamba2(lm_unit *u, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t d = (size_t)s->d_model, Di = (size_t)s->mamba2.d_inner, N = (size_t)s->mamba2.d_state;
    size_t G = (size_t)s->mamba2.groups, P = (size_t)s->mamba2.head_dim, H = Di / P;
    size_t K = (size_t)s->mamba2.d_conv, B = u->batch, ch = Di + 2 * G * N;
    lm_status st = add_dense(u, 2 * Di + 2 * G * N + H, d, err); /* in: z, xBC, dt */
    if (st == LM_OK) st = add_dense(u, d, Di, err);              /* out */
    /* h zxbcdt xbc xbc_conv x bmat cmat dt y z */
    size_t widths[10] = {d, 2 * Di + 2 * G * N + H, ch, ch, Di, G * N, G * N, H, Di, Di};
    for (size_t i = 0; i < 10 && st == LM_OK; i++)
        st = add_buf(u, i, u->rows * widths[i], err);
    if (st == LM_OK) st = ssm_params(u, H, H, ch, K, B * H * P * N, err);
    return st;
}

static lm_status build_delta(lm_unit *u, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t d = (size_t)s->d_model, Hk = (size_t)s->delta.key_heads, Hv = (size_t)s->delta.value_heads;
    size_t dk = (size_t)s->delta.key_dim, dv = (size_t)s->delta.value_dim, K = (size_t)s->delta.d_conv;
    size_t B = u->batch, kw = Hk * dk, vw = Hv * dv, ch = 2 * kw + vw;
    lm_status st = add_dense(u, 2 * kw + 2 * vw, d, err); /* qkvz */
    if (st == LM_OK) st = add_dense(u, 2 * Hv, d, err);   /* beta, gate logits */
    if (st == LM_OK) st = add_dense(u, d, vw, err);       /* out */
    /* h qkvz ba qkv qkv_conv q k v beta+gate y */
    size_t widths[10] = {d, 2 * kw + 2 * vw, 2 * Hv, ch, ch, Hv * dk, Hv * dk, vw, 2 * Hv, vw};
    for (size_t i = 0; i < 10 && st == LM_OK; i++)
        st = add_buf(u, i, u->rows * widths[i], err);
    if (st == LM_OK) st = ssm_params(u, 1, 1, ch, K, B * Hv * dv * dk, err);
    return st;
}

static lm_status build_mlp(lm_unit *u, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t d = (size_t)s->d_model;
    lm_status st = LM_OK;
    size_t ff = (size_t)(u->cfg.kind == LM_MLP_MOE ? s->moe.d_ff : s->mlp.d_ff);
    size_t wide = ff > (size_t)s->moe.shared_d_ff ? ff : (size_t)s->moe.shared_d_ff;
    if (u->cfg.kind == LM_MLP_DENSE) {
        if (st == LM_OK) st = add_dense(u, ff, d, err); /* gate */
        if (st == LM_OK) st = add_dense(u, ff, d, err); /* up */
        if (st == LM_OK) st = add_dense(u, d, ff, err); /* down */
    } else {
        size_t E = (size_t)s->moe.experts;
        st = add_dense(u, E, d, err); /* router */
        if (st == LM_OK && s->moe.shared_d_ff > 0) {
            size_t sf = (size_t)s->moe.shared_d_ff;
            if (st == LM_OK) st = add_dense(u, sf, d, err);
            if (st == LM_OK) st = add_dense(u, sf, d, err);
            if (st == LM_OK) st = add_dense(u, d, sf, err);
        }
        /* a prefill routes each of its rows (tokens) as a decode step routes a sequence */
        size_t R = u->rows;
        u->expert_count = (size_t)lm_moe_experts_reached(s->moe.experts, s->moe.active, R);
        u->per_expert = (R * (size_t)s->moe.active + u->expert_count - 1) / u->expert_count;
        if (u->per_expert > R)
            u->per_expert = R;
        u->experts = calloc(u->expert_count * 3, sizeof *u->experts);
        if (u->experts == NULL)
            return lm_fail(err, LM_ERR_NOMEM, "out of memory for experts");
        for (size_t e = 0; e < u->expert_count * 3 && st == LM_OK; e++)
            st = lm_dense_init(&u->experts[e], e % 3 == 2 ? d : ff, e % 3 == 2 ? ff : d,
                               u->cfg.weights, u->cfg.seed * 977u + e, err);
    }
    /* h gate up down acc router */
    size_t widths[6] = {d, wide, wide, d, d, (size_t)s->moe.experts + 1};
    for (size_t i = 0; i < 6 && st == LM_OK; i++)
        st = add_buf(u, i, u->rows * widths[i], err);
    return st;
}

static lm_status build_head(lm_unit *u, lm_error *err)
{
    const lm_model_spec *s = u->cfg.spec;
    size_t d = (size_t)s->d_model, B = u->batch;
    lm_status st = add_dense(u, (size_t)s->vocab, d, err); /* LM head */
    if (st == LM_OK && !s->tied_embeddings)
        st = add_dense(u, (size_t)s->vocab, d, err);       /* embedding table */
    if (st == LM_OK) st = add_buf(u, 0, B * d, err);
    if (st == LM_OK) st = add_buf(u, 1, B * (size_t)s->vocab, err);
    if (st == LM_OK) st = add_buf(u, 2, u->rows * d, err); /* the embedded tokens */
    return st;
}

/* A unit's projections as GEMMs over its rows (MoE experts over per_expert rows), each
 * weight matrix packed once. A prefill unit then drops the plain weights, and its LM head
 * and embedding table stay lm_dense (the head reads one row per sequence); a decode unit
 * (lm_unit_decode_gemm) keeps them for its float64 reference and packs its LM head too,
 * not the embedding table (read a row at a time). */
static lm_status pack_one(lm_gemm **g, lm_dense *d, size_t m, bool keep, lm_error *err)
{
    lm_status st = lm_gemm_create(g, m, d->rows, d->cols, d->dtype, d->w, d->scale, 0, err);
    if (!keep)
        lm_dense_free(d); /* codes and int8 row scales: the GEMM holds its own copies */
    return st;
}

static lm_status pack_gemms(lm_unit *u, lm_error *err)
{
    const bool decode = u->cfg.prompt == 0;
    if (u->cfg.role == LM_UNIT_HEAD)
        return decode ? pack_one(&u->gemm[0], &u->dense[0], u->rows, true, err) : LM_OK;
    lm_status st = LM_OK;
    for (size_t i = 0; i < u->dense_count && st == LM_OK; i++)
        st = pack_one(&u->gemm[i], &u->dense[i], u->rows, decode, err);
    if (st == LM_OK && u->experts != NULL) {
        u->expert_gemm = calloc(u->expert_count * 3, sizeof *u->expert_gemm);
        if (u->expert_gemm == NULL)
            return lm_fail(err, LM_ERR_NOMEM, "out of memory for experts");
        for (size_t e = 0; e < u->expert_count * 3 && st == LM_OK; e++)
            st = pack_one(&u->expert_gemm[e], &u->experts[e], u->per_expert, decode, err);
    }
    return st;
}

void lm_unit_gemm_take(lm_unit *u, double *seconds, double *flops)
{
    *seconds = u->gemm_s;
    *flops = u->gemm_flops;
    u->gemm_s = u->gemm_flops = 0.0;
}

lm_status lm_unit_create(const lm_unit_config *cfg, lm_unit **out, lm_error *err)
{
    *out = NULL;
    if (cfg->batch == 0 || (cfg->prompt <= 0 && cfg->ctx <= 0) || cfg->prompt < 0)
        return lm_fail(err, LM_ERR_SHAPE, "batch and ctx (or prompt) must be positive");
    lm_unit *u = calloc(1, sizeof *u);
    if (u == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for a unit");
    u->cfg = *cfg;
    u->batch = cfg->batch;
    u->rows = lm_unit_rows(cfg);
    lm_status st;
    if (cfg->role == LM_UNIT_HEAD)
        st = build_head(u, err);
    else if (cfg->role == LM_UNIT_MLP)
        st = build_mlp(u, err);
    else
        switch ((lm_mixer_kind)cfg->kind) {
        case LM_MIXER_ATTENTION: st = build_attention(u, err); break;
        case LM_MIXER_MLA: st = build_mla(u, err); break;
        case LM_MIXER_MAMBA1: st = build_mamba1(u, err); break;
        case LM_MIXER_MAMBA2: st = build_mamba2(u, err); break;
        case LM_MIXER_DELTA: st = build_delta(u, err); break;
        default: st = lm_fail(err, LM_ERR_ARG, "unknown mixer kind %d", cfg->kind); break;
        }
    if (st == LM_OK && cfg->prompt > 0) {
        u->held = (size_t)cfg->prompt; /* each sequence's tokens */
        st = pack_gemms(u, err);
    } else if (st == LM_OK && lm_unit_decode_gemm(cfg)) {
        st = pack_gemms(u, err);
    }
    if (st != LM_OK) {
        lm_unit_free(u);
        return st;
    }
    *out = u;
    return LM_OK;
}

void lm_unit_free(lm_unit *u)
{
    if (u == NULL)
        return;
    for (size_t i = 0; i < u->dense_count; i++) {
        lm_dense_free(&u->dense[i]);
        lm_gemm_free(u->gemm[i]);
    }
    for (size_t e = 0; u->expert_gemm != NULL && e < u->expert_count * 3; e++)
        lm_gemm_free(u->expert_gemm[e]);
    free(u->expert_gemm);
    for (size_t e = 0; u->experts != NULL && e < u->expert_count * 3; e++)
        lm_dense_free(&u->experts[e]);
    free(u->experts);
    for (size_t i = 0; i < UNIT_BUF_MAX; i++)
        lm_free(u->buf[i]);
    for (size_t b = 0; u->kvq != NULL && b < u->batch; b++)
        lm_kvq_cache_free(&u->kvq[b]);
    free(u->kvq);
    lm_free(u->k);
    lm_free(u->v);
    lm_free(u->lengths);
    lm_free(u->ckv);
    lm_free(u->w_uk);
    lm_free(u->w_uv);
    lm_free(u->a);
    lm_free(u->bias);
    lm_free(u->skip);
    lm_free(u->conv_w);
    lm_free(u->tail);
    lm_free(u->state);
    free(u);
}

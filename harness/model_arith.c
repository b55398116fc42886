/* What follows from a preset's shapes by arithmetic alone: layer counts, parameters
 * (stored and read per token) and memory per sequence. docs/models.md gives the formulas. */
#include "model_spec.h"

#include <stdio.h>
#include <string.h>

void lm_model_counts(const lm_model_spec *s, long long mixers[LM_MIXER_COUNT],
                     long long mlps[LM_MLP_COUNT])
{
    memset(mixers, 0, LM_MIXER_COUNT * sizeof mixers[0]);
    memset(mlps, 0, LM_MLP_COUNT * sizeof mlps[0]);
    for (long long l = 0; l < s->layers; l++) {
        mixers[s->mixers[(size_t)l % s->mixer_period]]++;
        lm_mlp_kind m = s->mlps[(size_t)l % s->mlp_period];
        if (l < s->dense_first)
            m = LM_MLP_DENSE;
        mlps[m]++;
    }
}

long long lm_model_mixer_params(const lm_model_spec *s, lm_mixer_kind kind)
{
    long long d = s->d_model;
    switch (kind) {
    case LM_MIXER_ATTENTION: {
        long long q = s->attention.heads * s->attention.head_dim;
        long long kv = s->attention.kv_heads * s->attention.head_dim;
        return d * q * (s->attention.q_gate ? 2 : 1) + 2 * d * kv + q * d + d;
    }
    case LM_MIXER_MLA: {
        long long h = s->mla.heads;
        return d * h * (s->mla.nope + s->mla.rope) + d * (s->mla.latent + s->mla.rope) +
               s->mla.latent * h * (s->mla.nope + s->mla.v_dim) + h * s->mla.v_dim * d +
               s->mla.latent + d;
    }
    case LM_MIXER_MAMBA1: {
        long long di = s->mamba1.d_inner, n = s->mamba1.d_state, r = s->mamba1.dt_rank;
        return d * 2 * di + di * s->mamba1.d_conv + di * (r + 2 * n) + r * di + di + di * n +
               di + di * d + d;
    }
    case LM_MIXER_MAMBA2: {
        long long di = s->mamba2.d_inner, gn = s->mamba2.groups * s->mamba2.d_state;
        long long h = di / s->mamba2.head_dim;
        return d * (2 * di + 2 * gn + h) + (di + 2 * gn) * s->mamba2.d_conv + 3 * h + di +
               di * d + d;
    }
    case LM_MIXER_DELTA: {
        long long k = s->delta.key_heads * s->delta.key_dim;
        long long v = s->delta.value_heads * s->delta.value_dim;
        return d * (2 * k + 2 * v) + d * 2 * s->delta.value_heads +
               (2 * k + v) * s->delta.d_conv + 2 * s->delta.value_heads + s->delta.value_dim +
               v * d + d;
    }
    default:
        return 0;
    }
}

long long lm_model_mlp_params(const lm_model_spec *s, lm_mlp_kind kind, bool active_only)
{
    long long d = s->d_model;
    if (kind == LM_MLP_DENSE)
        return 3 * d * s->mlp.d_ff + d;
    if (kind == LM_MLP_MOE) {
        long long experts = active_only ? s->moe.active : s->moe.experts;
        return d * s->moe.experts + experts * 3 * d * s->moe.d_ff + 3 * d * s->moe.shared_d_ff +
               d;
    }
    return 0;
}

long long lm_model_head_params(const lm_model_spec *s)
{
    return (s->tied_embeddings ? 0 : s->vocab * s->d_model) + s->d_model;
}

long long lm_model_embed_params(const lm_model_spec *s) { return s->vocab * s->d_model; }

void lm_model_params(const lm_model_spec *s, long long *total, long long *active)
{
    long long mixers[LM_MIXER_COUNT], mlps[LM_MLP_COUNT];
    lm_model_counts(s, mixers, mlps);
    long long shared = lm_model_embed_params(s) + lm_model_head_params(s);
    for (int k = 0; k < LM_MIXER_COUNT; k++)
        if (mixers[k] > 0)
            shared += mixers[k] * lm_model_mixer_params(s, (lm_mixer_kind)k);
    *total = shared;
    *active = shared;
    for (int k = 0; k < LM_MLP_COUNT; k++) {
        if (mlps[k] == 0)
            continue;
        *total += mlps[k] * lm_model_mlp_params(s, (lm_mlp_kind)k, false);
        *active += mlps[k] * lm_model_mlp_params(s, (lm_mlp_kind)k, true);
    }
}

lm_status lm_cache_format_parse(const char *name, lm_cache_format *cache, lm_error *err)
{
    memset(cache, 0, sizeof *cache);
    snprintf(cache->name, sizeof cache->name, "%s", name != NULL ? name : "");
    if (lm_kv_dtype_parse(name, &cache->dense, NULL) == LM_OK)
        return LM_OK;
    if (lm_kvq_format_parse(name, &cache->format, NULL) == LM_OK) {
        cache->quantized = true;
        return LM_OK;
    }
    return lm_fail(err, LM_ERR_ARG,
                   "cache dtype must be f32, f16, bf16, int8, int4, kivi4, kivi2, kivi4g64 or "
                   "kivi2g64, got '%s'", name != NULL ? name : "(null)");
}

double lm_model_kv_token_bytes(const lm_model_spec *s, const lm_cache_format *c)
{
    double kv = (double)s->attention.kv_heads, d = (double)s->attention.head_dim;
    if (!c->quantized)
        return 2.0 * kv * d * (double)lm_kv_dtype_size(c->dense);
    double bits = lm_kvq_bits(c->format);
    double codes = d * bits / 8.0;
    if (lm_kvq_is_kivi(c->format)) /* keys: a scale and offset per channel per group */
        return kv * (codes + 2.0 * d * 4.0 / (double)lm_kvq_group(c->format) + codes + 8.0);
    return kv * 2.0 * (codes + 8.0); /* a float32 scale and offset per token and row */
}

void lm_model_memory_at(const lm_model_spec *s, lm_weight_dtype weights,
                        const lm_cache_format *cache, long long n, lm_model_memory *out)
{
    long long mixers[LM_MIXER_COUNT], mlps[LM_MLP_COUNT], total, active;
    lm_model_counts(s, mixers, mlps);
    lm_model_params(s, &total, &active);
    out->weights = (double)total * (double)lm_weight_dtype_size(weights);
    long long held = s->attention.window > 0 && s->attention.window < n ? s->attention.window : n;
    out->kv = (double)mixers[LM_MIXER_ATTENTION] * (double)held * lm_model_kv_token_bytes(s, cache) +
              (double)mixers[LM_MIXER_MLA] * (double)n * (double)(s->mla.latent + s->mla.rope) * 4.0;
    double m1 = (double)(s->mamba1.d_inner * (s->mamba1.d_state + s->mamba1.d_conv - 1));
    long long m2_conv = s->mamba2.d_inner + 2 * s->mamba2.groups * s->mamba2.d_state;
    double m2 = (double)(s->mamba2.d_inner * s->mamba2.d_state) +
                (double)(m2_conv * (s->mamba2.d_conv - 1));
    long long dl_conv = 2 * s->delta.key_heads * s->delta.key_dim +
                        s->delta.value_heads * s->delta.value_dim;
    double dl = (double)(s->delta.value_heads * s->delta.key_dim * s->delta.value_dim) +
                (double)(dl_conv * (s->delta.d_conv - 1));
    out->state = 4.0 * ((double)mixers[LM_MIXER_MAMBA1] * m1 + (double)mixers[LM_MIXER_MAMBA2] * m2 +
                        (double)mixers[LM_MIXER_DELTA] * dl);
}

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

/* Parameter counts are doubles: exact up to 2^53 and, for a file whose fields reach the
 * loader's 2^40 cap, a large finite number (or inf) rather than a signed overflow; the loader
 * refuses a model above LM_MODEL_MAX_PARAMS. */
double lm_model_mixer_params(const lm_model_spec *s, lm_mixer_kind kind)
{
    const double d = (double)s->d_model;
    switch (kind) {
    case LM_MIXER_ATTENTION: {
        const double q = (double)s->attention.heads * (double)s->attention.head_dim;
        const double kv = (double)s->attention.kv_heads * (double)s->attention.head_dim;
        return d * q * (s->attention.q_gate ? 2.0 : 1.0) + 2.0 * d * kv + q * d + d;
    }
    case LM_MIXER_MLA: {
        const double h = (double)s->mla.heads, latent = (double)s->mla.latent;
        const double rope = (double)s->mla.rope, nope = (double)s->mla.nope;
        const double v_dim = (double)s->mla.v_dim;
        return d * h * (nope + rope) + d * (latent + rope) + latent * h * (nope + v_dim) +
               h * v_dim * d + latent + d;
    }
    case LM_MIXER_MAMBA1: {
        const double di = (double)s->mamba1.d_inner, n = (double)s->mamba1.d_state;
        const double r = (double)s->mamba1.dt_rank, conv = (double)s->mamba1.d_conv;
        return d * 2.0 * di + di * conv + di * (r + 2.0 * n) + r * di + di + di * n + di +
               di * d + d;
    }
    case LM_MIXER_MAMBA2: {
        const double di = (double)s->mamba2.d_inner;
        const double gn = (double)s->mamba2.groups * (double)s->mamba2.d_state;
        const double h = (double)(s->mamba2.d_inner / s->mamba2.head_dim);
        return d * (2.0 * di + 2.0 * gn + h) + (di + 2.0 * gn) * (double)s->mamba2.d_conv +
               3.0 * h + di + di * d + d;
    }
    case LM_MIXER_DELTA: {
        const double k = (double)s->delta.key_heads * (double)s->delta.key_dim;
        const double vh = (double)s->delta.value_heads;
        const double v = vh * (double)s->delta.value_dim;
        return d * (2.0 * k + 2.0 * v) + d * 2.0 * vh + (2.0 * k + v) * (double)s->delta.d_conv +
               2.0 * vh + (double)s->delta.value_dim + v * d + d;
    }
    default:
        return 0.0;
    }
}

double lm_model_mlp_params(const lm_model_spec *s, lm_mlp_kind kind, bool active_only)
{
    const double d = (double)s->d_model;
    if (kind == LM_MLP_DENSE)
        return 3.0 * d * (double)s->mlp.d_ff + d;
    if (kind == LM_MLP_MOE) {
        const double experts = (double)(active_only ? s->moe.active : s->moe.experts);
        return d * (double)s->moe.experts + experts * 3.0 * d * (double)s->moe.d_ff +
               3.0 * d * (double)s->moe.shared_d_ff + d;
    }
    return 0.0;
}

double lm_model_head_params(const lm_model_spec *s)
{
    return (s->tied_embeddings ? 0.0 : (double)s->vocab * (double)s->d_model) +
           (double)s->d_model;
}

double lm_model_embed_params(const lm_model_spec *s)
{
    return (double)s->vocab * (double)s->d_model;
}

void lm_model_params(const lm_model_spec *s, double *total, double *active)
{
    long long mixers[LM_MIXER_COUNT], mlps[LM_MLP_COUNT];
    lm_model_counts(s, mixers, mlps);
    double shared = lm_model_embed_params(s) + lm_model_head_params(s);
    for (int k = 0; k < LM_MIXER_COUNT; k++)
        if (mixers[k] > 0)
            shared += (double)mixers[k] * lm_model_mixer_params(s, (lm_mixer_kind)k);
    *total = shared;
    *active = shared;
    for (int k = 0; k < LM_MLP_COUNT; k++) {
        if (mlps[k] == 0)
            continue;
        *total += (double)mlps[k] * lm_model_mlp_params(s, (lm_mlp_kind)k, false);
        *active += (double)mlps[k] * lm_model_mlp_params(s, (lm_mlp_kind)k, true);
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
    long long mixers[LM_MIXER_COUNT], mlps[LM_MLP_COUNT];
    double total, active;
    lm_model_counts(s, mixers, mlps);
    lm_model_params(s, &total, &active);
    out->weights = total * (double)lm_weight_dtype_size(weights);
    long long held = s->attention.window > 0 && s->attention.window < n ? s->attention.window : n;
    out->kv = (double)mixers[LM_MIXER_ATTENTION] * (double)held * lm_model_kv_token_bytes(s, cache) +
              (double)mixers[LM_MIXER_MLA] * (double)n * ((double)s->mla.latent + (double)s->mla.rope) *
                  4.0;
    const double m1 = (double)s->mamba1.d_inner *
                      ((double)s->mamba1.d_state + (double)s->mamba1.d_conv - 1.0);
    const double m2_conv = (double)s->mamba2.d_inner +
                           2.0 * (double)s->mamba2.groups * (double)s->mamba2.d_state;
    const double m2 = (double)s->mamba2.d_inner * (double)s->mamba2.d_state +
                      m2_conv * ((double)s->mamba2.d_conv - 1.0);
    const double dl_conv = 2.0 * (double)s->delta.key_heads * (double)s->delta.key_dim +
                           (double)s->delta.value_heads * (double)s->delta.value_dim;
    const double dl = (double)s->delta.value_heads * (double)s->delta.key_dim *
                          (double)s->delta.value_dim +
                      dl_conv * ((double)s->delta.d_conv - 1.0);
    out->state = 4.0 * ((double)mixers[LM_MIXER_MAMBA1] * m1 + (double)mixers[LM_MIXER_MAMBA2] * m2 +
                        (double)mixers[LM_MIXER_DELTA] * dl);
}

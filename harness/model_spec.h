/* A whole-model preset (models/NAME.json, docs/models.md): the shapes `longmix model`
 * builds its layers from, read with jansson and validated field by field, and the
 * arithmetic that follows from them (parameters, memory per sequence). Library code:
 * every failure is a status whose message names the file and the field. */
#ifndef LONGMIX_MODEL_SPEC_H
#define LONGMIX_MODEL_SPEC_H

#include "longmix.h"

/* What mixes tokens in a layer, and what follows it. */
typedef enum lm_mixer_kind {
    LM_MIXER_ATTENTION = 0, /* GQA softmax attention (optionally a sliding window) */
    LM_MIXER_MLA,           /* DeepSeek-V2 latent attention, absorbed decode */
    LM_MIXER_MAMBA1,        /* Mamba-1 selective SSM */
    LM_MIXER_MAMBA2,        /* Mamba-2 SSD */
    LM_MIXER_DELTA,         /* gated DeltaNet */
    LM_MIXER_COUNT
} lm_mixer_kind;

typedef enum lm_mlp_kind { LM_MLP_NONE = 0, LM_MLP_DENSE, LM_MLP_MOE, LM_MLP_COUNT } lm_mlp_kind;

const char *lm_mixer_name(lm_mixer_kind kind);
const char *lm_mlp_name(lm_mlp_kind kind);

#define LM_MODEL_PATTERN_MAX 64
#define LM_MODEL_NAME_MAX 64
/* What a model file may describe (the loader refuses more): layers, parameters (2^44, about
 * 1.8e13) and one sequence's bytes at max_context with f32 weights and cache (2^52). */
#define LM_MODEL_MAX_LAYERS 65536
#define LM_MODEL_MAX_PARAMS 17592186044416.0
#define LM_MODEL_MAX_BYTES 4503599627370496.0

typedef struct lm_model_spec {
    char name[LM_MODEL_NAME_MAX];
    char source[1024];
    char path[512];  /* the file it was read from */
    long long d_model, layers, vocab, max_context;
    bool tied_embeddings;
    size_t mixer_period, mlp_period;
    lm_mixer_kind mixers[LM_MODEL_PATTERN_MAX]; /* layer l mixes with mixers[l % period] */
    lm_mlp_kind mlps[LM_MODEL_PATTERN_MAX];     /* and follows with mlps[l % period] */
    long long dense_first;                      /* the first layers' MLP is dense */
    struct { long long heads, kv_heads, head_dim, window; bool q_gate; } attention;
    struct { long long heads, latent, rope, nope, v_dim; } mla;
    struct { long long d_inner, d_state, d_conv, dt_rank; } mamba1;
    struct { long long d_inner, d_state, head_dim, groups, d_conv; } mamba2;
    struct { long long key_heads, value_heads, key_dim, value_dim, d_conv; } delta;
    struct { long long d_ff; } mlp;
    struct { long long experts, active, d_ff, shared_d_ff; } moe;
} lm_model_spec;

/* Reads and validates a model file (schema "longmix-model/1"). LM_ERR_IO (unreadable),
 * LM_ERR_PARSE ("FILE:LINE:COL: malformed JSON"), LM_ERR_SCHEMA / LM_ERR_TYPE / LM_ERR_SHAPE
 * naming "FILE: FIELD ..." for a missing, unknown, mistyped or inconsistent field (heads
 * not dividing d_model, a pattern that does not fit the layer count, a window larger than
 * max_context, more active experts than experts). */
lm_status lm_model_spec_load(const char *path, lm_model_spec *spec, lm_error *err);

/* The folder of presets (models/ under the working directory, or LONGMIX_MODELS) and the
 * file of a preset: LM_ERR_ARG "unknown preset 'X' (known: ...)" when absent. */
const char *lm_model_dir(void);
lm_status lm_model_preset_path(const char *name, char *path, size_t size, lm_error *err);
/* The preset names in the folder, sorted: names[0..*count), each < LM_MODEL_NAME_MAX. */
lm_status lm_model_preset_names(char names[][LM_MODEL_NAME_MAX], size_t max, size_t *count,
                                lm_error *err);

/* Layers of each mixer kind and MLP kind. */
void lm_model_counts(const lm_model_spec *spec, long long mixers[LM_MIXER_COUNT],
                     long long mlps[LM_MLP_COUNT]);

/* Parameters: of one mixer layer of a kind, of one MLP layer (stored: every expert;
 * read per token: the active ones), embedding and LM head. */
double lm_model_mixer_params(const lm_model_spec *spec, lm_mixer_kind kind);
double lm_model_mlp_params(const lm_model_spec *spec, lm_mlp_kind kind, bool active_only);
double lm_model_head_params(const lm_model_spec *spec); /* LM head + final norm */
double lm_model_embed_params(const lm_model_spec *spec);
/* Whole-model parameters, stored (total) and read per generated token (active). */
void lm_model_params(const lm_model_spec *spec, double *total, double *active);

/* Cache formats of attention layers: the dense dtypes and longmix's quantized ones. */
typedef struct lm_cache_format {
    bool quantized;
    lm_kv_dtype dense;    /* when !quantized */
    lm_kvq_format format; /* when quantized */
    char name[16];
} lm_cache_format;
lm_status lm_cache_format_parse(const char *name, lm_cache_format *cache, lm_error *err);

/* Memory of one sequence at context n (bytes): weights of the whole model in `weights`,
 * the KV cache (attention: min(n, window) tokens; MLA: the latent rows, float32), the
 * recurrent state (SSM / delta state and convolution tails, float32). */
typedef struct lm_model_memory {
    double weights, kv, state;
} lm_model_memory;
void lm_model_memory_at(const lm_model_spec *spec, lm_weight_dtype weights,
                        const lm_cache_format *cache, long long n, lm_model_memory *out);
/* KV bytes per token of one attention layer in the cache format (codes and parameters). */
double lm_model_kv_token_bytes(const lm_model_spec *spec, const lm_cache_format *cache);

#endif

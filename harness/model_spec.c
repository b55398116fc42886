/* Reading a model preset: one JSON object, every field checked with a message naming the
 * file and the field; unknown fields are refused (a misspelt key is an error, not a
 * default). The sections a model needs are those its mixer and MLP patterns name. */
#include "model_spec.h"
#include "files.h"
#include "try.h"

#include <dirent.h>
#include <stdint.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const mixer_names[LM_MIXER_COUNT] = {"attention", "mla", "mamba1",
                                                        "mamba2", "delta"};
static const char *const mlp_names[LM_MLP_COUNT] = {"none", "dense", "moe"};

const char *lm_mixer_name(lm_mixer_kind kind)
{
    return (unsigned)kind < LM_MIXER_COUNT ? mixer_names[kind] : "unknown";
}
const char *lm_mlp_name(lm_mlp_kind kind)
{
    return (unsigned)kind < LM_MLP_COUNT ? mlp_names[kind] : "unknown";
}

#define MODEL_MAX_BYTES ((size_t)1 << 20)

/* ---- typed fields ------------------------------------------------------------------- */

typedef struct reader {
    const char *path;
    lm_error *err;
} reader;

/* The object `section` of root ("" for root itself) when present; *out NULL when absent. */
static lm_status section_of(const reader *r, const json_t *root, const char *section,
                            const json_t **out)
{
    *out = json_object_get(root, section);
    if (*out != NULL && !json_is_object(*out))
        return lm_fail(r->err, LM_ERR_TYPE, "%s: %s must be an object", r->path, section);
    return LM_OK;
}

/* A positive integer field obj.key (section names obj in messages); optional fields take
 * `fallback` when absent and may be zero when `zero_ok`. */
static lm_status int_field(const reader *r, const json_t *obj, const char *section,
                           const char *key, bool required, bool zero_ok, long long fallback,
                           long long *out)
{
    const char *dot = section[0] != '\0' ? "." : "";
    const json_t *v = json_object_get(obj, key);
    if (v == NULL) {
        if (required)
            return lm_fail(r->err, LM_ERR_SCHEMA, "%s: missing field %s%s%s", r->path, section,
                           dot, key);
        *out = fallback;
        return LM_OK;
    }
    if (!json_is_integer(v))
        return lm_fail(r->err, LM_ERR_TYPE, "%s: %s%s%s must be an integer", r->path, section,
                       dot, key);
    long long x = json_integer_value(v);
    if (x < 0 || (x == 0 && !zero_ok) || x > (1LL << 40))
        return lm_fail(r->err, LM_ERR_SHAPE, "%s: %s%s%s must be %s and at most 2^40, got %lld",
                       r->path, section, dot, key, zero_ok ? "non-negative" : "positive", x);
    *out = x;
    return LM_OK;
}

/* Refuses a key of obj outside keys[] (NULL-terminated). */
static lm_status known_keys(const reader *r, const json_t *obj, const char *section,
                            const char *const *keys)
{
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)(uintptr_t)obj, key, value) {
        (void)value;
        bool ok = false;
        for (const char *const *k = keys; *k != NULL && !ok; k++)
            ok = strcmp(*k, key) == 0;
        if (!ok)
            return lm_fail(r->err, LM_ERR_SCHEMA, "%s: unknown field %s%s%s", r->path, section,
                           section[0] != '\0' ? "." : "", key);
    }
    return LM_OK;
}

static lm_status string_field(const reader *r, const json_t *root, const char *key,
                              char *out, size_t size)
{
    const json_t *v = json_object_get(root, key);
    if (v == NULL)
        return lm_fail(r->err, LM_ERR_SCHEMA, "%s: missing field %s", r->path, key);
    if (!json_is_string(v))
        return lm_fail(r->err, LM_ERR_TYPE, "%s: %s must be a string", r->path, key);
    const char *s = json_string_value(v);
    if (strlen(s) == 0 || strlen(s) >= size)
        return lm_fail(r->err, LM_ERR_SHAPE, "%s: %s must hold 1..%zu characters", r->path,
                       key, size - 1);
    snprintf(out, size, "%s", s);
    return LM_OK;
}

/* A pattern array of kind names into kinds[0..*period). */
static lm_status pattern_field(const reader *r, const json_t *root, const char *key,
                               const char *const *names, int name_count, int *kinds,
                               size_t *period)
{
    const json_t *v = json_object_get(root, key);
    if (v == NULL)
        return lm_fail(r->err, LM_ERR_SCHEMA, "%s: missing field %s", r->path, key);
    if (!json_is_array(v) || json_array_size(v) == 0 ||
        json_array_size(v) > LM_MODEL_PATTERN_MAX)
        return lm_fail(r->err, LM_ERR_TYPE, "%s: %s must be an array of 1..%d kind names",
                       r->path, key, LM_MODEL_PATTERN_MAX);
    *period = json_array_size(v);
    for (size_t i = 0; i < *period; i++) {
        const json_t *e = json_array_get(v, i);
        int found = -1;
        for (int k = 0; k < name_count && json_is_string(e); k++)
            if (strcmp(json_string_value(e), names[k]) == 0)
                found = k;
        if (found < 0) {
            char known[128] = "";
            for (int k = 0; k < name_count; k++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                         k ? ", " : "", names[k]);
            return lm_fail(r->err, LM_ERR_SCHEMA, "%s: %s[%zu] must be one of %s", r->path,
                           key, i, known);
        }
        kinds[i] = found;
    }
    return LM_OK;
}

/* ---- sections ----------------------------------------------------------------------- */

static bool uses_mixer(const lm_model_spec *s, lm_mixer_kind kind)
{
    for (size_t i = 0; i < s->mixer_period; i++)
        if (s->mixers[i] == kind)
            return true;
    return false;
}
static bool uses_mlp(const lm_model_spec *s, lm_mlp_kind kind)
{
    for (size_t i = 0; i < s->mlp_period; i++)
        if (s->mlps[i] == kind)
            return true;
    return kind == LM_MLP_DENSE && s->dense_first > 0;
}

/* The section when the patterns use it (required), else refused when present. */
static lm_status needed_section(const reader *r, const json_t *root, const char *name,
                                bool used, const char *const *keys, const json_t **out)
{
    TRY(section_of(r, root, name, out));
    if (used && *out == NULL)
        return lm_fail(r->err, LM_ERR_SCHEMA, "%s: missing field %s (the layer pattern uses it)",
                       r->path, name);
    if (!used && *out != NULL)
        return lm_fail(r->err, LM_ERR_SCHEMA, "%s: field %s is given but no layer uses it",
                       r->path, name);
    return *out != NULL ? known_keys(r, *out, name, keys) : LM_OK;
}

static lm_status read_attention(const reader *r, const json_t *root, lm_model_spec *s)
{
    static const char *const keys[] = {"heads", "kv_heads", "head_dim", "window", "q_gate", NULL};
    const json_t *o;
    TRY(needed_section(r, root, "attention", uses_mixer(s, LM_MIXER_ATTENTION), keys, &o));
    if (o == NULL)
        return LM_OK;
    TRY(int_field(r, o, "attention", "heads", true, false, 0, &s->attention.heads));
    TRY(int_field(r, o, "attention", "kv_heads", true, false, 0, &s->attention.kv_heads));
    TRY(int_field(r, o, "attention", "head_dim", true, false, 0, &s->attention.head_dim));
    TRY(int_field(r, o, "attention", "window", false, true, 0, &s->attention.window));
    const json_t *g = json_object_get(o, "q_gate");
    if (g != NULL && !json_is_boolean(g))
        return lm_fail(r->err, LM_ERR_TYPE, "%s: attention.q_gate must be true or false", r->path);
    s->attention.q_gate = g != NULL && json_is_true(g);
    if (s->d_model % s->attention.heads != 0)
        return lm_fail(r->err, LM_ERR_SHAPE, "%s: attention.heads %lld does not divide d_model %lld",
                       r->path, s->attention.heads, s->d_model);
    if (s->attention.heads % s->attention.kv_heads != 0)
        return lm_fail(r->err, LM_ERR_SHAPE,
                       "%s: attention.kv_heads %lld does not divide attention.heads %lld",
                       r->path, s->attention.kv_heads, s->attention.heads);
    if (s->attention.head_dim % 4 != 0)
        return lm_fail(r->err, LM_ERR_SHAPE, "%s: attention.head_dim %lld must be a multiple of 4",
                       r->path, s->attention.head_dim);
    if (s->attention.window > s->max_context)
        return lm_fail(r->err, LM_ERR_SHAPE,
                       "%s: attention.window %lld is larger than max_context %lld (a window "
                       "that never slides: drop it or raise max_context)",
                       r->path, s->attention.window, s->max_context);
    return LM_OK;
}

static lm_status read_mla(const reader *r, const json_t *root, lm_model_spec *s)
{
    static const char *const keys[] = {"heads", "latent", "rope", "nope", "v_dim", NULL};
    const json_t *o;
    TRY(needed_section(r, root, "mla", uses_mixer(s, LM_MIXER_MLA), keys, &o));
    if (o == NULL)
        return LM_OK;
    TRY(int_field(r, o, "mla", "heads", true, false, 0, &s->mla.heads));
    TRY(int_field(r, o, "mla", "latent", true, false, 0, &s->mla.latent));
    TRY(int_field(r, o, "mla", "rope", true, true, 0, &s->mla.rope));
    TRY(int_field(r, o, "mla", "nope", true, false, 0, &s->mla.nope));
    TRY(int_field(r, o, "mla", "v_dim", true, false, 0, &s->mla.v_dim));
    if (s->d_model % s->mla.heads != 0)
        return lm_fail(r->err, LM_ERR_SHAPE, "%s: mla.heads %lld does not divide d_model %lld",
                       r->path, s->mla.heads, s->d_model);
    if (s->mla.v_dim > s->mla.nope + s->mla.rope)
        return lm_fail(r->err, LM_ERR_SHAPE, "%s: mla.v_dim %lld exceeds mla.nope + mla.rope %lld",
                       r->path, s->mla.v_dim, s->mla.nope + s->mla.rope);
    return LM_OK;
}

static lm_status read_mamba1(const reader *r, const json_t *root, lm_model_spec *s)
{
    static const char *const keys[] = {"d_inner", "d_state", "d_conv", "dt_rank", NULL};
    const json_t *o;
    TRY(needed_section(r, root, "mamba1", uses_mixer(s, LM_MIXER_MAMBA1), keys, &o));
    if (o == NULL)
        return LM_OK;
    TRY(int_field(r, o, "mamba1", "d_inner", true, false, 0, &s->mamba1.d_inner));
    TRY(int_field(r, o, "mamba1", "d_state", true, false, 0, &s->mamba1.d_state));
    TRY(int_field(r, o, "mamba1", "d_conv", true, false, 0, &s->mamba1.d_conv));
    TRY(int_field(r, o, "mamba1", "dt_rank", true, false, 0, &s->mamba1.dt_rank));
    if (s->mamba1.d_state > LM_SSM_MAX_STATE)
        return lm_fail(r->err, LM_ERR_SHAPE, "%s: mamba1.d_state %lld exceeds %d", r->path,
                       s->mamba1.d_state, LM_SSM_MAX_STATE);
    if (s->mamba1.d_conv > 8)
        return lm_fail(r->err, LM_ERR_SHAPE, "%s: mamba1.d_conv %lld exceeds 8", r->path,
                       s->mamba1.d_conv);
    return LM_OK;
}

static lm_status read_mamba2(const reader *r, const json_t *root, lm_model_spec *s)
{
    static const char *const keys[] = {"d_inner", "d_state", "head_dim", "groups", "d_conv", NULL};
    const json_t *o;
    TRY(needed_section(r, root, "mamba2", uses_mixer(s, LM_MIXER_MAMBA2), keys, &o));
    if (o == NULL)
        return LM_OK;
    TRY(int_field(r, o, "mamba2", "d_inner", true, false, 0, &s->mamba2.d_inner));
    TRY(int_field(r, o, "mamba2", "d_state", true, false, 0, &s->mamba2.d_state));
    TRY(int_field(r, o, "mamba2", "head_dim", true, false, 0, &s->mamba2.head_dim));
    TRY(int_field(r, o, "mamba2", "groups", true, false, 0, &s->mamba2.groups));
    TRY(int_field(r, o, "mamba2", "d_conv", true, false, 0, &s->mamba2.d_conv));
    if (s->mamba2.d_inner % s->mamba2.head_dim != 0)
        return lm_fail(r->err, LM_ERR_SHAPE,
                       "%s: mamba2.head_dim %lld does not divide mamba2.d_inner %lld", r->path,
                       s->mamba2.head_dim, s->mamba2.d_inner);
    if ((s->mamba2.d_inner / s->mamba2.head_dim) % s->mamba2.groups != 0)
        return lm_fail(r->err, LM_ERR_SHAPE,
                       "%s: mamba2.groups %lld does not divide the %lld heads", r->path,
                       s->mamba2.groups, s->mamba2.d_inner / s->mamba2.head_dim);
    if (s->mamba2.d_conv > 8)
        return lm_fail(r->err, LM_ERR_SHAPE, "%s: mamba2.d_conv %lld exceeds 8", r->path,
                       s->mamba2.d_conv);
    return LM_OK;
}

static lm_status read_delta(const reader *r, const json_t *root, lm_model_spec *s)
{
    static const char *const keys[] = {"key_heads", "value_heads", "key_dim", "value_dim",
                                       "d_conv", NULL};
    const json_t *o;
    TRY(needed_section(r, root, "delta", uses_mixer(s, LM_MIXER_DELTA), keys, &o));
    if (o == NULL)
        return LM_OK;
    TRY(int_field(r, o, "delta", "key_heads", true, false, 0, &s->delta.key_heads));
    TRY(int_field(r, o, "delta", "value_heads", true, false, 0, &s->delta.value_heads));
    TRY(int_field(r, o, "delta", "key_dim", true, false, 0, &s->delta.key_dim));
    TRY(int_field(r, o, "delta", "value_dim", true, false, 0, &s->delta.value_dim));
    TRY(int_field(r, o, "delta", "d_conv", true, false, 0, &s->delta.d_conv));
    if (s->delta.value_heads % s->delta.key_heads != 0)
        return lm_fail(r->err, LM_ERR_SHAPE,
                       "%s: delta.key_heads %lld does not divide delta.value_heads %lld",
                       r->path, s->delta.key_heads, s->delta.value_heads);
    if (s->delta.d_conv > 8)
        return lm_fail(r->err, LM_ERR_SHAPE, "%s: delta.d_conv %lld exceeds 8", r->path,
                       s->delta.d_conv);
    return LM_OK;
}

static lm_status read_mlps(const reader *r, const json_t *root, lm_model_spec *s)
{
    static const char *const mlp_keys[] = {"d_ff", NULL};
    static const char *const moe_keys[] = {"experts", "active", "d_ff", "shared_d_ff", NULL};
    const json_t *o;
    TRY(needed_section(r, root, "mlp", uses_mlp(s, LM_MLP_DENSE), mlp_keys, &o));
    if (o != NULL)
        TRY(int_field(r, o, "mlp", "d_ff", true, false, 0, &s->mlp.d_ff));
    TRY(needed_section(r, root, "moe", uses_mlp(s, LM_MLP_MOE), moe_keys, &o));
    if (o == NULL)
        return LM_OK;
    TRY(int_field(r, o, "moe", "experts", true, false, 0, &s->moe.experts));
    TRY(int_field(r, o, "moe", "active", true, false, 0, &s->moe.active));
    TRY(int_field(r, o, "moe", "d_ff", true, false, 0, &s->moe.d_ff));
    TRY(int_field(r, o, "moe", "shared_d_ff", false, true, 0, &s->moe.shared_d_ff));
    if (s->moe.active > s->moe.experts)
        return lm_fail(r->err, LM_ERR_SHAPE, "%s: moe.active %lld exceeds moe.experts %lld",
                       r->path, s->moe.active, s->moe.experts);
    return LM_OK;
}

static lm_status read_top(const reader *r, const json_t *root, lm_model_spec *s)
{
    static const char *const keys[] = {"schema", "name", "source", "d_model", "layers", "vocab",
                                       "max_context", "tied_embeddings", "mixers", "mlps",
                                       "dense_first", "attention", "mla", "mamba1", "mamba2",
                                       "delta", "mlp", "moe", NULL};
    TRY(known_keys(r, root, "", keys));
    char schema[32];
    TRY(string_field(r, root, "schema", schema, sizeof schema));
    if (strcmp(schema, "longmix-model/1") != 0)
        return lm_fail(r->err, LM_ERR_SCHEMA, "%s: schema must be \"longmix-model/1\", got '%s'",
                       r->path, schema);
    TRY(string_field(r, root, "name", s->name, sizeof s->name));
    TRY(string_field(r, root, "source", s->source, sizeof s->source));
    TRY(int_field(r, root, "", "d_model", true, false, 0, &s->d_model));
    TRY(int_field(r, root, "", "layers", true, false, 0, &s->layers));
    TRY(int_field(r, root, "", "vocab", true, false, 0, &s->vocab));
    TRY(int_field(r, root, "", "max_context", true, false, 0, &s->max_context));
    TRY(int_field(r, root, "", "dense_first", false, true, 0, &s->dense_first));
    const json_t *tied = json_object_get(root, "tied_embeddings");
    if (tied == NULL)
        return lm_fail(r->err, LM_ERR_SCHEMA, "%s: missing field tied_embeddings", r->path);
    if (!json_is_boolean(tied))
        return lm_fail(r->err, LM_ERR_TYPE, "%s: tied_embeddings must be true or false", r->path);
    s->tied_embeddings = json_is_true(tied);
    int kinds[LM_MODEL_PATTERN_MAX];
    TRY(pattern_field(r, root, "mixers", mixer_names, LM_MIXER_COUNT, kinds, &s->mixer_period));
    for (size_t i = 0; i < s->mixer_period; i++)
        s->mixers[i] = (lm_mixer_kind)kinds[i];
    TRY(pattern_field(r, root, "mlps", mlp_names, LM_MLP_COUNT, kinds, &s->mlp_period));
    for (size_t i = 0; i < s->mlp_period; i++)
        s->mlps[i] = (lm_mlp_kind)kinds[i];
    if (s->layers % (long long)s->mixer_period != 0)
        return lm_fail(r->err, LM_ERR_SHAPE,
                       "%s: mixers: a pattern of %zu layers does not fit layers %lld (a multiple "
                       "of the pattern is needed)", r->path, s->mixer_period, s->layers);
    if (s->layers % (long long)s->mlp_period != 0)
        return lm_fail(r->err, LM_ERR_SHAPE,
                       "%s: mlps: a pattern of %zu layers does not fit layers %lld", r->path,
                       s->mlp_period, s->layers);
    if (s->dense_first > s->layers)
        return lm_fail(r->err, LM_ERR_SHAPE, "%s: dense_first %lld exceeds layers %lld", r->path,
                       s->dense_first, s->layers);
    return LM_OK;
}

/* A model the arithmetic and the runner can hold: at most LM_MODEL_MAX_LAYERS layers and
 * LM_MODEL_MAX_PARAMS parameters, and one sequence's memory at max_context (f32 weights and
 * cache) at most LM_MODEL_MAX_BYTES, so that every size the runner forms from the fields fits
 * a 64-bit integer. */
static lm_status check_size(const reader *r, const lm_model_spec *s)
{
    if (s->layers > LM_MODEL_MAX_LAYERS)
        return lm_fail(r->err, LM_ERR_SHAPE, "%s: layers must be at most %d, got %lld", r->path,
                       LM_MODEL_MAX_LAYERS, s->layers);
    double total, active;
    lm_model_params(s, &total, &active);
    if (!(total <= LM_MODEL_MAX_PARAMS))
        return lm_fail(r->err, LM_ERR_SHAPE,
                       "%s: the shapes give %.3g parameters, more than the %.3g a model file may "
                       "describe", r->path, total, LM_MODEL_MAX_PARAMS);
    lm_cache_format f32;
    lm_model_memory m;
    TRY(lm_cache_format_parse("f32", &f32, r->err));
    lm_model_memory_at(s, LM_WEIGHT_F32, &f32, s->max_context, &m);
    const double bytes = m.weights + m.kv + m.state;
    if (!(bytes <= LM_MODEL_MAX_BYTES))
        return lm_fail(r->err, LM_ERR_SHAPE,
                       "%s: one sequence at max_context %lld needs %.3g bytes (f32), more than "
                       "the %.3g a model file may describe", r->path, s->max_context, bytes,
                       LM_MODEL_MAX_BYTES);
    return LM_OK;
}

lm_status lm_model_spec_load(const char *path, lm_model_spec *spec, lm_error *err)
{
    memset(spec, 0, sizeof *spec);
    snprintf(spec->path, sizeof spec->path, "%s", path);
    char *bytes;
    size_t size;
    lm_status status = lm_read_file(path, MODEL_MAX_BYTES, false, &bytes, &size, err);
    if (status != LM_OK)
        return status;
    json_error_t json_error;
    json_t *root = json_loadb(bytes, size, JSON_REJECT_DUPLICATES, &json_error);
    free(bytes);
    if (root == NULL)
        return lm_fail(err, LM_ERR_PARSE, "%s:%d:%d: malformed JSON: %s", path, json_error.line,
                       json_error.column, json_error.text);
    reader r = {path, err};
    if (!json_is_object(root))
        status = lm_fail(err, LM_ERR_SCHEMA, "%s: a model file must be a JSON object", path);
    if (status == LM_OK)
        status = read_top(&r, root, spec);
    if (status == LM_OK)
        status = read_attention(&r, root, spec);
    if (status == LM_OK)
        status = read_mla(&r, root, spec);
    if (status == LM_OK)
        status = read_mamba1(&r, root, spec);
    if (status == LM_OK)
        status = read_mamba2(&r, root, spec);
    if (status == LM_OK)
        status = read_delta(&r, root, spec);
    if (status == LM_OK)
        status = read_mlps(&r, root, spec);
    if (status == LM_OK)
        status = check_size(&r, spec);
    json_decref(root);
    return status;
}

/* ---- the preset folder ---------------------------------------------------------------- */

const char *lm_model_dir(void)
{
    const char *env = getenv("LONGMIX_MODELS");
    return env != NULL && env[0] != '\0' ? env : "models";
}

static int compare_names(const void *a, const void *b) { return strcmp(a, b); }

lm_status lm_model_preset_names(char names[][LM_MODEL_NAME_MAX], size_t max, size_t *count,
                                lm_error *err)
{
    *count = 0;
    DIR *dir = opendir(lm_model_dir());
    if (dir == NULL)
        return lm_fail(err, LM_ERR_IO, "cannot open the preset folder %s (set LONGMIX_MODELS)",
                       lm_model_dir());
    struct dirent *e;
    while ((e = readdir(dir)) != NULL && *count < max) {
        size_t len = strlen(e->d_name);
        if (len > 5 && len - 5 < LM_MODEL_NAME_MAX && strcmp(e->d_name + len - 5, ".json") == 0) {
            snprintf(names[*count], LM_MODEL_NAME_MAX, "%.*s", (int)(len - 5), e->d_name);
            (*count)++;
        }
    }
    closedir(dir);
    qsort(names, *count, LM_MODEL_NAME_MAX, compare_names);
    return LM_OK;
}

/* Appends sep and name to the string in buf {size}; a name that does not fit is left out. */
static void append_name(char *buf, size_t size, const char *sep, const char *name)
{
    const size_t used = strlen(buf), ls = strlen(sep), ln = strlen(name);
    if (used + ls + ln >= size)
        return;
    memcpy(buf + used, sep, ls);
    memcpy(buf + used + ls, name, ln + 1);
}

lm_status lm_model_preset_path(const char *name, char *path, size_t size, lm_error *err)
{
    char names[64][LM_MODEL_NAME_MAX];
    size_t count;
    TRY(lm_model_preset_names(names, 64, &count, err));
    for (size_t i = 0; i < count; i++)
        if (strcmp(names[i], name) == 0) {
            snprintf(path, size, "%s/%s.json", lm_model_dir(), name);
            return LM_OK;
        }
    char known[1024] = "";
    for (size_t i = 0; i < count; i++)
        append_name(known, sizeof known, i ? ", " : "", names[i]);
    return lm_fail(err, LM_ERR_ARG, "unknown preset '%s' (known: %s; or --model FILE)", name,
                   known);
}

/* Kernel-contract cases: field access with case-named errors, case-owned memory, recipe
 * draws, and running one case through its registered runner (see kernel_cases.h). */
#include "kernel_cases.h"
#include "jsonx.h"
#include "registry.h"

#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { PATH_TEXT = 160 };
#define LM_KCASE_MAX_SIZE ((size_t)1 << 31)

/* Re-labels a jsonx failure with the case id: "case <id>: <message>". */
static lm_status relabel(const lm_kcase *kcase, lm_error *err, const lm_error *inner)
{
    return lm_fail(err, inner->status, "case %s: %s", kcase->id, inner->message);
}

static lm_status field_path(const lm_kcase *kcase, const char *group, const char *name,
                            char path[PATH_TEXT], lm_error *err)
{
    int length = snprintf(path, PATH_TEXT, "%s.%s", group, name);
    if (length < 0 || length >= PATH_TEXT)
        return lm_fail(err, LM_ERR_ARG, "case %s: field name %s.%s is too long", kcase->id,
                       group, name);
    return LM_OK;
}

static lm_status size_field(const lm_kcase *kcase, const char *name, size_t minimum,
                            size_t *out, lm_error *err)
{
    char path[PATH_TEXT];
    lm_status status = field_path(kcase, "shape", name, path, err);
    if (status != LM_OK)
        return status;
    lm_error inner;
    long long value;
    status = lm_json_int(kcase->json, path, &value, &inner);
    if (status != LM_OK)
        return relabel(kcase, err, &inner);
    if (value < (long long)minimum || (unsigned long long)value >= LM_KCASE_MAX_SIZE)
        return lm_fail(err, LM_ERR_SCHEMA,
                       "case %s: %s must be an integer in [%zu, 2^31), got %lld", kcase->id, path,
                       minimum, value);
    *out = (size_t)value;
    return LM_OK;
}

lm_status lm_kcase_size(const lm_kcase *kcase, const char *name, size_t *out, lm_error *err)
{
    return size_field(kcase, name, 1, out, err);
}

lm_status lm_kcase_size0(const lm_kcase *kcase, const char *name, size_t *out, lm_error *err)
{
    return size_field(kcase, name, 0, out, err);
}

/* The option's JSON value, or NULL when the case has no such option. */
static const json_t *option(const lm_kcase *kcase, const char *name)
{
    const json_t *options = json_object_get(kcase->json, "options");
    return json_is_object(options) ? json_object_get(options, name) : NULL;
}

lm_status lm_kcase_opt_int(const lm_kcase *kcase, const char *name, long long fallback,
                           long long *out, lm_error *err)
{
    const json_t *value = option(kcase, name);
    if (value == NULL) {
        *out = fallback;
        return LM_OK;
    }
    if (!json_is_integer(value))
        return lm_fail(err, LM_ERR_TYPE, "case %s: options.%s must be an integer", kcase->id,
                       name);
    *out = (long long)json_integer_value(value);
    return LM_OK;
}

lm_status lm_kcase_opt_real(const lm_kcase *kcase, const char *name, double fallback,
                            double *out, lm_error *err)
{
    const json_t *value = option(kcase, name);
    if (value == NULL) {
        *out = fallback;
        return LM_OK;
    }
    if (!json_is_number(value)) /* jansson: integer or real; booleans are not numbers */
        return lm_fail(err, LM_ERR_TYPE, "case %s: options.%s must be a number", kcase->id,
                       name);
    *out = json_number_value(value);
    return LM_OK;
}

lm_status lm_kcase_opt_string(const lm_kcase *kcase, const char *name, const char *fallback,
                              const char **out, lm_error *err)
{
    const json_t *value = option(kcase, name);
    if (value == NULL) {
        *out = fallback;
        return LM_OK;
    }
    if (!json_is_string(value))
        return lm_fail(err, LM_ERR_TYPE, "case %s: options.%s must be a string", kcase->id,
                       name);
    *out = json_string_value(value);
    return LM_OK;
}

lm_status lm_kcase_opt_bool(const lm_kcase *kcase, const char *name, bool fallback, bool *out,
                            lm_error *err)
{
    const json_t *value = option(kcase, name);
    if (value == NULL) {
        *out = fallback;
        return LM_OK;
    }
    if (!json_is_boolean(value))
        return lm_fail(err, LM_ERR_TYPE, "case %s: options.%s must be true or false", kcase->id,
                       name);
    *out = json_is_true(value);
    return LM_OK;
}

lm_status lm_kcase_known_options(const lm_kcase *kcase, const char *const *known,
                                 lm_error *err)
{
    const json_t *options = json_object_get(kcase->json, "options");
    if (options == NULL)
        return LM_OK;
    if (!json_is_object(options))
        return lm_fail(err, LM_ERR_TYPE, "case %s: options must be an object", kcase->id);
    const char *key;
    const json_t *value;
    json_object_foreach((json_t *)(uintptr_t)options, key, value) {
        (void)value;
        bool found = false;
        for (size_t i = 0; known[i] != NULL && !found; i++)
            found = strcmp(known[i], key) == 0;
        if (!found)
            return lm_fail(err, LM_ERR_SCHEMA, "case %s: kernel %s has no option '%s'",
                           kcase->id, kcase->kernel, key);
    }
    return LM_OK;
}

lm_status lm_kcase_dtype_in(const lm_kcase *kcase, const char *const *supported, lm_error *err)
{
    char list[128] = "";
    size_t used = 0;
    for (size_t i = 0; supported[i] != NULL; i++) {
        if (strcmp(supported[i], kcase->dtype) == 0)
            return LM_OK;
        int wrote = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                             supported[i]);
        if (wrote > 0 && (size_t)wrote < sizeof list - used)
            used += (size_t)wrote;
    }
    return lm_fail(err, LM_ERR_UNSUPPORTED,
                   "case %s: dtype %s is not supported by kernel %s (supported: %s)", kcase->id,
                   kcase->dtype, kcase->kernel, list);
}

lm_budget lm_kcase_budget(const lm_kcase *kcase) { return lm_budget_of(kcase->limit); }

void lm_kcase_budget_per_thread(lm_budget *budget, size_t count, size_t size)
{
    lm_budget_add(budget, lm_size_mul(count, (size_t)omp_get_max_threads()), size);
}

/* "{batch 8, length 1, channels 8192}": the case's shape fields, for messages. */
static void shape_text(const lm_kcase *kcase, char *text, size_t size)
{
    const json_t *shape = json_object_get(kcase->json, "shape");
    const char *key;
    const json_t *value;
    size_t used = 0;
    int wrote = snprintf(text, size, "{");
    used = wrote > 0 && (size_t)wrote < size ? (size_t)wrote : 0;
    json_object_foreach((json_t *)(uintptr_t)shape, key, value) {
        wrote = json_is_integer(value)
                    ? snprintf(text + used, size - used, "%s%s %lld", used > 1 ? ", " : "", key,
                               (long long)json_integer_value(value))
                    : snprintf(text + used, size - used, "%s%s ?", used > 1 ? ", " : "", key);
        if (wrote < 0 || (size_t)wrote >= size - used)
            break;
        used += (size_t)wrote;
    }
    snprintf(text + used, size - used, "}");
}

lm_status lm_kcase_reserve(lm_kcase *kcase, const lm_budget *budget, lm_error *err)
{
    char what[LM_ERROR_MESSAGE_SIZE / 2], shape[LM_ERROR_MESSAGE_SIZE / 4];
    shape_text(kcase, shape, sizeof shape);
    snprintf(what, sizeof what, "case %s: shape %s", kcase->id, shape);
    lm_budget limited = {kcase->limit, budget->bytes};
    lm_error inner;
    lm_status status = lm_budget_check(&limited, what, &inner);
    if (status != LM_OK)
        return lm_fail(err, status, "%s of a contract case", inner.message);
    if (kcase->probing) {
        kcase->probed = true;
        return lm_fail(err, LM_ERR_NOMEM, "case %s: probed (nothing allocated)", kcase->id);
    }
    kcase->reserved = budget->bytes;
    return LM_OK;
}

/* The byte a guard holds at offset i of a block's guard zone: not 0, not a float's usual
 * bytes, different along the zone so a shifted copy is caught too. */
static unsigned char guard_byte(size_t i) { return (unsigned char)(0xa5 ^ (i * 29)); }

static bool grow_scratch(lm_kcase *kcase)
{
    size_t capacity = kcase->scratch_capacity ? 2 * kcase->scratch_capacity : 16;
    void **grown = lm_alloc(capacity * sizeof *grown);
    size_t *bytes = lm_alloc(capacity * sizeof *bytes);
    if (grown == NULL || bytes == NULL) {
        lm_free(grown);
        lm_free(bytes);
        return false;
    }
    if (kcase->scratch_count) {
        memcpy(grown, kcase->scratch, kcase->scratch_count * sizeof *grown);
        memcpy(bytes, kcase->scratch_bytes, kcase->scratch_count * sizeof *bytes);
    }
    lm_free(kcase->scratch);
    lm_free(kcase->scratch_bytes);
    kcase->scratch = grown;
    kcase->scratch_bytes = bytes;
    kcase->scratch_capacity = capacity;
    return true;
}

void *lm_kcase_alloc(lm_kcase *kcase, size_t count, size_t size)
{
    const size_t bytes = lm_size_mul(count, size);
    if (bytes == SIZE_MAX)
        return NULL;
    if (bytes > kcase->reserved - kcase->used) { /* used <= reserved always */
        if (kcase->overdrawn == 0)
            kcase->overdrawn = bytes ? bytes : 1;
        return NULL;
    }
    if (kcase->scratch_count == kcase->scratch_capacity && !grow_scratch(kcase))
        return NULL;
    const size_t guard = kcase->guarded ? LM_KCASE_GUARD_BYTES : 0;
    if (bytes > SIZE_MAX - 2 * guard)
        return NULL;
    unsigned char *block = lm_alloc(bytes + 2 * guard);
    if (block == NULL)
        return NULL;
    for (size_t i = 0; i < guard; i++)
        block[i] = block[guard + bytes + i] = guard_byte(i);
    kcase->scratch[kcase->scratch_count] = block;
    kcase->scratch_bytes[kcase->scratch_count++] = bytes;
    kcase->used += bytes;
    return block + guard;
}

size_t lm_kcase_guard_damage(const lm_kcase *kcase)
{
    if (!kcase->guarded)
        return 0;
    size_t damaged = 0;
    for (size_t b = 0; b < kcase->scratch_count; b++) {
        const unsigned char *block = kcase->scratch[b];
        const size_t after = LM_KCASE_GUARD_BYTES + kcase->scratch_bytes[b];
        for (size_t i = 0; i < LM_KCASE_GUARD_BYTES; i++)
            damaged += (block[i] != guard_byte(i)) + (block[after + i] != guard_byte(i));
    }
    return damaged;
}

lm_status lm_kcase_output(lm_kcase *kcase, size_t count, lm_kout *out, lm_error *err)
{
    out->values = lm_kcase_alloc(kcase, count, sizeof(double));
    out->count = count;
    if (out->values == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "case %s: no memory for %zu outputs", kcase->id,
                       count);
    return LM_OK;
}

lm_status lm_kcase_store_f32(lm_status status, double *dst, const float *values, size_t count)
{
    for (size_t i = 0; status == LM_OK && i < count; i++)
        dst[i] = (double)values[i];
    return status;
}

double *lm_kcase_normal(lm_kcase *kcase, lm_rng *rng, size_t count)
{
    double *values = lm_kcase_alloc(kcase, count, sizeof(double));
    if (values != NULL)
        lm_rng_fill_standard_normal(rng, values, count);
    return values;
}

double *lm_kcase_uniform(lm_kcase *kcase, lm_rng *rng, double low, double high, size_t count)
{
    double *values = lm_kcase_alloc(kcase, count, sizeof(double));
    if (values != NULL)
        lm_rng_fill_uniform(rng, low, high, values, count);
    return values;
}

float *lm_kcase_to_f32(lm_kcase *kcase, const double *values, size_t count)
{
    float *copy = lm_kcase_alloc(kcase, count, sizeof(float));
    if (copy != NULL)
        for (size_t i = 0; i < count; i++)
            copy[i] = (float)values[i];
    return copy;
}

void lm_round_to_f32(double *values, size_t count)
{
    for (size_t i = 0; i < count; i++)
        values[i] = (double)(float)values[i];
}

static lm_status string_field(const json_t *json, const char *name, size_t index,
                              const char *id, const char **out, lm_error *err)
{
    lm_error inner;
    lm_status status = lm_json_string(json, name, out, &inner);
    if (status == LM_OK)
        return LM_OK;
    if (id != NULL)
        return lm_fail(err, status, "case %s: %s", id, inner.message);
    return lm_fail(err, status, "cases[%zu]: %s", index, inner.message);
}

lm_status lm_kcase_open(lm_kcase *kcase, const json_t *json, size_t index, lm_error *err)
{
    *kcase = (lm_kcase){.json = json, .limit = LM_CASE_MAX_BYTES};
    if (!json_is_object(json))
        return lm_fail(err, LM_ERR_TYPE, "cases[%zu] must be an object", index);
    lm_status status = string_field(json, "id", index, NULL, &kcase->id, err);
    if (status == LM_OK)
        status = string_field(json, "kernel", index, kcase->id, &kcase->kernel, err);
    if (status == LM_OK)
        status = string_field(json, "dtype", index, kcase->id, &kcase->dtype, err);
    if (status != LM_OK)
        return status;
    lm_error inner;
    long long seed;
    status = lm_json_int(json, "seed", &seed, &inner);
    if (status != LM_OK)
        return relabel(kcase, err, &inner);
    if (seed < 0)
        return lm_fail(err, LM_ERR_ARG, "case %s: seed must be a non-negative integer, got %lld",
                       kcase->id, seed);
    kcase->seed = (unsigned long long)seed;
    const json_t *shape = json_object_get(json, "shape");
    if (shape != NULL && !json_is_object(shape))
        return lm_fail(err, LM_ERR_TYPE, "case %s: shape must be an object", kcase->id);
    const json_t *options = json_object_get(json, "options");
    if (options != NULL && !json_is_object(options))
        return lm_fail(err, LM_ERR_TYPE, "case %s: options must be an object", kcase->id);
    return LM_OK;
}

void lm_kcase_release(lm_kcase *kcase)
{
    for (size_t i = 0; i < kcase->scratch_count; i++)
        lm_free(kcase->scratch[i]);
    lm_free(kcase->scratch);
    lm_free(kcase->scratch_bytes);
    kcase->scratch = NULL;
    kcase->scratch_bytes = NULL;
    kcase->scratch_count = kcase->scratch_capacity = 0;
    kcase->reserved = kcase->used = kcase->overdrawn = 0;
}

/* The registry entry that runs the case; NULL with LM_ERR_SCHEMA "case <id>: unknown kernel
 * <k>" when none is registered under its kernel name. */
static const lm_registry_entry *runner_of(const lm_kcase *kcase, lm_error *err)
{
    const lm_registry_entry *entry =
        lm_registry_find(kcase->kernel, json_object_get(kcase->json, "options"));
    if (entry != NULL && entry->contract != NULL)
        return entry;
    lm_fail(err, LM_ERR_SCHEMA, "case %s: unknown kernel '%s' (no runner registered in "
            "harness/registry.h)", kcase->id, kcase->kernel);
    return NULL;
}

lm_status lm_kcase_probe(lm_kcase *kcase, lm_error *err)
{
    const lm_registry_entry *entry = runner_of(kcase, err);
    if (entry == NULL)
        return LM_ERR_SCHEMA;
    lm_rng rng;
    lm_rng_seed(&rng, (uint64_t)kcase->seed);
    lm_kout out = {NULL, 0};
    kcase->probing = true;
    kcase->probed = false;
    lm_status status = entry->contract(kcase, &rng, NULL, &out, err);
    const bool reached = kcase->probed;
    kcase->probing = kcase->probed = false;
    lm_kcase_release(kcase);
    return reached && status == LM_ERR_NOMEM ? LM_OK : status;
}

lm_status lm_kcase_run(lm_kcase *kcase, const lm_ops *ops, lm_kout *out, lm_error *err)
{
    const lm_registry_entry *entry = runner_of(kcase, err);
    if (entry == NULL)
        return LM_ERR_SCHEMA;
    bool reference = strcmp(kcase->dtype, "f64") == 0;
    if (!reference && ops == NULL)
        return lm_fail(err, LM_ERR_ARG, "case %s: dtype %s needs an ISA path", kcase->id,
                       kcase->dtype);
    lm_rng rng;
    lm_rng_seed(&rng, (uint64_t)kcase->seed);
    *out = (lm_kout){NULL, 0};
    lm_status status = entry->contract(kcase, &rng, reference ? NULL : ops, out, err);
    if (kcase->overdrawn != 0) {
        char asked[32], reserved[32];
        lm_bytes_text(kcase->overdrawn, asked, sizeof asked);
        lm_bytes_text(kcase->reserved - kcase->used, reserved, sizeof reserved);
        return lm_fail(err, LM_ERR_ARG, "case %s: the runner for %s allocated %s past its "
                       "reservation (%s left): a runner reserves every buffer with "
                       "lm_kcase_reserve before allocating (harness/kernel_cases.h)", kcase->id,
                       kcase->kernel, asked, reserved);
    }
    if (status == LM_OK && out->values == NULL)
        return lm_fail(err, LM_ERR_ARG, "case %s: runner for %s returned no output", kcase->id,
                       kcase->kernel);
    return status;
}

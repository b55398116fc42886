/* The one harness registry (registry.h): entries generated from LM_REGISTRY, the old
 * names kept as aliases, and the lookups the sweep, the shim and verify use. */
#include "registry.h"

#include <stdio.h>
#include <string.h>

#define ENTRY_BOTH(word, summary) {#word, summary, &lm_bench_##word, lm_kcase_##word},
#define ENTRY_BENCH(word, summary) {#word, summary, &lm_bench_##word, NULL},
#define ENTRY_CONTRACT(word, summary) {#word, summary, NULL, lm_kcase_##word},
static const lm_registry_entry entries[] = {
    LM_REGISTRY(ENTRY_BOTH, ENTRY_BENCH, ENTRY_CONTRACT)};

/* An old name and the word it stands for: the first row of an old name whose `option` is
 * NULL or set (present, not false) in the case's options wins. */
typedef struct alias {
    const char *old, *option, *word;
} alias;

static const alias aliases[] = {
    {"attn_decode_q", NULL, "kvq_decode"},      /* sweep, CSVs before the list */
    {"affine_scan", NULL, "scan_affine"},       /* sweep */
    {"attention_prefill", NULL, "attn_prefill"}, /* contracts */
    {"attention_decode", NULL, "attn_decode"},
    {"kvquant_decode", NULL, "kvq_decode"},
    {"ssm_mamba1_scan", NULL, "mamba1_scan"},
    {"linear_attention", "chunk", "linear_chunked"},
    {"linear_attention", NULL, "linear_recurrent"},
    {"delta_rule", "chunk", "delta_chunked"},
    {"delta_rule", NULL, "delta_recurrent"},
    {"ssm_ssd", "chunk", "ssd_chunked"},
    {"ssm_ssd", "decode", "ssd_step"},
    {"ssm_ssd", NULL, "ssd_recurrent"},
    {"mla_decode_absorbed", NULL, "latent_mla"}, /* sweep, CSVs before one MLA word */
    {"mla_decode_expanded", NULL, "latent_mla_expanded"},
    {"mla_decode_cached", NULL, "latent_mla_cached"},
};

size_t lm_registry_count(void) { return sizeof entries / sizeof entries[0]; }

const lm_registry_entry *lm_registry_at(size_t index)
{
    return index < lm_registry_count() ? &entries[index] : NULL;
}

static const lm_registry_entry *find_word(const char *word)
{
    for (size_t i = 0; i < lm_registry_count(); i++)
        if (strcmp(entries[i].name, word) == 0)
            return &entries[i];
    return NULL;
}

static bool option_set(const json_t *options, const char *key)
{
    const json_t *value = json_is_object(options) ? json_object_get(options, key) : NULL;
    return value != NULL && !json_is_false(value) && !json_is_null(value);
}

const lm_registry_entry *lm_registry_find(const char *name, const json_t *options)
{
    if (name == NULL)
        return NULL;
    const lm_registry_entry *entry = find_word(name);
    if (entry != NULL)
        return entry;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(aliases[i].old, name) == 0 &&
            (aliases[i].option == NULL || option_set(options, aliases[i].option)))
            return find_word(aliases[i].word);
    return NULL;
}

/* ---- the bench side (bench.h) ------------------------------------------------------ */

size_t lm_bench_count(void)
{
    size_t n = 0;
    for (size_t i = 0; i < lm_registry_count(); i++)
        n += entries[i].bench != NULL;
    return n;
}

const lm_bench_case *lm_bench_at(size_t index)
{
    for (size_t i = 0; i < lm_registry_count(); i++)
        if (entries[i].bench != NULL && index-- == 0)
            return entries[i].bench;
    return NULL;
}

const lm_bench_case *lm_bench_find(const char *name)
{
    const lm_registry_entry *entry = lm_registry_find(name, NULL);
    return entry != NULL ? entry->bench : NULL;
}

const lm_bench_case *lm_bench_find_role(const char *role, size_t skip)
{
    for (size_t i = 0, n = lm_bench_count(); i < n; i++) {
        const lm_bench_case *c = lm_bench_at(i);
        if (c->role != NULL && strcmp(c->role, role) == 0 && skip-- == 0)
            return c;
    }
    return NULL;
}

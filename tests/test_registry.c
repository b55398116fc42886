/* The one kernel list against everything that must name its words: the harness registry
 * (a bench case and a contract runner per word), contracts/kernels.json (a case per word)
 * and docs/contracts.md (a recipe per contract word). Adding a line to
 * kernels/include/lm_kernels.h without the rest fails here, naming what is missing. */
#include "../harness/registry.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The distinct kernel words of the list, in list order. */
typedef struct words {
    const char *word[64];
    size_t count;
} words;

static void add_word(words *w, const char *word)
{
    for (size_t i = 0; i < w->count; i++)
        if (strcmp(w->word[i], word) == 0)
            return;
    cr_assert_lt(w->count, sizeof w->word / sizeof w->word[0]);
    w->word[w->count++] = word;
}

static words list_words(void)
{
    words w = {.count = 0};
#define ADD_WORD(name, kernel, signature, family, paths) add_word(&w, #kernel);
    LM_KERNELS(ADD_WORD)
#undef ADD_WORD
    return w;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s (tests run from the repository root)", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    cr_assert_not_null(text);
    cr_assert_eq(fread(text, 1, (size_t)size, f), (size_t)size);
    text[size] = '\0';
    fclose(f);
    return text;
}

Test(registry, every_listed_kernel_has_a_bench_case_and_a_contract_runner)
{
    words w = list_words();
    cr_assert_gt(w.count, 10);
    for (size_t i = 0; i < w.count; i++) {
        const lm_registry_entry *e = lm_registry_find(w.word[i], NULL);
        cr_assert_not_null(e, "kernel %s of lm_kernels.h is not in harness/registry.h",
                           w.word[i]);
        cr_assert_str_eq(e->name, w.word[i], "kernel %s is only an alias", w.word[i]);
        cr_assert_not_null(e->bench, "kernel %s has no bench case (BOTH in registry.h)",
                           w.word[i]);
        cr_assert_not_null(e->contract, "kernel %s has no contract runner", w.word[i]);
        cr_log_info("kernel %s: bench %s, runner registered", w.word[i], e->bench->name);
    }
}

Test(registry, bench_cases_carry_their_registered_name_and_names_are_unique)
{
    for (size_t i = 0; i < lm_registry_count(); i++) {
        const lm_registry_entry *e = lm_registry_at(i);
        if (e->bench != NULL)
            cr_assert_str_eq(e->bench->name, e->name, "registry word %s", e->name);
        cr_assert(e->bench != NULL || e->contract != NULL, "%s registers nothing", e->name);
        for (size_t j = 0; j < i; j++)
            cr_assert_str_neq(lm_registry_at(j)->name, e->name, "%s registered twice", e->name);
    }
}

Test(registry, old_names_resolve_to_their_words)
{
    static const char *const plain[][2] = {
        {"attn_decode_q", "kvq_decode"},     {"kvquant_decode", "kvq_decode"},
        {"affine_scan", "scan_affine"},      {"attention_prefill", "attn_prefill"},
        {"attention_decode", "attn_decode"}, {"ssm_mamba1_scan", "mamba1_scan"},
    };
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        const lm_registry_entry *e = lm_registry_find(plain[i][0], NULL);
        cr_assert_not_null(e, "%s", plain[i][0]);
        cr_assert_str_eq(e->name, plain[i][1]);
    }
    json_t *chunked = json_pack("{s:i}", "chunk", 16), *decode = json_pack("{s:b}", "decode", 1);
    json_t *off = json_pack("{s:b}", "decode", 0);
    cr_assert_str_eq(lm_registry_find("linear_attention", chunked)->name, "linear_chunked");
    cr_assert_str_eq(lm_registry_find("linear_attention", NULL)->name, "linear_recurrent");
    cr_assert_str_eq(lm_registry_find("delta_rule", chunked)->name, "delta_chunked");
    cr_assert_str_eq(lm_registry_find("delta_rule", off)->name, "delta_recurrent");
    cr_assert_str_eq(lm_registry_find("ssm_ssd", chunked)->name, "ssd_chunked");
    cr_assert_str_eq(lm_registry_find("ssm_ssd", decode)->name, "ssd_step");
    cr_assert_str_eq(lm_registry_find("ssm_ssd", off)->name, "ssd_recurrent");
    json_decref(chunked), json_decref(decode), json_decref(off);
    cr_assert_str_eq(lm_registry_find("attn_decode_q", NULL)->name, "kvq_decode");
    cr_assert_str_eq(lm_registry_find("affine_scan", NULL)->name, "scan_affine");
}

Test(registry, every_listed_kernel_has_a_case_in_the_kernels_contract)
{
    json_error_t jerr;
    json_t *root = json_load_file("contracts/kernels.json", 0, &jerr);
    cr_assert_not_null(root, "contracts/kernels.json: %s", jerr.text);
    const json_t *cases = json_object_get(root, "cases");
    words w = list_words();
    size_t found[64] = {0};
    for (size_t i = 0; i < json_array_size(cases); i++) {
        const json_t *c = json_array_get(cases, i);
        const char *kernel = json_string_value(json_object_get(c, "kernel"));
        const lm_registry_entry *e = lm_registry_find(kernel, json_object_get(c, "options"));
        cr_assert(e != NULL && e->contract != NULL, "case %zu: kernel %s has no runner", i,
                  kernel);
        for (size_t k = 0; k < w.count; k++)
            found[k] += strcmp(e->name, w.word[k]) == 0;
    }
    for (size_t k = 0; k < w.count; k++) {
        cr_log_info("kernel %s: %zu contract cases", w.word[k], found[k]);
        cr_expect_gt(found[k], 0, "kernel %s has no case in contracts/kernels.json", w.word[k]);
    }
    json_decref(root);
}

/* True when `word` stands as a whole word in a "#### " heading of text. */
static bool has_recipe(const char *text, const char *word)
{
    const size_t n = strlen(word);
    for (const char *line = text; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > 5 && strncmp(line, "#### ", 5) == 0)
            for (const char *p = line + 5; p + n <= line + len; p++) {
                bool starts = p == line + 5 || p[-1] == ' ' || p[-1] == '`' || p[-1] == ',';
                bool ends = p + n == line + len || p[n] == ' ' || p[n] == '`' || p[n] == ',';
                if (starts && ends && strncmp(p, word, n) == 0)
                    return true;
            }
        line = end ? end + 1 : NULL;
    }
    return false;
}

Test(registry, every_contract_word_has_a_recipe_in_the_docs)
{
    char *text = read_text("docs/contracts.md");
    for (size_t i = 0; i < lm_registry_count(); i++) {
        const lm_registry_entry *e = lm_registry_at(i);
        if (e->contract != NULL)
            cr_expect(has_recipe(text, e->name),
                      "docs/contracts.md has no '#### %s' recipe heading", e->name);
    }
    free(text);
}

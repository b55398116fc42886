/* libFuzzer target: the model-file loader behind `longmix model --model FILE`.
 *
 * The input is a model file's bytes, written to a temporary file and read by
 * lm_model_spec_load exactly as the CLI reads one (size cap, JSON parse, every section's
 * fields, the size check). A file it accepts then goes through the arithmetic the model
 * command runs before measuring anything: layer counts, parameters (stored and active),
 * memory at one token and at max_context for every cache format, KV bytes per token. A
 * finding is a crash, a sanitizer report (a signed overflow among them), a leak, a timeout,
 * or an accepted model whose counts are not finite, negative, or inconsistent (more active
 * than stored parameters, layer counts that do not add up). */
#include "../../harness/model_spec.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const caches[] = {"f32",  "f16",  "bf16",     "int8",
                                     "int4", "kivi4", "kivi2", "kivi4g64", "kivi2g64"};

/* The process's scratch file, made on the first input (the fuzzer runs inputs in turn) and
 * removed at exit. */
static char scratch[64];

static void remove_scratch(void) { remove(scratch); }

static const char *scratch_path(void)
{
    if (scratch[0] == '\0') {
        snprintf(scratch, sizeof scratch, "/tmp/longmix-fuzz-model-XXXXXX");
        const int fd = mkstemp(scratch);
        if (fd < 0)
            abort();
        close(fd);
        atexit(remove_scratch);
    }
    return scratch;
}

static void check_counts(const lm_model_spec *s)
{
    long long mixers[LM_MIXER_COUNT], mlps[LM_MLP_COUNT], m = 0, p = 0;
    lm_model_counts(s, mixers, mlps);
    for (int k = 0; k < LM_MIXER_COUNT; k++)
        m += mixers[k];
    for (int k = 0; k < LM_MLP_COUNT; k++)
        p += mlps[k];
    if (m != s->layers || p != s->layers)
        abort();
    double total, active;
    lm_model_params(s, &total, &active);
    if (!isfinite(total) || !(active >= 0.0) || active > total || total > LM_MODEL_MAX_PARAMS)
        abort();
}

static void check_memory(const lm_model_spec *s)
{
    for (size_t i = 0; i < sizeof caches / sizeof caches[0]; i++) {
        lm_cache_format cache;
        if (lm_cache_format_parse(caches[i], &cache, NULL) != LM_OK)
            abort();
        const long long ctx[2] = {1, s->max_context};
        for (int c = 0; c < 2; c++) {
            lm_model_memory mem;
            lm_model_memory_at(s, LM_WEIGHT_BF16, &cache, ctx[c], &mem);
            if (!(mem.weights >= 0.0 && mem.kv >= 0.0 && mem.state >= 0.0) ||
                !isfinite(mem.weights + mem.kv + mem.state))
                abort();
        }
        if (!(lm_model_kv_token_bytes(s, &cache) >= 0.0))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = scratch_path();
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        abort();
    if (size > 0 && fwrite(data, 1, size, f) != size)
        abort();
    if (fclose(f) != 0)
        abort();
    lm_model_spec spec;
    lm_error err;
    if (lm_model_spec_load(path, &spec, &err) != LM_OK)
        return 0;
    check_counts(&spec);
    check_memory(&spec);
    return 0;
}

/* longmix model: whole architectures on this CPU. Per model x context x batch x threads,
 * the decode step assembled from measured units (model_run.h) multiplied by their counts
 * in the model, with memory from arithmetic; a tidy CSV (the results columns, then the
 * model columns), a Markdown table, and the model-level crossover against a baseline. */
#include "cli.h"
#include "model_check.h"
#include "model_run.h"
#include "model_stream.h"
#include "model_table.h"
#include "../kernels/gemm/gemm.h"
#include "omp_wait.h"
#include "opts.h"
#include "roofline.h"
#include "topo.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_MAX 16

typedef struct model_options {
    const char *presets, *models[MODEL_MAX];
    size_t model_files;
    const char *ctx, *prompt, *batch, *threads, *cache, *weights, *out, *cross_out, *baseline;
    const char *shard;
    const char *isa;      /* --isa: the paths --check runs (NULL: every available one) */
    int reps;
    int measure_options;  /* options of a measurement given (refused with --check) */
    int curve_options;    /* of those, --threads and --reps (all --stream-curve takes) */
    int shard_k, shard_n; /* this run measures configurations i with i % n == k - 1 */
    bool resume, list, dry_run, check, stream_curve;
} model_options;

static void usage(FILE *out)
{
    fprintf(out,
        "usage: longmix model [--preset NAME[,NAME...]] [--model FILE]... [--ctx LIST]\n"
        "                     [--prompt LIST] [--batch LIST] [--threads LIST] [--cache DTYPE] [--weights DTYPE]\n"
        "                     [--reps N] [--baseline NAME] [--out FILE] [--crossover-out FILE]\n"
        "                     [--resume] [--shard K/N] [--list] [--dry-run]\n"
        "       longmix model --check [--isa LIST]\n"
        "       longmix model --stream-curve [--threads LIST] [--reps N]\n\n"
        "Whole-model decode and prefill on this CPU: each layer kind (mixer, MLP, LM head) is\n"
        "built at full size from synthetic weights, measured over enough copies to stream\n"
        "from memory, and multiplied by its count in the model (docs/models.md says what is\n"
        "measured, what counted).\n\n"
        "  --preset     presets from the models/ folder (LONGMIX_MODELS); default: all of them\n"
        "  --model      a model file of your own (schema longmix-model/1), repeatable\n"
        "  --ctx        decode: tokens in each sequence's cache; default 1k,4k,16k,64k (none\n"
        "               when --prompt is given without --ctx)\n"
        "  --prompt     prefill: prompt tokens of each sequence, e.g. 512,2k; the time to the\n"
        "               first token (projections through oneDNN's GEMM; with int8 weights\n"
        "               the activations are quantized to int8 per row)\n"
        "  --batch      sequences decoded together; default 1\n"
        "  --threads    default auto (1 and the core count)\n"
        "  --cache      attention cache: f32 f16 bf16 int8 int4 kivi4 kivi2 kivi4g64 kivi2g64;\n"
        "               default bf16\n"
        "  --weights    dense weights: f32 bf16 int8; default bf16\n"
        "  --reps       timed passes per unit (median reported); default 5\n"
        "  --baseline   the model every other one is crossed with; default llama3-8b\n"
        "  --out        default results/models.csv; --crossover-out default\n"
        "               results/model_crossover.csv\n"
        "  --resume     keep the ok rows of --out and measure only the missing configurations\n"
        "  --shard K/N  measure configurations i (threads x model x batch x (ctx, then prompt),\n"
        "               in that order) with i %% N == K-1, into --out; no crossovers (a shard\n"
        "               holds a part): join the shards with longmix merge, then run the same\n"
        "               command with --resume --out MERGED.csv for the table and the crossovers\n"
        "               (scripts/slurm/submit.sh does both)\n"
        "  --list       the presets with their parameters and sizes\n"
        "  --dry-run    the plan and its memory, nothing measured or written\n"
        "  --check      no measurement: one decode step of every layer kind (attention with an\n"
        "               f32, f16, int8, int4, kivi4, kivi2, kivi4g64, kivi2g64 cache and a\n"
        "               sliding window, MLA, Mamba-1, Mamba-2, gated delta, each with its dense\n"
        "               or MoE MLP) at small shapes against its float64 reference (a quantized\n"
        "               cache read from its codes), f32/bf16/int8 weights, batch 1 and 3,\n"
        "               context 5 and 37 (quantized caches: 37 and 133), three tokens; one\n"
        "               line per layer and path (max normalized error, bound 8 sqrt(K) u, plus\n"
        "               the VNNI kernel's value-weight rounding, ok or FAILED), then a summary\n"
        "  --isa        with --check: the paths, e.g. scalar,avx2, all or active; default all\n"
        "               (every path this CPU runs)\n"
        "  --stream-curve  no model: the read-only stream over working sets from 1 MiB to the\n"
        "               stream array (4 x LLC), each thread count, as a Markdown table; says\n"
        "               where the rate falls to DRAM's level and whether the units' copies\n"
        "               (past 2 x the reported LLC) are past it\n\n"
        "A configuration whose measurement does not fit in the available memory is refused\n"
        "before anything is allocated. Exit 0 ok, 1 a --check failed, 2 bad usage or input.\n");
}

static int usage_error(const char *message)
{
    fprintf(stderr, "longmix model: %s\n(longmix model --help for usage)\n", message);
    return LM_EXIT_USAGE;
}

static int parse_args(int argc, char **argv, model_options *o)
{
    *o = (model_options){.ctx = NULL, .batch = "1", .threads = "auto",
                         .cache = "bf16", .weights = "bf16", .out = "results/models.csv",
                         .cross_out = "results/model_crossover.csv", .baseline = "llama3-8b",
                         .reps = 5, .shard_k = 1, .shard_n = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **value = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return -1;
        } else if (strcmp(a, "--resume") == 0) {
            o->resume = true;
            o->measure_options++;
            continue;
        } else if (strcmp(a, "--list") == 0) {
            o->list = true;
            o->measure_options++;
            continue;
        } else if (strcmp(a, "--dry-run") == 0) {
            o->dry_run = true;
            o->measure_options++;
            continue;
        } else if (strcmp(a, "--check") == 0) {
            o->check = true;
            continue;
        } else if (strcmp(a, "--stream-curve") == 0) {
            o->stream_curve = true;
            continue;
        }
        const char *reps = NULL;
        if (strcmp(a, "--preset") == 0) value = &o->presets;
        else if (strcmp(a, "--ctx") == 0) value = &o->ctx;
        else if (strcmp(a, "--prompt") == 0) value = &o->prompt;
        else if (strcmp(a, "--batch") == 0) value = &o->batch;
        else if (strcmp(a, "--threads") == 0) value = &o->threads;
        else if (strcmp(a, "--cache") == 0) value = &o->cache;
        else if (strcmp(a, "--weights") == 0) value = &o->weights;
        else if (strcmp(a, "--out") == 0) value = &o->out;
        else if (strcmp(a, "--crossover-out") == 0) value = &o->cross_out;
        else if (strcmp(a, "--baseline") == 0) value = &o->baseline;
        else if (strcmp(a, "--shard") == 0) value = &o->shard;
        else if (strcmp(a, "--reps") == 0) value = &reps;
        else if (strcmp(a, "--isa") == 0) value = &o->isa;
        else if (strcmp(a, "--model") == 0) {
            if (o->model_files == MODEL_MAX)
                return usage_error("at most 16 --model files");
            value = &o->models[o->model_files++];
        } else {
            char m[160];
            snprintf(m, sizeof m, "unknown option '%s'", a);
            return usage_error(m);
        }
        if (i + 1 >= argc) {
            char m[96];
            snprintf(m, sizeof m, "%s needs a value", a);
            return usage_error(m);
        }
        *value = argv[++i];
        o->measure_options += value != &o->isa;
        o->curve_options += value == &o->threads || reps != NULL;
        if (reps != NULL) {
            long r;
            lm_error e;
            if (lm_parse_integer("--reps", reps, 1, 255, &r, &e) != LM_OK)
                return usage_error(e.message);
            o->reps = (int)r;
        }
    }
    if (o->check && o->measure_options > 0)
        return usage_error("--check takes only --isa");
    if (o->stream_curve && (o->check || o->isa != NULL || o->model_files > 0 ||
                            o->measure_options > o->curve_options))
        return usage_error("--stream-curve takes only --threads and --reps");
    if (o->isa != NULL && !o->check)
        return usage_error("--isa goes with --check");
    lm_error e;
    if (o->shard != NULL && lm_parse_shard(o->shard, &o->shard_k, &o->shard_n, &e) != LM_OK)
        return usage_error(e.message);
    return 0;
}

/* ---- loading the models ------------------------------------------------------------- */

static int load_models(const model_options *o, lm_model_spec *specs, size_t *count)
{
    lm_error e;
    char names[MODEL_MAX][32];
    size_t n = 0;
    *count = 0;
    if (o->presets != NULL) {
        if (lm_parse_word_list("--preset", o->presets, names, &n, &e) != LM_OK)
            return usage_error(e.message);
    } else if (o->model_files == 0) {
        char all[64][LM_MODEL_NAME_MAX];
        size_t k;
        if (lm_model_preset_names(all, 64, &k, &e) != LM_OK)
            return usage_error(e.message);
        for (size_t i = 0; i < k && n < MODEL_MAX; i++)
            snprintf(names[n++], sizeof names[0], "%.31s", all[i]);
    }
    for (size_t i = 0; i < n; i++) {
        char path[600];
        if (lm_model_preset_path(names[i], path, sizeof path, &e) != LM_OK ||
            lm_model_spec_load(path, &specs[*count], &e) != LM_OK)
            return usage_error(e.message);
        (*count)++;
    }
    for (size_t i = 0; i < o->model_files && *count < MODEL_MAX; i++) {
        if (lm_model_spec_load(o->models[i], &specs[*count], &e) != LM_OK)
            return usage_error(e.message);
        (*count)++;
    }
    return 0;
}

static double gib(double bytes) { return bytes / (double)(1ull << 30); }

static void mixer_summary(const lm_model_spec *s, char *out, size_t size)
{
    long long mixers[LM_MIXER_COUNT], mlps[LM_MLP_COUNT];
    lm_model_counts(s, mixers, mlps);
    out[0] = '\0';
    for (int k = 0; k < LM_MIXER_COUNT; k++)
        if (mixers[k] > 0)
            snprintf(out + strlen(out), size - strlen(out), "%s%lld %s", out[0] ? " + " : "",
                     mixers[k], lm_mixer_name((lm_mixer_kind)k));
    for (int k = 1; k < LM_MLP_COUNT; k++)
        if (mlps[k] > 0)
            snprintf(out + strlen(out), size - strlen(out), ", %lld %s", mlps[k],
                     lm_mlp_name((lm_mlp_kind)k));
}

static int list_models(const lm_model_spec *specs, size_t count, lm_weight_dtype w)
{
    printf("| preset | layers | d_model | layers by kind | params | active/token | %s weights |\n",
           lm_weight_dtype_name(w));
    printf("|---|---:|---:|---|---:|---:|---:|\n");
    for (size_t i = 0; i < count; i++) {
        double total, active;
        char kinds[160];
        lm_model_params(&specs[i], &total, &active);
        mixer_summary(&specs[i], kinds, sizeof kinds);
        printf("| %s | %lld | %lld | %s | %.2f B | %.2f B | %.2f GiB |\n", specs[i].name,
               specs[i].layers, specs[i].d_model, kinds, (double)total / 1e9,
               (double)active / 1e9, gib((double)total * (double)lm_weight_dtype_size(w)));
    }
    return LM_EXIT_OK;
}

/* ---- the grid and its memory -------------------------------------------------------- */

typedef struct grid {
    long ctx[LM_LIST_MAX], prompt[LM_LIST_MAX], batch[LM_LIST_MAX], threads[LM_LIST_MAX];
    size_t ctx_count, prompt_count, batch_count, thread_count;
    lm_weight_dtype weights;
    lm_cache_format cache;
} grid;

static int build_grid(const model_options *o, grid *g, int cores)
{
    lm_error e;
    g->ctx_count = g->prompt_count = 0;
    const char *ctx = o->ctx != NULL ? o->ctx : o->prompt == NULL ? "1k,4k,16k,64k" : NULL;
    if ((ctx != NULL && lm_parse_size_list("--ctx", ctx, 1, g->ctx, &g->ctx_count, &e) != LM_OK) ||
        (o->prompt != NULL &&
         lm_parse_size_list("--prompt", o->prompt, 1, g->prompt, &g->prompt_count, &e) != LM_OK) ||
        lm_parse_size_list("--batch", o->batch, 1, g->batch, &g->batch_count, &e) != LM_OK ||
        lm_parse_thread_list("--threads", o->threads, cores, g->threads, &g->thread_count, &e) != LM_OK ||
        lm_weight_dtype_parse(o->weights, &g->weights, &e) != LM_OK ||
        lm_cache_format_parse(o->cache, &g->cache, &e) != LM_OK)
        return usage_error(e.message);
    for (size_t b = 0; b < g->batch_count; b++)
        if (g->batch[b] > 256)
            return usage_error("--batch values must be at most 256");
    if (g->prompt_count > 0 && !lm_gemm_available())
        return usage_error("--prompt needs the prefill GEMM, and this build has none (no oneDNN)");
    return 0;
}

/* Sets c's role and kind; when that unit's allocation exceeds *most, it becomes *most and
 * name (the unit's kind) becomes *which. */
static void raise_alloc(lm_unit_config *c, lm_unit_role role, int kind, const char *name,
                        uint64_t llc, double *most, const char **which)
{
    c->role = role;
    c->kind = kind;
    double a = lm_model_unit_alloc(c, llc);
    if (a > *most) {
        *most = a;
        *which = name;
    }
}

/* The largest allocation the measurement of (spec, ctx, batch) makes: its largest unit's
 * copies. *which names that unit. */
static double plan_alloc(const lm_model_spec *s, const grid *g, long ctx, long prompt,
                         long batch, uint64_t llc, const char **which)
{
    long long mixers[LM_MIXER_COUNT], mlps[LM_MLP_COUNT];
    lm_model_counts(s, mixers, mlps);
    lm_unit_config c = {.spec = s, .weights = g->weights, .cache = g->cache,
                        .batch = (size_t)batch, .ctx = ctx, .prompt = prompt};
    c.role = LM_UNIT_HEAD;
    double most = lm_model_unit_alloc(&c, llc);
    *which = "LM head";
    for (int k = 0; k < LM_MIXER_COUNT; k++)
        if (mixers[k] > 0)
            raise_alloc(&c, LM_UNIT_MIXER, k, lm_mixer_name((lm_mixer_kind)k), llc, &most, which);
    for (int k = 1; k < LM_MLP_COUNT; k++)
        if (mlps[k] > 0)
            raise_alloc(&c, LM_UNIT_MLP, k, lm_mlp_name((lm_mlp_kind)k), llc, &most, which);
    return most;
}

static int check_memory(const lm_model_spec *specs, size_t count, const grid *g, uint64_t llc,
                        double stream_bytes, bool print)
{
    double avail = lm_model_available_memory();
    if (print)
        printf("| model | ctx | batch | weights GiB | KV GiB/seq | state MiB/seq | batch total GiB | "
               "measurement GiB (largest unit) |\n|---|---:|---:|---:|---:|---:|---:|---|\n");
    for (size_t m = 0; m < count; m++)
        for (size_t b = 0; b < g->batch_count; b++)
            for (size_t c = 0; c < g->ctx_count; c++) {
                const char *which;
                double need = plan_alloc(&specs[m], g, g->ctx[c], 0, g->batch[b], llc, &which) + stream_bytes;
                lm_model_memory mem;
                lm_model_memory_at(&specs[m], g->weights, &g->cache, g->ctx[c], &mem);
                if (print)
                    printf("| %s | %ld | %ld | %.2f | %.3f | %.2f | %.2f | %.2f (%s) |\n",
                           specs[m].name, g->ctx[c], g->batch[b], gib(mem.weights), gib(mem.kv),
                           mem.state / 1048576.0,
                           gib(mem.weights + (double)g->batch[b] * (mem.kv + mem.state)),
                           gib(need), which);
                if (need > avail * 0.9) {
                    fprintf(stderr,
                            "longmix model: %s (%s) at ctx %ld, batch %ld does not fit: its "
                            "measurement needs %.2f GiB (the %s layer's copies and caches, and "
                            "the stream array), %.2f GiB is available; nothing was measured\n",
                            specs[m].name, specs[m].path, g->ctx[c], g->batch[b], gib(need),
                            which, gib(avail));
                    return LM_EXIT_USAGE;
                }
            }
    for (size_t m = 0; m < count; m++) /* prefill: one instance of each unit, batch x n rows */
        for (size_t b = 0; b < g->batch_count; b++)
            for (size_t p = 0; p < g->prompt_count; p++) {
                if (g->prompt[p] > specs[m].max_context) {
                    fprintf(stderr, "longmix model: --prompt %ld is past %s's max_context %lld\n",
                            g->prompt[p], specs[m].name, specs[m].max_context);
                    return LM_EXIT_USAGE;
                }
                const char *which;
                double need = plan_alloc(&specs[m], g, 0, g->prompt[p], g->batch[b], llc, &which) +
                              stream_bytes;
                if (print)
                    printf("prefill %s, prompt %ld, batch %ld: measurement %.2f GiB (%s)\n",
                           specs[m].name, g->prompt[p], g->batch[b], gib(need), which);
                if (need > avail * 0.9) {
                    fprintf(stderr,
                            "longmix model: %s (%s) prefill of %ld tokens, batch %ld does not "
                            "fit: its measurement needs %.2f GiB (the %s layer's weights, "
                            "packed copy and activations, and the stream array), %.2f GiB is "
                            "available; nothing was measured\n",
                            specs[m].name, specs[m].path, g->prompt[p], g->batch[b], gib(need),
                            which, gib(avail));
                    return LM_EXIT_USAGE;
                }
            }
    return 0;
}

/* ---- measuring one configuration ----------------------------------------------------- */

/* The units measured at one thread count, by signature (lm_unit_signature): each is
 * measured once, and its timing serves every configuration that builds the same unit: the
 * contexts of a unit that does not depend on the context, a sliding window's contexts past
 * the window, and other models with the same shapes (Llama's and Mistral's MLP). The same
 * work then reads the same figure in every model, whatever minute measured it. */
typedef struct memo_entry {
    long long sig[LM_UNIT_SIGNATURE_LEN];
    lm_unit_timing t;
} memo_entry;

typedef struct unit_memo {
    memo_entry *at;
    size_t count, cap;
} unit_memo;

static void unit_memo_free(unit_memo *m)
{
    free(m->at);
    *m = (unit_memo){0};
}

/* One unit; for a decode unit (stream not NULL) the read-only stream right after its
 * passes: the unit's bytes are held against the stream of its own minutes (the VM's
 * bandwidth drifts within a run). */
static lm_status measure_one(lm_unit_config *c, unit_memo *memo, int reps, uint64_t llc,
                             const lm_stream *stream, lm_unit_timing *out, lm_error *err)
{
    long long sig[LM_UNIT_SIGNATURE_LEN];
    lm_unit_signature(c, sig);
    for (size_t i = 0; i < memo->count; i++)
        if (memcmp(memo->at[i].sig, sig, sizeof sig) == 0) {
            *out = memo->at[i].t;
            return LM_OK;
        }
    if (memo->count == memo->cap) {
        size_t cap = memo->cap == 0 ? 64 : 2 * memo->cap;
        memo_entry *grown = realloc(memo->at, cap * sizeof *grown);
        if (grown == NULL)
            return lm_fail(err, LM_ERR_NOMEM, "out of memory for the units measured");
        memo->at = grown;
        memo->cap = cap;
    }
    lm_status st = lm_model_measure_unit(c, reps, llc, out, err);
    if (st == LM_OK) {
        out->stream_gbps = stream != NULL ? lm_stream_measure(stream, 3) : 0.0;
        memcpy(memo->at[memo->count].sig, sig, sizeof sig);
        memo->at[memo->count++].t = *out;
    }
    return st;
}

static lm_status measure_model(const lm_model_spec *s, const grid *g, long ctx, long batch,
                               const lm_ops *ops, int reps, uint64_t llc, const lm_stream *stream,
                               unit_memo *memo, lm_model_decode *out, lm_error *err)
{
    long long mixers[LM_MIXER_COUNT], mlps[LM_MLP_COUNT];
    lm_model_counts(s, mixers, mlps);
    memset(out, 0, sizeof *out);
    lm_unit_config c = {.spec = s, .weights = g->weights, .cache = g->cache,
                        .batch = (size_t)batch, .ctx = ctx, .seed = 20261203u, .ops = ops};
    lm_unit_timing t;
    for (int k = 0; k < LM_MIXER_COUNT; k++) {
        if (mixers[k] == 0)
            continue;
        c.role = LM_UNIT_MIXER;
        c.kind = k;
        lm_status st = measure_one(&c, memo, reps, llc, stream, &t, err);
        if (st != LM_OK)
            return st;
        lm_model_decode_add(out, &t, (double)mixers[k]);
    }
    for (int k = 1; k < LM_MLP_COUNT; k++) {
        if (mlps[k] == 0)
            continue;
        c.role = LM_UNIT_MLP;
        c.kind = k;
        lm_status st = measure_one(&c, memo, reps, llc, stream, &t, err);
        if (st != LM_OK)
            return st;
        lm_model_decode_add(out, &t, (double)mlps[k]);
    }
    c.role = LM_UNIT_HEAD;
    lm_status st = measure_one(&c, memo, reps, llc, stream, &t, err);
    if (st != LM_OK)
        return st;
    lm_model_decode_add(out, &t, 1.0);
    lm_model_memory_at(s, g->weights, &g->cache, ctx, &out->memory);
    return LM_OK;
}

/* The prefill of n tokens for each of `batch` sequences: every unit kind once (one
 * instance; shared only with other models' units of the same signature, every unit's work
 * depends on n). */
static lm_status measure_prefill(const lm_model_spec *s, const grid *g, long prompt, long batch,
                                 const lm_ops *ops, int reps, uint64_t llc, unit_memo *memo,
                                 lm_model_decode *out, lm_error *err)
{
    long long mixers[LM_MIXER_COUNT], mlps[LM_MLP_COUNT];
    lm_model_counts(s, mixers, mlps);
    memset(out, 0, sizeof *out);
    lm_unit_config c = {.spec = s, .weights = g->weights, .cache = g->cache,
                        .batch = (size_t)batch, .prompt = prompt, .seed = 20261203u, .ops = ops};
    lm_unit_timing t;
    for (int k = 0; k < LM_MIXER_COUNT + LM_MLP_COUNT; k++) {
        bool mixer = k < LM_MIXER_COUNT;
        int kind = mixer ? k : k - LM_MIXER_COUNT;
        long long n = mixer ? mixers[kind] : kind == LM_MLP_NONE ? 0 : mlps[kind];
        if (n == 0)
            continue;
        c.role = mixer ? LM_UNIT_MIXER : LM_UNIT_MLP;
        c.kind = kind;
        lm_status st = measure_one(&c, memo, reps, llc, NULL, &t, err);
        if (st != LM_OK)
            return st;
        lm_model_decode_add(out, &t, (double)n);
    }
    c.role = LM_UNIT_HEAD;
    lm_status st = measure_one(&c, memo, reps, llc, NULL, &t, err);
    if (st != LM_OK)
        return st;
    lm_model_decode_add(out, &t, 1.0);
    lm_model_memory_at(s, g->weights, &g->cache, prompt, &out->memory);
    return LM_OK;
}

/* The same run's peak of the prefill GEMMs' dtype on the calling team: bf16 or int8
 * (u8 x s8 VPDPBUSD, 2 operations per multiply-add) dot products where the CPU has them
 * (AVX512-BF16, AVX512-VNNI), else float32 FMA on the ISA path. */
static lm_status prefill_peak(lm_weight_dtype w, const lm_ops *ops, int threads, double *gflops,
                              const char **what, lm_error *err)
{
    *what = "f32 FMA";
    if (w == LM_WEIGHT_BF16 && lm_roofline_peak_dot_bf16(threads, 5, 0.05, gflops, NULL) == LM_OK) {
        *what = "bf16 dot";
        return LM_OK;
    }
    if (w == LM_WEIGHT_INT8 && lm_roofline_peak_dot_i8(threads, 5, 0.05, gflops, NULL) == LM_OK) {
        *what = "int8 dot";
        return LM_OK;
    }
    return lm_roofline_peak(ops->isa, threads, 5, 0.05, gflops, err);
}

/* ---- the command ---------------------------------------------------------------------- */

/* The configuration at threads t, model m, batch b and point j (a decode context for
 * j < ctx_count, then a prompt): its index in the whole grid (what --shard K/N splits) and
 * its key in the table. */
static size_t config_index(const grid *g, size_t count, size_t t, size_t m, size_t b, size_t j)
{
    return ((t * count + m) * g->batch_count + b) * (g->ctx_count + g->prompt_count) + j;
}

static lm_model_key config_key(const lm_model_spec *specs, const grid *g, const lm_ops *ops,
                               size_t t, size_t m, size_t b, size_t j)
{
    bool prefill = j >= g->ctx_count;
    return (lm_model_key){specs[m].name, lm_isa_name(ops->isa), (int)g->threads[t],
                          g->cache.name, lm_weight_dtype_name(g->weights),
                          prefill ? g->prompt[j - g->ctx_count] : g->ctx[j], g->batch[b],
                          prefill};
}

/* What this shard holds at thread count t (every thread count when t is SIZE_MAX): its
 * configurations, and of those the decodes and the prefills the table does not hold yet. */
typedef struct shard_plan {
    size_t in_shard, decodes, prefills;
} shard_plan;

static shard_plan shard_counts(const model_options *o, const lm_model_table *table,
                               const lm_model_spec *specs, size_t count, const grid *g,
                               const lm_ops *ops, size_t only_t)
{
    shard_plan p = {0, 0, 0};
    size_t points = g->ctx_count + g->prompt_count;
    for (size_t t = 0; t < g->thread_count; t++)
        for (size_t m = 0; m < count; m++)
            for (size_t b = 0; b < g->batch_count; b++)
                for (size_t j = 0; j < points; j++) {
                    if ((only_t != SIZE_MAX && t != only_t) ||
                        !lm_shard_selects(config_index(g, count, t, m, b, j), o->shard_k,
                                          o->shard_n))
                        continue;
                    p.in_shard++;
                    lm_model_key key = config_key(specs, g, ops, t, m, b, j);
                    if (!lm_model_table_has(table, &key))
                        *(j < g->ctx_count ? &p.decodes : &p.prefills) += 1;
                }
    return p;
}

static int run_grid(const model_options *o, const lm_model_spec *specs, size_t count,
                    const grid *g, const lm_machine_meta *meta, uint64_t llc)
{
    lm_error e;
    lm_model_table table;
    if (lm_model_table_open(&table, o->out, o->resume, meta, &e) != LM_OK) {
        fprintf(stderr, "longmix model: %s\n", e.message);
        return LM_EXIT_USAGE;
    }
    const lm_ops *ops = lm_ops_active();
    lm_busy_watch watch;
    lm_busy_watch_start(&watch, "model");
    const shard_plan all = shard_counts(o, &table, specs, count, g, ops, SIZE_MAX);
    const size_t total = all.in_shard;
    if (o->shard_n > 1)
        fprintf(stderr, "longmix model: shard %d/%d: %zu of the %zu configurations\n", o->shard_k,
                o->shard_n, total,
                count * (g->ctx_count + g->prompt_count) * g->batch_count * g->thread_count);
    size_t done = 0;
    int rc = LM_EXIT_OK;
    for (size_t t = 0; t < g->thread_count && rc == LM_EXIT_OK; t++) {
        omp_set_num_threads((int)g->threads[t]);
        /* the limits of what is left to measure at this thread count (nothing: kept rows or
         * other shards' configurations): decode's stream, prefill's peak */
        const shard_plan here = shard_counts(o, &table, specs, count, g, ops, t);
        /* the stream array lives through the thread count: measured at the start and again
         * after every unit measured */
        lm_stream stream_array = {0};
        double stream = 0.0;
        if (here.decodes > 0) {
            if (lm_stream_create(&stream_array, ops, llc, &e) != LM_OK) {
                fprintf(stderr, "longmix model: %s\n", e.message);
                rc = LM_EXIT_USAGE;
                break;
            }
            stream = lm_stream_measure(&stream_array, 3);
            fprintf(stderr, "longmix model: threads %ld: read-only stream %.1f GB/s over %.0f MiB "
                    "(measured again after every unit)\n", g->threads[t], stream,
                    lm_stream_bytes(&stream_array) / 1048576.0);
        }
        double peak = 0.0;
        if (here.prefills > 0) {
            const char *what;
            if (prefill_peak(g->weights, ops, (int)g->threads[t], &peak, &what, &e) != LM_OK) {
                fprintf(stderr, "longmix model: %s\n", e.message);
                lm_stream_free(&stream_array);
                rc = LM_EXIT_USAGE;
                break;
            }
            fprintf(stderr, "longmix model: threads %ld: peak %.1f GFLOP/s (%s), the prefill "
                    "GEMMs' limit\n", g->threads[t], peak, what);
        }
        unit_memo memo = {0};
        for (size_t m = 0; m < count && rc == LM_EXIT_OK; m++)
            for (size_t b = 0; b < g->batch_count && rc == LM_EXIT_OK; b++) {
                for (size_t c = 0; c < g->ctx_count && rc == LM_EXIT_OK; c++) {
                    if (!lm_shard_selects(config_index(g, count, t, m, b, c), o->shard_k,
                                          o->shard_n))
                        continue;
                    lm_model_key key = config_key(specs, g, ops, t, m, b, c);
                    done++;
                    if (lm_model_table_has(&table, &key)) {
                        fprintf(stderr, "[%zu/%zu] %s ctx %ld batch %ld threads %ld: kept (--resume)\n",
                                done, total, specs[m].name, g->ctx[c], g->batch[b], g->threads[t]);
                        continue;
                    }
                    lm_model_decode dec;
                    const double since = lm_now();
                    lm_status st = measure_model(&specs[m], g, g->ctx[c], g->batch[b], ops,
                                                 o->reps, llc, &stream_array, &memo, &dec, &e);
                    if (st != LM_OK) {
                        fprintf(stderr, "longmix model: %s ctx %ld batch %ld: %s\n", specs[m].name,
                                g->ctx[c], g->batch[b], e.message);
                        rc = LM_EXIT_USAGE;
                        break;
                    }
                    fprintf(stderr, "[%zu/%zu] %s ctx %ld batch %ld threads %ld: %.2f ms/token step, "
                            "%.0f%% of the units' streams (%.1f GB/s)\n", done, total,
                            specs[m].name, g->ctx[c], g->batch[b], g->threads[t], dec.step_s * 1e3,
                            100.0 * dec.bytes / dec.step_s / 1e9 / dec.stream_gbps, dec.stream_gbps);
                    if (lm_model_table_put(&table, &key, &specs[m], &dec, o->reps, &watch, since,
                                           &e) != LM_OK ||
                        lm_model_table_write(&table, &e) != LM_OK) {
                        fprintf(stderr, "longmix model: %s\n", e.message);
                        rc = LM_EXIT_USAGE;
                    }
                }
                for (size_t p = 0; p < g->prompt_count && rc == LM_EXIT_OK; p++) {
                    const size_t j = g->ctx_count + p;
                    if (!lm_shard_selects(config_index(g, count, t, m, b, j), o->shard_k,
                                          o->shard_n))
                        continue;
                    lm_model_key key = config_key(specs, g, ops, t, m, b, j);
                    done++;
                    if (lm_model_table_has(&table, &key)) {
                        fprintf(stderr, "[%zu/%zu] %s prefill %ld batch %ld threads %ld: kept (--resume)\n",
                                done, total, specs[m].name, g->prompt[p], g->batch[b], g->threads[t]);
                        continue;
                    }
                    /* the peak again before each row, the best kept: a peak measured while
                     * another process held a core would inflate every fraction after it */
                    double again;
                    const char *what;
                    if (prefill_peak(g->weights, ops, (int)g->threads[t], &again, &what, NULL) == LM_OK &&
                        again > peak)
                        peak = again;
                    lm_model_decode pre;
                    const double since = lm_now();
                    lm_status st = measure_prefill(&specs[m], g, g->prompt[p], g->batch[b], ops,
                                                   o->reps, llc, &memo, &pre, &e);
                    if (st != LM_OK) {
                        fprintf(stderr, "longmix model: %s prefill %ld batch %ld: %s\n",
                                specs[m].name, g->prompt[p], g->batch[b], e.message);
                        rc = LM_EXIT_USAGE;
                        break;
                    }
                    pre.stream_gbps = stream;
                    pre.peak_gflops = peak;
                    fprintf(stderr, "[%zu/%zu] %s prefill %ld batch %ld threads %ld: %.2f ms to the "
                            "first token, GEMMs at %.0f%% of peak\n", done, total, specs[m].name,
                            g->prompt[p], g->batch[b], g->threads[t], pre.step_s * 1e3,
                            pre.gemm_s > 0 && peak > 0 ? 100.0 * pre.gemm_flops / pre.gemm_s / 1e9 / peak : 0.0);
                    if (lm_model_table_put(&table, &key, &specs[m], &pre, o->reps, &watch, since,
                                           &e) != LM_OK ||
                        lm_model_table_write(&table, &e) != LM_OK) {
                        fprintf(stderr, "longmix model: %s\n", e.message);
                        rc = LM_EXIT_USAGE;
                    }
                }
            }
        unit_memo_free(&memo);
        lm_stream_free(&stream_array);
    }
    lm_busy_watch_finish(&watch, o->out);
    if (rc == LM_EXIT_OK)
        fprintf(stderr, "longmix model: %zu configurations measured, %zu kept from %s\n",
                all.decodes + all.prefills, total - all.decodes - all.prefills, o->out);
    if (rc == LM_EXIT_OK && o->shard_n > 1) {
        fprintf(stderr, "longmix model: shard %d/%d written to %s; no crossovers from a part: "
                        "merge the shards, then run the same command with --resume --out "
                        "MERGED.csv\n", o->shard_k, o->shard_n, o->out);
    } else if (rc == LM_EXIT_OK) {
        lm_model_table_markdown(&table, stdout);
        rc = lm_model_crossover_write(&table, specs, count, o->baseline, g->weights, &g->cache,
                                      o->cross_out, meta, stdout, &e) == LM_OK
                 ? LM_EXIT_OK
                 : (fprintf(stderr, "longmix model: %s\n", e.message), LM_EXIT_USAGE);
    }
    lm_model_table_free(&table);
    return rc;
}

/* ---- --check: every layer kind against its float64 reference (model_check.h) --------- */

static void print_check_unit(const char *unit, const lm_layer_check_unit *u)
{
    printf(", %s %.3g (bound %.3g)", unit, u->max_error, u->bound);
}

static void print_check_failure(const char *unit, const lm_layer_check_unit *u)
{
    const lm_layer_check_point *f = &u->failure;
    if (!u->ok)
        printf("  (%s: %s weights, batch %zu, ctx %lld, token %d: %.3g > %.3g)", unit,
               lm_weight_dtype_name(f->weights), f->batch, f->ctx, f->token, f->error, f->bound);
}

/* One line per case and path, then the summary; exit 0 all within their bounds, 1 one was
 * not, 2 bad usage or a case that could not run. */
static int run_checks(const model_options *o)
{
    lm_isa isas[LM_LIST_MAX], listed[LM_LIST_MAX];
    size_t count = 0, n;
    lm_error e;
    if (lm_parse_isa_list("--isa", o->isa != NULL ? o->isa : "all", listed, &n, &e) != LM_OK)
        return usage_error(e.message);
    for (size_t i = 0; i < n; i++) { /* each path once, in the order given */
        bool seen = false;
        for (size_t j = 0; j < count; j++)
            seen = seen || isas[j] == listed[i];
        if (!seen)
            isas[count++] = listed[i];
    }
    /* one thread: at these shapes OpenMP's start-up and waits would be most of the time
     * (seconds on a busy machine), and the kernels split work over independent ranges, so
     * the errors are those of any thread count */
    omp_set_num_threads(1);
    size_t passed = 0, failed = 0;
    double worst = 0.0, worst_bound = 0.0;
    const char *worst_case = "", *worst_unit = "", *worst_isa = "";
    for (size_t k = 0; k < count; k++)
        for (size_t i = 0; i < LM_LAYER_CHECK_COUNT; i++) {
            lm_layer_check r;
            if (lm_layer_check_run(i, lm_ops_for(isas[k]), &r, &e) != LM_OK) {
                fflush(stdout);
                fprintf(stderr, "longmix model: --check: %s\n", e.message);
                return LM_EXIT_USAGE;
            }
            const char *mlp = r.mlp_kind == LM_MLP_MOE ? "MoE MLP" : "dense MLP";
            bool ok = lm_layer_check_ok(&r);
            printf("%-10s %-20s mixer %.3g (bound %.3g)", lm_isa_name(r.isa), r.name,
                   r.mixer.max_error, r.mixer.bound);
            print_check_unit(mlp, &r.mlp);
            printf("  %s", ok ? "ok" : "FAILED");
            print_check_failure("mixer", &r.mixer);
            print_check_failure(mlp, &r.mlp);
            putchar('\n');
            passed += ok;
            failed += !ok;
            const lm_layer_check_unit *units[2] = {&r.mixer, &r.mlp};
            for (int u = 0; u < 2; u++)
                if (units[u]->max_error / units[u]->bound > worst / fmax(worst_bound, 1e-300)) {
                    worst = units[u]->max_error;
                    worst_bound = units[u]->bound;
                    worst_case = r.name;
                    worst_unit = u == 0 ? "mixer" : mlp;
                    worst_isa = lm_isa_name(r.isa);
                }
        }
    printf("longmix model --check: %zu layer checks on %zu path%s, %zu passed, %zu failed; "
           "closest to its bound: %s %s on %s, %.3g of %.3g\n", passed + failed, count,
           count == 1 ? "" : "s", passed, failed, worst_case, worst_unit, worst_isa, worst,
           worst_bound);
    return failed > 0 ? LM_EXIT_CHECK_FAILED : LM_EXIT_OK;
}

int lm_cmd_model(int argc, char **argv)
{
    model_options o;
    int rc = parse_args(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? LM_EXIT_OK : rc;
    if (o.check)
        return run_checks(&o);
    if (o.stream_curve) {
        lm_machine_meta meta;
        lm_machine_meta_fill(&meta);
        lm_omp_wait_settle(argc, argv);
        return lm_model_stream_curve_cli(lm_ops_active(), o.threads, o.reps,
                                         meta.cores > 0 ? meta.cores : 1,
                                         meta.llc_bytes_total > 0 ? meta.llc_bytes_total
                                                                  : (32u << 20));
    }
    static lm_model_spec specs[MODEL_MAX];
    size_t count;
    if ((rc = load_models(&o, specs, &count)) != 0)
        return rc;
    if (count == 0)
        return usage_error("no models: give --preset or --model");
    lm_weight_dtype w;
    lm_error e;
    if (lm_weight_dtype_parse(o.weights, &w, &e) != LM_OK)
        return usage_error(e.message);
    if (o.list)
        return list_models(specs, count, w);
    lm_machine_meta meta;
    lm_machine_meta_fill(&meta);
    grid g;
    if ((rc = build_grid(&o, &g, meta.cores > 0 ? meta.cores : 1)) != 0)
        return rc;
    uint64_t llc = meta.llc_bytes_total > 0 ? meta.llc_bytes_total : (32u << 20);
    double stream_bytes = g.ctx_count == 0 ? 0.0 : (double)(4 * llc > (64u << 20) ? 4 * llc : (64u << 20));
    if (o.dry_run) {
        char prompts[48] = "";
        if (g.prompt_count > 0)
            snprintf(prompts, sizeof prompts, " (and %zu prompts)", g.prompt_count);
        printf("plan: %zu models x %zu contexts%s x %zu batches x %zu thread counts, cache %s, "
               "weights %s, reps %d; units copied past 2 x LLC (%.0f MiB)\n\n", count,
               g.ctx_count, prompts, g.batch_count, g.thread_count, g.cache.name,
               lm_weight_dtype_name(g.weights), o.reps, (double)llc / 1048576.0);
    }
    if ((rc = check_memory(specs, count, &g, llc, stream_bytes, o.dry_run)) != 0 || o.dry_run)
        return rc;
    lm_omp_wait_settle(argc, argv); /* the spin count of a shared machine (omp_wait.h) */
    return run_grid(&o, specs, count, &g, &meta, llc);
}

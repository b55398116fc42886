/* longmix sweep: run bench-registry kernels over a grid of configurations into a tidy
 * results CSV (atomic writes, --resume, --shard, Ctrl-C safe). */
#include "registry.h"
#include "cli.h"
#include "busy_watch.h"
#include "omp_wait.h"
#include "opts.h"
#include "progress.h"
#include "results.h"
#include "roofline.h"
#include "topo.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static volatile sig_atomic_t interrupted = 0;

static void on_interrupt(int signal_number)
{
    (void)signal_number;
    interrupted = 1;
}

static void sweep_usage(FILE *out)
{
    fprintf(out,
        "usage: longmix sweep [--kernel K[,K...]|all] [--ctx LIST] [--chunk LIST] [--bits LIST]\n"
        "                     [--threads LIST] [--isa LIST] [--dtype LIST] [--reps N]\n"
        "                     [--out results/FILE.csv] [--resume [--force]] [--shard K/N]\n"
        "                     [--preset decode-ctx|prefill-ctx|chunk-size|kv-bits|smoke]\n"
        "                     [--heads H] [--kv-heads H] [--head-dim D] [--d-inner D]\n"
        "                     [--d-state N] [--batch B] [--disc zoh|euler[,...]] [--seed S]\n"
        "                     [--oversubscribe]\n"
        "                     [--no-roofline] [--interleave threads|all] [--list] [--dry-run]\n\n"
        "Runs every configuration (kernel x isa x threads x dtype x bits x chunk x ctx): one\n"
        "warm-up, then --reps timed repetitions (median, min, quartiles), the output checked\n"
        "against a float64 reference (a wrong output is a failed row). Rows go to a tidy CSV\n"
        "with the results columns (docs/benchmarks.md), rewritten atomically after every\n"
        "row; Ctrl-C keeps the rows done. Options a kernel does not use are ignored for it\n"
        "(written as 0). Each row's busy_cores and disturbed columns say whether other\n"
        "processes kept the CPUs its threads needed busy (/proc/stat; warned on stderr);\n"
        "runs with GOMP_SPINCOUNT=1000 unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set.\n"
        "LIST: 1,2,4 | 4k,16k | 256..16384 (doubling). Unset lists use each kernel's defaults.\n"
        "  --kernel     bench-registry names (--list shows them; default: all)\n"
        "  --isa        scalar, avx2, avx512, avx512vnni, avx512bf16, neon, all,\n"
        "               active (default: active)\n"
        "  --disc       the Mamba-1 discretization (mamba1_scan, mamba1_step): zoh, the exact\n"
        "               zero-order hold Bbar = (exp(delta A) - 1) / A B (default), and/or euler,\n"
        "               Bbar = delta B as in Mamba's own kernel and ggml (both keep\n"
        "               Abar = exp(delta A)); the CSV's disc column says which\n"
        "  --threads    default 1; auto = 1 and the core count; cores; above the core\n"
        "               count needs --oversubscribe\n"
        "  --reps N     timed repetitions (default 5)\n"
        "  --out FILE   default results/sweep.csv\n"
        "  --resume     keep FILE's rows and skip the configurations it holds with status ok;\n"
        "               failed rows are measured again (the new row takes their place),\n"
        "               duplicate rows dropped. Every cell is checked as merge checks it;\n"
        "               a file from another CPU model or git revision is refused\n"
        "  --force      with --resume: continue a file from another machine or build\n"
        "  --shard K/N  run configurations i with i %% N == K-1 (spread a sweep over machines;\n"
        "               join with longmix merge)\n"
        "  --no-roofline  skip the same-run roofline (roofline_frac written as 0)\n"
        "  --interleave threads|all  measure configurations together: all set up, then\n"
        "               their repetitions in turn (1, 2, 1, 2, ...), so a ratio between rows\n"
        "               compares the same minutes of a drifting machine. threads: the thread\n"
        "               counts of one configuration; all: every configuration of this run,\n"
        "               64 at a time (memory for all of their inputs at once)\n"
        "  --dry-run    print the configurations (a header naming the key's fields, then\n"
        "               one key a line), measure nothing\n");
}

enum { MAX_KERNELS = 64 };

typedef struct sweep_options {
    const char *kernel_text, *ctx_text, *chunk_text, *bits_text, *threads_text, *isa_text;
    const char *dtype_text, *out_path, *shard_text, *preset, *disc_text;
    long heads, kv_heads, head_dim, d_inner, d_state, batch;
    long seed;
    int reps;
    bool resume, force, oversubscribe, no_roofline, list, dry_run;
    const char *interleave; /* NULL, "threads" or "all" */
} sweep_options;

static int fail_usage(const char *message)
{
    fprintf(stderr, "longmix sweep: %s\n", message);
    return LM_EXIT_USAGE;
}

/* Options of --heads ... --seed: -1 means "the kernel's default". */
static int parse_options(int argc, char **argv, sweep_options *o)
{
    memset(o, 0, sizeof *o);
    o->heads = o->kv_heads = o->head_dim = o->d_inner = o->d_state = o->batch = o->seed = -1;
    o->reps = 5;
    o->out_path = "results/sweep.csv";
    o->isa_text = "active";
    o->threads_text = "1";
    struct {
        const char *name;
        const char **text;
    } texts[] = {{"--kernel", &o->kernel_text}, {"--ctx", &o->ctx_text},
                 {"--chunk", &o->chunk_text},   {"--bits", &o->bits_text},
                 {"--threads", &o->threads_text}, {"--isa", &o->isa_text},
                 {"--dtype", &o->dtype_text},   {"--out", &o->out_path},
                 {"--shard", &o->shard_text},   {"--preset", &o->preset},
                 {"--interleave", &o->interleave}, {"--disc", &o->disc_text}};
    long reps = 5;
    struct {
        const char *name;
        long *value;
        long min, max;
    } longs[] = {{"--heads", &o->heads, 1, LM_SIZE_VALUE_MAX},
                 {"--kv-heads", &o->kv_heads, 1, LM_SIZE_VALUE_MAX},
                 {"--head-dim", &o->head_dim, 1, LM_SIZE_VALUE_MAX},
                 {"--d-inner", &o->d_inner, 1, LM_SIZE_VALUE_MAX},
                 {"--d-state", &o->d_state, 1, LM_SIZE_VALUE_MAX},
                 {"--batch", &o->batch, 1, LM_SIZE_VALUE_MAX},
                 {"--seed", &o->seed, 0, LONG_MAX},
                 {"--reps", &reps, 1, 10000}};
    struct {
        const char *name;
        bool *flag;
    } flags[] = {{"--resume", &o->resume},           {"--force", &o->force},
                 {"--oversubscribe", &o->oversubscribe},
                 {"--no-roofline", &o->no_roofline}, {"--list", &o->list},
                 {"--dry-run", &o->dry_run}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool known = false;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            sweep_usage(stdout);
            return -1;
        }
        for (size_t k = 0; k < sizeof flags / sizeof flags[0] && !known; k++)
            if (strcmp(a, flags[k].name) == 0)
                *flags[k].flag = known = true;
        if (known)
            continue;
        if (i + 1 >= argc) {
            bool takes_value = false;
            for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++)
                takes_value |= strcmp(a, texts[k].name) == 0;
            for (size_t k = 0; k < sizeof longs / sizeof longs[0]; k++)
                takes_value |= strcmp(a, longs[k].name) == 0;
            if (takes_value)
                fprintf(stderr, "longmix sweep: %s needs a value\n", a);
            else
                fprintf(stderr, "longmix sweep: unknown option '%s' (longmix sweep --help)\n", a);
            return LM_EXIT_USAGE;
        }
        for (size_t k = 0; k < sizeof texts / sizeof texts[0] && !known; k++)
            if (strcmp(a, texts[k].name) == 0) {
                *texts[k].text = argv[++i];
                known = true;
            }
        for (size_t k = 0; k < sizeof longs / sizeof longs[0] && !known; k++)
            if (strcmp(a, longs[k].name) == 0) {
                lm_error err;
                if (lm_parse_integer(a, argv[++i], longs[k].min, longs[k].max, longs[k].value,
                                     &err) != LM_OK)
                    return fail_usage(err.message);
                known = true;
            }
        if (!known) {
            fprintf(stderr, "longmix sweep: unknown option '%s'\n", a);
            sweep_usage(stderr);
            return LM_EXIT_USAGE;
        }
    }
    o->reps = (int)reps;
    if (o->force && !o->resume)
        return fail_usage("--force goes with --resume (it continues a file from another "
                          "machine or build)");
    if (o->interleave != NULL && strcmp(o->interleave, "threads") != 0 &&
        strcmp(o->interleave, "all") != 0)
        return fail_usage("--interleave takes threads or all");
    return 0;
}

/* A preset fills the lists the user left unset. */
static int apply_preset(sweep_options *o, char kernels[][32], size_t *kernel_count)
{
    const char *role_a = NULL, *role_b = NULL, *role_c = NULL;
    unsigned needs = 0;
    if (o->preset == NULL)
        return 0;
    if (strcmp(o->preset, "decode-ctx") == 0) {
        role_a = "decode_attention", role_b = "decode_ssm";
        if (!o->ctx_text)
            o->ctx_text = "256..16384";
    } else if (strcmp(o->preset, "prefill-ctx") == 0) {
        role_a = "prefill_attention", role_b = "prefill_scan", role_c = "prefill_linear";
        if (!o->ctx_text)
            o->ctx_text = "256..4096";
    } else if (strcmp(o->preset, "chunk-size") == 0) {
        needs = LM_BENCH_USES_CHUNK;
        if (!o->chunk_text)
            o->chunk_text = "16..256";
        if (!o->ctx_text)
            o->ctx_text = "4096";
    } else if (strcmp(o->preset, "kv-bits") == 0) {
        /* every KV storage: float (32/16 bits) and quantized codes (8/4/2 bits) */
        role_a = "decode_attention", role_b = "decode_attention_quantized";
        if (!o->dtype_text)
            o->dtype_text = "f32,f16,bf16,int8,int4,kivi4,kivi2,kivi4g64,kivi2g64";
        if (!o->ctx_text)
            o->ctx_text = "4096";
    } else if (strcmp(o->preset, "smoke") == 0) {
        if (!o->ctx_text)
            o->ctx_text = "256";
    } else {
        fprintf(stderr, "longmix sweep: unknown --preset '%s' (decode-ctx, prefill-ctx, "
                        "chunk-size, kv-bits, smoke)\n", o->preset);
        return LM_EXIT_USAGE;
    }
    if (o->kernel_text != NULL)
        return 0;
    *kernel_count = 0;
    for (size_t i = 0, n = lm_bench_count(); i < n && *kernel_count < MAX_KERNELS; i++) {
        const lm_bench_case *c = lm_bench_at(i);
        bool pick = needs ? (c->uses & needs) != 0
                          : (role_a == NULL && role_b == NULL) ||
                                (c->role != NULL &&
                                 ((role_a && strcmp(c->role, role_a) == 0) ||
                                  (role_b && strcmp(c->role, role_b) == 0) ||
                                  (role_c && strcmp(c->role, role_c) == 0)));
        if (pick)
            snprintf(kernels[(*kernel_count)++], 32, "%s", c->name);
    }
    if (*kernel_count == 0) {
        fprintf(stderr, "longmix sweep: --preset %s matches no registered kernel yet (longmix "
                        "sweep --list)\n", o->preset);
        return LM_EXIT_USAGE;
    }
    return 0;
}

static void list_kernels(void)
{
    for (size_t i = 0, n = lm_bench_count(); i < n; i++) {
        const lm_bench_case *c = lm_bench_at(i);
        printf("%-22s %-27s dtypes %-22s %s\n", c->name, c->role ? c->role : "-", c->dtypes,
               c->summary);
    }
}

/* The grid, parsed. */
typedef struct sweep_grid {
    const lm_bench_case *kernels[MAX_KERNELS];
    size_t kernel_count;
    long ctx[LM_LIST_MAX], chunk[LM_LIST_MAX], bits[LM_LIST_MAX], threads[LM_LIST_MAX];
    size_t ctx_count, chunk_count, bits_count, thread_count;
    lm_isa isas[LM_LIST_MAX];
    size_t isa_count;
    char dtypes[LM_LIST_MAX][32];
    size_t dtype_count;
    char discs[LM_LIST_MAX][32];
    size_t disc_count;
} sweep_grid;

static int build_grid(sweep_options *o, sweep_grid *g, int cores)
{
    lm_error err;
    char names[MAX_KERNELS][32];
    size_t name_count = 0;
    memset(g, 0, sizeof *g);
    int rc = apply_preset(o, names, &name_count);
    if (rc != 0)
        return rc;
    if (o->kernel_text != NULL && strcmp(o->kernel_text, "all") != 0) {
        if (lm_parse_word_list("--kernel", o->kernel_text, names, &name_count, &err) != LM_OK)
            return fail_usage(err.message);
    } else if (o->preset == NULL || o->kernel_text != NULL) {
        name_count = 0;
        for (size_t i = 0, n = lm_bench_count(); i < n && name_count < MAX_KERNELS; i++)
            snprintf(names[name_count++], 32, "%s", lm_bench_at(i)->name);
    }
    for (size_t i = 0; i < name_count; i++) {
        const lm_bench_case *c = lm_bench_find(names[i]);
        if (c == NULL) {
            fprintf(stderr, "longmix sweep: unknown kernel '%s' (longmix sweep --list shows the "
                            "registered ones)\n", names[i]);
            return LM_EXIT_USAGE;
        }
        g->kernels[g->kernel_count++] = c;
    }
    if (g->kernel_count == 0)
        return fail_usage("no kernel selected (--kernel must not be empty)");
#define LIST(text, min, arr, cnt)                                                              \
    if ((text) != NULL &&                                                                      \
        lm_parse_size_list("--" #arr, (text), (min), g->arr, &g->cnt, &err) != LM_OK)         \
        return fail_usage(err.message);
    LIST(o->ctx_text, 1, ctx, ctx_count)
    LIST(o->chunk_text, 1, chunk, chunk_count)
    LIST(o->bits_text, 1, bits, bits_count)
#undef LIST
    for (size_t b = 0; b < g->bits_count; b++)
        if (g->bits[b] > 64)
            return fail_usage("--bits values must be in 1..64");
    if (lm_parse_thread_list("--threads", o->threads_text, cores, g->threads, &g->thread_count,
                             &err) != LM_OK)
        return fail_usage(err.message);
    if (lm_parse_isa_list("--isa", o->isa_text, g->isas, &g->isa_count, &err) != LM_OK)
        return fail_usage(err.message);
    for (size_t t = 0; t < g->thread_count; t++)
        if (g->threads[t] > cores && !o->oversubscribe) {
            fprintf(stderr, "longmix sweep: --threads %ld exceeds the %d cores of this machine "
                            "(pass --oversubscribe to measure it anyway)\n", g->threads[t], cores);
            return LM_EXIT_USAGE;
        }
    if (o->disc_text != NULL) {
        if (lm_parse_word_list("--disc", o->disc_text, g->discs, &g->disc_count, &err) != LM_OK)
            return fail_usage(err.message);
        for (size_t d = 0; d < g->disc_count; d++)
            if (strcmp(g->discs[d], "zoh") != 0 && strcmp(g->discs[d], "euler") != 0) {
                fprintf(stderr, "longmix sweep: --disc takes zoh and/or euler, got '%s'\n",
                        g->discs[d]);
                return LM_EXIT_USAGE;
            }
    }
    if (o->dtype_text != NULL) {
        if (lm_parse_word_list("--dtype", o->dtype_text, g->dtypes, &g->dtype_count, &err) != LM_OK)
            return fail_usage(err.message);
        for (size_t d = 0; d < g->dtype_count; d++) {
            bool any = false;
            for (size_t k = 0; k < g->kernel_count && !any; k++)
                any = lm_bench_supports_dtype(g->kernels[k], g->dtypes[d]);
            if (!any) {
                fprintf(stderr, "longmix sweep: no selected kernel supports --dtype %s\n",
                        g->dtypes[d]);
                return LM_EXIT_USAGE;
            }
        }
    }
    return 0;
}

/* Every configuration of the grid, in order, duplicates (after ignoring unused fields)
 * removed. */
typedef struct sweep_plan {
    lm_bench_config *configs;
    const lm_bench_case **cases;
    size_t count, capacity;
    lm_key_set keys; /* of every planned configuration */
} sweep_plan;

/* The configuration fields of a row (the key columns), from a case and its config. */
static void key_fields(const lm_bench_case *c, const lm_bench_config *k, lm_result_row *row)
{
    memset(row, 0, sizeof *row);
    row->kernel = c->name;
    row->isa = lm_isa_name(k->isa);
    row->dtype = k->dtype;
    row->threads = k->threads;
    row->bits = k->bits;
    row->n_ctx = k->n_ctx;
    row->chunk = k->chunk;
    row->heads = k->heads;
    row->kv_heads = k->kv_heads;
    row->head_dim = k->head_dim;
    row->d_inner = k->d_inner;
    row->d_state = k->d_state;
    row->batch = k->batch;
    row->disc = k->disc;
}

/* The configuration key of the row this configuration writes (csv.h's one key builder);
 * malloc'd, NULL when out of memory. */
static char *config_key(const lm_bench_case *c, const lm_bench_config *k)
{
    lm_result_row row;
    key_fields(c, k, &row);
    return lm_result_key(&row);
}

static int plan_add(sweep_plan *p, const lm_bench_case *c, const lm_bench_config *k)
{
    char *key = config_key(c, k);
    int added = key ? lm_key_set_add(&p->keys, key) : -1;
    free(key);
    if (added <= 0)
        return added; /* 0: the same configuration is already planned */
    if (p->count == p->capacity) {
        size_t capacity = p->capacity ? 2 * p->capacity : 64;
        lm_bench_config *configs = realloc(p->configs, capacity * sizeof *configs);
        if (configs == NULL)
            return -1;
        p->configs = configs;
        const lm_bench_case **cases = realloc(p->cases, capacity * sizeof *cases);
        if (cases == NULL)
            return -1;
        p->cases = cases;
        p->capacity = capacity;
    }
    p->configs[p->count] = *k;
    p->cases[p->count++] = c;
    return 0;
}

static void plan_free(sweep_plan *p)
{
    free(p->configs), free(p->cases);
    lm_key_set_free(&p->keys);
    memset(p, 0, sizeof *p);
}

/* Bits per stored value of a dtype name: its first number (f32 32, bf16 16, int4 4,
 * kivi2 2, kivi2g64 2), else `fallback`. */
static int dtype_bits(const char *dtype, int fallback)
{
    const size_t start = strcspn(dtype, "0123456789");
    return dtype[start] != '\0' ? atoi(dtype + start) : fallback;
}

/* k once per --disc value for a case that reads it (its default disc otherwise), once
 * with no disc for the others. */
static int plan_add_discs(sweep_plan *p, const lm_bench_case *c, const sweep_grid *g,
                          lm_bench_config *k)
{
    if (!(c->uses & LM_BENCH_USES_DISC)) {
        k->disc[0] = '\0';
        return plan_add(p, c, k);
    }
    for (size_t s = 0; s < g->disc_count; s++) {
        snprintf(k->disc, sizeof k->disc, "%.7s", g->discs[s]);
        if (plan_add(p, c, k) != 0)
            return -1;
    }
    return g->disc_count > 0 ? 0 : plan_add(p, c, k);
}

static int build_plan(const sweep_options *o, const sweep_grid *g, sweep_plan *p)
{
    memset(p, 0, sizeof *p);
    for (size_t ki = 0; ki < g->kernel_count; ki++) {
        const lm_bench_case *c = g->kernels[ki];
        lm_bench_config base;
        lm_bench_default_config(c, &base);
        if (o->seed >= 0)
            base.seed = (uint64_t)o->seed;
#define GEOMETRY(field, flag)                                                                  \
    if (!(c->uses & (flag)))                                                                   \
        base.field = 0;                                                                        \
    else if (o->field > 0)                                                                     \
        base.field = o->field;
        GEOMETRY(heads, LM_BENCH_USES_HEADS)
        GEOMETRY(kv_heads, LM_BENCH_USES_HEADS)
        GEOMETRY(head_dim, LM_BENCH_USES_HEADS)
        GEOMETRY(d_inner, LM_BENCH_USES_SSM)
        GEOMETRY(d_state, LM_BENCH_USES_SSM)
        GEOMETRY(batch, LM_BENCH_USES_BATCH)
#undef GEOMETRY
        if (!(c->uses & LM_BENCH_USES_BATCH))
            base.batch = 1;
        size_t nd = g->dtype_count ? g->dtype_count : 1;
        size_t nb = (c->uses & LM_BENCH_USES_BITS) && g->bits_count ? g->bits_count : 1;
        size_t nc = (c->uses & LM_BENCH_USES_CHUNK) && g->chunk_count ? g->chunk_count : 1;
        size_t nx = (c->uses & LM_BENCH_USES_CTX) && g->ctx_count ? g->ctx_count : 1;
        for (size_t ii = 0; ii < g->isa_count; ii++)
            for (size_t ti = 0; ti < g->thread_count; ti++)
                for (size_t di = 0; di < nd; di++) {
                    lm_bench_config k = base;
                    k.isa = g->isas[ii];
                    k.threads = (int)g->threads[ti];
                    if (g->dtype_count) {
                        if (!lm_bench_supports_dtype(c, g->dtypes[di]))
                            continue;
                        snprintf(k.dtype, sizeof k.dtype, "%.15s", g->dtypes[di]);
                    }
                    for (size_t bi = 0; bi < nb; bi++)
                        for (size_t ci = 0; ci < nc; ci++)
                            for (size_t xi = 0; xi < nx; xi++) {
                                if ((c->uses & LM_BENCH_USES_BITS) && g->bits_count)
                                    k.bits = (int)g->bits[bi];
                                if ((c->uses & LM_BENCH_USES_CHUNK) && g->chunk_count)
                                    k.chunk = g->chunk[ci];
                                if ((c->uses & LM_BENCH_USES_CTX) && g->ctx_count)
                                    k.n_ctx = g->ctx[xi];
                                if (!(c->uses & LM_BENCH_USES_BITS))
                                    k.bits = dtype_bits(k.dtype, base.bits);
                                if (!(c->uses & LM_BENCH_USES_CHUNK))
                                    k.chunk = 0;
                                if (plan_add_discs(p, c, g, &k) != 0) {
                                    plan_free(p);
                                    return fail_usage("out of memory planning the sweep");
                                }
                            }
                }
    }
    return 0;
}

/* Same-run roofline limits, measured once per (isa, threads). */
typedef struct limits_cache {
    lm_roofline_limits items[LM_LIST_MAX * 4];
    size_t count;
} limits_cache;

static const lm_roofline_limits *limits_for(limits_cache *cache, lm_isa isa, int threads)
{
    for (size_t i = 0; i < cache->count; i++)
        if (cache->items[i].isa == isa && cache->items[i].threads == threads)
            return &cache->items[i];
    if (cache->count == sizeof cache->items / sizeof cache->items[0])
        return NULL;
    lm_roofline_limits *l = &cache->items[cache->count];
    if (lm_roofline_quick(isa, threads, l, NULL) != LM_OK)
        return NULL;
    cache->count++;
    return l;
}

static void fill_row(const lm_bench_case *c, const lm_bench_config *k, const lm_bench_result *r,
                     const lm_roofline_limits *limits, lm_result_row *row)
{
    key_fields(c, k, row);
    row->reps = r->reps;
    row->time = r->time;
    row->rep_times = r->rep_times;
    row->rep_cpu_times = r->rep_cpu_times;
    row->rep_count = (size_t)r->rep_times_count;
    row->flops = r->flops;
    row->bytes = r->bytes;
    row->err_max = r->err_max;
    row->checksum = r->checksum;
    double t = r->time.median;
    row->gflops = t > 0.0 ? r->flops / t * 1e-9 : 0.0;
    row->gbps = t > 0.0 ? r->bytes / t * 1e-9 : 0.0;
    if (limits != NULL) {
        double attainable = lm_roofline_attainable_dtype(limits, k->dtype, r->flops, r->bytes);
        row->roofline_frac = attainable > 0.0 ? row->gflops / attainable : 0.0;
    }
    row->status = r->status == LM_OK ? "ok" : r->status == LM_ERR_NUMERIC ? "wrong" : "error";
    row->note = r->message;
}

/* Where measured rows go, and the counts so far. */
typedef struct sweep_out {
    lm_csv *csv;
    const lm_machine_meta *meta;
    const char *path;
    lm_progress *progress;
    const lm_key_set *failed_before; /* keys of the resumed file's failed rows */
    size_t failed, done;
    lm_busy_watch *watch; /* marks each row's busy_cores and disturbed */
    double since;         /* when the current group's measurement began (lm_now) */
} sweep_out;

/* The row of one measurement appended and the CSV rewritten atomically; a failed
 * measurement is reported on stderr. LM_EXIT_OK, or LM_EXIT_USAGE when the file cannot be
 * written (said). */
static int record_row(sweep_out *out, const lm_bench_case *c, const lm_bench_config *k,
                      const lm_bench_result *result, const lm_roofline_limits *limits)
{
    lm_result_row row;
    fill_row(c, k, result, limits, &row);
    lm_busy_watch_row(out->watch, out->since, &row);
    if (result->status != LM_OK) {
        out->failed++;
        lm_progress_finish(out->progress);
        fprintf(stderr, "longmix sweep: %s %s t%d %s n=%ld: %s: %s\n", c->name,
                lm_isa_name(k->isa), k->threads, k->dtype, k->n_ctx, row.status,
                result->message);
    }
    lm_error err;
    if (lm_results_put(out->csv, out->failed_before, out->meta, &row, &err) != LM_OK ||
        lm_csv_write_atomic(out->csv, out->path, &err) != LM_OK) {
        fprintf(stderr, "longmix sweep: %s\n", err.message);
        return LM_EXIT_USAGE;
    }
    out->done++;
    return LM_EXIT_OK;
}

/* The failed result of a configuration whose set did not get past setup: the reason for
 * the member that failed (`own`), "not measured" with it for the others. */
static void setup_failed_result(const lm_bench_case *c, const lm_bench_config *k,
                                lm_status status, bool own, const char *reason,
                                lm_bench_result *result)
{
    memset(result, 0, sizeof *result);
    result->status = status;
    result->err_max = -1.0;
    snprintf(result->message, sizeof result->message, "%s%.400s",
             own ? "" : "not measured: the setup of another member of its set failed: ", reason);
    c->cost(k, &result->flops, &result->bytes);
}

/* True when a and b are the same configuration at (possibly) different thread counts. */
static bool same_but_threads(const lm_bench_config *a, const lm_bench_config *b)
{
    return a->isa == b->isa && strcmp(a->dtype, b->dtype) == 0 && a->bits == b->bits &&
           a->n_ctx == b->n_ctx && a->chunk == b->chunk && a->heads == b->heads &&
           a->kv_heads == b->kv_heads && a->head_dim == b->head_dim &&
           a->d_inner == b->d_inner && a->d_state == b->d_state && a->batch == b->batch &&
           a->seed == b->seed && strcmp(a->disc, b->disc) == 0;
}

/* The plan indices measured together with todo[j]: itself, and the later entries that
 * --interleave joins to it (marked SIZE_MAX in todo, so the loop skips them): "threads",
 * the same case and configuration at other thread counts; "all", any. group {LM_LIST_MAX};
 * returns the count. */
static size_t take_group(const sweep_plan *plan, size_t *todo, size_t todo_count, size_t j,
                         const char *interleave, size_t *group)
{
    size_t count = 0;
    group[count++] = todo[j];
    const bool all = interleave != NULL && strcmp(interleave, "all") == 0;
    for (size_t i = j + 1; interleave != NULL && i < todo_count && count < LM_LIST_MAX; i++)
        if (todo[i] != SIZE_MAX &&
            (all || (plan->cases[todo[i]] == plan->cases[todo[j]] &&
                     same_but_threads(&plan->configs[todo[i]], &plan->configs[todo[j]])))) {
            group[count++] = todo[i];
            todo[i] = SIZE_MAX;
        }
    return count;
}

/* The table the run adds to: empty, or with --resume the file's rows, checked and
 * de-duplicated (lm_results_resume), with the keys of its ok and failed rows. */
static int open_results(const sweep_options *o, const lm_machine_meta *meta, lm_csv *csv,
                        lm_key_set *done, lm_key_set *failed)
{
    lm_error err;
    struct stat st;
    const bool fresh = !o->resume || (stat(o->out_path, &st) != 0 && errno == ENOENT);
    if (fresh)
        return lm_csv_init_results(csv, &err) == LM_OK ? 0 : fail_usage(err.message);
    lm_resume_counts counts;
    if (lm_results_read(csv, o->out_path, &err) != LM_OK)
        return fail_usage(err.message);
    if (lm_results_resume(csv, o->out_path, meta, o->force, done, failed, &counts, &err) !=
        LM_OK) {
        lm_csv_free(csv);
        lm_key_set_free(done), lm_key_set_free(failed);
        return fail_usage(err.message);
    }
    if (counts.duplicates > 0 || counts.failed > 0)
        fprintf(stderr, "longmix sweep: %s: %zu duplicate rows dropped, %zu failed rows to "
                        "measure again\n", o->out_path, counts.duplicates, counts.failed);
    return 0;
}

/* The plan indices of this shard not already done, into todo (malloc'd). */
static int select_todo(const sweep_plan *plan, const lm_key_set *done, int shard_k,
                       int shard_n, size_t **todo, size_t *todo_count, size_t *skipped)
{
    *todo = malloc((plan->count ? plan->count : 1) * sizeof **todo);
    *todo_count = *skipped = 0;
    if (*todo == NULL)
        return -1;
    for (size_t i = 0; i < plan->count; i++) {
        if (!lm_shard_selects(i, shard_k, shard_n))
            continue;
        char *key = config_key(plan->cases[i], &plan->configs[i]);
        if (key == NULL)
            return -1;
        if (lm_key_set_has(done, key))
            (*skipped)++;
        else
            (*todo)[(*todo_count)++] = i;
        free(key);
    }
    return 0;
}

static void print_dry_run(const sweep_plan *plan, const size_t *todo, size_t todo_count,
                          size_t skipped, const char *out_path)
{
    /* the header names the key's fields ('|' between them, as the keys are printed) */
    for (size_t k = 0; k < LM_RESULTS_KEY_COLUMNS; k++)
        printf("%s%s", lm_results_key_columns[k], k + 1 < LM_RESULTS_KEY_COLUMNS ? "|" : "\n");
    for (size_t j = 0; j < todo_count; j++) {
        char *key = config_key(plan->cases[todo[j]], &plan->configs[todo[j]]);
        printf("%s\n", key ? key : "(out of memory)");
        free(key);
    }
    printf("%zu configurations (%zu already in %s)\n", todo_count, skipped, out_path);
}

/* Measures todo[0..todo_count) in groups, recording each row; the exit code so far. */
static int measure_all(const sweep_options *o, sweep_plan *plan, size_t *todo,
                       size_t todo_count, sweep_out *out)
{
    limits_cache *limits = calloc(1, sizeof *limits);
    int exit_code = LM_EXIT_OK;
    size_t group[LM_LIST_MAX];
    const lm_bench_case *cases[LM_LIST_MAX];
    lm_bench_config configs[LM_LIST_MAX];
    lm_bench_result results[LM_LIST_MAX];
    lm_error err;
    for (size_t j = 0; j < todo_count && !interrupted && exit_code == LM_EXIT_OK; j++) {
        if (todo[j] == SIZE_MAX)
            continue; /* measured with an earlier group */
        const lm_bench_case *c = plan->cases[todo[j]];
        size_t count = take_group(plan, todo, todo_count, j, o->interleave, group);
        char label[160];
        const lm_bench_config *k = &plan->configs[group[0]];
        if (count > 1)
            snprintf(label, sizeof label, "%s %s t%d %s n=%ld and %zu more, interleaved", c->name,
                     lm_isa_name(k->isa), k->threads, k->dtype, k->n_ctx, count - 1);
        else
            snprintf(label, sizeof label, "%s %s t%d %s n=%ld", c->name, lm_isa_name(k->isa),
                     k->threads, k->dtype, k->n_ctx);
        lm_progress_update(out->progress, out->done, label);
        for (size_t g = 0; g < count; g++) {
            cases[g] = plan->cases[group[g]];
            configs[g] = plan->configs[group[g]];
            if (!o->no_roofline && limits != NULL) /* measured before the group's runs */
                limits_for(limits, configs[g].isa, configs[g].threads);
        }
        size_t bad = 0;
        out->since = lm_now();
        lm_status s = lm_bench_measure_set(cases, configs, count, o->reps,
                                           (volatile const int *)&interrupted, results, &bad,
                                           &err);
        if (interrupted)
            break;
        for (size_t g = 0; g < count && exit_code == LM_EXIT_OK; g++) {
            if (s != LM_OK) /* a setup failed: failed rows with the reason */
                setup_failed_result(cases[g], &configs[g], s, g == bad, err.message,
                                    &results[g]);
            const lm_roofline_limits *lim =
                o->no_roofline || limits == NULL ? NULL
                                                 : limits_for(limits, configs[g].isa,
                                                              configs[g].threads);
            exit_code = record_row(out, cases[g], &configs[g], &results[g], lim);
        }
    }
    free(limits);
    return exit_code;
}

static int run_sweep(sweep_options *o)
{
    lm_machine_meta meta;
    lm_machine_meta_fill(&meta);
    int cores = meta.cores > 0 ? meta.cores : 1;
    sweep_grid grid;
    int rc = build_grid(o, &grid, cores);
    if (rc != 0)
        return rc;
    int shard_k = 1, shard_n = 1;
    lm_error err;
    if (o->shard_text != NULL && lm_parse_shard(o->shard_text, &shard_k, &shard_n, &err) != LM_OK)
        return fail_usage(err.message);
    sweep_plan plan;
    if ((rc = build_plan(o, &grid, &plan)) != 0)
        return rc;
    lm_csv csv;
    lm_key_set done = {0}, failed_before = {0};
    if ((rc = open_results(o, &meta, &csv, &done, &failed_before)) != 0) {
        plan_free(&plan);
        return rc;
    }
    size_t *todo = NULL, todo_count = 0, skipped = 0;
    if (select_todo(&plan, &done, shard_k, shard_n, &todo, &todo_count, &skipped) != 0)
        rc = fail_usage("out of memory planning the sweep");
    else if (o->dry_run)
        print_dry_run(&plan, todo, todo_count, skipped, o->out_path);
    else if (lm_csv_write_atomic(&csv, o->out_path, &err) != LM_OK)
        rc = fail_usage(err.message);
    if (rc != 0 || o->dry_run) {
        free(todo), plan_free(&plan), lm_csv_free(&csv);
        lm_key_set_free(&done), lm_key_set_free(&failed_before);
        return rc;
    }
    struct sigaction action, previous;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_interrupt;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous);
    lm_busy_watch watch;
    lm_busy_watch_start(&watch, "sweep");
    lm_progress progress;
    lm_progress_start(&progress, todo_count);
    sweep_out out = {&csv, &meta, o->out_path, &progress, &failed_before, 0, 0, &watch, 0.0};
    int exit_code = measure_all(o, &plan, todo, todo_count, &out);
    lm_progress_finish(&progress);
    lm_busy_watch_finish(&watch, o->out_path);
    sigaction(SIGINT, &previous, NULL);
    if (interrupted) {
        fprintf(stderr, "longmix sweep: interrupted; %s holds %zu rows (%zu new); rerun with "
                        "--resume to finish\n", o->out_path, csv.rows, out.done);
        exit_code = 130;
    } else if (exit_code == LM_EXIT_OK) {
        fprintf(stderr, "longmix sweep: %zu configurations measured, %zu skipped (present), %zu "
                        "failed -> %s\n", out.done, skipped, out.failed, o->out_path);
        if (out.failed)
            exit_code = LM_EXIT_CHECK_FAILED;
    }
    free(todo), plan_free(&plan), lm_csv_free(&csv);
    lm_key_set_free(&done), lm_key_set_free(&failed_before);
    return exit_code;
}

int lm_cmd_sweep(int argc, char **argv)
{
    sweep_options o;
    int rc = parse_options(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? LM_EXIT_OK : rc;
    if (o.list) {
        list_kernels();
        return LM_EXIT_OK;
    }
    if (!o.dry_run)
        lm_omp_wait_settle(argc, argv);
    return run_sweep(&o);
}

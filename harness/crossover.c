/* longmix crossover: at what context length does attention cost more than an SSM?
 * Measured per thread count with the bench registry's cases (roles decode_attention,
 * decode_ssm, prefill_attention, prefill_scan, prefill_linear), beside the memory
 * crossover (kernels/arith/memory.c) and the FLOP crossover (the cases' flop counts). */
#include "crossover.h"
#include "crossover_table.h"

#include "bench.h"
#include "busy_watch.h"
#include "cli.h"
#include "csv.h"
#include "omp_wait.h"
#include "opts.h"
#include "progress.h"
#include "results.h"
#include "roofline.h"
#include "topo.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

lm_status lm_crossover_find(const double *n, const double *a, const double *b, size_t count,
                            lm_crossover_point *out, lm_error *err)
{
    memset(out, 0, sizeof *out);
    if (count < 1)
        return lm_fail(err, LM_ERR_ARG, "crossover needs at least one measurement");
    for (size_t i = 0; i < count; i++)
        if (!(n[i] > 0.0 && a[i] > 0.0 && b[i] > 0.0))
            return lm_fail(err, LM_ERR_ARG, "crossover needs positive n and times (index %zu)", i);
    if (a[0] >= b[0]) {
        out->where = -1;
        out->n_star = n[0];
        return LM_OK;
    }
    for (size_t i = 0; i + 1 < count; i++) {
        if (a[i + 1] < b[i + 1])
            continue;
        double r0 = log(a[i] / b[i]), r1 = log(a[i + 1] / b[i + 1]); /* r0 < 0 <= r1 */
        double x0 = log(n[i]), x1 = log(n[i + 1]);
        out->where = 0;
        out->lo = i;
        out->hi = i + 1;
        out->n_star = exp(x0 + (0.0 - r0) / (r1 - r0) * (x1 - x0));
        return LM_OK;
    }
    out->where = 1;
    out->n_star = n[count - 1];
    out->lo = out->hi = count - 1;
    return LM_OK;
}

/* ---- CLI ------------------------------------------------------------------------- */

static void crossover_usage(FILE *out)
{
    fprintf(out,
        "usage: longmix crossover [--threads LIST] [--isa LIST] [--ctx LIST] [--prefill-ctx LIST]\n"
        "                         [--dtype LIST] [--reps N] [--out results/crossover.csv]\n"
        "                         [--summary results/crossover_summary.csv] [--no-decode]\n"
        "                         [--no-prefill] [--no-roofline] [--oversubscribe]\n"
        "                         [--resume [--force]] [--shard K/N]\n"
        "                         [geometry options]\n\n"
        "Measures, per thread count, one decode token of attention over n cached tokens (per KV\n"
        "dtype) against one SSM step (Mamba-1, N = d_state; Mamba-2 SSD, N = d_state_m2), and\n"
        "the prefill of n tokens by causal attention against the Mamba-1 selective scan, the\n"
        "chunked Mamba-2 SSD and chunked linear attention, all per layer. Prints Markdown: per\n"
        "comparison the measured crossover n* (log-log interpolation between the grid points\n"
        "around it, printed too) beside the memory crossover (the KV cache in that row's dtype\n"
        "against the recurrent state, kernels/arith) and the FLOP crossover (the kernels' own\n"
        "flop counts), and one plain sentence per result. A result with measurements behind it\n"
        "that were taken on a busy machine (the CSV's disturbed column) or were unsteady\n"
        "((p75 - min) / median > 20 %%) is marked not trusted. An existing --out file is\n"
        "replaced (said on stderr) unless --resume. Whole-model times are layers x per-layer;\n"
        "the crossover n* does not depend on the layer count.\n"
        "  --ctx LIST          decode grid (default 64..16384)\n"
        "  --prefill-ctx LIST  prefill grid (default 256..4096)\n"
        "  --threads LIST      default auto: 1 and the core count; above the core count\n"
        "                      needs --oversubscribe\n"
        "  --isa LIST          default: active\n"
        "  --dtype LIST        KV storage for decode (default f32,f16,bf16)\n"
        "  --reps N            timed repetitions (default 3)\n"
        "  --resume            keep the --out file's rows and measure only the configurations\n"
        "                      it lacks with status ok (checked as sweep --resume checks them);\n"
        "                      the tables and crossovers use its rows and the new ones alike, so\n"
        "                      `crossover --resume --out MERGED.csv` on the merged shards\n"
        "                      measures nothing and prints the crossovers\n"
        "  --force             with --resume: continue a file from another machine or build\n"
        "  --shard K/N         measure configurations i with i %% N == K-1 (in the order of a\n"
        "                      whole run) into --out; prints no crossovers and leaves --summary\n"
        "                      alone. Join the shards with longmix merge, then run the same\n"
        "                      crossover with --resume --out on the merged file\n"
        "geometry (defaults: the M8 contract):\n"
        "  --d-model 4096 --layers 32 --heads 32 --kv-heads 8 --head-dim 128\n"
        "  --d-inner 8192 --d-state 16 --d-state-m2 128 --conv 4 --bytes-per-value 2\n"
        "  (--bytes-per-value: of the recurrent state; the KV cache's are its dtype's)\n"
        "  (--heads defaults to d_model / head_dim: the FLOP count 4 n d_model of the M8\n"
        "  scenario is the attention case's 4 n heads head_dim)\n");
}

typedef struct geometry {
    long d_model, layers, heads, kv_heads, head_dim, d_inner, d_state, d_state_m2, conv, bpv;
} geometry;

typedef struct crossover_options {
    const char *threads_text, *isa_text, *ctx_text, *prefill_text, *dtype_text;
    const char *out_path, *summary_path, *shard_text;
    int reps;
    bool no_decode, no_prefill, no_roofline, oversubscribe, resume, force;
    geometry g;
} crossover_options;

static int usage_error(const char *message)
{
    fprintf(stderr, "longmix crossover: %s\n", message);
    return LM_EXIT_USAGE;
}

static int parse(int argc, char **argv, crossover_options *o)
{
    memset(o, 0, sizeof *o);
    o->isa_text = "active";
    o->ctx_text = "64..16384";
    o->prefill_text = "256..4096";
    o->dtype_text = "f32,f16,bf16";
    o->out_path = "results/crossover.csv";
    o->summary_path = "results/crossover_summary.csv";
    o->reps = 3;
    o->g = (geometry){.d_model = 4096, .layers = 32, .heads = 32, .kv_heads = 8, .head_dim = 128,
                      .d_inner = 8192, .d_state = 16, .d_state_m2 = 128, .conv = 4, .bpv = 2};
    struct {
        const char *name;
        long *value;
    } longs[] = {{"--d-model", &o->g.d_model},   {"--layers", &o->g.layers},
                 {"--heads", &o->g.heads},       {"--kv-heads", &o->g.kv_heads},
                 {"--head-dim", &o->g.head_dim}, {"--d-inner", &o->g.d_inner},
                 {"--d-state", &o->g.d_state},   {"--d-state-m2", &o->g.d_state_m2},
                 {"--conv", &o->g.conv},         {"--bytes-per-value", &o->g.bpv}};
    struct {
        const char *name;
        const char **text;
    } texts[] = {{"--threads", &o->threads_text}, {"--isa", &o->isa_text},
                 {"--ctx", &o->ctx_text},         {"--prefill-ctx", &o->prefill_text},
                 {"--dtype", &o->dtype_text},     {"--out", &o->out_path},
                 {"--summary", &o->summary_path}, {"--shard", &o->shard_text}};
    bool heads_given = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool known = false;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            crossover_usage(stdout);
            return -1;
        }
        if (strcmp(a, "--no-decode") == 0)
            o->no_decode = known = true;
        else if (strcmp(a, "--no-prefill") == 0)
            o->no_prefill = known = true;
        else if (strcmp(a, "--no-roofline") == 0)
            o->no_roofline = known = true;
        else if (strcmp(a, "--oversubscribe") == 0)
            o->oversubscribe = known = true;
        else if (strcmp(a, "--resume") == 0)
            o->resume = known = true;
        else if (strcmp(a, "--force") == 0)
            o->force = known = true;
        if (known)
            continue;
        if (i + 1 >= argc) {
            bool takes_value = strcmp(a, "--reps") == 0;
            for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++)
                takes_value |= strcmp(a, texts[k].name) == 0;
            for (size_t k = 0; k < sizeof longs / sizeof longs[0]; k++)
                takes_value |= strcmp(a, longs[k].name) == 0;
            if (takes_value)
                fprintf(stderr, "longmix crossover: %s needs a value\n", a);
            else
                fprintf(stderr, "longmix crossover: unknown option '%s' (longmix crossover "
                                "--help)\n", a);
            return LM_EXIT_USAGE;
        }
        for (size_t k = 0; k < sizeof texts / sizeof texts[0] && !known; k++)
            if (strcmp(a, texts[k].name) == 0)
                *texts[k].text = argv[++i], known = true;
        for (size_t k = 0; k < sizeof longs / sizeof longs[0] && !known; k++)
            if (strcmp(a, longs[k].name) == 0) {
                char *end;
                long v = strtol(argv[++i], &end, 10);
                if (*end != '\0' || v < 1) {
                    fprintf(stderr, "longmix crossover: %s must be a positive integer, got '%s'\n",
                            a, argv[i]);
                    return LM_EXIT_USAGE;
                }
                *longs[k].value = v;
                heads_given |= longs[k].value == &o->g.heads;
                known = true;
            }
        if (!known && strcmp(a, "--reps") == 0) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end != '\0' || v < 1 || v > 1000)
                return usage_error("--reps must be an integer in 1..1000");
            o->reps = (int)v;
            known = true;
        }
        if (!known) {
            fprintf(stderr, "longmix crossover: unknown option '%s'\n", a);
            crossover_usage(stderr);
            return LM_EXIT_USAGE;
        }
    }
    if (!heads_given) /* the query heads that make up d_model */
        o->g.heads = o->g.d_model / o->g.head_dim > 0 ? o->g.d_model / o->g.head_dim : 1;
    if (o->g.heads % o->g.kv_heads != 0)
        return usage_error("--heads must be a multiple of --kv-heads");
    if (o->force && !o->resume)
        return usage_error("--force goes with --resume (it continues a file from another "
                           "machine or build)");
    return 0;
}

/* Everything one run measures, for the tables and the summary CSV. */
typedef struct run_context {
    const crossover_options *o;
    const lm_machine_meta *meta;
    lm_csv *rows;
    lm_csv *summary;
    lm_progress progress;
    lm_busy_watch watch;
    bool watching;        /* the watch started (at the first measurement) */
    size_t done;
    lm_roofline_limits limits;
    bool have_limits;
    int failures;
    size_t index;         /* configurations enumerated so far (the --shard order) */
    int shard_k, shard_n;
    lm_key_set kept, failed; /* --resume: keys of the file's ok rows, of its failed rows */
    size_t measured, reused;
} run_context;

typedef lm_crossover_measured point;
typedef lm_crossover_comparison comparison;

/* The point of an ok row of the table (a row --resume kept). */
static point point_of_row(const lm_csv *csv, size_t r)
{
    const char *const *cells = (const char *const *)csv->cells[r];
    double median = strtod(cells[lm_csv_column(csv, "median_s")], NULL);
    double min = strtod(cells[lm_csv_column(csv, "min_s")], NULL);
    double p75 = strtod(cells[lm_csv_column(csv, "p75_s")], NULL);
    return (point){median, strcmp(cells[lm_csv_column(csv, "disturbed")], "1") == 0,
                   lm_unsteady(min, median, p75)};
}

/* The row of the table whose key is `key`, or -1. */
static long find_row(const lm_csv *csv, const char *key)
{
    for (size_t r = 0; r < csv->rows; r++) {
        char *other = lm_csv_row_key(csv, r);
        bool same = other != NULL && strcmp(other, key) == 0;
        free(other);
        if (same)
            return (long)r;
    }
    return -1;
}

static point measure_now(run_context *rc, const lm_bench_case *c, const lm_bench_config *k);

/* One configuration of the run: from the --resume file when it holds an ok row of it, not
 * measured (a zero point) when another --shard has it, else measured and appended. */
static point measure(run_context *rc, const lm_bench_case *c, const lm_bench_config *k)
{
    const size_t index = rc->index++;
    lm_result_row id = {.kernel = c->name, .isa = lm_isa_name(k->isa), .dtype = k->dtype,
                        .threads = k->threads, .bits = k->bits, .n_ctx = k->n_ctx,
                        .chunk = k->chunk, .heads = k->heads, .kv_heads = k->kv_heads,
                        .head_dim = k->head_dim, .d_inner = k->d_inner, .d_state = k->d_state,
                        .batch = k->batch, .disc = k->disc[0] ? k->disc : NULL};
    char *key = lm_result_key(&id);
    long kept = key != NULL && lm_key_set_has(&rc->kept, key) ? find_row(rc->rows, key) : -1;
    free(key);
    if (kept >= 0) {
        rc->reused++;
        rc->done++;
        return point_of_row(rc->rows, (size_t)kept);
    }
    if (!lm_shard_selects(index, rc->shard_k, rc->shard_n))
        return (point){0};
    if (!rc->watching) {
        lm_progress_finish(&rc->progress);
        lm_busy_watch_start(&rc->watch, "crossover");
        rc->watching = true;
    }
    rc->measured++;
    return measure_now(rc, c, k);
}

/* Measures one configuration, puts its row in the table (in the place of a failed row of
 * the same key) and rewrites --out. */
static point measure_now(run_context *rc, const lm_bench_case *c, const lm_bench_config *k)
{
    lm_bench_result r;
    lm_error err;
    char label[128];
    snprintf(label, sizeof label, "%s %s t%d n=%ld", c->name, k->dtype, k->threads, k->n_ctx);
    lm_progress_update(&rc->progress, rc->done++, label);
    double since = lm_now();
    lm_status s = lm_bench_measure(c, k, rc->o->reps, NULL, &r, &err);
    if (s != LM_OK) {
        memset(&r, 0, sizeof r);
        r.status = s;
        r.err_max = -1.0;
        snprintf(r.message, sizeof r.message, "%s", err.message);
    }
    lm_result_row row = {.kernel = c->name, .isa = lm_isa_name(k->isa), .dtype = k->dtype,
                         .threads = k->threads, .bits = k->bits, .reps = r.reps,
                         .n_ctx = k->n_ctx, .chunk = k->chunk, .heads = k->heads,
                         .kv_heads = k->kv_heads, .head_dim = k->head_dim,
                         .d_inner = k->d_inner, .d_state = k->d_state, .batch = k->batch,
                         .disc = k->disc[0] ? k->disc : NULL, .time = r.time,
                         .rep_times = r.rep_times,
                         .rep_cpu_times = r.rep_cpu_times,
                         .rep_count = (size_t)r.rep_times_count, .checksum = r.checksum,
                         .flops = r.flops,
                         .bytes = r.bytes, .err_max = r.err_max,
                         .note = r.status == LM_OK ? "crossover" : r.message};
    double t = r.time.median;
    row.gflops = t > 0.0 ? r.flops / t * 1e-9 : 0.0;
    row.gbps = t > 0.0 ? r.bytes / t * 1e-9 : 0.0;
    if (rc->have_limits) {
        double attainable = lm_roofline_attainable(&rc->limits, r.flops, r.bytes);
        row.roofline_frac = attainable > 0.0 ? row.gflops / attainable : 0.0;
    }
    row.status = r.status == LM_OK ? "ok" : r.status == LM_ERR_NUMERIC ? "wrong" : "error";
    lm_busy_watch_row(&rc->watch, since, &row);
    if (lm_results_put(rc->rows, &rc->failed, rc->meta, &row, &err) != LM_OK ||
        lm_csv_write_atomic(rc->rows, rc->o->out_path, &err) != LM_OK) {
        lm_progress_finish(&rc->progress);
        fprintf(stderr, "longmix crossover: %s\n", err.message);
        rc->failures++;
    }
    if (r.status != LM_OK) {
        lm_progress_finish(&rc->progress);
        fprintf(stderr, "longmix crossover: %s: %s\n", label, r.message);
        rc->failures++;
        return (point){0};
    }
    return (point){t, row.disturbed, lm_unsteady(r.time.min, r.time.median, r.time.p75)};
}

static void base_config(const lm_bench_case *c, lm_isa isa, int threads, const geometry *g,
                        lm_bench_config *k)
{
    lm_bench_default_config(c, k);
    k->isa = isa;
    k->threads = threads;
    if (c->uses & LM_BENCH_USES_HEADS) {
        k->heads = g->heads;
        k->kv_heads = g->kv_heads;
        k->head_dim = g->head_dim;
    }
    if (c->uses & LM_BENCH_USES_SSM) {
        k->d_inner = g->d_inner;
        k->d_state = g->d_state;
    }
    k->batch = 1;
}

/* First integer n in [1, 2^40] where the flops of a(n) reach those of b(n) (bisection on the
 * cases' own cost functions); 0 when never. */
static double flop_crossover(const lm_bench_case *a, const lm_bench_config *ka,
                             const lm_bench_case *b, const lm_bench_config *kb)
{
    lm_bench_config x = *ka, y = *kb;
    double fa, fb, bytes;
    long lo = 1, hi = 1L << 40;
    x.n_ctx = y.n_ctx = hi;
    a->cost(&x, &fa, &bytes);
    b->cost(&y, &fb, &bytes);
    if (fa < fb)
        return 0.0;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        x.n_ctx = y.n_ctx = mid;
        a->cost(&x, &fa, &bytes);
        b->cost(&y, &fb, &bytes);
        if (fa >= fb)
            hi = mid;
        else
            lo = mid + 1;
    }
    return (double)lo;
}

/* Bytes per cached value of a KV dtype (f32 4, f16 and bf16 2); 0 when unknown. */
static long kv_value_bytes(const char *dtype)
{
    if (strcmp(dtype, "f32") == 0)
        return 4;
    if (strcmp(dtype, "f16") == 0 || strcmp(dtype, "bf16") == 0)
        return 2;
    return 0;
}

/* The memory crossover of the M8 arithmetic: KV bytes per token at `kv_bytes` per value vs
 * one sequence's recurrent state (SSM + conv tail, g->bpv bytes per value) at `d_state`,
 * conv channels d_inner (+ 2 d_state for Mamba-2). */
static double memory_crossover(const geometry *g, long d_state, bool mamba2, long kv_bytes,
                               long long *first)
{
    lm_kv_cache_geometry kv = {g->layers, g->kv_heads, g->head_dim, kv_bytes};
    lm_ssm_state_geometry ssm = {g->layers, g->d_inner, d_state, g->conv,
                                 g->d_inner + (mamba2 ? 2 * d_state : 0), g->bpv};
    long long per_token;
    lm_ssm_state_bytes state;
    lm_memory_crossover x;
    if (kv_bytes < 1 || lm_arith_kv_bytes_per_token(&kv, &per_token, NULL) != LM_OK ||
        lm_arith_ssm_state_bytes(&ssm, 1, &state, NULL) != LM_OK ||
        lm_arith_memory_crossover(per_token, state.total_bytes, &x, NULL) != LM_OK) {
        *first = 0;
        return 0.0;
    }
    *first = x.first_integer_token;
    return x.tokens_exact;
}

static void run_decode(run_context *rc, lm_isa isa, int threads, const long *ctx,
                       size_t ctx_count, char dtypes[][32], size_t dtype_count)
{
    const crossover_options *o = rc->o;
    const lm_bench_case *attn = lm_bench_find_role("decode_attention", 0);
    const lm_bench_case *ssm = lm_bench_find_role("decode_ssm", 0);
    if (attn == NULL || ssm == NULL) {
        printf("\n(decode: no %s kernel registered yet; nothing measured)\n",
               attn == NULL ? "decode_attention" : "decode_ssm");
        return;
    }
    /* The Mamba-2-like state: the SSD step when registered, else the Mamba-1 kernel at
     * d_state_m2. */
    const lm_bench_case *ssd = lm_bench_find_role("decode_ssd", 0);
    const lm_bench_case *steps[2] = {ssm, ssd ? ssd : ssm};
    lm_bench_config ks[2], ka;
    long states[2] = {o->g.d_state, o->g.d_state_m2};
    const char *names[2] = {"Mamba-1 step", ssd ? "Mamba-2 SSD step" : "Mamba-2-like step"};
    const char *others[2] = {"Mamba-1", ssd ? "Mamba-2 SSD" : "Mamba-2-like"};
    point p_ssm[2];
    for (int m = 0; m < 2; m++) {
        base_config(steps[m], isa, threads, &o->g, &ks[m]);
        ks[m].d_state = states[m];
        p_ssm[m] = measure(rc, steps[m], &ks[m]);
    }
    point p_attn[LM_LIST_MAX][LM_LIST_MAX] = {{{0}}};
    for (size_t d = 0; d < dtype_count; d++)
        for (size_t i = 0; i < ctx_count; i++) {
            base_config(attn, isa, threads, &o->g, &ka);
            snprintf(ka.dtype, sizeof ka.dtype, "%.15s", dtypes[d]);
            ka.bits = strcmp(dtypes[d], "f32") == 0 ? 32 : 16;
            ka.n_ctx = ctx[i];
            p_attn[d][i] = measure(rc, attn, &ka);
        }
    lm_progress_finish(&rc->progress);
    if (rc->shard_n > 1)
        return; /* a shard's crossovers come from the merged file */
    char t[32];
    printf("\n### Decode, one token, per layer (%s, %d thread%s)\n\n| n cached |", lm_isa_name(isa),
           threads, threads == 1 ? "" : "s");
    for (size_t d = 0; d < dtype_count; d++)
        printf(" attention, %s cache |", dtypes[d]);
    printf(" %s (N=%ld) | %s (N=%ld) |\n|--:|", names[0], states[0], names[1], states[1]);
    for (size_t d = 0; d < dtype_count + 2; d++)
        printf("--:|");
    printf("\n");
    for (size_t i = 0; i < ctx_count; i++) {
        printf("| %ld |", ctx[i]);
        for (size_t d = 0; d < dtype_count; d++) {
            lm_crossover_fmt_time(t, sizeof t, p_attn[d][i].t);
            printf(" %s%s |", t, p_attn[d][i].disturbed ? " (busy)" : "");
        }
        for (int m = 0; m < 2; m++) {
            lm_crossover_fmt_time(t, sizeof t, p_ssm[m].t);
            printf(" %s%s |", t, p_ssm[m].disturbed ? " (busy)" : "");
        }
        printf("\n");
    }
    printf("\n");
    lm_crossover_print_header();
    char sentences[2 * LM_LIST_MAX][640];
    size_t said = 0;
    for (size_t d = 0; d < dtype_count; d++)
        for (int m = 0; m < 2; m++) {
            long long first;
            base_config(attn, isa, threads, &o->g, &ka);
            comparison c = {.phase = "decode", .a_name = "attention", .b_name = names[m],
                            .other = others[m], .dtype = dtypes[d], .isa = isa,
                            .threads = threads, .n = ctx, .a = p_attn[d], .b = &p_ssm[m],
                            .b_flat = true, .decode = true, .count = ctx_count,
                            .memory_n = memory_crossover(&o->g, states[m], m == 1,
                                                         kv_value_bytes(dtypes[d]), &first),
                            .flop_n = flop_crossover(attn, &ka, steps[m], &ks[m])};
            lm_crossover_report(&c, rc->summary, sentences[said], sizeof sentences[said]);
            said++;
        }
    lm_crossover_print_sentences(sentences, said);
}

static void run_prefill(run_context *rc, lm_isa isa, int threads, const long *ctx,
                        size_t ctx_count)
{
    const crossover_options *o = rc->o;
    const lm_bench_case *attn = lm_bench_find_role("prefill_attention", 0);
    enum { OTHERS = 3 };
    const lm_bench_case *others[OTHERS] = {lm_bench_find_role("prefill_scan", 0),
                                           lm_bench_find_role("prefill_ssd", 0),
                                           lm_bench_find_role("prefill_linear", 0)};
    static const char *const missing[OTHERS] = {"selective scan", "Mamba-2 SSD",
                                                "chunked linear attention"};
    static const char *const said_as[OTHERS] = {"Mamba-1 selective-scan", "chunked Mamba-2 SSD",
                                                "chunked linear-attention"};
    if (attn == NULL) {
        printf("\n(prefill: no prefill_attention kernel registered yet)\n");
        return;
    }
    point p_attn[LM_LIST_MAX] = {{0}}, p_other[OTHERS][LM_LIST_MAX] = {{{0}}};
    lm_bench_config ka, ko[OTHERS];
    for (size_t i = 0; i < ctx_count; i++) {
        base_config(attn, isa, threads, &o->g, &ka);
        ka.n_ctx = ctx[i];
        p_attn[i] = measure(rc, attn, &ka);
        for (int m = 0; m < OTHERS; m++) {
            if (others[m] == NULL)
                continue;
            base_config(others[m], isa, threads, &o->g, &ko[m]);
            if (m == 1)
                ko[m].d_state = o->g.d_state_m2;
            ko[m].n_ctx = ctx[i];
            p_other[m][i] = measure(rc, others[m], &ko[m]);
        }
    }
    lm_progress_finish(&rc->progress);
    if (rc->shard_n > 1)
        return;
    char t[32];
    printf("\n### Prefill of n tokens, per layer (%s, %d thread%s)\n\n| n | causal attention |",
           lm_isa_name(isa), threads, threads == 1 ? "" : "s");
    for (int m = 0; m < OTHERS; m++)
        if (others[m])
            printf(" %s |", others[m]->name);
    printf("\n|--:|--:|");
    for (int m = 0; m < OTHERS; m++)
        printf("%s", others[m] ? "--:|" : "");
    printf("\n");
    for (size_t i = 0; i < ctx_count; i++) {
        lm_crossover_fmt_time(t, sizeof t, p_attn[i].t);
        printf("| %ld | %s%s |", ctx[i], t, p_attn[i].disturbed ? " (busy)" : "");
        for (int m = 0; m < OTHERS; m++)
            if (others[m]) {
                lm_crossover_fmt_time(t, sizeof t, p_other[m][i].t);
                printf(" %s%s |", t, p_other[m][i].disturbed ? " (busy)" : "");
            }
        printf("\n");
    }
    printf("\n");
    lm_crossover_print_header();
    char sentences[OTHERS][640];
    size_t said = 0;
    for (int m = 0; m < OTHERS; m++) {
        if (others[m] == NULL) {
            printf("| prefill | attention vs %s | - | %s | %d | not registered yet | - | - | - "
                   "| - |\n", missing[m], lm_isa_name(isa), threads);
            continue;
        }
        base_config(attn, isa, threads, &o->g, &ka);
        base_config(others[m], isa, threads, &o->g, &ko[m]);
        if (m == 1)
            ko[m].d_state = o->g.d_state_m2;
        comparison c = {.phase = "prefill", .a_name = "causal attention",
                        .b_name = others[m]->name, .other = said_as[m], .dtype = "f32",
                        .isa = isa, .threads = threads, .n = ctx, .a = p_attn,
                        .b = p_other[m], .count = ctx_count,
                        .flop_n = flop_crossover(attn, &ka, others[m], &ko[m])};
        lm_crossover_report(&c, rc->summary, sentences[said], sizeof sentences[said]);
        said++;
    }
    lm_crossover_print_sentences(sentences, said);
}

/* Says on stderr that an existing file will be replaced. */
static void say_replaced(const char *path)
{
    lm_csv old;
    if (lm_csv_read(&old, path, NULL) != LM_OK)
        return;
    fprintf(stderr, "longmix crossover: %s exists (%zu rows of an earlier run); this run replaces "
                    "it (pass --out and --summary to keep it, or --resume to continue it)\n",
            path, old.rows);
    lm_csv_free(&old);
}

/* The rows table: empty (the files it replaces said), or with --resume the --out file's
 * rows checked and de-duplicated as sweep --resume does, their keys in rc->kept and
 * rc->failed. 0 or an exit code (said). */
static int open_rows(const crossover_options *o, const lm_machine_meta *meta, bool shard,
                     lm_csv *rows, run_context *rc)
{
    lm_error err;
    struct stat st;
    if (!o->resume || (stat(o->out_path, &st) != 0 && errno == ENOENT)) {
        say_replaced(o->out_path);
        if (!shard)
            say_replaced(o->summary_path);
        return lm_csv_init_results(rows, &err) == LM_OK ? 0 : usage_error(err.message);
    }
    lm_resume_counts counts;
    if (lm_results_read(rows, o->out_path, &err) != LM_OK)
        return usage_error(err.message);
    if (lm_results_resume(rows, o->out_path, meta, o->force, &rc->kept, &rc->failed, &counts,
                          &err) != LM_OK) {
        lm_csv_free(rows);
        return usage_error(err.message);
    }
    if (counts.duplicates > 0 || counts.failed > 0)
        fprintf(stderr, "longmix crossover: %s: %zu duplicate rows dropped, %zu failed rows to "
                        "measure again\n", o->out_path, counts.duplicates, counts.failed);
    return 0;
}

/* The thread counts: auto (1 and the core count) or --threads, above the cores only with
 * --oversubscribe. 0 or an exit code (said). */
static int thread_counts(const crossover_options *o, int cores, long *threads, size_t *count)
{
    lm_error err;
    *count = 0;
    if (o->threads_text == NULL) {
        threads[(*count)++] = 1;
        if (cores > 1)
            threads[(*count)++] = cores;
    } else if (lm_parse_thread_list("--threads", o->threads_text, cores, threads, count, &err) !=
               LM_OK) {
        return usage_error(err.message);
    }
    for (size_t t = 0; t < *count; t++)
        if (threads[t] > cores && cores > 0 && !o->oversubscribe) {
            fprintf(stderr, "longmix crossover: --threads %ld exceeds the %d cores of this "
                            "machine (pass --oversubscribe to measure it anyway)\n", threads[t],
                    cores);
            return LM_EXIT_USAGE;
        }
    return 0;
}

int lm_cmd_crossover(int argc, char **argv)
{
    crossover_options o;
    int status = parse(argc, argv, &o);
    if (status != 0)
        return status < 0 ? LM_EXIT_OK : status;
    lm_error err;
    lm_machine_meta meta;
    lm_machine_meta_fill(&meta);
    long threads[LM_LIST_MAX], ctx[LM_LIST_MAX], pctx[LM_LIST_MAX];
    size_t thread_count = 0, ctx_count, pctx_count;
    lm_isa isas[LM_LIST_MAX];
    size_t isa_count;
    char dtypes[LM_LIST_MAX][32];
    size_t dtype_count;
    int shard_k = 1, shard_n = 1;
    if ((status = thread_counts(&o, meta.cores, threads, &thread_count)) != 0)
        return status;
    if (lm_parse_size_list("--ctx", o.ctx_text, 1, ctx, &ctx_count, &err) != LM_OK ||
        lm_parse_size_list("--prefill-ctx", o.prefill_text, 1, pctx, &pctx_count, &err) != LM_OK ||
        lm_parse_isa_list("--isa", o.isa_text, isas, &isa_count, &err) != LM_OK ||
        lm_parse_word_list("--dtype", o.dtype_text, dtypes, &dtype_count, &err) != LM_OK ||
        (o.shard_text != NULL && lm_parse_shard(o.shard_text, &shard_k, &shard_n, &err) != LM_OK))
        return usage_error(err.message);
    const lm_bench_case *attn = lm_bench_find_role("decode_attention", 0);
    for (size_t d = 0; d < dtype_count && attn; d++)
        if (!lm_bench_supports_dtype(attn, dtypes[d])) {
            fprintf(stderr, "longmix crossover: %s does not support --dtype %s (it takes %s)\n",
                    attn->name, dtypes[d], attn->dtypes);
            return LM_EXIT_USAGE;
        }
    lm_omp_wait_settle(argc, argv);
    const bool shard = shard_n > 1;
    run_context rc = {.o = &o, .meta = &meta, .shard_k = shard_k, .shard_n = shard_n};
    lm_csv rows, summary;
    if ((status = open_rows(&o, &meta, shard, &rows, &rc)) != 0)
        return status;
    rc.rows = &rows, rc.summary = &summary;
    if (lm_csv_init(&summary, lm_crossover_summary_columns, LM_CROSSOVER_SUMMARY_COLUMNS, &err) != LM_OK ||
        lm_csv_write_atomic(&rows, o.out_path, &err) != LM_OK ||
        (!shard && lm_csv_write_atomic(&summary, o.summary_path, &err) != LM_OK)) {
        lm_csv_free(&rows), lm_csv_free(&summary);
        lm_key_set_free(&rc.kept), lm_key_set_free(&rc.failed);
        return usage_error(err.message);
    }
    size_t per = (o.no_decode ? 0 : 2 + dtype_count * ctx_count) +
                 (o.no_prefill ? 0 : 4 * pctx_count);
    lm_progress_start(&rc.progress, per * thread_count * isa_count);
    long long m1_first, m2_first;
    double m1 = memory_crossover(&o.g, o.g.d_state, false, o.g.bpv, &m1_first);
    double m2 = memory_crossover(&o.g, o.g.d_state_m2, true, o.g.bpv, &m2_first);
    printf("## SSM vs attention crossover on %s%s\n\n", meta.cpu_model,
           shard ? " (one shard: no crossovers)" : "");
    printf("Geometry: d_model %ld, %ld layers, %ld heads, %ld KV heads x %ld, d_inner %ld, "
           "d_state %ld (Mamba-2-like %ld), conv %ld, %ld bytes per cached value. Times are per "
           "layer; a whole model is %ld x these (n* is unchanged).\n",
           o.g.d_model, o.g.layers, o.g.heads, o.g.kv_heads, o.g.head_dim, o.g.d_inner,
           o.g.d_state, o.g.d_state_m2, o.g.conv, o.g.bpv, o.g.layers);
    printf("Memory crossover (KV cache = recurrent state, both at %ld bytes per value): Mamba-1 "
           "%g tokens (first integer %lld), Mamba-2-like %g (first integer %lld); per KV dtype "
           "in the tables.\n", o.g.bpv, m1, m1_first, m2, m2_first);
    for (size_t ii = 0; ii < isa_count; ii++)
        for (size_t ti = 0; ti < thread_count; ti++) {
            rc.have_limits = !o.no_roofline && !(o.no_decode && o.no_prefill) &&
                             lm_roofline_quick(isas[ii], (int)threads[ti], &rc.limits, NULL) == LM_OK;
            if (!o.no_decode)
                run_decode(&rc, isas[ii], (int)threads[ti], ctx, ctx_count, dtypes, dtype_count);
            if (!o.no_prefill)
                run_prefill(&rc, isas[ii], (int)threads[ti], pctx, pctx_count);
            if (!shard)
                lm_csv_write_atomic(&summary, o.summary_path, NULL);
        }
    lm_progress_finish(&rc.progress);
    if (!shard && !(o.no_decode && o.no_prefill))
        lm_crossover_print_legend(o.g.bpv);
    int rc_exit = LM_EXIT_OK;
    if (lm_csv_write_atomic(&rows, o.out_path, &err) != LM_OK ||
        (!shard && lm_csv_write_atomic(&summary, o.summary_path, &err) != LM_OK)) {
        fprintf(stderr, "longmix crossover: %s\n", err.message);
        rc_exit = LM_EXIT_USAGE;
    } else {
        if (rc.watching)
            lm_busy_watch_finish(&rc.watch, o.out_path);
        fprintf(stderr, "longmix crossover: %zu configurations measured, %zu from %s, %zu rows -> "
                        "%s", rc.measured, rc.reused, o.out_path, rows.rows, o.out_path);
        if (shard)
            fprintf(stderr, " (shard %d of %d: join the shards with longmix merge, then run this "
                            "crossover without --shard, with --resume --out on the merged file, "
                            "for the crossovers)\n", shard_k, shard_n);
        else
            fprintf(stderr, ", crossovers -> %s\n", o.summary_path);
    }
    if (rc.failures && rc_exit == LM_EXIT_OK)
        rc_exit = LM_EXIT_CHECK_FAILED;
    lm_csv_free(&rows), lm_csv_free(&summary);
    lm_key_set_free(&rc.kept), lm_key_set_free(&rc.failed);
    return rc_exit;
}

/* longmix crossover: at what context length does attention cost more than an SSM?
 * Measured per thread count with the bench registry's cases (roles decode_attention,
 * decode_ssm, prefill_attention, prefill_scan, prefill_linear), beside the memory
 * crossover (kernels/arith/memory.c) and the FLOP crossover (the cases' flop counts). */
#include "crossover.h"

#include "bench.h"
#include "cli.h"
#include "csv.h"
#include "opts.h"
#include "progress.h"
#include "roofline.h"
#include "topo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        "                         [--no-prefill] [--no-roofline] [geometry options]\n\n"
        "Measures, per thread count, one decode token of attention over n cached tokens (per KV\n"
        "dtype) against one SSM step (Mamba-1, N = d_state; Mamba-2 SSD, N = d_state_m2), and\n"
        "the prefill of n tokens by causal attention against the Mamba-1 selective scan, the\n"
        "chunked Mamba-2 SSD and chunked linear attention, all per layer. Prints a Markdown table: the measured crossover n*\n"
        "(log-log interpolation between the two bracketing measurements, printed too) beside\n"
        "the memory crossover (KV bytes vs the recurrent state, kernels/arith) and the FLOP\n"
        "crossover (the kernels' own flop counts). Whole-model times are layers x per-layer;\n"
        "the crossover n* does not depend on the layer count.\n"
        "  --ctx LIST          decode grid (default 64..16384)\n"
        "  --prefill-ctx LIST  prefill grid (default 256..4096)\n"
        "  --threads LIST      default auto: 1 and the core count\n"
        "  --isa LIST          default: active\n"
        "  --dtype LIST        KV storage for decode (default f32,f16,bf16)\n"
        "  --reps N            timed repetitions (default 3)\n"
        "geometry (defaults: the M8 contract):\n"
        "  --d-model 4096 --layers 32 --heads 32 --kv-heads 8 --head-dim 128\n"
        "  --d-inner 8192 --d-state 16 --d-state-m2 128 --conv 4 --bytes-per-value 2\n"
        "  (--heads defaults to d_model / head_dim: the FLOP count 4 n d_model of the M8\n"
        "  scenario is the attention case's 4 n heads head_dim)\n");
}

typedef struct geometry {
    long d_model, layers, heads, kv_heads, head_dim, d_inner, d_state, d_state_m2, conv, bpv;
} geometry;

typedef struct crossover_options {
    const char *threads_text, *isa_text, *ctx_text, *prefill_text, *dtype_text;
    const char *out_path, *summary_path;
    int reps;
    bool no_decode, no_prefill, no_roofline;
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
                 {"--summary", &o->summary_path}};
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
        if (known)
            continue;
        if (i + 1 >= argc) {
            fprintf(stderr, "longmix crossover: %s needs a value (or is unknown)\n", a);
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
    return 0;
}

/* Everything one run measures, for the tables and the summary CSV. */
typedef struct run_context {
    const crossover_options *o;
    const lm_machine_meta *meta;
    lm_csv *rows;
    lm_csv *summary;
    lm_progress progress;
    size_t done;
    lm_roofline_limits limits;
    bool have_limits;
    int failures;
} run_context;

/* Measures one configuration, appends its row, returns the median seconds (0 on failure). */
static double measure(run_context *rc, const lm_bench_case *c, const lm_bench_config *k)
{
    lm_bench_result r;
    lm_error err;
    char label[128];
    snprintf(label, sizeof label, "%s %s t%d n=%ld", c->name, k->dtype, k->threads, k->n_ctx);
    lm_progress_update(&rc->progress, rc->done++, label);
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
                         .time = r.time, .rep_times = r.rep_times,
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
    lm_result_append(rc->rows, rc->meta, &row, NULL);
    if (r.status != LM_OK) {
        lm_progress_finish(&rc->progress);
        fprintf(stderr, "longmix crossover: %s: %s\n", label, r.message);
        rc->failures++;
        return 0.0;
    }
    return t;
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

/* The memory crossover of the M8 arithmetic: KV bytes per token vs one sequence's recurrent
 * state (SSM + conv tail) at `d_state`, conv channels d_inner (+ 2 d_state for Mamba-2). */
static double memory_crossover(const geometry *g, long d_state, bool mamba2, long long *first)
{
    lm_kv_cache_geometry kv = {g->layers, g->kv_heads, g->head_dim, g->bpv};
    lm_ssm_state_geometry ssm = {g->layers, g->d_inner, d_state, g->conv,
                                 g->d_inner + (mamba2 ? 2 * d_state : 0), g->bpv};
    long long per_token;
    lm_ssm_state_bytes state;
    lm_memory_crossover x;
    if (lm_arith_kv_bytes_per_token(&kv, &per_token, NULL) != LM_OK ||
        lm_arith_ssm_state_bytes(&ssm, 1, &state, NULL) != LM_OK ||
        lm_arith_memory_crossover(per_token, state.total_bytes, &x, NULL) != LM_OK) {
        *first = 0;
        return 0.0;
    }
    *first = x.first_integer_token;
    return x.tokens_exact;
}

static void fmt_time(char *out, size_t size, double s)
{
    if (s <= 0.0)
        snprintf(out, size, "failed");
    else if (s < 1e-3)
        snprintf(out, size, "%.1f us", s * 1e6);
    else if (s < 1.0)
        snprintf(out, size, "%.2f ms", s * 1e3);
    else
        snprintf(out, size, "%.2f s", s);
}

/* One summary line: the measured crossover of a vs b, its bracket, memory and FLOP n*. */
static void report_crossover(run_context *rc, const char *phase, const char *a_name,
                             const char *b_name, const char *dtype, lm_isa isa, int threads,
                             const long *n, const double *ta, const double *tb, size_t count,
                             double memory_n, double flop_n)
{
    double nd[LM_LIST_MAX], a[LM_LIST_MAX], b[LM_LIST_MAX];
    size_t m = 0;
    for (size_t i = 0; i < count; i++)
        if (ta[i] > 0.0 && tb[i] > 0.0) {
            nd[m] = (double)n[i], a[m] = ta[i], b[m] = tb[i];
            m++;
        }
    lm_crossover_point p = {0};
    char measured[64] = "no data", bracket[160] = "-", t1[32], t2[32], t3[32], t4[32];
    lm_status s = lm_crossover_find(nd, a, b, m, &p, NULL);
    if (s == LM_OK && p.where == 0) {
        snprintf(measured, sizeof measured, "%.0f", p.n_star);
        fmt_time(t1, sizeof t1, a[p.lo]), fmt_time(t2, sizeof t2, b[p.lo]);
        fmt_time(t3, sizeof t3, a[p.hi]), fmt_time(t4, sizeof t4, b[p.hi]);
        snprintf(bracket, sizeof bracket, "n=%.0f: %s < %s; n=%.0f: %s >= %s", nd[p.lo], t1, t2,
                 nd[p.hi], t3, t4);
    } else if (s == LM_OK && p.where < 0) {
        snprintf(measured, sizeof measured, "<= %.0f", nd[0]);
        fmt_time(t1, sizeof t1, a[0]), fmt_time(t2, sizeof t2, b[0]);
        snprintf(bracket, sizeof bracket, "n=%.0f: %s >= %s", nd[0], t1, t2);
    } else if (s == LM_OK) {
        snprintf(measured, sizeof measured, "> %.0f", nd[m - 1]);
        fmt_time(t1, sizeof t1, a[m - 1]), fmt_time(t2, sizeof t2, b[m - 1]);
        snprintf(bracket, sizeof bracket, "n=%.0f: %s < %s", nd[m - 1], t1, t2);
    }
    char mem[32] = "-", flop[32] = "-";
    if (memory_n > 0.0)
        snprintf(mem, sizeof mem, "%g", memory_n);
    if (flop_n > 0.0)
        snprintf(flop, sizeof flop, "%.0f", flop_n);
    printf("| %s | %s vs %s | %s | %s | %d | **%s** | %s | %s | %s |\n", phase, a_name, b_name,
           dtype, lm_isa_name(isa), threads, measured, bracket, mem, flop);
    char cells[14][96];
    const char *ptrs[14];
    snprintf(cells[0], 96, "%s", phase);
    snprintf(cells[1], 96, "%s", a_name);
    snprintf(cells[2], 96, "%s", b_name);
    snprintf(cells[3], 96, "%s", dtype);
    snprintf(cells[4], 96, "%s", lm_isa_name(isa));
    snprintf(cells[5], 96, "%d", threads);
    snprintf(cells[6], 96, "%s", s == LM_OK ? (p.where == 0 ? "found" : p.where < 0 ? "below_grid" : "above_grid") : "no_data");
    snprintf(cells[7], 96, "%.6g", s == LM_OK ? p.n_star : 0.0);
    snprintf(cells[8], 96, "%.0f", s == LM_OK && m ? nd[p.lo] : 0.0);
    snprintf(cells[9], 96, "%.6g", s == LM_OK && m ? a[p.lo] : 0.0);
    snprintf(cells[10], 96, "%.6g", s == LM_OK && m ? b[p.lo] : 0.0);
    snprintf(cells[11], 96, "%.0f", s == LM_OK && m ? nd[p.hi] : 0.0);
    snprintf(cells[12], 96, "%g", memory_n);
    snprintf(cells[13], 96, "%g", flop_n);
    for (int i = 0; i < 14; i++)
        ptrs[i] = cells[i];
    lm_csv_append(rc->summary, ptrs, NULL);
}

static void crossover_header(void)
{
    printf("| phase | comparison | KV dtype | isa | threads | measured n* | bracketing "
           "measurements | memory n* | FLOP n* |\n|---|---|---|---|--:|--:|---|--:|--:|\n");
}

static const char *const summary_columns[14] = {
    "phase", "method_a", "method_b", "dtype", "isa", "threads", "found", "n_star",
    "lo_n", "lo_a_s", "lo_b_s", "hi_n", "memory_n", "flop_n"};

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
    double t_ssm[2];
    for (int m = 0; m < 2; m++) {
        base_config(steps[m], isa, threads, &o->g, &ks[m]);
        ks[m].d_state = states[m];
        t_ssm[m] = measure(rc, steps[m], &ks[m]);
    }
    double t_attn[LM_LIST_MAX][LM_LIST_MAX] = {{0}};
    for (size_t d = 0; d < dtype_count; d++)
        for (size_t i = 0; i < ctx_count; i++) {
            base_config(attn, isa, threads, &o->g, &ka);
            snprintf(ka.dtype, sizeof ka.dtype, "%.15s", dtypes[d]);
            ka.bits = strcmp(dtypes[d], "f32") == 0 ? 32 : 16;
            ka.n_ctx = ctx[i];
            t_attn[d][i] = measure(rc, attn, &ka);
        }
    lm_progress_finish(&rc->progress);
    char t[32];
    printf("\n### Decode, one token, per layer (%s, %d thread%s)\n\n| n cached |", lm_isa_name(isa),
           threads, threads == 1 ? "" : "s");
    for (size_t d = 0; d < dtype_count; d++)
        printf(" attention %s |", dtypes[d]);
    printf(" %s (N=%ld) | %s (N=%ld) |\n|--:|", names[0], states[0], names[1], states[1]);
    for (size_t d = 0; d < dtype_count + 2; d++)
        printf("--:|");
    printf("\n");
    for (size_t i = 0; i < ctx_count; i++) {
        printf("| %ld |", ctx[i]);
        for (size_t d = 0; d < dtype_count; d++) {
            fmt_time(t, sizeof t, t_attn[d][i]);
            printf(" %s |", t);
        }
        for (int m = 0; m < 2; m++) {
            fmt_time(t, sizeof t, t_ssm[m]);
            printf(" %s |", t);
        }
        printf("\n");
    }
    printf("\n");
    crossover_header();
    for (size_t d = 0; d < dtype_count; d++)
        for (int m = 0; m < 2; m++) {
            double flat[LM_LIST_MAX];
            for (size_t i = 0; i < ctx_count; i++)
                flat[i] = t_ssm[m];
            long long first;
            double memory_n = memory_crossover(&o->g, states[m], m == 1, &first);
            base_config(attn, isa, threads, &o->g, &ka);
            double flop_n = flop_crossover(attn, &ka, steps[m], &ks[m]);
            char a_name[48];
            snprintf(a_name, sizeof a_name, "attention");
            report_crossover(rc, "decode", a_name, names[m], dtypes[d], isa, threads, ctx,
                             t_attn[d], flat, ctx_count, memory_n, flop_n);
        }
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
    if (attn == NULL) {
        printf("\n(prefill: no prefill_attention kernel registered yet)\n");
        return;
    }
    double t_attn[LM_LIST_MAX] = {0}, t_other[OTHERS][LM_LIST_MAX] = {{0}};
    lm_bench_config ka, ko[OTHERS];
    for (size_t i = 0; i < ctx_count; i++) {
        base_config(attn, isa, threads, &o->g, &ka);
        ka.n_ctx = ctx[i];
        t_attn[i] = measure(rc, attn, &ka);
        for (int m = 0; m < OTHERS; m++) {
            if (others[m] == NULL)
                continue;
            base_config(others[m], isa, threads, &o->g, &ko[m]);
            if (m == 1)
                ko[m].d_state = o->g.d_state_m2;
            ko[m].n_ctx = ctx[i];
            t_other[m][i] = measure(rc, others[m], &ko[m]);
        }
    }
    lm_progress_finish(&rc->progress);
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
        fmt_time(t, sizeof t, t_attn[i]);
        printf("| %ld | %s |", ctx[i], t);
        for (int m = 0; m < OTHERS; m++)
            if (others[m]) {
                fmt_time(t, sizeof t, t_other[m][i]);
                printf(" %s |", t);
            }
        printf("\n");
    }
    printf("\n");
    crossover_header();
    for (int m = 0; m < OTHERS; m++) {
        if (others[m] == NULL) {
            printf("| prefill | attention vs %s | - | %s | %d | not registered yet | - | - | - |\n",
                   missing[m], lm_isa_name(isa), threads);
            continue;
        }
        base_config(attn, isa, threads, &o->g, &ka);
        base_config(others[m], isa, threads, &o->g, &ko[m]);
        if (m == 1)
            ko[m].d_state = o->g.d_state_m2;
        double flop_n = flop_crossover(attn, &ka, others[m], &ko[m]);
        report_crossover(rc, "prefill", "causal attention", others[m]->name, "f32", isa, threads,
                         ctx, t_attn, t_other[m], ctx_count, 0.0, flop_n);
    }
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
    if (o.threads_text == NULL) {
        threads[thread_count++] = 1;
        if (meta.cores > 1)
            threads[thread_count++] = meta.cores;
    } else if (lm_parse_thread_list("--threads", o.threads_text, meta.cores, threads,
                                    &thread_count, &err) != LM_OK) {
        return usage_error(err.message);
    }
    if (lm_parse_size_list("--ctx", o.ctx_text, 1, ctx, &ctx_count, &err) != LM_OK ||
        lm_parse_size_list("--prefill-ctx", o.prefill_text, 1, pctx, &pctx_count, &err) != LM_OK ||
        lm_parse_isa_list("--isa", o.isa_text, isas, &isa_count, &err) != LM_OK ||
        lm_parse_word_list("--dtype", o.dtype_text, dtypes, &dtype_count, &err) != LM_OK)
        return usage_error(err.message);
    const lm_bench_case *attn = lm_bench_find_role("decode_attention", 0);
    for (size_t d = 0; d < dtype_count && attn; d++)
        if (!lm_bench_supports_dtype(attn, dtypes[d])) {
            fprintf(stderr, "longmix crossover: %s does not support --dtype %s (it takes %s)\n",
                    attn->name, dtypes[d], attn->dtypes);
            return LM_EXIT_USAGE;
        }
    lm_csv rows, summary;
    if (lm_csv_init_results(&rows, &err) != LM_OK ||
        lm_csv_init(&summary, summary_columns, 14, &err) != LM_OK)
        return usage_error(err.message);
    if (lm_csv_write_atomic(&rows, o.out_path, &err) != LM_OK ||
        lm_csv_write_atomic(&summary, o.summary_path, &err) != LM_OK) {
        lm_csv_free(&rows), lm_csv_free(&summary);
        return usage_error(err.message);
    }
    run_context rc = {.o = &o, .meta = &meta, .rows = &rows, .summary = &summary};
    size_t per = (o.no_decode ? 0 : 2 + dtype_count * ctx_count) +
                 (o.no_prefill ? 0 : 4 * pctx_count);
    lm_progress_start(&rc.progress, per * thread_count * isa_count);
    long long m1_first, m2_first;
    double m1 = memory_crossover(&o.g, o.g.d_state, false, &m1_first);
    double m2 = memory_crossover(&o.g, o.g.d_state_m2, true, &m2_first);
    printf("## SSM vs attention crossover on %s\n\n", meta.cpu_model);
    printf("Geometry: d_model %ld, %ld layers, %ld heads, %ld KV heads x %ld, d_inner %ld, "
           "d_state %ld (Mamba-2-like %ld), conv %ld, %ld bytes per cached value. Times are per "
           "layer; a whole model is %ld x these (n* is unchanged).\n",
           o.g.d_model, o.g.layers, o.g.heads, o.g.kv_heads, o.g.head_dim, o.g.d_inner,
           o.g.d_state, o.g.d_state_m2, o.g.conv, o.g.bpv, o.g.layers);
    printf("Memory crossover (KV cache = recurrent state): Mamba-1 %g tokens (first integer "
           "%lld), Mamba-2-like %g (first integer %lld).\n", m1, m1_first, m2, m2_first);
    for (size_t ii = 0; ii < isa_count; ii++)
        for (size_t ti = 0; ti < thread_count; ti++) {
            rc.have_limits = !o.no_roofline && !(o.no_decode && o.no_prefill) &&
                             lm_roofline_quick(isas[ii], (int)threads[ti], &rc.limits, NULL) == LM_OK;
            if (!o.no_decode)
                run_decode(&rc, isas[ii], (int)threads[ti], ctx, ctx_count, dtypes, dtype_count);
            if (!o.no_prefill)
                run_prefill(&rc, isas[ii], (int)threads[ti], pctx, pctx_count);
            lm_csv_write_atomic(&rows, o.out_path, NULL);
            lm_csv_write_atomic(&summary, o.summary_path, NULL);
        }
    lm_progress_finish(&rc.progress);
    int rc_exit = LM_EXIT_OK;
    if (lm_csv_write_atomic(&rows, o.out_path, &err) != LM_OK ||
        lm_csv_write_atomic(&summary, o.summary_path, &err) != LM_OK) {
        fprintf(stderr, "longmix crossover: %s\n", err.message);
        rc_exit = LM_EXIT_USAGE;
    } else {
        fprintf(stderr, "longmix crossover: %zu measurements -> %s, crossovers -> %s\n", rows.rows,
                o.out_path, o.summary_path);
    }
    if (rc.failures && rc_exit == LM_EXIT_OK)
        rc_exit = LM_EXIT_CHECK_FAILED;
    lm_csv_free(&rows), lm_csv_free(&summary);
    return rc_exit;
}

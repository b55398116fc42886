/* The decode table of `longmix model` and the crossover derived from it. */
#include "model_table.h"

#include "busy.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const model_columns[] = {
    "model", "cache", "weights", "ms_per_token", "tokens_per_s", "bytes_per_step",
    "stream_gbps", "stream_frac", "proj_ms", "mixing_ms", "mlp_ms", "head_ms",
    "weights_bytes", "kv_bytes_seq", "state_bytes_seq", "mem_seq_bytes", "mem_batch_bytes",
    "copies_max", "phase", "ttft_ms", "gemm_gflops", "gemm_peak_gflops", "gemm_peak_frac"};
/* The prefill columns (from ttft_ms on) are empty in decode rows. */
#define PREFILL_COLUMNS 4
#define MODEL_COLUMNS (sizeof model_columns / sizeof model_columns[0])
#define ALL_COLUMNS (LM_RESULTS_COLUMNS + MODEL_COLUMNS)

void lm_model_decode_add(lm_model_decode *d, const lm_unit_timing *t, double count)
{
    d->step_s += count * t->step_s;
    for (int k = 0; k < LM_COMP_COUNT; k++)
        d->comp_s[k] += count * t->comp_s[k];
    d->bytes += count * t->bytes;
    if (t->stream_gbps > 0) {
        d->stream_s += count * t->bytes / (t->stream_gbps * 1e9);
        d->stream_gbps = d->bytes / d->stream_s / 1e9;
    }
    d->checksum += t->checksum;
    d->gemm_s += count * t->gemm_s;
    d->gemm_flops += count * t->gemm_flops;
    if (t->copies > d->copies_max)
        d->copies_max = t->copies;
}

static char *key_text(const lm_model_key *k)
{
    char threads[24], ctx[24], batch[24];
    snprintf(threads, sizeof threads, "%d", k->threads);
    snprintf(ctx, sizeof ctx, "%ld", k->ctx);
    snprintf(batch, sizeof batch, "%ld", k->batch);
    const char *cells[8] = {k->model, k->isa, threads, k->cache, k->weights, ctx, batch,
                            k->prefill ? "prefill" : "decode"};
    return lm_key_join(cells, 8);
}

static const char *cell(const lm_csv *csv, size_t r, const char *column)
{
    int c = lm_csv_column(csv, column);
    return c >= 0 ? csv->cells[r][c] : "";
}

static char *row_key(const lm_csv *csv, size_t r)
{
    lm_model_key k = {cell(csv, r, "model"), cell(csv, r, "isa"), atoi(cell(csv, r, "threads")),
                      cell(csv, r, "cache"), cell(csv, r, "weights"),
                      atol(cell(csv, r, "n_ctx")), atol(cell(csv, r, "batch")),
                      strcmp(cell(csv, r, "phase"), "prefill") == 0};
    return key_text(&k);
}

static lm_status header_init(lm_csv *csv, lm_error *err)
{
    const char *header[ALL_COLUMNS];
    for (size_t i = 0; i < LM_RESULTS_COLUMNS; i++)
        header[i] = lm_results_columns[i];
    for (size_t i = 0; i < MODEL_COLUMNS; i++)
        header[LM_RESULTS_COLUMNS + i] = model_columns[i];
    return lm_csv_init(csv, header, ALL_COLUMNS, err);
}

static lm_status read_table(lm_model_table *t, const char *path, bool resume,
                            const lm_machine_meta *meta, lm_error *err)
{
    struct stat st;
    if (!resume || stat(path, &st) != 0)
        return header_init(&t->csv, err);
    lm_status s = lm_csv_read(&t->csv, path, err);
    if (s != LM_OK)
        return s;
    bool same = t->csv.columns == ALL_COLUMNS;
    for (size_t i = 0; same && i < LM_RESULTS_COLUMNS; i++)
        same = strcmp(t->csv.header[i], lm_results_columns[i]) == 0;
    for (size_t i = 0; same && i < MODEL_COLUMNS; i++)
        same = strcmp(t->csv.header[LM_RESULTS_COLUMNS + i], model_columns[i]) == 0;
    if (!same)
        return lm_fail(err, LM_ERR_SCHEMA, "%s: not a models table of this build (its header "
                       "differs); pass another --out or drop --resume", path);
    if ((s = lm_results_validate(&t->csv, path, err)) != LM_OK)
        return s;
    for (size_t r = 0; r < t->csv.rows;) {
        if (strcmp(cell(&t->csv, r, "cpu_model"), meta->cpu_model) != 0)
            return lm_fail(err, LM_ERR_SCHEMA, "%s:%zu: cpu_model '%s' is not this machine's '%s'",
                           path, t->csv.line[r], cell(&t->csv, r, "cpu_model"), meta->cpu_model);
        char *key = row_key(&t->csv, r);
        if (key == NULL)
            return lm_fail(err, LM_ERR_NOMEM, "out of memory");
        bool ok = strcmp(cell(&t->csv, r, "status"), "ok") == 0;
        int added = ok ? lm_key_set_add(&t->done, key) : 0;
        free(key);
        if (added < 0)
            return lm_fail(err, LM_ERR_NOMEM, "out of memory");
        if (added == 0) /* a failed row or a duplicate: measured again / dropped */
            lm_csv_remove_row(&t->csv, r);
        else
            r++;
    }
    return LM_OK;
}

lm_status lm_model_table_open(lm_model_table *t, const char *path, bool resume,
                              const lm_machine_meta *meta, lm_error *err)
{
    memset(t, 0, sizeof *t);
    t->path = path;
    t->meta = meta;
    lm_status s = read_table(t, path, resume, meta, err);
    if (s != LM_OK) { /* a refused file leaves nothing behind */
        lm_model_table_free(t);
        memset(t, 0, sizeof *t);
    }
    return s;
}

bool lm_model_table_has(const lm_model_table *t, const lm_model_key *key)
{
    char *k = key_text(key);
    bool has = k != NULL && lm_key_set_has(&t->done, k);
    free(k);
    return has;
}

static void fmt(char *out, double v) { snprintf(out, 32, "%.6g", v); }

lm_status lm_model_table_put(lm_model_table *t, const lm_model_key *key,
                             const lm_model_spec *s, const lm_model_decode *d, int reps,
                             lm_busy_watch *watch, double since, lm_error *err)
{
    char kernel[96], note[160];
    snprintf(kernel, sizeof kernel, "model.%s", s->name);
    if (key->prefill)
        snprintf(note, sizeof note, "prefill of %ld sequences of %ld tokens (time to first "
                 "token); one instance of each unit, multiplied by their counts", key->batch,
                 key->ctx);
    else
        snprintf(note, sizeof note, "decode step of %ld sequences at ctx %ld; units measured "
                 "over up to %zu copies, multiplied by their counts", key->batch, key->ctx,
                 d->copies_max);
    double total, active;
    lm_model_params(s, &total, &active);
    /* flops of the weights (2 per active parameter and token); prefill: every prompt token */
    double tokens = (double)key->batch * (key->prefill ? (double)key->ctx : 1.0);
    double flops = 2.0 * (double)active * tokens;
    double gemm_gflops = d->gemm_s > 0 ? d->gemm_flops / d->gemm_s / 1e9 : 0.0;
    double gemm_frac = d->peak_gflops > 0 ? gemm_gflops / d->peak_gflops : 0.0;
    double gbps = d->bytes / d->step_s / 1e9;
    lm_weight_dtype w;
    lm_weight_dtype_parse(key->weights, &w, NULL);
    lm_result_row row = {
        .kernel = kernel, .isa = key->isa, .dtype = key->cache, .status = "ok", .note = note,
        .threads = key->threads, .bits = (int)(8 * lm_weight_dtype_size(w)), .reps = reps,
        .n_ctx = key->ctx, .chunk = 0, .heads = (long)(s->attention.heads + s->mla.heads),
        .kv_heads = (long)s->attention.kv_heads, .head_dim = (long)s->attention.head_dim,
        .d_inner = (long)(s->mamba1.d_inner + s->mamba2.d_inner),
        .d_state = (long)(s->mamba1.d_state + s->mamba2.d_state), .batch = key->batch,
        .time = {.median = d->step_s, .min = d->step_s, .max = d->step_s, .p25 = d->step_s,
                 .p75 = d->step_s, .mean = d->step_s, .count = 1},
        .gflops = flops / d->step_s / 1e9, .gbps = gbps,
        /* decode: the bytes over the stream; prefill: the GEMMs over the dtype's peak */
        .roofline_frac = key->prefill ? gemm_frac : d->stream_gbps > 0 ? gbps / d->stream_gbps : 0.0,
        .checksum = d->checksum, .flops = flops, .bytes = d->bytes, .err_max = -1.0};
    if (watch != NULL) /* busy_cores and disturbed over the minutes of this row */
        lm_busy_watch_row(watch, since, &row);
    lm_csv tmp;
    lm_status st = lm_csv_init_results(&tmp, err);
    if (st == LM_OK)
        st = lm_result_append(&tmp, t->meta, &row, err);
    if (st != LM_OK) {
        lm_csv_free(&tmp);
        return st;
    }
    char nums[MODEL_COLUMNS][32];
    const lm_model_memory *m = &d->memory;
    double per_seq = m->kv + m->state;
    /* prefill: ms_per_token is per prompt token of a sequence, tokens_per_s the prompt
     * tokens of the batch per second */
    double values[] = {d->step_s * 1e3 / (key->prefill ? (double)key->ctx : 1.0),
                       tokens / d->step_s, d->bytes,
                       d->stream_gbps, d->stream_gbps > 0 ? gbps / d->stream_gbps : 0.0,
                       d->comp_s[LM_COMP_PROJ] * 1e3,
                       d->comp_s[LM_COMP_MIXING] * 1e3, d->comp_s[LM_COMP_MLP] * 1e3,
                       d->comp_s[LM_COMP_HEAD] * 1e3, m->weights, m->kv, m->state,
                       m->weights + per_seq, m->weights + (double)key->batch * per_seq,
                       (double)d->copies_max, 0.0, d->step_s * 1e3, gemm_gflops,
                       d->peak_gflops, gemm_frac};
    const char *cells[ALL_COLUMNS];
    for (size_t i = 0; i < LM_RESULTS_COLUMNS; i++)
        cells[i] = tmp.cells[0][i];
    cells[LM_RESULTS_COLUMNS] = s->name;
    cells[LM_RESULTS_COLUMNS + 1] = key->cache;
    cells[LM_RESULTS_COLUMNS + 2] = key->weights;
    for (size_t i = 3; i < MODEL_COLUMNS; i++) {
        fmt(nums[i], values[i - 3]);
        cells[LM_RESULTS_COLUMNS + i] = nums[i];
    }
    cells[ALL_COLUMNS - PREFILL_COLUMNS - 1] = key->prefill ? "prefill" : "decode";
    for (size_t i = ALL_COLUMNS - PREFILL_COLUMNS; !key->prefill && i < ALL_COLUMNS; i++)
        cells[i] = "";
    st = lm_csv_append(&t->csv, cells, err);
    lm_csv_free(&tmp);
    return st;
}

lm_status lm_model_table_write(const lm_model_table *t, lm_error *err)
{
    return lm_csv_write_atomic(&t->csv, t->path, err);
}

static bool is_prefill(const lm_csv *c, size_t r) { return strcmp(cell(c, r, "phase"), "prefill") == 0; }

void lm_model_table_markdown(const lm_model_table *t, FILE *out)
{
    size_t prefills = 0;
    for (size_t r = 0; r < t->csv.rows; r++)
        prefills += is_prefill(&t->csv, r);
    if (prefills == t->csv.rows && prefills > 0)
        goto prefill;
    fprintf(out, "| model | cache | weights | threads | batch | ctx | ms/token | tokens/s | proj ms | "
                 "mixing ms | mlp ms | head ms | MB/step | %% stream | GiB/seq | GiB batch |\n"
                 "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t r = 0; r < t->csv.rows; r++) {
        const lm_csv *c = &t->csv;
        if (is_prefill(c, r))
            continue;
        fprintf(out, "| %s | %s | %s | %s | %s | %s | %.2f | %.1f | %.2f | %.2f | %.2f | %.2f | %.0f | %.0f | %.2f | %.2f |\n",
                cell(c, r, "model"), cell(c, r, "cache"), cell(c, r, "weights"),
                cell(c, r, "threads"), cell(c, r, "batch"), cell(c, r, "n_ctx"),
                atof(cell(c, r, "ms_per_token")), atof(cell(c, r, "tokens_per_s")),
                atof(cell(c, r, "proj_ms")), atof(cell(c, r, "mixing_ms")),
                atof(cell(c, r, "mlp_ms")), atof(cell(c, r, "head_ms")),
                atof(cell(c, r, "bytes_per_step")) / 1e6, 100.0 * atof(cell(c, r, "stream_frac")),
                atof(cell(c, r, "mem_seq_bytes")) / 1073741824.0,
                atof(cell(c, r, "mem_batch_bytes")) / 1073741824.0);
    }
    fprintf(out, "\n");
    if (prefills == 0)
        return;
prefill:
    fprintf(out, "| model | weights | threads | batch | prompt | prefill ms (TTFT) | prompt tokens/s | "
                 "proj ms | mixing ms | mlp ms | head ms | GEMM GFLOP/s | GEMM %% of peak |\n"
                 "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (size_t r = 0; r < t->csv.rows; r++) {
        const lm_csv *c = &t->csv;
        if (!is_prefill(c, r))
            continue;
        fprintf(out, "| %s | %s | %s | %s | %s | %.2f | %.1f | %.2f | %.2f | %.2f | %.2f | %.1f | %.0f |\n",
                cell(c, r, "model"), cell(c, r, "weights"), cell(c, r, "threads"),
                cell(c, r, "batch"), cell(c, r, "n_ctx"), atof(cell(c, r, "ttft_ms")),
                atof(cell(c, r, "tokens_per_s")), atof(cell(c, r, "proj_ms")),
                atof(cell(c, r, "mixing_ms")), atof(cell(c, r, "mlp_ms")),
                atof(cell(c, r, "head_ms")), atof(cell(c, r, "gemm_gflops")),
                100.0 * atof(cell(c, r, "gemm_peak_frac")));
    }
    fprintf(out, "\n");
}

void lm_model_table_free(lm_model_table *t)
{
    lm_csv_free(&t->csv);
    lm_key_set_free(&t->done);
}

/* ---- the crossover --------------------------------------------------------------------- */

static double memory_of(const lm_model_spec *s, lm_weight_dtype w, const lm_cache_format *c,
                        long long n, long batch, bool with_weights)
{
    lm_model_memory m;
    lm_model_memory_at(s, w, c, n, &m);
    return (with_weights ? m.weights : 0.0) + (double)batch * (m.kv + m.state);
}

long long lm_model_memory_crossover(const lm_model_spec *model, const lm_model_spec *base,
                                    lm_weight_dtype weights, const lm_cache_format *cache,
                                    long batch, bool with_weights)
{
#define EXCEEDS(n) (memory_of(base, weights, cache, (n), batch, with_weights) > \
                    memory_of(model, weights, cache, (n), batch, with_weights))
    long long hi = 1;
    while (hi < (1LL << 40) && !EXCEEDS(hi))
        hi *= 2;
    if (!EXCEEDS(hi))
        return -1;
    long long lo = hi / 2; /* !EXCEEDS(lo) unless hi == 1 */
    if (hi == 1)
        return 1;
    while (hi - lo > 1) {
        long long mid = lo + (hi - lo) / 2;
        if (EXCEEDS(mid))
            hi = mid;
        else
            lo = mid;
    }
    return hi;
#undef EXCEEDS
}

#define CROSS_POINTS 64

typedef struct series {
    long ctx[CROSS_POINTS];
    double ms[CROSS_POINTS];
    size_t count;
    size_t untrusted; /* of them not a finding (row_untrusted) */
    size_t fall;      /* decode: the first point whose step is more than MODEL_STEP_FALL
                       * below the one before it (0: none) */
} series;

/* More tokens held never make a decode step less work: a step more than this fraction
 * faster at a longer context means the machine moved between the two measurements (a VM's
 * bandwidth and clock drift by 2x between minutes), and a crossover drawn over that
 * series is not a finding. */
#define MODEL_STEP_FALL 0.05

/* Two steps (or times to the first token) within this fraction of each other are a tie:
 * the same model's unit measured in two minutes of this VM differs by more, so a side
 * drawn from a smaller gap would be the minute's, not the model's. */
#define MODEL_TIE 0.05

static bool tied(double m, double b)
{
    return fabs(log(m / b)) < log1p(MODEL_TIE);
}

static void find_fall(series *s)
{
    s->fall = 0;
    for (size_t i = 1; i < s->count && s->fall == 0; i++)
        if (s->ms[i] < (1.0 - MODEL_STEP_FALL) * s->ms[i - 1])
            s->fall = i;
}

/* A row that is not a finding: measured on a busy machine (disturbed), unsteady passes, or
 * over 100 % of a stream limit (decode) or of a peak (prefill GEMMs) that was itself
 * measured in disturbed minutes. */
static bool row_untrusted(const lm_csv *c, size_t r)
{
    return strcmp(cell(c, r, "disturbed"), "1") == 0 ||
           lm_unsteady(atof(cell(c, r, "min_s")), atof(cell(c, r, "median_s")),
                       atof(cell(c, r, "p75_s"))) ||
           atof(cell(c, r, "stream_frac")) > 1.0 || atof(cell(c, r, "gemm_peak_frac")) > 1.0;
}

/* The rows of (model, threads, batch) of one phase in context (prompt) order: decode
 * steps' ms_per_token, or prefills' time to the first token. */
static void gather(const lm_csv *c, bool prefill, const char *model, const char *threads,
                   const char *batch, const char *cache, const char *weights, series *s)
{
    s->count = s->untrusted = s->fall = 0;
    for (size_t r = 0; r < c->rows && s->count < CROSS_POINTS; r++) {
        if (is_prefill(c, r) != prefill || strcmp(cell(c, r, "model"), model) != 0 || strcmp(cell(c, r, "threads"), threads) != 0 ||
            strcmp(cell(c, r, "batch"), batch) != 0 || strcmp(cell(c, r, "cache"), cache) != 0 ||
            strcmp(cell(c, r, "weights"), weights) != 0)
            continue;
        s->untrusted += row_untrusted(c, r);
        size_t at = s->count++;
        long ctx = atol(cell(c, r, "n_ctx"));
        double ms = atof(cell(c, r, prefill ? "ttft_ms" : "ms_per_token"));
        while (at > 0 && s->ctx[at - 1] > ctx) { /* insertion in context order */
            s->ctx[at] = s->ctx[at - 1];
            s->ms[at] = s->ms[at - 1];
            at--;
        }
        s->ctx[at] = ctx;
        s->ms[at] = ms;
    }
    if (!prefill)
        find_fall(s);
}

static const char *const cross_columns[] = {
    "run_id", "timestamp", "git_rev", "host", "cpu_model", "isa", "threads", "batch", "model",
    "baseline", "cache", "weights", "phase", "verdict", "nstar_ctx", "lower_ctx",
    "lower_model_ms", "lower_baseline_ms", "upper_ctx", "upper_model_ms", "upper_baseline_ms",
    "memory_nstar_cache", "memory_nstar_total", "trust"};
#define CROSS_COLUMNS (sizeof cross_columns / sizeof cross_columns[0])

typedef struct crossing {
    const char *verdict;
    double nstar;
    long lo_ctx, hi_ctx;
    double lo_m, lo_b, hi_m, hi_b;
} crossing;

/* Model m against baseline b at the contexts both hold. */
static void cross(const series *m, const series *b, crossing *x)
{
    memset(x, 0, sizeof *x);
    x->nstar = (double)NAN;
    long ctx[CROSS_POINTS];
    double mm[CROSS_POINTS], bb[CROSS_POINTS];
    size_t n = 0;
    for (size_t i = 0; i < m->count; i++)
        for (size_t j = 0; j < b->count; j++)
            if (m->ctx[i] == b->ctx[j]) {
                ctx[n] = m->ctx[i];
                mm[n] = m->ms[i];
                bb[n++] = b->ms[j];
            }
    x->verdict = "no_common_ctx";
    if (n == 0)
        return;
    size_t ties = 0;
    while (ties < n && tied(mm[ties], bb[ties]))
        ties++;
    if (ties == n) { /* within MODEL_TIE at every common context: the longest one given */
        x->verdict = "tie";
        x->lo_ctx = ctx[n - 1];
        x->lo_m = mm[n - 1];
        x->lo_b = bb[n - 1];
        return;
    }
    /* the first context where the model's side (faster or not) differs from the first's */
    const bool faster0 = mm[0] < bb[0];
    size_t i = 1;
    while (i < n && (mm[i] < bb[i]) == faster0)
        i++;
    if (i == n && faster0) {
        x->verdict = "faster_at_every_ctx";
        x->hi_ctx = ctx[0];
        x->hi_m = mm[0];
        x->hi_b = bb[0];
        return;
    }
    if (i == n) {
        x->verdict = "slower_at_every_ctx";
        x->lo_ctx = ctx[n - 1];
        x->lo_m = mm[n - 1];
        x->lo_b = bb[n - 1];
        return;
    }
    /* crossed: slower up to lo, faster from hi; faster_below: faster up to lo, slower from hi
     * (a model whose step grows faster with the context than the baseline's) */
    x->verdict = faster0 ? "faster_below" : "crossed";
    x->lo_ctx = ctx[i - 1];
    x->lo_m = mm[i - 1];
    x->lo_b = bb[i - 1];
    x->hi_ctx = ctx[i];
    x->hi_m = mm[i];
    x->hi_b = bb[i];
    double r0 = log(x->lo_m / x->lo_b), r1 = log(x->hi_m / x->hi_b); /* opposite signs */
    double f = r0 / (r0 - r1);
    x->nstar = exp(log((double)x->lo_ctx) + f * (log((double)x->hi_ctx) - log((double)x->lo_ctx)));
}

static const lm_model_spec *find_spec(const lm_model_spec *specs, size_t count, const char *name)
{
    for (size_t i = 0; i < count; i++)
        if (strcmp(specs[i].name, name) == 0)
            return &specs[i];
    return NULL;
}

lm_status lm_model_crossover_write(const lm_model_table *t, const lm_model_spec *specs,
                                   size_t count, const char *baseline, lm_weight_dtype weights,
                                   const lm_cache_format *cache, const char *path,
                                   const lm_machine_meta *meta, FILE *out, lm_error *err)
{
    const lm_model_spec *base = find_spec(specs, count, baseline);
    if (base == NULL || count < 2)
        return LM_OK; /* nothing to cross */
    lm_csv table;
    lm_status st = lm_csv_init(&table, cross_columns, CROSS_COLUMNS, err);
    if (st != LM_OK)
        return st;
    const char *wname = lm_weight_dtype_name(weights);
    for (int ph = 0; ph < 2 && st == LM_OK; ph++) {
        const bool prefill = ph == 1;
        size_t base_rows = 0;
        for (size_t r = 0; r < t->csv.rows; r++)
            base_rows += is_prefill(&t->csv, r) == prefill && strcmp(cell(&t->csv, r, "model"), baseline) == 0;
        if (base_rows == 0 && (prefill || t->csv.rows > 0))
            continue; /* no rows of the phase (an empty table still shows the decode header) */
        if (prefill)
            fprintf(out, "| model vs %s | threads | batch | prefill n* | bracket (prompt: model / "
                         "baseline TTFT ms) | memory n* caches | memory n* with weights | trust |\n"
                         "|---|---:|---:|---|---|---:|---:|---|\n",
                    baseline);
        else
            fprintf(out, "| model vs %s | threads | batch | decode n* | bracket (ctx: model / baseline ms) | "
                         "memory n* caches | memory n* with weights | trust |\n"
                         "|---|---:|---:|---|---|---:|---:|---|\n",
                    baseline);
        lm_key_set seen = {0};
        for (size_t r = 0; r < t->csv.rows && st == LM_OK; r++) {
            const lm_csv *c = &t->csv;
            if (is_prefill(c, r) != prefill || strcmp(cell(c, r, "model"), baseline) != 0)
                continue;
            const char *threads = cell(c, r, "threads"), *batch = cell(c, r, "batch");
            const char *pair[2] = {threads, batch};
            char *k = lm_key_join(pair, 2);
            int fresh = k != NULL ? lm_key_set_add(&seen, k) : -1;
            free(k);
            if (fresh <= 0)
                continue;
            series sb;
            gather(c, prefill, baseline, threads, batch, cache->name, wname, &sb);
            for (size_t m = 0; m < count && st == LM_OK; m++) {
                if (&specs[m] == base)
                    continue;
                series sm;
                gather(c, prefill, specs[m].name, threads, batch, cache->name, wname, &sm);
                crossing x;
                cross(&sm, &sb, &x);
                long long mem_c = lm_model_memory_crossover(&specs[m], base, weights, cache, atol(batch), false);
                long long mem_t = lm_model_memory_crossover(&specs[m], base, weights, cache, atol(batch), true);
                char v[10][32], trust[192] = "ok";
                const size_t behind = sm.count + sb.count;
                const series *fell = sb.fall ? &sb : sm.fall ? &sm : NULL;
                const size_t bad = sm.untrusted + sb.untrusted + (fell != NULL);
                if (sm.untrusted + sb.untrusted > 0)
                    snprintf(trust, sizeof trust, "not a finding: %zu of %zu rows busy, unsteady or "
                             "over the %s", sm.untrusted + sb.untrusted, behind,
                             prefill ? "peak" : "stream");
                else if (fell != NULL)
                    snprintf(trust, sizeof trust, "not a finding: %s's step falls from %.2f to "
                             "%.2f ms between %ld and %ld tokens (the machine moved)",
                             fell == &sb ? baseline : specs[m].name, fell->ms[fell->fall - 1],
                             fell->ms[fell->fall], fell->ctx[fell->fall - 1], fell->ctx[fell->fall]);
                snprintf(v[0], 32, "%.0f", x.nstar);
                snprintf(v[1], 32, "%ld", x.lo_ctx);
                fmt(v[2], x.lo_m);
                fmt(v[3], x.lo_b);
                snprintf(v[4], 32, "%ld", x.hi_ctx);
                fmt(v[5], x.hi_m);
                fmt(v[6], x.hi_b);
                snprintf(v[7], 32, "%lld", mem_c);
                snprintf(v[8], 32, "%lld", mem_t);
                const char *cells[CROSS_COLUMNS] = {
                    meta->run_id, meta->timestamp, meta->git_rev, meta->host, meta->cpu_model,
                    cell(c, r, "isa"), threads, batch, specs[m].name, baseline, cache->name, wname,
                    prefill ? "prefill" : "decode", x.verdict, isnan(x.nstar) ? "" : v[0], x.lo_ctx ? v[1] : "", x.lo_ctx ? v[2] : "",
                    x.lo_ctx ? v[3] : "", x.hi_ctx ? v[4] : "", x.hi_ctx ? v[5] : "",
                    x.hi_ctx ? v[6] : "", mem_c >= 0 ? v[7] : "", mem_t >= 0 ? v[8] : "",
                    bad > 0 ? "not_a_finding" : "ok"};
                st = lm_csv_append(&table, cells, err);
                char bracket[128] = "";
                if (x.lo_ctx)
                    snprintf(bracket, sizeof bracket, "%ld: %.2f / %.2f", x.lo_ctx, x.lo_m, x.lo_b);
                if (x.hi_ctx)
                    snprintf(bracket + strlen(bracket), sizeof bracket - strlen(bracket), "%s%ld: %.2f / %.2f",
                             x.lo_ctx ? " .. " : "", x.hi_ctx, x.hi_m, x.hi_b);
                fprintf(out, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", specs[m].name, threads,
                        batch, !isnan(x.nstar) ? v[0] : strcmp(x.verdict, "tie") == 0 ? "tie (within 5 %)" : x.verdict, bracket, mem_c >= 0 ? v[7] : "none",
                        mem_t >= 0 ? v[8] : "none", trust);
            }
        }
        lm_key_set_free(&seen);
        fprintf(out, "\n");
    }
    if (st == LM_OK)
        st = lm_csv_write_atomic(&table, path, err);
    lm_csv_free(&table);
    return st;
}

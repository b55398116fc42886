/* `longmix compare`: joining two results tables by configuration and the regression rule
 * (compare.h states it; docs/benchmarks.md "Comparing two runs" explains it). */
#include "compare.h"

#include "bench.h"
#include "utest.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *lm_compare_verdict_name(lm_compare_verdict verdict)
{
    static const char *const names[LM_COMPARE_VERDICTS] = {
        "same", "faster", "slower", "failed", "untested", "base_only", "new_only"};
    return verdict < LM_COMPARE_VERDICTS ? names[verdict] : "unknown";
}

/* A configuration key and the row holding it, for sorting and lookup. */
typedef struct keyed_row {
    char *key; /* lm_csv_row_key (malloc'd) */
    size_t row;
} keyed_row;

/* One input table and the columns the rule reads (-1 when absent). */
typedef struct side {
    const lm_csv *csv;
    const char *name;
    int cpu, status, median, frac, gflops, reps, times, cpu_times, note;
    keyed_row *sorted; /* {csv->rows}, by key */
} side;

static void free_side(side *s)
{
    for (size_t r = 0; s->sorted != NULL && r < s->csv->rows; r++)
        free(s->sorted[r].key);
    free(s->sorted);
}

static int compare_keyed(const void *a, const void *b)
{
    return strcmp(((const keyed_row *)a)->key, ((const keyed_row *)b)->key);
}

static long line_of(size_t row) { return (long)row + 2; } /* line 1 is the header */

/* Column indices, the rows sorted by key, and no configuration twice. */
static lm_status open_side(side *s, const lm_csv *csv, const char *name, lm_error *err)
{
    memset(s, 0, sizeof *s);
    s->csv = csv;
    s->name = name;
    lm_status st = lm_csv_check_results_header(csv, name, err);
    if (st != LM_OK)
        return st;
    if (csv->rows == 0)
        return lm_fail(err, LM_ERR_SCHEMA, "%s holds no result rows", name);
    s->cpu = lm_csv_column(csv, "cpu_model");
    s->status = lm_csv_column(csv, "status");
    s->median = lm_csv_column(csv, "median_s");
    s->frac = lm_csv_column(csv, "roofline_frac");
    s->gflops = lm_csv_column(csv, "gflops");
    s->reps = lm_csv_column(csv, "reps");
    s->times = lm_csv_column(csv, LM_RESULTS_REP_TIMES);
    s->cpu_times = lm_csv_column(csv, LM_RESULTS_REP_CPU);
    s->note = lm_csv_column(csv, "note");
    s->sorted = calloc(csv->rows, sizeof *s->sorted);
    if (s->sorted == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory indexing %s", name);
    for (size_t r = 0; r < csv->rows; r++) {
        s->sorted[r].key = lm_csv_row_key(csv, r);
        s->sorted[r].row = r;
        if (s->sorted[r].key == NULL)
            return lm_fail(err, LM_ERR_NOMEM, "out of memory indexing %s", name);
    }
    qsort(s->sorted, csv->rows, sizeof *s->sorted, compare_keyed);
    for (size_t i = 1; i < csv->rows; i++)
        if (strcmp(s->sorted[i - 1].key, s->sorted[i].key) == 0) {
            size_t a = s->sorted[i - 1].row, b = s->sorted[i].row;
            return lm_fail(err, LM_ERR_SCHEMA,
                           "%s: lines %ld and %ld measure the same configuration (%s); compare "
                           "needs one row per configuration",
                           name, line_of(a < b ? a : b), line_of(a < b ? b : a),
                           s->sorted[i].key);
        }
    return LM_OK;
}

/* The row of `key` in s, or SIZE_MAX. */
static size_t find_row(const side *s, const char *key)
{
    keyed_row probe = {(char *)(uintptr_t)key, 0};
    const keyed_row *hit =
        bsearch(&probe, s->sorted, s->csv->rows, sizeof *s->sorted, compare_keyed);
    return hit != NULL ? hit->row : SIZE_MAX;
}

static const char *cell(const side *s, size_t row, int column)
{
    return column >= 0 ? s->csv->cells[row][column] : "";
}

/* Every row of each side shares one CPU model, and (unless force) both sides the same. */
static lm_status check_cpus(const side *b, const side *n, bool force, lm_compare_result *res,
                            lm_error *err)
{
    const side *sides[2] = {b, n};
    char *names[2] = {res->base_cpu, res->new_cpu};
    for (int k = 0; k < 2; k++) {
        const side *s = sides[k];
        snprintf(names[k], sizeof res->base_cpu, "%s", cell(s, 0, s->cpu));
        for (size_t r = 1; r < s->csv->rows && !force; r++)
            if (strcmp(cell(s, r, s->cpu), cell(s, 0, s->cpu)) != 0)
                return lm_fail(err, LM_ERR_SCHEMA,
                               "%s mixes CPU models ('%s' on line 2, '%s' on line %ld); pass "
                               "--force to compare anyway",
                               s->name, cell(s, 0, s->cpu), cell(s, r, s->cpu), line_of(r));
    }
    if (!force && strcmp(res->base_cpu, res->new_cpu) != 0)
        return lm_fail(err, LM_ERR_SCHEMA,
                       "%s was measured on '%s' and %s on '%s': timings of different CPU models "
                       "do not compare (pass --force to compare them anyway)",
                       b->name, res->base_cpu, n->name, res->new_cpu);
    return LM_OK;
}

/* A finite number filling the whole cell. */
static bool parse_real(const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end != '\0' || !isfinite(v))
        return false;
    *out = v;
    return true;
}

static lm_status bad_cell(const side *s, size_t row, const char *column, const char *rule,
                          lm_error *err)
{
    int c = lm_csv_column(s->csv, column);
    return lm_fail(err, LM_ERR_PARSE, "%s:%ld: %s '%.60s' %s", s->name, line_of(row), column,
                   cell(s, row, c), rule);
}

/* The repetition times of a row in `column` (rep_times_s or rep_cpu_s): {*count} into
 * times {LM_BENCH_KEPT_REPS}. *count = 0 when the file has no such column or the cell is
 * empty. A count that disagrees with reps (all of them, or LM_BENCH_KEPT_REPS of more) is
 * a malformed row. */
static lm_status read_times(const side *s, size_t row, int column, double *times,
                            size_t *count, lm_error *err)
{
    *count = 0;
    const char *name = s->csv->header[column >= 0 ? column : 0];
    const char *text = cell(s, row, column);
    if (text[0] == '\0')
        return LM_OK;
    char item[64];
    for (const char *p = text;;) {
        size_t len = strcspn(p, ";");
        double v;
        snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), p);
        if (*count == LM_BENCH_KEPT_REPS || len >= sizeof item || !parse_real(item, &v) ||
            !(v > 0.0))
            return bad_cell(s, row, name, "must be at most 64 positive times separated by ';'",
                            err);
        times[(*count)++] = v;
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    double reps;
    if (!parse_real(cell(s, row, s->reps), &reps) || reps < 1.0 || reps != floor(reps))
        return bad_cell(s, row, "reps", "must be a positive integer", err);
    double want = reps < LM_BENCH_KEPT_REPS ? reps : LM_BENCH_KEPT_REPS;
    if ((double)*count != want)
        return lm_fail(err, LM_ERR_PARSE, "%s:%ld: %s holds %zu times where reps is %.0f",
                       s->name, line_of(row), name, *count, reps);
    return LM_OK;
}

/* "kernel isa t1 dtype name=value ..." from the key columns, zeros left out. */
static void make_label(const side *s, size_t row, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t k = 0; k < LM_RESULTS_KEY_COLUMNS && used < size; k++) {
        const char *name = lm_results_key_columns[k];
        const char *v = cell(s, row, lm_csv_column(s->csv, name));
        int n;
        if (strcmp(name, "kernel") == 0 || strcmp(name, "isa") == 0 || strcmp(name, "dtype") == 0)
            n = snprintf(out + used, size - used, "%s%s", used ? " " : "", v);
        else if (strcmp(name, "threads") == 0)
            n = snprintf(out + used, size - used, " t%s", v);
        else if (strcmp(v, "0") != 0 && v[0] != '\0')
            n = snprintf(out + used, size - used, " %s=%s", name, v);
        else
            n = 0;
        used += n > 0 ? (size_t)n : 0;
    }
}

/* The medians the ratio divides: median_s of each row (wall), or the median of each row's
 * CPU times. With cpu_time and no CPU times on a side, the row is untested (ratio 0). */
static lm_status medians(const side *b, size_t rb, const double *tb, size_t nb, const side *n,
                         size_t rn, const double *tn, size_t nn, bool cpu_time,
                         lm_compare_row *row, lm_error *err)
{
    if (cpu_time) {
        double sorted[LM_BENCH_KEPT_REPS];
        if (nb == 0 || nn == 0) {
            row->verdict = LM_COMPARE_UNTESTED;
            snprintf(row->reason, sizeof row->reason, "no CPU times (%s) in %s",
                     LM_RESULTS_REP_CPU, nb == 0 ? b->name : n->name);
            return LM_OK;
        }
        memcpy(sorted, tb, nb * sizeof *sorted);
        row->base_median = lm_summarize(sorted, nb).median;
        memcpy(sorted, tn, nn * sizeof *sorted);
        row->new_median = lm_summarize(sorted, nn).median;
    } else {
        if (!parse_real(cell(b, rb, b->median), &row->base_median) || !(row->base_median > 0.0))
            return bad_cell(b, rb, "median_s", "must be a positive number of seconds", err);
        if (!parse_real(cell(n, rn, n->median), &row->new_median) || !(row->new_median > 0.0))
            return bad_cell(n, rn, "median_s", "must be a positive number of seconds", err);
    }
    row->ratio = row->new_median / row->base_median;
    return LM_OK;
}

/* The attainable rate of a row under its same-run roofline (gflops / roofline_frac), or 0
 * when the row has none (a sweep with --no-roofline, a row of no flops). */
static double attainable(const side *s, size_t row)
{
    double g, f;
    if (!parse_real(cell(s, row, s->gflops), &g) || !parse_real(cell(s, row, s->frac), &f) ||
        !(g > 0.0) || !(f > 0.0))
        return 0.0;
    return g / f;
}

/* The smallest equal sample size whose best one-sided p is below alpha. */
static size_t reps_needed(double alpha)
{
    size_t r = 2;
    while (r < LM_BENCH_KEPT_REPS && lm_utest_min_p(r, r) >= alpha)
        r++;
    return r;
}

/* The U tests of a pair with both sides' repetition times. */
static lm_status test_pair(const double *base, size_t nb, const double *new_, size_t nn,
                           lm_compare_row *row, lm_error *err)
{
    double scaled[LM_BENCH_KEPT_REPS];
    lm_utest t;
    for (size_t i = 0; i < nn; i++)
        scaled[i] = new_[i] / row->allowed;
    lm_status s = lm_utest_run(scaled, nn, base, nb, &t, err);
    row->p_slower = t.p_greater;
    row->exact = t.exact;
    for (size_t i = 0; i < nn && s == LM_OK; i++)
        scaled[i] = new_[i] * row->allowed_fast;
    if (s == LM_OK)
        s = lm_utest_run(scaled, nn, base, nb, &t, err);
    row->p_faster = t.p_less;
    row->exact = row->exact && t.exact;
    return s;
}

/* Judges one configuration present in both tables. */
static lm_status judge(const side *b, size_t rb, const side *n, size_t rn,
                       const lm_compare_options *o, lm_compare_row *row, lm_error *err)
{
    const char *status_new = cell(n, rn, n->status), *status_base = cell(b, rb, b->status);
    if (strcmp(status_new, "ok") != 0) {
        row->verdict = LM_COMPARE_FAILED;
        snprintf(row->reason, sizeof row->reason, "status '%s' in %s: %.180s", status_new,
                 n->name, cell(n, rn, n->note));
        return LM_OK;
    }
    if (strcmp(status_base, "ok") != 0) {
        row->verdict = LM_COMPARE_UNTESTED;
        snprintf(row->reason, sizeof row->reason, "the baseline row has status '%s'",
                 status_base);
        return LM_OK;
    }
    double tb[LM_BENCH_KEPT_REPS], tn[LM_BENCH_KEPT_REPS];
    lm_status s = read_times(b, rb, o->cpu_time ? b->cpu_times : b->times, tb, &row->base_reps,
                             err);
    if (s == LM_OK)
        s = read_times(n, rn, o->cpu_time ? n->cpu_times : n->times, tn, &row->new_reps, err);
    if (s == LM_OK)
        s = medians(b, rb, tb, row->base_reps, n, rn, tn, row->new_reps, o->cpu_time, row, err);
    if (s != LM_OK || row->ratio == 0.0)
        return s; /* untested: a side has no CPU times */
    double ab = attainable(b, rb), an = attainable(n, rn);
    row->machine = o->use_roofline && ab > 0.0 && an > 0.0 ? ab / an : 0.0;
    double m = row->machine > 0.0 ? row->machine : 1.0;
    row->allowed = (1.0 + o->max_slowdown) * fmax(1.0, m);
    row->allowed_fast = (1.0 + o->max_slowdown) * fmax(1.0, 1.0 / m);
    row->verdict = LM_COMPARE_UNTESTED;
    if (row->base_reps == 0 || row->new_reps == 0) {
        snprintf(row->reason, sizeof row->reason, "no repetition times (%s) in %s",
                 LM_RESULTS_REP_TIMES, row->base_reps == 0 ? b->name : n->name);
        return LM_OK;
    }
    double best = lm_utest_min_p(row->base_reps, row->new_reps);
    if (best >= o->alpha) {
        snprintf(row->reason, sizeof row->reason,
                 "%zu vs %zu repetitions cannot reach p < %g (at best %.3g): measure with "
                 "--reps %zu or more",
                 row->base_reps, row->new_reps, o->alpha, best, reps_needed(o->alpha));
        return LM_OK;
    }
    s = test_pair(tb, row->base_reps, tn, row->new_reps, row, err);
    if (s != LM_OK)
        return s;
    if (row->ratio > row->allowed && row->p_slower < o->alpha)
        row->verdict = LM_COMPARE_SLOWER;
    else if (row->ratio * row->allowed_fast < 1.0 && row->p_faster < o->alpha)
        row->verdict = LM_COMPARE_FASTER;
    else
        row->verdict = LM_COMPARE_SAME;
    return LM_OK;
}

static void start_row(lm_compare_row *row, const side *s, size_t r)
{
    memset(row, 0, sizeof *row);
    row->key = lm_csv_row_key(s->csv, r);
    make_label(s, r, row->label, sizeof row->label);
    snprintf(row->kernel, sizeof row->kernel, "%s",
             cell(s, r, lm_csv_column(s->csv, "kernel")));
    row->p_slower = row->p_faster = -1.0;
}

/* The first row's isa cell of a side ("" when the column is absent). */
static const char *first_isa(const side *s)
{
    const int isa = lm_csv_column(s->csv, "isa");
    return isa < 0 ? "" : s->csv->cells[0][isa];
}

/* Why two tables share no configuration: another ISA path (a build that gained a tier), or
 * another grid. */
static lm_status no_common_row(const side *b, const side *n, lm_error *err)
{
    const char *bi = first_isa(b), *ni = first_isa(n);
    if (strcmp(bi, ni) != 0)
        return lm_fail(err, LM_ERR_SCHEMA,
                       "no configuration of %s is in %s: %s ran the %s path, %s the %s path "
                       "(the isa is part of the key); measure the baseline again with this "
                       "build (scripts/ci-gate.sh --update-baseline) or pin the path with --isa",
                       n->name, b->name, n->name, ni, b->name, bi);
    return lm_fail(err, LM_ERR_SCHEMA,
                   "no configuration of %s is in %s (the key is kernel, isa, threads, dtype, "
                   "bits, n_ctx, chunk, heads, kv_heads, head_dim, d_inner, d_state, batch, "
                   "disc): were they sweeps of different grids?",
                   n->name, b->name);
}

static lm_status join(const side *b, const side *n, const lm_compare_options *o,
                      lm_compare_result *res, lm_error *err)
{
    size_t common = 0;
    for (size_t r = 0; r < b->csv->rows; r++) {
        lm_compare_row *row = &res->rows[res->count++];
        start_row(row, b, r);
        if (row->key == NULL)
            return lm_fail(err, LM_ERR_NOMEM, "out of memory joining %s", b->name);
        row->base_line = line_of(r);
        size_t rn = find_row(n, row->key);
        if (rn == SIZE_MAX) {
            row->verdict = LM_COMPARE_BASE_ONLY;
            continue;
        }
        row->new_line = line_of(rn);
        common++;
        lm_status s = judge(b, r, n, rn, o, row, err);
        if (s != LM_OK)
            return s;
    }
    for (size_t r = 0; r < n->csv->rows; r++) {
        char *key = lm_csv_row_key(n->csv, r);
        if (key == NULL)
            return lm_fail(err, LM_ERR_NOMEM, "out of memory joining %s", n->name);
        const bool in_base = find_row(b, key) != SIZE_MAX;
        free(key);
        if (in_base)
            continue;
        lm_compare_row *row = &res->rows[res->count++];
        start_row(row, n, r);
        if (row->key == NULL)
            return lm_fail(err, LM_ERR_NOMEM, "out of memory joining %s", n->name);
        row->new_line = line_of(r);
        row->verdict = LM_COMPARE_NEW_ONLY;
    }
    if (common == 0)
        return no_common_row(b, n, err);
    for (size_t i = 0; i < res->count; i++)
        res->counts[res->rows[i].verdict]++;
    return LM_OK;
}

lm_status lm_compare_results(const lm_csv *base, const char *base_name, const lm_csv *new_,
                             const char *new_name, const lm_compare_options *options,
                             lm_compare_result *result, lm_error *err)
{
    memset(result, 0, sizeof *result);
    if (!(options->max_slowdown > 0.0) || !isfinite(options->max_slowdown))
        return lm_fail(err, LM_ERR_ARG, "the allowed slowdown must be a positive percentage");
    if (!(options->alpha > 0.0 && options->alpha < 1.0))
        return lm_fail(err, LM_ERR_ARG, "alpha must lie in (0, 1), got %g", options->alpha);
    side b = {0}, n = {0};
    lm_status s = open_side(&b, base, base_name, err);
    if (s == LM_OK)
        s = open_side(&n, new_, new_name, err);
    if (s == LM_OK)
        s = check_cpus(&b, &n, options->force, result, err);
    if (s == LM_OK) {
        result->base_rows = base->rows;
        result->new_rows = new_->rows;
        result->rows = calloc(base->rows + new_->rows, sizeof *result->rows);
        if (result->rows == NULL)
            s = lm_fail(err, LM_ERR_NOMEM, "out of memory comparing %s and %s", base_name,
                        new_name);
    }
    if (s == LM_OK)
        s = join(&b, &n, options, result, err);
    free_side(&b);
    free_side(&n);
    if (s != LM_OK)
        lm_compare_free(result);
    return s;
}

void lm_compare_free(lm_compare_result *result)
{
    for (size_t i = 0; result->rows != NULL && i < result->count; i++)
        free(result->rows[i].key);
    free(result->rows);
    memset(result, 0, sizeof *result);
}

/* Measurement harness: results CSV (columns, quoting, atomic writes, reading back, merge),
 * option lists and shards, order statistics, the bench registry's checks. */
#include "../harness/bench.h"
#include "../harness/csv.h"
#include "../harness/results.h"
#include "../harness/opts.h"
#include "../harness/progress.h"
#include "../harness/stats.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *field_text(const char *field)
{
    char *buffer = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&buffer, &size);
    lm_csv_write_field(out, field);
    fclose(out);
    return buffer;
}

Test(meas, csv_quotes_only_what_needs_it)
{
    const char *cases[][2] = {
        {"plain", "plain"},
        {"a,b", "\"a,b\""},
        {"say \"hi\"", "\"say \"\"hi\"\"\""},
        {"two\nlines", "\"two\nlines\""},
        {" padded", "\" padded\""},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = field_text(cases[i][0]);
        cr_assert_str_eq(got, cases[i][1], "field %zu", i);
        free(got);
    }
}

Test(meas, results_header_is_exactly_the_design_columns)
{
    /* docs/benchmarks.md "The results CSV", verbatim. */
    static const char *design =
        "run_id, timestamp, git_rev, host, cpu_model, isa, threads, kernel, dtype, bits, n_ctx, "
        "chunk, heads, kv_heads, head_dim, d_inner, d_state, batch, reps, median_s, min_s, "
        "p25_s, p75_s, gflops, gbps, roofline_frac, checksum, status";
    char joined[1024] = "";
    for (int c = 0; c < LM_RESULTS_REQUIRED; c++) {
        strcat(joined, c ? ", " : "");
        strcat(joined, lm_results_columns[c]);
    }
    cr_assert_str_eq(joined, design);
}

static char *scratch_dir(void)
{
    char *dir = strdup("/tmp/longmix-meas-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static size_t entries_in(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) /* dot files too: temp files are */
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

Test(meas, csv_roundtrip_is_atomic_and_exact)
{
    char *dir = scratch_dir(), path[256];
    snprintf(path, sizeof path, "%s/r.csv", dir);
    const char *header[] = {"a", "b", "c"};
    const char *row1[] = {"1", "x,y", "he said \"no\""};
    const char *row2[] = {"", "multi\nline", " lead"};
    lm_csv csv, back;
    lm_error err;
    cr_assert_eq(lm_csv_init(&csv, header, 3, &err), LM_OK);
    cr_assert_eq(lm_csv_append(&csv, row1, &err), LM_OK);
    cr_assert_eq(lm_csv_append(&csv, row2, &err), LM_OK);
    cr_assert_eq(lm_csv_write_atomic(&csv, path, &err), LM_OK, "%s", err.message);
    cr_assert_eq(entries_in(dir), 1, "the temp file was renamed, not left behind");
    cr_assert_eq(lm_csv_read(&back, path, &err), LM_OK, "%s", err.message);
    cr_assert_eq(back.rows, 2);
    cr_assert_eq(back.columns, 3);
    for (size_t c = 0; c < 3; c++) {
        cr_assert_str_eq(back.cells[0][c], row1[c]);
        cr_assert_str_eq(back.cells[1][c], row2[c]);
    }
    lm_csv_free(&back);
    lm_csv_free(&csv);
    remove(path);
    rmdir(dir);
    free(dir);
}

Test(meas, csv_write_to_missing_directory_names_the_path)
{
    lm_csv csv;
    lm_error err;
    const char *header[] = {"a"};
    cr_assert_eq(lm_csv_init(&csv, header, 1, &err), LM_OK);
    cr_assert_eq(lm_csv_write_atomic(&csv, "/nonexistent-dir/x.csv", &err), LM_ERR_IO);
    cr_assert(strstr(err.message, "/nonexistent-dir/x.csv") != NULL, "%s", err.message);
    lm_csv_free(&csv);
}

Test(meas, csv_read_rejects_ragged_rows_with_line)
{
    char *dir = scratch_dir(), path[256];
    snprintf(path, sizeof path, "%s/bad.csv", dir);
    FILE *f = fopen(path, "w");
    fputs("a,b\n1,2\n3\n", f);
    fclose(f);
    lm_csv csv;
    lm_error err;
    cr_assert_eq(lm_csv_read(&csv, path, &err), LM_ERR_PARSE);
    cr_assert(strstr(err.message, ":3:") != NULL, "line number in: %s", err.message);
    remove(path);
    rmdir(dir);
    free(dir);
}

Test(meas, quantiles_interpolate_like_numpy)
{
    /* numpy.percentile([4, 1, 3, 2], [25, 50, 75]) == [1.75, 2.5, 3.25] */
    double samples[] = {4.0, 1.0, 3.0, 2.0};
    lm_summary s = lm_summarize(samples, 4);
    cr_assert_float_eq(s.median, 2.5, 1e-15);
    cr_assert_float_eq(s.p25, 1.75, 1e-15);
    cr_assert_float_eq(s.p75, 3.25, 1e-15);
    cr_assert_float_eq(s.min, 1.0, 0.0);
    double one[] = {5.0};
    s = lm_summarize(one, 1);
    cr_assert(s.median == 5.0 && s.p25 == 5.0 && s.p75 == 5.0);
    double odd[] = {9.0, 1.0, 5.0}; /* median of an odd count is the middle value */
    s = lm_summarize(odd, 3);
    cr_assert_float_eq(s.median, 5.0, 0.0);
    cr_assert_float_eq(s.p25, 3.0, 1e-15);
}

Test(meas, size_lists_parse_suffixes_and_ranges)
{
    long v[LM_LIST_MAX];
    size_t n;
    lm_error err;
    cr_assert_eq(lm_parse_size_list("--ctx", "1,2,4", 1, v, &n, &err), LM_OK);
    cr_assert(n == 3 && v[0] == 1 && v[1] == 2 && v[2] == 4);
    cr_assert_eq(lm_parse_size_list("--ctx", "4k,1M", 1, v, &n, &err), LM_OK);
    cr_assert(n == 2 && v[0] == 4096 && v[1] == 1048576);
    cr_assert_eq(lm_parse_size_list("--ctx", "256..2048,5", 1, v, &n, &err), LM_OK);
    cr_assert(n == 5 && v[0] == 256 && v[3] == 2048 && v[4] == 5);
    const char *bad[] = {"", "1,,2", "x", "3,", "8..4", "1.5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(lm_parse_size_list("--ctx", bad[i], 1, v, &n, &err), LM_ERR_ARG, "'%s'",
                     bad[i]);
        cr_assert(strstr(err.message, "--ctx") != NULL, "names the option: %s", err.message);
    }
    cr_assert_eq(lm_parse_size_list("--threads", "0", 1, v, &n, &err), LM_ERR_ARG);
}

Test(meas, thread_lists_know_auto_and_cores)
{
    long v[LM_LIST_MAX];
    size_t n;
    lm_error err;
    cr_assert_eq(lm_parse_thread_list("--threads", "auto", 8, v, &n, &err), LM_OK);
    cr_assert(n == 2 && v[0] == 1 && v[1] == 8);
    cr_assert_eq(lm_parse_thread_list("--threads", "auto", 1, v, &n, &err), LM_OK);
    cr_assert(n == 1 && v[0] == 1, "one core: 1 only once");
    cr_assert_eq(lm_parse_thread_list("--threads", "cores", 6, v, &n, &err), LM_OK);
    cr_assert(n == 1 && v[0] == 6);
    cr_assert_eq(lm_parse_thread_list("--threads", "1..4", 6, v, &n, &err), LM_OK);
    cr_assert(n == 3 && v[2] == 4);
    cr_assert_eq(lm_parse_thread_list("--threads", "0", 6, v, &n, &err), LM_ERR_ARG);
}

Test(meas, isa_and_word_lists)
{
    lm_isa isas[LM_LIST_MAX];
    size_t n;
    lm_error err;
    cr_assert_eq(lm_parse_isa_list("--isa", "scalar", isas, &n, &err), LM_OK);
    cr_assert(n == 1 && isas[0] == LM_ISA_SCALAR);
    cr_assert_eq(lm_parse_isa_list("--isa", "sse9", isas, &n, &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "sse9") != NULL);
    cr_assert_eq(lm_parse_isa_list("--isa", "all", isas, &n, &err), LM_OK);
    cr_assert(n >= 1 && isas[0] == LM_ISA_SCALAR);
    char words[LM_LIST_MAX][32];
    cr_assert_eq(lm_parse_word_list("--kernel", "a,bb", words, &n, &err), LM_OK);
    cr_assert(n == 2 && strcmp(words[1], "bb") == 0);
    cr_assert_eq(lm_parse_word_list("--kernel", "a,", words, &n, &err), LM_ERR_ARG);
}

Test(meas, shards_partition_the_configurations)
{
    int k, n;
    lm_error err;
    cr_assert_eq(lm_parse_shard("2/4", &k, &n, &err), LM_OK);
    cr_assert(k == 2 && n == 4);
    const char *bad[] = {"0/4", "5/4", "a", "2/", "2/4x", "/4"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(lm_parse_shard(bad[i], &k, &n, &err), LM_ERR_ARG, "'%s'", bad[i]);
    /* shard 2/4 of 12 configurations: 1, 5, 9 */
    size_t picked[12], count = 0;
    for (size_t i = 0; i < 12; i++)
        if (lm_shard_selects(i, 2, 4))
            picked[count++] = i;
    cr_assert(count == 3 && picked[0] == 1 && picked[1] == 5 && picked[2] == 9);
    for (size_t i = 0; i < 23; i++) { /* every configuration in exactly one of 3 shards */
        int owners = 0;
        for (int s = 1; s <= 3; s++)
            owners += lm_shard_selects(i, s, 3);
        cr_assert_eq(owners, 1, "configuration %zu", i);
    }
}

static void results_with(lm_csv *csv, const char *cpu, const char *rev, const char *kernel)
{
    lm_machine_meta meta;
    memset(&meta, 0, sizeof meta);
    snprintf(meta.cpu_model, sizeof meta.cpu_model, "%s", cpu);
    snprintf(meta.git_rev, sizeof meta.git_rev, "%s", rev);
    snprintf(meta.run_id, sizeof meta.run_id, "run-1");
    snprintf(meta.timestamp, sizeof meta.timestamp, "2026-12-02T10:00:00Z");
    lm_result_row row = {.kernel = kernel, .isa = "scalar", .dtype = "f32", .status = "ok",
                         .threads = 1, .n_ctx = 64};
    cr_assert_eq(lm_csv_init_results(csv, NULL), LM_OK);
    cr_assert_eq(lm_result_append(csv, &meta, &row, NULL), LM_OK);
}

Test(meas, merge_refuses_mixed_machines_unless_forced)
{
    lm_csv in[3], out;
    lm_error err;
    size_t dropped;
    const char *names[] = {"a.csv", "b.csv", "c.csv"};
    results_with(&in[0], "CPU A", "abc", "k1");
    results_with(&in[1], "CPU A", "abc", "k2");
    results_with(&in[2], "CPU B", "abc", "k1");
    cr_assert_eq(lm_results_merge(in, names, 2, false, &out, &dropped, &err), LM_OK, "%s", err.message);
    cr_assert_eq(out.rows, 2);
    lm_csv_free(&out);
    cr_assert_eq(lm_results_merge(in, names, 3, false, &out, &dropped, &err), LM_ERR_SCHEMA);
    cr_assert(strstr(err.message, "c.csv") && strstr(err.message, "CPU B") &&
                  strstr(err.message, "--force"), "%s", err.message);
    cr_assert_eq(lm_results_merge(in, names, 3, true, &out, &dropped, &err), LM_OK);
    cr_assert_eq(out.rows, 3, "same configuration on two machines stays two rows");
    lm_csv_free(&out);
    /* the same shard twice: duplicates dropped */
    lm_csv twice[2] = {in[0], in[0]};
    cr_assert_eq(lm_results_merge(twice, names, 2, false, &out, &dropped, &err), LM_OK);
    cr_assert_eq(out.rows, 1);
    cr_assert_eq(dropped, 1);
    lm_csv_free(&out);
    for (int i = 0; i < 3; i++)
        lm_csv_free(&in[i]);
}

Test(meas, progress_line_counts_and_estimates)
{
    char line[128];
    lm_progress_format(line, sizeof line, 2, 8, 10.0, "k");
    cr_assert_str_eq(line, "[2/8] k  elapsed 10s  eta 30s");
    lm_progress_format(line, sizeof line, 0, 8, 1.0, "k");
    cr_assert(strstr(line, "eta ?") != NULL, "%s", line);
}

/* ---- the bench registry ---------------------------------------------------------- */

Test(meas, every_registered_case_passes_its_check_at_a_tiny_size)
{
    for (size_t i = 0; i < lm_bench_count(); i++) {
        const lm_bench_case *c = lm_bench_at(i);
        lm_bench_config k;
        lm_bench_default_config(c, &k);
        k.isa = LM_ISA_SCALAR;
        k.n_ctx = k.n_ctx ? 48 : 0;
        k.chunk = k.chunk ? 16 : 0;
        if (k.heads) {
            k.heads = 4, k.kv_heads = 2, k.head_dim = 16;
        }
        if (k.d_inner)
            k.d_inner = 40;
        if (k.d_state)
            k.d_state = 4;
        lm_bench_result r;
        lm_error err;
        cr_assert_eq(lm_bench_measure(c, &k, 2, NULL, &r, &err), LM_OK, "%s: %s", c->name,
                     err.message);
        cr_log_info("%s: err_max %.3g checksum %.6g", c->name, r.err_max, r.checksum);
        cr_assert_eq(r.status, LM_OK, "%s: %s", c->name, r.message);
        cr_assert_eq(r.reps, 2);
        cr_assert(isfinite(r.checksum) && r.err_max >= 0.0, "%s", c->name);
        cr_assert(r.time.min > 0.0 && r.time.min <= r.time.median, "%s", c->name);
        cr_assert(r.flops > 0.0 && r.bytes > 0.0, "%s", c->name);
    }
    cr_assert_not_null(lm_bench_find("gemv_rowdot"));
    cr_assert_null(lm_bench_find("no_such_kernel"));
    /* old sweep names are aliases of the kernel words */
    cr_assert_eq(lm_bench_find("attn_decode_q"), lm_bench_find("kvq_decode"));
    cr_assert_eq(lm_bench_find("affine_scan"), lm_bench_find("scan_affine"));
}

/* A "kernel" that returns garbage must become a failed measurement, not a fast one. */
typedef struct garbage_state {
    float y[4];
} garbage_state;

static lm_status garbage_setup(const lm_bench_config *c, void **state, lm_error *err)
{
    (void)c, (void)err;
    *state = calloc(1, sizeof(garbage_state));
    return LM_OK;
}
static lm_status garbage_run(void *state, const lm_ops *ops, lm_error *err)
{
    (void)ops;
    (void)err;
    ((garbage_state *)state)->y[2] = NAN;
    return LM_OK;
}
static lm_status garbage_check(void *state, const lm_ops *ops, double *checksum, double *err_max,
                          lm_error *err)
{
    (void)ops;
    *checksum = lm_bench_sum_f32(((garbage_state *)state)->y, 4);
    *err_max = -1.0;
    return isfinite(*checksum) ? LM_OK : lm_fail(err, LM_ERR_NUMERIC, "non-finite output");
}
static void garbage_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    (void)c;
    *flops = *bytes = 1.0;
}

Test(meas, garbage_output_is_a_failed_row)
{
    const lm_bench_case garbage = {.name = "garbage", .dtypes = "f32", .setup = garbage_setup,
                                   .run = garbage_run, .check = garbage_check,
                                   .cost = garbage_cost, .teardown = free};
    lm_bench_config k;
    lm_bench_default_config(&garbage, &k);
    lm_bench_result r;
    cr_assert_eq(lm_bench_measure(&garbage, &k, 3, NULL, &r, NULL), LM_OK);
    cr_assert_eq(r.status, LM_ERR_NUMERIC);
    cr_assert(isnan(r.checksum));
    cr_assert(strstr(r.message, "non-finite") != NULL);
}

/* A case that logs the team size of every run, to see lm_bench_measure_set interleave. */
typedef struct order_log {
    int threads[16];
    int runs, teardowns;
} order_log;

static order_log the_log;

static lm_status order_setup(const lm_bench_config *c, void **state, lm_error *err)
{
    if (c->n_ctx < 0) /* the failing member */
        return lm_fail(err, LM_ERR_SHAPE, "n_ctx must not be negative");
    *state = &the_log;
    return LM_OK;
}
static lm_status order_run(void *state, const lm_ops *ops, lm_error *err)
{
    (void)ops;
    (void)err;
    order_log *log = state;
    if (log->runs < 16)
        log->threads[log->runs] = omp_get_max_threads();
    log->runs++;
    /* about 1 ms, so each repetition is one run */
    double start = lm_now();
    while (lm_now() - start < 1.5e-3) {
    }
    return LM_OK;
}
/* a second case: logs 100 + the team size */
static lm_status order_run_other(void *state, const lm_ops *ops, lm_error *err)
{
    order_log *log = state;
    lm_status s = order_run(state, ops, err);
    log->threads[log->runs - 1] += 100;
    return s;
}
static lm_status order_check(void *state, const lm_ops *ops, double *checksum, double *err_max,
                          lm_error *err)
{
    (void)ops;
    (void)state, (void)err;
    *checksum = 1.0;
    *err_max = 0.0;
    return LM_OK;
}
static void order_teardown(void *state) { ((order_log *)state)->teardowns++; }

Test(meas, measure_set_interleaves_the_repetitions_of_its_members)
{
    const lm_bench_case order = {.name = "order", .dtypes = "f32", .setup = order_setup,
                                 .run = order_run, .check = order_check,
                                 .cost = garbage_cost, .teardown = order_teardown};
    lm_bench_config k[2];
    lm_bench_default_config(&order, &k[0]);
    k[1] = k[0];
    k[1].threads = 2;
    lm_bench_result r[2];
    memset(&the_log, 0, sizeof the_log);
    const lm_bench_case *cases[2] = {&order, &order};
    cr_assert_eq(lm_bench_measure_set(cases, k, 2, 3, NULL, r, NULL, NULL), LM_OK);
    /* two warm-ups, then repetition by repetition: 1, 2, 1, 2, 1, 2 */
    static const int want[8] = {1, 2, 1, 2, 1, 2, 1, 2};
    cr_assert_eq(the_log.runs, 8);
    for (int i = 0; i < 8; i++)
        cr_expect_eq(the_log.threads[i], want[i], "run %d on %d threads", i, the_log.threads[i]);
    cr_assert_eq(the_log.teardowns, 2);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(r[i].status, LM_OK);
        cr_assert_eq(r[i].reps, 3);
        cr_assert(r[i].time.min > 1e-3 && r[i].time.min <= r[i].time.median);
    }
    /* a member whose setup fails: the error, its index, the others torn down unmeasured */
    memset(&the_log, 0, sizeof the_log);
    k[1].n_ctx = -1;
    size_t bad = 99;
    lm_error err;
    cr_assert_eq(lm_bench_measure_set(cases, k, 2, 3, NULL, r, &bad, &err), LM_ERR_SHAPE);
    cr_assert_eq(bad, 1);
    cr_assert(strstr(err.message, "n_ctx") != NULL, "%s", err.message);
    cr_assert_eq(the_log.runs, 1); /* member 0's warm-up only */
    cr_assert_eq(the_log.teardowns, 1);
    /* members of different cases interleave alike: 1, 102, 1, 102, ... */
    const lm_bench_case other = {.name = "other", .dtypes = "f32", .setup = order_setup,
                                 .run = order_run_other, .check = order_check,
                                 .cost = garbage_cost, .teardown = order_teardown};
    const lm_bench_case *mixed[2] = {&order, &other};
    k[1].n_ctx = k[0].n_ctx;
    memset(&the_log, 0, sizeof the_log);
    cr_assert_eq(lm_bench_measure_set(mixed, k, 2, 3, NULL, r, NULL, NULL), LM_OK);
    cr_assert_eq(the_log.runs, 8);
    for (int i = 0; i < 8; i++)
        cr_expect_eq(the_log.threads[i], i % 2 ? 102 : 1, "run %d: %d", i, the_log.threads[i]);
}

/* ---- crossover interpolation ---------------------------------------------------- */

#include "../harness/crossover.h"

Test(meas, crossover_interpolates_log_log_between_the_bracket)
{
    /* a(n) = n microseconds against a flat 100: log(a/b) is linear in log n, so the
     * interpolation between 64 and 128 is exact: n* = 100. */
    double n[] = {16, 32, 64, 128, 256}, a[5], b[5];
    for (int i = 0; i < 5; i++)
        a[i] = n[i] * 1e-6, b[i] = 100e-6;
    lm_crossover_point p;
    cr_assert_eq(lm_crossover_find(n, a, b, 5, &p, NULL), LM_OK);
    cr_assert_eq(p.where, 0);
    cr_assert(p.lo == 2 && p.hi == 3);
    cr_assert_float_eq(p.n_star, 100.0, 1e-9);
    /* a quadratic against a linear cost: a = n^2, b = 50 n cross at n = 50 exactly */
    for (int i = 0; i < 5; i++)
        a[i] = n[i] * n[i], b[i] = 50.0 * n[i];
    cr_assert_eq(lm_crossover_find(n, a, b, 5, &p, NULL), LM_OK);
    cr_assert_float_eq(p.n_star, 50.0, 1e-9);
    /* never crossing, and crossed before the grid */
    for (int i = 0; i < 5; i++)
        a[i] = 1.0, b[i] = 2.0;
    cr_assert_eq(lm_crossover_find(n, a, b, 5, &p, NULL), LM_OK);
    cr_assert_eq(p.where, 1);
    cr_assert_eq(lm_crossover_find(n, b, a, 5, &p, NULL), LM_OK);
    cr_assert_eq(p.where, -1);
    b[2] = 0.0;
    cr_assert_eq(lm_crossover_find(n, a, b, 5, &p, NULL), LM_ERR_ARG);
}

/* The regression gate: the Mann-Whitney U test against brute-force enumeration, the
 * repetition times a measurement keeps and writes, and the compare rule on in-memory
 * tables (the CLI cases with constructed CSV files are in tests/cli/t_compare.sh). */
#include "../harness/bench.h"
#include "../harness/compare.h"
#include "../harness/csv.h"
#include "../harness/utest.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* P(U >= u) by enumerating every placement of n x's among the ranks 1..n+m. */
static void brute_force(size_t n, size_t m, unsigned chosen, double *p_ge, double *p_le)
{
    size_t total = n + m;
    double u_obs = -1.0;
    size_t ge = 0, le = 0, count = 0;
    for (unsigned pass = 0; pass < 2; pass++)
        for (unsigned mask = 0; mask < (1u << total); mask++) {
            if ((size_t)__builtin_popcount(mask) != n)
                continue;
            /* U = pairs (x, y) with x's rank above y's */
            double u = 0.0;
            for (size_t i = 0; i < total; i++)
                for (size_t j = 0; j < i; j++)
                    u += ((mask >> i) & 1u) && !((mask >> j) & 1u);
            if (pass == 0 && mask == chosen)
                u_obs = u;
            if (pass == 1) {
                count++;
                ge += u >= u_obs;
                le += u <= u_obs;
            }
        }
    *p_ge = (double)ge / (double)count;
    *p_le = (double)le / (double)count;
}

Test(compare, exact_u_test_matches_enumeration)
{
    for (size_t n = 1; n <= 5; n++)
        for (size_t m = 1; m <= 5; m++)
            for (unsigned mask = 0; mask < (1u << (n + m)); mask++) {
                if ((size_t)__builtin_popcount(mask) != n)
                    continue;
                double x[8], y[8];
                size_t nx = 0, ny = 0;
                for (size_t r = 0; r < n + m; r++) { /* the value of rank r + 1 */
                    if ((mask >> r) & 1u)
                        x[nx++] = 1.0 + 0.5 * (double)r;
                    else
                        y[ny++] = 1.0 + 0.5 * (double)r;
                }
                lm_utest t;
                lm_error err;
                cr_assert_eq(lm_utest_run(x, n, y, m, &t, &err), LM_OK, "%s", err.message);
                double ge, le;
                brute_force(n, m, mask, &ge, &le);
                cr_assert(t.exact);
                cr_assert(fabs(t.p_greater - ge) < 1e-12 && fabs(t.p_less - le) < 1e-12,
                          "n=%zu m=%zu mask=%x: p_greater %.15g vs %.15g, p_less %.15g vs %.15g",
                          n, m, mask, t.p_greater, ge, t.p_less, le);
            }
}

Test(compare, u_test_extremes_and_smallest_p)
{
    const double low[5] = {1.0, 1.1, 1.2, 1.3, 1.4}, high[5] = {2.0, 2.1, 2.2, 2.3, 2.4};
    lm_utest t;
    cr_assert_eq(lm_utest_run(high, 3, low, 3, &t, NULL), LM_OK);
    cr_assert_float_eq(t.u, 9.0, 0.0);
    cr_assert_float_eq(t.p_greater, 1.0 / 20.0, 1e-15); /* 1 / C(6, 3) */
    cr_assert_float_eq(t.p_less, 1.0, 1e-15);
    cr_assert_eq(lm_utest_run(high, 5, low, 5, &t, NULL), LM_OK);
    cr_assert_float_eq(t.p_greater, 1.0 / 252.0, 1e-15); /* 1 / C(10, 5) */
    cr_assert_float_eq(lm_utest_min_p(5, 5), 1.0 / 252.0, 1e-15);
    cr_assert_float_eq(lm_utest_min_p(3, 3), 0.05, 1e-15);
    cr_assert_float_eq(lm_utest_min_p(9, 9), 1.0 / 48620.0, 1e-18);
    cr_assert_eq(lm_utest_run(low, 5, high, 5, &t, NULL), LM_OK);
    cr_assert_float_eq(t.p_less, 1.0 / 252.0, 1e-15);
    cr_assert_float_eq(t.u, 0.0, 0.0);
}

Test(compare, u_test_ties_use_the_corrected_normal_approximation)
{
    const double same[4] = {2.0, 2.0, 2.0, 2.0};
    lm_utest t;
    cr_assert_eq(lm_utest_run(same, 4, same, 4, &t, NULL), LM_OK);
    cr_assert(!t.exact);
    cr_assert_float_eq(t.u, 8.0, 0.0);
    cr_assert(t.p_greater == 1.0 && t.p_less == 1.0);
    /* x = {1, 2, 2, 3}, y = {0, 0, 1, 1}, by hand: x=1 beats two
     * zeros and ties two ones (3); x=2 twice beats all four (8); x=3 beats four (4): 15 */
    const double x[4] = {1.0, 2.0, 2.0, 3.0}, y[4] = {0.0, 0.0, 1.0, 1.0};
    cr_assert_eq(lm_utest_run(x, 4, y, 4, &t, NULL), LM_OK);
    cr_assert_float_eq(t.u, 15.0, 0.0);
    /* ties: groups {0,0}, {1,1,1}, {2,2}: sum t^3 - t = 6 + 24 + 6 = 36; N = 8;
     * var = 16/12 (9 - 36/56) = 11.142857; z = (15 - 8 - 0.5) / sqrt(var) = 1.9472202;
     * p = erfc(z / sqrt 2) / 2 = 0.025754168 */
    double want = 0.025754168;
    cr_assert(fabs(t.p_greater - want) < 1e-6, "p_greater %.9g, want %.9g", t.p_greater, want);
}

Test(compare, u_test_normal_approximation_is_close_to_exact_beyond_64)
{
    /* x shifted above y by 0.15 of the spread, 64 (exact) and 65 (normal) per side */
    double x[65], y[65];
    for (int i = 0; i < 65; i++) {
        x[i] = 1.0 + (double)((i * 37) % 65) / 65.0 + 0.15 + 1e-9 * i;
        y[i] = 1.0 + (double)((i * 29) % 65) / 65.0 + 0.5e-9 * i;
    }
    lm_utest exact, approx;
    cr_assert_eq(lm_utest_run(x, 64, y, 64, &exact, NULL), LM_OK);
    cr_assert_eq(lm_utest_run(x, 65, y, 65, &approx, NULL), LM_OK);
    cr_assert(exact.exact && !approx.exact);
    cr_log_info("p exact(64) %.4g, normal(65) %.4g", exact.p_greater, approx.p_greater);
    cr_assert(exact.p_greater > 1e-4 && exact.p_greater < 0.05);
    cr_assert(fabs(log(approx.p_greater / exact.p_greater)) < 0.5);
}

Test(compare, u_test_rejects_empty_and_nonfinite)
{
    const double x[2] = {1.0, (double)NAN};
    lm_utest t;
    lm_error err;
    cr_assert_eq(lm_utest_run(x, 0, x, 1, &t, &err), LM_ERR_ARG);
    cr_assert_eq(lm_utest_run(x, 2, x, 1, &t, &err), LM_ERR_NONFINITE);
    cr_assert(strstr(err.message, "x[1]") != NULL, "%s", err.message);
}

Test(compare, measurement_keeps_repetition_times_in_order)
{
    const lm_bench_case *c = lm_bench_find("gemv_rowdot");
    lm_bench_config k;
    lm_bench_default_config(c, &k);
    k.isa = LM_ISA_SCALAR, k.n_ctx = 16, k.d_inner = 16;
    lm_bench_result r;
    cr_assert_eq(lm_bench_measure(c, &k, 7, NULL, &r, NULL), LM_OK);
    cr_assert_eq(r.rep_times_count, 7);
    double sorted[7];
    memcpy(sorted, r.rep_times, sizeof sorted);
    lm_summary s = lm_summarize(sorted, 7);
    cr_assert_float_eq(s.median, r.time.median, 0.0); /* the same samples as the summary */
    cr_assert_float_eq(s.min, r.time.min, 0.0);
    for (int i = 0; i < 7; i++) /* one thread: CPU time is the wall time less waiting */
        cr_assert(r.rep_cpu_times[i] > 0.0 && r.rep_cpu_times[i] <= 1.5 * r.rep_times[i] + 1e-4,
                  "rep %d: cpu %.3g s, wall %.3g s", i, r.rep_cpu_times[i], r.rep_times[i]);
    /* more repetitions than kept: 64 of them, evenly spaced */
    cr_assert_eq(lm_bench_measure(c, &k, 130, NULL, &r, NULL), LM_OK);
    cr_assert_eq(r.reps, 130);
    cr_assert_eq(r.rep_times_count, LM_BENCH_KEPT_REPS);
}

/* A results table with the given rows: n_ctx, median and repetition times (';' list). */
static void table(lm_csv *csv, const char *cpu, size_t count, const long *n_ctx,
                  const char *const *times, const double *frac)
{
    lm_machine_meta meta;
    memset(&meta, 0, sizeof meta);
    snprintf(meta.cpu_model, sizeof meta.cpu_model, "%s", cpu);
    cr_assert_eq(lm_csv_init_results(csv, NULL), LM_OK);
    for (size_t i = 0; i < count; i++) {
        double t[16];
        size_t nt = 0;
        for (const char *p = times[i]; *p; p += strcspn(p, ";") + (p[strcspn(p, ";")] == ';'))
            t[nt++] = strtod(p, NULL);
        double sorted[16];
        memcpy(sorted, t, sizeof sorted);
        lm_result_row row = {.kernel = "gemv_rowdot", .isa = "scalar", .dtype = "f32",
                             .status = "ok", .threads = 1, .bits = 32, .n_ctx = n_ctx[i],
                             .d_inner = 16, .batch = 1, .reps = (int)nt, .rep_times = t,
                             .rep_cpu_times = t, .rep_count = nt, .flops = 1e6, .bytes = 1e6};
        row.time = lm_summarize(sorted, nt);
        row.gflops = row.flops / row.time.median * 1e-9;
        row.roofline_frac = row.gflops / frac[i]; /* frac[] holds the attainable GFLOP/s */
        cr_assert_eq(lm_result_append(csv, &meta, &row, NULL), LM_OK);
    }
}

Test(compare, rule_on_tables_slower_same_faster_missing_and_machine)
{
    const long base_n[4] = {1, 2, 3, 4}, new_n[4] = {1, 2, 3, 5};
    const char *base_t[4] = {"1.00;1.01;0.99;1.02;0.98", "1.00;1.01;0.99;1.02;0.98",
                             "1.00;1.01;0.99;1.02;0.98", "1.0;1.0;1.0;1.0;1.0"};
    const char *new_t[4] = {"1.50;1.51;1.49;1.52;1.48",  /* 1.5x slower, same machine */
                            "1.50;1.51;1.49;1.52;1.48",  /* 1.5x slower, machine 1.5x slower */
                            "0.50;0.51;0.49;0.52;0.48",  /* 2x faster */
                            "1.0;1.0;1.0;1.0;1.0"};
    const double base_roof[4] = {10, 10, 10, 10}, new_roof[4] = {10, 10.0 / 1.5, 10, 10};
    lm_csv base, new_;
    table(&base, "cpu A", 4, base_n, base_t, base_roof);
    table(&new_, "cpu A", 4, new_n, new_t, new_roof);
    lm_compare_options o = {.max_slowdown = 0.10, .alpha = 0.05, .use_roofline = true};
    lm_compare_result res;
    lm_error err;
    cr_assert_eq(lm_compare_results(&base, "b.csv", &new_, "n.csv", &o, &res, &err), LM_OK,
                 "%s", err.message);
    cr_assert_eq(res.count, 5);
    cr_assert_eq(res.rows[0].verdict, LM_COMPARE_SLOWER);
    cr_assert_float_eq(res.rows[0].ratio, 1.5, 1e-12);
    cr_assert_float_eq(res.rows[0].machine, 1.0, 1e-6);
    cr_assert_float_eq(res.rows[0].p_slower, 1.0 / 252.0, 1e-12);
    cr_assert_eq(res.rows[1].verdict, LM_COMPARE_SAME, "machine 1.5x slower: %s",
                 lm_compare_verdict_name(res.rows[1].verdict));
    cr_assert_float_eq(res.rows[1].machine, 1.5, 1e-6);
    cr_assert_float_eq(res.rows[1].allowed, 1.65, 1e-6);
    cr_assert_eq(res.rows[2].verdict, LM_COMPARE_FASTER);
    cr_assert_eq(res.rows[3].verdict, LM_COMPARE_BASE_ONLY);
    cr_assert_eq(res.rows[3].base_line, 5);
    cr_assert_eq(res.rows[4].verdict, LM_COMPARE_NEW_ONLY);
    cr_assert_str_eq(res.rows[0].label, "gemv_rowdot scalar t1 f32 bits=32 n_ctx=1 d_inner=16 "
                                        "batch=1");
    lm_compare_free(&res);
    o.cpu_time = true; /* the same CPU times: the same verdicts */
    cr_assert_eq(lm_compare_results(&base, "b.csv", &new_, "n.csv", &o, &res, &err), LM_OK);
    cr_assert_eq(res.rows[0].verdict, LM_COMPARE_SLOWER);
    cr_assert_eq(res.rows[1].verdict, LM_COMPARE_SAME);
    cr_assert_float_eq(res.rows[0].ratio, 1.5, 1e-12);
    lm_compare_free(&res);
    o.cpu_time = false;
    o.use_roofline = false; /* --raw: the slower machine is no excuse */
    cr_assert_eq(lm_compare_results(&base, "b.csv", &new_, "n.csv", &o, &res, &err), LM_OK);
    cr_assert_eq(res.rows[1].verdict, LM_COMPARE_SLOWER);
    cr_assert_float_eq(res.rows[1].machine, 0.0, 0.0);
    lm_compare_free(&res);
    lm_csv_free(&base);
    lm_csv_free(&new_);
}

Test(compare, rule_refuses_other_cpus_duplicates_and_bad_cells)
{
    const long n1[2] = {1, 1}, n2[1] = {1};
    const char *t[2] = {"1;1.1;1.2;1.3;1.4", "1;1.1;1.2;1.3;1.4"};
    const double roof[2] = {10, 10};
    lm_csv a, b, dup;
    table(&a, "cpu A", 1, n2, t, roof);
    table(&b, "cpu B", 1, n2, t, roof);
    table(&dup, "cpu A", 2, n1, t, roof);
    lm_compare_options o = {.max_slowdown = 0.10, .alpha = 0.05, .use_roofline = true};
    lm_compare_result res;
    lm_error err;
    cr_assert_eq(lm_compare_results(&a, "a.csv", &b, "b.csv", &o, &res, &err), LM_ERR_SCHEMA);
    cr_assert(strstr(err.message, "'cpu A'") && strstr(err.message, "--force"), "%s",
              err.message);
    o.force = true;
    cr_assert_eq(lm_compare_results(&a, "a.csv", &b, "b.csv", &o, &res, &err), LM_OK);
    cr_assert_eq(res.rows[0].verdict, LM_COMPARE_SAME);
    lm_compare_free(&res);
    cr_assert_eq(lm_compare_results(&dup, "d.csv", &a, "a.csv", &o, &res, &err), LM_ERR_SCHEMA);
    cr_assert(strstr(err.message, "d.csv: lines 2 and 3") != NULL, "%s", err.message);
    int c = lm_csv_column(&b, LM_RESULTS_REP_TIMES);
    free(b.cells[0][c]);
    b.cells[0][c] = strdup("1;x;3;4;5");
    cr_assert_eq(lm_compare_results(&a, "a.csv", &b, "b.csv", &o, &res, &err), LM_ERR_PARSE);
    cr_assert(strstr(err.message, "b.csv:2: rep_times_s '1;x;3;4;5'") != NULL, "%s",
              err.message);
    free(b.cells[0][c]);
    b.cells[0][c] = strdup("1;2;3");
    cr_assert_eq(lm_compare_results(&a, "a.csv", &b, "b.csv", &o, &res, &err), LM_ERR_PARSE);
    cr_assert(strstr(err.message, "holds 3 times where reps is 5") != NULL, "%s", err.message);
    lm_csv_free(&a);
    lm_csv_free(&b);
    lm_csv_free(&dup);
}

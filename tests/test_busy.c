/* Busy-machine detection (harness/busy.h: /proc/stat parsing, other processes' cores, the
 * disturbed and unsteady rules) and the crossover's sentences (harness/crossover.h). */
#include "../harness/busy.h"
#include "../harness/crossover.h"
#include "../harness/csv.h"
#include "../harness/results.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* Two CPUs; fields user nice system idle iowait irq softirq steal. */
static const char stat_text[] =
    "cpu  300 50 60 900 10 0 5 20 0 0\n"
    "cpu0 100 50 30 400 5 0 2 10 0 0\n"
    "cpu1 200 0 30 500 5 0 3 10 0 0\n"
    "intr 12345\n"
    "procs_running 3\n";

Test(busy, proc_stat_busy_time_counts_every_field_but_idle_and_iowait)
{
    double busy;
    int cpus;
    cr_assert_eq(lm_busy_parse_stat(stat_text, strlen(stat_text), 100.0, NULL, 0, &busy, &cpus,
                                    NULL), LM_OK);
    cr_assert_eq(cpus, 2);
    /* cpu0: 100 + 50 + 30 + 0 + 2 + 10 = 192 ticks; cpu1: 200 + 30 + 3 + 10 = 243 */
    cr_assert_float_eq(busy, (192.0 + 243.0) / 100.0, 1e-12);
    bool only_cpu1[2] = {false, true};
    cr_assert_eq(lm_busy_parse_stat(stat_text, strlen(stat_text), 100.0, only_cpu1, 2, &busy,
                                    &cpus, NULL), LM_OK);
    cr_assert_eq(cpus, 1);
    cr_assert_float_eq(busy, 2.43, 1e-12);
    /* a kernel of before steal time: four fields, user nice system idle */
    static const char old_kernel[] = "cpu0 10 20 30 400\n";
    cr_assert_eq(lm_busy_parse_stat(old_kernel, strlen(old_kernel), 100.0, NULL, 0, &busy,
                                    &cpus, NULL), LM_OK);
    cr_assert_float_eq(busy, 0.6, 1e-12);
    bool none[2] = {false, false};
    lm_error err;
    cr_assert_eq(lm_busy_parse_stat(stat_text, strlen(stat_text), 100.0, none, 2, &busy, &cpus,
                                    &err), LM_ERR_PARSE);
    cr_assert(strstr(err.message, "none of our CPUs") != NULL, "%s", err.message);
}

Test(busy, others_are_the_busy_time_less_our_own_per_wall_second)
{
    lm_busy_sample a = {.wall_s = 10.0, .own_s = 1.0, .busy_s = 100.0, .cpus = 2};
    lm_busy_sample b = {.wall_s = 12.0, .own_s = 3.0, .busy_s = 104.0, .cpus = 2};
    /* 4 busy CPU-seconds in 2 s, 2 of them ours: others used 1 core */
    cr_assert_float_eq(lm_busy_others(&a, &b), 1.0, 1e-12);
    b.busy_s = 101.0; /* tick rounding can make ours exceed the total: never below 0 */
    cr_assert_float_eq(lm_busy_others(&a, &b), 0.0, 0.0);
    b.cpus = 0;
    cr_assert(isnan(lm_busy_others(&a, &b)));
    b.cpus = 2, b.wall_s = a.wall_s;
    cr_assert(isnan(lm_busy_others(&a, &b)));
}

Test(busy, a_row_is_disturbed_when_its_threads_find_too_few_free_cpus)
{
    /* 2 CPUs: 1 thread tolerates one busy core, 2 threads do not tolerate a quarter */
    cr_assert(!lm_busy_disturbed(1.0, 1, 2));
    cr_assert(lm_busy_disturbed(1.3, 1, 2));
    cr_assert(!lm_busy_disturbed(0.2, 2, 2));
    cr_assert(lm_busy_disturbed(0.3, 2, 2));
    cr_assert(!lm_busy_disturbed((double)NAN, 2, 2));
    cr_assert(!lm_busy_disturbed(5.0, 2, 0));
    /* unsteady: (p75 - min) / median above 20 % */
    cr_assert(!lm_unsteady(1.0, 1.1, 1.2));
    cr_assert(lm_unsteady(1.0, 1.1, 1.3));
    cr_assert(!lm_unsteady(0.0, 0.0, 1.0));
}

Test(busy, the_monitor_reads_this_machine)
{
    lm_busy_monitor m;
    lm_busy_start(&m);
    cr_assert(m.known, "/proc/stat readable on Linux");
    int cpus = 0;
    double others = lm_busy_mark(&m, 0.0, &cpus);
    cr_assert(cpus >= 1);
    cr_assert(isnan(others) || (others >= 0.0 && others <= (double)cpus + 1.0), "%g", others);
}

Test(busy, old_results_tables_gain_empty_busy_columns)
{
    /* the header of a build before the busy columns: ends at disc */
    char text[2048] = "";
    for (int c = 0; c < LM_RESULTS_COLUMNS - 2; c++)
        strcat(text, c ? "," : ""), strcat(text, lm_results_columns[c]);
    strcat(text, "\n");
    lm_csv csv;
    lm_error err;
    cr_assert_eq(lm_results_parse(&csv, text, strlen(text), "old.csv", &err), LM_OK, "%s",
                 err.message);
    cr_assert_eq(csv.columns, (size_t)LM_RESULTS_COLUMNS);
    cr_assert_str_eq(csv.header[LM_RESULTS_COLUMNS - 2], "busy_cores");
    cr_assert_str_eq(csv.header[LM_RESULTS_COLUMNS - 1], "disturbed");
    lm_csv_free(&csv);
}

Test(busy, typed_rows_write_the_busy_cells_or_leave_them_empty)
{
    lm_csv csv;
    cr_assert_eq(lm_csv_init_results(&csv, NULL), LM_OK);
    lm_result_row row = {.kernel = "gemv_rowdot", .isa = "scalar", .dtype = "f32",
                         .status = "ok", .threads = 2};
    cr_assert_eq(lm_result_append(&csv, NULL, &row, NULL), LM_OK);
    row.busy_known = true, row.busy_cores = 1.5, row.disturbed = true;
    cr_assert_eq(lm_result_append(&csv, NULL, &row, NULL), LM_OK);
    const int busy = lm_csv_column(&csv, "busy_cores"), dist = lm_csv_column(&csv, "disturbed");
    cr_assert_str_eq(csv.cells[0][busy], "");
    cr_assert_str_eq(csv.cells[0][dist], "");
    cr_assert_str_eq(csv.cells[1][busy], "1.5");
    cr_assert_str_eq(csv.cells[1][dist], "1");
    cr_assert_eq(lm_cell_check(lm_results_rule("busy_cores"), "1.5", NULL), LM_OK);
    cr_assert_eq(lm_cell_check(lm_results_rule("busy_cores"), "-1", NULL), LM_ERR_SCHEMA);
    cr_assert_eq(lm_cell_check(lm_results_rule("disturbed"), "", NULL), LM_OK);
    cr_assert_eq(lm_cell_check(lm_results_rule("disturbed"), "2", NULL), LM_ERR_SCHEMA);
    lm_csv_free(&csv);
}

Test(crossover_words, every_result_is_one_plain_sentence)
{
    char out[1024];
    lm_crossover_words w = {.decode = true, .other = "Mamba-1", .dtype = "f32",
                            .grid_option = "--ctx", .threads = 1, .where = 0, .n_star = 1116.3,
                            .n_first = 64, .n_last = 16384, .points = 9};
    lm_crossover_sentence(&w, out, sizeof out);
    cr_assert_str_eq(out, "On this CPU, with more than 1,116 cached tokens, one Mamba-1 layer's "
                          "decode step is faster than one attention layer's decode over an f32 "
                          "cache (1 thread).");
    w.where = 1, w.dtype = "bf16", w.threads = 2;
    lm_crossover_sentence(&w, out, sizeof out);
    cr_assert_str_eq(out, "On this CPU, one attention layer's decode over a bf16 cache was still "
                          "faster than one Mamba-1 layer's decode step at the largest context "
                          "measured (16,384 cached tokens, 2 threads): the crossover lies beyond "
                          "16,384 tokens; extend --ctx above 16,384 (e.g. --ctx 16384..131072) "
                          "to find it.");
    w.where = -1, w.decode = false, w.other = "Mamba-1 selective-scan",
    w.grid_option = "--prefill-ctx", w.n_first = 256;
    lm_crossover_sentence(&w, out, sizeof out);
    cr_assert_str_eq(out, "On this CPU, one Mamba-1 selective-scan layer's prefill was already "
                          "faster than one causal attention layer's prefill at the smallest "
                          "context measured (256 prompt tokens, 2 threads): the crossover is at "
                          "256 tokens or fewer; extend --prefill-ctx below 256 (e.g. "
                          "--prefill-ctx 32..256) to place it.");
    w.disturbed = 3;
    lm_crossover_sentence(&w, out, sizeof out);
    cr_assert(strncmp(out, "Not a finding (3 of the 9 measurements behind it were taken while "
                           "other processes kept cores busy; measure again on a quiet machine): "
                           "On this CPU,", 128) == 0, "%s", out);
    w.points = 0;
    lm_crossover_sentence(&w, out, sizeof out);
    cr_assert(strncmp(out, "No crossover", 12) == 0, "%s", out);
}

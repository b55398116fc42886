/* libFuzzer target: the results-CSV reader behind `sweep --resume` and `merge`.
 *
 * The input is a results file's bytes. They are read as lm_results_read reads a file
 * (lm_results_parse: the CSV grammar, old kernel words rewritten), then given to what
 * --resume does with the table (lm_results_resume: header, every cell's rule, one machine
 * and build unless forced, duplicates, failed rows; both with and without --force, the
 * machine being the file's own first row so the forced and unforced paths both go deep),
 * and to merge (lm_results_merge of the table with itself: the second copy's rows are all
 * duplicates). Then a row is put back in the resumed table and the table written out. A
 * finding is a crash, a sanitizer report, a leak or a timeout; a refused input is not. */
#include "../../harness/results.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The machine of the table's first row (its cpu_model and git_rev), or a default one. */
static void meta_of(const lm_csv *csv, lm_machine_meta *meta)
{
    *meta = (lm_machine_meta){.isa_active = LM_ISA_SCALAR, .cores = 1, .pus = 1};
    snprintf(meta->cpu_model, sizeof meta->cpu_model, "fuzz cpu");
    snprintf(meta->git_rev, sizeof meta->git_rev, "0000000");
    const int cpu = lm_csv_column(csv, "cpu_model"), rev = lm_csv_column(csv, "git_rev");
    if (csv->rows == 0)
        return;
    if (cpu >= 0)
        snprintf(meta->cpu_model, sizeof meta->cpu_model, "%s", csv->cells[0][cpu]);
    if (rev >= 0)
        snprintf(meta->git_rev, sizeof meta->git_rev, "%s", csv->cells[0][rev]);
}

static void merge_with_itself(const lm_csv *csv)
{
    const lm_csv inputs[2] = {*csv, *csv};
    const char *const names[2] = {"a.csv", "b.csv"};
    lm_csv merged;
    size_t dropped = 0;
    lm_error err;
    if (lm_results_merge(inputs, names, 2, false, &merged, &dropped, &err) == LM_OK) {
        if (dropped < csv->rows && csv->rows > 0)
            abort(); /* every row of the second copy repeats one of the first */
        lm_csv_free(&merged);
    }
}

/* The table written as its writer writes it (lm_csv_write_field) reads back the same. */
static void round_trip(const lm_csv *csv)
{
    char *text = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&text, &length);
    if (out == NULL)
        abort();
    for (size_t r = 0; r <= csv->rows; r++)
        for (size_t c = 0; c < csv->columns; c++) {
            lm_csv_write_field(out, r == 0 ? csv->header[c] : csv->cells[r - 1][c]);
            fputc(c + 1 < csv->columns ? ',' : '\n', out);
        }
    if (fclose(out) != 0)
        abort();
    lm_csv back;
    lm_error err;
    if (lm_csv_parse(&back, text, length, "back.csv", &err) != LM_OK)
        abort(); /* what the writer wrote must read */
    if (back.rows != csv->rows || back.columns != csv->columns)
        abort();
    for (size_t r = 0; r < csv->rows; r++)
        for (size_t c = 0; c < csv->columns; c++)
            if (strcmp(back.cells[r][c], csv->cells[r][c]) != 0)
                abort();
    lm_csv_free(&back);
    free(text);
}

static void resume(const uint8_t *data, size_t size, bool force)
{
    lm_csv csv;
    lm_error err;
    if (lm_results_parse(&csv, (const char *)data, size, "fuzz.csv", &err) != LM_OK)
        return;
    if (!force)
        merge_with_itself(&csv);
    lm_machine_meta meta;
    meta_of(&csv, &meta);
    lm_key_set done = {0}, failed = {0};
    lm_resume_counts counts = {0};
    if (lm_results_resume(&csv, "fuzz.csv", &meta, force, &done, &failed, &counts, &err) ==
        LM_OK) {
        lm_result_row row = {.kernel = "gemv_rowdot", .dtype = "f32", .isa = "scalar",
                             .status = "ok"};
        if (lm_results_put(&csv, &failed, &meta, &row, &err) == LM_OK)
            round_trip(&csv);
    }
    lm_key_set_free(&done);
    lm_key_set_free(&failed);
    lm_csv_free(&csv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > LM_CSV_MAX_BYTES) /* lm_csv_read refuses larger files */
        return -1;
    resume(data, size, false);
    resume(data, size, true);
    return 0;
}

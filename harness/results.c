/* Results files read back: merge and resume (see results.h). */
#include "results.h"
#include "registry.h"

#include <stdlib.h>
#include <string.h>

/* The first row's value of `column` in inputs[0..count) sets the expectation; a row that
 * differs is LM_ERR_SCHEMA unless force. */
static lm_status same_machine(const lm_csv *csv, const char *name, const char *column,
                              const char **first, const char **first_name, bool force,
                              lm_error *err)
{
    int c = lm_csv_column(csv, column);
    for (size_t r = 0; r < csv->rows && c >= 0; r++) {
        const char *v = csv->cells[r][c];
        if (*first == NULL) {
            *first = v;
            *first_name = name;
        } else if (!force && strcmp(*first, v) != 0) {
            return lm_fail(err, LM_ERR_SCHEMA,
                           "%s: %s '%.100s' differs from '%.100s' in %s; results of different "
                           "machines or versions do not merge (pass --force to merge anyway)",
                           name, column, v, *first, *first_name);
        }
    }
    return LM_OK;
}

static lm_status check_input(const lm_csv *inputs, const char *const *names, size_t i,
                             lm_error *err)
{
    lm_status s = lm_csv_check_results_header(&inputs[i], names[i], err);
    if (s == LM_OK && inputs[i].columns != inputs[0].columns)
        s = lm_fail(err, LM_ERR_SCHEMA, "%s has %zu columns where %s has %zu", names[i],
                    inputs[i].columns, names[0], inputs[0].columns);
    for (size_t c = 0; s == LM_OK && c < inputs[i].columns; c++)
        if (strcmp(inputs[i].header[c], inputs[0].header[c]) != 0)
            s = lm_fail(err, LM_ERR_SCHEMA, "%s: column %zu is '%.100s' where %s has '%.100s'",
                        names[i], c + 1, inputs[i].header[c], names[0], inputs[0].header[c]);
    return s == LM_OK ? lm_results_validate(&inputs[i], names[i], err) : s;
}

/* The merge key of row r: its configuration key, cpu_model and git_rev (with --force the
 * same configuration measured on two machines stays two rows). */
static char *merge_key(const lm_csv *csv, size_t r)
{
    char *key = lm_csv_row_key(csv, r);
    if (key == NULL)
        return NULL;
    const char *parts[3] = {key, csv->cells[r][lm_csv_column(csv, "cpu_model")],
                            csv->cells[r][lm_csv_column(csv, "git_rev")]};
    char *joined = lm_key_join(parts, 3);
    free(key);
    return joined;
}

lm_status lm_results_merge(const lm_csv *inputs, const char *const *names, size_t count,
                           bool force, lm_csv *out, size_t *dropped, lm_error *err)
{
    const char *cpu = NULL, *cpu_from = NULL, *rev = NULL, *rev_from = NULL;
    memset(out, 0, sizeof *out);
    *dropped = 0;
    if (count == 0)
        return lm_fail(err, LM_ERR_ARG, "merge needs at least one input file");
    for (size_t i = 0; i < count; i++) {
        lm_status s = check_input(inputs, names, i, err);
        if (s == LM_OK)
            s = same_machine(&inputs[i], names[i], "cpu_model", &cpu, &cpu_from, force, err);
        if (s == LM_OK)
            s = same_machine(&inputs[i], names[i], "git_rev", &rev, &rev_from, force, err);
        if (s != LM_OK)
            return s;
    }
    lm_status s = lm_csv_init(out, (const char *const *)inputs[0].header, inputs[0].columns, err);
    lm_key_set seen = {0};
    for (size_t i = 0; i < count && s == LM_OK; i++)
        for (size_t r = 0; r < inputs[i].rows && s == LM_OK; r++) {
            char *key = merge_key(&inputs[i], r);
            int added = key ? lm_key_set_add(&seen, key) : -1;
            free(key);
            if (added < 0)
                s = lm_fail(err, LM_ERR_NOMEM, "out of memory merging");
            else if (added == 0)
                (*dropped)++;
            else
                s = lm_csv_append(out, (const char *const *)inputs[i].cells[r], err);
        }
    lm_key_set_free(&seen);
    if (s != LM_OK)
        lm_csv_free(out);
    return s;
}

/* ---- resume ------------------------------------------------------------------------- */

static lm_status check_resume_header(const lm_csv *csv, const char *name, lm_error *err)
{
    lm_status s = lm_csv_check_results_header(csv, name, err);
    if (s != LM_OK)
        return s;
    for (size_t c = 0; c < LM_RESULTS_COLUMNS; c++)
        if (c >= csv->columns || strcmp(csv->header[c], lm_results_columns[c]) != 0)
            return lm_fail(err, LM_ERR_SCHEMA, "%s: column %zu must be '%s' to resume (this "
                           "build's results columns); write to a new file and merge", name,
                           c + 1, lm_results_columns[c]);
    if (csv->columns != LM_RESULTS_COLUMNS)
        return lm_fail(err, LM_ERR_SCHEMA, "%s has %zu columns where this build writes %d; "
                       "write to a new file and merge", name, csv->columns, LM_RESULTS_COLUMNS);
    return LM_OK;
}

/* Every row measured on this CPU by this build, unless force. */
static lm_status check_resume_machine(const lm_csv *csv, const char *name,
                                      const lm_machine_meta *meta, lm_error *err)
{
    const char *columns[2] = {"cpu_model", "git_rev"};
    const char *mine[2] = {meta->cpu_model, meta->git_rev};
    const char *what[2] = {"this machine's", "this build's"};
    for (int k = 0; k < 2; k++) {
        int c = lm_csv_column(csv, columns[k]);
        for (size_t r = 0; r < csv->rows; r++)
            if (strcmp(csv->cells[r][c], mine[k]) != 0)
                return lm_fail(err, LM_ERR_SCHEMA,
                               "%s:%zu: %s '%.100s' differs from %s '%.100s'; --resume continues "
                               "only a file measured here by this build (pass --force to "
                               "resume anyway, or write to a new file and merge)",
                               name, csv->line[r] ? csv->line[r] : r + 2, columns[k],
                               csv->cells[r][c], what[k], mine[k]);
    }
    return LM_OK;
}

static bool row_ok(const lm_csv *csv, size_t r, int status_column)
{
    return strcmp(csv->cells[r][status_column], "ok") == 0;
}

/* One pass over the rows that are ok (ok_rows) or not: a row whose key is in `seen` or
 * `also` (may be NULL) is dropped and counted in *duplicates; the others add their key to
 * `seen` and count in *kept (may be NULL). */
static lm_status keep_first(lm_csv *csv, const char *name, bool ok_rows, lm_key_set *seen,
                            const lm_key_set *also, size_t *duplicates, size_t *kept,
                            lm_error *err)
{
    const int status_column = lm_csv_column(csv, "status");
    for (size_t r = 0; r < csv->rows; r++) {
        if (row_ok(csv, r, status_column) != ok_rows)
            continue;
        char *key = lm_csv_row_key(csv, r);
        int added = key == NULL                                   ? -1
                    : also != NULL && lm_key_set_has(also, key) ? 0
                                                                : lm_key_set_add(seen, key);
        free(key);
        if (added < 0)
            return lm_fail(err, LM_ERR_NOMEM, "out of memory reading %s", name);
        if (added == 0) {
            lm_csv_remove_row(csv, r--);
            (*duplicates)++;
        } else if (kept != NULL) {
            (*kept)++;
        }
    }
    return LM_OK;
}

lm_status lm_results_resume(lm_csv *csv, const char *name, const lm_machine_meta *meta,
                            bool force, lm_key_set *done, lm_key_set *failed,
                            lm_resume_counts *counts, lm_error *err)
{
    *counts = (lm_resume_counts){0};
    lm_status s = check_resume_header(csv, name, err);
    if (s == LM_OK)
        s = lm_results_validate(csv, name, err);
    if (s == LM_OK && !force)
        s = check_resume_machine(csv, name, meta, err);
    if (s != LM_OK)
        return s;
    /* ok rows first: a configuration with an ok row is done, whatever else the file says */
    if ((s = keep_first(csv, name, true, done, NULL, &counts->duplicates, NULL, err)) != LM_OK)
        return s;
    return keep_first(csv, name, false, failed, done, &counts->duplicates, &counts->failed, err);
}

/* A table of a build before the disc column: disc appended, "zoh" on the Mamba-1 rows. */
static lm_status add_disc_column(lm_csv *csv, lm_error *err)
{
    if (csv->columns == 0 || lm_csv_column(csv, "disc") >= 0)
        return LM_OK;
    lm_status s = lm_csv_add_column(csv, "disc", err);
    const int kernel = lm_csv_column(csv, "kernel"), disc = (int)csv->columns - 1;
    for (size_t r = 0; s == LM_OK && kernel >= 0 && r < csv->rows; r++) {
        const char *k = csv->cells[r][kernel];
        if (strcmp(k, "mamba1_scan") != 0 && strcmp(k, "mamba1_step") != 0)
            continue;
        char *zoh = strdup("zoh");
        if (zoh == NULL)
            return lm_fail(err, LM_ERR_NOMEM, "out of memory reading a results file");
        free(csv->cells[r][disc]);
        csv->cells[r][disc] = zoh;
    }
    return s;
}

lm_status lm_results_put(lm_csv *csv, const lm_key_set *failed, const lm_machine_meta *meta,
                         const lm_result_row *row, lm_error *err)
{
    lm_status s = lm_result_append(csv, meta, row, err);
    if (s != LM_OK || failed == NULL || failed->count == 0)
        return s;
    char *key = lm_result_key(row);
    if (key == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory recording a row");
    const int status_column = lm_csv_column(csv, "status");
    const size_t last = csv->rows - 1;
    for (size_t r = 0; lm_key_set_has(failed, key) && r < last; r++) {
        if (row_ok(csv, r, status_column))
            continue;
        char *other = lm_csv_row_key(csv, r);
        bool same = other != NULL && strcmp(other, key) == 0;
        free(other);
        if (!same)
            continue;
        char **old = csv->cells[r]; /* the new row takes the failed row's place */
        csv->cells[r] = csv->cells[last];
        csv->cells[last] = old;
        lm_csv_remove_row(csv, last);
        break;
    }
    free(key);
    return LM_OK;
}

/* Every kernel cell of a table read that names a kernel by an old word rewritten to its
 * word; frees the table on failure. */
static lm_status new_kernel_words(lm_csv *csv, const char *path, lm_error *err)
{
    const int column = lm_csv_column(csv, "kernel");
    for (size_t r = 0; column >= 0 && r < csv->rows; r++) {
        char **cell = &csv->cells[r][column];
        const lm_registry_entry *entry = lm_registry_find(*cell, NULL);
        if (entry == NULL || strcmp(entry->name, *cell) == 0)
            continue;
        char *word = strdup(entry->name);
        if (word == NULL) {
            lm_csv_free(csv);
            return lm_fail(err, LM_ERR_NOMEM, "out of memory reading %s", path);
        }
        free(*cell);
        *cell = word;
    }
    return LM_OK;
}

/* A table of a build before the busy columns: busy_cores and disturbed appended, empty
 * (whether the machine was busy is not known). */
static lm_status add_busy_columns(lm_csv *csv, lm_error *err)
{
    static const char *const names[2] = {"busy_cores", "disturbed"};
    lm_status s = LM_OK;
    for (int k = 0; k < 2 && s == LM_OK; k++)
        if (csv->columns > 0 && lm_csv_column(csv, names[k]) < 0)
            s = lm_csv_add_column(csv, names[k], err);
    return s;
}

/* A table just read brought to this build's layout: old kernel words renamed, the disc
 * and busy columns added; frees the table on failure. */
static lm_status current_layout(lm_csv *csv, const char *path, lm_error *err)
{
    lm_status s = new_kernel_words(csv, path, err);
    if (s == LM_OK)
        s = add_disc_column(csv, err);
    if (s == LM_OK)
        s = add_busy_columns(csv, err);
    if (s != LM_OK)
        lm_csv_free(csv);
    return s;
}

lm_status lm_results_read(lm_csv *csv, const char *path, lm_error *err)
{
    lm_status s = lm_csv_read(csv, path, err);
    return s == LM_OK ? current_layout(csv, path, err) : s;
}

lm_status lm_results_parse(lm_csv *csv, const char *text, size_t length, const char *path,
                           lm_error *err)
{
    lm_status s = lm_csv_parse(csv, text, length, path, err);
    return s == LM_OK ? current_layout(csv, path, err) : s;
}

/* Input integrity: checked sizes and allocation budgets, the JSON array reader on ragged
 * arrays, safe reading of user files, atomic writes that never follow a planted file,
 * results cells validated by column, the one configuration key, resume and merge, option
 * integers that overflow, the verify report's escaping and its errors. */
#include "../harness/contract_load.h"
#include "../harness/csv.h"
#include "../harness/files.h"
#include "../harness/jsonx.h"
#include "../harness/opts.h"
#include "../harness/results.h"
#include "../harness/size_budget.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- checked sizes ------------------------------------------------------------------- */

Test(input, size_products_saturate_instead_of_wrapping)
{
    cr_assert_eq(lm_size_mul((size_t)1 << 40, (size_t)1 << 30), SIZE_MAX);
    cr_assert_eq(lm_size_mul(3, 5), 15);
    cr_assert_eq(lm_size_add(SIZE_MAX - 1, 2), SIZE_MAX);
    /* the conv_causal repro: batch 2^22 x length 2^21 x channels 2^21 wraps to 0 unchecked */
    const size_t extents[] = {(size_t)1 << 22, (size_t)1 << 21, (size_t)1 << 21};
    cr_assert_eq(lm_size_product(extents, 3), SIZE_MAX);
    cr_assert_eq(lm_size_product(extents, 0), 1);
}

Test(input, budget_sums_every_buffer_and_names_the_limit)
{
    lm_budget budget = lm_budget_of(LM_CASE_MAX_BYTES);
    lm_budget_add(&budget, (size_t)1 << 26, sizeof(double)); /* 512 MiB */
    lm_error err;
    cr_assert_eq(lm_budget_check(&budget, "case x", &err), LM_OK);
    lm_budget_add(&budget, (size_t)1 << 26, sizeof(double)); /* 1 GiB: still within */
    cr_assert_eq(lm_budget_check(&budget, "case x", &err), LM_OK);
    lm_budget_add(&budget, 1, 1);
    cr_assert_eq(lm_budget_check(&budget, "case x", &err), LM_ERR_SCHEMA);
    cr_assert_str_eq(err.message, "case x needs 1.0 GiB (all its buffers), more than the 1 GiB "
                                  "limit");
    lm_budget_add(&budget, SIZE_MAX, 8);
    cr_assert_eq(lm_budget_check(&budget, "case y", &err), LM_ERR_SCHEMA);
    cr_assert(strstr(err.message, "more bytes than a size_t holds") != NULL, "%s", err.message);
}

/* ---- the JSON array reader --------------------------------------------------------------- */

/* [[[[0 x 65536], 0 x 65535], 0 x 65535], 0 x 65535]: first-element extents 2^16 x 4, whose
 * product 2^64 wraps to 0 (before the fix: malloc(0), then 65536 doubles written to it). */
static json_t *ragged_4d(void)
{
    json_t *node = json_array();
    for (int i = 0; i < 65536; i++)
        json_array_append_new(node, json_integer(0));
    for (int axis = 0; axis < 3; axis++) {
        json_t *outer = json_array();
        json_array_append_new(outer, node);
        for (int i = 1; i < 65536; i++)
            json_array_append_new(outer, json_integer(0));
        node = outer;
    }
    json_t *root = json_object();
    json_object_set_new(root, "x", node);
    return root;
}

Test(input, ragged_array_whose_extents_wrap_is_refused_before_allocating)
{
    json_t *root = ragged_4d();
    size_t dims[4];
    double *data = NULL;
    lm_error err;
    cr_assert_eq(lm_json_array(root, "x", 4, dims, &data, &err), LM_ERR_SCHEMA);
    cr_assert_str_eq(err.message, "x must be rectangular: x[0][0][1] must be an array of 65536 "
                                  "entries, got an integer");
    cr_assert_null(data);
    json_decref(root);
}

Test(input, ragged_and_rectangular_arrays_are_told_apart)
{
    json_error_t error;
    json_t *root = json_loads("{\"r\": [[1, 2], [3, 4], [5, 6]], \"g\": [[1, 2], [3]],"
                              " \"b\": [[1, true]]}", 0, &error);
    size_t dims[4];
    double *data = NULL;
    lm_error err;
    cr_assert_eq(lm_json_array(root, "r", 2, dims, &data, &err), LM_OK, "%s", err.message);
    cr_assert(dims[0] == 3 && dims[1] == 2 && data[5] == 6.0);
    free(data);
    cr_assert_eq(lm_json_array(root, "g", 2, dims, &data, &err), LM_ERR_SCHEMA);
    cr_assert_str_eq(err.message, "g must be rectangular: g[1] has 1 entries where axis 1 has 2");
    cr_assert_eq(lm_json_array(root, "b", 2, dims, &data, &err), LM_ERR_TYPE);
    cr_assert_eq(lm_json_array(root, "r", 3, dims, &data, &err), LM_ERR_SHAPE);
    json_decref(root);
}

/* ---- reading user files ------------------------------------------------------------------ */

static char *scratch(void)
{
    char *dir = strdup("/tmp/longmix-input-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static char *slurp(const char *path)
{
    char *text;
    size_t size;
    lm_error err;
    cr_assert_eq(lm_read_file(path, 1 << 20, false, &text, &size, &err), LM_OK, "%s",
                 err.message);
    return text;
}

Test(input, only_regular_files_are_read_and_never_waited_on)
{
    char *dir = scratch(), fifo[256];
    char *text;
    size_t size;
    lm_error err;
    cr_assert_eq(lm_read_file(dir, 100, false, &text, &size, &err), LM_ERR_IO);
    cr_assert(strstr(err.message, ": is a directory") != NULL, "%s", err.message);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    /* no writer: a blocking open would wait forever */
    cr_assert_eq(lm_read_file(fifo, 100, false, &text, &size, &err), LM_ERR_IO);
    cr_assert(strstr(err.message, "not a regular file (a FIFO)") != NULL, "%s", err.message);
    cr_assert_eq(lm_read_file("/dev/zero", 100, false, &text, &size, &err), LM_ERR_IO);
    cr_assert(strstr(err.message, "(a character device)") != NULL, "%s", err.message);
    unlink(fifo);
    rmdir(dir);
    free(dir);
}

Test(input, a_file_over_the_limit_is_refused_without_reading_it_all)
{
    char *dir = scratch(), path[256];
    snprintf(path, sizeof path, "%s/big", dir);
    write_text(path, "0123456789");
    char *text;
    size_t size;
    lm_error err;
    cr_assert_eq(lm_read_file(path, 9, false, &text, &size, &err), LM_ERR_ARG);
    cr_assert_str_eq(err.message + strlen(path), ": larger than the 9 bytes limit for such a file");
    cr_assert_eq(lm_read_file(path, 10, false, &text, &size, &err), LM_OK);
    cr_assert(size == 10 && strcmp(text, "0123456789") == 0);
    free(text);
    unlink(path);
    rmdir(dir);
    free(dir);
}

Test(input, pin_lines_of_any_length_keep_their_numbers)
{
    char *dir = scratch(), path[256];
    snprintf(path, sizeof path, "%s/SHA256SUMS", dir);
    /* line 1 a valid pin of a 2000-character name (a 1024-byte line buffer made its tail
     * line 2), line 2 a valid pin, line 3 not a pin */
    char *text = malloc(4096);
    memset(text, 'a', 64);
    snprintf(text + 64, 4096 - 64, "  %02000d\n%064d  m8.json\nnot a pin\n", 7, 0);
    write_text(path, text);
    lm_pin_list pins;
    lm_error err;
    cr_assert_eq(lm_pins_read(path, &pins, &err), LM_ERR_PARSE);
    cr_assert(strstr(err.message, "SHA256SUMS:3: expected") != NULL, "%s", err.message);
    free(text);
    unlink(path);
    rmdir(dir);
    free(dir);
}

/* ---- atomic writes ------------------------------------------------------------------ */

static pid_t dead_pid(void)
{
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    waitpid(child, NULL, 0);
    return child;
}

Test(input, atomic_write_never_follows_a_planted_symlink)
{
    char *dir = scratch(), out[256], victim[256], link[320];
    snprintf(out, sizeof out, "%s/r.csv", dir);
    snprintf(victim, sizeof victim, "%s/victim", dir);
    write_text(victim, "precious\n");
    /* the temp names of the old writer (OUT.tmp.<pid>) for this and the next 400 pids */
    for (long pid = getpid(); pid < getpid() + 400; pid++) {
        snprintf(link, sizeof link, "%s.tmp.%ld", out, pid);
        cr_assert_eq(symlink(victim, link), 0);
    }
    lm_csv csv;
    lm_error err;
    const char *header[] = {"a"}, *row[] = {"1"};
    cr_assert_eq(lm_csv_init(&csv, header, 1, &err), LM_OK);
    cr_assert_eq(lm_csv_append(&csv, row, &err), LM_OK);
    cr_assert_eq(lm_csv_write_atomic(&csv, out, &err), LM_OK, "%s", err.message);
    char *kept = slurp(victim), *written = slurp(out);
    cr_assert_str_eq(kept, "precious\n");
    cr_assert_str_eq(written, "a\n1\n");
    struct stat st;
    cr_assert_eq(stat(out, &st), 0);
    mode_t mask = umask(0);
    umask(mask);
    cr_assert_eq(st.st_mode & 0777, 0666 & ~mask, "the mode fopen would give, not mkstemp's 0600");
    free(kept), free(written);
    lm_csv_free(&csv);
    for (long pid = getpid(); pid < getpid() + 400; pid++) {
        snprintf(link, sizeof link, "%s.tmp.%ld", out, pid);
        unlink(link);
    }
    unlink(victim), unlink(out), rmdir(dir);
    free(dir);
}

Test(input, stale_temp_files_of_dead_runs_are_removed_live_ones_kept)
{
    char *dir = scratch(), out[256], stale[320], legacy[320], live[320], other[320];
    snprintf(out, sizeof out, "%s/r.csv", dir);
    long gone = (long)dead_pid();
    snprintf(stale, sizeof stale, "%s/.r.csv.tmp-%ld-Ab12Cd", dir, gone);
    snprintf(legacy, sizeof legacy, "%s/r.csv.tmp.%ld", dir, gone);
    snprintf(live, sizeof live, "%s/.r.csv.tmp-%ld-Ef34Gh", dir, (long)getppid());
    snprintf(other, sizeof other, "%s/.other.csv.tmp-%ld-Ij56Kl", dir, gone);
    write_text(stale, "x"), write_text(legacy, "x"), write_text(live, "x"), write_text(other, "x");
    cr_assert_eq(lm_atomic_remove_stale(out), 2);
    cr_assert_neq(access(stale, F_OK), 0);
    cr_assert_neq(access(legacy, F_OK), 0);
    cr_assert_eq(access(live, F_OK), 0, "a running process's temp file stays");
    cr_assert_eq(access(other, F_OK), 0, "another file's temp files are not ours");
    unlink(live), unlink(other), rmdir(dir);
    free(dir);
}

Test(input, atomic_abort_leaves_the_destination_untouched)
{
    char *dir = scratch(), out[256];
    snprintf(out, sizeof out, "%s/report.xml", dir);
    write_text(out, "old\n");
    lm_atomic_file file;
    lm_error err;
    cr_assert_eq(lm_atomic_open(&file, out, &err), LM_OK, "%s", err.message);
    fputs("half a report", file.stream);
    lm_atomic_abort(&file);
    char *text = slurp(out);
    cr_assert_str_eq(text, "old\n");
    free(text);
    unlink(out), rmdir(dir);
    free(dir);
}

/* ---- results: cells, keys, merge, resume ------------------------------------------------- */

static lm_machine_meta meta_of(const char *cpu, const char *rev)
{
    lm_machine_meta meta;
    memset(&meta, 0, sizeof meta);
    snprintf(meta.run_id, sizeof meta.run_id, "run-1");
    snprintf(meta.timestamp, sizeof meta.timestamp, "2026-12-02T10:00:00Z");
    snprintf(meta.cpu_model, sizeof meta.cpu_model, "%s", cpu);
    snprintf(meta.git_rev, sizeof meta.git_rev, "%s", rev);
    return meta;
}

static lm_result_row row_of(const char *kernel, long n_ctx, const char *status)
{
    return (lm_result_row){.kernel = kernel, .isa = "scalar", .dtype = "f32", .status = status,
                           .threads = 1, .n_ctx = n_ctx, .reps = 2};
}

static void set_cell(lm_csv *csv, size_t r, const char *column, const char *value)
{
    int c = lm_csv_column(csv, column);
    cr_assert_geq(c, 0, "%s", column);
    free(csv->cells[r][c]);
    csv->cells[r][c] = strdup(value);
}

Test(input, every_cell_is_checked_against_its_column)
{
    const struct {
        const char *column, *value, *message;
    } bad[] = {
        {"n_ctx", "abc", "t.csv:2: column n_ctx 'abc' is not an integer in [0, 1099511627776]"},
        {"median_s", "-1e999", "t.csv:2: column median_s '-1e999' is not a finite number >= 0 (or nan)"},
        {"median_s", "-0.5", "t.csv:2: column median_s '-0.5' is not a finite number >= 0 (or nan)"},
        {"status", "garbage", "t.csv:2: column status 'garbage' is not a status (ok, wrong, error, failed)"},
        {"threads", "0", "t.csv:2: column threads '0' is not an integer in [1, 1048576]"},
        {"kernel", "a b", "t.csv:2: column kernel 'a b' is not a name (letters, digits, _ . + -)"},
        {"note", "two\nlines", "t.csv:2: column note holds a control character"},
        {"git_rev", "", "t.csv:2: column git_rev is empty"},
    };
    lm_machine_meta meta = meta_of("CPU A", "abc");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lm_csv csv;
        lm_error err;
        lm_result_row row = row_of("k1", 64, "ok");
        cr_assert_eq(lm_csv_init_results(&csv, &err), LM_OK);
        cr_assert_eq(lm_result_append(&csv, &meta, &row, &err), LM_OK);
        cr_assert_eq(lm_results_validate(&csv, "t.csv", &err), LM_OK, "%s", err.message);
        set_cell(&csv, 0, bad[i].column, bad[i].value);
        cr_assert_eq(lm_results_validate(&csv, "t.csv", &err), LM_ERR_SCHEMA, "%s", bad[i].column);
        cr_assert_str_eq(err.message, bad[i].message);
        lm_csv_free(&csv);
    }
}

Test(input, the_key_of_a_typed_row_is_the_key_of_its_cells_at_any_length)
{
    char long_name[600];
    memset(long_name, 'k', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    lm_machine_meta meta = meta_of("CPU A", "abc");
    lm_csv csv;
    lm_error err;
    lm_result_row row = row_of(long_name, 1L << 40, "ok");
    cr_assert_eq(lm_csv_init_results(&csv, &err), LM_OK);
    cr_assert_eq(lm_result_append(&csv, &meta, &row, &err), LM_OK);
    char *typed = lm_result_key(&row), *read_back = lm_csv_row_key(&csv, 0);
    cr_assert_str_eq(typed, read_back);
    cr_assert_eq(strncmp(typed, long_name, sizeof long_name - 1), 0, "the name is whole");
    cr_assert_str_eq(csv.cells[0][lm_csv_column(&csv, "kernel")], long_name);
    free(typed), free(read_back);
    lm_csv_free(&csv);
    /* '|' inside a cell is escaped, so two configurations never share a key */
    const char *a[LM_RESULTS_KEY_COLUMNS] = {"x|y", "z", "", "", "", "", "", "", "", "", "", "", "", ""};
    const char *b[LM_RESULTS_KEY_COLUMNS] = {"x", "y|z", "", "", "", "", "", "", "", "", "", "", "", ""};
    char *ka = lm_results_key(a), *kb = lm_results_key(b);
    cr_assert_str_neq(ka, kb);
    cr_assert_str_eq(ka, "x\\|y|z||||||||||||");
    free(ka), free(kb);
}

Test(input, merge_keeps_rows_whose_names_differ_past_any_length)
{
    char first[400], second[400];
    memset(first, 'k', sizeof first - 1);
    first[sizeof first - 1] = '\0';
    memcpy(second, first, sizeof first);
    second[350] = 'z'; /* differs after character 311, where the old key was cut */
    lm_machine_meta meta = meta_of("CPU A", "abc");
    lm_csv in[2], out;
    lm_error err;
    lm_result_row r1 = row_of(first, 64, "ok"), r2 = row_of(second, 64, "ok");
    cr_assert_eq(lm_csv_init_results(&in[0], &err), LM_OK);
    cr_assert_eq(lm_csv_init_results(&in[1], &err), LM_OK);
    cr_assert_eq(lm_result_append(&in[0], &meta, &r1, &err), LM_OK);
    cr_assert_eq(lm_result_append(&in[1], &meta, &r2, &err), LM_OK);
    const char *names[] = {"a.csv", "b.csv"};
    size_t dropped;
    cr_assert_eq(lm_results_merge(in, names, 2, false, &out, &dropped, &err), LM_OK, "%s",
                 err.message);
    cr_assert_eq(out.rows, 2);
    cr_assert_eq(dropped, 0);
    lm_csv_free(&out);
    set_cell(&in[1], 0, "n_ctx", "abc");
    cr_assert_eq(lm_results_merge(in, names, 2, false, &out, &dropped, &err), LM_ERR_SCHEMA);
    cr_assert(strstr(err.message, "b.csv:2: column n_ctx 'abc'") != NULL, "%s", err.message);
    lm_csv_free(&in[0]), lm_csv_free(&in[1]);
}

/* Found by tests/fuzz/fuzz_results_csv: bytes that end in ',' (an empty last field) read one
 * byte past a buffer that is not NUL-terminated. The text here is in a block of exactly its
 * length, so ASan (make test-sanitize) sees any read past it. */
Test(input, csv_bytes_ending_in_a_separator_are_read_within_them)
{
    const char *const texts[] = {"a,b\n1,", "a,b\n1,\"x\",", "a,", ","};
    const size_t fields[] = {2, 3, 2, 2};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        const size_t length = strlen(texts[i]);
        char *exact = malloc(length);
        cr_assert_not_null(exact);
        memcpy(exact, texts[i], length);
        lm_csv csv;
        lm_error err;
        lm_status status = lm_csv_parse(&csv, exact, length, "t.csv", &err);
        if (i < 2) { /* the header has 2 columns: a row of 3 is refused, one of 2 is read */
            cr_assert_eq(status, i == 0 ? LM_OK : LM_ERR_PARSE, "%s", err.message);
            if (i == 0)
                cr_assert_str_eq(csv.cells[0][1], "");
        } else {
            cr_assert_eq(status, LM_OK, "%s", err.message);
            cr_assert_eq(csv.columns, fields[i]);
            cr_assert_str_eq(csv.header[1], "");
        }
        if (status == LM_OK)
            lm_csv_free(&csv);
        free(exact);
    }
}

Test(input, resume_refuses_another_machine_unless_forced)
{
    lm_machine_meta here = meta_of("CPU A", "abc"), there = meta_of("CPU B", "abc");
    lm_csv csv;
    lm_error err;
    lm_result_row row = row_of("k1", 64, "ok");
    cr_assert_eq(lm_csv_init_results(&csv, &err), LM_OK);
    cr_assert_eq(lm_result_append(&csv, &there, &row, &err), LM_OK);
    lm_key_set done = {0}, failed = {0};
    lm_resume_counts counts;
    cr_assert_eq(lm_results_resume(&csv, "s.csv", &here, false, &done, &failed, &counts, &err),
                 LM_ERR_SCHEMA);
    cr_assert_str_eq(err.message, "s.csv:2: cpu_model 'CPU B' differs from this machine's "
                                  "'CPU A'; --resume continues only a file measured here by this "
                                  "build (pass --force to resume anyway, or write to a new file "
                                  "and merge)");
    lm_machine_meta other_build = meta_of("CPU B", "def");
    cr_assert_eq(lm_results_resume(&csv, "s.csv", &other_build, false, &done, &failed, &counts,
                                   &err), LM_ERR_SCHEMA);
    cr_assert(strstr(err.message, "git_rev 'abc' differs from this build's 'def'") != NULL, "%s",
              err.message);
    cr_assert_eq(lm_results_resume(&csv, "s.csv", &here, true, &done, &failed, &counts, &err),
                 LM_OK);
    cr_assert_eq(done.count, 1);
    lm_key_set_free(&done), lm_key_set_free(&failed);
    lm_csv_free(&csv);
}

Test(input, resume_drops_duplicates_and_measures_failed_rows_again_in_place)
{
    lm_machine_meta meta = meta_of("CPU A", "abc");
    lm_csv csv;
    lm_error err;
    /* 4 rows for 3 configurations: k1@64 twice (failed, then ok), k1@128 error, k2 ok */
    lm_result_row rows[] = {row_of("k1", 64, "error"), row_of("k1", 128, "error"),
                            row_of("k1", 64, "ok"), row_of("k2", 64, "ok"),
                            row_of("k2", 64, "ok")};
    cr_assert_eq(lm_csv_init_results(&csv, &err), LM_OK);
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(lm_result_append(&csv, &meta, &rows[i], &err), LM_OK);
    lm_key_set done = {0}, failed = {0};
    lm_resume_counts counts;
    cr_assert_eq(lm_results_resume(&csv, "s.csv", &meta, false, &done, &failed, &counts, &err),
                 LM_OK, "%s", err.message);
    cr_assert_eq(counts.duplicates, 2, "k1@64 error (an ok row exists) and the second k2");
    cr_assert_eq(counts.failed, 1);
    cr_assert_eq(csv.rows, 3);
    cr_assert_eq(done.count, 2);
    char *key = lm_result_key(&rows[1]);
    cr_assert(lm_key_set_has(&failed, key) && !lm_key_set_has(&done, key));
    free(key);
    /* the re-measured row takes the failed row's place (the first row of the file now) */
    lm_result_row again = row_of("k1", 128, "ok");
    cr_assert_eq(lm_results_put(&csv, &failed, &meta, &again, &err), LM_OK);
    cr_assert_eq(csv.rows, 3);
    cr_assert_str_eq(csv.cells[0][lm_csv_column(&csv, "status")], "ok");
    cr_assert_str_eq(csv.cells[0][lm_csv_column(&csv, "n_ctx")], "128");
    lm_key_set_free(&done), lm_key_set_free(&failed);
    lm_csv_free(&csv);
}

/* ---- option integers --------------------------------------------------------------------- */

Test(input, option_integers_that_overflow_are_errors)
{
    long out[LM_LIST_MAX];
    size_t count;
    lm_error err;
    cr_assert_eq(lm_parse_size_list("--ctx", "18014398509481985k", 1, out, &count, &err),
                 LM_ERR_ARG);
    cr_assert_str_eq(err.message, "--ctx: '18014398509481985k' is too large (at most "
                                  "1099511627776)");
    cr_assert_eq(lm_parse_size_list("--ctx", "1..9223372036854775807", 1, out, &count, &err),
                 LM_ERR_ARG);
    cr_assert_str_eq(err.message, "--ctx: '9223372036854775807' is too large (at most "
                                  "1099511627776)");
    cr_assert_eq(lm_parse_size_list("--ctx", "99999999999999999999", 1, out, &count, &err),
                 LM_ERR_ARG);
    cr_assert_eq(lm_parse_size_list("--ctx", "1M", 1, out, &count, &err), LM_OK);
    cr_assert(count == 1 && out[0] == 1048576);
    cr_assert_eq(lm_parse_thread_list("--threads", "2147483648", 2, out, &count, &err),
                 LM_ERR_ARG);
    cr_assert_str_eq(err.message, "--threads: '2147483648' is too large (at most 4096)");
    cr_assert_eq(lm_parse_thread_list("--threads", "4294967297", 2, out, &count, &err),
                 LM_ERR_ARG);
    long v;
    cr_assert_eq(lm_parse_integer("--heads", "9223372036854775808", 1, 100, &v, &err), LM_ERR_ARG);
    cr_assert_str_eq(err.message, "--heads must be an integer in 1..100, got "
                                  "'9223372036854775808'");
    cr_assert_eq(lm_parse_integer("--heads", "64", 1, 100, &v, &err), LM_OK);
    cr_assert_eq(v, 64);
}

/* ---- the verify report ------------------------------------------------------------------ */

static char *report_text(const lm_report *report, lm_format format)
{
    char *buffer = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&buffer, &size);
    lm_report_write(report, format, out);
    fclose(out);
    return buffer;
}

static bool has_raw_control(const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        if ((*p < 0x20 && *p != '\n') || *p == 0x7f)
            return true;
    return false;
}

static size_t lines_in(const char *text)
{
    size_t n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

Test(input, report_escapes_what_could_forge_a_line_or_reach_the_terminal)
{
    lm_report *report = lm_report_new();
    lm_report_begin_file(report, "k.json");
    const char *evil = "evil\nPASS forged line\x01\x1b[7m # SKIP 'q' <x> & \"y\" \xc2\x9b \xff";
    lm_check_int(report, "kernels", evil, 1, 2);
    char *text = report_text(report, LM_FORMAT_TEXT);
    cr_assert_str_eq(text, "FAIL k.json: kernels/evil\\nPASS forged line\\x01\\x1b[7m # SKIP 'q' "
                           "<x> & \"y\" \\u009b \\xff: expected 1, got 2 (exact)\n"
                           "0 passed, 1 failed, 0 errors\n");
    free(text);
    char *tap = report_text(report, LM_FORMAT_TAP);
    cr_assert(strstr(tap, "not ok 1 - k.json: kernels/evil\\nPASS forged line\\x01\\x1b[7m \\# SKIP") !=
              NULL, "%s", tap);
    cr_assert(!has_raw_control(tap));
    free(tap);
    char *xml = report_text(report, LM_FORMAT_JUNIT);
    cr_assert(strstr(xml, "name=\"evil\\nPASS forged line\\x01\\x1b[7m # SKIP &apos;q&apos; "
                          "&lt;x&gt; &amp; &quot;y&quot; \\u009b \\xff\"") != NULL, "%s", xml);
    cr_assert(!has_raw_control(xml));
    free(xml);
    char *json = report_text(report, LM_FORMAT_JSON);
    cr_assert(strstr(json, "\"name\": \"evil\\\\nPASS forged line\\\\x01\\\\x1b[7m # SKIP 'q' <x> "
                           "& \\\"y\\\" \\\\u009b \\\\xff\"") != NULL, "%s", json);
    cr_assert(!has_raw_control(json));
    cr_assert_eq(lines_in(json), 3, "header, one check, closing");
    free(json);
    lm_report_free(report);
}

Test(input, a_file_that_could_not_be_checked_is_an_error_in_every_format)
{
    lm_report *report = lm_report_new();
    lm_report_begin_file(report, "a.json");
    lm_check_true(report, "pin", "sha256", true, "x", "x");
    lm_report_error(report, "a.json", "case c: shape.heads: bad");
    cr_assert_eq(lm_report_passed(report), 1);
    cr_assert_eq(lm_report_failed(report), 0);
    cr_assert_eq(lm_report_errors(report), 1);
    char *text = report_text(report, LM_FORMAT_TEXT);
    cr_assert(strstr(text, "ERROR a.json: case c: shape.heads: bad (not checked)\n"
                           "1 passed, 0 failed, 1 errors\n") != NULL, "%s", text);
    free(text);
    char *tap = report_text(report, LM_FORMAT_TAP);
    cr_assert(strstr(tap, "not ok 2 - a.json: load/error\n  ---\n  severity: 'error'\n"
                          "  message: 'case c: shape.heads: bad'\n  ...\n") != NULL, "%s", tap);
    cr_assert(strstr(tap, "# 1 passed, 0 failed, 1 errors\n") != NULL, "%s", tap);
    free(tap);
    char *xml = report_text(report, LM_FORMAT_JUNIT);
    cr_assert(strstr(xml, "tests=\"2\" failures=\"0\" errors=\"1\">") != NULL, "%s", xml);
    cr_assert(strstr(xml, "<error message=\"case c: shape.heads: bad\"/>") != NULL, "%s", xml);
    free(xml);
    char *json = report_text(report, LM_FORMAT_JSON);
    cr_assert(strstr(json, "{\"passed\": 1, \"failed\": 0, \"errors\": 1, \"complete\": true") !=
              NULL, "%s", json);
    cr_assert(strstr(json, "{\"status\": \"error\", \"file\": \"a.json\"") != NULL, "%s", json);
    free(json);
    lm_report_free(report);
}

/* longmix compare-machines: the results folders of several machines side by side, one
 * table per question: each machine's roofline, each kernel's fraction of its own machine's
 * limits, and the crossovers per machine (kernel level from crossover_summary.csv, model
 * level from model_crossover.csv and any other *crossover_summary.csv). Shards of one sweep are joined by merge,
 * which refuses mixed machines; this command is the act of comparing them. */
#include "cli.h"
#include "results.h"
#include "csv.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_MACHINES = 16, MAX_FILES = 64, CELL = 160 };

typedef struct named_csv {
    char name[256]; /* file name inside the folder */
    lm_csv csv;
    /* crossover files: the verdict and n* columns ("found", "n_star" in crossover's
     * summaries; "verdict", "nstar_ctx" in longmix model's model_crossover.csv) */
    const char *verdict, *nstar;
} named_csv;

/* One results folder = one machine. */
typedef struct machine {
    const char *dir;
    char label[160], host[128], cpu[256], git[128], isa[32], cores[16];
    named_csv files[MAX_FILES]; /* results CSVs (the results header), by name */
    size_t file_count;
    named_csv summaries[MAX_FILES]; /* crossover files: key columns, verdict, n* */
    size_t summary_count;
} machine;

typedef struct comparison {
    machine machines[MAX_MACHINES];
    size_t count;
} comparison;

static const char *const limit_kernels[] = {"peak_fma", "stream_triad", "peak_dot_i8"};

/* The configuration columns of a kernel row, less the ISA (each machine is compared on
 * the ISA path its sweeps ran). */
static const char *const config_columns[] = {"dtype",  "bits",     "n_ctx",    "chunk",
                                             "heads",  "kv_heads", "head_dim", "d_inner",
                                             "d_state", "batch", "disc"};
enum { CONFIG_COLUMNS = sizeof config_columns / sizeof config_columns[0] };

static void usage(FILE *out)
{
    fprintf(out,
        "usage: longmix compare-machines DIR DIR... [--out FILE.md] [--csv DIR]\n\n"
        "Puts the results folders of several machines (each the results/ of `make run`, or\n"
        "any folder of results CSVs from one machine) side by side, one Markdown table per\n"
        "question, one column per machine:\n"
        "  machines    host, CPU, cores, the ISA path compared, git revisions, files read\n"
        "  roofline    peak f32 FMA on that ISA, STREAM triad, ridge, int8 dot peak, per\n"
        "              thread count (the best reading over the folder's files)\n"
        "  kernels     each configuration's fraction of its own machine's roofline\n"
        "              (roofline_frac, same-run limits) and its median time\n"
        "  crossovers  measured n* per machine: kernel level (crossover_summary.csv), model\n"
        "              level (model_crossover.csv of longmix model, and any other\n"
        "              *crossover_summary.csv: the columns before the verdict are the key);\n"
        "              a crossover over busy or unsteady rows says (not a finding)\n"
        "Rows come from each folder's rows with status ok on the ISA its sweeps mostly ran;\n"
        "the first row of a configuration in file-name order is used, as merge does.\n"
        "  --out FILE  write the Markdown there instead of stdout\n"
        "  --csv DIR   also write each table as DIR/compare_<table>.csv\n"
        "A folder must hold rows of one host and CPU model (split it otherwise).\n");
}

static int fail_usage(const char *message)
{
    fprintf(stderr, "longmix compare-machines: %s\n", message);
    return LM_EXIT_USAGE;
}

static const char *cell(const lm_csv *csv, size_t r, const char *column)
{
    int c = lm_csv_column(csv, column);
    return c >= 0 ? csv->cells[r][c] : "";
}

static double number(const lm_csv *csv, size_t r, const char *column)
{
    return strtod(cell(csv, r, column), NULL);
}

static bool is_limit_kernel(const char *kernel)
{
    for (size_t i = 0; i < sizeof limit_kernels / sizeof limit_kernels[0]; i++)
        if (strcmp(kernel, limit_kernels[i]) == 0)
            return true;
    return false;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ---- loading ----------------------------------------------------------------------- */

static void free_machine(machine *m)
{
    for (size_t i = 0; i < m->file_count; i++)
        lm_csv_free(&m->files[i].csv);
    for (size_t i = 0; i < m->summary_count; i++)
        lm_csv_free(&m->summaries[i].csv);
    m->file_count = m->summary_count = 0;
}

/* The sorted *.csv names of `dir` into names[0..*count). */
static lm_status list_csv(const char *dir, char names[][256], size_t *count, lm_error *err)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return lm_fail(err, LM_ERR_IO, "cannot open folder %s", dir);
    *count = 0;
    lm_status s = LM_OK;
    for (struct dirent *e; s == LM_OK && (e = readdir(d)) != NULL;) {
        if (!ends_with(e->d_name, ".csv") || strlen(e->d_name) >= 256)
            continue;
        if (*count == MAX_FILES)
            s = lm_fail(err, LM_ERR_ARG, "%s holds more than %d CSV files", dir, MAX_FILES);
        else
            snprintf(names[(*count)++], 256, "%s", e->d_name);
    }
    closedir(d);
    char *order[MAX_FILES];
    for (size_t i = 0; i < *count; i++)
        order[i] = names[i];
    qsort(order, *count, sizeof order[0], compare_names);
    char sorted[MAX_FILES][256];
    for (size_t i = 0; i < *count; i++)
        memcpy(sorted[i], order[i], 256);
    memcpy(names, sorted, *count * 256);
    return s;
}

/* Reads one CSV of the folder into the machine's results or summaries (others ignored). */
static lm_status add_file(machine *m, const char *name, lm_error *err)
{
    char path[4096];
    int length = snprintf(path, sizeof path, "%s/%s", m->dir, name);
    if (length < 0 || (size_t)length >= sizeof path)
        return lm_fail(err, LM_ERR_ARG, "path too long: %s/%s", m->dir, name);
    lm_csv csv;
    lm_status s = lm_results_read(&csv, path, err);
    if (s != LM_OK)
        return s;
    lm_error ignored;
    named_csv *slot = NULL;
    if (lm_csv_check_results_header(&csv, path, &ignored) == LM_OK)
        slot = &m->files[m->file_count++];
    else if (ends_with(name, "crossover_summary.csv") && lm_csv_column(&csv, "found") > 0 &&
             lm_csv_column(&csv, "n_star") >= 0)
        slot = &m->summaries[m->summary_count++], slot->verdict = "found", slot->nstar = "n_star";
    else if (ends_with(name, "crossover.csv") && lm_csv_column(&csv, "verdict") > 0 &&
             lm_csv_column(&csv, "nstar_ctx") >= 0 && lm_csv_column(&csv, "baseline") >= 0)
        slot = &m->summaries[m->summary_count++], slot->verdict = "verdict",
        slot->nstar = "nstar_ctx";
    if (slot == NULL) {
        lm_csv_free(&csv);
        return LM_OK;
    }
    snprintf(slot->name, sizeof slot->name, "%s", name);
    slot->csv = csv;
    return LM_OK;
}

/* host, cpu_model, cores and git revisions of the machine's rows; one host and CPU. */
static lm_status identify(machine *m, lm_error *err)
{
    const char *first_file = NULL;
    m->host[0] = m->cpu[0] = m->git[0] = m->cores[0] = '\0';
    for (size_t f = 0; f < m->file_count; f++) {
        const lm_csv *csv = &m->files[f].csv;
        for (size_t r = 0; r < csv->rows; r++) {
            const char *host = cell(csv, r, "host"), *cpu = cell(csv, r, "cpu_model");
            const char *git = cell(csv, r, "git_rev");
            if (first_file == NULL) {
                first_file = m->files[f].name;
                snprintf(m->host, sizeof m->host, "%s", host);
                snprintf(m->cpu, sizeof m->cpu, "%s", cpu);
                snprintf(m->cores, sizeof m->cores, "%s", cell(csv, r, "cores"));
            } else if (strcmp(host, m->host) != 0 || strcmp(cpu, m->cpu) != 0) {
                return lm_fail(err, LM_ERR_SCHEMA,
                               "%s/%s: host '%s' (%s) differs from '%s' (%s) in %s: a folder "
                               "must hold one machine's results",
                               m->dir, m->files[f].name, host, cpu, m->host, m->cpu,
                               first_file);
            }
            if (strstr(m->git, git) == NULL && strlen(m->git) + strlen(git) + 3 < sizeof m->git)
                snprintf(m->git + strlen(m->git), sizeof m->git - strlen(m->git), "%s%s",
                         m->git[0] ? ", " : "", git);
        }
    }
    if (first_file == NULL)
        return lm_fail(err, LM_ERR_SCHEMA, "%s: no results rows (no CSV with the results "
                                           "header, or only empty ones)", m->dir);
    return LM_OK;
}

/* The ISA path most of the machine's kernel rows ran (the highest FMA peak when it has
 * none but the roofline). */
static void choose_isa(machine *m)
{
    const char *names[8] = {0};
    size_t counts[8] = {0}, kinds = 0;
    double best_peak = -1.0;
    m->isa[0] = '\0';
    for (size_t f = 0; f < m->file_count; f++) {
        const lm_csv *csv = &m->files[f].csv;
        for (size_t r = 0; r < csv->rows; r++) {
            const char *isa = cell(csv, r, "isa"), *kernel = cell(csv, r, "kernel");
            if (strcmp(kernel, "peak_fma") == 0 && number(csv, r, "gflops") > best_peak &&
                kinds == 0) {
                best_peak = number(csv, r, "gflops");
                snprintf(m->isa, sizeof m->isa, "%s", isa);
            }
            if (is_limit_kernel(kernel))
                continue;
            size_t k = 0;
            while (k < kinds && strcmp(names[k], isa) != 0)
                k++;
            if (k == kinds && kinds < 8)
                names[kinds++] = isa;
            if (k < kinds)
                counts[k]++;
        }
    }
    size_t best = 0;
    for (size_t k = 1; k < kinds; k++)
        if (counts[k] > counts[best])
            best = k;
    if (kinds > 0)
        snprintf(m->isa, sizeof m->isa, "%s", names[best]);
}

static lm_status load_machine(machine *m, const char *dir, lm_error *err)
{
    memset(m, 0, sizeof *m);
    m->dir = dir;
    char names[MAX_FILES][256];
    size_t count = 0;
    lm_status s = list_csv(dir, names, &count, err);
    for (size_t i = 0; s == LM_OK && i < count; i++)
        s = add_file(m, names[i], err);
    if (s == LM_OK)
        s = identify(m, err);
    if (s != LM_OK) {
        free_machine(m);
        return s;
    }
    choose_isa(m);
    return LM_OK;
}

/* Labels: the host name, with the folder beside it when two machines share a host. */
static void label_machines(comparison *c)
{
    for (size_t i = 0; i < c->count; i++) {
        machine *m = &c->machines[i];
        bool shared = false;
        for (size_t j = 0; j < c->count; j++)
            shared |= j != i && strcmp(c->machines[j].host, m->host) == 0;
        if (shared)
            snprintf(m->label, sizeof m->label, "%s (%s)", m->host, m->dir);
        else
            snprintf(m->label, sizeof m->label, "%s", m->host);
    }
}

/* ---- tables -------------------------------------------------------------------------- */

/* A table: header cells, rows of cells, all text; `numeric` columns align right. */
typedef struct table {
    const char *title, *note, *file;
    lm_csv grid;
    size_t first_numeric; /* columns from here on are right-aligned */
} table;

static lm_status table_init(table *t, const char *title, const char *file,
                            const char *const *fixed, size_t fixed_count, const comparison *c,
                            lm_error *err)
{
    const char *header[8 + MAX_MACHINES];
    size_t n = 0;
    for (; n < fixed_count; n++)
        header[n] = fixed[n];
    for (size_t i = 0; i < c->count; i++)
        header[n++] = c->machines[i].label;
    t->title = title;
    t->note = NULL;
    t->file = file;
    t->first_numeric = fixed_count;
    return lm_csv_init(&t->grid, header, n, err);
}

static void print_table(FILE *out, const table *t)
{
    fprintf(out, "## %s\n\n", t->title);
    if (t->note != NULL)
        fprintf(out, "%s\n\n", t->note);
    const lm_csv *g = &t->grid;
    fputc('|', out);
    for (size_t col = 0; col < g->columns; col++)
        fprintf(out, " %s |", g->header[col]);
    fputs("\n|", out);
    for (size_t col = 0; col < g->columns; col++)
        fputs(col >= t->first_numeric ? "--:|" : "---|", out);
    fputc('\n', out);
    for (size_t r = 0; r < g->rows; r++) {
        fputc('|', out);
        for (size_t col = 0; col < g->columns; col++)
            fprintf(out, " %s |", g->cells[r][col]);
        fputc('\n', out);
    }
    if (g->rows == 0)
        fprintf(out, "(no rows)\n");
    fputc('\n', out);
}

static void format_time(double s, char *out, size_t size)
{
    if (s <= 0)
        snprintf(out, size, "-");
    else if (s < 1e-3)
        snprintf(out, size, "%.1f µs", s * 1e6);
    else if (s < 1)
        snprintf(out, size, "%.3g ms", s * 1e3);
    else
        snprintf(out, size, "%.3g s", s);
}

static lm_status machines_table(const comparison *c, table *t, lm_error *err)
{
    static const char *const fixed[] = {"machine"};
    lm_status s = table_init(t, "Machines", "machines", fixed, 1, c, err);
    static const char *const rows[] = {"host", "CPU", "cores", "ISA compared", "git",
                                       "folder", "files"};
    for (size_t r = 0; s == LM_OK && r < sizeof rows / sizeof rows[0]; r++) {
        char cells[1 + MAX_MACHINES][CELL * 2];
        const char *ptr[1 + MAX_MACHINES];
        snprintf(cells[0], sizeof cells[0], "%s", rows[r]);
        for (size_t i = 0; i < c->count; i++) {
            const machine *m = &c->machines[i];
            char *v = cells[i + 1];
            size_t size = sizeof cells[i + 1];
            const char *values[] = {m->host, m->cpu, m->cores, m->isa, m->git, m->dir, ""};
            snprintf(v, size, "%s", values[r]);
            if (r == 6) /* files */
                for (size_t f = 0; f < m->file_count + m->summary_count; f++) {
                    const char *name = f < m->file_count ? m->files[f].name
                                                         : m->summaries[f - m->file_count].name;
                    if (strlen(v) + strlen(name) + 3 < size)
                        snprintf(v + strlen(v), size - strlen(v), "%s%s", f ? ", " : "", name);
                }
        }
        for (size_t i = 0; i <= c->count; i++)
            ptr[i] = cells[i];
        s = lm_csv_append(&t->grid, ptr, err);
    }
    t->first_numeric = 1 + c->count; /* all text */
    return s;
}

/* The best reading of limit `kernel` (gflops or gbps) on `threads`, the machine's ISA for
 * peak_fma and peak_dot_i8; 0 when absent. A limit can only read low, never high. */
static double best_limit(const machine *m, const char *kernel, long threads)
{
    bool per_isa = strcmp(kernel, "stream_triad") != 0;
    const char *value = per_isa ? "gflops" : "gbps";
    double best = 0.0;
    for (size_t f = 0; f < m->file_count; f++) {
        const lm_csv *csv = &m->files[f].csv;
        for (size_t r = 0; r < csv->rows; r++)
            if (strcmp(cell(csv, r, "kernel"), kernel) == 0 &&
                strcmp(cell(csv, r, "status"), "ok") == 0 &&
                (long)number(csv, r, "threads") == threads &&
                (!per_isa || strcmp(cell(csv, r, "isa"), m->isa) == 0) &&
                number(csv, r, value) > best)
                best = number(csv, r, value);
    }
    return best;
}

/* Thread counts any machine measured its limits on, ascending, into out[0..*count). */
static void limit_threads(const comparison *c, long *out, size_t *count, size_t max)
{
    *count = 0;
    for (size_t i = 0; i < c->count; i++)
        for (size_t f = 0; f < c->machines[i].file_count; f++) {
            const lm_csv *csv = &c->machines[i].files[f].csv;
            for (size_t r = 0; r < csv->rows; r++) {
                if (!is_limit_kernel(cell(csv, r, "kernel")))
                    continue;
                long t = (long)number(csv, r, "threads");
                size_t k = 0;
                while (k < *count && out[k] < t)
                    k++;
                if ((k < *count && out[k] == t) || *count == max)
                    continue;
                memmove(out + k + 1, out + k, (*count - k) * sizeof *out);
                out[k] = t;
                (*count)++;
            }
        }
}

static lm_status roofline_table(const comparison *c, table *t, lm_error *err)
{
    static const char *const fixed[] = {"limit", "threads"};
    lm_status s = table_init(t, "Roofline of each machine", "roofline", fixed, 2, c, err);
    t->note = "Peak f32 FMA on each machine's compared ISA path, STREAM triad, their ratio "
              "(the ridge: the arithmetic intensity where a kernel stops being memory-bound) "
              "and the int8 dot-product peak (AVX512-VNNI), per thread count; the best "
              "reading of the folder's files.";
    long threads[64];
    size_t thread_count = 0;
    limit_threads(c, threads, &thread_count, 64);
    static const char *const limits[] = {"peak f32 FMA, GFLOP/s", "STREAM triad, GB/s",
                                         "ridge, FLOP/byte", "int8 dot peak, GOP/s"};
    for (size_t l = 0; s == LM_OK && l < 4; l++)
        for (size_t k = 0; s == LM_OK && k < thread_count; k++) {
            char cells[2 + MAX_MACHINES][48];
            const char *ptr[2 + MAX_MACHINES];
            bool any = false;
            snprintf(cells[0], sizeof cells[0], "%s", limits[l]);
            snprintf(cells[1], sizeof cells[1], "%ld", threads[k]);
            for (size_t i = 0; i < c->count; i++) {
                const machine *m = &c->machines[i];
                double peak = best_limit(m, "peak_fma", threads[k]);
                double triad = best_limit(m, "stream_triad", threads[k]);
                double v = l == 0 ? peak
                         : l == 1 ? triad
                         : l == 2 ? (triad > 0 ? peak / triad : 0.0)
                                  : best_limit(m, "peak_dot_i8", threads[k]);
                any |= v > 0;
                if (v > 0)
                    snprintf(cells[2 + i], sizeof cells[2 + i], "%.1f", v);
                else
                    snprintf(cells[2 + i], sizeof cells[2 + i], "-");
            }
            for (size_t i = 0; i < 2 + c->count; i++)
                ptr[i] = cells[i];
            if (any) /* the int8 row only where some machine has the peak */
                s = lm_csv_append(&t->grid, ptr, err);
        }
    return s;
}

/* The kernel rows compared: status ok, not a limit, on the machine's ISA. */
static bool kernel_row(const machine *m, const lm_csv *csv, size_t r)
{
    return strcmp(cell(csv, r, "status"), "ok") == 0 &&
           !is_limit_kernel(cell(csv, r, "kernel")) &&
           strcmp(cell(csv, r, "isa"), m->isa) == 0;
}

/* "kernel|threads|dtype|bits|..." of a row (the key without the ISA). */
static void kernel_key(const lm_csv *csv, size_t r, char *out, size_t size)
{
    int n = snprintf(out, size, "%s|%s", cell(csv, r, "kernel"), cell(csv, r, "threads"));
    for (size_t k = 0; k < CONFIG_COLUMNS && n > 0 && (size_t)n < size; k++)
        n += snprintf(out + n, size - (size_t)n, "|%s", cell(csv, r, config_columns[k]));
}

/* The first row (file-name order) of machine m with this key: *file, *row; false if none. */
static bool find_kernel(const machine *m, const char *key, const lm_csv **file, size_t *row)
{
    char have[512];
    for (size_t f = 0; f < m->file_count; f++) {
        const lm_csv *csv = &m->files[f].csv;
        for (size_t r = 0; r < csv->rows; r++) {
            if (!kernel_row(m, csv, r))
                continue;
            kernel_key(csv, r, have, sizeof have);
            if (strcmp(have, key) == 0) {
                *file = csv;
                *row = r;
                return true;
            }
        }
    }
    return false;
}

/* Every compared key once, in order of first appearance (machine by machine). */
typedef struct key_list {
    char (*keys)[512];
    const lm_csv **files; /* a row holding the key, for its configuration */
    size_t *rows;
    size_t count, capacity;
} key_list;

static void key_list_free(key_list *k)
{
    free(k->keys), free(k->files), free(k->rows);
    memset(k, 0, sizeof *k);
}

static lm_status key_list_add(key_list *k, const char *key, const lm_csv *csv, size_t r,
                              lm_error *err)
{
    for (size_t i = 0; i < k->count; i++)
        if (strcmp(k->keys[i], key) == 0)
            return LM_OK;
    if (k->count == k->capacity) {
        size_t capacity = k->capacity ? 2 * k->capacity : 64;
        char(*keys)[512] = realloc(k->keys, capacity * sizeof *keys);
        if (keys != NULL)
            k->keys = keys;
        const lm_csv **files = realloc(k->files, capacity * sizeof *files);
        if (files != NULL)
            k->files = files;
        size_t *rows = realloc(k->rows, capacity * sizeof *rows);
        if (rows != NULL)
            k->rows = rows;
        if (keys == NULL || files == NULL || rows == NULL)
            return lm_fail(err, LM_ERR_NOMEM, "out of memory for the kernel table");
        k->capacity = capacity;
    }
    snprintf(k->keys[k->count], sizeof k->keys[0], "%s", key);
    k->files[k->count] = csv;
    k->rows[k->count++] = r;
    return LM_OK;
}

/* The configuration of key i in words: its dtype, then each column that differs between
 * the keys of the same kernel and dtype ("n_ctx 4096, chunk 64"; bits, which follow the
 * dtype, only when they vary within it). */
static void describe_config(const key_list *k, size_t i, char *out, size_t size)
{
    const lm_csv *csv = k->files[i];
    size_t r = k->rows[i];
    const char *kernel = cell(csv, r, "kernel"), *dtype = cell(csv, r, "dtype");
    int n = snprintf(out, size, "%s", dtype);
    for (size_t c = 1; c < CONFIG_COLUMNS; c++) {
        const char *mine = cell(csv, r, config_columns[c]);
        bool varies = false;
        for (size_t j = 0; j < k->count && !varies; j++)
            varies = strcmp(cell(k->files[j], k->rows[j], "kernel"), kernel) == 0 &&
                     strcmp(cell(k->files[j], k->rows[j], "dtype"), dtype) == 0 &&
                     strcmp(cell(k->files[j], k->rows[j], config_columns[c]), mine) != 0;
        if (varies && n > 0 && (size_t)n < size)
            n += snprintf(out + n, size - (size_t)n, ", %s %s", config_columns[c], mine);
    }
}

static lm_status kernels_table(const comparison *c, table *t, lm_error *err)
{
    static const char *const fixed[] = {"kernel", "configuration", "threads"};
    lm_status s = table_init(t, "Kernels: fraction of their own machine's roofline", "kernels",
                             fixed, 3, c, err);
    t->note = "Each cell: roofline_frac (the kernel's rate over min(peak FMA, intensity x "
              "triad) of the same run on that machine; above 1 when the working set stays in "
              "cache) and the median time. '-': not measured there.";
    key_list keys = {0};
    char key[512];
    for (size_t i = 0; s == LM_OK && i < c->count; i++)
        for (size_t f = 0; s == LM_OK && f < c->machines[i].file_count; f++) {
            const lm_csv *csv = &c->machines[i].files[f].csv;
            for (size_t r = 0; s == LM_OK && r < csv->rows; r++)
                if (kernel_row(&c->machines[i], csv, r)) {
                    kernel_key(csv, r, key, sizeof key);
                    s = key_list_add(&keys, key, csv, r, err);
                }
        }
    for (size_t k = 0; s == LM_OK && k < keys.count; k++) {
        char cells[3 + MAX_MACHINES][CELL];
        const char *ptr[3 + MAX_MACHINES];
        snprintf(cells[0], CELL, "%s", cell(keys.files[k], keys.rows[k], "kernel"));
        describe_config(&keys, k, cells[1], CELL);
        snprintf(cells[2], CELL, "%s", cell(keys.files[k], keys.rows[k], "threads"));
        for (size_t i = 0; i < c->count; i++) {
            const lm_csv *csv;
            size_t r;
            char time[32];
            if (!find_kernel(&c->machines[i], keys.keys[k], &csv, &r)) {
                snprintf(cells[3 + i], CELL, "-");
                continue;
            }
            format_time(number(csv, r, "median_s"), time, sizeof time);
            double frac = number(csv, r, "roofline_frac");
            if (frac > 0)
                snprintf(cells[3 + i], CELL, "%.2f (%s)", frac, time);
            else
                snprintf(cells[3 + i], CELL, "- (%s)", time);
        }
        for (size_t i = 0; i < 3 + c->count; i++)
            ptr[i] = cells[i];
        s = lm_csv_append(&t->grid, ptr, err);
    }
    key_list_free(&keys);
    return s;
}

/* ---- crossovers ------------------------------------------------------------------------ */

/* Whether column col of a crossover file is part of its key: before the verdict, and not
 * where the row was measured (isa, and the provenance columns of model_crossover.csv). */
static bool key_column(const named_csv *file, int col)
{
    static const char *const where[] = {"isa", "run_id", "timestamp", "git_rev", "host",
                                        "cpu_model"};
    if (col >= lm_csv_column(&file->csv, file->verdict))
        return false;
    for (size_t i = 0; i < sizeof where / sizeof where[0]; i++)
        if (strcmp(file->csv.header[col], where[i]) == 0)
            return false;
    return true;
}

/* The key of summary row r: its key columns joined by '|'. */
static void summary_key(const named_csv *file, size_t r, char *out, size_t size)
{
    int n = 0;
    out[0] = '\0';
    for (int col = 0; col < (int)file->csv.columns && n >= 0 && (size_t)n < size; col++)
        if (key_column(file, col))
            n += snprintf(out + n, size - (size_t)n, "%s%s", n ? "|" : "", file->csv.cells[r][col]);
}

static const named_csv *summary_named(const machine *m, const char *name)
{
    for (size_t i = 0; i < m->summary_count; i++)
        if (strcmp(m->summaries[i].name, name) == 0)
            return &m->summaries[i];
    return NULL;
}

/* Summary row of machine m with this key on its ISA (any ISA when the file has none). */
static bool find_summary(const machine *m, const named_csv *file, const char *key, size_t *row)
{
    char have[1024];
    int isa = lm_csv_column(&file->csv, "isa");
    for (size_t r = 0; r < file->csv.rows; r++) {
        if (isa >= 0 && strcmp(file->csv.cells[r][isa], m->isa) != 0)
            continue;
        summary_key(file, r, have, sizeof have);
        if (strcmp(have, key) == 0) {
            *row = r;
            return true;
        }
    }
    return false;
}

/* "883", "<= 64", "> 16384" or "no data", from the verdict and n* (crossover: found,
 * below_grid, above_grid; model: crossed, faster_below, faster_at_every_ctx at the first common ctx,
 * slower_at_every_ctx at the last, tie: within 5 % up to the last), with " (not a finding)" when the rows behind a model
 * crossover were busy, unsteady or over the stream. */
static void format_n_star(const named_csv *file, size_t r, char *out, size_t size)
{
    const lm_csv *csv = &file->csv;
    const char *verdict = cell(csv, r, file->verdict);
    double n = number(csv, r, file->nstar);
    if (strcmp(verdict, "found") == 0 || strcmp(verdict, "crossed") == 0)
        snprintf(out, size, "%.0f", n);
    else if (strcmp(verdict, "below_grid") == 0)
        snprintf(out, size, "<= %.0f", n);
    else if (strcmp(verdict, "faster_below") == 0)
        snprintf(out, size, "%.0f (faster below)", n);
    else if (strcmp(verdict, "faster_at_every_ctx") == 0)
        snprintf(out, size, "<= %.0f", number(csv, r, "upper_ctx"));
    else if (strcmp(verdict, "above_grid") == 0)
        snprintf(out, size, "> %.0f", n);
    else if (strcmp(verdict, "slower_at_every_ctx") == 0)
        snprintf(out, size, "> %.0f", number(csv, r, "lower_ctx"));
    else if (strcmp(verdict, "tie") == 0)
        snprintf(out, size, "tie to %.0f", number(csv, r, "lower_ctx"));
    else
        snprintf(out, size, "no data");
    if (strcmp(cell(csv, r, "trust"), "not_a_finding") == 0) {
        size_t used = strlen(out);
        snprintf(out + used, size - used, " (not a finding)");
    }
}

/* One crossover table for the summary files called `name` (the first machine holding one
 * gives the key columns). */
static lm_status crossover_table(const comparison *c, const char *name, table *t, char *title,
                                 size_t title_size, lm_error *err)
{
    const named_csv *shape = NULL;
    for (size_t i = 0; i < c->count && shape == NULL; i++)
        shape = summary_named(&c->machines[i], name);
    const char *fixed[32];
    size_t fixed_count = 0;
    for (int col = 0; col < (int)shape->csv.columns && fixed_count < 30; col++)
        if (key_column(shape, col))
            fixed[fixed_count++] = shape->csv.header[col];
    snprintf(title, title_size, "%s crossover, measured n* (%s)",
             strstr(name, "model") != NULL ? "Model-level" : "Kernel-level", name);
    lm_status s = table_init(t, title, name, fixed, fixed_count, c, err);
    t->note = "n*: the context where the growing cost (attention) reaches the other, per "
              "machine on its compared ISA; '<= n' / '> n': outside the measured grid.";
    key_list keys = {0};
    char key[1024];
    for (size_t i = 0; s == LM_OK && i < c->count; i++) {
        const named_csv *file = summary_named(&c->machines[i], name);
        for (size_t r = 0; s == LM_OK && file != NULL && r < file->csv.rows; r++) {
            summary_key(file, r, key, sizeof key);
            s = key_list_add(&keys, key, &file->csv, r, err);
        }
    }
    for (size_t k = 0; s == LM_OK && k < keys.count; k++) {
        char cells[32 + MAX_MACHINES][CELL];
        const char *ptr[32 + MAX_MACHINES];
        size_t n = 0;
        for (int col = 0; col < (int)shape->csv.columns && n < fixed_count; col++)
            if (key_column(shape, col))
                snprintf(cells[n++], CELL, "%s", cell(keys.files[k], keys.rows[k], shape->csv.header[col]));
        for (size_t i = 0; i < c->count; i++, n++) {
            const named_csv *file = summary_named(&c->machines[i], name);
            size_t r;
            if (file != NULL && find_summary(&c->machines[i], file, keys.keys[k], &r))
                format_n_star(file, r, cells[n], CELL);
            else
                snprintf(cells[n], CELL, "-");
        }
        for (size_t i = 0; i < n; i++)
            ptr[i] = cells[i];
        s = lm_csv_append(&t->grid, ptr, err);
    }
    key_list_free(&keys);
    return s;
}

/* Distinct summary file names over the machines, crossover_summary.csv first. */
static size_t summary_names(const comparison *c, const char **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < c->count; i++)
        for (size_t f = 0; f < c->machines[i].summary_count; f++) {
            const char *name = c->machines[i].summaries[f].name;
            bool seen = false;
            for (size_t k = 0; k < n && !seen; k++)
                seen = strcmp(out[k], name) == 0;
            if (!seen && n < max)
                out[n++] = name;
        }
    for (size_t k = 1; k < n; k++) /* the kernel-level file leads */
        if (strcmp(out[k], "crossover_summary.csv") == 0) {
            const char *first = out[k];
            memmove(out + 1, out, k * sizeof *out);
            out[0] = first;
        }
    return n;
}

/* ---- the command ------------------------------------------------------------------------ */

static lm_status write_csv_tables(const table *tables, size_t count, const char *dir,
                                  lm_error *err)
{
    for (size_t i = 0; i < count; i++) {
        char path[4096], stem[256];
        snprintf(stem, sizeof stem, "%s", tables[i].file);
        char *dot = strstr(stem, ".csv");
        if (dot != NULL)
            *dot = '\0';
        int length = snprintf(path, sizeof path, "%s/compare_%s.csv", dir, stem);
        if (length < 0 || (size_t)length >= sizeof path)
            return lm_fail(err, LM_ERR_ARG, "path too long: %s", dir);
        lm_status s = lm_csv_write_atomic(&tables[i].grid, path, err);
        if (s != LM_OK)
            return s;
    }
    return LM_OK;
}

static lm_status write_markdown(const comparison *c, const table *tables, size_t count,
                                const char *path, lm_error *err)
{
    char tmp[4096];
    FILE *out = stdout;
    if (path != NULL) {
        int length = snprintf(tmp, sizeof tmp, "%s.tmp", path);
        if (length < 0 || (size_t)length >= sizeof tmp || (out = fopen(tmp, "w")) == NULL)
            return lm_fail(err, LM_ERR_IO, "cannot write %s", tmp);
    }
    fprintf(out, "# longmix: %zu machines compared\n\n", c->count);
    for (size_t i = 0; i < count; i++)
        print_table(out, &tables[i]);
    if (path == NULL)
        return fflush(out) == 0 ? LM_OK : lm_fail(err, LM_ERR_IO, "cannot write stdout");
    bool ok = fflush(out) == 0;
    ok &= fclose(out) == 0;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return lm_fail(err, LM_ERR_IO, "cannot write %s", path);
    }
    return LM_OK;
}

static lm_status build_tables(const comparison *c, table *tables, size_t *count,
                              char titles[][256], lm_error *err)
{
    /* counted before filling: a table that failed half-way is freed with the others */
    *count = 0;
    lm_status s = machines_table(c, &tables[(*count)++], err);
    if (s == LM_OK)
        s = roofline_table(c, &tables[(*count)++], err);
    if (s == LM_OK)
        s = kernels_table(c, &tables[(*count)++], err);
    const char *names[8];
    size_t n = summary_names(c, names, 8);
    for (size_t i = 0; s == LM_OK && i < n; i++)
        s = crossover_table(c, names[i], &tables[(*count)++], titles[i], 256, err);
    return s;
}

int lm_cmd_compare_machines(int argc, char **argv)
{
    const char *out_path = NULL, *csv_dir = NULL;
    const char *dirs[MAX_MACHINES];
    size_t dir_count = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return LM_EXIT_OK;
        } else if (strcmp(a, "--out") == 0 || strcmp(a, "--csv") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "longmix compare-machines: %s needs a value\n", a);
                return LM_EXIT_USAGE;
            }
            *(a[2] == 'o' ? &out_path : &csv_dir) = argv[++i];
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "longmix compare-machines: unknown option '%s'\n\n", a);
            usage(stderr);
            return LM_EXIT_USAGE;
        } else if (dir_count == MAX_MACHINES) {
            return fail_usage("at most 16 machines at once");
        } else {
            dirs[dir_count++] = a;
        }
    }
    if (dir_count < 2) {
        fprintf(stderr, "longmix compare-machines: give two or more results folders\n\n");
        usage(stderr);
        return LM_EXIT_USAGE;
    }
    comparison *c = calloc(1, sizeof *c);
    table tables[3 + 8] = {0};
    char titles[8][256];
    size_t table_count = 0;
    lm_error err;
    lm_status s = c == NULL ? lm_fail(&err, LM_ERR_NOMEM, "out of memory") : LM_OK;
    for (size_t i = 0; s == LM_OK && i < dir_count; i++)
        if ((s = load_machine(&c->machines[i], dirs[i], &err)) == LM_OK)
            c->count++;
    if (s == LM_OK) {
        label_machines(c);
        s = build_tables(c, tables, &table_count, titles, &err);
    }
    if (s == LM_OK)
        s = write_markdown(c, tables, table_count, out_path, &err);
    if (s == LM_OK && csv_dir != NULL)
        s = write_csv_tables(tables, table_count, csv_dir, &err);
    if (s == LM_OK)
        fprintf(stderr, "longmix compare-machines: %zu machines, %zu tables%s%s%s%s\n",
                c->count, table_count, out_path ? " -> " : "", out_path ? out_path : "",
                csv_dir ? "; CSV in " : "", csv_dir ? csv_dir : "");
    else
        fprintf(stderr, "longmix compare-machines: %s\n", err.message);
    for (size_t i = 0; i < table_count; i++)
        lm_csv_free(&tables[i].grid);
    for (size_t i = 0; c != NULL && i < c->count; i++)
        free_machine(&c->machines[i]);
    free(c);
    return s == LM_OK ? LM_EXIT_OK : LM_EXIT_USAGE;
}

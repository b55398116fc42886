/* Results CSV: columns, quoting, atomic writes, reading back. */
#include "csv.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const lm_results_columns[LM_RESULTS_COLUMNS] = {
    /* DESIGN.md "Results CSV", in order: */
    "run_id", "timestamp", "git_rev", "host", "cpu_model", "isa", "threads", "kernel", "dtype",
    "bits", "n_ctx", "chunk", "heads", "kv_heads", "head_dim", "d_inner", "d_state", "batch",
    "reps", "median_s", "min_s", "p25_s", "p75_s", "gflops", "gbps", "roofline_frac",
    "checksum", "status",
    /* longmix extras: */
    "flops", "bytes", "err_max", "note", "compiler", "cores", "llc_bytes", LM_RESULTS_REP_TIMES,
    LM_RESULTS_REP_CPU};

const char *const lm_results_key_columns[LM_RESULTS_KEY_COLUMNS] = {
    "kernel", "isa", "threads", "dtype", "bits", "n_ctx", "chunk",
    "heads", "kv_heads", "head_dim", "d_inner", "d_state", "batch"};

static char *copy_text(const char *s)
{
    size_t n = strlen(s ? s : "");
    char *out = malloc(n + 1);
    if (out != NULL)
        memcpy(out, s ? s : "", n + 1);
    return out;
}

lm_status lm_csv_init(lm_csv *csv, const char *const *header, size_t columns, lm_error *err)
{
    memset(csv, 0, sizeof *csv);
    csv->header = calloc(columns ? columns : 1, sizeof *csv->header);
    if (csv->header == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for a CSV header");
    csv->columns = columns;
    for (size_t c = 0; c < columns; c++)
        if ((csv->header[c] = copy_text(header[c])) == NULL) {
            lm_csv_free(csv);
            return lm_fail(err, LM_ERR_NOMEM, "out of memory for a CSV header");
        }
    return LM_OK;
}

lm_status lm_csv_init_results(lm_csv *csv, lm_error *err)
{
    return lm_csv_init(csv, lm_results_columns, LM_RESULTS_COLUMNS, err);
}

static void free_row(char **row, size_t columns)
{
    if (row == NULL)
        return;
    for (size_t c = 0; c < columns; c++)
        free(row[c]);
    free(row);
}

void lm_csv_free(lm_csv *csv)
{
    for (size_t r = 0; r < csv->rows; r++)
        free_row(csv->cells[r], csv->columns);
    if (csv->header != NULL)
        for (size_t c = 0; c < csv->columns; c++)
            free(csv->header[c]);
    free(csv->header);
    free(csv->cells);
    memset(csv, 0, sizeof *csv);
}

lm_status lm_csv_append(lm_csv *csv, const char *const *cells, lm_error *err)
{
    if (csv->rows == csv->capacity) {
        size_t capacity = csv->capacity ? 2 * csv->capacity : 16;
        char ***grown = realloc(csv->cells, capacity * sizeof *grown);
        if (grown == NULL)
            return lm_fail(err, LM_ERR_NOMEM, "out of memory for CSV rows");
        csv->cells = grown;
        csv->capacity = capacity;
    }
    char **row = calloc(csv->columns ? csv->columns : 1, sizeof *row);
    if (row == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for a CSV row");
    for (size_t c = 0; c < csv->columns; c++)
        if ((row[c] = copy_text(cells[c])) == NULL) {
            free_row(row, csv->columns);
            return lm_fail(err, LM_ERR_NOMEM, "out of memory for a CSV cell");
        }
    csv->cells[csv->rows++] = row;
    return LM_OK;
}

int lm_csv_column(const lm_csv *csv, const char *name)
{
    for (size_t c = 0; c < csv->columns; c++)
        if (strcmp(csv->header[c], name) == 0)
            return (int)c;
    return -1;
}

void lm_csv_write_field(FILE *out, const char *field)
{
    const char *f = field ? field : "";
    size_t n = strlen(f);
    int quote = strpbrk(f, ",\"\r\n") != NULL || (n > 0 && (f[0] == ' ' || f[n - 1] == ' '));
    if (!quote) {
        fputs(f, out);
        return;
    }
    fputc('"', out);
    for (; *f; f++) {
        if (*f == '"')
            fputc('"', out);
        fputc(*f, out);
    }
    fputc('"', out);
}

static void write_line(FILE *out, char *const *cells, size_t columns)
{
    for (size_t c = 0; c < columns; c++) {
        if (c > 0)
            fputc(',', out);
        lm_csv_write_field(out, cells[c]);
    }
    fputc('\n', out);
}

lm_status lm_csv_write_atomic(const lm_csv *csv, const char *path, lm_error *err)
{
    size_t n = strlen(path) + 32;
    char *temp = malloc(n);
    if (temp == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory writing %s", path);
    snprintf(temp, n, "%s.tmp.%ld", path, (long)getpid());
    FILE *out = fopen(temp, "w");
    if (out == NULL) {
        lm_status s = lm_fail(err, LM_ERR_IO, "cannot write %s (temp file %s)", path, temp);
        free(temp);
        return s;
    }
    write_line(out, csv->header, csv->columns);
    for (size_t r = 0; r < csv->rows; r++)
        write_line(out, csv->cells[r], csv->columns);
    int failed = fflush(out) != 0 || ferror(out);
    failed |= fsync(fileno(out)) != 0;
    failed |= fclose(out) != 0;
    if (failed || rename(temp, path) != 0) {
        remove(temp);
        free(temp);
        return lm_fail(err, LM_ERR_IO, "cannot write %s (disk full or directory not writable?)",
                       path);
    }
    free(temp);
    return LM_OK;
}

/* ---- reading ------------------------------------------------------------------------ */

typedef struct field_list {
    char **items;
    size_t count, capacity;
} field_list;

static int push_field(field_list *list, const char *text, size_t len)
{
    if (list->count == list->capacity) {
        size_t capacity = list->capacity ? 2 * list->capacity : 64;
        char **grown = realloc(list->items, capacity * sizeof *grown);
        if (grown == NULL)
            return -1;
        list->items = grown;
        list->capacity = capacity;
    }
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return -1;
    memcpy(copy, text, len);
    copy[len] = '\0';
    list->items[list->count++] = copy;
    return 0;
}

static void clear_fields(field_list *list)
{
    for (size_t i = 0; i < list->count; i++)
        free(list->items[i]);
    list->count = 0;
}

/* Parses one record starting at *pos into fields; advances *pos past its newline.
 * Returns 1 for a record, 0 at the end, -1 for an unterminated quote, -2 out of memory. */
static int parse_record(const char *text, size_t length, size_t *pos, field_list *fields,
                        char *scratch)
{
    size_t p = *pos;
    if (p >= length)
        return 0;
    for (;;) {
        size_t len = 0;
        if (text[p] == '"') {
            p++;
            for (;;) {
                if (p >= length)
                    return -1;
                if (text[p] == '"') {
                    if (p + 1 < length && text[p + 1] == '"') {
                        scratch[len++] = '"';
                        p += 2;
                        continue;
                    }
                    p++;
                    break;
                }
                scratch[len++] = text[p++];
            }
            while (p < length && text[p] != ',' && text[p] != '\n')
                p++; /* ignore anything between the closing quote and the separator (\r) */
        } else {
            while (p < length && text[p] != ',' && text[p] != '\n')
                scratch[len++] = text[p++];
            if (len > 0 && scratch[len - 1] == '\r')
                len--;
        }
        if (push_field(fields, scratch, len) != 0)
            return -2;
        if (p < length && text[p] == ',') {
            p++;
            continue;
        }
        if (p < length)
            p++; /* newline */
        *pos = p;
        return 1;
    }
}

static char *slurp(const char *path, size_t *length)
{
    FILE *in = fopen(path, "rb");
    if (in == NULL)
        return NULL;
    size_t capacity = 1 << 16, n = 0;
    char *buffer = malloc(capacity + 1);
    while (buffer != NULL) {
        n += fread(buffer + n, 1, capacity - n, in);
        if (n < capacity)
            break;
        capacity *= 2;
        char *grown = realloc(buffer, capacity + 1);
        if (grown == NULL) {
            free(buffer);
            buffer = NULL;
        }
        buffer = grown;
    }
    int bad = ferror(in);
    fclose(in);
    if (buffer == NULL || bad) {
        free(buffer);
        return NULL;
    }
    buffer[n] = '\0';
    *length = n;
    return buffer;
}

lm_status lm_csv_read(lm_csv *csv, const char *path, lm_error *err)
{
    memset(csv, 0, sizeof *csv);
    size_t length = 0;
    char *text = slurp(path, &length);
    if (text == NULL)
        return lm_fail(err, LM_ERR_IO, "cannot read %s", path);
    char *scratch = malloc(length + 1);
    field_list fields = {0};
    size_t pos = 0, line = 1;
    lm_status status = LM_OK;
    if (scratch == NULL) {
        free(text);
        return lm_fail(err, LM_ERR_NOMEM, "out of memory reading %s", path);
    }
    int got = parse_record(text, length, &pos, &fields, scratch);
    if (got <= 0) {
        status = got == 0 ? lm_fail(err, LM_ERR_PARSE, "%s: empty file (no header line)", path)
                          : lm_fail(err, LM_ERR_PARSE, "%s:1: malformed header", path);
        goto done;
    }
    status = lm_csv_init(csv, (const char *const *)fields.items, fields.count, err);
    clear_fields(&fields);
    while (status == LM_OK) {
        size_t start = pos;
        line++;
        got = parse_record(text, length, &pos, &fields, scratch);
        if (got == 0)
            break;
        if (got < 0) {
            status = lm_fail(err, LM_ERR_PARSE, "%s:%zu: unterminated quoted field", path, line);
            break;
        }
        for (size_t i = start; i < pos; i++) /* quoted newlines advance the line count */
            line += text[i] == '\n' && i + 1 < pos;
        if (fields.count == 1 && fields.items[0][0] == '\0') { /* blank line */
            clear_fields(&fields);
            continue;
        }
        if (fields.count != csv->columns)
            status = lm_fail(err, LM_ERR_PARSE, "%s:%zu: %zu fields where the header has %zu",
                             path, line, fields.count, csv->columns);
        else
            status = lm_csv_append(csv, (const char *const *)fields.items, err);
        clear_fields(&fields);
    }
done:
    clear_fields(&fields);
    free(fields.items);
    free(scratch);
    free(text);
    if (status != LM_OK)
        lm_csv_free(csv);
    return status;
}

lm_status lm_csv_check_results_header(const lm_csv *csv, const char *path, lm_error *err)
{
    for (size_t c = 0; c < LM_RESULTS_REQUIRED; c++)
        if (c >= csv->columns || strcmp(csv->header[c], lm_results_columns[c]) != 0)
            return lm_fail(err, LM_ERR_SCHEMA,
                           "%s: column %zu must be '%s' (the DESIGN.md results columns, in order)",
                           path, c + 1, lm_results_columns[c]);
    return LM_OK;
}

void lm_csv_row_key(const lm_csv *csv, size_t r, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t k = 0; k < LM_RESULTS_KEY_COLUMNS; k++) {
        int c = lm_csv_column(csv, lm_results_key_columns[k]);
        const char *v = c >= 0 ? csv->cells[r][c] : "";
        int n = snprintf(out + used, used < size ? size - used : 0, "%s%s", k ? "|" : "", v);
        if (n > 0)
            used += (size_t)n;
    }
}

/* ---- typed rows ----------------------------------------------------------------- */

enum { CELL = 160, REP_TEXT = LM_RESULTS_MAX_REP_TIMES * 24 };

static void fmt_double(char *out, double v)
{
    if (v != v)
        snprintf(out, CELL, "nan");
    else
        snprintf(out, CELL, "%.9g", v);
}

/* The repetition times as "t1;t2;...", each %.9g. */
static void fmt_rep_times(char *out, size_t size, const double *times, size_t count)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < count && i < LM_RESULTS_MAX_REP_TIMES && times != NULL; i++) {
        int n = snprintf(out + used, size - used, "%s%.9g", i ? ";" : "", times[i]);
        used += n > 0 ? (size_t)n : 0;
    }
}

lm_status lm_result_append(lm_csv *csv, const lm_machine_meta *meta, const lm_result_row *row,
                           lm_error *err)
{
    char rep_times[REP_TEXT], rep_cpu[REP_TEXT];
    char cells[LM_RESULTS_COLUMNS][CELL];
    const char *ptrs[LM_RESULTS_COLUMNS];
    int i = 0;
#define TEXT(v) snprintf(cells[i++], CELL, "%s", (v) ? (v) : "")
#define LONG(v) snprintf(cells[i++], CELL, "%ld", (long)(v))
#define REAL(v) fmt_double(cells[i++], (v))
    TEXT(meta->run_id);
    TEXT(meta->timestamp);
    TEXT(meta->git_rev);
    TEXT(meta->host);
    TEXT(meta->cpu_model);
    TEXT(row->isa);
    LONG(row->threads);
    TEXT(row->kernel);
    TEXT(row->dtype);
    LONG(row->bits);
    LONG(row->n_ctx);
    LONG(row->chunk);
    LONG(row->heads);
    LONG(row->kv_heads);
    LONG(row->head_dim);
    LONG(row->d_inner);
    LONG(row->d_state);
    LONG(row->batch);
    LONG(row->reps);
    REAL(row->time.median);
    REAL(row->time.min);
    REAL(row->time.p25);
    REAL(row->time.p75);
    REAL(row->gflops);
    REAL(row->gbps);
    REAL(row->roofline_frac);
    REAL(row->checksum);
    TEXT(row->status);
    REAL(row->flops);
    REAL(row->bytes);
    REAL(row->err_max);
    TEXT(row->note);
    TEXT(meta->compiler);
    LONG(meta->cores);
    LONG(meta->llc_bytes_total);
#undef TEXT
#undef LONG
#undef REAL
    for (int c = 0; c < LM_RESULTS_COLUMNS; c++)
        ptrs[c] = cells[c];
    fmt_rep_times(rep_times, sizeof rep_times, row->rep_times, row->rep_count);
    fmt_rep_times(rep_cpu, sizeof rep_cpu, row->rep_cpu_times, row->rep_count);
    ptrs[i] = rep_times;
    ptrs[i + 1] = rep_cpu;
    if (csv->columns != LM_RESULTS_COLUMNS)
        return lm_fail(err, LM_ERR_SCHEMA, "results table must have the %d results columns",
                       LM_RESULTS_COLUMNS);
    return lm_csv_append(csv, ptrs, err);
}

void lm_result_key(const lm_result_row *row, char *out, size_t size)
{
    snprintf(out, size, "%s|%s|%d|%s|%d|%ld|%ld|%ld|%ld|%ld|%ld|%ld|%ld", row->kernel, row->isa,
             row->threads, row->dtype, row->bits, row->n_ctx, row->chunk, row->heads,
             row->kv_heads, row->head_dim, row->d_inner, row->d_state, row->batch);
}

/* ---- merge ------------------------------------------------------------------------ */

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
                           "%s: %s '%s' differs from '%s' in %s; results of different machines or "
                           "versions do not merge (pass --force to merge anyway)",
                           name, column, v, *first, *first_name);
        }
    }
    return LM_OK;
}

lm_status lm_results_merge(const lm_csv *inputs, const char *const *names, size_t count,
                           bool force, lm_csv *out, lm_error *err)
{
    const char *cpu = NULL, *cpu_from = NULL, *rev = NULL, *rev_from = NULL;
    memset(out, 0, sizeof *out);
    if (count == 0)
        return lm_fail(err, LM_ERR_ARG, "merge needs at least one input file");
    for (size_t i = 0; i < count; i++) {
        lm_status s = lm_csv_check_results_header(&inputs[i], names[i], err);
        if (s == LM_OK && inputs[i].columns != inputs[0].columns)
            s = lm_fail(err, LM_ERR_SCHEMA, "%s has %zu columns where %s has %zu", names[i],
                        inputs[i].columns, names[0], inputs[0].columns);
        if (s == LM_OK)
            s = same_machine(&inputs[i], names[i], "cpu_model", &cpu, &cpu_from, force, err);
        if (s == LM_OK)
            s = same_machine(&inputs[i], names[i], "git_rev", &rev, &rev_from, force, err);
        if (s != LM_OK)
            return s;
    }
    lm_status s = lm_csv_init(out, (const char *const *)inputs[0].header, inputs[0].columns, err);
    size_t total = 0;
    for (size_t i = 0; i < count; i++)
        total += inputs[i].rows;
    char (*keys)[512] = calloc(total ? total : 1, sizeof *keys);
    size_t nkeys = 0;
    if (keys == NULL && s == LM_OK)
        s = lm_fail(err, LM_ERR_NOMEM, "out of memory merging");
    for (size_t i = 0; i < count && s == LM_OK; i++)
        for (size_t r = 0; r < inputs[i].rows && s == LM_OK; r++) {
            char key[512];
            int cpu_c = lm_csv_column(&inputs[i], "cpu_model");
            int rev_c = lm_csv_column(&inputs[i], "git_rev");
            lm_csv_row_key(&inputs[i], r, key, sizeof key - 200);
            /* with --force, the same configuration on two machines is two rows */
            snprintf(key + strlen(key), 200, "|%.90s|%.90s", inputs[i].cells[r][cpu_c],
                     inputs[i].cells[r][rev_c]);
            bool seen = false;
            for (size_t k = 0; k < nkeys && !seen; k++)
                seen = strcmp(keys[k], key) == 0;
            if (seen)
                continue;
            memcpy(keys[nkeys++], key, sizeof key);
            s = lm_csv_append(out, (const char *const *)inputs[i].cells[r], err);
        }
    free(keys);
    if (s != LM_OK)
        lm_csv_free(out);
    return s;
}

/* Results CSV: columns, quoting, atomic writes, reading back. */
#include "csv.h"
#include "files.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const lm_results_columns[LM_RESULTS_COLUMNS] = {
    /* the results columns (docs/benchmarks.md, "The results CSV"), in order: */
    "run_id", "timestamp", "git_rev", "host", "cpu_model", "isa", "threads", "kernel", "dtype",
    "bits", "n_ctx", "chunk", "heads", "kv_heads", "head_dim", "d_inner", "d_state", "batch",
    "reps", "median_s", "min_s", "p25_s", "p75_s", "gflops", "gbps", "roofline_frac",
    "checksum", "status",
    /* longmix extras: */
    "flops", "bytes", "err_max", "note", "compiler", "cores", "llc_bytes", LM_RESULTS_REP_TIMES,
    LM_RESULTS_REP_CPU, "disc", "busy_cores", "disturbed"};

const char *const lm_results_key_columns[LM_RESULTS_KEY_COLUMNS] = {
    "kernel", "isa", "threads", "dtype", "bits", "n_ctx", "chunk",
    "heads", "kv_heads", "head_dim", "d_inner", "d_state", "batch", "disc"};

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
    free(csv->line);
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
        size_t *lines = realloc(csv->line, capacity * sizeof *lines);
        if (lines == NULL)
            return lm_fail(err, LM_ERR_NOMEM, "out of memory for CSV rows");
        csv->line = lines;
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
    csv->line[csv->rows] = 0;
    csv->cells[csv->rows++] = row;
    return LM_OK;
}

lm_status lm_csv_add_column(lm_csv *csv, const char *name, lm_error *err)
{
    char **header = realloc(csv->header, (csv->columns + 1) * sizeof *header);
    if (header == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for a CSV column");
    csv->header = header;
    if ((header[csv->columns] = copy_text(name)) == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for a CSV column");
    for (size_t r = 0; r < csv->rows; r++) {
        char **row = realloc(csv->cells[r], (csv->columns + 1) * sizeof *row);
        char *cell = row != NULL ? copy_text("") : NULL;
        if (row != NULL)
            csv->cells[r] = row;
        if (cell == NULL) { /* the rows before r hold the new cell: drop them again */
            for (size_t q = 0; q < r; q++)
                free(csv->cells[q][csv->columns]);
            free(header[csv->columns]);
            return lm_fail(err, LM_ERR_NOMEM, "out of memory for a CSV column");
        }
        row[csv->columns] = cell;
    }
    csv->columns++;
    return LM_OK;
}

void lm_csv_remove_row(lm_csv *csv, size_t r)
{
    if (r >= csv->rows)
        return;
    free_row(csv->cells[r], csv->columns);
    memmove(&csv->cells[r], &csv->cells[r + 1], (csv->rows - r - 1) * sizeof *csv->cells);
    memmove(&csv->line[r], &csv->line[r + 1], (csv->rows - r - 1) * sizeof *csv->line);
    csv->rows--;
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
    lm_atomic_file file;
    lm_status status = lm_atomic_open(&file, path, err);
    if (status != LM_OK)
        return status;
    write_line(file.stream, csv->header, csv->columns);
    for (size_t r = 0; r < csv->rows; r++)
        write_line(file.stream, csv->cells[r], csv->columns);
    return lm_atomic_commit(&file, err);
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
        if (p < length && text[p] == '"') { /* p == length: an empty last field after ',' */
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

lm_status lm_csv_read(lm_csv *csv, const char *path, lm_error *err)
{
    memset(csv, 0, sizeof *csv);
    size_t length = 0;
    char *text;
    lm_status status = lm_read_file(path, LM_CSV_MAX_BYTES, false, &text, &length, err);
    if (status != LM_OK)
        return status;
    status = lm_csv_parse(csv, text, length, path, err);
    free(text);
    return status;
}

lm_status lm_csv_parse(lm_csv *csv, const char *text, size_t length, const char *path,
                       lm_error *err)
{
    memset(csv, 0, sizeof *csv);
    lm_status status = LM_OK;
    char *scratch = malloc(length + 1);
    field_list fields = {0};
    size_t pos = 0, line = 1;
    if (scratch == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory reading %s", path);
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
        const size_t row_line = ++line;
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
        else if ((status = lm_csv_append(csv, (const char *const *)fields.items, err)) == LM_OK)
            csv->line[csv->rows - 1] = row_line;
        clear_fields(&fields);
    }
done:
    clear_fields(&fields);
    free(fields.items);
    free(scratch);
    if (status != LM_OK)
        lm_csv_free(csv);
    return status;
}

lm_status lm_csv_check_results_header(const lm_csv *csv, const char *path, lm_error *err)
{
    for (size_t c = 0; c < LM_RESULTS_REQUIRED; c++)
        if (c >= csv->columns || strcmp(csv->header[c], lm_results_columns[c]) != 0)
            return lm_fail(err, LM_ERR_SCHEMA,
                           "%s: column %zu must be '%s' (the results columns, in order)",
                           path, c + 1, lm_results_columns[c]);
    return LM_OK;
}

/* ---- what a results cell may hold ----------------------------------------------------- */

#define SIZE_LIMIT 1099511627776.0 /* 2^40: any size a sweep can measure */

/* One rule per column of lm_results_columns (a new column adds its rule here). */
static const lm_column_rule results_rules[] = {
    {"run_id", LM_CELL_TEXT, true, 0, 0},
    {"timestamp", LM_CELL_TEXT, true, 0, 0},
    {"git_rev", LM_CELL_TEXT, true, 0, 0},
    {"host", LM_CELL_TEXT, false, 0, 0},
    {"cpu_model", LM_CELL_TEXT, true, 0, 0},
    {"isa", LM_CELL_WORD, true, 0, 0},
    {"threads", LM_CELL_INT, true, 1, 1 << 20},
    {"kernel", LM_CELL_WORD, true, 0, 0},
    {"dtype", LM_CELL_WORD, true, 0, 0},
    {"bits", LM_CELL_INT, true, 0, 64},
    {"n_ctx", LM_CELL_INT, true, 0, SIZE_LIMIT},
    {"chunk", LM_CELL_INT, true, 0, SIZE_LIMIT},
    {"heads", LM_CELL_INT, true, 0, SIZE_LIMIT},
    {"kv_heads", LM_CELL_INT, true, 0, SIZE_LIMIT},
    {"head_dim", LM_CELL_INT, true, 0, SIZE_LIMIT},
    {"d_inner", LM_CELL_INT, true, 0, SIZE_LIMIT},
    {"d_state", LM_CELL_INT, true, 0, SIZE_LIMIT},
    {"batch", LM_CELL_INT, true, 0, SIZE_LIMIT},
    {"reps", LM_CELL_INT, true, 0, 1e6},
    {"median_s", LM_CELL_REAL, true, 0, HUGE_VAL},
    {"min_s", LM_CELL_REAL, true, 0, HUGE_VAL},
    {"p25_s", LM_CELL_REAL, true, 0, HUGE_VAL},
    {"p75_s", LM_CELL_REAL, true, 0, HUGE_VAL},
    {"gflops", LM_CELL_REAL, true, 0, HUGE_VAL},
    {"gbps", LM_CELL_REAL, true, 0, HUGE_VAL},
    {"roofline_frac", LM_CELL_REAL, true, 0, HUGE_VAL},
    {"checksum", LM_CELL_ANY_REAL, true, 0, 0},
    {"status", LM_CELL_STATUS, true, 0, 0},
    {"flops", LM_CELL_REAL, true, 0, HUGE_VAL},
    {"bytes", LM_CELL_REAL, true, 0, HUGE_VAL},
    {"err_max", LM_CELL_REAL, true, -1, HUGE_VAL},
    {"note", LM_CELL_TEXT, false, 0, 0},
    {"compiler", LM_CELL_TEXT, false, 0, 0},
    {"cores", LM_CELL_INT, true, 0, 1 << 20},
    {"llc_bytes", LM_CELL_INT, true, 0, SIZE_LIMIT},
    {LM_RESULTS_REP_TIMES, LM_CELL_TIMES, false, 0, HUGE_VAL},
    {LM_RESULTS_REP_CPU, LM_CELL_TIMES, false, 0, HUGE_VAL},
    {"disc", LM_CELL_WORD, false, 0, 0}, /* zoh / euler on Mamba-1 rows, else empty */
    {"busy_cores", LM_CELL_REAL, false, 0, 1e6}, /* empty: not known (an older file) */
    {"disturbed", LM_CELL_INT, false, 0, 1},
};
_Static_assert(sizeof results_rules / sizeof results_rules[0] == LM_RESULTS_COLUMNS,
               "every results column has a rule");

const lm_column_rule *lm_results_rule(const char *name)
{
    static const lm_column_rule free_text = {"", LM_CELL_TEXT, false, 0, 0};
    for (size_t i = 0; i < sizeof results_rules / sizeof results_rules[0]; i++)
        if (strcmp(results_rules[i].name, name) == 0)
            return &results_rules[i];
    return &free_text;
}

static bool has_control(const char *cell)
{
    for (const unsigned char *p = (const unsigned char *)cell; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return true;
    return false;
}

static bool is_word(const char *cell)
{
    if (*cell == '\0')
        return false;
    for (const char *p = cell; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '_' || *p == '.' || *p == '+' || *p == '-'))
            return false;
    return true;
}

/* A whole cell parsed as a double (strtod syntax, "nan" and "inf" included). */
static bool parse_real(const char *cell, double *out)
{
    char *end;
    if (*cell == '\0' || *cell == ' ')
        return false;
    *out = strtod(cell, &end);
    return *end == '\0';
}

/* A whole cell parsed as a decimal integer (optional '-', digits only). */
static bool parse_integer(const char *cell, long long *out)
{
    const char *p = cell + (*cell == '-');
    if (*p == '\0')
        return false;
    for (; *p; p++)
        if (*p < '0' || *p > '9')
            return false;
    char *end;
    errno = 0;
    *out = strtoll(cell, &end, 10);
    return errno == 0 && *end == '\0';
}

/* A list "t1;t2;..." of finite numbers in [rule->low, rule->high]. */
static lm_status check_times(const lm_column_rule *rule, const char *cell, lm_error *err)
{
    size_t count = 0;
    for (const char *p = cell; *p != '\0'; count++) {
        size_t length = strcspn(p, ";");
        char item[64];
        double real;
        if (length == 0 || length >= sizeof item)
            return lm_fail(err, LM_ERR_SCHEMA, "entry %zu of '%.80s' is not a number", count + 1,
                           cell);
        memcpy(item, p, length);
        item[length] = '\0';
        if (!parse_real(item, &real) || !isfinite(real) || real < rule->low || real > rule->high)
            return lm_fail(err, LM_ERR_SCHEMA, "entry %zu of '%.80s' is not a finite number >= %g",
                           count + 1, cell, rule->low);
        p += length;
        if (*p == ';' && *++p == '\0')
            return lm_fail(err, LM_ERR_SCHEMA, "'%.80s' ends in ';'", cell);
    }
    if (count > LM_RESULTS_MAX_REP_TIMES)
        return lm_fail(err, LM_ERR_SCHEMA, "holds %zu times, more than %d", count,
                       LM_RESULTS_MAX_REP_TIMES);
    return LM_OK;
}

lm_status lm_cell_check(const lm_column_rule *rule, const char *cell, lm_error *err)
{
    if (has_control(cell))
        return lm_fail(err, LM_ERR_SCHEMA, "holds a control character");
    if (*cell == '\0')
        return rule->required ? lm_fail(err, LM_ERR_SCHEMA, "is empty") : LM_OK;
    long long integer;
    double real;
    switch (rule->kind) {
    case LM_CELL_TEXT: return LM_OK;
    case LM_CELL_WORD:
        return is_word(cell) ? LM_OK
                             : lm_fail(err, LM_ERR_SCHEMA, "'%.80s' is not a name (letters, "
                                       "digits, _ . + -)", cell);
    case LM_CELL_INT:
        if (parse_integer(cell, &integer) && (double)integer >= rule->low &&
            (double)integer <= rule->high)
            return LM_OK;
        return lm_fail(err, LM_ERR_SCHEMA, "'%.80s' is not an integer in [%.0f, %.0f]", cell,
                       rule->low, rule->high);
    case LM_CELL_REAL:
        if (parse_real(cell, &real) && (isnan(real) || (real >= rule->low && real <= rule->high &&
                                                        isfinite(real))))
            return LM_OK;
        return lm_fail(err, LM_ERR_SCHEMA, "'%.80s' is not a finite number >= %g (or nan)", cell,
                       rule->low);
    case LM_CELL_ANY_REAL:
        return parse_real(cell, &real) ? LM_OK
                                       : lm_fail(err, LM_ERR_SCHEMA, "'%.80s' is not a number",
                                                 cell);
    case LM_CELL_TIMES: return check_times(rule, cell, err);
    case LM_CELL_STATUS:
        if (strcmp(cell, "ok") == 0 || strcmp(cell, "wrong") == 0 ||
            strcmp(cell, "error") == 0 || strcmp(cell, "failed") == 0)
            return LM_OK;
        return lm_fail(err, LM_ERR_SCHEMA, "'%.80s' is not a status (ok, wrong, error, failed)",
                       cell);
    }
    return LM_OK;
}

lm_status lm_results_validate(const lm_csv *csv, const char *name, lm_error *err)
{
    for (size_t c = 0; c < csv->columns; c++) {
        const lm_column_rule *rule = lm_results_rule(csv->header[c]);
        for (size_t r = 0; r < csv->rows; r++) {
            lm_error inner;
            if (lm_cell_check(rule, csv->cells[r][c], &inner) != LM_OK)
                return lm_fail(err, LM_ERR_SCHEMA, "%s:%zu: column %s %s", name,
                               csv->line[r] ? csv->line[r] : r + 2, csv->header[c],
                               inner.message);
        }
    }
    return LM_OK;
}

/* ---- typed rows ----------------------------------------------------------------- */

enum { NUMBER_TEXT = 40, REP_TEXT = LM_RESULTS_MAX_REP_TIMES * 24 };
/* rep_times_s, then rep_cpu_s: after the 35 columns before them */
enum { REP_TIMES_AT = 35 };
_Static_assert(REP_TIMES_AT == LM_RESULTS_COLUMNS - 5, "rep_times_s is column 35 of 40");

static void fmt_double(char *out, double v)
{
    if (v != v)
        snprintf(out, NUMBER_TEXT, "nan");
    else
        snprintf(out, NUMBER_TEXT, "%.9g", v);
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

/* The cells of a typed row, in column order: texts point at the row's (and meta's)
 * strings, numbers are formatted into numbers[] (meta NULL: its cells are empty); the
 * repetition columns are left empty (lm_result_append fills them). */
static void row_cells(const lm_machine_meta *meta, const lm_result_row *row,
                      char numbers[LM_RESULTS_COLUMNS][NUMBER_TEXT],
                      const char *cells[LM_RESULTS_COLUMNS])
{
    int i = 0;
#define TEXT(v) (cells[i] = (v) ? (v) : "", i++)
#define META(f) TEXT(meta ? meta->f : NULL)
#define LONG(v) (snprintf(numbers[i], NUMBER_TEXT, "%ld", (long)(v)), cells[i] = numbers[i], i++)
#define REAL(v) (fmt_double(numbers[i], (v)), cells[i] = numbers[i], i++)
    META(run_id);
    META(timestamp);
    META(git_rev);
    META(host);
    META(cpu_model);
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
    META(compiler);
    LONG(meta ? meta->cores : 0);
    LONG(meta ? meta->llc_bytes_total : 0);
    TEXT(NULL); /* rep_times_s (column REP_TIMES_AT) */
    TEXT(NULL); /* rep_cpu_s */
    TEXT(row->disc);
    if (row->busy_known) {
        REAL(row->busy_cores);
        LONG(row->disturbed ? 1 : 0);
    } else {
        TEXT(NULL);
        TEXT(NULL);
    }
#undef TEXT
#undef META
#undef LONG
#undef REAL
    (void)i;
}

lm_status lm_result_append(lm_csv *csv, const lm_machine_meta *meta, const lm_result_row *row,
                           lm_error *err)
{
    char numbers[LM_RESULTS_COLUMNS][NUMBER_TEXT];
    char rep_times[REP_TEXT], rep_cpu[REP_TEXT];
    const char *cells[LM_RESULTS_COLUMNS];
    if (csv->columns != LM_RESULTS_COLUMNS)
        return lm_fail(err, LM_ERR_SCHEMA, "results table must have the %d results columns",
                       LM_RESULTS_COLUMNS);
    row_cells(meta, row, numbers, cells);
    fmt_rep_times(rep_times, sizeof rep_times, row->rep_times, row->rep_count);
    fmt_rep_times(rep_cpu, sizeof rep_cpu, row->rep_cpu_times, row->rep_count);
    cells[REP_TIMES_AT] = rep_times;
    cells[REP_TIMES_AT + 1] = rep_cpu;
    return lm_csv_append(csv, cells, err);
}

/* ---- the configuration key ----------------------------------------------------------- */

char *lm_key_join(const char *const *cells, size_t count)
{
    size_t length = 1 + count;
    for (size_t k = 0; k < count; k++)
        for (const char *p = cells[k]; *p; p++)
            length += 1 + (*p == '|' || *p == '\\');
    char *key = malloc(length);
    if (key == NULL)
        return NULL;
    char *out = key;
    for (size_t k = 0; k < count; k++) {
        if (k > 0)
            *out++ = '|';
        for (const char *p = cells[k]; *p; p++) {
            if (*p == '|' || *p == '\\')
                *out++ = '\\';
            *out++ = *p;
        }
    }
    *out = '\0';
    return key;
}

char *lm_results_key(const char *const cells[LM_RESULTS_KEY_COLUMNS])
{
    return lm_key_join(cells, LM_RESULTS_KEY_COLUMNS);
}

char *lm_csv_row_key(const lm_csv *csv, size_t r)
{
    const char *cells[LM_RESULTS_KEY_COLUMNS];
    for (size_t k = 0; k < LM_RESULTS_KEY_COLUMNS; k++) {
        int c = lm_csv_column(csv, lm_results_key_columns[k]);
        cells[k] = c >= 0 ? csv->cells[r][c] : "";
    }
    return lm_results_key(cells);
}

char *lm_result_key(const lm_result_row *row)
{
    char numbers[LM_RESULTS_COLUMNS][NUMBER_TEXT];
    const char *all[LM_RESULTS_COLUMNS], *cells[LM_RESULTS_KEY_COLUMNS];
    row_cells(NULL, row, numbers, all);
    for (size_t k = 0; k < LM_RESULTS_KEY_COLUMNS; k++)
        for (size_t c = 0; c < LM_RESULTS_COLUMNS; c++)
            if (strcmp(lm_results_columns[c], lm_results_key_columns[k]) == 0)
                cells[k] = all[c];
    return lm_results_key(cells);
}

/* ---- a set of keys ------------------------------------------------------------------ */

static size_t hash_text(const char *text)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return (size_t)h;
}

/* The slot holding key, or the empty slot where it would go. */
static size_t find_slot(char *const *slots, size_t capacity, const char *key)
{
    size_t i = hash_text(key) & (capacity - 1);
    while (slots[i] != NULL && strcmp(slots[i], key) != 0)
        i = (i + 1) & (capacity - 1);
    return i;
}

static bool grow_set(lm_key_set *set)
{
    size_t capacity = set->capacity ? 2 * set->capacity : 64;
    char **slots = calloc(capacity, sizeof *slots);
    if (slots == NULL)
        return false;
    for (size_t i = 0; i < set->capacity; i++)
        if (set->slots[i] != NULL)
            slots[find_slot(slots, capacity, set->slots[i])] = set->slots[i];
    free(set->slots);
    set->slots = slots;
    set->capacity = capacity;
    return true;
}

int lm_key_set_add(lm_key_set *set, const char *key)
{
    if (2 * (set->count + 1) > set->capacity && !grow_set(set))
        return -1;
    size_t i = find_slot(set->slots, set->capacity, key);
    if (set->slots[i] != NULL)
        return 0;
    size_t length = strlen(key) + 1;
    if ((set->slots[i] = malloc(length)) == NULL)
        return -1;
    memcpy(set->slots[i], key, length);
    set->count++;
    return 1;
}

bool lm_key_set_has(const lm_key_set *set, const char *key)
{
    return set->capacity > 0 && set->slots[find_slot(set->slots, set->capacity, key)] != NULL;
}

void lm_key_set_free(lm_key_set *set)
{
    for (size_t i = 0; i < set->capacity; i++)
        free(set->slots[i]);
    free(set->slots);
    *set = (lm_key_set){0};
}

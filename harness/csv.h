/* Tidy results CSV: the results columns of docs/benchmarks.md (never renamed, never reordered), extra
 * columns after it, RFC 4180 quoting, atomic writes (files.h), reading back for --resume
 * and merge, the rule each column's cells follow, and the one configuration key that
 * --resume, merge and the sweep's plan agree on. */
#ifndef LONGMIX_CSV_H
#define LONGMIX_CSV_H

#include "longmix.h"
#include "stats.h"
#include "topo.h"

#include <stdio.h>

/* The results columns (docs/benchmarks.md), in order (LM_RESULTS_REQUIRED of them), then
 * longmix's extra columns (flops and bytes of one run, the error against the float64
 * reference, a note, machine facts from `longmix info`, the repetition times that
 * `longmix compare` tests: wall and process CPU seconds per run, each list separated by
 * ';', in the order measured, the Mamba-1 discretization: disc, "zoh" or "euler" on
 * mamba1_scan / mamba1_step rows, empty on the others, and last whether the machine was
 * busy: busy_cores, other processes' average cores in use on our CPUs over the row's
 * window (harness/busy.h), and disturbed, 1 when they left the row's team too few cores,
 * else 0; both empty when not known). */
#define LM_RESULTS_REQUIRED 28
#define LM_RESULTS_COLUMNS 40
#define LM_RESULTS_REP_TIMES "rep_times_s" /* the names of the two repetition columns */
#define LM_RESULTS_REP_CPU "rep_cpu_s"
#define LM_RESULTS_MAX_REP_TIMES 256       /* the most lm_result_append writes */
extern const char *const lm_results_columns[LM_RESULTS_COLUMNS];

/* The configuration columns that identify a measurement (the key of --resume and merge);
 * disc is one of them, so a zoh row and an euler row are two configurations. */
#define LM_RESULTS_KEY_COLUMNS 14
extern const char *const lm_results_key_columns[LM_RESULTS_KEY_COLUMNS];

/* An in-memory CSV: a header and rows of strings (each cell malloc'd). */
typedef struct lm_csv {
    size_t columns;
    char **header;  /* {columns} */
    size_t rows, capacity;
    char ***cells;  /* {rows}{columns} */
    size_t *line;   /* {rows}: the file line a row started on (lm_csv_read), else 0 */
} lm_csv;

/* Empty table with the given header (copied). */
lm_status lm_csv_init(lm_csv *csv, const char *const *header, size_t columns, lm_error *err);
/* Empty table with the results header. */
lm_status lm_csv_init_results(lm_csv *csv, lm_error *err);
void lm_csv_free(lm_csv *csv);

/* Appends a row of `columns` cells (copied; NULL is written as empty). */
lm_status lm_csv_append(lm_csv *csv, const char *const *cells, lm_error *err);

/* Appends a column `name` after the last one, every row's cell empty. */
lm_status lm_csv_add_column(lm_csv *csv, const char *name, lm_error *err);

/* Removes row r (later rows move up). */
void lm_csv_remove_row(lm_csv *csv, size_t r);

/* Column index of `name`, or -1. */
int lm_csv_column(const lm_csv *csv, const char *name);

/* Writes one field with RFC 4180 quoting: quoted when it holds a comma, a double quote,
 * CR or LF (or leading/trailing space), inner quotes doubled. */
void lm_csv_write_field(FILE *out, const char *field);

/* Writes the whole table to `path` atomically (lm_atomic_open: a mkstemp temp file in the
 * same folder, fsync, rename), so a reader or an interrupted run sees the old or the new
 * file, never a partial one, and a planted symlink is never followed. LM_ERR_IO names the
 * path on failure ("cannot write PATH: reason"). */
lm_status lm_csv_write_atomic(const lm_csv *csv, const char *path, lm_error *err);

/* The largest CSV file lm_csv_read reads (256 MiB). */
#define LM_CSV_MAX_BYTES ((size_t)1 << 28)

/* Reads a CSV file (first line is the header; a regular file of at most LM_CSV_MAX_BYTES).
 * LM_ERR_IO when unreadable or not a regular file, LM_ERR_PARSE with line number for a row
 * of the wrong width or an unterminated quote. */
lm_status lm_csv_read(lm_csv *csv, const char *path, lm_error *err);
/* Parses text[0..length) (a CSV file's bytes; need not end in NUL) as lm_csv_read does;
 * `path` names the file in messages. */
lm_status lm_csv_parse(lm_csv *csv, const char *text, size_t length, const char *path,
                       lm_error *err);

/* LM_OK when the header starts with exactly the results columns, in order. */
lm_status lm_csv_check_results_header(const lm_csv *csv, const char *path, lm_error *err);

/* ---- what a results cell may hold ----------------------------------------------------
 * Every column of lm_results_columns has a rule; a results file read back (--resume,
 * merge) is checked cell by cell against the rule of its column, found by name. A column
 * added after the results columns adds its rule beside it in csv.c; a column this build
 * does not know is free text (no control characters). */
typedef enum lm_cell_kind {
    LM_CELL_TEXT,   /* any text without control characters */
    LM_CELL_WORD,   /* a non-empty name: letters, digits and _ . + - */
    LM_CELL_INT,    /* a decimal integer in [low, high] */
    LM_CELL_REAL,   /* a number in [low, high], or "nan" (not measured) */
    LM_CELL_ANY_REAL, /* any number, inf and nan included (a checksum) */
    LM_CELL_STATUS, /* ok, wrong, error or failed */
    LM_CELL_TIMES,  /* numbers in [low, high] separated by ';' (repetition times), at most
                       LM_RESULTS_MAX_REP_TIMES of them */
} lm_cell_kind;

typedef struct lm_column_rule {
    const char *name;
    lm_cell_kind kind;
    bool required;     /* never empty */
    double low, high;  /* LM_CELL_INT, LM_CELL_REAL */
} lm_column_rule;

/* The rule of column `name` (a free-text rule for a column this build does not know). */
const lm_column_rule *lm_results_rule(const char *name);
/* LM_OK when `cell` follows `rule`; otherwise LM_ERR_SCHEMA with what was expected
 * ("'abc' is not an integer in [0, 1099511627776]"). */
lm_status lm_cell_check(const lm_column_rule *rule, const char *cell, lm_error *err);
/* Every cell of every row checked against its column's rule; the first bad one is
 * LM_ERR_SCHEMA "NAME:LINE: column n_ctx: 'abc' is not an integer in [0, ...]". */
lm_status lm_results_validate(const lm_csv *csv, const char *name, lm_error *err);

/* ---- typed rows and the configuration key ------------------------------------------- */

/* One measured configuration, typed; lm_result_append formats it into a results table. */
typedef struct lm_result_row {
    const char *kernel, *isa, *dtype, *status, *note;
    const char *disc; /* "zoh", "euler" or NULL (written empty) */
    int threads, bits, reps;
    long n_ctx, chunk, heads, kv_heads, head_dim, d_inner, d_state, batch;
    lm_summary time;                 /* seconds per run */
    double gflops, gbps, roofline_frac, checksum;
    double flops, bytes, err_max;    /* per run; err_max < 0 when not checked */
    const double *rep_times;         /* {rep_count} seconds per run in time order, or NULL */
    const double *rep_cpu_times;     /* {rep_count} process CPU seconds per run, or NULL */
    size_t rep_count;
    bool busy_known;                 /* false: busy_cores and disturbed are written empty */
    bool disturbed;                  /* lm_busy_disturbed(busy_cores, threads, cpus) */
    double busy_cores;               /* other processes' cores in use (lm_busy_mark) */
} lm_result_row;

/* Appends the row (every text in full, numbers as lm_result_append always writes them). */
lm_status lm_result_append(lm_csv *csv, const lm_machine_meta *meta, const lm_result_row *row,
                           lm_error *err);

/* The configuration key: the LM_RESULTS_KEY_COLUMNS cells in order, joined by '|' (a '|'
 * or '\\' inside a cell escaped with '\\', so distinct configurations never share a key),
 * of any length. malloc'd; NULL when out of memory. The one key builder: a typed row's key
 * is that of its cells as lm_result_append writes them, a table row's key that of its
 * cells as read. */
char *lm_results_key(const char *const cells[LM_RESULTS_KEY_COLUMNS]);
/* cells[0..count) joined the same way (lm_results_key is the 13-cell case). */
char *lm_key_join(const char *const *cells, size_t count);
/* The key of row r of a table (a column the table lacks counts as empty). */
char *lm_csv_row_key(const lm_csv *csv, size_t r);
/* The key of a typed row: the same text lm_csv_row_key gives once the row is appended. */
char *lm_result_key(const lm_result_row *row);

/* A set of keys (strings, copied), for de-duplication in O(1) per lookup. */
typedef struct lm_key_set {
    char **slots;  /* {capacity}: NULL or a key */
    size_t count, capacity;
} lm_key_set;

void lm_key_set_free(lm_key_set *set);
/* Adds `key`: 1 when added, 0 when already present, -1 when out of memory. */
int lm_key_set_add(lm_key_set *set, const char *key);
bool lm_key_set_has(const lm_key_set *set, const char *key);

#endif

/* Tidy results CSV: the DESIGN.md column list (never renamed, never reordered), extra
 * columns after it, RFC 4180 quoting, atomic writes (temp file + rename), reading back
 * for --resume and merge. */
#ifndef LONGMIX_CSV_H
#define LONGMIX_CSV_H

#include "longmix.h"
#include "stats.h"
#include "topo.h"

#include <stdio.h>

/* The Results CSV columns of DESIGN.md, in order (LM_RESULTS_REQUIRED of them), then
 * longmix's extra columns (flops and bytes of one run, the error against the float64
 * reference, a note, machine facts from `longmix info`, and the repetition times that
 * `longmix compare` tests: wall and process CPU seconds per run, each list separated by
 * ';', in the order measured). */
#define LM_RESULTS_REQUIRED 28
#define LM_RESULTS_COLUMNS 37
#define LM_RESULTS_REP_TIMES "rep_times_s" /* the names of those last two columns */
#define LM_RESULTS_REP_CPU "rep_cpu_s"
#define LM_RESULTS_MAX_REP_TIMES 256       /* the most lm_result_append writes */
extern const char *const lm_results_columns[LM_RESULTS_COLUMNS];

/* The configuration columns that identify a measurement (used by --resume and merge). */
#define LM_RESULTS_KEY_COLUMNS 13
extern const char *const lm_results_key_columns[LM_RESULTS_KEY_COLUMNS];

/* An in-memory CSV: a header and rows of strings (each cell malloc'd). */
typedef struct lm_csv {
    size_t columns;
    char **header;  /* {columns} */
    size_t rows, capacity;
    char ***cells;  /* {rows}{columns} */
} lm_csv;

/* Empty table with the given header (copied). */
lm_status lm_csv_init(lm_csv *csv, const char *const *header, size_t columns, lm_error *err);
/* Empty table with the results header. */
lm_status lm_csv_init_results(lm_csv *csv, lm_error *err);
void lm_csv_free(lm_csv *csv);

/* Appends a row of `columns` cells (copied; NULL is written as empty). */
lm_status lm_csv_append(lm_csv *csv, const char *const *cells, lm_error *err);

/* Column index of `name`, or -1. */
int lm_csv_column(const lm_csv *csv, const char *name);

/* Writes one field with RFC 4180 quoting: quoted when it holds a comma, a double quote,
 * CR or LF (or leading/trailing space), inner quotes doubled. */
void lm_csv_write_field(FILE *out, const char *field);

/* Writes the whole table to `path` atomically: a temp file in the same directory is
 * written, flushed and renamed over `path`, so a reader (or an interrupted run) sees the
 * old or the new file, never a partial one. LM_ERR_IO names the path on failure. */
lm_status lm_csv_write_atomic(const lm_csv *csv, const char *path, lm_error *err);

/* Reads a CSV file (first line is the header). LM_ERR_IO when unreadable, LM_ERR_PARSE
 * with line number for a row of the wrong width or an unterminated quote. */
lm_status lm_csv_read(lm_csv *csv, const char *path, lm_error *err);

/* LM_OK when the header starts with exactly the DESIGN.md columns, in order. */
lm_status lm_csv_check_results_header(const lm_csv *csv, const char *path, lm_error *err);

/* The identifying key of row r ("kernel|isa|threads|..."), written into out. */
void lm_csv_row_key(const lm_csv *csv, size_t r, char *out, size_t size);

/* One measured configuration, typed; lm_result_append formats it into a results table. */
typedef struct lm_result_row {
    const char *kernel, *isa, *dtype, *status, *note;
    int threads, bits, reps;
    long n_ctx, chunk, heads, kv_heads, head_dim, d_inner, d_state, batch;
    lm_summary time;                 /* seconds per run */
    double gflops, gbps, roofline_frac, checksum;
    double flops, bytes, err_max;    /* per run; err_max < 0 when not checked */
    const double *rep_times;         /* {rep_count} seconds per run in time order, or NULL */
    const double *rep_cpu_times;     /* {rep_count} process CPU seconds per run, or NULL */
    size_t rep_count;
} lm_result_row;

lm_status lm_result_append(lm_csv *csv, const lm_machine_meta *meta, const lm_result_row *row,
                           lm_error *err);

/* The key of a typed row, the same text lm_csv_row_key gives after the row is appended. */
void lm_result_key(const lm_result_row *row, char *out, size_t size);

/* Joins results tables (shards of one sweep) into out, in input order, dropping a row whose
 * key already appeared. Every input must carry the results header; unless `force`, every
 * row must share the first row's cpu_model and git_rev (LM_ERR_SCHEMA naming the file and
 * the two values: "b.csv: cpu_model 'X' differs from 'Y' in a.csv; pass --force"). */
lm_status lm_results_merge(const lm_csv *inputs, const char *const *names, size_t count,
                           bool force, lm_csv *out, lm_error *err);

#endif

/* The tables of `longmix model`: the decode and prefill rows (results columns first, then
 * the model columns; `phase` tells them apart), read back for --resume, shown as Markdown,
 * and the model-level crossover derived from them. Library code: errors are values; printing goes to the FILE given. */
#ifndef LONGMIX_MODEL_TABLE_H
#define LONGMIX_MODEL_TABLE_H

#include "busy_watch.h"
#include "csv.h"
#include "model_run.h"

/* One model's decode step (or prefill) at one configuration: units times their counts. */
typedef struct lm_model_decode {
    double step_s;                /* seconds per step: one token for each of batch sequences;
                                   * prefill: the whole prompt (time to first token) */
    double comp_s[LM_COMP_COUNT]; /* the step split by component */
    double bytes;                 /* weights + caches + state read per step */
    double checksum;
    double stream_gbps;           /* the same-minute read-only stream: decode, bytes over
                                   * stream_s (each unit's bytes at the stream measured right
                                   * after it), so bytes / step_s / stream_gbps is the step's
                                   * fraction of its own limit */
    double stream_s;              /* decode: sum of count x unit bytes / unit stream */
    size_t copies_max;            /* the most copies any unit was measured over */
    double gemm_s, gemm_flops;    /* prefill: the GEMMs' seconds and flops, counts applied */
    double peak_gflops;           /* prefill: the same run's peak of the weights' dtype */
    lm_model_memory memory;       /* per sequence, from arithmetic */
} lm_model_decode;

void lm_model_decode_add(lm_model_decode *d, const lm_unit_timing *t, double count);

/* What identifies a row (--resume skips a configuration whose key has an ok row). */
typedef struct lm_model_key {
    const char *model, *isa;
    int threads;
    const char *cache, *weights;
    long ctx, batch; /* prefill: ctx is the prompt's tokens */
    bool prefill;
} lm_model_key;

typedef struct lm_model_table {
    lm_csv csv;
    lm_key_set done;
    const char *path;
    const lm_machine_meta *meta;
} lm_model_table;

/* An empty table for `path`, or with --resume the ok rows of the file there (its header
 * must be exactly this build's, its rows from this CPU: LM_ERR_SCHEMA naming the file). */
lm_status lm_model_table_open(lm_model_table *t, const char *path, bool resume,
                              const lm_machine_meta *meta, lm_error *err);
bool lm_model_table_has(const lm_model_table *t, const lm_model_key *key);
lm_status lm_model_table_put(lm_model_table *t, const lm_model_key *key,
                             const lm_model_spec *spec, const lm_model_decode *d, int reps,
                             lm_busy_watch *watch, double since, lm_error *err);
/* Writes the whole table atomically (temp file + rename). */
lm_status lm_model_table_write(const lm_model_table *t, lm_error *err);
void lm_model_table_markdown(const lm_model_table *t, FILE *out);
void lm_model_table_free(lm_model_table *t);

/* For every model of specs other than `baseline`, every (threads, batch) the table holds
 * for both: the measured context n* where its decode step becomes faster than the
 * baseline's (log-log interpolation between the bracketing contexts), and beside it the
 * memory n* (caches alone; caches and weights at that batch) from arithmetic. Written
 * atomically to `path` and as Markdown to out. */
lm_status lm_model_crossover_write(const lm_model_table *t, const lm_model_spec *specs,
                                   size_t count, const char *baseline, lm_weight_dtype weights,
                                   const lm_cache_format *cache, const char *path,
                                   const lm_machine_meta *meta, FILE *out, lm_error *err);

/* The least n >= 1 at which the baseline's memory (caches, plus weights when
 * with_weights) for `batch` sequences exceeds the model's; -1 when none up to 2^40. */
long long lm_model_memory_crossover(const lm_model_spec *model, const lm_model_spec *base,
                                    lm_weight_dtype weights, const lm_cache_format *cache,
                                    long batch, bool with_weights);

#endif

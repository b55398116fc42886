/* Results files read back: joining shards (longmix merge) and checking the file that
 * `sweep --resume` continues. Both validate what they read the same way: the results
 * header, every cell against its column's rule (csv.h), every row from one machine and
 * build, one row per configuration key. Library code: errors are values. */
#ifndef LONGMIX_RESULTS_H
#define LONGMIX_RESULTS_H

#include "csv.h"

/* lm_csv_read, then every kernel cell that names a kernel by an old word (attn_decode_q,
 * affine_scan: results files written before the kernel list) rewritten to its word
 * (harness/registry.h), and a table without a disc column (written before it existed)
 * given one as its last column: "zoh" on its mamba1_scan and mamba1_step rows (those
 * builds measured the exact ZOH only), empty on the others. So rows of old and new files
 * join; likewise a table without the busy_cores and disturbed columns gets both, empty
 * (not known). Every reader of results files (resume, merge, compare, compare-machines) reads
 * through it. */
lm_status lm_results_read(lm_csv *csv, const char *path, lm_error *err);
/* lm_results_read on a file's bytes text[0..length) (lm_csv_parse); `path` names it. */
lm_status lm_results_parse(lm_csv *csv, const char *text, size_t length, const char *path,
                           lm_error *err);

/* Joins results tables (shards of one sweep) into out, in input order, dropping a row whose
 * key (with its cpu_model and git_rev) already appeared. Every input must carry the results
 * header, the same columns as the first, and valid cells (lm_results_validate); unless
 * `force`, every row must share the first row's cpu_model and git_rev (LM_ERR_SCHEMA naming
 * the file and the two values: "b.csv: cpu_model 'X' differs from 'Y' in a.csv; pass
 * --force"). *dropped receives the number of duplicate rows left out. */
lm_status lm_results_merge(const lm_csv *inputs, const char *const *names, size_t count,
                           bool force, lm_csv *out, size_t *dropped, lm_error *err);

/* What lm_results_resume did to the table it was given. */
typedef struct lm_resume_counts {
    size_t duplicates; /* rows dropped: the same key as an earlier row (an ok row wins) */
    size_t failed;     /* rows kept whose status is not ok: measured again */
} lm_resume_counts;

/* Prepares the table `sweep --resume` continues: its header must be exactly this build's
 * results columns, every cell valid, and (unless `force`) every row measured by this
 * build on this CPU (cpu_model and git_rev equal to meta's: LM_ERR_SCHEMA naming the line,
 * both values and --force). Then keeps one row per key, dropping later duplicates (an ok
 * row is kept over a failed one), and fills *done with the keys of the ok rows (the
 * configurations not to measure again) and *failed with those of the rows kept whose
 * status is not ok (measured again, the new row taking the old one's place). */
lm_status lm_results_resume(lm_csv *csv, const char *name, const lm_machine_meta *meta,
                            bool force, lm_key_set *done, lm_key_set *failed,
                            lm_resume_counts *counts, lm_error *err);

/* Appends the row, or, when its key is in `failed` (may be NULL), puts it in the place of
 * the failed row of that key. */
lm_status lm_results_put(lm_csv *csv, const lm_key_set *failed, const lm_machine_meta *meta,
                         const lm_result_row *row, lm_error *err);

#endif

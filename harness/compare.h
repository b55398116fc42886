/* `longmix compare`: two results files joined by configuration, each pair judged by the
 * regression rule of docs/benchmarks.md "Comparing two runs":
 *
 *   machine  = attainable_base / attainable_new, attainable = gflops / roofline_frac of the
 *              row (the same-run roofline: how much slower the machine was in NEW's run)
 *   allowed  = (1 + max_slowdown) * max(1, machine)
 *   slower   when median_new / median_base > allowed and the one-sided Mann-Whitney U test
 *            of {new_i / allowed} against {base_j} gives p < alpha
 *   faster   the mirror image: median ratio < 1 / allowed_fast with
 *            allowed_fast = (1 + max_slowdown) * max(1, 1 / machine), and the U test of
 *            {new_i * allowed_fast} against {base_j} (smaller) gives p < alpha
 *   same     otherwise.
 * With cpu_time the medians and the tests use the rows' process CPU times (rep_cpu_s)
 * instead of wall times (median_s, rep_times_s).
 *
 * The roofline can explain a change (a slower machine minute) but never create one. */
#ifndef LONGMIX_COMPARE_H
#define LONGMIX_COMPARE_H

#include "csv.h"

typedef enum lm_compare_verdict {
    LM_COMPARE_SAME,      /* within the allowance or within the noise */
    LM_COMPARE_FASTER,    /* faster beyond the allowance and the noise */
    LM_COMPARE_SLOWER,    /* a regression: slower beyond the allowance and the noise */
    LM_COMPARE_FAILED,    /* NEW's row is not status ok (a wrong output is never fast) */
    LM_COMPARE_UNTESTED,  /* in both, but cannot be judged (reason says why) */
    LM_COMPARE_BASE_ONLY, /* configuration only in BASE */
    LM_COMPARE_NEW_ONLY,  /* configuration only in NEW */
    LM_COMPARE_VERDICTS
} lm_compare_verdict;

/* Stable lower-case name: "same", "faster", "slower", "failed", "untested", "base_only",
 * "new_only". */
const char *lm_compare_verdict_name(lm_compare_verdict verdict);

typedef struct lm_compare_options {
    double max_slowdown; /* allowed slowdown as a fraction (0.10 = 10 %), > 0 */
    double alpha;        /* level of the one-sided U tests, in (0, 1) */
    bool use_roofline;   /* scale the allowance by the same-run roofline (else machine = 1) */
    bool cpu_time;       /* judge the process CPU times (rep_cpu_s) instead of wall times */
    bool force;          /* compare files of different CPU models */
} lm_compare_options;

enum { LM_COMPARE_LABEL = 256, LM_COMPARE_REASON = 256 };

typedef struct lm_compare_row {
    lm_compare_verdict verdict;
    char *key;                    /* lm_csv_row_key of the configuration (malloc'd) */
    char label[LM_COMPARE_LABEL]; /* "attn_decode avx512 t1 f32 bits=32 n_ctx=256 ..." */
    char kernel[64];
    long base_line, new_line;     /* line in each file, 0 when absent */
    double base_median, new_median; /* seconds (wall, or CPU with cpu_time); 0 when absent */
    double ratio;                 /* new_median / base_median; 0 when not both */
    double machine;               /* attainable_base / attainable_new; 0 when unknown */
    double allowed, allowed_fast; /* slowdown allowance and its mirror for "faster" */
    double p_slower, p_faster;    /* one-sided U test p-values; -1 when not tested */
    size_t base_reps, new_reps;   /* repetition times tested on each side */
    bool exact;                   /* exact U distribution (else normal approximation) */
    char reason[LM_COMPARE_REASON]; /* why untested or failed; empty otherwise */
} lm_compare_row;

typedef struct lm_compare_result {
    lm_compare_row *rows;         /* BASE's order, then NEW-only rows in NEW's order */
    size_t count;
    size_t counts[LM_COMPARE_VERDICTS];
    char base_cpu[160], new_cpu[160];
    size_t base_rows, new_rows;
} lm_compare_result;

/* Joins base and new (results tables, read with lm_csv_read; names are their paths for
 * messages) and judges every configuration. Every numeric cell the rule reads is parsed
 * strictly. LM_ERR_SCHEMA: not a results header, a configuration twice in one file, CPU
 * models that differ (unless options->force; the message says to pass --force), or no
 * configuration in common; LM_ERR_PARSE: a malformed cell, named "FILE:LINE: column ...";
 * LM_ERR_ARG: options out of range. Free the result with lm_compare_free. */
lm_status lm_compare_results(const lm_csv *base, const char *base_name, const lm_csv *new_,
                             const char *new_name, const lm_compare_options *options,
                             lm_compare_result *result, lm_error *err);

void lm_compare_free(lm_compare_result *result);

#endif

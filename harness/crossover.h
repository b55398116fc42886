/* Where a growing cost (attention over n tokens) meets another (an SSM step, a scan): the
 * measured crossover, interpolated log-log between the two bracketing measurements. */
#ifndef LONGMIX_CROSSOVER_H
#define LONGMIX_CROSSOVER_H

#include "longmix.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct lm_crossover_point {
    /* 0: found between lo and hi; -1: a is already >= b at the smallest n (n* <= n[0]);
     * +1: a stays below b up to the largest n (n* > n[count-1]). */
    int where;
    double n_star;                  /* interpolated, when where == 0 */
    size_t lo, hi;                  /* indices of the bracketing measurements */
} lm_crossover_point;

/* First n where a(n) reaches b(n): n {count} increasing and positive, a, b {count}
 * positive times. Between the last index with a < b and the next (a >= b), log a - log b
 * is interpolated linearly in log n and its zero returned. LM_ERR_ARG for count < 1 or
 * a non-positive value. */
lm_status lm_crossover_find(const double *n, const double *a, const double *b, size_t count,
                            lm_crossover_point *out, lm_error *err);

/* One crossover result, as its sentence says it. */
typedef struct lm_crossover_words {
    bool decode;             /* decode (n cached tokens) or prefill (a prompt of n tokens) */
    const char *other;       /* the other side: "Mamba-1", "Mamba-2 SSD", "Mamba-1 selective-scan" */
    const char *dtype;       /* the KV cache's dtype (decode) */
    const char *grid_option; /* the option that sets the grid: "--ctx", "--prefill-ctx" */
    int threads;
    int where;               /* lm_crossover_point.where */
    double n_star;           /* where == 0 */
    double n_first, n_last;  /* the grid's smallest and largest n measured */
    size_t points;           /* measurements behind the result (0: a measurement failed) */
    size_t disturbed;        /* of them taken on a busy machine (the CSV's disturbed) */
    size_t unsteady;         /* of them unsteady (lm_unsteady) */
} lm_crossover_words;

/* One plain sentence for the result into out[0..size): "On this CPU, with more than 1,116
 * cached tokens, one Mamba-1 layer's decode step is faster than one attention layer's
 * decode over an f32 cache (1 thread)."; an open-ended result says which side was faster
 * at the grid's end and how to extend the grid (--ctx / --prefill-ctx); a result with
 * disturbed or unsteady measurements behind it starts "Not a finding (...)". */
void lm_crossover_sentence(const lm_crossover_words *w, char *out, size_t size);

/* value rounded to an integer with thousands separators: 16384 -> "16,384". */
void lm_format_count(char *out, size_t size, double value);

#endif

/* Where a growing cost (attention over n tokens) meets another (an SSM step, a scan): the
 * measured crossover, interpolated log-log between the two bracketing measurements. */
#ifndef LONGMIX_CROSSOVER_H
#define LONGMIX_CROSSOVER_H

#include "longmix.h"

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

#endif

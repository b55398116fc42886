/* Timing and summary statistics shared by roofline, sweep, crossover and bench. */
#ifndef LONGMIX_STATS_H
#define LONGMIX_STATS_H

#include <stddef.h>

/* Monotonic wall clock in seconds (CLOCK_MONOTONIC). */
double lm_now(void);
/* CPU time of the whole process (every thread) in seconds (CLOCK_PROCESS_CPUTIME_ID). */
double lm_cpu_now(void);

/* Order statistics of timed repetitions. */
typedef struct lm_summary {
    double median, min, max, p25, p75, mean;
    size_t count;
} lm_summary;

/* Quantile q in [0, 1] of sorted[0..n) by linear interpolation between closest ranks
 * (NumPy's default "linear" method: position q * (n - 1)). n must be >= 1. */
double lm_quantile_sorted(const double *sorted, size_t n, double q);

/* Sorts samples[0..n) in place and summarises them; all zero when n is 0. */
lm_summary lm_summarize(double *samples, size_t n);

#endif

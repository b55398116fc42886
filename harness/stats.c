/* Timing and order statistics. */
#include "stats.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

double lm_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double lm_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double lm_quantile_sorted(const double *sorted, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo + 1 >= n)
        return sorted[n - 1];
    double frac = pos - (double)lo;
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

lm_summary lm_summarize(double *samples, size_t n)
{
    lm_summary s;
    memset(&s, 0, sizeof s);
    if (n == 0)
        return s;
    qsort(samples, n, sizeof *samples, compare_doubles);
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += samples[i];
    s.count = n;
    s.min = samples[0];
    s.max = samples[n - 1];
    s.mean = sum / (double)n;
    s.median = lm_quantile_sorted(samples, n, 0.5);
    s.p25 = lm_quantile_sorted(samples, n, 0.25);
    s.p75 = lm_quantile_sorted(samples, n, 0.75);
    return s;
}

/* What the measurement tools (gemm_shapes.c, gemv_shapes.c) share: a monotonic clock in
 * seconds and the comparison qsort orders their repetition times with. */
#ifndef LONGMIX_TOOL_TIME_H
#define LONGMIX_TOOL_TIME_H

#include <time.h>

static inline double tool_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* qsort order of doubles, ascending */
static inline int tool_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif

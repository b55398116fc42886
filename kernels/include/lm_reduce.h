/* Reductions of float64 arrays in the exact orders and rules the contracts rely on. */
#ifndef LONGMIX_REDUCE_H
#define LONGMIX_REDUCE_H

#include <stddef.h>

/* The sum of x[0..n) {n} in the order of NumPy's pairwise summation (np.add.reduce over one
 * contiguous run): plain left-to-right below 8 values; eight running sums for blocks of up
 * to 128 values, combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)), then the tail; above
 * 128 values, the two halves (the first rounded down to a multiple of 8) summed apart.
 * np.sum of more than 8192 values adds such sums buffer by buffer; callers do that part.
 * 0.0 when n is 0. */
double lm_sum_pairwise_f64(const double *x, size_t n);

/* max |x[i] - y[i]| over i < count, x and y {count}; NaN when any difference is NaN (a NaN
 * is never hidden as a small difference). 0.0 when count is 0. */
double lm_max_abs_diff_f64(const double *x, const double *y, size_t count);

#endif

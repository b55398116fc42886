/* Reductions of float64 arrays (see lm_reduce.h). */
#include "lm_reduce.h"

#include <math.h>

double lm_sum_pairwise_f64(const double *x, size_t n)
{
    if (n < 8) {
        double sum = 0.0;
        for (size_t i = 0; i < n; i++)
            sum += x[i];
        return sum;
    }
    if (n <= 128) {
        double r[8]; /* running sums of x[j], x[j + 8], x[j + 16], ... */
        for (size_t j = 0; j < 8; j++)
            r[j] = x[j];
        size_t i = 8;
        for (; i < n - n % 8; i += 8)
            for (size_t j = 0; j < 8; j++)
                r[j] += x[i + j];
        double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            sum += x[i];
        return sum;
    }
    size_t half = n / 2;
    half -= half % 8;
    return lm_sum_pairwise_f64(x, half) + lm_sum_pairwise_f64(x + half, n - half);
}

double lm_max_abs_diff_f64(const double *x, const double *y, size_t count)
{
    double worst = 0.0;
    for (size_t i = 0; i < count; i++) {
        double d = fabs(x[i] - y[i]);
        if (!(d <= worst))
            worst = d; /* a NaN difference wins */
    }
    return worst;
}

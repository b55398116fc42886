/* Shared pieces of the bench cases' check functions (bench_attention.c, bench_recurrent.c):
 * the running error of a fast output against a float64 reference, the verdict against a
 * tolerance, the "reference not computed" outcome, and a float64 copy of an input. */
#ifndef LONGMIX_BENCH_UTIL_H
#define LONGMIX_BENCH_UTIL_H

#include "longmix.h"

#include <stddef.h>

/* worst = max |fast - exact| (NaN counts as worse than anything), scale = max(1e-30,
 * max |exact|) over every value added. */
typedef struct lm_bench_err {
    double worst, scale;
} lm_bench_err;

/* The empty error: worst 0, scale 1e-30. */
lm_bench_err lm_bench_err_start(void);
/* Adds one value: fast (the float output, widened) against exact. */
void lm_bench_err_add(lm_bench_err *e, double fast, double exact);
/* Adds fast {count} against exact {count}. */
void lm_bench_err_add_f32(lm_bench_err *e, const float *fast, const double *exact,
                          size_t count);
/* *err_max = worst / scale; true when checksum is finite and *err_max <= tolerance. */
bool lm_bench_err_within(const lm_bench_err *e, double checksum, double tolerance,
                         double *err_max);
/* The reference could not be computed (no memory, or its own failure): *err_max = -1;
 * LM_OK, or LM_ERR_NUMERIC "non-finite output" when checksum is not finite. */
lm_status lm_bench_err_skipped(double checksum, double *err_max, lm_error *err);
/* A float64 copy of x {count} (malloc, at least one element); NULL when out of memory. */
double *lm_bench_widen(const float *x, size_t count);

#endif

/* The Mann-Whitney U test (Wilcoxon rank-sum) of two samples of repetition times, one-sided
 * both ways: is x stochastically greater (slower) or smaller (faster) than y? Used by
 * `longmix compare` (harness/compare.c); docs/benchmarks.md "Comparing two runs". */
#ifndef LONGMIX_UTEST_H
#define LONGMIX_UTEST_H

#include "longmix.h"

#include <stdbool.h>
#include <stddef.h>

/* Largest sample sizes whose exact null distribution is computed (no ties); beyond, or
 * with ties, the normal approximation with tie and continuity corrections. */
#define LM_UTEST_EXACT_MAX 64

typedef struct lm_utest {
    double u;         /* #{(i, j): x[i] > y[j]} + #{x[i] == y[j]} / 2, in [0, n m] */
    double p_greater; /* P(U >= u) under H0 (x and y from one distribution) */
    double p_less;    /* P(U <= u) under H0 */
    bool exact;       /* exact distribution (else normal approximation) */
} lm_utest;

/* Tests x {n} against y {m} (n, m >= 1, every value finite). p_greater small means x is
 * larger than y beyond chance, p_less small that it is smaller. LM_ERR_ARG for an empty
 * sample, LM_ERR_NONFINITE for a non-finite value, LM_ERR_NOMEM. */
lm_status lm_utest_run(const double *x, size_t n, const double *y, size_t m, lm_utest *out,
                       lm_error *err);

/* The smallest one-sided p-value samples of sizes n and m can give: 1 / C(n + m, n) (all of
 * x above all of y). A test at level alpha can only reject when this is below alpha. */
double lm_utest_min_p(size_t n, size_t m);

#endif

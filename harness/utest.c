/* The Mann-Whitney U test: ranks, the exact null distribution, the normal approximation. */
#include "utest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct ranked {
    double value;
    int from_x;
} ranked;

static int compare_ranked(const void *a, const void *b)
{
    double x = ((const ranked *)a)->value, y = ((const ranked *)b)->value;
    return (x > y) - (x < y);
}

/* U of x from midranks of the pooled sample, and the tie term sum(t^3 - t) over groups of
 * equal values (0 when all values differ). */
static void rank_sum(ranked *pool, size_t n, size_t total, double *u, double *ties)
{
    qsort(pool, total, sizeof *pool, compare_ranked);
    double rank_x = 0.0;
    *ties = 0.0;
    for (size_t i = 0; i < total;) {
        size_t j = i;
        while (j < total && pool[j].value == pool[i].value)
            j++;
        double midrank = 0.5 * (double)(i + 1 + j); /* ranks i+1 .. j */
        for (size_t k = i; k < j; k++)
            rank_x += pool[k].from_x ? midrank : 0.0;
        double t = (double)(j - i);
        *ties += t * t * t - t;
        i = j;
    }
    *u = rank_x - 0.5 * (double)n * (double)(n + 1);
}

/* P(U = k), k = 0..n m, for n x's and m y's without ties: the largest of the n + m values
 * is an x with probability n / (n + m), which then exceeds all m y's, so
 * P[n,m](k) = n/(n+m) P[n-1,m](k-m) + m/(n+m) P[n,m-1](k), P[0,m] = P[n,0] = (k == 0).
 * Rows of the recurrence over n are kept two at a time; dist {n m + 1} receives P[n,m]. */
static lm_status exact_distribution(size_t n, size_t m, double *dist, lm_error *err)
{
    size_t width = n * m + 1;
    double *prev = calloc((m + 1) * width, sizeof *prev);
    double *cur = calloc((m + 1) * width, sizeof *cur);
    if (prev == NULL || cur == NULL) {
        free(prev), free(cur);
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for the U distribution (%zu x %zu)",
                       n, m);
    }
    for (size_t j = 0; j <= m; j++)
        prev[j * width] = 1.0; /* P[0, j] */
    for (size_t i = 1; i <= n; i++) {
        memset(cur, 0, (m + 1) * width * sizeof *cur);
        cur[0] = 1.0; /* P[i, 0] */
        for (size_t j = 1; j <= m; j++) {
            double take_x = (double)i / (double)(i + j), take_y = 1.0 - take_x;
            const double *px = prev + j * width, *py = cur + (j - 1) * width;
            double *out = cur + j * width;
            for (size_t k = 0; k <= i * j; k++)
                out[k] = take_y * (k <= i * (j - 1) ? py[k] : 0.0) +
                         take_x * (k >= j && k - j <= (i - 1) * j ? px[k - j] : 0.0);
        }
        double *swap = prev;
        prev = cur;
        cur = swap;
    }
    memcpy(dist, prev + m * width, width * sizeof *dist);
    free(prev), free(cur);
    return LM_OK;
}

static lm_status exact_p(size_t n, size_t m, double u, lm_utest *out, lm_error *err)
{
    size_t width = n * m + 1;
    double *dist = malloc(width * sizeof *dist);
    if (dist == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for the U distribution");
    lm_status s = exact_distribution(n, m, dist, err);
    if (s == LM_OK) {
        size_t k_u = (size_t)llround(u); /* integral without ties */
        double below = 0.0, above = 0.0;
        for (size_t k = 0; k < width; k++) {
            below += k <= k_u ? dist[k] : 0.0;
            above += k >= k_u ? dist[k] : 0.0;
        }
        out->p_less = fmin(1.0, below);
        out->p_greater = fmin(1.0, above);
        out->exact = true;
    }
    free(dist);
    return s;
}

/* Normal approximation: mean n m / 2, variance n m / 12 ((N + 1) - ties / (N (N - 1))),
 * half a unit of continuity correction toward the mean. */
static void normal_p(size_t n, size_t m, double u, double ties, lm_utest *out)
{
    double nm = (double)n * (double)m, total = (double)(n + m);
    double var = nm / 12.0 * ((total + 1.0) - ties / (total * (total - 1.0)));
    out->exact = false;
    if (!(var > 0.0)) { /* every value equal: no evidence either way */
        out->p_greater = out->p_less = 1.0;
        return;
    }
    double sd = sqrt(var), mean = 0.5 * nm;
    out->p_greater = fmin(1.0, 0.5 * erfc((u - mean - 0.5) / sd / sqrt(2.0)));
    out->p_less = fmin(1.0, 0.5 * erfc(-(u - mean + 0.5) / sd / sqrt(2.0)));
}

lm_status lm_utest_run(const double *x, size_t n, const double *y, size_t m, lm_utest *out,
                       lm_error *err)
{
    memset(out, 0, sizeof *out);
    if (n == 0 || m == 0)
        return lm_fail(err, LM_ERR_ARG, "the U test needs two non-empty samples, got %zu and %zu",
                       n, m);
    ranked *pool = malloc((n + m) * sizeof *pool);
    if (pool == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for %zu values", n + m);
    for (size_t i = 0; i < n + m; i++) {
        pool[i].value = i < n ? x[i] : y[i - n];
        pool[i].from_x = i < n;
        if (!isfinite(pool[i].value)) {
            free(pool);
            return lm_fail(err, LM_ERR_NONFINITE, "the U test needs finite values (%s[%zu])",
                           i < n ? "x" : "y", i < n ? i : i - n);
        }
    }
    double ties = 0.0;
    rank_sum(pool, n, n + m, &out->u, &ties);
    free(pool);
    if (ties == 0.0 && n <= LM_UTEST_EXACT_MAX && m <= LM_UTEST_EXACT_MAX)
        return exact_p(n, m, out->u, out, err);
    normal_p(n, m, out->u, ties, out);
    return LM_OK;
}

double lm_utest_min_p(size_t n, size_t m)
{
    double p = 1.0; /* 1 / C(n + m, n) = prod_{i=1..n} i / (m + i) */
    for (size_t i = 1; i <= n; i++)
        p *= (double)i / (double)(m + i);
    return p;
}

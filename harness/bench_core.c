/* Bench case of the core kernel: gemv_rowdot, y = X w, rows split over threads. */
#include "registry.h"

#include <math.h>
#include <stdlib.h>

typedef struct gemv_state {
    size_t n, d;
    float *x; /* {n, d} */
    float *w; /* {d} */
    float *y; /* {n} */
} gemv_state;

static void gemv_teardown(void *state)
{
    gemv_state *g = state;
    if (g == NULL)
        return;
    lm_free(g->x), lm_free(g->w), lm_free(g->y);
    free(g);
}

static lm_status gemv_setup(const lm_bench_config *config, void **state, lm_error *err)
{
    if (config->n_ctx < 1 || config->d_inner < 1)
        return lm_fail(err, LM_ERR_SHAPE, "gemv_rowdot needs n_ctx >= 1 rows and d_inner >= 1");
    gemv_state *g = calloc(1, sizeof *g);
    if (g == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    g->n = (size_t)config->n_ctx;
    g->d = (size_t)config->d_inner;
    g->x = lm_bench_uniform_f32(config->seed, g->n * g->d, -1.0, 1.0);
    g->w = lm_bench_uniform_f32(config->seed + 1, g->d, -1.0, 1.0);
    g->y = lm_alloc(g->n * sizeof *g->y);
    if (g->x == NULL || g->w == NULL || g->y == NULL) {
        gemv_teardown(g);
        return lm_fail(err, LM_ERR_NOMEM, "cannot allocate gemv_rowdot inputs (%ld x %ld)",
                       config->n_ctx, config->d_inner);
    }
    *state = g;
    return LM_OK;
}

static lm_status gemv_run(void *state, const lm_ops *ops, lm_error *err)
{
    (void)err;
    gemv_state *g = state;
    lm_gemv_rowdot_fn *const kernel = ops->gemv_rowdot_f32;
    long blocks = (long)((g->n + 63) / 64);
#pragma omp parallel for schedule(static)
    for (long b = 0; b < blocks; b++) {
        size_t row = (size_t)b * 64, rows = g->n - row < 64 ? g->n - row : 64;
        kernel(g->x + row * g->d, g->w, g->y + row, rows, g->d);
    }
    return LM_OK;
}

static lm_status gemv_check(void *state, const lm_ops *ops, double *checksum, double *err_max,
                            lm_error *err)
{
    (void)ops;
    gemv_state *g = state;
    *checksum = lm_bench_sum_f32(g->y, g->n);
    double worst = 0.0;
    for (size_t i = 0; i < g->n; i++) { /* float64 reference row by row, scaled by sum |x w| */
        double exact = 0.0, scale = 0.0;
        for (size_t j = 0; j < g->d; j++) {
            exact += (double)g->x[i * g->d + j] * (double)g->w[j];
            scale += fabs((double)g->x[i * g->d + j] * (double)g->w[j]);
        }
        double e = fabs((double)g->y[i] - exact) / (scale > 0.0 ? scale : 1.0);
        if (!(e <= worst))
            worst = e;
    }
    *err_max = worst;
    if (!isfinite(*checksum) || !(worst <= 1e-5))
        return lm_fail(err, LM_ERR_NUMERIC,
                       "gemv_rowdot output differs from the float64 reference: %.3g", worst);
    return LM_OK;
}

static void gemv_cost(const lm_bench_config *config, double *flops, double *bytes)
{
    double n = (double)config->n_ctx, d = (double)config->d_inner;
    *flops = 2.0 * n * d;
    *bytes = 4.0 * (n * d + d + n);
}

const lm_bench_case lm_bench_gemv_rowdot = {
    .name = "gemv_rowdot",
    .summary = "y = X w over n_ctx rows of width d_inner (the template kernel)",
    .dtypes = "f32",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_SSM,
    .defaults = {.bits = 32, .n_ctx = 4096, .d_inner = 1024, .batch = 1},
    .setup = gemv_setup,
    .run = gemv_run,
    .check = gemv_check,
    .cost = gemv_cost,
    .teardown = gemv_teardown,
};

/* The bench registry, the measurement loop every harness uses, and the gemv case. */
#include "bench.h"

#include "../kernels/gemv/gemv.h"
#include "lm_ops.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- registry ------------------------------------------------------------------ */

static const lm_bench_case *const *const families[] = {
    lm_bench_cases_core, lm_bench_cases_attention, lm_bench_cases_recurrent};

size_t lm_bench_count(void)
{
    size_t n = 0;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const lm_bench_case *const *c = families[f]; *c != NULL; c++)
            n++;
    return n;
}

const lm_bench_case *lm_bench_at(size_t index)
{
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const lm_bench_case *const *c = families[f]; *c != NULL; c++)
            if (index-- == 0)
                return *c;
    return NULL;
}

const lm_bench_case *lm_bench_find(const char *name)
{
    for (size_t i = 0, n = lm_bench_count(); i < n; i++)
        if (strcmp(lm_bench_at(i)->name, name) == 0)
            return lm_bench_at(i);
    return NULL;
}

const lm_bench_case *lm_bench_find_role(const char *role, size_t skip)
{
    for (size_t i = 0, n = lm_bench_count(); i < n; i++) {
        const lm_bench_case *c = lm_bench_at(i);
        if (c->role != NULL && strcmp(c->role, role) == 0 && skip-- == 0)
            return c;
    }
    return NULL;
}

bool lm_bench_supports_dtype(const lm_bench_case *bench, const char *dtype)
{
    size_t n = strlen(dtype);
    for (const char *p = bench->dtypes; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, dtype, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

void lm_bench_default_config(const lm_bench_case *bench, lm_bench_config *config)
{
    *config = bench->defaults;
    config->isa = lm_isa_active(NULL);
    config->threads = 1;
    size_t len = strcspn(bench->dtypes, ",");
    if (len >= sizeof config->dtype)
        len = sizeof config->dtype - 1;
    memcpy(config->dtype, bench->dtypes, len);
    config->dtype[len] = '\0';
}

/* ---- measurement ----------------------------------------------------------------- */

#define MIN_REP_SECONDS 1e-3
#define MAX_INNER 100000

/* One member of a measured set: its state between setup and teardown. */
typedef struct member {
    void *state;
    double *samples;
    double *cpu_samples; /* the second half of samples' allocation */
    long inner;
    int done;
    lm_status status;
    lm_error run_err;
} member;

/* Forces the member's ISA and team size (untimed); the status. */
static lm_status prepare_member(const lm_bench_config *config, member *m)
{
    lm_status s = lm_isa_force(config->isa, &m->run_err);
    omp_set_num_threads(config->threads);
    return s;
}

/* Runs the member `inner` times; the status. */
static lm_status run_member(const lm_bench_case *bench, member *m, long inner)
{
    lm_status s = LM_OK;
    for (long i = 0; i < inner && s == LM_OK; i++)
        s = bench->run(m->state, &m->run_err);
    return s;
}

/* Setup and warm-up of one member (the warm-up also sizes its inner loop); result gets the
 * cost model. */
static lm_status start_member(const lm_bench_case *bench, const lm_bench_config *config,
                              int reps, member *m, lm_bench_result *result, lm_error *err)
{
    memset(result, 0, sizeof *result);
    result->err_max = -1.0;
    if (config->threads < 1)
        return lm_fail(err, LM_ERR_ARG, "threads must be >= 1, got %d", config->threads);
    lm_status s = lm_isa_force(config->isa, err);
    if (s != LM_OK)
        return s;
    omp_set_num_threads(config->threads);
    bench->cost(config, &result->flops, &result->bytes);
    s = bench->setup(config, &m->state, err);
    if (s != LM_OK)
        return s;
    m->samples = malloc(2 * (size_t)reps * sizeof *m->samples);
    if (m->samples == NULL) {
        bench->teardown(m->state);
        m->state = NULL;
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for %d samples", reps);
    }
    m->cpu_samples = m->samples + reps;
    lm_error_clear(&m->run_err);
    /* Warm-up (excluded): touches the inputs, faults pages in, sizes the inner loop. */
    double start = lm_now();
    m->status = run_member(bench, m, 1);
    double once = lm_now() - start;
    m->inner = 1;
    if (m->status == LM_OK && once < MIN_REP_SECONDS)
        m->inner = once > 0.0 ? (long)fmin((double)MAX_INNER, ceil(MIN_REP_SECONDS / once))
                              : MAX_INNER;
    return LM_OK;
}

/* Summary, check and teardown of a started member. */
static void finish_member(const lm_bench_case *bench, member *m, lm_bench_result *result)
{
    lm_status s = m->status;
    result->reps = m->done;
    result->inner = m->inner;
    result->rep_times_count = m->done < LM_BENCH_KEPT_REPS ? m->done : LM_BENCH_KEPT_REPS;
    for (int i = 0; i < result->rep_times_count; i++) { /* before the summary sorts them */
        size_t at = (size_t)i * (size_t)m->done / (size_t)result->rep_times_count;
        result->rep_times[i] = m->samples[at];
        result->rep_cpu_times[i] = m->cpu_samples[at];
    }
    result->time = lm_summarize(m->samples, (size_t)m->done);
    free(m->samples);
    if (s == LM_OK)
        s = bench->check(m->state, &result->checksum, &result->err_max, &m->run_err);
    bench->teardown(m->state);
    result->status = s;
    snprintf(result->message, sizeof result->message, "%s", s == LM_OK ? "" : m->run_err.message);
}

lm_status lm_bench_measure_set(const lm_bench_case *const *benches,
                               const lm_bench_config *configs, size_t count, int reps,
                               volatile const int *cancel, lm_bench_result *results,
                               size_t *failed, lm_error *err)
{
    if (reps < 1)
        return lm_fail(err, LM_ERR_ARG, "reps must be >= 1, got %d", reps);
    member *m = calloc(count ? count : 1, sizeof *m);
    if (m == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for %zu measurements", count);
    size_t started = 0;
    lm_status s = LM_OK;
    for (; started < count; started++) {
        s = start_member(benches[started], &configs[started], reps, &m[started],
                         &results[started], err);
        if (s != LM_OK)
            break;
    }
    if (s != LM_OK) { /* a setup failed: the ones started are torn down unmeasured */
        for (size_t i = 0; i < started; i++)
            benches[i]->teardown(m[i].state), free(m[i].samples);
        if (failed != NULL)
            *failed = started;
        free(m);
        return s;
    }
    /* repetition r of every member in turn: drift of the machine reaches all alike */
    for (int r = 0; r < reps; r++) {
        for (size_t i = 0; i < count; i++) {
            if (m[i].status != LM_OK)
                continue;
            if (cancel != NULL && *cancel) {
                m[i].status = lm_fail(&m[i].run_err, LM_ERR_ARG, "interrupted");
                continue;
            }
            m[i].status = prepare_member(&configs[i], &m[i]);
            if (m[i].status != LM_OK)
                continue;
            double start = lm_now(), cpu_start = lm_cpu_now();
            m[i].status = run_member(benches[i], &m[i], m[i].inner);
            double t = (lm_now() - start) / (double)m[i].inner;
            double cpu = (lm_cpu_now() - cpu_start) / (double)m[i].inner;
            if (m[i].status == LM_OK) { /* a failed repetition is not a sample */
                m[i].cpu_samples[m[i].done] = cpu;
                m[i].samples[m[i].done++] = t;
            }
        }
    }
    for (size_t i = 0; i < count; i++)
        finish_member(benches[i], &m[i], &results[i]);
    free(m);
    return LM_OK;
}

lm_status lm_bench_measure(const lm_bench_case *bench, const lm_bench_config *config, int reps,
                           volatile const int *cancel, lm_bench_result *result, lm_error *err)
{
    memset(result, 0, sizeof *result);
    result->err_max = -1.0;
    return lm_bench_measure_set(&bench, config, 1, reps, cancel, result, NULL, err);
}

/* ---- helpers ----------------------------------------------------------------------- */

enum { FILL_BLOCK = 4096 };

float *lm_bench_normal_f32(uint64_t seed, size_t count, double scale)
{
    float *out = lm_alloc(count * sizeof *out);
    double block[FILL_BLOCK];
    if (out == NULL)
        return NULL;
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    for (size_t i = 0; i < count; i += FILL_BLOCK) {
        size_t n = count - i < FILL_BLOCK ? count - i : FILL_BLOCK;
        lm_rng_fill_standard_normal(&rng, block, n);
        for (size_t j = 0; j < n; j++)
            out[i + j] = (float)(block[j] * scale);
    }
    return out;
}

float *lm_bench_uniform_f32(uint64_t seed, size_t count, double low, double high)
{
    float *out = lm_alloc(count * sizeof *out);
    double block[FILL_BLOCK];
    if (out == NULL)
        return NULL;
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    for (size_t i = 0; i < count; i += FILL_BLOCK) {
        size_t n = count - i < FILL_BLOCK ? count - i : FILL_BLOCK;
        lm_rng_fill_uniform(&rng, low, high, block, n);
        for (size_t j = 0; j < n; j++)
            out[i + j] = (float)block[j];
    }
    return out;
}

double lm_bench_sum_f32(const float *x, size_t count)
{
    double sum = 0.0;
    for (size_t i = 0; i < count; i++) {
        if (!isfinite(x[i]))
            return (double)NAN;
        sum += (double)x[i];
    }
    return sum;
}

/* ---- gemv_rowdot: y = X w, rows split over threads -------------------------------- */

typedef struct gemv_state {
    size_t n, d;
    float *x; /* {n, d} */
    float *w; /* {d} */
    float *y; /* {n} */
    const lm_ops *ops;
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
    g->ops = lm_ops_active();
    if (g->x == NULL || g->w == NULL || g->y == NULL) {
        gemv_teardown(g);
        return lm_fail(err, LM_ERR_NOMEM, "cannot allocate gemv_rowdot inputs (%ld x %ld)",
                       config->n_ctx, config->d_inner);
    }
    *state = g;
    return LM_OK;
}

static lm_status gemv_run(void *state, lm_error *err)
{
    (void)err;
    gemv_state *g = state;
    long blocks = (long)((g->n + 63) / 64);
#pragma omp parallel for schedule(static)
    for (long b = 0; b < blocks; b++) {
        size_t row = (size_t)b * 64, rows = g->n - row < 64 ? g->n - row : 64;
        g->ops->rowdot_f32(g->x + row * g->d, g->w, g->y + row, rows, g->d);
    }
    return LM_OK;
}

static lm_status gemv_check(void *state, double *checksum, double *err_max, lm_error *err)
{
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

static const lm_bench_case gemv_rowdot = {
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

const lm_bench_case *const lm_bench_cases_core[] = {&gemv_rowdot, NULL};

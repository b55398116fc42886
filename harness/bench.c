/* The measurement loop every harness uses (the sweep, the crossover) and the helpers of
 * the case files. The cases themselves are registered in harness/registry.h. */
#include "bench.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    const lm_ops *ops; /* lm_ops_for(config->isa) */
    double *samples;
    double *cpu_samples; /* the second half of samples' allocation */
    long inner;
    int done;
    lm_status status;
    lm_error run_err;
} member;

/* The member's team size (untimed, before each of its repetitions). */
static void prepare_member(const lm_bench_config *config)
{
    omp_set_num_threads(config->threads);
}

const lm_ops *lm_bench_ops(const lm_bench_config *config, lm_error *err)
{
    if (config->ops != NULL)
        return config->ops;
    const lm_ops *ops = lm_isa_available(config->isa) ? lm_ops_for(config->isa) : NULL;
    if (ops == NULL)
        lm_fail(err, LM_ERR_UNSUPPORTED, "ISA path %s is not available on this machine",
                lm_isa_name(config->isa));
    return ops;
}

/* Runs the member `inner` times; the status. */
static lm_status run_member(const lm_bench_case *bench, member *m, long inner)
{
    lm_status s = LM_OK;
    for (long i = 0; i < inner && s == LM_OK; i++)
        s = bench->run(m->state, m->ops, &m->run_err);
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
    m->ops = lm_bench_ops(config, err);
    if (m->ops == NULL)
        return LM_ERR_UNSUPPORTED;
    lm_status s;
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
        s = bench->check(m->state, m->ops, &result->checksum, &result->err_max, &m->run_err);
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
            prepare_member(&configs[i]);
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

/* count floats of one lm_rng stream seeded with `seed`: scale * standard_normal when
 * `normal`, else uniform(low, high); NULL when out of memory. */
static float *draw_f32(uint64_t seed, size_t count, bool normal, double low, double high)
{
    float *out = lm_alloc(count * sizeof *out);
    double block[FILL_BLOCK];
    if (out == NULL)
        return NULL;
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    for (size_t i = 0; i < count; i += FILL_BLOCK) {
        size_t n = count - i < FILL_BLOCK ? count - i : FILL_BLOCK;
        if (normal)
            lm_rng_fill_standard_normal(&rng, block, n);
        else
            lm_rng_fill_uniform(&rng, low, high, block, n);
        for (size_t j = 0; j < n; j++)
            out[i + j] = (float)(normal ? block[j] * high : block[j]);
    }
    return out;
}

float *lm_bench_normal_f32(uint64_t seed, size_t count, double scale)
{
    return draw_f32(seed, count, true, 0.0, scale);
}

float *lm_bench_uniform_f32(uint64_t seed, size_t count, double low, double high)
{
    return draw_f32(seed, count, false, low, high);
}

uint16_t *lm_bench_round_bf16(float *x, size_t count)
{
    uint16_t *h = lm_alloc((count ? count : 1) * sizeof *h);
    if (h == NULL)
        return NULL;
    lm_kv_store(LM_KV_BF16, x, h, count);
    lm_kv_load(LM_KV_BF16, h, x, count);
    return h;
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

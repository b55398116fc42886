/* Round-robin over copies of a unit; the read-only stream; available memory. */
#include "model_run.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

double lm_model_unit_alloc(const lm_unit_config *cfg, uint64_t llc_bytes)
{
    lm_unit_bytes b;
    lm_unit_bytes_of(cfg, &b);
    return (double)lm_model_copies(cfg, llc_bytes) * b.alloc;
}

size_t lm_model_copies(const lm_unit_config *cfg, uint64_t llc_bytes)
{
    if (cfg->prompt > 0)
        return 1;
    lm_unit_bytes b;
    lm_unit_bytes_of(cfg, &b);
    double per = b.weights_read + b.cache + b.state;
    double want = ceil(2.0 * (double)llc_bytes / (per > 1.0 ? per : 1.0));
    return want < 1.0 ? 1 : want > LM_MODEL_COPIES_MAX ? LM_MODEL_COPIES_MAX : (size_t)want;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One pass: every copy stepped once; per-step seconds by component added to comp. */
static lm_status pass(lm_unit **units, size_t copies, float *x, double *comp, lm_error *err)
{
    for (size_t c = 0; c < copies; c++) {
        lm_status st = lm_unit_step(units[c], x, comp, err);
        if (st != LM_OK)
            return st;
    }
    return LM_OK;
}

lm_status lm_model_measure_unit(const lm_unit_config *cfg, int reps, uint64_t llc_bytes,
                                lm_unit_timing *out, lm_error *err)
{
    memset(out, 0, sizeof *out);
    size_t copies = lm_model_copies(cfg, llc_bytes);
    lm_unit *units[LM_MODEL_COPIES_MAX] = {0};
    size_t d = (size_t)cfg->spec->d_model, rows = lm_unit_rows(cfg);
    float *x = lm_alloc(rows * d * sizeof(float));
    double *totals = calloc((size_t)reps, sizeof *totals);
    double (*gemms)[2] = calloc((size_t)reps, sizeof *gemms);
    double (*comps)[LM_COMP_COUNT] = calloc((size_t)reps, sizeof *comps);
    lm_status st = x && totals && comps && gemms ? LM_OK : lm_fail(err, LM_ERR_NOMEM, "out of memory");
    for (size_t c = 0; c < copies && st == LM_OK; c++) {
        lm_unit_config one = *cfg;
        one.seed = cfg->seed + 1000u * c;
        st = lm_unit_create(&one, &units[c], err);
    }
    for (size_t i = 0; st == LM_OK && i < rows * d; i++)
        x[i] = (float)((i * 37u) % 101u) / 101.0f - 0.5f;
    double warm[LM_COMP_COUNT] = {0}, gs, gf;
    if (st == LM_OK)
        st = pass(units, copies, x, warm, err);
    for (size_t c = 0; c < copies && st == LM_OK; c++)
        lm_unit_gemm_take(units[c], &gs, &gf);
    for (int r = 0; r < reps && st == LM_OK; r++) {
        double t0 = omp_get_wtime();
        st = pass(units, copies, x, comps[r], err);
        totals[r] = (omp_get_wtime() - t0) / (double)copies;
        for (size_t c = 0; c < copies && st == LM_OK; c++) {
            lm_unit_gemm_take(units[c], &gs, &gf);
            gemms[r][0] += gs / (double)copies;
            gemms[r][1] += gf / (double)copies;
        }
    }
    if (st == LM_OK) {
        double sorted[256];
        int n = reps < 256 ? reps : 256;
        memcpy(sorted, totals, (size_t)n * sizeof(double));
        qsort(sorted, (size_t)n, sizeof(double), compare_double);
        double median = sorted[n / 2];
        int at = 0;
        for (int r = 0; r < n; r++)
            if (totals[r] == median)
                at = r;
        out->step_s = median;
        for (int k = 0; k < LM_COMP_COUNT; k++)
            out->comp_s[k] = comps[at][k] / (double)copies;
        out->gemm_s = gemms[at][0];
        out->gemm_flops = gemms[at][1];
        lm_unit_bytes b;
        lm_unit_bytes_of(cfg, &b);
        out->bytes = b.weights_read + b.cache + b.state;
        out->copies = copies;
        for (size_t i = 0; i < rows * d; i++)
            out->checksum += (double)x[i];
        if (!isfinite(out->checksum))
            st = lm_fail(err, LM_ERR_NUMERIC, "the residual stream of %s overflowed",
                         cfg->role == LM_UNIT_HEAD  ? "the head"
                         : cfg->role == LM_UNIT_MLP ? lm_mlp_name((lm_mlp_kind)cfg->kind)
                                                    : lm_mixer_name((lm_mixer_kind)cfg->kind));
    }
    for (size_t c = 0; c < copies; c++)
        lm_unit_free(units[c]);
    lm_free(x);
    free(totals);
    free(comps);
    free(gemms);
    return st;
}

enum { STREAM_WIDTH = 1024, STREAM_BLOCK = 256 };

lm_status lm_stream_create(lm_stream *s, const lm_ops *ops, uint64_t llc_bytes, lm_error *err)
{
    memset(s, 0, sizeof *s);
    size_t bytes = 4 * (size_t)llc_bytes;
    if (bytes < ((size_t)64 << 20))
        bytes = (size_t)64 << 20;
    s->ops = ops;
    s->width = STREAM_WIDTH;
    s->rows = bytes / (s->width * sizeof(float)) / STREAM_BLOCK * STREAM_BLOCK;
    s->xs = lm_alloc(s->rows * s->width * sizeof(float));
    s->w = lm_alloc(s->width * sizeof(float));
    s->y = lm_alloc(s->rows * sizeof(float));
    if (s->xs == NULL || s->w == NULL || s->y == NULL) {
        lm_stream_free(s);
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for a %zu MiB stream array", bytes >> 20);
    }
    const size_t rows = s->rows, width = s->width;
    float *xs = s->xs;
#pragma omp parallel for schedule(static)
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < width; c++)
            xs[r * width + c] = 1.0f;
    for (size_t c = 0; c < width; c++)
        s->w[c] = 1.0f / (float)width;
    return LM_OK;
}

double lm_stream_bytes(const lm_stream *s) { return (double)(s->rows * s->width * sizeof(float)); }

double lm_stream_measure(const lm_stream *s, int reps)
{
    return lm_stream_measure_prefix(s, s->rows / STREAM_BLOCK, reps);
}

size_t lm_stream_blocks(const lm_stream *s, double bytes)
{
    const double block = (double)(STREAM_BLOCK * s->width * sizeof(float));
    const size_t all = s->rows / STREAM_BLOCK, want = (size_t)(bytes / block);
    return want < 1 ? 1 : want > all ? all : want;
}

/* A prefix smaller than this is read several times per timed pass, so a pass is long
 * enough for the clock and the team's start-up (about 10 ms at 30 GB/s). */
#define STREAM_PASS_BYTES (256.0 * 1048576.0)

double lm_stream_measure_prefix(const lm_stream *s, size_t blocks, int reps)
{
    double best = 0.0;
    const size_t width = s->width;
    const double bytes = (double)(blocks * STREAM_BLOCK * width * sizeof(float));
    const int rounds = bytes >= STREAM_PASS_BYTES ? 1 : (int)ceil(STREAM_PASS_BYTES / bytes);
    const float *xs = s->xs, *w = s->w;
    float *y = s->y;
    const lm_ops *ops = s->ops;
    for (int r = 0; r <= reps; r++) {
        double t0 = omp_get_wtime();
        for (int k = 0; k < rounds; k++) {
#pragma omp parallel for schedule(static)
            for (size_t b = 0; b < blocks; b++)
                ops->gemv_rowdot_f32(xs + b * STREAM_BLOCK * width, w, y + b * STREAM_BLOCK,
                                     STREAM_BLOCK, width);
        }
        double rate = bytes * rounds / (omp_get_wtime() - t0) / 1e9;
        if (r > 0 && rate > best)
            best = rate;
    }
    return best;
}

void lm_stream_free(lm_stream *s)
{
    lm_free(s->xs);
    lm_free(s->w);
    lm_free(s->y);
    s->xs = s->w = s->y = NULL;
}

lm_status lm_model_stream(const lm_ops *ops, uint64_t llc_bytes, int reps, double *gbps,
                          double *array_bytes, lm_error *err)
{
    lm_stream s;
    lm_status st = lm_stream_create(&s, ops, llc_bytes, err);
    if (st != LM_OK)
        return st;
    *gbps = lm_stream_measure(&s, reps);
    *array_bytes = lm_stream_bytes(&s);
    lm_stream_free(&s);
    return LM_OK;
}

double lm_model_available_memory(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (f != NULL) {
        char line[256];
        long long kb = -1;
        while (fgets(line, sizeof line, f) != NULL)
            if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1)
                break;
        fclose(f);
        if (kb > 0)
            return (double)kb * 1024.0;
    }
    return (double)sysconf(_SC_AVPHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
}

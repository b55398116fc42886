/* `make gemv-shapes`: the decode projection y {m, n} = x {m, k} W^T at small m (batch 1..8)
 * with bf16 (or f32, int8) weights, longmix's own GEMV (lm_dense_apply, kernels/layers) against
 * oneDNN's matmul (lm_gemm, kernels/gemm) at the same shape, beside the read-only stream
 * (lm_stream_measure), all in the same minutes: the three are timed in turn, round after
 * round, and each prints its median. The weights are held in enough copies to exceed twice
 * the last-level cache (one pass reads every copy), so both read W from DRAM as a whole
 * model's decode does. This is the measurement behind docs/dependencies.md's choice of the
 * decode GEMV. Prints CSV on stdout.
 * Usage: gemv-shapes [N K [REPS [THREADS [DTYPE [M...]]]]] (default 14336 4096 9 2 bf16 1 8). */
#include "longmix.h"
#include "../harness/model_run.h"
#include "../harness/topo.h"
#include "../kernels/gemm/gemm.h"
#include "tool_time.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ROUNDS_MAX = 64, COPIES_MAX = 64 };

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof *t, tool_cmp_double);
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
}

/* One batch size m at one thread count: own GEMV, oneDNN and the stream, `reps` rounds. */
static int measure(const lm_dense *w, size_t copies, size_t m, int threads, int reps,
                   const lm_stream *stream_array, const float *x, float *y, const char *dname)
{
    const size_t n = w[0].rows, k = w[0].cols;
    lm_gemm *g[COPIES_MAX] = {0};
    lm_error err;
    for (size_t c = 0; c < copies; c++)
        if (lm_gemm_create(&g[c], m, n, k, w[c].dtype, w[c].w, w[c].scale, 0, &err) != LM_OK) {
            fprintf(stderr, "gemv-shapes: %s\n", err.message);
            return 1;
        }
    const lm_ops *ops = lm_ops_active();
    double t_own[ROUNDS_MAX], t_dnn[ROUNDS_MAX], t_stream[ROUNDS_MAX];
    for (int r = -1; r < reps; r++) { /* round -1 warms every copy up */
        double t0 = tool_now();
        for (size_t c = 0; c < copies; c++)
            if (lm_dense_apply(&w[c], x, m, y, ops, &err) != LM_OK) {
                fprintf(stderr, "gemv-shapes: %s\n", err.message);
                return 1;
            }
        double t1 = tool_now();
        for (size_t c = 0; c < copies; c++)
            if (lm_gemm_run(g[c], x, y, &err) != LM_OK) {
                fprintf(stderr, "gemv-shapes: %s\n", err.message);
                return 1;
            }
        double t2 = tool_now(), gbps = lm_stream_measure(stream_array, 1);
        if (r >= 0) {
            t_own[r] = (t1 - t0) / (double)copies;
            t_dnn[r] = (t2 - t1) / (double)copies;
            t_stream[r] = gbps;
        }
    }
    const double wbytes = (double)lm_weight_dtype_size(w[0].dtype) * (double)n * (double)k;
    const double own = median(t_own, reps), dnn = median(t_dnn, reps);
    const double stream = median(t_stream, reps);
    printf("longmix,%zu,%zu,%zu,%s,%d,%.4f,%.1f,%.1f,%.0f\n", m, n, k, dname, threads,
           own * 1e3, wbytes / own * 1e-9, stream, 100.0 * wbytes / own * 1e-9 / stream);
    printf("onednn,%zu,%zu,%zu,%s,%d,%.4f,%.1f,%.1f,%.0f\n", m, n, k, dname, threads,
           dnn * 1e3, wbytes / dnn * 1e-9, stream, 100.0 * wbytes / dnn * 1e-9 / stream);
    fflush(stdout);
    for (size_t c = 0; c < copies; c++)
        lm_gemm_free(g[c]);
    return 0;
}

int main(int argc, char **argv)
{
    size_t n = argc > 2 ? strtoull(argv[1], NULL, 10) : 14336;
    size_t k = argc > 2 ? strtoull(argv[2], NULL, 10) : 4096;
    int reps = argc > 3 ? atoi(argv[3]) : 9;
    int tmax = argc > 4 ? atoi(argv[4]) : 2;
    const char *dname = argc > 5 ? argv[5] : "bf16";
    lm_weight_dtype dtype;
    lm_error err;
    if (n == 0 || k == 0 || reps < 1 || reps > ROUNDS_MAX || tmax < 1 ||
        lm_weight_dtype_parse(dname, &dtype, &err) != LM_OK) {
        fprintf(stderr, "usage: gemv-shapes [N K [REPS (1..%d) [THREADS [f32|bf16|int8 [M...]]]]]\n",
                ROUNDS_MAX);
        return 2;
    }
    size_t ms[16] = {1, 8}, mcount = 2;
    if (argc > 6) {
        mcount = 0;
        for (int i = 6; i < argc && mcount < 16; i++)
            if ((ms[mcount++] = strtoull(argv[i], NULL, 10)) == 0) {
                fprintf(stderr, "gemv-shapes: M must be positive\n");
                return 2;
            }
    }
    lm_machine_meta meta;
    lm_machine_meta_fill(&meta);
    const uint64_t llc = meta.llc_bytes_total > 0 ? meta.llc_bytes_total : (32u << 20);
    const double wbytes = (double)lm_weight_dtype_size(dtype) * (double)n * (double)k;
    size_t copies = (size_t)(2.0 * (double)llc / wbytes) + 1;
    copies = copies > COPIES_MAX ? COPIES_MAX : copies;
    fprintf(stderr, "gemv-shapes: %zu copies of %.0f MiB (> 2 x LLC %.0f MiB)\n", copies,
            wbytes / 1048576.0, (double)llc / 1048576.0);
    lm_dense w[COPIES_MAX];
    for (size_t c = 0; c < copies; c++)
        if (lm_dense_init(&w[c], n, k, dtype, 5 + c, &err) != LM_OK) {
            fprintf(stderr, "gemv-shapes: %s\n", err.message);
            return 1;
        }
    size_t mmax = 1;
    for (size_t i = 0; i < mcount; i++)
        mmax = ms[i] > mmax ? ms[i] : mmax;
    float *x = malloc(mmax * k * sizeof *x), *y = malloc(mmax * n * sizeof *y);
    if (x == NULL || y == NULL)
        return 1;
    lm_rng rng;
    lm_rng_seed(&rng, 1);
    for (size_t i = 0; i < mmax * k; i++)
        x[i] = (float)lm_rng_standard_normal(&rng);
    lm_stream stream;
    if (lm_stream_create(&stream, lm_ops_active(), llc, &err) != LM_OK) {
        fprintf(stderr, "gemv-shapes: %s\n", err.message);
        return 1;
    }
    printf("lib,m,n,k,dtype,threads,ms,weight_gbps,stream_gbps,pct_stream\n");
    int rc = 0;
    for (int threads = 1; threads <= tmax && rc == 0; threads++) {
        omp_set_num_threads(threads);
        for (size_t i = 0; i < mcount && rc == 0; i++)
            rc = measure(w, copies, ms[i], threads, reps, &stream, x, y, dname);
    }
    lm_stream_free(&stream);
    for (size_t c = 0; c < copies; c++)
        lm_dense_free(&w[c]);
    free(x);
    free(y);
    return rc;
}

/* `make gemm-shapes`: the prefill GEMM (kernels/gemm, oneDNN) at one projection shape,
 * C {m, n} = A {m, k} W^T, f32, bf16 and int8 weights, blocked and plain weight layouts, on
 * 1..T threads, against the same run's peak of the dtype (float32 FMA, bf16 dot products,
 * u8 x s8 VPDPBUSD dot products for int8, 2 operations per multiply-add).
 * With LM_OPENBLAS=/path/libopenblas.so.0 it also times that library's cblas_sgemm (and
 * cblas_sbgemm when it has one) at the same shape, loaded with dlopen: OpenBLAS is measured,
 * not a dependency. Prints CSV on stdout. Usage: gemm-shapes [M N K [REPS [THREADS]]]. */
#include "longmix.h"
#include "../harness/roofline.h"
#include "../kernels/attention/attention.h"
#include "../kernels/gemm/gemm.h"
#include "tool_time.h"

#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void sgemm_fn(int order, int ta, int tb, int m, int n, int k, float alpha,
                      const float *a, int lda, const float *b, int ldb, float beta, float *c,
                      int ldc);
typedef void sbgemm_fn(int order, int ta, int tb, int m, int n, int k, float alpha,
                       const uint16_t *a, int lda, const uint16_t *b, int ldb, float beta,
                       float *c, int ldc);
typedef void set_threads_fn(int n);

static double peak_of(const char *dtype, int threads)
{
    double g = 0.0;
    lm_error err;
    if (strcmp(dtype, "bf16") == 0 && lm_roofline_peak_dot_bf16(threads, 5, 0.05, &g, &err) == LM_OK)
        return g;
    if (strcmp(dtype, "int8") == 0 && lm_roofline_peak_dot_i8(threads, 5, 0.05, &g, &err) == LM_OK)
        return g;
    lm_isa isa = lm_isa_active(NULL);
    if (lm_roofline_peak(isa, threads, 5, 0.05, &g, &err) != LM_OK)
        return 0.0;
    return g;
}

static void row(const char *lib, size_t m, size_t n, size_t k, const char *dtype,
                const char *layout, int threads, double s, double peak, const char *impl)
{
    double gf = 2.0 * (double)m * (double)n * (double)k / s * 1e-9;
    printf("%s,%zu,%zu,%zu,%s,%s,%d,%.1f,%.1f,%.1f,%.1f,%s\n", lib, m, n, k, dtype, layout,
           threads, s * 1e3, gf, peak, peak > 0 ? 100.0 * gf / peak : 0.0, impl);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    size_t m = argc > 3 ? strtoull(argv[1], NULL, 10) : 512;
    size_t n = argc > 3 ? strtoull(argv[2], NULL, 10) : 14336;
    size_t k = argc > 3 ? strtoull(argv[3], NULL, 10) : 4096;
    int reps = argc > 4 ? atoi(argv[4]) : 3;
    int tmax = argc > 5 ? atoi(argv[5]) : 2;
    if (m == 0 || n == 0 || k == 0 || reps < 1 || tmax < 1) {
        fprintf(stderr, "usage: gemm-shapes [M N K [REPS [THREADS]]]\n");
        return 2;
    }
    float *a = malloc(m * k * sizeof *a), *c = malloc(m * n * sizeof *c);
    uint16_t *a16 = malloc(m * k * sizeof *a16);
    if (!a || !c || !a16)
        return 1;
    lm_rng rng;
    lm_rng_seed(&rng, 1);
    for (size_t i = 0; i < m * k; i++) {
        a[i] = (float)lm_rng_standard_normal(&rng);
        a16[i] = lm_bf16_from_f32(a[i]);
    }
    void *blas = getenv("LM_OPENBLAS") ? dlopen(getenv("LM_OPENBLAS"), RTLD_NOW) : NULL;
    if (getenv("LM_OPENBLAS") && !blas)
        fprintf(stderr, "gemm-shapes: %s\n", dlerror());
    sgemm_fn *sgemm = NULL;
    sbgemm_fn *sbgemm = NULL;
    set_threads_fn *blas_threads = NULL;
    if (blas) { /* ISO C has no object-to-function pointer cast: copy the bits */
        void *p;
        if ((p = dlsym(blas, "cblas_sgemm")))
            memcpy(&sgemm, &p, sizeof p);
        if ((p = dlsym(blas, "cblas_sbgemm")))
            memcpy(&sbgemm, &p, sizeof p);
        if ((p = dlsym(blas, "openblas_set_num_threads")))
            memcpy(&blas_threads, &p, sizeof p);
    }
    if (blas)
        fprintf(stderr, "gemm-shapes: %s: cblas_sgemm %s, cblas_sbgemm %s\n",
                getenv("LM_OPENBLAS"), sgemm ? "yes" : "no", sbgemm ? "yes" : "no");
    printf("lib,m,n,k,dtype,weights,threads,ms,gflops,peak_gflops,pct_peak,impl\n");
    double *t = malloc((size_t)reps * sizeof *t);
    const char *only = getenv("LM_GEMM_DTYPE"); /* one dtype's rows only: f32, bf16 or int8 */
    for (int dt = 0; dt < 3; dt++) {
        lm_weight_dtype dtype = (lm_weight_dtype)dt;
        const char *dname = lm_weight_dtype_name(dtype);
        if (only && strcmp(only, dname) != 0)
            continue;
        lm_dense d;
        lm_error err;
        if (lm_dense_init(&d, n, k, dtype, 5, &err) != LM_OK) {
            fprintf(stderr, "gemm-shapes: %s\n", err.message);
            return 1;
        }
        for (int threads = 1; threads <= tmax; threads++) {
            omp_set_num_threads(threads);
            double peak = peak_of(dname, threads);
            for (unsigned flags = 0; flags <= LM_GEMM_PLAIN_WEIGHTS; flags++) {
                lm_gemm *g;
                if (lm_gemm_create(&g, m, n, k, dtype, d.w, d.scale, flags, &err) != LM_OK) {
                    fprintf(stderr, "gemm-shapes: %s\n", err.message);
                    return 1;
                }
                for (int r = -1; r < reps; r++) {
                    double t0 = tool_now();
                    if (lm_gemm_run(g, a, c, &err) != LM_OK) {
                        fprintf(stderr, "gemm-shapes: %s\n", err.message);
                        return 1;
                    }
                    if (r >= 0)
                        t[r] = tool_now() - t0;
                }
                qsort(t, (size_t)reps, sizeof *t, tool_cmp_double);
                row("onednn", m, n, k, dname, flags ? "plain" : "blocked", threads,
                    t[reps / 2], peak, lm_gemm_impl(g));
                lm_gemm_free(g);
            }
            if ((dt == 0 && sgemm) || (dt == 1 && sbgemm)) {
                if (blas_threads)
                    blas_threads(threads);
                for (int r = -1; r < reps; r++) {
                    double t0 = tool_now();
                    if (dt == 0) /* CblasRowMajor 101, CblasNoTrans 111, CblasTrans 112 */
                        sgemm(101, 111, 112, (int)m, (int)n, (int)k, 1.0f, a, (int)k, d.w,
                              (int)k, 0.0f, c, (int)n);
                    else
                        sbgemm(101, 111, 112, (int)m, (int)n, (int)k, 1.0f, a16, (int)k, d.w,
                               (int)k, 0.0f, c, (int)n);
                    if (r >= 0)
                        t[r] = tool_now() - t0;
                }
                qsort(t, (size_t)reps, sizeof *t, tool_cmp_double);
                row("openblas", m, n, k, dname, "plain", threads, t[reps / 2], peak,
                    dt ? "cblas_sbgemm" : "cblas_sgemm");
            }
        }
        lm_dense_free(&d);
    }
    free(t);
    free(a);
    free(a16);
    free(c);
    return 0;
}

/* The prefill GEMM (kernels/gemm, over oneDNN) against the float64 oracle lm_dense_f64_ref
 * on small odd shapes, f32 and bf16 weights, blocked and plain weight layouts, and its
 * argument checks. bf16: the oracle takes A rounded to bf16 as the GEMM does, so both
 * dtypes share one bound, that of float32 sums. */
#include "longmix.h"
#include "../kernels/attention/attention.h"
#include "../kernels/gemm/gemm.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

/* Float32 accumulation of k products: |error| <= k u sum |w a| (u = 2^-24), with a factor
 * 4 of room for blocked partial sums. */
#define GEMM_ROOM 4.0

static void check_gemm(size_t m, size_t n, size_t k, lm_weight_dtype dtype, unsigned flags)
{
    lm_dense d;
    lm_error err;
    cr_assert_eq(lm_dense_init(&d, n, k, dtype, 42 + m, &err), LM_OK, "%s", err.message);
    float *a = malloc(m * k * sizeof *a), *c = malloc(m * n * sizeof *c);
    double *ad = malloc(m * k * sizeof *ad), *wd = malloc(n * k * sizeof *wd);
    double *cd = malloc(m * n * sizeof *cd);
    lm_rng rng;
    lm_rng_seed(&rng, 7 + k);
    for (size_t i = 0; i < m * k; i++) {
        a[i] = (float)lm_rng_standard_normal(&rng);
        ad[i] = dtype == LM_WEIGHT_BF16 ? (double)lm_f32_from_bf16(lm_bf16_from_f32(a[i]))
                                        : (double)a[i];
    }
    for (size_t r = 0; r < n; r++)
        for (size_t i = 0; i < k; i++)
            wd[r * k + i] = lm_dense_weight(&d, r, i);
    cr_assert_eq(lm_dense_f64_ref(wd, ad, m, n, k, cd, &err), LM_OK, "%s", err.message);
    lm_gemm *g = NULL;
    cr_assert_eq(lm_gemm_create(&g, m, n, k, dtype, d.w, flags, &err), LM_OK, "%s", err.message);
    lm_dense_free(&d); /* the GEMM holds its own copy */
    cr_assert(lm_gemm_weight_bytes(g) >= n * k * lm_weight_dtype_size(dtype));
    cr_assert_neq(lm_gemm_impl(g)[0], '\0');
    for (int run = 0; run < 2; run++) { /* a second run on the same unit gives the same */
        for (size_t i = 0; i < m * n; i++)
            c[i] = NAN;
        cr_assert_eq(lm_gemm_run(g, a, c, &err), LM_OK, "%s", err.message);
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                double mag = 0.0;
                for (size_t l = 0; l < k; l++)
                    mag += fabs(wd[j * k + l] * ad[i * k + l]);
                double bound = GEMM_ROOM * (double)k * 0x1p-24 * mag + 1e-30;
                double e = fabs((double)c[i * n + j] - cd[i * n + j]);
                cr_assert(e <= bound, "%s %s m %zu n %zu k %zu: C[%zu, %zu] = %.9g, reference "
                          "%.9g, error %.3g > bound %.3g", lm_weight_dtype_name(dtype),
                          lm_gemm_impl(g), m, n, k, i, j, (double)c[i * n + j], cd[i * n + j],
                          e, bound);
            }
    }
    lm_gemm_free(g);
    free(a);
    free(c);
    free(ad);
    free(wd);
    free(cd);
}

Test(gemm, matches_the_reference_on_odd_shapes)
{
    if (!lm_gemm_available())
        cr_skip_test("this build has no oneDNN");
    const size_t shapes[][3] = {{1, 1, 1}, {1, 33, 100}, {3, 5, 7},    {17, 33, 100},
                                {5, 37, 65}, {64, 17, 256}, {70, 130, 97}};
    for (int dt = 0; dt < 2; dt++)
        for (unsigned flags = 0; flags <= LM_GEMM_PLAIN_WEIGHTS; flags++)
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                check_gemm(shapes[s][0], shapes[s][1], shapes[s][2], (lm_weight_dtype)dt, flags);
}

Test(gemm, rejects_bad_arguments)
{
    if (!lm_gemm_available())
        cr_skip_test("this build has no oneDNN");
    lm_error err;
    lm_gemm *g = (lm_gemm *)&err; /* set to NULL on every failure */
    float w[4] = {0};
    cr_assert_eq(lm_gemm_create(&g, 0, 2, 2, LM_WEIGHT_F32, w, 0, &err), LM_ERR_SHAPE);
    cr_assert_str_eq(err.message, "a GEMM must be non-empty, got m 0 n 2 k 2");
    cr_assert_null(g);
    cr_assert_eq(lm_gemm_create(&g, 1, 2, 2, LM_WEIGHT_INT8, w, 0, &err), LM_ERR_UNSUPPORTED);
    cr_assert_str_eq(err.message, "the GEMM takes f32 or bf16 weights, not int8");
    cr_assert_eq(lm_gemm_create(&g, 1, 2, 2, LM_WEIGHT_F32, NULL, 0, &err), LM_ERR_ARG);
    cr_assert_eq(lm_gemm_create(&g, 1, 2, 2, LM_WEIGHT_F32, w, 0, &err), LM_OK, "%s", err.message);
    float a[2] = {1, 2}, c[2];
    cr_assert_eq(lm_gemm_run(g, NULL, c, &err), LM_ERR_ARG);
    cr_assert_str_eq(err.message, "lm_gemm_run: NULL A");
    cr_assert_eq(lm_gemm_run(g, a, c, &err), LM_OK, "%s", err.message);
    cr_assert(c[0] == 0.0f && c[1] == 0.0f);
    lm_gemm_free(g);
    lm_gemm_free(NULL);
}

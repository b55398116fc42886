/* The prefill GEMM (kernels/gemm, over oneDNN) against the float64 oracle lm_dense_f64_ref
 * on small odd shapes, f32, bf16 and int8 weights, blocked and plain weight layouts, and its
 * argument checks. bf16: the oracle takes A rounded to bf16 as the GEMM does, so both
 * dtypes share one bound, that of float32 sums. int8: two oracles, see check_gemm_int8. */
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
    cr_assert_eq(lm_gemm_create(&g, m, n, k, dtype, d.w, NULL, flags, &err), LM_OK, "%s",
                 err.message);
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

/* int8 weights. The GEMM quantizes each row i of A to codes q with scale sa[i]
 * (lm_gemm_quantize_rows_s8, checked on its own below), so two oracles, both float64
 * products with the dequantized weights Wd[j, l] = scale[j] code[j, l]:
 *   exact:  Cq[i, j] = sum_l Wd[j, l] sa[i] q[i, l]: the int32 sum of code products is
 *           exact, and C then carries three float32 roundings (the sum to float32, times
 *           scale[j], times sa[i]): |C - Cq| <= 4 u |Cq| (u = 2^-24; 3 u plus room);
 *   true:   C0 = A Wd^T with the unquantized A: |A - sa q| <= sa (1/2 + 2^-17) elementwise,
 *           so |C - C0| <= sa[i] (1/2 + 2^-17) sum_l |Wd[j, l]| + 4 u |Cq|. */
#define INT8_ROUNDINGS 4.0

static void check_gemm_int8(size_t m, size_t n, size_t k, unsigned flags)
{
    lm_dense d;
    lm_error err;
    cr_assert_eq(lm_dense_init(&d, n, k, LM_WEIGHT_INT8, 42 + m, &err), LM_OK, "%s", err.message);
    float *a = malloc(m * k * sizeof *a), *c = malloc(m * n * sizeof *c);
    float *sa = malloc(m * sizeof *sa);
    int8_t *q = malloc(m * k);
    double *ad = malloc(m * k * sizeof *ad), *aq = malloc(m * k * sizeof *aq);
    double *wd = malloc(n * k * sizeof *wd), *c0 = malloc(m * n * sizeof *c0);
    double *cq = malloc(m * n * sizeof *cq), *wsum = malloc(n * sizeof *wsum);
    lm_rng rng;
    lm_rng_seed(&rng, 7 + k);
    for (size_t i = 0; i < m * k; i++)
        a[i] = (float)lm_rng_standard_normal(&rng);
    if (m > 2) /* a zero row (scale 0) and a row of one sign with a large range */
        for (size_t l = 0; l < k; l++)
            a[k + l] = 0.0f, a[2 * k + l] = (float)(1e3 * (double)(l + 1));
    lm_gemm_quantize_rows_s8(a, m, k, q, sa);
    for (size_t i = 0; i < m * k; i++)
        ad[i] = (double)a[i], aq[i] = (double)sa[i / k] * (double)q[i];
    for (size_t r = 0; r < n; r++) {
        wsum[r] = 0.0;
        for (size_t l = 0; l < k; l++) {
            wd[r * k + l] = lm_dense_weight(&d, r, l);
            wsum[r] += fabs(wd[r * k + l]);
        }
    }
    cr_assert_eq(lm_dense_f64_ref(wd, ad, m, n, k, c0, &err), LM_OK, "%s", err.message);
    cr_assert_eq(lm_dense_f64_ref(wd, aq, m, n, k, cq, &err), LM_OK, "%s", err.message);
    lm_gemm *g = NULL;
    cr_assert_eq(lm_gemm_create(&g, m, n, k, LM_WEIGHT_INT8, d.w, d.scale, flags, &err), LM_OK,
                 "%s", err.message);
    lm_dense_free(&d);
    cr_assert(lm_gemm_weight_bytes(g) >= n * k);
    cr_assert(lm_gemm_work_bytes(g) >= m * k + m * sizeof(float));
    for (int run = 0; run < 2; run++) {
        for (size_t i = 0; i < m * n; i++)
            c[i] = NAN;
        cr_assert_eq(lm_gemm_run(g, a, c, &err), LM_OK, "%s", err.message);
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) {
                double got = (double)c[i * n + j];
                double exact = INT8_ROUNDINGS * 0x1p-24 * fabs(cq[i * n + j]) + 1e-30;
                double quant = (double)sa[i] * (0.5 + 0x1p-17) * wsum[j] + exact;
                double eq = fabs(got - cq[i * n + j]), e0 = fabs(got - c0[i * n + j]);
                cr_assert(eq <= exact, "int8 %s m %zu n %zu k %zu: C[%zu, %zu] = %.9g, quantized-A "
                          "reference %.9g, error %.3g > bound %.3g", lm_gemm_impl(g), m, n, k, i,
                          j, got, cq[i * n + j], eq, exact);
                cr_assert(e0 <= quant, "int8 %s m %zu n %zu k %zu: C[%zu, %zu] = %.9g, reference "
                          "%.9g, error %.3g > bound %.3g", lm_gemm_impl(g), m, n, k, i, j, got,
                          c0[i * n + j], e0, quant);
            }
    }
    lm_gemm_free(g);
    free(a), free(c), free(sa), free(q), free(ad), free(aq), free(wd), free(c0), free(cq);
    free(wsum);
}

Test(gemm, int8_matches_both_references_on_odd_shapes)
{
    if (!lm_gemm_available())
        cr_skip_test("this build has no oneDNN");
    const size_t shapes[][3] = {{1, 1, 1},   {1, 33, 100}, {1, 37, 65}, {3, 5, 7},
                                {17, 33, 101}, {64, 17, 256}, {70, 130, 97}};
    for (unsigned flags = 0; flags <= LM_GEMM_PLAIN_WEIGHTS; flags++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            check_gemm_int8(shapes[s][0], shapes[s][1], shapes[s][2], flags);
}

/* The quantizer against its contract, computed here in float64: scale = max |a| / 127
 * (float32-rounded), |q| <= 127, |a - scale q| <= scale (1/2 + 2^-17), the row's largest
 * magnitude coded +-127, a zero row all zeros. */
Test(gemm, quantizes_rows_to_s8_within_half_a_step)
{
    enum { M = 4, K = 37 };
    float a[M * K], scale[M];
    int8_t q[M * K];
    lm_rng rng;
    lm_rng_seed(&rng, 11);
    for (size_t i = 0; i < M * K; i++)
        a[i] = (float)(lm_rng_standard_normal(&rng) * (double)(1 + i / K * 100));
    for (size_t l = 0; l < K; l++)
        a[2 * K + l] = 0.0f;
    a[3 * K + 5] = -1e6f;
    lm_gemm_quantize_rows_s8(a, M, K, q, scale);
    for (size_t i = 0; i < M; i++) {
        double most = 0.0;
        size_t at = 0;
        for (size_t l = 0; l < K; l++)
            if (fabs((double)a[i * K + l]) > most)
                most = fabs((double)a[i * K + l]), at = l;
        cr_assert_eq(scale[i], (float)(most / 127.0), "row %zu: scale %.9g, max %.9g", i,
                     (double)scale[i], most);
        if (most > 0.0)
            cr_assert_eq(abs(q[i * K + at]), 127, "row %zu: the largest codes %d", i, q[i * K + at]);
        for (size_t l = 0; l < K; l++) {
            double e = fabs((double)a[i * K + l] - (double)scale[i] * q[i * K + l]);
            cr_assert(q[i * K + l] >= -127 && e <= (double)scale[i] * (0.5 + 0x1p-17),
                      "row %zu col %zu: a %.9g, scale %.9g, code %d, error %.3g", i, l,
                      (double)a[i * K + l], (double)scale[i], q[i * K + l], e);
            if (most == 0.0)
                cr_assert_eq(q[i * K + l], 0);
        }
    }
}

Test(gemm, rejects_bad_arguments)
{
    if (!lm_gemm_available())
        cr_skip_test("this build has no oneDNN");
    lm_error err;
    lm_gemm *g = (lm_gemm *)&err; /* set to NULL on every failure */
    float w[4] = {0};
    cr_assert_eq(lm_gemm_create(&g, 0, 2, 2, LM_WEIGHT_F32, w, NULL, 0, &err), LM_ERR_SHAPE);
    cr_assert_str_eq(err.message, "a GEMM must be non-empty, got m 0 n 2 k 2");
    cr_assert_null(g);
    cr_assert_eq(lm_gemm_create(&g, 1, 2, 2, LM_WEIGHT_INT8, w, NULL, 0, &err), LM_ERR_ARG);
    cr_assert_str_eq(err.message, "lm_gemm_create: NULL scale for int8 weights");
    cr_assert_null(g);
    cr_assert_eq(lm_gemm_create(&g, 1, 2, LM_GEMM_INT8_K_MAX + 1, LM_WEIGHT_INT8, w, w, 0, &err),
                 LM_ERR_SHAPE);
    cr_assert_str_eq(err.message, "int8 GEMM: k 131073 past 131072 (the s32 sums of 127 x 127 "
                     "products could overflow)");
    cr_assert_eq(lm_gemm_create(&g, 1, 2, 2, (lm_weight_dtype)7, w, NULL, 0, &err), LM_ERR_ARG);
    cr_assert_str_eq(err.message, "lm_gemm_create: unknown weight dtype 7");
    cr_assert_eq(lm_gemm_create(&g, 1, 2, 2, LM_WEIGHT_F32, NULL, NULL, 0, &err), LM_ERR_ARG);
    cr_assert_eq(lm_gemm_create(&g, 1, 2, 2, LM_WEIGHT_F32, w, NULL, 0, &err), LM_OK, "%s",
                 err.message);
    float a[2] = {1, 2}, c[2];
    cr_assert_eq(lm_gemm_run(g, NULL, c, &err), LM_ERR_ARG);
    cr_assert_str_eq(err.message, "lm_gemm_run: NULL A");
    cr_assert_eq(lm_gemm_run(g, a, c, &err), LM_OK, "%s", err.message);
    cr_assert(c[0] == 0.0f && c[1] == 0.0f);
    lm_gemm_free(g);
    lm_gemm_free(NULL);
}

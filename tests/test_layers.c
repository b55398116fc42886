/* The model runner's layers: the dense projection (f32, bf16, int8 weights; batches across
 * the register block of 8; columns with vector tails) on every path this machine runs
 * against the float64 oracle over the weights as stored (bf16-rounded, int8 codes times
 * their scales), and a whole SwiGLU MLP layer of `longmix model` against its float64
 * reference. */
#include "longmix.h"
#include "../harness/model_unit_impl.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

/* Float32 accumulation of `cols` products: |error| <= cols u sum |w x| (u = 2^-24) with a
 * factor 4 of room for the reassociated vector sums; a kernel that rounds x first adds its
 * roundoff times sum |w x| (lm_dense_x_roundoff), with the same room. */
#define DENSE_ROOM 4.0

static void check_dense(size_t rows, size_t cols, size_t batch, lm_weight_dtype dtype)
{
    lm_dense d;
    lm_error err;
    cr_assert_eq(lm_dense_init(&d, rows, cols, dtype, 42, &err), LM_OK, "%s", err.message);
    float *x = malloc(batch * cols * sizeof *x), *y = malloc(batch * rows * sizeof *y);
    double *xd = malloc(batch * cols * sizeof *xd), *wd = malloc(rows * cols * sizeof *wd);
    double *yd = malloc(batch * rows * sizeof *yd);
    lm_rng rng;
    lm_rng_seed(&rng, 7);
    for (size_t i = 0; i < batch * cols; i++)
        xd[i] = (double)(x[i] = (float)lm_rng_standard_normal(&rng));
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            wd[r * cols + c] = lm_dense_weight(&d, r, c);
    cr_assert_eq(lm_dense_f64_ref(wd, xd, batch, rows, cols, yd, &err), LM_OK, "%s", err.message);
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa))
            continue;
        const lm_ops *ops = lm_ops_for((lm_isa)isa);
        const double xr = lm_dense_x_roundoff(dtype, ops, batch);
        cr_assert_eq(lm_dense_apply(&d, x, batch, y, ops, &err), LM_OK, "%s", err.message);
        for (size_t b = 0; b < batch; b++)
            for (size_t r = 0; r < rows; r++) {
                double mag = 0.0;
                for (size_t c = 0; c < cols; c++)
                    mag += fabs(wd[r * cols + c] * xd[b * cols + c]);
                double bound = DENSE_ROOM * ((double)cols * 0x1p-24 + xr) * mag + 1e-30;
                double e = fabs((double)y[b * rows + r] - yd[b * rows + r]);
                cr_assert(e <= bound, "%s %s rows %zu cols %zu batch %zu: y[%zu, %zu] = %.9g, "
                          "reference %.9g, error %.3g > bound %.3g", lm_isa_name((lm_isa)isa),
                          lm_weight_dtype_name(dtype), rows, cols, batch, b, r,
                          (double)y[b * rows + r], yd[b * rows + r], e, bound);
            }
    }
    lm_dense_free(&d);
    free(x);
    free(y);
    free(xd);
    free(wd);
    free(yd);
}

Test(layers, dense_matches_the_reference_on_every_path_and_dtype)
{
    /* 8229 columns: the bf16 batch-1 kernel's 257 whole blocks of 32 in one chunk and
     * a tail of 5; 20: no whole block of 32; 20000: two chunks of the bf16 batch-1 loop
     * (16384 and 3616) and of the avx512bf16 batched one (10016 and 9984) */
    const size_t shapes[][2] = {{33, 256}, {17, 100}, {5, 37},  {64, 1024},
                                {9, 8229}, {4, 20},   {5, 20000}};
    const size_t batches[] = {1, 2, 5, 8, 11};
    for (int dt = 0; dt < 3; dt++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++)
                check_dense(shapes[s][0], shapes[s][1], batches[b], (lm_weight_dtype)dt);
}

Test(layers, dense_rejects_bad_arguments)
{
    lm_dense d;
    lm_error err;
    cr_assert_eq(lm_dense_init(&d, 0, 4, LM_WEIGHT_BF16, 1, &err), LM_ERR_SHAPE);
    cr_assert_str_eq(err.message, "a projection must be non-empty, got {0, 4}");
    lm_weight_dtype w;
    cr_assert_eq(lm_weight_dtype_parse("fp8", &w, &err), LM_ERR_ARG);
    cr_assert_str_eq(err.message, "weights dtype must be f32, bf16 or int8, got 'fp8'");
}

/* The whole MLP layer (RMSNorm, gate, up, SwiGLU, down, residual) of the runner against
 * lm_mlp_layer_f64_ref over the same (bf16-rounded) weights. Tolerance: the sum of the
 * three projections' float32 bounds, 1e-4 relative to the output's magnitude (plus the
 * rounding of the projections' inputs on the paths that round them to bf16). */
#define MLP_RTOL 1e-4
#define MLP_ATOL 1e-5

Test(layers, mlp_layer_matches_its_float64_reference)
{
    lm_model_spec spec = {.d_model = 96, .layers = 1, .vocab = 16, .max_context = 16,
                          .mixer_period = 1, .mlp_period = 1, .mlp = {.d_ff = 160}};
    spec.mlps[0] = LM_MLP_DENSE;
    const size_t d = 96, ff = 160, B = 3;
    for (int dt = 0; dt < 3; dt++) {
        lm_unit_config cfg = {.spec = &spec, .role = LM_UNIT_MLP, .kind = LM_MLP_DENSE,
                              .weights = (lm_weight_dtype)dt, .batch = B, .ctx = 1, .seed = 5,
                              .ops = lm_ops_active()};
        lm_unit *u;
        lm_error err;
        cr_assert_eq(lm_unit_create(&cfg, &u, &err), LM_OK, "%s", err.message);
        double *wg = malloc(ff * d * sizeof *wg), *wu = malloc(ff * d * sizeof *wu);
        double *wn = malloc(d * ff * sizeof *wn), *xd = malloc(B * d * sizeof *xd);
        double *yd = malloc(B * d * sizeof *yd);
        float *x = malloc(B * d * sizeof *x);
        for (size_t r = 0; r < ff; r++)
            for (size_t c = 0; c < d; c++) {
                wg[r * d + c] = lm_dense_weight(&u->dense[0], r, c);
                wu[r * d + c] = lm_dense_weight(&u->dense[1], r, c);
            }
        for (size_t r = 0; r < d; r++)
            for (size_t c = 0; c < ff; c++)
                wn[r * ff + c] = lm_dense_weight(&u->dense[2], r, c);
        lm_rng rng;
        lm_rng_seed(&rng, 9);
        for (size_t i = 0; i < B * d; i++)
            xd[i] = (double)(x[i] = (float)lm_rng_standard_normal(&rng));
        cr_assert_eq(lm_mlp_layer_f64_ref(xd, wg, wu, wn, B, d, ff, 1e-5, yd, &err), LM_OK);
        double seconds[LM_COMP_COUNT] = {0};
        cr_assert_eq(lm_unit_step(u, x, seconds, &err), LM_OK, "%s", err.message);
        /* projections that round their input to bf16: 8 times that roundoff of the largest
         * output, as model_check.c's rule */
        double scale = 1.0;
        for (size_t i = 0; i < B * d; i++)
            scale = fmax(scale, fabs(yd[i]));
        const double rounding = 8.0 * lm_unit_x_roundoff(&cfg) * scale;
        for (size_t i = 0; i < B * d; i++) {
            double e = fabs((double)x[i] - yd[i]);
            cr_assert(e <= MLP_ATOL + MLP_RTOL * fabs(yd[i]) + rounding,
                      "%s weights: y[%zu] = %.9g, reference %.9g",
                      lm_weight_dtype_name((lm_weight_dtype)dt), i, (double)x[i], yd[i]);
        }
        cr_assert(seconds[LM_COMP_MLP] > 0.0);
        lm_unit_free(u);
        free(wg);
        free(wu);
        free(wn);
        free(xd);
        free(yd);
        free(x);
    }
}

/* A prefill MLP unit (cfg.prompt > 0: the projections through the oneDNN GEMM over batch x
 * prompt rows) against the same reference, every row a token. Its weights are those of the
 * decode unit of the same seed (the prefill unit drops its plain copy once packed). f32
 * weights: the decode unit's bound; bf16: the GEMM rounds the activations to bf16 too
 * (2^-9 relative per product), so 1e-2 of the MLP's output scale. */
Test(layers, prefill_mlp_layer_matches_its_float64_reference)
{
    if (!lm_gemm_available())
        cr_skip_test("this build has no oneDNN");
    lm_model_spec spec = {.d_model = 96, .layers = 1, .vocab = 16, .max_context = 16,
                          .mixer_period = 1, .mlp_period = 1, .mlp = {.d_ff = 160}};
    spec.mlps[0] = LM_MLP_DENSE;
    const size_t d = 96, ff = 160, B = 2, n = 7, R = B * n;
    for (int dt = 0; dt < 2; dt++) {
        lm_unit_config cfg = {.spec = &spec, .role = LM_UNIT_MLP, .kind = LM_MLP_DENSE,
                              .weights = (lm_weight_dtype)dt, .batch = B, .ctx = 1, .seed = 5,
                              .ops = lm_ops_active()};
        lm_unit *u, *p;
        lm_error err;
        cr_assert_eq(lm_unit_create(&cfg, &u, &err), LM_OK, "%s", err.message);
        cfg.prompt = (long long)n;
        cr_assert_eq(lm_unit_create(&cfg, &p, &err), LM_OK, "%s", err.message);
        cr_assert_eq(lm_unit_rows(&cfg), R);
        double *wg = malloc(ff * d * sizeof *wg), *wu = malloc(ff * d * sizeof *wu);
        double *wn = malloc(d * ff * sizeof *wn), *xd = malloc(R * d * sizeof *xd);
        double *yd = malloc(R * d * sizeof *yd);
        float *x = malloc(R * d * sizeof *x);
        for (size_t r = 0; r < ff; r++)
            for (size_t c = 0; c < d; c++) {
                wg[r * d + c] = lm_dense_weight(&u->dense[0], r, c);
                wu[r * d + c] = lm_dense_weight(&u->dense[1], r, c);
            }
        for (size_t r = 0; r < d; r++)
            for (size_t c = 0; c < ff; c++)
                wn[r * ff + c] = lm_dense_weight(&u->dense[2], r, c);
        lm_rng rng;
        lm_rng_seed(&rng, 9);
        for (size_t i = 0; i < R * d; i++)
            xd[i] = (double)(x[i] = (float)lm_rng_standard_normal(&rng));
        cr_assert_eq(lm_mlp_layer_f64_ref(xd, wg, wu, wn, R, d, ff, 1e-5, yd, &err), LM_OK);
        double seconds[LM_COMP_COUNT] = {0}, gs, gf;
        cr_assert_eq(lm_unit_step(p, x, seconds, &err), LM_OK, "%s", err.message);
        for (size_t i = 0; i < R * d; i++) {
            double mlp = fabs(yd[i] - xd[i]) + 1.0;
            double e = fabs((double)x[i] - yd[i]);
            double bound = dt == 0 ? MLP_ATOL + MLP_RTOL * fabs(yd[i]) : 1e-2 * mlp;
            cr_assert(e <= bound, "%s weights: y[%zu] = %.9g, reference %.9g",
                      lm_weight_dtype_name((lm_weight_dtype)dt), i, (double)x[i], yd[i]);
        }
        cr_assert(seconds[LM_COMP_MLP] > 0.0);
        lm_unit_gemm_take(p, &gs, &gf); /* gate, up, down: 2 R ff d flops each */
        cr_assert(gs > 0.0 && gf == 3.0 * 2.0 * (double)(R * ff * d), "%g %g", gs, gf);
        lm_unit_gemm_take(p, &gs, &gf);
        cr_assert(gs == 0.0 && gf == 0.0);
        lm_unit_free(u);
        lm_unit_free(p);
        free(wg);
        free(wu);
        free(wn);
        free(xd);
        free(yd);
        free(x);
    }
}

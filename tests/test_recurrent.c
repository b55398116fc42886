/* Recurrent-family kernels (suite "recurrent"): every fast path this machine runs against
 * the float64 oracle, chunked forms against recurrent ones, and the bad-input contract. */

#include "longmix.h"
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A float64 array and its float32 copy holding the same (float32-rounded) values, so the
 * oracle sees exactly the fast path's inputs. */
typedef struct pair {
    double *d;
    float *f;
    size_t n;
} pair;

static pair pair_new(size_t n)
{
    pair p = {calloc(n ? n : 1, sizeof(double)), calloc(n ? n : 1, sizeof(float)), n};
    cr_assert(p.d != NULL && p.f != NULL);
    return p;
}

static void pair_sync(pair *p) /* round d to f32 and copy into f */
{
    for (size_t i = 0; i < p->n; i++) {
        p->f[i] = (float)p->d[i];
        p->d[i] = (double)p->f[i];
    }
}

static pair pair_normal(lm_rng *rng, size_t n, double scale)
{
    pair p = pair_new(n);
    lm_rng_fill_standard_normal(rng, p.d, n);
    for (size_t i = 0; i < n; i++)
        p.d[i] *= scale;
    pair_sync(&p);
    return p;
}

static void pair_free(pair *p)
{
    free(p->d);
    free(p->f);
}

/* max over i of |got - want| / (atol + rtol |want|): <= 1 passes (numpy.isclose rule). */
/* max |got - want| over n entries of a float result against its float64 oracle pair */
static double max_err(const pair *p)
{
    double e = 0.0;
    for (size_t i = 0; i < p->n; i++)
        e = fmax(e, fabs((double)p->f[i] - p->d[i]));
    return e;
}

static double worst_ratio_f32(const float *got, const double *want, size_t n, double rtol,
                              double atol)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double r = fabs((double)got[i] - want[i]) / (atol + rtol * fabs(want[i]));
        if (!(r <= worst)) /* NaN propagates as a failure */
            worst = isnan(r) ? (double)INFINITY : r;
    }
    return worst;
}

/* ---- Mamba-1 selective scan --------------------------------------------------------- */

typedef struct mamba1_case {
    size_t B, L, D, N;
    bool exact, gate, skip, bias, h0, zero_modes;
} mamba1_case;

/* Tolerance of the float32 paths against the float64 oracle (docs/kernels.md). */
static const double MAMBA1_RTOL = 2e-4, MAMBA1_ATOL = 2e-4;

static void run_mamba1_case(const mamba1_case *c, uint64_t seed)
{
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    const size_t tok = c->B * c->L;
    pair x = pair_normal(&rng, tok * c->D, 1.0);
    pair dr = pair_normal(&rng, tok * c->D, 1.0);
    pair bias = pair_normal(&rng, c->D, 0.5);
    pair a = pair_new(c->D * c->N);
    lm_rng_fill_uniform(&rng, -8.0, -0.05, a.d, a.n);
    if (c->zero_modes)
        for (size_t d = 0; d < c->D; d++)
            a.d[d * c->N + (d % c->N)] = 0.0; /* one a = 0 mode per channel */
    pair_sync(&a);
    pair b = pair_normal(&rng, tok * c->N, 1.0);
    pair cc = pair_normal(&rng, tok * c->N, 1.0);
    pair skip = pair_normal(&rng, c->D, 1.0);
    pair z = pair_normal(&rng, tok * c->D, 1.5);
    pair h0 = pair_normal(&rng, c->B * c->D * c->N, 1.0);
    pair y = pair_new(tok * c->D), hf = pair_new(c->B * c->D * c->N);

    lm_ssm_mamba1_f64 pd = {c->B, c->L, c->D, c->N, x.d, dr.d, c->bias ? bias.d : NULL, a.d,
                            b.d, cc.d, c->skip ? skip.d : NULL, c->gate ? z.d : NULL,
                            c->h0 ? h0.d : NULL, y.d, hf.d, c->exact};
    lm_error err;
    cr_assert_eq(lm_ssm_mamba1_scan_f64_ref(&pd, &err), LM_OK, "%s", err.message);

    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa))
            continue;
        memset(y.f, 0, tok * c->D * sizeof(float));
        memset(hf.f, 0, hf.n * sizeof(float));
        lm_ssm_mamba1_f32 pf = {c->B, c->L, c->D, c->N, x.f, dr.f, c->bias ? bias.f : NULL,
                                a.f, b.f, cc.f, c->skip ? skip.f : NULL,
                                c->gate ? z.f : NULL, c->h0 ? h0.f : NULL, y.f, hf.f,
                                c->exact};
        cr_assert_eq(lm_ssm_mamba1_scan_f32(&pf, lm_ops_for((lm_isa)isa), &err),
                     LM_OK, "%s", err.message);
        double ry = worst_ratio_f32(y.f, y.d, y.n, MAMBA1_RTOL, MAMBA1_ATOL);
        double rh = worst_ratio_f32(hf.f, hf.d, hf.n, MAMBA1_RTOL, MAMBA1_ATOL);
        cr_log_info("mamba1 isa=%s B=%zu L=%zu D=%zu N=%zu exact=%d gate=%d skip=%d "
                    "zero_modes=%d: worst y %.3g, state %.3g of tolerance",
                    lm_isa_name((lm_isa)isa), c->B, c->L, c->D, c->N, c->exact, c->gate,
                    c->skip, c->zero_modes, ry, rh);
        cr_expect(ry <= 1.0 && rh <= 1.0,
                  "isa %s B=%zu L=%zu D=%zu N=%zu exact=%d: y %.3g, state %.3g x tolerance",
                  lm_isa_name((lm_isa)isa), c->B, c->L, c->D, c->N, c->exact, ry, rh);
    }
    pair *all[] = {&x, &dr, &bias, &a, &b, &cc, &skip, &z, &h0, &y, &hf};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pair_free(all[i]);
}

Test(recurrent, mamba1_every_path_matches_oracle)
{
    static const mamba1_case cases[] = {
        /* B  L    D   N  exact gate  skip  bias  h0    zero */
        {1, 1, 16, 16, false, false, false, false, false, false},
        {2, 37, 37, 16, false, true, true, true, true, false},
        {2, 37, 37, 16, true, true, true, true, true, true},
        {1, 53, 21, 5, true, false, true, true, false, true},
        {1, 53, 21, 5, false, false, false, true, true, true},
        {3, 9, 40, 1, true, true, false, false, true, false},
        {1, 300, 48, 16, true, true, true, true, true, true},
        {1, 300, 48, 16, false, true, true, true, true, false},
        {1, 17, 19, 33, true, false, true, false, true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_mamba1_case(&cases[i], 1000 + i);
}

Test(recurrent, mamba1_zoh_zero_mode_is_delta_b)
{
    /* a = 0: Abar = 1 and Bbar = delta * b exactly; with one token, zero state and C = 1:
     * y = delta * b * x with delta = softplus(0) = log 2. */
    double x = 2.0, dr = 0.0, a = 0.0, b = 3.0, c = 1.0, y = 0.0;
    lm_ssm_mamba1_f64 p = {1, 1, 1, 1, &x, &dr, NULL, &a, &b, &c, NULL, NULL, NULL, &y, NULL,
                           true};
    cr_assert_eq(lm_ssm_mamba1_scan_f64_ref(&p, NULL), LM_OK);
    cr_assert_float_eq(y, log(2.0) * 3.0 * 2.0, 1e-15);
}

Test(recurrent, mamba1_decode_equals_scan)
{
    enum { B = 2, L = 7, D = 29, N = 16 };
    lm_rng rng;
    lm_rng_seed(&rng, 77);
    pair x = pair_normal(&rng, B * L * D, 1.0), dr = pair_normal(&rng, B * L * D, 1.0);
    pair a = pair_new(D * N);
    lm_rng_fill_uniform(&rng, -4.0, 0.0, a.d, a.n);
    pair_sync(&a);
    pair b = pair_normal(&rng, B * L * N, 1.0), c = pair_normal(&rng, B * L * N, 1.0);
    pair y = pair_new(B * L * D), hf = pair_new(B * D * N);
    lm_error err;
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa))
            continue;
        const lm_ops *k = lm_ops_for((lm_isa)isa);
        lm_ssm_mamba1_f32 full = {B, L, D, N, x.f, dr.f, NULL, a.f, b.f, c.f, NULL, NULL,
                                  NULL, y.f, hf.f, true};
        cr_assert_eq(lm_ssm_mamba1_scan_f32(&full, k, &err), LM_OK, "%s", err.message);
        /* Token by token: gather token t of every batch row, one decode step. */
        float *state = calloc(B * D * N, sizeof(float));
        float xt[B * D], drt[B * D], bt[B * N], ct[B * N], yt[B * D];
        for (size_t t = 0; t < L; t++) {
            for (size_t bi = 0; bi < B; bi++) {
                memcpy(xt + bi * D, x.f + (bi * L + t) * D, D * sizeof(float));
                memcpy(drt + bi * D, dr.f + (bi * L + t) * D, D * sizeof(float));
                memcpy(bt + bi * N, b.f + (bi * L + t) * N, N * sizeof(float));
                memcpy(ct + bi * N, c.f + (bi * L + t) * N, N * sizeof(float));
            }
            lm_ssm_mamba1_f32 step = {B, 1, D, N, xt, drt, NULL, a.f, bt, ct, NULL, NULL,
                                      state, yt, state, true};
            cr_assert_eq(lm_ssm_mamba1_decode_f32(&step, k, &err), LM_OK, "%s", err.message);
            for (size_t bi = 0; bi < B; bi++)
                for (size_t d = 0; d < D; d++)
                    cr_assert_float_eq(yt[bi * D + d], y.f[(bi * L + t) * D + d], 1e-5,
                                       "isa %s t %zu", lm_isa_name((lm_isa)isa), t);
        }
        for (size_t i = 0; i < B * D * N; i++)
            cr_assert_float_eq(state[i], hf.f[i], 1e-5);
        free(state);
    }
    pair *all[] = {&x, &dr, &a, &b, &c, &y, &hf};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pair_free(all[i]);
}

Test(recurrent, mamba1_rejects_bad_input)
{
    double x[2] = {1.0, 1.0}, dr[2] = {0.0, 0.0}, a[2] = {-1.0, 0.5}, b[2] = {1.0, 1.0};
    double c[2] = {1.0, 1.0}, y[2];
    lm_ssm_mamba1_f64 p = {1, 1, 1, 2, x, dr, NULL, a, b, c, NULL, NULL, NULL, y, NULL, true};
    lm_error err;
    cr_assert_eq(lm_ssm_mamba1_scan_f64_ref(&p, &err), LM_ERR_DOMAIN);
    cr_assert(strstr(err.message, "a must be non-positive") != NULL, "%s", err.message);
    a[1] = -0.5;
    dr[0] = (double)NAN;
    cr_assert_eq(lm_ssm_mamba1_scan_f64_ref(&p, &err), LM_ERR_NONFINITE);
    cr_assert(strstr(err.message, "delta_raw") != NULL, "%s", err.message);
    p.length = 0;
    cr_assert_eq(lm_ssm_mamba1_scan_f64_ref(&p, &err), LM_ERR_SHAPE);

    float xf[2] = {1, 1}, drf[2] = {0, 0}, af[2] = {-1.0f, 0.25f}, bf[2] = {1, 1};
    float cf[2] = {1, 1}, yf[2];
    lm_ssm_mamba1_f32 q = {1, 1, 1, 2, xf, drf, NULL, af, bf, cf, NULL, NULL, NULL, yf, NULL,
                           false};
    cr_assert_eq(lm_ssm_mamba1_scan_f32(&q, lm_ops_active(), &err), LM_ERR_DOMAIN);
    cr_assert(strstr(err.message, "a[0,1]") != NULL, "%s", err.message);
    af[1] = -0.25f;
    q.state = LM_SSM_MAX_STATE + 1;
    cr_assert_eq(lm_ssm_mamba1_scan_f32(&q, lm_ops_active(), &err), LM_ERR_SHAPE);
    q.state = 2;
    q.y = NULL;
    cr_assert_eq(lm_ssm_mamba1_scan_f32(&q, lm_ops_active(), &err), LM_ERR_SHAPE);
    q.y = yf;
    cr_assert_eq(lm_ssm_mamba1_decode_f32(&q, lm_ops_active(), &err), LM_ERR_ARG); /* no shared state */
    cr_assert_eq(lm_ssm_mamba1_scan_f32(&q, lm_ops_active(), &err), LM_OK);
}

Test(recurrent, mamba1_softplus_never_negative)
{
    /* Very negative raw delta: softplus underflows to 0, the step holds the state
     * (Abar = 1, Bbar = 0) on every path; nothing negative, nothing non-finite. */
    enum { D = 16, N = 4 };
    float x[D], dr[D], a[D * N], b[N] = {1, 2, 3, 4}, c[N] = {1, 1, 1, 1}, y[D];
    float h[D * N];
    for (int i = 0; i < D; i++) {
        x[i] = 1.0f;
        dr[i] = -200.0f - (float)i;
    }
    for (int i = 0; i < D * N; i++) {
        a[i] = -(float)(i % N);
        h[i] = 0.5f;
    }
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa))
            continue;
        for (int exact = 0; exact < 2; exact++) {
            lm_ssm_mamba1_f32 p = {1, 1, D, N, x, dr, NULL, a, b, c, NULL, NULL, h, y, h,
                                   exact};
            cr_assert_eq(lm_ssm_mamba1_decode_f32(&p, lm_ops_for((lm_isa)isa), NULL),
                         LM_OK);
            for (int i = 0; i < D * N; i++)
                cr_assert_eq(h[i], 0.5f, "isa %s", lm_isa_name((lm_isa)isa));
            for (int i = 0; i < D; i++)
                cr_assert_eq(y[i], 2.0f);
        }
    }
}

/* The fast exponentials of every vector path (kernels/simd/fast_exp.h), probed through the
 * decode step: with raw delta 100 (softplus exactly 100 in float), h0 = 1 and b = 0 the new
 * state is Abar = exp(fl(100 a)) (Euler) or 1 + expm1(fl(100 a_s)) (exact ZOH); with h0 = 0,
 * x = b = 1 the ZOH state is expm1(fl(100 a_s)) / a_s (the V_RCP path). a runs over
 * [-0.873, 0], so the exponent covers [-87.3, 0], the range the kernel sees. Bounds
 * (docs/kernels.md): exp 2 ulp; 1 + expm1 2^-22 absolute (what the state carries); the
 * ZOH input factor 6 ulp (expm1 2, 1 / a 2, two products). */
Test(recurrent, mamba1_fast_exp_within_bound_on_every_path)
{
    enum { D = 64, N = 16, COUNT = D * N };
    static float a[COUNT], h[COUNT], b0[N], b1[N], c[N], x0[D], x1[D], dr[D], y[D];
    for (int i = 0; i < COUNT; i++) /* 0, then spread down to -0.873 */
        a[i] = i == 0 ? 0.0f : -0.873f * (float)i / (float)(COUNT - 1);
    for (int n = 0; n < N; n++)
        b0[n] = 0.0f, b1[n] = 1.0f, c[n] = 1.0f;
    for (int d = 0; d < D; d++)
        x0[d] = 0.0f, x1[d] = 1.0f, dr[d] = 100.0f;
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa))
            continue;
        const lm_ops *k = lm_ops_for((lm_isa)isa);
        for (int form = 0; form < 3; form++) { /* Euler Abar, ZOH Abar, ZOH input factor */
            const bool exact = form > 0;
            for (int i = 0; i < COUNT; i++)
                h[i] = form < 2 ? 1.0f : 0.0f;
            lm_ssm_mamba1_f32 p = {1, 1, D, N, form < 2 ? x0 : x1, dr, NULL, a,
                                   form < 2 ? b0 : b1, c, NULL, NULL, h, y, h, exact};
            cr_assert_eq(lm_ssm_mamba1_decode_f32(&p, k, NULL), LM_OK);
            for (int i = 0; i < COUNT; i++) {
                const float as = fminf(a[i], -1e-30f), arg = 100.0f * (exact ? as : a[i]);
                double want, bound;
                if (form == 0)
                    want = exp((double)arg), bound = 2.0 * ldexp(1.0, ilogb(want) - 23);
                else if (form == 1)
                    want = exp((double)arg), bound = ldexp(1.0, -22);
                else
                    want = expm1((double)arg) / (double)as,
                    bound = 6.0 * ldexp(1.0, ilogb(want) - 23);
                cr_assert_leq(fabs((double)h[i] - want), bound,
                              "isa %s form %d a = %a: %a against %a", lm_isa_name((lm_isa)isa),
                              form, (double)a[i], (double)h[i], want);
            }
        }
    }
}

/* ---- causal depthwise conv with tail state -------------------------------------------- */

Test(recurrent, conv_every_path_matches_oracle_and_splits)
{
    static const size_t shapes[][4] = {/* B, L, D, K */
                                       {1, 1, 16, 4}, {2, 2, 37, 4}, {2, 19, 37, 4},
                                       {1, 5, 9, 1}, {3, 11, 40, 3}, {1, 64, 48, 8}};
    lm_error err;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t B = shapes[s][0], L = shapes[s][1], D = shapes[s][2], K = shapes[s][3];
        lm_rng rng;
        lm_rng_seed(&rng, 500 + s);
        pair x = pair_normal(&rng, B * L * D, 1.0), w = pair_normal(&rng, D * K, 0.5);
        pair bias = pair_normal(&rng, D, 0.5), tail = pair_normal(&rng, B * (K - 1) * D, 1.0);
        pair y = pair_new(B * L * D), tail_out = pair_new(B * (K - 1) * D);
        for (int silu = 0; silu < 2; silu++) {
            lm_conv_causal_f64 pd = {B, L, D, K, x.d, w.d, bias.d, tail.d, y.d, tail_out.d,
                                     silu};
            cr_assert_eq(lm_conv_causal_f64_ref(&pd, &err), LM_OK, "%s", err.message);
            for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
                if (!lm_isa_available((lm_isa)isa))
                    continue;
                const lm_ops *k = lm_ops_for((lm_isa)isa);
                lm_conv_causal_f32 pf = {B, L, D, K, x.f, w.f, bias.f, tail.f, y.f,
                                         tail_out.f, silu};
                cr_assert_eq(lm_conv_causal(&pf, k, &err), LM_OK, "%s", err.message);
                /* K products of O(1) terms: a few float32 ulps */
                cr_expect(worst_ratio_f32(y.f, y.d, y.n, 1e-5, 1e-5) <= 1.0,
                          "isa %s B=%zu L=%zu D=%zu K=%zu silu=%d", lm_isa_name((lm_isa)isa),
                          B, L, D, K, silu);
                for (size_t i = 0; i < tail_out.n; i++) /* the tail is a copy: exact */
                    cr_assert_eq((double)tail_out.f[i], tail_out.d[i]);
                /* The same sequence one token at a time, state in place. */
                float *state = malloc((tail.n ? tail.n : 1) * sizeof(float));
                memcpy(state, tail.f, tail.n * sizeof(float));
                float *xt = malloc(B * D * sizeof(float)), *yt = malloc(B * D * sizeof(float));
                for (size_t t = 0; t < L; t++) {
                    for (size_t bi = 0; bi < B; bi++)
                        memcpy(xt + bi * D, x.f + (bi * L + t) * D, D * sizeof(float));
                    lm_conv_causal_f32 step = {B, 1, D, K, xt, w.f, bias.f, state, yt, state,
                                               silu};
                    cr_assert_eq(lm_conv_causal(&step, k, &err), LM_OK);
                    for (size_t bi = 0; bi < B; bi++)
                        for (size_t d = 0; d < D; d++)
                            cr_assert_eq(yt[bi * D + d], y.f[(bi * L + t) * D + d],
                                         "decode = prefill, isa %s", lm_isa_name((lm_isa)isa));
                }
                for (size_t i = 0; i < tail.n; i++)
                    cr_assert_eq(state[i], tail_out.f[i]);
                free(state);
                free(xt);
                free(yt);
            }
        }
        pair *all[] = {&x, &w, &bias, &tail, &y, &tail_out};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            pair_free(all[i]);
    }
}

Test(recurrent, conv_rejects_bad_input)
{
    float x[4] = {0}, w[9 * 4] = {0}, y[4];
    lm_conv_causal_f32 p = {1, 4, 1, 9, x, w, NULL, NULL, y, NULL, false};
    lm_error err;
    cr_assert_eq(lm_conv_causal(&p, lm_ops_active(), &err), LM_ERR_SHAPE);
    cr_assert(strstr(err.message, "width") != NULL, "%s", err.message);
    p.width = 4;
    p.length = 0;
    cr_assert_eq(lm_conv_causal(&p, lm_ops_active(), &err), LM_ERR_SHAPE);
    double xd[2] = {1.0, (double)INFINITY}, wd[4] = {0}, yd[2];
    lm_conv_causal_f64 q = {1, 2, 1, 4, xd, wd, NULL, NULL, yd, NULL, false};
    cr_assert_eq(lm_conv_causal_f64_ref(&q, &err), LM_ERR_NONFINITE);
    cr_assert(strstr(err.message, "x must") != NULL, "%s", err.message);
}

/* ---- affine scan h_t = a_t h_{t-1} + b_t ------------------------------------------------ */

Test(recurrent, scan_affine_every_path_and_split_matches_oracle)
{
    static const size_t shapes[][2] = {{1, 1}, {53, 6}, {64, 16}, {257, 17}, {1000, 37},
                                       {33, 128}};
    static const size_t splits[][2] = {/* chunk, parts */
                                       {1, 1}, {1, 2}, {7, 2}, {16, 3}, {100, 2}, {5000, 2},
                                       {3, 4}, {1000, 1}};
    lm_error err;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const size_t T = shapes[s][0], W = shapes[s][1];
        lm_rng rng;
        lm_rng_seed(&rng, 900 + s);
        pair a = pair_new(T * W);
        lm_rng_fill_uniform(&rng, 0.7, 0.999, a.d, a.n);
        pair_sync(&a);
        pair b = pair_normal(&rng, T * W, 1.0), h0 = pair_normal(&rng, W, 1.0);
        pair h = pair_new(T * W), abs_h = pair_new(T * W);
        cr_assert_eq(lm_scan_affine_sequential_f64_ref(a.d, b.d, T, W, h0.d, h.d, &err), LM_OK,
                     "%s", err.message);
        /* scale: the same scan on |b|, |h0| bounds every term behind an output */
        double *ab = malloc(T * W * sizeof(double)), *ah0 = malloc(W * sizeof(double));
        for (size_t i = 0; i < T * W; i++)
            ab[i] = fabs(b.d[i]);
        for (size_t i = 0; i < W; i++)
            ah0[i] = fabs(h0.d[i]);
        cr_assert_eq(lm_scan_affine_sequential_f64_ref(a.d, ab, T, W, ah0, abs_h.d, &err),
                     LM_OK);
        float *final_state = malloc(W * sizeof(float));
        for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
            if (!lm_isa_available((lm_isa)isa))
                continue;
            const lm_ops *ops = lm_ops_for((lm_isa)isa);
            for (size_t k = 0; k < sizeof splits / sizeof splits[0]; k++) {
                /* every chunk is a hand-off between threads: keep the suite fast on a busy box */
                if (T / (splits[k][0] * splits[k][1]) > 12)
                    continue;
                memset(h.f, 0, T * W * sizeof(float));
                cr_assert_eq(lm_scan_affine_f32(a.f, b.f, T, W, h0.f, h.f, final_state,
                                                splits[k][0], splits[k][1], ops, &err),
                             LM_OK, "%s", err.message);
                double worst = 0.0;
                for (size_t i = 0; i < T * W; i++) { /* rtol 4 sqrt(T) u + 4 u of the scale */
                    double tol = (4.0 * sqrt((double)T) + 4.0) * 0x1p-24 * abs_h.d[i];
                    double r = fabs((double)h.f[i] - h.d[i]) / tol;
                    worst = r > worst ? r : worst;
                }
                cr_expect(worst <= 1.0, "isa %s T=%zu W=%zu chunk=%zu parts=%zu: %.3g x tol",
                          lm_isa_name((lm_isa)isa), T, W, splits[k][0], splits[k][1], worst);
                for (size_t c = 0; c < W; c++)
                    cr_assert_eq(final_state[c], h.f[(T - 1) * W + c], "final = last row");
            }
        }
        free(ab);
        free(ah0);
        free(final_state);
        pair *all[] = {&a, &b, &h0, &h, &abs_h};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
            pair_free(all[i]);
    }
}

Test(recurrent, scan_affine_three_phase_matches_parallel_references)
{
    /* The fast three-phase scan against primer's Hillis-Steele and Blelloch references
     * (kernels/scan/ref_parallel.c) at a length that is not a power of two. */
    enum { T = 45, W = 5 };
    lm_rng rng;
    lm_rng_seed(&rng, 4242);
    pair a = pair_new(T * W);
    lm_rng_fill_uniform(&rng, 0.7, 0.99, a.d, a.n);
    pair_sync(&a);
    pair b = pair_normal(&rng, T * W, 1.0), h0 = pair_normal(&rng, W, 1.0);
    pair h = pair_new(T * W);
    lm_error err;
    cr_assert_eq(lm_scan_affine_f32(a.f, b.f, T, W, h0.f, h.f, NULL, 4, 3, lm_ops_active(), &err),
                 LM_OK, "%s", err.message);
    for (int method = 0; method < 2; method++) {
        cr_assert_eq(lm_scan_parallel_columns_f64_ref((lm_scan_method)method, a.d, b.d, T, W,
                                                      h0.d, h.d, &err),
                     LM_OK, "%s", err.message);
        for (size_t i = 0; i < T * W; i++)
            cr_assert_float_eq((double)h.f[i], h.d[i], 1e-5 * (1.0 + fabs(h.d[i])),
                               "method %d element %zu", method, i);
    }
    pair *all[] = {&a, &b, &h0, &h};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pair_free(all[i]);
}

Test(recurrent, scan_affine_rejects_bad_input)
{
    float a[4] = {1, 1, 1, 1}, b[4] = {1, 2, 3, 4}, h[4];
    lm_error err;
    cr_assert_eq(lm_scan_affine_f32(a, b, 4, 1, NULL, h, NULL, 0, 1, lm_ops_active(), &err),
                 LM_ERR_ARG);
    cr_assert(strstr(err.message, "chunk must be positive") != NULL, "%s", err.message);
    cr_assert_eq(lm_scan_affine_f32(a, b, 0, 1, NULL, h, NULL, 4, 1, lm_ops_active(), &err),
                 LM_ERR_SHAPE);
    cr_assert_eq(lm_scan_affine_f32(a, b, 4, 1, NULL, NULL, NULL, 4, 1, lm_ops_active(), &err),
                 LM_ERR_SHAPE);
    cr_assert_eq(lm_scan_affine_f32(a, b, 4, 1, NULL, h, NULL, 1, 2, lm_ops_active(), &err), LM_OK);
    for (int i = 0; i < 4; i++) /* a = 1: a running sum */
        cr_assert_eq(h[i], (float)((i + 1) * (i + 2) / 2));
}

/* ---- linear attention: additive, normalized, gated ---------------------------------------- */

typedef struct linear_case {
    size_t H, L, dk, dv;
    lm_linear_feature feature;
    bool normalize;
    lm_linear_gate gate;
    bool s0;
} linear_case;

/* Builds inputs, the float64 oracle's outputs, and the absolute-value scale (the same
 * computation on |q|, |k|, |v|, |s0| for the additive form; |y| + 1 otherwise). */
static void check_linear_case(const linear_case *c, uint64_t seed)
{
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    const size_t H = c->H, L = c->L, dk = c->dk, dv = c->dv;
    pair q = pair_normal(&rng, H * L * dk, 1.0 / sqrt((double)dk));
    pair k = pair_normal(&rng, H * L * dk, 1.0 / sqrt((double)dk));
    pair v = pair_normal(&rng, H * L * dv, 1.0);
    const size_t gn = c->gate == LM_LINEAR_GATE_CHANNEL ? H * L * dk : H * L;
    pair g = pair_new(gn);
    lm_rng_fill_uniform(&rng, 0.8, 1.0, g.d, gn);
    pair_sync(&g);
    pair s0 = pair_normal(&rng, H * dk * dv, 0.5);
    pair z0 = pair_new(H * dk);
    lm_rng_fill_uniform(&rng, 0.5, 2.0, z0.d, z0.n);
    pair_sync(&z0);
    pair y = pair_new(H * L * dv), sf = pair_new(H * dk * dv), zf = pair_new(H * dk);
    lm_linear_f64 pd = {H, L, dk, dv, c->feature, c->normalize, c->gate, q.d, k.d, v.d,
                        c->gate ? g.d : NULL, c->s0 ? s0.d : NULL, c->s0 ? z0.d : NULL,
                        y.d, sf.d, zf.d};
    lm_error err;
    cr_assert_eq(lm_linear_gated_f64_ref(&pd, &err), LM_OK, "%s", err.message);
    double ymax = 0.0, smax = 0.0;
    for (size_t i = 0; i < y.n; i++)
        ymax = fmax(ymax, fabs(y.d[i]));
    for (size_t i = 0; i < sf.n; i++)
        smax = fmax(smax, fabs(sf.d[i]));
    /* errors of sums of O(L dk) terms: a few sqrt(L dk) u of the largest magnitude */
    const double tol_y = 64.0 * sqrt((double)(L * dk)) * 0x1p-24 * (ymax + 1.0);
    const double tol_s = 64.0 * sqrt((double)L) * 0x1p-24 * (smax + 1.0);
    static const size_t chunks[] = {0, 1, 7, 16, 1000};
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa))
            continue;
        const lm_ops *ops = lm_ops_for((lm_isa)isa);
        for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
            const size_t chunk = chunks[ci];
            memset(y.f, 0, y.n * sizeof(float));
            lm_linear_f32 pf = {H, L, dk, dv, c->feature, c->normalize, c->gate, q.f, k.f, v.f,
                                c->gate ? g.f : NULL, c->s0 ? s0.f : NULL,
                                c->s0 ? z0.f : NULL, y.f, sf.f, zf.f, NULL, LM_KV_F32,
                                NULL, NULL, NULL};
            cr_assert_eq(lm_linear_attention_f32(&pf, chunk != 0, chunk, ops, &err),
                         LM_OK, "%s", err.message);
            const double ey = max_err(&y), es = max_err(&sf);
            cr_expect(ey <= tol_y && es <= tol_s,
                      "isa %s H=%zu L=%zu dk=%zu dv=%zu feature=%d norm=%d gate=%d chunk=%zu: "
                      "|dy| %.3g (tol %.3g), |dS| %.3g (tol %.3g)", lm_isa_name((lm_isa)isa),
                      H, L, dk, dv, c->feature, c->normalize, c->gate, chunk, ey, tol_y, es,
                      tol_s);
        }
    }
    pair *all[] = {&q, &k, &v, &g, &s0, &z0, &y, &sf, &zf};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pair_free(all[i]);
}

Test(recurrent, linear_every_form_path_and_chunk_matches_oracle)
{
    static const linear_case cases[] = {
        {1, 50, 8, 6, LM_LINEAR_IDENTITY, false, LM_LINEAR_GATE_NONE, false},
        {2, 37, 16, 33, LM_LINEAR_IDENTITY, false, LM_LINEAR_GATE_NONE, true},
        {2, 37, 16, 33, LM_LINEAR_ELU1, true, LM_LINEAR_GATE_NONE, true},
        {3, 29, 9, 64, LM_LINEAR_ELU1, false, LM_LINEAR_GATE_SCALAR, true},
        {2, 41, 17, 20, LM_LINEAR_IDENTITY, false, LM_LINEAR_GATE_SCALAR, false},
        {2, 41, 17, 20, LM_LINEAR_ELU1, true, LM_LINEAR_GATE_CHANNEL, true},
        {1, 64, 32, 32, LM_LINEAR_IDENTITY, false, LM_LINEAR_GATE_CHANNEL, true},
        {1, 1, 4, 3, LM_LINEAR_ELU1, true, LM_LINEAR_GATE_SCALAR, false},
        /* d_value 150 and 112: the recurrent form's register panels of 8, 4, 2 and 1
         * vectors and its single-float columns on every vector width */
        {1, 23, 13, 150, LM_LINEAR_ELU1, true, LM_LINEAR_GATE_CHANNEL, true},
        {1, 19, 7, 112, LM_LINEAR_IDENTITY, false, LM_LINEAR_GATE_SCALAR, false},
        {1, 17, 6, 112, LM_LINEAR_IDENTITY, false, LM_LINEAR_GATE_NONE, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_linear_case(&cases[i], 4000 + i);
}

Test(recurrent, linear_oracle_agrees_with_m8_and_lesson_references)
{
    enum { L = 23, dk = 5, dv = 4 };
    lm_rng rng;
    lm_rng_seed(&rng, 99);
    double q[L * dk], k[L * dk], v[L * dv], y[L * dv], y_ref[L * dv], S[dk * dv], z[dk];
    lm_rng_fill_standard_normal(&rng, q, L * dk);
    lm_rng_fill_standard_normal(&rng, k, L * dk);
    lm_rng_fill_standard_normal(&rng, v, L * dv);
    lm_linear_f64 p = {1, L, dk, dv, LM_LINEAR_IDENTITY, false, LM_LINEAR_GATE_NONE, q, k, v,
                       NULL, NULL, NULL, y, NULL, NULL};
    cr_assert_eq(lm_linear_gated_f64_ref(&p, NULL), LM_OK);
    cr_assert_eq(lm_linear_additive_sequential_f64_ref(q, dk, k, dk, v, dv, L, y_ref, NULL),
                 LM_OK);
    for (size_t i = 0; i < L * dv; i++)
        cr_assert_float_eq(y[i], y_ref[i], 1e-12 * (1.0 + fabs(y_ref[i])));
    p.feature = LM_LINEAR_ELU1;
    p.normalize = true;
    cr_assert_eq(lm_linear_gated_f64_ref(&p, NULL), LM_OK);
    cr_assert_eq(lm_linear_feature_recurrent_f64_ref(q, k, v, L, dk, dv, y_ref, S, z, NULL),
                 LM_OK);
    for (size_t i = 0; i < L * dv; i++)
        cr_assert_float_eq(y[i], y_ref[i], 1e-12 * (1.0 + fabs(y_ref[i])));
}

Test(recurrent, linear_rejects_bad_input)
{
    float q[4] = {1, 1, 1, 1}, k[4] = {1, 1, 1, 1}, v[4] = {1, 1, 1, 1}, g[2] = {0.5f, 1.5f};
    float y[4];
    lm_linear_f32 p = {1, 2, 2, 2, LM_LINEAR_IDENTITY, false, LM_LINEAR_GATE_SCALAR, q, k, v,
                       g, NULL, NULL, y, NULL, NULL, NULL, LM_KV_F32, NULL, NULL, NULL};
    lm_error err;
    cr_assert_eq(lm_linear_attention_f32(&p, true, 4, lm_ops_active(), &err), LM_ERR_DOMAIN);
    cr_assert(strstr(err.message, "gate must lie in (0, 1]") != NULL, "%s", err.message);
    g[1] = 1.0f;
    cr_assert_eq(lm_linear_attention_f32(&p, true, 0, lm_ops_active(), &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "chunk must be positive") != NULL, "%s", err.message);
    p.normalize = true;
    cr_assert_eq(lm_linear_attention_f32(&p, false, 0, lm_ops_active(), &err), LM_ERR_ARG);
    p.normalize = false;
    p.length = 0;
    cr_assert_eq(lm_linear_attention_f32(&p, false, 0, lm_ops_active(), &err), LM_ERR_SHAPE);
}

/* ---- linear attention with bfloat16 inputs (slot linear_chunked_bf16) ----------------------
 * q, k, v rounded to bfloat16, the float64 oracle run on the rounded values. The bound is
 * the contract's (scripts/kcases/recurrent.py): the float32 rule plus LM_LINEAR_BF16_RTOL
 * (3 x 2^-8 + 2^-14) of the absolute-value scale, which is the oracle run on |v| and |s0|
 * (phi(q), phi(k) and the decays are positive; identity: on |q|, |k| too), plus |y| for
 * the normalized form. Paths without BF16 dot products, and the avx512bf16 path where it
 * widens, must also equal the f32 slot on the widened inputs bit for bit. */
typedef struct linear_bf16_case {
    size_t H, L, dk, dv;
    lm_linear_feature feature;
    bool normalize;
    lm_linear_gate gate;
    bool s0;
} linear_bf16_case;

/* out {n} = the float64 oracle of c on q, k (|.| for the identity feature), |v|, |s0|
 * (s_final into sf {H dk dv}); normalized: + |y| */
static void linear_abs_scale(const linear_bf16_case *c, const lm_linear_f64 *p, double *ys,
                             double *sf, const double *y)
{
    const size_t nk = c->H * c->L * c->dk, nv = c->H * c->L * c->dv, ns = c->H * c->dk * c->dv;
    double *qa = malloc(nk * sizeof *qa), *ka = malloc(nk * sizeof *ka);
    double *va = malloc(nv * sizeof *va), *sa = malloc(ns * sizeof *sa);
    for (size_t i = 0; i < nk; i++) {
        qa[i] = c->feature == LM_LINEAR_IDENTITY ? fabs(p->q[i]) : p->q[i];
        ka[i] = c->feature == LM_LINEAR_IDENTITY ? fabs(p->k[i]) : p->k[i];
    }
    for (size_t i = 0; i < nv; i++)
        va[i] = fabs(p->v[i]);
    for (size_t i = 0; p->s0 != NULL && i < ns; i++)
        sa[i] = fabs(p->s0[i]);
    lm_linear_f64 a = *p;
    a.q = qa, a.k = ka, a.v = va, a.s0 = p->s0 != NULL ? sa : NULL;
    a.y = ys, a.s_final = sf, a.z_final = NULL;
    lm_error err;
    cr_assert_eq(lm_linear_gated_f64_ref(&a, &err), LM_OK, "%s", err.message);
    for (size_t i = 0; c->normalize && i < nv; i++)
        ys[i] += fabs(y[i]);
    free(qa), free(ka), free(va), free(sa);
}

/* max over i of |got[i] - want[i]| / (1e-30 + rtol scale[i]) */
static double worst_ratio(const float *got, const double *want, const double *scale, size_t n,
                          double rtol)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double e = fabs((double)got[i] - want[i]);
        cr_assert(e == e, "NaN at %zu", i);
        const double r = e / (1e-30 + rtol * scale[i]);
        worst = r > worst ? r : worst;
    }
    return worst;
}

static void check_linear_bf16_case(const linear_bf16_case *c, uint64_t seed)
{
    const size_t H = c->H, L = c->L, dk = c->dk, dv = c->dv;
    const size_t nk = H * L * dk, nv = H * L * dv, ns = H * dk * dv, nz = H * dk;
    const size_t gn = c->gate == LM_LINEAR_GATE_CHANNEL ? nk : H * L;
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    uint16_t *x16 = malloc((2 * nk + nv) * sizeof *x16);
    float *x = malloc((2 * nk + nv) * sizeof *x), *gf = malloc(gn * sizeof *gf);
    float *s0f = malloc(ns * sizeof *s0f), *z0f = malloc(nz * sizeof *z0f);
    double *xd = malloc((2 * nk + nv) * sizeof *xd), *gd = malloc(gn * sizeof *gd);
    double *s0d = malloc(ns * sizeof *s0d), *z0d = malloc(nz * sizeof *z0d);
    for (size_t i = 0; i < 2 * nk + nv; i++) { /* q, k {H, L, dk}, v {H, L, dv} */
        const double r = i < 2 * nk ? 1.0 / sqrt((double)dk) : 1.0;
        x16[i] = lm_bf16_from_f32((float)(lm_rng_standard_normal(&rng) * r));
        x[i] = lm_f32_from_bf16(x16[i]);
        xd[i] = (double)x[i];
    }
    for (size_t i = 0; i < gn; i++)
        gd[i] = (double)(gf[i] = (float)lm_rng_uniform(&rng, 0.8, 1.0));
    for (size_t i = 0; i < ns; i++)
        s0d[i] = (double)(s0f[i] = (float)(lm_rng_standard_normal(&rng) * 0.5));
    for (size_t i = 0; i < nz; i++)
        z0d[i] = (double)(z0f[i] = (float)lm_rng_uniform(&rng, 0.5, 2.0));
    const size_t nout = nv + ns + nz;
    double *want = malloc(nout * sizeof *want), *scale = malloc(nout * sizeof *scale);
    lm_linear_f64 pd = {H, L, dk, dv, c->feature, c->normalize, c->gate, xd, xd + nk,
                        xd + 2 * nk, c->gate ? gd : NULL, c->s0 ? s0d : NULL,
                        c->s0 ? z0d : NULL, want, want + nv, want + nv + ns};
    lm_error err;
    cr_assert_eq(lm_linear_gated_f64_ref(&pd, &err), LM_OK, "%s", err.message);
    linear_abs_scale(c, &pd, scale, scale + nv, want);
    for (size_t i = 0; i < nz; i++) /* z: sums of positive terms (elu1) or of phi(k) */
        scale[nv + ns + i] = fabs(want[nv + ns + i]) + 1.0;
    const double f32_rule = (4.0 * sqrt((double)(L + dk)) + 8.0 + 0.25 * (double)L) * 0x1p-24;
    float *got = malloc(nout * sizeof *got), *ref32 = malloc(nout * sizeof *ref32);
    static const size_t chunks[] = {7, 16, 64, 1000};
    const bool pairs = dk % 2 == 0 && dv % 16 == 0 && c->gate != LM_LINEAR_GATE_CHANNEL;
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa))
            continue;
        const lm_ops *ops = lm_ops_for((lm_isa)isa);
        const bool dot = isa == LM_ISA_AVX512BF16 && pairs;
        for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
            const size_t chunk = chunks[ci];
            lm_linear_f32 pb = {.heads = H, .length = L, .d_key = dk, .d_value = dv,
                                .feature = c->feature, .normalize = c->normalize,
                                .gate_kind = c->gate, .gate = c->gate ? gf : NULL,
                                .s0 = c->s0 ? s0f : NULL, .z0 = c->s0 ? z0f : NULL,
                                .y = got, .s_final = got + nv, .z_final = got + nv + ns,
                                .dtype = LM_KV_BF16, .q16 = x16, .k16 = x16 + nk,
                                .v16 = x16 + 2 * nk};
            cr_assert_eq(lm_linear_attention_f32(&pb, true, chunk, ops, &err), LM_OK, "%s",
                         err.message);
            lm_linear_f32 pf = pb;
            pf.dtype = LM_KV_F32, pf.q = x, pf.k = x + nk, pf.v = x + 2 * nk;
            pf.y = ref32, pf.s_final = ref32 + nv, pf.z_final = ref32 + nv + ns;
            cr_assert_eq(lm_linear_attention_f32(&pf, true, chunk, ops, &err), LM_OK, "%s",
                         err.message);
            const double worst = worst_ratio(got, want, scale, nout, f32_rule + LM_LINEAR_BF16_RTOL);
            const double worst_f32 = worst_ratio(got, want, scale, nout, f32_rule);
            cr_log_info("linear bf16 isa=%s H=%zu L=%zu dk=%zu dv=%zu feature=%d norm=%d "
                        "gate=%d chunk=%zu dot=%d: max err / bound %.3f (/ f32 rule %.2f)",
                        lm_isa_name((lm_isa)isa), H, L, dk, dv, c->feature, c->normalize,
                        c->gate, chunk, (int)dot, worst, worst_f32);
            cr_assert(worst <= 1.0, "isa %s dk=%zu dv=%zu chunk=%zu: error %.3f of the bound",
                      lm_isa_name((lm_isa)isa), dk, dv, chunk, worst);
            if (!dot)
                cr_assert(memcmp(got, ref32, nout * sizeof *got) == 0,
                          "isa %s dk=%zu dv=%zu chunk=%zu: the widening bf16 slot equals the "
                          "f32 one", lm_isa_name((lm_isa)isa), dk, dv, chunk);
        }
    }
    free(x16), free(x), free(gf), free(s0f), free(z0f), free(xd), free(gd), free(s0d),
        free(z0d), free(want), free(scale), free(got), free(ref32);
}

Test(recurrent, linear_bf16_matches_oracle_on_rounded_inputs_every_path)
{
    static const linear_bf16_case cases[] = {
        {2, 77, 64, 64, LM_LINEAR_ELU1, true, LM_LINEAR_GATE_NONE, true},
        {2, 70, 32, 48, LM_LINEAR_IDENTITY, false, LM_LINEAR_GATE_SCALAR, true},
        {1, 45, 16, 32, LM_LINEAR_ELU1, false, LM_LINEAR_GATE_SCALAR, false},
        {1, 40, 128, 128, LM_LINEAR_IDENTITY, false, LM_LINEAR_GATE_NONE, false},
        {1, 37, 17, 32, LM_LINEAR_IDENTITY, false, LM_LINEAR_GATE_NONE, true}, /* odd dk */
        {1, 30, 16, 20, LM_LINEAR_ELU1, true, LM_LINEAR_GATE_SCALAR, true},     /* dv % 16 */
        {2, 33, 16, 16, LM_LINEAR_ELU1, true, LM_LINEAR_GATE_CHANNEL, true},    /* channel */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_linear_bf16_case(&cases[i], 4100 + i);
}

Test(recurrent, linear_bf16_rejects_bad_input)
{
    uint16_t q[4] = {0x3f80, 0x3f80, 0x3f80, 0x3f80}, k[4] = {0x3f80, 0x3f80, 0x7fc0, 0x3f80};
    uint16_t v[4] = {0x3f80, 0x3f80, 0x3f80, 0x3f80};
    float y[4];
    lm_linear_f32 p = {.heads = 1, .length = 2, .d_key = 2, .d_value = 2,
                       .feature = LM_LINEAR_IDENTITY, .y = y, .dtype = LM_KV_BF16, .q16 = q,
                       .k16 = k, .v16 = v};
    lm_error err;
    cr_assert_eq(lm_linear_attention_f32(&p, true, 4, lm_ops_active(), &err), LM_ERR_NONFINITE);
    cr_assert(strstr(err.message, "k must contain only finite values") != NULL, "%s",
              err.message);
    k[2] = 0x3f80;
    cr_assert_eq(lm_linear_attention_f32(&p, true, 4, lm_ops_active(), &err), LM_OK, "%s",
                 err.message);
    cr_assert_eq(lm_linear_attention_f32(&p, false, 0, lm_ops_active(), &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "chunked only") != NULL, "%s", err.message);
    p.v16 = NULL;
    cr_assert_eq(lm_linear_attention_f32(&p, true, 4, lm_ops_active(), &err), LM_ERR_SHAPE);
    p.v16 = v;
    p.dtype = LM_KV_F16;
    cr_assert_eq(lm_linear_attention_f32(&p, true, 4, lm_ops_active(), &err), LM_ERR_ARG);
}

/* ---- Mamba-2 SSD ---------------------------------------------------------------------------- */

typedef struct ssd_case {
    size_t B, L, H, P, G, N;
    bool extras; /* bias, skip, h0 */
    double a_min, a_max; /* A ~ uniform(a_min, a_max), then A[0] = 0 */
} ssd_case;

static void check_ssd_case(const ssd_case *c, uint64_t seed)
{
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    const size_t B = c->B, L = c->L, H = c->H, P = c->P, G = c->G, N = c->N;
    pair x = pair_normal(&rng, B * L * H * P, 1.0), dt = pair_normal(&rng, B * L * H, 1.0);
    pair bias = pair_new(H);
    lm_rng_fill_uniform(&rng, -4.0, -1.0, bias.d, H);
    pair_sync(&bias);
    pair a = pair_new(H);
    lm_rng_fill_uniform(&rng, c->a_min, c->a_max, a.d, H);
    a.d[0] = 0.0; /* a zero mode: nothing decays */
    pair_sync(&a);
    pair b = pair_normal(&rng, B * L * G * N, 1.0 / sqrt((double)N));
    pair cc = pair_normal(&rng, B * L * G * N, 1.0 / sqrt((double)N));
    pair skip = pair_normal(&rng, H, 1.0), h0 = pair_normal(&rng, B * H * P * N, 1.0);
    pair y = pair_new(B * L * H * P), hf = pair_new(B * H * P * N);
    lm_ssm_ssd_f64 pd = {B, L, H, P, G, N, x.d, dt.d, c->extras ? bias.d : NULL, a.d, b.d,
                         cc.d, c->extras ? skip.d : NULL, c->extras ? h0.d : NULL, y.d, hf.d};
    lm_error err;
    cr_assert_eq(lm_ssm_ssd_f64_ref(&pd, &err), LM_OK, "%s", err.message);
    double ymax = 0.0, hmax = 0.0;
    for (size_t i = 0; i < y.n; i++)
        ymax = fmax(ymax, fabs(y.d[i]));
    for (size_t i = 0; i < hf.n; i++)
        hmax = fmax(hmax, fabs(hf.d[i]));
    const double tol_y = 64.0 * sqrt((double)(L + N)) * 0x1p-24 * (ymax + 1.0);
    const double tol_h = 64.0 * sqrt((double)L) * 0x1p-24 * (hmax + 1.0);
    static const size_t chunks[] = {0, 1, 7, 64, 1000};
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa))
            continue;
        const lm_ops *ops = lm_ops_for((lm_isa)isa);
        for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
            const size_t chunk = chunks[ci];
            lm_ssm_ssd_f32 pf = {B, L, H, P, G, N, x.f, dt.f, c->extras ? bias.f : NULL, a.f,
                                 b.f, cc.f, c->extras ? skip.f : NULL,
                                 c->extras ? h0.f : NULL, y.f, hf.f, LM_KV_F32, NULL, NULL, NULL};
            cr_assert_eq(lm_ssm_ssd_scan_f32(&pf, chunk != 0, chunk, ops, &err),
                         LM_OK, "%s", err.message);
            const double ey = max_err(&y), eh = max_err(&hf);
            cr_expect(ey <= tol_y && eh <= tol_h,
                      "isa %s B=%zu L=%zu H=%zu P=%zu G=%zu N=%zu chunk=%zu: |dy| %.3g (tol "
                      "%.3g) |dh| %.3g (tol %.3g)", lm_isa_name((lm_isa)isa), B, L, H, P, G,
                      N, chunk, ey, tol_y, eh, tol_h);
        }
    }
    /* decode: token by token from h0 (or zero) equals the scan, on every path */
    float *state = calloc(B * H * P * N, sizeof(float));
    float *xt = malloc(B * H * P * sizeof(float)), *dtt = malloc(B * H * sizeof(float));
    float *bt = malloc(B * G * N * sizeof(float)), *ct = malloc(B * G * N * sizeof(float));
    float *yt = malloc(B * H * P * sizeof(float));
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa))
            continue;
        const lm_ops *step_kernel = lm_ops_for((lm_isa)isa);
        if (c->extras)
            memcpy(state, h0.f, B * H * P * N * sizeof(float));
        else
            memset(state, 0, B * H * P * N * sizeof(float));
        for (size_t t = 0; t < L; t++) {
            for (size_t bi = 0; bi < B; bi++) {
                memcpy(xt + bi * H * P, x.f + (bi * L + t) * H * P, H * P * sizeof(float));
                memcpy(dtt + bi * H, dt.f + (bi * L + t) * H, H * sizeof(float));
                memcpy(bt + bi * G * N, b.f + (bi * L + t) * G * N, G * N * sizeof(float));
                memcpy(ct + bi * G * N, cc.f + (bi * L + t) * G * N, G * N * sizeof(float));
            }
            lm_ssm_ssd_f32 step = {B, 1, H, P, G, N, xt, dtt, c->extras ? bias.f : NULL, a.f, bt,
                                   ct, c->extras ? skip.f : NULL, state, yt, state, LM_KV_F32, NULL, NULL, NULL};
            cr_assert_eq(lm_ssm_ssd_decode_f32(&step, step_kernel, &err), LM_OK, "%s",
                         err.message);
            for (size_t bi = 0; bi < B; bi++)
                for (size_t i = 0; i < H * P; i++)
                    cr_assert(fabs((double)yt[bi * H * P + i] - y.d[(bi * L + t) * H * P + i]) <=
                                  tol_y, "isa %s decode t=%zu", lm_isa_name((lm_isa)isa), t);
        }
        for (size_t i = 0; i < hf.n; i++)
            cr_assert(fabs((double)state[i] - hf.d[i]) <= tol_h, "isa %s",
                      lm_isa_name((lm_isa)isa));
    }
    free(state), free(xt), free(dtt), free(bt), free(ct), free(yt);
    pair *all[] = {&x, &dt, &bias, &a, &b, &cc, &skip, &h0, &y, &hf};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pair_free(all[i]);
}

Test(recurrent, ssd_every_path_chunk_and_decode_matches_oracle)
{
    static const ssd_case cases[] = {
        {1, 37, 2, 8, 1, 64, true, -8.0, 0.0},  {2, 19, 4, 5, 2, 16, false, -8.0, 0.0},
        {1, 50, 2, 16, 2, 128, true, -8.0, 0.0}, {1, 1, 1, 3, 1, 7, true, -8.0, 0.0},
        /* decay of up to ~300 per token: chunks split where their decay range passes 48 */
        {1, 45, 3, 6, 1, 9, true, -300.0, -40.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_ssd_case(&cases[i], 6000 + i);
}

/* bfloat16 copies of a pair's float values, and the pair itself rounded to them. */
static uint16_t *pair_to_bf16(pair *p)
{
    uint16_t *h = malloc((p->n ? p->n : 1) * sizeof *h);
    cr_assert(h != NULL);
    lm_kv_store(LM_KV_BF16, p->f, h, p->n);
    for (size_t i = 0; i < p->n; i++) {
        p->f[i] = lm_f32_from_bf16(h[i]);
        p->d[i] = (double)p->f[i];
    }
    return h;
}

static double *abs_copy(const double *v, size_t n)
{
    double *a = malloc((n ? n : 1) * sizeof *a);
    cr_assert(a != NULL);
    for (size_t i = 0; i < n; i++)
        a[i] = fabs(v[i]);
    return a;
}

/* The chunked SSD on bfloat16 x, b, c (slot ssd_chunked_bf16), every path and chunk size,
 * against the float64 oracle on the rounded inputs: |got - want| <= rtol scale per element,
 * scale = the oracle on absolute values (|x|, |b|, |c|, |skip|, |h0|: every term's
 * magnitude, decays and steps being positive) + |want|, rtol = 2^-7 + 2^-15 (the bf16
 * roundings of the avx512bf16 products, docs/kernels.md) + the float32 allowance of
 * check_ssd_case. A path that widens matches the f32 slot on the widened inputs bit for bit. */
static void check_ssd_bf16_case(const ssd_case *c, uint64_t seed)
{
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    const size_t B = c->B, L = c->L, H = c->H, P = c->P, G = c->G, N = c->N;
    pair x = pair_normal(&rng, B * L * H * P, 1.0), dt = pair_normal(&rng, B * L * H, 1.0);
    pair bias = pair_new(H);
    lm_rng_fill_uniform(&rng, -4.0, -1.0, bias.d, H);
    pair_sync(&bias);
    pair a = pair_new(H);
    lm_rng_fill_uniform(&rng, c->a_min, c->a_max, a.d, H);
    a.d[0] = 0.0;
    pair_sync(&a);
    pair b = pair_normal(&rng, B * L * G * N, 1.0 / sqrt((double)N));
    pair cc = pair_normal(&rng, B * L * G * N, 1.0 / sqrt((double)N));
    pair skip = pair_normal(&rng, H, 1.0), h0 = pair_normal(&rng, B * H * P * N, 1.0);
    uint16_t *x16 = pair_to_bf16(&x), *b16 = pair_to_bf16(&b), *c16 = pair_to_bf16(&cc);
    pair y = pair_new(B * L * H * P), hf = pair_new(B * H * P * N);
    lm_ssm_ssd_f64 pd = {B, L, H, P, G, N, x.d, dt.d, bias.d, a.d, b.d, cc.d, skip.d, h0.d,
                         y.d, hf.d};
    lm_error err;
    cr_assert_eq(lm_ssm_ssd_f64_ref(&pd, &err), LM_OK, "%s", err.message);
    double *ax = abs_copy(x.d, x.n), *ab = abs_copy(b.d, b.n), *ac = abs_copy(cc.d, cc.n);
    double *as = abs_copy(skip.d, skip.n), *ah = abs_copy(h0.d, h0.n);
    double *ys = malloc(y.n * sizeof *ys), *hs = malloc(hf.n * sizeof *hs);
    cr_assert(ys != NULL && hs != NULL);
    lm_ssm_ssd_f64 pa = {B, L, H, P, G, N, ax, dt.d, bias.d, a.d, ab, ac, as, ah, ys, hs};
    cr_assert_eq(lm_ssm_ssd_f64_ref(&pa, &err), LM_OK, "%s", err.message);
    const double rtol = 0x1p-7 + 0x1p-15 + 64.0 * sqrt((double)(L + N)) * 0x1p-24;
    float *yw = malloc(y.n * sizeof *yw), *hw = malloc(hf.n * sizeof *hw);
    cr_assert(yw != NULL && hw != NULL);
    static const size_t chunks[] = {7, 16, 64};
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa))
            continue;
        const lm_ops *ops = lm_ops_for((lm_isa)isa);
        for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
            lm_ssm_ssd_f32 p16 = {.batch = B, .length = L, .heads = H, .head_dim = P,
                                  .groups = G, .state = N, .dt_raw = dt.f, .dt_bias = bias.f,
                                  .a = a.f, .skip = skip.f, .h0 = h0.f, .y = y.f,
                                  .h_final = hf.f, .dtype = LM_KV_BF16, .x16 = x16,
                                  .b16 = b16, .c16 = c16};
            cr_assert_eq(lm_ssm_ssd_scan_f32(&p16, true, chunks[ci], ops, &err), LM_OK, "%s",
                         err.message);
            double worst = 0.0;
            for (size_t i = 0; i < y.n; i++)
                worst = fmax(worst, fabs((double)y.f[i] - y.d[i]) /
                                        (rtol * (ys[i] + fabs(y.d[i])) + 1e-30));
            for (size_t i = 0; i < hf.n; i++)
                worst = fmax(worst, fabs((double)hf.f[i] - hf.d[i]) /
                                        (rtol * (hs[i] + fabs(hf.d[i])) + 1e-30));
            cr_expect(worst <= 1.0, "isa %s B=%zu L=%zu H=%zu P=%zu G=%zu N=%zu chunk=%zu: "
                      "error %.3g of the bound", lm_isa_name((lm_isa)isa), B, L, H, P, G, N,
                      chunks[ci], worst);
            if (isa == LM_ISA_AVX512BF16)
                continue;
            lm_ssm_ssd_f32 p32 = p16;
            p32.dtype = LM_KV_F32, p32.x = x.f, p32.b = b.f, p32.c = cc.f, p32.y = yw;
            p32.h_final = hw, p32.x16 = p32.b16 = p32.c16 = NULL;
            cr_assert_eq(lm_ssm_ssd_scan_f32(&p32, true, chunks[ci], ops, &err), LM_OK);
            cr_expect(memcmp(yw, y.f, y.n * sizeof *yw) == 0 &&
                      memcmp(hw, hf.f, hf.n * sizeof *hw) == 0,
                      "isa %s chunk %zu: the widened bf16 run differs from the f32 slot",
                      lm_isa_name((lm_isa)isa), chunks[ci]);
        }
    }
    free(yw), free(hw), free(ys), free(hs), free(ax), free(ab), free(ac), free(as), free(ah);
    free(x16), free(b16), free(c16);
    pair *all[] = {&x, &dt, &bias, &a, &b, &cc, &skip, &h0, &y, &hf};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pair_free(all[i]);
}

Test(recurrent, ssd_bf16_chunked_every_path_within_its_bound)
{
    static const ssd_case cases[] = {
        {1, 130, 2, 64, 1, 128, true, -8.0, 0.0}, /* the pair layout: P 64, N 128 */
        {2, 50, 3, 16, 1, 16, true, -8.0, 0.0},   /* odd sub-chunk lengths */
        {1, 45, 3, 32, 1, 10, true, -300.0, -40.0}, /* sub-chunks from odd rows; N % 16 */
        {1, 37, 2, 8, 1, 64, true, -8.0, 0.0},    /* P % 16: widened on every path */
        {1, 20, 2, 16, 1, 7, true, -8.0, 0.0},    /* N odd: widened on every path */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_ssd_bf16_case(&cases[i], 6100 + i);
}

Test(recurrent, ssd_bf16_only_in_the_chunked_form)
{
    float dt[2] = {0}, a[2] = {-1.0f, -0.5f}, y[4], h[8] = {0};
    uint16_t x16[4] = {0}, b16[2] = {0}, c16[2] = {0};
    lm_ssm_ssd_f32 p = {.batch = 1, .length = 1, .heads = 2, .head_dim = 2, .groups = 1,
                        .state = 2, .dt_raw = dt, .a = a, .y = y, .h0 = h, .h_final = h,
                        .dtype = LM_KV_BF16, .x16 = x16, .b16 = b16, .c16 = c16};
    lm_error err;
    cr_assert_eq(lm_ssm_ssd_scan_f32(&p, true, 4, lm_ops_active(), &err), LM_OK, "%s",
                 err.message);
    cr_assert_eq(lm_ssm_ssd_scan_f32(&p, false, 0, lm_ops_active(), &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "chunked form") != NULL, "%s", err.message);
    cr_assert_eq(lm_ssm_ssd_decode_f32(&p, lm_ops_active(), &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "chunked form") != NULL, "%s", err.message);
    p.x16 = NULL;
    cr_assert_eq(lm_ssm_ssd_scan_f32(&p, true, 4, lm_ops_active(), &err), LM_ERR_SHAPE);
    cr_assert(strstr(err.message, "x16") != NULL, "%s", err.message);
    p.dtype = LM_KV_F16;
    cr_assert_eq(lm_ssm_ssd_scan_f32(&p, true, 4, lm_ops_active(), &err), LM_ERR_ARG);
}

Test(recurrent, ssd_rejects_bad_input)
{
    float x[4] = {0}, dt[2] = {0}, a[2] = {-1.0f, 0.5f}, b[4] = {0}, c[4] = {0}, y[4];
    lm_ssm_ssd_f32 p = {1, 1, 2, 2, 1, 2, x, dt, NULL, a, b, c, NULL, NULL, y, NULL, LM_KV_F32, NULL, NULL, NULL};
    lm_error err;
    cr_assert_eq(lm_ssm_ssd_scan_f32(&p, true, 4, lm_ops_active(), &err), LM_ERR_DOMAIN);
    cr_assert(strstr(err.message, "a must be non-positive") != NULL, "%s", err.message);
    a[1] = -0.5f;
    cr_assert_eq(lm_ssm_ssd_scan_f32(&p, true, 0, lm_ops_active(), &err), LM_ERR_ARG);
    p.groups = 3;
    cr_assert_eq(lm_ssm_ssd_scan_f32(&p, false, 0, lm_ops_active(), &err), LM_ERR_SHAPE);
    p.groups = 1;
    cr_assert_eq(lm_ssm_ssd_decode_f32(&p, lm_ops_active(), &err), LM_ERR_ARG);
    float h[8] = {0}; /* {B, H, P, N} = {1, 2, 2, 2} */
    p.h0 = p.h_final = h;
    cr_assert_eq(lm_ssm_ssd_decode_f32(&p, NULL, &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "ops must be a dispatch table") != NULL, "%s", err.message);
    cr_assert_eq(lm_ssm_ssd_decode_f32(&p, lm_ops_active(), &err), LM_OK, "%s", err.message);
    p.h0 = p.h_final = NULL;
    cr_assert_eq(lm_ssm_ssd_scan_f32(&p, false, 0, lm_ops_active(), &err), LM_OK);
}

/* ---- delta rule and gated delta rule -------------------------------------------------------- */

/* The delta rule's inputs, drawn in this order: q {H, L, dk} / sqrt(dk), k, v {H, L, dv},
 * beta ~ U(0, 1) (beta[0] = 1 when beta0_one: an exact overwrite), gate ~ U(0.7, 1), s0
 * {H, dv, dk} * 0.5. */
static void draw_delta(lm_rng *rng, size_t H, size_t L, size_t dk, size_t dv, bool beta0_one,
                       pair *q, pair *k, pair *v, pair *beta, pair *g, pair *s0)
{
    *q = pair_normal(rng, H * L * dk, 1.0 / sqrt((double)dk));
    *k = pair_normal(rng, H * L * dk, 1.0);
    *v = pair_normal(rng, H * L * dv, 1.0);
    *beta = pair_new(H * L), *g = pair_new(H * L);
    lm_rng_fill_uniform(rng, 0.0, 1.0, beta->d, beta->n);
    lm_rng_fill_uniform(rng, 0.7, 1.0, g->d, g->n);
    if (beta0_one)
        beta->d[0] = 1.0;
    pair_sync(beta), pair_sync(g);
    *s0 = pair_normal(rng, H * dv * dk, 0.5);
}

typedef struct delta_case {
    size_t H, L, dk, dv;
    bool gated, s0;
} delta_case;

static void check_delta_case(const delta_case *c, uint64_t seed)
{
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    const size_t H = c->H, L = c->L, dk = c->dk, dv = c->dv;
    pair q, k, v, beta, g, s0;
    draw_delta(&rng, H, L, dk, dv, true, &q, &k, &v, &beta, &g, &s0);
    pair y = pair_new(H * L * dv), sf = pair_new(H * dv * dk);
    lm_delta_seq_f64 pd = {H, L, dk, dv, q.d, k.d, v.d, beta.d, c->gated ? g.d : NULL,
                           c->s0 ? s0.d : NULL, y.d, sf.d};
    lm_error err;
    cr_assert_eq(lm_delta_gated_f64_ref(&pd, &err), LM_OK, "%s", err.message);
    double ymax = 0.0, smax = 0.0;
    for (size_t i = 0; i < y.n; i++)
        ymax = fmax(ymax, fabs(y.d[i]));
    for (size_t i = 0; i < sf.n; i++)
        smax = fmax(smax, fabs(sf.d[i]));
    const double tol_y = 64.0 * sqrt((double)(L + dk)) * 0x1p-24 * (ymax + 1.0);
    const double tol_s = 64.0 * sqrt((double)(L + dk)) * 0x1p-24 * (smax + 1.0);
    static const size_t chunks[] = {0, 1, 5, 16, 64, 1000};
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa))
            continue;
        const lm_ops *ops = lm_ops_for((lm_isa)isa);
        for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
            const size_t chunk = chunks[ci];
            lm_delta_seq_f32 pf = {H, L, dk, dv, q.f, k.f, v.f, beta.f, c->gated ? g.f : NULL,
                                   c->s0 ? s0.f : NULL, y.f, sf.f, LM_KV_F32, NULL, NULL, NULL};
            cr_assert_eq(lm_delta_rule_f32(&pf, chunk != 0, chunk, ops, &err),
                         LM_OK, "%s", err.message);
            const double ey = max_err(&y), es = max_err(&sf);
            cr_expect(ey <= tol_y && es <= tol_s,
                      "isa %s H=%zu L=%zu dk=%zu dv=%zu gated=%d chunk=%zu: |dy| %.3g (tol "
                      "%.3g) |dS| %.3g (tol %.3g)", lm_isa_name((lm_isa)isa), H, L, dk, dv,
                      c->gated, chunk, ey, tol_y, es, tol_s);
        }
    }
    pair *all[] = {&q, &k, &v, &beta, &g, &s0, &y, &sf};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pair_free(all[i]);
}

Test(recurrent, delta_every_path_and_chunk_matches_oracle)
{
    static const delta_case cases[] = {
        {1, 37, 8, 6, false, false}, {2, 41, 16, 33, true, true}, {3, 29, 9, 64, true, false},
        {1, 70, 32, 32, false, true}, {1, 1, 4, 3, true, true},
        /* d_value 150: a whole register panel of the recurrent form (128 floats with
         * AVX-512), then single vectors and single floats; odd d_key 13 */
        {1, 19, 13, 150, true, true}, {1, 11, 13, 150, false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_delta_case(&cases[i], 7000 + i);
}

Test(recurrent, delta_extreme_keys_and_strong_decay_match_oracle)
{
    /* Keys with a subnormal max|k| (the chunked kernels' division fallback), huge keys, and
     * gates down to 1e-3 (G_ti over a long chunk spans many decades); d_key 20 and d_value 24
     * are not multiples of the vector width. */
    enum { H = 2, L = 45, dk = 20, dv = 24 };
    lm_rng rng;
    lm_rng_seed(&rng, 7100);
    pair q = pair_normal(&rng, H * L * dk, 0.25), k = pair_normal(&rng, H * L * dk, 1.0);
    pair v = pair_normal(&rng, H * L * dv, 1.0), s0 = pair_normal(&rng, H * dv * dk, 0.5);
    pair beta = pair_new(H * L), g = pair_new(H * L);
    lm_rng_fill_uniform(&rng, 0.0, 1.0, beta.d, beta.n);
    lm_rng_fill_uniform(&rng, 0.5, 1.0, g.d, g.n);
    static const double key_scale[3] = {1e-41, 1e30, 1.0};
    for (size_t i = 0; i < H * L; i++) {
        for (size_t c = 0; c < dk; c++)
            k.d[i * dk + c] *= key_scale[i % 3];
        if (i % 7 == 0)
            g.d[i] = 1e-3;
    }
    pair_sync(&k), pair_sync(&beta), pair_sync(&g);
    pair y = pair_new(H * L * dv), sf = pair_new(H * dv * dk);
    lm_delta_seq_f64 pd = {H, L, dk, dv, q.d, k.d, v.d, beta.d, g.d, s0.d, y.d, sf.d};
    lm_error err;
    cr_assert_eq(lm_delta_gated_f64_ref(&pd, &err), LM_OK, "%s", err.message);
    double ymax = 0.0, smax = 0.0;
    for (size_t i = 0; i < y.n; i++)
        ymax = fmax(ymax, fabs(y.d[i]));
    for (size_t i = 0; i < sf.n; i++)
        smax = fmax(smax, fabs(sf.d[i]));
    const double tol_y = 64.0 * sqrt((double)(L + dk)) * 0x1p-24 * (ymax + 1.0);
    const double tol_s = 64.0 * sqrt((double)(L + dk)) * 0x1p-24 * (smax + 1.0);
    static const size_t chunks[] = {0, 1, 7, 16, 45};
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa))
            continue;
        const lm_ops *ops = lm_ops_for((lm_isa)isa);
        for (size_t ci = 0; ci < sizeof chunks / sizeof chunks[0]; ci++) {
            const size_t chunk = chunks[ci];
            lm_delta_seq_f32 pf = {H, L, dk, dv, q.f, k.f, v.f, beta.f, g.f, s0.f, y.f, sf.f,
                                   LM_KV_F32, NULL, NULL, NULL};
            cr_assert_eq(lm_delta_rule_f32(&pf, chunk != 0, chunk, ops, &err),
                         LM_OK, "%s", err.message);
            const double ey = max_err(&y), es = max_err(&sf);
            cr_expect(ey <= tol_y && es <= tol_s,
                      "isa %s chunk=%zu: |dy| %.3g (tol %.3g) |dS| %.3g (tol %.3g)",
                      lm_isa_name((lm_isa)isa), chunk, ey, tol_y, es, tol_s);
        }
    }
    /* a NaN in a key is rejected like a zero key */
    k.f[5 * dk + 3] = NAN;
    lm_delta_seq_f32 pf = {H, L, dk, dv, q.f, k.f, v.f, beta.f, g.f, s0.f, y.f, sf.f,
                           LM_KV_F32, NULL, NULL, NULL};
    cr_assert_eq(lm_delta_rule_f32(&pf, true, 16, lm_ops_active(), &err), LM_ERR_DOMAIN);
    cr_assert(strstr(err.message, "k must have non-zero (finite) norm: head 0, token 5") != NULL,
              "%s", err.message);
    pair *all[] = {&q, &k, &v, &beta, &g, &s0, &y, &sf};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pair_free(all[i]);
}

Test(recurrent, delta_oracle_agrees_with_m8_single_step)
{
    /* One token of the sequence oracle equals m8's lm_delta_update_f64_ref. */
    enum { dk = 3, dv = 2 };
    double S[dv * dk] = {0.5, -1.0, 2.0, 0.25, 0.0, -0.5};
    double q[dk] = {0.3, -0.2, 0.9}, k[dk] = {2.0, -1.0, 0.5}, v[dv] = {1.5, -2.5};
    double beta = 0.7, g = 0.8, y[dv], S1[dv * dk];
    lm_delta_seq_f64 p = {1, 1, dk, dv, q, k, v, &beta, &g, S, y, S1};
    cr_assert_eq(lm_delta_gated_f64_ref(&p, NULL), LM_OK);
    double S2[dv * dk], kn[dk], before[dv], after[dv];
    lm_delta_update_result r = {S2, kn, before, after};
    cr_assert_eq(lm_delta_update_f64_ref(S, dv, dk, k, dk, v, dv, beta, g, true, &r, NULL),
                 LM_OK);
    for (int i = 0; i < dv * dk; i++)
        cr_assert_float_eq(S1[i], S2[i], 1e-14);
}

Test(recurrent, delta_rejects_bad_input)
{
    float q[4] = {1, 0, 1, 0}, k[4] = {1, 0, 0, 0}, v[4] = {1, 1, 1, 1};
    float beta[2] = {0.5f, 0.5f}, g[2] = {0.9f, 0.9f}, y[4];
    lm_delta_seq_f32 p = {1, 2, 2, 2, q, k, v, beta, g, NULL, y, NULL,
                          LM_KV_F32, NULL, NULL, NULL};
    lm_error err;
    cr_assert_eq(lm_delta_rule_f32(&p, true, 2, lm_ops_active(), &err), LM_ERR_DOMAIN);
    cr_assert(strstr(err.message, "k must have non-zero") != NULL, "%s", err.message);
    k[3] = 1.0f;
    cr_assert_eq(lm_delta_rule_f32(&p, true, 0, lm_ops_active(), &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "chunk must be positive") != NULL, "%s", err.message);
    beta[1] = 1.5f;
    cr_assert_eq(lm_delta_rule_f32(&p, false, 0, lm_ops_active(), &err), LM_ERR_ARG);
    beta[1] = 1.0f;
    g[0] = 0.0f;
    cr_assert_eq(lm_delta_rule_f32(&p, false, 0, lm_ops_active(), &err), LM_ERR_DOMAIN);
    g[0] = 1.0f;
    cr_assert_eq(lm_delta_rule_f32(&p, true, 1, lm_ops_active(), &err), LM_OK);
}

/* ---- the bf16 chunked delta rule ------------------------------------------------------------ */

/* The absolute-value recurrence of scripts/kcases/recurrent.py's delta_rule, per head:
 * Sa = g Sa + beta (|v| + g Sa |k^|) |k^|^T from |s0| (or 0), ys_t = Sa_t |q_t|; scale_y =
 * ys + |y|, scale_s = Sa_L + |S_L| (y, s the float64 reference's outputs). Also returns the
 * largest sum over a head of -log g (G of the float32 rule). */
static double delta_abs_scale(const lm_delta_seq_f64 *p, double *scale_y, double *scale_s)
{
    const size_t H = p->heads, L = p->length, dk = p->d_key, dv = p->d_value;
    double *Sa = calloc(dv * dk, sizeof *Sa), *kh = calloc(dk, sizeof *kh);
    double *pa = calloc(dv, sizeof *pa);
    cr_assert(Sa && kh && pa);
    double G = 0.0;
    for (size_t h = 0; h < H; h++) {
        for (size_t i = 0; i < dv * dk; i++)
            Sa[i] = p->s0 ? fabs(p->s0[h * dv * dk + i]) : 0.0;
        double logs = 0.0;
        for (size_t t = 0; t < L; t++) {
            const size_t row = h * L + t;
            const double *k = p->k + row * dk, *q = p->q + row * dk, *v = p->v + row * dv;
            double nrm = 0.0;
            for (size_t c = 0; c < dk; c++)
                nrm += k[c] * k[c];
            for (size_t c = 0; c < dk; c++)
                kh[c] = fabs(k[c]) / sqrt(nrm);
            const double g = p->gate ? p->gate[row] : 1.0, b = p->beta[row];
            logs -= log(g);
            for (size_t j = 0; j < dv; j++) {
                pa[j] = 0.0;
                for (size_t c = 0; c < dk; c++)
                    pa[j] += g * Sa[j * dk + c] * kh[c];
            }
            for (size_t j = 0; j < dv; j++) {
                double ys = 0.0;
                for (size_t c = 0; c < dk; c++) {
                    double *x = &Sa[j * dk + c];
                    *x = g * *x + b * (fabs(v[j]) + pa[j]) * kh[c];
                    ys += *x * fabs(q[c]);
                }
                scale_y[row * dv + j] = ys + fabs(p->y[row * dv + j]);
            }
        }
        G = fmax(G, logs);
        for (size_t i = 0; i < dv * dk; i++)
            scale_s[h * dv * dk + i] = Sa[i] + fabs(p->s_final[h * dv * dk + i]);
    }
    free(Sa), free(kh), free(pa);
    return G;
}

/* The bound of docs/kernels.md ("bf16", the delta rule) above the float32 rule: e (1 + e),
 * e = 3 2^-8 ceil(L / min(chunk, L)). */
static double bf16_delta_rtol(size_t L, size_t chunk)
{
    const size_t C = chunk < L ? chunk : L;
    const double e = 3.0 * 0x1p-8 * (double)((L + C - 1) / C);
    return e * (1.0 + e);
}

typedef struct delta_bf16_case {
    size_t H, L, dk, dv, chunk;
    bool gated, s0;
} delta_bf16_case;

/* The bf16 slot on every path: within the bound of the float64 reference on the rounded
 * inputs; where it widens (every path but avx512bf16, and there the shapes the pair layout
 * does not fit) bit for bit the f32 slot on the widened inputs. Returns the largest
 * |error| / (bf16 rtol * scale) seen on avx512bf16 (0 without it). */
static double check_delta_bf16_case(const delta_bf16_case *c, uint64_t seed)
{
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    const size_t H = c->H, L = c->L, dk = c->dk, dv = c->dv;
    pair q, k, v, beta, g, s0;
    draw_delta(&rng, H, L, dk, dv, false, &q, &k, &v, &beta, &g, &s0);
    uint16_t *q16 = pair_to_bf16(&q), *k16 = pair_to_bf16(&k), *v16 = pair_to_bf16(&v);
    pair y = pair_new(H * L * dv), sf = pair_new(H * dv * dk);
    lm_delta_seq_f64 pd = {H, L, dk, dv, q.d, k.d, v.d, beta.d, c->gated ? g.d : NULL,
                           c->s0 ? s0.d : NULL, y.d, sf.d};
    lm_error err;
    cr_assert_eq(lm_delta_gated_f64_ref(&pd, &err), LM_OK, "%s", err.message);
    double *scale_y = malloc(y.n * sizeof *scale_y), *scale_s = malloc(sf.n * sizeof *scale_s);
    cr_assert(scale_y && scale_s);
    const double G = delta_abs_scale(&pd, scale_y, scale_s);
    const double rtol_f32 = (4.0 * sqrt((double)(L + dk)) + 8.0 + G) * 0x1p-24;
    const double rtol_bf16 = bf16_delta_rtol(L, c->chunk);
    float *y32 = malloc(y.n * sizeof *y32), *s32 = malloc(sf.n * sizeof *s32);
    cr_assert(y32 && s32);
    double worst = 0.0;
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa))
            continue;
        const lm_ops *ops = lm_ops_for((lm_isa)isa);
        const bool dot = isa == LM_ISA_AVX512BF16 && dk % 16 == 0 && dv % 16 == 0;
        lm_delta_seq_f32 pf = {H, L, dk, dv, q.f, k.f, v.f, beta.f, c->gated ? g.f : NULL,
                               c->s0 ? s0.f : NULL, y32, s32, LM_KV_F32, NULL, NULL, NULL};
        cr_assert_eq(lm_delta_rule_f32(&pf, true, c->chunk, ops, &err), LM_OK, "%s",
                     err.message);
        lm_delta_seq_f32 pb = pf;
        pb.q = pb.k = pb.v = NULL;
        pb.dtype = LM_KV_BF16, pb.q16 = q16, pb.k16 = k16, pb.v16 = v16;
        pb.y = y.f, pb.s_final = sf.f;
        cr_assert_eq(lm_delta_rule_f32(&pb, true, c->chunk, ops, &err), LM_OK, "%s",
                     err.message);
        if (!dot) {
            cr_expect(memcmp(y32, y.f, y.n * sizeof *y32) == 0 &&
                          memcmp(s32, sf.f, sf.n * sizeof *s32) == 0,
                      "isa %s H=%zu L=%zu dk=%zu dv=%zu chunk=%zu: the widened bf16 slot "
                      "differs from the f32 slot", lm_isa_name((lm_isa)isa), H, L, dk, dv,
                      c->chunk);
        } else { /* rounded state operands: not the f32 slot's bits (the dot path ran) */
            cr_expect(memcmp(s32, sf.f, sf.n * sizeof *s32) != 0,
                      "isa %s H=%zu L=%zu dk=%zu dv=%zu chunk=%zu: the BF16-dot slot returned "
                      "the f32 slot's state", lm_isa_name((lm_isa)isa), H, L, dk, dv, c->chunk);
        }
        const pair *outs[2] = {&y, &sf};
        const double *scales[2] = {scale_y, scale_s};
        for (int o = 0; o < 2; o++)
            for (size_t i = 0; i < outs[o]->n; i++) {
                const double e = fabs((double)outs[o]->f[i] - outs[o]->d[i]);
                const double bound = (rtol_f32 + rtol_bf16) * scales[o][i] + 1e-30;
                cr_expect(e <= bound, "isa %s H=%zu L=%zu dk=%zu dv=%zu chunk=%zu: %s[%zu] "
                          "|error| %.3g > bound %.3g", lm_isa_name((lm_isa)isa), H, L, dk,
                          dv, c->chunk, o ? "s_final" : "y", i, e, bound);
                if (dot)
                    worst = fmax(worst, e / (rtol_bf16 * scales[o][i] + 1e-30));
            }
    }
    pair *all[] = {&q, &k, &v, &beta, &g, &s0, &y, &sf};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        pair_free(all[i]);
    free(q16), free(k16), free(v16), free(scale_y), free(scale_s), free(y32), free(s32);
    return worst;
}

Test(recurrent, delta_bf16_every_path_within_bound)
{
    static const delta_bf16_case cases[] = {
        {2, 41, 16, 32, 16, true, true}, {2, 41, 16, 32, 7, true, true},
        {1, 100, 64, 64, 32, true, true}, {1, 70, 32, 48, 5, false, true},
        {2, 64, 128, 128, 64, true, true}, {1, 33, 32, 16, 64, false, false},
        /* the fallbacks: d_value 33, odd d_key */
        {2, 41, 16, 33, 7, true, true}, {3, 29, 9, 64, 64, true, false},
    };
    double worst = 0.0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        worst = fmax(worst, check_delta_bf16_case(&cases[i], 7200 + i));
    cr_log_info("bf16 delta rule: largest |error| / (bf16 rtol scale) on avx512bf16: %.3g",
                worst);
}

Test(recurrent, delta_bf16_rejects_bad_input)
{
    /* a NaN or zero bfloat16 key, the recurrent form, missing bf16 arrays */
    enum { H = 1, L = 2, dk = 2, dv = 2 };
    uint16_t q[4], k[4], v[4];
    const float qf[4] = {1, 0, 1, 0}, kf[4] = {1, 0, 0, 1}, vf[4] = {1, 1, 1, 1};
    lm_kv_store(LM_KV_BF16, qf, q, 4), lm_kv_store(LM_KV_BF16, kf, k, 4);
    lm_kv_store(LM_KV_BF16, vf, v, 4);
    float beta[2] = {0.5f, 0.5f}, y[4];
    lm_delta_seq_f32 p = {.heads = H, .length = L, .d_key = dk, .d_value = dv, .beta = beta,
                          .y = y, .dtype = LM_KV_BF16, .q16 = q, .k16 = k, .v16 = v};
    lm_error err;
    cr_assert_eq(lm_delta_rule_f32(&p, true, 2, lm_ops_active(), &err), LM_OK, "%s",
                 err.message);
    cr_assert_eq(lm_delta_rule_f32(&p, false, 0, lm_ops_active(), &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "needs the chunked form") != NULL, "%s", err.message);
    k[2] = 0x7fc0; /* NaN */
    cr_assert_eq(lm_delta_rule_f32(&p, true, 2, lm_ops_active(), &err), LM_ERR_DOMAIN);
    cr_assert(strstr(err.message, "k must have non-zero (finite) norm: head 0, token 1") != NULL,
              "%s", err.message);
    k[2] = 0x8000, k[3] = 0; /* -0, +0 */
    cr_assert_eq(lm_delta_rule_f32(&p, true, 2, lm_ops_active(), &err), LM_ERR_DOMAIN);
    p.k16 = NULL;
    cr_assert_eq(lm_delta_rule_f32(&p, true, 2, lm_ops_active(), &err), LM_ERR_SHAPE);
    cr_assert(strstr(err.message, "bf16") != NULL, "%s", err.message);
    p.k16 = k, p.dtype = LM_KV_F16;
    cr_assert_eq(lm_delta_rule_f32(&p, true, 2, lm_ops_active(), &err), LM_ERR_ARG);
}

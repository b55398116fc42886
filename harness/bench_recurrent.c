/* Bench cases of the recurrent families: the Mamba-1 selective scan (prefill of n_ctx
 * tokens), its one-token decode step (state updated in place), both in either
 * discretization (config disc: "zoh", the exact zero-order hold, or "euler", delta * B),
 * and the causal depthwise convolution. Defaults are the M8 geometry: d_inner 8,192, d_state 16 (pass
 * --d-state 128 for the Mamba-2-like state), conv width 4. Inputs follow the usual
 * initialisation: A[d, n] = -(n + 1) (S4D-real), delta bias in [-4, -2) (steps of about
 * 0.02 to 0.13 after softplus), skip 1. The check recomputes the recurrence in float64. */
#include "bench_util.h"
#include "registry.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- Mamba-1 --------------------------------------------------------------------- */

typedef struct mamba_state {
    lm_ssm_mamba1_f32 p;
    float *x, *delta_raw, *delta_bias, *a, *b, *c, *skip, *z, *y;
    float *h, *h_init; /* decode: the state {B, D, N} and its initial copy */
    bool decode;
} mamba_state;

static void mamba_teardown(void *state)
{
    mamba_state *s = state;
    if (s == NULL)
        return;
    float *all[] = {s->x, s->delta_raw, s->delta_bias, s->a, s->b, s->c,
                    s->skip, s->z, s->y, s->h, s->h_init};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        lm_free(all[i]);
    free(s);
}

static lm_status mamba_setup_common(const lm_bench_config *cfg, bool decode, void **state,
                                    lm_error *err)
{
    if (cfg->d_inner < 1 || cfg->d_state < 1 || cfg->batch < 1 || (!decode && cfg->n_ctx < 1))
        return lm_fail(err, LM_ERR_SHAPE, "mamba1 needs positive d_inner, d_state, batch and "
                                          "n_ctx");
    const bool exact_zoh = cfg->disc[0] == '\0' || strcmp(cfg->disc, "zoh") == 0;
    if (!exact_zoh && strcmp(cfg->disc, "euler") != 0)
        return lm_fail(err, LM_ERR_ARG, "mamba1 disc must be zoh or euler, got '%s'", cfg->disc);
    mamba_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    size_t bsz = (size_t)cfg->batch, len = decode ? 1 : (size_t)cfg->n_ctx;
    size_t d = (size_t)cfg->d_inner, n = (size_t)cfg->d_state;
    uint64_t seed = cfg->seed;
    s->decode = decode;
    s->x = lm_bench_normal_f32(seed, bsz * len * d, 1.0);
    s->delta_raw = lm_bench_normal_f32(seed + 1, bsz * len * d, 0.5);
    s->delta_bias = lm_bench_uniform_f32(seed + 2, d, -4.0, -2.0);
    s->a = lm_alloc(d * n * sizeof(float));
    s->b = lm_bench_normal_f32(seed + 3, bsz * len * n, 1.0);
    s->c = lm_bench_normal_f32(seed + 4, bsz * len * n, 1.0);
    s->skip = lm_alloc(d * sizeof(float));
    s->z = lm_bench_normal_f32(seed + 5, bsz * len * d, 1.0);
    s->y = lm_alloc(bsz * len * d * sizeof(float));
    if (decode) {
        s->h_init = lm_bench_normal_f32(seed + 6, bsz * d * n, 0.1);
        s->h = lm_alloc(bsz * d * n * sizeof(float));
    }
    if (!s->x || !s->delta_raw || !s->delta_bias || !s->a || !s->b || !s->c || !s->skip ||
        !s->z || !s->y || (decode && (!s->h || !s->h_init))) {
        mamba_teardown(s);
        return lm_fail(err, LM_ERR_NOMEM, "cannot allocate a Mamba-1 scan of %zu tokens x %zu "
                                          "channels", len, d);
    }
    for (size_t i = 0; i < d; i++) {
        s->skip[i] = 1.0f;
        for (size_t j = 0; j < n; j++)
            s->a[i * n + j] = -(float)(j + 1);
    }
    if (decode)
        memcpy(s->h, s->h_init, bsz * d * n * sizeof(float));
    s->p = (lm_ssm_mamba1_f32){.batch = bsz, .length = len, .channels = d, .state = n,
                               .x = s->x, .delta_raw = s->delta_raw,
                               .delta_bias = s->delta_bias, .a = s->a, .b = s->b, .c = s->c,
                               .skip = s->skip, .z = s->z, .h0 = decode ? s->h : NULL,
                               .y = s->y, .h_final = decode ? s->h : NULL,
                               .exact_zoh = exact_zoh};
    if (decode) { /* a decoder checks its A once, not at every token (ssm.h, a_checked) */
        lm_status st = lm_ssm_mamba1_check_f32(&s->p, err);
        if (st != LM_OK) {
            mamba_teardown(s);
            return st;
        }
    }
    *state = s;
    return LM_OK;
}

static lm_status scan_setup(const lm_bench_config *c, void **state, lm_error *err)
{
    return mamba_setup_common(c, false, state, err);
}

static lm_status step_setup(const lm_bench_config *c, void **state, lm_error *err)
{
    return mamba_setup_common(c, true, state, err);
}

static lm_status mamba_run(void *state, const lm_ops *ops, lm_error *err)
{
    mamba_state *s = state;
    if (s->decode) /* A was checked at setup */
        return lm_ssm_mamba1_decode_checked_f32(&s->p, ops, err);
    return lm_ssm_mamba1_scan_f32(&s->p, ops, err);
}

/* The float64 recurrence of channel d of batch row b over every token, y_exact {L}, by the
 * family's oracle lm_ssm_mamba1_scan_f64_ref on that channel alone (its x, delta_raw and z
 * columns gathered; b and c shared by every channel). h {N + 4 L + 2 L N} is scratch. NaN
 * when the oracle refuses the inputs, so the check fails rather than passing unchecked. */
static void mamba_channel_f64(const lm_ssm_mamba1_f32 *p, size_t b, size_t d, double *h,
                              double *y_exact)
{
    const size_t n = p->state, dd = p->channels, L = p->length;
    double *x = h + n, *dr = x + L, *z = dr + L, *bb = z + L, *cc = bb + L * n;
    double *yy = cc + L * n;
    double a[LM_SSM_MAX_STATE], bias = (double)p->delta_bias[d], skip = (double)p->skip[d];
    for (size_t j = 0; j < n; j++) {
        h[j] = p->h0 ? (double)p->h0[(b * dd + d) * n + j] : 0.0;
        a[j] = (double)p->a[d * n + j];
    }
    for (size_t t = 0; t < L; t++) {
        const size_t td = (b * L + t) * dd + d, tn = (b * L + t) * n;
        x[t] = (double)p->x[td], dr[t] = (double)p->delta_raw[td], z[t] = (double)p->z[td];
        for (size_t j = 0; j < n; j++)
            bb[t * n + j] = (double)p->b[tn + j], cc[t * n + j] = (double)p->c[tn + j];
    }
    lm_ssm_mamba1_f64 one = {.batch = 1, .length = L, .channels = 1, .state = n, .x = x,
                             .delta_raw = dr, .delta_bias = &bias, .a = a, .b = bb, .c = cc,
                             .skip = &skip, .z = z, .h0 = h, .y = yy, .h_final = NULL,
                             .exact_zoh = p->exact_zoh};
    const bool ok = lm_ssm_mamba1_scan_f64_ref(&one, NULL) == LM_OK;
    for (size_t t = 0; t < L; t++)
        y_exact[t] = ok ? yy[t] : (double)NAN;
}

static lm_status mamba_check(void *state, const lm_ops *ops, double *checksum,
                            double *err_max, lm_error *err)
{
    mamba_state *s = state;
    lm_ssm_mamba1_f32 *p = &s->p;
    size_t bsz = p->batch, len = p->length, d = p->channels, n = p->state;
    if (s->decode) { /* the step moved the state: restart from h_init and step once */
        memcpy(s->h, s->h_init, bsz * d * n * sizeof(float));
        lm_status st = lm_ssm_mamba1_decode_f32(p, ops, err);
        if (st != LM_OK)
            return st;
        memcpy(s->h, s->h_init, bsz * d * n * sizeof(float)); /* reference reads h0 = h */
    }
    *checksum = lm_bench_sum_f32(s->y, bsz * len * d);
    double *h = malloc((n + 4 * len + 2 * len * n) * sizeof *h), *y = malloc(len * sizeof *y);
    if (h == NULL || y == NULL) {
        free(h), free(y);
        return lm_bench_err_skipped(*checksum, err_max, err);
    }
    /* Every channel of a decode step; 16 spread channels of a scan (all L tokens). */
    size_t step = s->decode || d <= 16 ? 1 : d / 16;
    lm_bench_err e = lm_bench_err_start();
    for (size_t b = 0; b < bsz; b++)
        for (size_t ch = 0; ch < d; ch += step) {
            mamba_channel_f64(p, b, ch, h, y);
            for (size_t t = 0; t < len; t++)
                lm_bench_err_add(&e, (double)s->y[(b * len + t) * d + ch], y[t]);
        }
    free(h), free(y);
    if (!lm_bench_err_within(&e, *checksum, 1e-3, err_max))
        return lm_fail(err, LM_ERR_NUMERIC, "mamba1 output differs from the float64 recurrence "
                                            "by %.3g (relative to max |y|)", *err_max);
    return LM_OK;
}

/* 5 d_inner d_state per token (the M8 decode scenario: update 3, readout 2). Bytes: the
 * per-token streams x, delta, z, y (D each) and b, c (N each), A once; a decode step also
 * reads and writes the state. */
static void mamba_cost_common(const lm_bench_config *c, bool decode, double *flops,
                              double *bytes)
{
    double b = (double)c->batch, l = decode ? 1.0 : (double)c->n_ctx;
    double d = (double)c->d_inner, n = (double)c->d_state;
    *flops = 5.0 * b * l * d * n;
    *bytes = 4.0 * (b * l * (4.0 * d + 2.0 * n) + d * n + (decode ? 2.0 * b * d * n : 0.0));
}

static void scan_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    mamba_cost_common(c, false, flops, bytes);
}

static void step_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    mamba_cost_common(c, true, flops, bytes);
}

const lm_bench_case lm_bench_mamba1_scan = {
    .name = "mamba1_scan",
    .summary = "Mamba-1 selective scan (gate, skip; --disc zoh|euler) over n_ctx tokens",
    .role = "prefill_scan",
    .dtypes = "f32",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_SSM | LM_BENCH_USES_BATCH | LM_BENCH_USES_DISC,
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 1024, .d_inner = 8192, .d_state = 16,
                 .batch = 1, .disc = "zoh"},
    .setup = scan_setup,
    .run = mamba_run,
    .check = mamba_check,
    .cost = scan_cost,
    .teardown = mamba_teardown,
};

const lm_bench_case lm_bench_mamba1_step = {
    .name = "mamba1_step",
    .summary = "Mamba-1 decode step: one token, the {d_inner, d_state} state in place "
               "(--disc zoh|euler)",
    .role = "decode_ssm",
    .dtypes = "f32",
    .uses = LM_BENCH_USES_SSM | LM_BENCH_USES_BATCH | LM_BENCH_USES_DISC,
    .defaults = {.dtype = "f32", .bits = 32, .d_inner = 8192, .d_state = 16, .batch = 1,
                 .disc = "zoh"},
    .setup = step_setup,
    .run = mamba_run,
    .check = mamba_check,
    .cost = step_cost,
    .teardown = mamba_teardown,
    .slot_word = "mamba1_scan",
};

/* ---- causal depthwise convolution (width 4) -------------------------------------------- */

enum { CONV_WIDTH = 4 };

typedef struct conv_state {
    lm_conv_causal_f32 p;
    float *x, *weight, *bias, *y;
} conv_state;

static void conv_teardown(void *state)
{
    conv_state *s = state;
    if (s == NULL)
        return;
    lm_free(s->x), lm_free(s->weight), lm_free(s->bias), lm_free(s->y);
    free(s);
}

static lm_status conv_setup(const lm_bench_config *cfg, void **state, lm_error *err)
{
    if (cfg->d_inner < 1 || cfg->batch < 1 || cfg->n_ctx < 1)
        return lm_fail(err, LM_ERR_SHAPE, "conv_causal needs positive d_inner, batch, n_ctx");
    conv_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    size_t b = (size_t)cfg->batch, l = (size_t)cfg->n_ctx, d = (size_t)cfg->d_inner;
    s->x = lm_bench_normal_f32(cfg->seed, b * l * d, 1.0);
    s->weight = lm_bench_normal_f32(cfg->seed + 1, d * CONV_WIDTH, 0.5);
    s->bias = lm_bench_normal_f32(cfg->seed + 2, d, 0.1);
    s->y = lm_alloc(b * l * d * sizeof(float));
    if (!s->x || !s->weight || !s->bias || !s->y) {
        conv_teardown(s);
        return lm_fail(err, LM_ERR_NOMEM, "cannot allocate conv_causal inputs");
    }
    s->p = (lm_conv_causal_f32){.batch = b, .length = l, .channels = d, .width = CONV_WIDTH,
                                .x = s->x, .weight = s->weight, .bias = s->bias, .y = s->y,
                                .apply_silu = true};
    *state = s;
    return LM_OK;
}

static lm_status conv_run(void *state, const lm_ops *ops, lm_error *err)
{
    conv_state *s = state;
    return lm_conv_causal(&s->p, ops, err);
}

static lm_status conv_check(void *state, const lm_ops *ops, double *checksum,
                            double *err_max, lm_error *err)
{
    (void)ops;
    conv_state *s = state;
    const lm_conv_causal_f32 *p = &s->p;
    size_t l = p->length, d = p->channels, k = p->width;
    *checksum = lm_bench_sum_f32(s->y, p->batch * l * d);
    lm_bench_err e = lm_bench_err_start();
    for (size_t b = 0; b < p->batch; b++)
        for (size_t t = 0; t < l; t++)
            for (size_t ch = 0; ch < d; ch += d > 64 ? d / 64 : 1) {
                double u = (double)p->bias[ch];
                for (size_t j = 0; j < k; j++) /* weight[ch, k-1] multiplies token t */
                    if (t + j + 1 >= k)
                        u += (double)p->weight[ch * k + j] *
                             (double)p->x[(b * l + t + j + 1 - k) * d + ch];
                lm_bench_err_add(&e, (double)s->y[(b * l + t) * d + ch], u / (1.0 + exp(-u)));
            }
    if (!lm_bench_err_within(&e, *checksum, 1e-4, err_max))
        return lm_fail(err, LM_ERR_NUMERIC, "conv_causal output differs from the float64 "
                                            "convolution by %.3g", *err_max);
    return LM_OK;
}

static void conv_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    double t = (double)c->batch * (double)c->n_ctx, d = (double)c->d_inner;
    *flops = t * d * (2.0 * CONV_WIDTH + 4.0); /* taps, bias, silu */
    *bytes = 4.0 * (2.0 * t * d + d * (CONV_WIDTH + 1.0));
}

const lm_bench_case lm_bench_conv_causal = {
    .name = "conv_causal",
    .summary = "causal depthwise convolution, width 4, bias + SiLU (the Mamba input conv)",
    .dtypes = "f32",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_SSM | LM_BENCH_USES_BATCH,
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 1024, .d_inner = 8192, .batch = 1},
    .setup = conv_setup,
    .run = conv_run,
    .check = conv_check,
    .cost = conv_cost,
    .teardown = conv_teardown,
};

/* ---- chunked affine scan h_t = a_t h_{t-1} + b_t (kernels/scan) ----------------------
 * n_ctx steps of d_inner independent channels, time cut into chunks of `chunk` rows that
 * the OpenMP team reduces, carries and rescans (the three-phase scan of the M8 notebook). */

typedef struct affine_state {
    float *a, *b, *states, *final;
    size_t steps, width, chunk;
} affine_state;

static void affine_teardown(void *state)
{
    affine_state *s = state;
    if (s == NULL)
        return;
    lm_free(s->a), lm_free(s->b), lm_free(s->states), lm_free(s->final);
    free(s);
}

static lm_status affine_setup(const lm_bench_config *cfg, void **state, lm_error *err)
{
    if (cfg->n_ctx < 1 || cfg->d_inner < 1 || cfg->chunk < 1)
        return lm_fail(err, LM_ERR_SHAPE, "scan_affine needs positive n_ctx, d_inner and chunk");
    affine_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    s->steps = (size_t)cfg->n_ctx;
    s->width = (size_t)cfg->d_inner;
    s->chunk = (size_t)cfg->chunk;
    size_t count = s->steps * s->width;
    s->a = lm_bench_uniform_f32(cfg->seed, count, 0.5, 1.0); /* decays, as exp(delta A) */
    s->b = lm_bench_normal_f32(cfg->seed + 1, count, 1.0);
    s->states = lm_alloc(count * sizeof(float));
    s->final = lm_alloc(s->width * sizeof(float));
    if (!s->a || !s->b || !s->states || !s->final) {
        affine_teardown(s);
        return lm_fail(err, LM_ERR_NOMEM, "cannot allocate an affine scan of %ld x %ld",
                       cfg->n_ctx, cfg->d_inner);
    }
    *state = s;
    return LM_OK;
}

static lm_status affine_run(void *state, const lm_ops *ops, lm_error *err)
{
    affine_state *s = state;
    return lm_scan_affine_f32(s->a, s->b, s->steps, s->width, NULL, s->states, s->final,
                              s->chunk, 0, ops, err);
}

static lm_status affine_check(void *state, const lm_ops *ops, double *checksum,
                            double *err_max, lm_error *err)
{
    (void)ops;
    affine_state *s = state;
    *checksum = lm_bench_sum_f32(s->states, s->steps * s->width);
    lm_bench_err e = lm_bench_err_start();
    size_t stride = s->width > 32 ? s->width / 32 : 1;
    for (size_t c = 0; c < s->width; c += stride) { /* float64 sequential recurrence */
        double h = 0.0;
        for (size_t t = 0; t < s->steps; t++) {
            h = (double)s->a[t * s->width + c] * h + (double)s->b[t * s->width + c];
            lm_bench_err_add(&e, (double)s->states[t * s->width + c], h);
        }
    }
    if (!lm_bench_err_within(&e, *checksum, 1e-4, err_max))
        return lm_fail(err, LM_ERR_NUMERIC, "scan_affine states differ from the float64 "
                                            "recurrence by %.3g", *err_max);
    return LM_OK;
}

static void affine_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    double count = (double)c->n_ctx * (double)c->d_inner;
    *flops = 2.0 * count;         /* one multiply-add per element (the sequential count) */
    *bytes = 3.0 * 4.0 * count;   /* read a, b; write the states */
}

const lm_bench_case lm_bench_scan_affine = {
    .name = "scan_affine",
    .summary = "chunked affine scan h_t = a_t h_{t-1} + b_t (reduce, carry, rescan)",
    .dtypes = "f32",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_SSM | LM_BENCH_USES_CHUNK,
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 4096, .chunk = 1024, .d_inner = 1024,
                 .batch = 1},
    .setup = affine_setup,
    .run = affine_run,
    .check = affine_check,
    .cost = affine_cost,
    .teardown = affine_teardown,
};

/* ---- chunked linear attention (kernels/linear): the lesson's phi = elu + 1, normalized,
 * no gate; heads x head_dim as the attention cases (d_key = d_value = head_dim). The check
 * runs the float64 oracle on the first and the last head ({H, L, d} keeps a head
 * contiguous). dtype bf16 (linear_chunked only): q, k, v drawn in float32, rounded to
 * bfloat16 (q16, k16, v16, what the kernel reads) and the float32 arrays overwritten by the
 * rounded values (what the check's oracle reads). */

typedef struct linear_state {
    lm_linear_f32 p;
    float *q, *k, *v, *y;
    uint16_t *q16, *k16, *v16;
    size_t chunk;
    bool chunked; /* linear_chunked; false: linear_recurrent (chunk unused) */
} linear_state;

static void linear_teardown(void *state)
{
    linear_state *s = state;
    if (s == NULL)
        return;
    lm_free(s->q), lm_free(s->k), lm_free(s->v), lm_free(s->y);
    lm_free(s->q16), lm_free(s->k16), lm_free(s->v16);
    free(s);
}

static lm_status linear_setup_form(const lm_bench_config *cfg, bool chunked, void **state,
                                   lm_error *err)
{
    if (cfg->n_ctx < 1 || cfg->heads < 1 || cfg->head_dim < 1 || (chunked && cfg->chunk < 1))
        return lm_fail(err, LM_ERR_SHAPE, "%s needs positive n_ctx, heads, head_dim%s",
                       chunked ? "linear_chunked" : "linear_recurrent",
                       chunked ? " and chunk" : "");
    linear_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    size_t h = (size_t)cfg->heads, l = (size_t)cfg->n_ctx, d = (size_t)cfg->head_dim;
    s->chunked = chunked;
    s->chunk = chunked ? (size_t)cfg->chunk : 0;
    s->q = lm_bench_normal_f32(cfg->seed, h * l * d, 1.0);
    s->k = lm_bench_normal_f32(cfg->seed + 1, h * l * d, 1.0);
    s->v = lm_bench_normal_f32(cfg->seed + 2, h * l * d, 1.0);
    s->y = lm_alloc(h * l * d * sizeof(float));
    if (!s->q || !s->k || !s->v || !s->y) {
        linear_teardown(s);
        return lm_fail(err, LM_ERR_NOMEM, "cannot allocate linear attention of %ld tokens",
                       cfg->n_ctx);
    }
    s->p = (lm_linear_f32){.heads = h, .length = l, .d_key = d, .d_value = d,
                           .feature = LM_LINEAR_ELU1, .normalize = true,
                           .gate_kind = LM_LINEAR_GATE_NONE, .q = s->q, .k = s->k, .v = s->v,
                           .y = s->y};
    if (strcmp(cfg->dtype, "bf16") == 0) {
        s->q16 = lm_bench_round_bf16(s->q, h * l * d);
        s->k16 = lm_bench_round_bf16(s->k, h * l * d);
        s->v16 = lm_bench_round_bf16(s->v, h * l * d);
        if (s->q16 == NULL || s->k16 == NULL || s->v16 == NULL) {
            linear_teardown(s);
            return lm_fail(err, LM_ERR_NOMEM, "cannot allocate a bf16 linear attention of %ld "
                           "tokens", cfg->n_ctx);
        }
        s->p.dtype = LM_KV_BF16;
        s->p.q16 = s->q16, s->p.k16 = s->k16, s->p.v16 = s->v16;
    }
    *state = s;
    return LM_OK;
}

static lm_status linear_setup(const lm_bench_config *cfg, void **state, lm_error *err)
{
    return linear_setup_form(cfg, true, state, err);
}

static lm_status linear_recurrent_setup(const lm_bench_config *cfg, void **state,
                                        lm_error *err)
{
    return linear_setup_form(cfg, false, state, err);
}

static lm_status linear_run(void *state, const lm_ops *ops, lm_error *err)
{
    linear_state *s = state;
    return lm_linear_attention_f32(&s->p, s->chunked, s->chunk, ops, err);
}

/* Float64 oracle of head `head` alone (its contiguous {L, d} rows) into y {L, d}. */
typedef lm_status (*head_oracle)(const void *params, size_t head, double *y, lm_error *err);

/* The check of the head-major cases `name` ({H, L, d}, d_key = d_value): *checksum over
 * y {heads, per_head}, the oracle on the first and the last head, `tolerance` of the
 * output scale (err_max -1 when the reference could not be computed). */
static lm_status check_end_heads_within(const char *name, const float *y, size_t heads,
                                        size_t per_head, head_oracle oracle,
                                        const void *params, double tolerance,
                                        double *checksum, double *err_max, lm_error *err)
{
    *checksum = lm_bench_sum_f32(y, heads * per_head);
    lm_bench_err e = lm_bench_err_start();
    size_t pick[2] = {0, heads - 1};
    double *exact = malloc(per_head * sizeof *exact);
    lm_status st = exact != NULL ? LM_OK : LM_ERR_NOMEM;
    for (int i = 0; st == LM_OK && i < (heads > 1 ? 2 : 1); i++) {
        st = oracle(params, pick[i], exact, err);
        if (st == LM_OK)
            lm_bench_err_add_f32(&e, y + pick[i] * per_head, exact, per_head);
    }
    free(exact);
    if (st != LM_OK)
        return lm_bench_err_skipped(*checksum, err_max, err);
    if (!lm_bench_err_within(&e, *checksum, tolerance, err_max))
        return lm_fail(err, LM_ERR_NUMERIC, "%s output differs from the float64 recurrence by "
                                            "%.3g", name, *err_max);
    return LM_OK;
}

static lm_status linear_head_f64(const void *params, size_t head, double *y, lm_error *err)
{
    const lm_linear_f32 *p = params;
    size_t per_head = p->length * p->d_key, off = head * per_head;
    double *q = lm_bench_widen(p->q + off, per_head);
    double *k = lm_bench_widen(p->k + off, per_head);
    double *v = lm_bench_widen(p->v + off, per_head);
    lm_status st = LM_ERR_NOMEM;
    if (q && k && v) {
        lm_linear_f64 r = {.heads = 1, .length = p->length, .d_key = p->d_key,
                           .d_value = p->d_value, .feature = p->feature,
                           .normalize = p->normalize, .gate_kind = p->gate_kind, .q = q,
                           .k = k, .v = v, .y = y};
        st = lm_linear_gated_f64_ref(&r, err);
    }
    free(q), free(k), free(v);
    return st;
}

static lm_status linear_check(void *state, const lm_ops *ops, double *checksum,
                            double *err_max, lm_error *err)
{
    (void)ops;
    linear_state *s = state;
    const lm_linear_f32 *p = &s->p;
    /* bf16: the BF16-dot path rounds phi(q), phi(k), the weights, the scaled keys and the
     * state operand (error <= 3 x 2^-8 of the absolute-value scale, which for these
     * normalized rows is about mean |v|, several times max |y|); a sanity bound for gross
     * errors, the contract cases hold the precise one */
    const double tolerance = p->dtype == LM_KV_BF16 ? 5e-2 : 1e-3;
    return check_end_heads_within(s->chunked ? "linear_chunked" : "linear_recurrent", s->y,
                                  p->heads, p->length * p->d_key, linear_head_f64, p,
                                  tolerance, checksum, err_max, err);
}

static void linear_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    double h = (double)c->heads, l = (double)c->n_ctx, d = (double)c->head_dim;
    double chunk = (double)(c->chunk > 0 ? c->chunk : 1);
    /* per token: the state update k v^T and the readout S^T q (2 d^2 each), and the causal
     * half of the intra-chunk scores and weighted values (chunk d each) */
    *flops = h * l * (4.0 * d * d + 2.0 * chunk * d);
    const double in = strcmp(c->dtype, "bf16") == 0 ? 2.0 : 4.0; /* q, k, v element bytes */
    *bytes = (3.0 * in + 4.0) * h * l * d; /* q, k, v read; y written */
}

const lm_bench_case lm_bench_linear_chunked = {
    .name = "linear_chunked",
    .summary = "chunked linear attention, phi = elu + 1, normalized (the lesson's form; "
               "bf16: BF16 dot products where the CPU has them)",
    .role = "prefill_linear",
    .dtypes = "f32,bf16",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_HEADS | LM_BENCH_USES_CHUNK,
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 1024, .chunk = 64, .heads = 32,
                 .kv_heads = 32, .head_dim = 128, .batch = 1},
    .setup = linear_setup,
    .run = linear_run,
    .check = linear_check,
    .cost = linear_cost,
    .teardown = linear_teardown,
};

/* The same problem through the recurrent kernel, token by token (the baseline of the
 * chunked form, as delta_recurrent is of delta_chunked). */
const lm_bench_case lm_bench_linear_recurrent = {
    .name = "linear_recurrent",
    .summary = "linear attention, phi = elu + 1, normalized, recurrent token-by-token form",
    .dtypes = "f32",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_HEADS,
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 1024, .heads = 32, .kv_heads = 32,
                 .head_dim = 128, .batch = 1},
    .setup = linear_recurrent_setup,
    .run = linear_run,
    .check = linear_check,
    .cost = linear_cost,
    .teardown = linear_teardown,
};

/* ---- Mamba-2 SSD (kernels/ssm/driver_ssd.c): prefill (chunked) and the decode step ------
 * d_inner channels as d_inner / 64 heads of head_dim P = 64 (one head of d_inner when 64
 * does not divide it), one group of B/C, state
 * N = d_state (Mamba-2 uses 128). A[h] = -(h mod 8 + 1), dt bias in [-4, -2). The scan is
 * checked on its first and last head against the float64 oracle run on that head alone;
 * the step on every head. */

enum { SSD_HEAD_DIM = 64 };

/* Head width P: 64 when it divides d_inner, else one head of all d_inner channels. */
static size_t ssd_head_dim(long d_inner)
{
    return d_inner % SSD_HEAD_DIM == 0 ? SSD_HEAD_DIM : (size_t)d_inner;
}

/* dtype bf16 (ssd_chunked): x, b, c drawn in float32 and rounded to bfloat16 (x16, b16,
 * c16, what the kernel reads; x, b, c hold the rounded values for the check). */
typedef struct ssd_state {
    lm_ssm_ssd_f32 p;
    float *x, *dt_raw, *dt_bias, *a, *b, *c, *skip, *y, *h, *h_init;
    uint16_t *x16, *b16, *c16;
    size_t chunk;
    bool decode;
    bool recurrent; /* ssd_recurrent: the token-by-token scan, the baseline of ssd_chunked */
} ssd_state;

static void ssd_teardown(void *state)
{
    ssd_state *s = state;
    if (s == NULL)
        return;
    float *all[] = {s->x, s->dt_raw, s->dt_bias, s->a, s->b, s->c, s->skip, s->y, s->h, s->h_init};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        lm_free(all[i]);
    lm_free(s->x16), lm_free(s->b16), lm_free(s->c16);
    free(s);
}

/* The bf16 inputs of an SSD prefill: x, b, c rounded (x16, b16, c16 the kernel's). */
static lm_status ssd_round_bf16(ssd_state *s, lm_error *err)
{
    lm_ssm_ssd_f32 *p = &s->p;
    const size_t rows = p->batch * p->length;
    s->x16 = lm_bench_round_bf16(s->x, rows * p->heads * p->head_dim);
    s->b16 = lm_bench_round_bf16(s->b, rows * p->state);
    s->c16 = lm_bench_round_bf16(s->c, rows * p->state);
    if (s->x16 == NULL || s->b16 == NULL || s->c16 == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "cannot allocate a bf16 SSD scan of %zu tokens",
                       p->length);
    p->dtype = LM_KV_BF16;
    p->x16 = s->x16, p->b16 = s->b16, p->c16 = s->c16;
    p->x = p->b = p->c = NULL;
    return LM_OK;
}

static lm_status ssd_setup_common(const lm_bench_config *cfg, bool decode, void **state,
                                  lm_error *err)
{
    if (cfg->d_inner < 1 || cfg->d_state < 1 || cfg->batch < 1 ||
        (!decode && (cfg->n_ctx < 1 || cfg->chunk < 1)))
        return lm_fail(err, LM_ERR_SHAPE, "ssd needs positive d_inner, d_state, batch, n_ctx "
                                          "and chunk");
    ssd_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    size_t bsz = (size_t)cfg->batch, len = decode ? 1 : (size_t)cfg->n_ctx;
    size_t p_dim = ssd_head_dim(cfg->d_inner);
    size_t heads = (size_t)cfg->d_inner / p_dim, n = (size_t)cfg->d_state;
    s->decode = decode;
    s->chunk = (size_t)(cfg->chunk > 0 ? cfg->chunk : 64);
    s->x = lm_bench_normal_f32(cfg->seed, bsz * len * heads * p_dim, 1.0);
    s->dt_raw = lm_bench_normal_f32(cfg->seed + 1, bsz * len * heads, 0.5);
    s->dt_bias = lm_bench_uniform_f32(cfg->seed + 2, heads, -4.0, -2.0);
    s->a = lm_alloc(heads * sizeof(float));
    s->b = lm_bench_normal_f32(cfg->seed + 3, bsz * len * n, 1.0);
    s->c = lm_bench_normal_f32(cfg->seed + 4, bsz * len * n, 1.0);
    s->skip = lm_alloc(heads * sizeof(float));
    s->y = lm_alloc(bsz * len * heads * p_dim * sizeof(float));
    if (decode) {
        s->h_init = lm_bench_normal_f32(cfg->seed + 5, bsz * heads * p_dim * n, 0.1);
        s->h = lm_alloc(bsz * heads * p_dim * n * sizeof(float));
    }
    if (!s->x || !s->dt_raw || !s->dt_bias || !s->a || !s->b || !s->c || !s->skip || !s->y ||
        (decode && (!s->h || !s->h_init))) {
        ssd_teardown(s);
        return lm_fail(err, LM_ERR_NOMEM, "cannot allocate an SSD scan of %ld tokens",
                       cfg->n_ctx);
    }
    for (size_t h = 0; h < heads; h++) {
        s->a[h] = -(float)(h % 8 + 1);
        s->skip[h] = 1.0f;
    }
    if (decode)
        memcpy(s->h, s->h_init, bsz * heads * p_dim * n * sizeof(float));
    s->p = (lm_ssm_ssd_f32){.batch = bsz, .length = len, .heads = heads, .head_dim = p_dim,
                            .groups = 1, .state = n, .x = s->x, .dt_raw = s->dt_raw,
                            .dt_bias = s->dt_bias, .a = s->a, .b = s->b, .c = s->c,
                            .skip = s->skip, .h0 = decode ? s->h : NULL, .y = s->y,
                            .h_final = decode ? s->h : NULL};
    lm_status st;
    if (strcmp(cfg->dtype, "bf16") == 0 && (st = ssd_round_bf16(s, err)) != LM_OK) {
        ssd_teardown(s);
        return st;
    }
    *state = s;
    return LM_OK;
}

static lm_status ssd_scan_setup(const lm_bench_config *c, void **state, lm_error *err)
{
    return ssd_setup_common(c, false, state, err);
}

static lm_status ssd_step_setup(const lm_bench_config *c, void **state, lm_error *err)
{
    return ssd_setup_common(c, true, state, err);
}

static lm_status ssd_recurrent_setup(const lm_bench_config *c, void **state, lm_error *err)
{
    lm_bench_config one = *c;
    one.chunk = 1; /* not used by the recurrent scan (the sweep writes 0) */
    lm_status st = ssd_setup_common(&one, false, state, err);
    if (st == LM_OK)
        ((ssd_state *)*state)->recurrent = true;
    return st;
}

static lm_status ssd_run(void *state, const lm_ops *ops, lm_error *err)
{
    ssd_state *s = state;
    if (s->decode)
        return lm_ssm_ssd_decode_f32(&s->p, ops, err);
    return lm_ssm_ssd_scan_f32(&s->p, !s->recurrent, s->chunk, ops, err);
}

/* Float64 oracle on head h of batch row 0 alone (heads = 1, the group shared). */
static lm_status ssd_head_f64(const lm_ssm_ssd_f32 *p, size_t h, double *y, lm_error *err)
{
    size_t len = p->length, pd = p->head_dim, n = p->state, heads = p->heads;
    double *x = malloc(len * pd * sizeof *x), *dt = malloc(len * sizeof *dt);
    double *b = malloc(len * n * sizeof *b), *c = malloc(len * n * sizeof *c);
    double *h0 = p->h0 ? malloc(pd * n * sizeof *h0) : NULL;
    double bias = (double)p->dt_bias[h], a = (double)p->a[h], skip = (double)p->skip[h];
    lm_status st = LM_ERR_NOMEM;
    if (x && dt && b && c && (h0 || !p->h0)) {
        for (size_t t = 0; t < len; t++) {
            for (size_t i = 0; i < pd; i++)
                x[t * pd + i] = (double)p->x[(t * heads + h) * pd + i];
            dt[t] = (double)p->dt_raw[t * heads + h];
            for (size_t j = 0; j < n; j++) {
                b[t * n + j] = (double)p->b[t * n + j];
                c[t * n + j] = (double)p->c[t * n + j];
            }
        }
        for (size_t i = 0; h0 && i < pd * n; i++)
            h0[i] = (double)p->h0[h * pd * n + i];
        lm_ssm_ssd_f64 r = {.batch = 1, .length = len, .heads = 1, .head_dim = pd, .groups = 1,
                            .state = n, .x = x, .dt_raw = dt, .dt_bias = &bias, .a = &a,
                            .b = b, .c = c, .skip = &skip, .h0 = h0, .y = y};
        st = lm_ssm_ssd_f64_ref(&r, err);
    }
    free(x), free(dt), free(b), free(c), free(h0);
    return st;
}

static lm_status ssd_check(void *state, const lm_ops *ops, double *checksum,
                            double *err_max, lm_error *err)
{
    ssd_state *s = state;
    lm_ssm_ssd_f32 *p = &s->p;
    size_t len = p->length, pd = p->head_dim, heads = p->heads;
    size_t state_count = p->batch * heads * pd * p->state;
    if (s->decode) { /* restart from h_init, step once, compare from h_init */
        memcpy(s->h, s->h_init, state_count * sizeof(float));
        lm_status st = lm_ssm_ssd_decode_f32(p, ops, err);
        if (st != LM_OK)
            return st;
        memcpy(s->h, s->h_init, state_count * sizeof(float));
    }
    *checksum = lm_bench_sum_f32(s->y, p->batch * len * heads * pd);
    lm_ssm_ssd_f32 ref = *p; /* the float32 (for bf16: rounded) inputs the oracle reads */
    ref.x = s->x, ref.b = s->b, ref.c = s->c;
    double *y = malloc(len * pd * sizeof *y);
    lm_bench_err e = lm_bench_err_start();
    lm_status st = y ? LM_OK : LM_ERR_NOMEM;
    size_t step = s->decode ? 1 : (heads > 1 ? heads - 1 : 1);
    for (size_t h = 0; h < heads && st == LM_OK; h += step) {
        st = ssd_head_f64(&ref, h, y, err);
        for (size_t t = 0; st == LM_OK && t < len; t++)
            lm_bench_err_add_f32(&e, s->y + (t * heads + h) * pd, y + t * pd, pd);
    }
    free(y);
    if (st != LM_OK)
        return lm_bench_err_skipped(*checksum, err_max, err);
    /* bf16: the BF16-dot path rounds its products' float32 operands (error <= about 2^-8 of
     * each term's magnitude); a sanity bound for gross errors, the contract cases hold the
     * precise one */
    const double tolerance = p->dtype == LM_KV_BF16 ? 1.6e-2 : 1e-3;
    if (!lm_bench_err_within(&e, *checksum, tolerance, err_max))
        return lm_fail(err, LM_ERR_NUMERIC, "ssd output differs from the float64 recurrence by "
                                            "%.3g (relative to max |y|)", *err_max);
    return LM_OK;
}

/* Per token: state update and readout 5 d_inner N as the M8 scenario counts a diagonal SSM
 * (the chunked form does more: intra-chunk products of chunk x (N + P) per head). */
static void ssd_cost_common(const lm_bench_config *c, bool decode, double *flops,
                            double *bytes)
{
    double b = (double)c->batch, l = decode ? 1.0 : (double)c->n_ctx;
    double d = (double)c->d_inner, n = (double)c->d_state;
    double heads = d / (double)ssd_head_dim(c->d_inner);
    const double in = strcmp(c->dtype, "bf16") == 0 ? 2.0 : 4.0; /* x, b, c element bytes */
    *flops = 5.0 * b * l * d * n;
    *bytes = in * b * l * (d + 2.0 * n) + 4.0 * (b * l * (d + heads) +
                                                 (decode ? 2.0 * b * d * n : 0.0));
}

static void ssd_scan_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    ssd_cost_common(c, false, flops, bytes);
}

static void ssd_step_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    ssd_cost_common(c, true, flops, bytes);
}

const lm_bench_case lm_bench_ssd_chunked = {
    .name = "ssd_chunked",
    .summary = "Mamba-2 SSD prefill, chunked (d_inner / 64 heads of 64, N = d_state; bf16: "
               "BF16 dot products where the CPU has them)",
    .role = "prefill_ssd",
    .dtypes = "f32,bf16",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_SSM | LM_BENCH_USES_CHUNK | LM_BENCH_USES_BATCH,
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 1024, .chunk = 32, .d_inner = 8192,
                 .d_state = 128, .batch = 1},
    .setup = ssd_scan_setup,
    .run = ssd_run,
    .check = ssd_check,
    .cost = ssd_scan_cost,
    .teardown = ssd_teardown,
};

/* The same prefill through the recurrent kernel, token by token: the baseline the chunked
 * form is measured against (sweep both in one run for a same-run ratio). */
const lm_bench_case lm_bench_ssd_recurrent = {
    .name = "ssd_recurrent",
    .summary = "Mamba-2 SSD prefill, recurrent token-by-token scan (baseline of ssd_chunked)",
    .dtypes = "f32",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_SSM | LM_BENCH_USES_BATCH,
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 1024, .d_inner = 8192, .d_state = 128,
                 .batch = 1},
    .setup = ssd_recurrent_setup,
    .run = ssd_run,
    .check = ssd_check,
    .cost = ssd_scan_cost,
    .teardown = ssd_teardown,
};

const lm_bench_case lm_bench_ssd_step = {
    .name = "ssd_step",
    .summary = "Mamba-2 SSD decode step: one token, the {heads, 64, N} state in place",
    .role = "decode_ssd",
    .dtypes = "f32",
    .uses = LM_BENCH_USES_SSM | LM_BENCH_USES_BATCH,
    .defaults = {.dtype = "f32", .bits = 32, .d_inner = 8192, .d_state = 128, .batch = 1},
    .setup = ssd_step_setup,
    .run = ssd_run,
    .check = ssd_check,
    .cost = ssd_step_cost,
    .teardown = ssd_teardown,
};

/* ---- the gated delta rule, chunked (kernels/delta) ---------------------------------------
 * heads x head_dim (d_key = d_value), beta in [0, 1), decay g in [0.9, 1). Checked on the
 * first and last head against the float64 oracle ({H, L, d} keeps a head contiguous).
 * dtype bf16 (chunked only): q, k, v drawn in float32, rounded to bfloat16 (q16, k16, v16,
 * what the kernel reads) and the float32 arrays overwritten by the rounded values (what
 * the check's float64 oracle reads). */

typedef struct delta_state {
    lm_delta_seq_f32 p;
    float *q, *k, *v, *beta, *gate, *y;
    uint16_t *q16, *k16, *v16;
    size_t chunk;
    bool chunked; /* false: the recurrent form (delta_recurrent), the honest baseline */
} delta_state;

static void delta_teardown(void *state)
{
    delta_state *s = state;
    if (s == NULL)
        return;
    lm_free(s->q), lm_free(s->k), lm_free(s->v), lm_free(s->beta), lm_free(s->gate);
    lm_free(s->y), lm_free(s->q16), lm_free(s->k16), lm_free(s->v16);
    free(s);
}

static lm_status delta_setup_form(const lm_bench_config *cfg, bool chunked, void **state,
                                  lm_error *err)
{
    if (cfg->n_ctx < 1 || cfg->heads < 1 || cfg->head_dim < 1 || (chunked && cfg->chunk < 1))
        return lm_fail(err, LM_ERR_SHAPE, "delta_chunked needs positive n_ctx, heads, head_dim "
                                          "and chunk");
    delta_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory");
    size_t h = (size_t)cfg->heads, l = (size_t)cfg->n_ctx, d = (size_t)cfg->head_dim;
    s->chunk = chunked ? (size_t)cfg->chunk : 1;
    s->chunked = chunked;
    s->q = lm_bench_normal_f32(cfg->seed, h * l * d, 1.0);
    s->k = lm_bench_normal_f32(cfg->seed + 1, h * l * d, 1.0);
    s->v = lm_bench_normal_f32(cfg->seed + 2, h * l * d, 1.0);
    s->beta = lm_bench_uniform_f32(cfg->seed + 3, h * l, 0.0, 1.0);
    s->gate = lm_bench_uniform_f32(cfg->seed + 4, h * l, 0.9, 1.0);
    s->y = lm_alloc(h * l * d * sizeof(float));
    if (!s->q || !s->k || !s->v || !s->beta || !s->gate || !s->y) {
        delta_teardown(s);
        return lm_fail(err, LM_ERR_NOMEM, "cannot allocate a delta rule of %ld tokens",
                       cfg->n_ctx);
    }
    s->p = (lm_delta_seq_f32){.heads = h, .length = l, .d_key = d, .d_value = d, .q = s->q,
                              .k = s->k, .v = s->v, .beta = s->beta, .gate = s->gate,
                              .y = s->y};
    if (strcmp(cfg->dtype, "bf16") == 0) {
        s->q16 = lm_bench_round_bf16(s->q, h * l * d);
        s->k16 = lm_bench_round_bf16(s->k, h * l * d);
        s->v16 = lm_bench_round_bf16(s->v, h * l * d);
        if (!s->q16 || !s->k16 || !s->v16) {
            delta_teardown(s);
            return lm_fail(err, LM_ERR_NOMEM, "cannot allocate a bf16 delta rule of %ld tokens",
                           cfg->n_ctx);
        }
        s->p.dtype = LM_KV_BF16;
        s->p.q16 = s->q16, s->p.k16 = s->k16, s->p.v16 = s->v16;
    }
    *state = s;
    return LM_OK;
}

static lm_status delta_setup(const lm_bench_config *cfg, void **state, lm_error *err)
{
    return delta_setup_form(cfg, true, state, err);
}

static lm_status delta_recurrent_setup(const lm_bench_config *cfg, void **state, lm_error *err)
{
    return delta_setup_form(cfg, false, state, err);
}

static lm_status delta_run(void *state, const lm_ops *ops, lm_error *err)
{
    delta_state *s = state;
    return lm_delta_rule_f32(&s->p, s->chunked, s->chunk, ops, err);
}

static lm_status delta_head_f64(const void *params, size_t head, double *y, lm_error *err)
{
    const lm_delta_seq_f32 *p = params;
    size_t per_head = p->length * p->d_key, off = head * per_head, toff = head * p->length;
    double *q = lm_bench_widen(p->q + off, per_head);
    double *k = lm_bench_widen(p->k + off, per_head);
    double *v = lm_bench_widen(p->v + off, per_head);
    double *beta = lm_bench_widen(p->beta + toff, p->length);
    double *gate = lm_bench_widen(p->gate + toff, p->length);
    lm_status st = LM_ERR_NOMEM;
    if (q && k && v && beta && gate) {
        lm_delta_seq_f64 r = {.heads = 1, .length = p->length, .d_key = p->d_key,
                              .d_value = p->d_value, .q = q, .k = k, .v = v, .beta = beta,
                              .gate = gate, .y = y};
        st = lm_delta_gated_f64_ref(&r, err);
    }
    free(q), free(k), free(v), free(beta), free(gate);
    return st;
}

static lm_status delta_check(void *state, const lm_ops *ops, double *checksum,
                            double *err_max, lm_error *err)
{
    (void)ops;
    delta_state *s = state;
    const lm_delta_seq_f32 *p = &s->p;
    /* bf16: the state products round S_0 and the scaled corrections to bfloat16 (error
     * bound 3 2^-8 of the absolute-value scale per chunk, docs/kernels.md); a sanity bound
     * for gross errors, the contract cases hold the derived one */
    return check_end_heads_within("delta_chunked", s->y, p->heads, p->length * p->d_key,
                                  delta_head_f64, p, p->dtype == LM_KV_BF16 ? 3e-2 : 1e-3,
                                  checksum, err_max, err);
}

static void delta_cost(const lm_bench_config *c, double *flops, double *bytes)
{
    double h = (double)c->heads, l = (double)c->n_ctx, d = (double)c->head_dim;
    double chunk = (double)(c->chunk > 0 ? c->chunk : 1);
    /* per token: S k^ and the rank-1 correction (2 d^2 each), the readout S q (2 d^2), the
     * intra-chunk products and triangular solve (about 3 chunk d) */
    *flops = h * l * (6.0 * d * d + 3.0 * chunk * d);
    const double in = strcmp(c->dtype, "bf16") == 0 ? 2.0 : 4.0; /* q, k, v element bytes */
    *bytes = h * l * (3.0 * in * d + 4.0 * d + 8.0);
}

const lm_bench_case lm_bench_delta_chunked = {
    .name = "delta_chunked",
    .summary = "gated delta rule (DeltaNet), chunked WY form, heads x head_dim (bf16: the state "
               "products on BF16 dot products where the CPU has them)",
    .dtypes = "f32,bf16",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_HEADS | LM_BENCH_USES_CHUNK,
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 1024, .chunk = 64, .heads = 32,
                 .kv_heads = 32, .head_dim = 128, .batch = 1},
    .setup = delta_setup,
    .run = delta_run,
    .check = delta_check,
    .cost = delta_cost,
    .teardown = delta_teardown,
};

/* The same problem through the recurrent kernel, token by token: the baseline the chunked
 * form is measured against (sweep both in one run for a same-run ratio). */
const lm_bench_case lm_bench_delta_recurrent = {
    .name = "delta_recurrent",
    .summary = "gated delta rule (DeltaNet), recurrent token-by-token form (baseline)",
    .dtypes = "f32",
    .uses = LM_BENCH_USES_CTX | LM_BENCH_USES_HEADS,
    .defaults = {.dtype = "f32", .bits = 32, .n_ctx = 1024, .heads = 32, .kv_heads = 32,
                 .head_dim = 128, .batch = 1},
    .setup = delta_recurrent_setup,
    .run = delta_run,
    .check = delta_check,
    .cost = delta_cost,
    .teardown = delta_teardown,
};


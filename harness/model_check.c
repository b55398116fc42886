/* The layer cases of model_check.h, the rule and the comparison. The rule: per token,
 * max |fast - ref| / max(1, max |ref|) over the batch's outputs is at most 8 sqrt(K) u,
 * u = 2^-24, K the float32 additions along the unit's chain (chain_additions below). A
 * quantized cache's mixer decoded by the VNNI kernel adds the most its 16-bit value weights
 * may move x (lm_unit_ref_value_weight_bound) over max(1, max |ref|); projections that
 * round their input to bf16 (bf16 weights on avx512bf16: oneDNN's matmul) add 8 u_bf16,
 * u_bf16 = 2^-9 (lm_unit_x_roundoff); docs/models.md. */
#include "model_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ROOM 8.0

typedef struct layer_case {
    const char *name;
    lm_mixer_kind mixer;
    lm_mlp_kind mlp;
    const char *cache; /* attention's cache format */
    long long contexts[2]; /* tokens held before the first checked step */
    lm_model_spec spec;
} layer_case;

static lm_model_spec base_spec(long long d_model)
{
    lm_model_spec s = {.d_model = d_model, .layers = 1, .vocab = 16, .max_context = 64,
                       .mixer_period = 1, .mlp_period = 1, .mlp = {.d_ff = 80},
                       .moe = {.experts = 6, .active = 2, .d_ff = 40, .shared_d_ff = 24}};
    strcpy(s.name, "tiny");
    return s;
}

static layer_case attention_case(const char *name, const char *cache, long long window,
                                 bool q_gate)
{
    layer_case c = {.name = name, .mixer = LM_MIXER_ATTENTION, .mlp = LM_MLP_DENSE,
                    .cache = cache, .contexts = {5, 37}, .spec = base_spec(64)};
    c.spec.attention.heads = 4;
    c.spec.attention.kv_heads = 2;
    c.spec.attention.head_dim = 16;
    c.spec.attention.window = window;
    c.spec.attention.q_gate = q_gate;
    return c;
}

/* Attention over a quantized cache (kvquant.h; the reference reads its codes, model_ref.c).
 * The cache keeps its newest 32 tokens in float32 (recent) and quantizes a group of 1
 * (INT8, INT4), 32 or 64 (KIVI) tokens once recent + group are held, so at context 37 INT
 * holds 5 tokens as codes and KIVI none (the float rows alone), and at 133 INT holds 101 (a
 * partial 64-token block and 16-token key tile), KIVI 96 (three groups: one and a half
 * blocks) and the 64-token groups 64 (one block), beside 37 or 69 float rows. */
static layer_case quantized_case(const char *name, const char *cache, bool q_gate)
{
    layer_case c = attention_case(name, cache, 0, q_gate);
    c.contexts[0] = 37;
    c.contexts[1] = 133;
    return c;
}

static const char *const case_names[LM_LAYER_CHECK_COUNT] = {
    "attention", "attention q_gate f16", "attention int8 cache", "sliding window 8",
    "mla", "mamba1", "mamba2", "delta", "attention int4 cache", "attention kivi4",
    "attention kivi2", "attn q_gate kivi4g64", "attention kivi2g64"};

/* Case i of case_names (i < LM_LAYER_CHECK_COUNT). */
static layer_case case_at(size_t i)
{
    layer_case c;
    switch (i) {
    case 0: return attention_case(case_names[0], "f32", 0, false);
    case 1: return attention_case(case_names[1], "f16", 0, true);
    case 2: return quantized_case(case_names[2], "int8", false);
    case 3: return attention_case(case_names[3], "bf16", 8, false);
    case 8: return quantized_case(case_names[8], "int4", false);
    case 9: return quantized_case(case_names[9], "kivi4", false);
    case 10: return quantized_case(case_names[10], "kivi2", false);
    case 11: return quantized_case(case_names[11], "kivi4g64", true);
    case 12: return quantized_case(case_names[12], "kivi2g64", false);
    case 4:
        c = (layer_case){.name = case_names[4], .mixer = LM_MIXER_MLA, .mlp = LM_MLP_MOE,
                         .cache = "f32", .contexts = {5, 37}, .spec = base_spec(64)};
        c.spec.mla.heads = 4;
        c.spec.mla.latent = 32;
        c.spec.mla.rope = 16;
        c.spec.mla.nope = 16;
        c.spec.mla.v_dim = 16;
        return c;
    case 5:
        c = (layer_case){.name = case_names[5], .mixer = LM_MIXER_MAMBA1, .mlp = LM_MLP_DENSE,
                         .cache = "f32", .contexts = {5, 37}, .spec = base_spec(48)};
        c.spec.mamba1.d_inner = 96;
        c.spec.mamba1.d_state = 16;
        c.spec.mamba1.d_conv = 4;
        c.spec.mamba1.dt_rank = 6;
        return c;
    case 6:
        c = (layer_case){.name = case_names[6], .mixer = LM_MIXER_MAMBA2, .mlp = LM_MLP_DENSE,
                         .cache = "f32", .contexts = {5, 37}, .spec = base_spec(48)};
        c.spec.mamba2.d_inner = 96;
        c.spec.mamba2.d_state = 16;
        c.spec.mamba2.head_dim = 16;
        c.spec.mamba2.groups = 2;
        c.spec.mamba2.d_conv = 4;
        return c;
    case 7:
    default:
        c = (layer_case){.name = case_names[7], .mixer = LM_MIXER_DELTA, .mlp = LM_MLP_MOE,
                         .cache = "f32", .contexts = {5, 37}, .spec = base_spec(48)};
        c.spec.delta.key_heads = 2;
        c.spec.delta.value_heads = 4;
        c.spec.delta.key_dim = 16;
        c.spec.delta.value_dim = 24;
        c.spec.delta.d_conv = 4;
        return c;
    }
}

const char *lm_layer_check_name(size_t i)
{
    return i < LM_LAYER_CHECK_COUNT ? case_names[i] : NULL;
}

/* The additions behind one output of the unit, summed over its reductions in series: the
 * norm (d), the input projections (d), the mixing sums, the output projection's columns. */
static double chain_additions(const lm_model_spec *s, lm_unit_role role, int kind, long long held)
{
    double d = (double)s->d_model;
    if (role == LM_UNIT_MLP) /* norm, gate/up, down; MoE: plus the experts' sum */
        return d + d + (double)(kind == LM_MLP_DENSE ? s->mlp.d_ff : s->moe.d_ff) +
               (kind == LM_MLP_MOE ? (double)s->moe.experts : 0.0);
    switch ((lm_mixer_kind)kind) {
    case LM_MIXER_ATTENTION: /* q . k, softmax and P V over the held tokens, o */
        return d + d + (double)s->attention.head_dim + 2.0 * (double)held +
               (double)(s->attention.heads * s->attention.head_dim);
    case LM_MIXER_MLA: /* q_nope W_uk, scores over latent + rope, held, W_uv, o */
        return d + d + (double)(s->mla.nope + s->mla.latent + s->mla.rope) + 2.0 * (double)held +
               (double)s->mla.latent + (double)(s->mla.heads * s->mla.v_dim);
    case LM_MIXER_MAMBA1: /* conv, x_proj, dt_proj, C . h, out */
        return d + d + (double)(s->mamba1.d_conv + 2 * s->mamba1.d_inner + s->mamba1.dt_rank +
                                s->mamba1.d_state);
    case LM_MIXER_MAMBA2: /* conv, S C, gated norm, out */
        return d + d + (double)(s->mamba2.d_conv + s->mamba2.d_state + 2 * s->mamba2.d_inner);
    case LM_MIXER_DELTA: /* conv, |k|, S k, S q, head norm, out */
        return d + d + (double)(s->delta.d_conv + 3 * s->delta.key_dim + s->delta.value_dim +
                                s->delta.value_heads * s->delta.value_dim);
    default:
        return 0.0;
    }
}

/* 8 sqrt(K) u for the unit of role at context ctx (a sliding window holds at most its width). */
static double tolerance(const layer_case *c, lm_unit_role role, long long ctx)
{
    long long w = c->spec.attention.window, held = w > 0 && w < ctx ? w : ctx;
    double k = chain_additions(&c->spec, role, role == LM_UNIT_MIXER ? (int)c->mixer : (int)c->mlp,
                               held);
    return ROOM * sqrt(k) * 0x1p-24;
}

/* Normalized max error of fast {n} against ref {n}; *scale = max(1, max |ref|). */
static double normalized_error(const float *fast, const double *ref, size_t n, double *scale)
{
    double e = 0.0, m = 0.0;
    for (size_t i = 0; i < n; i++) {
        e = fmax(e, fabs((double)fast[i] - ref[i]));
        m = fmax(m, fabs(ref[i]));
    }
    *scale = fmax(1.0, m);
    return e / *scale;
}

/* Whether ops decodes a quantized cache of head_dim d with the VNNI kernel (16-bit value
 * weights): the avx512vnni path and the paths built on it; d % 16 != 0 runs scalar. */
static bool vnni_weights(const lm_ops *ops, long long head_dim)
{
    const lm_ops *vnni = lm_ops_for(LM_ISA_AVX512VNNI);
    return vnni != NULL && ops->kvq_decode == vnni->kvq_decode && head_dim % 16 == 0;
}

/* Folds one configuration's error into the unit's result. */
static void record(lm_layer_check_unit *u, const lm_layer_check_point *p)
{
    if (p->error > u->max_error || u->bound == 0.0) {
        u->max_error = p->error;
        u->bound = p->bound;
    }
    if (p->error > p->bound && u->ok) {
        u->ok = false;
        u->failure = *p;
    }
}

/* The unit of role for one configuration and its float64 shadow; *unit and *ref NULL on error. */
static lm_status make_unit(const layer_case *c, lm_unit_role role, lm_weight_dtype w, size_t batch,
                           long long ctx, const lm_ops *ops, lm_unit **unit, lm_unit_ref **ref,
                           lm_error *err)
{
    lm_unit_config cfg = {.spec = &c->spec, .role = role,
                          .kind = role == LM_UNIT_MIXER ? (int)c->mixer : (int)c->mlp,
                          .weights = w, .batch = batch, .ctx = ctx, .seed = 3 + (uint64_t)ctx,
                          .ops = ops};
    *unit = NULL;
    *ref = NULL;
    lm_status st = lm_cache_format_parse(c->cache, &cfg.cache, err);
    if (st == LM_OK)
        st = lm_unit_create(&cfg, unit, err);
    if (st == LM_OK && (st = lm_unit_ref_create(*unit, ref, err)) != LM_OK) {
        lm_unit_free(*unit);
        *unit = NULL;
    }
    return st;
}

/* The tokens of one configuration: both units stepped beside their shadows. */
static lm_status step_layer(const layer_case *c, const lm_ops *ops, lm_unit *mixer,
                            lm_unit_ref *mref, lm_unit *mlp, lm_unit_ref *fref,
                            lm_layer_check_point p, lm_layer_check *out, lm_error *err)
{
    size_t n = p.batch * (size_t)c->spec.d_model;
    float *x = malloc(n * sizeof *x);      /* {batch, d_model} */
    double *xd = malloc(n * sizeof *xd);   /* {batch, d_model} */
    lm_status st = x != NULL && xd != NULL ? LM_OK : lm_fail(err, LM_ERR_NOMEM, "out of memory");
    lm_rng rng;
    lm_rng_seed(&rng, 11 + p.batch);
    /* projections that round their input to bf16 (lm_unit_x_roundoff) add 8 times it */
    const lm_unit_config at = {.weights = p.weights, .batch = p.batch, .ops = ops};
    const double rounding = ROOM * lm_unit_x_roundoff(&at);
    double tol_mixer = tolerance(c, LM_UNIT_MIXER, p.ctx) + rounding;
    double tol_mlp = tolerance(c, LM_UNIT_MLP, p.ctx) + rounding;
    for (p.token = 0; st == LM_OK && p.token < LM_LAYER_CHECK_STEPS; p.token++) {
        for (size_t i = 0; i < n; i++)
            xd[i] = (double)(x[i] = (float)lm_rng_standard_normal(&rng));
        double seconds[LM_COMP_COUNT] = {0};
        if ((st = lm_unit_step(mixer, x, seconds, err)) != LM_OK ||
            (st = lm_unit_ref_step(mref, xd, err)) != LM_OK)
            break;
        double scale;
        p.error = normalized_error(x, xd, n, &scale);
        /* + the VNNI kernel's value-weight rounding, bounded by the reference (model_ref.c) */
        p.bound = tol_mixer + (vnni_weights(ops, c->spec.attention.head_dim)
                                   ? lm_unit_ref_value_weight_bound(mref) / scale : 0.0);
        record(&out->mixer, &p);
        /* the MLP reads what the reference mixer wrote (its own error measured alone) */
        for (size_t i = 0; i < n; i++)
            x[i] = (float)xd[i], xd[i] = (double)x[i];
        if ((st = lm_unit_step(mlp, x, seconds, err)) != LM_OK ||
            (st = lm_unit_ref_step(fref, xd, err)) != LM_OK)
            break;
        p.error = normalized_error(x, xd, n, &scale);
        p.bound = tol_mlp;
        record(&out->mlp, &p);
    }
    free(x);
    free(xd);
    return st;
}

static lm_status check_config(const layer_case *c, lm_layer_check_point p, const lm_ops *ops,
                              lm_layer_check *out, lm_error *err)
{
    lm_unit *mixer = NULL, *mlp = NULL;
    lm_unit_ref *mref = NULL, *fref = NULL;
    lm_status st = make_unit(c, LM_UNIT_MIXER, p.weights, p.batch, p.ctx, ops, &mixer, &mref, err);
    if (st == LM_OK)
        st = make_unit(c, LM_UNIT_MLP, p.weights, p.batch, p.ctx, ops, &mlp, &fref, err);
    if (st == LM_OK)
        st = step_layer(c, ops, mixer, mref, mlp, fref, p, out, err);
    lm_unit_ref_free(mref); /* the references first: they point at their units */
    lm_unit_ref_free(fref);
    lm_unit_free(mixer);
    lm_unit_free(mlp);
    return st;
}

lm_status lm_layer_check_run(size_t i, const lm_ops *ops, lm_layer_check *out, lm_error *err)
{
    if (i >= LM_LAYER_CHECK_COUNT)
        return lm_fail(err, LM_ERR_ARG, "layer case %zu out of range (%d cases)", i,
                       LM_LAYER_CHECK_COUNT);
    lm_status st = lm_ops_check(ops, err);
    if (st != LM_OK)
        return st;
    const layer_case c = case_at(i);
    *out = (lm_layer_check){.name = c.name, .isa = ops->isa, .mixer_kind = c.mixer,
                            .mlp_kind = c.mlp, .mixer = {.ok = true}, .mlp = {.ok = true}};
    static const lm_weight_dtype weights[] = {LM_WEIGHT_F32, LM_WEIGHT_BF16, LM_WEIGHT_INT8};
    static const size_t batches[] = {1, 3};
    for (size_t w = 0; w < 3; w++)
        for (size_t b = 0; b < 2; b++)
            for (size_t n = 0; n < 2; n++) {
                lm_layer_check_point p = {.weights = weights[w], .batch = batches[b],
                                          .ctx = c.contexts[n]};
                lm_error inner;
                if ((st = check_config(&c, p, ops, out, &inner)) != LM_OK)
                    return lm_fail(err, st, "%s (%s weights, batch %zu, ctx %lld, %s): %s",
                                   c.name, lm_weight_dtype_name(p.weights), p.batch, p.ctx,
                                   lm_isa_name(ops->isa), inner.message);
            }
    return LM_OK;
}

lm_status lm_layer_check_all(const lm_ops *ops, lm_layer_check out[LM_LAYER_CHECK_COUNT],
                             lm_error *err)
{
    for (size_t i = 0; i < LM_LAYER_CHECK_COUNT; i++) {
        lm_status st = lm_layer_check_run(i, ops, &out[i], err);
        if (st != LM_OK)
            return st;
    }
    return LM_OK;
}

bool lm_layer_check_ok(const lm_layer_check *c) { return c->mixer.ok && c->mlp.ok; }

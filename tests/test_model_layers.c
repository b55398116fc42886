/* One whole layer of `longmix model` of every mixer kind (mixer unit, then its MLP unit)
 * against the float64 reference of harness/model_ref.c (lm_unit_ref_*) over the same
 * weights (decoded exactly: f32, bf16-rounded, int8 codes times scales) and the same cache
 * and state, on every ISA path this machine runs, at small shapes, batch 1 and 3, context 5
 * and 37, for three tokens in a row (the recurrent state carried in each side's own
 * precision). The rule and the tolerances: docs/models.md, "Correctness of a layer". */
#include "longmix.h"
#include "../harness/model_unit_impl.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The rule: per token, max |fast - ref| / max(1, max |ref|) over the batch's outputs is at
 * most 8 sqrt(K) u, u = 2^-24, K the float32 additions along the unit's chain (the widths
 * of its reductions, chain_additions below). */
#define ROOM 8.0
#define STEPS 3

typedef struct layer_case {
    const char *name;
    lm_mixer_kind mixer;
    lm_mlp_kind mlp;
    const char *cache; /* attention's cache format */
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

static double worst[LM_MIXER_COUNT + 1]; /* the largest normalized error seen, per kind; MLP */

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

static double tolerance(const layer_case *c, lm_unit_role role, long long ctx)
{
    long long w = c->spec.attention.window, held = w > 0 && w < ctx ? w : ctx;
    double k = chain_additions(&c->spec, role, role == LM_UNIT_MIXER ? (int)c->mixer : (int)c->mlp,
                               held);
    return ROOM * sqrt(k) * 0x1p-24;
}

/* Normalized max error of fast {n} against ref {n}. */
static double normalized_error(const float *fast, const double *ref, size_t n)
{
    double e = 0.0, m = 0.0;
    for (size_t i = 0; i < n; i++) {
        e = fmax(e, fabs((double)fast[i] - ref[i]));
        m = fmax(m, fabs(ref[i]));
    }
    return e / fmax(1.0, m);
}

static lm_unit *make_unit(const layer_case *c, lm_unit_role role, lm_weight_dtype w, size_t B,
                          long long ctx, lm_isa isa, lm_unit_ref **ref)
{
    lm_error err;
    lm_unit_config cfg = {.spec = &c->spec, .role = role,
                          .kind = role == LM_UNIT_MIXER ? (int)c->mixer : (int)c->mlp,
                          .weights = w, .batch = B, .ctx = ctx, .seed = 3 + (uint64_t)ctx,
                          .ops = lm_ops_for(isa)};
    cr_assert_eq(lm_cache_format_parse(c->cache, &cfg.cache, &err), LM_OK, "%s", err.message);
    lm_unit *u;
    cr_assert_eq(lm_unit_create(&cfg, &u, &err), LM_OK, "%s: %s", c->name, err.message);
    cr_assert_eq(lm_unit_ref_create(u, ref, &err), LM_OK, "%s: %s", c->name, err.message);
    return u;
}

static void check_layer(const layer_case *c, lm_weight_dtype w, size_t B, long long ctx,
                        lm_isa isa)
{
    lm_unit_ref *mref, *fref;
    lm_unit *mixer = make_unit(c, LM_UNIT_MIXER, w, B, ctx, isa, &mref);
    lm_unit *mlp = make_unit(c, LM_UNIT_MLP, w, B, ctx, isa, &fref);
    size_t d = (size_t)c->spec.d_model;
    double tol_mixer = tolerance(c, LM_UNIT_MIXER, ctx), tol_mlp = tolerance(c, LM_UNIT_MLP, ctx);
    float *x = malloc(B * d * sizeof *x);
    double *xd = malloc(B * d * sizeof *xd);
    lm_rng rng;
    lm_rng_seed(&rng, 11 + B);
    for (int step = 0; step < STEPS; step++) {
        for (size_t i = 0; i < B * d; i++)
            xd[i] = (double)(x[i] = (float)lm_rng_standard_normal(&rng));
        lm_error err;
        double seconds[LM_COMP_COUNT] = {0};
        cr_assert_eq(lm_unit_step(mixer, x, seconds, &err), LM_OK, "%s", err.message);
        cr_assert_eq(lm_unit_ref_step(mref, xd, &err), LM_OK, "%s", err.message);
        double e = normalized_error(x, xd, B * d);
        worst[c->mixer] = fmax(worst[c->mixer], e);
        cr_assert(e <= tol_mixer, "%s %s weights, %s, batch %zu, ctx %lld, token %d: mixer "
                  "error %.3g > %.3g", c->name, lm_weight_dtype_name(w), lm_isa_name(isa), B, ctx,
                  step, e, tol_mixer);
        /* the MLP reads what the reference mixer wrote (its own error measured alone) */
        for (size_t i = 0; i < B * d; i++)
            x[i] = (float)xd[i], xd[i] = (double)x[i];
        cr_assert_eq(lm_unit_step(mlp, x, seconds, &err), LM_OK, "%s", err.message);
        cr_assert_eq(lm_unit_ref_step(fref, xd, &err), LM_OK, "%s", err.message);
        e = normalized_error(x, xd, B * d);
        worst[LM_MIXER_COUNT] = fmax(worst[LM_MIXER_COUNT], e);
        cr_assert(e <= tol_mlp, "%s %s weights, %s, batch %zu, ctx %lld, token %d: %s MLP "
                  "error %.3g > %.3g", c->name, lm_weight_dtype_name(w), lm_isa_name(isa), B, ctx,
                  step, lm_mlp_name(c->mlp), e, tol_mlp);
    }
    lm_unit_free(mixer);
    lm_unit_free(mlp);
    lm_unit_ref_free(mref);
    lm_unit_ref_free(fref);
    free(x);
    free(xd);
}

static void check_case(const layer_case *c)
{
    const size_t batches[] = {1, 3};
    const long long contexts[] = {5, 37};
    for (int w = 0; w < 3; w++)
        for (size_t b = 0; b < 2; b++)
            for (size_t n = 0; n < 2; n++)
                for (int isa = 0; isa < LM_ISA_COUNT; isa++)
                    if (lm_isa_available((lm_isa)isa))
                        check_layer(c, (lm_weight_dtype)w, batches[b], contexts[n], (lm_isa)isa);
    cr_log_info("%s: max normalized error %.3g (mixer, tolerance %.3g at ctx 5, %.3g at 37), "
                "%.3g (%s MLP, tolerance %.3g)", c->name, worst[c->mixer],
                tolerance(c, LM_UNIT_MIXER, 5), tolerance(c, LM_UNIT_MIXER, 37),
                worst[LM_MIXER_COUNT], lm_mlp_name(c->mlp), tolerance(c, LM_UNIT_MLP, 5));
}

static layer_case attention_case(const char *name, const char *cache, long long window,
                                 bool q_gate)
{
    layer_case c = {.name = name, .mixer = LM_MIXER_ATTENTION, .mlp = LM_MLP_DENSE,
                    .cache = cache, .spec = base_spec(64)};
    c.spec.attention.heads = 4;
    c.spec.attention.kv_heads = 2;
    c.spec.attention.head_dim = 16;
    c.spec.attention.window = window;
    c.spec.attention.q_gate = q_gate;
    return c;
}

Test(model_layers, attention_gqa_matches_its_float64_reference)
{
    layer_case c = attention_case("attention", "f32", 0, false);
    check_case(&c);
}

Test(model_layers, attention_with_a_gate_and_an_f16_cache_matches_its_float64_reference)
{
    layer_case c = attention_case("attention q_gate f16", "f16", 0, true);
    check_case(&c);
}

Test(model_layers, attention_over_a_quantized_cache_matches_its_float64_reference)
{
    layer_case c = attention_case("attention int8 cache", "int8", 0, false);
    check_case(&c);
}

Test(model_layers, sliding_window_attention_matches_its_float64_reference)
{
    layer_case c = attention_case("sliding window 8", "bf16", 8, false);
    check_case(&c);
}

Test(model_layers, mla_matches_its_float64_reference)
{
    layer_case c = {.name = "mla", .mixer = LM_MIXER_MLA, .mlp = LM_MLP_MOE, .cache = "f32",
                    .spec = base_spec(64)};
    c.spec.mla.heads = 4;
    c.spec.mla.latent = 32;
    c.spec.mla.rope = 16;
    c.spec.mla.nope = 16;
    c.spec.mla.v_dim = 16;
    check_case(&c);
}

Test(model_layers, mamba1_matches_its_float64_reference)
{
    layer_case c = {.name = "mamba1", .mixer = LM_MIXER_MAMBA1, .mlp = LM_MLP_DENSE,
                    .cache = "f32", .spec = base_spec(48)};
    c.spec.mamba1.d_inner = 96;
    c.spec.mamba1.d_state = 16;
    c.spec.mamba1.d_conv = 4;
    c.spec.mamba1.dt_rank = 6;
    check_case(&c);
}

Test(model_layers, mamba2_matches_its_float64_reference)
{
    layer_case c = {.name = "mamba2", .mixer = LM_MIXER_MAMBA2, .mlp = LM_MLP_DENSE,
                    .cache = "f32", .spec = base_spec(48)};
    c.spec.mamba2.d_inner = 96;
    c.spec.mamba2.d_state = 16;
    c.spec.mamba2.head_dim = 16;
    c.spec.mamba2.groups = 2;
    c.spec.mamba2.d_conv = 4;
    check_case(&c);
}

Test(model_layers, gated_delta_matches_its_float64_reference)
{
    layer_case c = {.name = "delta", .mixer = LM_MIXER_DELTA, .mlp = LM_MLP_MOE,
                    .cache = "f32", .spec = base_spec(48)};
    c.spec.delta.key_heads = 2;
    c.spec.delta.value_heads = 4;
    c.spec.delta.key_dim = 16;
    c.spec.delta.value_dim = 24;
    c.spec.delta.d_conv = 4;
    check_case(&c);
}

Test(model_layers, the_head_has_no_reference)
{
    lm_model_spec s = base_spec(32);
    lm_unit_config cfg = {.spec = &s, .role = LM_UNIT_HEAD, .weights = LM_WEIGHT_F32,
                          .batch = 1, .ctx = 1, .seed = 1, .ops = lm_ops_active()};
    lm_error err;
    lm_unit *u;
    lm_unit_ref *r;
    cr_assert_eq(lm_unit_create(&cfg, &u, &err), LM_OK, "%s", err.message);
    cr_assert_eq(lm_unit_ref_create(u, &r, &err), LM_ERR_ARG);
    cr_assert_str_eq(err.message, "the LM head unit has no float64 reference");
    cr_assert_null(r);
    lm_unit_free(u);
}

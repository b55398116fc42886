/* One whole layer of `longmix model` of every mixer kind (mixer unit, then its MLP unit)
 * against its float64 reference, on every ISA path this machine runs: the cases, the rule
 * and the comparison are harness/model_check.c's (lm_layer_check_run; the rule and the
 * tolerances: docs/models.md, "Correctness of a layer"). */
#include "longmix.h"
#include "../harness/model_check.h"

#include <criterion/criterion.h>
#include <string.h>

/* ceiling: the largest bound the case may report (the rule's at these shapes is below 1.1e-5;
 * the VNNI kernel's value-weight term adds to a quantized cache's mixer, the rounding of
 * projections' inputs to bf16 to every unit on the avx512bf16 path) */
static void assert_unit(const lm_layer_check *r, const char *unit, const lm_layer_check_unit *u,
                        double ceiling)
{
    const lm_layer_check_point *f = &u->failure;
    cr_assert(u->ok, "%s %s weights, %s, batch %zu, ctx %lld, token %d: %s error %.3g > %.3g",
              r->name, lm_weight_dtype_name(f->weights), lm_isa_name(r->isa), f->batch, f->ctx,
              f->token, unit, f->error, f->bound);
    cr_assert(u->max_error >= 0.0 && u->max_error <= u->bound, "%s %s %s: max %.3g, bound %.3g",
              r->name, lm_isa_name(r->isa), unit, u->max_error, u->bound);
    /* the bound of the rule at the cases' shapes: docs/models.md */
    cr_assert(u->bound > 3e-6 && u->bound < ceiling, "%s %s bound %.3g", r->name, unit, u->bound);
}

/* Whether path isa decodes quantized caches with the VNNI kernel (16-bit value weights). */
static bool vnni_kernel(lm_isa isa)
{
    const lm_ops *vnni = lm_ops_for(LM_ISA_AVX512VNNI);
    return vnni != NULL && lm_ops_for(isa)->kvq_decode == vnni->kvq_decode;
}

/* Case `name` on every available path; each result within its bound. quantized: attention
 * over a quantized cache. */
static void check_case_of(const char *name, lm_mixer_kind mixer, lm_mlp_kind mlp, bool quantized)
{
    size_t i = 0;
    while (lm_layer_check_name(i) != NULL && strcmp(lm_layer_check_name(i), name) != 0)
        i++;
    cr_assert_not_null(lm_layer_check_name(i), "no layer case '%s'", name);
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa))
            continue;
        lm_layer_check r;
        lm_error err;
        cr_assert_eq(lm_layer_check_run(i, lm_ops_for((lm_isa)isa), &r, &err), LM_OK, "%s",
                     err.message);
        cr_assert_str_eq(r.name, name);
        cr_assert_eq(r.isa, (lm_isa)isa);
        cr_assert_eq(r.mixer_kind, mixer, "%s", name);
        cr_assert_eq(r.mlp_kind, mlp, "%s", name);
        /* bf16 weights at batch 3 on a path that rounds the projections' input to bf16 */
        const lm_unit_config bf16 = {.weights = LM_WEIGHT_BF16, .batch = 3,
                                     .ops = lm_ops_for((lm_isa)isa)};
        const double rounding = 8.0 * lm_unit_x_roundoff(&bf16);
        assert_unit(&r, "mixer", &r.mixer,
                    (quantized && vnni_kernel((lm_isa)isa) ? 2e-4 : 1.1e-5) + rounding);
        assert_unit(&r, lm_mlp_name(mlp), &r.mlp, 1.1e-5 + rounding);
        cr_assert(lm_layer_check_ok(&r));
        cr_log_info("%s %s: max normalized error %.3g (mixer, bound %.3g), %.3g (%s MLP, bound "
                    "%.3g)", name, lm_isa_name((lm_isa)isa), r.mixer.max_error, r.mixer.bound,
                    r.mlp.max_error, lm_mlp_name(mlp), r.mlp.bound);
    }
}

static void check_case(const char *name, lm_mixer_kind mixer, lm_mlp_kind mlp)
{
    check_case_of(name, mixer, mlp, false);
}

Test(model_layers, attention_gqa_matches_its_float64_reference)
{
    check_case("attention", LM_MIXER_ATTENTION, LM_MLP_DENSE);
}

Test(model_layers, attention_with_a_gate_and_an_f16_cache_matches_its_float64_reference)
{
    check_case("attention q_gate f16", LM_MIXER_ATTENTION, LM_MLP_DENSE);
}

Test(model_layers, attention_over_an_int8_cache_matches_its_float64_reference)
{
    check_case_of("attention int8 cache", LM_MIXER_ATTENTION, LM_MLP_DENSE, true);
}

Test(model_layers, attention_over_an_int4_cache_matches_its_float64_reference)
{
    check_case_of("attention int4 cache", LM_MIXER_ATTENTION, LM_MLP_DENSE, true);
}

Test(model_layers, attention_over_kivi_caches_matches_its_float64_reference)
{
    check_case_of("attention kivi4", LM_MIXER_ATTENTION, LM_MLP_DENSE, true);
    check_case_of("attention kivi2", LM_MIXER_ATTENTION, LM_MLP_DENSE, true);
}

Test(model_layers, attention_over_kivi_caches_of_64_token_groups_matches_its_float64_reference)
{
    check_case_of("attn q_gate kivi4g64", LM_MIXER_ATTENTION, LM_MLP_DENSE, true);
    check_case_of("attention kivi2g64", LM_MIXER_ATTENTION, LM_MLP_DENSE, true);
}

Test(model_layers, sliding_window_attention_matches_its_float64_reference)
{
    check_case("sliding window 8", LM_MIXER_ATTENTION, LM_MLP_DENSE);
}

Test(model_layers, mla_matches_its_float64_reference)
{
    check_case("mla", LM_MIXER_MLA, LM_MLP_MOE);
}

Test(model_layers, mamba1_matches_its_float64_reference)
{
    check_case("mamba1", LM_MIXER_MAMBA1, LM_MLP_DENSE);
}

Test(model_layers, mamba2_matches_its_float64_reference)
{
    check_case("mamba2", LM_MIXER_MAMBA2, LM_MLP_DENSE);
}

Test(model_layers, gated_delta_matches_its_float64_reference)
{
    check_case("delta", LM_MIXER_DELTA, LM_MLP_MOE);
}

Test(model_layers, the_table_covers_every_mixer_kind_and_refuses_what_is_past_it)
{
    bool seen[LM_MIXER_COUNT] = {false};
    lm_layer_check all[LM_LAYER_CHECK_COUNT];
    lm_error err;
    cr_assert_eq(lm_layer_check_all(lm_ops_for(LM_ISA_SCALAR), all, &err), LM_OK, "%s",
                 err.message);
    for (size_t i = 0; i < LM_LAYER_CHECK_COUNT; i++) {
        cr_assert_str_eq(all[i].name, lm_layer_check_name(i));
        cr_assert(lm_layer_check_ok(&all[i]), "%s", all[i].name);
        seen[all[i].mixer_kind] = true;
    }
    for (int k = 0; k < LM_MIXER_COUNT; k++)
        cr_assert(seen[k], "no layer case of mixer %s", lm_mixer_name((lm_mixer_kind)k));
    cr_assert_null(lm_layer_check_name(LM_LAYER_CHECK_COUNT));
    lm_layer_check r;
    cr_assert_eq(lm_layer_check_run(LM_LAYER_CHECK_COUNT, lm_ops_for(LM_ISA_SCALAR), &r, &err),
                 LM_ERR_ARG);
    cr_assert_str_eq(err.message, "layer case 13 out of range (13 cases)");
    cr_assert_eq(lm_layer_check_run(0, NULL, &r, &err), LM_ERR_ARG);
}

Test(model_layers, the_head_has_no_reference)
{
    lm_model_spec s = {.d_model = 32, .layers = 1, .vocab = 16, .max_context = 64,
                       .mixer_period = 1, .mlp_period = 1, .mlp = {.d_ff = 80},
                       .moe = {.experts = 6, .active = 2, .d_ff = 40, .shared_d_ff = 24}};
    strcpy(s.name, "tiny");
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

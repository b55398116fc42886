/* The correctness check of `longmix model`'s layers (docs/models.md, "Correctness of a
 * layer"): one whole layer of each kind (its mixer unit, then its MLP unit fed the reference
 * mixer's output) stepped beside its float64 reference (model_unit.h, lm_unit_ref_*) on one
 * ISA path, at small shapes: f32, bf16 and int8 weights, batch 1 and 3, context 5 and 37
 * (the quantized caches 37 and 133, so that every format holds codes), three tokens in a row. Run by tests/test_model_layers.c and `longmix model --check` (the
 * NEON path under qemu in make test-neon). Library code: errors are values, nothing printed. */
#ifndef LONGMIX_MODEL_CHECK_H
#define LONGMIX_MODEL_CHECK_H

#include "model_unit.h"

/* The layer cases (attention f32 / q-gate f16 / int8 cache / sliding window, MLA + MoE,
 * Mamba-1, Mamba-2, delta + MoE, then attention over the int4, kivi4, kivi2, kivi4g64 (with
 * the q gate) and kivi2g64 caches). */
#define LM_LAYER_CHECK_COUNT 13
/* Tokens stepped in a row per configuration. */
#define LM_LAYER_CHECK_STEPS 3

/* One configuration of a case: the unit stepped at these settings, its error there. */
typedef struct lm_layer_check_point {
    lm_weight_dtype weights;
    size_t batch;
    long long ctx;
    int token;    /* 0 .. LM_LAYER_CHECK_STEPS - 1 */
    double error; /* max |fast - ref| / max(1, max |ref|) over the batch's outputs */
    double bound; /* 8 sqrt(K) u for this unit at this context (a quantized cache's mixer on
                   * the VNNI kernel: plus its value weights' rounding, model_check.c) */
} lm_layer_check_point;

/* One unit (the mixer or the MLP) of a case over every configuration. */
typedef struct lm_layer_check_unit {
    double max_error;              /* the largest normalized error seen */
    double bound;                  /* the bound of the configuration where it was seen */
    bool ok;                       /* every configuration within its own bound */
    lm_layer_check_point failure;  /* when !ok: the first configuration over its bound */
} lm_layer_check_unit;

typedef struct lm_layer_check {
    const char *name; /* the case, e.g. "attention int8 cache" */
    lm_isa isa;
    lm_mixer_kind mixer_kind;
    lm_mlp_kind mlp_kind;
    lm_layer_check_unit mixer, mlp;
} lm_layer_check;

/* The name of case i (0 <= i < LM_LAYER_CHECK_COUNT), NULL past the end. */
const char *lm_layer_check_name(size_t i);

/* Runs case i on the path ops (lm_ops_for(isa)) over every configuration into *out. A
 * result over its bound is not an error: LM_OK with out->mixer.ok or out->mlp.ok false.
 * LM_ERR_ARG for i out of range or ops not a dispatch table; LM_ERR_NOMEM; the statuses
 * of the unit and reference steps (the message names the case). About 100 KiB at a time. */
lm_status lm_layer_check_run(size_t i, const lm_ops *ops, lm_layer_check *out, lm_error *err);

/* Every case on the path ops: out[0 .. LM_LAYER_CHECK_COUNT). Stops at the first error. */
lm_status lm_layer_check_all(const lm_ops *ops, lm_layer_check out[LM_LAYER_CHECK_COUNT],
                             lm_error *err);

/* Whether both units of a case passed. */
bool lm_layer_check_ok(const lm_layer_check *c);

#endif

/* One measured unit of a model's decode step: a mixer layer (norm, projections, the
 * mixing kernel, output projection), an MLP layer (dense SwiGLU or MoE at the experts a
 * batch reaches), or the LM head with the embedding lookup, at full size for a batch of
 * sequences each holding n tokens of context. A unit owns its weights (synthetic, from
 * lm_rng), caches and state; the runner makes several copies so weights stream from
 * memory as they do in the whole model. Library code: errors are values. */
#ifndef LONGMIX_MODEL_UNIT_H
#define LONGMIX_MODEL_UNIT_H

#include "model_spec.h"

typedef enum lm_model_component {
    LM_COMP_PROJ = 0, /* the mixer's dense projections (and its norm) */
    LM_COMP_MIXING,   /* attention / SSM / delta kernel, convolution, gates */
    LM_COMP_MLP,      /* MLP or MoE (router, experts, shared expert) */
    LM_COMP_HEAD,     /* final norm, LM head, embedding lookup */
    LM_COMP_COUNT
} lm_model_component;

const char *lm_component_name(lm_model_component c);

typedef enum lm_unit_role { LM_UNIT_MIXER = 0, LM_UNIT_MLP, LM_UNIT_HEAD } lm_unit_role;

typedef struct lm_unit_config {
    const lm_model_spec *spec;
    lm_unit_role role;
    int kind;                /* lm_mixer_kind or lm_mlp_kind; ignored for the head */
    lm_weight_dtype weights;
    lm_cache_format cache;
    size_t batch;
    long long ctx;           /* tokens already in each sequence's cache (decode) */
    long long prompt;        /* > 0: a prefill unit, each sequence's prompt of that many
                              * tokens at once (ctx ignored); 0: a decode unit */
    uint64_t seed;
    const lm_ops *ops;
} lm_unit_config;

/* What one unit holds and reads per step. */
typedef struct lm_unit_bytes {
    double weights_read; /* weights read per step (MoE: the experts the batch reaches) */
    double cache;        /* KV / latent rows read per step, the whole batch */
    double state;        /* recurrent state and convolution tails, the whole batch */
    double alloc;        /* everything the unit allocates */
} lm_unit_bytes;

/* The bytes of a unit, computed from the shapes without allocating. */
void lm_unit_bytes_of(const lm_unit_config *cfg, lm_unit_bytes *out);
/* What a unit's work and memory depend on besides the weights dtype, the cache format,
 * the seed and the ISA path: role, kind, batch, d_model, the prompt (0 for decode), the
 * shapes of its section(s) of the spec, and for decode the tokens an attention or MLA layer
 * holds (a sliding window holds min(ctx, window)), for prefill an attention layer's window.
 * Two configurations with equal signatures build the same unit, whatever their models are
 * called, so a run measures it once (Llama's and Mistral's MLP, Mistral's attention past
 * its window). Unused entries are 0. */
#define LM_UNIT_SIGNATURE_LEN 13
void lm_unit_signature(const lm_unit_config *cfg, long long out[LM_UNIT_SIGNATURE_LEN]);
/* True when a decode unit's projections run through oneDNN's matmul (lm_gemm, packed once
 * per unit) instead of longmix's own GEMV (lm_dense_apply): bf16 weights on the avx512bf16
 * path of a build with oneDNN, where the library read 70-100 % of the stream at the
 * decode shapes against the own kernel's 40-73 % (docs/dependencies.md, "The decode
 * projections"). Prefill units always use lm_gemm. */
bool lm_unit_decode_gemm(const lm_unit_config *cfg);
/* The relative rounding a decode unit's projections give their input before multiplying:
 * 2^-9 where x is rounded to bf16 (lm_unit_decode_gemm, or lm_dense_x_roundoff of its
 * kernel), else 0. Each output moves by at most this times sum |W x| beyond the float32
 * sums' own error. */
double lm_unit_x_roundoff(const lm_unit_config *cfg);
/* The MoE experts a batch reaches under uniform routing: ceil(E (1 - (1 - k/E)^B)). */
long long lm_moe_experts_reached(long long experts, long long active, size_t batch);

typedef struct lm_unit lm_unit;

/* Builds a unit (weights, caches filled with n tokens, state). A prefill unit (prompt > 0)
 * has no cache: its projections are lm_gemm products over batch x prompt rows (the
 * weights packed once, the plain copy dropped; the LM head stays a GEMV over the last
 * token of each sequence), and its activations are {batch, prompt, width}.
 * LM_ERR_NOMEM, LM_ERR_SHAPE, and lm_gemm_create's statuses. */
lm_status lm_unit_create(const lm_unit_config *cfg, lm_unit **out, lm_error *err);
void lm_unit_free(lm_unit *u);
/* One decode step, or for a prefill unit the whole prompt: x {batch, d_model} (prefill:
 * {batch, prompt, d_model}) in and out (the residual stream; the head leaves it unchanged
 * and writes logits inside). Adds the seconds of each component to seconds[]. */
lm_status lm_unit_step(lm_unit *u, float *x, double seconds[LM_COMP_COUNT], lm_error *err);
/* Rows of the unit's residual stream: batch, or batch x prompt for a prefill unit. */
size_t lm_unit_rows(const lm_unit_config *cfg);
/* Seconds and flops (2 m n k each) of the unit's lm_gemm products since the last call,
 * which resets them (prefill units; zeros for decode). */
void lm_unit_gemm_take(lm_unit *u, double *seconds, double *flops);

/* ---- float64 reference (harness/model_ref.c) ------------------------------------------
 * A shadow of a unit in float64: its weights decoded exactly (lm_dense_weight: what the fast
 * path multiplies, bf16-rounded or int8 codes times scales), its KV / latent cache and its
 * recurrent state and convolution tails copied as they are now. Stepping the shadow is one
 * decode step of the same layer in float64, in the order of model_step.c, with the state
 * updated in the shadow: stepping unit and shadow side by side compares every step. Mixer
 * and MLP units (dense and MoE); the LM head has none (LM_ERR_ARG). */
typedef struct lm_unit_ref lm_unit_ref;

/* Copies u now (call it before stepping u). The copy keeps a pointer to u for its shapes:
 * step it only while u lives; freeing it needs nothing of u. LM_ERR_NOMEM, LM_ERR_ARG for
 * a head unit. */
lm_status lm_unit_ref_create(const lm_unit *u, lm_unit_ref **out, lm_error *err);
void lm_unit_ref_free(lm_unit_ref *r);
/* One decode step in float64: x {batch, d_model} in and out (the residual stream).
 * Statuses of the kernel references it calls (LM_ERR_NONFINITE, LM_ERR_DOMAIN, ...).
 * Attention over a quantized cache reads the cache's codes and parameters as stored and
 * takes the rounding of the decode's int8 query codes from the unit's float32 query of the
 * same token (model_ref.c): step the shadow after lm_unit_step of that token. */
lm_status lm_unit_ref_step(lm_unit_ref *r, double *x, lm_error *err);
/* Attention over a quantized cache: after a step, the most the VNNI decode kernel's 16-bit
 * value weights (kvquant.h, LM_KVQ_WEIGHT_LEVELS) may move one output of the residual stream,
 * max over the batch's outputs of |W_o| times lm_kvq_decode_f64_ref's weight_bound (absolute);
 * 0 for every other unit. */
double lm_unit_ref_value_weight_bound(const lm_unit_ref *r);

#endif

/* Latent KV attention (lesson section 6, DeepSeek-V2's multi-head latent attention
 * without the rotary key): each token is cached as one latent c = x W_down of d_latent
 * numbers; keys and values are rebuilt as c W_uk and c W_uv for every head, or the
 * up-projections are absorbed into the query and the output so K and V are never built:
 *   q . (c W_uk) = (q W_uk^T) . c,   sum_j w_j (c_j W_uv) = (sum_j w_j c_j) W_uv. */
#ifndef LONGMIX_LATENT_H
#define LONGMIX_LATENT_H

#include "lm_core.h"
#include "lm_ops.h"

/* Cache per token: layers * (latent_dim + rope_dim) * bits / 8 bytes (floor).
 * layers, latent_dim, bits positive; rope_dim >= 0. LM_ERR_ARG names the argument. */
lm_status lm_latent_kv_bytes_per_token(long long layers, long long latent_dim,
                                       long long rope_dim, long long bits, long long *bytes,
                                       lm_error *err);

/* The worked example for one token. x {d_model}, w_down {d_model, d_latent},
 * w_uk {d_latent, width}, q {width}; outputs latent {d_latent} = x W_down,
 * key {width} = latent W_uk, q_latent {d_latent} = q W_uk^T, *score = q . key,
 * *absorbed_score = q_latent . latent. */
lm_status lm_latent_worked_example(const double *x, const double *w_down, const double *w_uk,
                                   const double *q, size_t d_model, size_t d_latent,
                                   size_t width, double *latent, double *key, double *q_latent,
                                   double *score, double *absorbed_score, lm_error *err);

/* A latent attention layer with random weights. Owns its four matrices (lm_alloc). */
typedef struct lm_latent_layer {
    size_t d_model, n_heads, d_head, d_latent;
    double *w_q;    /* {d_model, n_heads * d_head} */
    double *w_down; /* {d_model, d_latent} */
    double *w_uk;   /* {d_latent, n_heads * d_head} */
    double *w_uv;   /* {d_latent, n_heads * d_head} */
} lm_latent_layer;

/* Draws the weights from default_rng(seed) in the lesson's order (C order fills):
 * W_q = normal(0, 1/sqrt(d_model)), W_down = normal(0, 1/sqrt(d_model)),
 * W_uk = normal(0, 1/sqrt(d_latent)), W_uv = normal(0, 1/sqrt(d_latent)), each value
 * scale * standard_normal. Every size positive (LM_ERR_ARG names it). Free with
 * lm_latent_layer_free even after a failure. */
lm_status lm_latent_layer_init(lm_latent_layer *layer, size_t d_model, size_t n_heads,
                               size_t d_head, size_t d_latent, uint64_t seed, lm_error *err);
void lm_latent_layer_free(lm_latent_layer *layer);

/* c {n, d_latent} = x {n, d_model} W_down: the whole KV cache of these tokens. */
lm_status lm_latent_compress_f64_ref(const lm_latent_layer *layer, const double *x, size_t n,
                                     double *c, lm_error *err);

/* Causal attention the direct way: Q = x W_q, K = c W_uk, V = c W_uv split into heads,
 * softmax(Q K^T / sqrt(d_head)) V per head, heads side by side. out {n, n_heads * d_head}. */
lm_status lm_latent_attend_f64_ref(const lm_latent_layer *layer, const double *x,
                                   const double *c, size_t n, double *out, lm_error *err);

/* The same output without building K or V: per head, q_latent = q W_uk_h^T, scores
 * q_latent . c_j / sqrt(d_head), mixed = softmax(scores) c, out_h = mixed W_uv_h. */
lm_status lm_latent_attend_absorbed_f64_ref(const lm_latent_layer *layer, const double *x,
                                            const double *c, size_t n, double *out,
                                            lm_error *err);

/* ---- DeepSeek-V2 multi-head latent attention with the decoupled rotary key -----------
 * (ref_mla.c oracle, mla.c fast drivers). Geometry lm_mla_shape: `heads` query heads, each
 * token cached as one row ckv {latent + rope} = [c (latent), k_rope (rope, shared by all
 * heads)]; W_uk {latent, heads * nope}, W_uv {latent, heads * v_dim}. A query row per head
 * is q {nope + rope} = [q_nope, q_rope]. Head h scores key j as
 *   s = (q_nope . (c_j W_uk_h) + q_rope . k_rope_j) / sqrt(nope + rope)
 * and outputs o_h = sum_j softmax_j(s) (c_j W_uv_h) {v_dim}. DeepSeek-V2: heads 128,
 * latent 512, rope 64, nope 128, v_dim 128. */
typedef struct lm_mla_shape {
    size_t heads, latent, rope, nope, v_dim;
} lm_mla_shape;

/* LM_ERR_SHAPE unless every size is positive (rope may be 0) and v_dim <= nope + rope (the
 * expanded path stores V in rows of nope + rope). */
lm_status lm_mla_check(const lm_mla_shape *shape, lm_error *err);

/* Float64 oracle, written the expanded way. q {n_q, heads, nope + rope}, ckv {n, latent +
 * rope}, w_uk {latent, heads nope}, w_uv {latent, heads v_dim}, o {n_q, heads, v_dim}.
 * causal: query i reads keys 0..i (n_q = n, prefill); otherwise every query reads all n
 * keys (decode). LM_ERR_SHAPE, LM_ERR_NONFINITE, LM_ERR_NOMEM. */
lm_status lm_mla_attend_f64_ref(const lm_mla_shape *shape, const double *q, const double *ckv,
                                const double *w_uk, const double *w_uv, size_t n_q, size_t n,
                                bool causal, double *o, lm_error *err);

/* Fast paths (float32, dispatched attention kernels of `ops`, NULL = active; OpenMP inside).
 * Absorbed: q_nope is folded through W_uk into latent space, attention runs as MQA over the
 * cached rows themselves (keys = values = ckv rows, one read shared by every head), and the
 * mixed latent goes out through W_uv. Expanded: K_h = [c W_uk_h, k_rope], V_h = c W_uv_h are
 * built for every head and attention runs as MHA over them: prefill expands the whole
 * sequence (lm_mla_expand) then runs causal MHA; decode rebuilds K_h, V_h block by block of
 * 128 tokens inside the attention (no expanded copy of the cache; 2 heads latent (nope +
 * v_dim) flops per cached token, the compute that absorbing removes). Same arguments as
 * the oracle (causal = prefill with n_q = n). */
lm_status lm_mla_attend_absorbed(const lm_mla_shape *shape, const float *q, const float *ckv,
                                 const float *w_uk, const float *w_uv, size_t n_q, size_t n,
                                 bool causal, float *o, const lm_ops *ops, lm_error *err);
lm_status lm_mla_attend_expanded(const lm_mla_shape *shape, const float *q, const float *ckv,
                                 const float *w_uk, const float *w_uv, size_t n_q, size_t n,
                                 bool causal, float *o, const lm_ops *ops, lm_error *err);

/* The expanded cache of n tokens (what an MHA deployment of the same weights stores):
 * K_h rows [c_j W_uk_h, k_rope_j] and V_h rows [c_j W_uv_h, zeros], each nope + rope
 * floats; k, v {H, n, nope + rope} head-major (a decode cache, lm_attn_decode with
 * kv_heads = heads) or {n, H, nope + rope} token-major (prefill). Dispatched GEMM,
 * OpenMP over (head, block of tokens). LM_ERR_SHAPE, LM_ERR_ARG. */
lm_status lm_mla_expand(const lm_mla_shape *shape, const float *ckv, size_t n,
                        const float *w_uk, const float *w_uv, bool token_major, float *k,
                        float *v, const lm_ops *ops, lm_error *err);

/* Bytes of cache one decode step reads per token (float32): expanded heads (nope + rope +
 * v_dim) 4, absorbed (latent + rope) 4. */
double lm_mla_bytes_per_token(const lm_mla_shape *shape, bool absorbed);

#endif

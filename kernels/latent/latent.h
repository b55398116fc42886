/* Latent KV attention (lesson section 6, DeepSeek-V2's multi-head latent attention
 * without the rotary key): each token is cached as one latent c = x W_down of d_latent
 * numbers; keys and values are rebuilt as c W_uk and c W_uv for every head, or the
 * up-projections are absorbed into the query and the output so K and V are never built:
 *   q . (c W_uk) = (q W_uk^T) . c,   sum_j w_j (c_j W_uv) = (sum_j w_j c_j) W_uv. */
#ifndef LONGMIX_LATENT_H
#define LONGMIX_LATENT_H

#include "longmix.h"

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

#endif

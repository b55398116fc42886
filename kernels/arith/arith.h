/* Cache and FLOP arithmetic under strict units (the M8 notebook, section 6): KV bytes per token,
 * recurrent SSM state (main tensor + causal-convolution tail), hybrid stacks, the decode
 * FLOP scenario, and the crossovers solved from them. Byte counts are exact 64-bit
 * integers (KiB = 2^10); a product that would overflow is LM_ERR_NUMERIC, never wrapped.
 * Integer arguments are signed so that a negative or zero value can be rejected with a
 * message naming it, as the notebook's _positive_int / _non_negative_int do. */
#ifndef LONGMIX_ARITH_H
#define LONGMIX_ARITH_H

#include "lm_core.h"

/* ---- memory (kernels/arith/memory.c) ------------------------------------------------ */

/* K/V geometry of a stack of attention layers. Every field must be positive. */
typedef struct lm_kv_cache_geometry {
    long long layers, kv_heads, head_width, bytes_per_value;
} lm_kv_cache_geometry;

/* *bytes = 2 * layers * kv_heads * head_width * bytes_per_value (K and V, one token).
 * LM_ERR_ARG names a non-positive field ("layers must be positive, got 0"). */
lm_status lm_arith_kv_bytes_per_token(const lm_kv_cache_geometry *geometry, long long *bytes,
                                      lm_error *err);

/* *bytes = batch * context_tokens * bytes_per_token; context_tokens >= 0, batch >= 1. */
lm_status lm_arith_kv_total_bytes(const lm_kv_cache_geometry *geometry,
                                  long long context_tokens, long long batch, long long *bytes,
                                  lm_error *err);

/* Per-sequence recurrent cache of an SSM stack. layers, inner_width, state_width,
 * bytes_per_value positive; conv_width and conv_channels both zero or both positive
 * (conv_channels is explicit: Mamba-2 caches x plus the B/C channels). */
typedef struct lm_ssm_state_geometry {
    long long layers, inner_width, state_width, conv_width, conv_channels, bytes_per_value;
} lm_ssm_state_geometry;

typedef struct lm_ssm_state_bytes {
    long long ssm_bytes;   /* batch * layers * inner_width * state_width * bytes_per_value */
    long long conv_bytes;  /* batch * layers * conv_channels * conv_width * bytes_per_value */
    long long total_bytes; /* ssm_bytes + conv_bytes: fixed, independent of context length */
} lm_ssm_state_bytes;

/* The recurrent cache of `batch` (>= 1) sequences. */
lm_status lm_arith_ssm_state_bytes(const lm_ssm_state_geometry *geometry, long long batch,
                                   lm_ssm_state_bytes *out, lm_error *err);

/* A hybrid stack: attention_layers of K/V in [0, total_layers], the rest SSM layers. */
typedef struct lm_hybrid_config {
    long long total_layers, attention_layers, context_tokens;
    long long inner_width, state_width, conv_width, conv_channels;
    long long kv_heads, head_width, bytes_per_value;
} lm_hybrid_config;

typedef struct lm_hybrid_memory {
    long long total_layers, attention_layers, ssm_layers, context_tokens;
    long long kv_bytes, ssm_bytes, conv_bytes, recurrent_bytes, total_bytes;
} lm_hybrid_memory;

/* KV plus complete recurrent cache of one hybrid sequence (a part with zero layers counts
 * zero bytes). LM_ERR_ARG "attention_layers must lie in [0, total_layers]" and the field
 * checks above. */
lm_status lm_arith_hybrid_memory(const lm_hybrid_config *config, lm_hybrid_memory *out,
                                 lm_error *err);

/* Where a growing KV cache meets a fixed recurrent cache. */
typedef struct lm_memory_crossover {
    double tokens_exact;                   /* recurrent_bytes / kv_bytes_per_token */
    long long first_integer_token;         /* least n with n * kv >= recurrent */
    long long first_strictly_larger_token; /* least n with n * kv > recurrent */
} lm_memory_crossover;

/* Solves the crossover; both arguments positive (LM_ERR_ARG naming them). */
lm_status lm_arith_memory_crossover(long long kv_bytes_per_token, long long recurrent_bytes,
                                    lm_memory_crossover *out, lm_error *err);

/* ---- the decode FLOP scenario ------------------------------------------------------- */

typedef struct lm_decode_flops {
    long long context_tokens;
    long long attention_core_flops; /* 4 * N * d_model: q k^T and weights v, 2 FLOPs each */
    long long ssm_core_flops;       /* 5 * d_inner * d_state: update 3, readout 2 */
    double ratio;                   /* attention / ssm, correctly rounded */
} lm_decode_flops;

/* Core token-mixing arithmetic only: no projections, FFN, weight traffic or kernel
 * efficiency; not a latency model. Every argument positive (LM_ERR_ARG naming it). */
lm_status lm_arith_decode_flops(long long context_tokens, long long model_width,
                                long long inner_width, long long state_width,
                                lm_decode_flops *out, lm_error *err);

/* ---- the Delta*B approximation ------------------------------------------------------ */

/* Relative error of the small-step input matrix Delta*b against the exact ZOH
 * b * expm1(Delta a)/a for one mode a < 0: Delta * a / expm1(Delta a) - 1 (b cancels),
 * written as Delta / (expm1(Delta a)/a) - 1. step > 0. */
lm_status lm_arith_delta_b_relative_error(double a, double step, double *error, lm_error *err);

/* The step at which that error first reaches `target` (> 0): solved by bisection on the
 * increasing function above until the bracket cannot shrink (no tabulated value).
 * a < 0 (LM_ERR_DOMAIN), target > 0 (LM_ERR_ARG); LM_ERR_NUMERIC if no bracket is found. */
lm_status lm_arith_delta_b_error_root(double a, double target, double *step, lm_error *err);

/* ---- the lesson's bill (kernels/arith/bill.c, lesson sections 1, 5, 6) --------------
 * Pairs scored and bytes cached for the lesson's running example (Llama-3-8B-shaped:
 * 32 layers, 8 KV heads, 128 numbers per head, 16-bit). `bits` may be any positive
 * width: a byte count is floor(numbers * bits / 8), taken on the total (so 4-bit codes
 * are half a byte each); widths that are whole bytes go through the memory.c geometry
 * above. Every count is an exact 64-bit integer; overflow is LM_ERR_NUMERIC. */

/* n * n query-key pairs per head per layer (no causal halving, like the lesson). n >= 0. */
lm_status lm_arith_bill_pairs_per_head_per_layer(long long n, long long *pairs, lm_error *err);

/* Handshakes among n guests (the lesson's dinner party): n (n - 1) / 2. */
lm_status lm_arith_bill_handshakes(long long n, long long *count, lm_error *err);

/* KV cache of one token: floor(2 * layers * kv_heads * head_dim * bits / 8). */
lm_status lm_arith_bill_kv_bytes_per_token(long long layers, long long kv_heads,
                                           long long head_dim, long long bits,
                                           long long *bytes, lm_error *err);

/* KV cache of n tokens: floor(n * 2 * layers * kv_heads * head_dim * bits / 8); n >= 0. */
lm_status lm_arith_bill_kv_cache_bytes(long long n, long long layers, long long kv_heads,
                                       long long head_dim, long long bits, long long *bytes,
                                       lm_error *err);

/* context_cost: both lines of the bill for an n-token context. */
lm_status lm_arith_bill_context_cost(long long n, long long layers, long long kv_heads,
                                     long long head_dim, long long bits, long long *pairs,
                                     long long *kv_bytes, lm_error *err);

/* One SSM layer's fixed state: floor(channels * state_size * bits / 8). */
lm_status lm_arith_bill_ssm_state_bytes(long long channels, long long state_size,
                                        long long bits, long long *bytes, lm_error *err);

/* A hybrid stack: attention_layers * context * kv_bytes_per_token(1 layer)
 * + (layers - attention_layers) * ssm_state_bytes. 0 <= attention_layers <= layers. */
lm_status lm_arith_bill_hybrid_cache_bytes(long long context, long long layers,
                                           long long attention_layers, long long kv_heads,
                                           long long head_dim, long long channels,
                                           long long state_size, long long bits,
                                           long long *bytes, lm_error *err);

/* The designs of the lesson's memory-vs-context figure, in its order. */
typedef enum lm_cache_method {
    LM_CACHE_MULTI_HEAD,         /* "multi-head (32 KV heads)" */
    LM_CACHE_GROUPED_QUERY,      /* "grouped-query (8 KV heads)" */
    LM_CACHE_GROUPED_QUERY_4BIT, /* "grouped-query, 4-bit" (codes + a 16-bit scale) */
    LM_CACHE_LATENT,             /* "latent (576 per layer)" (512 + 64) */
    LM_CACHE_SLIDING_WINDOW,     /* "sliding window 4k": min(context, 4096) tokens */
    LM_CACHE_HYBRID,             /* "hybrid, 1 attention in 8": 4 of 32 layers */
    LM_CACHE_STATE_SPACE,        /* "state-space": 32 layers of 4096 x 16 at 16 bits */
    LM_CACHE_METHOD_COUNT
} lm_cache_method;

/* The lesson's label of a method ("multi-head (32 KV heads)", ...); NULL out of range. */
const char *lm_arith_cache_method_label(lm_cache_method method);
/* A short stable key of a method ("multi_head", "grouped_query_4bit", ...). */
const char *lm_arith_cache_method_key(lm_cache_method method);

/* cache_bytes_by_method(context): bytes[LM_CACHE_METHOD_COUNT] for one conversation of
 * `context` >= 0 tokens on the 32-layer running example (a real number: the 4-bit line
 * is fractional in general). */
lm_status lm_arith_cache_bytes_by_method(long long context, double *bytes, lm_error *err);

/* Exercise (the M8 notebook): the KV/SSM memory crossover for a common batch size B. For each
 * batches[i] >= 1: kv = B * bytes_per_token(kv), recurrent = ssm bytes at batch B, and
 * crossover[i] = lm_arith_memory_crossover(kv, recurrent). B cancels: every entry equals
 * the batch-1 crossover. crossover {count}. */
lm_status lm_arith_crossover_by_batch(const lm_kv_cache_geometry *kv,
                                      const lm_ssm_state_geometry *ssm,
                                      const long long *batches, size_t count,
                                      lm_memory_crossover *crossover, lm_error *err);

#endif

/* Quantized KV cache (lesson section 6). Symmetric per-vector quantization at b bits
 * (the lesson imports it from primer.ml.inference; longmix's reading is documented in
 * docs/contracts.md): qmax = 2^(b-1) - 1, one scale per row s = max|row| / qmax,
 * code = round_half_even(x / s) clipped to [-qmax, qmax], x_hat = code * s. A row of zeros
 * gets s = 0 and codes 0. KIVI's asymmetric scheme (min/max with a zero point, codes in
 * [0, 2^b - 1]) groups keys per channel (column) and values per token (row). */
#ifndef LONGMIX_KVQUANT_H
#define LONGMIX_KVQUANT_H

#include "longmix.h"
#include "lm_ops.h"

/* x {rows, cols} -> codes {rows, cols}, scales {rows}. bits in [2, 16] (LM_ERR_ARG),
 * LM_ERR_SHAPE for an empty x, LM_ERR_NONFINITE for NaN/Inf. Rounding is nearbyint in the
 * default mode: half to even, like numpy.round. */
lm_status lm_kvquant_quantize_rows_f64_ref(const double *x, size_t rows, size_t cols,
                                           int bits, int32_t *codes, double *scales,
                                           lm_error *err);

/* out {rows, cols} = codes * scales[row]. */
lm_status lm_kvquant_dequantize_rows_f64_ref(const int32_t *codes, const double *scales,
                                             size_t rows, size_t cols, double *out,
                                             lm_error *err);

/* Bytes per token of a quantized cache: 2 * layers * kv_heads * (head_dim * bits / 8 +
 * scale_bits / 8), a real number (4-bit codes are half a byte). layers, kv_heads,
 * head_dim, bits positive; scale_bits >= 0 (0 = no scale, the unquantized cache). */
lm_status lm_kvquant_bytes_per_token(long long layers, long long kv_heads, long long head_dim,
                                     long long bits, long long scale_bits, double *bytes,
                                     lm_error *err);

/* ||attn(Q, K_hat, V_hat) - attn(Q, K, V)||_F / ||attn(Q, K, V)||_F with causal, scaled
 * attention; Q, K, V = three standard_normal((n, d)) draws from default_rng(seed), in that
 * order; K_hat, V_hat quantized per row at `bits` and dequantized. */
lm_status lm_kvquant_cache_error(int bits, size_t n, size_t d, uint64_t seed, double *error,
                                 lm_error *err);

/* Which axis shares one KIVI scale and zero point. */
typedef enum lm_kivi_axis { LM_KIVI_PER_TOKEN, LM_KIVI_PER_CHANNEL } lm_kivi_axis;

/* Asymmetric quantize-dequantize of x {rows, cols} (rows = tokens, cols = channels) over
 * groups along `axis`: per group lo = min, hi = max, levels = 2^bits - 1,
 * s = (hi - lo) / levels, code = round_half_even((x - lo) / s) clipped to [0, levels],
 * x_hat = code * s + lo (a constant group is exact: s = 0, x_hat = lo).
 * bits in [1, 16]. out {rows, cols}. */
lm_status lm_kvquant_kivi_f64_ref(const double *x, size_t rows, size_t cols, int bits,
                                  lm_kivi_axis axis, double *out, lm_error *err);

/* The cache error of lm_kvquant_cache_error with KIVI: keys per channel, values per
 * token, on the same draws. */
lm_status lm_kvquant_kivi_cache_error(int bits, size_t n, size_t d, uint64_t seed,
                                      double *error, lm_error *err);

/* ---- quantized KV cache, fast path (cache.c, driver; scalar/avx2/avx512/neon.c) -------
 * Every format stores unsigned codes u and reads a value back as u * s + lo:
 *   INT8, INT4   per token symmetric (one scale per vector): s = max|x| / qmax,
 *                code = round_half_even(x / s) in [-qmax, qmax], u = code + 2^(b-1),
 *                lo = -2^(b-1) s, so u s + lo = code s (lm_kvquant_quantize_rows_f64_ref).
 *   KIVI4, KIVI2 keys per channel over groups of LM_KVQ_KIVI_GROUP tokens, values per token,
 *                asymmetric (lm_kvquant_kivi_f64_ref): s = (max - min) / (2^b - 1), lo = min.
 * The newest tokens stay float32 in a ring of `recent + group` rows; a group is quantized
 * when it leaves the recent window (group = 1 token for INT8/INT4, LM_KVQ_KIVI_GROUP for
 * KIVI). Decode reads the codes directly: the key scale folds into the query (per channel)
 * or the score (per token), the value scale into the softmax weight, and lo into one sum per
 * block; no dequantized copy of the cache is ever made. */
typedef enum lm_kvq_format {
    LM_KVQ_INT8 = 0,
    LM_KVQ_INT4,
    LM_KVQ_KIVI4,
    LM_KVQ_KIVI2,
    LM_KVQ_FORMAT_COUNT
} lm_kvq_format;

#define LM_KVQ_KIVI_GROUP 32

/* Bits per code of a format (8, 4, 4, 2). */
int lm_kvq_bits(lm_kvq_format format);
/* "int8" | "int4" | "kivi4" | "kivi2"; LM_ERR_ARG otherwise. */
lm_status lm_kvq_format_parse(const char *name, lm_kvq_format *format, lm_error *err);

/* What a decode kernel reads of one KV head's quantized tokens [0, count). */
typedef struct lm_kvq_view {
    lm_kvq_format format;
    size_t head_dim, row_bytes; /* row_bytes = head_dim * bits / 8 */
    const uint8_t *k_codes;     /* {count, row_bytes} */
    const uint8_t *v_codes;     /* {count, row_bytes} */
    const float *k_params;      /* INT: {count, 2} (s, lo); KIVI: {count / group, 2, head_dim} */
    const float *v_params;      /* {count, 2} (s, lo) */
} lm_kvq_view;

/* Floats of workspace a quantized decode kernel needs for `group` query heads. */
size_t lm_kvq_decode_workspace_floats(size_t group, size_t head_dim);

/* Decode partial over quantized tokens [j0, j1) of one KV head (j0 a multiple of
 * LM_KVQ_KIVI_GROUP for KIVI): like lm_attn_decode_f32_* (m, l, acc of `group` query heads
 * q {group, d}), reading codes. head_dim a multiple of 16 on the SIMD paths. */
#define LM_KVQ_DECODE_DECLARE(isa)                                                             \
    void lm_kvq_decode_##isa(const lm_kvq_view *view, size_t j0, size_t j1, const float *q,    \
                             size_t group, float scale, float *m, float *l, float *acc,        \
                             float *workspace)
LM_KVQ_DECODE_DECLARE(scalar);
LM_KVQ_DECODE_DECLARE(avx2);
LM_KVQ_DECODE_DECLARE(avx512);
LM_KVQ_DECODE_DECLARE(neon);

typedef struct lm_kvq_cache {
    lm_kvq_format format;
    size_t kv_heads, head_dim, capacity, recent, group, row_bytes;
    size_t length;    /* tokens appended */
    size_t quantized; /* tokens [0, quantized) are codes; [quantized, length) are float32 */
    uint8_t *k_codes, *v_codes; /* {kv_heads, capacity, row_bytes} */
    float *k_params;            /* {kv_heads, capacity * 2} (KIVI: capacity / group * 2 * d) */
    float *v_params;            /* {kv_heads, capacity, 2} */
    float *k_recent, *v_recent; /* {kv_heads, recent + group, head_dim}: ring, slot t mod size */
} lm_kvq_cache;

/* An empty cache for up to `capacity` tokens (a multiple of LM_KVQ_KIVI_GROUP for KIVI),
 * keeping the newest `recent` tokens in float32. LM_ERR_ARG for an unknown format,
 * LM_ERR_SHAPE for a zero size, head_dim not a multiple of 4, or a KIVI capacity not a
 * multiple of the group; LM_ERR_NOMEM. Free with lm_kvq_cache_free. */
lm_status lm_kvq_cache_init(lm_kvq_cache *cache, lm_kvq_format format, size_t kv_heads,
                            size_t head_dim, size_t capacity, size_t recent, lm_error *err);
void lm_kvq_cache_free(lm_kvq_cache *cache);
/* Appends one token k, v {kv_heads, head_dim} (float32): into the recent ring, quantizing
 * the oldest group when the ring is full. LM_ERR_NONFINITE for NaN/Inf (cache unchanged),
 * LM_ERR_SHAPE when the cache is full. */
lm_status lm_kvq_cache_append(lm_kvq_cache *cache, const float *k, const float *v,
                              lm_error *err);
/* The cache as the decoder sees it, dequantized into float64: k, v {kv_heads, length, d}
 * (token order) — for tests and the error report, never on the decode path. */
lm_status lm_kvq_cache_dequantize(const lm_kvq_cache *cache, double *k, double *v,
                                  lm_error *err);
/* Bytes the cache holds per token once quantized (codes + parameters), and in total. */
double lm_kvq_bytes_per_token(const lm_kvq_cache *cache);

/* Decode one query per query head: q {heads, d} over every token of the cache; o {heads, d}.
 * Splits (KV head, quantized chunk) over OpenMP threads plus the recent float32 rows, merged
 * by log-sum-exp. LM_ERR_SHAPE (empty cache, heads not a multiple of kv_heads),
 * LM_ERR_NONFINITE (q), LM_ERR_NOMEM. ops NULL: the active path. */
lm_status lm_kvq_decode(const lm_kvq_cache *cache, const float *q, size_t heads, float *o,
                        const lm_ops *ops, lm_error *err);

#endif

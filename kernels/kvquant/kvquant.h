/* Quantized KV cache (lesson section 6). Symmetric per-vector quantization at b bits
 * (the lesson imports it from primer.ml.inference; longmix's reading is documented in
 * docs/contracts.md): qmax = 2^(b-1) - 1, one scale per row s = max|row| / qmax,
 * code = round_half_even(x / s) clipped to [-qmax, qmax], x_hat = code * s. A row of zeros
 * gets s = 0 and codes 0. KIVI's asymmetric scheme (min/max with a zero point, codes in
 * [0, 2^b - 1]) groups keys per channel (column) and values per token (row). */
#ifndef LONGMIX_KVQUANT_H
#define LONGMIX_KVQUANT_H

#include "lm_core.h"
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
 *   KIVI4, KIVI2 keys per channel over groups of LM_KVQ_KIVI_GROUP = 32 tokens (KIVI's
 *                setting), values per token, asymmetric (lm_kvquant_kivi_f64_ref):
 *                s = (max - min) / (2^b - 1), lo = min.
 *   KIVI4_G64, KIVI2_G64  the same with key groups of 64 tokens (one per decode block):
 *                half the key parameters and query quantizations, a wider range per group.
 * The newest tokens stay float32 in a ring of `recent + group` rows; a group is quantized
 * when it leaves the recent window (group = lm_kvq_group: 1 token for INT8/INT4, 32 or 64
 * for KIVI).
 *
 * Code layout (little-endian 32-bit words, "dwords"; E = 32 / bits codes per dword, element
 * m of a dword at bit 8 (m mod 4) + bits (m div 4), so the low `bits` of byte i hold elements
 * i, i + 4, ... in turn):
 *   keys    tiles of LM_KVQ_TILE = 16 tokens; a tile is {rows = ceil(d / E), 16} dwords, dword
 *           (r, t) holding dims r E .. r E + E - 1 of token t (dims >= d are code 0). One
 *           64-byte row of a tile is 16 tokens x E dims: an integer dot product instruction
 *           (VPDPBUSD) scores 16 tokens at once against 4 query bytes.
 *   values  groups of E tokens; a group is {d} dwords, dword c holding dim c of the E
 *           tokens: 16 dims x E tokens per 64 bytes, so the weighted sum over tokens keeps
 *           dims in lanes.
 * Decode (all paths, one semantics): the query of each head is quantized to int8 before it
 * meets the key codes (symmetric, one scale per head: s_q = float32(max|q| / 127),
 * q8 = round_half_even(q / s_q)); for KIVI the per-channel key scales fold into the query
 * first (q * s^k, float32, once per key group) and it is quantized per group. Scores:
 *   INT8/INT4: s_j = s^k_j s_q (q8 . (u_j - 2^(b-1)))     (integers, exact)
 *   KIVI:      s_j = s_q,grp (q8 . u_j) + q . lo^k_grp
 * (lm_kvq_decode_f64_ref is this in float64). The values stay exact: weights p_j s^v_j in
 * float32 times codes widened in registers, plus (sum_j p_j lo^v_j) on every channel. The
 * float32 recent rows use the float query. No dequantized copy of the cache is made. */
typedef enum lm_kvq_format {
    LM_KVQ_INT8 = 0,
    LM_KVQ_INT4,
    LM_KVQ_KIVI4,
    LM_KVQ_KIVI2,
    LM_KVQ_KIVI4_G64,
    LM_KVQ_KIVI2_G64,
    LM_KVQ_FORMAT_COUNT
} lm_kvq_format;

#define LM_KVQ_KIVI_GROUP 32
#define LM_KVQ_KIVI_GROUP_MAX 64 /* a capacity that is a multiple of it suits every format */
#define LM_KVQ_TILE 16

/* Bits per code of a format (8, 4, 4, 2, 4, 2). */
int lm_kvq_bits(lm_kvq_format format);
/* Whether keys are per channel (the KIVI formats). */
bool lm_kvq_is_kivi(lm_kvq_format format);
/* Tokens quantized together: 1 (INT8, INT4), 32 (KIVI4, KIVI2), 64 (the _G64 formats). */
size_t lm_kvq_group(lm_kvq_format format);
/* "int8" | "int4" | "kivi4" | "kivi2" | "kivi4g64" | "kivi2g64"; LM_ERR_ARG otherwise. */
lm_status lm_kvq_format_parse(const char *name, lm_kvq_format *format, lm_error *err);

/* Where the code of key (token t, dim c) / value (token t, dim c) of one KV head sits:
 * *dword = index of its 32-bit word in the head's code array, return = its bit offset.
 * key_rows = ceil(d / (32 / bits)). */
static inline unsigned lm_kvq_key_slot(size_t t, size_t c, size_t key_rows, int bits,
                                       size_t *dword)
{
    const size_t per = 32u / (unsigned)bits, m = c % per;
    *dword = t / LM_KVQ_TILE * LM_KVQ_TILE * key_rows + c / per * LM_KVQ_TILE + t % LM_KVQ_TILE;
    return (unsigned)(8u * (m % 4u) + (unsigned)bits * (m / 4u));
}
static inline unsigned lm_kvq_value_slot(size_t t, size_t c, size_t d, int bits, size_t *dword)
{
    const size_t per = 32u / (unsigned)bits, m = t % per;
    *dword = t / per * d + c;
    return (unsigned)(8u * (m % 4u) + (unsigned)bits * (m / 4u));
}

/* What a decode kernel reads of one KV head's quantized tokens [0, count). */
typedef struct lm_kvq_view {
    lm_kvq_format format;
    size_t head_dim, key_rows;  /* key_rows = ceil(head_dim / (32 / bits)) */
    size_t group;               /* lm_kvq_group(format): tokens per key group (KIVI) */
    const uint8_t *k_codes;     /* key tiles {ceil(count / 16), key_rows, 16} dwords */
    const uint8_t *v_codes;     /* value groups {ceil(count / E), head_dim} dwords */
    const float *k_params;      /* KIVI: {count / group, 2, head_dim} (s then lo per channel) */
    const float *k_scale, *k_lo; /* INT: {count} each, readable (as 0) up to a multiple of 64 */
    const float *v_scale, *v_lo; /* {count} each, likewise */
} lm_kvq_view;

/* Floats of workspace a quantized decode kernel needs for `group` query heads. */
size_t lm_kvq_decode_workspace_floats(size_t group, size_t head_dim);

/* Decode partial over quantized tokens [j0, j1) of one KV head (j0 a multiple of
 * LM_ATTN_DECODE_BLOCK): like lm_attn_decode_f32_* (m, l, acc of `group` query heads
 * q {group, d}), reading codes. head_dim a multiple of 16 on the SIMD paths. */
#define LM_KVQ_DECODE_DECLARE(isa)                                                             \
    void lm_kvq_decode_##isa(const lm_kvq_view *view, size_t j0, size_t j1, const float *q,    \
                             size_t group, float scale, float *m, float *l, float *acc,        \
                             float *workspace)
/* The switch of a decode kernel: body(args..., bits, per_channel) for the view's format. */
#define LM_KVQ_FOR_FORMAT(format, body, ...)                                                   \
    switch (format) {                                                                          \
    case LM_KVQ_INT8: body(__VA_ARGS__, 8, 0); break;                                          \
    case LM_KVQ_INT4: body(__VA_ARGS__, 4, 0); break;                                          \
    case LM_KVQ_KIVI4:                                                                         \
    case LM_KVQ_KIVI4_G64: body(__VA_ARGS__, 4, 1); break;                                     \
    case LM_KVQ_KIVI2:                                                                         \
    case LM_KVQ_KIVI2_G64: body(__VA_ARGS__, 2, 1); break;                                     \
    default: break;                                                                            \
    }

typedef struct lm_kvq_cache {
    lm_kvq_format format;
    size_t kv_heads, head_dim, capacity, recent, group, row_bytes;
    size_t key_rows;  /* dwords per token of a key tile: ceil(head_dim / (32 / bits)) */
    size_t stride;    /* code bytes per KV head: capacity rounded up to 16 tokens */
    size_t pstride;   /* per-token parameters per KV head and row: capacity rounded to 64 */
    size_t length;    /* tokens appended */
    size_t quantized; /* tokens [0, quantized) are codes; [quantized, length) are float32 */
    uint8_t *k_codes, *v_codes; /* {kv_heads, stride} bytes, laid out as lm_kvq_view says */
    float *k_params;            /* INT: {kv_heads, 2, pstride} (s row, lo row);
                                   KIVI: {kv_heads, capacity / group, 2, d} */
    float *v_params;            /* {kv_heads, 2, pstride}: s row, lo row */
    float *k_recent, *v_recent; /* {kv_heads, recent + group, head_dim}: ring, slot t mod size */
} lm_kvq_cache;

/* An empty cache for up to `capacity` tokens (a multiple of lm_kvq_group(format)),
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
/* The code u of key (which = 0) or value (which = 1) of token t < quantized, dim c, KV head g. */
unsigned lm_kvq_cache_code(const lm_kvq_cache *cache, int which, size_t g, size_t t, size_t c);
/* Bytes the cache holds per token once quantized (codes + parameters), and in total. */
double lm_kvq_bytes_per_token(const lm_kvq_cache *cache);

/* The argument rules shared by lm_kvq_decode and lm_kvq_decode_f64_ref: LM_ERR_ARG (no
 * cache, no codes, q or o missing), LM_ERR_SHAPE (empty cache, heads not a positive
 * multiple of kv_heads). */
lm_status lm_kvq_decode_check(const lm_kvq_cache *cache, bool have_q_and_o, size_t heads,
                              lm_error *err);

/* Decode one query per query head: q {heads, d} over every token of the cache; o {heads, d}.
 * Splits (KV head, quantized chunk) over OpenMP threads plus the recent float32 rows, merged
 * by log-sum-exp. LM_ERR_SHAPE (empty cache, heads not a multiple of kv_heads),
 * LM_ERR_NONFINITE (q), LM_ERR_NOMEM. ops NULL: the active path. */
lm_status lm_kvq_decode(const lm_kvq_cache *cache, const float *q, size_t heads, float *o,
                        const lm_ops *ops, lm_error *err);

/* Float64 oracle of lm_kvq_decode, with the decode's query quantization (see above):
 * quantized tokens scored from the codes as the fast path does, float32 recent rows with
 * the float query, softmax and values in float64 with exact weights. q {heads, d},
 * o {heads, d}. weight_bound {heads, d} (NULL: not wanted) receives how far the VNNI
 * kernel's 16-bit weights (LM_KVQ_WEIGHT_LEVELS per 64-token block) may move each output:
 * sum over blocks b of max_{j in b}(P_j s^v_j) / (2 levels) * sum_{j in b} |x_jc|, x the
 * integer the value code stands for (u - 2^(b-1) symmetric, u KIVI). Errors as
 * lm_kvq_decode. */
#define LM_KVQ_WEIGHT_LEVELS 65535.0
lm_status lm_kvq_decode_f64_ref(const lm_kvq_cache *cache, const double *q, size_t heads,
                                double *o, double *weight_bound, lm_error *err);

#endif

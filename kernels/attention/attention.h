/* Attention family: scaled dot-product attention over a KV cache.
 *
 * Shapes and layouts used by the multi-head (GQA) operators:
 *   prefill  q, o {n, heads, head_dim}, k, v {n, kv_heads, head_dim}  (token-major, as a
 *            projection writes them); query head h reads KV head h / (heads / kv_heads).
 *   decode   q, o {batch, heads, head_dim}, k, v {batch, kv_heads, capacity, head_dim}
 *            (head-major cache: one KV head's keys are contiguous), lengths {batch}.
 * Every score is scaled by 1 / sqrt(head_dim). */
#ifndef LONGMIX_ATTENTION_H
#define LONGMIX_ATTENTION_H

#include "lm_core.h"
#include "lm_ops.h"

#include <math.h>
#include <string.h>

/* ---- lesson reference (primer's ref.c) --------------------------------------------- */

/* True when every one of x[0..count) is finite. */
bool lm_all_finite_f64(const double *x, size_t count);

/* Row softmax of scores {rows, cols} into out (may alias): -inf entries are masked (weight
 * exactly 0). LM_ERR_SHAPE for an empty array, LM_ERR_NONFINITE for NaN or +inf,
 * LM_ERR_DOMAIN for a row with no unmasked entry. */
lm_status lm_attn_softmax_rows_f64_ref(const double *scores, double *out, size_t rows,
                                       size_t cols, lm_error *err);

/* mask {n, n}: 1 where j <= i. LM_ERR_SHAPE when n is 0. */
lm_status lm_attn_causal_mask(size_t n, uint8_t *mask, lm_error *err);

/* Single-head scaled dot-product attention: out = softmax(q k^T [/ sqrt(d)], masked) v.
 * q {n_q, d}, k {n_k, d}, v {n_k, d_v}, mask {n_q, n_k} (1 = scored) or NULL, out
 * {n_q, d_v}, weights {n_q, n_k} or NULL. LM_ERR_SHAPE for empty extents, LM_ERR_NONFINITE
 * for NaN/Inf inputs, LM_ERR_DOMAIN when a mask row allows no key. */
lm_status lm_attn_sdpa_f64_ref(const double *q, const double *k, const double *v,
                               const uint8_t *mask, bool scale, size_t n_q, size_t n_k,
                               size_t d, size_t d_v, double *out, double *weights,
                               lm_error *err);

/* ---- masks ---------------------------------------------------------------------- */

/* Which keys j a query i may read (always j <= i):
 *   CAUSAL         every j <= i
 *   WINDOW         i - j < window (the last `window` tokens, itself included)
 *   WINDOW_GLOBAL  i - j < window, or j < n_global, or i < n_global (tokens 0..n_global-1
 *                  are global: everyone reads them and they read everyone, causally)
 *   STRIDED        i - j < stride, or (i - j) % stride == 0 (the Sparse Transformer) */
typedef enum lm_attn_mask_kind {
    LM_ATTN_MASK_CAUSAL = 0,
    LM_ATTN_MASK_WINDOW,
    LM_ATTN_MASK_WINDOW_GLOBAL,
    LM_ATTN_MASK_STRIDED,
    LM_ATTN_MASK_COUNT
} lm_attn_mask_kind;

typedef struct lm_attn_mask {
    lm_attn_mask_kind kind;
    size_t window;   /* WINDOW, WINDOW_GLOBAL: >= 1 */
    size_t n_global; /* WINDOW_GLOBAL: leading global tokens */
    size_t stride;   /* STRIDED: >= 1 */
} lm_attn_mask;

/* True when query i may read key j under mask m (m already validated). */
static inline bool lm_attn_mask_allows(const lm_attn_mask *m, size_t i, size_t j)
{
    if (j > i)
        return false;
    size_t back = i - j;
    switch (m->kind) {
    case LM_ATTN_MASK_CAUSAL: return true;
    case LM_ATTN_MASK_WINDOW: return back < m->window;
    case LM_ATTN_MASK_WINDOW_GLOBAL: return back < m->window || j < m->n_global || i < m->n_global;
    case LM_ATTN_MASK_STRIDED: return back < m->stride || back % m->stride == 0;
    default: return false;
    }
}

/* How a tile of queries [i0, i1) x keys [j0, j1) (both non-empty) meets the mask. */
typedef enum lm_attn_tile_class { LM_TILE_EMPTY = 0, LM_TILE_PARTIAL, LM_TILE_FULL } lm_attn_tile_class;

static inline lm_attn_tile_class lm_attn_tile_classify(const lm_attn_mask *m, size_t i0, size_t i1,
                                                       size_t j0, size_t j1)
{
    if (j0 > i1 - 1)
        return LM_TILE_EMPTY; /* wholly in the future */
    bool causal_full = j1 - 1 <= i0;
    /* back = i - j over the tile spans [lo, hi], lo possibly "negative" (then 0) */
    size_t hi = (i1 - 1) - j0;
    size_t lo = i0 >= j1 - 1 ? i0 - (j1 - 1) : 0;
    switch (m->kind) {
    case LM_ATTN_MASK_CAUSAL: return causal_full ? LM_TILE_FULL : LM_TILE_PARTIAL;
    case LM_ATTN_MASK_WINDOW:
    case LM_ATTN_MASK_WINDOW_GLOBAL: {
        bool global = m->kind == LM_ATTN_MASK_WINDOW_GLOBAL;
        bool touches_global = global && (j0 < m->n_global || i0 < m->n_global);
        bool all_global = global && (j1 <= m->n_global || i1 <= m->n_global);
        if (lo >= m->window && !touches_global)
            return LM_TILE_EMPTY;
        if (causal_full && (hi < m->window || all_global))
            return LM_TILE_FULL;
        return LM_TILE_PARTIAL;
    }
    case LM_ATTN_MASK_STRIDED: {
        size_t s = m->stride;
        if (causal_full && (hi < s || s == 1))
            return LM_TILE_FULL;
        if (lo >= s) { /* only multiples of s in [lo, hi] are read */
            size_t first = (lo + s - 1) / s * s;
            if (first > hi)
                return LM_TILE_EMPTY;
        }
        return LM_TILE_PARTIAL;
    }
    default: return LM_TILE_PARTIAL;
    }
}

/* Tile sizes of the fast prefill, the same on every path so the tile counts agree. */
#define LM_ATTN_TILE_Q 64
#define LM_ATTN_TILE_K 32
/* Query heads (of one KV head) and query tiles one prefill kernel call computes against
 * each K/V tile it loads. */
#define LM_ATTN_PREFILL_HEADS 4
#define LM_ATTN_PREFILL_TILES 2
/* Keys per block of the fast decode kernel. */
#define LM_ATTN_DECODE_BLOCK 64

/* What a prefill computed: tiles on or below the diagonal, tiles actually computed (the
 * sparse kinds skip empty ones), and query-key scores evaluated (rows x columns of every
 * computed tile, summed over query heads). */
typedef struct lm_attn_counts {
    uint64_t tiles_total;
    uint64_t tiles_computed;
    uint64_t pairs_computed;
} lm_attn_counts;

/* Pairs (query, key) the mask allows for one head over n tokens: the work an exact
 * sparse kernel would do. */
uint64_t lm_attn_mask_pairs(const lm_attn_mask *m, size_t n);

/* ---- KV storage types -------------------------------------------------------------- */

typedef enum lm_kv_dtype { LM_KV_F32 = 0, LM_KV_F16, LM_KV_BF16, LM_KV_DTYPE_COUNT } lm_kv_dtype;

/* Bytes per stored element of a dtype (4, 2, 2). */
size_t lm_kv_dtype_size(lm_kv_dtype dtype);
/* "f32" | "f16" | "bf16"; LM_ERR_ARG otherwise. */
lm_status lm_kv_dtype_parse(const char *name, lm_kv_dtype *dtype, lm_error *err);

/* IEEE binary16 and bfloat16 conversions, round to nearest even (NaN stays NaN). */
uint16_t lm_f16_from_f32(float x);
float lm_f32_from_f16(uint16_t h);
uint16_t lm_bf16_from_f32(float x);
static inline float lm_f32_from_bf16(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}
/* Stores count floats as dtype into dst (dst {count} elements of that dtype). */
void lm_kv_store(lm_kv_dtype dtype, const float *src, void *dst, size_t count);
/* Reads count dtype elements back as float. */
void lm_kv_load(lm_kv_dtype dtype, const void *src, float *dst, size_t count);

/* ---- float64 oracles (ref_gqa.c) --------------------------------------------------- */

/* Validates a prefill geometry and mask: LM_ERR_SHAPE when n, heads, kv_heads or head_dim
 * is 0 or heads is not a multiple of kv_heads; LM_ERR_ARG when the mask kind is unknown,
 * window = 0 (WINDOW kinds) or stride = 0 (STRIDED). */
lm_status lm_attn_prefill_check(size_t n, size_t heads, size_t kv_heads, size_t head_dim,
                                const lm_attn_mask *mask, lm_error *err);

/* Causal (masked) GQA prefill in float64:
 *   o[i, h] = sum_j softmax_j(q[i, h] . k[j, h / G] / sqrt(d) over allowed j) v[j, h / G].
 * q, o {n, heads, head_dim}; k, v {n, kv_heads, head_dim}. Statuses as
 * lm_attn_prefill_check, plus LM_ERR_NONFINITE when q, k or v holds NaN or Inf. */
lm_status lm_attn_prefill_f64_ref(const double *q, const double *k, const double *v, double *o,
                                  size_t n, size_t heads, size_t kv_heads, size_t head_dim,
                                  const lm_attn_mask *mask, lm_error *err);

/* Validates a decode geometry: LM_ERR_SHAPE when batch, heads, kv_heads, head_dim or
 * capacity is 0, heads is not a multiple of kv_heads, or a length is 0 or > capacity. */
lm_status lm_attn_decode_check(size_t batch, size_t heads, size_t kv_heads, size_t head_dim,
                               size_t capacity, const size_t *lengths, lm_error *err);

/* Decode in float64: one query per sequence over its cached tokens 0..lengths[b)-1.
 * q, o {batch, heads, head_dim}; k, v {batch, kv_heads, capacity, head_dim}; lengths
 * {batch}. Statuses as lm_attn_decode_check plus LM_ERR_NONFINITE (q or a read K/V value). */
lm_status lm_attn_decode_f64_ref(const double *q, const double *k, const double *v,
                                 const size_t *lengths, double *o, size_t batch, size_t heads,
                                 size_t kv_heads, size_t head_dim, size_t capacity,
                                 lm_error *err);

/* ---- fast kernels (one per ISA; shapes are the driver's to validate) ---------------- */

/* Everything a prefill kernel reads. Pointers as lm_attn_prefill_f64_ref: q, k, v in
 * float32 when dtype is LM_KV_F32 (the default of a zeroed struct), or q16, k16, v16 in
 * bfloat16 (same shapes) when dtype is LM_KV_BF16; the output o is float32 either way. */
typedef struct lm_attn_prefill_args {
    const float *q; /* {n, heads, head_dim} */
    const float *k; /* {n, kv_heads, head_dim} */
    const float *v; /* {n, kv_heads, head_dim} */
    float *o;       /* {n, heads, head_dim} */
    size_t n, heads, kv_heads, head_dim;
    lm_attn_mask mask;
    float scale; /* 1 / sqrt(head_dim) */
    lm_kv_dtype dtype;                   /* F32 or BF16 (the inputs' type) */
    const uint16_t *q16, *k16, *v16;     /* dtype BF16: bfloat16 q, k, v */
} lm_attn_prefill_args;

/* Floats of workspace (64-byte aligned) one prefill kernel call of lm_attn_prefill needs,
 * the larger of the two layouts. float32 inputs (and bfloat16 ones widened on paths
 * without BF16 dot products): the packed K and V tiles {TILE_K, head_dim} each, scores and
 * mask bias {TILE_K, TILE_Q} each, a rescale {TILE_Q}, and per (query tile, query head)
 * slot of the call Qt {head_dim, TILE_Q}, an accumulator {TILE_Q, head_dim} and the
 * running max and sum {TILE_Q} each. bfloat16 dot products (avx512bf16): K and V in
 * bfloat16 (V pair-interleaved), the weights P also as bfloat16 pairs, Qt as bfloat16
 * pairs {head_dim / 2, TILE_Q}. lm_attn_prefill forms up to LM_ATTN_PREFILL_HEADS x
 * LM_ATTN_PREFILL_TILES slots per call at head_dim <= 128, fewer for wider heads. */
size_t lm_attn_prefill_workspace_floats(size_t head_dim);

/* Prefill kernels (slots attn_prefill_f32 and attn_prefill_bf16, the inputs' dtype): query
 * heads [head_begin, head_end), which must share one KV head and number
 * 1..LM_ATTN_PREFILL_HEADS, over query tiles [tile_begin, tile_end) of LM_ATTN_TILE_Q rows,
 * 1..LM_ATTN_PREFILL_TILES of them; the workspace must hold that many (tile, head) slots.
 * Each K/V tile is read once for all the slots. Writes those rows of o and adds what it
 * computed to *counts (summed over the heads). head_dim must be a multiple of 16 on the
 * SIMD paths (any on scalar). Online softmax: never an n x n matrix. The bf16 slot sums in
 * float32: with BF16 dot products (avx512bf16) q.k is exact per pair of products and the
 * softmax weights P are rounded to bfloat16 before P V (relative error <= 2^-8 per weight,
 * docs/kernels.md); the other paths widen q, k, v to float32 and run the f32 kernel. */

/* Floats of workspace one decode kernel call needs for `group` query heads. */
size_t lm_attn_decode_workspace_floats(size_t group);

/* Decode partial over one KV head and a key range: the `group` query heads q {group, d}
 * that share this KV head read k, v {n, d} (rows of dtype f32 / f16 / bf16) ONCE, and
 * leave the unnormalised softmax state m {group} (running max of scaled scores),
 * l {group} (sum of exp(s - m)) and acc {group, d} (sum of exp(s - m) v). n >= 1.
 * The driver merges ranges with log-sum-exp. d: multiple of 16 on SIMD paths. */
#define LM_ATTN_DECODE_DECLARE(dtype, isa)                                                     \
    void lm_attn_decode_##dtype##_##isa(const float *q, const void *k, const void *v,          \
                                        size_t n, size_t d, size_t group, float scale,          \
                                        float *m, float *l, float *acc, float *workspace)

/* ---- operator drivers (driver.c: validate, split with OpenMP, call the table) -------- */

/* Runs a prefill with the kernels of `ops` (NULL: the active path), splitting (KV head,
 * block of its query heads, block of query tiles) work over OpenMP threads. head_dim not a
 * multiple of 16 falls back to the scalar kernel. a->dtype picks the slot (f32 or bf16).
 * Statuses: as lm_attn_prefill_check, LM_ERR_ARG for a dtype other than f32 or bf16 or a
 * NULL array of it, LM_ERR_NONFINITE for NaN/Inf in q, k or v, LM_ERR_NOMEM. counts
 * (optional) receives the totals over all heads. */
lm_status lm_attn_prefill(const lm_attn_prefill_args *a, const lm_ops *ops,
                          lm_attn_counts *counts, lm_error *err);

typedef struct lm_attn_decode_args {
    const float *q;        /* {batch, heads, head_dim} */
    const void *k;         /* {batch, kv_heads, capacity, head_dim} of dtype */
    const void *v;         /* {batch, kv_heads, capacity, head_dim} of dtype */
    const size_t *lengths; /* {batch}: cached tokens per sequence, 1..capacity */
    float *o;              /* {batch, heads, head_dim} */
    size_t batch, heads, kv_heads, head_dim, capacity;
    lm_kv_dtype dtype;
} lm_attn_decode_args;

/* Decode with the kernels of `ops` (NULL: active path): splits each (sequence, KV head)
 * key range into chunks over OpenMP threads and merges the chunks with log-sum-exp.
 * Statuses: as lm_attn_decode_check, LM_ERR_ARG for an unknown dtype, LM_ERR_NONFINITE
 * for NaN/Inf in q (the cache is trusted: its writers check), LM_ERR_NOMEM. */
lm_status lm_attn_decode(const lm_attn_decode_args *a, const lm_ops *ops, lm_error *err);

/* Merges `parts` partial softmax states of one group (each m {group}, l {group},
 * acc {group, d}, parts laid out one after another) into o rows {group, d} at row stride
 * o_stride floats. */
void lm_attn_merge_partials(const float *m, const float *l, const float *acc, size_t parts,
                            size_t group, size_t d, float *o, size_t o_stride);

#endif /* LONGMIX_ATTENTION_H */

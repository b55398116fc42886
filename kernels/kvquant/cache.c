/* Quantized KV cache: quantize on append (float64 arithmetic, the oracle's rounding),
 * and the decode driver that runs the code-reading kernels (split over OpenMP, merged
 * with log-sum-exp together with the float32 rows of the recent window). */
#include "kvquant.h"

#include "../attention/attention.h"

#include <math.h>
#include <omp.h>
#include <string.h>

int lm_kvq_bits(lm_kvq_format format)
{
    switch (format) {
    case LM_KVQ_INT8: return 8;
    case LM_KVQ_INT4:
    case LM_KVQ_KIVI4:
    case LM_KVQ_KIVI4_G64: return 4;
    case LM_KVQ_KIVI2:
    case LM_KVQ_KIVI2_G64: return 2;
    default: return 0;
    }
}

bool lm_kvq_is_kivi(lm_kvq_format format)
{
    return format == LM_KVQ_KIVI4 || format == LM_KVQ_KIVI2 || format == LM_KVQ_KIVI4_G64 ||
           format == LM_KVQ_KIVI2_G64;
}

size_t lm_kvq_group(lm_kvq_format format)
{
    if (format == LM_KVQ_KIVI4_G64 || format == LM_KVQ_KIVI2_G64)
        return 64;
    return lm_kvq_is_kivi(format) ? LM_KVQ_KIVI_GROUP : 1;
}

lm_status lm_kvq_format_parse(const char *name, lm_kvq_format *format, lm_error *err)
{
    static const char *const names[LM_KVQ_FORMAT_COUNT] = {"int8",  "int4",     "kivi4",
                                                           "kivi2", "kivi4g64", "kivi2g64"};
    for (int f = 0; f < LM_KVQ_FORMAT_COUNT; f++)
        if (name != NULL && strcmp(name, names[f]) == 0) {
            *format = (lm_kvq_format)f;
            return LM_OK;
        }
    return lm_fail(err, LM_ERR_ARG, "format '%s' must be int8, int4, kivi4, kivi2, kivi4g64 or "
                   "kivi2g64",
                   name ? name : "(null)");
}

size_t lm_kvq_decode_workspace_floats(size_t group, size_t head_dim)
{
    /* scores {group, block}; quantized query {group, padded d} as floats and as bytes;
     * five numbers per head (s_q, sum q8, q . lo, s_w, fix); weights as two bytes
     * {2, group, block} */
    const size_t padded = (head_dim + 15) / 16 * 16;
    return group * LM_ATTN_DECODE_BLOCK + group * padded + group * padded / 4 + 5 * group +
           group * LM_ATTN_DECODE_BLOCK / 2;
}

static bool is_kivi(lm_kvq_format f) { return lm_kvq_is_kivi(f); }

void lm_kvq_cache_free(lm_kvq_cache *cache)
{
    if (cache == NULL)
        return;
    lm_free(cache->k_codes);
    lm_free(cache->v_codes);
    lm_free(cache->k_params);
    lm_free(cache->v_params);
    lm_free(cache->k_recent);
    lm_free(cache->v_recent);
    memset(cache, 0, sizeof *cache);
}

lm_status lm_kvq_cache_init(lm_kvq_cache *cache, lm_kvq_format format, size_t kv_heads,
                            size_t head_dim, size_t capacity, size_t recent, lm_error *err)
{
    if (cache == NULL)
        return lm_fail(err, LM_ERR_ARG, "cache must not be NULL");
    memset(cache, 0, sizeof *cache);
    if ((unsigned)format >= LM_KVQ_FORMAT_COUNT)
        return lm_fail(err, LM_ERR_ARG, "format must be int8, int4, kivi4, kivi2, kivi4g64 or "
                       "kivi2g64");
    if (kv_heads == 0 || head_dim == 0 || capacity == 0)
        return lm_fail(err, LM_ERR_SHAPE, "kv_heads, head_dim and capacity must be positive");
    if (head_dim % 4 != 0)
        return lm_fail(err, LM_ERR_SHAPE, "head_dim (%zu) must be a multiple of 4 (whole code "
                       "bytes)", head_dim);
    const size_t group = lm_kvq_group(format);
    if (capacity % group != 0)
        return lm_fail(err, LM_ERR_SHAPE, "capacity (%zu) must be a multiple of the KIVI group "
                       "(%zu)", capacity, group);
    cache->format = format;
    cache->kv_heads = kv_heads;
    cache->head_dim = head_dim;
    cache->capacity = capacity;
    cache->recent = recent;
    cache->group = group;
    const size_t per = 32 / (size_t)lm_kvq_bits(format); /* codes per dword */
    cache->row_bytes = head_dim * (size_t)lm_kvq_bits(format) / 8;
    cache->key_rows = (head_dim + per - 1) / per;
    /* whole decode blocks of codes: the kernels read every block whole (64 tokens, a
     * multiple of the 16-token key tile and of every value group), its padding weighted 0 */
    _Static_assert(LM_ATTN_DECODE_BLOCK % LM_KVQ_TILE == 0, "blocks of whole key tiles");
    const size_t tokens =
        (capacity + LM_ATTN_DECODE_BLOCK - 1) / LM_ATTN_DECODE_BLOCK * LM_ATTN_DECODE_BLOCK;
    cache->stride = tokens * 4 * cache->key_rows; /* keys; values need tokens / per * d <= */
    const size_t ring = recent + group;
    cache->pstride = (capacity + 63) / 64 * 64; /* whole decode blocks of parameters */
    const size_t k_params = is_kivi(format) ? capacity / group * 2 * head_dim : 2 * cache->pstride;
    cache->k_codes = lm_alloc(kv_heads * cache->stride);
    cache->v_codes = lm_alloc(kv_heads * cache->stride);
    cache->k_params = lm_alloc(kv_heads * k_params * sizeof(float));
    cache->v_params = lm_alloc(kv_heads * 2 * cache->pstride * sizeof(float));
    cache->k_recent = lm_alloc(kv_heads * ring * head_dim * sizeof(float));
    cache->v_recent = lm_alloc(kv_heads * ring * head_dim * sizeof(float));
    if (!cache->k_codes || !cache->v_codes || !cache->k_params || !cache->v_params ||
        !cache->k_recent || !cache->v_recent) {
        lm_kvq_cache_free(cache);
        return lm_fail(err, LM_ERR_NOMEM, "quantized cache of %zu tokens", capacity);
    }
    /* codes are OR-ed in, and the padding of a partial tile must read as code 0 */
    memset(cache->k_codes, 0, kv_heads * cache->stride);
    memset(cache->v_codes, 0, kv_heads * cache->stride);
    /* parameters past the last token are read (and weighted by 0): keep them finite */
    memset(cache->k_params, 0, kv_heads * k_params * sizeof(float));
    memset(cache->v_params, 0, kv_heads * 2 * cache->pstride * sizeof(float));
    return LM_OK;
}

/* Writes code u at (dword, bit) of a head's code array (little-endian words). */
static void put_code(uint8_t *codes, size_t dword, unsigned bit, unsigned u)
{
    codes[4 * dword + bit / 8] |= (uint8_t)(u << (bit % 8));
}

static unsigned get_code(const uint8_t *codes, size_t dword, unsigned bit, int bits)
{
    return (codes[4 * dword + bit / 8] >> (bit % 8)) & ((1u << bits) - 1u);
}

static void put_key(const lm_kvq_cache *c, uint8_t *codes, size_t t, size_t col, unsigned u)
{
    size_t dword;
    unsigned bit = lm_kvq_key_slot(t, col, c->key_rows, lm_kvq_bits(c->format), &dword);
    put_code(codes, dword, bit, u);
}

static void put_value(const lm_kvq_cache *c, uint8_t *codes, size_t t, size_t col, unsigned u)
{
    size_t dword;
    unsigned bit = lm_kvq_value_slot(t, col, c->head_dim, lm_kvq_bits(c->format), &dword);
    put_code(codes, dword, bit, u);
}

/* Asymmetric code of x in a group with minimum lo and step s: round_half_even((x - lo) / s)
 * clipped to [0, levels] (0 for a constant group, s = 0). */
static unsigned affine_code(double x, double lo, double s, double levels)
{
    double u = s > 0.0 ? nearbyint((x - lo) / s) : 0.0;
    return (unsigned)(u < 0.0 ? 0.0 : (u > levels ? levels : u));
}

/* Symmetric per-token codes of token t: s = max|x| / qmax, code = round_half_even(x / s),
 * stored as u = code + 2^(b-1) with lo = -2^(b-1) s. */
static void quantize_symmetric(const lm_kvq_cache *cache, const float *x, size_t t, int key,
                               uint8_t *codes, float *params /* {2, pstride} */)
{
    const size_t d = cache->head_dim;
    const int bits = lm_kvq_bits(cache->format);
    const double qmax = (double)((1u << (bits - 1)) - 1u), offset = (double)(1u << (bits - 1));
    double amax = 0.0;
    for (size_t c = 0; c < d; c++)
        amax = fabs((double)x[c]) > amax ? fabs((double)x[c]) : amax;
    const double s = amax / qmax;
    for (size_t c = 0; c < d; c++) {
        double code = s > 0.0 ? nearbyint((double)x[c] / s) : 0.0;
        code = code < -qmax ? -qmax : (code > qmax ? qmax : code);
        if (key)
            put_key(cache, codes, t, c, (unsigned)(code + offset));
        else
            put_value(cache, codes, t, c, (unsigned)(code + offset));
    }
    params[t] = (float)s;
    params[cache->pstride + t] = -(float)offset * params[t]; /* exact: a power of two times s */
}

/* Moves the oldest `group` ring tokens of every head into codes. */
static void quantize_oldest_group(lm_kvq_cache *c)
{
    const size_t d = c->head_dim, ring = c->recent + c->group;
    const int bits = lm_kvq_bits(c->format);
    for (size_t g = 0; g < c->kv_heads; g++) {
        const float *kr = c->k_recent + g * ring * d, *vr = c->v_recent + g * ring * d;
        uint8_t *kc = c->k_codes + g * c->stride, *vc = c->v_codes + g * c->stride;
        float *vp = c->v_params + g * 2 * c->pstride; /* {2, pstride} */
        if (!is_kivi(c->format)) {
            const size_t t = c->quantized, slot = t % ring;
            float *kp = c->k_params + g * 2 * c->pstride;
            quantize_symmetric(c, kr + slot * d, t, 1, kc, kp);
            quantize_symmetric(c, vr + slot * d, t, 0, vc, vp);
            continue;
        }
        /* KIVI keys: per channel over the group's tokens (ring slots may wrap) */
        const double levels = (double)((1u << bits) - 1u);
        float *kp = c->k_params + g * (c->capacity / c->group * 2 * d) +
                    c->quantized / c->group * 2 * d; /* {2, d}: s then lo */
        for (size_t col = 0; col < d; col++) {
            double lo = (double)INFINITY, hi = -(double)INFINITY;
            for (size_t i = 0; i < c->group; i++) {
                double x = (double)kr[((c->quantized + i) % ring) * d + col];
                lo = x < lo ? x : lo;
                hi = x > hi ? x : hi;
            }
            const double step = (hi - lo) / levels;
            for (size_t i = 0; i < c->group; i++) {
                const size_t t = c->quantized + i;
                put_key(c, kc, t, col, affine_code((double)kr[(t % ring) * d + col], lo, step,
                                                   levels));
            }
            kp[col] = (float)step;
            kp[d + col] = (float)lo;
        }
        /* KIVI values: per token over its channels */
        for (size_t i = 0; i < c->group; i++) {
            const size_t t = c->quantized + i;
            const float *x = vr + (t % ring) * d;
            double lo = (double)x[0], hi = (double)x[0];
            for (size_t col = 1; col < d; col++) {
                lo = (double)x[col] < lo ? (double)x[col] : lo;
                hi = (double)x[col] > hi ? (double)x[col] : hi;
            }
            const double step = (hi - lo) / levels;
            for (size_t col = 0; col < d; col++)
                put_value(c, vc, t, col, affine_code((double)x[col], lo, step, levels));
            vp[t] = (float)step;
            vp[c->pstride + t] = (float)lo;
        }
    }
}

lm_status lm_kvq_cache_append(lm_kvq_cache *cache, const float *k, const float *v,
                              lm_error *err)
{
    if (cache == NULL || cache->k_codes == NULL || k == NULL || v == NULL)
        return lm_fail(err, LM_ERR_ARG, "cache, k and v must not be NULL");
    if (cache->length >= cache->capacity)
        return lm_fail(err, LM_ERR_SHAPE, "the cache is full (capacity %zu tokens)",
                       cache->capacity);
    const size_t d = cache->head_dim, ring = cache->recent + cache->group;
    for (size_t i = 0; i < cache->kv_heads * d; i++)
        if (!isfinite(k[i]) || !isfinite(v[i]))
            return lm_fail(err, LM_ERR_NONFINITE, "k and v must contain only finite values");
    const size_t slot = cache->length % ring;
    for (size_t g = 0; g < cache->kv_heads; g++) {
        memcpy(cache->k_recent + (g * ring + slot) * d, k + g * d, d * sizeof(float));
        memcpy(cache->v_recent + (g * ring + slot) * d, v + g * d, d * sizeof(float));
    }
    cache->length++;
    if (cache->length - cache->quantized >= ring) { /* the ring is full: quantize a group */
        quantize_oldest_group(cache);
        cache->quantized += cache->group;
    }
    return LM_OK;
}

unsigned lm_kvq_cache_code(const lm_kvq_cache *cache, int which, size_t g, size_t t, size_t c)
{
    const int bits = lm_kvq_bits(cache->format);
    size_t dword;
    unsigned bit = which == 0 ? lm_kvq_key_slot(t, c, cache->key_rows, bits, &dword)
                              : lm_kvq_value_slot(t, c, cache->head_dim, bits, &dword);
    return get_code((which == 0 ? cache->k_codes : cache->v_codes) + g * cache->stride, dword,
                    bit, bits);
}

lm_status lm_kvq_cache_dequantize(const lm_kvq_cache *cache, double *k, double *v,
                                  lm_error *err)
{
    if (cache == NULL || cache->k_codes == NULL || k == NULL || v == NULL)
        return lm_fail(err, LM_ERR_ARG, "cache, k and v must not be NULL");
    const size_t d = cache->head_dim, n = cache->length;
    const size_t ring = cache->recent + cache->group;
    for (size_t g = 0; g < cache->kv_heads; g++) {
        const float *kp = cache->k_params + g * (is_kivi(cache->format)
                                                     ? cache->capacity / cache->group * 2 * d
                                                     : 2 * cache->pstride);
        const float *vp = cache->v_params + g * 2 * cache->pstride;
        const size_t ps = cache->pstride;
        for (size_t t = 0; t < n; t++) {
            double *ko = k + (g * n + t) * d, *vo = v + (g * n + t) * d;
            if (t >= cache->quantized) {
                for (size_t c = 0; c < d; c++) {
                    ko[c] = (double)cache->k_recent[(g * ring + t % ring) * d + c];
                    vo[c] = (double)cache->v_recent[(g * ring + t % ring) * d + c];
                }
                continue;
            }
            for (size_t c = 0; c < d; c++) {
                double ks, klo;
                if (is_kivi(cache->format)) {
                    ks = (double)kp[t / cache->group * 2 * d + c];
                    klo = (double)kp[t / cache->group * 2 * d + d + c];
                } else {
                    ks = (double)kp[t];
                    klo = (double)kp[ps + t];
                }
                ko[c] = (double)lm_kvq_cache_code(cache, 0, g, t, c) * ks + klo;
                vo[c] = (double)lm_kvq_cache_code(cache, 1, g, t, c) * (double)vp[t] +
                        (double)vp[ps + t];
            }
        }
    }
    return LM_OK;
}

double lm_kvq_bytes_per_token(const lm_kvq_cache *cache)
{
    const double codes = 2.0 * (double)cache->row_bytes;
    const double params = is_kivi(cache->format)
                              ? 8.0 * (double)cache->head_dim / (double)cache->group + 8.0
                              : 16.0;
    return (double)cache->kv_heads * (codes + params);
}

typedef struct kvq_task {
    size_t g, j0, j1; /* quantized tokens [j0, j1), or ring slots when ring is true */
    bool ring;
} kvq_task;

lm_status lm_kvq_decode_check(const lm_kvq_cache *cache, bool have_q_and_o, size_t heads,
                              lm_error *err)
{
    if (cache == NULL || cache->k_codes == NULL || !have_q_and_o)
        return lm_fail(err, LM_ERR_ARG, "cache, q and o must not be NULL");
    if (cache->length == 0)
        return lm_fail(err, LM_ERR_SHAPE, "the cache is empty (n = 0): append a token first");
    if (heads == 0 || heads % cache->kv_heads != 0)
        return lm_fail(err, LM_ERR_SHAPE, "heads (%zu) must be a positive multiple of kv_heads "
                       "(%zu)", heads, cache->kv_heads);
    return LM_OK;
}

lm_status lm_kvq_decode(const lm_kvq_cache *cache, const float *q, size_t heads, float *o,
                        const lm_ops *ops, lm_error *err)
{
    if (lm_ops_check(ops, err) != LM_OK)
        return LM_ERR_ARG;
    lm_status status = lm_kvq_decode_check(cache, q != NULL && o != NULL, heads, err);
    if (status != LM_OK)
        return status;
    const size_t d = cache->head_dim, group = heads / cache->kv_heads;
    for (size_t i = 0; i < heads * d; i++)
        if (!isfinite(q[i]))
            return lm_fail(err, LM_ERR_NONFINITE, "q must contain only finite values");
    const lm_ops *run = d % 16 != 0 ? lm_ops_for(LM_ISA_SCALAR) : ops;
    const size_t ring = cache->recent + cache->group;

    /* tasks: chunks of the codes, then the live ring slots (at most two runs) */
    const size_t threads = (size_t)omp_get_max_threads();
    size_t chunk = cache->quantized * cache->kv_heads / (4 * threads);
    chunk = (chunk + LM_ATTN_DECODE_BLOCK - 1) / LM_ATTN_DECODE_BLOCK * LM_ATTN_DECODE_BLOCK;
    if (chunk < 8 * LM_ATTN_DECODE_BLOCK)
        chunk = 8 * LM_ATTN_DECODE_BLOCK;
    const size_t per_head = (cache->quantized + chunk - 1) / chunk + 2;
    kvq_task *tasks = lm_alloc(cache->kv_heads * per_head * sizeof *tasks);
    size_t *first = lm_alloc((cache->kv_heads + 1) * sizeof *first);
    float *pm = lm_alloc(cache->kv_heads * per_head * group * sizeof(float));
    float *pl = lm_alloc(cache->kv_heads * per_head * group * sizeof(float));
    float *pacc = lm_alloc(cache->kv_heads * per_head * group * d * sizeof(float));
    if (!tasks || !first || !pm || !pl || !pacc) {
        lm_free(tasks), lm_free(first), lm_free(pm), lm_free(pl), lm_free(pacc);
        return lm_fail(err, LM_ERR_NOMEM, "quantized decode partials");
    }
    size_t nt = 0;
    for (size_t g = 0; g < cache->kv_heads; g++) {
        first[g] = nt;
        for (size_t j0 = 0; j0 < cache->quantized; j0 += chunk)
            tasks[nt++] = (kvq_task){g, j0, j0 + chunk < cache->quantized ? j0 + chunk
                                                                          : cache->quantized,
                                     false};
        size_t live = cache->length - cache->quantized, s0 = cache->quantized % ring;
        if (live > 0) {
            size_t run1 = s0 + live <= ring ? live : ring - s0;
            tasks[nt++] = (kvq_task){g, s0, s0 + run1, true};
            if (run1 < live)
                tasks[nt++] = (kvq_task){g, 0, live - run1, true};
        }
    }
    first[cache->kv_heads] = nt;

    const float scale = 1.0f / sqrtf((float)d);
    size_t ws_floats = lm_kvq_decode_workspace_floats(group, d);
    if (ws_floats < lm_attn_decode_workspace_floats(group))
        ws_floats = lm_attn_decode_workspace_floats(group);
    bool out_of_memory = false;
#pragma omp parallel
    {
        float *ws = lm_alloc((ws_floats + 2 * group) * sizeof(float));
        if (ws == NULL) {
#pragma omp atomic write
            out_of_memory = true;
        }
#pragma omp for schedule(dynamic, 1)
        for (long i = 0; i < (long)nt; i++) {
            if (ws == NULL)
                continue;
            const kvq_task *t = &tasks[i];
            const float *qg = q + t->g * group * d;
            float *m = pm + (size_t)i * group, *l = pl + (size_t)i * group;
            float *acc = pacc + (size_t)i * group * d;
            if (t->ring) {
                const size_t base = (t->g * ring + t->j0) * d;
                run->attn_decode_f32(qg, cache->k_recent + base, cache->v_recent + base,
                                     t->j1 - t->j0, d, group, scale, m, l, acc, ws);
                continue;
            }
            const size_t ps = cache->pstride;
            const float *kp = cache->k_params + t->g * (cache->group > 1
                                                            ? cache->capacity / cache->group * 2 * d
                                                            : 2 * ps);
            const float *vp = cache->v_params + t->g * 2 * ps;
            const lm_kvq_view view = {.format = cache->format,
                                      .head_dim = d,
                                      .key_rows = cache->key_rows,
                                      .group = cache->group,
                                      .k_codes = cache->k_codes + t->g * cache->stride,
                                      .v_codes = cache->v_codes + t->g * cache->stride,
                                      .k_params = kp,
                                      .k_scale = kp,
                                      .k_lo = kp + ps,
                                      .v_scale = vp,
                                      .v_lo = vp + ps};
            /* m and l of neighbouring tasks share cache lines: the kernel updates them
             * every block, so it works on this thread's copies (after the workspace) */
            float *ml = ws + ws_floats;
            run->kvq_decode(&view, t->j0, t->j1, qg, group, scale, ml, ml + group, acc, ws);
            memcpy(m, ml, group * sizeof *m);
            memcpy(l, ml + group, group * sizeof *l);
        }
        lm_free(ws);
    }
    if (!out_of_memory)
        for (size_t g = 0; g < cache->kv_heads; g++) {
            const size_t s0 = first[g];
            lm_attn_merge_partials(pm + s0 * group, pl + s0 * group, pacc + s0 * group * d,
                                   first[g + 1] - s0, group, d, o + g * group * d, d);
        }
    lm_free(tasks), lm_free(first), lm_free(pm), lm_free(pl), lm_free(pacc);
    if (out_of_memory)
        return lm_fail(err, LM_ERR_NOMEM, "quantized decode workspace");
    return LM_OK;
}

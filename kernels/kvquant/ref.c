/* Float64 references for the quantized KV cache: symmetric per-vector codes, KIVI's
 * asymmetric per-channel / per-token scheme, bytes per token, and the attention error. */
#include "kvquant.h"

#include "../attention/attention.h"
#include "lm_validate.h"

#include <math.h>

lm_status lm_kvquant_quantize_rows_f64_ref(const double *x, size_t rows, size_t cols,
                                           int bits, int32_t *codes, double *scales,
                                           lm_error *err)
{
    if (x == NULL || codes == NULL || scales == NULL)
        return lm_fail(err, LM_ERR_ARG, "x, codes and scales must not be NULL");
    if (rows == 0 || cols == 0)
        return lm_fail(err, LM_ERR_SHAPE, "x must be non-empty, got {%zu, %zu}", rows, cols);
    if (bits < 2 || bits > 16)
        return lm_fail(err, LM_ERR_ARG, "bits must lie in [2, 16], got %d", bits);
    lm_status status = lm_require_finite_f64("x", x, rows * cols, err);
    if (status != LM_OK)
        return status;
    const double qmax = (double)((1L << (bits - 1)) - 1); /* 7 at 4 bits, 127 at 8 */
    for (size_t r = 0; r < rows; r++) {
        double top = 0.0;
        for (size_t c = 0; c < cols; c++)
            top = fmax(top, fabs(x[r * cols + c]));
        double scale = top / qmax; /* the largest magnitude lands on code qmax */
        scales[r] = scale;
        for (size_t c = 0; c < cols; c++) {
            double code = scale > 0.0 ? nearbyint(x[r * cols + c] / scale) : 0.0;
            code = fmin(fmax(code, -qmax), qmax);
            codes[r * cols + c] = (int32_t)code;
        }
    }
    return LM_OK;
}

lm_status lm_kvquant_dequantize_rows_f64_ref(const int32_t *codes, const double *scales,
                                             size_t rows, size_t cols, double *out,
                                             lm_error *err)
{
    if (codes == NULL || scales == NULL || out == NULL)
        return lm_fail(err, LM_ERR_ARG, "codes, scales and out must not be NULL");
    if (rows == 0 || cols == 0)
        return lm_fail(err, LM_ERR_SHAPE, "codes must be non-empty, got {%zu, %zu}", rows, cols);
    lm_status status = lm_require_finite_f64("scales", scales, rows, err);
    if (status != LM_OK)
        return status;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            out[r * cols + c] = (double)codes[r * cols + c] * scales[r];
    return LM_OK;
}

lm_status lm_kvquant_bytes_per_token(long long layers, long long kv_heads, long long head_dim,
                                     long long bits, long long scale_bits, double *bytes,
                                     lm_error *err)
{
    if (bytes == NULL)
        return lm_fail(err, LM_ERR_ARG, "bytes must not be NULL");
    lm_status status;
    if ((status = lm_require_positive_i64("layers", layers, err)) != LM_OK ||
        (status = lm_require_positive_i64("kv_heads", kv_heads, err)) != LM_OK ||
        (status = lm_require_positive_i64("head_dim", head_dim, err)) != LM_OK ||
        (status = lm_require_positive_i64("bits", bits, err)) != LM_OK ||
        (status = lm_require_non_negative_i64("scale_bits", scale_bits, err)) != LM_OK)
        return status;
    /* the lesson's float formula, in its order of operations */
    *bytes = (double)(2 * layers * kv_heads) *
             ((double)head_dim * (double)bits / 8.0 + (double)scale_bits / 8.0);
    return LM_OK;
}

typedef lm_status (*quant_roundtrip_fn)(const double *x, size_t rows, size_t cols, int bits,
                                        int which, double *out, lm_error *err);

static lm_status symmetric_roundtrip(const double *x, size_t rows, size_t cols, int bits,
                                     int which, double *out, lm_error *err)
{
    (void)which;
    int32_t *codes = lm_alloc(rows * cols * sizeof *codes);
    double *scales = lm_alloc(rows * sizeof *scales);
    lm_status status = LM_OK;
    if (codes == NULL || scales == NULL)
        status = lm_fail(err, LM_ERR_NOMEM, "quantization scratch of %zu x %zu", rows, cols);
    if (status == LM_OK)
        status = lm_kvquant_quantize_rows_f64_ref(x, rows, cols, bits, codes, scales, err);
    if (status == LM_OK)
        status = lm_kvquant_dequantize_rows_f64_ref(codes, scales, rows, cols, out, err);
    lm_free(codes);
    lm_free(scales);
    return status;
}

static lm_status kivi_roundtrip(const double *x, size_t rows, size_t cols, int bits, int which,
                                double *out, lm_error *err)
{
    /* which 0 = keys (per channel), 1 = values (per token) */
    return lm_kvquant_kivi_f64_ref(x, rows, cols, bits,
                                   which == 0 ? LM_KIVI_PER_CHANNEL : LM_KIVI_PER_TOKEN, out,
                                   err);
}

static double frobenius(const double *x, size_t count)
{
    double sum = 0.0;
    for (size_t i = 0; i < count; i++)
        sum += x[i] * x[i];
    return sqrt(sum);
}

static lm_status cache_error(quant_roundtrip_fn roundtrip, int bits, size_t n, size_t d,
                             uint64_t seed, double *error, lm_error *err)
{
    if (error == NULL)
        return lm_fail(err, LM_ERR_ARG, "error must not be NULL");
    if (n == 0 || d == 0)
        return lm_fail(err, LM_ERR_SHAPE, "n and d must be positive, got n=%zu d=%zu", n, d);
    size_t cells = n * d;
    double *buf = lm_alloc(7 * cells * sizeof *buf);
    uint8_t *mask = lm_alloc(n * n);
    if (buf == NULL || mask == NULL) {
        lm_free(buf);
        lm_free(mask);
        return lm_fail(err, LM_ERR_NOMEM, "cache error scratch of %zu x %zu", n, d);
    }
    double *q = buf, *k = q + cells, *v = k + cells, *k_hat = v + cells, *v_hat = k_hat + cells,
           *exact = v_hat + cells, *approx = exact + cells;
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    lm_rng_fill_standard_normal(&rng, q, cells);
    lm_rng_fill_standard_normal(&rng, k, cells);
    lm_rng_fill_standard_normal(&rng, v, cells);
    lm_attn_causal_mask(n, mask, NULL);
    lm_status status = lm_attn_sdpa_f64_ref(q, k, v, mask, true, n, n, d, d, exact, NULL, err);
    if (status == LM_OK)
        status = roundtrip(k, n, d, bits, 0, k_hat, err);
    if (status == LM_OK)
        status = roundtrip(v, n, d, bits, 1, v_hat, err);
    if (status == LM_OK)
        status = lm_attn_sdpa_f64_ref(q, k_hat, v_hat, mask, true, n, n, d, d, approx, NULL, err);
    if (status == LM_OK) {
        for (size_t i = 0; i < cells; i++)
            approx[i] -= exact[i];
        *error = frobenius(approx, cells) / frobenius(exact, cells);
    }
    lm_free(buf);
    lm_free(mask);
    return status;
}

lm_status lm_kvquant_cache_error(int bits, size_t n, size_t d, uint64_t seed, double *error,
                                 lm_error *err)
{
    if (bits < 2 || bits > 16)
        return lm_fail(err, LM_ERR_ARG, "bits must lie in [2, 16], got %d", bits);
    return cache_error(symmetric_roundtrip, bits, n, d, seed, error, err);
}

lm_status lm_kvquant_kivi_f64_ref(const double *x, size_t rows, size_t cols, int bits,
                                  lm_kivi_axis axis, double *out, lm_error *err)
{
    if (x == NULL || out == NULL)
        return lm_fail(err, LM_ERR_ARG, "x and out must not be NULL");
    if (rows == 0 || cols == 0)
        return lm_fail(err, LM_ERR_SHAPE, "x must be non-empty, got {%zu, %zu}", rows, cols);
    if (bits < 1 || bits > 16)
        return lm_fail(err, LM_ERR_ARG, "bits must lie in [1, 16], got %d", bits);
    if (axis != LM_KIVI_PER_TOKEN && axis != LM_KIVI_PER_CHANNEL)
        return lm_fail(err, LM_ERR_ARG, "axis must be LM_KIVI_PER_TOKEN or LM_KIVI_PER_CHANNEL");
    lm_status status = lm_require_finite_f64("x", x, rows * cols, err);
    if (status != LM_OK)
        return status;
    const double levels = (double)((1L << bits) - 1);
    /* a group is a row (per token) or a column (per channel) */
    size_t groups = axis == LM_KIVI_PER_TOKEN ? rows : cols;
    size_t length = axis == LM_KIVI_PER_TOKEN ? cols : rows;
    size_t group_stride = axis == LM_KIVI_PER_TOKEN ? cols : 1;
    size_t element_stride = axis == LM_KIVI_PER_TOKEN ? 1 : cols;
    for (size_t g = 0; g < groups; g++) {
        const double *xg = x + g * group_stride;
        double *og = out + g * group_stride;
        double lo = xg[0], hi = xg[0];
        for (size_t i = 1; i < length; i++) {
            lo = fmin(lo, xg[i * element_stride]);
            hi = fmax(hi, xg[i * element_stride]);
        }
        double scale = (hi - lo) / levels;
        for (size_t i = 0; i < length; i++) {
            double code = scale > 0.0 ? nearbyint((xg[i * element_stride] - lo) / scale) : 0.0;
            code = fmin(fmax(code, 0.0), levels);
            og[i * element_stride] = code * scale + lo;
        }
    }
    return LM_OK;
}

lm_status lm_kvquant_kivi_cache_error(int bits, size_t n, size_t d, uint64_t seed,
                                      double *error, lm_error *err)
{
    if (bits < 1 || bits > 16)
        return lm_fail(err, LM_ERR_ARG, "bits must lie in [1, 16], got %d", bits);
    return cache_error(kivi_roundtrip, bits, n, d, seed, error, err);
}

/* The decode's query quantization (kvquant.h), bit for bit: x holds float32 values;
 * s_q = float32(max|x| / 127), r = float32(127 / max|x|) (0 for x = 0),
 * q8 = round_half_even(float32(x r)) (the product of two float32 is exact in float64). */
static double query_codes(const double *x, size_t d, double *q8)
{
    double amax = 0.0;
    for (size_t c = 0; c < d; c++)
        amax = fmax(amax, fabs(x[c]));
    const double sq = (double)(float)(amax / 127.0);
    const double r = amax > 0.0 ? (double)(float)(127.0 / amax) : 0.0;
    for (size_t c = 0; c < d; c++)
        q8[c] = nearbyint((double)(float)(x[c] * r));
    return sq;
}

/* Score of quantized token t for query q {d} of KV head g (the fast path's formula). */
static double code_score(const lm_kvq_cache *cache, size_t g, size_t t, const double *q,
                         double *xq, double *q8, double *sq)
{
    const size_t d = cache->head_dim;
    const bool kivi = lm_kvq_is_kivi(cache->format);
    double dot = 0.0;
    if (!kivi) {
        const double offset = (double)(1u << (lm_kvq_bits(cache->format) - 1));
        const float *kp = cache->k_params + g * 2 * cache->pstride; /* s row, lo row */
        for (size_t c = 0; c < d; c++)
            dot += q8[c] * ((double)lm_kvq_cache_code(cache, 0, g, t, c) - offset);
        return (double)kp[t] * *sq * dot;
    }
    const float *kp = cache->k_params + g * (cache->capacity / cache->group * 2 * d) +
                      t / cache->group * 2 * d; /* {2, d}: s then lo of t's key group */
    if (t % cache->group == 0) {            /* q * s^k in float32, quantized per group */
        for (size_t c = 0; c < d; c++)
            xq[c] = (double)((float)q[c] * kp[c]);
        *sq = query_codes(xq, d, q8);
    }
    double lo_dot = 0.0;
    for (size_t c = 0; c < d; c++) {
        dot += q8[c] * (double)lm_kvq_cache_code(cache, 0, g, t, c);
        lo_dot += q[c] * (double)kp[d + c];
    }
    return *sq * dot + lo_dot;
}

lm_status lm_kvq_decode_f64_ref(const lm_kvq_cache *cache, const double *q, size_t heads,
                                double *o, double *weight_bound, lm_error *err)
{
    lm_status status = lm_kvq_decode_check(cache, q != NULL && o != NULL, heads, err);
    if (status != LM_OK)
        return status;
    status = lm_require_finite_f64("q", q, heads * cache->head_dim, err);
    if (status != LM_OK)
        return status;
    const size_t d = cache->head_dim, n = cache->length, group = heads / cache->kv_heads;
    const size_t ring = cache->recent + cache->group;
    double *scores = lm_alloc(n * sizeof *scores), *buf = lm_alloc(2 * d * sizeof *buf);
    if (scores == NULL || buf == NULL) {
        lm_free(scores), lm_free(buf);
        return lm_fail(err, LM_ERR_NOMEM, "decode reference scratch of %zu tokens", n);
    }
    double *xq = buf, *q8 = buf + d;
    for (size_t h = 0; h < heads; h++) {
        const size_t g = h / group;
        const double *qh = q + h * d;
        double sq = query_codes(qh, d, q8); /* per-token formats: once per head */
        double top = -(double)INFINITY;
        for (size_t t = 0; t < n; t++) {
            double s = 0.0;
            if (t < cache->quantized) {
                s = code_score(cache, g, t, qh, xq, q8, &sq);
            } else {
                const float *k = cache->k_recent + (g * ring + t % ring) * d;
                for (size_t c = 0; c < d; c++)
                    s += qh[c] * (double)k[c];
            }
            scores[t] = s / sqrt((double)d);
            top = fmax(top, scores[t]);
        }
        double total = 0.0;
        for (size_t t = 0; t < n; t++)
            total += (scores[t] = exp(scores[t] - top));
        const float *vp = cache->v_params + g * 2 * cache->pstride; /* s row, lo row */
        const bool kivi = lm_kvq_is_kivi(cache->format);
        const double offset = kivi ? 0.0 : (double)(1u << (lm_kvq_bits(cache->format) - 1));
        for (size_t c = 0; c < d && weight_bound != NULL; c++) {
            double bound = 0.0;
            for (size_t b0 = 0; b0 < cache->quantized; b0 += 64) {
                double wmax = 0.0, xsum = 0.0;
                for (size_t t = b0; t < b0 + 64 && t < cache->quantized; t++) {
                    wmax = fmax(wmax, scores[t] / total * (double)vp[t]);
                    xsum += fabs((double)lm_kvq_cache_code(cache, 1, g, t, c) - offset);
                }
                bound += wmax / (2.0 * LM_KVQ_WEIGHT_LEVELS) * xsum;
            }
            weight_bound[h * d + c] = bound;
        }
        for (size_t c = 0; c < d; c++) {
            double sum = 0.0;
            for (size_t t = 0; t < n; t++) {
                double v = t < cache->quantized
                               ? (double)lm_kvq_cache_code(cache, 1, g, t, c) * (double)vp[t] +
                                     (double)vp[cache->pstride + t]
                               : (double)cache->v_recent[(g * ring + t % ring) * d + c];
                sum += scores[t] * v;
            }
            o[h * d + c] = sum / total;
        }
    }
    lm_free(scores), lm_free(buf);
    return LM_OK;
}

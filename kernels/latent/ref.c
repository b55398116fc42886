/* Float64 references for the latent KV cache: bytes, the worked example, and a latent
 * attention layer whose expanded and absorbed paths agree. */
#include "latent.h"

#include "../attention/attention.h"
#include "lm_validate.h"

#include <math.h>
#include <string.h>

lm_status lm_latent_kv_bytes_per_token(long long layers, long long latent_dim,
                                       long long rope_dim, long long bits, long long *bytes,
                                       lm_error *err)
{
    if (bytes == NULL)
        return lm_fail(err, LM_ERR_ARG, "bytes must not be NULL");
    lm_status status;
    if ((status = lm_require_positive_i64("layers", layers, err)) != LM_OK ||
        (status = lm_require_positive_i64("latent_dim", latent_dim, err)) != LM_OK ||
        (status = lm_require_non_negative_i64("rope_dim", rope_dim, err)) != LM_OK ||
        (status = lm_require_positive_i64("bits", bits, err)) != LM_OK)
        return status;
    long long numbers, total;
    if (__builtin_add_overflow(latent_dim, rope_dim, &numbers) ||
        __builtin_mul_overflow(layers, numbers, &total) ||
        __builtin_mul_overflow(total, bits, &total))
        return lm_fail(err, LM_ERR_NUMERIC, "the latent cache size overflows 64 bits");
    *bytes = total / 8;
    return LM_OK;
}

/* out {cols} = v {rows} M {rows, cols} */
static void vecmat(const double *v, const double *m, size_t rows, size_t cols, double *out)
{
    for (size_t c = 0; c < cols; c++) {
        double sum = 0.0;
        for (size_t r = 0; r < rows; r++)
            sum += v[r] * m[r * cols + c];
        out[c] = sum;
    }
}

lm_status lm_latent_worked_example(const double *x, const double *w_down, const double *w_uk,
                                   const double *q, size_t d_model, size_t d_latent,
                                   size_t width, double *latent, double *key, double *q_latent,
                                   double *score, double *absorbed_score, lm_error *err)
{
    if (x == NULL || w_down == NULL || w_uk == NULL || q == NULL || latent == NULL ||
        key == NULL || q_latent == NULL || score == NULL || absorbed_score == NULL)
        return lm_fail(err, LM_ERR_ARG, "every array of the worked example must be given");
    if (d_model == 0 || d_latent == 0 || width == 0)
        return lm_fail(err, LM_ERR_SHAPE, "d_model, d_latent and width must be positive");
    lm_status status;
    if ((status = lm_require_finite_f64("x", x, d_model, err)) != LM_OK ||
        (status = lm_require_finite_f64("w_down", w_down, d_model * d_latent, err)) != LM_OK ||
        (status = lm_require_finite_f64("w_uk", w_uk, d_latent * width, err)) != LM_OK ||
        (status = lm_require_finite_f64("q", q, width, err)) != LM_OK)
        return status;
    vecmat(x, w_down, d_model, d_latent, latent); /* c = x W_down */
    vecmat(latent, w_uk, d_latent, width, key);   /* k = c W_uk */
    double s = 0.0;
    for (size_t i = 0; i < width; i++)
        s += q[i] * key[i];
    for (size_t r = 0; r < d_latent; r++) { /* q W_uk^T */
        double sum = 0.0;
        for (size_t i = 0; i < width; i++)
            sum += q[i] * w_uk[r * width + i];
        q_latent[r] = sum;
    }
    double a = 0.0;
    for (size_t r = 0; r < d_latent; r++)
        a += q_latent[r] * latent[r];
    *score = s;
    *absorbed_score = a;
    return LM_OK;
}

void lm_latent_layer_free(lm_latent_layer *layer)
{
    if (layer == NULL)
        return;
    lm_free(layer->w_q);
    lm_free(layer->w_down);
    lm_free(layer->w_uk);
    lm_free(layer->w_uv);
    layer->w_q = layer->w_down = layer->w_uk = layer->w_uv = NULL;
}

static void fill_normal(lm_rng *rng, double scale, double *out, size_t count)
{
    lm_rng_fill_standard_normal(rng, out, count);
    for (size_t i = 0; i < count; i++)
        out[i] = 0.0 + scale * out[i]; /* Generator.normal(0, scale): loc + scale * z */
}

lm_status lm_latent_layer_init(lm_latent_layer *layer, size_t d_model, size_t n_heads,
                               size_t d_head, size_t d_latent, uint64_t seed, lm_error *err)
{
    if (layer == NULL)
        return lm_fail(err, LM_ERR_ARG, "layer must not be NULL");
    memset(layer, 0, sizeof *layer);
    if (d_model == 0)
        return lm_fail(err, LM_ERR_ARG, "d_model must be positive");
    if (n_heads == 0)
        return lm_fail(err, LM_ERR_ARG, "n_heads must be positive");
    if (d_head == 0)
        return lm_fail(err, LM_ERR_ARG, "d_head must be positive");
    if (d_latent == 0)
        return lm_fail(err, LM_ERR_ARG, "d_latent must be positive");
    size_t width = n_heads * d_head;
    layer->d_model = d_model;
    layer->n_heads = n_heads;
    layer->d_head = d_head;
    layer->d_latent = d_latent;
    layer->w_q = lm_alloc(d_model * width * sizeof(double));
    layer->w_down = lm_alloc(d_model * d_latent * sizeof(double));
    layer->w_uk = lm_alloc(d_latent * width * sizeof(double));
    layer->w_uv = lm_alloc(d_latent * width * sizeof(double));
    if (!layer->w_q || !layer->w_down || !layer->w_uk || !layer->w_uv)
        return lm_fail(err, LM_ERR_NOMEM, "latent layer weights");
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    double s = 1.0 / sqrt((double)d_model), s_latent = 1.0 / sqrt((double)d_latent);
    fill_normal(&rng, s, layer->w_q, d_model * width);
    fill_normal(&rng, s, layer->w_down, d_model * d_latent);
    fill_normal(&rng, s_latent, layer->w_uk, d_latent * width);
    fill_normal(&rng, s_latent, layer->w_uv, d_latent * width);
    return LM_OK;
}

static lm_status check_layer(const lm_latent_layer *layer, const double *x, size_t n,
                             lm_error *err)
{
    if (layer == NULL || layer->w_q == NULL || layer->w_down == NULL || layer->w_uk == NULL ||
        layer->w_uv == NULL)
        return lm_fail(err, LM_ERR_ARG, "layer must be initialized");
    if (x == NULL)
        return lm_fail(err, LM_ERR_ARG, "x must not be NULL");
    if (n == 0)
        return lm_fail(err, LM_ERR_SHAPE, "x must hold at least one token");
    return lm_require_finite_f64("x", x, n * layer->d_model, err);
}

/* out {rows, cols} = a {rows, inner} b {inner, cols} */
static void matmul(const double *a, const double *b, size_t rows, size_t inner, size_t cols,
                   double *out)
{
    for (size_t r = 0; r < rows; r++)
        vecmat(a + r * inner, b, inner, cols, out + r * cols);
}

lm_status lm_latent_compress_f64_ref(const lm_latent_layer *layer, const double *x, size_t n,
                                     double *c, lm_error *err)
{
    lm_status status = check_layer(layer, x, n, err);
    if (status != LM_OK)
        return status;
    if (c == NULL)
        return lm_fail(err, LM_ERR_ARG, "c must not be NULL");
    matmul(x, layer->w_down, n, layer->d_model, layer->d_latent, c);
    return LM_OK;
}

static lm_status check_cache(const lm_latent_layer *layer, const double *c, size_t n,
                             double *out, lm_error *err)
{
    if (c == NULL || out == NULL)
        return lm_fail(err, LM_ERR_ARG, "c and out must not be NULL");
    return lm_require_finite_f64("c", c, n * layer->d_latent, err);
}

lm_status lm_latent_attend_f64_ref(const lm_latent_layer *layer, const double *x,
                                   const double *c, size_t n, double *out, lm_error *err)
{
    lm_status status = check_layer(layer, x, n, err);
    if (status == LM_OK)
        status = check_cache(layer, c, n, out, err);
    if (status != LM_OK)
        return status;
    size_t h_count = layer->n_heads, dh = layer->d_head, width = h_count * dh;
    /* Q, K, V {n, width}; per-head slabs {n, dh}; mask {n, n}; head output {n, dh} */
    double *buf = lm_alloc((3 * n * width + 4 * n * dh) * sizeof *buf);
    uint8_t *mask = lm_alloc(n * n);
    if (buf == NULL || mask == NULL) {
        lm_free(buf);
        lm_free(mask);
        return lm_fail(err, LM_ERR_NOMEM, "latent attention scratch for %zu tokens", n);
    }
    double *q = buf, *k = q + n * width, *v = k + n * width, *qh = v + n * width,
           *kh = qh + n * dh, *vh = kh + n * dh, *oh = vh + n * dh;
    matmul(x, layer->w_q, n, layer->d_model, width, q);
    matmul(c, layer->w_uk, n, layer->d_latent, width, k); /* expand the cache */
    matmul(c, layer->w_uv, n, layer->d_latent, width, v);
    lm_attn_causal_mask(n, mask, NULL);
    for (size_t h = 0; h < h_count && status == LM_OK; h++) {
        for (size_t t = 0; t < n; t++)
            for (size_t i = 0; i < dh; i++) {
                qh[t * dh + i] = q[t * width + h * dh + i];
                kh[t * dh + i] = k[t * width + h * dh + i];
                vh[t * dh + i] = v[t * width + h * dh + i];
            }
        status = lm_attn_sdpa_f64_ref(qh, kh, vh, mask, true, n, n, dh, dh, oh, NULL, err);
        for (size_t t = 0; t < n && status == LM_OK; t++)
            for (size_t i = 0; i < dh; i++)
                out[t * width + h * dh + i] = oh[t * dh + i];
    }
    lm_free(buf);
    lm_free(mask);
    return status;
}

lm_status lm_latent_attend_absorbed_f64_ref(const lm_latent_layer *layer, const double *x,
                                            const double *c, size_t n, double *out,
                                            lm_error *err)
{
    lm_status status = check_layer(layer, x, n, err);
    if (status == LM_OK)
        status = check_cache(layer, c, n, out, err);
    if (status != LM_OK)
        return status;
    size_t h_count = layer->n_heads, dh = layer->d_head, width = h_count * dh,
           dl = layer->d_latent;
    /* Q {n, width}; q_latent {dl}; scores {n}; mixed {dl} */
    double *buf = lm_alloc((n * width + dl + n + dl) * sizeof *buf);
    if (buf == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "absorbed attention scratch for %zu tokens", n);
    double *q = buf, *q_latent = q + n * width, *scores = q_latent + dl, *mixed = scores + n;
    matmul(x, layer->w_q, n, layer->d_model, width, q);
    const double root = sqrt((double)dh);
    for (size_t h = 0; h < h_count && status == LM_OK; h++)
        for (size_t t = 0; t < n && status == LM_OK; t++) {
            const double *qt = q + t * width + h * dh;
            for (size_t r = 0; r < dl; r++) { /* q W_uk_h^T: the query in latent space */
                double sum = 0.0;
                for (size_t i = 0; i < dh; i++)
                    sum += qt[i] * layer->w_uk[r * width + h * dh + i];
                q_latent[r] = sum;
            }
            for (size_t j = 0; j < n; j++) {
                if (j > t) {
                    scores[j] = -HUGE_VAL; /* causal */
                    continue;
                }
                double sum = 0.0;
                for (size_t r = 0; r < dl; r++)
                    sum += q_latent[r] * c[j * dl + r];
                scores[j] = sum / root;
            }
            status = lm_attn_softmax_rows_f64_ref(scores, scores, 1, n, err);
            if (status != LM_OK)
                break;
            for (size_t r = 0; r < dl; r++) { /* blend the latents first */
                double sum = 0.0;
                for (size_t j = 0; j < n; j++)
                    sum += scores[j] * c[j * dl + r];
                mixed[r] = sum;
            }
            for (size_t i = 0; i < dh; i++) { /* then expand once per query */
                double sum = 0.0;
                for (size_t r = 0; r < dl; r++)
                    sum += mixed[r] * layer->w_uv[r * width + h * dh + i];
                out[t * width + h * dh + i] = sum;
            }
        }
    lm_free(buf);
    return status;
}

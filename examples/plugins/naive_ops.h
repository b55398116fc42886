/* Plain C loops for a few operators of the plugin ABI (longmix_plugin.h), written from the
 * formulas in the family headers, one output element at a time: what a first port of a
 * kernel looks like before it is made fast. Shared by the example plugins. */
#ifndef NAIVE_OPS_H
#define NAIVE_OPS_H

#include <longmix_plugin.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

/* IEEE binary16 bits -> float (normal, subnormal, inf, NaN). */
static inline float naive_from_f16(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h >> 15) << 31, exponent = (h >> 10) & 0x1f,
                   mantissa = h & 0x3ff;
    float magnitude;
    if (exponent == 0)
        magnitude = ldexpf((float)mantissa, -24);
    else if (exponent == 31)
        magnitude = mantissa ? NAN : INFINITY;
    else
        magnitude = ldexpf((float)(mantissa | 0x400), (int)exponent - 25);
    return sign ? -magnitude : magnitude;
}

static inline float naive_from_bf16(uint16_t b)
{
    const uint32_t bits = (uint32_t)b << 16;
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* Element j of a K/V row block {n, d} stored as f32 (0), f16 (1) or bf16 (2). */
static inline float naive_kv(const void *rows, size_t index, int dtype)
{
    if (dtype == 0)
        return ((const float *)rows)[index];
    const uint16_t bits = ((const uint16_t *)rows)[index];
    return dtype == 1 ? naive_from_f16(bits) : naive_from_bf16(bits);
}

/* Decode partial (lm_attn_decode_fn): for each query head g of the group,
 * s_j = scale q[g] . k[j];  m = max_j s_j;  l = sum_j exp(s_j - m);
 * acc = sum_j exp(s_j - m) v[j]. q {group, d}, k, v {n, d}, m, l {group}, acc {group, d}. */
static inline void naive_decode(const float *q, const void *k, const void *v, size_t n, size_t d,
                         size_t group, float scale, float *m, float *l, float *acc, int dtype)
{
    for (size_t g = 0; g < group; g++) {
        float max = -INFINITY;
        for (size_t j = 0; j < n; j++) {
            float s = 0.0f;
            for (size_t i = 0; i < d; i++)
                s += q[g * d + i] * naive_kv(k, j * d + i, dtype);
            max = fmaxf(max, s * scale);
        }
        float sum = 0.0f;
        for (size_t i = 0; i < d; i++)
            acc[g * d + i] = 0.0f;
        for (size_t j = 0; j < n; j++) {
            float s = 0.0f;
            for (size_t i = 0; i < d; i++)
                s += q[g * d + i] * naive_kv(k, j * d + i, dtype);
            const float p = expf(s * scale - max);
            sum += p;
            for (size_t i = 0; i < d; i++)
                acc[g * d + i] += p * naive_kv(v, j * d + i, dtype);
        }
        m[g] = max;
        l[g] = sum;
    }
}

static inline void naive_decode_f32(const float *q, const void *k, const void *v,
                                    size_t n, size_t d, size_t group, float scale, float *m,
                                    float *l, float *acc, float *workspace)
{
    (void)workspace;
    naive_decode(q, k, v, n, d, group, scale, m, l, acc, 0);
}

static inline void naive_decode_f16(const float *q, const void *k, const void *v,
                                    size_t n, size_t d, size_t group, float scale, float *m,
                                    float *l, float *acc, float *workspace)
{
    (void)workspace;
    naive_decode(q, k, v, n, d, group, scale, m, l, acc, 1);
}

static inline void naive_decode_bf16(const float *q, const void *k, const void *v,
                                    size_t n, size_t d, size_t group, float scale, float *m,
                                    float *l, float *acc, float *workspace)
{
    (void)workspace;
    naive_decode(q, k, v, n, d, group, scale, m, l, acc, 2);
}

/* Causal depthwise conv (lm_conv_causal_fn), batch row bi, channels [d0, d1):
 * y[t, c] = bias[c] + sum_k w[c, k] x[t - (K-1) + k, c], the K-1 inputs before t = 0 from
 * tail_in (oldest first) or 0; tail_out receives the last K-1 inputs. */
static inline float naive_conv_input(const lm_conv_causal_f32 *p, size_t bi, long t, size_t c)
{
    const size_t L = p->length, D = p->channels, K = p->width;
    if (t >= 0)
        return p->x[(bi * L + (size_t)t) * D + c];
    return p->tail_in != NULL ? p->tail_in[(bi * (K - 1) + (size_t)((long)(K - 1) + t)) * D + c]
                              : 0.0f;
}

static inline void naive_conv(const lm_conv_causal_f32 *p, size_t bi, size_t d0, size_t d1)
{
    const size_t L = p->length, D = p->channels, K = p->width;
    for (size_t c = d0; c < d1; c++) {
        for (size_t t = 0; t < L; t++) {
            float acc = p->bias != NULL ? p->bias[c] : 0.0f;
            for (size_t k = 0; k < K; k++)
                acc += p->weight[c * K + k] *
                       naive_conv_input(p, bi, (long)t - (long)(K - 1) + (long)k, c);
            if (p->apply_silu)
                acc = acc / (1.0f + expf(-acc));
            p->y[(bi * L + t) * D + c] = acc;
        }
        for (size_t k = 0; p->tail_out != NULL && k + 1 < K; k++) /* reads ahead of writes */
            p->tail_out[(bi * (K - 1) + k) * D + c] =
                naive_conv_input(p, bi, (long)L - (long)(K - 1) + (long)k, c);
    }
}

/* Mamba-1 selective scan (lm_mamba1_scan_fn), batch row bi, channels [d0, d1):
 * delta = softplus(delta_raw + delta_bias); h[n] = exp(delta a[n]) h[n] + Bbar x b[t, n]
 * with Bbar = delta (Euler) or expm1(delta a)/a (exact ZOH, delta where a = 0);
 * y = sum_n c[t, n] h[n] + skip x, times silu(z) when z is given. */
static inline void naive_mamba1(const lm_ssm_mamba1_f32 *p, size_t bi, size_t d0, size_t d1)
{
    const size_t L = p->length, D = p->channels, N = p->state;
    float h[LM_SSM_MAX_STATE];
    for (size_t c = d0; c < d1; c++) {
        for (size_t n = 0; n < N; n++)
            h[n] = p->h0 != NULL ? p->h0[(bi * D + c) * N + n] : 0.0f;
        for (size_t t = 0; t < L; t++) {
            const size_t row = bi * L + t;
            const float u = p->delta_raw[row * D + c] + (p->delta_bias ? p->delta_bias[c] : 0.0f);
            const float delta = fmaxf(u, 0.0f) + log1pf(expf(-fabsf(u)));
            const float x = p->x[row * D + c];
            float y = 0.0f;
            for (size_t n = 0; n < N; n++) {
                const float a = p->a[c * N + n];
                const float bbar =
                    !p->exact_zoh ? delta : a != 0.0f ? expm1f(delta * a) / a : delta;
                h[n] = expf(delta * a) * h[n] + bbar * x * p->b[row * N + n];
                y += p->c[row * N + n] * h[n];
            }
            y += (p->skip ? p->skip[c] : 0.0f) * x;
            if (p->z != NULL) {
                const float z = p->z[row * D + c];
                y *= z / (1.0f + expf(-z));
            }
            p->y[row * D + c] = y;
        }
        for (size_t n = 0; p->h_final != NULL && n < N; n++)
            p->h_final[(bi * D + c) * N + n] = h[n];
    }
}

#endif

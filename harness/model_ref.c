/* Float64 reference of one decode step of each unit (model_unit.h, "float64 reference"):
 * the readable statement of what model_step.c computes, plain double loops (attention over
 * a quantized cache among them) around the kernels' own float64 oracles (lm_dense_f64_ref,
 * lm_attn_decode_f64_ref, lm_mla_attend_f64_ref, lm_conv_causal_f64_ref,
 * lm_ssm_mamba1_scan_f64_ref, lm_ssm_ssd_f64_ref, lm_delta_gated_f64_ref). Activations are
 * rows {batch, width}; norm(v, eps) = v / sqrt(mean(v^2) + eps) without a gain (the units
 * have none), silu(v) = v / (1 + e^-v), sigmoid(v) = 1 / (1 + e^-v). */
#include "model_unit_impl.h"
#include "try.h"

#include "lm_math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REF_TMP 12

struct lm_unit_ref {
    const lm_unit *u;            /* shapes; the quantized caches (read only) */
    double *w[UNIT_DENSE_MAX];   /* dense[i] decoded {rows, cols} */
    double **expert_w;           /* {expert_w_count} decoded gate, up, down of each expert */
    size_t expert_w_count;       /* the unit's expert_count x 3 (kept: the ref may outlive it) */
    double *k, *v;               /* KV {batch, kv_heads, held, head_dim}: the dense cache, or
                                  * the quantized one dequantized from its codes */
    double *scores, *shift;      /* quantized cache: {held} scratch of one head */
    double *weight_bound;        /* quantized cache: {batch, heads * head_dim}, last step */
    double x_weight_bound;       /* its bound on x after W_o (lm_unit_ref_value_weight_bound) */
    double *ckv, *w_uk, *w_uv;   /* MLA: {batch, held, latent + rope}; absorbed weights */
    double *a, *bias, *skip, *conv_w, *tail, *state; /* SSM / delta parameters and state */
    size_t a_count, skip_count, channels, width, tail_count, state_count;
    double *tmp[REF_TMP];        /* scratch rows, each {batch, widest} */
};

static double silu(double v) { return v / (1.0 + exp(-v)); }
static double sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

/* y {rows, d} = x / sqrt(mean_i x^2 + eps), row by row; y may alias x. */
static void norm_rows(const double *x, size_t rows, size_t d, double eps, double *y)
{
    for (size_t r = 0; r < rows; r++) {
        double ss = 0.0;
        for (size_t i = 0; i < d; i++)
            ss += x[r * d + i] * x[r * d + i];
        double inv = 1.0 / sqrt(ss / (double)d + eps);
        for (size_t i = 0; i < d; i++)
            y[r * d + i] = x[r * d + i] * inv;
    }
}

/* dst {B, w} = columns [c0, c0 + w) of src {B, ld} */
static void cols_of(const double *src, size_t ld, size_t c0, size_t w, size_t B, double *dst)
{
    for (size_t b = 0; b < B; b++)
        memcpy(dst + b * w, src + b * ld + c0, w * sizeof(double));
}

/* y {nb, rows} = x {nb, cols} W^T for the decoded weights of d. */
static lm_status project(const double *w, const lm_dense *d, const double *x, size_t nb,
                         double *y, lm_error *err)
{
    return lm_dense_f64_ref(w, x, nb, d->rows, d->cols, y, err);
}

/* x {B, d} += W_out y */
static lm_status out_residual(lm_unit_ref *r, size_t i, const double *y, double *x, lm_error *err)
{
    const lm_unit *u = r->u;
    size_t n = u->batch * u->dense[i].rows;
    TRY(project(r->w[i], &u->dense[i], y, u->batch, r->tmp[REF_TMP - 1], err));
    for (size_t j = 0; j < n; j++)
        x[j] += r->tmp[REF_TMP - 1][j];
    return LM_OK;
}

/* xc {B, ch} = silu(conv(x) with the shadow's tail), the tail moved on by one token. */
static lm_status conv(lm_unit_ref *r, const double *x, double *xc, lm_error *err)
{
    lm_conv_causal_f64 p = {.batch = r->u->batch, .length = 1, .channels = r->channels,
                            .width = r->width, .x = x, .weight = r->conv_w, .bias = NULL,
                            .tail_in = r->tail, .y = xc, .tail_out = r->tail,
                            .apply_silu = true};
    return lm_conv_causal_f64_ref(&p, err);
}

/* ---- attention over a quantized cache (kernels/kvquant/kvquant.h) ----------------------
 * The cache is read as the fast path stores it: token t < quantized of KV head g is
 *   k_hat[t, c] = u^k[t, c] s^k + lo^k,  v_hat[t, c] = u^v[t, c] s^v_t + lo^v_t   (float64)
 * with s^k, lo^k per token (INT8, INT4) or per channel c of t's key group of 32 / 64 tokens
 * (KIVI), and tokens t >= quantized are the float32 rows of the recent ring (slot t mod
 * (recent + group)). The decode does not use q itself against the codes but its int8 codes
 * Q(x) = s_q q8 (kvquant.h: s_q = float32(max|x| / 127), r = float32(127 / max|x|),
 * q8 = round_half_even(float32(x r))), x = q (INT) or x = float32(q s^k) once per key group
 * (KIVI). That rounding is a choice of the fast path, like the cache's codes: the reference
 * takes it from the fast path's own float32 query qf (the unit's q buffer after its step) and
 * adds its exact effect to each quantized token's score,
 *   INT:  shift_t = sum_c (s_q q8_c - qf_c) k_hat[t, c]
 *   KIVI: shift_t = sum_c (s_q,grp q8_c - qf_c s^k_c) u^k[t, c],
 * so that score_t = q . k_hat_t + shift_t is the fast path's score with q in place of qf: the
 * comparison sees the projections' and the kernel's float32 arithmetic, not the rounding of
 * a code (a discontinuity no tolerance in u covers). */

/* s_q and q8 {d} of x {d} (float32 values), bit for bit as the decode kernels. */
static double query_codes(const double *x, size_t d, double *q8)
{
    double amax = 0.0;
    for (size_t c = 0; c < d; c++)
        amax = fmax(amax, fabs(x[c]));
    const double r = amax > 0.0 ? (double)(float)(127.0 / amax) : 0.0;
    for (size_t c = 0; c < d; c++)
        q8[c] = nearbyint((double)(float)(x[c] * r));
    return (double)(float)(amax / 127.0);
}

/* The key parameters of token t < quantized, channel col, KV head g: *s and *lo. */
static void key_params(const lm_kvq_cache *c, size_t g, size_t t, size_t col, double *s,
                       double *lo)
{
    const size_t d = c->head_dim;
    if (lm_kvq_is_kivi(c->format)) { /* {capacity / group, 2, d} per head */
        const float *kp = c->k_params + g * (c->capacity / c->group * 2 * d) + t / c->group * 2 * d;
        *s = (double)kp[col];
        *lo = (double)kp[d + col];
    } else { /* {2, pstride} per head: s row, lo row */
        const float *kp = c->k_params + g * 2 * c->pstride;
        *s = (double)kp[t];
        *lo = (double)kp[c->pstride + t];
    }
}

/* k, v {kv_heads, length, d} = the cache c read as the decode reads it (above). */
static void dequantize_cache(const lm_kvq_cache *c, double *k, double *v)
{
    const size_t d = c->head_dim, n = c->length, ring = c->recent + c->group;
    for (size_t g = 0; g < c->kv_heads; g++) {
        const float *vp = c->v_params + g * 2 * c->pstride; /* s row, lo row */
        for (size_t t = 0; t < n; t++)
            for (size_t col = 0; col < d; col++) {
                double *kk = k + (g * n + t) * d + col, *vv = v + (g * n + t) * d + col;
                if (t >= c->quantized) {
                    *kk = (double)c->k_recent[(g * ring + t % ring) * d + col];
                    *vv = (double)c->v_recent[(g * ring + t % ring) * d + col];
                    continue;
                }
                double s, lo;
                key_params(c, g, t, col, &s, &lo);
                *kk = (double)lm_kvq_cache_code(c, 0, g, t, col) * s + lo;
                *vv = (double)lm_kvq_cache_code(c, 1, g, t, col) * (double)vp[t] +
                      (double)vp[c->pstride + t];
            }
    }
}

/* shift {quantized} of query head qf {d} (float32) against KV head g (formula above);
 * k_hat {length, d} of g; xq, q8 {d} scratch. */
static void query_shift(const lm_kvq_cache *c, size_t g, const float *qf, const double *k_hat,
                        double *xq, double *q8, double *shift)
{
    const size_t d = c->head_dim;
    const bool kivi = lm_kvq_is_kivi(c->format);
    double sq = 0.0;
    for (size_t t = 0; t < c->quantized; t++) {
        if (t == 0 || (kivi && t % c->group == 0)) { /* the query's codes: per head / group */
            for (size_t col = 0; col < d; col++) {
                double s = 1.0, lo;
                if (kivi)
                    key_params(c, g, t, col, &s, &lo);
                xq[col] = kivi ? (double)((float)qf[col] * (float)s) : (double)qf[col];
            }
            sq = query_codes(xq, d, q8);
            for (size_t col = 0; col < d; col++) { /* xq := Q(x) - x, exactly */
                double s = 1.0, lo;
                if (kivi)
                    key_params(c, g, t, col, &s, &lo);
                xq[col] = sq * q8[col] - (double)qf[col] * s;
            }
        }
        double sum = 0.0;
        for (size_t col = 0; col < d; col++)
            sum += xq[col] * (kivi ? (double)lm_kvq_cache_code(c, 0, g, t, col)
                                   : k_hat[t * d + col]);
        shift[t] = sum;
    }
}

/* bound {d}: how far the VNNI kernel's value weights, p_t s^v_t rounded to 16 bits per block
 * of 64 quantized tokens (LM_KVQ_WEIGHT_LEVELS levels of the block's largest), may move o:
 *   sum over blocks of max_t(p_t s^v_t) / (2 levels) * sum_t |u^v[t, c] - offset|
 * (offset 2^(b-1) symmetric, 0 KIVI), p {length} the softmax weights, KV head g. */
static void value_weight_bound(const lm_kvq_cache *c, size_t g, const double *p, double *bound)
{
    const float *vs = c->v_params + g * 2 * c->pstride;
    const double offset = lm_kvq_is_kivi(c->format) ? 0.0
                                                    : (double)(1u << (lm_kvq_bits(c->format) - 1));
    for (size_t col = 0; col < c->head_dim; col++) {
        double total = 0.0;
        for (size_t b0 = 0; b0 < c->quantized; b0 += 64) {
            double wmax = 0.0, xsum = 0.0;
            for (size_t t = b0; t < b0 + 64 && t < c->quantized; t++) {
                wmax = fmax(wmax, p[t] * (double)vs[t]);
                xsum += fabs((double)lm_kvq_cache_code(c, 1, g, t, col) - offset);
            }
            total += wmax / (2.0 * LM_KVQ_WEIGHT_LEVELS) * xsum;
        }
        bound[col] = total;
    }
}

/* o {H, hd} = softmax_t((q . k_hat_t + shift_t) / sqrt(hd)) v_hat_t per head of sequence b,
 * q {H, hd} the reference's query, qf {H, hd} the fast path's; r->weight_bound's row b. */
static void attend_quantized(lm_unit_ref *r, size_t b, const double *q, const float *qf,
                             double *o)
{
    const lm_unit *u = r->u;
    const lm_kvq_cache *c = &u->kvq[b];
    const size_t H = (size_t)u->cfg.spec->attention.heads, KV = c->kv_heads, d = c->head_dim;
    const size_t n = c->length, per = H / KV;
    double *xq = r->tmp[4] + b * 2 * d, *q8 = xq + d; /* {2 d} of row b */
    for (size_t h = 0; h < H; h++) {
        const size_t g = h / per;
        const double *kh = r->k + (b * KV + g) * n * d, *vh = r->v + (b * KV + g) * n * d;
        query_shift(c, g, qf + h * d, kh, xq, q8, r->shift);
        double top = -(double)INFINITY, total = 0.0;
        for (size_t t = 0; t < n; t++) {
            double s = t < c->quantized ? r->shift[t] : 0.0;
            for (size_t col = 0; col < d; col++)
                s += q[h * d + col] * kh[t * d + col];
            r->scores[t] = s / sqrt((double)d);
            top = fmax(top, r->scores[t]);
        }
        for (size_t t = 0; t < n; t++)
            total += (r->scores[t] = exp(r->scores[t] - top));
        for (size_t t = 0; t < n; t++)
            r->scores[t] /= total;
        for (size_t col = 0; col < d; col++) {
            double sum = 0.0;
            for (size_t t = 0; t < n; t++)
                sum += r->scores[t] * vh[t * d + col];
            o[h * d + col] = sum;
        }
        value_weight_bound(c, g, r->scores, r->weight_bound + (b * H + h) * d);
    }
}

/* r->x_weight_bound = max over the batch's outputs of |W_o| r->weight_bound (the gate, in
 * [0, 1], only shrinks it): how far the value weights' rounding may move x. */
static void weight_bound_after_out(lm_unit_ref *r)
{
    const lm_dense *wo = &r->u->dense[3];
    double worst = 0.0;
    for (size_t b = 0; b < r->u->batch; b++)
        for (size_t i = 0; i < wo->rows; i++) {
            double sum = 0.0;
            for (size_t j = 0; j < wo->cols; j++)
                sum += fabs(r->w[3][i * wo->cols + j]) * r->weight_bound[b * wo->cols + j];
            worst = fmax(worst, sum);
        }
    r->x_weight_bound = worst;
}

double lm_unit_ref_value_weight_bound(const lm_unit_ref *r) { return r->x_weight_bound; }

/* Attention (GQA, optionally a sliding window: the cache holds min(ctx, window) tokens):
 *   h = norm(x, 1e-5),  q = W_q h
 *   o = softmax(q K^T / sqrt(hd)) V per head over the held tokens (KV head = head / (H / KV))
 *       (a quantized cache: K, V dequantized and the query codes' shift, above)
 *   o *= sigmoid(W_gate h)                                              (q_gate only)
 *   x += W_o o
 * The step's k and v projections of the new token are not appended to the cache (docs/
 * models.md, "Not modelled"), so they do not enter x and are not computed here; the cache,
 * and so its codes, is the same at every step. */
static lm_status ref_attention(lm_unit_ref *r, double *x, lm_error *err)
{
    const lm_unit *u = r->u;
    const lm_model_spec *s = u->cfg.spec;
    size_t B = u->batch, d = (size_t)s->d_model, H = (size_t)s->attention.heads;
    size_t KV = (size_t)s->attention.kv_heads, hd = (size_t)s->attention.head_dim;
    double *h = r->tmp[0], *q = r->tmp[1], *o = r->tmp[2], *gate = r->tmp[3];
    norm_rows(x, B, d, 1e-5, h);
    TRY(project(r->w[0], &u->dense[0], h, B, q, err));
    if (!u->cfg.cache.quantized) {
        TRY(lm_attn_decode_f64_ref(q, r->k, r->v, u->lengths, o, B, H, KV, hd, u->held, err));
    } else {
        for (size_t b = 0; b < B; b++) /* u->buf[1]: the fast path's q {B, H hd} */
            attend_quantized(r, b, q + b * H * hd, u->buf[1] + b * H * hd, o + b * H * hd);
        weight_bound_after_out(r);
    }
    if (s->attention.q_gate) {
        TRY(project(r->w[4], &u->dense[4], h, B, gate, err));
        for (size_t i = 0; i < B * H * hd; i++)
            o[i] *= sigmoid(gate[i]);
    }
    return out_residual(r, 3, o, x, err);
}

/* MLA (absorbed in the fast path; the reference is the expanded form, the same sums):
 *   h = norm(x, 1e-6),  q = W_q h  {heads, nope + rope}
 *   o_h = sum_j softmax_j((q_nope . c_j W_uk_h + q_rope . k_rope_j) / sqrt(nope + rope))
 *         c_j W_uv_h   over the held rows ckv_j = [c_j, k_rope_j]
 *   x += W_o o
 * The kv_a projection of the new token and its norm are not appended (as in attention). */
static lm_status ref_mla(lm_unit_ref *r, double *x, lm_error *err)
{
    const lm_unit *u = r->u;
    const lm_model_spec *s = u->cfg.spec;
    size_t B = u->batch, d = (size_t)s->d_model, H = (size_t)s->mla.heads;
    size_t L = (size_t)s->mla.latent, R = (size_t)s->mla.rope, NO = (size_t)s->mla.nope;
    size_t V = (size_t)s->mla.v_dim;
    lm_mla_shape shape = {H, L, R, NO, V};
    double *h = r->tmp[0], *q = r->tmp[1], *o = r->tmp[2];
    norm_rows(x, B, d, 1e-6, h);
    TRY(project(r->w[0], &u->dense[0], h, B, q, err));
    for (size_t b = 0; b < B; b++)
        TRY(lm_mla_attend_f64_ref(&shape, q + b * H * (NO + R), r->ckv + b * u->held * (L + R),
                                  r->w_uk, r->w_uv, 1, u->held, false, o + b * H * V, err));
    return out_residual(r, 2, o, x, err);
}

/* Mamba-1:
 *   h = norm(x, 1e-5),  [xs, z] = W_in h               xs, z {Di}
 *   xc = silu(conv(xs))                                 (tail: the last K-1 xs)
 *   [dt_low, Bt, Ct] = W_x xc,  dt = W_dt dt_low        dt_low {R}, Bt, Ct {N}, dt {Di}
 *   delta = softplus(dt + bias),  h[d,n] = exp(delta A[d,n]) h[d,n] + delta Bt[n] xc[d]
 *   y[d] = (sum_n Ct[n] h[d,n] + skip[d] xc[d]) silu(z[d])
 *   x += W_out y */
static lm_status ref_mamba1(lm_unit_ref *r, double *x, lm_error *err)
{
    const lm_unit *u = r->u;
    const lm_model_spec *s = u->cfg.spec;
    size_t B = u->batch, d = (size_t)s->d_model, Di = (size_t)s->mamba1.d_inner;
    size_t N = (size_t)s->mamba1.d_state, R = (size_t)s->mamba1.dt_rank;
    double *h = r->tmp[0], *xz = r->tmp[1], *xs = r->tmp[2], *z = r->tmp[3], *xc = r->tmp[4];
    double *dbc = r->tmp[5], *dtl = r->tmp[6], *dt = r->tmp[7], *bt = r->tmp[8];
    double *ct = r->tmp[9], *y = r->tmp[10];
    norm_rows(x, B, d, 1e-5, h);
    TRY(project(r->w[0], &u->dense[0], h, B, xz, err));
    cols_of(xz, 2 * Di, 0, Di, B, xs);
    cols_of(xz, 2 * Di, Di, Di, B, z);
    TRY(conv(r, xs, xc, err));
    TRY(project(r->w[1], &u->dense[1], xc, B, dbc, err));
    cols_of(dbc, R + 2 * N, 0, R, B, dtl);
    cols_of(dbc, R + 2 * N, R, N, B, bt);
    cols_of(dbc, R + 2 * N, R + N, N, B, ct);
    TRY(project(r->w[2], &u->dense[2], dtl, B, dt, err));
    lm_ssm_mamba1_f64 p = {.batch = B, .length = 1, .channels = Di, .state = N, .x = xc,
                           .delta_raw = dt, .delta_bias = r->bias, .a = r->a, .b = bt, .c = ct,
                           .skip = r->skip, .z = z, .h0 = r->state, .y = y,
                           .h_final = r->state, .exact_zoh = false};
    TRY(lm_ssm_mamba1_scan_f64_ref(&p, err));
    return out_residual(r, 3, y, x, err);
}

/* Mamba-2 (heads H = Di / P, groups G):
 *   h = norm(x, 1e-5),  [z, xBC, dt] = W_in h           z {Di}, xBC {Di + 2 G N}, dt {H}
 *   [xs, Bt, Ct] = silu(conv(xBC))                       xs {H, P}, Bt, Ct {G, N}
 *   delta_h = softplus(dt[h] + bias[h]),  S_h = exp(delta_h A[h]) S_h + delta_h xs_h Bt_g^T
 *   y_h = S_h Ct_g + skip[h] xs_h                        (g = h / (H / G))
 *   y = norm(y * silu(z), 1e-5)                          (the gated RMSNorm)
 *   x += W_out y */
static lm_status ref_mamba2(lm_unit_ref *r, double *x, lm_error *err)
{
    const lm_unit *u = r->u;
    const lm_model_spec *s = u->cfg.spec;
    size_t B = u->batch, d = (size_t)s->d_model, Di = (size_t)s->mamba2.d_inner;
    size_t N = (size_t)s->mamba2.d_state, G = (size_t)s->mamba2.groups;
    size_t P = (size_t)s->mamba2.head_dim, H = Di / P, ch = Di + 2 * G * N;
    size_t in_w = 2 * Di + 2 * G * N + H;
    double *h = r->tmp[0], *zx = r->tmp[1], *z = r->tmp[2], *xbc = r->tmp[3], *dt = r->tmp[4];
    double *xc = r->tmp[5], *xs = r->tmp[6], *bt = r->tmp[7], *ct = r->tmp[8], *y = r->tmp[9];
    norm_rows(x, B, d, 1e-5, h);
    TRY(project(r->w[0], &u->dense[0], h, B, zx, err));
    cols_of(zx, in_w, 0, Di, B, z);
    cols_of(zx, in_w, Di, ch, B, xbc);
    cols_of(zx, in_w, Di + ch, H, B, dt);
    TRY(conv(r, xbc, xc, err));
    cols_of(xc, ch, 0, Di, B, xs);
    cols_of(xc, ch, Di, G * N, B, bt);
    cols_of(xc, ch, Di + G * N, G * N, B, ct);
    lm_ssm_ssd_f64 p = {.batch = B, .length = 1, .heads = H, .head_dim = P, .groups = G,
                        .state = N, .x = xs, .dt_raw = dt, .dt_bias = r->bias, .a = r->a,
                        .b = bt, .c = ct, .skip = r->skip, .h0 = r->state, .y = y,
                        .h_final = r->state};
    TRY(lm_ssm_ssd_f64_ref(&p, err));
    for (size_t i = 0; i < B * Di; i++)
        y[i] *= silu(z[i]);
    norm_rows(y, B, Di, 1e-5, y);
    return out_residual(r, 1, y, x, err);
}

/* Gated DeltaNet (key heads Hk, value heads Hv = rep Hk, key width kw = Hk dk, vw = Hv dv):
 *   h = norm(x, 1e-6),  [qkv, z] = W_qkvz h,  [b, g] = W_ba h     qkv {2 kw + vw}, z {vw}
 *   [q, k, v] = silu(conv(qkv)); value head j reads key head j / rep of q and k
 *   beta_j = sigmoid(b_j),  gate_j = exp(-softplus(g_j) / 10)
 *   S_j = gate S_j + beta (v_j - gate S_j k^) k^^T,  y_j = S_j q_j   (k^ = k / |k|)
 *   y_j = norm(y_j, 1e-6) * silu(z_j)                              (per head, width dv)
 *   x += W_out y */
static lm_status ref_delta(lm_unit_ref *r, double *x, lm_error *err)
{
    const lm_unit *u = r->u;
    const lm_model_spec *s = u->cfg.spec;
    size_t B = u->batch, d = (size_t)s->d_model, Hk = (size_t)s->delta.key_heads;
    size_t Hv = (size_t)s->delta.value_heads, dk = (size_t)s->delta.key_dim;
    size_t dv = (size_t)s->delta.value_dim, kw = Hk * dk, vw = Hv * dv, ch = 2 * kw + vw;
    size_t rep = Hv / Hk, in_w = 2 * kw + 2 * vw;
    double *h = r->tmp[0], *qkvz = r->tmp[1], *ba = r->tmp[2], *qkv = r->tmp[3];
    double *xc = r->tmp[4], *q = r->tmp[5], *k = r->tmp[6], *v = r->tmp[7], *bg = r->tmp[8];
    double *y = r->tmp[9];
    norm_rows(x, B, d, 1e-6, h);
    TRY(project(r->w[0], &u->dense[0], h, B, qkvz, err));
    TRY(project(r->w[1], &u->dense[1], h, B, ba, err));
    cols_of(qkvz, in_w, 0, ch, B, qkv);
    TRY(conv(r, qkv, xc, err));
    for (size_t b = 0; b < B; b++)
        for (size_t j = 0; j < Hv; j++) {
            const double *row = xc + b * ch;
            memcpy(q + (b * Hv + j) * dk, row + (j / rep) * dk, dk * sizeof(double));
            memcpy(k + (b * Hv + j) * dk, row + kw + (j / rep) * dk, dk * sizeof(double));
            memcpy(v + (b * Hv + j) * dv, row + 2 * kw + j * dv, dv * sizeof(double));
            bg[b * Hv + j] = sigmoid(ba[b * 2 * Hv + j]);
            bg[B * Hv + b * Hv + j] = exp(-lm_softplus_f64(ba[b * 2 * Hv + Hv + j]) * 0.1);
        }
    lm_delta_seq_f64 p = {.heads = B * Hv, .length = 1, .d_key = dk, .d_value = dv, .q = q,
                          .k = k, .v = v, .beta = bg, .gate = bg + B * Hv, .s0 = r->state,
                          .y = y, .s_final = r->state};
    TRY(lm_delta_gated_f64_ref(&p, err));
    norm_rows(y, B * Hv, dv, 1e-6, y);
    for (size_t b = 0; b < B; b++)
        for (size_t i = 0; i < vw; i++)
            y[b * vw + i] *= silu(qkvz[b * in_w + ch + i]);
    return out_residual(r, 2, y, x, err);
}

/* acc {nb, d} += w W_down (silu(W_gate h) * (W_up h)) over the first nb rows of h. */
static lm_status swiglu(lm_unit_ref *r, double *const wt[3], const lm_dense *dn, const double *h,
                        size_t nb, double w, double *acc, lm_error *err)
{
    size_t ff = dn[0].rows, d = dn[2].rows;
    double *g = r->tmp[1], *up = r->tmp[2], *down = r->tmp[3];
    TRY(project(wt[0], &dn[0], h, nb, g, err));
    TRY(project(wt[1], &dn[1], h, nb, up, err));
    for (size_t i = 0; i < nb * ff; i++)
        g[i] = silu(g[i]) * up[i];
    TRY(project(wt[2], &dn[2], g, nb, down, err));
    for (size_t i = 0; i < nb * d; i++)
        acc[i] += w * down[i];
    return LM_OK;
}

/* MLP: h = norm(x, 1e-5); dense: x += swiglu(h); MoE: x += swiglu_shared(h) + sum over the
 * experts the unit holds of (1 / active) swiglu_e(h) on the batch's first per_expert rows
 * (uniform routing, model_unit.h; the router's logits do not choose and are not computed). */
static lm_status ref_mlp(lm_unit_ref *r, double *x, lm_error *err)
{
    const lm_unit *u = r->u;
    const lm_model_spec *s = u->cfg.spec;
    size_t B = u->batch, d = (size_t)s->d_model;
    double *h = r->tmp[0], *acc = r->tmp[4];
    norm_rows(x, B, d, 1e-5, h);
    memset(acc, 0, B * d * sizeof(double));
    if (u->cfg.kind == LM_MLP_DENSE) {
        TRY(swiglu(r, r->w, u->dense, h, B, 1.0, acc, err));
    } else {
        if (s->moe.shared_d_ff > 0)
            TRY(swiglu(r, r->w + 1, u->dense + 1, h, B, 1.0, acc, err));
        for (size_t e = 0; e < u->expert_count; e++)
            TRY(swiglu(r, r->expert_w + 3 * e, u->experts + 3 * e, h, u->per_expert,
                       1.0 / (double)s->moe.active, acc, err));
    }
    for (size_t i = 0; i < B * d; i++)
        x[i] += acc[i];
    return LM_OK;
}

lm_status lm_unit_ref_step(lm_unit_ref *r, double *x, lm_error *err)
{
    const lm_unit *u = r->u;
    if (u->cfg.role == LM_UNIT_MLP)
        return ref_mlp(r, x, err);
    switch ((lm_mixer_kind)u->cfg.kind) {
    case LM_MIXER_ATTENTION: return ref_attention(r, x, err);
    case LM_MIXER_MLA: return ref_mla(r, x, err);
    case LM_MIXER_MAMBA1: return ref_mamba1(r, x, err);
    case LM_MIXER_MAMBA2: return ref_mamba2(r, x, err);
    case LM_MIXER_DELTA: return ref_delta(r, x, err);
    default: return lm_fail(err, LM_ERR_ARG, "unknown mixer kind %d", u->cfg.kind);
    }
}

/* ---- the shadow ----------------------------------------------------------------------- */

static double *copy_f32(const float *src, size_t count)
{
    double *dst = malloc((count > 0 ? count : 1) * sizeof *dst);
    for (size_t i = 0; dst != NULL && src != NULL && i < count; i++)
        dst[i] = (double)src[i];
    return dst;
}

static double *decode_dense(const lm_dense *d)
{
    double *w = malloc(d->rows * d->cols * sizeof *w);
    for (size_t i = 0; w != NULL && i < d->rows; i++)
        for (size_t c = 0; c < d->cols; c++)
            w[i * d->cols + c] = lm_dense_weight(d, i, c);
    return w;
}

/* The sizes of ssm_params (model_unit.c): a, bias / skip, conv channels and width, state. */
static void recurrent_sizes(lm_unit_ref *r)
{
    const lm_unit *u = r->u;
    const lm_model_spec *s = u->cfg.spec;
    size_t B = u->batch;
    switch ((lm_mixer_kind)u->cfg.kind) {
    case LM_MIXER_MAMBA1: {
        size_t Di = (size_t)s->mamba1.d_inner, N = (size_t)s->mamba1.d_state;
        r->a_count = Di * N, r->skip_count = Di, r->channels = Di;
        r->width = (size_t)s->mamba1.d_conv, r->state_count = B * Di * N;
        break;
    }
    case LM_MIXER_MAMBA2: {
        size_t Di = (size_t)s->mamba2.d_inner, N = (size_t)s->mamba2.d_state;
        size_t H = Di / (size_t)s->mamba2.head_dim;
        r->a_count = H, r->skip_count = H;
        r->channels = Di + 2 * (size_t)s->mamba2.groups * N;
        r->width = (size_t)s->mamba2.d_conv, r->state_count = B * Di * N;
        break;
    }
    case LM_MIXER_DELTA: {
        size_t Hv = (size_t)s->delta.value_heads;
        r->a_count = 1, r->skip_count = 1;
        r->channels = 2 * (size_t)(s->delta.key_heads * s->delta.key_dim) +
                      Hv * (size_t)s->delta.value_dim;
        r->width = (size_t)s->delta.d_conv;
        r->state_count = B * Hv * (size_t)(s->delta.value_dim * s->delta.key_dim);
        break;
    }
    default:
        return;
    }
    r->tail_count = B * r->channels * (r->width > 1 ? r->width - 1 : 1);
}

static size_t dense_widest(const lm_dense *d, size_t count, size_t widest)
{
    for (size_t i = 0; i < count; i++) {
        widest = d[i].rows > widest ? d[i].rows : widest;
        widest = d[i].cols > widest ? d[i].cols : widest;
    }
    return widest;
}

static bool copy_state(lm_unit_ref *r)
{
    const lm_unit *u = r->u;
    const lm_model_spec *s = u->cfg.spec;
    size_t B = u->batch;
    if (u->cfg.role == LM_UNIT_MLP)
        return true;
    switch ((lm_mixer_kind)u->cfg.kind) {
    case LM_MIXER_ATTENTION: {
        size_t count = B * (size_t)(s->attention.kv_heads * s->attention.head_dim) * u->held;
        if (u->cfg.cache.quantized) { /* read once: a step does not change the cache */
            size_t per = count / B, H = (size_t)s->attention.heads;
            r->k = malloc(count * sizeof *r->k);
            r->v = malloc(count * sizeof *r->v);
            r->scores = malloc(u->held * sizeof *r->scores);
            r->shift = malloc(u->held * sizeof *r->shift);
            r->weight_bound = malloc(B * H * (size_t)s->attention.head_dim * sizeof(double));
            bool ok = r->k && r->v && r->scores && r->shift && r->weight_bound;
            for (size_t b = 0; ok && b < B; b++)
                dequantize_cache(&u->kvq[b], r->k + b * per, r->v + b * per);
            return ok;
        }
        float *row = malloc(count * sizeof *row);
        bool ok = row != NULL;
        if (ok) {
            lm_kv_load(u->cfg.cache.dense, u->k, row, count);
            ok = (r->k = copy_f32(row, count)) != NULL;
            lm_kv_load(u->cfg.cache.dense, u->v, row, count);
            ok = ok && (r->v = copy_f32(row, count)) != NULL;
        }
        free(row);
        return ok;
    }
    case LM_MIXER_MLA: {
        size_t L = (size_t)s->mla.latent, H = (size_t)s->mla.heads;
        r->ckv = copy_f32(u->ckv, B * u->held * (L + (size_t)s->mla.rope));
        r->w_uk = copy_f32(u->w_uk, L * H * (size_t)s->mla.nope);
        r->w_uv = copy_f32(u->w_uv, L * H * (size_t)s->mla.v_dim);
        return r->ckv != NULL && r->w_uk != NULL && r->w_uv != NULL;
    }
    default:
        recurrent_sizes(r);
        r->a = copy_f32(u->a, r->a_count);
        r->bias = copy_f32(u->bias, r->skip_count);
        r->skip = copy_f32(u->skip, r->skip_count);
        r->conv_w = copy_f32(u->conv_w, r->channels * r->width);
        r->tail = copy_f32(u->tail, r->tail_count);
        r->state = copy_f32(u->state, r->state_count);
        return r->a && r->bias && r->skip && r->conv_w && r->tail && r->state;
    }
}

lm_status lm_unit_ref_create(const lm_unit *u, lm_unit_ref **out, lm_error *err)
{
    *out = NULL;
    if (u->cfg.role == LM_UNIT_HEAD)
        return lm_fail(err, LM_ERR_ARG, "the LM head unit has no float64 reference");
    lm_unit_ref *r = calloc(1, sizeof *r);
    if (r == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for a unit's reference");
    r->u = u;
    bool ok = true;
    for (size_t i = 0; i < u->dense_count && ok; i++)
        ok = (r->w[i] = decode_dense(&u->dense[i])) != NULL;
    if (ok && u->expert_count > 0) {
        ok = (r->expert_w = calloc(u->expert_count * 3, sizeof *r->expert_w)) != NULL;
        r->expert_w_count = ok ? u->expert_count * 3 : 0;
        for (size_t e = 0; e < u->expert_count * 3 && ok; e++)
            ok = (r->expert_w[e] = decode_dense(&u->experts[e])) != NULL;
    }
    size_t widest = dense_widest(u->dense, u->dense_count, 1);
    widest = dense_widest(u->experts, u->expert_count * 3, widest);
    if (u->cfg.role == LM_UNIT_MIXER && u->cfg.kind == LM_MIXER_DELTA) { /* q, k {Hv, dk} */
        size_t qk = (size_t)(u->cfg.spec->delta.value_heads * u->cfg.spec->delta.key_dim);
        widest = qk > widest ? qk : widest;
    }
    if (u->cfg.role == LM_UNIT_MIXER && u->cfg.kind == LM_MIXER_ATTENTION) /* xq, q8 {2 hd} */
        widest = 2 * (size_t)u->cfg.spec->attention.head_dim > widest
                     ? 2 * (size_t)u->cfg.spec->attention.head_dim : widest;
    for (size_t i = 0; i < REF_TMP && ok; i++)
        ok = (r->tmp[i] = malloc(u->batch * widest * sizeof(double))) != NULL;
    ok = ok && copy_state(r);
    if (!ok) {
        lm_unit_ref_free(r);
        return lm_fail(err, LM_ERR_NOMEM, "out of memory for a unit's reference");
    }
    *out = r;
    return LM_OK;
}

void lm_unit_ref_free(lm_unit_ref *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < UNIT_DENSE_MAX; i++)
        free(r->w[i]);
    for (size_t e = 0; e < r->expert_w_count; e++)
        free(r->expert_w[e]);
    free(r->expert_w);
    double *owned[] = {r->k, r->v, r->scores, r->shift, r->weight_bound, r->ckv, r->w_uk, r->w_uv, r->a, r->bias, r->skip,
                       r->conv_w, r->tail, r->state};
    for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
        free(owned[i]);
    for (size_t i = 0; i < REF_TMP; i++)
        free(r->tmp[i]);
    free(r);
}

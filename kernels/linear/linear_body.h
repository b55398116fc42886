/* The multi-head linear-attention kernels (linear.h), written once and instantiated per
 * ISA through the mapping layer kernels/simd/<isa>.h; RECURRENT_NAME and CHUNKED_NAME
 * name the two public functions. Vectors run along the rows of row-major matrices (the
 * value dimension of S and y, the key index of the score rows); small matrix products run on
 * the register-blocked micro-kernel of gemm_body.h. */
#include "gemm_body.h"
#include "../simd/state_row.h"

static inline float feature(lm_linear_feature f, float x)
{
    return f == LM_LINEAR_IDENTITY ? x : (x > 0.0f ? x + 1.0f : expf(x)); /* elu + 1 */
}


/* ---- the recurrent form: token by token, one pass over S per token --------------------
 * Per token, on S {dk, dv}: s_c = a_c s_c + fk_c v, y = sum_c fq_c s_c (rows s_c of S). The
 * value columns are independent, so they run in panels of nv vectors whose v and y stay in
 * registers (RP = 8 vectors with 32 registers: v, and y as two sums over even and odd rows,
 * which halves the FMA chains; 4 on AVX2's 16), then panels of 4, 2 and 1 vectors, then the
 * last columns one float at a time. S is read and written once per token. */
enum { RP = LM_W == 8 ? 4 : 8 };

/* The gate of row c: per channel (gc, a row of dk gates), else the token's scalar a. */
static inline float lin_gate(const float *gc, float a, size_t c) { return gc ? gc[c] : a; }

/* One token for the nv vectors of value columns at S, v, y (nv <= RP). */
static inline __attribute__((always_inline)) void
lin_panel(float *S, size_t dk, size_t dv, const float *fk, const float *fq, const float *gc,
          float a, const float *v, float *y, int nv, bool gated)
{
    LM_V vv[RP], y0[RP], y1[RP];
    _Pragma("GCC unroll 8") for (int e = 0; e < nv; e++) {
        vv[e] = V_LOADU(v + e * LM_W);
        y0[e] = y1[e] = V_SET1(0.0f);
    }
    size_t c = 0;
    for (; c + 2 <= dk; c += 2) {
        state_row_update(S + c * dv, lin_gate(gc, a, c), fk[c], fq[c], vv, y0, nv, gated);
        state_row_update(S + (c + 1) * dv, lin_gate(gc, a, c + 1), fk[c + 1], fq[c + 1], vv,
                         y1, nv, gated);
    }
    if (c < dk)
        state_row_update(S + c * dv, lin_gate(gc, a, c), fk[c], fq[c], vv, y0, nv, gated);
    _Pragma("GCC unroll 8") for (int e = 0; e < nv; e++)
        V_STOREU(y + e * LM_W, V_ADD(y0[e], y1[e]));
}

/* One token over all dv columns of S, y (see above). */
static inline __attribute__((always_inline)) void
lin_token(float *S, size_t dk, size_t dv, const float *fk, const float *fq, const float *gc,
          float a, const float *v, float *y, bool gated)
{
    size_t j = 0;
    for (; j + RP * LM_W <= dv; j += RP * LM_W)
        lin_panel(S + j, dk, dv, fk, fq, gc, a, v + j, y + j, RP, gated);
    if (RP > 4 && j + 4 * LM_W <= dv) {
        lin_panel(S + j, dk, dv, fk, fq, gc, a, v + j, y + j, 4, gated);
        j += 4 * LM_W;
    }
    if (j + 2 * LM_W <= dv) {
        lin_panel(S + j, dk, dv, fk, fq, gc, a, v + j, y + j, 2, gated);
        j += 2 * LM_W;
    }
    for (; j + LM_W <= dv; j += LM_W)
        lin_panel(S + j, dk, dv, fk, fq, gc, a, v + j, y + j, 1, gated);
    for (; j < dv; j++) { /* the last columns, one float each */
        float acc = 0.0f;
        for (size_t c = 0; c < dk; c++) {
            float *s = S + c * dv + j;
            *s = fk[c] * v[j] + (gated ? lin_gate(gc, a, c) : 1.0f) * *s;
            acc += fq[c] * *s;
        }
        y[j] = acc;
    }
}

/* The normalizer's running sum z = a z + fk (a per channel from gc, else the scalar a);
 * returns fq . z. */
static float lin_norm_sum(float *z, size_t dk, const float *fk, const float *fq,
                          const float *gc, float a)
{
    LM_V acc = V_SET1(0.0f);
    size_t c = 0;
    for (; c + LM_W <= dk; c += LM_W) {
        const LM_V va = gc ? V_LOADU(gc + c) : V_SET1(a);
        const LM_V zc = V_FMA(va, V_LOADU(z + c), V_LOADU(fk + c));
        V_STOREU(z + c, zc);
        acc = V_FMA(V_LOADU(fq + c), zc, acc);
    }
    float den = V_HSUM(acc);
    for (; c < dk; c++) {
        z[c] = lin_gate(gc, a, c) * z[c] + fk[c];
        den += fq[c] * z[c];
    }
    return den;
}

static void lin_tokens(const lm_linear_f32 *p, size_t h, float *S, float *z, float *fq,
                       float *fk, bool gated)
{
    const size_t L = p->length, dk = p->d_key, dv = p->d_value;
    const bool track_z = p->normalize || p->z_final != NULL; /* z feeds nothing else */
    for (size_t t = 0; t < L; t++) {
        const size_t row = h * L + t;
        for (size_t c = 0; c < dk; c++) {
            fq[c] = feature(p->feature, p->q[row * dk + c]);
            fk[c] = feature(p->feature, p->k[row * dk + c]);
        }
        const bool channel = p->gate_kind == LM_LINEAR_GATE_CHANNEL;
        const float a = p->gate_kind != LM_LINEAR_GATE_SCALAR ? 1.0f
                        : p->gate != NULL ? p->gate[row] : expf(p->log_gate[row]);
        const float *gc = channel ? p->gate + row * dk : NULL;
        float *y = p->y + row * dv;
        lin_token(S, dk, dv, fk, fq, gc, a, p->v + row * dv, y, gated);
        if (track_z) {
            const float den = lin_norm_sum(z, dk, fk, fq, gc, a);
            if (p->normalize)
                scale_row(y, 1.0f / den, dv);
        }
    }
}

void RECURRENT_NAME(const lm_linear_f32 *p, size_t h, size_t chunk, float *work)
{
    (void)chunk;
    const size_t dk = p->d_key, dv = p->d_value;
    float *S = work, *z = S + round16(dk * dv), *fq = z + round16(dk), *fk = fq + round16(dk);
    lm_linear_head_start(p, h, S, z);
    if (p->gate_kind == LM_LINEAR_GATE_NONE)
        lin_tokens(p, h, S, z, fq, fk, false);
    else
        lin_tokens(p, h, S, z, fq, fk, true);
    if (p->s_final != NULL)
        memcpy(p->s_final + h * dk * dv, S, dk * dv * sizeof(float));
    if (p->z_final != NULL)
        memcpy(p->z_final + h * dk, z, dk * sizeof(float));
}

/* Scores of a chunk under a scalar gate, in place: row t of A {n, C} gets
 * A[t, s] *= b_t / b_s = exp(lg_{s+1} + ... + lg_t) for s <= t (<= 1). The exponents are
 * summed directly, one row from the previous (seg_s += lg_t, seg_t = 0), not as
 * cl_t - cl_s, whose rounding would grow with |cl|. seg {round16(C)} is scratch (the tail
 * of a row reads a whole vector of it). */
static void decay_scores(float *A, size_t C, size_t n, const float *lg, float *seg)
{
    for (size_t t = 0; t < n; t++) {
        float *a = A + t * C; /* {t + 1} used */
        const LM_V add = V_SET1(lg[t]);
        size_t s = 0;
        for (; s + LM_W <= t; s += LM_W) { /* seg_s += lg_t;  a_s *= exp(seg_s) */
            const LM_V e = V_ADD(V_LOADU(seg + s), add);
            V_STOREU(seg + s, e);
            V_STOREU(a + s, V_MUL(V_LOADU(a + s), V_EXP(e)));
        }
        if (s < t) { /* the tail: one vector of exponents (seg has whole vectors: round16) */
            _Alignas(64) float e[LM_W];
            V_STOREU(e, V_EXP(V_ADD(V_LOADU(seg + s), add)));
            for (size_t i = 0; s + i < t; i++) {
                seg[s + i] += lg[t];
                a[s + i] *= e[i];
            }
        }
        seg[t] = 0.0f; /* a_t *= 1 */
    }
}

/* Zero the columns t < s < min(n, end of t's row block) of every row t of A {n, C}: the
 * entries above the diagonal that gemm_acc_tril reads (its row block [i, i + MR) runs over
 * the columns below i + MR). */
static void mask_scores(float *A, size_t C, size_t n)
{
    for (size_t t = 0; t < n; t++) {
        const size_t end = (t / LM_GEMM_MR + 1) * LM_GEMM_MR;
        for (size_t s = t + 1; s < end && s < n; s++)
            A[t * C + s] = 0.0f;
    }
}

/* sum of x[0:n] */
static inline float sum_row(const float *x, size_t n)
{
    LM_V acc = V_SET1(0.0f);
    size_t i = 0;
    for (; i + LM_W <= n; i += LM_W)
        acc = V_ADD(acc, V_LOADU(x + i));
    float s = hsum(acc);
    for (; i < n; i++)
        s += x[i];
    return s;
}

/* y[0:n] = exp(x[0:n]) */
static inline void exp_row(const float *x, float *y, size_t n)
{
    size_t j = 0;
    for (; j + LM_W <= n; j += LM_W)
        V_STOREU(y + j, V_EXP(V_LOADU(x + j)));
    for (; j < n; j++)
        y[j] = expf(x[j]);
}

/* y[0:n] = x[0:n] * s */
static inline void scale_copy(const float *x, float s, float *y, size_t n)
{
    size_t j = 0;
    for (; j + LM_W <= n; j += LM_W)
        V_STOREU(y + j, V_MUL(V_LOADU(x + j), V_SET1(s)));
    for (; j < n; j++)
        y[j] = x[j] * s;
}

/* z[0:dk] += sum_s f[s, 0:dk] for f {n, dk} */
static void add_col_sums(const float *f, size_t n, size_t dk, float *z)
{
    size_t c = 0;
    for (; c + LM_W <= dk; c += LM_W) {
        LM_V acc = V_LOADU(z + c);
        for (size_t s = 0; s < n; s++)
            acc = V_ADD(acc, V_LOADU(f + s * dk + c));
        V_STOREU(z + c, acc);
    }
    for (; c < dk; c++) {
        float acc = z[c];
        for (size_t s = 0; s < n; s++)
            acc += f[s * dk + c];
        z[c] = acc;
    }
}

/* Chunks of C tokens: inter-chunk term from the carried state, intra-chunk masked product,
 * then the state carried past the chunk (linear.h). Per chunk: phi on whole vectors, one
 * transposed key block for the scores (computed on their lower part only), masks and
 * decays on whole vectors, the carry S += (phi(k) * ratio)^T v read straight from the key
 * rows (gemm_acc_at). */
void CHUNKED_NAME(const lm_linear_f32 *p, size_t h, size_t chunk, float *work)
{
    const size_t L = p->length, dk = p->d_key, dv = p->d_value;
    const size_t C = chunk < L ? chunk : L;
    const bool elu = p->feature != LM_LINEAR_IDENTITY;
    const lm_linear_gate gk = p->gate_kind;
    /* The carried state lives in s_final itself when it aliases s0 (the SSD driver carries
     * the state from call to call that way): no copy in or out. */
    const bool s_in_place = p->s0 != NULL && p->s0 == p->s_final;
    const bool z_in_place = p->z0 != NULL && p->z0 == p->z_final;
    float *S = s_in_place ? p->s_final + h * dk * dv : work; /* {dk, dv} carried state */
    float *z = z_in_place ? p->z_final + h * dk : work + round16(dk * dv); /* {dk} normalizer */
    float *fq = work + round16(dk * dv) + round16(dk); /* {C, dk}: phi(q) (* b_t per
                                                        * channel) */
    float *fk = fq + round16(C * dk);      /* {C, dk}: phi(k), then phi(k) * ratio (or
                                            * {C, dv}: v * ratio) */
    float *kt = fk + round16(C * dk);      /* {dk, C}: phi(k) transposed */
    float *A = kt + round16(dk * C);       /* {C, C}: masked, decayed scores */
    float *ratio = A + round16(C * C);     /* {C, dk}: b_C / b_s per key channel ({C}
                                            * for a scalar gate) */
    float *cum = ratio + round16(C * dk);  /* {dk}: running decay */
    float *cl = cum + round16(dk);         /* {C}: cumulative log of a scalar gate */
    float *den = cl + round16(C);          /* {C}: rows sums of the scores */
    float *lg = den + round16(C);          /* {C}: log of a scalar gate per token */
    float *seg = lg + round16(C);          /* {C}: exponent sums of a scalar gate */
    float *bq = seg + round16(C);          /* {C}: b_t of a scalar gate */
    const bool need_z = p->normalize || p->z_final != NULL;
    lm_linear_head_start(p, h, S, z);

    for (size_t t0 = 0; t0 < L; t0 += C) {
        const size_t n = L - t0 < C ? L - t0 : C;
        const size_t row0 = h * L + t0;
        const float *q = p->q + row0 * dk; /* {n, dk} */
        const float *k = p->k + row0 * dk; /* {n, dk} */
        const float *v = p->v + row0 * dv; /* {n, dv} */
        float *y = p->y + row0 * dv;       /* {n, dv} */
        /* phi(q), phi(k): the identity reads q and k in place until something scales them */
        const float *pq = q, *pk = k;
        if (elu) {
            elu1_row(q, fq, n * dk);
            elu1_row(k, fk, n * dk);
            pq = fq, pk = fk;
        } else if (gk == LM_LINEAR_GATE_CHANNEL) {
            memcpy(fq, q, n * dk * sizeof(float));
            memcpy(fk, k, n * dk * sizeof(float));
            pq = fq, pk = fk;
        }

        /* Scores w_ts (s <= t), before the query is decayed. */
        if (gk != LM_LINEAR_GATE_CHANNEL) {
            transpose(n, dk, pk, dk, kt, C);
            gemm_set_lower(n, dk, pq, dk, kt, C, A, C); /* A = phi(q) phi(k)^T, lower part */
            if (gk == LM_LINEAR_GATE_SCALAR) {
                float acc = 0.0f;
                for (size_t t = 0; t < n; t++) {
                    lg[t] = p->gate != NULL ? logf(p->gate[row0 + t]) : p->log_gate[row0 + t];
                    cl[t] = acc += lg[t];
                }
                decay_scores(A, C, n, lg, seg);
            }
            mask_scores(A, C, n);
        } else {
            /* b_t / b_s per channel as running products: w = fk_s * a_{s+1} * ... * a_t */
            memset(A, 0, n * C * sizeof(float));
            for (size_t s = 0; s < n; s++) {
                float *w = cum; /* {dk} */
                memcpy(w, fk + s * dk, dk * sizeof(float));
                A[s * C + s] = dot(fq + s * dk, w, dk);
                for (size_t t = s + 1; t < n; t++) {
                    const float *g = p->gate + (row0 + t) * dk;
                    size_t c = 0;
                    for (; c + LM_W <= dk; c += LM_W)
                        V_STOREU(w + c, V_MUL(V_LOADU(w + c), V_LOADU(g + c)));
                    for (; c < dk; c++)
                        w[c] *= g[c];
                    A[t * C + s] = dot(fq + t * dk, w, dk);
                }
            }
        }

        /* Decay from the chunk start: a scalar gate's b_t (bq, applied to the rows of y and
         * to the normalizers), or fq = phi(q) * b_t per channel; ratio_s = b_C / b_s. */
        if (gk == LM_LINEAR_GATE_SCALAR) {
            float d = 0.0f; /* seg_t = lg_{t+1} + ... + lg_{n-1}, summed from the end */
            for (size_t t = n; t-- > 0;) {
                seg[t] = d;
                d += lg[t];
            }
            exp_row(seg, ratio, n); /* one ratio per token: ratio {C} */
            exp_row(cl, bq, n);
        } else if (gk == LM_LINEAR_GATE_CHANNEL) {
            for (size_t c = 0; c < dk; c++)
                cum[c] = 1.0f;
            for (size_t t = 0; t < n; t++) {
                const float *g = p->gate + (row0 + t) * dk;
                for (size_t c = 0; c < dk; c++) {
                    cum[c] *= g[c];
                    fq[t * dk + c] *= cum[c];
                }
            }
            for (size_t c = 0; c < dk; c++)
                ratio[(n - 1) * dk + c] = 1.0f;
            for (size_t t = n - 1; t > 0; t--) {
                const float *g = p->gate + (row0 + t) * dk;
                for (size_t c = 0; c < dk; c++)
                    ratio[(t - 1) * dk + c] = ratio[t * dk + c] * g[c];
            }
        }

        /* y = (phi(q) * b) S + A v;  den = (phi(q) * b) . z + rowsum(A) */
        const bool scalar = gk == LM_LINEAR_GATE_SCALAR;
        if (p->normalize)
            for (size_t t = 0; t < n; t++)
                den[t] = dot(pq + t * dk, z, dk) * (scalar ? bq[t] : 1.0f) +
                         sum_row(A + t * C, t + 1);
        gemm_set(n, dv, dk, pq, dk, S, dv, y, dv);
        if (scalar)
            for (size_t t = 0; t < n; t++)
                scale_row(y + t * dv, bq[t], dv);
        gemm_acc_tril(n, dv, A, C, v, dv, y, dv);
        if (p->normalize)
            for (size_t t = 0; t < n; t++)
                scale_row(y + t * dv, 1.0f / den[t], dv);

        /* Carry: S = diag(b_C) S + (phi(k) * ratio)^T v;
         *        z = b_C * z + sum_s phi(k_s) * ratio_s (when z is used) */
        float beta = 1.0f;  /* a scalar gate's b_C, folded into the product's pass over S */
        const float *pv = v; /* {n, dv} */
        if (gk == LM_LINEAR_GATE_SCALAR) {
            beta = bq[n - 1];
            if (need_z || pk == fk || dv > dk) { /* the ratios on the keys */
                for (size_t s = 0; s < n; s++)
                    scale_copy(pk + s * dk, ratio[s], fk + s * dk, dk);
                pk = fk;
            } else { /* on the values (no more of them than keys; k stays in place) */
                for (size_t s = 0; s < n; s++)
                    scale_copy(v + s * dv, ratio[s], fk + s * dv, dv);
                pv = fk;
            }
            if (need_z)
                for (size_t c = 0; c < dk; c++)
                    z[c] *= beta;
        } else if (gk == LM_LINEAR_GATE_CHANNEL) {
            for (size_t c = 0; c < dk; c++) {
                scale_row(S + c * dv, cum[c], dv);
                z[c] *= cum[c];
            }
            for (size_t s = 0; s < n; s++)
                for (size_t c = 0; c < dk; c++)
                    fk[s * dk + c] *= ratio[s * dk + c];
            pk = fk;
        }
        gemm_scale_acc_at(dk, dv, n, beta, pk, dk, pv, dv, S, dv);
        if (need_z)
            add_col_sums(pk, n, dk, z);
    }
    if (p->s_final != NULL && !s_in_place)
        memcpy(p->s_final + h * dk * dv, S, dk * dv * sizeof(float));
    if (p->z_final != NULL && !z_in_place)
        memcpy(p->z_final + h * dk, z, dk * sizeof(float));
}

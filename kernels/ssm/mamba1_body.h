/* The Mamba-1 scan kernel body, written once and instantiated per ISA (scalar.c, avx2.c,
 * avx512.c, neon.c) through the vocabulary of kernels/simd/<isa>.h (the includer includes
 * it first) and the inline exponentials of kernels/simd/fast_exp.h:
 *   MAMBA1_BLOCK, MAMBA1_DECODE_BLOCK   the static block function names
 *
 * Vectorized ACROSS CHANNELS: one vector holds LM_W channels, so softplus, the skip term,
 * the gate and the loads/stores of x, delta, z, y are full vectors, B[t,n] and C[t,n] are
 * broadcasts, and y needs no horizontal reduction. The alternative (one channel, a vector
 * across N) pays a horizontal sum and a scalar softplus per (token, channel): measured at
 * 5.5 against 0.44 ns per element (docs/kernels.md). State, A and 1/A of one block live in
 * small stack arrays [N][LM_W] (L1-resident).
 *
 * The exponential of every state element, exp(delta A) (Euler: Bbar = delta B) or
 * expm1(delta A) (exact ZOH), is V_EXP_FAST / V_EXPM1_FAST, inline in the update loop: it
 * is the kernel's cost (docs/kernels.md, "Fast exp and expm1"). Building with
 * -DLONGMIX_SLEEF_EXP uses SLEEF's V_EXP / V_EXPM1 instead, the reference the fast ones
 * are measured against. The exponentials of softplus and of the gate (once per token and
 * channel) are the fast ones too; softplus's log1p is SLEEF's either way. */

#include "../simd/fast_exp.h"

#include <math.h>
#include <string.h>

#ifdef LONGMIX_SLEEF_EXP
#define MAMBA1_EXP(x) V_EXP(x)
#define MAMBA1_EXPM1(x) V_EXPM1(x)
#define MAMBA1_EXP_ANY(x) V_EXP(x)
#else
#define MAMBA1_EXP(x) V_EXP_FAST_NONPOS(x) /* delta A <= 0, -|u| <= 0 */
#define MAMBA1_EXPM1(x) V_EXPM1_FAST_NONPOS(x)
#define MAMBA1_EXP_ANY(x) V_EXP_FAST(x) /* the gate's e^-z: saturates for z < -88 */
#endif

/* One block of LM_W channels starting at d0 of batch row bi. */
static void MAMBA1_BLOCK(const lm_ssm_mamba1_f32 *p, size_t bi, size_t d0)
{
    const size_t L = p->length, D = p->channels, N = p->state;
    _Alignas(64) float a_t[LM_SSM_MAX_STATE * LM_W];   /* {N, W}: A transposed */
    _Alignas(64) float inv_a[LM_SSM_MAX_STATE * LM_W]; /* {N, W}: 1/a, 0 where a == 0 */
    _Alignas(64) float is_zero[LM_SSM_MAX_STATE * LM_W]; /* {N, W}: 1 where a == 0 */
    _Alignas(64) float h[LM_SSM_MAX_STATE * LM_W];     /* {N, W}: the state */

    for (size_t j = 0; j < LM_W; j++) {
        const float *a_row = p->a + (d0 + j) * N;                  /* {N} */
        const float *h0_row = p->h0 != NULL ? p->h0 + (bi * D + d0 + j) * N : NULL;
        for (size_t n = 0; n < N; n++) {
            a_t[n * LM_W + j] = a_row[n];
            h[n * LM_W + j] = h0_row != NULL ? h0_row[n] : 0.0f;
        }
    }
    if (p->exact_zoh) /* only ZOH needs 1/a; a decode step (L = 1) feels every setup cost */
        for (size_t i = 0; i < N * LM_W; i++) {
            inv_a[i] = a_t[i] != 0.0f ? 1.0f / a_t[i] : 0.0f;
            is_zero[i] = a_t[i] != 0.0f ? 0.0f : 1.0f;
        }
    const LM_V zero = V_SET1(0.0f), one = V_SET1(1.0f);
    const LM_V bias = p->delta_bias != NULL ? V_LOADU(p->delta_bias + d0) : zero;
    const LM_V skip = p->skip != NULL ? V_LOADU(p->skip + d0) : zero;

    for (size_t t = 0; t < L; t++) {
        const size_t row = bi * L + t;
        const float *bt = p->b + row * N, *ct = p->c + row * N; /* {N} */
        const LM_V u = V_ADD(V_LOADU(p->delta_raw + row * D + d0), bias);
        /* delta = max(u, 0) + log1p(exp(-|u|)) = softplus(u) >= 0 */
        const LM_V delta = V_ADD(V_MAX(u, zero), V_LOG1P(MAMBA1_EXP(V_SUB(zero, V_ABS(u)))));
        const LM_V x = V_LOADU(p->x + row * D + d0);
        LM_V y0 = zero, y1 = zero;
        if (!p->exact_zoh) {
            const LM_V dx = V_MUL(delta, x);
            size_t n = 0;
            for (; n + 2 <= N; n += 2) { /* h = exp(delta a) h + (delta x) B;  y += C h */
                const LM_V e0 = MAMBA1_EXP(V_MUL(delta, V_LOADU(a_t + n * LM_W)));
                const LM_V e1 = MAMBA1_EXP(V_MUL(delta, V_LOADU(a_t + (n + 1) * LM_W)));
                const LM_V h0v = V_FMA(e0, V_LOADU(h + n * LM_W), V_MUL(dx, V_SET1(bt[n])));
                const LM_V h1v =
                    V_FMA(e1, V_LOADU(h + (n + 1) * LM_W), V_MUL(dx, V_SET1(bt[n + 1])));
                V_STOREU(h + n * LM_W, h0v);
                V_STOREU(h + (n + 1) * LM_W, h1v);
                y0 = V_FMA(h0v, V_SET1(ct[n]), y0);
                y1 = V_FMA(h1v, V_SET1(ct[n + 1]), y1);
            }
            if (n < N) {
                const LM_V e0 = MAMBA1_EXP(V_MUL(delta, V_LOADU(a_t + n * LM_W)));
                const LM_V hv = V_FMA(e0, V_LOADU(h + n * LM_W), V_MUL(dx, V_SET1(bt[n])));
                V_STOREU(h + n * LM_W, hv);
                y0 = V_FMA(hv, V_SET1(ct[n]), y0);
            }
        } else {
            for (size_t n = 0; n < N; n++) {
                const LM_V em1 = MAMBA1_EXPM1(V_MUL(delta, V_LOADU(a_t + n * LM_W)));
                /* Abar = 1 + expm1(delta a): absolute error ~ 2^-24, what the state needs.
                 * factor = expm1(delta a)/a, or delta where a == 0 (is_zero = 1, inv_a = 0) */
                const LM_V factor = V_FMA(delta, V_LOADU(is_zero + n * LM_W),
                                          V_MUL(em1, V_LOADU(inv_a + n * LM_W)));
                const LM_V hv = V_FMA(V_ADD(em1, one), V_LOADU(h + n * LM_W),
                                      V_MUL(V_MUL(factor, x), V_SET1(bt[n])));
                V_STOREU(h + n * LM_W, hv);
                if (n & 1)
                    y1 = V_FMA(hv, V_SET1(ct[n]), y1);
                else
                    y0 = V_FMA(hv, V_SET1(ct[n]), y0);
            }
        }
        LM_V y = V_FMA(skip, x, V_ADD(y0, y1));
        if (p->z != NULL) { /* y *= z / (1 + exp(-z)) */
            const LM_V zv = V_LOADU(p->z + row * D + d0);
            y = V_MUL(y, V_DIV(zv, V_ADD(one, MAMBA1_EXP_ANY(V_SUB(zero, zv)))));
        }
        V_STOREU(p->y + row * D + d0, y);
    }

    if (p->h_final != NULL)
        for (size_t j = 0; j < LM_W; j++) {
            float *out = p->h_final + (bi * D + d0 + j) * N; /* {N} */
            for (size_t n = 0; n < N; n++)
                out[n] = h[n * LM_W + j];
        }
}

/* The rows of the LM_W channels of a decode step: h {N} = abar h + in over the whole
 * vectors of each row (nw floats), each row's vector of C h partial sums into
 * acc[j LM_W ..] (nw >= LM_W). exact (a constant at both calls) picks the discretization; exact ZOH
 * uses a_s = min(a, -1e-30): for a = 0, expm1(delta a_s) / a_s = delta to float32
 * precision (the a = 0 limit, Abar = 1), for any a <= -1e-30 the exact formula; 1 / a_s is
 * V_RCP (a division per element would cost more than the exponential). One loop over the
 * channels with the row inside keeps the exponential's constants in registers across
 * rows; h_in NULL reads zeros, h_out NULL writes a scratch row. */
static inline __attribute__((always_inline)) void
mamba1_decode_rows(const float *a, const float *h_in, float *h_out, const float *bt,
                   const float *ct, size_t N, size_t nw, const float *delta, const float *xs,
                   bool exact, float *acc_out)
{
    static const float zeros[LM_SSM_MAX_STATE];
    _Alignas(64) float scratch[LM_SSM_MAX_STATE];
    const LM_V one = V_SET1(1.0f), tiny = V_SET1(-1e-30f);
    const float *hr = h_in != NULL ? h_in : zeros; /* row j at hr + j hs, ho + j os */
    float *ho = h_out != NULL ? h_out : scratch;
    const size_t hs = h_in != NULL ? N : 0, os = h_out != NULL ? N : 0;
    for (size_t j = 0; j < LM_W; j++, hr += hs, ho += os) {
        const float *ar = a + j * N;
        const LM_V dv = V_SET1(delta[j]), dx = V_SET1(delta[j] * xs[j]), xv = V_SET1(xs[j]);
        LM_V acc = V_SET1(0.0f);
        size_t n = 0;
        do { /* nw >= LM_W (the caller's check): no guard between the loops, so the
              * exponential's constants are hoisted out of the channel loop */
            const LM_V av = V_LOADU(ar + n), hv = V_LOADU(hr + n);
            LM_V abar, in; /* h = abar h + in */
            if (!exact) { /* abar = exp(delta a), in = delta x b */
                abar = MAMBA1_EXP(V_MUL(dv, av));
                in = V_MUL(dx, V_LOADU(bt + n));
            } else { /* abar = 1 + expm1(delta a_s), in = expm1(delta a_s) / a_s * x * b */
                const LM_V as = V_MIN(av, tiny), em1 = MAMBA1_EXPM1(V_MUL(dv, as));
                abar = V_ADD(em1, one);
                in = V_MUL(V_MUL(em1, V_RCP(as)), V_MUL(xv, V_LOADU(bt + n)));
            }
            const LM_V hn = V_FMA(abar, hv, in);
            V_STOREU(ho + n, hn);
            acc = V_FMA(hn, V_LOADU(ct + n), acc);
            n += LM_W;
        } while (n < nw);
        V_STOREU(acc_out + j * LM_W, acc);
    }
}

/* The state elements past the last whole vector of a row (N not a multiple of LM_W), one
 * at a time with libm; returns their part of C h. */
static inline float mamba1_decode_tail(const float *a, const float *h_in, float *h_out,
                                       const float *bt, const float *ct, size_t n0, size_t N,
                                       float dlt, float xs, bool exact_zoh)
{
    float y = 0.0f;
    for (size_t n = n0; n < N; n++) {
        const float h = h_in != NULL ? h_in[n] : 0.0f;
        float abar, in;
        if (!exact_zoh) {
            abar = expf(dlt * a[n]);
            in = dlt * xs * bt[n];
        } else {
            const float as = fminf(a[n], -1e-30f), em1 = expm1f(dlt * as);
            abar = em1 + 1.0f;
            in = em1 / as * xs * bt[n];
        }
        const float hn = abar * h + in;
        if (h_out != NULL)
            h_out[n] = hn;
        y += hn * ct[n];
    }
    return y;
}

/* A one-token block (the decode step): each channel's state row h[d, 0:N] is contiguous,
 * so the update runs along N with no transposition and no per-block tables; softplus, the
 * skip and the gate stay vectors across the LM_W channels, and the rows' C h sums are
 * reduced four channels at a time (V_HSUM4). */
static void MAMBA1_DECODE_BLOCK(const lm_ssm_mamba1_f32 *p, size_t bi, size_t d0)
{
    const size_t D = p->channels, N = p->state, nw = N / LM_W * LM_W;
    _Alignas(64) float delta[LM_W], xs[LM_W], ys[LM_W], accs[LM_W * LM_W];
    const LM_V zero = V_SET1(0.0f), one = V_SET1(1.0f);
    const LM_V bias = p->delta_bias != NULL ? V_LOADU(p->delta_bias + d0) : zero;
    const LM_V u = V_ADD(V_LOADU(p->delta_raw + bi * D + d0), bias);
    V_STOREU(delta, V_ADD(V_MAX(u, zero), V_LOG1P(MAMBA1_EXP(V_SUB(zero, V_ABS(u))))));
    const LM_V x = V_LOADU(p->x + bi * D + d0);
    V_STOREU(xs, x);
    const float *bt = p->b + bi * N, *ct = p->c + bi * N; /* {N} */
    const float *a = p->a + d0 * N;                                              /* {W, N} */
    const float *h_in = p->h0 != NULL ? p->h0 + (bi * D + d0) * N : NULL;    /* {W, N} */
    float *h_out = p->h_final != NULL ? p->h_final + (bi * D + d0) * N : NULL; /* {W, N} */
    if (nw == 0)
        memset(accs, 0, sizeof accs);
    else if (p->exact_zoh)
        mamba1_decode_rows(a, h_in, h_out, bt, ct, N, nw, delta, xs, true, accs);
    else
        mamba1_decode_rows(a, h_in, h_out, bt, ct, N, nw, delta, xs, false, accs);
#if LM_W % 4 == 0 /* every SIMD width */
    for (size_t j = 0; j < LM_W; j += 4)
        V_HSUM4(V_LOADU(accs + j * LM_W), V_LOADU(accs + (j + 1) * LM_W),
                V_LOADU(accs + (j + 2) * LM_W), V_LOADU(accs + (j + 3) * LM_W), ys + j);
#else
    for (size_t j = 0; j < LM_W; j++)
        ys[j] = V_HSUM(V_LOADU(accs + j * LM_W));
#endif
    if (nw < N)
        for (size_t j = 0; j < LM_W; j++)
            ys[j] += mamba1_decode_tail(a + j * N, h_in != NULL ? h_in + j * N : NULL,
                                        h_out != NULL ? h_out + j * N : NULL, bt, ct, nw, N,
                                        delta[j], xs[j], p->exact_zoh);
    LM_V y = V_LOADU(ys);
    if (p->skip != NULL)
        y = V_FMA(V_LOADU(p->skip + d0), x, y);
    if (p->z != NULL) { /* y *= z / (1 + exp(-z)) */
        const LM_V zv = V_LOADU(p->z + bi * D + d0);
        y = V_MUL(y, V_DIV(zv, V_ADD(one, MAMBA1_EXP_ANY(V_SUB(zero, zv)))));
    }
    V_STOREU(p->y + bi * D + d0, y);
}

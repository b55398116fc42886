/* Inline exp and expm1 on whole vectors, written once over the vocabulary of
 * kernels/simd/<isa>.h (which must be included first): V_EXP_FAST(x) = e^x and
 * V_EXPM1_FAST(x) = e^x - 1, for the inner loops whose cost is one exponential per element
 * (the Mamba-1 scan and decode step: exp(delta A) or expm1(delta A) per state element).
 * SLEEF's V_EXP / V_EXPM1 stay the vocabulary's reference functions (1 ulp) and every
 * other kernel's; these are a function call and about 40 instructions each, where this
 * is 14 inline ones with no spills around a call (docs/kernels.md, "Fast exp and expm1":
 * the measured gain and the error bound).
 *
 * Method (Cody and Waite reduction): k = round(x / ln 2), r = x - k ln 2 in two steps
 * (ln 2 = LN2_HI + LN2_LO, LN2_HI with 9 significant bits so k LN2_HI is exact), so
 * |r| <= ln 2 / 2; p = expm1(r) = r + r^2 q(r) by its Taylor series to r^7 / 7! (the first
 * term left out, r^8 / 8!, is below 2^-26 |p| on that interval); then
 *   e^x     = 2^k (1 + p)
 *   e^x - 1 = 2^k p + (2^k - 1)  (k = 0 gives p itself: full relative accuracy near 0)
 * 2^k by V_SCALE2. Error (measured over every float in [-87, 88], tests/test_recurrent.c):
 * at most 2 ulp for exp, 2 ulp for expm1 (relative). x is first clamped to
 * [-87.3, 88.3]: below, e^x is returned as about 1.3e-38 (its true value is smaller: an
 * absolute error under 2^-125) and e^x - 1 as -1 to float precision; above, the
 * result saturates near 2^127 (no kernel of this project exponentiates a positive number
 * that large here: the Mamba-1 exponent delta A is never positive). */
#ifndef LONGMIX_SIMD_FAST_EXP_H
#define LONGMIX_SIMD_FAST_EXP_H

#if !defined(LM_W) || !defined(V_ROUND) || !defined(V_SCALE2)
#error "kernels/simd/fast_exp.h needs kernels/simd/<isa>.h (V_ROUND, V_SCALE2) first"
#endif

#define LM_FAST_EXP_LO (-87.3f) /* e^-87.3 = 1.3e-38, just above FLT_MIN */
#define LM_FAST_EXP_HI 88.3f    /* 2^127.4: k <= 127 */

/* r = x - k ln 2 and p = expm1(r) for x already clamped; *k receives round(x / ln 2). */
static inline LM_V lm_fast_expm1_reduced(LM_V x, LM_V *k)
{
    const LM_V kk = V_ROUND(V_MUL(x, V_SET1(1.44269504088896341f)));
    LM_V r = V_FMA(kk, V_SET1(-0.693359375f), x);         /* - k LN2_HI (exact) */
    r = V_FMA(kk, V_SET1(2.12194440054690583e-4f), r);    /* - k LN2_LO */
    LM_V q = V_SET1(1.0f / 5040.0f);                      /* q(r) = 1/2 + r/6 + ... */
    q = V_FMA(q, r, V_SET1(1.0f / 720.0f));
    q = V_FMA(q, r, V_SET1(1.0f / 120.0f));
    q = V_FMA(q, r, V_SET1(1.0f / 24.0f));
    q = V_FMA(q, r, V_SET1(1.0f / 6.0f));
    q = V_FMA(q, r, V_SET1(0.5f));
    *k = kk;
    return V_FMA(V_MUL(r, r), q, r); /* r + r^2 q(r) */
}

/* e^x for x clamped to [LO, HI] */
static inline LM_V lm_fast_exp_clamped(LM_V x)
{
    LM_V k;
    const LM_V p = lm_fast_expm1_reduced(x, &k);
    const LM_V t = V_SCALE2(V_SET1(1.0f), k); /* 2^k */
    return V_FMA(t, p, t);
}

/* e^x - 1 for x clamped to [LO, HI] */
static inline LM_V lm_fast_expm1_clamped(LM_V x)
{
    LM_V k;
    const LM_V p = lm_fast_expm1_reduced(x, &k);
    const LM_V t = V_SCALE2(V_SET1(1.0f), k);
    return V_FMA(t, p, V_SUB(t, V_SET1(1.0f))); /* 2^k - 1 is exact for |k| <= 24 */
}

#define LM_FAST_EXP_CLAMP(x) V_MIN(V_MAX(x, V_SET1(LM_FAST_EXP_LO)), V_SET1(LM_FAST_EXP_HI))
#define V_EXP_FAST(x) lm_fast_exp_clamped(LM_FAST_EXP_CLAMP(x))
#define V_EXPM1_FAST(x) lm_fast_expm1_clamped(LM_FAST_EXP_CLAMP(x))
/* The same for x <= 0 (the Mamba-1 exponent delta A): only the lower clamp. */
#define V_EXP_FAST_NONPOS(x) lm_fast_exp_clamped(V_MAX(x, V_SET1(LM_FAST_EXP_LO)))
#define V_EXPM1_FAST_NONPOS(x) lm_fast_expm1_clamped(V_MAX(x, V_SET1(LM_FAST_EXP_LO)))

#endif

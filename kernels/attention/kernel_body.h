/* The attention kernels written once over a thin SIMD mapping layer. Each ISA file
 * (scalar.c, avx2.c, avx512.c, neon.c) defines the layer below, then includes this file,
 * which defines lm_attn_prefill_{f32,bf16}_<isa> and lm_attn_decode_{f32,f16,bf16}_<isa>
 * (avx512bf16_prefill.c: lm_attn_prefill_bf16_avx512bf16 alone).
 *
 * The layer, W lanes of float per vector `LM_V`:
 *   LM_ISA_SUFFIX         name suffix (scalar, avx2, ...)
 *   LM_W                    lanes
 *   V_ZERO() V_SET1(x) V_LOADU(p) V_STOREU(p, x) V_BCAST(p)   (V_BCAST: all lanes = *p)
 *   V_FMA(a, b, c) = a * b + c      V_MUL V_ADD V_SUB V_MAX
 *   V_HSUM(x) V_HMAX(x)             lane sum / max as a float
 *   V_EXP(x)                        lane-wise e^x (e^-inf = 0)
 *   V_LOAD_F16(p) V_LOAD_BF16(p)    LM_W stored halves / bfloat16 widened to float
 *   V_LOAD_U8/U4/U2(row, c)         LM_W unsigned codes of a packed row from element c
 *   PF_RK PF_NV                     prefill scores: keys x query-vectors per micro-tile
 *   PV_R PV_CV                      prefill P V: query rows x d-vectors per micro-tile
 *   DEC_GB DEC_CV                   decode: query heads per pass, d-vectors per P V pass
 *
 * The prefill lives in prefill_body.h (included below; its head comment explains the
 * blocking). */
#ifndef LM_ISA_SUFFIX
#error "define the SIMD mapping layer before including kernel_body.h"
#endif

#include "../simd/online_softmax.h"

#include <float.h>

#define LM_CAT_(a, b) a##_##b
#define LM_CAT(a, b) LM_CAT_(a, b)
#define LM_NAME(base) LM_CAT(base, LM_ISA_SUFFIX)
#define LM_INLINE static inline __attribute__((always_inline))
/* register-blocked loops over constant micro-tile extents: unrolled so the arrays of vectors
 * live in registers */
#define LM_UNROLL _Pragma("GCC unroll 16")

static inline size_t min_size(size_t a, size_t b) { return a < b ? a : b; }

/* ---- prefill: prefill_body.h ---------------------------------------------------- */

#include "prefill_body.h"

/* ---- decode ------------------------------------------------------------------------ */

/* A path with its own decode kernels (avx512: avx512_decode.c) defines
 * LM_ATTN_OWN_DECODE before including this file; the file of the prefill on BF16 dot
 * products (avx512bf16_prefill.c, LM_ATTN_PREFILL_BF16_DOT) defines no decode. */
#if !defined(LM_ATTN_OWN_DECODE) && !defined(LM_ATTN_PREFILL_BF16_DOT)

enum { DEC_F32 = 0, DEC_F16 = 1, DEC_BF16 = 2, BKD = LM_ATTN_DECODE_BLOCK };

/* LM_W stored elements of row `row` (of width d) at column c, widened to float. */
LM_INLINE LM_V load_kv(const void *base, size_t row, size_t d, size_t c, int dtype)
{
    if (dtype == DEC_F32)
        return V_LOADU((const float *)base + row * d + c);
    if (dtype == DEC_F16)
        return V_LOAD_F16((const uint16_t *)base + row * d + c);
    return V_LOAD_BF16((const uint16_t *)base + row * d + c);
}

/* Prefetch the K and V rows DEC_PF_ROWS keys ahead, every cache line (a prefetch never
 * faults, so rows past the range are harmless): both streams stay in flight. */
enum { DEC_PF_ROWS = 16 };
LM_INLINE void decode_prefetch(const void *k, const void *v, size_t row, size_t d, int dtype)
{
    const size_t bytes = d * (dtype == DEC_F32 ? sizeof(float) : sizeof(uint16_t));
    for (size_t off = 0; off < bytes; off += 64) {
        __builtin_prefetch((const char *)k + row * bytes + off);
        __builtin_prefetch((const char *)v + row * bytes + off);
    }
}

/* s[gb, jj] = q[g0 + gb] . k[j0 + jj] for gb < gn (gn <= DEC_GB); the first pass (g0 = 0)
 * prefetches. */
LM_INLINE void decode_scores(const float *restrict q, const void *k, const void *v, size_t j0,
                             size_t cnt, size_t d, size_t g0, int gn, float *restrict s,
                             int dtype)
{
    for (size_t jj = 0; jj < cnt; jj++) {
        if (g0 == 0)
            decode_prefetch(k, v, j0 + jj + DEC_PF_ROWS, d, dtype);
        LM_V acc[DEC_GB];
        LM_UNROLL
        for (int b = 0; b < gn; b++)
            acc[b] = V_ZERO();
        for (size_t c = 0; c < d; c += LM_W) {
            LM_V kv = load_kv(k, j0 + jj, d, c, dtype); /* the key row, read once per pass */
            LM_UNROLL
            for (int b = 0; b < gn; b++)
                acc[b] = V_FMA(V_LOADU(q + (g0 + (size_t)b) * d + c), kv, acc[b]);
        }
#ifdef V_HSUM4
        if (gn == 4) {
            float sums[4];
            V_HSUM4(acc[0], acc[1], acc[2], acc[3], sums);
            for (int b = 0; b < 4; b++)
                s[(g0 + (size_t)b) * BKD + jj] = sums[b];
            continue;
        }
#endif
        LM_UNROLL
        for (int b = 0; b < gn; b++)
            s[(g0 + (size_t)b) * BKD + jj] = V_HSUM(acc[b]);
    }
}

/* acc[g0 + gb, c0 ..) += sum_jj p[g0 + gb, jj] v[j0 + jj, c0 ..) over cv vectors. */
LM_INLINE void decode_pv(const float *restrict p, const void *v, size_t j0, size_t cnt,
                         size_t d, size_t g0, int gn, size_t c0, int cv, float *restrict accs,
                         int dtype)
{
    LM_V acc[DEC_GB][DEC_CV];
    LM_UNROLL
    for (int b = 0; b < gn; b++)
        LM_UNROLL
        for (int e = 0; e < cv; e++)
            acc[b][e] = V_LOADU(accs + (g0 + (size_t)b) * d + c0 + (size_t)e * LM_W);
    for (size_t jj = 0; jj < cnt; jj++) {
        LM_V vv[DEC_CV];
        LM_UNROLL
        for (int e = 0; e < cv; e++)
            vv[e] = load_kv(v, j0 + jj, d, c0 + (size_t)e * LM_W, dtype);
        LM_UNROLL
        for (int b = 0; b < gn; b++) {
            LM_V w = V_BCAST(p + (g0 + (size_t)b) * BKD + jj);
            LM_UNROLL
            for (int e = 0; e < cv; e++)
                acc[b][e] = V_FMA(w, vv[e], acc[b][e]);
        }
    }
    LM_UNROLL
    for (int b = 0; b < gn; b++)
        LM_UNROLL
        for (int e = 0; e < cv; e++)
            V_STOREU(accs + (g0 + (size_t)b) * d + c0 + (size_t)e * LM_W, acc[b][e]);
}

LM_INLINE void decode_group_pass(const float *restrict q, const void *k, const void *v,
                                 size_t j0, size_t cnt, size_t d, size_t g0, int gn,
                                 float *restrict s, float *restrict accs, int dtype, int phase)
{
    if (phase == 0) {
        decode_scores(q, k, v, j0, cnt, d, g0, gn, s, dtype);
        return;
    }
    size_t c0 = 0;
    for (; c0 + DEC_CV * LM_W <= d; c0 += DEC_CV * LM_W)
        decode_pv(s, v, j0, cnt, d, g0, gn, c0, DEC_CV, accs, dtype);
    for (; c0 < d; c0 += LM_W)
        decode_pv(s, v, j0, cnt, d, g0, gn, c0, 1, accs, dtype);
}

LM_INLINE void decode_body(const float *restrict q, const void *k, const void *v, size_t n,
                           size_t d, size_t group, float scale, float *restrict m,
                           float *restrict l, float *restrict accs, float *restrict s,
                           int dtype)
{
    for (size_t g = 0; g < group; g++) {
        m[g] = -FLT_MAX;
        l[g] = 0.0f;
    }
    memset(accs, 0, group * d * sizeof(float));
    const LM_V vscale = V_SET1(scale);
    for (size_t j0 = 0; j0 < n; j0 += BKD) {
        const size_t cnt = min_size(BKD, n - j0);
        for (int phase = 0; phase < 2; phase++) {
            size_t g0 = 0;
            for (; g0 + DEC_GB <= group; g0 += DEC_GB)
                decode_group_pass(q, k, v, j0, cnt, d, g0, DEC_GB, s, accs, dtype, phase);
            for (; g0 < group; g0++)
                decode_group_pass(q, k, v, j0, cnt, d, g0, 1, s, accs, dtype, phase);
            if (phase == 1)
                break;
            for (size_t g = 0; g < group; g++) { /* online softmax over this block */
                const float al =
                    lm_online_softmax_block(s + g * BKD, cnt, BKD, vscale, &m[g], &l[g]);
                if (al != 1.0f) {
                    const LM_V va = V_SET1(al);
                    for (size_t c = 0; c < d; c += LM_W)
                        V_STOREU(accs + g * d + c, V_MUL(V_LOADU(accs + g * d + c), va));
                }
            }
        }
    }
}

#define LM_DECODE_DEFINE(dtype, isa) LM_ATTN_DECODE_DECLARE(dtype, isa)

LM_DECODE_DEFINE(f32, LM_ISA_SUFFIX)
{
    decode_body(q, k, v, n, d, group, scale, m, l, acc, workspace, DEC_F32);
}

LM_DECODE_DEFINE(f16, LM_ISA_SUFFIX)
{
    decode_body(q, k, v, n, d, group, scale, m, l, acc, workspace, DEC_F16);
}

LM_DECODE_DEFINE(bf16, LM_ISA_SUFFIX)
{
    decode_body(q, k, v, n, d, group, scale, m, l, acc, workspace, DEC_BF16);
}
#endif /* decode */

/* Quantized-cache decode with integer dot products (AVX512-VNNI): the kvq_decode slot of
 * the avx512vnni path (chosen only when cpuid reports AVX512-VNNI). Same semantics as the float body
 * (kvquant_body.h, whose query quantization it uses) except the value weights, which are
 * quantized to 16 bits per (head, block) as lm_kvq_decode_f64_ref's weight_bound describes.
 *
 * Work per block of KB = 64 tokens, for a pass of GN query heads (4, or 1 for the heads left
 * over) sharing one KV head:
 *   scores   VPDPBUSD of the int8 query against 16-token key tiles: 16 scores per
 *            instruction, no horizontal sums, every key row loaded once for the GN heads;
 *   softmax  in registers (4 vectors per head); the accumulators are rescaled only when a
 *            head's running maximum grows; the denominators (and KIVI's sum p lo) stay
 *            vectors until the end of the chunk;
 *   values   the block's weights p s^v as 16-bit integers (two bytes), VPDPBUSD over value
 *            groups (dims in lanes, 4 tokens per byte slice), one float update per block;
 *            they run one block behind: scores of b, values of b - 1, softmax of b.
 * Software prefetch runs inside the two loops, one line per line consumed, KV_PF_BYTES in
 * front, so the code streams stay in flight without bursts (a burst of a whole block's
 * prefetches at its start was about 2x slower at n = 131,072 on one thread). */
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VNNI__)
#error "kernels/kvquant/avx512vnni.c needs -mavx512f -mavx512bw -mavx512vnni"
#endif
#include "kvquant.h"

#include "../attention/attention.h"
#include "../simd/avx512.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#undef LM_ISA_SUFFIX
#define LM_ISA_SUFFIX avx512vnni

#include "words_avx512.h"
#define KQ_VNNI 1
#define KQ_STORE_Q8(p, x)                                                                      \
    _mm_storeu_si128((__m128i *)(void *)(p), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(x)))
#include "kvquant_body.h"

#define KV_INLINE static inline __attribute__((always_inline))
enum { KV_PF_BYTES = 32768 }; /* software prefetch distance per code stream */
enum { KB = LM_ATTN_DECODE_BLOCK, KT = LM_KVQ_TILE, QH = 4 };
_Static_assert(KB == 4 * KT && KB == 2 * LM_KVQ_KIVI_GROUP && KB == LM_KVQ_KIVI_GROUP_MAX,
               "a block is 4 key tiles and 2 KIVI groups of 32 tokens or 1 of 64");

/* acc + VPDPBUSD(u unsigned bytes, v signed bytes), updated in place. Written as asm
 * because gcc 12 copies the accumulator to a fresh register around every
 * _mm512_dpbusd_epi32 in these unrolled loops (twice the instructions). */
KV_INLINE __m512i kv_dpbusd(__m512i acc, __m512i u, __m512i v)
{
    __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(v));
    return acc;
}

KV_INLINE __m512i kv_bcast32(const void *p)
{
    int32_t w;
    memcpy(&w, p, sizeof w);
    return _mm512_set1_epi32(w);
}

/* s[b, s_off + 16 i + t] = q8_b . u_t (int32 dots, stored as floats) for heads b < gn and
 * the 16 tokens t of each of nt consecutive key tiles from tile0. A 64-byte tile row is
 * 16 tokens x (32 / bits) dims; its byte slice k ((x >> bits k) & mask per byte) holds dims
 * 4 (row per_row + k) .. + 3 of each token, so
 *   acc[b][i] += vpdpbusd(slice of tile i, broadcast q8_b dword)
 * (unsigned codes x signed query bytes, exact). Each row is prefetched pf bytes ahead (pf = 0
 * near the chunk end: the row itself, a no-op). */
KV_INLINE void kv_dots(const uint8_t *tile0, size_t rows, int bits, const int8_t *qb,
                       size_t padded, int gn, int nt, float *s, size_t s_off, size_t pf)
{
    const int per_row = 8 / bits;
    const size_t tile_bytes = rows * KT * 4;
    const __m512i mask = _mm512_set1_epi8((char)((1u << bits) - 1u));
    __m512i acc[QH][4];
    _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++)
        _Pragma("GCC unroll 4") for (int i = 0; i < nt; i++)
            acc[b][i] = _mm512_setzero_si512();
    for (size_t r = 0; r < rows; r++) {
        const uint8_t *row = tile0 + r * KT * 4;
        __m512i x[4];
        _Pragma("GCC unroll 4") for (int i = 0; i < nt; i++) {
            x[i] = _mm512_loadu_si512((const void *)(row + (size_t)i * tile_bytes));
            __builtin_prefetch(row + (size_t)i * tile_bytes + pf);
        }
        _Pragma("GCC unroll 4") for (int k = 0; k < per_row; k++) {
            __m512i u[4];
            _Pragma("GCC unroll 4") for (int i = 0; i < nt; i++)
                u[i] = bits == 8 ? x[i]
                                 : _mm512_and_si512(_mm512_srli_epi32(x[i], (unsigned)(bits * k)),
                                                    mask);
            const int8_t *qp = qb + (r * (size_t)per_row + (size_t)k) * 4;
            _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++) {
                const __m512i w = kv_bcast32(qp + (size_t)b * padded);
                _Pragma("GCC unroll 4") for (int i = 0; i < nt; i++)
                    acc[b][i] = kv_dpbusd(acc[b][i], u[i], w);
            }
        }
    }
    _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++)
        _Pragma("GCC unroll 4") for (int i = 0; i < nt; i++)
            _mm512_storeu_ps(s + (size_t)b * KB + s_off + (size_t)i * KT,
                             _mm512_cvtepi32_ps(acc[b][i]));
}

/* The KIVI query of one head for one key group, as kq_quantize_query on x = q * s^k
 * (float32 products): qb {d} = q8; returns s_q and *lo_dot = q . lo^k. kp {2, d}: s^k then
 * lo^k. d a multiple of 16; up to 128 dims x stays in registers, beyond that in scratch {d}. */
KV_INLINE float kv_group_query(const float *q, const float *kp, size_t d, float *scratch,
                               int8_t *qb, float *lo_dot)
{
    enum { RV = 8 }; /* vectors kept in registers */
    __m512 x[RV], mx0 = _mm512_setzero_ps(), mx1 = mx0, lo0 = mx0, lo1 = mx0;
    const bool in_regs = d <= 16 * RV;
    _Pragma("GCC unroll 8") for (size_t v = 0; v < d / 16; v++) {
        const __m512 qv = _mm512_loadu_ps(q + 16 * v);
        const __m512 xv = _mm512_mul_ps(qv, _mm512_loadu_ps(kp + 16 * v));
        if (in_regs)
            x[v % RV] = xv;
        else
            _mm512_storeu_ps(scratch + 16 * v, xv);
        if (v % 2) { /* two chains each */
            mx1 = _mm512_max_ps(mx1, _mm512_abs_ps(xv));
            lo1 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(kp + d + 16 * v), lo1);
        } else {
            mx0 = _mm512_max_ps(mx0, _mm512_abs_ps(xv));
            lo0 = _mm512_fmadd_ps(qv, _mm512_loadu_ps(kp + d + 16 * v), lo0);
        }
    }
    *lo_dot = _mm512_reduce_add_ps(_mm512_add_ps(lo0, lo1));
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(mx0, mx1));
    /* float32 quotients are correctly rounded: equal to float32(127 / (double)amax) */
    const __m512 r = _mm512_set1_ps(amax > 0.0f ? 127.0f / amax : 0.0f);
    _Pragma("GCC unroll 8") for (size_t v = 0; v < d / 16; v++) /* round half to even */
        KQ_STORE_Q8(qb + 16 * v, _mm512_mul_ps(in_regs ? x[v % RV]
                                                       : _mm512_loadu_ps(scratch + 16 * v),
                                               r)); /* |code| <= 127 */
    return amax / 127.0f;
}

/* max (is_max) or sum of two vectors, lane by lane */
KV_INLINE __m512 kv_op(__m512 a, __m512 b, int is_max)
{
    return is_max ? _mm512_max_ps(a, b) : _mm512_add_ps(a, b);
}

/* The maxima (is_max) or sums of the lanes of v[0..3], in lanes 0, 4, 8, 12: one
 * transpose-and-reduce tree for the four instead of four trees. */
KV_INLINE __m512 kv_reduce4(const __m512 v[4], int is_max)
{
    const __m512 m01 = kv_op(_mm512_shuffle_f32x4(v[0], v[1], 0x44),
                             _mm512_shuffle_f32x4(v[0], v[1], 0xEE), is_max);
    const __m512 m23 = kv_op(_mm512_shuffle_f32x4(v[2], v[3], 0x44),
                             _mm512_shuffle_f32x4(v[2], v[3], 0xEE), is_max);
    __m512 m = kv_op(_mm512_shuffle_f32x4(m01, m23, 0x88), _mm512_shuffle_f32x4(m01, m23, 0xDD),
                     is_max); /* quarter h: 4 partial results of v[h] */
    m = kv_op(m, _mm512_permute_ps(m, 0x4E), is_max);
    return kv_op(m, _mm512_permute_ps(m, 0xB1), is_max);
}

/* kv_group_query for the 4 heads q {4, d} of a pass at once (d = 128 and other multiples
 * of 16): the key group's s^k and lo^k rows are loaded once for the four, and the eight
 * lane reductions and two divisions run as vectors, so the heads' dependency chains
 * overlap. The q8 codes are those of kv_group_query (max is exact in any order); q . lo^k
 * is summed in another order (float32 rounding only).
 * qb {4, padded}; sq, qlo {4}. */
KV_INLINE void kv_group_query4(const float *q, const float *kp, size_t d, size_t padded,
                               int8_t *qb, float *sq, float *qlo)
{
    __m512 mx[4], lo[4];
    _Pragma("GCC unroll 4") for (int h = 0; h < 4; h++)
        mx[h] = lo[h] = _mm512_setzero_ps();
    _Pragma("GCC unroll 8") for (size_t c = 0; c < d; c += 16) {
        const __m512 k = _mm512_loadu_ps(kp + c), kl = _mm512_loadu_ps(kp + d + c);
        _Pragma("GCC unroll 4") for (int h = 0; h < 4; h++) {
            const __m512 qv = _mm512_loadu_ps(q + (size_t)h * d + c);
            mx[h] = _mm512_max_ps(mx[h], _mm512_abs_ps(_mm512_mul_ps(qv, k)));
            lo[h] = _mm512_fmadd_ps(qv, kl, lo[h]);
        }
    }
    const __m512 amax = kv_reduce4(mx, 1), lsum = kv_reduce4(lo, 0);
    const __mmask16 pos = _mm512_cmp_ps_mask(amax, _mm512_setzero_ps(), _CMP_GT_OQ);
    /* float32 quotients are correctly rounded: equal to float32(127 / (double)amax) */
    const __m512 r = _mm512_maskz_div_ps(pos, _mm512_set1_ps(127.0f), amax);
    const __m512 s = _mm512_div_ps(amax, _mm512_set1_ps(127.0f));
    float rs[16], ss[16], ls[16];
    _mm512_storeu_ps(rs, r);
    _mm512_storeu_ps(ss, s);
    _mm512_storeu_ps(ls, lsum);
    _Pragma("GCC unroll 4") for (int h = 0; h < 4; h++) {
        sq[h] = ss[4 * h];
        qlo[h] = ls[4 * h];
        const __m512 rh = _mm512_set1_ps(rs[4 * h]);
        _Pragma("GCC unroll 8") for (size_t c = 0; c < d; c += 16) /* round half to even */
            KQ_STORE_Q8(qb + (size_t)h * padded + c,
                        _mm512_mul_ps(_mm512_mul_ps(_mm512_loadu_ps(q + (size_t)h * d + c),
                                                    _mm512_loadu_ps(kp + c)),
                                      rh));
    }
}

/* Values: acc[b, c] += s_w,b (sum_j w16_bj x_j[c] - fix_b) for dims [c0, c0 + 16 cv), from
 * the block's value groups at blk. w16 = 256 hi + lo (bytes, hl {2, gn, KB}), so
 *   ah[c] += sum_{4 tokens} hi_j x_j[c] = vpdpbusd(ah, broadcast hi dword, slice), al alike
 * and acc += s_w (256 ah + al - fix). x = the signed code (INT8: u xor 0x80 = u - 128;
 * INT4: u - 8, by fix = 8 sum w16) or u itself (KIVI: its lo is in sum p lo).
 * Exact int32: |sum w16 x| <= 64 65535 128 < 2^31. */
KV_INLINE void kv_pv(const uint8_t *blk, size_t d, int bits, const uint8_t *hl, int gn,
                     size_t c0, int cv, const float *sw, const int32_t *fix, float *accs,
                     size_t pf)
{
    const int per = 32 / bits, slices = 8 / bits;
    const __m512i mask = _mm512_set1_epi8((char)((1u << bits) - 1u));
    __m512i ah[QH][2], al[QH][2];
    _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++)
        _Pragma("GCC unroll 2") for (int e = 0; e < cv; e++)
            ah[b][e] = al[b][e] = _mm512_setzero_si512();
    for (size_t t = 0; t < KB; t += (size_t)per) { /* value groups of `per` tokens */
        const uint8_t *grp = blk + t / (size_t)per * d * 4 + c0 * 4;
        __m512i x[2];
        _Pragma("GCC unroll 2") for (int e = 0; e < cv; e++) {
            x[e] = _mm512_loadu_si512((const void *)(grp + (size_t)e * 64));
            __builtin_prefetch(grp + (size_t)e * 64 + pf);
        }
        _Pragma("GCC unroll 4") for (int k = 0; k < slices; k++) { /* tokens t + 4k .. + 3 */
            __m512i sl[2];
            _Pragma("GCC unroll 2") for (int e = 0; e < cv; e++)
                sl[e] = bits == 8 ? _mm512_xor_si512(x[e], _mm512_set1_epi8((char)0x80))
                                  : _mm512_and_si512(_mm512_srli_epi32(x[e], (unsigned)(bits * k)),
                                                     mask);
            const uint8_t *hp = hl + t + 4 * (size_t)k;
            _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++) {
                const __m512i vh = kv_bcast32(hp + (size_t)b * KB);
                const __m512i vl = kv_bcast32(hp + (size_t)(gn + b) * KB);
                _Pragma("GCC unroll 2") for (int e = 0; e < cv; e++) {
                    ah[b][e] = kv_dpbusd(ah[b][e], vh, sl[e]);
                    al[b][e] = kv_dpbusd(al[b][e], vl, sl[e]);
                }
            }
        }
    }
    _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++) {
        const __m512 s = _mm512_set1_ps(sw[b]);
        const __m512i f = _mm512_set1_epi32(fix[b]);
        _Pragma("GCC unroll 2") for (int e = 0; e < cv; e++) {
            float *a = accs + (size_t)b * d + c0 + (size_t)e * 16;
            const __m512i sum =
                _mm512_sub_epi32(_mm512_add_epi32(_mm512_slli_epi32(ah[b][e], 8), al[b][e]), f);
            _mm512_storeu_ps(a, _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(sum), _mm512_loadu_ps(a)));
        }
    }
}

/* exp(x) for the softmax's x = s - max <= 0 (-inf included), inline: the library's vector
 * exp is a call, and a call clobbers every vector register of this loop. Range reduction
 * x = n ln2 + f, |f| <= ln2 / 2 (ln2 split in two so n ln2 is exact), then the degree-6
 * Taylor polynomial of e^f (truncation below 1.2e-7 relative: about 1 float32 ulp, far below
 * the 16-bit rounding the weights get next), times 2^n. Below -87 (e^x < 2^-126) it
 * returns 0. */
KV_INLINE __m512 kv_exp_neg(__m512 x)
{
    const __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 f = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145752f), x); /* ln2 high part */
    f = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-6f), f);     /* ln2 - high */
    __m512 p = _mm512_set1_ps(1.0f / 720.0f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_maskz_scalef_ps((__mmask16)~tiny, p, n);
}

/* Per-head running state of a pass: maximum, and the denominator and KIVI's sum p lo as
 * vectors (reduced at the end of the chunk). */
typedef struct kv_state {
    float m[QH];
    __m512 l[QH], lo[QH];
} kv_state;

/* Online softmax of head b's block scores x[4] (scaled, -inf past the block's tokens), then
 * its weights p s^v quantized to 16 bits into hl (hi at b, lo at gn + b), s_w and fix. */
KV_INLINE void kv_softmax(kv_state *st, int b, __m512 x[4], const float *vs, const float *vlo,
                          int per_channel, int offset, float *accs, size_t d, uint8_t *hl,
                          int gn, float *sw, int32_t *fix)
{
    const float hm = _mm512_reduce_max_ps(
        _mm512_max_ps(_mm512_max_ps(x[0], x[1]), _mm512_max_ps(x[2], x[3])));
    if (hm > st->m[b]) { /* the maximum grew: rescale what was accumulated */
        const float a = expf(st->m[b] - hm);
        const __m512 va = _mm512_set1_ps(a);
        for (size_t c = 0; c < d; c += 16)
            _mm512_storeu_ps(accs + (size_t)b * d + c,
                             _mm512_mul_ps(va, _mm512_loadu_ps(accs + (size_t)b * d + c)));
        st->l[b] = _mm512_mul_ps(va, st->l[b]);
        st->lo[b] = _mm512_mul_ps(va, st->lo[b]);
        st->m[b] = hm;
    }
    const __m512 vm = _mm512_set1_ps(st->m[b]);
    __m512 w[4], wmx = _mm512_setzero_ps();
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
        const __m512 p = kv_exp_neg(_mm512_sub_ps(x[i], vm)); /* 0 past the block's tokens */
        st->l[b] = _mm512_add_ps(st->l[b], p);
        if (per_channel)
            st->lo[b] = _mm512_fmadd_ps(p, _mm512_loadu_ps(vlo + i * KT), st->lo[b]);
        w[i] = _mm512_mul_ps(p, _mm512_loadu_ps(vs + i * KT));
        wmx = _mm512_max_ps(wmx, w[i]);
    }
    const float wmax = _mm512_reduce_max_ps(wmx);
    /* w16 = round_half_even(w * (65535 / wmax)) <= 65535 (1 + 2^-23): at most 65535 */
    const __m512 r = _mm512_set1_ps(wmax > 0.0f ? 65535.0f / wmax : 0.0f);
    __m512i sum = _mm512_setzero_si512();
    _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
        const __m512i code = _mm512_cvtps_epi32(_mm512_mul_ps(w[i], r));
        sum = _mm512_add_epi32(sum, code);
        _mm_storeu_si128((__m128i *)(void *)(hl + (size_t)b * KB + (size_t)i * KT),
                         _mm512_cvtepi32_epi8(_mm512_srli_epi32(code, 8)));
        _mm_storeu_si128((__m128i *)(void *)(hl + (size_t)(gn + b) * KB + (size_t)i * KT),
                         _mm512_cvtepi32_epi8(code));
    }
    sw[b] = wmax / 65535.0f;
    fix[b] = offset ? offset * _mm512_reduce_add_epi32(sum) : 0; /* <= 8 64 65535: exact */
}

/* Lane 4 h of v, for h < 4 (the results of kv_reduce4). */
KV_INLINE void kv_lanes4(__m512 v, float out[4])
{
    float t[16];
    _mm512_storeu_ps(t, v);
    for (int h = 0; h < 4; h++)
        out[h] = t[4 * h];
}

/* kv_softmax for the 4 heads of a pass at once, from their scaled scores xs {4, KB} (-inf
 * past the block's tokens; overwritten with the weights): the same operations per head,
 * with the three lane reductions per head (block maximum, weight maximum, INT4 code sum)
 * and the weight scale's division run as one vector for the four heads. */
KV_INLINE void kv_softmax4(kv_state *st, float *xs, const float *vs, const float *vlo,
                           int per_channel, int offset, float *accs, size_t d, uint8_t *hl,
                           float *sw, int32_t *fix)
{
    __m512 mx[4];
    _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++) {
        const float *x = xs + (size_t)b * KB;
        mx[b] = _mm512_max_ps(_mm512_max_ps(_mm512_loadu_ps(x), _mm512_loadu_ps(x + KT)),
                              _mm512_max_ps(_mm512_loadu_ps(x + 2 * KT),
                                            _mm512_loadu_ps(x + 3 * KT)));
    }
    float hm[4];
    kv_lanes4(kv_reduce4(mx, 1), hm);
    __m512 wmx[4];
    _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++) {
        if (hm[b] > st->m[b]) { /* the maximum grew: rescale what was accumulated */
            const __m512 va = _mm512_set1_ps(expf(st->m[b] - hm[b]));
            for (size_t c = 0; c < d; c += 16)
                _mm512_storeu_ps(accs + (size_t)b * d + c,
                                 _mm512_mul_ps(va, _mm512_loadu_ps(accs + (size_t)b * d + c)));
            st->l[b] = _mm512_mul_ps(va, st->l[b]);
            st->lo[b] = _mm512_mul_ps(va, st->lo[b]);
            st->m[b] = hm[b];
        }
        const __m512 vm = _mm512_set1_ps(st->m[b]);
        float *x = xs + (size_t)b * KB;
        wmx[b] = _mm512_setzero_ps();
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
            const __m512 p = kv_exp_neg(_mm512_sub_ps(_mm512_loadu_ps(x + i * KT), vm));
            st->l[b] = _mm512_add_ps(st->l[b], p);
            if (per_channel)
                st->lo[b] = _mm512_fmadd_ps(p, _mm512_loadu_ps(vlo + i * KT), st->lo[b]);
            const __m512 w = _mm512_mul_ps(p, _mm512_loadu_ps(vs + i * KT));
            _mm512_storeu_ps(x + i * KT, w);
            wmx[b] = _mm512_max_ps(wmx[b], w);
        }
    }
    const __m512 wmax = kv_reduce4(wmx, 1);
    const __mmask16 pos = _mm512_cmp_ps_mask(wmax, _mm512_setzero_ps(), _CMP_GT_OQ);
    /* w16 = round_half_even(w * (65535 / wmax)) <= 65535 (1 + 2^-23): at most 65535 */
    float r[4];
    kv_lanes4(_mm512_maskz_div_ps(pos, _mm512_set1_ps(65535.0f), wmax), r);
    kv_lanes4(_mm512_div_ps(wmax, _mm512_set1_ps(65535.0f)), sw);
    __m512 sums[4];
    _Pragma("GCC unroll 4") for (int b = 0; b < 4; b++) {
        const __m512 rb = _mm512_set1_ps(r[b]);
        __m512i sum = _mm512_setzero_si512();
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
            const __m512i code =
                _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xs + (size_t)b * KB + i * KT), rb));
            sum = _mm512_add_epi32(sum, code);
            _mm_storeu_si128((__m128i *)(void *)(hl + (size_t)b * KB + (size_t)i * KT),
                             _mm512_cvtepi32_epi8(_mm512_srli_epi32(code, 8)));
            _mm_storeu_si128((__m128i *)(void *)(hl + (size_t)(4 + b) * KB + (size_t)i * KT),
                             _mm512_cvtepi32_epi8(code));
        }
        sums[b] = _mm512_cvtepi32_ps(sum); /* lane sums <= 4 65535: exact */
    }
    if (offset) { /* sum w16 <= 64 65535 < 2^24: exact in float32 in any order */
        float tot[4];
        kv_lanes4(kv_reduce4(sums, 0), tot);
        for (int b = 0; b < 4; b++)
            fix[b] = offset * (int32_t)tot[b];
    } else {
        for (int b = 0; b < 4; b++)
            fix[b] = 0;
    }
}

/* Prefetch of block-level parameters (64 floats per row; KIVI: the key groups' s, lo). */
KV_INLINE void kv_prefetch_params(const lm_kvq_view *view, size_t b, int per_channel)
{
    for (size_t off = 0; off < KB; off += 16) {
        __builtin_prefetch(view->v_scale + b + off);
        if (per_channel)
            __builtin_prefetch(view->v_lo + b + off);
        else
            __builtin_prefetch(view->k_scale + b + off);
    }
    for (size_t off = 0; per_channel && off < 2 * view->head_dim * (KB / (size_t)per_channel);
         off += 16) /* per_channel: the key group */
        __builtin_prefetch(view->k_params + b / (size_t)per_channel * 2 * view->head_dim + off);
}

/* The pass's quantized query: per head s_q (sq), the INT formats' offset sum (base) and
 * KIVI's q . lo^k (qlo); qb {gn, d} its int8 codes, qf {d} scratch. */
typedef struct kv_query {
    float sq[QH], base[QH], qlo[QH];
    float *qf;
    int8_t *qb;
} kv_query;

/* Scaled scores s {gn, KB} of the block at b0 (cnt tokens; -inf past them): KIVI's group
 * queries and dots per key group (s_q dot + q . lo^k), or the INT formats' dots with
 * (dot - off sum q8) s_q s^k; times the softmax scale. */
KV_INLINE void kv_block_scores(const lm_kvq_view *view, size_t d, size_t b0, size_t cnt,
                               size_t rows, int bits, const float *q, int gn, int per_channel,
                               float scale, kv_query *qs, float *s, size_t pf)
{
    const size_t padded = d;
    const uint8_t *ktile = view->k_codes + b0 * rows * 4; /* b0 / 16 tiles */
    float *sq = qs->sq, *qlo = qs->qlo, *qf = qs->qf;
    const float *base = qs->base;
    int8_t *qb = qs->qb;
    if (per_channel) { /* per key group: q * s^k quantized, scores s_q dot + q . lo */
        const size_t kg = (size_t)per_channel; /* 32 or 64 tokens: 2 or 4 key tiles */
        const int gt = kg == KB ? 4 : 2;
        for (size_t h = 0; h * kg < cnt; h++) {
            const float *kp = view->k_params + (b0 / kg + h) * 2 * d; /* {2, d} */
            if (gn == QH)
                kv_group_query4(q, kp, d, padded, qb, sq, qlo);
            else
                for (int b = 0; b < gn; b++)
                    sq[b] = kv_group_query(q + (size_t)b * d, kp, d, qf, qb + (size_t)b * padded,
                                           &qlo[b]);
            if (gt == 4)
                kv_dots(ktile, rows, bits, qb, padded, gn, 4, s, 0, pf);
            else
                kv_dots(ktile + h * kg * rows * 4, rows, bits, qb, padded, gn, 2, s, h * kg, pf);
            _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++) {
                const __m512 vq = _mm512_set1_ps(sq[b]), vl = _mm512_set1_ps(qlo[b]);
                float *sb = s + (size_t)b * KB + h * kg;
                for (int i = 0; i < gt; i++)
                    _mm512_storeu_ps(sb + i * KT,
                                     _mm512_fmadd_ps(vq, _mm512_loadu_ps(sb + i * KT), vl));
            }
        }
    } else {
        kv_dots(ktile, rows, bits, qb, padded, gn, 4, s, 0, pf);
    }
    const float *ks = view->k_scale + b0;
    const __m512 vscale = _mm512_set1_ps(scale);
    _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++) {
        const __m512 vb = _mm512_set1_ps(base[b]), vq = _mm512_set1_ps(sq[b]);
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++) {
            float *si = s + (size_t)b * KB + (size_t)i * KT;
            __m512 v = _mm512_loadu_ps(si);
            if (!per_channel) /* (dot - off sum q8) s_q s^k */
                v = _mm512_mul_ps(_mm512_sub_ps(v, vb),
                                  _mm512_mul_ps(vq, _mm512_loadu_ps(ks + i * KT)));
            v = _mm512_mul_ps(v, vscale);
            const size_t lo = (size_t)i * KT;
            if (cnt < lo + KT) /* lanes past the block's tokens */
                v = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY),
                                       cnt > lo ? (__mmask16)((1u << (cnt - lo)) - 1u) : 0, v);
            _mm512_storeu_ps(si, v);
        }
    }
}

/* Online softmax of the block's scaled scores s {gn, KB}: its weights go to hl, sw, fix. */
KV_INLINE void kv_softmax_block(kv_state *st, float *s, const float *vs, const float *vlo,
                                int per_channel, int offset, float *accs, size_t d, uint8_t *hl,
                                int gn, float *sw, int32_t *fix)
{
    if (gn == QH) { /* all four heads together */
        kv_softmax4(st, s, vs, vlo, per_channel, offset, accs, d, hl, sw, fix);
        return;
    }
    for (int b = 0; b < gn; b++) {
        __m512 x[4];
        _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
            x[i] = _mm512_loadu_ps(s + (size_t)b * KB + (size_t)i * KT);
        kv_softmax(st, b, x, vs, vlo, per_channel, offset, accs, d, hl, gn, sw, fix);
    }
}

/* accs {gn, d} += the block's values (codes at vblk) weighted by hl, sw, fix. */
KV_INLINE void kv_pv_block(const uint8_t *vblk, size_t d, int bits, const uint8_t *hl, int gn,
                           const float *sw, const int32_t *fix, float *accs, size_t pf)
{
    size_t c0 = 0;
    for (; c0 + 32 <= d; c0 += 32)
        kv_pv(vblk, d, bits, hl, gn, c0, 2, sw, fix, accs, pf);
    if (c0 < d)
        kv_pv(vblk, d, bits, hl, gn, c0, 1, sw, fix, accs, pf);
}

/* Decode partial of gn query heads q {gn, d} over quantized tokens [j0, j1) (j0 a multiple
 * of KB): m, l {gn}, accs {gn, d} as the float decode. per_channel: 0, or the KIVI key
 * group (32 tokens: two groups per block; 64: one, its query quantized once per block). */
KV_INLINE void kv_pass(const lm_kvq_view *view, size_t d, size_t j0, size_t j1, const float *q,
                       int gn, float scale, float *m, float *l, float *accs, float *ws, int bits,
                       int per_channel)
{
    const size_t padded = d, rows = d * (size_t)bits / 32; /* d a multiple of 16 */
    float *s = ws;                          /* {gn, KB}: scores */
    float *qf = s + (size_t)gn * KB;        /* {padded}: scratch */
    int8_t *qb = (int8_t *)(void *)(qf + padded); /* {gn, padded}: q8 */
    uint8_t *hl = (uint8_t *)(void *)(qf + padded + (size_t)gn * padded / 4); /* {2, gn, KB} */
    kv_query qs = {.qf = qf, .qb = qb};
    float sw[QH] = {0};
    int32_t fix[QH] = {0};
    kv_state st;
    const int offset = 1 << (bits - 1);
    _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++) {
        st.m[b] = -FLT_MAX;
        st.l[b] = st.lo[b] = _mm512_setzero_ps();
        if (!per_channel) {
            float sum8;
            qs.sq[b] = kq_quantize_query(q + (size_t)b * d, d, padded, qf,
                                         qb + (size_t)b * padded, &sum8);
            qs.base[b] = (float)offset * sum8; /* exact: integers below 2^24 */
        }
    }
    memset(accs, 0, (size_t)gn * d * sizeof(float));
    const size_t block_bytes = KB * rows * 4; /* key tiles and value groups alike */
    size_t ahead = KV_PF_BYTES / block_bytes;      /* blocks ahead: bytes, not tokens */
    ahead = ahead < 2 ? 2 : (ahead > 64 ? 64 : ahead);

    /* Software pipeline: the values of block b - 1 run after the key dots of block b and
     * before its softmax, so the softmax's dependency chain (reductions, exps, divisions,
     * the weight packing) is followed by the next block's independent dots rather than by
     * the values that wait for it, and a block's key and value streams are read close
     * together. The operations on accs keep their order (values of b - 1, rescale for b,
     * values of b, ...): the results are bit-identical to the unpipelined loop. */
    size_t pf_prev = 0;
    for (size_t b0 = j0;; b0 += KB) { /* one step past the last block: its values */
        const bool last = b0 >= j1;
        const size_t cnt = last ? 0 : b0 + KB < j1 ? KB : j1 - b0;
        const size_t pf = !last && b0 + ahead * KB < j1 ? ahead * block_bytes : 0;
        if (!last) {
            if (pf)
                kv_prefetch_params(view, b0 + ahead * KB, per_channel);
            kv_block_scores(view, d, b0, cnt, rows, bits, q, gn, per_channel, scale, &qs, s,
                            pf);
        }
        if (b0 > j0) /* same bytes per token as keys */
            kv_pv_block(view->v_codes + (b0 - KB) * rows * 4, d, bits, hl, gn, sw, fix, accs,
                        pf_prev);
        if (last)
            break;
        kv_softmax_block(&st, s, view->v_scale + b0, view->v_lo + b0, per_channel,
                         bits == 4 && !per_channel ? 8 : 0, accs, d, hl, gn, sw, fix);
        pf_prev = pf;
    }
    _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++) {
        m[b] = st.m[b];
        l[b] = _mm512_reduce_add_ps(st.l[b]);
        if (per_channel) { /* sum_j p_j lo^v_j on every channel */
            const __m512 lo = _mm512_set1_ps(_mm512_reduce_add_ps(st.lo[b]));
            for (size_t c = 0; c < d; c += 16)
                _mm512_storeu_ps(accs + (size_t)b * d + c,
                                 _mm512_add_ps(lo, _mm512_loadu_ps(accs + (size_t)b * d + c)));
        }
    }
}

/* All query heads of the group: passes of QH heads, then one head at a time. */
KV_INLINE void kv_heads(const lm_kvq_view *view, size_t d, size_t j0, size_t j1, const float *q,
                        size_t group, float scale, float *m, float *l, float *acc, float *ws,
                        int bits, int per_channel)
{
    size_t g = 0;
    for (; g + QH <= group; g += QH)
        kv_pass(view, d, j0, j1, q + g * d, QH, scale, m + g, l + g, acc + g * d, ws, bits,
                per_channel);
    for (; g < group; g++)
        kv_pass(view, d, j0, j1, q + g * d, 1, scale, m + g, l + g, acc + g * d, ws, bits,
                per_channel);
}

/* head_dim 128 (the geometry of the benchmarks) gets its own copy with d fixed */
KV_INLINE void kv_run_d(const lm_kvq_view *view, size_t j0, size_t j1, const float *q,
                        size_t group, float scale, float *m, float *l, float *acc, float *ws,
                        int bits, int per_channel)
{
    if (view->head_dim == 128)
        kv_heads(view, 128, j0, j1, q, group, scale, m, l, acc, ws, bits, per_channel);
    else
        kv_heads(view, view->head_dim, j0, j1, q, group, scale, m, l, acc, ws, bits, per_channel);
}

/* One function per format and key group, so that each copy of the kernel is compiled on
 * its own (one function holding all six was 12 % slower in cache, the INT4 copy included).
 * Their per_channel is 0 (INT formats) or the KIVI key group, 32 or 64 tokens. */
#define KV_FORMAT_FN(name, bits, per_channel)                                                  \
    static __attribute__((noinline)) void name(const lm_kvq_view *view, size_t j0, size_t j1, \
                                               const float *q, size_t group, float scale,     \
                                               float *m, float *l, float *acc, float *ws)     \
    {                                                                                          \
        kv_run_d(view, j0, j1, q, group, scale, m, l, acc, ws, bits, per_channel);             \
    }
KV_FORMAT_FN(kv_int8, 8, 0)
KV_FORMAT_FN(kv_int4, 4, 0)
KV_FORMAT_FN(kv_kivi4, 4, KB / 2)
KV_FORMAT_FN(kv_kivi2, 2, KB / 2)
KV_FORMAT_FN(kv_kivi4_g64, 4, KB)
KV_FORMAT_FN(kv_kivi2_g64, 2, KB)

LM_KVQ_DECODE_DECLARE(avx512vnni)
{
    switch (view->format) {
    case LM_KVQ_INT8: kv_int8(view, j0, j1, q, group, scale, m, l, acc, workspace); break;
    case LM_KVQ_INT4: kv_int4(view, j0, j1, q, group, scale, m, l, acc, workspace); break;
    case LM_KVQ_KIVI4: kv_kivi4(view, j0, j1, q, group, scale, m, l, acc, workspace); break;
    case LM_KVQ_KIVI2: kv_kivi2(view, j0, j1, q, group, scale, m, l, acc, workspace); break;
    case LM_KVQ_KIVI4_G64:
        kv_kivi4_g64(view, j0, j1, q, group, scale, m, l, acc, workspace);
        break;
    case LM_KVQ_KIVI2_G64:
        kv_kivi2_g64(view, j0, j1, q, group, scale, m, l, acc, workspace);
        break;
    default: break;
    }
}

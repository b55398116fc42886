/* Quantized-cache decode with integer dot products (AVX512-VNNI): kvquant_body.h over the
 * avx512 SIMD mapping layer, scoring key tiles with VPDPBUSD. Called by
 * lm_kvq_decode_avx512 only when cpuid reports AVX512-VNNI. */
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512VNNI__)
#error "kernels/kvquant/avx512vnni.c needs -mavx512f -mavx512bw -mavx512vnni"
#endif
#include "kvquant.h"

#include "../attention/attention.h"
#include "../attention/simd_avx512.h"

#include <string.h>

#undef LM_ISA_SUFFIX
#define LM_ISA_SUFFIX avx512vnni

#include "words_avx512.h"
#define KQ_STORE_Q8(p, x) _mm_storeu_si128((__m128i *)(void *)(p), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(x)))

/* s[g, s_off + t] = q8_g . u_t for the 16 tokens of one key tile, heads [g0, g0 + gn).
 * A 64-byte tile row is 16 tokens x (32 / bits) dims; its k-th byte slice ((x >> bits k) &
 * mask per byte) holds dims 4k .. 4k + 3 of the row for each token, so
 *   acc[t] += sum_i u[t][4k + i] q8[4k + i]     = vpdpbusd(acc, slice, broadcast q8 dword)
 * (unsigned codes x signed query bytes, exact int32 sums). Two accumulators per head
 * hide the instruction's latency. */
static inline __attribute__((always_inline)) void
kq_tile_dots_vnni(const uint8_t *tile, size_t rows, int bits, const float *qf, const int8_t *qb,
                  size_t padded, size_t g0, int gn, float *s, size_t s_off)
{
    (void)qf;
    /* slice i = row i / per_row, shift bits (i mod per_row); even slices into acc 0, odd
     * into acc 1. Rows are walked with the slice index inside unrolled, so every shift is
     * a constant; at 8 bits (one slice per row) two rows per step. */
    const int per_row = 8 / bits;
    const __m512i mask = _mm512_set1_epi8((char)((1u << bits) - 1u));
    __m512i acc[DEC_GB][2];
    _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++)
        acc[b][0] = acc[b][1] = _mm512_setzero_si512();
    const size_t step = bits == 8 ? 2 : 1; /* rows per step */
    const int kn = bits == 8 ? 2 : per_row; /* slices per step */
    size_t r = 0;
    for (; r + step <= rows; r += step) {
        _Pragma("GCC unroll 4") for (int k = 0; k < kn; k++) {
            const size_t row = bits == 8 ? r + (size_t)k : r;
            const __m512i x = _mm512_loadu_si512((const void *)(tile + row * LM_KVQ_TILE * 4));
            const __m512i bytes =
                bits == 8 ? x : _mm512_and_si512(_mm512_srli_epi32(x, (unsigned)(bits * k)), mask);
            const size_t slice = bits == 8 ? row : r * (size_t)per_row + (size_t)k;
            _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++) {
                int32_t word; /* q8 of dims 4 slice .. 4 slice + 3 */
                memcpy(&word, qb + (g0 + (size_t)b) * padded + slice * 4, sizeof word);
                acc[b][k & 1] = _mm512_dpbusd_epi32(acc[b][k & 1], bytes, _mm512_set1_epi32(word));
            }
        }
    }
    for (; r < rows; r++) { /* an odd row count at 8 bits */
        const __m512i x = _mm512_loadu_si512((const void *)(tile + r * LM_KVQ_TILE * 4));
        _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++) {
            int32_t word;
            memcpy(&word, qb + (g0 + (size_t)b) * padded + r * 4, sizeof word);
            acc[b][0] = _mm512_dpbusd_epi32(acc[b][0], x, _mm512_set1_epi32(word));
        }
    }
    _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++)
        _mm512_storeu_ps(s + (g0 + (size_t)b) * LM_ATTN_DECODE_BLOCK + s_off,
                         _mm512_cvtepi32_ps(_mm512_add_epi32(acc[b][0], acc[b][1])));
}

/* kq_tile_dots_vnni over nt (2 or 4) consecutive tiles at once for every head of the group:
 * each query broadcast serves nt tiles (nt x 4 heads independent accumulators). */
static inline __attribute__((always_inline)) void
kq_tiles_dots_vnni(const uint8_t *tile0, size_t rows, int bits, const int8_t *qb, size_t padded,
                   size_t group, float *s, size_t s_off, int nt)
{
    const int per_row = 8 / bits;
    const size_t tile_bytes = LM_KVQ_TILE * rows * 4;
    const __m512i mask = _mm512_set1_epi8((char)((1u << bits) - 1u));
    for (size_t g0 = 0; g0 < group; g0 += DEC_GB) {
        const int gn = group - g0 < DEC_GB ? (int)(group - g0) : DEC_GB;
        __m512i acc[DEC_GB][4];
        _Pragma("GCC unroll 4") for (int b = 0; b < DEC_GB; b++)
            _Pragma("GCC unroll 4") for (int i = 0; i < 4; i++)
                acc[b][i] = _mm512_setzero_si512();
        for (size_t r = 0; r < rows; r++) {
            __m512i x[4];
            _Pragma("GCC unroll 4") for (int i = 0; i < nt; i++)
                x[i] = _mm512_loadu_si512((const void *)(tile0 + (size_t)i * tile_bytes +
                                                         r * LM_KVQ_TILE * 4));
            _Pragma("GCC unroll 4") for (int k = 0; k < per_row; k++) {
                __m512i bytes[4];
                _Pragma("GCC unroll 4") for (int i = 0; i < nt; i++)
                    bytes[i] = bits == 8 ? x[i]
                                         : _mm512_and_si512(
                                               _mm512_srli_epi32(x[i], (unsigned)(bits * k)), mask);
                const size_t slice = r * (size_t)per_row + (size_t)k;
                if (gn == DEC_GB) {
                    _Pragma("GCC unroll 4") for (int b = 0; b < DEC_GB; b++) {
                        int32_t word; /* q8 of dims 4 slice .. 4 slice + 3 */
                        memcpy(&word, qb + (g0 + (size_t)b) * padded + slice * 4, sizeof word);
                        const __m512i w = _mm512_set1_epi32(word);
                        _Pragma("GCC unroll 4") for (int i = 0; i < nt; i++)
                            acc[b][i] = _mm512_dpbusd_epi32(acc[b][i], bytes[i], w);
                    }
                } else {
                    for (int b = 0; b < gn; b++) {
                        int32_t word;
                        memcpy(&word, qb + (g0 + (size_t)b) * padded + slice * 4, sizeof word);
                        const __m512i w = _mm512_set1_epi32(word);
                        _Pragma("GCC unroll 4") for (int i = 0; i < nt; i++)
                            acc[b][i] = _mm512_dpbusd_epi32(acc[b][i], bytes[i], w);
                    }
                }
            }
        }
        for (int b = 0; b < gn; b++)
            _Pragma("GCC unroll 4") for (int i = 0; i < nt; i++)
                _mm512_storeu_ps(s + (g0 + (size_t)b) * LM_ATTN_DECODE_BLOCK + s_off +
                                     (size_t)i * LM_KVQ_TILE,
                                 _mm512_cvtepi32_ps(acc[b][i]));
    }
}

/* The KIVI query of one head for one key group, as kq_quantize_query on x = q * s^k
 * (float32 products), with only the bytes kept: qb {padded} = q8 (0 past d), scratch {d};
 * returns s_q and *lo_dot = q . lo^k. kp {2, d}: s^k then lo^k. d a multiple of 16. */
static inline __attribute__((always_inline)) float
kq_group_query_vnni(const float *q, const float *kp, size_t d, float *scratch, int8_t *qb,
                    float *lo_dot)
{
    __m512 mx = _mm512_setzero_ps(), lo = _mm512_setzero_ps();
    for (size_t c = 0; c < d; c += 16) {
        const __m512 qv = _mm512_loadu_ps(q + c);
        const __m512 x = _mm512_mul_ps(qv, _mm512_loadu_ps(kp + c));
        _mm512_storeu_ps(scratch + c, x);
        mx = _mm512_max_ps(mx, _mm512_abs_ps(x));
        lo = _mm512_fmadd_ps(qv, _mm512_loadu_ps(kp + d + c), lo);
    }
    *lo_dot = _mm512_reduce_add_ps(lo);
    const float amax = _mm512_reduce_max_ps(mx);
    const __m512 r = _mm512_set1_ps(amax > 0.0f ? (float)(127.0 / (double)amax) : 0.0f);
    for (size_t c = 0; c < d; c += 16) /* round half to even (MXCSR default), |code| <= 127 */
        _mm_storeu_si128((__m128i *)(void *)(qb + c),
                         _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(
                             _mm512_mul_ps(_mm512_loadu_ps(scratch + c), r))));
    return (float)((double)amax / 127.0);
}

/* Values: acc[g, c] += sum_j w_j x_j[c] over one block, with the block's weights
 * w_j = p_j s^v_j (>= 0) quantized per head to 16 bits: s_w = max_j w_j / 65535,
 * w16_j = round_half_even(w_j 65535 / max_j w_j) = 256 hi_j + lo_j (two bytes), then
 *   acc_hi[c] += sum_{4 tokens} hi_j x_j[c]   = vpdpbusd(acc_hi, broadcast hi dword, slice)
 *   acc_lo[c] += sum_{4 tokens} lo_j x_j[c]   (likewise)
 * on value groups (dims in lanes, 4 tokens per byte slice), and
 *   acc += s_w (256 acc_hi + acc_lo - fix).
 * x = the signed code (INT8: u xor 0x80 = u - 128; INT4: u - 8, by fix = 8 sum w16) or
 * u itself (KIVI: its lo is in the float sum p lo). Exact int32: |sum w16 x| <= 64 65535 128. */
static inline __attribute__((always_inline)) void
kq_pv_vnni(const uint8_t *codes, size_t d, size_t b0, const uint8_t *hi, const uint8_t *lo,
           size_t g0, int gn, size_t c0, int cv, const float *wscale, const float *wfix,
           float *accs, int bits)
{
    enum { CV = 2 }; /* two accumulator sets: DEC_GB x CV x 2 registers */
    const int per = 32 / bits, slices = 8 / bits;
    const __m512i mask = _mm512_set1_epi8((char)((1u << bits) - 1u));
    __m512i ah[DEC_GB][CV], al[DEC_GB][CV];
    _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++)
        _Pragma("GCC unroll 2") for (int e = 0; e < cv; e++)
            ah[b][e] = al[b][e] = _mm512_setzero_si512();
    for (size_t t = 0; t < LM_ATTN_DECODE_BLOCK; t += (size_t)per) { /* value groups */
        const uint8_t *grp = codes + (b0 + t) / (size_t)per * d * 4;
        __m512i x[CV];
        _Pragma("GCC unroll 2") for (int e = 0; e < cv; e++)
            x[e] = _mm512_loadu_si512((const void *)(grp + (c0 + (size_t)e * 16) * 4));
        _Pragma("GCC unroll 4") for (int k = 0; k < slices; k++) { /* tokens 4k .. 4k + 3 */
            __m512i sl[CV];
            _Pragma("GCC unroll 2") for (int e = 0; e < cv; e++)
                sl[e] = bits == 8 ? _mm512_xor_si512(x[e], _mm512_set1_epi8((char)0x80))
                                  : _mm512_and_si512(_mm512_srli_epi32(x[e], (unsigned)(bits * k)),
                                                     mask);
            const size_t at = t + 4 * (size_t)k;
            _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++) {
                int32_t wh, wl; /* the 4 tokens' weight bytes */
                memcpy(&wh, hi + (g0 + (size_t)b) * LM_ATTN_DECODE_BLOCK + at, sizeof wh);
                memcpy(&wl, lo + (g0 + (size_t)b) * LM_ATTN_DECODE_BLOCK + at, sizeof wl);
                const __m512i vh = _mm512_set1_epi32(wh), vl = _mm512_set1_epi32(wl);
                _Pragma("GCC unroll 2") for (int e = 0; e < cv; e++) {
                    ah[b][e] = _mm512_dpbusd_epi32(ah[b][e], vh, sl[e]);
                    al[b][e] = _mm512_dpbusd_epi32(al[b][e], vl, sl[e]);
                }
            }
        }
    }
    _Pragma("GCC unroll 4") for (int b = 0; b < gn; b++) {
        const __m512 sw = _mm512_set1_ps(wscale[g0 + (size_t)b]);
        const __m512i fix = _mm512_set1_epi32((int)wfix[g0 + (size_t)b]);
        _Pragma("GCC unroll 2") for (int e = 0; e < cv; e++) {
            float *a = accs + (g0 + (size_t)b) * d + c0 + (size_t)e * 16;
            const __m512i sum =
                _mm512_sub_epi32(_mm512_add_epi32(_mm512_slli_epi32(ah[b][e], 8), al[b][e]), fix);
            _mm512_storeu_ps(a, _mm512_fmadd_ps(sw, _mm512_cvtepi32_ps(sum), _mm512_loadu_ps(a)));
        }
    }
}

/* Quantizes the block's weights w {group, BLOCK} (>= 0, 0 past the block's tokens) to
 * 16 bits, kept as bytes hi, lo {group, BLOCK} (w8 holds both), scale ws {group} and
 * fix {group} = offset sum w16, then runs kq_pv_vnni over every head and dim.
 * offset: 8 for INT4 (x = u - 8), else 0. */
static inline __attribute__((always_inline)) void
kq_pv_all_vnni(const uint8_t *codes, size_t d, size_t b0, size_t group, const float *w,
               float *accs, int bits, int offset, uint8_t *w8, float *ws, float *fix)
{
    enum { BLOCK = LM_ATTN_DECODE_BLOCK };
    uint8_t *hi = w8, *lo = w8 + group * BLOCK;
    for (size_t g = 0; g < group; g++) {
        const float *wg = w + g * BLOCK;
        __m512 mx = _mm512_setzero_ps();
        for (size_t j = 0; j < BLOCK; j += 16)
            mx = _mm512_max_ps(mx, _mm512_loadu_ps(wg + j));
        const float wmax = _mm512_reduce_max_ps(mx);
        /* w16 = round_half_even(w * (65535 / wmax)) <= 65535 (1 + 2^-23): at most 65535 */
        const __m512 r = _mm512_set1_ps(wmax > 0.0f ? 65535.0f / wmax : 0.0f);
        __m512i sum = _mm512_setzero_si512();
        for (size_t j = 0; j < BLOCK; j += 16) {
            const __m512i code = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(wg + j), r));
            sum = _mm512_add_epi32(sum, code);
            _mm_storeu_si128((__m128i *)(void *)(hi + g * BLOCK + j),
                             _mm512_cvtepi32_epi8(_mm512_srli_epi32(code, 8)));
            _mm_storeu_si128((__m128i *)(void *)(lo + g * BLOCK + j), _mm512_cvtepi32_epi8(code));
        }
        ws[g] = wmax / 65535.0f;
        fix[g] = (float)(offset * _mm512_reduce_add_epi32(sum)); /* <= 8 64 65535: exact */
    }
    size_t g0 = 0;
    for (; g0 + DEC_GB <= group; g0 += DEC_GB) {
        size_t c0 = 0;
        for (; c0 + 32 <= d; c0 += 32)
            kq_pv_vnni(codes, d, b0, hi, lo, g0, DEC_GB, c0, 2, ws, fix, accs, bits);
        for (; c0 < d; c0 += 16)
            kq_pv_vnni(codes, d, b0, hi, lo, g0, DEC_GB, c0, 1, ws, fix, accs, bits);
    }
    for (; g0 < group; g0++)
        for (size_t c0 = 0; c0 < d; c0 += 16)
            kq_pv_vnni(codes, d, b0, hi, lo, g0, 1, c0, 1, ws, fix, accs, bits);
}

#define KQ_VNNI 1
#include "kvquant_body.h"

/* The SIMD vocabulary of every family's kernel bodies on the avx512 path (one per ISA:
 * kernels/simd/scalar.h, avx2.h, avx512.h, neon.h; the names mean the same on each):
 *   LM_V holds LM_W floats; LM_ISA_SUFFIX names the path in generated function names;
 *   V_ZERO, V_SET1, V_BCAST(p) (*p in every lane), V_LOADU / V_STOREU (unaligned),
 *   V_STREAM / V_SFENCE (non-temporal store, where the ISA has one), V_ADD, V_SUB, V_MUL,
 *   V_DIV, V_FMA(a, b, c) = a*b + c, V_MAX, V_MIN, V_ABS, V_EXP / V_EXPM1 / V_LOG1P,
 *   V_ROUND (to the nearest integer), V_SCALE2(a, k) = a 2^k (k integral, |k| <= 126),
 *   V_RCP (1 / a to within 2 ulp: V_DIV where division is cheap, else an estimate refined
 *   by Newton steps; fast_exp.h builds V_EXP_FAST / V_EXPM1_FAST from these),
 *   V_HSUM / V_HMAX (over the lanes), V_HSUM4(a, b, c, d, out) (four sums at once);
 *   V_LOAD_F16 / V_LOAD_BF16 (LM_W stored halves to floats), V_LOAD_U8 / U4 / U2 (LM_W
 *   unsigned codes of a packed row from element c, as floats);
 *   PF_*, PV_*, DEC_*: the register-tile shapes of the attention and kvquant bodies.
 * AVX-512 F/BW: 16 floats, SLEEF 1-ulp transcendental functions. */
#ifndef LONGMIX_SIMD_AVX512_H
#define LONGMIX_SIMD_AVX512_H

#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "kernels/simd/avx512.h needs -mavx512f -mavx512bw (include it only from an avx512*.c file)"
#endif

#include <immintrin.h>
#include <sleef.h>
#include <string.h>

#define LM_V __m512
#define LM_W 16
#define V_LOADU(ptr) _mm512_loadu_ps(ptr)
#define V_STOREU(ptr, v) _mm512_storeu_ps(ptr, v)
/* non-temporal store (ptr aligned to the vector), and the fence that orders such stores */
#define V_STREAM(ptr, v) _mm512_stream_ps(ptr, v)
#define V_SFENCE() _mm_sfence()
#define V_SET1(s) _mm512_set1_ps(s)
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_SUB(a, b) _mm512_sub_ps(a, b)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_DIV(a, b) _mm512_div_ps(a, b)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_MAX(a, b) _mm512_max_ps(a, b)
#define V_MIN(a, b) _mm512_min_ps(a, b)
#define V_ABS(a) _mm512_abs_ps(a)
#define V_EXP(a) Sleef_expf16_u10avx512f(a)
#define V_EXPM1(a) Sleef_expm1f16_u10avx512f(a)
#define V_LOG1P(a) Sleef_log1pf16_u10avx512f(a)
#define V_ROUND(a) _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_SCALE2(a, k) _mm512_scalef_ps(a, k)
/* 1 / a: the 14-bit estimate and one Newton step, r (2 - a r) */
#define V_RCP(a) lm_rcp_avx512(a)
static inline __m512 lm_rcp_avx512(__m512 a)
{
    const __m512 r = _mm512_rcp14_ps(a);
    return _mm512_mul_ps(r, _mm512_fnmadd_ps(a, r, _mm512_set1_ps(2.0f)));
}
/* sum of the 16 lanes (a reduction tree) */
#define V_HSUM(a) _mm512_reduce_add_ps(a)

#define LM_ISA_SUFFIX avx512
#define V_ZERO() _mm512_setzero_ps()
#define V_BCAST(p) _mm512_set1_ps(*(p))
#define V_HMAX(x) _mm512_reduce_max_ps(x)
/* 16 halves -> 16 floats */
#define V_LOAD_F16(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
/* 16 bfloat16 -> 16 floats: zero-extend to 32 bits, shift into the high half */
#define V_LOAD_BF16(p)                                                                         \
    _mm512_castsi512_ps(_mm512_slli_epi32(                                                     \
        _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(p))), 16))
#define PF_RK 6
#define PF_NV 4
#define PV_R 3
#define PV_CV 8
#define DEC_GB 4
#define DEC_CV 4

/* codes: LM_W unsigned codes of a row at `row`, from element c (a multiple of 16) */
static inline __m512 load_u8_512(const uint8_t *p) /* 16 bytes -> 16 floats */
{
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(const void *)p)));
}
static inline __m512 load_u4_512(const uint8_t *p) /* 8 bytes, low nibble first */
{
    const __m128i mask = _mm_set1_epi8(15);
    __m128i x = _mm_loadl_epi64((const __m128i *)(const void *)p);
    __m128i lo = _mm_and_si128(x, mask), hi = _mm_and_si128(_mm_srli_epi16(x, 4), mask);
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi)));
}
static inline __m512 load_u2_512(const uint8_t *p) /* 4 bytes, lowest 2 bits first */
{
    int word;
    memcpy(&word, p, sizeof word);
    const __m128i spread = _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
    __m512i x = _mm512_cvtepu8_epi32(_mm_shuffle_epi8(_mm_cvtsi32_si128(word), spread));
    const __m512i shift = _mm512_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6);
    x = _mm512_and_si512(_mm512_srlv_epi32(x, shift), _mm512_set1_epi32(3));
    return _mm512_cvtepi32_ps(x);
}
#define V_LOAD_U8(row, c) load_u8_512((row) + (c))
#define V_LOAD_U4(row, c) load_u4_512((row) + (c) / 2)
#define V_LOAD_U2(row, c) load_u2_512((row) + (c) / 4)

/* out[0..4) = lane sums of a, b, c, d: one shuffle tree for four reductions */
static inline void hsum4_512(__m512 a, __m512 b, __m512 c, __m512 d, float *out)
{
    /* 256-bit halves: ab = [a.lo + a.hi, b.lo + b.hi], cd likewise */
    __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, 0x44), _mm512_shuffle_f32x4(c, d, 0xEE));
    /* 128-bit chunks: [a, b, c, d] partials of 4 lanes each */
    __m512 x = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, 0x88), _mm512_shuffle_f32x4(ab, cd, 0xDD));
    x = _mm512_add_ps(x, _mm512_permute_ps(x, 0x4E)); /* + swapped 64-bit halves */
    x = _mm512_add_ps(x, _mm512_permute_ps(x, 0xB1)); /* + swapped neighbours */
    float lanes[16];
    _mm512_storeu_ps(lanes, x);
    out[0] = lanes[0], out[1] = lanes[4], out[2] = lanes[8], out[3] = lanes[12];
}
#define V_HSUM4(a, b, c, d, out) hsum4_512(a, b, c, d, out)

#endif

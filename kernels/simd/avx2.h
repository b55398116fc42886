/* The SIMD vocabulary of every family's kernel bodies on the avx2 path (one per ISA:
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
 * AVX2 + FMA (+ F16C): 8 floats, SLEEF 1-ulp transcendental functions. */
#ifndef LONGMIX_SIMD_AVX2_H
#define LONGMIX_SIMD_AVX2_H

#if !defined(__AVX2__) || !defined(__FMA__)
#error "kernels/simd/avx2.h needs -mavx2 -mfma (include it only from an avx2*.c file)"
#endif

#include <immintrin.h>
#include <sleef.h>
#include <string.h>

#define LM_V __m256
#define LM_W 8
#define V_LOADU(ptr) _mm256_loadu_ps(ptr)
#define V_STOREU(ptr, v) _mm256_storeu_ps(ptr, v)
/* non-temporal store (ptr aligned to the vector), and the fence that orders such stores */
#define V_STREAM(ptr, v) _mm256_stream_ps(ptr, v)
#define V_SFENCE() _mm_sfence()
#define V_SET1(s) _mm256_set1_ps(s)
#define V_ADD(a, b) _mm256_add_ps(a, b)
#define V_SUB(a, b) _mm256_sub_ps(a, b)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_DIV(a, b) _mm256_div_ps(a, b)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_MAX(a, b) _mm256_max_ps(a, b)
#define V_MIN(a, b) _mm256_min_ps(a, b)
#define V_ABS(a) _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a) /* clear the sign bit */
#define V_EXP(a) Sleef_expf8_u10avx2(a)
#define V_EXPM1(a) Sleef_expm1f8_u10avx2(a)
#define V_LOG1P(a) Sleef_log1pf8_u10avx2(a)
#define V_ROUND(a) _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
/* a 2^k: k + 127 in the exponent field of a float */
#define V_SCALE2(a, k)                                                                         \
    _mm256_mul_ps(a, _mm256_castsi256_ps(_mm256_slli_epi32(                                    \
                         _mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23)))
/* 1 / a: the 12-bit estimate and two Newton steps, r (2 - a r) */
#define V_RCP(a) lm_rcp_avx2(a)
static inline __m256 lm_rcp_avx2(__m256 a)
{
    const __m256 two = _mm256_set1_ps(2.0f);
    __m256 r = _mm256_rcp_ps(a);
    r = _mm256_mul_ps(r, _mm256_fnmadd_ps(a, r, two));
    return _mm256_mul_ps(r, _mm256_fnmadd_ps(a, r, two));
}
/* sum of the 8 lanes (a reduction tree) */
static inline float lm_hsum_avx2(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));                  /* lanes 0+2, 1+3 */
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s))); /* lane 0 + lane 1 */
}
#define V_HSUM(a) lm_hsum_avx2(a)

static inline float hmax256(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#define LM_ISA_SUFFIX avx2
#define V_ZERO() _mm256_setzero_ps()
#define V_BCAST(p) _mm256_broadcast_ss(p)
#define V_HMAX(x) hmax256(x)
/* 8 halves -> 8 floats (vcvtph2ps) */
#define V_LOAD_F16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p)))
/* 8 bfloat16 -> 8 floats: zero-extend to 32 bits, shift into the high half */
#define V_LOAD_BF16(p)                                                                         \
    _mm256_castsi256_ps(_mm256_slli_epi32(                                                     \
        _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(p))), 16))
#define PF_RK 4
#define PF_NV 2
#define PV_R 3
#define PV_CV 4
#define DEC_GB 4
#define DEC_CV 2

/* codes: LM_W unsigned codes of a row at `row`, from element c (a multiple of 8) */
static inline __m256 load_u8_256(const uint8_t *p) /* 8 bytes -> 8 floats */
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p)));
}
static inline __m256 load_u4_256(const uint8_t *p) /* 4 bytes, low nibble first */
{
    int word;
    memcpy(&word, p, sizeof word);
    const __m128i mask = _mm_set1_epi8(15);
    __m128i x = _mm_cvtsi32_si128(word);
    __m128i lo = _mm_and_si128(x, mask), hi = _mm_and_si128(_mm_srli_epi16(x, 4), mask);
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi)));
}
static inline __m256 load_u2_256(const uint8_t *p) /* 2 bytes, lowest 2 bits first */
{
    int word = p[0] | p[1] << 8;
    const __m128i spread = _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    __m256i x = _mm256_cvtepu8_epi32(_mm_shuffle_epi8(_mm_cvtsi32_si128(word), spread));
    const __m256i shift = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    x = _mm256_and_si256(_mm256_srlv_epi32(x, shift), _mm256_set1_epi32(3));
    return _mm256_cvtepi32_ps(x);
}
#define V_LOAD_U8(row, c) load_u8_256((row) + (c))
#define V_LOAD_U4(row, c) load_u4_256((row) + (c) / 2)
#define V_LOAD_U2(row, c) load_u2_256((row) + (c) / 4)

/* out[0..4) = lane sums of a, b, c, d */
static inline void hsum4_256(__m256 a, __m256 b, __m256 c, __m256 d, float *out)
{
    __m256 ab = _mm256_hadd_ps(a, b); /* pairs of a and b */
    __m256 cd = _mm256_hadd_ps(c, d);
    __m256 x = _mm256_hadd_ps(ab, cd); /* per 128-bit half: a, b, c, d partials */
    __m128 sum = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    _mm_storeu_ps(out, sum);
}
#define V_HSUM4(a, b, c, d, out) hsum4_256(a, b, c, d, out)

#endif

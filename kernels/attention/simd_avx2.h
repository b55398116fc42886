/* SIMD mapping layer for avx2 (see kernel_body.h for the list of names): shared by the
 * attention and kvquant kernels of this path. Include only from avx2.c files. */
#ifndef LONGMIX_SIMD_AVX2_H
#define LONGMIX_SIMD_AVX2_H


#include <immintrin.h>
#include <sleef.h>
#include <string.h>

static inline float hsum256(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));  /* lanes 0+2, 1+3 */
    s = _mm_add_ss(s, _mm_movehdup_ps(s));   /* lane 0 + lane 1 */
    return _mm_cvtss_f32(s);
}

static inline float hmax256(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#define LM_ISA_SUFFIX avx2
typedef __m256 vf;
#define VW 8
#define V_ZERO() _mm256_setzero_ps()
#define V_SET1(x) _mm256_set1_ps(x)
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_STORE(p, x) _mm256_storeu_ps(p, x)
#define V_BCAST(p) _mm256_broadcast_ss(p)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_ADD(a, b) _mm256_add_ps(a, b)
#define V_SUB(a, b) _mm256_sub_ps(a, b)
#define V_MAX(a, b) _mm256_max_ps(a, b)
#define V_HSUM(x) hsum256(x)
#define V_HMAX(x) hmax256(x)
#define V_EXP(x) Sleef_expf8_u10avx2(x)
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

/* codes: VW unsigned codes of a row at `row`, from element c (a multiple of 8) */
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

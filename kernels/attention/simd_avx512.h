/* SIMD mapping layer for avx512 (see kernel_body.h for the list of names): shared by the
 * attention and kvquant kernels of this path. Include only from avx512.c files. */
#ifndef LONGMIX_SIMD_AVX512_H
#define LONGMIX_SIMD_AVX512_H


#include <immintrin.h>
#include <sleef.h>
#include <string.h>

#define LM_ISA_SUFFIX avx512
typedef __m512 vf;
#define VW 16
#define V_ZERO() _mm512_setzero_ps()
#define V_SET1(x) _mm512_set1_ps(x)
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_STORE(p, x) _mm512_storeu_ps(p, x)
#define V_BCAST(p) _mm512_set1_ps(*(p))
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_SUB(a, b) _mm512_sub_ps(a, b)
#define V_MAX(a, b) _mm512_max_ps(a, b)
#define V_HSUM(x) _mm512_reduce_add_ps(x)
#define V_HMAX(x) _mm512_reduce_max_ps(x)
#define V_EXP(x) Sleef_expf16_u10avx512f(x)
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

/* codes: VW unsigned codes of a row at `row`, from element c (a multiple of 16) */
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

/* AVX512-BF16 dot-product primitives (VDPBF16PS: each float32 lane adds a[2i] b[2i] +
 * a[2i+1] b[2i+1] of two vectors of 32 bfloat16; a product of two bfloat16 is exact in
 * float32). A dot product pairs neighbours along the summed index, so each operand is
 * held in pairs of that index, one 32-bit word per pair: the kernels that use these
 * (attention prefill, chunked SSD, chunked linear attention) pack their operands so.
 * Needs -mavx512bf16. */
#ifndef LONGMIX_SIMD_AVX512BF16_H
#define LONGMIX_SIMD_AVX512BF16_H

#ifndef __AVX512BF16__
#error "simd/avx512bf16.h needs -mavx512bf16"
#endif

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define BF16_INLINE static inline __attribute__((always_inline))

/* Word i of the result is (lo[i], hi[i]) for two rows of 16 bfloat16 (or of 16 float32
 * converted with round to nearest even, bf16_pair_ps). */
BF16_INLINE __m512i bf16_interleave(__m512i both) /* both = [lo 0..15 | hi 0..15] */
{
    static const uint16_t order[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                       8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    return _mm512_permutexvar_epi16(_mm512_loadu_si512(order), both);
}

/* The words (lo[i], hi[i]) of 16 bfloat16 of two rows; hi NULL pairs with zeros. */
BF16_INLINE __m512i bf16_pair_rows(const uint16_t *lo, const uint16_t *hi)
{
    const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)lo);
    const __m256i b = hi != NULL ? _mm256_loadu_si256((const __m256i *)(const void *)hi)
                                 : _mm256_setzero_si256();
    return bf16_interleave(_mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1));
}

/* The words (lo[i], hi[i]) of two float32 vectors rounded to bfloat16. */
BF16_INLINE __m512i bf16_pair_ps(__m512 lo, __m512 hi)
{
    return bf16_interleave((__m512i)_mm512_cvtne2ps_pbh(hi, lo));
}

/* acc + the pairwise dot products of a and b, lane by lane. */
BF16_INLINE __m512 bf16_dot(__m512 acc, __m512i a, __m512i b)
{
    return _mm512_dpbf16_ps(acc, (__m512bh)a, (__m512bh)b);
}

/* The 32-bit word at p (two bfloat16) in every lane. */
BF16_INLINE __m512i bf16_bcast_word(const void *p)
{
    uint32_t word;
    memcpy(&word, p, sizeof word);
    return _mm512_set1_epi32((int)word);
}

/* 16 bfloat16 at p widened to float32 (exact). */
BF16_INLINE __m512 bf16_load_ps(const uint16_t *p)
{
    const __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)p);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

#endif

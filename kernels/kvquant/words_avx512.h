/* The word layer of kvquant_body.h on AVX-512 (shared by the float and the VNNI decode):
 * 16 32-bit words per vector; KQ_FIELD(x, shift, mask) = float((x >> shift) & mask);
 * KQ_ROUND rounds half to even. Include only from an avx512*.c file. */
#ifndef LONGMIX_KVQUANT_WORDS_AVX512_H
#define LONGMIX_KVQUANT_WORDS_AVX512_H

#include <immintrin.h>

typedef __m512i kq_vi;
#define KQ_LOADW(p) _mm512_loadu_si512((const void *)(p))
#define KQ_FIELD(x, shift, mask)                                                               \
    _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(x, (unsigned)(shift)),               \
                                        _mm512_set1_epi32((int)(mask))))
#define KQ_ROUND(x) _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

#endif

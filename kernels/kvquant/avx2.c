/* Quantized-cache decode, avx2 path: kvquant_body.h over the avx2 SIMD mapping layer. */
#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#error "kernels/kvquant/avx2.c needs -mavx2 -mfma -mf16c"
#endif
#include "kvquant.h"

#include "../attention/attention.h"
#include "../simd/avx2.h"

/* word layer: 8 32-bit words; field = float((x >> shift) & mask) */
typedef __m256i kq_vi;
#define KQ_LOADW(p) _mm256_loadu_si256((const __m256i *)(const void *)(p))
#define KQ_FIELD(x, shift, mask)                                                               \
    _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(x, (int)(shift)),                    \
                                        _mm256_set1_epi32((int)(mask))))
#define KQ_ROUND(x) _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

#include "kvquant_body.h"

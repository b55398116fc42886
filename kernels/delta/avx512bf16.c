/* AVX512-BF16 chunked delta rule (lm_delta_chunked_bf16_avx512bf16): bfloat16 q, k, v with
 * the state products on VDPBF16PS dot products and float32 sums (delta_bf16.h), the rest
 * of the chunk in float32 over the AVX-512 mapping layer (delta_body.h). The avx512bf16
 * path's other delta slots are its parents' (avx512vnni -> avx512). */
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512BF16__)
#error "kernels/delta/avx512bf16.c needs -mavx512f -mavx512bw -mavx512bf16"
#endif
#include "delta.h"

#include "../simd/avx512.h"
#define DELTA_BF16_DOT 1
#define CHUNKED_BF16_NAME lm_delta_chunked_bf16_avx512bf16
#include "delta_body.h"

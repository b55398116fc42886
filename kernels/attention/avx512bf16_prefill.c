/* AVX512-BF16 attention prefill (lm_attn_prefill_bf16_avx512bf16): bfloat16 q, k, v on
 * VDPBF16PS dot products with float32 sums, over the AVX-512 mapping layer; the loop is
 * prefill_body.h's, the micro-kernels prefill_bf16.h's. The avx512bf16 path's other
 * attention slots are its parents' (avx512vnni -> avx512). */
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512BF16__)
#error "kernels/attention/avx512bf16_prefill.c needs -mavx512f -mavx512bw -mavx512bf16"
#endif
#include "attention.h"
#include "../simd/avx512.h"
#include "../simd/fast_exp.h"

#undef LM_ISA_SUFFIX
#define LM_ISA_SUFFIX avx512bf16
#define LM_ATTN_PREFILL_BF16_DOT 1

#include "kernel_body.h"

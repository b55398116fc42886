/* Peak float32 FMA loops for the roofline: LM_PEAK_CHAINS independent multiply-add chains
 * held in registers, x = x * a + b, so the loop is bound by FMA throughput, not latency or
 * memory. Each returns the flops it performed (2 per multiply-add per lane) and writes a
 * value depending on every chain to *sink so the compiler cannot drop the work. They
 * never allocate or start threads; harness/roofline.c runs one per OpenMP thread. */
#ifndef LONGMIX_PEAK_H
#define LONGMIX_PEAK_H

#include "longmix.h"

/* 12 chains cover FMA latency (4-5 cycles) times two FMA pipes on current x86 and
 * AArch64 cores. */
#define LM_PEAK_CHAINS 12

uint64_t lm_peak_fma_f32_scalar(uint64_t iterations, float *sink);
uint64_t lm_peak_fma_f32_avx2(uint64_t iterations, float *sink);
uint64_t lm_peak_fma_f32_avx512(uint64_t iterations, float *sink);
uint64_t lm_peak_fma_f32_neon(uint64_t iterations, float *sink);

/* Peak int8 dot-product loop (AVX512-VNNI VPDPBUSD chains); returns operations, 2 per
 * u8 x s8 multiply-add, so a rate of it compares with GFLOP/s. */
uint64_t lm_peak_dot_i8_avx512vnni(uint64_t iterations, float *sink);

/* Peak bf16 dot-product loop (AVX512-BF16 VDPBF16PS chains); returns flops, 2 per bf16
 * product. */
uint64_t lm_peak_dot_bf16_avx512bf16(uint64_t iterations, float *sink);

/* The loop of one path, or NULL when this build does not hold it. */
typedef uint64_t (*lm_peak_fn)(uint64_t iterations, float *sink);
lm_peak_fn lm_peak_for(lm_isa isa);

/* The int8 dot-product loop, or NULL when this build or CPU has none (x86: AVX512-VNNI,
 * checked at run time). */
lm_peak_fn lm_peak_dot_i8(void);

/* The bf16 dot-product loop, or NULL when this build or CPU has none (x86: AVX512-BF16,
 * checked at run time). */
lm_peak_fn lm_peak_dot_bf16(void);

#endif

/* The same-run limits every kernel is reported against: peak float32 FMA rate per ISA
 * path and thread count, and STREAM-triad memory bandwidth. */
#ifndef LONGMIX_ROOFLINE_H
#define LONGMIX_ROOFLINE_H

#include "longmix.h"

/* Peak float32 GFLOP/s of `isa` on `threads` OpenMP threads (each runs the register-only
 * FMA loop of kernels/core/peak.h): `reps` timed repetitions of about `seconds` each
 * after one excluded warm-up; the best is returned. LM_ERR_UNSUPPORTED when the path is
 * not available, LM_ERR_ARG for threads < 1 or reps < 1. */
lm_status lm_roofline_peak(lm_isa isa, int threads, int reps, double seconds, double *gflops,
                           lm_error *err);

/* Peak int8 dot-product rate in GOP/s (2 operations per u8 x s8 multiply-add) on
 * `threads` threads: register-only VPDPBUSD chains, timed as lm_roofline_peak.
 * LM_ERR_UNSUPPORTED when the CPU or build has no AVX512-VNNI, LM_ERR_ARG as above. */
lm_status lm_roofline_peak_dot_i8(int threads, int reps, double seconds, double *gops,
                                  lm_error *err);

/* Peak bf16 dot-product rate in GFLOP/s (2 per bf16 product) on `threads` threads:
 * register-only VDPBF16PS chains, timed as lm_roofline_peak. LM_ERR_UNSUPPORTED when the
 * CPU or build has no AVX512-BF16. */
lm_status lm_roofline_peak_dot_bf16(int threads, int reps, double seconds, double *gflops,
                                    lm_error *err);

/* STREAM triad a[i] = b[i] + s * c[i] over three float64 arrays of `array_bytes` each on
 * `threads` threads (first-touch initialised by the same threads): `reps` + 1
 * repetitions, the first excluded, best rate returned in GB/s (10^9 bytes, STREAM's
 * 24 bytes per element). Validated: every element must equal the exact expected value,
 * else LM_ERR_NUMERIC. LM_ERR_NOMEM when the arrays do not fit. */
lm_status lm_roofline_triad(int threads, size_t array_bytes, int reps, double *gbps,
                            lm_error *err);

/* Default STREAM array size: 4 x the total last-level cache (hwloc), at least 32 MiB,
 * at most 1/32 of the machine's memory. */
size_t lm_roofline_default_array_bytes(void);

/* A quick same-run measurement for one (isa, threads): a few short repetitions, for
 * sweeps and crossovers that report fractions of the roofline. */
typedef struct lm_roofline_limits {
    lm_isa isa;
    int threads;
    double peak_gflops;
    double triad_gbps;
    double peak_bf16_gflops; /* the bf16 dot-product peak on a path with bf16 dot-product
                              * kernels (avx512bf16), else 0 */
} lm_roofline_limits;

lm_status lm_roofline_quick(lm_isa isa, int threads, lm_roofline_limits *out, lm_error *err);

/* Attainable GFLOP/s for `flops` over `bytes` under the limits: min(peak, AI * bandwidth). */
double lm_roofline_attainable(const lm_roofline_limits *limits, double flops, double bytes);

/* The same for a row whose main operand is `dtype`: a bf16 row on a path with bf16 dot
 * products (peak_bf16_gflops > 0) is held to that peak, every other row to the FMA peak. */
double lm_roofline_attainable_dtype(const lm_roofline_limits *limits, const char *dtype,
                                    double flops, double bytes);

#endif

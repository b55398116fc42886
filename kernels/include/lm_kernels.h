/* THE kernel list: one line per slot of the dispatch table.
 *
 *   X(name, kernel, signature, family, paths)
 *
 * name       the lm_ops field and the stem of every implementation: lm_<name>_<isa>
 *            (lm_attn_decode_f16_avx512). It is <kernel>_<dtype> for a kernel with one
 *            slot per compute dtype, <kernel> alone when one slot serves every dtype.
 * kernel     the one word a user sees: `longmix sweep --kernel`, the contract's "kernel",
 *            the CSV's kernel column and the recipe in docs/contracts.md. A slot another
 *            kernel's driver calls (gemm_acc_f32, scan_affine_reduce_f32) names that kernel:
 *            it is measured and checked through it.
 * signature  the function type (lm_ops_types.h).
 * family     the folder under kernels/ that holds ref*.c, the ISA files and the driver.
 * paths      which ISA files define lm_<name>_<isa>: ALL (scalar avx2 avx512 neon),
 *            ALL_VNNI (those and avx512vnni) or ALL_BF16 (those of ALL and avx512bf16). A
 *            path without its own function takes its parent path's (avx512bf16 ->
 *            avx512vnni -> avx512 -> avx2 -> scalar, neon -> scalar), so every slot of
 *            every table is set.
 *
 * This list generates the lm_ops fields (lm_ops.h), the declaration of every
 * implementation (below) and every per-ISA table (kernels/core/dispatch.c). The harness
 * registers bench cases and contract runners under the kernel word (harness/registry.h);
 * tests/test_registry.c fails when a kernel word lacks either, or its docs recipe. */
#ifndef LONGMIX_KERNELS_H
#define LONGMIX_KERNELS_H

#include "lm_ops_types.h"

#define LM_KERNELS(X)                                                                     \
    X(gemv_rowdot_f32, gemv_rowdot, lm_gemv_rowdot_fn, gemv, ALL)                         \
    X(attn_prefill_f32, attn_prefill, lm_attn_prefill_fn, attention, ALL)                 \
    X(attn_prefill_bf16, attn_prefill, lm_attn_prefill_fn, attention, ALL_BF16)          \
    X(attn_decode_f32, attn_decode, lm_attn_decode_fn, attention, ALL)                    \
    X(attn_decode_f16, attn_decode, lm_attn_decode_fn, attention, ALL)                    \
    X(attn_decode_bf16, attn_decode, lm_attn_decode_fn, attention, ALL)                   \
    X(kvq_decode, kvq_decode, lm_kvq_decode_fn, kvquant, ALL_VNNI)                        \
    X(mamba1_scan_f32, mamba1_scan, lm_mamba1_scan_fn, ssm, ALL)                          \
    X(conv_causal_f32, conv_causal, lm_conv_causal_fn, conv, ALL)                         \
    X(scan_affine_f32, scan_affine, lm_scan_affine_fn, scan, ALL)                         \
    X(scan_affine_reduce_f32, scan_affine, lm_scan_affine_reduce_fn, scan, ALL)           \
    X(linear_recurrent_f32, linear_recurrent, lm_linear_head_fn, linear, ALL)             \
    X(linear_chunked_f32, linear_chunked, lm_linear_head_fn, linear, ALL)                 \
    X(linear_chunked_bf16, linear_chunked, lm_linear_head_fn, linear, ALL_BF16)           \
    X(gemm_acc_f32, linear_chunked, lm_gemm_acc_fn, linear, ALL)                          \
    X(delta_recurrent_f32, delta_recurrent, lm_delta_head_fn, delta, ALL)                 \
    X(delta_chunked_f32, delta_chunked, lm_delta_head_fn, delta, ALL)                     \
    X(delta_chunked_bf16, delta_chunked, lm_delta_head_fn, delta, ALL_BF16)               \
    X(ssd_chunked_f32, ssd_chunked, lm_ssd_chunked_fn, ssm, ALL)                          \
    X(ssd_chunked_bf16, ssd_chunked, lm_ssd_chunked_fn, ssm, ALL_BF16)                    \
    X(ssd_step_f32, ssd_step, lm_ssd_step_fn, ssm, ALL)

/* The ISA paths, in lm_isa order (a parent before its children), as X(isa, PARENT, kind):
 * PARENT the lm_isa constant of the path it falls back on (itself for the root); kind
 * `base` for a path of its own vector width, `derived` for its parent's width with a few
 * kernels of its own (those alone are verified on it: harness/kernels_contract.c).
 * avx512bf16 derives from avx512vnni, not from avx512: every CPU with AVX512-BF16
 * (Cooper Lake, Sapphire Rapids and later, Zen 4 and later) also has AVX512-VNNI, so the
 * one chain keeps both sets of kernels active (docs/architecture.md, "ISA paths"). */
#define LM_ISA_PATHS(X)                                                                   \
    X(scalar, SCALAR, base)                                                               \
    X(avx2, SCALAR, base)                                                                 \
    X(avx512, AVX2, base)                                                                 \
    X(avx512vnni, AVX512, derived)                                                        \
    X(avx512bf16, AVX512VNNI, derived)                                                    \
    X(neon, SCALAR, base)

/* LM_PATH_<paths>_<isa>(f): f when that path's file defines it, else NULL (the parent's). */
#define LM_PATH_ALL_scalar(f) f
#define LM_PATH_ALL_avx2(f) f
#define LM_PATH_ALL_avx512(f) f
#define LM_PATH_ALL_avx512vnni(f) NULL
#define LM_PATH_ALL_avx512bf16(f) NULL
#define LM_PATH_ALL_neon(f) f
#define LM_PATH_ALL_VNNI_scalar(f) f
#define LM_PATH_ALL_VNNI_avx2(f) f
#define LM_PATH_ALL_VNNI_avx512(f) f
#define LM_PATH_ALL_VNNI_avx512vnni(f) f
#define LM_PATH_ALL_VNNI_avx512bf16(f) NULL
#define LM_PATH_ALL_VNNI_neon(f) f
#define LM_PATH_ALL_BF16_scalar(f) f
#define LM_PATH_ALL_BF16_avx2(f) f
#define LM_PATH_ALL_BF16_avx512(f) f
#define LM_PATH_ALL_BF16_avx512vnni(f) NULL
#define LM_PATH_ALL_BF16_avx512bf16(f) f
#define LM_PATH_ALL_BF16_neon(f) f

/* Every implementation of every slot, declared from its signature (an ISA file defines
 * the ones its path holds; a declaration nobody defines is never referenced). */
#define LM_KERNEL_DECLARE(name, kernel, signature, family, paths)                         \
    signature lm_##name##_scalar, lm_##name##_avx2, lm_##name##_avx512,                   \
        lm_##name##_avx512vnni, lm_##name##_avx512bf16, lm_##name##_neon;
LM_KERNELS(LM_KERNEL_DECLARE)
#undef LM_KERNEL_DECLARE

#endif

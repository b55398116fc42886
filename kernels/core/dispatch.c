/* The one dispatch table. `compiled` names each path's kernels (NULL where a path has
 * none); the first lookup resolves every path once, filling NULL entries from the scalar
 * path, and picks the active path from LONGMIX_ISA or the CPU. This file and cpu.c hold
 * the library's only global state, written once under pthread_once. */
#include "lm_ops.h"

#include "../gemv/gemv.h"
#include "../attention/attention.h"
#include "../kvquant/kvquant.h"
#include "../ssm/ssm.h"
#include "../conv/conv.h"
#include "../scan/scan.h"
#include "../linear/linear.h"
#include "../delta/delta.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#define LM_BUILD_X86 1
#else
#define LM_BUILD_X86 0
#endif
#if defined(__aarch64__)
#define LM_BUILD_NEON 1
#else
#define LM_BUILD_NEON 0
#endif

static const char *const isa_names[LM_ISA_COUNT] = {
    [LM_ISA_SCALAR] = "scalar",
    [LM_ISA_AVX2] = "avx2",
    [LM_ISA_AVX512] = "avx512",
    [LM_ISA_NEON] = "neon",
};
_Static_assert(sizeof isa_names / sizeof isa_names[0] == LM_ISA_COUNT,
               "every lm_isa needs a name");

static const lm_ops compiled[LM_ISA_COUNT] = {
    [LM_ISA_SCALAR] =
        {
            .isa = LM_ISA_SCALAR,
            .rowdot_f32 = lm_gemv_rowdot_f32_scalar,
            .attn_prefill_f32 = lm_attn_prefill_f32_scalar,
            .attn_decode_f32 = lm_attn_decode_f32_scalar,
            .attn_decode_f16 = lm_attn_decode_f16_scalar,
            .attn_decode_bf16 = lm_attn_decode_bf16_scalar,
            .kvq_decode = lm_kvq_decode_scalar,
            .mamba1_scan_f32 = lm_ssm_mamba1_scan_f32_scalar,
            .conv_causal_f32 = lm_conv_causal_f32_scalar,
            .scan_affine_f32 = lm_scan_affine_f32_scalar,
            .scan_affine_reduce_f32 = lm_scan_affine_reduce_f32_scalar,
            .linear_recurrent_f32 = lm_linear_recurrent_f32_scalar,
            .linear_chunked_f32 = lm_linear_chunked_f32_scalar,
            .delta_recurrent_f32 = lm_delta_recurrent_f32_scalar,
            .delta_chunked_f32 = lm_delta_chunked_f32_scalar,
            .gemm_acc_f32 = lm_gemm_acc_f32_scalar,
            .ssd_chunked_f32 = lm_ssd_chunked_f32_scalar,
            .ssd_step_f32 = lm_ssd_step_f32_scalar,
        },
#if LM_BUILD_X86
    [LM_ISA_AVX2] =
        {
            .isa = LM_ISA_AVX2,
            .rowdot_f32 = lm_gemv_rowdot_f32_avx2,
            .attn_prefill_f32 = lm_attn_prefill_f32_avx2,
            .attn_decode_f32 = lm_attn_decode_f32_avx2,
            .attn_decode_f16 = lm_attn_decode_f16_avx2,
            .attn_decode_bf16 = lm_attn_decode_bf16_avx2,
            .kvq_decode = lm_kvq_decode_avx2,
            .mamba1_scan_f32 = lm_ssm_mamba1_scan_f32_avx2,
            .conv_causal_f32 = lm_conv_causal_f32_avx2,
            .scan_affine_f32 = lm_scan_affine_f32_avx2,
            .scan_affine_reduce_f32 = lm_scan_affine_reduce_f32_avx2,
            .linear_recurrent_f32 = lm_linear_recurrent_f32_avx2,
            .linear_chunked_f32 = lm_linear_chunked_f32_avx2,
            .delta_recurrent_f32 = lm_delta_recurrent_f32_avx2,
            .delta_chunked_f32 = lm_delta_chunked_f32_avx2,
            .gemm_acc_f32 = lm_gemm_acc_f32_avx2,
            .ssd_chunked_f32 = lm_ssd_chunked_f32_avx2,
            .ssd_step_f32 = lm_ssd_step_f32_avx2,
        },
    [LM_ISA_AVX512] =
        {
            .isa = LM_ISA_AVX512,
            .rowdot_f32 = lm_gemv_rowdot_f32_avx512,
            .attn_prefill_f32 = lm_attn_prefill_f32_avx512,
            .attn_decode_f32 = lm_attn_decode_f32_avx512,
            .attn_decode_f16 = lm_attn_decode_f16_avx512,
            .attn_decode_bf16 = lm_attn_decode_bf16_avx512,
            .kvq_decode = lm_kvq_decode_avx512,
            .mamba1_scan_f32 = lm_ssm_mamba1_scan_f32_avx512,
            .conv_causal_f32 = lm_conv_causal_f32_avx512,
            .scan_affine_f32 = lm_scan_affine_f32_avx512,
            .scan_affine_reduce_f32 = lm_scan_affine_reduce_f32_avx512,
            .linear_recurrent_f32 = lm_linear_recurrent_f32_avx512,
            .linear_chunked_f32 = lm_linear_chunked_f32_avx512,
            .delta_recurrent_f32 = lm_delta_recurrent_f32_avx512,
            .delta_chunked_f32 = lm_delta_chunked_f32_avx512,
            .gemm_acc_f32 = lm_gemm_acc_f32_avx512,
            .ssd_chunked_f32 = lm_ssd_chunked_f32_avx512,
            .ssd_step_f32 = lm_ssd_step_f32_avx512,
        },
#endif
#if LM_BUILD_NEON
    [LM_ISA_NEON] =
        {
            .isa = LM_ISA_NEON,
            .rowdot_f32 = lm_gemv_rowdot_f32_neon,
            .attn_prefill_f32 = lm_attn_prefill_f32_neon,
            .attn_decode_f32 = lm_attn_decode_f32_neon,
            .attn_decode_f16 = lm_attn_decode_f16_neon,
            .attn_decode_bf16 = lm_attn_decode_bf16_neon,
            .kvq_decode = lm_kvq_decode_neon,
            .mamba1_scan_f32 = lm_ssm_mamba1_scan_f32_neon,
            .conv_causal_f32 = lm_conv_causal_f32_neon,
            .scan_affine_f32 = lm_scan_affine_f32_neon,
            .scan_affine_reduce_f32 = lm_scan_affine_reduce_f32_neon,
            .linear_recurrent_f32 = lm_linear_recurrent_f32_neon,
            .linear_chunked_f32 = lm_linear_chunked_f32_neon,
            .delta_recurrent_f32 = lm_delta_recurrent_f32_neon,
            .delta_chunked_f32 = lm_delta_chunked_f32_neon,
            .gemm_acc_f32 = lm_gemm_acc_f32_neon,
            .ssd_chunked_f32 = lm_ssd_chunked_f32_neon,
            .ssd_step_f32 = lm_ssd_step_f32_neon,
        },
#endif
};

static bool compiled_in(lm_isa isa)
{
    switch (isa) {
    case LM_ISA_SCALAR: return true;
    case LM_ISA_AVX2:
    case LM_ISA_AVX512: return LM_BUILD_X86;
    case LM_ISA_NEON: return LM_BUILD_NEON;
    default: return false;
    }
}

static bool cpu_runs(lm_isa isa)
{
    const lm_cpu_features *f = lm_cpu();
    switch (isa) {
    case LM_ISA_SCALAR: return true;
    case LM_ISA_AVX2: return f->avx2 && f->fma && f->f16c && f->os_saves_ymm;
    case LM_ISA_AVX512:
        return f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq && f->os_saves_zmm;
    case LM_ISA_NEON: return f->neon;
    default: return false;
    }
}

static struct {
    lm_ops resolved[LM_ISA_COUNT];
    lm_isa active;
    char why[160];
} table;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void resolve(lm_isa isa)
{
    const lm_ops *own = &compiled[isa];
    const lm_ops *fallback = &compiled[LM_ISA_SCALAR];
    lm_ops *out = &table.resolved[isa];
    out->isa = isa;
#define LM_OPS_RESOLVE_FIELD(type, name) out->name = own->name ? own->name : fallback->name;
    LM_OPS_FIELDS(LM_OPS_RESOLVE_FIELD)
#undef LM_OPS_RESOLVE_FIELD
}

static lm_isa best_available(void)
{
    static const lm_isa preference[] = {LM_ISA_AVX512, LM_ISA_AVX2, LM_ISA_NEON};
    for (size_t i = 0; i < sizeof preference / sizeof preference[0]; i++)
        if (lm_isa_available(preference[i]))
            return preference[i];
    return LM_ISA_SCALAR;
}

static void choose_active(void)
{
    const char *forced = getenv("LONGMIX_ISA");
    lm_isa best = best_available();
    lm_isa wanted;
    if (forced != NULL && forced[0] != '\0') {
        if (lm_isa_parse(forced, &wanted, NULL) != LM_OK) {
            table.active = best;
            snprintf(table.why, sizeof table.why,
                     "LONGMIX_ISA=%s is not a path name; using the best available", forced);
        } else if (!lm_isa_available(wanted)) {
            table.active = best;
            snprintf(table.why, sizeof table.why,
                     "LONGMIX_ISA=%s is not available here; using the best available", forced);
        } else {
            table.active = wanted;
            snprintf(table.why, sizeof table.why, "forced by LONGMIX_ISA=%s", forced);
        }
        return;
    }
    table.active = best;
    snprintf(table.why, sizeof table.why, "%s",
             best == LM_ISA_SCALAR ? "no SIMD path compiled in or supported by this CPU"
                                   : "best path this build holds and this CPU and OS run");
}

static void init_table(void)
{
    for (int isa = 0; isa < LM_ISA_COUNT; isa++)
        if (compiled_in((lm_isa)isa))
            resolve((lm_isa)isa);
    choose_active();
}

const char *lm_isa_name(lm_isa isa)
{
    return (unsigned)isa < LM_ISA_COUNT ? isa_names[isa] : "unknown";
}

lm_status lm_isa_parse(const char *name, lm_isa *isa, lm_error *err)
{
    for (int i = 0; i < LM_ISA_COUNT; i++)
        if (name != NULL && strcmp(name, isa_names[i]) == 0) {
            *isa = (lm_isa)i;
            return LM_OK;
        }
    return lm_fail(err, LM_ERR_ARG, "unknown ISA '%s' (expected scalar, avx2, avx512 or neon)",
                   name ? name : "(null)");
}

bool lm_isa_available(lm_isa isa) { return compiled_in(isa) && cpu_runs(isa); }

lm_isa lm_isa_active(const char **why)
{
    pthread_once(&table_once, init_table);
    if (why != NULL)
        *why = table.why;
    return table.active;
}

lm_status lm_isa_force(lm_isa isa, lm_error *err)
{
    pthread_once(&table_once, init_table);
    if (!lm_isa_available(isa))
        return lm_fail(err, LM_ERR_UNSUPPORTED, "ISA path %s is not available on this machine",
                       lm_isa_name(isa));
    table.active = isa;
    snprintf(table.why, sizeof table.why, "forced to %s by the caller", lm_isa_name(isa));
    return LM_OK;
}

const lm_ops *lm_ops_for(lm_isa isa)
{
    pthread_once(&table_once, init_table);
    if (!compiled_in(isa))
        return NULL;
    return &table.resolved[isa];
}

const lm_ops *lm_ops_active(void) { return lm_ops_for(lm_isa_active(NULL)); }

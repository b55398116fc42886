/* The one dispatch table, generated from the kernel list (lm_kernels.h): `compiled` names
 * each path's own kernels (NULL where the list says a path has none); the first lookup
 * resolves every path once, filling a NULL slot from the path's parent, and picks the
 * initial path from LONGMIX_ISA or the CPU. This file and cpu.c hold the library's only
 * global state, written once under pthread_once and never again. */
#include "lm_ops.h"

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

#define LM_ISA_NAME(isa, parent, kind) #isa,
static const char *const isa_names[] = {LM_ISA_PATHS(LM_ISA_NAME)};
#undef LM_ISA_NAME
_Static_assert(sizeof isa_names / sizeof isa_names[0] == LM_ISA_COUNT,
               "LM_ISA_PATHS (lm_kernels.h) and lm_isa (lm_core.h) must list the same paths");

#define LM_ISA_PARENT(isa, parent, kind) LM_ISA_##parent,
static const lm_isa parents[LM_ISA_COUNT] = {LM_ISA_PATHS(LM_ISA_PARENT)};
#undef LM_ISA_PARENT

#define LM_ISA_DERIVED(isa, parent, kind) LM_KIND_IS_DERIVED_##kind,
#define LM_KIND_IS_DERIVED_base false
#define LM_KIND_IS_DERIVED_derived true
static const bool derived[LM_ISA_COUNT] = {LM_ISA_PATHS(LM_ISA_DERIVED)};
#undef LM_ISA_DERIVED

/* One table row: .name = lm_<name>_<isa> where the list's paths say that file defines it. */
#define LM_SLOT(isa, name, paths) .name = LM_PATH_##paths##_##isa(lm_##name##_##isa),
#define LM_SLOT_scalar(name, kernel, signature, family, paths) LM_SLOT(scalar, name, paths)
#define LM_SLOT_avx2(name, kernel, signature, family, paths) LM_SLOT(avx2, name, paths)
#define LM_SLOT_avx512(name, kernel, signature, family, paths) LM_SLOT(avx512, name, paths)
#define LM_SLOT_avx512vnni(name, kernel, signature, family, paths) LM_SLOT(avx512vnni, name, paths)
#define LM_SLOT_avx512bf16(name, kernel, signature, family, paths) LM_SLOT(avx512bf16, name, paths)
#define LM_SLOT_neon(name, kernel, signature, family, paths) LM_SLOT(neon, name, paths)
#define LM_ROW(ISA, path) [LM_ISA_##ISA] = {.isa = LM_ISA_##ISA, LM_KERNELS(LM_SLOT_##path)},

static const lm_ops compiled[LM_ISA_COUNT] = {
    LM_ROW(SCALAR, scalar)
#if LM_BUILD_X86
    LM_ROW(AVX2, avx2)
    LM_ROW(AVX512, avx512)
    LM_ROW(AVX512VNNI, avx512vnni)
    LM_ROW(AVX512BF16, avx512bf16)
#endif
#if LM_BUILD_NEON
    LM_ROW(NEON, neon)
#endif
};

static bool compiled_in(lm_isa isa)
{
    switch (isa) {
    case LM_ISA_SCALAR: return true;
    case LM_ISA_AVX2:
    case LM_ISA_AVX512:
    case LM_ISA_AVX512VNNI:
    case LM_ISA_AVX512BF16: return LM_BUILD_X86;
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
    case LM_ISA_AVX512VNNI: return cpu_runs(LM_ISA_AVX512) && f->avx512_vnni;
    /* the chain avx512bf16 -> avx512vnni: BF16 without VNNI (no such CPU is known) runs
     * the avx512 path */
    case LM_ISA_AVX512BF16: return cpu_runs(LM_ISA_AVX512VNNI) && f->avx512_bf16;
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

/* A path's own kernels, its parent's (already resolved: parents come first) elsewhere. */
static void resolve(lm_isa isa)
{
    const lm_ops *own = &compiled[isa];
    const lm_ops *parent = &table.resolved[parents[isa]];
    lm_ops *out = &table.resolved[isa];
    out->isa = isa;
#define LM_RESOLVE_SLOT(name, kernel, signature, family, paths)                              \
    out->name = own->name != NULL ? own->name : parent->name;
    LM_KERNELS(LM_RESOLVE_SLOT)
#undef LM_RESOLVE_SLOT
}

static lm_isa best_available(void)
{
    static const lm_isa preference[] = {LM_ISA_AVX512BF16, LM_ISA_AVX512VNNI, LM_ISA_AVX512,
                                        LM_ISA_AVX2, LM_ISA_NEON};
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
    return lm_fail(err, LM_ERR_ARG,
                   "unknown ISA '%s' (expected scalar, avx2, avx512, avx512vnni, avx512bf16 or "
                   "neon)",
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

const lm_ops *lm_ops_for(lm_isa isa)
{
    pthread_once(&table_once, init_table);
    if (!compiled_in(isa))
        return NULL;
    return &table.resolved[isa];
}

const lm_ops *lm_ops_active(void) { return lm_ops_for(lm_isa_active(NULL)); }

lm_isa lm_isa_parent(lm_isa isa)
{
    return (unsigned)isa < LM_ISA_COUNT ? parents[isa] : LM_ISA_SCALAR;
}

bool lm_isa_derived(lm_isa isa) { return (unsigned)isa < LM_ISA_COUNT && derived[isa]; }

bool lm_ops_same_kernel(const lm_ops *a, const lm_ops *b, const char *kernel)
{
    bool same = true;
#define LM_SAME_SLOT(name, word, signature, family, paths)                                   \
    if (strcmp(#word, kernel) == 0 && a->name != b->name)                                    \
        same = false;
    LM_KERNELS(LM_SAME_SLOT)
#undef LM_SAME_SLOT
    return same;
}

lm_status lm_ops_check(const lm_ops *ops, lm_error *err)
{
    if (ops == NULL)
        return lm_fail(err, LM_ERR_ARG,
                       "ops must be a dispatch table (lm_ops_for or lm_ops_active), got NULL");
    return LM_OK;
}

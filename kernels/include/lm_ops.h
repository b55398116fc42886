/* The one dispatch table: a function pointer per slot of the kernel list (lm_kernels.h),
 * one table per ISA path, filled once (kernels/core/dispatch.c). Every driver takes the
 * table it runs as `const lm_ops *ops`; nothing rewrites a table after start-up. */
#ifndef LONGMIX_OPS_H
#define LONGMIX_OPS_H

#include "lm_core.h"
#include "lm_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lm_ops {
    lm_isa isa;
#define LM_OPS_FIELD(name, kernel, signature, family, paths) signature *name;
    LM_KERNELS(LM_OPS_FIELD)
#undef LM_OPS_FIELD
} lm_ops;

/* The resolved table of one path (every slot set: a path's own kernel or its parent's),
 * or NULL when the path is not compiled into this build. */
const lm_ops *lm_ops_for(lm_isa isa);
/* The table of the initial path (lm_isa_active: LONGMIX_ISA or the best available). Never
 * NULL. Callers choose a table once and pass it down; drivers never look it up. */
const lm_ops *lm_ops_active(void);
/* The path a path falls back on for a slot it has no kernel of (LM_ISA_PATHS in
 * lm_kernels.h); the scalar path is its own parent. */
lm_isa lm_isa_parent(lm_isa isa);
/* True for a derived path (avx512vnni): its parent's vector width, a few kernels of its own. */
bool lm_isa_derived(lm_isa isa);
/* True when every slot the list gives to the word `kernel` holds the same function in a
 * and b (a derived path such as avx512vnni runs its parent's kernels for most words); true
 * also for a word with no slot of its own (a composite operator or a reference). */
bool lm_ops_same_kernel(const lm_ops *a, const lm_ops *b, const char *kernel);
/* What every driver checks first: LM_ERR_ARG "ops must be a dispatch table (lm_ops_for or
 * lm_ops_active), got NULL" when ops is NULL. */
lm_status lm_ops_check(const lm_ops *ops, lm_error *err);

#ifdef __cplusplus
}
#endif
#endif /* LONGMIX_OPS_H */

/* The one dispatch table: a function pointer per fast operator, one table per ISA.
 *
 * To add an operator: declare its function type and the per-ISA functions in the family
 * header, add one X(type, field) line to LM_OPS_FIELDS below, and name the functions in
 * kernels/core/dispatch.c. A path that leaves a field NULL falls back to the portable
 * scalar entry when the table is resolved, so every field of the resolved table is set. */
#ifndef LONGMIX_OPS_H
#define LONGMIX_OPS_H

#include "longmix.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Family headers that declare the operator types go here. */
#include "lm_ops_types.h"

/* X(function type, field name): every operator of the table, in one list. */
#define LM_OPS_FIELDS(X) LM_OPS_FIELDS_ATTENTION(X) LM_OPS_FIELDS_RECURRENT(X)

typedef struct lm_ops {
    lm_isa isa;
#define LM_OPS_DECLARE_FIELD(type, name) type name;
    LM_OPS_FIELDS(LM_OPS_DECLARE_FIELD)
#undef LM_OPS_DECLARE_FIELD
} lm_ops;

/* The resolved table of one path (scalar fallbacks filled in), or NULL when the path is
 * not compiled into this build. */
const lm_ops *lm_ops_for(lm_isa isa);
/* The resolved table of the active path (lm_isa_active). Never NULL. */
const lm_ops *lm_ops_active(void);

#ifdef __cplusplus
}
#endif
#endif /* LONGMIX_OPS_H */

/* A loaded plugin (kernels/include/longmix_plugin.h): its shared object, its name, and the
 * dispatch table its operators run through -- the scalar path's table with every slot the
 * plugin provides replaced by the plugin's function, so longmix's own drivers validate,
 * split the work and call it exactly as they call longmix's kernels. */
#ifndef LONGMIX_PLUGIN_LOADED_H
#define LONGMIX_PLUGIN_LOADED_H

#include "kernel_cases.h"
#include "longmix_plugin.h"

enum { LM_PLUGIN_NAME_MAX = 64, LM_PLUGIN_OP_MAX = 32 };

typedef struct lm_plugin {
    void *handle;                       /* dlopen handle */
    char name[LM_PLUGIN_NAME_MAX + 1];
    longmix_plugin_ops ops;             /* the plugin's operators (NULL: not provided) */
    lm_ops table;                       /* scalar table with the plugin's slots */
} lm_plugin;

/* Loads the shared object at `path` (a path with a '/' is used as is) and reads its entry
 * point. LM_ERR_IO "cannot load PATH: <dlerror>" (missing, not a shared object, unresolved
 * symbols), LM_ERR_SCHEMA for a missing entry point, an ABI version other than
 * LONGMIX_PLUGIN_ABI_VERSION, a bad name or no operator at all. Nothing stays loaded on
 * failure. */
lm_status lm_plugin_load(lm_plugin *plugin, const char *path, lm_error *err);
void lm_plugin_close(lm_plugin *plugin);

/* *out = *base with every slot the plugin provides replaced by its function, marked
 * scalar (isa LM_ISA_SCALAR: the drivers hand it every head_dim, as to the scalar kernels). */
void lm_plugin_table_on(const lm_plugin *plugin, const lm_ops *base, lm_ops *out);

/* The operators of the ABI, in LONGMIX_PLUGIN_OPS order (at most LM_PLUGIN_OP_MAX). */
size_t lm_plugin_op_count(void);
const char *lm_plugin_op_name(size_t op);
/* The kernel word (lm_kernels.h) of an operator: "attn_decode" for attn_decode_f16. */
const char *lm_plugin_op_kernel(size_t op);
bool lm_plugin_provides(const lm_plugin *plugin, size_t op);

/* The operator a contract case exercises: the slot <word>_<dtype>, or <word>, of the case's
 * kernel word, when that slot is an operator of the ABI. false for the float64 reference
 * cases (dtype f64) and for composite operators. */
bool lm_plugin_op_of_case(const lm_kcase *kcase, size_t *op);
/* The same for a sweep configuration: kernel word and compute dtype. */
bool lm_plugin_op_of_word(const char *word, const char *dtype, size_t *op);

#endif

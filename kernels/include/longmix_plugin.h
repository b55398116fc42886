/* longmix plugin ABI, version 1: how a shared object hands its own kernels to
 * `longmix verify --plugin` (checked against the float64 references at the kernel
 * contract's tolerances) and `longmix sweep --plugin` (measured beside longmix's own).
 *
 * A plugin exports one function, LONGMIX_PLUGIN_ENTRY, returning a pointer to a static
 * longmix_plugin: the ABI version it was built against, its name, and a table of operators
 * with NULL for every operator it does not implement (any subset). Each operator has the
 * signature, shapes, strides and work range of the dispatch-table slot of the same name
 * (lm_ops_types.h, and the family headers kernels/<family>/<family>.h for the argument
 * structs): longmix's own driver validates the inputs, splits the work over OpenMP threads
 * and calls the plugin's function on each range, exactly as it calls its own kernels. So a
 * plugin kernel may be called concurrently on disjoint ranges, must not allocate or start
 * threads of its own, and writes only its output. Unlike longmix's SIMD kernels, a plugin
 * kernel is handed every head_dim (no multiple-of-16 fallback).
 *
 * Build: cc -std=c17 -shared -fPIC my_plugin.c $(pkg-config --cflags longmix) -o my.so
 * (the plugin needs longmix's headers, not its library). docs/plugins.md has the walk-through;
 * examples/plugins/naive.c is a complete plugin in plain C loops. */
#ifndef LONGMIX_PLUGIN_H
#define LONGMIX_PLUGIN_H

#include "longmix.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever a field, an operator or a signature below changes. longmix refuses a
 * plugin whose abi_version differs from its own (exit 2, naming both versions). */
#define LONGMIX_PLUGIN_ABI_VERSION 1u

/* The one symbol longmix looks up (dlsym) in a plugin. */
#define LONGMIX_PLUGIN_ENTRY longmix_plugin_entry

/* The operators of ABI version 1: X(slot, signature). `slot` is the name of the
 * dispatch-table slot (kernels/include/lm_kernels.h) whose signature and semantics the
 * operator has, and the `op` of the check names `plugin:NAME/op`:
 *   attn_prefill_f32      causal (masked) GQA prefill, a block of query heads x query tiles
 *   attn_decode_f32/f16/bf16  decode partial (m, l, acc) of a GQA group over one KV head's
 *                         key range, K/V stored as f32 / IEEE f16 / bfloat16
 *   kvq_decode            decode partial over quantized K/V (int8, int4, KIVI codes)
 *   mamba1_scan_f32       Mamba-1 selective scan of one batch row, a channel range; the
 *                         decode step is the same call with length 1 and h0 == h_final
 *   ssd_chunked_f32       Mamba-2 SSD, one chunk block;  ssd_step_f32: one decode step
 *   linear_chunked_f32    linear attention, one head, chunked; linear_recurrent_f32
 *   delta_chunked_f32     (gated) delta rule, one head, chunked WY form; delta_recurrent_f32
 *   conv_causal_f32       causal depthwise convolution, one batch row, a channel range
 *   scan_affine_f32       h = a h + b over rows;   gemv_rowdot_f32: y = X w */
#define LONGMIX_PLUGIN_OPS(X)                                                             \
    X(gemv_rowdot_f32, lm_gemv_rowdot_fn)                                                 \
    X(attn_prefill_f32, lm_attn_prefill_fn)                                               \
    X(attn_decode_f32, lm_attn_decode_fn)                                                 \
    X(attn_decode_f16, lm_attn_decode_fn)                                                 \
    X(attn_decode_bf16, lm_attn_decode_fn)                                                \
    X(kvq_decode, lm_kvq_decode_fn)                                                       \
    X(mamba1_scan_f32, lm_mamba1_scan_fn)                                                 \
    X(conv_causal_f32, lm_conv_causal_fn)                                                 \
    X(scan_affine_f32, lm_scan_affine_fn)                                                 \
    X(linear_recurrent_f32, lm_linear_head_fn)                                            \
    X(linear_chunked_f32, lm_linear_head_fn)                                              \
    X(delta_recurrent_f32, lm_delta_head_fn)                                              \
    X(delta_chunked_f32, lm_delta_head_fn)                                                \
    X(ssd_chunked_f32, lm_ssd_chunked_fn)                                                 \
    X(ssd_step_f32, lm_ssd_step_fn)

/* The operators a plugin implements: one pointer per operator above, NULL when absent. */
typedef struct longmix_plugin_ops {
#define LONGMIX_PLUGIN_OP_FIELD(slot, signature) signature *slot;
    LONGMIX_PLUGIN_OPS(LONGMIX_PLUGIN_OP_FIELD)
#undef LONGMIX_PLUGIN_OP_FIELD
} longmix_plugin_ops;

/* What the entry point returns; abi_version comes first in every version, so longmix can
 * read it from a plugin of any version before trusting the rest. */
typedef struct longmix_plugin {
    uint32_t abi_version; /* LONGMIX_PLUGIN_ABI_VERSION of the header the plugin was built with */
    const char *name;     /* [A-Za-z0-9_.-]{1,64}: the NAME of plugin:NAME/op */
    longmix_plugin_ops ops;
} longmix_plugin;

/* The entry point: returns a pointer to storage that lives as long as the shared object
 * (a static const longmix_plugin). Called once, before any operator. */
typedef const longmix_plugin *longmix_plugin_entry_fn(void);
longmix_plugin_entry_fn LONGMIX_PLUGIN_ENTRY;

#ifdef __cplusplus
}
#endif
#endif /* LONGMIX_PLUGIN_H */

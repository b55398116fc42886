/* A correct plugin in plain C loops (naive_ops.h): decode attention over f32, f16 and bf16
 * K/V, the causal conv and the Mamba-1 scan (and so its decode step). Every other operator
 * of the ABI is left NULL, so `longmix verify --plugin` lists it as not provided. */
#include "naive_ops.h"

static const longmix_plugin naive = {
    .abi_version = LONGMIX_PLUGIN_ABI_VERSION,
    .name = "naive",
    .ops = {.attn_decode_f32 = naive_decode_f32,
            .attn_decode_f16 = naive_decode_f16,
            .attn_decode_bf16 = naive_decode_bf16,
            .conv_causal_f32 = naive_conv,
            .mamba1_scan_f32 = naive_mamba1},
};

const longmix_plugin *longmix_plugin_entry(void) { return &naive; }

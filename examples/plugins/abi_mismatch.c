/* Test plugin: built against an ABI version longmix does not speak (refused, exit 2). */
#include <longmix_plugin.h>

static const longmix_plugin future = {
    .abi_version = LONGMIX_PLUGIN_ABI_VERSION + 1,
    .name = "future",
    .ops = {.attn_decode_f32 = NULL},
};

const longmix_plugin *longmix_plugin_entry(void) { return &future; }

/* A plugin that is wrong by slightly more than the tolerance: the naive decode with every
 * output scaled by 1 + 2^-12 (about 2.4e-4 relative), the size of error a too-coarse
 * exponential or a float16 accumulator makes. longmix verify fails it on the statistics that
 * error moves past atol + rtol * scale. */
#include "naive_ops.h"

static void wrong_decode_f32(const float *q, const void *k, const void *v, size_t n, size_t d,
                             size_t group, float scale, float *m, float *l, float *acc,
                             float *workspace)
{
    naive_decode_f32(q, k, v, n, d, group, scale, m, l, acc, workspace);
    for (size_t i = 0; i < group * d; i++)
        acc[i] *= 1.0f + 0x1p-12f;
}

static const longmix_plugin wrong = {
    .abi_version = LONGMIX_PLUGIN_ABI_VERSION,
    .name = "wrong",
    .ops = {.attn_decode_f32 = wrong_decode_f32},
};

const longmix_plugin *longmix_plugin_entry(void) { return &wrong; }

/* A plugin that crashes and one that scribbles: its decode writes through a null pointer
 * (SIGSEGV), its causal conv is correct but also writes the float just past the end of its
 * output, which longmix finds in the guard bytes around the case's buffers. */
#include "naive_ops.h"

static void crash_decode_f32(const float *q, const void *k, const void *v, size_t n, size_t d,
                             size_t group, float scale, float *m, float *l, float *acc,
                             float *workspace)
{
    volatile uintptr_t nowhere = 0; /* an address no process maps */
    naive_decode_f32(q, k, v, n, d, group, scale, m, l, acc, workspace);
    *(volatile float *)nowhere = acc[0]; /* SIGSEGV */
}

static void overrun_conv(const lm_conv_causal_f32 *p, size_t bi, size_t d0, size_t d1)
{
    naive_conv(p, bi, d0, d1);
    const size_t B = p->batch, L = p->length, D = p->channels, K = p->width;
    if (bi + 1 == B && d1 == D) /* one past the last element of y, or of tail_out after it */
        *(p->tail_out != NULL ? p->tail_out + B * (K - 1) * D : p->y + B * L * D) = 1.0f;
}

static const longmix_plugin crash = {
    .abi_version = LONGMIX_PLUGIN_ABI_VERSION,
    .name = "crash",
    .ops = {.attn_decode_f32 = crash_decode_f32, .conv_causal_f32 = overrun_conv},
};

const longmix_plugin *longmix_plugin_entry(void) { return &crash; }

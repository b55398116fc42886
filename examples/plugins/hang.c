/* A plugin that never returns: its Mamba-1 scan spins forever. longmix verify kills each
 * case after --timeout seconds and records it as failed; the other cases still run. */
#include <longmix_plugin.h>

static void hang_mamba1(const lm_ssm_mamba1_f32 *p, size_t bi, size_t d0, size_t d1)
{
    (void)p, (void)bi, (void)d0, (void)d1;
    for (volatile int spin = 0;; spin++) {
    }
}

static const longmix_plugin hang = {
    .abi_version = LONGMIX_PLUGIN_ABI_VERSION,
    .name = "hang",
    .ops = {.mamba1_scan_f32 = hang_mamba1},
};

const longmix_plugin *longmix_plugin_entry(void) { return &hang; }

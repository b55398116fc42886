/* The registry of kernel-contract runners: one table per family, looked up by the case's
 * "kernel" name. A family adds itself with ONE line in `families` below (and writes its
 * runners in harness/kcases_<family>.c, declared in kernel_cases.h). */
#include "kernel_cases.h"

#include <string.h>

typedef const lm_kernel_entry *(*family_table_fn)(size_t *count);

static const family_table_fn families[] = {
    lm_kcases_core,   /* harness/kcases_core.c: gemv_rowdot */
    lm_kcases_lesson, /* harness/kcases_lesson.c: the lesson's float64 references (f64) */
    lm_kcases_attention, /* harness/kcases_attention.c: attention_*, window, kvquant, latent_mla */
    lm_kcases_recurrent, /* harness/kcases_recurrent.c: ssm_mamba1_scan, conv_causal, ... */
};

void lm_kernel_each(void (*visit)(const lm_kernel_entry *entry, void *context), void *context)
{
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
        size_t count = 0;
        const lm_kernel_entry *entries = families[f](&count);
        for (size_t i = 0; i < count; i++)
            visit(&entries[i], context);
    }
}

const lm_kernel_entry *lm_kernel_find(const char *name)
{
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
        size_t count = 0;
        const lm_kernel_entry *entries = families[f](&count);
        for (size_t i = 0; i < count; i++)
            if (strcmp(entries[i].name, name) == 0)
                return &entries[i];
    }
    return NULL;
}

/* 64-byte aligned buffers: one cache line, one AVX-512 register. */
#include "longmix.h"

#include <stdlib.h>
#include <string.h>

enum { LM_ALIGNMENT = 64 };

void *lm_alloc(size_t bytes)
{
    size_t rounded = (bytes + LM_ALIGNMENT - 1) / LM_ALIGNMENT * LM_ALIGNMENT;
    if (rounded < bytes)
        return NULL; /* overflow */
    if (rounded == 0)
        rounded = LM_ALIGNMENT;
    void *pointer = aligned_alloc(LM_ALIGNMENT, rounded);
    if (pointer != NULL)
        memset(pointer, 0, rounded);
    return pointer;
}

void lm_free(void *pointer) { free(pointer); }

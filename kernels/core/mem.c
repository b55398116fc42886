/* 64-byte aligned buffers: one cache line, one AVX-512 register. Large buffers (KV caches,
 * activations of long sequences) are aligned to 2 MiB and advised as transparent huge
 * pages where the OS offers them: a streaming kernel then takes one TLB miss per 2 MiB
 * instead of one per 4 KiB page (strided scans touch a new page on every row). */
#define _DEFAULT_SOURCE /* madvise */
#include "lm_core.h"

#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

enum { LM_ALIGNMENT = 64 };
#define LM_HUGE_PAGE ((size_t)2 << 20)

void *lm_alloc(size_t bytes)
{
    const bool huge = bytes >= 2 * LM_HUGE_PAGE;
    const size_t align = huge ? LM_HUGE_PAGE : LM_ALIGNMENT;
    size_t rounded = (bytes + align - 1) / align * align;
    if (rounded < bytes)
        return NULL; /* overflow */
    if (rounded == 0)
        rounded = LM_ALIGNMENT;
    void *pointer = aligned_alloc(align, rounded);
    if (pointer == NULL)
        return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (huge)
        (void)madvise(pointer, rounded, MADV_HUGEPAGE); /* advice only: failure is harmless */
#endif
    memset(pointer, 0, rounded);
    return pointer;
}

void lm_free(void *pointer) { free(pointer); }

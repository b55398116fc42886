/* CPU feature detection: cpuid *and* xgetbv on x86-64 (an instruction set is usable
 * only when the OS saves its registers), the Advanced SIMD baseline on AArch64. Read once. */
#include "lm_core.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/* XCR0 bits: 1 SSE, 2 AVX (ymm upper halves), 5-7 opmask + zmm state. */
enum { XCR0_YMM = 0x6, XCR0_ZMM = 0xE6 };

static uint64_t read_xcr0(void)
{
    uint32_t low, high;
    __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    return ((uint64_t)high << 32) | low;
}

static void copy_registers(char *out, unsigned a, unsigned b, unsigned c, unsigned d)
{
    memcpy(out, &a, 4);
    memcpy(out + 4, &b, 4);
    memcpy(out + 8, &c, 4);
    memcpy(out + 12, &d, 4);
}

static void read_brand(lm_cpu_features *f)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000004u)
        return;
    for (unsigned leaf = 0; leaf < 3; leaf++) {
        __get_cpuid(0x80000002u + leaf, &a, &b, &c, &d);
        copy_registers(f->brand + 16 * leaf, a, b, c, d);
    }
    f->brand[48] = '\0';
}

static void detect(lm_cpu_features *f)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return;
    unsigned max_leaf = a;
    char vendor[16] = {0};
    copy_registers(vendor, b, d, c, 0);
    memcpy(f->vendor, vendor, 12);
    read_brand(f);

    __get_cpuid(1, &a, &b, &c, &d);
    bool osxsave = (c >> 27) & 1u;
    f->fma = (c >> 12) & 1u;
    f->f16c = (c >> 29) & 1u;
    uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    f->os_saves_ymm = (xcr0 & XCR0_YMM) == XCR0_YMM;
    f->os_saves_zmm = (xcr0 & XCR0_ZMM) == XCR0_ZMM;
    if (max_leaf < 7)
        return;
    __cpuid_count(7, 0, a, b, c, d);
    f->avx2 = (b >> 5) & 1u;
    f->avx512f = (b >> 16) & 1u;
    f->avx512dq = (b >> 17) & 1u;
    f->avx512bw = (b >> 30) & 1u;
    f->avx512vl = (b >> 31) & 1u;
    f->avx512_fp16 = (d >> 23) & 1u;
    f->avx512_vnni = (c >> 11) & 1u;
    unsigned subleaves = a;
    if (subleaves >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        f->avx512_bf16 = (a >> 5) & 1u;
    }
}
#elif defined(__aarch64__)
static void detect(lm_cpu_features *f)
{
    f->neon = true; /* Advanced SIMD is part of the AArch64 baseline */
    strcpy(f->vendor, "arm");
    strcpy(f->brand, "AArch64");
}
#else
static void detect(lm_cpu_features *f) { strcpy(f->brand, "unknown"); }
#endif

static lm_cpu_features features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

static void detect_once(void) { detect(&features); }

const lm_cpu_features *lm_cpu(void)
{
    pthread_once(&features_once, detect_once);
    return &features;
}

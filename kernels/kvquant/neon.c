/* Quantized-cache decode, neon path: kvquant_body.h over the neon SIMD mapping layer. */
#if !defined(__ARM_NEON)
#error "kernels/kvquant/neon.c needs an AArch64 target with Advanced SIMD"
#endif
#include "kvquant.h"

#include "../attention/attention.h"
#include "../simd/neon.h"

/* word layer: 4 32-bit little-endian words; field = float((x >> shift) & mask) */
typedef uint32x4_t kq_vi;
#define KQ_LOADW(p) vreinterpretq_u32_u8(vld1q_u8(p))
#define KQ_FIELD(x, shift, mask)                                                               \
    vcvtq_f32_u32(vandq_u32(vshlq_u32(x, vdupq_n_s32(-(int)(shift))), vdupq_n_u32(mask)))
#define KQ_ROUND(x) vrndnq_f32(x)

#include "kvquant_body.h"

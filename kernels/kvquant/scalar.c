/* Quantized-cache decode, scalar path: kvquant_body.h over the scalar SIMD mapping layer. */
#include "kvquant.h"

#include "../attention/attention.h"
#include "../simd/scalar.h"

#include <string.h>

/* word layer: one 32-bit little-endian word per lane */
typedef uint32_t kq_vi;
static inline uint32_t kq_loadw_scalar(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
#define KQ_LOADW(p) kq_loadw_scalar(p)
#define KQ_FIELD(x, shift, mask) ((float)(((x) >> (shift)) & (mask)))
#define KQ_ROUND(x) nearbyintf(x)

#include "kvquant_body.h"

/* Storage types of a KV cache: IEEE binary16 and bfloat16, rounded to nearest even, so a
 * cache written here holds exactly what F16C (vcvtps2ph, imm 0) or the hardware would. */
#include "attention.h"

#include <math.h>
#include <string.h>

static uint32_t float_bits(float x)
{
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

uint16_t lm_f16_from_f32(float x)
{
    const uint32_t b = float_bits(x);
    const uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
    const uint32_t mag = b & 0x7fffffffu;
    if (mag > 0x7f800000u)
        return sign | 0x7e00u; /* quiet NaN */
    if (mag >= 0x477ff000u)    /* >= 65520 rounds past the largest half, 65504 */
        return sign | 0x7c00u;
    if (mag < 0x38800000u) { /* below 2^-14: a subnormal half, units of 2^-24 */
        float units = rintf(fabsf(x) * 16777216.0f); /* exact scaling; rint rounds to even */
        return sign | (uint16_t)units;
    }
    uint32_t half = ((mag >> 23) - 112u) << 10 | ((mag >> 13) & 0x3ffu); /* rebias 127 -> 15 */
    uint32_t rest = mag & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u)))
        half++; /* a carry into the exponent is the right answer */
    return sign | (uint16_t)half;
}

float lm_f32_from_f16(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
    uint32_t bits;
    if (exponent == 0) {
        float value = (float)mantissa * 5.9604644775390625e-8f; /* mantissa * 2^-24, exact */
        bits = float_bits(value) | sign;
    } else if (exponent == 31) {
        bits = sign | 0x7f800000u | (mantissa << 13);
    } else {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    }
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

uint16_t lm_bf16_from_f32(float x)
{
    const uint32_t b = float_bits(x);
    if ((b & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((b >> 16) | 0x40u); /* keep NaN a quiet NaN */
    return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

size_t lm_kv_dtype_size(lm_kv_dtype dtype) { return dtype == LM_KV_F32 ? 4 : 2; }

lm_status lm_kv_dtype_parse(const char *name, lm_kv_dtype *dtype, lm_error *err)
{
    static const char *const names[LM_KV_DTYPE_COUNT] = {"f32", "f16", "bf16"};
    for (int t = 0; t < LM_KV_DTYPE_COUNT; t++)
        if (name != NULL && strcmp(name, names[t]) == 0) {
            *dtype = (lm_kv_dtype)t;
            return LM_OK;
        }
    return lm_fail(err, LM_ERR_ARG, "dtype '%s' must be f32, f16 or bf16", name ? name : "(null)");
}

void lm_kv_store(lm_kv_dtype dtype, const float *src, void *dst, size_t count)
{
    if (dtype == LM_KV_F32) {
        memcpy(dst, src, count * sizeof *src);
        return;
    }
    uint16_t *out = dst;
    for (size_t i = 0; i < count; i++)
        out[i] = dtype == LM_KV_F16 ? lm_f16_from_f32(src[i]) : lm_bf16_from_f32(src[i]);
}

void lm_kv_load(lm_kv_dtype dtype, const void *src, float *dst, size_t count)
{
    if (dtype == LM_KV_F32) {
        memcpy(dst, src, count * sizeof *dst);
        return;
    }
    const uint16_t *in = src;
    for (size_t i = 0; i < count; i++)
        dst[i] = dtype == LM_KV_F16 ? lm_f32_from_f16(in[i]) : lm_f32_from_bf16(in[i]);
}

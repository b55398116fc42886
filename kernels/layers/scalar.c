/* Portable float32 dense kernels: y[b, r] = sum_c W[r, c] x[b, c], four partial sums per
 * sequence so the compiler can pipeline. */
#include "layers.h"

#include <string.h>

static inline float bf16_to_f32(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16; /* bf16 is the high half of a float32 */
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

#define DENSE_ROWS_SCALAR(name, type, load, row_scale)                                         \
    void name(const void *w, const float *scale, const float *x, size_t nb, size_t cols,       \
              size_t r0, size_t r1, float *y, size_t ldy)                                      \
    {                                                                                          \
        const type *wt = (const type *)w; /* {rows, cols} */                                   \
        (void)scale;                                                                           \
        for (size_t r = r0; r < r1; r++) {                                                     \
            const type *row = wt + r * cols;                                                   \
            for (size_t b = 0; b < nb; b++) {                                                  \
                const float *xb = x + b * cols; /* {cols} */                                   \
                float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;                              \
                size_t c = 0;                                                                  \
                for (; c + 4 <= cols; c += 4) {                                                \
                    s0 += load(row[c]) * xb[c];                                                \
                    s1 += load(row[c + 1]) * xb[c + 1];                                        \
                    s2 += load(row[c + 2]) * xb[c + 2];                                        \
                    s3 += load(row[c + 3]) * xb[c + 3];                                        \
                }                                                                              \
                for (; c < cols; c++)                                                          \
                    s0 += load(row[c]) * xb[c];                                                \
                y[b * ldy + r] = ((s0 + s1) + (s2 + s3)) * (row_scale);                        \
            }                                                                                  \
        }                                                                                      \
    }

#define LOAD_F32(v) (v)
#define LOAD_BF16(v) bf16_to_f32(v)
#define LOAD_INT8(v) ((float)(v))

DENSE_ROWS_SCALAR(lm_dense_rows_f32_scalar, float, LOAD_F32, 1.0f)
DENSE_ROWS_SCALAR(lm_dense_rows_bf16_scalar, uint16_t, LOAD_BF16, 1.0f)
DENSE_ROWS_SCALAR(lm_dense_rows_int8_scalar, int8_t, LOAD_INT8, scale[r])

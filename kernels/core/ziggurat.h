/* NumPy's float64 ziggurat for the standard normal: 256 layers, data generated from
 * tests/fixtures/numpy-ziggurat-double.json into ziggurat_tables.c by
 * scripts/gen_ziggurat_tables.py (exact bit patterns; never recomputed). */
#ifndef LONGMIX_ZIGGURAT_H
#define LONGMIX_ZIGGURAT_H

#include <stdint.h>

enum { LM_ZIGGURAT_LAYERS = 256 };

/* Layer i accepts a 52-bit magnitude m at once when m < ki[i]; the sample is m * wi[i].
 * fi[i] is the normal density exp(-x_i^2 / 2) at the layer's edge, for the wedge test. */
extern const uint64_t lm_ziggurat_normal_ki[LM_ZIGGURAT_LAYERS];
extern const double lm_ziggurat_normal_wi[LM_ZIGGURAT_LAYERS];
extern const double lm_ziggurat_normal_fi[LM_ZIGGURAT_LAYERS];
/* Start r of the tail beyond the base layer (3.654152885361009) and its reciprocal. */
extern const double lm_ziggurat_normal_r;
extern const double lm_ziggurat_normal_inv_r;

#endif

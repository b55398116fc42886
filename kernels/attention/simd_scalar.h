/* SIMD mapping layer for scalar (see kernel_body.h for the list of names): shared by the
 * attention and kvquant kernels of this path. Include only from scalar.c files. */
#ifndef LONGMIX_SIMD_SCALAR_H
#define LONGMIX_SIMD_SCALAR_H


#include <math.h>

#define LM_ISA_SUFFIX scalar
typedef float vf;
#define VW 1
#define V_ZERO() 0.0f
#define V_SET1(x) (x)
#define V_LOAD(p) (*(p))
#define V_STORE(p, x) (*(p) = (x))
#define V_BCAST(p) (*(p))
#define V_FMA(a, b, c) ((a) * (b) + (c))
#define V_MUL(a, b) ((a) * (b))
#define V_ADD(a, b) ((a) + (b))
#define V_SUB(a, b) ((a) - (b))
#define V_MAX(a, b) fmaxf(a, b)
#define V_HSUM(x) (x)
#define V_HMAX(x) (x)
#define V_EXP(x) expf(x)
#define V_LOAD_F16(p) lm_f32_from_f16(*(p))
#define V_LOAD_BF16(p) lm_f32_from_bf16(*(p))
#define PF_RK 4
#define PF_NV 4
#define PV_R 4
#define PV_CV 4
#define DEC_GB 4
#define DEC_CV 4

/* codes: element c of a row of unsigned codes at `row` (c a multiple of VW) */
#define V_LOAD_U8(row, c) ((float)(row)[c])
#define V_LOAD_U4(row, c) ((float)(((row)[(c) >> 1] >> (((c) & 1u) * 4)) & 15u))
#define V_LOAD_U2(row, c) ((float)(((row)[(c) >> 2] >> (((c) & 3u) * 2)) & 3u))

#endif

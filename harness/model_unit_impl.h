/* The layout of a unit (model_unit.h), shared by its builder (model_unit.c) and its step
 * (model_step.c); nothing else includes it. */
#ifndef LONGMIX_MODEL_UNIT_IMPL_H
#define LONGMIX_MODEL_UNIT_IMPL_H

#include "model_unit.h"
#include "../kernels/gemm/gemm.h"

#include <omp.h>
#include <string.h>

#define UNIT_DENSE_MAX 8
#define UNIT_BUF_MAX 10

struct lm_unit {
    lm_unit_config cfg;
    size_t batch, held;             /* sequences; tokens each cache holds (prefill: prompt) */
    size_t rows;                    /* rows of the activations: batch, or batch x prompt */
    lm_dense dense[UNIT_DENSE_MAX]; /* projections, in the order the step uses them */
    size_t dense_count;
    lm_dense *experts;              /* MoE: {reached experts x 3}: gate, up, down */
    size_t expert_count, per_expert;
    lm_gemm *gemm[UNIT_DENSE_MAX];  /* prefill: dense[i] as a GEMM over `rows` rows */
    lm_gemm **expert_gemm;          /* prefill MoE: {reached x 3} over per_expert rows */
    double gemm_s, gemm_flops;      /* prefill: the GEMMs' time and flops since taken */
    float *buf[UNIT_BUF_MAX];       /* activations, each {batch, width} (sizes in the builder) */
    void *k, *v;                    /* dense KV {batch, kv_heads, held, head_dim} */
    size_t *lengths;                /* {batch} */
    lm_kvq_cache *kvq;              /* {batch} quantized caches */
    float *ckv, *w_uk, *w_uv;       /* MLA: {batch, held, latent + rope}; absorbed weights */
    float *a, *bias, *skip, *conv_w, *tail, *state; /* SSM / delta parameters and state */
    lm_ssm_mamba1_f32 m1;           /* Mamba-1 step, checked once */
};

/* Row helpers of the step and the prefill. dst {rows, w} = columns [c0, c0 + w) of
 * src {rows, ld}. */
static inline void unit_take_cols(const float *src, size_t ld, size_t c0, size_t w, size_t rows,
                                  float *dst)
{
    for (size_t r = 0; r < rows; r++)
        memcpy(dst + r * w, src + r * ld + c0, w * sizeof(float));
}

/* x {count} += y {count} (the residual add). */
static inline void unit_add_into(float *x, const float *y, size_t count)
{
    for (size_t i = 0; i < count; i++)
        x[i] += y[i];
}

/* Seconds since *t, and *t moved to now (a component's time). */
static inline double unit_lap(double *t)
{
    double now = omp_get_wtime(), d = now - *t;
    *t = now;
    return d;
}

/* The prefill of a unit (model_prefill.c), called by lm_unit_step when cfg.prompt > 0. */
lm_status lm_unit_prefill(lm_unit *u, float *x, double seconds[LM_COMP_COUNT], lm_error *err);

#endif

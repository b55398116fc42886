/* The GEMM of whole-model prefill projections: C {m, n} = A {m, k} W^T with W {n, k}
 * row-major (as lm_dense stores a projection), over oneDNN's matmul (docs/dependencies.md
 * says why oneDNN and gives the figures). A is float32; W is float32 or bf16 (bf16: A is
 * rounded to bf16 on each call and the products are summed in float32); C is float32.
 *
 * One lm_gemm is one shape: the matmul primitive is created once, and W is copied once,
 * at creation, into the layout that primitive asks for (oneDNN's blocked layout; with
 * LM_GEMM_PLAIN_WEIGHTS the plain one, kept only to measure what the blocking is worth).
 * The caller may free W after lm_gemm_create. A run uses omp_get_max_threads() threads
 * of the calling thread (oneDNN's Debian build runs on libgomp, gcc's OpenMP runtime):
 * call it outside a parallel region. Library code: errors are values. */
#ifndef LONGMIX_GEMM_H
#define LONGMIX_GEMM_H

#include "lm_core.h"
#include "../layers/layers.h"

typedef struct lm_gemm lm_gemm;

/* False in a build without oneDNN (the arm64 cross build), where lm_gemm_create says
 * LM_ERR_UNSUPPORTED. */
bool lm_gemm_available(void);

enum {
    LM_GEMM_PLAIN_WEIGHTS = 1u /* keep W in its plain {n, k} layout (measurement only) */
};

/* Builds the product for {m, n, k}: LM_ERR_SHAPE for a zero size or one past
 * oneDNN's int64 dims, LM_ERR_ARG for NULL w or out, LM_ERR_UNSUPPORTED for int8 weights
 * (not wired) or a build without oneDNN, LM_ERR_NOMEM; oneDNN's own failures map to
 * LM_ERR_UNSUPPORTED (unimplemented) or LM_ERR_NOMEM, naming oneDNN's status. */
lm_status lm_gemm_create(lm_gemm **out, size_t m, size_t n, size_t k, lm_weight_dtype dtype,
                         const void *w, unsigned flags, lm_error *err);
void lm_gemm_free(lm_gemm *g);

/* c {m, n} = a {m, k} W^T, both row-major and dense. LM_ERR_ARG for a NULL pointer. */
lm_status lm_gemm_run(lm_gemm *g, const float *a, float *c, lm_error *err);

/* oneDNN's name of the kernel it picked ("brg:avx512_core_bf16", ...). */
const char *lm_gemm_impl(const lm_gemm *g);
/* Bytes of the weights as the primitive holds them (blocked layouts pad). */
size_t lm_gemm_weight_bytes(const lm_gemm *g);
/* Bytes the unit allocates besides its weights (the bf16 copy of A, oneDNN's scratchpad). */
size_t lm_gemm_work_bytes(const lm_gemm *g);
/* The bytes lm_gemm_create would allocate for the shape, without oneDNN's padding: an
 * estimate for memory checks before creating. */
size_t lm_gemm_bytes_estimate(size_t m, size_t n, size_t k, lm_weight_dtype dtype);

#endif

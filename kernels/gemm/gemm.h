/* The GEMM of whole-model prefill projections: C {m, n} = A {m, k} W^T with W {n, k}
 * row-major (as lm_dense stores a projection), over oneDNN's matmul (docs/dependencies.md
 * says why oneDNN and gives the figures). A is float32; W is float32, bf16 or int8; C is
 * float32. bf16: A is rounded to bf16 on each call and the products are summed in float32.
 * int8 (W[j, :] = scale[j] code[j, :], lm_dense's layout): each row i of A is quantized on
 * each call to s8 codes with its own scale sa[i] (lm_gemm_quantize_rows_s8), oneDNN's s8 x
 * s8 matmul sums the code products exactly in int32 and applies scale[j], and a pass after
 * it multiplies row i by sa[i]. Against the unquantized A the error of C[i, j] is then at
 * most sa[i] / 2 (1 + 2^-16) sum_k |W[j, k]| (the rounding of A) plus three float32
 * roundings of C; against the quantized A only those roundings.
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

/* The longest int8 row: 2^17 x 127 x 127 < 2^31, so the int32 sums cannot overflow. */
#define LM_GEMM_INT8_K_MAX 131072

/* Builds the product for {m, n, k}; w {n, k} of dtype, scale {n} for int8 weights (W's
 * row scales; ignored otherwise, may be NULL). LM_ERR_SHAPE for a zero size, one past 2^31
 * or an int8 k past LM_GEMM_INT8_K_MAX, LM_ERR_ARG for NULL w, out or int8 scale or an
 * unknown dtype, LM_ERR_UNSUPPORTED in a build without oneDNN, LM_ERR_NOMEM; oneDNN's own
 * failures map to LM_ERR_UNSUPPORTED (unimplemented) or LM_ERR_NOMEM, naming oneDNN's
 * status. The caller may free w and scale afterwards. */
lm_status lm_gemm_create(lm_gemm **out, size_t m, size_t n, size_t k, lm_weight_dtype dtype,
                         const void *w, const float *scale, unsigned flags, lm_error *err);
void lm_gemm_free(lm_gemm *g);

/* c {m, n} = a {m, k} W^T, both row-major and dense. LM_ERR_ARG for a NULL pointer. */
lm_status lm_gemm_run(lm_gemm *g, const float *a, float *c, lm_error *err);

/* oneDNN's name of the kernel it picked ("brg:avx512_core_bf16", ...). */
const char *lm_gemm_impl(const lm_gemm *g);
/* Bytes of the weights as the primitive holds them (blocked layouts pad). */
size_t lm_gemm_weight_bytes(const lm_gemm *g);
/* Bytes the unit allocates besides its weights (the bf16 or s8 copy of A and A's row
 * scales, oneDNN's scratchpad). */
size_t lm_gemm_work_bytes(const lm_gemm *g);
/* The bytes lm_gemm_create would allocate for the shape, without oneDNN's padding: an
 * estimate for memory checks before creating. */
size_t lm_gemm_bytes_estimate(size_t m, size_t n, size_t k, lm_weight_dtype dtype);

/* The int8 path's quantizer of A, a {m, k} -> codes q {m, k} and row scales scale {m}:
 * scale[i] = max_l |a[i, l]| / 127, q[i, l] = the float32 quotient a[i, l] / scale[i]
 * rounded to the nearest integer (ties to even), so |q| <= 127 and
 * |a - scale q| <= scale (1/2 + 2^-17). A zero row gets scale 0 and codes 0. a is trusted
 * finite (the runner's activations). Rows split over omp_get_max_threads() threads when
 * m k >= 2^16: call it outside a parallel region. */
void lm_gemm_quantize_rows_s8(const float *a, size_t m, size_t k, int8_t *q, float *scale);

#endif

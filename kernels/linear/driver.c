/* Operator driver of multi-head linear attention: validate, one workspace per thread,
 * heads split over OpenMP threads. */
#include "linear.h"
#include "lm_ops.h"

#include <math.h>
#include <omp.h>

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

size_t lm_linear_chunk_work_floats_f32(const lm_linear_f32 *p, size_t chunk)
{
    const size_t dk = p->d_key, dv = p->d_value;
    const size_t C = chunk < p->length ? chunk : p->length;
    /* S, z, fq, fk, kt, A, ratio, cum, cl, den, lg, seg, bq (linear_body.h); also covers
     * the recurrent kernel's S, z, fq, fk. */
    return round16(dk * dv) + 3 * round16(dk) + 3 * round16(C * dk) + round16(dk * C) +
           round16(C * C) + 5 * round16(C) + 2 * round16(dk);
}

/* Floats of the bfloat16 pair layouts of kernels/linear/avx512bf16.c at chunk C (d_key even
 * there), in its order: S {dk, dv}, z {dk}, fq, fk {C, dk} float32; qp, kb {C, dk} bfloat16;
 * kp2 {dk / 2, Cp} words; A {C, Cp}; ap {C, Cp} bfloat16; s2 {dk / 2, dv}, vp2 {Cp / 2, dv},
 * kt2 {dk, Cp / 2} words; lg, seg, ratio, bq, cl, den {Cp}; Cp = C rounded up to 16. */
size_t lm_linear_bf16_pair_floats(size_t dk, size_t dv, size_t C)
{
    const size_t cp = round16(C);
    return round16(dk * dv) + round16(dk) + 2 * round16(C * dk) + 2 * round16((C * dk + 1) / 2) +
           round16(dk / 2 * cp) + round16(C * cp) + round16(C * cp / 2) +
           round16(dk / 2 * dv) + round16(cp / 2 * dv) + round16(dk * cp / 2) + 6 * cp;
}

size_t lm_linear_chunk_work_floats(const lm_linear_f32 *p, size_t chunk)
{
    const size_t f32 = lm_linear_chunk_work_floats_f32(p, chunk);
    if (p->dtype != LM_KV_BF16)
        return f32;
    const size_t dk = p->d_key, dv = p->d_value;
    const size_t C = chunk < p->length ? chunk : p->length;
    /* widened: the f32 workspace, then q, k {C, dk}, v {C, dv}, S {dk, dv}, z {dk}
     * (widen_bf16.h); or the pair layouts */
    const size_t widened = f32 + 2 * round16(C * dk) + round16(C * dv) + round16(dk * dv) +
                           round16(dk);
    const size_t pairs = lm_linear_bf16_pair_floats(dk, dv, C);
    return widened > pairs ? widened : pairs;
}

/* True when no bfloat16 x[i] is NaN or +-inf: (x & 0x7f80) + 0x0080 reaches bit 15 exactly
 * when the exponent bits are all ones, so the OR of those sums over the run has bit 15 set
 * exactly when some x is not finite (a loop the compiler vectorizes). */
static bool all_finite_bf16_run(const uint16_t *x, size_t count)
{
    uint16_t bad = 0; /* 16-bit lanes: no widening in the vector loop */
#pragma omp simd reduction(| : bad)
    for (size_t i = 0; i < count; i++)
        bad |= (uint16_t)((x[i] & 0x7f80u) + 0x0080u);
    return (bad & 0x8000u) == 0;
}

/* all_finite_bf16_run over OpenMP threads in runs of 2^17. */
static bool all_finite_bf16(const uint16_t *x, size_t count)
{
    enum { RUN = 1 << 17 };
    const long runs = (long)((count + RUN - 1) / RUN);
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (runs > 4)
    for (long r = 0; r < runs; r++) {
        const size_t begin = (size_t)r * RUN;
        bad |= !all_finite_bf16_run(x + begin, count - begin < RUN ? count - begin : RUN);
    }
    return bad == 0;
}

/* The inputs of the dtype: f32 (q, k, v given) or bf16 (q16, k16, v16 given and finite;
 * chunked only). */
static lm_status check_inputs(const lm_linear_f32 *p, bool chunked, lm_error *err)
{
    if (p->dtype != LM_KV_F32 && p->dtype != LM_KV_BF16)
        return lm_fail(err, LM_ERR_ARG, "linear attention dtype must be f32 or bf16");
    if (p->y == NULL)
        return lm_fail(err, LM_ERR_SHAPE, "q, k, v and y must be given");
    if (p->dtype == LM_KV_F32)
        return p->q == NULL || p->k == NULL || p->v == NULL
                   ? lm_fail(err, LM_ERR_SHAPE, "q, k, v and y must be given")
                   : LM_OK;
    if (!chunked)
        return lm_fail(err, LM_ERR_ARG, "bf16 linear attention is chunked only (the "
                       "recurrent form takes f32 q, k, v)");
    if (p->q16 == NULL || p->k16 == NULL || p->v16 == NULL)
        return lm_fail(err, LM_ERR_SHAPE, "q16, k16, v16 (dtype bf16) and y must be given");
    const size_t nk = p->heads * p->length * p->d_key, nv = p->heads * p->length * p->d_value;
    const char *bad = !all_finite_bf16(p->q16, nk)   ? "q"
                      : !all_finite_bf16(p->k16, nk) ? "k"
                      : !all_finite_bf16(p->v16, nv) ? "v"
                                                     : NULL;
    if (bad != NULL)
        return lm_fail(err, LM_ERR_NONFINITE, "%s must contain only finite values", bad);
    return LM_OK;
}

lm_status lm_linear_attention_f32(const lm_linear_f32 *p, bool chunked, size_t chunk,
                                  const lm_ops *ops, lm_error *err)
{
    lm_status ops_status = lm_ops_check(ops, err);
    if (ops_status != LM_OK)
        return ops_status;
    if (p == NULL)
        return lm_fail(err, LM_ERR_ARG, "p must not be NULL");
    const size_t H = p->heads, L = p->length, dk = p->d_key;
    if (H == 0 || L == 0 || dk == 0 || p->d_value == 0)
        return lm_fail(err, LM_ERR_SHAPE, "heads, length, d_key and d_value must be positive");
    lm_status input_status = check_inputs(p, chunked, err);
    if (input_status != LM_OK)
        return input_status;
    if (p->gate_kind != LM_LINEAR_GATE_NONE && p->gate == NULL &&
        !(p->gate_kind == LM_LINEAR_GATE_SCALAR && p->log_gate != NULL))
        return lm_fail(err, LM_ERR_SHAPE, "gate must be given for a gated form");
    if (p->normalize && p->feature != LM_LINEAR_ELU1)
        return lm_fail(err, LM_ERR_ARG, "normalize needs feature elu1 (a positive feature "
                       "map keeps the denominator positive)");
    if (chunked && chunk == 0)
        return lm_fail(err, LM_ERR_ARG, "chunk must be positive");
    if (p->gate_kind != LM_LINEAR_GATE_NONE && p->gate == NULL) {
        for (size_t i = 0; i < H * L; i++)
            if (!(p->log_gate[i] <= 0.0f))
                return lm_fail(err, LM_ERR_DOMAIN, "log_gate must be <= 0, log_gate[%zu] = %g",
                               i, (double)p->log_gate[i]);
    } else if (p->gate_kind != LM_LINEAR_GATE_NONE) {
        const size_t count = p->gate_kind == LM_LINEAR_GATE_CHANNEL ? H * L * dk : H * L;
        for (size_t i = 0; i < count; i++)
            if (!(p->gate[i] > 0.0f && p->gate[i] <= 1.0f))
                return lm_fail(err, LM_ERR_DOMAIN, "gate must lie in (0, 1], gate[%zu] = %g",
                               i, (double)p->gate[i]);
    }
    lm_linear_head_fn *const kernel = !chunked                  ? ops->linear_recurrent_f32
                                      : p->dtype == LM_KV_BF16 ? ops->linear_chunked_bf16
                                                               : ops->linear_chunked_f32;
    if (!chunked)
        chunk = 1;
    const size_t per_thread = lm_linear_chunk_work_floats(p, chunk);
    const int threads = H > 1 ? omp_get_max_threads() : 1;
    float *work = lm_alloc((size_t)threads * per_thread * sizeof(float));
    if (work == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "no memory for the linear-attention workspace");
#pragma omp parallel num_threads(threads)
    {
        float *mine = work + (size_t)omp_get_thread_num() * per_thread;
#pragma omp for schedule(dynamic, 1)
        for (long long h = 0; h < (long long)H; h++)
            kernel(p, (size_t)h, chunk, mine);
    }
    lm_free(work);
    return LM_OK;
}

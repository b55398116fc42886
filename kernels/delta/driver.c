/* Operator driver of the (gated) delta rule: validate, one workspace per thread, heads
 * split over OpenMP threads. */
#include "delta.h"
#include "lm_ops.h"

#include <stdint.h>
#include <string.h>
#include <omp.h>

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

size_t lm_delta_work_floats(const lm_delta_seq_f32 *p, size_t chunk)
{
    const size_t dk = p->d_key, dv = p->d_value;
    const size_t C = chunk < p->length ? chunk : p->length;
    const size_t ldn = round16(C);
    /* chunked (delta_body.h): St, kh, kt {dk, ldn}, kk, qk, ti {C, ldn}, w, u, then lg, gam,
     * nbg, dl, gend {ldn}; recurrent: St, kh, u */
    size_t chunked = round16(dk * dv) + round16(C * dk) + dk * ldn + 3 * C * ldn +
                     2 * round16(C * dv) + 5 * ldn;
    /* dtype bf16: the widened qw, kw {C, dk} and vw {C, dv}, the key scales rk {ldn}, and
     * (as bfloat16, two per float) the pairs of S_0 {dk/2, 2 dv}, K {dk, ldn}, U
     * {ldn/2, 2 dv} and qk {C, ldn} (delta_body.h's chunk_layout) */
    if (p->dtype == LM_KV_BF16)
        chunked += 2 * round16(C * dk) + round16(C * dv) + ldn + round16((dk + 1) / 2 * dv) +
                   round16(dk * ldn / 2) + round16(ldn / 2 * dv) + round16(C * ldn / 2);
    const size_t recurrent = round16(dk * dv) + round16(dk) + round16(dv);
    return chunked > recurrent ? chunked : recurrent;
}

/* True when the bfloat16 key k {dk} is non-zero and finite: as validate_rows' test on the
 * float32 bit patterns, with bfloat16's FLT_MAX 0x7f7f. */
static bool key_ok_bf16(const uint16_t *k, size_t dk)
{
    uint32_t any = 0, big = 0;
#pragma omp simd reduction(| : any, big)
    for (size_t c = 0; c < dk; c++) {
        const uint32_t bits = k[c] & 0x7fffu; /* |k[c]| */
        any |= bits;
        big |= (uint32_t)(bits > 0x7f7fu);
    }
    return any != 0 && big == 0;
}

/* The first row in [i0, i1) of the flattened {H, L} rows with beta outside [0, 1], gate
 * outside (0, 1] or a zero or non-finite key; SIZE_MAX if none. */
static size_t validate_rows(const lm_delta_seq_f32 *p, size_t i0, size_t i1)
{
    const size_t dk = p->d_key;
    for (size_t i = i0; i < i1; i++) {
        if (!(p->beta[i] >= 0.0f && p->beta[i] <= 1.0f))
            return i;
        if (p->gate != NULL && !(p->gate[i] > 0.0f && p->gate[i] <= 1.0f))
            return i;
        if (p->dtype == LM_KV_BF16) {
            if (!key_ok_bf16(p->k16 + i * dk, dk))
                return i;
            continue;
        }
        /* on the bit patterns of |k| (sign cleared, so signed and unsigned order agree):
         * a zero key has every pattern 0, NaN and infinity sit above 0x7f7fffff (FLT_MAX);
         * OR and signed compares vectorize with the baseline instruction set */
        const float *k = p->k + i * dk;
        uint32_t any = 0, big = 0;
#pragma omp simd reduction(| : any, big)
        for (size_t c = 0; c < dk; c++) {
            uint32_t bits;
            memcpy(&bits, k + c, sizeof bits);
            bits &= 0x7fffffffu; /* |k[c]| */
            any |= bits;
            big |= (uint32_t)((int32_t)bits > 0x7f7fffff);
        }
        if (any == 0 || big != 0)
            return i;
    }
    return SIZE_MAX;
}

lm_status lm_delta_rule_f32(const lm_delta_seq_f32 *p, bool chunked, size_t chunk,
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
    if (p->dtype != LM_KV_F32 && p->dtype != LM_KV_BF16)
        return lm_fail(err, LM_ERR_ARG, "delta-rule dtype must be f32 or bf16");
    const bool bf16 = p->dtype == LM_KV_BF16;
    if (bf16 ? !p->q16 || !p->k16 || !p->v16 || !p->beta || !p->y
             : !p->q || !p->k || !p->v || !p->beta || !p->y)
        return lm_fail(err, LM_ERR_SHAPE, "q, k, v (of the dtype, %s), beta and y must be given",
                       bf16 ? "bf16" : "f32");
    if (bf16 && !chunked)
        return lm_fail(err, LM_ERR_ARG, "delta-rule dtype bf16 needs the chunked form (the "
                       "recurrent form has no bf16 path)");
    if (chunked && chunk == 0)
        return lm_fail(err, LM_ERR_ARG, "chunk must be positive");
    /* rows are checked in parallel over heads (the pass reads every key once, from
     * memory); on a failure the serial scan below finds the first bad row in order, so
     * the message is the same for any thread count */
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (H > 1)
    for (long long h = 0; h < (long long)H; h++)
        bad |= validate_rows(p, (size_t)h * L, (size_t)(h + 1) * L) != SIZE_MAX;
    if (bad) {
        const size_t i = validate_rows(p, 0, H * L);
        if (!(p->beta[i] >= 0.0f && p->beta[i] <= 1.0f))
            return lm_fail(err, LM_ERR_ARG, "beta must lie in [0, 1], beta[%zu] = %g", i,
                           (double)p->beta[i]);
        if (p->gate != NULL && !(p->gate[i] > 0.0f && p->gate[i] <= 1.0f))
            return lm_fail(err, LM_ERR_DOMAIN, "gate must lie in (0, 1], gate[%zu] = %g", i,
                           (double)p->gate[i]);
        return lm_fail(err, LM_ERR_DOMAIN, "k must have non-zero (finite) norm: head %zu, "
                       "token %zu", i / L, i % L);
    }
    lm_delta_head_fn *const kernel = !chunked ? ops->delta_recurrent_f32
                                     : bf16   ? ops->delta_chunked_bf16
                                              : ops->delta_chunked_f32;
    if (!chunked)
        chunk = 1;
    const size_t per_thread = lm_delta_work_floats(p, chunk);
    const int threads = H > 1 ? omp_get_max_threads() : 1;
    float *work = lm_alloc((size_t)threads * per_thread * sizeof(float));
    if (work == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "no memory for the delta-rule workspace");
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

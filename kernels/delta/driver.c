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
    const size_t chunked = round16(dk * dv) + round16(C * dk) + dk * ldn + 3 * C * ldn +
                           2 * round16(C * dv) + 5 * ldn;
    const size_t recurrent = round16(dk * dv) + round16(dk) + round16(dv);
    return chunked > recurrent ? chunked : recurrent;
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
    if (!p->q || !p->k || !p->v || !p->beta || !p->y)
        return lm_fail(err, LM_ERR_SHAPE, "q, k, v, beta and y must be given");
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
    lm_delta_head_fn *const kernel = chunked ? ops->delta_chunked_f32
                                             : ops->delta_recurrent_f32;
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

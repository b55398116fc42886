/* Operator drivers of the ssm family: validate what the fast kernels assume, then split
 * the work over OpenMP threads by independent (batch row, channel block) ranges. */
#include "ssm.h"
#include "lm_ops.h"

#include <float.h>
#include <math.h>

/* Channels per work item: a multiple of every vector width (4, 8, 16), small enough that
 * D = 2048 gives 32 items per batch row for two threads to share. */
enum { MAMBA1_CHANNEL_BLOCK = 64 };

lm_status lm_ssm_mamba1_check_f32(const lm_ssm_mamba1_f32 *p, lm_error *err)
{
    if (p == NULL)
        return lm_fail(err, LM_ERR_ARG, "p must not be NULL");
    if (p->batch == 0 || p->length == 0 || p->channels == 0 || p->state == 0)
        return lm_fail(err, LM_ERR_SHAPE, "batch, length, channels and state must be positive, "
                       "got B=%zu L=%zu D=%zu N=%zu", p->batch, p->length, p->channels, p->state);
    if (p->state > LM_SSM_MAX_STATE)
        return lm_fail(err, LM_ERR_SHAPE, "state must be at most %d, got N=%zu",
                       LM_SSM_MAX_STATE, p->state);
    if (p->x == NULL || p->delta_raw == NULL || p->a == NULL || p->b == NULL || p->c == NULL ||
        p->y == NULL)
        return lm_fail(err, LM_ERR_SHAPE, "x, delta_raw, a, b, c and y must be given");
    /* One branch-free vector pass first: NaN fails both comparisons, +-inf and positive
     * values fail one. Only a bad A pays for the second pass that names the entry. (A
     * decoder checks A once: lm_ssm_mamba1_decode_checked_f32.) */
    const size_t count = p->channels * p->state;
    int all_ok = 1;
#pragma omp simd reduction(&: all_ok)
    for (size_t i = 0; i < count; i++)
        all_ok &= (p->a[i] <= 0.0f) & (p->a[i] >= -FLT_MAX);
    for (size_t i = 0; !all_ok && i < count; i++) {
        if (!isfinite(p->a[i]))
            return lm_fail(err, LM_ERR_NONFINITE, "a must contain only finite values "
                           "(a[%zu,%zu])", i / p->state, i % p->state);
        if (p->a[i] > 0.0f)
            return lm_fail(err, LM_ERR_DOMAIN, "a must be non-positive (stable modes): "
                           "a[%zu,%zu] = %g", i / p->state, i % p->state, (double)p->a[i]);
    }
    return LM_OK;
}

static void run_blocks(const lm_ssm_mamba1_f32 *p, const lm_ops *ops);

lm_status lm_ssm_mamba1_scan_f32(const lm_ssm_mamba1_f32 *p, const lm_ops *ops, lm_error *err)
{
    lm_status status = lm_ops_check(ops, err);
    if (status == LM_OK)
        status = lm_ssm_mamba1_check_f32(p, err);
    if (status != LM_OK)
        return status;
    run_blocks(p, ops);
    return LM_OK;
}

/* Every (batch row, block of channels) of p through the mamba1_scan_f32 kernel of ops. */
static void run_blocks(const lm_ssm_mamba1_f32 *p, const lm_ops *ops)
{
    lm_mamba1_scan_fn *const kernel = ops->mamba1_scan_f32;
    const size_t blocks = (p->channels + MAMBA1_CHANNEL_BLOCK - 1) / MAMBA1_CHANNEL_BLOCK;
    const long long items = (long long)(p->batch * blocks);
    /* A fork/join costs microseconds (milliseconds on a busy box): tiny calls such as one
     * decode step of a small model stay on the calling thread. */
    const bool parallel = items > 1 && p->batch * p->length * p->channels * p->state >= 65536;
    /* Items are handed out one at a time: a thread whose core is taken by another job for a
     * while does not hold the team back at the join (D = 2048 gives 32 items). */
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
    for (long long item = 0; item < items; item++) {
        const size_t bi = (size_t)item / blocks, block = (size_t)item % blocks;
        const size_t d_begin = block * MAMBA1_CHANNEL_BLOCK;
        const size_t d_end = d_begin + MAMBA1_CHANNEL_BLOCK < p->channels
                                 ? d_begin + MAMBA1_CHANNEL_BLOCK : p->channels;
        kernel(p, bi, d_begin, d_end);
    }
}

/* What a decode step checks besides lm_ssm_mamba1_check_f32: one token, state in place. */
static lm_status check_decode_shape(const lm_ssm_mamba1_f32 *p, lm_error *err)
{
    if (p == NULL)
        return lm_fail(err, LM_ERR_ARG, "p must not be NULL");
    if (p->length != 1)
        return lm_fail(err, LM_ERR_ARG, "length must be 1 for a decode step, got %zu",
                       p->length);
    if (p->h0 == NULL || p->h0 != p->h_final)
        return lm_fail(err, LM_ERR_ARG, "h0 and h_final must be the same state buffer "
                       "(the decode step updates it in place)");
    return LM_OK;
}

lm_status lm_ssm_mamba1_decode_f32(const lm_ssm_mamba1_f32 *p, const lm_ops *ops,
                                   lm_error *err)
{
    lm_status status = check_decode_shape(p, err);
    return status == LM_OK ? lm_ssm_mamba1_scan_f32(p, ops, err) : status;
}

lm_status lm_ssm_mamba1_decode_checked_f32(const lm_ssm_mamba1_f32 *p, const lm_ops *ops,
                                           lm_error *err)
{
    lm_status status = lm_ops_check(ops, err);
    if (status == LM_OK)
        status = check_decode_shape(p, err);
    if (status == LM_OK)
        run_blocks(p, ops);
    return status;
}

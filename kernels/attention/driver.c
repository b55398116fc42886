/* Operator drivers: validate, split the work over OpenMP threads, call the dispatched
 * kernels. Baseline C; the kernels never start threads or allocate.
 *
 * Prefill splits (query head, query tile) items dynamically (causal rows grow longer
 * down the sequence). Decode splits every (sequence, KV head) key range into chunks,
 * each computed by one kernel call for all query heads of the group, then merges the
 * chunks: m = max_s m_s, l = sum_s l_s e^(m_s - m), o = sum_s acc_s e^(m_s - m) / l. */
#include "attention.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>

static bool all_finite_f32(const float *x, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (!isfinite(x[i]))
            return false;
    return true;
}

size_t lm_attn_prefill_workspace_floats(size_t head_dim)
{
    return head_dim * LM_ATTN_TILE_Q + LM_ATTN_TILE_K * LM_ATTN_TILE_Q + 3 * LM_ATTN_TILE_Q;
}

size_t lm_attn_decode_workspace_floats(size_t group) { return group * LM_ATTN_DECODE_BLOCK; }

/* The table to run: the caller's or the active one, scalar when head_dim is not a
 * multiple of 16 (the SIMD kernels step d by whole vectors). */
static const lm_ops *pick_ops(const lm_ops *ops, size_t head_dim)
{
    if (head_dim % 16 != 0)
        return lm_ops_for(LM_ISA_SCALAR);
    return ops != NULL ? ops : lm_ops_active();
}

lm_status lm_attn_prefill(const lm_attn_prefill_args *a, const lm_ops *ops,
                          lm_attn_counts *counts, lm_error *err)
{
    if (a == NULL)
        return lm_fail(err, LM_ERR_ARG, "prefill arguments must not be NULL");
    lm_status status =
        lm_attn_prefill_check(a->n, a->heads, a->kv_heads, a->head_dim, &a->mask, err);
    if (status != LM_OK)
        return status;
    if (a->q == NULL || a->k == NULL || a->v == NULL || a->o == NULL)
        return lm_fail(err, LM_ERR_ARG, "q, k, v and o must not be NULL");
    if (!all_finite_f32(a->q, a->n * a->heads * a->head_dim))
        return lm_fail(err, LM_ERR_NONFINITE, "q must contain only finite values");
    if (!all_finite_f32(a->k, a->n * a->kv_heads * a->head_dim))
        return lm_fail(err, LM_ERR_NONFINITE, "k must contain only finite values");
    if (!all_finite_f32(a->v, a->n * a->kv_heads * a->head_dim))
        return lm_fail(err, LM_ERR_NONFINITE, "v must contain only finite values");

    const lm_ops *run = pick_ops(ops, a->head_dim);
    const size_t tiles = (a->n + LM_ATTN_TILE_Q - 1) / LM_ATTN_TILE_Q;
    const long items = (long)(tiles * a->heads);
    const size_t ws_floats = lm_attn_prefill_workspace_floats(a->head_dim);
    lm_attn_counts total = {0, 0, 0};
    bool out_of_memory = false;
#pragma omp parallel
    {
        float *ws = lm_alloc(ws_floats * sizeof(float));
        lm_attn_counts mine = {0, 0, 0};
        if (ws == NULL) {
#pragma omp atomic write
            out_of_memory = true;
        }
        /* last tiles first: they are the longest rows */
#pragma omp for schedule(dynamic, 1)
        for (long item = 0; item < items; item++) {
            if (ws == NULL)
                continue;
            size_t tile = tiles - 1 - (size_t)item / a->heads, head = (size_t)item % a->heads;
            run->attn_prefill_f32(a, head, tile, tile + 1, ws, &mine);
        }
#pragma omp critical(lm_attn_prefill_counts)
        {
            total.tiles_total += mine.tiles_total;
            total.tiles_computed += mine.tiles_computed;
            total.pairs_computed += mine.pairs_computed;
        }
        lm_free(ws);
    }
    if (out_of_memory)
        return lm_fail(err, LM_ERR_NOMEM, "prefill workspace of %zu floats per thread",
                       ws_floats);
    if (counts != NULL)
        *counts = total;
    return LM_OK;
}

void lm_attn_merge_partials(const float *m, const float *l, const float *acc, size_t parts,
                            size_t group, size_t d, float *o, size_t o_stride)
{
    for (size_t g = 0; g < group; g++) {
        float top = -INFINITY;
        for (size_t s = 0; s < parts; s++)
            top = m[s * group + g] > top ? m[s * group + g] : top;
        float total = 0.0f;
        float *row = o + g * o_stride;
        for (size_t c = 0; c < d; c++)
            row[c] = 0.0f;
        for (size_t s = 0; s < parts; s++) {
            const float w = expf(m[s * group + g] - top); /* e^(m_s - m) */
            total += l[s * group + g] * w;
            const float *a = acc + (s * group + g) * d;
            for (size_t c = 0; c < d; c++)
                row[c] += w * a[c];
        }
        const float inv = 1.0f / total;
        for (size_t c = 0; c < d; c++)
            row[c] *= inv;
    }
}

typedef struct decode_task {
    size_t b, g, j0, j1;
} decode_task;

static lm_attn_decode_fn decode_kernel(const lm_ops *ops, lm_kv_dtype dtype)
{
    switch (dtype) {
    case LM_KV_F32: return ops->attn_decode_f32;
    case LM_KV_F16: return ops->attn_decode_f16;
    case LM_KV_BF16: return ops->attn_decode_bf16;
    default: return NULL;
    }
}

lm_status lm_attn_decode(const lm_attn_decode_args *a, const lm_ops *ops, lm_error *err)
{
    if (a == NULL)
        return lm_fail(err, LM_ERR_ARG, "decode arguments must not be NULL");
    lm_status status = lm_attn_decode_check(a->batch, a->heads, a->kv_heads, a->head_dim,
                                            a->capacity, a->lengths, err);
    if (status != LM_OK)
        return status;
    if (a->q == NULL || a->k == NULL || a->v == NULL || a->o == NULL)
        return lm_fail(err, LM_ERR_ARG, "q, k, v and o must not be NULL");
    if ((unsigned)a->dtype >= LM_KV_DTYPE_COUNT)
        return lm_fail(err, LM_ERR_ARG, "dtype must be f32, f16 or bf16");
    const size_t d = a->head_dim, group = a->heads / a->kv_heads;
    if (!all_finite_f32(a->q, a->batch * a->heads * d))
        return lm_fail(err, LM_ERR_NONFINITE, "q must contain only finite values");
    const lm_attn_decode_fn kernel = decode_kernel(pick_ops(ops, d), a->dtype);

    /* chunk length: enough chunks for every thread, whole blocks, at least 8 blocks */
    size_t rows = 0;
    for (size_t b = 0; b < a->batch; b++)
        rows += a->lengths[b] * a->kv_heads;
    const size_t threads = (size_t)omp_get_max_threads();
    size_t chunk = (rows / (4 * threads) + LM_ATTN_DECODE_BLOCK - 1) / LM_ATTN_DECODE_BLOCK *
                   LM_ATTN_DECODE_BLOCK;
    if (chunk < 8 * LM_ATTN_DECODE_BLOCK)
        chunk = 8 * LM_ATTN_DECODE_BLOCK;
    size_t ntasks = 0;
    for (size_t b = 0; b < a->batch; b++)
        ntasks += a->kv_heads * ((a->lengths[b] + chunk - 1) / chunk);

    decode_task *tasks = lm_alloc(ntasks * sizeof *tasks);
    size_t *first = lm_alloc((a->batch * a->kv_heads + 1) * sizeof *first);
    float *part_m = lm_alloc(ntasks * group * sizeof(float));
    float *part_l = lm_alloc(ntasks * group * sizeof(float));
    float *part_acc = lm_alloc(ntasks * group * d * sizeof(float));
    if (tasks == NULL || first == NULL || part_m == NULL || part_l == NULL || part_acc == NULL) {
        lm_free(tasks);
        lm_free(first);
        lm_free(part_m);
        lm_free(part_l);
        lm_free(part_acc);
        return lm_fail(err, LM_ERR_NOMEM, "decode partials for %zu chunks", ntasks);
    }
    size_t t = 0;
    for (size_t b = 0; b < a->batch; b++)
        for (size_t g = 0; g < a->kv_heads; g++) {
            first[b * a->kv_heads + g] = t; /* chunks of one (b, g) are consecutive */
            for (size_t j0 = 0; j0 < a->lengths[b]; j0 += chunk)
                tasks[t++] = (decode_task){b, g, j0,
                                           j0 + chunk < a->lengths[b] ? j0 + chunk : a->lengths[b]};
        }
    first[a->batch * a->kv_heads] = t;

    const size_t esize = lm_kv_dtype_size(a->dtype);
    const float scale = 1.0f / sqrtf((float)d);
    bool out_of_memory = false;
#pragma omp parallel
    {
        float *ws = lm_alloc(lm_attn_decode_workspace_floats(group) * sizeof(float));
        if (ws == NULL) {
#pragma omp atomic write
            out_of_memory = true;
        }
#pragma omp for schedule(dynamic, 1)
        for (long i = 0; i < (long)ntasks; i++) {
            if (ws == NULL)
                continue;
            const decode_task *tk = &tasks[i];
            const size_t head_base = ((tk->b * a->kv_heads + tk->g) * a->capacity + tk->j0) * d;
            kernel(a->q + (tk->b * a->heads + tk->g * group) * d,
                   (const char *)a->k + head_base * esize, (const char *)a->v + head_base * esize,
                   tk->j1 - tk->j0, d, group, scale, part_m + (size_t)i * group,
                   part_l + (size_t)i * group, part_acc + (size_t)i * group * d, ws);
        }
        lm_free(ws);
#pragma omp for
        for (long bg = 0; bg < (long)(a->batch * a->kv_heads); bg++) {
            if (out_of_memory)
                continue;
            const size_t s0 = first[bg], parts = first[bg + 1] - s0;
            const size_t b = (size_t)bg / a->kv_heads, g = (size_t)bg % a->kv_heads;
            lm_attn_merge_partials(part_m + s0 * group, part_l + s0 * group,
                                   part_acc + s0 * group * d, parts, group, d,
                                   a->o + (b * a->heads + g * group) * d, d);
        }
    }
    lm_free(tasks);
    lm_free(first);
    lm_free(part_m);
    lm_free(part_l);
    lm_free(part_acc);
    if (out_of_memory)
        return lm_fail(err, LM_ERR_NOMEM, "decode workspace for %zu query heads", group);
    return LM_OK;
}

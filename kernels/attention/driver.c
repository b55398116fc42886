/* Operator drivers: validate, split the work over OpenMP threads, call the dispatched
 * kernels. Baseline C; the kernels never start threads or allocate.
 *
 * Prefill splits (KV head, block of up to LM_ATTN_PREFILL_HEADS of its query heads, block
 * of LM_ATTN_PREFILL_TILES query tiles) items dynamically, last tiles first (causal rows
 * grow longer down the sequence); an item reads each K/V tile once for all its heads and
 * tiles. Decode splits every (sequence, KV head) key range into chunks,
 * each computed by one kernel call for all query heads of the group, then merges the
 * chunks: m = max_s m_s, l = sum_s l_s e^(m_s - m), o = sum_s acc_s e^(m_s - m) / l. */
#include "attention.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>

/* True when no x[i] is NaN or +-inf (exponent bits all ones): an integer count the
 * compiler vectorises, a few microseconds cheaper per decode call than isfinite. */
static bool all_finite_f32(const float *x, size_t count)
{
    const size_t step = 4096;
    for (size_t i0 = 0; i0 < count; i0 += step) {
        const size_t i1 = i0 + step < count ? i0 + step : count;
        uint32_t bad = 0;
        for (size_t i = i0; i < i1; i++) {
            uint32_t bits;
            memcpy(&bits, x + i, sizeof bits);
            bad += (bits & 0x7f800000u) == 0x7f800000u;
        }
        if (bad != 0)
            return false;
    }
    return true;
}

/* True when no bfloat16 x[i] is NaN or +-inf (exponent bits all ones). */
static bool all_finite_bf16(const uint16_t *x, size_t count)
{
    uint32_t bad = 0;
    for (size_t i = 0; i < count; i++)
        bad += (x[i] & 0x7f80u) == 0x7f80u;
    return bad == 0;
}

/* all_finite_f32 (bf16: all_finite_bf16) over OpenMP threads (the prefill inputs are tens
 * of MB: a serial scan would be a visible serial fraction of a 2-thread run). */
static bool all_finite_parallel(const void *x, size_t count, bool bf16)
{
    enum { CHUNK = 1 << 16 };
    const long chunks = (long)((count + CHUNK - 1) / CHUNK);
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) if (chunks > 4)
    for (long c = 0; c < chunks; c++) {
        const size_t begin = (size_t)c * CHUNK;
        const size_t len = count - begin < CHUNK ? count - begin : CHUNK;
        bad |= bf16 ? !all_finite_bf16((const uint16_t *)x + begin, len)
                    : !all_finite_f32((const float *)x + begin, len);
    }
    return bad == 0;
}

/* (query tile, query head) slots one prefill item computes together: up to
 * LM_ATTN_PREFILL_HEADS x LM_ATTN_PREFILL_TILES at head_dim 128, fewer for wider heads, so
 * that the slots' Qt and accumulators (2 head_dim TILE_Q floats each) stay within about
 * half of a 1 MiB L2. */
static size_t prefill_slot_budget(size_t head_dim)
{
    size_t budget = LM_ATTN_PREFILL_HEADS * LM_ATTN_PREFILL_TILES * 128 / head_dim;
    if (budget > LM_ATTN_PREFILL_HEADS * LM_ATTN_PREFILL_TILES)
        budget = LM_ATTN_PREFILL_HEADS * LM_ATTN_PREFILL_TILES;
    return budget < 1 ? 1 : budget;
}

size_t lm_attn_prefill_workspace_floats(size_t head_dim)
{
    const size_t tq = LM_ATTN_TILE_Q, tk = LM_ATTN_TILE_K, slots = prefill_slot_budget(head_dim);
    /* float32 tiles (prefill_body.h), then bfloat16 ones with the paired weights
     * (prefill_bf16.h); head_dim is even wherever the bf16 layout is used */
    const size_t f32 = 2 * tk * head_dim + 2 * tk * tq + tq + slots * (2 * head_dim * tq + 2 * tq);
    const size_t bf16 = tk * head_dim + 2 * tk * tq + tk * tq / 2 + tq +
                        slots * (head_dim * tq / 2 + head_dim * tq + 2 * tq);
    return f32 > bf16 ? f32 : bf16;
}

size_t lm_attn_decode_workspace_floats(size_t group) { return group * LM_ATTN_DECODE_BLOCK; }

/* The table to run: the caller's, scalar when head_dim is not a multiple of 16 (the SIMD
 * kernels step d by whole vectors). A table that says it is scalar runs as given: a
 * plugin's table (harness/plugin.c) is marked scalar, its kernels take any head_dim. */
static const lm_ops *pick_ops(const lm_ops *ops, size_t head_dim)
{
    return head_dim % 16 != 0 && ops->isa != LM_ISA_SCALAR ? lm_ops_for(LM_ISA_SCALAR) : ops;
}

/* The prefill's input arrays of its dtype: present and finite. */
static lm_status prefill_check_inputs(const lm_attn_prefill_args *a, lm_error *err)
{
    const size_t nq = a->n * a->heads * a->head_dim, nk = a->n * a->kv_heads * a->head_dim;
    if (a->dtype != LM_KV_F32 && a->dtype != LM_KV_BF16)
        return lm_fail(err, LM_ERR_ARG, "prefill dtype must be f32 or bf16 (no f16 compute path)");
    const bool bf16 = a->dtype == LM_KV_BF16;
    if (a->o == NULL || (bf16 ? a->q16 == NULL || a->k16 == NULL || a->v16 == NULL
                              : a->q == NULL || a->k == NULL || a->v == NULL))
        return lm_fail(err, LM_ERR_ARG, "q, k, v (of the dtype, %s) and o must not be NULL",
                       bf16 ? "bf16" : "f32");
    const void *q = bf16 ? (const void *)a->q16 : (const void *)a->q;
    const void *k = bf16 ? (const void *)a->k16 : (const void *)a->k;
    const void *v = bf16 ? (const void *)a->v16 : (const void *)a->v;
    const char *bad = !all_finite_parallel(q, nq, bf16)   ? "q"
                      : !all_finite_parallel(k, nk, bf16) ? "k"
                      : !all_finite_parallel(v, nk, bf16) ? "v"
                                                          : NULL;
    if (bad != NULL)
        return lm_fail(err, LM_ERR_NONFINITE, "%s must contain only finite values", bad);
    return LM_OK;
}

lm_status lm_attn_prefill(const lm_attn_prefill_args *a, const lm_ops *ops,
                          lm_attn_counts *counts, lm_error *err)
{
    if (lm_ops_check(ops, err) != LM_OK)
        return LM_ERR_ARG;
    if (a == NULL)
        return lm_fail(err, LM_ERR_ARG, "prefill arguments must not be NULL");
    lm_status status =
        lm_attn_prefill_check(a->n, a->heads, a->kv_heads, a->head_dim, &a->mask, err);
    if (status != LM_OK)
        return status;
    if ((status = prefill_check_inputs(a, err)) != LM_OK)
        return status;

    const lm_ops *run = pick_ops(ops, a->head_dim);
    lm_attn_prefill_fn *const kernel =
        a->dtype == LM_KV_BF16 ? run->attn_prefill_bf16 : run->attn_prefill_f32;
    /* an item: `block` query heads of one KV head x `span` query tiles, within the budget */
    const size_t group = a->heads / a->kv_heads, budget = prefill_slot_budget(a->head_dim);
    size_t block = group < LM_ATTN_PREFILL_HEADS ? group : LM_ATTN_PREFILL_HEADS;
    block = block < budget ? block : budget;
    size_t span = budget / block; /* query tiles per item */
    span = span < LM_ATTN_PREFILL_TILES ? span : LM_ATTN_PREFILL_TILES;
    const size_t tiles = (a->n + LM_ATTN_TILE_Q - 1) / LM_ATTN_TILE_Q;
    const size_t tile_blocks = (tiles + span - 1) / span;
    const size_t blocks = (group + block - 1) / block; /* head blocks per KV head */
    const size_t per_tile = a->kv_heads * blocks;
    const long items = (long)(tile_blocks * per_tile);
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
            const size_t tb = tile_blocks - 1 - (size_t)item / per_tile;
            const size_t t0 = tb * span, t1 = t0 + span < tiles ? t0 + span : tiles;
            const size_t g = (size_t)item % per_tile / blocks, b = (size_t)item % blocks;
            const size_t h0 = g * group + b * block;
            const size_t h1 = h0 + block < (g + 1) * group ? h0 + block : (g + 1) * group;
            kernel(a, h0, h1, t0, t1, ws, &mine);
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
        float *row = o + g * o_stride;
        if (parts == 1) { /* one chunk: o = acc / l */
            const float inv = 1.0f / l[g];
            const float *a = acc + g * d;
            for (size_t c = 0; c < d; c++)
                row[c] = a[c] * inv;
            continue;
        }
        float top = -INFINITY;
        for (size_t s = 0; s < parts; s++)
            top = m[s * group + g] > top ? m[s * group + g] : top;
        float total = 0.0f;
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

static lm_attn_decode_fn *decode_kernel(const lm_ops *ops, lm_kv_dtype dtype)
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
    if (lm_ops_check(ops, err) != LM_OK)
        return LM_ERR_ARG;
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
    lm_attn_decode_fn *const kernel = decode_kernel(pick_ops(ops, d), a->dtype);

    /* chunk length: enough chunks for every thread, whole blocks, at least 8 blocks */
    size_t rows = 0;
    for (size_t b = 0; b < a->batch; b++)
        rows += a->lengths[b] * a->kv_heads;
    const size_t threads = (size_t)omp_get_max_threads();
    size_t chunk = (rows / (4 * threads) + LM_ATTN_DECODE_BLOCK - 1) / LM_ATTN_DECODE_BLOCK *
                   LM_ATTN_DECODE_BLOCK;
    if (chunk < 8 * LM_ATTN_DECODE_BLOCK)
        chunk = 8 * LM_ATTN_DECODE_BLOCK;
    const size_t pairs = a->batch * a->kv_heads;
    size_t ntasks = 0;
    for (size_t b = 0; b < a->batch; b++)
        ntasks += a->kv_heads * ((a->lengths[b] + chunk - 1) / chunk);

    /* one allocation per call: partial states m, l {ntasks, group}, acc {ntasks, group, d},
     * one workspace per thread (each a whole number of cache lines), then the task list,
     * the first task of each (sequence, KV head) pair and its count of chunks left */
    const size_t line = 16; /* floats per cache line */
    const size_t states = (2 * ntasks * group + line - 1) / line * line;
    const size_t ws_floats = (lm_attn_decode_workspace_floats(group) + line - 1) / line * line;
    const size_t floats = states + ntasks * group * d + threads * ws_floats;
    const size_t bytes = floats * sizeof(float) + ntasks * sizeof(decode_task) +
                         (2 * pairs + 1) * sizeof(size_t);
    float *part_m = lm_alloc(bytes);
    if (part_m == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "decode partials for %zu chunks", ntasks);
    float *part_l = part_m + ntasks * group, *part_acc = part_m + states;
    float *workspaces = part_acc + ntasks * group * d;
    decode_task *tasks = (decode_task *)(void *)(part_m + floats);
    size_t *first = (size_t *)(void *)(tasks + ntasks), *left = first + pairs + 1;
    size_t t = 0;
    for (size_t b = 0; b < a->batch; b++)
        for (size_t g = 0; g < a->kv_heads; g++) {
            first[b * a->kv_heads + g] = t; /* chunks of one (b, g) are consecutive */
            for (size_t j0 = 0; j0 < a->lengths[b]; j0 += chunk)
                tasks[t++] = (decode_task){b, g, j0,
                                           j0 + chunk < a->lengths[b] ? j0 + chunk : a->lengths[b]};
            left[b * a->kv_heads + g] = t - first[b * a->kv_heads + g];
        }
    first[pairs] = t;

    const size_t esize = lm_kv_dtype_size(a->dtype);
    const float scale = 1.0f / sqrtf((float)d);
    /* One barrier: the thread that finishes the last chunk of a (b, g) pair merges it. */
#pragma omp parallel
    {
        float *ws = workspaces + (size_t)omp_get_thread_num() * ws_floats;
#pragma omp for schedule(dynamic, 1)
        for (long i = 0; i < (long)ntasks; i++) {
            const decode_task *tk = &tasks[i];
            const size_t head_base = ((tk->b * a->kv_heads + tk->g) * a->capacity + tk->j0) * d;
            kernel(a->q + (tk->b * a->heads + tk->g * group) * d,
                   (const char *)a->k + head_base * esize, (const char *)a->v + head_base * esize,
                   tk->j1 - tk->j0, d, group, scale, part_m + (size_t)i * group,
                   part_l + (size_t)i * group, part_acc + (size_t)i * group * d, ws);
            const size_t bg = tk->b * a->kv_heads + tk->g;
            size_t remaining;
#pragma omp atomic capture seq_cst
            remaining = --left[bg];
            if (remaining == 0) { /* every chunk of this pair is written: merge it */
                const size_t s0 = first[bg], parts = first[bg + 1] - s0;
                lm_attn_merge_partials(part_m + s0 * group, part_l + s0 * group,
                                       part_acc + s0 * group * d, parts, group, d,
                                       a->o + (tk->b * a->heads + tk->g * group) * d, d);
            }
        }
    }
    lm_free(part_m);
    return LM_OK;
}

/* Operator drivers of Mamba-2 SSD: the chunked prefill runs the SSD kernel of the path
 * (ssd_chunked.h) on scores shared by the heads of a group; the recurrent prefill (and a
 * chunked kernel that belongs to no path) runs the linear-attention kernels on per-head
 * sequences (ssm.h explains the correspondence); the decode step updates the state in
 * place. */
#include "ssm.h"
#include "lm_math.h"
#include "lm_ops.h"

#include <math.h>
#include <omp.h>
#include <string.h>

static size_t round16(size_t n) { return (n + 15) & ~(size_t)15; }

/* Rows of x and y sit H P floats apart (a new page every token), too far apart for the
 * hardware prefetcher to run ahead of a short per-token loop: fetch SSD_AHEAD tokens ahead. */
enum { SSD_AHEAD = 8 };

/* Tokens per time block of the chunked scan (rounded to whole chunks): 2 T pages of x and
 * y rows stay within the data TLB while every head walks them. */
#ifndef SSD_BLOCK
#define SSD_BLOCK 256
#endif

/* Most floats of chunk scores held at once (16 MiB): the scan runs in spans of time whose
 * scores fit (the whole sequence for the shape: 4096 x 32 floats). */
#ifndef SSD_SCORES_MAX
#define SSD_SCORES_MAX ((size_t)4 << 20)
#endif

static inline void prefetch_row(const float *row, size_t count, bool for_write)
{
#if defined(__GNUC__)
    for (size_t i = 0; i < count; i += 16) { /* one 64-byte line per 16 floats */
        if (for_write)
            __builtin_prefetch(row + i, 1, 3);
        else
            __builtin_prefetch(row + i, 0, 3);
    }
#else
    (void)row, (void)count, (void)for_write;
#endif
}


static lm_status check(const lm_ssm_ssd_f32 *p, lm_error *err)
{
    if (p == NULL)
        return lm_fail(err, LM_ERR_ARG, "p must not be NULL");
    const size_t H = p->heads, G = p->groups;
    if (p->batch == 0 || p->length == 0 || H == 0 || p->head_dim == 0 || G == 0 ||
        p->state == 0)
        return lm_fail(err, LM_ERR_SHAPE, "batch, length, heads, head_dim, groups and state "
                       "must be positive");
    if (H % G != 0)
        return lm_fail(err, LM_ERR_SHAPE, "heads (%zu) must be a multiple of groups (%zu)", H, G);
    if (p->dtype != LM_KV_F32 && p->dtype != LM_KV_BF16)
        return lm_fail(err, LM_ERR_ARG, "SSD inputs must be f32 or bf16 (no f16 compute path)");
    const bool bf16 = p->dtype == LM_KV_BF16;
    if (!p->dt_raw || !p->a || !p->y || (bf16 ? !p->x16 || !p->b16 || !p->c16
                                              : !p->x || !p->b || !p->c))
        return lm_fail(err, LM_ERR_SHAPE, "x, dt_raw, a, b, c and y must be given%s",
                       bf16 ? " (x, b and c as bf16: x16, b16, c16)" : "");
    for (size_t h = 0; h < H; h++) {
        if (!isfinite(p->a[h]))
            return lm_fail(err, LM_ERR_NONFINITE, "a must contain only finite values (a[%zu])", h);
        if (p->a[h] > 0.0f)
            return lm_fail(err, LM_ERR_DOMAIN, "a must be non-positive (stable modes): a[%zu] = %g",
                           h, (double)p->a[h]);
    }
    return LM_OK;
}

/* The transposed state {N, P} of item (batch row, head) from h0 {P, N}, or zero. */
static void init_state(const lm_ssm_ssd_f32 *p, size_t item, float *s)
{
    const size_t P = p->head_dim, N = p->state;
    if (p->h0 == NULL) {
        memset(s, 0, N * P * sizeof(float));
        return;
    }
    const float *h0 = p->h0 + item * P * N;
    for (size_t i = 0; i < P; i++)
        for (size_t n = 0; n < N; n++)
            s[n * P + i] = h0[i * N + n];
}

/* h_final {P, N} of item from the transposed state s {N, P}. */
static void store_state(const lm_ssm_ssd_f32 *p, size_t item, const float *s)
{
    const size_t P = p->head_dim, N = p->state;
    float *hf = p->h_final + item * P * N;
    for (size_t i = 0; i < P; i++)
        for (size_t n = 0; n < N; n++)
            hf[i * N + n] = s[n * P + i];
}

/* sc {C, C} = the scores C_t . B_s (s <= t < n) of one chunk, zero above the diagonal:
 * c, b {n, N} rows ld apart; bt {N, C} scratch. */
static void chunk_scores(const lm_ops *ops, const float *c, const float *b, size_t ld, size_t n,
                         size_t N, size_t C, float *bt, float *sc)
{
    for (size_t s = 0; s < n; s++)
        for (size_t k = 0; k < N; k++)
            bt[k * C + s] = b[s * ld + k];
    memset(sc, 0, C * C * sizeof(float));
    ops->gemm_acc_f32(n, n, N, c, ld, bt, C, sc, C);
    for (size_t t = 0; t < n; t++)
        memset(sc + t * C + t + 1, 0, (C - t - 1) * sizeof(float));
}

/* chunk_scores on bfloat16 c and b rows: widened (exactly) into cw {n, N}, then the same
 * product; bt {N, C} and cw {C, N} scratch. */
static void chunk_scores_bf16(const lm_ops *ops, const uint16_t *c, const uint16_t *b,
                              size_t ld, size_t n, size_t N, size_t C, float *bt, float *cw,
                              float *sc)
{
    for (size_t s = 0; s < n; s++)
        for (size_t k = 0; k < N; k++) {
            bt[k * C + s] = lm_f32_from_bf16(b[s * ld + k]);
            cw[s * N + k] = lm_f32_from_bf16(c[s * ld + k]);
        }
    memset(sc, 0, C * C * sizeof(float));
    ops->gemm_acc_f32(n, n, N, cw, N, bt, C, sc, C);
    for (size_t t = 0; t < n; t++)
        memset(sc + t * C + t + 1, 0, (C - t - 1) * sizeof(float));
}

/* The chunked scan through the SSD kernel of `ops` (ssd_chunked.h), over spans of time
 * whose chunk scores fit SSD_SCORES_MAX floats (usually the whole sequence: one span).
 * Per span, first the chunk scores C_t . B_s of every (batch row, group) and chunk, once
 * for all the heads of the group (then a barrier); then time blocks of T tokens (a whole
 * number of chunks) outer and the (batch row, head) items inner, each item's state
 * (transposed, {N, P}) carried in `states`: the x and y rows of a block (H P floats apart,
 * two pages per token) are walked by every head while their pages are in the TLB, and the
 * B and C rows come from cache. The static schedule gives a thread the same items in
 * every block, so blocks need no barrier between them (with the box's other jobs taking a
 * core now and then, a barrier can cost a scheduling quantum). x, y, B, C and dt_raw are
 * read and written in place (strided). */
static lm_status ssd_chunked(const lm_ops *ops, const lm_ssm_ssd_f32 *p, size_t chunk,
                             lm_error *err)
{
    const size_t B = p->batch, L = p->length, H = p->heads, P = p->head_dim;
    const size_t G = p->groups, N = p->state;
    const size_t C = chunk < L ? chunk : L;
    const size_t T = C >= SSD_BLOCK ? C : C * (SSD_BLOCK / C);
    const size_t span_blocks = SSD_SCORES_MAX / (B * G * C * T) > 0
                                   ? SSD_SCORES_MAX / (B * G * C * T) : 1;
    const size_t span = span_blocks * T < L ? span_blocks * T : L; /* tokens per span */
    const size_t chunks = (span + C - 1) / C;                        /* chunks per span */
    const bool bf16 = p->dtype == LM_KV_BF16;
    lm_ssd_chunked_fn *const kernel = bf16 ? ops->ssd_chunked_bf16 : ops->ssd_chunked_f32;
    const size_t kernel_work = round16(bf16 ? lm_ssd_chunked_bf16_work_floats(T, C, P, N)
                                            : lm_ssd_chunked_work_floats(C, P));
    const size_t per_thread = kernel_work + round16(N * C) * (bf16 ? 2 : 1);
    const size_t items = B * H, state_floats = round16(N * P);
    const int threads = items > 1 ? omp_get_max_threads() : 1;
    float *work = lm_alloc((size_t)threads * per_thread * sizeof(float));
    float *states = lm_alloc(items * state_floats * sizeof(float)); /* {B H, N, P} */
    float *scores = lm_alloc(B * G * chunks * C * C * sizeof(float)); /* {B G, chunks, C, C} */
    if (work == NULL || states == NULL || scores == NULL) {
        lm_free(work), lm_free(states), lm_free(scores);
        return lm_fail(err, LM_ERR_NOMEM, "no memory for the SSD workspace");
    }
#pragma omp parallel num_threads(threads)
    {
        float *kw = work + (size_t)omp_get_thread_num() * per_thread; /* the kernel's */
        float *bt = kw + kernel_work; /* {N, C}: B of a chunk, transposed */
        float *cw = bt + round16(N * C); /* {C, N}: C of a chunk, widened (bf16 inputs) */
#pragma omp for schedule(static) nowait
        for (long long item = 0; item < (long long)items; item++) {
            init_state(p, (size_t)item, states + (size_t)item * state_floats);
        }
        for (size_t s0 = 0; s0 < L; s0 += span) {
            const size_t span_len = L - s0 < span ? L - s0 : span;
            const size_t span_chunks = (span_len + C - 1) / C;
            if (s0 > 0) {
#pragma omp barrier
            } /* every head is done with the previous span's scores */
#pragma omp for schedule(static)
            for (long long job = 0; job < (long long)(B * G * span_chunks); job++) {
                const size_t bg = (size_t)job / span_chunks, j = (size_t)job % span_chunks;
                const size_t bi = bg / G, g = bg % G, row = bi * L + s0 + j * C;
                const size_t n = span_len - j * C < C ? span_len - j * C : C;
                float *sc = scores + (bg * chunks + j) * C * C;
                if (bf16)
                    chunk_scores_bf16(ops, p->c16 + (row * G + g) * N, p->b16 + (row * G + g) * N,
                                      G * N, n, N, C, bt, cw, sc);
                else
                    chunk_scores(ops, p->c + (row * G + g) * N, p->b + (row * G + g) * N, G * N,
                                 n, N, C, bt, sc);
            }
            for (size_t t0 = s0; t0 < s0 + span_len; t0 += T) {
                const size_t len = s0 + span_len - t0 < T ? s0 + span_len - t0 : T;
#pragma omp for schedule(static) nowait
                for (long long item = 0; item < (long long)items; item++) {
                    const size_t bi = (size_t)item / H, h = (size_t)item % H, g = h / (H / G);
                    const size_t row = bi * L + t0;
                    const lm_ssd_block_f32 blk = {
                        .length = len, .chunk = C, .head_dim = P, .state = N,
                        .x = bf16 ? NULL : p->x + (row * H + h) * P,
                        .dt_raw = p->dt_raw + row * H + h,
                        .b = bf16 ? NULL : p->b + (row * G + g) * N,
                        .c = bf16 ? NULL : p->c + (row * G + g) * N,
                        .scores = scores + ((bi * G + g) * chunks + (t0 - s0) / C) * C * C,
                        .y = p->y + (row * H + h) * P,
                        .s = states + (size_t)item * state_floats,
                        .ldx = H * P, .ld_dt = H, .ldbc = G * N, .ldy = H * P,
                        .dt_bias = p->dt_bias ? p->dt_bias[h] : 0.0f, .a = p->a[h],
                        .skip = p->skip ? p->skip[h] : 0.0f,
                        .x16 = bf16 ? p->x16 + (row * H + h) * P : NULL,
                        .b16 = bf16 ? p->b16 + (row * G + g) * N : NULL,
                        .c16 = bf16 ? p->c16 + (row * G + g) * N : NULL};
                    kernel(&blk, kw);
                }
            }
        }
        if (p->h_final != NULL) {
#pragma omp for schedule(static)
            for (long long item = 0; item < (long long)items; item++) {
                store_state(p, (size_t)item, states + (size_t)item * state_floats);
            }
        }
    }
    lm_free(states);
    lm_free(scores);
    lm_free(work);
    return LM_OK;
}

lm_status lm_ssm_ssd_scan_f32(const lm_ssm_ssd_f32 *p, bool chunked, size_t chunk,
                              const lm_ops *ops, lm_error *err)
{
    lm_status status = lm_ops_check(ops, err);
    if (status == LM_OK)
        status = check(p, err);
    if (status != LM_OK)
        return status;
    if (chunked && chunk == 0)
        return lm_fail(err, LM_ERR_ARG, "chunk must be positive");
    if (!chunked && p->dtype == LM_KV_BF16)
        return lm_fail(err, LM_ERR_ARG, "bf16 SSD inputs need the chunked form (the recurrent "
                       "scan is float32 only)");
    if (chunked)
        return ssd_chunked(ops, p, chunk, err);
    /* recurrent: the linear-attention kernel, one token per "chunk" */
    lm_linear_head_fn *const kernel = ops->linear_recurrent_f32;
    chunk = 1;
    const size_t B = p->batch, L = p->length, H = p->heads, P = p->head_dim;
    const size_t G = p->groups, N = p->state;
    /* Time is walked in blocks of T tokens (a whole number of chunks, so the chunk
     * boundaries are those of one call over the sequence): the per-thread workspace stays
     * small and cache-resident instead of O(L) (an O(L) workspace cost a page fault per
     * 4 KiB on every call). Time blocks are the outer loop and the (batch row, head) items
     * the inner one, each item's state kept (transposed) in `states` and updated in place
     * by the kernel: the B and C rows of a block are read from memory once and then from
     * cache by every head of the group, and the x and y rows of a token (all heads side by
     * side) are walked head after head. */
    const size_t T0 = chunk >= 256 ? chunk : chunk * (256 / chunk);
    const size_t T = T0 < L ? T0 : L;
    lm_linear_f32 shape = {.heads = 1, .length = T, .d_key = N, .d_value = P};
    const size_t kernel_work = lm_linear_chunk_work_floats(&shape, chunk);
    /* With one group, C and B rows are read in place (row stride N); with more groups the
     * head's group is gathered into q and k. */
    const bool gather_bc = G > 1;
    const size_t per_thread = (gather_bc ? 2 * round16(T * N) : 0) + 3 * round16(T * P) +
                              round16(T) + kernel_work;
    const size_t items = B * H, state_floats = round16(N * P);
    const int threads = items > 1 ? omp_get_max_threads() : 1;
    float *states = lm_alloc(items * state_floats * sizeof(float)); /* {B H, N, P} */
    float *work = lm_alloc((size_t)threads * per_thread * sizeof(float));
    if (work == NULL || states == NULL) {
        lm_free(work), lm_free(states);
        return lm_fail(err, LM_ERR_NOMEM, "no memory for the SSD workspace");
    }
#pragma omp parallel num_threads(threads)
    {
        float *qb = work + (size_t)omp_get_thread_num() * per_thread; /* {T, N}: C */
        float *kb = qb + (gather_bc ? round16(T * N) : 0);           /* {T, N}: B */
        float *v = kb + (gather_bc ? round16(T * N) : 0);            /* {T, P}: delta x */
        float *xb = v + round16(T * P);   /* {T, P}: x */
        float *yb = xb + round16(T * P);  /* {T, P} */
        float *lg = yb + round16(T * P);  /* {T}: delta A = log abar */
        float *kw = lg + round16(T);      /* the kernel's workspace */
        /* static schedules: a thread keeps the same items, their states in its cache */
#pragma omp for schedule(static)
        for (long long item = 0; item < (long long)items; item++) {
            init_state(p, (size_t)item, states + (size_t)item * state_floats);
        }
        for (size_t t0 = 0; t0 < L; t0 += T) {
            const size_t len = L - t0 < T ? L - t0 : T;
#pragma omp for schedule(static)
            for (long long item = 0; item < (long long)items; item++) {
                const size_t bi = (size_t)item / H, h = (size_t)item % H, g = h / (H / G);
                const float bias = p->dt_bias ? p->dt_bias[h] : 0.0f;
                const float skip = p->skip ? p->skip[h] : 0.0f;
                float *s = states + (size_t)item * state_floats; /* {N, P} */
                /* k_t = B_t, v_t = delta_t x_t: the state update delta_t B_t x_t^T and the
                 * scores C_t . (delta_s B_s) of the chunked form, with delta on the value
                 * side so that B and C are shared by the heads of a group */
                for (size_t t = 0; t < len; t++) {
                    const size_t row = bi * L + t0 + t;
                    const float delta = lm_softplus_f32(p->dt_raw[row * H + h] + bias);
                    lg[t] = delta * p->a[h];
                    const float *x = p->x + (row * H + h) * P; /* {P} */
                    float *xt = xb + t * P, *vt = v + t * P;
                    if (t + SSD_AHEAD < len) /* rows H P floats apart: one page each */
                        prefetch_row(x + SSD_AHEAD * H * P, P, false);
#pragma omp simd
                    for (size_t i = 0; i < P; i++) {
                        xt[i] = x[i];
                        vt[i] = delta * x[i];
                    }
                    if (gather_bc) {
                        memcpy(qb + t * N, p->c + (row * G + g) * N, N * sizeof(float));
                        memcpy(kb + t * N, p->b + (row * G + g) * N, N * sizeof(float));
                    }
                }
                const size_t row0 = bi * L + t0;
                lm_linear_f32 one = {.heads = 1, .length = len, .d_key = N, .d_value = P,
                                     .feature = LM_LINEAR_IDENTITY, .normalize = false,
                                     .gate_kind = LM_LINEAR_GATE_SCALAR,
                                     .q = gather_bc ? qb : p->c + row0 * N,
                                     .k = gather_bc ? kb : p->b + row0 * N, .v = v, .s0 = s,
                                     .y = yb, .s_final = s, .log_gate = lg};
                kernel(&one, 0, chunk, kw);
                for (size_t t = 0; t < len; t++) {
                    const size_t row = row0 + t;
                    const float *xt = xb + t * P, *yt = yb + t * P;
                    float *y = p->y + (row * H + h) * P; /* {P} */
                    if (t + SSD_AHEAD < len)
                        prefetch_row(y + SSD_AHEAD * H * P, P, true);
#pragma omp simd
                    for (size_t i = 0; i < P; i++)
                        y[i] = yt[i] + skip * xt[i];
                }
            }
        }
        if (p->h_final != NULL) {
#pragma omp for schedule(static)
            for (long long item = 0; item < (long long)items; item++) {
                store_state(p, (size_t)item, states + (size_t)item * state_floats);
            }
        }
    }
    lm_free(states);
    lm_free(work);
    return LM_OK;
}

lm_status lm_ssm_ssd_decode_f32(const lm_ssm_ssd_f32 *p, const lm_ops *ops, lm_error *err)
{
    lm_status status = lm_ops_check(ops, err);
    if (status == LM_OK)
        status = check(p, err);
    if (status != LM_OK)
        return status;
    lm_ssd_step_fn *const kernel = ops->ssd_step_f32;
    if (p->dtype == LM_KV_BF16)
        return lm_fail(err, LM_ERR_ARG, "bf16 SSD inputs need the chunked form (the decode "
                       "step is float32 only)");
    if (p->length != 1)
        return lm_fail(err, LM_ERR_ARG, "length must be 1 for a decode step, got %zu", p->length);
    if (p->h0 == NULL || p->h0 != p->h_final)
        return lm_fail(err, LM_ERR_ARG, "h0 and h_final must be the same state buffer "
                       "(the decode step updates it in place)");
    const size_t H = p->heads, P = p->head_dim, G = p->groups, N = p->state;
    const long long items = (long long)(p->batch * H);
#pragma omp parallel for schedule(static) if (p->batch * H * P * N >= 65536)
    for (long long item = 0; item < items; item++) {
        const size_t bi = (size_t)item / H, h = (size_t)item % H, g = h / (H / G);
        const float delta =
            lm_softplus_f32(p->dt_raw[bi * H + h] + (p->dt_bias ? p->dt_bias[h] : 0.0f));
        kernel(p->x + (bi * H + h) * P, p->b + (bi * G + g) * N, p->c + (bi * G + g) * N, P, N,
               expf(delta * p->a[h]), delta, p->skip ? p->skip[h] : 0.0f,
               p->h_final + (bi * H + h) * P * N, p->y + (bi * H + h) * P);
    }
    return LM_OK;
}

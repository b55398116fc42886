/* AVX-512 decode kernels (lm_attn_decode_{f32,f16,bf16}_avx512): the generic decode of
 * kernel_body.h rebuilt around 16-lane score vectors and software-pipelined over blocks.
 *
 * Per block of BK keys and per pass over GN query heads (4, 2 or 1) of the group:
 *   scores   16 accumulators acc[h, t] (GN heads x T = 16 / GN keys) run over d; one
 *            transpose-and-add tree turns them into ONE vector whose lane h T + t is
 *            q[h] . k[t] (45 shuffles and adds per 16 scores, instead of a horizontal sum
 *            per score);
 *   softmax  on those vectors: the running max and sum stay lane-wise (each head's value
 *            replicated over its T lanes), one vector exp per 16 weights, the accumulator
 *            is rescaled only for heads whose max grew in this block;
 *   P V      up to 2 heads x 8 d-vectors of accumulators over whole value rows (a 4-head
 *            pass makes two passes of 2 heads; the second reads the rows from L1).
 * Pipeline: the P V of block b - 1 runs interleaved with the scores of block b (8 keys of
 * each at a time), so the K and V streams are both consumed all the time instead of one
 * 16 KiB burst of K, then one of V; the weights of block b - 1 wait in the workspace.
 * Keys and values PF_ROWS rows ahead of their own stream are software-prefetched (every
 * cache line, into L1). At one thread the prefetch alone gave 1.3x the bandwidth of the
 * hardware prefetcher (8 to 96 rows, L2 hints, every second line, a second far L2 prefetch:
 * the same or worse); the pipeline another 1.1-1.15x (f32). f32 rows prefetch PF_ROWS_F32
 * = 8 keys ahead, the same 4 KiB as 16 keys of f16: against 16 keys (8 KiB), 6-8 % less
 * time on one thread and 2-14 % on two at n = 32,768 and 131,072 (alternating binaries,
 * 2026-12-01); 4 keys measured the same as 8. Single-head passes (MHA) keep 16. */
#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512DQ__)
#error "kernels/attention/avx512_decode.c needs -mavx512f -mavx512bw -mavx512dq"
#endif
#include "attention.h"

#include <float.h>
#include <immintrin.h>
#include <sleef.h>

/* experiments build this file again under another suffix */
#ifndef LM_DEC_SUFFIX
#define LM_DEC_SUFFIX avx512
#endif

#define DEC_INLINE static inline __attribute__((always_inline))
#define DEC_UNROLL _Pragma("GCC unroll 16")

enum { KV_F32 = 0, KV_F16 = 1, KV_BF16 = 2 };
enum {
    BK = 32,      /* keys per block */
    PF_ROWS = 16,    /* prefetch distance in keys (16-bit rows: 4 KiB at d = 128) */
    PF_ROWS_F32 = 8, /* f32 rows are twice as long: the same bytes ahead (GQA passes) */
};

/* 16 stored elements of row `row` (width d) from column c, widened to float. */
DEC_INLINE __m512 load16(const void *base, size_t row, size_t d, size_t c, int dt)
{
    if (dt == KV_F32)
        return _mm512_loadu_ps((const float *)base + row * d + c);
    const __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)((const uint16_t *)base +
                                                                          row * d + c));
    if (dt == KV_F16)
        return _mm512_cvtph_ps(h); /* binary16 -> float */
    /* bfloat16 -> float: zero-extend to 32 bits, into the high half */
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Lane i of the result = sum of the lanes of x[i], i < 16: a 4-level shuffle tree. The
 * inputs go in 4 x 4-transposed order, so the tree's own order lands lane i on x[i]. */
DEC_INLINE __m512 reduce16(const __m512 *x)
{
#define TR(j) x[((j) % 4) * 4 + (j) / 4]
    __m512 r[8], u[4], p[2];
    DEC_UNROLL
    for (int i = 0; i < 8; i++) { /* [a: 8 lanes | b: 8 lanes] */
        __m512 a = TR(2 * i), b = TR(2 * i + 1);
        r[i] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
    }
#undef TR
    DEC_UNROLL
    for (int i = 0; i < 4; i++) /* 128-bit chunk k: 4 lanes of input 4i + k */
        u[i] = _mm512_add_ps(_mm512_shuffle_f32x4(r[2 * i], r[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(r[2 * i], r[2 * i + 1], 0xDD));
    DEC_UNROLL
    for (int i = 0; i < 2; i++) /* chunk k: [2 lanes of 8i + k | 2 lanes of 8i + 4 + k] */
        p[i] = _mm512_add_ps(_mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0x44),
                             _mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0xEE));
    /* chunk k: [k, 4 + k, 8 + k, 12 + k] of the tree order = lanes 4k .. 4k + 3 */
    return _mm512_add_ps(_mm512_shuffle_ps(p[0], p[1], 0x88), _mm512_shuffle_ps(p[0], p[1], 0xDD));
}

/* Lane-wise max over each aligned group of t lanes (t = 4, 8 or 16), replicated. */
DEC_INLINE __m512 group_max(__m512 x, int t)
{
    x = _mm512_max_ps(x, _mm512_permute_ps(x, 0xB1)); /* swap neighbours */
    x = _mm512_max_ps(x, _mm512_permute_ps(x, 0x4E)); /* swap pairs */
    if (t >= 8)
        x = _mm512_max_ps(x, _mm512_shuffle_f32x4(x, x, 0xB1)); /* swap 128-bit chunks */
    if (t >= 16)
        x = _mm512_max_ps(x, _mm512_shuffle_f32x4(x, x, 0x4E)); /* swap 256-bit halves */
    return x;
}

DEC_INLINE void prefetch_rows(const void *base, size_t row0, size_t rows, size_t row_bytes)
{
    const char *p = (const char *)base + row0 * row_bytes;
    for (size_t off = 0; off < rows * row_bytes; off += 64) /* one per cache line */
        _mm_prefetch(p + off, _MM_HINT_T0);
}

/* Score vector of keys j0 + t0 + [0, T) (T = 16 / gn) for heads q {gn, d}: lane h T + t =
 * scale q[h] . k[j0 + t0 + t]; keys at or past cnt read row j0 + cnt - 1 and score -inf. */
DEC_INLINE __m512 score_group(const float *restrict q, const void *k, size_t j0, size_t t0,
                              size_t cnt, size_t d, int gn, int dt, float scale)
{
    const int t_per = 16 / gn;
    size_t rows[16];
    DEC_UNROLL
    for (int t = 0; t < t_per; t++)
        rows[t] = j0 + (t0 + (size_t)t < cnt ? t0 + (size_t)t : cnt - 1);
    __m512 acc[16];
    DEC_UNROLL
    for (int i = 0; i < 16; i++)
        acc[i] = _mm512_setzero_ps();
    for (size_t c = 0; c < d; c += 16) {
        __m512 qv[4];
        DEC_UNROLL
        for (int h = 0; h < gn; h++)
            qv[h] = _mm512_loadu_ps(q + (size_t)h * d + c);
        DEC_UNROLL
        for (int t = 0; t < t_per; t++) {
            const __m512 kv = load16(k, rows[t], d, c, dt); /* read once for GN heads */
            DEC_UNROLL
            for (int h = 0; h < gn; h++)
                acc[h * t_per + t] = _mm512_fmadd_ps(qv[h], kv, acc[h * t_per + t]);
        }
    }
    __m512 x = _mm512_mul_ps(reduce16(acc), _mm512_set1_ps(scale));
    if (t0 + (size_t)t_per > cnt) { /* lanes of keys past cnt weigh exactly 0 */
        const __m512i lane_t = _mm512_and_si512(
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            _mm512_set1_epi32(t_per - 1));
        const __mmask16 dead = _mm512_cmpge_epi32_mask(
            lane_t, _mm512_set1_epi32(t0 < cnt ? (int)(cnt - t0) : 0));
        x = _mm512_mask_mov_ps(x, dead, _mm512_set1_ps(-INFINITY));
    }
    return x;
}

/* Heads h0 .. h0 + hn (hn = 1 or 2) of a pass of gn heads: accs rows {d} += sum over keys
 * t in [ta, tb) of w[t, h] v[j0 + t], whole rows (8 d-vectors, then single ones), so a
 * value row is read in address order. p: weights, key t of head h at vector t / T, lane
 * h T + t % T. */
DEC_INLINE void pv_heads(const float *restrict p, const void *v, size_t j0, size_t ta,
                         size_t tb, size_t d, int gn, int h0, int hn, float *restrict accs,
                         int dt)
{
    const size_t t_per = (size_t)(16 / gn);
    size_t c0 = 0;
    for (; c0 + 128 <= d; c0 += 128) {
        __m512 acc[2][8];
        DEC_UNROLL
        for (int h = 0; h < hn; h++)
            DEC_UNROLL
            for (int e = 0; e < 8; e++)
                acc[h][e] = _mm512_loadu_ps(accs + (size_t)(h0 + h) * d + c0 + (size_t)e * 16);
        for (size_t t = ta; t < tb; t++) {
            __m512 vv[8];
            DEC_UNROLL
            for (int e = 0; e < 8; e++)
                vv[e] = load16(v, j0 + t, d, c0 + (size_t)e * 16, dt);
            const float *pt = p + t / t_per * 16 + t % t_per;
            DEC_UNROLL
            for (int h = 0; h < hn; h++) {
                const __m512 w = _mm512_set1_ps(pt[(size_t)(h0 + h) * t_per]);
                DEC_UNROLL
                for (int e = 0; e < 8; e++)
                    acc[h][e] = _mm512_fmadd_ps(w, vv[e], acc[h][e]);
            }
        }
        DEC_UNROLL
        for (int h = 0; h < hn; h++)
            DEC_UNROLL
            for (int e = 0; e < 8; e++)
                _mm512_storeu_ps(accs + (size_t)(h0 + h) * d + c0 + (size_t)e * 16, acc[h][e]);
    }
    for (; c0 < d; c0 += 16) { /* d not a multiple of 128: one d-vector at a time */
        __m512 acc[2];
        DEC_UNROLL
        for (int h = 0; h < hn; h++)
            acc[h] = _mm512_loadu_ps(accs + (size_t)(h0 + h) * d + c0);
        for (size_t t = ta; t < tb; t++) {
            const __m512 vv = load16(v, j0 + t, d, c0, dt);
            const float *pt = p + t / t_per * 16 + t % t_per;
            DEC_UNROLL
            for (int h = 0; h < hn; h++)
                acc[h] = _mm512_fmadd_ps(_mm512_set1_ps(pt[(size_t)(h0 + h) * t_per]), vv,
                                         acc[h]);
        }
        DEC_UNROLL
        for (int h = 0; h < hn; h++)
            _mm512_storeu_ps(accs + (size_t)(h0 + h) * d + c0, acc[h]);
    }
}

/* 4 heads, columns [c0, c0 + 64): accs rows += sum over keys t in [ta, tb) of w[t, h]
 * v[j0 + t], every value vector widened once for the 4 heads. */
DEC_INLINE void pv_quarter(const float *restrict p, const void *v, size_t j0, size_t ta,
                           size_t tb, size_t d, size_t c0, float *restrict accs, int dt)
{
    __m512 acc[4][4];
    DEC_UNROLL
    for (int h = 0; h < 4; h++)
        DEC_UNROLL
        for (int e = 0; e < 4; e++)
            acc[h][e] = _mm512_loadu_ps(accs + (size_t)h * d + c0 + (size_t)e * 16);
    for (size_t t = ta; t < tb; t++) {
        __m512 vv[4];
        DEC_UNROLL
        for (int e = 0; e < 4; e++)
            vv[e] = load16(v, j0 + t, d, c0 + (size_t)e * 16, dt);
        const float *pt = p + t / 4 * 16 + t % 4;
        DEC_UNROLL
        for (int h = 0; h < 4; h++) {
            const __m512 w = _mm512_set1_ps(pt[h * 4]);
            DEC_UNROLL
            for (int e = 0; e < 4; e++)
                acc[h][e] = _mm512_fmadd_ps(w, vv[e], acc[h][e]);
        }
    }
    DEC_UNROLL
    for (int h = 0; h < 4; h++)
        DEC_UNROLL
        for (int e = 0; e < 4; e++)
            _mm512_storeu_ps(accs + (size_t)h * d + c0 + (size_t)e * 16, acc[h][e]);
}

/* accs {gn, d} += sum over keys t in [ta, tb) of w[t, h] v[j0 + t]. */
DEC_INLINE void pv_range(const float *restrict p, const void *v, size_t j0, size_t ta,
                         size_t tb, size_t d, int gn, float *restrict accs, int dt)
{
    if (gn == 4 && dt != KV_F32 && d % 64 == 0) {
        /* 16-bit rows: widen each value once (4 heads x 4 d-vectors per pass) rather than
         * twice (2 + 2 heads over whole rows) */
        for (size_t c0 = 0; c0 < d; c0 += 64)
            pv_quarter(p, v, j0, ta, tb, d, c0, accs, dt);
    } else if (gn == 4) {
        pv_heads(p, v, j0, ta, tb, d, 4, 0, 2, accs, dt);
        pv_heads(p, v, j0, ta, tb, d, 4, 2, 2, accs, dt); /* the same rows, now in L1 */
    } else if (gn == 2) {
        pv_heads(p, v, j0, ta, tb, d, 2, 0, 2, accs, dt);
    } else {
        pv_heads(p, v, j0, ta, tb, d, 1, 0, 1, accs, dt);
    }
}

/* Online-softmax update after the scores s[0, BK / T) of one block: ms, ls (16 lanes each)
 * hold the running max and sum of this pass's heads; the block's weights e^(s - m_new) go
 * to pw {BK / T vectors}, l += their sum, and accs {gn, d} and l are rescaled for the heads
 * whose max grew. */
DEC_INLINE void softmax_block(const __m512 *s, size_t d, int gn, float *restrict ms,
                              float *restrict ls, float *restrict accs, float *restrict pw)
{
    const int t_per = 16 / gn, vecs = BK / t_per;
    const __m512 mold = _mm512_loadu_ps(ms);
    __m512 mx = s[0];
    DEC_UNROLL
    for (int i = 1; i < vecs; i++)
        mx = _mm512_max_ps(mx, s[i]);
    const __m512 mnew = _mm512_max_ps(mold, group_max(mx, t_per));
    __m512 sum = _mm512_setzero_ps();
    DEC_UNROLL
    for (int i = 0; i < vecs; i++) {
        const __m512 w = Sleef_expf16_u10avx512f(_mm512_sub_ps(s[i], mnew)); /* e^(s - m) */
        _mm512_storeu_ps(pw + i * 16, w);
        sum = _mm512_add_ps(sum, w);
    }
    __m512 lvec = _mm512_loadu_ps(ls);
    const __mmask16 grew = _mm512_cmp_ps_mask(mnew, mold, _CMP_GT_OQ);
    if (grew) { /* l, acc *= e^(m_old - m_new) for the heads whose max grew */
        const __m512 alpha = Sleef_expf16_u10avx512f(_mm512_sub_ps(mold, mnew));
        lvec = _mm512_mul_ps(lvec, alpha);
        for (int h = 0; h < gn; h++) {
            if (!((grew >> (h * t_per)) & 1u))
                continue;
            const __m512 a = _mm512_permutexvar_ps(_mm512_set1_epi32(h * t_per), alpha);
            float *row = accs + (size_t)h * d;
            for (size_t c = 0; c < d; c += 16)
                _mm512_storeu_ps(row + c, _mm512_mul_ps(_mm512_loadu_ps(row + c), a));
        }
    }
    _mm512_storeu_ps(ls, _mm512_add_ps(lvec, sum));
    _mm512_storeu_ps(ms, mnew);
}

enum { PV_KEYS = 8 }; /* keys of the previous block's P V per step of the pipeline */

/* One pass (heads q {gn, d}) over block j0 (cnt keys): its scores, interleaved with the P V
 * of the previous, full block j0 - BK (weights in pw) when prev, then the softmax update,
 * which leaves this block's weights in pw. pf: prefetch K and V rows PF_ROWS ahead of
 * their streams (the first pass of a block only). */
DEC_INLINE void pipe_step(const float *restrict q, const void *k, const void *v, size_t j0,
                          size_t cnt, bool prev, size_t d, int gn, float scale,
                          float *restrict ms, float *restrict ls, float *restrict accs,
                          float *restrict pw, int dt, bool pf)
{
    const int t_per = 16 / gn, vecs = BK / t_per;
    const int step = PV_KEYS < t_per ? 1 : PV_KEYS / t_per; /* score vectors per step */
    const size_t row_bytes = d * (dt == KV_F32 ? 4 : 2);
    const size_t vrow = prev ? j0 - BK : 0; /* first row of the value stream's block */
    __m512 s[8];
    for (int vi = 0; vi < vecs; vi += step) {
        DEC_UNROLL
        for (int u = 0; u < step; u++) {
            const size_t t0 = (size_t)(vi + u) * (size_t)t_per;
            if (pf) { /* addresses past the range are harmless: a prefetch never faults */
                /* f32: at least one score vector's keys ahead (MHA passes take 16) */
                const size_t ahead = dt != KV_F32 ? PF_ROWS
                                     : t_per > PF_ROWS_F32 ? (size_t)t_per : PF_ROWS_F32;
                prefetch_rows(k, j0 + t0 + ahead, (size_t)t_per, row_bytes);
                prefetch_rows(v, vrow + t0 + ahead, (size_t)t_per, row_bytes);
            }
            s[vi + u] = score_group(q, k, j0, t0, cnt, d, gn, dt, scale);
        }
        if (prev)
            pv_range(pw, v, j0 - BK, (size_t)vi * (size_t)t_per,
                     (size_t)(vi + step) * (size_t)t_per, d, gn, accs, dt);
    }
    softmax_block(s, d, gn, ms, ls, accs, pw);
}

/* Heads per pass from g0 on: 4 while 4 remain, then 2, then 1. */
static inline int pass_heads(size_t group, size_t g0)
{
    return group - g0 >= 4 ? 4 : group - g0 >= 2 ? 2 : 1;
}

/* The pass of heads g0 .. g0 + gn keeps its state in workspace floats
 * [g0 LM_ATTN_DECODE_BLOCK, (g0 + gn) LM_ATTN_DECODE_BLOCK): 16 max lanes, 16 sum lanes,
 * then the BK gn weights of the block whose P V is pending. */
_Static_assert(32 + BK <= LM_ATTN_DECODE_BLOCK, "workspace: state and weights of a pass");

DEC_INLINE void decode_all(const float *q, const void *k, const void *v, size_t n, size_t d,
                           size_t group, float scale, float *m, float *l, float *acc,
                           float *workspace, int dt)
{
    for (size_t g0 = 0; g0 < group; g0 += (size_t)pass_heads(group, g0))
        for (int i = 0; i < 16; i++) {
            workspace[g0 * LM_ATTN_DECODE_BLOCK + (size_t)i] = -FLT_MAX;
            workspace[g0 * LM_ATTN_DECODE_BLOCK + 16 + (size_t)i] = 0.0f;
        }
    memset(acc, 0, group * d * sizeof(float));
    for (size_t j0 = 0; j0 < n; j0 += BK) {
        const size_t cnt = n - j0 < BK ? n - j0 : BK;
        for (size_t g0 = 0; g0 < group;) {
            const int gn = pass_heads(group, g0);
            float *ms = workspace + g0 * LM_ATTN_DECODE_BLOCK;
            const float *qg = q + g0 * d;
            float *ag = acc + g0 * d;
            const bool prev = j0 > 0, pf = g0 == 0;
            if (gn == 4)
                pipe_step(qg, k, v, j0, cnt, prev, d, 4, scale, ms, ms + 16, ag, ms + 32, dt, pf);
            else if (gn == 2)
                pipe_step(qg, k, v, j0, cnt, prev, d, 2, scale, ms, ms + 16, ag, ms + 32, dt, pf);
            else
                pipe_step(qg, k, v, j0, cnt, prev, d, 1, scale, ms, ms + 16, ag, ms + 32, dt, pf);
            g0 += (size_t)gn;
        }
    }
    const size_t jl = (n - 1) / BK * BK; /* the last block: its P V is still to do */
    for (size_t g0 = 0; g0 < group;) {
        const int gn = pass_heads(group, g0), t_per = 16 / gn;
        const float *ms = workspace + g0 * LM_ATTN_DECODE_BLOCK, *ls = ms + 16;
        pv_range(ms + 32, v, jl, 0, n - jl, d, gn, acc + g0 * d, dt);
        for (int h = 0; h < gn; h++) {
            float total = 0.0f;
            for (int t = 0; t < t_per; t++)
                total += ls[h * t_per + t];
            m[g0 + (size_t)h] = ms[h * t_per];
            l[g0 + (size_t)h] = total;
        }
        g0 += (size_t)gn;
    }
}

/* The contract of LM_ATTN_DECODE_DECLARE (attention.h): partial softmax state of `group`
 * query heads over one KV head's keys [0, n), K and V read once; d a multiple of 16. */
#define DEC_DEFINE_(dtype, isa) LM_ATTN_DECODE_DECLARE(dtype, isa)
#define DEC_DEFINE(dtype) DEC_DEFINE_(dtype, LM_DEC_SUFFIX)

/* head_dim 128 (the common case) gets a copy with d constant: unrolled d loops, shifts for
 * row offsets (about 15 % less time per key in cache) */
#define DEC_BODY(dt)                                                                           \
    do {                                                                                       \
        if (d == 128)                                                                          \
            decode_all(q, k, v, n, 128, group, scale, m, l, acc, workspace, dt);              \
        else                                                                                   \
            decode_all(q, k, v, n, d, group, scale, m, l, acc, workspace, dt);                \
    } while (0)

DEC_DEFINE(f32) { DEC_BODY(KV_F32); }
DEC_DEFINE(f16) { DEC_BODY(KV_F16); }
DEC_DEFINE(bf16) { DEC_BODY(KV_BF16); }

/* Quantized-cache decode written once over the SIMD mapping layer of
 * kernels/simd/<isa>.h (included first by the ISA file). Defines
 * lm_kvq_decode_<LM_ISA_SUFFIX>. The ISA file also defines the 32-bit word layer:
 *   kq_vi                      LM_W 32-bit words
 *   KQ_LOADW(p)                LM_W little-endian words from the bytes at p
 *   KQ_FIELD(x, shift, mask)   float((x >> shift) & mask) in every lane
 *   KQ_ROUND(x)                round half to even in every lane (float result)
 * The VNNI kernel (avx512vnni.c) defines KQ_VNNI 1 and KQ_STORE_Q8(p, x) (LM_W integral floats
 * -> int8) and takes only the query quantization from here; the float body below is for
 * every other path.
 *
 * Layout and semantics: kvquant.h ("Code layout", "Decode"). Per block of
 * LM_ATTN_DECODE_BLOCK tokens:
 *   scores   the int8 query against 16-token key tiles (16 scores per pass, no horizontal
 *            sums), then s_j = s^k_j s_q (dot - 2^(b-1) sum q8) or s_q,grp dot + q . lo^k_grp
 *   softmax  online, as the float cache's decode
 *   values   acc += sum_j (p_j s^v_j) u_j + (sum_j p_j lo^v_j) 1, codes widened to float in
 *            registers from value groups (dims in lanes)
 * Nothing is dequantized to memory; each code is read once for all query heads of the group. */
#ifndef LM_ISA_SUFFIX
#error "include kernels/simd/<isa>.h before kvquant_body.h"
#endif
#ifndef KQ_LOADW
#error "define the word layer (kq_vi, KQ_LOADW, KQ_FIELD) before kvquant_body.h"
#endif
#ifndef KQ_VNNI
#define KQ_VNNI 0
#endif
#ifndef KQ_ROUND
#error "define KQ_ROUND (round half to even in every lane) before kvquant_body.h"
#endif

#include "../simd/online_softmax.h"

#include <float.h>
#include <math.h>
#include <string.h>

#define KQ_CAT_(a, b) a##_##b
#define KQ_CAT(a, b) KQ_CAT_(a, b)
#define KQ_INLINE static inline __attribute__((always_inline))
#ifndef LM_UNROLL
#define LM_UNROLL _Pragma("GCC unroll 16")
#endif

enum { KQ_BLOCK = LM_ATTN_DECODE_BLOCK, KQ_TILE = LM_KVQ_TILE };
_Static_assert(KQ_BLOCK % LM_KVQ_KIVI_GROUP_MAX == 0 && LM_KVQ_KIVI_GROUP % KQ_TILE == 0,
               "blocks hold whole KIVI groups (32 or 64 tokens), groups whole key tiles");
_Static_assert(KQ_TILE % LM_W == 0, "a key tile is whole vectors of tokens");
_Static_assert(64 % KQ_BLOCK == 0, "per-token parameters are padded to 64 tokens (cache.c)");

/* bit offset of element m of a 32-bit word of `bits`-bit codes (kvquant.h) */
KQ_INLINE unsigned kq_bit(int bits, int m) { return 8u * (unsigned)(m % 4) + (unsigned)(bits * (m / 4)); }

/* The decode's query quantization (kvquant.h): s_q = float32(max|x| / 127),
 * r = float32(127 / max|x|) (0 for x = 0), q8 = round_half_even(float32(x r)), 0 beyond d;
 * |x r| <= 127 (1 + 2^-24) rounds to at most 127, so no clipping is needed. x may alias qf.
 * qf {padded} gets q8 as floats, qb {padded} as bytes (VNNI kernel only); returns s_q,
 * *sum8 = sum q8 (exact: integers). */
KQ_INLINE float kq_quantize_query(const float *x, size_t d, size_t padded, float *qf,
                                  int8_t *qb, float *sum8)
{
    LM_V mx = V_ZERO();
    for (size_t c = 0; c < d; c += LM_W) {
        LM_V v = V_LOADU(x + c);
        mx = V_MAX(mx, V_MAX(v, V_SUB(V_ZERO(), v))); /* |x| */
    }
    const float amax = V_HMAX(mx);
    const float sq = (float)((double)amax / 127.0);
    const LM_V r = V_SET1(amax > 0.0f ? (float)(127.0 / (double)amax) : 0.0f);
    LM_V sum = V_ZERO();
    for (size_t c = 0; c < d; c += LM_W) {
        LM_V code = KQ_ROUND(V_MUL(V_LOADU(x + c), r));
        V_STOREU(qf + c, code);
        sum = V_ADD(sum, code);
#if KQ_VNNI
        KQ_STORE_Q8(qb + c, code);
#endif
    }
    for (size_t c = d; c < padded; c++) {
        qf[c] = 0.0f;
        qb[c] = 0;
    }
    *sum8 = V_HSUM(sum);
    (void)qb;
    return sq;
}

#if !KQ_VNNI /* the float-arithmetic decode */
/* s[g, s_off + t] = q8_g . u_t for the 16 tokens of one key tile, heads [g0, g0 + gn):
 * float arithmetic on integers (exact while the dot stays below 2^24: d <= 512). */
KQ_INLINE void kq_tile_dots(const uint8_t *tile, size_t rows, int bits, const float *qf,
                            const int8_t *qb, size_t padded, size_t g0, int gn, float *s,
                            size_t s_off)
{
    (void)qb;
    const int per = 32 / bits;
    const unsigned mask = (1u << bits) - 1u;
    LM_V acc[DEC_GB][KQ_TILE / LM_W];
    LM_UNROLL
    for (int b = 0; b < gn; b++)
        LM_UNROLL
        for (int u = 0; u < KQ_TILE / LM_W; u++)
            acc[b][u] = V_ZERO();
    for (size_t r = 0; r < rows; r++) {
        const uint8_t *row = tile + r * KQ_TILE * 4; /* 16 tokens x `per` dims */
        LM_UNROLL
        for (int u = 0; u < KQ_TILE / LM_W; u++) {
            kq_vi x = KQ_LOADW(row + (size_t)u * LM_W * 4);
            LM_UNROLL
            for (int m = 0; m < per; m++) {
                LM_V f = KQ_FIELD(x, kq_bit(bits, m), mask); /* dim r per + m of LM_W tokens */
                LM_UNROLL
                for (int b = 0; b < gn; b++)
                    acc[b][u] = V_FMA(V_SET1(qf[(g0 + (size_t)b) * padded + r * (size_t)per +
                                                (size_t)m]),
                                      f, acc[b][u]);
            }
        }
    }
    LM_UNROLL
    for (int b = 0; b < gn; b++)
        LM_UNROLL
        for (int u = 0; u < KQ_TILE / LM_W; u++)
            V_STOREU(s + (g0 + (size_t)b) * KQ_BLOCK + s_off + (size_t)u * LM_W, acc[b][u]);
}

/* dots of every query head against tiles [t0, t0 + 16 tiles) of a block, into s at s_off */
KQ_INLINE void kq_dots_all(const lm_kvq_view *view, size_t t0, size_t tn, const float *qf,
                           const int8_t *qb, size_t padded, size_t group, float *s,
                           size_t s_off, int bits)
{
    const size_t rows = view->key_rows;
    for (size_t t = 0; t < tn; t += KQ_TILE) {
        const uint8_t *tile = view->k_codes + (t0 + t) * rows * 4; /* (t0 + t) / 16 tiles */
        size_t g0 = 0;
        for (; g0 + DEC_GB <= group; g0 += DEC_GB)
            kq_tile_dots(tile, rows, bits, qf, qb, padded, g0, DEC_GB, s, s_off + t);
        for (; g0 < group; g0++)
            kq_tile_dots(tile, rows, bits, qf, qb, padded, g0, 1, s, s_off + t);
    }
}

/* acc[g, c0 ..) += sum_jj w[g, jj] u_{b0 + jj}[c0 ..) over cv vectors, from value groups */
KQ_INLINE void kq_pv(const uint8_t *codes, size_t d, size_t b0, size_t cnt, const float *w,
                     size_t g0, int gn, size_t c0, int cv, float *accs, int bits)
{
    const int per = 32 / bits;
    const unsigned mask = (1u << bits) - 1u;
    LM_V acc[DEC_GB][DEC_CV];
    LM_UNROLL
    for (int b = 0; b < gn; b++)
        LM_UNROLL
        for (int e = 0; e < cv; e++)
            acc[b][e] = V_LOADU(accs + (g0 + (size_t)b) * d + c0 + (size_t)e * LM_W);
    for (size_t t = b0; t < b0 + cnt; t += (size_t)per) { /* b0 is a multiple of per */
        const uint8_t *grp = codes + t / (size_t)per * d * 4;
        kq_vi x[DEC_CV];
        LM_UNROLL
        for (int e = 0; e < cv; e++)
            x[e] = KQ_LOADW(grp + (c0 + (size_t)e * LM_W) * 4);
        LM_UNROLL
        for (int m = 0; m < per; m++) { /* token t + m; weights past cnt are 0 */
            LM_V f[DEC_CV];
            LM_UNROLL
            for (int e = 0; e < cv; e++)
                f[e] = KQ_FIELD(x[e], kq_bit(bits, m), mask);
            LM_UNROLL
            for (int b = 0; b < gn; b++) {
                LM_V wv = V_BCAST(w + (g0 + (size_t)b) * KQ_BLOCK + (t - b0) + (size_t)m);
                LM_UNROLL
                for (int e = 0; e < cv; e++)
                    acc[b][e] = V_FMA(wv, f[e], acc[b][e]);
            }
        }
    }
    LM_UNROLL
    for (int b = 0; b < gn; b++)
        LM_UNROLL
        for (int e = 0; e < cv; e++)
            V_STOREU(accs + (g0 + (size_t)b) * d + c0 + (size_t)e * LM_W, acc[b][e]);
}

KQ_INLINE void kq_pv_all(const uint8_t *codes, size_t d, size_t b0, size_t cnt,
                         const float *w, size_t group, float *accs, int bits)
{
    size_t g0 = 0;
    for (; g0 + DEC_GB <= group; g0 += DEC_GB) {
        size_t c0 = 0;
        for (; c0 + DEC_CV * LM_W <= d; c0 += DEC_CV * LM_W)
            kq_pv(codes, d, b0, cnt, w, g0, DEC_GB, c0, DEC_CV, accs, bits);
        for (; c0 < d; c0 += LM_W)
            kq_pv(codes, d, b0, cnt, w, g0, DEC_GB, c0, 1, accs, bits);
    }
    for (; g0 < group; g0++)
        for (size_t c0 = 0; c0 < d; c0 += LM_W)
            kq_pv(codes, d, b0, cnt, w, g0, 1, c0, 1, accs, bits);
}

#ifndef KQ_PREFETCH_BYTES
#define KQ_PREFETCH_BYTES 32768 /* per code stream, as the f16 decode (4 blocks of 32 keys) */
#endif
/* Software prefetch of block b's codes and per-token parameters (hardware prefetchers
 * follow one stream per page well; here four streams alternate). */
KQ_INLINE void kq_prefetch_block(const lm_kvq_view *view, size_t b, size_t bytes,
                                 int per_channel)
{
    const uint8_t *k = view->k_codes + b * view->key_rows * 4;
    const uint8_t *v = view->v_codes + b * view->key_rows * 4; /* same bytes per token */
    for (size_t off = 0; off < bytes; off += 64) {
        __builtin_prefetch(k + off);
        __builtin_prefetch(v + off);
    }
    for (size_t off = 0; off < KQ_BLOCK; off += 16) { /* 64-byte lines of floats */
        __builtin_prefetch(view->v_scale + b + off);
        __builtin_prefetch(view->v_lo + b + off);
        if (!per_channel)
            __builtin_prefetch(view->k_scale + b + off);
    }
    if (per_channel)
        for (size_t off = 0; off < 2 * view->head_dim * (KQ_BLOCK / view->group); off += 16)
            __builtin_prefetch(view->k_params + b / view->group * 2 * view->head_dim + off);
}

KQ_INLINE void kq_body(const lm_kvq_view *view, size_t j0, size_t j1, const float *q,
                       size_t group, float scale, float *m, float *l, float *accs,
                       float *workspace, int bits, int per_channel)
{
    const size_t d = view->head_dim, padded = (d + 15) / 16 * 16;
    float *s = workspace;              /* {group, KQ_BLOCK}: scores, then weights */
    float *qf = s + group * KQ_BLOCK;  /* {group, padded}: q8 as floats */
    int8_t *qb = (int8_t *)(void *)(qf + group * padded); /* {group, padded} q8 bytes */
    float *sq = qf + group * padded + group * padded / 4; /* {group}: s_q */
    float *sum8 = sq + group;          /* {group}: sum q8 */
    float *qlo = sum8 + group;         /* {group}: q . lo^k of the key group */
    const float offset = (float)(1u << (bits - 1));
    for (size_t g = 0; g < group; g++) {
        m[g] = -FLT_MAX;
        l[g] = 0.0f;
        if (!per_channel)
            sq[g] = kq_quantize_query(q + g * d, d, padded, qf + g * padded, qb + g * padded,
                                      &sum8[g]);
    }
    memset(accs, 0, group * d * sizeof(float));
    const LM_V vscale = V_SET1(scale);

    /* key tiles and value groups of a block are the same number of bytes */
    const size_t block_bytes = KQ_BLOCK * view->key_rows * 4;
    size_t ahead = KQ_PREFETCH_BYTES / block_bytes; /* blocks ahead: bytes, not tokens */
    ahead = ahead < 2 ? 2 : (ahead > 16 ? 16 : ahead);
    for (size_t b0 = j0; b0 < j1; b0 += KQ_BLOCK) {
        const size_t cnt = b0 + KQ_BLOCK < j1 ? KQ_BLOCK : j1 - b0;
        if (KQ_PREFETCH_BYTES > 0 && b0 + ahead * KQ_BLOCK < j1) /* both streams in flight */
            kq_prefetch_block(view, b0 + ahead * KQ_BLOCK, block_bytes, per_channel);
        if (per_channel) { /* one key group at a time: q * s^k quantized, q . lo^k */
            const size_t kg = view->group; /* 32 or 64 tokens */
            for (size_t t0 = 0; t0 < cnt; t0 += kg) {
                const float *kp = view->k_params + (b0 + t0) / kg * 2 * d; /* {2, d} */
                for (size_t g = 0; g < group; g++) {
                    LM_V lo_dot = V_ZERO();
                    float *x = qf + g * padded; /* q * s^k in place, then quantized */
                    for (size_t c = 0; c < d; c += LM_W) {
                        LM_V qv = V_LOADU(q + g * d + c);
                        V_STOREU(x + c, V_MUL(qv, V_LOADU(kp + c)));
                        lo_dot = V_FMA(qv, V_LOADU(kp + d + c), lo_dot);
                    }
                    qlo[g] = V_HSUM(lo_dot);
                    sq[g] = kq_quantize_query(x, d, padded, x, qb + g * padded, &sum8[g]);
                }
                const size_t tn = cnt - t0 < kg ? cnt - t0 : kg;
                kq_dots_all(view, b0 + t0, tn, qf, qb, padded, group, s, t0, bits);
                for (size_t g = 0; g < group; g++) { /* s_q dot + q . lo (tiles: whole VWs) */
                    const LM_V vq = V_SET1(sq[g]), vl = V_SET1(qlo[g]);
                    for (size_t jj = t0; jj < t0 + tn; jj += LM_W)
                        V_STOREU(s + g * KQ_BLOCK + jj, V_FMA(vq, V_LOADU(s + g * KQ_BLOCK + jj), vl));
                }
            }
        } else {
            kq_dots_all(view, b0, cnt, qf, qb, padded, group, s, 0, bits);
            const float *ks = view->k_scale + b0; /* {KQ_BLOCK} (0 past the cache) */
            for (size_t g = 0; g < group; g++) {
                const LM_V base = V_SET1(offset * sum8[g]); /* exact: integers below 2^24 */
                const LM_V vq = V_SET1(sq[g]);
                for (size_t jj = 0; jj < KQ_BLOCK; jj += LM_W) /* (dot - off sum q8) s_q s^k */
                    V_STOREU(s + g * KQ_BLOCK + jj, V_MUL(V_SUB(V_LOADU(s + g * KQ_BLOCK + jj), base),
                                                         V_MUL(vq, V_LOADU(ks + jj))));
            }
        }

        const float *vs = view->v_scale + b0, *vlo = view->v_lo + b0; /* {KQ_BLOCK} each */
        for (size_t g = 0; g < group; g++) {       /* online softmax, then weights p s^v */
            float *sg = s + g * KQ_BLOCK;
            const float al = lm_online_softmax_block(sg, cnt, KQ_BLOCK, vscale, &m[g], &l[g]);
            LM_V lo_acc = V_ZERO(); /* sum_j p_j lo^v_j, added to every channel */
            for (size_t jj = 0; jj < KQ_BLOCK; jj += LM_W) { /* p = 0 past cnt */
                LM_V p = V_LOADU(sg + jj);
                lo_acc = V_FMA(p, V_LOADU(vlo + jj), lo_acc);
                V_STOREU(sg + jj, V_MUL(p, V_LOADU(vs + jj)));
            }
            const float lo_sum = V_HSUM(lo_acc);
            const LM_V va = V_SET1(al), vlo_sum = V_SET1(lo_sum);
            for (size_t c = 0; c < d; c += LM_W)
                V_STOREU(accs + g * d + c, V_FMA(V_LOADU(accs + g * d + c), va, vlo_sum));
        }
        kq_pv_all(view->v_codes, d, b0, cnt, s, group, accs, bits);
    }
}

#define KQ_DEFINE(isa) LM_KVQ_DECODE_DECLARE(isa)

KQ_DEFINE(LM_ISA_SUFFIX)
{
    LM_KVQ_FOR_FORMAT(view->format, kq_body, view, j0, j1, q, group, scale, m, l, acc, workspace)
}
#endif /* !KQ_VNNI */

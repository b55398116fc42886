/* Quantized KV cache: codes equal the lesson's float64 quantizers (up to the float32 storage
 * of scales), decode on the codes equals its float64 oracle (lm_kvq_decode_f64_ref: the
 * decode's int8 query against the codes) on every path and kernel, and bad input gets a
 * status. */

#include "longmix.h"
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#define ATOL 2e-5
#define RTOL 2e-5

static const char *const format_names[LM_KVQ_FORMAT_COUNT] = {"int8",  "int4",     "kivi4",
                                                               "kivi2", "kivi4g64", "kivi2g64"};

typedef struct filled {
    lm_kvq_cache cache;
    float *k, *v; /* {n, kv_heads, d} as appended */
} filled;

static filled fill_cache(lm_kvq_format format, size_t n, size_t kv_heads, size_t d,
                         size_t recent, uint64_t seed)
{
    filled f;
    lm_error err;
    size_t capacity = (n + 63) / 64 * 64; /* a multiple of every format's group */
    cr_assert_eq(lm_kvq_cache_init(&f.cache, format, kv_heads, d, capacity, recent, &err), LM_OK,
                 "%s", err.message);
    f.k = malloc(n * kv_heads * d * sizeof *f.k);
    f.v = malloc(n * kv_heads * d * sizeof *f.v);
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    for (size_t i = 0; i < n * kv_heads * d; i++)
        f.k[i] = (float)lm_rng_standard_normal(&rng);
    for (size_t i = 0; i < n * kv_heads * d; i++)
        f.v[i] = (float)lm_rng_standard_normal(&rng);
    for (size_t t = 0; t < n; t++)
        cr_assert_eq(lm_kvq_cache_append(&f.cache, f.k + t * kv_heads * d,
                                         f.v + t * kv_heads * d, &err),
                     LM_OK, "%s", err.message);
    return f;
}

static void free_filled(filled *f)
{
    lm_kvq_cache_free(&f->cache);
    free(f->k);
    free(f->v);
}

Test(kvquant, codes_match_the_lesson_quantizers)
{
    enum { n = 100, kv_heads = 2, d = 64, recent = 8 };
    for (int fmt = 0; fmt < LM_KVQ_FORMAT_COUNT; fmt++) {
        filled f = fill_cache((lm_kvq_format)fmt, n, kv_heads, d, recent, 70 + (uint64_t)fmt);
        const size_t nq = f.cache.quantized;
        cr_assert_leq(n - nq, recent + f.cache.group, "at most recent + group float rows");
        cr_assert_geq(n - nq, recent, "the newest `recent` tokens stay float32");
        double *kd = malloc(kv_heads * n * d * sizeof *kd), *vd = malloc(kv_heads * n * d * sizeof *vd);
        cr_assert_eq(lm_kvq_cache_dequantize(&f.cache, kd, vd, NULL), LM_OK);
        double *x = malloc(n * d * sizeof *x), *want = malloc(n * d * sizeof *want);
        int32_t *codes = malloc(n * d * sizeof *codes);
        double *scales = malloc(n * sizeof *scales);
        const int bits = lm_kvq_bits((lm_kvq_format)fmt);
        double worst = 0.0;
        for (size_t g = 0; g < kv_heads; g++)
            for (int which = 0; which < 2; which++) {
                const float *src = which == 0 ? f.k : f.v;
                const double *got = (which == 0 ? kd : vd) + g * n * d;
                for (size_t t = 0; t < nq; t++)
                    for (size_t c = 0; c < d; c++)
                        x[t * d + c] = (double)src[(t * kv_heads + g) * d + c];
                if (fmt == LM_KVQ_INT8 || fmt == LM_KVQ_INT4) {
                    cr_assert_eq(lm_kvquant_quantize_rows_f64_ref(x, nq, d, bits, codes, scales, NULL), LM_OK);
                    cr_assert_eq(lm_kvquant_dequantize_rows_f64_ref(codes, scales, nq, d, want, NULL), LM_OK);
                } else if (which == 1) { /* KIVI values: per token */
                    cr_assert_eq(lm_kvquant_kivi_f64_ref(x, nq, d, bits, LM_KIVI_PER_TOKEN, want, NULL), LM_OK);
                } else { /* KIVI keys: per channel, one group of 32 or 64 tokens at a time */
                    const size_t kg = lm_kvq_group((lm_kvq_format)fmt);
                    cr_assert_eq(f.cache.group, kg);
                    for (size_t t0 = 0; t0 < nq; t0 += kg)
                        cr_assert_eq(lm_kvquant_kivi_f64_ref(x + t0 * d, kg, d, bits,
                                                             LM_KIVI_PER_CHANNEL, want + t0 * d, NULL),
                                     LM_OK);
                }
                /* scales and minima are stored as float32: the dequantized values may move
                 * by 2^-24 of (levels * s + |lo|) <= 2^-23 max|x| */
                for (size_t i = 0; i < nq * d; i++) {
                    double e = fabs(got[i] - want[i]) / (ldexp(1.0, -22) * (fabs(x[i]) + 8.0));
                    worst = e > worst ? e : worst;
                }
                for (size_t t = nq; t < n; t++) /* recent rows are exact */
                    for (size_t c = 0; c < d; c++)
                        cr_assert_eq(got[t * d + c], (double)src[(t * kv_heads + g) * d + c]);
            }
        cr_log_info("kvquant %s: %zu of %d tokens quantized, worst code/oracle ratio %.3f",
                    format_names[fmt], nq, n, worst);
        cr_assert(worst <= 1.0, "%s dequantized values differ from the oracle", format_names[fmt]);
        free(x), free(want), free(codes), free(scales), free(kd), free(vd);
        free_filled(&f);
    }
}

/* max of |fast - ref| / (ATOL + RTOL |ref| + extra) (extra {count}: NULL for none) */
static double violation(const float *fast, const double *ref, const double *extra, size_t count,
                        double *max_abs)
{
    double worst = 0.0;
    *max_abs = 0.0;
    for (size_t i = 0; i < count; i++) {
        double e = fabs((double)fast[i] - ref[i]);
        if (!(e == e))
            return (double)INFINITY;
        worst = fmax(worst, e / (ATOL + RTOL * fabs(ref[i]) + (extra ? extra[i] : 0.0)));
        *max_abs = fmax(*max_abs, e);
    }
    return worst;
}

typedef struct decode_shape {
    size_t n, heads, kv_heads, d, recent;
} decode_shape;

/* Every kernel this host runs: each path of the table (avx512vnni holds the VNNI kernel,
 * avx512 the float one). */
enum { KERNEL_SLOTS = LM_ISA_COUNT };
static bool kernel_ops(int slot, lm_ops *ops, const char **name)
{
    if (!lm_isa_available((lm_isa)slot))
        return false;
    *ops = *lm_ops_for((lm_isa)slot);
    *name = lm_isa_name((lm_isa)slot);
    return true;
}

Test(kvquant, decode_on_codes_matches_the_code_oracle_on_every_path)
{
    const decode_shape shapes[] = {
        {333, 8, 2, 64, 40},  /* GQA 4, a partial KIVI group in the float rows */
        {700, 32, 1, 128, 0}, /* GQA 32, no recent window, several chunks */
        {150, 2, 2, 128, 64}, /* GQA 1 */
        {45, 4, 1, 48, 5},    /* d 48: vector tails */
        {130, 6, 1, 256, 8},  /* GQA 6: a pass of 4 heads, then single heads; d > 128 */
        {40, 2, 1, 12, 3},    /* d 12: scalar fallback */
    };
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const decode_shape *sh = &shapes[si];
        for (int fmt = 0; fmt < LM_KVQ_FORMAT_COUNT; fmt++) {
            filled f = fill_cache((lm_kvq_format)fmt, sh->n, sh->kv_heads, sh->d, sh->recent,
                                  900 + si * 10 + (uint64_t)fmt);
            const size_t n = sh->n, d = sh->d;
            float *q = malloc(sh->heads * d * sizeof *q), *o = malloc(sh->heads * d * sizeof *o);
            double *qd = malloc(sh->heads * d * sizeof *qd), *od = malloc(sh->heads * d * sizeof *od);
            double *wb = malloc(sh->heads * d * sizeof *wb);
            lm_rng rng;
            lm_rng_seed(&rng, 5 + si);
            for (size_t i = 0; i < sh->heads * d; i++)
                qd[i] = (double)(q[i] = (float)lm_rng_standard_normal(&rng));
            lm_error err;
            cr_assert_eq(lm_kvq_decode_f64_ref(&f.cache, qd, sh->heads, od, wb, &err), LM_OK, "%s",
                         err.message);
            for (int slot = 0; slot < KERNEL_SLOTS; slot++) {
                lm_ops ops;
                const char *name;
                if (!kernel_ops(slot, &ops, &name))
                    continue;
                cr_assert_eq(lm_kvq_decode(&f.cache, q, sh->heads, o, &ops, &err), LM_OK, "%s",
                             err.message);
                /* the VNNI kernel rounds the block weights to 16 bits: its bound adds */
                const lm_ops *vnni_ops = lm_ops_for(LM_ISA_AVX512VNNI);
                const bool vnni = vnni_ops != NULL && ops.kvq_decode == vnni_ops->kvq_decode &&
                                  d % 16 == 0; /* avx512vnni and the paths derived from it */
                double max_abs, worst = violation(o, od, vnni ? wb : NULL, sh->heads * d, &max_abs);
                cr_log_info("kvq decode %s isa=%s n=%zu H=%zu Hkv=%zu d=%zu max|err|=%.2e",
                            format_names[fmt], name, n, sh->heads, sh->kv_heads, d, max_abs);
                cr_assert(worst <= 1.0, "%s isa %s shape %zu: max|err| %.3e", format_names[fmt],
                          name, si, max_abs);
            }
            free(q), free(o), free(qd), free(od), free(wb);
            free_filled(&f);
        }
    }
}

/* The format's own error: the decode output against the float32 cache, reported per
 * format (the figures docs/kernels.md quotes); bounds here are only sanity ceilings. */
Test(kvquant, output_error_against_the_float_cache_is_reported)
{
    enum { n = 512, heads = 8, kv_heads = 2, d = 128 };
    const double ceiling[LM_KVQ_FORMAT_COUNT] = {0.02, 0.3, 0.3, 0.8, 0.3, 0.8};
    for (int fmt = 0; fmt < LM_KVQ_FORMAT_COUNT; fmt++) {
        filled f = fill_cache((lm_kvq_format)fmt, n, kv_heads, d, 0, 4242);
        float *q = malloc(heads * d * sizeof *q), *o = malloc(heads * d * sizeof *o);
        float *o32 = malloc(heads * d * sizeof *o32);
        lm_rng rng;
        lm_rng_seed(&rng, 4343);
        for (size_t i = 0; i < heads * d; i++)
            q[i] = (float)lm_rng_standard_normal(&rng);
        /* the float32 cache in the decode layout {kv_heads, n, d} */
        float *kc = malloc(kv_heads * n * d * sizeof *kc), *vc = malloc(kv_heads * n * d * sizeof *vc);
        for (size_t g = 0; g < kv_heads; g++)
            for (size_t t = 0; t < n; t++)
                for (size_t c = 0; c < d; c++) {
                    kc[(g * n + t) * d + c] = f.k[(t * kv_heads + g) * d + c];
                    vc[(g * n + t) * d + c] = f.v[(t * kv_heads + g) * d + c];
                }
        size_t length = n;
        lm_attn_decode_args a = {q, kc, vc, &length, o32, 1, heads, kv_heads, d, n, LM_KV_F32};
        cr_assert_eq(lm_attn_decode(&a, lm_ops_active(), NULL), LM_OK);
        cr_assert_eq(lm_kvq_decode(&f.cache, q, heads, o, lm_ops_active(), NULL), LM_OK);
        double num = 0.0, den = 0.0;
        for (size_t i = 0; i < heads * d; i++) {
            num += ((double)o[i] - (double)o32[i]) * ((double)o[i] - (double)o32[i]);
            den += (double)o32[i] * (double)o32[i];
        }
        double rel = sqrt(num / den);
        cr_log_info("kvquant %s: relative output error vs f32 cache %.4f, %.1f bytes/token "
                    "(f16: %d)", format_names[fmt], rel, lm_kvq_bytes_per_token(&f.cache),
                    2 * kv_heads * d * 2);
        cr_assert(rel < ceiling[fmt], "%s error %.4f", format_names[fmt], rel);
        cr_assert_lt(lm_kvq_bytes_per_token(&f.cache), 2.0 * kv_heads * d * 2);
        free(q), free(o), free(o32), free(kc), free(vc);
        free_filled(&f);
    }
}

Test(kvquant, bad_input_gets_a_status)
{
    lm_kvq_cache c;
    lm_error err;
    cr_assert_eq(lm_kvq_cache_init(&c, (lm_kvq_format)9, 1, 16, 32, 0, &err), LM_ERR_ARG);
    cr_assert_eq(lm_kvq_cache_init(&c, LM_KVQ_INT8, 1, 6, 32, 0, &err), LM_ERR_SHAPE);
    cr_assert(strstr(err.message, "head_dim") != NULL, "%s", err.message);
    cr_assert_eq(lm_kvq_cache_init(&c, LM_KVQ_KIVI2, 1, 16, 40, 0, &err), LM_ERR_SHAPE);
    cr_assert_eq(lm_kvq_cache_init(&c, LM_KVQ_KIVI2_G64, 1, 16, 96, 0, &err), LM_ERR_SHAPE);
    cr_assert(strstr(err.message, "(64)") != NULL, "%s", err.message);
    cr_assert_eq(lm_kvq_cache_init(&c, LM_KVQ_INT4, 1, 16, 2, 0, &err), LM_OK);
    float q[48] = {0}, o[48], k[16] = {0};
    cr_assert_eq(lm_kvq_decode(&c, q, 1, o, lm_ops_active(), &err), LM_ERR_SHAPE, "n = 0");
    k[3] = NAN;
    cr_assert_eq(lm_kvq_cache_append(&c, k, k, &err), LM_ERR_NONFINITE);
    k[3] = 1.0f;
    cr_assert_eq(lm_kvq_cache_append(&c, k, k, &err), LM_OK);
    cr_assert_eq(lm_kvq_cache_append(&c, k, k, &err), LM_OK);
    cr_assert_eq(lm_kvq_cache_append(&c, k, k, &err), LM_ERR_SHAPE, "full");
    cr_assert_eq(lm_kvq_decode(&c, q, 3, o, lm_ops_active(), &err), LM_OK);
    q[0] = NAN;
    cr_assert_eq(lm_kvq_decode(&c, q, 1, o, lm_ops_active(), &err), LM_ERR_NONFINITE);
    lm_kvq_cache_free(&c);
    lm_kvq_format fmt;
    cr_assert_eq(lm_kvq_format_parse("kivi2", &fmt, &err), LM_OK);
    cr_assert_eq(fmt, LM_KVQ_KIVI2);
    cr_assert_eq(lm_kvq_format_parse("kivi4g64", &fmt, &err), LM_OK);
    cr_assert_eq(fmt, LM_KVQ_KIVI4_G64);
    cr_assert_eq(lm_kvq_format_parse("int3", &fmt, &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "kivi2g64") != NULL, "%s", err.message);
}

/* Key groups of 64 tokens keep half the per-channel key parameters: per token and KV head
 * at d = 128, 2-bit codes 2 x 32 bytes, value (s, lo) 8 bytes, key (s, lo) per channel
 * 8 x 128 / group bytes: 104 bytes with groups of 32, 88 with 64. */
Test(kvquant, key_groups_of_64_halve_the_key_parameters)
{
    const struct {
        lm_kvq_format format;
        size_t group;
        double bytes;
    } want[] = {{LM_KVQ_INT8, 1, 2 * 128 + 16}, {LM_KVQ_KIVI4, 32, 128 + 40},
                {LM_KVQ_KIVI2, 32, 104}, {LM_KVQ_KIVI4_G64, 64, 128 + 24},
                {LM_KVQ_KIVI2_G64, 64, 88}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        lm_kvq_cache c;
        cr_assert_eq(lm_kvq_cache_init(&c, want[i].format, 1, 128, 128, 0, NULL), LM_OK);
        cr_assert_eq(lm_kvq_group(want[i].format), want[i].group);
        cr_assert_eq(c.group, want[i].group);
        cr_assert_float_eq(lm_kvq_bytes_per_token(&c), want[i].bytes, 1e-12);
        lm_kvq_cache_free(&c);
    }
}

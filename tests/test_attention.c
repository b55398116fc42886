/* Attention family: every fast kernel on every path this machine runs, against the
 * float64 oracle; tile classification against brute force; statuses for bad input.
 *
 * Tolerance (see docs/kernels.md, "Attention"): |fast - ref| <= ATOL + RTOL |ref| with
 * float32 accumulation of d-term dot products and a SLEEF exp within 1 ulp; f16/bf16
 * caches are compared with the oracle run on the same rounded values. */

#include "longmix.h"
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#define ATOL 2e-5
#define RTOL 2e-5

static void fill_normal(lm_rng *rng, float *xf, double *xd, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        float x = (float)lm_rng_standard_normal(rng);
        xf[i] = x;
        xd[i] = (double)x;
    }
}

static double max_violation(const float *fast, const double *ref, size_t count, double *max_abs)
{
    double worst = 0.0; /* largest |err| / (ATOL + RTOL |ref|); <= 1 passes */
    *max_abs = 0.0;
    for (size_t i = 0; i < count; i++) {
        double e = fabs((double)fast[i] - ref[i]);
        if (!(e == e))
            return (double)INFINITY;
        double r = e / (ATOL + RTOL * fabs(ref[i]));
        worst = r > worst ? r : worst;
        *max_abs = e > *max_abs ? e : *max_abs;
    }
    return worst;
}

typedef struct prefill_case {
    size_t n, heads, kv_heads, d;
    lm_attn_mask mask;
    double scale_q; /* query magnitude: large values give peaked softmax rows */
} prefill_case;

static const prefill_case prefill_cases[] = {
    {77, 4, 1, 64, {LM_ATTN_MASK_CAUSAL, 0, 0, 0}, 1.0},          /* GQA 4, n odd */
    {100, 2, 2, 128, {LM_ATTN_MASK_WINDOW, 17, 0, 0}, 1.0},       /* MHA, d 128 */
    {130, 4, 2, 64, {LM_ATTN_MASK_WINDOW, 300, 0, 0}, 1.0},       /* w > n */
    {150, 2, 1, 64, {LM_ATTN_MASK_WINDOW_GLOBAL, 20, 3, 0}, 1.0}, /* window + 3 global */
    {140, 2, 2, 48, {LM_ATTN_MASK_STRIDED, 0, 0, 8}, 1.0},        /* d 48: vector tails */
    {33, 32, 1, 64, {LM_ATTN_MASK_CAUSAL, 0, 0, 0}, 1.0},         /* GQA 32 */
    {70, 2, 1, 40, {LM_ATTN_MASK_CAUSAL, 0, 0, 0}, 1.0},          /* d 40: scalar fallback */
    {200, 1, 1, 16, {LM_ATTN_MASK_STRIDED, 0, 0, 37}, 1.0},       /* tile-skipping stride */
    {96, 2, 1, 64, {LM_ATTN_MASK_CAUSAL, 0, 0, 0}, 4.0},          /* peaked softmax */
    {1, 1, 1, 64, {LM_ATTN_MASK_WINDOW, 1, 0, 0}, 1.0},           /* n = 1 */
};

Test(attention, prefill_matches_reference_on_every_path)
{
    for (size_t c = 0; c < sizeof prefill_cases / sizeof prefill_cases[0]; c++) {
        const prefill_case *pc = &prefill_cases[c];
        const size_t nq = pc->n * pc->heads * pc->d, nk = pc->n * pc->kv_heads * pc->d;
        float *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k),
              *v = malloc(nk * sizeof *v), *o = malloc(nq * sizeof *o);
        double *qd = malloc(nq * sizeof *qd), *kd = malloc(nk * sizeof *kd),
               *vd = malloc(nk * sizeof *vd), *od = malloc(nq * sizeof *od);
        lm_rng rng;
        lm_rng_seed(&rng, 1000 + c);
        fill_normal(&rng, q, qd, nq);
        for (size_t i = 0; i < nq; i++)
            qd[i] = (double)(q[i] = (float)((double)q[i] * pc->scale_q));
        fill_normal(&rng, k, kd, nk);
        fill_normal(&rng, v, vd, nk);
        lm_error err;
        cr_assert_eq(lm_attn_prefill_f64_ref(qd, kd, vd, od, pc->n, pc->heads, pc->kv_heads,
                                             pc->d, &pc->mask, &err),
                     LM_OK, "%s", err.message);
        const uint64_t allowed = lm_attn_mask_pairs(&pc->mask, pc->n) * pc->heads;
        for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
            if (!lm_isa_available((lm_isa)isa))
                continue;
            lm_attn_prefill_args a = {.q = q, .k = k, .v = v, .o = o, .n = pc->n,
                                      .heads = pc->heads, .kv_heads = pc->kv_heads,
                                      .head_dim = pc->d, .mask = pc->mask,
                                      .scale = 1.0f / sqrtf((float)pc->d)};
            lm_attn_counts counts;
            cr_assert_eq(lm_attn_prefill(&a, lm_ops_for((lm_isa)isa), &counts, &err), LM_OK,
                         "%s", err.message);
            double max_abs, worst = max_violation(o, od, nq, &max_abs);
            cr_log_info("prefill isa=%s n=%zu H=%zu Hkv=%zu d=%zu mask=%d max|err|=%.2e "
                        "tiles %llu/%llu pairs %llu (allowed %llu)",
                        lm_isa_name((lm_isa)isa), pc->n, pc->heads, pc->kv_heads, pc->d,
                        (int)pc->mask.kind, max_abs, (unsigned long long)counts.tiles_computed,
                        (unsigned long long)counts.tiles_total,
                        (unsigned long long)counts.pairs_computed,
                        (unsigned long long)allowed);
            cr_assert(worst <= 1.0, "prefill case %zu isa %s: max|err| %.3e over tolerance", c,
                      lm_isa_name((lm_isa)isa), max_abs);
            cr_assert(counts.pairs_computed >= allowed, "every allowed pair was scored");
            cr_assert(counts.tiles_computed <= counts.tiles_total);
        }
        free(q), free(k), free(v), free(o), free(qd), free(kd), free(vd), free(od);
    }
}

/* The bf16 slot on bfloat16-rounded inputs. Paths without BF16 dot products widen the
 * inputs and run the f32 kernel: bit for bit the f32 slot on the widened values. The
 * avx512bf16 path rounds the softmax weights to bfloat16 before P V (relative error
 * <= 2^-8 each, the row sums l kept in float32 from the unrounded weights), so its error
 * is bounded by 2^-8 sum_j p_j |v_j| (the oracle run on |v|) plus the float32 tolerance. */
Test(attention, prefill_bf16_matches_reference_on_every_path)
{
    for (size_t c = 0; c < sizeof prefill_cases / sizeof prefill_cases[0]; c++) {
        const prefill_case *pc = &prefill_cases[c];
        const size_t nq = pc->n * pc->heads * pc->d, nk = pc->n * pc->kv_heads * pc->d;
        const size_t total = nq + 2 * nk;
        float *x = malloc(total * sizeof *x), *o = malloc(nq * sizeof *o);
        float *o32 = malloc(nq * sizeof *o32);
        uint16_t *x16 = malloc(total * sizeof *x16);
        double *xd = malloc(total * sizeof *xd), *od = malloc(nq * sizeof *od);
        double *vabs = malloc(nk * sizeof *vabs), *oabs = malloc(nq * sizeof *oabs);
        lm_rng rng;
        lm_rng_seed(&rng, 3000 + c);
        for (size_t i = 0; i < total; i++) { /* q, k, v rounded to bfloat16 */
            const double scale = i < nq ? pc->scale_q : 1.0;
            x16[i] = lm_bf16_from_f32((float)(lm_rng_standard_normal(&rng) * scale));
            x[i] = lm_f32_from_bf16(x16[i]);
            xd[i] = (double)x[i];
        }
        for (size_t i = 0; i < nk; i++)
            vabs[i] = fabs(xd[nq + nk + i]);
        lm_error err;
        cr_assert_eq(lm_attn_prefill_f64_ref(xd, xd + nq, xd + nq + nk, od, pc->n, pc->heads,
                                             pc->kv_heads, pc->d, &pc->mask, &err),
                     LM_OK, "%s", err.message);
        cr_assert_eq(lm_attn_prefill_f64_ref(xd, xd + nq, vabs, oabs, pc->n, pc->heads,
                                             pc->kv_heads, pc->d, &pc->mask, &err),
                     LM_OK, "%s", err.message);
        for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
            if (!lm_isa_available((lm_isa)isa))
                continue;
            const lm_ops *ops = lm_ops_for((lm_isa)isa);
            lm_attn_prefill_args a = {.o = o, .n = pc->n, .heads = pc->heads,
                                      .kv_heads = pc->kv_heads, .head_dim = pc->d,
                                      .mask = pc->mask, .scale = 1.0f / sqrtf((float)pc->d),
                                      .dtype = LM_KV_BF16, .q16 = x16, .k16 = x16 + nq,
                                      .v16 = x16 + nq + nk};
            cr_assert_eq(lm_attn_prefill(&a, ops, NULL, &err), LM_OK, "%s", err.message);
            lm_attn_prefill_args f = {.q = x, .k = x + nq, .v = x + nq + nk, .o = o32,
                                      .n = pc->n, .heads = pc->heads, .kv_heads = pc->kv_heads,
                                      .head_dim = pc->d, .mask = pc->mask, .scale = a.scale};
            cr_assert_eq(lm_attn_prefill(&f, ops, NULL, &err), LM_OK, "%s", err.message);
            const bool dot = isa == LM_ISA_AVX512BF16 && pc->d % 16 == 0;
            double worst = 0.0, max_abs = 0.0;
            for (size_t i = 0; i < nq; i++) {
                const double e = fabs((double)o[i] - od[i]);
                const double bound = ATOL + RTOL * fabs(od[i]) + (dot ? 0x1p-8 * oabs[i] : 0.0);
                cr_assert(e == e, "NaN at %zu", i);
                worst = e / bound > worst ? e / bound : worst;
                max_abs = e > max_abs ? e : max_abs;
            }
            cr_log_info("prefill bf16 isa=%s n=%zu H=%zu Hkv=%zu d=%zu dot=%d max|err|=%.2e "
                        "(%.2f of the bound)", lm_isa_name((lm_isa)isa), pc->n, pc->heads,
                        pc->kv_heads, pc->d, (int)dot, max_abs, worst);
            cr_assert(worst <= 1.0, "bf16 prefill case %zu isa %s: max|err| %.3e over the bound",
                      c, lm_isa_name((lm_isa)isa), max_abs);
            if (!dot)
                cr_assert(memcmp(o, o32, nq * sizeof *o) == 0,
                          "case %zu isa %s: the widening bf16 slot equals the f32 one", c,
                          lm_isa_name((lm_isa)isa));
        }
        free(x), free(o), free(o32), free(x16), free(xd), free(od), free(vabs), free(oabs);
    }
}

/* EMPTY tiles hold no allowed pair, FULL tiles hold only allowed pairs. */
Test(attention, tile_classes_agree_with_the_mask)
{
    const lm_attn_mask masks[] = {
        {LM_ATTN_MASK_CAUSAL, 0, 0, 0},        {LM_ATTN_MASK_WINDOW, 1, 0, 0},
        {LM_ATTN_MASK_WINDOW, 45, 0, 0},       {LM_ATTN_MASK_WINDOW, 64, 0, 0},
        {LM_ATTN_MASK_WINDOW_GLOBAL, 9, 1, 0}, {LM_ATTN_MASK_WINDOW_GLOBAL, 33, 70, 0},
        {LM_ATTN_MASK_STRIDED, 0, 0, 1},       {LM_ATTN_MASK_STRIDED, 0, 0, 5},
        {LM_ATTN_MASK_STRIDED, 0, 0, 40},      {LM_ATTN_MASK_STRIDED, 0, 0, 128},
    };
    const size_t n = 300;
    for (size_t mi = 0; mi < sizeof masks / sizeof masks[0]; mi++)
        for (size_t i0 = 0; i0 < n; i0 += 64)
            for (size_t j0 = 0; j0 <= i0 + 63 && j0 < n; j0 += 32) {
                size_t i1 = i0 + 64 < n ? i0 + 64 : n, j1 = j0 + 32 < i1 ? j0 + 32 : i1;
                if (j0 >= i1)
                    continue;
                size_t allowed = 0;
                for (size_t i = i0; i < i1; i++)
                    for (size_t j = j0; j < j1; j++)
                        allowed += lm_attn_mask_allows(&masks[mi], i, j);
                lm_attn_tile_class cls = lm_attn_tile_classify(&masks[mi], i0, i1, j0, j1);
                /* exact both ways: a tile is skipped iff it holds no allowed pair, and runs
                 * unmasked iff every pair is allowed */
                cr_assert_eq(cls == LM_TILE_EMPTY, allowed == 0, "mask %zu tile (%zu, %zu)", mi,
                             i0, j0);
                cr_assert_eq(cls == LM_TILE_FULL, allowed == (i1 - i0) * (j1 - j0),
                             "mask %zu tile (%zu, %zu)", mi, i0, j0);
            }
}

Test(attention, sparse_kinds_skip_empty_tiles)
{
    enum { n = 1000, d = 16 };
    float *q = calloc(n * d, sizeof *q), *o = malloc(n * d * sizeof *o);
    lm_attn_prefill_args a = {.q = q, .k = q, .v = q, .o = o, .n = n, .heads = 1, .kv_heads = 1,
                              .head_dim = d, .mask = {LM_ATTN_MASK_WINDOW, 64, 0, 0},
                              .scale = 0.25f};
    lm_attn_counts counts;
    cr_assert_eq(lm_attn_prefill(&a, lm_ops_active(), &counts, NULL), LM_OK);
    /* a 64-window reaches at most 3 key tiles of 32 behind a 64-row query tile, plus up to
     * 2 on the diagonal: 16 query tiles x at most 5 */
    cr_assert_leq(counts.tiles_computed, 16 * 5);
    cr_assert_lt(counts.tiles_computed, counts.tiles_total);
    a.mask = (lm_attn_mask){LM_ATTN_MASK_CAUSAL, 0, 0, 0};
    cr_assert_eq(lm_attn_prefill(&a, lm_ops_active(), &counts, NULL), LM_OK);
    cr_assert_eq(counts.tiles_computed, counts.tiles_total);
    /* strided 300 and window + 2 global: the kernel computes exactly the tiles that hold an
     * allowed pair (brute force), and scores rows x columns of each */
    const lm_attn_mask sparse[] = {{LM_ATTN_MASK_STRIDED, 0, 0, 300},
                                   {LM_ATTN_MASK_WINDOW_GLOBAL, 50, 2, 0}};
    for (size_t mi = 0; mi < 2; mi++) {
        uint64_t nonempty = 0, pairs = 0;
        for (size_t i0 = 0; i0 < n; i0 += LM_ATTN_TILE_Q)
            for (size_t j0 = 0; j0 < i0 + LM_ATTN_TILE_Q && j0 < n; j0 += LM_ATTN_TILE_K) {
                size_t i1 = i0 + LM_ATTN_TILE_Q < n ? i0 + LM_ATTN_TILE_Q : n;
                size_t j1 = j0 + LM_ATTN_TILE_K < i1 ? j0 + LM_ATTN_TILE_K : i1;
                bool any = false;
                for (size_t i = i0; i < i1 && !any; i++)
                    for (size_t j = j0; j < j1 && !any; j++)
                        any = lm_attn_mask_allows(&sparse[mi], i, j);
                nonempty += any;
                pairs += any ? (i1 - i0) * (j1 - j0) : 0;
            }
        a.mask = sparse[mi];
        cr_assert_eq(lm_attn_prefill(&a, lm_ops_active(), &counts, NULL), LM_OK);
        cr_log_info("sparse mask %zu: %llu of %llu tiles", mi,
                    (unsigned long long)counts.tiles_computed,
                    (unsigned long long)counts.tiles_total);
        cr_assert_eq(counts.tiles_computed, nonempty);
        cr_assert_eq(counts.pairs_computed, pairs);
    }
    free(q), free(o);
}

Test(attention, mask_pairs_match_the_lesson)
{
    /* lesson section 3, n = 16, w = 4: causal 136, window 58, window + token 0 70, strided 82 */
    const lm_attn_mask causal = {LM_ATTN_MASK_CAUSAL, 0, 0, 0},
                       window = {LM_ATTN_MASK_WINDOW, 4, 0, 0},
                       global = {LM_ATTN_MASK_WINDOW_GLOBAL, 4, 1, 0},
                       strided = {LM_ATTN_MASK_STRIDED, 0, 0, 4};
    cr_assert_eq(lm_attn_mask_pairs(&causal, 16), 136);
    cr_assert_eq(lm_attn_mask_pairs(&window, 16), 58);
    cr_assert_eq(lm_attn_mask_pairs(&global, 16), 70);
    cr_assert_eq(lm_attn_mask_pairs(&strided, 16), 82);
}

typedef struct decode_case {
    size_t batch, heads, kv_heads, d, capacity;
    size_t lengths[3];
} decode_case;

static const decode_case decode_cases[] = {
    {2, 8, 2, 64, 800, {700, 1, 0}},     /* GQA 4, one sequence of a single token */
    {1, 32, 1, 128, 333, {333, 0, 0}},   /* GQA 32, d 128 */
    {3, 2, 2, 128, 130, {65, 129, 130}}, /* MHA, partial blocks */
    {1, 6, 3, 48, 2000, {1999, 0, 0}},   /* d 48: vector tails, GQA 2, many chunks */
    {1, 4, 2, 24, 50, {50, 0, 0}},       /* d 24: scalar fallback */
};

Test(attention, decode_matches_reference_for_every_dtype_and_path)
{
    for (size_t c = 0; c < sizeof decode_cases / sizeof decode_cases[0]; c++) {
        const decode_case *dc = &decode_cases[c];
        const size_t nq = dc->batch * dc->heads * dc->d;
        const size_t nk = dc->batch * dc->kv_heads * dc->capacity * dc->d;
        float *q = malloc(nq * sizeof *q), *o = malloc(nq * sizeof *o);
        float *kf = malloc(nk * sizeof *kf), *vf = malloc(nk * sizeof *vf);
        void *ks = malloc(nk * 4), *vs = malloc(nk * 4);
        double *qd = malloc(nq * sizeof *qd), *od = malloc(nq * sizeof *od);
        double *kd = malloc(nk * sizeof *kd), *vd = malloc(nk * sizeof *vd);
        lm_rng rng;
        lm_rng_seed(&rng, 2000 + c);
        fill_normal(&rng, q, qd, nq);
        fill_normal(&rng, kf, kd, nk);
        fill_normal(&rng, vf, vd, nk);
        for (int dt = 0; dt < LM_KV_DTYPE_COUNT; dt++) {
            lm_kv_store((lm_kv_dtype)dt, kf, ks, nk);
            lm_kv_store((lm_kv_dtype)dt, vf, vs, nk);
            float *back = malloc(nk * sizeof *back); /* the oracle sees the rounded cache */
            lm_kv_load((lm_kv_dtype)dt, ks, back, nk);
            for (size_t i = 0; i < nk; i++)
                kd[i] = (double)back[i];
            lm_kv_load((lm_kv_dtype)dt, vs, back, nk);
            for (size_t i = 0; i < nk; i++)
                vd[i] = (double)back[i];
            free(back);
            lm_error err;
            cr_assert_eq(lm_attn_decode_f64_ref(qd, kd, vd, dc->lengths, od, dc->batch,
                                                dc->heads, dc->kv_heads, dc->d, dc->capacity,
                                                &err),
                         LM_OK, "%s", err.message);
            for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
                if (!lm_isa_available((lm_isa)isa))
                    continue;
                lm_attn_decode_args a = {q,         ks,        vs,         dc->lengths,
                                         o,         dc->batch, dc->heads,  dc->kv_heads,
                                         dc->d,     dc->capacity, (lm_kv_dtype)dt};
                cr_assert_eq(lm_attn_decode(&a, lm_ops_for((lm_isa)isa), &err), LM_OK, "%s",
                             err.message);
                double max_abs, worst = max_violation(o, od, nq, &max_abs);
                cr_log_info("decode isa=%s dtype=%d B=%zu H=%zu Hkv=%zu d=%zu max|err|=%.2e",
                            lm_isa_name((lm_isa)isa), dt, dc->batch, dc->heads, dc->kv_heads,
                            dc->d, max_abs);
                cr_assert(worst <= 1.0, "decode case %zu dtype %d isa %s: max|err| %.3e", c, dt,
                          lm_isa_name((lm_isa)isa), max_abs);
            }
        }
        free(q), free(o), free(kf), free(vf), free(ks), free(vs);
        free(qd), free(od), free(kd), free(vd);
    }
}

Test(attention, bad_input_gets_a_status)
{
    lm_error err;
    const lm_attn_mask causal = {LM_ATTN_MASK_CAUSAL, 0, 0, 0};
    const lm_attn_mask w0 = {LM_ATTN_MASK_WINDOW, 0, 0, 0};
    const lm_attn_mask s0 = {LM_ATTN_MASK_STRIDED, 0, 0, 0};
    const lm_attn_mask bogus = {(lm_attn_mask_kind)42, 1, 0, 1};
    cr_assert_eq(lm_attn_prefill_check(0, 1, 1, 16, &causal, &err), LM_ERR_SHAPE);
    cr_assert(strstr(err.message, "n ") != NULL, "%s", err.message);
    cr_assert_eq(lm_attn_prefill_check(4, 6, 4, 16, &causal, &err), LM_ERR_SHAPE);
    cr_assert(strstr(err.message, "kv_heads") != NULL, "%s", err.message);
    cr_assert_eq(lm_attn_prefill_check(4, 4, 4, 0, &causal, &err), LM_ERR_SHAPE);
    cr_assert_eq(lm_attn_prefill_check(4, 4, 4, 16, &w0, &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "window") != NULL, "%s", err.message);
    cr_assert_eq(lm_attn_prefill_check(4, 4, 4, 16, &s0, &err), LM_ERR_ARG);
    cr_assert_eq(lm_attn_prefill_check(4, 4, 4, 16, &bogus, &err), LM_ERR_ARG);

    float x[4 * 16] = {0}, o[4 * 16];
    x[5] = NAN;
    lm_attn_prefill_args a = {.q = x, .k = x, .v = x, .o = o, .n = 4, .heads = 1, .kv_heads = 1,
                              .head_dim = 16, .mask = causal, .scale = 0.25f};
    cr_assert_eq(lm_attn_prefill(&a, lm_ops_active(), NULL, &err), LM_ERR_NONFINITE);
    a.n = 0;
    cr_assert_eq(lm_attn_prefill(&a, lm_ops_active(), NULL, &err), LM_ERR_SHAPE);
    double xd[4 * 16] = {0}, od[4 * 16];
    xd[7] = (double)INFINITY;
    cr_assert_eq(lm_attn_prefill_f64_ref(xd, xd, xd, od, 4, 1, 1, 16, &causal, &err),
                 LM_ERR_NONFINITE);

    size_t lengths[2] = {3, 0};
    cr_assert_eq(lm_attn_decode_check(2, 2, 1, 16, 4, lengths, &err), LM_ERR_SHAPE);
    cr_assert(strstr(err.message, "lengths[1]") != NULL, "%s", err.message);
    lengths[1] = 5;
    cr_assert_eq(lm_attn_decode_check(2, 2, 1, 16, 4, lengths, &err), LM_ERR_SHAPE);
    cr_assert_eq(lm_attn_decode_check(0, 2, 1, 16, 4, lengths, &err), LM_ERR_SHAPE);
    lengths[1] = 2;
    float qq[2 * 2 * 16] = {0}, kk[2 * 4 * 16] = {0}, oo[2 * 2 * 16];
    qq[3] = NAN;
    lm_attn_decode_args da = {qq, kk, kk, lengths, oo, 2, 2, 1, 16, 4, LM_KV_F32};
    cr_assert_eq(lm_attn_decode(&da, lm_ops_active(), &err), LM_ERR_NONFINITE);
    qq[3] = 0.0f;
    da.dtype = (lm_kv_dtype)9;
    cr_assert_eq(lm_attn_decode(&da, lm_ops_active(), &err), LM_ERR_ARG);
    da.dtype = LM_KV_F32;
    cr_assert_eq(lm_attn_decode(&da, lm_ops_active(), &err), LM_OK, "%s", err.message);
    lm_kv_dtype dt;
    cr_assert_eq(lm_kv_dtype_parse("f8", &dt, &err), LM_ERR_ARG);
    cr_assert_eq(lm_kv_dtype_parse("bf16", &dt, &err), LM_OK);
    cr_assert_eq(dt, LM_KV_BF16);
}

Test(attention, half_and_bfloat_round_to_nearest_even)
{
    /* IEEE binary16 encodings */
    cr_assert_eq(lm_f16_from_f32(1.0f), 0x3c00);
    cr_assert_eq(lm_f16_from_f32(-2.0f), 0xc000);
    cr_assert_eq(lm_f16_from_f32(65504.0f), 0x7bff);
    cr_assert_eq(lm_f16_from_f32(65519.0f), 0x7bff);
    cr_assert_eq(lm_f16_from_f32(65520.0f), 0x7c00);
    cr_assert_eq(lm_f16_from_f32(ldexpf(1.0f, -24)), 0x0001);
    cr_assert_eq(lm_f16_from_f32(ldexpf(1.0f, -26)), 0x0000);            /* below half an ulp */
    cr_assert_eq(lm_f16_from_f32(1.0f + ldexpf(1.0f, -11)), 0x3c00);     /* tie to even */
    cr_assert_eq(lm_f16_from_f32(1.0f + 3 * ldexpf(1.0f, -11)), 0x3c02); /* tie to even */
    cr_assert_eq(lm_f16_from_f32(ldexpf(1.0f, -14)), 0x0400);            /* smallest normal */
    cr_assert_eq(lm_f16_from_f32(INFINITY), 0x7c00);
    cr_assert((lm_f16_from_f32(NAN) & 0x7fff) > 0x7c00);
    cr_assert(lm_f32_from_f16(0x3555) == 0x1.554p-2f);
    cr_assert(lm_f32_from_f16(0x0001) == ldexpf(1.0f, -24));
    cr_assert(lm_f32_from_f16(0xfbff) == -65504.0f);
    for (uint32_t h = 0; h < 0x7c00; h++) /* every finite half survives the round trip */
        cr_assert_eq(lm_f16_from_f32(lm_f32_from_f16((uint16_t)h)), h);
    /* bfloat16: the high half of a float, rounded */
    cr_assert_eq(lm_bf16_from_f32(1.0f), 0x3f80);
    cr_assert_eq(lm_bf16_from_f32(1.0f + ldexpf(1.0f, -8)), 0x3f80); /* tie to even */
    cr_assert_eq(lm_bf16_from_f32(1.0f + 3 * ldexpf(1.0f, -8)), 0x3f82);
    cr_assert(lm_f32_from_bf16(0xc040) == -3.0f);
}

/* Rolling buffer: token-by-token decode over a ring of w slots equals the WINDOW-masked
 * prefill, for every dtype and path, and the ring never holds more than w tokens. */
Test(attention, rolling_window_decode_equals_masked_prefill)
{
    enum { n = 150, heads = 8, kv_heads = 2, d = 64, w = 37 };
    float *q = malloc(n * heads * d * sizeof *q), *k = malloc(n * kv_heads * d * sizeof *k);
    float *v = malloc(n * kv_heads * d * sizeof *v), *o = malloc(heads * d * sizeof *o);
    double *qd = malloc(n * heads * d * sizeof *qd), *kd = malloc(n * kv_heads * d * sizeof *kd);
    double *vd = malloc(n * kv_heads * d * sizeof *vd), *od = malloc(n * heads * d * sizeof *od);
    float *back = malloc(n * kv_heads * d * sizeof *back);
    void *stored = malloc(n * kv_heads * d * 4);
    lm_rng rng;
    lm_rng_seed(&rng, 3000);
    fill_normal(&rng, q, qd, n * heads * d);
    fill_normal(&rng, k, kd, n * kv_heads * d);
    fill_normal(&rng, v, vd, n * kv_heads * d);
    const lm_attn_mask window = {LM_ATTN_MASK_WINDOW, w, 0, 0};
    for (int dt = 0; dt < LM_KV_DTYPE_COUNT; dt++) {
        /* the oracle on the values the ring stores */
        lm_kv_store((lm_kv_dtype)dt, k, stored, n * kv_heads * d);
        lm_kv_load((lm_kv_dtype)dt, stored, back, n * kv_heads * d);
        for (size_t i = 0; i < n * kv_heads * d; i++)
            kd[i] = (double)back[i];
        lm_kv_store((lm_kv_dtype)dt, v, stored, n * kv_heads * d);
        lm_kv_load((lm_kv_dtype)dt, stored, back, n * kv_heads * d);
        for (size_t i = 0; i < n * kv_heads * d; i++)
            vd[i] = (double)back[i];
        lm_error err;
        cr_assert_eq(lm_attn_prefill_f64_ref(qd, kd, vd, od, n, heads, kv_heads, d, &window, &err),
                     LM_OK, "%s", err.message);
        for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
            if (!lm_isa_available((lm_isa)isa))
                continue;
            lm_window_cache cache;
            cr_assert_eq(lm_window_cache_init(&cache, w, kv_heads, d, (lm_kv_dtype)dt, &err),
                         LM_OK, "%s", err.message);
            const size_t bytes = lm_window_cache_bytes(&cache);
            cr_assert_eq(bytes, 2 * kv_heads * w * d * lm_kv_dtype_size((lm_kv_dtype)dt));
            cr_assert_eq(lm_window_decode(&cache, q, heads, o, lm_ops_active(), &err), LM_ERR_SHAPE);
            double worst = 0.0, max_abs = 0.0;
            for (size_t t = 0; t < n; t++) {
                cr_assert_eq(lm_window_cache_append(&cache, k + t * kv_heads * d,
                                                    v + t * kv_heads * d, &err), LM_OK);
                cr_assert_leq(lm_window_cache_held(&cache), (size_t)w);
                cr_assert_eq(lm_window_cache_bytes(&cache), bytes, "memory stays w tokens");
                cr_assert_eq(lm_window_decode(&cache, q + t * heads * d, heads, o,
                                              lm_ops_for((lm_isa)isa), &err), LM_OK, "%s",
                             err.message);
                double m, r = max_violation(o, od + t * heads * d, heads * d, &m);
                worst = r > worst ? r : worst;
                max_abs = m > max_abs ? m : max_abs;
            }
            cr_log_info("rolling isa=%s dtype=%d w=%d n=%d max|err|=%.2e",
                        lm_isa_name((lm_isa)isa), dt, w, n, max_abs);
            cr_assert(worst <= 1.0, "rolling isa %s dtype %d: max|err| %.3e",
                      lm_isa_name((lm_isa)isa), dt, max_abs);
            cr_assert_eq(lm_window_cache_held(&cache), (size_t)w);
            lm_window_cache_free(&cache);
        }
    }
    lm_window_cache cache;
    lm_error err;
    cr_assert_eq(lm_window_cache_init(&cache, 0, 1, 16, LM_KV_F32, &err), LM_ERR_ARG);
    cr_assert_eq(lm_window_cache_init(&cache, 4, 1, 16, LM_KV_F16, &err), LM_OK);
    float bad[16] = {0};
    bad[2] = NAN;
    cr_assert_eq(lm_window_cache_append(&cache, bad, bad, &err), LM_ERR_NONFINITE);
    cr_assert_eq(lm_window_cache_held(&cache), 0);
    lm_window_cache_free(&cache);
    free(q), free(k), free(v), free(o), free(qd), free(kd), free(vd), free(od), free(back);
    free(stored);
}

/* Multi-head latent attention (DeepSeek-V2 geometry with the decoupled rotary key): the
 * absorbed and expanded fast paths against the float64 oracle, decode and prefill, on every
 * path this machine runs. */

#include "longmix.h"
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#define ATOL 2e-5
#define RTOL 2e-5

typedef struct mla_case {
    lm_mla_shape shape;
    size_t n;
    bool causal, every_isa;
} mla_case;

static void run_case(const mla_case *mc, uint64_t seed)
{
    const lm_mla_shape *s = &mc->shape;
    const size_t n = mc->n, n_q = mc->causal ? n : 1, H = s->heads;
    const size_t dq = s->nope + s->rope, ckv_count = n * (s->latent + s->rope);
    const size_t q_count = n_q * H * dq, o_count = n_q * H * s->v_dim;
    const size_t uk_count = s->latent * H * s->nope, uv_count = s->latent * H * s->v_dim;
    float *q = malloc(q_count * sizeof *q), *ckv = malloc(ckv_count * sizeof *ckv);
    float *uk = malloc(uk_count * sizeof *uk), *uv = malloc(uv_count * sizeof *uv);
    float *o = malloc(o_count * sizeof *o);
    double *qd = malloc(q_count * sizeof *qd), *ckvd = malloc(ckv_count * sizeof *ckvd);
    double *ukd = malloc(uk_count * sizeof *ukd), *uvd = malloc(uv_count * sizeof *uvd);
    double *od = malloc(o_count * sizeof *od);
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    const double w_scale = 1.0 / sqrt((double)s->latent); /* the lesson's W_uk, W_uv scale */
    for (size_t i = 0; i < q_count; i++)
        qd[i] = (double)(q[i] = (float)lm_rng_standard_normal(&rng));
    for (size_t i = 0; i < ckv_count; i++)
        ckvd[i] = (double)(ckv[i] = (float)lm_rng_standard_normal(&rng));
    for (size_t i = 0; i < uk_count; i++)
        ukd[i] = (double)(uk[i] = (float)(w_scale * lm_rng_standard_normal(&rng)));
    for (size_t i = 0; i < uv_count; i++)
        uvd[i] = (double)(uv[i] = (float)(w_scale * lm_rng_standard_normal(&rng)));
    lm_error err;
    cr_assert_eq(lm_mla_attend_f64_ref(s, qd, ckvd, ukd, uvd, n_q, n, mc->causal, od, &err),
                 LM_OK, "%s", err.message);
    for (int isa = 0; isa < LM_ISA_COUNT; isa++) {
        if (!lm_isa_available((lm_isa)isa) || (!mc->every_isa && (lm_isa)isa != lm_isa_active(NULL)))
            continue;
        for (int absorbed = 0; absorbed < 2; absorbed++) {
            lm_status st = absorbed ? lm_mla_attend_absorbed(s, q, ckv, uk, uv, n_q, n, mc->causal,
                                                             o, lm_ops_for((lm_isa)isa), &err)
                                    : lm_mla_attend_expanded(s, q, ckv, uk, uv, n_q, n, mc->causal,
                                                             o, lm_ops_for((lm_isa)isa), &err);
            cr_assert_eq(st, LM_OK, "%s", err.message);
            double worst = 0.0, max_abs = 0.0;
            for (size_t i = 0; i < o_count; i++) {
                double e = fabs((double)o[i] - od[i]);
                cr_assert(e == e, "NaN output");
                worst = fmax(worst, e / (ATOL + RTOL * fabs(od[i])));
                max_abs = fmax(max_abs, e);
            }
            cr_log_info("mla %s %s isa=%s H=%zu latent=%zu rope=%zu n=%zu max|err|=%.2e",
                        absorbed ? "absorbed" : "expanded", mc->causal ? "prefill" : "decode",
                        lm_isa_name((lm_isa)isa), H, s->latent, s->rope, n, max_abs);
            cr_assert(worst <= 1.0, "mla %s isa %s: max|err| %.3e",
                      absorbed ? "absorbed" : "expanded", lm_isa_name((lm_isa)isa), max_abs);
        }
    }
    free(q), free(ckv), free(uk), free(uv), free(o), free(qd), free(ckvd), free(ukd), free(uvd);
    free(od);
}

Test(latent, small_geometry_decode_and_prefill_on_every_path)
{
    const mla_case cases[] = {
        {{4, 32, 16, 32, 32}, 70, false, true},
        {{4, 32, 16, 32, 32}, 70, true, true},
        {{3, 40, 8, 24, 20}, 33, true, true}, /* 48-wide rows: scalar fallback for absorbed */
        {{2, 64, 0, 16, 16}, 100, false, true}, /* no rotary part */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        run_case(&cases[c], 600 + c);
}

Test(latent, deepseek_v2_geometry_decode_and_prefill)
{
    const mla_case decode = {{128, 512, 64, 128, 128}, 8, false, false};
    const mla_case prefill = {{128, 512, 64, 128, 128}, 4, true, false};
    run_case(&decode, 700);
    run_case(&prefill, 701);
}

Test(latent, bad_shapes_get_a_status)
{
    lm_mla_shape s = {4, 32, 16, 8, 32}; /* v_dim 32 > nope + rope 24 */
    lm_error err;
    cr_assert_eq(lm_mla_check(&s, &err), LM_ERR_SHAPE);
    cr_assert(strstr(err.message, "v_dim") != NULL, "%s", err.message);
    s.v_dim = 8;
    s.heads = 0;
    cr_assert_eq(lm_mla_check(&s, &err), LM_ERR_SHAPE);
    s.heads = 1;
    float q[24] = {0}, ckv[48] = {0}, w[256] = {0}, o[8];
    cr_assert_eq(lm_mla_attend_absorbed(&s, q, ckv, w, w, 1, 0, false, o, lm_ops_active(), &err), LM_ERR_SHAPE);
    cr_assert_eq(lm_mla_attend_expanded(&s, q, ckv, w, w, 2, 1, true, o, lm_ops_active(), &err), LM_ERR_SHAPE);
    q[1] = NAN;
    cr_assert_eq(lm_mla_attend_absorbed(&s, q, ckv, w, w, 1, 1, false, o, lm_ops_active(), &err),
                 LM_ERR_NONFINITE);
    cr_assert_eq(lm_mla_bytes_per_token(&(lm_mla_shape){128, 512, 64, 128, 128}, true), 2304.0);
    cr_assert_eq(lm_mla_bytes_per_token(&(lm_mla_shape){128, 512, 64, 128, 128}, false),
                 4.0 * 128 * (192 + 128));
}

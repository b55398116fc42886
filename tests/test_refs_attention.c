/* Lesson references of the attention side (suite "refs_attention"): softmax attention,
 * sliding window with its rolling buffer, sparse patterns, phi = elu + 1 linear attention,
 * latent KV and quantized KV. Expected numbers come from contracts/primer.json; inputs are
 * the lesson's. Each reference's bad inputs are checked for status and message. */
#include "longmix.h"

#include <math.h>
#include <stdlib.h>

#include "primer_expect.h"

static const double worked_q[] = {1, 0, 0, 1, 1, 0}; /* {3, 2} */
static const double worked_k[] = {1, 0, 0, 1, 1, 1}; /* {3, 2} */
static const double worked_v[] = {2, 4, 6};          /* {3, 1} */

Test(refs_attention, softmax_unscaled_worked_example_gives_four)
{
    uint8_t mask[9];
    double out[3], weights[9];
    cr_assert_eq(lm_attn_causal_mask(3, mask, NULL), LM_OK);
    cr_assert_eq(lm_attn_sdpa_f64_ref(worked_q, worked_k, worked_v, mask, false, 3, 3, 2, 1, out,
                                      weights, NULL),
                 LM_OK);
    primer_assert_close("linear.softmax_unscaled", 0, out[2]);
    for (size_t i = 0; i < 3; i++)
        primer_assert_close("linear.softmax_unscaled_rows", i, out[i]);
    for (size_t i = 0; i < 9; i++)
        primer_assert_close("linear.softmax_unscaled_weights", i, weights[i]);
    cr_assert_eq(weights[1], 0.0, "a masked pair has weight exactly 0");
}

Test(refs_attention, softmax_and_sdpa_reject_bad_input)
{
    double row[3] = {0.0, (double)NAN, 1.0}, out[3];
    assert_rejects(lm_attn_softmax_rows_f64_ref(row, out, 1, 3, &err_), LM_ERR_NONFINITE, "scores");
    double masked[2] = {-HUGE_VAL, -HUGE_VAL};
    assert_rejects(lm_attn_softmax_rows_f64_ref(masked, out, 1, 2, &err_), LM_ERR_DOMAIN, "row 0");
    assert_rejects(lm_attn_softmax_rows_f64_ref(row, out, 0, 3, &err_), LM_ERR_SHAPE, "scores");
    uint8_t none[9] = {0};
    double o[3];
    assert_rejects(lm_attn_sdpa_f64_ref(worked_q, worked_k, worked_v, none, true, 3, 3, 2, 1, o,
                                        NULL, &err_),
                   LM_ERR_DOMAIN, "mask row 0");
    double bad_q[6] = {1, 0, HUGE_VAL, 1, 1, 0};
    assert_rejects(lm_attn_sdpa_f64_ref(bad_q, worked_k, worked_v, NULL, true, 3, 3, 2, 1, o, NULL,
                                        &err_),
                   LM_ERR_NONFINITE, "q must");
    assert_rejects(lm_attn_sdpa_f64_ref(worked_q, worked_k, worked_v, NULL, true, 3, 3, 0, 1, o,
                                        NULL, &err_),
                   LM_ERR_SHAPE, "d=0");
    assert_rejects(lm_attn_causal_mask(0, none, &err_), LM_ERR_SHAPE, "n");
}

Test(refs_attention, window_mask_pairs_reach_and_receptive_field)
{
    uint8_t mask[64], heard[64];
    uint64_t pairs, reach, hops;
    cr_assert_eq(lm_window_mask(8, 3, mask, NULL), LM_OK);
    for (size_t j = 0; j < 8; j++)
        cr_assert_eq(mask[5 * 8 + j], primer_expected("window.mask_row5", j));
    cr_assert_eq(lm_mask_pairs(mask, 8, 8, &pairs, NULL), LM_OK);
    cr_assert_eq(pairs, primer_expected("window.pairs", 0));
    cr_assert_eq(lm_window_pairs(8, 3, &pairs, NULL), LM_OK);
    cr_assert_eq(pairs, primer_expected("window.pairs", 0));
    cr_assert_eq(lm_window_pairs(8, 8, &pairs, NULL), LM_OK);
    cr_assert_eq(pairs, primer_expected("window.causal_pairs", 0));
    cr_assert_eq(lm_window_reach(3, 3, &reach, NULL), LM_OK);
    cr_assert_eq(reach, primer_expected("window.reach", 0));
    cr_assert_eq(lm_window_reach(4096, 32, &reach, NULL), LM_OK);
    cr_assert_eq(reach, primer_expected("window.reach_mistral", 0));
    cr_assert_eq(lm_window_relay_hops(99999, 4096, &hops, NULL), LM_OK);
    cr_assert_eq(hops, primer_expected("window.relay_hops_100k", 0));
    cr_assert_eq(lm_window_receptive_field(8, 3, 3, heard, NULL), LM_OK);
    cr_assert_eq(heard[7 * 8 + 1], primer_expected("window.receptive_7_1", 0));
    cr_assert_eq(heard[7 * 8 + 0], primer_expected("window.receptive_7_0", 0));
    int64_t slots[4];
    cr_assert_eq(lm_window_rolling_slots(4, 9, slots, NULL), LM_OK);
    for (size_t s = 0; s < 4; s++)
        cr_assert_eq(slots[s], primer_expected("window.rolling_slots_w4_after9", s));
}

Test(refs_attention, rolling_buffer_decode_equals_masked_attention)
{
    enum { N = 50, D = 8, W = 4 };
    double *buf = malloc(5 * N * D * sizeof *buf);
    double *q = buf, *k = q + N * D, *v = k + N * D, *streamed = v + N * D, *masked = streamed + N * D;
    uint8_t mask[N * N];
    lm_rng rng;
    lm_rng_seed(&rng, 0); /* the demo's draws */
    lm_rng_fill_standard_normal(&rng, q, N * D);
    lm_rng_fill_standard_normal(&rng, k, N * D);
    lm_rng_fill_standard_normal(&rng, v, N * D);
    size_t largest = 0;
    cr_assert_eq(lm_window_decode_f64_ref(q, k, v, N, D, D, W, streamed, &largest, NULL), LM_OK);
    cr_assert_eq(largest, primer_expected("window.decode_largest_buffer", 0));
    cr_assert_eq(lm_window_mask(N, W, mask, NULL), LM_OK);
    cr_assert_eq(lm_attn_sdpa_f64_ref(q, k, v, mask, true, N, N, D, D, masked, NULL, NULL), LM_OK);
    double worst = 0.0, total = 0.0;
    for (size_t i = 0; i < N * D; i++) {
        worst = fmax(worst, fabs(streamed[i] - masked[i]));
        total += streamed[i];
    }
    cr_assert_lt(worst, primer_expected("window.decode_max_abs_diff", 0));
    primer_assert_close("window.decode_output_sum", 0, total);
    free(buf);
}

Test(refs_attention, window_rejects_bad_input)
{
    uint8_t mask[16];
    uint64_t out;
    double x[4] = {0}, o[4];
    size_t largest;
    int64_t slots[2];
    assert_rejects(lm_window_mask(4, 0, mask, &err_), LM_ERR_ARG, "w must be positive");
    assert_rejects(lm_window_mask(0, 2, mask, &err_), LM_ERR_SHAPE, "n must be positive");
    assert_rejects(lm_window_pairs(4, 0, &out, &err_), LM_ERR_ARG, "w must");
    assert_rejects(lm_window_reach(0, 3, &out, &err_), LM_ERR_ARG, "w must");
    assert_rejects(lm_window_relay_hops(10, 1, &out, &err_), LM_ERR_ARG, "w must be at least 2");
    assert_rejects(lm_window_receptive_field(0, 2, 1, mask, &err_), LM_ERR_SHAPE, "n");
    assert_rejects(lm_window_rolling_slots(0, 3, slots, &err_), LM_ERR_ARG, "w");
    assert_rejects(lm_window_decode_f64_ref(x, x, x, 2, 2, 2, 0, o, &largest, &err_), LM_ERR_ARG,
                   "w must");
    double bad[4] = {0, (double)NAN, 0, 0};
    assert_rejects(lm_window_decode_f64_ref(x, bad, x, 2, 2, 2, 1, o, &largest, &err_),
                   LM_ERR_NONFINITE, "k must");
}

Test(refs_attention, sparse_pair_counts_and_strided_row)
{
    uint64_t pairs;
    const size_t global[] = {0};
    cr_assert_eq(lm_window_pairs(16, 4, &pairs, NULL), LM_OK);
    cr_assert_eq(pairs, primer_expected("sparse.window_pairs", 0));
    cr_assert_eq(lm_sparse_global_local_pairs(16, 4, global, 1, &pairs, NULL), LM_OK);
    cr_assert_eq(pairs, primer_expected("sparse.global_pairs", 0));
    cr_assert_eq(lm_sparse_strided_pairs(16, 4, &pairs, NULL), LM_OK);
    cr_assert_eq(pairs, primer_expected("sparse.strided_pairs", 0));
    cr_assert_eq(lm_window_pairs(16, 16, &pairs, NULL), LM_OK);
    cr_assert_eq(pairs, primer_expected("sparse.causal_pairs", 0));
    uint8_t mask[256];
    cr_assert_eq(lm_sparse_strided_mask(16, 4, mask, NULL), LM_OK);
    size_t found = 0;
    for (size_t j = 0; j < 16; j++)
        if (mask[13 * 16 + j])
            cr_assert_eq(j, primer_expected("sparse.strided_row13", found++));
    cr_assert_eq(found, primer_expected_count("sparse.strided_row13"));
    uint64_t mask_pairs;
    cr_assert_eq(lm_sparse_global_local_mask(16, 4, global, 1, mask, NULL), LM_OK);
    cr_assert_eq(lm_mask_pairs(mask, 16, 16, &mask_pairs, NULL), LM_OK);
    cr_assert_eq(mask_pairs, primer_expected("sparse.global_pairs", 0));
}

Test(refs_attention, sparse_rejects_bad_input)
{
    uint8_t mask[16];
    uint64_t pairs;
    const size_t outside[] = {4};
    assert_rejects(lm_sparse_global_local_mask(4, 2, outside, 1, mask, &err_), LM_ERR_ARG,
                   "global_tokens[0] = 4 must be below n = 4");
    assert_rejects(lm_sparse_global_local_pairs(4, 0, NULL, 0, &pairs, &err_), LM_ERR_ARG, "w must");
    assert_rejects(lm_sparse_strided_mask(4, 0, mask, &err_), LM_ERR_ARG, "stride must");
    assert_rejects(lm_sparse_strided_pairs(0, 2, &pairs, &err_), LM_ERR_SHAPE, "n must");
}

Test(refs_attention, linear_attention_pot_and_quadratic_form)
{
    double phi[6], out[3], s[2], z[2], quad[3], w[9];
    cr_assert_eq(lm_linear_feature_map_f64_ref(worked_k, 6, phi, NULL), LM_OK);
    for (size_t i = 0; i < 6; i++)
        primer_assert_close("linear.phi_keys", i, phi[i]);
    cr_assert_eq(lm_linear_feature_recurrent_f64_ref(worked_q, worked_k, worked_v, 3, 2, 1, out, s,
                                                     z, NULL),
                 LM_OK);
    for (size_t i = 0; i < 2; i++) {
        primer_assert_close("linear.pot_S", i, s[i]);
        primer_assert_close("linear.total_z", i, z[i]);
    }
    primer_assert_close("linear.o3_62_15", 0, out[2]);
    cr_assert_eq(lm_linear_feature_quadratic_f64_ref(worked_q, worked_k, worked_v, 3, 2, 1, quad,
                                                     NULL),
                 LM_OK);
    for (size_t i = 0; i < 3; i++)
        primer_assert_close("linear.quadratic", i, quad[i]);
    cr_assert_eq(lm_linear_feature_weights_f64_ref(worked_q, worked_k, 3, 2, w, NULL), LM_OK);
    for (size_t i = 0; i < 9; i++)
        primer_assert_close("linear.weights", i, w[i]);
}

Test(refs_attention, linear_attention_rejects_bad_input)
{
    double out[3], bad[6] = {1, 0, (double)NAN, 1, 1, 1};
    assert_rejects(lm_linear_feature_map_f64_ref(bad, 6, out, &err_), LM_ERR_NONFINITE, "x must");
    assert_rejects(lm_linear_feature_recurrent_f64_ref(worked_q, bad, worked_v, 3, 2, 1, out, NULL,
                                                       NULL, &err_),
                   LM_ERR_NONFINITE, "k must");
    assert_rejects(lm_linear_feature_quadratic_f64_ref(worked_q, worked_k, worked_v, 3, 2, 0, out,
                                                       &err_),
                   LM_ERR_SHAPE, "d_v");
    assert_rejects(lm_linear_feature_weights_f64_ref(worked_q, worked_k, 0, 2, out, &err_),
                   LM_ERR_SHAPE, "n=0");
}

Test(refs_attention, latent_worked_example_and_bytes)
{
    const double x[] = {1, 0, 2, 1}, w_down[] = {1, 0, 0, 1, 1, 0, 0, 1},
                 w_uk[] = {1, 0, 1, 0, 0, 1, 0, 1}, q[] = {1, 2, 0, 1};
    double latent[2], key[4], q_latent[2], score, absorbed;
    cr_assert_eq(lm_latent_worked_example(x, w_down, w_uk, q, 4, 2, 4, latent, key, q_latent,
                                          &score, &absorbed, NULL),
                 LM_OK);
    for (size_t i = 0; i < 2; i++) {
        primer_assert_close("latent.worked_latent", i, latent[i]);
        primer_assert_close("latent.worked_q_latent", i, q_latent[i]);
    }
    for (size_t i = 0; i < 4; i++)
        primer_assert_close("latent.worked_key", i, key[i]);
    primer_assert_close("latent.worked_score", 0, score);
    primer_assert_close("latent.worked_absorbed", 0, absorbed);
    long long bytes;
    cr_assert_eq(lm_latent_kv_bytes_per_token(32, 512, 64, 16, &bytes, NULL), LM_OK);
    cr_assert_eq(bytes, primer_expected("latent.bytes_per_token", 0));
}

Test(refs_attention, latent_layer_paths_agree_on_lesson_draws)
{
    enum { N = 12, DM = 64, H = 8, DH = 8, DL = 16 };
    lm_latent_layer layer;
    cr_assert_eq(lm_latent_layer_init(&layer, DM, H, DH, DL, 0, NULL), LM_OK);
    double *x = malloc(N * DM * sizeof *x), c[N * DL], a[N * H * DH], b[N * H * DH];
    lm_rng rng;
    lm_rng_seed(&rng, 0);
    for (int i = 0; i < 7024; i++) /* the demo's draws before X */
        (void)lm_rng_standard_normal(&rng);
    lm_rng_fill_standard_normal(&rng, x, N * DM);
    cr_assert_eq(lm_latent_compress_f64_ref(&layer, x, N, c, NULL), LM_OK);
    cr_assert_eq(lm_latent_attend_f64_ref(&layer, x, c, N, a, NULL), LM_OK);
    cr_assert_eq(lm_latent_attend_absorbed_f64_ref(&layer, x, c, N, b, NULL), LM_OK);
    double worst = 0.0, total = 0.0;
    for (size_t i = 0; i < N * H * DH; i++) {
        worst = fmax(worst, fabs(a[i] - b[i]));
        total += a[i];
    }
    cr_assert_lt(worst, primer_expected("latent.layer_max_abs_diff", 0));
    primer_assert_close("latent.layer_output_sum", 0, total);
    cr_assert_eq(layer.d_latent, primer_expected("latent.layer_cached", 0));
    lm_latent_layer_free(&layer);
    free(x);
}

Test(refs_attention, latent_rejects_bad_input)
{
    long long bytes;
    lm_latent_layer layer;
    assert_rejects(lm_latent_kv_bytes_per_token(0, 512, 64, 16, &bytes, &err_), LM_ERR_ARG,
                   "layers must be positive");
    assert_rejects(lm_latent_kv_bytes_per_token(32, 512, -1, 16, &bytes, &err_), LM_ERR_ARG,
                   "rope_dim must be non-negative");
    assert_rejects(lm_latent_layer_init(&layer, 8, 2, 4, 0, 0, &err_), LM_ERR_ARG,
                   "d_latent must be positive");
    lm_latent_layer_free(&layer);
    cr_assert_eq(lm_latent_layer_init(&layer, 4, 1, 2, 2, 0, NULL), LM_OK);
    double x[4] = {0, (double)NAN, 0, 0}, c[2], out[2];
    assert_rejects(lm_latent_compress_f64_ref(&layer, x, 1, c, &err_), LM_ERR_NONFINITE, "x must");
    assert_rejects(lm_latent_attend_f64_ref(&layer, x, c, 0, out, &err_), LM_ERR_SHAPE, "x must");
    lm_latent_layer_free(&layer);
}

Test(refs_attention, quantized_codes_bytes_and_errors)
{
    const double k[] = {0.7, -0.3, 0.2, 0.04};
    int32_t codes[5];
    double scale, back[4];
    cr_assert_eq(lm_kvquant_quantize_rows_f64_ref(k, 1, 4, 4, codes, &scale, NULL), LM_OK);
    primer_assert_close("kvquant.scale", 0, scale);
    for (size_t i = 0; i < 4; i++)
        cr_assert_eq(codes[i], primer_expected("kvquant.codes", i));
    cr_assert_eq(lm_kvquant_dequantize_rows_f64_ref(codes, &scale, 1, 4, back, NULL), LM_OK);
    for (size_t i = 0; i < 4; i++)
        primer_assert_close("kvquant.dequantized", i, back[i]);
    const double ties[] = {7.0, 2.5, -0.5, 1.5, -3.5}; /* scale 1: halves round to even */
    cr_assert_eq(lm_kvquant_quantize_rows_f64_ref(ties, 1, 5, 4, codes, &scale, NULL), LM_OK);
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq(codes[i], primer_expected("kvquant.ties_half_even", i));
    double bytes;
    cr_assert_eq(lm_kvquant_bytes_per_token(32, 8, 128, 4, 16, &bytes, NULL), LM_OK);
    primer_assert_close("kvquant.bytes_per_token_4", 0, bytes);
    double error;
    cr_assert_eq(lm_kvquant_cache_error(8, 64, 64, 0, &error, NULL), LM_OK);
    primer_assert_close("kvquant.error_8", 0, error);
    cr_assert_lt(error, primer_expected("kvquant.error_8.lesson", 0));
    cr_assert_eq(lm_kvquant_cache_error(4, 64, 64, 0, &error, NULL), LM_OK);
    primer_assert_close("kvquant.error_4", 0, error);
    primer_assert_close("kvquant.error_4.lesson", 0, error);
    cr_assert_eq(lm_kvquant_kivi_cache_error(2, 64, 64, 0, &error, NULL), LM_OK);
    primer_assert_close("kvquant.kivi_error_2", 0, error);
    cr_assert_eq(lm_kvquant_kivi_cache_error(4, 64, 64, 0, &error, NULL), LM_OK);
    primer_assert_close("kvquant.kivi_error_4", 0, error);
}

Test(refs_attention, quantization_rejects_bad_input)
{
    const double x[] = {1.0, (double)NAN};
    int32_t codes[2];
    double scale, out[2], bytes, error;
    assert_rejects(lm_kvquant_quantize_rows_f64_ref(x, 1, 2, 1, codes, &scale, &err_), LM_ERR_ARG,
                   "bits must lie in [2, 16]");
    assert_rejects(lm_kvquant_quantize_rows_f64_ref(x, 1, 2, 4, codes, &scale, &err_),
                   LM_ERR_NONFINITE, "x must");
    assert_rejects(lm_kvquant_quantize_rows_f64_ref(x, 0, 2, 4, codes, &scale, &err_), LM_ERR_SHAPE,
                   "x must be non-empty");
    assert_rejects(lm_kvquant_kivi_f64_ref(x, 1, 2, 4, LM_KIVI_PER_TOKEN, out, &err_),
                   LM_ERR_NONFINITE, "x must");
    assert_rejects(lm_kvquant_kivi_f64_ref(x, 1, 2, 0, LM_KIVI_PER_TOKEN, out, &err_), LM_ERR_ARG,
                   "bits must lie in [1, 16]");
    assert_rejects(lm_kvquant_bytes_per_token(32, 0, 128, 4, 16, &bytes, &err_), LM_ERR_ARG,
                   "kv_heads must be positive");
    assert_rejects(lm_kvquant_cache_error(4, 0, 64, 0, &error, &err_), LM_ERR_SHAPE, "n=0");
    /* a zero row gets scale 0 and codes 0, and reads back exactly */
    const double zeros[] = {0.0, 0.0};
    cr_assert_eq(lm_kvquant_quantize_rows_f64_ref(zeros, 1, 2, 4, codes, &scale, NULL), LM_OK);
    cr_assert(scale == 0.0 && codes[0] == 0 && codes[1] == 0);
}

/* Lesson references of the recurrent side (suite "refs_recurrent"): the fixed and
 * selective SSMs, the parallel scans, the bill, and the M8 notebook's demos and exercises.
 * Expected numbers come from contracts/primer.json; each reference's bad inputs are checked
 * for status and message. */
#include "longmix.h"

#include <math.h>
#include <stdlib.h>

#include "primer_expect.h"

static const double recall_values[] = {0.3, -0.5, 7.0, 0.8, -0.2, 0.6, -0.9, 0.4, 0.1, -0.3, 0.5, -0.6};
static const double recall_markers[] = {0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};

Test(refs_recurrent, fixed_ssm_loop_kernel_and_convolution_agree)
{
    const double x[] = {1, 0, 0, 2}, a = 0.5, b = 1.0, c = 1.0;
    double y[4], kernel[4], conv[4];
    cr_assert_eq(lm_ssm_lesson_recurrent_f64_ref(x, 4, &a, &b, &c, 1, y, NULL), LM_OK);
    cr_assert_eq(lm_ssm_lesson_kernel_f64_ref(&a, &b, &c, 1, 4, kernel, NULL), LM_OK);
    cr_assert_eq(lm_ssm_lesson_convolution_f64_ref(x, 4, &a, &b, &c, 1, conv, NULL), LM_OK);
    for (size_t t = 0; t < 4; t++) {
        primer_assert_close("ssm.recurrent", t, y[t]);
        primer_assert_close("ssm.kernel", t, kernel[t]);
        primer_assert_close("ssm.convolution", t, conv[t]);
    }
    /* an N = 2 system: the loop equals the convolution */
    const double A2[] = {0.5, 0.1, 0.0, 0.9}, B2[] = {1.0, 2.0}, C2[] = {1.0, -1.0},
                 x2[] = {1.0, -2.0, 0.5, 3.0, 0.0};
    double y2[5], c2[5];
    cr_assert_eq(lm_ssm_lesson_recurrent_f64_ref(x2, 5, A2, B2, C2, 2, y2, NULL), LM_OK);
    cr_assert_eq(lm_ssm_lesson_convolution_f64_ref(x2, 5, A2, B2, C2, 2, c2, NULL), LM_OK);
    for (size_t t = 0; t < 5; t++) {
        primer_assert_close("ssm.recurrent_2x2", t, y2[t]);
        primer_assert_close("ssm.convolution_2x2", t, c2[t]);
    }
}

Test(refs_recurrent, discretize_softplus_and_selective_recall)
{
    const double deltas[] = {0.01, 0.1, 1.0, 5.0};
    const char *ids[][2] = {{"ssm.discretize_0.01_a_bar", "ssm.discretize_0.01_b_bar"},
                            {"ssm.discretize_0.1_a_bar", "ssm.discretize_0.1_b_bar"},
                            {"ssm.discretize_1.0_a_bar", "ssm.discretize_1.0_b_bar"},
                            {"ssm.discretize_5.0_a_bar", "ssm.discretize_5.0_b_bar"}};
    for (size_t i = 0; i < 4; i++) {
        double keep, write;
        cr_assert_eq(lm_ssm_lesson_discretize(deltas[i], -1.0, 1.0, &keep, &write, NULL), LM_OK);
        primer_assert_close(ids[i][0], 0, keep);
        primer_assert_close(ids[i][1], 0, write);
    }
    double sp[5] = {5.0, -5.0, 0.0, 40.0, -40.0};
    cr_assert_eq(lm_ssm_softplus_f64_ref(sp, 5, sp, NULL), LM_OK);
    for (size_t i = 0; i < 5; i++)
        primer_assert_close("ssm.softplus", i, sp[i]);
    double final_state;
    cr_assert_eq(lm_ssm_selective_recall(recall_values, recall_markers, 12, 10.0, -5.0, -1.0, 1.0,
                                         1.0, &final_state, NULL),
                 LM_OK);
    primer_assert_close("ssm.selective_recall", 0, final_state);
    primer_assert_close("ssm.selective_recall.lesson", 0, final_state);
    double grid[60], best_delta, best_value;
    size_t best_index;
    cr_assert_eq(lm_ssm_geomspace(1e-3, 10.0, 60, grid, NULL), LM_OK);
    cr_assert_eq(lm_ssm_best_time_invariant_recall(recall_values, 12, grid, 60, -1.0, 1.0, 1.0,
                                                   &best_index, &best_delta, &best_value, NULL),
                 LM_OK);
    primer_assert_close("ssm.best_fixed", 0, best_value);
    primer_assert_close("ssm.best_fixed.lesson", 0, best_value);
    primer_assert_close("ssm.best_fixed_delta", 0, best_delta);
    cr_assert_eq(best_index, primer_expected("ssm.best_fixed_index", 0));
}

Test(refs_recurrent, ssm_rejects_bad_input)
{
    double keep, write, y[2], out;
    const double x[] = {1.0, (double)NAN}, a = 0.5, b = 1.0, c = 1.0, bad_a = HUGE_VAL;
    assert_rejects(lm_ssm_lesson_discretize(0.1, 0.0, 1.0, &keep, &write, &err_), LM_ERR_DOMAIN,
                   "a must be negative");
    assert_rejects(lm_ssm_lesson_discretize(0.1, 1.0, 1.0, &keep, &write, &err_), LM_ERR_DOMAIN,
                   "a must be negative");
    assert_rejects(lm_ssm_lesson_discretize(0.0, -1.0, 1.0, &keep, &write, &err_), LM_ERR_ARG,
                   "delta must be positive");
    assert_rejects(lm_ssm_lesson_discretize((double)NAN, -1.0, 1.0, &keep, &write, &err_), LM_ERR_NONFINITE,
                   "delta");
    assert_rejects(lm_ssm_lesson_recurrent_f64_ref(x, 2, &a, &b, &c, 1, y, &err_), LM_ERR_NONFINITE,
                   "x must");
    assert_rejects(lm_ssm_lesson_recurrent_f64_ref(x, 1, &bad_a, &b, &c, 1, y, &err_),
                   LM_ERR_NONFINITE, "A must");
    assert_rejects(lm_ssm_lesson_kernel_f64_ref(&a, &b, &c, 0, 3, y, &err_), LM_ERR_SHAPE, "N must");
    assert_rejects(lm_ssm_lesson_convolution_f64_ref(x, 0, &a, &b, &c, 1, y, &err_), LM_ERR_SHAPE,
                   "x must be non-empty");
    assert_rejects(lm_ssm_softplus_f64_ref(x, 2, y, &err_), LM_ERR_NONFINITE, "x must");
    const double deltas[] = {0.1, -0.1};
    assert_rejects(lm_ssm_lesson_selective_f64_ref(recall_values, deltas, 2, -1.0, 1.0, 1.0, y,
                                                   &err_),
                   LM_ERR_ARG, "delta must be positive");
    assert_rejects(lm_ssm_time_invariant_recall(recall_values, 12, 0.1, 2.0, 1.0, 1.0, &out, &err_),
                   LM_ERR_DOMAIN, "a must be negative");
    assert_rejects(lm_ssm_geomspace(0.0, 1.0, 5, y, &err_), LM_ERR_DOMAIN, "start and stop");
}

Test(refs_recurrent, parallel_scans_trace_and_match_the_loop)
{
    const double a[] = {0.5, 0.5, 0.5, 0.5}, b[] = {1, 0, 0, 2};
    double states[4], a_out[4];
    size_t rounds;
    cr_assert_eq(lm_scan_hillis_steele_f64_ref(a, b, 4, 1, a_out, states, &rounds, NULL), LM_OK);
    for (size_t t = 0; t < 4; t++) {
        primer_assert_close("scan.round1_a", t, a_out[t]);
        primer_assert_close("scan.round1_b", t, states[t]);
    }
    cr_assert_eq(lm_scan_hillis_steele_f64_ref(a, b, 4, 0, a_out, states, &rounds, NULL), LM_OK);
    cr_assert_eq(rounds, primer_expected("scan.rounds_4", 0));
    for (size_t t = 0; t < 4; t++)
        primer_assert_close("scan.round2_states", t, states[t]);
    cr_assert_eq(lm_scan_blelloch_f64_ref(a, b, 4, states, NULL), LM_OK);
    for (size_t t = 0; t < 4; t++)
        primer_assert_close("scan.work_efficient_tiny", t, states[t]);
    /* every length 1..40 (powers of two and not), against the sequential scan */
    lm_rng rng;
    lm_rng_seed(&rng, 5);
    for (size_t n = 1; n <= 40; n++) {
        double ma[40 * 2], mb[40 * 2], h0[2], seq[80], hs[80], bl[80];
        lm_rng_fill_uniform(&rng, 0.5, 1.2, ma, 2 * n);
        lm_rng_fill_standard_normal(&rng, mb, 2 * n);
        lm_rng_fill_standard_normal(&rng, h0, 2);
        cr_assert_eq(lm_scan_affine_sequential_f64_ref(ma, mb, n, 2, h0, seq, NULL), LM_OK);
        cr_assert_eq(lm_scan_parallel_columns_f64_ref(LM_SCAN_HILLIS_STEELE, ma, mb, n, 2, h0, hs,
                                                      NULL),
                     LM_OK);
        cr_assert_eq(lm_scan_parallel_columns_f64_ref(LM_SCAN_BLELLOCH, ma, mb, n, 2, h0, bl, NULL),
                     LM_OK);
        for (size_t i = 0; i < 2 * n; i++) {
            cr_assert_leq(fabs(hs[i] - seq[i]), 1e-12 * (1.0 + fabs(seq[i])), "n=%zu", n);
            cr_assert_leq(fabs(bl[i] - seq[i]), 1e-12 * (1.0 + fabs(seq[i])), "n=%zu", n);
        }
    }
}

Test(refs_recurrent, scan_of_1024_steps_takes_ten_rounds)
{
    enum { T = 1024 };
    double a[T], b[T], states[T];
    lm_rng rng;
    lm_rng_seed(&rng, 0);
    for (int i = 0; i < 6000; i++) /* the demo's draws before b */
        (void)lm_rng_standard_normal(&rng);
    lm_rng_fill_standard_normal(&rng, b, T);
    for (size_t t = 0; t < T; t++)
        a[t] = 0.99;
    size_t rounds;
    cr_assert_eq(lm_scan_hillis_steele_f64_ref(a, b, T, 0, NULL, states, &rounds, NULL), LM_OK);
    cr_assert_eq(rounds, primer_expected("scan.rounds_1024", 0));
    double total = 0.0;
    for (size_t t = 0; t < T; t++)
        total += states[t];
    primer_assert_close("scan.random_states_sum", 0, total);
}

Test(refs_recurrent, scans_reject_bad_input)
{
    const double a[] = {0.5, (double)NAN}, b[] = {1.0, 2.0};
    double states[2];
    size_t rounds;
    assert_rejects(lm_scan_hillis_steele_f64_ref(a, b, 0, 0, NULL, states, &rounds, &err_),
                   LM_ERR_SHAPE, "non-empty");
    assert_rejects(lm_scan_hillis_steele_f64_ref(a, b, 2, 0, NULL, states, &rounds, &err_),
                   LM_ERR_NONFINITE, "a must");
    assert_rejects(lm_scan_blelloch_f64_ref(b, a, 2, states, &err_), LM_ERR_NONFINITE, "b must");
    assert_rejects(lm_scan_parallel_columns_f64_ref(LM_SCAN_BLELLOCH, b, b, 2, 0, NULL, states,
                                                    &err_),
                   LM_ERR_SHAPE, "multipliers");
    size_t sizes[] = {7};
    double errors[1], reset;
    assert_rejects(lm_scan_chunk_boundary_demo(1, 10, 2, 0.3, 0.99, sizes, 1, 0, errors, &reset,
                                               &err_),
                   LM_ERR_ARG, "reset_chunk must be positive");
    sizes[0] = 0;
    assert_rejects(lm_scan_chunk_boundary_demo(1, 10, 2, 0.3, 0.99, sizes, 1, 4, errors, &reset,
                                               &err_),
                   LM_ERR_ARG, "chunk_size must be positive");
}

Test(refs_recurrent, bill_table_hybrid_and_methods)
{
    const long long contexts[] = {8192, 131072, 1048576};
    const char *pair_ids[] = {"bill.pairs_8k", "bill.pairs_128k", "bill.pairs_1M"};
    const char *byte_ids[] = {"bill.kv_bytes_8k", "bill.kv_bytes_128k", "bill.kv_bytes_1M"};
    for (size_t i = 0; i < 3; i++) {
        long long pairs, bytes;
        cr_assert_eq(lm_arith_bill_context_cost(contexts[i], 32, 8, 128, 16, &pairs, &bytes, NULL),
                     LM_OK);
        cr_assert_eq(pairs, (long long)primer_expected(pair_ids[i], 0));
        cr_assert_eq(bytes, (long long)primer_expected(byte_ids[i], 0));
    }
    long long bytes;
    cr_assert_eq(lm_arith_bill_kv_bytes_per_token(32, 8, 128, 16, &bytes, NULL), LM_OK);
    cr_assert_eq(bytes, (long long)primer_expected("bill.kv_bytes_per_token", 0));
    cr_assert_eq(lm_arith_bill_hybrid_cache_bytes(131072, 32, 4, 8, 128, 4096, 16, 16, &bytes, NULL),
                 LM_OK);
    cr_assert_eq(bytes, (long long)primer_expected("hybrid.bytes_128k", 0));
    cr_assert_eq(lm_arith_bill_ssm_state_bytes(4096, 16, 16, &bytes, NULL), LM_OK);
    cr_assert_eq(bytes, (long long)primer_expected("hybrid.ssm_layer_bytes", 0));
    cr_assert_eq(lm_arith_bill_handshakes(10, &bytes, NULL), LM_OK);
    cr_assert_eq(bytes, (long long)primer_expected("bill.handshakes_10", 0));
    /* 4-bit codes: half a byte each, floored on the total */
    cr_assert_eq(lm_arith_bill_kv_cache_bytes(3, 1, 1, 3, 4, &bytes, NULL), LM_OK);
    cr_assert_eq(bytes, 9); /* 3 tokens x 2 x 3 numbers x 4 bits = 72 bits */
    double methods[LM_CACHE_METHOD_COUNT];
    cr_assert_eq(lm_arith_cache_bytes_by_method(1048576, methods, NULL), LM_OK);
    for (int m = 0; m < LM_CACHE_METHOD_COUNT; m++) {
        char id[64];
        snprintf(id, sizeof id, "methods.1M.%s", lm_arith_cache_method_key((lm_cache_method)m));
        primer_assert_close(id, 0, methods[m]);
    }
    cr_assert_str_eq(lm_arith_cache_method_label(LM_CACHE_LATENT), "latent (576 per layer)");
}

Test(refs_recurrent, bill_rejects_bad_input)
{
    long long out;
    double methods[LM_CACHE_METHOD_COUNT];
    assert_rejects(lm_arith_bill_pairs_per_head_per_layer(-1, &out, &err_), LM_ERR_ARG,
                   "n must be non-negative");
    assert_rejects(lm_arith_bill_pairs_per_head_per_layer(4000000000LL, &out, &err_),
                   LM_ERR_NUMERIC, "overflows");
    assert_rejects(lm_arith_bill_kv_bytes_per_token(32, 8, 128, 0, &out, &err_), LM_ERR_ARG,
                   "bits must be positive");
    assert_rejects(lm_arith_bill_kv_cache_bytes(-5, 32, 8, 128, 16, &out, &err_), LM_ERR_ARG,
                   "n must be non-negative");
    assert_rejects(lm_arith_bill_hybrid_cache_bytes(10, 8, 9, 8, 128, 64, 16, 16, &out, &err_),
                   LM_ERR_ARG, "attention_layers must lie in [0, layers]");
    assert_rejects(lm_arith_bill_ssm_state_bytes(0, 16, 16, &out, &err_), LM_ERR_ARG,
                   "channels must be positive");
    assert_rejects(lm_arith_cache_bytes_by_method(-1, methods, &err_), LM_ERR_ARG, "context");
}

Test(refs_recurrent, m8_demos_and_exercises)
{
    const size_t chunks[] = {1, 7, 16, 64};
    double errors[4], reset;
    cr_assert_eq(lm_scan_chunk_boundary_demo(20260801, 53, 6, 0.3, 0.99, chunks, 4, 16, errors,
                                             &reset, NULL),
                 LM_OK);
    for (size_t i = 0; i < 4; i++)
        cr_assert_lt(errors[i], primer_expected("m8demo.chunk_errors", i));
    primer_assert_close("m8demo.reset_error", 0, reset);
    cr_assert_gt(reset, primer_expected("m8demo.reset_error_above", 0));

    lm_delta_rewrite_result rewrite;
    cr_assert_eq(lm_delta_rewrite_keys_demo(20260802, 4, 8, 3, 48, 0.9, &rewrite, NULL), LM_OK);
    primer_assert_close("m8demo.rewrite_additive", 0, rewrite.final_mse[LM_DELTA_WRITE_ADDITIVE]);
    primer_assert_close("m8demo.rewrite_delta", 0, rewrite.final_mse[LM_DELTA_WRITE_DELTA]);
    primer_assert_close("m8demo.rewrite_gated", 0, rewrite.final_mse[LM_DELTA_WRITE_GATED]);
    cr_assert_lt(rewrite.current_key_error[LM_DELTA_WRITE_DELTA],
                 primer_expected("m8demo.rewrite_delta_current_key", 0));

    const double state[] = {1, 0, 2, 0}, key[] = {1, 0}, value[] = {3, 4}, other[] = {1, 1};
    double before[2], after[2], at_key[2], change;
    cr_assert_eq(lm_delta_overwrite_interference(state, 2, 2, key, other, value, 1.0, 1.0, before,
                                                 after, at_key, &change, NULL),
                 LM_OK);
    for (size_t i = 0; i < 2; i++) {
        primer_assert_close("m8ex.overwrite_before", i, before[i]);
        primer_assert_close("m8ex.overwrite_after", i, after[i]);
        primer_assert_close("m8ex.overwrite_exact", i, at_key[i]);
    }
    primer_assert_close("m8ex.overwrite_change", 0, change);

    const lm_kv_cache_geometry kv = {32, 8, 128, 2};
    const lm_ssm_state_geometry ssm = {32, 8192, 16, 4, 8192, 2};
    const long long batches[] = {1, 2, 3, 8};
    lm_memory_crossover cross[4];
    cr_assert_eq(lm_arith_crossover_by_batch(&kv, &ssm, batches, 4, cross, NULL), LM_OK);
    for (size_t i = 0; i < 4; i++) {
        primer_assert_close("m8ex.crossover_by_batch", i, cross[i].tokens_exact);
        cr_assert_eq(cross[i].first_integer_token,
                     (long long)primer_expected("m8ex.crossover_first_integer", i));
    }
}

Test(refs_recurrent, m8_demos_reject_bad_input)
{
    lm_delta_rewrite_result rewrite;
    assert_rejects(lm_delta_rewrite_keys_demo(1, 4, 8, 3, 48, 1.5, &rewrite, &err_), LM_ERR_ARG,
                   "decay must lie in [0, 1]");
    assert_rejects(lm_delta_rewrite_keys_demo(1, 0, 8, 3, 48, 0.9, &rewrite, &err_), LM_ERR_SHAPE,
                   "n_keys");
    const double state[] = {1, 0, 2, 0}, zero[] = {0, 0}, value[] = {3, 4}, other[] = {1, 1};
    double r[2], change;
    assert_rejects(lm_delta_overwrite_interference(state, 2, 2, zero, other, value, 1.0, 1.0, r, r,
                                                   r, &change, &err_),
                   LM_ERR_DOMAIN, "non-zero norm");
    const lm_kv_cache_geometry kv = {32, 8, 128, 2};
    const lm_ssm_state_geometry ssm = {32, 8192, 16, 4, 8192, 2};
    const long long batches[] = {1, 0};
    lm_memory_crossover cross[2];
    assert_rejects(lm_arith_crossover_by_batch(&kv, &ssm, batches, 2, cross, &err_), LM_ERR_ARG,
                   "batches[1] must be positive");
    size_t lengths[] = {5};
    double d1[1], d2[1];
    assert_rejects(lm_scan_parallel_prefix_exercise(1, lengths, 1, 2, 0.9, 0.5, d1, d2, &err_),
                   LM_ERR_ARG, "a_low < a_high");
}

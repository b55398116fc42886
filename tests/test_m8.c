/* The M8 float64 references against the M8 notebook's contract (expected values are read from
 * contracts/m8.json at test time), the notebook's invariants and its negative cases, and the
 * checker lm_verify_m8 itself. */
#include "longmix.h"
#include "../harness/contract.h"
#include "../harness/jsonx.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CONTRACT_PATH "contracts/m8.json"

static json_t *contract_json(void)
{
    json_error_t error;
    json_t *root = json_load_file(CONTRACT_PATH, JSON_REJECT_DUPLICATES, &error);
    cr_assert_not_null(root, "%s:%d: %s", CONTRACT_PATH, error.line, error.text);
    return root;
}

/* The array at `path` with exactly `ndim` dimensions; dims receives its extents. */
static double *array_at(const json_t *root, const char *path, size_t ndim, size_t *dims)
{
    double *data = NULL;
    lm_error err;
    cr_assert_eq(lm_json_array(root, path, ndim, dims, &data, &err), LM_OK, "%s", err.message);
    return data;
}

static long long int_at(const json_t *root, const char *path)
{
    long long value;
    lm_error err;
    cr_assert_eq(lm_json_int(root, path, &value, &err), LM_OK, "%s", err.message);
    return value;
}

static double real_at(const json_t *root, const char *path)
{
    double value;
    lm_error err;
    cr_assert_eq(lm_json_real(root, path, &value, &err), LM_OK, "%s", err.message);
    return value;
}

/* numpy.isclose(got, want, rtol, atol) */
static void assert_close(double got, double want, double rtol, double atol, const char *what,
                         size_t index)
{
    cr_assert(fabs(got - want) <= atol + rtol * fabs(want), "%s[%zu]: got %.17g, want %.17g",
              what, index, got, want);
}

static void assert_all_close(const double *got, const double *want, size_t n, double rtol,
                             double atol, const char *what)
{
    for (size_t i = 0; i < n; i++)
        assert_close(got[i], want[i], rtol, atol, what, i);
}

/* np.sum's pairwise order does not matter at the 1e-11 tolerance of the checksums */
static double sum_of(const double *x, size_t n)
{
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        sum += x[i];
    return sum;
}

/* ---- section 1 ---------------------------------------------------------------------- */

typedef struct zoh_case {
    json_t *root;
    double *a, *b, *c, *x, *deltas;
    size_t a_dims[1], b_dims[2], c_dims[2], x_dims[2], d_dims[1];
} zoh_case;

static zoh_case zoh_load(void)
{
    zoh_case z = {.root = contract_json()};
    z.a = array_at(z.root, "zoh.continuous_a", 1, z.a_dims);
    z.b = array_at(z.root, "zoh.continuous_b", 2, z.b_dims);
    z.c = array_at(z.root, "zoh.output_c", 2, z.c_dims);
    z.x = array_at(z.root, "zoh.inputs", 2, z.x_dims);
    z.deltas = array_at(z.root, "zoh.deltas", 1, z.d_dims);
    return z;
}

static void zoh_free(zoh_case *z)
{
    free(z->a), free(z->b), free(z->c), free(z->x), free(z->deltas);
    json_decref(z->root);
}

Test(m8, zoh_discretize_matches_contract_per_step)
{
    zoh_case z = zoh_load();
    size_t n = z.a_dims[0], p = z.b_dims[1], steps = z.d_dims[0], dims[3];
    double *transitions = array_at(z.root, "zoh.transitions", 2, dims);
    cr_assert_eq(dims[0], steps);
    double *inputs = array_at(z.root, "zoh.exact_input_matrices", 3, dims);
    double *relative = array_at(z.root, "zoh.relative_input_error_first_mode", 1, dims);
    double transition[8], input_matrix[8];
    for (size_t t = 0; t < steps; t++) {
        cr_log_info("step %zu delta %g", t, z.deltas[t]);
        cr_assert_eq(lm_ssm_zoh_discretize_f64_ref(z.a, n, z.b, n, p, z.deltas[t], transition,
                                                   input_matrix, NULL), LM_OK);
        assert_all_close(transition, transitions + t * n, n, 1e-12, 1e-12, "transitions");
        assert_all_close(input_matrix, inputs + t * n * p, n * p, 1e-12, 1e-12,
                         "exact_input_matrices");
        double error = fabs(z.deltas[t] * z.b[0] - input_matrix[0]) / input_matrix[0];
        assert_close(error, relative[t], 1e-12, 1e-12, "relative_input_error_first_mode", t);
    }
    free(transitions), free(inputs), free(relative);
    zoh_free(&z);
}

Test(m8, zoh_scan_exact_and_approximate_match_contract)
{
    zoh_case z = zoh_load();
    size_t n = z.a_dims[0], p = z.b_dims[1], m = z.c_dims[0], steps = z.x_dims[0], dims[2];
    const lm_ssm_system system = {z.a, n, z.b, z.b_dims[0], p, z.c, m, z.c_dims[1]};
    double states[64], outputs[64], transitions[64], input_matrices[64];
    cr_assert_leq(steps * n * p, 64);
    const lm_ssm_scan_result result = {states, outputs, transitions, input_matrices};
    const struct {
        bool exact;
        const char *states, *outputs;
    } runs[] = {{true, "zoh.exact_states", "zoh.exact_outputs"},
                {false, "zoh.approximate_states", "zoh.approximate_outputs"}};
    for (int r = 0; r < 2; r++) {
        lm_error err;
        cr_assert_eq(lm_ssm_scan_diagonal_f64_ref(&system, z.x, steps, z.x_dims[1], z.deltas,
                                                  z.d_dims[0], NULL, runs[r].exact, &result,
                                                  &err), LM_OK, "%s", err.message);
        double *want_states = array_at(z.root, runs[r].states, 2, dims);
        assert_all_close(states, want_states, steps * n, 1e-12, 1e-12, runs[r].states);
        double *want_outputs = array_at(z.root, runs[r].outputs, 1, dims);
        for (size_t t = 0; t < steps; t++)
            assert_close(outputs[t * m], want_outputs[t], 1e-12, 1e-12, runs[r].outputs, t);
        if (!runs[r].exact) /* Delta*B keeps the exact transition, replaces B-bar */
            for (size_t t = 0; t < steps; t++)
                cr_assert_eq(input_matrices[t * n * p], z.deltas[t] * z.b[0]);
        free(want_states), free(want_outputs);
    }
    zoh_free(&z);
}

Test(m8, zoh_zero_mode_is_the_exact_limit_and_long_steps_stay_accurate)
{
    json_t *root = contract_json();
    size_t dims[2];
    double *want = array_at(root, "zoh.zero_mode_input_matrix", 2, dims);
    const double a[2] = {0.0, -1.0}, b[2] = {1.0, 1.0}, long_a[2] = {-1e-15, 0.0};
    double transition[2], input_matrix[2];
    cr_assert_eq(lm_ssm_zoh_discretize_f64_ref(a, 2, b, 2, 1, 0.25, transition, input_matrix,
                                               NULL), LM_OK);
    cr_assert_eq(input_matrix[0], 0.25, "phi(0) must be delta exactly");
    cr_assert_eq(transition[0], 1.0);
    assert_all_close(input_matrix, want, 2, 1e-12, 1e-12, "zero_mode_input_matrix");
    cr_assert_eq(lm_ssm_zoh_discretize_f64_ref(long_a, 2, b, 2, 1, 1e15, transition,
                                               input_matrix, NULL), LM_OK);
    assert_close(input_matrix[0], (1.0 - exp(-1.0)) * 1e15, 1e-14, 0.0, "long step", 0);
    cr_assert_eq(input_matrix[1], 1e15);
    free(want);
    json_decref(root);
}

Test(m8, ten_percent_root_is_solved_not_copied)
{
    json_t *root = contract_json();
    double step, error, file_root = real_at(root, "zoh.ten_percent_relative_error_root_a_minus_1");
    cr_assert_eq(lm_arith_delta_b_error_root(-1.0, 0.1, &step, NULL), LM_OK);
    cr_assert(fabs(step - file_root) <= 1e-13, "solved %.17g, file %.17g", step, file_root);
    cr_assert_eq(lm_arith_delta_b_relative_error(-1.0, step, &error, NULL), LM_OK);
    cr_assert(fabs(error - 0.1) <= 1e-12);
    /* the solver is general: another mode and target, checked by substitution */
    cr_assert_eq(lm_arith_delta_b_error_root(-3.0, 0.25, &step, NULL), LM_OK);
    cr_assert_eq(lm_arith_delta_b_relative_error(-3.0, step, &error, NULL), LM_OK);
    cr_assert(fabs(error - 0.25) <= 1e-12, "error %.17g at %.17g", error, step);
    lm_error err;
    cr_assert_eq(lm_arith_delta_b_error_root(0.5, 0.1, &step, &err), LM_ERR_DOMAIN);
    cr_assert_eq(lm_arith_delta_b_error_root(-1.0, 0.0, &step, &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "target") != NULL);
    json_decref(root);
}

/* ---- section 2 ---------------------------------------------------------------------- */

Test(m8, affine_scan_checksum_and_every_chunk_size)
{
    json_t *root = contract_json();
    size_t T = (size_t)int_at(root, "affine_scan.sequence_length");
    size_t W = (size_t)int_at(root, "affine_scan.state_width");
    size_t chunk = (size_t)int_at(root, "affine_scan.chunk_size");
    double *a = malloc(T * W * sizeof *a), *b = malloc(T * W * sizeof *b);
    double *h0 = malloc(W * sizeof *h0), *seq = malloc(T * W * sizeof *seq);
    double *chunked = malloc(T * W * sizeof *chunked);
    lm_rng rng;
    lm_rng_seed(&rng, (uint64_t)int_at(root, "affine_scan.seed"));
    lm_rng_fill_uniform(&rng, 0.70, 0.99, a, T * W);
    lm_rng_fill_standard_normal(&rng, b, T * W);
    lm_rng_fill_standard_normal(&rng, h0, W);
    cr_assert_eq(lm_scan_affine_sequential_f64_ref(a, b, T, W, h0, seq, NULL), LM_OK);
    double checksum = real_at(root, "affine_scan.output_checksum");
    cr_assert(fabs(sum_of(seq, T * W) - checksum) <= fmax(1e-11 * fabs(checksum), 1e-12),
              "checksum %.17g, want %.17g", sum_of(seq, T * W), checksum);
    const size_t sizes[] = {1, 2, 7, chunk, T - 1, T, T + 1, 1000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        cr_log_info("chunk %zu", sizes[i]);
        cr_assert_eq(lm_scan_affine_chunked_f64_ref(a, b, T, W, sizes[i], h0, chunked, NULL),
                     LM_OK);
        assert_all_close(chunked, seq, T * W, 1e-12, 1e-12, "chunked");
    }
    /* no initial state means zero: equal to an explicit zero vector */
    double *zero = calloc(W, sizeof *zero);
    cr_assert_eq(lm_scan_affine_sequential_f64_ref(a, b, T, W, zero, seq, NULL), LM_OK);
    cr_assert_eq(lm_scan_affine_chunked_f64_ref(a, b, T, W, 5, NULL, chunked, NULL), LM_OK);
    assert_all_close(chunked, seq, T * W, 1e-12, 1e-12, "zero start");
    free(a), free(b), free(h0), free(seq), free(chunked), free(zero);
    json_decref(root);
}

Test(m8, affine_composition_is_associative_and_ordered)
{
    const double m1[2] = {0.9, 0.8}, c1[2] = {1.0, -1.0}, m2[2] = {0.7, 0.6}, c2[2] = {0.5, 2.0};
    const double m3[2] = {0.5, 0.4}, c3[2] = {-0.5, 1.0};
    double m21[2], c21[2], lm[2], lc[2], m32[2], c32[2], rm[2], rc[2];
    cr_assert_eq(lm_scan_compose_affine_f64_ref(m2, c2, m1, c1, 2, m21, c21, NULL), LM_OK);
    cr_assert_eq(lm_scan_compose_affine_f64_ref(m3, c3, m21, c21, 2, lm, lc, NULL), LM_OK);
    cr_assert_eq(lm_scan_compose_affine_f64_ref(m3, c3, m2, c2, 2, m32, c32, NULL), LM_OK);
    cr_assert_eq(lm_scan_compose_affine_f64_ref(m32, c32, m1, c1, 2, rm, rc, NULL), LM_OK);
    assert_all_close(lm, rm, 2, 0.0, 1e-15, "multiplier");
    assert_all_close(lc, rc, 2, 0.0, 1e-15, "bias");
    /* later(earlier(h)) applied to h = 0 is later's bias plus later's multiplier * earlier's */
    cr_assert_eq(c21[0], 0.7 * 1.0 + 0.5);
    cr_assert_eq(m21[1], 0.6 * 0.8);
}

/* ---- section 3 ---------------------------------------------------------------------- */

Test(m8, linear_attention_checksum_chunks_and_causality)
{
    json_t *root = contract_json();
    size_t T = (size_t)int_at(root, "linear_attention.sequence_length");
    size_t dk = (size_t)int_at(root, "linear_attention.key_width");
    size_t dv = (size_t)int_at(root, "linear_attention.value_width");
    size_t chunk = (size_t)int_at(root, "linear_attention.chunk_size");
    double *q = malloc(T * dk * sizeof *q), *k = malloc(T * dk * sizeof *k);
    double *v = malloc(T * dv * sizeof *v), *seq = malloc(T * dv * sizeof *seq);
    double *chunked = malloc(T * dv * sizeof *chunked);
    lm_rng rng;
    lm_rng_seed(&rng, (uint64_t)int_at(root, "linear_attention.seed"));
    lm_rng_fill_standard_normal(&rng, q, T * dk);
    lm_rng_fill_standard_normal(&rng, k, T * dk);
    lm_rng_fill_standard_normal(&rng, v, T * dv);
    cr_assert_eq(lm_linear_additive_sequential_f64_ref(q, dk, k, dk, v, dv, T, seq, NULL), LM_OK);
    double checksum = real_at(root, "linear_attention.output_checksum");
    cr_assert(fabs(sum_of(seq, T * dv) - checksum) <= fmax(1e-11 * fabs(checksum), 1e-12));
    const size_t sizes[] = {1, 7, chunk, T, T + 1, 64};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        cr_log_info("chunk %zu", sizes[i]);
        cr_assert_eq(lm_linear_additive_chunked_f64_ref(q, dk, k, dk, v, dv, T, sizes[i],
                                                        chunked, NULL), LM_OK);
        assert_all_close(chunked, seq, T * dv, 1e-12, 1e-12, "chunked");
    }
    for (size_t r = 0; r < dv; r++)
        v[(T - 1) * dv + r] += 100.0;
    cr_assert_eq(lm_linear_additive_chunked_f64_ref(q, dk, k, dk, v, dv, T, 7, chunked, NULL),
                 LM_OK);
    assert_all_close(chunked, seq, (T - 1) * dv, 1e-7, 0.0, "earlier outputs");
    cr_assert(fabs(chunked[T * dv - 1] - seq[T * dv - 1]) > 1.0, "the last output must move");
    free(q), free(k), free(v), free(seq), free(chunked);
    json_decref(root);
}

/* ---- section 4 ---------------------------------------------------------------------- */

typedef struct delta_out {
    double state[4], key[2], before[2], after[2];
} delta_out;

static lm_status delta_run(const double *state, const double *key, const double *value,
                           double beta, double decay, bool normalize, delta_out *out,
                           lm_error *err)
{
    const lm_delta_update_result r = {out->state, out->key, out->before, out->after};
    return lm_delta_update_f64_ref(state, 2, 2, key, 2, value, 2, beta, decay, normalize, &r, err);
}

Test(m8, delta_rule_matches_contract)
{
    json_t *root = contract_json();
    const double k[2] = {1.0, 0.0}, v2[2] = {3.0, 4.0}, state[4] = {1.0, 0.0, 2.0, 0.0};
    const struct {
        const char *path;
        double beta, decay;
    } cases[] = {{"delta.half_retrieval", 0.5, 1.0},
                 {"delta.full_retrieval", 1.0, 1.0},
                 {"delta.gated_half_retrieval", 0.5, 0.8}};
    for (size_t i = 0; i < 3; i++) {
        delta_out out;
        size_t dims[1];
        cr_assert_eq(delta_run(state, k, v2, cases[i].beta, cases[i].decay, true, &out, NULL),
                     LM_OK);
        double *want = array_at(root, cases[i].path, 1, dims);
        assert_all_close(out.after, want, 2, 1e-5, 1e-8, cases[i].path);
        cr_assert_eq(out.before[0], cases[i].decay * 1.0);
        free(want);
    }
    delta_out full, scaled, none;
    const double k7[2] = {7.0, 0.0};
    cr_assert_eq(delta_run(state, k, v2, 1.0, 1.0, false, &full, NULL), LM_OK);
    cr_assert_eq(full.after[0], 3.0, "exact overwrite at a unit key");
    cr_assert_eq(full.after[1], 4.0);
    cr_assert_eq(delta_run(state, k7, v2, 1.0, 1.0, true, &scaled, NULL), LM_OK);
    assert_all_close(scaled.state, full.state, 4, 0.0, 1e-15, "scaled key");
    cr_assert_eq(delta_run(state, k, v2, 0.0, 0.5, true, &none, NULL), LM_OK);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(none.state[i], 0.5 * state[i]);
    json_decref(root);
}

Test(m8, normalize_key_survives_extreme_magnitudes)
{
    const double magnitudes[] = {1e300, 1e-300, 5e-324, 1.7e308};
    for (size_t i = 0; i < sizeof magnitudes / sizeof magnitudes[0]; i++) {
        const double key[2] = {magnitudes[i], magnitudes[i]};
        double unit[2];
        cr_log_info("magnitude %g", magnitudes[i]);
        cr_assert_eq(lm_delta_normalize_key_f64_ref(key, 2, unit, NULL), LM_OK);
        assert_all_close(unit, (const double[]){1.0 / sqrt(2.0), 1.0 / sqrt(2.0)}, 2, 1e-15, 0.0, "unit");
    }
}

Test(m8, delta_unit_norm_rule_is_1e_10_and_gates_are_unit_interval)
{
    const double state[4] = {0}, value[2] = {1.0, 2.0};
    const double near[2] = {1.0 + 5e-11, 0.0}, far[2] = {1.0 + 1e-9, 0.0};
    delta_out out;
    lm_error err;
    cr_assert_eq(delta_run(state, near, value, 1.0, 1.0, false, &out, &err), LM_OK);
    cr_assert_eq(delta_run(state, far, value, 1.0, 1.0, false, &out, &err), LM_ERR_DOMAIN);
    cr_assert(strstr(err.message, "unit norm") != NULL, "%s", err.message);
    cr_assert_eq(delta_run(state, near, value, 1.5, 1.0, true, &out, &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "beta must lie in [0, 1]") != NULL, "%s", err.message);
    cr_assert_eq(delta_run(state, near, value, 1.0, -0.1, true, &out, &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "decay") != NULL, "%s", err.message);
    cr_assert_eq(delta_run(state, near, value, (double)NAN, 1.0, true, &out, &err),
                 LM_ERR_NONFINITE);
    const double bad_value[2] = {1.0, (double)INFINITY};
    cr_assert_eq(delta_run(state, near, bad_value, 1.0, 1.0, true, &out, &err), LM_ERR_NONFINITE);
    cr_assert(strstr(err.message, "value") != NULL, "%s", err.message);
    const lm_delta_update_result r = {out.state, out.key, out.before, out.after};
    cr_assert_eq(lm_delta_update_f64_ref(state, 2, 2, near, 2, value, 1, 1.0, 1.0, true, &r, &err),
                 LM_ERR_SHAPE);
    cr_assert(strstr(err.message, "state must have shape [d_value, d_key]") != NULL);
}

/* ---- section 5 ---------------------------------------------------------------------- */

Test(m8, recall_curve_softmax_and_paired_control_match_contract)
{
    json_t *root = contract_json();
    long long *loads = NULL;
    size_t count = 0, dims[1];
    lm_error err;
    cr_assert_eq(lm_json_int_array(root, "recall.stored_pairs", &loads, &count, &err), LM_OK);
    long long kw = int_at(root, "recall.key_width"), vw = int_at(root, "recall.value_width");
    long long seed = int_at(root, "recall.seed");
    double temperature = real_at(root, "recall.softmax_inverse_temperature");
    double mse[16], paired[16], softmax;
    cr_assert_leq(count, 16);
    cr_assert_eq(lm_delta_recall_curve_f64_ref(loads, count, kw, vw, seed, mse, &err), LM_OK,
                 "%s", err.message);
    double *want = array_at(root, "recall.mse", 1, dims);
    assert_all_close(mse, want, count, 1e-11, 1e-12, "mse");
    for (size_t i = 3; i < count; i++)
        cr_assert_gt(mse[i], mse[i - 1]);
    free(want);
    cr_assert_eq(lm_delta_softmax_addressing_mse_f64_ref(128, 32, 32, temperature,
                                                         int_at(root, "recall.softmax_seed"),
                                                         &softmax, &err), LM_OK);
    double want_softmax = real_at(root, "recall.softmax_mse_at_128");
    cr_assert(fabs(softmax - want_softmax) <= fmax(1e-10 * fabs(want_softmax), 1e-12));
    cr_assert(softmax > 0.0 && softmax < 1e-6);
    cr_assert_eq(lm_delta_paired_softmax_curve_f64_ref(loads, count, kw, vw, temperature, seed,
                                                       paired, &err), LM_OK);
    want = array_at(root, "recall.paired_softmax_mse", 1, dims);
    assert_all_close(paired, want, count, 1e-10, 1e-15, "paired_softmax_mse");
    free(want), free(loads);
    json_decref(root);
}

Test(m8, softmax_rows_are_stable_and_normalized)
{
    const double logits[6] = {1000.0, 1001.0, 999.0, -1e300, 0.0, 1e300};
    double w[6];
    cr_assert_eq(lm_delta_softmax_rows_f64_ref(logits, 2, 3, w, NULL), LM_OK);
    cr_assert(fabs(w[0] + w[1] + w[2] - 1.0) < 1e-15);
    cr_assert_gt(w[1], w[0]);
    cr_assert_eq(w[5], 1.0);
    cr_assert_eq(w[3], 0.0);
}

/* ---- section 6 ---------------------------------------------------------------------- */

Test(m8, memory_arithmetic_matches_contract)
{
    json_t *root = contract_json();
    const lm_kv_cache_geometry kv = {32, 8, 128, 2};
    const lm_ssm_state_geometry mamba1 = {32, 8192, 16, 4, 8192, 2};
    const lm_ssm_state_geometry mamba2 = {32, 8192, 128, 4, 8192 + 2 * 128, 2};
    long long per_token, full;
    cr_assert_eq(lm_arith_kv_bytes_per_token(&kv, &per_token, NULL), LM_OK);
    cr_assert_eq(per_token, int_at(root, "memory.kv_bytes_per_token_full_attention"));
    cr_assert_eq(lm_arith_kv_total_bytes(&kv, 256 * 1024, 1, &full, NULL), LM_OK);
    cr_assert_eq(full, int_at(root, "memory.full_attention_256k_bytes"));
    const struct {
        const char *name;
        const lm_ssm_state_geometry *g;
    } models[] = {{"memory.mamba1", &mamba1}, {"memory.mamba2_like", &mamba2}};
    for (int i = 0; i < 2; i++) {
        char path[128];
        lm_ssm_state_bytes bytes;
        lm_memory_crossover x;
        cr_assert_eq(lm_arith_ssm_state_bytes(models[i].g, 1, &bytes, NULL), LM_OK);
        cr_assert_eq(lm_arith_memory_crossover(per_token, bytes.total_bytes, &x, NULL), LM_OK);
#define FIELD(key) (snprintf(path, sizeof path, "%s.%s", models[i].name, key), path)
        cr_assert_eq(bytes.ssm_bytes, int_at(root, FIELD("ssm_bytes")));
        cr_assert_eq(bytes.conv_bytes, int_at(root, FIELD("conv_bytes")));
        cr_assert_eq(bytes.total_bytes, int_at(root, FIELD("total_bytes")));
        cr_assert_eq(x.tokens_exact, real_at(root, FIELD("crossover_tokens_exact")));
        cr_assert_eq(x.first_integer_token, int_at(root, FIELD("crossover_first_integer_token")));
        cr_assert_eq(x.first_strictly_larger_token,
                     int_at(root, FIELD("first_strictly_larger_token")));
#undef FIELD
        for (long long batch = 1; batch <= 5; batch++) { /* exercise 4: B cancels */
            lm_ssm_state_bytes bb;
            lm_memory_crossover xb;
            long long kvb;
            cr_assert_eq(lm_arith_ssm_state_bytes(models[i].g, batch, &bb, NULL), LM_OK);
            cr_assert_eq(lm_arith_kv_total_bytes(&kv, 1, batch, &kvb, NULL), LM_OK);
            cr_assert_eq(lm_arith_memory_crossover(kvb, bb.total_bytes, &xb, NULL), LM_OK);
            cr_assert_eq(xb.first_integer_token, x.first_integer_token);
            cr_assert_eq(xb.tokens_exact, x.tokens_exact);
        }
    }
    const lm_hybrid_config config = {32, 4, 256 * 1024, 8192, 16, 4, 8192, 8, 128, 2};
    lm_hybrid_memory h;
    cr_assert_eq(lm_arith_hybrid_memory(&config, &h, NULL), LM_OK);
    cr_assert_eq(h.kv_bytes, int_at(root, "memory.hybrid_256k.kv_bytes"));
    cr_assert_eq(h.ssm_bytes, int_at(root, "memory.hybrid_256k.ssm_bytes"));
    cr_assert_eq(h.conv_bytes, int_at(root, "memory.hybrid_256k.conv_bytes"));
    cr_assert_eq(h.recurrent_bytes, int_at(root, "memory.hybrid_256k.recurrent_bytes"));
    cr_assert_eq(h.total_bytes, int_at(root, "memory.hybrid_256k.total_bytes"));
    cr_assert_eq(h.ssm_layers, int_at(root, "memory.hybrid_256k.ssm_layers"));
    json_decref(root);
}

Test(m8, memory_edges_all_attention_all_ssm_no_conv_and_overflow)
{
    lm_hybrid_memory h;
    lm_error err;
    const lm_hybrid_config all_attention = {8, 8, 100, 64, 16, 0, 0, 2, 8, 2};
    cr_assert_eq(lm_arith_hybrid_memory(&all_attention, &h, &err), LM_OK, "%s", err.message);
    cr_assert_eq(h.recurrent_bytes, 0);
    cr_assert_eq(h.kv_bytes, 2LL * 8 * 2 * 8 * 2 * 100);
    const lm_hybrid_config all_ssm = {8, 0, 100, 64, 16, 4, 64, 2, 8, 2};
    cr_assert_eq(lm_arith_hybrid_memory(&all_ssm, &h, &err), LM_OK);
    cr_assert_eq(h.kv_bytes, 0);
    cr_assert_eq(h.total_bytes, h.recurrent_bytes);
    const lm_ssm_state_geometry half_conv = {1, 1, 1, 4, 0, 2};
    lm_ssm_state_bytes bytes;
    cr_assert_eq(lm_arith_ssm_state_bytes(&half_conv, 1, &bytes, &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "both be zero or both be positive") != NULL);
    const lm_kv_cache_geometry huge = {1LL << 40, 1LL << 20, 128, 2};
    long long total;
    cr_assert_eq(lm_arith_kv_bytes_per_token(&huge, &total, &err), LM_ERR_NUMERIC);
    const lm_kv_cache_geometry kv = {32, 8, 128, 2};
    cr_assert_eq(lm_arith_kv_total_bytes(&kv, -1, 1, &total, &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "context_tokens") != NULL);
    cr_assert_eq(lm_arith_kv_total_bytes(&kv, 0, 1, &total, &err), LM_OK);
    cr_assert_eq(total, 0);
    cr_assert_eq(lm_arith_kv_total_bytes(&kv, 1, 0, &total, &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "batch_size") != NULL);
}

Test(m8, decode_flops_match_contract)
{
    json_t *root = contract_json();
    long long *positions, *attention, *ssm;
    size_t n, na, ns, dims[1];
    lm_error err;
    cr_assert_eq(lm_json_int_array(root, "decode_flops.positions", &positions, &n, &err), LM_OK);
    cr_assert_eq(lm_json_int_array(root, "decode_flops.attention_core_flops", &attention, &na,
                                   &err), LM_OK);
    cr_assert_eq(lm_json_int_array(root, "decode_flops.ssm_core_flops", &ssm, &ns, &err), LM_OK);
    double *ratios = array_at(root, "decode_flops.ratios", 1, dims);
    cr_assert(na == n && ns == n && dims[0] == n);
    for (size_t i = 0; i < n; i++) {
        lm_decode_flops row;
        cr_assert_eq(lm_arith_decode_flops(positions[i], int_at(root, "decode_flops.model_width"),
                                           int_at(root, "decode_flops.inner_width"),
                                           int_at(root, "decode_flops.state_width"), &row, NULL),
                     LM_OK);
        cr_assert_eq(row.attention_core_flops, attention[i]);
        cr_assert_eq(row.ssm_core_flops, ssm[i]);
        assert_close(row.ratio, ratios[i], 1e-12, 0.0, "ratios", i);
    }
    lm_decode_flops row;
    cr_assert_eq(lm_arith_decode_flops(0, 1, 1, 1, &row, &err), LM_ERR_ARG);
    cr_assert(strstr(err.message, "context_tokens must be positive") != NULL);
    free(positions), free(attention), free(ssm), free(ratios);
    json_decref(root);
}

/* ---- section 7: the eleven negative cases --------------------------------------------- */

static void assert_rejects(lm_status got, lm_status want, const lm_error *err, const char *text)
{
    cr_assert_eq(got, want, "status %s, want %s (%s)", lm_status_name(got), lm_status_name(want),
                 err->message);
    cr_assert(strstr(err->message, text) != NULL, "'%s' not in '%s'", text, err->message);
}

Test(m8, negative_cases_of_section_7)
{
    lm_error err;
    double o1[4], o2[4], o3[4], o4[4];
    const double one[1] = {1.0}, minus_one[1] = {-1.0}, positive[1] = {0.1};
    assert_rejects(lm_ssm_zoh_discretize_f64_ref(positive, 1, one, 1, 1, 0.1, o1, o2, &err),
                   LM_ERR_DOMAIN, &err, "continuous_a must be non-positive");
    assert_rejects(lm_ssm_zoh_discretize_f64_ref(minus_one, 1, one, 1, 1, 0.0, o1, o2, &err),
                   LM_ERR_ARG, &err, "delta must be positive");
    const lm_ssm_system system = {minus_one, 1, one, 1, 1, one, 1, 1};
    const lm_ssm_scan_result result = {o1, o2, o3, o4};
    const double inputs[2] = {1.0, 2.0}, deltas[1] = {0.1};
    assert_rejects(lm_ssm_scan_diagonal_f64_ref(&system, inputs, 0, 1, deltas, 0, NULL, true,
                                                &result, &err),
                   LM_ERR_SHAPE, &err, "inputs must be non-empty");
    assert_rejects(lm_ssm_scan_diagonal_f64_ref(&system, inputs, 2, 1, deltas, 1, NULL, true,
                                                &result, &err),
                   LM_ERR_SHAPE, &err, "same sequence length");
    const double multiplier[1] = {0.9};
    assert_rejects(lm_scan_affine_chunked_f64_ref(multiplier, one, 1, 1, 0, NULL, o1, &err),
                   LM_ERR_ARG, &err, "chunk_size must be positive");
    const double k_row[2] = {1.0, 2.0};
    assert_rejects(lm_linear_additive_sequential_f64_ref(one, 1, k_row, 2, one, 1, 1, o1, &err),
                   LM_ERR_SHAPE, &err, "q and k must share feature width d_key");
    assert_rejects(lm_linear_additive_chunked_f64_ref(one, 1, k_row, 2, one, 1, 1, 4, o1, &err),
                   LM_ERR_SHAPE, &err, "d_key");
    const double zero_key[2] = {0.0, 0.0};
    assert_rejects(lm_delta_normalize_key_f64_ref(zero_key, 2, o1, &err), LM_ERR_DOMAIN, &err,
                   "key must have non-zero norm");
    const double zero_state[4] = {0}, long_key[2] = {2.0, 0.0}, value[2] = {1.0, 2.0};
    delta_out out;
    assert_rejects(delta_run(zero_state, long_key, value, 1.0, 1.0, false, &out, &err),
                   LM_ERR_DOMAIN, &err, "key must have unit norm when normalize=false");
    const double logits[2] = {0.0, (double)NAN};
    assert_rejects(lm_delta_softmax_rows_f64_ref(logits, 1, 2, o1, &err), LM_ERR_NONFINITE, &err,
                   "logits must contain only finite values");
    const lm_hybrid_config impossible = {8, 9, 128, 64, 16, 4, 64, 2, 8, 2};
    lm_hybrid_memory memory;
    assert_rejects(lm_arith_hybrid_memory(&impossible, &memory, &err), LM_ERR_ARG, &err,
                   "attention_layers must lie in [0, total_layers]");
    /* KVCacheGeometry(layers=True): the loader refuses a boolean where an integer goes */
    json_t *doc = json_loads("{\"layers\": true, \"kv_heads\": 8}", 0, NULL);
    long long layers;
    assert_rejects(lm_json_int(doc, "layers", &layers, &err), LM_ERR_TYPE, &err,
                   "layers must be an integer, got a boolean");
    cr_assert_eq(lm_json_int(doc, "kv_heads", &layers, &err), LM_OK);
    json_decref(doc);
    /* and in C, a non-positive layer count is refused by name */
    const lm_kv_cache_geometry no_layers = {0, 8, 128, 2};
    long long bytes;
    assert_rejects(lm_arith_kv_bytes_per_token(&no_layers, &bytes, &err), LM_ERR_ARG, &err,
                   "layers must be positive");
}

Test(m8, non_finite_and_empty_inputs_are_named)
{
    lm_error err;
    double o1[4], o2[4];
    const double nan_a[1] = {(double)NAN}, one[1] = {1.0}, minus_one[1] = {-1.0};
    assert_rejects(lm_ssm_zoh_discretize_f64_ref(nan_a, 1, one, 1, 1, 0.1, o1, o2, &err),
                   LM_ERR_NONFINITE, &err, "continuous_a must contain only finite values");
    const double two_rows[2] = {1.0, 1.0}; /* b {2, 1} against a {1} */
    assert_rejects(lm_ssm_zoh_discretize_f64_ref(minus_one, 1, two_rows, 2, 1, 0.1, o1, o2, &err),
                   LM_ERR_SHAPE, &err, "continuous_b must have shape [d_state, d_input]");
    assert_rejects(lm_ssm_zoh_discretize_f64_ref(minus_one, 1, one, 1, 1, (double)INFINITY, o1,
                                                 o2, &err),
                   LM_ERR_NONFINITE, &err, "delta must be finite");
    /* exp cannot overflow for a <= 0, but B-bar can: the a = 0 limit with a huge b * delta */
    const double zero_a[1] = {0.0}, huge_b[1] = {1e308};
    assert_rejects(lm_ssm_zoh_discretize_f64_ref(zero_a, 1, huge_b, 1, 1, 1e10, o1, o2, &err),
                   LM_ERR_NUMERIC, &err, "non-finite input matrix");
    const double ones[2] = {1.0, 1.0}, bad_bias[2] = {1.0, (double)NAN};
    assert_rejects(lm_scan_compose_affine_f64_ref(ones, ones, ones, bad_bias, 2, o1, o2, &err),
                   LM_ERR_NONFINITE, &err, "earlier.bias must contain only finite values");
    assert_rejects(lm_scan_affine_sequential_f64_ref(ones, bad_bias, 1, 2, NULL, o1, &err),
                   LM_ERR_NONFINITE, &err, "biases");
    assert_rejects(lm_scan_affine_sequential_f64_ref(ones, ones, 0, 2, NULL, o1, &err),
                   LM_ERR_SHAPE, &err, "multipliers must be non-empty");
    assert_rejects(lm_linear_additive_sequential_f64_ref(ones, 2, bad_bias, 2, ones, 2, 1, o1,
                                                         &err),
                   LM_ERR_NONFINITE, &err, "k must contain only finite values");
    const long long loads[2] = {4, 0};
    assert_rejects(lm_delta_recall_curve_f64_ref(loads, 2, 8, 8, 7, o1, &err), LM_ERR_ARG, &err,
                   "stored_pairs item must be positive");
    assert_rejects(lm_delta_recall_curve_f64_ref(loads, 0, 8, 8, 7, o1, &err), LM_ERR_SHAPE, &err,
                   "stored_pairs must be non-empty");
    assert_rejects(lm_delta_recall_curve_f64_ref(loads, 1, 0, 8, 7, o1, &err), LM_ERR_ARG, &err,
                   "key_width must be positive");
    assert_rejects(lm_delta_recall_curve_f64_ref(loads, 1, 8, 8, -1, o1, &err), LM_ERR_ARG, &err,
                   "seed must be non-negative");
    assert_rejects(lm_delta_softmax_addressing_mse_f64_ref(4, 8, 8, 0.0, 7, o1, &err), LM_ERR_ARG,
                   &err, "inverse_temperature must be positive");
}

/* ---- the checker ------------------------------------------------------------------------ */

static lm_status verify_json(json_t *root, size_t *passed, size_t *failed, lm_error *err)
{
    lm_contract contract = {.path = "in-memory m8", .root = root};
    lm_report *report = lm_report_new();
    cr_assert_not_null(report);
    lm_status status = lm_verify_m8(&contract, report, err);
    *passed = lm_report_passed(report);
    *failed = lm_report_failed(report);
    lm_report_free(report);
    return status;
}

Test(m8, checker_passes_the_seed_contract)
{
    json_t *root = contract_json();
    size_t passed, failed;
    lm_error err;
    cr_assert_eq(verify_json(root, &passed, &failed, &err), LM_OK, "%s", err.message);
    cr_assert_eq(failed, 0);
    cr_assert_geq(passed, 150);
    json_decref(root);
}

Test(m8, checker_catches_one_value_off_by_more_than_its_tolerance)
{
    const struct {
        const char *section, *field;
        size_t index;
        double shift;
    } cases[] = {{"zoh", "exact_outputs", 1, 1e-10},     {"recall", "mse", 4, 1e-9},
                 {"recall", "paired_softmax_mse", 0, 1e-14}, {"decode_flops", "ratios", 2, 1e-6},
                 {"delta", "half_retrieval", 0, 1e-4}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *root = contract_json();
        json_t *array = json_object_get(json_object_get(root, cases[i].section), cases[i].field);
        json_t *item = json_array_get(array, cases[i].index);
        cr_assert_not_null(item);
        json_array_set_new(array, cases[i].index, json_real(json_number_value(item) +
                                                             cases[i].shift));
        size_t passed, failed;
        lm_error err;
        cr_log_info("%s.%s[%zu] + %g", cases[i].section, cases[i].field, cases[i].index,
                    cases[i].shift);
        cr_assert_eq(verify_json(root, &passed, &failed, &err), LM_OK, "%s", err.message);
        cr_assert_eq(failed, 1, "%s.%s: %zu failed", cases[i].section, cases[i].field, failed);
        json_decref(root);
    }
}

Test(m8, checker_reports_a_wrong_shape_as_a_failed_check)
{
    json_t *root = contract_json();
    json_array_remove(json_object_get(json_object_get(root, "zoh"), "transitions"), 2);
    size_t passed, failed;
    lm_error err;
    cr_assert_eq(verify_json(root, &passed, &failed, &err), LM_OK, "%s", err.message);
    cr_assert_eq(failed, 1);
    json_decref(root);
}

Test(m8, checker_refuses_booleans_missing_fields_and_bad_sizes_by_path)
{
    const struct {
        const char *section, *field;
        json_t *value; /* NULL: delete the field */
        lm_status status;
        const char *text;
    } cases[] = {
        {"affine_scan", "seed", json_true(), LM_ERR_TYPE,
         "affine_scan.seed must be an integer, got a boolean"},
        {"linear_attention", "chunk_size", json_false(), LM_ERR_TYPE,
         "linear_attention.chunk_size must be an integer"},
        {"zoh", "deltas", NULL, LM_ERR_SCHEMA, "missing field zoh.deltas"},
        {"recall", "key_width", json_integer(0), LM_ERR_SCHEMA, "recall.key_width must be"},
        {"affine_scan", "sequence_length", json_integer(-3), LM_ERR_SCHEMA,
         "affine_scan.sequence_length must be"},
        {"decode_flops", "scope", json_integer(1), LM_ERR_TYPE, "decode_flops.scope must be a string"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *root = contract_json();
        json_t *section = json_object_get(root, cases[i].section);
        if (cases[i].value == NULL)
            json_object_del(section, cases[i].field);
        else
            json_object_set_new(section, cases[i].field, cases[i].value);
        size_t passed, failed;
        lm_error err;
        lm_status status = verify_json(root, &passed, &failed, &err);
        cr_assert_eq(status, cases[i].status, "%s.%s: %s", cases[i].section, cases[i].field,
                     err.message);
        cr_assert(strstr(err.message, cases[i].text) != NULL, "'%s' not in '%s'", cases[i].text,
                  err.message);
        json_decref(root);
    }
}

Test(m8, zoh_system_past_the_memory_budget_is_refused_before_allocating)
{
    /* 16384 steps of 4096 states: each field within its cap, gigabytes together */
    json_t *root = contract_json();
    json_t *zoh = json_object_get(root, "zoh");
    json_t *a = json_array(), *b = json_array(), *c_row = json_array(), *c = json_array();
    json_t *x = json_array(), *deltas = json_array();
    for (int i = 0; i < 4096; i++) {
        json_array_append_new(a, json_real(-1.0));
        json_array_append_new(b, json_pack("[f]", 1.0));
        json_array_append_new(c_row, json_real(1.0));
    }
    json_array_append_new(c, c_row);
    for (int t = 0; t < 16384; t++) {
        json_array_append_new(x, json_pack("[f]", 1.0));
        json_array_append_new(deltas, json_real(0.1));
    }
    json_object_set_new(zoh, "continuous_a", a);
    json_object_set_new(zoh, "continuous_b", b);
    json_object_set_new(zoh, "output_c", c);
    json_object_set_new(zoh, "inputs", x);
    json_object_set_new(zoh, "deltas", deltas);
    size_t passed, failed;
    lm_error err;
    cr_assert_eq(verify_json(root, &passed, &failed, &err), LM_ERR_SCHEMA);
    cr_assert_str_eq(err.message, "zoh: checking 16384 steps of 4096 states, 1 inputs and 1 "
                                  "outputs needs 99.5 GiB (all its buffers), more than the 1 GiB "
                                  "limit");
    json_decref(root);
}

Test(m8, ragged_expected_array_is_a_malformed_file)
{
    json_t *root = contract_json();
    json_error_t error;
    json_object_set_new(json_object_get(root, "zoh"), "exact_input_matrices",
                        json_loads("[[[0.0, 0.0], 0.0], 0.0]", 0, &error));
    size_t passed, failed;
    lm_error err;
    cr_assert_eq(verify_json(root, &passed, &failed, &err), LM_ERR_SCHEMA);
    cr_assert_str_eq(err.message, "zoh.exact_input_matrices must be rectangular: "
                                  "zoh.exact_input_matrices[0][1] must be an array of 2 entries, "
                                  "got a real number");
    json_decref(root);
}

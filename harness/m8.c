/* The M8 checker (schema_version 2): recomputes every expected number of the M8 notebook's seven
 * sections with the float64 references, at the notebook's tolerances, then checks the
 * notebook's invariants and its eleven negative cases.
 *
 * Every parameter the file carries (seeds, lengths, widths, chunk sizes, loads, temperature,
 * the ZOH system with its inputs and steps, decode positions and widths) is read from the
 * file. What the notebook fixes in code stays in code: the delta-rule vectors, the cache
 * geometries, the 128-pair softmax control, the T1/T2/T3 transforms, the zero-mode and
 * long-step systems and the negative-case inputs. No expected value is written here.
 *
 * A missing field or a value of the wrong kind is returned as an error naming its path (the
 * CLI's exit 2); a parameter out of range (a negative length, a zero width) is
 * LM_ERR_SCHEMA too. Everything else is a check in the report. */
#include "longmix.h"
#include "contract.h"
#include "jsonx.h"
#include "size_budget.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NAME_SIZE = 160 };

/* Limits on sizes read from a file, so that a typo cannot ask for gigabytes. */
enum {
    MAX_SEQUENCE = 1 << 16, /* time steps */
    MAX_WIDTH = 1 << 12,    /* state, key, value, input and output widths */
    MAX_PAIRS = 2048,       /* stored pairs per load (the softmax table is pairs^2) */
    MAX_LOADS = 64,         /* loads and decode positions */
};

/* Bytes of one check in the report (its record and its six texts, with malloc's overhead),
 * counted in a section's memory budget. */
enum { REPORT_BYTES_PER_CHECK = 384 };

typedef struct m8_run {
    const json_t *root;
    lm_report *report;
    lm_error *err;
} m8_run;

/* ---- reading parameters --------------------------------------------------------------- */

/* An integer parameter in [low, high]; LM_ERR_SCHEMA naming the path when out of range. */
static lm_status read_int(const m8_run *m, const char *path, long long low, long long high,
                          long long *out)
{
    lm_status status = lm_json_int(m->root, path, out, m->err);
    if (status != LM_OK)
        return status;
    if (*out < low || *out > high)
        return lm_fail(m->err, LM_ERR_SCHEMA, "%s must be an integer in [%lld, %lld], got %lld",
                       path, low, high, *out);
    return LM_OK;
}

static lm_status read_size(const m8_run *m, const char *path, long long high, size_t *out)
{
    long long value;
    lm_status status = read_int(m, path, 1, high, &value);
    if (status == LM_OK)
        *out = (size_t)value;
    return status;
}

/* A finite real parameter. */
static lm_status read_real(const m8_run *m, const char *path, double *out)
{
    lm_status status = lm_json_real(m->root, path, out, m->err);
    if (status == LM_OK && !isfinite(*out))
        return lm_fail(m->err, LM_ERR_SCHEMA, "%s must be finite", path);
    return status;
}

/* ---- expected values ---------------------------------------------------------------- */

/* "field[i][j]" for flat index `flat` of an array with extents dims[0..ndim). */
static void element_name(char *name, size_t size, const char *field, size_t ndim,
                         const size_t *dims, size_t flat)
{
    size_t index[4] = {0, 0, 0, 0};
    for (size_t axis = ndim; axis-- > 0;) {
        index[axis] = flat % dims[axis];
        flat /= dims[axis];
    }
    int used = snprintf(name, size, "%s", field);
    for (size_t axis = 0; axis < ndim && used > 0 && (size_t)used < size; axis++)
        used += snprintf(name + used, size - (size_t)used, "[%zu]", index[axis]);
}

static void dims_text(char *text, size_t size, size_t ndim, const size_t *dims)
{
    int used = snprintf(text, size, "[");
    for (size_t axis = 0; axis < ndim && used > 0 && (size_t)used < size; axis++)
        used += snprintf(text + used, size - (size_t)used, "%s%zu", axis ? ", " : "", dims[axis]);
    if (used > 0 && (size_t)used < size)
        snprintf(text + used, size - (size_t)used, "]");
}

/* Reads the expected array section.field of shape want[0..ndim). A shape other than the
 * recomputed one is a failed check "field shape" and leaves *data NULL (its elements are
 * then not compared); a missing or non-numeric field is an error. */
static lm_status expected_array(const m8_run *m, const char *section, const char *field,
                                size_t ndim, const size_t *want, double **data)
{
    char path[NAME_SIZE], name[NAME_SIZE], want_text[64], got_text[64];
    size_t dims[4] = {0, 0, 0, 0};
    *data = NULL;
    snprintf(path, sizeof path, "%s.%s", section, field);
    double *values = NULL;
    lm_status status = lm_json_array(m->root, path, ndim, dims, &values, m->err);
    if (status == LM_ERR_SHAPE) { /* empty or of another rank: a wrong shape (a ragged array
                                     has none: LM_ERR_SCHEMA, the file is malformed) */
        snprintf(name, sizeof name, "%s shape", field);
        dims_text(want_text, sizeof want_text, ndim, want);
        lm_check_true(m->report, section, name, false, want_text, m->err->message);
        lm_error_clear(m->err);
        return LM_OK;
    }
    if (status != LM_OK)
        return status;
    bool same = true;
    for (size_t axis = 0; axis < ndim; axis++)
        same = same && dims[axis] == want[axis];
    if (!same) {
        snprintf(name, sizeof name, "%s shape", field);
        dims_text(want_text, sizeof want_text, ndim, want);
        dims_text(got_text, sizeof got_text, ndim, dims);
        lm_check_true(m->report, section, name, false, want_text, got_text);
        free(values);
        return LM_OK;
    }
    *data = values;
    return LM_OK;
}

typedef enum rule { RULE_ALLCLOSE, RULE_ISCLOSE } rule;

/* One check per element: expected from the file, got recomputed. */
static void check_elements(const m8_run *m, const char *section, const char *field,
                           size_t ndim, const size_t *dims, const double *expected,
                           const double *got, rule kind, double rtol, double atol)
{
    if (expected == NULL)
        return;
    size_t total = 1;
    for (size_t axis = 0; axis < ndim; axis++)
        total *= dims[axis];
    char name[NAME_SIZE];
    for (size_t i = 0; i < total; i++) {
        element_name(name, sizeof name, field, ndim, dims, i);
        if (kind == RULE_ALLCLOSE)
            lm_check_close(m->report, section, name, expected[i], got[i], rtol, atol);
        else
            lm_check_isclose(m->report, section, name, expected[i], got[i], rtol, atol);
    }
}

/* Reads section.field (a 1-D or higher array of shape dims) and checks every element. */
static lm_status check_field(const m8_run *m, const char *section, const char *field,
                             size_t ndim, const size_t *dims, const double *got, rule kind,
                             double rtol, double atol)
{
    double *expected;
    lm_status status = expected_array(m, section, field, ndim, dims, &expected);
    if (status != LM_OK)
        return status;
    check_elements(m, section, field, ndim, dims, expected, got, kind, rtol, atol);
    free(expected);
    return LM_OK;
}

/* An integer expected value at section.path. */
static lm_status check_int_field(const m8_run *m, const char *section, const char *field,
                                 long long got)
{
    char path[NAME_SIZE];
    snprintf(path, sizeof path, "%s.%s", section, field);
    long long expected;
    lm_status status = lm_json_int(m->root, path, &expected, m->err);
    if (status != LM_OK)
        return status;
    lm_check_int(m->report, section, field, expected, got);
    return LM_OK;
}

typedef struct int_field {
    const char *key;
    long long got;
} int_field;

/* check_int_field for each of fields[0..count), at section.prefix.key. */
static lm_status check_int_fields(const m8_run *m, const char *section, const char *prefix,
                                  const int_field *fields, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        char name[NAME_SIZE];
        snprintf(name, sizeof name, "%s.%s", prefix, fields[i].key);
        lm_status status = check_int_field(m, section, name, fields[i].got);
        if (status != LM_OK)
            return status;
    }
    return LM_OK;
}

/* numpy.allclose(got, want, rtol, atol) over n values, as one invariant check whose got
 * column shows the largest difference. */
static bool check_allclose(const m8_run *m, const char *section, const char *name,
                           const double *got, const double *want, size_t n, double rtol,
                           double atol)
{
    bool ok = true;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double difference = fabs(got[i] - want[i]);
        ok = ok && isfinite(got[i]) && isfinite(want[i]) &&
             difference <= atol + rtol * fabs(want[i]);
        worst = fmax(worst, difference);
    }
    char expected_text[96], got_text[96];
    snprintf(expected_text, sizeof expected_text, "allclose(rtol=%g, atol=%g)", rtol, atol);
    snprintf(got_text, sizeof got_text, "max |difference| = %.3g over %zu values", worst, n);
    return lm_check_true(m->report, section, name, ok, expected_text, got_text);
}

static double max_abs_difference(const double *a, const double *b, size_t n)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(a[i] - b[i]));
    return worst;
}

/* The integer array at path, holding 1 to MAX_LOADS `entries` (LM_ERR_SCHEMA otherwise).
 * On LM_OK *values {*count} is the caller's to free. */
static lm_status read_int_list(const m8_run *m, const char *path, const char *entries,
                               long long **values, size_t *count)
{
    lm_status status = lm_json_int_array(m->root, path, values, count, m->err);
    if (status != LM_OK)
        return status;
    if (*count == 0 || *count > MAX_LOADS) {
        free(*values);
        *values = NULL;
        return lm_fail(m->err, LM_ERR_SCHEMA, "%s must hold 1 to %d %s", path, MAX_LOADS,
                       entries);
    }
    return LM_OK;
}

/* A reference call that should succeed: a failed check naming the error when it does not. */
static bool check_ran(const m8_run *m, const char *section, const char *name, lm_status status,
                      const lm_error *call_err)
{
    if (status == LM_OK)
        return true;
    char got_text[LM_ERROR_MESSAGE_SIZE + 32];
    snprintf(got_text, sizeof got_text, "%s error: %s", lm_status_name(status),
             call_err->message);
    lm_check_true(m->report, section, name, false, "ok", got_text);
    return false;
}

static void *zeroed(size_t count, size_t size) { return calloc(count ? count : 1, size); }

/* ---- section 1: ZOH and the selective scan -------------------------------------------- */

static lm_status check_zoh_fixed_cases(const m8_run *m)
{
    const char *section = "zoh";
    lm_error call;
    /* The zero continuous mode uses the analytical limit phi(0) = delta. */
    const double zero_a[2] = {0.0, -1.0}, ones[2] = {1.0, 1.0};
    double transition[2], input_matrix[2];
    lm_status status = lm_ssm_zoh_discretize_f64_ref(zero_a, 2, ones, 2, 1, 0.25, transition,
                                                     input_matrix, &call);
    if (check_ran(m, section, "zero_mode_input_matrix (discretize)", status, &call)) {
        const size_t dims[2] = {2, 1};
        /* np.allclose(..., atol=1e-12): rtol is NumPy's default 1e-5 */
        if ((status = check_field(m, section, "zero_mode_input_matrix", 2, dims, input_matrix,
                                  RULE_ALLCLOSE, 1e-5, 1e-12)) != LM_OK)
            return status;
        char got_text[64];
        snprintf(got_text, sizeof got_text, "%.17g", input_matrix[0]);
        lm_check_true(m->report, section, "a = 0 limit is delta exactly", input_matrix[0] == 0.25,
                      "0.25 (== delta, bit for bit)", got_text);
    }
    /* A small a is not a zero mode when delta * a is of order one. */
    const double long_a[2] = {-1e-15, 0.0};
    status = lm_ssm_zoh_discretize_f64_ref(long_a, 2, ones, 2, 1, 1e15, transition, input_matrix,
                                           &call);
    if (check_ran(m, section, "long step 1e15 (discretize)", status, &call)) {
        lm_check_close(m->report, section, "long step 1e15, a = -1e-15", (1.0 - exp(-1.0)) * 1e15,
                       input_matrix[0], 1e-14, 0.0);
        lm_check_close(m->report, section, "long step 1e15, a = 0", 1e15, input_matrix[1], 1e-14,
                       0.0);
    }
    /* Exercise 1: the step where the Delta*B relative error first reaches 10 % (a = -1),
     * solved here; then the file's value is checked against it and by substitution. */
    double root, file_root, error;
    status = lm_arith_delta_b_error_root(-1.0, 0.1, &root, &call);
    if (!check_ran(m, section, "ten percent root (solve)", status, &call))
        return LM_OK;
    if ((status = read_real(m, "zoh.ten_percent_relative_error_root_a_minus_1", &file_root)) !=
        LM_OK)
        return status;
    lm_check_isclose(m->report, section, "ten_percent_relative_error_root_a_minus_1", file_root,
                     root, 0.0, 1e-13);
    lm_arith_delta_b_relative_error(-1.0, root, &error, &call);
    lm_check_isclose(m->report, section, "relative error at the solved root", 0.1, error, 0.0,
                     1e-12);
    if (lm_arith_delta_b_relative_error(-1.0, file_root, &error, &call) == LM_OK)
        lm_check_isclose(m->report, section, "relative error at the file's root", 0.1, error, 0.0,
                         1e-12);
    else
        check_ran(m, section, "relative error at the file's root", LM_ERR_ARG, &call);
    return LM_OK;
}

/* Everything the zoh check allocates, from its shape, within LM_CASE_MAX_BYTES before any
 * of it is: the 8 scan buffers (sizes[]), 3 columns of `steps`, the largest expected array
 * read at a time (steps x n x p) and the report's record of each element checked. */
static lm_status zoh_budget(const m8_run *m, const size_t sizes[8], size_t steps, size_t n,
                            size_t p, size_t outputs)
{
    lm_budget budget = lm_budget_of(LM_CASE_MAX_BYTES);
    for (int i = 0; i < 8; i++)
        lm_budget_add(&budget, sizes[i], sizeof(double));
    lm_budget_add(&budget, lm_size_mul(steps, 3), sizeof(double));
    lm_budget_add(&budget, sizes[3], sizeof(double));
    const size_t checked = lm_size_add(lm_size_add(lm_size_mul(sizes[0], 3), sizes[3]),
                                       lm_size_mul(steps, 4));
    lm_budget_add(&budget, checked, REPORT_BYTES_PER_CHECK);
    char what[160];
    snprintf(what, sizeof what, "zoh: checking %zu steps of %zu states, %zu inputs and %zu "
             "outputs", steps, n, p, outputs);
    return lm_budget_check(&budget, what, m->err);
}

static lm_status check_zoh(const m8_run *m)
{
    const char *section = "zoh";
    double *a = NULL, *b = NULL, *c = NULL, *x = NULL, *deltas = NULL;
    double *buffers[8] = {NULL};
    size_t a_dims[1], b_dims[2], c_dims[2], x_dims[2], d_dims[1];
    lm_status status;
    if ((status = lm_json_array(m->root, "zoh.continuous_a", 1, a_dims, &a, m->err)) != LM_OK ||
        (status = lm_json_array(m->root, "zoh.continuous_b", 2, b_dims, &b, m->err)) != LM_OK ||
        (status = lm_json_array(m->root, "zoh.output_c", 2, c_dims, &c, m->err)) != LM_OK ||
        (status = lm_json_array(m->root, "zoh.inputs", 2, x_dims, &x, m->err)) != LM_OK ||
        (status = lm_json_array(m->root, "zoh.deltas", 1, d_dims, &deltas, m->err)) != LM_OK)
        goto done;
    const size_t n = a_dims[0], p = b_dims[1], outputs_width = c_dims[0], steps = x_dims[0];
    if (n > MAX_WIDTH || p > MAX_WIDTH || outputs_width > MAX_WIDTH || steps > MAX_SEQUENCE) {
        status = lm_fail(m->err, LM_ERR_SCHEMA, "zoh: system too large to check (at most %d "
                         "steps and %d states, inputs and outputs)", MAX_SEQUENCE, MAX_WIDTH);
        goto done;
    }
    const lm_ssm_system system = {a, n, b, b_dims[0], b_dims[1], c, c_dims[0], c_dims[1]};
    lm_ssm_scan_result exact, approximate;
    double **slots[8] = {&exact.states,      &exact.outputs,      &exact.transitions,
                         &exact.input_matrices, &approximate.states, &approximate.outputs,
                         &approximate.transitions, &approximate.input_matrices};
    const size_t by_n = lm_size_mul(steps, n), by_np = lm_size_mul(by_n, p);
    const size_t by_out = lm_size_mul(steps, outputs_width);
    const size_t sizes[8] = {by_n, by_out, by_n, by_np, by_n, by_out, by_n, by_np};
    if ((status = zoh_budget(m, sizes, steps, n, p, outputs_width)) != LM_OK)
        goto done;
    for (int i = 0; i < 8; i++) {
        buffers[i] = *slots[i] = zeroed(sizes[i], sizeof(double));
        if (buffers[i] == NULL) {
            status = lm_fail(m->err, LM_ERR_NOMEM, "zoh: out of memory");
            goto done;
        }
    }
    lm_error call;
    status = lm_ssm_scan_diagonal_f64_ref(&system, x, steps, x_dims[1], deltas, d_dims[0], NULL,
                                          true, &exact, &call);
    bool exact_ok = check_ran(m, section, "exact scan", status, &call);
    status = lm_ssm_scan_diagonal_f64_ref(&system, x, steps, x_dims[1], deltas, d_dims[0], NULL,
                                          false, &approximate, &call);
    bool approximate_ok = check_ran(m, section, "approximate (delta*B) scan", status, &call);
    status = LM_OK;

    const double tol = 1e-12; /* the notebook: rtol = atol = 1e-12 */
    const size_t by_state[2] = {steps, n}, by_input[3] = {steps, n, p}, by_step[1] = {steps};
    /* the file's outputs are the first output channel, exact.outputs[:, 0] */
    double *first_output = zeroed(steps, sizeof(double));
    double *first_approximate = zeroed(steps, sizeof(double));
    double *relative = zeroed(steps, sizeof(double));
    if (first_output == NULL || first_approximate == NULL || relative == NULL) {
        free(first_output), free(first_approximate), free(relative);
        status = lm_fail(m->err, LM_ERR_NOMEM, "zoh: out of memory");
        goto done;
    }
    for (size_t t = 0; t < steps; t++) {
        first_output[t] = exact.outputs[t * outputs_width];
        first_approximate[t] = approximate.outputs[t * outputs_width];
    }
    if (exact_ok) {
        if ((status = check_field(m, section, "transitions", 2, by_state, exact.transitions,
                                  RULE_ALLCLOSE, tol, tol)) != LM_OK ||
            (status = check_field(m, section, "exact_input_matrices", 3, by_input,
                                  exact.input_matrices, RULE_ALLCLOSE, tol, tol)) != LM_OK ||
            (status = check_field(m, section, "exact_states", 2, by_state, exact.states,
                                  RULE_ALLCLOSE, tol, tol)) != LM_OK ||
            (status = check_field(m, section, "exact_outputs", 1, by_step, first_output,
                                  RULE_ALLCLOSE, tol, tol)) != LM_OK)
            goto free_columns;
        /* relative Delta*B error of the first mode, per step:
         * |delta*b[0][0] - Bbar[0][0]| / Bbar[0][0] */
        for (size_t t = 0; t < steps; t++) {
            double bbar = exact.input_matrices[t * n * p];
            relative[t] = fabs(deltas[t] * b[0] - bbar) / bbar;
        }
        if ((status = check_field(m, section, "relative_input_error_first_mode", 1, by_step,
                                  relative, RULE_ALLCLOSE, tol, tol)) != LM_OK)
            goto free_columns;
    }
    if (approximate_ok) {
        /* approximate_outputs is in the file but not asserted by the notebook; checked at
         * the section's tolerance all the same. */
        if ((status = check_field(m, section, "approximate_states", 2, by_state,
                                  approximate.states, RULE_ALLCLOSE, tol, tol)) != LM_OK ||
            (status = check_field(m, section, "approximate_outputs", 1, by_step,
                                  first_approximate, RULE_ALLCLOSE, tol, tol)) != LM_OK)
            goto free_columns;
    }
    status = check_zoh_fixed_cases(m);
free_columns:
    free(first_output);
    free(first_approximate);
    free(relative);
done:
    for (int i = 0; i < 8; i++)
        free(buffers[i]);
    free(a), free(b), free(c), free(x), free(deltas);
    return status;
}

/* ---- sections 2 and 3: a chunked evaluation against the sequential one ------------------- */

/* One chunked evaluation of a section's inputs at chunk size `chunk` into out. */
typedef lm_status (*chunked_fn)(const void *inputs, size_t chunk, double *out, lm_error *err);

typedef struct chunked_section {
    const char *section;
    const char *run_name;   /* check_ran's name for the run at the contract's chunk size */
    chunked_fn run;
    const void *inputs;
    const double *sequential; /* {n}: the sequential result */
    double *chunked;          /* {n}: scratch */
    size_t n, steps, chunk;   /* chunk: the contract's chunk size */
    double checksum, file_difference;
} chunked_section;

/* The checks the affine scan and linear attention share: the file's output checksum against
 * np.sum of the sequential result; max_abs_difference; chunked == sequential at chunk sizes
 * 1, 7, the contract's and one past the length. max_abs_difference is what the notebook
 * measured with NumPy's rounding; a C reimplementation rounds differently, so it is a bound,
 * not a value: the recomputed difference at the contract's chunk size must be below 1e-12
 * (the notebook's assert), and so must the value the file records. */
static void check_chunked_section(const m8_run *m, const chunked_section *c)
{
    lm_check_isclose(m->report, c->section, "output_checksum", c->checksum,
                     lm_sum_pairwise_f64(c->sequential, c->n), 1e-11, 1e-12);
    lm_error call;
    lm_status status = c->run(c->inputs, c->chunk, c->chunked, &call);
    if (check_ran(m, c->section, c->run_name, status, &call)) {
        char name[NAME_SIZE];
        snprintf(name, sizeof name, "max_abs_difference (recomputed, chunk %zu)", c->chunk);
        lm_check_below(m->report, c->section, name,
                       max_abs_difference(c->sequential, c->chunked, c->n), 1e-12);
    }
    lm_check_below(m->report, c->section, "max_abs_difference (file value, as a bound)",
                   c->file_difference, 1e-12);
    const size_t chunk_sizes[4] = {1, 7, c->chunk, c->steps + 1};
    for (int i = 0; i < 4; i++) {
        char name[NAME_SIZE];
        snprintf(name, sizeof name, "chunked == sequential, chunk %zu", chunk_sizes[i]);
        status = c->run(c->inputs, chunk_sizes[i], c->chunked, &call);
        if (check_ran(m, c->section, name, status, &call))
            check_allclose(m, c->section, name, c->chunked, c->sequential, c->n, 1e-12, 1e-12);
    }
}

/* ---- section 2: associativity and the chunked affine scan -------------------------------- */

typedef struct affine_inputs {
    const double *a, *b, *h0; /* multipliers, biases {steps, width}; initial state {width} */
    size_t steps, width;
} affine_inputs;

static lm_status affine_chunked(const void *inputs, size_t chunk, double *out, lm_error *err)
{
    const affine_inputs *in = inputs;
    return lm_scan_affine_chunked_f64_ref(in->a, in->b, in->steps, in->width, chunk, in->h0,
                                          out, err);
}

static lm_status check_affine(const m8_run *m)
{
    const char *section = "affine_scan";
    long long seed;
    size_t steps, width, chunk;
    double checksum, file_difference;
    lm_status status;
    if ((status = read_int(m, "affine_scan.seed", 0, INT64_MAX, &seed)) != LM_OK ||
        (status = read_size(m, "affine_scan.sequence_length", MAX_SEQUENCE, &steps)) != LM_OK ||
        (status = read_size(m, "affine_scan.state_width", MAX_WIDTH, &width)) != LM_OK ||
        (status = read_size(m, "affine_scan.chunk_size", MAX_SEQUENCE, &chunk)) != LM_OK ||
        (status = read_real(m, "affine_scan.output_checksum", &checksum)) != LM_OK ||
        (status = read_real(m, "affine_scan.max_abs_difference", &file_difference)) != LM_OK)
        return status;
    if (steps * width > (size_t)MAX_SEQUENCE * 16)
        return lm_fail(m->err, LM_ERR_SCHEMA, "affine_scan: sequence_length * state_width too large");
    const size_t n = steps * width;
    double *a = zeroed(n, sizeof *a), *b = zeroed(n, sizeof *b), *h0 = zeroed(width, sizeof *h0);
    double *sequential = zeroed(n, sizeof *a), *chunked = zeroed(n, sizeof *a);
    if (a == NULL || b == NULL || h0 == NULL || sequential == NULL || chunked == NULL) {
        status = lm_fail(m->err, LM_ERR_NOMEM, "affine_scan: out of memory");
        goto done;
    }
    /* rng.uniform(0.70, 0.99, (T, W)), standard_normal((T, W)), standard_normal(W) */
    lm_rng rng;
    lm_rng_seed(&rng, (uint64_t)seed);
    lm_rng_fill_uniform(&rng, 0.70, 0.99, a, n);
    lm_rng_fill_standard_normal(&rng, b, n);
    lm_rng_fill_standard_normal(&rng, h0, width);

    lm_error call;
    status = lm_scan_affine_sequential_f64_ref(a, b, steps, width, h0, sequential, &call);
    if (!check_ran(m, section, "sequential scan", status, &call)) {
        status = LM_OK;
        goto done;
    }
    const affine_inputs inputs = {a, b, h0, steps, width};
    const chunked_section shared = {.section = section, .run_name = "chunked scan",
                                    .run = affine_chunked, .inputs = &inputs,
                                    .sequential = sequential, .chunked = chunked, .n = n,
                                    .steps = steps, .chunk = chunk, .checksum = checksum,
                                    .file_difference = file_difference};
    check_chunked_section(m, &shared);
    /* causality: a changed last step leaves every earlier state alone */
    if (steps > 1) {
        for (size_t i = 0; i < width; i++)
            b[(steps - 1) * width + i] += 100.0;
        status = lm_scan_affine_chunked_f64_ref(a, b, steps, width, 7, h0, chunked, &call);
        if (check_ran(m, section, "changed last step (chunk 7)", status, &call))
            check_allclose(m, section, "changed last step leaves earlier states alone", chunked,
                           sequential, (steps - 1) * width, 1e-7, 0.0);
    }
    status = LM_OK;

    /* associativity of composition on the notebook's T1, T2, T3 */
    {
        const double m1[2] = {0.9, 0.8}, c1[2] = {1.0, -1.0};
        const double m2[2] = {0.7, 0.6}, c2[2] = {0.5, 2.0};
        const double m3[2] = {0.5, 0.4}, c3[2] = {-0.5, 1.0};
        double m21[2], c21[2], left_m[2], left_c[2], m32[2], c32[2], right_m[2], right_c[2];
        lm_status s1 = lm_scan_compose_affine_f64_ref(m2, c2, m1, c1, 2, m21, c21, &call);
        lm_status s2 = s1 != LM_OK ? s1 : lm_scan_compose_affine_f64_ref(m3, c3, m21, c21, 2,
                                                                          left_m, left_c, &call);
        lm_status s3 = s2 != LM_OK ? s2 : lm_scan_compose_affine_f64_ref(m3, c3, m2, c2, 2, m32,
                                                                          c32, &call);
        lm_status s4 = s3 != LM_OK ? s3 : lm_scan_compose_affine_f64_ref(m32, c32, m1, c1, 2,
                                                                          right_m, right_c, &call);
        if (check_ran(m, section, "compose_affine", s4, &call)) {
            /* np.allclose(..., atol=1e-15), NumPy's default rtol 1e-5 */
            check_allclose(m, section, "associativity: multiplier T3(T2 T1) == (T3 T2)T1",
                           left_m, right_m, 2, 1e-5, 1e-15);
            check_allclose(m, section, "associativity: bias T3(T2 T1) == (T3 T2)T1", left_c,
                           right_c, 2, 1e-5, 1e-15);
        }
    }
done:
    free(a), free(b), free(h0), free(sequential), free(chunked);
    return status;
}

/* ---- section 3: sequential and chunked linear attention -------------------------------- */

typedef struct linear_inputs {
    const double *q, *k, *v; /* {steps, key_width} twice, {steps, value_width} */
    size_t steps, key_width, value_width;
} linear_inputs;

static lm_status linear_chunked(const void *inputs, size_t chunk, double *out, lm_error *err)
{
    const linear_inputs *in = inputs;
    return lm_linear_additive_chunked_f64_ref(in->q, in->key_width, in->k, in->key_width, in->v,
                                              in->value_width, in->steps, chunk, out, err);
}

static lm_status check_linear(const m8_run *m)
{
    const char *section = "linear_attention";
    long long seed;
    size_t steps, dk, dv, chunk;
    double checksum, file_difference;
    lm_status status;
    if ((status = read_int(m, "linear_attention.seed", 0, INT64_MAX, &seed)) != LM_OK ||
        (status = read_size(m, "linear_attention.sequence_length", MAX_SEQUENCE, &steps)) !=
            LM_OK ||
        (status = read_size(m, "linear_attention.key_width", MAX_WIDTH, &dk)) != LM_OK ||
        (status = read_size(m, "linear_attention.value_width", MAX_WIDTH, &dv)) != LM_OK ||
        (status = read_size(m, "linear_attention.chunk_size", MAX_SEQUENCE, &chunk)) != LM_OK ||
        (status = read_real(m, "linear_attention.output_checksum", &checksum)) != LM_OK ||
        (status = read_real(m, "linear_attention.max_abs_difference", &file_difference)) != LM_OK)
        return status;
    /* the chunk past the sequence length costs steps^2 * (key_width + value_width) */
    if (steps * steps * (dk + dv) > (size_t)1 << 31)
        return lm_fail(m->err, LM_ERR_SCHEMA,
                       "linear_attention: sequence_length^2 * (key_width + value_width) must be "
                       "at most 2^31 to be checked");
    double *q = zeroed(steps * dk, sizeof *q), *k = zeroed(steps * dk, sizeof *k);
    double *v = zeroed(steps * dv, sizeof *v);
    double *sequential = zeroed(steps * dv, sizeof *v), *chunked = zeroed(steps * dv, sizeof *v);
    if (q == NULL || k == NULL || v == NULL || sequential == NULL || chunked == NULL) {
        status = lm_fail(m->err, LM_ERR_NOMEM, "linear_attention: out of memory");
        goto done;
    }
    lm_rng rng; /* q, k, v: standard normals in that order */
    lm_rng_seed(&rng, (uint64_t)seed);
    lm_rng_fill_standard_normal(&rng, q, steps * dk);
    lm_rng_fill_standard_normal(&rng, k, steps * dk);
    lm_rng_fill_standard_normal(&rng, v, steps * dv);

    lm_error call;
    status = lm_linear_additive_sequential_f64_ref(q, dk, k, dk, v, dv, steps, sequential, &call);
    if (!check_ran(m, section, "sequential", status, &call)) {
        status = LM_OK;
        goto done;
    }
    const size_t n = steps * dv;
    const linear_inputs inputs = {q, k, v, steps, dk, dv};
    const chunked_section shared = {.section = section, .run_name = "chunked",
                                    .run = linear_chunked, .inputs = &inputs,
                                    .sequential = sequential, .chunked = chunked, .n = n,
                                    .steps = steps, .chunk = chunk, .checksum = checksum,
                                    .file_difference = file_difference};
    check_chunked_section(m, &shared);
    if (steps > 1) { /* changed[-1] += 100: earlier causal outputs unchanged */
        for (size_t r = 0; r < dv; r++)
            v[(steps - 1) * dv + r] += 100.0;
        status = lm_linear_additive_chunked_f64_ref(q, dk, k, dk, v, dv, steps, 7, chunked, &call);
        if (check_ran(m, section, "changed last token (chunk 7)", status, &call))
            check_allclose(m, section, "changed last token leaves earlier outputs alone", chunked,
                           sequential, (steps - 1) * dv, 1e-7, 0.0);
    }
    status = LM_OK;
done:
    free(q), free(k), free(v), free(sequential), free(chunked);
    return status;
}

/* ---- section 4: the delta rule ----------------------------------------------------------- */

static lm_status check_delta(const m8_run *m)
{
    const char *section = "delta";
    /* the notebook's vectors: k = e1, v1 = (1, 2), v2 = (3, 4), S = v1 k^T */
    const double k[2] = {1.0, 0.0}, v1[2] = {1.0, 2.0}, v2[2] = {3.0, 4.0};
    double state[4], additive[4], additive_retrieval[2];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 2; c++) {
            state[r * 2 + c] = v1[r] * k[c];
            additive[r * 2 + c] = state[r * 2 + c] + v2[r] * k[c];
        }
    for (int r = 0; r < 2; r++)
        additive_retrieval[r] = additive[r * 2] * k[0] + additive[r * 2 + 1] * k[1];

    typedef struct update { double state[4], key[2], before[2], after[2]; } update;
    update half, full, gated, no_write, scaled;
    const struct {
        update *out;
        const char *name;
        double beta, decay, key_scale;
    } cases[] = {{&half, "beta 0.5", 0.5, 1.0, 1.0},
                 {&full, "beta 1", 1.0, 1.0, 1.0},
                 {&gated, "beta 0.5 decay 0.8", 0.5, 0.8, 1.0},
                 {&no_write, "beta 0 decay 0.5", 0.0, 0.5, 1.0},
                 {&scaled, "beta 1 key 7 e1", 1.0, 1.0, 7.0}};
    lm_error call;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        update *u = cases[i].out;
        const double key[2] = {cases[i].key_scale * k[0], cases[i].key_scale * k[1]};
        const lm_delta_update_result result = {u->state, u->key, u->before, u->after};
        lm_status status = lm_delta_update_f64_ref(state, 2, 2, key, 2, v2, 2, cases[i].beta,
                                                   cases[i].decay, true, &result, &call);
        if (!check_ran(m, section, cases[i].name, status, &call))
            return LM_OK;
    }
    const size_t dims[1] = {2};
    lm_status status;
    /* np.allclose defaults: rtol 1e-5, atol 1e-8 */
    if ((status = check_field(m, section, "additive_retrieval", 1, dims, additive_retrieval,
                              RULE_ALLCLOSE, 1e-5, 1e-8)) != LM_OK ||
        (status = check_field(m, section, "half_retrieval", 1, dims, half.after, RULE_ALLCLOSE,
                              1e-5, 1e-8)) != LM_OK ||
        (status = check_field(m, section, "full_retrieval", 1, dims, full.after, RULE_ALLCLOSE,
                              1e-5, 1e-8)) != LM_OK ||
        (status = check_field(m, section, "gated_half_retrieval", 1, dims, gated.after,
                              RULE_ALLCLOSE, 1e-5, 1e-8)) != LM_OK)
        return status;

    check_allclose(m, section, "beta 1 overwrites retrieval at a unit key", full.after, v2, 2,
                   1e-5, 1e-8);
    lm_check_true(m->report, section, "beta 1 overwrite is exact at e1",
                  full.after[0] == v2[0] && full.after[1] == v2[1], "S'k == v2 bit for bit",
                  full.after[0] == v2[0] && full.after[1] == v2[1] ? "equal" : "differs");
    double halved[4];
    for (int i = 0; i < 4; i++)
        halved[i] = 0.5 * state[i];
    check_allclose(m, section, "beta 0 only decays the state", no_write.state, halved, 4, 1e-5,
                   1e-8);
    check_allclose(m, section, "a scaled key (7 e1) writes the same state when normalized",
                   scaled.state, full.state, 4, 1e-5, 1e-8);

    const double magnitudes[2] = {1e300, 1e-300};
    for (int i = 0; i < 2; i++) {
        const double key[2] = {magnitudes[i], magnitudes[i]};
        double unit[2], want[2] = {1.0 / sqrt(2.0), 1.0 / sqrt(2.0)};
        char name[NAME_SIZE];
        snprintf(name, sizeof name, "normalize_key at %g", magnitudes[i]);
        status = lm_delta_normalize_key_f64_ref(key, 2, unit, &call);
        if (check_ran(m, section, name, status, &call))
            check_allclose(m, section, name, unit, want, 2, 1e-7, 0.0); /* assert_allclose */
    }
    /* a targeted overwrite changes retrieval at another, non-orthogonal key (exercise 3) */
    const double other[2] = {1.0 / sqrt(2.0), 1.0 / sqrt(2.0)};
    double after_other[2], before_other[2];
    for (int r = 0; r < 2; r++) {
        after_other[r] = full.state[r * 2] * other[0] + full.state[r * 2 + 1] * other[1];
        before_other[r] = state[r * 2] * other[0] + state[r * 2 + 1] * other[1];
    }
    bool unchanged = true;
    for (int r = 0; r < 2; r++)
        unchanged = unchanged && fabs(after_other[r] - before_other[r]) <= 1e-8 + 1e-5 * fabs(before_other[r]);
    char got_text[128];
    snprintf(got_text, sizeof got_text, "retrieval at (1,1)/sqrt2 moved from (%g, %g) to (%g, %g)",
             before_other[0], before_other[1], after_other[0], after_other[1]);
    lm_check_true(m->report, section, "overwrite changes a non-orthogonal key", !unchanged,
                  "not allclose", got_text);
    return LM_OK;
}

/* ---- section 5: recall capacity against softmax addressing ------------------------------ */

static lm_status check_recall(const m8_run *m)
{
    const char *section = "recall";
    long long key_width, value_width, seed, softmax_seed, *loads = NULL;
    size_t load_count = 0;
    double temperature;
    lm_status status;
    if ((status = read_int(m, "recall.key_width", 1, MAX_WIDTH, &key_width)) != LM_OK ||
        (status = read_int(m, "recall.value_width", 1, MAX_WIDTH, &value_width)) != LM_OK ||
        (status = read_int(m, "recall.seed", 0, INT64_MAX, &seed)) != LM_OK ||
        (status = read_int(m, "recall.softmax_seed", 0, INT64_MAX, &softmax_seed)) != LM_OK ||
        (status = read_real(m, "recall.softmax_inverse_temperature", &temperature)) != LM_OK ||
        (status = read_int_list(m, "recall.stored_pairs", "loads", &loads, &load_count)) !=
            LM_OK)
        return status;
    for (size_t i = 0; i < load_count; i++)
        if (loads[i] < 1 || loads[i] > MAX_PAIRS) {
            long long bad = loads[i];
            free(loads);
            return lm_fail(m->err, LM_ERR_SCHEMA,
                           "recall.stored_pairs[%zu] must be an integer in [1, %d], got %lld", i,
                           MAX_PAIRS, bad);
        }
    double *mse = zeroed(load_count, sizeof *mse), *paired = zeroed(load_count, sizeof *mse);
    double *expected_additive = zeroed(load_count, sizeof *mse);
    if (mse == NULL || paired == NULL || expected_additive == NULL) {
        status = lm_fail(m->err, LM_ERR_NOMEM, "recall: out of memory");
        goto done;
    }
    const size_t by_load[1] = {load_count};
    lm_error call;
    status = lm_delta_recall_curve_f64_ref(loads, load_count, key_width, value_width, seed, mse,
                                           &call);
    if (check_ran(m, section, "associative_recall_curve", status, &call)) {
        if ((status = check_field(m, section, "mse", 1, by_load, mse, RULE_ALLCLOSE, 1e-11,
                                  1e-12)) != LM_OK)
            goto done;
        for (size_t i = 3; i < load_count; i++) { /* zip(mse[2:], mse[3:]) */
            char name[NAME_SIZE], want[96], got[96];
            snprintf(name, sizeof name, "mse increases: mse[%zu] > mse[%zu]", i, i - 1);
            snprintf(want, sizeof want, "> %.17g", mse[i - 1]);
            snprintf(got, sizeof got, "%.17g", mse[i]);
            lm_check_true(m->report, section, name, mse[i] > mse[i - 1], want, got);
        }
    }
    /* expected_additive_mse is not asserted by the notebook; it is the interference expected
     * for random unit keys and unit-variance values: (n - 1) * E[(k_i . k_j)^2] = (n - 1)/d. */
    for (size_t i = 0; i < load_count; i++)
        expected_additive[i] = (double)(loads[i] - 1) / (double)key_width;
    if ((status = check_field(m, section, "expected_additive_mse", 1, by_load, expected_additive,
                              RULE_ALLCLOSE, 1e-11, 1e-12)) != LM_OK)
        goto done;

    /* the 128-pair control of width 32 is fixed in the notebook's code */
    double softmax_mse, file_softmax;
    status = lm_delta_softmax_addressing_mse_f64_ref(128, 32, 32, temperature, softmax_seed,
                                                     &softmax_mse, &call);
    if (check_ran(m, section, "softmax_addressing_mse", status, &call)) {
        if ((status = read_real(m, "recall.softmax_mse_at_128", &file_softmax)) != LM_OK)
            goto done;
        lm_check_isclose(m->report, section, "softmax_mse_at_128", file_softmax, softmax_mse,
                         1e-10, 1e-12);
        char got[64];
        snprintf(got, sizeof got, "%.17g", softmax_mse);
        lm_check_true(m->report, section, "0 < softmax mse < 1e-6",
                      softmax_mse > 0.0 && softmax_mse < 1e-6, "in (0, 1e-6)", got);
    }
    /* the paired control: the curve's own draws (seed, widths) read out by softmax at the
     * file's inverse temperature (the notebook writes 32 and 20, equal to the file's
     * key_width, value_width and softmax_inverse_temperature) */
    status = lm_delta_paired_softmax_curve_f64_ref(loads, load_count, key_width, value_width,
                                                   temperature, seed, paired, &call);
    if (check_ran(m, section, "paired softmax control", status, &call) &&
        (status = check_field(m, section, "paired_softmax_mse", 1, by_load, paired, RULE_ALLCLOSE,
                              1e-10, 1e-15)) != LM_OK)
        goto done;
    status = LM_OK;
done:
    free(loads), free(mse), free(paired), free(expected_additive);
    return status;
}

/* ---- section 6a: memory ----------------------------------------------------------------- */

/* One recurrent cache against the full-attention KV cache: bytes, solved crossover, the
 * crossover confirmed by substitution, and its invariance under a common batch size. */
static lm_status check_recurrent_model(const m8_run *m, const char *field,
                                       const lm_kv_cache_geometry *kv,
                                       const lm_ssm_state_geometry *ssm)
{
    const char *section = "memory";
    char name[NAME_SIZE], path[NAME_SIZE];
    lm_error call;
    long long per_token;
    lm_ssm_state_bytes bytes;
    lm_memory_crossover crossover;
    lm_status status = lm_arith_kv_bytes_per_token(kv, &per_token, &call);
    if (status == LM_OK)
        status = lm_arith_ssm_state_bytes(ssm, 1, &bytes, &call);
    if (status == LM_OK)
        status = lm_arith_memory_crossover(per_token, bytes.total_bytes, &crossover, &call);
    snprintf(name, sizeof name, "%s (arithmetic)", field);
    if (!check_ran(m, section, name, status, &call))
        return LM_OK;
    const int_field ints[] = {{"ssm_bytes", bytes.ssm_bytes},
                              {"conv_bytes", bytes.conv_bytes},
                              {"total_bytes", bytes.total_bytes},
                              {"crossover_first_integer_token", crossover.first_integer_token},
                              {"first_strictly_larger_token",
                               crossover.first_strictly_larger_token}};
    status = check_int_fields(m, section, field, ints, sizeof ints / sizeof ints[0]);
    if (status != LM_OK)
        return status;
    double exact;
    snprintf(path, sizeof path, "memory.%s.crossover_tokens_exact", field);
    if ((status = read_real(m, path, &exact)) != LM_OK)
        return status;
    snprintf(name, sizeof name, "%s.crossover_tokens_exact", field);
    lm_check_close(m->report, section, name, exact, crossover.tokens_exact, 0.0, 0.0);

    /* substitution: KV(first integer) >= recurrent > KV(first integer - 1), and
     * KV(first strictly larger) > recurrent >= KV(first strictly larger - 1) */
    long long at_first, before_first, at_larger, before_larger;
    status = lm_arith_kv_total_bytes(kv, crossover.first_integer_token, 1, &at_first, &call);
    if (status == LM_OK)
        status = lm_arith_kv_total_bytes(kv, crossover.first_integer_token - 1, 1, &before_first,
                                         &call);
    if (status == LM_OK)
        status = lm_arith_kv_total_bytes(kv, crossover.first_strictly_larger_token, 1, &at_larger,
                                         &call);
    if (status == LM_OK)
        status = lm_arith_kv_total_bytes(kv, crossover.first_strictly_larger_token - 1, 1,
                                         &before_larger, &call);
    snprintf(name, sizeof name, "%s crossover by substitution", field);
    if (check_ran(m, section, name, status, &call)) {
        char got[160];
        snprintf(got, sizeof got, "KV(%lld) = %lld, KV(%lld) = %lld, KV(%lld) = %lld, "
                 "recurrent = %lld", crossover.first_integer_token - 1, before_first,
                 crossover.first_integer_token, at_first, crossover.first_strictly_larger_token,
                 at_larger, bytes.total_bytes);
        lm_check_true(m->report, section, name,
                      before_first < bytes.total_bytes && at_first >= bytes.total_bytes &&
                          before_larger <= bytes.total_bytes && at_larger > bytes.total_bytes,
                      "KV(n-1) < recurrent <= KV(n); KV(m-1) <= recurrent < KV(m)", got);
    }
    /* exercise 4: with B equal-length sequences both caches scale by B; the crossover does
     * not move */
    const long long batches[] = {1, 2, 3, 8, 64, 1000};
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
        long long kv_batch;
        lm_ssm_state_bytes ssm_batch;
        lm_memory_crossover moved;
        status = lm_arith_kv_total_bytes(kv, 1, batches[i], &kv_batch, &call);
        if (status == LM_OK)
            status = lm_arith_ssm_state_bytes(ssm, batches[i], &ssm_batch, &call);
        if (status == LM_OK)
            status = lm_arith_memory_crossover(kv_batch, ssm_batch.total_bytes, &moved, &call);
        snprintf(name, sizeof name, "%s crossover at batch %lld", field, batches[i]);
        if (!check_ran(m, section, name, status, &call))
            continue;
        char want[96], got[96];
        snprintf(want, sizeof want, "%.17g / %lld / %lld", crossover.tokens_exact,
                 crossover.first_integer_token, crossover.first_strictly_larger_token);
        snprintf(got, sizeof got, "%.17g / %lld / %lld", moved.tokens_exact,
                 moved.first_integer_token, moved.first_strictly_larger_token);
        lm_check_true(m->report, section, name,
                      moved.tokens_exact == crossover.tokens_exact &&
                          moved.first_integer_token == crossover.first_integer_token &&
                          moved.first_strictly_larger_token ==
                              crossover.first_strictly_larger_token &&
                          ssm_batch.total_bytes == batches[i] * bytes.total_bytes &&
                          kv_batch == batches[i] * per_token,
                      want, got);
    }
    return LM_OK;
}

static lm_status check_memory(const m8_run *m)
{
    const char *section = "memory";
    /* the notebook's geometries (fixed in its code) */
    const lm_kv_cache_geometry kv = {.layers = 32, .kv_heads = 8, .head_width = 128,
                                     .bytes_per_value = 2};
    const lm_ssm_state_geometry mamba1 = {.layers = 32, .inner_width = 8192, .state_width = 16,
                                          .conv_width = 4, .conv_channels = 8192,
                                          .bytes_per_value = 2};
    const lm_ssm_state_geometry mamba2 = {.layers = 32, .inner_width = 8192, .state_width = 128,
                                          .conv_width = 4, .conv_channels = 8192 + 2 * 128,
                                          .bytes_per_value = 2};
    const lm_hybrid_config hybrid_config = {
        .total_layers = 32, .attention_layers = 4, .context_tokens = 256 * 1024,
        .inner_width = 8192, .state_width = 16, .conv_width = 4, .conv_channels = 8192,
        .kv_heads = 8, .head_width = 128, .bytes_per_value = 2};
    lm_error call;
    long long per_token, full_256k;
    lm_hybrid_memory hybrid;
    lm_status status = lm_arith_kv_bytes_per_token(&kv, &per_token, &call);
    if (status == LM_OK)
        status = lm_arith_kv_total_bytes(&kv, 256 * 1024, 1, &full_256k, &call);
    if (status == LM_OK)
        status = lm_arith_hybrid_memory(&hybrid_config, &hybrid, &call);
    if (!check_ran(m, section, "cache arithmetic", status, &call))
        return LM_OK;
    if ((status = check_int_field(m, section, "kv_bytes_per_token_full_attention", per_token)) !=
            LM_OK ||
        (status = check_int_field(m, section, "full_attention_256k_bytes", full_256k)) != LM_OK)
        return status;
    const int_field hybrid_fields[] = {{"attention_layers", hybrid.attention_layers},
                                       {"ssm_layers", hybrid.ssm_layers},
                                       {"kv_bytes", hybrid.kv_bytes},
                                       {"ssm_bytes", hybrid.ssm_bytes},
                                       {"conv_bytes", hybrid.conv_bytes},
                                       {"recurrent_bytes", hybrid.recurrent_bytes},
                                       {"total_bytes", hybrid.total_bytes}};
    if ((status = check_int_fields(m, section, "hybrid_256k", hybrid_fields,
                                   sizeof hybrid_fields / sizeof hybrid_fields[0])) != LM_OK ||
        (status = check_recurrent_model(m, "mamba1", &kv, &mamba1)) != LM_OK ||
        (status = check_recurrent_model(m, "mamba2_like", &kv, &mamba2)) != LM_OK)
        return status;

    /* recurrent state scales with batch, not with context; KV scales with both */
    lm_ssm_state_bytes one, three;
    long long kv_one, kv_three;
    status = lm_arith_ssm_state_bytes(&mamba1, 1, &one, &call);
    if (status == LM_OK)
        status = lm_arith_ssm_state_bytes(&mamba1, 3, &three, &call);
    if (status == LM_OK)
        status = lm_arith_kv_total_bytes(&kv, 8192, 1, &kv_one, &call);
    if (status == LM_OK)
        status = lm_arith_kv_total_bytes(&kv, 8192, 3, &kv_three, &call);
    if (check_ran(m, section, "batch scaling", status, &call)) {
        lm_check_int(m->report, section, "mamba1 bytes at batch 3 == 3 x batch 1",
                     3 * one.total_bytes, three.total_bytes);
        lm_check_int(m->report, section, "KV bytes of 8192 tokens at batch 3 == 3 x batch 1",
                     3 * kv_one, kv_three);
    }
    return LM_OK;
}

/* ---- section 6b: the decode FLOP scenario ---------------------------------------------- */

static lm_status check_decode(const m8_run *m)
{
    const char *section = "decode_flops";
    long long model, inner, state_width, *positions = NULL, *attention = NULL, *ssm = NULL;
    size_t count = 0, attention_count = 0, ssm_count = 0;
    const char *scope;
    lm_status status;
    if ((status = read_int(m, "decode_flops.model_width", 1, 1LL << 24, &model)) != LM_OK ||
        (status = read_int(m, "decode_flops.inner_width", 1, 1LL << 24, &inner)) != LM_OK ||
        (status = read_int(m, "decode_flops.state_width", 1, 1LL << 24, &state_width)) != LM_OK ||
        (status = lm_json_string(m->root, "decode_flops.scope", &scope, m->err)) != LM_OK ||
        (status = read_int_list(m, "decode_flops.positions", "values", &positions, &count)) !=
            LM_OK)
        return status;
    if ((status = lm_json_int_array(m->root, "decode_flops.attention_core_flops", &attention,
                                    &attention_count, m->err)) != LM_OK ||
        (status = lm_json_int_array(m->root, "decode_flops.ssm_core_flops", &ssm, &ssm_count,
                                    m->err)) != LM_OK)
        goto done;
    lm_check_int(m->report, section, "attention_core_flops count", (long long)count,
                 (long long)attention_count);
    lm_check_int(m->report, section, "ssm_core_flops count", (long long)count,
                 (long long)ssm_count);
    double *got_ratios = zeroed(count, sizeof *got_ratios);
    if (got_ratios == NULL) {
        status = lm_fail(m->err, LM_ERR_NOMEM, "decode_flops: out of memory");
        goto done;
    }
    for (size_t i = 0; i < count; i++) {
        lm_decode_flops row;
        lm_error call;
        char name[NAME_SIZE];
        snprintf(name, sizeof name, "estimate at position %lld", positions[i]);
        status = lm_arith_decode_flops(positions[i], model, inner, state_width, &row, &call);
        if (!check_ran(m, section, name, status, &call)) {
            got_ratios[i] = (double)NAN;
            continue;
        }
        got_ratios[i] = row.ratio;
        if (i < attention_count) {
            snprintf(name, sizeof name, "attention_core_flops[%zu]", i);
            lm_check_int(m->report, section, name, attention[i], row.attention_core_flops);
        }
        if (i < ssm_count) {
            snprintf(name, sizeof name, "ssm_core_flops[%zu]", i);
            lm_check_int(m->report, section, name, ssm[i], row.ssm_core_flops);
        }
        /* independent arithmetic: two attention dot-product stages; SSM write (3 per
         * coordinate) plus the leading readout estimate */
        snprintf(name, sizeof name, "attention flops == 2 * (2 N d) at %lld", positions[i]);
        lm_check_int(m->report, section, name, 2 * (2 * positions[i] * model),
                     row.attention_core_flops);
        snprintf(name, sizeof name, "ssm flops == update + readout at %lld", positions[i]);
        lm_check_int(m->report, section, name,
                     inner * state_width * (2 + 1) + inner * (state_width + state_width),
                     row.ssm_core_flops);
    }
    status = LM_OK;
    const size_t dims[1] = {count};
    /* np.allclose(..., rtol=1e-12): atol is NumPy's default 1e-8 */
    status = check_field(m, section, "ratios", 1, dims, got_ratios, RULE_ALLCLOSE, 1e-12, 1e-8);
    free(got_ratios);
    if (status != LM_OK)
        goto done;
    lm_check_true(m->report, section, "scope says 'not end-to-end latency'",
                  strstr(scope, "not end-to-end latency") != NULL,
                  "contains 'not end-to-end latency'", scope);
done:
    free(positions), free(attention), free(ssm);
    return status;
}

/* ---- section 7: negative cases ------------------------------------------------------------ */

static void check_negative_cases(const m8_run *m)
{
    const char *section = "negative";
    lm_error call;
    lm_status status;
    double out[8], out2[8], out3[8], out4[8];
    const double one[1] = {1.0}, minus_one[1] = {-1.0};

    /* 1. an unstable positive mode */
    const double positive[1] = {0.1};
    lm_error_clear(&call);
    status = lm_ssm_zoh_discretize_f64_ref(positive, 1, one, 1, 1, 0.1, out, out2, &call);
    lm_check_rejects(m->report, section, "zoh: positive mode a = 0.1", LM_ERR_DOMAIN, status,
                     &call, "continuous_a must be non-positive");
    /* 2. a zero step */
    lm_error_clear(&call);
    status = lm_ssm_zoh_discretize_f64_ref(minus_one, 1, one, 1, 1, 0.0, out, out2, &call);
    lm_check_rejects(m->report, section, "zoh: delta = 0", LM_ERR_ARG, status, &call,
                     "delta must be positive");
    /* 3. an empty sequence; 4. inputs and deltas of different lengths */
    const lm_ssm_system system = {minus_one, 1, one, 1, 1, one, 1, 1};
    const lm_ssm_scan_result result = {out, out2, out3, out4};
    const double two_inputs[2] = {1.0, 2.0}, one_delta[1] = {0.1};
    lm_error_clear(&call);
    status = lm_ssm_scan_diagonal_f64_ref(&system, two_inputs, 0, 1, one_delta, 0, NULL, true,
                                          &result, &call);
    lm_check_rejects(m->report, section, "scan: empty sequence", LM_ERR_SHAPE, status, &call,
                     "inputs must be non-empty");
    lm_error_clear(&call);
    status = lm_ssm_scan_diagonal_f64_ref(&system, two_inputs, 2, 1, one_delta, 1, NULL, true,
                                          &result, &call);
    lm_check_rejects(m->report, section, "scan: 2 inputs, 1 delta", LM_ERR_SHAPE, status, &call,
                     "same sequence length");
    /* 5. chunk size 0 */
    const double multiplier[1] = {0.9};
    lm_error_clear(&call);
    status = lm_scan_affine_chunked_f64_ref(multiplier, one, 1, 1, 0, NULL, out, &call);
    lm_check_rejects(m->report, section, "affine_scan_chunked: chunk_size = 0", LM_ERR_ARG,
                     status, &call, "chunk_size must be positive");
    /* 6. q and k of different feature widths */
    const double k_row[2] = {1.0, 2.0};
    lm_error_clear(&call);
    status = lm_linear_additive_sequential_f64_ref(one, 1, k_row, 2, one, 1, 1, out, &call);
    lm_check_rejects(m->report, section, "linear attention: q width 1, k width 2", LM_ERR_SHAPE,
                     status, &call, "d_key");
    /* 7. a zero key */
    const double zero_key[2] = {0.0, 0.0};
    lm_error_clear(&call);
    status = lm_delta_normalize_key_f64_ref(zero_key, 2, out, &call);
    lm_check_rejects(m->report, section, "normalize_key: zero key", LM_ERR_DOMAIN, status, &call,
                     "non-zero norm");
    /* 8. a non-unit key without normalization */
    const double zero_state[4] = {0.0, 0.0, 0.0, 0.0}, long_key[2] = {2.0, 0.0},
                 value[2] = {1.0, 2.0};
    const lm_delta_update_result delta_result = {out, out2, out3, out4};
    lm_error_clear(&call);
    status = lm_delta_update_f64_ref(zero_state, 2, 2, long_key, 2, value, 2, 1.0, 1.0, false,
                                     &delta_result, &call);
    lm_check_rejects(m->report, section, "delta_update: key (2, 0) with normalize=false",
                     LM_ERR_DOMAIN, status, &call, "unit norm");
    /* 9. a NaN logit */
    const double logits[2] = {0.0, (double)NAN};
    lm_error_clear(&call);
    status = lm_delta_softmax_rows_f64_ref(logits, 1, 2, out, &call);
    lm_check_rejects(m->report, section, "stable_softmax_rows: NaN logit", LM_ERR_NONFINITE,
                     status, &call, "logits must contain only finite values");
    /* 10. more attention layers than layers */
    const lm_hybrid_config impossible = {
        .total_layers = 8, .attention_layers = 9, .context_tokens = 128, .inner_width = 64,
        .state_width = 16, .conv_width = 4, .conv_channels = 64, .kv_heads = 2,
        .head_width = 8, .bytes_per_value = 2};
    lm_hybrid_memory memory;
    lm_error_clear(&call);
    status = lm_arith_hybrid_memory(&impossible, &memory, &call);
    lm_check_rejects(m->report, section, "hybrid: 9 attention layers of 8", LM_ERR_ARG, status,
                     &call, "attention_layers must lie in [0, total_layers]");
    /* 11. KVCacheGeometry(layers=True): in C a boolean cannot reach an integer argument; the
     * rule lives in the loader, which refuses a JSON true where an integer is required. */
    json_error_t parse_error;
    json_t *geometry = json_loads("{\"layers\": true, \"kv_heads\": 8, \"head_width\": 128}", 0,
                                  &parse_error);
    long long layers = 0;
    lm_error_clear(&call);
    status = geometry == NULL ? lm_fail(&call, LM_ERR_NOMEM, "could not build the JSON case")
                              : lm_json_int(geometry, "layers", &layers, &call);
    lm_check_rejects(m->report, section, "loader: layers = true (a boolean as an integer)",
                     LM_ERR_TYPE, status, &call, "layers must be an integer, got a boolean");
    json_decref(geometry);
}

/* ---- entry point ------------------------------------------------------------------------- */

lm_status lm_verify_m8(const lm_contract *contract, lm_report *report, lm_error *err)
{
    const m8_run run = {contract->root, report, err};
    lm_status (*const sections[])(const m8_run *) = {check_zoh,    check_affine, check_linear,
                                                      check_delta,  check_recall, check_memory,
                                                      check_decode};
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
        lm_status status = sections[i](&run);
        if (status != LM_OK)
            return status;
    }
    check_negative_cases(&run);
    return LM_OK;
}

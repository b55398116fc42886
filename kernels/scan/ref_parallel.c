/* Float64 references for the parallel scans of an affine recurrence (lesson section 5)
 * and the M8 notebook's exercise and demo that compare them with sequential evaluation. */
#include "scan.h"
#include "lm_reduce.h"
#include "lm_validate.h"

#include <math.h>
#include <string.h>

static lm_status check_steps(const double *a, const double *b, size_t steps, lm_error *err)
{
    if (a == NULL || b == NULL)
        return lm_fail(err, LM_ERR_ARG, "a and b must not be NULL");
    if (steps == 0)
        return lm_fail(err, LM_ERR_SHAPE, "a and b must be non-empty");
    lm_status status = lm_require_finite_f64("a", a, steps, err);
    if (status == LM_OK)
        status = lm_require_finite_f64("b", b, steps, err);
    return status;
}

lm_status lm_scan_hillis_steele_f64_ref(const double *a, const double *b, size_t steps,
                                        size_t max_rounds, double *a_out, double *states,
                                        size_t *rounds, lm_error *err)
{
    lm_status status = check_steps(a, b, steps, err);
    if (status != LM_OK)
        return status;
    if (states == NULL || rounds == NULL)
        return lm_fail(err, LM_ERR_ARG, "states and rounds must not be NULL");
    double *work = lm_alloc(3 * steps * sizeof *work); /* a {steps}, next a, next b */
    if (work == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "scan scratch of %zu steps", steps);
    double *cur_a = work, *next_a = work + steps, *next_b = work + 2 * steps;
    memcpy(cur_a, a, steps * sizeof *cur_a);
    memcpy(states, b, steps * sizeof *states);
    size_t shift = 1, done = 0;
    while (shift < steps && (max_rounds == 0 || done < max_rounds)) {
        for (size_t t = 0; t < steps; t++) {
            /* merge with the step `shift` earlier: (1, 0) before the start */
            double prev_a = t >= shift ? cur_a[t - shift] : 1.0;
            double prev_b = t >= shift ? states[t - shift] : 0.0;
            next_a[t] = prev_a * cur_a[t];
            next_b[t] = cur_a[t] * prev_b + states[t]; /* both use the old a */
        }
        memcpy(cur_a, next_a, steps * sizeof *cur_a);
        memcpy(states, next_b, steps * sizeof *states);
        shift *= 2;
        done++;
    }
    if (a_out != NULL)
        memcpy(a_out, cur_a, steps * sizeof *cur_a);
    *rounds = done;
    lm_free(work);
    return LM_OK;
}

lm_status lm_scan_blelloch_f64_ref(const double *a, const double *b, size_t steps,
                                   double *states, lm_error *err)
{
    lm_status status = check_steps(a, b, steps, err);
    if (status != LM_OK)
        return status;
    if (states == NULL)
        return lm_fail(err, LM_ERR_ARG, "states must not be NULL");
    size_t size = 1;
    while (size < steps)
        size *= 2;
    double *ta = lm_alloc(2 * size * sizeof *ta); /* the tree: a parts, then b parts */
    if (ta == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "scan tree of %zu leaves", size);
    double *tb = ta + size;
    for (size_t i = 0; i < size; i++) {
        ta[i] = i < steps ? a[i] : 1.0; /* pad with the do-nothing map */
        tb[i] = i < steps ? b[i] : 0.0;
    }
    /* up-sweep: node r holds the composition of the block ending at r */
    for (size_t span = 1; span < size; span *= 2)
        for (size_t r = 2 * span - 1; r < size; r += 2 * span) {
            size_t l = r - span; /* the earlier half */
            tb[r] = ta[r] * tb[l] + tb[r];
            ta[r] = ta[l] * ta[r];
        }
    /* down-sweep: each node receives the composition of everything before its block */
    ta[size - 1] = 1.0;
    tb[size - 1] = 0.0;
    for (size_t span = size / 2; span >= 1; span /= 2) {
        for (size_t r = 2 * span - 1; r < size; r += 2 * span) {
            size_t l = r - span;
            double left_a = ta[l], left_b = tb[l]; /* the left block's own composition */
            ta[l] = ta[r];                         /* left inherits the prefix before us */
            tb[l] = tb[r];
            /* right gets prefix-then-left */
            tb[r] = left_a * tb[r] + left_b;
            ta[r] = ta[r] * left_a;
        }
        if (span == 1)
            break;
    }
    /* inclusive state: the exclusive prefix applied, then the step itself */
    for (size_t t = 0; t < steps; t++)
        states[t] = a[t] * tb[t] + b[t];
    lm_free(ta);
    return LM_OK;
}

lm_status lm_scan_parallel_columns_f64_ref(lm_scan_method method, const double *multipliers,
                                           const double *biases, size_t steps, size_t width,
                                           const double *initial_state, double *states,
                                           lm_error *err)
{
    if (multipliers == NULL || biases == NULL || states == NULL)
        return lm_fail(err, LM_ERR_ARG, "multipliers, biases and states must not be NULL");
    if (steps == 0 || width == 0)
        return lm_fail(err, LM_ERR_SHAPE, "multipliers must be non-empty, got {%zu, %zu}",
                       steps, width);
    if (method != LM_SCAN_HILLIS_STEELE && method != LM_SCAN_BLELLOCH)
        return lm_fail(err, LM_ERR_ARG, "method must be LM_SCAN_HILLIS_STEELE or LM_SCAN_BLELLOCH");
    lm_status status = LM_OK;
    if (initial_state != NULL)
        status = lm_require_finite_f64("initial_state", initial_state, width, err);
    if (status != LM_OK)
        return status;
    double *column = lm_alloc(3 * steps * sizeof *column); /* a, b, states of one column */
    if (column == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "scan column of %zu steps", steps);
    for (size_t c = 0; c < width && status == LM_OK; c++) {
        double *ca = column, *cb = column + steps, *cs = column + 2 * steps;
        for (size_t t = 0; t < steps; t++) {
            ca[t] = multipliers[t * width + c];
            cb[t] = biases[t * width + c];
        }
        status = lm_require_finite_f64("multipliers", ca, steps, err);
        if (status != LM_OK)
            break;
        if (initial_state != NULL)
            cb[0] = ca[0] * initial_state[c] + cb[0];
        size_t rounds;
        status = method == LM_SCAN_HILLIS_STEELE
                     ? lm_scan_hillis_steele_f64_ref(ca, cb, steps, 0, NULL, cs, &rounds, err)
                     : lm_scan_blelloch_f64_ref(ca, cb, steps, cs, err);
        if (status == LM_ERR_NONFINITE)
            status = lm_fail(err, LM_ERR_NONFINITE, "biases must contain only finite values");
        for (size_t t = 0; t < steps && status == LM_OK; t++)
            states[t * width + c] = cs[t];
    }
    lm_free(column);
    return status;
}

lm_status lm_scan_parallel_prefix_exercise(uint64_t seed, const size_t *lengths, size_t count,
                                           size_t width, double a_low, double a_high,
                                           double *hillis_diff, double *blelloch_diff,
                                           lm_error *err)
{
    if (lengths == NULL || hillis_diff == NULL || blelloch_diff == NULL)
        return lm_fail(err, LM_ERR_ARG, "lengths, hillis_diff and blelloch_diff must not be NULL");
    if (count == 0 || width == 0)
        return lm_fail(err, LM_ERR_SHAPE, "lengths and width must be non-empty");
    if (!isfinite(a_low) || !isfinite(a_high) || !(a_low < a_high))
        return lm_fail(err, LM_ERR_ARG, "a_low < a_high must be finite");
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    lm_status status = LM_OK;
    for (size_t i = 0; i < count && status == LM_OK; i++) {
        size_t steps = lengths[i];
        if (steps == 0)
            return lm_fail(err, LM_ERR_SHAPE, "lengths[%zu] must be positive", i);
        size_t cells = steps * width;
        double *buf = lm_alloc((5 * cells + width) * sizeof *buf);
        if (buf == NULL)
            return lm_fail(err, LM_ERR_NOMEM, "scan exercise of %zu x %zu", steps, width);
        double *a = buf, *b = buf + cells, *seq = buf + 2 * cells, *hs = buf + 3 * cells,
               *bl = buf + 4 * cells, *h0 = buf + 5 * cells;
        lm_rng_fill_uniform(&rng, a_low, a_high, a, cells);
        lm_rng_fill_standard_normal(&rng, b, cells);
        lm_rng_fill_standard_normal(&rng, h0, width);
        status = lm_scan_affine_sequential_f64_ref(a, b, steps, width, h0, seq, err);
        if (status == LM_OK)
            status = lm_scan_parallel_columns_f64_ref(LM_SCAN_HILLIS_STEELE, a, b, steps, width,
                                                      h0, hs, err);
        if (status == LM_OK)
            status = lm_scan_parallel_columns_f64_ref(LM_SCAN_BLELLOCH, a, b, steps, width, h0,
                                                      bl, err);
        if (status == LM_OK) {
            hillis_diff[i] = lm_max_abs_diff_f64(hs, seq, cells);
            blelloch_diff[i] = lm_max_abs_diff_f64(bl, seq, cells);
        }
        lm_free(buf);
    }
    return status;
}

lm_status lm_scan_chunk_boundary_demo(uint64_t seed, size_t steps, size_t width, double a_low,
                                      double a_high, const size_t *chunk_sizes,
                                      size_t chunk_count, size_t reset_chunk,
                                      double *chunk_errors, double *reset_error,
                                      lm_error *err)
{
    if (chunk_sizes == NULL || chunk_errors == NULL || reset_error == NULL)
        return lm_fail(err, LM_ERR_ARG,
                       "chunk_sizes, chunk_errors and reset_error must not be NULL");
    if (steps == 0 || width == 0)
        return lm_fail(err, LM_ERR_SHAPE, "steps and width must be positive");
    if (reset_chunk == 0)
        return lm_fail(err, LM_ERR_ARG, "reset_chunk must be positive");
    if (!isfinite(a_low) || !isfinite(a_high) || !(a_low < a_high))
        return lm_fail(err, LM_ERR_ARG, "a_low < a_high must be finite");
    size_t cells = steps * width;
    double *buf = lm_alloc((5 * cells + width) * sizeof *buf);
    if (buf == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "chunk demo of %zu x %zu", steps, width);
    double *a = buf, *b = buf + cells, *expected = buf + 2 * cells, *actual = buf + 3 * cells,
           *reset = buf + 4 * cells, *h0 = buf + 5 * cells;
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    lm_rng_fill_uniform(&rng, a_low, a_high, a, cells);
    lm_rng_fill_standard_normal(&rng, b, cells);
    lm_rng_fill_standard_normal(&rng, h0, width);
    lm_status status = lm_scan_affine_sequential_f64_ref(a, b, steps, width, h0, expected, err);
    for (size_t i = 0; i < chunk_count && status == LM_OK; i++) {
        status = lm_scan_affine_chunked_f64_ref(a, b, steps, width, chunk_sizes[i], h0, actual,
                                                err);
        if (status == LM_OK)
            chunk_errors[i] = lm_max_abs_diff_f64(actual, expected, cells);
    }
    /* the wrong control: every chunk restarts from zero, losing h0 and the carried state */
    for (size_t start = 0; start < steps && status == LM_OK; start += reset_chunk) {
        size_t length = steps - start < reset_chunk ? steps - start : reset_chunk;
        status = lm_scan_affine_sequential_f64_ref(a + start * width, b + start * width, length,
                                                   width, NULL, reset + start * width, err);
    }
    if (status == LM_OK)
        *reset_error = lm_max_abs_diff_f64(reset, expected, cells);
    lm_free(buf);
    return status;
}

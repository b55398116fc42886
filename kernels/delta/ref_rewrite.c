/* Float64 references for the M8 notebook's demo "rewriting non-orthogonal keys" and the exercise
 * on interference between two non-orthogonal keys, built on lm_delta_update_f64_ref. */
#include "delta.h"

#include <math.h>
#include <string.h>

lm_status lm_delta_rewrite_keys_demo(uint64_t seed, size_t n_keys, size_t key_width,
                                     size_t value_width, size_t writes, double decay,
                                     lm_delta_rewrite_result *result, lm_error *err)
{
    if (result == NULL)
        return lm_fail(err, LM_ERR_ARG, "result must not be NULL");
    if (n_keys == 0 || key_width == 0 || value_width == 0 || writes == 0)
        return lm_fail(err, LM_ERR_SHAPE,
                       "n_keys, key_width, value_width and writes must be positive");
    if (!(decay >= 0.0 && decay <= 1.0))
        return lm_fail(err, LM_ERR_ARG, "decay must lie in [0, 1], got %g", decay);
    size_t state_size = value_width * key_width;
    /* keys {n_keys, key_width}, values {writes, value_width}, latest {n_keys, value_width},
     * three states and one scratch state, the update's small outputs */
    size_t total = n_keys * key_width + writes * value_width + n_keys * value_width +
                   4 * state_size + key_width + 2 * value_width;
    double *buf = lm_alloc(total * sizeof *buf);
    if (buf == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "rewrite demo buffers");
    double *keys = buf, *values = keys + n_keys * key_width,
           *latest = values + writes * value_width, *states = latest + n_keys * value_width,
           *next = states + 3 * state_size, *unit = next + state_size,
           *before = unit + key_width, *after = before + value_width;
    lm_rng rng;
    lm_rng_seed(&rng, seed);
    lm_rng_fill_standard_normal(&rng, keys, n_keys * key_width);
    for (size_t i = 0; i < n_keys; i++) {
        double norm = 0.0;
        for (size_t c = 0; c < key_width; c++)
            norm += keys[i * key_width + c] * keys[i * key_width + c];
        norm = sqrt(norm);
        for (size_t c = 0; c < key_width; c++)
            keys[i * key_width + c] /= norm;
    }
    lm_rng_fill_standard_normal(&rng, values, writes * value_width);
    memset(result, 0, sizeof *result);
    lm_delta_update_result update = {next, unit, before, after};
    lm_status status = LM_OK;
    for (size_t t = 0; t < writes && status == LM_OK; t++) {
        size_t id = t % n_keys;
        const double *k = keys + id * key_width, *v = values + t * value_width;
        memcpy(latest + id * value_width, v, value_width * sizeof *v);
        for (int rule = 0; rule < LM_DELTA_WRITE_RULE_COUNT && status == LM_OK; rule++) {
            double *s = states + (size_t)rule * state_size;
            if (rule == LM_DELTA_WRITE_ADDITIVE) {
                for (size_t r = 0; r < value_width; r++)
                    for (size_t c = 0; c < key_width; c++)
                        s[r * key_width + c] += v[r] * k[c]; /* S += v k^T */
            } else {
                double gate = rule == LM_DELTA_WRITE_GATED ? decay : 1.0;
                status = lm_delta_update_f64_ref(s, value_width, key_width, k, key_width, v,
                                                 value_width, 1.0, gate, true, &update, err);
                if (status == LM_OK)
                    memcpy(s, next, state_size * sizeof *s);
            }
            double worst = result->current_key_error[rule];
            for (size_t r = 0; r < value_width; r++) {
                double read = 0.0;
                for (size_t c = 0; c < key_width; c++)
                    read += s[r * key_width + c] * k[c];
                worst = fmax(worst, fabs(read - v[r]));
            }
            result->current_key_error[rule] = worst;
        }
    }
    for (int rule = 0; rule < LM_DELTA_WRITE_RULE_COUNT && status == LM_OK; rule++) {
        const double *s = states + (size_t)rule * state_size;
        double total_error = 0.0;
        for (size_t i = 0; i < n_keys; i++)
            for (size_t r = 0; r < value_width; r++) {
                double read = 0.0;
                for (size_t c = 0; c < key_width; c++)
                    read += keys[i * key_width + c] * s[r * key_width + c];
                double e = read - latest[i * value_width + r];
                total_error += e * e;
            }
        result->final_mse[rule] = total_error / (double)(n_keys * value_width);
    }
    lm_free(buf);
    return status;
}

lm_status lm_delta_overwrite_interference(const double *state, size_t state_rows,
                                          size_t state_cols, const double *key,
                                          const double *other_key, const double *value,
                                          double beta, double decay, double *retrieval_before,
                                          double *retrieval_after, double *retrieval_at_key,
                                          double *change_norm, lm_error *err)
{
    if (state == NULL || key == NULL || other_key == NULL || value == NULL ||
        retrieval_before == NULL || retrieval_after == NULL || retrieval_at_key == NULL ||
        change_norm == NULL)
        return lm_fail(err, LM_ERR_ARG, "every array of the interference exercise must be given");
    if (state_rows == 0 || state_cols == 0)
        return lm_fail(err, LM_ERR_SHAPE, "state must be non-empty");
    size_t size = state_rows * state_cols;
    double *buf = lm_alloc((size + 2 * state_cols + 2 * state_rows) * sizeof *buf);
    if (buf == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "interference scratch");
    double *next = buf, *unit = next + size, *unit_other = unit + state_cols,
           *before = unit_other + state_cols, *after = before + state_rows;
    lm_delta_update_result update = {next, unit, before, after};
    lm_status status = lm_delta_update_f64_ref(state, state_rows, state_cols, key, state_cols,
                                               value, state_rows, beta, decay, true, &update, err);
    if (status == LM_OK)
        status = lm_delta_normalize_key_f64_ref(other_key, state_cols, unit_other, err);
    if (status == LM_OK) {
        double change = 0.0;
        for (size_t r = 0; r < state_rows; r++) {
            double old_read = 0.0, new_read = 0.0;
            for (size_t c = 0; c < state_cols; c++) {
                old_read += state[r * state_cols + c] * unit_other[c];
                new_read += next[r * state_cols + c] * unit_other[c];
            }
            retrieval_before[r] = old_read;
            retrieval_after[r] = new_read;
            retrieval_at_key[r] = after[r];
            change += (new_read - old_read) * (new_read - old_read);
        }
        *change_norm = sqrt(change);
    }
    lm_free(buf);
    return status;
}

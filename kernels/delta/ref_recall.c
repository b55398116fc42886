/* Float64 oracle for the capacity study: interference in an additive associative state
 * versus explicit softmax addressing of a key/value table. Inputs come from lm_rng, the
 * NumPy-compatible generator, in the notebook's draw order. */
#include "delta.h"
#include "lm_reduce.h"
#include "lm_validate.h"

#include <math.h>

static lm_status validate_loads(const long long *loads, size_t load_count, long long key_width,
                                long long value_width, long long seed, long long *max_load,
                                lm_error *err)
{
    lm_status status;
    if ((status = lm_require_positive_i64("key_width", key_width, err)) != LM_OK ||
        (status = lm_require_positive_i64("value_width", value_width, err)) != LM_OK ||
        (status = lm_require_non_negative_i64("seed", seed, err)) != LM_OK)
        return status;
    if (load_count == 0)
        return lm_fail(err, LM_ERR_SHAPE, "stored_pairs must be non-empty");
    *max_load = 0;
    for (size_t i = 0; i < load_count; i++) {
        if ((status = lm_require_positive_i64("stored_pairs item", loads[i], err)) != LM_OK)
            return status;
        if (loads[i] > *max_load)
            *max_load = loads[i];
    }
    return LM_OK;
}

/* keys {count, width}: standard normals normalized per row (norm by pairwise sum of
 * squares, as np.linalg.norm(axis=1)); then targets {count, values}. */
static void draw_table(lm_rng *rng, size_t count, size_t width, size_t values, double *keys,
                       double *targets, double *scratch /* {width} */)
{
    lm_rng_fill_standard_normal(rng, keys, count * width);
    for (size_t i = 0; i < count; i++) {
        double *row = keys + i * width;
        for (size_t c = 0; c < width; c++)
            scratch[c] = row[c] * row[c];
        double norm = sqrt(lm_sum_pairwise_f64(scratch, width));
        for (size_t c = 0; c < width; c++)
            row[c] /= norm;
    }
    lm_rng_fill_standard_normal(rng, targets, count * values);
}

/* mean((prediction - targets)^2) over {count, values}; overwrites prediction. */
static double mean_squared_error(double *prediction, const double *targets, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        double d = prediction[i] - targets[i];
        prediction[i] = d * d;
    }
    return lm_sum_pairwise_f64(prediction, n) / (double)n;
}

/* prediction = softmax_rows((scale * K) K^T) V for the table; returns the status of the
 * softmax. scale_keys_first mirrors `20 * keys @ keys.T` versus
 * `temperature * (keys @ keys.T)`. logits, weights {count, count}. */
static lm_status softmax_readout(const double *keys, const double *targets, size_t count,
                                 size_t width, size_t values, double scale,
                                 int scale_keys_first, double *logits, double *weights,
                                 double *prediction, lm_error *err)
{
    for (size_t i = 0; i < count; i++)
        for (size_t j = 0; j < count; j++) {
            double dot = 0.0;
            for (size_t c = 0; c < width; c++)
                dot += scale_keys_first ? (scale * keys[i * width + c]) * keys[j * width + c]
                                        : keys[i * width + c] * keys[j * width + c];
            logits[i * count + j] = scale_keys_first ? dot : scale * dot;
        }
    lm_status status = lm_delta_softmax_rows_f64_ref(logits, count, count, weights, err);
    if (status != LM_OK)
        return status;
    for (size_t i = 0; i < count; i++)
        for (size_t r = 0; r < values; r++) {
            double y = 0.0;
            for (size_t j = 0; j < count; j++)
                y += weights[i * count + j] * targets[j * values + r];
            prediction[i * values + r] = y;
        }
    return LM_OK;
}

lm_status lm_delta_recall_curve_f64_ref(const long long *loads, size_t load_count,
                                        long long key_width, long long value_width,
                                        long long seed, double *mse, lm_error *err)
{
    long long max_load;
    lm_status status = validate_loads(loads, load_count, key_width, value_width, seed,
                                      &max_load, err);
    if (status != LM_OK)
        return status;
    const size_t w = (size_t)key_width, v = (size_t)value_width, n_max = (size_t)max_load;
    double *keys = lm_alloc(n_max * w * sizeof *keys);       /* {load, key_width} */
    double *targets = lm_alloc(n_max * v * sizeof *targets); /* {load, value_width} */
    double *state = lm_alloc(v * w * sizeof *state);         /* S {value_width, key_width} */
    double *retrieved = lm_alloc(n_max * v * sizeof *retrieved);
    double *scratch = lm_alloc(w * sizeof *scratch);
    if (keys == NULL || targets == NULL || state == NULL || retrieved == NULL || scratch == NULL) {
        status = lm_fail(err, LM_ERR_NOMEM, "recall curve buffers for %lld pairs", max_load);
        goto done;
    }
    lm_rng rng;
    lm_rng_seed(&rng, (uint64_t)seed);
    for (size_t l = 0; l < load_count; l++) {
        const size_t n = (size_t)loads[l];
        draw_table(&rng, n, w, v, keys, targets, scratch);
        for (size_t r = 0; r < v; r++) /* S = targets^T keys */
            for (size_t c = 0; c < w; c++) {
                double s = 0.0;
                for (size_t i = 0; i < n; i++)
                    s += targets[i * v + r] * keys[i * w + c];
                state[r * w + c] = s;
            }
        for (size_t i = 0; i < n; i++) /* retrieved[i] = S k_i */
            for (size_t r = 0; r < v; r++) {
                double y = 0.0;
                for (size_t c = 0; c < w; c++)
                    y += state[r * w + c] * keys[i * w + c];
                retrieved[i * v + r] = y;
            }
        mse[l] = mean_squared_error(retrieved, targets, n * v);
    }
done:
    lm_free(keys);
    lm_free(targets);
    lm_free(state);
    lm_free(retrieved);
    lm_free(scratch);
    return status;
}

lm_status lm_delta_softmax_rows_f64_ref(const double *logits, size_t rows, size_t cols,
                                        double *weights, lm_error *err)
{
    if (rows == 0 || cols == 0)
        return lm_fail(err, LM_ERR_SHAPE, "logits must be non-empty, got shape [%zu, %zu]",
                       rows, cols);
    lm_status status = lm_require_finite_f64("logits", logits, rows * cols, err);
    if (status != LM_OK)
        return status;
    for (size_t i = 0; i < rows; i++) {
        const double *row = logits + i * cols;
        double *out = weights + i * cols;
        double top = row[0];
        for (size_t j = 1; j < cols; j++)
            top = fmax(top, row[j]);
        for (size_t j = 0; j < cols; j++)
            out[j] = exp(row[j] - top);
        double denominator = lm_sum_pairwise_f64(out, cols);
        if (!(denominator > 0.0) || !isfinite(denominator))
            return lm_fail(err, LM_ERR_NUMERIC,
                           "softmax denominator must be positive and finite (row %zu)", i);
        for (size_t j = 0; j < cols; j++)
            out[j] /= denominator;
    }
    return LM_OK;
}

/* Shared body of the 128-pair control and the paired curve. */
static lm_status softmax_curve(const long long *loads, size_t load_count, long long key_width,
                               long long value_width, double inverse_temperature,
                               long long seed, int scale_keys_first, double *mse, lm_error *err)
{
    long long max_load;
    lm_status status = validate_loads(loads, load_count, key_width, value_width, seed,
                                      &max_load, err);
    if (status == LM_OK)
        status = lm_require_positive_f64("inverse_temperature", inverse_temperature, err);
    if (status != LM_OK)
        return status;
    const size_t w = (size_t)key_width, v = (size_t)value_width, n_max = (size_t)max_load;
    double *keys = lm_alloc(n_max * w * sizeof *keys);
    double *targets = lm_alloc(n_max * v * sizeof *targets);
    double *logits = lm_alloc(n_max * n_max * sizeof *logits);
    double *weights = lm_alloc(n_max * n_max * sizeof *weights);
    double *prediction = lm_alloc(n_max * v * sizeof *prediction);
    double *scratch = lm_alloc(w * sizeof *scratch);
    if (keys == NULL || targets == NULL || logits == NULL || weights == NULL ||
        prediction == NULL || scratch == NULL) {
        status = lm_fail(err, LM_ERR_NOMEM, "softmax control buffers for %lld pairs", max_load);
        goto done;
    }
    lm_rng rng;
    lm_rng_seed(&rng, (uint64_t)seed);
    for (size_t l = 0; l < load_count; l++) {
        const size_t n = (size_t)loads[l];
        draw_table(&rng, n, w, v, keys, targets, scratch);
        status = softmax_readout(keys, targets, n, w, v, inverse_temperature, scale_keys_first,
                                 logits, weights, prediction, err);
        if (status != LM_OK)
            goto done;
        mse[l] = mean_squared_error(prediction, targets, n * v);
    }
done:
    lm_free(keys);
    lm_free(targets);
    lm_free(logits);
    lm_free(weights);
    lm_free(prediction);
    lm_free(scratch);
    return status;
}

lm_status lm_delta_softmax_addressing_mse_f64_ref(long long stored_pairs, long long key_width,
                                                  long long value_width,
                                                  double inverse_temperature, long long seed,
                                                  double *mse, lm_error *err)
{
    lm_status status = lm_require_positive_i64("stored_pairs", stored_pairs, err);
    if (status != LM_OK)
        return status;
    /* notebook: temperature * (keys @ keys.T) */
    return softmax_curve(&stored_pairs, 1, key_width, value_width, inverse_temperature, seed, 0,
                         mse, err);
}

lm_status lm_delta_paired_softmax_curve_f64_ref(const long long *loads, size_t load_count,
                                                long long key_width, long long value_width,
                                                double inverse_temperature, long long seed,
                                                double *mse, lm_error *err)
{
    /* notebook: 20 * keys @ keys.T, i.e. (20 * keys) @ keys.T */
    return softmax_curve(loads, load_count, key_width, value_width, inverse_temperature, seed, 1,
                         mse, err);
}

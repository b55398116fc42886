/* The primer checker (schema longmix-primer/1): recomputes every entry of
 * contracts/primer.json with the float64 references in kernels/ and records one check per
 * number.
 *
 * An entry names a function of the catalog below (documented in docs/contracts.md), its
 * arguments, and how its result becomes the checked value:
 *     value = scale * (f(args)[output][index] - subtract) / divide_by
 * (subtract and divide_by optional, each {function, args, output, index} selecting one
 * number), then compares it with "expected" by "compare": "exact" (integers), "close"
 * (numpy.isclose with the entry's rtol/atol), "bool", "below" or "above" (strict bounds). An array value
 * is checked element by element, one check each. Every parameter comes from the file; no
 * expected value is written here. An unknown function or comparison, a missing or
 * ill-typed field, or an argument out of range is LM_ERR_SCHEMA / LM_ERR_TYPE naming the
 * entry id (the CLI's exit 2); a reference that rejects its arguments is a failed check. */
#include "longmix.h"
#include "contract.h"
#include "jsonx.h"
#include "try.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NAME_SIZE = 192, MAX_OUTPUTS = 12 };

/* Limits on sizes read from a file, so that a typo cannot ask for gigabytes. */
#define MAX_TOKENS (1LL << 13)     /* tokens of an attention problem built as a matrix */
#define MAX_STEPS (1LL << 20)      /* scan / SSM lengths */
#define MAX_WIDTH (1LL << 12)      /* head and state widths */
#define MAX_COUNT (1LL << 40)      /* token counts in byte arithmetic */
#define MAX_SKIP (1LL << 24)       /* normal draws skipped before the inputs */

/* ---- outputs of one function --------------------------------------------------------- */

typedef struct output {
    char name[40];
    double *values;
    size_t count;
} output;

typedef struct outputs {
    output item[MAX_OUTPUTS];
    size_t count;
} outputs;

static void outputs_free(outputs *o)
{
    for (size_t i = 0; i < o->count; i++)
        free(o->item[i].values);
    o->count = 0;
}

static lm_status put(outputs *o, const char *name, const double *values, size_t count,
                     lm_error *err)
{
    if (o->count == MAX_OUTPUTS)
        return lm_fail(err, LM_ERR_NUMERIC, "too many outputs");
    output *slot = &o->item[o->count];
    snprintf(slot->name, sizeof slot->name, "%s", name);
    slot->values = malloc((count ? count : 1) * sizeof *slot->values);
    if (slot->values == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "output %s of %zu numbers", name, count);
    memcpy(slot->values, values, count * sizeof *values);
    slot->count = count;
    o->count++;
    return LM_OK;
}

static lm_status put1(outputs *o, const char *name, double value, lm_error *err)
{
    return put(o, name, &value, 1, err);
}

/* ---- arguments ------------------------------------------------------------------------ */

static lm_status arg_int(const json_t *args, const char *name, long long low, long long high,
                         long long *out, lm_error *err)
{
    lm_status status = lm_json_int(args, name, out, err);
    if (status != LM_OK)
        return status;
    if (*out < low || *out > high)
        return lm_fail(err, LM_ERR_SCHEMA, "args.%s must be an integer in [%lld, %lld], got %lld",
                       name, low, high, *out);
    return LM_OK;
}

static lm_status arg_size(const json_t *args, const char *name, long long low, long long high,
                          size_t *out, lm_error *err)
{
    long long value = 0;
    lm_status status = arg_int(args, name, low, high, &value, err);
    *out = (size_t)value;
    return status;
}

static lm_status arg_real(const json_t *args, const char *name, double *out, lm_error *err)
{
    lm_status status = lm_json_real(args, name, out, err);
    if (status == LM_OK && !isfinite(*out))
        return lm_fail(err, LM_ERR_SCHEMA, "args.%s must be finite", name);
    return status;
}

static lm_status arg_bool(const json_t *args, const char *name, bool *out, lm_error *err)
{
    const json_t *value;
    lm_status status = lm_json_at(args, name, &value, err);
    if (status != LM_OK)
        return status;
    if (!json_is_boolean(value))
        return lm_fail(err, LM_ERR_TYPE, "args.%s must be true or false", name);
    *out = json_is_true(value);
    return LM_OK;
}

static lm_status arg_string(const json_t *args, const char *name, const char **out,
                            lm_error *err)
{
    return lm_json_string(args, name, out, err);
}

/* A 1-D array of numbers (malloc'd). */
static lm_status arg_vector(const json_t *args, const char *name, double **data, size_t *count,
                            lm_error *err)
{
    size_t dims[4] = {0, 0, 0, 0};
    lm_status status = lm_json_array(args, name, 1, dims, data, err);
    *count = dims[0];
    if (status == LM_OK && *count == 0)
        return lm_fail(err, LM_ERR_SCHEMA, "args.%s must be non-empty", name);
    return status;
}

/* A 2-D array of numbers (malloc'd, row-major). */
static lm_status arg_matrix(const json_t *args, const char *name, double **data, size_t *rows,
                            size_t *cols, lm_error *err)
{
    size_t dims[4] = {0, 0, 0, 0};
    lm_status status = lm_json_array(args, name, 2, dims, data, err);
    *rows = dims[0];
    *cols = dims[1];
    if (status == LM_OK && (*rows == 0 || *cols == 0))
        return lm_fail(err, LM_ERR_SCHEMA, "args.%s must be non-empty", name);
    return status;
}

/* A 1-D array of integers in [low, high] (malloc'd). */
static lm_status arg_ints(const json_t *args, const char *name, long long low, long long high,
                          long long **data, size_t *count, lm_error *err)
{
    lm_status status = lm_json_int_array(args, name, data, count, err);
    if (status != LM_OK)
        return status;
    if (*count == 0)
        status = lm_fail(err, LM_ERR_SCHEMA, "args.%s must be non-empty", name);
    for (size_t i = 0; i < *count && status == LM_OK; i++)
        if ((*data)[i] < low || (*data)[i] > high)
            status = lm_fail(err, LM_ERR_SCHEMA, "args.%s[%zu] must lie in [%lld, %lld]", name,
                             i, low, high);
    if (status != LM_OK) { /* the caller owns *data only on LM_OK */
        free(*data);
        *data = NULL;
    }
    return status;
}

/* Standard normal draws in C order after skipping `skip` draws. */
static void draw_normals(lm_rng *rng, double *out, size_t count)
{
    lm_rng_fill_standard_normal(rng, out, count);
}

static void skip_normals(lm_rng *rng, long long skip)
{
    for (long long i = 0; i < skip; i++)
        (void)lm_rng_standard_normal(rng);
}

/* numpy.allclose(a, b) with its defaults rtol 1e-5, atol 1e-8. */
static bool allclose(const double *a, const double *b, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (!(fabs(a[i] - b[i]) <= 1e-8 + 1e-5 * fabs(b[i])))
            return false;
    return true;
}

static double sum(const double *x, size_t count)
{
    double total = 0.0;
    for (size_t i = 0; i < count; i++)
        total += x[i];
    return total;
}

/* Frees every pointer of a NULL-terminated list, then returns status. */
static lm_status release(lm_status status, void *a, void *b, void *c, void *d)
{
    free(a);
    free(b);
    free(c);
    free(d);
    return status;
}

typedef lm_status (*handler_fn)(const json_t *args, outputs *o, lm_error *err);

/* ---- 1. the bill ------------------------------------------------------------------------ */

static lm_status fn_handshakes(const json_t *args, outputs *o, lm_error *err)
{
    long long n, count;
    TRY(arg_int(args, "n", 0, MAX_COUNT, &n, err));
    TRY(lm_arith_bill_handshakes(n, &count, err));
    return put1(o, "value", (double)count, err);
}

static lm_status fn_pairs(const json_t *args, outputs *o, lm_error *err)
{
    long long n, pairs;
    TRY(arg_int(args, "n", 0, MAX_COUNT, &n, err));
    TRY(lm_arith_bill_pairs_per_head_per_layer(n, &pairs, err));
    return put1(o, "value", (double)pairs, err);
}

static lm_status read_kv(const json_t *args, long long *layers, long long *heads,
                         long long *head_dim, long long *bits, lm_error *err)
{
    TRY(arg_int(args, "layers", 1, 1 << 20, layers, err));
    TRY(arg_int(args, "kv_heads", 1, 1 << 20, heads, err));
    TRY(arg_int(args, "head_dim", 1, 1 << 20, head_dim, err));
    return arg_int(args, "bits", 1, 64, bits, err);
}

static lm_status fn_kv_bytes_per_token(const json_t *args, outputs *o, lm_error *err)
{
    long long layers, heads, head_dim, bits, bytes;
    TRY(read_kv(args, &layers, &heads, &head_dim, &bits, err));
    TRY(lm_arith_bill_kv_bytes_per_token(layers, heads, head_dim, bits, &bytes, err));
    return put1(o, "value", (double)bytes, err);
}

static lm_status fn_kv_cache_bytes(const json_t *args, outputs *o, lm_error *err)
{
    long long n, layers, heads, head_dim, bits, bytes;
    TRY(arg_int(args, "n", 0, MAX_COUNT, &n, err));
    TRY(read_kv(args, &layers, &heads, &head_dim, &bits, err));
    TRY(lm_arith_bill_kv_cache_bytes(n, layers, heads, head_dim, bits, &bytes, err));
    return put1(o, "value", (double)bytes, err);
}

static lm_status fn_context_cost(const json_t *args, outputs *o, lm_error *err)
{
    long long n, layers, heads, head_dim, bits, pairs, bytes;
    TRY(arg_int(args, "n", 0, MAX_COUNT, &n, err));
    TRY(read_kv(args, &layers, &heads, &head_dim, &bits, err));
    TRY(lm_arith_bill_context_cost(n, layers, heads, head_dim, bits, &pairs, &bytes, err));
    TRY(put1(o, "pairs", (double)pairs, err));
    return put1(o, "kv_cache_bytes", (double)bytes, err);
}

/* ---- 2. sliding window ------------------------------------------------------------------ */

static lm_status put_mask_row(outputs *o, const char *name, const uint8_t *row, size_t n,
                              lm_error *err)
{
    double *values = malloc(n * sizeof *values);
    if (values == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "mask row of %zu", n);
    for (size_t j = 0; j < n; j++)
        values[j] = row[j];
    lm_status status = put(o, name, values, n, err);
    free(values);
    return status;
}

static lm_status fn_window_mask_row(const json_t *args, outputs *o, lm_error *err)
{
    size_t n, w, row;
    TRY(arg_size(args, "n", 1, MAX_TOKENS, &n, err));
    TRY(arg_size(args, "w", 1, MAX_TOKENS, &w, err));
    TRY(arg_size(args, "row", 0, (long long)n - 1, &row, err));
    uint8_t *mask = malloc(n * n);
    if (mask == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "mask of %zu x %zu", n, n);
    lm_status status = lm_window_mask(n, w, mask, err);
    if (status == LM_OK)
        status = put_mask_row(o, "value", mask + row * n, n, err);
    free(mask);
    return status;
}

typedef lm_status (*window_count_fn)(uint64_t first, uint64_t second, uint64_t *count,
                                     lm_error *err);

/* value = count(first, second) for the window counts of two integer arguments, each read
 * from args in [its low bound, MAX_COUNT]. */
static lm_status put_window_count(const json_t *args, const char *first_name, long long first_low,
                                  const char *second_name, long long second_low,
                                  window_count_fn count_of, outputs *o, lm_error *err)
{
    long long first, second;
    uint64_t count;
    TRY(arg_int(args, first_name, first_low, MAX_COUNT, &first, err));
    TRY(arg_int(args, second_name, second_low, MAX_COUNT, &second, err));
    TRY(count_of((uint64_t)first, (uint64_t)second, &count, err));
    return put1(o, "value", (double)count, err);
}

static lm_status fn_window_pairs(const json_t *args, outputs *o, lm_error *err)
{
    return put_window_count(args, "n", 1, "w", 1, lm_window_pairs, o, err);
}

static lm_status fn_causal_pairs(const json_t *args, outputs *o, lm_error *err)
{
    long long n;
    uint64_t pairs;
    TRY(arg_int(args, "n", 1, MAX_COUNT, &n, err));
    TRY(lm_window_pairs((uint64_t)n, (uint64_t)n, &pairs, err)); /* a window as wide as n */
    return put1(o, "value", (double)pairs, err);
}

static lm_status fn_receptive_field(const json_t *args, outputs *o, lm_error *err)
{
    size_t n, w, layers, query;
    TRY(arg_size(args, "n", 1, 512, &n, err));
    TRY(arg_size(args, "w", 1, MAX_TOKENS, &w, err));
    TRY(arg_size(args, "layers", 0, 512, &layers, err));
    TRY(arg_size(args, "query", 0, (long long)n - 1, &query, err));
    uint8_t *heard = malloc(n * n);
    if (heard == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "receptive field of %zu x %zu", n, n);
    lm_status status = lm_window_receptive_field(n, w, layers, heard, err);
    if (status == LM_OK)
        status = put_mask_row(o, "row", heard + query * n, n, err);
    if (status == LM_OK) {
        double width = 0.0;
        for (size_t j = 0; j < n; j++)
            width += heard[query * n + j];
        status = put1(o, "width", width, err);
    }
    free(heard);
    return status;
}

static lm_status fn_reach(const json_t *args, outputs *o, lm_error *err)
{
    return put_window_count(args, "w", 1, "layers", 0, lm_window_reach, o, err);
}

static lm_status fn_relay_hops(const json_t *args, outputs *o, lm_error *err)
{
    return put_window_count(args, "distance", 0, "w", 1, lm_window_relay_hops, o, err);
}

static lm_status fn_rolling_slots(const json_t *args, outputs *o, lm_error *err)
{
    size_t w, last;
    TRY(arg_size(args, "w", 1, MAX_TOKENS, &w, err));
    TRY(arg_size(args, "last_token", 0, MAX_STEPS, &last, err));
    int64_t *slots = malloc(w * sizeof *slots);
    double *values = malloc(w * sizeof *values);
    lm_status status = slots && values ? lm_window_rolling_slots(w, last, slots, err)
                                       : lm_fail(err, LM_ERR_NOMEM, "%zu slots", w);
    for (size_t s = 0; s < w && status == LM_OK; s++)
        values[s] = (double)slots[s];
    if (status == LM_OK)
        status = put(o, "value", values, w, err);
    return release(status, slots, values, NULL, NULL);
}

static lm_status fn_window_decode(const json_t *args, outputs *o, lm_error *err)
{
    long long seed, skip;
    size_t n, d, w;
    TRY(arg_int(args, "seed", 0, LLONG_MAX, &seed, err));
    TRY(arg_int(args, "skip_normals", 0, MAX_SKIP, &skip, err));
    TRY(arg_size(args, "n", 1, MAX_TOKENS, &n, err));
    TRY(arg_size(args, "d", 1, MAX_WIDTH, &d, err));
    TRY(arg_size(args, "w", 1, MAX_TOKENS, &w, err));
    double *buf = malloc(5 * n * d * sizeof *buf);
    uint8_t *mask = malloc(n * n);
    if (buf == NULL || mask == NULL)
        return release(lm_fail(err, LM_ERR_NOMEM, "decode inputs"), buf, mask, NULL, NULL);
    double *q = buf, *k = q + n * d, *v = k + n * d, *streamed = v + n * d,
           *masked = streamed + n * d;
    lm_rng rng;
    lm_rng_seed(&rng, (uint64_t)seed);
    skip_normals(&rng, skip);
    draw_normals(&rng, q, n * d);
    draw_normals(&rng, k, n * d);
    draw_normals(&rng, v, n * d);
    size_t largest = 0;
    lm_status status = lm_window_decode_f64_ref(q, k, v, n, d, d, w, streamed, &largest, err);
    if (status == LM_OK)
        status = lm_window_mask(n, w, mask, err);
    if (status == LM_OK)
        status = lm_attn_sdpa_f64_ref(q, k, v, mask, true, n, n, d, d, masked, NULL, err);
    if (status == LM_OK)
        status = put1(o, "largest_buffer", (double)largest, err);
    if (status == LM_OK)
        status = put1(o, "max_abs_diff", lm_max_abs_diff_f64(streamed, masked, n * d), err);
    if (status == LM_OK)
        status = put1(o, "matches", allclose(streamed, masked, n * d), err);
    if (status == LM_OK)
        status = put1(o, "output_sum", sum(streamed, n * d), err);
    return release(status, buf, mask, NULL, NULL);
}

/* ---- 3. sparse -------------------------------------------------------------------------- */

static lm_status fn_global_local_pairs(const json_t *args, outputs *o, lm_error *err)
{
    size_t n, w, count;
    long long *tokens = NULL;
    TRY(arg_size(args, "n", 1, MAX_TOKENS, &n, err));
    TRY(arg_size(args, "w", 1, MAX_TOKENS, &w, err));
    TRY(arg_ints(args, "global_tokens", 0, (long long)n - 1, &tokens, &count, err));
    size_t *global = malloc(count * sizeof *global);
    if (global == NULL)
        return release(lm_fail(err, LM_ERR_NOMEM, "global tokens"), tokens, NULL, NULL, NULL);
    for (size_t i = 0; i < count; i++)
        global[i] = (size_t)tokens[i];
    uint64_t pairs;
    lm_status status = lm_sparse_global_local_pairs(n, w, global, count, &pairs, err);
    if (status == LM_OK)
        status = put1(o, "value", (double)pairs, err);
    return release(status, tokens, global, NULL, NULL);
}

static lm_status fn_strided_pairs(const json_t *args, outputs *o, lm_error *err)
{
    size_t n, stride;
    uint64_t pairs;
    TRY(arg_size(args, "n", 1, MAX_TOKENS, &n, err));
    TRY(arg_size(args, "stride", 1, MAX_TOKENS, &stride, err));
    TRY(lm_sparse_strided_pairs(n, stride, &pairs, err));
    return put1(o, "value", (double)pairs, err);
}

static lm_status fn_strided_row_keys(const json_t *args, outputs *o, lm_error *err)
{
    size_t n, stride, row;
    TRY(arg_size(args, "n", 1, MAX_TOKENS, &n, err));
    TRY(arg_size(args, "stride", 1, MAX_TOKENS, &stride, err));
    TRY(arg_size(args, "row", 0, (long long)n - 1, &row, err));
    uint8_t *mask = malloc(n * n);
    double *keys = malloc(n * sizeof *keys);
    if (mask == NULL || keys == NULL)
        return release(lm_fail(err, LM_ERR_NOMEM, "strided mask"), mask, keys, NULL, NULL);
    lm_status status = lm_sparse_strided_mask(n, stride, mask, err);
    size_t count = 0;
    for (size_t j = 0; j < n && status == LM_OK; j++)
        if (mask[row * n + j])
            keys[count++] = (double)j;
    if (status == LM_OK)
        status = put(o, "value", keys, count, err);
    return release(status, mask, keys, NULL, NULL);
}

/* ---- 4. linear attention ---------------------------------------------------------------- */

static lm_status fn_feature_map(const json_t *args, outputs *o, lm_error *err)
{
    /* x may be a vector or a matrix: phi is elementwise */
    double *x = NULL;
    size_t rows, cols, count;
    const json_t *value;
    TRY(lm_json_at(args, "x", &value, err));
    lm_status status;
    if (json_is_array(value) && json_array_size(value) > 0 &&
        json_is_array(json_array_get(value, 0))) {
        status = arg_matrix(args, "x", &x, &rows, &cols, err);
        count = rows * cols;
    } else {
        status = arg_vector(args, "x", &x, &count, err);
    }
    if (status != LM_OK)
        return release(status, x, NULL, NULL, NULL);
    double *y = malloc(count * sizeof *y);
    status = y ? lm_linear_feature_map_f64_ref(x, count, y, err)
               : lm_fail(err, LM_ERR_NOMEM, "phi of %zu", count);
    if (status == LM_OK)
        status = put(o, "value", y, count, err);
    return release(status, x, y, NULL, NULL);
}

typedef struct qkv {
    double *q, *k, *v;
    size_t n, d, d_v;
} qkv;

static void qkv_free(qkv *t)
{
    free(t->q);
    free(t->k);
    free(t->v);
}

static lm_status read_qkv(const json_t *args, bool need_v, qkv *t, lm_error *err)
{
    memset(t, 0, sizeof *t);
    size_t rows_k, cols_k, rows_v = 0;
    TRY(arg_matrix(args, "Q", &t->q, &t->n, &t->d, err));
    TRY(arg_matrix(args, "K", &t->k, &rows_k, &cols_k, err));
    if (cols_k != t->d)
        return lm_fail(err, LM_ERR_SCHEMA, "args.K must have as many columns as args.Q");
    if (rows_k != t->n)
        return lm_fail(err, LM_ERR_SCHEMA, "args.K must have as many rows as args.Q");
    if (need_v) {
        TRY(arg_matrix(args, "V", &t->v, &rows_v, &t->d_v, err));
        if (rows_v != t->n)
            return lm_fail(err, LM_ERR_SCHEMA, "args.V must have as many rows as args.K");
    }
    return LM_OK;
}

static lm_status fn_linear_recurrent(const json_t *args, outputs *o, lm_error *err)
{
    qkv t;
    lm_status status = read_qkv(args, true, &t, err);
    double *out = NULL, *s = NULL, *z = NULL;
    if (status == LM_OK) {
        out = malloc(t.n * t.d_v * sizeof *out);
        s = malloc(t.d * t.d_v * sizeof *s);
        z = malloc(t.d * sizeof *z);
        if (!out || !s || !z)
            status = lm_fail(err, LM_ERR_NOMEM, "linear attention outputs");
    }
    if (status == LM_OK)
        status = lm_linear_feature_recurrent_f64_ref(t.q, t.k, t.v, t.n, t.d, t.d_v, out, s, z, err);
    if (status == LM_OK)
        status = put(o, "out", out, t.n * t.d_v, err);
    if (status == LM_OK)
        status = put(o, "S", s, t.d * t.d_v, err);
    if (status == LM_OK)
        status = put(o, "z", z, t.d, err);
    qkv_free(&t);
    return release(status, out, s, z, NULL);
}

static lm_status fn_linear_weights(const json_t *args, outputs *o, lm_error *err)
{
    qkv t;
    lm_status status = read_qkv(args, false, &t, err);
    double *weights = NULL, *scores = NULL, *phi_q = NULL, *phi_k = NULL;
    if (status == LM_OK) {
        weights = malloc(t.n * t.n * sizeof *weights);
        scores = malloc(t.n * t.n * sizeof *scores);
        phi_q = malloc(t.n * t.d * sizeof *phi_q);
        phi_k = malloc(t.n * t.d * sizeof *phi_k);
        if (!weights || !scores || !phi_q || !phi_k)
            status = lm_fail(err, LM_ERR_NOMEM, "linear attention weights");
    }
    if (status == LM_OK)
        status = lm_linear_feature_weights_f64_ref(t.q, t.k, t.n, t.d, weights, err);
    /* the unnormalized causal scores phi(q_i).phi(k_j), from phi itself */
    if (status == LM_OK)
        status = lm_linear_feature_map_f64_ref(t.q, t.n * t.d, phi_q, err);
    if (status == LM_OK)
        status = lm_linear_feature_map_f64_ref(t.k, t.n * t.d, phi_k, err);
    for (size_t i = 0; i < t.n && status == LM_OK; i++)
        for (size_t j = 0; j < t.n; j++) {
            double score = 0.0;
            if (j <= i)
                for (size_t c = 0; c < t.d; c++)
                    score += phi_q[i * t.d + c] * phi_k[j * t.d + c];
            scores[i * t.n + j] = score;
        }
    if (status == LM_OK)
        status = put(o, "weights", weights, t.n * t.n, err);
    if (status == LM_OK)
        status = put(o, "scores", scores, t.n * t.n, err);
    qkv_free(&t);
    return release(status, weights, scores, phi_q, phi_k);
}

static lm_status fn_linear_quadratic(const json_t *args, outputs *o, lm_error *err)
{
    qkv t;
    lm_status status = read_qkv(args, true, &t, err);
    double *out = NULL;
    if (status == LM_OK && (out = malloc(t.n * t.d_v * sizeof *out)) == NULL)
        status = lm_fail(err, LM_ERR_NOMEM, "linear attention output");
    if (status == LM_OK)
        status = lm_linear_feature_quadratic_f64_ref(t.q, t.k, t.v, t.n, t.d, t.d_v, out, err);
    if (status == LM_OK)
        status = put(o, "value", out, t.n * t.d_v, err);
    qkv_free(&t);
    return release(status, out, NULL, NULL, NULL);
}

static lm_status fn_sdpa(const json_t *args, outputs *o, lm_error *err)
{
    qkv t;
    const char *mask_name;
    bool scale = true;
    lm_status status = read_qkv(args, true, &t, err);
    if (status == LM_OK)
        status = arg_string(args, "mask", &mask_name, err);
    if (status == LM_OK)
        status = arg_bool(args, "scale", &scale, err);
    if (status == LM_OK && strcmp(mask_name, "none") != 0 && strcmp(mask_name, "causal") != 0)
        status = lm_fail(err, LM_ERR_SCHEMA, "args.mask must be \"none\" or \"causal\", got \"%s\"",
                         mask_name);
    uint8_t *mask = NULL;
    double *out = NULL, *weights = NULL;
    if (status == LM_OK) {
        out = malloc(t.n * t.d_v * sizeof *out);
        weights = malloc(t.n * t.n * sizeof *weights);
        mask = malloc(t.n * t.n);
        if (!out || !weights || !mask)
            status = lm_fail(err, LM_ERR_NOMEM, "attention outputs");
    }
    if (status == LM_OK)
        status = lm_attn_causal_mask(t.n, mask, err);
    if (status == LM_OK)
        status = lm_attn_sdpa_f64_ref(t.q, t.k, t.v, strcmp(mask_name, "causal") == 0 ? mask : NULL,
                                      scale, t.n, t.n, t.d, t.d_v, out, weights, err);
    if (status == LM_OK)
        status = put(o, "out", out, t.n * t.d_v, err);
    if (status == LM_OK)
        status = put(o, "weights", weights, t.n * t.n, err);
    qkv_free(&t);
    return release(status, out, weights, mask, NULL);
}

static lm_status fn_linear_random(const json_t *args, outputs *o, lm_error *err)
{
    long long seed, skip;
    size_t n, d;
    TRY(arg_int(args, "seed", 0, LLONG_MAX, &seed, err));
    TRY(arg_int(args, "skip_normals", 0, MAX_SKIP, &skip, err));
    TRY(arg_size(args, "n", 1, MAX_TOKENS, &n, err));
    TRY(arg_size(args, "d", 1, MAX_WIDTH, &d, err));
    double *buf = malloc((5 * n * d + d * d + d) * sizeof *buf);
    if (buf == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "linear attention inputs");
    double *q = buf, *k = q + n * d, *v = k + n * d, *fast = v + n * d, *slow = fast + n * d,
           *s = slow + n * d, *z = s + d * d;
    lm_rng rng;
    lm_rng_seed(&rng, (uint64_t)seed);
    skip_normals(&rng, skip);
    draw_normals(&rng, q, n * d);
    draw_normals(&rng, k, n * d);
    draw_normals(&rng, v, n * d);
    lm_status status = lm_linear_feature_recurrent_f64_ref(q, k, v, n, d, d, fast, s, z, err);
    if (status == LM_OK)
        status = lm_linear_feature_quadratic_f64_ref(q, k, v, n, d, d, slow, err);
    if (status == LM_OK)
        status = put1(o, "max_abs_diff", lm_max_abs_diff_f64(fast, slow, n * d), err);
    if (status == LM_OK)
        status = put1(o, "matches", allclose(fast, slow, n * d), err);
    if (status == LM_OK)
        status = put1(o, "state_rows", (double)d, err); /* S {d_key, d_value} as returned */
    if (status == LM_OK)
        status = put1(o, "state_cols", (double)d, err);
    if (status == LM_OK)
        status = put1(o, "z_length", (double)d, err);
    if (status == LM_OK)
        status = put1(o, "output_sum", sum(fast, n * d), err);
    return release(status, buf, NULL, NULL, NULL);
}

static double mean_row_max(const double *w, size_t n, size_t last)
{
    double total = 0.0;
    for (size_t i = n - last; i < n; i++) {
        double top = w[i * n];
        for (size_t j = 1; j < n; j++)
            top = fmax(top, w[i * n + j]);
        total += top;
    }
    return total / (double)last;
}

static lm_status fn_peak_weights(const json_t *args, outputs *o, lm_error *err)
{
    long long seed;
    size_t n, d, last;
    double query_scale;
    TRY(arg_int(args, "seed", 0, LLONG_MAX, &seed, err));
    TRY(arg_size(args, "n", 1, MAX_TOKENS, &n, err));
    TRY(arg_size(args, "d", 1, MAX_WIDTH, &d, err));
    TRY(arg_real(args, "query_scale", &query_scale, err));
    TRY(arg_size(args, "last_rows", 1, (long long)n, &last, err));
    double *buf = malloc((3 * n * d + 2 * n * n) * sizeof *buf);
    uint8_t *mask = malloc(n * n);
    if (buf == NULL || mask == NULL)
        return release(lm_fail(err, LM_ERR_NOMEM, "peak weight inputs"), buf, mask, NULL, NULL);
    double *q = buf, *k = q + n * d, *out = k + n * d, *soft = out + n * d, *lin = soft + n * n;
    lm_rng rng;
    lm_rng_seed(&rng, (uint64_t)seed);
    draw_normals(&rng, q, n * d);
    for (size_t i = 0; i < n * d; i++)
        q[i] *= query_scale;
    draw_normals(&rng, k, n * d);
    lm_status status = lm_attn_causal_mask(n, mask, err);
    if (status == LM_OK) /* V = K: only the weights matter */
        status = lm_attn_sdpa_f64_ref(q, k, k, mask, true, n, n, d, d, out, soft, err);
    if (status == LM_OK)
        status = lm_linear_feature_weights_f64_ref(q, k, n, d, lin, err);
    if (status == LM_OK)
        status = put1(o, "softmax", mean_row_max(soft, n, last), err);
    if (status == LM_OK)
        status = put1(o, "linear", mean_row_max(lin, n, last), err);
    return release(status, buf, mask, NULL, NULL);
}

/* ---- 5. state-space models ---------------------------------------------------------------- */

typedef struct ssm_sys {
    double *a, *b, *c;
    size_t n;
} ssm_sys;

static lm_status read_system(const json_t *args, ssm_sys *s, lm_error *err)
{
    size_t rows, cols, nb, nc;
    memset(s, 0, sizeof *s);
    TRY(arg_matrix(args, "A", &s->a, &rows, &cols, err));
    if (rows != cols)
        return lm_fail(err, LM_ERR_SCHEMA, "args.A must be square, got %zu x %zu", rows, cols);
    TRY(arg_vector(args, "B", &s->b, &nb, err));
    TRY(arg_vector(args, "C", &s->c, &nc, err));
    if (nb != rows || nc != rows)
        return lm_fail(err, LM_ERR_SCHEMA, "args.B and args.C must have as many entries as args.A has rows");
    s->n = rows;
    return LM_OK;
}

static lm_status fn_ssm_path(const json_t *args, outputs *o, bool convolution, lm_error *err)
{
    ssm_sys s;
    double *x = NULL, *y = NULL;
    size_t steps = 0;
    lm_status status = read_system(args, &s, err);
    if (status == LM_OK)
        status = arg_vector(args, "x", &x, &steps, err);
    if (status == LM_OK && (y = malloc(steps * sizeof *y)) == NULL)
        status = lm_fail(err, LM_ERR_NOMEM, "SSM outputs");
    if (status == LM_OK)
        status = convolution ? lm_ssm_lesson_convolution_f64_ref(x, steps, s.a, s.b, s.c, s.n, y, err)
                             : lm_ssm_lesson_recurrent_f64_ref(x, steps, s.a, s.b, s.c, s.n, y, err);
    if (status == LM_OK)
        status = put(o, "value", y, steps, err);
    release(LM_OK, s.a, s.b, s.c, NULL);
    return release(status, x, y, NULL, NULL);
}

static lm_status fn_ssm_recurrent(const json_t *args, outputs *o, lm_error *err)
{
    return fn_ssm_path(args, o, false, err);
}

static lm_status fn_ssm_convolution(const json_t *args, outputs *o, lm_error *err)
{
    return fn_ssm_path(args, o, true, err);
}

static lm_status fn_ssm_kernel(const json_t *args, outputs *o, lm_error *err)
{
    ssm_sys s;
    size_t length = 0;
    double *kernel = NULL;
    lm_status status = read_system(args, &s, err);
    if (status == LM_OK)
        status = arg_size(args, "length", 1, MAX_STEPS, &length, err);
    if (status == LM_OK && (kernel = malloc(length * sizeof *kernel)) == NULL)
        status = lm_fail(err, LM_ERR_NOMEM, "kernel of %zu", length);
    if (status == LM_OK)
        status = lm_ssm_lesson_kernel_f64_ref(s.a, s.b, s.c, s.n, length, kernel, err);
    if (status == LM_OK)
        status = put(o, "value", kernel, length, err);
    release(LM_OK, s.a, s.b, s.c, NULL);
    return release(status, kernel, NULL, NULL, NULL);
}

static lm_status fn_discretize(const json_t *args, outputs *o, lm_error *err)
{
    double delta, a, b, a_bar, b_bar;
    TRY(arg_real(args, "delta", &delta, err));
    TRY(arg_real(args, "a", &a, err));
    TRY(arg_real(args, "b", &b, err));
    TRY(lm_ssm_lesson_discretize(delta, a, b, &a_bar, &b_bar, err));
    TRY(put1(o, "a_bar", a_bar, err));
    return put1(o, "b_bar", b_bar, err);
}

static lm_status fn_softplus(const json_t *args, outputs *o, lm_error *err)
{
    double *x = NULL;
    size_t count;
    TRY(arg_vector(args, "x", &x, &count, err));
    lm_status status = lm_ssm_softplus_f64_ref(x, count, x, err);
    if (status == LM_OK)
        status = put(o, "value", x, count, err);
    return release(status, x, NULL, NULL, NULL);
}

/* delta from args.delta, or step_sizes(args.markers, args.sharpness, args.bias). */
static lm_status read_steps(const json_t *args, double **delta, size_t *count, lm_error *err)
{
    if (json_object_get(args, "delta") != NULL)
        return arg_vector(args, "delta", delta, count, err);
    double sharpness, bias;
    TRY(arg_vector(args, "markers", delta, count, err));
    TRY(arg_real(args, "sharpness", &sharpness, err));
    TRY(arg_real(args, "bias", &bias, err));
    return lm_ssm_step_sizes_f64_ref(*delta, *count, sharpness, bias, *delta, err);
}

static lm_status fn_step_sizes(const json_t *args, outputs *o, lm_error *err)
{
    double *delta = NULL;
    size_t count = 0;
    lm_status status = read_steps(args, &delta, &count, err);
    if (status == LM_OK)
        status = put(o, "value", delta, count, err);
    return release(status, delta, NULL, NULL, NULL);
}

static lm_status read_abc(const json_t *args, double *a, double *b, double *c, lm_error *err)
{
    TRY(arg_real(args, "a", a, err));
    TRY(arg_real(args, "b", b, err));
    return arg_real(args, "c", c, err);
}

static lm_status fn_selective_ssm(const json_t *args, outputs *o, lm_error *err)
{
    double *x = NULL, *delta = NULL, *y = NULL, a, b, c;
    size_t steps = 0, delta_count = 0;
    lm_status status = arg_vector(args, "x", &x, &steps, err);
    if (status == LM_OK)
        status = read_steps(args, &delta, &delta_count, err);
    if (status == LM_OK)
        status = read_abc(args, &a, &b, &c, err);
    if (status == LM_OK && delta_count != steps)
        status = lm_fail(err, LM_ERR_SCHEMA, "args.x and the step sizes must have the same length");
    if (status == LM_OK && (y = malloc(steps * sizeof *y)) == NULL)
        status = lm_fail(err, LM_ERR_NOMEM, "selective SSM outputs");
    if (status == LM_OK)
        status = lm_ssm_lesson_selective_f64_ref(x, delta, steps, a, b, c, y, err);
    if (status == LM_OK)
        status = put(o, "value", y, steps, err);
    return release(status, x, delta, y, NULL);
}

static lm_status fn_selective_recall(const json_t *args, outputs *o, lm_error *err)
{
    double *values = NULL, *markers = NULL, sharpness, bias, a, b, c, final_state;
    size_t steps = 0, count = 0;
    lm_status status = arg_vector(args, "values", &values, &steps, err);
    if (status == LM_OK)
        status = arg_vector(args, "markers", &markers, &count, err);
    if (status == LM_OK && count != steps)
        status = lm_fail(err, LM_ERR_SCHEMA, "args.markers must have as many entries as args.values");
    if (status == LM_OK)
        status = arg_real(args, "sharpness", &sharpness, err);
    if (status == LM_OK)
        status = arg_real(args, "bias", &bias, err);
    if (status == LM_OK)
        status = read_abc(args, &a, &b, &c, err);
    if (status == LM_OK)
        status = lm_ssm_selective_recall(values, markers, steps, sharpness, bias, a, b, c,
                                         &final_state, err);
    if (status == LM_OK)
        status = put1(o, "value", final_state, err);
    return release(status, values, markers, NULL, NULL);
}

static lm_status fn_time_invariant_recall(const json_t *args, outputs *o, lm_error *err)
{
    double *values = NULL, delta, a, b, c, final_state;
    size_t steps = 0;
    lm_status status = arg_vector(args, "values", &values, &steps, err);
    if (status == LM_OK)
        status = arg_real(args, "delta", &delta, err);
    if (status == LM_OK)
        status = read_abc(args, &a, &b, &c, err);
    if (status == LM_OK)
        status = lm_ssm_time_invariant_recall(values, steps, delta, a, b, c, &final_state, err);
    if (status == LM_OK)
        status = put1(o, "value", final_state, err);
    return release(status, values, NULL, NULL, NULL);
}

static lm_status fn_best_recall(const json_t *args, outputs *o, lm_error *err)
{
    double *values = NULL, *grid = NULL, *path = NULL, start, stop, a, b, c, best_delta,
           best_value;
    size_t steps = 0, num = 0, best_index = 0;
    lm_status status = arg_vector(args, "values", &values, &steps, err);
    if (status == LM_OK)
        status = arg_real(args, "grid_start", &start, err);
    if (status == LM_OK)
        status = arg_real(args, "grid_stop", &stop, err);
    if (status == LM_OK)
        status = arg_size(args, "grid_num", 1, 1 << 16, &num, err);
    if (status == LM_OK)
        status = read_abc(args, &a, &b, &c, err);
    if (status == LM_OK && ((grid = malloc(num * sizeof *grid)) == NULL ||
                            (path = malloc(2 * steps * sizeof *path)) == NULL))
        status = lm_fail(err, LM_ERR_NOMEM, "recall grid");
    if (status == LM_OK)
        status = lm_ssm_geomspace(start, stop, num, grid, err);
    if (status == LM_OK)
        status = lm_ssm_best_time_invariant_recall(values, steps, grid, num, a, b, c, &best_index,
                                                   &best_delta, &best_value, err);
    if (status == LM_OK) { /* the best fixed step's trajectory, for its peak */
        for (size_t t = 0; t < steps; t++)
            path[t] = best_delta;
        status = lm_ssm_lesson_selective_f64_ref(values, path, steps, a, b, c, path + steps, err);
    }
    if (status == LM_OK)
        status = put1(o, "best_value", best_value, err);
    if (status == LM_OK)
        status = put1(o, "best_delta", best_delta, err);
    if (status == LM_OK)
        status = put1(o, "best_index", (double)best_index, err);
    if (status == LM_OK) {
        double peak = path[steps];
        for (size_t t = 1; t < steps; t++)
            peak = fmax(peak, path[steps + t]);
        status = put1(o, "best_peak", peak, err);
    }
    return release(status, values, grid, path, NULL);
}

/* ---- the scans -------------------------------------------------------------------------- */

static lm_status read_ab(const json_t *args, double **a, double **b, size_t *steps, lm_error *err)
{
    size_t count_b;
    TRY(arg_vector(args, "a", a, steps, err));
    TRY(arg_vector(args, "b", b, &count_b, err));
    if (count_b != *steps)
        return lm_fail(err, LM_ERR_SCHEMA, "args.a and args.b must have the same length");
    return LM_OK;
}

static lm_status fn_parallel_scan(const json_t *args, outputs *o, lm_error *err)
{
    double *a = NULL, *b = NULL, *states = NULL, *a_out = NULL;
    size_t steps = 0, max_rounds = 0, rounds = 0;
    lm_status status = read_ab(args, &a, &b, &steps, err);
    if (status == LM_OK)
        status = arg_size(args, "max_rounds", 0, 64, &max_rounds, err);
    if (status == LM_OK && ((states = malloc(steps * sizeof *states)) == NULL ||
                            (a_out = malloc(steps * sizeof *a_out)) == NULL))
        status = lm_fail(err, LM_ERR_NOMEM, "scan outputs");
    if (status == LM_OK)
        status = lm_scan_hillis_steele_f64_ref(a, b, steps, max_rounds, a_out, states, &rounds, err);
    if (status == LM_OK)
        status = put(o, "states", states, steps, err);
    if (status == LM_OK)
        status = put(o, "a", a_out, steps, err);
    if (status == LM_OK)
        status = put1(o, "rounds", (double)rounds, err);
    return release(status, a, b, states, a_out);
}

static lm_status fn_work_efficient_scan(const json_t *args, outputs *o, lm_error *err)
{
    double *a = NULL, *b = NULL, *states = NULL;
    size_t steps = 0;
    lm_status status = read_ab(args, &a, &b, &steps, err);
    if (status == LM_OK && (states = malloc(steps * sizeof *states)) == NULL)
        status = lm_fail(err, LM_ERR_NOMEM, "scan outputs");
    if (status == LM_OK)
        status = lm_scan_blelloch_f64_ref(a, b, steps, states, err);
    if (status == LM_OK)
        status = put(o, "states", states, steps, err);
    return release(status, a, b, states, NULL);
}

static lm_status fn_parallel_scan_random(const json_t *args, outputs *o, lm_error *err)
{
    long long seed, skip;
    size_t length, rounds = 0;
    double a_fill;
    TRY(arg_int(args, "seed", 0, LLONG_MAX, &seed, err));
    TRY(arg_int(args, "skip_normals", 0, MAX_SKIP, &skip, err));
    TRY(arg_size(args, "length", 1, MAX_STEPS, &length, err));
    TRY(arg_real(args, "a_fill", &a_fill, err));
    double *buf = malloc(5 * length * sizeof *buf);
    if (buf == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "scan of %zu", length);
    double *a = buf, *b = a + length, *hs = b + length, *seq = hs + length, *bl = seq + length;
    lm_rng rng;
    lm_rng_seed(&rng, (uint64_t)seed);
    skip_normals(&rng, skip);
    draw_normals(&rng, b, length);
    for (size_t t = 0; t < length; t++)
        a[t] = a_fill;
    lm_status status = lm_scan_hillis_steele_f64_ref(a, b, length, 0, NULL, hs, &rounds, err);
    if (status == LM_OK)
        status = lm_scan_affine_sequential_f64_ref(a, b, length, 1, NULL, seq, err);
    if (status == LM_OK)
        status = lm_scan_blelloch_f64_ref(a, b, length, bl, err);
    if (status == LM_OK)
        status = put1(o, "rounds", (double)rounds, err);
    if (status == LM_OK)
        status = put1(o, "max_abs_diff", lm_max_abs_diff_f64(hs, seq, length), err);
    if (status == LM_OK)
        status = put1(o, "states_sum", sum(hs, length), err);
    if (status == LM_OK)
        status = put1(o, "blelloch_max_abs_diff", lm_max_abs_diff_f64(bl, seq, length), err);
    return release(status, buf, NULL, NULL, NULL);
}

static lm_status fn_ssm_state_bytes(const json_t *args, outputs *o, lm_error *err)
{
    long long channels, state, bits, bytes;
    TRY(arg_int(args, "channels", 1, 1LL << 30, &channels, err));
    TRY(arg_int(args, "state_size", 1, 1LL << 30, &state, err));
    TRY(arg_int(args, "bits", 1, 64, &bits, err));
    TRY(lm_arith_bill_ssm_state_bytes(channels, state, bits, &bytes, err));
    return put1(o, "value", (double)bytes, err);
}

static lm_status fn_hybrid_cache_bytes(const json_t *args, outputs *o, lm_error *err)
{
    long long context, layers, attention, heads, head_dim, channels, state, bits, bytes;
    TRY(arg_int(args, "context", 0, MAX_COUNT, &context, err));
    TRY(arg_int(args, "layers", 1, 1 << 20, &layers, err));
    TRY(arg_int(args, "attention_layers", 0, 1 << 20, &attention, err));
    TRY(arg_int(args, "kv_heads", 1, 1 << 20, &heads, err));
    TRY(arg_int(args, "head_dim", 1, 1 << 20, &head_dim, err));
    TRY(arg_int(args, "channels", 1, 1LL << 30, &channels, err));
    TRY(arg_int(args, "state_size", 1, 1LL << 30, &state, err));
    TRY(arg_int(args, "bits", 1, 64, &bits, err));
    TRY(lm_arith_bill_hybrid_cache_bytes(context, layers, attention, heads, head_dim, channels,
                                         state, bits, &bytes, err));
    return put1(o, "value", (double)bytes, err);
}

/* ---- 6. latent and quantized caches ------------------------------------------------------ */

static lm_status fn_latent_bytes(const json_t *args, outputs *o, lm_error *err)
{
    long long layers, latent, rope, bits, bytes;
    TRY(arg_int(args, "layers", 1, 1 << 20, &layers, err));
    TRY(arg_int(args, "latent_dim", 1, 1 << 20, &latent, err));
    TRY(arg_int(args, "rope_dim", 0, 1 << 20, &rope, err));
    TRY(arg_int(args, "bits", 1, 64, &bits, err));
    TRY(lm_latent_kv_bytes_per_token(layers, latent, rope, bits, &bytes, err));
    return put1(o, "value", (double)bytes, err);
}

static lm_status fn_mha_numbers(const json_t *args, outputs *o, lm_error *err)
{
    long long heads, head_dim;
    TRY(arg_int(args, "heads", 1, 1 << 20, &heads, err));
    TRY(arg_int(args, "head_dim", 1, 1 << 20, &head_dim, err));
    return put1(o, "value", (double)(2 * heads * head_dim), err); /* a key and a value per head */
}

static lm_status fn_latent_numbers(const json_t *args, outputs *o, lm_error *err)
{
    long long latent, rope, bytes;
    TRY(arg_int(args, "latent_dim", 1, 1 << 20, &latent, err));
    TRY(arg_int(args, "rope_dim", 0, 1 << 20, &rope, err));
    /* numbers per token per layer = the byte count of one layer at 8 bits */
    TRY(lm_latent_kv_bytes_per_token(1, latent, rope, 8, &bytes, err));
    return put1(o, "value", (double)bytes, err);
}

static lm_status fn_latent_worked(const json_t *args, outputs *o, lm_error *err)
{
    double *x = NULL, *w_down = NULL, *w_uk = NULL, *q = NULL;
    size_t d_model = 0, rows_d, d_latent, rows_k, width, count_q;
    lm_status status = arg_vector(args, "x", &x, &d_model, err);
    if (status == LM_OK)
        status = arg_matrix(args, "W_down", &w_down, &rows_d, &d_latent, err);
    if (status == LM_OK)
        status = arg_matrix(args, "W_uk", &w_uk, &rows_k, &width, err);
    if (status == LM_OK)
        status = arg_vector(args, "q", &q, &count_q, err);
    if (status == LM_OK && (rows_d != d_model || rows_k != d_latent || count_q != width))
        status = lm_fail(err, LM_ERR_SCHEMA, "args.x, W_down, W_uk and q have mismatched shapes");
    double *out = NULL;
    if (status == LM_OK && (out = malloc((2 * d_latent + width) * sizeof *out)) == NULL)
        status = lm_fail(err, LM_ERR_NOMEM, "worked example outputs");
    double score = 0.0, absorbed = 0.0;
    if (status == LM_OK)
        status = lm_latent_worked_example(x, w_down, w_uk, q, d_model, d_latent, width, out,
                                          out + d_latent, out + d_latent + width, &score,
                                          &absorbed, err);
    if (status == LM_OK)
        status = put(o, "latent", out, d_latent, err);
    if (status == LM_OK)
        status = put(o, "key", out + d_latent, width, err);
    if (status == LM_OK)
        status = put1(o, "score", score, err);
    if (status == LM_OK)
        status = put(o, "q_latent", out + d_latent + width, d_latent, err);
    if (status == LM_OK)
        status = put1(o, "absorbed_score", absorbed, err);
    free(out);
    return release(status, x, w_down, w_uk, q);
}

static lm_status fn_latent_attention(const json_t *args, outputs *o, lm_error *err)
{
    size_t d_model, heads, d_head, d_latent, n;
    long long weight_seed, seed, skip;
    TRY(arg_size(args, "d_model", 1, MAX_WIDTH, &d_model, err));
    TRY(arg_size(args, "n_heads", 1, 256, &heads, err));
    TRY(arg_size(args, "d_head", 1, MAX_WIDTH, &d_head, err));
    TRY(arg_size(args, "d_latent", 1, MAX_WIDTH, &d_latent, err));
    TRY(arg_int(args, "weight_seed", 0, LLONG_MAX, &weight_seed, err));
    TRY(arg_int(args, "seed", 0, LLONG_MAX, &seed, err));
    TRY(arg_int(args, "skip_normals", 0, MAX_SKIP, &skip, err));
    TRY(arg_size(args, "n", 1, 4096, &n, err));
    size_t width = heads * d_head;
    double *buf = malloc((n * d_model + n * d_latent + 2 * n * width) * sizeof *buf);
    if (buf == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "latent attention buffers");
    double *x = buf, *c = x + n * d_model, *expanded = c + n * d_latent,
           *absorbed = expanded + n * width;
    lm_latent_layer layer;
    lm_status status = lm_latent_layer_init(&layer, d_model, heads, d_head, d_latent,
                                            (uint64_t)weight_seed, err);
    lm_rng rng;
    lm_rng_seed(&rng, (uint64_t)seed);
    skip_normals(&rng, skip);
    draw_normals(&rng, x, n * d_model);
    if (status == LM_OK)
        status = lm_latent_compress_f64_ref(&layer, x, n, c, err);
    if (status == LM_OK)
        status = lm_latent_attend_f64_ref(&layer, x, c, n, expanded, err);
    if (status == LM_OK)
        status = lm_latent_attend_absorbed_f64_ref(&layer, x, c, n, absorbed, err);
    if (status == LM_OK)
        status = put1(o, "cached_numbers", (double)layer.d_latent, err);
    if (status == LM_OK)
        status = put1(o, "full_numbers", (double)(2 * layer.n_heads * layer.d_head), err);
    if (status == LM_OK)
        status = put1(o, "max_abs_diff", lm_max_abs_diff_f64(expanded, absorbed, n * width), err);
    if (status == LM_OK)
        status = put1(o, "agree", allclose(expanded, absorbed, n * width), err);
    if (status == LM_OK)
        status = put1(o, "output_sum", sum(expanded, n * width), err);
    lm_latent_layer_free(&layer);
    return release(status, buf, NULL, NULL, NULL);
}

static lm_status fn_quantize(const json_t *args, outputs *o, lm_error *err)
{
    double *x = NULL;
    size_t count = 0;
    long long bits;
    lm_status status = arg_vector(args, "x", &x, &count, err);
    if (status == LM_OK)
        status = arg_int(args, "bits", 2, 16, &bits, err);
    int32_t *codes = NULL;
    double *out = NULL, scale = 0.0;
    if (status == LM_OK && ((codes = malloc(count * sizeof *codes)) == NULL ||
                            (out = malloc(count * sizeof *out)) == NULL))
        status = lm_fail(err, LM_ERR_NOMEM, "quantization outputs");
    if (status == LM_OK) /* one vector: one row */
        status = lm_kvquant_quantize_rows_f64_ref(x, 1, count, (int)bits, codes, &scale, err);
    if (status == LM_OK)
        status = lm_kvquant_dequantize_rows_f64_ref(codes, &scale, 1, count, out, err);
    if (status == LM_OK) {
        for (size_t i = 0; i < count; i++)
            x[i] = (double)codes[i];
        status = put(o, "codes", x, count, err);
    }
    if (status == LM_OK)
        status = put1(o, "scale", scale, err);
    if (status == LM_OK)
        status = put(o, "dequantized", out, count, err);
    return release(status, x, codes, out, NULL);
}

static lm_status fn_quantized_vector_bytes(const json_t *args, outputs *o, lm_error *err)
{
    long long head_dim, bits, scale_bits;
    double bytes;
    TRY(arg_int(args, "head_dim", 1, 1 << 20, &head_dim, err));
    TRY(arg_int(args, "bits", 1, 64, &bits, err));
    TRY(arg_int(args, "scale_bits", 0, 64, &scale_bits, err));
    /* one head vector = the per-token formula with 2 L H = 1 ... so divide by 2 */
    TRY(lm_kvquant_bytes_per_token(1, 1, head_dim, bits, scale_bits, &bytes, err));
    return put1(o, "value", bytes / 2.0, err);
}

static lm_status fn_quantized_kv_bytes(const json_t *args, outputs *o, lm_error *err)
{
    long long layers, heads, head_dim, bits, scale_bits;
    double bytes;
    TRY(read_kv(args, &layers, &heads, &head_dim, &bits, err));
    TRY(arg_int(args, "scale_bits", 0, 64, &scale_bits, err));
    TRY(lm_kvquant_bytes_per_token(layers, heads, head_dim, bits, scale_bits, &bytes, err));
    return put1(o, "value", bytes, err);
}

static lm_status fn_cache_error(const json_t *args, outputs *o, bool kivi, lm_error *err)
{
    long long bits, seed;
    size_t n, d;
    double error;
    TRY(arg_int(args, "bits", kivi ? 1 : 2, 16, &bits, err));
    TRY(arg_size(args, "n", 1, 4096, &n, err));
    TRY(arg_size(args, "d", 1, MAX_WIDTH, &d, err));
    TRY(arg_int(args, "seed", 0, LLONG_MAX, &seed, err));
    TRY(kivi ? lm_kvquant_kivi_cache_error((int)bits, n, d, (uint64_t)seed, &error, err)
             : lm_kvquant_cache_error((int)bits, n, d, (uint64_t)seed, &error, err));
    return put1(o, "value", error, err);
}

static lm_status fn_quantized_cache_error(const json_t *args, outputs *o, lm_error *err)
{
    return fn_cache_error(args, o, false, err);
}

static lm_status fn_kivi_cache_error(const json_t *args, outputs *o, lm_error *err)
{
    return fn_cache_error(args, o, true, err);
}

static lm_status fn_cache_bytes_by_method(const json_t *args, outputs *o, lm_error *err)
{
    long long context;
    double bytes[LM_CACHE_METHOD_COUNT];
    TRY(arg_int(args, "context", 0, MAX_COUNT, &context, err));
    TRY(lm_arith_cache_bytes_by_method(context, bytes, err));
    for (int m = 0; m < LM_CACHE_METHOD_COUNT; m++)
        TRY(put1(o, lm_arith_cache_method_key((lm_cache_method)m), bytes[m], err));
    return LM_OK;
}

/* ---- the M8 notebook: demos and exercises ------------------------------------------------ */

static lm_status fn_chunk_boundary(const json_t *args, outputs *o, lm_error *err)
{
    long long seed, *chunks = NULL;
    size_t steps, width, reset, count = 0;
    double a_low, a_high, reset_error = 0.0;
    TRY(arg_int(args, "seed", 0, LLONG_MAX, &seed, err));
    TRY(arg_size(args, "steps", 1, MAX_STEPS, &steps, err));
    TRY(arg_size(args, "width", 1, MAX_WIDTH, &width, err));
    TRY(arg_real(args, "a_low", &a_low, err));
    TRY(arg_real(args, "a_high", &a_high, err));
    TRY(arg_size(args, "reset_chunk", 1, MAX_STEPS, &reset, err));
    TRY(arg_ints(args, "chunk_sizes", 1, MAX_STEPS, &chunks, &count, err));
    size_t *sizes = malloc(count * sizeof *sizes);
    double *errors = malloc(count * sizeof *errors);
    lm_status status = sizes && errors ? LM_OK : lm_fail(err, LM_ERR_NOMEM, "chunk sizes");
    for (size_t i = 0; i < count && status == LM_OK; i++)
        sizes[i] = (size_t)chunks[i];
    if (status == LM_OK)
        status = lm_scan_chunk_boundary_demo((uint64_t)seed, steps, width, a_low, a_high, sizes,
                                             count, reset, errors, &reset_error, err);
    if (status == LM_OK)
        status = put(o, "chunk_errors", errors, count, err);
    if (status == LM_OK)
        status = put1(o, "reset_error", reset_error, err);
    return release(status, chunks, sizes, errors, NULL);
}

static lm_status fn_rewrite_keys(const json_t *args, outputs *o, lm_error *err)
{
    long long seed;
    size_t n_keys, key_width, value_width, writes;
    double decay;
    TRY(arg_int(args, "seed", 0, LLONG_MAX, &seed, err));
    TRY(arg_size(args, "n_keys", 1, 1024, &n_keys, err));
    TRY(arg_size(args, "key_width", 1, MAX_WIDTH, &key_width, err));
    TRY(arg_size(args, "value_width", 1, MAX_WIDTH, &value_width, err));
    TRY(arg_size(args, "writes", 1, MAX_STEPS, &writes, err));
    TRY(arg_real(args, "decay", &decay, err));
    lm_delta_rewrite_result result;
    TRY(lm_delta_rewrite_keys_demo((uint64_t)seed, n_keys, key_width, value_width, writes, decay,
                                   &result, err));
    TRY(put1(o, "additive", result.final_mse[LM_DELTA_WRITE_ADDITIVE], err));
    TRY(put1(o, "delta", result.final_mse[LM_DELTA_WRITE_DELTA], err));
    TRY(put1(o, "gated", result.final_mse[LM_DELTA_WRITE_GATED], err));
    TRY(put1(o, "delta_current_key_error", result.current_key_error[LM_DELTA_WRITE_DELTA], err));
    return put1(o, "gated_current_key_error", result.current_key_error[LM_DELTA_WRITE_GATED], err);
}

static lm_status fn_parallel_prefix(const json_t *args, outputs *o, lm_error *err)
{
    long long seed, *lengths = NULL;
    size_t width, count = 0;
    double a_low, a_high;
    TRY(arg_int(args, "seed", 0, LLONG_MAX, &seed, err));
    TRY(arg_size(args, "width", 1, MAX_WIDTH, &width, err));
    TRY(arg_real(args, "a_low", &a_low, err));
    TRY(arg_real(args, "a_high", &a_high, err));
    TRY(arg_ints(args, "lengths", 1, MAX_STEPS, &lengths, &count, err));
    size_t *sizes = malloc(count * sizeof *sizes);
    double *diffs = malloc(2 * count * sizeof *diffs);
    lm_status status = sizes && diffs ? LM_OK : lm_fail(err, LM_ERR_NOMEM, "lengths");
    for (size_t i = 0; i < count && status == LM_OK; i++)
        sizes[i] = (size_t)lengths[i];
    if (status == LM_OK)
        status = lm_scan_parallel_prefix_exercise((uint64_t)seed, sizes, count, width, a_low,
                                                  a_high, diffs, diffs + count, err);
    if (status == LM_OK)
        status = put(o, "hillis_diff", diffs, count, err);
    if (status == LM_OK)
        status = put(o, "blelloch_diff", diffs + count, count, err);
    return release(status, lengths, sizes, diffs, NULL);
}

static lm_status fn_overwrite(const json_t *args, outputs *o, lm_error *err)
{
    double *state = NULL, *key = NULL, *value = NULL, *other = NULL, beta, decay;
    size_t rows = 0, cols = 0, n_key = 0, n_value = 0, n_other = 0;
    lm_status status = arg_matrix(args, "state", &state, &rows, &cols, err);
    if (status == LM_OK)
        status = arg_vector(args, "key", &key, &n_key, err);
    if (status == LM_OK)
        status = arg_vector(args, "value", &value, &n_value, err);
    if (status == LM_OK)
        status = arg_vector(args, "other_key", &other, &n_other, err);
    if (status == LM_OK)
        status = arg_real(args, "beta", &beta, err);
    if (status == LM_OK)
        status = arg_real(args, "decay", &decay, err);
    if (status == LM_OK && (n_key != cols || n_other != cols || n_value != rows))
        status = lm_fail(err, LM_ERR_SCHEMA,
                         "args.key and args.other_key need state columns, args.value state rows");
    double *reads = NULL, change = 0.0;
    if (status == LM_OK && (reads = malloc(3 * rows * sizeof *reads)) == NULL)
        status = lm_fail(err, LM_ERR_NOMEM, "retrievals");
    if (status == LM_OK)
        status = lm_delta_overwrite_interference(state, rows, cols, key, other, value, beta, decay,
                                                 reads, reads + rows, reads + 2 * rows, &change,
                                                 err);
    if (status == LM_OK)
        status = put(o, "retrieval_before", reads, rows, err);
    if (status == LM_OK)
        status = put(o, "retrieval_after", reads + rows, rows, err);
    if (status == LM_OK)
        status = put1(o, "change_norm", change, err);
    if (status == LM_OK)
        status = put(o, "retrieval_at_key", reads + 2 * rows, rows, err);
    free(reads);
    return release(status, state, key, value, other);
}

static lm_status fn_crossover_by_batch(const json_t *args, outputs *o, lm_error *err)
{
    lm_kv_cache_geometry kv;
    lm_ssm_state_geometry ssm;
    long long *batches = NULL;
    size_t count = 0;
    TRY(arg_int(args, "layers", 1, 1 << 20, &kv.layers, err));
    TRY(arg_int(args, "kv_heads", 1, 1 << 20, &kv.kv_heads, err));
    TRY(arg_int(args, "head_width", 1, 1 << 20, &kv.head_width, err));
    TRY(arg_int(args, "bytes_per_value", 1, 64, &kv.bytes_per_value, err));
    TRY(arg_int(args, "ssm_layers", 1, 1 << 20, &ssm.layers, err));
    TRY(arg_int(args, "inner_width", 1, 1LL << 30, &ssm.inner_width, err));
    TRY(arg_int(args, "state_width", 1, 1LL << 30, &ssm.state_width, err));
    TRY(arg_int(args, "conv_width", 0, 1 << 20, &ssm.conv_width, err));
    TRY(arg_int(args, "conv_channels", 0, 1LL << 30, &ssm.conv_channels, err));
    ssm.bytes_per_value = kv.bytes_per_value;
    TRY(arg_ints(args, "batches", 1, 1 << 20, &batches, &count, err));
    lm_memory_crossover *cross = malloc(count * sizeof *cross);
    double *values = malloc(2 * count * sizeof *values);
    lm_status status = cross && values ? LM_OK : lm_fail(err, LM_ERR_NOMEM, "crossovers");
    if (status == LM_OK)
        status = lm_arith_crossover_by_batch(&kv, &ssm, batches, count, cross, err);
    for (size_t i = 0; i < count && status == LM_OK; i++) {
        values[i] = cross[i].tokens_exact;
        values[count + i] = (double)cross[i].first_integer_token;
    }
    if (status == LM_OK)
        status = put(o, "tokens_exact", values, count, err);
    if (status == LM_OK)
        status = put(o, "first_integer_token", values + count, count, err);
    return release(status, batches, cross, values, NULL);
}

/* ---- the catalog ------------------------------------------------------------------------- */

typedef struct catalog_entry {
    const char *name;
    handler_fn run;
} catalog_entry;

static const catalog_entry catalog[] = {
    {"handshakes", fn_handshakes},
    {"pairs_per_head_per_layer", fn_pairs},
    {"kv_cache_bytes_per_token", fn_kv_bytes_per_token},
    {"kv_cache_bytes", fn_kv_cache_bytes},
    {"context_cost", fn_context_cost},
    {"sliding_window_mask_row", fn_window_mask_row},
    {"sliding_window_pairs", fn_window_pairs},
    {"causal_pairs", fn_causal_pairs},
    {"receptive_field", fn_receptive_field},
    {"reach", fn_reach},
    {"relay_hops", fn_relay_hops},
    {"rolling_buffer_slots", fn_rolling_slots},
    {"sliding_window_decode", fn_window_decode},
    {"global_local_pairs", fn_global_local_pairs},
    {"strided_pairs", fn_strided_pairs},
    {"strided_row_keys", fn_strided_row_keys},
    {"feature_map", fn_feature_map},
    {"linear_attention_recurrent", fn_linear_recurrent},
    {"linear_attention_weights", fn_linear_weights},
    {"linear_attention_quadratic", fn_linear_quadratic},
    {"scaled_dot_product_attention", fn_sdpa},
    {"linear_attention_random", fn_linear_random},
    {"peak_weights", fn_peak_weights},
    {"ssm_recurrent", fn_ssm_recurrent},
    {"ssm_kernel", fn_ssm_kernel},
    {"ssm_convolution", fn_ssm_convolution},
    {"discretize", fn_discretize},
    {"softplus", fn_softplus},
    {"step_sizes", fn_step_sizes},
    {"selective_ssm", fn_selective_ssm},
    {"selective_recall", fn_selective_recall},
    {"time_invariant_recall", fn_time_invariant_recall},
    {"best_time_invariant_recall", fn_best_recall},
    {"parallel_scan", fn_parallel_scan},
    {"work_efficient_scan", fn_work_efficient_scan},
    {"parallel_scan_random", fn_parallel_scan_random},
    {"ssm_state_bytes", fn_ssm_state_bytes},
    {"hybrid_cache_bytes", fn_hybrid_cache_bytes},
    {"latent_kv_bytes_per_token", fn_latent_bytes},
    {"mha_numbers_per_token", fn_mha_numbers},
    {"latent_numbers_per_token", fn_latent_numbers},
    {"latent_kv_worked_example", fn_latent_worked},
    {"latent_attention", fn_latent_attention},
    {"quantize", fn_quantize},
    {"quantized_vector_bytes", fn_quantized_vector_bytes},
    {"quantized_kv_bytes_per_token", fn_quantized_kv_bytes},
    {"quantized_cache_error", fn_quantized_cache_error},
    {"kivi_cache_error", fn_kivi_cache_error},
    {"cache_bytes_by_method", fn_cache_bytes_by_method},
    {"chunk_boundary_demo", fn_chunk_boundary},
    {"rewrite_keys_demo", fn_rewrite_keys},
    {"parallel_prefix_exercise", fn_parallel_prefix},
    {"overwrite_interference", fn_overwrite},
    {"crossover_by_batch", fn_crossover_by_batch},
};

static const catalog_entry *find_function(const char *name)
{
    for (size_t i = 0; i < sizeof catalog / sizeof catalog[0]; i++)
        if (strcmp(catalog[i].name, name) == 0)
            return &catalog[i];
    return NULL;
}

/* ---- evaluating an entry ------------------------------------------------------------------ */

/* Why a call could not produce a value: a contract error (returned) or a reference that
 * rejected its inputs (a failed check). */
typedef enum call_kind { CALL_OK, CALL_SCHEMA, CALL_REJECTED } call_kind;

static bool is_contract_error(lm_status status)
{
    return status == LM_ERR_SCHEMA || status == LM_ERR_TYPE || status == LM_ERR_PARSE;
}

/* Runs spec.function(spec.args) and selects spec.output[spec.index]. On success *values
 * (malloc'd) holds *count numbers. */
static call_kind call(const json_t *spec, const char *id, double **values, size_t *count,
                      lm_error *err)
{
    const char *function, *output_name = NULL;
    const json_t *args;
    *values = NULL;
    *count = 0;
    if (lm_json_string(spec, "function", &function, err) != LM_OK ||
        lm_json_at(spec, "args", &args, err) != LM_OK)
        return CALL_SCHEMA;
    if (!json_is_object(args)) {
        lm_fail(err, LM_ERR_TYPE, "args must be an object");
        return CALL_SCHEMA;
    }
    const catalog_entry *entry = find_function(function);
    if (entry == NULL) {
        lm_fail(err, LM_ERR_SCHEMA, "unknown function '%s' (see docs/contracts.md)", function);
        return CALL_SCHEMA;
    }
    if (json_object_get(spec, "output") != NULL &&
        lm_json_string(spec, "output", &output_name, err) != LM_OK)
        return CALL_SCHEMA;
    long long index = -1;
    if (json_object_get(spec, "index") != NULL &&
        lm_json_int(spec, "index", &index, err) != LM_OK)
        return CALL_SCHEMA;
    (void)id;
    outputs out = {.count = 0};
    lm_status status = entry->run(args, &out, err);
    if (status != LM_OK) {
        outputs_free(&out);
        return is_contract_error(status) ? CALL_SCHEMA : CALL_REJECTED;
    }
    const output *chosen = out.count ? &out.item[0] : NULL;
    if (output_name != NULL) {
        chosen = NULL;
        for (size_t i = 0; i < out.count; i++)
            if (strcmp(out.item[i].name, output_name) == 0)
                chosen = &out.item[i];
        if (chosen == NULL) {
            lm_fail(err, LM_ERR_SCHEMA, "function '%s' has no output '%s'", function, output_name);
            outputs_free(&out);
            return CALL_SCHEMA;
        }
    }
    if (chosen == NULL) {
        lm_fail(err, LM_ERR_SCHEMA, "function '%s' produced no output", function);
        outputs_free(&out);
        return CALL_SCHEMA;
    }
    if (index >= 0 && (size_t)index >= chosen->count) {
        lm_fail(err, LM_ERR_SCHEMA, "index %lld is outside output '%s' of %zu numbers", index,
                chosen->name, chosen->count);
        outputs_free(&out);
        return CALL_SCHEMA;
    }
    size_t n = index >= 0 ? 1 : chosen->count;
    *values = malloc((n ? n : 1) * sizeof **values);
    if (*values == NULL) {
        lm_fail(err, LM_ERR_NOMEM, "output copy");
        outputs_free(&out);
        return CALL_REJECTED;
    }
    memcpy(*values, chosen->values + (index >= 0 ? (size_t)index : 0), n * sizeof **values);
    *count = n;
    outputs_free(&out);
    return CALL_OK;
}

/* The expected numbers of an entry: one number, one boolean, or an array of either. */
static lm_status read_expected(const json_t *entry, double **values, bool **is_int,
                               size_t *count, bool *is_bool, lm_error *err)
{
    const json_t *expected;
    TRY(lm_json_at(entry, "expected", &expected, err));
    size_t n = json_is_array(expected) ? json_array_size(expected) : 1;
    *values = malloc((n ? n : 1) * sizeof **values);
    *is_int = malloc((n ? n : 1) * sizeof **is_int);
    if (*values == NULL || *is_int == NULL)
        return lm_fail(err, LM_ERR_NOMEM, "expected values");
    *count = n;
    *is_bool = false;
    for (size_t i = 0; i < n; i++) {
        const json_t *item = json_is_array(expected) ? json_array_get(expected, i) : expected;
        (*is_int)[i] = json_is_integer(item);
        if (json_is_boolean(item)) {
            *is_bool = true;
            (*values)[i] = json_is_true(item) ? 1.0 : 0.0;
        } else if (json_is_number(item)) {
            (*values)[i] = json_number_value(item);
        } else {
            return lm_fail(err, LM_ERR_TYPE, "expected[%zu] must be a number or a boolean", i);
        }
    }
    return LM_OK;
}

static void number_text(char *text, size_t size, double value)
{
    snprintf(text, size, "%.17g", value);
}

/* One check per number of the entry. */
static void compare_values(lm_report *report, const char *section, const char *id,
                           const char *compare, const double *expected, const bool *is_int,
                           size_t count, const double *got, double rtol, double atol)
{
    char name[NAME_SIZE], want[64], have[64];
    for (size_t i = 0; i < count; i++) {
        if (count == 1)
            snprintf(name, sizeof name, "%s", id);
        else
            snprintf(name, sizeof name, "%.150s[%zu]", id, i);
        if (strcmp(compare, "exact") == 0) {
            if (is_int[i] && got[i] == nearbyint(got[i]) && fabs(got[i]) < 9.2e18) {
                lm_check_int(report, section, name, (long long)expected[i], (long long)got[i]);
            } else {
                number_text(want, sizeof want, expected[i]);
                number_text(have, sizeof have, got[i]);
                lm_check_true(report, section, name, false, want, have);
            }
        } else if (strcmp(compare, "bool") == 0) {
            bool ok = (expected[i] != 0.0) == (got[i] != 0.0);
            lm_check_true(report, section, name, ok, expected[i] != 0.0 ? "true" : "false",
                          got[i] != 0.0 ? "true" : "false");
        } else if (strcmp(compare, "below") == 0) {
            lm_check_below(report, section, name, got[i], expected[i]);
        } else if (strcmp(compare, "above") == 0) {
            snprintf(want, sizeof want, "> %.17g", expected[i]);
            number_text(have, sizeof have, got[i]);
            lm_check_true(report, section, name, got[i] > expected[i], want, have);
        } else {
            lm_check_close(report, section, name, expected[i], got[i], rtol, atol);
        }
    }
}

/* err's message prefixed with the entry id (copied first: lm_fail writes err->message). */
static lm_status entry_error(lm_error *err, lm_status status, const char *id)
{
    char saved[LM_ERROR_MESSAGE_SIZE];
    snprintf(saved, sizeof saved, "%s", err->message);
    if (status == LM_OK)
        status = LM_ERR_SCHEMA;
    return lm_fail(err, status, "entry %s: %s", id, saved);
}

static lm_status check_entry(const json_t *entry, size_t position, lm_report *report,
                             lm_error *err)
{
    const char *id, *compare;
    char section[64], prefix[NAME_SIZE];
    if (!json_is_object(entry))
        return lm_fail(err, LM_ERR_TYPE, "entries[%zu] must be an object", position);
    if (lm_json_string(entry, "id", &id, err) != LM_OK) {
        char saved[LM_ERROR_MESSAGE_SIZE];
        snprintf(saved, sizeof saved, "%s", err->message);
        return lm_fail(err, err->status, "entries[%zu]: %s", position, saved);
    }
    snprintf(prefix, sizeof prefix, "%.150s", id);
    const char *dot = strchr(id, '.');
    snprintf(section, sizeof section, "%.*s", dot ? (int)(dot - id) : (int)strlen(id), id);

    double rtol = 0.0, atol = 0.0, scale = 1.0;
    lm_status status = lm_json_string(entry, "compare", &compare, err);
    if (status == LM_OK && strcmp(compare, "exact") != 0 && strcmp(compare, "close") != 0 &&
        strcmp(compare, "bool") != 0 && strcmp(compare, "below") != 0 &&
        strcmp(compare, "above") != 0)
        status = lm_fail(err, LM_ERR_SCHEMA,
                         "compare must be exact, close, bool, below or above, got '%s'", compare);
    if (status == LM_OK)
        status = lm_json_real(entry, "rtol", &rtol, err);
    if (status == LM_OK)
        status = lm_json_real(entry, "atol", &atol, err);
    if (status == LM_OK && (!(rtol >= 0.0) || !(atol >= 0.0)))
        status = lm_fail(err, LM_ERR_SCHEMA, "rtol and atol must be non-negative");
    if (status == LM_OK && json_object_get(entry, "scale") != NULL)
        status = lm_json_real(entry, "scale", &scale, err);
    double *expected = NULL, *got = NULL, *divisor = NULL;
    bool *is_int = NULL, is_bool = false;
    size_t n_expected = 0, n_got = 0, n_divisor = 0;
    if (status == LM_OK)
        status = read_expected(entry, &expected, &is_int, &n_expected, &is_bool, err);
    if (status == LM_OK && is_bool != (strcmp(compare, "bool") == 0))
        status = lm_fail(err, LM_ERR_SCHEMA, "compare \"bool\" goes with boolean expected values");
    if (status != LM_OK) {
        release(status, expected, is_int, NULL, NULL);
        return entry_error(err, status, prefix);
    }

    call_kind kind = call(entry, id, &got, &n_got, err);
    const json_t *minus = json_object_get(entry, "subtract");
    double subtrahend = 0.0;
    if (kind == CALL_OK && minus != NULL) {
        double *sub = NULL;
        size_t n_sub = 0;
        if (!json_is_object(minus)) {
            lm_fail(err, LM_ERR_TYPE, "subtract must be an object");
            kind = CALL_SCHEMA;
        } else {
            kind = call(minus, id, &sub, &n_sub, err);
            if (kind == CALL_OK && n_sub != 1) {
                lm_fail(err, LM_ERR_SCHEMA, "subtract must select one number, got %zu", n_sub);
                kind = CALL_SCHEMA;
            }
            if (kind == CALL_OK)
                subtrahend = sub[0];
        }
        free(sub);
    }
    const json_t *divide = json_object_get(entry, "divide_by");
    if (kind == CALL_OK && divide != NULL) {
        if (!json_is_object(divide)) {
            lm_fail(err, LM_ERR_TYPE, "divide_by must be an object");
            kind = CALL_SCHEMA;
        } else {
            kind = call(divide, id, &divisor, &n_divisor, err);
            if (kind == CALL_OK && n_divisor != 1) {
                lm_fail(err, LM_ERR_SCHEMA, "divide_by must select one number, got %zu",
                        n_divisor);
                kind = CALL_SCHEMA;
            }
        }
    }
    if (kind == CALL_SCHEMA) {
        release(LM_OK, expected, is_int, got, divisor);
        return entry_error(err, err->status, prefix);
    }
    if (kind == CALL_REJECTED) { /* the reference refused: a failed check, not bad input */
        char why[LM_ERROR_MESSAGE_SIZE + 32];
        snprintf(why, sizeof why, "%s: %s", lm_status_name(err->status), err->message);
        lm_check_true(report, section, prefix, false, "a value", why);
        lm_error_clear(err);
        release(LM_OK, expected, is_int, got, divisor);
        return LM_OK;
    }
    for (size_t i = 0; i < n_got; i++) {
        got[i] = (got[i] - subtrahend) * scale;
        if (divisor != NULL)
            got[i] /= divisor[0];
    }
    if (n_got != n_expected) {
        char want[64], have[64];
        snprintf(want, sizeof want, "%zu numbers", n_expected);
        snprintf(have, sizeof have, "%zu numbers", n_got);
        char name[NAME_SIZE];
        snprintf(name, sizeof name, "%.150s shape", prefix);
        lm_check_true(report, section, name, false, want, have);
    } else {
        compare_values(report, section, prefix, compare, expected, is_int, n_got, got, rtol, atol);
    }
    release(LM_OK, expected, is_int, got, divisor);
    return LM_OK;
}

lm_status lm_verify_primer(const lm_contract *contract, lm_report *report, lm_error *caller_err)
{
    lm_error local;
    lm_error *err = caller_err ? caller_err : &local; /* the entry checks read err back */
    lm_error_clear(err);
    const json_t *entries;
    const char *schema;
    TRY(lm_json_string(contract->root, "schema", &schema, err));
    if (strcmp(schema, "longmix-primer/1") != 0)
        return lm_fail(err, LM_ERR_SCHEMA, "schema must be longmix-primer/1, got '%s'", schema);
    TRY(lm_json_at(contract->root, "entries", &entries, err));
    if (!json_is_array(entries))
        return lm_fail(err, LM_ERR_TYPE, "entries must be an array");
    if (json_array_size(entries) == 0)
        return lm_fail(err, LM_ERR_SCHEMA, "entries must be non-empty");
    for (size_t i = 0; i < json_array_size(entries); i++)
        TRY(check_entry(json_array_get(entries, i), i, report, err));
    return LM_OK;
}

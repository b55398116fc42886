/* longmix lesson --csv DIR: the data behind the lesson's eight figures (the lesson, section
 * 7), computed by longmix's own references (kernels/arith, window, sparse, attention,
 * linear, ssm, latent, kvquant), one tidy CSV per figure. scripts/plot.py draws them; no
 * Python re-implements the math. The figure parameters (context lengths, n = 16, w = 4,
 * seed 11, the recall inputs) are the lesson's own, quoted from its figures() code. */
#include "longmix.h"
#include "cli.h"
#include "csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct lesson_out {
    const char *dir;
    lm_error *err;
} lesson_out;

static lm_status write_table(const lesson_out *o, const char *name, const lm_csv *csv)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.csv", o->dir, name);
    return lm_csv_write_atomic(csv, path, o->err);
}

/* Appends a row of up to four cells (a table of fewer columns reads only the first ones). */
static lm_status add_row(lm_csv *csv, lm_error *err, const char *a, const char *b, const char *c,
                         const char *d)
{
    const char *cells[4] = {a, b, c, d};
    return lm_csv_append(csv, cells, err);
}

#define NUM(buf, fmt, v) (snprintf((buf), sizeof(buf), (fmt), (v)), (buf))

/* 1. The two bills at 8k, 128k and 1M tokens. */
static lm_status context_cost(const lesson_out *o)
{
    static const char *const header[] = {"context", "label", "pairs_per_head_per_layer",
                                         "kv_cache_bytes"};
    static const long long contexts[] = {8192, 131072, 1048576};
    static const char *const labels[] = {"8k", "128k", "1M"};
    lm_csv csv;
    lm_status s = lm_csv_init(&csv, header, 4, o->err);
    for (int i = 0; i < 3 && s == LM_OK; i++) {
        long long pairs, bytes;
        char n[32], p[32], b[32];
        s = lm_arith_bill_context_cost(contexts[i], 32, 8, 128, 16, &pairs, &bytes, o->err);
        if (s == LM_OK)
            s = add_row(&csv, o->err, NUM(n, "%lld", contexts[i]), labels[i],
                        NUM(p, "%lld", pairs), NUM(b, "%lld", bytes));
    }
    if (s == LM_OK)
        s = write_table(o, "context_cost", &csv);
    lm_csv_free(&csv);
    return s;
}

static lm_status add_mask(lm_csv *csv, lm_error *err, const char *panel, const uint8_t *mask,
                          size_t n)
{
    lm_status s = LM_OK;
    for (size_t i = 0; i < n && s == LM_OK; i++)
        for (size_t j = 0; j < n && s == LM_OK; j++) {
            char q[32], k[32], v[32];
            s = add_row(csv, err, panel, NUM(q, "%zu", i), NUM(k, "%zu", j),
                        NUM(v, "%d", mask[i * n + j]));
        }
    return s;
}

/* 2. One windowed layer vs what three layers reach; 3. the four masks and their pairs. */
static lm_status masks(const lesson_out *o)
{
    enum { N = 16, W = 4 };
    static const char *const header[] = {"panel", "query", "key", "value"};
    uint8_t mask[N * N];
    lm_csv reach, sparse;
    lm_status s = lm_csv_init(&reach, header, 4, o->err);
    if (s != LM_OK)
        return s;
    s = lm_csv_init(&sparse, header, 4, o->err);
    if (s == LM_OK)
        s = lm_window_mask(N, W, mask, o->err);
    if (s == LM_OK)
        s = add_mask(&reach, o->err, "one layer, window w = 4", mask, N);
    if (s == LM_OK)
        s = lm_window_receptive_field(N, W, 3, mask, o->err);
    if (s == LM_OK)
        s = add_mask(&reach, o->err, "reach after 3 layers", mask, N);
    if (s == LM_OK)
        s = write_table(o, "window_reach", &reach);
    static const size_t globals[] = {0};
    struct {
        const char *name;
        int kind;
    } panels[] = {{"full causal", 0}, {"window w = 4", 1}, {"window + global token 0", 2},
                  {"strided, stride 4", 3}};
    for (size_t p = 0; p < 4 && s == LM_OK; p++) {
        switch (panels[p].kind) {
        case 0: s = lm_attn_causal_mask(N, mask, o->err); break;
        case 1: s = lm_window_mask(N, W, mask, o->err); break;
        case 2: s = lm_sparse_global_local_mask(N, W, globals, 1, mask, o->err); break;
        default: s = lm_sparse_strided_mask(N, W, mask, o->err); break;
        }
        uint64_t pairs = 0;
        if (s == LM_OK)
            s = lm_mask_pairs(mask, N, N, &pairs, o->err);
        char title[96];
        snprintf(title, sizeof title, "%s|%llu pairs", panels[p].name, (unsigned long long)pairs);
        if (s == LM_OK)
            s = add_mask(&sparse, o->err, title, mask, N);
    }
    if (s == LM_OK)
        s = write_table(o, "sparse_masks", &sparse);
    lm_csv_free(&reach);
    lm_csv_free(&sparse);
    return s;
}

/* 4. Softmax vs linear attention weights on the same queries and keys:
 * rng = default_rng(11); Q = 2 * standard_normal((10, 8)); K = standard_normal((10, 8)). */
static lm_status softmax_vs_linear(const lesson_out *o)
{
    enum { N = 10, D = 8 };
    static const char *const header[] = {"panel", "query", "key", "weight"};
    double q[N * D], k[N * D], out[N * D], soft[N * N], lin[N * N];
    uint8_t causal[N * N];
    lm_rng rng;
    lm_rng_seed(&rng, 11);
    lm_rng_fill_standard_normal(&rng, q, N * D);
    lm_rng_fill_standard_normal(&rng, k, N * D);
    for (int i = 0; i < N * D; i++)
        q[i] *= 2.0;
    lm_status s = lm_attn_causal_mask(N, causal, o->err);
    if (s == LM_OK)
        s = lm_attn_sdpa_f64_ref(q, k, k, causal, true, N, N, D, D, out, soft, o->err);
    if (s == LM_OK)
        s = lm_linear_feature_weights_f64_ref(q, k, N, D, lin, o->err);
    lm_csv csv;
    if (s != LM_OK || (s = lm_csv_init(&csv, header, 4, o->err)) != LM_OK)
        return s;
    for (int p = 0; p < 2 && s == LM_OK; p++)
        for (int i = 0; i < N && s == LM_OK; i++)
            for (int j = 0; j < N && s == LM_OK; j++) {
                char a[32], b[32], w[32];
                s = add_row(&csv, o->err, p ? "linear attention, phi = elu + 1" : "softmax attention",
                            NUM(a, "%d", i), NUM(b, "%d", j),
                            NUM(w, "%.17g", (p ? lin : soft)[i * N + j]));
            }
    if (s == LM_OK)
        s = write_table(o, "linear_vs_softmax", &csv);
    lm_csv_free(&csv);
    return s;
}

/* 5. The SSM kernel C A^k B for A = 0.5, 0.9, 0.99 over 151 steps. */
static lm_status ssm_kernel(const lesson_out *o)
{
    enum { STEPS = 151 };
    static const char *const header[] = {"A", "k", "kernel"};
    static const double as[] = {0.5, 0.9, 0.99};
    double kernel[STEPS], one = 1.0;
    lm_csv csv;
    lm_status s = lm_csv_init(&csv, header, 3, o->err);
    for (int a = 0; a < 3 && s == LM_OK; a++) {
        s = lm_ssm_lesson_kernel_f64_ref(&as[a], &one, &one, 1, STEPS, kernel, o->err);
        for (int k = 0; k < STEPS && s == LM_OK; k++) {
            char x[32], y[32], z[32];
            s = add_row(&csv, o->err, NUM(x, "%g", as[a]), NUM(y, "%d", k),
                        NUM(z, "%.17g", kernel[k]), NULL);
        }
    }
    if (s == LM_OK)
        s = write_table(o, "ssm_kernel", &csv);
    lm_csv_free(&csv);
    return s;
}

/* 6. Selective recall: the marked 7 through noise (RECALL_VALUES / RECALL_MARKERS of the
 * lesson), selective steps vs the best fixed step on geomspace(1e-3, 10, 60) vs 5. */
static lm_status selective_recall(const lesson_out *o)
{
    enum { T = 12, GRID = 60 };
    static const double values[T] = {0.3, -0.5, 7.0, 0.8, -0.2, 0.6, -0.9, 0.4, 0.1, -0.3, 0.5, -0.6};
    static const double markers[T] = {0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    static const char *const header[] = {"position", "series", "value", "delta"};
    double delta[T], grid[GRID], fixed[T], y[3][T], best_delta = 0.0, best_value;
    size_t best_index;
    lm_status s = lm_ssm_step_sizes_f64_ref(markers, T, 10.0, -5.0, delta, o->err);
    if (s == LM_OK)
        s = lm_ssm_lesson_selective_f64_ref(values, delta, T, -1.0, 1.0, 1.0, y[0], o->err);
    if (s == LM_OK)
        s = lm_ssm_geomspace(1e-3, 10.0, GRID, grid, o->err);
    if (s == LM_OK)
        s = lm_ssm_best_time_invariant_recall(values, T, grid, GRID, -1.0, 1.0, 1.0, &best_index,
                                              &best_delta, &best_value, o->err);
    for (int t = 0; t < T; t++)
        fixed[t] = best_delta;
    if (s == LM_OK)
        s = lm_ssm_lesson_selective_f64_ref(values, fixed, T, -1.0, 1.0, 1.0, y[1], o->err);
    for (int t = 0; t < T; t++)
        fixed[t] = 5.0;
    if (s == LM_OK)
        s = lm_ssm_lesson_selective_f64_ref(values, fixed, T, -1.0, 1.0, 1.0, y[2], o->err);
    lm_csv csv;
    if (s != LM_OK || (s = lm_csv_init(&csv, header, 4, o->err)) != LM_OK)
        return s;
    static const char *const series[] = {"selective", "best fixed", "large fixed"};
    for (int t = 0; t < T && s == LM_OK; t++) {
        char p[32], v[32], d[32];
        s = add_row(&csv, o->err, NUM(p, "%d", t), "input", NUM(v, "%.17g", values[t]), "");
        for (int k = 0; k < 3 && s == LM_OK; k++)
            s = add_row(&csv, o->err, p, series[k], NUM(v, "%.17g", y[k][t]),
                        NUM(d, "%.17g", k == 0 ? delta[t] : k == 1 ? best_delta : 5.0));
    }
    if (s == LM_OK)
        s = write_table(o, "selective_recall", &csv);
    lm_csv_free(&csv);
    return s;
}

/* 7. Cache per token by design, all 32 layers. */
static lm_status kv_per_token(const lesson_out *o)
{
    static const char *const header[] = {"design", "bytes_per_token"};
    long long mha, gqa, latent, mqa;
    double q4;
    lm_status s = lm_arith_bill_kv_bytes_per_token(32, 32, 128, 16, &mha, o->err);
    if (s == LM_OK)
        s = lm_arith_bill_kv_bytes_per_token(32, 8, 128, 16, &gqa, o->err);
    if (s == LM_OK)
        s = lm_latent_kv_bytes_per_token(32, 512, 64, 16, &latent, o->err);
    if (s == LM_OK)
        s = lm_kvquant_bytes_per_token(32, 8, 128, 4, 16, &q4, o->err);
    if (s == LM_OK)
        s = lm_arith_bill_kv_bytes_per_token(32, 1, 128, 16, &mqa, o->err);
    lm_csv csv;
    if (s != LM_OK || (s = lm_csv_init(&csv, header, 2, o->err)) != LM_OK)
        return s;
    char b[5][32];
    add_row(&csv, o->err, "multi-head, 32 KV heads", NUM(b[0], "%lld", mha), NULL, NULL);
    add_row(&csv, o->err, "grouped-query, 8 KV heads", NUM(b[1], "%lld", gqa), NULL, NULL);
    add_row(&csv, o->err, "latent, 512 + 64 numbers", NUM(b[2], "%lld", latent), NULL, NULL);
    add_row(&csv, o->err, "grouped-query 8, 4-bit", NUM(b[3], "%.17g", q4), NULL, NULL);
    s = add_row(&csv, o->err, "multi-query, 1 KV head", NUM(b[4], "%lld", mqa), NULL, NULL);
    if (s == LM_OK)
        s = write_table(o, "kv_per_token", &csv);
    lm_csv_free(&csv);
    return s;
}

/* 8. Memory vs context for every design: n = geomspace(1000, 1048576, 80) as integers. */
static lm_status memory_vs_context(const lesson_out *o)
{
    enum { POINTS = 80 };
    static const char *const header[] = {"context", "method", "bytes", "key"};
    double ns[POINTS], bytes[LM_CACHE_METHOD_COUNT];
    lm_status s = lm_ssm_geomspace(1000.0, 1048576.0, POINTS, ns, o->err);
    lm_csv csv;
    if (s != LM_OK || (s = lm_csv_init(&csv, header, 4, o->err)) != LM_OK)
        return s;
    for (int i = 0; i < POINTS && s == LM_OK; i++) {
        long long n = (long long)ns[i]; /* astype(int): truncation */
        s = lm_arith_cache_bytes_by_method(n, bytes, o->err);
        for (int m = 0; m < LM_CACHE_METHOD_COUNT && s == LM_OK; m++) {
            char c[32], b[32];
            s = add_row(&csv, o->err, NUM(c, "%lld", n), lm_arith_cache_method_label((lm_cache_method)m),
                        NUM(b, "%.17g", bytes[m]), lm_arith_cache_method_key((lm_cache_method)m));
        }
    }
    if (s == LM_OK)
        s = write_table(o, "memory_vs_context", &csv);
    lm_csv_free(&csv);
    return s;
}

/* Beside the figures: attention's output error with K/V quantized at 2..8 bits, the
 * lesson's symmetric per-row scheme and KIVI (n = d = 64, seed 0 as the lesson's default). */
static lm_status kv_quant_error(const lesson_out *o)
{
    static const char *const header[] = {"bits", "scheme", "relative_error"};
    lm_csv csv;
    lm_status s = lm_csv_init(&csv, header, 3, o->err);
    for (int bits = 2; bits <= 8 && s == LM_OK; bits++) {
        double e_row, e_kivi;
        char b[32], x[32], y[32];
        s = lm_kvquant_cache_error(bits, 64, 64, 0, &e_row, o->err);
        if (s == LM_OK)
            s = lm_kvquant_kivi_cache_error(bits, 64, 64, 0, &e_kivi, o->err);
        if (s == LM_OK)
            s = add_row(&csv, o->err, NUM(b, "%d", bits), "per-row symmetric",
                        NUM(x, "%.17g", e_row), NULL);
        if (s == LM_OK)
            s = add_row(&csv, o->err, b, "KIVI (keys per channel, values per token)",
                        NUM(y, "%.17g", e_kivi), NULL);
    }
    if (s == LM_OK)
        s = write_table(o, "kv_quant_error", &csv);
    lm_csv_free(&csv);
    return s;
}

static void lesson_usage(FILE *out)
{
    fprintf(out, "usage: longmix lesson --csv DIR\n\n"
                 "Writes the data of the lesson's eight figures, computed by longmix's references,\n"
                 "as DIR/{context_cost,window_reach,sparse_masks,linear_vs_softmax,ssm_kernel,\n"
                 "selective_recall,kv_per_token,memory_vs_context}.csv (scripts/plot.py draws them),\n"
                 "and DIR/kv_quant_error.csv (attention error with K/V at 2..8 bits).\n");
}

int lm_cmd_lesson(int argc, char **argv)
{
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            lesson_usage(stdout);
            return LM_EXIT_OK;
        } else if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc) {
            dir = argv[++i];
        } else {
            fprintf(stderr, "longmix lesson: unknown option '%s'\n", argv[i]);
            lesson_usage(stderr);
            return LM_EXIT_USAGE;
        }
    }
    if (dir == NULL) {
        lesson_usage(stderr);
        return LM_EXIT_USAGE;
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "longmix lesson: cannot create %s\n", dir);
        return LM_EXIT_USAGE;
    }
    lm_error err;
    lesson_out o = {dir, &err};
    lm_status (*const figures[])(const lesson_out *) = {
        context_cost, masks, softmax_vs_linear, ssm_kernel, selective_recall, kv_per_token,
        memory_vs_context, kv_quant_error};
    for (size_t f = 0; f < sizeof figures / sizeof figures[0]; f++)
        if (figures[f](&o) != LM_OK) {
            fprintf(stderr, "longmix lesson: %s\n", err.message);
            return err.status == LM_ERR_IO ? LM_EXIT_USAGE : LM_EXIT_CHECK_FAILED;
        }
    fprintf(stderr, "longmix lesson: eight figures' data -> %s/*.csv\n", dir);
    return LM_EXIT_OK;
}

/* longmix roofline: peak FMA per ISA and thread count, STREAM triad bandwidth, to CSV.
 * The library half (lm_roofline_*) never prints; lm_cmd_roofline is the CLI. */
#include "roofline.h"

#include "../kernels/core/peak.h"
#include "busy_watch.h"
#include "cli.h"
#include "csv.h"
#include "omp_wait.h"
#include "opts.h"
#include "stats.h"
#include "topo.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs the peak loop on `threads` threads; returns seconds and total flops. */
static double run_peak(lm_peak_fn fn, int threads, uint64_t iterations, double *flops)
{
    uint64_t total = 0;
    float sink = 0.0f;
    double start = lm_now();
#pragma omp parallel num_threads(threads) reduction(+ : total, sink)
    {
        float mine = 0.0f;
        total += fn(iterations, &mine);
        sink += mine;
    }
    double elapsed = lm_now() - start;
    *flops = (double)total + (sink == 12345.678f ? 1.0 : 0.0); /* keeps sink live */
    return elapsed;
}

/* Extra repetitions, up to this many seconds, while a team runs below 90 % of its thread
 * count times the one-thread rate (two team members on one core for a while). */
#define PEAK_RETRY_SECONDS 1.0

/* The best rate of `fn` (operations per second, in units of 10^9) on `threads` threads. */
static void peak_rate(lm_peak_fn fn, int threads, int reps, double seconds, double *rate)
{
    double flops, single = 0.0;
    uint64_t iterations = 1000;
    /* Calibrate on one thread (a descheduled team member on a busy machine would stop the
     * growth early): grow until one repetition takes about `seconds`. */
    for (;;) {
        double t = run_peak(fn, 1, iterations, &flops);
        single = t > 0.0 ? flops / t : 0.0;
        if (t >= seconds * 0.5 || iterations > (UINT64_C(1) << 40))
            break;
        iterations *= t > 0.0 ? (uint64_t)fmax(2.0, fmin(64.0, seconds / t)) : 64;
    }
    double best = 0.0;
    run_peak(fn, threads, iterations, &flops); /* warm-up of the whole team, excluded */
    for (int r = 0; r < reps; r++) {
        double t = run_peak(fn, threads, iterations, &flops);
        if (t > 0.0 && flops / t > best)
            best = flops / t;
    }
    /* A peak is the best the team reaches: on a VM a fresh team member can share the
     * master's core for a few repetitions before the scheduler moves it. */
    const double start = lm_now();
    while (threads > 1 && best < 0.9 * threads * single &&
           lm_now() - start < PEAK_RETRY_SECONDS) {
        double t = run_peak(fn, threads, iterations, &flops);
        if (t > 0.0 && flops / t > best)
            best = flops / t;
    }
    *rate = best * 1e-9;
}

lm_status lm_roofline_peak(lm_isa isa, int threads, int reps, double seconds, double *gflops,
                           lm_error *err)
{
    if (threads < 1 || reps < 1)
        return lm_fail(err, LM_ERR_ARG, "threads and reps must be >= 1");
    lm_peak_fn fn = lm_peak_for(isa);
    if (fn == NULL || !lm_isa_available(isa))
        return lm_fail(err, LM_ERR_UNSUPPORTED, "ISA path %s is not available here",
                       lm_isa_name(isa));
    peak_rate(fn, threads, reps, seconds, gflops);
    return LM_OK;
}

lm_status lm_roofline_peak_dot_i8(int threads, int reps, double seconds, double *gops,
                                  lm_error *err)
{
    if (threads < 1 || reps < 1)
        return lm_fail(err, LM_ERR_ARG, "threads and reps must be >= 1");
    lm_peak_fn fn = lm_peak_dot_i8();
    if (fn == NULL)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "no int8 dot-product instructions (AVX512-VNNI) "
                       "here");
    peak_rate(fn, threads, reps, seconds, gops);
    return LM_OK;
}

lm_status lm_roofline_peak_dot_bf16(int threads, int reps, double seconds, double *gflops,
                                    lm_error *err)
{
    if (threads < 1 || reps < 1)
        return lm_fail(err, LM_ERR_ARG, "threads and reps must be >= 1");
    lm_peak_fn fn = lm_peak_dot_bf16();
    if (fn == NULL)
        return lm_fail(err, LM_ERR_UNSUPPORTED, "no bf16 dot-product instructions (AVX512-BF16) "
                       "here");
    peak_rate(fn, threads, reps, seconds, gflops);
    return LM_OK;
}

lm_status lm_roofline_triad(int threads, size_t array_bytes, int reps, double *gbps,
                            lm_error *err)
{
    if (threads < 1 || reps < 1)
        return lm_fail(err, LM_ERR_ARG, "threads and reps must be >= 1");
    size_t n = array_bytes / sizeof(double);
    if (n < 1024)
        return lm_fail(err, LM_ERR_ARG, "--size must be at least 8 KiB per array");
    double *a = lm_alloc(n * sizeof *a), *b = lm_alloc(n * sizeof *b), *c = lm_alloc(n * sizeof *c);
    if (a == NULL || b == NULL || c == NULL) {
        lm_free(a), lm_free(b), lm_free(c);
        return lm_fail(err, LM_ERR_NOMEM, "cannot allocate 3 x %zu bytes for STREAM triad",
                       array_bytes);
    }
    const double scalar = 3.0;
    long count = (long)n;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (long i = 0; i < count; i++) { /* first touch by the thread that will stream it */
        a[i] = 0.0;
        b[i] = 2.0;
        c[i] = 1.0;
    }
    double best = 0.0;
    for (int r = 0; r <= reps; r++) {
        double start = lm_now();
#pragma omp parallel for schedule(static) num_threads(threads)
        for (long i = 0; i < count; i++)
            a[i] = b[i] + scalar * c[i];
        double t = lm_now() - start;
        double rate = 3.0 * (double)n * sizeof(double) / t;
        if (r > 0 && t > 0.0 && rate > best) /* the first repetition is excluded */
            best = rate;
    }
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += a[i] != 5.0; /* 2 + 3 * 1, exact in binary floating point */
    lm_free(a), lm_free(b), lm_free(c);
    if (bad != 0)
        return lm_fail(err, LM_ERR_NUMERIC, "STREAM triad validation failed: %zu of %zu wrong",
                       bad, n);
    *gbps = best * 1e-9;
    return LM_OK;
}

size_t lm_roofline_default_array_bytes(void)
{
    lm_topology topo;
    size_t bytes = 32u << 20;
    if (lm_topology_read(&topo, NULL) != LM_OK)
        return bytes;
    if (4 * topo.llc_bytes_total > bytes)
        bytes = (size_t)(4 * topo.llc_bytes_total);
    /* Virtual machines can report an LLC larger than is real (this project's CI VM says
     * 2 x 508 MiB): never ask for more than 1/32 of memory per array (3/32 in all). */
    if (topo.total_memory_bytes > 0 && bytes > topo.total_memory_bytes / 32)
        bytes = (size_t)(topo.total_memory_bytes / 32);
    return bytes < (32u << 20) ? (32u << 20) : bytes;
}

lm_status lm_roofline_quick(lm_isa isa, int threads, lm_roofline_limits *out, lm_error *err)
{
    out->isa = isa;
    out->threads = threads;
    out->peak_bf16_gflops = 0.0;
    lm_status s = lm_roofline_peak(isa, threads, 3, 0.01, &out->peak_gflops, err);
    if (s == LM_OK && isa == LM_ISA_AVX512BF16)
        s = lm_roofline_peak_dot_bf16(threads, 3, 0.01, &out->peak_bf16_gflops, err);
    if (s != LM_OK)
        return s;
    size_t bytes = lm_roofline_default_array_bytes();
    if (bytes > (128u << 20)) /* quick: 128 MiB arrays are past any real LLC we know */
        bytes = 128u << 20;
    return lm_roofline_triad(threads, bytes, 3, &out->triad_gbps, err);
}

double lm_roofline_attainable(const lm_roofline_limits *limits, double flops, double bytes)
{
    if (bytes <= 0.0)
        return limits->peak_gflops;
    double memory = flops / bytes * limits->triad_gbps;
    return memory < limits->peak_gflops ? memory : limits->peak_gflops;
}

double lm_roofline_attainable_dtype(const lm_roofline_limits *limits, const char *dtype,
                                    double flops, double bytes)
{
    lm_roofline_limits roof = *limits;
    if (limits->peak_bf16_gflops > 0.0 && dtype != NULL && strcmp(dtype, "bf16") == 0)
        roof.peak_gflops = limits->peak_bf16_gflops;
    return lm_roofline_attainable(&roof, flops, bytes);
}

/* ---- CLI ------------------------------------------------------------------------- */

static void roofline_usage(FILE *out)
{
    fprintf(out,
            "usage: longmix roofline [--threads LIST] [--isa LIST] [--size BYTES] [--reps N]\n"
            "                        [--out results/roofline.csv]\n\n"
            "Peak float32 FMA rate per ISA path (independent FMA chains in registers) and\n"
            "STREAM-triad bandwidth (three float64 arrays of --size bytes each, default 4 x\n"
            "the last-level cache; best of --reps repetitions, the first excluded; validated),\n"
            "for each thread count (a team below 90 %% of threads x the 1-thread peak gets extra\n"
            "repetitions for up to 1 s: a fresh thread can share a core for a while); with an\n"
            "avx512 path on a CPU with AVX512-VNNI also the int8 dot-product rate (VPDPBUSD\n"
            "chains, GOP/s: 2 per u8 x s8 multiply-add), the compute roof of the quantized KV\n"
            "decode, and with AVX512-BF16 the bf16 dot-product rate (VDPBF16PS chains, GFLOP/s:\n"
            "2 per bf16 product), the roof of the bf16 prefill and chunked kernels. Rows go to\n"
            "the results CSV (kernel peak_fma / peak_dot_i8 / peak_dot_bf16 / stream_triad).\n"
            "  --threads LIST  e.g. 1,2 or 1..8 (default: 1..cores)\n"
            "  --isa LIST      scalar, avx2, avx512, avx512vnni, avx512bf16, neon, all, active\n"
            "                  (default: all)\n"
            "  --size BYTES    per array; k/M suffixes (e.g. 256M)\n"
            "  --reps N        timed repetitions (default 5)\n");
}

static int usage_error(const char *message)
{
    fprintf(stderr, "longmix roofline: %s\n", message);
    return LM_EXIT_USAGE;
}

/* The dot-product peaks reported beside the FMA peak of the avx512 paths: int8
 * (AVX512-VNNI) and bf16 (AVX512-BF16). */
typedef struct dot_peak {
    const char *kernel, *dtype, *label, *note;
    lm_isa isa; /* the path whose kernels use the instruction */
    int bits;
    lm_status (*measure)(int threads, int reps, double seconds, double *rate, lm_error *err);
    lm_peak_fn (*available)(void);
} dot_peak;

static const dot_peak dot_peaks[] = {
    {"peak_dot_i8", "int8", "int8 dot (VNNI), GOP/s",
     "register-only VPDPBUSD chains (AVX512-VNNI), 2 ops per byte product, best of reps",
     LM_ISA_AVX512, 8,
     lm_roofline_peak_dot_i8, lm_peak_dot_i8},
    {"peak_dot_bf16", "bf16", "bf16 dot (VDPBF16PS), GFLOP/s",
     "register-only VDPBF16PS chains (AVX512-BF16), 2 flops per bf16 product, best of reps",
     LM_ISA_AVX512BF16, 16, lm_roofline_peak_dot_bf16, lm_peak_dot_bf16},
};

/* True for avx512 and the paths derived from it. */
static bool on_avx512(lm_isa isa)
{
    while (isa != LM_ISA_AVX512 && lm_isa_parent(isa) != isa)
        isa = lm_isa_parent(isa);
    return isa == LM_ISA_AVX512;
}

/* The row of one dot-product peak at one thread count (printed as a table row too); 0, or
 * 1 when the measurement failed (reported). */
static int append_dot(lm_csv *csv, const lm_machine_meta *meta, lm_busy_watch *watch,
                      const dot_peak *dot, int threads, int reps, double gbps)
{
    lm_error err;
    double rate = 0.0;
    lm_result_row p = {.kernel = dot->kernel, .isa = lm_isa_name(dot->isa),
                       .dtype = dot->dtype, .threads = threads, .reps = reps, .bits = dot->bits,
                       .batch = 1, .err_max = -1.0};
    double start = lm_now();
    lm_status s = dot->measure(threads, reps, 0.02, &rate, &err);
    p.gflops = rate;
    p.status = s == LM_OK ? "ok" : "failed";
    p.note = s == LM_OK ? dot->note : err.message;
    p.flops = rate * 1e9 * 0.02;
    p.time.median = p.time.min = p.time.p25 = p.time.p75 = 0.02;
    p.roofline_frac = 1.0;
    lm_busy_watch_row(watch, start, &p);
    lm_result_append(csv, meta, &p, NULL);
    if (s != LM_OK) {
        fprintf(stderr, "longmix roofline: %s\n", err.message);
        return 1;
    }
    printf("| %d | %s %s | %.1f | %.2f | %.2f |\n", threads, lm_isa_name(dot->isa),
           dot->label, rate, gbps, gbps > 0 ? rate / gbps : 0.0);
    return 0;
}

int lm_cmd_roofline(int argc, char **argv)
{
    const char *threads_text = NULL, *isa_text = "all", *size_text = NULL;
    const char *out_path = "results/roofline.csv";
    int reps = 5;
    lm_omp_wait_settle(argc, argv);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            roofline_usage(stdout);
            return LM_EXIT_OK;
        } else if (strcmp(a, "--threads") == 0 && has) {
            threads_text = argv[++i];
        } else if (strcmp(a, "--isa") == 0 && has) {
            isa_text = argv[++i];
        } else if (strcmp(a, "--size") == 0 && has) {
            size_text = argv[++i];
        } else if (strcmp(a, "--reps") == 0 && has) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end != '\0' || v < 1 || v > 1000)
                return usage_error("--reps must be an integer in 1..1000");
            reps = (int)v;
        } else if (strcmp(a, "--out") == 0 && has) {
            out_path = argv[++i];
        } else {
            fprintf(stderr, "longmix roofline: unknown option '%s'\n", a);
            roofline_usage(stderr);
            return LM_EXIT_USAGE;
        }
    }
    lm_error err;
    lm_machine_meta meta;
    lm_machine_meta_fill(&meta);
    long threads[LM_LIST_MAX];
    size_t thread_count = 0;
    if (threads_text == NULL) {
        int cores = meta.cores > 0 ? meta.cores : 1;
        for (int t = 1; t <= cores && thread_count < LM_LIST_MAX; t++)
            threads[thread_count++] = t;
    } else if (lm_parse_thread_list("--threads", threads_text, meta.cores, threads,
                                    &thread_count, &err) != LM_OK) {
        return usage_error(err.message);
    }
    lm_isa isas[LM_LIST_MAX];
    size_t isa_count;
    if (lm_parse_isa_list("--isa", isa_text, isas, &isa_count, &err) != LM_OK)
        return usage_error(err.message);
    bool dots = false; /* the dot-product rows go with the avx512 paths */
    for (size_t k = 0; k < isa_count; k++)
        dots |= lm_isa_available(isas[k]) && on_avx512(isas[k]);
    size_t array_bytes = lm_roofline_default_array_bytes();
    if (size_text != NULL) {
        long v[LM_LIST_MAX];
        size_t n;
        if (lm_parse_size_list("--size", size_text, 8192, v, &n, &err) != LM_OK || n != 1)
            return usage_error(n != 1 ? "--size takes one value" : err.message);
        array_bytes = (size_t)v[0];
    }
    lm_csv csv;
    if (lm_csv_init_results(&csv, &err) != LM_OK)
        return usage_error(err.message);
    if (lm_csv_write_atomic(&csv, out_path, &err) != LM_OK) {
        lm_csv_free(&csv);
        return usage_error(err.message);
    }
    int failed = 0;
    lm_busy_watch watch;
    lm_busy_watch_start(&watch, "roofline");
    printf("| threads | isa | peak GFLOP/s | triad GB/s | ridge FLOP/byte |\n"
           "|--:|---|--:|--:|--:|\n");
    for (size_t t = 0; t < thread_count; t++) {
        double gbps = 0.0;
        lm_result_row row = {.kernel = "stream_triad", .isa = "any", .dtype = "f64",
                             .threads = (int)threads[t], .reps = reps, .bits = 64, .batch = 1,
                             .err_max = -1.0}; /* n_ctx 0: a triad has no context */
        double start = lm_now();
        lm_status s = lm_roofline_triad((int)threads[t], array_bytes, reps, &gbps, &err);
        double wall = lm_now() - start;
        row.bytes = 3.0 * (double)array_bytes;
        row.gbps = gbps;
        row.time.median = row.time.min = row.time.p25 = row.time.p75 =
            gbps > 0 ? row.bytes / (gbps * 1e9) : wall;
        row.status = s == LM_OK ? "ok" : "failed";
        char note[160];
        snprintf(note, sizeof note,
                 "three float64 arrays of %zu elements (%zu bytes each); best of reps, first "
                 "excluded; validated", array_bytes / 8, array_bytes);
        row.note = s == LM_OK ? note : err.message;
        row.checksum = 5.0 * (double)(array_bytes / 8);
        if (s != LM_OK) {
            fprintf(stderr, "longmix roofline: %s\n", err.message);
            failed = 1;
        }
        lm_busy_watch_row(&watch, start, &row);
        lm_result_append(&csv, &meta, &row, NULL);
        for (size_t k = 0; k < isa_count; k++) {
            double gflops = 0.0;
            lm_result_row p = {.kernel = "peak_fma", .isa = lm_isa_name(isas[k]), .dtype = "f32",
                               .threads = (int)threads[t], .reps = reps, .bits = 32, .batch = 1,
                               .err_max = -1.0};
            start = lm_now();
            s = lm_roofline_peak(isas[k], (int)threads[t], reps, 0.02, &gflops, &err);
            p.gflops = gflops;
            p.status = s == LM_OK ? "ok" : "failed";
            p.note = s == LM_OK ? "register-only FMA chains, best of reps" : err.message;
            p.flops = gflops * 1e9 * 0.02;
            p.time.median = p.time.min = p.time.p25 = p.time.p75 = 0.02;
            p.roofline_frac = 1.0;
            if (s != LM_OK) {
                fprintf(stderr, "longmix roofline: %s\n", err.message);
                failed = 1;
            }
            lm_busy_watch_row(&watch, start, &p);
            lm_result_append(&csv, &meta, &p, NULL);
            printf("| %ld | %s | %.1f | %.2f | %.2f |\n", threads[t], lm_isa_name(isas[k]),
                   gflops, gbps, gbps > 0 ? gflops / gbps : 0.0);
        }
        for (size_t k = 0; dots && k < sizeof dot_peaks / sizeof dot_peaks[0]; k++)
            if (dot_peaks[k].available() != NULL &&
                append_dot(&csv, &meta, &watch, &dot_peaks[k], (int)threads[t], reps, gbps) != 0)
                failed = 1;
        if (lm_csv_write_atomic(&csv, out_path, &err) != LM_OK) {
            fprintf(stderr, "longmix roofline: %s\n", err.message);
            lm_csv_free(&csv);
            return LM_EXIT_USAGE;
        }
    }
    lm_csv_free(&csv);
    lm_busy_watch_finish(&watch, out_path);
    fprintf(stderr, "longmix roofline: wrote %s\n", out_path);
    return failed ? LM_EXIT_CHECK_FAILED : LM_EXIT_OK;
}

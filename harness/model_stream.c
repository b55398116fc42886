/* longmix model --stream-curve: the read-only stream by working set, to find where this
 * machine's rate falls to DRAM's. The model's units are copied past twice the last-level
 * cache the OS reports (model_run.h); a virtual machine may report a larger cache than it
 * has, so the curve says where the rate really levels off and how far past it the copies
 * are. */
#include "model_stream.h"

#include "cli.h"
#include "model_run.h"
#include "opts.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>

lm_status lm_stream_curve_measure(const lm_stream *s, int reps, lm_stream_curve *out,
                                  lm_error *err)
{
    if (s == NULL || out == NULL || s->xs == NULL || reps < 1)
        return lm_fail(err, LM_ERR_ARG, "stream curve: a created stream and reps >= 1");
    const size_t all = lm_stream_blocks(s, lm_stream_bytes(s));
    const double block = lm_stream_bytes(s) / (double)all;
    size_t blocks[LM_STREAM_CURVE_MAX];
    out->points = 0;
    for (size_t n = 1;; n *= 2) { /* 1, 2, 4 ... blocks, then the whole array */
        blocks[out->points] = n < all ? n : all;
        out->bytes[out->points] = block * (double)blocks[out->points];
        out->gbps[out->points++] = 0.0;
        if (n >= all || out->points == LM_STREAM_CURVE_MAX)
            break;
    }
    /* rounds over every working set, each the best of its rounds: a drift of the machine's
     * bandwidth between minutes (2x on a shared VM) then moves every size alike */
    for (int r = 0; r < reps; r++)
        for (size_t i = 0; i < out->points; i++)
            out->gbps[i] = fmax(out->gbps[i], lm_stream_measure_prefix(s, blocks[i], 1));
    /* DRAM's rate: the median of the three largest working sets; its level starts at the
     * first point from which no rate is more than the slack above it */
    const size_t p = out->points;
    const double x = out->gbps[p - 1], y = out->gbps[p > 1 ? p - 2 : p - 1],
                 z = out->gbps[p > 2 ? p - 3 : p - 1];
    out->dram_gbps = fmax(fmin(x, y), fmin(fmax(x, y), z));
    out->dram_from = p;
    while (out->dram_from > 0 &&
           out->gbps[out->dram_from - 1] <= (1.0 + LM_STREAM_DRAM_SLACK) * out->dram_gbps)
        out->dram_from--;
    if (out->dram_from == p) /* the largest itself above: the noise of the minute */
        out->dram_from = p - 1;
    return LM_OK;
}

static void print_size(double bytes)
{
    if (bytes >= 1073741824.0 && fmod(bytes, 1073741824.0) == 0.0)
        printf("%.0f GiB", bytes / 1073741824.0);
    else
        printf("%.0f MiB", bytes / 1048576.0);
}

int lm_model_stream_curve_cli(const lm_ops *ops, const char *threads, int reps, int cores,
                              uint64_t llc)
{
    long counts[LM_LIST_MAX];
    size_t nt;
    lm_error e;
    if (lm_parse_thread_list("--threads", threads, cores, counts, &nt, &e) != LM_OK) {
        fprintf(stderr, "longmix model: %s\n(longmix model --help for usage)\n", e.message);
        return LM_EXIT_USAGE;
    }
    static lm_stream_curve curves[LM_LIST_MAX];
    lm_stream s;
    if (lm_stream_create(&s, ops, llc, &e) != LM_OK) {
        fprintf(stderr, "longmix model: --stream-curve: %s\n", e.message);
        return LM_EXIT_USAGE;
    }
    for (size_t t = 0; t < nt; t++) {
        fprintf(stderr, "longmix model: --stream-curve: threads %ld, 1 MiB .. %.0f MiB\n",
                counts[t], lm_stream_bytes(&s) / 1048576.0);
        omp_set_num_threads((int)counts[t]);
        if (lm_stream_curve_measure(&s, reps, &curves[t], &e) != LM_OK) {
            lm_stream_free(&s);
            fprintf(stderr, "longmix model: --stream-curve: %s\n", e.message);
            return LM_EXIT_USAGE;
        }
    }
    lm_stream_free(&s);
    printf("The read-only stream by working set: gemv_rowdot_f32 (y = X w, X read once) on "
           "%s, the best of %d interleaved rounds, GB/s.\n\n| working set |", lm_isa_name(ops->isa), reps);
    for (size_t t = 0; t < nt; t++)
        printf(" %ld thread%s |", counts[t], counts[t] == 1 ? "" : "s");
    printf("\n|---:|");
    for (size_t t = 0; t < nt; t++)
        printf("---:|");
    for (size_t i = 0; i < curves[0].points; i++) {
        printf("\n| ");
        print_size(curves[0].bytes[i]);
        printf(" |");
        for (size_t t = 0; t < nt; t++)
            printf(" %.1f%s |", curves[t].gbps[i], i == curves[t].dram_from ? " (DRAM)" : "");
    }
    printf("\n\nDRAM's level (this working set and every larger one within %.0f %% of DRAM's "
           "rate, the median of the three largest) from:", 100.0 * LM_STREAM_DRAM_SLACK);
    double widest = 0.0;
    for (size_t t = 0; t < nt; t++) {
        const lm_stream_curve *c = &curves[t];
        printf("%s ", t == 0 ? "" : ";");
        print_size(c->bytes[c->dram_from]);
        printf(" on %ld thread%s (DRAM's rate %.1f GB/s)", counts[t], counts[t] == 1 ? "" : "s",
               c->dram_gbps);
        widest = fmax(widest, c->bytes[c->dram_from]);
    }
    const double copies = 2.0 * (double)llc;
    printf(".\nThe last-level cache reported is %.0f MiB; `longmix model` copies each unit past "
           "twice that (%.0f MiB), %s DRAM's level.\n", (double)llc / 1048576.0,
           copies / 1048576.0, copies >= widest ? "past" : "short of");
    return LM_EXIT_OK;
}

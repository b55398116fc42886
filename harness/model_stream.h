/* The read-only stream by working set (longmix model --stream-curve): where the rate falls
 * from the caches' to DRAM's, against the copies the model's units are measured over. */
#ifndef LONGMIX_MODEL_STREAM_H
#define LONGMIX_MODEL_STREAM_H

#include "model_run.h"

#define LM_STREAM_CURVE_MAX 48
/* a working set is at DRAM's level when neither it nor any larger one streams more than
 * this fraction above DRAM's rate (the median of the three largest working sets) */
#define LM_STREAM_DRAM_SLACK 0.15

typedef struct lm_stream_curve {
    size_t points;
    double bytes[LM_STREAM_CURVE_MAX]; /* working sets: 1, 2, 4 ... MiB, then the array */
    double gbps[LM_STREAM_CURVE_MAX];  /* best of reps rounds over every size, on the
                                        * calling team */
    double dram_gbps;                  /* DRAM's rate: the median of the three largest */
    size_t dram_from;                  /* the first point at DRAM's level */
} lm_stream_curve;

/* The stream over prefixes of s's array, doubling from one block (1 MiB) to the whole
 * array, in `reps` interleaved rounds. LM_ERR_ARG for a stream not created or reps < 1. */
lm_status lm_stream_curve_measure(const lm_stream *s, int reps, lm_stream_curve *out,
                                  lm_error *err);

/* The CLI: the curve at each of `threads` (a --threads list) as a Markdown table on stdout,
 * where DRAM's level starts, and whether 2 x llc is past it; progress on stderr. Returns
 * the exit status (0, or 2 for a bad list or no memory for the array). */
int lm_model_stream_curve_cli(const lm_ops *ops, const char *threads, int reps, int cores,
                              uint64_t llc);

#endif

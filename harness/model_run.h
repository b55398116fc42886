/* Measuring units of a decode step (model_unit.h) so their weights stream from memory:
 * enough distinct copies that one round over them exceeds twice the last-level cache,
 * stepped round-robin; and the same-minute read-only stream those times are compared
 * with. Library code: errors are values. */
#ifndef LONGMIX_MODEL_RUN_H
#define LONGMIX_MODEL_RUN_H

#include "model_unit.h"

#define LM_MODEL_COPIES_MAX 64

typedef struct lm_unit_timing {
    double step_s;                 /* median over passes of a pass's time / copies */
    double comp_s[LM_COMP_COUNT];  /* the same pass's split by component, per step */
    double bytes;                  /* weights + cache + state read per step */
    size_t copies;
    double checksum;               /* sum of the residual stream after the passes */
    double gemm_s, gemm_flops;     /* prefill: the median pass's lm_gemm seconds and flops */
    double stream_gbps;            /* decode: the read-only stream measured right after the
                                    * unit's passes (0 when none was) */
} lm_unit_timing;

/* Copies of a unit so that copies * alloc > 2 llc_bytes (1..LM_MODEL_COPIES_MAX); 1 for a
 * prefill unit (its GEMMs reuse each weight over every row of the prompt). */
size_t lm_model_copies(const lm_unit_config *cfg, uint64_t llc_bytes);
/* Bytes the measurement of the unit allocates: copies * alloc. */
double lm_model_unit_alloc(const lm_unit_config *cfg, uint64_t llc_bytes);

/* Builds the copies, runs one warm-up pass and `reps` timed passes, frees them. */
lm_status lm_model_measure_unit(const lm_unit_config *cfg, int reps, uint64_t llc_bytes,
                                lm_unit_timing *out, lm_error *err);

/* Read-only stream in GB/s (10^9 B/s): the gemv_rowdot_f32 kernel of ops (y = X w, X read
 * once, w in L1) over an X of max(4 llc_bytes, 64 MiB), on the calling team. The array is
 * allocated and touched once (lm_stream_create) so that it can be measured again between
 * other measurements, each time the best of `reps` passes after one warm-up pass. */
typedef struct lm_stream {
    const lm_ops *ops;
    float *xs, *w, *y; /* X {rows, width}, w {width}, y {rows} */
    size_t rows, width;
} lm_stream;

lm_status lm_stream_create(lm_stream *s, const lm_ops *ops, uint64_t llc_bytes, lm_error *err);
double lm_stream_bytes(const lm_stream *s);
double lm_stream_measure(const lm_stream *s, int reps); /* GB/s */
/* The whole blocks of rows (1 .. all of them) nearest below `bytes` of the array, and the
 * stream over the first `blocks` of them: a prefix under 256 MiB is read several times in
 * each timed pass (one cache-resident working set of that size). */
size_t lm_stream_blocks(const lm_stream *s, double bytes);
double lm_stream_measure_prefix(const lm_stream *s, size_t blocks, int reps); /* GB/s */
void lm_stream_free(lm_stream *s);
/* create, measure, free. LM_ERR_NOMEM. */
lm_status lm_model_stream(const lm_ops *ops, uint64_t llc_bytes, int reps, double *gbps,
                          double *array_bytes, lm_error *err);
/* MemAvailable of /proc/meminfo (else the free physical pages) in bytes. */
double lm_model_available_memory(void);

#endif

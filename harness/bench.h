/* The bench registry: every measurable kernel as a "bench case" the sweep, crossover and
 * Google Benchmark shim all run the same way.
 *
 * A case turns a configuration into prepared inputs (setup: lm_alloc + lm_rng), runs the
 * operator once per call (run), verifies what the last run produced (check: a checksum and
 * the error against a float64 reference, LM_ERR_NUMERIC when the output is wrong), states
 * the flops and bytes of one run (cost), and frees everything (teardown). run and check
 * receive the dispatch table of the configuration's path, lm_ops_for(config->isa): the ISA
 * travels by that argument alone. Cases live in harness/bench_core.c (gemv),
 * bench_attention.c and bench_recurrent.c, registered in harness/registry.h. */
#ifndef LONGMIX_BENCH_H
#define LONGMIX_BENCH_H

#include "longmix.h"
#include "stats.h"

struct lm_ops;

#ifdef __cplusplus
extern "C" {
#endif

/* One measured configuration. Fields a case does not use keep their canonical value
 * (0, or the case default) so that duplicate configurations collapse. */
typedef struct lm_bench_config {
    lm_isa isa;
    int threads;
    char dtype[16]; /* storage type of the main operand: f32, f16, bf16, q8, q4 */
    int bits;       /* bits per stored value (quantized K/V: 2..8; else the dtype's) */
    long n_ctx;     /* tokens: cached (decode) or processed (prefill, scans) */
    long chunk;     /* chunk length of chunked algorithms */
    long heads, kv_heads, head_dim;
    long d_inner, d_state;
    long batch;
    uint64_t seed;
    /* Mamba-1 discretization (LM_BENCH_USES_DISC): "zoh", exact zero-order hold, or
     * "euler", the delta * B input of Mamba's own kernel and ggml; "" for other cases. */
    char disc[8];
    /* A plugin's configuration (sweep --plugin): the table it runs instead of
     * lm_ops_for(isa), and the CSV kernel word "plugin:NAME/op". NULL for longmix's own. */
    const struct lm_ops *ops;
    const char *kernel;
} lm_bench_config;

/* Which configuration fields a case reads (the others are set to 0 in its rows). */
enum {
    LM_BENCH_USES_CTX = 1u << 0,
    LM_BENCH_USES_CHUNK = 1u << 1,
    LM_BENCH_USES_BITS = 1u << 2,
    LM_BENCH_USES_HEADS = 1u << 3, /* heads, kv_heads, head_dim */
    LM_BENCH_USES_SSM = 1u << 4,   /* d_inner, d_state */
    LM_BENCH_USES_BATCH = 1u << 5,
    LM_BENCH_USES_DISC = 1u << 6,  /* disc */
};

typedef struct lm_bench_case {
    const char *name;    /* its word in harness/registry.h: "attn_decode", "mamba1_scan" */
    const char *summary; /* one line for --help and reports */
    /* What the crossover compares ("decode_attention", "decode_ssm", "prefill_attention",
     * "prefill_scan", "prefill_linear") or NULL. */
    const char *role;
    const char *dtypes; /* comma list of supported dtypes, first is the default */
    unsigned uses;      /* LM_BENCH_USES_* */
    lm_bench_config defaults; /* geometry when the caller sets none (isa/threads ignored) */
    lm_status (*setup)(const lm_bench_config *config, void **state, lm_error *err);
    lm_status (*run)(void *state, const struct lm_ops *ops, lm_error *err);
    /* Re-runs once from the initial inputs if the operator updates state in place, then
     * *checksum = a sum over the outputs and *err_max = max |fast - float64 reference|
     * (relative to the output scale; -1 when not computed). LM_ERR_NUMERIC when the
     * output is non-finite or beyond the case's tolerance. */
    lm_status (*check)(void *state, const struct lm_ops *ops, double *checksum,
                       double *err_max, lm_error *err);
    void (*cost)(const lm_bench_config *config, double *flops, double *bytes);
    void (*teardown)(void *state);
    /* The kernel word whose slots the case drives when it is not `name` (mamba1_step runs
     * the mamba1_scan slot at length 1), or NULL: what sweep --plugin measures it with. */
    const char *slot_word;
} lm_bench_case;

/* All registered cases, in registry order (harness/registry.c). */
size_t lm_bench_count(void);
const lm_bench_case *lm_bench_at(size_t index);
/* The case registered as `name` (or an old name of it: attn_decode_q, affine_scan), or
 * NULL. */
const lm_bench_case *lm_bench_find(const char *name);
/* The first case whose role is `role`, or NULL. */
const lm_bench_case *lm_bench_find_role(const char *role, size_t skip);
/* True when the case lists dtype. */
bool lm_bench_supports_dtype(const lm_bench_case *bench, const char *dtype);

/* The dispatch table a configuration runs: config->ops when set (a plugin's), else
 * lm_ops_for(config->isa), or NULL with
 * LM_ERR_UNSUPPORTED "ISA path X is not available on this machine". */
const struct lm_ops *lm_bench_ops(const lm_bench_config *config, lm_error *err);

/* Fills config with the case's defaults, seed 0, and the initial ISA on 1 thread. */
void lm_bench_default_config(const lm_bench_case *bench, lm_bench_config *config);

/* Repetition times a result keeps, in the order they were measured (for the rank test of
 * `longmix compare`); with more repetitions, that many evenly spaced in time. */
#define LM_BENCH_KEPT_REPS 64

/* What one measurement produced. */
typedef struct lm_bench_result {
    lm_summary time;  /* seconds per run over the timed repetitions */
    double rep_times[LM_BENCH_KEPT_REPS]; /* {rep_times_count} seconds per run, in time order */
    double rep_cpu_times[LM_BENCH_KEPT_REPS]; /* the same repetitions' process CPU seconds
                                                  per run (all threads): what a shared
                                                  machine's other jobs do not inflate */
    int rep_times_count;
    int reps;
    long inner;       /* runs per timed repetition (fast kernels repeat to reach ~1 ms) */
    double flops, bytes;
    double checksum, err_max;
    lm_status status; /* LM_OK; LM_ERR_NUMERIC when the check failed; the failing status */
    char message[LM_ERROR_MESSAGE_SIZE];
} lm_bench_result;

/* Takes the table lm_ops_for(config->isa), sets the OpenMP team to config->threads, sets
 * up, runs one warm-up
 * (excluded), then `reps` timed repetitions, checks, tears down. Only a setup failure or
 * an unavailable ISA is returned as an error; a failing run or check is recorded in
 * result->status with the message. `cancel` (may be NULL) is polled between repetitions:
 * when it becomes non-zero the measurement stops with LM_ERR_ARG "interrupted". */
lm_status lm_bench_measure(const lm_bench_case *bench, const lm_bench_config *config, int reps,
                           volatile const int *cancel, lm_bench_result *result, lm_error *err);

/* lm_bench_measure for `count` measurements (case benches[i] at configs[i]: the same problem
 * at several thread counts, or the rows a ratio compares) with their timed repetitions
 * interleaved: every member is set up and warmed up first (all of them held in memory at
 * once), then repetition r of each runs in turn, so the machine's drift (memory bandwidth,
 * clock) reaches all of them alike and ratios between them compare the same minutes.
 * results {count}. A setup failure of any member is returned (the members already set up
 * are torn down unmeasured, and *failed, when not NULL, is the failing member's index); run
 * and check failures are recorded per member as in lm_bench_measure. */
lm_status lm_bench_measure_set(const lm_bench_case *const *benches,
                               const lm_bench_config *configs, size_t count, int reps,
                               volatile const int *cancel, lm_bench_result *results,
                               size_t *failed, lm_error *err);

/* ---- helpers for case files ----------------------------------------------------- */

/* count floats from a normal(0, scale) stream of lm_rng seeded with `seed` (NumPy's
 * default_rng(seed).standard_normal(count) * scale, rounded to float). NULL when out of
 * memory. Free with lm_free. */
float *lm_bench_normal_f32(uint64_t seed, size_t count, double scale);
/* Same, uniform in [low, high). */
float *lm_bench_uniform_f32(uint64_t seed, size_t count, double low, double high);
/* Sum of x as double; NaN when any element is not finite. */
double lm_bench_sum_f32(const float *x, size_t count);
/* x {count} rounded to bfloat16 into a new array (what a bf16 kernel reads), and x itself
 * overwritten by the rounded values (what the check's float64 reference reads). NULL when
 * out of memory. Free with lm_free. */
uint16_t *lm_bench_round_bf16(float *x, size_t count);

#ifdef __cplusplus
}
#endif
#endif

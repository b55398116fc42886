/* Kernel-contract cases (schema "longmix-kernels/1"): what a kernel runner sees. The
 * runners are registered under their kernel word in harness/registry.h.
 *
 * A runner rebuilds one case's inputs from lm_rng by the kernel's recipe (docs/contracts.md,
 * section "kernels"), runs the kernel of the lm_ops table it is given (or the float64
 * reference when the case's dtype is "f64"), and returns the output as a flat float64
 * vector in C order. The core (kernels_contract.c) seeds the generator, picks the ISA
 * paths, takes the statistics and compares them with the contract.
 */
#ifndef LONGMIX_KERNEL_CASES_H
#define LONGMIX_KERNEL_CASES_H

#include "longmix.h"
#include "size_budget.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* One case of the contract, as handed to a runner. Memory taken with lm_kcase_alloc lives
 * until the core has read the output; runners never free it. */
typedef struct lm_kcase {
    const char *id;       /* "gemv_rowdot/n7_d37": names every check and every error */
    const char *kernel;   /* the registry name */
    const char *dtype;    /* fast-path dtype ("f32", ...) or "f64" for the reference */
    unsigned long long seed; /* numpy.random.default_rng(seed) */
    const json_t *json;   /* the case object: "shape", "options", ... */
    void **scratch;       /* allocations owned by the case (core-managed) */
    size_t *scratch_bytes; /* {scratch_capacity}: the bytes handed out of each */
    size_t scratch_count, scratch_capacity;
    bool guarded;         /* each block sits between LM_KCASE_GUARD_BYTES of a known pattern
                           * (a plugin's run: lm_kcase_guard_damage reads them afterwards) */
    size_t limit;         /* bytes the case may reserve: LM_CASE_MAX_BYTES */
    size_t reserved;      /* bytes reserved by lm_kcase_reserve (0: none yet) */
    size_t used;          /* bytes handed out by lm_kcase_alloc so far */
    size_t overdrawn;     /* bytes of the first allocation refused past `reserved`, or 0 */
    bool probing;         /* lm_kcase_probe: the runner stops at its reservation */
    bool probed;          /* lm_kcase_probe: the runner reached its reservation, within budget */
} lm_kcase;

/* A runner's output: `count` float64 values in C order of the kernel's output array (the
 * recipe says which array and in which layout). `values` comes from lm_kcase_alloc. */
typedef struct lm_kout {
    double *values;
    size_t count;
} lm_kout;

/* Builds the inputs from `rng` (already seeded with the case's seed), runs the kernel of
 * `ops` (NULL for dtype "f64": run the float64 reference) and fills *out. Returns LM_OK,
 * or LM_ERR_SCHEMA / LM_ERR_TYPE / LM_ERR_ARG for a case it cannot run (unknown option,
 * bad shape: the message names the case and the field), LM_ERR_UNSUPPORTED for a dtype
 * the kernel has no path for, LM_ERR_NOMEM. A kernel status (shape, domain...) from the
 * kernel itself is returned as is. */
typedef lm_status (*lm_kernel_runner)(lm_kcase *kcase, lm_rng *rng, const lm_ops *ops,
                                      lm_kout *out, lm_error *err);

/* ---- case access (for runners) --------------------------------------------------------
 * Every failure message starts with "case <id>: " and names the field. */

/* shape.<name>: an integer in [1, 2^31); LM_ERR_SCHEMA (a case that cannot be run) when out
 * of range, LM_ERR_TYPE when not an integer. */
lm_status lm_kcase_size(const lm_kcase *kcase, const char *name, size_t *out, lm_error *err);
/* shape.<name> like lm_kcase_size but 0 is allowed (n = 0 cases of bad-input tests). */
lm_status lm_kcase_size0(const lm_kcase *kcase, const char *name, size_t *out, lm_error *err);
/* options.<name>: integer / number / string / boolean, or `fallback` when absent. A present
 * option of the wrong JSON kind is LM_ERR_TYPE (booleans are never numbers). */
lm_status lm_kcase_opt_int(const lm_kcase *kcase, const char *name, long long fallback,
                           long long *out, lm_error *err);
lm_status lm_kcase_opt_real(const lm_kcase *kcase, const char *name, double fallback,
                            double *out, lm_error *err);
lm_status lm_kcase_opt_string(const lm_kcase *kcase, const char *name, const char *fallback,
                              const char **out, lm_error *err);
lm_status lm_kcase_opt_bool(const lm_kcase *kcase, const char *name, bool fallback, bool *out,
                            lm_error *err);
/* LM_ERR_SCHEMA when "options" holds a key not in the NULL-terminated list `known`, so a
 * misspelt option is an error rather than silently the default. */
lm_status lm_kcase_known_options(const lm_kcase *kcase, const char *const *known,
                                 lm_error *err);
/* LM_ERR_UNSUPPORTED "case <id>: dtype <d> is not supported by kernel <k> (supported: ...)"
 * unless the case's dtype is one of the NULL-terminated `supported`. */
lm_status lm_kcase_dtype_in(const lm_kcase *kcase, const char *const *supported,
                            lm_error *err);

/* ---- the case's memory: one budget, reserved from the shape before anything is allocated
 * A runner first adds up every buffer the case will hold -- its draws, their float32
 * copies, its outputs, and the kernel workspaces that grow with the shape or an option --
 * in lm_kcase_budget(kcase), with counts taken by LM_PRODUCT (checked: SIZE_MAX when a
 * product does not fit, which no budget accepts), and reserves the total with
 * lm_kcase_reserve. Only then does it allocate, with products that the reservation has
 * shown to fit. lm_kcase_alloc hands out no more than was reserved (nothing before a
 * reservation): a runner that forgets to reserve, or under-counts, fails each case it runs
 * (lm_kcase_run says so), instead of allocating what its file asks for. */

/* The bytes of one value a runner draws in float64, with the float32 copy a fast path
 * runs on; also of one output (the float64 output and the fast path's float32 result). */
#define LM_KCASE_VALUE_BYTES (sizeof(double) + sizeof(float))

/* An empty budget of the case's limit (LM_CASE_MAX_BYTES). */
lm_budget lm_kcase_budget(const lm_kcase *kcase);
/* Adds a kernel workspace of `count` elements of `size` bytes held by every thread of the
 * kernel's OpenMP team (omp_get_max_threads() copies). */
void lm_kcase_budget_per_thread(lm_budget *budget, size_t count, size_t size);
/* Reserves the bytes of `budget` for the case's allocations when they fit its limit;
 * otherwise LM_ERR_SCHEMA "case <id>: shape {batch 8, ...} needs 12 GiB (all its buffers),
 * more than the 1 GiB limit of a contract case" and nothing is reserved. While the case is
 * probed (lm_kcase_probe), a budget that fits returns LM_ERR_NOMEM (kcase->probed set), so
 * the runner returns before it allocates anything. */
lm_status lm_kcase_reserve(lm_kcase *kcase, const lm_budget *budget, lm_error *err);

/* A zero-filled 64-byte aligned block of count * size bytes owned by the case, or NULL
 * (past the reservation, overflow or out of memory; the caller returns LM_ERR_NOMEM). */
void *lm_kcase_alloc(lm_kcase *kcase, size_t count, size_t size);
/* Guard bytes before and after each block of a guarded case (a multiple of 64, so the
 * block stays 64-byte aligned). */
#define LM_KCASE_GUARD_BYTES 64
/* Guard bytes of a guarded case's blocks that no longer hold their pattern (0: nothing
 * was written outside a block, within LM_KCASE_GUARD_BYTES of it). */
size_t lm_kcase_guard_damage(const lm_kcase *kcase);

/* Allocates *out with `count` outputs; LM_ERR_NOMEM naming the case on failure. */
lm_status lm_kcase_output(lm_kcase *kcase, size_t count, lm_kout *out, lm_error *err);

/* ---- recipe helpers ---------------------------------------------------------------- */

/* `count` draws of rng.standard_normal (C order), as a case-owned float64 array; NULL when
 * out of memory. */
double *lm_kcase_normal(lm_kcase *kcase, lm_rng *rng, size_t count);
/* `count` draws of rng.uniform(low, high), case-owned; NULL when out of memory. */
double *lm_kcase_uniform(lm_kcase *kcase, lm_rng *rng, double low, double high, size_t count);
/* A case-owned float32 copy of values[0..count) (round to nearest); NULL when out of memory. */
float *lm_kcase_to_f32(lm_kcase *kcase, const double *values, size_t count);
/* Rounds values[0..count) in place to the nearest float32 (NumPy's .astype(np.float32)
 * .astype(np.float64)), so a float64 reference sees exactly the fast path's inputs. */
void lm_round_to_f32(double *values, size_t count);
/* A float32 run's result: dst[i] = values[i] widened for i < count when status is LM_OK
 * (dst untouched otherwise). Returns status. */
lm_status lm_kcase_store_f32(lm_status status, double *dst, const float *values, size_t count);

/* ---- running (core; also used by tests) ---------------------------------------------- */

/* Reads id, kernel, dtype and seed of the case object `json` (index `index` in "cases",
 * used in messages) into *kcase. LM_ERR_SCHEMA / LM_ERR_TYPE naming the field. */
lm_status lm_kcase_open(lm_kcase *kcase, const json_t *json, size_t index, lm_error *err);
/* Frees every case-owned allocation (the case can be run again afterwards). */
void lm_kcase_release(lm_kcase *kcase);
/* Seeds a fresh generator with the case's seed and runs the case's registered runner on
 * `ops` (NULL for dtype "f64"). LM_ERR_SCHEMA "case <id>: unknown kernel <k>" when no
 * runner is registered under the case's kernel name. */
lm_status lm_kcase_run(lm_kcase *kcase, const lm_ops *ops, lm_kout *out, lm_error *err);
/* Checks a case when its contract is loaded, before any case runs, without allocating or
 * running anything: the runner reads and checks every field, option and dtype, checks the
 * shape by the kernel's own rules where the kernel has a check of its own (LM_ERR_SHAPE:
 * heads not a multiple of kv_heads, ...), and adds up its memory (LM_ERR_SCHEMA past the
 * budget); then it stops at its reservation. LM_OK when it got there; otherwise the
 * runner's status and message. */
lm_status lm_kcase_probe(lm_kcase *kcase, lm_error *err);

#endif

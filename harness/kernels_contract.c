/* The checker of schema "longmix-kernels/1" (docs/contracts.md, section "kernels").
 *
 * Each case names a kernel, its shapes, options, seed and fast-path dtype; the runner
 * registered under the kernel name (harness/registry.h) rebuilds the inputs from lm_rng by
 * the kernel's recipe and returns the output. The checker runs every case on the active
 * ISA path and then on every other path this machine runs (only the active one when
 * LONGMIX_ISA is set; dtype "f64" cases run the float64 reference once, labelled "ref"),
 * and records one check per statistic per path: case_id/isa/count, /sum, /abs_sum and
 * /at[i] for each sampled flat index i. A statistic passes when
 *     |got - expected| <= atol + rtol * scale
 * with rtol and atol the case's tolerance and scale the statistic's own magnitude from
 * the contract (the sum of |terms| the float64 reference added up for it). */
#include "contract.h"
#include "kernel_expect.h"
#include "jsonx.h"
#include "registry.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char own_section[] = "kernels";

typedef lm_kstat statistic;
enum { PREFIX_TEXT = LM_KEXPECT_PREFIX_TEXT, NAME_TEXT = LM_KEXPECT_NAME_TEXT,
       MAX_SAMPLES = LM_KEXPECT_MAX_SAMPLES };

static lm_status relabel(const char *id, lm_status status, const lm_error *inner, lm_error *err)
{
    return lm_fail(err, status, "case %s: %s", id, inner->message);
}

static lm_status read_statistic(const json_t *json, const char *id, const char *path,
                                statistic *out, lm_error *err)
{
    char field[NAME_TEXT];
    lm_error inner;
    snprintf(field, sizeof field, "%s.value", path);
    lm_status status = lm_json_real(json, field, &out->value, &inner);
    if (status == LM_OK) {
        snprintf(field, sizeof field, "%s.scale", path);
        status = lm_json_real(json, field, &out->scale, &inner);
    }
    if (status != LM_OK)
        return relabel(id, status, &inner, err);
    if (!isfinite(out->value) || !isfinite(out->scale) || out->scale < 0.0)
        return lm_fail(err, LM_ERR_SCHEMA,
                       "case %s: %s must hold a finite value and a finite scale >= 0", id, path);
    return LM_OK;
}

static lm_status status_by_name(const char *name, lm_status *out)
{
    for (int s = 1; s < LM_STATUS_COUNT; s++)
        if (strcmp(lm_status_name((lm_status)s), name) == 0) {
            *out = (lm_status)s;
            return LM_OK;
        }
    return LM_ERR_SCHEMA;
}

static lm_status read_rejection(const json_t *json, const char *id, lm_kexpect *e,
                                lm_error *err)
{
    const char *name;
    lm_error inner;
    lm_status status = lm_json_string(json, "expected.status", &name, &inner);
    if (status != LM_OK)
        return relabel(id, status, &inner, err);
    if (status_by_name(name, &e->status) != LM_OK)
        return lm_fail(err, LM_ERR_SCHEMA,
                       "case %s: expected.status '%s' is not a status name (shape, domain, ...)",
                       id, name);
    e->rejects = true;
    e->mention = NULL;
    if (json_object_get(json_object_get(json, "expected"), "mention") != NULL &&
        (status = lm_json_string(json, "expected.mention", &e->mention, &inner)) != LM_OK)
        return relabel(id, status, &inner, err);
    return LM_OK;
}

lm_status lm_kexpect_read(const json_t *json, const char *id, lm_kexpect *e, lm_error *err)
{
    *e = (lm_kexpect){0};
    const json_t *expected = json_object_get(json, "expected");
    if (!json_is_object(expected))
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: missing object field expected", id);
    if (json_object_get(expected, "status") != NULL)
        return read_rejection(json, id, e, err);

    lm_error inner;
    lm_status status = lm_json_int(json, "expected.count", &e->count, &inner);
    if (status == LM_OK)
        status = lm_json_real(json, "tolerance.rtol", &e->rtol, &inner);
    if (status == LM_OK)
        status = lm_json_real(json, "tolerance.atol", &e->atol, &inner);
    if (status != LM_OK)
        return relabel(id, status, &inner, err);
    if (e->count < 1)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: expected.count must be positive", id);
    if (!(e->rtol >= 0.0 && e->atol >= 0.0 && isfinite(e->rtol) && isfinite(e->atol)))
        return lm_fail(err, LM_ERR_SCHEMA,
                       "case %s: tolerance.rtol and tolerance.atol must be finite and >= 0", id);
    if ((status = read_statistic(json, id, "expected.sum", &e->sum, err)) != LM_OK ||
        (status = read_statistic(json, id, "expected.abs_sum", &e->abs_sum, err)) != LM_OK)
        return status;

    const json_t *samples = json_object_get(expected, "samples");
    if (samples == NULL)
        return LM_OK;
    if (!json_is_array(samples) || json_array_size(samples) > MAX_SAMPLES)
        return lm_fail(err, LM_ERR_SCHEMA, "case %s: expected.samples must be an array of at "
                                           "most %d objects", id, MAX_SAMPLES);
    e->sample_count = json_array_size(samples);
    for (size_t k = 0; k < e->sample_count; k++) {
        char path[NAME_TEXT];
        snprintf(path, sizeof path, "expected.samples[%zu].index", k);
        if ((status = lm_json_int(json, path, &e->index[k], &inner)) != LM_OK)
            return relabel(id, status, &inner, err);
        if (e->index[k] < 0 || e->index[k] >= e->count)
            return lm_fail(err, LM_ERR_SCHEMA, "case %s: %s must be in [0, expected.count)", id,
                           path);
        snprintf(path, sizeof path, "expected.samples[%zu]", k);
        if ((status = read_statistic(json, id, path, &e->sample[k], err)) != LM_OK)
            return status;
    }
    return LM_OK;
}

/* |got - expected| <= atol + rtol * scale, recorded as an absolute bound. */
static void check_statistic(lm_report *report, const char *section, const char *prefix,
                            const char *what,
                            const statistic *expected, double got, const lm_kexpect *e)
{
    char name[NAME_TEXT];
    snprintf(name, sizeof name, "%s/%s", prefix, what);
    lm_check_close(report, section, name, expected->value, got, 0.0,
                   e->atol + e->rtol * expected->scale);
}

/* Neumaier's compensated sum: the statistics of a long output stay within an ulp or two
 * of the exactly rounded sum the builder takes with math.fsum. */
typedef struct compensated {
    double total, correction;
} compensated;

static void add(compensated *acc, double value)
{
    double t = acc->total + value;
    if (fabs(acc->total) >= fabs(value))
        acc->correction += (acc->total - t) + value;
    else
        acc->correction += (value - t) + acc->total;
    acc->total = t;
}

void lm_kexpect_check_output(lm_report *report, const char *section, const char *prefix,
                             const lm_kout *out, const lm_kexpect *e)
{
    char name[NAME_TEXT];
    snprintf(name, sizeof name, "%s/count", prefix);
    lm_check_int(report, section, name, e->count, (long long)out->count);
    if ((long long)out->count != e->count)
        return; /* statistics over a different array would only repeat the failure */
    compensated sum = {0.0, 0.0}, abs_sum = {0.0, 0.0};
    for (size_t i = 0; i < out->count; i++) {
        add(&sum, out->values[i]);
        add(&abs_sum, fabs(out->values[i]));
    }
    check_statistic(report, section, prefix, "sum", &e->sum, sum.total + sum.correction, e);
    check_statistic(report, section, prefix, "abs_sum", &e->abs_sum,
                    abs_sum.total + abs_sum.correction, e);
    for (size_t k = 0; k < e->sample_count; k++) {
        char what[48];
        snprintf(what, sizeof what, "at[%lld]", e->index[k]);
        check_statistic(report, section, prefix, what, &e->sample[k],
                        out->values[e->index[k]], e);
    }
}

/* "shape.heads, shape.kv_heads": the case's shape fields that `message` names (as whole
 * words), or "shape" when it names none. */
static void shape_fields_named(const lm_kcase *kcase, const char *message, char *out,
                               size_t size)
{
    const json_t *shape = json_object_get(kcase->json, "shape");
    const char *key;
    const json_t *value;
    size_t used = 0;
    out[0] = '\0';
    json_object_foreach((json_t *)(uintptr_t)shape, key, value) {
        const size_t length = strlen(key);
        for (const char *at = strstr(message, key); at != NULL; at = strstr(at + 1, key)) {
            const char before = at == message ? ' ' : at[-1], after = at[length];
            if (isalnum((unsigned char)before) || before == '_' || isalnum((unsigned char)after) ||
                after == '_')
                continue;
            int n = snprintf(out + used, size - used, "%sshape.%s", used ? ", " : "", key);
            used = n > 0 && used + (size_t)n < size ? used + (size_t)n : used;
            break;
        }
    }
    if (used == 0)
        snprintf(out, size, "shape");
}

/* LM_ERR_SCHEMA "case <id>: shape.heads, shape.kv_heads: the kernel refuses this shape
 * (<the kernel's message>); ...": a case that expects values with a shape its kernel refuses. */
static lm_status refused_shape(const lm_kcase *kcase, const lm_error *kernel_err, lm_error *err)
{
    char fields[NAME_TEXT];
    shape_fields_named(kcase, kernel_err->message, fields, sizeof fields);
    return lm_fail(err, LM_ERR_SCHEMA, "case %s: %s: the kernel refuses this shape (%s); a case "
                   "that expects values needs a shape the kernel accepts (a rejection test "
                   "says expected.status)", kcase->id, fields, kernel_err->message);
}

/* A case that expects values but whose shape its kernel refuses, as the float64 reference
 * confirms, is a malformed contract (exit 2 naming the fields), not a failed check. A
 * refusal only the fast path makes stays a failed check (a kernel defect). */
static bool shape_is_invalid(lm_kcase *kcase, const lm_ops *ops, const lm_error *run_err,
                             lm_error *err)
{
    lm_error reference_err = *run_err;
    if (ops != NULL) { /* the float64 reference on the same inputs (lm_kcase_run's seeding) */
        const lm_registry_entry *entry =
            lm_registry_find(kcase->kernel, json_object_get(kcase->json, "options"));
        lm_rng rng;
        lm_rng_seed(&rng, (uint64_t)kcase->seed);
        lm_kout out = {NULL, 0};
        lm_kcase_release(kcase);
        if (entry == NULL || entry->contract == NULL ||
            entry->contract(kcase, &rng, NULL, &out, &reference_err) != LM_ERR_SHAPE)
            return false;
    }
    refused_shape(kcase, &reference_err, err);
    return true;
}

/* A runner status that says the case itself is malformed: a field of the wrong kind or out
 * of range, an unknown option, a dtype the kernel has no path for. */
static bool is_case_error(lm_status status)
{
    return status == LM_ERR_SCHEMA || status == LM_ERR_TYPE || status == LM_ERR_UNSUPPORTED;
}

/* Runs one case on one path (ops NULL: the float64 reference) and records its checks.
 * Returns LM_OK, or the status of a malformed case (schema/type), which ends the run. */
static lm_status run_on(lm_kcase *kcase, const lm_kexpect *e, const lm_ops *ops,
                        const char *path_name, lm_report *report, lm_error *err)
{
    char prefix[PREFIX_TEXT];
    snprintf(prefix, sizeof prefix, "%s/%s", kcase->id, path_name);
    lm_kout out;
    lm_error run_err;
    lm_error_clear(&run_err);
    lm_status status = lm_kcase_run(kcase, ops, &out, &run_err);
    if (is_case_error(status) && !(e->rejects && status == e->status)) {
        lm_kcase_release(kcase);
        return lm_fail(err, status == LM_ERR_UNSUPPORTED ? LM_ERR_SCHEMA : status, "%s",
                       run_err.message);
    } else if (e->rejects) {
        char name[NAME_TEXT];
        snprintf(name, sizeof name, "%s/rejects", prefix);
        lm_check_rejects(report, own_section, name, e->status, status, &run_err, e->mention);
    } else if (status == LM_ERR_SHAPE && shape_is_invalid(kcase, ops, &run_err, err)) {
        lm_kcase_release(kcase);
        return LM_ERR_SCHEMA;
    } else if (status != LM_OK) {
        char name[NAME_TEXT], got[LM_ERROR_MESSAGE_SIZE + 32];
        snprintf(name, sizeof name, "%s/run", prefix);
        snprintf(got, sizeof got, "%s error: %s", lm_status_name(status), run_err.message);
        lm_check_true(report, own_section, name, false, "the kernel runs", got);
    } else {
        lm_kexpect_check_output(report, own_section, prefix, &out, e);
    }
    lm_kcase_release(kcase);
    return LM_OK;
}

/* The paths to run: the active one first, then (unless LONGMIX_ISA forces a path) every
 * other path this build holds and this machine runs. Returns how many. */
static size_t paths_to_run(lm_isa paths[LM_ISA_COUNT])
{
    size_t count = 0;
    lm_isa active = lm_isa_active(NULL);
    paths[count++] = active;
    const char *forced = getenv("LONGMIX_ISA");
    if (forced != NULL && forced[0] != '\0')
        return count;
    for (int isa = 0; isa < LM_ISA_COUNT; isa++)
        if ((lm_isa)isa != active && lm_isa_available((lm_isa)isa) &&
            lm_ops_for((lm_isa)isa) != NULL)
            paths[count++] = (lm_isa)isa;
    return count;
}

/* The paths a case runs on: each of `paths` in order, where a derived path (avx512vnni)
 * that holds its parent's kernels for the case's word stands for its parent (up the chain),
 * and a path already run is not run again. So the avx512vnni row is checked on the
 * kvq_decode cases (its own kernel), the avx512bf16 row on the bf16 kernels, and every
 * other case runs on avx512 as before. Returns how many. */
static size_t paths_for_case(const lm_kcase *kcase, const lm_isa *paths, size_t count,
                             lm_isa *out)
{
    const lm_registry_entry *entry =
        lm_registry_find(kcase->kernel, json_object_get(kcase->json, "options"));
    size_t n = 0;
    for (size_t p = 0; p < count; p++) {
        lm_isa isa = paths[p];
        while (lm_isa_derived(isa) && lm_ops_for(lm_isa_parent(isa)) != NULL &&
               lm_ops_same_kernel(lm_ops_for(isa), lm_ops_for(lm_isa_parent(isa)), entry->name))
            isa = lm_isa_parent(isa); /* up the chain: avx512bf16 -> avx512vnni -> avx512 */
        bool seen = false;
        for (size_t i = 0; i < n; i++)
            seen |= out[i] == isa;
        if (!seen)
            out[n++] = isa;
    }
    return n;
}

/* Probes a case that expects values (lm_kcase_probe) when the contract is loaded: a field,
 * option or dtype its runner refuses, a shape its kernel's own check refuses (exit 2 with
 * the fields, as a refusal found when it runs) and a shape past the memory budget end the
 * load. Other statuses are left to the run, which records them as checks. */
static lm_status probe_case(lm_kcase *kcase, const lm_kexpect *e, lm_error *err)
{
    if (e->rejects)
        return LM_OK; /* a rejection test: its run checks the refusal */
    lm_error inner;
    lm_error_clear(&inner);
    lm_status status = lm_kcase_probe(kcase, &inner);
    if (status == LM_ERR_SHAPE)
        return refused_shape(kcase, &inner, err);
    if (is_case_error(status))
        return lm_fail(err, status == LM_ERR_UNSUPPORTED ? LM_ERR_SCHEMA : status, "%s",
                       inner.message);
    return LM_OK;
}

/* Validates every case (fields, registered kernel, unique id, and each case's probe: its
 * shape and memory) before any runs, so a malformed contract stops with one error and no
 * partial report. */
lm_status lm_kernels_validate(const json_t *cases, lm_error *err)
{
    size_t count = json_array_size(cases);
    for (size_t i = 0; i < count; i++) {
        lm_kcase kcase;
        lm_kexpect e;
        lm_status status = lm_kcase_open(&kcase, json_array_get(cases, i), i, err);
        if (status == LM_OK)
            status = lm_kexpect_read(kcase.json, kcase.id, &e, err);
        if (status != LM_OK)
            return status;
        const lm_registry_entry *entry =
            lm_registry_find(kcase.kernel, json_object_get(kcase.json, "options"));
        if (entry == NULL || entry->contract == NULL)
            return lm_fail(err, LM_ERR_SCHEMA,
                           "case %s: unknown kernel '%s' (no runner registered in "
                           "harness/registry.h)", kcase.id, kcase.kernel);
        for (size_t j = 0; j < i; j++) {
            const char *other = json_string_value(json_object_get(json_array_get(cases, j), "id"));
            if (other != NULL && strcmp(other, kcase.id) == 0)
                return lm_fail(err, LM_ERR_SCHEMA, "case %s: id repeats cases[%zu]", kcase.id, j);
        }
        if ((status = probe_case(&kcase, &e, err)) != LM_OK)
            return status;
    }
    return LM_OK;
}

lm_status lm_kernels_cases(const lm_contract *contract, const json_t **cases, lm_error *err)
{
    *cases = json_object_get(contract->root, "cases");
    if (!json_is_array(*cases) || json_array_size(*cases) == 0)
        return lm_fail(err, LM_ERR_SCHEMA, "%s: field cases must be a non-empty array",
                       contract->path);
    return lm_kernels_validate(*cases, err);
}

lm_status lm_kcase_open_expecting(const json_t *cases, size_t i, lm_kcase *kcase,
                                  lm_kexpect *e, lm_error *err)
{
    lm_status status = lm_kcase_open(kcase, json_array_get(cases, i), i, err);
    return status != LM_OK ? status : lm_kexpect_read(kcase->json, kcase->id, e, err);
}

lm_status lm_verify_kernels(const lm_contract *contract, lm_report *report, lm_error *err)
{
    const json_t *cases;
    lm_status status = lm_kernels_cases(contract, &cases, err);
    if (status != LM_OK)
        return status;

    lm_isa paths[LM_ISA_COUNT];
    size_t path_count = paths_to_run(paths);
    for (size_t i = 0; i < json_array_size(cases); i++) {
        lm_kcase kcase;
        lm_kexpect e;
        if ((status = lm_kcase_open_expecting(cases, i, &kcase, &e, err)) != LM_OK)
            return status;
        if (strcmp(kcase.dtype, "f64") == 0) {
            if ((status = run_on(&kcase, &e, NULL, "ref", report, err)) != LM_OK)
                return status;
            continue;
        }
        lm_isa run[LM_ISA_COUNT];
        size_t run_count = paths_for_case(&kcase, paths, path_count, run);
        for (size_t p = 0; p < run_count; p++)
            if ((status = run_on(&kcase, &e, lm_ops_for(run[p]), lm_isa_name(run[p]), report,
                                 err)) != LM_OK)
                return status;
    }
    return LM_OK;
}

/* What a kernel-contract case expects, and the checks of an output against it: shared by
 * the checker of longmix's own kernels (kernels_contract.c) and of a plugin's
 * (kernels_plugin.c), so both judge by the same statistics and tolerances. */
#ifndef LONGMIX_KERNEL_EXPECT_H
#define LONGMIX_KERNEL_EXPECT_H

#include "kernel_cases.h"
#include "verify_report.h"

enum { LM_KEXPECT_MAX_SAMPLES = 64, LM_KEXPECT_NAME_TEXT = 256, LM_KEXPECT_PREFIX_TEXT = 192 };

typedef struct lm_kstat {
    double value, scale;
} lm_kstat;

/* One case's expectation, read (and validated) before anything runs. */
typedef struct lm_kexpect {
    bool rejects;              /* a bad-input case: the run must fail with `status` */
    lm_status status;
    const char *mention;       /* optional text the rejection message must contain */
    long long count;
    lm_kstat sum, abs_sum;
    size_t sample_count;
    long long index[LM_KEXPECT_MAX_SAMPLES];
    lm_kstat sample[LM_KEXPECT_MAX_SAMPLES];
    double rtol, atol;
} lm_kexpect;

/* Reads the case object's "expected" and "tolerance"; LM_ERR_SCHEMA / LM_ERR_TYPE naming
 * the case and the field. */
lm_status lm_kexpect_read(const json_t *json, const char *id, lm_kexpect *e, lm_error *err);

/* Records prefix/count, prefix/sum, prefix/abs_sum and prefix/at[i] under `section`:
 * |got - expected| <= atol + rtol * scale. */
void lm_kexpect_check_output(lm_report *report, const char *section, const char *prefix,
                             const lm_kout *out, const lm_kexpect *e);

/* Validates every case of "cases" (fields, registered kernel, unique id, each case's
 * probe) before any runs. */
lm_status lm_kernels_validate(const json_t *cases, lm_error *err);

/* The contract's "cases" array, every case validated (lm_kernels_validate); LM_ERR_SCHEMA
 * naming the file when it is missing or empty. */
lm_status lm_kernels_cases(const lm_contract *contract, const json_t **cases, lm_error *err);

/* Opens cases[i] and reads what it expects (lm_kcase_open, lm_kexpect_read). */
lm_status lm_kcase_open_expecting(const json_t *cases, size_t i, lm_kcase *kcase,
                                  lm_kexpect *e, lm_error *err);

#endif

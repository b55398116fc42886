/* Check results of a verify run, and their writers (text, TAP, JUnit XML, JSON).
 * Every check records: file, section, name, PASS/FAIL, expected, got, tolerance. */
#ifndef LONGMIX_REPORT_H
#define LONGMIX_REPORT_H

#include "longmix.h"

#include <stdbool.h>
#include <stdio.h>

typedef enum lm_format { LM_FORMAT_TEXT, LM_FORMAT_TAP, LM_FORMAT_JUNIT, LM_FORMAT_JSON } lm_format;

typedef struct lm_report lm_report;

/* NULL when out of memory. Free with lm_report_free. */
lm_report *lm_report_new(void);
void lm_report_free(lm_report *report);

/* Later checks belong to this contract file (the JUnit test suite). */
void lm_report_begin_file(lm_report *report, const char *file);

/* numpy.isclose rule: passes when both are finite and |got - expected| <= atol + rtol*|expected|. */
bool lm_check_close(lm_report *report, const char *section, const char *name, double expected,
                    double got, double rtol, double atol);
/* math.isclose rule: |got - expected| <= max(rel_tol * max(|got|, |expected|), abs_tol). */
bool lm_check_isclose(lm_report *report, const char *section, const char *name,
                      double expected, double got, double rel_tol, double abs_tol);
/* got < bound (strict), e.g. a max difference below 1e-12. */
bool lm_check_below(lm_report *report, const char *section, const char *name, double got,
                    double bound);
/* Exact integer equality. */
bool lm_check_int(lm_report *report, const char *section, const char *name, long long expected,
                  long long got);
/* A named invariant with free-text expected/got columns. */
bool lm_check_true(lm_report *report, const char *section, const char *name, bool ok,
                   const char *expected_text, const char *got_text);
/* A negative case: passes when the call returned `expected` (not LM_OK) and, when
 * must_mention is non-NULL, the message contains it. `got` is the call's lm_error. */
bool lm_check_rejects(lm_report *report, const char *section, const char *name,
                      lm_status expected, lm_status returned, const lm_error *got,
                      const char *must_mention);

size_t lm_report_passed(const lm_report *report);
size_t lm_report_failed(const lm_report *report);

/* Writes `text` (NULL as "(out of memory)") with the characters XML attributes (json false)
 * or JSON strings (json true) need escaped. */
void lm_report_write_escaped(FILE *out, const char *text, bool json);

/* Writes every check in `format`; text and TAP end with the line "N passed, N failed". */
void lm_report_write(const lm_report *report, lm_format format, FILE *out);

#endif

/* Check results of a verify run, and their writers (text, TAP, JUnit XML, JSON).
 * Every check records: file, section, name, PASS/FAIL, expected, got, tolerance. A file
 * that could not be checked (unreadable, unpinned, malformed, a bad field: the CLI's exit
 * 2) is recorded as an ERROR with its message, and counted apart from failed checks.
 *
 * Every writer escapes what it prints, since ids, names and paths come from files and
 * command lines: control characters, C1 controls and invalid UTF-8 appear as \n, \x1b,
 * \u009b, \xff (backslash itself as \\), so no text can forge a line, reach a terminal as
 * an escape sequence or break the XML/JSON; TAP also escapes '#' (a directive). */
#ifndef LONGMIX_VERIFY_REPORT_H
#define LONGMIX_VERIFY_REPORT_H

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

/* Records that `file` could not be checked (an exit-2 error), with the reason. */
void lm_report_error(lm_report *report, const char *file, const char *message);

size_t lm_report_passed(const lm_report *report);
size_t lm_report_failed(const lm_report *report);
/* Files that could not be checked, plus one when the report ran out of memory (some
 * checks were then not recorded). */
size_t lm_report_errors(const lm_report *report);

/* Writes `text` (NULL as "(out of memory)") with the characters XML attributes (json false)
 * or JSON strings (json true) need escaped, as the JUnit and JSON reports escape theirs. */
void lm_report_write_escaped(FILE *out, const char *text, bool json);

/* Writes every check and error in `format`; text and TAP end with the line
 * "N passed, N failed, N errors" (TAP as a comment), JUnit counts errors in its errors
 * attributes, JSON in "errors". A run passed only when failed and errors are both 0. */
void lm_report_write(const lm_report *report, lm_format format, FILE *out);

/* Writes one line per contract file, "PASS FILE: N checks, N passed, 0 failed" (FAIL with
 * the first failed check, ERROR with what stopped the file), then the line
 * "N passed, N failed, N errors": what a person reads; the full report is lm_report_write's. */
void lm_report_write_per_file(const lm_report *report, FILE *out);

/* Writes `text` for a terminal or log: control characters, C1 controls, invalid UTF-8 and
 * backslashes escaped as the text report does (for messages on stderr). */
void lm_write_visible(FILE *out, const char *text);

#endif

/* Check records and their four writers. Checks are kept in memory (a verify run holds a
 * few thousand at most) so that TAP can announce its plan and JUnit can count failures. */
#include "report.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct check {
    char *file;
    char *section;
    char *name;
    bool passed;
    char *expected;
    char *got;
    char *tolerance;
} check;

struct lm_report {
    check *checks;
    size_t count, capacity;
    size_t failed;
    char *file;
    bool out_of_memory;
};

lm_report *lm_report_new(void)
{
    lm_report *report = calloc(1, sizeof *report);
    if (report != NULL)
        report->file = strdup("");
    return report;
}

static void free_check(check *c)
{
    free(c->file);
    free(c->section);
    free(c->name);
    free(c->expected);
    free(c->got);
    free(c->tolerance);
}

void lm_report_free(lm_report *report)
{
    if (report == NULL)
        return;
    for (size_t i = 0; i < report->count; i++)
        free_check(&report->checks[i]);
    free(report->checks);
    free(report->file);
    free(report);
}

void lm_report_begin_file(lm_report *report, const char *file)
{
    char *copy = strdup(file);
    if (copy == NULL) {
        report->out_of_memory = true;
        return;
    }
    free(report->file);
    report->file = copy;
}

__attribute__((format(printf, 1, 2))) static char *format_text(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    int length = vsnprintf(NULL, 0, format, args);
    va_end(args);
    char *text = length < 0 ? NULL : malloc((size_t)length + 1);
    if (text == NULL)
        return NULL;
    va_start(args, format);
    vsnprintf(text, (size_t)length + 1, format, args);
    va_end(args);
    return text;
}

/* Takes ownership of the three texts. */
static bool record(lm_report *report, const char *section, const char *name, bool passed,
                   char *expected, char *got, char *tolerance)
{
    if (report->count == report->capacity) {
        size_t capacity = report->capacity ? 2 * report->capacity : 256;
        check *grown = realloc(report->checks, capacity * sizeof *grown);
        if (grown == NULL) {
            report->out_of_memory = true;
            free(expected), free(got), free(tolerance);
            report->failed += !passed;
            return passed;
        }
        report->checks = grown;
        report->capacity = capacity;
    }
    check *c = &report->checks[report->count++];
    *c = (check){strdup(report->file), strdup(section), strdup(name), passed,
                 expected, got, tolerance};
    report->failed += !passed;
    return passed;
}

bool lm_check_close(lm_report *report, const char *section, const char *name, double expected,
                    double got, double rtol, double atol)
{
    bool ok = isfinite(expected) && isfinite(got) &&
              fabs(got - expected) <= atol + rtol * fabs(expected);
    return record(report, section, name, ok, format_text("%.17g", expected),
                  format_text("%.17g", got), format_text("rtol=%g atol=%g", rtol, atol));
}

bool lm_check_isclose(lm_report *report, const char *section, const char *name,
                      double expected, double got, double rel_tol, double abs_tol)
{
    double scale = fmax(fabs(got), fabs(expected));
    bool ok = isfinite(expected) && isfinite(got) &&
              fabs(got - expected) <= fmax(rel_tol * scale, abs_tol);
    return record(report, section, name, ok, format_text("%.17g", expected),
                  format_text("%.17g", got),
                  format_text("rel_tol=%g abs_tol=%g", rel_tol, abs_tol));
}

bool lm_check_below(lm_report *report, const char *section, const char *name, double got,
                    double bound)
{
    bool ok = isfinite(got) && got < bound;
    return record(report, section, name, ok, format_text("< %g", bound),
                  format_text("%.17g", got), format_text("strict bound"));
}

bool lm_check_int(lm_report *report, const char *section, const char *name, long long expected,
                  long long got)
{
    return record(report, section, name, expected == got, format_text("%lld", expected),
                  format_text("%lld", got), format_text("exact"));
}

bool lm_check_true(lm_report *report, const char *section, const char *name, bool ok,
                   const char *expected_text, const char *got_text)
{
    return record(report, section, name, ok, strdup(expected_text), strdup(got_text),
                  strdup("invariant"));
}

bool lm_check_rejects(lm_report *report, const char *section, const char *name,
                      lm_status expected, lm_status returned, const lm_error *got,
                      const char *must_mention)
{
    const char *message = (got != NULL) ? got->message : "";
    bool ok = returned == expected && expected != LM_OK &&
              (must_mention == NULL || strstr(message, must_mention) != NULL);
    char *want = must_mention ? format_text("%s error mentioning '%s'", lm_status_name(expected),
                                            must_mention)
                              : format_text("%s error", lm_status_name(expected));
    char *have = returned == LM_OK ? strdup("accepted (ok)")
                                   : format_text("%s error: %s", lm_status_name(returned), message);
    return record(report, section, name, ok, want, have, strdup("rejection"));
}

size_t lm_report_passed(const lm_report *report) { return report->count - report->failed; }
size_t lm_report_failed(const lm_report *report) { return report->failed; }

/* ---- writers ------------------------------------------------------------------ */

static const char *text_or_empty(const char *text) { return text ? text : "(out of memory)"; }

static void write_text(const lm_report *report, FILE *out)
{
    for (size_t i = 0; i < report->count; i++) {
        const check *c = &report->checks[i];
        fprintf(out, "%s %s: %s/%s: expected %s, got %s (%s)\n", c->passed ? "PASS" : "FAIL",
                text_or_empty(c->file), text_or_empty(c->section), text_or_empty(c->name),
                text_or_empty(c->expected), text_or_empty(c->got), text_or_empty(c->tolerance));
    }
}

static void write_tap(const lm_report *report, FILE *out)
{
    fprintf(out, "TAP version 13\n1..%zu\n", report->count);
    for (size_t i = 0; i < report->count; i++) {
        const check *c = &report->checks[i];
        fprintf(out, "%s %zu - %s: %s/%s\n", c->passed ? "ok" : "not ok", i + 1,
                text_or_empty(c->file), text_or_empty(c->section), text_or_empty(c->name));
        if (!c->passed)
            fprintf(out, "  ---\n  expected: '%s'\n  got: '%s'\n  tolerance: '%s'\n  ...\n",
                    text_or_empty(c->expected), text_or_empty(c->got),
                    text_or_empty(c->tolerance));
    }
}

void lm_report_write_escaped(FILE *out, const char *text, bool json)
{
    for (const char *p = text_or_empty(text); *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (json && (ch == '"' || ch == '\\'))
            fprintf(out, "\\%c", ch);
        else if (json && ch < 0x20)
            fprintf(out, "\\u%04x", ch);
        else if (!json && ch == '&')
            fputs("&amp;", out);
        else if (!json && ch == '<')
            fputs("&lt;", out);
        else if (!json && ch == '>')
            fputs("&gt;", out);
        else if (!json && ch == '"')
            fputs("&quot;", out);
        else
            fputc(ch, out);
    }
}

static void write_junit_case(const check *c, FILE *out)
{
    fputs("    <testcase classname=\"", out);
    lm_report_write_escaped(out, c->section, false);
    fputs("\" name=\"", out);
    lm_report_write_escaped(out, c->name, false);
    fputs("\"", out);
    if (c->passed) {
        fputs("/>\n", out);
        return;
    }
    fputs(">\n      <failure message=\"expected ", out);
    lm_report_write_escaped(out, c->expected, false);
    fputs(", got ", out);
    lm_report_write_escaped(out, c->got, false);
    fputs(" (", out);
    lm_report_write_escaped(out, c->tolerance, false);
    fputs(")\"/>\n    </testcase>\n", out);
}

static void write_junit(const lm_report *report, FILE *out)
{
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<testsuites name=\"longmix verify\" tests=\"%zu\" failures=\"%zu\">\n",
            report->count, report->failed);
    size_t start = 0;
    while (start < report->count) { /* one <testsuite> per run of checks of one file */
        size_t end = start, failures = 0;
        while (end < report->count &&
               strcmp(text_or_empty(report->checks[end].file),
                      text_or_empty(report->checks[start].file)) == 0)
            failures += !report->checks[end++].passed;
        fputs("  <testsuite name=\"", out);
        lm_report_write_escaped(out, report->checks[start].file, false);
        fprintf(out, "\" tests=\"%zu\" failures=\"%zu\">\n", end - start, failures);
        for (size_t i = start; i < end; i++)
            write_junit_case(&report->checks[i], out);
        fputs("  </testsuite>\n", out);
        start = end;
    }
    fputs("</testsuites>\n", out);
}

static void write_json_field(FILE *out, const char *key, const char *value, bool last)
{
    fprintf(out, "\"%s\": \"", key);
    lm_report_write_escaped(out, value, true);
    fputs(last ? "\"" : "\", ", out);
}

static void write_json(const lm_report *report, FILE *out)
{
    fprintf(out, "{\"passed\": %zu, \"failed\": %zu, \"checks\": [\n",
            lm_report_passed(report), report->failed);
    for (size_t i = 0; i < report->count; i++) {
        const check *c = &report->checks[i];
        fprintf(out, "  {\"status\": \"%s\", ", c->passed ? "pass" : "fail");
        write_json_field(out, "file", c->file, false);
        write_json_field(out, "section", c->section, false);
        write_json_field(out, "name", c->name, false);
        write_json_field(out, "expected", c->expected, false);
        write_json_field(out, "got", c->got, false);
        write_json_field(out, "tolerance", c->tolerance, true);
        fputs(i + 1 < report->count ? "},\n" : "}\n", out);
    }
    fputs("]}\n", out);
}

void lm_report_write(const lm_report *report, lm_format format, FILE *out)
{
    switch (format) {
    case LM_FORMAT_TEXT:
        write_text(report, out);
        fprintf(out, "%zu passed, %zu failed\n", lm_report_passed(report), report->failed);
        break;
    case LM_FORMAT_TAP:
        write_tap(report, out);
        fprintf(out, "# %zu passed, %zu failed\n", lm_report_passed(report), report->failed);
        break;
    case LM_FORMAT_JUNIT: write_junit(report, out); break;
    case LM_FORMAT_JSON: write_json(report, out); break;
    }
}

/* Check records and their four writers. Checks are kept in memory (a verify run holds a
 * few thousand at most) so that TAP can announce its plan and JUnit can count failures. */
#include "verify_report.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef enum outcome { OUTCOME_PASS, OUTCOME_FAIL, OUTCOME_ERROR } outcome;

/* One check, or one file that could not be checked (ERROR: section "load", name "error",
 * the reason in `got`). */
typedef struct check {
    char *file;
    char *section;
    char *name;
    outcome result;
    char *expected;
    char *got;
    char *tolerance;
} check;

struct lm_report {
    check *checks;
    size_t count, capacity;
    size_t passed, failed, errors;
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

/* Appends a record of `file`; takes ownership of the three texts. */
static void add_record(lm_report *report, const char *file, const char *section,
                       const char *name, outcome result, char *expected, char *got,
                       char *tolerance)
{
    report->passed += result == OUTCOME_PASS;
    report->failed += result == OUTCOME_FAIL;
    report->errors += result == OUTCOME_ERROR;
    if (report->count == report->capacity) {
        size_t capacity = report->capacity ? 2 * report->capacity : 256;
        check *grown = realloc(report->checks, capacity * sizeof *grown);
        if (grown == NULL) {
            report->out_of_memory = true;
            free(expected), free(got), free(tolerance);
            return;
        }
        report->checks = grown;
        report->capacity = capacity;
    }
    check *c = &report->checks[report->count++];
    *c = (check){strdup(file), strdup(section), strdup(name), result, expected, got, tolerance};
}

static bool record(lm_report *report, const char *section, const char *name, bool passed,
                   char *expected, char *got, char *tolerance)
{
    add_record(report, report->file, section, name, passed ? OUTCOME_PASS : OUTCOME_FAIL,
               expected, got, tolerance);
    return passed;
}

void lm_report_error(lm_report *report, const char *file, const char *message)
{
    add_record(report, file, "load", "error", OUTCOME_ERROR, strdup("a file that can be checked"),
               strdup(message), strdup("exit 2"));
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

size_t lm_report_passed(const lm_report *report) { return report->passed; }
size_t lm_report_failed(const lm_report *report) { return report->failed; }
size_t lm_report_errors(const lm_report *report)
{
    return report->errors + report->out_of_memory;
}

/* ---- escaping ------------------------------------------------------------------- */

typedef enum escape_mode {
    ESCAPE_TEXT, /* a text report line, stderr */
    ESCAPE_TAP,  /* a TAP description: '#' too */
    ESCAPE_YAML, /* a single-quoted YAML value: ' too */
    ESCAPE_XML,  /* an XML attribute: the five entities */
    ESCAPE_JSON, /* a JSON string: '"', and backslashes of the text form */
} escape_mode;

/* Length of the valid UTF-8 sequence at p (1..4), or 0 when p starts an invalid one;
 * *code receives its code point. */
static size_t utf8_sequence(const unsigned char *p, unsigned *code)
{
    if (p[0] < 0x80) {
        *code = p[0];
        return 1;
    }
    size_t length = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
    if (length == 0 || p[0] > 0xf4)
        return 0;
    unsigned value = p[0] & (0x7fu >> length);
    for (size_t i = 1; i < length; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        value = (value << 6) | (p[i] & 0x3f);
    }
    static const unsigned smallest[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (value < smallest[length] || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff))
        return 0;
    *code = value;
    return length;
}

/* A control character (C0, DEL, C1) as text: \n, \t, \r, \x1b, \u009b. In JSON the same
 * text (its backslash escaped), so a decoded string never holds a control character. */
static void write_control(FILE *out, unsigned code, escape_mode mode)
{
    const char *slash = mode == ESCAPE_JSON ? "\\\\" : "\\";
    const char *named = code == '\n' ? "n" : code == '\t' ? "t" : code == '\r' ? "r" : NULL;
    if (named != NULL)
        fprintf(out, "%s%s", slash, named);
    else if (code < 0x80)
        fprintf(out, "%sx%02x", slash, code);
    else
        fprintf(out, "%su%04x", slash, code);
}

/* A printable ASCII character, with what the format needs escaped. */
static void write_ascii(FILE *out, char ch, escape_mode mode)
{
    static const char *const xml[][2] = {
        {"&", "&amp;"}, {"<", "&lt;"}, {">", "&gt;"}, {"\"", "&quot;"}, {"'", "&apos;"}};
    if (ch == '\\') {
        fputs(mode == ESCAPE_JSON ? "\\\\\\\\" : "\\\\", out); /* JSON: the text's \\ */
        return;
    }
    if (mode == ESCAPE_JSON && ch == '"') {
        fputs("\\\"", out);
        return;
    }
    if (mode == ESCAPE_TAP && ch == '#') {
        fputs("\\#", out);
        return;
    }
    if (mode == ESCAPE_YAML && ch == '\'') {
        fputs("''", out);
        return;
    }
    for (size_t i = 0; mode == ESCAPE_XML && i < sizeof xml / sizeof xml[0]; i++)
        if (ch == xml[i][0][0]) {
            fputs(xml[i][1], out);
            return;
        }
    fputc(ch, out);
}

static const char *text_or_empty(const char *text) { return text ? text : "(out of memory)"; }

/* Writes `text` so that no character of it can end a line, start a terminal escape
 * sequence, break the format's quoting or be invalid UTF-8. */
static void write_escaped(FILE *out, const char *text, escape_mode mode)
{
    const unsigned char *p = (const unsigned char *)text_or_empty(text);
    while (*p) {
        unsigned code;
        size_t length = utf8_sequence(p, &code);
        if (length == 0) { /* not UTF-8: the byte's value */
            fprintf(out, mode == ESCAPE_JSON ? "\\\\x%02x" : "\\x%02x", *p++);
        } else if (code < 0x20 || code == 0x7f || (code >= 0x80 && code < 0xa0)) {
            write_control(out, code, mode);
            p += length;
        } else if (length == 1) {
            write_ascii(out, (char)*p++, mode);
        } else {
            fwrite(p, 1, length, out);
            p += length;
        }
    }
}

void lm_write_visible(FILE *out, const char *text) { write_escaped(out, text, ESCAPE_TEXT); }

void lm_report_write_escaped(FILE *out, const char *text, bool json)
{
    write_escaped(out, text, json ? ESCAPE_JSON : ESCAPE_XML);
}

/* ---- writers ------------------------------------------------------------------ */

static const char *outcome_word(outcome result)
{
    return result == OUTCOME_PASS ? "PASS" : result == OUTCOME_FAIL ? "FAIL" : "ERROR";
}

/* "file: section/name", the label of a check in text and TAP. */
static void write_label(FILE *out, const check *c, escape_mode mode)
{
    write_escaped(out, c->file, mode);
    fputs(": ", out);
    write_escaped(out, c->section, mode);
    fputc('/', out);
    write_escaped(out, c->name, mode);
}

/* "expected E, got G (T)", a failed check's story in text and JUnit. */
static void write_verdict(FILE *out, const check *c, escape_mode mode)
{
    fputs("expected ", out);
    write_escaped(out, c->expected, mode);
    fputs(", got ", out);
    write_escaped(out, c->got, mode);
    fputs(" (", out);
    write_escaped(out, c->tolerance, mode);
    fputc(')', out);
}

static void write_text(const lm_report *report, FILE *out)
{
    for (size_t i = 0; i < report->count; i++) {
        const check *c = &report->checks[i];
        fprintf(out, "%s ", outcome_word(c->result));
        if (c->result == OUTCOME_ERROR) {
            write_escaped(out, c->file, ESCAPE_TEXT);
            fputs(": ", out);
            write_escaped(out, c->got, ESCAPE_TEXT);
            fputs(" (not checked)\n", out);
            continue;
        }
        write_label(out, c, ESCAPE_TEXT);
        fputs(": ", out);
        write_verdict(out, c, ESCAPE_TEXT);
        fputc('\n', out);
    }
}

static void write_yaml_field(FILE *out, const char *key, const char *value)
{
    fprintf(out, "  %s: '", key);
    write_escaped(out, value, ESCAPE_YAML);
    fputs("'\n", out);
}

static void write_tap(const lm_report *report, FILE *out)
{
    fprintf(out, "TAP version 13\n1..%zu\n", report->count);
    for (size_t i = 0; i < report->count; i++) {
        const check *c = &report->checks[i];
        fprintf(out, "%s %zu - ", c->result == OUTCOME_PASS ? "ok" : "not ok", i + 1);
        write_label(out, c, ESCAPE_TAP);
        fputc('\n', out);
        if (c->result == OUTCOME_PASS)
            continue;
        fputs("  ---\n", out);
        if (c->result == OUTCOME_ERROR) {
            write_yaml_field(out, "severity", "error");
            write_yaml_field(out, "message", c->got);
        } else {
            write_yaml_field(out, "expected", c->expected);
            write_yaml_field(out, "got", c->got);
            write_yaml_field(out, "tolerance", c->tolerance);
        }
        fputs("  ...\n", out);
    }
}

static void write_junit_case(const check *c, FILE *out)
{
    fputs("    <testcase classname=\"", out);
    write_escaped(out, c->section, ESCAPE_XML);
    fputs("\" name=\"", out);
    write_escaped(out, c->name, ESCAPE_XML);
    fputs("\"", out);
    if (c->result == OUTCOME_PASS) {
        fputs("/>\n", out);
        return;
    }
    if (c->result == OUTCOME_ERROR) {
        fputs(">\n      <error message=\"", out);
        write_escaped(out, c->got, ESCAPE_XML);
        fputs("\"/>\n    </testcase>\n", out);
        return;
    }
    fputs(">\n      <failure message=\"", out);
    write_verdict(out, c, ESCAPE_XML);
    fputs("\"/>\n    </testcase>\n", out);
}

static void write_junit(const lm_report *report, FILE *out)
{
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<testsuites name=\"longmix verify\" tests=\"%zu\" failures=\"%zu\" "
                 "errors=\"%zu\">\n",
            report->count + report->out_of_memory, report->failed, lm_report_errors(report));
    size_t start = 0;
    while (start < report->count) { /* one <testsuite> per run of checks of one file */
        size_t end = start, failures = 0, errors = 0;
        while (end < report->count &&
               strcmp(text_or_empty(report->checks[end].file),
                      text_or_empty(report->checks[start].file)) == 0) {
            failures += report->checks[end].result == OUTCOME_FAIL;
            errors += report->checks[end++].result == OUTCOME_ERROR;
        }
        fputs("  <testsuite name=\"", out);
        write_escaped(out, report->checks[start].file, ESCAPE_XML);
        fprintf(out, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\">\n", end - start,
                failures, errors);
        for (size_t i = start; i < end; i++)
            write_junit_case(&report->checks[i], out);
        fputs("  </testsuite>\n", out);
        start = end;
    }
    if (report->out_of_memory)
        fputs("  <testsuite name=\"longmix verify\" tests=\"1\" failures=\"0\" errors=\"1\">\n"
              "    <testcase classname=\"report\" name=\"complete\">\n"
              "      <error message=\"out of memory: some checks were not recorded\"/>\n"
              "    </testcase>\n  </testsuite>\n", out);
    fputs("</testsuites>\n", out);
}

static void write_json_field(FILE *out, const char *key, const char *value, bool last)
{
    fprintf(out, "\"%s\": \"", key);
    write_escaped(out, value, ESCAPE_JSON);
    fputs(last ? "\"" : "\", ", out);
}

static void write_json(const lm_report *report, FILE *out)
{
    static const char *const status[] = {"pass", "fail", "error"};
    fprintf(out, "{\"passed\": %zu, \"failed\": %zu, \"errors\": %zu, \"complete\": %s, "
                 "\"checks\": [\n",
            lm_report_passed(report), report->failed, lm_report_errors(report),
            report->out_of_memory ? "false" : "true");
    for (size_t i = 0; i < report->count; i++) {
        const check *c = &report->checks[i];
        fprintf(out, "  {\"status\": \"%s\", ", status[c->result]);
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

/* One line per run of checks of one file: "PASS FILE: N checks, N passed, 0 failed", or
 * FAIL / ERROR with the first failed check or the error that stopped the file. */
static void write_per_file(const lm_report *report, FILE *out)
{
    size_t start = 0;
    while (start < report->count) {
        size_t end = start, passed = 0, failed = 0, errors = 0;
        const check *first = NULL; /* the first check that did not pass */
        while (end < report->count &&
               strcmp(text_or_empty(report->checks[end].file),
                      text_or_empty(report->checks[start].file)) == 0) {
            const check *c = &report->checks[end++];
            passed += c->result == OUTCOME_PASS;
            failed += c->result == OUTCOME_FAIL;
            errors += c->result == OUTCOME_ERROR;
            if (c->result != OUTCOME_PASS && first == NULL)
                first = c;
        }
        const check *c = &report->checks[start];
        fprintf(out, "%s ", errors ? "ERROR" : failed ? "FAIL" : "PASS");
        write_escaped(out, c->file, ESCAPE_TEXT);
        if (passed + failed == 0 && first != NULL) { /* an error before any check */
            fputs(": not checked: ", out);
            write_escaped(out, first->got, ESCAPE_TEXT);
            fputc('\n', out);
            start = end;
            continue;
        }
        fprintf(out, ": %zu check%s, %zu passed, %zu failed", passed + failed,
                passed + failed == 1 ? "" : "s", passed, failed);
        if (first != NULL && first->result == OUTCOME_ERROR) {
            fputs("; not checked further: ", out);
            write_escaped(out, first->got, ESCAPE_TEXT);
        } else if (first != NULL) {
            fputs("; first failure ", out);
            write_escaped(out, first->section, ESCAPE_TEXT);
            fputc('/', out);
            write_escaped(out, first->name, ESCAPE_TEXT);
            fputs(": ", out);
            write_verdict(out, first, ESCAPE_TEXT);
        }
        fputc('\n', out);
        start = end;
    }
}

static void write_summary(const lm_report *report, const char *prefix, FILE *out)
{
    if (report->out_of_memory)
        fprintf(out, "%sERROR out of memory: some checks were not recorded\n", prefix);
    fprintf(out, "%s%zu passed, %zu failed, %zu errors\n", prefix, lm_report_passed(report),
            report->failed, lm_report_errors(report));
}

void lm_report_write_per_file(const lm_report *report, FILE *out)
{
    write_per_file(report, out);
    write_summary(report, "", out);
}

void lm_report_write(const lm_report *report, lm_format format, FILE *out)
{
    switch (format) {
    case LM_FORMAT_TEXT:
        write_text(report, out);
        write_summary(report, "", out);
        break;
    case LM_FORMAT_TAP:
        write_tap(report, out);
        write_summary(report, "# ", out);
        break;
    case LM_FORMAT_JUNIT: write_junit(report, out); break;
    case LM_FORMAT_JSON: write_json(report, out); break;
    }
}
